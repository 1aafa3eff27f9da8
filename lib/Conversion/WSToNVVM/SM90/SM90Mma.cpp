//===- SM90Mma.cpp - sm_90a: wgmma ----------------------------------------===//
//
// Q Kᵀ and P V as wgmma (A from shared memory or registers), Q fragments
// with ldmatrix, and the waits that retire wgmma groups.
//
//===----------------------------------------------------------------------===//
#include "SM90Lowering.h"

#include <cmath>

using namespace mlir;
using namespace blasst;
using namespace blasst::ws;
using namespace blasst::ws::lowering;

Value SM90Lowering::descriptor(Value addr, int64_t lbo, int64_t sbo) {
  Value a = arith::ExtUIOp::create(b, loc, i64, addr);
  a = arith::AndIOp::create(b, loc, arith::ShRUIOp::create(b, loc, a, c64(4)),
                            c64(0x3FFF));
  int64_t hi = ((lbo >> 4) & 0x3FFF) << 16 | ((sbo >> 4) & 0x3FFF) << 32 |
               int64_t(1) << 62;
  return arith::OrIOp::create(b, loc, a, c64(hi));
}

void SM90Lowering::commitAsyncGroup() {
  NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
}

void SM90Lowering::waitAsyncGroups(int64_t pending) {
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, pending);
}

