//===- Attn.h - The attn dialect --------------------------------*- C++ -*-===//
#ifndef BLASST_DIALECT_ATTN_IR_ATTN_H
#define BLASST_DIALECT_ATTN_IR_ATTN_H

#include "blasst/Spec/AttentionSpec.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"

#include "blasst/Dialect/Attn/IR/AttnDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "blasst/Dialect/Attn/IR/AttnAttrs.h.inc"

#define GET_OP_CLASSES
#include "blasst/Dialect/Attn/IR/AttnOps.h.inc"

namespace blasst::attn {
/// The MLIR element type of a spec dtype.
mlir::Type getElementType(mlir::MLIRContext *ctx, DType dtype);
} // namespace blasst::attn

#endif // BLASST_DIALECT_ATTN_IR_ATTN_H
