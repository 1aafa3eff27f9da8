//===- WSToNVVM.cpp - Lower sm_90a ws.kernels to NVVM ---------------------===//
//
// The lowering reads the schedule off the IR: smem buffers become 1024-byte
// aligned regions of dynamic shared memory holding 128B-swizzled tiles (the
// layout TMA writes and wgmma reads), pipes become full/empty mbarrier rings
// whose stage and phase follow the KV block index, roles become warp-range
// branches with setmaxnreg, and each step op has one emit function below.
//
// Register tiles use the wgmma accumulator fragment: thread t of a
// warpgroup (warp w = t / 32, lane l) holds, for an m64nN tile, rows
// 16w + l/4 + 8i (i = 0, 1) and columns 8j + 2(l%4) + k (k = 0, 1) at
// fragment index 4j + 2i + k. Row statistics (max, sum) are reduced across
// the four lanes of a quad with shfl.bfly 1 and 2.
//
//===----------------------------------------------------------------------===//
#include "blasst/Conversion/Passes.h"
#include "blasst/Dialect/WS/IR/WS.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

namespace blasst {
#define GEN_PASS_DEF_CONVERTWSTONVVM
#include "blasst/Conversion/Passes.h.inc"
} // namespace blasst

using namespace mlir;
using namespace blasst;
using namespace blasst::ws;

namespace {

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
  kNumParams
};

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
  /// The roles whose votes are published, in kernel order, and the first
  /// CTA row of each.
  llvm::StringMap<int64_t> voterIndex;
  SmallVector<int64_t> voterRowBegin;
  /// The published votes ask for statistics: the load role counts them.
  bool voteStats = false;
  int64_t totalBytes = 0;
};

FailureOr<SmemLayout> computeLayout(KernelOp kernel) {
  SmemLayout layout;
  int64_t offset = 0;
  for (auto buf : kernel.getBody().getOps<BufferOp>()) {
    if (buf.getSpace() != MemorySpace::smem || buf.getAliases())
      continue;
    offset = llvm::alignTo(offset, kTileAlign);
    layout.bufferOffset[buf.getSymName()] = offset;
    offset += buf.getStageBytes() * int64_t(buf.getStages());
  }
  for (auto buf : kernel.getBody().getOps<BufferOp>())
    if (buf.getSpace() == MemorySpace::smem && buf.getAliases())
      layout.bufferOffset[buf.getSymName()] =
          layout.bufferOffset[*buf.getAliases()];
  offset = llvm::alignTo(offset, 8);
  for (auto pipe : kernel.getBody().getOps<PipeOp>()) {
    layout.pipeBarriers[pipe.getSymName()] = offset;
    offset += 2 * 8 * int64_t(pipe.getDepth());
  }
  if (kernel.walk([](AwaitVoteOp) { return WalkResult::interrupt(); })
          .wasInterrupted()) {
    for (auto role : kernel.getBody().getOps<RoleOp>())
      role.walk([&](VoteOp v) {
        if (v.getPublish() &&
            layout.voterIndex
                .try_emplace(role.getSymName(), layout.voterIndex.size())
                .second) {
          layout.voterRowBegin.push_back(role.getRowBegin().value_or(0));
          layout.voteStats |= v.getStats();
        }
      });
    layout.voteBarrier = offset;
    layout.voteFlags = offset + 2 * 8;
    offset += 2 * 8 + 2 * 4 * int64_t(layout.voterIndex.size());
  }
  layout.totalBytes = offset;
  if (offset > kSharedMemoryBytes)
    return kernel.emitOpError()
           << "needs " << offset << " bytes of shared memory with barriers, "
           << "the limit is " << kSharedMemoryBytes;
  return layout;
}

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
  // Register tiles and row statistics (compute roles).
  Value s;          // S accumulator struct.
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
  Value scoresReal; // i1 when the scores may be of a block past the end.
  bool inSkipRegion = false;      // Emitting a ws.unless_skipped body.
  bool commitInRegion = false; // An async wgmma in it awaits its commit.
  bool stats = false;
  Value skipped; // i32 skipped-block counter (loop-carried).
  // A load role's ws.await_vote {speculate_after}: whether the decision on
  // the previous block is known (its votes were read), that decision (kept),
  // and how many blocks before it were kept in a row (loop-carried).
  int64_t speculateAfter = 0;
  Value voteKnown, voteKept, keptRun;
  // The load role counts the published votes (statistics of a kernel with
  // V on demand): the voters' skipped blocks (loop-carried).
  bool countVotes = false;
  Value voteSkips;

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

class SM90Emitter {
public:
  SM90Emitter(KernelOp kernel, const SmemLayout &layout)
      : kernel(kernel), layout(layout), spec(kernel.getSpec().toSpec()),
        ctx(kernel.getContext()), b(ctx), loc(kernel.getLoc()) {
    i1 = b.getI1Type();
    i16 = b.getI16Type();
    i32 = b.getI32Type();
    i64 = b.getI64Type();
    f32 = b.getF32Type();
    ptrSh = LLVM::LLVMPointerType::get(ctx, 3);
    ptrGen = LLVM::LLVMPointerType::get(ctx);
    elemTy = attn::getElementType(ctx, spec.dtype);
    blockM = kernel.getBlockM();
    blockN = kernel.getBlockN();
    kernel.walk([&](AcquireOp a) {
      if (a->getParentOfType<KVLoopOp>())
        perBlockPipes.insert(
            SymbolTable::lookupSymbolIn(kernel, a.getPipeAttr().getAttr()));
    });
  }

  /// Emits the kernel into `module`; the caller erases the ws.kernel.
  LogicalResult emit(ModuleOp module);

private:
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
  Type accType(int64_t n) {
    return LLVM::LLVMStructType::getLiteral(ctx, SmallVector<Type>(n / 2, f32));
  }
  Value param(Param p) { return func.getArgument(p); }

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
    if (!perBlockPipes.contains(pipe))
      return Value(); // Q: loaded once, stage 0, phase 0.
    return st.afterLoop ? sub(st.numBlocks, c32(1)) : c32(0);
  }
  /// Whether `block` exists (0 <= block < numBlocks); null when always.
  Value blockExists(RoleState &st, PipeOp pipe, std::optional<uint64_t> ahead) {
    if (st.inLoop && !(ahead && *ahead != 0))
      return Value();
    if (!st.inLoop && !perBlockPipes.contains(pipe))
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
  /// A wgmma shared memory descriptor: 128B swizzle, byte offsets lbo/sbo.
  Value descriptor(Value addr, int64_t lbo, int64_t sbo) {
    Value a = arith::ExtUIOp::create(b, loc, i64, addr);
    a = arith::AndIOp::create(b, loc, arith::ShRUIOp::create(b, loc, a, c64(4)),
                              c64(0x3FFF));
    int64_t hi = ((lbo >> 4) & 0x3FFF) << 16 | ((sbo >> 4) & 0x3FFF) << 32 |
                 int64_t(1) << 62;
    return arith::OrIOp::create(b, loc, a, c64(hi));
  }

  // --- Control flow -------------------------------------------------------
  /// Opens `if (cond)` and moves the builder into its then-block.
  scf::IfOp openIf(Value cond) {
    auto op = scf::IfOp::create(b, loc, TypeRange{}, cond, false);
    b.setInsertionPoint(op.thenBlock()->getTerminator());
    return op;
  }

  // --- Pieces -------------------------------------------------------------
  LogicalResult emitKernel(ModuleOp module);
  void emitPrologue();
  LogicalResult emitRole(RoleOp role);
  LogicalResult emitSteps(Block &block, RoleState &st);
  LogicalResult emitPersistentRole(RoleOp role, RoleState &st);
  void startTile(RoleState &st);
  LogicalResult emitStep(Operation *op, RoleState &st);
  LogicalResult emitLoop(KVLoopOp loop, RoleState &st);
  Value numKVBlocks();

  LogicalResult emitAcquire(AcquireOp op, RoleState &st);
  LogicalResult emitRelease(ReleaseOp op, RoleState &st);
  LogicalResult emitTmaLoad(TmaLoadOp op, RoleState &st);
  LogicalResult emitMma(MmaOp op, RoleState &st);
  LogicalResult emitRowMax(RowMaxOp op, RoleState &st);
  /// The quad-reduced, scaled block max of fragment row i (once).
  void ensureBlockMax(RoleState &st, int i);
  LogicalResult emitSoftmaxUpdate(SoftmaxUpdateOp op, RoleState &st);
  LogicalResult emitExp2Store(Exp2StoreOp op, RoleState &st);
  LogicalResult emitCorrect(CorrectOp op, RoleState &st);
  LogicalResult emitEpilogue(EpilogueOp op, RoleState &st);
  LogicalResult emitVote(VoteOp op, RoleState &st);
  LogicalResult emitAwaitVote(AwaitVoteOp op, RoleState &st);
  /// Waits for the votes on block `block` (>= 1) and returns whether every
  /// voter skipped it, and (with countVotes) how many voters with rows
  /// skipped it.
  std::pair<Value, Value> readVotes(Value block, RoleState &st);
  /// Whether the role whose rows start at CTA row `rowBegin` has a row below
  /// seqQ in this tile (statistics leave out a warpgroup with none).
  Value hasRows(int64_t rowBegin);
  void emitVoteStatsFlush(RoleState &st);
  /// Adds the counts to stats[batch][head] = {visited, skipped}.
  void addStats(Value visited, Value skipped);
  /// The vote barrier of blocks of parity `parity`.
  Value voteBarrier(Value parity) {
    return smemPtr(add(c32(layout.voteBarrier), mul(parity, c32(8))));
  }
  /// The i32 slot of voter `voter`'s decision on a block of parity `parity`.
  Value voteFlag(Value parity, int64_t voter) {
    return smemPtr(
        add(c32(layout.voteFlags + 4 * voter),
            mul(parity, c32(4 * int64_t(layout.voterIndex.size())))));
  }
  LogicalResult emitMmaWait(MmaWaitOp op, RoleState &st);
  LogicalResult emitExp2ToRegisters(Exp2StoreOp op, RoleState &st, int64_t n);
  LogicalResult checkExp2Inputs(Operation *op, FlatSymbolRefAttr scores,
                                RoleState &st);
  LogicalResult emitExp2InPlace(Exp2Op op, RoleState &st);
  LogicalResult emitPackP(PackPOp op, RoleState &st);
  Value expOf(RoleState &st, int i, int64_t idx);
  Value exponentiate(RoleState &st, int64_t n);
  void packP(RoleState &st, Value s, int64_t n);
  Value packPair(Value x, Value y);
  Value expPair(RoleState &st, int i, int64_t j, Value &sum);
  /// wgmma with A from registers (four .b32 per k-step); `zeroAcc`: the
  /// accumulator input is ignored (scale-d 0); `transB`: B is MN-major.
  Value wgmmaRegisterA(Value acc, ArrayRef<Value> a, Value descB, int64_t n,
                       bool zeroAcc, bool transB);
  LogicalResult emitLoadFrag(LoadFragOp op, RoleState &st);
  LogicalResult emitTurn(Operation *op, FlatSymbolRefAttr order, bool wait,
                         RoleState &st);
  Value fenceRegisters(Value acc);
  LogicalResult emitUnlessSkipped(UnlessSkippedOp op, RoleState &st);
  LogicalResult emitFusedSkip(UnlessSkippedOp r1, ArrayRef<Operation *> mids,
                              UnlessSkippedOp r2, RoleState &st);
  /// What leaves skip regions besides the running state (o, m, l): the
  /// correction factors and mUse (softmax_update), the exponentials in S
  /// (exp2), P in registers (numP i32 values).
  struct SkipOutputs {
    bool update = false, exps = false;
    int64_t numP = 0;
  };
  SkipOutputs skipOutputsOf(ArrayRef<UnlessSkippedOp> regions);
  /// The kept path's yield: st's values.
  SmallVector<Value> keptYield(RoleState &st, const SkipOutputs &out);
  /// The skip path's yield: the running state `carried`, correction 1 (mUse
  /// 0: unused), S as it was, P as it was (or undef).
  SmallVector<Value> skippedYield(ValueRange carried, const SkipOutputs &out,
                                  Value s, ArrayRef<Value> pBefore);
  /// P as the skip path keeps it: st's, or undef when st holds none.
  SmallVector<Value> pBeforeRegion(RoleState &st, const SkipOutputs &out);
  /// Reads a skip region's results back into st.
  void takeSkipResults(RoleState &st, ValueRange r, const SkipOutputs &out);
  void emitStatsFlush(RoleState &st);

  Value quadReduce(Value v, bool isMax);
  /// The register tile `buf` names must be the fragment `frag` holds
  /// (64 rows; n columns are n / 2 values per thread).
  LogicalResult checkFragment(Operation *op, FlatSymbolRefAttr buf, Value frag,
                              StringRef what) {
    if (!frag)
      return op->emitOpError() << "needs " << what << " computed earlier in "
                               << "the same role";
    BufferOp b = bufferOf(buf);
    int64_t held = cast<LLVM::LLVMStructType>(frag.getType()).getBody().size();
    if (b.getShape()[0] != 64 || b.getShape()[1] != 2 * held)
      return op->emitOpError()
             << buf << " is " << b.getShape()[0] << "x" << b.getShape()[1]
             << " but the " << what << " it names is 64x" << 2 * held;
    return success();
  }
  LogicalResult requireLoop(Operation *op, RoleState &st) {
    if (!st.inLoop)
      return op->emitOpError() << "is lowered inside the kv_loop only";
    return success();
  }
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

  KernelOp kernel;
  const SmemLayout &layout;
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
  int64_t nextBarrierId = 1; // 0 is __syncthreads.
  /// Pipes that carry one stage per KV block (acquired in a kv_loop).
  llvm::SmallDenseSet<Operation *> perBlockPipes;
  /// Per "order/role": the named barrier the role waits on for its turn and
  /// its thread count (the role's threads + the previous role's).
  llvm::StringMap<std::pair<int64_t, int64_t>> turnBarriers;
  /// kv_multicast: the CTA's rank in its pair (0 or 1), the partner's, and
  /// the pipes whose stages both CTAs fill (K and V): their empty barriers
  /// also count the partner's consumer warps, which arrive remotely.
  Value ctaRank, partnerRank;
  llvm::SmallDenseSet<Operation *> multicastPipes;
  /// All threads of both CTAs of a pair (kv_multicast).
  void clusterSync();
};

} // namespace

