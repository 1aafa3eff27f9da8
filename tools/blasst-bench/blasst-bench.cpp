//===- blasst-bench.cpp - Check and time compiled attention kernels -------===//
//
// Loads kernels the blasst compiler produced (<stem>.cubin/.meta/.spec),
// runs each once on random inputs with poisoned outputs, compares every
// output element (or K evenly spaced rows) with a double-precision CPU
// reference (BLASSTReference), optionally checks that repeated launches are
// bit-identical, then times it with CUDA events.
//
// Runtime-only: links BLASSTRuntime, BLASSTReference and BLASSTSpec, no
// LLVM/MLIR, and libcuda is dlopen'ed, so it starts on any machine. Exit
// codes: 0 all kernels passed, 1 something failed, 2 skipped (no usable
// GPU), 64 usage.
//
//===----------------------------------------------------------------------===//

#include "blasst/Reference/Compare.h"
#include "blasst/Reference/Reference.h"
#include "blasst/Reference/SkipModel.h"
#include "blasst/Runtime/AttentionKernel.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace blasst;
using namespace blasst::ref;
using namespace blasst::rt;

namespace {

constexpr int kExitPass = 0;
constexpr int kExitFail = 1;
constexpr int kExitSkipped = 2;
constexpr int kExitUsage = 64;

/// Upper bounds of --threads (CPU threads for the reference) and --device.
constexpr int64_t kMaxThreads = 4096;
constexpr int64_t kMaxDevice = 1023;

/// Elements of poison after O's last element and floats after LSE's, to
/// catch writes past the end.
constexpr size_t kGuardElements = 4096;

/// The sm_90a kernels' consumer warpgroups per CTA: each votes on its
/// blockM / kVotingGroups rows.
constexpr int kVotingGroups = 2;

const char *kUsage =
    R"(usage: blasst-bench --kernel STEM [--kernel STEM2 ...] [options]

Loads STEM.cubin, STEM.meta and STEM.spec (as written by blasst-compile;
--kernel STEM.cubin means STEM), checks each kernel against a
double-precision CPU reference and times it. The files (their content hash
included) and the options for each kernel are checked before a GPU is
looked for: any error there is exit 1 on every machine.

shape:
  --batch N            batch size (default 1)
  --seq N              sets both --seq-q and --seq-kv
  --seq-q N            query length (default: 1024, or 1 for decode specs)
  --seq-kv N           key/value length (default: 1024, or --seq-q)
  --o-pad N            extra elements in O's row (seq) stride (default 0);
                       must keep the stride a multiple of 8 elements
  --kv-layout L        bshd (default: K, V contiguous [B, S, H, D]) or bhsd
                       ([B, H, S, D], SDPA's and an HND cache's: each head's
                       keys contiguous); passed to the kernel as strides
  --kv-splits N[,N..]  decode kernels: split each tile's KV blocks N ways
                       (default: the kernel's kv_splits, else chosen at
                       launch from batch x kv heads, the length and the SM
                       count); the workspace is allocated and zeroed here.
                       A list runs each kernel once per split count (0: the
                       launch's choice) on the same inputs, one row each
  --split-merge M[,M..]  decode kernels built with --merge-kernel: who
                       merges the KV splits: auto (default: the split
                       model's pick per launch), in-kernel (each tile's
                       last split) or kernel (the merge kernel); a list runs
                       each kernel once per entry and split count
  --kv-lengths L       kernels with kv_lengths = per_sequence: each
                       sequence's KV length, a comma list of --batch values
                       (0 allowed) or `random` (seeded, in [0, seq_kv], the
                       first at seq_kv); default: every one seq_kv. seq_kv
                       (the bound) defaults to the largest. Paged kernels
                       (kv_cache = paged:page=P) get K/V as a shuffled page
                       pool (seeded), a block table of ceil(seq_kv / P)
                       columns whose unused entries name other pages, and
                       every check compares with the contiguous reference
                       of each sequence's length (BLASST kernels: the
                       skipping model walks each sequence's own length,
                       with its own T under the a= policy)
  --kv-overlong E      hardening check: every sequence of length seq_kv
                       is passed to the kernel as seq_kv + E (a length past
                       the caller's bound, at most 2^31-1); the kernel reads
                       it as seq_kv, and the checks compare with that
inputs:
  --seed S             RNG seed (default 1234); inputs depend only on the seed
  --dist uniform|normal   uniform in [-1,1] (default) or standard normal
  --dial F             synthetic sparsity (F in [0,1]: fraction of cold KV
                       blocks): Q/K with an attention sink, a local window,
                       and cold blocks ~24 log2 units below the running max,
                       warm ones near it (V still from --dist). For sparse
                       kernels the default threshold becomes ln_lambda =
                       -H*ln2 = -8.3 (T = -12 log2 units), see README.md
  --dial-even          the dial's cold blocks evenly spaced (each run of k
                       blocks of a kv head holds k F +- 1) instead of drawn
                       independently: every KV split gets the same share
  --dial-runs L        the dial's warm (kept) blocks come in runs of L blocks
                       on average (a two-state chain with the cold fraction
                       F) instead of independently, as real attention keeps
                       passages: contiguous KV splits get unequal shares
checking:
  --check full|rows:K|none   compare every O element (default), K evenly
                       spaced query rows of every batch entry and head, or
                       nothing. Outputs are poisoned (0xFF = NaN) first.
  --repeat-launches N  after the checked run, N back-to-back launches, then
                       check the output is bit-identical (determinism)
  --vs-first           compare every O element of each kernel with the first
                       kernel's O on the same inputs (relative L2, max abs;
                       reported, not judged): with a dense kernel first, a
                       sparse kernel's error against dense, at any size
  --threads N          CPU threads for the reference (default: all cores)
timing:
  --warmup N           untimed launches first (default 10)
  --iters N            timed launches, each between two events (default 50)
  --interleave         time the kernels in turns: after every kernel's run
                       and checks, each one's warm-up, then --iters rounds
                       that launch every kernel once (each between its own
                       events), so clock drift and the order of the kernels
                       do not favour one of them (default: each kernel's
                       launches back to back, kernel after kernel)
  --stamps FILE        after the timed launches, one more launch, then the
                       kernel module's global `blasst_stamps` (u64 values a
                       kernel built with blasst-compile --timeline writes:
                       %globaltimer at points of its roles) appended to
                       FILE: a '#' line naming the kernel, shape, grid and
                       split count, then
                       one line per nonzero row of 16 values (row index
                       first); kernels without the global are said and
                       skipped (tools/timeline/README.md)
sparse (BLASST) kernels:
  --sparsity P         blasst:a=<float> | blasst:ln_lambda=<float>: run a
                       sparse kernel at this threshold (the kind of policy
                       is compiled in; the value is a launch argument)
  --stats              require the kernel's skip counters (built with
                       blasst-compile --stats)
  --log2-threshold X   override ABI parameter 12 (default: from the spec, or
                       the --dial default); for blasst:a= the kernel still
                       subtracts log2(seq_kv)
  --device-threshold X as --log2-threshold, but X is written to device
                       memory and the kernel reads it there (parameter 13);
                       X may be nan or inf (a NaN threshold skips nothing)
  --borderline-eps E   a skip decision within E log2 units of flipping is
                       borderline (default 0.01): counters may differ from
                       the model by the borderline count
  --empty-groups skip|keep|idle   what the model assumes a voting group
                       without any row < seq_q does (default idle: not
                       counted, as the kernels do; skip: its vote is
                       vacuously true)
other:
  --device N           GPU ordinal (default 0)
  --json FILE          write every number as JSON
  --help

PASS needs: no NaN/inf (unwritten poison counts), relative L2 error <= 1e-2
(bf16) or 5e-3 (f16), every element within 4u(max|V| + |ref|), LSE max abs
error <= 1e-3, no writes outside O/LSE, and identical repeats. Rows that see
no key (causal with seq-q > seq-kv) must give O = 0 and LSE = -inf.
Sparse kernels are compared with a CPU model of the block skipping (the
reference over the kept blocks); with stats = true their visited/skipped
counters must match the model (skipped up to borderline decisions). The
error against the dense reference is reported, not judged. --check none
also skips the model.
Exit codes: 0 all passed, 1 a check or kernel failed, or a kernel's files
or the options for it are wrong (found before any GPU is looked for), 2
skipped (no usable GPU), 64 bad usage.
)";

//===----------------------------------------------------------------------===//
// Options
//===----------------------------------------------------------------------===//

enum class CheckMode { Full, Rows, None };

struct Options {
  std::vector<std::string> kernels;
  int64_t batch = 1;
  std::optional<int64_t> seqQ, seqKV;
  int64_t oPad = 0;
  bool kvBHSD = false;  // --kv-layout bhsd
  /// --kv-splits (decode): one run of each kernel per entry; 0 = the
  /// kernel's / launch's choice.
  std::vector<int64_t> kvSplits = {0};
  /// --split-merge: one run per entry too (after the split counts).
  std::vector<SplitMerge> splitMerges = {SplitMerge::Auto};
  /// --kv-lengths: the list, or random (kvLengthsRandom).
  std::vector<int64_t> kvLengths;
  bool kvLengthsRandom = false;
  /// --kv-overlong: added to the device copy of lengths equal to seq_kv.
  int64_t kvOverlong = 0;
  CheckMode check = CheckMode::Full;
  int64_t checkRows = 0;
  int64_t warmup = 10;
  int64_t iters = 50;
  std::string stampsFile; ///< --stamps
  bool interleave = false; ///< --interleave: the kernels timed in turns
  uint64_t seed = 1234;
  Distribution dist = Distribution::Uniform;
  std::string json;
  int64_t repeatLaunches = 0;
  bool vsFirst = false;
  unsigned threads = 0;
  std::optional<float> log2Threshold;
  std::optional<float> deviceThreshold;   // --device-threshold (NaN allowed)
  std::optional<SparsityPolicy> sparsity; // --sparsity (threshold override)
  bool requireStats = false;              // --stats
  std::optional<double> dial;
  bool dialEven = false;
  double dialRuns = 0;
  double borderlineEps = 1e-2;
  // The kernels do not count groups without a row < seq_q (the lowering's
  // emitStatsFlush and emitVoteStatsFlush, lib/Conversion/WSToNVVM/Votes.cpp).
  SkipConfig::EmptyGroup emptyGroups = SkipConfig::EmptyGroup::Idle;
  int device = 0;
};

bool parseInt64(const std::string &s, int64_t *out) {
  if (s.empty())
    return false;
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno || *end)
    return false;
  *out = v;
  return true;
}

bool parseU64(const std::string &s, uint64_t *out) {
  if (s.empty() || s[0] == '-')
    return false;
  char *end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s.c_str(), &end, 0);
  if (errno || *end)
    return false;
  *out = v;
  return true;
}

/// Parses `v`, a comma list of integers in [lo, hi], into *out; on error
/// returns "option <option>: '<item>' <why>".
std::string parseIntList(const std::string &option, const std::string &v,
                         int64_t lo, int64_t hi, std::vector<int64_t> *out,
                         const char *why) {
  out->clear();
  for (size_t at = 0;;) {
    size_t comma = v.find(',', at);
    std::string item = v.substr(
        at, comma == std::string::npos ? std::string::npos : comma - at);
    int64_t n = 0;
    if (!parseInt64(item, &n) || n < lo || n > hi)
      return "option " + option + ": '" + item + "' " + why;
    out->push_back(n);
    if (comma == std::string::npos)
      return "";
    at = comma + 1;
  }
}

