//===- KernelABI.h - The contract between generated kernels and hosts -----===//
//
// What the compiler's attention kernels (sm_90a, sm_100a) take and how they
// are launched. Both sides include this header: the compiler (to build the
// kernel signature and the metadata file) and the runtime/launcher (to encode
// tensor maps and pack parameters). Plain C++, no LLVM, no CUDA headers.
//
// Kernel parameters, in order (ABI version 4):
//   0  tmQ    CUtensorMap, by value (__grid_constant__, 64-byte aligned)
//   1  tmK    CUtensorMap, by value
//   2  tmV    CUtensorMap, by value
//   3  o      pointer to O, [B, Sq, Hq, Dv] with the strides below
//   4  lse    pointer to float LSE [B, Hq, Sq] (contiguous), or null when the
//             spec has lse = false (the kernel never touches it then)
//   5  stats  pointer to int64 [B, Hq, 2] (visited, skipped KV blocks), or
//             null when the spec has stats = false
//   6  seqQ   int32
//   7  seqKV  int32
//   8  oStrideB, 9 oStrideS, 10 oStrideH   int64, in elements
//   11 scaleLog2  float: softmax_scale * log2(e)
//   12 log2Threshold float: BLASST threshold in the kernel's log2 domain:
//                 log2(lambda) for a fixed ln_lambda policy (= ln_lambda *
//                 log2(e)), log2(a) for an `a` policy (the kernel subtracts
//                 log2(seqKV)); ignored by dense kernels
//   13 log2ThresholdPtr  pointer to one float in device memory, or null: when
//                 not null, the kernel reads the threshold (same meaning as
//                 12) from there when it runs and ignores 12, so a CUDA graph
//                 replays with the value in memory at replay (ABI 2)
//   14 workspace  decode kernels only (.meta split_kv = 1; ABI 3): device
//                 memory for the KV splits, or null for one split (grid x =
//                 query tiles). With S > 1 splits (grid x = query tiles x S)
//                 it holds, for T = batch x kv_heads x query tiles tiles,
//                 float partO[T][S][block_m][head_dim], float
//                 partLse[T][S][block_m], int32 counter[T]
//                 (decodeWorkspaceBytes); the counters must be zero before
//                 the first launch (the kernel leaves them zero), and one
//                 workspace serves one launch at a time. Kernels with
//                 o_tensor_map = 1 have it too (null unless split_kv = 1).
//   15 seqLensKV  decode kernels with a KV cache option (.meta per_seq_kv
//                 = 1 or page_size = P; ABI 4): pointer to int32 [batch],
//                 each sequence's KV length (0 allowed: O = 0, LSE = -inf),
//                 or null when the kernel is not per_seq_kv (seqKV, 7, is
//                 then every sequence's length; with per_seq_kv it is an
//                 upper bound the host uses for the split count, and the
//                 kernel reads every length as min(length, seqKV)).
//   16 blockTable pointer to int32 [batch, maxPages]: the pages of each
//                 sequence (paged kernels), or null.
//   17 maxPages   int32, the block table's columns (>= 1 when paged). The
//                 caller guarantees lengths <= maxPages x P; the kernel
//                 clamps its table reads to the row.
//                 Kernels with o_tensor_map = 1 have 15-17 too (null / 0).
//   18 tmO    kernels with .meta o_tensor_map = 1 only (sm_100a; ABI 4):
//             O's CUtensorMap by value, like Q's but over (head_dim_v,
//             q_heads, seqQ) with O's strides and a box of
//             {64, 1, block_m / q_tiles, 1}, swizzle 128B. The epilogue
//             stores each normalised tile with cp.async.bulk.tensor from a
//             128B-swizzled staging tile; the TMA unit writes no element
//             outside the tensor, so rows at or past seqQ are never written.
//             Other kernels write O through parameter 3 and the strides.
//   19 decodeSplits, 20 decodeBatch  int32, persistent decode kernels (ABI 4)
//             and balanced_splits kernels (.meta balanced_splits = 1-3,
//             within ABI 7; a 1-D grid): 19 is then the launch's CTA budget
//             C > 1 (the workspace (14) has one slot per CTA of the grid),
//             1 (one split per tile, no workspace) or, from 2 on, -S (S
//             splits per tile, the split grid's slots); with 3 and
//             merge_kernel, <kernel>_merge merges a launch of -S (it reads
//             S = -19; the runtime gives it no other budget)
//   21 mergeLaunch int32, merge_kernel kernels (ABI 5): 1 when the launch
//             runs <kernel>_merge after this grid, 0 when the last split
//             of each tile merges
//   22 k, 23 v  kv_cp_async kernels (ABI 6; .meta kv_cp_async = 1): K's and
//             V's device pointers; 24-26 K's strides (batch, sequence,
//             head) and 27-29 V's, int64 in elements. The load warpgroup
//             copies K/V with cp.async through them (rows at or past the
//             sequence's length read as zeros); 14-21 as above. Paged
//             (page_size = P): K/V are [num_pages, P, H, D] and the
//             "batch" strides are the pages' strides.
//   30 numPages int32, kv_cp_async kernels with page_size only: the page
//             pool's size; a block-table entry outside [0, numPages) reads
//             as zeros (TMA's bounds do that for the TMA copies). Added
//             within ABI 6: runtimes before it refuse kv_cp_async with
//             page_size by the metadata, so no older host launches these.
//   (Kernels without these options keep 14 or 15 parameters: their PTX is
//   unchanged.)
//   tma_entry kernels (.meta tma_entry = 1, within ABI 7; kv_cp_async split
//   grids) hold <kernel>_tma, the same split grid with K/V by TMA over the
//   same parameter array (it reads the K/V tensor maps, not 22-30), which
//   the runtime launches instead on GPUs of lower DRAM bandwidth. Runtimes
//   before it refuse the metadata key.
//   lean_entry kernels (.meta lean_entry = 1, within ABI 6) hold a second
//   entry, <kernel>_lean, a lean kernel over the same parameter array (20
//   the batch; 19 is 1 when no tile spans two CTAs); the runtime launches
//   one or the other. Runtimes before it refuse the metadata key. Lean
//   kernels and entries (ABI 7): with C = nctaid.x CTAs the workspace is
//   float partO[2C][block_m][head_dim], float partLse[2C][block_m], int32
//   counter[T] (slot c: the part holding CTA c's first block; C + c: its
//   last tile's part otherwise).
//
// Tensor maps (all 4-D over a [B, S, H, D] tensor, innermost first):
//   dims   {D, H, S, B}; strides (bytes) {head, seq, batch}
//   box    {64, 1, rows, 1}: 64 elements of D (one 128-byte swizzle span) by
//          `rows` sequence positions; rows = blockM / q_tiles for Q (and O),
//          blockN for K/V (blockN / cluster_m with K/V multicast)
//   swizzle 128B, interleave none, OOB fill zeros (tails read as zero)
//   Q over (D = head_dim, H = q_heads); K over (head_dim, kv_heads); V over
//   (head_dim_v, kv_heads).
//
// Decode kernels (.meta q_group = G, split_kv = 1): a CTA computes the
// T = floor(block_m / G) new tokens (seqQ <= 8) of the G q heads of one KV
// head, packed token-major in its rows (rows G x T on are padding when G
// does not divide block_m); Q's box is {64, G, T, 1}. Grid
// (ceil(seqQ / T) x splits, kv_heads, batch). Causal masking is
// bottom-right as below (token i sees keys j <= i + seqKV - seqQ).
//
// Kernels with q_tiles = T > 1 (sm_100a: 2 tiles of 128 rows) load their
// block_m query rows as T boxes of block_m / T rows each.
//
// Paged K/V (.meta page_size = P): K and V are [num_pages, P, H, D]; their
// maps are dims {D, H, P, num_pages}, box {64, 1, min(block_n, P), 1}; a
// block of block_n > P keys is block_n / P copies, one per page.
//
// Launch: grid (ceil(seqQ / blockM), q_heads, batch), block (threads, 1, 1),
// dynamic shared memory `smemBytes` (raise the function's limit first), no
// cluster. Causal masking is bottom-right aligned (query i sees keys
// j <= i + seqKV - seqQ), as in FlashAttention.
//
//===----------------------------------------------------------------------===//
#ifndef BLASST_RUNTIME_KERNELABI_H
#define BLASST_RUNTIME_KERNELABI_H

