//===- SkipModel.cpp - BLASST block skipping on the CPU -------------------===//

#include "blasst/Reference/SkipModel.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>

using namespace blasst;
using namespace blasst::ref;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t floorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
int64_t floorMod(int64_t a, int64_t b) { return a - floorDiv(a, b) * b; }

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// Uniform in (0, 1), never 0.
double unit(uint64_t h) { return (double(h >> 11) + 0.5) * 0x1.0p-53; }

uint64_t mix(uint64_t a, uint64_t b) { return splitmix64(a ^ splitmix64(b)); }

} // namespace

//===----------------------------------------------------------------------===//
// Thresholds
//===----------------------------------------------------------------------===//

double blasst::ref::kernelLog2Threshold(const SparsityPolicy &policy,
                                        double param, int64_t seqKV) {
  // The kernel's threshold, capped at log2(lambda_max) as the kernel caps
  // it (lambda <= lambda_max <= 1).
  const double cap = policy.log2Cap();
  // A NaN threshold skips nothing, as in the kernel (a select after its
  // minnum, which alone would return the cap).
  if (policy.kind != SparsityKind::None && std::isnan(param))
    return -kInf;
  switch (policy.kind) {
  case SparsityKind::None:
    return -kInf;
  case SparsityKind::LnLambda:
    return std::min(param, cap);
  case SparsityKind::ScaleFactor:
    return std::min(param - std::log2(double(seqKV)), cap);
  }
  return -kInf;
}

double blasst::ref::paramForKernelLog2Threshold(const SparsityPolicy &policy,
                                                double T, int64_t seqKV) {
  if (policy.kind == SparsityKind::ScaleFactor)
    return T + std::log2(double(seqKV));
  return T;
}

//===----------------------------------------------------------------------===//
// The skipping model
//===----------------------------------------------------------------------===//

const char *blasst::ref::toString(SkipConfig::EmptyGroup e) {
  switch (e) {
  case SkipConfig::EmptyGroup::Skip:
    return "skip";
  case SkipConfig::EmptyGroup::Keep:
    return "keep";
  case SkipConfig::EmptyGroup::Idle:
    return "idle";
  }
  return "?";
}

int64_t blasst::ref::ctaKVBlocks(const Shape &s, const SkipConfig &c,
                                 int64_t mBlock) {
  int64_t n = ceilDiv(s.seqKV, c.blockN);
  if (s.causal) {
    int64_t limit =
        std::max<int64_t>(0, (mBlock + 1) * c.blockM + s.seqKV - s.seqQ);
    n = std::min(n, ceilDiv(limit, c.blockN));
  }
  return n;
}

int64_t blasst::ref::decodeTiles(const Shape &s, const SkipConfig &c) {
  return ceilDiv(s.seqQ, c.blockM / c.qGroup);
}

int64_t blasst::ref::decodeTileKVBlocks(const Shape &s, const SkipConfig &c,
                                        int64_t tile) {
  int64_t n = ceilDiv(s.seqKV, c.blockN);
  if (s.causal) {
    int64_t limit = std::max<int64_t>(0, (tile + 1) * (c.blockM / c.qGroup) +
                                             s.seqKV - s.seqQ);
    n = std::min(n, ceilDiv(limit, c.blockN));
  }
  return n;
}

std::pair<int64_t, int64_t>
blasst::ref::decodeSplitBlocks(int64_t blocks, int64_t splits, int64_t split) {
  int64_t per = ceilDiv(blocks, splits);
  int64_t begin = std::min(split * per, blocks);
  return {begin, std::min(blocks - begin, per)};
}

int64_t blasst::ref::decodeSequenceSplits(const Shape &s, const SkipConfig &c,
                                          int64_t b) {
  if (c.balancedBudget <= 0)
    return std::max<int64_t>(c.kvSplits, 1);
  // The blocks per split: every tile's blocks over the CTA budget.
  const int64_t tilesPerEntry = s.kvHeads * decodeTiles(s, c);
  int64_t w = 0;
  for (int64_t e = 0; e < s.batch; ++e)
    w += tilesPerEntry * ceilDiv(c.kvLengthOf(e, s.seqKV), c.blockN);
  const int64_t per = std::max<int64_t>(1, ceilDiv(w, c.balancedBudget));
  return std::max<int64_t>(
      1, ceilDiv(ceilDiv(c.kvLengthOf(b, s.seqKV), c.blockN), per));
}

std::vector<int64_t> blasst::ref::decodeSplitBlockList(int64_t blocks,
                                                       int64_t splits,
                                                       int64_t chunk,
                                                       int64_t split) {
  std::vector<int64_t> list;
  if (chunk <= 0) {
    auto [begin, count] = decodeSplitBlocks(blocks, splits, split);
    for (int64_t n = begin; n < begin + count; ++n)
      list.push_back(n);
    return list;
  }
  for (int64_t c0 = split * chunk; c0 < blocks; c0 += splits * chunk)
    for (int64_t n = c0; n < std::min(blocks, c0 + chunk); ++n)
      list.push_back(n);
  return list;
}

