//===- LoweringBase.h - State and helpers shared by the ws lowering -*- C++
//-*-===//
//
// What the target-neutral driver (KernelLowering) and a target's lowering
// (TargetLowering) share while one ws.kernel becomes an llvm.func: the kernel
// ABI, the shared memory layout, the state of the role being emitted, and the
// kernel-wide values (thread and CTA indices, shared memory base). Both see
// that state through one KernelEnv; LoweringBase exposes it under the names
// the emit functions use, with the arithmetic and shared memory helpers.
//
//===----------------------------------------------------------------------===//
#ifndef BLASST_LIB_CONVERSION_WSTONVVM_LOWERINGBASE_H
#define BLASST_LIB_CONVERSION_WSTONVVM_LOWERINGBASE_H

#include "blasst/Dialect/WS/Analysis/Protocol.h"
#include "blasst/Dialect/WS/IR/WS.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringMap.h"

namespace blasst::ws::lowering {
using namespace mlir;

/// Kernel parameter indices (runtime/include/blasst/Runtime/KernelABI.h).
enum Param : unsigned {
  kTmQ = 0,
  kTmK,
  kTmV,
  kO,
  kLse,
  kStats,
  kSeqQ,
  kSeqKV,
  kOStrideB,
  kOStrideS,
  kOStrideH,
  kScaleLog2,
  kLog2Threshold,
  kLog2ThresholdPtr,
  kNumParams
};
/// Kernels with split_kv (decode) take one more parameter (ABI 3): the
/// workspace of the splits' partial O and LSE and the per-tile counters, or
/// null when the launch uses one split.
constexpr unsigned kWorkspace = kNumParams;
/// Decode kernels with a KV cache option (ws.kernel per_seq_kv or
/// page_size; ABI 4) take three more: the int32 KV lengths [batch] (or null
/// without per_seq_kv), the int32 block table [batch, max_pages] (or null
/// without page_size) and max_pages (i32).
constexpr unsigned kSeqLensKV = kNumParams + 1;
constexpr unsigned kBlockTable = kNumParams + 2;
constexpr unsigned kMaxPages = kNumParams + 3;
constexpr unsigned kNumKVCacheParams = 3;
/// Kernels that store O with TMA (a ws.tma_store: sm_100a) take O's tensor
/// map as parameter 18 (ABI 4); they have parameters 14-17 too (the
/// workspace and the KV cache's, null / 0 unless the kernel has those
/// options), so each index means one thing.
constexpr unsigned kTmO = kMaxPages + 1;
/// Persistent decode kernels (ws.kernel persistent with q_group) walk
/// (batch, KV head, query tile, split) items on a 1-D grid: they take the
/// launch's split count and batch as parameters 19 and 20 (i32; 14-18 as
/// above, 15-18 unused), so each index means one thing.
constexpr unsigned kDecodeSplits = kTmO + 1;
constexpr unsigned kDecodeBatch = kTmO + 2;
/// Decode kernels with merge_kernel take a 22nd (i32): 1 when the launch
/// runs <kernel>_merge after this grid (the splits write their partials and
/// return), 0 when each tile's last split merges in the kernel. The runtime
/// picks per launch (chooseDecodeSplits).
constexpr unsigned kMergeLaunch = kDecodeBatch + 1;
/// Decode kernels whose K/V pipes are cp_async (ABI 6) take K's and V's
/// base pointers (22, 23) and their strides in elements, int64 (K: batch,
/// sequence, head 24-26; V: 27-29); 14-21 as above (null / 0 where unused).
constexpr unsigned kKPtr = kMergeLaunch + 1;
constexpr unsigned kVPtr = kKPtr + 1;
constexpr unsigned kKStrideB = kVPtr + 1;
constexpr unsigned kKStrideS = kKStrideB + 1;
constexpr unsigned kKStrideH = kKStrideB + 2;
constexpr unsigned kVStrideB = kKStrideB + 3;
constexpr unsigned kVStrideS = kKStrideB + 4;
constexpr unsigned kVStrideH = kKStrideB + 5;
constexpr unsigned kNumCpAsyncParams = kVStrideH + 1;
/// cp_async kernels with page_size take the page pool's size (i32) as 30:
/// a block-table entry outside [0, num_pages) reads nothing (zeros), as
/// TMA's bounds make it for the TMA copies.
constexpr unsigned kNumPages = kNumCpAsyncParams;

/// The location name of a persistent prefill CTA's tile loop (an scf.for):
/// blasst-annotate-item-loops finds its back-edge by it after the cf
/// conversion and keeps LLVM's LICM out of the loop.
constexpr llvm::StringLiteral kItemLoopMarker = "blasst.item_loop";
/// The L2 share (KiB) a persistent prefill grid's K/V working set aims at:
/// its tiles go by sections of KV heads whose K and V fit (the H100's and
/// the H200's L2 is 50 MB in two halves). 8, 16 and 32 MiB timed within
/// noise of each other on an H100 (session 42); without sections, half the
/// L2 reads missed at 16K.
constexpr int64_t kPersistentL2KiB = 16 * 1024;

/// --timeline: the module global `blasst_stamps` holds kTimelineRows rows of
/// 16 u64, one per (CTA, item): row = CTA linear id x kTimelineItems + the
/// item's ordinal on the CTA (0 without persistent CTAs). Values are
/// %globaltimer (ns) at: 0 the CTA's entry (thread 0); the load role's item
/// start, first wait passed, item end (1-3); the first compute role's item
/// start, first and second waits passed, epilogue start, split counter
/// answered (decode with splits), item end (4-9); value 12 is %smid.
constexpr int64_t kTimelineItems = 8;
constexpr int64_t kTimelineRows = 65536;
constexpr int64_t kTimelineRowWords = 16;
constexpr int64_t kTimelineEntry = 0;
constexpr int64_t kTimelineLoad = 1;
constexpr int64_t kTimelineCompute = 4;
constexpr int64_t kTimelineEpilogue = kTimelineCompute + 3;
constexpr int64_t kTimelineCounter = kTimelineCompute + 4;
constexpr int64_t kTimelineSmid = 12;
constexpr const char *kTimelineGlobal = "blasst_stamps";

constexpr int64_t kSwizzleBytes = 128;   // One swizzle span (64 x 16-bit).
constexpr int64_t kPanelElems = 64;      // Elements of a row in one span.
constexpr int64_t kTileAlign = 1024;     // 8 rows of 128 B: swizzle atom.
constexpr int64_t kWaitTicks = 0x989680; // try_wait suspend-time hint.

/// Where every buffer and mbarrier lives in dynamic shared memory.
struct SmemLayout {
  llvm::StringMap<int64_t> bufferOffset;
  /// Per pipe: offset of full[0]; full[depth], then empty[depth], 8 B each.
  llvm::StringMap<int64_t> pipeBarriers;
  /// V on demand (ws.await_vote): two mbarriers the voting roles arrive on,
  /// one per block parity (a load role that speculates reads a block's votes
  /// one block late: with one barrier it could fall two phases behind),
  /// then their decisions, [block parity][voter] as i32.
  int64_t voteBarrier = -1, voteFlags = -1;
  /// Kernels with tensor memory: the 4-byte slot tcgen05.alloc writes, then
  /// 8 bytes per stage of each ws.buffer for the target's use.
  int64_t tmemSlot = -1;
  /// The roles whose votes are published, in kernel order, and the first
  /// CTA row of each.
  llvm::StringMap<int64_t> voterIndex;
  SmallVector<int64_t> voterRowBegin;
  /// The voters vote on block 0 before their kv_loop (vote-first-block):
  /// block n's votes are phase n / 2 of barrier n % 2 (without: block 0 is
  /// kept unvoted and block n's votes are phase (n - 1) / 2).
  bool votesFirstBlock = false;
  int64_t totalBytes = 0;
};

/// State of one role while its steps are emitted.
struct RoleState {
  RoleOp role;
  bool inLoop = false;
  bool afterLoop = false; // Past the role's kv_loop (epilogue).
  Value kvBlock;          // i32 KV block index inside the loop.
  Value numBlocks;        // i32 number of KV blocks the CTA visits.
  Value sNext;            // S of block n+1 (intra-warpgroup overlap).
  bool sExp = false;      // s holds exponentials (ws.exp2), not scores.
  /// The register tiles async wgmma groups write, oldest first: each is
  /// fenced when a ws.mma_wait retires its group.
  SmallVector<Value *> inflight;
  SmallVector<Value> pRegs; // P packed for wgmma's A operand (P in regs).
  SmallVector<Value> qRegs; // Q as wgmma A fragments (ws.load_frag).
  int64_t rowBegin = 0;     // First CTA query row the role owns.
  int64_t barrierId = 0;    // Named barrier of the role's warpgroup.
  Value threadInRole;       // i32 in [0, threads of the role).
  /// A load role that fills cp_async pipes: all its threads run its steps.
  bool allThreadsLoad = false;
  // Register tiles and row statistics (compute roles).
  Value s;          // S accumulator struct.
  /// sm_100a: the thread's row of S (f32, masked), read once by
  /// ws.read_scores and kept in registers for row_max and exp2_store_p.
  SmallVector<Value> sRow;
  Value o;          // O accumulator struct (loop-carried).
  Value m[2], l[2]; // Running max (log2 domain) and partial sums.
  Value mBlock[2], mUse[2], corr[2];
  /// Each thread's max over its own scores of a fragment row (unscaled,
  /// before the quad reduction). BLASST kernels reduce it lazily: the vote
  /// needs no quad max, only the kept path does.
  Value mPart[2];
  Value rowIdx[2]; // Global query row of each fragment row.
  // BLASST.
  Value threshold;  // log2(lambda) for this sequence.
  Value skip;       // i1: this block is skipped (warpgroup-uniform).
  /// A deferred P V (`ws.mma pv {ahead = -1}`, blasst-v-on-demand's
  /// defer-pv): the loop runs one more iteration, and carries P of block n
  /// - 1 (`pHeld`, read by that P V) besides P of block n (`pRegs`), block
  /// n's correction factors (`corrHeld`, read by `ws.correct {ahead = 0}`)
  /// and the decision on block n - 1 (`skipPrev`; on block n: `skipCur`,
  /// what `ws.unless_skipped {ahead = -1 / 0}` test).
  bool deferPV = false;
  SmallVector<Value> pHeld;
  Value corrHeld[2];
  Value skipPrev, skipCur;
  Value scoresReal; // i1 when the scores may be of a block past the end.
  bool inSkipRegion = false;   // Emitting a ws.unless_skipped body.
  bool commitInRegion = false; // An async wgmma in it awaits its commit.
  bool stats = false;
  Value skipped; // i32 skipped-block counter (loop-carried).
  // A load role's ws.await_vote {speculate_after}: whether the decision on
  // the previous block is known (its votes were read), that decision (kept),
  // and how many blocks before it were kept in a row (loop-carried).
  int64_t speculateAfter = 0;
  /// --timeline: the role's first stamp slot (kTimelineLoad or
  /// kTimelineCompute; -1: the role is not stamped) and how many of its
  /// waits the current item stamped.
  int64_t timelineBase = -1;
  int64_t waitStamps = 0;
  Value voteKnown, voteKept, keptRun;
  // The load role counts the published votes (statistics of a kernel with
  // V on demand): the voters' skipped blocks (loop-carried).
  bool countVotes = false;
  Value voteSkips;
  /// A load role whose K copies follow the decisions (`kept_ahead`): the
  /// decisions on blocks n - 1, n - 2, ... (loop-carried; "skipped" before
  /// block 0).
  SmallVector<Value> skipHist;
  /// Paged KV (ws.kernel page_size): the page coordinates of a K/V copy,
  /// loaded from the block table before the load role waits for the stage
  /// (emitAcquire), so the table read overlaps the wait; keyed by the copy.
  llvm::DenseMap<Operation *, SmallVector<std::pair<Value, Value>>> pageCoords;

