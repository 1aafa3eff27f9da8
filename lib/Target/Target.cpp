//===- Target.cpp - From ws IR to PTX and cubin ---------------------------===//
#include "blasst/Target/Target.h"
#include "blasst/Conversion/Passes.h"
#include "blasst/Dialect/WS/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Triple.h"

#include <cstdlib>
#include <limits>
#include <mutex>

using namespace mlir;
using namespace blasst;

void blasst::buildWSToLLVMPipeline(OpPassManager &pm, Target target,
                                   bool timeline) {
  ConvertWSToNVVMOptions opts;
  opts.target = toString(target);
  opts.deviceOnly = true;
  opts.timeline = timeline;
  pm.addPass(createConvertWSToNVVM(opts));
  pm.addPass(createConvertNVVMToLLVMPass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createAnnotateItemLoops());
}

void blasst::buildNVVMInputPipeline(OpPassManager &pm) {
  pm.addPass(createConvertNVVMToLLVMPass());
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

namespace {
struct PipelineOptions : public PassPipelineOptions<PipelineOptions> {
  Option<std::string> target{*this, "target",
                             llvm::cl::desc("sm_90a (sm_100a: not yet)"),
                             llvm::cl::init("sm_90a")};
};

/// Registers `name` with PipelineOptions; `build` gets the parsed target. An
/// unknown target fails the pipeline's parsing with a message naming the
/// valid ones (PassPipelineRegistration has no way to report it).
void registerPipeline(
    StringRef name, StringRef description,
    std::function<void(OpPassManager &, const PipelineOptions &, Target)>
        build) {
  std::string arg = name.str();
  registerPassPipeline(
      name, description,
      [arg, build](OpPassManager &pm, StringRef text,
                   function_ref<LogicalResult(const Twine &)> errorHandler) {
        PipelineOptions options;
        if (failed(options.parseFromString(text)))
          return failure();
        std::optional<Target> target = parseTarget(options.target);
        if (!target)
          return errorHandler(arg + ": unknown target '" + options.target +
                              "' (expected " + targetChoices() + ")");
        build(pm, options, *target);
        return success();
      },
      [](function_ref<void(const mlir::detail::PassOptions &)> optHandler) {
        optHandler(PipelineOptions());
      });
}
} // namespace

void blasst::registerBLASSTPipelines() {
  registerPipeline(
      "blasst-ws-to-llvm",
      "Lower ws kernels to the LLVM dialect (NVVM intrinsics), device only",
      [](OpPassManager &pm, const PipelineOptions &, Target target) {
        pm.addPass(ws::createBLASSTVerifySync());
        buildWSToLLVMPipeline(pm, target);
      });
  registerPipeline(
      "blasst-attn-to-llvm",
      "attn → ws (default schedule) → LLVM dialect, device only",
      [](OpPassManager &pm, const PipelineOptions &o, Target target) {
        ConvertAttnToWSOptions a;
        a.target = o.target;
        pm.addPass(createConvertAttnToWS(a));
        pm.addPass(ws::createBLASSTInsertVote());
        ws::BLASSTVOnDemandOptions v;
        v.mode = "auto"; // the default: where it applies
        pm.addPass(ws::createBLASSTVOnDemand(v));
        pm.addPass(ws::createBLASSTVerifySync());
        buildWSToLLVMPipeline(pm, target);
      });
}

const char *blasst::chipName(Target target) {
  // The spec's names are the chips' (the arch-specific "a" variants).
  return toString(target);
}
const char *blasst::ptxFeatures(Target target) {
  // sm_90a needs PTX 8.0; sm_100a needs 8.6.
  return target == Target::SM90a ? "+ptx80" : "+ptx86";
}

static void initNVPTX() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

static std::unique_ptr<llvm::TargetMachine> createTM(Target target,
                                                     std::string &error) {
  initNVPTX();
  llvm::Triple triple("nvptx64-nvidia-cuda");
  const llvm::Target *t = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!t)
    return nullptr;
  llvm::TargetOptions options;
  return std::unique_ptr<llvm::TargetMachine>(t->createTargetMachine(
      triple, chipName(target), ptxFeatures(target), options, std::nullopt,
      std::nullopt, llvm::CodeGenOptLevel::Aggressive));
}

