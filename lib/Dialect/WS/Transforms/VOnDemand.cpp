//===- VOnDemand.cpp - BLASST: V copied only for kept blocks --------------===//
//
// A skipped block's P V does not run, so its V tile is never read. The load
// role can leave it in L2 when it knows the decision before it issues the
// copy: K moves one block ahead (the consumers need K of block n + 1 to
// vote on it), and V of block n waits for the votes on block n.
//
//   prologue:  acquire k; tma_load k; release k            (block 0)
//   kv_loop:   acquire k {ahead 1}; tma_load k {ahead 1}; release k {ahead 1}
//              await_vote {speculate_after = 2}
//              acquire v; tma_load v {on_demand}; release v
//
// With speculate_after = K, V of a block that follows K kept blocks is
// copied without waiting for its votes (as early as without this pass); its
// votes are read one block later and only steer the next copy.
//
//===----------------------------------------------------------------------===//
#include "blasst/Dialect/WS/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace blasst::ws {
#define GEN_PASS_DEF_BLASSTVONDEMAND
#include "blasst/Dialect/WS/Transforms/Passes.h.inc"
} // namespace blasst::ws

using namespace mlir;
using namespace blasst;
using namespace blasst::ws;

namespace {
struct VOnDemandPass
    : public blasst::ws::impl::BLASSTVOnDemandBase<VOnDemandPass> {
  using Base::Base;
  void runOnOperation() override;
  LogicalResult rewrite(KernelOp kernel);
  LogicalResult deferPVOf(KernelOp kernel, bool required);
};

/// One pipe's acquire, tma_load and release in a kv_loop body.
struct LoadSteps {
  AcquireOp acquire;
  TmaLoadOp load;
  ReleaseOp release;
};
} // namespace

/// The steps of the load of `tensor` in `body`, in that order, or failure.
static FailureOr<LoadSteps> findLoad(Block &body, Tensor tensor,
                                     Operation *anchor) {
  LoadSteps steps;
  for (auto load : body.getOps<TmaLoadOp>())
    if (load.getTensor() == tensor)
      steps.load = load;
  if (!steps.load)
    return anchor->emitOpError()
           << "blasst-v-on-demand: the load role's kv_loop has no "
           << stringifyTensor(tensor) << " copy";
  StringRef pipe = steps.load.getPipe();
  for (Operation &op : body) {
    if (auto a = dyn_cast<AcquireOp>(op); a && a.getPipe() == pipe)
      steps.acquire = a;
    if (auto r = dyn_cast<ReleaseOp>(op); r && r.getPipe() == pipe)
      steps.release = r;
  }
  if (!steps.acquire || !steps.release ||
      !steps.acquire->isBeforeInBlock(steps.load) ||
      !steps.load->isBeforeInBlock(steps.release) || steps.acquire.getAhead() ||
      steps.load.getAhead() || steps.release.getAhead())
    return steps.load.emitOpError()
           << "blasst-v-on-demand expects acquire, tma_load, release of one "
              "block (no ahead) on pipe @"
           << pipe;
  return steps;
}

/// Whether `kernel` votes at all, and whether every vote decides on block
/// n + 1 (the overlap schedule; a prologue's vote on block 0 aside).
static std::pair<bool, bool> voteShape(KernelOp kernel) {
  bool voted = false, next = true;
  kernel.walk([&](VoteOp vote) {
    voted = true;
    next &= vote.decidesNextBlock() || vote.votesFirstBlock();
  });
  return {voted, next};
}

