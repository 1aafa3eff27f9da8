//===- SkipRegions.cpp - BLASST skip regions ------------------------------===//
//
// ws.unless_skipped: the kept path runs the region, the skip path keeps
// the running state (correction 1) and every barrier arrival.
//
//===----------------------------------------------------------------------===//
#include "KernelLowering.h"

#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace blasst;
using namespace blasst::ws;
using namespace blasst::ws::lowering;

LogicalResult KernelLowering::emitSteps(Block &block, RoleState &st) {
  for (Operation *op = block.empty() ? nullptr : &block.front(); op;
       op = op->getNextNode()) {
    // Two skip regions the IR fuses (`fuse_next`, set by the vote pass where
    // the shape measured on the H200 holds: the softmax, the P V wait and
    // V's release, the correction and P) lower to one branch, the steps
    // between them on both paths: ptxas schedules the kept path as one
    // block (0.6-2% faster with skipping,
    // docs/results/2026-11-29-session8.md §6).
    SmallVector<Operation *> mids;
    if (auto first = dyn_cast<UnlessSkippedOp>(op);
        first && first.getFuseNext())
      if (UnlessSkippedOp second = first.getFusablePartner(mids)) {
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

Value KernelLowering::decisionOf(UnlessSkippedOp op, RoleState &st) {
  std::optional<uint64_t> ahead = op.getAhead();
  if (!ahead)
    return st.skip;
  switch (int64_t(*ahead)) {
  case -1:
    return st.skipPrev;
  case 0:
    return st.skipCur;
  default:
    return st.skip;
  }
}

LogicalResult KernelLowering::emitFusedSkip(UnlessSkippedOp r1,
                                            ArrayRef<Operation *> mids,
                                            UnlessSkippedOp r2, RoleState &st) {
  if (!st.skip || r1.getAhead() || r2.getAhead())
    return r1.emitOpError() << "needs a preceding ws.vote (fused regions "
                               "test the latest one)";
  SkipOutputs out = skipOutputsOf({r1, r2});
  if (out.exps && !st.s)
    return r1.emitOpError() << "exponentiates scores nobody computed";
  // Snapshot what the kept path changes, for the skip path.
  Value o0 = st.o, m0[2] = {st.m[0], st.m[1]}, l0[2] = {st.l[0], st.l[1]};
  Value corr0[2] = {st.corr[0], st.corr[1]},
        mUse0[2] = {st.mUse[0], st.mUse[1]};
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
    scf::YieldOp::create(b, loc, skippedYield(st.carried(), out, s0, pBefore));
  }
  takeSkipResults(st, ifOp.getResults(), out);
  for (int i = 0; i < 2; ++i)
    st.mBlock[i] = mBlock0[i];
  return success();
}

KernelLowering::SkipOutputs
KernelLowering::skipOutputsOf(ArrayRef<UnlessSkippedOp> regions) {
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

SmallVector<Value> KernelLowering::keptYield(RoleState &st,
                                             const SkipOutputs &out) {
  SmallVector<Value> v = st.carried();
  // (sm_100a's softmax roles hold one row: the second factor is unused.)
  if (out.update)
    v.append({st.corr[0], st.corr[1] ? st.corr[1] : cf(1.0f), st.mUse[0],
              st.mUse[1] ? st.mUse[1] : cf(0.0f)});
  if (out.exps)
    v.push_back(st.s);
  if (out.numP)
    v.append(st.pRegs.begin(), st.pRegs.end());
  return v;
}

SmallVector<Value> KernelLowering::skippedYield(ValueRange carried,
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

SmallVector<Value> KernelLowering::pBeforeRegion(RoleState &st,
                                                 const SkipOutputs &out) {
  SmallVector<Value> p;
  for (int64_t i = 0; i < out.numP; ++i)
    p.push_back(int64_t(st.pRegs.size()) == out.numP
                    ? st.pRegs[i]
                    : Value(LLVM::UndefOp::create(b, loc, i32)));
  return p;
}

void KernelLowering::takeSkipResults(RoleState &st, ValueRange r,
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

/// Whether the step right after `op` is a ws.mma_wait leaving at most one
/// group pending.
static bool waitsForAllButOne(Operation *op) {
  auto wait = dyn_cast_or_null<MmaWaitOp>(op->getNextNode());
  return wait && wait.getPending() <= 1;
}

LogicalResult KernelLowering::emitUnlessSkipped(UnlessSkippedOp op,
                                                RoleState &st) {
  Value skip = decisionOf(op, st);
  if (!skip)
    return op.emitOpError()
           << (op.getAhead() ? "needs the decision on its block: ahead = -1 "
                               "is lowered with a deferred P V (ws.mma pv "
                               "{ahead = -1}) and ahead = 0 in a loop that "
                               "carries block n's decision"
                             : "needs a preceding ws.vote");
  if (!st.o) {
    // A role without running state (sm_100a's MMA warp and correction
    // role, deciding by ws.load_vote): the kept path runs the steps, the
    // skip path nothing; the releases after the region run on both.
    OpBuilder::InsertionGuard guard(b);
    openIf(notI1(skip));
    st.inSkipRegion = true;
    LogicalResult emitted = emitSteps(op.getBody().front(), st);
    st.inSkipRegion = false;
    return emitted;
  }
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
  Value keep = notI1(skip);
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
      target.commitAsyncGroup();
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
        target.waitAsyncGroups(0);
      else
        target.commitAsyncGroup();
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
