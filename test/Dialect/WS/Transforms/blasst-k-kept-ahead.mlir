// The K copy depth of BLASST decode follows the decisions
// (blasst-v-on-demand's k-kept-ahead / k-kept-run, ws.tma_load's kept_ahead /
// kept_run): while the last 6 blocks were kept, K is copied 2 blocks ahead
// (as dense decode streams), after a skipped block 4 ahead.
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-insert-vote --blasst-v-on-demand --blasst-verify-sync | FileCheck %s
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-insert-vote "--blasst-v-on-demand=k-kept-ahead=0" --blasst-verify-sync | FileCheck %s --check-prefix=OFF
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-insert-vote "--blasst-v-on-demand=k-kept-ahead=3 k-kept-run=2" --blasst-verify-sync | FileCheck %s --check-prefix=K3
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-insert-vote "--blasst-v-on-demand=k-kept-ahead=1 k-kept-run=1" --blasst-verify-sync | FileCheck %s --check-prefix=K1
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-insert-vote "--blasst-v-on-demand=speculate-after=4" | FileCheck %s --check-prefix=SPEC
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-insert-vote "--blasst-v-on-demand=k-kept-ahead=4" 2>&1 | FileCheck %s --check-prefix=DEEP
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-insert-vote "--blasst-v-on-demand=k-kept-ahead=2 v-first=false" 2>&1 | FileCheck %s --check-prefix=KFIRST
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-insert-vote "--blasst-v-on-demand=k-kept-ahead=2 speculate-after=2" 2>&1 | FileCheck %s --check-prefix=SPECERR
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-insert-vote "--blasst-v-on-demand=k-kept-run=9" 2>&1 | FileCheck %s --check-prefix=RUN9
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-insert-vote "--blasst-v-on-demand=k-kept-ahead=-2" 2>&1 | FileCheck %s --check-prefix=RUN9
// A run length where the K depth does not follow the decisions (off, or
// speculation) is an error, not ignored.
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-insert-vote "--blasst-v-on-demand=k-kept-ahead=0 k-kept-run=2" 2>&1 | FileCheck %s --check-prefix=RUNOFF
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-insert-vote "--blasst-v-on-demand=speculate-after=4 k-kept-run=2" 2>&1 | FileCheck %s --check-prefix=RUNAUTO
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-insert-vote --blasst-v-on-demand --blasst-verify-sync --convert-ws-to-nvvm | FileCheck %s --check-prefix=LLVM
// The checker follows the conditions: without the prologue's copy of block 3
// it is never copied (block 3 would be copied 2 ahead only after 6 kept
// blocks, and the blocks before block 0 count as skipped).
// It holds the decisions the two windows read ([0, r) and [D, D + r) back,
// D = ahead - kept_ahead) as the D - 1 before the latest and a saturated
// count of kept ones (the lowering carries each): the longest run, 8, and
// the same mutation there.
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-insert-vote "--blasst-v-on-demand=k-kept-run=8" "--blasst-verify-sync=stats" -o /dev/null 2>&1 | FileCheck %s --check-prefix=R8
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-insert-vote "--blasst-v-on-demand=k-kept-run=8" | sed '/@k_pipe {ahead = 3 : i64}$/d' | not blasst-opt --blasst-verify-sync 2>&1 | FileCheck %s --check-prefix=NOK3
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-insert-vote --blasst-v-on-demand | sed '/@k_pipe {ahead = 3 : i64}$/d' | not blasst-opt --blasst-verify-sync 2>&1 | FileCheck %s --check-prefix=NOK3

