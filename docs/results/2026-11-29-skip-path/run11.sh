#!/usr/bin/env bash
# Session 5, call 3: which skip-path change costs the non-causal no-skip case.
# old = HEAD; new = all; vb = no dummy group, old vote; vd = new vote, dummy group.
set -u
B=.device/blasst-bench; E=.device/e; O=/tmp/r11; mkdir -p $O
save() { (cd /tmp && tar czf $OUT/r11.tgz r11); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $O/device.txt; date -u >> $O/device.txt
timeout 60 $B --kernel $E/vb/sparse_causalfalse --kernel $E/vb/sparse_causaltrue --kernel $E/vd/sparse_causaltrue \
  --batch 2 --seq-q 1000 --seq-kv 1300 --warmup 0 --iters 1 > $O/m_vbvd.log 2>&1; echo "vb/vd model rc=$?"
for causal in false true; do
  dials="0 0.735 0.94"; [[ $causal == true ]] && dials="0 0.75 0.95"
  for d in $dials; do
    timeout 120 $B --kernel $E/oldbl/dense_causal$causal --kernel $E/oldbl/sparse_causal$causal \
      --kernel $E/newbl/sparse_causal$causal --kernel $E/vb/sparse_causal$causal --kernel $E/vd/sparse_causal$causal \
      --kernel $E/oldbl/dense_causal$causal --kernel $E/vd/sparse_causal$causal --kernel $E/vb/sparse_causal$causal \
      --kernel $E/newbl/sparse_causal$causal --kernel $E/oldbl/sparse_causal$causal \
      --batch 1 --seq 65536 --dial $d --check none --warmup 3 --iters 10 > $O/bench_c${causal}_d$d.log 2>&1
    echo "bench causal=$causal dial=$d rc=$?"; grep -E "median" $O/bench_c${causal}_d$d.log | sed -E 's/.*median ([0-9.]+) ms.*/\1/' | tr '\n' ' '; echo; save
  done
done
save
