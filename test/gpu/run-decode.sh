#!/usr/bin/env bash
# Decode on the H200: every element of O and LSE checked against the CPU
# reference (fresh random inputs, outputs poisoned) over the matrix seq_q
# 1/2/4/8 x MHA/GQA/MQA x head_dim 64/128/256 x causal, KV lengths that are not
# multiples of the 128-key block, batch 1 and 8 (the KV split count chosen
# at launch), then forced split counts 1/3/7/16/17/40 (split boundaries inside the
# sequence, short and capped splits); repeated launches bit-identical (the workspace counters
# reset); then the benchmark: bf16, head_dim 128, 32 q / 8 kv heads, batch 8
# at 32K and 128K, batch 1 at 128K, seq_q 1, achieved bandwidth (bytes of K+V
# read / median time).
# Usage: run-decode.sh [KDIR] [OUT]   (KDIR default .device/decode, from
# build-decode-kernels.sh; its bin/blasst-bench is used). Env: CHECKS=0 (no
# reference checks), SANITIZER=0 (no racecheck/memcheck), BENCH=0 (no
# benchmark), SPLITS=0 (no forced split counts), PEERS=0 (no SDPA peers in
# the benchmark), MQA=1 (also MQA 32/1 at batch 1: split sweep and peers):
# each part alone should fit a 10-minute device command; HDS="64"
# / HDS="128" / HDS="256" runs a third of the check matrix. GQA=1 adds the
# head ratios that are not a power of two (dec_gqa_*, kvgqa_*: 9/3, 28/4,
# 12/2, 40/8 x head_dim 64/128, 12/1 and 24/1 at 128, seq_q 1/2/4/8, forced
# splits, per-sequence and paged lengths, racecheck/memcheck; a few
# minutes); ONLY=gqa runs just those (kernels from build-decode-kernels.sh,
# whose default GQA=1 builds them; ONLY=gqa there builds only them). LEAN=1
# checks the lean decode kernels (lean_*, head_dim 128 and 256: every element with the grid the
# runtime picks and with forced tiles x s grids, 1000 launches,
# racecheck/memcheck). LEANENTRY=1 checks the lean entry of the dense decode
# kernels (dec_hd128_*, dec_hd64_*, paged pg*_: ragged shapes launch
# <kernel>_lean; every element, 1000 launches, racecheck/memcheck).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
K="${1:-$ROOT/.device/decode}"; OUT="${2:-${OUT:-/tmp/decode-out}}"; mkdir -p "$OUT"
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
# racecheck and memcheck of one launch: sanitize TAG blasst-bench-args...
# (logs sanitizer[_TAG]_TOOL.log; each tool a run, a failure if it reports).
sanitize() { local tag="$1"; shift
  for tool in racecheck memcheck; do
    local log="$OUT/sanitizer${tag:+_$tag}_$tool.log"; runs=$((runs + 1))
    compute-sanitizer --tool "$tool" --error-exitcode 9 "$B" "$@" \
      --warmup 0 --iters 1 >"$log" 2>&1
    local rc=$?; echo "${tag:+$tag }$tool exit $rc: $(grep -E 'SUMMARY' "$log")"
    [[ $rc -eq 0 ]] || fails=$((fails + 1))
  done; }
if [[ ${ONLY:-} == gqa ]]; then CHECKS=0 SANITIZER=0 BENCH=0 GQA=1; fi
if [[ ${CHECKS:-1} == 1 ]]; then
  echo "=== decode vs the CPU reference (every element) ==="
  for hd in ${HDS:-64 128 256}; do
    for heads in "16 16" "32 8" "16 4" "8 1" "32 1"; do
      read -r qh kvh <<<"$heads"
      ks=()
      for causal in false true; do ks+=(--kernel "$K/dec_hd${hd}_q${qh}kv${kvh}_c${causal}"); done
      for sq in 1 2 4 8; do
        for shape in "1 1000" "8 517" "8 3001"; do
          read -r batch skv <<<"$shape"
          run "chk_hd${hd}_q${qh}kv${kvh}_sq${sq}_b${batch}_kv${skv}" "${ks[@]}" \
            --batch "$batch" --seq-q "$sq" --seq-kv "$skv" \
            --seed $((RANDOM + 1)) --warmup 0 --iters 1 --repeat-launches 3
        done
      done
    done
  done
  echo "matrix: $runs runs, $fails failed"
  if [[ ${SPLITS:-1} == 1 ]]; then
  # Split boundaries: forced split counts (1: no workspace; 3, 7: boundaries
  # inside the sequence, short last splits; 16 at 129 keys: capped at the
  # 2 blocks) against the same reference.
  for k in dec_hd128_q32kv8 dec_hd64_q32kv1 dec_hd128_q16kv16; do
    ks=(--kernel "$K/${k}_cfalse" --kernel "$K/${k}_ctrue")
    for sq in 1 8; do
      for shape in "1 129" "8 3001" "1 5" "2 40000"; do
        read -r batch skv <<<"$shape"
        for splits in 1 3 7 16 17 40; do
          run "split_${k}_sq${sq}_b${batch}_kv${skv}_s$splits" "${ks[@]}" \
            --batch "$batch" --seq-q "$sq" --seq-kv "$skv" --kv-splits "$splits" \
            --seed $((RANDOM + 1)) --warmup 0 --iters 1 --repeat-launches 2
        done
      done
    done
  done
  fi
  run chk_f16 --kernel "$K/dec_f16_hd128_q32kv8_ctrue" --batch 8 --seq-q 4 --seq-kv 2000 \
    --warmup 0 --iters 1 --repeat-launches 3
  # seq_q > seq_kv with the causal mask: rows that see no key give O = 0,
  # LSE = -inf (also across splits).
  run chk_nokey --kernel "$K/dec_hd128_q32kv8_ctrue" --batch 2 --seq-q 8 --seq-kv 3 \
    --warmup 0 --iters 1
  run chk_1000launch --kernel "$K/dec_hd128_q32kv8_ctrue" --batch 8 --seq-q 4 \
    --seq-kv 4099 --warmup 0 --iters 1 --repeat-launches 1000
  echo "checks: $runs runs, $fails failed"
