#!/usr/bin/env bash
# Compares schedule variants on the H200 in one run: the correctness matrix
# of each variant (every element vs the CPU reference), then the benchmark
# kernels of all variants side by side, then cuDNN / FA2 on the same shapes.
# Each variant is a kernel directory from build-kernels.sh (BLASST_COMPILE_FLAGS
# set to the variant's schedule flags).
# Usage: test/gpu/run-schedules.sh KROOT BENCH OUT variant...
# Env: SEQS (timing lengths), PEERS=0 (skip SDPA), CORRECT_VARIANTS (default
# all), SHAPES ("b sq skv,b sq skv,..."), BENCH_HD (head_dim of the timed
# kernels and the peers, default 128).
set -uo pipefail
KROOT="$1"; BENCH="$2"; OUT="$3"; shift 3; VARIANTS=("$@")
mkdir -p "$OUT"
fails=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu \
  --format=csv | tee "$OUT/device.txt"
date -u +"%Y-%m-%dT%H:%M:%SZ" | tee -a "$OUT/device.txt"
for causal in false true; do
  for seq in ${SEQS:-4096 16384 32768}; do
    b=$((32768 / seq))
    ks=()
    for v in "${VARIANTS[@]}"; do ks+=(--kernel "$KROOT/$v/bench_bf16_hd${BENCH_HD:-128}_h16_causal$causal"); done
    log="$OUT/perf_causal${causal}_s${seq}.log"
    timeout ${STEP_TIMEOUT:-60} "$BENCH" "${ks[@]}" --batch "$b" --seq "$seq" --check rows:16 --warmup 10 --iters 30 \
      >"$log" 2>&1 || fails=$((fails + 1))
    echo "--- causal=$causal seq=$seq batch=$b"
    grep -E "TFLOP|FAIL" "$log"
  done
done
if [[ ${PEERS:-1} == 1 ]]; then
  HEAD_DIM=${BENCH_HD:-128} python3 "$(dirname "$0")/sdpa_peer.py" ${SEQS:-4096 16384 32768} | tee "$OUT/peers.jsonl"
fi
for v in ${CORRECT_VARIANTS:-${VARIANTS[@]}}; do
  matrix=()
  for f in "$KROOT/$v"/*.meta; do
    s="${f%.meta}"; [[ "$(basename "$s")" == bench_* ]] || matrix+=(--kernel "$s")
  done
  while read -r shape; do
    read -r b sq skv <<<"$shape"
    log="$OUT/correct_${v}_b${b}_q${sq}_kv${skv}.log"
    timeout ${STEP_TIMEOUT:-60} "$BENCH" "${matrix[@]}" --batch "$b" --seq-q "$sq" --seq-kv "$skv" --o-pad 8 \
      --warmup 0 --iters 1 >"$log" 2>&1
    rc=$?
    echo "correct $v $shape: exit $rc, $(grep -c PASS "$log") PASS, $(grep -c FAIL "$log") FAIL"
    [[ $rc -eq 0 ]] || { fails=$((fails + 1)); grep FAIL "$log" | head -5; }
  done < <(tr ',' '\n' <<<"${SHAPES:-1 1 1,2 77 77,2 128 128,2 300 517,1 1000 1000,2 517 300,1 2048 2048}")
done
echo "failures: $fails" | tee "$OUT/summary.txt"
tar czf "$OUT.tgz" -C "$(dirname "$OUT")" "$(basename "$OUT")"
exit $((fails > 0))
