//===- Tcgen05.cpp - sm_100a: tcgen05 and tensor memory -------------------===//
//
// Builders of the NVVM tcgen05 ops (Tcgen05.h). Every op is a typed NVVM op
// of MLIR 22; none needs inline PTX.
//
//===----------------------------------------------------------------------===//
#include "Tcgen05.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

#include <cassert>

using namespace mlir;

namespace blasst::ws::lowering::sm100 {

// The hand-derived values test/unit/Tcgen05Test.cpp checks field by field,
// here for the operands blasst uses (bf16 Q Kᵀ and P V at head_dim 128).
static_assert(encodeInstrDescF16(MmaInputType::BF16, 128, 128, Major::K,
                                 Major::K) == 0x08200490);
static_assert(encodeInstrDescF16(MmaInputType::BF16, 128, 128, Major::K,
                                 Major::MN) == 0x08210490);
static_assert(smemDescHighBits(kMajorSwizzle128()) == 0x4000404000010000);
static_assert(smemDescHighBits(mnMajorSwizzle128(128 * 128)) ==
              0x4000404004000000);

static NVVM::CTAGroupKindAttr cta1(OpBuilder &b) {
  return NVVM::CTAGroupKindAttr::get(b.getContext(), NVVM::CTAGroupKind::CTA_1);
}

static Value i32Const(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v);
}

static Value tmemPtr(OpBuilder &b, Location loc, Value addr) {
  return LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext(), 6), addr);
}

void emitTmemAlloc(OpBuilder &b, Location loc, Value slot, int64_t columns) {
  assert(isValidTmemAllocation(columns) && "a power of two in [32, 512]");
  NVVM::Tcgen05AllocOp::create(b, loc, slot, i32Const(b, loc, columns),
                               cta1(b));
  NVVM::Tcgen05RelinquishAllocPermitOp::create(b, loc, cta1(b));
}

Value emitTmemBase(OpBuilder &b, Location loc, Value slot) {
  return LLVM::LoadOp::create(b, loc, b.getI32Type(), slot);
}

void emitTmemDealloc(OpBuilder &b, Location loc, Value base, int64_t columns) {
  assert(isValidTmemAllocation(columns) && "a power of two in [32, 512]");
  NVVM::Tcgen05DeallocOp::create(b, loc, tmemPtr(b, loc, base),
                                 i32Const(b, loc, columns), cta1(b));
}

Value tmemAddr(OpBuilder &b, Location loc, Value base, Value lane,
               int64_t column) {
  assert(column >= 0 && column < kTmemColumns && "a column of the 512");
  Value addr = base;
  if (lane)
    addr = arith::AddIOp::create(
        b, loc, addr,
        arith::ShLIOp::create(b, loc, lane, i32Const(b, loc, 16)));
  if (column)
    addr = arith::AddIOp::create(b, loc, addr, i32Const(b, loc, column));
  return addr;
}

void emitFenceBeforeThreadSync(OpBuilder &b, Location loc) {
  NVVM::Tcgen05FenceOp::create(
      b, loc,
      NVVM::Tcgen05FenceKindAttr::get(
          b.getContext(), NVVM::Tcgen05FenceKind::BEFORE_THREAD_SYNC));
}

void emitFenceAfterThreadSync(OpBuilder &b, Location loc) {
  NVVM::Tcgen05FenceOp::create(
      b, loc,
      NVVM::Tcgen05FenceKindAttr::get(
          b.getContext(), NVVM::Tcgen05FenceKind::AFTER_THREAD_SYNC));
}

Value emitSmemDesc(OpBuilder &b, Location loc, Value smemAddr,
                   const SmemOperandLayout &layout) {
  // nvvm.tcgen05.mma_smem_desc takes the fields already encoded (bytes / 16)
  // and only masks them: a byte address would silently become another one.
  Value start = arith::ShRUIOp::create(b, loc, smemAddr, i32Const(b, loc, 4));
  auto i8 = [&](uint64_t v) {
    return arith::ConstantIntOp::create(b, loc, b.getI8Type(), int64_t(v));
  };
  return NVVM::Tcgen05MmaSmemDescOp::create(
      b, loc, b.getI64Type(), start,
      i32Const(b, loc, int64_t(encodeSmemField(layout.lboBytes))),
      i32Const(b, loc, int64_t(encodeSmemField(layout.sboBytes))),
      i8(layout.baseOffset & 7),
      arith::ConstantIntOp::create(b, loc, b.getI1Type(), 0),
      i8(uint64_t(layout.swizzle)));
}

