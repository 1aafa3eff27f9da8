// RUN: blasst-opt %s -split-input-file --convert-attn-to-ws --blasst-insert-vote --blasst-v-on-demand | FileCheck %s
// RUN: blasst-opt %s -split-input-file --convert-attn-to-ws --blasst-insert-vote --blasst-v-on-demand=mode=auto | FileCheck %s --check-prefix=AUTO
// speculate-after=0: every block from 1 on waits for its votes; 3: after
// three kept blocks in a row (the default is 2; printed and parsed back).
// RUN: blasst-opt %s -split-input-file --convert-attn-to-ws --blasst-insert-vote --blasst-v-on-demand=speculate-after=0 | FileCheck %s --check-prefix=WAIT
// RUN: blasst-opt %s -split-input-file --convert-attn-to-ws --blasst-insert-vote --blasst-v-on-demand=speculate-after=3 | blasst-opt -split-input-file | FileCheck %s --check-prefix=SPEC3
// mode=false rewrites nothing; the schedule record says V is copied for
// every block (convert-attn-to-ws recorded the default, V on demand here)
// and drops the speculation depth. A rewrite records v_on_demand = true.
// RUN: blasst-opt %s -split-input-file --convert-attn-to-ws --blasst-insert-vote --blasst-v-on-demand=mode=false | FileCheck %s --check-prefix=OFF
// RUN: not blasst-opt %s -split-input-file --convert-attn-to-ws --blasst-v-on-demand=mode=maybe 2>&1 | FileCheck %s --check-prefix=MODE
// OFF-LABEL: ws.kernel @sparse
// OFF-NOT: v_speculate_after
// OFF-SAME: v_on_demand = false
// OFF-NOT: on_demand}
// OFF-NOT: ws.await_vote
// MODE: blasst-v-on-demand: mode must be true, auto or false, got 'maybe'
// RUN: blasst-opt %s -split-input-file --convert-attn-to-ws --blasst-insert-vote --blasst-v-on-demand | FileCheck %s --check-prefix=REC
// REC-LABEL: ws.kernel @sparse
// REC-SAME: v_on_demand = true, v_speculate_after = 2 : i64
// WAIT: ws.await_vote{{$}}
// SPEC3: ws.await_vote {speculate_after = 3 : i64}
// The load role copies K one block ahead (block 0 before the loop), waits
// for the votes on block n and copies V of block n on demand; the votes
// publish their decisions. The consumers' steps do not change.

// CHECK-LABEL: ws.kernel @sparse
// CHECK: ws.role @producer load warps [0, 4) regs 24 {
// CHECK-NEXT: ws.acquire @q_pipe
// CHECK-NEXT: ws.tma_load q -> @q via @q_pipe
// CHECK-NEXT: ws.release @q_pipe
// CHECK-NEXT: ws.acquire @k_pipe{{$}}
// CHECK-NEXT: ws.tma_load k -> @k via @k_pipe{{$}}
// CHECK-NEXT: ws.release @k_pipe{{$}}
// CHECK-NEXT: ws.kv_loop {
// CHECK-NEXT: ws.acquire @k_pipe {ahead = 1 : i64}
// CHECK-NEXT: ws.tma_load k -> @k via @k_pipe {ahead = 1 : i64}
// CHECK-NEXT: ws.release @k_pipe {ahead = 1 : i64}
// CHECK-NEXT: ws.await_vote {speculate_after = 2 : i64}
// CHECK-NEXT: ws.acquire @v_pipe
// CHECK-NEXT: ws.tma_load v -> @v via @v_pipe {on_demand}
// CHECK-NEXT: ws.release @v_pipe
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK: ws.role @consumer0
// CHECK: ws.row_max @s {ahead = 1 : i64}
// CHECK-NEXT: ws.vote @s {publish}
// CHECK: ws.role @consumer1
// CHECK: ws.vote @s {publish}
// AUTO-LABEL: ws.kernel @sparse
// AUTO: ws.await_vote
// AUTO: ws.tma_load v -> @v via @v_pipe {on_demand}
// AUTO: ws.vote @s {publish}
func.func @sparse(%q: memref<?x?x8x128xbf16>, %k: memref<?x?x2x128xbf16>, %v: memref<?x?x2x128xbf16>, %o: memref<?x?x8x128xbf16>) {
  attn.attention %q, %k, %v -> %o spec(<head_dim = 128, q_heads = 8, kv_heads = 2, sparsity = blasst(ln_lambda = -8.0)>) : memref<?x?x8x128xbf16>, memref<?x?x2x128xbf16>, memref<?x?x2x128xbf16>, memref<?x?x8x128xbf16>
  return
}

// -----

// mode=auto leaves kernels where it does not apply as they are: here
// head_dim 256 (its consumers would spill); mode=true rewrites it.
// CHECK-LABEL: ws.kernel @wide
// CHECK: ws.await_vote
// CHECK: ws.vote @s {publish}
// AUTO-LABEL: ws.kernel @wide
// AUTO-NOT: ws.await_vote
// AUTO-NOT: {on_demand}
// AUTO: ws.vote @s{{$}}
func.func @wide(%q: memref<?x?x8x256xbf16>, %k: memref<?x?x2x256xbf16>, %v: memref<?x?x2x256xbf16>, %o: memref<?x?x8x256xbf16>) {
  attn.attention %q, %k, %v -> %o spec(<head_dim = 256, q_heads = 8, kv_heads = 2, sparsity = blasst(ln_lambda = -8.0)>) : memref<?x?x8x256xbf16>, memref<?x?x2x256xbf16>, memref<?x?x2x256xbf16>, memref<?x?x8x256xbf16>
  return
}
