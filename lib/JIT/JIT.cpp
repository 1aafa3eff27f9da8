//===- JIT.cpp - Compile attention kernels in-process and run them --------===//
//
// compileToCubin (the pipeline blasst-compile --emit cubin runs) in-process
// with diagnostics captured, plus the on-disk cache and the runtime glue. See
// JIT.h.
//
//===----------------------------------------------------------------------===//
#include "blasst/JIT/JIT.h"
#include "blasst/Compiler/Compile.h"
#include "blasst/Compiler/Frontend.h"
#include "blasst/Target/Target.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>

using namespace mlir;
using namespace blasst;
using namespace blasst::jit;
namespace fs = llvm::sys::fs;

//===----------------------------------------------------------------------===//
// Small helpers
//===----------------------------------------------------------------------===//

const char *jit::compilerVersion() { return blasst::compilerVersion(); }

/// "'llama3-8b-prefill' for sm_90a", for messages.
static std::string what(const AttentionSpec &spec, Target t) {
  return "'" + (spec.name.empty() ? kernelBaseName(spec) : spec.name) +
         "' for " + toString(t);
}

namespace {
using Clock = std::chrono::steady_clock;
/// Milliseconds since construction or the last lap().
struct Stopwatch {
  Clock::time_point last = Clock::now();
  double lap() {
    Clock::time_point now = Clock::now();
    double ms = std::chrono::duration<double, std::milli>(now - last).count();
    last = now;
    return ms;
  }
};

/// Where progress lines and notes go.
struct Log {
  bool verbose;
  std::string prefix; // "blasst-jit: 'name' for sm_90a: "
  std::string *notes;
  void progress(const llvm::Twine &msg) const {
    if (verbose)
      llvm::errs() << prefix << msg << "\n";
  }
  void note(const llvm::Twine &msg) const {
    std::string line = msg.str();
    *notes += line + "\n";
    if (verbose)
      llvm::errs() << prefix << line << "\n";
  }
};

std::string fmtMs(double ms) {
  std::string s;
  llvm::raw_string_ostream(s) << llvm::format("%.1f", ms);
  return s;
}
} // namespace

std::string CompileTimings::toString() const {
  std::string s = "total " + fmtMs(totalMs) + " ms:";
  const std::pair<const char *, double> parts[] = {
      {"lookup", cacheLookupMs},       {"attn", attnMs}, {"ws", wsMs},
      {"llvm-dialect", llvmDialectMs}, {"ptx", ptxMs},   {"cubin", cubinMs},
      {"store", cacheStoreMs}};
  bool first = true;
  for (auto [name, ms] : parts) {
    if (ms == 0)
      continue;
    s += std::string(first ? " " : ", ") + name + " " + fmtMs(ms);
    first = false;
  }
  return s;
}

//===----------------------------------------------------------------------===//
// supports, cache directory, cache key
//===----------------------------------------------------------------------===//

std::string jit::supports(const AttentionSpec &spec, Target target) {
  std::string reason = checkSupported(spec, target);
  if (!reason.empty())
    return reason;
  if (target == Target::SM100a)
    return "the sm_100a lowering (tcgen05, tensor memory) is not built yet";
  return "";
}

static std::mutex defaultDirMutex;
static std::string defaultDir;

void jit::setDefaultCacheDir(std::string dir) {
  std::lock_guard<std::mutex> lock(defaultDirMutex);
  defaultDir = std::move(dir);
}

std::string jit::cacheDir(const CompileOptions &opts) {
  if (!opts.cacheDir.empty())
    return opts.cacheDir;
  {
    std::lock_guard<std::mutex> lock(defaultDirMutex);
    if (!defaultDir.empty())
      return defaultDir;
  }
  auto env = [](const char *name) -> std::string {
    const char *v = std::getenv(name);
    return v ? std::string(v) : std::string();
  };
  if (std::string d = env("BLASST_CACHE_DIR"); !d.empty())
    return d;
  if (std::string d = env("XDG_CACHE_HOME"); !d.empty())
    return d + "/blasst";
  if (std::string d = env("HOME"); !d.empty())
    return d + "/.cache/blasst";
  return "";
}

