//===- Tcgen05Test.cpp - sm_100a descriptors and tcgen05 builders ---------===//
//
// The instruction and shared memory descriptors of tcgen05.mma, field by
// field, against values derived by hand from the PTX ISA tables
// (tcgen05 "Instruction descriptor", Table 42, and "Shared memory
// descriptor", Table 40); then the builders of
// lib/Conversion/WSToNVVM/SM100/Tcgen05.h through blasst's back end to PTX
// for sm_100a, where nvvm.tcgen05.mma_smem_desc must give the descriptor the
// C++ encoder gives.
//
//===----------------------------------------------------------------------===//
#include "Conversion/WSToNVVM/SM100/Tcgen05.h"

#include "blasst/Compiler/Frontend.h"
#include "blasst/Target/Target.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/ADT/StringRef.h"

#include <gtest/gtest.h>

using namespace blasst::ws::lowering::sm100;

namespace {

//===----------------------------------------------------------------------===//
// Instruction descriptor (kind::f16). Reference: all fields 0 except those
// named; each test changes one field and checks exactly its bits.
//===----------------------------------------------------------------------===//

// f16 x f16 -> f16, M 64 (4 << 24), N 8 (1 << 17), K-major: the smallest
// descriptor; every other test XORs against a base to isolate its field.
constexpr uint32_t kBaseF16 =
    encodeInstrDescF16(MmaInputType::F16, 64, 8, Major::K, Major::K,
                       /*f32Accumulator=*/false);

TEST(Tcgen05InstrDesc, SmallestShapeHasOnlyMAndN) {
  // M >> 4 = 4 at bits 24-28, N >> 3 = 1 at bits 17-22.
  EXPECT_EQ(kBaseF16, 0x04020000u);
}

TEST(Tcgen05InstrDesc, DTypeBits4To5) {
  // F32 = 1 in the 2-bit D type field.
  uint32_t f32 = encodeInstrDescF16(MmaInputType::F16, 64, 8, Major::K,
                                    Major::K, /*f32Accumulator=*/true);
  EXPECT_EQ(f32 ^ kBaseF16, 0x00000010u);
}

TEST(Tcgen05InstrDesc, ATypeAndBTypeBits7To12) {
  // BF16 = 1 in atype (bits 7-9) and btype (bits 10-12).
  uint32_t bf16 = encodeInstrDescF16(MmaInputType::BF16, 64, 8, Major::K,
                                     Major::K, /*f32Accumulator=*/false);
  EXPECT_EQ(bf16 ^ kBaseF16, 0x00000080u | 0x00000400u);
}

TEST(Tcgen05InstrDesc, TransposeBits15And16) {
  uint32_t aMN =
      encodeInstrDescF16(MmaInputType::F16, 64, 8, Major::MN, Major::K, false);
  uint32_t bMN =
      encodeInstrDescF16(MmaInputType::F16, 64, 8, Major::K, Major::MN, false);
  EXPECT_EQ(aMN ^ kBaseF16, 0x00008000u);
  EXPECT_EQ(bMN ^ kBaseF16, 0x00010000u);
}

TEST(Tcgen05InstrDesc, NBits17To22) {
  // N = 256: 32 << 17; N = 128: 16 << 17; N = 64: 8 << 17. Bit 23 stays 0.
  auto n = [](int64_t v) {
    return encodeInstrDescF16(MmaInputType::F16, 64, v, Major::K, Major::K,
                              false) &
           0x00FE0000u;
  };
  EXPECT_EQ(n(256), 0x00400000u);
  EXPECT_EQ(n(128), 0x00200000u);
  EXPECT_EQ(n(64), 0x00100000u);
  EXPECT_EQ(n(8), 0x00020000u);
  EXPECT_EQ(encodeInstrDescF16(MmaInputType::F16, 64, 256, Major::K, Major::K,
                               false) &
                0x00800000u,
            0u);
}

TEST(Tcgen05InstrDesc, MBits24To28) {
  // M = 128: 8 << 24 (bit 23 is reserved: M starts at 24, not 23).
  uint32_t m128 =
      encodeInstrDescF16(MmaInputType::F16, 128, 8, Major::K, Major::K, false);
  EXPECT_EQ(m128 & 0x1F000000u, 0x08000000u);
  EXPECT_EQ(kBaseF16 & 0x1F000000u, 0x04000000u);
}

TEST(Tcgen05InstrDesc, AttentionOperands) {
  // S = Q Kᵀ (bf16, f32, M 128, N 128, both K-major) and O = P V (V
  // MN-major, N = head_dim): the constants test/Target/sm100 checks in PTX.
  EXPECT_EQ(
      encodeInstrDescF16(MmaInputType::BF16, 128, 128, Major::K, Major::K),
      0x08200490u);
  EXPECT_EQ(
      encodeInstrDescF16(MmaInputType::BF16, 128, 128, Major::K, Major::MN),
      0x08210490u);
  EXPECT_EQ(
      encodeInstrDescF16(MmaInputType::BF16, 128, 64, Major::K, Major::MN),
      0x08110490u);
  EXPECT_EQ(encodeInstrDescF16(MmaInputType::F16, 128, 128, Major::K, Major::K),
            0x08200010u);
}

TEST(Tcgen05InstrDesc, Shapes) {
  EXPECT_TRUE(isValidMmaShapeF16(128, 128));
  EXPECT_TRUE(isValidMmaShapeF16(128, 256));
  EXPECT_TRUE(isValidMmaShapeF16(64, 8));
  EXPECT_TRUE(isValidMmaShapeF16(64, 200));
  EXPECT_FALSE(isValidMmaShapeF16(128, 8));   // M 128 steps N by 16
  EXPECT_FALSE(isValidMmaShapeF16(128, 272)); // N <= 256
  EXPECT_FALSE(isValidMmaShapeF16(256, 128)); // M 256 is cta_group::2
  EXPECT_FALSE(isValidMmaShapeF16(32, 64));
}

//===----------------------------------------------------------------------===//
// Shared memory descriptor
//===----------------------------------------------------------------------===//

TEST(Tcgen05SmemDesc, StartAddressBits0To13) {
  SmemOperandLayout none{0, 0, Swizzle::None};
  // Bytes / 16, 14 bits; only bit 46 (the fixed 0b001) besides.
  EXPECT_EQ(encodeSmemDesc(0x400, none), 0x0000400000000040u);
  EXPECT_EQ(encodeSmemDesc(0x3FFF0, none) & 0x3FFFu, 0x3FFFu);
  EXPECT_EQ(encodeSmemDesc(0x3FFF0, none) & 0xC000u, 0u); // bits 14-15
}

TEST(Tcgen05SmemDesc, LeadingByteOffsetBits16To29) {
  SmemOperandLayout l{128, 0, Swizzle::None};
  EXPECT_EQ(smemDescHighBits(l), 0x0000400000080000u); // 8 << 16
  SmemOperandLayout big{16384, 0, Swizzle::None};
  EXPECT_EQ(smemDescHighBits(big) & 0x3FFF0000u, 0x04000000u); // 1024 << 16
}

TEST(Tcgen05SmemDesc, StrideByteOffsetBits32To45) {
  SmemOperandLayout l{0, 1024, Swizzle::None};
  EXPECT_EQ(smemDescHighBits(l), 0x0000404000000000u); // 64 << 32
}

TEST(Tcgen05SmemDesc, FixedVersionBits46To48) {
  // 0b001: bit 46 set, 47 and 48 clear, whatever the layout.
  SmemOperandLayout zero{0, 0, Swizzle::None};
  EXPECT_EQ(smemDescHighBits(zero), uint64_t(1) << 46);
}

TEST(Tcgen05SmemDesc, BaseOffsetBits49To51) {
  SmemOperandLayout l{0, 0, Swizzle::None, /*baseOffset=*/3};
  EXPECT_EQ(smemDescHighBits(l), 0x0006400000000000u);
}

TEST(Tcgen05SmemDesc, SwizzleBits61To63) {
  auto sw = [](Swizzle s) {
    return smemDescHighBits({0, 0, s}) & 0xE000000000000000u;
  };
  EXPECT_EQ(sw(Swizzle::None), 0u);
  EXPECT_EQ(sw(Swizzle::B128Atom32), 0x2000000000000000u);
  EXPECT_EQ(sw(Swizzle::B128), 0x4000000000000000u);
  EXPECT_EQ(sw(Swizzle::B64), 0x8000000000000000u);
  EXPECT_EQ(sw(Swizzle::B32), 0xC000000000000000u);
}

TEST(Tcgen05SmemDesc, AttentionTiles) {
  // Q and K: K-major, 128B swizzle, LBO 16 B, SBO 1024 B.
  EXPECT_EQ(smemDescHighBits(kMajorSwizzle128()), 0x4000404000010000u);
  EXPECT_EQ(encodeSmemDesc(0x8000, kMajorSwizzle128()), 0x4000404000010800u);
  // V: MN-major, LBO = one 128-row panel (16384 B).
  EXPECT_EQ(smemDescHighBits(mnMajorSwizzle128(128 * 128)),
            0x4000404004000000u);
}

//===----------------------------------------------------------------------===//
// Tensor memory
//===----------------------------------------------------------------------===//

TEST(Tcgen05Tmem, AddressIsLaneHighColumnLow) {
  EXPECT_EQ(tmemAddress(0, 0), 0u);
  EXPECT_EQ(tmemAddress(32, 128), 0x00200080u);
  EXPECT_EQ(tmemAddress(96, 511), 0x006001FFu);
}

TEST(Tcgen05Tmem, AllocationAndLdStSizes) {
  EXPECT_TRUE(isValidTmemAllocation(32));
  EXPECT_TRUE(isValidTmemAllocation(512));
  EXPECT_FALSE(isValidTmemAllocation(16));
  EXPECT_FALSE(isValidTmemAllocation(384));
  EXPECT_FALSE(isValidTmemAllocation(1024));
  EXPECT_TRUE(isValidLdStColumns(1));
  EXPECT_TRUE(isValidLdStColumns(128));
  EXPECT_FALSE(isValidLdStColumns(96));
  EXPECT_FALSE(isValidLdStColumns(256));
}

//===----------------------------------------------------------------------===//
// The builders, through blasst's back end to PTX for sm_100a.
//===----------------------------------------------------------------------===//

/// One kernel built only with the Tcgen05.h builders: allocate, two MMAs (SS
/// and TS), commit, load, store, dealloc. The tile's shared memory address is
/// a constant, so LLVM folds each descriptor to one number.
std::string buildAndTranslate(uint32_t tileAddr) {
  using namespace mlir;
  DialectRegistry registry;
  blasst::registerAllBLASSTDialects(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  OpBuilder b(&ctx);
  Location loc = b.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  auto ptr3 = LLVM::LLVMPointerType::get(&ctx, 3);
  auto ptr1 = LLVM::LLVMPointerType::get(&ctx, 1);
  auto fn = LLVM::LLVMFuncOp::create(
      b, loc, "tcgen05_builders",
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(&ctx),
                                  {ptr3, ptr3, ptr1}));
  fn->setAttr("nvvm.kernel", b.getUnitAttr());
  Block *entry = fn.addEntryBlock(b);
  b.setInsertionPointToStart(entry);
  Value slot = entry->getArgument(0), mbar = entry->getArgument(1),
        out = entry->getArgument(2);

  emitTmemAlloc(b, loc, slot, 256);
  emitFenceBeforeThreadSync(b, loc);
  NVVM::Barrier0Op::create(b, loc);
  emitFenceAfterThreadSync(b, loc);
  Value base = emitTmemBase(b, loc, slot);

  Value addr = arith::ConstantIntOp::create(b, loc, b.getI32Type(), tileAddr);
  Value aDesc = emitSmemDesc(b, loc, addr, kMajorSwizzle128());
  Value vDesc = emitSmemDesc(b, loc, addr, mnMajorSwizzle128(16384));
  Value yes = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
  Value no = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 0);
  uint32_t qk =
      encodeInstrDescF16(MmaInputType::BF16, 128, 128, Major::K, Major::K);
  uint32_t pv =
      encodeInstrDescF16(MmaInputType::BF16, 128, 64, Major::K, Major::MN);
  emitMmaSS(b, loc, base, aDesc, advanceSmemDesc(b, loc, aDesc, 32), qk, no);
  emitMmaTS(b, loc, tmemAddr(b, loc, base, Value(), 128), base,
            advanceSmemDesc(b, loc, vDesc, 2048), pv, yes);
  emitCommit(b, loc, mbar);

