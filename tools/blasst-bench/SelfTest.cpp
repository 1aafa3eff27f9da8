//===- SelfTest.cpp - blasst-bench --self-test ----------------------------===//
//
// Checks the bench's own host logic on any machine, without a GPU: the
// 16-bit conversions, the reference attention against a naive direct
// implementation, and that the comparison flags what it must.
//
//===----------------------------------------------------------------------===//

#include "blasst/Reference/Compare.h"
#include "blasst/Reference/Reference.h"
#include "blasst/Reference/SkipModel.h"

#include "blasst/Runtime/AttentionKernel.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

using namespace blasst;
using namespace blasst::ref;

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
    t.check(got == c.want, c.what,
            "got " + hex16(got) + ", want " + hex16(c.want));
  }
  t.check(std::isnan(bf16ToFloat(floatToBF16(std::nanf("")))), "bf16 NaN");
  t.check(std::isnan(f16ToFloat(floatToF16(std::nanf("")))), "f16 NaN");
  t.check(std::isnan(bf16ToFloat(kPoison16)) &&
              std::isnan(f16ToFloat(kPoison16)),
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
            dot += (long double)
                       q[size_t(b * qs.batch + i * qs.seq + h * qs.head + d)] *
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
      {"head_dim_v != head_dim, strided",
       shape(2, 7, 10, 2, 1, 8, 12, true, 0.3), 3, Distribution::Uniform},
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
                    maxErr,
                    std::fabs(ref.o[r * size_t(s.headDimV) + size_t(d)] -
                              naiveO[row * size_t(s.headDimV) + size_t(d)]));
              double a = ref.lse[r], e = naiveLse[row];
              if (std::isinf(e)) {
                ++masked;
                lseBad += !(std::isinf(a) && a < 0);
              } else {
                lseBad +=
                    !(std::fabs(a - e) <= 1e-12 * std::max(1.0, std::fabs(e)));
              }
            }
        std::string what = std::string(c.what) + " [" + toString(dtype) + ", " +
                           std::to_string(threads) + " thread(s)]";
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
      referenceAttention(s, in.q.data(), in.qs, in.k.data(), in.ks, in.v.data(),
                         in.vs, rows, 2, &sub);
      referenceAttention(s, in.q.data(), in.qs, in.k.data(), in.ks, in.v.data(),
                         in.vs, selectRows(s.seqQ, s.seqQ), 2, &full);
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
  t.check(selectRows(4, 10).size() == 4,
          "rows:K with K > seqQ checks all rows");
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
  s.batch = 2, s.qHeads = 32, s.seqQ = s.seqKV = 4096,
  s.headDim = s.headDimV = 128;
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
                floatToHalf(dtype,
                            float(ref.o[r * size_t(s.headDimV) + size_t(d)]));
          lse[size_t((b * s.qHeads + h) * s.seqQ + i)] = float(ref.lse[r]);
        }
    Tolerances tol = tolerancesFor(dtype);
    CheckResult ok =
        compareOutputs(s, dtype, ref, good.data(), os, lse.data(), tol);
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
      CheckResult r =
          compareOutputs(s, dtype, ref, o.data(), os, l.data(), tol);
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
            uint16_t &e =
                bad[size_t(b * os.batch + i * os.seq + h * os.head + d)];
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
    t.check(anyMasked,
            "the causal shape with seqQ > seqKV has masked rows" + tag);
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

BruteSkip bruteSkip(const Shape &s, const Inputs &in, int64_t blockM,
                    int64_t groupRows, int64_t blockN, long double T) {
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

/// Dial inputs in the Inputs form (V from the usual generator).
Inputs makeDialInputs(const Shape &s, DType dtype, const DialConfig &dc,
                      uint64_t seed, int64_t pad, DialInfo *info,
                      unsigned threads = 2) {
  Inputs in = makeInputs(s, dtype, pad, seed, Distribution::Uniform);
  generateDialInputs(s, dtype, dc, seed, in.qs, in.q.size(), in.qBits, in.q,
                     in.ks, in.k.size(), in.kBits, in.k, threads, info);
  return in;
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

/// T as the bench derives it: the kernel parameter from the spec's policy
/// (runtime's log2ThresholdForSpec), then the kernel-side formula.
double benchThreshold(const SparsityPolicy &policy, int64_t seqKV) {
  AttentionSpec spec;
  spec.sparsity = policy;
  return kernelLog2Threshold(policy, double(rt::log2ThresholdForSpec(spec)),
                             seqKV);
}

/// T from the policy's definition: lambda = a / seqKV or exp(ln_lambda).
long double definitionThreshold(const SparsityPolicy &policy, int64_t seqKV) {
  if (policy.kind == SparsityKind::ScaleFactor)
    return std::log2((long double)policy.value / (long double)seqKV);
  return (long double)policy.value / std::log(2.0L);
}

std::string fmtD(const char *f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), f, v);
  return buf;
}

