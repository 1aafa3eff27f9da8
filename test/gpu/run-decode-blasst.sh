#!/usr/bin/env bash
# BLASST decode on the H200 (kernels from build-decode-kernels.sh, BLASST=1).
# CHECKS: every element of O and LSE against the CPU skipping model (the
# vote over the tile's packed rows, each KV split's running max seeded from
# KV block 0 and its first block voted on against it: .meta sink_seed and
# vote_first_block tell the model; bdec_nofirst_* keep it unvoted) and the
# statistics [B, Hq, 2] exactly (visited
# equal, skipped within the model's borderline decisions), over seq_q
# 1/2/4/8 x MHA/GQA/MQA x head_dim 64/128 x causal, the sparsity dial at
# 0.5 / 0.9 and fixed thresholds on random inputs (several skip levels),
# forced split counts 1/3/7/16/17/40, the a= policy, the threshold in
# device memory (NaN: nothing skipped), 1000 launches (SPLIT_KS,
# LAUNCH_KS name other kernels for the split and 1000-launch runs).
# SANITIZER: racecheck, memcheck, synccheck with 3 splits (SAN_KS: kernels).
# BENCH: bf16 hd128 32/8 heads, seq_q 1, batch 8 at 32K and 128K, batch 1 at
# 128K: dense decode vs BLASST decode on dial inputs with ~0%, ~70%, ~87.5%
# of the blocks skipped (same inputs, same split count); then a summary
# (speedup, skip rate, byte bound 2 / (2 - skip)) in $OUT/summary.txt.
# Usage: run-decode-blasst.sh [KDIR] [OUT]  (KDIR default .device/decode).
# Env: CHECKS=0, SANITIZER=0, BENCH=0 leave a part out; BENCH_EXTRA="k1 k2"
# adds kernels of KDIR to each benchmark run (same inputs, in the summary),
# BENCH_ARGS more blasst-bench flags (e.g. --dial-runs 8); within CHECKS,
# MATRIX=0 leaves out the matrix and SPLITS=0 the split / a= / 1000-launch
# runs; HDS="128" runs a third of the matrix (each part should fit a 10-minute device
# command: HDS=64 SPLITS=0, HDS=128 SPLITS=0, MATRIX=0 with the sanitizers,
# the benchmark alone); SHAPES: "batch seq_kv:dials,..." (default below: dials that
# give ~0 / ~70 / ~87.5% skipped in the CPU model at each shape; batch 1
# needs higher dials: its 16 splits each keep their leading cold blocks
# until a hot block raises the split's fresh running max). GQA=1 adds the
# head ratios that are not a power of two (bdec_gqa_*, bkvgqa_*: 9/3, 28/4,
# 12/2, 40/8 x head_dim 64/128, 12/1 and 24/1 at 128, seq_q 1/2/4/8 at
# several skip levels, forced splits, per-sequence and paged lengths,
# racecheck/memcheck/synccheck); ONLY=gqa runs just those. BENCH_HD=256
# benchmarks the head_dim 256 pair (bench_dec/bench_bdec_hd256_q32kv8)
# instead of head_dim 128.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
K="${1:-$ROOT/.device/decode}"; OUT="${2:-${OUT:-/tmp/decode-blasst-out}}"; mkdir -p "$OUT"
B="$K/bin/blasst-bench"; fails=0; runs=0
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIPPED: no GPU (nvidia-smi)"; exit 0
fi
run() { local name="$1"; shift; runs=$((runs + 1))
  "$B" "$@" --json "$OUT/$name.json" >"$OUT/$name.log" 2>&1; local rc=$?
  if [[ $rc -ne 0 ]]; then
    echo "!! $name exited $rc"; grep -E "FAIL|error|launch:" "$OUT/$name.log" | head -n 8
    fails=$((fails + 1))
  fi; }
