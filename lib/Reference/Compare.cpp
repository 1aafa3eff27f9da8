//===- Compare.cpp - A kernel's output against the reference --------------===//

#include "blasst/Reference/Compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

using namespace blasst;
using namespace blasst::ref;

//===----------------------------------------------------------------------===//
// Comparison
//===----------------------------------------------------------------------===//

Tolerances blasst::ref::tolerancesFor(DType dtype) {
  Tolerances t;
  t.relL2 = dtype == DType::BF16 ? 1e-2 : 5e-3;
  t.lseAbs = 1e-3;
  return t;
}

namespace {

std::string fmt(const char *format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, value);
  return buf;
}

std::string at(int64_t b, int64_t h, int64_t i, int64_t d) {
  return "[b=" + std::to_string(b) + ", q=" + std::to_string(i) +
         ", h=" + std::to_string(h) +
         (d >= 0 ? ", d=" + std::to_string(d) : "") + "]";
}

} // namespace

CheckResult blasst::ref::compareOutputs(const Shape &s, DType dtype,
                                        const Reference &ref, const uint16_t *o,
                                        const Strides &os, const float *lse,
                                        const Tolerances &tol) {
  CheckResult r;
  const int64_t Dv = s.headDimV;
  const double u = unitRoundoff(dtype);
  double errSq = 0, refSq = 0;
  r.rowsChecked = ref.rows.size();
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.qHeads; ++h)
      for (size_t ri = 0; ri < ref.rows.size(); ++ri) {
        int64_t i = ref.rows[ri];
        const double *want = &ref.o[ref.index(s, b, h, ri) * size_t(Dv)];
        const uint16_t *got = o + b * os.batch + i * os.seq + h * os.head;
        for (int64_t d = 0; d < Dv; ++d) {
          ++r.elementsChecked;
          double g = double(halfToFloat(dtype, got[d]));
          double w = want[d];
          if (!std::isfinite(g)) {
            if (r.nonFinite++ == 0) {
              r.nanB = b, r.nanH = h, r.nanRow = i, r.nanD = d;
            }
            refSq += w * w;
            continue;
          }
          double e = std::fabs(g - w);
          errSq += e * e;
          refSq += w * w;
          if (e > r.maxAbs) {
            r.maxAbs = e;
            r.worstB = b, r.worstH = h, r.worstRow = i, r.worstD = d;
            r.worstRef = w, r.worstOut = g;
          }
          if (e > tol.elementFactor * u * (ref.maxAbsV + std::fabs(w)))
            ++r.overBound;
        }
      }
  double errNorm = std::sqrt(errSq), refNorm = std::sqrt(refSq);
  r.relL2 = refNorm > 0
                ? errNorm / refNorm
                : (errNorm > 0 ? std::numeric_limits<double>::infinity() : 0.0);

  if (r.nonFinite) {
    r.failures.push_back(
        std::to_string(r.nonFinite) + " of " +
        std::to_string(r.elementsChecked) +
        " checked O elements are NaN/inf (NaN = poison left unwritten, or a "
        "computed NaN); first at " +
        at(r.nanB, r.nanH, r.nanRow, r.nanD));
  }
  if (!(r.relL2 <= tol.relL2))
    r.failures.push_back("relative L2 error " + fmt("%.3e", r.relL2) +
                         " exceeds " + fmt("%.1e", tol.relL2));
  if (r.overBound)
    r.failures.push_back(
        std::to_string(r.overBound) + " O elements differ by more than " +
        fmt("%g", tol.elementFactor) +
        "u(max|V| + |ref|) (u = " + fmt("%.3g", u) +
        ", max|V| = " + fmt("%.3g", ref.maxAbsV) + "); worst at " +
        at(r.worstB, r.worstH, r.worstRow, r.worstD) + ": got " +
        fmt("%.6g", r.worstOut) + ", expected " + fmt("%.6g", r.worstRef));

  if (lse) {
    r.lseChecked = true;
    double maxAbsBase2 = 0;
    bool base2Finite = true;
    std::string firstMasked;
    const double log2e = 1.4426950408889634;
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t h = 0; h < s.qHeads; ++h)
        for (size_t ri = 0; ri < ref.rows.size(); ++ri) {
          int64_t i = ref.rows[ri];
          double want = ref.lse[ref.index(s, b, h, ri)];
          double got = double(lse[(b * s.qHeads + h) * s.seqQ + i]);
          ++r.lseCount;
          if (std::isinf(want) && want < 0) {
            if (!(std::isinf(got) && got < 0)) {
              if (r.lseMaskedMismatch++ == 0)
                firstMasked = at(b, h, i, -1) + " got " + fmt("%g", got);
            }
            continue;
          }
          if (!std::isfinite(got)) {
            ++r.lseNonFinite;
            base2Finite = false;
            continue;
          }
          r.lseMaxAbs = std::max(r.lseMaxAbs, std::fabs(got - want));
          maxAbsBase2 = std::max(maxAbsBase2, std::fabs(got - want * log2e));
        }
    if (r.lseNonFinite)
      r.failures.push_back(std::to_string(r.lseNonFinite) +
                           " LSE values are NaN/inf where the reference is "
                           "finite (NaN = poison left unwritten)");
    if (!(r.lseMaxAbs <= tol.lseAbs)) {
      r.lseLooksBase2 = base2Finite && maxAbsBase2 <= tol.lseAbs;
      r.failures.push_back(
          "LSE max abs error " + fmt("%.3e", r.lseMaxAbs) + " exceeds " +
          fmt("%.1e", tol.lseAbs) +
          (r.lseLooksBase2
               ? " (but it matches log2(sum 2^(x*log2e)): the kernel writes "
                 "a base-2 LSE, the bench expects the natural log)"
               : ""));
    }
    if (r.lseMaskedMismatch)
      r.failures.push_back(
          std::to_string(r.lseMaskedMismatch) +
          " rows that see no key (causal, seqQ > seqKV) have LSE != -inf, "
          "e.g. " +
          firstMasked);
  }
  r.pass = r.failures.empty();
  return r;
}

