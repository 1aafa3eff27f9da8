//===- Runtime.h - Load and launch compiled blasst kernels ------*- C++ -*-===//
//
// The blasst runtime: a small layer over the CUDA Driver API that loads the
// attention cubins the compiler produces, encodes their TMA descriptors,
// validates arguments and launches them.
//
// Plain C++17, no LLVM/MLIR, and no link-time dependency on libcuda:
// libcuda.so.1 is dlopen'ed on first use, so programs linking this library
// build and start on machines without a GPU or driver. There, every call that
// needs the driver returns an error Status saying so. <cuda.h> is included
// for its types and enums only.
//
// Error philosophy: nothing throws and nothing aborts. Every fallible call
// returns a Status whose message says what was being done, to which kernel or
// tensor, and why it failed, e.g.
//   cuModuleLoadData failed while loading kernel 'attn_fwd' from cubin
//   (1234 bytes): CUDA_ERROR_INVALID_IMAGE (device kernel image is invalid)
// Arguments are validated on the host before the driver sees them, because
// the driver's own answer to a bad argument is a bare CUDA_ERROR_INVALID_VALUE.
// The validators are pure functions (no driver needed) so they are unit
// tested on machines without a GPU.
//
// Current context: a call that needs its object's context (loading, freeing,
// copies, AttentionKernel::launch, timers, Context::synchronize) makes it
// current for the call and restores the calling thread's previous current
// context (nullptr included) before returning, so the runtime never leaves a
// host application (PyTorch, say) in another context. Only Context::create
// and Context::makeCurrent change the current context, which is their job;
// rt::launch and rt::synchronize act on the current one.
//
//===----------------------------------------------------------------------===//
#ifndef BLASST_RUNTIME_RUNTIME_H
#define BLASST_RUNTIME_RUNTIME_H

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace blasst::rt {

//===----------------------------------------------------------------------===//
// Status
//===----------------------------------------------------------------------===//

/// Success, or failure with a human-readable message. [[nodiscard]] so that a
/// dropped error is a compiler warning rather than a silent wrong answer.
class [[nodiscard]] Status {
public:
  /// A default-constructed Status is success.
  Status() = default;
  static Status success() { return Status(); }
  static Status error(std::string message);

  bool ok() const { return isOk; }
  explicit operator bool() const { return isOk; }
  /// Empty on success.
  const std::string &message() const { return msg; }

private:
  bool isOk = true;
  std::string msg;
};

/// Reads a whole file of at most `maxBytes` (256 MiB: a cubin is a few MiB),
/// so that a device or a pipe (say /dev/zero) cannot make a read run forever
/// or exhaust memory. Errors: "cannot open <what> '<path>': <reason>",
/// "cannot read <what> '<path>': larger than 256 MiB" and the like.
/// `openErrno`: errno where the file could not be opened (ENOENT: it does not
/// exist), else 0.
Status readWholeFile(const std::string &path, const char *what,
                     std::string *out, int *openErrno = nullptr,
                     size_t maxBytes = size_t(256) << 20);

/// Formats a driver error as "<what>: CUDA_ERROR_X (description)". `what`
/// says what was being done, e.g. "cuModuleLoadData failed while loading
/// kernel 'attn_fwd' from cubin (1234 bytes)". Uses the driver's own name and
/// description when the driver is loaded, else a built-in table, so it also
/// works (and is testable) without a GPU. Some codes get a hint appended.
std::string explain(CUresult result, const char *what);
std::string explain(CUresult result, const std::string &what);

//===----------------------------------------------------------------------===//
// Driver loading and devices
//===----------------------------------------------------------------------===//

/// The library dlopen'ed when nothing overrides it.
inline constexpr const char *kDefaultDriverLibrary = "libcuda.so.1";

/// Loads the driver (dlopen + dlsym of every entry point used) and runs
/// cuInit(0), once per process; later calls return the cached outcome. The
/// library is $BLASST_LIBCUDA when set and non-empty, else libcuda.so.1.
/// Called implicitly by everything that needs the driver.
Status initDriver();

/// Makes the next driver use dlopen `library` instead (nullptr: back to
/// $BLASST_LIBCUDA / libcuda.so.1) and forgets the cached outcome. For tests
/// that prove a missing driver is reported cleanly. Objects created before
/// stay valid only if the same driver is loaded again; do not call it while
/// other threads use the runtime.
void setDriverLibraryForTesting(const char *library);

/// True when the driver loads, initialises and reports at least one GPU.
/// Otherwise false with the reason in *why (if non-null). Tests use this to
/// GTEST_SKIP() cleanly on machines without a GPU.
bool deviceAvailable(std::string *why = nullptr);

/// Number of GPUs the driver sees.
Status deviceCount(int *count);

/// What the runtime needs to know about a GPU, queried once per Context.
struct DeviceInfo {
  int ordinal = -1;
  std::string name;
  int computeCapabilityMajor = 0;
  int computeCapabilityMinor = 0;
  int multiprocessorCount = 0;
  int maxThreadsPerBlock = 0;
  /// Shared memory a block gets without opting in (48 KiB on all recent GPUs).
  int maxSharedMemoryPerBlock = 0;
  /// Shared memory a block may use after raising the kernel's limit with
  /// Function::setMaxDynamicSharedMemory (227 KiB on Hopper).
  int maxSharedMemoryPerBlockOptin = 0;
  /// e.g. 13000 for a driver that supports CUDA 13.0.
  int driverVersion = 0;
  /// Peak memory clock (kHz) and global memory bus width (bits); 0 where the
  /// driver does not say.
  int memoryClockKHz = 0;
  int memoryBusWidthBits = 0;

  /// Peak DRAM bandwidth in bytes per second, 2 x clock x bus width / 8
  /// (double data rate; H100 SXM 3.35e12, H200 4.8e12); 0 when unknown.
  double dramBytesPerSecond() const {
    return 2.0 * 1e3 * double(memoryClockKHz) * double(memoryBusWidthBits) /
           8.0;
  }

  /// "NVIDIA H200 (GPU 0, sm_90, 132 SMs, 232448 bytes of shared memory per
  /// block with opt-in, 4.92 TB/s of DRAM)" (the bandwidth where known).
  std::string describe() const;
};

/// A GPU and its primary context (the one the CUDA runtime API also uses, so
/// buffers are shareable with PyTorch and friends). Move-only; releases the
/// primary context on destruction. Must outlive the Modules, DeviceBuffers
/// and EventTimers created with it.
class Context {
public:
  Context() = default;
  ~Context();
  Context(Context &&other) noexcept;
  Context &operator=(Context &&other) noexcept;
  Context(const Context &) = delete;
  Context &operator=(const Context &) = delete;

  /// Initialises the driver, opens GPU `ordinal`, retains its primary context,
  /// queries DeviceInfo and makes the context current on the calling thread.
  static Status create(int ordinal, Context *out);

  /// Makes this context current on the calling thread (a no-op if it is).
  /// Needed before rt::launch and rt::synchronize, which act on the current
  /// context; the objects' own methods switch (and switch back) themselves.
  Status makeCurrent() const;
  /// Waits for all work in the context (cuCtxSynchronize); the calling
  /// thread's current context is the same afterwards.
  Status synchronize() const;

  bool valid() const { return ctx != nullptr; }
  const DeviceInfo &info() const { return deviceInfo; }
  CUcontext get() const { return ctx; }
  CUdevice device() const { return dev; }

private:
  void release();

  CUcontext ctx = nullptr;
  CUdevice dev = 0;
  DeviceInfo deviceInfo;
};

//===----------------------------------------------------------------------===//
// Modules, functions and shared memory
//===----------------------------------------------------------------------===//

class Function;

/// A loaded cubin (also accepts fatbins and NUL-terminated PTX, which the
/// driver JIT-compiles). Move-only; unloads on destruction.
class Module {
public:
  Module() = default;
  ~Module();
  Module(Module &&other) noexcept;
  Module &operator=(Module &&other) noexcept;
  Module(const Module &) = delete;
  Module &operator=(const Module &) = delete;

  /// Loads an in-memory image. `name` only labels error messages (use the
  /// kernel's or file's name). The image is not needed after the call.
  static Status loadData(const Context &context, const void *image, size_t size,
                         const std::string &name, Module *out);
  /// Reads `path` and loads it; error messages name the path.
  static Status loadFile(const Context &context, const std::string &path,
                         Module *out);

  /// Looks up a kernel (its mangled/entry name). A missing name is reported
  /// together with the module's name.
  Status getFunction(const std::string &kernelName, Function *out) const;
  /// Copies a global variable of the module to the host
  /// (cuModuleGetGlobal + cuMemcpyDtoH; synchronous, so it waits for the
  /// work launched before). A missing name is an error that says so.
  Status readGlobal(const std::string &globalName,
                    std::vector<uint8_t> *out) const;

  bool valid() const { return module != nullptr; }
  const std::string &name() const { return moduleName; }
  CUmodule get() const { return module; }

private:
  void unload();

  CUmodule module = nullptr;
  CUcontext ctx = nullptr;
  std::string moduleName;
  int sharedMemoryOptinLimit = 0;
};

/// A kernel in a Module. A cheap copyable handle; valid while its Module is.
class Function {
public:
  Function() = default;

  /// Raises the kernel's dynamic shared memory limit to `bytes`
  /// (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES). Checks first, with
  /// checkSharedMemoryLimit, that the kernel's static shared memory plus
  /// `bytes` fits the device's opt-in limit. Required before launching with
  /// more than 48 KiB of dynamic shared memory.
  Status setMaxDynamicSharedMemory(size_t bytes) const;

  /// cuFuncGetAttribute, with an error message naming the kernel.
  Status getAttribute(CUfunction_attribute attribute, int *value) const;

  bool valid() const { return function != nullptr; }
  const std::string &name() const { return kernelName; }
  const std::string &moduleName() const { return ownerName; }
  CUfunction get() const { return function; }

private:
  friend class Module;
  CUfunction function = nullptr;
  CUcontext ctx = nullptr;
  std::string kernelName;
  std::string ownerName;
  int sharedMemoryOptinLimit = 0;
};

/// Pure check behind Function::setMaxDynamicSharedMemory: a block of
/// `kernelName` needs `staticBytes + dynamicBytes` of shared memory, which
/// must not exceed `deviceOptinLimit`
/// (CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN). Error example:
/// "kernel 'attn_fwd' needs 235520 bytes of shared memory, device allows at
/// most 232448".
Status checkSharedMemoryLimit(const std::string &kernelName, size_t staticBytes,
                              size_t dynamicBytes, size_t deviceOptinLimit);

//===----------------------------------------------------------------------===//
// Launching
//===----------------------------------------------------------------------===//

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
  Dim3() = default;
  Dim3(unsigned dimX, unsigned dimY = 1, unsigned dimZ = 1)
      : x(dimX), y(dimY), z(dimZ) {}
  uint64_t count() const { return uint64_t(x) * y * z; }
  std::string str() const; // "(x,y,z)"
};

