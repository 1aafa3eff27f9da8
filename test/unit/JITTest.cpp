//===- JITTest.cpp - The host JIT: compile, cache, errors, run ------------===//
//
// Compiles small specs into temporary cache directories. The cubin tests need
// ptxas and are skipped (with the reason) without it; no test needs a GPU.
//
//===----------------------------------------------------------------------===//
#include "blasst/JIT/JIT.h"
#include "blasst/Compiler/Frontend.h"
#include "blasst/Conversion/AttnToWS/AttnToWS.h"
#include "blasst/Target/Target.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sys/file.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace blasst;
namespace fs = llvm::sys::fs;

namespace {

constexpr Target kSM90 = Target::SM90a;

/// The smallest preset (head_dim 64), renamed so entries are recognisable.
AttentionSpec smallSpec() {
  AttentionSpec spec = *lookupPreset("mha-hd64-prefill");
  spec.name = "jit-test";
  return spec;
}

std::string slurp(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void spit(const std::string &path, const std::string &data) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << data;
}

std::set<std::string> listDir(const std::string &dir) {
  std::set<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec))
    names.insert(llvm::sys::path::filename(it->path()).str());
  return names;
}

/// Every regular file below `dir`, as paths relative to it.
std::set<std::string> filesBelow(const std::string &dir) {
  std::set<std::string> names;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec))
    if (fs::is_regular_file(it->path()))
      names.insert(it->path().substr(dir.size() + 1));
  return names;
}

/// The files of one cache entry.
std::set<std::string> entryFiles(const std::string &key) {
  return {key + ".cubin", key + ".lock", key + ".meta", key + ".spec"};
}

/// The offset of the middle of the cubin's code section for `kernel`
/// (".text.<kernel>"), found through the ELF section headers; 0 if absent.
size_t codeOffset(const std::string &elf, const std::string &kernel) {
  auto u16 = [&](size_t at) {
    return size_t(uint8_t(elf[at])) | size_t(uint8_t(elf[at + 1])) << 8;
  };
  auto u32 = [&](size_t at) { return u16(at) | u16(at + 2) << 16; };
  auto u64 = [&](size_t at) { return u32(at) | u32(at + 4) << 32; };
  size_t shoff = u64(40), shnum = u16(60), shstrndx = u16(62);
  size_t names = u64(shoff + shstrndx * 64 + 24);
  for (size_t i = 0; i < shnum; ++i) {
    size_t sh = shoff + i * 64;
    std::string name = elf.c_str() + names + u32(sh);
    if (name == ".text." + kernel)
      return u64(sh + 24) + u64(sh + 32) / 2;
  }
  return 0;
}

/// Compiles or fails the test with the error text.
jit::CompiledKernel mustCompile(const AttentionSpec &spec,
                                const jit::CompileOptions &opts,
                                Target target = kSM90) {
  llvm::Expected<jit::CompiledKernel> ck = jit::compile(spec, target, opts);
  if (!ck) {
    ADD_FAILURE() << llvm::toString(ck.takeError());
    return {};
  }
  return std::move(*ck);
}

/// The error text of a compile that must fail.
std::string compileError(const AttentionSpec &spec, Target target,
                         const jit::CompileOptions &opts = {}) {
  llvm::Expected<jit::CompiledKernel> ck = jit::compile(spec, target, opts);
  if (ck) {
    ADD_FAILURE() << "compile unexpectedly succeeded";
    return "";
  }
  return llvm::toString(ck.takeError());
}

/// A fresh cache directory per test; skips when ptxas is missing.
class JITCacheTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string why;
    if (findPtxas(&why).empty())
      GTEST_SKIP() << "cannot build cubins here: " << why;
    llvm::SmallString<128> p;
    ASSERT_FALSE(fs::createUniqueDirectory("blasst-jit-test", p));
    dir = std::string(p);
  }
  void TearDown() override {
    if (!dir.empty())
      fs::remove_directories(dir);
  }
  jit::CompileOptions options() const {
    jit::CompileOptions o;
    o.cacheDir = dir;
    return o;
  }
  std::string stem(const std::string &key) const { return dir + "/" + key; }

  std::string dir;
};

} // namespace

//===----------------------------------------------------------------------===//
// No ptxas needed
//===----------------------------------------------------------------------===//

TEST(JIT, Supports) {
  AttentionSpec spec = smallSpec();
  EXPECT_EQ(jit::supports(spec, kSM90), "");
  EXPECT_EQ(jit::supports(spec, Target::SM100a), "");

  AttentionSpec hd96 = spec;
  hd96.headDim = hd96.headDimV = 96;
  EXPECT_EQ(jit::supports(hd96, kSM90),
            checkSupported(hd96, blasst::Target::SM90a));
  EXPECT_NE(jit::supports(hd96, kSM90).find("head_dim 96"), std::string::npos);
  // sm_100a refuses what its lowering does not build, with the reason.
  AttentionSpec hd256 = spec;
  hd256.headDim = hd256.headDimV = 256;
  EXPECT_EQ(jit::supports(hd256, Target::SM100a),
            checkSupported(hd256, Target::SM100a));
  EXPECT_NE(jit::supports(hd256, Target::SM100a).find("tensor memory"),
            std::string::npos);
  AttentionSpec decode = spec;
  decode.phase = Phase::Decode;
  EXPECT_NE(jit::supports(decode, Target::SM100a).find("decode"),
            std::string::npos);
  // BLASST decode with per-sequence lengths and a paged cache (sm_90a).
  AttentionSpec bkv = decode;
  bkv.sparsity = {SparsityKind::LnLambda, -8.0};
  bkv.kvPerSequence = true;
  bkv.kvPageSize = 64;
  EXPECT_EQ(jit::supports(bkv, kSM90), "");
}

