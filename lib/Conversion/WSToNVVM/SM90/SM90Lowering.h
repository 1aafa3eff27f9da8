//===- SM90Lowering.h - sm_90a: wgmma and register fragments ---*- C++ -*-===//
//
// The sm_90a target: compute warpgroups hold S, P and O as wgmma
// accumulator fragments in registers and run the whole softmax; one elected
// thread of a load role issues the TMA copies.
//
// Register tiles use the wgmma accumulator fragment: thread t of a
// warpgroup (warp w = t / 32, lane l) holds, for an m64nN tile, rows
// 16w + l/4 + 8i (i = 0, 1) and columns 8j + 2(l%4) + k (k = 0, 1) at
// fragment index 4j + 2i + k. Row statistics (max, sum) are reduced across
// the four lanes of a quad with shfl.bfly 1 and 2.
//
//===----------------------------------------------------------------------===//
#ifndef BLASST_LIB_CONVERSION_WSTONVVM_SM90_SM90LOWERING_H
#define BLASST_LIB_CONVERSION_WSTONVVM_SM90_SM90LOWERING_H

#include "../TargetLowering.h"

namespace blasst::ws::lowering {

class SM90Lowering final : public TargetLowering {
public:
  using TargetLowering::TargetLowering;

  StringRef name() const override { return "sm_90a"; }
  LogicalResult checkRole(RoleOp role) override;
  LogicalResult checkPlacement(Operation *op, RoleState &st) override;
  void initRunningState(RoleState &st) override;

  // SM90Mma.cpp
  LogicalResult emitMma(MmaOp op, RoleState &st) override;
  LogicalResult emitMmaWait(MmaWaitOp op, RoleState &st) override;
  LogicalResult emitLoadFrag(LoadFragOp op, RoleState &st) override;
  void commitAsyncGroup() override;
  void waitAsyncGroups(int64_t pending) override;

  // SM90Softmax.cpp
  LogicalResult emitRowMax(RowMaxOp op, RoleState &st) override;
  LogicalResult emitSoftmaxUpdate(SoftmaxUpdateOp op, RoleState &st) override;
  LogicalResult emitExp2Store(Exp2StoreOp op, RoleState &st) override;
  LogicalResult emitExp2InPlace(Exp2Op op, RoleState &st) override;
  LogicalResult emitPackP(PackPOp op, RoleState &st) override;
  LogicalResult emitCorrect(CorrectOp op, RoleState &st) override;
  Value voteSkipsOwnRows(RoleState &st) override;

  // SM90Lowering.cpp
  LogicalResult emitEpilogue(EpilogueOp op, RoleState &st) override;
  // SM90Decode.cpp: the epilogue of a q_group (decode) kernel, with split
  // KV the partials and the last split's merge.
  LogicalResult emitDecodeEpilogue(EpilogueOp op, RoleState &st);
  /// Stores column pairs (element column, f32 pair) of tile row `row` as
  /// O's element type, and the LSE (log2 domain) when given, if the row's
  /// token is below seqQ.
  void storeDecodeRow(Value row, ArrayRef<std::pair<Value, Value>> cols,
                      Value lseLog2);
  /// merge_kernel: `<kernel>_merge`, the splits' merge over many CTAs.
  LogicalResult emitMergeKernel(ModuleOp module) override;

  /// The merge's unit: four columns of a row. A running (max, sum, columns)
  /// over some of a tile's splits, relative to max (-inf: none yet).
  static constexpr int64_t kMergeCols = 4;
  struct MergedQuad {
    Value m, sum, acc;
  };
  /// Folds splits first, first + stride, ... below `count` of the four
  /// columns at (row, col) of the tile whose first workspace slot is
  /// `tileSlot`, `chunk` splits' loads at a time (a chunk's loads are
  /// independent: one memory latency per chunk). zeroOffset (lean): split
  /// 0's slot is tileSlot + zeroOffset, split s > 0's tileSlot + s.
  MergedQuad foldSplits(Value ws, Value lseBase, Value tileSlot, Value row,
                        Value col, Value first, int64_t stride, Value count,
                        int64_t chunk, int64_t n, Value zeroOffset = Value());
  /// O = acc / sum of the four columns (0 when no split saw a key) and, with
  /// the epilogue's LSE, m + log2 sum at the row's first column.
  void storeMergedQuad(EpilogueOp op, Value row, Value col, MergedQuad r);
  Value splat(Value x);
  /// m, or 0 where m is -inf (the exponent base of weights that are 0).
  Value nonInfinite(Value m);

private:
  /// The accumulator fragment of an m64nN tile: n / 2 f32 per thread.
  Type accType(int64_t n) {
    return LLVM::LLVMStructType::getLiteral(ctx, SmallVector<Type>(n / 2, f32));
  }
  /// A wgmma shared memory descriptor: 128B swizzle, byte offsets lbo/sbo.
  Value descriptor(Value addr, int64_t lbo, int64_t sbo);
  /// The register tile `buf` names must be the fragment `frag` holds
  /// (64 rows; n columns are n / 2 values per thread).
  LogicalResult checkFragment(Operation *op, FlatSymbolRefAttr buf, Value frag,
                              StringRef what);
  Value quadReduce(Value v, bool isMax);
  /// The quad-reduced, scaled block max of fragment row i (once).
  void ensureBlockMax(RoleState &st, int i);
  LogicalResult checkExp2Inputs(Operation *op, FlatSymbolRefAttr scores,
                                RoleState &st);
  LogicalResult emitExp2ToRegisters(Exp2StoreOp op, RoleState &st, int64_t n);
  Value expOf(RoleState &st, int i, int64_t idx);
  Value exponentiate(RoleState &st, int64_t n);
  void packP(RoleState &st, Value s, int64_t n);
  Value packPair(Value x, Value y);
  Value expPair(RoleState &st, int i, int64_t j, Value &sum);
  /// wgmma with A from registers (four .b32 per k-step); `zeroAcc`: the
  /// accumulator input is ignored (scale-d 0); `transB`: B is MN-major.
  Value wgmmaRegisterA(Value acc, ArrayRef<Value> a, Value descB, int64_t n,
                       bool zeroAcc, bool transB);
  /// Routes registers an async wgmma wrote through an empty asm after its
  /// wait.
  Value fenceRegisters(Value acc);
};

} // namespace blasst::ws::lowering

#endif // BLASST_LIB_CONVERSION_WSTONVVM_SM90_SM90LOWERING_H
