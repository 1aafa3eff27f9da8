//===- AttentionKernel.h - Load and launch attention kernels ---*- C++ -*-===//
//
// The launcher for the attention kernels the blasst compiler produces: it
// reads a kernel's metadata (`<stem>.meta`) and spec (`<stem>.spec`), loads
// its cubin (`<stem>.cubin`), and launches it following KernelABI.h exactly:
// three TMA descriptors, the 14 parameters in ABI order, grid
// (ceil(seqQ / blockM), q_heads, batch), block (threads), `smemBytes` of
// dynamic shared memory, no cluster.
//
// Plain C++17 on top of Runtime.h and the spec library: no LLVM/MLIR. Like
// the rest of the runtime nothing throws; every fallible call returns a
// Status whose message says what was being done.
//
//   Context ctx;
//   Status s = Context::create(0, &ctx);
//   AttentionKernel kernel;
//   s = AttentionKernel::loadFiles(ctx, "out/attn", &kernel);
//   AttentionArgs args = ...;        // device pointers, shapes, strides
//   s = kernel.run(args, stream);    // the spec's threshold
//
//===----------------------------------------------------------------------===//
#ifndef BLASST_RUNTIME_ATTENTIONKERNEL_H
#define BLASST_RUNTIME_ATTENTIONKERNEL_H

#include "blasst/Runtime/KernelABI.h"
#include "blasst/Runtime/Runtime.h"
#include "blasst/Spec/AttentionSpec.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

namespace blasst::rt {

//===----------------------------------------------------------------------===//
// Kernel metadata (<stem>.meta)
//===----------------------------------------------------------------------===//

/// The metadata file format: one `key = value` per line; blank lines and
/// lines starting with `#` are ignored; blanks around key and value are
/// stripped. Keys:
///   abi_version       int, must equal kKernelABIVersion       (required)
///   kernel            entry point name, no blanks              (required)
///   target            sm_90a | sm_100a                         (required)
///   block_m, block_n  int in 1..256 (the TMA box rows)         (required)
///   threads           int in 1..1024                           (required)
///   smem_bytes        int >= 0, dynamic shared memory per CTA  (required)
///   compiler_version  free text (informational)                (optional)
///   persistent        0..1, CTAs walk the tiles (default 0)     (optional)
///   cluster_m         1..2, CTAs per cluster along x; 2: K/V
///                     multicast pairs, K/V boxes of block_n / 2
///                     rows, grid x rounded up to even (default 1) (optional)
///   q_group, split_kv, kv_splits  decode (KernelABI.h)          (optional)
///   q_tiles           1..2, Q tiles per CTA, each a TMA box of
///                     block_m / q_tiles rows (default 1)        (optional)
///   o_tensor_map      0..1, O stored with TMA through parameter
///                     15, O's tensor map (default 0)            (optional)
///   content_sha256    64 lowercase hex digits: kernelContentHash of
///                     the cubin, the .spec text and the other keys;
///                     checked by readKernelFiles/loadFiles  (optional)
/// Unknown and duplicate keys are errors. An abi_version other than
/// kKernelABIVersion is reported before anything else, since another ABI may
/// well have other keys. Every error names the source and the line:
///   `attn.meta:3: unknown key 'blockm' (known keys: ...)`.

/// Parses metadata text. `sourceName` prefixes error messages.
Status parseKernelInfo(const std::string &text, const std::string &sourceName,
                       KernelInfo *out);
/// Reads and parses `metaPath`.
Status readKernelInfo(const std::string &metaPath, KernelInfo *out);

/// Checks the fields of a KernelInfo (the same rules as the parser).
Status validateKernelInfo(const KernelInfo &info);
/// The file text for `info` (all keys, in the order above). parseKernelInfo
/// of the result gives `info` back.
std::string formatKernelInfo(const KernelInfo &info);
/// validateKernelInfo, then writes formatKernelInfo(info) to `metaPath`.
Status writeKernelInfo(const std::string &metaPath, const KernelInfo &info);

//===----------------------------------------------------------------------===//
// Argument checks
//===----------------------------------------------------------------------===//

/// Pure check (no driver) of `args` against the kernel, done by
/// AttentionKernel::run before it encodes or launches anything:
///  - validateAttentionArgs (non-null Q/K/V/O, sizes >= 1 and <= INT32_MAX,
///    kv heads dividing q heads, O not overlapping itself; prepare adds
///    checkOutputOverlap);
///  - head counts and head dim equal to the spec's; elementBytes equal to
///    the spec dtype's size (2);
///  - LSE given iff spec.lse, stats given iff spec.stats;
///  - a threshold pointer only for a BLASST kernel, 4-byte aligned;
///  - TMA alignment: every base pointer 16-byte aligned, every stride a
///    positive multiple of 8 elements (16 bytes);
///  - grid limits: q_heads and batch at most 65535.
/// `kernelName` prefixes the message.
Status validateArgsForKernel(const AttentionArgs &args, const KernelInfo &info,
                             const AttentionSpec &spec,
                             const std::string &kernelName);

/// The KV cache arguments against the spec (part of validateArgsForKernel):
/// seqLensKV given iff kv_lengths = per_sequence (4-byte aligned); for a
/// paged kv_cache a 4-byte aligned blockTable, maxPages and numPages in
/// 1..2^31-1 and seqKV (the lengths' bound) <= maxPages x page; for a
/// contiguous one none of them.
Status validateKVCacheArgs(const AttentionArgs &args,
                           const AttentionSpec &spec);

/// log2Threshold (ABI parameter 12) implied by the spec's sparsity policy:
/// ln_lambda * log2(e) for `blasst:ln_lambda=`, log2(a) for `blasst:a=`
/// (the kernel subtracts log2(seqKV) itself), 0 for dense kernels (which
/// ignore it).
float log2ThresholdForSpec(const AttentionSpec &spec);

//===----------------------------------------------------------------------===//
// A prepared launch
//===----------------------------------------------------------------------===//

/// Everything one launch passes, encoded and checked: the host copies of the
/// 15 kernel parameters plus the launch shape (parameter 14, the decode
/// workspace, only decode kernels have; the driver reads as many parameters
/// as the kernel takes). Preparing once and launching
/// many times keeps descriptor encoding out of timed regions. Holds no
/// pointers into itself, so it may be copied (CUtensorMap's alignas(64)
/// keeps the descriptors aligned, also on the heap).
/// merge_kernel: the merge kernel's block and the four-column units of a
/// tile each of its CTAs merges (the lowering's, SM90Decode.cpp).
constexpr unsigned kMergeThreads = 256;
constexpr int64_t kMergeUnitsPerCTA = 32;

struct AttentionLaunch {
  static constexpr int kNumParams = 31;