TEST(JIT, UnsupportedIsAnErrorWithTheReason) {
  AttentionSpec hd96 = smallSpec();
  hd96.headDim = hd96.headDimV = 96;
  std::string err = compileError(hd96, kSM90);
  EXPECT_NE(err.find("cannot compile 'jit-test' for sm_90a"), std::string::npos)
      << err;
  EXPECT_NE(err.find(jit::supports(hd96, kSM90)), std::string::npos) << err;

  AttentionSpec hd256 = smallSpec();
  hd256.headDim = hd256.headDimV = 256;
  err = compileError(hd256, Target::SM100a);
  EXPECT_NE(err.find("cannot compile 'jit-test' for sm_100a"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find(jit::supports(hd256, Target::SM100a)), std::string::npos)
      << err;

  AttentionSpec invalid = smallSpec();
  invalid.numKVHeads = 3; // does not divide 16
  err = compileError(invalid, kSM90);
  EXPECT_NE(err.find(invalid.validate()), std::string::npos) << err;
}

TEST(JIT, MLIRDiagnosticsAreInTheError) {
  // Schedules the verifier rejects: the error carries the ws.kernel
  // verifier's diagnostic with its location, not just "failed".
  jit::CompileOptions opts;
  opts.useCache = false;
  opts.schedule.stages = 8; // 8 K/V stages overflow shared memory
  std::string err = compileError(smallSpec(), kSM90, opts);
  EXPECT_NE(err.find("lowering to ws IR failed"), std::string::npos) << err;
  EXPECT_NE(err.find("jit:jit_test: error: 'ws.kernel' op shared memory "
                     "buffers need"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("'attn.attention' op the sm_90a schedule for this spec "
                     "is invalid"),
            std::string::npos)
      << err;

  // Tile sizes the schedule cannot build are named as the knob the caller
  // set (the verifier would name the wgmma with derived sizes).
  opts.schedule = {};
  opts.schedule.blockM = 7;
  err = compileError(smallSpec(), kSM90, opts);
  EXPECT_NE(err.find("jit:jit_test: error: schedule option block-m=7: query "
                     "rows per CTA must be a positive multiple of 64"),
            std::string::npos)
      << err;
  opts.schedule.blockM = 64;
  err = compileError(smallSpec(), kSM90, opts);
  EXPECT_NE(err.find("schedule option block-m=64: the sm_90a schedule splits "
                     "block_m between two consumer warpgroups"),
            std::string::npos)
      << err;
}

TEST(JIT, CacheKeys) {
  AttentionSpec spec = smallSpec();
  std::string key = jit::cacheKey(spec, kSM90);
  ASSERT_EQ(key.size(), 64u);
  EXPECT_EQ(key.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(jit::cacheKey(spec, kSM90), key) << "deterministic";

  // Explicit default knobs are the same kernel, hence the same key; the
  // target field of the knobs is ignored.
  ScheduleOptions defaults = resolveSchedule(spec, ScheduleOptions());
  defaults.target = Target::SM100a;
  EXPECT_EQ(jit::cacheKey(spec, kSM90, defaults), key);

  std::set<std::string> keys{key};
  auto distinct = [&](const std::string &k, const char *what) {
    EXPECT_TRUE(keys.insert(k).second) << what << " gives a known key";
  };
  AttentionSpec s = spec;
  s.causal = !s.causal;
  distinct(jit::cacheKey(s, kSM90), "causal");
  s = spec;
  s.name = "jit-test-2";
  distinct(jit::cacheKey(s, kSM90), "name (the kernel's symbol)");
  s = spec;
  s.lse = true;
  distinct(jit::cacheKey(s, kSM90), "lse");
  s = spec;
  s.softmaxScale = 0.125;
  distinct(jit::cacheKey(s, kSM90), "softmax_scale");
  distinct(jit::cacheKey(spec, Target::SM100a), "target");
  for (auto [field, value] : {std::pair<int64_t ScheduleOptions::*, int64_t>{
                                  &ScheduleOptions::blockN, 64},
                              {&ScheduleOptions::stages, 3},
                              {&ScheduleOptions::producerRegs, 40},
                              {&ScheduleOptions::consumerRegs, 232}}) {
    ScheduleOptions knobs;
    knobs.*field = value;
    distinct(jit::cacheKey(spec, kSM90, knobs), "a schedule knob");
  }

  // Decode: the phase is another kernel, and so is a compiled-in KV split
  // count (kv-splits; unset: chosen at launch).
  AttentionSpec decode = spec;
  decode.phase = Phase::Decode;
  std::string decodeKey = jit::cacheKey(decode, kSM90);
  distinct(decodeKey, "phase = decode");
  ScheduleOptions splits;
  splits.kvSplits = 4;
  distinct(jit::cacheKey(decode, kSM90, splits), "kv_splits = 4");
  // The KV caches are other kernels.
  AttentionSpec perSeq = decode;
  perSeq.kvPerSequence = true;
  distinct(jit::cacheKey(perSeq, kSM90), "kv_lengths = per_sequence");
  AttentionSpec paged = perSeq;
  paged.kvPageSize = 64;
  distinct(jit::cacheKey(paged, kSM90), "kv_cache = paged:page=64");
  paged.kvPageSize = 16;
  distinct(jit::cacheKey(paged, kSM90), "kv_cache = paged:page=16");
  // BLASST decode with them: other kernels again (and apart from dense).
  for (AttentionSpec kv : {perSeq, paged}) {
    kv.sparsity = {SparsityKind::LnLambda, -8.0};
    distinct(jit::cacheKey(kv, kSM90), "BLASST decode with a KV cache");
    kv.sparsity = {SparsityKind::ScaleFactor, 64};
    distinct(jit::cacheKey(kv, kSM90), "BLASST decode (a=) with a KV cache");
  }
  // BLASST decode: the vote on each split's first block is on with the sink
  // seed (asking for it is the same kernel); off is another kernel.
  AttentionSpec bdecode = decode;
  bdecode.sparsity = {SparsityKind::LnLambda, -8.0};
  std::string bdecodeKey = jit::cacheKey(bdecode, kSM90);
  distinct(bdecodeKey, "BLASST decode");
  ScheduleOptions first;
  first.voteFirstBlock = true;
  EXPECT_EQ(jit::cacheKey(bdecode, kSM90, first), bdecodeKey);
  first.voteFirstBlock = false;
  distinct(jit::cacheKey(bdecode, kSM90, first), "vote-first-block=false");

  // V on demand: on by default for BLASST on the sm_90a overlap schedule
  // (asking for it is the same kernel), off is another kernel; dense specs
  // resolve it off.
  AttentionSpec sparse = spec;
  sparse.sparsity.kind = SparsityKind::LnLambda;
  sparse.sparsity.value = -8.0;
  ScheduleOptions on, off;
  on.vOnDemand = true;
  off.vOnDemand = false;
  EXPECT_TRUE(*resolveSchedule(sparse, ScheduleOptions()).vOnDemand);
  EXPECT_FALSE(*resolveSchedule(spec, ScheduleOptions()).vOnDemand);
  std::string sparseKey = jit::cacheKey(sparse, kSM90);
  EXPECT_EQ(jit::cacheKey(sparse, kSM90, on), sparseKey);
  distinct(sparseKey, "a sparsity policy");
  distinct(jit::cacheKey(sparse, kSM90, off), "v_on_demand=false");
  ScheduleOptions pingpong;
  pingpong.pingpong = true;
  EXPECT_FALSE(*resolveSchedule(sparse, pingpong).vOnDemand)
      << "not by default with ping-pong";

  // The speculation depth: 2 where V on demand is on (asking for 2 is the
  // same kernel), unset where it is off; another depth is another kernel,
  // and asking for one asks for V on demand.
  EXPECT_EQ(resolveSchedule(sparse, ScheduleOptions()).vSpeculateAfter,
            std::optional<int64_t>(2));
  EXPECT_FALSE(resolveSchedule(spec, ScheduleOptions()).vSpeculateAfter);
  ScheduleOptions two, wait;
  two.vSpeculateAfter = 2;
  wait.vSpeculateAfter = 0;
  EXPECT_EQ(jit::cacheKey(sparse, kSM90, two), sparseKey);
  distinct(jit::cacheKey(sparse, kSM90, wait), "v_speculate_after=0");
  pingpong.vSpeculateAfter = 1;
  EXPECT_TRUE(*resolveSchedule(sparse, pingpong).vOnDemand)
      << "a speculation depth asks for V on demand";

  // The K copy depth that follows the decisions: another depth or run is
  // another kernel (the key names it), unset is the pass's default.
  ScheduleOptions kept3, run2;
  kept3.kKeptAhead = 3;
  run2.kKeptRun = 2;
  distinct(jit::cacheKey(sparse, kSM90, kept3), "k_kept_ahead=3");
  distinct(jit::cacheKey(sparse, kSM90, run2), "k_kept_run=2");

  // Decode's KV splits: BLASST decode interleaves single blocks by default
  // (asking for that is the same kernel), dense decode takes contiguous
  // ranges; another chunk or contiguous BLASST splits are other kernels.
  AttentionSpec dec = sparse, denseDec = spec;
  dec.phase = denseDec.phase = Phase::Decode;
  EXPECT_TRUE(*resolveSchedule(dec, ScheduleOptions()).splitInterleave);
  EXPECT_EQ(resolveSchedule(dec, ScheduleOptions()).splitChunk,
            std::optional<int64_t>(1));
  EXPECT_FALSE(*resolveSchedule(denseDec, ScheduleOptions()).splitInterleave);
  EXPECT_FALSE(resolveSchedule(spec, ScheduleOptions()).splitInterleave)
      << "prefill: left unset";
  std::string decKey = jit::cacheKey(dec, kSM90);
  ScheduleOptions chunk1, chunk4, contiguous;
  chunk1.splitChunk = 1;
  chunk4.splitChunk = 4;
  contiguous.splitInterleave = false;
  EXPECT_EQ(jit::cacheKey(dec, kSM90, chunk1), decKey);
  distinct(jit::cacheKey(dec, kSM90, chunk4), "split_chunk=4");
  distinct(jit::cacheKey(dec, kSM90, contiguous), "split_interleave=false");

  // Cross-stage P on sm_100a: on by default with depth 4 (dense and
  // BLASST) and hold 1 / 4 (asking for them is the same kernel); off, another
  // depth or another hold schedule is another kernel. sm_90a keys leave it
  // out.
  std::string b200 = jit::cacheKey(spec, Target::SM100a);
  ScheduleOptions cspOn, cspOff, depth2, holdA2, holdB1;
  cspOn.crossStageP = true;
  cspOn.crossStagePDepth = 4;
  cspOn.crossStagePHoldA = 1;
  cspOn.crossStagePHoldB = 4;
  cspOff.crossStageP = false;
  depth2.crossStagePDepth = 2;
  holdA2.crossStagePHoldA = 2;
  holdB1.crossStagePHoldB = 1;
  EXPECT_EQ(jit::cacheKey(spec, Target::SM100a, cspOn), b200);
  distinct(jit::cacheKey(spec, Target::SM100a, cspOff), "cross_stage_p=false");
  distinct(jit::cacheKey(spec, Target::SM100a, depth2), "cross_stage_p_depth");
  distinct(jit::cacheKey(spec, Target::SM100a, holdA2), "cross_stage_p_hold_a");
  distinct(jit::cacheKey(spec, Target::SM100a, holdB1), "cross_stage_p_hold_b");
  ScheduleOptions resolved;
  resolved.target = Target::SM100a;
  resolveCrossStageP(spec, resolved);
  EXPECT_EQ(formatSchedule(resolved),
            "block-m=0 block-n=0 stages=0 producer-regs=0 consumer-regs=0 "
            "cross-stage-p=true cross-stage-p-depth=4 cross-stage-p-hold-a=1 "
            "cross-stage-p-hold-b=4");
  ScheduleOptions hopper, blasst100;
  resolveCrossStageP(spec, hopper);
  EXPECT_FALSE(hopper.crossStageP) << "sm_90a: left unset";
  blasst100.target = Target::SM100a;
  resolveCrossStageP(sparse, blasst100);
  EXPECT_EQ(formatSchedule(blasst100),
            "block-m=0 block-n=0 stages=0 producer-regs=0 consumer-regs=0 "
            "cross-stage-p=true cross-stage-p-depth=4 cross-stage-p-hold-a=1 "
            "cross-stage-p-hold-b=4")
      << "BLASST: on too, with depth 4 as for dense kernels";
  ScheduleOptions sparseDepth4, sparseDepth2;
  sparseDepth4.crossStagePDepth = 4;
  sparseDepth2.crossStagePDepth = 2;
  EXPECT_EQ(jit::cacheKey(sparse, Target::SM100a, sparseDepth4),
            jit::cacheKey(sparse, Target::SM100a))
      << "BLASST: asking for depth 4 is the default kernel";
  distinct(jit::cacheKey(sparse, Target::SM100a, sparseDepth2),
           "cross_stage_p_depth");
}

TEST(JIT, CacheDirResolution) {
  struct SavedEnv {
    const char *name;
    std::optional<std::string> value;
    explicit SavedEnv(const char *n) : name(n) {
      if (const char *v = std::getenv(n))
        value = v;
    }
    ~SavedEnv() {
      if (value)
        setenv(name, value->c_str(), 1);
      else
        unsetenv(name);
    }
  } a("BLASST_CACHE_DIR"), b("XDG_CACHE_HOME"), c("HOME");

  setenv("HOME", "/h", 1);
  unsetenv("XDG_CACHE_HOME");
  unsetenv("BLASST_CACHE_DIR");
  EXPECT_EQ(jit::cacheDir(), "/h/.cache/blasst");
  setenv("XDG_CACHE_HOME", "/x", 1);
  EXPECT_EQ(jit::cacheDir(), "/x/blasst");
  setenv("BLASST_CACHE_DIR", "/b", 1);
  EXPECT_EQ(jit::cacheDir(), "/b");
  jit::setDefaultCacheDir("/d");
  EXPECT_EQ(jit::cacheDir(), "/d");
  jit::CompileOptions opts;
  opts.cacheDir = "/o";
  EXPECT_EQ(jit::cacheDir(opts), "/o");
  jit::setDefaultCacheDir("");
  EXPECT_EQ(jit::cacheDir(), "/b");
  unsetenv("BLASST_CACHE_DIR");
  unsetenv("XDG_CACHE_HOME");
  unsetenv("HOME");
  EXPECT_EQ(jit::cacheDir(), "");
}

//===----------------------------------------------------------------------===//
// Cubins and the cache
//===----------------------------------------------------------------------===//

TEST_F(JITCacheTest, BLASSTLoadsVOnDemand) {
  // A BLASST spec through the JIT: V on demand by default (the resolved
  // schedule says so, ptxas reports no spills), the explicit knob is a cache
  // hit, and off is a separate kernel.
  AttentionSpec sparse = smallSpec();
  sparse.sparsity.kind = SparsityKind::LnLambda;
  sparse.sparsity.value = -8.0;
  jit::CompiledKernel first = mustCompile(sparse, options());
  ASSERT_FALSE(first.cubin.empty());
  EXPECT_TRUE(first.schedule.vOnDemand.value_or(false));
  EXPECT_NE(first.ptxasLog.find("0 bytes spill stores"), std::string::npos)
      << first.ptxasLog;
  jit::CompileOptions on = options();
  on.schedule.vOnDemand = true;
  EXPECT_TRUE(mustCompile(sparse, on).fromCache);
  jit::CompileOptions off = options();
  off.schedule.vOnDemand = false;
  jit::CompiledKernel without = mustCompile(sparse, off);
  EXPECT_FALSE(without.fromCache);
  EXPECT_NE(without.cacheKey, first.cacheKey);
  EXPECT_NE(without.cubin, first.cubin);
}

TEST_F(JITCacheTest, CompilesDecode) {
  // Decode through the JIT (the Python op's path): the resolved schedule's
  // block_m 64 (one consumer) is accepted, with and without a KV cache.
  AttentionSpec decode = smallSpec();
  decode.phase = Phase::Decode;
  jit::CompiledKernel dense = mustCompile(decode, options());
  ASSERT_FALSE(dense.cubin.empty());
  EXPECT_EQ(dense.info.blockM, 64);
  EXPECT_TRUE(dense.info.splitKV);
  EXPECT_NE(dense.ptxasLog.find("0 bytes spill stores"), std::string::npos)
      << dense.ptxasLog;
  AttentionSpec paged = decode;
  paged.kvPerSequence = true;
  paged.kvPageSize = 32;
  jit::CompiledKernel kv = mustCompile(paged, options());
  EXPECT_EQ(kv.info.pageSize, 32);
  EXPECT_TRUE(kv.info.perSeqKV);
}

// A cold compile that finds another compile of the kernel holding the
// entry's lock says so when its wait begins (it may last up to 600 s), and
// uses that compile's entry once the lock is free.
TEST_F(JITCacheTest, WaitingForTheEntryLockIsReported) {
  AttentionSpec spec = smallSpec();
  jit::CompileOptions opts = options();
  opts.verbose = true;
  std::string key = jit::cacheKey(spec, kSM90);
  mustCompile(spec, options()); // the entry the waiter will find
  int fd = ::open((stem(key) + ".lock").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  fs::remove(stem(key) + ".meta"); // cold again: the waiter must lock
  std::thread release([fd] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ::close(fd);
  });
  ::testing::internal::CaptureStderr();
  jit::CompiledKernel ck = mustCompile(spec, opts);
  std::string err = ::testing::internal::GetCapturedStderr();
  release.join();
  EXPECT_NE(err.find("waiting for " + stem(key) +
                     ".lock: another compile of this kernel holds it"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("waited for " + stem(key) + ".lock"), std::string::npos)
      << err;
  EXPECT_FALSE(ck.cubin.empty());
}

TEST_F(JITCacheTest, MissThenHit) {
  jit::CompiledKernel first = mustCompile(smallSpec(), options());
  ASSERT_FALSE(first.cubin.empty());
  EXPECT_FALSE(first.fromCache);
  EXPECT_EQ(first.cacheKey, jit::cacheKey(smallSpec(), kSM90));
  EXPECT_EQ(first.cacheStem, stem(first.cacheKey));
  EXPECT_EQ(first.info.kernelName, "jit_test_kernel");
  EXPECT_EQ(first.info.target, "sm_90a");
  EXPECT_EQ(first.info.compilerVersion, jit::compilerVersion());
  EXPECT_EQ(first.info.blockM, first.schedule.blockM);
  EXPECT_GT(first.info.threads, 0);
  EXPECT_GT(first.info.smemBytes, 0);
  EXPECT_NE(first.ptxasLog.find("registers"), std::string::npos)
      << first.ptxasLog;
  EXPECT_GT(first.timings.cubinMs, 0);
  EXPECT_GT(first.timings.ptxMs, 0);
  EXPECT_GE(first.timings.totalMs, first.timings.cubinMs);
  EXPECT_EQ(listDir(dir), entryFiles(first.cacheKey));
  // The entry is what blasst-compile would write: the runtime reads it, and
  // its .meta records the content hash of the three files.
  rt::KernelInfo meta;
  ASSERT_TRUE(rt::readKernelInfo(stem(first.cacheKey) + ".meta", &meta))
      << slurp(stem(first.cacheKey) + ".meta");
  EXPECT_EQ(meta.kernelName, first.info.kernelName);
  std::string specText = slurp(stem(first.cacheKey) + ".spec");
  EXPECT_EQ(specText, smallSpec().toString());
  EXPECT_EQ(meta.contentSha256,
            rt::kernelContentHash(first.cubin.data(), first.cubin.size(),
                                  specText, meta));
  rt::KernelFiles files;
  EXPECT_TRUE(rt::readKernelFiles(stem(first.cacheKey), &files).ok());
  // The runtime's SHA-256 is LLVM's.
  EXPECT_EQ(
      rt::sha256Hex(first.cubin.data(), first.cubin.size()),
      llvm::toHex(llvm::SHA256::hash(llvm::ArrayRef<uint8_t>(
                      reinterpret_cast<const uint8_t *>(first.cubin.data()),
                      first.cubin.size())),
                  /*LowerCase=*/true));

  jit::CompiledKernel second = mustCompile(smallSpec(), options());
  EXPECT_TRUE(second.fromCache);
  EXPECT_EQ(second.cacheKey, first.cacheKey);
  EXPECT_EQ(second.cubin, first.cubin);
  EXPECT_EQ(second.info.kernelName, first.info.kernelName);
  EXPECT_EQ(second.info.threads, first.info.threads);
  EXPECT_EQ(second.info.smemBytes, first.info.smemBytes);
  EXPECT_EQ(second.spec, smallSpec());
  EXPECT_EQ(second.timings.cubinMs, 0);
  EXPECT_EQ(second.notes, "");
  EXPECT_LT(second.timings.totalMs, first.timings.totalMs);

  // Not using the cache still reports the key but touches nothing.
  jit::CompileOptions off = options();
  off.useCache = false;
  off.schedule.stages = 3; // another key, so an entry would show
  jit::CompiledKernel uncached = mustCompile(smallSpec(), off);
  EXPECT_FALSE(uncached.fromCache);
  EXPECT_EQ(uncached.cacheStem, "");
  EXPECT_EQ(uncached.cacheKey, jit::cacheKey(smallSpec(), kSM90, off.schedule));
  EXPECT_EQ(listDir(dir).size(), 4u);
}

// sm_100a through the JIT: the pipeline blasst-compile runs, a cubin that
// ptxas assembled for sm_100a without spills, cached under a key of its own
// (target and cross-stage P knobs in it), and a hit the second time. Nothing
// here needs a GPU; loading it on an sm_90 GPU (the fake driver's) is refused
// with the reason.
TEST_F(JITCacheTest, CompilesSm100a) {
  AttentionSpec spec = smallSpec();
  jit::CompiledKernel first = mustCompile(spec, options(), Target::SM100a);
  ASSERT_FALSE(first.cubin.empty());
  EXPECT_FALSE(first.fromCache);
  EXPECT_EQ(first.target, Target::SM100a);
  EXPECT_EQ(first.info.target, "sm_100a");
  EXPECT_EQ(first.cacheKey, jit::cacheKey(spec, Target::SM100a));
  EXPECT_NE(first.cacheKey, jit::cacheKey(spec, kSM90));
  EXPECT_TRUE(first.schedule.crossStageP.value_or(false))
      << "cross-stage P is the sm_100a default";
  EXPECT_EQ(first.info.threads, 512);
  EXPECT_EQ(first.info.blockM, 256);
  // Kernel ABI 4: two Q tiles of 128 rows (the Q and O boxes), O stored
  // with TMA through its tensor map (parameter 18).
  EXPECT_EQ(first.info.qTiles, 2);
  EXPECT_EQ(first.info.oTensorMap, 1);
  EXPECT_NE(first.ptxasLog.find("0 bytes spill stores"), std::string::npos)
      << first.ptxasLog;
  EXPECT_EQ(listDir(dir), entryFiles(first.cacheKey));
  rt::KernelFiles files;
  EXPECT_TRUE(rt::readKernelFiles(stem(first.cacheKey), &files).ok());
  EXPECT_EQ(files.info.target, "sm_100a");

  jit::CompiledKernel second = mustCompile(spec, options(), Target::SM100a);
  EXPECT_TRUE(second.fromCache);
  EXPECT_EQ(second.cubin, first.cubin);
  EXPECT_EQ(second.info.target, "sm_100a");
  EXPECT_EQ(second.timings.cubinMs, 0);

  // Another cross-stage P schedule is another kernel; the sm_90a kernel of
  // the same spec is another entry.
  jit::CompileOptions off = options();
  off.schedule.crossStageP = false;
  jit::CompiledKernel without = mustCompile(spec, off, Target::SM100a);
  EXPECT_FALSE(without.fromCache);
  EXPECT_NE(without.cacheKey, first.cacheKey);
  EXPECT_NE(without.cubin, first.cubin);
  jit::CompiledKernel hopper = mustCompile(spec, options());
  EXPECT_FALSE(hopper.fromCache);
  EXPECT_EQ(hopper.info.target, "sm_90a");
  EXPECT_EQ(hopper.info.qTiles, 1);
  EXPECT_EQ(hopper.info.oTensorMap, 0);
  EXPECT_EQ(listDir(dir).size(), 12u);

#ifdef BLASST_FAKE_DRIVER
  // The fake driver's GPU is sm_90: the runtime refuses the sm_100a cubin
  // before the driver sees it.
  rt::setDriverLibraryForTesting(BLASST_FAKE_DRIVER);
  {
    rt::Context ctx;
    ASSERT_TRUE(rt::Context::create(0, &ctx).ok());
    jit::Kernel kernel(std::move(second));
    rt::Status s = kernel.load(ctx);
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find("it was compiled for sm_100a, whose "
                               "arch-specific code runs only on GPUs of "
                               "compute capability 10.0, but GPU 0 (Fake "
                               "sm_90 GPU) is sm_90"),
              std::string::npos)
        << s.message();
    EXPECT_FALSE(kernel.loaded());
  }
  rt::setDriverLibraryForTesting(nullptr);
#endif
}

TEST_F(JITCacheTest, CorruptEntriesAreRecompiled) {
  jit::CompiledKernel good = mustCompile(smallSpec(), options());
  ASSERT_FALSE(good.cubin.empty());
  std::string s = stem(good.cacheKey);
  std::string goodMeta = slurp(s + ".meta");
  std::string goodCubin = slurp(s + ".cubin");
  size_t code = codeOffset(goodCubin, good.info.kernelName);
  ASSERT_GT(code, 0u) << "no .text." << good.info.kernelName;

  /// The .meta with `key = value` in place of the key's line.
  auto metaWith = [&](const std::string &key, const std::string &value) {
    std::string m = goodMeta;
    size_t at = m.find(key + " = ");
    m.replace(at, m.find('\n', at) - at, key + " = " + value);
    return m;
  };
  /// A consistent entry (the hash matches) of another kernel at this key.
  auto otherKernelEntry = [&] {
    AttentionSpec other = smallSpec();
    other.causal = true;
    rt::KernelInfo info;
    ASSERT_TRUE(rt::readKernelInfo(s + ".meta", &info).ok());
    info.contentSha256 = rt::kernelContentHash(
        goodCubin.data(), goodCubin.size(), other.toString(), info);
    spit(s + ".spec", other.toString());
    spit(s + ".meta", rt::formatKernelInfo(info));
  };

  struct Damage {
    const char *what;
    const char *note; // expected in the notes
    std::function<void()> apply;
  };
  const char *hashNote = "do not match the content hash their .meta records";
  std::vector<Damage> damages = {
      {"garbage .meta", "unknown key 'this is not'",
       [&] { spit(s + ".meta", "this is not = metadata\n"); }},
      {"truncated .cubin", "bad cubin",
       [&] { spit(s + ".cubin", goodCubin.substr(0, goodCubin.size() / 2)); }},
      {"a flipped byte in the code section", hashNote,
       [&] {
         std::string c = goodCubin;
         c[code] ^= 0x10;
         spit(s + ".cubin", c);
       }},
      {".meta edited to threads = 128", hashNote,
       [&] { spit(s + ".meta", metaWith("threads", "128")); }},
      {".meta edited to smem_bytes = 1024", hashNote,
       [&] { spit(s + ".meta", metaWith("smem_bytes", "1024")); }},
      {"an edited .spec", hashNote,
       [&] {
         AttentionSpec hd128 = smallSpec();
         hd128.headDim = hd128.headDimV = 128;
         spit(s + ".spec", hd128.toString());
       }},
      {".meta without its hash", "records no content hash",
       [&] {
         std::string m = goodMeta;
         m.erase(m.find("content_sha256"));
         spit(s + ".meta", m);
       }},
      {"a consistent entry of another spec", ".spec is a different spec",
       otherKernelEntry},
  };
  for (const Damage &d : damages) {
    SCOPED_TRACE(d.what);
    d.apply();
    jit::CompiledKernel again = mustCompile(smallSpec(), options());
    EXPECT_FALSE(again.fromCache) << "served a damaged entry";
    EXPECT_NE(again.notes.find("is corrupt"), std::string::npos) << again.notes;
    EXPECT_NE(again.notes.find(d.note), std::string::npos) << again.notes;
    EXPECT_EQ(again.cubin, good.cubin);
    // Overwritten: the entry is whole again and hits.
    EXPECT_EQ(slurp(s + ".meta"), goodMeta);
    EXPECT_EQ(slurp(s + ".cubin"), goodCubin);
    EXPECT_EQ(slurp(s + ".spec"), smallSpec().toString());
    EXPECT_EQ(listDir(dir), entryFiles(good.cacheKey))
        << "no temporary files left";
    EXPECT_TRUE(mustCompile(smallSpec(), options()).fromCache);
  }

  // A .cubin and .spec without .meta (a writer that died before committing)
  // is a plain miss.
  ASSERT_FALSE(fs::remove(s + ".meta"));
  jit::CompiledKernel miss = mustCompile(smallSpec(), options());
  EXPECT_FALSE(miss.fromCache);
  EXPECT_EQ(miss.notes, "");
  EXPECT_EQ(slurp(s + ".meta"), goodMeta);
}

TEST_F(JITCacheTest, UnwritableCacheStillCompiles) {
  // A regular file where the directory should be.
  std::string blocker = dir + "/not-a-dir";
  spit(blocker, "x");
  jit::CompileOptions opts = options();
  opts.cacheDir = blocker + "/cache";
  jit::CompiledKernel ck = mustCompile(smallSpec(), opts);
  EXPECT_FALSE(ck.cubin.empty());
  EXPECT_EQ(ck.cacheStem, "");
  EXPECT_NE(ck.notes.find("warning: not cached: cannot create"),
            std::string::npos)
      << ck.notes;
}

// Concurrent cold compiles of one kernel in several processes: one compiles,
// the others wait for its lock and read its entry.
TEST_F(JITCacheTest, ConcurrentProcessesCompileOnce) {
  constexpr int kChildren = 6;
  // The children wait on this pipe so that they compile at the same time.
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  std::vector<pid_t> pids;
  for (int i = 0; i < kChildren; ++i) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0) << "fork failed";
    if (pid == 0) {
      close(go[1]);
      char c;
      (void)!read(go[0], &c, 1); // returns 0 once the parent closes its end
      llvm::Expected<jit::CompiledKernel> ck =
          jit::compile(smallSpec(), kSM90, options());
      if (!ck) {
        llvm::errs() << "child " << i << ": " << llvm::toString(ck.takeError())
                     << "\n";
        _exit(1);
      }
      if (ck->cubin.empty() || ck->cacheStem.empty())
        _exit(2);
      _exit(ck->fromCache ? 10 : 0); // 0: compiled and stored it
    }
    pids.push_back(pid);
  }
  close(go[0]);
  close(go[1]);
  int compiled = 0;
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status)) << "child " << pid << " status " << status;
    int code = WEXITSTATUS(status);
    EXPECT_TRUE(code == 0 || code == 10) << "child " << pid << " exit " << code;
    compiled += code == 0;
  }
  // They start together and a compile takes far longer than a lookup: all
  // would compile without the lock.
  EXPECT_EQ(compiled, 1) << "compiled more than once";

  std::string key = jit::cacheKey(smallSpec(), kSM90);
  EXPECT_EQ(listDir(dir), entryFiles(key)) << "one entry, no temporary files";
  jit::CompiledKernel cached = mustCompile(smallSpec(), options());
  EXPECT_TRUE(cached.fromCache);
  jit::CompileOptions fresh = options();
  fresh.useCache = false;
  jit::CompiledKernel recompiled = mustCompile(smallSpec(), fresh);
  EXPECT_EQ(cached.cubin, recompiled.cubin);
  EXPECT_EQ(rt::formatKernelInfo(cached.info),
            rt::formatKernelInfo(recompiled.info));
}

