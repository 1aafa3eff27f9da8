//===- ReferenceTest.cpp - Tests of the CPU reference library -------------===//
//
// BLASSTReference is what every kernel is judged by, so it is checked here
// against independent long-double implementations written from the
// definitions: the 16-bit conversions (exhaustively), the reference
// attention against the textbook formula, the comparison flagging every kind
// of corrupted output, and the BLASST skipping model against a brute-force
// walk of the vote rules (decisions, counters, O and LSE over kept keys),
// and the online softmax with sm_100a's conditional rescale (a float model)
// against the definition.
//
//===----------------------------------------------------------------------===//

#include "blasst/Reference/Reference.h"
#include "blasst/Reference/Compare.h"
#include "blasst/Reference/SkipModel.h"

#include "blasst/Runtime/AttentionKernel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <ostream>
#include <random>
#include <string>
#include <vector>

using namespace blasst;
using namespace blasst::ref;

namespace blasst {
// How gtest prints a DType parameter (found by argument-dependent lookup).
void PrintTo(DType dtype, std::ostream *os) { *os << toString(dtype); }
} // namespace blasst

namespace {

std::string hex16(uint16_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%04x", v);
  return buf;
}

Shape makeShape(int64_t b, int64_t sq, int64_t skv, int64_t hq, int64_t hkv,
                int64_t d, int64_t dv, bool causal, double scale) {
  Shape s;
  s.batch = b, s.seqQ = sq, s.seqKV = skv, s.qHeads = hq, s.kvHeads = hkv;
  s.headDim = d, s.headDimV = dv, s.causal = causal, s.scale = scale;
  return s;
}

const DType kDTypes[] = {DType::BF16, DType::F16};

//===----------------------------------------------------------------------===//
// 16-bit conversions
//===----------------------------------------------------------------------===//

// Hand-picked values: ties to even, overflow ties, subnormals.
TEST(Float16, RoundsToNearestEven) {
  struct Case {
    DType dtype;
    float in;
    uint16_t want;
    const char *what;
  };
  const Case cases[] = {
      {DType::BF16, 1.0f, 0x3F80, "bf16 1.0"},
      {DType::BF16, -2.0f, 0xC000, "bf16 -2.0"},
      {DType::BF16, 1.0f + 0x1p-8f, 0x3F80, "bf16 tie 1+2^-8 -> even 1.0"},
      {DType::BF16, 1.0f + 3 * 0x1p-8f, 0x3F82, "bf16 tie 1+3*2^-8 -> even"},
      {DType::BF16, 1.0f + 0x1p-8f + 0x1p-20f, 0x3F81, "bf16 above tie"},
      {DType::BF16, 0x1.ffp+127f, 0x7F80,
       "bf16 overflow tie (max + ulp/2) -> inf"},
      {DType::BF16, 0x1.fep+127f, 0x7F7F, "bf16 max"},
      {DType::BF16, 0x1p-133f, 0x0001, "bf16 smallest subnormal"},
      {DType::F16, 1.0f, 0x3C00, "f16 1.0"},
      {DType::F16, -0.5f, 0xB800, "f16 -0.5"},
      {DType::F16, 65504.0f, 0x7BFF, "f16 max"},
      {DType::F16, 65519.99f, 0x7BFF, "f16 just below the overflow tie"},
      {DType::F16, 65520.0f, 0x7C00, "f16 overflow tie -> inf"},
      {DType::F16, 1.0f + 0x1p-11f, 0x3C00, "f16 tie -> even 1.0"},
      {DType::F16, 1.0f + 3 * 0x1p-11f, 0x3C02, "f16 tie -> even up"},
      {DType::F16, 0x1p-24f, 0x0001, "f16 smallest subnormal"},
      {DType::F16, 0x1p-25f, 0x0000, "f16 2^-25 tie -> 0"},
      {DType::F16, 0x1.8p-24f, 0x0002, "f16 1.5*2^-24 tie -> even 2"},
      {DType::F16, 0x1p-14f - 0x1p-26f, 0x0400,
       "f16 subnormal rounding up to the smallest normal"},
      {DType::F16, 0x1p-26f, 0x0000, "f16 underflow"},
  };
  for (const Case &c : cases) {
    uint16_t got = floatToHalf(c.dtype, c.in);
    EXPECT_EQ(got, c.want) << c.what << ": got " << hex16(got) << ", want "
                           << hex16(c.want);
  }
}

// NaN stays NaN, and the bench's 0xFFFF output poison reads as NaN.
TEST(Float16, NaNAndPoison) {
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBF16(std::nanf("")))));
  EXPECT_TRUE(std::isnan(f16ToFloat(floatToF16(std::nanf("")))));
  EXPECT_TRUE(std::isnan(bf16ToFloat(kPoison16)));
  EXPECT_TRUE(std::isnan(f16ToFloat(kPoison16)));
}

// Every finite 16-bit value round-trips; every midpoint between neighbours
// rounds to the even one, and nudges either way to the nearer.
TEST(Float16, ExhaustiveRoundTripAndMidpoints) {
  for (DType dtype : kDTypes) {
    int roundTrip = 0, midpoint = 0;
    for (uint32_t bits = 0; bits < 0x10000; ++bits) {
      uint16_t h = uint16_t(bits);
      float f = halfToFloat(dtype, h);
      if (std::isnan(f))
        continue;
      if (floatToHalf(dtype, f) != h)
        ++roundTrip;
      // Midpoint to the next larger magnitude (same sign), when finite.
      uint16_t next = uint16_t(h + 1);
      float g = halfToFloat(dtype, next);
      if (std::isinf(f) || std::isnan(g) || ((h ^ next) & 0x8000))
        continue;
      if (std::isinf(g))
        continue; // the overflow tie is a case of RoundsToNearestEven
      float mid = float((double(f) + double(g)) / 2); // exact in float
      uint16_t even = (h & 1) ? next : h;
      if (floatToHalf(dtype, mid) != even)
        ++midpoint;
      float below = std::nextafter(mid, f), above = std::nextafter(mid, g);
      if (below != f && floatToHalf(dtype, below) != h)
        ++midpoint;
      if (above != g && floatToHalf(dtype, above) != next)
        ++midpoint;
    }
    EXPECT_EQ(roundTrip, 0) << toString(dtype) << ": round-trip mismatches";
    EXPECT_EQ(midpoint, 0) << toString(dtype) << ": midpoint mismatches";
  }
}

//===----------------------------------------------------------------------===//
// Inputs
//===----------------------------------------------------------------------===//

struct Inputs {
  Shape shape;
  DType dtype = DType::BF16;
  Strides qs, ks, vs;
  std::vector<uint16_t> qBits, kBits, vBits;
  std::vector<float> q, k, v;
};

/// Inputs with optional padding in every stride (so strides are exercised).
Inputs makeInputs(const Shape &s, DType dtype, int64_t pad, uint64_t seed,
                  Distribution dist) {
  Inputs in;
  in.shape = s;
  in.dtype = dtype;
  auto strides = [&](int64_t seq, int64_t heads, int64_t dim) {
    Strides st;
    st.head = dim + pad;
    st.seq = heads * st.head + pad;
    st.batch = seq * st.seq + pad;
    return st;
  };
  in.qs = strides(s.seqQ, s.qHeads, s.headDim);
  in.ks = strides(s.seqKV, s.kvHeads, s.headDim);
  in.vs = strides(s.seqKV, s.kvHeads, s.headDimV);
  generateTensor(dtype, dist, seed, 1, size_t(s.batch * in.qs.batch), in.qBits,
                 in.q);
  generateTensor(dtype, dist, seed, 2, size_t(s.batch * in.ks.batch), in.kBits,
                 in.k);
  generateTensor(dtype, dist, seed, 3, size_t(s.batch * in.vs.batch), in.vBits,
                 in.v);
  return in;
}

/// Dial inputs in the Inputs form (V from the usual generator).
Inputs makeDialInputs(const Shape &s, DType dtype, const DialConfig &dc,
                      uint64_t seed, int64_t pad, DialInfo *info,
                      unsigned threads = 2) {
  Inputs in = makeInputs(s, dtype, pad, seed, Distribution::Uniform);
  generateDialInputs(s, dtype, dc, seed, in.qs, in.q.size(), in.qBits, in.q,
                     in.ks, in.k.size(), in.kBits, in.k, threads, info);
  return in;
}

void referenceOf(const Inputs &in, const std::vector<int64_t> &rows,
                 unsigned threads, Reference *out) {
  referenceAttention(in.shape, in.q.data(), in.qs, in.k.data(), in.ks,
                     in.v.data(), in.vs, rows, threads, out);
}

void skipModelOf(const Inputs &in, const std::vector<int64_t> &rows,
                 const SkipConfig &cfg, unsigned threads, SkipModel *out,
                 Reference *dense = nullptr) {
  skipModelAttention(in.shape, in.q.data(), in.qs, in.k.data(), in.ks,
                     in.v.data(), in.vs, rows, cfg, threads, out, dense);
}

std::vector<int64_t> allRows(const Shape &s) {
  return selectRows(s.seqQ, s.seqQ);
}

//===----------------------------------------------------------------------===//
// Reference against a naive implementation
//===----------------------------------------------------------------------===//

/// The textbook formula, written independently of referenceAttention: long
/// double, all keys scored, masked ones at -inf, direct indexing.
void naiveAttention(const Inputs &in, std::vector<double> &o,
                    std::vector<double> &lse) {
  const Shape &s = in.shape;
  o.assign(size_t(s.batch * s.qHeads * s.seqQ * s.headDimV), 0.0);
  lse.assign(size_t(s.batch * s.qHeads * s.seqQ), 0.0);
  const long double inf = std::numeric_limits<long double>::infinity();
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.qHeads; ++h) {
      int64_t kh = h * s.kvHeads / s.qHeads; // == h / (qHeads / kvHeads)
      for (int64_t i = 0; i < s.seqQ; ++i) {
        std::vector<long double> score(size_t(s.seqKV));
        long double m = -inf;
        for (int64_t j = 0; j < s.seqKV; ++j) {
          bool visible = !s.causal || j <= i + s.seqKV - s.seqQ;
          if (!visible) {
            score[size_t(j)] = -inf;
            continue;
          }
          long double dot = 0;
          for (int64_t d = 0; d < s.headDim; ++d)
            dot += (long double)in.q[size_t(b * in.qs.batch + i * in.qs.seq +
                                            h * in.qs.head + d)] *
                   in.k[size_t(b * in.ks.batch + j * in.ks.seq +
                               kh * in.ks.head + d)];
          score[size_t(j)] = dot * (long double)s.scale;
          if (score[size_t(j)] > m)
            m = score[size_t(j)];
        }
        size_t row = size_t((b * s.qHeads + h) * s.seqQ + i);
        if (m == -inf) {
          lse[row] = -std::numeric_limits<double>::infinity();
          continue; // o stays 0
        }
        long double sum = 0;
        for (int64_t j = 0; j < s.seqKV; ++j)
          sum += std::exp(score[size_t(j)] - m);
        for (int64_t d = 0; d < s.headDimV; ++d) {
          long double acc = 0;
          for (int64_t j = 0; j < s.seqKV; ++j)
            acc += std::exp(score[size_t(j)] - m) *
                   in.v[size_t(b * in.vs.batch + j * in.vs.seq +
                               kh * in.vs.head + d)];
          o[row * size_t(s.headDimV) + size_t(d)] = double(acc / sum);
        }
        lse[row] = double(m + std::log(sum));
      }
    }
}

struct ReferenceCase {
  const char *what;
  Shape shape;
  int64_t pad;
  Distribution dist;
};

const ReferenceCase kReferenceCases[] = {
    {"dense MHA", makeShape(2, 5, 7, 2, 2, 8, 8, false, 0.35), 0,
     Distribution::Uniform},
    {"dense GQA 4/2, tails", makeShape(1, 17, 33, 4, 2, 16, 16, false, 0.25), 0,
     Distribution::Normal},
    {"MQA 3/1", makeShape(2, 6, 9, 3, 1, 8, 8, false, 0.3), 0,
     Distribution::Uniform},
    {"causal seqQ == seqKV", makeShape(1, 13, 13, 2, 1, 8, 8, true, 0.4), 0,
     Distribution::Uniform},
    {"causal seqQ < seqKV (bottom-right)",
     makeShape(2, 5, 11, 4, 2, 8, 8, true, 0.3), 0, Distribution::Normal},
    {"causal seqQ > seqKV (fully masked rows)",
     makeShape(1, 9, 4, 2, 2, 8, 8, true, 0.3), 0, Distribution::Uniform},
    {"causal decode seqQ = 1", makeShape(3, 1, 19, 4, 1, 16, 16, true, 0.25), 0,
     Distribution::Normal},
    {"head_dim_v != head_dim, strided",
     makeShape(2, 7, 10, 2, 1, 8, 12, true, 0.3), 3, Distribution::Uniform},
    {"strided GQA causal", makeShape(2, 12, 12, 6, 3, 16, 16, true, 0.25), 5,
     Distribution::Normal},
    {"large scores (softmax overflow guard)",
     makeShape(1, 6, 40, 2, 1, 16, 16, false, 8.0), 0, Distribution::Normal},
};

