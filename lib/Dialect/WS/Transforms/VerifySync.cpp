//===- VerifySync.cpp - Prove each kernel's synchronisation
//----------------===//
//
// --blasst-verify-sync: runs the sync checker (Analysis/SyncCheck.h) on every
// ws.kernel and turns its answer into diagnostics: an error with the trace
// as a note on a violation, a warning on a kernel the model does not cover,
// and with `report` a remark that says what was proven.
//
//===----------------------------------------------------------------------===//
#include "blasst/Dialect/WS/Analysis/SyncCheck.h"
#include "blasst/Dialect/WS/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

namespace blasst::ws {
#define GEN_PASS_DEF_BLASSTVERIFYSYNC
#include "blasst/Dialect/WS/Transforms/Passes.h.inc"
} // namespace blasst::ws

using namespace mlir;
using namespace blasst;

namespace {
struct BLASSTVerifySyncPass
    : public blasst::ws::impl::BLASSTVerifySyncBase<BLASSTVerifySyncPass> {
  using Base::Base;
  void runOnOperation() override {
    bool failed = false;
    for (auto kernel : getOperation().getBody()->getOps<ws::KernelOp>()) {
      ws::ProtocolAnalysis protocol(kernel);
      ws::SyncCheckOptions options;
      options.eagerLanding = eagerLanding;
      options.eagerProducts = eagerProducts;
      options.forceEagerProducts = forceEagerProducts;
      options.shallowTokenRings = shallowTokenRings;
      ws::SyncCheckResult r = ws::checkSync(kernel, protocol, options);
      if (stats)
        llvm::errs() << "verify-sync @" << kernel.getSymName() << ": "
                     << r.statesExplored << " states, "
                     << llvm::format("%.1f", r.seconds * 1e3) << " ms"
                     << (r.reduction.empty() ? "" : " (" + r.reduction + ")")
                     << "\n";
      switch (r.status) {
      case ws::SyncCheckResult::Status::Verified:
        if (report)
          mlir::emitRemark(kernel.getLoc())
              << "synchronisation verified (" << r.statesExplored
              << " states): deadlock-free, no parity aliasing, pipes balanced, "
                 "no stage reused while read, every read of shared storage "
                 "sees the value attention needs, for "
              << r.bounds
              << (r.reduction.empty() ? "" : " (" + r.reduction + ")");
        break;
      case ws::SyncCheckResult::Status::NotVerified:
        // By location: the op itself would be printed with it on every
        // compile of such a kernel.
        mlir::emitWarning(kernel.getLoc())
            << "'ws.kernel' op @" << kernel.getSymName() << " " << r.message;
        break;
      case ws::SyncCheckResult::Status::Failed: {
        // By location, as emitOpError would print the whole kernel under
        // the message and bury the trace.
        Operation *at = r.op ? r.op : kernel.getOperation();
        InFlightDiagnostic diag = mlir::emitError(at->getLoc());
        diag << "'" << at->getName() << "' op fails sync verification: "
             << r.message;
        diag.attachNote(kernel.getLoc()) << r.trace;
        failed = true;
        break;
      }
      }
    }
    if (failed)
      signalPassFailure();
    markAllAnalysesPreserved();
  }
};
} // namespace
