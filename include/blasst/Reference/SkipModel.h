//===- SkipModel.h - BLASST block skipping on the CPU -----------*- C++ -*-===//
//
// The host side of testing BLASST kernels (dynamic KV block skipping):
//
//  - the kernel-side threshold T (log2 domain) from a spec's sparsity policy
//    and ABI parameter 12;
//  - a double-precision model of the sm_90a kernels' blocked skipping vote:
//    per (batch, q head, CTA of blockM rows, group of groupRows rows, KV
//    block of blockN keys) whether the block was walked, kept or skipped,
//    the per (batch, head) visited/skipped counters the kernel accumulates
//    (ABI parameter 5), and the output O/LSE over the kept keys (optionally
//    the dense reference from the same scores);
//  - the comparison of the kernel's counters with the model's;
//  - the O check again without the rows of borderline decisions;
//  - the "sparsity dial": synthetic Q/K whose fraction of cold (skippable)
//    KV blocks is an input.
//
// Plain C++17, no LLVM/MLIR (see Reference.h).
//
// The vote (what the model implements; tools/blasst-bench/README.md has the
// derivation):
//   x[r][j] = (q_r . k_j) * scale * log2(e), key j visible to row r iff
//   j < seqKV and (!causal or j <= r + seqKV - seqQ).
//   CTA m owns rows [m*blockM, (m+1)*blockM), split into groups of
//   groupRows rows; it walks blocks n = 0 .. nBlocks(m)-1, nBlocks(m) =
//   ceil(seqKV / blockN), for causal min(that, ceil(max(0, (m+1)*blockM +
//   seqKV - seqQ) / blockN)). Every group walks every block of its CTA.
//   For group g and block n: m_blk[r] = max of x[r][j] over visible j in
//   block n (-inf if none), m_run[r] = max of m_blk[r] over the group's
//   previous KEPT blocks (-inf at first: the kernel's running max, which a
//   skipped block does not change). The group skips block n iff for every
//   row r of the group with r < seqQ: (m_blk[r] - m_run[r]) < T in IEEE
//   semantics (NaN = -inf - -inf compares false: keeps; +inf keeps). A
//   group without any row < seqQ skips every block by default (the vote is
//   vacuously true; see SkipConfig::emptyGroup). A skipped block contributes
//   nothing to O, l or m of the group.
//
//===----------------------------------------------------------------------===//
#ifndef BLASST_REFERENCE_SKIPMODEL_H
#define BLASST_REFERENCE_SKIPMODEL_H

#include "blasst/Reference/Compare.h"
#include "blasst/Reference/Reference.h"

#include "blasst/Spec/AttentionSpec.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace blasst::ref {

//===----------------------------------------------------------------------===//
// Thresholds
//===----------------------------------------------------------------------===//

/// The threshold T the kernel compares (m_blk - m_run) with, in log2 units,
/// given ABI parameter 12 (`param`): param - log2(seqKV) for `blasst:a=`
/// (lambda = a / seqKV), param itself for `blasst:ln_lambda=`, either capped
/// at log2(lambda_max) (at most 0) as in the kernel. -inf for a dense policy
/// (never skips).
double kernelLog2Threshold(const SparsityPolicy &policy, double param,
                           int64_t seqKV);
/// The inverse: the parameter 12 that makes the kernel use T (T at most
/// log2(lambda_max)).
double paramForKernelLog2Threshold(const SparsityPolicy &policy, double T,
                                   int64_t seqKV);

//===----------------------------------------------------------------------===//
// The skipping model
//===----------------------------------------------------------------------===//

