//===- AttnToWS.cpp - Build each target's warp-specialized schedule -------===//
//
// sm_90a follows FlashAttention-3: a producer warpgroup whose elected thread
// issues TMA, and two consumer warpgroups ("2Q") of 64 rows sharing the K/V
// stages, with S, P, O in registers. sm_100a follows the FlashAttention-4
// organisation: a load warp, a single-thread-issue MMA warp, two softmax
// warpgroups of 128 rows, a correction warpgroup and an epilogue warp, with
// S, P and O in tensor memory.
//
//===----------------------------------------------------------------------===//
#include "blasst/Conversion/AttnToWS/AttnToWS.h"
#include "blasst/Conversion/Passes.h"
#include "blasst/Dialect/WS/Transforms/Passes.h"

#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#include <algorithm>

namespace blasst {
#define GEN_PASS_DEF_CONVERTATTNTOWS
#include "blasst/Conversion/Passes.h.inc"
} // namespace blasst

using namespace mlir;
using namespace blasst;
using namespace blasst::ws;

ws::Target blasst::toWSTarget(blasst::Target target) {
  switch (target) {
  case blasst::Target::SM90a:
    return ws::Target::sm_90a;
  case blasst::Target::SM100a:
    return ws::Target::sm_100a;
  }
  llvm_unreachable("unknown target");
}

/// Whether dense decode with these (resolved) options can carry a lean
/// entry (resolveSchedule): what lean CTAs are built for, on the kernel
/// the entry sits beside.
static bool leanEntryFits(const AttentionSpec &spec, const ScheduleOptions &o) {
  return o.target == blasst::Target::SM90a && spec.phase == Phase::Decode &&
         spec.sparsity.isDense() &&
         (spec.headDim == 128 || spec.headDim == 64 || spec.headDim == 256) &&
         spec.headDimV == spec.headDim && !o.persistent.value_or(false) &&
         !o.lean.value_or(false) && o.kvCpAsync.value_or(false) &&
         o.kvSplits.value_or(0) == 0 && !o.splitInterleave.value_or(false) &&
         o.ctasPerSm.value_or(1) == 1 && o.blockN * spec.headDim == 64 * 128 &&
         64 % spec.gqaRatio() == 0 && !o.balancedSplits.value_or(false);
}

/// Whether dense decode with these (resolved) options can carry a TMA entry
/// (`<kernel>_tma`; resolveSchedule): the cp.async split grid at head_dim
/// 128 over a contiguous cache of one length, the one the entry replaces on
/// GPUs of lower DRAM bandwidth (rt::preferTmaDecode). With per-sequence
/// lengths the runtime launches the lean entry; paged caches keep cp.async.
static bool tmaEntryFits(const AttentionSpec &spec, const ScheduleOptions &o) {
  return o.target == blasst::Target::SM90a && spec.phase == Phase::Decode &&
         spec.sparsity.isDense() && spec.headDim == 128 &&
         spec.headDimV == spec.headDim && !spec.paged() &&
         !spec.kvPerSequence && o.kvCpAsync.value_or(false) &&
         !o.persistent.value_or(false) && !o.lean.value_or(false) &&
         !o.splitInterleave.value_or(false) &&
         !o.balancedSplits.value_or(false) && o.ctasPerSm.value_or(1) == 1;
}

/// The knobs of the TMA entry of a kernel built from `knobs` (what was
/// asked): K/V by TMA, the rest as asked, TMA's defaults resolved for it
/// (its ring: 2 stages at head_dim 128, the depth measured fastest).
static ScheduleOptions tmaEntryKnobs(const ScheduleOptions &knobs) {
  ScheduleOptions e = knobs;
  e.kvCpAsync = e.tmaEntry = e.leanEntry = false;
  return e;
}

/// Whether prefill with these (resolved) options can carry a short-sequence
/// entry (`<kernel>_short`; resolveSchedule, shortEntryKnobs): the
/// one-CTA-per-tile sm_90a kernel at head_dim 128 with blocks wider than
/// kShortEntryBlockN keys, or at head_dim 64 with the overlap and blocks
/// wider than kShortEntryTwoCtaBlockN keys (the entry: two CTAs per SM);
/// dense or BLASST. An entry's blocks are narrower than its kernel's (the
/// runtime and findLoweredKernel rely on it).
static bool shortEntryFits(const AttentionSpec &spec,
                           const ScheduleOptions &o) {
  bool wide = spec.headDim == 128 && o.blockN > kShortEntryBlockN;
  // The plain schedule spills 24 bytes in two CTAs' 104 registers.
  bool twoCtas = spec.headDim == 64 && o.overlap.value_or(false) &&
                 o.blockN > kShortEntryTwoCtaBlockN;
  return o.target == blasst::Target::SM90a && spec.phase == Phase::Prefill &&
         spec.headDimV == spec.headDim && (wide || twoCtas) &&
         o.blockM == 128 && !o.persistent.value_or(false) &&
         !o.kvMulticast.value_or(false) && o.ctasPerSm.value_or(1) == 1;
}

/// The knobs of the short-sequence entry of a kernel built from `knobs`
/// (what was asked; resolveSchedule resolves the rest for the entry): at
/// head_dim 128 the same with kShortEntryBlockN-key blocks, dense ones with
/// persistent CTAs (session 46); at head_dim 64
/// two CTAs per SM with 64-key blocks in 3 stages, P (and Q) in shared
/// memory and 24 / 104 registers (Schedule.h).
static ScheduleOptions shortEntryKnobs(const AttentionSpec &spec,
                                       const ScheduleOptions &knobs) {
  ScheduleOptions e = knobs;
  e.shortEntry = false;
  if (spec.headDim == 64) {
    e.ctasPerSm = 2;
    e.blockN = kShortEntryTwoCtaBlockN;
    e.stages = kShortEntryTwoCtaStages;
    e.pInRegisters = e.qInRegisters = false;
    e.producerRegs = kShortEntryTwoCtaProducerRegs;
    e.consumerRegs = kShortEntryTwoCtaConsumerRegs;
  } else {
    e.blockN = kShortEntryBlockN;
    // Dense: persistent CTAs (their tile loops overlap one tile's end with
    // the next one's loads). BLASST keeps one CTA per tile: V on demand
    // needs it.
    e.persistent = spec.sparsity.kind == SparsityKind::None;
  }
  return e;
}

/// The registers of lean decode CTAs' warpgroups (sm_90a; 0: the decode
/// default). At head_dim 64 the item loop's state beside S (64 x 128 f32 at
/// 128-key blocks) made ptxas spill 4-136 bytes in the compute warpgroup at
/// 240 registers (one KV head, causal paged caches) and 32-48 at 248, and
/// those kernels ran up to 27% slower than the split grid; at 256 beside
/// the load warpgroup's setmaxnreg.dec ptxas ignored both (C7507). So both
/// warpgroups keep the 256 registers a 256-thread CTA starts with (no
/// setmaxnreg; nothing to move at one CTA per SM): no spills in the matrix,
/// and the entry 3-18% faster than the split grid at 13 of 14 shapes where
/// it is taken with one KV head, 2.5% slower at the 14th
/// (docs/results/2026-12-04-session30.md §3). At head_dim 256 alike (with
/// 32-key blocks; resolveSchedule): below 256 the compute warpgroup spilled.
static int64_t leanRegs(const AttentionSpec &spec) {
  return spec.headDim == 64 || spec.headDim > 128 ? 256 : 0;
}