LogicalResult SM90Lowering::emitMma(MmaOp op, RoleState &st) {
  BufferOp a = bufferOf(op.getAAttr()), bb = bufferOf(op.getBAttr()),
           d = bufferOf(op.getDAttr());
  bool aInRegs = a.getSpace() == MemorySpace::regs;
  // A deferred P V (`ahead = -1`) reads P of block n - 1.
  bool deferred = op.getKind() == MmaKind::pv && op.getAhead() &&
                  int64_t(*op.getAhead()) == -1;
  if (deferred && !(st.deferPV && st.inSkipRegion))
    return op.emitOpError()
           << "with ahead = -1 is lowered in a skip region of a kv_loop that "
              "carries P of block n - 1 (ws.unless_skipped {ahead = -1}, "
              "blasst-v-on-demand's defer-pv)";
  ArrayRef<Value> aRegs = op.getKind() == MmaKind::qk
                              ? ArrayRef<Value>(st.qRegs)
                          : deferred ? st.pHeld
                                     : st.pRegs;
  if (aInRegs && aRegs.empty())
    return op.emitOpError()
           << "operand a in registers needs "
           << (op.getKind() == MmaKind::qk
                   ? "Q from a preceding ws.load_frag in the same role"
                   : "P from a preceding ws.exp2_store_p or ws.pack_p in the "
                     "same block");
  if (aInRegs && int64_t(aRegs.size()) * 4 != a.getShape()[1])
    return op.emitOpError()
           << "operand a in registers holds " << aRegs.size() * 4
           << " columns but " << op.getAAttr() << " has " << a.getShape()[1];
  if (op.getKind() == MmaKind::pv &&
      failed(checkFragment(op, op.getDAttr(), st.o, "O accumulator")))
    return failure();
  if (!st.inLoop &&
      (op.getKind() != MmaKind::qk || st.afterLoop || !st.numBlocks))
    return op.emitOpError()
           << "outside the kv_loop only a Q Kᵀ before the loop is lowered";
  int64_t m = d.getShape()[0], n = d.getShape()[1];
  if (m != 64)
    return op.emitOpError() << "lowering needs 64-row accumulators, got " << m;
  // Stage of b: the pipe guarding it, at this step's block.
  PipeOp bPipe;
  for (auto pipe : kernel.getBody().getOps<PipeOp>())
    if (llvm::is_contained(pipe.getBuffers(), op.getBAttr()))
      bPipe = pipe;
  if (!bPipe)
    return op.emitOpError()
           << "operand b " << op.getBAttr() << " is not guarded by a pipe";

  // A step on a block that may not exist runs under a guard; the
  // accumulator keeps its value otherwise.
  bool qk = op.getKind() == MmaKind::qk;
  Type acc = accType(n);
  // A Q Kᵀ that does not run leaves scores nobody reads (the loop ends):
  // undef, so no instruction defines accumulator registers in the wgmma
  // pipeline stage (ptxas would serialise the wgmmas, C7515).
  // A persistent prefill CTA's Q Kᵀ before the loop is the exception: in
  // PTX an undef is no definition, so on that path the registers would keep
  // the previous tile's scores, live around the whole tile loop (64
  // registers: ptxas spills and serialises every wgmma, C7512). Zeros
  // define them on the path that skips the product, where no wgmma is in
  // flight. (Decode items: unchanged, their kernels do not spill.)
  bool tileLoop = kernel.getPersistent() && spec.phase == Phase::Prefill;
  Value previous = !qk ? st.o
                   : (tileLoop && !st.inLoop)
                       ? Value(LLVM::ZeroOp::create(b, loc, acc))
                       : Value(LLVM::UndefOp::create(b, loc, acc));
  // Q Kᵀ of block n+1 in the loop is not guarded: past the end it reads a
  // stage no TMA writes any more (stale or never-loaded data) and its
  // scores are fully masked or never read. A guard would make the wgmma
  // group count path-dependent and ptxas serialise every wgmma (C7515).
  // A deferred P V needs no guard either: it runs under the decision on
  // block n - 1, which is "skipped" before block 0, and block n - 1 exists
  // in every later iteration.
  bool unguarded =
      (qk && st.inLoop && op.getAhead() && *op.getAhead() == 1) || deferred;
  Value exists = unguarded ? Value() : blockExists(st, bPipe, op.getAhead());
  scf::IfOp guardIf;
  OpBuilder::InsertionGuard guard(b);
  if (exists) {
    guardIf = scf::IfOp::create(b, loc, TypeRange{acc}, exists,
                                /*withElseRegion=*/true);
    b.setInsertionPointToStart(guardIf.elseBlock());
    scf::YieldOp::create(b, loc, previous);
    b.setInsertionPointToStart(guardIf.thenBlock());
  }
  Value bStage = stagePhase(st, bPipe, op.getAhead()).first;
  Value bBase = add(c32(offsetOf(bb)), mul(bStage, c32(bb.getStageBytes())));
  int64_t aRows = a.getShape()[0];
  int64_t aBase = offsetOf(a) + st.rowBegin * kSwizzleBytes;
  int64_t kTotal = a.getShape()[1];
  int64_t bRows = bb.getShape()[0];

  auto wgmmaType = spec.dtype == DType::BF16 ? NVVM::WGMMATypes::bf16
                                             : NVVM::WGMMATypes::f16;
  // The first Q Kᵀ step has scale-d = 0: its input is ignored (undef).
  Value accIn = qk ? Value(LLVM::UndefOp::create(b, loc, acc)) : st.o;

  NVVM::WgmmaFenceAlignedOp::create(b, loc);
  // The B descriptors of the k-steps differ only in the start address
  // (bits 0-13, in 16-byte units): one descriptor for the stage, plus a
  // constant per step. The field cannot carry: every address in shared
  // memory is below 2^18 bytes.
  // K (Q Kᵀ) is K-major; V (P V) is MN-major, its LBO steps to the next
  // 64-column panel.
  Value descBStage =
      descriptor(smemAddr(bBase), qk ? 16 : bRows * kSwizzleBytes, kTileAlign);
  auto descBAt = [&](int64_t off) {
    return off ? arith::AddIOp::create(b, loc, descBStage, c64(off >> 4))
                     .getResult()
               : descBStage;
  };
  for (int64_t kk = 0; kk < kTotal / 16; ++kk) {
    // B = K tile [n keys, D] for Q Kᵀ: K-major like A (64-column panels,
    // 32 bytes per k-step). B = V tile [keys, Dv] for P V: MN-major (Dv
    // contiguous), 16 keys per k-step; LBO steps to the next 64-column
    // panel, SBO to the next 8 keys.
    int64_t bOff = qk ? (kk / 4) * bRows * kSwizzleBytes + (kk % 4) * 32
                      : kk * 16 * kSwizzleBytes;
    if (aInRegs) {
      accIn = wgmmaRegisterA(accIn, aRegs.slice(4 * kk, 4), descBAt(bOff), n,
                             /*zeroAcc=*/qk && kk == 0, /*transB=*/!qk);
      continue;
    }
    // A: K-major, 128B swizzle; 64-column panels of aRows rows.
    int64_t aOff = aBase + (kk / 4) * aRows * kSwizzleBytes + (kk % 4) * 32;
    Value descA = descriptor(smemAddr(c32(aOff)), 16, kTileAlign);
    Value descB = descBAt(bOff);
    NVVM::MMALayout layoutB = qk ? NVVM::MMALayout::col : NVVM::MMALayout::row;
    bool zero = qk && kk == 0;
    accIn = NVVM::WgmmaMmaAsyncOp::create(
        b, loc, acc, accIn, descA, descB,
        NVVM::MMAShapeAttr::get(ctx, 64, n, 16),
        NVVM::WGMMATypesAttr::get(ctx, wgmmaType),
        NVVM::WGMMATypesAttr::get(ctx, wgmmaType),
        NVVM::WGMMATypesAttr::get(ctx, NVVM::WGMMATypes::f32),
        NVVM::WGMMAScaleOutAttr::get(ctx, zero ? NVVM::WGMMAScaleOut::zero
                                               : NVVM::WGMMAScaleOut::one),
        NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
        NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one),
        NVVM::MMALayoutAttr::get(ctx, NVVM::MMALayout::row),
        NVVM::MMALayoutAttr::get(ctx, layoutB), NVVM::MMAIntOverflowAttr());
  }
  if (op.getAsync() && st.inSkipRegion)
    st.commitInRegion = true;
  else
    NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
  if (!op.getAsync())
    NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
  Value result = accIn;
  if (guardIf) {
    scf::YieldOp::create(b, loc, result);
    result = guardIf.getResult(0);
  }
  Value *target = !qk                                      ? &st.o
                  : (op.getAhead() && *op.getAhead() == 1) ? &st.sNext
                                                           : &st.s;
  *target = result;
  if (op.getAsync())
    st.inflight.push_back(target);
  return success();
}