/// MLIR module → optimised llvm::Module for `tm`.
static std::unique_ptr<llvm::Module>
toLLVM(ModuleOp module, llvm::LLVMContext &llvmCtx, llvm::TargetMachine &tm) {
  DialectRegistry registry;
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  module.getContext()->appendDialectRegistry(registry);
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmCtx, "blasst");
  if (!llvmModule) {
    module.emitError() << "translation to LLVM IR failed";
    return nullptr;
  }
  llvmModule->setTargetTriple(tm.getTargetTriple());
  llvmModule->setDataLayout(tm.createDataLayout());
  if (llvm::verifyModule(*llvmModule, &llvm::errs())) {
    module.emitError() << "the generated LLVM IR does not verify";
    return nullptr;
  }
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm =
      pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(*llvmModule, mam);
  return llvmModule;
}

namespace {
/// The target machine and the optimised LLVM module for `module`.
struct Translated {
  std::unique_ptr<llvm::TargetMachine> tm;
  std::unique_ptr<llvm::LLVMContext> ctx;
  std::unique_ptr<llvm::Module> module;
};
} // namespace

/// NVVM ops that the target's chip lacks (tcgen05 on sm_90a, wgmma on
/// sm_100a) are an error here: LLVM's NVPTX backend would abort the process
/// ("Cannot select: intrinsic"), which the JIT must never do. MLIR checks
/// the ops' RequiresSMInterface only inside a gpu.module with an NVVM target.
static LogicalResult checkChip(ModuleOp module, Target target) {
  auto chip =
      NVVM::NVVMCheckSMVersion::getTargetSMVersionFromStr(chipName(target));
  WalkResult r = module.walk([&](NVVM::RequiresSMInterface op) {
    NVVM::NVVMCheckSMVersion need = op.getRequiredMinSMVersion();
    if (need.isCompatibleWith(chip))
      return WalkResult::advance();
    std::string chips;
    size_t n = need.smVersionList.size();
    for (size_t i = 0; i < n; ++i)
      chips += std::string(i == 0       ? ""
                           : i + 1 == n ? " or "
                                        : ", ") +
               "sm_" + std::to_string(need.smVersionList[i]) +
               (need.archAccelerated ? "a" : " or newer");
    op->emitOpError() << "needs " << chips << ", but the target is "
                      << chipName(target)
                      << " (LLVM's NVPTX backend cannot select it there)";
    return WalkResult::interrupt();
  });
  return failure(r.wasInterrupted());
}

static FailureOr<Translated> translate(ModuleOp module, Target target) {
  if (failed(checkChip(module, target)))
    return failure();
  Translated t;
  std::string error;
  t.tm = createTM(target, error);
  if (!t.tm) {
    module.emitError() << "NVPTX target unavailable: " << error;
    return failure();
  }
  t.ctx = std::make_unique<llvm::LLVMContext>();
  t.module = toLLVM(module, *t.ctx, *t.tm);
  if (!t.module)
    return failure();
  return t;
}

FailureOr<std::string> blasst::translateToLLVMIR(ModuleOp module,
                                                 Target target) {
  FailureOr<Translated> t = translate(module, target);
  if (failed(t))
    return failure();
  std::string ir;
  llvm::raw_string_ostream os(ir);
  t->module->print(os, nullptr);
  return ir;
}

FailureOr<std::string> blasst::translateToPTX(ModuleOp module, Target target) {
  FailureOr<Translated> t = translate(module, target);
  if (failed(t))
    return failure();
  llvm::TargetMachine *tm = t->tm.get();
  llvm::Module *llvmModule = t->module.get();
  llvm::SmallString<0> ptx;
  llvm::raw_svector_ostream os(ptx);
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, os, nullptr,
                              llvm::CodeGenFileType::AssemblyFile)) {
    module.emitError() << "the NVPTX backend cannot emit PTX";
    return failure();
  }
  pm.run(*llvmModule);
  return std::string(ptx.str());
}

