//===- Compile.cpp - From an AttentionSpec to a cubin ---------------------===//
#include "blasst/Compiler/Compile.h"
#include "blasst/Compiler/Frontend.h"
#include "blasst/Runtime/AttentionKernel.h"
#include "blasst/Target/Target.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#ifndef BLASST_VERSION_STRING
#error "BLASST_VERSION_STRING must be defined (lib/Compiler/CMakeLists.txt)"
#endif

using namespace mlir;
using namespace blasst;

char CompileError::ID = 0;

const char *blasst::compilerVersion() {
  return "blasst " BLASST_VERSION_STRING;
}

static constexpr Stage kStages[] = {Stage::Attn,        Stage::WS,
                                    Stage::LLVMDialect, Stage::LLVMIR,
                                    Stage::PTX,         Stage::Cubin};

const char *blasst::stageName(Stage stage) {
  switch (stage) {
  case Stage::Attn:
    return "attn";
  case Stage::WS:
    return "ws";
  case Stage::LLVMDialect:
    return "llvm-dialect";
  case Stage::LLVMIR:
    return "llvm";
  case Stage::PTX:
    return "ptx";
  case Stage::Cubin:
    return "cubin";
  }
  llvm_unreachable("unknown stage");
}

std::optional<Stage> blasst::parseStage(StringRef name) {
  for (Stage s : kStages)
    if (name == stageName(s))
      return s;
  return std::nullopt;
}

std::string blasst::stageChoices() {
  std::string out;
  size_t n = std::size(kStages);
  for (size_t i = 0; i < n; ++i)
    out += std::string(i == 0       ? ""
                       : i + 1 == n ? " or "
                                    : ", ") +
           stageName(kStages[i]);
  return out;
}

llvm::Expected<CompiledCubin>
blasst::compileToCubin(MLIRContext &ctx, const CompileRequest &request) {
  const AttentionSpec &spec = request.spec;
  Target target = request.schedule.target;
  auto error = [](Stage stage, const std::string &message, bool diagnosed) {
    return llvm::make_error<CompileError>(stage, message, diagnosed);
  };
  auto done = [&](Stage stage, ModuleOp module, StringRef text = {}) {
    if (request.onStage)
      request.onStage(stage, module, text);
    return stage == request.lastStage;
  };

  // Without the vote a BLASST kernel neither skips nor counts blocks: a
  // cubin whose .spec says it does would be another kernel than the one
  // built (and a silently rewritten .spec another kernel than the one asked
  // for). The dense kernel is the spec with `sparsity = none`.
  if (!request.insertVote && !spec.sparsity.isDense() &&
      request.lastStage == Stage::Cubin)
    return error(Stage::Cubin,
                 "a cubin built without the BLASST vote (--no-blasst-vote) "
                 "would neither skip nor count KV blocks, but its .spec "
                 "would say 'sparsity=" +
                     sparsityToString(spec.sparsity) +
                     (spec.stats ? " stats=true" : "") +
                     "'; compile the dense kernel with 'sparsity=none "
                     "stats=false' instead (--no-blasst-vote is for "
                     "comparing IR and PTX)",
                 /*diagnosed=*/false);

  CompiledCubin result;
  result.spec = spec;
  OwningOpRef<ModuleOp> module =
      buildAttnModule(&ctx, spec, kernelBaseName(spec));
  if (!request.locationName.empty()) {
    Location loc = NameLoc::get(StringAttr::get(&ctx, request.locationName));
    module->walk([&](Operation *op) { op->setLoc(loc); });
  }
  if (failed(verify(*module)))
    return error(Stage::Attn, "the attn module for this spec does not verify",
                 /*diagnosed=*/true);
  if (done(Stage::Attn, *module))
    return result;

  if (failed(lowerToWS(*module, request.schedule, request.insertVote,
                       request.verifyStats)))
    return error(Stage::WS, "lowering to ws IR failed", /*diagnosed=*/true);
  if (done(Stage::WS, *module))
    return result;

  PassManager pm(&ctx);
  buildWSToLLVMPipeline(pm, target, request.timeline);
  if (failed(pm.run(*module)))
    return error(Stage::LLVMDialect, "lowering ws to the LLVM dialect failed",
                 /*diagnosed=*/true);
  if (done(Stage::LLVMDialect, *module))
    return result;

  if (request.lastStage == Stage::LLVMIR) {
    FailureOr<std::string> ir = translateToLLVMIR(*module, target);
    if (failed(ir))
      return error(Stage::LLVMIR, "translation to LLVM IR failed",
                   /*diagnosed=*/true);
    done(Stage::LLVMIR, *module, *ir);
    return result;
  }

  FailureOr<std::string> ptx = translateToPTX(*module, target);
  if (failed(ptx))
    return error(Stage::PTX, "PTX generation failed", /*diagnosed=*/true);
  if (done(Stage::PTX, *module, *ptx))
    return result;

  llvm::Expected<CubinResult> cubin = assembleCubin(*ptx, target);
  if (!cubin)
    return error(Stage::Cubin, llvm::toString(cubin.takeError()),
                 /*diagnosed=*/false);

  // The launch parameters the lowering recorded on the kernel.
  llvm::Expected<LoweredKernel> lowered = findLoweredKernel(*module);
  if (!lowered)
    return error(Stage::Cubin, llvm::toString(lowered.takeError()),
                 /*diagnosed=*/false);
  rt::KernelInfo &info = result.info;
  info.kernelName = lowered->name;
  info.target = toString(target);
  info.blockM = lowered->blockM;
  info.blockN = lowered->blockN;
  info.threads = lowered->threads;
  info.smemBytes = lowered->smemBytes;
  info.persistent = lowered->persistent ? 1 : 0;
  info.lean = lowered->lean ? 1 : 0;
  info.ctasPerSM = lowered->ctasPerSM;
  info.mergeKernel = lowered->mergeKernel ? 1 : 0;
  info.leanEntry = lowered->leanEntry ? 1 : 0;
  info.shortBlockN = lowered->shortBlockN;
  info.shortCtasPerSM = lowered->shortCtasPerSM;
  info.shortSmemBytes = lowered->shortSmemBytes;
  info.shortPersistent = lowered->shortPersistent ? 1 : 0;
  info.kvCpAsync = lowered->kvCpAsync ? 1 : 0;
  info.tmaEntry = lowered->tmaEntry ? 1 : 0;
  info.balancedSplits = lowered->balancedSplits ? 3 : 0;
  info.clusterM = lowered->clusterM;
  info.qGroup = lowered->qGroup;
  info.splitKV = lowered->splitKV ? 1 : 0;
  info.kvSplits = lowered->kvSplits;
  info.qTiles = lowered->qTiles;
  info.oTensorMap = lowered->oTensorMap ? 1 : 0;
  info.perSeqKV = lowered->perSeqKV ? 1 : 0;
  info.pageSize = lowered->pageSize;
  info.sinkSeed = lowered->sinkSeed ? 1 : 0;
  info.splitChunk = lowered->splitChunk;
  info.voteFirstBlock = lowered->voteFirstBlock ? 1 : 0;
  info.compilerVersion = compilerVersion();
  if (rt::Status s = rt::validateKernelInfo(info); !s)
    return error(Stage::Cubin, "invalid kernel metadata: " + s.message(),
                 /*diagnosed=*/false);
  result.cubin = std::move(cubin->cubin);
  result.ptxasLog = std::move(cubin->log);
  done(Stage::Cubin, *module, result.ptxasLog);
  return result;
}
