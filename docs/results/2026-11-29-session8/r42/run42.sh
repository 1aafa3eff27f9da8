#!/usr/bin/env bash
# Session 8, call 9: the two skip regions around the P V wait fused into one
# branch (fz: the wait and the V release on both paths) vs the default (vod):
# model checks + racecheck, then 64K ABBA.
set -u
B=.device/blasst-bench; D=.device; O=/tmp/r42; mkdir -p $O; T0=$SECONDS
save() { (cd /tmp && tar czf $OUT/r42.tgz r42); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $O/device.txt; date -u >> $O/device.txt
med() { grep -E "^(dense|sparse)" "$1" | awk '{print $(NF-3)}' | tr '\n' ' '; }
for c in false true; do
  dials="0 0.735 0.94"; [[ $c == true ]] && dials="0 0.75 0.95"
  for d in $dials; do
    timeout 50 $B --kernel $D/vod/dense_causal$c --kernel $D/vod/sparse_causal$c --kernel $D/fz/sparse_causal$c --kernel $D/fz/sparse_causal$c --kernel $D/vod/sparse_causal$c --kernel $D/vod/dense_causal$c --batch 1 --seq 65536 --dial $d --check none --vs-first --warmup 1 --iters 5 > $O/bench_c${c}_d$d.log 2>&1
    echo "64K causal=$c dial=$d rc=$? t=$((SECONDS-T0)): $(med $O/bench_c${c}_d$d.log)"; save
  done
done
CHECKS=1 BENCH_64K=0 timeout 150 bash test/gpu/run-blasst.sh $D/fz $B $O/checks > $O/checks.txt 2>&1; echo "fz checks rc=$? t=$((SECONDS-T0)) $(grep -c 'match$' $O/checks.txt) counter matches, $(grep -c PASS $O/checks.txt) PASS, $(grep -c FAIL $O/checks.txt) FAIL; $(grep -h 'RACECHECK SUMMARY' $O/checks.txt | tr '\n' ' ')"; save
