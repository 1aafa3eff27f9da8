//===- SelfTest.cpp - blasst-bench --self-test ----------------------------===//
//
// Checks the bench's own host logic on any machine, without a GPU: the
// 16-bit conversions, the reference attention against a naive direct
// implementation, and that the comparison flags what it must.
//
//===----------------------------------------------------------------------===//

#include "BenchCore.h"
#include "SkipModel.h"

#include "blasst/Runtime/AttentionKernel.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

using namespace blasst;
using namespace blasst::bench;

namespace {

struct Tally {
  bool verbose;
  int failed = 0;
  int passed = 0;

  void check(bool ok, const std::string &what, const std::string &detail = "") {
    if (ok) {
      ++passed;
      if (verbose)
        std::printf("  ok    %s\n", what.c_str());
    } else {
      ++failed;
      std::printf("  FAIL  %s%s%s\n", what.c_str(), detail.empty() ? "" : ": ",
                  detail.c_str());
    }
  }
};

std::string hex16(uint16_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%04x", v);
  return buf;
}

//===----------------------------------------------------------------------===//
// Conversions
//===----------------------------------------------------------------------===//

void testConversions(Tally &t) {
  std::printf("16-bit conversions (round to nearest even)\n");
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
      {DType::BF16, 0x1.ffp+127f, 0x7F80, "bf16 overflow tie (max + ulp/2) -> inf"},
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
    t.check(got == c.want, c.what,
            "got " + hex16(got) + ", want " + hex16(c.want));
  }
  t.check(std::isnan(bf16ToFloat(floatToBF16(std::nanf("")))), "bf16 NaN");
  t.check(std::isnan(f16ToFloat(floatToF16(std::nanf("")))), "f16 NaN");
  t.check(std::isnan(bf16ToFloat(kPoison16)) && std::isnan(f16ToFloat(kPoison16)),
          "0xFFFF poison is NaN in bf16 and f16");

  // Every finite 16-bit value round-trips; every midpoint between
  // neighbours rounds to the even one, and nudges either way to the nearer.
  for (DType dtype : {DType::BF16, DType::F16}) {
    const char *name = toString(dtype);
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
        continue; // the overflow tie is a case above
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
    t.check(roundTrip == 0, std::string(name) + ": all 65536 values round-trip",
            std::to_string(roundTrip) + " mismatches");
    t.check(midpoint == 0,
            std::string(name) + ": every midpoint rounds to even, neighbours "
                                "to nearest",
            std::to_string(midpoint) + " mismatches");
  }
}

//===----------------------------------------------------------------------===//
// Reference against a naive implementation
//===----------------------------------------------------------------------===//

/// The textbook formula, written independently of referenceAttention: long
/// double, all keys scored, masked ones at -inf, direct indexing.
void naiveAttention(const Shape &s, const std::vector<float> &q,
                    const Strides &qs, const std::vector<float> &k,
                    const Strides &ks, const std::vector<float> &v,
                    const Strides &vs, std::vector<double> &o,
                    std::vector<double> &lse) {
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
            dot += (long double)q[size_t(b * qs.batch + i * qs.seq +
                                         h * qs.head + d)] *
                   k[size_t(b * ks.batch + j * ks.seq + kh * ks.head + d)];
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
                   v[size_t(b * vs.batch + j * vs.seq + kh * vs.head + d)];
          o[row * size_t(s.headDimV) + size_t(d)] = double(acc / sum);
        }
        lse[row] = double(m + std::log(sum));
      }
    }
}

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

