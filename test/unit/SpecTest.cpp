//===- SpecTest.cpp - Tests of AttentionSpec ------------------------------===//
//
// The spec text is a user-facing format and also the JIT cache key, so these
// tests pin both the round trip and the wording of every error (users act on
// the line number and key the message names).
//
//===----------------------------------------------------------------------===//

#include "blasst/Spec/AttentionSpec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#ifndef BLASST_UNIT_SPEC_DIR
#error "BLASST_UNIT_SPEC_DIR must name test/unit/specs"
#endif

using namespace blasst;

namespace {

std::string specPath(const char *file) {
  return std::string(BLASST_UNIT_SPEC_DIR) + "/" + file;
}

/// Parses text that must be rejected and returns the error.
std::string parseError(const std::string &text,
                       const std::string &source = "test.spec") {
  SpecOrError r = parseSpec(text, source);
  EXPECT_FALSE(r) << "unexpectedly parsed: " << text;
  EXPECT_FALSE(r.error.empty());
  return r.error;
}

/// Parses text that must be accepted.
AttentionSpec parseOk(const std::string &text) {
  SpecOrError r = parseSpec(text, "test.spec");
  EXPECT_TRUE(r) << r.error;
  EXPECT_TRUE(r.error.empty());
  return r ? *r.spec : AttentionSpec();
}

bool contains(const std::string &haystack, const std::string &needle) {
  return haystack.find(needle) != std::string::npos;
}

#define EXPECT_CONTAINS(haystack, needle)                                      \
  EXPECT_PRED2(contains, haystack, needle)

//===----------------------------------------------------------------------===//
// Presets and round trips
//===----------------------------------------------------------------------===//

TEST(SpecPresets, NamesAreTheDocumentedOnes) {
  std::vector<std::string> expected = {
      "llama3-8b-prefill",       "llama3-8b-decode",  "llama3-70b-prefill",
      "mha-hd64-prefill",        "mha-hd128-prefill", "mqa-hd128-prefill",
      "llama3-8b-prefill-blasst"};
  EXPECT_EQ(presetNames(), expected);
}

TEST(SpecPresets, EveryPresetIsValidNamedAndRoundTrips) {
  for (const std::string &name : presetNames()) {
    SCOPED_TRACE(name);
    std::optional<AttentionSpec> p = lookupPreset(name);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->name, name);
    EXPECT_EQ(p->validate(), "");
    EXPECT_EQ(checkSupported(*p, Target::SM90a), "");

    SpecOrError back = parseSpec(p->toString(), name);
    ASSERT_TRUE(back) << back.error;
    EXPECT_EQ(*back.spec, *p);

    // `preset=<name>` alone gives the same spec.
    SpecOrError viaKey = parseSpec("preset=" + name);
    ASSERT_TRUE(viaKey) << viaKey.error;
    EXPECT_EQ(*viaKey.spec, *p);
  }
}

TEST(SpecPresets, Contents) {
  AttentionSpec l8 = *lookupPreset("llama3-8b-prefill");
  EXPECT_EQ(l8.dtype, DType::BF16);
  EXPECT_EQ(l8.headDim, 128);
  EXPECT_EQ(l8.headDimV, 128);
  EXPECT_EQ(l8.numQHeads, 32);
  EXPECT_EQ(l8.numKVHeads, 8);
  EXPECT_EQ(l8.gqaRatio(), 4);
  EXPECT_TRUE(l8.causal);
  EXPECT_EQ(l8.phase, Phase::Prefill);
  EXPECT_TRUE(l8.sparsity.isDense());
  EXPECT_FALSE(l8.stats);

  AttentionSpec dec = *lookupPreset("llama3-8b-decode");
  EXPECT_EQ(dec.phase, Phase::Decode);
  EXPECT_FALSE(dec.causal);
  EXPECT_EQ(dec.numQHeads, 32);
  EXPECT_EQ(dec.numKVHeads, 8);

  AttentionSpec l70 = *lookupPreset("llama3-70b-prefill");
  EXPECT_EQ(l70.numQHeads, 64);
  EXPECT_EQ(l70.numKVHeads, 8);
  EXPECT_TRUE(l70.causal);

  AttentionSpec mha64 = *lookupPreset("mha-hd64-prefill");
  EXPECT_EQ(mha64.headDim, 64);
  EXPECT_EQ(mha64.headDimV, 64);
  EXPECT_EQ(mha64.gqaRatio(), 1);
  EXPECT_FALSE(mha64.causal);

  AttentionSpec mha128 = *lookupPreset("mha-hd128-prefill");
  EXPECT_EQ(mha128.headDim, 128);
  EXPECT_EQ(mha128.numQHeads, 16);
  EXPECT_EQ(mha128.numKVHeads, 16);

  AttentionSpec mqa = *lookupPreset("mqa-hd128-prefill");
  EXPECT_EQ(mqa.numQHeads, 16);
  EXPECT_EQ(mqa.numKVHeads, 1);
  EXPECT_TRUE(mqa.causal);

  AttentionSpec sparse = *lookupPreset("llama3-8b-prefill-blasst");
  EXPECT_EQ(sparse.sparsity.kind, SparsityKind::ScaleFactor);
  EXPECT_EQ(sparse.sparsity.value, 256.0);
  EXPECT_TRUE(sparse.stats);
  AttentionSpec dense = sparse;
  dense.name = l8.name;
  dense.sparsity = SparsityPolicy();
  dense.stats = false;
  EXPECT_EQ(dense, l8);

  EXPECT_FALSE(lookupPreset("llama3-8b"));
  EXPECT_FALSE(lookupPreset(""));
}