/// Parses argv into *o; on error returns the message.
std::string parseOptions(int argc, char **argv, Options *o) {
  std::vector<std::string> args(argv + 1, argv + argc);
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i], value;
    bool hasValue = false;
    if (arg.rfind("--", 0) == 0) {
      size_t eq = arg.find('=');
      if (eq != std::string::npos) {
        value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
        hasValue = true;
      }
    }
    auto need = [&](std::string *v) -> std::string {
      if (hasValue) {
        *v = value;
        return "";
      }
      if (i + 1 >= args.size())
        return "option " + arg + " needs a value";
      *v = args[++i];
      return "";
    };
    auto intArg = [&](int64_t *out, int64_t min, int64_t max = INT64_MAX,
                      const char *why = nullptr) -> std::string {
      std::string v;
      if (std::string e = need(&v); !e.empty())
        return e;
      if (!parseInt64(v, out))
        return "option " + arg + ": '" + v + "' is not an integer";
      if (*out < min)
        return "option " + arg + ": " + v + " is below the minimum " +
               std::to_string(min);
      if (*out > max)
        return "option " + arg + ": " + v + " is above the maximum " +
               std::to_string(max) + (why ? std::string(" (") + why + ")" : "");
      return "";
    };
    // The kernels take int32 sequence lengths; batch is grid z.
    const char *int32Why = "the kernels take 32-bit sequence lengths";
    std::string v, err;
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(kExitPass);
    } else if (arg == "--kernel") {
      // k.cubin, k.meta and k.spec mean the stem k (as blasst-compile -o k
      // writes them).
      if ((err = need(&v)).empty()) {
        for (const char *ext : {".cubin", ".meta", ".spec"}) {
          size_t n = std::strlen(ext);
          if (v.size() > n && v.compare(v.size() - n, n, ext) == 0) {
            v.resize(v.size() - n);
            break;
          }
        }
        o->kernels.push_back(v);
      }
    } else if (arg == "--batch") {
      err = intArg(&o->batch, 1, 65535, "the grid's z limit");
    } else if (arg == "--seq") {
      int64_t n = 0;
      if ((err = intArg(&n, 1, INT32_MAX, int32Why)).empty())
        o->seqQ = o->seqKV = n;
    } else if (arg == "--seq-q") {
      int64_t n = 0;
      if ((err = intArg(&n, 1, INT32_MAX, int32Why)).empty())
        o->seqQ = n;
    } else if (arg == "--seq-kv") {
      int64_t n = 0;
      if ((err = intArg(&n, 1, INT32_MAX, int32Why)).empty())
        o->seqKV = n;
    } else if (arg == "--o-pad") {
      err = intArg(&o->oPad, 0, 1 << 20);
    } else if (arg == "--kv-layout") {
      if ((err = need(&v)).empty()) {
        if (v == "bshd" || v == "bhsd")
          o->kvBHSD = v == "bhsd";
        else
          err = "option --kv-layout: must be bshd or bhsd, got '" + v + "'";
      }
    } else if (arg == "--kv-splits") {
      if ((err = need(&v)).empty())
        err = parseIntList(arg, v, 0, 1024, &o->kvSplits,
                           "is not a split count in 1..1024 (or 0: the "
                           "launch's choice; a comma list runs each)");
    } else if (arg == "--split-merge") {
      if ((err = need(&v)).empty()) {
        o->splitMerges.clear();
        std::stringstream items(v);
        std::string item;
        while (std::getline(items, item, ',')) {
          if (item == "auto")
            o->splitMerges.push_back(SplitMerge::Auto);
          else if (item == "in-kernel")
            o->splitMerges.push_back(SplitMerge::InKernel);
          else if (item == "kernel")
            o->splitMerges.push_back(SplitMerge::MergeKernel);
          else {
            err = "option --split-merge: '" + item +
                  "' is not auto, in-kernel or kernel";
            break;
          }
        }
      }
    } else if (arg == "--kv-lengths") {
      if ((err = need(&v)).empty()) {
        o->kvLengthsRandom = v == "random";
        o->kvLengths.clear();
        if (!o->kvLengthsRandom)
          err = parseIntList(arg, v, 0, INT32_MAX, &o->kvLengths,
                             "is not a length in 0..2^31-1 (expected a "
                             "comma list or 'random')");
      }
    } else if (arg == "--check") {
      if ((err = need(&v)).empty()) {
        if (v == "full") {
          o->check = CheckMode::Full;
        } else if (v == "none") {
          o->check = CheckMode::None;
        } else if (v.rfind("rows:", 0) == 0 &&
                   parseInt64(v.substr(5), &o->checkRows) &&
                   o->checkRows >= 1) {
          o->check = CheckMode::Rows;
        } else {
          err = "option --check: '" + v +
                "' is not full, none or rows:K with K >= 1";
        }
      }
    } else if (arg == "--vs-first") {
      o->vsFirst = true;
    } else if (arg == "--warmup") {
      err = intArg(&o->warmup, 0);
    } else if (arg == "--kv-overlong") {
      err = intArg(&o->kvOverlong, 0, INT32_MAX);
    } else if (arg == "--iters") {
      err = intArg(&o->iters, 0);
    } else if (arg == "--interleave") {
      o->interleave = true;
    } else if (arg == "--stamps") {
      err = need(&o->stampsFile);
    } else if (arg == "--seed") {
      if ((err = need(&v)).empty() && !parseU64(v, &o->seed))
        err = "option --seed: '" + v + "' is not an unsigned integer";
    } else if (arg == "--dist") {
      if ((err = need(&v)).empty()) {
        if (v == "uniform")
          o->dist = Distribution::Uniform;
        else if (v == "normal")
          o->dist = Distribution::Normal;
        else
          err = "option --dist: '" + v + "' is not uniform or normal";
      }
    } else if (arg == "--json") {
      err = need(&o->json);
    } else if (arg == "--repeat-launches") {
      err = intArg(&o->repeatLaunches, 0);
    } else if (arg == "--threads") {
      int64_t n = 0;
      if ((err = intArg(&n, 1, kMaxThreads)).empty())
        o->threads = unsigned(n);
    } else if (arg == "--sparsity") {
      if ((err = need(&v)).empty()) {
        std::string why;
        if (std::optional<SparsityPolicy> p = parseSparsity(v, why))
          o->sparsity = *p;
        else
          err = "option --sparsity: " + why;
      }
    } else if (arg == "--stats") {
      o->requireStats = true;
    } else if (arg == "--log2-threshold") {
      if ((err = need(&v)).empty()) {
        char *end = nullptr;
        errno = 0;
        float x = std::strtof(v.c_str(), &end);
        if (v.empty() || *end)
          err = "option --log2-threshold: '" + v + "' is not a number";
        else if (!std::isfinite(x) || errno == ERANGE)
          err = "option --log2-threshold: '" + v +
                "' is not a finite float (the kernel's parameter 12 is a "
                "float32)";
        else
          o->log2Threshold = x;
      }
    } else if (arg == "--device-threshold") {
      if ((err = need(&v)).empty()) {
        char *end = nullptr;
        float x = std::strtof(v.c_str(), &end);
        if (v.empty() || *end)
          err = "option --device-threshold: '" + v +
                "' is not a number (nan and inf are allowed)";
        else
          o->deviceThreshold = x;
      }
    } else if (arg == "--dial") {
      if ((err = need(&v)).empty()) {
        char *end = nullptr;
        double x = std::strtod(v.c_str(), &end);
        if (v.empty() || *end || !(x >= 0 && x <= 1))
          err = "option --dial: '" + v + "' is not a number in [0, 1]";
        else
          o->dial = x;
      }
    } else if (arg == "--dial-even") {
      o->dialEven = true;
    } else if (arg == "--dial-runs") {
      if ((err = need(&v)).empty()) {
        char *end = nullptr;
        double x = std::strtod(v.c_str(), &end);
        if (v.empty() || *end || !(x >= 1 && x <= 1e6))
          err = "option --dial-runs: '" + v +
                "' is not a run length in [1, 1e6] blocks";
        else
          o->dialRuns = x;
      }
    } else if (arg == "--borderline-eps") {
      if ((err = need(&v)).empty()) {
        char *end = nullptr;
        double x = std::strtod(v.c_str(), &end);
        if (v.empty() || *end || !(x >= 0))
          err = "option --borderline-eps: '" + v + "' is not a number >= 0";
        else
          o->borderlineEps = x;
      }
    } else if (arg == "--empty-groups") {
      if ((err = need(&v)).empty()) {
        if (v == "skip")
          o->emptyGroups = SkipConfig::EmptyGroup::Skip;
        else if (v == "keep")
          o->emptyGroups = SkipConfig::EmptyGroup::Keep;
        else if (v == "idle")
          o->emptyGroups = SkipConfig::EmptyGroup::Idle;
        else
          err = "option --empty-groups: '" + v + "' is not skip, keep or idle";
      }
    } else if (arg == "--device") {
      int64_t n = 0;
      if ((err = intArg(&n, 0, kMaxDevice, "not a GPU ordinal")).empty())
        o->device = int(n);
    } else {
      err = "unknown argument '" + args[i] + "'";
    }
    if (!err.empty())
      return err;
  }
  if (o->kernels.empty())
    return "no --kernel given";
  if (o->log2Threshold && o->sparsity)
    return "give --sparsity or --log2-threshold, not both (both set the "
           "threshold, parameter 12)";
  if (o->deviceThreshold && (o->log2Threshold || o->sparsity))
    return "give --device-threshold, --log2-threshold or --sparsity, not two "
           "of them (each sets the threshold)";
  if (o->dialEven && !o->dial)
    return "--dial-even spaces the dial's cold blocks: give --dial F too";
  if (o->dialRuns && !o->dial)
    return "--dial-runs clusters the dial's warm blocks: give --dial F too";
  if (o->dialRuns && o->dialEven)
    return "give --dial-even or --dial-runs, not both";
  return "";
}

//===----------------------------------------------------------------------===//
// Results
//===----------------------------------------------------------------------===//

struct KernelResult {
  std::string stem;
  std::string name; ///< The entry point, or the stem's file name.
  std::string specText;
  DType dtype = DType::BF16;
  bool sparse = false;
  Shape shape;
  bool shapeKnown = false;
  int64_t oPad = 0;
  bool kvBHSD = false;
  Dim3 grid, block;
  size_t smemBytes = 0;
  float log2Threshold = 0;
  int64_t kvSplitsAsked = 0; ///< --kv-splits (0: the kernel's / launch's)
  SplitMerge splitMerge = SplitMerge::Auto; ///< --split-merge
  bool mergeKernel = false;  ///< the launch's merge is the merge kernel
  /// The function launched: "kernel", or the cubin's "lean" or "short"
  /// entry (the runtime picks per launch).
  const char *entry = "kernel";
  int kvSplits = 1;          ///< the launch's KV splits (decode kernels)
  double kvBytes = 0;        ///< K+V bytes a launch reads (bandwidth)
  /// Decode KV caches: the lengths and the page size ("" for uniform,
  /// contiguous).
  std::string kvCache;

  /// A load/launch/driver error (the kernel then counts as failed).
  std::string error;

  bool checked = false;
  std::string checkMode; ///< "full", "rows:K", "none"
  CheckResult check;
  uint64_t writesOutsideO = 0;
  uint64_t writesOutsideLse = 0;
  int64_t maskedRowsChecked = 0; ///< checked rows that see no key
  double referenceSeconds = 0;
  std::vector<int64_t> stats; ///< visited, skipped summed over (b, h)

  // BLASST (sparse kernels).
  double kernelT = 0; ///< T the kernel compares with (log2 units)
  double borderlineEps = 0;
  std::string emptyGroups;
  bool modelRun = false; ///< the skipping model ran
  int64_t modelVisited = 0, modelSkipped = 0, modelBorderline = 0;
  int64_t modelMaskedSkips = 0, modelEmptySkips = 0;
  double modelSkipRate = 0;
  double denseRelL2 = -1;      ///< kernel O vs the dense reference
  double modelDenseRelL2 = -1; ///< model O vs the dense reference
  bool statsChecked = false;
  StatsCheck statsCheck;
  /// When the O check failed and there were borderline decisions: whether
  /// it passes with the rows those decisions touch left out.
  int borderlineRecheck = -1; ///< -1 not done, 0 still fails, 1 passes
  uint64_t borderlineRows = 0;
  // --dial.
  bool dial = false;
  double dialRequested = 0, dialCold = 0, dialWalkedCold = 0, dialHot = 0;
  int64_t dialColdBlocks = 0, dialEligibleBlocks = 0;

  /// The measured skip rate (kernel counters) when there are any, else the
  /// model's; negative when neither.
  double skipRate(bool *measured = nullptr) const {
    if (stats.size() == 2 && stats[0] > 0) {
      if (measured)
        *measured = true;
      return double(stats[1]) / double(stats[0]);
    }
    if (measured)
      *measured = false;
    return modelRun ? modelSkipRate : -1;
  }

  // --vs-first: O against the first kernel's O.
  bool vsFirstCompared = false;
  double vsFirstRelL2 = 0, vsFirstMaxAbs = 0;
  std::string vsFirstStem;

  int64_t repeatLaunches = 0;
  bool repeatIdentical = true;
  uint64_t repeatDifferingO = 0, repeatDifferingLse = 0;

  int64_t iters = 0;
  std::vector<float> timesMs;
  double medianMs = 0, minMs = 0, meanMs = 0;
  double flops = 0;

  bool passed() const {
    return error.empty() && (!checked || check.pass) && writesOutsideO == 0 &&
           writesOutsideLse == 0 && repeatIdentical &&
           (!statsChecked || statsCheck.pass);
  }
  std::string verdict() const {
    if (!error.empty())
      return "ERROR";
    if (!passed())
      return "FAIL";
    return checked ? "PASS" : "unchecked";
  }
};

std::string baseName(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string fmt(const char *format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, v);
  return buf;
}

std::string jsonString(const std::string &s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof(buf), "\\u%04x", c);
        out += buf;
      } else {
        out += char(c);
      }
    }
  }
  return out + "\"";
}

/// JSON has no inf/NaN: those become null.
std::string jsonNumber(double v) {
  if (!std::isfinite(v))
    return "null";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

//===----------------------------------------------------------------------===//
// Running one kernel
//===----------------------------------------------------------------------===//

/// Stops the current kernel with `what`: used as `return fail(r, ...)`.
bool fail(KernelResult &r, const std::string &what) {
  r.error = what;
  std::printf("  error: %s\n", what.c_str());
  return false;
}

template <typename T>
Status download(const DeviceBuffer &buffer, std::vector<T> &host) {
  return buffer.copyToHost(host.data(), host.size() * sizeof(T));
}

/// ||a - b|| / ||b||.
double relL2Of(const std::vector<double> &a, const std::vector<double> &b) {
  double e = 0, n = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    e += (a[i] - b[i]) * (a[i] - b[i]);
    n += b[i] * b[i];
  }
  return n > 0 ? std::sqrt(e / n) : (e > 0 ? INFINITY : 0.0);
}