/// ptxasVersion() runs `ptxas --version`; remember the answer per ptxas path
/// (findPtxas is cheap and follows CUDA_HOME, so a changed toolkit is seen).
static std::string cachedPtxasVersion() {
  static std::mutex mutex;
  static std::map<std::string, std::string> versions;
  std::string path = findPtxas(nullptr);
  if (path.empty())
    return "";
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = versions.find(path);
    if (it != versions.end())
      return it->second;
  }
  std::string v = ptxasVersion();
  std::lock_guard<std::mutex> lock(mutex);
  if (!v.empty())
    versions[path] = v;
  return v;
}

/// The compiler's own identity: the version string does not change when the
/// lowering does, so the key also covers a hash of the running executable
/// (which links the compiler statically). Computed once per process.
static std::string compilerBuildId() {
  static std::string id = [] {
    auto buf = llvm::MemoryBuffer::getFile("/proc/self/exe", /*IsText=*/false,
                                           /*RequiresNullTerminator=*/false);
    if (!buf)
      return std::string("unknown-build");
    std::array<uint8_t, 32> h = llvm::SHA256::hash(llvm::ArrayRef<uint8_t>(
        reinterpret_cast<const uint8_t *>((*buf)->getBufferStart()),
        (*buf)->getBufferSize()));
    return llvm::toHex(h, /*LowerCase=*/true);
  }();
  return id;
}

static ScheduleOptions resolvedSchedule(const AttentionSpec &spec,
                                        Target target, ScheduleOptions knobs) {
  knobs.target = target;
  return resolveSchedule(spec, knobs);
}

/// The key over a *resolved* schedule.
static std::string keyFor(const AttentionSpec &spec, Target target,
                          const ScheduleOptions &s) {
  std::string material;
  llvm::raw_string_ostream os(material);
  os << "blasst-jit cache key v2\n"
     << "[spec]\n"
     << spec.toString() << "[target] " << toString(target) << "\n"
     << "[compiler] " << jit::compilerVersion() << " build "
     << compilerBuildId() << "\n"
     << "[ptxas] " << cachedPtxasVersion() << "\n"
     // Every knob of the table (ScheduleKnobs.def), resolved.
     << "[schedule] " << formatSchedule(s) << "\n"
     << "[abi] " << rt::kKernelABIVersion << "\n";
  os.flush();
  std::array<uint8_t, 32> hash = llvm::SHA256::hash(llvm::ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>(material.data()), material.size()));
  return llvm::toHex(hash, /*LowerCase=*/true);
}

std::string jit::cacheKey(const AttentionSpec &spec, Target target,
                          const ScheduleOptions &schedule) {
  return keyFor(spec, target, resolvedSchedule(spec, target, schedule));
}

//===----------------------------------------------------------------------===//
// Cache entries
//===----------------------------------------------------------------------===//

namespace {
enum class Lookup { Miss, Hit, Corrupt };
}

/// Reads the entry at `stem` into `ck` (whose spec, target and schedule are
/// set). A missing .meta is a miss (nothing committed); anything wrong after
/// that is Corrupt with the reason in `why`.
static Lookup readEntry(const std::string &stem, CompiledKernel &ck,
                        std::string &why) {
  std::string meta = stem + ".meta";
  if (!fs::exists(meta))
    return Lookup::Miss;
  rt::KernelInfo info;
  if (rt::Status s = rt::readKernelInfo(meta, &info); !s) {
    why = "unreadable .meta: " + s.message();
    return Lookup::Corrupt;
  }
  if (info.target != toString(ck.target) ||
      info.compilerVersion != jit::compilerVersion() ||
      info.blockM != ck.schedule.blockM || info.blockN != ck.schedule.blockN) {
    why = ".meta does not describe this kernel (target " + info.target + ", " +
          info.compilerVersion + ", block " + std::to_string(info.blockM) +
          "x" + std::to_string(info.blockN) + ")";
    return Lookup::Corrupt;
  }
  SpecOrError spec = parseSpecFile(stem + ".spec");
  if (!spec) {
    why = "unreadable .spec: " + spec.error;
    return Lookup::Corrupt;
  }
  if (*spec.spec != ck.spec) {
    why = ".spec is a different spec (" + spec.spec->toShortString() + ")";
    return Lookup::Corrupt;
  }
  auto buf = llvm::MemoryBuffer::getFile(stem + ".cubin", /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buf) {
    why = "unreadable .cubin: " + buf.getError().message();
    return Lookup::Corrupt;
  }
  std::vector<char> cubin((*buf)->getBufferStart(), (*buf)->getBufferEnd());
  if (std::string bad =
          rt::checkCubinImage(cubin.data(), cubin.size(), info.kernelName);
      !bad.empty()) {
    why = "bad .cubin (" + std::to_string(cubin.size()) + " bytes): " + bad;
    return Lookup::Corrupt;
  }
  ck.info = std::move(info);
  ck.cubin = std::move(cubin);
  return Lookup::Hit;
}