ScheduleOptions blasst::resolveSchedule(const AttentionSpec &spec,
                                        ScheduleOptions o) {
  bool hopper = o.target == blasst::Target::SM90a;
  // Decode (sm_90a): one consumer warpgroup of 64 rows holds the seq_q
  // tokens of all q heads of a KV head (q_group). head_dim 128: 64-key
  // blocks in 2 stages (82 KB of shared memory), measured 4-6% more K+V
  // bandwidth than 128-key blocks in 3 stages and than deeper 64-key rings
  // (3, 4, 6 stages) at every benchmark point (docs/results/
  // 2026-12-01-session12.md §2); head_dim 64: 128-key blocks in 4 stages
  // (not re-measured).
  bool decode = hopper && spec.phase == Phase::Decode;
  if (!o.blockM)
    o.blockM = decode ? 64 : hopper ? 128 : 256;
  // BLASST decode at head_dim 256: 32-key blocks in 5 stages with V on
  // demand (below): a skipped block then moves only its 16 KB K tile, and
  // K streams up to 5 blocks ahead (192 KB of shared memory with Q and the
  // sink). H200 (docs/results/2026-12-02-session20.md §1): 1.55x of dense
  // at ~70% skipped (batch 1 x 128K and batch 8 x 32K), 1.72-1.76x at ~88%,
  // 1.05-1.06x with nothing skippable; V always copied (64-key blocks, 2
  // stages): 1.00x at every level (session 19 §6).
  bool decode256Blasst =
      decode && spec.headDim > 128 && !spec.sparsity.isDense();
  // Lean CTAs at head_dim 256 (dense): the same 32-key blocks in 5 stages.
  // With the split grid's 64-key blocks in 2 stages ptxas spilled 340 bytes
  // in the compute warpgroup (the item loop's state beside O's 128
  // registers); with 32-key blocks none, at 4 or 5 stages, once both
  // warpgroups keep 256 registers (leanRegs; causal with LSE spilled 112
  // bytes at 240 / 128 and 12 at 248 / 40).
  bool decode256Lean = decode && spec.headDim > 128 && o.lean.value_or(false);
  if (decode && !o.blockN)
    o.blockN = decode256Blasst || decode256Lean ? 32
               : spec.headDim > 64              ? 64
                                                : 128;
  // BLASST decode at head_dim 128 takes 4 stages (144 KB): with V on demand
  // a skipped block moves only its K tile, and the load role streams K as
  // many blocks ahead as the ring is deep (blasst-v-on-demand's k-ahead), so
  // the ring's depth is what keeps a run of skipped blocks bandwidth-bound:
  // 4 x 16 KB of K in flight per CTA, what 2 stages of K and V give dense
  // decode (not measured yet).
  // At head_dim 256 a stage of K and V is 64 KB: 2 stages (160 KB with Q).
  // Dense decode (contiguous KV cache, one length or per sequence, or
  // paged) copies K/V with cp.async from the load warpgroup's 128 threads:
  // TMA's bandwidth depends sharply on the bytes in flight per SM
  // (4.12-4.45 TB/s streaming batch 8 x 128K into shared memory), cp.async's
  // does not (4.51-4.56). H200, same calls
  // (docs/results/2026-12-04-session26.md): 32/8 head_dim 128 3-5% faster
  // (batch 8 x 32K / 128K, batch 1 x 128K: 1.01 / 1.00 / 1.02x cuDNN, TMA
  // 0.96-0.98x), head_dim 64 up to 18%, head_dim 256 8-10%, MQA 32/1 within 4%
  // either way; paged (session 27) 0.2-1.9% faster than TMA at 3 stages
  // and 2.9-4.9% at 6 (pages of 64; of 16: 9-17%), head_dim 256 6%. BLASST
  // decode (V on demand, votes in the load role) and persistent CTAs
  // walking splits keep TMA; lean CTAs take cp.async (below).
  // 3 stages: the depth at which the streaming measurement held its bandwidth
  // whatever the consumer's delay per block (2 stages lost up to 8% to a
  // 1000-cycle delay); head_dim 256 keeps 2 (64 KB a stage). Two CTAs per SM
  // keep TMA: their register budget (128 per thread at entry) leaves the load
  // warpgroup 24, too few for its copies' addresses.
  // Lean CTAs (persistent, sharing all tiles' blocks) copy by cp.async too:
  // the rings continue across a CTA's parts as they do with TMA (H200,
  // docs/results/2026-12-04-session29.md §1: 2-4% faster than lean by TMA
  // at 24 of 25 shapes; 11% slower at batch 1 x 8K, 8 blocks a CTA).
  // Persistent CTAs walking splits keep TMA.
  if (decode && !o.kvCpAsync.has_value())
    o.kvCpAsync = spec.sparsity.isDense() &&
                  (o.lean.value_or(false) || !o.persistent.value_or(false)) &&
                  o.ctasPerSm.value_or(1) == 1;
  // A paged cache takes 6 stages: each block (64-token pages) or quarter
  // block (16) starts at a page of its own, and the deeper ring hides what
  // that costs (H200, 32/8 head_dim 128, pages of 64 against the contiguous
  // cache: 3 stages +5.3-5.7%, 4 +4.2-5.0%, 6 +3.5-4.0%; contiguous itself
  // is 2-3% slower with 4 stages than 3; head_dim 64 (128-key blocks) 7.7%
  // at 3, 6.0% at 6; docs/results/2026-12-04-session27.md). Pages of 4 blocks
  // or more (256 tokens at head_dim 128) behave as the contiguous cache: 3
  // stages, 0.6-1.6% faster than 6 in the same call (2.2 / 2.3 / 1.8% over
  // contiguous at batch 8 x 32K / 128K, batch 1 x 128K, against 2.5-3.8%;
  // docs/results/2026-12-04-session28.md). head_dim 64's 128-key blocks
  // (pages of at most 2 blocks) were not timed there and keep 6.
  if (decode && o.kvCpAsync.value_or(false) && !o.stages &&
      spec.headDim <= 128 && spec.sparsity.isDense())
    o.stages = spec.paged() && spec.kvPageSize < 4 * o.blockN ? 6 : 3;
  if (decode && !o.stages)
    o.stages = spec.headDim > 128  ? (decode256Blasst || decode256Lean ? 5 : 2)
               : spec.headDim > 64 ? (spec.sparsity.isDense() ? 2 : 4)
                                   : 4;
  // sm_90a: FlashAttention-3's schedule (the intra-warpgroup overlap with P
  // in registers; block_n 176 at head_dim 128 and 80 at head_dim 256, as
  // FA3), the fastest measured, dense and with BLASST
  // (docs/results/2026-11-29-fa3-overlap.md, 2026-11-29-blasst-overlap.md,
  // 2026-11-29-hd256.md). Without the causal mask, head_dim 128 takes
  // 192-key blocks: no spills there, dense 0.1-0.7% and BLASST up to 3.4%
  // (92% skipped) faster at 64K; with the mask 192 spills 4-20 bytes and
  // BLASST was up to 1.3% slower (docs/results/2026-11-29-session6.md §7).
  if (!o.overlap.has_value())
    o.overlap = hopper;
  if (!o.pInRegisters.has_value())
    o.pInRegisters = hopper && *o.overlap;
  if (!o.pingpong.has_value())
    o.pingpong = false;
  // lean is a way for persistent decode CTAs to share the work (left unset
  // unless asked for: the other kernels' records and keys unchanged).
  if (o.lean.value_or(false) && !o.persistent.has_value())
    o.persistent = true;
  if (!o.persistent.has_value())
    o.persistent = false;
  // sm_90a decode with one CTA per split: the merge kernel beside the
  // in-kernel merge, the runtime picks per launch (the split model: the
  // last split's round trips against a second launch). H200: MQA 32/1 at
  // batch 1 1.7-2.3x faster, 32/8 at seq_q 8 and 64/8 at seq_q 4-8 up to
  // 1.4x, 32/8 at seq_q 1 and batch 1 up to 13% slower by the merge kernel,
  // which the model leaves to the in-kernel merge
  // (docs/results/2026-12-04-session25.md). Persistent and lean CTAs merge
  // in the kernel.
  // Splits that follow per-sequence lengths (balanced_splits): the default
  // of BLASST decode over per-sequence lengths with one CTA per split
  // (dense decode there takes the lean entry). Their tiles' split counts
  // are on the device, so with a CTA budget the last split merges; the
  // merge kernel takes the launches of S splits per tile (budget -S: the
  // split grid's slots), which the runtime gives the launches the split
  // model pairs with it (MQA, seq_q 4-8).
  if (decode && hopper && !o.balancedSplits.has_value() &&
      !spec.sparsity.isDense() && spec.kvPerSequence && !*o.persistent)
    o.balancedSplits = true;
  if (decode && hopper && !o.mergeKernel.has_value())
    o.mergeKernel = !*o.persistent;
  if (!o.qInRegisters.has_value())
    o.qInRegisters = false;
  if (!o.kvMulticast.has_value())
    o.kvMulticast = false;
  // BLASST on the overlap schedule copies V only for kept blocks: 3-5% faster
  // at 72% skipped, 6-12% at 92%, within noise with nothing skipped
  // (docs/results/2026-11-29-session8.md). The same rule as
  // blasst-v-on-demand's mode=auto. Above head_dim 128 prefill's consumers
  // (80-key blocks) spill 12 B with it: not by default there; decode takes
  // 32-key blocks there (above) and V on demand.
  // A speculation depth asks for V on demand (where it cannot be done the
  // pass says why instead of dropping the knob).
  if (!o.vOnDemand.has_value() && o.vSpeculateAfter.has_value())
    o.vOnDemand = true;
  if (!o.vOnDemand.has_value())
    o.vOnDemand = hopper && !spec.sparsity.isDense() &&
                  (spec.headDim <= 128 || decode) && *o.overlap &&
                  !*o.pingpong && !*o.persistent && !*o.kvMulticast;
  // Two kept blocks in a row before a V copy that does not wait for its
  // votes: K = 1 / 2 / 3 measured (docs/results/2026-11-29-session9.md §3).
  // Decode: four (0 / 1 / 2 / 4 measured with the V-first load loop,
  // docs/results/2026-12-02-session14.md §1: 4 is within 1-2% of the best
  // of them at ~0%, ~70% and ~87% skipped; 1 and 2 copy V tiles of skipped
  // blocks, 0 waits for every vote).
  if (*o.vOnDemand && !o.vSpeculateAfter.has_value())
    o.vSpeculateAfter = ws::defaultVSpeculateAfter(decode);
  // BLASST decode: each split votes against the sink's scores from its
  // first block on (blasst-insert-vote's sink seed). Other kernels walk the
  // sequence from block 0: left unset (their records and keys unchanged).
  if (!o.sinkSeed.has_value() && decode && hopper && !spec.sparsity.isDense())
    o.sinkSeed = true;
  // With the sink seed each split's first block is voted on like the others
  // (blasst-insert-vote's vote-first-block); where the seed is off, so is
  // it (asked for there, the pass says why not).
  if (!o.voteFirstBlock.has_value() && o.sinkSeed.has_value())
    o.voteFirstBlock = *o.sinkSeed;
  // Decode: the KV splits take one contiguous range each, or chunks of
  // split_chunk blocks in turn (split-interleave). BLASST decode takes
  // single blocks in turn: the blocks attention keeps come in runs (a local
  // window, a retrieved passage), and a contiguous split that holds a run
  // keeps the whole launch waiting. H200, batch 1 x 128K at ~72% skipped
  // with warm runs of 4 / 8 / 16 blocks (blasst-bench --dial-runs):
  // contiguous 1.31 / 1.27 / 1.12x of dense, interleaved 1.40 / 1.40 /
  // 1.41x; independently drawn blocks 1.38x (contiguous 1.39x); batch 8
  // within 1% or better (docs/results/2026-12-02-session20.md §2). Dense
  // decode has nothing to balance: contiguous. Other kernels: left unset
  // (their records and keys unchanged). A chunk size asks for interleaving
  // (elsewhere the pass says why not).
  if (decode && !o.splitInterleave.has_value())
    o.splitInterleave = o.splitChunk.has_value() || !spec.sparsity.isDense();
  if (decode && *o.splitInterleave && !o.splitChunk.has_value())
    o.splitChunk = 1;
  // FA3's tiles need the overlap with P in registers (ping-pong on top of it
  // spills at block_n 176; with P in shared memory it does not fit). Above
  // head_dim 128, O alone takes head_dim / 2 registers per thread: with S
  // and P in flight too, 80-key blocks are the most that fit.
  bool fa3 = hopper && *o.overlap && *o.pInRegisters && !*o.pingpong;
  // Q in registers takes head_dim / 4 more registers per thread: at
  // head_dim 128 FA3's tiles then fit with 144-key blocks (176 and 160
  // spill and serialise the wgmmas, C7512). A persistent CTA holds its
  // tile's state (row, head, output addresses) across the KV loop: with
  // 240 registers 176 and 192 spilled 8-24 bytes there; with the 232 it
  // gets (below) 160 spills 8 (causal), 144 none.
  if (!o.blockN)
    o.blockN = (hopper && spec.headDim > 128) ? (fa3 ? 80 : 64)
               : (fa3 && spec.headDim == 128) ? (*o.qInRegisters ? 144
                                                 : *o.persistent ? 144
                                                 : spec.causal   ? 176
                                                                 : 192)
                                              : 128;
  if (!o.stages)
    o.stages = 2;
  // cp.async K/V: each of the 128 load threads computes its copies'
  // addresses (64-bit) and row bounds (paged: its rows' table entries).
  // ptxas spilled 8-20 bytes at 64 (head_dim 256 contiguous; head_dim 64
  // and 128 paged), at 72 (128, per-sequence lengths and pages) and at
  // 80-120 (256): 80, and 128 at head_dim 256, assemble the decode matrix
  // (head_dim 64/128/256, 32/8, 32/1 and 9/3 heads, causal, contiguous,
  // per-sequence, pages of 16-256) without.
  // (Lean CTAs at head_dim 64: leanRegs. Lean CTAs over per-sequence
  // lengths, or pages by cp.async, at head_dim 128: 96; since session 32's
  // part bounds (empty tiles, the slots) 80 spilled 4 bytes there
  // (per-sequence 32/8 with 16-token pages, 16/16 with 64-token pages of
  // one length), 88-96 none, and a TMA load role over per-sequence lengths
  // spilled 28 bytes at 24, none at 48; one CTA per SM leaves the
  // registers unused otherwise.)
  if (!o.producerRegs && decode && o.lean.value_or(false) && leanRegs(spec))
    o.producerRegs = leanRegs(spec);
  if (!o.producerRegs && decode && o.lean.value_or(false) &&
      spec.headDim <= 128 &&
      (spec.kvPerSequence || (spec.paged() && o.kvCpAsync.value_or(false))))
    o.producerRegs = 96;
  if (!o.producerRegs && o.kvCpAsync.value_or(false))
    o.producerRegs = spec.headDim > 128 ? 128 : 80;
  // BLASST decode with a paged cache: the load role holds a block's table
  // entries for the K copies streamed ahead and for the on-demand V copy;
  // at 24 registers ptxas spilled 4-8 bytes (head_dim 64, 16-token pages:
  // 8 pages per 128-key block); with V first (V(n)'s entries and copies
  // before K(n + A)'s) 32 spill 4 bytes (MQA 32/1, causal), 40 none; with
  // the K copy depth following the decisions (two K copies per iteration,
  // each with its table entries, and 5 decisions carried) 40 spill 4 bytes
  // (GQA 32/8 causal, 16-token pages), 48 none.
  if (!o.producerRegs && decode && !spec.sparsity.isDense() &&
      spec.paged())
    o.producerRegs = 48;
  // The lean entry: dense decode by cp.async with one CTA per split also
  // carries a lean kernel (`<kernel>_lean`: the same spec with lean CTAs),
  // and the runtime launches that where the split grid's waves are ragged
  // (rt::chooseLeanSplits). H200 (docs/results/2026-12-04-session29.md):
  // lean at one CTA per SM beat the split grid by 1.6-18% at the 14 shapes
  // where that rule takes it, and loses 4-7% where the split grid fills its
  // waves, so neither kernel alone is the default. With per-sequence
  // lengths the runtime always takes the entry (the split grid sizes every
  // sequence's splits by the longest; lean's shares follow the lengths).
  // Where lean is built: head_dim 64 and 128, contiguous or paged caches,
  // whole tokens per tile (64 / G rows), the split count chosen at launch,
  // the default KV blocks.
  if (decode && !o.leanEntry.has_value())
    o.leanEntry = leanEntryFits(spec, o);
  // The TMA entry: on the H100 (3.35 TB/s) dense decode by TMA was 1.1-1.9%
  // faster than by cp.async at five shapes, on the H200 (4.8 TB/s) 2-4%
  // slower (docs/results/2026-12-06-session43.md §6, session 26); the
  // runtime picks by the device's DRAM bandwidth (rt::preferTmaDecode).
  if (decode && !o.tmaEntry.has_value())
    o.tmaEntry = tmaEntryFits(spec, o);
  // sm_100a: softmax 184, correction 80, MMA/load/epilogue 64 (FA4: 192 /
  // 80 / 48). A softmax thread holds its row of S (128 f32 at block_n 128)
  // in registers: ptxas spills it below 184 (the llama3-8b preset: 52 bytes
  // at 160, 40 at 176). 192 / 80 / 48 and 184 / 88 / 56 spill 4 bytes in
  // some kernels of the ptxas matrix (bf16 head_dim 128); 184 / 80 / 64
  // assembles all of them without.
  // Persistent prefill CTAs: the load role keeps its tile loop's state
  // (tile, query block, head, the rings' block count) beside the copies';
  // at 24 registers ptxas spilled 4-16 bytes there (causal, LSE). The
  // launch gives 168 x 384 registers: 40 + 2 x 232 fills them (32 + 2 x
  // 240 = 65536 is more: setmaxnreg.inc waited forever, session 41).
  bool persistentPrefill = hopper && !decode && *o.persistent;
  if (!o.producerRegs && persistentPrefill)
    o.producerRegs = 40;
  if (!o.producerRegs)
    o.producerRegs = hopper ? 24 : 64;
  if (!o.consumerRegs)
    o.consumerRegs = !hopper ? 184
                     : decode && o.lean.value_or(false) && leanRegs(spec)
                         ? leanRegs(spec)
                     : persistentPrefill ? 232
                                         : 240;
  // The short-sequence entry: at head_dim 128, 176- and 192-key blocks pad
  // 1024 keys to 1152 and widen the causal diagonal; 128-key blocks on the
  // same grid were 11-14% faster at 1K and 6-9% causal at 1.5K-2K, 2-3%
  // slower at 16K (H100, docs/results/2026-12-06-session42.md §4). At
  // head_dim 64, two CTAs per SM were 4-13% faster at 1K-2K and 4-23%
  // causal at 1K-4K, even at 4K, 3-5% slower at 16K (H100,
  // docs/results/2026-12-06-session43.md). The runtime picks per launch
  // (rt::chooseShortEntry).
  // BLASST too (session 45, H100, in turns, where the runtime takes the
  // entry, 70% / none of the blocks cold: +6-12% / +2-8% at head_dim 128,
  // +9-37% / -0.7-29% at 64; docs/results/2026-12-06-session45.md).
  if (!decode && !o.shortEntry.has_value() && shortEntryFits(spec, o))
    o.shortEntry = true;
  return o;
}

