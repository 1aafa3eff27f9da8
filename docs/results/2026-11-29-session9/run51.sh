#!/usr/bin/env bash
# Session 9, call 9: the non-speculating lowering (--v-speculate-after=0,
# the load role waits for every block's votes and counts them) against the
# CPU model (counters, every element), and 64K at 72% next to the landed s11.
set -u
B=.device/blasst-bench; D=.device; O=/tmp/r51; mkdir -p $O; T0=$SECONDS
save() { (cd /tmp && tar czf $OUT/r51.tgz r51); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $O/device.txt; date -u >> $O/device.txt
K=$D/w0
timeout 60 $B --kernel $K/sparse_causalfalse --kernel $K/sparse_causaltrue --kernel $K/sparse_a_causaltrue --kernel $K/sparse_f16_hd64_gqa --batch 2 --seq-q 1000 --seq-kv 1300 --warmup 0 --iters 1 > $O/m_random.log 2>&1; echo "m_random rc=$? $(grep -c 'match$' $O/m_random.log) matches $(grep -c PASS $O/m_random.log) PASS $(grep -c FAIL $O/m_random.log) FAIL"; save
timeout 60 $B --kernel $K/sparse_causalfalse --kernel $K/sparse_causaltrue --kernel $K/sparse_a_causaltrue --kernel $K/sparse_f16_hd64_gqa --batch 2 --seq-q 300 --seq-kv 517 --warmup 0 --iters 1 > $O/m_empty.log 2>&1; echo "m_empty rc=$? $(grep -c 'match$' $O/m_empty.log) matches $(grep -c PASS $O/m_empty.log) PASS $(grep -c FAIL $O/m_empty.log) FAIL"; save
timeout 60 $B --kernel $K/sparse_causaltrue --kernel $K/sparse_causalfalse --kernel $K/sparse_a_causaltrue --batch 1 --seq 4096 --dial 0.9 --warmup 0 --iters 1 > $O/m_dial.log 2>&1; echo "m_dial0.9 rc=$? $(grep -c 'match$' $O/m_dial.log) matches $(grep -c PASS $O/m_dial.log) PASS $(grep -c FAIL $O/m_dial.log) FAIL"; save
timeout 40 $B --kernel $D/s11/dense_causalfalse --kernel $D/s11/sparse_causalfalse --kernel $K/sparse_causalfalse --kernel $K/sparse_causalfalse --kernel $D/s11/sparse_causalfalse --kernel $D/s11/dense_causalfalse --batch 1 --seq 65536 --dial 0.735 --check none --vs-first --warmup 1 --iters 5 > $O/bench72.log 2>&1; echo "64K 72% rc=$? t=$((SECONDS-T0)): $(grep -E '^  time' $O/bench72.log | awk '{print $3}' | tr '\n' ' ')"; save