//===----------------------------------------------------------------------===//
// Kernel skeleton
//===----------------------------------------------------------------------===//

LogicalResult SM90Emitter::emitKernel(ModuleOp module) {
  b.setInsertionPointToEnd(module.getBody());
  StringRef smemName = "__blasst_dynamic_smem";
  if (!module.lookupSymbol(smemName))
    LLVM::GlobalOp::create(b, loc, LLVM::LLVMArrayType::get(b.getI8Type(), 0),
                           /*isConstant=*/false, LLVM::Linkage::External,
                           smemName, Attribute(), /*alignment=*/kTileAlign,
                           /*addrSpace=*/3);

  SmallVector<Type> params(kNumParams);
  params[kTmQ] = params[kTmK] = params[kTmV] = ptrGen;
  params[kO] = params[kLse] = params[kStats] = ptrGen;
  params[kSeqQ] = params[kSeqKV] = i32;
  params[kOStrideB] = params[kOStrideS] = params[kOStrideH] = i64;
  params[kScaleLog2] = params[kLog2Threshold] = f32;
  auto fnType =
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), params);
  func = LLVM::LLVMFuncOp::create(b, loc, kernel.getSymName(), fnType);
  func->setAttr(NVVM::NVVMDialect::getKernelFuncAttrName(), b.getUnitAttr());
  int32_t threads = kernel.getNumWarps() * 32;
  func->setAttr(NVVM::NVVMDialect::getMaxntidAttrName(),
                b.getDenseI32ArrayAttr({threads, 1, 1}));
  // A register cap at entry is what lets setmaxnreg move registers.
  func->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                b.getI32IntegerAttr(1));
  auto tmapType = LLVM::LLVMArrayType::get(b.getI8Type(), 128);
  for (unsigned i : {kTmQ, kTmK, kTmV}) {
    func.setArgAttr(i, LLVM::LLVMDialect::getByValAttrName(),
                    TypeAttr::get(tmapType));
    func.setArgAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                    b.getI64IntegerAttr(64));
    func.setArgAttr(i, NVVM::NVVMDialect::getGridConstantAttrName(),
                    b.getUnitAttr());
  }
  for (unsigned i : {kO, kLse, kStats})
    func.setArgAttr(i, LLVM::LLVMDialect::getNoAliasAttrName(),
                    b.getUnitAttr());

  Block *entry = func.addEntryBlock(b);
  b.setInsertionPointToStart(entry);
  smemBase = LLVM::AddressOfOp::create(b, loc, ptrSh, smemName);
  smemBase32 = LLVM::PtrToIntOp::create(b, loc, i32, smemBase);
  tid = NVVM::ThreadIdXOp::create(b, loc, i32);
  warp = divu(tid, c32(32));
  lane = remu(tid, c32(32));
  mBlock = NVVM::BlockIdXOp::create(b, loc, i32);
  // Causal: the hardware hands out CTAs in ctaid.x order, so the last query
  // blocks (the longest causal tiles) go first and the short ones fill the
  // tail of the last wave.
  if (spec.causal && !kernel.getPersistent())
    mBlock = sub(sub(NVVM::GridDimXOp::create(b, loc, i32), c32(1)), mBlock);
  head = NVVM::BlockIdYOp::create(b, loc, i32);
  batch = NVVM::BlockIdZOp::create(b, loc, i32);
  kvHead = divu(head, c32(spec.gqaRatio()));
  if (kernel.getKvMulticast()) {
    ctaRank = NVVM::BlockInClusterIdXOp::create(b, loc, i32);
    partnerRank = arith::XOrIOp::create(b, loc, ctaRank, c32(1));
    kernel.walk([&](TmaLoadOp load) {
      if (load.getTensor() == Tensor::k || load.getTensor() == Tensor::v)
        multicastPipes.insert(pipeOf(load.getPipeAttr()));
    });
  }
  emitPrologue();
  // Turn barriers first: a role passes the turn to the next role's barrier.
  for (auto order : kernel.getBody().getOps<OrderOp>()) {
    ArrayAttr roles = order.getRoles();
    for (auto [i, r] : llvm::enumerate(roles)) {
      auto prev = cast<RoleOp>(SymbolTable::lookupSymbolIn(
          kernel,
          cast<FlatSymbolRefAttr>(roles[(i + roles.size() - 1) % roles.size()])
              .getAttr()));
      auto self = cast<RoleOp>(SymbolTable::lookupSymbolIn(
          kernel, cast<FlatSymbolRefAttr>(r).getAttr()));
      int64_t id = nextBarrierId++;
      if (id > 15)
        return order.emitOpError() << "needs more than 15 named barriers";
      turnBarriers[(order.getSymName() + "/" + self.getSymName()).str()] = {
          id, 32 * (self.getNumWarps() + prev.getNumWarps())};
    }
  }
  for (auto role : kernel.getBody().getOps<RoleOp>())
    if (failed(emitRole(role)))
      return failure();
  // A CTA of a pair may not exit while its partner can still arrive on its
  // barriers or multicast into its shared memory.
  if (kernel.getKvMulticast())
    clusterSync();
  LLVM::ReturnOp::create(b, loc, ValueRange{});

  // What the host needs to launch it (blasst-compile writes <stem>.meta).
  func->setAttr("blasst.smem_bytes", b.getI64IntegerAttr(layout.totalBytes));
  func->setAttr("blasst.threads", b.getI64IntegerAttr(threads));
  if (kernel.getPersistent())
    func->setAttr("blasst.persistent", b.getUnitAttr());
  if (kernel.getKvMulticast()) {
    func->setAttr(NVVM::NVVMDialect::getClusterDimAttrName(),
                  b.getDenseI32ArrayAttr({2, 1, 1}));
    func->setAttr("blasst.cluster_m", b.getI32IntegerAttr(2));
  }
  func->setAttr("blasst.block_m", b.getI64IntegerAttr(blockM));
  func->setAttr("blasst.block_n", b.getI64IntegerAttr(blockN));
  func->setAttr("blasst.spec", kernel.getSpecAttr());
  return success();
}

void SM90Emitter::emitPrologue() {
  // Thread 0 initialises every mbarrier; the fences make the init visible to
  // the other threads and to the TMA unit (async proxy) before anyone uses it.
  scf::IfOp init = openIf(cmp(arith::CmpIPredicate::eq, tid, c32(0)));
  for (auto pipe : kernel.getBody().getOps<PipeOp>()) {
    auto producer = cast<RoleOp>(
        SymbolTable::lookupSymbolIn(kernel, pipe.getProducerAttr().getAttr()));
    int64_t fullCount =
        producer.getKind() == RoleKind::load ? 1 : producer.getNumWarps() * 32;
    // kv_multicast: the partner CTA's consumer warps also release K/V
    // stages here (lane 0 of each, emitRelease).
    bool remote = multicastPipes.contains(pipe);
    int64_t emptyCount = 0;
    for (Attribute c : pipe.getConsumers()) {
      auto role = cast<RoleOp>(SymbolTable::lookupSymbolIn(
          kernel, cast<FlatSymbolRefAttr>(c).getAttr()));
      emptyCount +=
          role.getKind() == RoleKind::load ? 1 : role.getNumWarps() * 32;
      if (remote)
        emptyCount += role.getNumWarps();
    }
    for (int64_t s = 0; s < int64_t(pipe.getDepth()); ++s) {
      NVVM::MBarrierInitOp::create(b, loc, barrier(pipe, true, c32(s)),
                                   c32(fullCount), Value());
      NVVM::MBarrierInitOp::create(b, loc, barrier(pipe, false, c32(s)),
                                   c32(emptyCount), Value());
    }
  }
  if (layout.voteBarrier >= 0)
    for (int64_t parity = 0; parity < 2; ++parity)
      NVVM::MBarrierInitOp::create(
          b, loc, smemPtr(c32(layout.voteBarrier + 8 * parity)),
          c32(int64_t(layout.voterIndex.size())), Value());
  NVVM::FenceMbarrierInitOp::create(b, loc);
  NVVM::FenceProxyOp::create(
      b, loc, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
  b.setInsertionPointAfter(init);
  // A pair's barriers are initialised before either CTA arrives on the
  // other's or multicasts into it.
  if (kernel.getKvMulticast())
    clusterSync();
  else
    NVVM::Barrier0Op::create(b, loc);
}

void SM90Emitter::clusterSync() {
  NVVM::ClusterArriveOp::create(b, loc, b.getUnitAttr());
  NVVM::ClusterWaitOp::create(b, loc, b.getUnitAttr());
}

Value SM90Emitter::numKVBlocks() {
  // ceil(seqKV / blockN); causal (bottom-right): keys up to the last row's
  // diagonal, (mBlock + 1) * blockM + seqKV - seqQ.
  Value seqKV = param(kSeqKV);
  Value n = divu(add(seqKV, c32(blockN - 1)), c32(blockN));
  if (!spec.causal)
    return n;
  Value lastKey =
      sub(add(mul(add(mBlock, c32(1)), c32(blockM)), seqKV), param(kSeqQ));
  lastKey = arith::MaxSIOp::create(b, loc, lastKey, c32(0));
  Value nCausal = divu(add(lastKey, c32(blockN - 1)), c32(blockN));
  return arith::MinUIOp::create(b, loc, n, nCausal);
}

LogicalResult SM90Emitter::emitRole(RoleOp role) {
  int64_t begin = role.getWarpBegin(), end = role.getWarpEnd();
  Value inRole = arith::AndIOp::create(
      b, loc, cmp(arith::CmpIPredicate::uge, warp, c32(begin)),
      cmp(arith::CmpIPredicate::ult, warp, c32(end)));
  OpBuilder::InsertionGuard guard(b);
  openIf(inRole);

  // setmaxnreg moves registers between warpgroups relative to the cap the
  // kernel starts with (65536 / threads, rounded down to a multiple of 8).
  if (std::optional<int64_t> regs = role.getRegs()) {
    int64_t start = (kRegistersPerCTA / (kernel.getNumWarps() * 32)) / 8 * 8;
    if (*regs != start)
      NVVM::SetMaxRegisterOp::create(
          b, loc, b.getI32IntegerAttr(*regs),
          NVVM::SetMaxRegisterActionAttr::get(
              ctx, *regs > start ? NVVM::SetMaxRegisterAction::increase
                                 : NVVM::SetMaxRegisterAction::decrease));
  }

  RoleState st;
  st.role = role;
  st.threadInRole = sub(tid, c32(begin * 32));
  VoteOp vote;
  role.walk([&](VoteOp v) { vote = v; });
  // With V on demand the load role reads every published vote: it counts
  // them, and the voters keep no counters (their loop is the critical one).
  bool voterCounted = vote && vote.getPublish() && layout.voteBarrier >= 0;
  st.stats = vote && vote.getStats() && role.getKind() == RoleKind::compute &&
             !voterCounted;
  role.walk([&](AwaitVoteOp a) {
    st.speculateAfter = int64_t(a.getSpeculateAfter().value_or(0));
    st.countVotes = layout.voteStats;
  });
  if (!kernel.getPersistent())
    startTile(st);
  st.rowBegin = role.getRowBegin().value_or(0);
  if (role.getKind() == RoleKind::load) {
    // One thread issues every TMA copy and drives the pipes.
    openIf(cmp(arith::CmpIPredicate::eq, tid, c32(begin * 32)));
  } else if (role.getKind() == RoleKind::compute) {
    st.barrierId = nextBarrierId++;
    if (st.barrierId > 15)
      return role.emitOpError() << "needs more than 15 named barriers";
    if (vote) {
      // log2(lambda): fixed, or log2(a) - log2(L_kv) for this sequence.
      st.threshold = param(kLog2Threshold);
      if (spec.sparsity.kind == SparsityKind::ScaleFactor) {
        Value lkv = arith::UIToFPOp::create(b, loc, f32, param(kSeqKV));
        Value log2L =
            LLVM::CallIntrinsicOp::create(
                b, loc, f32, b.getStringAttr("llvm.nvvm.lg2.approx.f"),
                ValueRange{lkv})
                .getResult(0);
        st.threshold = fsub(st.threshold, log2L);
      }
    }
  } else {
    return role.emitOpError()
           << "role kind '" << stringifyRoleKind(role.getKind())
           << "' is not lowered on sm_90a (load and compute roles are)";
  }
  if (!kernel.getPersistent())
    return emitSteps(role.getBody().front(), st);
  return emitPersistentRole(role, st);
}

/// The state a role starts each tile with: the tile's KV block count, and
/// for compute roles O = 0, m = -inf, l = 0 and zero block counters.
void SM90Emitter::startTile(RoleState &st) {
  st.inLoop = st.afterLoop = false;
  st.s = st.sNext = st.skip = st.scoresReal = Value();
  st.pRegs.clear();
  st.qRegs.clear();
  st.inflight.clear();
  for (int i = 0; i < 2; ++i)
    st.mBlock[i] = st.mPart[i] = st.mUse[i] = st.corr[i] = Value();
  st.numBlocks = numKVBlocks();
  if (st.countVotes)
    st.voteSkips = c32(0);
  if (st.role.getKind() != RoleKind::compute)
    return;
  st.o = LLVM::ZeroOp::create(b, loc, accType(spec.headDimV));
  for (int i = 0; i < 2; ++i) {
    st.m[i] = cf(-INFINITY);
    st.l[i] = cf(0.0f);
  }
  if (st.stats)
    st.skipped = c32(0);
}

/// A persistent CTA walks the (query block, q head) tiles of its batch entry
/// (grid z), ctaid.x, ctaid.x + nctaid.x, ..., the longest causal tiles
/// (the last query blocks) first. The role's steps run once per tile; the
/// K/V rings continue across tiles (a loop-carried count of the blocks
/// already streamed), the Q pipe flips phase per tile.
LogicalResult SM90Emitter::emitPersistentRole(RoleOp role, RoleState &st) {
  Value numMBlocks = divu(add(param(kSeqQ), c32(blockM - 1)), c32(blockM));
  Value tiles = mul(numMBlocks, c32(spec.numQHeads));
  Value first = NVVM::BlockIdXOp::create(b, loc, i32);
  Value stride = NVVM::GridDimXOp::create(b, loc, i32);
  auto forOp = scf::ForOp::create(b, loc, first, tiles, stride,
                                  ValueRange{c32(0), c32(0)});
  Value savedM = mBlock, savedHead = head, savedKV = kvHead;
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(forOp.getBody());
    Value tile = forOp.getInductionVar();
    mBlock = sub(sub(numMBlocks, c32(1)), divu(tile, c32(spec.numQHeads)));
    head = remu(tile, c32(spec.numQHeads));
    kvHead = divu(head, c32(spec.gqaRatio()));
    blockBase = forOp.getRegionIterArgs()[0];
    tileParity = forOp.getRegionIterArgs()[1];
    startTile(st);
    Value streamed = add(blockBase, st.numBlocks);
    if (failed(emitSteps(role.getBody().front(), st)))
      return failure();
    scf::YieldOp::create(b, loc,
                         ValueRange{streamed, arith::XOrIOp::create(
                                                  b, loc, tileParity, c32(1))});
  }
  mBlock = savedM;
  head = savedHead;
  kvHead = savedKV;
  blockBase = tileParity = Value();
  return success();
}

