//===- Passes.h - ws schedule transformations -------------------*- C++ -*-===//
#ifndef BLASST_DIALECT_WS_TRANSFORMS_PASSES_H
#define BLASST_DIALECT_WS_TRANSFORMS_PASSES_H

#include "blasst/Dialect/WS/IR/WS.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace blasst::ws {
#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "blasst/Dialect/WS/Transforms/Passes.h.inc"

/// The cross-stage P handshake depth where none is asked for: the seeds'
/// 4 for dense kernels, 2 for voted (BLASST) ones, whose depth-4 proof
/// costs blasst-verify-sync 0.7-1 million states (docs/design.md).
inline int64_t defaultCrossStagePDepth(bool voted) { return voted ? 2 : 4; }
} // namespace blasst::ws

#endif // BLASST_DIALECT_WS_TRANSFORMS_PASSES_H
