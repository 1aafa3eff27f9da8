//===- RuntimeCAPI.cpp - blasst.h over the runtime (libblasst.so) ---------===//
//
// The C API's runtime part: errors, versions, devices, specs, kernels and
// launches. Plain C++17 over BLASSTRuntime and BLASSTSpec: no LLVM/MLIR
// (ctest `blasst-capi-no-llvm` checks the library's dependencies).
//
//===----------------------------------------------------------------------===//
#include "CAPIInternal.h"

#include "blasst/Runtime/AttentionKernel.h"
#include "blasst/Runtime/KernelPackage.h"
#include "blasst/Runtime/Runtime.h"
#include "blasst/Spec/AttentionSpec.h"

#include <cerrno>
#include <cstddef>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <new>

#ifndef BLASST_VERSION_STRING
#error "BLASST_VERSION_STRING must be defined (lib/CAPI/CMakeLists.txt)"
#endif

using namespace blasst;
using namespace blasst::capi;

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

namespace {
thread_local std::string lastError;
} // namespace

extern "C" blasst_status blasst__set_error(blasst_status status,
                                           const char *message) {
  lastError = status == BLASST_OK || !message ? "" : message;
  return status;
}

const char *blasst_last_error(void) { return lastError.c_str(); }

const char *blasst_status_name(blasst_status status) {
  switch (status) {
  case BLASST_OK:
    return "BLASST_OK";
  case BLASST_ERROR_INVALID_ARGUMENT:
    return "BLASST_ERROR_INVALID_ARGUMENT";
  case BLASST_ERROR_UNSUPPORTED:
    return "BLASST_ERROR_UNSUPPORTED";
  case BLASST_ERROR_NOT_FOUND:
    return "BLASST_ERROR_NOT_FOUND";
  case BLASST_ERROR_BAD_FILE:
    return "BLASST_ERROR_BAD_FILE";
  case BLASST_ERROR_ABI_MISMATCH:
    return "BLASST_ERROR_ABI_MISMATCH";
  case BLASST_ERROR_NO_DEVICE:
    return "BLASST_ERROR_NO_DEVICE";
  case BLASST_ERROR_CUDA:
    return "BLASST_ERROR_CUDA";
  case BLASST_ERROR_COMPILE:
    return "BLASST_ERROR_COMPILE";
  case BLASST_ERROR_INTERNAL:
    return "BLASST_ERROR_INTERNAL";
  }
  return "unknown status";
}

void blasst_free(void *p) { std::free(p); }

//===----------------------------------------------------------------------===//
// Versions, devices, specs
//===----------------------------------------------------------------------===//

const char *blasst_version(void) { return "blasst " BLASST_VERSION_STRING; }
int blasst_c_api_version(void) { return BLASST_C_API_VERSION; }
int blasst_kernel_abi_version(void) { return rt::kKernelABIVersion; }

namespace {

/// One Context per GPU, shared by the kernels loaded on it. Never freed:
/// releasing primary contexts from static destructors at exit races the
/// driver's own teardown.
std::mutex contextMutex;
std::map<int, std::shared_ptr<rt::Context>> &contexts() {
  static auto *m = new std::map<int, std::shared_ptr<rt::Context>>();
  return *m;
}

blasst_status getContext(int device, std::shared_ptr<rt::Context> *out) {
  std::lock_guard<std::mutex> lock(contextMutex);
  auto it = contexts().find(device);
  if (it != contexts().end()) {
    *out = it->second;
    return BLASST_OK;
  }
  int count = 0;
  if (rt::Status s = rt::deviceCount(&count); !s)
    return fail(BLASST_ERROR_NO_DEVICE, s.message());
  if (device < 0 || device >= count)
    return fail(BLASST_ERROR_NO_DEVICE,
                "there is no GPU " + std::to_string(device) + " (the driver "
                "sees " + std::to_string(count) + ")");
  auto ctx = std::make_shared<rt::Context>();
  if (rt::Status s = rt::Context::create(device, ctx.get()); !s)
    return fail(BLASST_ERROR_CUDA, s.message());
  contexts()[device] = ctx;
  *out = ctx;
  return BLASST_OK;
}

/// The target whose arch-specific code runs on a compute capability.
const char *targetFor(int major, int minor) {
  if (major == 9 && minor == 0)
    return "sm_90a";
  if (major == 10 && minor == 0)
    return "sm_100a";
  return nullptr;
}

blasst_status parseSpecText(const char *text, AttentionSpec *out) {
  if (!text)
    return fail(BLASST_ERROR_INVALID_ARGUMENT, "the spec text is null");
  SpecOrError parsed = parseSpec(text, "<spec>");
  if (!parsed)
    return fail(BLASST_ERROR_INVALID_ARGUMENT, "bad spec: " + parsed.error);
  *out = std::move(*parsed.spec);
  return BLASST_OK;
}

blasst_status parseTargetText(const char *text, Target *out) {
  if (!text)
    return fail(BLASST_ERROR_INVALID_ARGUMENT, "the target is null");
  std::optional<Target> t = parseTarget(text);
  if (!t)
    return fail(BLASST_ERROR_INVALID_ARGUMENT,
                std::string("unknown target '") + text + "' (expected " +
                    targetChoices() + ")");
  *out = *t;
  return BLASST_OK;
}

} // namespace