fi
if [[ ${SANITIZER:-1} == 1 ]] && command -v compute-sanitizer >/dev/null; then
  echo "=== compute-sanitizer racecheck and memcheck, 3 KV splits ==="
  sanitize "" --kernel "$K/dec_hd128_q32kv8_ctrue" --batch 2 --seq-q 8 --seq-kv 1500 \
    --kv-splits 3
fi
if [[ ${GQA:-0} == 1 ]]; then
  # G q heads by floor(64 / G) tokens per tile, the last 64 mod G rows
  # padding: every element against the CPU reference; one shape per seq_q
  # (batch 1 and 8, KV lengths off the block), each with both causal kernels.
  echo "=== decode, head ratios that are not a power of two ==="
  g0=$runs; gf=$fails
  for hd in 64 128; do
    heads="9_3 28_4 12_2 40_8"; [[ $hd == 128 ]] && heads="$heads 12_1 24_1"
    for h in $heads; do
      k="dec_gqa_hd${hd}_q${h%_*}kv${h#*_}"
      ks=(--kernel "$K/${k}_cfalse" --kernel "$K/${k}_ctrue")
      for sqs in "1 1 1000" "2 8 517" "4 3 3001" "8 4 2000"; do
        read -r sq batch skv <<<"$sqs"
        run "gqa_${k}_sq${sq}_b${batch}_kv${skv}" "${ks[@]}" --batch "$batch" \
          --seq-q "$sq" --seq-kv "$skv" --seed $((RANDOM + 1)) --warmup 0 \
          --iters 1 --repeat-launches 2
      done
    done
  done
  # Forced split counts (1: no workspace, O written directly; 3, 7: split
  # boundaries inside the sequence) and more tokens than a tile holds.
  for k in dec_gqa_hd128_q9kv3 dec_gqa_hd64_q28kv4 dec_gqa_hd128_q24kv1; do
    for splits in 1 3 7; do
      run "gqa_split_${k}_s$splits" --kernel "$K/${k}_cfalse" --kernel "$K/${k}_ctrue" \
        --batch 2 --seq-q 8 --seq-kv 3001 --kv-splits "$splits" \
        --seed $((RANDOM + 1)) --warmup 0 --iters 1 --repeat-launches 2
    done
  done
  # seq_q > seq_kv with the causal mask (rows that see no key).
  run gqa_nokey --kernel "$K/dec_gqa_hd128_q28kv4_ctrue" --batch 2 --seq-q 8 \
    --seq-kv 3 --warmup 0 --iters 1
  # The KV caches: per-sequence lengths (mixed with 0 and 1), contiguous and
  # 16-token pages.
  for kv in ps pg16; do
    for sq in 1 8; do
      run "gqa_kv${kv}_sq$sq" --kernel "$K/kvgqa_${kv}_hd128_q28kv4_ctrue" \
        --batch 6 --kv-lengths 63,257,2049,1,0,3001 --seq-q "$sq" \
        --seed $((RANDOM + 1)) --warmup 0 --iters 1 --repeat-launches 2
    done
  done
  if [[ ${SANITIZER:-1} == 1 || ${ONLY:-} == gqa ]] &&
     command -v compute-sanitizer >/dev/null; then
    sanitize gqa --kernel "$K/dec_gqa_hd128_q9kv3_ctrue" --batch 2 --seq-q 8 \
      --seq-kv 1500 --kv-splits 3
  fi
  echo "gqa: $((runs - g0)) runs, $((fails - gf)) failed"