/// The dial's cold fraction beside the skip rate.
void printDialLine(const KernelResult &r, const char *indent) {
  bool measured = false;
  double rate = r.skipRate(&measured);
  if (!r.dial || rate < 0)
    return;
  std::printf("%sdial: cold blocks %.2f%% (requested %.2f%%), cold walks "
              "%.2f%% | skip rate %.2f%% (%s)\n",
              indent, 100.0 * r.dialCold, 100.0 * r.dialRequested,
              100.0 * r.dialWalkedCold, 100.0 * rate,
              measured ? "kernel counters" : "model");
}

void printSparseReport(const KernelResult &r) {
  double pct = 100.0 * r.modelSkipRate;
  std::printf("    BLASST model: %" PRId64 " of %" PRId64
              " (group, KV block) walks skipped (%.2f%%), %" PRId64
              " borderline (within %.3g log2 units of T)",
              r.modelSkipped, r.modelVisited, pct, r.modelBorderline,
              r.borderlineEps);
  if (r.modelMaskedSkips || r.modelEmptySkips)
    std::printf("; of the skips %" PRId64 " are blocks no voting row sees a "
                "key of (causal) and %" PRId64 " in groups without rows < "
                "seq_q",
                r.modelMaskedSkips, r.modelEmptySkips);
  std::printf("\n");
  if (r.statsChecked) {
    const StatsCheck &c = r.statsCheck;
    std::printf("    counters: kernel %" PRId64 " visited, %" PRId64
                " skipped (%.2f%%) vs model %" PRId64 ", %" PRId64 ": %s",
                c.kernelVisited, c.kernelSkipped, 100.0 * c.kernelSkipRate(),
                r.modelVisited, r.modelSkipped, c.pass ? "match" : "MISMATCH");
    if (c.skippedWithin)
      std::printf(" (%" PRIu64 " (batch, head)s differ by at most their "
                  "borderline count, max %" PRId64 ")",
                  c.skippedWithin, c.maxSkippedDiff);
    std::printf("\n");
    for (const std::string &f : c.failures)
      std::printf("    FAIL: %s\n", f.c_str());
  } else {
    std::printf("    counters: none (stats = false); predicted skip rate "
                "%.2f%%\n",
                pct);
  }
  std::printf("    error of skipping (reported, not judged): rel L2 vs the "
              "dense reference %.3e (kernel), %.3e (model)\n",
              r.denseRelL2, r.modelDenseRelL2);
  printDialLine(r, "    ");
}

/// Host inputs of one (shape, dtype, seed, distribution, dial). Kernels
/// compared in one run usually share them: they are generated once (at 64K
/// that took longer than timing a kernel) and the last set is kept.
struct HostInputs {
  std::string key;
  std::vector<uint16_t> qBits, kBits, vBits;
  std::vector<float> q, k, v;
  DialInfo dial;
};
std::shared_ptr<const HostInputs> lastInputs;

/// --vs-first: the first kernel's O (of a run), kept to compare the
/// kernels after it with, when they ran on the same inputs and shape.
struct FirstOutput {
  std::string key; ///< the inputs' key plus O's layout
  std::string stem;
  std::vector<uint16_t> bits;
};
std::optional<FirstOutput> firstOutput;

/// Relative L2 error and max abs difference of O against the first
/// kernel's O, over every logical element (the row padding is left out).
void compareWithFirst(KernelResult &r, const std::string &stem,
                      const std::string &inputsKey, const Shape &s,
                      const Strides &os, DType dtype,
                      const std::vector<uint16_t> &outO) {
  std::string key = inputsKey + " O " + std::to_string(os.seq) + " d" +
                    std::to_string(s.headDimV);
  if (!firstOutput) {
    firstOutput = FirstOutput{key, stem, outO};
    std::printf("  vs first: this kernel's O is the reference for the "
                "kernels after it\n");
    return;
  }
  if (firstOutput->key != key) {
    std::printf("  vs first: not compared (the first kernel, %s, ran on "
                "other inputs or another shape)\n",
                firstOutput->stem.c_str());
    return;
  }
  OutputDiff d =
      diffOutputs(s, dtype, outO.data(), firstOutput->bits.data(), os);
  r.vsFirstCompared = true;
  r.vsFirstRelL2 = d.relL2;
  r.vsFirstMaxAbs = d.maxAbs;
  r.vsFirstStem = firstOutput->stem;
  std::printf("  vs first (%s): rel L2 %.3e, max abs %.3e over every O "
              "element\n",
              firstOutput->stem.c_str(), r.vsFirstRelL2, r.vsFirstMaxAbs);
}

//===----------------------------------------------------------------------===//
// The phases of one kernel's run
//===----------------------------------------------------------------------===//
//
// runKernel calls them in this order, which is also the order of the lines
// the bench prints for a kernel. Each phase prints its own lines and records
// its numbers in the KernelResult; a phase that returns false has recorded
// the error with fail(), and the kernel's run ends there.

/// Where the tensors live in memory: Q, K, V contiguous [B, S, H, D] (K and
/// V [B, H, S, D] with --kv-layout bhsd), O with --o-pad extra elements per
/// row (seq) stride. The reference reads the host tensors through the same
/// strides.
struct Layout {
  Strides q, k, v, o;
};

Layout layoutFor(const Shape &s, int64_t oPad, bool kvBHSD) {
  Layout l;
  l.q = Strides::contiguous(s.seqQ, s.qHeads, s.headDim);
  l.k = Strides::contiguous(s.seqKV, s.kvHeads, s.headDim);
  l.v = Strides::contiguous(s.seqKV, s.kvHeads, s.headDimV);
  if (kvBHSD) {
    l.k = {s.kvHeads * s.seqKV * s.headDim, s.headDim, s.seqKV * s.headDim};
    l.v = {s.kvHeads * s.seqKV * s.headDimV, s.headDimV,
           s.seqKV * s.headDimV};
  }
  l.o.head = s.headDimV;
  l.o.seq = s.qHeads * s.headDimV + oPad;
  l.o.batch = s.seqQ * l.o.seq;
  return l;
}

/// The launch arguments for shape `s` in layout `l`, with the tensors at
/// `addr` (Q, K, V, O, LSE, statistics; LSE and statistics only where the
/// spec has them).
AttentionArgs argsFor(const Shape &s, const Layout &l, const AttentionSpec &spec,
                      DType dtype, const std::array<uint64_t, 6> &addr) {
  AttentionArgs args;
  args.q = addr[0];
  args.k = addr[1];
  args.v = addr[2];
  args.o = addr[3];
  args.lse = spec.lse ? addr[4] : 0;
  args.stats = spec.stats ? addr[5] : 0;
  args.batch = s.batch;
  args.seqQ = s.seqQ;
  args.seqKV = s.seqKV;
  args.numQHeads = s.qHeads;
  args.numKVHeads = s.kvHeads;
  args.headDim = s.headDim;
  args.elementBytes = dtypeBytes(dtype);
  args.qStrides = {l.q.batch, l.q.seq, l.q.head};
  args.kStrides = {l.k.batch, l.k.seq, l.k.head};
  args.vStrides = {l.v.batch, l.v.seq, l.v.head};
  args.oStrides = {l.o.batch, l.o.seq, l.o.head};
  return args;
}

/// The decode KV cache of a run (per-sequence lengths, pages): the lengths
/// (empty for a kernel with kv_lengths = uniform), and for paged kernels
/// the block table [batch, maxPages] over a pool of numPages pages.
struct KVCacheLayout {
  std::vector<int64_t> lengths;
  int64_t page = 0, maxPages = 0, numPages = 0;
  std::vector<int32_t> table;
  /// For the keys of the inputs and of --vs-first.
  std::string describe() const {
    std::string d;
    if (!lengths.empty()) {
      d += " lengths";
      for (int64_t n : lengths)
        d += " " + std::to_string(n);
    }
    if (page)
      d += " page " + std::to_string(page);
    return d;
  }
};

uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// The KV cache layout the options ask of this spec and shape (seeded: the
/// same for every kernel of a run), or the reason it cannot be made.
std::string kvCacheFor(const Options &opt, const AttentionSpec &spec,
                       const Shape &s, KVCacheLayout *out) {
  KVCacheLayout c;
  if (!spec.kvPerSequence && (opt.kvLengthsRandom || !opt.kvLengths.empty()))
    return "--kv-lengths: the kernel was built with kv_lengths = uniform "
           "(every sequence seq_kv); build it with kv_lengths=per_sequence";
  if (!spec.kvPerSequence && opt.kvOverlong)
    return "--kv-overlong: the kernel was built with kv_lengths = uniform "
           "(it reads no lengths); build it with kv_lengths=per_sequence";
  if (spec.kvPerSequence) {
    if (opt.kvLengthsRandom) {
      for (int64_t b = 0; b < s.batch; ++b)
        c.lengths.push_back(
            b == 0 ? s.seqKV
                   : int64_t(mix64(opt.seed * 7919 + uint64_t(b)) %
                             uint64_t(s.seqKV + 1)));
    } else if (!opt.kvLengths.empty()) {
      if (int64_t(opt.kvLengths.size()) != s.batch)
        return "--kv-lengths gives " + std::to_string(opt.kvLengths.size()) +
               " lengths for --batch " + std::to_string(s.batch);
      for (int64_t n : opt.kvLengths)
        if (n > s.seqKV)
          return "--kv-lengths: " + std::to_string(n) +
                 " is longer than --seq-kv " + std::to_string(s.seqKV);
      c.lengths = opt.kvLengths;
    } else {
      c.lengths.assign(size_t(s.batch), s.seqKV);
    }
  }
  if (spec.paged()) {
    c.page = spec.kvPageSize;
    c.maxPages = (s.seqKV + c.page - 1) / c.page;
    // Every sequence's pages plus one spare per sequence, shuffled.
    std::vector<int64_t> pagesOf;
    for (int64_t b = 0; b < s.batch; ++b) {
      int64_t len = c.lengths.empty() ? s.seqKV : c.lengths[size_t(b)];
      pagesOf.push_back((len + c.page - 1) / c.page);
      c.numPages += pagesOf.back() + 1;
    }
    if (c.numPages > INT32_MAX)
      return "the page pool would have more than 2^31 - 1 pages";
    std::vector<int32_t> perm(size_t(c.numPages));
    for (size_t i = 0; i < perm.size(); ++i)
      perm[i] = int32_t(i);
    for (size_t i = perm.size(); i > 1; --i)
      std::swap(perm[i - 1],
                perm[size_t(mix64(opt.seed * 104729 + i) % uint64_t(i))]);
    c.table.assign(size_t(s.batch * c.maxPages), 0);
    size_t next = 0;
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t p = 0; p < c.maxPages; ++p)
        c.table[size_t(b * c.maxPages + p)] =
            p < pagesOf[size_t(b)]
                ? perm[next++]
                // Unused entries name some page of the pool (another
                // sequence's): the kernel must not read them.
                : perm[size_t(mix64(uint64_t(b * 131 + p)) %
                              uint64_t(c.numPages))];
  }
  *out = std::move(c);
  return "";
}

/// The KV cache fields of the launch arguments (pool strides for a paged
/// cache), with the lengths and the table at `lens`, `table`.
void setKVCacheArgs(const KVCacheLayout &c, const Shape &s, uint64_t lens,
                    uint64_t table, AttentionArgs *args) {
  if (!c.lengths.empty())
    args->seqLensKV = lens;
  if (!c.page)
    return;
  args->blockTable = table;
  args->maxPages = c.maxPages;
  args->numPages = c.numPages;
  int64_t row = s.kvHeads * s.headDim;
  args->kStrides = {c.page * row, row, s.headDim};
  int64_t rowV = s.kvHeads * s.headDimV;
  args->vStrides = {c.page * rowV, rowV, s.headDimV};
}

/// The page pool of a contiguous [B, seqKV, H, D] tensor: every token of
/// every sequence's length in its page; the other rows of a page (past a
/// length, or pages of no sequence) hold finite values (1.0 or the
/// contiguous tensor's rows past the length).
std::vector<uint16_t> pagePool(const KVCacheLayout &c, const Shape &s,
                               int64_t dim, const std::vector<uint16_t> &bits,
                               DType dtype) {
  int64_t row = s.kvHeads * dim;
  std::vector<uint16_t> pool(size_t(c.numPages * c.page * row),
                             floatToHalf(dtype, 1.0f));
  for (int64_t b = 0; b < s.batch; ++b) {
    int64_t len = c.lengths.empty() ? s.seqKV : c.lengths[size_t(b)];
    int64_t pages = (len + c.page - 1) / c.page;
    for (int64_t p = 0; p < pages; ++p) {
      int64_t page = c.table[size_t(b * c.maxPages + p)];
      for (int64_t r = 0; r < c.page && p * c.page + r < s.seqKV; ++r)
        std::memcpy(&pool[size_t((page * c.page + r) * row)],
                    &bits[size_t((b * s.seqKV + p * c.page + r) * row)],
                    size_t(row) * 2);
    }
  }
  return pool;
}

