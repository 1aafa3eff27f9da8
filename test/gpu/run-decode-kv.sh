#!/usr/bin/env bash
# Decode KV caches on the H200 (issue 20 part 2): every element of O and LSE
# checked against the CPU reference of each sequence's own length (fresh
# random inputs, outputs poisoned) over seq_q 1/2/4/8 x MHA/GQA/MQA x
# head_dim 64/128 x causal, per-sequence lengths that are not multiples of
# the block or the page, mixed in one batch with 1 and 0 (O = 0, LSE =
# -inf), contiguous and paged (pages 16/64/256, a shuffled block table whose
# unused entries name other sequences' pages), forced split counts;
# repeated launches bit-identical; compute-sanitizer; then the benchmark:
# bf16, head_dim 128, 32 q / 8 kv heads, seq_q 1, batch 8 at 32K and 128K
# and batch 1 at 128K: dense contiguous vs per-sequence contiguous vs paged
# (64-token pages), K+V bandwidth (bytes of K+V read / median time).
# Usage: run-decode-kv.sh [KDIR] [OUT]   (KDIR default .device/decode-kv,
# from build-decode-kv-kernels.sh; its bin/blasst-bench is used). Env:
# CHECKS=0, PAGED=0, SANITIZER=0, BENCH=0 skip a part (each part alone fits
# a 10-minute device command); HDS="64" / HDS="128" halves the contiguous
# matrix.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
K="${1:-$ROOT/.device/decode-kv}"; OUT="${2:-${OUT:-/tmp/decode-kv-out}}"; mkdir -p "$OUT"
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
CHK=(--warmup 0 --iters 1)
# Length sets: batch 1; 4 mixed with 0 and 1; 6 mixed off every block/page
# boundary; 8 random in [0, 3001] (the first at 3001).
LENSETS=("1:1000" "4:1,0,4097,517" "6:63,257,2049,1,0,3001" "8:random:3001")
lens_args() { # "batch:list" | "batch:random:bound"
  local batch="${1%%:*}" rest="${1#*:}"
  if [[ $rest == random:* ]]; then
    echo "--batch $batch --kv-lengths random --seq-kv ${rest#random:}"
  else echo "--batch $batch --kv-lengths $rest"; fi; }
if [[ ${CHECKS:-1} == 1 ]]; then
  echo "=== per-sequence lengths, contiguous cache, vs the CPU reference ==="
  for hd in ${HDS:-64 128}; do
    for heads in "16 16" "32 8" "8 1" "32 1"; do
      read -r qh kvh <<<"$heads"
      ks=(--kernel "$K/kv_ps_hd${hd}_q${qh}kv${kvh}_cfalse" --kernel "$K/kv_ps_hd${hd}_q${qh}kv${kvh}_ctrue")
      for sq in 1 2 4 8; do
        for i in "${!LENSETS[@]}"; do
          # shellcheck disable=SC2046
          run "ps_hd${hd}_q${qh}kv${kvh}_sq${sq}_l$i" "${ks[@]}" $(lens_args "${LENSETS[$i]}") \
            --seq-q "$sq" --seed $((RANDOM + 1)) "${CHK[@]}" --repeat-launches 2
        done
      done
    done
  done
  # Split boundaries with per-sequence lengths (each sequence split by its
  # own block count; empty splits of short sequences).
  for splits in 1 3 7 16; do
    run "ps_split$splits" --kernel "$K/kv_ps_hd128_q32kv8_cfalse" --kernel "$K/kv_ps_hd128_q32kv8_ctrue" \
      --batch 4 --kv-lengths 1,0,4097,517 --seq-q 4 --kv-splits "$splits" "${CHK[@]}" --repeat-launches 2
  done
  echo "contiguous: $runs runs, $fails failed"
fi
if [[ ${PAGED:-1} == 1 ]]; then
  echo "=== paged caches (pages 16/64/256), vs the CPU reference ==="
  for page in 16 64 256; do
    for k in hd128_q32kv8 hd128_q8kv1 hd64_q32kv1 hd64_q16kv16; do
      ks=()
      for f in "$K"/kv_pg${page}_${k}_c*.cubin; do ks+=(--kernel "${f%.cubin}"); done
      for sq in 1 2 4 8; do
        for i in "${!LENSETS[@]}"; do
          # shellcheck disable=SC2046
          run "pg${page}_${k}_sq${sq}_l$i" "${ks[@]}" $(lens_args "${LENSETS[$i]}") \
            --seq-q "$sq" --seed $((RANDOM + 1)) "${CHK[@]}" --repeat-launches 2
        done
      done
    done
    for splits in 1 3 16; do
      run "pg${page}_split$splits" --kernel "$K/kv_pg${page}_hd128_q32kv8_ctrue" \
        --batch 4 --kv-lengths 1,0,4097,517 --seq-q 8 --kv-splits "$splits" "${CHK[@]}"
    done
  done
  # One length for the batch over a paged cache; 1000 launches bit-identical.
  run pg64u --kernel "$K/kv_pg64u_hd128_q32kv8_ctrue" --batch 3 --seq-q 2 --seq-kv 1001 "${CHK[@]}"
  run pg16_1000launch --kernel "$K/kv_pg16_hd128_q32kv8_ctrue" --batch 8 --kv-lengths random \
    --seq-kv 4099 --seq-q 4 "${CHK[@]}" --repeat-launches 1000
  echo "paged: $runs runs, $fails failed"
fi
if [[ ${SANITIZER:-1} == 1 ]] && command -v compute-sanitizer >/dev/null; then
  echo "=== compute-sanitizer racecheck and memcheck, 3 KV splits ==="
  for k in kv_pg16_hd128_q32kv8_ctrue kv_pg256_hd64_q32kv1_ctrue kv_ps_hd128_q32kv8_ctrue; do
    for tool in racecheck memcheck; do
      compute-sanitizer --tool "$tool" --error-exitcode 9 "$B" --kernel "$K/$k" \
        --batch 4 --kv-lengths 1,0,1500,517 --seq-q 8 --kv-splits 3 "${CHK[@]}" \
        >"$OUT/sanitizer_${k}_$tool.log" 2>&1
      rc=$?; echo "$k $tool exit $rc: $(grep -E 'SUMMARY' "$OUT/sanitizer_${k}_$tool.log")"
      [[ $rc -eq 0 ]] || fails=$((fails + 1))
    done
  done
fi
if [[ ${BENCH:-1} == 1 ]]; then
  echo "=== benchmark: bf16 hd128 32/8 heads, seq_q 1: K+V bandwidth ==="
  for shape in "8 32768" "8 131072" "1 131072"; do
    read -r batch skv <<<"$shape"
    for k in bench_kv_dense bench_kv_perseq bench_kv_paged64; do
      name="bench_${k}_b${batch}_kv${skv}"
      run "$name" --kernel "$K/$k" --batch "$batch" --seq-q 1 --seq-kv "$skv" \
        --check rows:1 --warmup 20 --iters 200
      grep -E "launch:|time:|bandwidth:" "$OUT/$name.log" | sed "s/^/$name /"
    done
  done
fi
echo "decode-kv: $runs runs, $fails failed (logs in $OUT)"
[[ $fails -eq 0 ]]