struct SkipConfig {
  int64_t blockM = 128;   ///< Query rows per CTA (the .meta's block_m).
  int64_t groupRows = 64; ///< Rows per voting group (warpgroup).
  int64_t blockN = 128;   ///< Keys per KV block (the .meta's block_n).
  /// T in log2 units (kernelLog2Threshold). -inf: never skip.
  double log2Threshold = -std::numeric_limits<double>::infinity();
  /// A decision is borderline when perturbing every row's (m_blk - m_run)
  /// by less than this (log2 units) could flip it: the float/bf16 kernel
  /// may then legitimately decide the other way.
  double borderlineEps = 1e-2;
  /// What a group with no row < seqQ does (it exists only in the last CTA
  /// when seqQ % blockM <= blockM - groupRows).
  enum class EmptyGroup {
    Skip, ///< walks and skips every block: the literal, vacuously true vote
    Keep, ///< walks and keeps every block
    Idle, ///< walks nothing: neither visited nor skipped
  };
  EmptyGroup emptyGroup = EmptyGroup::Skip;
  /// Decode (the .meta's q_group > 0): a tile of blockM rows holds
  /// floor(blockM / qGroup) tokens of the qGroup q heads of one KV head
  /// (row r: token r / qGroup, head r % qGroup; when qGroup does not divide
  /// blockM the last rows are padding), and all of its rows vote together
  /// (groupRows is ignored). Rows of tokens >= seqQ (TMA's zero fill) and
  /// padding rows abstain and are not counted.
  int64_t qGroup = 0;
  /// Decode: the launch's KV splits. Tile t walks
  /// decodeTileKVBlocks(t) blocks, cut into kvSplits runs of
  /// ceil(blocks / kvSplits) (later runs shorter or empty); each run starts
  /// with a fresh running max (-inf), so its first block is always kept.
  int64_t kvSplits = 1;
  /// Decode: with splitChunk = C > 0 the splits take chunks of C blocks in
  /// turn instead (split s: chunks s, s + S, ..., .meta split_chunk);
  /// decodeSplitBlockList.
  int64_t splitChunk = 0;
  /// Decode over per-sequence lengths with balanced_splits (.meta): the
  /// launch's CTA budget C (kernel parameter 19) instead of kvSplits: every
  /// tile of sequence b takes s_b = max(1, ceil(U_b / per)) splits, U_b =
  /// ceil(length_b / blockN), per = max(1, ceil(W / C)), W = the sum of
  /// U_b over all tiles; its blocks are cut into s_b splits as above.
  /// 0 or -S (S splits per tile): kvSplits.
  int64_t balancedBudget = 0;
  /// Decode: each split's running max starts from the row maxima of the
  /// sequence's block 0 (the kernel's sink seed, .meta sink_seed) instead of
  /// -inf; its first block is still kept (not voted on) unless
  /// voteFirstBlock.
  bool sinkSeed = false;
  /// Decode with sinkSeed: each split's first block is voted on like the
  /// others, against the seed (the kernel's vote-first-block, .meta
  /// vote_first_block). The sequence's block 0 (split 0's first) is the
  /// sink itself: its difference is 0, never below T (at most 0): kept.
  bool voteFirstBlock = false;
  /// Whether a split's first block is voted on (all but the sequence's
  /// block 0): voteFirstBlock with the seed.
  bool votesSplitFirstBlock() const { return voteFirstBlock && sinkSeed; }
  /// Decode with kv_lengths = per_sequence: batch entry b sees the first
  /// kvLengths[b] keys (0 .. shape.seqKV; 0: no block, O = 0, LSE = -inf),
  /// and its blocks, causal diagonal (bottom-right at its own length) and
  /// splits follow that length, as the kernel's. Empty: every entry
  /// shape.seqKV. Prefill ignores it.
  std::vector<int64_t> kvLengths;
  /// Decode with per-sequence lengths: T per batch entry (the a= policy's
  /// lambda = a / length differs between sequences). Empty: log2Threshold.
  std::vector<double> log2Thresholds;
  /// The KV length and T of batch entry b.
  int64_t kvLengthOf(int64_t b, int64_t seqKV) const {
    return b < int64_t(kvLengths.size())
               ? std::clamp<int64_t>(kvLengths[size_t(b)], 0, seqKV)
               : seqKV;
  }
  double log2ThresholdOf(int64_t b) const {
    return b < int64_t(log2Thresholds.size()) ? log2Thresholds[size_t(b)]
                                              : log2Threshold;
  }
};
const char *toString(SkipConfig::EmptyGroup e);

/// Decision codes (uint8 per (b, h, mBlock, group, n)).
enum : uint8_t {
  kNotWalked = 0, ///< n >= nBlocks of this CTA
  kKept = 1,
  kSkipped = 2,
  kBorderline = 4, ///< or'ed into kKept/kSkipped
};

struct SkipModel {
  SkipConfig config;
  int64_t mBlocks = 0;    ///< CTAs along seqQ: ceil(seqQ / blockM)
  int64_t groups = 0;     ///< groups per CTA: ceil(blockM / groupRows)
  int64_t nBlocksMax = 0; ///< ceil(seqKV / blockN)
  /// [b][h][mBlock][group][n] decision codes.
  std::vector<uint8_t> decisions;
  /// Per (b, h) = b * qHeads + h: (group, block) pairs walked, skipped,
  /// and how many of the decisions were borderline.
  std::vector<int64_t> visited, skipped, borderline;
  int64_t totalVisited = 0, totalSkipped = 0, totalBorderline = 0;
  /// Of totalSkipped: blocks no voting row of the group sees a key of
  /// (causal: the group's part of the CTA's last blocks; -inf - m_run =
  /// -inf < T for any finite T), and blocks of groups without voting rows.
  int64_t maskedSkips = 0, emptyGroupSkips = 0;
  /// O and LSE over the kept keys, for the requested rows (rows that see
  /// no kept key: O = 0, LSE = -inf).
  Reference out;

