#!/usr/bin/env bash
# Builds every schedule of a target's test matrix to ws IR (blasst-compile
# runs blasst-verify-sync on it and fails on a violation; --verify-stats
# prints its states, so each kernel is searched once), then prints the
# largest search (states) as a deterministic stand-in for the time bound.
# Usage: verify-matrix.sh BLASST_COMPILE OUTDIR TARGET [flags...]
# With DECODE=1 the decode schedule (phase = decode, head_dim 64/128, MHA
# 16/16, GQA 32/8, MQA 32/1); SPEC_EXTRA adds spec lines to every kernel
# (e.g. the decode KV caches: "kv_lengths=per_sequence kv_cache=paged:page=16");
# HEADS replaces the head pairs ("q kv" pairs separated by commas, e.g.
# HEADS="9 3,28 4" for ratios that are not a power of two).
set -euo pipefail
compile="$1"; out="$2"; target="$3"; shift 3; extra=("$@")
mkdir -p "$out"
n=0; max=0; maxname=
hds="64 128 256"; [[ $target == sm_100a ]] && hds="64 128"
headset=("16 16" "16 4" "8 1"); phase=prefill
if [[ ${DECODE:-0} == 1 ]]; then
  hds="64 128"; headset=("16 16" "32 8" "32 1"); phase=decode
fi
if [[ -n ${HEADS:-} ]]; then IFS=, read -r -a headset <<<"$HEADS"; fi
for dtype in bf16 f16; do
  for hd in $hds; do
    for heads in "${headset[@]}"; do
      for causal in false true; do
        read -r qh kvh <<<"$heads"
        # Three K/V stages do not fit shared memory at head_dim 256.
        if [[ " ${extra[*]-} " == *" --stages=3 "* && $hd -gt 128 ]]; then
          continue
        fi
        lse=$([[ $(( (n / 2) % 2 )) -eq 0 ]] && echo true || echo false)
        name="${dtype}_hd${hd}_q${qh}kv${kvh}_causal${causal}_lse${lse}"
        printf 'name=%s\ndtype=%s\nhead_dim=%s\nq_heads=%s\nkv_heads=%s\ncausal=%s\nlse=%s\nphase=%s\n' \
          "$name" "$dtype" "$hd" "$qh" "$kvh" "$causal" "$lse" "$phase" >"$out/$name.spec"
        for kv in ${SPEC_EXTRA:-}; do echo "$kv" >>"$out/$name.spec"; done
        "$compile" --spec "$out/$name.spec" --target "$target" --emit ws \
          --verify-stats -o "$out/$name.mlir" "${extra[@]}" 2>"$out/$name.log" ||
          { echo "FAIL $name"; cat "$out/$name.log"; exit 1; }
        if grep -q "not verified" "$out/$name.log"; then
          echo "NOT VERIFIED $name"; cat "$out/$name.log"; exit 1
        fi
        states=$(sed -n 's/^verify-sync @.*: \([0-9]*\) states.*/\1/p' "$out/$name.log")
        if ((states > max)); then max=$states; maxname=$name; fi
        n=$((n + 1))
      done
    done
  done
done
echo "verified $n $target kernels"
echo "largest search: $max states ($maxname)"