// Every row of every case, 1 and 3 threads, against the textbook formula;
// rows that see no key must give O = 0 and LSE = -inf.
TEST(ReferenceAttention, MatchesNaive) {
  for (const ReferenceCase &c : kReferenceCases)
    for (DType dtype : kDTypes) {
      Inputs in = makeInputs(c.shape, dtype, c.pad, 42, c.dist);
      const Shape &s = in.shape;
      std::vector<double> naiveO, naiveLse;
      naiveAttention(in, naiveO, naiveLse);
      for (unsigned threads : {1u, 3u}) {
        SCOPED_TRACE(std::string(c.what) + " [" + toString(dtype) + ", " +
                     std::to_string(threads) + " thread(s)]");
        Reference ref;
        referenceOf(in, allRows(s), threads, &ref);
        double maxErr = 0;
        int lseBad = 0;
        for (int64_t b = 0; b < s.batch; ++b)
          for (int64_t h = 0; h < s.qHeads; ++h)
            for (int64_t i = 0; i < s.seqQ; ++i) {
              size_t row = size_t((b * s.qHeads + h) * s.seqQ + i);
              size_t r = ref.index(s, b, h, size_t(i));
              for (int64_t d = 0; d < s.headDimV; ++d)
                maxErr = std::max(
                    maxErr,
                    std::fabs(ref.o[r * size_t(s.headDimV) + size_t(d)] -
                              naiveO[row * size_t(s.headDimV) + size_t(d)]));
              double a = ref.lse[r], e = naiveLse[row];
              if (std::isinf(e))
                lseBad += !(std::isinf(a) && a < 0);
              else
                lseBad +=
                    !(std::fabs(a - e) <= 1e-12 * std::max(1.0, std::fabs(e)));
            }
        EXPECT_LE(maxErr, 1e-12) << "max |ref - naive|";
        EXPECT_EQ(lseBad, 0) << "LSE mismatches";
      }
    }
}

// The decode kernels' split KV (docs/design.md, Decode): each split's
// normalised O and log2 LSE over an even share of the tile's key blocks
// (causal: up to the tile's last token's diagonal; later shares shorter or
// empty), merged by LSE, equals plain attention. That is why blasst-bench
// checks decode against the plain reference: split boundaries are
// invisible in the result.
TEST(ReferenceAttention, DecodeSplitMergeEqualsPlainAttention) {
  const int64_t blockN = 16;
  for (bool causal : {false, true})
    for (int64_t seqQ : {1, 3, 8})
      for (int64_t seqKV : {5, 40, 103})
        for (int64_t splits : {1, 2, 3, 7}) {
          Shape shape = makeShape(2, seqQ, seqKV, 4, 2, 8, 8, causal, 0.4);
          Inputs in = makeInputs(shape, DType::BF16, 0, 7, Distribution::Normal);
          const Shape &sh = in.shape;
          SCOPED_TRACE("causal " + std::to_string(causal) + " seqQ " +
                       std::to_string(seqQ) + " seqKV " +
                       std::to_string(seqKV) + " splits " +
                       std::to_string(splits));
          Reference ref;
          referenceOf(in, allRows(sh), 1, &ref);
          // One tile holds every token (the kernel's packing: all rows of a
          // kv head); the split partition is the lowering's.
          int64_t total = (seqKV + blockN - 1) / blockN;
          if (causal) {
            int64_t lastKey = std::max<int64_t>(0, seqQ + seqKV - seqQ);
            total = std::min(total, (lastKey + blockN - 1) / blockN);
          }
          int64_t per = (total + splits - 1) / splits;
          double maxErr = 0;
          int lseBad = 0;
          for (int64_t b = 0; b < sh.batch; ++b)
            for (int64_t h = 0; h < sh.qHeads; ++h)
              for (int64_t i = 0; i < seqQ; ++i) {
                int64_t kh = h / (sh.qHeads / sh.kvHeads);
                int64_t visible = sh.visibleKeys(i);
                std::vector<double> lse2(static_cast<size_t>(splits));
                std::vector<std::vector<double>> part(static_cast<size_t>(splits));
                for (int64_t sp = 0; sp < splits; ++sp) {
                  int64_t begin = std::min(sp * per, total);
                  int64_t count = std::min(total - begin, per);
                  int64_t k0 = begin * blockN;
                  int64_t k1 = std::min((begin + count) * blockN, visible);
                  std::vector<double> sc;
                  double m = -INFINITY;
                  for (int64_t j = k0; j < k1; ++j) {
                    double dot = 0;
                    for (int64_t d = 0; d < sh.headDim; ++d)
                      dot += double(in.q[size_t(b * in.qs.batch + i * in.qs.seq +
                                                h * in.qs.head + d)]) *
                             in.k[size_t(b * in.ks.batch + j * in.ks.seq +
                                         kh * in.ks.head + d)];
                    sc.push_back(dot * sh.scale * kLog2E);
                    m = std::max(m, sc.back());
                  }
                  part[size_t(sp)].assign(size_t(sh.headDimV), 0.0);
                  double l = 0;
                  for (int64_t j = k0; j < k1; ++j) {
                    double p = std::exp2(sc[size_t(j - k0)] - m);
                    l += p;
                    for (int64_t d = 0; d < sh.headDimV; ++d)
                      part[size_t(sp)][size_t(d)] +=
                          p * in.v[size_t(b * in.vs.batch + j * in.vs.seq +
                                          kh * in.vs.head + d)];
                  }
                  for (double &x : part[size_t(sp)])
                    x = l > 0 ? x / l : 0.0;
                  lse2[size_t(sp)] = l > 0 ? m + std::log2(l) : -INFINITY;
                }
                // The merge of the last split's CTA.
                double mx = -INFINITY;
                for (double x : lse2)
                  mx = std::max(mx, x);
                bool none = std::isinf(mx);
                double sum = 0;
                std::vector<double> o(size_t(sh.headDimV), 0.0);
                for (int64_t sp = 0; sp < splits; ++sp) {
                  double w = none ? 0.0 : std::exp2(lse2[size_t(sp)] - mx);
                  sum += w;
                  for (int64_t d = 0; d < sh.headDimV; ++d)
                    o[size_t(d)] += w * part[size_t(sp)][size_t(d)];
                }
                size_t r = ref.index(sh, b, h, size_t(i));
                for (int64_t d = 0; d < sh.headDimV; ++d)
                  maxErr = std::max(
                      maxErr,
                      std::fabs((none ? 0.0 : o[size_t(d)] / sum) -
                                ref.o[r * size_t(sh.headDimV) + size_t(d)]));
                double lse = none ? -INFINITY : (mx + std::log2(sum)) * M_LN2;
                if (std::isinf(ref.lse[r]))
                  lseBad += !std::isinf(lse);
                else
                  lseBad += !(std::fabs(lse - ref.lse[r]) <= 1e-9);
              }
          EXPECT_LE(maxErr, 1e-12);
          EXPECT_EQ(lseBad, 0);
        }
}

// The case with seqQ > seqKV really has rows that see no key.
TEST(ReferenceAttention, MaskedRowsAreCovered) {
  const Shape &s = kReferenceCases[5].shape;
  Inputs in = makeInputs(s, DType::BF16, 0, 42, Distribution::Uniform);
  Reference ref;
  referenceOf(in, allRows(s), 1, &ref);
  int masked = 0;
  for (double l : ref.lse)
    masked += std::isinf(l) && l < 0;
  EXPECT_EQ(masked, 2 * 5); // rows 0..4 of both heads
}

// A row subset (rows:3) gives exactly the values of the full computation.
TEST(ReferenceAttention, RowSubsetMatchesFull) {
  for (const ReferenceCase &c : kReferenceCases) {
    SCOPED_TRACE(c.what);
    Inputs in = makeInputs(c.shape, DType::BF16, c.pad, 42, c.dist);
    const Shape &s = in.shape;
    std::vector<int64_t> rows = selectRows(s.seqQ, 3);
    Reference sub, full;
    referenceOf(in, rows, 2, &sub);
    referenceOf(in, allRows(s), 2, &full);
    bool same = true;
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t h = 0; h < s.qHeads; ++h)
        for (size_t r = 0; r < rows.size(); ++r) {
          size_t a = sub.index(s, b, h, r);
          size_t f = full.index(s, b, h, size_t(rows[r]));
          for (int64_t d = 0; d < s.headDimV; ++d)
            same &= sub.o[a * size_t(s.headDimV) + size_t(d)] ==
                    full.o[f * size_t(s.headDimV) + size_t(d)];
          same &= sub.lse[a] == full.lse[f] ||
                  (std::isinf(sub.lse[a]) && std::isinf(full.lse[f]));
        }
    EXPECT_TRUE(same);
  }
}

// rows:K picks K evenly spaced rows, first and last included.
TEST(ReferenceAttention, SelectRows) {
  auto rows = selectRows(1000, 5);
  EXPECT_TRUE(rows == std::vector<int64_t>({0, 250, 500, 749, 999}) ||
              rows == std::vector<int64_t>({0, 250, 500, 750, 999}));
  EXPECT_EQ(selectRows(4, 10).size(), 4u) << "K > seqQ checks all rows";
}

// visiblePairs' closed form equals the sum of visible keys; FLOP counts.
TEST(Shape, VisiblePairsAndFlops) {
  for (int64_t sq : {1, 2, 7, 64, 100})
    for (int64_t skv : {1, 3, 7, 64, 150})
      for (bool causal : {false, true}) {
        Shape s;
        s.seqQ = sq, s.seqKV = skv, s.causal = causal;
        double brute = 0;
        for (int64_t i = 0; i < sq; ++i)
          brute += double(s.visibleKeys(i));
        EXPECT_EQ(brute, s.visiblePairs())
            << "seqQ " << sq << ", seqKV " << skv << ", causal " << causal;
      }
  Shape s;
  s.batch = 2, s.qHeads = 32, s.seqQ = s.seqKV = 4096,
  s.headDim = s.headDimV = 128;
  s.causal = true;
  EXPECT_EQ(s.flops(), 4.0 * 2 * 32 * 4096 * (4097.0 / 2) * 128)
      << "causal FLOPs = 4*B*H*S*(S+1)/2*D";
  s.causal = false;
  EXPECT_EQ(s.flops(), 4.0 * 2 * 32 * 4096 * 4096 * 128)
      << "dense FLOPs = 4*B*H*Sq*Skv*D";
}

//===----------------------------------------------------------------------===//
// The comparison flags what it must
//===----------------------------------------------------------------------===//

/// A causal GQA shape with seqQ > seqKV (masked rows), the reference, and a
/// "kernel" output: the reference rounded to the dtype in an O with a padded
/// row stride, surrounded by poison.
class CompareTest : public ::testing::TestWithParam<DType> {
protected:
  void SetUp() override {
    dtype = GetParam();
    s.batch = 2, s.seqQ = 37, s.seqKV = 29, s.qHeads = 4, s.kvHeads = 2;
    s.headDim = s.headDimV = 32, s.causal = true;
    s.scale = 1 / std::sqrt(32.0);
    Inputs in = makeInputs(s, dtype, 0, 7, Distribution::Uniform);
    referenceOf(in, allRows(s), 0, &ref);
    os.head = s.headDimV;
    os.seq = s.qHeads * s.headDimV + 8;
    os.batch = s.seqQ * os.seq;
    total = size_t(s.batch * os.batch) + 64;
    good.assign(total, kPoison16);
    lse.assign(size_t(s.batch * s.qHeads * s.seqQ), 0.0f);
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t h = 0; h < s.qHeads; ++h)
        for (int64_t i = 0; i < s.seqQ; ++i) {
          size_t r = ref.index(s, b, h, size_t(i));
          for (int64_t d = 0; d < s.headDimV; ++d)
            good[at(b, i, h, d)] = floatToHalf(
                dtype, float(ref.o[r * size_t(s.headDimV) + size_t(d)]));
          lse[size_t((b * s.qHeads + h) * s.seqQ + i)] = float(ref.lse[r]);
        }
    tol = tolerancesFor(dtype);
  }

  size_t at(int64_t b, int64_t i, int64_t h, int64_t d) const {
    return size_t(b * os.batch + i * os.seq + h * os.head + d);
  }

  CheckResult compare(const std::vector<uint16_t> &o,
                      const std::vector<float> &l) const {
    return compareOutputs(s, dtype, ref, o.data(), os, l.data(), tol);
  }

  /// The check fails with a message containing `needle`.
  CheckResult expectFail(const std::vector<uint16_t> &o,
                         const std::vector<float> &l,
                         const std::string &needle) const {
    CheckResult r = compare(o, l);
    std::string all;
    for (const std::string &f : r.failures)
      all += f + "; ";
    EXPECT_FALSE(r.pass);
    EXPECT_NE(all.find(needle), std::string::npos) << all;
    return r;
  }

  DType dtype = DType::BF16;
  Shape s;
  Reference ref;
  Strides os;
  size_t total = 0;
  std::vector<uint16_t> good;
  std::vector<float> lse;
  Tolerances tol;
};

