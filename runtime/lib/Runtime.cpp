//===- Runtime.cpp - Contexts, modules, launches, buffers, timers ---------===//
//
// The driver-backed half of the runtime. Every driver call goes through the
// dlopen'ed table from Driver.cpp and every failure is turned into a Status
// that says what was being done (explain()). Pure argument checks live in
// Validation.cpp and run before the corresponding driver call.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"
#include "blasst/Spec/AttentionSpec.h"

#include <cstdlib>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

using namespace blasst::rt;
using namespace blasst::rt::detail;

// Returns from the enclosing function with an explained error when a driver
// call fails. `what` is only evaluated on failure, so building the message
// costs nothing on the success path.
#define BLASST_RT_CU(call, what)                                               \
  do {                                                                         \
    CUresult blasstRtResult = (call);                                          \
    if (blasstRtResult != CUDA_SUCCESS)                                        \
      return Status::error(explain(blasstRtResult, (what)));                   \
  } while (0)

#define BLASST_RT_TRY(expr)                                                    \
  do {                                                                         \
    Status blasstRtStatus = (expr);                                            \
    if (!blasstRtStatus)                                                       \
      return blasstRtStatus;                                                   \
  } while (0)

namespace {

/// The loaded, initialised driver, or the Status explaining why there is none.
Status needDriver(const DriverApi **api) {
  std::string error;
  *api = driver(&error);
  return *api ? Status::success() : Status::error(error);
}

std::string quoted(const std::string &name) { return "'" + name + "'"; }

std::string gpuName(const Context &context) {
  return "GPU " + std::to_string(context.info().ordinal) + " (" +
         context.info().name + ")";
}

Status needContext(const Context &context, const std::string &doing) {
  if (context.valid())
    return Status::success();
  return Status::error("cannot " + doing +
                       ": the Context is not initialised (create it with "
                       "Context::create)");
}

/// What kind of image a module load was given, for messages and for the
/// PTX NUL-termination fix-up.
enum class ImageKind { Cubin, Fatbin, Ptx };

const char *toString(ImageKind kind) {
  switch (kind) {
  case ImageKind::Cubin:
    return "cubin";
  case ImageKind::Fatbin:
    return "fatbin";
  case ImageKind::Ptx:
    return "PTX";
  }
  return "image";
}

ImageKind classify(const unsigned char *bytes, size_t size) {
  if (size >= 4 && bytes[0] == 0x7f && bytes[1] == 'E' && bytes[2] == 'L' &&
      bytes[3] == 'F')
    return ImageKind::Cubin;
  // Fatbin magic 0xBA55ED50, stored little-endian.
  if (size >= 4 && bytes[0] == 0x50 && bytes[1] == 0xED && bytes[2] == 0x55 &&
      bytes[3] == 0xBA)
    return ImageKind::Fatbin;
  return ImageKind::Ptx;
}

/// "{a, b, c}", for echoing descriptor arrays in driver error messages.
template <typename T> std::string list(const T *values, uint32_t count) {
  std::string out = "{";
  for (uint32_t i = 0; i < count; ++i)
    out += (i ? ", " : "") + std::to_string(values[i]);
  return out + "}";
}

} // namespace

//===----------------------------------------------------------------------===//
// Devices and contexts
//===----------------------------------------------------------------------===//

Status blasst::rt::deviceCount(int *count) {
  if (!count)
    return Status::error("deviceCount: the output pointer is null");
  const DriverApi *api;
  BLASST_RT_TRY(needDriver(&api));
  BLASST_RT_CU(api->deviceGetCount(count),
               "cuDeviceGetCount failed while counting GPUs");
  return Status::success();
}

bool blasst::rt::deviceAvailable(std::string *why) {
  int count = 0;
  Status status = deviceCount(&count);
  if (status && count == 0)
    status = Status::error("the CUDA driver loads but sees no GPUs");
  if (!status && why)
    *why = status.message();
  return status.ok();
}

std::string DeviceInfo::describe() const {
  std::string dram;
  if (double bw = dramBytesPerSecond(); bw > 0) {
    char text[32];
    std::snprintf(text, sizeof(text), ", %.2f TB/s of DRAM", bw / 1e12);
    dram = text;
  }
  return name + " (GPU " + std::to_string(ordinal) + ", sm_" +
         std::to_string(computeCapabilityMajor) +
         std::to_string(computeCapabilityMinor) + ", " +
         std::to_string(multiprocessorCount) + " SMs, " +
         std::to_string(maxSharedMemoryPerBlockOptin) +
         " bytes of shared memory per block with opt-in" + dram + ")";
}

