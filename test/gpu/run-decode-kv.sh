#!/usr/bin/env bash
# Decode KV caches on the H200 (issue 20 part 2): every element of O and LSE
# checked against the CPU reference of each sequence's own length (fresh
# random inputs, outputs poisoned) over seq_q 1/2/4/8 x MHA/GQA/MQA x
# head_dim 64/128 x causal, per-sequence lengths that are not multiples of
# the block or the page, mixed in one batch with 1 and 0 (O = 0, LSE =
# -inf), contiguous and paged (pages 16/64/256, a shuffled block table whose
# unused entries name other sequences' pages), forced split counts;
# repeated launches bit-identical; compute-sanitizer (at 3 splits, and
# racecheck at one split on CTAs with no KV block); then the benchmark:
# bf16, head_dim 128, 32 q / 8 kv heads, seq_q 1, batch 8 at 32K and 128K
# and batch 1 at 128K: dense contiguous vs per-sequence contiguous vs paged
# (64-token pages), K+V bandwidth (bytes of K+V read / median time).
# BLASST: BLASST decode with the KV caches (kernels bkv_*): every element of
# O and LSE against the CPU skipping model walking each sequence's own
# length (the vote over the tile's packed rows, each split's first block
# kept) and the statistics [B, Hq, 2] exactly (visited equal, skipped
# within the model's borderline decisions; a sequence of length 0 counts
# nothing), per-sequence lengths contiguous and paged (pages 16/64/256,
# the shuffled table), seq_q 1/4/8, the dial and a fixed threshold, forced
# splits, the a= policy (T per sequence length), 1000 launches, and
# racecheck/memcheck/synccheck.
# Usage: run-decode-kv.sh [KDIR] [OUT]   (KDIR default .device/decode-kv,
# from build-decode-kv-kernels.sh; its bin/blasst-bench is used). Env:
# CHECKS=0, PAGED=0, SANITIZER=0, BENCH=0, BLASST=0, LEANPS=0, OVERLONG=0
# skip a part (OVERLONG: lengths past seq_kv, read as seq_kv)
# (LEANPS: the lean entry with skewed per-sequence lengths, LEANPS_KERNELS
# its kernels' names without _c<causal>; LEANBENCH=1
# adds the mixed-length benchmark, lean entry against the split grid;
# BALBENCH=1 the BLASST one, splits that follow the lengths against the
# split grid, ~70% of blocks skipped (kernels of BALANCED=1); each part
# alone fits a 10-minute device command; ONLY=blasst runs the BLASST part
# alone, BLASST_PS=0 / BLASST_PG=0 / SANITIZER_BLASST=0 leave out its
# contiguous / paged / sanitizer runs); HDS="64" / HDS="128" halves the
# contiguous matrices; TIME_BOX=N (seconds) leaves out the runs that would
# start after N seconds (counted in the last line).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
K="${1:-$ROOT/.device/decode-kv}"; OUT="${2:-${OUT:-/tmp/decode-kv-out}}"; mkdir -p "$OUT"
B="$K/bin/blasst-bench"; fails=0; runs=0
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIPPED: no GPU (nvidia-smi)"; exit 0
fi
boxed=0
run() { local name="$1"; shift
  if ((SECONDS > ${TIME_BOX:-999999})); then boxed=$((boxed + 1)); return; fi
  runs=$((runs + 1))
  "$B" "$@" --json "$OUT/$name.json" >"$OUT/$name.log" 2>&1; local rc=$?
  if [[ $rc -ne 0 ]]; then
    echo "!! $name exited $rc"; grep -E "FAIL|error|launch:" "$OUT/$name.log" | head -n 8
    fails=$((fails + 1))
  fi; }
CHK=(--warmup 0 --iters 1)
# sanitize TAG KERNEL TOOL ARGS..: one compute-sanitizer run of a check (two
# minutes at most: a run that does not finish counts as failed), its
# SUMMARY line, the log as sanitizer_TAGKERNEL_TOOL.log.
sanitize() { local tag="$1" k="$2" tool="$3"; shift 3
  local log="$OUT/sanitizer_${tag}${k}_$tool.log"
  timeout 120 compute-sanitizer --tool "$tool" --error-exitcode 9 "$B" --kernel "$K/$k" \
    "$@" "${CHK[@]}" >"$log" 2>&1
  local rc=$?; echo "$tag$k $tool exit $rc: $(grep -E 'SUMMARY' "$log")"
  [[ $rc -eq 0 ]] || fails=$((fails + 1)); }
