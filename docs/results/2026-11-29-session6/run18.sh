#!/usr/bin/env bash
# Session 6, call 5: the two-buffer (cross-stage) schedule at block_n 64, first run.
set -u
B=.device/blasst-bench; D=.device; O=/tmp/r18; mkdir -p $O; T0=$SECONDS
save() { (cd /tmp && tar czf $OUT/r18.tgz r18); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $O/device.txt; date -u >> $O/device.txt
timeout 60 $B --kernel $D/xs64/dense_causalfalse --kernel $D/xs64/dense_causaltrue --batch 2 --seq-q 1000 --seq-kv 1300 --warmup 0 --iters 1 > $O/c_dense.log 2>&1; echo "xs dense check rc=$? $(grep -c PASS $O/c_dense.log) PASS"
timeout 60 $B --kernel $D/xs64/sparse_causalfalse --kernel $D/xs64/sparse_causaltrue --kernel $D/xs64/sparse_a_causaltrue --kernel $D/xs64/sparse_f16_hd64_gqa --batch 2 --seq-q 1000 --seq-kv 1300 --warmup 0 --iters 1 > $O/m_sparse.log 2>&1; echo "xs sparse model rc=$? $(grep -c PASS $O/m_sparse.log) PASS"
timeout 60 $B --kernel $D/xs64/sparse_causalfalse --kernel $D/xs64/sparse_causaltrue --batch 1 --seq 4096 --dial 0.9 --warmup 0 --iters 1 > $O/m9_sparse.log 2>&1; echo "xs sparse dial0.9 rc=$? $(grep -c PASS $O/m9_sparse.log) PASS"; save
for d in 0.94 0; do
  timeout 100 $B --kernel $D/bl/dense_causalfalse --kernel $D/xs64/dense_causalfalse --kernel $D/bl/sparse_causalfalse --kernel $D/xs64/sparse_causalfalse --batch 1 --seq 65536 --dial $d --check none --warmup 2 --iters 5 > $O/b_$d.log 2>&1
  echo "64K nc dial $d rc=$?: $(grep -E median $O/b_$d.log | sed -E 's/.*median ([0-9.]+) ms.*/\1/' | tr '\n' ' ')"; grep -E "skip rate" $O/b_$d.log | sed -E 's/.*skip rate/skip rate/' | head -4 | tr '\n' ' '; echo; save
done
