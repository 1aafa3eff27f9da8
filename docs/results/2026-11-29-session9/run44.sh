#!/usr/bin/env bash
# Session 9, call 2: sparse non-causal at smaller KV blocks (b176/b160/b144),
# without V on demand (novod), fma row test keeping vote.sync (fmav); dense at
# 176 keys for reference. 64K.
set -u
B=.device/blasst-bench; D=.device; O=/tmp/r44; mkdir -p $O; T0=$SECONDS
save() { (cd /tmp && tar czf $OUT/r44.tgz r44); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $O/device.txt; date -u >> $O/device.txt
med() { grep -E "^  time" "$1" | awk '{print $3}' | tr '\n' ' '; }
bench() { # tag causal dial order...
  local tag=$1 c=$2 d=$3; shift 3; local ks=()
  for k in "$@"; do case $k in dense) ks+=(--kernel $D/fz0/dense_causal$c);; d176) ks+=(--kernel $D/d176/dense_causal$c);; *) ks+=(--kernel $D/$k/sparse_causal$c);; esac; done
  timeout 80 $B "${ks[@]}" --batch 1 --seq 65536 --dial $d --check none --vs-first --warmup 1 --iters 5 > $O/bench_${tag}_c${c}_d$d.log 2>&1
  echo "$tag causal=$c dial=$d rc=$? t=$((SECONDS-T0)): $*: $(med $O/bench_${tag}_c${c}_d$d.log)"; save
}
bench a false 0 dense fz0 b176 b160 b144 novod fmav d176 d176 fmav novod b144 b160 b176 fz0 dense
bench a true 0 dense fz0 novod fmav fmav novod fz0 dense
bench s false 0.735 dense fz0 b176 b160 novod b160 b176 fz0 dense
bench s false 0.94 dense fz0 b176 b160 novod b160 b176 fz0 dense
bench b false 0 dense b176 fz0 b160 novod novod b160 fz0 b176 dense
echo done t=$((SECONDS-T0))