// The correctly rounded output passes well within the tolerance.
TEST_P(CompareTest, CorrectlyRoundedOutputPasses) {
  CheckResult ok = compare(good, lse);
  EXPECT_TRUE(ok.pass) << (ok.failures.empty() ? "" : ok.failures[0]);
  EXPECT_EQ(ok.elementsChecked, uint64_t(2 * 4 * 37 * 32));
  EXPECT_GT(ok.relL2, 0);
  EXPECT_LT(ok.relL2, tol.relL2 / 4);
  EXPECT_EQ(countWritesOutside(s, os, good.data(), total), 0u);
}

// One element far off (a garbage element): rel L2 alone might miss it in a
// big tensor, the element-wise bound does not, and locates it.
TEST_P(CompareTest, FlagsOneCorruptedElement) {
  std::vector<uint16_t> bad = good;
  size_t victim = at(1, 20, 3, 5);
  bad[victim] = floatToHalf(dtype, halfToFloat(dtype, bad[victim]) + 0.25f);
  CheckResult r = expectFail(bad, lse, "differ by more than");
  EXPECT_EQ(r.worstB, 1);
  EXPECT_EQ(r.worstRow, 20);
  EXPECT_EQ(r.worstH, 3);
  EXPECT_EQ(r.worstD, 5);
}

// Everything slightly off (a systematic error): rel L2 flags it.
TEST_P(CompareTest, FlagsScaledOutput) {
  std::vector<uint16_t> bad = good;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t i = 0; i < s.seqQ; ++i)
      for (int64_t h = 0; h < s.qHeads; ++h)
        for (int64_t d = 0; d < s.headDimV; ++d) {
          uint16_t &e = bad[at(b, i, h, d)];
          e = floatToHalf(dtype, halfToFloat(dtype, e) * 1.03f);
        }
  expectFail(bad, lse, "relative L2");
}

// A NaN is flagged, counted and located.
TEST_P(CompareTest, FlagsNaN) {
  std::vector<uint16_t> bad = good;
  bad[at(0, 7, 2, 0)] = floatToHalf(dtype, std::nanf(""));
  CheckResult r = expectFail(bad, lse, "NaN");
  EXPECT_EQ(r.nonFinite, 1u);
  EXPECT_EQ(r.nanRow, 7);
  EXPECT_EQ(r.nanH, 2);
}

// An unwritten tail row (poison left in place): every element counted.
TEST_P(CompareTest, FlagsUnwrittenRow) {
  std::vector<uint16_t> bad = good;
  for (int64_t d = 0; d < s.headDimV; ++d)
    bad[at(1, 36, 1, d)] = kPoison16;
  CheckResult r = expectFail(bad, lse, "NaN");
  EXPECT_EQ(r.nonFinite, uint64_t(s.headDimV));
}

// Two swapped rows (a wrong row mapping).
TEST_P(CompareTest, FlagsSwappedRows) {
  std::vector<uint16_t> bad = good;
  for (int64_t d = 0; d < s.headDimV; ++d)
    std::swap(bad[at(0, 10, 0, d)], bad[at(0, 30, 0, d)]);
  expectFail(bad, lse, "");
}

// Writes into the row padding and past the end are counted.
TEST_P(CompareTest, CountsWritesOutsideO) {
  std::vector<uint16_t> bad = good;
  bad[size_t(3 * os.seq + s.qHeads * s.headDimV + 1)] = 0;
  bad[total - 1] = 0;
  EXPECT_EQ(countWritesOutside(s, os, bad.data(), total), 2u);
}

// LSE off by 2e-3, in base 2 (named in the message), NaN, +inf where the
// row sees no key.
TEST_P(CompareTest, FlagsLSEErrors) {
  // Rows 0..7 of every (batch, head) see no key here (LSE -inf): pick
  // finite ones.
  size_t finite1 = 0, finite2 = 0;
  for (size_t i = 0; i < lse.size(); ++i)
    if (std::isfinite(lse[i])) {
      if (!finite1)
        finite1 = i;
      else if (i > finite1 + 20) {
        finite2 = i;
        break;
      }
    }
  std::vector<float> badLse = lse;
  badLse[finite1] += 2e-3f;
  expectFail(good, badLse, "LSE max abs");

  badLse = lse;
  for (float &x : badLse)
    if (std::isfinite(x))
      x = float(double(x) * 1.4426950408889634);
  expectFail(good, badLse, "base-2 LSE");

  badLse = lse;
  badLse[finite2] = std::nanf("");
  expectFail(good, badLse, "LSE values are NaN");

  bool anyMasked = false;
  for (size_t i = 0; i < lse.size(); ++i)
    if (std::isinf(lse[i])) {
      anyMasked = true;
      badLse = lse;
      badLse[i] = std::numeric_limits<float>::infinity();
      break;
    }
  ASSERT_TRUE(anyMasked) << "the causal shape with seqQ > seqKV has masked "
                            "rows";
  expectFail(good, badLse, "have LSE != -inf");
}

// Rows that see no key must be exactly 0 in O.
TEST_P(CompareTest, FlagsNonZeroMaskedRow) {
  std::vector<uint16_t> bad = good;
  bad[at(0, 0, 0, 0)] = floatToHalf(dtype, 0.5f);
  expectFail(bad, lse, "differ by more than");
}

INSTANTIATE_TEST_SUITE_P(DTypes, CompareTest,
                         ::testing::Values(DType::BF16, DType::F16),
                         [](const ::testing::TestParamInfo<DType> &info) {
                           return std::string(toString(info.param));
                         });

// One output against another (--vs-first).
TEST(DiffOutputs, RelL2AndMaxAbs) {
  Shape s;
  s.batch = 2, s.seqQ = 3, s.qHeads = 2, s.headDimV = 4;
  Strides os;
  os.head = 4, os.seq = 2 * 4 + 3, os.batch = 3 * os.seq; // padded rows
  size_t n = size_t(s.batch * os.batch);
  std::vector<uint16_t> want(n, kPoison16), got;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t q = 0; q < s.seqQ; ++q)
      for (int64_t h = 0; h < s.qHeads; ++h)
        for (int64_t d = 0; d < 4; ++d)
          want[size_t(b * os.batch + q * os.seq + h * os.head + d)] =
              floatToBF16(d == 0 ? 2.0f : 0.0f);
  got = want;
  // Identical outputs: the NaN poison in the row padding is left out.
  OutputDiff same = diffOutputs(s, DType::BF16, got.data(), want.data(), os);
  EXPECT_EQ(same.relL2, 0);
  EXPECT_EQ(same.maxAbs, 0);
  // 12 rows of norm 2: ||want|| = sqrt(12 * 4); one element off by 0.5.
  got[size_t(os.batch + 2 * os.seq + os.head + 1)] = floatToBF16(0.5f);
  OutputDiff one = diffOutputs(s, DType::BF16, got.data(), want.data(), os);
  EXPECT_NEAR(one.relL2, 0.5 / std::sqrt(48.0), 1e-12);
  EXPECT_EQ(one.maxAbs, 0.5);
  // A NaN element makes both NaN.
  got[size_t(os.head + 3)] = kPoison16;
  OutputDiff nan = diffOutputs(s, DType::BF16, got.data(), want.data(), os);
  EXPECT_TRUE(std::isnan(nan.relL2));
  EXPECT_TRUE(std::isnan(nan.maxAbs));
}

//===----------------------------------------------------------------------===//
// BLASST skipping model against a brute-force implementation of the rules
//===----------------------------------------------------------------------===//

/// The vote rules written out directly: long double, the whole score matrix
/// (log2 domain, -inf where masked), per (b, h, CTA, group) a walk over the
/// blocks with the running max over kept blocks, then softmax (base 2) over
/// the kept visible keys of every row.
struct BruteSkip {
  std::vector<uint8_t> decisions; ///< [b][h][m][g][n]: 0 / kKept / kSkipped
  std::vector<int64_t> visited, skipped;
  std::vector<double> o, lse; ///< every row: [b][h][i]
};

BruteSkip bruteSkip(const Inputs &in, int64_t blockM, int64_t groupRows,
                    int64_t blockN, long double T) {
  const Shape &s = in.shape;
  const long double inf = std::numeric_limits<long double>::infinity();
  const long double log2e = 1.4426950408889634073599246810018921L;
  const int64_t mBlocks = (s.seqQ + blockM - 1) / blockM;
  const int64_t groups = (blockM + groupRows - 1) / groupRows;
  const int64_t kvBlocks = (s.seqKV + blockN - 1) / blockN;
  BruteSkip r;
  r.decisions.assign(size_t(s.batch * s.qHeads * mBlocks * groups * kvBlocks),
                     0);
  r.visited.assign(size_t(s.batch * s.qHeads), 0);
  r.skipped.assign(size_t(s.batch * s.qHeads), 0);
  r.o.assign(size_t(s.batch * s.qHeads * s.seqQ * s.headDimV), 0.0);
  r.lse.assign(size_t(s.batch * s.qHeads * s.seqQ),
               -std::numeric_limits<double>::infinity());
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.qHeads; ++h) {
      int64_t kh = h * s.kvHeads / s.qHeads;
      std::vector<std::vector<long double>> x(
          size_t(s.seqQ), std::vector<long double>(size_t(s.seqKV), -inf));
      for (int64_t i = 0; i < s.seqQ; ++i)
        for (int64_t j = 0; j < s.seqKV; ++j) {
          if (s.causal && j > i + s.seqKV - s.seqQ)
            continue;
          long double dot = 0;
          for (int64_t d = 0; d < s.headDim; ++d)
            dot += (long double)in.q[size_t(b * in.qs.batch + i * in.qs.seq +
                                            h * in.qs.head + d)] *
                   in.k[size_t(b * in.ks.batch + j * in.ks.seq +
                               kh * in.ks.head + d)];
          x[size_t(i)][size_t(j)] = dot * (long double)s.scale * log2e;
        }
      // kept[i][n]: whether row i's group kept block n.
      std::vector<std::vector<bool>> kept(
          size_t(s.seqQ), std::vector<bool>(size_t(kvBlocks), false));
      for (int64_t m = 0; m < mBlocks; ++m) {
        int64_t nBlocks = kvBlocks;
        if (s.causal) {
          int64_t lim = (m + 1) * blockM + s.seqKV - s.seqQ;
          if (lim < 0)
            lim = 0;
          nBlocks = std::min(nBlocks, (lim + blockN - 1) / blockN);
        }
        for (int64_t g = 0; g < groups; ++g) {
          std::vector<int64_t> voters;
          for (int64_t i = m * blockM + g * groupRows;
               i < m * blockM + (g + 1) * groupRows && i < (m + 1) * blockM;
               ++i)
            if (i < s.seqQ)
              voters.push_back(i);
          std::vector<long double> run(voters.size(), -inf);
          for (int64_t n = 0; n < nBlocks; ++n) {
            std::vector<long double> mb(voters.size(), -inf);
            for (size_t v = 0; v < voters.size(); ++v)
              for (int64_t j = n * blockN; j < (n + 1) * blockN && j < s.seqKV;
                   ++j)
                mb[v] = std::max(mb[v], x[size_t(voters[v])][size_t(j)]);
            bool skip = true; // vacuously true without voters
            for (size_t v = 0; v < voters.size(); ++v)
              if (!(mb[v] - run[v] < T))
                skip = false;
            if (!skip)
              for (size_t v = 0; v < voters.size(); ++v) {
                run[v] = std::max(run[v], mb[v]);
                kept[size_t(voters[v])][size_t(n)] = true;
              }
            size_t at = size_t(
                (((b * s.qHeads + h) * mBlocks + m) * groups + g) * kvBlocks +
                n);
            r.decisions[at] = skip ? kSkipped : kKept;
            r.visited[size_t(b * s.qHeads + h)] += 1;
            r.skipped[size_t(b * s.qHeads + h)] += skip;
          }
        }
      }
      for (int64_t i = 0; i < s.seqQ; ++i) {
        long double mx = -inf;
        for (int64_t j = 0; j < s.seqKV; ++j)
          if (kept[size_t(i)][size_t(j / blockN)])
            mx = std::max(mx, x[size_t(i)][size_t(j)]);
        if (mx == -inf)
          continue;
        long double l = 0;
        std::vector<long double> acc(size_t(s.headDimV), 0);
        for (int64_t j = 0; j < s.seqKV; ++j) {
          if (!kept[size_t(i)][size_t(j / blockN)] ||
              x[size_t(i)][size_t(j)] == -inf)
            continue;
          long double p = std::exp2(x[size_t(i)][size_t(j)] - mx);
          l += p;
          for (int64_t d = 0; d < s.headDimV; ++d)
            acc[size_t(d)] += p * in.v[size_t(b * in.vs.batch + j * in.vs.seq +
                                              kh * in.vs.head + d)];
        }
        size_t row = size_t((b * s.qHeads + h) * s.seqQ + i);
        for (int64_t d = 0; d < s.headDimV; ++d)
          r.o[row * size_t(s.headDimV) + size_t(d)] =
              double(acc[size_t(d)] / l);
        r.lse[row] = double((mx + std::log2(l)) / log2e);
      }
    }
  return r;
}