/// The second of two skip regions that lower to one branch with `first`,
/// and the steps between them, or null. Two skip regions with only
/// mma_wait / release steps between them, in the shape measured on the H200
/// (the overlap schedule with P in registers: the softmax, the P V wait and
/// V's release, the correction and P) lower to one branch, the middle steps
/// on both paths: ptxas schedules the kept path as one block (0.6-2% faster
/// with skipping, docs/results/2026-11-29-session8.md §6).
static UnlessSkippedOp fusedPartner(UnlessSkippedOp first,
                                    SmallVectorImpl<Operation *> &mids) {
  auto only = [](UnlessSkippedOp r, auto allowed) {
    return llvm::all_of(r.getBody().front(), allowed);
  };
  Operation *op = first->getNextNode();
  for (; op && isa<MmaWaitOp, ReleaseOp>(op); op = op->getNextNode())
    mids.push_back(op);
  auto second = dyn_cast_or_null<UnlessSkippedOp>(op);
  if (mids.empty() || !second ||
      !only(first,
            [](Operation &o) { return isa<SoftmaxUpdateOp, Exp2Op>(o); }) ||
      !only(second, [](Operation &o) { return isa<CorrectOp, PackPOp>(o); }))
    return UnlessSkippedOp();
  return second;
}

LogicalResult SM90Emitter::emitSteps(Block &block, RoleState &st) {
  for (Operation *op = block.empty() ? nullptr : &block.front(); op;
       op = op->getNextNode()) {
    SmallVector<Operation *> mids;
    if (auto first = dyn_cast<UnlessSkippedOp>(op))
      if (UnlessSkippedOp second = fusedPartner(first, mids)) {
        if (failed(emitFusedSkip(first, mids, second, st)))
          return failure();
        op = second;
        continue;
      }
    if (failed(emitStep(op, st)))
      return failure();
  }
  return success();
}

LogicalResult SM90Emitter::emitFusedSkip(UnlessSkippedOp r1,
                                         ArrayRef<Operation *> mids,
                                         UnlessSkippedOp r2, RoleState &st) {
  if (!st.skip)
    return r1.emitOpError() << "needs a preceding ws.vote";
  SkipOutputs out = skipOutputsOf({r1, r2});
  if (out.exps && !st.s)
    return r1.emitOpError() << "exponentiates scores nobody computed";
  // Snapshot what the kept path changes, for the skip path.
  Value o0 = st.o, m0[2] = {st.m[0], st.m[1]}, l0[2] = {st.l[0], st.l[1]};
  Value corr0[2] = {st.corr[0], st.corr[1]}, mUse0[2] = {st.mUse[0], st.mUse[1]};
  Value s0 = st.s, mBlock0[2] = {st.mBlock[0], st.mBlock[1]};
  Value mPart0[2] = {st.mPart[0], st.mPart[1]};
  bool sExp0 = st.sExp;
  SmallVector<Value> pRegs0 = st.pRegs;
  SmallVector<Value *> inflight0 = st.inflight;
  SmallVector<Value> pBefore = pBeforeRegion(st, out);
  SmallVector<Type> types;
  for (Value v : skippedYield(st.carried(), out, st.s, pBefore))
    types.push_back(v.getType());
  auto ifOp = scf::IfOp::create(b, loc, types, notI1(st.skip),
                                /*withElseRegion=*/true);
  size_t inflightAfter = 0;
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    st.inSkipRegion = true;
    if (failed(emitSteps(r1.getBody().front(), st)))
      return failure();
    st.inSkipRegion = false;
    for (Operation *m : mids)
      if (failed(emitStep(m, st)))
        return failure();
    st.inSkipRegion = true;
    if (failed(emitSteps(r2.getBody().front(), st)))
      return failure();
    st.inSkipRegion = false;
    if (out.update && !st.corr[0])
      return r1.emitOpError() << "computes no correction factors";
    if (out.numP && int64_t(st.pRegs.size()) != out.numP)
      return r2.emitOpError() << "computes no P in registers";
    scf::YieldOp::create(b, loc, keptYield(st, out));
    inflightAfter = st.inflight.size();
    // The skip path: the state as it was, then the middle steps.
    b.setInsertionPointToStart(ifOp.elseBlock());
    st.o = o0;
    for (int i = 0; i < 2; ++i) {
      st.m[i] = m0[i];
      st.l[i] = l0[i];
      st.corr[i] = corr0[i];
      st.mUse[i] = mUse0[i];
      st.mBlock[i] = mBlock0[i];
      st.mPart[i] = mPart0[i];
    }
    st.s = s0;
    st.sExp = sExp0;
    st.pRegs = pRegs0;
    st.inflight = inflight0;
    for (Operation *m : mids)
      if (failed(emitStep(m, st)))
        return failure();
    if (st.inflight.size() != inflightAfter)
      return r1.emitOpError() << "fused skip regions: the paths retire "
                                 "different wgmma groups";
    scf::YieldOp::create(b, loc,
                         skippedYield(st.carried(), out, s0, pBefore));
  }
  takeSkipResults(st, ifOp.getResults(), out);
  for (int i = 0; i < 2; ++i)
    st.mBlock[i] = mBlock0[i];
  return success();
}

SM90Emitter::SkipOutputs
SM90Emitter::skipOutputsOf(ArrayRef<UnlessSkippedOp> regions) {
  SkipOutputs out;
  for (UnlessSkippedOp r : regions) {
    Block &body = r.getBody().front();
    out.update |= !body.getOps<SoftmaxUpdateOp>().empty();
    out.exps |= !body.getOps<Exp2Op>().empty();
    for (auto e : body.getOps<Exp2StoreOp>())
      if (bufferOf(e.getPAttr()).getSpace() == MemorySpace::regs)
        out.numP = bufferOf(e.getScoresAttr()).getShape()[1] / 4;
    for (auto e : body.getOps<PackPOp>())
      out.numP = bufferOf(e.getScoresAttr()).getShape()[1] / 4;
  }
  return out;
}

SmallVector<Value> SM90Emitter::keptYield(RoleState &st,
                                          const SkipOutputs &out) {
  SmallVector<Value> v = st.carried();
  if (out.update)
    v.append({st.corr[0], st.corr[1], st.mUse[0], st.mUse[1]});
  if (out.exps)
    v.push_back(st.s);
  if (out.numP)
    v.append(st.pRegs.begin(), st.pRegs.end());
  return v;
}

SmallVector<Value> SM90Emitter::skippedYield(ValueRange carried,
                                             const SkipOutputs &out, Value s,
                                             ArrayRef<Value> pBefore) {
  SmallVector<Value> v(carried.begin(), carried.end());
  if (out.update)
    v.append({cf(1.0f), cf(1.0f), cf(0.0f), cf(0.0f)});
  if (out.exps)
    v.push_back(s);
  v.append(pBefore.begin(), pBefore.end());
  return v;
}

SmallVector<Value> SM90Emitter::pBeforeRegion(RoleState &st,
                                              const SkipOutputs &out) {
  SmallVector<Value> p;
  for (int64_t i = 0; i < out.numP; ++i)
    p.push_back(int64_t(st.pRegs.size()) == out.numP
                    ? st.pRegs[i]
                    : Value(LLVM::UndefOp::create(b, loc, i32)));
  return p;
}

void SM90Emitter::takeSkipResults(RoleState &st, ValueRange r,
                                  const SkipOutputs &out) {
  st.setCarried(r.take_front(5));
  size_t k = 5;
  if (out.update) {
    for (int i = 0; i < 2; ++i) {
      st.corr[i] = r[k + i];
      st.mUse[i] = r[k + 2 + i];
    }
    k += 4;
  }
  if (out.exps)
    st.s = r[k++];
  if (out.numP)
    st.pRegs.assign(r.begin() + k, r.end());
}

LogicalResult SM90Emitter::emitStep(Operation *op, RoleState &st) {
  // On sm_90a the warpgroups that hold S, P and O (compute roles) run the
  // math; one elected thread of a load role issues the copies.
  bool compute = st.role.getKind() == RoleKind::compute;
  if (!compute && isa<MmaOp, RowMaxOp, SoftmaxUpdateOp, Exp2StoreOp, Exp2Op,
                      PackPOp, CorrectOp, EpilogueOp, VoteOp, UnlessSkippedOp,
                      MmaWaitOp, LoadFragOp>(op))
    return op->emitOpError()
           << "runs in a '" << stringifyRoleKind(st.role.getKind())
           << "' role; on sm_90a it is lowered in compute roles only";
  if (compute && isa<TmaLoadOp, AwaitVoteOp>(op))
    return op->emitOpError()
           << "runs in a compute role; on sm_90a TMA loads are issued by a "
              "load role";
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](KVLoopOp o) { return emitLoop(o, st); })
      .Case([&](AcquireOp o) { return emitAcquire(o, st); })
      .Case([&](ReleaseOp o) { return emitRelease(o, st); })
      .Case([&](TmaLoadOp o) { return emitTmaLoad(o, st); })
      .Case([&](MmaOp o) { return emitMma(o, st); })
      .Case([&](RowMaxOp o) { return emitRowMax(o, st); })
      .Case([&](SoftmaxUpdateOp o) { return emitSoftmaxUpdate(o, st); })
      .Case([&](Exp2StoreOp o) { return emitExp2Store(o, st); })
      .Case([&](Exp2Op o) { return emitExp2InPlace(o, st); })
      .Case([&](PackPOp o) { return emitPackP(o, st); })
      .Case([&](CorrectOp o) { return emitCorrect(o, st); })
      .Case([&](EpilogueOp o) { return emitEpilogue(o, st); })
      .Case([&](VoteOp o) { return emitVote(o, st); })
      .Case([&](AwaitVoteOp o) { return emitAwaitVote(o, st); })
      .Case([&](LoadFragOp o) { return emitLoadFrag(o, st); })
      .Case([&](MmaWaitOp o) { return emitMmaWait(o, st); })
      .Case([&](TurnWaitOp o) {
        return emitTurn(o, o.getOrderAttr(), /*wait=*/true, st);
      })
      .Case([&](TurnPassOp o) {
        return emitTurn(o, o.getOrderAttr(), /*wait=*/false, st);
      })
      .Case([&](UnlessSkippedOp o) { return emitUnlessSkipped(o, st); })
      .Default([&](Operation *o) {
        return o->emitOpError() << "is not lowered on sm_90a";
      });
}