llvm::Expected<LoweredKernel> blasst::findLoweredKernel(ModuleOp module) {
  // The kernel: the first with blasst.block_m that is not a second entry
  // of another (blasst.entry_of: `<kernel>_lean`, `_short`, `_tma`).
  auto isEntryOfAnother = [&](LLVM::LLVMFuncOp f) {
    auto of = dyn_cast_or_null<StringAttr>(f->getAttr("blasst.entry_of"));
    return of && module.lookupSymbol<LLVM::LLVMFuncOp>(of.getValue());
  };
  LLVM::LLVMFuncOp kernelFunc;
  for (auto f : module.getOps<LLVM::LLVMFuncOp>())
    if (f->hasAttr("blasst.block_m") && !isEntryOfAnother(f)) {
      kernelFunc = f;
      break;
    }
  if (!kernelFunc)
    return llvm::createStringError(
        "the lowered module has no kernel with blasst.block_m");
  LoweredKernel k;
  k.name = kernelFunc.getName().str();
  // Each integer the metadata takes from the kernel, checked to be one
  // (LLVM-dialect input is the user's; a value past int would wrap).
  auto readInt = [&](const char *attr, int *slot,
                     bool required) -> llvm::Error {
    Attribute a = kernelFunc->getAttr(attr);
    if (!a && !required)
      return llvm::Error::success();
    auto value = dyn_cast_or_null<IntegerAttr>(a);
    if (!value)
      return llvm::createStringError("kernel '" + k.name +
                                     "' lacks the integer attribute " + attr);
    const llvm::APInt &ap = value.getValue();
    int64_t v = ap.getSignificantBits() <= 64 ? ap.getSExtValue() : -1;
    if (v < 0 || v > std::numeric_limits<int32_t>::max())
      return llvm::createStringError("kernel '" + k.name + "': " + attr +
                                     " = " +
                                     llvm::toString(ap, 10, /*Signed=*/true) +
                                     " is not a count (0 to 2147483647)");
    *slot = int(v);
    return llvm::Error::success();
  };
  for (auto [attr, slot] :
       {std::pair<const char *, int *>{"blasst.block_m", &k.blockM},
        {"blasst.block_n", &k.blockN},
        {"blasst.threads", &k.threads},
        {"blasst.smem_bytes", &k.smemBytes}})
    if (llvm::Error e = readInt(attr, slot, /*required=*/true))
      return std::move(e);
  k.persistent = kernelFunc->hasAttr("blasst.persistent");
  k.lean = kernelFunc->hasAttr("blasst.lean");
  k.splitKV = kernelFunc->hasAttr("blasst.split_kv");
  for (auto [attr, slot] :
       {std::pair<const char *, int *>{"blasst.ctas_per_sm", &k.ctasPerSM},
        {"blasst.cluster_m", &k.clusterM},
        {"blasst.q_group", &k.qGroup},
        {"blasst.kv_splits", &k.kvSplits},
        {"blasst.q_tiles", &k.qTiles},
        {"blasst.page_size", &k.pageSize},
        {"blasst.split_chunk", &k.splitChunk}})
    if (llvm::Error e = readInt(attr, slot, /*required=*/false))
      return std::move(e);
  k.oTensorMap = kernelFunc->hasAttr("blasst.o_tensor_map");
  k.perSeqKV = kernelFunc->hasAttr("blasst.per_seq_kv");
  k.sinkSeed = kernelFunc->hasAttr("blasst.sink_seed");
  k.voteFirstBlock = kernelFunc->hasAttr("blasst.vote_first_block");
  k.mergeKernel = kernelFunc->hasAttr("blasst.merge_kernel");
  k.kvCpAsync = kernelFunc->hasAttr("blasst.kv_cp_async");
  k.balancedSplits = kernelFunc->hasAttr("blasst.balanced_splits");
  if (kernelFunc->hasAttr("blasst.lean_entry")) {
    // Launched with the same parameters and block, and the larger of the
    // two shared-memory sizes for either.
    auto lean = module.lookupSymbol<LLVM::LLVMFuncOp>(k.name + "_lean");
    auto threads =
        lean ? dyn_cast_or_null<IntegerAttr>(lean->getAttr("blasst.threads"))
             : IntegerAttr();
    auto smem =
        lean ? dyn_cast_or_null<IntegerAttr>(lean->getAttr("blasst.smem_bytes"))
             : IntegerAttr();
    if (!lean || !lean->hasAttr("blasst.lean") || !threads || !smem)
      return llvm::createStringError("kernel '" + k.name +
                                     "' has blasst.lean_entry but no lean "
                                     "kernel '" +
                                     k.name + "_lean'");
    if (threads.getInt() != k.threads)
      return llvm::createStringError(
          "the lean entry '" + k.name + "_lean' has " +
          std::to_string(threads.getInt()) + " threads, its kernel " +
          std::to_string(k.threads));
    k.smemBytes = std::max(k.smemBytes, int(smem.getInt()));
    k.leanEntry = true;
  }
  // An entry `<kernel><suffix>` and the integer attributes the checks below
  // read (null where absent).
  struct EntryAttrs {
    LLVM::LLVMFuncOp func;
    IntegerAttr threads, smem, blockM, blockN, ctas;
  };
  auto readEntry = [&](StringRef suffix) {
    EntryAttrs e;
    e.func = module.lookupSymbol<LLVM::LLVMFuncOp>(k.name + suffix.str());
    auto intAttr = [&](StringRef name) {
      return e.func ? dyn_cast_or_null<IntegerAttr>(e.func->getAttr(name))
                    : IntegerAttr();
    };
    e.threads = intAttr("blasst.threads");
    e.smem = intAttr("blasst.smem_bytes");
    e.blockM = intAttr("blasst.block_m");
    e.blockN = intAttr("blasst.block_n");
    e.ctas = intAttr("blasst.ctas_per_sm");
    return e;
  };
  if (kernelFunc->hasAttr("blasst.short_entry")) {
    // Launched with the same parameters, block and grid (block_m), and its
    // own shared memory (short_smem_bytes).
    auto [entry, threads, smem, blockM, blockN, ctas] = readEntry("_short");
    if (!threads || !smem || !blockM || !blockN)
      return llvm::createStringError("kernel '" + k.name +
                                     "' has blasst.short_entry but no "
                                     "kernel '" +
                                     k.name + "_short'");
    if (threads.getInt() != k.threads || blockM.getInt() != k.blockM ||
        blockN.getInt() >= k.blockN)
      return llvm::createStringError(
          "the short-sequence entry '" + k.name + "_short' has " +
          std::to_string(threads.getInt()) + " threads, block_m " +
          std::to_string(blockM.getInt()) + ", block_n " +
          std::to_string(blockN.getInt()) + "; its kernel " +
          std::to_string(k.threads) + ", " + std::to_string(k.blockM) + ", " +
          std::to_string(k.blockN) +
          " (same threads and block_m, fewer keys per block)");
    k.shortBlockN = int(blockN.getInt());
    k.shortCtasPerSM = ctas ? int(ctas.getInt()) : 1;
    k.shortSmemBytes = int(smem.getInt());
    k.shortPersistent = entry->hasAttr("blasst.persistent");
    // That its CTAs fit an SM: the ws.kernel verifier (its buffers) and
    // rt::validateKernelInfo (the lowered size, compileToCubin's metadata).
  }
  if (kernelFunc->hasAttr("blasst.tma_entry")) {
    // Launched instead of the split grid with the same parameters, block,
    // grid and KV blocks (the same K/V tensor maps), the same merge
    // protocol (parameter 21, the kernel's `<name>_merge`), and the larger
    // of the two shared-memory sizes.
    auto [entry, threads, smem, blockM, blockN, ctas] = readEntry("_tma");
    if (!threads || !smem || !blockM || !blockN)
      return llvm::createStringError("kernel '" + k.name +
                                     "' has blasst.tma_entry but no kernel '" +
                                     k.name + "_tma'");
    if (threads.getInt() != k.threads || blockM.getInt() != k.blockM ||
        blockN.getInt() != k.blockN || entry->hasAttr("blasst.kv_cp_async") ||
        entry->hasAttr("blasst.merge_kernel") != k.mergeKernel)
      return llvm::createStringError(
          "the TMA entry '" + k.name + "_tma' has " +
          std::to_string(threads.getInt()) + " threads, block_m " +
          std::to_string(blockM.getInt()) + ", block_n " +
          std::to_string(blockN.getInt()) +
          (entry->hasAttr("blasst.merge_kernel") ? ", a merge kernel" : "") +
          (entry->hasAttr("blasst.kv_cp_async") ? ", cp.async K/V" : "") +
          "; its kernel " + std::to_string(k.threads) + ", " +
          std::to_string(k.blockM) + ", " + std::to_string(k.blockN) +
          (k.mergeKernel ? ", a merge kernel" : "") +
          " (same threads, blocks and merge, K/V by TMA)");
    k.smemBytes = std::max(k.smemBytes, int(smem.getInt()));
    k.tmaEntry = true;
  }
  return k;
}

