#!/usr/bin/env bash
# Session 7, call 1: the owed checks on the landed kernels (model at 3
# thresholds/2 dials, racecheck of both tiles), the ping-pong variant's checks,
# and landed vs ping-pong at 64K, ABBA, non-causal and causal.
set -u
B=.device/blasst-bench; D=.device; O=/tmp/r23; mkdir -p $O; T0=$SECONDS
save() { (cd /tmp && tar czf $OUT/r23.tgz r23); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $O/device.txt; date -u >> $O/device.txt
med() { grep -E median "$1" | sed -E 's/.*median ([0-9.]+) ms.*/\1/' | tr '\n' ' '; }
for c in false true; do
  ds="0.94 0.735 0"; [[ $c == true ]] && ds="0.95 0.75 0"
  for d in $ds; do
    (( SECONDS - T0 > 300 )) && { echo "stop: time"; break; }
    ks=(cur/dense pp/dense cur/sparse pp/sparse pp/sparse cur/sparse pp/dense cur/dense)
    args=(); for k in "${ks[@]}"; do args+=(--kernel $D/${k}_causal$c); done
    timeout 100 $B "${args[@]}" --batch 1 --seq 65536 --dial $d --check none --warmup 2 --iters 6 > $O/bench_c${c}_d$d.log 2>&1
    echo "64K causal=$c dial=$d rc=$? t=$((SECONDS-T0)): $(med $O/bench_c${c}_d$d.log) | $(grep -o 'skipped [0-9.]*%' $O/bench_c${c}_d$d.log | head -1)"; save
  done
done
CHECKS=1 BENCH_64K=0 timeout 150 bash test/gpu/run-blasst.sh $D/cur $B $O/cur_checks 2>&1 | tail -n 30; save
CHECKS=1 BENCH_64K=0 timeout 120 bash test/gpu/run-blasst.sh $D/pp $B $O/pp_checks 2>&1 | grep -E "racecheck|FAIL|failures|!!"; save
echo "total t=$((SECONDS-T0))"
