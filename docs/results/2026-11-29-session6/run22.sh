#!/usr/bin/env bash
# Session 6, call 9: cuDNN / FA2 (PyTorch SDPA) vs our hd128 non-causal kernel
# with 192-key blocks (m192) and 176 (f0), 4K and 16K, 16 heads.
set -u
B=.device/blasst-bench; D=.device; O=/tmp/r22; mkdir -p $O
save() { (cd /tmp && tar czf $OUT/r22.tgz r22); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $O/device.txt; date -u >> $O/device.txt
k=bench_bf16_hd128_h16_causalfalse
for seq in 16384 4096; do b=$((32768 / seq))
  timeout 40 $B --kernel $D/m192/$k --kernel $D/f0/$k --kernel $D/f0/$k --kernel $D/m192/$k --batch $b --seq $seq --check none --warmup 5 --iters 20 > $O/ours_$seq.log 2>&1
  echo "ours $seq m192 f0 f0 m192: $(grep -E median $O/ours_$seq.log | sed -E 's/.*median ([0-9.]+) ms.*/\1/' | tr '\n' ' ')"; save
done
HEAD_DIM=128 timeout 90 python3 test/gpu/sdpa_peer.py 16384 4096 > $O/peers.jsonl 2>$O/peers.err; echo "peers rc=$?"; grep -v '"causal": true' $O/peers.jsonl | cut -c1-200; save