/// Sizes the model's output (and the dense reference's, when asked for) for
/// `pairs` (batch, q head) pairs of `rows` rows: O zero, LSE -inf, and
/// maxAbsV, the largest |V| (the tolerances scale with it).
static void initOutputs(const Shape &s, const float *v, const Strides &vs,
                        const std::vector<int64_t> &rows, size_t pairs,
                        Reference *ref, Reference *dense) {
  const int64_t Dv = s.headDimV;
  const double maxAbsV = maxAbsOfV(s, v, vs);
  for (Reference *r : {ref, dense}) {
    if (!r)
      continue;
    r->rows = rows;
    r->o.assign(pairs * rows.size() * size_t(Dv), 0.0);
    r->lse.assign(pairs * rows.size(), -kInf);
    r->maxAbsV = maxAbsV;
  }
}

/// Zeroes the model's per-(batch, q head) and total counters.
static void resetCounts(SkipModel *out, size_t pairs) {
  out->visited.assign(pairs, 0);
  out->skipped.assign(pairs, 0);
  out->borderline.assign(pairs, 0);
  out->totalVisited = out->totalSkipped = out->totalBorderline = 0;
  out->maskedSkips = out->emptyGroupSkips = 0;
}

/// The decode form of skipModelAttention (config.qGroup > 0): one task per
/// (batch, KV head, query tile); the tile's voting rows are its tokens below
/// seqQ times the qGroup q heads; each split votes with its own running max.
static void skipModelDecode(const Shape &s, const float *q, const Strides &qs,
                            const float *k, const Strides &ks, const float *v,
                            const Strides &vs, const std::vector<int64_t> &rows,
                            const SkipConfig &c, unsigned threads,
                            SkipModel *out, Reference *dense) {
  const int64_t D = s.headDim, Dv = s.headDimV, G = c.qGroup;
  const int64_t tokens = c.blockM / G;
  const int64_t splits = std::max<int64_t>(c.kvSplits, 1);
  out->config = c;
  out->mBlocks = decodeTiles(s, c);
  out->groups = 1;
  out->nBlocksMax = ceilDiv(s.seqKV, c.blockN);
  const size_t pairs = size_t(s.batch * s.qHeads);
  out->decisions.assign(pairs * size_t(out->mBlocks * out->nBlocksMax),
                        kNotWalked);
  Reference &ref = out->out;
  initOutputs(s, v, vs, rows, pairs, &ref, dense);
  const int64_t tiles = out->mBlocks;
  const size_t tasks = size_t(s.batch * s.kvHeads * tiles);
  // Per task: (blocks walked, skipped, borderline, masked) of the tile,
  // which every q head of the tile counts.
  std::vector<int64_t> taskVisited(tasks, 0), taskSkipped(tasks, 0),
      taskBorder(tasks, 0), taskMasked(tasks, 0);
  std::atomic<size_t> next{0};
  auto worker = [&] {
    std::vector<double> sc, mblk, mrun, acc, accDense;
    std::vector<uint8_t> keep;
    for (size_t task; (task = next.fetch_add(1)) < tasks;) {
      const int64_t t = int64_t(task) % tiles;
      const int64_t kh = (int64_t(task) / tiles) % s.kvHeads;
      const int64_t b = int64_t(task) / tiles / s.kvHeads;
      const int64_t tok0 = t * tokens;
      const int64_t tok1 = std::min(tok0 + tokens, s.seqQ);
      // The batch entry's own KV length (per-sequence lengths).
      Shape sb = s;
      sb.seqKV = c.kvLengthOf(b, s.seqKV);
      const int64_t nB = decodeTileKVBlocks(sb, c, t);
      const int64_t nk = std::min(sb.seqKV, nB * c.blockN);
      // Voting rows (token, head), token-major as in the tile.
      const int64_t vr = (tok1 - tok0) * G;
      sc.assign(size_t(std::max<int64_t>(vr, 1) * std::max<int64_t>(nk, 1)),
                0.0);
      mblk.assign(size_t(vr * nB), -kInf);
      std::vector<int64_t> vis(static_cast<size_t>(vr), 0);
      for (int64_t r = 0; r < vr; ++r) {
        const int64_t i = tok0 + r / G, h = kh * G + r % G;
        const float *qr = q + b * qs.batch + i * qs.seq + h * qs.head;
        double *dst = &sc[size_t(r * nk)];
        const int64_t nv = std::min(sb.visibleKeys(i), nk);
        vis[size_t(r)] = nv;
        for (int64_t j = 0; j < nv; ++j) {
          const float *kr = k + b * ks.batch + j * ks.seq + kh * ks.head;
          double acc0 = 0;
          for (int64_t d = 0; d < D; ++d)
            acc0 += double(qr[d]) * double(kr[d]);
          dst[j] = acc0 * s.scale;
        }
        for (int64_t n = 0; n < nB; ++n) {
          int64_t j0 = n * c.blockN, j1 = std::min(nv, j0 + c.blockN);
          double mx = -kInf;
          for (int64_t j = j0; j < j1; ++j)
            mx = std::max(mx, dst[j]);
          mblk[size_t(r * nB + n)] = mx * kLog2E;
        }
      }
      // The vote, per split: a fresh running max at each split's start, or
      // block 0's row maxima (the sink seed).
      keep.assign(size_t(std::max<int64_t>(nB, 1)), 0);
      const double T = c.log2ThresholdOf(b), eps = c.borderlineEps;
      const int64_t taskSplits =
          c.balancedBudget > 0 ? decodeSequenceSplits(s, c, b) : splits;
      for (int64_t sp = 0; sp < taskSplits; ++sp) {
        const std::vector<int64_t> walk =
            decodeSplitBlockList(nB, taskSplits, c.splitChunk, sp);
        mrun.assign(size_t(vr), -kInf);
        if (c.sinkSeed && nB > 0)
          for (int64_t r = 0; r < vr; ++r)
            mrun[size_t(r)] = mblk[size_t(r * nB)];
        for (int64_t n : walk) {
          // Voted on: every block but a split's first, which is voted on
          // too with the seed (vote-first-block) except the sequence's
          // block 0, the seed itself (m_blk - m_run = 0, never below T;
          // the kernel computes both maxima alike: exactly kept).
          bool voted = n != walk.front() || (c.votesSplitFirstBlock() && n > 0);
          bool skip = voted, nearBelow = false, keepersNear = true,
               anyVisible = false;
          if (skip)
            for (int64_t r = 0; r < vr; ++r) {
              double mb = mblk[size_t(r * nB + n)];
              anyVisible |= mb != -kInf;
              double d = mb - mrun[size_t(r)];
              if (d < T) {
                if (d > T - eps)
                  nearBelow = true;
              } else {
                skip = false;
                if (!(d < T + eps))
                  keepersNear = false;
              }
            }
          else
            keepersNear = false; // not voted on: kept
          bool border = skip ? nearBelow : keepersNear;
          taskMasked[task] += skip && !anyVisible;
          if (!skip)
            for (int64_t r = 0; r < vr; ++r)
              mrun[size_t(r)] =
                  std::max(mrun[size_t(r)], mblk[size_t(r * nB + n)]);
          keep[size_t(n)] = !skip;
          for (int64_t g = 0; g < G; ++g)
            out->decisions[out->decisionIndex(s.qHeads, b, kh * G + g, t, 0,
                                              n)] =
                uint8_t((skip ? kSkipped : kKept) | (border ? kBorderline : 0));
          ++taskVisited[task];
          taskSkipped[task] += skip;
          taskBorder[task] += border;
        }
      }
      // Outputs for the selected tokens of this tile: softmax over the kept
      // keys (the splits' merge by LSE is exact).
      acc.resize(size_t(Dv));
      accDense.resize(size_t(Dv));
      auto lo = std::lower_bound(rows.begin(), rows.end(), tok0);
      auto hi = std::lower_bound(rows.begin(), rows.end(), tok1);
      for (auto it = lo; it != hi; ++it) {
        const int64_t i = *it;
        const size_t ri = size_t(it - rows.begin());
        for (int64_t g = 0; g < G; ++g) {
          const int64_t r = (i - tok0) * G + g, h = kh * G + g;
          const double *row = &sc[size_t(r * nk)];
          const int64_t nv = vis[size_t(r)];
          const size_t idx = ref.index(s, b, h, ri);
          for (int pass = dense ? 0 : 1; pass < 2; ++pass) {
            // pass 0: every visible key (dense), 1: the kept blocks' keys.
            auto used = [&](int64_t j) {
              return pass == 0 || keep[size_t(j / c.blockN)] != 0;
            };
            double mx = -kInf;
            for (int64_t j = 0; j < nv; ++j)
              if (used(j))
                mx = std::max(mx, row[j]);
            if (mx == -kInf)
              continue; // O = 0, LSE = -inf
            std::vector<double> &a = pass ? acc : accDense;
            std::fill(a.begin(), a.end(), 0.0);
            double l = 0;
            for (int64_t j = 0; j < nv; ++j) {
              if (!used(j))
                continue;
              double p = std::exp(row[j] - mx);
              l += p;
              const float *vj = v + b * vs.batch + j * vs.seq + kh * vs.head;
              for (int64_t d = 0; d < Dv; ++d)
                a[size_t(d)] += p * double(vj[d]);
            }
            Reference &dst = pass ? ref : *dense;
            double *o = &dst.o[idx * size_t(Dv)];
            for (int64_t d = 0; d < Dv; ++d)
              o[d] = a[size_t(d)] / l;
            dst.lse[idx] = mx + std::log(l);
          }
        }
      }
    }
  };
  runWorkers(threads ? threads : defaultThreads(), tasks, worker);
  resetCounts(out, pairs);
  for (size_t task = 0; task < tasks; ++task) {
    const int64_t kh = (int64_t(task) / tiles) % s.kvHeads;
    const int64_t b = int64_t(task) / tiles / s.kvHeads;
    for (int64_t g = 0; g < G; ++g) {
      size_t pair = size_t(b * s.qHeads + kh * G + g);
      out->visited[pair] += taskVisited[task];
      out->skipped[pair] += taskSkipped[task];
      out->borderline[pair] += taskBorder[task];
    }
    out->totalVisited += G * taskVisited[task];
    out->totalSkipped += G * taskSkipped[task];
    out->totalBorderline += G * taskBorder[task];
    out->maskedSkips += G * taskMasked[task];
  }
}