/// Writes `data` to a unique temporary file next to `path`, then renames it
/// over `path` (atomic on POSIX file systems). "" or the error.
static std::string writeAtomically(const std::string &path,
                                   llvm::StringRef data) {
  llvm::SmallString<256> tmp;
  int fd;
  if (std::error_code ec =
          fs::createUniqueFile(path + ".tmp-%%%%%%%%", fd, tmp))
    return "cannot create a temporary file for " + path + ": " + ec.message();
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << data;
    os.close();
    if (os.has_error()) {
      std::string msg = os.error().message();
      os.clear_error();
      fs::remove(tmp);
      return "cannot write " + std::string(tmp) + ": " + msg;
    }
  }
  if (std::error_code ec = fs::rename(tmp, path)) {
    fs::remove(tmp);
    return "cannot rename " + std::string(tmp) + " to " + path + ": " +
           ec.message();
  }
  return "";
}

/// .cubin, .spec, then .meta (the commit marker). "" or the error.
static std::string storeEntry(const std::string &stem,
                              const CompiledKernel &ck) {
  if (std::string e = writeAtomically(
          stem + ".cubin", llvm::StringRef(ck.cubin.data(), ck.cubin.size()));
      !e.empty())
    return e;
  if (std::string e = writeAtomically(stem + ".spec", ck.spec.toString());
      !e.empty())
    return e;
  return writeAtomically(stem + ".meta", rt::formatKernelInfo(ck.info));
}

//===----------------------------------------------------------------------===//
// The compiler pipeline
//===----------------------------------------------------------------------===//

namespace {
/// Collects every diagnostic emitted in a context while alive.
class DiagnosticCollector {
public:
  explicit DiagnosticCollector(MLIRContext *ctx)
      : handler(ctx, [this](Diagnostic &d) {
          append(d, /*indent=*/"");
          for (Diagnostic &note : d.getNotes())
            append(note, "  ");
          return success();
        }) {}

  /// Error diagnostics and their notes (what a failure message shows).
  std::string errors;
  /// Warnings and remarks.
  std::string others;

private:
  static std::string locationText(Location loc) {
    if (auto f = dyn_cast<FileLineColLoc>(loc))
      return (f.getFilename().str() + ":" + std::to_string(f.getLine()) + ":" +
              std::to_string(f.getColumn()));
    if (auto n = dyn_cast<NameLoc>(loc))
      return n.getName().str();
    if (isa<UnknownLoc>(loc))
      return "<unknown location>";
    std::string s;
    llvm::raw_string_ostream os(s);
    loc.print(os);
    return s;
  }
  static const char *severityText(DiagnosticSeverity s) {
    switch (s) {
    case DiagnosticSeverity::Error:
      return "error";
    case DiagnosticSeverity::Warning:
      return "warning";
    case DiagnosticSeverity::Note:
      return "note";
    case DiagnosticSeverity::Remark:
      return "remark";
    }
    return "diagnostic";
  }
  void append(Diagnostic &d, const char *indent) {
    bool isError = d.getSeverity() == DiagnosticSeverity::Error;
    if (d.getSeverity() == DiagnosticSeverity::Note)
      isError = lastWasError;
    else
      lastWasError = isError;
    std::string &out = isError ? errors : others;
    out += std::string(indent) + locationText(d.getLocation()) + ": " +
           severityText(d.getSeverity()) + ": " + d.str() + "\n";
  }

