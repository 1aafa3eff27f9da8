//===- Reference.cpp - Attention on the CPU, in double precision ----------===//

#include "blasst/Reference/Reference.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>

using namespace blasst;
using namespace blasst::ref;

//===----------------------------------------------------------------------===//
// 16-bit floats
//===----------------------------------------------------------------------===//

namespace {

uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float bitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

} // namespace

uint16_t blasst::ref::floatToBF16(float value) {
  uint32_t u = floatBits(value);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) // NaN: keep the sign, make it quiet
    return uint16_t((u >> 16) | 0x0040u);
  // Round to nearest even on the 16 dropped bits; a carry out of the
  // mantissa correctly bumps the exponent (up to infinity).
  u += 0x7FFFu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

float blasst::ref::bf16ToFloat(uint16_t bits) {
  return bitsFloat(uint32_t(bits) << 16);
}

uint16_t blasst::ref::floatToF16(float value) {
  uint32_t x = floatBits(value);
  uint16_t sign = uint16_t((x >> 16) & 0x8000u);
  x &= 0x7FFFFFFFu;
  if (x >= 0x7F800000u) // inf or NaN (quiet, keeping the top payload bits)
    return x == 0x7F800000u ? uint16_t(sign | 0x7C00u)
                            : uint16_t(sign | 0x7E00u | ((x >> 13) & 0x3FFu));
  // 65520 = 65504 + half an ulp: ties to even rounds it (and above) to inf.
  if (x >= 0x477FF000u)
    return uint16_t(sign | 0x7C00u);
  uint32_t exponent = x >> 23;
  if (exponent < 113) {
    // |value| < 2^-14: an f16 subnormal, in units of 2^-24. value =
    // m * 2^(exponent - 150), so value / 2^-24 = m >> (126 - exponent).
    if (exponent < 102) // < 2^-25: rounds to zero
      return sign;
    uint32_t m = (x & 0x7FFFFFu) | 0x800000u;
    uint32_t shift = 126 - exponent; // 14..24
    uint32_t r = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u)))
      ++r; // may become 0x400, the smallest normal: still right
    return uint16_t(sign | r);
  }
  uint32_t h = ((exponent - 112) << 10) | ((x & 0x7FFFFFu) >> 13);
  uint32_t rem = x & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
    ++h; // a carry into the exponent is the correct rounding
  return uint16_t(sign | h);
}

float blasst::ref::f16ToFloat(uint16_t bits) {
  uint32_t sign = uint32_t(bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1Fu;
  uint32_t mantissa = bits & 0x3FFu;
  if (exponent == 0) {
    float v = std::ldexp(float(mantissa), -24);
    return sign ? -v : v;
  }
  if (exponent == 31)
    return bitsFloat(sign | 0x7F800000u | (mantissa << 13));
  return bitsFloat(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

uint16_t blasst::ref::floatToHalf(DType dtype, float value) {
  return dtype == DType::BF16 ? floatToBF16(value) : floatToF16(value);
}

float blasst::ref::halfToFloat(DType dtype, uint16_t bits) {
  return dtype == DType::BF16 ? bf16ToFloat(bits) : f16ToFloat(bits);
}

double blasst::ref::unitRoundoff(DType dtype) {
  return dtype == DType::BF16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);
}

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

unsigned blasst::ref::defaultThreads() {
  unsigned n = std::thread::hardware_concurrency();
  return n ? n : 1;
}

double blasst::ref::maxAbsOfV(const Shape &s, const float *v,
                              const Strides &vs) {
  const int64_t Dv = s.headDimV;
  double maxAbsV = 0;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t j = 0; j < s.seqKV; ++j)
      for (int64_t h = 0; h < s.kvHeads; ++h) {
        const float *row = v + b * vs.batch + j * vs.seq + h * vs.head;
        for (int64_t d = 0; d < Dv; ++d)
          maxAbsV = std::max(maxAbsV, double(std::fabs(row[d])));
      }
  return maxAbsV;
}

void blasst::ref::runWorkers(size_t workers, size_t tasks,
                             const std::function<void()> &worker) {
  workers = std::min<size_t>(workers, std::max<size_t>(tasks, 1));
  std::vector<std::thread> pool;
  for (size_t w = 1; w < workers; ++w)
    pool.emplace_back(worker);
  worker();
  for (std::thread &t : pool)
    t.join();
}

void blasst::ref::parallelFor(size_t n, unsigned threads,
                              const std::function<void(size_t, size_t)> &fn) {
  if (threads == 0)
    threads = defaultThreads();
  if (n == 0)
    return;
  size_t workers = std::min<size_t>(threads, n);
  if (workers <= 1) {
    fn(0, n);
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(workers);
  size_t chunk = (n + workers - 1) / workers;
  for (size_t w = 0; w < workers; ++w) {
    size_t begin = w * chunk, end = std::min(n, begin + chunk);
    if (begin >= end)
      break;
    pool.emplace_back([&fn, begin, end] { fn(begin, end); });
  }
  for (std::thread &t : pool)
    t.join();
}

const char *blasst::ref::toString(Distribution d) {
  return d == Distribution::Uniform ? "uniform" : "normal";
}

namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// Uniform in (0, 1), never 0 (so log() is finite).
double unit(uint64_t h) { return (double(h >> 11) + 0.5) * 0x1.0p-53; }

} // namespace

void blasst::ref::generateTensor(DType dtype, Distribution dist, uint64_t seed,
                                 uint64_t stream, size_t count,
                                 std::vector<uint16_t> &bits,
                                 std::vector<float> &values, unsigned threads) {
  bits.resize(count);
  values.resize(count);
  uint64_t key = splitmix64(seed ^ splitmix64(stream + 0x5EEDull));
  parallelFor(count, threads, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      uint64_t h1 = splitmix64(key + 2 * uint64_t(i));
      double x;
      if (dist == Distribution::Uniform) {
        x = 2.0 * unit(h1) - 1.0;
      } else {
        uint64_t h2 = splitmix64(key + 2 * uint64_t(i) + 1);
        x = std::sqrt(-2.0 * std::log(unit(h1))) *
            std::cos(6.283185307179586 * unit(h2));
      }
      uint16_t b = floatToHalf(dtype, float(x));
      bits[i] = b;
      values[i] = halfToFloat(dtype, b);
    }
  });
}

