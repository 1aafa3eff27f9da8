//===- Compile.h - From an AttentionSpec to a cubin -------------*- C++ -*-===//
//
// compileToCubin is the one driver of the whole pipeline (attn module,
// convert-attn-to-ws and the BLASST passes, the LLVM-dialect pipeline, NVPTX,
// ptxas, the launch metadata). blasst-compile calls it (stopping after the
// stage --emit names) and so does the JIT (which caches what it returns), so
// the two cannot build different kernels for the same spec and knobs.
//
//===----------------------------------------------------------------------===//
#ifndef BLASST_COMPILER_COMPILE_H
#define BLASST_COMPILER_COMPILE_H

#include "blasst/Conversion/AttnToWS/Schedule.h"
#include "blasst/Runtime/KernelABI.h"
#include "blasst/Spec/AttentionSpec.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace blasst {

/// "blasst <version>": the compiler_version of .meta files.
const char *compilerVersion();

/// The pipeline's stages, in order.
enum class Stage { Attn, WS, LLVMDialect, LLVMIR, PTX, Cubin };
/// blasst-compile's --emit spelling: attn, ws, llvm-dialect, llvm, ptx, cubin.
const char *stageName(Stage stage);
std::optional<Stage> parseStage(llvm::StringRef name);
/// "attn, ws, llvm-dialect, llvm, ptx or cubin".
std::string stageChoices();

struct CompileRequest {
  AttentionSpec spec;
  /// The target and the knobs; unset knobs take resolveSchedule's defaults.
  ScheduleOptions schedule;
  /// false: no blasst-insert-vote (blasst-compile --no-blasst-vote, for
  /// comparing dense code). With a sparsity policy the kernel then is not the
  /// spec's, so a cubin (whose .spec would say otherwise) is refused; its IR
  /// and PTX may still be looked at.
  bool insertVote = true;
  /// Print blasst-verify-sync's states and time per kernel on stderr (its
  /// `stats` option; blasst-compile --verify-stats).
  bool verifyStats = false;
  /// Profiling: %globaltimer stamps at the roles' points into the module
  /// global `blasst_stamps` (convert-ws-to-nvvm's `timeline`; sm_90a;
  /// blasst-compile --timeline, read by blasst-bench --stamps).
  bool timeline = false;
  /// Where to stop. Stage::LLVMIR runs only when it is the last one (PTX
  /// translates to LLVM IR itself).
  Stage lastStage = Stage::Cubin;
  /// Non-empty: the attn module's ops get this name as their location, so
  /// diagnostics (which the lowering carries over) say which kernel they are
  /// about. Empty: unknown locations.
  std::string locationName;
  /// Called after each stage that ran: with the module after Attn, WS and
  /// LLVMDialect; with the LLVM IR or PTX text after LLVMIR and PTX; with
  /// ptxas' log after Cubin.
  std::function<void(Stage, mlir::ModuleOp, llvm::StringRef text)> onStage;
};

/// A kernel's three files: STEM.cubin, STEM.meta (info), STEM.spec (spec).
struct CompiledCubin {
  std::vector<char> cubin; ///< Empty when lastStage was before Cubin.
  rt::KernelInfo info;     ///< Validated launch metadata.
  AttentionSpec spec;      ///< The spec the kernel implements.
  std::string ptxasLog;    ///< ptxas -v's resource report and warnings.
};

/// Why compileToCubin failed. `diagnosed`: an MLIR stage failed and the
/// reason is in the diagnostics it emitted to the context (the message says
/// which stage); otherwise the message is the whole reason (ptxas' output, a
/// refused request, bad metadata).
class CompileError : public llvm::ErrorInfo<CompileError> {
public:
  static char ID;
  CompileError(Stage stage, std::string message, bool diagnosed)
      : stage(stage), message(std::move(message)), diagnosed(diagnosed) {}
  void log(llvm::raw_ostream &os) const override { os << message; }
  std::error_code convertToErrorCode() const override {
    return llvm::inconvertibleErrorCode();
  }

  Stage stage;
  std::string message;
  bool diagnosed;
};

/// Runs the pipeline for `request` in `ctx` (which must have the dialects of
/// registerAllBLASSTDialects; diagnostics go to its handlers). Errors are
/// CompileErrors.
llvm::Expected<CompiledCubin> compileToCubin(mlir::MLIRContext &ctx,
                                             const CompileRequest &request);

} // namespace blasst

#endif // BLASST_COMPILER_COMPILE_H
