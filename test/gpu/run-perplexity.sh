#!/usr/bin/env bash
# SmolLM2-135M perplexity on the H200, dense against BLASST, through
# blasst.hf (python/examples/smollm2_perplexity.py), with what
# test/gpu/build-perplexity.sh prepared: the GGUF arrives in two halves (a
# call carries at most 64 MiB), so the first call only stages its half into
# $STAGE (/tmp/blasst-ppl, kept while the machine stays warm) and the second
# reassembles the file (sha256 checked) and runs. Parts already in $STAGE
# are used as they are.
#   call 1, carry [".device/ppl/a"]:  bash test/gpu/run-perplexity.sh --stage
#   call 2, carry [".device/ppl/b"]:  bash test/gpu/run-perplexity.sh
# Results: $OUT/w4096 and $OUT/w8192 (perplexity.json, perplexity.log), the
# table in the log. Extra arguments after the options go to the example
# (e.g. --a 16,64). PYTHON overrides python3; CPU_CHECK=1 runs the example's
# --cpu-check (the wiring on a machine without a GPU, small windows).
set -uo pipefail
STAGE="${STAGE:-/tmp/blasst-ppl}"; OUT="${OUT:-/tmp/blasst-ppl-out}"
PY="${PYTHON:-python3}"
NAME=SmolLM2-135M-Instruct.Q4_1.gguf
stage_only=0
if [ "${1:-}" = "--stage" ]; then stage_only=1; shift; fi
mkdir -p "$STAGE" "$OUT"
for src in .device/ppl/a .device/ppl/b; do
  [ -d "$src" ] && cp -r "$src"/. "$STAGE"/
done
ls -la "$STAGE" | tee "$OUT/stage.txt"
if [ ! -f "$STAGE/$NAME" ]; then
  if [ -f "$STAGE/$NAME.part00" ] && [ -f "$STAGE/$NAME.part01" ]; then
    cat "$STAGE/$NAME.part00" "$STAGE/$NAME.part01" > "$STAGE/$NAME.tmp"
    mv "$STAGE/$NAME.tmp" "$STAGE/$NAME"
    (cd "$STAGE" && sha256sum -c "$NAME.sha256") || {
      echo "!! the reassembled GGUF does not match its sha256"; rm -f "$STAGE/$NAME"; exit 1; }
    rm -f "$STAGE/$NAME.part00" "$STAGE/$NAME.part01"
  elif [ $stage_only = 1 ]; then
    echo "staged in $STAGE; now carry the other half and run without --stage"; exit 0
  else
    echo "!! $STAGE lacks a half of the GGUF: carry .device/ppl/a (with --stage) and .device/ppl/b"
    exit 3
  fi
fi
[ $stage_only = 1 ] && { echo "staged: the GGUF is complete in $STAGE"; exit 0; }
if ! PYTHONPATH="$STAGE/site" "$PY" -c "import gguf" 2>/dev/null; then
  "$PY" -m pip install -q --no-deps --no-index --target "$STAGE/site" "$STAGE"/gguf-*.whl || exit 1
fi
export PYTHONPATH="$STAGE/site:$PWD/python" PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
export BLASST_LIBRARY="$STAGE/lib/libblasst.so" BLASST_KERNEL_PATH="$STAGE/kernels"
if [ "${CPU_CHECK:-0}" = 1 ]; then
  "$PY" python/examples/smollm2_perplexity.py --gguf "$STAGE/$NAME" --cpu-check \
    --window 128 --windows 1 --a 64 --out "$OUT/cpu-check" "$@" 2>&1 \
    | grep -v "Converting\|Loading weights" | tee "$OUT/cpu-check.log"
  exit "${PIPESTATUS[0]}"
fi
export BLASST_JIT_LIBRARY=/nonexistent/libblasst_jit.so   # kernels from the package only
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
"$PY" -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)" \
  | tee -a "$OUT/device.txt"
rc=0
for w in "4096 8" "8192 4"; do
  read -r window n <<<"$w"
  dir="$OUT/w$window"; mkdir -p "$dir"
  echo "=== window $window x $n ==="
  "$PY" python/examples/smollm2_perplexity.py --gguf "$STAGE/$NAME" --window "$window" \
    --windows "$n" --out "$dir" "$@" 2>&1 | grep -v "Converting\|Loading weights" \
    | tee "$dir/perplexity.log"
  [ "${PIPESTATUS[0]}" = 0 ] || rc=1
done
exit $rc
