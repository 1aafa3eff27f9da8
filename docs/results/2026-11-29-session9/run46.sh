#!/usr/bin/env bash
# Session 9, call 4: pub = consumers publish, the producer never waits (diagnostic); pw = each warp publishes its own vote before bar.red (8 votes per block), speculate_after 2.
set -u
B=.device/blasst-bench; D=.device; O=/tmp/r46; mkdir -p $O; T0=$SECONDS
save() { (cd /tmp && tar czf $OUT/r46.tgz r46); }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $O/device.txt; date -u >> $O/device.txt
med() { grep -E "^  time" "$1" | awk '{print $3}' | tr '\n' ' '; }
rates() { grep -E "skip rate" "$1" | grep -o "skip rate [0-9.]*%" | awk '{print $3}' | tr '\n' ' '; }
bench() { # tag causal dial order...
  local tag=$1 c=$2 d=$3; shift 3; local ks=()
  for k in "$@"; do case $k in dense) ks+=(--kernel $D/fz0/dense_causal$c);; *) ks+=(--kernel $D/$k/sparse_causal$c);; esac; done
  timeout 90 $B "${ks[@]}" --batch 1 --seq 65536 --dial $d --check none --vs-first --warmup 1 --iters 5 > $O/bench_${tag}_c${c}_d$d.log 2>&1
  echo "$tag causal=$c dial=$d rc=$? t=$((SECONDS-T0)): $*: $(med $O/bench_${tag}_c${c}_d$d.log) | skip $(rates $O/bench_${tag}_c${c}_d$d.log)"; save
}
CHECKS=1 BENCH_64K=0 timeout 200 bash test/gpu/run-blasst.sh $D/pwfull $B $O/checks > $O/checks.txt 2>&1; echo "pw checks rc=$? t=$((SECONDS-T0)) $(grep -c 'match$' $O/checks.txt) counter matches, $(grep -c PASS $O/checks.txt) PASS, $(grep -c FAIL $O/checks.txt) FAIL; $(grep -h 'RACECHECK SUMMARY' $O/checks.txt | tr '\n' ' ')"; save
bench a false 0 dense novod sp2 pub pw pw pub sp2 novod dense
bench a true 0 dense novod sp2 pub pw pw pub sp2 novod dense
for c in false true; do
  dials="0.735 0.94"; [[ $c == true ]] && dials="0.75 0.95"
  for d in $dials; do bench s $c $d dense sp2 pw pw sp2 dense; done
done
echo done t=$((SECONDS-T0))
