//===- Reference.h - Attention on the CPU, in double precision --*- C++ -*-===//
//
// The CPU reference that kernels are checked against: bf16/f16 conversions,
// seeded input generation and the double-precision reference attention (O
// and LSE). Plain C++17 with no LLVM/MLIR and no driver, like
// blasst/Spec: blasst-bench uses it on GPU machines that have neither.
// Compare.h checks a kernel's output against it; SkipModel.h models BLASST
// block skipping.
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
#ifndef BLASST_REFERENCE_REFERENCE_H
#define BLASST_REFERENCE_REFERENCE_H

#include "blasst/Spec/AttentionSpec.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace blasst::ref {

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

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// Runs fn(begin, end) over [0, n) split into contiguous chunks on up to
/// `threads` std::threads (0: std::thread::hardware_concurrency()).
void parallelFor(size_t n, unsigned threads,
                 const std::function<void(size_t, size_t)> &fn);
unsigned defaultThreads();
/// Runs `worker` on min(workers, max(tasks, 1)) threads (the calling thread
/// is one of them) and waits: workers that take their tasks from a shared
/// counter.
void runWorkers(size_t workers, size_t tasks,
                const std::function<void()> &worker);

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

/// The largest |V| over the tensor (the tolerances scale with it).
double maxAbsOfV(const Shape &s, const float *v, const Strides &vs);

/// Attention in double precision from float inputs (the exact values of the
/// bf16/f16-rounded data) for the given query rows of every batch entry and
/// query head. Multithreaded over (batch, head) pairs (and row chunks when
/// there are fewer pairs than threads).
void referenceAttention(const Shape &shape, const float *q, const Strides &qs,
                        const float *k, const Strides &ks, const float *v,
                        const Strides &vs, const std::vector<int64_t> &rows,
                        unsigned threads, Reference *out);

} // namespace blasst::ref

#endif // BLASST_REFERENCE_REFERENCE_H