if [[ ${ONLY:-} == blasst ]]; then CHECKS=0 PAGED=0 SANITIZER=0 BENCH=0 LEANPS=0 OVERLONG=0; fi
# Length sets: batch 1; 4 mixed with 0 and 1; 6 mixed off every block/page
# boundary; 8 random in [0, 3001] (the first at 3001).
LENSETS=("1:1000" "4:1,0,4097,517" "6:63,257,2049,1,0,3001" "8:random:3001")
lens_args() { # "batch:list" | "batch:random:bound"
  local batch="${1%%:*}" rest="${1#*:}"
  if [[ $rest == random:* ]]; then
    echo "--batch $batch --kv-lengths random --seq-kv ${rest#random:}"
  else echo "--batch $batch --kv-lengths $rest"; fi; }
if [[ ${CHECKS:-1} == 1 ]]; then
  echo "=== per-sequence lengths, contiguous cache, vs the CPU reference ==="
  for hd in ${HDS:-64 128}; do
    for heads in "16 16" "32 8" "8 1" "32 1"; do
      read -r qh kvh <<<"$heads"
      ks=(--kernel "$K/kv_ps_hd${hd}_q${qh}kv${kvh}_cfalse" --kernel "$K/kv_ps_hd${hd}_q${qh}kv${kvh}_ctrue")
      for sq in 1 2 4 8; do
        for i in "${!LENSETS[@]}"; do
          # shellcheck disable=SC2046
          run "ps_hd${hd}_q${qh}kv${kvh}_sq${sq}_l$i" "${ks[@]}" $(lens_args "${LENSETS[$i]}") \
            --seq-q "$sq" --seed $((RANDOM + 1)) "${CHK[@]}" --repeat-launches 2
        done
      done
    done
  done
  # Split boundaries with per-sequence lengths (each sequence split by its
  # own block count; empty splits of short sequences).
  for splits in 1 3 7 16; do
    run "ps_split$splits" --kernel "$K/kv_ps_hd128_q32kv8_cfalse" --kernel "$K/kv_ps_hd128_q32kv8_ctrue" \
      --batch 4 --kv-lengths 1,0,4097,517 --seq-q 4 --kv-splits "$splits" "${CHK[@]}" --repeat-launches 2
  done
  echo "contiguous: $runs runs, $fails failed"
fi
if [[ ${PAGED:-1} == 1 ]]; then
  echo "=== paged caches (pages 16/64/256), vs the CPU reference ==="
  for page in 16 64 256; do
    for k in hd128_q32kv8 hd128_q8kv1 hd64_q32kv1 hd64_q16kv16; do
      ks=()
      for f in "$K"/kv_pg${page}_${k}_c*.cubin; do ks+=(--kernel "${f%.cubin}"); done
      for sq in 1 2 4 8; do
        for i in "${!LENSETS[@]}"; do
          # shellcheck disable=SC2046
          run "pg${page}_${k}_sq${sq}_l$i" "${ks[@]}" $(lens_args "${LENSETS[$i]}") \
            --seq-q "$sq" --seed $((RANDOM + 1)) "${CHK[@]}" --repeat-launches 2
        done
      done
    done
    for splits in 1 3 16; do
      run "pg${page}_split$splits" --kernel "$K/kv_pg${page}_hd128_q32kv8_ctrue" \
        --batch 4 --kv-lengths 1,0,4097,517 --seq-q 8 --kv-splits "$splits" "${CHK[@]}"
    done
  done
  # One length for the batch over a paged cache; 1000 launches bit-identical.
  run pg64u --kernel "$K/kv_pg64u_hd128_q32kv8_ctrue" --batch 3 --seq-q 2 --seq-kv 1001 "${CHK[@]}"
  run pg16_1000launch --kernel "$K/kv_pg16_hd128_q32kv8_ctrue" --batch 8 --kv-lengths random \
    --seq-kv 4099 --seq-q 4 "${CHK[@]}" --repeat-launches 1000
  echo "paged: $runs runs, $fails failed"
fi
if [[ ${SANITIZER:-1} == 1 ]] && command -v compute-sanitizer >/dev/null; then
  echo "=== compute-sanitizer racecheck and memcheck, 3 KV splits ==="
  for k in kv_pg16_hd128_q32kv8_ctrue kv_pg256_hd64_q32kv1_ctrue kv_ps_hd128_q32kv8_ctrue; do
    for tool in racecheck memcheck; do
      sanitize "" "$k" "$tool" --batch 4 --kv-lengths 1,0,1500,517 --seq-q 8 --kv-splits 3
    done
  done
  # CTAs with no KV block (one split, a 0-length sequence last, first,
  # alone): racecheck hung on them in 5 of 9 runs until the load role's
  # threads stayed for the consumer's release of Q (the drain, session 38).
  for lens in 517,0 0,517 0; do
    sanitize "one_split_${lens//,/_}_" kv_ps_hd128_q32kv8_ctrue racecheck \
      --batch $(($(tr -cd , <<<"$lens" | wc -c) + 1)) --kv-lengths "$lens" --seq-q 4 --kv-splits 1
  done