//===----------------------------------------------------------------------===//
// Shape
//===----------------------------------------------------------------------===//

std::string Shape::describe() const {
  std::string s = std::to_string(batch) + "x" + std::to_string(seqQ) + "x" +
                  std::to_string(seqKV) + " h" + std::to_string(qHeads) + "/" +
                  std::to_string(kvHeads) + " d" + std::to_string(headDim);
  if (headDimV != headDim)
    s += "/" + std::to_string(headDimV);
  if (causal)
    s += " causal";
  return s;
}

int64_t Shape::visibleKeys(int64_t i) const {
  if (!causal)
    return seqKV;
  // Bottom-right alignment: keys j <= i + seqKV - seqQ.
  int64_t limit = i + seqKV - seqQ + 1;
  return std::clamp<int64_t>(limit, 0, seqKV);
}

double Shape::visiblePairs() const {
  if (!causal)
    return double(seqQ) * double(seqKV);
  // Closed form of sum_i clamp(i + seqKV - seqQ + 1, 0, seqKV).
  double total = 0;
  int64_t offset = seqKV - seqQ + 1; // visible keys of row 0, unclamped
  int64_t firstPositive = std::max<int64_t>(0, -offset + 1);
  int64_t firstFull = std::max<int64_t>(0, seqKV - offset); // limit >= seqKV
  firstFull = std::min(firstFull, seqQ);
  firstPositive = std::min(firstPositive, firstFull);
  // rows [firstPositive, firstFull): limit = i + offset (1..seqKV-1)
  int64_t n = firstFull - firstPositive;
  if (n > 0) {
    double first = double(firstPositive + offset);
    double last = double(firstFull - 1 + offset);
    total += (first + last) * double(n) / 2.0;
  }
  total += double(seqQ - firstFull) * double(seqKV);
  return total;
}

double Shape::flops() const {
  return 2.0 * double(batch) * double(qHeads) * visiblePairs() *
         double(headDim + headDimV);
}

std::vector<int64_t> blasst::ref::selectRows(int64_t seqQ, int64_t count) {
  std::vector<int64_t> rows;
  if (count >= seqQ || seqQ <= 1) {
    for (int64_t i = 0; i < seqQ; ++i)
      rows.push_back(i);
    return rows;
  }
  if (count < 1)
    count = 1;
  for (int64_t r = 0; r < count; ++r) {
    int64_t i = count == 1 ? seqQ - 1
                           : int64_t(std::llround(double(r) * double(seqQ - 1) /
                                                  double(count - 1)));
    if (rows.empty() || rows.back() != i)
      rows.push_back(i);
  }
  return rows;
}

//===----------------------------------------------------------------------===//
// Reference
//===----------------------------------------------------------------------===//

