#!/usr/bin/env bash
# Session 6, call 1: Q in registers (qr) vs block_n 144 control (bn144) vs landed (bl).
set -u
B=.device/blasst-bench; D=.device; O=/tmp/r14; mkdir -p $O; T0=$SECONDS
save() { (cd /tmp && tar czf $OUT/r14.tgz r14); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $O/device.txt; date -u >> $O/device.txt
matrix=(); for f in $D/qrm/*.meta; do s="${f%.meta}"; [[ "$(basename "$s")" == bench_* ]] || matrix+=(--kernel "$s"); done
for shape in "2 300 517" "1 1000 1000" "2 517 300"; do read -r b sq skv <<<"$shape"
  timeout 60 $B "${matrix[@]}" --batch $b --seq-q $sq --seq-kv $skv --o-pad 8 --warmup 0 --iters 1 > "$O/correct_${b}_${sq}_${skv}.log" 2>&1
  echo "qr matrix $shape rc=$? $(grep -c PASS "$O/correct_${b}_${sq}_${skv}.log") PASS $(grep -c FAIL "$O/correct_${b}_${sq}_${skv}.log") FAIL t=$((SECONDS-T0))"; done; save
BENCH_64K=0 timeout 150 test/gpu/run-blasst.sh $D/qr $B $O/checks_qr > $O/checks_qr.out 2>&1; echo "checks qr rc=$? t=$((SECONDS-T0))"; grep -E "racecheck|failures" $O/checks_qr.out; save
for cd in "false 0" "false 0.94" "false 0.735" "true 0" "true 0.95" "true 0.75"; do read -r causal d <<<"$cd"
  (( SECONDS - T0 > 400 )) && { echo "stop: time"; break; }
  ks=(bl/dense qr/dense bn144/dense bl/sparse qr/sparse bn144/sparse bn144/sparse qr/sparse bl/sparse bn144/dense qr/dense bl/dense)
  args=(); for k in "${ks[@]}"; do args+=(--kernel $D/${k}_causal$causal); done
  timeout 100 $B "${args[@]}" --batch 1 --seq 65536 --dial $d --check none --warmup 2 --iters 8 > $O/bench_c${causal}_d$d.log 2>&1
  echo "bench causal=$causal dial=$d rc=$? t=$((SECONDS-T0))"; grep -E "median" $O/bench_c${causal}_d$d.log | sed -E 's/.*median ([0-9.]+) ms.*/\1/' | tr '\n' ' '; echo; save
done
for hd in 64 128; do for c in false true; do
  (( SECONDS - T0 > 520 )) && { echo "stop: time"; break; }
  k=bench_bf16_hd${hd}_h16_causal$c
  timeout 40 $B --kernel $D/f/final/$k --kernel $D/qrm/$k --kernel $D/qrm/$k --kernel $D/f/final/$k --batch 2 --seq 16384 --check none --warmup 3 --iters 10 > $O/d16k_$k.log 2>&1
  echo "16K $k rc=$? $(grep -E median $O/d16k_$k.log | sed -E 's/.*median ([0-9.]+) ms.*/\1/' | tr '\n' ' ')"; save
done; done
save
