//===- Votes.cpp - BLASST votes and skip statistics -----------------------===//
//
// ws.vote (warp vote, warpgroup unanimity, publication to the load role),
// ws.await_vote (V on demand, speculative copies) and the statistics.
//
//===----------------------------------------------------------------------===//
#include "KernelLowering.h"

#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace blasst;
using namespace blasst::ws;
using namespace blasst::ws::lowering;

//===----------------------------------------------------------------------===//
// BLASST
//===----------------------------------------------------------------------===//

LogicalResult KernelLowering::emitVote(VoteOp op, RoleState &st) {
  if ((!st.mPart[0] && !st.mBlock[0]) || !st.threshold)
    return op.emitOpError() << "needs a preceding ws.row_max in a compute role";
  // Each thread's own rows (the target's fragment layout), then warp
  // unanimity, then the role's warps (the rows of one P·V) through a
  // named-barrier AND reduction.
  Value pred = target.voteSkipsOwnRows(st);
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
    // The prologue's vote on block 0 (vote-first-block) counts only where
    // the split has a block.
    Value real = st.inLoop
                     ? st.scoresReal
                     : cmp(arith::CmpIPredicate::sgt, st.numBlocks, c32(0));
    Value skipCounted =
        real ? arith::AndIOp::create(b, loc, st.skip, real) : st.skip;
    st.skipped =
        add(st.skipped, arith::ExtUIOp::create(b, loc, i32, skipCounted));
  }
  if (op.getPublish()) {
    // The load role copies V of the voted block (n + 1: the vote follows
    // row_max {ahead = 1}, the verifier checks; before the loop: block 0)
    // only if a voter keeps it: one thread writes the role's decision and
    // arrives on the vote barrier (release: the flag is visible to the
    // waiter). No vote on the block past the end: the load role waits for
    // none.
    if (!st.inLoop && !op.votesFirstBlock())
      return op.emitOpError() << "publishes outside the kv_loop";
    OpBuilder::InsertionGuard guard(b);
    Value block = st.inLoop ? add(st.kvBlock, c32(1)) : c32(0);
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

LogicalResult KernelLowering::emitStoreVote(StoreVoteOp op, RoleState &st) {
  if (!st.skip || !st.inLoop)
    return op.emitOpError() << "needs a preceding ws.vote in the kv_loop";
  // One thread writes the warpgroup-uniform decision; the role's next
  // release (an mbarrier arrive, release semantics) publishes it to the
  // roles that acquire after it and read it with ws.load_vote.
  OpBuilder::InsertionGuard guard(b);
  openIf(cmp(arith::CmpIPredicate::eq, st.threadInRole, c32(0)));
  LLVM::StoreOp::create(b, loc, arith::ExtUIOp::create(b, loc, i32, st.skip),
                        smemPtr(c32(offsetOf(bufferOf(op.getWordAttr())))),
                        4);
  return success();
}

LogicalResult KernelLowering::emitLoadVote(LoadVoteOp op, RoleState &st) {
  if (!st.inLoop)
    return op.emitOpError() << "is lowered inside the kv_loop only";
  Value word = LLVM::LoadOp::create(
      b, loc, i32, smemPtr(c32(offsetOf(bufferOf(op.getWordAttr())))), 4);
  st.skip = cmp(arith::CmpIPredicate::ne, word, c32(0));
  return success();
}

std::pair<Value, Value> KernelLowering::readVotes(Value block, RoleState &st) {
  // Votes on blocks of one parity go to one barrier, whose phase k
  // completes with the votes on its k-th block: block n is phase
  // (n - 1) / 2 of barrier n % 2 (n / 2 when block 0 is voted on too,
  // vote-first-block). The load role reads every block's votes once and
  // in order, before it copies the V of the block after it, and the voters
  // vote on block n + 2 only after that copy: each barrier is within one
  // phase of the wait, and the decision slot of n is intact.
  Value parity = arith::AndIOp::create(b, loc, block, c32(1));
  Value phase = arith::AndIOp::create(
      b, loc,
      arith::ShRUIOp::create(
          b, loc, layout.votesFirstBlock ? block : sub(block, c32(1)), c32(1)),
      c32(1));
  NVVM::MBarrierTryWaitParityOp::create(b, loc, voteBarrier(parity), phase,
                                        c32(kWaitTicks));
  Value all, count = c32(0);
  for (int64_t v = 0; v < int64_t(layout.voterIndex.size()); ++v) {
    Value flag = LLVM::LoadOp::create(b, loc, i32, voteFlag(parity, v));
    all = v ? arith::AndIOp::create(b, loc, all, flag) : flag;
    if (st.countVotes)
      count = add(count, select(hasRows(layout.voterRowBegin[size_t(v)]), flag,
                                c32(0)));
  }
  return {cmp(arith::CmpIPredicate::ne, all, c32(0)), count};
}

void KernelLowering::emitVoteStatsFlush(RoleState &st) {
  // The load role (one thread) adds the voters' counts to stats[b][h] =
  // {visited, skipped}: every voter with rows visits each of the tile's
  // blocks once; a voter whose rows all lie past seqQ is not counted (as
  // emitStatsFlush leaves it out). A load role whose threads all run
  // (cp_async pipes): its first thread.
  OpBuilder::InsertionGuard guard(b);
  if (st.allThreadsLoad)
    openIf(cmp(arith::CmpIPredicate::eq, st.threadInRole, c32(0)));
  Value voters = c32(0);
  for (int64_t v = 0; v < int64_t(layout.voterIndex.size()); ++v)
    voters =
        add(voters, arith::ExtUIOp::create(
                        b, loc, i32, hasRows(layout.voterRowBegin[size_t(v)])));
  addStats(mul(st.numBlocks, voters), st.voteSkips);
}

void KernelLowering::addStats(Value visited, Value skipped) {
  auto addFor = [&](Value qHead) {
    Value base = mul64(
        add64(mul64(ext64(batch), c64(spec.numQHeads)), ext64(qHead)), c64(2));
    for (auto [k, v] : llvm::enumerate(ValueRange{visited, skipped})) {
      Value ptr = LLVM::GEPOp::create(b, loc, ptrGen, i64, param(kStats),
                                      ValueRange{add64(base, c64(k))});
      LLVM::AtomicRMWOp::create(b, loc, LLVM::AtomicBinOp::add, ptr, ext64(v),
                                LLVM::AtomicOrdering::monotonic);
    }
  };
  if (!qGroup)
    return addFor(head);
  // Decode: the tile's rows are q_group q heads (from `head` on) that saw
  // the same block decisions: each q head counts the tile's blocks. With
  // split KV every split adds its own blocks (the atomics sum the splits).
  auto loop = scf::ForOp::create(b, loc, c32(0), c32(qGroup), c32(1));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  addFor(add(head, loop.getInductionVar()));
}

LogicalResult KernelLowering::emitAwaitVote(AwaitVoteOp op, RoleState &st) {
  if (!st.inLoop || layout.voteBarrier < 0)
    return op.emitOpError() << "needs a kv_loop and published votes";
  // Block n >= 1 was voted on once per voter. Block 0 is kept, unless the
  // voters voted on it before their loop (vote-first-block: then it is read
  // like any block). Each region also yields how many voters skipped the
  // blocks whose votes it read.
  bool first = layout.votesFirstBlock;
  Value yes = arith::ConstantOp::create(b, loc, b.getBoolAttr(true));
  Value no = arith::ConstantOp::create(b, loc, b.getBoolAttr(false));
  Value voted =
      first ? yes : cmp(arith::CmpIPredicate::sgt, st.kvBlock, c32(0));
  Value counted;
  if (!st.speculateAfter && first) {
    auto [skipped, count] = readVotes(st.kvBlock, st);
    st.skip = skipped;
    counted = count;
  } else if (!st.speculateAfter) {
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
    // Block 0 starts a run of K - 1: block 1 follows K kept blocks. With
    // block 0 voted on, the loop starts as after a skipped block (known,
    // not kept: emitLoop), so block 0 waits for its votes.
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
    Value run =
        select(prev.getResult(0),
               arith::MinSIOp::create(b, loc, add(st.keptRun, c32(1)), c32(k)),
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

void KernelLowering::emitStatsFlush(RoleState &st) {
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