  /// The values a skipped block must leave untouched.
  SmallVector<Value> carried() { return {o, m[0], m[1], l[0], l[1]}; }
  void setCarried(ValueRange v) {
    o = v[0];
    m[0] = v[1];
    m[1] = v[2];
    l[0] = v[3];
    l[1] = v[4];
  }
};

/// FailureOr the shared memory layout of `kernel`.
FailureOr<SmemLayout> computeLayout(KernelOp kernel);

/// The kernel-wide state of one lowering: the ws.kernel, its layout and
/// protocol, the builder, and the values every role reads.
struct KernelEnv {
  KernelEnv(KernelOp kernel, const SmemLayout &layout,
            const ProtocolAnalysis &protocol);
  KernelOp kernel;
  const SmemLayout &layout;
  const ProtocolAnalysis &protocol;
  AttentionSpec spec;
  MLIRContext *ctx;
  OpBuilder b;
  Location loc;
  Type i1, i16, i32, i64, f32, elemTy;
  LLVM::LLVMPointerType ptrSh, ptrGen;
  int64_t blockM, blockN;

  LLVM::LLVMFuncOp func;
  Value smemBase, smemBase32;
  Value tid, warp, lane, mBlock, head, batch, kvHead;
  /// Persistent kernels, inside a role's tile loop: KV blocks the CTA
  /// streamed before this tile, and the tile count's parity (Q's phase).
  Value blockBase, tileParity;
  /// kv_multicast: the CTA's rank in its pair (0 or 1) and the partner's.
  Value ctaRank, partnerRank;
  /// Decode (ws.kernel q_group): q heads per KV head packed into the tile
  /// (0 otherwise), and the query tokens per tile (floor(block_m /
  /// q_group); rows q_group x tokensPerTile on are padding).
  int64_t qGroup = 0, tokensPerTile = 0;
  /// split_kv: query tiles per (batch, KV head), the split count and this
  /// CTA's split (from grid x), the first KV block of the split and its
  /// block count.
  Value numQTiles, numSplits, split, kvBegin, kvCount;
  /// split_kv: how many splits the CTA's tile has (the merge's count):
  /// numSplits, except with lean, where each tile has its own count (and
  /// the workspace is two slots per CTA, leanSlot below).
  Value tileSplits;
  /// Lean decode: the workspace holds two slots per CTA (its first and its
  /// last part: the tiles between are whole), C = nctaid.x: slot c for the
  /// part of the tile that holds the CTA's first block, C + c for its last
  /// tile's part otherwise. leanSlot: this part's slot (i64);
  /// leanFirstCta: the first CTA of the tile (i64: where the merge reads
  /// parts 1 .. tileSplits - 1, slots firstCta + j); leanZeroOffset: part
  /// 0's slot minus leanFirstCta (i32: 0, or C when the tile starts inside
  /// that CTA's share). balanced_splits sets leanFirstCta too: the tile's
  /// first CTA, c - split (its splits' slots are consecutive).
  Value leanSlot, leanFirstCta, leanZeroOffset;
  /// split_chunk: KV blocks per chunk of interleaved splits (split s walks
  /// chunks s, s + S, ...; kvBegin null); 0: one contiguous range each.
  int64_t splitChunk = 0;
  /// split_kv: the first key past the split, min(seqKV, (kvBegin + kvCount)
  /// * block_n): the mask ends there, so the overlap schedule's look-ahead
  /// past the split's last block (the next split's first) is fully masked,
  /// as a block past the sequence is.
  Value kvEndKey;
  /// per_seq_kv: this CTA's sequence's KV length (i32, read once from the
  /// lengths array); null: the launch's seqKV (parameter 7).
  Value kvLen;
  /// page_size: tokens per page (0: contiguous K/V), the i64 element offset
  /// of this sequence's block-table row, and the last table entry it may
  /// read (min(pages of its length, max_pages) - 1, at least 0).
  int64_t pageSize = 0;
  Value tableRow, lastTableEntry;
  /// --timeline: %globaltimer stamps into `blasst_stamps`
  /// (LoweringBase::stamp); itemOrdinal: a persistent role's item count on
  /// this CTA (null: 0).
  bool timeline = false;
  Value itemOrdinal;
};

/// The helpers both the driver and a target lowering use; the members are
/// references into the one KernelEnv.
class LoweringBase {
public:
  explicit LoweringBase(KernelEnv &env);

protected:
  // --- Constants and arithmetic -------------------------------------------
  Value c32(int64_t v) {
    return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v));
  }
  Value c64(int64_t v) {
    return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(v));
  }
  Value cf(float v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value ext64(Value x) { return arith::ExtUIOp::create(b, loc, i64, x); }
  Value add64(Value x, Value y) { return add(x, y); }
  Value mul64(Value x, Value y) { return mul(x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value divu(Value x, Value y) { return arith::DivUIOp::create(b, loc, x, y); }
  Value remu(Value x, Value y) { return arith::RemUIOp::create(b, loc, x, y); }
  Value cmp(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, p, x, y);
  }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
  /// Logical not of an i1.
  Value notI1(Value c) {
    return arith::XOrIOp::create(
        b, loc, c, arith::ConstantOp::create(b, loc, b.getBoolAttr(true)));
  }
  Value fadd(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value fsub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value fmul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value fmax(Value x, Value y) {
    return arith::MaxNumFOp::create(b, loc, x, y);
  }
  /// 2^x as one MUFU.EX2: the flush-to-zero form (llvm.exp2 becomes the
  /// non-ftz ex2.approx.f32, which ptxas wraps in a subnormal range fix-up:
  /// three more instructions per exponential). Softmax exponents are <= 0;
  /// results below 2^-126 flush to 0, far under bf16/f16 resolution of P.
  Value exp2(Value x) {
    return LLVM::CallIntrinsicOp::create(
               b, loc, f32, b.getStringAttr("llvm.nvvm.ex2.approx.ftz.f"),
               ValueRange{x})
        .getResult(0);
  }
  Value extract(Value s, int64_t i) {
    return LLVM::ExtractValueOp::create(b, loc, s, ArrayRef<int64_t>{i});
  }
  Value insert(Value s, Value v, int64_t i) {
    return LLVM::InsertValueOp::create(b, loc, s, v, ArrayRef<int64_t>{i});
  }
  Value param(unsigned p) { return func.getArgument(p); }
  /// The types of the first `count` kernel parameters: each index of the
  /// ABI (Param, kWorkspace ... kDecodeBatch) has one type in every kernel.
  SmallVector<Type> abiParamTypes(unsigned count) const;
  /// Stores `lse` (f32, natural log) at LSE[batchIdx, qHead, row] (kernel
  /// parameter kLse, [B, Hq, Sq] contiguous; i32 indices).
  void storeLse(Value batchIdx, Value qHead, Value seqQ, Value row,
                Value lse) {
    Value idx = add64(
        mul64(add64(mul64(ext64(batchIdx), c64(spec.numQHeads)), ext64(qHead)),
              ext64(seqQ)),
        ext64(row));
    Value ptr =
        LLVM::GEPOp::create(b, loc, ptrGen, f32, param(kLse), ValueRange{idx});
    LLVM::StoreOp::create(b, loc, lse, ptr, /*alignment=*/4);
  }

  // --- Shared memory ------------------------------------------------------
  /// ptr<3> to `smemBase + offset` (offset an i32 value).
  Value smemPtr(Value offset) {
    return LLVM::GEPOp::create(b, loc, ptrSh, b.getI8Type(), smemBase,
                               ValueRange{offset});
  }
  Value smemAddr(Value offset) { return add(smemBase32, offset); }
  /// The mbarrier of `pipe`, full or empty, at stage `stage` (i32).
  Value barrier(PipeOp pipe, bool full, Value stage) {
    int64_t base = layout.pipeBarriers.lookup(pipe.getSymName()) +
                   (full ? 0 : 8 * int64_t(pipe.getDepth()));
    return smemPtr(add(c32(base), mul(stage, c32(8))));
  }
  /// The KV block a pipe step works on: n + ahead in the loop, block 0
  /// before it, the last block after it. Null for once-per-CTA pipes.
  Value blockOf(RoleState &st, PipeOp pipe, std::optional<uint64_t> ahead) {
    if (st.inLoop)
      return ahead ? add(st.kvBlock, c32(int64_t(*ahead))) : st.kvBlock;
    if (!protocol.isPerBlock(pipe))
      return Value(); // Q: loaded once, stage 0, phase 0.
    // Before the loop `ahead = k` is block k (a prologue streaming ahead).
    return st.afterLoop ? sub(st.numBlocks, c32(1))
                        : c32(ahead ? int64_t(*ahead) : 0);
  }
  /// The KV block of the sequence that block `block` of this CTA's loop is
  /// (split KV: the split's first block added; interleaved splits: block
  /// j mod C of chunk split + (j / C) x numSplits). Past the split's last
  /// block this is past the tile's last block too (fully masked).
  Value absBlock(Value block) {
    if (splitChunk) {
      Value chunk = add(mul(divu(block, c32(splitChunk)), numSplits), split);
      return splitChunk == 1 ? chunk
                             : add(mul(chunk, c32(splitChunk)),
                                   remu(block, c32(splitChunk)));
    }
    return kvBegin ? add(block, kvBegin) : block;
  }
  /// Decode (q_group): the query token and the q head of tile row `row`
  /// (token-major packing: row = token_in_tile * q_group + head_in_group).
  /// When q_group does not divide block_m, rows q_group x tokensPerTile on
  /// are padding: their token is kPaddingToken, past any seq_q, so they
  /// abstain from the vote and are never stored (their q head must not
  /// address memory). Power-of-two groups keep the plain formula.
  static constexpr int64_t kPaddingToken = int64_t(1) << 30;
  Value tokenOfRow(Value row) {
    Value token = add(mul(mBlock, c32(tokensPerTile)), divu(row, c32(qGroup)));
    if (!hasPaddingRows())
      return token;
    return select(isPackedRow(row), token, c32(kPaddingToken));
  }
  /// Decode: whether q_group leaves padding rows at the end of the tile.
  bool hasPaddingRows() const { return qGroup && blockM % qGroup != 0; }
  /// Decode: whether tile row `row` holds a (token, q head) pair.
  Value isPackedRow(Value row) {
    return cmp(arith::CmpIPredicate::ult, row, c32(qGroup * tokensPerTile));
  }
  /// Decode with padding rows: every thread of the CTA zeroes the Q tile's
  /// padding rows (TMA never writes them), then fences them for the async
  /// proxy; the prologue's barrier orders them before the first wgmma.
  void zeroQPaddingRows(int64_t threads);
  Value qHeadOfRow(Value row) {
    return add(mul(kvHead, c32(qGroup)), remu(row, c32(qGroup)));
  }
  /// Whether `block` exists (0 <= block < numBlocks); null when always.
  Value blockExists(RoleState &st, PipeOp pipe, std::optional<uint64_t> ahead) {
    if (st.inLoop && !(ahead && *ahead != 0))
      return Value();
    if (!st.inLoop && !protocol.isPerBlock(pipe))
      return Value();
    if (!st.numBlocks)
      return Value();
    Value blk = blockOf(st, pipe, ahead);
    return arith::AndIOp::create(
        b, loc, cmp(arith::CmpIPredicate::sge, blk, c32(0)),
        cmp(arith::CmpIPredicate::slt, blk, st.numBlocks));
  }
  /// Stage and phase of `pipe` at `block` (null: stage 0, phase 0).
  std::pair<Value, Value> stagePhaseAt(PipeOp pipe, Value block) {
    int64_t depth = pipe.getDepth();
    if (!block)
      return {c32(0), tileParity ? tileParity : c32(0)};
    if (blockBase)
      block = add(block, blockBase);
    Value stage = remu(block, c32(depth));
    Value phase =
        arith::AndIOp::create(b, loc, divu(block, c32(depth)), c32(1));
    return {stage, phase};
  }
  std::pair<Value, Value> stagePhase(RoleState &st, PipeOp pipe,
                                     std::optional<uint64_t> ahead = {}) {
    return stagePhaseAt(pipe, blockOf(st, pipe, ahead));
  }
  // --- Control flow -------------------------------------------------------
  /// Opens `if (cond)` and moves the builder into its then-block.
  /// --timeline (a no-op without it): `value` (default %globaltimer) into
  /// blasst_stamps[row][slot], row = the CTA's linear id x kTimelineItems +
  /// env.itemOrdinal, by the thread for which `who` holds; items past
  /// kTimelineItems and rows past kTimelineRows are not stamped.
  void stamp(int64_t slot, Value who, Value value = Value());
  /// A role's item-start stamp (and its wait count reset), its first waits
  /// (stampWait, after an acquire's wait) and its item-end stamp.
  void stampItem(RoleState &st, bool end);
  void stampWait(RoleState &st);
  /// Who stamps for `st`'s role: its first thread.
  Value timelineThread(RoleState &st);

  scf::IfOp openIf(Value cond) {
    auto op = scf::IfOp::create(b, loc, TypeRange{}, cond, false);
    b.setInsertionPoint(op.thenBlock()->getTerminator());
    return op;
  }

  // --- Checks ---------------------------------------------------------------
  /// Softmax steps work on a KV block: inside the loop, or block 0 before
  /// it (a prologue).
  LogicalResult requireBlock(Operation *op, RoleState &st) {
    if (st.afterLoop)
      return op->emitOpError()
             << "is lowered inside the kv_loop or before it (on block 0), "
                "not after it";
    return success();
  }
  bool isProducer(PipeOp pipe, RoleState &st) {
    return pipe.getProducer() == st.role.getSymName();
  }
  PipeOp pipeOf(FlatSymbolRefAttr ref) {
    return cast<PipeOp>(SymbolTable::lookupSymbolIn(kernel, ref.getAttr()));
  }
  BufferOp bufferOf(FlatSymbolRefAttr ref) {
    return cast<BufferOp>(SymbolTable::lookupSymbolIn(kernel, ref.getAttr()));
  }
  int64_t offsetOf(BufferOp buf) {
    return layout.bufferOffset.lookup(buf.getSymName());
  }
  /// Whether the role whose rows start at CTA row `rowBegin` has a row below
  /// seqQ in this tile (statistics leave out a warpgroup with none).
  Value hasRows(int64_t rowBegin);
  /// Decode: the batch entries and KV heads of the launch's (batch, KV head,
  /// query tile) tiles: grid z and y, or for persistent CTAs (a 1-D grid)
  /// (or balanced_splits: a 1-D grid) parameter 20 and the spec's KV heads.
  std::pair<Value, Value> decodeTileGrid() {
    if (kernel.getPersistent() || kernel.getBalancedSplits())
      return {param(kDecodeBatch), c32(spec.numKVHeads)};
    return {NVVM::GridDimZOp::create(b, loc, i32),
            NVVM::GridDimYOp::create(b, loc, i32)};
  }

  KernelEnv &env;
  KernelOp &kernel;
  const SmemLayout &layout;
  const ProtocolAnalysis &protocol;
  AttentionSpec &spec;
  MLIRContext *&ctx;
  OpBuilder &b;
  Location &loc;
  Type &i1, &i16, &i32, &i64, &f32, &elemTy;
  LLVM::LLVMPointerType &ptrSh, &ptrGen;
  int64_t &blockM, &blockN;
  LLVM::LLVMFuncOp &func;
  Value &smemBase, &smemBase32;
  Value &tid, &warp, &lane, &mBlock, &head, &batch, &kvHead;
  Value &blockBase, &tileParity;
  Value &ctaRank, &partnerRank;
  int64_t &qGroup, &tokensPerTile;
  Value &numQTiles, &numSplits, &split, &kvBegin, &kvCount, &kvEndKey;
  Value &tileSplits;
  Value &leanSlot, &leanFirstCta, &leanZeroOffset;
  int64_t &splitChunk;
  Value &kvLen;
  int64_t &pageSize;
  Value &tableRow, &lastTableEntry;

  /// The KV length of this CTA's sequence: the per-sequence length with
  /// per_seq_kv, else the launch's seqKV.
  Value seqKVLen() { return kvLen ? kvLen : param(kSeqKV); }
};

} // namespace blasst::ws::lowering

#endif // BLASST_LIB_CONVERSION_WSTONVVM_LOWERINGBASE_H
