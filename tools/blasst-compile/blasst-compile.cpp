//===- blasst-compile.cpp - Compile an attention spec ---------------------===//
//
// blasst-compile (--spec FILE | --preset NAME) --target sm_90a|sm_100a
//                --emit attn|ws|llvm-dialect|llvm|ptx|cubin [-o OUT]
//                [--summary] [schedule knobs]
// blasst-compile --nvvm-input FILE --target T --emit llvm-dialect|llvm|ptx
//                (a hand-written kernel module, for the target tests)
//
// Prints progress and timing on stderr. IR and PTX go to -o (default
// stdout; with --summary, only when -o is given). --emit cubin needs -o
// STEM[.cubin] and writes STEM.cubin, STEM.meta (launch parameters) and
// STEM.spec (the spec), which is what the runtime and blasst-bench load.
// Targets and stages that are not built yet are refused by name rather than
// silently skipped.
//
//===----------------------------------------------------------------------===//
#include "blasst/Compiler/Compile.h"
#include "blasst/Compiler/Frontend.h"
#include "blasst/Runtime/AttentionKernel.h"
#include "blasst/Target/Target.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/Timer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <sstream>

using namespace mlir;
using namespace blasst;
namespace cl = llvm::cl;

static cl::OptionCategory cat("blasst-compile options");
static cl::opt<std::string> specFile("spec", cl::desc("spec file (key=value)"),
                                     cl::value_desc("file"), cl::cat(cat));
static cl::opt<std::string> presetName("preset", cl::desc("named preset"),
                                       cl::value_desc("name"), cl::cat(cat));
static cl::list<std::string> targets("target",
                                     cl::desc("sm_90a or sm_100a (repeatable)"),
                                     cl::value_desc("target"), cl::cat(cat));
static cl::opt<std::string>
    emit("emit",
         cl::desc("what to emit: attn | ws | llvm-dialect | llvm | ptx | "
                  "cubin"),
         cl::init("ws"), cl::cat(cat));
static cl::opt<bool> verbose("v", cl::desc("print ptxas' resource report"),
                             cl::cat(cat));
static cl::opt<std::string> output("o", cl::desc("output file (- = stdout)"),
                                   cl::init("-"), cl::value_desc("file"),
                                   cl::cat(cat));
static cl::opt<bool>
    summary("summary",
            cl::desc("print a one-screen summary of each kernel on stderr; "
                     "without -o nothing else is written (-o FILE, or -o - "
                     "for stdout, also writes the output)"),
            cl::cat(cat));
static cl::opt<std::string> nvvmInput(
    "nvvm-input",
    cl::desc("instead of a spec: a module of llvm.func kernels in the NVVM, "
             "LLVM, arith, scf and vector dialects, lowered and translated as "
             "the ws lowering's output is (--emit llvm-dialect, llvm or ptx)"),
    cl::value_desc("file"), cl::cat(cat));
static cl::opt<bool> listPresets("list-presets", cl::desc("list presets"),
                                 cl::cat(cat));
static cl::opt<std::string>
    sparsityOverride("sparsity",
                     cl::desc("override the spec's policy: none | "
                              "blasst:a=<float> | blasst:ln_lambda=<float> "
                              "(the spec's lambda_max stays)"),
                     cl::cat(cat));
static cl::opt<bool>
    noVote("no-blasst-vote",
           cl::desc("build without --blasst-insert-vote (for testing that "
                    "dense kernels do not change; with a sparsity policy IR "
                    "and PTX only, no cubin)"),
           cl::cat(cat));
static cl::opt<bool> timeline(
    "timeline",
    cl::desc("profiling (sm_90a): %globaltimer stamps at the roles' points "
             "into the module global blasst_stamps, which blasst-bench "
             "--stamps reads (tools/timeline/README.md); not for production "
             "kernels"),
    cl::cat(cat));