void testReference(Tally &t) {
  std::printf("reference attention vs a naive implementation\n");
  struct Case {
    const char *what;
    Shape shape;
    int64_t pad;
    Distribution dist;
  };
  auto shape = [](int64_t b, int64_t sq, int64_t skv, int64_t hq, int64_t hkv,
                  int64_t d, int64_t dv, bool causal, double scale) {
    Shape s;
    s.batch = b, s.seqQ = sq, s.seqKV = skv, s.qHeads = hq, s.kvHeads = hkv;
    s.headDim = d, s.headDimV = dv, s.causal = causal, s.scale = scale;
    return s;
  };
  const Case cases[] = {
      {"dense MHA", shape(2, 5, 7, 2, 2, 8, 8, false, 0.35), 0,
       Distribution::Uniform},
      {"dense GQA 4/2, tails", shape(1, 17, 33, 4, 2, 16, 16, false, 0.25), 0,
       Distribution::Normal},
      {"MQA 3/1", shape(2, 6, 9, 3, 1, 8, 8, false, 0.3), 0,
       Distribution::Uniform},
      {"causal seqQ == seqKV", shape(1, 13, 13, 2, 1, 8, 8, true, 0.4), 0,
       Distribution::Uniform},
      {"causal seqQ < seqKV (bottom-right)",
       shape(2, 5, 11, 4, 2, 8, 8, true, 0.3), 0, Distribution::Normal},
      {"causal seqQ > seqKV (fully masked rows)",
       shape(1, 9, 4, 2, 2, 8, 8, true, 0.3), 0, Distribution::Uniform},
      {"causal decode seqQ = 1", shape(3, 1, 19, 4, 1, 16, 16, true, 0.25), 0,
       Distribution::Normal},
      {"head_dim_v != head_dim, strided", shape(2, 7, 10, 2, 1, 8, 12, true, 0.3),
       3, Distribution::Uniform},
      {"strided GQA causal", shape(2, 12, 12, 6, 3, 16, 16, true, 0.25), 5,
       Distribution::Normal},
      {"large scores (softmax overflow guard)",
       shape(1, 6, 40, 2, 1, 16, 16, false, 8.0), 0, Distribution::Normal},
  };
  for (const Case &c : cases) {
    for (DType dtype : {DType::BF16, DType::F16}) {
      Inputs in = makeInputs(c.shape, dtype, c.pad, 42, c.dist);
      const Shape &s = in.shape;
      std::vector<double> naiveO, naiveLse;
      naiveAttention(s, in.q, in.qs, in.k, in.ks, in.v, in.vs, naiveO,
                     naiveLse);
      for (unsigned threads : {1u, 3u}) {
        Reference ref;
        referenceAttention(s, in.q.data(), in.qs, in.k.data(), in.ks,
                           in.v.data(), in.vs, selectRows(s.seqQ, s.seqQ),
                           threads, &ref);
        double maxErr = 0;
        int lseBad = 0, masked = 0;
        for (int64_t b = 0; b < s.batch; ++b)
          for (int64_t h = 0; h < s.qHeads; ++h)
            for (int64_t i = 0; i < s.seqQ; ++i) {
              size_t row = size_t((b * s.qHeads + h) * s.seqQ + i);
              size_t r = ref.index(s, b, h, size_t(i));
              for (int64_t d = 0; d < s.headDimV; ++d)
                maxErr = std::max(
                    maxErr, std::fabs(ref.o[r * size_t(s.headDimV) + size_t(d)] -
                                      naiveO[row * size_t(s.headDimV) +
                                             size_t(d)]));
              double a = ref.lse[r], e = naiveLse[row];
              if (std::isinf(e)) {
                ++masked;
                lseBad += !(std::isinf(a) && a < 0);
              } else {
                lseBad += !(std::fabs(a - e) <= 1e-12 * std::max(1.0, std::fabs(e)));
              }
            }
        std::string what = std::string(c.what) + " [" + toString(dtype) +
                           ", " + std::to_string(threads) + " thread(s)]";
        if (masked)
          what += " (" + std::to_string(masked) + " masked rows)";
        char detail[128];
        std::snprintf(detail, sizeof(detail),
                      "max |ref - naive| = %.3e, %d LSE mismatches", maxErr,
                      lseBad);
        t.check(maxErr <= 1e-12 && lseBad == 0, what, detail);
      }
      // A row subset gives the same values as the full computation.
      std::vector<int64_t> rows = selectRows(s.seqQ, 3);
      Reference sub, full;
      referenceAttention(s, in.q.data(), in.qs, in.k.data(), in.ks,
                         in.v.data(), in.vs, rows, 2, &sub);
      referenceAttention(s, in.q.data(), in.qs, in.k.data(), in.ks,
                         in.v.data(), in.vs, selectRows(s.seqQ, s.seqQ), 2,
                         &full);
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
      if (dtype == DType::BF16)
        t.check(same, std::string(c.what) + ": rows:3 subset matches full");
    }
  }

  // Rows selection and FLOP counting.
  auto rows = selectRows(1000, 5);
  t.check(rows == std::vector<int64_t>{0, 250, 500, 749, 999} ||
              rows == std::vector<int64_t>{0, 250, 500, 750, 999},
          "rows:5 of 1000 are evenly spaced with first and last");
  t.check(selectRows(4, 10).size() == 4, "rows:K with K > seqQ checks all rows");
  bool pairsOk = true;
  for (int64_t sq : {1, 2, 7, 64, 100})
    for (int64_t skv : {1, 3, 7, 64, 150})
      for (bool causal : {false, true}) {
        Shape s;
        s.seqQ = sq, s.seqKV = skv, s.causal = causal;
        double brute = 0;
        for (int64_t i = 0; i < sq; ++i)
          brute += double(s.visibleKeys(i));
        pairsOk &= brute == s.visiblePairs();
      }
  t.check(pairsOk, "visiblePairs closed form == sum of visible keys");
  Shape s;
  s.batch = 2, s.qHeads = 32, s.seqQ = s.seqKV = 4096, s.headDim = s.headDimV = 128;
  s.causal = true;
  t.check(s.flops() == 4.0 * 2 * 32 * 4096 * (4097.0 / 2) * 128,
          "causal FLOPs = 4*B*H*S*(S+1)/2*D");
  s.causal = false;
  t.check(s.flops() == 4.0 * 2 * 32 * 4096 * 4096 * 128,
          "dense FLOPs = 4*B*H*Sq*Skv*D");
}

