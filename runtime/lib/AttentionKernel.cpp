//===- AttentionKernel.cpp - Load and launch compiled attention kernels ---===//
//
// The kernel metadata file (<stem>.meta), the argument checks against a
// kernel's spec, and the launcher that packs the 14 parameters of
// KernelABI.h. See AttentionKernel.h.
//
//===----------------------------------------------------------------------===//

#include "blasst/Runtime/AttentionKernel.h"

#include "Driver.h"
#include "Sha256.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unistd.h>
#include <utility>
#include <vector>

using namespace blasst;
using namespace blasst::rt;

namespace {

/// A value from a file in a message: control and non-ASCII bytes escaped
/// (a binary .meta must not write raw bytes to the terminal).
std::string quoted(const std::string &s) {
  return "'" + escapeForMessage(s) + "'";
}

std::string trim(const std::string &s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b])))
    ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1])))
    --e;
  return s.substr(b, e - b);
}

bool hasBlank(const std::string &s) {
  for (char c : s)
    if (std::isspace(static_cast<unsigned char>(c)))
      return true;
  return false;
}

/// Parses a whole decimal integer (optional sign); false on anything else,
/// including overflow of int.
bool parseInt(const std::string &text, int *out) {
  if (text.empty())
    return false;
  size_t i = (text[0] == '-' || text[0] == '+') ? 1 : 0;
  if (i == text.size())
    return false;
  for (size_t j = i; j < text.size(); ++j)
    if (!std::isdigit(static_cast<unsigned char>(text[j])))
      return false;
  errno = 0;
  long long value = std::strtoll(text.c_str(), nullptr, 10);
  if (errno == ERANGE || value < INT_MIN || value > INT_MAX)
    return false;
  *out = static_cast<int>(value);
  return true;
}

struct IntKey {
  const char *key;
  int KernelInfo::*field;
  int min;
  int max;
  const char *meaning;
};

// Shared memory of an sm_90a / sm_100a SM, and what each resident CTA
// leaves to the hardware (the compiler's ws::kSharedMemoryPerSM,
// ws::kReservedSharedPerCTA).
constexpr int64_t kSharedMemoryPerSM = 233472;
constexpr int64_t kReservedSharedPerCTA = 1024;

// The integer keys, their fields and ranges: shared by the parser and
// validateKernelInfo so the two cannot disagree.
const IntKey kIntKeys[] = {
    {"block_m", &KernelInfo::blockM, 1, 256,
     "query rows per CTA, the TMA box rows of Q"},
    {"block_n", &KernelInfo::blockN, 1, 256,
     "keys per KV block, the TMA box rows of K and V"},
    {"threads", &KernelInfo::threads, 1, 1024, "threads per CTA"},
    {"smem_bytes", &KernelInfo::smemBytes, 0, INT_MAX,
     "dynamic shared memory per CTA"},
    {"persistent", &KernelInfo::persistent, 0, 1,
     "1: CTAs stay resident and walk the tiles; optional, default 0"},
    {"cluster_m", &KernelInfo::clusterM, 1, 2,
     "CTAs per cluster along x (2: K/V multicast pairs, K/V boxes of "
     "block_n / 2 rows); optional, default 1"},
    {"q_group", &KernelInfo::qGroup, 0, 64,
     "decode: q heads of a KV head packed into a tile; optional, default 0"},
    {"split_kv", &KernelInfo::splitKV, 0, 1,
     "decode: 1 when the kernel splits KV and takes the workspace; optional, "
     "default 0"},
    {"kv_splits", &KernelInfo::kvSplits, 0, 1024,
     "decode: the split count compiled in (0: chosen at launch); optional, "
     "default 0"},
    {"q_tiles", &KernelInfo::qTiles, 1, 2,
     "Q tiles per CTA, each a TMA box of block_m / q_tiles rows; optional, "
     "default 1"},
    {"o_tensor_map", &KernelInfo::oTensorMap, 0, 1,
     "1: the kernel stores O with TMA and takes O's tensor map (parameter "
     "18); optional, default 0"},
    {"per_seq_kv", &KernelInfo::perSeqKV, 0, 1,
     "decode: 1 when the kernel reads per-sequence KV lengths (parameter "
     "15); optional, default 0"},
    {"page_size", &KernelInfo::pageSize, 0, 256,
     "decode: tokens per page of a paged K/V cache (parameters 16, 17), 0 "
     "for contiguous K/V; optional, default 0"},
    {"sink_seed", &KernelInfo::sinkSeed, 0, 1,
     "BLASST decode: 1 when each split's running max starts from the scores "
     "of the sequence's KV block 0; optional, default 0"},
    {"vote_first_block", &KernelInfo::voteFirstBlock, 0, 1,
     "BLASST decode with sink_seed: 1 when each split's first block is "
     "voted on (it may be skipped) instead of kept; optional, default 0"},
    {"split_chunk", &KernelInfo::splitChunk, 0, 1024,
     "decode: KV blocks per chunk when the splits take chunks in turn (split "
     "s of S: chunks s, s + S, ...), 0 for one contiguous range per split; "
     "optional, default 0"},
    {"ctas_per_sm", &KernelInfo::ctasPerSM, 1, 2,
     "CTAs resident per SM the kernel was built for (registers, shared "
     "memory); optional, default 1"},
    {"lean", &KernelInfo::lean, 0, 1,
     "persistent decode: 1 when one CTA per SM takes an even share of all "
     "tiles' KV blocks across tile boundaries; optional, default 0"},
    {"merge_kernel", &KernelInfo::mergeKernel, 0, 1,
     "decode: 1 when the cubin's <kernel>_merge merges the KV splits after "
     "the kernel; optional, default 0"},
    {"kv_cp_async", &KernelInfo::kvCpAsync, 0, 1,
     "decode: 1 when the kernel copies K/V with cp.async through their "
     "pointers and strides (parameters 22-29); optional, default 0"},
    {"lean_entry", &KernelInfo::leanEntry, 0, 1,
     "decode: 1 when the cubin's <kernel>_lean, a lean kernel taking the "
     "same parameters, may be launched instead (the runtime picks per "
     "launch); optional, default 0"},
    {"tma_entry", &KernelInfo::tmaEntry, 0, 1,
     "decode with kv_cp_async: 1 when the cubin's <kernel>_tma, the same "
     "split grid with K/V by TMA taking the same parameters, may be "
     "launched instead (the runtime picks by the GPU's DRAM bandwidth); "
     "optional, default 0"},
    {"short_block_n", &KernelInfo::shortBlockN, 0, 256,
     "prefill: keys per KV block of the cubin's <kernel>_short, a kernel "
     "taking the same parameters, block and grid that the runtime may "
     "launch instead for short sequences (its K/V boxes have this many "
     "rows); optional, default 0 (none)"},
    {"short_smem_bytes", &KernelInfo::shortSmemBytes, 0, INT_MAX,
     "prefill with short_block_n: dynamic shared memory per CTA of "
     "<kernel>_short, which it is launched with; optional, default 0 "
     "(smem_bytes)"},
    {"short_ctas_per_sm", &KernelInfo::shortCtasPerSM, 1, 2,
     "prefill with short_block_n: CTAs resident per SM of <kernel>_short "
     "(2: launched where the query tiles average at most 3072 keys, else "
     "where it computes fewer padded keys); optional, default 1"},
    {"short_persistent", &KernelInfo::shortPersistent, 0, 1,
     "prefill with short_block_n: 1 when <kernel>_short is persistent (one "
     "CTA per SM walking the tiles, launched where no tile has more than "
     "4096 keys); optional, default 0"},
    {"balanced_splits", &KernelInfo::balancedSplits, 0, 3,
     "decode over per-sequence lengths: 1 when each tile takes KV splits in "
     "proportion to its sequence's length (a 1-D grid, parameter 19 the "
     "CTA budget), 2 when the kernel also takes a budget of -S (S splits "
     "per tile; compilers from session 34 on), 3 when its merge kernel "
     "(merge_kernel) also merges the launches of a budget of -S (session "
     "35 on); optional, default 0"},
};

/// The keys with text values; the integer keys are kIntKeys' (one table,
/// so a new key is known where it is parsed).
const char *const kTextKeys[] = {"abi_version", "kernel", "target",
                                 "compiler_version", "content_sha256"};
const char *const kRequiredKeys[] = {"abi_version", "kernel",  "target",
                                     "block_m",     "block_n", "threads",
                                     "smem_bytes"};

/// The dynamic shared memory `<kernel>_short` is launched with.
int shortEntrySmemBytes(const KernelInfo &info) {
  return info.shortSmemBytes ? info.shortSmemBytes : info.smemBytes;
}

bool isKnownKey(const std::string &key) {
  for (const char *k : kTextKeys)
    if (key == k)
      return true;
  for (const IntKey &k : kIntKeys)
    if (key == k.key)
      return true;
  return false;
}

std::string knownKeysList() {
  std::string out;
  for (const char *key : kTextKeys)
    out += (out.empty() ? "" : ", ") + std::string(key);
  for (const IntKey &k : kIntKeys)
    out += ", " + std::string(k.key);
  return out;
}

std::string abiMismatch(int version) {
  return "kernel ABI version " + std::to_string(version) +
         ", but this runtime implements version " +
         std::to_string(kKernelABIVersion) +
         "; rebuild the kernel with a compiler of the same ABI version or use "
         "a matching runtime";
}

Status checkTarget(const std::string &target) {
  if (!parseTarget(target))
    return Status::error("unknown target " + quoted(target) +
                         "; expected " + targetChoices());
  return Status::success();
}

Status checkKernelName(const std::string &name) {
  if (name.empty())
    return Status::error("the kernel name is empty");
  if (hasBlank(name))
    return Status::error("kernel name " + quoted(name) + " contains blanks");
  return Status::success();
}

Status checkContentHash(const std::string &hash) {
  if (hash.empty())
    return Status::success();
  if (hash.size() != 64 ||
      hash.find_first_not_of("0123456789abcdef") != std::string::npos)
    return Status::error("content_sha256 " + quoted(hash) +
                         " is not 64 lowercase hex digits");
  return Status::success();
}