void blasst::ref::skipModelAttention(const Shape &s, const float *q,
                                     const Strides &qs, const float *k,
                                     const Strides &ks, const float *v,
                                     const Strides &vs,
                                     const std::vector<int64_t> &rows,
                                     const SkipConfig &c, unsigned threads,
                                     SkipModel *out, Reference *dense) {
  if (c.qGroup > 0)
    return skipModelDecode(s, q, qs, k, ks, v, vs, rows, c, threads, out,
                           dense);
  if (threads == 0)
    threads = defaultThreads();
  const int64_t D = s.headDim, Dv = s.headDimV;
  out->config = c;
  out->mBlocks = ceilDiv(s.seqQ, c.blockM);
  out->groups = ceilDiv(c.blockM, c.groupRows);
  out->nBlocksMax = ceilDiv(s.seqKV, c.blockN);
  const size_t pairs = size_t(s.batch * s.qHeads);
  out->decisions.assign(
      pairs * size_t(out->mBlocks * out->groups * out->nBlocksMax), kNotWalked);
  Reference &ref = out->out;
  initOutputs(s, v, vs, rows, pairs, &ref, dense);

  const int64_t mBlocks = out->mBlocks, groups = out->groups;
  const size_t tasks = pairs * size_t(mBlocks);
  // Per task counters, summed per (b, h) at the end (deterministic).
  std::vector<int64_t> taskVisited(tasks, 0), taskSkipped(tasks, 0),
      taskBorder(tasks, 0), taskMasked(tasks, 0), taskEmpty(tasks, 0);
  const int64_t gqa = s.qHeads / s.kvHeads;
  // Scores of a CTA's rows are cached between the vote and the output pass
  // when they fit in this many doubles, else recomputed.
  const size_t kCacheLimit = size_t(8) << 20;

  std::atomic<size_t> next{0};
  auto worker = [&] {
    std::vector<double> kt, vv, scores, cache, mblk, mrun, acc, accDense;
    std::vector<uint8_t> keep;
    for (size_t task; (task = next.fetch_add(1)) < tasks;) {
      const int64_t pair = int64_t(task) / mBlocks;
      const int64_t m = int64_t(task) % mBlocks;
      const int64_t b = pair / s.qHeads, h = pair % s.qHeads, kh = h / gqa;
      const int64_t base = m * c.blockM;
      const int64_t rowEnd = std::min(base + c.blockM, s.seqQ);
      const int64_t ctaRows = rowEnd - base;
      const int64_t nB = ctaKVBlocks(s, c, m);
      const int64_t nk = std::min(s.seqKV, nB * c.blockN);
      auto lo = std::lower_bound(rows.begin(), rows.end(), base);
      auto hi = std::lower_bound(rows.begin(), rows.end(), rowEnd);
      const bool anySelected = lo != hi;

      kt.assign(size_t(D * nk), 0.0);
      for (int64_t j = 0; j < nk; ++j) {
        const float *kr = k + b * ks.batch + j * ks.seq + kh * ks.head;
        for (int64_t d = 0; d < D; ++d)
          kt[size_t(d * nk + j)] = kr[d];
      }
      if (anySelected) {
        vv.assign(size_t(nk * Dv), 0.0);
        for (int64_t j = 0; j < nk; ++j) {
          const float *vr = v + b * vs.batch + j * vs.seq + kh * vs.head;
          for (int64_t d = 0; d < Dv; ++d)
            vv[size_t(j * Dv + d)] = vr[d];
        }
      }
      // Scores s[j] = (q . k_j) * scale for the visible keys of row i,
      // summed over d in order (as referenceAttention does).
      auto computeScores = [&](int64_t i, double *dst) -> int64_t {
        int64_t vis = std::min(s.visibleKeys(i), nk);
        std::fill(dst, dst + vis, 0.0);
        const float *qr = q + b * qs.batch + i * qs.seq + h * qs.head;
        for (int64_t d = 0; d < D; ++d) {
          double qd = double(qr[d]);
          const double *kd = kt.data() + size_t(d * nk);
          for (int64_t j = 0; j < vis; ++j)
            dst[j] += qd * kd[j];
        }
        for (int64_t j = 0; j < vis; ++j)
          dst[j] *= s.scale;
        return vis;
      };
      const bool caching =
          anySelected && size_t(ctaRows) * size_t(nk) <= kCacheLimit;
      if (caching)
        cache.assign(size_t(ctaRows) * size_t(nk), 0.0);
      scores.resize(size_t(std::max<int64_t>(nk, 1)));

      // Pass 1: per row and block, the max score in the log2 domain.
      mblk.assign(size_t(ctaRows * nB), -kInf);
      for (int64_t i = base; i < rowEnd; ++i) {
        double *sc = caching ? cache.data() + size_t(i - base) * size_t(nk)
                             : scores.data();
        int64_t vis = computeScores(i, sc);
        for (int64_t n = 0; n < nB; ++n) {
          int64_t j0 = n * c.blockN, j1 = std::min(vis, j0 + c.blockN);
          double mx = -kInf;
          for (int64_t j = j0; j < j1; ++j)
            mx = std::max(mx, sc[j]);
          mblk[size_t((i - base) * nB + n)] = mx * kLog2E;
        }
      }

      // The vote, per group.
      keep.assign(size_t(groups * std::max<int64_t>(nB, 1)), 0);
      const double T = c.log2Threshold, eps = c.borderlineEps;
      for (int64_t g = 0; g < groups; ++g) {
        int64_t g0 = base + g * c.groupRows;
        int64_t g1 = std::min(std::min(g0 + c.groupRows, base + c.blockM),
                              s.seqQ); // voting rows [g0, g1)
        mrun.assign(size_t(std::max<int64_t>(g1 - g0, 0)), -kInf);
        for (int64_t n = 0; n < nB; ++n) {
          bool skip, border = false;
          if (g1 <= g0) {
            if (c.emptyGroup == SkipConfig::EmptyGroup::Idle)
              continue; // not walked
            skip = c.emptyGroup == SkipConfig::EmptyGroup::Skip;
            taskEmpty[task] += skip;
          } else {
            skip = true;
            bool nearBelow = false, keepersNear = true, anyVisible = false;
            for (int64_t i = g0; i < g1; ++i) {
              double mb = mblk[size_t((i - base) * nB + n)];
              anyVisible |= mb != -kInf;
              double d = mb - mrun[size_t(i - g0)];
              if (d < T) {
                if (d > T - eps)
                  nearBelow = true;
              } else {
                skip = false;
                if (!(d < T + eps)) // NaN and +inf are never near
                  keepersNear = false;
              }
            }
            border = skip ? nearBelow : keepersNear;
            taskMasked[task] += skip && !anyVisible;
            if (!skip)
              for (int64_t i = g0; i < g1; ++i)
                mrun[size_t(i - g0)] = std::max(
                    mrun[size_t(i - g0)], mblk[size_t((i - base) * nB + n)]);
          }
          keep[size_t(g * nB + n)] = !skip;
          out->decisions[out->decisionIndex(s.qHeads, b, h, m, g, n)] =
              uint8_t((skip ? kSkipped : kKept) | (border ? kBorderline : 0));
          ++taskVisited[task];
          taskSkipped[task] += skip;
          taskBorder[task] += border;
        }
      }

      // Pass 2: outputs for the selected rows of this CTA.
      acc.resize(size_t(Dv));
      accDense.resize(size_t(Dv));
      for (auto it = lo; it != hi; ++it) {
        const int64_t i = *it;
        const size_t ri = size_t(it - rows.begin());
        const int64_t g = (i - base) / c.groupRows;
        const double *sc;
        int64_t vis;
        if (caching) {
          sc = cache.data() + size_t(i - base) * size_t(nk);
          vis = std::min(s.visibleKeys(i), nk);
        } else {
          vis = computeScores(i, scores.data());
          sc = scores.data();
        }
        const size_t idx = ref.index(s, b, h, ri);
        if (dense && vis > 0) {
          double mx = -kInf;
          for (int64_t j = 0; j < vis; ++j)
            mx = std::max(mx, sc[j]);
          double l = 0;
          std::fill(accDense.begin(), accDense.end(), 0.0);
          for (int64_t j = 0; j < vis; ++j) {
            double p = std::exp(sc[j] - mx);
            l += p;
            const double *vj = &vv[size_t(j * Dv)];
            for (int64_t d = 0; d < Dv; ++d)
              accDense[size_t(d)] += p * vj[d];
          }
          double *o = &dense->o[idx * size_t(Dv)];
          for (int64_t d = 0; d < Dv; ++d)
            o[d] = accDense[size_t(d)] / l;
          dense->lse[idx] = mx + std::log(l);
        }
        // Kept keys only.
        double mx = -kInf;
        for (int64_t n = 0; n < nB; ++n) {
          if (!keep[size_t(g * nB + n)])
            continue;
          int64_t j1 = std::min(vis, (n + 1) * c.blockN);
          for (int64_t j = n * c.blockN; j < j1; ++j)
            mx = std::max(mx, sc[j]);
        }
        if (mx == -kInf)
          continue; // no kept visible key: O = 0, LSE = -inf
        double l = 0;
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t n = 0; n < nB; ++n) {
          if (!keep[size_t(g * nB + n)])
            continue;
          int64_t j1 = std::min(vis, (n + 1) * c.blockN);
          for (int64_t j = n * c.blockN; j < j1; ++j) {
            double p = std::exp(sc[j] - mx);
            l += p;
            const double *vj = &vv[size_t(j * Dv)];
            for (int64_t d = 0; d < Dv; ++d)
              acc[size_t(d)] += p * vj[d];
          }
        }
        double *o = &ref.o[idx * size_t(Dv)];
        for (int64_t d = 0; d < Dv; ++d)
          o[d] = acc[size_t(d)] / l;
        ref.lse[idx] = mx + std::log(l);
      }
    }
  };
  runWorkers(threads, tasks, worker);
  resetCounts(out, pairs);
  for (size_t t = 0; t < tasks; ++t) {
    size_t pair = t / size_t(mBlocks);
    out->visited[pair] += taskVisited[t];
    out->skipped[pair] += taskSkipped[t];
    out->borderline[pair] += taskBorder[t];
    out->totalVisited += taskVisited[t];
    out->totalSkipped += taskSkipped[t];
    out->totalBorderline += taskBorder[t];
    out->maskedSkips += taskMasked[t];
    out->emptyGroupSkips += taskEmpty[t];
  }
}

