//===- FakeDriver.cpp - A stand-in libcuda for GPU-free runtime tests -----===//
//
// Exports every driver entry point the runtime dlsym's (Driver.h), with one
// "sm_90" GPU (blasstFakeSetComputeCapability makes it another) that runs
// nothing: launches are recorded, not executed, and so are the tensor maps
// encoded and the ones a launch passes. Tests
// point the runtime at it (setDriverLibraryForTesting) to check what the host
// side does on any machine: which context is current during a launch and
// after it, and which parameters a launch passes. The blasstFake* functions
// let a test read what was recorded (dlsym them from the same library).
//
//===----------------------------------------------------------------------===//
#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>

namespace {
// The GPU's primary context and the module handle: distinct addresses that
// nobody dereferences.
int primaryContext, fakeModule, fakeEvent;
/// A function handle points at one of these: each cuModuleGetFunction call
/// gives a new one, so each function keeps its own attributes, as with the
/// real driver (one shared limit let a later kernel's size stand for an
/// earlier kernel's lean entry). Never freed (a test process is short).
struct FakeFunction {
  int dynamicSmem = 0;
  std::string name;
};
std::mutex functionsMutex;
std::deque<FakeFunction> functions;
thread_local CUcontext current = nullptr;
std::atomic<int> launches{0};
std::atomic<int> setCurrentCalls{0};
float lastThreshold = 0;
CUcontext contextAtLaunch = nullptr;
std::atomic<uint64_t> nextAddress{0x100000000ull};
struct Memset {
  CUdeviceptr ptr;
  unsigned value;
  size_t words;
} lastMemset{};
std::atomic<int> memsets{0};
int ccMajor = 9, ccMinor = 0;
/// The memory clock (kHz) and bus width (bits) it reports: an H200's (4.9
/// TB/s), or the clock in $BLASST_FAKE_MEMORY_CLOCK_KHZ (2619000 with the
/// 6144-bit bus: 4.0 TB/s, under kTmaDecodeMaxBytesPerSecond).
int memoryClockKHz = 3201000, memoryBusWidthBits = 6144;
/// What cuTensorMapEncodeTiled was asked for; the map it "encodes" holds the
/// call's number (from 1) at byte kMapTag, so a launch's tensor-map
/// parameters can be traced back to their encode calls.
struct Encode {
  CUtensorMapDataType dataType;
  unsigned rank;
  uint64_t address;
  uint64_t dims[5], strides[4];
  unsigned box[5];
  CUtensorMapSwizzle swizzle;
  CUtensorMapFloatOOBfill oobFill;
};
constexpr int kMaxEncodes = 64;
Encode encodes[kMaxEncodes];
std::atomic<int> encodeCount{0};
/// The tags (see kMapTag) of the launch's parameters 0, 1, 2 and 18.
uint64_t launchedMaps[19];
/// Where a fake map keeps its encode call's number: after the dims (from
/// byte 0) and the box (from byte 64) that the KV cache tests read.
constexpr size_t kMapTag = 96;
uint64_t lastKVCache[3] = {};
/// The last launch's pointer parameters 3 (O), 4 (LSE), 5 (statistics), 13
/// (the threshold's device pointer) and 14 (the split-KV workspace).
uint64_t lastPointers[5] = {};
/// The last launch's grid, block x and whether it allowed programmatic
/// stream serialization (a dependent launch), and the previous launch's.
struct Shape {
  unsigned grid[3], block;
  int dependent;
} lastShape{}, previousShape{};
/// The name the last and the previous launch's function was looked up by.
std::string lastFunction, previousFunction;
} // namespace

