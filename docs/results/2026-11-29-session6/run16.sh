#!/usr/bin/env bash
# Session 6, call 3: where the skipped iterations wait. ncu SASS-level stall sampling.
set -u
B=.device/blasst-bench; O=/tmp/r16; mkdir -p $O
save() { (cd /tmp && tar czf $OUT/r16.tgz r16); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $O/device.txt; date -u >> $O/device.txt
prof() { # name kernel dial
  timeout 150 ncu --section SourceCounters --section WarpStateStats --section SpeedOfLight \
    --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__cycles_active.avg,smsp__inst_executed.sum,lts__t_sectors_srcunit_tex_op_read.sum,l1tex__m_xbar2l1tex_read_bytes.sum.per_second \
    -o $O/$1 -c 1 $B --kernel .device/bl/$2 --batch 1 --seq 16384 --dial $3 --check none --warmup 0 --iters 1 > $O/$1.log 2>&1
  echo "ncu $1 rc=$?"
  timeout 60 ncu -i $O/$1.ncu-rep --page source --csv --print-source sass > $O/$1.src.csv 2>$O/$1.src.err; echo "src rc=$?"
  timeout 60 ncu -i $O/$1.ncu-rep --page details > $O/$1.details.txt 2>&1
  rm -f $O/$1.ncu-rep.keep; save
}
prof sp_nc_92 sparse_causalfalse 0.94
prof sp_nc_0 sparse_causalfalse 0
prof dn_nc dense_causalfalse 0
for k in sparse_causalfalse dense_causalfalse; do cuobjdump -sass .device/bl/$k.cubin > $O/$k.sass 2>&1; done
ls -la $O; save
