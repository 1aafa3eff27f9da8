//===- JIT.h - Compile attention kernels in-process -------------*- C++ -*-===//
//
// The host JIT: AttentionSpec -> attn -> ws -> LLVM dialect -> PTX -> cubin,
// in this process (compileToCubin, the driver blasst-compile runs too), with
// an on-disk cache, then loading and launching through the runtime.
//
//   using namespace blasst;
//   AttentionSpec spec = *lookupPreset("llama3-8b-prefill");
//   std::string why = jit::supports(spec, Target::SM90a);
//   if (!why.empty())
//     ...;                                      // the reason, verbatim
//   llvm::Expected<jit::CompiledKernel> ck = jit::compile(spec, Target::SM90a);
//   if (!ck) ... llvm::toString(ck.takeError());
//   jit::Kernel kernel(std::move(*ck));
//   rt::Status s = kernel.load(context);        // an rt::Context
//   s = kernel.run(args, stream);               // the spec's threshold
//
// Nothing falls back silently: an unsupported spec/target, an MLIR
// diagnostic, a ptxas failure all come back as an llvm::Error whose message
// says why (MLIR diagnostics with their location text).
//
// Cache: `<dir>/<key>.cubin`, `<key>.spec`, `<key>.meta` (+ an empty
// `<key>.lock`), where key is the hex SHA-256 of everything that determines
// the cubin (see cacheKey()); the threshold value is not in it (a launch
// argument). Each file is written to a unique temporary file in the same
// directory and renamed into place, .cubin and .spec first and .meta last: a
// reader treats .meta as the commit marker, so concurrent processes filling
// the same cache never see a partial entry. The .meta records a SHA-256 of
// all three files (content_sha256), checked on every read: a corrupt entry
// (a changed byte in any file, a .spec of another kernel, a cubin that is
// not a complete CUDA ELF) is reported in the notes, recompiled and
// overwritten. Concurrent cold compiles of one kernel (threads or processes)
// compile it once: the first holds an flock on `<key>.lock`, the others wait
// and read its entry. ptxas' temporary files live in a per-process
// directory (see Target.h: processScratchDirectory), so a killed compile
// leaves nothing behind for long.
//
// Thread safety: compile() may be called from several threads (every call
// uses its own MLIRContext, created without a thread pool). A Kernel is not
// synchronised: call load() once before sharing it between threads.
//
// This header includes no MLIR (test/JIT/jit-header.test checks): only the
// spec, the schedule knobs, the runtime and llvm/Support/Error.h.
//
//===----------------------------------------------------------------------===//
#ifndef BLASST_JIT_JIT_H
#define BLASST_JIT_JIT_H

#include "blasst/Conversion/AttnToWS/Schedule.h"
#include "blasst/Runtime/AttentionKernel.h"
#include "blasst/Runtime/Runtime.h"
#include "blasst/Spec/AttentionSpec.h"

#include "llvm/Support/Error.h"

#include <cmath>
#include <memory>
#include <string>
#include <vector>

namespace blasst::jit {

/// "blasst <version>", as written into .meta files and cache keys.
const char *compilerVersion();

/// Whether compile() can build `spec` for `target`: "" when it can, else the
/// reason (checkSupported's). sm_100a kernels compile anywhere; only a B200
/// runs them (the runtime refuses to load them on another GPU).
std::string supports(const AttentionSpec &spec, Target target);

struct CompileOptions {
  /// Cache directory. Empty: the default set by setDefaultCacheDir(), else
  /// $BLASST_CACHE_DIR, else $XDG_CACHE_HOME/blasst, else $HOME/.cache/blasst.
  std::string cacheDir;
  /// Look up and store compiled kernels in the cache.
  bool useCache = true;
  /// Progress and timing lines on stderr (also cache notes and warnings).
  bool verbose = false;
  /// Schedule knobs (0 = the target's default). The `target` field is
  /// ignored: compile()'s target argument wins.
  ScheduleOptions schedule;
};

/// Sets the directory used when CompileOptions::cacheDir is empty (takes
/// precedence over the environment). Empty: back to the environment.
void setDefaultCacheDir(std::string dir);
/// The directory `opts` caches in (see CompileOptions::cacheDir); "" when
/// none can be determined (no cache then).
std::string cacheDir(const CompileOptions &opts = {});

/// Milliseconds per stage of one compile() call; 0 for stages that did not
/// run (all compiler stages on a cache hit).
struct CompileTimings {
  double cacheLookupMs = 0; ///< key (incl. ptxas --version, once) + lookup
  double attnMs = 0;        ///< MLIRContext + attn module
  double wsMs = 0;          ///< convert-attn-to-ws
  double llvmDialectMs = 0; ///< ws -> LLVM dialect
  double ptxMs = 0;         ///< LLVM IR, O3, NVPTX
  double cubinMs = 0;       ///< ptxas
  double cacheStoreMs = 0;
  double totalMs = 0;
  /// "total 560.2 ms: lookup 0.4, attn 9.8, ws 1.2, llvm-dialect 57.0, ptx
  /// 165.3, cubin 323.0, store 0.6"
  std::string toString() const;
};

/// The result of compile(): everything needed to load the kernel.
struct CompiledKernel {
  rt::KernelInfo info;
  AttentionSpec spec;
  Target target = Target::SM90a;
  /// The schedule knobs actually used (defaults resolved).
  ScheduleOptions schedule;
  std::vector<char> cubin;
  bool fromCache = false;
  /// Hex SHA-256 cache key (also computed with useCache = false).
  std::string cacheKey;
  /// `<dir>/<key>` of the cache entry (.cubin/.meta/.spec), or "" when the
  /// cache was not used or could not be written (see `notes`).
  std::string cacheStem;
  /// ptxas -v's resource report (registers, spills, barriers); empty on a
  /// cache hit (ptxas did not run).
  std::string ptxasLog;
  /// Non-fatal MLIR diagnostics (warnings, remarks) and cache notes, one per
  /// line. Printed on stderr too when verbose.
  std::string notes;
  CompileTimings timings;