LogicalResult SM90Emitter::emitLoop(KVLoopOp loop, RoleState &st) {
  if (st.inLoop)
    return loop.emitOpError() << "nested kv_loops are not supported";
  // Each pipe used in the loop must be acquired exactly once per iteration
  // by this role: stage and phase then follow the block index.
  llvm::StringMap<int> acquires;
  loop.walk([&](AcquireOp a) { ++acquires[a.getPipe()]; });
  for (auto &entry : acquires)
    if (entry.second != 1)
      return loop.emitOpError()
             << "acquires pipe @" << entry.first() << " " << entry.second
             << " times per KV block; the sm_90a lowering needs exactly one";

  bool compute = st.role.getKind() == RoleKind::compute;
  // Values a prologue computed for the loop's first iteration come in as
  // iteration arguments, and each iteration yields the next one's:
  //  - S of block n, when the loop's Q Kᵀ runs one block ahead and its
  //    softmax works on block n (the scores cross the back-edge);
  //  - the correction factors and P in registers, when block 0's softmax
  //    is the prologue and the loop's softmax works one block ahead.
  // One pass over the body (in order, into skip regions):
  //  - softmaxAhead / qkAhead: a row_max or Q Kᵀ with ahead = 1;
  //  - correctFirst: O is rescaled before the body's own softmax_update, so
  //    the correction factors cross the back-edge;
  //  - skipFirst: a skip region before the body's vote (the overlap
  //    schedule: P V of block n, decided when block n's scores were voted
  //    on in the previous iteration) reads the decision across the
  //    back-edge; block 0 is never skipped (the running max is still -inf
  //    when it is voted on).
  bool softmaxAhead = false, qkAhead = false, correctFirst = false,
       sawUpdate = false, skipFirst = false, sawVote = false;
  auto isAhead = [](std::optional<uint64_t> a) { return a && *a == 1; };
  loop.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (auto r = dyn_cast<RowMaxOp>(op))
      softmaxAhead |= isAhead(r.getAhead());
    else if (auto m = dyn_cast<MmaOp>(op))
      qkAhead |= m.getKind() == MmaKind::qk && isAhead(m.getAhead());
    else if (isa<SoftmaxUpdateOp>(op))
      sawUpdate = true;
    else if (isa<CorrectOp>(op))
      correctFirst |= !sawUpdate;
    else if (isa<VoteOp>(op))
      sawVote = true;
    else if (isa<UnlessSkippedOp>(op))
      skipFirst |= !sawVote;
  });
  bool carryS = compute && st.s && qkAhead && !softmaxAhead;
  bool carryCorr = compute && st.corr[0] && correctFirst;
  bool carrySkip = compute && sawVote && skipFirst;
  if (carrySkip) {
    // Block 0 (the prologue's softmax) is never skipped; the loop's votes
    // count blocks 1.. (and not the block past the end).
    st.skip = arith::ConstantOp::create(b, loc, b.getBoolAttr(false));
  }
  size_t numP = compute ? st.pRegs.size() : 0;
  bool carryVote = !compute && st.speculateAfter > 0;
  if (carryVote) {
    // Before block 0 (whose await yields its own state): any values.
    st.voteKnown = st.voteKept =
        arith::ConstantOp::create(b, loc, b.getBoolAttr(true));
    st.keptRun = c32(0);
  }
  SmallVector<Value> init;
  if (compute)
    init = st.carried();
  if (st.stats)
    init.push_back(st.skipped);
  if (carryS)
    init.push_back(st.s);
  if (carryCorr)
    init.append({st.corr[0], st.corr[1]});
  init.append(st.pRegs.begin(), st.pRegs.begin() + numP);
  if (carrySkip)
    init.push_back(st.skip);
  if (carryVote)
    init.append({st.voteKnown, st.voteKept, st.keptRun});
  if (st.countVotes)
    init.push_back(st.voteSkips);
  auto forOp = scf::ForOp::create(b, loc, c32(0), st.numBlocks, c32(1), init);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(forOp.getBody());
  st.inLoop = true;
  st.kvBlock = forOp.getInductionVar();
  // Unpacks loop-carried values (iteration arguments or results) into st.
  auto unpack = [&](ValueRange vals) {
    size_t k = 0;
    if (compute) {
      st.setCarried(vals.take_front(5));
      k = 5;
    }
    if (st.stats)
      st.skipped = vals[k++];
    if (carryS)
      st.s = vals[k++];
    if (carryCorr) {
      st.corr[0] = vals[k++];
      st.corr[1] = vals[k++];
    }
    for (size_t i = 0; i < numP; ++i)
      st.pRegs[i] = vals[k++];
    if (carrySkip)
      st.skip = vals[k++];
    if (carryVote) {
      st.voteKnown = vals[k++];
      st.voteKept = vals[k++];
      st.keptRun = vals[k++];
    }
    if (st.countVotes)
      st.voteSkips = vals[k++];
  };
  unpack(forOp.getRegionIterArgs());
  st.sNext = Value();
  if (failed(emitSteps(loop.getBody().front(), st)))
    return failure();
  if (!init.empty()) {
    // With iter args the body has no implicit yield: yield the state.
    SmallVector<Value> yields;
    if (compute)
      yields = st.carried();
    if (st.stats)
      yields.push_back(st.skipped);
    if (carryS) {
      if (!st.sNext)
        return loop.emitOpError()
               << "carries S across blocks but computes no next-block Q Kᵀ "
                  "(ws.mma qk {ahead = 1})";
      yields.push_back(st.sNext);
    }
    if (carryCorr) {
      if (!st.corr[0])
        return loop.emitOpError()
               << "carries the correction factors of a prologue softmax but "
                  "its body computes none for the next iteration";
      yields.append({st.corr[0], st.corr[1]});
    }
    if (numP && st.pRegs.size() != numP)
      return loop.emitOpError()
             << "carries P in registers from the prologue but its body "
                "computes no P for the next iteration";
    yields.append(st.pRegs.begin(), st.pRegs.begin() + numP);
    if (carrySkip)
      yields.push_back(st.skip);
    if (carryVote)
      yields.append({st.voteKnown, st.voteKept, st.keptRun});
    if (st.countVotes)
      yields.push_back(st.voteSkips);
    scf::YieldOp::create(b, loc, yields);
  }
  st.inLoop = false;
  st.afterLoop = true;
  st.skip = Value();
  st.s = st.sNext = Value();
  st.inflight.clear();
  b.setInsertionPointAfter(forOp);
  // Values computed in the body that are not carried do not exist here.
  for (int i = 0; i < 2; ++i)
    st.corr[i] = st.mUse[i] = st.mBlock[i] = st.mPart[i] = Value();
  st.pRegs.resize(numP);
  unpack(forOp.getResults());
  st.s = Value();
  if (st.stats)
    emitStatsFlush(st);
  if (st.countVotes) {
    if (carryVote) {
      // The votes on the last block were not read when the load role
      // copied its V without them.
      auto last = scf::IfOp::create(b, loc, TypeRange{i32},
                                    notI1(st.voteKnown),
                                    /*withElseRegion=*/true);
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(last.thenBlock());
      scf::YieldOp::create(
          b, loc, ValueRange{readVotes(sub(st.numBlocks, c32(1)), st).second});
      b.setInsertionPointToStart(last.elseBlock());
      scf::YieldOp::create(b, loc, ValueRange{c32(0)});
      b.setInsertionPointAfter(last);
      st.voteSkips = add(st.voteSkips, last.getResult(0));
    }
    emitVoteStatsFlush(st);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Pipes and copies
//===----------------------------------------------------------------------===//

LogicalResult SM90Emitter::emitAcquire(AcquireOp op, RoleState &st) {
  PipeOp pipe = pipeOf(op.getPipeAttr());

  OpBuilder::InsertionGuard guard(b);
  bool producer = isProducer(pipe, st);
  Value exists = blockExists(st, pipe, op.getAhead());
  // A consumer's look-ahead in the loop (block n+1, which is past the end
  // in the last iteration) needs no branch: past the end it waits for the
  // stage's previous phase, which has completed (or, on a fresh barrier,
  // passes at once). The branch cost a resolve stall every iteration.
  bool branchFree = exists && !producer && st.inLoop && op.getAhead() &&
                    *op.getAhead() == 1;
  if (exists && !branchFree)
    openIf(exists);
  auto [stage, phase] = stagePhase(st, pipe, op.getAhead());
  // The producer waits for the consumers to have emptied the stage in the
  // previous round (parity flipped: a fresh barrier passes at once).
  Value parity =
      producer ? arith::XOrIOp::create(b, loc, phase, c32(1)) : phase;
  if (branchFree)
    parity = arith::XOrIOp::create(
        b, loc, parity, arith::ExtUIOp::create(b, loc, i32, notI1(exists)));
  NVVM::MBarrierTryWaitParityOp::create(
      b, loc, barrier(pipe, /*full=*/!producer, stage), parity,
      c32(kWaitTicks));
  return success();
}

LogicalResult SM90Emitter::emitRelease(ReleaseOp op, RoleState &st) {
  PipeOp pipe = pipeOf(op.getPipeAttr());
  OpBuilder::InsertionGuard guard(b);
  if (Value exists = blockExists(st, pipe, op.getAhead()))
    openIf(exists);
  auto [stage, phase] = stagePhase(st, pipe, op.getAhead());
  (void)phase;
  if (isProducer(pipe, st)) {
    Value full = barrier(pipe, true, stage);
    // A V copy on demand that was not issued (every voter skipped the
    // block): the arrive completes the stage with no bytes to wait for.
    bool onDemand = false;
    for (auto load : op->getBlock()->getOps<TmaLoadOp>())
      onDemand |= load.getOnDemand() && load.getPipe() == pipe.getSymName();
    if (onDemand && !st.skip)
      return op.emitOpError() << "releases an on_demand copy's stage with no "
                                 "ws.await_vote decision";
    if (std::optional<uint64_t> tx = pipe.getTxBytes())
      NVVM::MBarrierArriveExpectTxOp::create(
          b, loc, Type(), full,
          onDemand ? select(st.skip, c32(0), c32(int64_t(*tx)))
                   : c32(int64_t(*tx)),
          NVVM::MemScopeKind::CTA,
          /*relaxed=*/false, Value());
    else
      NVVM::MBarrierArriveOp::create(b, loc, Type(), full, Value(),
                                     NVVM::MemScopeKind::CTA,
                                     /*relaxed=*/false);
    return success();
  }
  Value empty = barrier(pipe, false, stage);
  NVVM::MBarrierArriveOp::create(b, loc, Type(), empty, Value(),
                                 NVVM::MemScopeKind::CTA,
                                 /*relaxed=*/false);
  if (multicastPipes.contains(pipe)) {
    // The partner's producer multicasts into this stage too: lane 0 of each
    // warp tells it the stage is free (the warp's reads are done: the
    // release follows the wgmma wait, which is warp-synchronous).
    openIf(cmp(arith::CmpIPredicate::eq, lane, c32(0)));
    Value remote = NVVM::MapaOp::create(
        b, loc, LLVM::LLVMPointerType::get(ctx, 7), empty, partnerRank);
    NVVM::MBarrierArriveOp::create(b, loc, Type(), remote, Value(),
                                   NVVM::MemScopeKind::CLUSTER,
                                   /*relaxed=*/false);
  }
  return success();
}

LogicalResult SM90Emitter::emitTmaLoad(TmaLoadOp op, RoleState &st) {
  PipeOp pipe = pipeOf(op.getPipeAttr());
  BufferOp dst = bufferOf(op.getDstAttr());
  OpBuilder::InsertionGuard guard(b);
  // A copy one block ahead, or of block 0 before the loop, runs only when
  // that block exists (the acquire and release around it test the same).
  if (Value exists = blockExists(st, pipe, op.getAhead()))
    openIf(exists);
  if (op.getOnDemand()) {
    if (!st.skip)
      return op.emitOpError() << "needs a ws.await_vote decision before it";
    openIf(notI1(st.skip));
  }
  auto [stage, phase] = stagePhase(st, pipe, op.getAhead());
  (void)phase;
  ArrayRef<int64_t> shape = dst.getShape();
  int64_t rows = shape[0], cols = shape[1];
  if (cols % kPanelElems)
    return op.emitOpError() << "needs a multiple of 64 columns, got " << cols;
  Value tmap, seqCoord, headCoord;
  switch (op.getTensor()) {
  case Tensor::q:
    tmap = param(kTmQ);
    seqCoord = mul(mBlock, c32(blockM));
    headCoord = head;
    break;
  case Tensor::k:
  case Tensor::v:
    tmap = param(op.getTensor() == Tensor::k ? kTmK : kTmV);
    if (!perBlockPipes.contains(pipe))
      return op.emitOpError() << "loads K/V on a pipe no kv_loop acquires";
    seqCoord = mul(blockOf(st, pipe, op.getAhead()), c32(blockN));
    headCoord = kvHead;
    break;
  case Tensor::o:
    return op.emitOpError() << "cannot load O";
  }
  Value stageBase =
      add(c32(offsetOf(dst)), mul(stage, c32(dst.getStageBytes())));
  Value mbar = barrier(pipe, true, stage);
  // kv_multicast: this CTA copies its half of the block's rows into both
  // CTAs of the pair (the same offsets; each full barrier expects the whole
  // tile, half from each producer).
  Value mask, rowOffset = c32(0);
  if (multicastPipes.contains(pipe)) {
    int64_t half = rows / 2;
    rowOffset = mul(ctaRank, c32(half));
    seqCoord = add(seqCoord, rowOffset);
    mask = arith::ConstantOp::create(b, loc, b.getI16IntegerAttr(3));
  }
  // One copy per 64-column panel: [rows x 128 B], swizzled by the TMA unit.
  for (int64_t p = 0; p < cols / kPanelElems; ++p) {
    // The own CTA's shared address is a valid shared::cluster address.
    Value dstPtr = LLVM::AddrSpaceCastOp::create(
        b, loc, LLVM::LLVMPointerType::get(ctx, 7),
        smemPtr(add(add(stageBase, c32(p * rows * kSwizzleBytes)),
                    mul(rowOffset, c32(kSwizzleBytes)))));
    SmallVector<Value> coords = {c32(p * kPanelElems), headCoord, seqCoord,
                                 batch};
    NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
        b, loc, dstPtr, tmap, coords, mbar, ValueRange{}, mask, Value(),
        NVVM::TMALoadMode::TILE, /*isCTAOnly=*/false, nullptr, Value());
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Matrix products
//===----------------------------------------------------------------------===//

LogicalResult SM90Emitter::emitMma(MmaOp op, RoleState &st) {
  BufferOp a = bufferOf(op.getAAttr()), bb = bufferOf(op.getBAttr()),
           d = bufferOf(op.getDAttr());
  bool aInRegs = a.getSpace() == MemorySpace::regs;
  ArrayRef<Value> aRegs =
      op.getKind() == MmaKind::qk ? ArrayRef<Value>(st.qRegs) : st.pRegs;
  if (aInRegs && aRegs.empty())
    return op.emitOpError()
           << "operand a in registers needs "
           << (op.getKind() == MmaKind::qk
                   ? "Q from a preceding ws.load_frag in the same role"
                   : "P from a preceding ws.exp2_store_p or ws.pack_p in the "
                     "same block");
  if (aInRegs && int64_t(aRegs.size()) * 4 != a.getShape()[1])
    return op.emitOpError()
           << "operand a in registers holds " << aRegs.size() * 4
           << " columns but " << op.getAAttr() << " has " << a.getShape()[1];
  if (op.getKind() == MmaKind::pv &&
      failed(checkFragment(op, op.getDAttr(), st.o, "O accumulator")))
    return failure();
  if (!st.inLoop &&
      (op.getKind() != MmaKind::qk || st.afterLoop || !st.numBlocks))
    return op.emitOpError()
           << "outside the kv_loop only a Q Kᵀ before the loop is lowered";
  int64_t m = d.getShape()[0], n = d.getShape()[1];
  if (m != 64)
    return op.emitOpError() << "lowering needs 64-row accumulators, got " << m;
  // Stage of b: the pipe guarding it, at this step's block.
  PipeOp bPipe;
  for (auto pipe : kernel.getBody().getOps<PipeOp>())
    if (llvm::is_contained(pipe.getBuffers(), op.getBAttr()))
      bPipe = pipe;
  if (!bPipe)
    return op.emitOpError()
           << "operand b " << op.getBAttr() << " is not guarded by a pipe";

  // A step on a block that may not exist runs under a guard; the
  // accumulator keeps its value otherwise.
  bool qk = op.getKind() == MmaKind::qk;
  Type acc = accType(n);
  // A Q Kᵀ that does not run leaves scores nobody reads (the loop ends):
  // undef, so no instruction defines accumulator registers in the wgmma
  // pipeline stage (ptxas would serialise the wgmmas, C7515).
  Value previous = qk ? Value(LLVM::UndefOp::create(b, loc, acc)) : st.o;
  // Q Kᵀ of block n+1 in the loop is not guarded: past the end it reads a
  // stage no TMA writes any more (stale or never-loaded data) and its
  // scores are fully masked or never read. A guard would make the wgmma
  // group count path-dependent and ptxas serialise every wgmma (C7515).
  bool unguarded = qk && st.inLoop && op.getAhead() && *op.getAhead() == 1;
  Value exists = unguarded ? Value() : blockExists(st, bPipe, op.getAhead());
  scf::IfOp guardIf;
  OpBuilder::InsertionGuard guard(b);
  if (exists) {
    guardIf = scf::IfOp::create(b, loc, TypeRange{acc}, exists,
                                /*withElseRegion=*/true);
    b.setInsertionPointToStart(guardIf.elseBlock());
    scf::YieldOp::create(b, loc, previous);
    b.setInsertionPointToStart(guardIf.thenBlock());
  }
  Value bStage = stagePhase(st, bPipe, op.getAhead()).first;
  Value bBase = add(c32(offsetOf(bb)), mul(bStage, c32(bb.getStageBytes())));
  int64_t aRows = a.getShape()[0];
  int64_t aBase = offsetOf(a) + st.rowBegin * kSwizzleBytes;
  int64_t kTotal = a.getShape()[1];
  int64_t bRows = bb.getShape()[0];

  auto wgmmaType = spec.dtype == DType::BF16 ? NVVM::WGMMATypes::bf16
                                             : NVVM::WGMMATypes::f16;
  // The first Q Kᵀ step has scale-d = 0: its input is ignored (undef).
  Value accIn = qk ? Value(LLVM::UndefOp::create(b, loc, acc)) : st.o;

  NVVM::WgmmaFenceAlignedOp::create(b, loc);
  // The B descriptors of the k-steps differ only in the start address
  // (bits 0-13, in 16-byte units): one descriptor for the stage, plus a
  // constant per step. The field cannot carry: every address in shared
  // memory is below 2^18 bytes.
  // K (Q Kᵀ) is K-major; V (P V) is MN-major, its LBO steps to the next
  // 64-column panel.
  Value descBStage = descriptor(smemAddr(bBase),
                                qk ? 16 : bRows * kSwizzleBytes, kTileAlign);
  auto descBAt = [&](int64_t off) {
    return off ? arith::AddIOp::create(b, loc, descBStage, c64(off >> 4))
                     .getResult()
               : descBStage;
  };
  for (int64_t kk = 0; kk < kTotal / 16; ++kk) {
    // B = K tile [n keys, D] for Q Kᵀ: K-major like A (64-column panels,
    // 32 bytes per k-step). B = V tile [keys, Dv] for P V: MN-major (Dv
    // contiguous), 16 keys per k-step; LBO steps to the next 64-column
    // panel, SBO to the next 8 keys.
    int64_t bOff = qk ? (kk / 4) * bRows * kSwizzleBytes + (kk % 4) * 32
                      : kk * 16 * kSwizzleBytes;
    if (aInRegs) {
      accIn = wgmmaRegisterA(accIn, aRegs.slice(4 * kk, 4), descBAt(bOff), n,
                             /*zeroAcc=*/qk && kk == 0, /*transB=*/!qk);
      continue;
    }
    // A: K-major, 128B swizzle; 64-column panels of aRows rows.
    int64_t aOff = aBase + (kk / 4) * aRows * kSwizzleBytes + (kk % 4) * 32;
    Value descA = descriptor(smemAddr(c32(aOff)), 16, kTileAlign);
    Value descB = descBAt(bOff);
    NVVM::MMALayout layoutB =
        qk ? NVVM::MMALayout::col : NVVM::MMALayout::row;
    bool zero = qk && kk == 0;
    accIn = NVVM::WgmmaMmaAsyncOp::create(
        b, loc, acc, accIn, descA, descB,
        NVVM::MMAShapeAttr::get(ctx, 64, n, 16),
        NVVM::WGMMATypesAttr::get(ctx, wgmmaType),
        NVVM::WGMMATypesAttr::get(ctx, wgmmaType),
        NVVM::WGMMATypesAttr::get(ctx, NVVM::WGMMATypes::f32),
        NVVM::WGMMAScaleOutAttr::get(ctx, zero ? NVVM::WGMMAScaleOut::zero
                                               : NVVM::WGMMAScaleOut::one),
        NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
        NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
        NVVM::MMALayoutAttr::get(ctx, NVVM::MMALayout::row),
        NVVM::MMALayoutAttr::get(ctx, layoutB), NVVM::MMAIntOverflowAttr());
  }
  if (op.getAsync() && st.inSkipRegion)
    st.commitInRegion = true;
  else
    NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  if (!op.getAsync())
    NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
  Value result = accIn;
  if (guardIf) {
    scf::YieldOp::create(b, loc, result);
    result = guardIf.getResult(0);
  }
  Value *target = !qk                                      ? &st.o
                  : (op.getAhead() && *op.getAhead() == 1) ? &st.sNext
                                                           : &st.s;
  *target = result;
  if (op.getAsync())
    st.inflight.push_back(target);
  return success();
}

LogicalResult SM90Emitter::emitLoadFrag(LoadFragOp op, RoleState &st) {
  if (st.inLoop || st.afterLoop)
    return op.emitOpError() << "is lowered before the kv_loop only";
  BufferOp src = bufferOf(op.getSrcAttr()), dst = bufferOf(op.getDstAttr());
  int64_t rows = src.getShape()[0], cols = dst.getShape()[1];
  if (st.rowBegin + 64 > rows)
    return op.emitOpError() << "the role's rows [" << st.rowBegin << ", "
                            << st.rowBegin + 64 << ") are not in "
                            << op.getSrcAttr() << " (" << rows << " rows)";
  // ldmatrix.x4 per 16-column k-step: lane l gives the address of row l % 8
  // of matrix l / 8; matrices 0-3 are (rows 0-7, k 0-7), (rows 8-15, k 0-7),
  // (rows 0-7, k 8-15), (rows 8-15, k 8-15) of the warp's 16 rows, which is
  // wgmma's register-A fragment (the mma.m16n8k16 A layout per warp). The
  // tile is 64-column panels of 128-byte rows, 128B-swizzled: the 16-byte
  // chunk c of row r sits at chunk c ^ (r % 8).
  Value t = st.threadInRole;
  Value w = divu(t, c32(32)), ln = remu(t, c32(32));
  Value mat = divu(ln, c32(8));
  Value row = add(add(c32(st.rowBegin), mul(w, c32(16))),
                  add(remu(ln, c32(8)), mul(remu(mat, c32(2)), c32(8))));
  Value rowBase = add(c32(offsetOf(src)), mul(row, c32(kSwizzleBytes)));
  Value swz = remu(row, c32(8));
  Value kHalf = divu(mat, c32(2));
  auto i32x4 = LLVM::LLVMStructType::getLiteral(ctx, {i32, i32, i32, i32});
  st.qRegs.clear();
  for (int64_t kk = 0; kk < cols / 16; ++kk) {
    Value chunk = add(c32(2 * (kk % 4)), kHalf);
    Value off = add(add(rowBase, c32((kk / 4) * rows * kSwizzleBytes)),
                    mul(arith::XOrIOp::create(b, loc, chunk, swz), c32(16)));
    Value frag = NVVM::LdMatrixOp::create(
        b, loc, i32x4, smemPtr(off), b.getI32IntegerAttr(4),
        NVVM::MMALayoutAttr::get(ctx, NVVM::MMALayout::row),
        NVVM::LdStMatrixShapeAttr::get(ctx, 8, 8),
        NVVM::LdStMatrixEltTypeAttr::get(ctx, NVVM::LdStMatrixEltType::B16));
    for (int64_t i = 0; i < 4; ++i)
      st.qRegs.push_back(extract(frag, i));
  }
  return success();
}

/// Registers written by an async wgmma are not ready until its wait; route
/// them through an empty asm after the wait so nothing is scheduled above it
/// (a compiler fence: it emits no instruction).
Value SM90Emitter::fenceRegisters(Value acc) {
  auto type = cast<LLVM::LLVMStructType>(acc.getType());
  unsigned n = type.getBody().size();
  std::string constraints;
  for (unsigned i = 0; i < n; ++i)
    constraints += (i ? ",=f" : "=f");
  for (unsigned i = 0; i < n; ++i)
    constraints += "," + std::to_string(i);
  SmallVector<Value> operands;
  for (unsigned i = 0; i < n; ++i)
    operands.push_back(extract(acc, i));
  auto asmOp = LLVM::InlineAsmOp::create(
      b, loc, type, operands, /*asm_string=*/"", constraints,
      /*has_side_effects=*/true, /*is_align_stack=*/false,
      LLVM::TailCallKind::None, LLVM::AsmDialectAttr(), ArrayAttr());
  return asmOp.getResult(0);
}

LogicalResult SM90Emitter::emitMmaWait(MmaWaitOp op, RoleState &st) {
  int64_t pending = op.getPending();
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, pending);
  // The groups older than the last `pending` are complete: fence the tiles
  // they write so nothing that reads them is scheduled above the wait.
  int64_t done = std::max<int64_t>(int64_t(st.inflight.size()) - pending, 0);
  for (int64_t i = 0; i < done; ++i)
    if (Value *tile = st.inflight[i]; *tile)
      *tile = fenceRegisters(*tile);
  st.inflight.erase(st.inflight.begin(), st.inflight.begin() + done);
  return success();
}

//===----------------------------------------------------------------------===//
// Online softmax
//===----------------------------------------------------------------------===//

Value SM90Emitter::quadReduce(Value v, bool isMax) {
  for (int64_t offset : {1, 2}) {
    Value other =
        NVVM::ShflOp::create(b, loc, f32, c32(-1), v, c32(offset), c32(31),
                             NVVM::ShflKind::bfly, UnitAttr());
    v = isMax ? fmax(v, other) : fadd(v, other);
  }
  return v;
}

LogicalResult SM90Emitter::emitRowMax(RowMaxOp op, RoleState &st) {
  if (failed(requireBlock(op, st)))
    return failure();
  // With ahead = 1 the scores are block n+1's; the steps after work on them.
  bool next = op.getAhead() && *op.getAhead() == 1;
  if (next) {
    if (!st.sNext)
      return op.emitOpError() << "with ahead = 1 needs the scores of a "
                                 "preceding ws.mma qk {ahead = 1}";
    st.s = st.sNext;
    st.sNext = Value();
  }
  if (failed(checkFragment(op, op.getScoresAttr(), st.s,
                           "scores of a preceding ws.mma qk")))
    return failure();
  st.sExp = false;
  int64_t n = bufferOf(op.getScoresAttr()).getShape()[1];
  // Thread coordinates in the fragment.
  Value t = st.threadInRole;
  Value w = divu(t, c32(32)), ln = remu(t, c32(32));
  Value rowInTile = add(mul(w, c32(16)), divu(ln, c32(4)));
  Value colInBlock = mul(remu(ln, c32(4)), c32(2));
  Value roleRow0 = add(mul(mBlock, c32(blockM)), c32(st.rowBegin));
  Value qRow0 = add(roleRow0, rowInTile);
  // Before the loop: block 0. A block past the end is fully masked below.
  Value block = st.inLoop ? st.kvBlock : c32(0);
  st.scoresReal = Value();
  if (next) {
    block = add(block, c32(1));
    st.scoresReal = cmp(arith::CmpIPredicate::slt, block, st.numBlocks);
  }
  Value keyBlock = mul(block, c32(blockN));
  Value keyBase = add(keyBlock, colInBlock);
  Value seqKV = param(kSeqKV);
  // Causal (bottom-right): key <= row + seqKV - seqQ.
  Value diag = sub(seqKV, param(kSeqQ));
  Value negInf = cf(-INFINITY);
  for (int i = 0; i < 2; ++i)
    st.rowIdx[i] = add(qRow0, c32(8 * i));

  // Only the blocks that hold the sequence tail or cross the causal
  // diagonal need a mask; the test is uniform over the role's rows.
  Value blockEnd = add(keyBlock, c32(blockN));
  Value needMask = cmp(arith::CmpIPredicate::sgt, blockEnd, seqKV);
  if (spec.causal) {
    Value firstVisibleLimit = add(add(roleRow0, diag), c32(1));
    needMask = arith::OrIOp::create(
        b, loc, needMask,
        cmp(arith::CmpIPredicate::sgt, blockEnd, firstVisibleLimit));
  }
  auto ifOp = scf::IfOp::create(b, loc, TypeRange{st.s.getType()}, needMask,
                                /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    Value masked = st.s;
    for (int i = 0; i < 2; ++i) {
      Value limit = seqKV; // first invisible key
      if (spec.causal)
        limit = arith::MinSIOp::create(b, loc, limit,
                                       add(add(st.rowIdx[i], diag), c32(1)));
      for (int64_t j = 0; j < n / 8; ++j)
        for (int k = 0; k < 2; ++k) {
          int64_t idx = 4 * j + 2 * i + k;
          Value key = add(keyBase, c32(8 * j + k));
          Value visible = cmp(arith::CmpIPredicate::slt, key, limit);
          masked =
              insert(masked, select(visible, extract(st.s, idx), negInf), idx);
        }
    }
    scf::YieldOp::create(b, loc, masked);
    b.setInsertionPointToStart(ifOp.elseBlock());
    scf::YieldOp::create(b, loc, st.s);
  }
  st.s = ifOp.getResult(0);

  // The max over raw scores, scaled once (scale > 0): scores stay raw and
  // exp2 takes fma(s, scale, -m).
  // A chain, not a tree: at head_dim 64 the tree made the kernel 20% slower
  // on the H200 (ptxas schedules it worse), elsewhere it changed nothing
  // measurable, BLASST's skipped blocks included
  // (docs/results/2026-11-29-hd256.md).
  // (Two or four chains per row instead of one: within 0.6% on BLASST's
  // skipped blocks, docs/results/2026-11-29-skip-path.md.)
  for (int i = 0; i < 2; ++i) {
    Value mx = negInf;
    for (int64_t j = 0; j < n / 8; ++j)
      for (int k = 0; k < 2; ++k)
        mx = fmax(mx, extract(st.s, 4 * j + 2 * i + k));
    st.mPart[i] = mx;
    st.mBlock[i] = Value();
    // A BLASST kernel's vote needs only each thread's max (emitVote): the
    // quad reduction waits for the kept path (ensureBlockMax).
    if (!st.threshold)
      ensureBlockMax(st, i);
  }
  return success();
}

void SM90Emitter::ensureBlockMax(RoleState &st, int i) {
  if (!st.mBlock[i])
    st.mBlock[i] =
        fmul(quadReduce(st.mPart[i], /*isMax=*/true), param(kScaleLog2));
}

LogicalResult SM90Emitter::emitSoftmaxUpdate(SoftmaxUpdateOp op,
                                             RoleState &st) {
  if (failed(requireBlock(op, st)))
    return failure();
  if (!st.mPart[0])
    return op.emitOpError() << "needs a preceding ws.row_max";
  for (int i = 0; i < 2; ++i)
    ensureBlockMax(st, i);
  for (int i = 0; i < 2; ++i) {
    Value mNew = fmax(st.m[i], st.mBlock[i]);
    // A row with no visible key yet keeps m = -inf; subtract 0 instead so
    // exp2 gives 0 rather than NaN.
    Value isInf = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, mNew,
                                        cf(-INFINITY));
    st.mUse[i] = select(isInf, cf(0.0f), mNew);
    st.corr[i] = exp2(fsub(st.m[i], st.mUse[i]));
    st.m[i] = mNew;
  }
  return success();
}

