//===- FakeDriver.cpp - A stand-in libcuda for GPU-free runtime tests -----===//
//
// Exports every driver entry point the runtime dlsym's (Driver.h), with one
// "sm_90" GPU that runs nothing: launches are recorded, not executed. Tests
// point the runtime at it (setDriverLibraryForTesting) to check what the host
// side does on any machine: which context is current during a launch and
// after it, and which parameters a launch passes. The blasstFake* functions
// let a test read what was recorded (dlsym them from the same library).
//
//===----------------------------------------------------------------------===//
#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <cstring>

namespace {
// The GPU's primary context and the module/function handles: distinct
// addresses that nobody dereferences.
int primaryContext, fakeModule, fakeFunction, fakeEvent;
thread_local CUcontext current = nullptr;
std::atomic<int> launches{0};
std::atomic<int> setCurrentCalls{0};
float lastThreshold = 0;
CUcontext contextAtLaunch = nullptr;
int dynamicSmem = 0;
std::atomic<uint64_t> nextAddress{0x100000000ull};
struct Memset {
  CUdeviceptr ptr;
  unsigned value;
  size_t words;
} lastMemset{};
std::atomic<int> memsets{0};
uint64_t lastKVCache[3] = {};
} // namespace

extern "C" {

// What the tests read.
int blasstFakeLaunches() { return launches; }
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
    *v = 9;
    break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
    *v = 0;
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
  default:
    *v = 0;
  }
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice) {
  std::strncpy(name, "Fake sm_90 GPU", size_t(len));
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
CUresult CUDAAPI cuModuleGetFunction(CUfunction *f, CUmodule, const char *) {
  *f = reinterpret_cast<CUfunction>(&fakeFunction);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuFuncSetAttribute(CUfunction, CUfunction_attribute a, int v) {
  if (a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
    dynamicSmem = v;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuFuncGetAttribute(int *v, CUfunction_attribute a,
                                    CUfunction) {
  switch (a) {
  case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
    *v = 1024;
    break;
  case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
    *v = dynamicSmem;
    break;
  default:
    *v = 0;
  }
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *, CUfunction,
                                  void **params, void **) {
  if (!current)
    return CUDA_ERROR_INVALID_CONTEXT;
  ++launches;
  contextAtLaunch = current;
  std::memcpy(&lastThreshold, params[12], sizeof(float));
  // The runtime always passes parameters 15-17 (kernels without the KV
  // cache options have fewer and ignore them).
  std::memcpy(&lastKVCache[0], params[15], sizeof(uint64_t));
  std::memcpy(&lastKVCache[1], params[16], sizeof(uint64_t));
  int32_t maxPages = 0;
  std::memcpy(&maxPages, params[17], sizeof(int32_t));
  lastKVCache[2] = uint64_t(maxPages);
  return CUDA_SUCCESS;
}
/// The map records what was encoded, for the tests: the global dims
/// (cuuint64_t) from byte 0 and the box (cuuint32_t) from byte 64.
CUresult CUDAAPI cuTensorMapEncodeTiled(
    CUtensorMap *map, CUtensorMapDataType, cuuint32_t rank, void *,
    const cuuint64_t *dims, const cuuint64_t *, const cuuint32_t *box,
    const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,
    CUtensorMapL2promotion, CUtensorMapFloatOOBfill) {
  std::memset(map, 0, sizeof(*map));
  if (rank > 5)
    return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(reinterpret_cast<char *>(map), dims, rank * sizeof(cuuint64_t));
  std::memcpy(reinterpret_cast<char *>(map) + 64, box,
              rank * sizeof(cuuint32_t));
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