namespace {
/// Small helpers so the schedules below read like the IR they build.
struct KernelBuilder {
  OpBuilder &b;
  Location loc;
  Type et; // Q/K/V element type.
  Type f32;

  FlatSymbolRefAttr sym(StringRef name) {
    return FlatSymbolRefAttr::get(b.getContext(), name);
  }
  ArrayAttr syms(ArrayRef<StringRef> names) {
    SmallVector<Attribute> refs;
    for (StringRef n : names)
      refs.push_back(sym(n));
    return b.getArrayAttr(refs);
  }
  void buffer(StringRef name, MemorySpace space, int64_t rows, int64_t cols,
              Type type, int64_t stages, StringRef aliases = {}) {
    BufferOp::create(b, loc, b.getStringAttr(name),
                     MemorySpaceAttr::get(b.getContext(), space),
                     b.getDenseI64ArrayAttr({rows, cols}), TypeAttr::get(type),
                     b.getI64IntegerAttr(stages),
                     aliases.empty() ? FlatSymbolRefAttr() : sym(aliases),
                     DenseI64ArrayAttr());
  }
  void pipe(StringRef name, int64_t depth, StringRef producer,
            ArrayRef<StringRef> consumers, ArrayRef<StringRef> buffers,
            std::optional<int64_t> txBytes, bool cpAsync = false) {
    // cp_async: the producer's threads copy (no transaction bytes).
    PipeOp::create(b, loc, b.getStringAttr(name), b.getI64IntegerAttr(depth),
                   sym(producer), syms(consumers), syms(buffers),
                   txBytes && !cpAsync ? b.getI64IntegerAttr(*txBytes)
                                       : IntegerAttr(),
                   cpAsync ? b.getUnitAttr() : UnitAttr());
  }
  /// Creates a role and moves the insertion point into its body.
  void role(StringRef name, RoleKind kind, int64_t warpBegin, int64_t warpEnd,
            int64_t regs, std::optional<std::pair<int64_t, int64_t>> rows) {
    auto op = RoleOp::create(
        b, loc, b.getStringAttr(name), RoleKindAttr::get(b.getContext(), kind),
        b.getI64IntegerAttr(warpBegin), b.getI64IntegerAttr(warpEnd),
        b.getI64IntegerAttr(regs),
        rows ? b.getI64IntegerAttr(rows->first) : IntegerAttr(),
        rows ? b.getI64IntegerAttr(rows->second) : IntegerAttr());
    b.setInsertionPointToStart(&op.getBody().emplaceBlock());
  }
  /// Creates a kv_loop and moves the insertion point into its body.
  void kvLoop() {
    auto op = KVLoopOp::create(b, loc);
    b.setInsertionPointToStart(&op.getBody().emplaceBlock());
  }
  void endRegion(Operation *parentKernel) {
    b.setInsertionPointToEnd(&parentKernel->getRegion(0).front());
  }
  void afterLoop() { b.setInsertionPointAfter(b.getBlock()->getParentOp()); }

