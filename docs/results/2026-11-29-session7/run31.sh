#!/usr/bin/env bash
# Session 7, call 9: warps whose own vote keeps run the block's softmax before
# joining the vote's barrier (ev) vs landed (cur): 64K ABBA at the issue's
# points, then the standard checks on ev (model at 3 thresholds / 2 dials /
# random, racecheck of both tiles).
set -u
B=.device/blasst-bench; D=.device; O=/tmp/r31; mkdir -p $O; T0=$SECONDS
save() { (cd /tmp && tar czf $OUT/r31.tgz r31); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $O/device.txt; date -u >> $O/device.txt
med() { grep -E "^(dense|sparse)" "$1" | awk '{print $(NF-3)}' | tr '\n' ' '; }
for c in false true; do
  ds="0 0.94 0.735"; [[ $c == true ]] && ds="0 0.95 0.75"
  for d in $ds; do
    ks=(cur/dense cur/sparse ev/sparse ev/sparse cur/sparse cur/dense)
    args=(); for k in "${ks[@]}"; do args+=(--kernel $D/${k}_causal$c); done
    timeout 100 $B "${args[@]}" --batch 1 --seq 65536 --dial $d --check none --vs-first --warmup 2 --iters 6 > $O/bench_c${c}_d$d.log 2>&1
    echo "64K causal=$c dial=$d rc=$? t=$((SECONDS-T0)): $(med $O/bench_c${c}_d$d.log) | $(grep -E '^sparse' $O/bench_c${c}_d$d.log | head -1 | awk '{print $(NF-4)}')"; save
  done
done
CHECKS=1 BENCH_64K=0 timeout 200 bash test/gpu/run-blasst.sh $D/ev $B $O/ev_checks 2>&1 | grep -E "racecheck|FAIL|failures|!!|match|PASS" | tail -30; save
echo "total t=$((SECONDS-T0))"
