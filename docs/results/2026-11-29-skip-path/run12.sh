#!/usr/bin/env bash
# Session 5, call 4: attribution. old = HEAD; vbn = no dummy group on the skip
# path; vb = vbn + descriptor adds; vba = vb + branch-free look-ahead acquire
# (dense too: vba/dense); new = vb + vote on per-thread maxes.
set -u
B=.device/blasst-bench; E=.device/e; O=/tmp/r12; mkdir -p $O
save() { (cd /tmp && tar czf $OUT/r12.tgz r12); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $O/device.txt; date -u >> $O/device.txt
for causal in false true; do
  dials="0 0.94 0.735"; [[ $causal == true ]] && dials="0 0.95 0.75"
  for d in $dials; do
    ks=(oldbl/dense vba/dense oldbl/sparse vbn/sparse vb/sparse vba/sparse newbl/sparse
        newbl/sparse vba/sparse vb/sparse vbn/sparse oldbl/sparse vba/dense oldbl/dense)
    args=(); for k in "${ks[@]}"; do args+=(--kernel $E/${k}_causal$causal); done
    timeout 150 $B "${args[@]}" --batch 1 --seq 65536 --dial $d --check none --warmup 3 --iters 10 > $O/bench_c${causal}_d$d.log 2>&1
    echo "bench causal=$causal dial=$d rc=$?"; grep -E "median" $O/bench_c${causal}_d$d.log | sed -E 's/.*median ([0-9.]+) ms.*/\1/' | tr '\n' ' '; echo; save
  done
done
save