  IntegerAttr aheadAttr(int64_t ahead) {
    return ahead ? b.getI64IntegerAttr(ahead) : IntegerAttr();
  }
  void acquire(StringRef p, int64_t ahead = 0) {
    AcquireOp::create(b, loc, sym(p), aheadAttr(ahead));
  }
  /// The producer's wait for the consumers' release of its last copy.
  void drain(StringRef p) {
    AcquireOp::create(b, loc, sym(p), IntegerAttr(), IntegerAttr(),
                      IntegerAttr(), b.getUnitAttr());
  }
  void release(StringRef p, int64_t ahead = 0) {
    ReleaseOp::create(b, loc, sym(p), aheadAttr(ahead));
  }
  void load(Tensor t, StringRef dst, StringRef p) {
    TmaLoadOp::create(b, loc, TensorAttr::get(b.getContext(), t), sym(dst),
                      sym(p), IntegerAttr(), UnitAttr(), UnitAttr());
  }
  void mma(MmaKind kind, StringRef a, StringRef bb, StringRef d,
           bool async = false, int64_t ahead = 0) {
    MmaOp::create(b, loc, MmaKindAttr::get(b.getContext(), kind), sym(a),
                  sym(bb), sym(d), async ? b.getUnitAttr() : UnitAttr(),
                  aheadAttr(ahead));
  }
  void turnWait(StringRef order) { TurnWaitOp::create(b, loc, sym(order)); }
  void turnPass(StringRef order) { TurnPassOp::create(b, loc, sym(order)); }
  void mmaWait(int64_t pending = 0) {
    MmaWaitOp::create(b, loc, b.getI64IntegerAttr(pending));
  }
  void softmax(StringRef s, StringRef p, bool readScores) {
    if (readScores)
      ReadScoresOp::create(b, loc, sym(s));
    RowMaxOp::create(b, loc, sym(s), IntegerAttr(), UnitAttr());
    SoftmaxUpdateOp::create(b, loc, sym(s), FlatSymbolRefAttr());
    Exp2StoreOp::create(b, loc, sym(s), sym(p), IntegerAttr());
  }
};
} // namespace

/// sm_90a: producer warpgroup + consumer warpgroups of 64 rows each (two
/// for prefill's 128-row tiles, one for decode's 64).
static void buildHopper(KernelBuilder &kb, KernelOp kernel,
                        const AttentionSpec &spec, const ScheduleOptions &o,
                        bool lse) {
  int64_t numConsumers = o.blockM / 64;
  int64_t d = spec.headDim, dv = spec.headDimV, half = o.blockM / numConsumers;
  int64_t bytes = dtypeBytes(spec.dtype);
  kb.buffer("q", MemorySpace::smem, o.blockM, d, kb.et, 1);
  kb.buffer("k", MemorySpace::smem, o.blockN, d, kb.et, o.stages);
  kb.buffer("v", MemorySpace::smem, o.blockN, dv, kb.et, o.stages);
  kb.buffer("s", MemorySpace::regs, half, o.blockN, kb.f32, 1);
  // P goes through shared memory (wgmma with A from smem) for both
  // consumers, each using its own rows, or stays in each consumer's
  // registers (wgmma with A from registers).
  if (*o.pInRegisters)
    kb.buffer("p", MemorySpace::regs, half, o.blockN, kb.et, 1);
  else
    kb.buffer("p", MemorySpace::smem, o.blockM, o.blockN, kb.et, 1);
  kb.buffer("o", MemorySpace::regs, half, dv, kb.f32, 1);
  // Q in registers: each consumer's 64 rows as wgmma A fragments, loaded
  // once from the Q tile.
  StringRef qA = *o.qInRegisters ? "qr" : "q";
  if (*o.qInRegisters)
    kb.buffer("qr", MemorySpace::regs, half, d, kb.et, 1);
  StringRef allConsumers[] = {"consumer0", "consumer1"};
  ArrayRef<StringRef> consumers(allConsumers, numConsumers);
  // Decode packs G q heads by floor(block_m / G) tokens: when G does not
  // divide block_m the copy lands only those rows (the rest is padding).
  int64_t qRows = o.blockM;
  if (spec.phase == Phase::Decode)
    qRows = spec.gqaRatio() * (o.blockM / spec.gqaRatio());
  kb.pipe("q_pipe", 1, "producer", consumers, {"q"}, qRows * d * bytes);
  bool cpAsync = o.kvCpAsync.value_or(false);
  kb.pipe("k_pipe", o.stages, "producer", consumers, {"k"},
          o.blockN * d * bytes, cpAsync);
  kb.pipe("v_pipe", o.stages, "producer", consumers, {"v"},
          o.blockN * dv * bytes, cpAsync);
  if (*o.pingpong)
    OrderOp::create(kb.b, kb.loc, kb.b.getStringAttr("gemm_turn"),
                    kb.syms(consumers));

  kb.role("producer", RoleKind::load, 0, 4, o.producerRegs, std::nullopt);
  kb.acquire("q_pipe");
  kb.load(Tensor::q, "q", "q_pipe");
  kb.release("q_pipe");
  kb.kvLoop();
  kb.acquire("k_pipe");
  kb.load(Tensor::k, "k", "k_pipe");
  kb.release("k_pipe");
  kb.acquire("v_pipe");
  kb.load(Tensor::v, "v", "v_pipe");
  kb.release("v_pipe");
  if (cpAsync && !*o.persistent) {
    // All 128 threads of a cp.async load role copy; left alone they exit
    // as soon as their last copies are issued, in a CTA with no KV block
    // (a 0-length sequence, an empty split) right after Q's copy, where
    // compute-sanitizer's racecheck hung in 5 of 9 runs (session 38). They
    // stay until the consumers released Q (0 of 9 hung). Not in persistent
    // (lean) CTAs: their racecheck finished 9 of 9 times without it, and
    // there it held the next item's setup behind the consumer (the lean
    // entry 0.5% slower at batch 17 x 16K on an H100, session 38).
    kb.afterLoop();
    kb.drain("q_pipe");
  }
  kb.endRegion(kernel);

  for (int i = 0; i < numConsumers; ++i) {
    kb.role(consumers[i], RoleKind::compute, 4 + 4 * i, 8 + 4 * i,
            o.consumerRegs, std::make_pair(i * half, (i + 1) * half));
    kb.acquire("q_pipe");
    if (*o.qInRegisters)
      LoadFragOp::create(kb.b, kb.loc, kb.sym("q"), kb.sym("qr"));
    if (!*o.overlap) {
      // Ping-pong: a warpgroup's turn covers P V of block n and Q Kᵀ of
      // block n+1 (adjacent tensor-core work), so one warpgroup's softmax
      // runs while the other's GEMMs do.
      if (*o.pingpong)
        kb.turnWait("gemm_turn");
      kb.kvLoop();
      kb.acquire("k_pipe");
      kb.mma(MmaKind::qk, qA, "k", "s");
      kb.release("k_pipe");
      if (*o.pingpong)
        kb.turnPass("gemm_turn");
      kb.softmax("s", "p", /*readScores=*/false);
      CorrectOp::create(kb.b, kb.loc, kb.sym("o"), FlatSymbolRefAttr(),
                        IntegerAttr());
      if (*o.pingpong)
        kb.turnWait("gemm_turn");
      kb.acquire("v_pipe");
      kb.mma(MmaKind::pv, "p", "v", "o");
      kb.release("v_pipe");
      kb.afterLoop();
      if (*o.pingpong)
        kb.turnPass("gemm_turn");
    } else {
      // FlashAttention-3's intra-warpgroup overlap. Block 0's softmax is the
      // prologue (O is still 0: no correction); iteration n issues Q Kᵀ of
      // block n+1 and P V of block n back to back, waits for the scores
      // only, and runs block n+1's softmax while P V is on the tensor
      // cores. O is waited for in the same iteration, so no accumulator is
      // in flight across the loop's back-edge. Block n+1 past the end is
      // fully masked (a no-op).
      kb.acquire("k_pipe");
      kb.mma(MmaKind::qk, qA, "k", "s");
      kb.release("k_pipe");
      kb.softmax("s", "p", /*readScores=*/false);
      // Ping-pong: a turn covers [Q Kᵀ(n+1), P V(n)], issued together.
      if (*o.pingpong)
        kb.turnWait("gemm_turn");
      kb.kvLoop();
      kb.acquire("k_pipe", /*ahead=*/1);
      kb.mma(MmaKind::qk, qA, "k", "s", /*async=*/true, /*ahead=*/1);
      kb.acquire("v_pipe");
      kb.mma(MmaKind::pv, "p", "v", "o", /*async=*/true);
      if (*o.pingpong)
        kb.turnPass("gemm_turn");
      kb.mmaWait(1);
      kb.release("k_pipe", /*ahead=*/1);
      RowMaxOp::create(kb.b, kb.loc, kb.sym("s"), kb.aheadAttr(1), UnitAttr());
      SoftmaxUpdateOp::create(kb.b, kb.loc, kb.sym("s"), FlatSymbolRefAttr());
      // P in registers: block n+1's exponentials stay f32 in S while P V(n)
      // reads block n's P; they are packed into P after the wait that
      // retires P V(n) (FA3's order: ptxas may give the new P the old P's
      // registers). P in shared memory is overwritten only after it too.
      // Guarded (a branch on block n+1 existing) at head_dim >= 128, where
      // it lets ptxas run the exponentials during P V(n): 1.3-5% faster on
      // the H200; at head_dim 64 it was 1-3% slower
      // (docs/results/2026-11-29-fa3-order.md).
      if (*o.pInRegisters)
        Exp2Op::create(kb.b, kb.loc, kb.sym("s"),
                       spec.headDim >= 128 ? kb.b.getUnitAttr() : UnitAttr());
      kb.mmaWait(0);
      if (!*o.pInRegisters)
        Exp2StoreOp::create(kb.b, kb.loc, kb.sym("s"), kb.sym("p"), IntegerAttr());
      kb.release("v_pipe");
      // O now holds blocks <= n at block n's max: rescale it to block
      // n+1's (no register of an in-flight wgmma is written).
      CorrectOp::create(kb.b, kb.loc, kb.sym("o"), FlatSymbolRefAttr(),
                        IntegerAttr());
      if (*o.pInRegisters)
        PackPOp::create(kb.b, kb.loc, kb.sym("s"), kb.sym("p"));
      if (*o.pingpong)
        kb.turnWait("gemm_turn");
      kb.afterLoop();
      // Hand the last turn on (the other role's last in-loop wait).
      if (*o.pingpong)
        kb.turnPass("gemm_turn");
    }
    kb.release("q_pipe");
    EpilogueOp::create(kb.b, kb.loc, kb.sym("o"), FlatSymbolRefAttr(),
                       FlatSymbolRefAttr(),
                       lse ? kb.b.getUnitAttr() : UnitAttr());
    kb.endRegion(kernel);
  }
}

