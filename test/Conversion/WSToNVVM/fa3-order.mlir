// RUN: blasst-opt %s --convert-attn-to-ws=target=sm_90a --convert-ws-to-nvvm | FileCheck %s
// RUN: blasst-opt %s --convert-attn-to-ws=target=sm_90a | FileCheck %s --check-prefix=WS
// FlashAttention-3's order in the dense overlap loop (P in registers): the
// exponentials of block n+1 (in a branch on block n+1 existing, ws.exp2
// {guarded}) come after the wait that retires Q Kᵀ(n+1) and before the one
// that retires P V(n); P(n+1) is packed only after that wait, through a
// register fence, so it never overwrites the registers P V(n) still reads.
// At head_dim 64 the exponentials are not guarded (measured slower).

// CHECK-LABEL: llvm.func @hd128_kernel
// The look-ahead acquire of K(n+1) is branch-free (no scf.if around its
// wait: past the end it waits for the stage's completed previous phase).
// CHECK: scf.for {{.*}} iter_args
// CHECK-NOT: scf.if
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK: scf.if
// CHECK: llvm.nvvm.ex2.approx.ftz.f
// CHECK-NOT: llvm.fptrunc
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: llvm.inline_asm has_side_effects "", "=f
// CHECK: llvm.fptrunc {{.*}} : vector<2xf32> to vector<2xbf16>
// CHECK: scf.yield
func.func @hd128(%q: memref<?x?x8x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x8x128xbf16>) {
  attn.attention %q, %k, %v -> %o spec(<head_dim = 128, q_heads = 8, kv_heads = 8>) : memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>
  return
}

// WS-LABEL: ws.kernel @hd128_kernel
// WS: ws.exp2 @s {guarded}
// WS-LABEL: ws.kernel @hd64_kernel
// WS: ws.exp2 @s{{$}}
func.func @hd64(%q: memref<?x?x8x64xbf16>, %k: memref<?x?x8x64xbf16>, %v: memref<?x?x8x64xbf16>, %o: memref<?x?x8x64xbf16>) {
  attn.attention %q, %k, %v -> %o spec(<head_dim = 64, q_heads = 8, kv_heads = 8>) : memref<?x?x8x64xbf16>, memref<?x?x8x64xbf16>, memref<?x?x8x64xbf16>, memref<?x?x8x64xbf16>
  return
}