// run() before load() is an error naming load(), not an implicit GPU 0: the
// driver is not even looked for.
TEST_F(JITCacheTest, RunWithoutLoadIsAnError) {
  jit::CompiledKernel ck = mustCompile(smallSpec(), options());
  ASSERT_FALSE(ck.cubin.empty());
  rt::setDriverLibraryForTesting("libblasst-jit-test-no-such-driver.so");
  jit::Kernel kernel(std::move(ck));
  rt::AttentionArgs args;
  for (float threshold : {NAN, 0.f}) {
    rt::Status s = kernel.run(args, nullptr, threshold);
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find("cannot run kernel 'jit_test_kernel': it is "
                               "not loaded; call Kernel::load(context)"),
              std::string::npos)
        << s.message();
    EXPECT_EQ(s.message().find("driver"), std::string::npos) << s.message();
    EXPECT_FALSE(kernel.loaded());
  }
  rt::setDriverLibraryForTesting(nullptr);

  // A Kernel without a compiled kernel says so.
  jit::Kernel empty;
  rt::Context noContext;
  rt::Status st = empty.load(noContext);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("no cubin"), std::string::npos) << st.message();
}

TEST_F(JITCacheTest, ThreadsCompileConcurrently) {
  // Each compile has its own MLIRContext; two threads, two specs.
  AttentionSpec causal = smallSpec();
  causal.causal = true;
  const AttentionSpec specs[2] = {smallSpec(), causal};
  std::string errors[2];
  std::vector<char> cubins[2];
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i)
    threads.emplace_back([&, i] {
      llvm::Expected<jit::CompiledKernel> ck =
          jit::compile(specs[i], kSM90, options());
      if (ck)
        cubins[i] = ck->cubin;
      else
        errors[i] = llvm::toString(ck.takeError());
    });
  for (std::thread &t : threads)
    t.join();
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(errors[i], "");
    EXPECT_FALSE(cubins[i].empty());
  }
  EXPECT_NE(cubins[0], cubins[1]);
  EXPECT_EQ(listDir(dir).size(), 8u);
  EXPECT_EQ(mustCompile(specs[1], options()).cubin, cubins[1]);
}

