#!/usr/bin/env bash
# Session 7, call 8: the BLASST kernels without statistics counters (ns) vs the
# benchmark's stats=true kernels (cur), 64K ABBA, both tiles, the points.
set -u
B=.device/blasst-bench; D=.device; O=/tmp/r30; mkdir -p $O; T0=$SECONDS
save() { (cd /tmp && tar czf $OUT/r30.tgz r30); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $O/device.txt; date -u >> $O/device.txt
med() { grep -E "^(dense|sparse)" "$1" | awk '{print $(NF-3)}' | tr '\n' ' '; }
for c in false true; do
  ds="0 0.94 0.735"; [[ $c == true ]] && ds="0 0.95 0.75"
  for d in $ds; do
    ks=(cur/dense cur/sparse ns/sparse ns/sparse cur/sparse cur/dense)
    args=(); for k in "${ks[@]}"; do args+=(--kernel $D/${k}_causal$c); done
    timeout 100 $B "${args[@]}" --batch 1 --seq 65536 --dial $d --check none --vs-first --warmup 2 --iters 6 > $O/bench_c${c}_d$d.log 2>&1
    echo "64K causal=$c dial=$d rc=$? t=$((SECONDS-T0)): $(med $O/bench_c${c}_d$d.log) | $(grep -E '^sparse' $O/bench_c${c}_d$d.log | head -1 | awk '{print $(NF-4)}')"; save
  done
done
echo "total t=$((SECONDS-T0))"