extern "C" {

// What the tests read.
int blasstFakeLaunches() { return launches; }
/// The grid, block x and dependent flag of the last launch (`which` 0) or
/// the one before it (1).
void blasstFakeLaunchShape(int which, unsigned grid[3], unsigned *block,
                           int *dependent) {
  const Shape &s = which == 0 ? lastShape : previousShape;
  for (int i = 0; i < 3; ++i)
    grid[i] = s.grid[i];
  *block = s.block;
  *dependent = s.dependent;
}
/// The name of the function the last launch (`which` 0) or the one before it
/// (1) ran.
const char *blasstFakeLaunchedFunction(int which) {
  return (which == 0 ? lastFunction : previousFunction).c_str();
}
/// The last launch's pointer parameters 3, 4, 5, 13 and 14 (O, LSE,
/// statistics, the threshold pointer, the workspace), in that order.
void blasstFakeLastPointers(uint64_t out[5]) {
  for (int i = 0; i < 5; ++i)
    out[i] = lastPointers[i];
}
float blasstFakeLastThreshold() { return lastThreshold; }
CUcontext blasstFakeContextAtLaunch() { return contextAtLaunch; }
CUcontext blasstFakePrimaryContext() {
  return reinterpret_cast<CUcontext>(&primaryContext);
}
int blasstFakeSetCurrentCalls() { return setCurrentCalls; }
/// The last launch's parameters 15 (KV lengths), 16 (block table) and 17
/// (max pages).
void blasstFakeLastKVCache(uint64_t out[3]) {
  for (int i = 0; i < 3; ++i)
    out[i] = lastKVCache[i];
}
/// cuMemsetD32Async calls, and the last one's pointer, value and words.
int blasstFakeMemsets() { return memsets; }
void blasstFakeLastMemset(uint64_t *ptr, unsigned *value, size_t *words) {
  *ptr = lastMemset.ptr;
  *value = lastMemset.value;
  *words = lastMemset.words;
}

/// The compute capability (and name "Fake sm_XY GPU") of contexts created
/// from now on.
void blasstFakeSetComputeCapability(int major, int minor) {
  ccMajor = major;
  ccMinor = minor;
}
/// The memory clock (kHz) and bus width (bits) of contexts created from now
/// on (0: the driver does not say).
void blasstFakeSetMemory(int clockKHz, int busWidthBits) {
  memoryClockKHz = clockKHz;
  memoryBusWidthBits = busWidthBits;
}
/// Encode calls so far (numbered from 1), and call `i`'s arguments: rank,
/// address, dims, byte strides (rank - 1), box, swizzle and OOB fill as
/// their CUDA enum values. False when there is no call `i` (or it is not
/// among the last kMaxEncodes, which are kept).
int blasstFakeEncodes() { return encodeCount; }
bool blasstFakeEncode(int i, unsigned *rank, uint64_t *address,
                      uint64_t *dims, uint64_t *strides, unsigned *box,
                      int *swizzle, int *oobFill, int *dataType) {
  if (i < 1 || i > encodeCount || i <= encodeCount - kMaxEncodes)
    return false;
  const Encode &e = encodes[(i - 1) % kMaxEncodes];
  *rank = e.rank;
  *address = e.address;
  for (unsigned d = 0; d < e.rank; ++d) {
    dims[d] = e.dims[d];
    box[d] = e.box[d];
    if (d + 1 < e.rank)
      strides[d] = e.strides[d];
  }
  *swizzle = int(e.swizzle);
  *oobFill = int(e.oobFill);
  *dataType = int(e.dataType);
  return true;
}
/// The encode call whose map the last launch passed as parameter `param`
/// (0, 1, 2 or 18); 0 for none.
uint64_t blasstFakeLaunchedMap(int param) {
  return param >= 0 && param < 19 ? launchedMaps[param] : 0;
}

CUresult CUDAAPI cuInit(unsigned int) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuDriverGetVersion(int *v) {
  *v = 13000;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGetErrorName(CUresult, const char **s) {
  *s = "CUDA_ERROR_FAKE";
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGetErrorString(CUresult, const char **s) {
  *s = "fake driver error";
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetCount(int *n) {
  *n = 1;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGet(CUdevice *d, int ordinal) {
  if (ordinal != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  *d = 0;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice) {
  switch (a) {
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
    *v = ccMajor;
    break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
    *v = ccMinor;
    break;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
    *v = 132;
    break;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
    *v = 1024;
    break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
    *v = 48 * 1024;
    break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
    *v = 232448;
    break;
  case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE:
    *v = memoryClockKHz;
    if (const char *env = std::getenv("BLASST_FAKE_MEMORY_CLOCK_KHZ"))
      *v = std::atoi(env);
    break;
  case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH:
    *v = memoryBusWidthBits;
    break;
  default:
    *v = 0;
  }
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice) {
  std::string n =
      "Fake sm_" + std::to_string(ccMajor) + std::to_string(ccMinor) + " GPU";
  std::strncpy(name, n.c_str(), size_t(len));
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxGetCurrent(CUcontext *c) {
  *c = current;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxSetCurrent(CUcontext c) {
  ++setCurrentCalls;
  current = c;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxSynchronize() {
  return current ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}
CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice) {
  *c = blasstFakePrimaryContext();
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuModuleLoadData(CUmodule *m, const void *) {
  if (!current)
    return CUDA_ERROR_INVALID_CONTEXT;
  *m = reinterpret_cast<CUmodule>(&fakeModule);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuModuleUnload(CUmodule) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuModuleGetFunction(CUfunction *f, CUmodule,
                                     const char *name) {
  std::lock_guard<std::mutex> lock(functionsMutex);
  functions.emplace_back();
  functions.back().name = name ? name : "";
  *f = reinterpret_cast<CUfunction>(&functions.back());
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuModuleGetGlobal_v2(CUdeviceptr *, size_t *, CUmodule,
                                      const char *) {
  return CUDA_ERROR_NOT_FOUND;
}
CUresult CUDAAPI cuFuncSetAttribute(CUfunction f, CUfunction_attribute a,
                                    int v) {
  if (a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
    reinterpret_cast<FakeFunction *>(f)->dynamicSmem = v;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuFuncGetAttribute(int *v, CUfunction_attribute a,
                                    CUfunction f) {
  switch (a) {
  case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
    *v = 1024;
    break;
  case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
    *v = reinterpret_cast<FakeFunction *>(f)->dynamicSmem;
    break;
  default:
    *v = 0;
  }
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                                  void **params, void **) {
  if (!current)
    return CUDA_ERROR_INVALID_CONTEXT;
  ++launches;
  previousFunction = lastFunction;
  lastFunction = f ? reinterpret_cast<FakeFunction *>(f)->name : "";
  previousShape = lastShape;
  lastShape = Shape{{config->gridDimX, config->gridDimY, config->gridDimZ},
                    config->blockDimX,
                    0};
  for (unsigned i = 0; i < config->numAttrs; ++i)
    if (config->attrs[i].id ==
        CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
      lastShape.dependent =
          int(config->attrs[i].value.programmaticStreamSerializationAllowed);
  contextAtLaunch = current;
  if (!params)
    return CUDA_SUCCESS;
  std::memcpy(&lastThreshold, params[12], sizeof(float));
  // The runtime passes all 19 ABI parameters (the driver reads as many as
  // the kernel takes): 15-17 are the KV cache's (kernels without the options
  // have fewer and ignore them), 18 O's tensor map.
  for (int p : {0, 1, 2, 18})
    std::memcpy(&launchedMaps[p], static_cast<char *>(params[p]) + kMapTag,
                sizeof(uint64_t));
  std::memcpy(&lastKVCache[0], params[15], sizeof(uint64_t));
  std::memcpy(&lastKVCache[1], params[16], sizeof(uint64_t));
  int32_t maxPages = 0;
  std::memcpy(&maxPages, params[17], sizeof(int32_t));
  lastKVCache[2] = uint64_t(maxPages);
  int slot = 0;
  for (int p : {3, 4, 5, 13, 14})
    std::memcpy(&lastPointers[slot++], params[p], sizeof(uint64_t));
  return CUDA_SUCCESS;
}
/// The map records what was encoded, for the tests: the global dims
/// (cuuint64_t) from byte 0 and the box (cuuint32_t) from byte 64.
CUresult CUDAAPI cuTensorMapEncodeTiled(
    CUtensorMap *map, CUtensorMapDataType dataType, cuuint32_t rank,
    void *address, const cuuint64_t *dims, const cuuint64_t *strides,
    const cuuint32_t *box, const cuuint32_t *, CUtensorMapInterleave,
    CUtensorMapSwizzle swizzle, CUtensorMapL2promotion,
    CUtensorMapFloatOOBfill oobFill) {
  std::memset(map, 0, sizeof(*map));
  int n = ++encodeCount;
  if (rank <= 5) {
    Encode &e = encodes[(n - 1) % kMaxEncodes];
    e.dataType = dataType;
    e.rank = rank;
    e.address = reinterpret_cast<uint64_t>(address);
    for (unsigned d = 0; d < rank; ++d) {
      e.dims[d] = dims[d];
      e.box[d] = box[d];
      if (d + 1 < rank)
        e.strides[d] = strides[d];
    }
    e.swizzle = swizzle;
    e.oobFill = oobFill;
  }
  if (rank > 5)
    return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(reinterpret_cast<char *>(map), dims, rank * sizeof(cuuint64_t));
  std::memcpy(reinterpret_cast<char *>(map) + 64, box,
              rank * sizeof(cuuint32_t));
  uint64_t tag = uint64_t(n);
  std::memcpy(reinterpret_cast<char *>(map) + kMapTag, &tag, sizeof(tag));
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemAlloc(CUdeviceptr *p, size_t bytes) {
  if (!current)
    return CUDA_ERROR_INVALID_CONTEXT;
  *p = nextAddress.fetch_add((bytes + 255) / 256 * 256 + 256);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemFree(CUdeviceptr) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr, const void *, size_t) {
  return current ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}
CUresult CUDAAPI cuMemcpyDtoH(void *dst, CUdeviceptr, size_t bytes) {
  std::memset(dst, 0, bytes);
  return current ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}
CUresult CUDAAPI cuMemsetD8(CUdeviceptr, unsigned char, size_t) {
  return current ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}
CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr p, unsigned int value,
                                  size_t words, CUstream) {
  lastMemset = {p, value, words};
  memsets.fetch_add(1);
  return current ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}
CUresult CUDAAPI cuStreamSynchronize(CUstream) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuEventCreate(CUevent *e, unsigned int) {
  *e = reinterpret_cast<CUevent>(&fakeEvent);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventRecord(CUevent, CUstream) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuEventSynchronize(CUevent) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuEventDestroy(CUevent) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuEventElapsedTime(float *ms, CUevent, CUevent) {
  *ms = 1.0f;
  return CUDA_SUCCESS;
}

} // extern "C"
