#!/usr/bin/env bash
# Session 5, call 2: skip-path changes (vote before the quad shuffles, no dummy
# group on the skip path, descriptor adds; rowmax chains 2/4) vs old.
set -u
B=.device/blasst-bench; E=.device/e; O=/tmp/r10; mkdir -p $O
save() { (cd /tmp && tar czf $OUT/r10.tgz r10); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $O/device.txt; date -u >> $O/device.txt
echo "== BLASST checks (new)"
timeout 400 test/gpu/run-blasst.sh $E/newbl $B $O/blasst-checks-only >/dev/null 2>&1 &
pid=$!
wait $pid; echo "run-blasst rc=$?"; tail -3 $O/blasst-checks-only/summary.txt 2>/dev/null; save
timeout 60 $B --kernel $E/c4/sparse_causalfalse --kernel $E/c4/sparse_causaltrue --kernel $E/c2/sparse_causaltrue \
  --batch 2 --seq-q 1000 --seq-kv 1300 --warmup 0 --iters 1 > $O/m_c24.log 2>&1; echo "c2/c4 model rc=$?"
for causal in false true; do
  dials="0 0.735 0.94"; [[ $causal == true ]] && dials="0 0.75 0.95"
  for d in $dials; do
    timeout 120 $B --kernel $E/oldbl/dense_causal$causal --kernel $E/newbl/dense_causal$causal \
      --kernel $E/oldbl/sparse_causal$causal --kernel $E/newbl/sparse_causal$causal \
      --kernel $E/c2/sparse_causal$causal --kernel $E/c4/sparse_causal$causal \
      --kernel $E/oldbl/dense_causal$causal --kernel $E/newbl/sparse_causal$causal \
      --batch 1 --seq 65536 --dial $d --check none --warmup 3 --iters 10 > $O/bench_c${causal}_d$d.log 2>&1
    echo "bench causal=$causal dial=$d rc=$?"; grep -E "ms|skip" $O/bench_c${causal}_d$d.log | grep -v "^ *kernel" | head -12; save
  done
done
for hd in 128 64 256; do
  cv=" "; [[ $hd == 128 ]] && cv=new
  BENCH_HD=$hd PEERS=0 SEQS="16384" CORRECT_VARIANTS="$cv" SHAPES="2 300 517,1 1000 1000,2 517 300" STEP_TIMEOUT=90 \
    timeout 300 test/gpu/run-schedules.sh $E .device/blasst-bench $O/hd$hd old new new old > $O/hd$hd.out 2>&1
  echo "hd$hd rc=$?"; grep -E "TFLOP|correct|FAIL" $O/hd$hd.out | head -20; save
done
save
