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
};
} // namespace

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
    auto region = UnlessSkippedOp::create(b, run.front()->getLoc());
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
    if (spec.phase == Phase::Decode) {
      kernel.emitOpError() << "BLASST decode (skipping V loads) is not "
                              "implemented yet; prefill only";
      return signalPassFailure();
    }
    if (kernel.getTarget() != ws::Target::sm_90a) {
      kernel.emitOpError()
          << "BLASST on sm_100a needs the vote to reach the MMA warp, which "
             "is not implemented yet; sm_90a only";
      return signalPassFailure();
    }
    WalkResult r = kernel.walk([&](KVLoopOp loop) {
      return failed(rewriteLoop(loop, spec)) ? WalkResult::interrupt()
                                             : WalkResult::advance();
    });
    if (r.wasInterrupted())
      return signalPassFailure();
  }
}
