#!/usr/bin/env bash
# Session 9, call 5: on top of speculate_after 2 (s2): the sparse row max as 2 / 4 chains (c2, c4), the two skip regions unfused (nf), s2 without statistics (s2ns).
set -u
B=.device/blasst-bench; D=.device; O=/tmp/r47; mkdir -p $O; T0=$SECONDS
save() { (cd /tmp && tar czf $OUT/r47.tgz r47); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $O/device.txt; date -u >> $O/device.txt
med() { grep -E "^  time" "$1" | awk '{print $3}' | tr '\n' ' '; }
rates() { grep -E "skip rate" "$1" | grep -o "skip rate [0-9.]*%" | awk '{print $3}' | tr '\n' ' '; }
bench() { # tag causal dial order...
  local tag=$1 c=$2 d=$3; shift 3; local ks=()
  for k in "$@"; do case $k in dense) ks+=(--kernel $D/fz0/dense_causal$c);; *) ks+=(--kernel $D/$k/sparse_causal$c);; esac; done
  timeout 90 $B "${ks[@]}" --batch 1 --seq 65536 --dial $d --check none --vs-first --warmup 1 --iters 5 > $O/bench_${tag}_c${c}_d$d.log 2>&1
  echo "$tag causal=$c dial=$d rc=$? t=$((SECONDS-T0)): $*: $(med $O/bench_${tag}_c${c}_d$d.log) | skip $(rates $O/bench_${tag}_c${c}_d$d.log)"; save
}
bench a false 0 dense s2 c2 c4 nf s2ns s2ns nf c4 c2 s2 dense
bench a true 0 dense s2 c2 c4 nf s2ns s2ns nf c4 c2 s2 dense
for c in false true; do
  dials="0.735 0.94"; [[ $c == true ]] && dials="0.75 0.95"
  for d in $dials; do bench s $c $d dense s2 c2 c4 nf nf c4 c2 s2 dense; done
done
echo done t=$((SECONDS-T0))