fi
if [[ ${OVERLONG:-1} == 1 ]]; then
  # Hardening: lengths past the caller's bound seq_kv (--kv-overlong: every
  # sequence of length seq_kv is passed as seq_kv + 10^6): each kernel reads
  # such a length as seq_kv, so O and LSE equal the reference at seq_kv, and
  # the cp.async copies of a contiguous cache read nothing past it (memcheck,
  # the last sequence overlong). Dense: the lean entry (no forced splits) and
  # the split grid; paged; BLASST (the kernels of this KDIR that exist).
  echo "=== lengths past seq_kv, read as seq_kv ==="
  OL=(--seq-kv 4096 --kv-overlong 1000000 --seq-q 4)
  for k in kv_ps_hd128_q32kv8_ctrue kv_pg64_hd128_q32kv8_ctrue bkv_ps_hd128_q32kv8_ctrue bkv_pg64_hd128_q32kv8_ctrue; do
    [[ -f $K/$k.cubin ]] || continue
    bl=(); [[ $k == b* ]] && bl=(--dial 0.7 --stats)
    for splits in 0 3; do
      run "overlong_${k}_s$splits" --kernel "$K/$k" --batch 4 --kv-lengths 1,4096,517,4096 "${OL[@]}" \
        --kv-splits $splits "${bl[@]}" "${CHK[@]}"
    done
  done
  if [[ ${OVERLONG_SANITIZER:-${SANITIZER:-1}} == 1 ]] && command -v compute-sanitizer >/dev/null && [[ -f $K/kv_ps_hd128_q32kv8_ctrue.cubin ]]; then
    for splits in 0 3; do
      sanitize "overlong_s${splits}_" kv_ps_hd128_q32kv8_ctrue memcheck --batch 2 --kv-lengths 517,4096 "${OL[@]}" --kv-splits $splits
    done
  fi
  echo "overlong: $runs runs, $fails failed"
fi
if [[ ${LEANPS:-1} == 1 ]]; then
  # The lean entry with per-sequence lengths (every dense per-sequence launch
  # without a forced split count takes it): lengths that put most of the
  # batch's blocks in one sequence, many empty sequences (before, between
  # and after the long ones), every sequence empty, many short sequences
  # (CTAs whose shares span several tiles), MHA / GQA / MQA, head_dim 64 and
  # 128, contiguous and paged; 1000 launches; racecheck / memcheck.
  echo "=== the lean entry with per-sequence lengths vs the CPU reference ==="
  p0=$runs; pf=$fails
  SKEW=("16:20000,0,0,0,1,0,0,0,0,0,0,0,0,0,0,3" "33:random:9000" "5:60000,100,0,7000,1"
        "64:random:600" "12:0,0,0,0,0,0,0,0,0,0,0,0" "3:0,0,70000" "9:1,1,1,1,1,1,1,1,130")
  for k in ${LEANPS_KERNELS:-kv_ps_hd128_q32kv8 kv_ps_hd64_q16kv16 kv_ps_hd128_q8kv1 \
           kv_ps_hd128_q32kv1 kv_pg16_hd128_q32kv8 kv_pg64_hd128_q32kv8 kv_pg256_hd128_q32kv8 \
           kv_pg256_hd64_q32kv1 kv_pg64_hd128_q8kv1}; do
    ks=()
    for f in "$K"/${k}_c*.cubin; do ks+=(--kernel "${f%.cubin}"); done
    for sq in 1 4 8; do
      for i in "${!SKEW[@]}"; do
        # shellcheck disable=SC2046
        run "leanps_${k}_sq${sq}_l$i" "${ks[@]}" $(lens_args "${SKEW[$i]}") \
          --seq-q "$sq" --seed $((RANDOM + 1)) "${CHK[@]}" --repeat-launches 2
      done
    done
  done
  echo "launches by the lean entry: $(cat "$OUT"/leanps_*.log | grep -c 'the lean entry') of $(cat "$OUT"/leanps_*.log | grep -c 'launch:')"
  run leanps_1000launch --kernel "$K/kv_ps_hd128_q32kv8_ctrue" --batch 33 --kv-lengths random \
    --seq-kv 9000 --seq-q 4 "${CHK[@]}" --repeat-launches 1000
  if [[ ${SANITIZER:-1} == 1 ]] && command -v compute-sanitizer >/dev/null; then
    for k in kv_ps_hd128_q32kv8_ctrue kv_pg16_hd128_q32kv8_ctrue; do
      for tool in racecheck memcheck; do
        sanitize leanps_ "$k" "$tool" --batch 9 --kv-lengths 0,3001,1,0,517,64,0,2000,9 --seq-q 4
      done
    done
  fi
  echo "lean with per-sequence lengths: $((runs - p0)) runs, $((fails - pf)) failed"
