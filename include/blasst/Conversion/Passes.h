//===- Passes.h - blasst conversion passes ----------------------*- C++ -*-===//
#ifndef BLASST_CONVERSION_PASSES_H
#define BLASST_CONVERSION_PASSES_H

#include "blasst/Conversion/AttnToWS/AttnToWS.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace blasst {
#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "blasst/Conversion/Passes.h.inc"
} // namespace blasst

#endif // BLASST_CONVERSION_PASSES_H
