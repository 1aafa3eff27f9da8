//===- KernelLowering.h - The target-neutral ws lowering driver -*- C++ -*-===//
//
// Lowers one ws.kernel to an NVVM kernel: the kernel ABI and launch
// attributes, mbarrier initialisation, role dispatch with setmaxnreg,
// persistent tile loops, KV loops and what they carry, pipe acquires and
// releases (stage and phase from the ProtocolAnalysis), TMA copies, turn
// barriers, BLASST skip regions, votes and statistics. Every step whose code
// depends on the target's MMA and fragment layouts goes to the
// TargetLowering.
//
//===----------------------------------------------------------------------===//
#ifndef BLASST_LIB_CONVERSION_WSTONVVM_KERNELLOWERING_H
#define BLASST_LIB_CONVERSION_WSTONVVM_KERNELLOWERING_H

#include "TargetLowering.h"

namespace blasst::ws::lowering {

class KernelLowering : public LoweringBase {
public:
  KernelLowering(KernelEnv &env, TargetLowering &target)
      : LoweringBase(env), target(target) {}

  /// Emits the kernel into `module`; the caller erases the ws.kernel.
  LogicalResult emit(ModuleOp module);

private:
  // --- Kernel, roles, loops (KernelLowering.cpp) -----------------------------
  LogicalResult emitKernel(ModuleOp module);
  void emitPrologue();
  /// All threads of both CTAs of a pair (kv_multicast).
  void clusterSync();
  Value numKVBlocks();
  /// Decode with split_kv: the tile and split of x = query tile + query
  /// tiles x split (grid x, or a persistent CTA's item): mBlock, split and
  /// the split's KV blocks (kvBegin, kvCount, kvEndKey).
  void setDecodeSplit(Value x);
  /// The KV blocks of split `split` of the tile's `numSplits`: kvBegin,
  /// kvCount, kvEndKey (setDecodeSplit's second half).
  void setSplitRange();
  /// balanced_splits: the CTA's tile and split from the per-sequence
  /// lengths (two passes over them); CTAs past the tiles' splits return.
  /// Ends the current block: what follows is emitted for the live CTAs.
  void emitBalancedSplit();
  /// KV cache options (KVCache.cpp): whether the kernel takes parameters
  /// 15-17; the per-sequence length and the block-table row, read once at
  /// the kernel's start; a K/V copy's page coordinates (row in the page,
  /// page) per page the block covers; the copies of a paged K/V block.
  bool hasKVCacheParams();
  /// `len`: the sequence's length where the caller already has it
  /// (balanced_splits' search), else it is loaded.
  void emitKVCacheStart(Value len = Value());
  void prefetchPageCoords(AcquireOp op, RoleState &st);
  SmallVector<std::pair<Value, Value>> pageCoordsOf(TmaLoadOp op,
                                                    Value block);
  /// The entries prefetchPageCoords read for `op`, or read them now.
  SmallVector<std::pair<Value, Value>> takePageCoords(TmaLoadOp op,
                                                      RoleState &st);
  void emitPagedKVCopies(TmaLoadOp op, ArrayRef<std::pair<Value, Value>> coords,
                         Value tmap, Value headCoord, Value stageBase,
                         Value mbar, int64_t rows, int64_t cols);
  LogicalResult emitRole(RoleOp role);
  Value launchThreshold();
  LogicalResult emitRolesExclusive();
  LogicalResult emitWarpgroupRegs();
  void startTile(RoleState &st);
  LogicalResult emitPersistentRole(RoleOp role, RoleState &st);
  LogicalResult emitItemLoop(RoleOp role, RoleState &st, Value items,
                             llvm::function_ref<void(Value)> setItem) {
    return emitItemLoop(role, st, Value(), items, Value(), setItem);
  }
  /// Items lb, lb + step, ... below ub (null lb / step: ctaid.x, nctaid.x).
  /// carryInit: values the loop carries from item to item (setItem reads
  /// them in itemCarry and sets itemCarryNext, one each).
  LogicalResult emitItemLoop(RoleOp role, RoleState &st, Value lb, Value ub,
                             Value step,
                             llvm::function_ref<void(Value)> setItem,
                             ValueRange carryInit = {});
  SmallVector<Value> itemCarry, itemCarryNext;
  /// per_seq_kv: ceil(seqLenOf(seq) / block_n) (KVCache.cpp).
  Value seqBlocksOf(Value seq);
  /// min(lengths[seq], seq_kv): every read of a length is clamped to the
  /// launch's bound (the caller's contract), so a length past it reads no
  /// row past the cache, lean's 32-bit block sums cannot wrap, and
  /// balanced_splits' grid bound holds.
  Value seqLenOf(Value seq);
  /// ceil(len / block_n).
  Value blocksOfLen(Value len);
  /// The sum of seqBlocksOf over sequences 0 .. batches - 1 (a loop of
  /// loads, one after another).
  Value sumSeqBlocks(Value batches);
  /// Lean decode: the tiles this CTA's share of the launch's KV blocks
  /// touches, each with its part (emitPersistentRole).
  LogicalResult emitLeanItems(RoleOp role, RoleState &st);
  LogicalResult emitSteps(Block &block, RoleState &st);
  LogicalResult emitStep(Operation *op, RoleState &st);
  /// A load role's acquire / copy / release with `kept_ahead` (the copy
  /// depth follows the decisions, ws.tma_load): the three are emitted at the
  /// acquire, twice, each under its condition: block n + kept_ahead when the
  /// kept_run decisions before block n + kept_ahead - ahead were all kept,
  /// block n + ahead unless those through block n were.
  LogicalResult emitKeptAhead(AcquireOp op, RoleState &st);
  /// The block offset a pipe step works on: its `ahead`, or while
  /// emitKeptAhead emits the kept instance, `kept_ahead`.
  template <typename OpT> std::optional<uint64_t> aheadOf(OpT op) {
    if (auto it = aheadNow.find(op.getOperation()); it != aheadNow.end())
      return it->second;
    return op.getAhead();
  }
  llvm::DenseMap<Operation *, uint64_t> aheadNow;
  LogicalResult emitLoop(KVLoopOp loop, RoleState &st);
  LogicalResult emitTurn(Operation *op, bool wait);