std::string blasst::findPtxas(std::string *why) {
  std::vector<std::string> tried;
  auto check = [&](const std::string &dir) -> std::string {
    llvm::SmallString<256> p(dir);
    llvm::sys::path::append(p, "ptxas");
    tried.push_back(std::string(p));
    return llvm::sys::fs::can_execute(p) ? std::string(p) : std::string();
  };
  for (const char *env : {"CUDA_HOME", "CUDA_PATH"})
    if (const char *v = std::getenv(env))
      if (std::string p = check(std::string(v) + "/bin"); !p.empty())
        return p;
  if (auto p = llvm::sys::findProgramByName("ptxas"))
    return *p;
  tried.push_back("ptxas on PATH");
  if (std::string p = check(BLASST_CUDA_HOME_DEFAULT "/bin"); !p.empty())
    return p;
  if (why) {
    *why = "ptxas not found (tried";
    for (const std::string &t : tried)
      *why += " " + t;
    *why += "); set CUDA_HOME to the CUDA toolkit";
  }
  return {};
}

/// Runs `program args`, capturing stdout+stderr; returns the exit code or -1
/// (then the reason is in `output`). The log is a TempFile (see Scratch.cpp).
static int run(const std::string &program, ArrayRef<std::string> args,
               std::string &output) {
  llvm::Expected<TempFile> log = TempFile::create("ptxas-log");
  if (!log) {
    output = llvm::toString(log.takeError());
    return -1;
  }
  std::string err;
  int rc = runProgram(program, args, std::string(log->path), &err);
  if (auto buf = llvm::MemoryBuffer::getFile(log->path))
    output = (*buf)->getBuffer().str();
  if (!err.empty())
    output += err;
  return rc;
}