//===----------------------------------------------------------------------===//
// The kernel's counters and output against the model
//===----------------------------------------------------------------------===//

StatsCheck blasst::ref::compareStats(const Shape &s, const SkipModel &model,
                                     const int64_t *stats) {
  StatsCheck r;
  std::string firstVisited, firstSkipped;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.qHeads; ++h) {
      size_t i = size_t(b * s.qHeads + h);
      int64_t kv = stats[2 * i], ksk = stats[2 * i + 1];
      ++r.pairs;
      r.kernelVisited += kv;
      r.kernelSkipped += ksk;
      std::string where =
          "[b=" + std::to_string(b) + ", h=" + std::to_string(h) + "]";
      if (kv != model.visited[i] && r.visitedMismatch++ == 0)
        firstVisited = where + " visited " + std::to_string(kv) + ", model " +
                       std::to_string(model.visited[i]);
      int64_t diff = std::llabs(ksk - model.skipped[i]);
      r.maxSkippedDiff = std::max(r.maxSkippedDiff, diff);
      if (diff > model.borderline[i]) {
        if (r.skippedBeyond++ == 0)
          firstSkipped = where + " skipped " + std::to_string(ksk) +
                         ", model " + std::to_string(model.skipped[i]) +
                         " with " + std::to_string(model.borderline[i]) +
                         " borderline decisions";
      } else if (diff) {
        ++r.skippedWithin;
      }
    }
  if (r.visitedMismatch)
    r.failures.push_back("stats: " + std::to_string(r.visitedMismatch) +
                         " (batch, head) entries visited a different number "
                         "of (group, KV block) pairs than the model, e.g. " +
                         firstVisited);
  if (r.skippedBeyond)
    r.failures.push_back(
        "stats: " + std::to_string(r.skippedBeyond) +
        " (batch, head) entries skipped a number of blocks that differs "
        "from the model by more than their borderline decisions, e.g. " +
        firstSkipped);
  r.pass = r.failures.empty();
  return r;
}