static cl::opt<bool>
    verifyStats("verify-stats",
                cl::desc("print blasst-verify-sync's states and time per "
                         "kernel on stderr"),
                cl::cat(cat));
static cl::opt<std::string> kvLengthsOverride(
    "kv-lengths",
    cl::desc("override the spec's kv_lengths: uniform | per_sequence (decode: "
             "each sequence's KV length from an int32 array)"),
    cl::cat(cat));
static cl::opt<std::string> kvCacheOverride(
    "kv-cache",
    cl::desc("override the spec's kv_cache: contiguous | paged:page=<n> "
             "(decode: K/V in pages of n tokens, n a power of two 16..256, "
             "with a block table)"),
    cl::cat(cat));
// `--stats` is also LLVM's own (statistics) option: it is taken out of argv
// before LLVM's parser sees it.
static bool statsFlag = false;

namespace {
/// blasst-compile's flag for a knob of ScheduleKnobs.def; apply() copies
/// what the command line said into the ScheduleOptions field (nothing when
/// the flag was not given: the default).
template <KnobKind K>
struct KnobFlag;

template <>
struct KnobFlag<KnobKind::Size> {
  cl::opt<int64_t> opt;
  KnobFlag(const char *name, const char *help)
      : opt(StringRef(name), cl::desc(help), cl::init(0), cl::value_desc("n"),
            cl::cat(cat)) {}
  void apply(int64_t &knob) const { knob = opt; }
  std::string given() const {
    return opt.getNumOccurrences() ? "=" + std::to_string(opt) : "";
  }
};

template <>
struct KnobFlag<KnobKind::Switch> {
  cl::opt<cl::boolOrDefault> opt;
  KnobFlag(const char *name, const char *help)
      : opt(StringRef(name), cl::desc(help), cl::cat(cat)) {}
  void apply(std::optional<bool> &knob) const {
    if (opt != cl::BOU_UNSET)
      knob = opt == cl::BOU_TRUE;
  }
  std::string given() const {
    return opt == cl::BOU_UNSET ? "" : opt == cl::BOU_TRUE ? "=true" : "=false";
  }
};

template <>
struct KnobFlag<KnobKind::Count> {
  cl::opt<int64_t> opt;
  KnobFlag(const char *name, const char *help)
      : opt(StringRef(name), cl::desc(help), cl::value_desc("n"),
            cl::cat(cat)) {}
  void apply(std::optional<int64_t> &knob) const {
    if (opt.getNumOccurrences())
      knob = int64_t(opt);
  }
  std::string given() const {
    return opt.getNumOccurrences() ? "=" + std::to_string(opt) : "";
  }
};
} // namespace

// One flag per schedule knob, named as the table says.
#define BLASST_SCHEDULE_KNOB(Kind, Field, Name, Help)                          \
  static KnobFlag<KnobKind::Kind> Field##Flag(Name, Help);
#include "blasst/Conversion/AttnToWS/ScheduleKnobs.def"