/// What an exponential step needs: a block, the max a ws.softmax_update
/// chose, and raw scores.
LogicalResult SM90Emitter::checkExp2Inputs(Operation *op,
                                           FlatSymbolRefAttr scores,
                                           RoleState &st) {
  if (failed(requireBlock(op, st)))
    return failure();
  if (!st.mUse[0])
    return op->emitOpError() << "needs a preceding ws.softmax_update";
  if (st.sExp)
    return op->emitOpError() << "the scores are exponentiated already";
  return checkFragment(op, scores, st.s, "scores");
}

LogicalResult SM90Emitter::emitExp2Store(Exp2StoreOp op, RoleState &st) {
  if (failed(checkExp2Inputs(op, op.getScoresAttr(), st)))
    return failure();
  BufferOp p = bufferOf(op.getPAttr());
  if (p.getShape()[1] != bufferOf(op.getScoresAttr()).getShape()[1])
    return op.emitOpError() << "P " << op.getPAttr() << " and the scores "
                            << op.getScoresAttr() << " differ in width";
  int64_t n = bufferOf(op.getScoresAttr()).getShape()[1];
  if (p.getSpace() == MemorySpace::regs) {
    return emitExp2ToRegisters(op, st, n);
  }
  if (p.getSpace() != MemorySpace::smem)
    return op.emitOpError() << "P must be in shared memory or registers";
  int64_t pRows = p.getShape()[0];
  Value t = st.threadInRole;
  Value w = divu(t, c32(32)), ln = remu(t, c32(32));
  Value quadRow = divu(ln, c32(4));              // l / 4, also row % 8
  Value inChunk = mul(remu(ln, c32(4)), c32(4)); // byte within 16-B chunk
  for (int i = 0; i < 2; ++i) {
    Value sum = cf(0.0f);
    // Row within the P tile and its byte offset in a panel.
    Value row =
        add(c32(st.rowBegin), add(mul(w, c32(16)), add(quadRow, c32(8 * i))));
    Value rowBase = add(c32(offsetOf(p)), mul(row, c32(kSwizzleBytes)));
    for (int64_t j = 0; j < n / 8; ++j) {
      Value packed = expPair(st, i, j, sum);
      // 128B swizzle: the 16-byte chunk index XOR (row % 8).
      int64_t panel = (8 * j) / kPanelElems, chunk = j % 8;
      Value swz = arith::XOrIOp::create(b, loc, c32(chunk), quadRow);
      Value off = add(add(rowBase, c32(panel * pRows * kSwizzleBytes)),
                      add(mul(swz, c32(16)), inChunk));
      LLVM::StoreOp::create(b, loc, packed, smemPtr(off), /*alignment=*/4);
    }
    st.l[i] = fadd(fmul(st.l[i], st.corr[i]), sum);
  }
  // Make the generic-proxy stores visible to wgmma (async proxy), then wait
  // for the whole warpgroup's P.
  NVVM::FenceProxyOp::create(
      b, loc, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
  NVVM::BarrierOp::create(b, loc, Type(), c32(st.barrierId),
                          c32(st.role.getNumWarps() * 32), nullptr, Value());
  return success();
}

/// exp2(s·scale - m) of fragment element `idx` (row half i).
Value SM90Emitter::expOf(RoleState &st, int i, int64_t idx) {
  return exp2(LLVM::FMAOp::create(b, loc, extract(st.s, idx),
                                  param(kScaleLog2),
                                  arith::NegFOp::create(b, loc, st.mUse[i])));
}

/// Two f32 values packed to the P element type.
Value SM90Emitter::packPair(Value x, Value y) {
  Value pair = LLVM::UndefOp::create(b, loc, VectorType::get({2}, f32));
  pair = LLVM::InsertElementOp::create(b, loc, pair, x, c32(0));
  pair = LLVM::InsertElementOp::create(b, loc, pair, y, c32(1));
  return LLVM::FPTruncOp::create(b, loc, VectorType::get({2}, elemTy), pair);
}

/// exp2(s·scale - m) of the fragment pair (row half i, columns 8j..), added
/// to `sum` and packed to the P element type.
Value SM90Emitter::expPair(RoleState &st, int i, int64_t j, Value &sum) {
  Value pv[2];
  for (int k = 0; k < 2; ++k) {
    pv[k] = expOf(st, i, 4 * j + 2 * i + k);
    sum = fadd(sum, pv[k]);
  }
  return packPair(pv[0], pv[1]);
}

/// The exponentials stay f32 in the S fragment (FA3's order in the overlap
/// schedule): ws.pack_p writes P after the wait that retires the P V still
/// reading the previous P.
LogicalResult SM90Emitter::emitExp2InPlace(Exp2Op op, RoleState &st) {
  if (failed(checkExp2Inputs(op, op.getScoresAttr(), st)))
    return failure();
  int64_t n = bufferOf(op.getScoresAttr()).getShape()[1];
  // `guarded`: a block past the end (the last iteration's look-ahead) is
  // fully masked, its exponentials are 0 and its P is never read, so they
  // are computed only for a real block. The branch matters beyond the
  // saving: with the exponentials in a region of their own, ptxas keeps
  // them in S's registers and schedules them before the wait for P V(n); in
  // straight-line code it allocated them to P's registers, so they waited
  // for P V(n) and only the row max overlapped it
  // (docs/results/2026-11-29-fa3-order.md). In a skip region the vote
  // already skips such a block (and the region is the branch).
  bool guard = op.getGuarded() && st.scoresReal && !st.inSkipRegion;
  scf::IfOp ifOp;
  Value s0 = st.s, l0 = st.l[0], l1 = st.l[1];
  OpBuilder::InsertionGuard ig(b);
  if (guard) {
    ifOp = scf::IfOp::create(b, loc, TypeRange{s0.getType(), f32, f32},
                             st.scoresReal, /*withElseRegion=*/true);
    b.setInsertionPointToStart(ifOp.elseBlock());
    scf::YieldOp::create(b, loc, ValueRange{s0, l0, l1});
    b.setInsertionPointToStart(ifOp.thenBlock());
  }
  Value s = exponentiate(st, n);
  st.s = s;
  if (guard) {
    scf::YieldOp::create(b, loc, ValueRange{s, st.l[0], st.l[1]});
    b.setInsertionPointAfter(ifOp);
    st.s = ifOp.getResult(0);
    st.l[0] = ifOp.getResult(1);
    st.l[1] = ifOp.getResult(2);
  }
  st.sExp = true;
  return success();
}

LogicalResult SM90Emitter::emitPackP(PackPOp op, RoleState &st) {
  if (!st.sExp)
    return op.emitOpError()
           << "needs the exponentials of a preceding ws.exp2 in the same block";
  if (failed(checkFragment(op, op.getScoresAttr(), st.s, "exponentials")))
    return failure();
  int64_t n = bufferOf(op.getScoresAttr()).getShape()[1];
  // Through an empty asm after the preceding wait: nothing hoists the
  // conversions above it (P's registers may be the ones an in-flight
  // P V reads).
  packP(st, fenceRegisters(st.s), n);
  return success();
}

/// The S fragment with exp2(s·scale - m) in place of each score; the row
/// sums take the block's exponentials (l = l·corr + sum).
Value SM90Emitter::exponentiate(RoleState &st, int64_t n) {
  Value s = st.s;
  for (int i = 0; i < 2; ++i) {
    Value sum = cf(0.0f);
    for (int64_t j = 0; j < n / 8; ++j)
      for (int k = 0; k < 2; ++k) {
        int64_t idx = 4 * j + 2 * i + k;
        Value e = expOf(st, i, idx);
        sum = fadd(sum, e);
        s = insert(s, e, idx);
      }
    st.l[i] = fadd(fmul(st.l[i], st.corr[i]), sum);
  }
  return s;
}

/// P in registers from the exponentials `s`: the S accumulator fragment and
/// wgmma's A-operand fragment put the same rows and columns in the same
/// thread, so packing pairs is all it takes (packed index 2j + i for
/// columns 8j.., row half i).
void SM90Emitter::packP(RoleState &st, Value s, int64_t n) {
  st.pRegs.assign(n / 4, Value());
  for (int i = 0; i < 2; ++i)
    for (int64_t j = 0; j < n / 8; ++j) {
      int64_t idx = 4 * j + 2 * i;
      st.pRegs[2 * j + i] = LLVM::BitcastOp::create(
          b, loc, i32, packPair(extract(s, idx), extract(s, idx + 1)));
    }
}

/// P stays in registers, packed straight from the exponentials (S keeps
/// the scores).
LogicalResult SM90Emitter::emitExp2ToRegisters(Exp2StoreOp op, RoleState &st,
                                               int64_t n) {
  packP(st, exponentiate(st, n), n);
  return success();
}

/// O += P V with P from registers: wgmma's register-A form, which NVVM has
/// no op for; one inline PTX instruction (its predicate scoped in braces).
Value SM90Emitter::wgmmaRegisterA(Value acc, ArrayRef<Value> a, Value descB,
                                  int64_t n, bool zeroAcc, bool transB) {
  auto type = cast<LLVM::LLVMStructType>(acc.getType());
  unsigned nd = type.getBody().size();
  const char *ty = spec.dtype == DType::BF16 ? "bf16" : "f16";
  std::string str = std::string("{\n.reg .pred p;\nsetp.ne.b32 p, ") +
                    (zeroAcc ? "0" : "1") +
                    ", 0;\n"
                    "wgmma.mma_async.sync.aligned.m64n" +
                    std::to_string(n) + "k16.f32." + ty + "." + ty + " {";
  for (unsigned i = 0; i < nd; ++i)
    str += (i ? ", $" : "$") + std::to_string(i);
  // Operands: outputs $0.., the tied accumulator inputs, then A and desc.
  unsigned a0 = 2 * nd;
  str += "}, {$" + std::to_string(a0) + ", $" + std::to_string(a0 + 1) + ", $" +
         std::to_string(a0 + 2) + ", $" + std::to_string(a0 + 3) + "}, $" +
         std::to_string(a0 + 4) + ", p, 1, 1, " + (transB ? "1" : "0") +
         ";\n}";
  std::string constraints;
  for (unsigned i = 0; i < nd; ++i)
    constraints += (i ? ",=f" : "=f");
  for (unsigned i = 0; i < nd; ++i)
    constraints += "," + std::to_string(i);
  constraints += ",r,r,r,r,l";
  SmallVector<Value> operands;
  for (unsigned i = 0; i < nd; ++i)
    operands.push_back(extract(acc, i));
  operands.append(a.begin(), a.end());
  operands.push_back(descB);
  return LLVM::InlineAsmOp::create(b, loc, type, operands, str, constraints,
                                   /*has_side_effects=*/true,
                                   /*is_align_stack=*/false,
                                   LLVM::TailCallKind::None,
                                   LLVM::AsmDialectAttr(), ArrayAttr())
      .getResult(0);
}

LogicalResult SM90Emitter::emitCorrect(CorrectOp op, RoleState &st) {
  if (failed(requireBlock(op, st)))
    return failure();
  if (!st.corr[0])
    return op.emitOpError() << "needs a preceding ws.softmax_update";
  if (failed(checkFragment(op, op.getAccAttr(), st.o, "O accumulator")))
    return failure();
  int64_t n = bufferOf(op.getAccAttr()).getShape()[1];
  for (int64_t j = 0; j < n / 8; ++j)
    for (int i = 0; i < 2; ++i)
      for (int k = 0; k < 2; ++k) {
        int64_t idx = 4 * j + 2 * i + k;
        st.o = insert(st.o, fmul(extract(st.o, idx), st.corr[i]), idx);
      }
  return success();
}

LogicalResult SM90Emitter::emitEpilogue(EpilogueOp op, RoleState &st) {
  if (st.inLoop)
    return op.emitOpError() << "inside the kv_loop is not lowered";
  if (failed(checkFragment(op, op.getAccAttr(), st.o, "O accumulator")))
    return failure();
  if (op.getStaging())
    return op.emitOpError() << "staging through smem is not lowered on sm_90a";
  int64_t n = bufferOf(op.getAccAttr()).getShape()[1];
  Value t = st.threadInRole;
  Value w = divu(t, c32(32)), ln = remu(t, c32(32));
  Value rowInTile = add(mul(w, c32(16)), divu(ln, c32(4)));
  Value qRow0 = add(mul(mBlock, c32(blockM)), add(c32(st.rowBegin), rowInTile));
  Value col0 = mul(remu(ln, c32(4)), c32(2));
  Value seqQ = param(kSeqQ);
  auto pairTy = VectorType::get({2}, f32);
  auto pairElemTy = VectorType::get({2}, elemTy);
  Value base = LLVM::GEPOp::create(
      b, loc, ptrGen, elemTy, param(kO),
      ValueRange{add64(mul64(ext64(batch), param(kOStrideB)),
                       mul64(ext64(head), param(kOStrideH)))});
  for (int i = 0; i < 2; ++i) {
    Value l = quadReduce(st.l[i], /*isMax=*/false);
    // Rows that saw no key (causal, seqQ > seqKV) output 0 and LSE -inf.
    Value empty =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, l, cf(0.0f));
    Value inv =
        select(empty, cf(0.0f), arith::DivFOp::create(b, loc, cf(1.0f), l));
    Value row = add(qRow0, c32(8 * i));
    Value inBounds = cmp(arith::CmpIPredicate::slt, row, seqQ);
    OpBuilder::InsertionGuard guard(b);
    openIf(inBounds);
    Value rowPtr =
        LLVM::GEPOp::create(b, loc, ptrGen, elemTy, base,
                            ValueRange{mul64(ext64(row), param(kOStrideS))});
    for (int64_t j = 0; j < n / 8; ++j) {
      Value pair = LLVM::UndefOp::create(b, loc, pairTy);
      for (int k = 0; k < 2; ++k) {
        int64_t idx = 4 * j + 2 * i + k;
        pair = LLVM::InsertElementOp::create(
            b, loc, pair, fmul(extract(st.o, idx), inv), c32(k));
      }
      Value packed = LLVM::FPTruncOp::create(b, loc, pairElemTy, pair);
      Value ptr = LLVM::GEPOp::create(b, loc, ptrGen, elemTy, rowPtr,
                                      ValueRange{add(col0, c32(8 * j))});
      LLVM::StoreOp::create(b, loc, packed, ptr, /*alignment=*/4);
    }
    if (op.getLse()) {
      // lse = ln(sum exp(s * scale)) = (m + log2 l) * ln 2.
      openIf(cmp(arith::CmpIPredicate::eq, remu(ln, c32(4)), c32(0)));
      // NVPTX has no native llvm.log2; lg2.approx is the instruction.
      Value log2l = LLVM::CallIntrinsicOp::create(
                        b, loc, f32, b.getStringAttr("llvm.nvvm.lg2.approx.f"),
                        ValueRange{l})
                        .getResult(0);
      Value lse = fmul(fadd(st.m[i], log2l), cf(float(M_LN2)));
      lse = select(empty, cf(-INFINITY), lse);
      Value idx = add64(
          mul64(add64(mul64(ext64(batch), c64(spec.numQHeads)), ext64(head)),
                ext64(seqQ)),
          ext64(row));
      Value ptr = LLVM::GEPOp::create(b, loc, ptrGen, f32, param(kLse),
                                      ValueRange{idx});
      LLVM::StoreOp::create(b, loc, lse, ptr, /*alignment=*/4);
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// BLASST
//===----------------------------------------------------------------------===//

LogicalResult SM90Emitter::emitVote(VoteOp op, RoleState &st) {
  if (!st.mPart[0] || !st.threshold)
    return op.emitOpError() << "needs a preceding ws.row_max in a compute role";
  // Per row: m_block - m_running < log2(lambda); rows past seqQ abstain.
  // NaN (-inf - -inf) compares false: no skip. Each thread tests its own
  // scores' max: rounding is monotonic, so fl(x * scale) - m < T holds for
  // the row's max exactly when it holds for every thread's, and the warp's
  // vote.all is the same decision without the quad shuffles.
  Value pred;
  Value scale = param(kScaleLog2);
  for (int i = 0; i < 2; ++i) {
    Value small = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT,
                                        fsub(fmul(st.mPart[i], scale), st.m[i]),
                                        st.threshold);
    Value abstain = cmp(arith::CmpIPredicate::sge, st.rowIdx[i], param(kSeqQ));
    Value rowPred = arith::OrIOp::create(b, loc, small, abstain);
    pred = i == 0 ? rowPred : arith::AndIOp::create(b, loc, pred, rowPred);
  }
  // Warp unanimity, then the warpgroup (the rows of one P·V) through a
  // named-barrier AND reduction.
  Value warpAll = NVVM::VoteSyncOp::create(b, loc, i1, c32(-1), pred,
                                           NVVM::VoteSyncKind::all);
  // nvvm.barrier only reduces on barrier 0; the named-barrier form is a
  // plain LLVM intrinsic (bar.red.and.pred with an id and a thread count).
  st.skip = LLVM::CallIntrinsicOp::create(
                b, loc, i1,
                b.getStringAttr("llvm.nvvm.barrier.cta.red.and.aligned.count"),
                ValueRange{c32(st.barrierId), c32(st.role.getNumWarps() * 32),
                           warpAll})
                .getResult(0);
  if (st.stats) {
    // A block past the end (the overlap schedule's last look-ahead) is
    // masked out, "skipped" and not counted. Every role visits each of the
    // tile's blocks once: the visited count is the block count
    // (emitStatsFlush), one loop-carried register fewer.
    Value skipCounted =
        st.scoresReal ? arith::AndIOp::create(b, loc, st.skip, st.scoresReal)
                      : st.skip;
    st.skipped =
        add(st.skipped, arith::ExtUIOp::create(b, loc, i32, skipCounted));
  }
  if (op.getPublish()) {
    // The load role copies V of the voted block (n + 1: the vote follows
    // row_max {ahead = 1}, the verifier checks) only if a voter keeps it:
    // one thread writes the role's decision and arrives on the vote
    // barrier (release: the flag is visible to the waiter). No vote on the
    // block past the end: the load role waits for none.
    if (!st.inLoop)
      return op.emitOpError() << "publishes outside the kv_loop";
    OpBuilder::InsertionGuard guard(b);
    Value block = add(st.kvBlock, c32(1));
    openIf(arith::AndIOp::create(
        b, loc, cmp(arith::CmpIPredicate::eq, st.threadInRole, c32(0)),
        cmp(arith::CmpIPredicate::slt, block, st.numBlocks)));
    Value parity = arith::AndIOp::create(b, loc, block, c32(1));
    LLVM::StoreOp::create(
        b, loc, arith::ExtUIOp::create(b, loc, i32, st.skip),
        voteFlag(parity, layout.voterIndex.lookup(st.role.getSymName())));
    // Through the CTA's own shared::cluster address: that form of the
    // arrive returns no state (`_`). The shared::cta form's unused 64-bit
    // state made ptxas spill 24 B at this point of peak register pressure
    // (S, P and O live, 240 registers).
    Value bar = LLVM::AddrSpaceCastOp::create(
        b, loc, LLVM::LLVMPointerType::get(ctx, 7), voteBarrier(parity));
    NVVM::MBarrierArriveOp::create(b, loc, Type(), bar, Value(),
                                   NVVM::MemScopeKind::CTA,
                                   /*relaxed=*/false);
  }
  return success();
}

std::pair<Value, Value> SM90Emitter::readVotes(Value block,
                                               RoleState &st) {
  // Votes on blocks of one parity go to one barrier, whose phase k
  // completes with the votes on its k-th block: block n is phase
  // (n - 1) / 2 of barrier n % 2. The load role reads every block's votes
  // once and in order, before it copies the V of the block after it, and
  // the voters vote on block n + 2 only after that copy: each barrier is
  // within one phase of the wait, and the decision slot of n is intact.
  Value parity = arith::AndIOp::create(b, loc, block, c32(1));
  Value phase = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, sub(block, c32(1)), c32(1)),
      c32(1));
  NVVM::MBarrierTryWaitParityOp::create(b, loc, voteBarrier(parity), phase,
                                        c32(kWaitTicks));
  Value all, count = c32(0);
  for (int64_t v = 0; v < int64_t(layout.voterIndex.size()); ++v) {
    Value flag = LLVM::LoadOp::create(b, loc, i32, voteFlag(parity, v));
    all = v ? arith::AndIOp::create(b, loc, all, flag) : flag;
    if (st.countVotes)
      count = add(count, select(hasRows(layout.voterRowBegin[size_t(v)]), flag, c32(0)));
  }
  return {cmp(arith::CmpIPredicate::ne, all, c32(0)), count};
}