/// What a kernel allows, for validateLaunchConfig. launch() queries the real
/// values from the kernel; the defaults are what any CUDA kernel allows.
struct KernelLimits {
  /// CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK (lower than 1024 when registers
  /// or __launch_bounds__ limit it).
  unsigned maxThreadsPerBlock = 1024;
  /// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (48 KiB until raised).
  size_t maxDynamicSharedBytes = 48 * 1024;
};

/// The largest cluster the runtime launches: 8 is the portable limit on
/// Hopper; 16 would need the non-portable opt-in, which blasst kernels don't
/// use.
inline constexpr unsigned kMaxClusterSize = 8;

/// Pure check of a launch configuration: grid and block dimensions within
/// CUDA's limits and non-zero, block size within `limits`, dynamic shared
/// memory within the kernel's limit, cluster dimensions non-zero, at most
/// kMaxClusterSize blocks, dividing the grid.
Status validateLaunchConfig(const std::string &kernelName, Dim3 grid,
                            Dim3 block, size_t dynamicSharedBytes,
                            const std::optional<Dim3> &cluster,
                            const KernelLimits &limits = KernelLimits());

/// Launches `function` through cuLaunchKernelEx after validateLaunchConfig
/// (with the kernel's real limits). `kernelParams` is the usual array of
/// pointers to each argument (a CUtensorMap argument: a pointer to the
/// 64-byte aligned host copy). With `cluster`, the launch uses thread-block
/// clusters of that shape. The current context must be the function's (see
/// Context::makeCurrent). Asynchronous: kernel faults surface at the next
/// synchronize.
/// `programmaticDependent`: the launch may start before the previous work
/// on `stream` finished (programmatic stream serialization; the kernel
/// waits with griddepcontrol.wait).
Status launch(const Function &function, Dim3 grid, Dim3 block,
              size_t dynamicSharedBytes, CUstream stream, void **kernelParams,
              std::optional<Dim3> cluster = std::nullopt,
              bool programmaticDependent = false);

