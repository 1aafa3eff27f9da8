//===- InsertVote.cpp - BLASST skip-vote insertion ------------------------===//
//
// A block is skippable when every row that shares its P·V agrees that its
// weights are negligible; the decision needs the block's row maxima and the
// true running max, so the vote goes right after ws.row_max, before
// ws.softmax_update raises the running max.
//
//===----------------------------------------------------------------------===//
#include "blasst/Dialect/WS/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

namespace blasst::ws {
#define GEN_PASS_DEF_BLASSTINSERTVOTE
#include "blasst/Dialect/WS/Transforms/Passes.h.inc"
} // namespace blasst::ws

using namespace mlir;
using namespace blasst;
using namespace blasst::ws;

/// Steps a skipped block leaves out.
static bool isSkippable(Operation *op) {
  if (auto mma = dyn_cast<MmaOp>(op))
    return mma.getKind() == MmaKind::pv;
  return isa<SoftmaxUpdateOp, Exp2StoreOp, Exp2Op, PackPOp, CorrectOp>(op);
}

/// Moves `run` (consecutive steps) into a new ws.unless_skipped in its place.
static void wrapUnlessSkipped(OpBuilder &b, ArrayRef<Operation *> run) {
  b.setInsertionPoint(run.front());
  auto region = UnlessSkippedOp::create(b, run.front()->getLoc(), UnitAttr(),
                                        IntegerAttr());
  Block *inner = &region.getBody().emplaceBlock();
  for (Operation *op : run)
    op->moveBefore(inner, inner->end());
}

namespace {
struct InsertVotePass
    : public blasst::ws::impl::BLASSTInsertVoteBase<InsertVotePass> {
  using Base::Base;
  void runOnOperation() override;
  LogicalResult rewriteLoop(KVLoopOp loop, const AttentionSpec &spec);
  LogicalResult shareVotes(KernelOp kernel);
  LogicalResult seedFromSink(KernelOp kernel);
  LogicalResult voteOnFirstBlock(KernelOp kernel, const AttentionSpec &spec);
};
} // namespace

/// sm_100a: the voters are the softmax roles, but the MMA warp issues P V
/// and the correction role rescales O. A voter hands its decision on with
/// what its skip regions would have handed on: before the region that stores
/// P (or the factors), inside that pipe's acquire and release, it writes the
/// decision to a word of that buffer's own (`ws.store_vote @vote_p0`); the
/// role that reads the buffer reads the word after its acquire of the same
/// pipe (`ws.load_vote`) and leaves out P V (or the rescale). So each word
/// is written and read under the pipe that carries its buffer, with or
/// without cross-stage P. Every acquire and release stays on both paths.
/// blasst-verify-sync proves the hand-over (the words are buffers).
LogicalResult InsertVotePass::shareVotes(KernelOp kernel) {
  // The voters' words, and which buffers name a voter: its P and factors.
  llvm::StringMap<FlatSymbolRefAttr> wordOf;
  Operation *lastBuffer = nullptr;
  for (auto buf : kernel.getBody().getOps<BufferOp>())
    lastBuffer = buf;
  OpBuilder b(kernel.getContext());
  for (auto role : kernel.getBody().getOps<RoleOp>()) {
    KVLoopOp loop;
    role.walk([&](KVLoopOp l) { loop = l; });
    if (!loop || loop.getBody().front().getOps<VoteOp>().empty())
      continue;
    for (auto region : loop.getBody().front().getOps<UnlessSkippedOp>()) {
      SmallVector<StringRef> handed;
      region.walk([&](Exp2StoreOp x) { handed.push_back(x.getP()); });
      region.walk([&](SoftmaxUpdateOp u) {
        if (u.getFactorsAttr())
          handed.push_back(u.getFactorsAttr().getValue());
      });
      for (StringRef buf : handed) {
        b.setInsertionPointAfter(lastBuffer);
        auto word = BufferOp::create(
            b, role.getLoc(), b.getStringAttr(("vote_" + buf).str()),
            MemorySpaceAttr::get(b.getContext(), MemorySpace::smem),
            b.getDenseI64ArrayAttr({1, 1}), TypeAttr::get(b.getI32Type()),
            b.getI64IntegerAttr(1), FlatSymbolRefAttr(), DenseI64ArrayAttr());
        lastBuffer = word;
        auto ref = FlatSymbolRefAttr::get(word.getSymNameAttr());
        wordOf[buf] = ref;
        b.setInsertionPoint(region);
        StoreVoteOp::create(b, region.getLoc(), ref);
      }
    }
  }
  // Readers: the P V products and rescales of roles that do not vote.
  for (auto role : kernel.getBody().getOps<RoleOp>()) {
    if (role.walk([](VoteOp) { return WalkResult::interrupt(); })
            .wasInterrupted())
      continue;
    SmallVector<Operation *> skippable;
    role.walk([&](KVLoopOp loop) {
      for (Operation &op : loop.getBody().front())
        if (isSkippable(&op))
          skippable.push_back(&op);
    });
    for (Operation *op : skippable) {
      StringRef by;
      if (auto mma = dyn_cast<MmaOp>(op))
        by = mma.getA();
      else if (auto c = dyn_cast<CorrectOp>(op); c && c.getFactorsAttr())
        by = c.getFactorsAttr().getValue();
      FlatSymbolRefAttr word = wordOf.lookup(by);
      if (!word)
        return op->emitOpError()
               << "is skippable, but no voter computes what it reads (@" << by
               << ")";
      b.setInsertionPoint(op);
      LoadVoteOp::create(b, op->getLoc(), word);
      auto region =
          UnlessSkippedOp::create(b, op->getLoc(), UnitAttr(), IntegerAttr());
      Block *inner = &region.getBody().emplaceBlock();
      op->moveBefore(inner, inner->end());
    }
  }
  return success();
}