/// T as blasst-bench derives it: the kernel parameter from the spec's
/// policy (runtime's log2ThresholdForSpec), then the kernel-side formula.
double benchThreshold(const SparsityPolicy &policy, int64_t seqKV) {
  AttentionSpec spec;
  spec.sparsity = policy;
  return kernelLog2Threshold(policy, double(rt::log2ThresholdForSpec(spec)),
                             seqKV);
}

/// T from the policy's definition: lambda = a / seqKV or exp(ln_lambda).
long double definitionThreshold(const SparsityPolicy &policy, int64_t seqKV) {
  long double t = policy.kind == SparsityKind::ScaleFactor
                      ? std::log2((long double)policy.value / (long double)seqKV)
                      : (long double)policy.value / std::log(2.0L);
  // lambda = min(lambda, lambda_max).
  return std::min(t, std::log2((long double)policy.lambdaMax));
}

struct ModelCase {
  const char *what;
  Shape shape;
  int64_t blockM, groupRows, blockN;
  SparsityPolicy policy;
  Distribution dist;
  int64_t pad;
  double dialCold; ///< < 0: random inputs; else dial inputs with this F
};

Shape modelShape(int64_t b, int64_t sq, int64_t skv, int64_t hq, int64_t hkv,
                 int64_t d, bool causal, double scale) {
  return makeShape(b, sq, skv, hq, hkv, d, d, causal, scale);
}

const SparsityPolicy kLnL2{SparsityKind::LnLambda, -2.0};
const SparsityPolicy kLnL3{SparsityKind::LnLambda, -3.0};

const ModelCase kModelCases[] = {
    {"MHA, 8-row CTAs / 4-row groups, blockN 5",
     modelShape(2, 37, 37, 2, 2, 16, false, 1.0), 8, 4, 5, kLnL2,
     Distribution::Normal, 0, -1},
    {"causal GQA 4/2, seqQ < seqKV, tails, a=4",
     modelShape(1, 29, 41, 4, 2, 16, true, 0.8), 8, 4, 6,
     SparsityPolicy{SparsityKind::ScaleFactor, 4.0}, Distribution::Normal, 2,
     -1},
    {"causal seqQ > seqKV (masked rows, CTAs without blocks)",
     modelShape(1, 30, 12, 2, 1, 8, true, 1.0), 8, 4, 4,
     SparsityPolicy{SparsityKind::LnLambda, -1.5}, Distribution::Normal, 0, -1},
    {"kernel geometry 128/64, causal, seqQ 200 (CTA 1 partly votes)",
     modelShape(1, 200, 300, 2, 1, 16, true, 1.0), 128, 64, 64, kLnL3,
     Distribution::Normal, 0, -1},
    {"kernel geometry 128/64, non-causal MQA 3/1, seqQ 200",
     modelShape(1, 200, 300, 3, 1, 16, false, 1.0), 128, 64, 32,
     SparsityPolicy{SparsityKind::ScaleFactor, 8.0}, Distribution::Normal, 0,
     -1},
    {"seqQ 150: group 1 of CTA 1 has no voting row (vacuous skip)",
     modelShape(1, 150, 160, 2, 2, 8, false, 1.0), 128, 64, 32,
     SparsityPolicy{SparsityKind::ScaleFactor, 2.0}, Distribution::Normal, 0,
     -1},
    {"T > 0 (a = 64 > seqKV): running max over kept blocks only",
     modelShape(1, 24, 20, 2, 2, 8, false, 1.0), 8, 4, 4,
     SparsityPolicy{SparsityKind::ScaleFactor, 64.0}, Distribution::Normal, 0,
     -1},
    {"seqQ = 1 causal GQA", modelShape(2, 1, 50, 4, 1, 16, true, 1.0), 128, 64,
     8, kLnL2, Distribution::Normal, 0, -1},
    {"uniform inputs, a = 1 (few skips)",
     modelShape(1, 40, 64, 2, 1, 16, false, 0.25), 8, 4, 8,
     SparsityPolicy{SparsityKind::ScaleFactor, 1.0}, Distribution::Uniform, 0,
     -1},
    {"dial F=0.5 causal, 16-row CTAs, blockN 16",
     modelShape(1, 100, 160, 2, 1, 16, true, 1.0), 16, 8, 16, kLnL2,
     Distribution::Uniform, 0, 0.5},
    {"dial F=0.7 non-causal GQA, seqQ > seqKV",
     modelShape(2, 90, 70, 4, 2, 16, false, 0.5), 16, 8, 8, kLnL2,
     Distribution::Uniform, 1, 0.7},
};

// Per case and dtype, the model against the brute-force vote: every
// decision (up to borderline ones), the counters, O and LSE over the kept
// keys; 1 and 3 threads identical; the dense output computed alongside
// equals referenceAttention; a row subset gives the same rows and decisions.
// T comes from the policy the way blasst-bench derives it; the brute force
// takes it from the definition.
TEST(SkipModel, MatchesBruteForceVote) {
  for (const ModelCase &c : kModelCases)
    for (DType dtype : kDTypes) {
      SCOPED_TRACE(std::string(c.what) + " [" + toString(dtype) + "]");
      const Shape &s = c.shape;
      Inputs in;
      double T;
      long double Tbrute;
      if (c.dialCold >= 0) {
        DialConfig dc;
        dc.coldFraction = c.dialCold;
        dc.blockN = c.blockN;
        dc.sinkKeys = 8;
        dc.window = 8;
        DialInfo info;
        in = makeDialInputs(s, dtype, dc, 99, c.pad, &info);
        T = info.defaultLog2Threshold();
        Tbrute = T;
      } else {
        in = makeInputs(s, dtype, c.pad, 17, c.dist);
        T = benchThreshold(c.policy, s.seqKV);
        Tbrute = definitionThreshold(c.policy, s.seqKV);
      }
      SkipConfig cfg;
      cfg.blockM = c.blockM, cfg.groupRows = c.groupRows, cfg.blockN = c.blockN;
      cfg.log2Threshold = T;
      std::vector<int64_t> all = allRows(s);
      SkipModel model, model3;
      Reference dense;
      skipModelOf(in, all, cfg, 1, &model, &dense);
      skipModelOf(in, all, cfg, 3, &model3);
      BruteSkip brute = bruteSkip(in, c.blockM, c.groupRows, c.blockN, Tbrute);

      // Decisions.
      uint64_t mismatch = 0, mismatchBorder = 0, kept = 0, skipped = 0;
      ASSERT_EQ(model.decisions.size(), brute.decisions.size());
      for (size_t i = 0; i < model.decisions.size(); ++i) {
        uint8_t md = model.decisions[i] & ~kBorderline;
        kept += md == kKept;
        skipped += md == kSkipped;
        if (md != brute.decisions[i]) {
          if (model.decisions[i] & kBorderline)
            ++mismatchBorder;
          else
            ++mismatch;
        }
      }
      EXPECT_EQ(mismatch, 0u)
          << "non-borderline decision mismatches (" << kept << " kept, "
          << skipped << " skipped, " << model.totalBorderline << " borderline)";
      if (c.dist != Distribution::Uniform || c.dialCold >= 0) {
        EXPECT_GT(kept, 0u) << "wants both kept and skipped blocks";
        EXPECT_GT(skipped, 0u) << "wants both kept and skipped blocks";
      }
      // Counters.
      EXPECT_EQ(model.visited, brute.visited);
      ASSERT_EQ(model.skipped.size(), brute.skipped.size());
      for (size_t i = 0; i < brute.skipped.size(); ++i)
        EXPECT_LE(std::llabs(model.skipped[i] - brute.skipped[i]),
                  model.borderline[i])
            << "skipped counter of (batch, head) " << i;
      // Outputs (only meaningful when all decisions agree).
      double maxErr = 0;
      int lseBad = 0;
      for (int64_t b = 0; b < s.batch; ++b)
        for (int64_t h = 0; h < s.qHeads; ++h)
          for (int64_t i = 0; i < s.seqQ; ++i) {
            size_t r = model.out.index(s, b, h, size_t(i));
            size_t row = size_t((b * s.qHeads + h) * s.seqQ + i);
            for (int64_t d = 0; d < s.headDimV; ++d)
              maxErr = std::max(
                  maxErr,
                  std::fabs(model.out.o[r * size_t(s.headDimV) + size_t(d)] -
                            brute.o[row * size_t(s.headDimV) + size_t(d)]));
            double a = model.out.lse[r], e = brute.lse[row];
            if (std::isinf(e) || std::isinf(a))
              lseBad += !(a == e);
            else
              lseBad +=
                  !(std::fabs(a - e) <= 1e-10 * std::max(1.0, std::fabs(e)));
          }
      if (mismatchBorder == 0) {
        EXPECT_LE(maxErr, 1e-10) << "max |model - brute| over kept keys";
        EXPECT_EQ(lseBad, 0) << "LSE mismatches over kept keys";
      }
      // Thread independence.
      EXPECT_EQ(model3.decisions, model.decisions);
      EXPECT_EQ(model3.skipped, model.skipped);
      EXPECT_EQ(model3.out.o, model.out.o);
      EXPECT_EQ(model3.out.lse, model.out.lse);
      // The dense output computed alongside equals referenceAttention.
      Reference ref;
      referenceOf(in, all, 2, &ref);
      double denseErr = 0;
      bool denseLse = true;
      for (size_t i = 0; i < ref.o.size(); ++i)
        denseErr = std::max(denseErr, std::fabs(ref.o[i] - dense.o[i]));
      for (size_t i = 0; i < ref.lse.size(); ++i)
        denseLse &= ref.lse[i] == dense.lse[i] ||
                    std::fabs(ref.lse[i] - dense.lse[i]) <= 1e-12;
      EXPECT_LE(denseErr, 1e-12) << "dense alongside vs referenceAttention";
      EXPECT_TRUE(denseLse) << "dense LSE alongside vs referenceAttention";
      // A row subset gives the same rows and the same decisions.
      if (dtype == DType::BF16) {
        std::vector<int64_t> sub = selectRows(s.seqQ, 4);
        SkipModel subModel;
        skipModelOf(in, sub, cfg, 2, &subModel);
        EXPECT_EQ(subModel.decisions, model.decisions);
        bool same = true;
        for (int64_t b = 0; b < s.batch; ++b)
          for (int64_t h = 0; h < s.qHeads; ++h)
            for (size_t r = 0; r < sub.size(); ++r) {
              size_t a = subModel.out.index(s, b, h, r);
              size_t f = model.out.index(s, b, h, size_t(sub[r]));
              for (int64_t d = 0; d < s.headDimV; ++d)
                same &= subModel.out.o[a * size_t(s.headDimV) + size_t(d)] ==
                        model.out.o[f * size_t(s.headDimV) + size_t(d)];
            }
        EXPECT_TRUE(same) << "rows:4 subset";
      }
      // CTA 1, group 1 of the seqQ 150 case: rows 192..255, none < 150:
      // every block skipped.
      if (std::string(c.what).rfind("seqQ 150", 0) == 0)
        for (int64_t n = 0; n < model.nBlocksMax; ++n)
          EXPECT_EQ(
              model.decisions[model.decisionIndex(s.qHeads, 0, 0, 1, 1, n)] &
                  ~kBorderline,
              kSkipped)
              << "the group without voters skips block " << n;
    }
}