//===----------------------------------------------------------------------===//
// The key: toolchain identity, threshold left out
//===----------------------------------------------------------------------===//

// The key covers the loaded libLLVM and libMLIR, not only the executable.
TEST(JIT, ToolchainIdentityNamesTheLibraries) {
  std::string id = jit::toolchainIdentity();
  EXPECT_NE(id.find(std::string("[compiler] ") + jit::compilerVersion() + ", "),
            std::string::npos)
      << id;
  EXPECT_NE(id.find("[llvm] " LLVM_VERSION_STRING ", libLLVM.so"),
            std::string::npos)
      << id;
  EXPECT_NE(id.find("[mlir] libMLIR.so"), std::string::npos) << id;
  // Three objects, each with a build-id (Debian's libraries have them; so
  // has what lld links) or a hash of its file.
  size_t ids = 0;
  for (size_t at = 0; (at = id.find(" build-id ", at)) != std::string::npos;
       ++at)
    ++ids;
  for (size_t at = 0; (at = id.find(" sha256 ", at)) != std::string::npos; ++at)
    ++ids;
  EXPECT_EQ(ids, 3u) << id;
  EXPECT_EQ(jit::toolchainIdentity(), id) << "stable";
}

// Specs that differ only in the threshold value share a key (the value is
// a launch argument); the policy's kind and lambda_max do not.
TEST(JIT, ThresholdIsNotInTheKey) {
  AttentionSpec a500 = smallSpec();
  a500.sparsity = {SparsityKind::ScaleFactor, 500.0};
  AttentionSpec a1000 = a500;
  a1000.sparsity.value = 1000.0;
  EXPECT_EQ(jit::cacheKey(a500, kSM90), jit::cacheKey(a1000, kSM90));
  AttentionSpec ln3 = smallSpec();
  ln3.sparsity = {SparsityKind::LnLambda, -3.0};
  AttentionSpec ln9 = ln3;
  ln9.sparsity.value = -9.5;
  EXPECT_EQ(jit::cacheKey(ln3, kSM90), jit::cacheKey(ln9, kSM90));
  EXPECT_NE(jit::cacheKey(a500, kSM90), jit::cacheKey(ln3, kSM90))
      << "a / L_kv and a fixed ln_lambda are different kernels";
  AttentionSpec capped = a500;
  capped.sparsity.lambdaMax = 0.5;
  EXPECT_NE(jit::cacheKey(capped, kSM90), jit::cacheKey(a500, kSM90))
      << "lambda_max is compiled in";
  EXPECT_NE(jit::cacheKey(smallSpec(), kSM90), jit::cacheKey(a500, kSM90));
}

