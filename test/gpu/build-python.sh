#!/usr/bin/env bash
# Builds, here (where the compiler is), what test/gpu/run-python.sh needs on
# the GPU machine (which has no LLVM): libblasst.so (the runtime's C API, no
# LLVM/MLIR) and a kernel package with every kernel the Python op tests use.
# Usage: test/gpu/build-python.sh [BUILD_DIR] [OUT_DIR]   (default build,
# .device/python; then carry .device/python)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${1:-$ROOT/build}"; OUT="${2:-$ROOT/.device/python}"
# A fresh package: `blasst.aot build` keeps the kernels a package already
# has for a spec (its key is the spec's, not the compiler build's), so a
# package left by an older build of the same version would be tested again.
rm -rf "$OUT/kernels"
mkdir -p "$OUT/lib"
cp "$BUILD/lib/libblasst.so" "$OUT/lib/"
export BLASST_LIBRARY="$BUILD/lib/libblasst.so"
export BLASST_JIT_LIBRARY="$BUILD/lib/libblasst_jit.so"
export PYTHONPATH="$ROOT/python"
aot() { python3 -m blasst.aot build -q -o "$OUT/kernels" "$@"; }
# The correctness matrix (layouts share kernels), MQA, the strided views and
# torch.compile.
aot --grid "dtype=bf16|f16 head_dim=64|128 q_heads=8 kv_heads=8|2 causal=false|true lse=false|true"
aot --grid "dtype=bf16 head_dim=64 q_heads=4 kv_heads=1 causal=true lse=false"
# BLASST: skipping, the CUDA graph, calibration (any a / ln_lambda value).
aot --grid "dtype=bf16 head_dim=128 q_heads=8 kv_heads=8 causal=false|true sparsity=blasst:a=1 stats=true"
# python/benchmarks/host_overhead.py: BLASST without statistics.
aot --spec "dtype=bf16 head_dim=128 q_heads=8 kv_heads=8 causal=true sparsity=blasst:a=1 stats=false"
aot --grid "dtype=bf16 head_dim=128 q_heads=8 kv_heads=8 causal=false sparsity=blasst:ln_lambda=-1 stats=true"
# Timing beside SDPA.
aot --grid "dtype=bf16 head_dim=128 q_heads=16 kv_heads=16 causal=false|true"
# Decode (python_op.py section 8; the phase is picked from the shapes): the
# contiguous matrix, f16, no LSE (transformers' decode, timing), the decode-
# like case of the matrix above (8/2, one token).
aot --grid "dtype=bf16 head_dim=64|128 q_heads=8 kv_heads=8|1 causal=false|true lse=true phase=decode"
aot --grid "dtype=bf16 head_dim=64|128 q_heads=32 kv_heads=8 causal=false|true lse=true phase=decode"
aot --spec "dtype=f16 head_dim=128 q_heads=32 kv_heads=8 causal=true lse=true phase=decode"
aot --spec "dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 causal=false lse=false phase=decode"
aot --spec "dtype=bf16 head_dim=128 q_heads=8 kv_heads=2 causal=true lse=true phase=decode"
# Per-sequence lengths and paged caches.
aot --grid "dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 causal=false|true lse=true phase=decode kv_lengths=per_sequence"
aot --spec "dtype=bf16 head_dim=64 q_heads=8 kv_heads=1 causal=true lse=true phase=decode kv_lengths=per_sequence"
aot --grid "dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 causal=true lse=true phase=decode kv_lengths=per_sequence kv_cache=paged:page=16|paged:page=64|paged:page=256"
aot --spec "dtype=bf16 head_dim=128 q_heads=8 kv_heads=8 causal=false lse=true phase=decode kv_cache=paged:page=64"
aot --spec "dtype=bf16 head_dim=64 q_heads=8 kv_heads=1 causal=true lse=true phase=decode kv_lengths=per_sequence kv_cache=paged:page=32"
# BLASST decode (contiguous KV).
aot --grid "dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 causal=false|true sparsity=blasst:a=1 stats=true phase=decode"
aot --spec "dtype=bf16 head_dim=64 q_heads=8 kv_heads=1 causal=false sparsity=blasst:a=1 stats=true phase=decode"
aot --spec "dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 causal=false sparsity=blasst:ln_lambda=-1 stats=true phase=decode"
# BLASST decode with the KV caches (python_op.py decode_blasst_cache): per-
# sequence lengths over contiguous K/V and paged pools (pages 16/32/64/256,
# one uniform length), O, LSE and the statistics.
B="dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 lse=true stats=true phase=decode"
aot --grid "$B causal=false|true sparsity=blasst:a=1 kv_lengths=per_sequence"
aot --spec "$B causal=true sparsity=blasst:a=1 kv_lengths=per_sequence kv_cache=paged:page=16"
aot --grid "$B causal=false|true sparsity=blasst:a=1 kv_lengths=per_sequence kv_cache=paged:page=64"
aot --spec "$B causal=false sparsity=blasst:ln_lambda=-1 kv_lengths=per_sequence kv_cache=paged:page=64"
aot --spec "$B causal=false sparsity=blasst:a=1 kv_lengths=per_sequence kv_cache=paged:page=256"
aot --spec "$B causal=false sparsity=blasst:a=1 kv_cache=paged:page=64"
aot --spec "dtype=bf16 head_dim=64 q_heads=8 kv_heads=1 causal=true lse=true stats=true phase=decode sparsity=blasst:a=1 kv_lengths=per_sequence kv_cache=paged:page=32"
python3 -m blasst.aot check "$OUT/kernels" | tail -n 1
du -sh "$OUT"