  CUtensorMap tmQ;                                  // 0
  CUtensorMap tmK;                                  // 1
  CUtensorMap tmV;                                  // 2
  uint64_t o = 0;                                   // 3  device pointer
  uint64_t lse = 0;                                 // 4  device pointer or 0
  uint64_t stats = 0;                               // 5  device pointer or 0
  int32_t seqQ = 0;                                 // 6
  int32_t seqKV = 0;                                // 7
  int64_t oStrideB = 0, oStrideS = 0, oStrideH = 0; // 8, 9, 10 (elements)
  float scaleLog2 = 0;                              // 11
  float log2Threshold = 0;                          // 12
  uint64_t log2ThresholdPtr = 0;                    // 13 device pointer or 0
  uint64_t workspace = 0;                           // 14 decode: or 0
  uint64_t seqLensKV = 0;  // 15 per_seq_kv / page_size kernels: or 0
  uint64_t blockTable = 0; // 16 paged: or 0
  int32_t maxPages = 0;    // 17 paged: block table columns
  CUtensorMap tmO;                                  // 18 o_tensor_map only
  int32_t decodeSplits = 0; // 19 persistent decode: the launch's KV splits
  int32_t decodeBatch = 0;  // 20 persistent decode: the batch
  int32_t mergeLaunch = 0;  // 21 merge_kernel: 1 when the merge kernel runs
  uint64_t kPtr = 0, vPtr = 0; // 22, 23 kv_cp_async: K, V device pointers
  int64_t kStrideB = 0, kStrideS = 0, kStrideH = 0; // 24-26 (elements)
  int64_t vStrideB = 0, vStrideS = 0, vStrideH = 0; // 27-29 (elements)
  int32_t numPages = 0; // 30 kv_cp_async with page_size: the page pool's size
  /// Decode kernels: the KV splits of this launch (1 for other kernels).
  int kvSplits = 1;
  /// merge_kernel with several splits: the merge kernel's grid (x = 0: no
  /// merge launch).
  Dim3 mergeGrid = Dim3(0u, 0u, 0u);
  /// lean_entry kernels: launch `<kernel>_lean` instead of the kernel (the
  /// same parameters; grid x = the lean CTAs).
  bool leanEntry = false;
  /// short_block_n kernels: launch `<kernel>_short` instead of the kernel
  /// (the same parameters and grid; K/V tensor maps of its block rows).
  bool shortEntry = false;
  /// tma_entry kernels: launch `<kernel>_tma` instead of the split grid
  /// (the same parameters and grid; it reads the K/V tensor maps).
  bool tmaEntry = false;

