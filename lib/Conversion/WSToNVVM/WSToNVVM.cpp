//===- WSToNVVM.cpp - The convert-ws-to-nvvm pass -------------------------===//
//
// Lowers each ws.kernel to an NVVM kernel (llvm.func): the protocol
// analysis and the shared memory layout first, then the target-neutral
// driver (KernelLowering) with the kernel's target lowering (SM90/ for
// sm_90a). The pieces:
//   LoweringBase.h     state and helpers shared by driver and target
//   KernelLowering.*   kernel ABI, roles, KV loops, turns
//   Pipes.cpp          mbarrier pipes and TMA copies
//   SkipRegions.cpp    BLASST skip regions (and their fusion)
//   Votes.cpp          BLASST votes, V on demand, statistics
//   TargetLowering.h   the target interface
//   SM90/              sm_90a: wgmma, register fragments, softmax, epilogue
//   SM100/             sm_100a: tcgen05, tensor memory, roles per step
//
//===----------------------------------------------------------------------===//
#include "KernelLowering.h"

#include "blasst/Conversion/Passes.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

namespace blasst {
#define GEN_PASS_DEF_CONVERTWSTONVVM
#include "blasst/Conversion/Passes.h.inc"
} // namespace blasst

using namespace mlir;
using namespace blasst;
using namespace blasst::ws;
using namespace blasst::ws::lowering;

LogicalResult KernelLowering::emit(ModuleOp module) {
  if (failed(emitKernel(module))) {
    if (func)
      func.erase();
    return failure();
  }
  return success();
}

namespace {
struct ConvertWSToNVVMPass
    : public blasst::impl::ConvertWSToNVVMBase<ConvertWSToNVVMPass> {
  using Base::Base;
  void runOnOperation() override;
};
} // namespace

void ConvertWSToNVVMPass::runOnOperation() {
  ModuleOp module = getOperation();
  std::optional<ws::Target> wanted = symbolizeTarget(target);
  if (!wanted) {
    module.emitError() << "convert-ws-to-nvvm: unknown target '" << target
                       << "' (expected sm_90a or sm_100a)";
    return signalPassFailure();
  }
  // Attention-level input (attn ops, no schedule yet) has nothing this pass
  // can lower: dropping it would print an empty module and succeed.
  Operation *attnOp = nullptr;
  module.walk([&](Operation *op) {
    if (op->getDialect() && op->getDialect()->getNamespace() == "attn") {
      attnOp = op;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (attnOp) {
    attnOp->emitOpError()
        << "is attention-level IR, which convert-ws-to-nvvm cannot lower: "
           "run --convert-attn-to-ws first (the blasst-attn-to-llvm "
           "pipeline does both)";
    return signalPassFailure();
  }
  SmallVector<KernelOp> kernels(module.getBody()->getOps<KernelOp>());
  if (kernels.empty()) {
    module.emitError() << "convert-ws-to-nvvm: the module has no ws.kernel "
                          "to lower";
    return signalPassFailure();
  }
  for (KernelOp kernel : kernels) {
    if (kernel.getTarget() != *wanted) {
      kernel.emitOpError() << "targets " << stringifyTarget(kernel.getTarget())
                           << " but the pass lowers " << target;
      return signalPassFailure();
    }
    FailureOr<SmemLayout> layout = computeLayout(kernel);
    if (failed(layout))
      return signalPassFailure();
    if (timeline && kernel.getTarget() != ws::Target::sm_90a) {
      kernel.emitOpError() << "convert-ws-to-nvvm: timeline stamps are "
                              "lowered for sm_90a only";
      return signalPassFailure();
    }
    ProtocolAnalysis protocol(kernel);
    KernelEnv env(kernel, *layout, protocol);
    env.timeline = timeline;
    std::unique_ptr<TargetLowering> target =
        kernel.getTarget() == ws::Target::sm_100a ? createSM100Lowering(env)
                                                   : createSM90Lowering(env);
    if (failed(KernelLowering(env, *target).emit(module)))
      return signalPassFailure();
    kernel.erase();
  }
  if (deviceOnly) {
    SmallVector<Operation *> host;
    for (Operation &op : module.getBody()->getOperations())
      if (isa<FunctionOpInterface>(op) && !isa<LLVM::LLVMFuncOp>(op))
        host.push_back(&op);
    for (Operation *op : host)
      op->erase();
  }
}