LogicalResult InsertVotePass::rewriteLoop(KVLoopOp loop,
                                          const AttentionSpec &spec) {
  Block &body = loop.getBody().front();
  if (!body.getOps<VoteOp>().empty())
    return success(); // Already voted: the pass is idempotent.
  RowMaxOp rowMax;
  for (auto op : body.getOps<RowMaxOp>()) {
    if (rowMax)
      return op.emitOpError()
             << "a second row_max in one KV block; the vote pass expects one";
    rowMax = op;
  }
  if (!rowMax)
    return success(); // Roles that compute no scores (producers) keep going.

  OpBuilder b(loop.getContext());
  b.setInsertionPointAfter(rowMax);
  VoteOp::create(b, rowMax.getLoc(), rowMax.getScoresAttr(),
                 spec.stats ? b.getUnitAttr() : UnitAttr());

  // Wrap maximal runs of skippable steps after the vote. When the loop's
  // softmax works one block ahead (the overlap schedule), the steps before
  // the row_max (P V of block n) belong to the block the previous
  // iteration voted on: wrap those too.
  bool ahead = rowMax.getAhead() && *rowMax.getAhead() == 1;
  SmallVector<SmallVector<Operation *>> runs;
  SmallVector<Operation *> current;
  Operation *first =
      ahead ? &body.front() : rowMax->getNextNode()->getNextNode();
  for (Operation *op = first; op; op = op->getNextNode()) {
    if (isSkippable(op)) {
      current.push_back(op);
      continue;
    }
    if (!current.empty())
      runs.push_back(std::move(current));
    current.clear();
  }
  if (!current.empty())
    runs.push_back(std::move(current));
  for (auto &run : runs)
    wrapUnlessSkipped(b, run);
  // Two regions around the P V wait that one branch can decide: the kept
  // path becomes one block ptxas schedules as a whole (0.6-2% faster with
  // skipping, docs/results/2026-11-29-session8.md §6).
  UnlessSkippedOp joined;
  for (auto region : body.getOps<UnlessSkippedOp>()) {
    SmallVector<Operation *> mids;
    if (region == joined)
      continue; // The second of a fused pair.
    if ((joined = region.getFusablePartner(mids)))
      region.setFuseNext(true);
  }
  return success();
}

