#!/usr/bin/env bash
# Decode on the H200: every element of O and LSE checked against the CPU
# reference (fresh random inputs, outputs poisoned) over the matrix seq_q
# 1/2/4/8 x MHA/GQA/MQA x head_dim 64/128/256 x causal, KV lengths that are not
# multiples of the 128-key block, batch 1 and 8 (the KV split count chosen
# at launch), then forced split counts 1/3/7/16 (split boundaries inside the
# sequence, short and capped splits); repeated launches bit-identical (the workspace counters
# reset); then the benchmark: bf16, head_dim 128, 32 q / 8 kv heads, batch 8
# at 32K and 128K, batch 1 at 128K, seq_q 1, achieved bandwidth (bytes of K+V
# read / median time).
# Usage: run-decode.sh [KDIR] [OUT]   (KDIR default .device/decode, from
# build-decode-kernels.sh; its bin/blasst-bench is used). Env: CHECKS=0 (no
# reference checks), SANITIZER=0 (no racecheck/memcheck), BENCH=0 (no
# benchmark): each part alone should fit a 10-minute device command; HDS="64"
# / HDS="128" / HDS="256" runs a third of the check matrix.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
K="${1:-$ROOT/.device/decode}"; OUT="${2:-${OUT:-/tmp/decode-out}}"; mkdir -p "$OUT"
B="$K/bin/blasst-bench"; fails=0; runs=0
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIPPED: no GPU (nvidia-smi)"; exit 0
fi
run() { local name="$1"; shift; runs=$((runs + 1))
  "$B" "$@" --json "$OUT/$name.json" >"$OUT/$name.log" 2>&1; local rc=$?
  if [[ $rc -ne 0 ]]; then
    echo "!! $name exited $rc"; grep -E "FAIL|error|launch:" "$OUT/$name.log" | head -n 8
    fails=$((fails + 1))
  fi; }
if [[ ${CHECKS:-1} == 1 ]]; then
  echo "=== decode vs the CPU reference (every element) ==="
  for hd in ${HDS:-64 128 256}; do
    for heads in "16 16" "32 8" "16 4" "8 1" "32 1"; do
      read -r qh kvh <<<"$heads"
      ks=()
      for causal in false true; do ks+=(--kernel "$K/dec_hd${hd}_q${qh}kv${kvh}_c${causal}"); done
      for sq in 1 2 4 8; do
        for shape in "1 1000" "8 517" "8 3001"; do
          read -r batch skv <<<"$shape"
          run "chk_hd${hd}_q${qh}kv${kvh}_sq${sq}_b${batch}_kv${skv}" "${ks[@]}" \
            --batch "$batch" --seq-q "$sq" --seq-kv "$skv" \
            --seed $((RANDOM + 1)) --warmup 0 --iters 1 --repeat-launches 3
        done
      done
    done
  done
  echo "matrix: $runs runs, $fails failed"
  # Split boundaries: forced split counts (1: no workspace; 3, 7: boundaries
  # inside the sequence, short last splits; 16 at 129 keys: capped at the
  # 2 blocks) against the same reference.
  for k in dec_hd128_q32kv8 dec_hd64_q32kv1 dec_hd128_q16kv16; do
    ks=(--kernel "$K/${k}_cfalse" --kernel "$K/${k}_ctrue")
    for sq in 1 8; do
      for shape in "1 129" "8 3001" "1 5" "2 40000"; do
        read -r batch skv <<<"$shape"
        for splits in 1 3 7 16; do
          run "split_${k}_sq${sq}_b${batch}_kv${skv}_s$splits" "${ks[@]}" \
            --batch "$batch" --seq-q "$sq" --seq-kv "$skv" --kv-splits "$splits" \
            --seed $((RANDOM + 1)) --warmup 0 --iters 1 --repeat-launches 2
        done
      done
    done
  done
  run chk_f16 --kernel "$K/dec_f16_hd128_q32kv8_ctrue" --batch 8 --seq-q 4 --seq-kv 2000 \
    --warmup 0 --iters 1 --repeat-launches 3
  # seq_q > seq_kv with the causal mask: rows that see no key give O = 0,
  # LSE = -inf (also across splits).
  run chk_nokey --kernel "$K/dec_hd128_q32kv8_ctrue" --batch 2 --seq-q 8 --seq-kv 3 \
    --warmup 0 --iters 1
  run chk_1000launch --kernel "$K/dec_hd128_q32kv8_ctrue" --batch 8 --seq-q 4 \
    --seq-kv 4099 --warmup 0 --iters 1 --repeat-launches 1000
  echo "checks: $runs runs, $fails failed"
fi
if [[ ${SANITIZER:-1} == 1 ]] && command -v compute-sanitizer >/dev/null; then
  echo "=== compute-sanitizer racecheck and memcheck, 3 KV splits ==="
  for _ in once; do
    for tool in racecheck memcheck; do
      compute-sanitizer --tool "$tool" --error-exitcode 9 "$B" \
        --kernel "$K/dec_hd128_q32kv8_ctrue" --batch 2 --seq-q 8 --seq-kv 1500 \
        --kv-splits 3 --warmup 0 --iters 1 >"$OUT/sanitizer_$tool.log" 2>&1
      rc=$?; echo "$tool exit $rc: $(grep -E 'SUMMARY' "$OUT/sanitizer_$tool.log")"
      [[ $rc -eq 0 ]] || fails=$((fails + 1))
    done
  done
fi
if [[ ${BENCH:-1} == 1 ]]; then
  echo "=== benchmark: bf16 hd128 32/8 heads, seq_q 1: K+V bandwidth ==="
  for shape in "8 32768" "8 131072" "1 131072"; do
    read -r batch skv <<<"$shape"
    for k in bench_dec_hd128_q32kv8 bench_dec_hd128_q32kv8_causal; do
      name="bench_${k}_b${batch}_kv${skv}"
      run "$name" --kernel "$K/$k" --batch "$batch" --seq-q 1 --seq-kv "$skv" \
        --check rows:1 --warmup 20 --iters 200
      grep -E "launch:|time:|bandwidth:" "$OUT/$name.log" | sed "s/^/$name /"
    done
  done
fi
echo "decode: $runs runs, $fails failed (logs in $OUT)"
[[ $fails -eq 0 ]]