Value SM90Emitter::hasRows(int64_t rowBegin) {
  Value firstRow = add(mul(mBlock, c32(blockM)), c32(rowBegin));
  return cmp(arith::CmpIPredicate::slt, firstRow, param(kSeqQ));
}

void SM90Emitter::emitVoteStatsFlush(RoleState &st) {
  // The load role (one thread) adds the voters' counts to stats[b][h] =
  // {visited, skipped}: every voter with rows visits each of the tile's
  // blocks once; a voter whose rows all lie past seqQ is not counted (as
  // emitStatsFlush leaves it out).
  Value voters = c32(0);
  for (int64_t v = 0; v < int64_t(layout.voterIndex.size()); ++v)
    voters = add(voters, arith::ExtUIOp::create(b, loc, i32, hasRows(layout.voterRowBegin[size_t(v)])));
  addStats(mul(st.numBlocks, voters), st.voteSkips);
}

void SM90Emitter::addStats(Value visited, Value skipped) {
  Value base = mul64(
      add64(mul64(ext64(batch), c64(spec.numQHeads)), ext64(head)), c64(2));
  for (auto [k, v] : llvm::enumerate(ValueRange{visited, skipped})) {
    Value ptr = LLVM::GEPOp::create(b, loc, ptrGen, i64, param(kStats),
                                    ValueRange{add64(base, c64(k))});
    LLVM::AtomicRMWOp::create(b, loc, LLVM::AtomicBinOp::add, ptr, ext64(v),
                              LLVM::AtomicOrdering::monotonic);
  }
}

