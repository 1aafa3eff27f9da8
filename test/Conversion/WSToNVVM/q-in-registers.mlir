// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a q-in-registers=true" --convert-ws-to-nvvm | FileCheck %s
// Q in registers: before its loop each consumer loads its Q rows with one
// ldmatrix.x4 per 16-column k-step (8 at head_dim 128, 128B-swizzled
// addresses); every Q Kᵀ is then wgmma with A from registers: the first
// k-step ignores the accumulator (scale-d 0), B (K) is K-major (trans-b 0).
// CHECK-LABEL: llvm.func @dense_kernel
// CHECK-COUNT-8: nvvm.ldmatrix {{.*}}num = 4 : i32, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>
// CHECK-NOT: nvvm.ldmatrix
// CHECK: llvm.inline_asm has_side_effects "{\0A.reg .pred p;\0Asetp.ne.b32 p, 0, 0;\0Awgmma.mma_async.sync.aligned.m64n144k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 0;
// CHECK: scf.for
// CHECK: "{\0A.reg .pred p;\0Asetp.ne.b32 p, 0, 0;\0Awgmma.mma_async.sync.aligned.m64n144k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 0;
// CHECK: "{\0A.reg .pred p;\0Asetp.ne.b32 p, 1, 0;\0Awgmma.mma_async.sync.aligned.m64n144k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 0;
// P V keeps B transposed (V is MN-major).
// CHECK: "{\0A.reg .pred p;\0Asetp.ne.b32 p, 1, 0;\0Awgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {{.*}}, p, 1, 1, 1;
func.func @dense(%q: memref<?x?x8x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x8x128xbf16>) {
  attn.attention %q, %k, %v -> %o spec(<head_dim = 128, q_heads = 8, kv_heads = 8>) : memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>
  return
}
