//===- AttnToWS.h - attn → ws schedule construction -------------*- C++ -*-===//
//
// The schedule strategy (tile sizes, stages, register split) is kept apart
// from the IR construction so the JIT and the pass agree on the defaults.
//
//===----------------------------------------------------------------------===//
#ifndef BLASST_CONVERSION_ATTNTOWS_ATTNTOWS_H
#define BLASST_CONVERSION_ATTNTOWS_ATTNTOWS_H

#include "blasst/Dialect/WS/IR/WS.h"
#include "mlir/IR/Builders.h"

namespace blasst {

/// The ws.kernel attribute's enum for a target: the one conversion from the
/// spec's / runtime's Target (used everywhere outside the ws IR) to the
/// dialect's. Both spell a target the same ("sm_90a"); a unit test keeps it
/// so.
ws::Target toWSTarget(Target target);

/// Schedule knobs; 0 means "the target's default".
struct ScheduleOptions {
  Target target = Target::SM90a;
  int64_t blockM = 0;
  int64_t blockN = 0;
  int64_t stages = 0;
  int64_t producerRegs = 0;
  int64_t consumerRegs = 0;
  /// sm_90a: FlashAttention-3's intra-warpgroup overlap (block n+1's
  /// softmax while block n's P V runs). Unset: the target's default.
  std::optional<bool> overlap;
  /// sm_90a: the two consumer warpgroups take turns for their GEMMs.
  std::optional<bool> pingpong;
  /// sm_90a: CTAs stay resident and walk the tiles (longest causal first).
  std::optional<bool> persistent;
  /// sm_90a: keep P in registers (wgmma with A from registers). Unset: the
  /// target's default.
  std::optional<bool> pInRegisters;
  /// sm_90a: load each consumer's Q rows into registers once (ldmatrix) and
  /// issue Q Kᵀ with A from registers: no Q reads from shared memory per KV
  /// block, 32 (head_dim 128) more registers per thread. Unset: off.
  std::optional<bool> qInRegisters;
  /// sm_90a: clusters of two neighbouring query blocks that share every K/V
  /// tile through TMA multicast (half the L2 traffic). Unset: off.
  std::optional<bool> kvMulticast;
  /// sm_90a BLASST: the load role copies a block's V only when a vote kept
  /// the block (--blasst-v-on-demand after the vote pass). Unset: on for
  /// BLASST on the overlap schedule at head_dim <= 128 without ping-pong,
  /// persistent CTAs or multicast; otherwise off.
  std::optional<bool> vOnDemand;
  /// With V on demand: copy V without waiting for the votes after this many
  /// kept blocks in a row (0: always wait). Unset: 2 where V on demand is on.
  /// Setting it asks for V on demand.
  std::optional<int64_t> vSpeculateAfter;
};

/// The pass-option spelling of an on/off knob: "auto" (unset), "true",
/// "false"; parsing also takes "1" and "0". Parsing fails (false) on
/// anything else.
std::string printScheduleKnob(std::optional<bool> knob);
bool parseScheduleKnob(llvm::StringRef text, std::optional<bool> *knob);

/// Fills the zero knobs of `opts` with the target's defaults for `spec`.
ScheduleOptions resolveSchedule(const AttentionSpec &spec,
                                ScheduleOptions opts);

/// Builds a `ws.kernel` named `name` at the builder's insertion point with
/// the default schedule of `opts.target` for `spec`. The caller verifies it.
ws::KernelOp buildKernel(mlir::OpBuilder &b, mlir::Location loc,
                         llvm::StringRef name, const AttentionSpec &spec,
                         const ScheduleOptions &opts);

} // namespace blasst

#endif // BLASST_CONVERSION_ATTNTOWS_ATTNTOWS_H
