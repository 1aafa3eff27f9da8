#!/usr/bin/env bash
# Kernels for the decode KV cache runs (issue 20 part 2, sm_90a): per-sequence
# KV lengths on a contiguous cache (MHA 16/16, GQA 32/8, MQA 8/1 and 32/1 x
# head_dim 64/128 x causal, LSE on), paged caches of 16-, 64- and 256-token
# pages (block_n 64 at head_dim 128 and 128 at 64: several pages per block,
# one, and blocks inside a page), a paged cache with one length for the
# batch, and the benchmark kernels (bf16, head_dim 128, 32 q / 8 kv heads:
# dense contiguous, per-sequence contiguous, paged with 64-token pages).
# With BLASST=1 (default) also the BLASST decode kernels with the KV caches
# (bkv_*, run-decode-kv.sh's BLASST part: statistics on, ln_lambda = -8
# and one a=64 kernel, whose T follows each sequence's length; per-sequence
# BLASST kernels take splits that follow the lengths by default); DENSE=0
# leaves out the dense ones (a BLASST-only run); BALANCED=1 builds every
# per-sequence kernel with --balanced-splits (dense ones too, then without
# the lean entry) and adds the BLASST benchmark pair (bench_bkv_*,
# run-decode-kv.sh BALBENCH=1: the default against --balanced-splits=false).
# Usage: test/gpu/build-decode-kv-kernels.sh [BUILD] [OUT]   (OUT default:
# .device/decode-kv, with a copy of blasst-bench in OUT/bin for the device)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${1:-$ROOT/build}"; OUT="${2:-$ROOT/.device/decode-kv}"
C="$BUILD/bin/blasst-compile"; mkdir -p "$OUT/bin"
mk() { # name spec...
  local name="$1"; shift
  local flags="${BLASST_COMPILE_FLAGS:-}"
  if [[ ${BALANCED:-0} == 1 && "$*" == *kv_lengths=per_sequence* && \
        "$flags" != *lean-entry=false* ]]; then
    flags="$flags --balanced-splits"
  fi
  printf 'name=%s %s\n' "$name" "$*" >"$OUT/$name.in.spec"
  # shellcheck disable=SC2086
  "$C" --spec "$OUT/$name.in.spec" --emit cubin -o "$OUT/$name" -v \
    $flags >"$OUT/$name.ptxas.log" 2>&1
  grep -q "0 bytes spill stores, 0 bytes spill loads" "$OUT/$name.ptxas.log" &&
    ! grep -qE "[1-9][0-9]* bytes spill (stores|loads)" "$OUT/$name.ptxas.log" ||
    { echo "spills or no ptxas report: $OUT/$name.ptxas.log"; exit 1; }
}
D="dtype=bf16 lse=true phase=decode"
if [[ ${DENSE:-1} == 1 ]]; then
for hd in 64 128; do
  for heads in "16 16" "32 8" "8 1" "32 1"; do
    read -r qh kvh <<<"$heads"
    for causal in false true; do
      mk "kv_ps_hd${hd}_q${qh}kv${kvh}_c${causal}" \
        "$D head_dim=$hd q_heads=$qh kv_heads=$kvh causal=$causal kv_lengths=per_sequence"
    done
  done
done
for page in 16 64 256; do
  P="kv_lengths=per_sequence kv_cache=paged:page=$page"
  mk "kv_pg${page}_hd128_q32kv8_cfalse" "$D head_dim=128 q_heads=32 kv_heads=8 causal=false $P"
  mk "kv_pg${page}_hd128_q32kv8_ctrue" "$D head_dim=128 q_heads=32 kv_heads=8 causal=true $P"
  mk "kv_pg${page}_hd128_q8kv1_ctrue" "$D head_dim=128 q_heads=8 kv_heads=1 causal=true $P"
  mk "kv_pg${page}_hd64_q32kv1_ctrue" "$D head_dim=64 q_heads=32 kv_heads=1 causal=true $P"
  mk "kv_pg${page}_hd64_q16kv16_cfalse" "$D head_dim=64 q_heads=16 kv_heads=16 causal=false $P"