/// Waits for `stream` (nullptr: the legacy default stream).
Status synchronize(CUstream stream = nullptr);

//===----------------------------------------------------------------------===//
// TMA descriptors
//===----------------------------------------------------------------------===//

/// The swizzle modes blasst kernels use. `B128` etc. swizzle 16-byte chunks
/// within a 128/64/32-byte span; the span bounds the inner box size.
enum class TmaSwizzle { None, B32, B64, B128 };

const char *toString(TmaSwizzle swizzle);
/// Span in bytes (0 for None).
unsigned swizzleSpanBytes(TmaSwizzle swizzle);
CUtensorMapSwizzle toCU(TmaSwizzle swizzle);

/// Size in bytes of one element, or 0 for types the runtime does not support
/// (the packed sub-byte types and out-of-range values).
unsigned tensorMapElementSize(CUtensorMapDataType dataType);

/// Pure check of cuTensorMapEncodeTiled's documented requirements, so a bad
/// descriptor is reported with the tensor's name and the offending field
/// instead of CUDA_ERROR_INVALID_VALUE:
///  - rank in 1..5 (>= 3 when interleaved); a supported data type;
///  - globalAddress non-null and 16-byte aligned (32 with 32B interleave);
///  - dims[i] in 1..2^32;
///  - stridesBytes (rank-1 of them; stridesBytes[i] is the stride of
///    dimension i+1) non-zero multiples of 16 (32 with 32B interleave) below
///    2^40;
///  - boxDims[i] in 1..256, boxDims[0] * elementSize a multiple of 16 bytes,
///    and at most the swizzle span when swizzled;
///  - elementStrides[i] in 1..8 (nullptr means all 1);
///  - 32B interleave only with 32B swizzle; NaN OOB fill only for floats.
/// Dimensions are innermost first, as in the driver API.
Status validateTensorMap(const char *tensorName, CUtensorMapDataType dataType,
                         uint32_t rank, uint64_t globalAddress,
                         const uint64_t *dims, const uint64_t *stridesBytes,
                         const uint32_t *boxDims,
                         const uint32_t *elementStrides,
                         CUtensorMapInterleave interleave, TmaSwizzle swizzle,
                         CUtensorMapL2promotion l2Promotion,
                         CUtensorMapFloatOOBfill oobFill);