  double skipRate() const {
    return totalVisited ? double(totalSkipped) / double(totalVisited) : 0.0;
  }
  size_t decisionIndex(int64_t qHeads, int64_t b, int64_t h, int64_t mBlock,
                       int64_t group, int64_t n) const {
    return size_t((((b * qHeads + h) * mBlocks + mBlock) * groups + group) *
                      nBlocksMax +
                  n);
  }
};

/// KV blocks CTA `mBlock` walks (see the header comment).
int64_t ctaKVBlocks(const Shape &shape, const SkipConfig &config,
                    int64_t mBlock);
/// Decode (config.qGroup > 0): the query tiles, ceil(seqQ / tokens per
/// tile), and the KV blocks of tile `tile` (all of its splits): causal up to
/// the diagonal of the tile's last token (tile + 1) * tokens - 1.
int64_t decodeTiles(const Shape &shape, const SkipConfig &config);
int64_t decodeTileKVBlocks(const Shape &shape, const SkipConfig &config,
                           int64_t tile);
/// Decode: the first block and the block count of split `split` of a tile
/// of `blocks` blocks (as the kernel's kvBegin / kvCount).
std::pair<int64_t, int64_t> decodeSplitBlocks(int64_t blocks, int64_t splits,
                                              int64_t split);
/// Decode: the KV splits each tile of batch entry `b` takes: kvSplits (at
/// least 1), or with balancedBudget the count that follows its length.
int64_t decodeSequenceSplits(const Shape &s, const SkipConfig &c, int64_t b);
/// Decode: the blocks split `split` walks, in order: decodeSplitBlocks' run,
/// or with chunk > 0 (interleaved splits) block j mod chunk of chunks
/// split, split + splits, ... below `blocks`.
std::vector<int64_t> decodeSplitBlockList(int64_t blocks, int64_t splits,
                                          int64_t chunk, int64_t split);

/// Runs the skipping model: decisions and counters for every (b, h, CTA,
/// group, block) (this needs the scores of all query rows), O/LSE over the
/// kept keys for `rows`. Decode (config.qGroup > 0): CTA = query tile,
/// one group, n = the tile's (absolute) KV block; every q head of a tile
/// gets the tile's decisions, and per (b, h) visited / skipped count the
/// blocks of every tile (each split its own), as the kernel's counters. When
/// `dense` is non-null it also gets the dense reference for `rows` from the
/// same scores (same as referenceAttention). Multithreaded over (b, h, CTA);
/// results do not depend on `threads`.
void skipModelAttention(const Shape &shape, const float *q, const Strides &qs,
                        const float *k, const Strides &ks, const float *v,
                        const Strides &vs, const std::vector<int64_t> &rows,
                        const SkipConfig &config, unsigned threads,
                        SkipModel *out, Reference *dense = nullptr);

//===----------------------------------------------------------------------===//
// The kernel's counters and output against the model
//===----------------------------------------------------------------------===//

struct StatsCheck {
  int64_t kernelVisited = 0, kernelSkipped = 0; ///< sums over (b, h)
  uint64_t pairs = 0;                           ///< (b, h) entries compared
  uint64_t visitedMismatch = 0; ///< (b, h) with visited != model
  uint64_t skippedBeyond = 0;   ///< |skipped - model| > borderline
  uint64_t skippedWithin = 0;   ///< differs, but within borderline
  int64_t maxSkippedDiff = 0;   ///< max |kernel - model| skipped
  bool pass = true;
  std::vector<std::string> failures;
  double kernelSkipRate() const {
    return kernelVisited ? double(kernelSkipped) / double(kernelVisited) : 0;
  }
};

/// `stats` is the kernel's int64 [batch, qHeads, 2] (visited, skipped).
/// visited must equal the model exactly; skipped may differ from the model
/// by at most the model's borderline decision count of that (b, h).
StatsCheck compareStats(const Shape &shape, const SkipModel &model,
                        const int64_t *stats);

