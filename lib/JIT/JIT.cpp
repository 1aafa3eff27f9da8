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

#include "mlir/IR/Verifier.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <dlfcn.h>
#include <link.h>
#include <map>
#include <mutex>
#include <sys/file.h>
#include <thread>
#include <unistd.h>

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
  // Both targets compile here; an sm_100a kernel runs only on a B200 (the
  // runtime refuses to load it on another GPU, with the reason).
  return checkSupported(spec, target);
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

namespace {
/// What dl_iterate_phdr finds about the object that contains an address.
struct ObjectLookup {
  uintptr_t address;
  bool found = false;
  std::string path; ///< "" for the main executable
  std::string buildId;
};

int findObject(struct dl_phdr_info *info, size_t, void *data) {
  auto *lookup = static_cast<ObjectLookup *>(data);
  bool contains = false;
  for (int i = 0; i < info->dlpi_phnum && !contains; ++i) {
    const ElfW(Phdr) &ph = info->dlpi_phdr[i];
    uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
    contains = ph.p_type == PT_LOAD && lookup->address >= begin &&
               lookup->address < begin + ph.p_memsz;
  }
  if (!contains)
    return 0;
  lookup->found = true;
  lookup->path = info->dlpi_name ? info->dlpi_name : "";
  // The GNU build-id note (NT_GNU_BUILD_ID = 3, owner "GNU").
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) &ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE)
      continue;
    const auto *p =
        reinterpret_cast<const uint8_t *>(info->dlpi_addr + ph.p_vaddr);
    const uint8_t *end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const auto *note = reinterpret_cast<const ElfW(Nhdr) *>(p);
      const uint8_t *name = p + sizeof(ElfW(Nhdr));
      const uint8_t *desc = name + ((note->n_namesz + 3) & ~3u);
      if (desc + note->n_descsz > end)
        break;
      if (note->n_type == 3 && note->n_namesz == 4 &&
          std::memcmp(name, "GNU", 4) == 0) {
        lookup->buildId = llvm::toHex(
            llvm::ArrayRef<uint8_t>(desc, note->n_descsz), /*LowerCase=*/true);
        return 1;
      }
      p = desc + ((note->n_descsz + 3) & ~3u);
    }
  }
  return 1;
}
} // namespace

/// The identity of the loaded object (executable or shared library) that
/// holds `symbol`: its file name and GNU build-id, or, without a build-id, a
/// SHA-256 of its file. The compiler's version string does not change when
/// the lowering does, and the executable links the shared libLLVM and
/// libMLIR, so each of the three gets its own identity in the key. Computed
/// once per object and process.
static std::string objectIdentity(const void *symbol) {
  static std::mutex mutex;
  static std::map<const void *, std::string> known;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = known.find(symbol); it != known.end())
    return it->second;
  ObjectLookup lookup;
  lookup.address = reinterpret_cast<uintptr_t>(symbol);
  dl_iterate_phdr(findObject, &lookup);
  std::string path = lookup.path.empty() ? "/proc/self/exe" : lookup.path;
  std::string id;
  if (!lookup.buildId.empty()) {
    id = "build-id " + lookup.buildId;
  } else if (auto buf = llvm::MemoryBuffer::getFile(
                 path, /*IsText=*/false, /*RequiresNullTerminator=*/false)) {
    std::array<uint8_t, 32> h = llvm::SHA256::hash(llvm::ArrayRef<uint8_t>(
        reinterpret_cast<const uint8_t *>((*buf)->getBufferStart()),
        (*buf)->getBufferSize()));
    id = "sha256 " + llvm::toHex(h, /*LowerCase=*/true);
  } else {
    id = "unknown";
  }
  std::string result =
      llvm::sys::path::filename(lookup.found ? path : "?").str() + " " + id;
  known[symbol] = result;
  return result;
}

std::string jit::toolchainIdentity() {
  static std::string id = [] {
    using VerifyFn = LogicalResult (*)(Operation *, bool);
    const void *blasstCode = reinterpret_cast<const void *>(&jit::compile);
    const void *llvmCode =
        reinterpret_cast<const void *>(&llvm::sys::getProcessTriple);
    const void *mlirCode =
        reinterpret_cast<const void *>(static_cast<VerifyFn>(&mlir::verify));
    return std::string("[compiler] ") + jit::compilerVersion() + ", " +
           objectIdentity(blasstCode) + "\n[llvm] " LLVM_VERSION_STRING ", " +
           objectIdentity(llvmCode) + "\n[mlir] " + objectIdentity(mlirCode) +
           "\n";
  }();
  return id;
}

