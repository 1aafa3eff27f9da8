#!/usr/bin/env bash
# Session 7, call 11: K/V multicast across 2-CTA clusters (mc, branch
# kv-multicast), non-causal: correctness (every element; odd query-block
# counts pad a pair) and 64K against the landed kernels (ABBA).
set -u
B=.device/blasst-bench; D=.device; O=/tmp/r33; mkdir -p $O; T0=$SECONDS
save() { (cd /tmp && tar czf $OUT/r33.tgz r33); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $O/device.txt; date -u >> $O/device.txt
med() { grep -E "^(dense|sparse)" "$1" | awk '{print $(NF-3)}' | tr '\n' ' '; }
ks=(--kernel $D/mc/dense_causalfalse --kernel $D/mc/dense_lse --kernel $D/mc/sparse_causalfalse --kernel $D/mc/sparse_f16_hd64_gqa)
timeout 40 $B "${ks[@]}" --batch 2 --seq-q 300 --seq-kv 517 --o-pad 8 --warmup 0 --iters 1 > $O/c300.log 2>&1; echo "2x300x517 rc=$? $(grep -c PASS $O/c300.log) PASS $(grep -c FAIL $O/c300.log) FAIL $(grep -c ': match' $O/c300.log) match t=$((SECONDS-T0))"; save
timeout 40 $B "${ks[@]}" --batch 1 --seq 1000 --warmup 0 --iters 1 > $O/c1000.log 2>&1; echo "1x1000 rc=$? $(grep -c PASS $O/c1000.log) PASS $(grep -c FAIL $O/c1000.log) FAIL $(grep -c ': match' $O/c1000.log) match t=$((SECONDS-T0))"; save
timeout 40 $B --kernel $D/mc/sparse_causalfalse --batch 1 --seq 4096 --dial 0.9 --warmup 0 --iters 1 > $O/cdial.log 2>&1; echo "dial0.9 rc=$? $(grep -c PASS $O/cdial.log) PASS $(grep -c ': match' $O/cdial.log) match t=$((SECONDS-T0))"; save
for d in 0.94 0; do
  timeout 45 $B --kernel $D/cur/dense_causalfalse --kernel $D/mc/dense_causalfalse --kernel $D/cur/sparse_causalfalse --kernel $D/mc/sparse_causalfalse --kernel $D/mc/sparse_causalfalse --kernel $D/cur/sparse_causalfalse --kernel $D/mc/dense_causalfalse --kernel $D/cur/dense_causalfalse --batch 1 --seq 65536 --dial $d --check none --vs-first --warmup 1 --iters 4 > $O/bench_d$d.log 2>&1
  echo "64K dial=$d rc=$? t=$((SECONDS-T0)): $(med $O/bench_d$d.log) | $(grep -o 'rel L2 [0-9.e-]*' $O/bench_d$d.log | tr '\n' ' ')"; save
done
