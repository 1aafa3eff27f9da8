#!/usr/bin/env bash
# Session 8, call 6: 32-bit shared-memory pointers (nvptx-short-ptr, sp)
# against the default build (64-bit), dense and BLASST, 64K ABBA.
set -u
B=.device/blasst-bench; D=.device; O=/tmp/r39; mkdir -p $O; T0=$SECONDS
save() { (cd /tmp && tar czf $OUT/r39.tgz r39); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $O/device.txt; date -u >> $O/device.txt
ks=(--kernel $D/sp/dense_causalfalse --kernel $D/sp/dense_causaltrue --kernel $D/sp/sparse_causalfalse --kernel $D/sp/sparse_causaltrue --kernel $D/sp/sparse_a_causaltrue --kernel $D/sp/sparse_f16_hd64_gqa)
timeout 60 $B "${ks[@]}" --batch 2 --seq-q 1000 --seq-kv 1300 --warmup 0 --iters 1 > $O/c1000.log 2>&1; echo "2x1000x1300 rc=$? $(grep -c PASS $O/c1000.log) PASS $(grep -c FAIL $O/c1000.log) FAIL $(grep -c ': match' $O/c1000.log) match t=$((SECONDS-T0))"; save
timeout 60 $B --kernel $D/sp/sparse_causalfalse --kernel $D/sp/sparse_causaltrue --batch 1 --seq 4096 --dial 0.9 --warmup 0 --iters 1 > $O/cdial.log 2>&1; echo "dial0.9 rc=$? $(grep -c PASS $O/cdial.log) PASS $(grep -c FAIL $O/cdial.log) FAIL $(grep -c ': match' $O/cdial.log) match t=$((SECONDS-T0))"; save
med() { grep -E "^(dense|sparse)" "$1" | awk '{print $(NF-3)}' | tr '\n' ' '; }
for c in false true; do
  dials="0 0.735 0.94"; [[ $c == true ]] && dials="0 0.75 0.95"
  for d in $dials; do
    timeout 70 $B --kernel $D/cur/dense_causal$c --kernel $D/sp/dense_causal$c --kernel $D/vod/sparse_causal$c --kernel $D/sp/sparse_causal$c --kernel $D/sp/sparse_causal$c --kernel $D/vod/sparse_causal$c --kernel $D/sp/dense_causal$c --kernel $D/cur/dense_causal$c --batch 1 --seq 65536 --dial $d --check none --vs-first --warmup 1 --iters 5 > $O/bench_c${c}_d$d.log 2>&1
    echo "64K causal=$c dial=$d rc=$? t=$((SECONDS-T0)): $(med $O/bench_c${c}_d$d.log)"; save
  done
done
