#!/usr/bin/env bash
# Session 7, call 4: why the sparse kernel costs 3-4% with nothing skipped (and
# the ping-pong one does not): ncu SASS-level samples, dense vs sparse vs
# ping-pong sparse, non-causal, 16K, dial 0.
set -u
B=.device/blasst-bench; O=/tmp/r26; mkdir -p $O; T0=$SECONDS
save() { (cd /tmp && tar czf $OUT/r26.tgz r26); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $O/device.txt; date -u >> $O/device.txt
prof() { # name kernel dial
  timeout 150 ncu --section SourceCounters --section WarpStateStats --section SpeedOfLight \
    --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__cycles_active.avg,smsp__inst_executed.sum \
    -o $O/$1 -c 1 $B --kernel .device/$2 --batch 1 --seq 16384 --dial $3 --check none --warmup 0 --iters 1 > $O/$1.log 2>&1
  echo "ncu $1 rc=$? t=$((SECONDS-T0))"
  timeout 60 ncu -i $O/$1.ncu-rep --page source --csv --print-source sass > $O/$1.src.csv 2>$O/$1.src.err; echo "src rc=$?"
  timeout 60 ncu -i $O/$1.ncu-rep --page details > $O/$1.details.txt 2>&1
  rm -f $O/$1.ncu-rep; xz -6 $O/$1.src.csv; save
}
prof dn cur/dense_causalfalse 0
prof sp cur/sparse_causalfalse 0
prof pp pp/sparse_causalfalse 0
prof ppd pp/dense_causalfalse 0
for k in cur/sparse_causalfalse cur/dense_causalfalse; do cuobjdump -sass .device/$k.cubin > $O/$(echo $k | tr / _).sass 2>&1; done
xz -6 $O/*.sass; ls -la $O; save
