// RUN: blasst-opt %s --blasst-attn-to-llvm | FileCheck %s
// The load role speculates after two kept blocks in a row (the run length
// saturates at 2); with speculate-after=0 it waits for every block's votes.
// RUN: blasst-opt %s --blasst-attn-to-llvm | FileCheck %s --check-prefix=SPEC
// RUN: blasst-opt %s --convert-attn-to-ws --blasst-insert-vote "--blasst-v-on-demand=mode=auto speculate-after=0" --blasst-ws-to-llvm | FileCheck %s --check-prefix=WAIT
// SPEC-LABEL: llvm.func @sparse_kernel
// SPEC: %[[TWO:[0-9]+]] = llvm.mlir.constant(2 : i32) : i32
// SPEC: llvm.intr.smin(%{{[0-9]+}}, %[[TWO]]) : (i32, i32) -> i32
// SPEC-LABEL: llvm.func @dense_kernel
// WAIT-LABEL: llvm.func @sparse_kernel
// WAIT-NOT: llvm.intr.smin
// WAIT-LABEL: llvm.func @dense_kernel
// The named pipeline builds the default schedule, V on demand included for
// BLASST kernels: each consumer warpgroup publishes its vote with a
// state-less arrive on its own CTA's shared::cluster address; the dense
// kernel has none.

// CHECK-LABEL: llvm.func @sparse_kernel
// CHECK-COUNT-2: nvvm.mbarrier.arrive %{{[0-9]+}} : !llvm.ptr<7>
// CHECK-LABEL: llvm.func @dense_kernel
// CHECK-NOT: nvvm.mbarrier.arrive %{{[0-9]+}} : !llvm.ptr<7>
func.func @sparse(%q: memref<?x?x8x128xbf16>, %k: memref<?x?x2x128xbf16>, %v: memref<?x?x2x128xbf16>, %o: memref<?x?x8x128xbf16>) {
  attn.attention %q, %k, %v -> %o spec(<head_dim = 128, q_heads = 8, kv_heads = 2, sparsity = blasst(ln_lambda = -8.0)>) : memref<?x?x8x128xbf16>, memref<?x?x2x128xbf16>, memref<?x?x2x128xbf16>, memref<?x?x8x128xbf16>
  return
}
func.func @dense(%q: memref<?x?x8x128xbf16>, %k: memref<?x?x2x128xbf16>, %v: memref<?x?x2x128xbf16>, %o: memref<?x?x8x128xbf16>) {
  attn.attention %q, %k, %v -> %o spec(<head_dim = 128, q_heads = 8, kv_heads = 2>) : memref<?x?x8x128xbf16>, memref<?x?x2x128xbf16>, memref<?x?x2x128xbf16>, memref<?x?x8x128xbf16>
  return
}