blasst_status blasst_device_count(int *count) {
  if (!count)
    return fail(BLASST_ERROR_INVALID_ARGUMENT, "count is null");
  *count = 0;
  if (rt::Status s = rt::deviceCount(count); !s) {
    *count = 0;
    return fail(BLASST_ERROR_NO_DEVICE, s.message());
  }
  return ok();
}

blasst_status blasst_device_target(int device, const char **target) {
  if (!target)
    return fail(BLASST_ERROR_INVALID_ARGUMENT, "target is null");
  std::shared_ptr<rt::Context> ctx;
  if (blasst_status s = getContext(device, &ctx); s != BLASST_OK)
    return s;
  const rt::DeviceInfo &info = ctx->info();
  const char *t =
      targetFor(info.computeCapabilityMajor, info.computeCapabilityMinor);
  if (!t)
    return fail(BLASST_ERROR_UNSUPPORTED,
                info.describe() + ": blasst kernels run on sm_90 (H100, H200: "
                                  "sm_90a) and sm_100 (B200: sm_100a) GPUs");
  *target = t;
  return ok();
}

blasst_status blasst_spec_check(const char *spec, const char *target) {
  AttentionSpec s;
  if (blasst_status st = parseSpecText(spec, &s); st != BLASST_OK)
    return st;
  if (target) {
    Target t;
    if (blasst_status st = parseTargetText(target, &t); st != BLASST_OK)
      return st;
    if (std::string why = checkSupported(s, t); !why.empty())
      return fail(BLASST_ERROR_UNSUPPORTED,
                  std::string("the spec is not supported on ") + target +
                      ": " + why);
  }
  return ok();
}

blasst_status blasst_spec_canonical(const char *spec, char **out) {
  if (!out)
    return fail(BLASST_ERROR_INVALID_ARGUMENT, "out is null");
  AttentionSpec s;
  if (blasst_status st = parseSpecText(spec, &s); st != BLASST_OK)
    return st;
  if (!(*out = copyString(s.toString())))
    return fail(BLASST_ERROR_INTERNAL, "out of memory");
  return ok();
}