/// validateTensorMap, then cuTensorMapEncodeTiled into `*out` (which must be
/// 64-byte aligned; CUtensorMap's own alignment guarantees that).
Status encodeTensorMap(CUtensorMap *out, const char *tensorName,
                       CUtensorMapDataType dataType, uint32_t rank,
                       uint64_t globalAddress, const uint64_t *dims,
                       const uint64_t *stridesBytes, const uint32_t *boxDims,
                       const uint32_t *elementStrides,
                       CUtensorMapInterleave interleave, TmaSwizzle swizzle,
                       CUtensorMapL2promotion l2Promotion,
                       CUtensorMapFloatOOBfill oobFill);

/// A row-major [rows, cols] matrix with `rowStrideBytes` between rows, read
/// in [boxRows, boxCols] tiles. No interleave, 256-byte L2 promotion, zero
/// out-of-bounds fill.
Status encodeTiled2D(CUtensorMap *out, const char *tensorName,
                     CUtensorMapDataType dataType, uint64_t globalAddress,
                     uint64_t rows, uint64_t cols, uint64_t rowStrideBytes,
                     uint32_t boxRows, uint32_t boxCols,
                     TmaSwizzle swizzle = TmaSwizzle::B128);

/// Element strides of a [batch, seq, heads, headDim] tensor whose innermost
/// (headDim) stride is 1.
struct BSHDStrides {
  int64_t batch = 0;
  int64_t seq = 0;
  int64_t head = 0;

  /// Strides of a densely packed [batch, seq, heads, headDim] tensor.
  static BSHDStrides contiguous(int64_t seqLen, int64_t heads,
                                int64_t headDim) {
    return {seqLen * heads * headDim, heads * headDim, headDim};
  }
};

