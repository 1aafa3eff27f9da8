//===- SM100Lowering.h - sm_100a: tcgen05 and tensor memory ----*- C++ -*-===//
//
// The sm_100a target (FlashAttention-4 shape): S, P and O live in tensor
// memory. One thread of the MMA role issues tcgen05.mma and releases its
// pipes with tcgen05.commit; each thread of a softmax or correction
// warpgroup owns one row of a 128-row tile (tensor-memory lane
// 32 (warp % 4) + lane) and reads and writes it with tcgen05.ld/st 32x32b,
// so row statistics need no shuffles. Tensor memory is allocated once per
// CTA by warp 0 (emitKernelStart) and freed by it at the end
// (emitKernelEnd); the column map follows the ws.buffer order (aliases at
// their `at` column).
//
//===----------------------------------------------------------------------===//
#ifndef BLASST_LIB_CONVERSION_WSTONVVM_SM100_SM100LOWERING_H
#define BLASST_LIB_CONVERSION_WSTONVVM_SM100_SM100LOWERING_H

#include "../TargetLowering.h"
#include "Tcgen05.h"

namespace blasst::ws::lowering {
namespace t5 = sm100;

class SM100Lowering final : public TargetLowering {
public:
  using TargetLowering::TargetLowering;

  StringRef name() const override { return "sm_100a"; }
  LogicalResult checkRole(RoleOp role) override;
  LogicalResult checkPlacement(Operation *op, RoleState &st) override;
  void initRunningState(RoleState &st) override;

  LogicalResult emitMma(MmaOp op, RoleState &st) override;
  LogicalResult emitMmaWait(MmaWaitOp op, RoleState &st) override;
  LogicalResult emitLoadFrag(LoadFragOp op, RoleState &st) override;
  void commitAsyncGroup() override {}
  void waitAsyncGroups(int64_t) override {}

  LogicalResult emitReadScores(ReadScoresOp op, RoleState &st) override;
  LogicalResult emitRowMax(RowMaxOp op, RoleState &st) override;
  LogicalResult emitSoftmaxUpdate(SoftmaxUpdateOp op, RoleState &st) override;
  LogicalResult emitExp2Store(Exp2StoreOp op, RoleState &st) override;
  LogicalResult emitExp2InPlace(Exp2Op op, RoleState &st) override;
  LogicalResult emitPackP(PackPOp op, RoleState &st) override;
  LogicalResult emitCorrect(CorrectOp op, RoleState &st) override;
  LogicalResult emitStoreRowSums(StoreRowSumsOp op, RoleState &st) override;
  LogicalResult emitEpilogue(EpilogueOp op, RoleState &st) override;
  LogicalResult emitTmaStore(TmaStoreOp op, RoleState &st) override;
  Value voteSkipsOwnRows(RoleState &st) override;

  void emitKernelStart() override;
  void emitKernelEnd() override;
  bool regsPerWarpgroup() const override { return true; }
  bool releasesByCommit(RoleState &st) override {
    return st.role.getKind() == RoleKind::mma;
  }
  void emitCommitRelease(Value mbar) override;

private:
  /// Allocated tensor-memory columns (a power of two >= the kernel's).
  int64_t allocColumns();
  /// First tensor-memory column of `buf` (aliases at their `at` column; a
  /// 16-bit P packs two elements per 32-bit column).
  int64_t tmemColumn(BufferOp buf);
  /// The tensor-memory address of the calling warp's lanes at `column`.
  Value rowAddr(int64_t column);
  /// The thread's row in its 128-row tile (its tensor-memory lane).
  Value tileRow() { return remu(tid, c32(128)); }
  /// The first CTA row of the tile whose row statistics `buf` (an @l or @f
  /// buffer) carries: its producer softmax role's rows.
  int64_t rowBeginOfStats(FlatSymbolRefAttr buf);
  /// A softmax thread's row of S: `n` f32 columns from `col`, every
  /// tcgen05.ld in flight before one wait::ld.
  SmallVector<Value> readRow(int64_t col, int64_t n);
  /// -inf where a key of KV block `block` is invisible to the thread's row
  /// (sequence end, bottom-right causal).
  void maskRow(RoleState &st, MutableArrayRef<Value> s, Value block);
  /// P = exp2(s · scale − m) of the row in st.sRow, stored as 16-bit pairs
  /// from column `pCol`: the first tcgen05.st once `hold` quarters are
  /// computed, then one per quarter (no wait). Returns the row sum.
  Value exp2StoreRow(RoleState &st, int64_t pCol, int64_t hold);
  /// i32 columns from `col` in power-of-two tcgen05.st pieces, no wait.
  void storeColumns(int64_t col, ArrayRef<Value> vals);
  SmallVector<Value> loadF32(int64_t column, int64_t n);
  void storeF32(int64_t column, ArrayRef<Value> vals);
  Value packPair(Value x, Value y);
  /// The block the softmax steps work on (block 0 before the loop).
  Value blockOfScores(RoleState &st) {
    return st.inLoop ? st.kvBlock : c32(0);
  }

  /// The shared-memory slot of the MMA descriptor of `buf`'s stage 0 (the
  /// stages follow, 8 bytes each). Thread 0 writes every operand's
  /// descriptors at the start; the MMA thread reloads them and the tensor
  /// memory base per product: computed in place, LLVM keeps them live
  /// across the loop and from one tile's product to the next, and the
  /// 48-register MMA warp spills.
  int64_t descSlot(BufferOp buf);
  /// The smem descriptor layout of `buf` as an MMA operand: K-major, or
  /// V's MN-major (B of P V).
  t5::SmemOperandLayout operandLayout(BufferOp buf, bool mnMajor) {
    return mnMajor ? t5::mnMajorSwizzle128(buf.getShape()[0] * kSwizzleBytes)
                   : t5::kMajorSwizzle128();
  }
  /// The descriptor of `buf`'s stage `stage` (i32), read from its slot.
  Value loadDesc(BufferOp buf, Value stage);
  Value reloadTmemBase() {
    return LLVM::LoadOp::create(b, loc, i32, smemPtr(c32(layout.tmemSlot)),
                                4);
  }

  /// FA4's conditional rescale is on: the kernel has no BLASST vote (whose
  /// test needs the true running max).
  bool lazyRescale() {
    if (!lazy)
      lazy = !kernel.walk([](VoteOp) { return WalkResult::interrupt(); })
                  .wasInterrupted();
    return *lazy;
  }

  Value tmemBase; // i32, read once by every thread after the allocation.
  std::optional<bool> lazy;
};

} // namespace blasst::ws::lowering

#endif // BLASST_LIB_CONVERSION_WSTONVVM_SM100_SM100LOWERING_H