  /// log2Threshold implied by `spec`'s sparsity policy (ABI parameter 12).
  /// `spec` is the one compile() was given, also on a cache hit whose .spec
  /// file has another threshold (the key leaves the value out).
  float specLog2Threshold() const { return rt::log2ThresholdForSpec(spec); }
};

/// The cache key compile() would use: hex SHA-256 of spec.toString() with
/// the threshold value left out (`a` or ln_lambda: a launch argument; the
/// policy's kind and lambda_max stay), the target, compilerVersion() and the
/// identity (GNU build-id, else a SHA-256 of the file) of the object holding
/// the compiler, LLVM's version and the identity of the loaded libLLVM, the
/// identity of the loaded libMLIR, ptxasVersion(), the resolved schedule
/// knobs and rt::kKernelABIVersion.
std::string cacheKey(const AttentionSpec &spec, Target target,
                     const ScheduleOptions &schedule = {});

/// What identifies the compiler in every cache key, three lines:
/// "[compiler] blasst <version>, <object> build-id <hex>" (the executable or
/// library holding the JIT; a SHA-256 of its file where it has no build-id),
/// "[llvm] <LLVM version>, libLLVM.so.<n> build-id <hex>" and "[mlir] ..."
/// (the shared libraries actually loaded, found through a symbol of each).
std::string toolchainIdentity();

/// Compiles `spec` for `target` (or finds it in the cache). Errors: the
/// spec/target is unsupported (supports()'s reason), an MLIR diagnostic
/// (with its location), LLVM/ptxas failures (with ptxas' output).
llvm::Expected<CompiledKernel> compile(const AttentionSpec &spec,
                                       Target target,
                                       const CompileOptions &opts = {});

/// A compiled kernel plus, once loaded, its module in a CUDA context.
/// Move-only.
class Kernel {
public:
  Kernel() = default;
  explicit Kernel(CompiledKernel compiled);
  Kernel(Kernel &&) = default;
  Kernel &operator=(Kernel &&) = default;
  Kernel(const Kernel &) = delete;
  Kernel &operator=(const Kernel &) = delete;
  ~Kernel();

  /// Loads the cubin into `context` (which must outlive this Kernel) via
  /// rt::AttentionKernel::load. Replaces an earlier load.
  rt::Status load(const rt::Context &context);
  /// Launches on `stream` (asynchronous), in the loaded kernel's context
  /// (the calling thread's current context is restored afterwards). Without
  /// load() an error that says so: a Kernel never picks a GPU itself.
  /// `log2Threshold` NAN: the spec's (specLog2Threshold()).
  rt::Status run(const rt::AttentionArgs &args, CUstream stream,
                 float log2Threshold = NAN);

  bool loaded() const { return kernel.valid(); }
  const CompiledKernel &compiled() const { return ck; }
  /// The runtime kernel (valid once loaded), for prepare()/launch().
  const rt::AttentionKernel &runtimeKernel() const { return kernel; }

private:
  CompiledKernel ck;
  rt::AttentionKernel kernel;
};

} // namespace blasst::jit

#endif // BLASST_JIT_JIT_H
