//===- Passes.h - ws schedule transformations -------------------*- C++ -*-===//
#ifndef BLASST_DIALECT_WS_TRANSFORMS_PASSES_H
#define BLASST_DIALECT_WS_TRANSFORMS_PASSES_H

#include "blasst/Dialect/WS/IR/WS.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace blasst::ws {
#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "blasst/Dialect/WS/Transforms/Passes.h.inc"
} // namespace blasst::ws

#endif // BLASST_DIALECT_WS_TRANSFORMS_PASSES_H
