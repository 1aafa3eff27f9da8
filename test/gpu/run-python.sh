#!/usr/bin/env bash
# The Python op on the H200 (no LLVM there): the package's unit tests with
# PyTorch, then test/gpu/python_op.py (correctness against float64, CUDA
# graph replay with a changed threshold, torch.compile, calibration, kernel
# packages without LLVM, timing beside SDPA), then the host overhead per call
# (python/benchmarks/host_overhead.py). Kernels and libblasst.so come
# from DIR, built here by test/gpu/build-python.sh; the JIT library is
# pointed at nothing, so every kernel must come from the package.
# Usage (repository root, on the device):
#   bash test/gpu/run-python.sh [DIR (.device/python)] [OUT ($OUT or /tmp/blasst-python)]
# PYOP_ARGS is passed to python_op.py (e.g. "--decode-only --skip-timing").
set -uo pipefail
DIR="${1:-.device/python}"; OUT="${2:-${OUT:-/tmp/blasst-python}}"
mkdir -p "$OUT"
export BLASST_LIBRARY="$PWD/$DIR/lib/libblasst.so"
export BLASST_KERNEL_PATH="$PWD/$DIR/kernels"
export BLASST_JIT_LIBRARY=/nonexistent/libblasst_jit.so
export PYTHONPATH="$PWD/python" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm \
  --format=csv,noheader | tee "$OUT/device.txt"
python3 -c "import torch; print('torch', torch.__version__)" | tee -a "$OUT/device.txt"
ldd "$BLASST_LIBRARY" | tee "$OUT/ldd.txt" | grep -E "LLVM|MLIR" && echo "!! libblasst.so needs LLVM"
echo "=== python/tests (unittest, with PyTorch) ==="
python3 -m unittest discover -s python/tests -t python/tests >"$OUT/unit.log" 2>&1
unit=$?; tail -n 3 "$OUT/unit.log"
echo "=== test/gpu/python_op.py ==="
python3 test/gpu/python_op.py --out "$OUT" ${PYOP_ARGS:-} 2>&1 | tee "$OUT/python-op.log"
op=${PIPESTATUS[0]}
echo "=== python/benchmarks/host_overhead.py ==="
python3 python/benchmarks/host_overhead.py --json "$OUT/host-overhead.json" 2>&1 \
  | tee "$OUT/host-overhead.log"
bench=${PIPESTATUS[0]}
echo "unit tests exit $unit, python_op exit $op, host_overhead exit $bench" | tee "$OUT/summary.txt"
exit $(( unit != 0 || op != 0 || bench != 0 ))