if [[ ${ONLY:-} == gqa ]]; then CHECKS=0 SANITIZER=0 BENCH=0 GQA=1; fi
if [[ ${CHECKS:-1} == 1 ]]; then
  echo "=== BLASST decode vs the CPU skipping model (every element, stats) ==="
  for hd in ${HDS:-64 128 256}; do
    [[ ${MATRIX:-1} == 1 ]] || break
    for heads in "16 16" "32 8" "8 1" "32 1"; do
      read -r qh kvh <<<"$heads"
      ks=(--kernel "$K/bdec_hd${hd}_q${qh}kv${kvh}_cfalse" --kernel "$K/bdec_hd${hd}_q${qh}kv${kvh}_ctrue")
      for sq in 1 2 4 8; do
        for skip in "--dial 0.5" "--dial 0.9" "--log2-threshold -1" "--log2-threshold -3"; do
          for shape in "1 1000" "8 3001"; do
            read -r batch skv <<<"$shape"
            tag=$(echo "$skip" | tr -d ' -' | tr '.' 'p')
            run "chk_hd${hd}_q${qh}kv${kvh}_sq${sq}_${tag}_b${batch}_kv${skv}" "${ks[@]}" \
              --batch "$batch" --seq-q "$sq" --seq-kv "$skv" $skip --stats \
              --seed $((RANDOM + 1)) --warmup 0 --iters 1 --repeat-launches 2
          done
        done
      done
    done
  done
  echo "matrix: $runs runs, $fails failed"
  # Split boundaries: each split's first block is voted on against the
  # sink seed (bdec_nofirst_*: kept); the model takes the launch's split
  # count.
  for k in ${SPLIT_KS:-bdec_hd128_q32kv8 bdec_hd64_q32kv1 bdec_hd128_q16kv16 bdec_nofirst_hd128_q32kv8}; do
    [[ ${SPLITS:-1} == 1 ]] || break
    ks=(--kernel "$K/${k}_cfalse" --kernel "$K/${k}_ctrue")
    for sq in 1 8; do
      for shape in "1 129" "8 3001" "2 40000"; do
        read -r batch skv <<<"$shape"
        for splits in 1 3 7 16 17 40; do
          run "split_${k}_sq${sq}_b${batch}_kv${skv}_s$splits" "${ks[@]}" \
            --batch "$batch" --seq-q "$sq" --seq-kv "$skv" --kv-splits "$splits" \
            --dial 0.8 --stats --seed $((RANDOM + 1)) --warmup 0 --iters 1 --repeat-launches 2
        done
      done
    done
  done
  # a= policy: T = log2 a - log2 L_kv (capped at lambda_max = 1), computed
  # in the kernel from the sequence length.
  for skv in 100 5000 40000; do
    [[ ${SPLITS:-1} == 1 ]] || break
    run "chk_a_kv$skv" --kernel "$K/bdec_a_hd128_q32kv8_ctrue" --batch 4 --seq-q 4 \
      --seq-kv "$skv" --stats --warmup 0 --iters 1
  done
  # The threshold in device memory (parameter 13): NaN skips nothing (the
  # kernel's select after its minnum), inf is capped at lambda_max = 1.
  for thr in nan -3 inf; do
    [[ ${SPLITS:-1} == 1 ]] || break
    run "chk_devthr_$thr" --kernel "$K/bdec_hd128_q32kv8_ctrue" \
      --kernel "$K/bdec_a_hd128_q32kv8_ctrue" --batch 4 --seq-q 4 --seq-kv 5000 \
      --dial 0.7 --device-threshold "$thr" --stats --warmup 0 --iters 1
  done
  for k in ${LAUNCH_KS:-bdec_hd128_q32kv8_ctrue}; do
    [[ ${SPLITS:-1} == 1 ]] || break
    run "chk_1000launch_$k" --kernel "$K/$k" --batch 8 --seq-q 4 \
      --seq-kv 4099 --dial 0.7 --stats --warmup 0 --iters 1 --repeat-launches 1000
  done
  echo "checks: $runs runs, $fails failed"
fi
if [[ ${SANITIZER:-1} == 1 ]] && command -v compute-sanitizer >/dev/null; then
  echo "=== compute-sanitizer, BLASST decode, 3 KV splits ==="
  for k in ${SAN_KS:-bdec_hd128_q32kv8_ctrue}; do
    for tool in racecheck memcheck synccheck; do
      compute-sanitizer --tool "$tool" --error-exitcode 9 "$B" \
        --kernel "$K/$k" --batch 2 --seq-q 8 --seq-kv 1500 \
        --kv-splits 3 --dial 0.7 --stats --warmup 0 --iters 1 >"$OUT/sanitizer_${k}_$tool.log" 2>&1
      rc=$?; echo "$k $tool exit $rc: $(grep -E 'SUMMARY' "$OUT/sanitizer_${k}_$tool.log")"
      [[ $rc -eq 0 ]] || fails=$((fails + 1))
    done
  done