fi
# mixbench TAG "KERNELS" [ARGS..]: every length set of MIX on every kernel
# (seq_q 1, one row checked, 200 timed launches; ARGS added), named
# TAG_<kernel>_m<set>, and its launch, time, bandwidth and skip lines.
mixbench() { local tag="$1" kernels="$2"; shift 2
  local i k name
  for i in "${!MIX[@]}"; do
    for k in $kernels; do
      name="${tag}_${k}_m$i"
      # shellcheck disable=SC2046
      run "$name" --kernel "$K/$k" $(lens_args "${MIX[$i]}") --seq-q 1 "$@" \
        --check rows:1 --warmup 20 --iters 200
      grep -E "launch:|time:|bandwidth:|skipped" "$OUT/$name.log" | sed "s/^/$name /"
    done
  done; }
if [[ ${LEANBENCH:-0} == 1 ]]; then
  # Mixed lengths: the per-sequence kernel (its lean entry) against the
  # same kernel without the entry (the split grid sized by the longest
  # sequence), contiguous and paged (pages of 64); the dense kernel of one
  # length where the lengths are equal. bf16, head_dim 128, 32/8, seq_q 1;
  # the bandwidth counts each sequence's own K+V bytes.
  echo "=== benchmark: per-sequence lengths, lean entry vs split grid ==="
  MIX=("8:131072,8192,8192,8192,8192,8192,8192,8192" "4:131072,1024,1024,1024"
       "16:random:32768" "32:random:16384" "64:random:8192" "128:random:4096"
       "8:32768,32768,32768,32768,32768,32768,32768,32768" "1:131072" "17:random:16384")
  mixbench leanbench "bench_kv_perseq bench_kv_perseq_split bench_kv_paged64 bench_kv_paged64_split"
  for shape in "8 32768" "1 131072" "17 16384"; do
    read -r batch skv <<<"$shape"
    name="leanbench_dense_b${batch}_kv${skv}"
    run "$name" --kernel "$K/bench_kv_dense" --batch "$batch" --seq-q 1 --seq-kv "$skv" \
      --check rows:1 --warmup 20 --iters 200
    grep -E "launch:|time:|bandwidth:" "$OUT/$name.log" | sed "s/^/$name /"
  done
fi
if [[ ${BALBENCH:-0} == 1 ]]; then
  # BLASST decode over mixed lengths (~70% of blocks cold on the dial):
  # splits that follow the lengths (bench_bkv_perseq_bal) against the split
  # grid sized by the longest sequence (bench_bkv_perseq_split). bf16,
  # head_dim 128, 32/8, seq_q 1; each sequence's own K+V bytes counted.
  echo "=== benchmark: BLASST decode, per-sequence lengths, balanced vs split grid ==="
  MIX=("8:131072,8192,8192,8192,8192,8192,8192,8192" "4:131072,1024,1024,1024"
       "16:random:32768" "32:random:16384" "64:random:8192" "128:random:4096"
       "17:random:16384" "8:32768,32768,32768,32768,32768,32768,32768,32768" "1:131072")
  mixbench balbench "bench_bkv_perseq_bal bench_bkv_perseq_split" --dial 0.7
