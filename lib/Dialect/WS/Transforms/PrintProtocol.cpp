//===- PrintProtocol.cpp - Print each kernel's pipeline protocol ----------===//
//
// --ws-print-protocol: the ProtocolAnalysis of every ws.kernel, as text on
// stderr, for lit tests and for reading a schedule.
//
//===----------------------------------------------------------------------===//
#include "blasst/Dialect/WS/Analysis/Protocol.h"
#include "blasst/Dialect/WS/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace blasst::ws {
#define GEN_PASS_DEF_WSPRINTPROTOCOL
#include "blasst/Dialect/WS/Transforms/Passes.h.inc"
} // namespace blasst::ws

using namespace mlir;
using namespace blasst;

namespace {
struct WSPrintProtocolPass
    : public blasst::ws::impl::WSPrintProtocolBase<WSPrintProtocolPass> {
  void runOnOperation() override {
    for (auto kernel : getOperation().getBody()->getOps<ws::KernelOp>())
      ws::ProtocolAnalysis(kernel).print(llvm::errs());
    markAllAnalysesPreserved();
  }
};
} // namespace
