#!/usr/bin/env bash
# Kernels for the BLASST runs (bf16, head_dim 128, 32 q / 8 kv heads, the
# issue's benchmark shape): dense and sparse, causal and not, plus two
# correctness variants. Usage: test/gpu/build-blasst-kernels.sh [BUILD] [OUT]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${1:-$ROOT/build}"; OUT="${2:-$ROOT/.device/blasst}"
C="$BUILD/bin/blasst-compile"; mkdir -p "$OUT"
mk() { # name spec...
  local name="$1"; shift
  printf 'name=%s %s\n' "$name" "$*" >"$OUT/$name.in.spec"
  # SPARSE_FLAGS: options for the sparse kernels only (e.g. --v-on-demand,
  # which dense kernels refuse).
  local extra=""; [[ $name == sparse* ]] && extra="${SPARSE_FLAGS:-}"
  "$C" --spec "$OUT/$name.in.spec" --emit cubin -o "$OUT/$name" -v ${BLASST_COMPILE_FLAGS:-} $extra >"$OUT/$name.ptxas.log" 2>&1
}
base="dtype=bf16 head_dim=128 q_heads=32 kv_heads=8"
# CAUSAL="false" builds only the non-causal kernels (e.g. with
# BLASST_COMPILE_FLAGS=--kv-multicast, which refuses causal ones).
for causal in ${CAUSAL:-false true}; do
  mk "dense_causal$causal" "$base causal=$causal"
  mk "sparse_causal$causal" "$base causal=$causal sparsity=blasst:ln_lambda=-8.32 stats=true"
done
[[ " ${CAUSAL:-false true} " == *" true "* ]] &&
  mk sparse_a_causaltrue "$base causal=true sparsity=blasst:a=256 stats=true lse=true"
mk sparse_f16_hd64_gqa "dtype=f16 head_dim=64 q_heads=16 kv_heads=4 causal=false sparsity=blasst:ln_lambda=-6 stats=true"
# lambda = a / L_kv above 1 (run-lambda-cap.sh: L_kv < a = 4096 is capped at
# lambda_max = 1; a second kernel with a lower cap, 0.25).
for causal in ${CAUSAL:-false true}; do
  mk "sparse_a4096_causal$causal" "$base causal=$causal sparsity=blasst:a=4096 stats=true lse=true"
done
mk sparse_a4096_cap025 "$base causal=false sparsity=blasst:a=4096 lambda_max=0.25 stats=true"
ls "$OUT"/*.cubin | wc -l