TEST(SpecRoundTrip, DefaultSpec) {
  AttentionSpec d;
  EXPECT_EQ(d.validate(), "");
  EXPECT_EQ(parseOk(d.toString()), d);
  // No keys in a string means the defaults (only files reject emptiness).
  EXPECT_EQ(parseOk(""), d);
  EXPECT_EQ(parseOk("# nothing\n\n"), d);
}

TEST(SpecRoundTrip, AwkwardValuesSurvive) {
  AttentionSpec s;
  s.name = "odd=name:x";
  s.dtype = DType::F16;
  s.headDim = 96;
  s.headDimV = 64;
  s.numQHeads = 12;
  s.numKVHeads = 3;
  s.causal = true;
  s.phase = Phase::Decode;
  s.softmaxScale = 0.1; // Not exactly representable: needs all 17 digits.
  s.sparsity = {SparsityKind::LnLambda, -std::log(1000.0)};
  s.lse = true;
  s.stats = true;
  ASSERT_EQ(s.validate(), "");
  EXPECT_EQ(parseOk(s.toString()), s);

  s.softmaxScale = 1.0 / std::sqrt(96.0);
  s.sparsity = {SparsityKind::ScaleFactor, 1.0 / 3.0};
  EXPECT_EQ(parseOk(s.toString()), s);
  s.softmaxScale = std::numeric_limits<double>::denorm_min() * 1e300;
  s.sparsity = {SparsityKind::ScaleFactor, std::numeric_limits<double>::max()};
  EXPECT_EQ(parseOk(s.toString()), s);
}

TEST(SpecRoundTrip, CanonicalText) {
  AttentionSpec s = *lookupPreset("llama3-8b-prefill-blasst");
  s.softmaxScale = 0.125;
  EXPECT_EQ(s.toString(), "name=llama3-8b-prefill-blasst\n"
                          "dtype=bf16\n"
                          "head_dim=128\n"
                          "head_dim_v=128\n"
                          "q_heads=32\n"
                          "kv_heads=8\n"
                          "causal=true\n"
                          "phase=prefill\n"
                          "softmax_scale=0.125\n"
                          "sparsity=blasst:a=256\n"
                          "lse=false\n"
                          "stats=true\n");
  EXPECT_EQ(s.toShortString(),
            "dtype=bf16 head_dim=128 head_dim_v=128 q_heads=32 kv_heads=8 "
            "causal=true phase=prefill softmax_scale=0.125 "
            "sparsity=blasst:a=256 lse=false stats=true");

  // The short form parses back too (without the name).
  AttentionSpec unnamed = s;
  unnamed.name.clear();
  EXPECT_EQ(parseOk(s.toShortString()), unnamed);

  AttentionSpec d;
  EXPECT_FALSE(contains(d.toString(), "name="));
  EXPECT_CONTAINS(d.toString(), "softmax_scale=default\n");
  EXPECT_CONTAINS(d.toString(), "sparsity=none\n");
}

TEST(SpecRoundTrip, EqualityLooksAtEveryField) {
  AttentionSpec base = *lookupPreset("llama3-8b-prefill-blasst");
  std::vector<AttentionSpec> variants(12, base);
  variants[0].name = "x";
  variants[1].dtype = DType::F16;
  variants[2].headDim = 64;
  variants[3].headDimV = 64;
  variants[4].numQHeads = 16;
  variants[5].numKVHeads = 4;
  variants[6].causal = false;
  variants[7].phase = Phase::Decode;
  variants[8].softmaxScale = base.effectiveScale(); // Same value, explicit.
  variants[9].sparsity.value = 128;
  variants[10].lse = true;
  variants[11].stats = false;
  for (size_t i = 0; i < variants.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_NE(variants[i], base);
    EXPECT_FALSE(variants[i] == base);
  }
  EXPECT_EQ(base, *lookupPreset("llama3-8b-prefill-blasst"));
}

TEST(SpecRoundTrip, EffectiveScale) {
  AttentionSpec s;
  s.headDim = 64;
  s.headDimV = 64;
  EXPECT_DOUBLE_EQ(s.effectiveScale(), 0.125);
  s.headDim = 128;
  EXPECT_DOUBLE_EQ(s.effectiveScale(), 1.0 / std::sqrt(128.0));
  s.softmaxScale = 0.5;
  EXPECT_EQ(s.effectiveScale(), 0.5);
}

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

TEST(SpecParse, AllKeys) {
  AttentionSpec s = parseOk("name=mine\n"
                            "dtype=f16\n"
                            "head_dim=64\n"
                            "head_dim_v=128\n"
                            "q_heads=8\n"
                            "kv_heads=2\n"
                            "causal=1\n"
                            "phase=decode\n"
                            "softmax_scale=0.25\n"
                            "sparsity=blasst:ln_lambda=-7.5\n"
                            "lse=true\n"
                            "stats=1\n");
  EXPECT_EQ(s.name, "mine");
  EXPECT_EQ(s.dtype, DType::F16);
  EXPECT_EQ(s.headDim, 64);
  EXPECT_EQ(s.headDimV, 128);
  EXPECT_EQ(s.numQHeads, 8);
  EXPECT_EQ(s.numKVHeads, 2);
  EXPECT_TRUE(s.causal);
  EXPECT_EQ(s.phase, Phase::Decode);
  EXPECT_EQ(s.softmaxScale, 0.25);
  EXPECT_EQ(s.sparsity.kind, SparsityKind::LnLambda);
  EXPECT_EQ(s.sparsity.value, -7.5);
  EXPECT_TRUE(s.lse);
  EXPECT_TRUE(s.stats);
}