blasst_status blasst_kernel_key(const char *spec, const char *target,
                                char **out) {
  if (!out)
    return fail(BLASST_ERROR_INVALID_ARGUMENT, "out is null");
  AttentionSpec s;
  Target t;
  if (blasst_status st = parseSpecText(spec, &s); st != BLASST_OK)
    return st;
  if (blasst_status st = parseTargetText(target, &t); st != BLASST_OK)
    return st;
  if (!(*out = copyString(rt::kernelKey(s, t))))
    return fail(BLASST_ERROR_INTERNAL, "out of memory");
  return ok();
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

struct blasst_kernel {
  int device = BLASST_NO_DEVICE;
  // Declared before `kernel`: the module is unloaded before the context is
  // released.
  std::shared_ptr<rt::Context> context;
  rt::AttentionKernel kernel; // loaded only with a device
  rt::KernelInfo info;
  AttentionSpec spec;
  std::string specText;
};

namespace {

/// Checks everything that needs no driver, then (with a device) loads.
/// `specText`: the spec's bytes as the caller gave them, for the content
/// hash a .meta may record (null: the caller checked it).
blasst_status loadKernel(const std::string &what, const std::string &cubin,
                         const std::string *specText,
                         const rt::KernelInfo &info, AttentionSpec spec,
                         int device, blasst_kernel **out) {
  std::string doing = "cannot load kernel " + what + ": ";
  Target target = *parseTarget(info.target); // validated by the parser
  if (std::string why = checkSupported(spec, target); !why.empty())
    return fail(BLASST_ERROR_UNSUPPORTED,
                doing + "the spec is not supported on " + info.target + ": " +
                    why);
  if (std::string bad =
          rt::checkCubinImage(cubin.data(), cubin.size(), info.kernelName);
      !bad.empty())
    return fail(BLASST_ERROR_BAD_FILE, doing + "bad cubin (" +
                                           std::to_string(cubin.size()) +
                                           " bytes): " + bad);
  // The files must be the ones written together (the .meta's hash), and
  // the metadata must describe what the spec asks for: a launch sized from
  // an edited block_n or threads would not match the cubin. Checked with
  // or without a device.
  if (specText)
    if (std::string bad =
            rt::checkKernelContent(cubin.data(), cubin.size(), *specText, info);
        !bad.empty())
      return fail(BLASST_ERROR_BAD_FILE, doing + bad);
  if (rt::Status s = rt::checkKernelDescription(info, spec); !s)
    return fail(BLASST_ERROR_BAD_FILE, doing + s.message());
  std::unique_ptr<blasst_kernel> k(new (std::nothrow) blasst_kernel);
  if (!k)
    return fail(BLASST_ERROR_INTERNAL, "out of memory");
  if (device != BLASST_NO_DEVICE) {
    if (device < 0)
      return fail(BLASST_ERROR_INVALID_ARGUMENT,
                  doing + "device " + std::to_string(device) +
                      " is neither a GPU ordinal nor BLASST_NO_DEVICE");
    if (blasst_status s = getContext(device, &k->context); s != BLASST_OK)
      return fail(s, doing + blasst_last_error());
    const rt::DeviceInfo &dev = k->context->info();
    const char *runs =
        targetFor(dev.computeCapabilityMajor, dev.computeCapabilityMinor);
    if (!runs || info.target != runs)
      return fail(BLASST_ERROR_UNSUPPORTED,
                  doing + "it was compiled for " + info.target + ", and " +
                      dev.describe() + " runs " +
                      (runs ? std::string(runs) : std::string("neither")) +
                      " kernels");
    if (rt::Status s = rt::AttentionKernel::load(*k->context, cubin.data(),
                                                 cubin.size(), info, spec,
                                                 &k->kernel);
        !s)
      return fail(BLASST_ERROR_CUDA, doing + s.message());
  }
  k->device = device;
  k->info = info;
  k->specText = spec.toString();
  k->spec = std::move(spec);
  *out = k.release();
  return ok();
}

/// The abi_version a metadata text declares, or -1.
int metaAbiVersion(const std::string &text) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos)
      end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    size_t b = line.find_first_not_of(" \t");
    if (b == std::string::npos || line.compare(b, 11, "abi_version") != 0)
      continue;
    size_t eq = line.find('=', b);
    if (eq == std::string::npos)
      return -1;
    return std::atoi(line.c_str() + eq + 1);
  }
  return -1;
}

blasst_status parseMeta(const std::string &text, const std::string &source,
                        rt::KernelInfo *info) {
  if (rt::Status s = rt::parseKernelInfo(text, source, info); !s) {
    int abi = metaAbiVersion(text);
    return fail(abi >= 0 && abi != rt::kKernelABIVersion
                    ? BLASST_ERROR_ABI_MISMATCH
                    : BLASST_ERROR_BAD_FILE,
                s.message());
  }
  return BLASST_OK;
}

blasst_status readText(const std::string &path, const char *what,
                       std::string *out) {
  int openErrno = 0;
  if (rt::Status s = rt::readWholeFile(path, what, out, &openErrno); !s)
    return fail(openErrno == ENOENT ? BLASST_ERROR_NOT_FOUND
                                    : BLASST_ERROR_BAD_FILE,
                s.message());
  return BLASST_OK;
}

} // namespace