/// sm_100a: load warp, MMA warp, two softmax warpgroups of 128 rows (one Q
/// tile each), a correction warpgroup and an epilogue warp; S/P/O in tensor
/// memory. Per tile t and KV block n:
///   MMA:        S_t = Q_t K_nᵀ (commit: S_t full); after P_t(n) is stored
///               and O_t rescaled for block n: O_t += P_t V_n, then, in
///               issue order behind it (P_t lies over S_t), S_t = Q_t K_n+1ᵀ
///   softmax_t:  S_t → row max → factor_t(n) to smem (correction) → P_t
///               over S_t (MMA) → S_t read
///   correction: waits for factor_t(n) and O_t after P_t V_n-1, rescales O_t,
///               hands it to the MMA; after the loop, once the last P V is
///               done, normalises O_t by the row sums softmax_t handed over
///               and writes it to smem for the epilogue's TMA store.
/// While softmax_1 works on block n the tensor cores run P_0 V_n and
/// Q_0 K_n+1ᵀ, and the other way round.
static void buildBlackwell(KernelBuilder &kb, KernelOp kernel,
                           const AttentionSpec &spec, const ScheduleOptions &o,
                           bool lse) {
  int64_t d = spec.headDim, dv = spec.headDimV, tile = o.blockM / 2;
  int64_t bytes = dtypeBytes(spec.dtype);
  kb.buffer("q0", MemorySpace::smem, tile, d, kb.et, 1);
  kb.buffer("q1", MemorySpace::smem, tile, d, kb.et, 1);
  kb.buffer("k", MemorySpace::smem, o.blockN, d, kb.et, o.stages);
  kb.buffer("v", MemorySpace::smem, o.blockN, dv, kb.et, o.stages);
  // The output tiles for the TMA store, over the Q tiles (read by the
  // last Q Kᵀ, done before the last P V the correction role waits for).
  kb.buffer("o_stage0", MemorySpace::smem, tile, dv, kb.et, 1, "q0");
  kb.buffer("o_stage1", MemorySpace::smem, tile, dv, kb.et, 1, "q1");
  // Per row of each tile: the factor of block n (then the row sum) and the
  // running max, from softmax_t to the correction role.
  kb.buffer("f0", MemorySpace::smem, tile, 2, kb.f32, 1);
  kb.buffer("f1", MemorySpace::smem, tile, 2, kb.f32, 1);
  // After the loop: the row sums and the final max of each row.
  kb.buffer("l0", MemorySpace::smem, tile, 2, kb.f32, 1);
  kb.buffer("l1", MemorySpace::smem, tile, 2, kb.f32, 1);
  kb.buffer("s0", MemorySpace::tmem, tile, o.blockN, kb.f32, 1);
  kb.buffer("s1", MemorySpace::tmem, tile, o.blockN, kb.f32, 1);
  kb.buffer("p0", MemorySpace::tmem, tile, o.blockN, kb.et, 1, "s0");
  kb.buffer("p1", MemorySpace::tmem, tile, o.blockN, kb.et, 1, "s1");
  kb.buffer("o0", MemorySpace::tmem, tile, dv, kb.f32, 1);
  kb.buffer("o1", MemorySpace::tmem, tile, dv, kb.f32, 1);

  kb.pipe("q_pipe", 1, "load", {"mma"}, {"q0", "q1"}, 2 * tile * d * bytes);
  kb.pipe("k_pipe", o.stages, "load", {"mma"}, {"k"}, o.blockN * d * bytes);
  kb.pipe("v_pipe", o.stages, "load", {"mma"}, {"v"}, o.blockN * dv * bytes);
  // S_t full: the MMA warp's commit after Q_t Kᵀ; emptied once softmax_t
  // has read it and stored P_t over it.
  kb.pipe("s0_pipe", 1, "mma", {"softmax0"}, {"s0"}, std::nullopt);
  kb.pipe("s1_pipe", 1, "mma", {"softmax1"}, {"s1"}, std::nullopt);
  // P_t full: softmax_t stored P_t; emptied by the commit after P_t V.
  kb.pipe("p0_pipe", 1, "softmax0", {"mma"}, {"p0"}, std::nullopt);
  kb.pipe("p1_pipe", 1, "softmax1", {"mma"}, {"p1"}, std::nullopt);
  // factor_t(n) (then the row sums) from softmax_t to the correction role.
  kb.pipe("f0_pipe", 1, "softmax0", {"correction"}, {"f0"}, std::nullopt);
  kb.pipe("f1_pipe", 1, "softmax1", {"correction"}, {"f1"}, std::nullopt);
  kb.pipe("l0_pipe", 1, "softmax0", {"correction"}, {"l0"}, std::nullopt);
  kb.pipe("l1_pipe", 1, "softmax1", {"correction"}, {"l1"}, std::nullopt);
  // O_t rescaled for block n (correction → MMA); emptied by the commit
  // after P_t V_n.
  kb.pipe("o0_pipe", 1, "correction", {"mma"}, {"o0"}, std::nullopt);
  kb.pipe("o1_pipe", 1, "correction", {"mma"}, {"o1"}, std::nullopt);
  // Every product of the tile done (the MMA warp's last commit).
  kb.pipe("done_pipe", 1, "mma", {"correction"}, {}, std::nullopt);
  // The normalised output tiles in smem, for the epilogue's TMA stores.
  kb.pipe("epi0_pipe", 1, "correction", {"epilogue"}, {"o_stage0"},
          std::nullopt);
  kb.pipe("epi1_pipe", 1, "correction", {"epilogue"}, {"o_stage1"},
          std::nullopt);

  int64_t miscRegs = o.producerRegs;
  int64_t correctionRegs = std::min<int64_t>(
      256, (kRegistersPerCTA - 2 * 128 * o.consumerRegs - 128 * miscRegs) /
               128 / 8 * 8);
  correctionRegs = std::max<int64_t>(correctionRegs, 24);

  StringRef softmaxRoles[] = {"softmax0", "softmax1"};
  StringRef sBufs[] = {"s0", "s1"}, pBufs[] = {"p0", "p1"};
  StringRef oBufs[] = {"o0", "o1"}, qBufs[] = {"q0", "q1"};
  StringRef fBufs[] = {"f0", "f1"}, lBufs[] = {"l0", "l1"};
  StringRef stageBufs[] = {"o_stage0", "o_stage1"},
            epiPipes[] = {"epi0_pipe", "epi1_pipe"};
  StringRef sPipes[] = {"s0_pipe", "s1_pipe"},
            pPipes[] = {"p0_pipe", "p1_pipe"};
  StringRef oPipes[] = {"o0_pipe", "o1_pipe"},
            fPipes[] = {"f0_pipe", "f1_pipe"},
            lPipes[] = {"l0_pipe", "l1_pipe"};
  for (int i = 0; i < 2; ++i) {
    kb.role(softmaxRoles[i], RoleKind::softmax, 4 * i, 4 * i + 4,
            o.consumerRegs, std::make_pair(i * tile, (i + 1) * tile));
    kb.kvLoop();
    kb.acquire(sPipes[i]);
    ReadScoresOp::create(kb.b, kb.loc, kb.sym(sBufs[i]));
    RowMaxOp::create(kb.b, kb.loc, kb.sym(sBufs[i]), IntegerAttr(), UnitAttr());
    kb.acquire(fPipes[i]);
    SoftmaxUpdateOp::create(kb.b, kb.loc, kb.sym(sBufs[i]),
                            kb.sym(fBufs[i]));
    kb.release(fPipes[i]);
    kb.acquire(pPipes[i]);
    Exp2StoreOp::create(kb.b, kb.loc, kb.sym(sBufs[i]), kb.sym(pBufs[i]),
                        IntegerAttr());
    kb.release(pPipes[i]);
    kb.release(sPipes[i]);
    kb.afterLoop();
    kb.acquire(lPipes[i]);
    StoreRowSumsOp::create(kb.b, kb.loc, kb.sym(lBufs[i]));
    kb.release(lPipes[i]);
    kb.endRegion(kernel);
  }

  kb.role("correction", RoleKind::correction, 8, 12, correctionRegs,
          std::nullopt);
  kb.kvLoop();
  for (int i = 0; i < 2; ++i) {
    kb.acquire(fPipes[i]);
    kb.acquire(oPipes[i]);
    CorrectOp::create(kb.b, kb.loc, kb.sym(oBufs[i]), kb.sym(fBufs[i]),
                      IntegerAttr());
    kb.release(oPipes[i]);
    kb.release(fPipes[i]);
  }
  kb.afterLoop();
  kb.acquire("done_pipe");
  for (int i = 0; i < 2; ++i) {
    kb.acquire(lPipes[i]);
    kb.acquire(epiPipes[i]);
    EpilogueOp::create(kb.b, kb.loc, kb.sym(oBufs[i]), kb.sym(stageBufs[i]),
                       kb.sym(lBufs[i]),
                       lse ? kb.b.getUnitAttr() : UnitAttr());
    kb.release(epiPipes[i]);
    kb.release(lPipes[i]);
  }
  kb.release("done_pipe");
  kb.endRegion(kernel);

  kb.role("mma", RoleKind::mma, 12, 13, miscRegs, std::nullopt);
  kb.acquire("q_pipe");
  // Block 0's scores for both tiles.
  kb.acquire("k_pipe");
  for (int i = 0; i < 2; ++i) {
    kb.acquire(sPipes[i]);
    kb.mma(MmaKind::qk, qBufs[i], "k", sBufs[i]);
    kb.release(sPipes[i]);
  }
  kb.release("k_pipe");
  kb.kvLoop();
  kb.acquire("v_pipe");
  kb.acquire("k_pipe", /*ahead=*/1);
  for (int i = 0; i < 2; ++i) {
    kb.acquire(pPipes[i]);
    kb.acquire(oPipes[i]);
    kb.mma(MmaKind::pv, pBufs[i], "v", oBufs[i]);
    kb.release(oPipes[i]);
    kb.release(pPipes[i]);
    // Behind P_t V_n in issue order: the tensor cores read P_t before the
    // next scores overwrite it.
    kb.acquire(sPipes[i], /*ahead=*/1);
    kb.mma(MmaKind::qk, qBufs[i], "k", sBufs[i], /*async=*/false,
           /*ahead=*/1);
    kb.release(sPipes[i], /*ahead=*/1);
  }
  kb.release("k_pipe", /*ahead=*/1);
  kb.release("v_pipe");
  kb.afterLoop();
  kb.acquire("done_pipe");
  kb.release("done_pipe");
  kb.release("q_pipe");
  kb.endRegion(kernel);

  kb.role("load", RoleKind::load, 13, 14, miscRegs, std::nullopt);
  kb.acquire("q_pipe");
  kb.load(Tensor::q, "q0", "q_pipe");
  kb.load(Tensor::q, "q1", "q_pipe");
  kb.release("q_pipe");
  kb.kvLoop();
  kb.acquire("k_pipe");
  kb.load(Tensor::k, "k", "k_pipe");
  kb.release("k_pipe");
  kb.acquire("v_pipe");
  kb.load(Tensor::v, "v", "v_pipe");
  kb.release("v_pipe");
  kb.endRegion(kernel);

  kb.role("epilogue", RoleKind::epilogue, 14, 15, miscRegs, std::nullopt);
  for (int i = 0; i < 2; ++i) {
    kb.acquire(epiPipes[i]);
    TmaStoreOp::create(kb.b, kb.loc, kb.sym(stageBufs[i]),
                       TensorAttr::get(kb.b.getContext(), Tensor::o));
    kb.release(epiPipes[i]);
  }
  kb.endRegion(kernel);
}