fi
if [[ ${GQA:-0} == 1 ]]; then
  # G q heads by floor(64 / G) tokens per tile, the last 64 mod G rows
  # padding (they abstain from the vote and are not counted): every element
  # and the statistics against the CPU skipping model; one shape and skip
  # level per seq_q, each with both causal kernels.
  echo "=== BLASST decode, head ratios that are not a power of two ==="
  g0=$runs; gf=$fails
  for hd in 64 128; do
    heads="9_3 28_4 12_2 40_8"; [[ $hd == 128 ]] && heads="$heads 12_1 24_1"
    for h in $heads; do
      k="bdec_gqa_hd${hd}_q${h%_*}kv${h#*_}"
      ks=(--kernel "$K/${k}_cfalse" --kernel "$K/${k}_ctrue")
      for c in "1 1 1000 --dial 0.5" "2 8 517 --dial 0.9" \
               "4 3 3001 --log2-threshold -1" "8 4 2000 --log2-threshold -3"; do
        read -r sq batch skv skip <<<"$c"
        run "gqa_${k}_sq${sq}_b${batch}_kv${skv}" "${ks[@]}" --batch "$batch" \
          --seq-q "$sq" --seq-kv "$skv" $skip --stats --seed $((RANDOM + 1)) \
          --warmup 0 --iters 1 --repeat-launches 2
      done
    done
  done
  # Forced split counts (each split's first block kept) and more tokens
  # than a tile holds (24/1: 2 tokens per tile, 4 tiles at seq_q 8).
  for k in bdec_gqa_hd128_q9kv3 bdec_gqa_hd64_q28kv4 bdec_gqa_hd128_q24kv1; do
    for splits in 1 3 7; do
      run "gqa_split_${k}_s$splits" --kernel "$K/${k}_cfalse" --kernel "$K/${k}_ctrue" \
        --batch 2 --seq-q 8 --seq-kv 3001 --kv-splits "$splits" --dial 0.8 --stats \
        --seed $((RANDOM + 1)) --warmup 0 --iters 1 --repeat-launches 2
    done
  done
  # The KV caches: per-sequence lengths (mixed with 0 and 1), contiguous and
  # 16-token pages (the on-demand V copies through the table).
  for kv in ps pg16; do
    for sq in 1 8; do
      run "gqa_kv${kv}_sq$sq" --kernel "$K/bkvgqa_${kv}_hd128_q28kv4_ctrue" \
        --batch 6 --kv-lengths 63,257,2049,1,0,3001 --seq-q "$sq" --dial 0.7 \
        --stats --seed $((RANDOM + 1)) --warmup 0 --iters 1 --repeat-launches 2
    done
  done
  if [[ ${SANITIZER:-1} == 1 || ${ONLY:-} == gqa ]] &&
     command -v compute-sanitizer >/dev/null; then
    for tool in racecheck memcheck synccheck; do
      compute-sanitizer --tool "$tool" --error-exitcode 9 "$B" \
        --kernel "$K/bdec_gqa_hd128_q9kv3_ctrue" --batch 2 --seq-q 8 --seq-kv 1500 \
        --kv-splits 3 --dial 0.7 --stats --warmup 0 --iters 1 \
        >"$OUT/sanitizer_gqa_$tool.log" 2>&1
      rc=$?; echo "$tool (G = 3) exit $rc: $(grep -E 'SUMMARY' "$OUT/sanitizer_gqa_$tool.log")"
      [[ $rc -eq 0 ]] || fails=$((fails + 1))
    done
  fi
  echo "gqa: $((runs - g0)) runs, $((fails - gf)) failed"
fi
if [[ ${BENCH:-1} == 1 ]]; then
  hd=${BENCH_HD:-128}
  echo "=== benchmark: dense vs BLASST decode, bf16 hd$hd 32/8 heads, seq_q 1 ==="
  IFS=, read -ra shapes <<<"${SHAPES:-8 32768:0 0.71 0.885,8 131072:0 0.71 0.885,1 131072:0 0.73 0.93}"
  for shape in "${shapes[@]}"; do
    read -r batch skv <<<"${shape%%:*}"
    for dial in ${shape#*:}; do
      name="bench_b${batch}_kv${skv}_dial$dial"
      extra=(); for x in ${BENCH_EXTRA:-}; do extra+=(--kernel "$K/$x"); done
      run "$name" --kernel "$K/bench_dec_hd${hd}_q32kv8" --kernel "$K/bench_bdec_hd${hd}_q32kv8" "${extra[@]}" \
        --batch "$batch" --seq-q 1 --seq-kv "$skv" --dial "$dial" --check none \
        --warmup 20 --iters 200 ${BENCH_ARGS:-}
      grep -E "launch:|time:|bandwidth:|stats:" "$OUT/$name.log" | sed "s/^/$name /"
    done
  done
  python3 - "$OUT" <<'PY' | tee "$OUT/summary.txt"
import glob, json, os, sys
print("shape, dial: dense ms, BLASST ms, speedup, skipped, byte bound 2/(2-skip), of the bound")
for f in sorted(glob.glob(os.path.join(sys.argv[1], "bench_b*_dial*.json"))):
    try:
        ks = json.load(open(f))["kernels"]
        d, b = (k["timing"]["median_ms"] for k in ks[:2])
    except (KeyError, ValueError, IndexError):
        print("%s: no timing" % os.path.basename(f)); continue
    skip = ks[1].get("stats", {}).get("skip_rate", 0.0)
    bound = 2.0 / (2.0 - skip)
    print("%s: %.4f, %.4f, %.3fx, %.1f%%, %.3fx, %.2f" % (
        os.path.basename(f)[6:-5], d, b, d / b, 100 * skip, bound, d / b / bound))
    # BENCH_EXTRA kernels (same inputs): time, speedup over dense, skipped.
    for k in ks[2:]:
        try:
            x = k["timing"]["median_ms"]
        except KeyError:
            continue
        xs = k.get("stats", {}).get("skip_rate", 0.0)
        print("    + %s: %.4f, %.3fx, %.1f%%" % (
            os.path.basename(k.get("stem", "?")), x, d / x, 100 * xs))
PY
fi
echo "BLASST decode: $runs runs, $fails failed (logs in $OUT)"
[[ $fails -eq 0 ]]
