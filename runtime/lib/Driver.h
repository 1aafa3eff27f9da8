//===- Driver.h - The dlopen'ed CUDA driver entry points --------*- C++ -*-===//
//
// Internal to the runtime. The table of CUDA Driver API functions resolved
// with dlsym from libcuda.so.1, so that nothing links against libcuda and the
// runtime builds and starts on machines without one. The function types come
// from <cuda.h> (declarations only; nothing there is called directly).
//
//===----------------------------------------------------------------------===//
#ifndef BLASST_RUNTIME_LIB_DRIVER_H
#define BLASST_RUNTIME_LIB_DRIVER_H

#include "blasst/Runtime/Runtime.h"

#include <string>

namespace blasst::rt::detail {

// X(member, symbol): `symbol` is the exact exported name. Where <cuda.h>
// #defines the API name to a versioned symbol (cuMemAlloc -> cuMemAlloc_v2,
// ...) the versioned name is spelled out here, because dlsym sees exported
// names, not macros, and the unversioned symbols keep their old ABI.
#define BLASST_RT_DRIVER_FUNCTIONS(X)                                          \
  X(init, cuInit)                                                              \
  X(driverGetVersion, cuDriverGetVersion)                                      \
  X(getErrorName, cuGetErrorName)                                              \
  X(getErrorString, cuGetErrorString)                                          \
  X(deviceGetCount, cuDeviceGetCount)                                          \
  X(deviceGet, cuDeviceGet)                                                    \
  X(deviceGetAttribute, cuDeviceGetAttribute)                                  \
  X(deviceGetName, cuDeviceGetName)                                            \
  X(ctxGetCurrent, cuCtxGetCurrent)                                            \
  X(ctxSetCurrent, cuCtxSetCurrent)                                            \
  X(ctxSynchronize, cuCtxSynchronize)                                          \
  X(devicePrimaryCtxRetain, cuDevicePrimaryCtxRetain)                          \
  X(devicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2)                     \
  X(moduleLoadData, cuModuleLoadData)                                          \
  X(moduleUnload, cuModuleUnload)                                              \
  X(moduleGetFunction, cuModuleGetFunction)                                    \
  X(moduleGetGlobal, cuModuleGetGlobal_v2)                                     \
  X(funcSetAttribute, cuFuncSetAttribute)                                      \
  X(funcGetAttribute, cuFuncGetAttribute)                                      \
  X(launchKernelEx, cuLaunchKernelEx)                                          \
  X(tensorMapEncodeTiled, cuTensorMapEncodeTiled)                              \
  X(memAlloc, cuMemAlloc_v2)                                                   \
  X(memFree, cuMemFree_v2)                                                     \
  X(memcpyHtoD, cuMemcpyHtoD_v2)                                               \
  X(memcpyDtoH, cuMemcpyDtoH_v2)                                               \
  X(memsetD8, cuMemsetD8_v2)                                                   \
  X(memsetD32Async, cuMemsetD32Async)                                          \
  X(streamSynchronize, cuStreamSynchronize)                                    \
  X(eventCreate, cuEventCreate)                                                \
  X(eventRecord, cuEventRecord)                                                \
  X(eventSynchronize, cuEventSynchronize)                                      \
  X(eventDestroy, cuEventDestroy_v2)

/// Function pointers into the loaded driver. All non-null once loaded.
struct DriverApi {
#define BLASST_RT_DECLARE_MEMBER(member, symbol) decltype(&::symbol) member;
  BLASST_RT_DRIVER_FUNCTIONS(BLASST_RT_DECLARE_MEMBER)
#undef BLASST_RT_DECLARE_MEMBER

  /// cuEventElapsedTime_v2 (CUDA 12.8+) when exported, else the original
  /// cuEventElapsedTime, which has the same signature.
  CUresult(CUDAAPI *eventElapsedTime)(float *, CUevent, CUevent);
};

/// The loaded and initialised (cuInit done) driver, or nullptr with the
/// reason in *error. Thread-safe; the outcome is cached.
const DriverApi *driver(std::string *error);

/// The driver if it has already been loaded successfully, else nullptr.
/// Never triggers loading; explain() uses it so that formatting an error
/// cannot itself fail or dlopen anything.
const DriverApi *loadedDriverOrNull();

/// Makes `ctx` current on the calling thread unless it already is (for
/// Context::create and Context::makeCurrent, whose job that is).
CUresult ensureCurrent(const DriverApi &api, CUcontext ctx);

/// Makes `ctx` current on the calling thread for the lifetime of the guard
/// and then restores the context that was current before (nullptr
/// included), so a runtime call never leaves the caller's thread in another
/// context. Used around driver calls that act on "the current context"
/// (allocation, module loading, launches, freeing), so objects work from any
/// thread. Costs one cuCtxGetCurrent when `ctx` is already current.
class ScopedContext {
public:
  ScopedContext(const DriverApi &api, CUcontext ctx);
  ~ScopedContext();
  ScopedContext(const ScopedContext &) = delete;
  ScopedContext &operator=(const ScopedContext &) = delete;
  /// CUDA_SUCCESS, or the error of cuCtxGetCurrent/cuCtxSetCurrent (then
  /// nothing is restored).
  CUresult result() const { return status; }

private:
  const DriverApi &api;
  CUcontext previous = nullptr;
  bool restore = false;
  CUresult status = CUDA_SUCCESS;
};

/// The built-in name/description of common CUresult codes, matching the
/// driver's cuGetErrorName/cuGetErrorString. Returns false for codes not in
/// the table. Exposed for tests.
bool builtinErrorText(CUresult result, const char **name,
                      const char **description);

} // namespace blasst::rt::detail

#endif // BLASST_RUNTIME_LIB_DRIVER_H