LogicalResult VOnDemandPass::rewrite(KernelOp kernel) {
  AttentionSpec spec = kernel.getSpec().toSpec();
  if (spec.sparsity.isDense())
    return kernel.emitOpError()
           << "blasst-v-on-demand needs a BLASST sparsity policy: without "
              "votes nothing tells which V tiles are needed";
  if (kernel.getPersistent() || kernel.getKvMulticast())
    return kernel.emitOpError()
           << "blasst-v-on-demand is not available with persistent CTAs or "
              "kv_multicast";
  auto [voted, aheadVotes] = voteShape(kernel);
  if (!voted)
    return kernel.emitOpError() << "blasst-v-on-demand runs after "
                                   "--blasst-insert-vote; the kernel has no "
                                   "ws.vote";
  if (!aheadVotes)
    return kernel.emitOpError()
           << "blasst-v-on-demand needs the overlap schedule (votes on block "
              "n + 1, one block before its P V): with a vote on the block "
              "itself the V copy's latency would stall every kept block";
  if (!kernel.walk([](AwaitVoteOp) { return WalkResult::interrupt(); })
           .wasInterrupted()) {
    RoleOp loader;
    for (auto role : kernel.getBody().getOps<RoleOp>())
      if (role.getKind() == RoleKind::load) {
        if (loader)
          return role.emitOpError()
                 << "blasst-v-on-demand expects one load role";
        loader = role;
      }
    if (!loader)
      return kernel.emitOpError() << "blasst-v-on-demand: no load role";
    auto loops = loader.getBody().front().getOps<KVLoopOp>();
    if (std::distance(loops.begin(), loops.end()) != 1)
      return loader.emitOpError()
             << "blasst-v-on-demand expects one kv_loop in the load role";
    KVLoopOp loop = *loops.begin();
    Block &body = loop.getBody().front();
    FailureOr<LoadSteps> k = findLoad(body, Tensor::k, loader);
    FailureOr<LoadSteps> v = findLoad(body, Tensor::v, loader);
    if (failed(k) || failed(v))
      return failure();
    if (!k->release->isBeforeInBlock(v->acquire))
      return loader.emitOpError()
             << "blasst-v-on-demand expects the K copy before the V copy";
    // K of blocks 0 .. A - 1 before the loop, the loop's K A blocks ahead.
    // Decode (bandwidth-bound) streams K as far ahead as its ring allows:
    // the load role waits for the votes on block n with K of n + 1 .. n + A
    // in flight (a skipped block costs only its K copy, so that is what
    // keeps the memory busy).
    auto kPipe = cast<PipeOp>(
        SymbolTable::lookupSymbolIn(kernel, k->load.getPipeAttr().getAttr()));
    int64_t depth = int64_t(kPipe.getDepth());
    int64_t ahead =
        kAhead ? int64_t(kAhead) : (kernel.getQGroup() ? depth : int64_t(1));
    if (ahead < 1 || ahead > depth)
      return kernel.emitOpError()
             << "blasst-v-on-demand: k-ahead must be in [1, " << depth
             << "] (the depth of pipe @" << kPipe.getSymName() << "), got "
             << ahead;
    OpBuilder b(loop);
    for (int64_t blk = 0; blk < ahead; ++blk)
      for (Operation *op : {k->acquire.getOperation(), k->load.getOperation(),
                            k->release.getOperation()}) {
        Operation *copy = b.clone(*op);
        if (blk)
          copy->setAttr("ahead", b.getI64IntegerAttr(blk));
      }
    for (Operation *op : {k->acquire.getOperation(), k->load.getOperation(),
                          k->release.getOperation()})
      op->setAttr("ahead", b.getI64IntegerAttr(ahead));
    b.setInsertionPoint(v->acquire);
    auto await = AwaitVoteOp::create(b, v->acquire.getLoc(), IntegerAttr());
    // -1: what the schedule record says (convert-attn-to-ws resolved it),
    // else the same defaults: 4 for decode kernels, 2 otherwise.
    int64_t speculate = speculateAfter;
    std::optional<DictionaryAttr> record = kernel.getSchedule();
    if (speculate < 0) {
      IntegerAttr recorded =
          record ? record->getAs<IntegerAttr>("v_speculate_after")
                 : IntegerAttr();
      speculate = recorded ? recorded.getInt()
                           : defaultVSpeculateAfter(bool(kernel.getQGroup()));
    }
    if (speculate > 0)
      await.setSpeculateAfter(uint64_t(speculate));
    // The record says what was built (runOnOperation).
    kernel.recordSchedule(
        {b.getNamedAttr("v_on_demand", b.getBoolAttr(true)),
         b.getNamedAttr("v_speculate_after", b.getI64IntegerAttr(speculate))});
    v->load.setOnDemand(true);
    // V first: the copy of V(n) (or its wait for the votes on n) comes
    // before the copy of K(n + A). The votes on n are published right after
    // the consumer releases K(n), which is what K(n + A) waits for, so an
    // unspeculated V(n) costs the K stream nothing; a speculated V(n) no
    // longer queues behind K(n + A)'s slot and leaves a block earlier.
    bool first = vFirst == "true" || (vFirst == "auto" && kernel.getQGroup());
    if (first)
      for (Operation *op : {await.getOperation(), v->acquire.getOperation(),
                            v->load.getOperation(), v->release.getOperation()})
        op->moveBefore(k->acquire);
    // The K copy depth follows the decisions: kept_ahead while the last
    // kept_run blocks were kept (see Passes.td).
    int64_t kept = kKeptAhead;
    if (kept < 0)
      kept = kernel.getQGroup() && first && ahead > 2 && !speculate ? 2 : 0;
    // Run length 6 (was 4, session 17): on the H200 up to 2% faster with
    // blocks skipped (runs of kept blocks switch K less often; i.i.d. and
    // warm runs of 4-16 blocks; -0.3% at batch 8 x 32K i.i.d.), the same
    // with nothing skippable (docs/results/2026-12-04-session31.md §2).
    int64_t keptRun = kKeptRun < 0 ? 6 : int64_t(kKeptRun);
    if (kept == 0 && kKeptRun >= 0)
      return kernel.emitOpError()
             << "blasst-v-on-demand: k-kept-run = " << int64_t(kKeptRun)
             << " has no effect: the K copy depth does not follow the "
                "decisions here (k-kept-ahead "
             << (kKeptAhead < 0 ? "resolves to 0 for this kernel: it is on "
                                  "by default for decode kernels with V "
                                  "first, K more than 2 blocks ahead and "
                                  "no speculation"
                                : "= 0")
             << ")";
    if (kept > 0) {
      if (kept >= ahead || !first || speculate)
        return kernel.emitOpError()
               << "blasst-v-on-demand: k-kept-ahead = " << kept
               << " needs K copied further ahead (k-ahead " << ahead
               << "), V first (the K copies after the votes they follow) "
                  "and no speculation (speculate-after "
               << speculate << ")";
      for (Operation *op : {k->acquire.getOperation(), k->load.getOperation(),
                            k->release.getOperation()}) {
        op->setAttr("kept_ahead", b.getI64IntegerAttr(kept));
        op->setAttr("kept_run", b.getI64IntegerAttr(keptRun));
      }
      kernel.recordSchedule(
          {b.getNamedAttr("k_kept_ahead", b.getI64IntegerAttr(kept)),
           b.getNamedAttr("k_kept_run", b.getI64IntegerAttr(keptRun))});
    }
  }
  if (deferPV == "true" || (deferPV == "auto" && kernel.getQGroup()))
    if (failed(deferPVOf(kernel, /*required=*/deferPV == "true")))
      return failure();
  // The load role reads every published vote: it counts them, and the
  // voters keep no counters (their loop is the critical one).
  bool stats = false;
  kernel.walk([&](VoteOp vote) {
    vote.setPublish(true);
    stats |= vote.getStats();
    vote.setStats(false);
  });
  if (stats)
    kernel.walk([&](AwaitVoteOp await) { await.setStats(true); });
  return success();
}

