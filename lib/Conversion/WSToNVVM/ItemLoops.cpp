//===- ItemLoops.cpp - The blasst-annotate-item-loops pass ----------------===//
//
// A persistent prefill CTA's tile loop (KernelLowering::emitItemLoop) keeps
// its location name through the SCF and cf conversions; its back-edge gets
// LLVM's llvm.licm.disable so the tile's invariants stay inside the loop.
//
//===----------------------------------------------------------------------===//
#include "LoweringBase.h"

#include "blasst/Conversion/Passes.h"

#include "mlir/IR/Dominance.h"

namespace blasst {
#define GEN_PASS_DEF_ANNOTATEITEMLOOPS
#include "blasst/Conversion/Passes.h.inc"
} // namespace blasst

using namespace mlir;

namespace {
bool isItemLoopBranch(Operation *op) {
  auto name = dyn_cast<NameLoc>(op->getLoc());
  return name && name.getName() == blasst::ws::lowering::kItemLoopMarker;
}

struct AnnotateItemLoopsPass
    : public blasst::impl::AnnotateItemLoopsBase<AnnotateItemLoopsPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    auto ann = LLVM::LoopAnnotationAttr::get(
        ctx, /*disableNonforced=*/{}, /*vectorize=*/{}, /*interleave=*/{},
        /*unroll=*/{}, /*unrollAndJam=*/{},
        LLVM::LoopLICMAttr::get(ctx, BoolAttr::get(ctx, true),
                                /*versioningDisable=*/{}),
        /*distribute=*/{}, /*pipeline=*/{}, /*peeled=*/{}, /*unswitch=*/{},
        /*mustProgress=*/{}, /*isVectorized=*/{}, /*startLoc=*/{},
        /*endLoc=*/{}, /*parallelAccesses=*/{});
    getOperation().walk([&](LLVM::LLVMFuncOp func) {
      if (func.isExternal())
        return;
      DominanceInfo dom(func);
      // A back-edge: a branch to a block that dominates the branch's own.
      auto backEdge = [&](Operation *op) {
        return llvm::any_of(op->getSuccessors(), [&](Block *to) {
          return dom.dominates(to, op->getBlock());
        });
      };
      func.walk([&](Operation *op) {
        if (!isItemLoopBranch(op) || !backEdge(op))
          return;
        if (auto br = dyn_cast<LLVM::BrOp>(op))
          br.setLoopAnnotationAttr(ann);
        else if (auto condBr = dyn_cast<LLVM::CondBrOp>(op))
          condBr.setLoopAnnotationAttr(ann);
      });
    });
  }
};
} // namespace