blasst_status blasst_kernel_load_files(const char *stem, int device,
                                       blasst_kernel **out) {
  if (!stem || !out)
    return fail(BLASST_ERROR_INVALID_ARGUMENT, "stem and out must not be null");
  std::string s = stem, meta, specText, cubin;
  if (blasst_status st = readText(s + ".meta", "kernel metadata", &meta);
      st != BLASST_OK)
    return st;
  rt::KernelInfo info;
  if (blasst_status st = parseMeta(meta, s + ".meta", &info); st != BLASST_OK)
    return st;
  if (blasst_status st = readText(s + ".spec", "kernel spec", &specText);
      st != BLASST_OK)
    return st;
  SpecOrError spec = parseSpec(specText, s + ".spec");
  if (!spec)
    return fail(BLASST_ERROR_BAD_FILE, spec.error);
  if (blasst_status st = readText(s + ".cubin", "cubin", &cubin);
      st != BLASST_OK)
    return st;
  return loadKernel("'" + s + "'", cubin, &specText, info,
                    std::move(*spec.spec), device, out);
}

blasst_status blasst_kernel_load_data(const void *cubin, size_t size,
                                      const char *meta, const char *spec,
                                      int device, blasst_kernel **out) {
  if (!cubin || !meta || !spec || !out)
    return fail(BLASST_ERROR_INVALID_ARGUMENT,
                "cubin, meta, spec and out must not be null");
  rt::KernelInfo info;
  if (blasst_status st = parseMeta(meta, "<meta>", &info); st != BLASST_OK)
    return st;
  AttentionSpec s;
  if (blasst_status st = parseSpecText(spec, &s); st != BLASST_OK)
    return st;
  std::string specText = spec;
  return loadKernel("'" + info.kernelName + "' (in memory)",
                    std::string(static_cast<const char *>(cubin), size),
                    &specText, info, std::move(s), device, out);
}

blasst_status blasst_kernel_load_package(const char *dir, const char *spec,
                                         const char *target, int device,
                                         blasst_kernel **out) {
  if (!dir || !out)
    return fail(BLASST_ERROR_INVALID_ARGUMENT, "dir and out must not be null");
  AttentionSpec s;
  if (blasst_status st = parseSpecText(spec, &s); st != BLASST_OK)
    return st;
  const char *targetName = target;
  if (!targetName) {
    if (device == BLASST_NO_DEVICE)
      return fail(BLASST_ERROR_INVALID_ARGUMENT,
                  "a target is needed to look up a kernel without a device");
    if (blasst_status st = blasst_device_target(device, &targetName);
        st != BLASST_OK)
      return st;
  }
  Target t;
  if (blasst_status st = parseTargetText(targetName, &t); st != BLASST_OK)
    return st;
  auto status = [](rt::PackageError e) {
    switch (e) {
    case rt::PackageError::NotFound:
      return BLASST_ERROR_NOT_FOUND;
    case rt::PackageError::AbiMismatch:
      return BLASST_ERROR_ABI_MISMATCH;
    default:
      return BLASST_ERROR_BAD_FILE;
    }
  };
  rt::KernelPackage package;
  rt::PackageError error;
  if (rt::Status st = rt::readKernelPackage(dir, &package, &error); !st)
    return fail(status(error), st.message());
  rt::KernelInfo info;
  std::string cubin;
  if (rt::Status st = rt::readPackageKernel(package, s, t, &info, &cubin,
                                            &error);
      !st)
    return fail(status(error), st.message());
  return loadKernel(
      "'" + info.kernelName + "' from package '" + std::string(dir) + "'",
      cubin, /*specText=*/nullptr, info, std::move(s), device, out);
}

void blasst_kernel_destroy(blasst_kernel *kernel) { delete kernel; }

