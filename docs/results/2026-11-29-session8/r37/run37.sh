#!/usr/bin/env bash
# Session 8, call 4: ping-pong BLASST kernels (block_n 128) with V on demand
# (ppv) and without (pp8) against the new default (vod = default build) and
# the default dense kernel, 64K ABBA; model checks + racecheck for ppv.
set -u
B=.device/blasst-bench; D=.device; O=/tmp/r37; mkdir -p $O; T0=$SECONDS
save() { (cd /tmp && tar czf $OUT/r37.tgz r37); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $O/device.txt; date -u >> $O/device.txt
med() { grep -E "^(dense|sparse)" "$1" | awk '{print $(NF-3)}' | tr '\n' ' '; }
for c in false true; do
  dials="0 0.735 0.94"; [[ $c == true ]] && dials="0 0.75 0.95"
  for d in $dials; do
    ks=(); for k in cur vod ppv pp8 pp8 ppv vod cur; do
      [[ $k == cur ]] && ks+=(--kernel $D/cur/dense_causal$c) || ks+=(--kernel $D/$k/sparse_causal$c); done
    timeout 80 $B "${ks[@]}" --batch 1 --seq 65536 --dial $d --check none --vs-first --warmup 1 --iters 5 > $O/bench_c${c}_d$d.log 2>&1
    echo "64K causal=$c dial=$d rc=$? t=$((SECONDS-T0)): $(med $O/bench_c${c}_d$d.log)"; save
  done
done
CHECKS=1 BENCH_64K=0 timeout 200 bash test/gpu/run-blasst.sh $D/ppv $B $O/checks > $O/checks.txt 2>&1; echo "ppv checks rc=$? t=$((SECONDS-T0)) $(grep -c 'match$' $O/checks.txt) counter matches, $(grep -c PASS $O/checks.txt) PASS, $(grep -c FAIL $O/checks.txt) FAIL; $(grep -h 'RACECHECK SUMMARY' $O/checks.txt | tr '\n' ' ')"; save