// CHECK-LABEL: ws.kernel @gqa_kernel
// CHECK-SAME: k_kept_ahead = 2 : i64, k_kept_run = 6 : i64
// CHECK: ws.role @producer load
// The prologue copies blocks 0 .. 3 (the blocks before block 0 count as
// skipped, so the loop starts 4 ahead).
// CHECK: ws.tma_load k -> @k via @k_pipe {ahead = 3 : i64}
// CHECK: ws.kv_loop {
// CHECK-NEXT: ws.await_vote {stats}
// CHECK-NEXT: ws.acquire @v_pipe
// CHECK-NEXT: ws.tma_load v -> @v via @v_pipe {on_demand}
// CHECK-NEXT: ws.release @v_pipe
// CHECK-NEXT: ws.acquire @k_pipe {ahead = 4 : i64, kept_ahead = 2 : i64, kept_run = 6 : i64}
// CHECK-NEXT: ws.tma_load k -> @k via @k_pipe {ahead = 4 : i64, kept_ahead = 2 : i64, kept_run = 6 : i64}
// CHECK-NEXT: ws.release @k_pipe {ahead = 4 : i64, kept_ahead = 2 : i64, kept_run = 6 : i64}
// CHECK-NEXT: }

// OFF-NOT: kept_ahead
// OFF-NOT: k_kept_ahead

// R8: verify-sync @gqa_kernel: {{[0-9]+}} states

// K3: k_kept_ahead = 3 : i64, k_kept_run = 2 : i64
// K3: ws.acquire @k_pipe {ahead = 4 : i64, kept_ahead = 3 : i64, kept_run = 2 : i64}
// K1: ws.acquire @k_pipe {ahead = 4 : i64, kept_ahead = 1 : i64, kept_run = 1 : i64}

// Speculation asked for: the depth stays fixed (auto).
// SPEC-NOT: kept_ahead
// SPEC: ws.await_vote {speculate_after = 4 : i64, stats}
// SPEC-NOT: kept_ahead

// DEEP: error: 'ws.kernel' op blasst-v-on-demand: k-kept-ahead = 4 needs K copied further ahead (k-ahead 4), V first (the K copies after the votes they follow) and no speculation (speculate-after 0)
// KFIRST: error: 'ws.kernel' op blasst-v-on-demand: k-kept-ahead = 2 needs K copied further ahead (k-ahead 4), V first
// SPECERR: and no speculation (speculate-after 2)
// RUN9: blasst-v-on-demand: k-kept-ahead must be -1 (the kernel's default), 0 (off) or more, and k-kept-run in [1, 8]
// RUNOFF: error: 'ws.kernel' op blasst-v-on-demand: k-kept-run = 2 has no effect: the K copy depth does not follow the decisions here (k-kept-ahead = 0)
// RUNAUTO: error: 'ws.kernel' op blasst-v-on-demand: k-kept-run = 2 has no effect: the K copy depth does not follow the decisions here (k-kept-ahead resolves to 0 for this kernel: it is on by default for decode kernels with V first, K more than 2 blocks ahead and no speculation)

// The lowering: the load role carries 5 decisions (blocks n - 1 .. n - 5)
// and runs the K copy twice: block n + 2 when blocks n - 5 .. n - 2 were
// kept, block n + 4 unless blocks n - 3 .. n were.
// LLVM: scf.for {{.*}} iter_args({{.*}}%{{.*}} = %true{{.*}}, %{{.*}} = %true{{.*}}, %{{.*}} = %true{{.*}}, %{{.*}} = %true{{.*}}, %{{.*}} = %true{{.*}}) -> ({{.*}}i1, i1, i1, i1, i1)

// NOK3: error: 'ws.kernel' op fails sync verification: deadlock: no role can step
// NOK3: @producer: {{.*}}[not run: a block before it was skipped]
// NOK3-SAME: blocked at ws.await_vote
// NOK3: @consumer0: {{.*}}blocked at ws.acquire @k_pipe (block 3)

func.func @gqa(%q: memref<?x?x32x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x32x128xbf16>, %s: memref<?x32x2xi64>) {
  attn.attention %q, %k, %v -> %o stats(%s : memref<?x32x2xi64>) spec(<head_dim = 128, q_heads = 32, kv_heads = 8, causal = true, phase = decode, sparsity = blasst(ln_lambda = -8.0), stats = true>) : memref<?x?x32x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x32x128xbf16>
  return
}