// With T = -inf nothing is skipped but the blocks of groups without a
// voting row (vacuously true vote), and the model is the dense reference;
// with empty groups 'keep' or 'idle' nothing is skipped at all.
TEST(SkipModel, InfiniteThresholdIsDense) {
  struct Case {
    const char *what;
    Shape shape;
    int64_t blockN;
  };
  auto shape = [](int64_t b, int64_t sq, int64_t skv, int64_t hq, int64_t hkv,
                  int64_t d, bool causal) {
    return modelShape(b, sq, skv, hq, hkv, d, causal, 0.9);
  };
  const Case cases[] = {
      {"non-causal GQA", shape(2, 150, 200, 4, 2, 16, false), 32},
      {"causal seqQ < seqKV", shape(1, 130, 300, 2, 1, 16, true), 64},
      {"causal seqQ > seqKV", shape(1, 300, 130, 2, 2, 8, true), 16},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.what);
    const Shape &s = c.shape;
    Inputs in = makeInputs(s, DType::BF16, 0, 5, Distribution::Normal);
    SkipConfig cfg;
    cfg.blockN = c.blockN;
    cfg.log2Threshold = -std::numeric_limits<double>::infinity();
    std::vector<int64_t> all = allRows(s);
    SkipModel model;
    Reference dense, ref;
    skipModelOf(in, all, cfg, 2, &model, &dense);
    referenceOf(in, all, 2, &ref);
    double err = 0;
    bool lseOk = true;
    for (size_t i = 0; i < ref.o.size(); ++i)
      err = std::max(err, std::fabs(ref.o[i] - model.out.o[i]));
    for (size_t i = 0; i < ref.lse.size(); ++i)
      lseOk &= ref.lse[i] == model.out.lse[i] ||
               std::fabs(ref.lse[i] - model.out.lse[i]) <= 1e-12;
    // Visited: 2 groups x blocks of every CTA.
    int64_t wantVisited = 0;
    for (int64_t m = 0; m < (s.seqQ + 127) / 128; ++m)
      wantVisited += 2 * ctaKVBlocks(s, cfg, m);
    wantVisited *= s.batch * s.qHeads;
    // Only the groups without a voting row (rows 192.. of the last CTA
    // here) skip.
    int64_t emptyWalks = 0;
    {
      int64_t m = (s.seqQ - 1) / 128;
      if (m * 128 + 64 >= s.seqQ)
        emptyWalks = ctaKVBlocks(s, cfg, m) * s.batch * s.qHeads;
    }
    EXPECT_GT(emptyWalks, 0);
    EXPECT_EQ(model.totalSkipped, emptyWalks);
    EXPECT_EQ(model.emptyGroupSkips, emptyWalks);
    EXPECT_EQ(model.totalBorderline, 0);
    EXPECT_EQ(model.totalVisited, wantVisited)
        << "visited = 2 groups x KV blocks per CTA";
    EXPECT_LE(err, 1e-12) << "model vs dense reference";
    EXPECT_TRUE(lseOk) << "model LSE vs dense reference";
    for (auto e :
         {SkipConfig::EmptyGroup::Keep, SkipConfig::EmptyGroup::Idle}) {
      SCOPED_TRACE(std::string("empty groups '") + toString(e) + "'");
      SkipConfig c2 = cfg;
      c2.emptyGroup = e;
      SkipModel m2;
      skipModelOf(in, all, c2, 2, &m2);
      int64_t wantV =
          wantVisited - (e == SkipConfig::EmptyGroup::Idle ? emptyWalks : 0);
      EXPECT_EQ(m2.totalSkipped, 0);
      EXPECT_EQ(m2.totalVisited, wantV);
      EXPECT_EQ(m2.out.o, model.out.o);
    }
  }
}

// nBlocks of causal CTAs (bottom-right): seqQ 300, seqKV 130, blockN 16:
// CTA 0 rows 0..127 see keys <= 127 - 170 < 0: nothing; CTA 1 rows ..255
// see keys <= 85: 86 keys = 6 blocks; CTA 2: all 130 = 9 blocks.
TEST(SkipModel, CausalCTABlockCounts) {
  Shape s = modelShape(1, 300, 130, 2, 2, 8, true, 0.9);
  SkipConfig cfg;
  cfg.blockN = 16;
  EXPECT_EQ(ctaKVBlocks(s, cfg, 0), 0);
  EXPECT_EQ(ctaKVBlocks(s, cfg, 1), 6);
  EXPECT_EQ(ctaKVBlocks(s, cfg, 2), 9);
}

/// One row, keys scoring exactly 0, -3, -5 (log2 units), one-key blocks.
SkipModel oneRowModel(double T) {
  Shape s;
  s.seqQ = 1, s.seqKV = 3, s.headDim = s.headDimV = 1;
  s.scale = std::log(2.0); // x = q.k * ln2 * log2e = q.k
  Strides st = Strides::contiguous(3, 1, 1);
  std::vector<float> q = {1.0f}, k = {0.0f, -3.0f, -5.0f}, v = {1, 2, 3};
  SkipConfig cfg;
  cfg.blockM = 1, cfg.groupRows = 1, cfg.blockN = 1;
  cfg.log2Threshold = T;
  SkipModel m;
  skipModelAttention(s, q.data(), Strides::contiguous(1, 1, 1), k.data(), st,
                     v.data(), st, {0}, cfg, 1, &m);
  return m;
}

// A skip with a row 0.005 below T is borderline, 2 below is not; a keep
// with every keeper within 0.01 of T is; skipped blocks contribute nothing;
// T = +inf still keeps block 0 (m_run = -inf gives +inf).
TEST(SkipModel, BorderlineDecisions) {
  SkipModel a = oneRowModel(-2.995);
  EXPECT_EQ(a.decisions,
            std::vector<uint8_t>({kKept, kSkipped | kBorderline, kSkipped}));
  EXPECT_EQ(a.totalBorderline, 1);
  EXPECT_EQ(a.totalSkipped, 2);

  SkipModel b = oneRowModel(-5.005);
  EXPECT_EQ(b.decisions,
            std::vector<uint8_t>({kKept, kKept, kKept | kBorderline}));

  SkipModel c = oneRowModel(-2.0);
  EXPECT_EQ(c.decisions, std::vector<uint8_t>({kKept, kSkipped, kSkipped}));
  EXPECT_LT(std::fabs(c.out.o[0] - 1.0), 1e-15);
  EXPECT_LT(std::fabs(c.out.lse[0]), 1e-15);

  SkipModel d = oneRowModel(std::numeric_limits<double>::infinity());
  EXPECT_EQ(d.decisions, std::vector<uint8_t>({kKept, kSkipped, kSkipped}));
}

// T from a policy and ABI parameter 12, and back.
TEST(SkipModel, ThresholdFormulas) {
  SparsityPolicy a{SparsityKind::ScaleFactor, 256.0};
  SparsityPolicy l{SparsityKind::LnLambda, -8.0};
  EXPECT_NEAR(benchThreshold(a, 4096), 8.0 - 12.0, 1e-6)
      << "a=256, seqKV 4096: T = log2(256/4096) = -4";
  EXPECT_NEAR(benchThreshold(l, 4096), -8.0 / std::log(2.0), 1e-5)
      << "ln_lambda=-8: T = -8 log2(e), independent of seqKV";
  // --log2-threshold X: an a-policy subtracts log2(seqKV), ln_lambda not.
  EXPECT_NEAR(kernelLog2Threshold(a, 1.5, 1024), 1.5 - 10, 1e-12);
  EXPECT_EQ(kernelLog2Threshold(l, -1.5, 1024), -1.5);
  EXPECT_EQ(kernelLog2Threshold(l, 1.5, 1024), 0.0)
      << "a run-time threshold above lambda_max = 1 is capped";
  EXPECT_NEAR(
      kernelLog2Threshold(a, paramForKernelLog2Threshold(a, -7.0, 3000), 3000),
      -7.0, 1e-12)
      << "paramForKernelLog2Threshold inverts kernelLog2Threshold";
  double nanT = kernelLog2Threshold(l, std::nan(""), 1024);
  EXPECT_TRUE(std::isinf(nanT) && nanT < 0)
      << "a NaN run-time threshold skips nothing (the kernel's select)";
  nanT = kernelLog2Threshold(a, std::nan(""), 1024);
  EXPECT_TRUE(std::isinf(nanT) && nanT < 0);
  double dense = kernelLog2Threshold(SparsityPolicy(), 0, 10);
  EXPECT_TRUE(std::isinf(dense) && dense < 0) << "dense policy: T = -inf";
}

// lambda = a / L_kv above lambda_max is capped, per sequence: a block whose
// maximum exceeds the running maximum (the one that dominates the softmax)
// is never skipped, however short the sequence.
TEST(SkipModel, LambdaCapKeepsTheBlockThatRaisesTheMax) {
  SparsityPolicy a{SparsityKind::ScaleFactor, 4096.0};
  // L_kv = 32 < a: lambda = 128 uncapped (T = 7), 1 capped (T = 0).
  EXPECT_EQ(kernelLog2Threshold(a, std::log2(4096.0), 32), 0.0);
  EXPECT_NEAR(kernelLog2Threshold(a, std::log2(4096.0), 8192), -1.0, 1e-12)
      << "L_kv > a: lambda = a / L_kv = 0.5, below the cap";
  SparsityPolicy half = a;
  half.lambdaMax = 0.5;
  EXPECT_NEAR(kernelLog2Threshold(half, std::log2(4096.0), 32), -1.0, 1e-12)
      << "lambda_max = 0.5: T = -1";

  // Two KV blocks of 16 keys; every query row scores block 0's keys 0 and
  // block 1's keys 1 (log2 units): block 1 raises the running max by 1.
  Shape s = modelShape(1, 8, 32, 1, 1, 16, false, 1.0);
  Inputs in = makeInputs(s, DType::BF16, 0, 3, Distribution::Normal);
  std::fill(in.q.begin(), in.q.end(), 0.0f);
  std::fill(in.k.begin(), in.k.end(), 0.0f);
  for (int64_t i = 0; i < s.seqQ; ++i)
    in.q[size_t(i * in.qs.seq)] = 1.0f;
  for (int64_t j = 16; j < 32; ++j)
    in.k[size_t(j * in.ks.seq)] = float(std::log(2.0)); // 1 in log2 units
  SkipConfig cfg;
  cfg.blockM = 8, cfg.groupRows = 8, cfg.blockN = 16;
  for (auto [T, kept] : {std::make_pair(7.0, false), std::make_pair(0.0, true)}) {
    cfg.log2Threshold = T;
    SkipModel model;
    skipModelOf(in, allRows(s), cfg, 1, &model);
    uint8_t d = model.decisions[model.decisionIndex(1, 0, 0, 0, 0, 1)];
    EXPECT_EQ((d & ~kBorderline) == kKept, kept)
        << "T = " << T << ": block 1 (max 1 above the running max) is "
        << (kept ? "kept" : "skipped, the uncapped lambda = 128's error");
  }
  cfg.log2Threshold = kernelLog2Threshold(a, std::log2(4096.0), s.seqKV);
  SkipModel capped;
  skipModelOf(in, allRows(s), cfg, 1, &capped);
  EXPECT_EQ(capped.totalSkipped, 0) << "with the cap nothing here is skipped";
}

//===----------------------------------------------------------------------===//
// The kernel's counters and output against the model
//===----------------------------------------------------------------------===//

std::vector<int64_t>
statsOf(const std::vector<std::pair<int64_t, int64_t>> &entries) {
  std::vector<int64_t> out;
  for (const auto &p : entries)
    out.push_back(p.first), out.push_back(p.second);
  return out;
}

// visited must equal the model; skipped may differ by at most the
// (batch, head)'s borderline count; failures name the (batch, head).
TEST(CompareStats, CountersAgainstTheModel) {
  Shape s;
  s.batch = 2, s.qHeads = 3, s.kvHeads = 1;
  SkipModel m;
  m.visited = {10, 10, 10, 20, 20, 20};
  m.skipped = {3, 0, 5, 7, 0, 1};
  m.borderline = {0, 0, 2, 0, 1, 0};

  std::vector<int64_t> exact =
      statsOf({{10, 3}, {10, 0}, {10, 5}, {20, 7}, {20, 0}, {20, 1}});
  StatsCheck c = compareStats(s, m, exact.data());
  EXPECT_TRUE(c.pass);
  EXPECT_EQ(c.kernelVisited, 90);
  EXPECT_EQ(c.kernelSkipped, 16);

  std::vector<int64_t> within =
      statsOf({{10, 3}, {10, 0}, {10, 7}, {20, 7}, {20, 1}, {20, 1}});
  c = compareStats(s, m, within.data());
  EXPECT_TRUE(c.pass) << "off by <= the borderline count";
  EXPECT_EQ(c.skippedWithin, 2u);

  std::vector<int64_t> beyond =
      statsOf({{10, 3}, {10, 1}, {10, 5}, {20, 7}, {20, 0}, {20, 1}});
  c = compareStats(s, m, beyond.data());
  EXPECT_FALSE(c.pass) << "off by 1 without borderline decisions";
  EXPECT_EQ(c.skippedBeyond, 1u);
  ASSERT_FALSE(c.failures.empty());
  EXPECT_NE(c.failures[0].find("[b=0, h=1]"), std::string::npos)
      << c.failures[0];

  std::vector<int64_t> visited =
      statsOf({{10, 3}, {10, 0}, {10, 5}, {20, 7}, {21, 0}, {20, 1}});
  c = compareStats(s, m, visited.data());
  EXPECT_FALSE(c.pass) << "visited is exact";
  EXPECT_EQ(c.visitedMismatch, 1u);
}