/// Load: reads STEM.{cubin,meta,spec} into *kernel (loading the module on
/// the GPU), records and prints what was loaded. False when it does not
/// load.
bool loadKernel(const Context &ctx, const std::string &stem,
                AttentionKernel *kernel, KernelResult &r) {
  r.stem = stem;
  r.name = baseName(stem);
  if (Status s = AttentionKernel::loadFiles(ctx, stem, kernel); !s)
    return fail(r, s.message());
  const AttentionSpec &spec = kernel->spec();
  const KernelInfo &info = kernel->info();
  r.name = info.kernelName;
  r.specText = spec.toShortString();
  r.dtype = spec.dtype;
  r.sparse = !spec.sparsity.isDense();
  std::printf("  kernel %s: %s, block_m %d, block_n %d, %d threads, %d B "
              "smem%s%s\n",
              info.kernelName.c_str(), info.target.c_str(), info.blockM,
              info.blockN, info.threads, info.smemBytes,
              info.compilerVersion.empty() ? "" : ", built by ",
              info.compilerVersion.c_str());
  std::printf("  spec: %s\n", r.specText.c_str());
  return true;
}

/// The problem the options ask of this spec (sequence lengths default to
/// 1024, or 1 query for decode specs).
Shape shapeFor(const Options &opt, const AttentionSpec &spec) {
  Shape s;
  s.batch = opt.batch;
  bool decode = spec.phase == Phase::Decode;
  s.seqQ =
      opt.seqQ ? *opt.seqQ : (decode ? 1 : (opt.seqKV ? *opt.seqKV : 1024));
  s.seqKV = opt.seqKV ? *opt.seqKV : (opt.seqQ && !decode ? *opt.seqQ : 1024);
  // --kv-lengths: the bound is the largest length unless --seq-kv says.
  if (!opt.seqKV && !opt.kvLengths.empty())
    s.seqKV = std::max<int64_t>(
        1, *std::max_element(opt.kvLengths.begin(), opt.kvLengths.end()));
  s.qHeads = spec.numQHeads;
  s.kvHeads = spec.numKVHeads;
  s.headDim = spec.headDim;
  s.headDimV = spec.headDimV;
  s.causal = spec.causal;
  s.scale = spec.effectiveScale();
  return s;
}

/// Shape: shapeFor, recorded in r and printed.
void setUpShape(const Options &opt, const AttentionSpec &spec,
                KernelResult &r) {
  Shape &s = r.shape;
  s = shapeFor(opt, spec);
  r.shapeKnown = true;
  r.oPad = opt.oPad;
  r.kvBHSD = opt.kvBHSD;
  r.flops = s.flops();
  std::printf("  shape: %s (batch x seq_q x seq_kv, q/kv heads, head dim), "
              "scale %.6g, O row stride +%" PRId64 ", K/V %s\n",
              s.describe().c_str(), s.scale, opt.oPad,
              opt.kvBHSD ? "[B, H, S, D]" : "[B, S, H, D]");
}

/// The skipping model's geometry for this kernel (its CTA, voting groups
/// and KV block: the short-sequence entry's where the runtime launches it
/// for `shape`, chooseShortEntry) and the options' model settings. The
/// threshold stays -inf until resolveThreshold.
SkipConfig skipConfigFor(const KernelInfo &info, const Shape &shape,
                         const Options &opt) {
  SkipConfig c;
  c.blockM = info.blockM;
  c.groupRows = std::max(1, info.blockM / kVotingGroups);
  c.blockN = chooseShortEntry(info, shape.seqQ, shape.seqKV, shape.causal)
                 ? info.shortBlockN
                 : info.blockN;
  c.borderlineEps = opt.borderlineEps;
  c.emptyGroup = opt.emptyGroups;
  // Decode: the tile's packed rows vote together; the split count is the
  // launch's (set once the launch is prepared).
  c.qGroup = info.qGroup;
  // Decode: the sink seed and the vote on each split's first block.
  c.sinkSeed = info.sinkSeed != 0;
  c.voteFirstBlock = info.voteFirstBlock != 0;
  c.splitChunk = info.splitChunk;
  return c;
}

/// Inputs: the host Q, K, V for r.shape. Element i of each depends only on
/// the seed (or the --dial configuration), so kernels of one shape see the
/// same data: the previous kernel's set is reused when its key matches.
/// With --dial, records and prints the dial's numbers (`skipCfg` gives the
/// walks for the walked cold fraction).
std::shared_ptr<const HostInputs>
prepareInputs(const Options &opt, const KernelInfo &info, const Layout &l,
              const SkipConfig &skipCfg, KernelResult &r) {
  const Shape &s = r.shape;
  const DType dtype = r.dtype;
  char key[512];
  std::snprintf(
      key, sizeof key,
      "%" PRId64 "x%" PRId64 "x%" PRId64 " h%" PRId64 "/%" PRId64 " d%" PRId64
      "/%" PRId64 " c%d s%a t%d seed %" PRIu64 " %s dial %a%s runs %a n%d",
      s.batch, s.seqQ, s.seqKV, s.qHeads, s.kvHeads, s.headDim, s.headDimV,
      int(s.causal), s.scale, int(dtype), uint64_t(opt.seed),
      toString(opt.dist), opt.dial ? *opt.dial : -1.0,
      opt.dialEven ? " even" : "", opt.dialRuns, opt.dial ? skipCfg.blockN : 0);
  std::shared_ptr<const HostInputs> in = lastInputs;
  if (!in || in->key != key) {
    lastInputs.reset(); // Free the previous set before making the next.
    auto fresh = std::make_shared<HostInputs>();
    fresh->key = key;
    if (opt.dial) {
      DialConfig dc;
      dc.coldFraction = *opt.dial;
      dc.blockN = skipCfg.blockN;
      dc.even = opt.dialEven;
      dc.runLength = opt.dialRuns;
      generateDialInputs(s, dtype, dc, opt.seed, l.q,
                         size_t(s.batch * l.q.batch), fresh->qBits, fresh->q,
                         l.k, size_t(s.batch * l.k.batch), fresh->kBits,
                         fresh->k, opt.threads, &fresh->dial);
    } else {
      generateTensor(dtype, opt.dist, opt.seed, 1, size_t(s.batch * l.q.batch),
                     fresh->qBits, fresh->q, opt.threads);
      generateTensor(dtype, opt.dist, opt.seed, 2, size_t(s.batch * l.k.batch),
                     fresh->kBits, fresh->k, opt.threads);
    }
    generateTensor(dtype, opt.dist, opt.seed, 3, size_t(s.batch * l.v.batch),
                   fresh->vBits, fresh->v, opt.threads);
    in = lastInputs = std::move(fresh);
  } else {
    std::printf("  inputs: the previous kernel's (same shape, dtype, seed "
                "and dial)\n");
  }
  if (opt.dial) {
    const DialInfo &dial = in->dial;
    r.dial = true;
    r.dialRequested = *opt.dial;
    r.dialCold = dial.coldFraction();
    r.dialColdBlocks = dial.coldBlocks;
    r.dialEligibleBlocks = dial.eligibleBlocks;
    r.dialHot = dial.hot;
    r.dialWalkedCold = dialWalkedColdFraction(s, skipCfg, dial);
    std::printf("  dial: F = %.3f requested; %" PRId64 " of %" PRId64
                " KV blocks cold (%.3f; block 0 holds the sink), %.3f of the "
                "(group, block) walks are in cold blocks; hot keys ~+%.3g, "
                "cold ~-%.3g log2 units; max |q| %.3g, |k| %.3g\n",
                *opt.dial, dial.coldBlocks, dial.eligibleBlocks,
                dial.coldFraction(), r.dialWalkedCold, dial.hot, dial.hot,
                dial.maxAbsQ, dial.maxAbsK);
  }
  return in;
}

/// Threshold: sets ABI parameter 12 (r.log2Threshold: --log2-threshold,
/// else --sparsity, else the --dial default for sparse kernels, else the
/// spec's). For sparse kernels also T (r.kernelT, skipCfg->log2Threshold),
/// printed. (--stats and --sparsity were checked against the kernel by
/// checkBeforeGpu.)
void resolveThreshold(const Options &opt, const AttentionKernel &kernel,
                      const DialInfo &dial, SkipConfig *skipCfg,
                      KernelResult &r) {
  const AttentionSpec &spec = kernel.spec();
  if (opt.log2Threshold)
    r.log2Threshold = *opt.log2Threshold;
  else if (opt.deviceThreshold)
    r.log2Threshold = *opt.deviceThreshold;
  else if (opt.sparsity && !opt.sparsity->isDense()) {
    AttentionSpec overridden = spec;
    overridden.sparsity = *opt.sparsity;
    r.log2Threshold = log2ThresholdForSpec(overridden);
  } else if (opt.dial && r.sparse)
    r.log2Threshold = float(paramForKernelLog2Threshold(
        spec.sparsity, dial.defaultLog2Threshold(), r.shape.seqKV));
  else
    r.log2Threshold = kernel.specLog2Threshold();
  if (r.sparse) {
    r.kernelT = kernelLog2Threshold(spec.sparsity, double(r.log2Threshold),
                                    r.shape.seqKV);
    skipCfg->log2Threshold = r.kernelT;
    r.borderlineEps = skipCfg->borderlineEps;
    r.emptyGroups = toString(skipCfg->emptyGroup);
    std::string groups =
        skipCfg->qGroup
            ? "per tile (" +
                  std::to_string(skipCfg->qGroup *
                                 (skipCfg->blockM / skipCfg->qGroup)) +
                  " packed rows: " + std::to_string(skipCfg->qGroup) +
                  " q heads x " +
                  std::to_string(skipCfg->blockM / skipCfg->qGroup) +
                  " tokens; each KV split's first block " +
                  (skipCfg->voteFirstBlock && skipCfg->sinkSeed
                       ? "voted on against the sink seed)"
                       : "kept)")
            : "with " + std::to_string(skipCfg->groupRows) + "-row groups";
    std::printf("  BLASST: %s, parameter 12 = %.6g (%s), T = %.6g log2 units "
                "(lambda = 2^T = %.3g, ln_lambda %.4g); skipping modeled "
                "%s, %" PRId64 "-key blocks\n",
                sparsityToString(spec.sparsity).c_str(),
                double(r.log2Threshold),
                opt.log2Threshold     ? "--log2-threshold"
                : opt.deviceThreshold ? "--device-threshold, read by the "
                                        "kernel from device memory"
                : opt.dial            ? "--dial default"
                                      : "from the spec",
                r.kernelT, std::exp2(r.kernelT), r.kernelT * 0.6931471805599453,
                groups.c_str(), skipCfg->blockN);
  }
}

//===----------------------------------------------------------------------===//
// Before any GPU
//===----------------------------------------------------------------------===//

/// What the options ask of one kernel, checked against its files with no
/// driver: --stats and --sparsity against what was compiled in (the policy's
/// kind and the counters; the threshold value is a launch argument), the
/// launch arguments the options make (validateArgsForKernel: --o-pad, the
/// sequence lengths, batch, heads) and the host memory they need. "" or the
/// error.
std::string checkBeforeGpu(const Options &opt, const KernelFiles &files) {
  const AttentionSpec &spec = files.spec;
  const KernelInfo &info = files.info;
  if (opt.requireStats && !spec.stats)
    return "--stats: the kernel was built without statistics; rebuild it "
           "with blasst-compile --stats";
  if (opt.deviceThreshold && spec.sparsity.isDense())
    return "--device-threshold: the kernel was built dense and reads no "
           "threshold; rebuild it with blasst-compile --sparsity";
  if (opt.sparsity) {
    std::string given = "--sparsity " + sparsityToString(*opt.sparsity);
    if (opt.sparsity->isDense() && !spec.sparsity.isDense())
      return given + ": the kernel was built for " +
             sparsityToString(spec.sparsity) +
             "; the policy is compiled in (blasst-compile --sparsity none "
             "builds the dense kernel)";
    if (!opt.sparsity->isDense() && spec.sparsity.isDense())
      return given + ": the kernel was built dense; rebuild it with "
                     "blasst-compile --sparsity";
    if (!opt.sparsity->isDense() && opt.sparsity->kind != spec.sparsity.kind)
      return given + ": the kernel was built for " +
             sparsityToString(spec.sparsity) +
             "; only the value of the same kind of policy can change at "
             "launch";
  }

  // The arguments the run will pass, at made-up (aligned) addresses.
  const Shape s = shapeFor(opt, spec);
  const Layout l = layoutFor(s, opt.oPad, opt.kvBHSD);
  AttentionArgs args =
      argsFor(s, l, spec, spec.dtype,
              {uint64_t(1) << 32, uint64_t(2) << 32, uint64_t(3) << 32,
               uint64_t(4) << 32, uint64_t(5) << 32, uint64_t(6) << 32});
  KVCacheLayout kv;
  if (std::string why = kvCacheFor(opt, spec, s, &kv); !why.empty())
    return why;
  setKVCacheArgs(kv, s, uint64_t(7) << 32, uint64_t(8) << 32, &args);
  if (Status st = validateArgsForKernel(args, info, spec, info.kernelName); !st)
    return "these options make arguments the kernel cannot take (--seq, "
           "--seq-q, --seq-kv, --batch, --o-pad): " +
           st.message();

  // Host memory: Q, K, V as 16-bit and float copies, O as read back, and
  // the references in double (two of them for sparse kernels).
  double qkv = double(s.batch) *
               (double(s.seqQ) * s.qHeads * s.headDim +
                double(s.seqKV) * s.kvHeads * (s.headDim + s.headDimV));
  double oElements = double(s.batch) * l.o.batch;
  double refRows = opt.check == CheckMode::None ? 0
                   : opt.check == CheckMode::Rows
                       ? double(std::min(opt.checkRows, s.seqQ))
                       : double(s.seqQ);
  double refBytes = 8.0 * s.batch * s.qHeads * refRows * s.headDimV *
                    (spec.sparsity.isDense() ? 1 : 2);
  double bytes = 6 * qkv + 2 * oElements + refBytes;
  double physical = double(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  if (physical > 0 && bytes > physical)
    return "the run needs about " + fmt("%.1f", bytes / double(1 << 30)) +
           " GiB of host memory (inputs, outputs, references) but this "
           "machine has " +
           fmt("%.1f", physical / double(1 << 30)) +
           " GiB; use a smaller --batch or --seq, or --check rows:K";
  return "";
}

/// "" when --json FILE can be written (an existing writable file, or a new
/// one in a writable directory), else why not.
std::string checkJsonPath(const std::string &path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode))
      return "--json " + path + ": is a directory";
    if (::access(path.c_str(), W_OK) != 0)
      return "--json " + path + ": cannot write it: " + std::strerror(errno);
    return "";
  }
  size_t slash = path.find_last_of('/');
  std::string dir = slash == std::string::npos ? "."
                    : slash == 0               ? "/"
                                               : path.substr(0, slash);
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return "--json " + path + ": cannot create it in '" + dir +
           "': " + std::strerror(errno);
  return "";
}

