#!/usr/bin/env bash
# Compiles the kernels of the peer sweep (issue: sm_90a speed): bf16,
# head_dim 64/128/256, causal and not, MHA (16/16) and GQA (32/8), with the
# given schedule flags. Usage: tools/bench/build-sweep.sh BUILD OUT [flags...]
set -euo pipefail
BUILD="$1"; OUT="$2"; shift 2
mkdir -p "$OUT"
for hd in 64 128 256; do
  for heads in "16 16 mha" "32 8 gqa"; do
    read -r qh kvh kind <<<"$heads"
    for causal in false true; do
      name="sweep_hd${hd}_${kind}_causal${causal}"
      printf 'name=%s dtype=bf16 head_dim=%s q_heads=%s kv_heads=%s causal=%s\n' \
        "$name" "$hd" "$qh" "$kvh" "$causal" >"$OUT/$name.in.spec"
      "$BUILD/bin/blasst-compile" --spec "$OUT/$name.in.spec" --emit cubin \
        -o "$OUT/$name" -v "$@" >"$OUT/$name.ptxas.log" 2>&1
    done
  done
done
ls "$OUT"/*.cubin | wc -l