fi
if [[ ${LEAN:-0} == 1 ]]; then
  # Lean decode (--lean): one CTA per SM, each an even share of all tiles'
  # KV blocks; a tile's parts merged like splits (a tile one CTA covers
  # alone writes O directly). Shapes whose shares start and end inside
  # tiles, tiles cut into 2-3 parts, short and odd lengths, more CTAs than
  # blocks (batch 1 x 63 keys: 8 tiles of one block), seq_q 1-8 causal.
  echo "=== lean decode vs the CPU reference (every element) ==="
  l0=$runs; lf=$fails
  for k in lean_hd128_q16kv16 lean_hd128_q32kv8 lean_hd128_q32kv1 lean_hd256_q32kv8 lean_hd256_q32kv1; do
    ks=(--kernel "$K/${k}_cfalse" --kernel "$K/${k}_ctrue")
    for sq in 1 4 8; do
      for shape in "1 1000" "8 3001" "17 517" "3 40000" "1 63" "5 16384"; do
        read -r batch skv <<<"$shape"
        run "lean_${k}_sq${sq}_b${batch}_kv${skv}" "${ks[@]}" --batch "$batch" \
          --seq-q "$sq" --seq-kv "$skv" --seed $((RANDOM + 1)) --warmup 0 \
          --iters 1 --repeat-launches 2
      done
    done
  done
  # Launched as tiles x s CTAs (kvSplits = s; shares that cross tile
  # boundaries where s does not divide a tile's blocks).
  for s in 1 3 16; do
    for shape in "8 3001 4" "17 517 1" "3 40000 8"; do
      read -r batch skv sq <<<"$shape"
      run "lean_s${s}_sq${sq}_b${batch}_kv${skv}" \
        --kernel "$K/lean_hd128_q32kv8_ctrue" --kernel "$K/lean_hd128_q16kv16_cfalse" \
        --kernel "$K/lean_hd128_q32kv1_ctrue" --kv-splits "$s" --batch "$batch" \
        --seq-q "$sq" --seq-kv "$skv" --seed $((RANDOM + 1)) --warmup 0 --iters 1 \
        --repeat-launches 2
    done
  done
  run lean_nokey --kernel "$K/lean_hd128_q32kv8_ctrue" --batch 2 --seq-q 8 --seq-kv 3 \
    --warmup 0 --iters 1
  run lean_1000launch --kernel "$K/lean_hd128_q32kv8_ctrue" --batch 8 --seq-q 4 \
    --seq-kv 4099 --warmup 0 --iters 1 --repeat-launches 1000
  if [[ ${SANITIZER:-1} == 1 ]] && command -v compute-sanitizer >/dev/null; then
    sanitize lean --kernel "$K/lean_hd128_q32kv8_ctrue" --batch 3 --seq-q 4 --seq-kv 3001
  fi
  echo "lean: $((runs - l0)) runs, $((fails - lf)) failed"
fi
if [[ ${LEANENTRY:-0} == 1 ]]; then
  # The lean entry of the dense decode kernels (head_dim 128, contiguous):
  # shapes whose split grid has ragged waves take <kernel>_lean (the launch
  # line says "the lean entry"), the others the kernel itself; causal with
  # seq_q 1-8, MHA / GQA / MQA; 1000 launches, racecheck / memcheck.
  echo "=== the lean entry vs the CPU reference (every element) ==="
  e0=$runs; ef=$fails
  # Head_dim 64 (128-key blocks) and paged caches of one length (pages of
  # 16 / 64 / 256: the parts read their tiles' table rows) too.
  for k in dec_hd128_q32kv8 dec_hd128_q16kv4 dec_hd128_q16kv16 dec_hd128_q32kv1 dec_hd128_q8kv1 \
           dec_hd64_q32kv8 dec_hd64_q16kv16 dec_hd64_q32kv1 pg16_hd128_q32kv8 pg64_hd128_q16kv16 \
           pg256_hd128_q32kv1 pg64_hd64_q32kv8; do
    ks=(--kernel "$K/${k}_cfalse" --kernel "$K/${k}_ctrue")
    case $k in
      *kv8|*kv4) shapes=("17 16384" "17 1000" "20 4096" "8 3001") ;;
      *kv16) shapes=("9 4096" "17 517" "4 3001") ;;
      *) shapes=("136 4096" "17 3001") ;;
    esac
    for sq in 1 4 8; do
      for shape in "${shapes[@]}"; do
        read -r batch skv <<<"$shape"
        run "leanentry_${k}_sq${sq}_b${batch}_kv${skv}" "${ks[@]}" --batch "$batch" \
          --seq-q "$sq" --seq-kv "$skv" --seed $((RANDOM + 1)) --warmup 0 \
          --iters 1 --repeat-launches 2
      done
    done
  done
  echo "launches by the lean entry: $(cat "$OUT"/leanentry_*.log | grep -c 'the lean entry') of $(cat "$OUT"/leanentry_*.log | grep -c 'launch:')"
  run leanentry_1000launch --kernel "$K/dec_hd128_q32kv8_ctrue" --batch 17 --seq-q 4 \
    --seq-kv 1000 --warmup 0 --iters 1 --repeat-launches 1000
  run leanentry_1000launch_pg16 --kernel "$K/pg16_hd128_q32kv8_ctrue" --batch 17 --seq-q 4 \
    --seq-kv 1000 --warmup 0 --iters 1 --repeat-launches 1000
  if [[ ${SANITIZER:-1} == 1 ]] && command -v compute-sanitizer >/dev/null; then
    sanitize leanentry --kernel "$K/dec_hd128_q32kv8_ctrue" --batch 17 --seq-q 4 --seq-kv 1000
    sanitize leanentry_pg16 --kernel "$K/pg16_hd128_q32kv8_ctrue" --batch 17 --seq-q 4 --seq-kv 1000
    sanitize leanentry_hd64 --kernel "$K/dec_hd64_q32kv8_ctrue" --batch 17 --seq-q 4 --seq-kv 1000
  fi
  echo "lean entry: $((runs - e0)) runs, $((fails - ef)) failed"