  // --- Pipes and copies (Pipes.cpp) ------------------------------------------
  LogicalResult emitAcquire(AcquireOp op, RoleState &st);
  LogicalResult emitRelease(ReleaseOp op, RoleState &st);
  LogicalResult emitTmaLoad(TmaLoadOp op, RoleState &st);
  /// A copy on a cp_async pipe: this thread's 16-byte pieces of the K/V
  /// tile of sequence rows [seqRow0, seqRow0 + rows), into the stage at
  /// stageBase in the TMA's swizzled layout.
  LogicalResult emitCpAsyncCopy(TmaLoadOp op, RoleState &st, Value stageBase,
                                Value seqRow0, int64_t rows, int64_t cols,
                                ArrayRef<std::pair<Value, Value>> pages);
  /// Query rows of the Q copies before `op` in its block (several Q tiles).
  int64_t qRowsBefore(TmaLoadOp op);

  // --- Skip regions (SkipRegions.cpp) ----------------------------------------
  LogicalResult emitUnlessSkipped(UnlessSkippedOp op, RoleState &st);
  /// The decision a skip region tests: the latest vote's, or with `ahead =
  /// k` the one on block n + k (null when the role has none).
  Value decisionOf(UnlessSkippedOp op, RoleState &st);
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

  // --- Votes and statistics (Votes.cpp) --------------------------------------
  LogicalResult emitVote(VoteOp op, RoleState &st);
  LogicalResult emitAwaitVote(AwaitVoteOp op, RoleState &st);
  LogicalResult emitStoreVote(StoreVoteOp op, RoleState &st);
  LogicalResult emitLoadVote(LoadVoteOp op, RoleState &st);
  /// Waits for the votes on block `block` (>= 1) and returns whether every
  /// voter skipped it, and (with countVotes) how many voters with rows
  /// skipped it.
  std::pair<Value, Value> readVotes(Value block, RoleState &st);
  void emitVoteStatsFlush(RoleState &st);
  void emitStatsFlush(RoleState &st);
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

  TargetLowering &target;
};

} // namespace blasst::ws::lowering

#endif // BLASST_LIB_CONVERSION_WSTONVVM_KERNELLOWERING_H
