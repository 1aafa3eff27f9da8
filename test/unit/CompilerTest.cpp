//===- CompilerTest.cpp - The compiler library's tables and conversions ---===//
//
// What ties the spec-level names to the IR's: the target conversion.
//
//===----------------------------------------------------------------------===//
#include "blasst/Conversion/AttnToWS/AttnToWS.h"

#include <gtest/gtest.h>

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

} // namespace