// After a failed O check: leaving out the rows of groups with a borderline
// decision passes when only those rows differ, and still fails otherwise.
TEST(CompareWithModel, RecheckWithoutBorderline) {
  Shape s = modelShape(1, 8, 8, 1, 1, 4, false, 1.0);
  Inputs in = makeInputs(s, DType::BF16, 0, 3, Distribution::Normal);
  SkipConfig cfg;
  cfg.blockM = 4, cfg.groupRows = 2, cfg.blockN = 4;
  cfg.log2Threshold = -1.0;
  SkipModel model;
  skipModelOf(in, allRows(s), cfg, 1, &model);
  // Mark one decision of CTA 1, group 0 (rows 4, 5) borderline.
  model.decisions[model.decisionIndex(s.qHeads, 0, 0, 1, 0, 1)] |= kBorderline;
  Strides os = Strides::contiguous(s.seqQ, s.qHeads, s.headDimV);
  std::vector<uint16_t> o(size_t(s.seqQ * s.headDimV));
  std::vector<float> lse(size_t(s.seqQ));
  for (int64_t i = 0; i < s.seqQ; ++i) {
    for (int64_t d = 0; d < s.headDimV; ++d)
      o[size_t(i * os.seq + d)] =
          floatToBF16(float(model.out.o[size_t(i * s.headDimV + d)]));
    lse[size_t(i)] = float(model.out.lse[size_t(i)]);
  }
  std::vector<uint16_t> bad = o;
  bad[size_t(5 * os.seq + 2)] = floatToBF16(7.0f); // row 5: borderline
  ASSERT_FALSE(compareOutputs(s, DType::BF16, model.out, bad.data(), os,
                              lse.data(), tolerancesFor(DType::BF16))
                   .pass);
  BorderlineRecheck r = recheckWithoutBorderline(s, DType::BF16, model,
                                                 bad.data(), os, lse.data());
  EXPECT_EQ(r.rows, 2u);
  EXPECT_TRUE(r.pass);
  bad[size_t(1 * os.seq + 0)] = floatToBF16(-7.0f); // row 1: not borderline
  r = recheckWithoutBorderline(s, DType::BF16, model, bad.data(), os,
                               lse.data());
  EXPECT_EQ(r.rows, 2u);
  EXPECT_FALSE(r.pass);
}

//===----------------------------------------------------------------------===//
// The sparsity dial
//===----------------------------------------------------------------------===//

// The cold fraction over 2032 blocks is within 4 sigma of F.
TEST(Dial, ColdFraction) {
  Shape s = makeShape(4, 1, 8192, 4, 4, 64, 64, false, 0.125);
  for (double F : {0.0, 0.1, 0.5, 0.9, 1.0}) {
    DialConfig dc;
    dc.coldFraction = F;
    dc.blockN = 64;
    DialInfo info;
    makeDialInputs(s, DType::BF16, dc, 3, 0, &info);
    double tol = 4 * std::sqrt(F * (1 - F) / double(info.eligibleBlocks));
    EXPECT_EQ(info.eligibleBlocks, 16 * 127);
    EXPECT_LE(std::fabs(info.coldFraction() - F), tol) << "F = " << F;
  }
}

// --dial-even: every run of k eligible blocks of a (batch, kv head) holds
// k F rounded down or up cold blocks.
TEST(Dial, EvenSpacing) {
  Shape s = makeShape(2, 1, 8192, 4, 4, 64, 64, false, 0.125);
  for (double F : {0.0, 0.3, 0.7, 1.0}) {
    DialConfig dc;
    dc.coldFraction = F;
    dc.blockN = 64;
    dc.even = true;
    DialInfo info;
    makeDialInputs(s, DType::BF16, dc, 5, 0, &info);
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t kh = 0; kh < 4; ++kh)
        for (int64_t k : {int64_t(10), int64_t(16), int64_t(127)})
          for (int64_t first = 1; first + k <= 128; first += 13) {
            int64_t cold = 0;
            for (int64_t n = first; n < first + k; ++n)
              cold += info.isCold(b, kh, n);
            EXPECT_GE(double(cold), std::floor(double(k) * F)) << F;
            EXPECT_LE(double(cold), std::ceil(double(k) * F)) << F;
          }
  }
}

// --dial-runs: the cold fraction stays F and warm blocks come in runs of
// about L blocks (independent draws: 1 / F blocks at F = 0.7).
TEST(Dial, WarmRuns) {
  Shape s = makeShape(2, 1, 65536, 4, 4, 64, 64, false, 0.125);
  for (double L : {4.0, 8.0}) {
    DialConfig dc;
    dc.coldFraction = 0.7;
    dc.blockN = 64;
    dc.runLength = L;
    DialInfo info;
    makeDialInputs(s, DType::BF16, dc, 5, 0, &info);
    EXPECT_NEAR(info.coldFraction(), 0.7, 0.03) << L;
    int64_t runs = 0, warm = 0;
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t kh = 0; kh < 4; ++kh)
        for (int64_t n = 1; n < info.kvBlocks; ++n) {
          bool w = !info.isCold(b, kh, n);
          warm += w;
          runs += w && (n == 1 || info.isCold(b, kh, n - 1));
        }
    EXPECT_NEAR(double(warm) / double(runs), L, 0.15 * L) << L;
  }
}

// Interleaved KV splits: every block in exactly one split, in order, in
// chunks of C taken in turn; chunk 0 is decodeSplitBlocks' contiguous run.
TEST(SkipModelDecode, SplitBlockLists) {
  EXPECT_EQ(decodeSplitBlockList(10, 3, 1, 0),
            (std::vector<int64_t>{0, 3, 6, 9}));
  EXPECT_EQ(decodeSplitBlockList(10, 3, 4, 2), (std::vector<int64_t>{8, 9}));
  EXPECT_EQ(decodeSplitBlockList(10, 3, 0, 1),
            (std::vector<int64_t>{4, 5, 6, 7}));
  EXPECT_TRUE(decodeSplitBlockList(2, 3, 1, 2).empty());
  for (int64_t blocks : {1, 7, 64, 1001})
    for (int64_t splits : {1, 3, 16})
      for (int64_t chunk : {0, 1, 2, 5}) {
        std::vector<int> seen(size_t(blocks), 0);
        for (int64_t sp = 0; sp < splits; ++sp) {
          std::vector<int64_t> l =
              decodeSplitBlockList(blocks, splits, chunk, sp);
          EXPECT_TRUE(std::is_sorted(l.begin(), l.end()));
          for (int64_t n : l)
            ++seen[size_t(n)];
        }
        EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), blocks)
            << blocks << " " << splits << " " << chunk;
      }
}

// balanced_splits: per = ceil(W / C) over every tile's blocks, each
// sequence's tiles take max(1, ceil(U_b / per)) splits (at most C + tiles
// CTAs in all); at one length that is the split grid of C / tiles splits,
// whose decisions the model then reproduces.
TEST(SkipModelDecode, BalancedSplitsFollowTheLengths) {
  Shape s = makeShape(3, 1, 4096, 8, 2, 64, 64, false, 0.125);
  SkipConfig cfg;
  cfg.blockM = 64;
  cfg.blockN = 64;
  cfg.qGroup = 4;
  cfg.kvLengths = {4096, 100, 0};
  cfg.kvSplits = 5;
  EXPECT_EQ(decodeSequenceSplits(s, cfg, 0), 5);
  EXPECT_EQ(decodeSequenceSplits(s, cfg, 2), 5);
  // W = 2 tiles x (64 + 2 + 0) blocks, C = 12: per = 11.
  cfg.balancedBudget = 12;
  EXPECT_EQ(decodeSequenceSplits(s, cfg, 0), 6);
  EXPECT_EQ(decodeSequenceSplits(s, cfg, 1), 1);
  EXPECT_EQ(decodeSequenceSplits(s, cfg, 2), 1);
  int64_t ctas = 0;
  for (int64_t b = 0; b < s.batch; ++b)
    ctas += s.kvHeads * decodeSequenceSplits(s, cfg, b);
  EXPECT_LE(ctas, cfg.balancedBudget + s.batch * s.kvHeads);
  // A budget below the tiles: one split each.
  cfg.balancedBudget = 1;
  EXPECT_EQ(decodeSequenceSplits(s, cfg, 0), 1);

  Shape one = makeShape(1, 1, 4096, 8, 2, 64, 64, false, 0.125);
  DialConfig dc;
  dc.coldFraction = 0.7;
  dc.blockN = 64;
  DialInfo info;
  Inputs in = makeDialInputs(one, DType::BF16, dc, 5, 0, &info);
  SkipConfig c;
  c.blockM = 64;
  c.blockN = 64;
  c.qGroup = 4;
  c.sinkSeed = c.voteFirstBlock = true;
  c.log2Threshold = info.defaultLog2Threshold();
  c.kvSplits = 6;
  SkipModel grid, balanced;
  skipModelOf(in, allRows(one), c, 2, &grid);
  c.kvSplits = 1;
  c.balancedBudget = 2 * 6; // per = ceil(128 / 12) = 11: 6 splits a tile
  EXPECT_EQ(decodeSequenceSplits(one, c, 0), 6);
  skipModelOf(in, allRows(one), c, 2, &balanced);
  EXPECT_GT(grid.totalSkipped, 0);
  EXPECT_EQ(balanced.decisions, grid.decisions);
}

// The kernel's side of balanced_splits (KernelLowering::emitBalancedSplit),
// step for step: CTA c sums the tiles' blocks, takes per, walks the
// sequences' spans to its own, and takes tile (c - prefix) / s and split
// (c - prefix) % s; CTAs past the spans return. Over random batches and
// budgets: every CTA below the spans has one (tile, split), the tile's
// splits are consecutive CTAs (the merge folds slots first .. first + s - 1),
// every tile's blocks are walked once, the split counts are the model's, and
// at most C + tiles CTAs take part.
TEST(SkipModelDecode, BalancedSplitsKernelMapping) {
  std::mt19937 rng(33);
  for (int trial = 0; trial < 300; ++trial) {
    const int64_t batch = 1 + int64_t(rng() % 40), kvHeads = 1 + rng() % 8;
    const int64_t seqQ = 1 + int64_t(rng() % 8), blockN = 64, qGroup = 4;
    const int64_t bound = 1 + int64_t(rng() % 200000);
    Shape s = makeShape(batch, seqQ, bound, kvHeads * qGroup, kvHeads, 128, 128,
                        false, 0.088);
    SkipConfig cfg;
    cfg.blockM = 64;
    cfg.blockN = blockN;
    cfg.qGroup = qGroup;
    for (int64_t b = 0; b < batch; ++b)
      cfg.kvLengths.push_back(rng() % 4 == 0 ? 0
                                             : int64_t(rng() % (bound + 1)));
    const int64_t qTiles = decodeTiles(s, cfg), perBatch = qTiles * kvHeads;
    const int64_t tiles = batch * perBatch;
    cfg.balancedBudget = 1 + int64_t(rng() % (4 * tiles + 300));
    auto blocksOf = [&](int64_t b) {
      return (cfg.kvLengths[size_t(b)] + blockN - 1) / blockN;
    };
    // The kernel, for every CTA of the grid (C + tiles).
    int64_t w = 0;
    for (int64_t b = 0; b < batch; ++b)
      w += blocksOf(b);
    const int64_t per = std::max<int64_t>(
        1, (perBatch * w + cfg.balancedBudget - 1) / cfg.balancedBudget);
    std::vector<int64_t> firstOf(size_t(tiles), -1), countOf(size_t(tiles), 0);
    std::vector<std::vector<int>> walked(static_cast<size_t>(tiles));
    int64_t used = 0;
    for (int64_t c = 0; c < cfg.balancedBudget + tiles; ++c) {
      int64_t prefix = 0, found = batch, at = 0, splits = 1;
      for (int64_t b = 0; b < batch; ++b) {
        int64_t sb = std::max<int64_t>(1, (blocksOf(b) + per - 1) / per);
        int64_t next = prefix + perBatch * sb;
        if (found == batch && c < next) {
          found = b;
          at = prefix;
          splits = sb;
        }
        prefix = next;
      }
      used = prefix;
      if (c >= used)
        continue; // returns
      const int64_t in = c - at, tile = found * perBatch + in / splits;
      const int64_t split = in % splits;
      ASSERT_EQ(splits, decodeSequenceSplits(s, cfg, found));
      if (split == 0)
        firstOf[size_t(tile)] = c;
      EXPECT_EQ(c - split, firstOf[size_t(tile)]) << "consecutive slots";
      ++countOf[size_t(tile)];
      Shape sb = s;
      sb.seqKV = cfg.kvLengthOf(found, s.seqKV);
      const int64_t nB = decodeTileKVBlocks(sb, cfg, (in / splits) % qTiles);
      walked[size_t(tile)].resize(size_t(nB), 0);
      for (int64_t n : decodeSplitBlockList(nB, splits, 0, split))
        ++walked[size_t(tile)][size_t(n)];
    }
    EXPECT_LE(used, cfg.balancedBudget + tiles);
    for (int64_t t = 0; t < tiles; ++t) {
      EXPECT_EQ(countOf[size_t(t)], decodeSequenceSplits(s, cfg, t / perBatch));
      for (int v : walked[size_t(t)])
        EXPECT_EQ(v, 1) << "tile " << t;
    }
  }
}

