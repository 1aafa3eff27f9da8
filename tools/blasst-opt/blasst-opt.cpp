//===- blasst-opt.cpp - The blasst pass driver ----------------------------===//
//
// mlir-opt for our dialects and passes, plus the upstream dialects the
// lowering produces, so a whole pipeline can be run and inspected stage by
// stage.
//
//===----------------------------------------------------------------------===//
#include "blasst/Conversion/Passes.h"
#include "blasst/Dialect/Attn/IR/Attn.h"
#include "blasst/Dialect/WS/IR/WS.h"
#include "blasst/Dialect/WS/Transforms/Passes.h"
#include "blasst/Target/Target.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<blasst::attn::AttnDialect, blasst::ws::WSDialect,
                  mlir::arith::ArithDialect, mlir::func::FuncDialect,
                  mlir::gpu::GPUDialect, mlir::LLVM::LLVMDialect,
                  mlir::NVVM::NVVMDialect, mlir::memref::MemRefDialect,
                  mlir::nvgpu::NVGPUDialect, mlir::scf::SCFDialect,
                  mlir::vector::VectorDialect>();
  mlir::registerConvertNVVMToLLVMPass();
  mlir::registerSCFToControlFlowPass();
  mlir::registerArithToLLVMConversionPass();
  mlir::registerConvertControlFlowToLLVMPass();
  mlir::registerReconcileUnrealizedCastsPass();
  blasst::registerBLASSTConversionPasses();
  blasst::registerBLASSTPipelines();
  blasst::ws::registerBLASSTWSTransformsPasses();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "blasst optimizer driver\n", registry));
}
