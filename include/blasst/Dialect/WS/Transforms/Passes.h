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

/// blasst-v-on-demand's speculation depth where none is asked for: after 4
/// kept blocks in a row for decode kernels (q_group), 2 for prefill
/// (docs/results/2026-12-02-session14.md §1, 2026-11-29-session9.md §3).
inline int64_t defaultVSpeculateAfter(bool decode) { return decode ? 4 : 2; }
} // namespace blasst::ws

#endif // BLASST_DIALECT_WS_TRANSFORMS_PASSES_H
