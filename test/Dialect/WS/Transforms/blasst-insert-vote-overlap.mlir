// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a overlap=true" --blasst-insert-vote | FileCheck %s
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a overlap=true" --blasst-insert-vote --convert-ws-to-nvvm | FileCheck %s --check-prefix=LLVM
// BLASST in the overlap schedule (the sm_90a default at head_dim <= 128):
// the loop's softmax is block n+1's, so the vote after row_max {ahead = 1}
// decides block n+1; the P V of block n at the top of the next iteration
// is wrapped too and reads that decision across the back-edge. The waits,
// acquires and releases stay on both paths; O is rescaled only for kept
// blocks.

// CHECK-LABEL: ws.kernel @sparse_kernel
// CHECK: ws.role @consumer0
// The prologue (block 0: the running max is -inf, never skipped).
// CHECK: ws.row_max @s
// CHECK-NEXT: ws.softmax_update @s
// CHECK-NEXT: ws.exp2_store_p @s -> @p
// CHECK-NEXT: ws.kv_loop {
// CHECK-NEXT: ws.acquire @k_pipe {ahead = 1 : i64}
// CHECK-NEXT: ws.mma qk @q, @k -> @s {ahead = 1 : i64, async}
// CHECK-NEXT: ws.acquire @v_pipe
// CHECK-NEXT: ws.unless_skipped {
// CHECK-NEXT: ws.mma pv @p, @v -> @o {async}
// CHECK-NEXT: }
// CHECK-NEXT: ws.mma_wait {pending = 1 : i64}
// CHECK-NEXT: ws.release @k_pipe {ahead = 1 : i64}
// CHECK-NEXT: ws.row_max @s {ahead = 1 : i64}
// CHECK-NEXT: ws.vote @s {stats}
// The softmax and the correction around the P V wait are decided by one
// branch (fuse_next).
// CHECK-NEXT: ws.unless_skipped attributes {fuse_next} {
// CHECK-NEXT: ws.softmax_update @s
// CHECK-NEXT: ws.exp2 @s {guarded}
// CHECK-NEXT: }
// CHECK-NEXT: ws.mma_wait
// CHECK-NEXT: ws.release @v_pipe
// CHECK-NEXT: ws.unless_skipped {
// CHECK-NEXT: ws.correct @o
// CHECK-NEXT: ws.pack_p @s -> @p
// CHECK-NEXT: }
// CHECK-NEXT: }

// The skip flag is a loop-carried i1 (false for block 0). The look-ahead
// acquire of K(n+1) needs no branch (past the end it waits for the stage's
// completed previous phase). P V's group is committed inside the kept
// branch; the skip branch commits no empty group (ptxas would issue a dummy
// HGMMA for it) and waits for all groups instead, so after
// wgmma.wait_group 1 the same groups are retired on both paths and the kept
// block's softmax overlaps P V(n). The vote tests each thread's own max: no
// quad shuffle before the warpgroup AND, the shuffles run on the kept path.
// P(n+1) is packed only after wait_group 0, through a register fence.
// LLVM-LABEL: llvm.func @sparse_kernel
// LLVM: scf.for {{.*}} iter_args({{.*}}) -> ({{.*}}i1)
// LLVM-NOT: scf.if
// LLVM: nvvm.mbarrier.try_wait.parity
// LLVM: llvm.inline_asm has_side_effects "{{.*}}wgmma.mma_async
// LLVM: nvvm.wgmma.commit.group.sync.aligned
// LLVM-NEXT: scf.yield %{{[0-9]+}}, %arg{{[0-9]+}}, %arg
// LLVM-NEXT: } else {
// LLVM-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// LLVM-NEXT: scf.yield %arg
// LLVM-NEXT: }
// LLVM-NEXT: nvvm.wgmma.wait.group.sync.aligned 1
// LLVM-NOT: nvvm.shfl.sync
// LLVM: nvvm.vote.sync all
// LLVM-NOT: nvvm.shfl.sync
// LLVM: llvm.nvvm.barrier.cta.red.and.aligned.count
// LLVM-NOT: nvvm.shfl.sync
// LLVM: scf.if
// LLVM-NOT: } else {
// LLVM: nvvm.shfl.sync  bfly
// LLVM: llvm.nvvm.ex2.approx.ftz.f
// LLVM-NOT: llvm.fptrunc
// LLVM: nvvm.wgmma.wait.group.sync.aligned 0
// LLVM: llvm.inline_asm has_side_effects "", "=f
// LLVM: llvm.fptrunc {{.*}} : vector<2xf32> to vector<2xbf16>
func.func @sparse(%q: memref<?x?x8x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x8x128xbf16>, %s: memref<?x8x2xi64>) {
  attn.attention %q, %k, %v -> %o stats(%s : memref<?x8x2xi64>) spec(<head_dim = 128, q_heads = 8, kv_heads = 8, sparsity = blasst(ln_lambda = -8.0), stats = true>) : memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>
  return
}
