#!/usr/bin/env bash
# Session 6, call 6: the standard BLASST script on the landed kernels (checks,
# racecheck, 64K benchmark with the error against dense).
set -u
O=/tmp/r19; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $O/device.txt; date -u >> $O/device.txt
timeout 560 test/gpu/run-blasst.sh .device/bl .device/blasst-bench $O/blasst > $O/blasst.out 2>&1; echo "run-blasst rc=$?"
date -u >> $O/device.txt
(cd /tmp && tar czf $OUT/r19.tgz r19)
grep -E "racecheck|failures|vs first|skip rate|^=== " $O/blasst.out | head -60
