//===- Tcgen05.h - sm_100a: tcgen05 and tensor memory ---------*- C++ -*-===//
//
// The building blocks of the sm_100a lowering (not used yet): the two
// descriptors tcgen05.mma reads, encoded in C++ (constexpr, one unit test per
// field, test/unit/Tcgen05Test.cpp), and small builders of the NVVM ops for
// tensor memory (allocation, loads, stores), the MMA and its commit.
// docs/design.md "sm_100a: tcgen05 through NVVM" says what each op lowers to
// and which constraints the PTX ISA and LLVM 22 put on them.
//
// Tensor memory (TMEM): 128 lanes x 512 columns of 32 bits per CTA. An
// address is lane << 16 | column. An M = 128 accumulator of cta_group::1
// keeps row i in lane i, one f32 per column; warp w of a warpgroup can
// access only lanes [32 (w % 4), 32 (w % 4) + 32) with tcgen05.ld/st.
//
//===----------------------------------------------------------------------===//
#ifndef BLASST_LIB_CONVERSION_WSTONVVM_SM100_TCGEN05_H
#define BLASST_LIB_CONVERSION_WSTONVVM_SM100_TCGEN05_H

#include <cstdint>

#include "mlir/IR/Builders.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Value.h"

namespace blasst::ws::lowering::sm100 {

//===----------------------------------------------------------------------===//
// Instruction descriptor, .kind::f16
// (PTX ISA 9.2, 9.7.16.4.2 "Instruction Descriptor", Table 42)
//===----------------------------------------------------------------------===//

/// Element type of A and B (atype, btype; they must match for kind::f16).
enum class MmaInputType : uint32_t { F16 = 0, BF16 = 1 };
/// Operand major-ness: K-major is "no transpose" in the descriptor.
enum class Major : uint32_t { K = 0, MN = 1 };

/// Bit positions of the fields blasst sets (all others are 0: dense, no
/// saturation, no negation, no B-reuse shift).
namespace idesc {
constexpr unsigned kDType = 4;       // bits 4-5: D type, F16 = 0, F32 = 1
constexpr unsigned kAType = 7;       // bits 7-9
constexpr unsigned kBType = 10;      // bits 10-12
constexpr unsigned kTransposeA = 15; // bit 15: A MN-major
constexpr unsigned kTransposeB = 16; // bit 16: B MN-major
constexpr unsigned kN = 17;          // bits 17-22: N >> 3
constexpr unsigned kM = 24;          // bits 24-28: M >> 4 (bit 23 reserved)
} // namespace idesc

/// tcgen05.mma .cta_group::1 .kind::f16 dense shapes (PTX ISA, tcgen05
/// "Matrix shape"; CUTLASS's SM100 UMMA atoms assert the same): M 64 with N a
/// multiple of 8, or M 128 with N a multiple of 16; N in [8, 256]; K is 16.
constexpr bool isValidMmaShapeF16(int64_t m, int64_t n) {
  if (n < 8 || n > 256)
    return false;
  if (m == 64)
    return n % 8 == 0;
  if (m == 128)
    return n % 16 == 0;
  return false;
}

/// The 32-bit instruction descriptor of a dense kind::f16 MMA: D (f32 or
/// f16) = A (M x K, `ab`) * B (K x N, `ab`), A and B `aMajor`/`bMajor`.
/// Callers check isValidMmaShapeF16 first.
constexpr uint32_t encodeInstrDescF16(MmaInputType ab, int64_t m, int64_t n,
                                      Major aMajor, Major bMajor,
                                      bool f32Accumulator = true) {
  return uint32_t(f32Accumulator) << idesc::kDType |
         uint32_t(ab) << idesc::kAType | uint32_t(ab) << idesc::kBType |
         uint32_t(aMajor) << idesc::kTransposeA |
         uint32_t(bMajor) << idesc::kTransposeB |
         (uint32_t(n) >> 3) << idesc::kN | (uint32_t(m) >> 4) << idesc::kM;
}

//===----------------------------------------------------------------------===//
// Shared memory descriptor
// (PTX ISA 9.2, 9.7.16.4.1 "Shared Memory Descriptor", Table 40)
//===----------------------------------------------------------------------===//

/// Bits 61-63. 128B swizzle is what blasst's TMA copies write.
enum class Swizzle : uint64_t {
  None = 0,
  B128Atom32 = 1, // 128-byte swizzle with 32-byte atomicity
  B128 = 2,
  B64 = 4,
  B32 = 6
};

/// How an operand tile lies in shared memory, apart from where it starts.
struct SmemOperandLayout {
  /// Leading dimension byte offset (relative mode). K-major swizzled: unused
  /// (the PTX ISA says "assumed 1", i.e. 16 bytes). MN-major swizzled: from
  /// one swizzle-width column block to the next (blasst: the next 64-column
  /// panel).
  int64_t lboBytes;
  /// Stride dimension byte offset: from one group of 8 rows (K-major: 8 M/N
  /// rows; MN-major: 8 K rows) to the next; 1024 for dense 128-byte rows.
  int64_t sboBytes;
  Swizzle swizzle;
  /// Bits 49-51: 0 when the tile starts on a 1024-byte boundary (128B
  /// swizzle), else (start >> 7) & 7.
  uint64_t baseOffset = 0;
};

namespace sdesc {
constexpr unsigned kLBO = 16;        // bits 16-29: lbo >> 4
constexpr unsigned kSBO = 32;        // bits 32-45: sbo >> 4
constexpr unsigned kVersion = 46;    // bits 46-48: fixed 0b001 (sm_100)
constexpr unsigned kBaseOffset = 49; // bits 49-51
constexpr unsigned kLBOMode = 52;    // bit 52: 0 = relative byte offset
constexpr unsigned kSwizzle = 61;    // bits 61-63
} // namespace sdesc

/// matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4: a 14-bit field in
/// 16-byte units.
constexpr uint64_t encodeSmemField(int64_t bytes) {
  return (uint64_t(bytes) & 0x3FFFF) >> 4;
}

/// Every bit of the descriptor except the start address (bits 0-13): a
/// constant per operand layout, OR'ed with the start address at run time.
constexpr uint64_t smemDescHighBits(const SmemOperandLayout &l) {
  return encodeSmemField(l.lboBytes) << sdesc::kLBO |
         encodeSmemField(l.sboBytes) << sdesc::kSBO |
         uint64_t(1) << sdesc::kVersion |
         (l.baseOffset & 7) << sdesc::kBaseOffset |
         uint64_t(l.swizzle) << sdesc::kSwizzle;
}

/// The whole descriptor of a tile at shared memory byte address `start`.
constexpr uint64_t encodeSmemDesc(uint32_t start, const SmemOperandLayout &l) {
  return encodeSmemField(start) | smemDescHighBits(l);
}

/// blasst's tiles: 64-column panels of rows x 128 bytes, 128B swizzled (what
/// TMA writes with a 64-element box and CU_TENSOR_MAP_SWIZZLE_128B). A K-major
/// operand (Q, K, and P in shared memory) steps 32 bytes per k-step of 16
/// inside a panel and panelBytes to the next panel.
constexpr SmemOperandLayout kMajorSwizzle128() {
  return {/*lboBytes=*/16, /*sboBytes=*/1024, Swizzle::B128};
}
/// An MN-major operand (V: keys x head_dim, head_dim contiguous): LBO steps
/// to the next 64-column panel (`panelBytes` = rows x 128), SBO to the next
/// 8 keys; a k-step of 16 keys is 2048 bytes.
constexpr SmemOperandLayout mnMajorSwizzle128(int64_t panelBytes) {
  return {/*lboBytes=*/panelBytes, /*sboBytes=*/1024, Swizzle::B128};
}

//===----------------------------------------------------------------------===//
// Tensor memory
//===----------------------------------------------------------------------===//

constexpr int64_t kTmemLanes = 128;
constexpr int64_t kTmemColumns = 512;

/// lane << 16 | column (PTX ISA, tcgen05 "Tensor Memory Addressing").
constexpr uint32_t tmemAddress(uint32_t lane, uint32_t column) {
  return lane << 16 | column;
}

/// tcgen05.alloc/dealloc take a power of two in [32, 512] columns.
constexpr bool isValidTmemAllocation(int64_t columns) {
  return columns >= 32 && columns <= kTmemColumns &&
         (columns & (columns - 1)) == 0;
}

/// tcgen05.ld/st .32x32b.xN: N in {1, 2, 4, ..., 128} 32-bit columns, one
/// register per column per thread.
constexpr bool isValidLdStColumns(int64_t n) {
  return n >= 1 && n <= 128 && (n & (n - 1)) == 0;
}

//===----------------------------------------------------------------------===//
// Builders. Tensor memory addresses are i32 values (base + lane << 16 +
// column); shared memory addresses are i32 (the .shared window); mbarriers
// and the allocation slot are !llvm.ptr<3>. Everything is cta_group::1.
//===----------------------------------------------------------------------===//

/// Warp-collective (the whole warp, converged): allocates `columns` columns
/// and writes their base address to `slot` (4 bytes of shared memory), then
/// gives up the CTA's right to allocate again (blasst allocates once).
void emitTmemAlloc(mlir::OpBuilder &b, mlir::Location loc, mlir::Value slot,
                   int64_t columns);
/// Every thread, after the CTA barrier that follows emitTmemAlloc (the
/// caller emits it between fenceBeforeThreadSync and fenceAfterThreadSync):
/// the base address (i32).
mlir::Value emitTmemBase(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::Value slot);
/// Warp-collective, by the allocating warp once no role uses tensor memory
/// any more (after fenceAfterThreadSync behind the final barrier).
void emitTmemDealloc(mlir::OpBuilder &b, mlir::Location loc, mlir::Value base,
                     int64_t columns);

/// base + (lane << 16) + column; `lane` may be null (lane 0).
mlir::Value tmemAddr(mlir::OpBuilder &b, mlir::Location loc, mlir::Value base,
                     mlir::Value lane, int64_t column);

void emitFenceBeforeThreadSync(mlir::OpBuilder &b, mlir::Location loc);
void emitFenceAfterThreadSync(mlir::OpBuilder &b, mlir::Location loc);

/// A shared memory descriptor through nvvm.tcgen05.mma_smem_desc for the
/// tile at `smemAddr` (i32 bytes, 16-byte aligned).
mlir::Value emitSmemDesc(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::Value smemAddr, const SmemOperandLayout &layout);
/// `desc` for the tile `byteOffset` bytes further on (a k-step): only the
/// start address field changes, and it cannot carry (shared memory is below
/// 2^18 bytes).
mlir::Value advanceSmemDesc(mlir::OpBuilder &b, mlir::Location loc,
                            mlir::Value desc, int64_t byteOffset);

/// One k-step (K = 16) of D[tmem] (+)= A * B, kind::f16, issued by one
/// thread; `accumulate` (i1) false overwrites D. SS: A and B from shared
/// memory descriptors. TS: A from tensor memory (K-major: 16-bit elements two
/// per column, 8 columns per k-step), B from a descriptor.
void emitMmaSS(mlir::OpBuilder &b, mlir::Location loc, mlir::Value d,
               mlir::Value aDesc, mlir::Value bDesc, uint32_t instrDesc,
               mlir::Value accumulate);
void emitMmaTS(mlir::OpBuilder &b, mlir::Location loc, mlir::Value d,
               mlir::Value a, mlir::Value bDesc, uint32_t instrDesc,
               mlir::Value accumulate);
/// The mbarrier `mbar` (!llvm.ptr<3>) gets one arrival when every MMA this
/// thread issued before has completed.
void emitCommit(mlir::OpBuilder &b, mlir::Location loc, mlir::Value mbar);

/// Warp-collective: `columns` 32-bit columns of this warp's 32 lanes from
/// `addr` (the warp's lane base | column) as vector<columns x i32> (i32 for
/// one column; thread l of the warp gets lane l's); then tcgen05.wait::ld
/// unless `wait` is false (the values may be used before the wait, the tensor
/// memory they came from may be overwritten only after it).
mlir::Value emitLoadColumns(mlir::OpBuilder &b, mlir::Location loc,
                            mlir::Value addr, int64_t columns,
                            bool wait = true);
/// Warp-collective: stores vector<n x i32> `values` to n columns from
/// `addr`; then tcgen05.wait::st unless `wait` is false.
void emitStoreColumns(mlir::OpBuilder &b, mlir::Location loc, mlir::Value addr,
                      mlir::Value values, bool wait = true);

} // namespace blasst::ws::lowering::sm100

#endif // BLASST_LIB_CONVERSION_WSTONVVM_SM100_TCGEN05_H
