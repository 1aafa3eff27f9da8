// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-insert-vote | FileCheck %s
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-insert-vote --blasst-v-on-demand | FileCheck %s --check-prefix=VOD
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-insert-vote "--blasst-v-on-demand=k-ahead=1" | FileCheck %s --check-prefix=K1
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-insert-vote --blasst-v-on-demand --blasst-verify-sync --ws-print-protocol 2>&1 | FileCheck %s --check-prefix=PROTO
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-insert-vote "--blasst-v-on-demand=k-ahead=5" 2>&1 | FileCheck %s --check-prefix=DEEPK
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-insert-vote "--blasst-v-on-demand=v-first=false speculate-after=2" --blasst-verify-sync | FileCheck %s --check-prefix=KFIRST
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-insert-vote "--blasst-v-on-demand=v-first=maybe" 2>&1 | FileCheck %s --check-prefix=BADVF
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-insert-vote "--blasst-v-on-demand=speculate-after=4" --blasst-verify-sync | FileCheck %s --check-prefix=SPEC
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-insert-vote "--blasst-v-on-demand=speculate-after=4 defer-pv=true" 2>&1 | FileCheck %s --check-prefix=SPECERR
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-insert-vote "--blasst-v-on-demand=defer-pv=false" --blasst-verify-sync | FileCheck %s --check-prefix=NODEFER
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-insert-vote "--blasst-v-on-demand=defer-pv=later" 2>&1 | FileCheck %s --check-prefix=BADDEFER
// BADDEFER: blasst-v-on-demand: defer-pv must be true, false or auto, got 'later'
// KFIRST: v_speculate_after = 2 : i64
// KFIRST: ws.kv_loop {
// KFIRST-NEXT: ws.acquire @k_pipe {ahead = 4 : i64}
// KFIRST-NEXT: ws.tma_load k -> @k via @k_pipe {ahead = 4 : i64}
// KFIRST-NEXT: ws.release @k_pipe {ahead = 4 : i64}
// KFIRST-NEXT: ws.await_vote {speculate_after = 2 : i64, stats}
// KFIRST-NEXT: ws.acquire @v_pipe
// BADVF: error: blasst-v-on-demand: v-first must be true, false or auto, got 'maybe'
// BLASST decode (phase = decode, GQA 32/8 packed 4 q heads x 16 tokens per
// 64-row tile, split KV): the one consumer votes after each block's row max
// over all the tile's packed rows (one warpgroup: every row shares the P V);
// the softmax, correction and P V of a skipped block are left out. Decode's
// load role streams K as many blocks ahead as the K ring is deep (4 stages
// for BLASST decode at head_dim 128), so a run of skipped blocks keeps 4 K
// tiles in flight; V of block n is copied only when the vote kept it.

// CHECK-LABEL: ws.kernel @gqa_kernel target = sm_90a, block_m = 64, block_n = 64, spec = <{{.*}}phase = decode{{.*}}> q_group = 4 split_kv merge_kernel split_chunk = 1 schedule {{{.*}}stages = 4
// CHECK: ws.role @consumer0 compute warps [4, 8) regs 240 rows [0, 64)
// CHECK: ws.kv_loop {
// CHECK: ws.unless_skipped {
// CHECK-NEXT: ws.mma pv
// CHECK: ws.row_max @s {ahead = 1 : i64}
// CHECK-NEXT: ws.vote @s {stats}
// CHECK-NEXT: ws.unless_skipped attributes {fuse_next} {
// CHECK-NEXT: ws.softmax_update
// CHECK: ws.unless_skipped {
// CHECK-NEXT: ws.correct @o