blasst_status blasst_kernel_get_attr(const blasst_kernel *k,
                                     blasst_kernel_attr attr, int64_t *value) {
  if (!k || !value)
    return fail(BLASST_ERROR_INVALID_ARGUMENT, "kernel and value must not be "
                                               "null");
  const AttentionSpec &s = k->spec;
  switch (attr) {
  case BLASST_ATTR_ABI_VERSION:
    *value = k->info.abiVersion;
    break;
  case BLASST_ATTR_DTYPE:
    *value = s.dtype == DType::BF16 ? BLASST_DTYPE_BF16 : BLASST_DTYPE_F16;
    break;
  case BLASST_ATTR_HEAD_DIM:
    *value = s.headDim;
    break;
  case BLASST_ATTR_Q_HEADS:
    *value = s.numQHeads;
    break;
  case BLASST_ATTR_KV_HEADS:
    *value = s.numKVHeads;
    break;
  case BLASST_ATTR_CAUSAL:
    *value = s.causal;
    break;
  case BLASST_ATTR_LSE:
    *value = s.lse;
    break;
  case BLASST_ATTR_STATS:
    *value = s.stats;
    break;
  case BLASST_ATTR_SPARSITY:
    *value = s.sparsity.kind == SparsityKind::None ? BLASST_SPARSITY_NONE
             : s.sparsity.kind == SparsityKind::ScaleFactor
                 ? BLASST_SPARSITY_A
                 : BLASST_SPARSITY_LN_LAMBDA;
    break;
  case BLASST_ATTR_BLOCK_M:
    *value = k->info.blockM;
    break;
  case BLASST_ATTR_BLOCK_N:
    *value = k->info.blockN;
    break;
  case BLASST_ATTR_THREADS:
    *value = k->info.threads;
    break;
  case BLASST_ATTR_SMEM_BYTES:
    *value = k->info.smemBytes;
    break;
  case BLASST_ATTR_DEVICE:
    *value = k->device;
    break;
  case BLASST_ATTR_KV_PER_SEQUENCE:
    *value = k->spec.kvPerSequence ? 1 : 0;
    break;
  case BLASST_ATTR_KV_PAGE_SIZE:
    *value = k->spec.kvPageSize;
    break;
  case BLASST_ATTR_SHORT_BLOCK_N:
    *value = k->info.shortBlockN;
    break;
  case BLASST_ATTR_SHORT_CTAS_PER_SM:
    *value = k->info.shortCtasPerSM;
    break;
  case BLASST_ATTR_TMA_ENTRY:
    *value = !k->info.tmaEntry ? 0 : k->kernel.takesTmaEntry() ? 2 : 1;
    break;
  default:
    return fail(BLASST_ERROR_INVALID_ARGUMENT,
                "unknown kernel attribute " + std::to_string(int(attr)));
  }
  return ok();
}

const char *blasst_kernel_spec(const blasst_kernel *k) {
  return k ? k->specText.c_str() : "";
}
const char *blasst_kernel_name(const blasst_kernel *k) {
  return k ? k->info.kernelName.c_str() : "";
}
const char *blasst_kernel_target(const blasst_kernel *k) {
  return k ? k->info.target.c_str() : "";
}
double blasst_kernel_sparsity_value(const blasst_kernel *k) {
  return k && !k->spec.sparsity.isDense() ? k->spec.sparsity.value : 0.0;
}
double blasst_kernel_lambda_max(const blasst_kernel *k) {
  return k ? k->spec.sparsity.lambdaMax : 1.0;
}

//===----------------------------------------------------------------------===//
// Launches
//===----------------------------------------------------------------------===//

void blasst_attention_args_init(blasst_attention_args *args) {
  if (!args)
    return;
  std::memset(args, 0, sizeof(*args));
  args->struct_size = sizeof(*args);
}

blasst_status blasst_log2_threshold(blasst_sparsity kind, double value,
                                    float *out) {
  if (!out)
    return fail(BLASST_ERROR_INVALID_ARGUMENT, "out is null");
  constexpr double kMax = std::numeric_limits<float>::max();
  double t;
  switch (kind) {
  case BLASST_SPARSITY_A:
    if (!(std::isfinite(value) && value > 0))
      return fail(BLASST_ERROR_INVALID_ARGUMENT,
                  "sparsity a must be finite and > 0, got " +
                      std::to_string(value));
    t = std::log2(value);
    break;
  case BLASST_SPARSITY_LN_LAMBDA:
    if (!(std::isfinite(value) && value < 0))
      return fail(BLASST_ERROR_INVALID_ARGUMENT,
                  "ln_lambda must be finite and < 0, got " +
                      std::to_string(value));
    t = value * kLog2E;
    if (t < -kMax)
      return fail(BLASST_ERROR_INVALID_ARGUMENT,
                  "ln_lambda " + std::to_string(value) +
                      " is out of range: ln_lambda * log2(e) must fit a "
                      "float32");
    break;
  default:
    return fail(BLASST_ERROR_INVALID_ARGUMENT,
                "a threshold needs sparsity kind BLASST_SPARSITY_A or "
                "BLASST_SPARSITY_LN_LAMBDA, got " +
                    std::to_string(int(kind)));
  }
  *out = float(t);
  return ok();
}

