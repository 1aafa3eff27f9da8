//===- TargetLowering.h - What a GPU target lowers itself ------*- C++ -*-===//
//
// The interface between the target-neutral driver (KernelLowering: kernel
// ABI, roles, KV loops, pipes, TMA copies, turns, skip regions, votes and
// statistics) and one target's code generation: which roles and steps it
// runs where, matrix products (issue and wait), the fragment layouts of its
// tiles, reading scores and the online softmax, storing P, correcting O and
// the epilogue. sm_90a (wgmma, register accumulators) implements it in
// SM90/; sm_100a (tcgen05, tensor memory) is the next implementation.
//
//===----------------------------------------------------------------------===//
#ifndef BLASST_LIB_CONVERSION_WSTONVVM_TARGETLOWERING_H
#define BLASST_LIB_CONVERSION_WSTONVVM_TARGETLOWERING_H

#include "LoweringBase.h"

#include <memory>

namespace blasst::ws::lowering {

class TargetLowering : public LoweringBase {
public:
  using LoweringBase::LoweringBase;
  virtual ~TargetLowering();

  /// The target's name in diagnostics ("sm_90a").
  virtual StringRef name() const = 0;

  // --- Where things run -----------------------------------------------------
  /// Fails with a diagnostic when the target does not lower `role`'s kind.
  virtual LogicalResult checkRole(RoleOp role) = 0;
  /// Fails with a diagnostic when `op` may not run in `st`'s role.
  virtual LogicalResult checkPlacement(Operation *op, RoleState &st) = 0;

  // --- Running state ---------------------------------------------------------
  /// A tile's initial running state of a compute role: O = 0, m = -inf,
  /// l = 0.
  virtual void initRunningState(RoleState &st) = 0;

  // --- Matrix products -------------------------------------------------------
  virtual LogicalResult emitMma(MmaOp op, RoleState &st) = 0;
  virtual LogicalResult emitMmaWait(MmaWaitOp op, RoleState &st) = 0;
  virtual LogicalResult emitLoadFrag(LoadFragOp op, RoleState &st) = 0;
  /// Closes the asynchronous MMA group issued since the last commit.
  virtual void commitAsyncGroup() = 0;
  /// Waits until at most `pending` asynchronous MMA groups are in flight.
  virtual void waitAsyncGroups(int64_t pending) = 0;

  // --- Scores and the online softmax -----------------------------------------
  /// Reads the block's scores, masks them (sequence end, causal diagonal)
  /// and takes each row's max.
  virtual LogicalResult emitRowMax(RowMaxOp op, RoleState &st) = 0;
  virtual LogicalResult emitSoftmaxUpdate(SoftmaxUpdateOp op,
                                          RoleState &st) = 0;
  virtual LogicalResult emitExp2Store(Exp2StoreOp op, RoleState &st) = 0;
  virtual LogicalResult emitExp2InPlace(Exp2Op op, RoleState &st) = 0;
  virtual LogicalResult emitPackP(PackPOp op, RoleState &st) = 0;
  virtual LogicalResult emitCorrect(CorrectOp op, RoleState &st) = 0;
  virtual LogicalResult emitEpilogue(EpilogueOp op, RoleState &st) = 0;

  // --- BLASST ----------------------------------------------------------------
  /// i1: every row this thread holds has m_block - m < log2(lambda) or lies
  /// past the query sequence (it abstains). The driver makes it unanimous.
  virtual Value voteSkipsOwnRows(RoleState &st) = 0;

  // --- Hooks a target may leave alone (sm_100a uses them) ---------------------
  /// After the mbarriers are initialised, in every thread (tensor memory).
  virtual void emitKernelStart() {}
  /// Before the kernel returns, in every thread.
  virtual void emitKernelEnd() {}
  /// ws.kernel merge_kernel: the second kernel that merges the splits, after
  /// the kernel's function (env.func) is complete.
  virtual LogicalResult emitMergeKernel(ModuleOp module) {
    return kernel.emitOpError() << "merge_kernel is not lowered on " << name();
  }
  /// Roles share warpgroups: their setmaxnreg must agree, and idle warps of
  /// such a warpgroup set it too (KernelLowering::emitWarpgroupRegs).
  virtual bool regsPerWarpgroup() const { return false; }
  /// Whether an MMA role's release of a pipe stage goes through the target.
  virtual bool releasesByCommit(RoleState &st) { return false; }
  /// Arrives on `mbar` once the MMAs issued so far complete (tcgen05.commit).
  virtual void emitCommitRelease(Value mbar) {}
  virtual LogicalResult emitReadScores(ReadScoresOp op, RoleState &st) {
    return op.emitOpError() << "is not lowered on " << name();
  }
  virtual LogicalResult emitStoreRowSums(StoreRowSumsOp op, RoleState &st) {
    return op.emitOpError() << "is not lowered on " << name();
  }
  virtual LogicalResult emitTmaStore(TmaStoreOp op, RoleState &st) {
    return op.emitOpError() << "is not lowered on " << name();
  }
};

/// The sm_90a implementation (SM90/SM90Lowering.cpp).
std::unique_ptr<TargetLowering> createSM90Lowering(KernelEnv &env);
/// The sm_100a implementation (SM100/SM100Lowering.cpp).
std::unique_ptr<TargetLowering> createSM100Lowering(KernelEnv &env);

} // namespace blasst::ws::lowering

#endif // BLASST_LIB_CONVERSION_WSTONVVM_TARGETLOWERING_H
