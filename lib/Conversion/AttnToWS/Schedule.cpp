//===- Schedule.cpp - Spelling the schedule knobs -------------------------===//
#include "blasst/Conversion/AttnToWS/Schedule.h"

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
