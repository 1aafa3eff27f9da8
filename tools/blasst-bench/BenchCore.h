//===- BenchCore.h - Host-side numerics of blasst-bench ---------*- C++ -*-===//
//
// Everything blasst-bench computes on the CPU, free of the driver so that
// `blasst-bench --self-test` exercises it on any machine: bf16/f16
// conversions, seeded input generation, the double-precision reference
// attention and the comparison of a kernel's output against it.
//
// Conventions (shared with KernelABI.h):
//  - Tensors are [batch, seq, heads, dim] with element strides {batch, seq,
//    head} and unit stride along dim.
//  - GQA/MQA: query head h reads KV head h / (qHeads / kvHeads).
//  - Causal masking is bottom-right aligned: query i sees keys
//    j <= i + seqKV - seqQ.
//  - A query row that sees no key at all (causal with seqQ > seqKV, rows
//    i < seqQ - seqKV) has output 0 and LSE = -inf (log of an empty sum).
//  - LSE is the natural log of sum_j exp(scale * q.k_j) over visible keys.
//
//===----------------------------------------------------------------------===//
#ifndef BLASST_BENCH_BENCHCORE_H
#define BLASST_BENCH_BENCHCORE_H

#include "blasst/Spec/AttentionSpec.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace blasst::bench {

//===----------------------------------------------------------------------===//
// 16-bit floats (round to nearest, ties to even)
//===----------------------------------------------------------------------===//

uint16_t floatToBF16(float value);
float bf16ToFloat(uint16_t bits);
uint16_t floatToF16(float value);
float f16ToFloat(uint16_t bits);
uint16_t floatToHalf(DType dtype, float value);
float halfToFloat(DType dtype, uint16_t bits);
/// Unit roundoff of the type: 2^-8 for bf16, 2^-11 for f16.
double unitRoundoff(DType dtype);
/// The byte pattern 0xFF.. (what the bench fills outputs with before a run)
/// is a NaN in bf16, f16 and f32.
constexpr uint16_t kPoison16 = 0xFFFF;
constexpr uint32_t kPoison32 = 0xFFFFFFFFu;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// Runs fn(begin, end) over [0, n) split into contiguous chunks on up to
/// `threads` std::threads (0: std::thread::hardware_concurrency()).
void parallelFor(size_t n, unsigned threads,
                 const std::function<void(size_t, size_t)> &fn);
unsigned defaultThreads();

enum class Distribution { Uniform, Normal };
const char *toString(Distribution d);

/// Deterministic inputs: element i of tensor `stream` depends only on (seed,
/// stream, i), not on the thread count. Uniform in [-1, 1] or standard
/// normal, rounded to `dtype`; `bits` gets the 16-bit patterns and `values`
/// their exact float values.
void generateTensor(DType dtype, Distribution dist, uint64_t seed,
                    uint64_t stream, size_t count, std::vector<uint16_t> &bits,
                    std::vector<float> &values, unsigned threads = 0);

//===----------------------------------------------------------------------===//
// Problem shape and the reference
//===----------------------------------------------------------------------===//

struct Strides {
  int64_t batch = 0, seq = 0, head = 0;
  static Strides contiguous(int64_t seq, int64_t heads, int64_t dim) {
    return {seq * heads * dim, heads * dim, dim};
  }
};

struct Shape {
  int64_t batch = 1;
  int64_t seqQ = 1;
  int64_t seqKV = 1;
  int64_t qHeads = 1;
  int64_t kvHeads = 1;
  int64_t headDim = 64;
  int64_t headDimV = 64;
  bool causal = false;
  double scale = 0.125;

  /// "2x1024x1024 h32/8 d128 causal"
  std::string describe() const;
  /// Number of keys query row i sees: [0, visibleKeys(i)).
  int64_t visibleKeys(int64_t i) const;
  /// Sum over query rows of visibleKeys (per batch entry and head).
  double visiblePairs() const;
  /// Average keys per query row (the causal-aware "effective" seqKV).
  double effectiveSeqKV() const { return visiblePairs() / double(seqQ); }
  /// 2 * batch * qHeads * visiblePairs * (headDim + headDimV): the QK^T and
  /// PV products. For headDim == headDimV this is 4 * B * Hq * Sq *
  /// effectiveSeqKV * D.
  double flops() const;
};

/// `count` evenly spaced query rows in [0, seqQ), first and last included,
/// ascending and distinct; all rows when count >= seqQ.
std::vector<int64_t> selectRows(int64_t seqQ, int64_t count);