#ifdef BLASST_FAKE_DRIVER
/// Where the fake driver's last launch put ABI parameter 12.
static float fakeLastThreshold() {
  void *h = dlopen(BLASST_FAKE_DRIVER, RTLD_NOW | RTLD_LOCAL);
  auto fn = reinterpret_cast<float (*)()>(
      h ? dlsym(h, "blasstFakeLastThreshold") : nullptr);
  float t = fn ? fn() : NAN;
  if (h)
    dlclose(h);
  return t;
}
#endif

// Two specs differing only in `a`: one compile; each CompiledKernel keeps
// its caller's spec, and a launch passes the caller's threshold.
TEST_F(JITCacheTest, SpecsDifferingOnlyInTheThresholdCompileOnce) {
  AttentionSpec a500 = smallSpec();
  a500.sparsity = {SparsityKind::ScaleFactor, 500.0};
  AttentionSpec a1000 = a500;
  a1000.sparsity.value = 1000.0;
  jit::CompiledKernel first = mustCompile(a500, options());
  jit::CompiledKernel second = mustCompile(a1000, options());
  EXPECT_FALSE(first.fromCache);
  EXPECT_TRUE(second.fromCache) << "recompiled for another threshold";
  EXPECT_EQ(second.notes, "");
  EXPECT_EQ(second.cubin, first.cubin);
  EXPECT_EQ(second.spec, a1000);
  EXPECT_FLOAT_EQ(first.specLog2Threshold(), std::log2(500.0f));
  EXPECT_FLOAT_EQ(second.specLog2Threshold(), std::log2(1000.0f));
  // The cubin does not depend on the value: a fresh compile gives the same.
  jit::CompileOptions fresh = options();
  fresh.useCache = false;
  EXPECT_EQ(mustCompile(a1000, fresh).cubin, first.cubin);

#ifdef BLASST_FAKE_DRIVER
  // What run() passes as ABI parameter 12, through the fake driver.
  rt::setDriverLibraryForTesting(BLASST_FAKE_DRIVER);
  {
    rt::Context ctx;
    ASSERT_TRUE(rt::Context::create(0, &ctx).ok());
    rt::AttentionArgs args;
    args.batch = 1, args.seqQ = args.seqKV = 256;
    args.numQHeads = a500.numQHeads, args.numKVHeads = a500.numKVHeads;
    args.headDim = a500.headDim;
    args.setContiguousStrides();
    args.q = 1 << 20, args.k = 2 << 20, args.v = 3 << 20, args.o = 4 << 20;
    for (jit::CompiledKernel *ck : {&first, &second}) {
      float expected = ck->specLog2Threshold();
      jit::Kernel kernel(std::move(*ck));
      rt::Status s = kernel.load(ctx);
      ASSERT_TRUE(s.ok()) << s.message();
      s = kernel.run(args, nullptr);
      ASSERT_TRUE(s.ok()) << s.message();
      EXPECT_EQ(fakeLastThreshold(), expected);
      s = kernel.run(args, nullptr, -2.0f);
      ASSERT_TRUE(s.ok()) << s.message();
      EXPECT_EQ(fakeLastThreshold(), -2.0f);
    }
  }
  rt::setDriverLibraryForTesting(nullptr);
#endif
}

