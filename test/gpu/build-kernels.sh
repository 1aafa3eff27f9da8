#!/usr/bin/env bash
# Compiles the kernels the H200 runs use into OUTDIR (default .device/kernels):
# the 36-kernel sm_90a correctness matrix plus the benchmark kernels.
# Usage: test/gpu/build-kernels.sh [BUILD_DIR] [OUTDIR]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${1:-$ROOT/build}"
OUT="${2:-$ROOT/.device/kernels}"
COMPILE="$BUILD/bin/blasst-compile"
mkdir -p "$OUT"
# BENCH_ONLY=1: only the benchmark kernels (schedule sweeps).
if [[ ${BENCH_ONLY:-0} != 1 ]]; then
  bash "$ROOT/test/Target/Inputs/ptxas-matrix.sh" "$COMPILE" "$OUT" ${BLASST_COMPILE_FLAGS:-}
fi
# Benchmark kernels: bf16, head_dim 64/128/256, 16 heads, no LSE.
for hd in ${BENCH_HDS:-64 128 256}; do for causal in false true; do
  name="bench_bf16_hd${hd}_h16_causal${causal}"
  printf 'name=%s dtype=bf16 head_dim=%s q_heads=16 kv_heads=16 causal=%s\n' \
    "$name" "$hd" "$causal" >"$OUT/$name.in.spec"
  "$COMPILE" --spec "$OUT/$name.in.spec" --emit cubin -o "$OUT/$name" -v ${BLASST_COMPILE_FLAGS:-} \
    >"$OUT/$name.ptxas.log" 2>&1
done; done
ls "$OUT"/*.cubin | wc -l
