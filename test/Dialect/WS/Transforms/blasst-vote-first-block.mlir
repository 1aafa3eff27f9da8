// The vote on each KV split's first block (blasst-insert-vote's
// vote-first-block, default with the sink seed): the running max is the
// sink's before the prologue's block, so block 0 is voted on like the
// loop's blocks; its softmax, P V, correction and V copy follow the
// decision, and the sync checker proves the kernel (the load role reads
// block 0's votes, phase n / 2 of the vote barrier n % 2).
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-insert-vote --blasst-v-on-demand --blasst-verify-sync | FileCheck %s
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a" "--blasst-insert-vote=vote-first-block=false" --blasst-v-on-demand --blasst-verify-sync | FileCheck %s --check-prefix=OFF
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a" "--blasst-insert-vote=sink-seed=false" | FileCheck %s --check-prefix=NOSINK
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-insert-vote --blasst-insert-vote | FileCheck %s --check-prefix=TWICE
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a" "--blasst-insert-vote=sink-seed=false vote-first-block=true" 2>&1 | FileCheck %s --check-prefix=NOSEED
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a" "--blasst-insert-vote=vote-first-block=maybe" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: sed 's/, sparsity = blasst(ln_lambda = -8.0), stats = true//; s/stats(%%s : memref<?x32x2xi64>) //' %s | not blasst-opt --convert-attn-to-ws="target=sm_90a" "--blasst-insert-vote=vote-first-block=true" 2>&1 | FileCheck %s --check-prefix=DENSE
// DENSE: error: 'ws.kernel' op blasst-insert-vote: vote-first-block votes on each KV split's first block; the kernel has no sparsity policy
//
// The other load and compute schedules prove too: speculation (P V in its
// block), K first, a fixed K depth, V always copied (no V on demand).
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-insert-vote "--blasst-v-on-demand=speculate-after=4" --blasst-verify-sync --convert-ws-to-nvvm -o /dev/null
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-insert-vote "--blasst-v-on-demand=v-first=false k-kept-ahead=0" --blasst-verify-sync --convert-ws-to-nvvm -o /dev/null
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-insert-vote --blasst-verify-sync --convert-ws-to-nvvm | FileCheck %s --check-prefix=NOVOD
//
// Lowering: the loop carries in block 0's decision (the prologue's vote,
// the first warpgroup AND reduction), published for block 0.
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-insert-vote --blasst-v-on-demand --blasst-verify-sync --convert-ws-to-nvvm | FileCheck %s --check-prefix=LLVM
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a" "--blasst-insert-vote=vote-first-block=false" --blasst-v-on-demand --convert-ws-to-nvvm | FileCheck %s --check-prefix=LLVMOFF
//
// The checker models the vote on block 0: with the consumer's vote on block
// n + 1 published before its wait for V(n - 1) (and P V after it), the vote
// on block 2 can overwrite block 0's before the load role read it.
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-insert-vote --blasst-v-on-demand | awk '/ws.kv_loop/ {l = 1} l && /ws.acquire @v_pipe {ahead = -1 : i64}/ {h = $0; next} l && /ws.unless_skipped attributes {ahead = -1 : i64}/ {g = 1} g {r = r $0 "\n"; if ($0 ~ /^ *}$/) g = 0; next} {sub(/ws.mma_wait {pending = 1 : i64}/, "ws.mma_wait"); print} l && /ws.vote @s {publish}/ && h != "" {print h; printf "%%s", r; h = ""}' | not blasst-opt --blasst-verify-sync 2>&1 | FileCheck %s --check-prefix=EARLY
// EARLY: error: 'ws.vote' op fails sync verification: vote slot overwritten: the decision on block 2 replaces the unread one on block 0

// CHECK-LABEL: ws.kernel @gqa_kernel
// CHECK-SAME: vote_first_block = true
// CHECK: ws.role @producer
// CHECK: ws.kv_loop {
// CHECK-NEXT: ws.await_vote {stats}
// CHECK-NEXT: ws.acquire @v_pipe
// CHECK-NEXT: ws.tma_load v -> @v via @v_pipe {on_demand}
// CHECK: ws.role @consumer0
// CHECK: ws.row_max @s {sink}
// CHECK-NEXT: ws.acquire @k_pipe{{$}}
// CHECK-NEXT: ws.mma qk @q, @k -> @s{{$}}
// CHECK-NEXT: ws.release @k_pipe{{$}}
// CHECK-NEXT: ws.row_max @s{{$}}
// CHECK-NEXT: ws.vote @s {publish}
// CHECK-NEXT: ws.unless_skipped {
// CHECK-NEXT: ws.softmax_update @s
// CHECK-NEXT: ws.exp2_store_p @s -> @p
// CHECK-NEXT: }
// CHECK-NEXT: ws.kv_loop {
// CHECK: ws.unless_skipped attributes {ahead = -1 : i64} {
// CHECK-NEXT: ws.mma pv @p, @v -> @o {ahead = -1 : i64, async}
// CHECK: ws.vote @s {publish}

// OFF-LABEL: ws.kernel @gqa_kernel
// OFF-SAME: vote_first_block = false
// OFF: ws.row_max @s{{$}}
// OFF-NEXT: ws.softmax_update @s
// OFF-NEXT: ws.exp2_store_p @s -> @p
// OFF-NEXT: ws.kv_loop {

// Without the sink seed (auto): no vote on block 0.
// NOSINK-LABEL: ws.kernel @gqa_kernel
// NOSINK-SAME: vote_first_block = false
// NOSINK: ws.row_max @s{{$}}
// NOSINK-NEXT: ws.softmax_update @s

// Run twice, the pass votes on block 0 once.
// TWICE: ws.row_max @s{{$}}
// TWICE-NEXT: ws.vote @s {stats}
// TWICE-NEXT: ws.unless_skipped {
// TWICE-NEXT: ws.softmax_update @s
// TWICE-NOT: ws.vote
// TWICE: ws.kv_loop {
// TWICE: ws.vote @s {stats}
// TWICE-NOT: ws.vote

// NOSEED: error: 'ws.kernel' op blasst-insert-vote: vote-first-block needs the sink seed (sink-seed): without it each split's running max is -inf at its first block, which a vote would always keep
// BAD: error: blasst-insert-vote: vote-first-block must be true, false or auto, got 'maybe'

// V always copied: the consumer votes on block 0 and counts it.
// NOVOD: llvm.func @gqa_kernel
// NOVOD-SAME: blasst.vote_first_block

// LLVM: llvm.func @gqa_kernel
// LLVM-SAME: blasst.vote_first_block
// LLVM: %[[FIRST:.*]] = llvm.call_intrinsic "llvm.nvvm.barrier.cta.red.and.aligned.count"
// LLVM: nvvm.mbarrier.arrive %{{.*}} : !llvm.ptr<7>
// LLVM: scf.for {{.*}} iter_args({{.*}} = %[[FIRST]],
// LLVM: llvm.call_intrinsic "llvm.nvvm.barrier.cta.red.and.aligned.count"

// LLVMOFF: llvm.func @gqa_kernel
// LLVMOFF-NOT: blasst.vote_first_block
// LLVMOFF-SAME: nvvm.kernel

func.func @gqa(%q: memref<?x?x32x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x32x128xbf16>, %s: memref<?x32x2xi64>) {
  attn.attention %q, %k, %v -> %o stats(%s : memref<?x32x2xi64>) spec(<head_dim = 128, q_heads = 32, kv_heads = 8, causal = true, phase = decode, sparsity = blasst(ln_lambda = -8.0), stats = true>) : memref<?x?x32x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x32x128xbf16>
  return
}

