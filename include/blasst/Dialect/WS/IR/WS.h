//===- WS.h - The ws (warp-specialized pipeline) dialect --------*- C++ -*-===//
#ifndef BLASST_DIALECT_WS_IR_WS_H
#define BLASST_DIALECT_WS_IR_WS_H

#include "blasst/Dialect/Attn/IR/Attn.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/RegionKindInterface.h"
#include "mlir/IR/SymbolTable.h"

#include "blasst/Dialect/WS/IR/WSDialect.h.inc"
#include "blasst/Dialect/WS/IR/WSEnums.h.inc"

namespace blasst::ws {
class RoleOp;
/// A buffer a step reads or writes (StepOpInterface::getBufferAccesses).
struct BufferAccess {
  mlir::FlatSymbolRefAttr buffer;
  bool write = false;
};
/// The buffer accesses of each step op, in one table.
void getStepBufferAccesses(mlir::Operation *op,
                           llvm::SmallVectorImpl<BufferAccess> &accesses);
} // namespace blasst::ws

#include "blasst/Dialect/WS/IR/WSInterfaces.h.inc"

#define GET_OP_CLASSES
#include "blasst/Dialect/WS/IR/WSOps.h.inc"

namespace blasst::ws {
/// Hardware limits the verifiers enforce.
constexpr int64_t kRegistersPerCTA = 65536;
constexpr int64_t kMaxWarpsPerCTA = 32;
constexpr int64_t kTensorMemoryColumns = 512;
constexpr int64_t kTensorMemoryLanes = 128;
/// Opt-in dynamic shared memory per block on sm_90a and sm_100a.
constexpr int64_t kSharedMemoryBytes = 232448;
/// Shared memory of an SM, and what the hardware reserves per resident CTA
/// (ctas_per_sm: each CTA gets kSharedMemoryPerSM / n - kReservedPerCTA).
constexpr int64_t kSharedMemoryPerSM = 233472;
constexpr int64_t kReservedSharedPerCTA = 1024;
} // namespace blasst::ws

#endif // BLASST_DIALECT_WS_IR_WS_H