  Value lane = arith::ConstantIntOp::create(b, loc, b.getI32Type(), 32);
  Value row = tmemAddr(b, loc, base, lane, 0);
  Value s = emitLoadColumns(b, loc, row, 64);
  emitStoreColumns(b, loc, tmemAddr(b, loc, row, Value(), 256), s);
  LLVM::StoreOp::create(b, loc, s, out);
  emitFenceBeforeThreadSync(b, loc);
  NVVM::Barrier0Op::create(b, loc);
  emitFenceAfterThreadSync(b, loc);
  emitTmemDealloc(b, loc, base, 256);
  LLVM::ReturnOp::create(b, loc, ValueRange());

  EXPECT_TRUE(succeeded(verify(*module)));
  PassManager pm(&ctx);
  blasst::buildNVVMInputPipeline(pm);
  EXPECT_TRUE(succeeded(pm.run(*module)));
  FailureOr<std::string> ptx =
      blasst::translateToPTX(*module, blasst::Target::SM100a);
  EXPECT_TRUE(succeeded(ptx));
  return succeeded(ptx) ? *ptx : std::string();
}

TEST(Tcgen05Builders, PTXForSm100a) {
  const uint32_t tile = 0x8000;
  std::string ptx = buildAndTranslate(tile);
  llvm::StringRef p(ptx);
  for (const char *needle :
       {".target sm_100a",
        "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32",
        "tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;",
        "tcgen05.fence::before_thread_sync;",
        "tcgen05.fence::after_thread_sync;",
        "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64",
        "tcgen05.ld.sync.aligned.32x32b.x64.b32",
        "tcgen05.wait::ld.sync.aligned;",
        "tcgen05.st.sync.aligned.32x32b.x64.b32",
        "tcgen05.wait::st.sync.aligned;",
        "tcgen05.dealloc.cta_group::1.sync.aligned.b32"})
    EXPECT_TRUE(p.contains(needle)) << needle << "\n" << ptx;

  // The descriptors nvvm.tcgen05.mma_smem_desc built fold to the C++
  // encoder's values (+2 for A's 32-byte k-step, +128 for V's 2048 bytes).
  uint64_t a = encodeSmemDesc(tile, kMajorSwizzle128());
  uint64_t a1 = encodeSmemDesc(tile + 32, kMajorSwizzle128());
  uint64_t v1 = encodeSmemDesc(tile + 2048, mnMajorSwizzle128(16384));
  std::string ss = "tcgen05.mma.cta_group::1.kind::f16.collector::a::discard";
  EXPECT_TRUE(p.contains(std::to_string(a))) << a << "\n" << ptx;
  EXPECT_TRUE(p.contains(std::to_string(a1))) << a1 << "\n" << ptx;
  EXPECT_TRUE(p.contains(std::to_string(v1))) << v1 << "\n" << ptx;
  EXPECT_TRUE(p.contains(std::to_string(0x08200490u)));
  EXPECT_TRUE(p.contains(std::to_string(0x08110490u)));
  // One SS form (two descriptors) and one TS form (A in tensor memory).
  size_t first = p.find(ss);
  ASSERT_NE(first, llvm::StringRef::npos) << ptx;
  size_t second = p.find(ss, first + 1);
  ASSERT_NE(second, llvm::StringRef::npos) << ptx;
  EXPECT_TRUE(p.substr(second).contains("], [%r")) << ptx;
}

} // namespace