// VOD-LABEL: ws.kernel @gqa_kernel
// VOD-SAME: defer_pv = true
// VOD: ws.role @producer load warps [0, 4) regs 24 {
// VOD: ws.tma_load q -> @q via @q_pipe
// VOD: ws.acquire @k_pipe{{$}}
// VOD-NEXT: ws.tma_load k -> @k via @k_pipe{{$}}
// VOD-NEXT: ws.release @k_pipe{{$}}
// VOD-NEXT: ws.acquire @k_pipe {ahead = 1 : i64}
// VOD-NEXT: ws.tma_load k -> @k via @k_pipe {ahead = 1 : i64}
// VOD-NEXT: ws.release @k_pipe {ahead = 1 : i64}
// VOD-NEXT: ws.acquire @k_pipe {ahead = 2 : i64}
// VOD-NEXT: ws.tma_load k -> @k via @k_pipe {ahead = 2 : i64}
// VOD-NEXT: ws.release @k_pipe {ahead = 2 : i64}
// VOD-NEXT: ws.acquire @k_pipe {ahead = 3 : i64}
// VOD-NEXT: ws.tma_load k -> @k via @k_pipe {ahead = 3 : i64}
// VOD-NEXT: ws.release @k_pipe {ahead = 3 : i64}
// V first (decode): V(n) after its votes, then K(n + 4) (K(n + 2) while
// the last 4 blocks were kept: blasst-k-kept-ahead.mlir); no speculation
// (the decode default, from the schedule record): P V is deferred instead.
// VOD-NEXT: ws.kv_loop {
// VOD-NEXT: ws.await_vote {stats}
// VOD-NEXT: ws.acquire @v_pipe
// VOD-NEXT: ws.tma_load v -> @v via @v_pipe {on_demand}
// VOD-NEXT: ws.release @v_pipe
// VOD-NEXT: ws.acquire @k_pipe {ahead = 4 : i64, kept_ahead = 2 : i64, kept_run = 6 : i64}
// VOD-NEXT: ws.tma_load k -> @k via @k_pipe {ahead = 4 : i64, kept_ahead = 2 : i64, kept_run = 6 : i64}
// VOD-NEXT: ws.release @k_pipe {ahead = 4 : i64, kept_ahead = 2 : i64, kept_run = 6 : i64}
// The deferred P V (defer-pv, auto for decode without speculation): block
// n - 1's V, P V and release; block n's correction under its own decision,
// between the fused softmax and pack_p regions of block n + 1.
// VOD: ws.role @consumer0
// VOD: ws.kv_loop {
// VOD-NEXT: ws.acquire @k_pipe {ahead = 1 : i64}
// VOD-NEXT: ws.mma qk @q, @k -> @s {ahead = 1 : i64, async}
// VOD-NEXT: ws.acquire @v_pipe {ahead = -1 : i64}
// VOD-NEXT: ws.unless_skipped attributes {ahead = -1 : i64} {
// VOD-NEXT: ws.mma pv @p, @v -> @o {ahead = -1 : i64, async}
// VOD: ws.vote @s {publish}
// VOD-NEXT: ws.unless_skipped attributes {fuse_next} {
// VOD-NEXT: ws.softmax_update @s
// VOD-NEXT: ws.exp2 @s {guarded}
// VOD-NEXT: }
// VOD-NEXT: ws.mma_wait{{$}}
// VOD-NEXT: ws.release @v_pipe {ahead = -1 : i64}
// VOD-NEXT: ws.unless_skipped attributes {ahead = 0 : i64} {
// VOD-NEXT: ws.correct @o {ahead = 0 : i64}
// VOD-NEXT: }
// VOD-NEXT: ws.unless_skipped {
// VOD-NEXT: ws.pack_p @s -> @p
// VOD-NEXT: }
// VOD-NEXT: }

// Speculation asked for: P V stays in its block (auto), or an error with
// the reason (defer-pv=true).
// SPEC: ws.await_vote {speculate_after = 4 : i64, stats}
// SPEC-NOT: ahead = -1
// SPECERR: error: 'ws.kernel' op blasst-v-on-demand: defer-pv needs speculate-after 0 (got 4): a speculated V(n) is copied before the votes on n are read
// NODEFER-NOT: ahead = -1

// k-ahead=1: prefill's shape (K one block ahead), V first.
// K1: ws.release @k_pipe{{$}}
// K1-NEXT: ws.kv_loop {
// K1-NEXT: ws.await_vote
// K1: ws.release @v_pipe
// K1-NEXT: ws.acquire @k_pipe {ahead = 1 : i64}

// The protocol: prologue copies on blocks 0..3, the loop's on n + 4.
// PROTO: role @producer
// PROTO: tma_load block first writes @k
// PROTO: tma_load block first+3 writes @k
// PROTO: tma_load block n+4 writes @k
// PROTO-NOT: error

// DEEPK: blasst-v-on-demand: k-ahead must be in [1, 4] (the depth of pipe @k_pipe), got 5
func.func @gqa(%q: memref<?x?x32x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x32x128xbf16>, %s: memref<?x32x2xi64>) {
  attn.attention %q, %k, %v -> %o stats(%s : memref<?x32x2xi64>) spec(<head_dim = 128, q_heads = 32, kv_heads = 8, causal = true, phase = decode, sparsity = blasst(ln_lambda = -8.0), stats = true>) : memref<?x?x32x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x32x128xbf16>
  return
}