BorderlineRecheck
blasst::ref::recheckWithoutBorderline(const Shape &s, DType dtype,
                                      const SkipModel &model, const uint16_t *o,
                                      const Strides &os, const float *lse) {
  const SkipConfig &c = model.config;
  Reference ref = model.out;
  std::vector<uint8_t> touched(size_t(s.batch * s.qHeads * s.seqQ), 0);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.qHeads; ++h)
      for (int64_t m = 0; m < model.mBlocks; ++m)
        for (int64_t g = 0; g < model.groups; ++g)
          for (int64_t n = 0; n < model.nBlocksMax; ++n) {
            if (!(model
                      .decisions[model.decisionIndex(s.qHeads, b, h, m, g, n)] &
                  kBorderline))
              continue;
            int64_t r0 = m * c.blockM + g * c.groupRows;
            int64_t r1 =
                std::min({r0 + c.groupRows, (m + 1) * c.blockM, s.seqQ});
            if (c.qGroup > 0) { // decode: the tile's tokens
              int64_t tokens = c.blockM / c.qGroup;
              r0 = m * tokens;
              r1 = std::min(r0 + tokens, s.seqQ);
            }
            for (int64_t i = r0; i < r1; ++i)
              touched[size_t((b * s.qHeads + h) * s.seqQ + i)] = 1;
          }
  BorderlineRecheck r;
  for (uint8_t t : touched)
    r.rows += t;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.qHeads; ++h)
      for (size_t ri = 0; ri < ref.rows.size(); ++ri) {
        int64_t i = ref.rows[ri];
        if (!touched[size_t((b * s.qHeads + h) * s.seqQ + i)])
          continue;
        size_t idx = ref.index(s, b, h, ri);
        const uint16_t *got = o + b * os.batch + i * os.seq + h * os.head;
        for (int64_t d = 0; d < s.headDimV; ++d)
          ref.o[idx * size_t(s.headDimV) + size_t(d)] =
              double(halfToFloat(dtype, got[d]));
        if (lse)
          ref.lse[idx] = double(lse[(b * s.qHeads + h) * s.seqQ + i]);
      }
  r.pass = compareOutputs(s, dtype, ref, o, os, lse, tolerancesFor(dtype)).pass;
  return r;
}