/// The speculation depth of `kernel`'s load role (0 without).
static int64_t speculationOf(KernelOp kernel) {
  int64_t k = 0;
  kernel.walk(
      [&](AwaitVoteOp a) { k = int64_t(a.getSpeculateAfter().value_or(0)); });
  return k;
}

/// Defers the compute role's P V by one block (option `defer-pv`): see
/// Passes.td. `required`: an error where the schedule does not allow it;
/// otherwise such a kernel is left as it is.
LogicalResult VOnDemandPass::deferPVOf(KernelOp kernel, bool required) {
  auto refuse = [&](Operation *at, const Twine &why) -> LogicalResult {
    if (!required)
      return success();
    return at->emitOpError() << "blasst-v-on-demand: defer-pv " << why;
  };
  if (int64_t k = speculationOf(kernel))
    return refuse(kernel, "needs speculate-after 0 (got " + Twine(k) +
                              "): a speculated V(n) is copied before the "
                              "votes on n are read, and with P V one block "
                              "later the votes on n + 2 could then overwrite "
                              "them in the two vote slots");
  RoleOp compute;
  for (auto role : kernel.getBody().getOps<RoleOp>())
    if (role.getKind() == RoleKind::compute) {
      if (compute)
        return refuse(role, "needs one compute role");
      compute = role;
    }
  if (!compute)
    return refuse(kernel, "needs a compute role");
  auto loops = compute.getBody().front().getOps<KVLoopOp>();
  if (std::distance(loops.begin(), loops.end()) != 1)
    return refuse(compute, "needs one kv_loop in the compute role");
  Block &body = (*loops.begin()).getBody().front();
  // The overlap schedule with P in registers: acquire v; a region with the
  // P V; ... release v; a region with correct and pack_p.
  AcquireOp acqV;
  ReleaseOp relV;
  UnlessSkippedOp pvRegion, lastRegion;
  MmaOp pv;
  for (Operation &op : body) {
    if (auto r = dyn_cast<UnlessSkippedOp>(op)) {
      for (auto m : r.getBody().front().getOps<MmaOp>())
        if (m.getKind() == MmaKind::pv) {
          pvRegion = r;
          pv = m;
        }
      if (!r.getBody().front().getOps<PackPOp>().empty() &&
          !r.getBody().front().getOps<CorrectOp>().empty())
        lastRegion = r;
    }
  }
  if (!pv || !lastRegion)
    return refuse(compute, "needs the overlap schedule with P in registers "
                           "(a skip region with the P V, one with the "
                           "correction and pack_p)");
  StringRef vPipe;
  for (auto p : kernel.getBody().getOps<PipeOp>())
    if (llvm::is_contained(p.getBuffers(), pv.getBAttr()))
      vPipe = p.getSymName();
  for (Operation &op : body) {
    if (auto a = dyn_cast<AcquireOp>(op); a && a.getPipe() == vPipe)
      acqV = a;
    if (auto r = dyn_cast<ReleaseOp>(op); r && r.getPipe() == vPipe)
      relV = r;
  }
  if (!acqV || !relV || acqV.getAhead() || relV.getAhead() || pv.getAhead() ||
      pvRegion.getAhead() || !acqV->isBeforeInBlock(pvRegion) ||
      !relV->isBeforeInBlock(lastRegion))
    return refuse(compute, "needs V acquired before its P V and released "
                           "before the correction, all on block n");
  OpBuilder b(kernel.getContext());
  IntegerAttr behind = b.getI64IntegerAttr(-1);
  for (Operation *op : {acqV.getOperation(), relV.getOperation(),
                        pv.getOperation(), pvRegion.getOperation()})
    op->setAttr("ahead", behind);
  // Block n's correction, under its own decision, before P of n + 1.
  b.setInsertionPoint(lastRegion);
  auto corrRegion = UnlessSkippedOp::create(b, lastRegion.getLoc(), UnitAttr(),
                                            b.getI64IntegerAttr(0));
  Block *corrBody = b.createBlock(&corrRegion.getBody());
  for (auto c : llvm::make_early_inc_range(
           lastRegion.getBody().front().getOps<CorrectOp>())) {
    c->moveBefore(corrBody, corrBody->end());
    c.setAheadAttr(b.getI64IntegerAttr(0));
  }
  kernel.recordSchedule(b.getNamedAttr("defer_pv", b.getBoolAttr(true)));
  return success();
}

