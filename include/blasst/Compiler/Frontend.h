//===- Frontend.h - From an AttentionSpec to ws IR --------------*- C++ -*-===//
//
// The compiler's entry points shared by blasst-compile and (later) the JIT:
// build the attn-level module for a spec, run the schedule pass, and describe
// the resulting ws.kernel in a one-screen summary.
//
//===----------------------------------------------------------------------===//
#ifndef BLASST_COMPILER_FRONTEND_H
#define BLASST_COMPILER_FRONTEND_H

#include "blasst/Conversion/AttnToWS/AttnToWS.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace blasst {

/// Registers every dialect the compiler's pipelines use.
void registerAllBLASSTDialects(mlir::DialectRegistry &registry);

/// A module with `func.func @<name>` taking [B, S, H, D] memrefs (and lse /
/// stats when the spec asks) that holds one attn.attention.
mlir::OwningOpRef<mlir::ModuleOp> buildAttnModule(mlir::MLIRContext *ctx,
                                                  const AttentionSpec &spec,
                                                  llvm::StringRef name);

/// Cross-stage P's knobs as they apply to `spec` on `o.target` (the JIT's
/// cache key): on for sm_100a kernels (dense and BLASST) unless switched
/// off, with the pass's default handshake depth and hold schedule where not
/// given; left as given otherwise (sm_90a: asked for, the pass says why
/// not).
void resolveCrossStageP(const AttentionSpec &spec, ScheduleOptions &o);

/// Runs convert-attn-to-ws with `opts` on `module`, then blasst-insert-vote
/// (a no-op for dense specs) unless `insertVote` is false. Diagnostics go to
/// the context's handler. `verifyStats`: blasst-verify-sync prints its
/// states and time per kernel on stderr.
mlir::LogicalResult lowerToWS(mlir::ModuleOp module,
                              const ScheduleOptions &opts,
                              bool insertVote = true, bool verifyStats = false);

/// A human-readable summary of a ws.kernel: its schedule record (as
/// formatSchedule spells knobs), roles, buffers, pipes and the CTA's
/// resource use.
std::string summarizeKernel(ws::KernelOp kernel);

/// The canonical function name for a spec (used for kernels and caches).
std::string kernelBaseName(const AttentionSpec &spec);

} // namespace blasst

#endif // BLASST_COMPILER_FRONTEND_H