TEST(SpecParse, HeadDimVDefaultsToHeadDim) {
  EXPECT_EQ(parseOk("head_dim=64").headDimV, 64);
  EXPECT_EQ(parseOk("head_dim=64 head_dim_v=256").headDimV, 256);
  // Order does not matter.
  EXPECT_EQ(parseOk("head_dim_v=256 head_dim=64").headDimV, 256);
  // Only head_dim_v: head_dim keeps its default.
  AttentionSpec s = parseOk("head_dim_v=64");
  EXPECT_EQ(s.headDim, 128);
  EXPECT_EQ(s.headDimV, 64);
  // Over a preset as well.
  s = parseOk("preset=llama3-8b-prefill head_dim=256");
  EXPECT_EQ(s.headDim, 256);
  EXPECT_EQ(s.headDimV, 256);
}

TEST(SpecParse, CommentsCommasAndBlanks) {
  AttentionSpec s = parseOk("  # leading comment\n"
                            "\n"
                            "dtype=f16,head_dim=64 , q_heads=4,,kv_heads=2\n"
                            "\t causal=true   # trailing comment kv_heads=1\n"
                            "# lse=true\n"
                            "stats=false,\r\n"
                            "phase=prefill#no space before the comment\n");
  EXPECT_EQ(s.dtype, DType::F16);
  EXPECT_EQ(s.headDim, 64);
  EXPECT_EQ(s.numQHeads, 4);
  EXPECT_EQ(s.numKVHeads, 2);
  EXPECT_TRUE(s.causal);
  EXPECT_FALSE(s.lse);
  EXPECT_EQ(s.phase, Phase::Prefill);
}

TEST(SpecParse, PresetOverride) {
  AttentionSpec s =
      parseOk("preset=llama3-8b-prefill, dtype=f16 causal=false lse=true");
  AttentionSpec expected = *lookupPreset("llama3-8b-prefill");
  expected.dtype = DType::F16;
  expected.causal = false;
  expected.lse = true;
  EXPECT_EQ(s, expected);

  s = parseOk("# comment first is fine\npreset=mha-hd64-prefill\nname=mine");
  EXPECT_EQ(s.name, "mine");
  EXPECT_EQ(s.headDim, 64);
}

TEST(SpecParse, SoftmaxScale) {
  EXPECT_FALSE(parseOk("softmax_scale=default").softmaxScale);
  EXPECT_EQ(parseOk("softmax_scale=1e-1").softmaxScale, 0.1);
  EXPECT_EQ(parseOk("softmax_scale=0.088388347648318433").softmaxScale,
            0.088388347648318433);
}

TEST(SpecParse, EnumHelpers) {
  EXPECT_EQ(parseDType("bf16"), DType::BF16);
  EXPECT_EQ(parseDType("f16"), DType::F16);
  EXPECT_FALSE(parseDType("fp16"));
  EXPECT_FALSE(parseDType("BF16"));
  EXPECT_EQ(parsePhase("prefill"), Phase::Prefill);
  EXPECT_EQ(parsePhase("decode"), Phase::Decode);
  EXPECT_FALSE(parsePhase("Decode"));
  EXPECT_EQ(parseTarget("sm_90a"), Target::SM90a);
  EXPECT_EQ(parseTarget("sm_100a"), Target::SM100a);
  EXPECT_FALSE(parseTarget("sm_90"));
  EXPECT_FALSE(parseTarget(""));
  EXPECT_STREQ(toString(DType::BF16), "bf16");
  EXPECT_STREQ(toString(DType::F16), "f16");
  EXPECT_STREQ(toString(Phase::Prefill), "prefill");
  EXPECT_STREQ(toString(Phase::Decode), "decode");
  EXPECT_STREQ(toString(Target::SM90a), "sm_90a");
  EXPECT_STREQ(toString(Target::SM100a), "sm_100a");
  EXPECT_EQ(targetChoices(), "sm_90a or sm_100a");
  for (Target t : kAllTargets)
    EXPECT_EQ(parseTarget(toString(t)), t);
  EXPECT_EQ(dtypeBytes(DType::BF16), 2);
  EXPECT_EQ(dtypeBytes(DType::F16), 2);
}

//===----------------------------------------------------------------------===//
// Parse errors
//===----------------------------------------------------------------------===//

TEST(SpecErrors, UnknownKey) {
  std::string e = parseError("dtype=bf16\n\nfoo=1\n");
  EXPECT_CONTAINS(e, "test.spec:3: unknown key 'foo'");
  EXPECT_CONTAINS(e, "known keys: name, preset, dtype, head_dim, head_dim_v, "
                     "q_heads, kv_heads, causal, phase, softmax_scale, "
                     "sparsity, lambda_max, lse, stats");
}

TEST(SpecErrors, NotKeyValue) {
  EXPECT_CONTAINS(parseError("dtype=bf16 xyz"),
                  "test.spec:1: expected key=value, got 'xyz'");
  EXPECT_CONTAINS(parseError("\n=5"),
                  "test.spec:2: expected key=value, got '=5'");
}

