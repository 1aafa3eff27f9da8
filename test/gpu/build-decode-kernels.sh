#!/usr/bin/env bash
# Kernels for the decode runs (phase = decode, sm_90a): the check matrix
# (MHA 16/16, GQA 32/8 and 16/4, MQA 8/1 and 32/1 x head_dim 64/128/256 x causal,
# LSE on) and the benchmark kernel (bf16, head_dim 128, 32 q / 8 kv heads).
# seq_q (1-8) and the KV split count are launch values: one kernel per spec.
# With BLASST=1 (default) also the BLASST decode kernels (bdec_*,
# bench_bdec_*) for run-decode-blasst.sh.
# With LEAN=1 (default) also the lean decode kernels (lean_*, bench_lean_*)
# and paged kernels of one length for the lean entry's checks (pg*_).
# With GQA=1 (default) also the head ratios that are not a power of two
# (dec_gqa_*, bdec_gqa_*, kvgqa_*: 9/3, 28/4, 12/2, 40/8 x head_dim 64/128 x
# causal, 12/1 and 24/1 at 128 (several tiles per kv head), paged and
# per-sequence 28/4) for run-decode.sh / run-decode-blasst.sh with
# ONLY=gqa; ONLY=gqa here builds just those (about a minute).
# Usage: test/gpu/build-decode-kernels.sh [BUILD] [OUT]   (OUT default:
# .device/decode, with a copy of blasst-bench in OUT/bin for the device)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${1:-$ROOT/build}"; OUT="${2:-$ROOT/.device/decode}"
C="$BUILD/bin/blasst-compile"; mkdir -p "$OUT/bin"
mk() { # name spec...
  local name="$1"; shift
  printf 'name=%s %s\n' "$name" "$*" >"$OUT/$name.in.spec"
  "$C" --spec "$OUT/$name.in.spec" --emit cubin -o "$OUT/$name" -v \
    ${BLASST_COMPILE_FLAGS:-} >"$OUT/$name.ptxas.log" 2>&1
  grep -q "0 bytes spill stores, 0 bytes spill loads" "$OUT/$name.ptxas.log" &&
    ! grep -qE "[1-9][0-9]* bytes spill (stores|loads)" "$OUT/$name.ptxas.log" ||
    { echo "spills or no ptxas report: $OUT/$name.ptxas.log"; exit 1; }
}
if [[ ${ONLY:-} != gqa ]]; then
for hd in 64 128 256; do
  for heads in "16 16" "32 8" "16 4" "8 1" "32 1"; do
    read -r qh kvh <<<"$heads"
    for causal in false true; do
      mk "dec_hd${hd}_q${qh}kv${kvh}_c${causal}" \
        "dtype=bf16 head_dim=$hd q_heads=$qh kv_heads=$kvh causal=$causal lse=true phase=decode"
    done
  done
done
mk dec_f16_hd128_q32kv8_ctrue "dtype=f16 head_dim=128 q_heads=32 kv_heads=8 causal=true lse=true phase=decode"
mk bench_dec_hd128_q32kv8 "dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 causal=false phase=decode"
mk bench_dec_hd128_q32kv8_causal "dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 causal=true phase=decode"
# BLASST decode (run-decode-blasst.sh): the check matrix (MHA/GQA/MQA x
# head_dim 64/128 x causal, statistics and LSE on; the threshold is a launch
# value) and the benchmark pair's sparse half (same spec as bench_dec_*).
if [[ ${BLASST:-1} == 1 ]]; then
  # HD256_FLAGS: blasst-compile flags for the head_dim 256 BLASST kernels
  # (the check matrix and bench_bdec_hd256_*), e.g. a schedule to check
  # before it becomes the default ("--v-on-demand --block-n=32 --stages=5",
  # docs/results/2026-12-02-session19.md §6).
  flags_for() { if [[ $1 == 256 ]]; then echo "${HD256_FLAGS:-${BLASST_COMPILE_FLAGS:-}}"; else echo "${BLASST_COMPILE_FLAGS:-}"; fi; }
  for hd in 64 128 256; do
    for heads in "16 16" "32 8" "8 1" "32 1"; do
      read -r qh kvh <<<"$heads"
      for causal in false true; do
        BLASST_COMPILE_FLAGS="$(flags_for "$hd")" mk "bdec_hd${hd}_q${qh}kv${kvh}_c${causal}" \
          "dtype=bf16 head_dim=$hd q_heads=$qh kv_heads=$kvh causal=$causal lse=true phase=decode sparsity=blasst:ln_lambda=-8 stats=true"
      done
    done
  done
  mk bdec_a_hd128_q32kv8_ctrue "dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 causal=true lse=true phase=decode sparsity=blasst:a=64 stats=true"
  mk bench_bdec_hd128_q32kv8 "dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 causal=false phase=decode sparsity=blasst:ln_lambda=-8 stats=true"
  # The production kernel (no skip counters), timed beside the counted one
  # (run-decode-blasst.sh BENCH_EXTRA).
  mk bench_bdec_nostats_hd128_q32kv8 "dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 causal=false phase=decode sparsity=blasst:ln_lambda=-8"
  mk bench_bdec_hd128_q32kv8_causal "dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 causal=true phase=decode sparsity=blasst:ln_lambda=-8 stats=true"
  # head_dim 256 benchmark pair (run-decode-blasst.sh BENCH_HD=256), and
  # dense tiles to time against its default (BENCH_EXTRA; session 19 §6:
  # BLASST with 32-key blocks in 5 stages ran 4.7% faster than the dense
  # default with nothing skippable).
  mk bench_dec_hd256_q32kv8 "dtype=bf16 head_dim=256 q_heads=32 kv_heads=8 causal=false phase=decode"
  for t in "32 5" "32 6" "64 3"; do
    read -r bn st <<<"$t"
    BLASST_COMPILE_FLAGS="--block-n=$bn --stages=$st" mk "bench_dec_hd256_q32kv8_n${bn}s${st}" \
      "dtype=bf16 head_dim=256 q_heads=32 kv_heads=8 causal=false phase=decode"
  done
  BLASST_COMPILE_FLAGS="$(flags_for 256)" mk bench_bdec_hd256_q32kv8 \
    "dtype=bf16 head_dim=256 q_heads=32 kv_heads=8 causal=false phase=decode sparsity=blasst:ln_lambda=-8 stats=true"
  # The same BLASST kernel without the sink seed (each split from -inf).
  BLASST_COMPILE_FLAGS="--sink-seed=false" mk bench_bdec_noseed_hd128_q32kv8 \
    "dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 causal=false phase=decode sparsity=blasst:ln_lambda=-8 stats=true"
  # ... and with the seed but each split's first block kept unvoted (the
  # default votes on it: vote_first_block), checked and timed against it.
  BLASST_COMPILE_FLAGS="--vote-first-block=false" mk bench_bdec_nofirst_hd128_q32kv8 \
    "dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 causal=false phase=decode sparsity=blasst:ln_lambda=-8 stats=true"
  for causal in false true; do
    BLASST_COMPILE_FLAGS="--vote-first-block=false" mk "bdec_nofirst_hd128_q32kv8_c${causal}" \
      "dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 causal=$causal lse=true phase=decode sparsity=blasst:ln_lambda=-8 stats=true"
  done