fi
if [[ ${BENCH:-1} == 1 ]]; then
  echo "=== benchmark: bf16 hd128 32/8 heads, seq_q 1: K+V bandwidth ==="
  for shape in "8 32768" "8 131072" "1 131072"; do
    read -r batch skv <<<"$shape"
    for k in bench_dec_hd128_q32kv8 bench_dec_hd128_q32kv8_causal; do
      name="bench_${k}_b${batch}_kv${skv}"
      run "$name" --kernel "$K/$k" --batch "$batch" --seq-q 1 --seq-kv "$skv" \
        --check rows:1 --warmup 20 --iters 200
      grep -E "launch:|time:|bandwidth:" "$OUT/$name.log" | sed "s/^/$name /"
    done
  done
  # The peers in the same call (CUDA-graph replays: tools/bench/harness.py
  # time_ms), and our / their time per shape.
  if [[ ${PEERS:-1} == 1 ]] && python3 -c "import torch" 2>/dev/null; then
    python3 "$ROOT/test/gpu/decode_peers.py" 8:32768 8:131072 1:131072 \
      >"$OUT/peers.jsonl" 2>"$OUT/peers.err" || echo "!! decode_peers.py failed (peers.err)"
    python3 - "$OUT" <<'PY'
import json, os, re, sys
out = sys.argv[1]
for line in open(os.path.join(out, "peers.jsonl")):
    if not line.startswith("{"):
        continue
    p = json.loads(line)
    log = os.path.join(out, "bench_bench_dec_hd128_q32kv8_b%d_kv%d.log" % (p["batch"], p["seq_kv"]))
    m = re.search(r"median ([0-9.]+) ms", open(log).read()) if os.path.exists(log) else None
    if not m:
        continue
    ours = float(m.group(1))
    def ratio(k):
        v = p.get(k + "_ms")
        return "%.3fx (%s)" % (v / ours, p.get(k + "_timing")) if isinstance(v, float) else "-"
    print("b%d x %d: ours %.4f ms; cuDNN / ours %s, FA2 / ours %s" % (
        p["batch"], p["seq_kv"], ours, ratio("cudnn_gqa"), ratio("fa2_gqa")))
PY
  fi
  # MQA=1: one KV head (32/1) at batch 1, the split count swept (the split
  # model counts the merge since session 22; 0 = its pick) and the peers.
  if [[ ${MQA:-0} == 1 ]]; then
    for skv in 32768 131072; do
      run "mqa_b1_kv$skv" --kernel "$K/dec_hd128_q32kv1_cfalse" --batch 1 --seq-q 1 \
        --seq-kv "$skv" --kv-splits 0,16,32,64,128 --check none --warmup 20 --iters 200
      grep -E "time:|launch:" "$OUT/mqa_b1_kv$skv.log" | sed "s/^/mqa_b1_kv$skv /"
    done
    python3 "$ROOT/test/gpu/decode_peers.py" --heads 32/1 1:32768 1:131072 \
      >"$OUT/peers_mqa.jsonl" 2>&1 || echo "!! decode_peers.py (MQA) failed"
    cat "$OUT/peers_mqa.jsonl"
  fi
fi
echo "decode: $runs runs, $fails failed (logs in $OUT)"
[[ $fails -eq 0 ]]
