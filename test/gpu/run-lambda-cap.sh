#!/usr/bin/env bash
# BLASST's lambda cap on the H200 (issue 23): with a = 4096 and KV lengths
# below a, lambda = a / L_kv is above 1 and the kernel caps it at lambda_max.
# Each run checks every element of O (and LSE) and the per-(batch, head)
# skip counters against the CPU model, which applies the same cap: a kernel
# without the cap (threshold log2(a / L_kv) > 0) skips blocks whose maximum
# exceeds the running maximum and fails the counter check (the capped model
# keeps them). Also: L_kv > a (no cap in effect), a lower cap (0.25), and a
# run-time threshold above 0 (--log2-threshold 2), capped too.
# Usage: run-lambda-cap.sh KDIR BENCH OUT
set -uo pipefail
K="$1"; BENCH="$2"; OUT="$3"; mkdir -p "$OUT"; fails=0
run() { local name="$1"; shift
  "$BENCH" "$@" --json "$OUT/$name.json" >"$OUT/$name.log" 2>&1; local rc=$?
  grep -E "^(dense|sparse)|skip|PASS|FAIL|error|threshold" "$OUT/$name.log" | tail -n 12
  [[ $rc -eq 0 ]] || { echo "!! $name exited $rc"; fails=$((fails + 1)); }; }
echo "=== L_kv = 1024 < a = 4096: lambda 4 capped at 1 ==="
run cap_1024 --kernel "$K/sparse_a4096_causalfalse" --kernel "$K/sparse_a4096_causaltrue" \
  --batch 2 --seq 1024 --warmup 0 --iters 1
echo "=== L_kv = 300 (a tail block), seq_q 200 ==="
run cap_300 --kernel "$K/sparse_a4096_causalfalse" --kernel "$K/sparse_a4096_causaltrue" \
  --batch 3 --seq-q 200 --seq-kv 300 --warmup 0 --iters 1
echo "=== L_kv = 8192 > a: lambda = 0.5, no cap in effect ==="
run nocap_8192 --kernel "$K/sparse_a4096_causalfalse" --kernel "$K/sparse_a4096_causaltrue" \
  --batch 1 --seq 8192 --check rows:64 --warmup 0 --iters 1
echo "=== lambda_max = 0.25 at L_kv = 2048 (lambda 2 capped at 0.25) ==="
run cap025_2048 --kernel "$K/sparse_a4096_cap025" --batch 1 --seq 2048 --warmup 0 --iters 1
echo "=== a run-time threshold above 0 (log2 2 - log2 L) is capped too ==="
run rt_thr --kernel "$K/sparse_causalfalse" --kernel "$K/sparse_causaltrue" \
  --batch 1 --seq 2048 --log2-threshold 2 --warmup 0 --iters 1
echo "failures: $fails" | tee "$OUT/summary.txt"
exit $((fails > 0))