Context::~Context() { release(); }

Context::Context(Context &&other) noexcept
    : ctx(std::exchange(other.ctx, nullptr)), dev(other.dev),
      deviceInfo(std::move(other.deviceInfo)) {}

Context &Context::operator=(Context &&other) noexcept {
  if (this != &other) {
    release();
    ctx = std::exchange(other.ctx, nullptr);
    dev = other.dev;
    deviceInfo = std::move(other.deviceInfo);
  }
  return *this;
}

void Context::release() {
  // Destructors never load the driver; if it is gone (only possible after
  // setDriverLibraryForTesting) the reference is simply dropped.
  if (ctx)
    if (const DriverApi *api = loadedDriverOrNull())
      (void)api->devicePrimaryCtxRelease(dev);
  ctx = nullptr;
}

Status Context::create(int ordinal, Context *out) {
  if (!out)
    return Status::error("Context::create: the output pointer is null");
  const DriverApi *api;
  BLASST_RT_TRY(needDriver(&api));

  int count = 0;
  BLASST_RT_CU(api->deviceGetCount(&count),
               "cuDeviceGetCount failed while looking for GPU " +
                   std::to_string(ordinal));
  if (ordinal < 0 || ordinal >= count)
    return Status::error("GPU ordinal " + std::to_string(ordinal) +
                         " is out of range: the CUDA driver sees " +
                         std::to_string(count) + " GPU(s)");

  Context context;
  DeviceInfo &info = context.deviceInfo;
  info.ordinal = ordinal;
  std::string gpu = "GPU " + std::to_string(ordinal);
  BLASST_RT_CU(api->deviceGet(&context.dev, ordinal),
               "cuDeviceGet failed while opening " + gpu);

  char name[256] = {};
  BLASST_RT_CU(api->deviceGetName(name, sizeof(name) - 1, context.dev),
               "cuDeviceGetName failed while querying " + gpu);
  info.name = name;
  BLASST_RT_CU(api->driverGetVersion(&info.driverVersion),
               "cuDriverGetVersion failed while querying " + gpu);

  struct Query {
    CUdevice_attribute attribute;
    const char *name;
    int *value;
  };
  const Query queries[] = {
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "COMPUTE_CAPABILITY_MAJOR",
       &info.computeCapabilityMajor},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "COMPUTE_CAPABILITY_MINOR",
       &info.computeCapabilityMinor},
      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "MULTIPROCESSOR_COUNT",
       &info.multiprocessorCount},
      {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "MAX_THREADS_PER_BLOCK",
       &info.maxThreadsPerBlock},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
       "MAX_SHARED_MEMORY_PER_BLOCK", &info.maxSharedMemoryPerBlock},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
       "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", &info.maxSharedMemoryPerBlockOptin},
  };
  for (const Query &q : queries)
    BLASST_RT_CU(api->deviceGetAttribute(q.value, q.attribute, context.dev),
                 std::string("cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_") +
                     q.name + ") failed while querying " + gpu + " (" +
                     info.name + ")");

  // The DRAM bandwidth only steers a choice (preferTmaDecode): a driver
  // that does not say leaves it unknown.
  for (auto [attribute, value] :
       {std::pair{CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, &info.memoryClockKHz},
        std::pair{CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH,
                  &info.memoryBusWidthBits}})
    if (api->deviceGetAttribute(value, attribute, context.dev) !=
            CUDA_SUCCESS ||
        *value < 0)
      *value = 0;

  BLASST_RT_CU(api->devicePrimaryCtxRetain(&context.ctx, context.dev),
               "cuDevicePrimaryCtxRetain failed while opening " + gpu + " (" +
                   info.name + ")");
  BLASST_RT_TRY(context.makeCurrent());
  *out = std::move(context);
  return Status::success();
}

Status Context::makeCurrent() const {
  if (!ctx)
    return Status::error("cannot make the Context current: it is not "
                         "initialised (create it with Context::create)");
  const DriverApi *api;
  BLASST_RT_TRY(needDriver(&api));
  BLASST_RT_CU(ensureCurrent(*api, ctx),
               "cuCtxSetCurrent failed while making the context of " +
                   gpuName(*this) + " current");
  return Status::success();
}

