#!/usr/bin/env bash
# Session 9, call 1: a shorter vote chain. nv = no vote.sync before bar.red.and
# (bar.red reduces per thread anyway); fma = nv + the row test as one fma
# (fma(m_part, scale, -m) < T); fns = fma without statistics. 64K, ABBA-style
# repeated orders, nothing skippable, then 72% / 92%.
set -u
B=.device/blasst-bench; D=.device; O=/tmp/r43; mkdir -p $O; T0=$SECONDS
save() { (cd /tmp && tar czf $OUT/r43.tgz r43); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $O/device.txt; date -u >> $O/device.txt
med() { grep -E "^  time" "$1" | awk '{print $3}' | tr '\n' ' '; }
bench() { # tag causal dial order...
  local tag=$1 c=$2 d=$3; shift 3; local ks=()
  for k in "$@"; do [[ $k == dense ]] && ks+=(--kernel $D/fz0/dense_causal$c) || ks+=(--kernel $D/$k/sparse_causal$c); done
  timeout 80 $B "${ks[@]}" --batch 1 --seq 65536 --dial $d --check none --vs-first --warmup 1 --iters 5 > $O/bench_${tag}_c${c}_d$d.log 2>&1
  echo "$tag causal=$c dial=$d rc=$? t=$((SECONDS-T0)): $*: $(med $O/bench_${tag}_c${c}_d$d.log)"; save
}
for c in false true; do
  bench a $c 0 dense fz0 nv fma fns fzns fzns fns fma nv fz0 dense
  bench b $c 0 dense fma fz0 nv fzns fns fns fzns nv fz0 fma dense
done
for c in false true; do
  dials="0.735 0.94"; [[ $c == true ]] && dials="0.75 0.95"
  for d in $dials; do bench s $c $d dense fz0 fma fns fns fma fz0 dense; done
done
echo done t=$((SECONDS-T0))