/// A knob's name in the schedule record: the pass-option name, '_' for '-'.
static std::string recordName(StringRef knob) {
  std::string name = knob.str();
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

namespace {
/// Writes one knob into the record (sizes always; switches and counts when
/// they have a value) and reads it back.
struct RecordKnob {
  Builder &b;
  SmallVectorImpl<NamedAttribute> &out;
  void write(StringRef name, int64_t v) {
    out.push_back(b.getNamedAttr(recordName(name), b.getI64IntegerAttr(v)));
  }
  void write(StringRef name, std::optional<bool> v) {
    if (v)
      out.push_back(b.getNamedAttr(recordName(name), b.getBoolAttr(*v)));
  }
  void write(StringRef name, std::optional<int64_t> v) {
    if (v)
      write(name, *v);
  }
};

void readKnob(DictionaryAttr record, StringRef name, int64_t &knob) {
  if (auto v = record.getAs<IntegerAttr>(recordName(name)))
    knob = v.getInt();
}
void readKnob(DictionaryAttr record, StringRef name,
              std::optional<bool> &knob) {
  if (auto v = record.getAs<BoolAttr>(recordName(name)))
    knob = v.getValue();
}
void readKnob(DictionaryAttr record, StringRef name,
              std::optional<int64_t> &knob) {
  if (auto v = record.getAs<IntegerAttr>(recordName(name)))
    knob = v.getInt();
}
} // namespace

DictionaryAttr blasst::scheduleAttr(MLIRContext *ctx,
                                    const ScheduleOptions &opts) {
  Builder b(ctx);
  SmallVector<NamedAttribute> knobs;
  RecordKnob record{b, knobs};
  // Every knob of the table. V on demand is decided by the vote passes after
  // this one (the IR shows it: ws.await_vote); recorded when it has a value.
#define BLASST_SCHEDULE_KNOB(Kind, Field, Name, Help)                          \
  record.write(Name, opts.Field);
#include "blasst/Conversion/AttnToWS/ScheduleKnobs.def"
  return b.getDictionaryAttr(knobs);
}

ScheduleOptions blasst::scheduleFromAttr(DictionaryAttr record) {
  ScheduleOptions opts;
#define BLASST_SCHEDULE_KNOB(Kind, Field, Name, Help)                          \
  readKnob(record, Name, opts.Field);
#include "blasst/Conversion/AttnToWS/ScheduleKnobs.def"
  return opts;
}

KernelOp blasst::buildKernel(OpBuilder &b, Location loc, StringRef name,
                             const AttentionSpec &spec,
                             const ScheduleOptions &opts) {
  MLIRContext *ctx = b.getContext();
  bool persistent = opts.persistent.value_or(false);
  // The longest causal tiles (the last query blocks) first; a persistent
  // CTA walks its tiles that way too.
  // Decode: the q heads of a KV head packed into the tile (q_group) and the
  // KV blocks split across CTAs (split_kv). A decode tile holds every new
  // token, so there is no longest tile to start first.
  bool decode = spec.phase == Phase::Decode &&
                opts.target == blasst::Target::SM90a;
  bool reverseTiles = !decode && (spec.causal || persistent);
  auto kernel = KernelOp::create(
      b, loc, b.getStringAttr(name),
      TargetAttr::get(ctx, toWSTarget(opts.target)),
      b.getI64IntegerAttr(opts.blockM), b.getI64IntegerAttr(opts.blockN),
      attn::SpecAttr::fromSpec(ctx, spec),
      persistent ? b.getUnitAttr() : UnitAttr(),
      opts.kvMulticast.value_or(false) ? b.getUnitAttr() : UnitAttr(),
      reverseTiles ? b.getUnitAttr() : UnitAttr(),
      decode ? b.getI64IntegerAttr(spec.gqaRatio()) : IntegerAttr(),
      decode ? b.getUnitAttr() : UnitAttr(),
      decode && opts.splitInterleave.value_or(false)
          ? b.getI64IntegerAttr(opts.splitChunk.value_or(1))
          : IntegerAttr(),
      decode && spec.kvPerSequence ? b.getUnitAttr() : UnitAttr(),
      decode && spec.paged() ? b.getI64IntegerAttr(spec.kvPageSize)
                             : IntegerAttr(),
      scheduleAttr(ctx, opts),
      decode && opts.lean.value_or(false) ? b.getUnitAttr() : UnitAttr(),
      opts.ctasPerSm.value_or(1) > 1 ? b.getI64IntegerAttr(*opts.ctasPerSm)
                                     : IntegerAttr(),
      decode && opts.mergeKernel.value_or(false) ? b.getUnitAttr() : UnitAttr(),
      decode && opts.balancedSplits.value_or(false) ? b.getUnitAttr()
                                                    : UnitAttr(),
      /*entry_of=*/FlatSymbolRefAttr());
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&kernel.getBody().emplaceBlock());
  KernelBuilder kb{b, loc, attn::getElementType(ctx, spec.dtype),
                   b.getF32Type()};
  if (opts.target == blasst::Target::SM90a)
    buildHopper(kb, kernel, spec, opts, spec.lse);
  else
    buildBlackwell(kb, kernel, spec, opts, spec.lse);
  return kernel;
}