TEST(SpecParse, BlanksAroundEquals) {
  SpecOrError r =
      parseSpec("dtype = f16  head_dim =64, q_heads= 8 kv_heads = 2\n"
                "sparsity = blasst:a = 32",
                "test.spec");
  ASSERT_TRUE(r) << r.error;
  EXPECT_EQ(r.spec->dtype, DType::F16);
  EXPECT_EQ(r.spec->headDim, 64);
  EXPECT_EQ(r.spec->numQHeads, 8);
  EXPECT_EQ(r.spec->numKVHeads, 2);
  EXPECT_EQ(r.spec->sparsity.kind, SparsityKind::ScaleFactor);
  EXPECT_EQ(r.spec->sparsity.value, 32.0);
}

TEST(SpecErrors, MissingValue) {
  EXPECT_CONTAINS(parseError("head_dim=64\ndtype="),
                  "test.spec:2: missing value for key 'dtype'");
}

TEST(SpecErrors, DuplicateKey) {
  std::string e = parseError("dtype=bf16\nhead_dim=64\ndtype=f16");
  EXPECT_CONTAINS(e, "test.spec:3: duplicate key 'dtype'");
  EXPECT_CONTAINS(e, "line 1");
  EXPECT_CONTAINS(parseError("lse=true, lse=true"),
                  "test.spec:1: duplicate key 'lse'");
  EXPECT_CONTAINS(parseError("preset=llama3-8b-prefill\n"
                             "preset=llama3-8b-decode"),
                  "test.spec:2: duplicate key 'preset'");
}

TEST(SpecErrors, PresetMustComeFirst) {
  EXPECT_CONTAINS(parseError("dtype=f16\npreset=llama3-8b-prefill"),
                  "test.spec:2: preset must come first");
  EXPECT_CONTAINS(parseError("preset=nope"),
                  "test.spec:1: unknown preset 'nope' (known presets: "
                  "llama3-8b-prefill, ");
}

TEST(SpecErrors, BadIntegers) {
  EXPECT_CONTAINS(parseError("head_dim=abc"),
                  "test.spec:1: invalid integer 'abc' for head_dim");
  EXPECT_CONTAINS(parseError("\nq_heads=12x"),
                  "test.spec:2: invalid integer '12x' for q_heads");
  EXPECT_CONTAINS(parseError("kv_heads=1.0"),
                  "test.spec:1: invalid integer '1.0' for kv_heads");
  EXPECT_CONTAINS(parseError("head_dim_v=0x40"),
                  "test.spec:1: invalid integer '0x40' for head_dim_v");
  // Overflow of int, and of long long.
  EXPECT_CONTAINS(parseError("head_dim=2147483648"),
                  "test.spec:1: invalid integer '2147483648' for head_dim");
  EXPECT_CONTAINS(
      parseError("head_dim=99999999999999999999999"),
      "test.spec:1: invalid integer '99999999999999999999999' for head_dim");
  EXPECT_CONTAINS(parseError("head_dim=-2147483649"),
                  "invalid integer '-2147483649' for head_dim");
}

TEST(SpecErrors, BadEnums) {
  EXPECT_CONTAINS(parseError("dtype=fp32"),
                  "test.spec:1: invalid value 'fp32' for dtype (expected "
                  "bf16|f16)");
  EXPECT_CONTAINS(parseError("phase=train"),
                  "invalid value 'train' for phase (expected prefill|decode)");
  EXPECT_CONTAINS(parseError("\n\ncausal=yes"),
                  "test.spec:3: invalid value 'yes' for causal (expected "
                  "true|false|1|0)");
  EXPECT_CONTAINS(parseError("lse=TRUE"), "invalid value 'TRUE' for lse");
  EXPECT_CONTAINS(parseError("stats=2"), "invalid value '2' for stats");
}

TEST(SpecErrors, BadFloats) {
  EXPECT_CONTAINS(parseError("softmax_scale=0.1x"),
                  "test.spec:1: invalid number '0.1x' for softmax_scale");
  EXPECT_CONTAINS(parseError("softmax_scale=1e999"),
                  "number '1e999' for softmax_scale is out of range");
  EXPECT_CONTAINS(parseError("softmax_scale=Default"),
                  "invalid number 'Default' for softmax_scale");
}

TEST(SpecErrors, SourceNameIsUsed) {
  EXPECT_CONTAINS(parseError("bogus=1", "my/file.spec"),
                  "my/file.spec:1: unknown key 'bogus'");
  EXPECT_EQ(parseSpec("bogus=1").error.rfind("<spec>:1: ", 0), 0u);
}

TEST(SpecErrors, ValidationAfterParsing) {
  EXPECT_EQ(parseError("q_heads=32 kv_heads=6"),
            "test.spec: invalid spec: q_heads 32 is not a multiple of "
            "kv_heads 6");
  EXPECT_EQ(parseError("head_dim=0"),
            "test.spec: invalid spec: head_dim 0 out of range [1, 1024]");
  EXPECT_EQ(parseError("stats=true"),
            "test.spec: invalid spec: stats need a sparsity policy");
  EXPECT_CONTAINS(parseError("softmax_scale=-1"),
                  "test.spec: invalid spec: softmax_scale must be finite and "
                  "> 0");
  EXPECT_CONTAINS(parseError("softmax_scale=0"), "softmax_scale");
  EXPECT_CONTAINS(parseError("softmax_scale=inf"), "softmax_scale");
  EXPECT_CONTAINS(parseError("softmax_scale=nan"), "softmax_scale");
}

//===----------------------------------------------------------------------===//
// Validation
//===----------------------------------------------------------------------===//