//===----------------------------------------------------------------------===//
// The comparison flags what it must
//===----------------------------------------------------------------------===//

void testComparison(Tally &t) {
  std::printf("comparison logic\n");
  Shape s;
  s.batch = 2, s.seqQ = 37, s.seqKV = 29, s.qHeads = 4, s.kvHeads = 2;
  s.headDim = s.headDimV = 32, s.causal = true, s.scale = 1 / std::sqrt(32.0);
  for (DType dtype : {DType::BF16, DType::F16}) {
    std::string tag = std::string(" [") + toString(dtype) + "]";
    Inputs in = makeInputs(s, dtype, 0, 7, Distribution::Uniform);
    Reference ref;
    referenceAttention(s, in.q.data(), in.qs, in.k.data(), in.ks, in.v.data(),
                       in.vs, selectRows(s.seqQ, s.seqQ), 0, &ref);
    // A "kernel" output: the reference rounded to the dtype, in an O with a
    // padded row stride, surrounded by poison.
    Strides os;
    os.head = s.headDimV;
    os.seq = s.qHeads * s.headDimV + 8;
    os.batch = s.seqQ * os.seq;
    size_t total = size_t(s.batch * os.batch) + 64;
    std::vector<uint16_t> good(total, kPoison16);
    std::vector<float> lse(size_t(s.batch * s.qHeads * s.seqQ));
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t h = 0; h < s.qHeads; ++h)
        for (int64_t i = 0; i < s.seqQ; ++i) {
          size_t r = ref.index(s, b, h, size_t(i));
          for (int64_t d = 0; d < s.headDimV; ++d)
            good[size_t(b * os.batch + i * os.seq + h * os.head + d)] =
                floatToHalf(dtype, float(ref.o[r * size_t(s.headDimV) + size_t(d)]));
          lse[size_t((b * s.qHeads + h) * s.seqQ + i)] = float(ref.lse[r]);
        }
    Tolerances tol = tolerancesFor(dtype);
    CheckResult ok = compareOutputs(s, dtype, ref, good.data(), os, lse.data(), tol);
    char detail[160];
    std::snprintf(detail, sizeof(detail), "rel L2 %.3e, max abs %.3e, %s",
                  ok.relL2, ok.maxAbs,
                  ok.failures.empty() ? "" : ok.failures[0].c_str());
    t.check(ok.pass && ok.elementsChecked == uint64_t(2 * 4 * 37 * 32) &&
                ok.relL2 > 0 && ok.relL2 < tol.relL2 / 4,
            "correctly rounded output passes" + tag, detail);
    t.check(countWritesOutside(s, os, good.data(), total) == 0,
            "no writes outside O detected in a clean buffer" + tag);

    auto expectFail = [&](const std::vector<uint16_t> &o,
                          const std::vector<float> &l, const std::string &what,
                          const std::string &needle) {
      CheckResult r = compareOutputs(s, dtype, ref, o.data(), os, l.data(), tol);
      std::string all;
      for (const std::string &f : r.failures)
        all += f + "; ";
      t.check(!r.pass && all.find(needle) != std::string::npos, what + tag,
              r.pass ? "passed" : all);
      return r;
    };

    // One element far off (a garbage element): rel L2 alone might miss it in
    // a big tensor, the element-wise bound does not.
    std::vector<uint16_t> bad = good;
    size_t victim = size_t(1 * os.batch + 20 * os.seq + 3 * os.head + 5);
    bad[victim] = floatToHalf(dtype, halfToFloat(dtype, bad[victim]) + 0.25f);
    CheckResult r = expectFail(bad, lse, "one corrupted element is flagged",
                               "differ by more than");
    t.check(r.worstB == 1 && r.worstRow == 20 && r.worstH == 3 && r.worstD == 5,
            "the corrupted element is located" + tag);
    // Everything slightly off (a systematic error): rel L2 flags it.
    bad = good;
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t i = 0; i < s.seqQ; ++i)
        for (int64_t h = 0; h < s.qHeads; ++h)
          for (int64_t d = 0; d < s.headDimV; ++d) {
            uint16_t &e = bad[size_t(b * os.batch + i * os.seq + h * os.head + d)];
            e = floatToHalf(dtype, halfToFloat(dtype, e) * 1.03f);
          }
    expectFail(bad, lse, "output scaled by 1.03 is flagged", "relative L2");
    // A NaN.
    bad = good;
    bad[size_t(7 * os.seq + 2 * os.head)] = floatToHalf(dtype, std::nanf(""));
    r = expectFail(bad, lse, "a NaN is flagged", "NaN");
    t.check(r.nonFinite == 1 && r.nanRow == 7 && r.nanH == 2,
            "the NaN is counted and located" + tag);
    // An unwritten row (poison left in place).
    bad = good;
    for (int64_t d = 0; d < s.headDimV; ++d)
      bad[size_t(os.batch + 36 * os.seq + 1 * os.head + d)] = kPoison16;
    r = expectFail(bad, lse, "an unwritten tail row is flagged", "NaN");
    t.check(r.nonFinite == uint64_t(s.headDimV),
            "every unwritten element is counted" + tag);
    // Rows swapped (a wrong row mapping).
    bad = good;
    for (int64_t d = 0; d < s.headDimV; ++d)
      std::swap(bad[size_t(10 * os.seq + d)], bad[size_t(30 * os.seq + d)]);
    expectFail(bad, lse, "two swapped rows are flagged", "");
    // A write into the row padding.
    bad = good;
    bad[size_t(3 * os.seq + s.qHeads * s.headDimV + 1)] = 0;
    bad[total - 1] = 0;
    t.check(countWritesOutside(s, os, bad.data(), total) == 2,
            "writes into padding and past the end are counted" + tag);

    // LSE: off by 2e-3, base 2, NaN, +inf for a masked row.
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
    expectFail(good, badLse, "an LSE off by 2e-3 is flagged", "LSE max abs");
    badLse = lse;
    for (float &x : badLse)
      if (std::isfinite(x))
        x = float(double(x) * 1.4426950408889634);
    r = expectFail(good, badLse, "a base-2 LSE is flagged with a hint",
                   "base-2 LSE");
    badLse = lse;
    badLse[finite2] = std::nanf("");
    expectFail(good, badLse, "a NaN LSE is flagged", "LSE values are NaN");
    bool anyMasked = false;
    for (size_t i = 0; i < lse.size(); ++i)
      if (std::isinf(lse[i])) {
        anyMasked = true;
        badLse = lse;
        badLse[i] = std::numeric_limits<float>::infinity();
        break;
      }
    t.check(anyMasked, "the causal shape with seqQ > seqKV has masked rows" + tag);
    if (anyMasked)
      expectFail(good, badLse, "a masked row with LSE +inf is flagged",
                 "have LSE != -inf");
    // Masked rows must be exactly 0 in O.
    bad = good;
    bad[size_t(0 * os.seq + 0 * os.head + 0)] = floatToHalf(dtype, 0.5f);
    expectFail(bad, lse, "a fully masked row that is not 0 is flagged",
               "differ by more than");
  }
}

} // namespace

int blasst::bench::runSelfTest(bool verbose) {
  Tally t{verbose};
  testConversions(t);
  testReference(t);
  testComparison(t);
  testSkipModel(t);
  testSkipEdges(t);
  testStatsComparison(t);
  testDial(t);
  std::printf("self-test: %d passed, %d failed\n", t.passed, t.failed);
  return t.failed;
}