/// The device side of one kernel's run: its buffers, the prepared launch
/// and the outputs as last read back.
struct DeviceRun {
  const Context *ctx = nullptr;
  const AttentionKernel *kernel = nullptr;
  DeviceBuffer q, k, v, o, lse, stats, workspace, lens, table, threshold;
  AttentionLaunch launch;
  /// O and LSE with their poisoned guards (LSE empty without lse = true).
  std::vector<uint16_t> outO;
  std::vector<float> outLse;
  /// The kernel's counters, int64 [batch, qHeads, 2], after firstRun (empty
  /// without stats = true).
  std::vector<int64_t> statsRaw;

  /// `n` launches back to back (not waited for).
  Status launchTimes(int64_t n) {
    for (int64_t i = 0; i < n; ++i)
      if (Status st = kernel->launch(launch, nullptr); !st)
        return st;
    return Status::success();
  }
  /// One launch between `t`'s two events.
  Status timedLaunch(EventTimer &t) {
    Status st = t.start(nullptr);
    if (st)
      st = kernel->launch(launch, nullptr);
    if (st)
      st = t.stop(nullptr);
    return st;
  }

  /// Poisons O and LSE (0xFF bytes: NaN in bf16/f16/f32), clears the
  /// counters, launches `launches` times back to back, waits, and reads O
  /// and LSE back. `doing` names the step in the error of a failed kernel.
  Status poisonLaunchAndRead(int64_t launches, const char *doing) {
    const AttentionSpec &spec = kernel->spec();
    if (Status st = o.fill(0xFF); !st)
      return st;
    if (spec.lse)
      if (Status st = lse.fill(0xFF); !st)
        return st;
    if (spec.stats)
      if (Status st = stats.fill(0); !st)
        return st;
    if (Status st = launchTimes(launches); !st)
      return st;
    if (Status st = ctx->synchronize(); !st)
      return Status::error(std::string("the kernel failed while ") + doing +
                           ": " + st.message());
    if (Status st = download(o, outO); !st)
      return st;
    if (spec.lse)
      if (Status st = download(lse, outLse); !st)
        return st;
    return Status::success();
  }
};

/// --iters' timers, created before the first timed launch.
Status makeTimers(const Context &ctx, int64_t n, std::vector<EventTimer> *out) {
  out->resize(size_t(n));
  for (EventTimer &t : *out)
    if (Status st = EventTimer::create(ctx, &t); !st)
      return st;
  return Status::success();
}

/// The timers' times, after the stream finished.
Status readTimes(std::vector<EventTimer> &timers, std::vector<float> *out) {
  for (EventTimer &t : timers) {
    float ms = 0;
    if (Status st = t.elapsedMs(&ms); !st)
      return st;
    out->push_back(ms);
  }
  return Status::success();
}

/// Launch setup: allocates Q, K, V, O (plus a poisoned guard after O and
/// LSE), LSE and the counters as the spec asks, uploads the inputs and
/// prepares the launch (tensor maps encoded once, outside any timing).
/// Records and prints the launch shape.
bool prepareLaunch(const Options &opt, const Context &ctx,
                   const AttentionKernel &kernel,
                   const HostInputs &in, const Layout &l, KernelResult &r,
                   DeviceRun *run) {
  const AttentionSpec &spec = kernel.spec();
  const Shape &s = r.shape;
  run->ctx = &ctx;
  run->kernel = &kernel;
  const size_t oElements = size_t(s.batch * l.o.batch) + kGuardElements;
  const size_t lseElements =
      spec.lse ? size_t(s.batch * s.qHeads * s.seqQ) + kGuardElements : 0;
  KVCacheLayout kv;
  if (std::string why = kvCacheFor(opt, spec, s, &kv); !why.empty())
    return fail(r, why);
  // A paged cache: K and V as the page pool the block table names.
  std::vector<uint16_t> kPool, vPool;
  if (kv.page) {
    kPool = pagePool(kv, s, s.headDim, in.kBits, r.dtype);
    vPool = pagePool(kv, s, s.headDimV, in.vBits, r.dtype);
  }
  const std::vector<uint16_t> &kUp = kv.page ? kPool : in.kBits;
  const std::vector<uint16_t> &vUp = kv.page ? vPool : in.vBits;
  for (Status st :
       {DeviceBuffer::allocate(ctx, in.qBits.size() * 2, "Q", &run->q),
        DeviceBuffer::allocate(ctx, kUp.size() * 2, "K", &run->k),
        DeviceBuffer::allocate(ctx, vUp.size() * 2, "V", &run->v),
        DeviceBuffer::allocate(ctx, oElements * 2, "O", &run->o)})
    if (!st)
      return fail(r, st.message());
  // --kv-overlong: the device's lengths past the bound (the checks keep
  // seq_kv, which the kernel clamps them to).
  std::vector<int32_t> lens32;
  for (int64_t n : kv.lengths)
    lens32.push_back(int32_t(
        n == s.seqKV ? std::min<int64_t>(n + opt.kvOverlong, INT32_MAX) : n));
  if (!lens32.empty())
    if (Status st = DeviceBuffer::allocate(ctx, lens32.size() * 4,
                                           "KV lengths", &run->lens);
        !st || !(st = run->lens.upload(lens32)))
      return fail(r, st.message());
  if (kv.page)
    if (Status st = DeviceBuffer::allocate(ctx, kv.table.size() * 4,
                                           "block table", &run->table);
        !st || !(st = run->table.upload(kv.table)))
      return fail(r, st.message());
  r.kvCache = kv.describe();
  if (!kv.lengths.empty() || kv.page) {
    std::printf("  kv cache: %s, %s\n",
                kv.lengths.empty() ? "one length" : "per-sequence lengths",
                kv.page ? ("paged, page " + std::to_string(kv.page) + ", " +
                           std::to_string(kv.numPages) + " pages, " +
                           std::to_string(kv.maxPages) +
                           " table columns (shuffled)")
                              .c_str()
                        : "contiguous");
    if (!kv.lengths.empty()) {
      std::string list;
      for (size_t b = 0; b < kv.lengths.size() && b < 16; ++b)
        list += (b ? "," : "") + std::to_string(kv.lengths[b]);
      std::printf("  kv lengths: %s%s (bound seq_kv %" PRId64 ")\n",
                  list.c_str(), kv.lengths.size() > 16 ? ",..." : "",
                  s.seqKV);
    }
  }
  if (spec.lse)
    if (Status st =
            DeviceBuffer::allocate(ctx, lseElements * 4, "LSE", &run->lse);
        !st)
      return fail(r, st.message());
  if (spec.stats)
    if (Status st = DeviceBuffer::allocate(
            ctx, size_t(s.batch * s.qHeads * 2) * 8, "stats", &run->stats);
        !st)
      return fail(r, st.message());
  for (Status st : {run->q.upload(in.qBits), run->k.upload(kUp),
                    run->v.upload(vUp)})
    if (!st)
      return fail(r, st.message());

  AttentionArgs args =
      argsFor(s, l, spec, r.dtype,
              {run->q.address(), run->k.address(), run->v.address(),
               run->o.address(), run->lse.address(), run->stats.address()});
  setKVCacheArgs(kv, s, run->lens.address(), run->table.address(), &args);
  // Decode: the KV splits' workspace, zeroed once (the kernel leaves its
  // counters at zero for the next launch).
  args.kvSplits = int(r.kvSplitsAsked);
  args.splitMerge = r.splitMerge;
  if (size_t bytes = kernel.workspaceBytes(args)) {
    if (Status st = DeviceBuffer::allocate(ctx, bytes, "workspace",
                                           &run->workspace);
        !st)
      return fail(r, st.message());
    if (Status st = run->workspace.fill(0); !st)
      return fail(r, st.message());
    args.workspace = run->workspace.address();
    args.workspaceBytes = bytes;
  }

  if (opt.deviceThreshold) {
    // The threshold as one float in device memory (ABI parameter 13), the
    // way a CUDA graph or the Python op's tensor threshold passes it.
    if (Status st = DeviceBuffer::allocate(ctx, sizeof(float), "threshold",
                                           &run->threshold);
        !st)
      return fail(r, st.message());
    if (Status st = run->threshold.upload(std::vector<float>{r.log2Threshold});
        !st)
      return fail(r, st.message());
    args.log2ThresholdPtr = run->threshold.address();
  }
  if (Status st = kernel.prepare(args, r.log2Threshold, &run->launch); !st)
    return fail(r, st.message());
  r.grid = run->launch.grid;
  r.block = run->launch.block;
  r.smemBytes = run->launch.smemBytes;
  r.kvSplits = run->launch.kvSplits;
  r.mergeKernel = run->launch.mergeLaunch != 0;
  r.entry = run->launch.leanEntry    ? "lean"
            : run->launch.shortEntry ? "short"
            : run->launch.tmaEntry   ? "tma"
                                     : "kernel";
  std::printf(
      "  launch: grid %s, block %s, %zu B dynamic smem%s%s%s\n",
      run->launch.grid.str().c_str(), run->launch.block.str().c_str(),
      run->launch.smemBytes,
      kernel.info().splitKV ? (", " + std::to_string(r.kvSplits) + " KV split" +
                               (r.kvSplits == 1 ? "" : "s"))
                                  .c_str()
                            : "",
      r.mergeKernel
          ? (", merge kernel grid " + run->launch.mergeGrid.str()).c_str()
          : "",
      run->launch.leanEntry
          ? ", the lean entry (CTAs sharing all tiles' KV blocks; "
            "the splits are slots per tile)"
      : run->launch.shortEntry
          ? (", the short-sequence entry (" +
             std::to_string(kernel.info().shortBlockN) + "-key blocks" +
             (kernel.info().shortCtasPerSM == 2 ? ", two CTAs per SM" : "") +
             (kernel.info().shortPersistent ? ", persistent CTAs" : "") + ")")
                .c_str()
      : run->launch.tmaEntry
          ? ", the TMA entry (K/V by TMA: DRAM under 4.2 TB/s)"
      : kernel.info().balancedSplits && run->launch.decodeSplits < 0
          ? (r.mergeKernel ? ", splits follow the lengths: every tile the "
                             "same count (the merge kernel's slots)"
                           : ", splits follow the lengths: every tile the "
                             "same count (past two waves)")
      : kernel.info().balancedSplits && run->launch.decodeSplits == 1
          ? ", splits follow the lengths: one per tile"
      : kernel.info().balancedSplits
          ? (", splits follow the lengths (a budget of " +
             std::to_string(run->launch.decodeSplits) + " CTAs)")
                .c_str()
          : "");
  run->outO.resize(oElements);
  run->outLse.resize(lseElements);
  return true;
}

/// First run: one launch on poisoned outputs whose O/LSE the checks read,
/// and the counters read back, recorded (summed) and printed. Runs when
/// anything reads its results: a check, --repeat-launches, --vs-first, or a
/// kernel with counters (even under --check none).
bool firstRun(const Options &opt, DeviceRun &run, KernelResult &r) {
  const AttentionSpec &spec = run.kernel->spec();
  bool needFirstRun = opt.check != CheckMode::None || opt.repeatLaunches > 0 ||
                      spec.stats || opt.vsFirst;
  if (!needFirstRun)
    return true;
  if (Status st = run.poisonLaunchAndRead(1, "running it once (checked run)");
      !st)
    return fail(r, st.message());
  if (!spec.stats)
    return true;
  const Shape &s = r.shape;
  std::vector<int64_t> &stats = run.statsRaw;
  stats.assign(size_t(s.batch * s.qHeads * 2), 0);
  if (Status st = download(run.stats, stats); !st)
    return fail(r, st.message());
  r.stats = {0, 0};
  for (size_t i = 0; i < stats.size(); ++i)
    r.stats[i % 2] += stats[i];
  std::printf("  stats: %" PRId64 " (group, KV block) pairs visited, "
              "%" PRId64 " skipped (summed over batch and heads): skip "
              "rate %.2f%%\n",
              r.stats[0], r.stats[1],
              r.stats[0] ? 100.0 * double(r.stats[1]) / double(r.stats[0])
                         : 0.0);
  return true;
}

