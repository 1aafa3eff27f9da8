// RUN: blasst-opt %s -split-input-file --convert-attn-to-ws=overlap=false --blasst-insert-vote | FileCheck %s
// RUN: blasst-opt %s -split-input-file --convert-attn-to-ws=overlap=false --blasst-insert-vote --blasst-insert-vote | FileCheck %s
// The vote goes right after the block's row max; the skippable steps are
// wrapped, every acquire/release stays outside; the pass is idempotent.

// CHECK-LABEL: ws.kernel @sparse
// The producer is untouched: it loads K and V for every block (prefill).
// CHECK: ws.role @producer
// CHECK-NOT: ws.vote
// CHECK: ws.role @consumer0
// CHECK: ws.kv_loop {
// CHECK-NEXT: ws.acquire @k_pipe
// CHECK-NEXT: ws.mma qk @q, @k -> @s
// CHECK-NEXT: ws.release @k_pipe
// CHECK-NEXT: ws.row_max @s
// CHECK-NEXT: ws.vote @s{{$}}
// CHECK-NEXT: ws.unless_skipped {
// CHECK-NEXT: ws.softmax_update @s
// CHECK-NEXT: ws.exp2_store_p @s -> @p
// CHECK-NEXT: ws.correct @o
// CHECK-NEXT: }
// CHECK-NEXT: ws.acquire @v_pipe
// CHECK-NEXT: ws.unless_skipped {
// CHECK-NEXT: ws.mma pv @p, @v -> @o
// CHECK-NEXT: }
// CHECK-NEXT: ws.release @v_pipe
// CHECK-NEXT: }
// CHECK-NEXT: ws.release @q_pipe
// CHECK-NEXT: ws.epilogue @o
// CHECK-COUNT-1: ws.vote
func.func @sparse(%q: memref<?x?x8x64xbf16>, %k: memref<?x?x8x64xbf16>, %v: memref<?x?x8x64xbf16>, %o: memref<?x?x8x64xbf16>) {
  attn.attention %q, %k, %v -> %o spec(<head_dim = 64, q_heads = 8, kv_heads = 8, sparsity = blasst(ln_lambda = -8.0)>) : memref<?x?x8x64xbf16>, memref<?x?x8x64xbf16>, memref<?x?x8x64xbf16>, memref<?x?x8x64xbf16>
  return
}

// -----

// With statistics the vote counts visited and skipped blocks.
// CHECK-LABEL: ws.kernel @stats
// CHECK: ws.vote @s {stats}
func.func @stats(%q: memref<?x?x8x64xbf16>, %k: memref<?x?x8x64xbf16>, %v: memref<?x?x8x64xbf16>, %o: memref<?x?x8x64xbf16>, %s: memref<?x8x2xi64>) {
  attn.attention %q, %k, %v -> %o stats(%s : memref<?x8x2xi64>) spec(<head_dim = 64, q_heads = 8, kv_heads = 8, sparsity = blasst(a = 16.0), stats = true>) : memref<?x?x8x64xbf16>, memref<?x?x8x64xbf16>, memref<?x?x8x64xbf16>, memref<?x?x8x64xbf16>
  return
}

// -----

// No sparsity policy: nothing changes.
// CHECK-LABEL: ws.kernel @dense
// CHECK-NOT: ws.vote
// CHECK-NOT: ws.unless_skipped
// CHECK: ws.epilogue
func.func @dense(%q: memref<?x?x8x64xbf16>, %k: memref<?x?x8x64xbf16>, %v: memref<?x?x8x64xbf16>, %o: memref<?x?x8x64xbf16>) {
  attn.attention %q, %k, %v -> %o spec(<head_dim = 64, q_heads = 8, kv_heads = 8>) : memref<?x?x8x64xbf16>, memref<?x?x8x64xbf16>, memref<?x?x8x64xbf16>, memref<?x?x8x64xbf16>
  return
}