void blasst::ref::referenceAttention(const Shape &s, const float *q,
                                     const Strides &qs, const float *k,
                                     const Strides &ks, const float *v,
                                     const Strides &vs,
                                     const std::vector<int64_t> &rows,
                                     unsigned threads, Reference *out) {
  if (threads == 0)
    threads = defaultThreads();
  out->rows = rows;
  const size_t nRows = rows.size();
  const int64_t D = s.headDim, Dv = s.headDimV;
  out->o.assign(size_t(s.batch * s.qHeads) * nRows * size_t(Dv), 0.0);
  out->lse.assign(size_t(s.batch * s.qHeads) * nRows, 0.0);

  out->maxAbsV = maxAbsOfV(s, v, vs);

  // Tasks: (batch, head) pairs, split into row chunks when there are fewer
  // pairs than threads so that every core has work.
  const size_t pairs = size_t(s.batch * s.qHeads);
  size_t chunksPerPair = 1;
  if (pairs < threads * 2 && nRows > 32)
    chunksPerPair =
        std::min<size_t>((threads * 2 + pairs - 1) / pairs, (nRows + 31) / 32);
  const size_t rowsPerChunk = (nRows + chunksPerPair - 1) / chunksPerPair;
  const size_t tasks = pairs * chunksPerPair;
  const int64_t group = s.qHeads / s.kvHeads;

  std::atomic<size_t> next{0};
  auto worker = [&] {
    std::vector<double> kt, vv, qrow, scores, acc;
    for (size_t task; (task = next.fetch_add(1)) < tasks;) {
      size_t pair = task / chunksPerPair, chunk = task % chunksPerPair;
      size_t rowBegin = chunk * rowsPerChunk;
      size_t rowEnd = std::min(nRows, rowBegin + rowsPerChunk);
      if (rowBegin >= rowEnd)
        continue;
      int64_t b = int64_t(pair) / s.qHeads, h = int64_t(pair) % s.qHeads;
      int64_t kh = h / group;
      // The keys actually needed by this chunk's last (widest) row.
      int64_t needKeys = 0;
      for (size_t r = rowBegin; r < rowEnd; ++r)
        needKeys = std::max(needKeys, s.visibleKeys(rows[r]));
      // K transposed ([D][keys]) so that the score loop runs over keys with
      // unit stride and vectorizes without reassociating sums; V as
      // [keys][Dv].
      kt.assign(size_t(D * needKeys), 0.0);
      vv.assign(size_t(needKeys * Dv), 0.0);
      for (int64_t j = 0; j < needKeys; ++j) {
        const float *kr = k + b * ks.batch + j * ks.seq + kh * ks.head;
        const float *vr = v + b * vs.batch + j * vs.seq + kh * vs.head;
        for (int64_t d = 0; d < D; ++d)
          kt[size_t(d * needKeys + j)] = kr[d];
        for (int64_t d = 0; d < Dv; ++d)
          vv[size_t(j * Dv + d)] = vr[d];
      }
      qrow.resize(size_t(D));
      scores.resize(size_t(needKeys));
      acc.resize(size_t(Dv));
      for (size_t r = rowBegin; r < rowEnd; ++r) {
        int64_t i = rows[r];
        int64_t nk = s.visibleKeys(i);
        size_t base = out->index(s, b, h, r);
        double *o = &out->o[base * size_t(Dv)];
        if (nk == 0) {
          // No visible key: output 0, LSE = log(0) = -inf.
          std::fill(o, o + Dv, 0.0);
          out->lse[base] = -std::numeric_limits<double>::infinity();
          continue;
        }
        const float *qr = q + b * qs.batch + i * qs.seq + h * qs.head;
        for (int64_t d = 0; d < D; ++d)
          qrow[size_t(d)] = double(qr[d]);
        std::fill(scores.begin(), scores.begin() + nk, 0.0);
        for (int64_t d = 0; d < D; ++d) {
          double qd = qrow[size_t(d)];
          const double *kd = kt.data() + size_t(d * needKeys);
          for (int64_t j = 0; j < nk; ++j)
            scores[size_t(j)] += qd * kd[j];
        }
        double m = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < nk; ++j) {
          scores[size_t(j)] *= s.scale;
          m = std::max(m, scores[size_t(j)]);
        }
        double l = 0;
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t j = 0; j < nk; ++j) {
          double p = std::exp(scores[size_t(j)] - m);
          l += p;
          const double *vj = &vv[size_t(j * Dv)];
          for (int64_t d = 0; d < Dv; ++d)
            acc[size_t(d)] += p * vj[d];
        }
        for (int64_t d = 0; d < Dv; ++d)
          o[d] = acc[size_t(d)] / l;
        out->lse[base] = m + std::log(l);
      }
    }
  };
  runWorkers(threads, tasks, worker);
}