/// Check: the first run's O and LSE against the CPU reference for the
/// --check rows (dense kernels), or against the skipping model (sparse
/// kernels: the model's decisions need every row's scores; the dense
/// reference comes from the same scores for the error of skipping, and the
/// counters are compared with the model's). Also counts writes outside O and
/// past LSE's end. Records everything in r; printCheckReport prints it.
void checkAgainstReference(const Options &opt, const HostInputs &in,
                           const Layout &l, const SkipConfig &skipCfg,
                           const DeviceRun &run, KernelResult &r) {
  const Shape &s = r.shape;
  const DType dtype = r.dtype;
  const bool hasLse = run.kernel->spec().lse;
  r.checked = true;
  std::vector<int64_t> rows = opt.check == CheckMode::Full
                                  ? selectRows(s.seqQ, s.seqQ)
                                  : selectRows(s.seqQ, opt.checkRows);
  r.checkMode = opt.check == CheckMode::Full
                    ? "full"
                    : "rows:" + std::to_string(opt.checkRows);
  auto t0 = std::chrono::steady_clock::now();
  Reference ref, denseRef;
  SkipModel model;
  KVCacheLayout kv;
  (void)kvCacheFor(opt, run.kernel->spec(), s, &kv); // checked before
  if (!kv.lengths.empty() && !r.sparse) {
    // Per-sequence lengths: each batch entry against the reference of its
    // own length (a batch of one, contiguous K/V of that length), merged:
    // counts add, rel L2 and max abs are the worst entry's.
    CheckResult all;
    for (int64_t b = 0; b < s.batch; ++b) {
      Shape sb = s;
      sb.batch = 1;
      sb.seqKV = kv.lengths[size_t(b)];
      Reference rb;
      referenceAttention(sb, in.q.data() + b * l.q.batch, l.q,
                         in.k.data() + b * l.k.batch, l.k,
                         in.v.data() + b * l.v.batch, l.v, rows, opt.threads,
                         &rb);
      const float *lseB =
          hasLse ? run.outLse.data() + b * s.qHeads * s.seqQ : nullptr;
      CheckResult c = compareOutputs(sb, dtype, rb, run.outO.data() + b * l.o.batch,
                                     l.o, lseB, tolerancesFor(dtype));
      all.elementsChecked += c.elementsChecked;
      all.rowsChecked = c.rowsChecked;
      all.nonFinite += c.nonFinite;
      all.overBound += c.overBound;
      all.relL2 = std::max(all.relL2, c.relL2);
      if (c.maxAbs >= all.maxAbs) {
        all.maxAbs = c.maxAbs;
        all.worstB = b;
        all.worstH = c.worstH;
        all.worstRow = c.worstRow;
        all.worstD = c.worstD;
        all.worstRef = c.worstRef;
        all.worstOut = c.worstOut;
      }
      all.lseChecked |= c.lseChecked;
      all.lseCount += c.lseCount;
      all.lseNonFinite += c.lseNonFinite;
      all.lseMaskedMismatch += c.lseMaskedMismatch;
      all.lseMaxAbs = std::max(all.lseMaxAbs, c.lseMaxAbs);
      all.pass &= c.pass;
      for (const std::string &f : c.failures)
        all.failures.push_back("batch entry " + std::to_string(b) +
                               " (KV length " +
                               std::to_string(sb.seqKV) + "): " + f);
      for (int64_t row : rows)
        r.maskedRowsChecked += sb.visibleKeys(row) == 0;
    }
    r.referenceSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    r.check = std::move(all);
    r.writesOutsideO = countWritesOutside(s, l.o, run.outO.data(),
                                          run.outO.size());
    if (hasLse)
      for (size_t i = size_t(s.batch * s.qHeads * s.seqQ);
           i < run.outLse.size(); ++i) {
        uint32_t bits;
        std::memcpy(&bits, &run.outLse[i], 4);
        r.writesOutsideLse += bits != kPoison32;
      }
    return;
  }
  if (r.sparse) {
    skipModelAttention(s, in.q.data(), l.q, in.k.data(), l.k, in.v.data(), l.v,
                       rows, skipCfg, opt.threads, &model, &denseRef);
    r.modelRun = true;
    r.modelVisited = model.totalVisited;
    r.modelSkipped = model.totalSkipped;
    r.modelBorderline = model.totalBorderline;
    r.modelMaskedSkips = model.maskedSkips;
    r.modelEmptySkips = model.emptyGroupSkips;
    r.modelSkipRate = model.skipRate();
  } else {
    referenceAttention(s, in.q.data(), l.q, in.k.data(), l.k, in.v.data(), l.v,
                       rows, opt.threads, &ref);
  }
  const Reference &want = r.sparse ? model.out : ref;
  r.referenceSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  const uint16_t *o = run.outO.data();
  const float *lse = hasLse ? run.outLse.data() : nullptr;
  r.check = compareOutputs(s, dtype, want, o, l.o, lse, tolerancesFor(dtype));
  if (r.sparse) {
    r.denseRelL2 = compareOutputs(s, dtype, denseRef, o, l.o, nullptr,
                                  tolerancesFor(dtype))
                       .relL2;
    r.modelDenseRelL2 = relL2Of(model.out.o, denseRef.o);
    if (!r.check.pass && model.totalBorderline > 0) {
      BorderlineRecheck again =
          recheckWithoutBorderline(s, dtype, model, o, l.o, lse);
      r.borderlineRows = again.rows;
      r.borderlineRecheck = again.pass ? 1 : 0;
    }
    if (run.kernel->spec().stats && !run.statsRaw.empty()) {
      r.statsChecked = true;
      r.statsCheck = compareStats(s, model, run.statsRaw.data());
    }
  }
  r.writesOutsideO = countWritesOutside(s, l.o, o, run.outO.size());
  if (hasLse) {
    for (size_t i = size_t(s.batch * s.qHeads * s.seqQ); i < run.outLse.size();
         ++i) {
      uint32_t bits;
      std::memcpy(&bits, &run.outLse[i], 4);
      r.writesOutsideLse += bits != kPoison32;
    }
  }
  r.maskedRowsChecked = 0;
  for (int64_t b = 0; b < (kv.lengths.empty() ? 1 : s.batch); ++b) {
    Shape sb = s;
    if (!kv.lengths.empty())
      sb.seqKV = kv.lengths[size_t(b)];
    for (int64_t row : rows)
      r.maskedRowsChecked += sb.visibleKeys(row) == 0;
  }
}

/// Report of the check: what was compared, the errors, each failure, and
/// for sparse kernels the model, the counters and the error of skipping.
void printCheckReport(const Options &opt, const KernelResult &r) {
  const Shape &s = r.shape;
  const CheckResult &c = r.check;
  uint64_t totalElements = uint64_t(s.batch * s.qHeads * s.seqQ * s.headDimV);
  std::printf("  check (%s): %" PRIu64 " of %" PRIu64 " O elements (%" PRIu64
              " of %" PRId64 " query rows x %" PRId64 " batch x %" PRId64
              " heads x %" PRId64 " dims) against %s, %.2f s on %u "
              "threads\n",
              r.checkMode.c_str(), c.elementsChecked, totalElements,
              c.rowsChecked, s.seqQ, s.batch, s.qHeads, s.headDimV,
              r.sparse ? "the skipping model (reference over the kept "
                         "blocks; every row's scores for the vote)"
                       : "the reference",
              r.referenceSeconds, opt.threads ? opt.threads : defaultThreads());
  if (r.maskedRowsChecked)
    std::printf("    %" PRId64 " checked rows see no key (causal, seq_q > "
                "seq_kv): expected O = 0 and LSE = -inf there\n",
                r.maskedRowsChecked);
  std::printf("    rel L2 %.3e (limit %.0e), max abs %.3e", c.relL2,
              tolerancesFor(r.dtype).relL2, c.maxAbs);
  if (c.worstRow >= 0)
    std::printf(" at [b=%" PRId64 ", q=%" PRId64 ", h=%" PRId64 ", d=%" PRId64
                "] (got %.6g, expected %.6g)",
                c.worstB, c.worstRow, c.worstH, c.worstD, c.worstOut,
                c.worstRef);
  std::printf("\n    NaN/inf (incl. unwritten) %" PRIu64
              ", beyond element bound %" PRIu64 ", writes outside O %" PRIu64
              "\n",
              c.nonFinite, c.overBound, r.writesOutsideO);
  if (c.lseChecked)
    std::printf("    LSE: %" PRIu64 " values, max abs error %.3e (limit "
                "1e-3), NaN/inf %" PRIu64 ", masked-row mismatches %" PRIu64
                ", writes past the end %" PRIu64 "\n",
                c.lseCount, c.lseMaxAbs, c.lseNonFinite, c.lseMaskedMismatch,
                r.writesOutsideLse);
  for (const std::string &f : c.failures)
    std::printf("    FAIL: %s\n", f.c_str());
  if (r.writesOutsideO)
    std::printf("    FAIL: %" PRIu64 " elements outside O (row padding or "
                "the guard after the end) were written\n",
                r.writesOutsideO);
  if (r.writesOutsideLse)
    std::printf("    FAIL: %" PRIu64 " floats after the end of LSE were "
                "written\n",
                r.writesOutsideLse);
  if (r.borderlineRecheck >= 0)
    std::printf("    note: without the %" PRIu64 " (batch, head, row)s "
                "touched by borderline decisions the O check %s\n",
                r.borderlineRows,
                r.borderlineRecheck
                    ? "passes: the kernel probably decided a borderline "
                      "block the other way"
                    : "still fails");
  if (r.sparse)
    printSparseReport(r);
}

/// The skipping lines when no check ran (no model with --check none) or
/// nothing can skip (a dense kernel on dial inputs).
void printUncheckedSkipping(const AttentionSpec &spec, const KernelResult &r) {
  if (r.sparse && !r.modelRun) {
    std::printf("  BLASST: no skipping model with --check none%s\n",
                spec.stats ? " (counters printed above, not compared)" : "");
    printDialLine(r, "  ");
  }
  if (r.dial && !r.sparse)
    std::printf("  dial: dense kernel, nothing is skipped\n");
}

/// Determinism (--repeat-launches N): N back-to-back launches on poisoned
/// outputs; O and LSE must be bit-identical to the first run's. Records and
/// prints the differences. False when a launch fails.
bool checkDeterminism(const Options &opt, DeviceRun &run, KernelResult &r) {
  r.repeatLaunches = opt.repeatLaunches;
  std::vector<uint16_t> firstO = run.outO;
  std::vector<float> firstLse = run.outLse;
  if (Status st =
          run.poisonLaunchAndRead(opt.repeatLaunches, "repeating launches");
      !st)
    return fail(r, st.message());
  const std::vector<uint16_t> &outO = run.outO;
  const std::vector<float> &outLse = run.outLse;
  for (size_t i = 0; i < outO.size(); ++i)
    r.repeatDifferingO += outO[i] != firstO[i];
  r.repeatDifferingLse = uint64_t(
      std::memcmp(outLse.data(), firstLse.data(), outLse.size() * 4) != 0);
  if (r.repeatDifferingLse) {
    r.repeatDifferingLse = 0;
    for (size_t i = 0; i < outLse.size(); ++i)
      r.repeatDifferingLse += std::memcmp(&outLse[i], &firstLse[i], 4) != 0;
  }
  r.repeatIdentical = r.repeatDifferingO == 0 && r.repeatDifferingLse == 0;
  std::printf("  determinism: %" PRId64 " back-to-back launches: %s",
              opt.repeatLaunches,
              r.repeatIdentical ? "output bit-identical to the first run\n"
                                : "");
  if (!r.repeatIdentical)
    std::printf("FAIL: %" PRIu64 " O elements and %" PRIu64
                " LSE values differ from the first run\n",
                r.repeatDifferingO, r.repeatDifferingLse);
  return true;
}

/// --stamps: one more launch, then the module's `blasst_stamps` appended
/// to the file (see the option's help). False when that fails.
bool dumpStamps(const Options &opt, DeviceRun &run, KernelResult &r) {
  if (Status st = run.kernel->launch(run.launch, nullptr); !st)
    return fail(r, "stamped launch: " + st.message());
  std::vector<uint8_t> bytes;
  if (Status st = run.kernel->getModule().readGlobal("blasst_stamps", &bytes);
      !st) {
    // Not an instrumented kernel: said, and the run goes on.
    std::printf("  stamps: none (%s)\n", st.message().c_str());
    return true;
  }
  std::FILE *f = std::fopen(opt.stampsFile.c_str(), "a");
  if (!f)
    return fail(r, "--stamps " + opt.stampsFile + ": " + std::strerror(errno));
  std::fprintf(f, "# %s %s grid %s splits %d\n", r.name.c_str(),
               r.shape.describe().c_str(), r.grid.str().c_str(), r.kvSplits);
  constexpr size_t kRow = 16;
  size_t rows = bytes.size() / (kRow * sizeof(uint64_t));
  for (size_t row = 0; row < rows; ++row) {
    uint64_t v[kRow];
    std::memcpy(v, bytes.data() + row * sizeof(v), sizeof(v));
    if (std::all_of(v, v + kRow, [](uint64_t x) { return x == 0; }))
      continue;
    std::fprintf(f, "%zu", row);
    for (uint64_t x : v)
      std::fprintf(f, " %" PRIu64, x);
    std::fputc('\n', f);
  }
  std::fclose(f);
  std::printf("  stamps: %zu rows appended to %s\n", rows,
              opt.stampsFile.c_str());
  return true;
}