namespace {
/// A size knob's pass option: a number, 0 for the default.
template <typename Option>
LogicalResult readKnob(ModuleOp module, StringRef name, const Option &option,
                       int64_t &knob) {
  knob = option;
  if (knob >= 0)
    return success();
  return module.emitError() << "convert-attn-to-ws: option " << name
                            << " must not be negative, got " << knob;
}

/// A count knob's pass option: a number, 0 for unset (the default).
template <typename Option>
LogicalResult readKnob(ModuleOp module, StringRef name, const Option &option,
                       std::optional<int64_t> &knob) {
  int64_t v = option;
  if (v < 0)
    return module.emitError() << "convert-attn-to-ws: option " << name
                              << " must not be negative, got " << v;
  knob = v ? std::optional<int64_t>(v) : std::nullopt;
  return success();
}

/// An on/off knob's pass option: auto, true or false.
template <typename Option>
LogicalResult readKnob(ModuleOp module, StringRef name, const Option &option,
                       std::optional<bool> &knob) {
  if (parseScheduleKnob(option.getValue(), &knob))
    return success();
  return module.emitError()
         << "convert-attn-to-ws: option " << name
         << " must be auto, true or false, got '" << option.getValue() << "'";
}

struct ConvertAttnToWSPass
    : public blasst::impl::ConvertAttnToWSBase<ConvertAttnToWSPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<blasst::Target> target = parseTarget(this->target);
    if (!target) {
      module.emitError() << "convert-attn-to-ws: unknown target '"
                         << this->target << "' (expected " << targetChoices()
                         << ")";
      return signalPassFailure();
    }
    ScheduleOptions knobs;
    knobs.target = *target;
    // Every convert-attn-to-ws knob of the table, from the option of the
    // same name (the V-on-demand knobs belong to blasst-v-on-demand).
#define BLASST_ATTN_TO_WS_KNOB(Kind, Field, Name, Help)                        \
  if (failed(readKnob(module, Name, Field, knobs.Field)))                      \
    return signalPassFailure();
#include "blasst/Conversion/AttnToWS/ScheduleKnobs.def"