  bool lastWasError = false;
  ScopedDiagnosticHandler handler;
};
} // namespace

/// Runs compileToCubin (the pipeline blasst-compile runs) with diagnostics
/// captured; fills ck.info, ck.cubin, ck.ptxasLog and the timings.
static llvm::Error compileUncached(CompiledKernel &ck, const Log &log) {
  const std::string whatText = what(ck.spec, ck.target);
  Stopwatch watch;

  DialectRegistry registry;
  registerAllBLASSTDialects(registry);
  // No thread pool: one module, one kernel, and forked children stay safe.
  MLIRContext ctx(registry, MLIRContext::Threading::DISABLED);
  ctx.loadAllAvailableDialects();
  // Diagnostics should say what is wrong, not dump the module.
  ctx.printOpOnDiagnostic(false);
  ctx.printStackTraceOnDiagnostic(false);
  DiagnosticCollector diags(&ctx);

  CompileRequest request;
  request.spec = ck.spec;
  request.schedule = ck.schedule;
  request.schedule.target = ck.target;
  // Diagnostics (which the lowering carries over to the ops it creates) say
  // which kernel they are about.
  request.locationName = "jit:" + kernelBaseName(ck.spec);
  request.onStage = [&](Stage stage, ModuleOp, StringRef) {
    double *slot = nullptr;
    switch (stage) {
    case Stage::Attn:
      slot = &ck.timings.attnMs; // with the MLIRContext
      break;
    case Stage::WS:
      slot = &ck.timings.wsMs;
      break;
    case Stage::LLVMDialect:
      slot = &ck.timings.llvmDialectMs;
      break;
    case Stage::LLVMIR:
    case Stage::PTX:
      slot = &ck.timings.ptxMs;
      break;
    case Stage::Cubin:
      slot = &ck.timings.cubinMs;
      break;
    }
    *slot = watch.lap();
    log.progress(llvm::Twine(stageName(stage)) + " in " + fmtMs(*slot) + " ms");
  };

  llvm::Expected<CompiledCubin> compiled = compileToCubin(ctx, request);
  if (!compiled) {
    std::string msg = "blasst-jit: cannot compile " + whatText + ": ";
    llvm::handleAllErrors(compiled.takeError(), [&](const CompileError &e) {
      msg += e.message;
      if (!e.diagnosed)
        return;
      if (!diags.errors.empty())
        msg += ":\n" + diags.errors;
      else
        msg += " (no diagnostic was emitted)";
      if (!diags.others.empty())
        msg += (diags.errors.empty() ? "\n" : "") + diags.others;
    });
    while (!msg.empty() && msg.back() == '\n')
      msg.pop_back();
    return llvm::createStringError(msg);
  }

  ck.info = std::move(compiled->info);
  ck.cubin = std::move(compiled->cubin);
  ck.ptxasLog = std::move(compiled->ptxasLog);
  if (!diags.others.empty())
    log.note(llvm::StringRef(diags.others).rtrim());
  return llvm::Error::success();
}

