#!/usr/bin/env bash
# Session 7, call 2: ping-pong with the turn passed after Q Kᵀ completes (pw) vs landed, 64K ABBA.
set -u
B=.device/blasst-bench; D=.device; O=/tmp/r24; mkdir -p $O; T0=$SECONDS
save() { (cd /tmp && tar czf $OUT/r24.tgz r24); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $O/device.txt; date -u >> $O/device.txt
med() { grep -E median "$1" | sed -E 's/.*median ([0-9.]+) ms.*/\1/' | tr '\n' ' '; }
for c in false true; do
  ds="0.94 0"; [[ $c == true ]] && ds="0.95"
  for d in $ds; do
    (( SECONDS - T0 > 300 )) && { echo "stop: time"; break; }
    ks=(cur/dense pw/dense cur/sparse pw/sparse pw/sparse cur/sparse pw/dense cur/dense)
    args=(); for k in "${ks[@]}"; do args+=(--kernel $D/${k}_causal$c); done
    timeout 100 $B "${args[@]}" --batch 1 --seq 65536 --dial $d --check none --warmup 2 --iters 6 > $O/bench_c${c}_d$d.log 2>&1
    echo "64K causal=$c dial=$d rc=$? t=$((SECONDS-T0)): $(med $O/bench_c${c}_d$d.log) | $(grep -o 'skipped [0-9.]*%' $O/bench_c${c}_d$d.log | head -1)"; save
  done
done
echo "total t=$((SECONDS-T0))"