/// The steps of `role` before its kv_loop.
static SmallVector<Operation *> prologueOf(RoleOp role) {
  SmallVector<Operation *> steps;
  for (Operation &op : role.getBody().front()) {
    if (isa<KVLoopOp>(op))
      break;
    steps.push_back(&op);
  }
  return steps;
}

/// The sink seed (option `sink-seed`, Passes.td): K of the sequence's block
/// 0 through a depth-1 pipe of its own; the compute role's row maxima of
/// its scores become the running max before the prologue's block.
LogicalResult InsertVotePass::seedFromSink(KernelOp kernel) {
  auto fail = [&](const Twine &why) {
    return kernel.emitOpError() << "blasst-insert-vote: sink-seed " << why;
  };
  if (!kernel.getSplitKv())
    return fail("applies to split-KV decode kernels (split_kv): other "
                "kernels walk the sequence from block 0");
  SymbolTable symbols(kernel);
  if (symbols.lookup("sink") || symbols.lookup("sink_pipe"))
    return success(); // Already seeded: the pass is idempotent.
  // The load role's K copy (in its kv_loop) names the K buffer and pipe.
  RoleOp computer;
  TmaLoadOp kLoad;
  for (auto role : kernel.getBody().getOps<RoleOp>()) {
    if (role.getKind() == RoleKind::load)
      role.walk([&](TmaLoadOp load) {
        if (load.getTensor() == Tensor::k && load->getParentOfType<KVLoopOp>())
          kLoad = load;
      });
    else if (role.getKind() == RoleKind::compute) {
      if (computer)
        return fail("expects one compute role (the decode schedule)");
      computer = role;
    }
  }
  if (!kLoad || !computer)
    return fail("expects a load role copying K in its kv_loop and a compute "
                "role");
  // The compute role's prologue: acquire K, Q Kᵀ of block 0.
  AcquireOp kAcquire;
  MmaOp qk;
  for (Operation *op : prologueOf(computer)) {
    if (auto a = dyn_cast<AcquireOp>(op);
        a && a.getPipe() == kLoad.getPipe() && !kAcquire)
      kAcquire = a;
    if (auto m = dyn_cast<MmaOp>(op); m && m.getKind() == MmaKind::qk && !qk)
      qk = m;
  }
  if (!kAcquire || !qk)
    return fail("expects the compute role's prologue to multiply block 0 "
                "(acquire of @" +
                kLoad.getPipe() + " and ws.mma qk before its kv_loop)");
  auto kBuf = cast<BufferOp>(symbols.lookup(kLoad.getDst()));
  auto kPipe = cast<PipeOp>(symbols.lookup(kLoad.getPipe()));
  // The sink's copy comes the way K's do: TMA (tx_bytes) or cp_async.
  std::optional<uint64_t> tx = kPipe.getTxBytes();
  if (!tx && !kPipe.getCpAsync())
    return fail("expects a K pipe with tx_bytes or cp_async");

  OpBuilder b(kernel.getContext());
  MLIRContext *ctx = kernel.getContext();
  Location loc = kernel.getLoc();
  Operation *lastBuffer = nullptr, *lastPipe = nullptr;
  for (Operation &op : kernel.getBody().front()) {
    if (isa<BufferOp>(op))
      lastBuffer = &op;
    if (isa<PipeOp>(op))
      lastPipe = &op;
  }
  b.setInsertionPointAfter(lastBuffer);
  auto sinkBuf = BufferOp::create(
      b, loc, b.getStringAttr("sink"),
      MemorySpaceAttr::get(ctx, MemorySpace::smem), kBuf.getShapeAttr(),
      kBuf.getElementTypeAttr(), b.getI64IntegerAttr(1), FlatSymbolRefAttr(),
      DenseI64ArrayAttr());
  auto bufRef = FlatSymbolRefAttr::get(sinkBuf.getSymNameAttr());
  b.setInsertionPointAfter(lastPipe);
  auto sinkPipe = PipeOp::create(
      b, loc, b.getStringAttr("sink_pipe"), b.getI64IntegerAttr(1),
      kPipe.getProducerAttr(),
      b.getArrayAttr({FlatSymbolRefAttr::get(computer.getSymNameAttr())}),
      b.getArrayAttr({bufRef}),
      tx ? b.getI64IntegerAttr(int64_t(*tx)) : IntegerAttr(),
      kPipe.getCpAsync() ? b.getUnitAttr() : UnitAttr());
  auto pipeRef = FlatSymbolRefAttr::get(sinkPipe.getSymNameAttr());

  // Load role: the copy right before its kv_loop (after Q; the K copies a
  // prologue streams ahead come after it).
  KVLoopOp loadLoop = kLoad->getParentOfType<KVLoopOp>();
  b.setInsertionPoint(loadLoop);
  AcquireOp::create(b, loc, pipeRef, IntegerAttr());
  TmaLoadOp::create(b, loc, TensorAttr::get(ctx, Tensor::k), bufRef, pipeRef,
                    IntegerAttr(), UnitAttr(), b.getUnitAttr());
  ReleaseOp::create(b, loc, pipeRef, IntegerAttr());

  // Compute role: Q Kᵀ of the sink, its row maxima as the running max,
  // before the prologue's block.
  b.setInsertionPoint(kAcquire);
  AcquireOp::create(b, loc, pipeRef, IntegerAttr());
  MmaOp::create(b, loc, MmaKindAttr::get(ctx, MmaKind::qk), qk.getAAttr(),
                bufRef, qk.getDAttr(), UnitAttr(), IntegerAttr());
  ReleaseOp::create(b, loc, pipeRef, IntegerAttr());
  RowMaxOp::create(b, loc, qk.getDAttr(), IntegerAttr(), b.getUnitAttr());
  return success();
}