TEST(SpecValidate, Ranges) {
  AttentionSpec s;
  EXPECT_EQ(s.validate(), "");
  s.headDim = 1024;
  s.headDimV = 1;
  EXPECT_EQ(s.validate(), "");
  s.headDim = 1025;
  EXPECT_EQ(s.validate(), "head_dim 1025 out of range [1, 1024]");
  s.headDim = 128;
  s.headDimV = -1;
  EXPECT_EQ(s.validate(), "head_dim_v -1 out of range [1, 1024]");
  s.headDimV = 128;
  s.numQHeads = 0;
  EXPECT_EQ(s.validate(), "q_heads 0 out of range [1, 1024]");
  s.numQHeads = 2048;
  EXPECT_EQ(s.validate(), "q_heads 2048 out of range [1, 1024]");
  s.numQHeads = 32;
  s.numKVHeads = 0;
  EXPECT_EQ(s.validate(), "kv_heads 0 out of range [1, 1024]");
  s.numKVHeads = 64;
  EXPECT_EQ(s.validate(), "q_heads 32 is not a multiple of kv_heads 64");
  s.numKVHeads = 32;
  EXPECT_EQ(s.validate(), "");
}

TEST(SpecValidate, ScaleAndSparsity) {
  AttentionSpec s;
  s.softmaxScale = std::numeric_limits<double>::infinity();
  EXPECT_CONTAINS(s.validate(), "softmax_scale must be finite and > 0");
  s.softmaxScale = 0.0;
  EXPECT_CONTAINS(s.validate(), "softmax_scale must be finite and > 0");
  s.softmaxScale = 1e-3;
  EXPECT_EQ(s.validate(), "");

  s.sparsity = {SparsityKind::ScaleFactor, std::nan("")};
  EXPECT_CONTAINS(s.validate(), "finite");
  s.sparsity = {SparsityKind::ScaleFactor, 0.0};
  EXPECT_CONTAINS(s.validate(), "must be > 0");
  s.sparsity = {SparsityKind::LnLambda, 0.0};
  EXPECT_CONTAINS(s.validate(), "ln_lambda must be < 0");
  s.sparsity = {SparsityKind::LnLambda, -HUGE_VAL};
  EXPECT_CONTAINS(s.validate(), "finite");
  s.sparsity = {SparsityKind::LnLambda, -1e-9};
  EXPECT_EQ(s.validate(), "");

  s.stats = true;
  EXPECT_EQ(s.validate(), "");
  s.sparsity = SparsityPolicy();
  EXPECT_EQ(s.validate(), "stats need a sparsity policy");
}

TEST(SpecValidate, NameMustBeOneToken) {
  AttentionSpec s;
  s.name = "two words";
  EXPECT_CONTAINS(s.validate(), "name 'two words'");
  s.name = "a,b";
  EXPECT_NE(s.validate(), "");
  s.name = "a#b";
  EXPECT_NE(s.validate(), "");
  s.name = "a-b_c.d";
  EXPECT_EQ(s.validate(), "");
}

//===----------------------------------------------------------------------===//
// Sparsity strings
//===----------------------------------------------------------------------===//

TEST(SpecSparsity, ParseAndPrint) {
  std::string err;
  std::optional<SparsityPolicy> p = parseSparsity("none", err);
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->isDense());
  EXPECT_EQ(sparsityToString(*p), "none");

  p = parseSparsity("blasst:a=256", err);
  ASSERT_TRUE(p) << err;
  EXPECT_EQ(p->kind, SparsityKind::ScaleFactor);
  EXPECT_EQ(p->value, 256.0);
  EXPECT_EQ(sparsityToString(*p), "blasst:a=256");

  p = parseSparsity("blasst:ln_lambda=-6.5", err);
  ASSERT_TRUE(p) << err;
  EXPECT_EQ(p->kind, SparsityKind::LnLambda);
  EXPECT_EQ(p->value, -6.5);
  EXPECT_EQ(sparsityToString(*p), "blasst:ln_lambda=-6.5");

  // Shortest text that reads back exactly.
  EXPECT_EQ(sparsityToString({SparsityKind::ScaleFactor, 0.1}), "blasst:a=0.1");
  EXPECT_EQ(sparsityToString({SparsityKind::ScaleFactor, 1e-7}),
            "blasst:a=1e-07");
  EXPECT_EQ(sparsityToString({SparsityKind::ScaleFactor, 1234567.0}),
            "blasst:a=1234567");
  EXPECT_EQ(sparsityToString({SparsityKind::ScaleFactor, 1.0 / 3.0}),
            "blasst:a=0.33333333333333331");
}

TEST(SpecSparsity, RoundTripManyValues) {
  std::string err;
  for (double v :
       {1e-300, 1e-9, 0.1, 0.2, 0.3, 1.0 / 3.0, 2.0 / 3.0, 1.0, std::sqrt(2.0),
        100.0, 256.0, 1000.5, 6.02214076e23, std::numeric_limits<double>::max(),
        std::numeric_limits<double>::min()}) {
    SCOPED_TRACE(v);
    for (SparsityKind kind :
         {SparsityKind::ScaleFactor, SparsityKind::LnLambda}) {
      // ln_lambda * log2(e) must fit the kernel's float32 (KernelArgumentRanges).
      if (kind == SparsityKind::LnLambda && v > 1e38)
        continue;
      SparsityPolicy in{kind, kind == SparsityKind::LnLambda ? -v : v};
      std::optional<SparsityPolicy> out =
          parseSparsity(sparsityToString(in), err);
      ASSERT_TRUE(out) << err;
      EXPECT_EQ(*out, in);
    }
  }
}

