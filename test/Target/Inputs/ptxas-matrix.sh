#!/usr/bin/env bash
# Compiles the test matrix to cubins with ptxas and fails on any ptxas
# error or register spill. TARGET=sm_100a takes head_dim 64 and 128 (256
# is refused there); the default is sm_90a.
# Usage: [TARGET=sm_100a] ptxas-matrix.sh BLASST_COMPILE OUTDIR [extra blasst-compile flags...]
set -euo pipefail
compile="$1"; out="$2"; shift 2; extra=("$@"); mkdir -p "$out"
target="${TARGET:-sm_90a}"
n=0
for dtype in bf16 f16; do
  for hd in 64 128 256; do
    for heads in "16 16" "16 4" "8 1"; do
      for causal in false true; do
        read -r qh kvh <<<"$heads"
        if [[ $target == sm_100a && $hd -gt 128 ]]; then
          continue
        fi
        # Persistent kernels are for head_dim <= 128 (registers).
        if [[ " ${extra[*]-} " == *" --persistent "* && $hd -gt 128 ]]; then
          continue
        fi
        # So is Q in registers (head_dim / 4 more registers per thread).
        if [[ " ${extra[*]-} " == *" --q-in-registers "* && $hd -gt 128 ]]; then
          continue
        fi
        # LSE on for every other combination to cover both epilogues.
        lse=$([[ $(( (n / 2) % 2 )) -eq 0 ]] && echo true || echo false)
        name="${dtype}_hd${hd}_q${qh}kv${kvh}_causal${causal}_lse${lse}"
        printf 'name=%s dtype=%s head_dim=%s q_heads=%s kv_heads=%s causal=%s lse=%s\n' \
          "$name" "$dtype" "$hd" "$qh" "$kvh" "$causal" "$lse" >"$out/$name.in.spec"
        log=$("$compile" --spec "$out/$name.in.spec" --target "$target" --emit cubin \
              -o "$out/$name" -v "${extra[@]}" 2>&1) || { echo "FAIL $name"; echo "$log"; exit 1; }
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
      done
    done
  done
done
echo "assembled $n $target kernels, no spills"
