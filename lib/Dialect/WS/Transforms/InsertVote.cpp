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

namespace {
struct InsertVotePass
    : public blasst::ws::impl::BLASSTInsertVoteBase<InsertVotePass> {
  void runOnOperation() override;
  LogicalResult rewriteLoop(KVLoopOp loop, const AttentionSpec &spec);
  LogicalResult shareVotes(KernelOp kernel);
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
  for (auto &run : runs) {
    b.setInsertionPoint(run.front());
    auto region = UnlessSkippedOp::create(b, run.front()->getLoc(), UnitAttr(),
                                          IntegerAttr());
    Block *inner = &region.getBody().emplaceBlock();
    for (Operation *op : run)
      op->moveBefore(inner, inner->end());
  }
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

void InsertVotePass::runOnOperation() {
  for (auto kernel : getOperation().getBody()->getOps<KernelOp>()) {
    AttentionSpec spec = kernel.getSpec().toSpec();
    if (spec.sparsity.isDense())
      continue;
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
  }
}