TEST(SpecSparsity, Errors) {
  std::string err;
  EXPECT_FALSE(parseSparsity("blasst:a=-1", err));
  EXPECT_CONTAINS(err, "must be > 0");
  EXPECT_FALSE(parseSparsity("blasst:a=0", err));
  EXPECT_CONTAINS(err, "must be > 0");
  EXPECT_FALSE(parseSparsity("blasst:ln_lambda=0.5", err));
  EXPECT_CONTAINS(err, "must be < 0");
  EXPECT_FALSE(parseSparsity("blasst:a=inf", err));
  EXPECT_CONTAINS(err, "finite");
  EXPECT_FALSE(parseSparsity("blasst:ln_lambda=nan", err));
  EXPECT_CONTAINS(err, "finite");
  EXPECT_FALSE(parseSparsity("blasst:foo=1", err));
  EXPECT_CONTAINS(err, "unknown blasst parameter 'foo'");
  EXPECT_FALSE(parseSparsity("blasst:a=", err));
  EXPECT_CONTAINS(err, "missing value for blasst a");
  EXPECT_FALSE(parseSparsity("blasst:a=2x", err));
  EXPECT_CONTAINS(err, "invalid number '2x'");
  for (const char *bad : {"blasst", "blasst:", "blasst:a", "dense", "", "None",
                          "blast:a=1", "blasst:=1"}) {
    SCOPED_TRACE(bad);
    err.clear();
    EXPECT_FALSE(parseSparsity(bad, err));
    EXPECT_NE(err, "");
  }
}

TEST(SpecSparsity, ErrorsInSpecText) {
  std::string e = parseError("dtype=bf16\nsparsity=blasst:a=-1");
  EXPECT_CONTAINS(e, "test.spec:2: invalid sparsity 'blasst:a=-1'");
  EXPECT_CONTAINS(e, "must be > 0");
  EXPECT_CONTAINS(parseError("sparsity=blasst"),
                  "test.spec:1: invalid sparsity 'blasst': expected none, "
                  "blasst:a=<float> or blasst:ln_lambda=<float>");
  EXPECT_CONTAINS(parseError("sparsity=blasst:foo=1"),
                  "test.spec:1: invalid sparsity 'blasst:foo=1'");
  EXPECT_CONTAINS(parseError("sparsity=blasst:a="),
                  "test.spec:1: invalid sparsity 'blasst:a='");
}

// lambda_max: the cap on the effective lambda, in (0, 1], default 1.
TEST(SpecSparsity, LambdaMax) {
  SpecOrError r = parseSpec("sparsity=blasst:a=512 lambda_max=0.25");
  ASSERT_TRUE(r) << r.error;
  EXPECT_EQ(r.spec->sparsity.lambdaMax, 0.25);
  EXPECT_NE(r.spec->toString().find("lambda_max=0.25\n"), std::string::npos);
  // It applies after the sparsity key, in either order.
  SpecOrError before = parseSpec("lambda_max=0.25 sparsity=blasst:a=512");
  ASSERT_TRUE(before) << before.error;
  EXPECT_EQ(*before.spec, *r.spec);
  SpecOrError again = parseSpec(r.spec->toString());
  ASSERT_TRUE(again) << again.error;
  EXPECT_EQ(*again.spec, *r.spec);
  // The default is not printed: specs without the key read the same.
  SpecOrError plain = parseSpec("sparsity=blasst:a=512");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain.spec->sparsity.lambdaMax, 1.0);
  EXPECT_EQ(plain.spec->toString().find("lambda_max"), std::string::npos);
  EXPECT_NE(*plain.spec, *r.spec);
  // The threshold the kernel applies: min(log2(a / L_kv), log2(lambda_max)).
  EXPECT_DOUBLE_EQ(plain.spec->sparsity.log2Threshold(256), 0.0);
  EXPECT_DOUBLE_EQ(plain.spec->sparsity.log2Threshold(2048), -2.0);
  EXPECT_DOUBLE_EQ(r.spec->sparsity.log2Threshold(256), -2.0);
}

// Values the kernel's float32 arguments cannot represent are refused with
// the reason; numbers beyond a double's range say so (not "invalid").
TEST(SpecValidate, KernelArgumentRanges) {
  EXPECT_CONTAINS(parseError("softmax_scale=1e300"),
                  "softmax_scale 1e+300 is out of range: the kernel takes "
                  "softmax_scale * log2(e) as a float32");
  EXPECT_CONTAINS(parseError("softmax_scale=1e-39"),
                  "softmax_scale 1e-39 is out of range");
  EXPECT_TRUE(parseSpec("softmax_scale=1e-30"));
  EXPECT_TRUE(parseSpec("softmax_scale=1e30"));
  EXPECT_CONTAINS(parseError("sparsity=blasst:ln_lambda=-1e308"),
                  "sparsity ln_lambda = -1e+308 is out of range: the kernel "
                  "takes ln_lambda * log2(e) as a float32");
  EXPECT_TRUE(parseSpec("sparsity=blasst:ln_lambda=-1e30"));
  EXPECT_CONTAINS(parseError("softmax_scale=1e-320"),
                  "number '1e-320' for softmax_scale is out of range");
  EXPECT_CONTAINS(parseError("sparsity=blasst:a=1e400"),
                  "number '1e400' for blasst a is out of range");
  EXPECT_CONTAINS(parseError("lambda_max=1e-320 sparsity=blasst:a=1"),
                  "number '1e-320' for lambda_max is out of range");
}