namespace {

/// The runtime's arguments and the threshold, or INVALID_ARGUMENT.
blasst_status convertArgs(const blasst_kernel *k,
                          const blasst_attention_args *a, rt::AttentionArgs *r,
                          float *threshold, bool forLaunch = true) {
  if (!k || !a)
    return fail(BLASST_ERROR_INVALID_ARGUMENT, "kernel and args must not be "
                                               "null");
  std::string kernel = "arguments for kernel '" + k->info.kernelName + "': ";
  // The struct before the KV cache fields (ABI 4) is accepted: those
  // fields then read as 0.
  constexpr size_t kSizeBeforeKVCache =
      offsetof(blasst_attention_args, seq_lens_kv);
  if (a->struct_size < kSizeBeforeKVCache)
    return fail(BLASST_ERROR_INVALID_ARGUMENT,
                kernel + "args.struct_size is " +
                    std::to_string(a->struct_size) + ", expected " +
                    std::to_string(sizeof(blasst_attention_args)) +
                    " (initialise with blasst_attention_args_init)");
  if (a->struct_size >= sizeof(blasst_attention_args)) {
    r->seqLensKV = a->seq_lens_kv;
    r->blockTable = a->block_table;
    r->maxPages = a->max_pages;
    r->numPages = a->num_pages;
  }
  r->q = a->q;
  r->k = a->k;
  r->v = a->v;
  r->o = a->o;
  r->lse = a->lse;
  r->stats = a->stats;
  if (uint32_t unknown = a->flags & ~uint32_t(BLASST_LAUNCH_ZERO_STATS)) {
    char hex[16];
    std::snprintf(hex, sizeof(hex), "0x%x", unknown);
    return fail(BLASST_ERROR_INVALID_ARGUMENT,
                kernel + "unknown launch flags " + hex);
  }
  r->zeroStats = a->flags & BLASST_LAUNCH_ZERO_STATS;
  if (a->kv_splits < 0)
    return fail(BLASST_ERROR_INVALID_ARGUMENT,
                kernel + "kv_splits is " + std::to_string(a->kv_splits) +
                    "; 0 (the kernel's choice) or a count >= 1");
  if (a->reserved != 0)
    return fail(BLASST_ERROR_INVALID_ARGUMENT,
                kernel + "args.reserved must be 0");
  r->workspace = a->workspace;
  r->workspaceBytes = size_t(a->workspace_bytes);
  r->kvSplits = a->kv_splits;
  r->batch = a->batch;
  r->seqQ = a->seq_q;
  r->seqKV = a->seq_kv;
  r->numQHeads = a->q_heads;
  r->numKVHeads = a->kv_heads;
  r->headDim = a->head_dim;
  r->elementBytes = dtypeBytes(k->spec.dtype);
  auto strides = [](const int64_t s[3]) {
    return rt::BSHDStrides{s[0], s[1], s[2]};
  };
  r->qStrides = strides(a->q_strides);
  r->kStrides = strides(a->k_strides);
  r->vStrides = strides(a->v_strides);
  r->oStrides = strides(a->o_strides);

  bool dense = k->spec.sparsity.isDense();
  switch (a->threshold_source) {
  case BLASST_THRESHOLD_SPEC:
    *threshold = rt::log2ThresholdForSpec(k->spec);
    break;
  case BLASST_THRESHOLD_VALUE:
    if (dense)
      return fail(BLASST_ERROR_INVALID_ARGUMENT,
                  kernel + "a threshold was given but the kernel is dense");
    if (std::isnan(a->log2_threshold))
      return fail(BLASST_ERROR_INVALID_ARGUMENT,
                  kernel + "the threshold is NaN");
    *threshold = a->log2_threshold;
    break;
  case BLASST_THRESHOLD_DEVICE:
    if (a->log2_threshold_ptr == 0)
      return fail(BLASST_ERROR_INVALID_ARGUMENT,
                  kernel + "BLASST_THRESHOLD_DEVICE needs log2_threshold_ptr");
    *threshold = rt::log2ThresholdForSpec(k->spec); // unused by the kernel
    r->log2ThresholdPtr = a->log2_threshold_ptr;
    break;
  default:
    return fail(BLASST_ERROR_INVALID_ARGUMENT,
                kernel + "unknown threshold_source " +
                    std::to_string(a->threshold_source));
  }
  if (a->threshold_source != BLASST_THRESHOLD_DEVICE &&
      a->log2_threshold_ptr != 0)
    return fail(BLASST_ERROR_INVALID_ARGUMENT,
                kernel + "log2_threshold_ptr is set but threshold_source is "
                         "not BLASST_THRESHOLD_DEVICE");
  if (a->softmax_scale != 0) {
    double s = a->softmax_scale * kLog2E;
    if (!(s <= double(std::numeric_limits<float>::max()) &&
          s >= double(std::numeric_limits<float>::min())))
      return fail(BLASST_ERROR_INVALID_ARGUMENT,
                  kernel + "softmax_scale " + std::to_string(a->softmax_scale) +
                      " is out of range: the kernel takes softmax_scale * "
                      "log2(e) as a float32 in [1.2e-38, 3.4e38]");
  }
  if (rt::Status s = rt::validateArgsForKernel(*r, k->info, k->spec,
                                               k->info.kernelName);
      !s)
    return fail(BLASST_ERROR_INVALID_ARGUMENT, s.message());
  // (A workspace query's pointers may be stand-ins.)
  if (forLaunch)
    if (rt::Status s = rt::checkOutputOverlap(*r); !s)
      return fail(BLASST_ERROR_INVALID_ARGUMENT, "arguments for kernel '" +
                                                     k->info.kernelName +
                                                     "': " + s.message());
  // A decode launch without a workspace and without a split count (what
  // callers written before the workspace fields pass) takes the kernel's
  // own choice where that needs no workspace (one split, or lean CTAs that
  // each keep their tiles whole), else one split: correct, without the
  // splits' parallelism. blasst_kernel_workspace_bytes sizes the choice.
  if (k->info.splitKV && forLaunch && a->workspace == 0 && a->kv_splits == 0 &&
      k->kernel.workspaceBytes(*r) > 0)
    r->kvSplits = 1;
  return BLASST_OK;
}

} // namespace

