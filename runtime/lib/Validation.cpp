//===- Validation.cpp - Host-side checks before the driver sees anything --===//
//
// The pure validators of the runtime: launch configurations, shared memory
// requests, TMA descriptor parameters and attention arguments. None of them
// touches the driver, so they run (and are tested) without a GPU, and each
// failure names the kernel, tensor or argument at fault - unlike the driver,
// whose answer to most of these mistakes is a bare CUDA_ERROR_INVALID_VALUE
// or a kernel fault much later.
//
//===----------------------------------------------------------------------===//

#include "blasst/Runtime/Runtime.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cstdio>

using namespace blasst::rt;

namespace {

std::string hex(uint64_t value) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%llx",
                static_cast<unsigned long long>(value));
  return buf;
}

std::string str(uint64_t value) { return std::to_string(value); }

std::string quoted(const std::string &name) { return "'" + name + "'"; }

constexpr uint64_t kTmaMaxDim = uint64_t(1) << 32;
constexpr uint64_t kTmaMaxStride = uint64_t(1) << 40;
constexpr unsigned kTmaMaxBox = 256;
constexpr unsigned kTmaMaxElementStride = 8;
constexpr unsigned kTmaMaxRank = 5;

bool isFloatType(CUtensorMapDataType type) {
  switch (type) {
  case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
  case CU_TENSOR_MAP_DATA_TYPE_FLOAT32:
  case CU_TENSOR_MAP_DATA_TYPE_FLOAT64:
  case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16:
  case CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ:
  case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32:
  case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ:
    return true;
  default:
    return false;
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// Shared memory and launch configuration
//===----------------------------------------------------------------------===//

std::string Dim3::str() const {
  return "(" + std::to_string(x) + "," + std::to_string(y) + "," +
         std::to_string(z) + ")";
}

Status blasst::rt::checkSharedMemoryLimit(const std::string &kernelName,
                                          size_t staticBytes,
                                          size_t dynamicBytes,
                                          size_t deviceOptinLimit) {
  // The driver's rule: static + dynamic shared memory of one block must fit
  // the opt-in limit. Saturate instead of wrapping on absurd requests.
  size_t total = dynamicBytes > SIZE_MAX - staticBytes
                     ? SIZE_MAX
                     : staticBytes + dynamicBytes;
  if (total <= deviceOptinLimit)
    return Status::success();
  std::string breakdown;
  if (staticBytes != 0)
    breakdown = " (" + str(staticBytes) + " static + " + str(dynamicBytes) +
                " dynamic)";
  return Status::error("kernel " + quoted(kernelName) + " needs " + str(total) +
                       " bytes of shared memory" + breakdown +
                       ", device allows at most " + str(deviceOptinLimit));
}

Status blasst::rt::validateLaunchConfig(const std::string &kernelName,
                                        Dim3 grid, Dim3 block,
                                        size_t dynamicSharedBytes,
                                        const std::optional<Dim3> &cluster,
                                        const KernelLimits &limits) {
  std::string where = "launch of kernel " + quoted(kernelName) + ": ";
  auto fail = [&](const std::string &what) {
    return Status::error(where + what);
  };

  if (grid.x == 0 || grid.y == 0 || grid.z == 0)
    return fail("grid " + grid.str() +
                " has a zero dimension; every grid dimension must be at "
                "least 1");
  if (grid.x > INT_MAX)
    return fail("grid " + grid.str() + " exceeds CUDA's limit of " +
                str(INT_MAX) + " blocks in x");
  if (grid.y > 65535 || grid.z > 65535)
    return fail("grid " + grid.str() +
                " exceeds CUDA's limit of 65535 blocks in y and z");

  if (block.x == 0 || block.y == 0 || block.z == 0)
    return fail("block " + block.str() +
                " has a zero dimension; every block dimension must be at "
                "least 1");
  if (block.x > 1024 || block.y > 1024 || block.z > 64)
    return fail("block " + block.str() +
                " exceeds CUDA's per-dimension limits (1024, 1024, 64)");
  if (block.count() > 1024)
    return fail("block " + block.str() + " has " + str(block.count()) +
                " threads; CUDA allows at most 1024 per block");
  if (block.count() > limits.maxThreadsPerBlock)
    return fail("block " + block.str() + " has " + str(block.count()) +
                " threads but the kernel allows at most " +
                str(limits.maxThreadsPerBlock) +
                " per block (its register use or launch bounds limit it)");

  if (dynamicSharedBytes > limits.maxDynamicSharedBytes)
    return fail("asks for " + str(dynamicSharedBytes) +
                " bytes of dynamic shared memory but the kernel's limit is " +
                str(limits.maxDynamicSharedBytes) +
                "; raise it first with Function::setMaxDynamicSharedMemory(" +
                str(dynamicSharedBytes) + ")");
  if (dynamicSharedBytes > UINT_MAX)
    return fail("asks for " + str(dynamicSharedBytes) +
                " bytes of dynamic shared memory, more than any launch can "
                "express");

  if (cluster) {
    const Dim3 &c = *cluster;
    if (c.x == 0 || c.y == 0 || c.z == 0)
      return fail("cluster " + c.str() +
                  " has a zero dimension; every cluster dimension must be at "
                  "least 1");
    if (c.count() > kMaxClusterSize)
      return fail("cluster " + c.str() + " has " + str(c.count()) +
                  " blocks; the portable limit is " + str(kMaxClusterSize));
    const char *axis = grid.x % c.x   ? "x"
                       : grid.y % c.y ? "y"
                       : grid.z % c.z ? "z"
                                      : nullptr;
    if (axis)
      return fail("grid " + grid.str() + " is not a multiple of cluster " +
                  c.str() + " in " + axis +
                  "; the grid must consist of whole clusters");
  }
  return Status::success();
}

//===----------------------------------------------------------------------===//
// TMA descriptors
//===----------------------------------------------------------------------===//

const char *blasst::rt::toString(TmaSwizzle swizzle) {
  switch (swizzle) {
  case TmaSwizzle::None:
    return "none";
  case TmaSwizzle::B32:
    return "32B";
  case TmaSwizzle::B64:
    return "64B";
  case TmaSwizzle::B128:
    return "128B";
  }
  return "invalid";
}

unsigned blasst::rt::swizzleSpanBytes(TmaSwizzle swizzle) {
  switch (swizzle) {
  case TmaSwizzle::None:
    return 0;
  case TmaSwizzle::B32:
    return 32;
  case TmaSwizzle::B64:
    return 64;
  case TmaSwizzle::B128:
    return 128;
  }
  return 0;
}

CUtensorMapSwizzle blasst::rt::toCU(TmaSwizzle swizzle) {
  switch (swizzle) {
  case TmaSwizzle::None:
    return CU_TENSOR_MAP_SWIZZLE_NONE;
  case TmaSwizzle::B32:
    return CU_TENSOR_MAP_SWIZZLE_32B;
  case TmaSwizzle::B64:
    return CU_TENSOR_MAP_SWIZZLE_64B;
  case TmaSwizzle::B128:
    return CU_TENSOR_MAP_SWIZZLE_128B;
  }
  return CU_TENSOR_MAP_SWIZZLE_NONE;
}

unsigned blasst::rt::tensorMapElementSize(CUtensorMapDataType dataType) {
  switch (dataType) {
  case CU_TENSOR_MAP_DATA_TYPE_UINT8:
    return 1;
  case CU_TENSOR_MAP_DATA_TYPE_UINT16:
  case CU_TENSOR_MAP_DATA_TYPE_FLOAT16:
  case CU_TENSOR_MAP_DATA_TYPE_BFLOAT16:
    return 2;
  case CU_TENSOR_MAP_DATA_TYPE_UINT32:
  case CU_TENSOR_MAP_DATA_TYPE_INT32:
  case CU_TENSOR_MAP_DATA_TYPE_FLOAT32:
  case CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ:
  case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32:
  case CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ:
    return 4;
  case CU_TENSOR_MAP_DATA_TYPE_UINT64:
  case CU_TENSOR_MAP_DATA_TYPE_INT64:
  case CU_TENSOR_MAP_DATA_TYPE_FLOAT64:
    return 8;
  default:
    // The packed sub-byte types (16U4_*, 16U6_*) have extra rules blasst
    // kernels never need; rejecting them keeps the checks here complete.
    return 0;
  }
}

Status blasst::rt::validateTensorMap(
    const char *tensorName, CUtensorMapDataType dataType, uint32_t rank,
    uint64_t globalAddress, const uint64_t *dims, const uint64_t *stridesBytes,
    const uint32_t *boxDims, const uint32_t *elementStrides,
    CUtensorMapInterleave interleave, TmaSwizzle swizzle,
    CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill) {
  std::string where = std::string("TMA descriptor for ") +
                      quoted(tensorName ? tensorName : "tensor") + ": ";
  auto fail = [&](const std::string &what) {
    return Status::error(where + what);
  };

  if (rank < 1 || rank > kTmaMaxRank)
    return fail("rank " + str(rank) +
                " is out of range; TMA supports ranks 1 "
                "to 5");
  unsigned elementSize = tensorMapElementSize(dataType);
  if (elementSize == 0)
    return fail("data type " + str(static_cast<unsigned>(dataType)) +
                " is not supported (the runtime handles the 1-, 2-, 4- and "
                "8-byte CUtensorMapDataType values)");
  if (interleave != CU_TENSOR_MAP_INTERLEAVE_NONE &&
      interleave != CU_TENSOR_MAP_INTERLEAVE_16B &&
      interleave != CU_TENSOR_MAP_INTERLEAVE_32B)
    return fail("interleave " + str(static_cast<unsigned>(interleave)) +
                " is not a CUtensorMapInterleave value");
  if (swizzle != TmaSwizzle::None && swizzle != TmaSwizzle::B32 &&
      swizzle != TmaSwizzle::B64 && swizzle != TmaSwizzle::B128)
    return fail("swizzle " + str(static_cast<unsigned>(swizzle)) +
                " is not a TmaSwizzle value");
  if (l2Promotion < CU_TENSOR_MAP_L2_PROMOTION_NONE ||
      l2Promotion > CU_TENSOR_MAP_L2_PROMOTION_L2_256B)
    return fail("L2 promotion " + str(static_cast<unsigned>(l2Promotion)) +
                " is not a CUtensorMapL2promotion value");
  if (oobFill != CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE &&
      oobFill != CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA)
    return fail("OOB fill " + str(static_cast<unsigned>(oobFill)) +
                " is not a CUtensorMapFloatOOBfill value");
  if (interleave != CU_TENSOR_MAP_INTERLEAVE_NONE && rank < 3)
    return fail("rank " + str(rank) +
                " is too small for an interleaved layout, which needs rank "
                ">= 3");

  if (!dims)
    return fail("the dims array is null");
  if (rank > 1 && !stridesBytes)
    return fail("the strides array is null (a rank-" + str(rank) +
                " tensor needs " + str(rank - 1) + " stride(s))");
  if (!boxDims)
    return fail("the boxDims array is null");

  bool interleave32 = interleave == CU_TENSOR_MAP_INTERLEAVE_32B;
  uint64_t addressAlignment = interleave32 ? 32 : 16;
  if (globalAddress == 0)
    return fail("the global address is null");
  if (globalAddress % addressAlignment)
    return fail("global address " + hex(globalAddress) + " is not " +
                str(addressAlignment) + "-byte aligned" +
                (interleave32 ? " (required with 32B interleave)" : ""));

  for (uint32_t i = 0; i < rank; ++i) {
    if (dims[i] == 0)
      return fail("dims[" + str(i) +
                  "] is 0; every dimension must be at least 1");
    if (dims[i] > kTmaMaxDim)
      return fail("dims[" + str(i) + "] = " + str(dims[i]) +
                  " exceeds the TMA limit of 2^32 elements");
  }

  uint64_t strideAlignment = interleave32 ? 32 : 16;
  for (uint32_t i = 0; i + 1 < rank; ++i) {
    std::string which = "strides[" + str(i) + "] (the byte stride of dims[" +
                        str(i + 1) + "]) = " + str(stridesBytes[i]) + " bytes";
    if (stridesBytes[i] == 0)
      return fail(which + " must be positive");
    if (stridesBytes[i] % strideAlignment)
      return fail(which + " is not a multiple of " + str(strideAlignment) +
                  (interleave32 ? " (required with 32B interleave)" : ""));
    if (stridesBytes[i] >= kTmaMaxStride)
      return fail(which + " is not below the TMA limit of 2^40 bytes");
  }

  for (uint32_t i = 0; i < rank; ++i) {
    if (boxDims[i] == 0 || boxDims[i] > kTmaMaxBox)
      return fail("boxDims[" + str(i) + "] = " + str(boxDims[i]) +
                  " is outside 1..256");
    if (elementStrides &&
        (elementStrides[i] == 0 || elementStrides[i] > kTmaMaxElementStride))
      return fail("elementStrides[" + str(i) + "] = " + str(elementStrides[i]) +
                  " is outside 1..8");
  }

  uint64_t innerBoxBytes = uint64_t(boxDims[0]) * elementSize;
  std::string innerBox = "the inner box (boxDims[0] = " + str(boxDims[0]) +
                         " x " + str(elementSize) +
                         "-byte elements = " + str(innerBoxBytes) + " bytes)";
  if (interleave == CU_TENSOR_MAP_INTERLEAVE_NONE) {
    if (innerBoxBytes % 16)
      return fail(innerBox + " is not a multiple of 16 bytes");
    unsigned span = swizzleSpanBytes(swizzle);
    if (span && innerBoxBytes > span)
      return fail(innerBox + " exceeds the " + str(span) + "-byte span of " +
                  toString(swizzle) + " swizzle; use boxDims[0] <= " +
                  str(span / elementSize) + " or a wider swizzle");
  }
  if (interleave32 && swizzle != TmaSwizzle::B32)
    return fail(std::string("32B interleave requires 32B swizzle, not ") +
                toString(swizzle));
  if (oobFill == CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA &&
      !isFloatType(dataType))
    return fail("NaN out-of-bounds fill needs a floating-point data type, "
                "not data type " +
                str(static_cast<unsigned>(dataType)));
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Attention arguments
//===----------------------------------------------------------------------===//

void AttentionArgs::setContiguousStrides() {
  qStrides = oStrides = BSHDStrides::contiguous(seqQ, numQHeads, headDim);
  kStrides = vStrides = BSHDStrides::contiguous(seqKV, numKVHeads, headDim);
}

namespace {

/// One [batch, seq, heads, headDim] operand, for the per-tensor checks.
struct Operand {
  const char *name;
  uint64_t address;
  int64_t seqLen;
  int64_t heads;
  const BSHDStrides *strides;
};

/// Q, K, V and O, in that order.
std::array<Operand, 4> operandsOf(const AttentionArgs &a) {
  return {{{"Q", a.q, a.seqQ, a.numQHeads, &a.qStrides},
           {"K", a.k, a.seqKV, a.numKVHeads, &a.kStrides},
           {"V", a.v, a.seqKV, a.numKVHeads, &a.vStrides},
           {"O", a.o, a.seqQ, a.numQHeads, &a.oStrides}}};
}

Status checkStride(const char *tensor, const char *which, int64_t stride,
                   int elementBytes) {
  std::string what = std::string(tensor) + " " + which + " stride (" +
                     std::to_string(stride) + " elements";
  if (stride <= 0)
    return Status::error(what + ") must be positive");
  // Bound before multiplying so the byte count cannot overflow.
  if (uint64_t(stride) >= kTmaMaxStride / uint64_t(elementBytes))
    return Status::error(what + ") is not below 2^40 bytes, the TMA limit");
  uint64_t bytes = uint64_t(stride) * uint64_t(elementBytes);
  what += " = " + str(bytes) + " bytes)";
  if (bytes % 16)
    return Status::error(what + " is not a multiple of 16 bytes, which TMA "
                                "requires");
  return Status::success();
}

/// Whether distinct elements of a strided tensor map to distinct addresses:
/// sorted by stride, each stride must step over the whole extent of the
/// previous dimension. Only dimensions with extent > 1 matter.
Status checkNoSelfOverlap(const char *tensor, int64_t batch, int64_t seqLen,
                          int64_t heads, int64_t headDim,
                          const BSHDStrides &s) {
  struct Dim {
    const char *name;
    int64_t extent;
    int64_t stride;
  };
  Dim all[] = {{"headDim", headDim, 1},
               {"head", heads, s.head},
               {"seq", seqLen, s.seq},
               {"batch", batch, s.batch}};
  std::vector<Dim> dims;
  for (const Dim &d : all)
    if (d.extent > 1)
      dims.push_back(d);
  std::stable_sort(dims.begin(), dims.end(), [](const Dim &a, const Dim &b) {
    return a.stride < b.stride;
  });
  for (size_t i = 1; i < dims.size(); ++i) {
    const Dim &inner = dims[i - 1];
    const Dim &outer = dims[i];
    // outer.stride < inner.extent * inner.stride, written with a division
    // because the product of a 2^31 extent and a 2^40 stride overflows.
    if (outer.stride / inner.extent < inner.stride)
      return Status::error(
          std::string(tensor) + "'s layout overlaps itself: its " + outer.name +
          " stride (" + std::to_string(outer.stride) +
          " elements) is smaller than " + inner.name + " extent x " +
          inner.name + " stride (" + std::to_string(inner.extent) + " x " +
          std::to_string(inner.stride) +
          " elements), so different elements would share an address");
  }
  return Status::success();
}

} // namespace

Status blasst::rt::validateAttentionArgs(const AttentionArgs &a) {
  if (a.elementBytes != 1 && a.elementBytes != 2 && a.elementBytes != 4)
    return Status::error("elementBytes is " + std::to_string(a.elementBytes) +
                         "; expected 1, 2 or 4");

  // Sizes first: the stride and overlap checks below rely on them.
  struct Size {
    const char *name;
    int64_t value;
  };
  for (const Size &size :
       {Size{"batch", a.batch}, Size{"seqQ", a.seqQ}, Size{"seqKV", a.seqKV},
        Size{"numQHeads", a.numQHeads}, Size{"numKVHeads", a.numKVHeads},
        Size{"headDim", a.headDim}}) {
    if (size.value < 1)
      return Status::error(std::string(size.name) + " is " +
                           std::to_string(size.value) +
                           "; it must be at least 1");
    // TMA dimensions are 32-bit; INT_MAX also keeps products in range.
    if (size.value > INT_MAX)
      return Status::error(std::string(size.name) + " is " +
                           std::to_string(size.value) +
                           ", more than the supported " + str(INT_MAX));
  }
  if (a.numQHeads % a.numKVHeads)
    return Status::error(
        "numQHeads (" + std::to_string(a.numQHeads) +
        ") is not a multiple of numKVHeads (" + std::to_string(a.numKVHeads) +
        "); each KV head must serve a whole number of query heads");

  const std::array<Operand, 4> operands = operandsOf(a);
  for (const Operand &op : operands)
    if (op.address == 0)
      return Status::error(std::string(op.name) + " is a null pointer");

  struct Pointer {
    const char *name;
    uint64_t address;
  };
  for (const Pointer &p :
       {Pointer{"Q", a.q}, Pointer{"K", a.k}, Pointer{"V", a.v},
        Pointer{"O", a.o}, Pointer{"LSE", a.lse}, Pointer{"stats", a.stats}}) {
    if (p.address % 16)
      return Status::error(std::string(p.name) + " (" + hex(p.address) +
                           ") is not 16-byte aligned; TMA and vectorised "
                           "accesses need 16-byte aligned base addresses");
  }

  for (const Operand &op : operands) {
    for (Status s :
         {checkStride(op.name, "batch", op.strides->batch, a.elementBytes),
          checkStride(op.name, "seq", op.strides->seq, a.elementBytes),
          checkStride(op.name, "head", op.strides->head, a.elementBytes)})
      if (!s)
        return s;
  }

  // Reading overlapping inputs is harmless (and used for broadcasting), but
  // an output that overlaps itself is written by several blocks at once.
  return checkNoSelfOverlap("O", a.batch, a.seqQ, a.numQHeads, a.headDim,
                            a.oStrides);
}

Status blasst::rt::checkOutputOverlap(const AttentionArgs &a) {
  const std::array<Operand, 4> operands = operandsOf(a);
  // Nor may O share memory with what CTAs still read: K and V are read by
  // every CTA of a head, Q by the CTAs of its tile (all KV splits of a
  // decode tile). In place (O over Q) is refused too: no run has checked it.
  // A paged cache's K and V are a page pool, not [batch, seqKV] rows: not
  // checked here.
  auto extent = [&](const Operand &op) {
    using U = unsigned __int128;
    U last = U(a.batch - 1) * U(op.strides->batch) +
             U(op.seqLen - 1) * U(op.strides->seq) +
             U(op.heads - 1) * U(op.strides->head) + U(a.headDim);
    return std::pair<U, U>{U(op.address),
                           U(op.address) + last * U(a.elementBytes)};
  };
  auto [oLo, oHi] = extent(operands[3]);
  for (int i = 0; i < 3; ++i) {
    const Operand &in = operands[i];
    if (i > 0 && a.blockTable != 0)
      continue;
    auto [lo, hi] = extent(in);
    if (lo < oHi && oLo < hi)
      return Status::error(
          std::string("O (") + hex(a.o) + ") overlaps " + in.name + " (" +
          hex(in.address) + "): the kernel writes O while " +
          (i == 0 ? std::string("CTAs still read Q")
                  : std::string("every CTA of a head still reads ") + in.name) +
          "; give O memory of its own");
  }
  return Status::success();
}
