#!/usr/bin/env bash
# The PTX-hash safety net: compiles every sm_90a schedule variant the
# compiler builds (dense and BLASST, head_dim 64/128/256, causal or not,
# MHA/GQA/MQA, LSE and statistics, every schedule knob of the ptxas
# matrices) to PTX and prints one line per variant, "<sha256> <name>", sorted
# by name. A variant the compiler refuses prints "error <name>", so refusals
# are pinned as well. A restructuring keeps every line; a deliberate change
# regenerates the stored list in the same commit and says why:
#   bash test/Target/Inputs/ptx-hashes.sh build/bin/blasst-compile /tmp/h \
#     > test/Target/Inputs/ptx-hashes.txt
# Usage: ptx-hashes.sh BLASST_COMPILE OUTDIR
set -euo pipefail
compile="$1"; out="$2"; mkdir -p "$out"

# name|spec|flags
variants() {
  local knobs=(
    "default|"
    "plain|--overlap=false"
    "overlap-psmem|--overlap --p-in-registers=false"
    "plain-pregs|--overlap=false --p-in-registers"
    "pingpong|--pingpong"
    "persistent|--persistent --overlap=false"
    "persistent-overlap|--persistent"
    "qregs|--q-in-registers"
    "multicast|--kv-multicast"
    "bn64-st3|--block-n=64 --stages=3"
  )
  local sparse_knobs=(
    "vod-off|--v-on-demand=false"
    "spec0|--v-speculate-after=0"
    "spec1|--v-speculate-after=1"
  )
  for hd in 64 128 256; do
    for heads in "16 16" "16 4" "8 1"; do
      read -r qh kvh <<<"$heads"
      for causal in false true; do
        for sp in none a stats fixed; do
          case $sp in
          none) sparsity="sparsity=none stats=false" ;;
          a) sparsity="sparsity=blasst:a=256 stats=false" ;;
          stats) sparsity="sparsity=blasst:a=64 stats=true" ;;
          fixed) sparsity="sparsity=blasst:ln_lambda=-8 stats=false" ;;
          esac
          # MQA only with the default knobs; LSE on for every other variant.
          lse=$([[ $causal == true ]] && echo true || echo false)
          spec="dtype=bf16 head_dim=$hd q_heads=$qh kv_heads=$kvh causal=$causal lse=$lse $sparsity"
          base="bf16_hd${hd}_q${qh}kv${kvh}_c${causal}_${sp}"
          local list=("${knobs[@]}")
          [[ $kvh == 1 ]] && list=("default|")
          [[ $sp != none && $kvh != 1 ]] && list+=("${sparse_knobs[@]}")
          # Spread the sparse variants over fewer head layouts.
          [[ $sp == fixed && $qh$kvh != 164 ]] && list=("default|")
          for k in "${list[@]}"; do
            echo "${base}_${k%%|*}|$spec|${k#*|}"
          done
        done
      done
    done
  done
  # f16, the element type's own instructions.
  for hd in 64 128 256; do
    echo "f16_hd${hd}_q16kv4_ctrue_a_default|dtype=f16 head_dim=$hd q_heads=16 kv_heads=4 causal=true lse=true sparsity=blasst:a=256 stats=true|"
    echo "f16_hd${hd}_q16kv4_cfalse_none_default|dtype=f16 head_dim=$hd q_heads=16 kv_heads=4 causal=false lse=false|"
  done
  # Decode (phase = decode, issue 20): MHA/GQA/MQA x head_dim 64/128 x
  # causal (LSE with the causal ones), f16, the split count compiled in, and
  # head_dim 256 (refused).
  for hd in 64 128 256; do
    for heads in "16 16" "32 8" "8 1" "32 1"; do
      read -r qh kvh <<<"$heads"
      for causal in false true; do
        echo "decode_bf16_hd${hd}_q${qh}kv${kvh}_c${causal}|dtype=bf16 head_dim=$hd q_heads=$qh kv_heads=$kvh causal=$causal lse=$causal phase=decode|"
      done
    done
  done
  echo "decode_f16_hd128_q32kv8_ctrue|dtype=f16 head_dim=128 q_heads=32 kv_heads=8 causal=true lse=true phase=decode|"
  echo "decode_bf16_hd128_q32kv8_splits4|dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 phase=decode|--kv-splits=4"
  # Dense decode with TMA K/V copies (cp.async is the default, session 26).
  echo "decode_tma_hd128_q32kv8_ctrue|dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 causal=true lse=true phase=decode|--kv-cp-async=false"
  echo "decode_tma_hd64_q32kv1_cfalse|dtype=bf16 head_dim=64 q_heads=32 kv_heads=1 phase=decode|--kv-cp-async=false"
  # Persistent and lean decode (dense, head_dim 128; session 23).
  echo "decode_persistent_hd128_q32kv8|dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 phase=decode|--persistent"
  echo "decode_lean_hd128_q32kv8_ctrue|dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 causal=true lse=true phase=decode|--lean"
  # Without the lean entry (session 29): the one-CTA-per-split kernel alone,
  # byte-identical to the default before the entry (decode_bf16_hd128_q32kv8_ctrue
  # then).
  echo "decode_noleanentry_hd128_q32kv8_ctrue|dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 causal=true lse=true phase=decode|--lean-entry=false"
  # BLASST prefill with the short-sequence entry asked for (session 44; the
  # default since session 45) and without it.
  echo "blasst_shortentry_hd128_q32kv8_ctrue|dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 causal=true sparsity=blasst:a=256 stats=true|--short-entry=true"
  echo "blasst_shortentry_hd64_q16kv16_cfalse|dtype=bf16 head_dim=64 q_heads=16 kv_heads=16 causal=false sparsity=blasst:a=256 stats=true|--short-entry=true"
  echo "blasst_noshortentry_hd128_q32kv8_ctrue|dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 causal=true sparsity=blasst:a=256 stats=true|--short-entry=false"
  echo "blasst_noshortentry_hd64_q16kv16_cfalse|dtype=bf16 head_dim=64 q_heads=16 kv_heads=16 causal=false sparsity=blasst:a=256 stats=true|--short-entry=false"
  # Without the TMA entry (session 44): the module as before the entry (every
  # line of this net hashed the same with --tma-entry=false appended as
  # before it); with it the module adds <name>_tma, the kernel as built with
  # --kv-cp-async=false.
  echo "decode_notmaentry_hd128_q32kv8_ctrue|dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 causal=true lse=true phase=decode|--tma-entry=false"
  echo "decode_2ctas_hd128_q32kv8|dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 phase=decode|--ctas-per-sm=2 --consumer-regs=232"
  # The merge kernel (session 24): the attention kernel and <name>_merge.
  echo "decode_merge_hd128_q32kv8_ctrue|dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 causal=true lse=true phase=decode|--merge-kernel"
  echo "decode_merge_hd64_q32kv1_cfalse|dtype=bf16 head_dim=64 q_heads=32 kv_heads=1 phase=decode|--merge-kernel"
  echo "decode_merge_paged64_hd128_q32kv8|dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 phase=decode kv_lengths=per_sequence kv_cache=paged:page=64|--merge-kernel"
  echo "bdecode_merge_hd128_q32kv8|dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 phase=decode sparsity=blasst:a=256 stats=true|--merge-kernel"
  # Decode KV caches (issue 20 part 2): per-sequence lengths, paged caches
  # (several pages per block, one, blocks inside a page), one length paged.
  echo "decode_kv_perseq_hd128_q32kv8_ctrue|dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 causal=true lse=true phase=decode kv_lengths=per_sequence|"
  echo "decode_kv_paged16_hd128_q32kv8_cfalse|dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 phase=decode kv_lengths=per_sequence kv_cache=paged:page=16|"
  echo "decode_kv_paged64_hd128_q32kv8_ctrue|dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 causal=true lse=true phase=decode kv_lengths=per_sequence kv_cache=paged:page=64|"
  echo "decode_kv_paged256_hd128_q32kv8_cfalse|dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 phase=decode kv_lengths=per_sequence kv_cache=paged:page=256|"
  echo "decode_kv_paged256_hd64_q32kv1_ctrue|dtype=bf16 head_dim=64 q_heads=32 kv_heads=1 causal=true phase=decode kv_lengths=per_sequence kv_cache=paged:page=256|"
  echo "decode_kv_paged64u_hd128_q32kv8_cfalse|dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 phase=decode kv_cache=paged:page=64|"
  # BLASST decode: the vote over the packed rows, V on demand with K
  # streamed ahead, statistics per q head; waiting for every vote; k-ahead 1.
  for hd in 64 128; do
    for heads in "16 16" "32 8" "32 1"; do
      read -r qh kvh <<<"$heads"
      for causal in false true; do
        echo "bdecode_bf16_hd${hd}_q${qh}kv${kvh}_c${causal}|dtype=bf16 head_dim=$hd q_heads=$qh kv_heads=$kvh causal=$causal lse=$causal phase=decode sparsity=blasst:a=256 stats=$causal|"
      done
    done
  done
  # head_dim 256 (V always copied, 64-key blocks in 2 stages).
  for causal in false true; do
    echo "bdecode_bf16_hd256_q32kv8_c${causal}|dtype=bf16 head_dim=256 q_heads=32 kv_heads=8 causal=$causal lse=$causal phase=decode sparsity=blasst:a=256 stats=$causal|"
  done
  echo "bdecode_bf16_hd128_q32kv8_wait|dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 phase=decode sparsity=blasst:ln_lambda=-8|--v-speculate-after=0"
  echo "bdecode_bf16_hd128_q32kv8_novod|dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 phase=decode sparsity=blasst:ln_lambda=-8|--v-on-demand=false"
  # Splits that follow per-sequence lengths (session 33; the default of
  # BLASST decode over per-sequence lengths since session 35, with the
  # merge kernel): contiguous and paged, and the split grid they replaced.
  echo "bdecode_balanced_hd128_q32kv8_ctrue|dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 causal=true lse=true phase=decode kv_lengths=per_sequence sparsity=blasst:a=256 stats=true|--balanced-splits"
  echo "bdecode_balanced_paged64_hd64_q32kv1|dtype=bf16 head_dim=64 q_heads=32 kv_heads=1 phase=decode kv_lengths=per_sequence kv_cache=paged:page=64 sparsity=blasst:a=256|"
  echo "bdecode_grid_hd128_q32kv8_ctrue|dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 causal=true lse=true phase=decode kv_lengths=per_sequence sparsity=blasst:a=256 stats=true|--balanced-splits=false"
  # The presets as shipped.
  for p in llama3-8b-prefill llama3-8b-prefill-blasst llama3-8b-decode mha-hd64-prefill mha-hd128-prefill; do
    echo "preset_${p}|preset=$p|"
  done
}

one() {
  local name="$1" spec="$2" flags="$3"
  # A preset must come first; the name (the kernel's symbol) after it.
  printf '%s\n' "$spec name=k_${name//-/_}" >"$out/$name.spec"
  # shellcheck disable=SC2086
  if "$compile" --spec "$out/$name.spec" --target sm_90a --emit ptx \
      -o "$out/$name.ptx" $flags 2>"$out/$name.err"; then
    echo "$(sha256sum <"$out/$name.ptx" | cut -c1-16) $name"
  else
    echo "error $name"
  fi
}
export -f one
export compile out

variants | sort | xargs -d '\n' -P "$(nproc)" -I{} bash -c \
  'IFS="|" read -r n s f <<<"$1"; one "$n" "$s" "$f"' _ {} | sort -k2