  Dim3 grid;
  Dim3 block;
  size_t smemBytes = 0;
  /// > 0: launch() zeroes this many bytes at `stats` on the stream first
  /// (AttentionArgs::zeroStats).
  size_t zeroStatsBytes = 0;

  /// Fills `params` with pointers to the fields above, in ABI order, for
  /// cuLaunchKernelEx. Valid while this object is.
  void fillParams(void *params[kNumParams]);
};

//===----------------------------------------------------------------------===//
// AttentionKernel
//===----------------------------------------------------------------------===//

/// A decode launch's split count, and whether its merge kernel merges
/// them (AttentionKernel::decodeSplitsFor).
struct DecodeSplits {
  int splits = 1;
  bool mergeKernel = false;
  /// The lean entry (KernelInfo::leanEntry) takes the launch.
  bool lean = false;
  /// Lean CTAs (a lean kernel, or the lean entry): how many share the
  /// launch's blocks; `splits` is then 1 when no tile spans two CTAs (no
  /// workspace), else more than 1 (leanSlots: the most CTAs a tile spans;
  /// 2 with per-sequence lengths, where the host cannot know it); the
  /// workspace has two slots per CTA either way.
  int64_t leanCtas = 0;
  /// balanced_splits kernels: the CTA budget C (tiles x splits) whose
  /// blocks per split, ceil(W / C), set each tile's split count on the
  /// device; the grid is C + tiles CTAs. Negative, -S: every tile S splits
  /// (the split grid's mapping, tiles x S CTAs; past two waves).
  int64_t balancedBudget = 0;
};

/// A loaded attention kernel: its module, entry point, metadata and spec.
/// Move-only (owns the Module); the Context must outlive it. launch() and
/// run() make the kernel's context current on the calling thread.
class AttentionKernel {
public:
  AttentionKernel() = default;
  AttentionKernel(AttentionKernel &&) = default;
  AttentionKernel &operator=(AttentionKernel &&) = default;
  AttentionKernel(const AttentionKernel &) = delete;
  AttentionKernel &operator=(const AttentionKernel &) = delete;

  /// Loads an in-memory cubin. Checks first, without the driver: the info
  /// (validateKernelInfo), the spec (AttentionSpec::validate, head_dim_v
  /// equal to head_dim, and checkSupported for info.target: a spec the
  /// compiler cannot build describes no cubin), then that the context's GPU
  /// can run info.target (sm_90a needs compute capability 9.0 exactly,
  /// sm_100a 10.0).
  /// Then loads the module, looks up info.kernelName, checks `threads`
  /// against the kernel's thread limit and raises its dynamic shared memory
  /// limit to info.smemBytes.
  static Status load(const Context &context, const void *cubin, size_t size,
                     const KernelInfo &info, const AttentionSpec &spec,
                     AttentionKernel *out);
  /// readKernelFiles(stem) (which checks the content hash), then load().
  static Status loadFiles(const Context &context, const std::string &stem,
                          AttentionKernel *out);

  /// Checks `args` (validateArgsForKernel), encodes the tensor maps and
  /// packs the parameters into `*out`. No launch (cuTensorMapEncodeTiled
  /// needs the driver, not a current context). `log2Threshold` NAN: the
  /// spec's (specLog2Threshold()).
  Status prepare(const AttentionArgs &args, float log2Threshold,
                 AttentionLaunch *out) const;
  /// Launches a prepared launch on `stream` (asynchronous). The parameters
  /// are copied by the driver at the call, so `prepared` may be reused or
  /// destroyed right after.
  Status launch(const AttentionLaunch &prepared, CUstream stream) const;
  /// prepare() + launch(). `log2Threshold` is ABI parameter 12, ignored by
  /// dense kernels; the default (NAN) is the spec's, specLog2Threshold().
  /// Pass another value to change a BLASST kernel's threshold at launch.
  Status run(const AttentionArgs &args, CUstream stream,
             float log2Threshold = NAN) const;

