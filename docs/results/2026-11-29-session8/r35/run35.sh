#!/usr/bin/env bash
# Session 8, call 2: V on demand (--v-on-demand, .device/vod): the model
# checks + racecheck, then 64K ABBA against the landed kernels (cur).
set -u
B=.device/blasst-bench; D=.device; O=/tmp/r35; mkdir -p $O; T0=$SECONDS
save() { (cd /tmp && tar czf $OUT/r35.tgz r35); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $O/device.txt; date -u >> $O/device.txt
CHECKS=1 BENCH_64K=0 timeout 200 bash test/gpu/run-blasst.sh $D/vod $B $O/checks > $O/checks.txt 2>&1; echo "checks rc=$? t=$((SECONDS-T0)) $(grep -c 'match$' $O/checks.txt) counter matches, $(grep -c PASS $O/checks.txt) PASS, $(grep -c FAIL $O/checks.txt) FAIL; $(grep -h 'RACECHECK SUMMARY' $O/checks.txt | tr '\n' ' ')"; save
med() { grep -E "^(dense|sparse)" "$1" | awk '{print $(NF-3)}' | tr '\n' ' '; }
for c in false true; do
  dials="0.94 0.735 0"; [[ $c == true ]] && dials="0.95 0.75 0"
  for d in $dials; do
    timeout 75 $B --kernel $D/cur/dense_causal$c --kernel $D/cur/sparse_causal$c --kernel $D/vod/sparse_causal$c --kernel $D/vod/sparse_causal$c --kernel $D/cur/sparse_causal$c --kernel $D/cur/dense_causal$c --batch 1 --seq 65536 --dial $d --check none --vs-first --warmup 1 --iters 5 > $O/bench_c${c}_d$d.log 2>&1
    echo "64K causal=$c dial=$d rc=$? t=$((SECONDS-T0)): $(med $O/bench_c${c}_d$d.log) | skip $(grep -E '^sparse' $O/bench_c${c}_d$d.log | awk '{print $(NF-4)}' | tr '\n' ' ')"; save
  done
done