Status checkInt(const IntKey &k, int value) {
  if (value < k.min || value > k.max)
    return Status::error(std::string(k.key) + " = " + std::to_string(value) +
                         " is outside " + std::to_string(k.min) + ".." +
                         std::to_string(k.max) + " (" + k.meaning + ")");
  return Status::success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Metadata
//===----------------------------------------------------------------------===//

Status blasst::rt::validateKernelInfo(const KernelInfo &info) {
  if (info.abiVersion != kKernelABIVersion)
    return Status::error("the kernel metadata is for " +
                         abiMismatch(info.abiVersion));
  if (Status s = checkKernelName(info.kernelName); !s)
    return s;
  if (Status s = checkTarget(info.target); !s)
    return s;
  for (const IntKey &k : kIntKeys)
    if (Status s = checkInt(k, info.*k.field); !s)
      return s;
  if (info.clusterM > 1 && info.persistent)
    return Status::error("cluster_m = " + std::to_string(info.clusterM) +
                         " cannot be combined with persistent = 1");
  if (info.blockN % info.clusterM)
    return Status::error("block_n = " + std::to_string(info.blockN) +
                         " is not divisible by cluster_m = " +
                         std::to_string(info.clusterM));
  if (info.splitKV && !info.qGroup)
    return Status::error("split_kv = 1 needs q_group (a decode kernel)");
  if (info.kvSplits && !info.splitKV)
    return Status::error("kv_splits = " + std::to_string(info.kvSplits) +
                         " needs split_kv = 1");
  // A tile holds floor(block_m / q_group) tokens of the q_group q heads
  // (the rows past q_group x that are padding): at least one token.
  if (info.qGroup > info.blockM)
    return Status::error("q_group = " + std::to_string(info.qGroup) +
                         " exceeds block_m = " + std::to_string(info.blockM) +
                         " (a tile holds floor(block_m / q_group) tokens of "
                         "the q_group q heads)");
  if (info.qGroup && info.clusterM > 1)
    return Status::error("q_group cannot be combined with cluster_m");
  if (info.qGroup && info.persistent &&
      (!info.splitKV || info.splitChunk ||
       ((info.perSeqKV || info.pageSize) && !info.lean)))
    return Status::error("persistent decode (q_group with persistent) needs "
                         "split_kv over contiguous splits (no split_chunk; "
                         "per_seq_kv or page_size only with lean)");
  if (info.mergeKernel && (!info.splitKV || info.persistent))
    return Status::error("merge_kernel needs split_kv = 1 and no persistent "
                         "(the merge kernel follows a one-CTA-per-split "
                         "decode grid)");
  if (info.kvCpAsync && (!info.splitKV || (info.persistent && !info.lean)))
    return Status::error("kv_cp_async needs split_kv = 1, without persistent "
                         "unless lean (cp.async decode CTAs: one per split, "
                         "or lean's one per SM)");
  if (info.leanEntry && (!info.qGroup || !info.splitKV || info.persistent ||
                         info.splitChunk || info.kvSplits))
    return Status::error("lean_entry needs a one-CTA-per-split decode kernel "
                         "(q_group, split_kv; no persistent, split_chunk or "
                         "kv_splits)");
  if (info.tmaEntry && (!info.kvCpAsync || !info.qGroup || !info.splitKV ||
                        info.persistent || info.balancedSplits))
    return Status::error("tma_entry needs a one-CTA-per-split decode kernel "
                         "copying K/V with cp.async (q_group, split_kv, "
                         "kv_cp_async; no persistent or balanced_splits)");
  if (info.shortBlockN &&
      (info.qGroup || info.splitKV || info.persistent || info.clusterM != 1 ||
       info.shortBlockN >= info.blockN))
    return Status::error("short_block_n = " + std::to_string(info.shortBlockN) +
                         " needs a one-CTA-per-tile prefill kernel (no "
                         "q_group, split_kv, persistent or cluster_m) with "
                         "wider KV blocks (block_n = " +
                         std::to_string(info.blockN) + ")");
  if (info.shortPersistent && info.shortCtasPerSM != 1)
    return Status::error("short_persistent = 1 needs short_ctas_per_sm = 1 "
                         "(one persistent CTA per SM)");
  for (auto [key, set] :
       {std::pair{"short_ctas_per_sm", info.shortCtasPerSM != 1},
        std::pair{"short_smem_bytes", info.shortSmemBytes != 0},
        std::pair{"short_persistent", info.shortPersistent != 0}})
    if (set && !info.shortBlockN)
      return Status::error(std::string(key) +
                           " needs a short-sequence entry (short_block_n)");
  // The short-sequence entry's CTAs share an SM: each gets its part of it.
  if (info.shortBlockN) {
    int64_t bytes = shortEntrySmemBytes(info);
    int64_t perCta =
        kSharedMemoryPerSM / info.shortCtasPerSM - kReservedSharedPerCTA;
    if (bytes > perCta)
      return Status::error(
          "the short-sequence entry's " + std::to_string(bytes) +
          " B of shared memory do not fit " +
          std::to_string(info.shortCtasPerSM) + " CTAs per SM (at most " +
          std::to_string(perCta) + " B each)");
  }
  if (info.lean && (!info.persistent || !info.qGroup))
    return Status::error("lean needs persistent = 1 and q_group (persistent "
                         "decode CTAs sharing the KV blocks)");
  if (info.balancedSplits && (!info.qGroup || !info.splitKV || !info.perSeqKV ||
                              info.persistent || info.leanEntry))
    return Status::error("balanced_splits needs a one-CTA-per-split decode "
                         "kernel over per-sequence lengths (q_group, "
                         "split_kv, per_seq_kv; no persistent or "
                         "lean_entry)");
  if (info.balancedSplits && info.mergeKernel && info.balancedSplits < 3)
    return Status::error(
        "balanced_splits = " + std::to_string(info.balancedSplits) +
        " with merge_kernel: only balanced_splits = 3 "
        "kernels have a merge kernel for their splits");
  if (info.blockM % info.qTiles)
    return Status::error("q_tiles = " + std::to_string(info.qTiles) +
                         " does not divide block_m = " +
                         std::to_string(info.blockM));
  if (info.qTiles > 1 && info.qGroup)
    return Status::error("q_tiles cannot be combined with q_group");
  if ((info.perSeqKV || info.pageSize) && !info.splitKV)
    return Status::error(std::string(info.perSeqKV ? "per_seq_kv"
                                                   : "page_size") +
                         " needs split_kv = 1 (a decode kernel)");
  if (info.sinkSeed && !info.splitKV)
    return Status::error("sink_seed needs split_kv = 1 (a decode kernel)");
  if (info.splitChunk && !info.splitKV)
    return Status::error("split_chunk needs split_kv = 1 (a decode kernel)");
  if (info.voteFirstBlock && !info.sinkSeed)
    return Status::error("vote_first_block needs sink_seed = 1 (the running "
                         "max a split's first block is voted against)");
  if (info.pageSize &&
      (info.pageSize < kMinKVPage || (info.pageSize & (info.pageSize - 1)) ||
       (info.pageSize % info.blockN && info.blockN % info.pageSize)))
    return Status::error("page_size = " + std::to_string(info.pageSize) +
                         " is not a power of two from " +
                         std::to_string(kMinKVPage) + " to " +
                         std::to_string(kMaxKVPage) +
                         " that divides or is a multiple of block_n = " +
                         std::to_string(info.blockN));
  if (info.compilerVersion.find_first_of("\r\n") != std::string::npos)
    return Status::error("compiler_version contains a line break");
  if (trim(info.compilerVersion) != info.compilerVersion)
    return Status::error("compiler_version " + quoted(info.compilerVersion) +
                         " has leading or trailing blanks");
  return checkContentHash(info.contentSha256);
}

std::string blasst::rt::formatKernelInfo(const KernelInfo &info) {
  std::string out = "# blasst kernel metadata (see KernelABI.h)\n";
  out += "abi_version = " + std::to_string(info.abiVersion) + "\n";
  out += "kernel = " + info.kernelName + "\n";
  out += "target = " + info.target + "\n";
  for (const IntKey &k : kIntKeys)
    // (persistent is optional: written only when set, so the metadata of
    // the one-CTA-per-tile kernels reads as before.)
    if ((k.field != &KernelInfo::persistent || info.persistent) &&
        (k.field != &KernelInfo::clusterM || info.clusterM != 1) &&
        (k.field != &KernelInfo::qGroup || info.qGroup) &&
        (k.field != &KernelInfo::splitKV || info.splitKV) &&
        (k.field != &KernelInfo::kvSplits || info.kvSplits) &&
        (k.field != &KernelInfo::qTiles || info.qTiles != 1) &&
        (k.field != &KernelInfo::oTensorMap || info.oTensorMap) &&
        (k.field != &KernelInfo::perSeqKV || info.perSeqKV) &&
        (k.field != &KernelInfo::pageSize || info.pageSize) &&
        (k.field != &KernelInfo::sinkSeed || info.sinkSeed) &&
        (k.field != &KernelInfo::voteFirstBlock || info.voteFirstBlock) &&
        (k.field != &KernelInfo::splitChunk || info.splitChunk) &&
        (k.field != &KernelInfo::lean || info.lean) &&
        (k.field != &KernelInfo::ctasPerSM || info.ctasPerSM != 1) &&
        (k.field != &KernelInfo::mergeKernel || info.mergeKernel) &&
        (k.field != &KernelInfo::kvCpAsync || info.kvCpAsync) &&
        (k.field != &KernelInfo::leanEntry || info.leanEntry) &&
        (k.field != &KernelInfo::tmaEntry || info.tmaEntry) &&
        (k.field != &KernelInfo::shortBlockN || info.shortBlockN) &&
        (k.field != &KernelInfo::shortCtasPerSM || info.shortCtasPerSM != 1) &&
        (k.field != &KernelInfo::shortSmemBytes || info.shortSmemBytes) &&
        (k.field != &KernelInfo::shortPersistent || info.shortPersistent) &&
        (k.field != &KernelInfo::balancedSplits || info.balancedSplits))
      out += std::string(k.key) + " = " + std::to_string(info.*k.field) + "\n";
  if (!info.compilerVersion.empty())
    out += "compiler_version = " + info.compilerVersion + "\n";
  if (!info.contentSha256.empty())
    out += "content_sha256 = " + info.contentSha256 + "\n";
  return out;
}

Status blasst::rt::parseKernelInfo(const std::string &text,
                                   const std::string &sourceName,
                                   KernelInfo *out) {
  if (!out)
    return Status::error("parseKernelInfo: the output pointer is null");
  struct Entry {
    std::string key;
    std::string value;
    int line;
  };
  std::vector<Entry> entries;
  auto at = [&](int line) {
    return sourceName + ":" + std::to_string(line) + ": ";
  };

  int lineNo = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos)
      end = text.size();
    std::string line = trim(text.substr(pos, end - pos));
    pos = end + 1;
    ++lineNo;
    if (line.empty() || line[0] == '#')
      continue;
    size_t eq = line.find('=');
    if (eq == std::string::npos)
      return Status::error(at(lineNo) + "expected 'key = value', got " +
                           quoted(line));
    Entry entry{trim(line.substr(0, eq)), trim(line.substr(eq + 1)), lineNo};
    if (entry.key.empty())
      return Status::error(at(lineNo) + "missing key before '=' in " +
                           quoted(line));
    if (entry.value.empty())
      return Status::error(at(lineNo) + "empty value for key " +
                           quoted(entry.key));
    for (const Entry &previous : entries)
      if (previous.key == entry.key)
        return Status::error(at(lineNo) + "duplicate key " + quoted(entry.key) +
                             " (first given on line " +
                             std::to_string(previous.line) + ")");
    entries.push_back(std::move(entry));
  }

  // The ABI version first: metadata of another ABI may have other keys, and
  // "unknown key" would hide the real problem.
  for (const Entry &e : entries) {
    if (e.key != "abi_version")
      continue;
    int version = 0;
    if (!parseInt(e.value, &version))
      return Status::error(at(e.line) + "abi_version " + quoted(e.value) +
                           " is not an integer");
    if (version != kKernelABIVersion)
      return Status::error(at(e.line) + "the kernel was built for " +
                           abiMismatch(version));
  }

  KernelInfo info;
  for (const Entry &e : entries) {
    if (!isKnownKey(e.key))
      return Status::error(at(e.line) + "unknown key " + quoted(e.key) +
                           " (known keys: " + knownKeysList() + ")");
    Status s;
    if (e.key == "abi_version") {
      info.abiVersion = kKernelABIVersion; // checked above
    } else if (e.key == "kernel") {
      info.kernelName = e.value;
      s = checkKernelName(e.value);
    } else if (e.key == "target") {
      info.target = e.value;
      s = checkTarget(e.value);
    } else if (e.key == "compiler_version") {
      info.compilerVersion = e.value;
    } else if (e.key == "content_sha256") {
      info.contentSha256 = e.value;
      s = checkContentHash(e.value);
    } else {
      for (const IntKey &k : kIntKeys) {
        if (e.key != k.key)
          continue;
        if (!parseInt(e.value, &(info.*k.field)))
          s = Status::error(e.key + " " + quoted(e.value) +
                            " is not an integer");
        else
          s = checkInt(k, info.*k.field);
      }
    }
    if (!s)
      return Status::error(at(e.line) + s.message());
  }

  for (const char *key : kRequiredKeys) {
    bool present = false;
    for (const Entry &e : entries)
      present |= e.key == key;
    if (!present)
      return Status::error(sourceName + ":" + std::to_string(lineNo) +
                           ": missing required key " + quoted(key) +
                           " (the file ends here)");
  }
  *out = std::move(info);
  return Status::success();
}

