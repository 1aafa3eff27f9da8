#!/usr/bin/env bash
# Session 9, call 8: the landed build (s11, byte-identical to s10 of run 49):
# run-blasst.sh's 64K benchmark (warmup 3, 10 launches), then an ABBA order
# with nothing skippable.
set -u
B=.device/blasst-bench; D=.device; O=/tmp/r50; mkdir -p $O; T0=$SECONDS
save() { (cd /tmp && tar czf $OUT/r50.tgz r50); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $O/device.txt; date -u >> $O/device.txt
med() { grep -E "^  time" "$1" | awk '{print $3}' | tr '\n' ' '; }
CHECKS=0 timeout 200 bash test/gpu/run-blasst.sh $D/s11 $B $O/bench > $O/bench.txt 2>&1; echo "bench rc=$? t=$((SECONDS-T0))"; grep -E "^(dense|sparse)" $O/bench.txt; save
for c in false true; do
  ks=(); for k in dense sparse sparse dense dense sparse sparse dense; do ks+=(--kernel $D/s11/${k}_causal$c); done
  timeout 60 $B "${ks[@]}" --batch 1 --seq 65536 --dial 0 --check none --vs-first --warmup 1 --iters 5 > $O/abba_c$c.log 2>&1
  echo "abba causal=$c rc=$? t=$((SECONDS-T0)): $(med $O/abba_c$c.log)"; save
done