llvm::Expected<CompiledKernel> jit::compile(const AttentionSpec &spec,
                                            Target target,
                                            const CompileOptions &opts) {
  Stopwatch total, watch;
  if (std::string reason = supports(spec, target); !reason.empty())
    return llvm::createStringError("blasst-jit: cannot compile " +
                                   what(spec, target) + ": " + reason);

  CompiledKernel ck;
  ck.spec = spec;
  ck.target = target;
  ck.schedule = resolvedSchedule(spec, target, opts.schedule);
  ck.cacheKey = keyFor(spec, target, ck.schedule);
  Log log{opts.verbose, "blasst-jit: " + what(spec, target) + ": ", &ck.notes};

  std::string dir, stem;
  if (opts.useCache) {
    dir = cacheDir(opts);
    if (dir.empty()) {
      log.note("no cache directory (set BLASST_CACHE_DIR, XDG_CACHE_HOME or "
               "HOME, or CompileOptions::cacheDir); not caching");
    } else {
      llvm::SmallString<256> p(dir);
      llvm::sys::path::append(p, ck.cacheKey);
      stem = std::string(p);
      std::string why;
      switch (readEntry(stem, ck, why)) {
      case Lookup::Hit:
        ck.fromCache = true;
        ck.cacheStem = stem;
        ck.timings.cacheLookupMs = watch.lap();
        ck.timings.totalMs = total.lap();
        log.progress("cache hit " + stem + " in " + fmtMs(ck.timings.totalMs) +
                     " ms (" + llvm::Twine(ck.cubin.size()) + " bytes)");
        return ck;
      case Lookup::Corrupt:
        log.note("cache entry " + stem + " is corrupt (" + why +
                 "); recompiling and overwriting it");
        break;
      case Lookup::Miss:
        log.progress("cache miss, key " + ck.cacheKey + " in " + dir);
        break;
      }
    }
  }
  ck.timings.cacheLookupMs = watch.lap();

  if (llvm::Error err = compileUncached(ck, log))
    return std::move(err);
  watch.lap();

  if (!stem.empty()) {
    std::string error;
    if (std::error_code ec = fs::create_directories(dir))
      error = "cannot create " + dir + ": " + ec.message();
    else
      error = storeEntry(stem, ck);
    if (error.empty()) {
      ck.cacheStem = stem;
      log.progress("stored " + stem + ".{cubin,spec,meta}");
    } else {
      log.note("warning: not cached: " + error);
    }
    ck.timings.cacheStoreMs = watch.lap();
  }
  ck.timings.totalMs = total.lap();
  log.progress("compiled in " + fmtMs(ck.timings.totalMs) + " ms (" +
               llvm::Twine(ck.cubin.size()) + " bytes, " +
               llvm::Twine(ck.info.threads) + " threads, " +
               llvm::Twine(ck.info.smemBytes) + " B shared memory)");
  return ck;
}

//===----------------------------------------------------------------------===//
// Kernel
//===----------------------------------------------------------------------===//

Kernel::Kernel(CompiledKernel compiled) : ck(std::move(compiled)) {}

Kernel::~Kernel() = default;

Kernel &Kernel::operator=(Kernel &&other) {
  if (this != &other) {
    kernel = rt::AttentionKernel(); // unload before the context goes
    ownedContext.reset();
    ck = std::move(other.ck);
    ownedContext = std::move(other.ownedContext);
    kernel = std::move(other.kernel);
  }
  return *this;
}

rt::Status Kernel::load(const rt::Context &context) {
  kernel = rt::AttentionKernel();
  if (&context != ownedContext.get())
    ownedContext.reset();
  std::string name = ck.info.kernelName.empty() ? "<none>" : ck.info.kernelName;
  if (ck.cubin.empty())
    return rt::Status::error("blasst-jit: cannot load kernel '" + name +
                             "': no cubin (this Kernel holds no compiled "
                             "kernel)");
  rt::Status s = rt::AttentionKernel::load(
      context, ck.cubin.data(), ck.cubin.size(), ck.info, ck.spec, &kernel);
  if (!s)
    return rt::Status::error("blasst-jit: cannot load kernel '" + name +
                             "': " + s.message());
  return s;
}

rt::Status Kernel::run(const rt::AttentionArgs &args, CUstream stream,
                       float log2Threshold) {
  if (!loaded()) {
    std::string name =
        ck.info.kernelName.empty() ? "<none>" : ck.info.kernelName;
    auto ctx = std::make_unique<rt::Context>();
    if (rt::Status s = rt::Context::create(0, ctx.get()); !s)
      return rt::Status::error("blasst-jit: cannot run kernel '" + name +
                               "': no CUDA context for GPU 0: " + s.message());
    kernel = rt::AttentionKernel();
    ownedContext = std::move(ctx);
    if (rt::Status s = load(*ownedContext); !s) {
      ownedContext.reset();
      return s;
    }
  }
  float threshold =
      std::isnan(log2Threshold) ? ck.specLog2Threshold() : log2Threshold;
  return kernel.run(args, stream, threshold);
}
