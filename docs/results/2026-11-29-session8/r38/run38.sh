#!/usr/bin/env bash
# Session 8, call 5: warp votes through an mbarrier (vmns: a warp that votes
# to keep goes on without waiting; skip-voting warps wait and read the
# warps' bytes) against the bar.red vote (vns), both V on demand, no stats.
set -u
B=.device/blasst-bench; D=.device; O=/tmp/r38; mkdir -p $O; T0=$SECONDS
save() { (cd /tmp && tar czf $OUT/r38.tgz r38); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $O/device.txt; date -u >> $O/device.txt
k2=(--kernel $D/vmns/sparse_causalfalse --kernel $D/vmns/sparse_causaltrue)
timeout 40 $B "${k2[@]}" --batch 2 --seq-q 300 --seq-kv 517 --warmup 0 --iters 1 > $O/c300.log 2>&1; echo "2x300x517 rc=$? $(grep -c PASS $O/c300.log) PASS $(grep -c FAIL $O/c300.log) FAIL t=$((SECONDS-T0))"; save
timeout 40 $B "${k2[@]}" --batch 2 --seq-q 1000 --seq-kv 1300 --warmup 0 --iters 1 > $O/c1000.log 2>&1; echo "2x1000x1300 rc=$? $(grep -c PASS $O/c1000.log) PASS $(grep -c FAIL $O/c1000.log) FAIL t=$((SECONDS-T0))"; save
timeout 60 $B "${k2[@]}" --batch 1 --seq 4096 --dial 0.9 --warmup 0 --iters 1 > $O/cdial.log 2>&1; echo "dial0.9 rc=$? $(grep -c PASS $O/cdial.log) PASS $(grep -c FAIL $O/cdial.log) FAIL t=$((SECONDS-T0))"; save
timeout 60 $B "${k2[@]}" --batch 1 --seq 2048 --log2-threshold 1.5 --warmup 0 --iters 1 > $O/cthr.log 2>&1; echo "thr1.5 rc=$? $(grep -c PASS $O/cthr.log) PASS $(grep -c FAIL $O/cthr.log) FAIL t=$((SECONDS-T0))"; save
med() { grep -E "^(dense|sparse)" "$1" | awk '{print $(NF-3)}' | tr '\n' ' '; }
for c in false true; do
  dials="0 0.735 0.94"; [[ $c == true ]] && dials="0 0.75 0.95"
  for d in $dials; do
    ks=(); for k in cur vns vmns vmns vns cur; do
      [[ $k == cur ]] && ks+=(--kernel $D/cur/dense_causal$c) || ks+=(--kernel $D/$k/sparse_causal$c); done
    timeout 70 $B "${ks[@]}" --batch 1 --seq 65536 --dial $d --check none --vs-first --warmup 1 --iters 5 > $O/bench_c${c}_d$d.log 2>&1
    echo "64K causal=$c dial=$d rc=$? t=$((SECONDS-T0)): $(med $O/bench_c${c}_d$d.log)"; save
  done
done
compute-sanitizer --tool racecheck --error-exitcode 9 $B --kernel $D/vmns/sparse_causalfalse --batch 1 --seq 2048 --dial 0.7 --check rows:8 --warmup 0 --iters 1 > $O/race.log 2>&1; echo "racecheck rc=$? $(grep 'RACECHECK SUMMARY' $O/race.log) t=$((SECONDS-T0))"; save
