#!/usr/bin/env bash
# Session 7, call 10 (diagnostic, wrong output by design): kernels that never
# load V (nov; the producer arrives on V's full barrier without a copy) vs
# landed (cur), 64K: how much of the skip regime's time is the K/V traffic?
set -u
B=.device/blasst-bench; D=.device; O=/tmp/r32; mkdir -p $O; T0=$SECONDS
save() { (cd /tmp && tar czf $OUT/r32.tgz r32); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $O/device.txt; date -u >> $O/device.txt
med() { grep -E "^(dense|sparse)" "$1" | awk '{print $(NF-3)}' | tr '\n' ' '; }
for cd in "false 0.94" "false 0" "true 0.95"; do read -r c d <<<"$cd"
  ks=(cur/dense nov/dense cur/sparse nov/sparse nov/sparse cur/sparse nov/dense cur/dense)
  args=(); for k in "${ks[@]}"; do args+=(--kernel $D/${k}_causal$c); done
  timeout 100 $B "${args[@]}" --batch 1 --seq 65536 --dial $d --check none --warmup 2 --iters 5 > $O/bench_c${c}_d$d.log 2>&1
  echo "64K causal=$c dial=$d rc=$? t=$((SECONDS-T0)): $(med $O/bench_c${c}_d$d.log)"; save
done
