//===- Passes.td - ws schedule transformations -------------*- tablegen -*-===//
#ifndef BLASST_WS_TRANSFORMS_PASSES
#define BLASST_WS_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

def BLASSTInsertVote : Pass<"blasst-insert-vote", "mlir::ModuleOp"> {
  let summary = "Insert the BLASST skip vote into kernels with a sparsity policy";
  let description = [{
    For every ws.kernel whose spec has a BLASST policy, in each role that
    computes row maxima inside its kv_loop: insert `ws.vote` right after the
    block's `ws.row_max`, and wrap every maximal run of skippable steps that
    follows it (softmax_update, exp2_store_p, exp2, pack_p, correct, the P·V
    mma) in `ws.unless_skipped`. Acquires and releases stay outside, so
    every mbarrier arrival happens on both paths and the pipeline never
    desynchronises; Q·Kᵀ and the K/V loads stay (prefill). Kernels with no sparsity policy
    are left untouched, so their code is byte-identical to a build without
    the pass.
  }];
  let dependentDialects = ["::blasst::ws::WSDialect"];
}

#endif // BLASST_WS_TRANSFORMS_PASSES
