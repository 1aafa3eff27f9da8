//===- Schedule.h - A kernel's schedule knobs -------------------*- C++ -*-===//
//
// ScheduleOptions and the knob table, generated from ScheduleKnobs.def. Plain
// C++ (no LLVM/MLIR): the JIT's public header includes it. resolveSchedule,
// which fills in the defaults, is in AttnToWS.h.
//
//===----------------------------------------------------------------------===//
#ifndef BLASST_CONVERSION_ATTNTOWS_SCHEDULE_H
#define BLASST_CONVERSION_ATTNTOWS_SCHEDULE_H

#include "blasst/Spec/AttentionSpec.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace blasst {

/// How a knob is typed and spelled (see ScheduleKnobs.def).
enum class KnobKind {
  Size,   ///< int64_t; 0: the target's default for the spec.
  Switch, ///< std::optional<bool>; "auto" (unset), "true", "false".
  Count,  ///< std::optional<int64_t>; unset: the default.
};

/// The C++ type of a knob of kind K (the ScheduleOptions field's).
template <KnobKind K>
struct ScheduleKnobType;
template <>
struct ScheduleKnobType<KnobKind::Size> {
  using type = int64_t;
};
template <>
struct ScheduleKnobType<KnobKind::Switch> {
  using type = std::optional<bool>;
};
template <>
struct ScheduleKnobType<KnobKind::Count> {
  using type = std::optional<int64_t>;
};

/// Keys per KV block of a prefill kernel's short-sequence entry
/// (`short-entry`, `<kernel>_short`) at head_dim 128.
inline constexpr int64_t kShortEntryBlockN = 128;
/// At head_dim 64 the entry runs two CTAs per SM, so that one CTA's start
/// (Q and the first K/V landing, the first block's softmax) and end (the
/// last P V, the epilogue, the CTA's exit and the next one's launch)
/// overlap the other's KV loop: 64-key blocks in 3 stages with P in shared
/// memory, registers 24 / 104 / 104 (a 384-thread CTA launches with 80 at
/// two per SM; P in registers spills 32 bytes there).
inline constexpr int64_t kShortEntryTwoCtaBlockN = 64;
inline constexpr int64_t kShortEntryTwoCtaStages = 3;
inline constexpr int64_t kShortEntryTwoCtaProducerRegs = 24;
inline constexpr int64_t kShortEntryTwoCtaConsumerRegs = 104;

/// The target and one field per knob of ScheduleKnobs.def (what each does
/// is written there). Zero and unset knobs mean "the target's default for
/// the spec"; resolveSchedule fills them in.
struct ScheduleOptions {
  Target target = Target::SM90a;
#define BLASST_SCHEDULE_KNOB(Kind, Field, Name, Help)                          \
  ScheduleKnobType<KnobKind::Kind>::type Field{};
#include "blasst/Conversion/AttnToWS/ScheduleKnobs.def"
};

/// One row of the knob table.
struct ScheduleKnob {
  KnobKind kind;
  const char *name;       ///< The flag (--name) and the summary's key.
  const char *pass;       ///< The pass that has it as an option.
  const char *passOption; ///< Its name there.
  const char *help;
};

/// Every knob, in ScheduleKnobs.def's order.
inline constexpr ScheduleKnob kScheduleKnobs[] = {
#define BLASST_ATTN_TO_WS_KNOB(Kind, Field, Name, Help)                        \
  {KnobKind::Kind, Name, "convert-attn-to-ws", Name, Help},
#define BLASST_INSERT_VOTE_KNOB(Kind, Field, Name, PassOption, Help)           \
  {KnobKind::Kind, Name, "blasst-insert-vote", PassOption, Help},
#define BLASST_V_ON_DEMAND_KNOB(Kind, Field, Name, PassOption, Help)           \
  {KnobKind::Kind, Name, "blasst-v-on-demand", PassOption, Help},
#define BLASST_CROSS_STAGE_P_KNOB(Kind, Field, Name, PassOption, Help)         \
  {KnobKind::Kind, Name, "blasst-cross-stage-p", PassOption, Help},
#include "blasst/Conversion/AttnToWS/ScheduleKnobs.def"
};

/// Checks the knobs a user gave whose values no schedule can build (tile
/// sizes against `opts.target`'s schedule, counts out of their range; 0 and
/// unset = the default). Returns "" or "<knob>=<value>: <reason>" with the
/// knob spelled as the table (and blasst-compile's flag) spells it.
/// blasst-compile and lowerToWS run it first, convert-attn-to-ws on its
/// options. `decode`: the spec has phase = decode (sm_90a: block_m 64,
/// checked in full by convert-attn-to-ws). What depends on the spec beyond
/// its phase (page sizes, head_dim) is the passes' to check.
std::string checkScheduleKnobs(const ScheduleOptions &opts,
                               bool decode = false);

/// The pass-option spelling of an on/off knob: "auto" (unset), "true",
/// "false"; parsing also takes "1" and "0". Parsing fails (false) on
/// anything else.
std::string printScheduleKnob(std::optional<bool> knob);
bool parseScheduleKnob(std::string_view text, std::optional<bool> *knob);

/// The knobs as `name=value` pairs in table order, the way pass options and
/// (with `--`) blasst-compile's flags spell them: "block-m=128 block-n=176
/// ... v-on-demand=false". Unset switches and counts are left out (leaving a
/// flag out means the default). The JIT's cache key and the --summary line.
std::string formatSchedule(const ScheduleOptions &opts);

} // namespace blasst

#endif // BLASST_CONVERSION_ATTNTOWS_SCHEDULE_H