  /// Decode kernels (info().splitKV): the KV splits a launch with `args`
  /// uses (args.kvSplits, else the kernel's kv_splits, else chosen from
  /// batch x kv heads x query tiles, the KV length and the SM count), and
  /// the workspace bytes it needs (0 with one split). Other kernels: 1, 0.
  /// Lean kernels (info().lean): 1 without a workspace, else how many CTAs
  /// a tile may span (leanSlots; 2 with per-sequence lengths).
  int kvSplitsFor(const AttentionArgs &args) const;
  /// The kvSplits that asks for the launch `args` get again: the split
  /// count of a split grid; for lean CTAs (a lean kernel, or the lean
  /// entry) args.kvSplits itself (0 keeps the runtime's choice; passing
  /// back kvSplitsFor's slot count would ask for a split grid instead).
  int launchKVSplits(const AttentionArgs &args) const;
  /// Decode kernels: the split count and whether the merge kernel merges
  /// them (merge_kernel kernels with more than one split, by
  /// args.splitMerge or the split model), for a launch with `args`.
  DecodeSplits decodeSplitsFor(const AttentionArgs &args) const;
  size_t workspaceBytes(const AttentionArgs &args) const;

  /// log2ThresholdForSpec(spec()).
  float specLog2Threshold() const { return log2ThresholdForSpec(kernelSpec); }

