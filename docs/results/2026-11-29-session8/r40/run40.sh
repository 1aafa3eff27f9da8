#!/usr/bin/env bash
# Session 8, call 7: ping-pong BLASST at the landed tiles (192 / 176 keys,
# not the 128 --pingpong implies) with V on demand (ppw), against the
# default (vod) and the default dense kernel, 64K ABBA; quick checks.
set -u
B=.device/blasst-bench; D=.device; O=/tmp/r40; mkdir -p $O; T0=$SECONDS
save() { (cd /tmp && tar czf $OUT/r40.tgz r40); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $O/device.txt; date -u >> $O/device.txt
k2=(--kernel $D/ppw/sparse_causalfalse --kernel $D/ppw/sparse_causaltrue)
timeout 40 $B "${k2[@]}" --batch 2 --seq-q 300 --seq-kv 517 --warmup 0 --iters 1 > $O/c300.log 2>&1; echo "2x300x517 rc=$? $(grep -c PASS $O/c300.log) PASS $(grep -c FAIL $O/c300.log) FAIL $(grep -c ': match' $O/c300.log) match t=$((SECONDS-T0))"; save
timeout 60 $B "${k2[@]}" --batch 1 --seq 4096 --dial 0.9 --warmup 0 --iters 1 > $O/cdial.log 2>&1; echo "dial0.9 rc=$? $(grep -c PASS $O/cdial.log) PASS $(grep -c FAIL $O/cdial.log) FAIL $(grep -c ': match' $O/cdial.log) match t=$((SECONDS-T0))"; save
med() { grep -E "^(dense|sparse)" "$1" | awk '{print $(NF-3)}' | tr '\n' ' '; }
for c in false true; do
  dials="0 0.735 0.94"; [[ $c == true ]] && dials="0 0.75 0.95"
  for d in $dials; do
    timeout 60 $B --kernel $D/cur/dense_causal$c --kernel $D/vod/sparse_causal$c --kernel $D/ppw/sparse_causal$c --kernel $D/ppw/sparse_causal$c --kernel $D/vod/sparse_causal$c --kernel $D/cur/dense_causal$c --batch 1 --seq 65536 --dial $d --check none --vs-first --warmup 1 --iters 5 > $O/bench_c${c}_d$d.log 2>&1
    echo "64K causal=$c dial=$d rc=$? t=$((SECONDS-T0)): $(med $O/bench_c${c}_d$d.log)"; save
  done
done