// H = 12 with |q|, |k| <= 8 at the supported head dims, and the inputs do
// not depend on the thread count.
TEST(Dial, MagnitudesAndDeterminism) {
  for (int64_t D : {64, 128, 256}) {
    SCOPED_TRACE("head_dim " + std::to_string(D));
    Shape s =
        makeShape(1, 256, 1024, 2, 1, D, D, false, 1 / std::sqrt(double(D)));
    DialConfig dc;
    dc.coldFraction = 0.5;
    DialInfo info, info2;
    Inputs a = makeDialInputs(s, DType::BF16, dc, 8, 0, &info, 1);
    Inputs b = makeDialInputs(s, DType::BF16, dc, 8, 0, &info2, 3);
    EXPECT_EQ(info.hot, 12);
    EXPECT_LE(info.maxAbsQ, 8);
    EXPECT_LE(info.maxAbsK, 8);
    EXPECT_EQ(a.qBits, b.qBits);
    EXPECT_EQ(a.kBits, b.kBits);
  }
}

// With the default threshold the model skips exactly the cold blocks
// outside every voting row's local window (plus blocks no voter sees a key
// of and groups without voters), none borderline; the cold skips stay
// below the walked cold fraction.
TEST(Dial, ModelSkipsColdBlocksOutsideTheWindow) {
  for (bool causal : {true, false})
    for (int64_t sq : {1024, 700}) {
      SCOPED_TRACE(std::string(causal ? "causal" : "non-causal") + " seqQ " +
                   std::to_string(sq));
      Shape s = makeShape(2, sq, 1024, 4, 2, 64, 64, causal, 0.125);
      DialConfig dc;
      dc.coldFraction = 0.5;
      dc.blockN = 64;
      DialInfo info;
      Inputs in = makeDialInputs(s, DType::BF16, dc, 21, 0, &info);
      SkipConfig cfg;
      cfg.blockN = 64;
      cfg.log2Threshold = info.defaultLog2Threshold();
      SkipModel model;
      skipModelOf(in, {}, cfg, 2, &model);
      uint64_t wrong = 0, coldSkipped = 0, windowKept = 0;
      int64_t scoreSkips = 0;
      std::string first;
      for (int64_t b = 0; b < s.batch; ++b)
        for (int64_t h = 0; h < s.qHeads; ++h)
          for (int64_t m = 0; m < model.mBlocks; ++m)
            for (int64_t g = 0; g < model.groups; ++g) {
              int64_t g0 = m * 128 + g * 64, g1 = std::min(g0 + 64, s.seqQ);
              for (int64_t n = 0; n < ctaKVBlocks(s, cfg, m); ++n) {
                bool touched = false;
                for (int64_t r = g0; r < g1 && !touched; ++r) {
                  int64_t vis = s.visibleKeys(r);
                  for (int64_t j = n * 64; j < std::min(vis, n * 64 + 64); ++j)
                    if (info.windowFactor(r + s.seqKV - s.seqQ, j) == 1) {
                      touched = true;
                      break;
                    }
                }
                bool anyVisible = false;
                for (int64_t r = g0; r < g1; ++r)
                  anyVisible |= s.visibleKeys(r) > n * 64;
                bool cold = info.isCold(b, h / 2, n);
                // Groups without voters and blocks no voter sees a key of
                // skip whatever the scores.
                bool expectSkip = g1 <= g0 || !anyVisible || (cold && !touched);
                bool scoreSkip = g1 > g0 && anyVisible && cold && !touched;
                scoreSkips += scoreSkip;
                uint8_t d = model.decisions[model.decisionIndex(s.qHeads, b, h,
                                                                m, g, n)];
                bool skip = (d & ~kBorderline) == kSkipped;
                coldSkipped += cold && skip;
                windowKept += cold && touched && !skip;
                if (skip != expectSkip && wrong++ == 0)
                  first = "b " + std::to_string(b) + " h " + std::to_string(h) +
                          " cta " + std::to_string(m) + " group " +
                          std::to_string(g) + " block " + std::to_string(n) +
                          (cold ? " cold" : " warm") +
                          (touched ? " in window" : "");
              }
            }
      EXPECT_EQ(wrong, 0u) << "unexpected decisions, first: " << first;
      EXPECT_EQ(model.totalBorderline, 0);
      EXPECT_GT(coldSkipped, 0u);
      EXPECT_GT(windowKept, 0u);
      EXPECT_EQ(model.totalSkipped,
                scoreSkips + model.maskedSkips + model.emptyGroupSkips)
          << "skips = cold + masked (" << model.maskedSkips
          << ") + empty-group (" << model.emptyGroupSkips << ")";
      double walkedCold = dialWalkedColdFraction(s, cfg, info);
      double coldRate = double(scoreSkips) / double(model.totalVisited);
      EXPECT_LE(coldRate, walkedCold + 1e-12)
          << "cold skips of walks <= the walked cold fraction";
    }
}

} // namespace

//===----------------------------------------------------------------------===//
// The online softmax with FA4's conditional rescale (sm_100a dense kernels)
//===----------------------------------------------------------------------===//

// A model of the sm_100a softmax/correction arithmetic in float, per row and
// KV block of 128 keys in the log2 domain: the row keeps its max while the
// block max exceeds it by at most 8, then the factor is exactly 1 and O is
// left alone; otherwise the usual rescale. Checked against the definition
// in long double: O / l and the LSE agree to float rounding, every
// exponential stays <= 256, and both paths are taken. (The algorithm, not
// the kernel: no B200 runs it here.)
TEST(ConditionalRescale, FinalNormalisationIsExact) {
  const int kKeys = 4096, kBlock = 128, kDim = 8;
  uint32_t state = 12345;
  auto uniform = [&] {
    state = state * 1664525u + 1013904223u;
    return float(state >> 8) / float(1u << 24);
  };
  int kept = 0, rescaled = 0;
  for (int row = 0; row < 16; ++row) {
    // Scores (already scaled to log2 units) that drift upwards: small
    // growths keep the max, occasional jumps rescale.
    std::vector<float> s(kKeys), v(size_t(kKeys) * kDim);
    for (int j = 0; j < kKeys; ++j)
      s[size_t(j)] = 6.0f * uniform() + 0.01f * float(j) * float(row % 4) +
                     (uniform() < 0.002f ? 12.0f : 0.0f);
    for (float &x : v)
      x = 2.0f * uniform() - 1.0f;

    float m = -INFINITY, l = 0.0f, maxP = 0.0f;
    std::vector<float> o(kDim, 0.0f);
    for (int b0 = 0; b0 < kKeys; b0 += kBlock) {
      float mb = -INFINITY;
      for (int j = b0; j < b0 + kBlock; ++j)
        mb = std::max(mb, s[size_t(j)]);
      float mNew = std::max(m, mb);
      bool keep = mNew - m <= 8.0f; // false for m = -inf
      if (keep)
        mNew = m;
      float factor = keep ? 1.0f : std::exp2(m - mNew);
      (keep ? kept : rescaled) += b0 > 0;
      if (factor != 1.0f)
        for (float &x : o)
          x *= factor;
      l *= factor;
      m = mNew;
      for (int j = b0; j < b0 + kBlock; ++j) {
        float p = std::exp2(s[size_t(j)] - m);
        maxP = std::max(maxP, p);
        l += p;
        for (int d = 0; d < kDim; ++d)
          o[size_t(d)] += p * v[size_t(j) * kDim + size_t(d)];
      }
    }
    EXPECT_LE(maxP, 256.0f);

    long double mx = -INFINITY, sum = 0;
    for (float x : s)
      mx = std::max<long double>(mx, x);
    std::vector<long double> ref(kDim, 0);
    for (int j = 0; j < kKeys; ++j) {
      long double p = std::exp2(static_cast<long double>(s[size_t(j)]) - mx);
      sum += p;
      for (int d = 0; d < kDim; ++d)
        ref[size_t(d)] += p * v[size_t(j) * kDim + size_t(d)];
    }
    for (int d = 0; d < kDim; ++d)
      EXPECT_NEAR(o[size_t(d)] / l, double(ref[size_t(d)] / sum), 2e-5)
          << "row " << row << " column " << d;
    EXPECT_NEAR(m + std::log2(l), double(mx + std::log2(sum)), 1e-5);
  }
  EXPECT_GT(kept, 0);
  EXPECT_GT(rescaled, 0);
}