/// The spec with its threshold value cleared: the value of `a` or ln_lambda
/// is a launch argument (ABI parameter 12), so specs that differ only in it
/// are one kernel (one cache entry). The kind of policy (a / L_kv or a fixed
/// ln_lambda) and lambda_max are compiled in and stay.
static AttentionSpec withoutThreshold(AttentionSpec spec) {
  if (!spec.sparsity.isDense())
    spec.sparsity.value = 0;
  return spec;
}

static ScheduleOptions resolvedSchedule(const AttentionSpec &spec,
                                        Target target, ScheduleOptions knobs) {
  knobs.target = target;
  ScheduleOptions s = resolveSchedule(spec, knobs);
  // Cross-stage P's switch, depth and hold schedule (blasst-cross-stage-p's
  // options, not convert-attn-to-ws's) in the key too.
  resolveCrossStageP(spec, s);
  return s;
}

/// The key over a *resolved* schedule.
static std::string keyFor(const AttentionSpec &spec, Target target,
                          const ScheduleOptions &s) {
  std::string material;
  llvm::raw_string_ostream os(material);
  os << "blasst-jit cache key v3\n"
     << "[spec]\n"
     << withoutThreshold(spec).toString() << "[target] " << toString(target)
     << "\n"
     << toolchainIdentity() << "[ptxas] " << cachedPtxasVersion()
     << "\n"
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
/// that is Corrupt with the reason in `why`: the files do not read, their
/// content hash does not match (a flipped cubin byte, an edited .meta or
/// .spec), or they describe another kernel. The entry's .spec may have
/// another threshold than ck.spec (the key leaves it out); ck.spec stays the
/// caller's.
static Lookup readEntry(const std::string &stem, CompiledKernel &ck,
                        std::string &why) {
  if (!fs::exists(stem + ".meta"))
    return Lookup::Miss;
  rt::KernelFiles files;
  if (rt::Status s = rt::readKernelFiles(stem, &files); !s) {
    why = s.message();
    return Lookup::Corrupt;
  }
  const rt::KernelInfo &info = files.info;
  if (info.contentSha256.empty()) {
    why = ".meta records no content hash";
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
  if (withoutThreshold(files.spec) != withoutThreshold(ck.spec)) {
    why = ".spec is a different spec (" + files.spec.toShortString() + ")";
    return Lookup::Corrupt;
  }
  ck.info = std::move(files.info);
  ck.info.contentSha256.clear(); // a property of the files, not the kernel
  ck.cubin.assign(files.cubin.begin(), files.cubin.end());
  return Lookup::Hit;
}

/// Writes `data` to a unique temporary file next to `path`, then renames it
/// over `path` (atomic on POSIX file systems). The temporary file is removed
/// on SIGTERM/SIGINT too. "" or the error.
static std::string writeAtomically(const std::string &path,
                                   llvm::StringRef data) {
  llvm::SmallString<256> tmp;
  int fd = -1;
  std::error_code ec;
  for (int attempt = 0; attempt < 128 && fd < 0; ++attempt) {
    fs::createUniquePath(path + ".tmp-%%%%%%%%", tmp, /*MakeAbsolute=*/false);
    // Registered before it exists, so no signal can leave it behind.
    llvm::sys::RemoveFileOnSignal(tmp);
    ec = fs::openFileForWrite(tmp, fd, fs::CD_CreateNew);
    if (ec) {
      fd = -1;
      llvm::sys::DontRemoveFileOnSignal(tmp);
      if (ec != std::errc::file_exists)
        break;
    }
  }
  if (fd < 0)
    return "cannot create a temporary file for " + path + ": " + ec.message();
  std::string error;
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << data;
    os.close();
    if (os.has_error()) {
      error = "cannot write " + std::string(tmp) + ": " + os.error().message();
      os.clear_error();
    }
  }
  if (error.empty())
    if (std::error_code ec = fs::rename(tmp, path))
      error = "cannot rename " + std::string(tmp) + " to " + path + ": " +
              ec.message();
  if (!error.empty())
    fs::remove(tmp);
  llvm::sys::DontRemoveFileOnSignal(tmp);
  return error;
}

/// Temporary files (`*.tmp-XXXXXXXX`) older than an hour in the cache
/// directory: left by a writer killed with SIGKILL between create and rename
/// (a store takes milliseconds).
static void removeStaleTemporaries(const std::string &dir) {
  auto now = std::chrono::system_clock::now();
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    size_t at = name.rfind(".tmp-");
    if (at == llvm::StringRef::npos || name.size() - at != 13)
      continue;
    fs::file_status st;
    if (!fs::status(it->path(), st) &&
        now - st.getLastModificationTime() > std::chrono::hours(1))
      fs::remove(it->path());
  }
}

