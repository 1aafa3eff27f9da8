#!/usr/bin/env bash
# Session 6, call 7: block_n 192 (b192) vs the landed 176 (bl), dense and sparse, 64K, ABBA.
set -u
B=.device/blasst-bench; D=.device; O=/tmp/r20; mkdir -p $O; T0=$SECONDS
save() { (cd /tmp && tar czf $OUT/r20.tgz r20); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $O/device.txt; date -u >> $O/device.txt
timeout 60 $B --kernel $D/b192/dense_causalfalse --kernel $D/b192/dense_causaltrue --batch 2 --seq-q 1000 --seq-kv 1300 --warmup 0 --iters 1 > $O/c_dense.log 2>&1; echo "b192 dense check rc=$? $(grep -c PASS $O/c_dense.log) PASS"
timeout 60 $B --kernel $D/b192/sparse_causalfalse --kernel $D/b192/sparse_causaltrue --kernel $D/b192/sparse_a_causaltrue --kernel $D/b192/sparse_f16_hd64_gqa --batch 2 --seq-q 1000 --seq-kv 1300 --warmup 0 --iters 1 > $O/m_sparse.log 2>&1; echo "b192 sparse model rc=$? $(grep -c PASS $O/m_sparse.log) PASS"
timeout 60 $B --kernel $D/b192/sparse_causalfalse --kernel $D/b192/sparse_causaltrue --batch 1 --seq 4096 --dial 0.9 --warmup 0 --iters 1 > $O/m9_sparse.log 2>&1; echo "b192 dial0.9 rc=$? $(grep -c PASS $O/m9_sparse.log) PASS"; save
for cd in "false 0.94" "false 0.735" "false 0" "true 0.95" "true 0.75" "true 0"; do read -r causal d <<<"$cd"
  (( SECONDS - T0 > 420 )) && { echo "stop: time"; break; }
  ks=(bl/dense b192/dense bl/sparse b192/sparse b192/sparse bl/sparse b192/dense bl/dense)
  args=(); for k in "${ks[@]}"; do args+=(--kernel $D/${k}_causal$causal); done
  timeout 100 $B "${args[@]}" --batch 1 --seq 65536 --dial $d --check none --warmup 2 --iters 8 > $O/bench_c${causal}_d$d.log 2>&1
  echo "bench causal=$causal dial=$d rc=$? t=$((SECONDS-T0)): $(grep -E median $O/bench_c${causal}_d$d.log | sed -E 's/.*median ([0-9.]+) ms.*/\1/' | tr '\n' ' ')"
  grep -E "^ *stats:" $O/bench_c${causal}_d$d.log | sed -E 's/.*skip rate/skip/' | head -4 | tr '\n' ' '; echo; save
done