LogicalResult SM90Lowering::emitLoadFrag(LoadFragOp op, RoleState &st) {
  if (st.inLoop || st.afterLoop)
    return op.emitOpError() << "is lowered before the kv_loop only";
  BufferOp src = bufferOf(op.getSrcAttr()), dst = bufferOf(op.getDstAttr());
  int64_t rows = src.getShape()[0], cols = dst.getShape()[1];
  if (st.rowBegin + 64 > rows)
    return op.emitOpError()
           << "the role's rows [" << st.rowBegin << ", " << st.rowBegin + 64
           << ") are not in " << op.getSrcAttr() << " (" << rows << " rows)";
  // ldmatrix.x4 per 16-column k-step: lane l gives the address of row l % 8
  // of matrix l / 8; matrices 0-3 are (rows 0-7, k 0-7), (rows 8-15, k 0-7),
  // (rows 0-7, k 8-15), (rows 8-15, k 8-15) of the warp's 16 rows, which is
  // wgmma's register-A fragment (the mma.m16n8k16 A layout per warp). The
  // tile is 64-column panels of 128-byte rows, 128B-swizzled: the 16-byte
  // chunk c of row r sits at chunk c ^ (r % 8).
  Value t = st.threadInRole;
  Value w = divu(t, c32(32)), ln = remu(t, c32(32));
  Value mat = divu(ln, c32(8));
  Value row = add(add(c32(st.rowBegin), mul(w, c32(16))),
                  add(remu(ln, c32(8)), mul(remu(mat, c32(2)), c32(8))));
  Value rowBase = add(c32(offsetOf(src)), mul(row, c32(kSwizzleBytes)));
  Value swz = remu(row, c32(8));
  Value kHalf = divu(mat, c32(2));
  auto i32x4 = LLVM::LLVMStructType::getLiteral(ctx, {i32, i32, i32, i32});
  st.qRegs.clear();
  for (int64_t kk = 0; kk < cols / 16; ++kk) {
    Value chunk = add(c32(2 * (kk % 4)), kHalf);
    Value off = add(add(rowBase, c32((kk / 4) * rows * kSwizzleBytes)),
                    mul(arith::XOrIOp::create(b, loc, chunk, swz), c32(16)));
    Value frag = NVVM::LdMatrixOp::create(
        b, loc, i32x4, smemPtr(off), b.getI32IntegerAttr(4),
        NVVM::MMALayoutAttr::get(ctx, NVVM::MMALayout::row),
        NVVM::LdStMatrixShapeAttr::get(ctx, 8, 8),
        NVVM::LdStMatrixEltTypeAttr::get(ctx, NVVM::LdStMatrixEltType::B16));
    for (int64_t i = 0; i < 4; ++i)
      st.qRegs.push_back(extract(frag, i));
  }
  return success();
}