// Decode (SkipConfig::qGroup): the model against a brute-force walk written
// from the rules: a tile of 64 rows holds floor(64 / G) tokens of the G q
// heads of one KV head and votes as one (tokens >= seqQ and the padding rows
// past G x floor(64 / G) abstain); each of the
// kvSplits runs of the tile's blocks starts with a fresh running max (its
// first block kept); every q head of the tile counts the tile's blocks.
TEST(SkipModel, DecodeMatchesBruteForce) {
  struct Case {
    int64_t seqQ, seqKV, qHeads, kvHeads, splits;
    bool causal;
  };
  // The last four: G not dividing the tile (G = 3, 7, 6, 21), floor(64 / G)
  // tokens per tile, the last 64 mod G rows padding.
  const Case cases[] = {{1, 700, 8, 2, 1, false},  {3, 700, 8, 2, 3, true},
                        {8, 513, 32, 8, 4, true},  {2, 300, 32, 1, 4, false},
                        {8, 300, 64, 1, 2, true},  {4, 640, 4, 4, 5, false},
                        {5, 700, 9, 3, 3, true},   {8, 513, 28, 4, 2, true},
                        {4, 640, 12, 2, 4, false}, {8, 300, 21, 1, 2, true}};
  // Without and with the sink seed (each split's running max starts from
  // block 0's row maxima), and with it each split's first block voted on
  // too (voteFirst).
  for (auto [seed, voteFirst] :
       {std::pair{false, false}, std::pair{true, false}, std::pair{true, true}})
    for (const Case &c : cases) {
      SCOPED_TRACE("seqQ " + std::to_string(c.seqQ) + " seqKV " +
                   std::to_string(c.seqKV) + " heads " +
                   std::to_string(c.qHeads) + "/" + std::to_string(c.kvHeads) +
                   " splits " + std::to_string(c.splits) +
                   (c.causal ? " causal" : "") + (seed ? " sink seed" : "") +
                   (voteFirst ? " vote first block" : ""));
      Shape s = makeShape(2, c.seqQ, c.seqKV, c.qHeads, c.kvHeads, 64, 64,
                          c.causal, 0.125);
      DialConfig dc;
      dc.coldFraction = 0.6;
      dc.blockN = 32;
      dc.sinkKeys = 8;
      dc.window = 16;
      DialInfo info;
      Inputs in = makeDialInputs(s, DType::BF16, dc, 5, 0, &info);
      const int64_t G = c.qHeads / c.kvHeads, tokens = 64 / G;
      SkipConfig cfg;
      cfg.blockM = 64;
      cfg.blockN = 32;
      cfg.qGroup = G;
      cfg.kvSplits = c.splits;
      cfg.sinkSeed = seed;
      cfg.voteFirstBlock = voteFirst;
      cfg.log2Threshold = info.defaultLog2Threshold();
      std::vector<int64_t> all = allRows(s);
      SkipModel model, model3;
      Reference dense;
      skipModelOf(in, all, cfg, 1, &model, &dense);
      skipModelOf(in, all, cfg, 3, &model3);
      EXPECT_EQ(model3.decisions, model.decisions);
      EXPECT_EQ(model3.out.o, model.out.o);

      // Brute force, long double.
      const int64_t tiles = (c.seqQ + tokens - 1) / tokens;
      ASSERT_EQ(model.mBlocks, tiles);
      const long double T = info.defaultLog2Threshold();
      std::vector<int64_t> visited(size_t(s.batch * s.qHeads), 0),
          skipped(size_t(s.batch * s.qHeads), 0);
      uint64_t mismatch = 0, kept = 0, skips = 0;
      double maxErr = 0;
      for (int64_t b = 0; b < s.batch; ++b)
        for (int64_t kh = 0; kh < s.kvHeads; ++kh)
          for (int64_t t = 0; t < tiles; ++t) {
            int64_t last = std::min((t + 1) * tokens, c.seqQ) - 1;
            int64_t nB = (c.seqKV + 31) / 32;
            if (c.causal) // up to the diagonal of the tile's last token slot
              nB =
                  std::min(nB, ((t + 1) * tokens + c.seqKV - c.seqQ + 31) / 32);
            (void)last;
            // Scores of the voting rows: [token][head][key].
            auto score = [&](int64_t i, int64_t h, int64_t j) -> long double {
              if (j >= s.visibleKeys(i))
                return -std::numeric_limits<long double>::infinity();
              long double acc = 0;
              for (int64_t d = 0; d < 64; ++d)
                acc +=
                    (long double)in.q[size_t(b * in.qs.batch + i * in.qs.seq +
                                             h * in.qs.head + d)] *
                    in.k[size_t(b * in.ks.batch + j * in.ks.seq +
                                kh * in.ks.head + d)];
              return acc * (long double)s.scale;
            };
            std::vector<bool> keepBlock(size_t(nB), false);
            int64_t per = (nB + c.splits - 1) / c.splits;
            // Block 0's row maxima (the sink seed).
            std::vector<long double> sink(
                size_t(64), -std::numeric_limits<long double>::infinity());
            for (int64_t i = t * tokens; i < std::min((t + 1) * tokens, c.seqQ);
                 ++i)
              for (int64_t g = 0; g < G; ++g)
                for (int64_t j = 0; j < std::min<int64_t>(32, c.seqKV); ++j)
                  sink[size_t((i - t * tokens) * G + g)] =
                      std::max(sink[size_t((i - t * tokens) * G + g)],
                               score(i, kh * G + g, j) * (long double)kLog2E);
            for (int64_t sp = 0; sp < c.splits; ++sp) {
              int64_t b0 = std::min(sp * per, nB), b1 = std::min(b0 + per, nB);
              std::vector<long double> run(
                  size_t(64), -std::numeric_limits<long double>::infinity());
              if (seed && nB > 0)
                run = sink;
              for (int64_t n = b0; n < b1; ++n) {
                // (The sequence's block 0 is voted against itself: kept.)
                bool skip = n != b0 || voteFirst;
                std::vector<long double> mb(size_t(64));
                for (int64_t i = t * tokens;
                     i < std::min((t + 1) * tokens, c.seqQ); ++i)
                  for (int64_t g = 0; g < G; ++g) {
                    size_t r = size_t((i - t * tokens) * G + g);
                    long double mx =
                        -std::numeric_limits<long double>::infinity();
                    for (int64_t j = n * 32; j < n * 32 + 32; ++j)
                      mx = std::max(mx, score(i, kh * G + g, j));
                    mb[r] = mx * (long double)kLog2E;
                    if (!(mb[r] - run[r] < T))
                      skip = false;
                  }
                if (!skip)
                  for (size_t r = 0; r < 64; ++r)
                    run[r] = std::max(run[r], mb[r]);
                keepBlock[size_t(n)] = !skip;
                for (int64_t g = 0; g < G; ++g) {
                  uint8_t d = model.decisions[model.decisionIndex(
                      s.qHeads, b, kh * G + g, t, 0, n)];
                  if (!(d & kBorderline) &&
                      (d & ~kBorderline) != (skip ? kSkipped : kKept))
                    ++mismatch;
                  size_t pair = size_t(b * s.qHeads + kh * G + g);
                  ++visited[pair];
                  skipped[pair] += skip;
                }
                kept += !skip;
                skips += skip;
              }
            }
            // O over the kept keys, per token and head of the tile.
            for (int64_t i = t * tokens; i < std::min((t + 1) * tokens, c.seqQ);
                 ++i)
              for (int64_t g = 0; g < G; ++g) {
                int64_t h = kh * G + g;
                long double mx = -std::numeric_limits<long double>::infinity();
                for (int64_t j = 0; j < std::min(s.visibleKeys(i), nB * 32);
                     ++j)
                  if (keepBlock[size_t(j / 32)])
                    mx = std::max(mx, score(i, h, j));
                size_t idx = model.out.index(s, b, h, size_t(i));
                for (int64_t d = 0; d < 64; ++d) {
                  long double num = 0, den = 0;
                  for (int64_t j = 0; j < std::min(s.visibleKeys(i), nB * 32);
                       ++j)
                    if (keepBlock[size_t(j / 32)]) {
                      long double p = std::exp(score(i, h, j) - mx);
                      den += p;
                      num += p * in.v[size_t(b * in.vs.batch + j * in.vs.seq +
                                             kh * in.vs.head + d)];
                    }
                  maxErr = std::max(
                      maxErr,
                      double(std::fabs(num / den -
                                       model.out.o[idx * 64 + size_t(d)])));
                }
              }
          }
      EXPECT_EQ(mismatch, 0u);
      EXPECT_GT(kept, 0u);
      EXPECT_GT(skips, 0u) << "the dial makes cold blocks";
      EXPECT_EQ(model.visited, visited);
      for (size_t i = 0; i < skipped.size(); ++i)
        EXPECT_LE(std::llabs(model.skipped[i] - skipped[i]),
                  model.borderline[i]);
      if (model.totalBorderline == 0)
        EXPECT_LE(maxErr, 1e-9);
      EXPECT_EQ(
          model.totalVisited,
          int64_t(std::accumulate(visited.begin(), visited.end(), int64_t(0))));
      // The dense output alongside equals the reference.
      Reference ref;
      referenceOf(in, all, 2, &ref);
      double denseErr = 0;
      for (size_t i = 0; i < ref.o.size(); ++i)
        denseErr = std::max(denseErr, std::fabs(ref.o[i] - dense.o[i]));
      EXPECT_LE(denseErr, 1e-12);
      // The walked cold fraction leaves out each split's first block.
      EXPECT_GT(dialWalkedColdFraction(s, cfg, info), 0.0);
      EXPECT_LT(dialWalkedColdFraction(s, cfg, info), 1.0);
    }
}

// Decode split boundaries: with one split per block nothing is ever voted
// on (every block starts a split), so nothing is skipped, unless each
// split's first block is voted on against the sink seed.
TEST(SkipModel, DecodeOneBlockPerSplitKeepsAll) {
  Shape s = makeShape(1, 2, 256, 8, 2, 64, 64, false, 0.125);
  DialConfig dc;
  dc.coldFraction = 0.9;
  dc.blockN = 32;
  DialInfo info;
  Inputs in = makeDialInputs(s, DType::BF16, dc, 9, 0, &info);
  SkipConfig cfg;
  cfg.blockM = 64;
  cfg.blockN = 32;
  cfg.qGroup = 4;
  cfg.log2Threshold = info.defaultLog2Threshold();
  SkipModel one, eight;
  cfg.kvSplits = 1;
  skipModelOf(in, allRows(s), cfg, 2, &one);
  cfg.kvSplits = 8;
  skipModelOf(in, allRows(s), cfg, 2, &eight);
  EXPECT_GT(one.totalSkipped, 0);
  EXPECT_EQ(eight.totalSkipped, 0);
  EXPECT_EQ(one.totalVisited, eight.totalVisited);
  EXPECT_EQ(one.totalVisited, 8 * 8); // 8 blocks x 8 q heads
  // With the sink seed and the vote on each split's first block, the
  // splits' blocks are voted on against the sink: one block per split
  // skips too, but never the sequence's block 0 (the sink itself).
  cfg.sinkSeed = cfg.voteFirstBlock = true;
  SkipModel voted;
  skipModelOf(in, allRows(s), cfg, 2, &voted);
  EXPECT_GT(voted.totalSkipped, 0);
  EXPECT_EQ(voted.totalVisited, 8 * 8);
  for (int64_t h = 0; h < s.qHeads; ++h)
    EXPECT_EQ(voted.decisions[voted.decisionIndex(s.qHeads, 0, h, 0, 0, 0)],
              kKept);
  // The walked cold fraction counts the split's first blocks then.
  cfg.sinkSeed = cfg.voteFirstBlock = false;
  double unvoted = dialWalkedColdFraction(s, cfg, info);
  cfg.sinkSeed = cfg.voteFirstBlock = true;
  EXPECT_EQ(unvoted, 0.0);
  EXPECT_GT(dialWalkedColdFraction(s, cfg, info), 0.0);
}

// Decode with per-sequence KV lengths (SkipConfig::kvLengths): batch entry
// b is the batch of one with seqKV = its length (its blocks, diagonal,
// splits and own threshold), length 0 walks nothing (O = 0, LSE = -inf), and
// keys past a length never enter the vote or the output.
TEST(SkipModel, DecodePerSequenceLengths) {
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "non-causal");
    const std::vector<int64_t> lens = {700, 0, 333, 1, 64};
    Shape s = makeShape(int64_t(lens.size()), 4, 700, 8, 2, 64, 64, causal,
                        0.125);
    DialConfig dc;
    dc.coldFraction = 0.6;
    dc.blockN = 32;
    dc.sinkKeys = 8;
    dc.window = 16;
    DialInfo info;
    Inputs in = makeDialInputs(s, DType::BF16, dc, 11, 0, &info);
    SkipConfig cfg;
    cfg.blockM = 64;
    cfg.blockN = 32;
    cfg.qGroup = 4;
    cfg.kvSplits = 3;
    cfg.kvLengths = lens;
    // A different T per entry (as the a= policy gives).
    for (size_t b = 0; b < lens.size(); ++b)
      cfg.log2Thresholds.push_back(info.defaultLog2Threshold() -
                                   0.25 * double(b));
    std::vector<int64_t> all = allRows(s);
    SkipModel model;
    Reference dense;
    skipModelOf(in, all, cfg, 3, &model, &dense);
    int64_t total = 0;
    for (int64_t b = 0; b < s.batch; ++b) {
      SCOPED_TRACE("batch entry " + std::to_string(b) + ", length " +
                   std::to_string(lens[size_t(b)]));
      // The same entry as a batch of one of its own length.
      Inputs one = in;
      one.shape.batch = 1;
      one.shape.seqKV = lens[size_t(b)];
      one.q.assign(in.q.begin() + b * in.qs.batch,
                   in.q.begin() + (b + 1) * in.qs.batch);
      one.k.assign(in.k.begin() + b * in.ks.batch,
                   in.k.begin() + (b + 1) * in.ks.batch);
      one.v.assign(in.v.begin() + b * in.vs.batch,
                   in.v.begin() + (b + 1) * in.vs.batch);
      SkipConfig c1 = cfg;
      c1.kvLengths.clear();
      c1.log2Thresholds.clear();
      c1.log2Threshold = cfg.log2Thresholds[size_t(b)];
      SkipModel m1;
      Reference d1;
      skipModelOf(one, all, c1, 2, &m1, &d1);
      for (int64_t h = 0; h < s.qHeads; ++h) {
        size_t pair = size_t(b * s.qHeads + h);
        EXPECT_EQ(model.visited[pair], m1.visited[size_t(h)]);
        EXPECT_EQ(model.skipped[pair], m1.skipped[size_t(h)]);
        EXPECT_EQ(model.borderline[pair], m1.borderline[size_t(h)]);
        total += model.visited[pair];
        for (int64_t t = 0; t < model.mBlocks; ++t)
          for (int64_t n = 0; n < model.nBlocksMax; ++n) {
            uint8_t d = n < m1.nBlocksMax
                            ? m1.decisions[m1.decisionIndex(s.qHeads, 0, h, t,
                                                            0, n)]
                            : kNotWalked;
            EXPECT_EQ(model.decisions[model.decisionIndex(s.qHeads, b, h, t,
                                                          0, n)],
                      d)
                << "h " << h << " tile " << t << " block " << n;
          }
        for (size_t ri = 0; ri < all.size(); ++ri) {
          size_t at = model.out.index(s, b, h, ri);
          size_t at1 = m1.out.index(one.shape, 0, h, ri);
          if (lens[size_t(b)] == 0) {
            EXPECT_TRUE(std::isinf(model.out.lse[at]) &&
                        model.out.lse[at] < 0);
            EXPECT_TRUE(std::isinf(dense.lse[at]) && dense.lse[at] < 0);
          } else {
            EXPECT_EQ(model.out.lse[at], m1.out.lse[at1]);
            EXPECT_EQ(dense.lse[at], d1.lse[at1]);
          }
          for (int64_t d = 0; d < s.headDimV; ++d) {
            EXPECT_EQ(model.out.o[at * 64 + size_t(d)],
                      lens[size_t(b)] ? m1.out.o[at1 * 64 + size_t(d)] : 0.0);
            EXPECT_EQ(dense.o[at * 64 + size_t(d)],
                      lens[size_t(b)] ? d1.o[at1 * 64 + size_t(d)] : 0.0);
          }
        }
      }
      if (lens[size_t(b)] == 0)
        EXPECT_EQ(model.visited[size_t(b * s.qHeads)], 0);
    }
    EXPECT_EQ(model.totalVisited, total);
    EXPECT_GT(model.totalSkipped, 0) << "the dial makes cold blocks";
    // The dense output alongside is the reference of each entry's length:
    // the full-length entry equals the uniform model's dense output.
    SkipConfig uniform = cfg;
    uniform.kvLengths.clear();
    SkipModel mu;
    Reference du;
    skipModelOf(in, all, uniform, 2, &mu, &du);
    for (int64_t h = 0; h < s.qHeads; ++h)
      for (size_t ri = 0; ri < all.size(); ++ri) {
        size_t at = du.index(s, 0, h, ri);
        EXPECT_EQ(dense.lse[at], du.lse[at]);
      }
    EXPECT_GT(dialWalkedColdFraction(s, cfg, info), 0.0);
  }
}
