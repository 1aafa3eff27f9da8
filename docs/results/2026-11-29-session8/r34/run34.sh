#!/usr/bin/env bash
# Session 8, call 1: the empty-group counter fix (m_empty) and racecheck on
# the landed kernels; then K/V multicast at block_n 128 / 3 stages (mc3)
# against the same tile without multicast (n3) and the default (cur), 64K ABBA.
set -u
B=.device/blasst-bench; D=.device; O=/tmp/r34; mkdir -p $O; T0=$SECONDS
save() { (cd /tmp && tar czf $OUT/r34.tgz r34); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $O/device.txt; date -u >> $O/device.txt
CHECKS=1 BENCH_64K=0 timeout 200 bash test/gpu/run-blasst.sh $D/cur $B $O/checks > $O/checks.txt 2>&1; echo "checks rc=$? t=$((SECONDS-T0))"; save
timeout 40 $B --kernel $D/mc3/dense_causalfalse --kernel $D/mc3/sparse_causalfalse --kernel $D/n3/sparse_causalfalse --batch 2 --seq-q 300 --seq-kv 517 --warmup 0 --iters 1 > $O/c300.log 2>&1; echo "mc3 2x300x517 rc=$? $(grep -c PASS $O/c300.log) PASS $(grep -c FAIL $O/c300.log) FAIL t=$((SECONDS-T0))"; save
timeout 40 $B --kernel $D/mc3/sparse_causalfalse --kernel $D/n3/sparse_causalfalse --batch 1 --seq 4096 --dial 0.9 --warmup 0 --iters 1 > $O/cdial.log 2>&1; echo "mc3 dial0.9 rc=$? $(grep -c PASS $O/cdial.log) PASS $(grep -c FAIL $O/cdial.log) FAIL t=$((SECONDS-T0))"; save
med() { grep -E "^(dense|sparse)" "$1" | awk '{print $(NF-3)}' | tr '\n' ' '; }
for d in 0.94 0.735 0; do
  timeout 80 $B --kernel $D/cur/dense_causalfalse --kernel $D/mc3/dense_causalfalse --kernel $D/n3/dense_causalfalse --kernel $D/cur/sparse_causalfalse --kernel $D/mc3/sparse_causalfalse --kernel $D/n3/sparse_causalfalse --kernel $D/n3/sparse_causalfalse --kernel $D/mc3/sparse_causalfalse --kernel $D/cur/sparse_causalfalse --kernel $D/n3/dense_causalfalse --kernel $D/mc3/dense_causalfalse --kernel $D/cur/dense_causalfalse --batch 1 --seq 65536 --dial $d --check none --vs-first --warmup 1 --iters 4 > $O/bench_d$d.log 2>&1
  echo "64K dial=$d rc=$? t=$((SECONDS-T0)): $(med $O/bench_d$d.log)"; save
done
