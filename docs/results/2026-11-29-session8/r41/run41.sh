#!/usr/bin/env bash
# Session 8, call 8 (diagnostic): BLASST kernels that never skip (the skip
# regions fold away: branch-free like dense) with the vote and its barrier
# kept (dn: V on demand, dnv: without), nothing skippable, 64K ABBA.
set -u
B=.device/blasst-bench; D=.device; O=/tmp/r41; mkdir -p $O; T0=$SECONDS
save() { (cd /tmp && tar czf $OUT/r41.tgz r41); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $O/device.txt; date -u >> $O/device.txt
med() { grep -E "^(dense|sparse)" "$1" | awk '{print $(NF-3)}' | tr '\n' ' '; }
for c in true false; do
  ks=(); for k in cur vod dn dnv dnv dn vod cur; do
    [[ $k == cur ]] && ks+=(--kernel $D/cur/dense_causal$c) || ks+=(--kernel $D/$k/sparse_causal$c); done
  timeout 70 $B "${ks[@]}" --batch 1 --seq 65536 --dial 0 --check none --vs-first --warmup 1 --iters 5 > $O/bench_c${c}_d0.log 2>&1
  echo "64K causal=$c dial=0 rc=$? t=$((SECONDS-T0)): $(med $O/bench_c${c}_d0.log)"; save
done
