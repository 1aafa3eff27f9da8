#!/usr/bin/env bash
# Session 9, call 6: the landed build (V on demand speculating after 2 kept
# blocks, visited = block count): the full run-blasst.sh (model checks,
# racecheck, 64K benchmark), then two more ABBA orders with nothing skippable.
set -u
B=.device/blasst-bench; D=.device; O=/tmp/r48; mkdir -p $O; T0=$SECONDS
save() { (cd /tmp && tar czf $OUT/r48.tgz r48); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $O/device.txt; date -u >> $O/device.txt
med() { grep -E "^  time" "$1" | awk '{print $3}' | tr '\n' ' '; }
timeout 330 bash test/gpu/run-blasst.sh $D/s9 $B $O/full > $O/full.txt 2>&1; echo "full rc=$? t=$((SECONDS-T0)) $(grep -c 'match$' $O/full.txt) counter matches, $(grep -c PASS $O/full.txt) PASS, $(grep -c FAIL $O/full.txt) FAIL; $(grep -h 'RACECHECK SUMMARY' $O/full.txt | tr '\n' ' ')"; save
for c in false true; do
  ks=(); for k in dense sparse sparse dense dense sparse sparse dense; do ks+=(--kernel $D/s9/${k}_causal$c); done
  timeout 70 $B "${ks[@]}" --batch 1 --seq 65536 --dial 0 --check none --vs-first --warmup 1 --iters 5 > $O/abba_c$c.log 2>&1
  echo "abba causal=$c rc=$? t=$((SECONDS-T0)): $(med $O/abba_c$c.log)"; save
done
grep -E "^dense|^sparse|time: median|skip rate|vs first \(" $O/full/bench_*.log | sed 's/^.*full\///' | head -60