/// Timing (--iters > 0): --warmup untimed launches, then each launch
/// between its own pair of CUDA events, all enqueued before any is read so
/// the GPU never waits for the host. Records the times (median, min, mean)
/// and prints them with the TFLOP/s. False when a launch fails.
bool finishTiming(const Options &opt, DeviceRun &run, KernelResult &r);

bool timeKernel(const Options &opt, DeviceRun &run, KernelResult &r) {
  r.iters = opt.iters;
  if (opt.iters <= 0)
    return true;
  if (Status st = run.launchTimes(opt.warmup); !st)
    return fail(r, "warm-up launch: " + st.message());
  std::vector<EventTimer> timers;
  if (Status st = makeTimers(*run.ctx, opt.iters, &timers); !st)
    return fail(r, st.message());
  for (EventTimer &t : timers)
    if (Status st = run.timedLaunch(t); !st)
      return fail(r, "timed launch: " + st.message());
  if (Status st = run.ctx->synchronize(); !st)
    return fail(r,
                "the kernel failed during the timed launches: " + st.message());
  if (Status st = readTimes(timers, &r.timesMs); !st)
    return fail(r, st.message());
  return finishTiming(opt, run, r);
}

/// The statistics of r.timesMs (median, min, mean), printed with the
/// TFLOP/s and the K+V bandwidth; then --stamps.
bool finishTiming(const Options &opt, DeviceRun &run, KernelResult &r) {
  std::vector<float> sorted = r.timesMs;
  std::sort(sorted.begin(), sorted.end());
  size_t n = sorted.size();
  r.medianMs =
      n % 2 ? sorted[n / 2] : 0.5 * (double(sorted[n / 2 - 1]) + sorted[n / 2]);
  r.minMs = sorted.front();
  double sum = 0;
  for (float t : sorted)
    sum += t;
  r.meanMs = sum / double(n);
  std::printf("  time: median %.4f ms, min %.4f ms, mean %.4f ms over %" PRId64
              " launches (%" PRId64 " warm-up); %.1f TFLOP/s at the median "
              "(%.4g FLOP, %.1f keys per query on average)\n",
              r.medianMs, r.minMs, r.meanMs, opt.iters, opt.warmup,
              r.flops / (r.medianMs * 1e-3) / 1e12, r.flops,
              r.shape.effectiveSeqKV());
  // Bandwidth: the bytes of K and V the kernel must read, per second at
  // the median (decode is bound by it).
  const Shape &sh = r.shape;
  // Per-sequence lengths: the sum of the lengths.
  KVCacheLayout kv;
  (void)kvCacheFor(opt, run.kernel->spec(), sh, &kv);
  double tokens = double(sh.batch) * double(sh.seqKV);
  if (!kv.lengths.empty()) {
    tokens = 0;
    for (int64_t n : kv.lengths)
      tokens += double(n);
  }
  r.kvBytes = tokens * double(sh.kvHeads) *
              double(sh.headDim + sh.headDimV) * dtypeBytes(r.dtype);
  std::printf("  bandwidth: %.3f TB/s of K+V at the median (%.4g bytes)\n",
              r.kvBytes / (r.medianMs * 1e-3) / 1e12, r.kvBytes);
  return opt.stampsFile.empty() || dumpStamps(opt, run, r);
}

/// BLASST decode with per-sequence KV lengths: the model walks each batch
/// entry's own length, with its own T (the a= policy's lambda = a / length,
/// as the kernel computes it from the length it reads).
void setPerSequenceSkipping(const Options &opt, const AttentionSpec &spec,
                            const KernelResult &r, SkipConfig *skipCfg) {
  KVCacheLayout kv;
  (void)kvCacheFor(opt, spec, r.shape, &kv); // checked before
  if (!r.sparse || kv.lengths.empty())
    return;
  skipCfg->kvLengths = kv.lengths;
  skipCfg->log2Thresholds.clear();
  for (int64_t len : kv.lengths)
    skipCfg->log2Thresholds.push_back(
        kernelLog2Threshold(spec.sparsity, double(r.log2Threshold), len));
  auto [lo, hi] = std::minmax_element(skipCfg->log2Thresholds.begin(),
                                      skipCfg->log2Thresholds.end());
  std::printf("  BLASST with per-sequence KV lengths: the model walks each "
              "sequence's own length; T %.6g .. %.6g log2 units over the "
              "batch\n",
              *lo, *hi);
}

/// Runs one kernel through the phases above; false when one of them failed
/// (r.error says why). A failed check is not a failure here: it is recorded
/// in r and the kernel is still timed.
/// A kernel and its launch kept for --interleave's timing after every
/// kernel's checks (run.kernel points at kernel).
struct KeptRun {
  AttentionKernel kernel;
  DeviceRun run;
};

bool runKernel(const Context &ctx, const Options &opt, const std::string &stem,
               KernelResult &r, std::unique_ptr<KeptRun> *keep) {
  auto kept = std::make_unique<KeptRun>();
  AttentionKernel &kernel = kept->kernel;
  if (!loadKernel(ctx, stem, &kernel, r))
    return false;
  setUpShape(opt, kernel.spec(), r);
  const Layout layout = layoutFor(r.shape, opt.oPad, opt.kvBHSD);
  SkipConfig skipCfg = skipConfigFor(kernel.info(), r.shape, opt);
  std::shared_ptr<const HostInputs> in =
      prepareInputs(opt, kernel.info(), layout, skipCfg, r);
  resolveThreshold(opt, kernel, in->dial, &skipCfg, r);
  DeviceRun &run = kept->run;
  if (!prepareLaunch(opt, ctx, kernel, *in, layout, r, &run))
    return false;
  // The short-sequence entry votes on its own KV blocks (skipConfigFor
  // modeled the launch the runtime takes).
  if (run.launch.shortEntry != (kernel.info().shortBlockN &&
                                skipCfg.blockN == kernel.info().shortBlockN))
    return fail(r, "the skipping model's " + std::to_string(skipCfg.blockN) +
                       "-key blocks are not the launch's");
  if (skipCfg.qGroup > 0) {
    // Decode: each split starts a fresh running max (or the sink's; its
    // first block is kept unless voted on: vote_first_block), so the model
    // takes the launch's split count.
    skipCfg.kvSplits = r.kvSplits;
    // Splits that follow the lengths: the launch's CTA budget sets each
    // sequence's split count.
    if (kernel.info().balancedSplits)
      skipCfg.balancedBudget = run.launch.decodeSplits;
    setPerSequenceSkipping(opt, kernel.spec(), r, &skipCfg);
    if (skipCfg.balancedBudget > 0 && !skipCfg.kvLengths.empty()) {
      // What the kernel's CTAs will find: each sequence's split count.
      std::string counts;
      for (int64_t b = 0; b < r.shape.batch && b < 16; ++b)
        counts += (b ? "," : "") +
                  std::to_string(decodeSequenceSplits(r.shape, skipCfg, b));
      std::printf("  splits per sequence (each of its tiles): %s%s\n",
                  counts.c_str(), r.shape.batch > 16 ? ",..." : "");
    }
    if (r.dial) {
      r.dialWalkedCold = dialWalkedColdFraction(r.shape, skipCfg, in->dial);
      std::printf("  dial (decode, %d KV split%s): %.3f of the tiles' blocks "
                  "are cold and voted on\n",
                  r.kvSplits, r.kvSplits == 1 ? "" : "s", r.dialWalkedCold);
    }
  }
  if (!firstRun(opt, run, r))
    return false;
  if (opt.vsFirst)
  {
    // Kernels of other KV lengths computed something else.
    KVCacheLayout kv;
    (void)kvCacheFor(opt, kernel.spec(), r.shape, &kv);
    compareWithFirst(r, stem, in->key + kv.describe(), r.shape, layout.o,
                     r.dtype, run.outO);
  }
  if (opt.check != CheckMode::None) {
    checkAgainstReference(opt, *in, layout, skipCfg, run, r);
    printCheckReport(opt, r);
  }
  printUncheckedSkipping(kernel.spec(), r);
  if (opt.repeatLaunches > 0 && !checkDeterminism(opt, run, r))
    return false;
  if (opt.interleave) {
    *keep = std::move(kept);
    return true;
  }
  return timeKernel(opt, run, r);
}

/// --interleave: every kept kernel's warm-up, then --iters rounds, each
/// launching every kernel once between its own events; all enqueued before
/// any is read. A failed launch or kernel fails every kernel of the round
/// (the stream does not say whose it was).
void timeInTurns(const Options &opt,
                 std::vector<std::unique_ptr<KeptRun>> &kept,
                 std::vector<KernelResult> &results) {
  std::vector<size_t> live;
  for (size_t i = 0; i < kept.size(); ++i)
    if (kept[i] && results[i].error.empty())
      live.push_back(i);
  if (live.empty() || opt.iters <= 0)
    return;
  auto failAll = [&](const std::string &why) {
    for (size_t i : live)
      fail(results[i], why);
  };
  std::printf("\ntiming %zu kernels in turns: %" PRId64 " warm-up launches "
              "each, then %" PRId64 " rounds of one launch each\n",
              live.size(), opt.warmup, opt.iters);
  std::vector<std::vector<EventTimer>> timers(live.size());
  for (size_t j = 0; j < live.size(); ++j) {
    DeviceRun &run = kept[live[j]]->run;
    results[live[j]].iters = opt.iters;
    if (Status st = run.launchTimes(opt.warmup); !st)
      return failAll("warm-up launch: " + st.message());
    if (Status st = makeTimers(*run.ctx, opt.iters, &timers[j]); !st)
      return failAll(st.message());
  }
  for (int64_t it = 0; it < opt.iters; ++it)
    for (size_t j = 0; j < live.size(); ++j)
      if (Status st = kept[live[j]]->run.timedLaunch(timers[j][size_t(it)]);
          !st)
        return failAll("timed launch (in turns): " + st.message());
  if (Status st = kept[live.front()]->run.ctx->synchronize(); !st)
    return failAll("a kernel failed during the timed launches (in turns): " +
                   st.message());
  for (size_t j = 0; j < live.size(); ++j) {
    KernelResult &r = results[live[j]];
    if (Status st = readTimes(timers[j], &r.timesMs); !st) {
      fail(r, st.message());
      continue;
    }
    std::printf("\n[%zu/%zu] %s (timed in turns)\n", live[j] + 1,
                results.size(), r.stem.c_str());
    finishTiming(opt, kept[live[j]]->run, r);
  }
}

//===----------------------------------------------------------------------===//
// Report
//===----------------------------------------------------------------------===//

void printTable(const std::vector<KernelResult> &results) {
  struct Row {
    std::string cells[10];
  };
  std::vector<Row> rows;
  rows.push_back({{"kernel", "shape", "check", "rel_l2", "max_abs", "skip",
                   "ms_median", "ms_min", "TFLOP/s", "stem"}});
  for (const KernelResult &r : results) {
    Row row;
    row.cells[0] = r.name;
    row.cells[1] = r.shapeKnown ? r.shape.describe() : "-";
    row.cells[2] = r.verdict() + (r.checked ? "(" + r.checkMode + ")" : "");
    row.cells[3] = r.checked ? fmt("%.2e", r.check.relL2) : "-";
    row.cells[4] = r.checked ? fmt("%.2e", r.check.maxAbs) : "-";
    bool measured = false;
    double rate = r.skipRate(&measured);
    row.cells[5] =
        rate < 0 ? "-" : (measured ? "" : "~") + fmt("%.1f%%", 100.0 * rate);
    bool timed = !r.timesMs.empty();
    row.cells[6] = timed ? fmt("%.4f", r.medianMs) : "-";
    row.cells[7] = timed ? fmt("%.4f", r.minMs) : "-";
    row.cells[8] =
        timed ? fmt("%.1f", r.flops / (r.medianMs * 1e-3) / 1e12) : "-";
    row.cells[9] = r.stem;
    rows.push_back(row);
  }
  size_t width[10] = {};
  for (const Row &row : rows)
    for (int c = 0; c < 10; ++c)
      width[c] = std::max(width[c], row.cells[c].size());
  std::printf("\n");
  for (const Row &row : rows) {
    std::string line;
    for (int c = 0; c < 10; ++c) {
      std::string cell = row.cells[c];
      bool right = c >= 3 && c <= 8;
      std::string padding(width[c] - cell.size(), ' ');
      line += (right ? padding + cell : cell + padding) + (c < 9 ? "  " : "");
    }
    while (!line.empty() && line.back() == ' ')
      line.pop_back();
    std::printf("%s\n", line.c_str());
  }
  bool anySkip = false;
  for (const KernelResult &r : results)
    anySkip |= r.skipRate() >= 0;
  if (anySkip)
    std::printf("skip: skipped / visited (group, KV block) pairs from the "
                "kernel's counters; ~: predicted by the model (stats = "
                "false); rel_l2 of sparse kernels is against the model\n");
}