/// The vote on each split's first block (option `vote-first-block`): the
/// sink seed defined the running max before the prologue's block, so that
/// block is voted on like the loop's: ws.vote after the prologue's row_max,
/// the skippable steps after it (softmax_update, exp2_store_p) in
/// ws.unless_skipped. Its P·V and correction (in the loop, deferred or not)
/// read the decision the loop carries in; with V on demand the load role
/// reads its votes like any block's.
LogicalResult InsertVotePass::voteOnFirstBlock(KernelOp kernel,
                                               const AttentionSpec &spec) {
  auto fail = [&](const Twine &why) {
    return kernel.emitOpError()
           << "blasst-insert-vote: vote-first-block " << why;
  };
  for (auto role : kernel.getBody().getOps<RoleOp>()) {
    if (role.getKind() != RoleKind::compute)
      continue;
    SmallVector<Operation *> prologue = prologueOf(role);
    if (llvm::any_of(prologue, [](Operation *op) { return isa<VoteOp>(op); }))
      return success(); // Already voted: the pass is idempotent.
    // The prologue's block-0 row_max, after the sink's.
    bool seeded = false;
    RowMaxOp rowMax;
    for (Operation *op : prologue)
      if (auto rm = dyn_cast<RowMaxOp>(op)) {
        if (rm.getSink())
          seeded = true;
        else if (seeded)
          rowMax = rm;
      }
    if (!seeded)
      continue;
    if (!rowMax)
      return fail("expects the compute role's prologue to compute block 0's "
                  "row maxima (ws.row_max after the sink's)");
    OpBuilder b(kernel.getContext());
    b.setInsertionPointAfter(rowMax);
    VoteOp::create(b, rowMax.getLoc(), rowMax.getScoresAttr(),
                   spec.stats ? b.getUnitAttr() : UnitAttr());
    SmallVector<Operation *> run;
    for (Operation *op = rowMax->getNextNode()->getNextNode();
         op && isSkippable(op); op = op->getNextNode())
      run.push_back(op);
    if (run.empty())
      return fail("expects block 0's softmax right after its vote");
    wrapUnlessSkipped(b, run);
    return success();
  }
  return fail("needs the sink seed (sink-seed): without it each split's "
              "running max is -inf at its first block, which a vote would "
              "always keep");
}

