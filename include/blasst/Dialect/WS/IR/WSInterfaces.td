//===- WSInterfaces.td - Interfaces of the ws dialect ------*- tablegen -*-===//
//
// Every per-KV-block step implements StepOpInterface: the role that runs it,
// the pipe it acquires, releases or fills, the KV block it works on (n +
// ahead inside a kv_loop) and the buffers it reads and writes. The protocol
// analysis (Dialect/WS/Analysis/Protocol.h) reads steps through it instead
// of switching over op types; the verifiers take a step's role from it.
//
//===----------------------------------------------------------------------===//
#ifndef BLASST_WS_INTERFACES
#define BLASST_WS_INTERFACES

include "mlir/IR/OpBase.td"

def WS_StepOpInterface : OpInterface<"StepOpInterface"> {
  let cppNamespace = "::blasst::ws";
  let description = [{
    A step of a role's schedule. Defaults read the op's `pipe` and `ahead`
    attributes; the buffer accesses come from one table in the dialect
    (`getStepBufferAccesses`).
  }];
  let methods = [
    InterfaceMethod<"The pipe the step acquires, releases or fills; null for "
                    "steps on no pipe.",
      "::mlir::FlatSymbolRefAttr", "getStepPipe", (ins), [{}], [{
        return $_op->template getAttrOfType<::mlir::FlatSymbolRefAttr>("pipe");
      }]>,
    InterfaceMethod<"The KV block the step works on relative to the loop's "
                    "block n (its `ahead`, 0 when unset).",
      "int64_t", "getStepAhead", (ins), [{}], [{
        if (auto a = $_op->template getAttrOfType<::mlir::IntegerAttr>("ahead"))
          return a.getInt();
        return 0;
      }]>,
    InterfaceMethod<"Appends the buffers the step reads and writes.",
      "void", "getBufferAccesses",
      (ins "::llvm::SmallVectorImpl<::blasst::ws::BufferAccess> &":$accesses),
      [{}], [{
        ::blasst::ws::getStepBufferAccesses($_op, accesses);
      }]>,
  ];
  let extraSharedClassDeclaration = [{
    /// The role that runs this step (a template only so that RoleOp, which
    /// is declared after the interface, is complete where it is used).
    template <typename RoleT = ::blasst::ws::RoleOp>
    RoleT getRole() {
      return $_op->template getParentOfType<RoleT>();
    }
  }];
}

#endif // BLASST_WS_INTERFACES