bool writeJson(const std::string &path, const Options &opt,
               const std::string &device,
               const std::vector<KernelResult> &results, bool allPassed) {
  std::ostringstream j;
  j << "{\n  \"tool\": \"blasst-bench\",\n  \"abi_version\": "
    << kKernelABIVersion << ",\n  \"device\": " << jsonString(device)
    << ",\n  \"seed\": " << opt.seed
    << ",\n  \"distribution\": " << jsonString(toString(opt.dist))
    << ",\n  \"dial\": " << (opt.dial ? jsonNumber(*opt.dial) : "null")
    << ",\n  \"warmup\": " << opt.warmup << ",\n  \"iters\": " << opt.iters
    << ",\n  \"all_passed\": " << (allPassed ? "true" : "false")
    << ",\n  \"kernels\": [";
  for (size_t i = 0; i < results.size(); ++i) {
    const KernelResult &r = results[i];
    const Shape &s = r.shape;
    j << (i ? "," : "") << "\n    {\n      \"stem\": " << jsonString(r.stem)
      << ",\n      \"kernel\": " << jsonString(r.name)
      << ",\n      \"status\": " << jsonString(r.verdict())
      << ",\n      \"passed\": " << (r.passed() ? "true" : "false")
      << ",\n      \"error\": "
      << (r.error.empty() ? "null" : jsonString(r.error));
    if (!r.specText.empty())
      j << ",\n      \"spec\": " << jsonString(r.specText)
        << ",\n      \"dtype\": " << jsonString(toString(r.dtype))
        << ",\n      \"sparse\": " << (r.sparse ? "true" : "false")
        << ",\n      \"log2_threshold\": " << jsonNumber(r.log2Threshold);
    if (r.shapeKnown)
      j << ",\n      \"shape\": {\"batch\": " << s.batch
        << ", \"seq_q\": " << s.seqQ << ", \"seq_kv\": " << s.seqKV
        << ", \"q_heads\": " << s.qHeads << ", \"kv_heads\": " << s.kvHeads
        << ", \"head_dim\": " << s.headDim << ", \"head_dim_v\": " << s.headDimV
        << ", \"causal\": " << (s.causal ? "true" : "false")
        << ", \"scale\": " << jsonNumber(s.scale) << ", \"o_pad\": " << r.oPad
        << ", \"kv_layout\": \"" << (r.kvBHSD ? "bhsd" : "bshd") << "\""
        << ", \"effective_seq_kv\": " << jsonNumber(s.effectiveSeqKV()) << "}";
    if (r.grid.count() > 1 || r.block.x > 1)
      j << ",\n      \"launch\": {\"grid\": [" << r.grid.x << ", " << r.grid.y
        << ", " << r.grid.z << "], \"block\": " << r.block.x
        << ", \"smem_bytes\": " << r.smemBytes << ", \"entry\": \"" << r.entry
        << "\"}";
    if (r.checked) {
      const CheckResult &c = r.check;
      j << ",\n      \"check\": {\"mode\": " << jsonString(r.checkMode)
        << ", \"pass\": " << (c.pass ? "true" : "false")
        << ", \"rows_checked\": " << c.rowsChecked
        << ", \"elements_checked\": " << c.elementsChecked
        << ", \"rel_l2\": " << jsonNumber(c.relL2)
        << ", \"max_abs\": " << jsonNumber(c.maxAbs)
        << ", \"nonfinite\": " << c.nonFinite
        << ", \"over_element_bound\": " << c.overBound
        << ", \"writes_outside_o\": " << r.writesOutsideO
        << ", \"reference_seconds\": " << jsonNumber(r.referenceSeconds);
      if (c.lseChecked)
        j << ", \"lse_checked\": " << c.lseCount
          << ", \"lse_max_abs\": " << jsonNumber(c.lseMaxAbs)
          << ", \"lse_nonfinite\": " << c.lseNonFinite
          << ", \"lse_masked_mismatch\": " << c.lseMaskedMismatch
          << ", \"writes_outside_lse\": " << r.writesOutsideLse;
      j << ", \"failures\": [";
      for (size_t f = 0; f < c.failures.size(); ++f)
        j << (f ? ", " : "") << jsonString(c.failures[f]);
      j << "]}";
    }
    if (r.kvBytes > 0 && r.medianMs > 0)
      j << ",\n      \"kv_bytes\": " << jsonNumber(r.kvBytes)
        << ", \"kv_tb_per_s\": "
        << jsonNumber(r.kvBytes / (r.medianMs * 1e-3) / 1e12)
        << ", \"kv_splits\": " << r.kvSplits
        << ", \"merge_kernel\": " << (r.mergeKernel ? "true" : "false");
    if (!r.kvCache.empty())
      j << ", \"kv_cache\": " << jsonString(r.kvCache.substr(1));
    if (r.vsFirstCompared)
      j << ",\n      \"vs_first\": {\"stem\": " << jsonString(r.vsFirstStem)
        << ", \"rel_l2\": " << jsonNumber(r.vsFirstRelL2)
        << ", \"max_abs\": " << jsonNumber(r.vsFirstMaxAbs) << "}";
    if (r.stats.size() == 2)
      j << ",\n      \"stats\": {\"visited\": " << r.stats[0]
        << ", \"skipped\": " << r.stats[1] << ", \"skip_rate\": "
        << jsonNumber(r.stats[0] ? double(r.stats[1]) / double(r.stats[0])
                                 : 0.0)
        << "}";
    if (r.sparse && r.shapeKnown) {
      bool measured = false;
      double rate = r.skipRate(&measured);
      j << ",\n      \"blasst\": {\"log2_threshold_T\": "
        << jsonNumber(r.kernelT)
        << ", \"borderline_eps\": " << jsonNumber(r.borderlineEps)
        << ", \"empty_groups\": " << jsonString(r.emptyGroups)
        << ", \"skip_rate\": " << (rate < 0 ? "null" : jsonNumber(rate))
        << ", \"skip_rate_source\": "
        << (rate < 0 ? "null" : jsonString(measured ? "kernel" : "model"));
      if (r.modelRun)
        j << ", \"model\": {\"visited\": " << r.modelVisited
          << ", \"skipped\": " << r.modelSkipped
          << ", \"skip_rate\": " << jsonNumber(r.modelSkipRate)
          << ", \"borderline\": " << r.modelBorderline
          << ", \"masked_skips\": " << r.modelMaskedSkips
          << ", \"empty_group_skips\": " << r.modelEmptySkips << "}"
          << ", \"dense_rel_l2\": " << jsonNumber(r.denseRelL2)
          << ", \"model_dense_rel_l2\": " << jsonNumber(r.modelDenseRelL2)
          << ", \"borderline_recheck\": "
          << (r.borderlineRecheck < 0 ? "null"
              : r.borderlineRecheck   ? "\"passes\""
                                      : "\"fails\"");
      if (r.statsChecked) {
        const StatsCheck &c = r.statsCheck;
        j << ", \"stats_check\": {\"pass\": " << (c.pass ? "true" : "false")
          << ", \"visited_mismatch\": " << c.visitedMismatch
          << ", \"skipped_beyond_borderline\": " << c.skippedBeyond
          << ", \"skipped_within_borderline\": " << c.skippedWithin
          << ", \"max_skipped_diff\": " << c.maxSkippedDiff
          << ", \"failures\": [";
        for (size_t f = 0; f < c.failures.size(); ++f)
          j << (f ? ", " : "") << jsonString(c.failures[f]);
        j << "]}";
      }
      j << "}";
    }
    if (r.dial)
      j << ",\n      \"dial\": {\"requested\": " << jsonNumber(r.dialRequested)
        << ", \"cold_fraction\": " << jsonNumber(r.dialCold)
        << ", \"cold_blocks\": " << r.dialColdBlocks
        << ", \"eligible_blocks\": " << r.dialEligibleBlocks
        << ", \"walked_cold_fraction\": " << jsonNumber(r.dialWalkedCold)
        << ", \"hot_log2\": " << jsonNumber(r.dialHot) << "}";
    if (r.repeatLaunches > 0)
      j << ",\n      \"determinism\": {\"launches\": " << r.repeatLaunches
        << ", \"identical\": " << (r.repeatIdentical ? "true" : "false")
        << ", \"differing_o\": " << r.repeatDifferingO
        << ", \"differing_lse\": " << r.repeatDifferingLse << "}";
    if (!r.timesMs.empty()) {
      j << ",\n      \"timing\": {\"iters\": " << r.iters
        << ", \"median_ms\": " << jsonNumber(r.medianMs)
        << ", \"min_ms\": " << jsonNumber(r.minMs)
        << ", \"mean_ms\": " << jsonNumber(r.meanMs)
        << ", \"flops\": " << jsonNumber(r.flops) << ", \"tflops_median\": "
        << jsonNumber(r.flops / (r.medianMs * 1e-3) / 1e12)
        << ", \"tflops_best\": "
        << jsonNumber(r.flops / (r.minMs * 1e-3) / 1e12) << ", \"times_ms\": [";
      for (size_t t = 0; t < r.timesMs.size(); ++t)
        j << (t ? ", " : "") << jsonNumber(r.timesMs[t]);
      j << "]}";
    }
    j << "\n    }";
  }
  j << "\n  ]\n}\n";
  std::ofstream out(path, std::ios::binary);
  out << j.str();
  out.close();
  if (!out) {
    std::fprintf(stderr, "blasst-bench: cannot write JSON to '%s': %s\n",
                 path.c_str(), std::strerror(errno));
    return false;
  }
  std::printf("wrote %s\n", path.c_str());
  return true;
}

} // namespace

int main(int argc, char **argv) {
  // Line-buffered even into a pipe, so progress shows up in CI logs.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  Options opt;
  if (std::string err = parseOptions(argc, argv, &opt); !err.empty()) {
    std::fprintf(stderr, "blasst-bench: %s\n\n%s", err.c_str(), kUsage);
    return kExitUsage;
  }

  // What needs no GPU first: a missing, malformed or changed file, or an
  // option the kernel cannot run with, is an error (exit 1) on every
  // machine, before any GPU is looked for.
  // One run per kernel and split count (kernel-major).
  size_t perKernel = opt.kvSplits.size() * opt.splitMerges.size();
  std::vector<KernelResult> results(opt.kernels.size() * perKernel);
  for (size_t i = 0; i < results.size(); ++i) {
    results[i].kvSplitsAsked =
        opt.kvSplits[i % perKernel % opt.kvSplits.size()];
    results[i].splitMerge =
        opt.splitMerges[i % perKernel / opt.kvSplits.size()];
  }
  bool errors = false;
  if (!opt.json.empty())
    if (std::string bad = checkJsonPath(opt.json); !bad.empty()) {
      std::printf("blasst-bench: %s\n", bad.c_str());
      errors = true;
    }
  for (size_t i = 0; i < results.size(); ++i) {
    const std::string &stem = opt.kernels[i / perKernel];
    results[i].stem = stem;
    results[i].name = baseName(stem);
    KernelFiles files;
    if (Status s = readKernelFiles(stem, &files); !s)
      results[i].error = s.message();
    else if (std::string bad = checkBeforeGpu(opt, files); !bad.empty())
      results[i].error = bad;
    else
      continue;
    errors = true;
    std::printf("blasst-bench: %s: %s\n", stem.c_str(),
                results[i].error.c_str());
  }
  if (errors) {
    std::printf("blasst-bench: FAILED before looking for a GPU (nothing "
                "ran)\n");
    return kExitFail;
  }

  std::string why;
  if (!deviceAvailable(&why)) {
    std::printf("blasst-bench: SKIPPED: no usable GPU: %s\n", why.c_str());
    return kExitSkipped;
  }
  // A GPU that does not exist is the command line's error, not a skip.
  if (int count = 0; deviceCount(&count) && opt.device >= count) {
    std::printf("blasst-bench: --device %d: this machine has %d GPU%s "
                "(ordinals 0..%d)\n",
                opt.device, count, count == 1 ? "" : "s", count - 1);
    return kExitFail;
  }
  Context ctx;
  if (Status s = Context::create(opt.device, &ctx); !s) {
    std::printf("blasst-bench: SKIPPED: cannot open GPU %d: %s\n", opt.device,
                s.message().c_str());
    return kExitSkipped;
  }
  std::string device = ctx.info().describe();
  std::printf("blasst-bench on %s\n", device.c_str());

  // --interleave: the kernels stay loaded with their buffers until all are
  // timed together.
  std::vector<std::unique_ptr<KeptRun>> kept(results.size());
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i].error.empty())
      continue;
    const std::string &stem = opt.kernels[i / perKernel];
    std::printf("\n[%zu/%zu] %s\n", i + 1, results.size(), stem.c_str());
    runKernel(ctx, opt, stem, results[i], &kept[i]);
    // Rows of one kernel at several split counts: the count in its name.
    if (opt.kvSplits.size() > 1)
      results[i].name += " s" + std::to_string(results[i].kvSplits);
    if (opt.splitMerges.size() > 1)
      results[i].name += results[i].mergeKernel ? " mk" : " ik";
  }
  if (opt.interleave)
    timeInTurns(opt, kept, results);

  bool allPassed = true;
  for (const KernelResult &r : results)
    allPassed &= r.passed();
  printTable(results);
  if (!opt.json.empty() &&
      !writeJson(opt.json, opt, device, results, allPassed))
    allPassed = false;
  std::printf("%s\n", allPassed ? "all kernels passed" : "FAILED");
  return allPassed ? kExitPass : kExitFail;
}