    SymbolTable symbols(module);
    SmallVector<attn::AttentionOp> ops;
    module.walk([&](attn::AttentionOp op) { ops.push_back(op); });
    for (attn::AttentionOp op : ops) {
      AttentionSpec spec = op.getSpec().toSpec();
      std::string reason = checkSupported(spec, *target);
      if (!reason.empty()) {
        op.emitOpError() << "cannot be compiled for " << toString(*target)
                         << ": " << reason;
        return signalPassFailure();
      }
      if (std::string why =
              checkScheduleKnobs(knobs, spec.phase == Phase::Decode);
          !why.empty()) {
        op.emitOpError() << why;
        return signalPassFailure();
      }
      ScheduleOptions opts = resolveSchedule(spec, knobs);
      if ((*opts.overlap || *opts.pingpong || *opts.pInRegisters ||
           *opts.qInRegisters) &&
          *target != blasst::Target::SM90a) {
        op.emitOpError() << "overlap, pingpong, p-in-registers and "
                            "q-in-registers are sm_90a schedules";
        return signalPassFailure();
      }
      if (opts.ctasPerSm.value_or(1) == 2 && *target != blasst::Target::SM90a) {
        op.emitOpError() << "ctas-per-sm=" << *opts.ctasPerSm
                         << ": 1 or 2 CTAs per SM (2: sm_90a)";
        return signalPassFailure();
      }
      if (opts.mergeKernel.value_or(false) &&
          (*target != blasst::Target::SM90a || spec.phase != Phase::Decode)) {
        op.emitOpError() << "merge-kernel=true merges the KV splits of "
                            "sm_90a decode (phase = decode)";
        return signalPassFailure();
      }
      if (opts.kvCpAsync.value_or(false) &&
          (*target != blasst::Target::SM90a || spec.phase != Phase::Decode ||
           (*opts.persistent && !opts.lean.value_or(false)))) {
        op.emitOpError()
            << "kv-cp-async=true copies K/V with cp.async in sm_90a decode, "
               "with one CTA per split or lean CTAs (not with persistent CTAs "
               "walking the splits)";
        return signalPassFailure();
      }
      if (opts.shortEntry.value_or(false) && !shortEntryFits(spec, opts)) {
        op.emitOpError()
            << "short-entry=true needs sm_90a prefill at head_dim 64 with the "
               "overlap and KV blocks wider than "
            << kShortEntryTwoCtaBlockN
            << " keys or at 128 with blocks wider than " << kShortEntryBlockN
            << " keys, with 128-row query tiles and one CTA per tile (no "
               "persistent CTAs, K/V multicast or two CTAs per SM); "
               "head_dim "
            << spec.headDim << ", block_n " << opts.blockN;
        return signalPassFailure();
      }
      if (opts.tmaEntry.value_or(false) && !tmaEntryFits(spec, opts)) {
        op.emitOpError()
            << "tma-entry=true needs sm_90a dense decode at head_dim 128 "
               "over a contiguous KV cache of one length (not paged, not "
               "per-sequence lengths), with cp.async K/V and one CTA per "
               "split (no persistent, lean, balanced-splits, "
               "split-interleave or ctas-per-sm=2)";
        return signalPassFailure();
      }
      if (opts.leanEntry.value_or(false) && !leanEntryFits(spec, opts)) {
        op.emitOpError()
            << "lean-entry=true needs sm_90a dense decode at head_dim 64, "
               "128 or 256 over a contiguous or paged KV cache (one length "
               "or per-sequence lengths), "
               "with cp.async K/V, one CTA per split (no persistent, lean, "
               "kv-splits, split-interleave or ctas-per-sm=2), the lean "
               "CTAs' KV blocks (64 keys at head_dim 128, 128 at 64, 32 at "
               "256: block-n=32) and q heads per kv head dividing 64";
        return signalPassFailure();
      }
      if (opts.balancedSplits.value_or(false) &&
          (*target != blasst::Target::SM90a || spec.phase != Phase::Decode)) {
        op.emitOpError() << "balanced-splits=true is an sm_90a decode "
                            "schedule (KV splits that follow per-sequence "
                            "lengths)";
        return signalPassFailure();
      }
      if (opts.lean.value_or(false) &&
          (*target != blasst::Target::SM90a || spec.phase != Phase::Decode)) {
        op.emitOpError() << "lean=true is an sm_90a decode schedule (CTAs "
                            "sharing the KV blocks of every tile)";
        return signalPassFailure();
      }
      if (*opts.kvMulticast &&
          (*target != blasst::Target::SM90a || spec.causal ||
           *opts.persistent || spec.phase != Phase::Prefill)) {
        op.emitOpError() << "kv-multicast=true is available for sm_90a "
                            "non-causal prefill without persistent CTAs "
                            "(a causal pair visits different numbers of KV "
                            "blocks)";
        return signalPassFailure();
      }
      if (spec.phase == Phase::Decode) {
        std::string why;
        if (opts.blockM != 64)
          why = "block-m=" + std::to_string(opts.blockM) +
                ": the decode schedule packs the tokens of a kv head's q "
                "heads into one 64-row tile (one consumer warpgroup)";
        else if (*opts.kvMulticast || *opts.pingpong)
          why = "kv-multicast and pingpong are prefill schedules";
        else if (opts.lean.value_or(false) && !*opts.persistent)
          why = "lean=true with persistent=false: lean is how persistent "
                "decode CTAs share the KV blocks";
        else if (opts.balancedSplits.value_or(false) &&
                 (!spec.kvPerSequence || *opts.persistent))
          why = "balanced-splits=true shares the splits of a one-CTA-per-"
                "split grid by per-sequence lengths: it needs kv_lengths = "
                "per_sequence, without persistent or lean";
        else if (opts.mergeKernel.value_or(false) && *opts.persistent)
          why = "merge-kernel=true with persistent CTAs: the second merge "
                "kernel is for the one-CTA-per-split grid (persistent and "
                "lean CTAs merge in the kernel)";
        else if (opts.lean.value_or(false) && opts.kvSplits &&
                 *opts.kvSplits > 0)
          why = "lean=true with kv-splits=" + std::to_string(*opts.kvSplits) +
                ": lean CTAs share the KV blocks evenly (one per SM); they "
                "take no split count";
        else if (*opts.persistent &&
                 (!spec.sparsity.isDense() ||
                  (spec.kvPerSequence && !opts.lean.value_or(false)) ||
                  opts.splitInterleave.value_or(false)))
          why = "persistent=true: persistent decode CTAs are implemented "
                "for dense attention (no sparsity or split-interleave), "
                "over KV caches of one length unless lean (lean CTAs "
                "share per-sequence lengths' blocks)";
        else if (*opts.persistent && !opts.lean.value_or(false) && spec.paged())
          why = "persistent=true with a paged kv_cache: CTAs walking the "
                "splits read contiguous K/V only (lean CTAs take pages)";
        else if (*opts.persistent &&
                 !(spec.headDim == 128 ||
                   ((spec.headDim == 64 || spec.headDim == 256) &&
                    opts.lean.value_or(false))))
          why = "persistent=true: persistent decode CTAs are available at "
                "head_dim 128, lean CTAs at 64, 128 and 256 (CTAs walking "
                "the splits copy by TMA, and at 64 and 256 their item loop "
                "makes ptxas spill the consumer's registers)";
        else if (opts.splitChunk && !*opts.splitInterleave)
          why = "split-chunk=" + std::to_string(*opts.splitChunk) +
                " with split-interleave=false: chunks are how interleaved "
                "splits take their KV blocks";
        else if (opts.splitChunk && *opts.splitChunk > 1024)
          why = "split-chunk=" + std::to_string(*opts.splitChunk) +
                ": a chunk is 1 to 1024 KV blocks";
        else if (spec.paged() && spec.kvPageSize % opts.blockN &&
                 opts.blockN % spec.kvPageSize)
          why = "block-n=" + std::to_string(opts.blockN) +
                " with a paged kv_cache of page " +
                std::to_string(spec.kvPageSize) +
                ": one must divide the other (a KV block is part of one "
                "page or whole pages)";
        if (!why.empty()) {
          op.emitOpError() << "decode schedule: " << why;
          return signalPassFailure();
        }
      } else if (opts.kvSplits || opts.splitChunk ||
                 opts.splitInterleave.value_or(false)) {
        InFlightDiagnostic diag = op.emitOpError();
        if (opts.kvSplits)
          diag << "kv-splits=" << *opts.kvSplits;
        else if (opts.splitChunk)
          diag << "split-chunk=" << *opts.splitChunk;
        else
          diag << "split-interleave=true";
        diag << ": split KV is the decode schedule's (phase = "
                "decode)";
        return signalPassFailure();
      }
      // (Decode: the schedule's checks above; lean CTAs at head_dim 256
      // take 32-key blocks, which fit.)
      if (*opts.persistent && spec.headDim > 128 &&
          spec.phase == Phase::Prefill) {
        op.emitOpError() << "persistent=true is not available at head_dim > "
                            "128 yet: ptxas spills the consumers' registers";
        return signalPassFailure();
      }
      if (*opts.qInRegisters &&
          (spec.headDim > 128 ||
           (spec.headDim == 128 && *opts.overlap && *opts.pInRegisters &&
            opts.blockN > 144))) {
        op.emitOpError()
            << "q-in-registers=true is not available here: Q takes "
               "head_dim / 4 registers per thread, and "
            << (spec.headDim > 128
                    ? "at head_dim > 128 they do not fit the consumers' 240"
                    : "at head_dim 128 with S, P and O in flight it needs "
                      "block_n <= 144 (got " +
                          std::to_string(opts.blockN) + ")");
        return signalPassFailure();
      }
      // Above head_dim 128, O alone takes head_dim / 2 registers per
      // thread: S, P and O fit 240 only with blocks of at most 80 keys.
      if (*opts.overlap && (*target != blasst::Target::SM90a ||
                            (spec.headDim > 128 && opts.blockN > 80))) {
        op.emitOpError()
            << "overlap=true is not available here: "
            << (*target != blasst::Target::SM90a
                    ? "it is an sm_90a schedule"
                    : "S, O and P in flight together do not fit the "
                      "consumers' 240 registers at head_dim > 128 with "
                      "block_n > 80");
        return signalPassFailure();
      }
      auto func = op->getParentOfType<FunctionOpInterface>();
      std::string name =
          (func ? func.getName().str() : std::string("attention")) + "_kernel";

      OpBuilder b(module.getBodyRegion());
      b.setInsertionPointToEnd(module.getBody());
      KernelOp kernel = buildKernel(b, op.getLoc(), name, spec, opts);
      symbols.insert(kernel); // Renames on a clash.
      // A second entry beside the kernel, `<kernel><suffix>`, built from
      // the knobs asked for with some changed and resolved again; null (and
      // the error given) when the name is taken.
      auto buildEntry = [&](StringRef suffix, StringRef what,
                            const ScheduleOptions &entryKnobs) {
        std::string entryName = (kernel.getSymName() + suffix).str();
        KernelOp entry = buildKernel(b, op.getLoc(), entryName, spec,
                                     resolveSchedule(spec, entryKnobs));
        symbols.insert(entry);
        entry.setEntryOfAttr(FlatSymbolRefAttr::get(kernel.getSymNameAttr()));
        if (entry.getSymName() == entryName)
          return entry;
        op.emitOpError() << "the " << what << "'s name " << entryName
                         << " is taken in this module";
        return KernelOp();
      };
      // The lean entry: the same spec with lean CTAs, `<kernel>_lean`, which
      // the runtime may launch instead: the knobs asked for, resolved as
      // for `lean=true` (resolveSchedule's lean defaults, e.g. leanRegs).
      KernelOp leanKernel;
      if (opts.leanEntry.value_or(false)) {
        ScheduleOptions leanKnobs = knobs;
        leanKnobs.lean = leanKnobs.persistent = true;
        leanKnobs.leanEntry = leanKnobs.mergeKernel = false;
        if (!(leanKernel = buildEntry("_lean", "lean entry", leanKnobs)))
          return signalPassFailure();
      }
      // The short-sequence entry, `<kernel>_short`: shortEntryKnobs (their
      // own defaults resolved for them).
      KernelOp shortKernel;
      if (opts.shortEntry.value_or(false) &&
          !(shortKernel = buildEntry("_short", "short-sequence entry",
                                     shortEntryKnobs(spec, knobs))))
        return signalPassFailure();
      // The TMA entry, `<kernel>_tma`: K/V by TMA (tmaEntryKnobs), sharing
      // the kernel's merge kernel.
      KernelOp tmaKernel;
      if (opts.tmaEntry.value_or(false) &&
          !(tmaKernel = buildEntry("_tma", "TMA entry", tmaEntryKnobs(knobs))))
        return signalPassFailure();
      // The verifier's message says what is wrong; a dump of the whole
      // generated kernel would bury it.
      bool printOp = getContext().shouldPrintOpOnDiagnostic();
      getContext().printOpOnDiagnostic(false);
      LogicalResult verified =
          success(succeeded(verify(kernel)) &&
                  (!leanKernel || succeeded(verify(leanKernel))) &&
                  (!shortKernel || succeeded(verify(shortKernel))) &&
                  (!tmaKernel || succeeded(verify(tmaKernel))));
      getContext().printOpOnDiagnostic(printOp);
      if (failed(verified)) {
        op.emitOpError() << "the " << toString(*target)
                         << " schedule for this spec is invalid (see above)";
        return signalPassFailure();
      }

      b.setInsertionPoint(op);
      SmallVector<Value> args{op.getQ(), op.getK(), op.getV(), op.getO()};
      if (op.getLse())
        args.push_back(op.getLse());
      if (op.getStats())
        args.push_back(op.getStats());
      LaunchOp::create(b, op.getLoc(), FlatSymbolRefAttr::get(kernel), args);
      op.erase();
    }
  }
};
} // namespace
