#!/usr/bin/env bash
# Session 7, call 7: the final tree (causal/tail mask as one compare per score):
# the 36-kernel matrix x 4 shapes, the standard BLASST script (model checks,
# racecheck of both tiles, 64K benchmark with --vs-first), and landed-before
# vs final at 64K (ABBA) where the mask runs.
set -u
B=.device/blasst-bench; D=.device; O=/tmp/r29; mkdir -p $O; T0=$SECONDS
save() { (cd /tmp && tar czf $OUT/r29.tgz r29); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $O/device.txt; date -u >> $O/device.txt
med() { grep -E "^(dense|sparse)" "$1" | awk '{print $(NF-3)}' | tr '\n' ' '; }
matrix=(); for f in $D/m7/*.meta; do s="${f%.meta}"; [[ "$(basename "$s")" == bench_* ]] || matrix+=(--kernel "$s"); done
for shape in "2 300 517" "1 1000 1000" "2 517 300" "1 77 77"; do read -r b sq skv <<<"$shape"
  timeout 90 $B "${matrix[@]}" --batch $b --seq-q $sq --seq-kv $skv --o-pad 8 --warmup 0 --iters 1 > "$O/correct_${b}_${sq}_${skv}.log" 2>&1
  echo "matrix $shape rc=$? $(grep -c PASS "$O/correct_${b}_${sq}_${skv}.log") PASS $(grep -c FAIL "$O/correct_${b}_${sq}_${skv}.log") FAIL t=$((SECONDS-T0))"; done; save
for c in true false; do
  d=0.95; [[ $c == false ]] && d=0
  ks=(cur/dense cur7/dense cur/sparse cur7/sparse cur7/sparse cur/sparse cur7/dense cur/dense)
  args=(); for k in "${ks[@]}"; do args+=(--kernel $D/${k}_causal$c); done
  timeout 100 $B "${args[@]}" --batch 1 --seq 65536 --dial $d --check none --warmup 2 --iters 6 > $O/ab_c${c}_d$d.log 2>&1
  echo "64K A/B causal=$c dial=$d rc=$? t=$((SECONDS-T0)): $(med $O/ab_c${c}_d$d.log)"; save
done
timeout 330 bash test/gpu/run-blasst.sh $D/cur7 $B $O/blasst 2>&1 | tail -n 40; save
echo "total t=$((SECONDS-T0))"
