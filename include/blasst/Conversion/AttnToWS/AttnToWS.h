//===- AttnToWS.h - attn → ws schedule construction -------------*- C++ -*-===//
//
// The schedule strategy (tile sizes, stages, register split) is kept apart
// from the IR construction so the JIT and the pass agree on the defaults.
//
//===----------------------------------------------------------------------===//
#ifndef BLASST_CONVERSION_ATTNTOWS_ATTNTOWS_H
#define BLASST_CONVERSION_ATTNTOWS_ATTNTOWS_H

#include "blasst/Conversion/AttnToWS/Schedule.h"
#include "blasst/Dialect/WS/IR/WS.h"
#include "mlir/IR/Builders.h"

namespace blasst {

/// The ws.kernel attribute's enum for a target: the one conversion from the
/// spec's / runtime's Target (used everywhere outside the ws IR) to the
/// dialect's. Both spell a target the same ("sm_90a"); a unit test keeps it
/// so.
ws::Target toWSTarget(Target target);

/// Fills the zero knobs of `opts` with the target's defaults for `spec`.
ScheduleOptions resolveSchedule(const AttentionSpec &spec,
                                ScheduleOptions opts);

/// The resolved schedule as the `schedule` record of a ws.kernel (every
/// knob of ScheduleKnobs.def that has a value, by its pass-option name with
/// '_' for '-'), and back: the knobs of a record (the target is not in it:
/// the result's keeps its default).
mlir::DictionaryAttr scheduleAttr(mlir::MLIRContext *ctx,
                                  const ScheduleOptions &opts);
ScheduleOptions scheduleFromAttr(mlir::DictionaryAttr record);

/// Builds a `ws.kernel` named `name` at the builder's insertion point with
/// the default schedule of `opts.target` for `spec`. The caller verifies it.
ws::KernelOp buildKernel(mlir::OpBuilder &b, mlir::Location loc,
                         llvm::StringRef name, const AttentionSpec &spec,
                         const ScheduleOptions &opts);

} // namespace blasst

#endif // BLASST_CONVERSION_ATTNTOWS_ATTNTOWS_H