LogicalResult SM90Emitter::emitAwaitVote(AwaitVoteOp op, RoleState &st) {
  if (!st.inLoop || layout.voteBarrier < 0)
    return op.emitOpError() << "needs a kv_loop and published votes";
  // Block n >= 1 was voted on once per voter. Block 0 is kept. Each region
  // also yields how many voters skipped the blocks whose votes it read.
  Value voted = cmp(arith::CmpIPredicate::sgt, st.kvBlock, c32(0));
  Value yes = arith::ConstantOp::create(b, loc, b.getBoolAttr(true));
  Value no = arith::ConstantOp::create(b, loc, b.getBoolAttr(false));
  Value counted;
  if (!st.speculateAfter) {
    auto ifOp = scf::IfOp::create(b, loc, TypeRange{i1, i32}, voted,
                                  /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    auto [skipped, count] = readVotes(st.kvBlock, st);
    scf::YieldOp::create(b, loc, ValueRange{skipped, count});
    b.setInsertionPointToStart(ifOp.elseBlock());
    scf::YieldOp::create(b, loc, ValueRange{no, c32(0)});
    st.skip = ifOp.getResult(0);
    counted = ifOp.getResult(1);
  } else {
    // speculate_after = K: after K kept blocks in a row, block n counts as
    // kept without its votes, which are read at block n + 1 (to know
    // whether n was kept). Yields (skip, known, kept, run) for block n.
    // Block 0 starts a run of K - 1: block 1 follows K kept blocks.
    int64_t k = st.speculateAfter;
    auto ifOp = scf::IfOp::create(b, loc, TypeRange{i1, i1, i1, i32, i32},
                                  voted, /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    // Whether block n - 1 was kept: known, or read from its votes now.
    auto prev = scf::IfOp::create(b, loc, TypeRange{i1, i32}, st.voteKnown,
                                  /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(prev.thenBlock());
      scf::YieldOp::create(b, loc, ValueRange{st.voteKept, c32(0)});
      b.setInsertionPointToStart(prev.elseBlock());
      auto [skipped, count] = readVotes(sub(st.kvBlock, c32(1)), st);
      scf::YieldOp::create(b, loc, ValueRange{notI1(skipped), count});
    }
    // Kept blocks in a row up to n - 1.
    Value run = select(prev.getResult(0),
                       arith::MinSIOp::create(b, loc, add(st.keptRun, c32(1)),
                                              c32(k)),
                       c32(0));
    auto guess = scf::IfOp::create(b, loc, TypeRange{i1, i1, i1, i32},
                                   cmp(arith::CmpIPredicate::sge, run, c32(k)),
                                   /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(guess.thenBlock());
      scf::YieldOp::create(b, loc, ValueRange{no, no, yes, c32(0)});
      b.setInsertionPointToStart(guess.elseBlock());
      auto [skipped, count] = readVotes(st.kvBlock, st);
      scf::YieldOp::create(b, loc,
                           ValueRange{skipped, yes, notI1(skipped), count});
    }
    scf::YieldOp::create(
        b, loc,
        ValueRange{guess.getResult(0), guess.getResult(1), guess.getResult(2),
                   run, add(prev.getResult(1), guess.getResult(3))});
    b.setInsertionPointToStart(ifOp.elseBlock());
    scf::YieldOp::create(b, loc, ValueRange{no, yes, yes, c32(k - 1), c32(0)});
    st.skip = ifOp.getResult(0);
    st.voteKnown = ifOp.getResult(1);
    st.voteKept = ifOp.getResult(2);
    st.keptRun = ifOp.getResult(3);
    counted = ifOp.getResult(4);
  }
  if (st.countVotes)
    st.voteSkips = add(st.voteSkips, counted);
  return success();
}

/// Whether the step right after `op` is a ws.mma_wait leaving at most one
/// group pending.
static bool waitsForAllButOne(Operation *op) {
  auto wait = dyn_cast_or_null<MmaWaitOp>(op->getNextNode());
  return wait && wait.getPending() <= 1;
}

LogicalResult SM90Emitter::emitUnlessSkipped(UnlessSkippedOp op,
                                             RoleState &st) {
  if (!st.skip)
    return op.emitOpError() << "needs a preceding ws.vote";
  // What leaves the region: the running state, and what the region computes
  // for steps after it (the overlap schedule): the correction factors, the
  // exponentials in S, P in registers. On the skip path those are identity
  // (correction 1) or unused (P V of a skipped block does not run).
  Block &body = op.getBody().front();
  SkipOutputs out = skipOutputsOf({op});
  if (out.exps && !st.s)
    return op.emitOpError() << "exponentiates scores nobody computed";
  Value mBlockBefore[2] = {st.mBlock[0], st.mBlock[1]};
  // (mUse: what exp2 subtracts; unused on the skip path.)
  SmallVector<Value> before =
      skippedYield(st.carried(), out, st.s, pBeforeRegion(st, out));
  SmallVector<Type> types;
  for (Value v : before)
    types.push_back(v.getType());
  Value keep = notI1(st.skip);
  auto ifOp = scf::IfOp::create(b, loc, types, keep, /*withElseRegion=*/true);
  st.commitInRegion = false;
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    st.inSkipRegion = true;
    LogicalResult emitted = emitSteps(body, st);
    st.inSkipRegion = false;
    if (failed(emitted))
      return failure();
    if (out.update && !st.corr[0])
      return op.emitOpError() << "computes no correction factors";
    if (out.numP && int64_t(st.pRegs.size()) != out.numP)
      return op.emitOpError() << "computes no P in registers";
    // An async wgmma inside commits its group in the kept branch, and the
    // skip branch below makes the group count a later wait sees independent
    // of the path. The commit sits inside the branch: after the join,
    // ptxas would close the kept path's group at the branch end and make
    // the commit a second (dummy) group, so `wgmma.wait_group 1` would
    // retire P V(n) along with Q Kᵀ(n+1) and the softmax would no longer
    // overlap P V (docs/results/2026-11-29-blasst-final.md). This is safe
    // because P is written only after the wait that retires P V(n)
    // (ws.exp2 + ws.pack_p): with P written before it, ptxas gave the new
    // P the registers P V(n) was still reading.
    bool commit = st.commitInRegion;
    if (commit)
      NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
    scf::YieldOp::create(b, loc, keptYield(st, out));
    // A skipped block leaves the running state as it was (correction 1).
    // Its group would be empty. When the next step waits for all but at most
    // one group (the region's, on the kept path), the skip path waits for
    // all of them right here instead: the same groups are retired on both
    // paths after that wait, and ptxas does not turn an empty commit into a
    // dummy HGMMA that queues behind Q Kᵀ on the tensor pipe. Otherwise it
    // commits the empty group.
    b.setInsertionPointToStart(ifOp.elseBlock());
    if (commit) {
      if (waitsForAllButOne(op))
        NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
      else
        NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
    }
    scf::YieldOp::create(b, loc, before);
  }
  // Values computed inside do not exist on the skip path.
  takeSkipResults(st, ifOp.getResults(), out);
  st.commitInRegion = false;
  // A block max reduced inside the region does not exist after it.
  for (int i = 0; i < 2; ++i)
    st.mBlock[i] = mBlockBefore[i];
  return success();
}

LogicalResult SM90Emitter::emitTurn(Operation *op, FlatSymbolRefAttr orderRef,
                                    bool wait, RoleState &st) {
  auto order =
      cast<OrderOp>(SymbolTable::lookupSymbolIn(kernel, orderRef.getAttr()));
  ArrayAttr roles = order.getRoles();
  auto self = FlatSymbolRefAttr::get(st.role.getSymNameAttr());
  size_t idx = llvm::find(roles, self) - roles.begin();
  bool first = idx == 0, last = idx + 1 == roles.size();
  if (wait) {
    // The first role holds the turn before its first wait.
    if (first && !st.inLoop && !st.afterLoop)
      return success();
    auto [id, count] = turnBarriers.lookup(
        (order.getSymName() + "/" + st.role.getSymName()).str());
    NVVM::BarrierOp::create(b, loc, Type(), c32(id), c32(count), nullptr,
                            Value());
    return success();
  }
  // The last role's pass after its loop would have no matching wait.
  if (last && st.afterLoop)
    return success();
  auto next = cast<FlatSymbolRefAttr>(roles[(idx + 1) % roles.size()]);
  auto [id, count] =
      turnBarriers.lookup((order.getSymName() + "/" + next.getValue()).str());
  NVVM::BarrierArriveOp::create(b, loc, c32(id), c32(count));
  (void)op;
  return success();
}

void SM90Emitter::emitStatsFlush(RoleState &st) {
  // One thread per role adds its counts to stats[b][h] = {visited, skipped}.
  // A role whose rows all lie past seqQ (the last CTA's second warpgroup
  // when seqQ % block_m is in 1..64) has no rows to skip for: it walks the
  // blocks but is not counted (its first block, computed before the loop
  // without a vote, would count as kept and the rest as skipped).
  OpBuilder::InsertionGuard guard(b);
  // (This also leaves out a kv_multicast pair's padding CTA.)
  openIf(arith::AndIOp::create(
      b, loc, cmp(arith::CmpIPredicate::eq, st.threadInRole, c32(0)),
      hasRows(st.rowBegin)));
  // Each role walks every block of its tile once (the look-ahead past the
  // last block is not a block), so it visited numBlocks of them.
  addStats(st.numBlocks, st.skipped);
}

LogicalResult SM90Emitter::emit(ModuleOp module) {
  if (failed(emitKernel(module))) {
    if (func)
      func.erase();
    return failure();
  }
  return success();
}

namespace {
struct ConvertWSToNVVMPass
    : public blasst::impl::ConvertWSToNVVMBase<ConvertWSToNVVMPass> {
  using Base::Base;
  void runOnOperation() override;
};
} // namespace

void ConvertWSToNVVMPass::runOnOperation() {
  ModuleOp module = getOperation();
  std::optional<ws::Target> wanted = symbolizeTarget(target);
  if (!wanted) {
    module.emitError() << "convert-ws-to-nvvm: unknown target '" << target
                       << "' (expected sm_90a or sm_100a)";
    return signalPassFailure();
  }
  SmallVector<KernelOp> kernels(module.getBody()->getOps<KernelOp>());
  for (KernelOp kernel : kernels) {
    if (kernel.getTarget() != ws::Target::sm_90a) {
      kernel.emitOpError() << "cannot be lowered: the sm_100a lowering "
                              "(tcgen05, tensor memory) is not built yet";
      return signalPassFailure();
    }
    if (kernel.getTarget() != *wanted) {
      kernel.emitOpError() << "targets " << stringifyTarget(kernel.getTarget())
                           << " but the pass lowers " << target;
      return signalPassFailure();
    }
    FailureOr<SmemLayout> layout = computeLayout(kernel);
    if (failed(layout))
      return signalPassFailure();
    SM90Emitter emitter(kernel, *layout);
    if (failed(emitter.emit(module)))
      return signalPassFailure();
    kernel.erase();
  }
  if (deviceOnly) {
    SmallVector<Operation *> host;
    for (Operation &op : module.getBody()->getOperations())
      if (isa<FunctionOpInterface>(op) && !isa<LLVM::LLVMFuncOp>(op))
        host.push_back(&op);
    for (Operation *op : host)
      op->erase();
  }
}