TEST(SpecSparsity, LambdaMaxErrors) {
  EXPECT_CONTAINS(parseError("sparsity=blasst:a=1 lambda_max=2"),
                  "lambda_max must be in (0, 1], got 2");
  EXPECT_CONTAINS(parseError("sparsity=blasst:a=1 lambda_max=0"),
                  "lambda_max must be in (0, 1], got 0");
  EXPECT_CONTAINS(parseError("sparsity=blasst:a=1 lambda_max=nan"),
                  "lambda_max");
  EXPECT_CONTAINS(parseError("lambda_max=0.5"),
                  "lambda_max needs a sparsity policy");
  EXPECT_CONTAINS(parseError("sparsity=blasst:ln_lambda=-1 lambda_max=0.1"),
                  "sparsity ln_lambda = -1 is above the cap ln(lambda_max)");
  EXPECT_CONTAINS(parseError("sparsity=blasst:a=1 lambda_max=x"),
                  "invalid number 'x' for lambda_max");
}

//===----------------------------------------------------------------------===//
// Target support
//===----------------------------------------------------------------------===//

TEST(SpecSupport, HeadDims) {
  AttentionSpec s;
  for (int d : {64, 128, 256}) {
    s.headDim = s.headDimV = d;
    EXPECT_EQ(checkSupported(s, Target::SM90a), "") << d;
  }
  s.headDim = s.headDimV = 96;
  EXPECT_EQ(checkSupported(s, Target::SM90a),
            "head_dim 96 is not supported on sm_90a: supported 64, 128, 256");
  EXPECT_EQ(checkSupported(s, Target::SM100a),
            "head_dim 96 is not supported on sm_100a: supported 64, 128, 256");
  s.headDim = 128;
  s.headDimV = 64;
  EXPECT_CONTAINS(checkSupported(s, Target::SM90a),
                  "head_dim 128 != head_dim_v 64");
}

TEST(SpecSupport, Sm100TensorMemory) {
  AttentionSpec s;
  s.headDim = s.headDimV = 256;
  EXPECT_EQ(checkSupported(s, Target::SM90a), "");
  EXPECT_CONTAINS(checkSupported(s, Target::SM100a),
                  "tensor memory holds at most 512 columns: S/P (2x128) + O "
                  "(2x256) exceed it");
  s.headDim = s.headDimV = 128;
  EXPECT_EQ(checkSupported(s, Target::SM100a), "");
}

TEST(SpecSupport, DtypesAndPhases) {
  AttentionSpec s;
  s.dtype = DType::F16;
  EXPECT_EQ(checkSupported(s, Target::SM90a), "");
  s.phase = Phase::Decode;
  EXPECT_EQ(checkSupported(s, Target::SM90a), "");
  EXPECT_EQ(checkSupported(s, Target::SM100a),
            "phase = decode is not implemented on sm_100a yet (the decode "
            "schedule is sm_90a's)");
  // Decode packs a kv head's q heads into one 64-row tile.
  AttentionSpec d = s;
  d.headDim = d.headDimV = 256;
  EXPECT_EQ(checkSupported(d, Target::SM90a), "");
  d = s;
  d.numQHeads = 24; // 3 per kv head: 21 tokens per tile, 1 padding row
  EXPECT_EQ(checkSupported(d, Target::SM90a), "");
  d.numQHeads = 56; // 7 per kv head
  EXPECT_EQ(checkSupported(d, Target::SM90a), "");
  d.numQHeads = 65 * 8;
  EXPECT_CONTAINS(checkSupported(d, Target::SM90a),
                  "q_heads / kv_heads = 65 is not supported with phase = "
                  "decode: the q heads of a kv head are packed into one "
                  "64-row tile, so at most 64 of them");
  d.numQHeads = 128;
  d.numKVHeads = 1;
  EXPECT_CONTAINS(checkSupported(d, Target::SM90a),
                  "q_heads / kv_heads = 128 is not supported");
  d.numQHeads = 64;
  EXPECT_EQ(checkSupported(d, Target::SM90a), "");
  // BLASST decode (votes over the packed rows, V on demand).
  s.sparsity = {SparsityKind::ScaleFactor, 256};
  EXPECT_EQ(checkSupported(s, Target::SM90a), "");
  s.phase = Phase::Prefill;
  EXPECT_EQ(checkSupported(s, Target::SM90a), "");
}