  bool valid() const { return function.valid(); }
  const KernelInfo &info() const { return kernelInfo; }
  const AttentionSpec &spec() const { return kernelSpec; }
  const Function &getFunction() const { return function; }
  const Module &getModule() const { return module; }
  /// Whether split-grid launches take the TMA entry on this kernel's GPU
  /// (tma_entry kernels, preferTmaDecode).
  bool takesTmaEntry() const { return tmaDecode; }
  /// "<kernel> (<module>)", for messages.
  std::string describe() const;

private:
  /// leanSlots, or with per_seq_kv 2 for several CTAs (kvSplitsFor).
  int leanSlotsFor(int64_t tiles, int64_t blocks, int64_t ctas) const;
  Module module;
  Function function;
  Function mergeFunction; // merge_kernel: <kernel>_merge
  Function leanFunction;  // lean_entry: <kernel>_lean
  Function shortFunction; // short_block_n: <kernel>_short
  Function tmaFunction;   // tma_entry: <kernel>_tma
  KernelInfo kernelInfo;
  AttentionSpec kernelSpec;
  CUcontext ctx = nullptr; // made current before each launch
  int numSMs = 0;          // the device's x ctas_per_sm: resident CTA slots
  bool tmaDecode = false;  // tma_entry on a GPU preferTmaDecode takes
};

/// The KV split count of a decode launch when nobody chose one: the count
/// that minimises a small model of the launch (fitted on the H200, session
/// 21, docs/design.md "Choosing the split count"). `tiles` CTAs per split
/// (batch x kv heads x query tiles), `blocks` KV blocks per tile of
/// `blockBytes` bytes of K and V each, `sms` SMs with one CTA each. The
/// tiles x S CTAs run in waves of `sms`; a CTA costs a fixed 4 us plus its
/// ceil(blocks / S) blocks at its share of the wave's bandwidth (k CTAs
/// stream k r / (1 + (k r / B)^3)^(1/3): r = 48 GB/s per CTA, saturating
/// towards B = 5.1 TB/s). Candidates: 1 to floor(blocks / 2) splits (each
/// at least two blocks), at most 1024 and 8 waves; ties go to fewer.
/// `persistent` (a persistent decode kernel): min(tiles x S, sms) CTAs walk
/// the tiles x S items in rounds, each item 4.5 us more than its bytes
/// (fitted to one shape), at most 64 items per SM. `mergeQuads`: the merge's
/// work per tile, four-column units of the rows with a token (q_group x
/// tokens x head_dim_v / 4; 0 leaves the merge out): with S > 1 the last
/// split merges in ceil(mergeQuads / 128) x ceil(S / 16) memory round trips,
/// 1.8 us the first and 0.7 us each after it (sessions 22, 23), which bounds
/// S where a tile has many rows and the tiles are few (one KV head at batch
/// 1). The merge kernel (KernelInfo::mergeKernel), spread over many CTAs:
/// with S > 1 it costs a fixed 3 us plus 0.7 us per 64 splits after the
/// first 64. H200, 60 shapes (32/8, 32/1, 64/8, 16/2 heads x seq_q 1/4/8 x
/// batch 1-17 x 8K-128K keys, docs/results/2026-12-04-session25.md): Auto's
/// merge is the faster of the two measured at all but one (1.3% off), 0.08%
/// off the better on average; the in-kernel merge alone 24% off.
/// `merge` says who may merge: InKernel (the default) models the last
/// split's merge, MergeKernel the merge kernel's, Auto the cheaper of the
/// two per split count; `mergeKernelChosen` (optional) receives whether
/// the returned count is the merge kernel's.
int chooseDecodeSplits(int64_t tiles, int64_t blocks, int64_t blockBytes,
                       int sms, bool persistent = false,
                       int64_t mergeQuads = 0,
                       SplitMerge merge = SplitMerge::InKernel,
                       bool *mergeKernelChosen = nullptr);

/// The split model's merge time (us) of `splits` splits of `mergeQuads`
/// four-column units per tile, in the kernel or by the merge kernel (0 for
/// one split).
double decodeMergeUs(int64_t splits, int64_t mergeQuads, bool mergeKernel);

/// Lean decode (KernelInfo::lean) launched with kvSplits = 0: how its CTAs
/// share the tiles x `blocks` KV blocks. Returns s > 0 for tiles x s CTAs,
/// s the split model's count (chooseDecodeSplits, in-kernel merge): the
/// one-CTA-per-split grid, in shares of ceil(blocks / s); or 0 for one CTA
/// per SM (`sms` resident slots), each an even share across tile
/// boundaries. One CTA per SM where the split grid runs 2 waves or more
/// and either fills under 90% of them or gives a CTA 32 blocks or fewer:
/// there the waves' quantisation and each CTA's fixed cost outweigh lean's
/// merges. H200 (32/8 and 32/32, head_dim 128, cp.async K/V, 25 shapes,
/// docs/results/2026-12-04-session29.md): lean wins 1.6-18% at batch 12-20
/// x 4K-32K (2-7 waves), the split grid 1-5% at one wave, and where the
/// waves are full with long CTAs (batch 32-64 x 4K-16K, 13 x 32K).
int chooseLeanSplits(int64_t tiles, int64_t blocks, int64_t blockBytes, int sms,
                     int64_t mergeQuads = 0);
/// chooseLeanSplits' rule for a split grid of tiles x `splits` CTAs on `sms`
/// resident slots: true where one lean CTA per SM is expected faster (2
/// waves or more, and under 90% full or 32 blocks or fewer a CTA). The
/// runtime launches a kernel's lean entry (KernelInfo::leanEntry) there.
bool leanBeatsSplitGrid(int64_t tiles, int64_t blocks, int64_t splits, int sms);

/// Prefill with a short-sequence entry (KernelInfo::shortBlockN): true
/// where `<kernel>_short` computes fewer padded keys than the kernel by more
/// than its per-key cost: keys(blockN) > 1.04 x keys(shortBlockN), keys(n)
/// the KV keys the launch's query tiles of `blockM` rows compute in blocks
/// of n (causal: up to each tile's last row, seq_kv - seq_q + row, as the
/// kernels mask). H100 (docs/results/2026-12-06-session42.md §4): 128-key
/// blocks were 11-14% faster at 1K (1152 against 1024 keys a row with 192),
/// 2-3% slower at 16K (0.8% more keys). An entry of two CTAs per SM
/// (shortCtasPerSM = 2, head_dim 64) instead pays off by overlapping the
/// CTAs' starts and ends with each other's KV loops, which weigh the more
/// the fewer keys a tile has: true where the query tiles average at most
/// kShortEntryTwoCtaMaxKeys keys (H100, docs/results/2026-12-06-session43.md:
/// +4-23% up to causal 4K, which averages 2112; even at 4K; 3-5% slower at
/// 16K).
inline constexpr int64_t kShortEntryTwoCtaMaxKeys = 3072;
/// A persistent entry (shortPersistent, head_dim 128 dense) overlaps each
/// tile's end with the next one's loads, and pays its tile loop's costs:
/// true where no query tile computes more than kShortEntryPersistentMaxKeys
/// keys in its blocks (H100, docs/results/2026-12-06-session46.md: 5-11%
/// faster at 1K-2K and 1.5-6% at 4K, causal or not; even at 8K, 2.5-8%
/// slower at 16K).
inline constexpr int64_t kShortEntryPersistentMaxKeys = 4096;
bool chooseShortEntry(int64_t seqQ, int64_t seqKV, bool causal, int blockM,
                      int blockN, int shortBlockN, int shortCtasPerSM = 1,
                      bool shortPersistent = false);
/// The same for a kernel's metadata: false when it has no entry.
bool chooseShortEntry(const KernelInfo &info, int64_t seqQ, int64_t seqKV,
                      bool causal);

/// Dense decode's K/V loads by device (KernelInfo::tmaEntry): TMA streams K/V
/// at up to 4.12-4.45 TB/s (H200, session 26), which binds on the H200's
/// 4.8 TB/s, where cp.async was 2-4% faster, but not on the H100's 3.35,
/// where TMA was 1.1-1.9% faster at five shapes (the split grid, batch 1-32,
/// 4K-128K keys; docs/results/2026-12-06-session43.md §6). The cut lies
/// below TMA's measured rate.
inline constexpr double kTmaDecodeMaxBytesPerSecond = 4.2e12;
/// Whether a tma_entry kernel launches `<kernel>_tma` for its split grid on
/// a GPU of `dramBytesPerSecond` (DeviceInfo::dramBytesPerSecond; 0,
/// unknown: no).
inline bool preferTmaDecode(double dramBytesPerSecond) {
  return dramBytesPerSecond > 0 &&
         dramBytesPerSecond < kTmaDecodeMaxBytesPerSecond;
}

/// Lean decode (KernelInfo::lean): `ctas` CTAs share the tiles x `blocks`
/// KV blocks in shares of ceil(tiles x blocks / ctas), across tile
/// boundaries. How many parts a tile can be cut into at most, the
/// workspace's slots per tile: floor((per + blocks - 2) / per) + 1, at
/// most `ctas` (1: every tile lies in one share, no workspace).
int leanSlots(int64_t tiles, int64_t blocks, int64_t ctas);

/// "" when `data` is a complete 64-bit little-endian CUDA ELF (e_machine
/// EM_CUDA) whose section table and sections lie inside its `size` bytes and
/// that names `kernelName`; else what is wrong ("truncated?", "not an ELF
/// file", ...). Needs no driver: a corrupt, empty or foreign file is caught
/// before any GPU is looked for.
std::string checkCubinImage(const void *data, size_t size,
                            const std::string &kernelName);

//===----------------------------------------------------------------------===//
// The kernel's files together (<stem>.cubin, .spec, .meta)
//===----------------------------------------------------------------------===//

/// SHA-256 of `size` bytes, as 64 lowercase hex digits.
std::string sha256Hex(const void *data, size_t size);

/// The content hash a .meta records (content_sha256): SHA-256 over the cubin
/// bytes, the .spec file's text and formatKernelInfo(info) without its
/// contentSha256, each prefixed with its length. Any change to one of the
/// three files (a flipped cubin byte, an edited head_dim or threads) changes
/// it.
std::string kernelContentHash(const void *cubin, size_t size,
                              const std::string &specText,
                              const KernelInfo &info);

/// "" when info.contentSha256 is empty (files written before the hash
/// existed, or by hand) or equals kernelContentHash(...); else the reason.
std::string checkKernelContent(const void *cubin, size_t size,
                               const std::string &specText,
                               const KernelInfo &info);

/// The checks of a kernel's description that need no driver (load() runs
/// them first): validateKernelInfo, AttentionSpec::validate, head_dim_v
/// equal to head_dim, and checkSupported for info.target (a spec the
/// compiler cannot build describes no cubin).
Status checkKernelDescription(const KernelInfo &info,
                              const AttentionSpec &spec);

/// A kernel's three files, read and checked without a driver.
struct KernelFiles {
  KernelInfo info;
  AttentionSpec spec;
  std::string specText; ///< the .spec file's bytes
  std::string cubin;    ///< the .cubin file's bytes
};

/// Reads `<stem>.meta`, `<stem>.spec` and `<stem>.cubin` and checks, with no
/// driver: the metadata and the spec parse, the cubin is a complete CUDA ELF
/// naming the kernel (checkCubinImage), the content hash matches when the
/// .meta records one, and checkKernelDescription. Every error names the
/// file.
Status readKernelFiles(const std::string &stem, KernelFiles *out);

} // namespace blasst::rt

#endif // BLASST_RUNTIME_ATTENTIONKERNEL_H
