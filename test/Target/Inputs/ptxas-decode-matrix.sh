#!/usr/bin/env bash
# Compiles the decode (phase = decode) matrix to sm_90a cubins with ptxas and
# fails on any ptxas error, register spill or serialised wgmma. seq_q (1 to
# 8 new tokens) is a launch argument, not compiled in: one kernel per spec
# serves seq_q 1/2/4/8. MHA (16/16), GQA (32/8, 16/4), MQA (8/1, 32/1) x
# head_dim 64/128 x causal x bf16/f16, LSE on every other kernel; head_dim
# 256 (GQA 32/8, MQA 8/1, causal, bf16/f16). Then the
# KV caches (bf16): per-sequence lengths (GQA 32/8, MQA 32/1 x head_dim
# 64/128 x causal) and paged caches of 16/64/256-token pages (x head_dim
# 64/128 x {GQA 32/8 causal, MHA 16/16}), lengths per sequence. Then head
# ratios that are not a power of two (9/3, 40/8, 12/2, 28/4; one paged).
# Usage: ptxas-decode-matrix.sh BLASST_COMPILE OUTDIR [extra flags...]
set -euo pipefail
compile="$1"; out="$2"; shift 2; extra=("$@"); mkdir -p "$out"
n=0
build() { # name spec [flags of this kernel...]
  local name="$1" spec="$2"; shift 2
  printf 'name=%s %s\n' "$name" "$spec" >"$out/$name.in.spec"
  log=$("$compile" --spec "$out/$name.in.spec" --target sm_90a --emit cubin \
        -o "$out/$name" -v "${extra[@]}" "$@" 2>&1) || { echo "FAIL $name"; echo "$log"; exit 1; }
  # Every entry of the module (the kernel, its merge kernel, its lean
  # entry) reports its own spills: none may spill.
  if ! grep -q "0 bytes spill stores, 0 bytes spill loads" <<<"$log" ||
     grep -qE "[1-9][0-9]* bytes spill (stores|loads)" <<<"$log"; then
    echo "SPILL $name"; echo "$log"; exit 1
  fi
  if grep -q "Potential Performance Loss" <<<"$log"; then
    echo "SERIALIZED $name"; echo "$log"; exit 1
  fi
  n=$((n + 1))
}
for dtype in bf16 f16; do
  for hd in 64 128; do
    for heads in "16 16" "32 8" "16 4" "8 1" "32 1"; do
      for causal in false true; do
        read -r qh kvh <<<"$heads"
        lse=$([[ $(( n % 2 )) -eq 0 ]] && echo true || echo false)
        build "decode_${dtype}_hd${hd}_q${qh}kv${kvh}_causal${causal}_lse${lse}" \
          "dtype=$dtype head_dim=$hd q_heads=$qh kv_heads=$kvh causal=$causal lse=$lse phase=decode"
      done
    done
  done
done
# The KV caches (KV=0 leaves them out).
for hd in 64 128; do
  [[ ${KV:-1} == 1 ]] || break
  for heads in "32 8" "32 1"; do
    read -r qh kvh <<<"$heads"
    for causal in false true; do
      build "decode_kv_perseq_hd${hd}_q${qh}kv${kvh}_causal${causal}" \
        "dtype=bf16 head_dim=$hd q_heads=$qh kv_heads=$kvh causal=$causal lse=true phase=decode kv_lengths=per_sequence"
    done
  done
  for page in 16 64 256; do
    build "decode_kv_paged${page}_hd${hd}_q32kv8_causal" \
      "dtype=bf16 head_dim=$hd q_heads=32 kv_heads=8 causal=true lse=true phase=decode kv_lengths=per_sequence kv_cache=paged:page=$page"
    build "decode_kv_paged${page}_hd${hd}_q16kv16" \
      "dtype=bf16 head_dim=$hd q_heads=16 kv_heads=16 causal=false phase=decode kv_lengths=per_sequence kv_cache=paged:page=$page"
  done
