#!/usr/bin/env bash
# Session 6, call 2: Q Kᵀ in two column slices (qk-parts=2). p2w0: skip path
# waits for both slices; p2dm: skip path commits an empty group; p2qr: p2w0 +
# Q in registers (bn144). bl = landed.
set -u
B=.device/blasst-bench; D=.device; O=/tmp/r15; mkdir -p $O; T0=$SECONDS
save() { (cd /tmp && tar czf $OUT/r15.tgz r15); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $O/device.txt; date -u >> $O/device.txt
BENCH_64K=0 timeout 150 test/gpu/run-blasst.sh $D/p2w0 $B $O/checks_p2w0 > $O/checks_p2w0.out 2>&1; echo "checks p2w0 rc=$? t=$((SECONDS-T0))"; grep -E "racecheck|failures" $O/checks_p2w0.out; save
for v in p2dm p2qr; do
  timeout 60 $B --kernel $D/$v/sparse_causalfalse --kernel $D/$v/sparse_causaltrue --kernel $D/$v/sparse_a_causaltrue --kernel $D/$v/sparse_f16_hd64_gqa \
    --batch 2 --seq-q 1000 --seq-kv 1300 --warmup 0 --iters 1 > $O/m_$v.log 2>&1; echo "$v model rc=$? $(grep -c PASS $O/m_$v.log) PASS $(grep -c FAIL $O/m_$v.log) FAIL"
  timeout 60 $B --kernel $D/$v/sparse_causalfalse --kernel $D/$v/sparse_causaltrue --batch 1 --seq 4096 --dial 0.9 --warmup 0 --iters 1 > $O/m9_$v.log 2>&1; echo "$v dial0.9 rc=$? $(grep -c PASS $O/m9_$v.log) PASS $(grep -c FAIL $O/m9_$v.log) FAIL"
done; save
for k in bench_bf16_hd128_h16_causalfalse bench_bf16_hd128_h16_causaltrue bench_bf16_hd64_h16_causalfalse; do
  timeout 60 $B --kernel $D/p2m/$k --batch 2 --seq-q 1000 --seq-kv 1300 --warmup 0 --iters 1 > $O/c_$k.log 2>&1; echo "p2 dense $k rc=$? $(grep -c PASS $O/c_$k.log) PASS"; done; save
for cd in "false 0.94" "false 0" "false 0.735" "true 0.95" "true 0" "true 0.75"; do read -r causal d <<<"$cd"
  (( SECONDS - T0 > 420 )) && { echo "stop: time"; break; }
  ks=(bl/dense p2w0/dense bl/sparse p2w0/sparse p2dm/sparse p2qr/sparse p2qr/sparse p2dm/sparse p2w0/sparse bl/sparse p2w0/dense bl/dense)
  args=(); for k in "${ks[@]}"; do args+=(--kernel $D/${k}_causal$causal); done
  timeout 100 $B "${args[@]}" --batch 1 --seq 65536 --dial $d --check none --warmup 2 --iters 8 > $O/bench_c${causal}_d$d.log 2>&1
  echo "bench causal=$causal dial=$d rc=$? t=$((SECONDS-T0))"; grep -E "median" $O/bench_c${causal}_d$d.log | sed -E 's/.*median ([0-9.]+) ms.*/\1/' | tr '\n' ' '; echo; save
done
for hd in 64 128; do c=false; k=bench_bf16_hd${hd}_h16_causal$c
  (( SECONDS - T0 > 530 )) && break
  timeout 40 $B --kernel $D/f/final/$k --kernel $D/p2m/$k --kernel $D/p2m/$k --kernel $D/f/final/$k --batch 2 --seq 16384 --check none --warmup 3 --iters 10 > $O/d16k_$k.log 2>&1
  echo "16K $k rc=$? $(grep -E median $O/d16k_$k.log | sed -E 's/.*median ([0-9.]+) ms.*/\1/' | tr '\n' ' ')"; save
done
save
