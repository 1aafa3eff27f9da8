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
/// 4, dense and voted (blasst-verify-sync searches these token rings at
/// depth 2: docs/design.md "Shallow token rings").
inline int64_t defaultCrossStagePDepth() { return 4; }

/// blasst-v-on-demand's speculation depth where none is asked for: after 2
/// kept blocks in a row for prefill (docs/results/2026-11-29-session9.md
/// §3); none for decode kernels (q_group), which defer P V instead (option
/// defer-pv: V(n) then has two blocks to land; 1.42-1.49x of dense at ~70%
/// skipped where speculating after 4 kept blocks gave 1.27-1.35x,
/// docs/results/2026-12-02-session15.md).
inline int64_t defaultVSpeculateAfter(bool decode) { return decode ? 0 : 2; }
} // namespace blasst::ws

#endif // BLASST_DIALECT_WS_TRANSFORMS_PASSES_H