done
# head_dim 256 (2 stages of 64-key K and V tiles, 160 KB): GQA 32/8 and
# MQA 8/1, causal, bf16 and f16.
for dtype in bf16 f16; do
  for heads in "32 8" "8 1"; do
    read -r qh kvh <<<"$heads"
    build "decode_${dtype}_hd256_q${qh}kv${kvh}_causal" \
      "dtype=$dtype head_dim=256 q_heads=$qh kv_heads=$kvh causal=true lse=true phase=decode"
  done
done
# Head ratios that are not a power of two (G = 3, 5, 6, 7: floor(64 / G)
# tokens per tile, padding rows): x head_dim 64/128 x causal, bf16; head_dim
# 256 (G = 3) and a paged cache (G = 7, 16-token pages).
for hd in 64 128; do
  for heads in "9 3" "40 8" "12 2" "28 4"; do
    read -r qh kvh <<<"$heads"
    for causal in false true; do
      build "decode_gqa_hd${hd}_q${qh}kv${kvh}_causal${causal}" \
        "dtype=bf16 head_dim=$hd q_heads=$qh kv_heads=$kvh causal=$causal lse=true phase=decode"
    done
  done
done
build "decode_gqa_hd256_q9kv3_causal" \
  "dtype=bf16 head_dim=256 q_heads=9 kv_heads=3 causal=true lse=true phase=decode"
if [[ ${KV:-1} == 1 ]]; then
  build "decode_gqa_kv_paged16_hd128_q28kv4_causal" \
    "dtype=bf16 head_dim=128 q_heads=28 kv_heads=4 causal=true lse=true phase=decode kv_lengths=per_sequence kv_cache=paged:page=16"
fi
# The lean entries (dense only: `<kernel>_lean` beside the kernel) where
# they need the most registers: one KV head at head_dim 64 without LSE (240
# registers spilled 112-136 B there), causal paged caches of one length
# (4 B at pages of 256), and 32/8 beside them.
if [[ " ${extra[*]-} " != *" --sparsity"* ]]; then
  for hd in 64 128; do
    for heads in "32 1" "16 1" "32 8"; do
      read -r qh kvh <<<"$heads"
      for causal in false true; do
        build "decode_lean_hd${hd}_q${qh}kv${kvh}_causal${causal}" \
          "dtype=bf16 head_dim=$hd q_heads=$qh kv_heads=$kvh causal=$causal lse=false phase=decode"
      done
    done
    for page in 16 64 256; do
      build "decode_lean_paged${page}_hd${hd}_q32kv8_causal" \
        "dtype=bf16 head_dim=$hd q_heads=32 kv_heads=8 causal=true lse=false phase=decode kv_cache=paged:page=$page"
    done
  done
  # Lean CTAs at head_dim 256 (--lean, opt-in: 32-key blocks in 5 stages,
  # both warpgroups at 256 registers; 240 spilled 112 B causal with LSE):
  # GQA / MQA / G = 3, causal with LSE, per-sequence lengths, pages of 16, f16.
  for heads in "32 8" "32 1" "9 3"; do
    read -r qh kvh <<<"$heads"
    build "decode_leanonly_hd256_q${qh}kv${kvh}_causal" \
      "dtype=bf16 head_dim=256 q_heads=$qh kv_heads=$kvh causal=true lse=true phase=decode" --lean
  done
  build "decode_leanonly_hd256_q32kv8" \
    "dtype=bf16 head_dim=256 q_heads=32 kv_heads=8 causal=false lse=false phase=decode" --lean
  build "decode_leanonly_f16_hd256_q32kv8_causal" \
    "dtype=f16 head_dim=256 q_heads=32 kv_heads=8 causal=true lse=true phase=decode" --lean
  if [[ ${KV:-1} == 1 ]]; then
    build "decode_leanonly_perseq_hd256_q32kv8_causal" \
      "dtype=bf16 head_dim=256 q_heads=32 kv_heads=8 causal=true lse=true phase=decode kv_lengths=per_sequence" --lean
    build "decode_leanonly_paged16_hd256_q32kv1_causal" \
      "dtype=bf16 head_dim=256 q_heads=32 kv_heads=1 causal=true lse=true phase=decode kv_lengths=per_sequence kv_cache=paged:page=16" --lean
  fi
fi
echo "assembled $n sm_90a decode kernels, no spills"