/// After a failed O check of a sparse kernel with borderline decisions: the
/// check again with the rows of every group that had a borderline decision
/// left out (their reference replaced by the kernel's own values), to tell
/// a borderline block decided the other way from a real error. `o`, `os`
/// and `lse` as for compareOutputs, checked against model.out with
/// tolerancesFor(dtype).
struct BorderlineRecheck {
  uint64_t rows = 0; ///< (batch, head, row)s touched by borderline decisions
  bool pass = false; ///< whether the check passes without them
};
BorderlineRecheck recheckWithoutBorderline(const Shape &shape, DType dtype,
                                           const SkipModel &model,
                                           const uint16_t *o, const Strides &os,
                                           const float *lse);

//===----------------------------------------------------------------------===//
// The sparsity dial
//===----------------------------------------------------------------------===//

struct DialConfig {
  double coldFraction = 0; ///< F: probability a non-sink block is cold
  int64_t blockN = 128;    ///< the kernel's KV block (cold is per block)
  double hot = 12;       ///< H: sink/warm keys score ~+H (log2 units), cold ~-H
  double noise = 1;      ///< std of the score noise, log2 units (approx.)
  int64_t sinkKeys = 64; ///< keys [0, sinkKeys) are hot for every query
  int64_t window = 64;   ///< local window bin width (keys)
  double maxEntry = 6;   ///< H is lowered if signal entries would exceed it
  /// Cold blocks evenly spaced (every run of k eligible blocks of one
  /// (batch, kv head) holds k F +- 1 cold ones, from a random phase) instead
  /// of independent draws: every KV split then gets the same share.
  bool even = false;
  /// > 0: warm blocks come in runs of runLength blocks on average (a
  /// two-state chain per (batch, kv head) along the sequence, warm -> cold
  /// with probability 1 / runLength, cold -> warm at the rate that keeps
  /// the cold fraction F) instead of independent draws.
  double runLength = 0;
};

struct DialInfo {
  DialConfig config;
  double hot = 0; ///< H actually used (<= config.hot)
  double alpha = 0, beta = 0, gamma = 0, sigma = 0;
  int64_t hadamard = 0; ///< P: signal lives in the first P dims (power of 2)
  int64_t bins = 0;     ///< M = P - 1 window directions (0: no window)
  int64_t kvBlocks = 0; ///< ceil(seqKV / blockN)
  int64_t kvHeads = 0;
  std::vector<uint8_t> cold; ///< [b][kvHead][n]
  int64_t eligibleBlocks = 0, coldBlocks = 0;
  double maxAbsQ = 0, maxAbsK = 0;

  double coldFraction() const {
    return eligibleBlocks ? double(coldBlocks) / double(eligibleBlocks) : 0;
  }
  bool isCold(int64_t b, int64_t kvHead, int64_t n) const {
    return cold[size_t((b * kvHeads + kvHead) * kvBlocks + n)] != 0;
  }
  /// The local-window factor w in {+1, 0, -1} between a query whose
  /// diagonal key position is p (= row + seqKV - seqQ) and a cold key j: the
  /// cold key scores about -H + 2H*w. +1 iff the 64-key bins of p and j are
  /// at most one apart modulo 2M bins (aliasing beyond 64*2M keys); -1 at
  /// distance M +- 1 (mod 2M).
  int windowFactor(int64_t p, int64_t j) const;
  /// Default threshold T (log2 units) for dial inputs: -H, halfway between
  /// warm (~0 below the running max) and cold (~-2H) blocks.
  double defaultLog2Threshold() const { return -hot; }
};

/// Q and K of the dial (see README.md): per (batch, kv head) a random
/// direction u; q = alpha*u + gamma*v_bin(p) + noise; sink and warm keys
/// beta*u + noise; cold keys -beta*u + gamma*(v_b-1 + v_b + v_b+1) + noise,
/// so that after scaling sink/warm keys and cold keys within the query's
/// local window score ~+H, other cold keys ~-H. Values are rounded to
/// `dtype`; elements outside the tensors' [.., D] rows (stride padding) are
/// 0. Deterministic in (seed, config); independent of `threads`.
void generateDialInputs(const Shape &shape, DType dtype,
                        const DialConfig &config, uint64_t seed,
                        const Strides &qs, size_t qCount,
                        std::vector<uint16_t> &qBits, std::vector<float> &q,
                        const Strides &ks, size_t kCount,
                        std::vector<uint16_t> &kBits, std::vector<float> &k,
                        unsigned threads, DialInfo *info);

/// The fraction of walked (group, block) pairs whose block is cold: what
/// the skip rate approaches when every cold block outside the local windows
/// is skipped and nothing else is.
double dialWalkedColdFraction(const Shape &shape, const SkipConfig &config,
                              const DialInfo &dial);

} // namespace blasst::ref

#endif // BLASST_REFERENCE_SKIPMODEL_H