/// .cubin, .spec, then .meta (the commit marker, with the content hash of
/// all three). "" or the error.
static std::string storeEntry(const std::string &stem,
                              const CompiledKernel &ck) {
  std::string specText = ck.spec.toString();
  rt::KernelInfo info = ck.info;
  info.contentSha256 =
      rt::kernelContentHash(ck.cubin.data(), ck.cubin.size(), specText, info);
  if (std::string e = writeAtomically(
          stem + ".cubin", llvm::StringRef(ck.cubin.data(), ck.cubin.size()));
      !e.empty())
    return e;
  if (std::string e = writeAtomically(stem + ".spec", specText); !e.empty())
    return e;
  return writeAtomically(stem + ".meta", rt::formatKernelInfo(info));
}

namespace {
/// An flock on `<stem>.lock` while one process (or thread) compiles and
/// stores an entry: concurrent cold compiles of one kernel compile it once,
/// the others wait and then read the entry. The lock file stays (empty); the
/// kernel releases the lock when its owner dies, so a killed compile blocks
/// no one.
class EntryLock {
public:
  ~EntryLock() {
    if (fd >= 0)
      ::close(fd); // releases the lock
  }
  /// Waits for the lock, at most `timeout`. Returns "" once held, else why
  /// not (then the caller compiles without it). `onWait` runs once, when
  /// the lock is found held (the wait may be long: say so first).
  template <typename F>
  std::string acquire(const std::string &path, std::chrono::seconds timeout,
                      bool *waited, F &&onWait) {
    fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
      return "cannot open the lock file " + path + ": " + std::strerror(errno);
    *waited = false;
    auto deadline = Clock::now() + timeout;
    auto pause = std::chrono::milliseconds(5);
    while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK && errno != EINTR)
        return "cannot lock " + path + ": " + std::strerror(errno);
      if (Clock::now() > deadline)
        return "gave up waiting for " + path + " after " +
               std::to_string(timeout.count()) + " s";
      if (!*waited)
        onWait();
      *waited = true;
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::milliseconds(100));
    }
    return "";
  }

private:
  int fd = -1;
};
} // namespace

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
    }
  }
  // A hit fills ck and returns true; a corrupt entry is noted once.
  bool notedCorrupt = false, notedMiss = false;
  auto lookUp = [&]() {
    std::string why;
    switch (readEntry(stem, ck, why)) {
    case Lookup::Hit:
      ck.fromCache = true;
      ck.cacheStem = stem;
      ck.timings.cacheLookupMs += watch.lap();
      ck.timings.totalMs = total.lap();
      log.progress("cache hit " + stem + " in " + fmtMs(ck.timings.totalMs) +
                   " ms (" + llvm::Twine(ck.cubin.size()) + " bytes)");
      return true;
    case Lookup::Corrupt:
      if (!notedCorrupt)
        log.note("cache entry " + stem + " is corrupt (" + why +
                 "); recompiling and overwriting it");
      notedCorrupt = true;
      return false;
    case Lookup::Miss:
      if (!notedMiss)
        log.progress("cache miss, key " + ck.cacheKey + " in " + dir);
      notedMiss = true;
      return false;
    }
    return false;
  };
  EntryLock entryLock;
  std::string storeError;
  if (!stem.empty()) {
    if (lookUp())
      return ck;
    // Cold: one process compiles, the others wait for its entry.
    bool waited = false;
    if (std::error_code ec = fs::create_directories(dir))
      storeError = "cannot create " + dir + ": " + ec.message();
    else if (std::string e = entryLock.acquire(
                 stem + ".lock", std::chrono::seconds(600), &waited,
                 [&] {
                   log.progress("waiting for " + stem +
                                ".lock: another compile of this kernel "
                                "holds it (at most 600 s)");
                 });
             !e.empty())
      log.note("warning: compiling without the entry's lock: " + e);
    else if (waited)
      log.progress("waited for " + stem +
                   ".lock (another compile of this "
                   "kernel)");
    if (storeError.empty() && lookUp()) // filled while we waited, or before
      return ck;
  }
  ck.timings.cacheLookupMs = watch.lap();

  if (llvm::Error err = compileUncached(ck, log))
    return std::move(err);
  watch.lap();

  if (!stem.empty()) {
    if (storeError.empty())
      storeError = storeEntry(stem, ck);
    if (storeError.empty()) {
      ck.cacheStem = stem;
      log.progress("stored " + stem + ".{cubin,spec,meta}");
      removeStaleTemporaries(dir);
    } else {
      log.note("warning: not cached: " + storeError);
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

rt::Status Kernel::load(const rt::Context &context) {
  kernel = rt::AttentionKernel();
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
    return rt::Status::error(
        "blasst-jit: cannot run kernel '" + name +
        "': it is not loaded; call Kernel::load(context) with the "
        "rt::Context of the GPU to run it on first");
  }
  float threshold =
      std::isnan(log2Threshold) ? ck.specLog2Threshold() : log2Threshold;
  return kernel.run(args, stream, threshold);
}