// The decode KV caches: kv_lengths and kv_cache parse, print (only when
// not the defaults) and round-trip; bad values, other engines' spellings,
// bad page sizes and prefill are refused by name; BLASST decode takes them.
TEST(SpecFiles, KVCacheKeys) {
  SpecOrError r =
      parseSpec("phase=decode kv_lengths=per_sequence kv_cache=paged:page=64",
                "s");
  ASSERT_TRUE(r) << r.error;
  EXPECT_TRUE(r.spec->kvPerSequence);
  EXPECT_EQ(r.spec->kvPageSize, 64);
  std::string text = r.spec->toString();
  EXPECT_CONTAINS(text, "kv_lengths=per_sequence\nkv_cache=paged:page=64\n");
  SpecOrError again = parseSpec(text, "t");
  ASSERT_TRUE(again) << again.error;
  EXPECT_EQ(*again.spec, *r.spec);
  EXPECT_NE(*r.spec, *parseSpec("phase=decode", "u").spec);
  // Defaults print nothing: other specs' text (and JIT keys) are unchanged.
  AttentionSpec plain;
  EXPECT_EQ(plain.toString().find("kv_lengths"), std::string::npos);
  EXPECT_EQ(plain.toString().find("kv_cache"), std::string::npos);
  r = parseSpec("phase=decode kv_cache=contiguous kv_lengths=uniform", "s");
  ASSERT_TRUE(r) << r.error;
  EXPECT_EQ(*r.spec, *parseSpec("phase=decode", "u").spec);

  r = parseSpec("phase=decode page_size=64", "s");
  ASSERT_FALSE(r);
  EXPECT_CONTAINS(r.error, "unknown key 'page_size' (a paged KV cache is "
                           "'kv_cache=paged:page=<n>'");
  r = parseSpec("phase=decode kv_lengths=ragged", "s");
  ASSERT_FALSE(r);
  EXPECT_CONTAINS(r.error, "invalid value 'ragged' for kv_lengths (expected "
                           "uniform|per_sequence)");
  r = parseSpec("phase=decode kv_cache=paged:64", "s");
  ASSERT_FALSE(r);
  EXPECT_CONTAINS(r.error, "(expected contiguous|paged:page=<n>)");
  for (const char *bad : {"8", "48", "512", "0"}) {
    r = parseSpec(std::string("phase=decode kv_cache=paged:page=") + bad, "s");
    ASSERT_FALSE(r) << bad;
    EXPECT_CONTAINS(r.error, "is not supported: a power of two from 16 to 256");
  }
  AttentionSpec prefill;
  prefill.kvPerSequence = true;
  EXPECT_CONTAINS(checkSupported(prefill, Target::SM90a),
                  "kv_lengths = per_sequence is not supported with phase = "
                  "prefill");
  prefill.kvPerSequence = false;
  prefill.kvPageSize = 64;
  EXPECT_CONTAINS(checkSupported(prefill, Target::SM90a),
                  "a paged kv_cache is not supported with phase = prefill");
  AttentionSpec decode = prefill;
  decode.phase = Phase::Decode;
  EXPECT_EQ(checkSupported(decode, Target::SM90a), "");
  // BLASST decode takes both caches (on-demand V copies through the table).
  decode.sparsity = {SparsityKind::LnLambda, -8.0};
  EXPECT_EQ(checkSupported(decode, Target::SM90a), "");
  decode.kvPerSequence = true;
  EXPECT_EQ(checkSupported(decode, Target::SM90a), "");
  decode.kvPageSize = 0;
  EXPECT_EQ(checkSupported(decode, Target::SM90a), "");
}

TEST(SpecSupport, InvalidSpecsAreReportedFirst) {
  AttentionSpec s;
  s.headDim = s.headDimV = 96;
  s.numKVHeads = 5;
  EXPECT_EQ(checkSupported(s, Target::SM90a),
            "q_heads 32 is not a multiple of kv_heads 5");
}

//===----------------------------------------------------------------------===//
// Spec files
//===----------------------------------------------------------------------===//

TEST(SpecFiles, Good) {
  SpecOrError r = parseSpecFile(specPath("good.spec"));
  ASSERT_TRUE(r) << r.error;
  AttentionSpec expected = *lookupPreset("llama3-8b-prefill-blasst");
  expected.name = "good-spec";
  EXPECT_EQ(*r.spec, expected);
}

TEST(SpecFiles, UnknownKey) {
  std::string path = specPath("unknown-key.spec");
  SpecOrError r = parseSpecFile(path);
  ASSERT_FALSE(r);
  EXPECT_CONTAINS(r.error, path + ":3: unknown key 'head_dims'");
}

TEST(SpecFiles, BadRatio) {
  std::string path = specPath("bad-ratio.spec");
  SpecOrError r = parseSpecFile(path);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error, path + ": invalid spec: q_heads 32 is not a multiple of "
                            "kv_heads 6");
}

TEST(SpecFiles, Empty) {
  std::string path = specPath("empty.spec");
  SpecOrError r = parseSpecFile(path);
  ASSERT_FALSE(r);
  EXPECT_CONTAINS(r.error, "spec file has no keys");
  EXPECT_CONTAINS(r.error, path);
}

TEST(SpecFiles, Missing) {
  std::string path = specPath("does-not-exist.spec");
  SpecOrError r = parseSpecFile(path);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error,
            "cannot open spec file '" + path + "': No such file or directory");
}

// A binary file's bytes reach the terminal escaped, never raw: control and
// non-ASCII bytes as \xNN, long tokens cut after 64 bytes.
TEST(SpecMessages, EscapeBytes) {
  EXPECT_EQ(escapeForMessage(std::string("a\x01\x1b[0m\\\xff", 8)),
            "a\\x01\\x1b[0m\\\\\\xff");
  EXPECT_EQ(quoteForMessage("bf16"), "'bf16'");
  EXPECT_EQ(quoteForMessage(std::string(70, 'x')),
            "'" + std::string(64, 'x') + "'... (70 bytes)");

  SpecOrError r = parseSpec(std::string("dtype=bf\x07\x1b[31m\n"), "f.spec");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error, "f.spec:1: invalid value 'bf\\x07\\x1b[31m' for dtype "
                     "(expected bf16|f16)");
  r = parseSpec(std::string("\x80\x01=1"), "f.spec");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error, "f.spec:1: unknown key '\\x80\\x01' (known keys: " +
                         r.error.substr(r.error.find("known keys: ") + 12));
  for (char c : r.error)
    EXPECT_TRUE(c >= 0x20 && c < 0x7f) << r.error;
  // The name is echoed in progress messages: printable ASCII only.
  r = parseSpec(std::string("name=a\x1b[2Jb"), "f.spec");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error, "f.spec: invalid spec: name 'a\\x1b[2Jb' must be "
                     "printable ASCII (letters, digits, '-', '_', ...)");
}

} // namespace
