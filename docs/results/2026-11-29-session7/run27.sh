#!/usr/bin/env bash
# Session 7, call 5: the kept path's quad reduction issued before the vote's
# barrier (e1: first shuffle round, e2: both) vs landed, 64K ABBA; quick model
# checks and racecheck of e2.
set -u
B=.device/blasst-bench; D=.device; O=/tmp/r27; mkdir -p $O; T0=$SECONDS
save() { (cd /tmp && tar czf $OUT/r27.tgz r27); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $O/device.txt; date -u >> $O/device.txt
med() { grep -E "^(dense|sparse)" "$1" | awk '{print $(NF-3)}' | tr '\n' ' '; }
for c in false true; do
  ds="0 0.94 0.735"; [[ $c == true ]] && ds="0 0.95"
  for d in $ds; do
    ks=(cur/dense cur/sparse e1/sparse e2/sparse e2/sparse e1/sparse cur/sparse cur/dense)
    args=(); for k in "${ks[@]}"; do args+=(--kernel $D/${k}_causal$c); done
    timeout 100 $B "${args[@]}" --batch 1 --seq 65536 --dial $d --check none --warmup 2 --iters 6 > $O/bench_c${c}_d$d.log 2>&1
    echo "64K causal=$c dial=$d rc=$? t=$((SECONDS-T0)): $(med $O/bench_c${c}_d$d.log) | $(grep -E '^sparse' $O/bench_c${c}_d$d.log | head -1 | awk '{print $(NF-4)}')"; save
  done
done
timeout 60 $B --kernel $D/e2/sparse_causalfalse --kernel $D/e2/sparse_causaltrue --kernel $D/e2/sparse_a_causaltrue --kernel $D/e2/sparse_f16_hd64_gqa \
  --batch 2 --seq-q 1000 --seq-kv 1300 --warmup 0 --iters 1 > $O/m_random.log 2>&1; echo "model random rc=$? $(grep -c PASS $O/m_random.log) PASS $(grep -c FAIL $O/m_random.log) FAIL; $(grep -c 'match' $O/m_random.log) match"
timeout 60 $B --kernel $D/e2/sparse_causalfalse --kernel $D/e2/sparse_causaltrue --batch 1 --seq 4096 --dial 0.9 --warmup 0 --iters 1 > $O/m_dial.log 2>&1; echo "model dial rc=$? $(grep -c PASS $O/m_dial.log) PASS $(grep -c FAIL $O/m_dial.log) FAIL; $(grep -c 'match' $O/m_dial.log) match"
timeout 120 compute-sanitizer --tool racecheck --error-exitcode 9 $B --kernel $D/e2/sparse_causalfalse --batch 1 --seq 2048 --dial 0.7 --check rows:8 --warmup 0 --iters 1 > $O/racecheck.log 2>&1
echo "racecheck rc=$? $(grep 'RACECHECK SUMMARY' $O/racecheck.log)"; save
echo "total t=$((SECONDS-T0))"
