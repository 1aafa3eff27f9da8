//===- blasst-compile.cpp - Compile an attention spec ---------------------===//
//
// blasst-compile (--spec FILE | --preset NAME) --target sm_90a|sm_100a
//                --emit attn|ws [-o OUT] [--summary] [schedule knobs]
//
// Prints progress and timing on stderr; the IR goes to -o (default stdout).
// Stages that are not built yet (llvm, ptx, cubin) are refused by name rather
// than silently skipped.
//
//===----------------------------------------------------------------------===//
#include "blasst/Compiler/Frontend.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Timer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

using namespace mlir;
using namespace blasst;
namespace cl = llvm::cl;

static cl::OptionCategory cat("blasst-compile options");
static cl::opt<std::string> specFile("spec", cl::desc("spec file (key=value)"),
                                     cl::value_desc("file"), cl::cat(cat));
static cl::opt<std::string> presetName("preset", cl::desc("named preset"),
                                       cl::value_desc("name"), cl::cat(cat));
static cl::list<std::string>
    targets("target", cl::desc("sm_90a or sm_100a (repeatable)"),
            cl::value_desc("target"), cl::cat(cat));
static cl::opt<std::string> emit("emit",
                                 cl::desc("what to emit: attn | ws (llvm, "
                                          "ptx, cubin: not built yet)"),
                                 cl::init("ws"), cl::cat(cat));
static cl::opt<std::string> output("o", cl::desc("output file (- = stdout)"),
                                   cl::init("-"), cl::value_desc("file"),
                                   cl::cat(cat));
static cl::opt<bool> summary("summary",
                             cl::desc("print a one-screen summary of each "
                                      "kernel on stderr"),
                             cl::cat(cat));
static cl::opt<bool> listPresets("list-presets", cl::desc("list presets"),
                                 cl::cat(cat));
static cl::opt<std::string>
    sparsityOverride("sparsity",
                     cl::desc("override the spec's policy: none | "
                              "blasst:a=<float> | blasst:ln_lambda=<float>"),
                     cl::cat(cat));
static cl::opt<int64_t> blockM("block-m", cl::desc("query rows per CTA"),
                               cl::init(0), cl::cat(cat));
static cl::opt<int64_t> blockN("block-n", cl::desc("keys per KV block"),
                               cl::init(0), cl::cat(cat));
static cl::opt<int64_t> stages("stages", cl::desc("K/V pipeline depth"),
                               cl::init(0), cl::cat(cat));

static int fail(const llvm::Twine &msg) {
  llvm::errs() << "blasst-compile: error: " << msg << "\n";
  return 1;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(cat);
  cl::ParseCommandLineOptions(argc, argv, "blasst attention compiler\n");

  if (listPresets) {
    for (const std::string &n : presetNames())
      llvm::outs() << n << "\n";
    return 0;
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
      return fail("unknown preset '" + presetName + "' (known: " + known +
                  ")");
    }
    spec = *preset;
  }
  if (!sparsityOverride.empty()) {
    std::string err;
    std::optional<SparsityPolicy> p = parseSparsity(sparsityOverride, err);
    if (!p)
      return fail("--sparsity: " + err);
    spec.sparsity = *p;
    std::string reason = spec.validate();
    if (!reason.empty())
      return fail("--sparsity makes the spec invalid: " + reason);
  }

  if (emit != "attn" && emit != "ws") {
    if (emit == "llvm" || emit == "ptx" || emit == "cubin")
      return fail("--emit " + emit +
                  " is not available yet: the ws → NVVM lowering is not "
                  "built (emit attn or ws)");
    return fail("unknown --emit '" + emit + "' (expected attn or ws)");
  }
  if (targets.empty())
    targets.push_back("sm_90a");

  std::string errorMessage;
  auto out = openOutputFile(output, &errorMessage);
  if (!out)
    return fail(errorMessage);

  DialectRegistry registry;
  registerAllBLASSTDialects(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();

  for (const std::string &t : targets) {
    std::optional<ws::Target> target = ws::symbolizeTarget(t);
    if (!target)
      return fail("unknown --target '" + t + "' (expected sm_90a or sm_100a)");
    auto start = std::chrono::steady_clock::now();
    std::string name = kernelBaseName(spec);
    OwningOpRef<ModuleOp> module = buildAttnModule(&ctx, spec, name);
    if (failed(verify(*module)))
      return fail("the attn module for this spec does not verify");
    if (emit == "ws") {
      ScheduleOptions opts;
      opts.target = *target;
      opts.blockM = blockM;
      opts.blockN = blockN;
      opts.stages = stages;
      if (failed(lowerToWS(*module, opts)))
        return fail("convert-attn-to-ws failed for " + t);
    }
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - start)
                    .count();
    llvm::errs() << "blasst-compile: " << spec.name << " -> " << emit
                 << " for " << t << " in " << llvm::format("%.1f", ms)
                 << " ms\n";
    if (summary)
      for (auto kernel : module->getOps<ws::KernelOp>())
        llvm::errs() << summarizeKernel(kernel);
    module->print(out->os());
    out->os() << "\n";
  }
  out->keep();
  return 0;
}