struct Reference {
  std::vector<int64_t> rows; ///< The query rows computed.
  /// O[b][h][r][dv] for r indexing `rows`.
  std::vector<double> o;
  /// LSE[b][h][r] (natural log; -inf for rows that see no key).
  std::vector<double> lse;
  /// max |V| over the whole input (scales the element-wise bound).
  double maxAbsV = 0;

  size_t index(const Shape &s, int64_t b, int64_t h, size_t r) const {
    return (size_t(b * s.qHeads + h) * rows.size() + r);
  }
};

/// Attention in double precision from float inputs (the exact values of the
/// bf16/f16-rounded data) for the given query rows of every batch entry and
/// query head. Multithreaded over (batch, head) pairs (and row chunks when
/// there are fewer pairs than threads).
void referenceAttention(const Shape &shape, const float *q, const Strides &qs,
                        const float *k, const Strides &ks, const float *v,
                        const Strides &vs, const std::vector<int64_t> &rows,
                        unsigned threads, Reference *out);

//===----------------------------------------------------------------------===//
// Comparison
//===----------------------------------------------------------------------===//

struct Tolerances {
  double relL2 = 1e-2;  ///< ||out - ref|| / ||ref||
  double lseAbs = 1e-3; ///< max |lse_out - lse_ref| over finite rows
  /// Element-wise: |out - ref| <= elementFactor * u * (max|V| + |ref|), with
  /// u the dtype's unit roundoff. Rounding P (relative u per term) and O
  /// (relative u) to the 16-bit type costs at most 2u(max|V| + |ref|) even
  /// if every rounding went the same way, so twice that only catches real
  /// corruption (a garbage element, a broken row or tail) that the L2 norm
  /// of a large tensor could average away.
  double elementFactor = 4;
};
/// rel L2 1e-2 for bf16 and 5e-3 for f16; LSE 1e-3.
Tolerances tolerancesFor(DType dtype);

struct CheckResult {
  uint64_t elementsChecked = 0;
  uint64_t rowsChecked = 0; ///< query rows per (batch, head)
  uint64_t nonFinite = 0;   ///< NaN (incl. unwritten poison) or inf
  uint64_t overBound = 0;   ///< elements beyond the element-wise bound
  double relL2 = 0;
  double maxAbs = 0;
  /// Where maxAbs happened, and the values there.
  int64_t worstB = -1, worstH = -1, worstRow = -1, worstD = -1;
  double worstRef = 0, worstOut = 0;
  /// First non-finite element (for the message).
  int64_t nanB = -1, nanH = -1, nanRow = -1, nanD = -1;

  bool lseChecked = false;
  uint64_t lseCount = 0;
  uint64_t lseNonFinite = 0;      ///< NaN/inf where the reference is finite
  uint64_t lseMaskedMismatch = 0; ///< rows with no key whose LSE isn't -inf
  double lseMaxAbs = 0;
  /// Whether the LSE would pass if the kernel wrote log2 instead of ln.
  bool lseLooksBase2 = false;

  bool pass = true;
  std::vector<std::string> failures;
};

/// Compares a kernel's O (16-bit patterns at `o` with strides `os`) and,
/// when `lse` is non-null, its LSE (float [batch, qHeads, seqQ]) with `ref`.
CheckResult compareOutputs(const Shape &shape, DType dtype,
                           const Reference &ref, const uint16_t *o,
                           const Strides &os, const float *lse,
                           const Tolerances &tol);

/// Difference of two outputs of one shape (16-bit patterns, strides `os`):
/// relative L2 (||got - want|| / ||want||) and max abs over O's logical
/// elements (row padding left out). A NaN anywhere makes both NaN.
struct OutputDiff {
  double relL2 = 0;
  double maxAbs = 0;
};
OutputDiff diffOutputs(const Shape &shape, DType dtype, const uint16_t *got,
                       const uint16_t *want, const Strides &os);

/// Counts 16-bit elements of an output buffer of `totalElements` that lie
/// outside O's [batch, seqQ, qHeads, headDimV] elements (row padding, gaps,
/// the guard after the end) and are no longer kPoison16: writes outside O.
uint64_t countWritesOutside(const Shape &shape, const Strides &os,
                            const uint16_t *buffer, size_t totalElements);

/// Runs the self-test: conversions, the reference against a naive
/// implementation (causal, GQA/MQA, tails, fully masked rows, strides, row
/// subsets), the comparison flagging corrupted outputs, NaN and LSE errors.
/// Prints one line per check; returns the number of failed checks.
int runSelfTest(bool verbose);

} // namespace blasst::bench

#endif // BLASST_BENCH_BENCHCORE_H