blasst_status blasst_kernel_workspace_bytes(const blasst_kernel *k,
                                           const blasst_attention_args *a,
                                           uint64_t *bytes,
                                           int32_t *kvSplits) {
  if (!bytes)
    return fail(BLASST_ERROR_INVALID_ARGUMENT, "bytes must not be null");
  rt::AttentionArgs r;
  float threshold = 0;
  if (blasst_status s = convertArgs(k, a, &r, &threshold, /*forLaunch=*/false);
      s != BLASST_OK)
    return s;
  // A decode kernel's splits (and so its workspace) follow the GPU's SM
  // count: without a device there is no answer to give.
  if (k->info.splitKV && k->device == BLASST_NO_DEVICE)
    return fail(BLASST_ERROR_INVALID_ARGUMENT,
                "kernel '" + k->info.kernelName +
                    "' was loaded with BLASST_NO_DEVICE: a decode kernel's "
                    "workspace and split count follow the GPU's SM count "
                    "(load it on a device)");
  *bytes = uint64_t(k->kernel.workspaceBytes(r));
  if (kvSplits)
    *kvSplits = int32_t(k->kernel.launchKVSplits(r));
  return ok();
}

blasst_status blasst_kernel_check_args(const blasst_kernel *k,
                                       const blasst_attention_args *a) {
  rt::AttentionArgs r;
  float threshold = 0;
  if (blasst_status s = convertArgs(k, a, &r, &threshold); s != BLASST_OK)
    return s;
  return ok();
}

blasst_status blasst_kernel_launch(const blasst_kernel *k,
                                   const blasst_attention_args *a,
                                   void *stream) {
  rt::AttentionArgs r;
  float threshold = 0;
  if (blasst_status s = convertArgs(k, a, &r, &threshold); s != BLASST_OK)
    return s;
  if (k->device == BLASST_NO_DEVICE)
    return fail(BLASST_ERROR_INVALID_ARGUMENT,
                "kernel '" + k->info.kernelName +
                    "' was loaded with BLASST_NO_DEVICE and cannot launch");
  rt::AttentionLaunch launch;
  if (rt::Status s = k->kernel.prepare(r, threshold, &launch); !s)
    return fail(BLASST_ERROR_CUDA, s.message());
  if (a->softmax_scale != 0)
    launch.scaleLog2 = float(a->softmax_scale * kLog2E);
  if (rt::Status s = k->kernel.launch(launch, static_cast<CUstream>(stream));
      !s)
    return fail(BLASST_ERROR_CUDA, s.message());
  return ok();
}
