//===- Driver.cpp - dlopen the CUDA driver and format its errors ----------===//
//
// Loads libcuda.so.1 (or $BLASST_LIBCUDA, or the test override) on first use,
// resolves every entry point the runtime calls, runs cuInit once, and caches
// the outcome - success or the message explaining the failure - for the rest
// of the process. Also home of explain(), the one place driver errors are
// turned into text.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include <atomic>
#include <cstdlib>
#include <dlfcn.h>
#include <memory>
#include <mutex>
#include <vector>

using namespace blasst::rt;
using namespace blasst::rt::detail;

namespace {

/// Everything about the (attempted) driver load. Allocated once and never
/// freed: objects with static storage duration may release GPU resources
/// during exit, after a function-local static would have been destroyed.
struct DriverState {
  std::mutex mutex;
  /// Fast path: non-null once loading and cuInit both succeeded.
  std::atomic<const DriverApi *> ready{nullptr};
  /// Non-null once dlopen + dlsym succeeded (cuInit may still have failed).
  std::atomic<const DriverApi *> loaded{nullptr};
  bool attempted = false;
  std::string error;
  bool hasOverride = false;
  std::string overrideLibrary;
  /// Tables of libraries loaded before setDriverLibraryForTesting: objects
  /// created with them may still call through them, so they live on (and
  /// stay reachable, for leak checkers).
  std::vector<const DriverApi *> retired;
};

DriverState &state() {
  static DriverState *s = new DriverState;
  return *s;
}

std::string libraryToLoad(const DriverState &s) {
  if (s.hasOverride)
    return s.overrideLibrary;
  if (const char *env = std::getenv("BLASST_LIBCUDA"); env && *env)
    return env;
  return kDefaultDriverLibrary;
}

/// dlopen + dlsym + cuInit. Called with the state's mutex held. On failure
/// returns nullptr with *error set; the library is left open only on success
/// (the returned table points into it, for the rest of the process).
const DriverApi *loadAndInit(const std::string &library, std::string *error,
                             const DriverApi **loadedOut) {
  // RTLD_LOCAL keeps libcuda's symbols out of the global namespace, where
  // they could clash with another copy a host application loads itself.
  void *handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    *error = "blasst runtime: cannot load the CUDA driver (" + library +
             "): " + (why ? why : "unknown dlopen error") +
             ". Is an NVIDIA driver installed?";
    return nullptr;
  }