fi
if [[ ${BLASST:-1} == 1 ]]; then
  echo "=== BLASST decode with the KV caches vs the CPU skipping model (every element, stats) ==="
  # Even length sets on the dial, odd ones at a fixed threshold.
  SKIPS=("--dial 0.7" "--log2-threshold -2")
  SQS=(8 1 4 8) # paged: seq_q per length set
  for hd in ${HDS:-64 128}; do
    [[ ${BLASST_PS:-1} == 1 ]] || break
    for heads in "16 16" "32 8" "32 1"; do
      read -r qh kvh <<<"$heads"
      ks=(--kernel "$K/bkv_ps_hd${hd}_q${qh}kv${kvh}_cfalse" --kernel "$K/bkv_ps_hd${hd}_q${qh}kv${kvh}_ctrue")
      for sq in 1 8; do
        for i in "${!LENSETS[@]}"; do
          # shellcheck disable=SC2046
          run "bps_hd${hd}_q${qh}kv${kvh}_sq${sq}_l$i" "${ks[@]}" $(lens_args "${LENSETS[$i]}") \
            ${SKIPS[$((i % 2))]} --stats --seq-q "$sq" --seed $((RANDOM + 1)) "${CHK[@]}" --repeat-launches 2
        done
      done
    done
  done
  for splits in 1 3 7 16; do
    [[ ${BLASST_PS:-1} == 1 ]] || break
    run "bps_split$splits" --kernel "$K/bkv_ps_hd128_q32kv8_cfalse" --kernel "$K/bkv_ps_hd128_q32kv8_ctrue" \
      --batch 4 --kv-lengths 1,0,4097,517 --seq-q 4 --kv-splits "$splits" --dial 0.8 --stats "${CHK[@]}" --repeat-launches 2
  done
  for page in 16 64 256; do
    [[ ${BLASST_PG:-1} == 1 ]] || break
    for k in hd128_q32kv8 hd128_q8kv1 hd64_q32kv1 hd64_q16kv16; do
      ks=()
      for f in "$K"/bkv_pg${page}_${k}_c*.cubin; do ks+=(--kernel "${f%.cubin}"); done
      for i in "${!LENSETS[@]}"; do
        sq=${SQS[$i]}
        # shellcheck disable=SC2046
        run "bpg${page}_${k}_sq${sq}_l$i" "${ks[@]}" $(lens_args "${LENSETS[$i]}") \
          ${SKIPS[$((i % 2))]} --stats --seq-q "$sq" --seed $((RANDOM + 1)) "${CHK[@]}" --repeat-launches 2
      done
    done
    for splits in 1 3 16; do
      run "bpg${page}_split$splits" --kernel "$K/bkv_pg${page}_hd128_q32kv8_ctrue" \
        --batch 4 --kv-lengths 1,0,4097,517 --seq-q 8 --kv-splits "$splits" --dial 0.8 --stats "${CHK[@]}"
    done
  done
  if [[ ${BLASST_PG:-1} == 1 ]]; then
    # One length for the batch, paged; the a= policy (T = log2 64 - log2 of
    # each sequence's length); 1000 launches bit-identical.
    run bpg64u --kernel "$K/bkv_pg64u_hd128_q32kv8_ctrue" --batch 3 --seq-q 2 --seq-kv 1001 --dial 0.7 --stats "${CHK[@]}"
    for lens in "4:1,0,4097,517" "8:random:40000"; do
      # shellcheck disable=SC2046
      run "bpg_a_${lens%%:*}" --kernel "$K/bkv_a_pg64_hd128_q32kv8_ctrue" $(lens_args "$lens") \
        --seq-q 4 --dial 0.7 --stats "${CHK[@]}"
    done
    run bpg16_1000launch --kernel "$K/bkv_pg16_hd128_q32kv8_ctrue" --batch 8 --kv-lengths random \
      --seq-kv 4099 --seq-q 4 --dial 0.7 --stats "${CHK[@]}" --repeat-launches 1000
  fi
  if command -v compute-sanitizer >/dev/null; then
    for k in bkv_pg16_hd128_q32kv8_ctrue bkv_ps_hd64_q32kv1_ctrue; do
      [[ ${SANITIZER_BLASST:-1} == 1 ]] || break
      for tool in racecheck memcheck synccheck; do
        if ((SECONDS > ${TIME_BOX:-999999})); then boxed=$((boxed + 1)); continue; fi
        sanitize "" "$k" "$tool" --batch 4 --kv-lengths 1,0,1500,517 --seq-q 8 --kv-splits 3 \
          --dial 0.7 --stats
      done
    done
  fi
  echo "BLASST with the KV caches: $runs runs, $fails failed"
fi
if [[ ${BENCH:-1} == 1 ]]; then
  echo "=== benchmark: bf16 hd128 32/8 heads, seq_q 1: K+V bandwidth ==="
  for shape in "8 32768" "8 131072" "1 131072"; do
    read -r batch skv <<<"$shape"
    for k in bench_kv_dense bench_kv_perseq bench_kv_paged64; do
      name="bench_${k}_b${batch}_kv${skv}"
      run "$name" --kernel "$K/$k" --batch "$batch" --seq-q 1 --seq-kv "$skv" \
        --check rows:1 --warmup 20 --iters 200
      grep -E "launch:|time:|bandwidth:" "$OUT/$name.log" | sed "s/^/$name /"
    done
  done
fi
echo "decode-kv: $runs runs, $fails failed, $boxed left out by TIME_BOX (logs in $OUT)"
[[ $fails -eq 0 ]]
