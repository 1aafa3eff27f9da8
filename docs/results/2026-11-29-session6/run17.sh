#!/usr/bin/env bash
# Session 6, call 4: 64K BLASST points with the error against dense at 64K
# (--vs-first, dense first), landed kernels (bl) and Q in registers (qr), ABBA.
set -u
B=.device/blasst-bench; D=.device; O=/tmp/r17; mkdir -p $O; T0=$SECONDS
save() { (cd /tmp && tar czf $OUT/r17.tgz r17); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $O/device.txt; date -u >> $O/device.txt
for cd in "false 0" "false 0.735" "false 0.94" "true 0" "true 0.75" "true 0.95"; do read -r causal d <<<"$cd"
  (( SECONDS - T0 > 480 )) && { echo "stop: time"; break; }
  ks=(bl/dense bl/sparse qr/sparse qr/sparse bl/sparse bl/dense)
  args=(); for k in "${ks[@]}"; do args+=(--kernel $D/${k}_causal$causal); done
  timeout 110 $B "${args[@]}" --batch 1 --seq 65536 --dial $d --check none --vs-first --warmup 2 --iters 8 --json $O/bench_c${causal}_d$d.json > $O/bench_c${causal}_d$d.log 2>&1
  echo "bench causal=$causal dial=$d rc=$? t=$((SECONDS-T0))"; grep -E "median" $O/bench_c${causal}_d$d.log | sed -E 's/.*median ([0-9.]+) ms.*/\1/' | tr '\n' ' '; echo
  grep -E "vs first \(|skip rate" $O/bench_c${causal}_d$d.log | sed -E 's/^ +//' | cut -c1-110; save
done
save
