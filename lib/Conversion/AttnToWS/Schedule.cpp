//===- Schedule.cpp - Spelling the schedule knobs -------------------------===//
#include "blasst/Conversion/AttnToWS/Schedule.h"

#include <cstdint>
#include <limits>

using namespace blasst;

std::string blasst::printScheduleKnob(std::optional<bool> knob) {
  return knob ? (*knob ? "true" : "false") : "auto";
}

bool blasst::parseScheduleKnob(std::string_view text,
                               std::optional<bool> *knob) {
  if (text == "true" || text == "1")
    *knob = true;
  else if (text == "false" || text == "0")
    *knob = false;
  else if (text == "auto")
    *knob = std::nullopt;
  else
    return false;
  return true;
}

namespace {
void append(std::string &out, const char *name, int64_t value) {
  out +=
      std::string(out.empty() ? "" : " ") + name + "=" + std::to_string(value);
}
void append(std::string &out, const char *name, std::optional<bool> value) {
  if (value)
    out += std::string(out.empty() ? "" : " ") + name + "=" +
           printScheduleKnob(value);
}
void append(std::string &out, const char *name, std::optional<int64_t> value) {
  if (value)
    append(out, name, *value);
}
} // namespace

std::string blasst::formatSchedule(const ScheduleOptions &opts) {
  std::string out;
#define BLASST_SCHEDULE_KNOB(Kind, Field, Name, Help)                          \
  append(out, Name, opts.Field);
#include "blasst/Conversion/AttnToWS/ScheduleKnobs.def"
  return out;
}

std::string blasst::checkScheduleKnobs(const ScheduleOptions &opts,
                                       bool decode) {
  auto bad = [](const char *knob, int64_t value, const std::string &why) {
    return std::string(knob) + "=" + std::to_string(value) + ": " + why;
  };
  bool hopper = opts.target == Target::SM90a;
  if (int64_t m = opts.blockM) {
    if (m < 0 || m % 64)
      return bad("block-m", m,
                 "query rows per CTA must be a positive multiple of 64");
    // Both consumer warpgroups take block_m / 2 rows, and each computes one
    // 64-row wgmma tile. Decode's one consumer takes block_m 64, which
    // convert-attn-to-ws checks (and resolveSchedule picks, so the JIT,
    // which passes the resolved schedule, gets 64 here).
    if (hopper && m != 128 && !(decode && m == 64))
      return bad("block-m", m,
                 "the sm_90a schedule splits block_m between two consumer "
                 "warpgroups of 64 query rows each (one wgmma tile), so "
                 "block_m must be 128");
    // Two Q tiles of 128 rows: tcgen05.mma's M, one row per softmax thread.
    if (!hopper && m != 256)
      return bad("block-m", m,
                 "the sm_100a schedule computes two Q tiles of 128 rows "
                 "(tcgen05.mma's M, one row per softmax thread), so block_m "
                 "must be 256");
  }
  if (int64_t n = opts.blockN)
    if (n < 0 || n % 16 || n > 256)
      return bad("block-n", n,
                 "keys per KV block must be a positive multiple of 16 and at "
                 "most 256 (the N of one " +
                     std::string(hopper ? "wgmma" : "tcgen05.mma") + ")");
  // The runtime reads kv_splits in [0, 1024] from the .meta (0: chosen at
  // launch), and CTAs per SM are 1 or 2.
  if (opts.kvSplits && (*opts.kvSplits < 0 || *opts.kvSplits > 1024))
    return bad("kv-splits", *opts.kvSplits,
               "KV splits per tile are 1 to 1024 (0: chosen at launch)");
  if (opts.ctasPerSm && (*opts.ctasPerSm < 1 || *opts.ctasPerSm > 2))
    return bad("ctas-per-sm", *opts.ctasPerSm,
               "1 or 2 CTAs per SM (2: sm_90a)");
  // The lowering counts kept blocks in 32 bits.
  if (opts.vSpeculateAfter &&
      (*opts.vSpeculateAfter < 0 ||
       *opts.vSpeculateAfter > std::numeric_limits<int32_t>::max()))
    return bad("v-speculate-after", *opts.vSpeculateAfter,
               "kept blocks in a row before V is copied without its votes: "
               "0 (always wait) to 2147483647");
  return "";
}