fi
# Lean decode (--lean: persistent CTAs, one per SM, sharing all tiles' KV
# blocks across tile boundaries; dense, contiguous KV, head_dim 128 and 256): the
# checks of run-decode.sh LEAN=1 (MHA / GQA / MQA x causal, LSE) and the
# benchmark kernel.
if [[ ${LEAN:-1} == 1 ]]; then
  # head_dim 128, and 256 (opt-in there: 32-key blocks in 5 stages; no MHA).
  for hd in 128 256; do
    for heads in "16 16" "32 8" "32 1"; do
      read -r qh kvh <<<"$heads"
      [[ $hd == 256 && $qh == 16 ]] && continue
      for causal in false true; do
        BLASST_COMPILE_FLAGS=--lean mk "lean_hd${hd}_q${qh}kv${kvh}_c${causal}" \
          "dtype=bf16 head_dim=$hd q_heads=$qh kv_heads=$kvh causal=$causal lse=true phase=decode"
      done
    done
    BLASST_COMPILE_FLAGS=--lean mk "bench_lean_hd${hd}_q32kv8" \
      "dtype=bf16 head_dim=$hd q_heads=32 kv_heads=8 causal=false phase=decode"
  done
  # The lean entry over paged caches of one length (run-decode.sh
  # LEANENTRY=1; the hd64 entry is in dec_hd64_* above).
  for pg in 16 64 256; do
    for heads in "16 16" "32 8" "32 1"; do
      read -r qh kvh <<<"$heads"
      for causal in false true; do
        mk "pg${pg}_hd128_q${qh}kv${kvh}_c${causal}" \
          "dtype=bf16 head_dim=128 q_heads=$qh kv_heads=$kvh causal=$causal lse=true phase=decode kv_cache=paged:page=$pg"
      done
    done
    for causal in false true; do
      mk "pg${pg}_hd64_q32kv8_c${causal}" \
        "dtype=bf16 head_dim=64 q_heads=32 kv_heads=8 causal=$causal lse=true phase=decode kv_cache=paged:page=$pg"
    done
  done
fi
fi # ONLY != gqa
# Head ratios that are not a power of two: G = 3, 7, 6, 5 (floor(64 / G)
# tokens per tile, the last 64 mod G rows padding), and G = 12, 24 where
# seq_q 8 takes 2 and 4 tiles per kv head.
if [[ ${GQA:-1} == 1 || ${ONLY:-} == gqa ]]; then
  G="dtype=bf16 lse=true phase=decode"
  S="sparsity=blasst:ln_lambda=-8 stats=true"
  gqa_heads() { # hd -> the head pairs at that head_dim
    echo "9_3 28_4 12_2 40_8"; [[ $1 == 128 ]] && echo "12_1 24_1"; return 0; }
  for hd in 64 128; do
    for h in $(gqa_heads "$hd"); do
      qh=${h%_*} kvh=${h#*_}
      for causal in false true; do
        mk "dec_gqa_hd${hd}_q${qh}kv${kvh}_c${causal}" \
          "$G head_dim=$hd q_heads=$qh kv_heads=$kvh causal=$causal"
        if [[ ${BLASST:-1} == 1 ]]; then
          mk "bdec_gqa_hd${hd}_q${qh}kv${kvh}_c${causal}" \
            "$G head_dim=$hd q_heads=$qh kv_heads=$kvh causal=$causal $S"
        fi
      done
    done
  done
  # The KV caches: per-sequence lengths, contiguous and 16-token pages.
  for kv in "ps:kv_lengths=per_sequence" \
            "pg16:kv_lengths=per_sequence kv_cache=paged:page=16"; do
    mk "kvgqa_${kv%%:*}_hd128_q28kv4_ctrue" \
      "$G head_dim=128 q_heads=28 kv_heads=4 causal=true ${kv#*:}"
    if [[ ${BLASST:-1} == 1 ]]; then
      mk "bkvgqa_${kv%%:*}_hd128_q28kv4_ctrue" \
        "$G head_dim=128 q_heads=28 kv_heads=4 causal=true ${kv#*:} $S"
    fi
  done
fi
cp "$BUILD/bin/blasst-bench" "$OUT/bin/"
ls "$OUT"/*.cubin | wc -l
