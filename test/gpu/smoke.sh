#!/usr/bin/env bash
# ctest's GPU test: compile two sm_90a kernels, run and check them against
# the CPU reference. Exits 2 (ctest: skipped) where no GPU is usable.
# Usage: test/gpu/smoke.sh BIN_DIR
set -euo pipefail
BIN="$1"; T="$(mktemp -d)"; trap 'rm -rf "$T"' EXIT
printf 'name=gqa dtype=bf16 head_dim=128 q_heads=8 kv_heads=2 causal=true lse=true\n' >"$T/a.spec"
printf 'name=mqa dtype=f16 head_dim=64 q_heads=4 kv_heads=1\n' >"$T/b.spec"
"$BIN/blasst-compile" --spec "$T/a.spec" --emit cubin -o "$T/a" 2>/dev/null
"$BIN/blasst-compile" --spec "$T/b.spec" --emit cubin -o "$T/b" 2>/dev/null
rc=0
for shape in "2 300 517" "1 1000 1000"; do
  read -r b sq skv <<<"$shape"
  "$BIN/blasst-bench" --kernel "$T/a" --kernel "$T/b" --batch "$b" --seq-q "$sq" \
    --seq-kv "$skv" --o-pad 8 --warmup 0 --iters 1 || rc=$?
  [[ $rc -eq 0 ]] || exit $rc
done