// Threads of one process compiling the same cold kernel compile it once.
TEST_F(JITCacheTest, ThreadsCompileOneKernelOnce) {
  constexpr int kThreads = 3;
  int compiled = 0, hits = 0;
  std::mutex mutex;
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&] {
      llvm::Expected<jit::CompiledKernel> ck =
          jit::compile(smallSpec(), kSM90, options());
      std::lock_guard<std::mutex> lock(mutex);
      if (!ck) {
        ADD_FAILURE() << llvm::toString(ck.takeError());
        return;
      }
      ++(ck->fromCache ? hits : compiled);
    });
  for (std::thread &t : threads)
    t.join();
  EXPECT_EQ(compiled, 1);
  EXPECT_EQ(hits, kThreads - 1);
}

//===----------------------------------------------------------------------===//
// Killed compiles
//===----------------------------------------------------------------------===//

// A compile killed with SIGTERM removes its temporary files at once; one
// killed with SIGKILL leaves its directory, which the next process's
// scratch directory removes (and ptxas dies with its parent instead of
// writing into it later).
TEST_F(JITCacheTest, KilledCompilesLeaveNoFiles) {
  std::string tmp = dir + "/tmp";
  ASSERT_FALSE(fs::create_directories(tmp));
  for (int sig : {SIGTERM, SIGKILL}) {
    SCOPED_TRACE(sig == SIGTERM ? "SIGTERM" : "SIGKILL");
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      setenv("TMPDIR", tmp.c_str(), 1);
      jit::CompileOptions opts;
      opts.useCache = false;
      for (;;) // until killed
        if (!jit::compile(smallSpec(), kSM90, opts))
          _exit(3);
    }
    // Kill it while ptxas runs: its input is in the child's directory.
    bool sawPtx = false;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!sawPtx && std::chrono::steady_clock::now() < deadline) {
      for (const std::string &f : filesBelow(tmp))
        sawPtx |= f.find("/ptx-") != std::string::npos;
      if (!sawPtx)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_TRUE(sawPtx) << "no compile seen";
    ASSERT_EQ(kill(pid, sig), 0);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << status;
    auto sizes = [&] {
      std::map<std::string, uint64_t> out;
      for (const std::string &f : filesBelow(tmp)) {
        uint64_t size = 0;
        (void)fs::file_size(tmp + "/" + f, size);
        out[f] = size;
      }
      return out;
    };
    std::map<std::string, uint64_t> left = sizes();
    if (sig == SIGTERM)
      EXPECT_EQ(filesBelow(tmp), std::set<std::string>())
          << "SIGTERM left files";
    else
      EXPECT_FALSE(left.empty()) << "nothing to clean up?";
    // ptxas died with its parent: it does not write its output afterwards.
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    EXPECT_EQ(sizes(), left);
    // The next process's first compile removes the dead one's directory.
    EXPECT_EQ(removeStaleScratchDirectories(tmp), 1u);
    EXPECT_EQ(listDir(tmp), std::set<std::string>());
  }
}
