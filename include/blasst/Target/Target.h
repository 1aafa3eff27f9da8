//===- Target.h - From ws IR to PTX and cubin -------------------*- C++ -*-===//
//
// The back half of the compiler: the LLVM-dialect pipeline, LLVM IR → PTX with
// LLVM's NVPTX backend, and PTX → cubin with the CUDA toolkit's ptxas.
//
//===----------------------------------------------------------------------===//
#ifndef BLASST_TARGET_TARGET_H
#define BLASST_TARGET_TARGET_H

#include "blasst/Spec/AttentionSpec.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace blasst {

/// ws → llvm dialect: convert-ws-to-nvvm{device-only}, then NVVM, scf, arith
/// and cf to LLVM. `timeline`: the pass's timeline stamps (profiling).
void buildWSToLLVMPipeline(mlir::OpPassManager &pm, Target target,
                           bool timeline = false);
/// A hand-written module of llvm.func kernels (NVVM, LLVM, arith, scf and
/// vector ops) → the LLVM dialect: NVVM, vector, scf, arith and cf to LLVM.
/// blasst-compile --nvvm-input runs it (the hand-written target tests,
/// test/Target/sm100).
void buildNVVMInputPipeline(mlir::OpPassManager &pm);

/// Registers two pipelines for blasst-opt, each with a `target` option (an
/// unknown target is an error that lists the valid ones):
/// `blasst-ws-to-llvm` (the above) and `blasst-attn-to-llvm` (attn → llvm
/// dialect: convert-attn-to-ws with default knobs, the vote, V on demand
/// where it applies, then the above).
void registerBLASSTPipelines();

/// The PTX ISA version and the chip LLVM is asked for.
const char *ptxFeatures(Target target);
const char *chipName(Target target);

/// Translates an llvm-dialect module to LLVM IR text (after O3). Both
/// translations refuse, with an error on the op, an NVVM op the target's chip
/// lacks (LLVM's NVPTX backend would abort).
mlir::FailureOr<std::string> translateToLLVMIR(mlir::ModuleOp module,
                                               Target target);
/// Translates an llvm-dialect module to PTX with LLVM's NVPTX backend.
mlir::FailureOr<std::string> translateToPTX(mlir::ModuleOp module,
                                            Target target);

/// The launch metadata convert-ws-to-nvvm records on the kernel it emits
/// (the blasst.* attributes of the llvm.func): what the .meta file holds.
struct LoweredKernel {
  std::string name;
  int blockM = 0, blockN = 0, threads = 0, smemBytes = 0;
  bool persistent = false; ///< Grid x = resident CTAs walking the tiles.
  int clusterM = 1; ///< CTAs per cluster along x (2: K/V multicast pairs).
  int qGroup = 0;   ///< Decode: q heads packed per tile (0: not packed).
  bool splitKV = false; ///< Decode: split KV with the workspace parameter.
  int kvSplits = 0; ///< Decode: splits fixed at compile time (0: at launch).
  int qTiles = 1;   ///< Q tiles per CTA, each a TMA box of blockM / qTiles.
  bool oTensorMap = false; ///< O stored with TMA: takes O's tensor map.
  bool perSeqKV = false; ///< Decode: per-sequence KV lengths (parameter 15).
  int pageSize = 0;      ///< Decode: paged K/V page size (0: contiguous).
  bool sinkSeed = false; ///< BLASST decode: running max seeded from block 0.
  /// Decode: KV blocks per chunk of interleaved splits (0: contiguous).
  int splitChunk = 0;
  bool voteFirstBlock = false; ///< BLASST decode: each split's first block
                               ///< voted on (vote-first-block).
  bool lean = false; ///< Persistent decode: CTAs share all tiles' blocks.
  int ctasPerSM = 1; ///< CTAs resident per SM (ctas_per_sm).
  /// Decode: the splits are merged by `<name>_merge` (merge_kernel).
  bool mergeKernel = false;
  /// Decode: `<name>_lean`, a lean kernel the runtime may launch instead
  /// (same parameters and block; smemBytes covers both).
  bool leanEntry = false;
  /// Prefill: keys per KV block of `<name>_short`, a kernel the runtime may
  /// launch instead for short sequences (same parameters, block and grid);
  /// 0: none.
  int shortBlockN = 0;
  /// Prefill: CTAs per SM of `<name>_short` (head_dim 64's entry: 2), and
  /// the dynamic shared memory it is launched with.
  int shortCtasPerSM = 1;
  int shortSmemBytes = 0;
  /// Prefill: `<name>_short` is persistent (one CTA per SM walking the
  /// tiles; the runtime sizes its grid as for a persistent kernel).
  bool shortPersistent = false;
  /// Decode: K/V copied with cp.async (kv_cp_async; parameters 22-29).
  bool kvCpAsync = false;
  /// Decode with kvCpAsync: `<name>_tma`, the same kernel with K/V by TMA,
  /// which the runtime launches instead on GPUs of lower DRAM bandwidth
  /// (same parameters, block and grid; smemBytes covers both).
  bool tmaEntry = false;
  /// Decode: splits that follow per-sequence lengths (balanced_splits).
  bool balancedSplits = false;
};
/// Finds the kernel in a lowered module and reads its metadata.
llvm::Expected<LoweredKernel> findLoweredKernel(mlir::ModuleOp module);

/// Where ptxas is: $CUDA_HOME/bin, $CUDA_PATH/bin, PATH, /usr/local/cuda/bin.
/// Empty with `why` set when none is found.
std::string findPtxas(std::string *why);
/// `ptxas --version`'s last line, for cache keys ("" if not found).
std::string ptxasVersion();

/// The directory this process keeps its temporary files in (ptxas' input,
/// output and log): $TMPDIR/blasst-proc-<pid>-XXXXXX, created on first use,
/// flock'ed while the process lives and removed at exit. Creating it first
/// removes the directories of processes that are gone (killed with SIGKILL):
/// removeStaleScratchDirectories.
llvm::Expected<std::string> processScratchDirectory();
/// Removes the blasst-proc-<pid>-* directories in `tmpDir` whose process no
/// longer exists and whose lock is free. Returns how many it removed.
unsigned removeStaleScratchDirectories(llvm::StringRef tmpDir);

/// A file `<name>-XXXXXXXX` in processScratchDirectory(), removed by the
/// destructor and, through llvm::sys::RemoveFileOnSignal, when the process
/// gets SIGTERM or SIGINT. Move-only.
class TempFile {
public:
  static llvm::Expected<TempFile> create(llvm::StringRef name);
  TempFile(TempFile &&other) : path(std::move(other.path)) {
    other.path.clear();
  }
  TempFile &operator=(TempFile &&) = delete;
  ~TempFile();
  llvm::SmallString<256> path;

private:
  TempFile() = default;
};

/// Runs `program args` with stdin from /dev/null and stdout and stderr into
/// `outputPath`; the child is killed if the calling thread dies
/// (PR_SET_PDEATHSIG), so it never outlives a killed compile. Returns the
/// exit code, or -1 with `*error` set (not started, killed by a signal).
int runProgram(const std::string &program, llvm::ArrayRef<std::string> args,
               const std::string &outputPath, std::string *error);

struct CubinResult {
  std::vector<char> cubin;
  std::string log; ///< ptxas -v resource report and warnings.
};
/// Assembles PTX for `target` with ptxas -O3 -v. Errors carry ptxas' output.
llvm::Expected<CubinResult> assembleCubin(const std::string &ptx,
                                          Target target);

} // namespace blasst

#endif // BLASST_TARGET_TARGET_H