#include <cstdint>
#include <string>

namespace blasst::rt {

/// 2: parameter 13 (the threshold in device memory) added.
/// 3: decode kernels (split_kv) take parameter 14, the workspace.
/// 4: decode kernels with per-sequence KV lengths or a paged KV cache take
///    parameters 15-17 (.meta per_seq_kv, page_size).
///    o_tensor_map kernels (sm_100a) take parameter 18, O's tensor map;
///    q_tiles sets the Q box rows (sm_100a kernels of ABI 3 were given a
///    Q box of block_m rows, twice their Q tile).
/// 5: decode kernels with merge_kernel take parameter 21 (i32: 1 when the
///    launch runs <kernel>_merge, 0 when the last split merges); ABI 4's
///    merge_kernel kernels never merged in the kernel.
/// 6: decode kernels with kv_cp_async take parameters 22-29 (K's and V's
///    pointers and int64 strides), their K/V tensor maps unused.
/// 7: lean decode kernels (.meta lean = 1, and the <kernel>_lean entries)
///    hold the workspace as two slots per CTA (2 x nctaid.x slots, not
///    slots per tile); per_seq_kv kernels may carry a lean entry. An ABI 6
///    lean kernel given a workspace sized for ABI 7 could write past it,
///    so the version moves (JIT caches recompile, packages are refused).
constexpr int kKernelABIVersion = 7;
/// The most new tokens per sequence a decode kernel takes.
constexpr int kMaxDecodeSeqQ = 8;
/// Elements of D per TMA box (one 128-byte swizzle span of bf16/f16).
constexpr int kTmaBoxHeadDim = 64;

/// What a compiled kernel needs from its host, written next to the cubin as
/// `<stem>.meta` (key = value lines) with the spec in `<stem>.spec`.
struct KernelInfo {
  int abiVersion = kKernelABIVersion;
  std::string kernelName; ///< Entry point in the cubin.
  std::string target;     ///< "sm_90a" or "sm_100a".
  int blockM = 0;         ///< Query rows per CTA.
  int blockN = 0;         ///< Keys per KV block.
  int threads = 0;        ///< Threads per CTA.
  int smemBytes = 0;      ///< Dynamic shared memory per CTA.
  /// 1: a persistent kernel (grid x = resident CTAs that walk the (query
  /// block, q head) tiles of their batch entry); 0: one CTA per tile.
  int persistent = 0;
  /// CTAs per cluster along grid x: 2 for kernels whose neighbouring query
  /// blocks share K/V through TMA multicast (each CTA's K/V descriptors
  /// then describe half a block, block_n / 2 rows, and grid x is rounded up
  /// to even); 1 otherwise.
  int clusterM = 1;
  /// Decode: q heads of one KV head packed into a tile (the Q box's head
  /// extent; grid y is then the KV head); 0 for other kernels.
  int qGroup = 0;
  /// 1: the kernel splits each tile's KV blocks across CTAs and takes the
  /// workspace (parameter 14).
  int splitKV = 0;
  /// The split count the kernel was compiled to use; 0: chosen at launch.
  int kvSplits = 0;
  /// Q tiles per CTA, each loaded as its own TMA box of blockM / qTiles
  /// rows (sm_100a: 2); 1 for other kernels.
  int qTiles = 1;
  /// 1: the kernel stores O with TMA and takes O's tensor map (parameter
  /// 18, and 14-17); 0: it writes O through the pointer and strides.
  int oTensorMap = 0;
  /// 1: the kernel reads per-sequence KV lengths (parameter 15).
  int perSeqKV = 0;
  /// Tokens per page of a paged K/V cache (parameters 16, 17); 0: contiguous.
  int pageSize = 0;
  /// Decode (BLASST): 1 when each split's running max starts from the
  /// scores of the sequence's KV block 0 (the sink seed), which changes
  /// the blocks a split keeps; 0: a fresh -inf per split.
  int sinkSeed = 0;
  /// Decode (BLASST, with sinkSeed): 1 when each split's first block is
  /// voted on against the seeded running max (it may be skipped); 0: the
  /// first block of every split is kept.
  int voteFirstBlock = 0;
  /// Decode: KV blocks per chunk when the splits take chunks in turn (split
  /// s of S walks chunks s, s + S, ...); 0: each split one contiguous range.
  int splitChunk = 0;
  /// Persistent decode: 1 when the CTAs (one per SM) share the launch's KV
  /// blocks evenly across tile boundaries; parameter 19 is then the
  /// workspace's slots per tile (leanSlots).
  int lean = 0;
  /// CTAs the kernel was built to keep resident per SM (registers and
  /// shared memory sized for it): the decode split model's and persistent
  /// grids' SM count is multiplied by it.
  int ctasPerSM = 1;
  /// Decode: 1 when the splits' partials are merged by a second kernel of
  /// the cubin, `<kernel>_merge` (256 threads, the same parameter array,
  /// parameter 19 the split count), launched after the attention kernel on
  /// grid (query tiles x mergeCtasPerTile, kv heads, batch); 0: each
  /// tile's last split merges.
  int mergeKernel = 0;
  /// Decode: 1 when the load warpgroup copies K/V with cp.async (parameters
  /// 22-29: K's and V's pointers and strides); 0: TMA (the tensor maps).
  int kvCpAsync = 0;
  /// Decode: 1 when the cubin also holds `<kernel>_lean`, a lean kernel
  /// (CTAs sharing all tiles' KV blocks, parameters as this kernel's, 19 the
  /// workspace's slots per tile, 20 the batch) that the runtime launches
  /// instead where the split grid's waves are ragged (chooseLeanSplits).
  int leanEntry = 0;
  /// Decode with kv_cp_async: 1 when the cubin also holds `<kernel>_tma`,
  /// the same split grid with K/V by TMA (its tensor maps; parameters and
  /// merge as this kernel's), that the runtime launches instead of the split
  /// grid on GPUs whose DRAM bandwidth is under kTmaDecodeMaxBytesPerSecond
  /// (preferTmaDecode).
  int tmaEntry = 0;
  /// Prefill: keys per KV block of `<kernel>_short`, a kernel in the same
  /// cubin with the same parameters, block and grid that the runtime
  /// launches instead where it computes fewer padded keys
  /// (chooseShortEntry; its K/V tensor maps have boxes of this many rows);
  /// 0: none.
  int shortBlockN = 0;
  /// Prefill with short_block_n: CTAs per SM of `<kernel>_short` (2: the
  /// head_dim 64 entry, taken where the query tiles average at most
  /// kShortEntryTwoCtaMaxKeys keys; chooseShortEntry).
  int shortCtasPerSM = 1;
  /// Prefill with short_block_n: dynamic shared memory of `<kernel>_short`,
  /// which it is launched with (0: smemBytes, which then covers both).
  int shortSmemBytes = 0;
  /// Prefill with short_block_n: 1 when `<kernel>_short` is persistent (one
  /// CTA per SM of each batch entry's share, walking its tiles; launched
  /// where no tile has more than kShortEntryPersistentMaxKeys keys;
  /// chooseShortEntry).
  int shortPersistent = 0;
  /// Decode over per-sequence lengths: 1 when the splits follow the
  /// lengths (a 1-D grid of C + tiles CTAs, parameter 19 the CTA budget C,
  /// 20 the batch; each tile takes max(1, ceil(its blocks / per)) splits,
  /// per = ceil(all tiles' blocks / C), CTAs past them exit; the workspace
  /// has a slot per CTA of the grid).
  int balancedSplits = 0;
  std::string compilerVersion;
  /// SHA-256 (64 lowercase hex digits) over the cubin, the .spec text and
  /// the other metadata fields (kernelContentHash in AttentionKernel.h), or
  /// empty: written by blasst-compile and the JIT so that a file changed
  /// after the three were written together is detected before a launch.
  std::string contentSha256;
};

} // namespace blasst::rt

#endif // BLASST_RUNTIME_KERNELABI_H
