#!/usr/bin/env bash
# Session 6, call 8: block_n 192 for non-causal head_dim 128 as the default:
# the 36-kernel matrix (m192) x 3 shapes, and a second 64K ABBA (b192 first).
set -u
B=.device/blasst-bench; D=.device; O=/tmp/r21; mkdir -p $O; T0=$SECONDS
save() { (cd /tmp && tar czf $OUT/r21.tgz r21); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $O/device.txt; date -u >> $O/device.txt
matrix=(); for f in $D/m192/*.meta; do s="${f%.meta}"; [[ "$(basename "$s")" == bench_* ]] || matrix+=(--kernel "$s"); done
for shape in "2 300 517" "1 1000 1000" "2 517 300"; do read -r b sq skv <<<"$shape"
  timeout 60 $B "${matrix[@]}" --batch $b --seq-q $sq --seq-kv $skv --o-pad 8 --warmup 0 --iters 1 > "$O/correct_${b}_${sq}_${skv}.log" 2>&1
  echo "matrix $shape rc=$? $(grep -c PASS "$O/correct_${b}_${sq}_${skv}.log") PASS $(grep -c FAIL "$O/correct_${b}_${sq}_${skv}.log") FAIL t=$((SECONDS-T0))"; done; save
k=bench_bf16_hd128_h16_causalfalse
timeout 40 $B --kernel $D/m192/$k --kernel $D/f0/$k --kernel $D/f0/$k --kernel $D/m192/$k --batch 2 --seq 16384 --check none --warmup 3 --iters 10 > $O/d16k.log 2>&1
echo "16K dense nc b192 bl bl b192: $(grep -E median $O/d16k.log | sed -E 's/.*median ([0-9.]+) ms.*/\1/' | tr '\n' ' ')"; save
for d in 0.94 0.735 0; do
  (( SECONDS - T0 > 250 )) && { echo "stop: time"; break; }
  ks=(b192/dense bl/dense b192/sparse bl/sparse bl/sparse b192/sparse bl/dense b192/dense)
  args=(); for k in "${ks[@]}"; do args+=(--kernel $D/${k}_causalfalse); done
  timeout 90 $B "${args[@]}" --batch 1 --seq 65536 --dial $d --check none --warmup 2 --iters 6 > $O/bench_d$d.log 2>&1
  echo "64K nc dial=$d rc=$? t=$((SECONDS-T0)): $(grep -E median $O/bench_d$d.log | sed -E 's/.*median ([0-9.]+) ms.*/\1/' | tr '\n' ' ')"; save
done