Status Context::synchronize() const {
  if (!ctx)
    return Status::error("cannot synchronize the Context: it is not "
                         "initialised (create it with Context::create)");
  const DriverApi *api;
  BLASST_RT_TRY(needDriver(&api));
  ScopedContext scope(*api, ctx);
  BLASST_RT_CU(scope.result(), "cuCtxSetCurrent failed while preparing to "
                               "wait for " +
                                   gpuName(*this));
  BLASST_RT_CU(api->ctxSynchronize(),
               "cuCtxSynchronize failed while waiting for " + gpuName(*this) +
                   "; a kernel launched earlier may have faulted");
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Modules and functions
//===----------------------------------------------------------------------===//

Module::~Module() { unload(); }

Module::Module(Module &&other) noexcept
    : module(std::exchange(other.module, nullptr)), ctx(other.ctx),
      moduleName(std::move(other.moduleName)),
      sharedMemoryOptinLimit(other.sharedMemoryOptinLimit) {}

Module &Module::operator=(Module &&other) noexcept {
  if (this != &other) {
    unload();
    module = std::exchange(other.module, nullptr);
    ctx = other.ctx;
    moduleName = std::move(other.moduleName);
    sharedMemoryOptinLimit = other.sharedMemoryOptinLimit;
  }
  return *this;
}

void Module::unload() {
  if (module)
    if (const DriverApi *api = loadedDriverOrNull())
      if (ScopedContext scope(*api, ctx); scope.result() == CUDA_SUCCESS)
        (void)api->moduleUnload(module);
  module = nullptr;
}

Status Module::loadData(const Context &context, const void *image, size_t size,
                        const std::string &name, Module *out) {
  std::string doing = "load kernel " + quoted(name);
  if (!out)
    return Status::error("cannot " + doing + ": the output pointer is null");
  if (!image || size == 0)
    return Status::error("cannot " + doing + ": the image is empty");

  const auto *bytes = static_cast<const unsigned char *>(image);
  ImageKind kind = classify(bytes, size);
  // ELF files that are not CUDA cubins (a host .so, say) get a clear message
  // instead of CUDA_ERROR_INVALID_IMAGE. e_machine is at offset 18.
  constexpr unsigned kElfMachineCuda = 190;
  if (kind == ImageKind::Cubin && size >= 20) {
    unsigned machine = bytes[18] | (unsigned(bytes[19]) << 8);
    if (machine != kElfMachineCuda)
      return Status::error("cannot " + doing + ": the image is an ELF file " +
                           "for machine " + std::to_string(machine) +
                           ", not a CUDA cubin (machine 190)");
  }
  // The driver reads PTX as a C string; copy it to add the terminator rather
  // than let the driver read past the end of the caller's buffer.
  std::string ptx;
  if (kind == ImageKind::Ptx && bytes[size - 1] != '\0') {
    ptx.assign(reinterpret_cast<const char *>(bytes), size);
    image = ptx.c_str();
  }

  BLASST_RT_TRY(needContext(context, doing));
  const DriverApi *api;
  BLASST_RT_TRY(needDriver(&api));
  ScopedContext scope(*api, context.get());
  BLASST_RT_CU(scope.result(),
               "cuCtxSetCurrent failed while preparing to " + doing);
  Module result;
  BLASST_RT_CU(api->moduleLoadData(&result.module, image),
               "cuModuleLoadData failed while loading kernel " + quoted(name) +
                   " from " + toString(kind) + " (" + std::to_string(size) +
                   " bytes) on " + gpuName(context));
  result.ctx = context.get();
  result.moduleName = name;
  result.sharedMemoryOptinLimit = context.info().maxSharedMemoryPerBlockOptin;
  *out = std::move(result);
  return Status::success();
}

Status blasst::rt::readWholeFile(const std::string &path, const char *what,
                                 std::string *out, int *openErrno,
                                 size_t maxBytes) {
  if (openErrno)
    *openErrno = 0;
  std::string name = "'" + escapeForMessage(path) + "'";
  std::FILE *file = std::fopen(path.c_str(), "rb");
  if (!file) {
    int err = errno;
    if (openErrno)
      *openErrno = err;
    return Status::error(std::string("cannot open ") + what + " " + name +
                         ": " + std::strerror(err));
  }
  std::string data;
  char chunk[1 << 16];
  size_t got;
  while ((got = std::fread(chunk, 1, sizeof(chunk), file)) > 0) {
    if (data.size() + got > maxBytes) {
      std::fclose(file);
      return Status::error(std::string("cannot read ") + what + " " + name +
                           ": larger than " + std::to_string(maxBytes >> 20) +
                           " MiB");
    }
    data.append(chunk, got);
  }
  bool readError = std::ferror(file) != 0;
  int savedErrno = errno;
  std::fclose(file);
  if (readError)
    return Status::error(std::string("cannot read ") + what + " " + name +
                         ": " + std::strerror(savedErrno));
  *out = std::move(data);
  return Status::success();
}

Status Module::loadFile(const Context &context, const std::string &path,
                        Module *out) {
  std::string data;
  if (Status s = readWholeFile(path, "kernel file", &data); !s)
    return s;
  if (data.empty())
    return Status::error("cannot load kernel file " + quoted(path) +
                         ": the file is empty");
  return loadData(context, data.data(), data.size(), path, out);
}

Status Module::readGlobal(const std::string &globalName,
                          std::vector<uint8_t> *out) const {
  if (!out)
    return Status::error("cannot read global " + quoted(globalName) +
                         ": the output pointer is null");
  if (!module)
    return Status::error("cannot read global " + quoted(globalName) +
                         ": the module is not loaded");
  const DriverApi *api;
  BLASST_RT_TRY(needDriver(&api));
  ScopedContext scope(*api, ctx);
  BLASST_RT_CU(scope.result(), "cuCtxSetCurrent failed while reading global " +
                                   quoted(globalName));
  CUdeviceptr address = 0;
  size_t bytes = 0;
  BLASST_RT_CU(
      api->moduleGetGlobal(&address, &bytes, module, globalName.c_str()),
      "cuModuleGetGlobal failed while looking up global " + quoted(globalName) +
          " in module " + quoted(moduleName));
  out->resize(bytes);
  if (bytes)
    BLASST_RT_CU(api->memcpyDtoH(out->data(), address, bytes),
                 "cuMemcpyDtoH failed while reading global " +
                     quoted(globalName) + " of module " + quoted(moduleName) +
                     "; a kernel launched earlier may have faulted");
  return Status::success();
}

Status Module::getFunction(const std::string &kernelName, Function *out) const {
  if (!out)
    return Status::error("cannot look up kernel " + quoted(kernelName) +
                         ": the output pointer is null");
  if (!module)
    return Status::error("cannot look up kernel " + quoted(kernelName) +
                         ": the module is not loaded");
  const DriverApi *api;
  BLASST_RT_TRY(needDriver(&api));
  CUfunction function = nullptr;
  CUresult result =
      api->moduleGetFunction(&function, module, kernelName.c_str());
  if (result != CUDA_SUCCESS) {
    std::string message = explain(
        result, "cuModuleGetFunction failed while looking up kernel " +
                    quoted(kernelName) + " in module " + quoted(moduleName));
    if (result == CUDA_ERROR_NOT_FOUND)
      message += "; the module has no kernel of that name (C++ kernel names "
                 "are mangled unless declared extern \"C\")";
    return Status::error(message);
  }
  out->function = function;
  out->ctx = ctx;
  out->kernelName = kernelName;
  out->ownerName = moduleName;
  out->sharedMemoryOptinLimit = sharedMemoryOptinLimit;
  return Status::success();
}

Status Function::getAttribute(CUfunction_attribute attribute,
                              int *value) const {
  if (!function || !value)
    return Status::error("cannot query an attribute of kernel " +
                         quoted(kernelName) +
                         (function ? ": the output pointer is null"
                                   : ": the Function is not looked up"));
  const DriverApi *api;
  BLASST_RT_TRY(needDriver(&api));
  BLASST_RT_CU(api->funcGetAttribute(value, attribute, function),
               "cuFuncGetAttribute(" + std::to_string(int(attribute)) +
                   ") failed for kernel " + quoted(kernelName));
  return Status::success();
}

Status Function::setMaxDynamicSharedMemory(size_t bytes) const {
  int staticBytes = 0;
  BLASST_RT_TRY(
      getAttribute(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, &staticBytes));
  BLASST_RT_TRY(checkSharedMemoryLimit(kernelName, size_t(staticBytes), bytes,
                                       size_t(sharedMemoryOptinLimit)));
  const DriverApi *api;
  BLASST_RT_TRY(needDriver(&api));
  BLASST_RT_CU(
      api->funcSetAttribute(function,
                            CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                            int(bytes)),
      "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES = " +
          std::to_string(bytes) + ") failed for kernel " + quoted(kernelName));
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Launching
//===----------------------------------------------------------------------===//

Status blasst::rt::launch(const Function &function, Dim3 grid, Dim3 block,
                          size_t dynamicSharedBytes, CUstream stream,
                          void **kernelParams, std::optional<Dim3> cluster,
                          bool programmaticDependent) {
  if (!function.valid())
    return Status::error("cannot launch: the Function is not looked up (use "
                         "Module::getFunction)");
  // The kernel's real limits make validateLaunchConfig's messages precise
  // ("the kernel allows at most 384 threads") where the driver would only
  // say CUDA_ERROR_INVALID_VALUE or LAUNCH_OUT_OF_RESOURCES.
  int maxThreads = 0, maxDynamicShared = 0;
  BLASST_RT_TRY(function.getAttribute(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                                      &maxThreads));
  BLASST_RT_TRY(function.getAttribute(
      CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, &maxDynamicShared));
  KernelLimits limits;
  limits.maxThreadsPerBlock = unsigned(maxThreads);
  limits.maxDynamicSharedBytes = size_t(maxDynamicShared);
  BLASST_RT_TRY(validateLaunchConfig(function.name(), grid, block,
                                     dynamicSharedBytes, cluster, limits));

  CUlaunchAttribute attributes[2] = {};
  CUlaunchConfig config = {};
  config.gridDimX = grid.x;
  config.gridDimY = grid.y;
  config.gridDimZ = grid.z;
  config.blockDimX = block.x;
  config.blockDimY = block.y;
  config.blockDimZ = block.z;
  config.sharedMemBytes = unsigned(dynamicSharedBytes);
  config.hStream = stream;
  if (cluster) {
    attributes[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attributes[0].value.clusterDim.x = cluster->x;
    attributes[0].value.clusterDim.y = cluster->y;
    attributes[0].value.clusterDim.z = cluster->z;
    config.attrs = attributes;
    config.numAttrs = 1;
  }
  if (programmaticDependent) {
    CUlaunchAttribute &a = attributes[config.numAttrs];
    a.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    a.value.programmaticStreamSerializationAllowed = 1;
    config.attrs = attributes;
    config.numAttrs += 1;
  }

  const DriverApi *api;
  BLASST_RT_TRY(needDriver(&api));
  BLASST_RT_CU(
      api->launchKernelEx(&config, function.get(), kernelParams, nullptr),
      "cuLaunchKernelEx failed while launching kernel " +
          quoted(function.name()) + " from module " +
          quoted(function.moduleName()) + " with grid " + grid.str() +
          ", block " + block.str() +
          (cluster ? ", cluster " + cluster->str() : "") + " and " +
          std::to_string(dynamicSharedBytes) +
          " bytes of dynamic shared memory");
  return Status::success();
}

Status blasst::rt::synchronize(CUstream stream) {
  const DriverApi *api;
  BLASST_RT_TRY(needDriver(&api));
  BLASST_RT_CU(api->streamSynchronize(stream),
               "cuStreamSynchronize failed while waiting for a stream; a "
               "kernel launched earlier may have faulted");
  return Status::success();
}

//===----------------------------------------------------------------------===//
// TMA descriptors
//===----------------------------------------------------------------------===//

Status blasst::rt::encodeTensorMap(
    CUtensorMap *out, const char *tensorName, CUtensorMapDataType dataType,
    uint32_t rank, uint64_t globalAddress, const uint64_t *dims,
    const uint64_t *stridesBytes, const uint32_t *boxDims,
    const uint32_t *elementStrides, CUtensorMapInterleave interleave,
    TmaSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
    CUtensorMapFloatOOBfill oobFill) {
  std::string tensor = quoted(tensorName ? tensorName : "tensor");
  if (!out)
    return Status::error("TMA descriptor for " + tensor +
                         ": the output CUtensorMap pointer is null");
  if (reinterpret_cast<uintptr_t>(out) % 64)
    return Status::error("TMA descriptor for " + tensor +
                         ": the output CUtensorMap is not 64-byte aligned");
  BLASST_RT_TRY(validateTensorMap(tensorName, dataType, rank, globalAddress,
                                  dims, stridesBytes, boxDims, elementStrides,
                                  interleave, swizzle, l2Promotion, oobFill));

  const uint32_t ones[5] = {1, 1, 1, 1, 1};
  const uint64_t noStrides[1] = {0};
  const DriverApi *api;
  BLASST_RT_TRY(needDriver(&api));
  BLASST_RT_CU(
      api->tensorMapEncodeTiled(
          out, dataType, rank, reinterpret_cast<void *>(globalAddress), dims,
          stridesBytes ? stridesBytes : noStrides, boxDims,
          elementStrides ? elementStrides : ones, interleave, toCU(swizzle),
          l2Promotion, oobFill),
      "cuTensorMapEncodeTiled failed while encoding the TMA descriptor for " +
          tensor + " (rank " + std::to_string(rank) + ", dims " +
          list(dims, rank) + ", strides " +
          list(stridesBytes ? stridesBytes : noStrides,
               stridesBytes ? rank - 1 : 0) +
          " bytes, box " + list(boxDims, rank) + ", swizzle " +
          toString(swizzle) + ")");
  return Status::success();
}

Status blasst::rt::encodeTiled2D(CUtensorMap *out, const char *tensorName,
                                 CUtensorMapDataType dataType,
                                 uint64_t globalAddress, uint64_t rows,
                                 uint64_t cols, uint64_t rowStrideBytes,
                                 uint32_t boxRows, uint32_t boxCols,
                                 TmaSwizzle swizzle) {
  // The driver lists dimensions innermost first.
  const uint64_t dims[2] = {cols, rows};
  const uint64_t strides[1] = {rowStrideBytes};
  const uint32_t box[2] = {boxCols, boxRows};
  return encodeTensorMap(out, tensorName, dataType, 2, globalAddress, dims,
                         strides, box, nullptr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                         swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                         CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

Status blasst::rt::encodeTiledBSHD(CUtensorMap *out, const char *tensorName,
                                   CUtensorMapDataType dataType,
                                   uint64_t globalAddress, int64_t batch,
                                   int64_t seqLen, int64_t heads,
                                   int64_t headDim, const BSHDStrides &strides,
                                   uint32_t boxSeq, uint32_t boxHeadDim,
                                   TmaSwizzle swizzle, uint32_t boxHeads) {
  std::string where =
      "TMA descriptor for " + quoted(tensorName ? tensorName : "tensor") + ": ";
  // Negative values would wrap to huge unsigned ones below and be reported
  // confusingly, so they are caught here by name.
  struct Named {
    const char *name;
    int64_t value;
  };
  for (const Named &n :
       {Named{"batch", batch}, Named{"seqLen", seqLen}, Named{"heads", heads},
        Named{"headDim", headDim}, Named{"batch stride", strides.batch},
        Named{"seq stride", strides.seq}, Named{"head stride", strides.head}})
    if (n.value < 1)
      return Status::error(where + n.name + " is " + std::to_string(n.value) +
                           "; it must be at least 1");
  uint64_t elementBytes = tensorMapElementSize(dataType);
  // Strides beyond 2^40 elements are invalid anyway; clamping keeps the
  // multiplication from wrapping so validateTensorMap reports them.
  auto bytes = [&](int64_t stride) {
    constexpr uint64_t kClamp = uint64_t(1) << 41;
    return std::min<uint64_t>(uint64_t(stride), kClamp) * elementBytes;
  };
  const uint64_t dims[4] = {uint64_t(headDim), uint64_t(heads),
                            uint64_t(seqLen), uint64_t(batch)};
  const uint64_t strideBytes[3] = {bytes(strides.head), bytes(strides.seq),
                                   bytes(strides.batch)};
  const uint32_t box[4] = {boxHeadDim, boxHeads, boxSeq, 1};
  // BLASST_TMA_L2_PROMOTION (none, 64, 128, 256; default 256): a measuring
  // knob for the L2 sector promotion of the attention tensors' copies.
  CUtensorMapL2promotion l2 = CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
  if (const char *env = std::getenv("BLASST_TMA_L2_PROMOTION"); env && *env) {
    std::string v = env;
    if (v == "none")
      l2 = CU_TENSOR_MAP_L2_PROMOTION_NONE;
    else if (v == "64")
      l2 = CU_TENSOR_MAP_L2_PROMOTION_L2_64B;
    else if (v == "128")
      l2 = CU_TENSOR_MAP_L2_PROMOTION_L2_128B;
    else if (v != "256")
      return Status::error("BLASST_TMA_L2_PROMOTION is '" + v +
                           "'; expected none, 64, 128 or 256");
  }
  return encodeTensorMap(out, tensorName, dataType, 4, globalAddress, dims,
                         strideBytes, box, nullptr,
                         CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, l2,
                         CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

//===----------------------------------------------------------------------===//
// Device buffers
//===----------------------------------------------------------------------===//

DeviceBuffer::~DeviceBuffer() { release(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer &&other) noexcept
    : ptr(std::exchange(other.ptr, 0)), bytes(std::exchange(other.bytes, 0)),
      ctx(other.ctx), name(std::move(other.name)) {}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) noexcept {
  if (this != &other) {
    release();
    ptr = std::exchange(other.ptr, 0);
    bytes = std::exchange(other.bytes, 0);
    ctx = other.ctx;
    name = std::move(other.name);
  }
  return *this;
}

void DeviceBuffer::release() {
  if (ptr)
    if (const DriverApi *api = loadedDriverOrNull())
      if (ScopedContext scope(*api, ctx); scope.result() == CUDA_SUCCESS)
        (void)api->memFree(ptr);
  ptr = 0;
  bytes = 0;
}

Status DeviceBuffer::allocate(const Context &context, size_t size,
                              const std::string &label, DeviceBuffer *out) {
  std::string doing =
      "allocate " + std::to_string(size) + " bytes for " + quoted(label);
  if (!out)
    return Status::error("cannot " + doing + ": the output pointer is null");
  if (size == 0)
    return Status::error("cannot allocate " + quoted(label) +
                         ": the size is 0 bytes");
  BLASST_RT_TRY(needContext(context, doing));
  const DriverApi *api;
  BLASST_RT_TRY(needDriver(&api));
  ScopedContext scope(*api, context.get());
  BLASST_RT_CU(scope.result(),
               "cuCtxSetCurrent failed while preparing to " + doing);
  DeviceBuffer buffer;
  BLASST_RT_CU(api->memAlloc(&buffer.ptr, size),
               "cuMemAlloc failed while allocating " + std::to_string(size) +
                   " bytes for " + quoted(label) + " on " + gpuName(context));
  buffer.bytes = size;
  buffer.ctx = context.get();
  buffer.name = label;
  *out = std::move(buffer);
  return Status::success();
}

Status DeviceBuffer::checkRange(const char *op, size_t count,
                                size_t offset) const {
  if (!ptr)
    return Status::error(std::string("cannot ") + op + " buffer " +
                         quoted(name) + ": it is not allocated");
  if (offset > bytes || count > bytes - offset)
    return Status::error(std::string("cannot ") + op + " buffer " +
                         quoted(name) + ": " + std::to_string(count) +
                         " bytes at offset " + std::to_string(offset) +
                         " overrun its " + std::to_string(bytes) + " bytes");
  return Status::success();
}

Status DeviceBuffer::copyFromHost(const void *src, size_t count,
                                  size_t offset) {
  BLASST_RT_TRY(checkRange("copy into", count, offset));
  if (count == 0)
    return Status::success();
  if (!src)
    return Status::error("cannot copy into buffer " + quoted(name) +
                         ": the host source pointer is null");
  const DriverApi *api;
  BLASST_RT_TRY(needDriver(&api));
  ScopedContext scope(*api, ctx);
  BLASST_RT_CU(scope.result(),
               "cuCtxSetCurrent failed while preparing a copy into " +
                   quoted(name));
  BLASST_RT_CU(api->memcpyHtoD(ptr + offset, src, count),
               "cuMemcpyHtoD failed while copying " + std::to_string(count) +
                   " bytes into " + quoted(name));
  return Status::success();
}

Status DeviceBuffer::copyToHost(void *dst, size_t count, size_t offset) const {
  BLASST_RT_TRY(checkRange("copy from", count, offset));
  if (count == 0)
    return Status::success();
  if (!dst)
    return Status::error("cannot copy from buffer " + quoted(name) +
                         ": the host destination pointer is null");
  const DriverApi *api;
  BLASST_RT_TRY(needDriver(&api));
  ScopedContext scope(*api, ctx);
  BLASST_RT_CU(scope.result(),
               "cuCtxSetCurrent failed while preparing a copy from " +
                   quoted(name));
  BLASST_RT_CU(api->memcpyDtoH(dst, ptr + offset, count),
               "cuMemcpyDtoH failed while copying " + std::to_string(count) +
                   " bytes from " + quoted(name) +
                   "; a kernel launched earlier may have faulted");
  return Status::success();
}

Status DeviceBuffer::fill(uint8_t value) {
  BLASST_RT_TRY(checkRange("fill", bytes, 0));
  const DriverApi *api;
  BLASST_RT_TRY(needDriver(&api));
  ScopedContext scope(*api, ctx);
  BLASST_RT_CU(scope.result(),
               "cuCtxSetCurrent failed while preparing to fill " +
                   quoted(name));
  BLASST_RT_CU(api->memsetD8(ptr, value, bytes),
               "cuMemsetD8 failed while filling " + quoted(name));
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Event timer
//===----------------------------------------------------------------------===//

EventTimer::~EventTimer() { release(); }

EventTimer::EventTimer(EventTimer &&other) noexcept
    : startEvent(std::exchange(other.startEvent, nullptr)),
      stopEvent(std::exchange(other.stopEvent, nullptr)), ctx(other.ctx),
      started(std::exchange(other.started, false)),
      stopped(std::exchange(other.stopped, false)) {}

EventTimer &EventTimer::operator=(EventTimer &&other) noexcept {
  if (this != &other) {
    release();
    startEvent = std::exchange(other.startEvent, nullptr);
    stopEvent = std::exchange(other.stopEvent, nullptr);
    ctx = other.ctx;
    started = std::exchange(other.started, false);
    stopped = std::exchange(other.stopped, false);
  }
  return *this;
}

void EventTimer::release() {
  if (const DriverApi *api = loadedDriverOrNull();
      api && (startEvent || stopEvent)) {
    ScopedContext scope(*api, ctx);
    if (startEvent)
      (void)api->eventDestroy(startEvent);
    if (stopEvent)
      (void)api->eventDestroy(stopEvent);
  }
  startEvent = stopEvent = nullptr;
  started = stopped = false;
}

Status EventTimer::create(const Context &context, EventTimer *out) {
  if (!out)
    return Status::error("cannot create an event timer: the output pointer "
                         "is null");
  BLASST_RT_TRY(needContext(context, "create an event timer"));
  const DriverApi *api;
  BLASST_RT_TRY(needDriver(&api));
  ScopedContext scope(*api, context.get());
  BLASST_RT_CU(scope.result(),
               "cuCtxSetCurrent failed while creating an event timer");
  EventTimer timer;
  timer.ctx = context.get();
  BLASST_RT_CU(api->eventCreate(&timer.startEvent, CU_EVENT_DEFAULT),
               "cuEventCreate failed while creating an event timer");
  BLASST_RT_CU(api->eventCreate(&timer.stopEvent, CU_EVENT_DEFAULT),
               "cuEventCreate failed while creating an event timer");
  *out = std::move(timer);
  return Status::success();
}

Status EventTimer::start(CUstream stream) {
  if (!startEvent)
    return Status::error("cannot start the event timer: it is not created "
                         "(use EventTimer::create)");
  const DriverApi *api;
  BLASST_RT_TRY(needDriver(&api));
  // The null stream is the legacy stream of the timer's context.
  ScopedContext scope(*api, ctx);
  BLASST_RT_CU(scope.result(), "cuCtxSetCurrent failed while preparing to "
                               "start the event timer");
  BLASST_RT_CU(api->eventRecord(startEvent, stream),
               "cuEventRecord failed while starting the event timer");
  started = true;
  stopped = false;
  return Status::success();
}

Status EventTimer::stop(CUstream stream) {
  if (!started)
    return Status::error("cannot stop the event timer: start() was not "
                         "called");
  const DriverApi *api;
  BLASST_RT_TRY(needDriver(&api));
  // The null stream is the legacy stream of the timer's context.
  ScopedContext scope(*api, ctx);
  BLASST_RT_CU(scope.result(), "cuCtxSetCurrent failed while preparing to "
                               "stop the event timer");
  BLASST_RT_CU(api->eventRecord(stopEvent, stream),
               "cuEventRecord failed while stopping the event timer");
  stopped = true;
  return Status::success();
}

Status EventTimer::elapsedMs(float *ms) const {
  if (!ms)
    return Status::error("cannot read the event timer: the output pointer is "
                         "null");
  if (!started || !stopped)
    return Status::error("cannot read the event timer: call start() and "
                         "stop() first");
  const DriverApi *api;
  BLASST_RT_TRY(needDriver(&api));
  BLASST_RT_CU(api->eventSynchronize(stopEvent),
               "cuEventSynchronize failed while waiting for the event timer; "
               "a kernel launched earlier may have faulted");
  BLASST_RT_CU(api->eventElapsedTime(ms, startEvent, stopEvent),
               "cuEventElapsedTime failed while reading the event timer");
  return Status::success();
}
