// RUN: blasst-opt %s -split-input-file --convert-attn-to-ws=target=sm_100a --blasst-insert-vote | FileCheck %s
// RUN: blasst-opt %s -split-input-file --convert-attn-to-ws=target=sm_100a --blasst-insert-vote --blasst-insert-vote | FileCheck %s
// sm_100a: each softmax role votes on its tile after its row max and
// stores the decision in a word per buffer it hands on (the factors, P),
// inside that pipe's acquire and release, before the skip region; the
// correction role and the MMA warp read the word after their acquire of
// the same pipe and skip the rescale and P V. Every acquire and release stays
// outside the skip regions; the pass is idempotent.

// CHECK-LABEL: ws.kernel @sparse
// CHECK: ws.buffer @o1 tmem
// CHECK-NEXT: ws.buffer @vote_f0 smem [1, 1] i32 stages 1
// CHECK-NEXT: ws.buffer @vote_p0 smem [1, 1] i32 stages 1
// CHECK-NEXT: ws.buffer @vote_f1 smem [1, 1] i32 stages 1
// CHECK-NEXT: ws.buffer @vote_p1 smem [1, 1] i32 stages 1
// CHECK: ws.role @softmax0
// CHECK-NEXT: ws.kv_loop {
// CHECK-NEXT: ws.acquire @s0_pipe
// CHECK-NEXT: ws.read_scores @s0
// CHECK-NEXT: ws.row_max @s0
// CHECK-NEXT: ws.vote @s0 {stats}
// CHECK-NEXT: ws.acquire @f0_pipe
// CHECK-NEXT: ws.store_vote @vote_f0
// CHECK-NEXT: ws.unless_skipped {
// CHECK-NEXT: ws.softmax_update @s0 -> @f0
// CHECK-NEXT: }
// CHECK-NEXT: ws.release @f0_pipe
// CHECK-NEXT: ws.acquire @p0_pipe
// CHECK-NEXT: ws.store_vote @vote_p0
// CHECK-NEXT: ws.unless_skipped {
// CHECK-NEXT: ws.exp2_store_p @s0 -> @p0
// CHECK-NEXT: }
// CHECK-NEXT: ws.release @p0_pipe
// CHECK-NEXT: ws.release @s0_pipe
// CHECK-NEXT: }
// CHECK: ws.role @softmax1
// CHECK: ws.vote @s1 {stats}
// CHECK-NEXT: ws.acquire @f1_pipe
// CHECK-NEXT: ws.store_vote @vote_f1
// CHECK: ws.role @correction
// CHECK-NEXT: ws.kv_loop {
// CHECK-NEXT: ws.acquire @f0_pipe
// CHECK-NEXT: ws.acquire @o0_pipe
// CHECK-NEXT: ws.load_vote @vote_f0
// CHECK-NEXT: ws.unless_skipped {
// CHECK-NEXT: ws.correct @o0 by @f0
// CHECK-NEXT: }
// CHECK-NEXT: ws.release @o0_pipe
// CHECK-NEXT: ws.release @f0_pipe
// CHECK-NEXT: ws.acquire @f1_pipe
// CHECK-NEXT: ws.acquire @o1_pipe
// CHECK-NEXT: ws.load_vote @vote_f1
// CHECK-NEXT: ws.unless_skipped {
// CHECK-NEXT: ws.correct @o1 by @f1
// CHECK-NEXT: }
// CHECK: ws.role @mma
// CHECK-NOT: ws.load_vote
// CHECK: ws.kv_loop {
// CHECK: ws.acquire @p0_pipe
// CHECK-NEXT: ws.acquire @o0_pipe
// CHECK-NEXT: ws.load_vote @vote_p0
// CHECK-NEXT: ws.unless_skipped {
// CHECK-NEXT: ws.mma pv @p0, @v -> @o0
// CHECK-NEXT: }
// CHECK-NEXT: ws.release @o0_pipe
// CHECK-NEXT: ws.release @p0_pipe
// CHECK-NEXT: ws.acquire @s0_pipe {ahead = 1 : i64}
// CHECK-NEXT: ws.mma qk @q0, @k -> @s0 {ahead = 1 : i64}
// CHECK: ws.acquire @p1_pipe
// CHECK-NEXT: ws.acquire @o1_pipe
// CHECK-NEXT: ws.load_vote @vote_p1
// CHECK-NEXT: ws.unless_skipped {
// CHECK-NEXT: ws.mma pv @p1, @v -> @o1
// CHECK-NEXT: }
// CHECK: ws.role @load
// CHECK-NOT: vote
// CHECK: ws.role @epilogue
func.func @sparse(%q: memref<?x?x32x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x32x128xbf16>, %s: memref<?x32x2xi64>) {
  attn.attention %q, %k, %v -> %o stats(%s : memref<?x32x2xi64>) spec(<head_dim = 128, q_heads = 32, kv_heads = 8, causal = true, sparsity = blasst(a = 1000.0), stats = true>) : memref<?x?x32x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x32x128xbf16>
  return
}

// -----

// Dense: nothing changes.
// CHECK-LABEL: ws.kernel @dense
// CHECK-NOT: vote
// CHECK-NOT: unless_skipped
func.func @dense(%q: memref<?x?x8x64xf16>, %k: memref<?x?x8x64xf16>, %v: memref<?x?x8x64xf16>, %o: memref<?x?x8x64xf16>) {
  attn.attention %q, %k, %v -> %o spec(<dtype = f16, head_dim = 64, q_heads = 8, kv_heads = 8>) : memref<?x?x8x64xf16>, memref<?x?x8x64xf16>, memref<?x?x8x64xf16>, memref<?x?x8x64xf16>
  return
}