std::string blasst::ptxasVersion() {
  std::string ptxas = findPtxas(nullptr);
  if (ptxas.empty())
    return "";
  std::string out;
  if (run(ptxas, {"--version"}, out) != 0)
    return "";
  StringRef s = StringRef(out).trim();
  return s.rsplit('\n').second.empty() ? s.str() : s.rsplit('\n').second.str();
}

llvm::Expected<CubinResult> blasst::assembleCubin(const std::string &ptx,
                                                  Target target) {
  std::string why;
  std::string ptxas = findPtxas(&why);
  if (ptxas.empty())
    return llvm::createStringError(why);
  // Input, output and log in this process's scratch directory, removed on
  // return and on SIGTERM/SIGINT (see Scratch.cpp).
  llvm::Expected<TempFile> in = TempFile::create("ptx");
  if (!in)
    return in.takeError();
  llvm::Expected<TempFile> out = TempFile::create("cubin");
  if (!out)
    return out.takeError();
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(in->path, ec);
    if (!ec) {
      os << ptx;
      os.close();
      if (os.has_error())
        ec = os.error(), os.clear_error();
    }
    if (ec)
      return llvm::createStringError("cannot write the PTX to " +
                                     std::string(in->path) + ": " +
                                     ec.message());
  }
  std::string log;
  SmallVector<std::string> args = {"-arch=" + std::string(chipName(target)),
                                   "-O3",
                                   "-v",
                                   std::string(in->path),
                                   "-o",
                                   std::string(out->path)};
  // A module of several entries (a decode kernel with its lean entry and
  // merge kernel) is assembled one entry per thread: 0.55 -> 0.34 s for
  // three entries on two cores. The thread count is the entry count, not
  // the machine's, so the cubin's bytes depend on the PTX alone (they
  // differ with the count; the SASS does not). A ptxas without the option
  // assembles them one after another.
  size_t entries = 0;
  for (size_t at = ptx.find(".entry "); at != std::string::npos;
       at = ptx.find(".entry ", at + 1))
    ++entries;
  int rc;
  if (entries > 1) {
    SmallVector<std::string> split = args;
    split.push_back("--split-compile");
    split.push_back(std::to_string(std::min<size_t>(entries, 8)));
    rc = run(ptxas, split, log);
    if (rc != 0 && log.find("split-compile") != std::string::npos)
      rc = run(ptxas, args, log);
  } else {
    rc = run(ptxas, args, log);
  }
  CubinResult result;
  result.log = log;
  if (rc == 0)
    if (auto buf = llvm::MemoryBuffer::getFile(out->path, /*IsText=*/false))
      result.cubin.assign((*buf)->getBufferStart(), (*buf)->getBufferEnd());
  if (rc != 0 || result.cubin.empty())
    return llvm::createStringError("ptxas (" + ptxas +
                                   ") failed with exit "
                                   "code " +
                                   std::to_string(rc) + ":\n" + log);
  return result;
}