void testSkipModel(Tally &t) {
  std::printf("BLASST skipping model vs a brute-force implementation of the "
              "vote\n");
  auto shape = [](int64_t b, int64_t sq, int64_t skv, int64_t hq, int64_t hkv,
                  int64_t d, bool causal, double scale) {
    Shape s;
    s.batch = b, s.seqQ = sq, s.seqKV = skv, s.qHeads = hq, s.kvHeads = hkv;
    s.headDim = s.headDimV = d, s.causal = causal, s.scale = scale;
    return s;
  };
  const SparsityPolicy lnl2{SparsityKind::LnLambda, -2.0};
  const SparsityPolicy lnl3{SparsityKind::LnLambda, -3.0};
  const ModelCase cases[] = {
      {"MHA, 8-row CTAs / 4-row groups, blockN 5",
       shape(2, 37, 37, 2, 2, 16, false, 1.0), 8, 4, 5, lnl2,
       Distribution::Normal, 0, -1},
      {"causal GQA 4/2, seqQ < seqKV, tails, a=4",
       shape(1, 29, 41, 4, 2, 16, true, 0.8),
       8,
       4,
       6,
       {SparsityKind::ScaleFactor, 4.0},
       Distribution::Normal,
       2,
       -1},
      {"causal seqQ > seqKV (masked rows, CTAs without blocks)",
       shape(1, 30, 12, 2, 1, 8, true, 1.0),
       8,
       4,
       4,
       {SparsityKind::LnLambda, -1.5},
       Distribution::Normal,
       0,
       -1},
      {"kernel geometry 128/64, causal, seqQ 200 (CTA 1 partly votes)",
       shape(1, 200, 300, 2, 1, 16, true, 1.0), 128, 64, 64, lnl3,
       Distribution::Normal, 0, -1},
      {"kernel geometry 128/64, non-causal MQA 3/1, seqQ 200",
       shape(1, 200, 300, 3, 1, 16, false, 1.0),
       128,
       64,
       32,
       {SparsityKind::ScaleFactor, 8.0},
       Distribution::Normal,
       0,
       -1},
      {"seqQ 150: group 1 of CTA 1 has no voting row (vacuous skip)",
       shape(1, 150, 160, 2, 2, 8, false, 1.0),
       128,
       64,
       32,
       {SparsityKind::ScaleFactor, 2.0},
       Distribution::Normal,
       0,
       -1},
      {"T > 0 (a = 64 > seqKV): running max over kept blocks only",
       shape(1, 24, 20, 2, 2, 8, false, 1.0),
       8,
       4,
       4,
       {SparsityKind::ScaleFactor, 64.0},
       Distribution::Normal,
       0,
       -1},
      {"seqQ = 1 causal GQA", shape(2, 1, 50, 4, 1, 16, true, 1.0), 128, 64, 8,
       lnl2, Distribution::Normal, 0, -1},
      {"uniform inputs, a = 1 (few skips)",
       shape(1, 40, 64, 2, 1, 16, false, 0.25),
       8,
       4,
       8,
       {SparsityKind::ScaleFactor, 1.0},
       Distribution::Uniform,
       0,
       -1},
      {"dial F=0.5 causal, 16-row CTAs, blockN 16",
       shape(1, 100, 160, 2, 1, 16, true, 1.0), 16, 8, 16, lnl2,
       Distribution::Uniform, 0, 0.5},
      {"dial F=0.7 non-causal GQA, seqQ > seqKV",
       shape(2, 90, 70, 4, 2, 16, false, 0.5), 16, 8, 8, lnl2,
       Distribution::Uniform, 1, 0.7},
  };
  for (const ModelCase &c : cases) {
    for (DType dtype : {DType::BF16, DType::F16}) {
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
      std::vector<int64_t> all = selectRows(s.seqQ, s.seqQ);
      SkipModel model, model3;
      Reference dense;
      skipModelAttention(s, in.q.data(), in.qs, in.k.data(), in.ks, in.v.data(),
                         in.vs, all, cfg, 1, &model, &dense);
      skipModelAttention(s, in.q.data(), in.qs, in.k.data(), in.ks, in.v.data(),
                         in.vs, all, cfg, 3, &model3);
      BruteSkip brute =
          bruteSkip(s, in, c.blockM, c.groupRows, c.blockN, Tbrute);

      std::string tag = std::string(c.what) + " [" + toString(dtype) + "]";
      // Decisions.
      uint64_t mismatch = 0, mismatchBorder = 0, kept = 0, skipped = 0;
      bool sizeOk = model.decisions.size() == brute.decisions.size();
      for (size_t i = 0; sizeOk && i < model.decisions.size(); ++i) {
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
      t.check(sizeOk && mismatch == 0,
              tag + ": decisions match (" + std::to_string(kept) + " kept, " +
                  std::to_string(skipped) + " skipped, " +
                  std::to_string(model.totalBorderline) + " borderline)",
              std::to_string(mismatch) + " non-borderline mismatches");
      bool wantMix = c.dist != Distribution::Uniform || c.dialCold >= 0;
      if (wantMix)
        t.check(kept > 0 && skipped > 0, tag + ": has both kept and skipped",
                std::to_string(kept) + " kept, " + std::to_string(skipped) +
                    " skipped");
      // Counters.
      bool countsOk = model.visited == brute.visited;
      for (size_t i = 0; i < brute.skipped.size() && countsOk; ++i)
        countsOk &= std::llabs(model.skipped[i] - brute.skipped[i]) <=
                    model.borderline[i];
      t.check(countsOk, tag + ": visited/skipped counters match");
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
      if (mismatchBorder == 0)
        t.check(maxErr <= 1e-10 && lseBad == 0,
                tag + ": O and LSE over kept keys match",
                "max |model - brute| = " + fmtD("%.3e", maxErr) + ", " +
                    std::to_string(lseBad) + " LSE mismatches");
      // Thread independence.
      t.check(model3.decisions == model.decisions &&
                  model3.skipped == model.skipped &&
                  model3.out.o == model.out.o &&
                  model3.out.lse == model.out.lse,
              tag + ": 1 and 3 threads give identical results");
      // The dense output computed alongside equals referenceAttention.
      Reference ref;
      referenceAttention(s, in.q.data(), in.qs, in.k.data(), in.ks, in.v.data(),
                         in.vs, all, 2, &ref);
      double denseErr = 0;
      bool denseLse = true;
      for (size_t i = 0; i < ref.o.size(); ++i)
        denseErr = std::max(denseErr, std::fabs(ref.o[i] - dense.o[i]));
      for (size_t i = 0; i < ref.lse.size(); ++i)
        denseLse &= ref.lse[i] == dense.lse[i] ||
                    std::fabs(ref.lse[i] - dense.lse[i]) <= 1e-12;
      t.check(denseErr <= 1e-12 && denseLse,
              tag + ": dense output alongside == referenceAttention",
              "max diff " + fmtD("%.3e", denseErr));
      // A row subset gives the same rows and the same decisions.
      std::vector<int64_t> sub = selectRows(s.seqQ, 4);
      SkipModel subModel;
      skipModelAttention(s, in.q.data(), in.qs, in.k.data(), in.ks, in.v.data(),
                         in.vs, sub, cfg, 2, &subModel);
      bool same = subModel.decisions == model.decisions;
      for (int64_t b = 0; b < s.batch; ++b)
        for (int64_t h = 0; h < s.qHeads; ++h)
          for (size_t r = 0; r < sub.size(); ++r) {
            size_t a = subModel.out.index(s, b, h, r);
            size_t f = model.out.index(s, b, h, size_t(sub[r]));
            for (int64_t d = 0; d < s.headDimV; ++d)
              same &= subModel.out.o[a * size_t(s.headDimV) + size_t(d)] ==
                      model.out.o[f * size_t(s.headDimV) + size_t(d)];
          }
      if (dtype == DType::BF16)
        t.check(same, tag + ": rows:4 subset matches");

      // Case-specific expectations.
      if (std::string(c.what).rfind("seqQ 150", 0) == 0) {
        // CTA 1, group 1: rows 192..255, none < 150: every block skipped.
        bool allSkipped = true;
        for (int64_t n = 0; n < model.nBlocksMax; ++n)
          allSkipped &=
              (model.decisions[model.decisionIndex(s.qHeads, 0, 0, 1, 1, n)] &
               ~kBorderline) == kSkipped;
        t.check(allSkipped, tag + ": the group without voters skips all");
      }
    }
  }
}

/// With T = -inf nothing is skipped and the model is the dense reference;
/// borderline flags; the threshold formulas.
void testSkipEdges(Tally &t) {
  std::printf("skipping model: T = -inf, borderline decisions, thresholds\n");
  struct Case {
    const char *what;
    Shape shape;
    int64_t blockN;
  };
  auto shape = [](int64_t b, int64_t sq, int64_t skv, int64_t hq, int64_t hkv,
                  int64_t d, bool causal) {
    Shape s;
    s.batch = b, s.seqQ = sq, s.seqKV = skv, s.qHeads = hq, s.kvHeads = hkv;
    s.headDim = s.headDimV = d, s.causal = causal, s.scale = 0.9;
    return s;
  };
  const Case cases[] = {
      {"non-causal GQA", shape(2, 150, 200, 4, 2, 16, false), 32},
      {"causal seqQ < seqKV", shape(1, 130, 300, 2, 1, 16, true), 64},
      {"causal seqQ > seqKV", shape(1, 300, 130, 2, 2, 8, true), 16},
  };
  for (const Case &c : cases) {
    const Shape &s = c.shape;
    Inputs in = makeInputs(s, DType::BF16, 0, 5, Distribution::Normal);
    SkipConfig cfg;
    cfg.blockN = c.blockN;
    cfg.log2Threshold = -std::numeric_limits<double>::infinity();
    std::vector<int64_t> all = selectRows(s.seqQ, s.seqQ);
    SkipModel model;
    Reference dense, ref;
    skipModelAttention(s, in.q.data(), in.qs, in.k.data(), in.ks, in.v.data(),
                       in.vs, all, cfg, 2, &model, &dense);
    referenceAttention(s, in.q.data(), in.qs, in.k.data(), in.ks, in.v.data(),
                       in.vs, all, 2, &ref);
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
    std::string tag = std::string("T = -inf, ") + c.what;
    // Only the groups without a voting row (rows 192.. of the last CTA
    // here) skip: their vote is vacuously true.
    int64_t emptyWalks = 0;
    {
      int64_t m = (s.seqQ - 1) / 128;
      if (m * 128 + 64 >= s.seqQ)
        emptyWalks = ctaKVBlocks(s, cfg, m) * s.batch * s.qHeads;
    }
    t.check(emptyWalks > 0 && model.totalSkipped == emptyWalks &&
                model.emptyGroupSkips == emptyWalks &&
                model.totalBorderline == 0,
            tag + ": nothing skipped but the empty group's blocks",
            std::to_string(model.totalSkipped) + " skipped, expected " +
                std::to_string(emptyWalks));
    t.check(model.totalVisited == wantVisited,
            tag + ": visited = 2 groups x KV blocks per CTA",
            std::to_string(model.totalVisited) + " vs " +
                std::to_string(wantVisited));
    t.check(err <= 1e-12 && lseOk, tag + ": model == dense reference",
            "max diff " + fmtD("%.3e", err));
    for (auto e :
         {SkipConfig::EmptyGroup::Keep, SkipConfig::EmptyGroup::Idle}) {
      SkipConfig c2 = cfg;
      c2.emptyGroup = e;
      SkipModel m2;
      skipModelAttention(s, in.q.data(), in.qs, in.k.data(), in.ks, in.v.data(),
                         in.vs, all, c2, 2, &m2);
      int64_t wantV =
          wantVisited - (e == SkipConfig::EmptyGroup::Idle ? emptyWalks : 0);
      t.check(m2.totalSkipped == 0 && m2.totalVisited == wantV &&
                  m2.out.o == model.out.o,
              tag + ": empty groups '" + toString(e) +
                  "': nothing skipped, visited " + std::to_string(wantV));
    }
  }

  // nBlocks of causal CTAs (bottom-right): seqQ 300, seqKV 130, blockN 16:
  // CTA 0 rows 0..127 see keys <= 127 - 170 < 0: nothing; CTA 1 rows
  // ..255 see keys <= 85: 86 keys = 6 blocks; CTA 2: all 130 = 9 blocks.
  {
    Shape s = cases[2].shape;
    SkipConfig cfg;
    cfg.blockN = 16;
    t.check(ctaKVBlocks(s, cfg, 0) == 0 && ctaKVBlocks(s, cfg, 1) == 6 &&
                ctaKVBlocks(s, cfg, 2) == 9,
            "causal CTA block counts (0, 6, 9) for seqQ 300 > seqKV 130");
  }

  // Borderline: one row, keys scoring exactly 0, -3, -5 (log2 units).
  {
    Shape s;
    s.seqQ = 1, s.seqKV = 3, s.headDim = s.headDimV = 1;
    s.scale = std::log(2.0); // x = q.k * ln2 * log2e = q.k
    Strides st = Strides::contiguous(3, 1, 1);
    std::vector<float> q = {1.0f}, k = {0.0f, -3.0f, -5.0f}, v = {1, 2, 3};
    SkipConfig cfg;
    cfg.blockM = 1, cfg.groupRows = 1, cfg.blockN = 1;
    auto run = [&](double T) {
      cfg.log2Threshold = T;
      SkipModel m;
      skipModelAttention(s, q.data(), Strides::contiguous(1, 1, 1), k.data(),
                         st, v.data(), st, {0}, cfg, 1, &m);
      return m;
    };
    SkipModel a = run(-2.995);
    t.check(a.decisions == std::vector<uint8_t>{kKept, kSkipped | kBorderline,
                                                kSkipped} &&
                a.totalBorderline == 1 && a.totalSkipped == 2,
            "skip with a row 0.005 below T is borderline; 2 below is not");
    SkipModel b = run(-5.005);
    t.check(b.decisions ==
                std::vector<uint8_t>{kKept, kKept, kKept | kBorderline},
            "keep with every keeper within 0.01 of T is borderline");
    SkipModel c2 = run(-2.0);
    t.check(c2.decisions == std::vector<uint8_t>{kKept, kSkipped, kSkipped} &&
                std::fabs(c2.out.o[0] - 1.0) < 1e-15 &&
                std::fabs(c2.out.lse[0]) < 1e-15,
            "skipped blocks contribute nothing to O and LSE");
    SkipModel d = run(std::numeric_limits<double>::infinity());
    t.check(d.decisions == std::vector<uint8_t>{kKept, kSkipped, kSkipped},
            "T = +inf: block 0 still kept (m_run = -inf gives +inf)");
  }

  // Threshold formulas.
  {
    SparsityPolicy a{SparsityKind::ScaleFactor, 256.0};
    SparsityPolicy l{SparsityKind::LnLambda, -8.0};
    t.check(std::fabs(benchThreshold(a, 4096) - (8.0 - 12.0)) < 1e-6,
            "a=256, seqKV 4096: T = log2(256/4096) = -4");
    t.check(std::fabs(benchThreshold(l, 4096) + 8.0 / std::log(2.0)) < 1e-5,
            "ln_lambda=-8: T = -8 log2(e), independent of seqKV");
    t.check(
        std::fabs(kernelLog2Threshold(a, 1.5, 1024) - (1.5 - 10)) < 1e-12 &&
            kernelLog2Threshold(l, 1.5, 1024) == 1.5,
        "--log2-threshold X: a-policy subtracts log2(seqKV), ln_lambda not");
    t.check(std::fabs(kernelLog2Threshold(
                          a, paramForKernelLog2Threshold(a, -7.0, 3000), 3000) +
                      7.0) < 1e-12,
            "paramForKernelLog2Threshold inverts kernelLog2Threshold");
    t.check(std::isinf(kernelLog2Threshold(SparsityPolicy(), 0, 10)),
            "dense policy: T = -inf");
  }
}

void testOutputDiff(Tally &t) {
  std::printf("one output against another (--vs-first)\n");
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
  OutputDiff same = diffOutputs(s, DType::BF16, got.data(), want.data(), os);
  t.check(same.relL2 == 0 && same.maxAbs == 0,
          "identical outputs (NaN poison in the row padding is left out)");
  // 12 rows of norm 2: ||want|| = sqrt(12 * 4); one element off by 0.5.
  got[size_t(os.batch + 2 * os.seq + os.head + 1)] = floatToBF16(0.5f);
  OutputDiff one = diffOutputs(s, DType::BF16, got.data(), want.data(), os);
  t.check(std::fabs(one.relL2 - 0.5 / std::sqrt(48.0)) < 1e-12 &&
              one.maxAbs == 0.5,
          "one element off: rel L2 and max abs",
          fmtD("rel L2 %.6g", one.relL2) + fmtD(", max abs %.6g", one.maxAbs));
  got[size_t(os.head + 3)] = kPoison16;
  OutputDiff nan = diffOutputs(s, DType::BF16, got.data(), want.data(), os);
  t.check(std::isnan(nan.relL2) && std::isnan(nan.maxAbs),
          "a NaN element makes both NaN");
}

void testStatsComparison(Tally &t) {
  std::printf("kernel counters vs the model\n");
  Shape s;
  s.batch = 2, s.qHeads = 3, s.kvHeads = 1;
  SkipModel m;
  m.visited = {10, 10, 10, 20, 20, 20};
  m.skipped = {3, 0, 5, 7, 0, 1};
  m.borderline = {0, 0, 2, 0, 1, 0};
  auto stats = [&](std::vector<std::pair<int64_t, int64_t>> e) {
    std::vector<int64_t> out;
    for (auto &p : e)
      out.push_back(p.first), out.push_back(p.second);
    return out;
  };
  std::vector<int64_t> exact =
      stats({{10, 3}, {10, 0}, {10, 5}, {20, 7}, {20, 0}, {20, 1}});
  StatsCheck c = compareStats(s, m, exact.data());
  t.check(c.pass && c.kernelVisited == 90 && c.kernelSkipped == 16,
          "exact counters pass and are summed");
  std::vector<int64_t> within =
      stats({{10, 3}, {10, 0}, {10, 7}, {20, 7}, {20, 1}, {20, 1}});
  c = compareStats(s, m, within.data());
  t.check(c.pass && c.skippedWithin == 2,
          "skipped off by <= the borderline count passes (counted)");
  std::vector<int64_t> beyond =
      stats({{10, 3}, {10, 1}, {10, 5}, {20, 7}, {20, 0}, {20, 1}});
  c = compareStats(s, m, beyond.data());
  t.check(!c.pass && c.skippedBeyond == 1 &&
              c.failures[0].find("[b=0, h=1]") != std::string::npos,
          "skipped off by 1 without borderline decisions fails, located");
  std::vector<int64_t> visited =
      stats({{10, 3}, {10, 0}, {10, 5}, {20, 7}, {21, 0}, {20, 1}});
  c = compareStats(s, m, visited.data());
  t.check(!c.pass && c.visitedMismatch == 1,
          "a visited count off by one fails (visited is exact)");
}

void testDial(Tally &t) {
  std::printf("sparsity dial\n");
  // The cold fraction over many blocks.
  {
    Shape s;
    s.batch = 4, s.seqQ = 1, s.seqKV = 8192, s.qHeads = 4, s.kvHeads = 4;
    s.headDim = s.headDimV = 64, s.scale = 0.125;
    for (double F : {0.0, 0.1, 0.5, 0.9, 1.0}) {
      DialConfig dc;
      dc.coldFraction = F;
      dc.blockN = 64;
      DialInfo info;
      Inputs in = makeDialInputs(s, DType::BF16, dc, 3, 0, &info);
      double got = info.coldFraction();
      double tol = 4 * std::sqrt(F * (1 - F) / double(info.eligibleBlocks));
      t.check(info.eligibleBlocks == 16 * 127 && std::fabs(got - F) <= tol,
              "F = " + fmtD("%.1f", F) + ": cold fraction " +
                  fmtD("%.4f", got) + " of " +
                  std::to_string(info.eligibleBlocks) + " blocks",
              "tolerance " + fmtD("%.4f", tol));
    }
  }
  // Magnitudes for the supported head dims, and determinism.
  for (int64_t D : {64, 128, 256}) {
    Shape s;
    s.batch = 1, s.seqQ = 256, s.seqKV = 1024, s.qHeads = 2, s.kvHeads = 1;
    s.headDim = s.headDimV = D, s.scale = 1 / std::sqrt(double(D));
    DialConfig dc;
    dc.coldFraction = 0.5;
    DialInfo info, info2;
    Inputs a = makeDialInputs(s, DType::BF16, dc, 8, 0, &info, 1);
    Inputs b = makeDialInputs(s, DType::BF16, dc, 8, 0, &info2, 3);
    t.check(info.hot == 12 && info.maxAbsQ <= 8 && info.maxAbsK <= 8,
            "d" + std::to_string(D) + ": H = 12 with |q|, |k| <= 8 (max " +
                fmtD("%.2f", std::max(info.maxAbsQ, info.maxAbsK)) + ")",
            "H " + fmtD("%g", info.hot));
    t.check(a.qBits == b.qBits && a.kBits == b.kBits,
            "d" + std::to_string(D) + ": dial inputs independent of threads");
  }
  // The model on dial inputs with the default threshold: cold blocks outside
  // every voting row's local window are skipped, nothing else.
  for (bool causal : {true, false})
    for (int64_t sq : {1024, 700}) {
      Shape s;
      s.batch = 2, s.seqQ = sq, s.seqKV = 1024, s.qHeads = 4, s.kvHeads = 2;
      s.headDim = s.headDimV = 64, s.scale = 0.125, s.causal = causal;
      DialConfig dc;
      dc.coldFraction = 0.5;
      dc.blockN = 64;
      DialInfo info;
      Inputs in = makeDialInputs(s, DType::BF16, dc, 21, 0, &info);
      SkipConfig cfg;
      cfg.blockN = 64;
      cfg.log2Threshold = info.defaultLog2Threshold();
      SkipModel model;
      skipModelAttention(s, in.q.data(), in.qs, in.k.data(), in.ks, in.v.data(),
                         in.vs, {}, cfg, 2, &model);
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
      double walkedCold = dialWalkedColdFraction(s, cfg, info);
      std::string tag =
          std::string("dial F=0.5 ") + (causal ? "causal" : "non-causal") +
          " seqQ " + std::to_string(sq) + ", " +
          std::to_string(info.coldBlocks) + "/" +
          std::to_string(info.eligibleBlocks) + " blocks cold: skip rate " +
          fmtD("%.3f", model.skipRate()) + " (walked cold " +
          fmtD("%.3f", walkedCold) + ")";
      t.check(wrong == 0 && model.totalBorderline == 0 && coldSkipped > 0 &&
                  windowKept > 0,
              tag + ": exactly the cold blocks outside the local window are "
                    "skipped, none borderline",
              std::to_string(wrong) + " unexpected decisions, first: " + first +
                  "; " + std::to_string(model.totalBorderline) + " borderline");
      t.check(model.totalSkipped ==
                  scoreSkips + model.maskedSkips + model.emptyGroupSkips,
              tag + ": skips = cold + masked (" +
                  std::to_string(model.maskedSkips) + ") + empty-group (" +
                  std::to_string(model.emptyGroupSkips) + ")");
      double coldRate = double(scoreSkips) / double(model.totalVisited);
      t.check(coldRate <= walkedCold + 1e-12,
              tag + ": cold skips " + fmtD("%.3f", coldRate) +
                  " of walks <= the walked cold fraction");
    }
}

} // namespace

namespace blasst::bench {
int runSelfTest(bool verbose);
} // namespace blasst::bench

int blasst::bench::runSelfTest(bool verbose) {
  Tally t{verbose};
  testConversions(t);
  testReference(t);
  testComparison(t);
  testSkipModel(t);
  testSkipEdges(t);
  testStatsComparison(t);
  testOutputDiff(t);
  testDial(t);
  std::printf("self-test: %d passed, %d failed\n", t.passed, t.failed);
  return t.failed;
}