Value advanceSmemDesc(OpBuilder &b, Location loc, Value desc,
                      int64_t byteOffset) {
  assert(byteOffset >= 0 && byteOffset % 16 == 0 && "16-byte aligned");
  if (!byteOffset)
    return desc;
  return arith::AddIOp::create(
      b, loc, desc,
      arith::ConstantIntOp::create(b, loc, b.getI64Type(), byteOffset >> 4));
}

static void emitMma(OpBuilder &b, Location loc, Value d, Value a, Value bDesc,
                    uint32_t instrDesc, Value accumulate) {
  MLIRContext *ctx = b.getContext();
  NVVM::Tcgen05MMAOp::create(
      b, loc, NVVM::Tcgen05MMAKindAttr::get(ctx, NVVM::Tcgen05MMAKind::F16),
      cta1(b),
      NVVM::Tcgen05MMACollectorOpAttr::get(
          ctx, NVVM::Tcgen05MMACollectorOp::DISCARD),
      /*aShift=*/UnitAttr(), tmemPtr(b, loc, d), a, bDesc,
      i32Const(b, loc, int64_t(instrDesc)), accumulate,
      /*scaleInputD=*/Value(), /*disableOutputLane=*/Value());
}

void emitMmaSS(OpBuilder &b, Location loc, Value d, Value aDesc, Value bDesc,
               uint32_t instrDesc, Value accumulate) {
  emitMma(b, loc, d, aDesc, bDesc, instrDesc, accumulate);
}

void emitMmaTS(OpBuilder &b, Location loc, Value d, Value a, Value bDesc,
               uint32_t instrDesc, Value accumulate) {
  emitMma(b, loc, d, tmemPtr(b, loc, a), bDesc, instrDesc, accumulate);
}

void emitCommit(OpBuilder &b, Location loc, Value mbar) {
  NVVM::Tcgen05CommitOp::create(b, loc, mbar, /*multicastMask=*/Value(),
                                cta1(b));
}

static NVVM::Tcgen05LdStShapeAttr shape32x32b(OpBuilder &b) {
  return NVVM::Tcgen05LdStShapeAttr::get(b.getContext(),
                                         NVVM::Tcgen05LdStShape::SHAPE_32X32B);
}

static void emitWait(OpBuilder &b, Location loc, NVVM::Tcgen05WaitKind kind) {
  NVVM::Tcgen05WaitOp::create(
      b, loc, NVVM::Tcgen05WaitKindAttr::get(b.getContext(), kind));
}

Value emitLoadColumns(OpBuilder &b, Location loc, Value addr, int64_t columns,
                      bool wait) {
  assert(isValidLdStColumns(columns) && "1, 2, 4, ..., 128 columns");
  // One column is a plain i32 result; the op takes vectors from 2 up.
  Type type = columns == 1 ? Type(b.getI32Type())
                           : Type(VectorType::get({columns}, b.getI32Type()));
  Value v = NVVM::Tcgen05LdOp::create(b, loc, type, /*pack=*/UnitAttr(),
                                      shape32x32b(b), tmemPtr(b, loc, addr),
                                      /*offset=*/Value());
  if (wait)
    emitWait(b, loc, NVVM::Tcgen05WaitKind::LOAD);
  return v;
}

void emitStoreColumns(OpBuilder &b, Location loc, Value addr, Value values,
                      bool wait) {
  NVVM::Tcgen05StOp::create(b, loc, /*unpack=*/UnitAttr(), shape32x32b(b),
                            tmemPtr(b, loc, addr), values, /*offset=*/Value());
  if (wait)
    emitWait(b, loc, NVVM::Tcgen05WaitKind::STORE);
}

} // namespace blasst::ws::lowering::sm100