/// Registers written by an async wgmma are not ready until its wait; route
/// them through an empty asm after the wait so nothing is scheduled above it
/// (a compiler fence: it emits no instruction).
Value SM90Lowering::fenceRegisters(Value acc) {
  auto type = cast<LLVM::LLVMStructType>(acc.getType());
  unsigned n = type.getBody().size();
  std::string constraints;
  for (unsigned i = 0; i < n; ++i)
    constraints += (i ? ",=f" : "=f");
  for (unsigned i = 0; i < n; ++i)
    constraints += "," + std::to_string(i);
  SmallVector<Value> operands;
  for (unsigned i = 0; i < n; ++i)
    operands.push_back(extract(acc, i));
  auto asmOp = LLVM::InlineAsmOp::create(
      b, loc, type, operands, /*asm_string=*/"", constraints,
      /*has_side_effects=*/true, /*is_align_stack=*/false,
      LLVM::TailCallKind::None, LLVM::AsmDialectAttr(), ArrayAttr());
  return asmOp.getResult(0);
}

LogicalResult SM90Lowering::emitMmaWait(MmaWaitOp op, RoleState &st) {
  int64_t pending = op.getPending();
  NVVM::WgmmaWaitGroupSyncOp::create(b, loc, pending);
  // The groups older than the last `pending` are complete: fence the tiles
  // they write so nothing that reads them is scheduled above the wait.
  int64_t done = std::max<int64_t>(int64_t(st.inflight.size()) - pending, 0);
  for (int64_t i = 0; i < done; ++i)
    if (Value *tile = st.inflight[i]; *tile)
      *tile = fenceRegisters(*tile);
  st.inflight.erase(st.inflight.begin(), st.inflight.begin() + done);
  return success();
}

/// O += P V with P from registers: wgmma's register-A form, which NVVM has
/// no op for; one inline PTX instruction (its predicate scoped in braces).
Value SM90Lowering::wgmmaRegisterA(Value acc, ArrayRef<Value> a, Value descB,
                                   int64_t n, bool zeroAcc, bool transB) {
  auto type = cast<LLVM::LLVMStructType>(acc.getType());
  unsigned nd = type.getBody().size();
  const char *ty = spec.dtype == DType::BF16 ? "bf16" : "f16";
  std::string str = std::string("{\n.reg .pred p;\nsetp.ne.b32 p, ") +
                    (zeroAcc ? "0" : "1") +
                    ", 0;\n"
                    "wgmma.mma_async.sync.aligned.m64n" +
                    std::to_string(n) + "k16.f32." + ty + "." + ty + " {";
  for (unsigned i = 0; i < nd; ++i)
    str += (i ? ", $" : "$") + std::to_string(i);
  // Operands: outputs $0.., the tied accumulator inputs, then A and desc.
  unsigned a0 = 2 * nd;
  str += "}, {$" + std::to_string(a0) + ", $" + std::to_string(a0 + 1) + ", $" +
         std::to_string(a0 + 2) + ", $" + std::to_string(a0 + 3) + "}, $" +
         std::to_string(a0 + 4) + ", p, 1, 1, " + (transB ? "1" : "0") + ";\n}";
  std::string constraints;
  for (unsigned i = 0; i < nd; ++i)
    constraints += (i ? ",=f" : "=f");
  for (unsigned i = 0; i < nd; ++i)
    constraints += "," + std::to_string(i);
  constraints += ",r,r,r,r,l";
  SmallVector<Value> operands;
  for (unsigned i = 0; i < nd; ++i)
    operands.push_back(extract(acc, i));
  operands.append(a.begin(), a.end());
  operands.push_back(descB);
  return LLVM::InlineAsmOp::create(b, loc, type, operands, str, constraints,
                                   /*has_side_effects=*/true,
                                   /*is_align_stack=*/false,
                                   LLVM::TailCallKind::None,
                                   LLVM::AsmDialectAttr(), ArrayAttr())
      .getResult(0);
}