/// Whether `mode=auto` rewrites `kernel` (the cases measured on the H200).
/// The schedule record of a kernel this pass leaves as it is.
static void recordVCopiedAlways(KernelOp kernel) {
  std::optional<DictionaryAttr> record = kernel.getSchedule();
  if (!record)
    return;
  NamedAttrList attrs(*record);
  attrs.erase("v_speculate_after");
  attrs.set("v_on_demand", BoolAttr::get(kernel.getContext(), false));
  kernel.setScheduleAttr(attrs.getDictionary(kernel.getContext()));
}

static bool applies(KernelOp kernel) {
  AttentionSpec spec = kernel.getSpec().toSpec();
  // Above head_dim 128 only for decode (q_group): prefill's 80-key blocks
  // spill with it; decode's 32-key blocks do not (resolveSchedule).
  if (kernel.getTarget() != ws::Target::sm_90a || spec.sparsity.isDense() ||
      (spec.headDim > 128 && !kernel.getQGroup()) || kernel.getPersistent() ||
      kernel.getKvMulticast() || !kernel.getBody().getOps<OrderOp>().empty())
    return false;
  auto [voted, ahead] = voteShape(kernel);
  return voted && ahead;
}

void VOnDemandPass::runOnOperation() {
  if (kAhead < 0) {
    getOperation().emitError() << "blasst-v-on-demand: k-ahead must be 0 "
                                  "(the default for the kernel) or more, got "
                               << int64_t(kAhead);
    return signalPassFailure();
  }
  // The lowering counts kept blocks in 32 bits.
  if (speculateAfter < -1 || speculateAfter > INT32_MAX) {
    getOperation().emitError() << "blasst-v-on-demand: speculate-after must "
                                  "be 0 (always wait for the votes) to "
                                  "2147483647, or -1 (the kernel's "
                                  "default), got "
                               << int64_t(speculateAfter);
    return signalPassFailure();
  }
  if (kKeptAhead < -1 || kKeptRun == 0 || kKeptRun < -1 || kKeptRun > 8) {
    getOperation().emitError()
        << "blasst-v-on-demand: k-kept-ahead must be -1 (the kernel's "
           "default), 0 (off) or more, and k-kept-run in [1, 8] (or -1: "
           "4); got "
        << int64_t(kKeptAhead) << " and " << int64_t(kKeptRun);
    return signalPassFailure();
  }
  if (vFirst != "true" && vFirst != "false" && vFirst != "auto") {
    getOperation().emitError() << "blasst-v-on-demand: v-first must be true, "
                                  "false or auto, got '"
                               << vFirst << "'";
    return signalPassFailure();
  }
  if (deferPV != "true" && deferPV != "false" && deferPV != "auto") {
    getOperation().emitError() << "blasst-v-on-demand: defer-pv must be true, "
                                  "false or auto, got '"
                               << deferPV << "'";
    return signalPassFailure();
  }
  if (mode != "true" && mode != "auto" && mode != "false") {
    getOperation().emitError() << "blasst-v-on-demand: mode must be true, "
                                  "auto or false, got '"
                               << mode << "'";
    return signalPassFailure();
  }
  // The schedule record says what this pass decided for each kernel
  // (convert-attn-to-ws recorded the spec's default, which --v-on-demand
  // overrides): rewrite() records V on demand; a kernel left as it is (mode
  // false, or auto where it does not apply) copies V for every block and
  // has no speculation depth.
  for (auto kernel : getOperation().getBody()->getOps<KernelOp>()) {
    if (mode == "false" || (mode == "auto" && !applies(kernel))) {
      recordVCopiedAlways(kernel);
      continue;
    }
    if (failed(rewrite(kernel)))
      return signalPassFailure();
  }
}
