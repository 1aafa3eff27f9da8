//===- CompilerTest.cpp - The compiler library's tables and conversions ---===//
//
// What ties the spec-level names to the IR's: the target conversion and
// (below) the schedule-knob table against the passes' options.
//
//===----------------------------------------------------------------------===//
#include "blasst/Conversion/AttnToWS/AttnToWS.h"
#include "blasst/Conversion/Passes.h"
#include "blasst/Dialect/WS/Transforms/Passes.h"
#include "blasst/Target/Target.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

using namespace blasst;

namespace {

// toWSTarget is the one conversion from the spec's Target to the ws
// dialect's; both enums name a target the same way, and every ws target has
// a spec target.
TEST(TargetTest, SpecAndDialectTargetsAgree) {
  for (Target t : kAllTargets) {
    ws::Target w = toWSTarget(t);
    EXPECT_EQ(ws::stringifyTarget(w).str(), toString(t));
    EXPECT_EQ(ws::symbolizeTarget(toString(t)), w);
  }
  EXPECT_EQ(std::size(kAllTargets), size_t(ws::getMaxEnumValForTarget()) + 1);
}

// The metadata a lowered module records becomes the .meta's ints: a value
// that is not one is refused, not wrapped (kv_splits = 2^32 + 1 read as 1).
TEST(TargetTest, LoweredKernelIntsAreChecked) {
  mlir::MLIRContext ctx;
  ctx.loadDialect<mlir::LLVM::LLVMDialect>();
  auto parse = [&](const std::string &extra) {
    return mlir::parseSourceString<mlir::ModuleOp>(
        "llvm.func @k() attributes {blasst.block_m = 128 : i64, "
        "blasst.block_n = 64 : i64, blasst.threads = 384 : i64, "
        "blasst.smem_bytes = 1000 : i64" +
            extra + "} { llvm.return }",
        &ctx);
  };
  auto good = parse(", blasst.kv_splits = 4 : i64");
  ASSERT_TRUE(good);
  llvm::Expected<LoweredKernel> k = findLoweredKernel(*good);
  ASSERT_TRUE(bool(k)) << llvm::toString(k.takeError());
  EXPECT_EQ(k->kvSplits, 4);
  for (const char *bad :
       {", blasst.kv_splits = 4294967297 : i64", ", blasst.q_group = -1 : i64",
        ", blasst.page_size = 18446744073709551617 : i128"}) {
    auto module = parse(bad);
    ASSERT_TRUE(module) << bad;
    llvm::Expected<LoweredKernel> r = findLoweredKernel(*module);
    ASSERT_FALSE(bool(r)) << bad;
    EXPECT_NE(
        llvm::toString(r.takeError()).find("is not a count (0 to 2147483647)"),
        std::string::npos)
        << bad;
  }
}

/// A pass's options and their default values, read from its textual form
/// "name{opt1=value1 opt2=value2}" (none of our defaults has a blank).
std::map<std::string, std::string> passOptions(mlir::Pass &pass) {
  std::string text;
  llvm::raw_string_ostream os(text);
  pass.printAsTextualPipeline(os);
  std::map<std::string, std::string> options;
  size_t open = text.find('{'), close = text.rfind('}');
  if (open == std::string::npos || close == std::string::npos)
    return options;
  llvm::SmallVector<llvm::StringRef> pairs;
  llvm::StringRef(text).slice(open + 1, close).split(pairs, ' ', -1, false);
  for (llvm::StringRef pair : pairs) {
    auto [name, value] = pair.split('=');
    options[name.str()] = value.str();
  }
  return options;
}

// The knob table is the source of blasst-compile's flags, the JIT's cache key
// and the summary; the passes' options are TableGen. Every knob must be an
// option of the pass the table names, under the name it gives, with the
// default that means "the target's default" (0 or auto); and every option of
// convert-attn-to-ws except the target must be a knob under its own name.
TEST(ScheduleKnobsTest, EveryKnobIsAnOptionOfItsPass) {
  std::map<std::string, std::map<std::string, std::string>> options;
  options["convert-attn-to-ws"] = passOptions(*createConvertAttnToWS());
  options["blasst-insert-vote"] = passOptions(*ws::createBLASSTInsertVote());
  options["blasst-v-on-demand"] = passOptions(*ws::createBLASSTVOnDemand());
  options["blasst-cross-stage-p"] = passOptions(*ws::createBLASSTCrossStageP());
  ASSERT_TRUE(options["convert-attn-to-ws"].count("target"))
      << "cannot read the pass options";

  std::set<std::string> attnToWSKnobs;
  for (const ScheduleKnob &knob : kScheduleKnobs) {
    SCOPED_TRACE(knob.name);
    ASSERT_TRUE(options.count(knob.pass)) << "unknown pass " << knob.pass;
    const std::map<std::string, std::string> &passOpts = options[knob.pass];
    auto it = passOpts.find(knob.passOption);
    ASSERT_NE(it, passOpts.end())
        << knob.pass << " has no option " << knob.passOption;
    if (std::string(knob.pass) != "convert-attn-to-ws")
      continue;
    EXPECT_EQ(std::string(knob.name), knob.passOption);
    // Sizes and counts: 0 (the default / unset); switches: auto.
    EXPECT_EQ(it->second, knob.kind == KnobKind::Switch ? "auto" : "0");
    attnToWSKnobs.insert(knob.name);
  }
  for (const auto &[name, value] : options["convert-attn-to-ws"])
    if (name != "target")
      EXPECT_TRUE(attnToWSKnobs.count(name))
          << "convert-attn-to-ws option " << name
          << " is not in ScheduleKnobs.def";
}

// formatSchedule spells every knob of the table that is set, in its order.
TEST(ScheduleKnobsTest, FormatScheduleSpellsEveryKnob) {
  EXPECT_EQ(formatSchedule(ScheduleOptions()),
            "block-m=0 block-n=0 stages=0 producer-regs=0 consumer-regs=0");
  AttentionSpec sparse = *lookupPreset("llama3-8b-prefill-blasst");
  EXPECT_EQ(formatSchedule(resolveSchedule(sparse, ScheduleOptions())),
            "block-m=128 block-n=176 stages=2 producer-regs=24 "
            "consumer-regs=240 overlap=true pingpong=false persistent=false "
            "short-entry=true p-in-registers=true q-in-registers=false "
            "kv-multicast=false "
            "v-on-demand=true v-speculate-after=2");
  ScheduleOptions off;
  off.overlap = false;
  off.vOnDemand = false;
  EXPECT_EQ(formatSchedule(off), "block-m=0 block-n=0 stages=0 "
                                 "producer-regs=0 consumer-regs=0 "
                                 "overlap=false v-on-demand=false");
}

} // namespace