  auto api = std::make_unique<DriverApi>();
  auto resolve = [&](const char *symbol, void **slot) {
    *slot = dlsym(handle, symbol);
    if (*slot)
      return true;
    *error = "blasst runtime: the CUDA driver (" + library +
             ") has no entry point '" + symbol +
             "'; the runtime needs a driver for CUDA 12.0 or newer (is " +
             library + " really libcuda?)";
    return false;
  };
  // The casts go through void** because dlsym returns an object pointer;
  // POSIX guarantees the round trip to function pointers.
#define BLASST_RT_RESOLVE(member, symbol)                                      \
  if (!resolve(#symbol, reinterpret_cast<void **>(&api->member))) {            \
    dlclose(handle);                                                           \
    return nullptr;                                                            \
  }
  BLASST_RT_DRIVER_FUNCTIONS(BLASST_RT_RESOLVE)
#undef BLASST_RT_RESOLVE
  // cuEventElapsedTime_v2 arrived in CUDA 12.8; older drivers only have the
  // original, which behaves the same for the timing the runtime does.
  void *elapsed = dlsym(handle, "cuEventElapsedTime_v2");
  if (!elapsed && !resolve("cuEventElapsedTime", &elapsed)) {
    dlclose(handle);
    return nullptr;
  }
  api->eventElapsedTime =
      reinterpret_cast<decltype(api->eventElapsedTime)>(elapsed);

  // From here on the table is usable for error formatting even if cuInit
  // fails, so explain() prints the driver's own error names.
  const DriverApi *table = api.release();
  *loadedOut = table;

  CUresult result = table->init(0);
  if (result != CUDA_SUCCESS) {
    *error = explain(result, "blasst runtime: cuInit failed while "
                             "initialising the CUDA driver (" +
                                 library + ")");
    return nullptr;
  }
  return table;
}

// Codes worth naming without a driver. The descriptions are the driver's own
// cuGetErrorString texts, so messages read the same with and without one.
struct ErrorText {
  CUresult code;
  const char *name;
  const char *description;
};

#define BLASST_RT_ERR(code, text)                                              \
  { code, #code, text }
const ErrorText kErrorTexts[] = {
    BLASST_RT_ERR(CUDA_SUCCESS, "no error"),
    BLASST_RT_ERR(CUDA_ERROR_INVALID_VALUE, "invalid argument"),
    BLASST_RT_ERR(CUDA_ERROR_OUT_OF_MEMORY, "out of memory"),
    BLASST_RT_ERR(CUDA_ERROR_NOT_INITIALIZED, "initialization error"),
    BLASST_RT_ERR(CUDA_ERROR_DEINITIALIZED, "driver shutting down"),
    BLASST_RT_ERR(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"),
    BLASST_RT_ERR(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"),
    BLASST_RT_ERR(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid"),
    BLASST_RT_ERR(CUDA_ERROR_INVALID_CONTEXT, "invalid device context"),
    BLASST_RT_ERR(CUDA_ERROR_NO_BINARY_FOR_GPU,
                  "no kernel image is available for execution on the device"),
    BLASST_RT_ERR(CUDA_ERROR_INVALID_PTX, "a PTX JIT compilation failed"),
    BLASST_RT_ERR(CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
                  "the provided PTX was compiled with an unsupported "
                  "toolchain."),
    BLASST_RT_ERR(CUDA_ERROR_FILE_NOT_FOUND, "file not found"),
    BLASST_RT_ERR(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"),
    BLASST_RT_ERR(CUDA_ERROR_NOT_FOUND, "named symbol not found"),
    BLASST_RT_ERR(CUDA_ERROR_NOT_READY, "device not ready"),
    BLASST_RT_ERR(CUDA_ERROR_ILLEGAL_ADDRESS,
                  "an illegal memory access was encountered"),
    BLASST_RT_ERR(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
                  "too many resources requested for launch"),
    BLASST_RT_ERR(CUDA_ERROR_LAUNCH_TIMEOUT,
                  "the launch timed out and was terminated"),
    BLASST_RT_ERR(CUDA_ERROR_ASSERT, "device-side assert triggered"),
    BLASST_RT_ERR(CUDA_ERROR_ILLEGAL_INSTRUCTION,
                  "an illegal instruction was encountered"),
    BLASST_RT_ERR(CUDA_ERROR_MISALIGNED_ADDRESS, "misaligned address"),
    BLASST_RT_ERR(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure"),
    BLASST_RT_ERR(CUDA_ERROR_NOT_SUPPORTED, "operation not supported"),
    BLASST_RT_ERR(CUDA_ERROR_INVALID_CLUSTER_SIZE,
                  "a kernel launch error has occurred due to cluster "
                  "misconfiguration"),
    BLASST_RT_ERR(CUDA_ERROR_UNKNOWN, "unknown error"),
};
#undef BLASST_RT_ERR

/// Extra advice for codes whose cause is usually on the caller's side.
const char *hintFor(CUresult result) {
  switch (result) {
  case CUDA_ERROR_INVALID_CONTEXT:
    return "no matching CUDA context is current on this thread; call "
           "Context::create or Context::makeCurrent() on this thread first";
  case CUDA_ERROR_NO_BINARY_FOR_GPU:
    return "the cubin was compiled for a different GPU architecture than "
           "this device's";
  case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
    return "the PTX is newer than this driver; update the NVIDIA driver";
  default:
    return nullptr;
  }
}

} // namespace

const DriverApi *blasst::rt::detail::driver(std::string *error) {
  DriverState &s = state();
  if (const DriverApi *api = s.ready.load(std::memory_order_acquire))
    return api;
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.attempted) {
    s.attempted = true;
    const DriverApi *loaded = nullptr;
    const DriverApi *api = loadAndInit(libraryToLoad(s), &s.error, &loaded);
    s.loaded.store(loaded, std::memory_order_release);
    s.ready.store(api, std::memory_order_release);
  }
  if (const DriverApi *api = s.ready.load(std::memory_order_acquire))
    return api;
  if (error)
    *error = s.error;
  return nullptr;
}

const DriverApi *blasst::rt::detail::loadedDriverOrNull() {
  return state().loaded.load(std::memory_order_acquire);
}

CUresult blasst::rt::detail::ensureCurrent(const DriverApi &api,
                                           CUcontext ctx) {
  CUcontext current = nullptr;
  if (api.ctxGetCurrent(&current) == CUDA_SUCCESS && current == ctx)
    return CUDA_SUCCESS;
  return api.ctxSetCurrent(ctx);
}

ScopedContext::ScopedContext(const DriverApi &api, CUcontext ctx) : api(api) {
  status = api.ctxGetCurrent(&previous);
  if (status != CUDA_SUCCESS || previous == ctx)
    return;
  status = api.ctxSetCurrent(ctx);
  restore = status == CUDA_SUCCESS;
}

ScopedContext::~ScopedContext() {
  if (restore)
    (void)api.ctxSetCurrent(previous);
}

bool blasst::rt::detail::builtinErrorText(CUresult result, const char **name,
                                          const char **description) {
  for (const ErrorText &entry : kErrorTexts) {
    if (entry.code == result) {
      *name = entry.name;
      *description = entry.description;
      return true;
    }
  }
  return false;
}

Status Status::error(std::string message) {
  Status s;
  s.isOk = false;
  // An error without words would defeat the point of the type.
  s.msg = message.empty() ? "unspecified error" : std::move(message);
  return s;
}

std::string blasst::rt::explain(CUresult result, const char *what) {
  const char *name = nullptr;
  const char *description = nullptr;
  if (const DriverApi *api = loadedDriverOrNull()) {
    if (api->getErrorName(result, &name) != CUDA_SUCCESS ||
        api->getErrorString(result, &description) != CUDA_SUCCESS)
      name = description = nullptr;
  }
  if (!name || !description)
    builtinErrorText(result, &name, &description);

  std::string text = what && *what ? what : "CUDA driver call failed";
  text += ": ";
  if (name && description) {
    text += name;
    text += " (";
    text += description;
    text += ")";
  } else {
    text += "CUresult " + std::to_string(static_cast<int>(result)) +
            " (an error code this runtime does not know)";
  }
  if (const char *hint = hintFor(result)) {
    text += "; ";
    text += hint;
  }
  return text;
}

std::string blasst::rt::explain(CUresult result, const std::string &what) {
  return explain(result, what.c_str());
}

Status blasst::rt::initDriver() {
  std::string error;
  if (!detail::driver(&error))
    return Status::error(error);
  return Status::success();
}

void blasst::rt::setDriverLibraryForTesting(const char *library) {
  DriverState &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.hasOverride = library != nullptr;
  s.overrideLibrary = library ? library : "";
  // The previously loaded library stays open: objects created with it may
  // still call into it from their destructors.
  if (const DriverApi *old = s.loaded.load(std::memory_order_acquire))
    s.retired.push_back(old);
  s.attempted = false;
  s.error.clear();
  s.ready.store(nullptr, std::memory_order_release);
  s.loaded.store(nullptr, std::memory_order_release);
}
