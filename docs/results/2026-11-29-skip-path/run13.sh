#!/usr/bin/env bash
# Session 5, call 5 (final): correctness of the landed code, then 64K BLASST.
# final = dense matrix; F1 = landed BLASST kernels; F2 = F1 with the skip
# path's empty commit (dummy group) kept; oldbl = HEAD at the session start.
set -u
B=.device/blasst-bench; F=.device/f; O=/tmp/r13; mkdir -p $O; T0=$SECONDS
save() { (cd /tmp && tar czf $OUT/r13.tgz r13); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $O/device.txt; date -u >> $O/device.txt
matrix=(); for f in $F/final/*.meta; do s="${f%.meta}"; [[ "$(basename "$s")" == bench_* ]] || matrix+=(--kernel "$s"); done
for shape in "2 300 517" "1 1000 1000" "2 517 300"; do read -r b sq skv <<<"$shape"
  timeout 60 $B "${matrix[@]}" --batch $b --seq-q $sq --seq-kv $skv --o-pad 8 --warmup 0 --iters 1 > "$O/correct_${b}_${sq}_${skv}.log" 2>&1
  echo "matrix $shape rc=$? $(grep -c PASS "$O/correct_${b}_${sq}_${skv}.log") PASS $(grep -c FAIL "$O/correct_${b}_${sq}_${skv}.log") FAIL t=$((SECONDS-T0))"; done; save
BENCH_64K=0 timeout 150 test/gpu/run-blasst.sh $F/F1 $B $O/checks_F1 > $O/checks_F1.out 2>&1; echo "checks F1 rc=$? t=$((SECONDS-T0))"; grep -E "racecheck|failures" $O/checks_F1.out; save
timeout 40 $B --kernel $F/F2/sparse_causalfalse --kernel $F/F2/sparse_causaltrue --kernel $F/F2/sparse_a_causaltrue \
  --batch 1 --seq 4096 --dial 0.9 --warmup 0 --iters 1 > $O/m_F2.log 2>&1; echo "F2 model rc=$? $(grep -c PASS $O/m_F2.log) PASS"; save
for cd in "false 0" "true 0" "false 0.94" "true 0.95" "false 0.735" "true 0.75"; do read -r causal d <<<"$cd"
  (( SECONDS - T0 > 330 )) && { echo "stop: time"; break; }
  ks=(oldbl/dense F1/dense oldbl/sparse F1/sparse F2/sparse F2/sparse F1/sparse oldbl/sparse F1/dense oldbl/dense)
  args=(); for k in "${ks[@]}"; do args+=(--kernel $F/${k}_causal$causal); done
  timeout 90 $B "${args[@]}" --batch 1 --seq 65536 --dial $d --check none --warmup 2 --iters 8 > $O/bench_c${causal}_d$d.log 2>&1
  echo "bench causal=$causal dial=$d rc=$? t=$((SECONDS-T0))"; grep -E "median" $O/bench_c${causal}_d$d.log | sed -E 's/.*median ([0-9.]+) ms.*/\1/' | tr '\n' ' '; echo; save
done
save