/// A rank-4 descriptor of a [batch, seq, heads, headDim] tensor (driver
/// order {headDim, heads, seq, batch}) read in tiles of `boxSeq` rows by
/// `boxHeadDim` columns of one head of one batch entry.
Status encodeTiledBSHD(CUtensorMap *out, const char *tensorName,
                       CUtensorMapDataType dataType, uint64_t globalAddress,
                       int64_t batch, int64_t seqLen, int64_t heads,
                       int64_t headDim, const BSHDStrides &strides,
                       uint32_t boxSeq, uint32_t boxHeadDim,
                       TmaSwizzle swizzle = TmaSwizzle::B128,
                       uint32_t boxHeads = 1);

//===----------------------------------------------------------------------===//
// Attention arguments
//===----------------------------------------------------------------------===//

/// Who merges a decode launch's KV splits (AttentionArgs::splitMerge).
enum class SplitMerge { Auto, InKernel, MergeKernel };

/// The runtime arguments of one attention launch. Q and O are [batch, seqQ,
/// numQHeads, headDim], K and V [batch, seqKV, numKVHeads, headDim], each with
/// its own element strides (innermost stride 1). Pointers are device
/// addresses; 0 means absent (only allowed for lse and stats).
struct AttentionArgs {
  uint64_t q = 0, k = 0, v = 0, o = 0;
  /// Optional log-sum-exp output (one float per query row and head).
  uint64_t lse = 0;
  /// Optional block-sparsity counters (per batch entry and head).
  uint64_t stats = 0;
  /// Optional: one float in device memory holding the BLASST threshold
  /// (kernel ABI parameter 13), read by the kernel when it runs instead of
  /// the by-value threshold. Only for BLASST kernels.
  uint64_t log2ThresholdPtr = 0;
  /// The launch zeroes the counters at `stats` first (one cuMemsetD32Async
  /// on the launch's stream, captured by CUDA graphs like the kernel), so
  /// the caller need not: the kernel only adds to them.
  bool zeroStats = false;

  int64_t batch = 0;
  int64_t seqQ = 0;
  int64_t seqKV = 0;
  int64_t numQHeads = 0;
  int64_t numKVHeads = 0;
  int64_t headDim = 0;
  /// Bytes per element of Q, K, V and O: 2 for bf16/f16 (1 and 4 accepted).
  int elementBytes = 2;

  /// Decode kernels (split KV): device memory for the splits' partial O and
  /// LSE and the per-tile counters (AttentionKernel::workspaceBytes; zeroed
  /// before its first use, the kernel leaves it reusable; one launch at a
  /// time), and its size. Needed when the launch uses more than one split.
  uint64_t workspace = 0;
  size_t workspaceBytes = 0;
  /// Decode kernels: the KV splits (0: the kernel's kv_splits, else chosen
  /// at launch, where a kernel with a lean entry may launch that instead).
  /// Lean kernels: s > 0 asks for tiles x s CTAs (0: chooseLeanSplits).
  int kvSplits = 0;
  /// Decode kernels built with merge_kernel (KernelInfo::mergeKernel): who
  /// merges the splits' partials. Auto: the split model picks per launch
  /// (chooseDecodeSplits: the in-kernel merge's round trips against the
  /// merge kernel's launch); InKernel: each tile's last split; MergeKernel:
  /// the second kernel <kernel>_merge (an error for kernels without it).
  /// Other kernels merge in the kernel (Auto and InKernel).
  SplitMerge splitMerge = SplitMerge::Auto;

  /// Decode KV caches (the spec's kv_lengths and kv_cache; kernel
  /// parameters 15-17). seqLensKV: int32 [batch] in device memory, each
  /// sequence's KV length (0 allowed), for kv_lengths = per_sequence
  /// kernels; seqKV is then an upper bound of them (it sizes the splits and,
  /// for a contiguous cache, K and V's seq dimension; the kernel takes a
  /// length past it, or a negative one (compared unsigned), as seqKV, so
  /// it never reads past the cache). blockTable:
  /// int32 [batch, maxPages] page indices for a paged kv_cache; K and V are
  /// then [numPages, page, kv_heads, head_dim] (kStrides/vStrides: batch = the
  /// page stride, seq = the token stride). The caller guarantees every
  /// length <= maxPages * page (the kernel clamps its table reads to the
  /// row; the host checks seqKV, the runtime cannot read device lengths),
  /// table entries in [0, numPages) (others read as zeros), and finite K/V
  /// values at the positions past each length inside its last page or its
  /// contiguous rows (their weight is exactly 0, but 0 x NaN is NaN).
  uint64_t seqLensKV = 0;
  uint64_t blockTable = 0;
  int64_t maxPages = 0;
  int64_t numPages = 0;