Status blasst::rt::readKernelInfo(const std::string &metaPath,
                                  KernelInfo *out) {
  std::string text;
  if (Status s = readWholeFile(metaPath, "kernel metadata file", &text); !s)
    return s;
  return parseKernelInfo(text, metaPath, out);
}

Status blasst::rt::writeKernelInfo(const std::string &metaPath,
                                   const KernelInfo &info) {
  if (Status s = validateKernelInfo(info); !s)
    return Status::error("not writing kernel metadata " + quoted(metaPath) +
                         ": " + s.message());
  // Write a temporary file and rename it, so that a reader never sees a
  // half-written file.
  std::string tmp = metaPath + ".tmp." + std::to_string(::getpid());
  std::string text = formatKernelInfo(info);
  std::FILE *file = std::fopen(tmp.c_str(), "wb");
  if (!file)
    return Status::error("cannot write kernel metadata " + quoted(metaPath) +
                         ": cannot create " + quoted(tmp) + ": " +
                         std::strerror(errno));
  bool ok = std::fwrite(text.data(), 1, text.size(), file) == text.size();
  int savedErrno = errno;
  ok = (std::fclose(file) == 0) && ok;
  if (ok && std::rename(tmp.c_str(), metaPath.c_str()) != 0) {
    savedErrno = errno;
    ok = false;
  }
  if (!ok) {
    std::remove(tmp.c_str());
    return Status::error("cannot write kernel metadata " + quoted(metaPath) +
                         ": " + std::strerror(savedErrno));
  }
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Argument checks
//===----------------------------------------------------------------------===//

Status blasst::rt::validateArgsForKernel(const AttentionArgs &args,
                                         const KernelInfo &info,
                                         const AttentionSpec &spec,
                                         const std::string &kernelName) {
  std::string where = "arguments for kernel " + quoted(kernelName) + ": ";
  auto fail = [&](const std::string &what) {
    return Status::error(where + what);
  };

  int dtypeSize = dtypeBytes(spec.dtype);
  if (args.elementBytes != dtypeSize)
    return fail("elementBytes is " + std::to_string(args.elementBytes) +
                " but the kernel's dtype " + toString(spec.dtype) + " has " +
                std::to_string(dtypeSize) + "-byte elements");
  if (spec.headDimV != spec.headDim)
    return fail("the spec has head_dim " + std::to_string(spec.headDim) +
                " != head_dim_v " + std::to_string(spec.headDimV) +
                ", which AttentionArgs (one headDim) cannot describe");
  struct Match {
    const char *arg;
    int64_t value;
    const char *key;
    int expected;
  };
  for (const Match &m :
       {Match{"numQHeads", args.numQHeads, "q_heads", spec.numQHeads},
        Match{"numKVHeads", args.numKVHeads, "kv_heads", spec.numKVHeads},
        Match{"headDim", args.headDim, "head_dim", spec.headDim}})
    if (m.value != m.expected)
      return fail(std::string(m.arg) + " is " + std::to_string(m.value) +
                  " but the kernel was compiled for " + m.key + " = " +
                  std::to_string(m.expected));

  // Null pointers, 16-byte alignment of every pointer, sizes, strides as
  // positive multiples of 16 bytes (= 8 elements of bf16/f16, checked above
  // to be the element size), O not overlapping itself.
  if (Status s = validateAttentionArgs(args); !s)
    return fail(s.message());

  if (spec.lse && args.lse == 0)
    return fail("the kernel was compiled with lse = true but no LSE pointer "
                "was given (it writes float [batch, q_heads, seqQ])");
  if (!spec.lse && args.lse != 0)
    return fail("an LSE pointer was given but the kernel was compiled with "
                "lse = false and would not write it");
  if (spec.stats && args.stats == 0)
    return fail("the kernel was compiled with stats = true but no stats "
                "pointer was given (it writes int64 [batch, q_heads, 2])");
  if (!spec.stats && args.stats != 0)
    return fail("a stats pointer was given but the kernel was compiled with "
                "stats = false and would not write it");
  if (spec.phase == Phase::Decode && args.seqQ > kMaxDecodeSeqQ)
    return fail("seqQ is " + std::to_string(args.seqQ) +
                " but a decode kernel (phase = decode) takes at most " +
                std::to_string(kMaxDecodeSeqQ) +
                " new tokens per sequence; use a prefill kernel");
  if (args.kvSplits < 0)
    return fail("kvSplits is " + std::to_string(args.kvSplits) +
                "; it must be 0 (chosen at launch) or positive");
  if (args.kvSplits > 1 && !info.splitKV)
    return fail("kvSplits is " + std::to_string(args.kvSplits) +
                " but the kernel does not split KV (a decode kernel does)");
  if (Status s = validateKVCacheArgs(args, spec); !s)
    return fail(s.message());
  if (args.log2ThresholdPtr != 0 && spec.sparsity.isDense())
    return fail("a threshold pointer was given but the kernel is dense (no "
                "sparsity policy) and would not read it");
  if (args.log2ThresholdPtr % 4 != 0)
    return fail("the threshold pointer is not 4-byte aligned (it points to "
                "one float)");

  // The kernel takes seqQ and seqKV as int32; validateAttentionArgs already
  // bounds them by INT_MAX. Heads and batch are grid y and z.
  if (args.numQHeads > 65535)
    return fail("numQHeads (" + std::to_string(args.numQHeads) +
                ") exceeds 65535, the grid's y limit");
  if (args.batch > 65535)
    return fail("batch (" + std::to_string(args.batch) +
                ") exceeds 65535, the grid's z limit");
  if (info.blockM < 1 || info.blockN < 1 || info.threads < 1)
    return fail("the kernel metadata is not initialised (block_m " +
                std::to_string(info.blockM) + ", block_n " +
                std::to_string(info.blockN) + ", threads " +
                std::to_string(info.threads) + ")");
  return Status::success();
}

Status blasst::rt::validateKVCacheArgs(const AttentionArgs &args,
                                      const AttentionSpec &spec) {
  auto fail = [](const std::string &what) { return Status::error(what); };
  if (spec.kvPerSequence && args.seqLensKV == 0)
    return fail("the kernel was compiled with kv_lengths = per_sequence but "
                "no seqLensKV pointer was given (int32 [batch])");
  if (!spec.kvPerSequence && args.seqLensKV != 0)
    return fail("a seqLensKV pointer was given but the kernel was compiled "
                "with kv_lengths = uniform and would not read it");
  if (args.seqLensKV % 4)
    return fail("seqLensKV is not 4-byte aligned (int32 [batch])");
  if (!spec.paged()) {
    if (args.blockTable != 0 || args.maxPages != 0 || args.numPages != 0)
      return fail("a block table (blockTable, maxPages, numPages) was given "
                  "but the kernel was compiled for a contiguous kv_cache");
    return Status::success();
  }
  if (args.blockTable == 0)
    return fail("the kernel was compiled with kv_cache = " +
                kvCacheToString(spec.kvPageSize) +
                " but no blockTable was given (int32 [batch, maxPages])");
  if (args.blockTable % 4)
    return fail("blockTable is not 4-byte aligned (int32 [batch, maxPages])");
  if (args.maxPages < 1 || args.maxPages > INT32_MAX)
    return fail("maxPages is " + std::to_string(args.maxPages) +
                "; a paged launch needs 1 to 2^31 - 1 block table columns");
  if (args.numPages < 1 || args.numPages > INT32_MAX)
    return fail("numPages is " + std::to_string(args.numPages) +
                "; K and V of a paged launch are [numPages, " +
                std::to_string(spec.kvPageSize) +
                ", kv_heads, head_dim] with 1 to 2^31 - 1 pages");
  // The lengths are in device memory; seqKV is their bound (or, without
  // per_sequence, every sequence's length).
  if (args.seqKV > args.maxPages * int64_t(spec.kvPageSize))
    return fail("seqKV is " + std::to_string(args.seqKV) +
                " but the block table holds at most maxPages x page = " +
                std::to_string(args.maxPages) + " x " +
                std::to_string(spec.kvPageSize) + " = " +
                std::to_string(args.maxPages * int64_t(spec.kvPageSize)) +
                " tokens per sequence");
  return Status::success();
}

std::string blasst::rt::checkCubinImage(const void *data, size_t size,
                                        const std::string &kernelName) {
  const auto *bytes = static_cast<const unsigned char *>(data);
  // Little-endian fields of the ELF64 header and section headers.
  auto u16 = [&](size_t at) {
    return uint64_t(bytes[at]) | uint64_t(bytes[at + 1]) << 8;
  };
  auto u32 = [&](size_t at) { return u16(at) | u16(at + 2) << 16; };
  auto u64 = [&](size_t at) { return u32(at) | u32(at + 4) << 32; };
  constexpr size_t kHeader = 64, kSection = 64;
  constexpr uint64_t kEMCuda = 190, kShtNobits = 8;
  static const unsigned char kMagic[4] = {0x7f, 'E', 'L', 'F'};
  if (size < kHeader || std::memcmp(bytes, kMagic, 4) != 0)
    return "not an ELF file (" + std::to_string(size) + " bytes)";
  if (bytes[4] != 2 || bytes[5] != 1)
    return "not a 64-bit little-endian ELF file";
  if (u16(18) != kEMCuda)
    return "not a CUDA ELF (e_machine " + std::to_string(u16(18)) + ")";
  uint64_t shoff = u64(40), shentsize = u16(58), shnum = u16(60);
  if (shnum && (shentsize != kSection || shoff > size ||
                shnum > (size - shoff) / kSection))
    return "the section table extends past the end of the file (" +
           std::to_string(size) + " bytes): truncated?";
  for (uint64_t i = 0; i < shnum; ++i) {
    size_t at = size_t(shoff + i * kSection);
    if (u32(at + 4) == kShtNobits)
      continue;
    uint64_t offset = u64(at + 24), length = u64(at + 32);
    if (offset > size || length > size - offset)
      return "a section extends past the end of the file (" +
             std::to_string(size) + " bytes): truncated?";
  }
  if (std::search(bytes, bytes + size, kernelName.begin(),
                  kernelName.end()) == bytes + size)
    return "does not contain the kernel '" + kernelName + "'";
  return "";
}

std::string blasst::rt::sha256Hex(const void *data, size_t size) {
  detail::Sha256 h;
  h.update(data, size);
  return h.finalHex();
}

std::string blasst::rt::kernelContentHash(const void *cubin, size_t size,
                                          const std::string &specText,
                                          const KernelInfo &info) {
  KernelInfo fields = info;
  fields.contentSha256.clear();
  std::string meta = formatKernelInfo(fields);
  detail::Sha256 h;
  h.update("blasst kernel files v1\n");
  h.update("cubin " + std::to_string(size) + "\n");
  h.update(cubin, size);
  h.update("spec " + std::to_string(specText.size()) + "\n");
  h.update(specText);
  h.update("meta " + std::to_string(meta.size()) + "\n");
  h.update(meta);
  return h.finalHex();
}

std::string blasst::rt::checkKernelContent(const void *cubin, size_t size,
                                           const std::string &specText,
                                           const KernelInfo &info) {
  if (info.contentSha256.empty())
    return "";
  std::string actual = kernelContentHash(cubin, size, specText, info);
  if (actual == info.contentSha256)
    return "";
  return "the files do not match the content hash their .meta records "
         "(content_sha256 " +
         info.contentSha256.substr(0, 12) + "..., the files give " +
         actual.substr(0, 12) +
         "...): the .cubin, .spec or .meta changed after they were written "
         "together; rebuild the kernel";
}

Status blasst::rt::readKernelFiles(const std::string &stem, KernelFiles *out) {
  if (!out)
    return Status::error("readKernelFiles: the output pointer is null");
  KernelFiles files;
  if (Status s = readKernelInfo(stem + ".meta", &files.info); !s)
    return s;
  SpecOrError spec = parseSpecFile(stem + ".spec");
  if (!spec)
    return Status::error(spec.error);
  files.spec = std::move(*spec.spec);
  if (Status s = readWholeFile(stem + ".spec", "spec file", &files.specText);
      !s)
    return s;
  std::string cubinPath = stem + ".cubin";
  if (Status s = readWholeFile(cubinPath, "cubin", &files.cubin); !s)
    return s;
  // A truncated, empty or foreign cubin gets a reason, not a driver error.
  if (std::string bad = checkCubinImage(files.cubin.data(), files.cubin.size(),
                                        files.info.kernelName);
      !bad.empty())
    return Status::error("bad cubin " + quoted(cubinPath) + " (" +
                         std::to_string(files.cubin.size()) +
                         " bytes): " + bad);
  if (std::string bad = checkKernelContent(
          files.cubin.data(), files.cubin.size(), files.specText, files.info);
      !bad.empty())
    return Status::error(quoted(stem) + ".{cubin,spec,meta}: " + bad);
  if (Status s = checkKernelDescription(files.info, files.spec); !s)
    return Status::error(quoted(stem) + ".{meta,spec}: " + s.message());
  *out = std::move(files);
  return Status::success();
}

float blasst::rt::log2ThresholdForSpec(const AttentionSpec &spec) {
  switch (spec.sparsity.kind) {
  case SparsityKind::None:
    return 0.0f;
  case SparsityKind::LnLambda:
    return static_cast<float>(spec.sparsity.value * kLog2E);
  case SparsityKind::ScaleFactor:
    return static_cast<float>(std::log2(spec.sparsity.value));
  }
  return 0.0f;
}

void AttentionLaunch::fillParams(void *params[kNumParams]) {
  params[0] = &tmQ;
  params[1] = &tmK;
  params[2] = &tmV;
  params[3] = &o;
  params[4] = &lse;
  params[5] = &stats;
  params[6] = &seqQ;
  params[7] = &seqKV;
  params[8] = &oStrideB;
  params[9] = &oStrideS;
  params[10] = &oStrideH;
  params[11] = &scaleLog2;
  params[12] = &log2Threshold;
  params[13] = &log2ThresholdPtr;
  params[14] = &workspace;
  params[15] = &seqLensKV;
  params[16] = &blockTable;
  params[17] = &maxPages;
  params[18] = &tmO;
  params[19] = &decodeSplits;
  params[20] = &decodeBatch;
  params[21] = &mergeLaunch;
  params[22] = &kPtr;
  params[23] = &vPtr;
  params[24] = &kStrideB;
  params[25] = &kStrideS;
  params[26] = &kStrideH;
  params[27] = &vStrideB;
  params[28] = &vStrideS;
  params[29] = &vStrideH;
  params[30] = &numPages;
}

//===----------------------------------------------------------------------===//
// AttentionKernel
//===----------------------------------------------------------------------===//

Status blasst::rt::checkKernelDescription(const KernelInfo &info,
                                          const AttentionSpec &spec) {
  if (Status s = validateKernelInfo(info); !s)
    return Status::error("invalid metadata: " + s.message());
  if (std::string why = spec.validate(); !why.empty())
    return Status::error("invalid spec: " + why);
  if (spec.headDimV != spec.headDim)
    return Status::error("the spec has head_dim " +
                         std::to_string(spec.headDim) + " != head_dim_v " +
                         std::to_string(spec.headDimV) +
                         ", which the launcher cannot describe");
  // A .spec that no kernel of this compiler has (say a hand-edited head_dim)
  // does not describe this cubin: launching it would encode wrong tensor maps.
  Target target = *parseTarget(info.target); // validated above
  if (std::string why = checkSupported(spec, target); !why.empty())
    return Status::error("the spec is not one the compiler builds for " +
                         info.target + ": " + why);
  // The decode schedule packs a KV head's q heads (q_group) and splits KV;
  // the launcher's grid and Q box follow the metadata.
  bool decode = spec.phase == Phase::Decode;
  if (decode != (info.qGroup > 0) || (decode && !info.splitKV) ||
      (decode && info.qGroup != spec.gqaRatio()))
    return Status::error(
        "the metadata (q_group = " + std::to_string(info.qGroup) +
        ", split_kv = " + std::to_string(info.splitKV) +
        ") does not match the spec (phase = " + toString(spec.phase) +
        ", q_heads / kv_heads = " + std::to_string(spec.gqaRatio()) +
        "): a decode kernel has q_group = q_heads / kv_heads and split_kv = "
        "1, other kernels neither");
  if (info.perSeqKV != int(spec.kvPerSequence) ||
      info.pageSize != spec.kvPageSize)
    return Status::error(
        "the metadata (per_seq_kv = " + std::to_string(info.perSeqKV) +
        ", page_size = " + std::to_string(info.pageSize) +
        ") does not match the spec (kv_lengths = " +
        (spec.kvPerSequence ? "per_sequence" : "uniform") +
        ", kv_cache = " + kvCacheToString(spec.kvPageSize) + ")");
  return Status::success();
}

namespace {

/// The compute capability a target's arch-specific ("a") code runs on.
void requiredCapability(Target target, int *major, int *minor) {
  switch (target) {
  case Target::SM90a:
    *major = 9;
    *minor = 0;
    return;
  case Target::SM100a:
    *major = 10;
    *minor = 0;
    return;
  }
  *major = *minor = 0;
}

Status loadImpl(const Context &context, const void *cubin, size_t size,
                const std::string &moduleName, const KernelInfo &info,
                const AttentionSpec &spec, Module *module, Function *function,
                Function *merge, Function *lean, Function *shortFn,
                Function *tma) {
  std::string doing = "cannot load attention kernel " +
                      quoted(info.kernelName) + " from " + moduleName + ": ";
  if (Status s = checkKernelDescription(info, spec); !s)
    return Status::error(doing + s.message());
  Target target = *parseTarget(info.target); // validated above
  if (!context.valid())
    return Status::error(doing + "the Context is not initialised (create it "
                                 "with Context::create)");
  // A truncated, empty or foreign image gets a reason, not a driver error.
  if (std::string bad = checkCubinImage(cubin, size, info.kernelName);
      !bad.empty())
    return Status::error(doing + "bad cubin (" + std::to_string(size) +
                         " bytes): " + bad);
  int major = 0, minor = 0;
  requiredCapability(target, &major, &minor);
  const DeviceInfo &dev = context.info();
  if (dev.computeCapabilityMajor != major ||
      dev.computeCapabilityMinor != minor)
    return Status::error(
        doing + "it was compiled for " + info.target +
        ", whose arch-specific code runs only on GPUs of compute capability " +
        std::to_string(major) + "." + std::to_string(minor) + ", but GPU " +
        std::to_string(dev.ordinal) + " (" + dev.name + ") is sm_" +
        std::to_string(dev.computeCapabilityMajor) +
        std::to_string(dev.computeCapabilityMinor));

  if (Status s = Module::loadData(context, cubin, size, moduleName, module); !s)
    return s;
  if (Status s = module->getFunction(info.kernelName, function); !s)
    return s;
  if (info.mergeKernel)
    if (Status s = module->getFunction(info.kernelName + "_merge", merge); !s)
      return Status::error(doing + "its metadata says merge_kernel = 1 but " +
                           s.message());
  // An entry launched with the kernel's shared memory (smem_bytes covers
  // both): `<kernel><suffix>`, which the metadata's `key` = 1 promises.
  auto loadEntry = [&](const char *suffix, const char *key, const char *what,
                       Function *entry) -> Status {
    if (Status s = module->getFunction(info.kernelName + suffix, entry); !s)
      return Status::error(doing + "its metadata says " + key + " = 1 but " +
                           s.message());
    if (Status s = entry->setMaxDynamicSharedMemory(size_t(info.smemBytes)); !s)
      return Status::error(
          doing + "raising the dynamic shared memory limit of its " + what +
          " to smem_bytes = " + std::to_string(info.smemBytes) +
          " failed: " + s.message());
    return Status::success();
  };
  if (info.leanEntry)
    if (Status s = loadEntry("_lean", "lean_entry", "lean entry", lean); !s)
      return s;
  if (info.tmaEntry)
    if (Status s = loadEntry("_tma", "tma_entry", "TMA entry", tma); !s)
      return s;
  if (info.shortBlockN) {
    if (Status s = module->getFunction(info.kernelName + "_short", shortFn); !s)
      return Status::error(doing + "its metadata says short_block_n = " +
                           std::to_string(info.shortBlockN) + " but " +
                           s.message());
    int bytes = shortEntrySmemBytes(info);
    if (Status s = shortFn->setMaxDynamicSharedMemory(size_t(bytes)); !s)
      return Status::error(doing +
                           "raising the dynamic shared memory limit "
                           "of its short-sequence entry to " +
                           std::to_string(bytes) + " B failed: " + s.message());
  }
  int maxThreads = 0;
  if (Status s = function->getAttribute(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                                        &maxThreads);
      !s)
    return s;
  if (maxThreads < info.threads)
    return Status::error(
        doing + "its metadata says threads = " + std::to_string(info.threads) +
        " but the kernel allows at most " + std::to_string(maxThreads) +
        " threads per block (registers or launch bounds)");
  if (Status s = function->setMaxDynamicSharedMemory(size_t(info.smemBytes));
      !s)
    return Status::error(
        "cannot load attention kernel " + quoted(info.kernelName) +
        ": raising its dynamic "
        "shared memory limit to smem_bytes = " +
        std::to_string(info.smemBytes) + " failed: " + s.message());
  return Status::success();
}

} // namespace

Status AttentionKernel::load(const Context &context, const void *cubin,
                             size_t size, const KernelInfo &info,
                             const AttentionSpec &spec, AttentionKernel *out) {
  if (!out)
    return Status::error("AttentionKernel::load: the output pointer is null");
  AttentionKernel result;
  if (Status s = loadImpl(
          context, cubin, size, "cubin '" + info.kernelName + "' (in memory)",
          info, spec, &result.module, &result.function, &result.mergeFunction,
          &result.leanFunction, &result.shortFunction, &result.tmaFunction);
      !s)
    return s;
  result.kernelInfo = info;
  result.kernelSpec = spec;
  result.ctx = context.get();
  // Resident CTA slots: persistent grids, lean CTAs and the split model
  // count a kernel built for two CTAs per SM twice per SM.
  result.numSMs = context.info().multiprocessorCount * info.ctasPerSM;
  result.tmaDecode =
      info.tmaEntry && preferTmaDecode(context.info().dramBytesPerSecond());
  *out = std::move(result);
  return Status::success();
}

Status AttentionKernel::loadFiles(const Context &context,
                                  const std::string &stem,
                                  AttentionKernel *out) {
  if (!out)
    return Status::error("AttentionKernel::loadFiles: the output pointer is "
                         "null");
  std::string doing = "cannot load attention kernel " + quoted(stem) + ": ";
  KernelFiles files;
  if (Status s = readKernelFiles(stem, &files); !s)
    return Status::error(doing + s.message());

  AttentionKernel result;
  if (Status s = loadImpl(context, files.cubin.data(), files.cubin.size(),
                          quoted(stem + ".cubin"), files.info, files.spec,
                          &result.module, &result.function,
                          &result.mergeFunction, &result.leanFunction,
                          &result.shortFunction, &result.tmaFunction);
      !s)
    return s;
  result.numSMs = context.info().multiprocessorCount * files.info.ctasPerSM;
  result.tmaDecode = files.info.tmaEntry &&
                     preferTmaDecode(context.info().dramBytesPerSecond());
  result.kernelInfo = std::move(files.info);
  result.kernelSpec = std::move(files.spec);
  result.ctx = context.get();
  *out = std::move(result);
  return Status::success();
}

std::string AttentionKernel::describe() const {
  return quoted(kernelInfo.kernelName) + " (" + module.name() + ")";
}

Status AttentionKernel::prepare(const AttentionArgs &args, float log2Threshold,
                                AttentionLaunch *out) const {
  if (!out)
    return Status::error("AttentionKernel::prepare: the output pointer is "
                         "null");
  if (!valid())
    return Status::error("cannot launch an attention kernel that is not "
                         "loaded (use AttentionKernel::load or loadFiles)");
  const std::string &name = kernelInfo.kernelName;
  if (Status s = validateArgsForKernel(args, kernelInfo, kernelSpec, name); !s)
    return s;
  if (Status s = checkOutputOverlap(args); !s)
    return Status::error("arguments for kernel " + quoted(name) + ": " +
                         s.message());

  CUtensorMapDataType dataType = kernelSpec.dtype == DType::BF16
                                     ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                     : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  std::string doing = "preparing the launch of kernel " + quoted(name) + ": ";
  auto blockM = uint32_t(kernelInfo.blockM),
       blockN = uint32_t(kernelInfo.blockN);
  // The short-sequence entry: its own KV blocks, so K/V boxes of its rows.
  bool shortEntry =
      chooseShortEntry(kernelInfo, args.seqQ, args.seqKV, kernelSpec.causal);
  if (shortEntry)
    blockN = uint32_t(kernelInfo.shortBlockN);
  // K/V multicast pairs: each CTA copies half of every K/V block.
  uint32_t kvBoxRows = blockN / uint32_t(kernelInfo.clusterM);
  // Q tiles per CTA (sm_100a: two of 128 rows): one box per tile.
  uint32_t tileRows = blockM / uint32_t(kernelInfo.qTiles);
  AttentionLaunch launch;
  launch.shortEntry = shortEntry;
  if (Status s = encodeTiledBSHD(&launch.tmQ, "Q", dataType, args.q, args.batch,
                                 args.seqQ, args.numQHeads, args.headDim,
                                 args.qStrides, tileRows, kTmaBoxHeadDim,
                                 TmaSwizzle::B128);
      !s)
    return Status::error(doing + s.message());
  // A paged cache: K and V over the page pool, {D, H, page, numPages},
  // boxes of min(block_n, page) rows (one copy per page of a block).
  int64_t kvOuter = args.batch, kvRows = args.seqKV;
  if (kernelSpec.paged()) {
    kvOuter = args.numPages;
    kvRows = kernelSpec.kvPageSize;
    kvBoxRows = std::min(blockN, uint32_t(kernelSpec.kvPageSize));
  }
  if (Status s = encodeTiledBSHD(&launch.tmK, "K", dataType, args.k, kvOuter,
                                 kvRows, args.numKVHeads, args.headDim,
                                 args.kStrides, kvBoxRows, kTmaBoxHeadDim,
                                 TmaSwizzle::B128);
      !s)
    return Status::error(doing + s.message());
  // V's head dim is head_dim_v, equal to head_dim (checked at load).
  if (Status s = encodeTiledBSHD(&launch.tmV, "V", dataType, args.v, kvOuter,
                                 kvRows, args.numKVHeads,
                                 kernelSpec.headDimV, args.vStrides, kvBoxRows,
                                 kTmaBoxHeadDim, TmaSwizzle::B128);
      !s)
    return Status::error(doing + s.message());
  // kv_cp_async: the load warpgroup reads K/V through their pointers and
  // strides (the tensor maps above go unused); paged, the "batch" stride
  // is the page's and the kernel reads no entry outside [0, numPages).
  launch.kPtr = args.k;
  launch.vPtr = args.v;
  launch.kStrideB = args.kStrides.batch;
  launch.kStrideS = args.kStrides.seq;
  launch.kStrideH = args.kStrides.head;
  launch.vStrideB = args.vStrides.batch;
  launch.vStrideS = args.vStrides.seq;
  launch.vStrideH = args.vStrides.head;
  launch.seqLensKV = args.seqLensKV;
  launch.blockTable = args.blockTable;
  launch.maxPages = int32_t(args.maxPages);
  launch.numPages = int32_t(args.numPages);

  // O stored with TMA (o_tensor_map): a tile's 64-column panels from the
  // 128B-swizzled staging tile; rows at or past seqQ lie outside the
  // tensor and are not written.
  if (kernelInfo.oTensorMap)
    if (Status s = encodeTiledBSHD(&launch.tmO, "O", dataType, args.o,
                                   args.batch, args.seqQ, args.numQHeads,
                                   kernelSpec.headDimV, args.oStrides,
                                   tileRows, kTmaBoxHeadDim, TmaSwizzle::B128);
        !s)
      return Status::error(doing + s.message());

  launch.o = args.o;
  launch.lse = args.lse;
  launch.stats = args.stats;
  // int64 {visited, skipped} per batch entry and query head.
  if (args.zeroStats && args.stats != 0)
    launch.zeroStatsBytes =
        size_t(args.batch) * size_t(args.numQHeads) * 2 * sizeof(int64_t);
  launch.seqQ = int32_t(args.seqQ);
  launch.seqKV = int32_t(args.seqKV);
  launch.oStrideB = args.oStrides.batch;
  launch.oStrideS = args.oStrides.seq;
  launch.oStrideH = args.oStrides.head;
  launch.scaleLog2 = float(kernelSpec.effectiveScale() * kLog2E);
  launch.log2Threshold =
      std::isnan(log2Threshold) ? specLog2Threshold() : log2Threshold;
  launch.log2ThresholdPtr = args.log2ThresholdPtr;
  launch.grid = Dim3(unsigned((args.seqQ + blockM - 1) / blockM),
                     unsigned(args.numQHeads), unsigned(args.batch));
  if (kernelInfo.qGroup) {
    // Decode: the q_group q heads of a KV head by floor(block_m / q_group)
    // tokens per tile; grid (query tiles x splits, kv heads, batch).
    uint32_t g = uint32_t(kernelInfo.qGroup), tokens = blockM / g;
    if (Status s = encodeTiledBSHD(&launch.tmQ, "Q", dataType, args.q,
                                   args.batch, args.seqQ, args.numQHeads,
                                   args.headDim, args.qStrides, tokens,
                                   kTmaBoxHeadDim, TmaSwizzle::B128, g);
        !s)
      return Status::error(doing + s.message());
    if (args.splitMerge == SplitMerge::MergeKernel && !kernelInfo.mergeKernel)
      return Status::error(doing + "splitMerge = MergeKernel, but the kernel "
                                   "was built without merge_kernel (no " +
                           quoted(kernelInfo.kernelName + "_merge") +
                           "; compile with --merge-kernel)");
    DecodeSplits choice = decodeSplitsFor(args);
    int splits = choice.splits;
    size_t need = workspaceBytes(args);
    if (need && args.workspace == 0)
      return Status::error(
          doing + "the launch splits KV " + std::to_string(splits) +
          " ways and needs a workspace of " + std::to_string(need) +
          " bytes (AttentionArgs::workspace, sized by "
          "AttentionKernel::workspaceBytes), or kvSplits = 1");
    if (need && args.workspaceBytes < need)
      return Status::error(doing + "the workspace has " +
                           std::to_string(args.workspaceBytes) +
                           " bytes but this launch (" + std::to_string(splits) +
                           " KV splits) needs " + std::to_string(need));
    if (need && args.workspace % 16)
      return Status::error(doing + "the workspace is not 16-byte aligned");
    launch.workspace = need ? args.workspace : 0;
    launch.kvSplits = splits;
    int64_t tiles = (args.seqQ + tokens - 1) / tokens;
    launch.grid = Dim3(unsigned(tiles * splits), unsigned(args.numKVHeads),
                       unsigned(args.batch));
    // The merge kernel's grid: per tile, ceil(units / 32) CTAs, units =
    // the four-column units of the rows with a token (q_group x min(seq_q,
    // tokens per tile) rows).
    auto setMergeGrid = [&] {
      int64_t rows = int64_t(g) * std::min<int64_t>(args.seqQ, tokens);
      int64_t units = rows * kernelSpec.headDimV / 4;
      int64_t perTile = (units + kMergeUnitsPerCTA - 1) / kMergeUnitsPerCTA;
      launch.mergeGrid = Dim3(unsigned(tiles * perTile),
                              unsigned(args.numKVHeads), unsigned(args.batch));
      launch.mergeLaunch = 1;
    };
    if (kernelInfo.persistent && kernelInfo.lean) {
      // One CTA per SM (fewer when there are fewer KV blocks), each an
      // even share of every tile's blocks; parameter 19: slots per tile.
      if (numSMs < 1)
        return Status::error(doing + "the device's SM count is unknown");
      int64_t blocks = (args.seqKV + kernelInfo.blockN - 1) / kernelInfo.blockN;
      int64_t all = int64_t(args.batch) * args.numKVHeads * tiles;
      // The kernel numbers the launch's blocks in 32 bits.
      if (all * blocks > INT32_MAX)
        return Status::error(doing + "a lean decode launch numbers its " +
                             std::to_string(all * blocks) +
                             " KV blocks (tiles x blocks) in 32 bits; at "
                             "most " +
                             std::to_string(INT32_MAX));
      launch.grid = Dim3(unsigned(choice.leanCtas), 1u, 1u);
      launch.decodeSplits = splits;
      launch.decodeBatch = int32_t(args.batch);
    } else if (choice.balancedBudget != 0) {
      // Splits that follow the lengths: the CTA budget C (parameter 19)
      // shared out by blocks; each tile takes at least one split, so at
      // most C + tiles CTAs take part (the others return at once). A
      // budget of -S: S splits per tile, tiles x S CTAs.
      int64_t all = int64_t(args.batch) * args.numKVHeads * tiles;
      int64_t ctas = choice.balancedBudget > 0 ? choice.balancedBudget + all
                                               : -choice.balancedBudget * all;
      // The kernel sums the tiles' blocks in 32 bits (it clamps each
      // length to seqKV).
      int64_t blocks = (args.seqKV + kernelInfo.blockN - 1) / kernelInfo.blockN;
      if (all * blocks > INT32_MAX || ctas > INT32_MAX)
        return Status::error(doing +
                             "splits that follow the lengths number "
                             "the launch's KV blocks (tiles x " +
                             std::to_string(blocks) + ") and CTAs (" +
                             std::to_string(ctas) + ") in 32 bits");
      launch.grid = Dim3(unsigned(ctas), 1u, 1u);
      launch.decodeSplits = int32_t(choice.balancedBudget);
      launch.decodeBatch = int32_t(args.batch);
      if (choice.mergeKernel && launch.workspace)
        setMergeGrid();
    } else if (choice.lean) {
      // The lean entry (<kernel>_lean): choice.leanCtas CTAs sharing the
      // launch's blocks; parameter 19: slots per tile, 20: the batch.
      launch.grid = Dim3(unsigned(choice.leanCtas), 1u, 1u);
      launch.decodeSplits = splits;
      launch.decodeBatch = int32_t(args.batch);
      launch.leanEntry = true;
    } else if (choice.mergeKernel && launch.workspace) {
      // The merge kernel (parameter 19: the split count).
      launch.decodeSplits = splits;
      launch.decodeBatch = int32_t(args.batch);
      setMergeGrid();
    } else if (kernelInfo.persistent) {
      // One resident CTA per SM walking the (batch, KV head, query tile,
      // split) items; the split count and batch are parameters 19, 20.
      if (numSMs < 1)
        return Status::error(doing + "the device's SM count is unknown");
      int64_t items = int64_t(args.batch) * args.numKVHeads * tiles * splits;
      launch.grid = Dim3(unsigned(std::min<int64_t>(items, numSMs)), 1u, 1u);
      launch.decodeSplits = splits;
      launch.decodeBatch = int32_t(args.batch);
    }
    // The split grid on a GPU of lower DRAM bandwidth: its TMA entry.
    launch.tmaEntry = tmaDecode && !launch.leanEntry;
  }
  if (kernelInfo.clusterM > 1) {
    // Whole clusters; an extra CTA past the last query block loads its
    // share of K/V for its partner and writes nothing.
    if (kernelInfo.persistent)
      return Status::error(doing + "a persistent kernel cannot have clusters");
    unsigned c = unsigned(kernelInfo.clusterM);
    launch.grid.x = (launch.grid.x + c - 1) / c * c;
  }
  if ((kernelInfo.persistent || (shortEntry && kernelInfo.shortPersistent)) &&
      !kernelInfo.qGroup) {
    // One resident CTA per SM (the schedules use most of the shared memory),
    // shared among the batch entries (grid z); each walks its entry's tiles.
    if (numSMs < 1)
      return Status::error(doing + "the device's SM count is unknown");
    int64_t tiles = int64_t(launch.grid.x) * args.numQHeads;
    int64_t perBatch =
        std::max<int64_t>(1, numSMs / std::max<int64_t>(1, args.batch));
    launch.grid =
        Dim3(unsigned(std::min(tiles, perBatch)), 1u, unsigned(args.batch));
  }
  launch.block = Dim3(unsigned(kernelInfo.threads));
  launch.smemBytes = size_t(shortEntry ? shortEntrySmemBytes(kernelInfo)
                                       : kernelInfo.smemBytes);
  *out = launch;
  return Status::success();
}

int AttentionKernel::kvSplitsFor(const AttentionArgs &args) const {
  return decodeSplitsFor(args).splits;
}

int AttentionKernel::launchKVSplits(const AttentionArgs &args) const {
  DecodeSplits choice = decodeSplitsFor(args);
  // Lean CTAs and a budget of -S come from the runtime's own choice: the
  // caller's value (0) gets them again, a split count would not.
  return choice.leanCtas > 0 || choice.balancedBudget < 0 ? args.kvSplits
                                                          : choice.splits;
}

DecodeSplits AttentionKernel::decodeSplitsFor(const AttentionArgs &args) const {
  if (!kernelInfo.splitKV || kernelInfo.qGroup < 1 || args.seqKV < 1)
    return {};
  int64_t tokens = kernelInfo.blockM / kernelInfo.qGroup;
  int64_t tiles = std::max<int64_t>(1, args.batch) *
                  std::max<int64_t>(1, args.numKVHeads) *
                  ((std::max<int64_t>(1, args.seqQ) + tokens - 1) / tokens);
  int64_t blocks = (args.seqKV + kernelInfo.blockN - 1) / kernelInfo.blockN;
  int sms = numSMs > 0 ? numSMs : 132;
  // The merge's work per tile: four-column units of its rows with a token
  // (q_group q heads x the tile's tokens; padding rows are not merged).
  int64_t rows = kernelInfo.qGroup *
                 std::min<int64_t>(tokens, std::max<int64_t>(1, args.seqQ));
  int64_t quads = rows * kernelSpec.headDimV / 4;
  int64_t blockBytes = int64_t(kernelInfo.blockN) *
                       (kernelSpec.headDim + kernelSpec.headDimV) *
                       dtypeBytes(kernelSpec.dtype);
  if (kernelInfo.lean) {
    // tiles x kvSplits CTAs when asked, else chooseLeanSplits' grid; at
    // most one per block.
    int64_t s = args.kvSplits > 0
                    ? args.kvSplits
                    : chooseLeanSplits(tiles, blocks, blockBytes, sms, quads);
    int64_t ctas = std::max<int64_t>(
        1, std::min<int64_t>(tiles * blocks, s > 0 ? tiles * s : sms));
    return {leanSlotsFor(tiles, blocks, ctas), false, false, ctas};
  }
  int64_t splits = args.kvSplits > 0         ? args.kvSplits
                   : kernelInfo.kvSplits > 0 ? kernelInfo.kvSplits
                                             : 0;
  // Who may merge: a kernel without merge_kernel only in the kernel (the
  // launch refuses MergeKernel for it).
  SplitMerge merge = kernelInfo.mergeKernel ? args.splitMerge
                                            : SplitMerge::InKernel;
  bool mergeKernel = merge == SplitMerge::MergeKernel;
  if (!splits)
    splits = chooseDecodeSplits(tiles, blocks, blockBytes, sms,
                                kernelInfo.persistent != 0, quads, merge);
  // No empty split beyond the blocks (interleaved: beyond the chunks of C
  // blocks), and grid x within its limit.
  int64_t chunk = std::max(1, kernelInfo.splitChunk);
  splits = std::max<int64_t>(
      1, std::min<int64_t>({splits, (blocks + chunk - 1) / chunk, 1024}));
  // Auto: the cheaper merge at the final count (the one the model paired
  // with the count when it chose it).
  if (merge == SplitMerge::Auto)
    mergeKernel = decodeMergeUs(splits, quads, true) <
                  decodeMergeUs(splits, quads, false);
  mergeKernel = mergeKernel && splits > 1;
  // Splits that follow per-sequence lengths: the split grid's CTAs as the
  // budget (per = ceil(W / C) blocks: at equal lengths the split grid
  // itself, with shorter sequences fewer splits and the longer more).
  // One split asked for (kvSplits = 1, or the kernel's): a budget of 1, so
  // per = W and every tile takes one split (no workspace: each writes O;
  // the kernel skips its passes over the lengths). The same where the
  // model picked one split for more than two waves of tiles: there the
  // hardware's CTA dispatch balances the lengths, and longer sequences'
  // extra splits only add merges (H200, session 34: batch 64 x up to 8K,
  // 512 tiles, 0.89x of the split grid with the budget of 512; 1.02-1.12x
  // at 128-256 tiles).
  // Past two waves with the model's count of S > 1 splits: a budget of -S,
  // S splits per tile (the split grid's mapping; 6 splits of 136 tiles:
  // 0.935x of the split grid with the budget of 816, session 34).
  // With the merge kernel (the split model pairs it with MQA and seq_q
  // 4-8, or asked for): a budget of -S, whose slots are the split grid's,
  // which the merge kernel reads (kernels of balanced_splits = 3).
  if (kernelInfo.balancedSplits) {
    DecodeSplits balanced{int(splits), mergeKernel};
    bool byModel = args.kvSplits < 1 && kernelInfo.kvSplits < 1;
    bool waves = tiles * splits > 2 * int64_t(sms);
    bool one = args.kvSplits == 1 ||
               (args.kvSplits < 1 && kernelInfo.kvSplits == 1) ||
               (byModel && splits == 1 && waves);
    // (A kernel of .meta balanced_splits = 1 predates -S: its budget.)
    bool uniform =
        (byModel && waves && kernelInfo.balancedSplits >= 2) || mergeKernel;
    balanced.balancedBudget = one       ? 1
                              : uniform ? -splits
                                        : tiles * splits;
    return balanced;
  }
  // The lean entry, where the split grid this launch would take has ragged
  // waves (leanBeatsSplitGrid), whichever merge the model paired with it
  // (the entry merges in the kernel: H200, session 29 §7, where the model
  // picked the merge kernel (MQA, seq_q 4-8) lean was 2.9-17% faster at 7
  // of 8 ragged shapes, 1.8% slower at MQA batch 17 x 16K seq_q 8); not
  // with the merge kernel or a split count asked for.
  // (The lean kernel numbers the launch's blocks in 32 bits; the split
  // model fills the waves of launches that large anyway, so this only
  // guards.)
  // With per-sequence lengths the split grid gives each sequence the
  // splits of the longest (`blocks` is the launch's seqKV, the longest
  // length), so in one or two waves a batch of mixed lengths waits for the
  // longest's CTAs, while lean's shares follow the lengths: there (and at
  // most 32 sequences, below) the entry takes the launch with the split
  // grid's CTA count (H200, session 32 §3-4: 1.08-3.85x at 6 mixed batches,
  // 0.99x at 2 uniform ones). From more waves on the hardware's CTA
  // dispatch balances the split grid itself: lean CTAs ran at 0.86x and
  // 0.56x of it as that many CTAs (batch 64 x up to 8K, 128 x up to 4K),
  // 0.98x and 0.75x as one per SM where the rule of one length would take
  // them (batch 17 x up to 16K, 96 x up to 2K), so per-sequence launches
  // keep the split grid there. Each lean CTA reads the batch's lengths twice,
  // one load after another, before its first copy: hence the batch bound.
  if (kernelInfo.leanEntry && args.kvSplits < 1 && kernelInfo.kvSplits < 1 &&
      merge != SplitMerge::MergeKernel && tiles * blocks <= INT32_MAX) {
    bool mixed = tiles * splits <= 2 * int64_t(sms) && args.batch <= 32;
    bool ragged =
        !kernelInfo.perSeqKV && leanBeatsSplitGrid(tiles, blocks, splits, sms);
    if (ragged || (kernelInfo.perSeqKV && mixed)) {
      int64_t ctas = std::max<int64_t>(
          1, std::min<int64_t>(tiles * blocks, ragged ? sms : tiles * splits));
      return {leanSlotsFor(tiles, blocks, ctas), false, true, ctas};
    }
  }
  return {int(splits), mergeKernel};
}

double blasst::rt::decodeMergeUs(int64_t s, int64_t mergeQuads,
                                 bool mergeKernel) {
  if (s < 2 || mergeQuads < 1)
    return 0.0;
  // The merge: the tile's last split merges every split's partial rows on
  // one warpgroup of 128 threads, one memory round trip per 16 splits for
  // each 128 four-column units of the rows with a token, one after another
  // (SM90Decode.cpp). 1.8 us a round trip: the merging CTA's counter ->
  // end at 16 and 64 splits, batch 1 x 128K, 32/8 heads (session 22 §6).
  // With one KV head and 32 rows (MQA) at batch 1 that is what bounds the
  // split count: 128 splits would merge in 64 round trips. The round trips
  // after the first overlap in part: 0.7 us each, fitted to MQA 32/1 at
  // batch 1 x 32K / 128K, 16-128 splits (session 23 §2: the fit's pick is
  // the measured best, 32 and 64 splits; 1.8 us each picked 16 and 32,
  // 17-23% slower).
  constexpr double kMergeFirstUs = 1.8, kMergeNextUs = 0.7;
  // The merge kernel (merge_kernel): each warp folds every eighth split in
  // chunks of 8, so a round trip per 64 splits, on many CTAs; its launch
  // overlaps the attention kernel's end (programmatic dependent launch).
  constexpr double kMergeKernelUs = 3.0;
  constexpr double kMergeKernelNextUs = 0.7;
  if (mergeKernel)
    return kMergeKernelUs + double((s - 1) / 64) * kMergeKernelNextUs;
  int64_t trips = (mergeQuads + 127) / 128 * ((s + 15) / 16);
  return kMergeFirstUs + double(trips - 1) * kMergeNextUs;
}

int blasst::rt::chooseDecodeSplits(int64_t tiles, int64_t blocks,
                                   int64_t blockBytes, int sms, bool persistent,
                                   int64_t mergeQuads, SplitMerge merge,
                                   bool *mergeKernelChosen) {
  if (mergeKernelChosen)
    *mergeKernelChosen = false;
  if (tiles < 1 || blocks < 2 || blockBytes < 1 || sms < 1)
    return 1;
  // Launches repeat shapes: the last answer per thread (the search below is
  // a few microseconds).
  struct Query {
    int64_t tiles, blocks, blockBytes;
    int sms;
    bool persistent;
    int64_t mergeQuads;
    SplitMerge merge;
    bool operator==(const Query &o) const {
      return tiles == o.tiles && blocks == o.blocks &&
             blockBytes == o.blockBytes && sms == o.sms &&
             persistent == o.persistent && mergeQuads == o.mergeQuads &&
             merge == o.merge;
    }
  };
  thread_local Query lastQuery{0, 0, 0, 0, false, 0, SplitMerge::InKernel};
  thread_local int lastSplits = 1;
  thread_local bool lastMergeKernel = false;
  Query query{tiles, blocks, blockBytes, sms, persistent, mergeQuads, merge};
  if (query == lastQuery) {
    if (mergeKernelChosen)
      *mergeKernelChosen = lastMergeKernel;
    return lastSplits;
  }
  // The model's constants (bytes per microsecond, microseconds), fitted on
  // 35 (shape, kernel) pairs x 1-13 split counts of dense and BLASST decode
  // (batch 1-128, 1K-64K keys, 32/8 heads, head_dim 128): it picks the
  // measured best count at 32 of them; the other 3 lie beyond the counts
  // measured (docs/results/2026-12-03-session21.md §1-2).
  constexpr double kCtaRate = 48e3, kPeak = 5.1e6, kFixedUs = 4.0;
  // A CTA's rate among `ctas`; a full wave's once (prepare runs this per
  // launch: about one cube root per candidate).
  auto rate = [&](int64_t ctas) {
    double x = double(ctas) * kCtaRate / kPeak;
    return kCtaRate / std::cbrt(1.0 + x * x * x);
  };
  double fullRate = rate(sms);
  auto waveUs = [&](int64_t ctas, double bytesPerCta) {
    return kFixedUs + bytesPerCta / (ctas == sms ? fullRate : rate(ctas));
  };
  // Persistent CTAs: min(items, SMs) CTAs walk the tiles x S items in
  // rounds, each item 4.5 us more than its bytes (fitted to one shape on
  // the H200, batch 64 x 4K at 2-8 splits, session 21 §7; where the time
  // goes is not located).
  constexpr double kItemUs = 4.5;
  int64_t maxSplits = std::min<int64_t>(
      {blocks / 2, 1024, (persistent ? 64 : 8) * sms / tiles});
  int best = 1;
  bool bestMergeKernel = false;
  double bestUs = 0;
  for (int64_t s = 1; s <= std::max<int64_t>(1, maxSplits); ++s) {
    int64_t ctas = tiles * s;
    double bytes = double((blocks + s - 1) / s) * double(blockBytes);
    double us = 0;
    if (persistent) {
      int64_t resident = std::min<int64_t>(ctas, sms);
      int64_t rounds = (ctas + resident - 1) / resident;
      us = waveUs(resident, 0) +
           double(rounds) * (waveUs(resident, bytes) - kFixedUs + kItemUs);
    } else {
      us = double(ctas / sms) * waveUs(sms, bytes) +
           (ctas % sms ? waveUs(ctas % sms, bytes) : 0.0);
    }
    double inKernelUs = decodeMergeUs(s, mergeQuads, false);
    double kernelUs = decodeMergeUs(s, mergeQuads, true);
    bool byKernel = s > 1 && (merge == SplitMerge::MergeKernel ||
                              (merge == SplitMerge::Auto && kernelUs < inKernelUs));
    us += byKernel ? kernelUs : inKernelUs;
    // A split more must win by 0.5% (the workspace it adds is not in the
    // model).
    if (s == 1 || us < bestUs * 0.995) {
      best = int(s);
      bestMergeKernel = byKernel;
      bestUs = us;
    }
  }
  lastQuery = query;
  lastSplits = best;
  lastMergeKernel = bestMergeKernel;
  if (mergeKernelChosen)
    *mergeKernelChosen = bestMergeKernel;
  return best;
}

int blasst::rt::chooseLeanSplits(int64_t tiles, int64_t blocks,
                                 int64_t blockBytes, int sms,
                                 int64_t mergeQuads) {
  if (tiles < 1 || blocks < 1 || sms < 1)
    return 1;
  int s = chooseDecodeSplits(tiles, blocks, blockBytes, sms,
                             /*persistent=*/false, mergeQuads);
  return leanBeatsSplitGrid(tiles, blocks, s, sms) ? 0 : s;
}

bool blasst::rt::chooseShortEntry(int64_t seqQ, int64_t seqKV, bool causal,
                                  int blockM, int blockN, int shortBlockN,
                                  int shortCtasPerSM, bool shortPersistent) {
  if (seqQ < 1 || seqKV < 1 || blockM < 1 || shortBlockN < 1 ||
      shortBlockN >= blockN)
    return false;
  // The longest tile: every key (causal: the last tile's, all of them).
  if (shortPersistent)
    return (seqKV + shortBlockN - 1) / shortBlockN * shortBlockN <=
           kShortEntryPersistentMaxKeys;
  // Keys a row computes in blocks of n, summed over the query tiles (the
  // same for every head and batch entry).
  auto keys = [&](int64_t n) {
    if (!causal)
      return double((seqKV + n - 1) / n * n) *
             double((seqQ + blockM - 1) / blockM);
    double total = 0;
    for (int64_t row0 = 0; row0 < seqQ; row0 += blockM) {
      int64_t last = std::min(row0 + blockM, seqQ) - 1;
      int64_t limit = std::clamp<int64_t>(last + seqKV - seqQ + 1, 0, seqKV);
      total += double((limit + n - 1) / n * n);
    }
    return total;
  };
  if (shortCtasPerSM == 2)
    return keys(shortBlockN) <= double(kShortEntryTwoCtaMaxKeys) *
                                    double((seqQ + blockM - 1) / blockM);
  return keys(blockN) > 1.04 * keys(shortBlockN);
}

bool blasst::rt::chooseShortEntry(const KernelInfo &info, int64_t seqQ,
                                  int64_t seqKV, bool causal) {
  return info.shortBlockN &&
         chooseShortEntry(seqQ, seqKV, causal, info.blockM, info.blockN,
                          info.shortBlockN, info.shortCtasPerSM,
                          info.shortPersistent != 0);
}

bool blasst::rt::leanBeatsSplitGrid(int64_t tiles, int64_t blocks,
                                    int64_t splits, int sms) {
  if (tiles < 1 || blocks < 1 || splits < 1 || sms < 1)
    return false;
  int64_t ctas = tiles * splits;
  int64_t waves = (ctas + sms - 1) / sms;
  bool underfilled = ctas * 10 < waves * sms * 9;
  bool shortCtas = (blocks + splits - 1) / splits <= 32;
  return waves >= 2 && (underfilled || shortCtas);
}

int blasst::rt::leanSlots(int64_t tiles, int64_t blocks, int64_t ctas) {
  if (tiles < 1 || blocks < 1 || ctas < 1)
    return 1;
  int64_t total = tiles * blocks;
  int64_t per = (total + ctas - 1) / ctas;
  // A tile starting o blocks into a share (o < per) ends in share
  // floor((o + blocks - 1) / per) after it.
  int64_t parts = (per - 1 + blocks - 1) / per + 1;
  return int(std::max<int64_t>(1, std::min<int64_t>(parts, ctas)));
}

int AttentionKernel::leanSlotsFor(int64_t tiles, int64_t blocks,
                                  int64_t ctas) const {
  // Per-sequence lengths: whether a tile spans CTAs depends on the lengths
  // (on the device), so any launch of several CTAs has a workspace.
  if (kernelInfo.perSeqKV)
    return ctas > 1 ? 2 : 1;
  return leanSlots(tiles, blocks, ctas);
}

size_t AttentionKernel::workspaceBytes(const AttentionArgs &args) const {
  DecodeSplits choice = decodeSplitsFor(args);
  int splits = choice.splits;
  if (splits <= 1 && choice.balancedBudget <= 1)
    return 0;
  int64_t tokens = kernelInfo.blockM / kernelInfo.qGroup;
  int64_t tiles = args.batch * args.numKVHeads * ((args.seqQ + tokens - 1) / tokens);
  // Splits that follow the lengths: a slot per CTA of the grid, whatever
  // the split count (which tiles split depends on the lengths), unless the
  // budget is 1 (then none splits).
  if (choice.balancedBudget > 1) {
    int64_t slots = choice.balancedBudget + tiles;
    return size_t(slots) * size_t(kernelInfo.blockM) *
               size_t(kernelSpec.headDimV + 1) * sizeof(float) +
           size_t(tiles) * sizeof(int32_t);
  }
  // Lean CTAs (a lean kernel or the entry): two slots per CTA, its first
  // and last part (SM90Decode.cpp); else one per (tile, split).
  int64_t slots = choice.leanCtas > 0 ? 2 * choice.leanCtas : tiles * splits;
  return size_t(slots) * size_t(kernelInfo.blockM) *
             size_t(kernelSpec.headDimV + 1) * sizeof(float) +
         size_t(tiles) * sizeof(int32_t);
}

Status AttentionKernel::launch(const AttentionLaunch &prepared,
                               CUstream stream) const {
  if (!valid())
    return Status::error("cannot launch an attention kernel that is not "
                         "loaded (use AttentionKernel::load or loadFiles)");
  std::string error;
  const detail::DriverApi *api = detail::driver(&error);
  if (!api)
    return Status::error(error);
  // The kernel's context for the launch, the caller's again afterwards.
  detail::ScopedContext scope(*api, ctx);
  if (CUresult r = scope.result(); r != CUDA_SUCCESS)
    return Status::error(
        explain(r, "cuCtxSetCurrent failed while preparing to launch kernel " +
                       quoted(kernelInfo.kernelName)));
  // A local copy: the parameter pointers must be non-const, and the copy
  // (about 500 bytes) keeps the descriptors 64-byte aligned.
  AttentionLaunch copy = prepared;
  if (copy.zeroStatsBytes > 0)
    if (CUresult r = api->memsetD32Async(copy.stats, 0,
                                         copy.zeroStatsBytes / 4, stream);
        r != CUDA_SUCCESS)
      return Status::error(explain(
          r, "cuMemsetD32Async failed while zeroing the statistics of "
             "kernel " +
                 quoted(kernelInfo.kernelName)));
  void *params[AttentionLaunch::kNumParams];
  copy.fillParams(params);
  if (copy.leanEntry && !leanFunction.valid())
    return Status::error("launch of kernel " + quoted(kernelInfo.kernelName) +
                         " asks for its lean entry, which is not loaded");
  if (copy.shortEntry && !shortFunction.valid())
    return Status::error("launch of kernel " + quoted(kernelInfo.kernelName) +
                         " asks for its short-sequence entry, which is not "
                         "loaded");
  if (copy.tmaEntry && !tmaFunction.valid())
    return Status::error("launch of kernel " + quoted(kernelInfo.kernelName) +
                         " asks for its TMA entry, which is not loaded");
  const Function &entry = copy.leanEntry    ? leanFunction
                          : copy.shortEntry ? shortFunction
                          : copy.tmaEntry   ? tmaFunction
                                            : function;
  if (Status s = rt::launch(entry, copy.grid, copy.block, copy.smemBytes,
                            stream, params, std::nullopt);
      !s || copy.mergeGrid.x == 0)
    return s;
  // The splits' merge: a programmatic dependent of the attention kernel
  // (scheduled once all its CTAs started; it waits for their writes).
  if (!mergeFunction.valid())
    return Status::error("launch of kernel " + quoted(kernelInfo.kernelName) +
                         " asks for its merge kernel, which is not loaded");
  return rt::launch(mergeFunction, copy.mergeGrid, Dim3(kMergeThreads), 0,
                    stream, params, std::nullopt, /*programmaticDependent=*/true);
}

Status AttentionKernel::run(const AttentionArgs &args, CUstream stream,
                            float log2Threshold) const {
  AttentionLaunch prepared;
  if (Status s = prepare(args, log2Threshold, &prepared); !s)
    return s;
  return launch(prepared, stream);
}
