//===- Compare.h - A kernel's output against the reference ------*- C++ -*-===//
//
// Checks a kernel's O (16-bit) and LSE (float) against a Reference: relative
// L2, an element-wise bound, NaN/inf (unwritten poison), LSE errors (a
// base-2 LSE is recognised), writes outside O; and the difference of two
// kernels' outputs. Plain C++17, no LLVM/MLIR (see Reference.h).
//
//===----------------------------------------------------------------------===//
#ifndef BLASST_REFERENCE_COMPARE_H
#define BLASST_REFERENCE_COMPARE_H

#include "blasst/Reference/Reference.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace blasst::ref {

/// The byte pattern 0xFF.. (what the bench fills outputs with before a run)
/// is a NaN in bf16, f16 and f32.
constexpr uint16_t kPoison16 = 0xFFFF;
constexpr uint32_t kPoison32 = 0xFFFFFFFFu;

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

} // namespace blasst::ref

#endif // BLASST_REFERENCE_COMPARE_H