done
mk kv_pg64u_hd128_q32kv8_ctrue "$D head_dim=128 q_heads=32 kv_heads=8 causal=true kv_cache=paged:page=64"
B="dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 causal=false phase=decode"
mk bench_kv_dense "$B"
mk bench_kv_perseq "$B kv_lengths=per_sequence"
mk bench_kv_paged64 "$B kv_lengths=per_sequence kv_cache=paged:page=64"
# The same without the lean entry (the split grid, sized by the longest).
BLASST_COMPILE_FLAGS="${BLASST_COMPILE_FLAGS:-} --lean-entry=false" \
  mk bench_kv_perseq_split "$B kv_lengths=per_sequence"
BLASST_COMPILE_FLAGS="${BLASST_COMPILE_FLAGS:-} --lean-entry=false" \
  mk bench_kv_paged64_split "$B kv_lengths=per_sequence kv_cache=paged:page=64"
fi
# BLASST decode with the KV caches: per-sequence lengths on a contiguous
# cache (MHA 16/16, GQA 32/8, MQA 32/1 x head_dim 64/128 x causal) and
# paged caches of 16/64/256-token pages (the on-demand V copies through the
# block table: several pages per block, one, blocks inside a page).
if [[ ${BLASST:-1} == 1 ]]; then
  S="$D sparsity=blasst:ln_lambda=-8 stats=true"
  for hd in 64 128; do
    for heads in "16 16" "32 8" "32 1"; do
      read -r qh kvh <<<"$heads"
      for causal in false true; do
        mk "bkv_ps_hd${hd}_q${qh}kv${kvh}_c${causal}" \
          "$S head_dim=$hd q_heads=$qh kv_heads=$kvh causal=$causal kv_lengths=per_sequence"
      done
    done
  done
  for page in 16 64 256; do
    P="kv_lengths=per_sequence kv_cache=paged:page=$page"
    mk "bkv_pg${page}_hd128_q32kv8_cfalse" "$S head_dim=128 q_heads=32 kv_heads=8 causal=false $P"
    mk "bkv_pg${page}_hd128_q32kv8_ctrue" "$S head_dim=128 q_heads=32 kv_heads=8 causal=true $P"
    mk "bkv_pg${page}_hd128_q8kv1_ctrue" "$S head_dim=128 q_heads=8 kv_heads=1 causal=true $P"
    mk "bkv_pg${page}_hd64_q32kv1_ctrue" "$S head_dim=64 q_heads=32 kv_heads=1 causal=true $P"
    mk "bkv_pg${page}_hd64_q16kv16_cfalse" "$S head_dim=64 q_heads=16 kv_heads=16 causal=false $P"
  done
  mk bkv_pg64u_hd128_q32kv8_ctrue "$S head_dim=128 q_heads=32 kv_heads=8 causal=true kv_cache=paged:page=64"
  mk bkv_a_pg64_hd128_q32kv8_ctrue \
    "$D sparsity=blasst:a=64 stats=true head_dim=128 q_heads=32 kv_heads=8 causal=true kv_lengths=per_sequence kv_cache=paged:page=64"
  if [[ ${BALANCED:-0} == 1 ]]; then
    # The benchmark pair: BLASST decode over per-sequence lengths with the
    # splits that follow the lengths, and the split grid sized by the
    # longest (no statistics, as served).
    BB="dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 causal=false phase=decode kv_lengths=per_sequence sparsity=blasst:ln_lambda=-8"
    mk bench_bkv_perseq_bal "$BB"
    BALANCED=0 BLASST_COMPILE_FLAGS="${BLASST_COMPILE_FLAGS:-} --balanced-splits=false" \
      mk bench_bkv_perseq_split "$BB"
  fi
fi
cp "$BUILD/bin/blasst-bench" "$OUT/bin/"
ls "$OUT"/*.cubin | wc -l