/// The schedule flags given on the command line, as typed ("--block-n=64
/// --overlap=false"), for messages.
static std::string givenKnobFlags() {
  std::string out;
  auto add = [&](const char *name, const std::string &value) {
    if (!value.empty())
      out += (out.empty() ? "--" : " --") + std::string(name) + value;
  };
#define BLASST_SCHEDULE_KNOB(Kind, Field, Name, Help)                          \
  add(Name, Field##Flag.given());
#include "blasst/Conversion/AttnToWS/ScheduleKnobs.def"
  return out;
}

static int fail(const llvm::Twine &msg) {
  llvm::errs() << "blasst-compile: error: " << msg << "\n";
  return 1;
}

/// --nvvm-input: a hand-written kernel module through the same back end as
/// the generated kernels (the sm_100a groundwork tests, test/Target/sm100).
static int compileNVVMInput(Stage last) {
  if (last != Stage::LLVMDialect && last != Stage::LLVMIR && last != Stage::PTX)
    return fail("--nvvm-input emits llvm-dialect, llvm or ptx (got --emit " +
                emit + ")");
  if (targets.size() != 1)
    return fail("--nvvm-input needs exactly one --target");
  std::optional<Target> target = parseTarget(targets.front());
  if (!target)
    return fail("unknown --target '" + targets.front() + "' (expected " +
                targetChoices() + ")");
  DialectRegistry registry;
  registerAllBLASSTDialects(registry);
  MLIRContext ctx(registry);
  // Diagnostics point at the file's lines, as blasst-opt's do.
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, &ctx);
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(nvvmInput, sourceMgr, &ctx);
  if (!module)
    return fail("cannot parse " + nvvmInput);
  PassManager pm(&ctx);
  buildNVVMInputPipeline(pm);
  if (failed(pm.run(*module)))
    return fail("lowering " + nvvmInput + " to the LLVM dialect failed");
  std::string text;
  if (last == Stage::LLVMDialect) {
    llvm::raw_string_ostream os(text);
    module->print(os);
    os << "\n";
  } else {
    FailureOr<std::string> t = last == Stage::LLVMIR
                                   ? translateToLLVMIR(*module, *target)
                                   : translateToPTX(*module, *target);
    if (failed(t))
      return fail("translating " + nvvmInput + " for " + targets.front() +
                  " failed");
    text = std::move(*t);
  }
  std::string errorMessage;
  std::unique_ptr<llvm::ToolOutputFile> out =
      openOutputFile(output, &errorMessage);
  if (!out)
    return fail(errorMessage);
  out->os() << text;
  out->os().flush();
  if (out->os().has_error()) {
    std::string why = out->os().error().message();
    out->os().clear_error();
    return fail("cannot write " + output + ": " + why);
  }
  out->keep();
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  std::vector<char *> args;
  for (int i = 0; i < argc; ++i) {
    StringRef a(argv[i]);
    if (i > 0 && (a == "--stats" || a == "-stats"))
      statsFlag = true;
    else
      args.push_back(argv[i]);
  }
  argc = int(args.size());
  argv = args.data();
  cl::HideUnrelatedOptions(cat);
  cl::AddExtraVersionPrinter(
      [](llvm::raw_ostream &os) { os << compilerVersion() << "\n"; });
  cl::ParseCommandLineOptions(
      argc, argv,
      "blasst attention compiler\n\n  --stats  count visited and skipped KV "
      "blocks per (batch, head) (needs a sparsity policy)\n");

  if (listPresets) {
    for (const std::string &n : presetNames())
      llvm::outs() << n << "\n";
    return 0;
  }
  if (!nvvmInput.empty()) {
    if (!specFile.empty() || !presetName.empty())
      return fail("--nvvm-input takes no --spec or --preset");
    std::optional<Stage> last = parseStage(emit);
    if (!last)
      return fail("unknown --emit '" + emit + "' (expected " + stageChoices() +
                  ")");
    return compileNVVMInput(*last);
  }
  if (specFile.empty() == presetName.empty())
    return fail("give exactly one of --spec FILE or --preset NAME");

  AttentionSpec spec;
  if (!specFile.empty()) {
    SpecOrError parsed = parseSpecFile(specFile);
    if (!parsed)
      return fail(parsed.error);
    spec = *parsed.spec;
    if (spec.name.empty())
      spec.name = "attention";
  } else {
    std::optional<AttentionSpec> preset = lookupPreset(presetName);
    if (!preset) {
      std::string known;
      for (const std::string &n : presetNames())
        known += (known.empty() ? "" : ", ") + n;
      return fail("unknown preset " + quoteForMessage(presetName) +
                  " (known: " + known + ")");
    }
    spec = *preset;
  }
  if (statsFlag)
    spec.stats = true;
  if (!sparsityOverride.empty() || statsFlag) {
    std::string reason;
    if (!sparsityOverride.empty()) {
      std::string err;
      std::optional<SparsityPolicy> p = parseSparsity(sparsityOverride, err);
      if (!p)
        return fail("--sparsity: " + err);
      // The override names the policy; the spec's cap on it stays (a
      // dense override has none).
      double lambdaMax = spec.sparsity.lambdaMax;
      spec.sparsity = *p;
      if (!p->isDense())
        spec.sparsity.lambdaMax = lambdaMax;
    }
    reason = spec.validate();
    if (!reason.empty())
      return fail("--sparsity/--stats make the spec invalid: " + reason);
  }
  if (!kvLengthsOverride.empty() || !kvCacheOverride.empty()) {
    // The spec's own syntax (kv_lengths=..., kv_cache=...), so the flags
    // and the spec file cannot disagree on spelling.
    // toString() prints the keys when not the defaults: drop those lines
    // first, the flags replace them.
    std::string kept, line;
    std::istringstream lines(spec.toString());
    while (std::getline(lines, line))
      if ((kvLengthsOverride.empty() || line.rfind("kv_lengths=", 0) != 0) &&
          (kvCacheOverride.empty() || line.rfind("kv_cache=", 0) != 0))
        kept += line + "\n";
    if (!kvLengthsOverride.empty())
      kept += "kv_lengths=" + kvLengthsOverride + "\n";
    if (!kvCacheOverride.empty())
      kept += "kv_cache=" + kvCacheOverride + "\n";
    SpecOrError parsed = parseSpec(kept, "--kv-lengths/--kv-cache");
    if (!parsed)
      return fail(parsed.error);
    spec = *parsed.spec;
  }
  std::optional<Stage> last = parseStage(emit);
  if (!last)
    return fail("unknown --emit " + quoteForMessage(emit) + " (expected " +
                stageChoices() + ")");
  if (targets.empty())
    targets.push_back(toString(Target::SM90a));
  bool binary = *last == Stage::Cubin;
  if (binary && (output == "-" || targets.size() != 1))
    return fail("--emit cubin needs -o STEM and exactly one --target");

  std::string errorMessage;
  std::unique_ptr<llvm::ToolOutputFile> out;
  // --summary without -o prints the summary only: the IR goes where -o says
  // (`-o -` for stdout too), not after the summary by default.
  bool writeOutput = !summary || output.getNumOccurrences();
  if (!binary && writeOutput) {
    out = openOutputFile(output, &errorMessage);
    if (!out)
      return fail(errorMessage);
  }

  DialectRegistry registry;
  registerAllBLASSTDialects(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  // Errors go to stderr by default; warnings (a kernel blasst-verify-sync
  // cannot verify, with the reason) would be dropped without this.
  ScopedDiagnosticHandler warnings(&ctx, [](Diagnostic &d) {
    if (d.getSeverity() != DiagnosticSeverity::Warning)
      return failure();
    llvm::errs() << "blasst-compile: warning: " << d << "\n";
    return success();
  });

  for (const std::string &t : targets) {
    std::optional<Target> target = parseTarget(t);
    if (!target)
      return fail("unknown --target " + quoteForMessage(t) + " (expected " +
                  targetChoices() + ")");
    CompileRequest request;
    request.spec = spec;
    request.schedule.target = *target;
#define BLASST_SCHEDULE_KNOB(Kind, Field, Name, Help)                          \
  Field##Flag.apply(request.schedule.Field);
#include "blasst/Conversion/AttnToWS/ScheduleKnobs.def"
    // Tile sizes the schedule cannot build are named as the user gave them
    // (the verifier would name the op they break, with derived sizes).
    if (std::string why =
            checkScheduleKnobs(request.schedule, spec.phase == Phase::Decode);
        !why.empty())
      return fail("--" + why);
    request.insertVote = !noVote;
    request.verifyStats = verifyStats;
    request.timeline = timeline;
    request.lastStage = *last;
    auto start = std::chrono::steady_clock::now();
    // Progress on stderr after each stage (the attn module only when it is
    // the output); the last stage's IR or text goes to -o.
    request.onStage = [&](Stage stage, ModuleOp module, StringRef text) {
      if (stage != Stage::Attn || stage == *last) {
        double ms = std::chrono::duration<double, std::milli>(
                        std::chrono::steady_clock::now() - start)
                        .count();
        llvm::errs() << "blasst-compile: " << spec.name << " -> "
                     << stageName(stage) << " for " << t << " in "
                     << llvm::format("%.1f", ms) << " ms\n";
      }
      if (stage == Stage::WS && summary)
        for (auto kernel : module.getOps<ws::KernelOp>())
          llvm::errs() << summarizeKernel(kernel);
      if (stage != *last || stage == Stage::Cubin || !out)
        return;
      if (stage == Stage::LLVMIR || stage == Stage::PTX) {
        out->os() << text;
      } else {
        module.print(out->os());
        out->os() << "\n";
      }
    };
    llvm::Expected<CompiledCubin> compiled = compileToCubin(ctx, request);
    if (!compiled) {
      std::string msg;
      llvm::handleAllErrors(compiled.takeError(), [&](const CompileError &e) {
        // An MLIR stage's diagnostics are printed above; say which target.
        msg = e.diagnosed ? e.message + " for " + t : e.message;
        // Say which of the user's knobs the schedule was built with.
        if (e.stage == Stage::WS && !givenKnobFlags().empty())
          msg += " with " + givenKnobFlags();
      });
      return fail(msg);
    }
    if (!binary)
      continue;

    // cubin + the metadata and spec the runtime needs to launch it.
    if (verbose)
      llvm::errs() << compiled->ptxasLog;
    std::string stem = output;
    if (StringRef(stem).ends_with(".cubin"))
      stem.resize(stem.size() - 6);
    std::error_code ec;
    // A full disk or an unwritable target is an error, not a crash in the
    // stream's destructor.
    auto writeFile = [&](const std::string &path, StringRef bytes,
                         llvm::sys::fs::OpenFlags flags) -> std::string {
      llvm::raw_fd_ostream os(path, ec, flags);
      if (ec)
        return "cannot write " + path + ": " + ec.message();
      os << bytes;
      os.close();
      if (os.has_error()) {
        std::string why = os.error().message();
        os.clear_error();
        return "cannot write " + path + ": " + why;
      }
      return "";
    };
    const std::vector<char> &cubin = compiled->cubin;
    if (std::string e =
            writeFile(stem + ".cubin", StringRef(cubin.data(), cubin.size()),
                      llvm::sys::fs::OF_None);
        !e.empty())
      return fail(e);
    std::string specText = compiled->spec.toString();
    if (std::string e =
            writeFile(stem + ".spec", specText, llvm::sys::fs::OF_Text);
        !e.empty())
      return fail(e);
    // The .meta records a hash of all three files, so the runtime and
    // blasst-bench refuse a .cubin, .spec or .meta changed afterwards.
    rt::KernelInfo info = compiled->info;
    info.contentSha256 =
        rt::kernelContentHash(cubin.data(), cubin.size(), specText, info);
    if (rt::Status st = rt::writeKernelInfo(stem + ".meta", info); !st)
      return fail(st.message());
    llvm::errs() << "blasst-compile: wrote " << stem << ".{cubin,meta,spec} ("
                 << cubin.size() << " bytes, " << compiled->info.threads
                 << " threads, " << compiled->info.smemBytes
                 << " B shared memory)\n";
  }
  if (out) {
    out->os().flush();
    if (out->os().has_error()) {
      std::string why = out->os().error().message();
      out->os().clear_error();
      return fail("cannot write " + output + ": " + why);
    }
    out->keep();
  }
  return 0;
}