//===----------------------------------------------------------------------===//
// The sparsity dial
//===----------------------------------------------------------------------===//

namespace {

/// Entry d of row m of the Sylvester Hadamard matrix (+-1).
inline double hadamard(int64_t m, int64_t d) {
  return (__builtin_popcountll(uint64_t(m & d)) & 1) ? -1.0 : 1.0;
}

} // namespace

int DialInfo::windowFactor(int64_t p, int64_t j) const {
  if (bins < 3)
    return 0;
  const int64_t W = config.window, M = bins;
  int64_t bq = floorDiv(p, W), bj = floorDiv(j, W);
  auto sgn = [&](int64_t m) { return floorMod(m, 2 * M) < M ? 1 : -1; };
  int w = 0;
  for (int64_t delta = -1; delta <= 1; ++delta)
    if (floorMod(bq - (bj + delta), M) == 0)
      w += sgn(bq) * sgn(bj + delta);
  return w;
}

void blasst::ref::generateDialInputs(
    const Shape &s, DType dtype, const DialConfig &config, uint64_t seed,
    const Strides &qs, size_t qCount, std::vector<uint16_t> &qBits,
    std::vector<float> &q, const Strides &ks, size_t kCount,
    std::vector<uint16_t> &kBits, std::vector<float> &k, unsigned threads,
    DialInfo *info) {
  DialInfo &I = *info;
  I = DialInfo();
  I.config = config;
  const int64_t D = s.headDim;
  int64_t P = 1;
  while (P * 2 <= D)
    P *= 2;
  I.hadamard = P;
  I.bins = P - 1 >= 3 ? P - 1 : 0;
  const bool window = I.bins > 0 && config.window > 0;
  if (!window)
    I.bins = 0;
  const double c = s.scale * kLog2E; // score per unit of q.k, log2 units
  // Largest signal entry: cold keys (beta + 3 gamma)/sqrt(P) with gamma =
  // sqrt(2) beta, or beta/sqrt(P) without a window; beta = sqrt(H / c).
  const double spread = window ? 1.0 + 3.0 * std::sqrt(2.0) : 1.0;
  const double hMax =
      c * double(P) * (config.maxEntry / spread) * (config.maxEntry / spread);
  I.hot = std::min(config.hot, hMax);
  I.alpha = I.beta = std::sqrt(I.hot / c);
  I.gamma = window ? std::sqrt(2.0 * I.hot / c) : 0.0;
  // sigma: std of the score noise ~= config.noise (log2 units). Noise terms
  // of c * q.k: nq.k_sig + q_sig.nk (variance sigma^2 * S) and nq.nk
  // (sigma^4 * D); S for a cold key, the largest signal.
  {
    double S = I.alpha * I.alpha + I.gamma * I.gamma + I.beta * I.beta +
               3 * I.gamma * I.gamma;
    double a = double(D) * c * c, b = S * c * c,
           n2 = config.noise * config.noise;
    double x = (-b + std::sqrt(b * b + 4 * a * n2)) / (2 * a); // sigma^2
    I.sigma = std::sqrt(std::max(x, 0.0));
  }
  I.kvHeads = s.kvHeads;
  I.kvBlocks = ceilDiv(s.seqKV, config.blockN);
  I.cold.assign(size_t(s.batch * s.kvHeads * I.kvBlocks), 0);
  const uint64_t key = mix(seed, 0xD1A1ull);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t kh = 0; kh < s.kvHeads; ++kh) {
      const double phase =
          unit(mix(mix(mix(key, 1 + uint64_t(b)), uint64_t(kh)), 0xE7E7ull));
      int64_t eligible = 0;
      bool prevCold = false;
      for (int64_t n = 0; n < I.kvBlocks; ++n) {
        if (n * config.blockN < config.sinkKeys)
          continue; // holds sink keys: never cold
        ++I.eligibleBlocks;
        uint64_t hsh = mix(mix(mix(key, 1 + uint64_t(b)), uint64_t(kh)),
                           uint64_t(n) * 3 + 1);
        const double F = config.coldFraction, e = double(eligible++);
        bool cold = unit(hsh) < F;
        if (config.even) {
          cold = std::floor((e + 1) * F + phase) > std::floor(e * F + phase);
        } else if (config.runLength > 0 && e > 0 && F > 0 && F < 1) {
          // Stationary cold fraction F: F p(cold -> warm) = (1 - F) / L.
          double toCold = 1 / config.runLength,
                 toWarm = std::min(1.0, (1 - F) / (F * config.runLength));
          cold = prevCold ? unit(hsh) >= toWarm : unit(hsh) < toCold;
        }
        prevCold = cold;
        I.cold[size_t((b * s.kvHeads + kh) * I.kvBlocks + n)] = cold;
        I.coldBlocks += cold;
      }
    }
  // Random signs per (b, kv head, dim): u = sign * h_0 / sqrt(P), window
  // directions w_m = sign * h_(m+1) / sqrt(P), all orthonormal.
  std::vector<double> sign(size_t(s.batch * s.kvHeads * P));
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t kh = 0; kh < s.kvHeads; ++kh)
      for (int64_t d = 0; d < P; ++d)
        sign[size_t((b * s.kvHeads + kh) * P + d)] =
            (mix(mix(mix(key, 0x5167ull + uint64_t(b)), uint64_t(kh)),
                 uint64_t(d)) >>
             63)
                ? -1.0
                : 1.0;
  const double invSqrtP = 1.0 / std::sqrt(double(P));
  const int64_t M = I.bins;
  auto sgnBin = [&](int64_t m) { return floorMod(m, 2 * M) < M ? 1.0 : -1.0; };
  auto windowDir = [&](int64_t m, int64_t d) {
    return sgnBin(m) * hadamard(1 + floorMod(m, M), d);
  };
  auto noise = [&](uint64_t stream, uint64_t index) {
    uint64_t base = mix(key, stream);
    uint64_t h1 = splitmix64(base + 2 * index),
             h2 = splitmix64(base + 2 * index + 1);
    return std::sqrt(-2.0 * std::log(unit(h1))) *
           std::cos(6.283185307179586 * unit(h2));
  };

  qBits.assign(qCount, floatToHalf(dtype, 0.0f));
  q.assign(qCount, 0.0f);
  kBits.assign(kCount, floatToHalf(dtype, 0.0f));
  k.assign(kCount, 0.0f);
  const int64_t gqa = s.qHeads / s.kvHeads;
  // Q: one task per (b, i).
  parallelFor(size_t(s.batch * s.seqQ), threads, [&](size_t begin, size_t end) {
    for (size_t t = begin; t < end; ++t) {
      int64_t b = int64_t(t) / s.seqQ, i = int64_t(t) % s.seqQ;
      int64_t p = i + s.seqKV - s.seqQ,
              bq = window ? floorDiv(p, config.window) : 0;
      for (int64_t h = 0; h < s.qHeads; ++h) {
        int64_t kh = h / gqa;
        const double *sg = &sign[size_t((b * s.kvHeads + kh) * P)];
        size_t at = size_t(b * qs.batch + i * qs.seq + h * qs.head);
        uint64_t logical = uint64_t(((b * s.seqQ + i) * s.qHeads + h) * D);
        for (int64_t d = 0; d < D; ++d) {
          double x = 0;
          if (d < P) {
            x = I.alpha * hadamard(0, d);
            if (window)
              x += I.gamma * windowDir(bq, d);
            x *= sg[d] * invSqrtP;
          }
          x += I.sigma * noise(11, logical + uint64_t(d));
          uint16_t bits = floatToHalf(dtype, float(x));
          qBits[at + size_t(d)] = bits;
          q[at + size_t(d)] = halfToFloat(dtype, bits);
        }
      }
    }
  });
  // K: one task per (b, j).
  parallelFor(
      size_t(s.batch * s.seqKV), threads, [&](size_t begin, size_t end) {
        for (size_t t = begin; t < end; ++t) {
          int64_t b = int64_t(t) / s.seqKV, j = int64_t(t) % s.seqKV;
          int64_t bj = window ? floorDiv(j, config.window) : 0;
          for (int64_t kh = 0; kh < s.kvHeads; ++kh) {
            bool cold =
                j >= config.sinkKeys && I.isCold(b, kh, j / config.blockN);
            const double *sg = &sign[size_t((b * s.kvHeads + kh) * P)];
            size_t at = size_t(b * ks.batch + j * ks.seq + kh * ks.head);
            uint64_t logical =
                uint64_t(((b * s.seqKV + j) * s.kvHeads + kh) * D);
            for (int64_t d = 0; d < D; ++d) {
              double x = 0;
              if (d < P) {
                x = (cold ? -I.beta : I.beta) * hadamard(0, d);
                if (cold && window)
                  for (int64_t delta = -1; delta <= 1; ++delta)
                    x += I.gamma * windowDir(bj + delta, d);
                x *= sg[d] * invSqrtP;
              }
              x += I.sigma * noise(12, logical + uint64_t(d));
              uint16_t bits = floatToHalf(dtype, float(x));
              kBits[at + size_t(d)] = bits;
              k[at + size_t(d)] = halfToFloat(dtype, bits);
            }
          }
        }
      });
  for (float x : q)
    I.maxAbsQ = std::max(I.maxAbsQ, double(std::fabs(x)));
  for (float x : k)
    I.maxAbsK = std::max(I.maxAbsK, double(std::fabs(x)));
}

