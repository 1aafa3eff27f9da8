#!/usr/bin/env bash
# Kernels for the decode runs (phase = decode, sm_90a): the check matrix
# (MHA 16/16, GQA 32/8 and 16/4, MQA 8/1 and 32/1 x head_dim 64/128/256 x causal,
# LSE on) and the benchmark kernel (bf16, head_dim 128, 32 q / 8 kv heads).
# seq_q (1-8) and the KV split count are launch values: one kernel per spec.
# With BLASST=1 (default) also the BLASST decode kernels (bdec_*,
# bench_bdec_*) for run-decode-blasst.sh.
# Usage: test/gpu/build-decode-kernels.sh [BUILD] [OUT]   (OUT default:
# .device/decode, with a copy of blasst-bench in OUT/bin for the device)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${1:-$ROOT/build}"; OUT="${2:-$ROOT/.device/decode}"
C="$BUILD/bin/blasst-compile"; mkdir -p "$OUT/bin"
mk() { # name spec...
  local name="$1"; shift
  printf 'name=%s %s\n' "$name" "$*" >"$OUT/$name.in.spec"
  "$C" --spec "$OUT/$name.in.spec" --emit cubin -o "$OUT/$name" -v \
    ${BLASST_COMPILE_FLAGS:-} >"$OUT/$name.ptxas.log" 2>&1
  grep -q "0 bytes spill stores, 0 bytes spill loads" "$OUT/$name.ptxas.log" ||
    { echo "spills or no ptxas report: $OUT/$name.ptxas.log"; exit 1; }
}
for hd in 64 128 256; do
  for heads in "16 16" "32 8" "16 4" "8 1" "32 1"; do
    read -r qh kvh <<<"$heads"
    for causal in false true; do
      mk "dec_hd${hd}_q${qh}kv${kvh}_c${causal}" \
        "dtype=bf16 head_dim=$hd q_heads=$qh kv_heads=$kvh causal=$causal lse=true phase=decode"
    done
  done
done
mk dec_f16_hd128_q32kv8_ctrue "dtype=f16 head_dim=128 q_heads=32 kv_heads=8 causal=true lse=true phase=decode"
mk bench_dec_hd128_q32kv8 "dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 causal=false phase=decode"
mk bench_dec_hd128_q32kv8_causal "dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 causal=true phase=decode"
# BLASST decode (run-decode-blasst.sh): the check matrix (MHA/GQA/MQA x
# head_dim 64/128 x causal, statistics and LSE on; the threshold is a launch
# value) and the benchmark pair's sparse half (same spec as bench_dec_*).
if [[ ${BLASST:-1} == 1 ]]; then
  for hd in 64 128 256; do
    for heads in "16 16" "32 8" "8 1" "32 1"; do
      read -r qh kvh <<<"$heads"
      for causal in false true; do
        mk "bdec_hd${hd}_q${qh}kv${kvh}_c${causal}" \
          "dtype=bf16 head_dim=$hd q_heads=$qh kv_heads=$kvh causal=$causal lse=true phase=decode sparsity=blasst:ln_lambda=-8 stats=true"
      done
    done
  done
  mk bdec_a_hd128_q32kv8_ctrue "dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 causal=true lse=true phase=decode sparsity=blasst:a=64 stats=true"
  mk bench_bdec_hd128_q32kv8 "dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 causal=false phase=decode sparsity=blasst:ln_lambda=-8 stats=true"
  mk bench_bdec_hd128_q32kv8_causal "dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 causal=true phase=decode sparsity=blasst:ln_lambda=-8 stats=true"
  # The same BLASST kernel without the sink seed (each split from -inf).
  BLASST_COMPILE_FLAGS="--sink-seed=false" mk bench_bdec_noseed_hd128_q32kv8 \
    "dtype=bf16 head_dim=128 q_heads=32 kv_heads=8 causal=false phase=decode sparsity=blasst:ln_lambda=-8 stats=true"
fi
cp "$BUILD/bin/blasst-bench" "$OUT/bin/"
ls "$OUT"/*.cubin | wc -l