void InsertVotePass::runOnOperation() {
  if (sinkSeed != "true" && sinkSeed != "false" && sinkSeed != "auto") {
    getOperation().emitError()
        << "blasst-insert-vote: sink-seed must be true, false or auto, got '"
        << sinkSeed << "'";
    return signalPassFailure();
  }
  if (voteFirstBlock != "true" && voteFirstBlock != "false" &&
      voteFirstBlock != "auto") {
    getOperation().emitError() << "blasst-insert-vote: vote-first-block must "
                                  "be true, false or auto, got '"
                               << voteFirstBlock << "'";
    return signalPassFailure();
  }
  for (auto kernel : getOperation().getBody()->getOps<KernelOp>()) {
    AttentionSpec spec = kernel.getSpec().toSpec();
    if (spec.sparsity.isDense()) {
      if (sinkSeed == "true") {
        kernel.emitOpError() << "blasst-insert-vote: sink-seed seeds the "
                                "running max BLASST's votes compare with; "
                                "the kernel has no sparsity policy";
        return signalPassFailure();
      }
      if (voteFirstBlock == "true") {
        kernel.emitOpError() << "blasst-insert-vote: vote-first-block votes "
                                "on each KV split's first block; the kernel "
                                "has no sparsity policy";
        return signalPassFailure();
      }
      continue;
    }
    bool voted = kernel.walk([](VoteOp) { return WalkResult::interrupt(); })
                     .wasInterrupted();
    WalkResult r = kernel.walk([&](KVLoopOp loop) {
      return failed(rewriteLoop(loop, spec)) ? WalkResult::interrupt()
                                             : WalkResult::advance();
    });
    if (r.wasInterrupted())
      return signalPassFailure();
    if (!voted && kernel.getTarget() == ws::Target::sm_100a &&
        failed(shareVotes(kernel)))
      return signalPassFailure();
    // auto: what the schedule record says (convert-attn-to-ws resolved the
    // knob), else split-KV kernels.
    bool seed = sinkSeed == "true";
    if (sinkSeed == "auto") {
      BoolAttr recorded;
      if (std::optional<DictionaryAttr> record = kernel.getSchedule())
        recorded = record->getAs<BoolAttr>("sink_seed");
      seed = recorded ? recorded.getValue() : bool(kernel.getSplitKv());
    }
    if (seed && failed(seedFromSink(kernel)))
      return signalPassFailure();
    // The record says what was done (written where it was there or on).
    auto recordFlag = [&](StringRef name, bool on) {
      if (std::optional<DictionaryAttr> record = kernel.getSchedule();
          record && (on || record->get(name)))
        kernel.recordSchedule(
            NamedAttribute(StringAttr::get(kernel.getContext(), name),
                           BoolAttr::get(kernel.getContext(), on)));
    };
    recordFlag("sink_seed", seed);
    // The first block's vote: asked for (true), or auto: where the record
    // says so (convert-attn-to-ws resolved the knob) and the running max
    // is seeded, else wherever it is seeded. Already voted: kept.
    bool seeded = SymbolTable::lookupSymbolIn(kernel, "sink") != nullptr;
    bool voteFirst = voteFirstBlock == "true";
    if (voteFirstBlock == "auto") {
      BoolAttr recorded;
      if (std::optional<DictionaryAttr> record = kernel.getSchedule())
        recorded = record->getAs<BoolAttr>("vote_first_block");
      voteFirst = seeded && (!recorded || recorded.getValue());
    }
    voteFirst |= kernel
                     .walk([](VoteOp v) {
                       return v.votesFirstBlock() ? WalkResult::interrupt()
                                                  : WalkResult::advance();
                     })
                     .wasInterrupted();
    if (voteFirst && failed(voteOnFirstBlock(kernel, spec)))
      return signalPassFailure();
    recordFlag("vote_first_block", voteFirst);
  }
}