double blasst::ref::dialWalkedColdFraction(const Shape &s, const SkipConfig &c,
                                           const DialInfo &dial) {
  const int64_t mBlocks = ceilDiv(s.seqQ, c.blockM);
  const int64_t groups = ceilDiv(c.blockM, c.groupRows);
  const int64_t gqa = s.qHeads / s.kvHeads;
  // Prefix counts of cold blocks per (b, kv head).
  double walked = 0, cold = 0;
  std::vector<int64_t> prefix(size_t(dial.kvBlocks + 1));
  if (c.qGroup > 0) {
    // Decode: each tile walks its blocks once for all its q heads; the
    // first block of each split is kept whatever it is (not skippable),
    // unless it is voted on (voteFirstBlock: all but the sequence's block
    // 0).
    const int64_t tiles = decodeTiles(s, c);
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t kh = 0; kh < s.kvHeads; ++kh)
        for (int64_t t = 0; t < tiles; ++t) {
          Shape sb = s;
          sb.seqKV = c.kvLengthOf(b, s.seqKV);
          int64_t nB = std::min(decodeTileKVBlocks(sb, c, t), dial.kvBlocks);
          walked += double(nB);
          const int64_t splits = decodeSequenceSplits(s, c, b);
          for (int64_t sp = 0; sp < splits; ++sp) {
            const std::vector<int64_t> walk =
                decodeSplitBlockList(nB, splits, c.splitChunk, sp);
            for (size_t i = 0; i < walk.size(); ++i)
              if (walk[i] > 0 && (i > 0 || c.votesSplitFirstBlock()))
                cold += dial.isCold(b, kh, walk[i]);
          }
        }
    return walked > 0 ? cold / walked : 0.0;
  }
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t kh = 0; kh < s.kvHeads; ++kh) {
      prefix[0] = 0;
      for (int64_t n = 0; n < dial.kvBlocks; ++n)
        prefix[size_t(n + 1)] = prefix[size_t(n)] + dial.isCold(b, kh, n);
      for (int64_t m = 0; m < mBlocks; ++m) {
        int64_t nB = std::min(ctaKVBlocks(s, c, m), dial.kvBlocks);
        int64_t walking = groups;
        if (c.emptyGroup == SkipConfig::EmptyGroup::Idle)
          walking =
              std::min(groups, ceilDiv(s.seqQ - m * c.blockM, c.groupRows));
        walked += double(gqa * walking * nB);
        cold += double(gqa * walking * prefix[size_t(nB)]);
      }
    }
  return walked > 0 ? cold / walked : 0.0;
}
