#!/usr/bin/env bash
# The H200 runs of the sm_90a kernels: correctness matrix, sanitizers,
# determinism and timing beside cuDNN. Runs on the device machine (no LLVM
# there): needs the kernels from build-kernels.sh and a built blasst-bench.
# Usage: test/gpu/run-h200.sh KERNEL_DIR BENCH OUT_DIR smoke|correct|sanitize|perf|all
# Writes logs under OUT_DIR and everything packed into OUT_DIR.tgz.
set -uo pipefail
K="$1"; BENCH="$2"; OUT="$3"; MODE="${4:-all}"
mkdir -p "$OUT"
fails=0
step() { echo; echo "=== $* ==="; }
bench() { # name, args...: runs the bench, logs, counts failures
  local name="$1"; shift
  "$BENCH" "$@" --json "$OUT/$name.json" >"$OUT/$name.log" 2>&1
  local rc=$?
  tail -n 60 "$OUT/$name.log" | grep -E "PASS|FAIL|kernel|TFLOP|error" | tail -n 45
  [[ $rc -eq 0 ]] || { echo "!! $name exited $rc"; fails=$((fails + 1)); }
  return $rc
}
matrix=()
for f in "$K"/*.meta; do
  s="${f%.meta}"; [[ "$(basename "$s")" == bench_* ]] || matrix+=(--kernel "$s")
done

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu \
  --format=csv | tee "$OUT/device.txt"
date -u +"%Y-%m-%dT%H:%M:%SZ" | tee -a "$OUT/device.txt"

if [[ $MODE == smoke || $MODE == all ]]; then
  step "smoke: two kernels, small shapes"
  bench smoke1 --kernel "$K/bf16_hd128_q16kv16_causalfalse_lsefalse" \
    --kernel "$K/bf16_hd128_q16kv4_causaltrue_lsetrue" --batch 1 --seq 256 \
    --warmup 1 --iters 3 || { echo "smoke failed; stopping"; exit 1; }
fi

if [[ $MODE == correct || $MODE == all ]]; then
  step "correctness: 36 kernels x shapes (every element checked)"
  for shape in "1 1 1" "2 77 77" "2 128 128" "2 300 517" "1 1000 1000" \
               "2 517 300" "1 2048 2048"; do
    read -r b sq skv <<<"$shape"
    bench "correct_b${b}_q${sq}_kv${skv}" "${matrix[@]}" --batch "$b" \
      --seq-q "$sq" --seq-kv "$skv" --o-pad 8 --warmup 0 --iters 1
  done
fi

if [[ $MODE == sanitize || $MODE == all ]]; then
  step "compute-sanitizer memcheck and racecheck"
  cs=compute-sanitizer
  command -v $cs >/dev/null || cs=/usr/local/cuda/bin/compute-sanitizer
  for tool in memcheck racecheck; do
    for shape in "2 300 517" "1 2048 2048"; do
      read -r b sq skv <<<"$shape"
      $cs --tool $tool --error-exitcode 9 "$BENCH" \
        --kernel "$K/bf16_hd128_q16kv4_causaltrue_lsetrue" --batch "$b" \
        --seq-q "$sq" --seq-kv "$skv" --check rows:16 --warmup 0 --iters 1 \
        >"$OUT/sanitize_${tool}_${sq}.log" 2>&1
      rc=$?
      echo "$tool seq $sq/$skv: exit $rc; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitize_${tool}_${sq}.log" | tail -1)"
      [[ $rc -eq 0 ]] || fails=$((fails + 1))
    done
  done
  step "determinism: 1000 back-to-back launches, bit-identical"
  bench determinism --kernel "$K/bench_bf16_hd128_h16_causaltrue" --batch 2 \
    --seq 4096 --check rows:32 --repeat-launches 1000 --warmup 0 --iters 1
fi

if [[ $MODE == perf || $MODE == all ]]; then
  step "timing: bf16 hd128 16 heads, 32K tokens per batch"
  for seq in 4096 16384 32768; do
    b=$((32768 / seq))
    bench "perf_s${seq}" --kernel "$K/bench_bf16_hd128_h16_causalfalse" \
      --kernel "$K/bench_bf16_hd128_h16_causaltrue" --batch "$b" --seq "$seq" \
      --check rows:16 --warmup 10 --iters 30
  done
  step "peers: PyTorch SDPA (cuDNN, FlashAttention-2) in the same run"
  python3 "$(dirname "$0")/sdpa_peer.py" 4096 16384 32768 | tee "$OUT/peers.jsonl"
fi
echo
echo "failures: $fails" | tee "$OUT/summary.txt"
# The device returns at most 8 files: pack everything into one.
tar czf "$OUT.tgz" -C "$(dirname "$OUT")" "$(basename "$OUT")"
exit $((fails > 0))