OutputDiff blasst::ref::diffOutputs(const Shape &s, DType dtype,
                                    const uint16_t *got, const uint16_t *want,
                                    const Strides &os) {
  double err = 0, norm = 0, maxAbs = 0;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t q = 0; q < s.seqQ; ++q)
      for (int64_t h = 0; h < s.qHeads; ++h) {
        size_t base = size_t(b * os.batch + q * os.seq + h * os.head);
        for (int64_t d = 0; d < s.headDimV; ++d) {
          double w = halfToFloat(dtype, want[base + d]);
          double diff = std::fabs(halfToFloat(dtype, got[base + d]) - w);
          err += diff * diff;
          norm += w * w;
          // A NaN sticks (std::max would drop it).
          if (std::isnan(diff) || (!std::isnan(maxAbs) && diff > maxAbs))
            maxAbs = diff;
        }
      }
  OutputDiff r;
  r.relL2 = norm > 0 ? std::sqrt(err / norm) : (err > 0 ? INFINITY : err);
  r.maxAbs = maxAbs;
  return r;
}

uint64_t blasst::ref::countWritesOutside(const Shape &s, const Strides &os,
                                         const uint16_t *buffer,
                                         size_t totalElements) {
  // Mark O's own elements, then count every other element that changed.
  std::vector<bool> inside(totalElements, false);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t i = 0; i < s.seqQ; ++i)
      for (int64_t h = 0; h < s.qHeads; ++h) {
        int64_t base = b * os.batch + i * os.seq + h * os.head;
        for (int64_t d = 0; d < s.headDimV; ++d)
          if (size_t(base + d) < totalElements)
            inside[size_t(base + d)] = true;
      }
  uint64_t count = 0;
  for (size_t e = 0; e < totalElements; ++e)
    if (!inside[e] && buffer[e] != kPoison16)
      ++count;
  return count;
}