  BSHDStrides qStrides, kStrides, vStrides, oStrides;

  /// Fills all four stride sets for densely packed tensors.
  void setContiguousStrides();
};

/// Pure validation of AttentionArgs before any launch, so that a bad argument
/// is reported by name ("Q is a null pointer", "K seq stride (100 elements =
/// 200 bytes) is not a multiple of 16 bytes, which TMA requires") instead of
/// as a kernel fault or CUDA_ERROR_INVALID_VALUE. Checks: Q/K/V/O non-null;
/// every present pointer 16-byte aligned; element size 1, 2 or 4; batch,
/// sequence lengths, head counts and headDim >= 1; numKVHeads divides
/// numQHeads; strides positive multiples of 16 bytes below 2^40 bytes;
/// O's layout not overlapping itself. Overlap between O and the inputs is
/// checkOutputOverlap's (the pointers of a workspace query may be stand-ins).
Status validateAttentionArgs(const AttentionArgs &args);

/// For a launch (AttentionKernel::prepare runs it; args already validated):
/// O shares no memory with Q, K or V. K and V are read by every CTA of a
/// head and Q by the CTAs of its tile while O is written; in place (O over
/// Q) is refused too, since no run has checked it. A paged cache's K and V
/// (blockTable set) are a page pool, not checked.
Status checkOutputOverlap(const AttentionArgs &args);

//===----------------------------------------------------------------------===//
// Memory and timing helpers
//===----------------------------------------------------------------------===//

/// Owning device allocation (cuMemAlloc). Move-only; frees on destruction.
/// `label` names the buffer in error messages.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer &&other) noexcept;
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

  static Status allocate(const Context &context, size_t bytes,
                         const std::string &label, DeviceBuffer *out);

  /// Synchronous copies; [offset, offset + bytes) must lie in the buffer.
  Status copyFromHost(const void *src, size_t bytes, size_t offset = 0);
  Status copyToHost(void *dst, size_t bytes, size_t offset = 0) const;
  /// Sets every byte to `value`.
  Status fill(uint8_t value);

  template <typename T> Status upload(const std::vector<T> &host) {
    return copyFromHost(host.data(), host.size() * sizeof(T));
  }
  template <typename T> Status download(std::vector<T> &host) const {
    return copyToHost(host.data(), host.size() * sizeof(T));
  }

  bool valid() const { return ptr != 0; }
  CUdeviceptr get() const { return ptr; }
  /// The address as the uint64 that AttentionArgs and encodeTensorMap take.
  uint64_t address() const { return static_cast<uint64_t>(ptr); }
  size_t size() const { return bytes; }
  const std::string &label() const { return name; }

private:
  void release();
  Status checkRange(const char *op, size_t count, size_t offset) const;

  CUdeviceptr ptr = 0;
  size_t bytes = 0;
  CUcontext ctx = nullptr;
  std::string name;
};

/// GPU-side timing with a pair of events: start(stream), launch work,
/// stop(stream), then elapsedMs() waits for the stop event.
class EventTimer {
public:
  EventTimer() = default;
  ~EventTimer();
  EventTimer(EventTimer &&other) noexcept;
  EventTimer &operator=(EventTimer &&other) noexcept;
  EventTimer(const EventTimer &) = delete;
  EventTimer &operator=(const EventTimer &) = delete;

  static Status create(const Context &context, EventTimer *out);

  Status start(CUstream stream = nullptr);
  Status stop(CUstream stream = nullptr);
  /// Milliseconds between start and stop; blocks until stop has happened.
  Status elapsedMs(float *ms) const;

  bool valid() const { return startEvent != nullptr; }

private:
  void release();

  CUevent startEvent = nullptr;
  CUevent stopEvent = nullptr;
  CUcontext ctx = nullptr;
  bool started = false;
  bool stopped = false;
};

} // namespace blasst::rt

#endif // BLASST_RUNTIME_RUNTIME_H
