// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a balanced-splits=true" | FileCheck %s
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a balanced-splits=true" --blasst-insert-vote --blasst-v-on-demand --blasst-verify-sync=report 2>&1 >/dev/null | FileCheck %s --check-prefix=SYNC
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a balanced-splits=true" --blasst-insert-vote --blasst-v-on-demand --blasst-verify-sync --convert-ws-to-nvvm | FileCheck %s --check-prefix=LLVM
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a" | FileCheck %s --check-prefix=DEFAULT
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a balanced-splits=false" | FileCheck %s --check-prefix=GRID
// RUN: sed -e 's/, sparsity = blasst(ln_lambda = -8.0)//' %s | blasst-opt --convert-attn-to-ws="target=sm_90a" | FileCheck %s --check-prefix=DENSE
// RUN: sed -e 's/, kv_lengths = per_sequence//' %s | not blasst-opt --convert-attn-to-ws="target=sm_90a balanced-splits=true" 2>&1 | FileCheck %s --check-prefix=UNIFORM
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a balanced-splits=true persistent=true" 2>&1 | FileCheck %s --check-prefix=UNIFORM
// RUN: sed -e 's/, phase = decode, kv_lengths = per_sequence//' %s | not blasst-opt --convert-attn-to-ws="target=sm_90a balanced-splits=true" 2>&1 | FileCheck %s --check-prefix=PREFILL
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a balanced-splits=true" | sed -e 's/ per_seq_kv schedule/ schedule/' -e 's/kv_lengths = per_sequence>/kv_lengths = uniform>/' | not blasst-opt 2>&1 | FileCheck %s --check-prefix=VERIFY
// Decode over per-sequence lengths with splits that follow the lengths
// (ws.kernel balanced_splits): a 1-D grid; parameter 19 is the launch's CTA
// budget C, 20 the batch. Each CTA sums the sequences' blocks (W), takes
// per = max(1, ceil(W / C)), finds its sequence among the tiles' splits
// (sequence b's tiles take max(1, ceil(U_b / per)) each) and returns when
// it is past them; each warp reads 32 lengths a step, a lane each. With
// C = 1 every tile takes one split and the CTA is the tile. BLASST decode keeps its one-CTA-per-split schedule (V on
// demand, the votes); only where a CTA's tile and split come from changes.

// CHECK: ws.kernel @bal_kernel
// CHECK-SAME: q_group = 4 split_kv merge_kernel balanced_splits split_chunk = 1 per_seq_kv
// CHECK-SAME: balanced_splits = true
// CHECK-SAME: merge_kernel = true

// SYNC: remark: synchronisation verified ({{[0-9]+}} states): deadlock-free

// LLVM-LABEL: llvm.func @bal_kernel(
// LLVM-SAME: %arg19: i32, %arg20: i32, %arg21: i32)
// LLVM-SAME: blasst.balanced_splits
// LLVM-SAME: blasst.merge_kernel
// LLVM: nvvm.read.ptx.sreg.ctaid.x
// LLVM: %[[CTA:[0-9]+]] = nvvm.read.ptx.sreg.ctaid.x
// A budget of 1 (or -S: S splits per tile): no pass over the lengths.
// LLVM: %[[SEARCH:[0-9]+]] = arith.cmpi sgt, %arg19, %{{.*}} : i32
// LLVM: %[[S:[0-9]+]]:5 = scf.if %[[SEARCH]] -> (i32, i32, i32, i32, i32)
// Pass 1: W, a lane per sequence (32 a step), summed by shuffles.
// LLVM: scf.for %{{.*}} = %{{.*}} to %arg20 step %c32{{.*}} iter_args
// LLVM: llvm.load %{{[0-9]+}} invariant {alignment = 4 : i64} : !llvm.ptr<1> -> i32
// LLVM-COUNT-5: nvvm.shfl.sync bfly
// LLVM: %[[Q:[0-9]+]] = arith.divui %{{[0-9]+}}, %arg19 : i32
// LLVM: %[[PER:[0-9]+]] = arith.maxui %[[Q]], %{{.*}} : i32
// Pass 2: the sequence whose splits hold the CTA, its first CTA and count:
// a scan of the lanes' CTAs, the first lane past the CTA by ballot.
// The first 32 sequences' lengths come from pass 1.
// LLVM: scf.for %{{.*}} = %{{.*}} to %arg20 step %c32{{.*}} iter_args
// LLVM: scf.if
// LLVM: } else {
// LLVM: llvm.load %{{[0-9]+}} invariant {alignment = 4 : i64} : !llvm.ptr<1> -> i32
// LLVM: arith.divui %{{[0-9]+}}, %[[PER]] : i32
// LLVM-COUNT-5: nvvm.shfl.sync up
// LLVM: nvvm.vote.sync ballot
// LLVM: llvm.intr.cttz
// The found sequence's length comes from its lane.
// LLVM: %[[LENAT:[0-9]+]] = nvvm.shfl.sync idx %{{.*}}, %[[LEN:[0-9]+]], %{{[0-9]+}}
// LLVM: arith.select %{{[0-9]+}}, %[[LENAT]], %{{.*}} : i32
// LLVM: } else {
// LLVM: %[[NEG:[0-9]+]] = arith.subi %{{.*}}, %arg19 : i32
// LLVM: arith.maxsi %{{.*}}, %[[NEG]] : i32
// LLVM: arith.divui %[[CTA]], %{{.*}} : i32
// LLVM: %[[LIVE:[0-9]+]] = arith.cmpi ult, %[[CTA]], %[[S]]#0 : i32
// LLVM-NEXT: llvm.cond_br %[[LIVE]], ^bb1, ^bb2
// The search's length, or (budgets 1 and -S) one load, at most seq_kv.
// LLVM: ^bb1:
// LLVM: %[[KVLEN:[0-9]+]] = scf.if %[[SEARCH]] -> (i32)
// LLVM-NEXT: scf.yield %[[S]]#4 : i32
// LLVM-NEXT: } else {
// LLVM: llvm.load %{{[0-9]+}} invariant {alignment = 4 : i64} : !llvm.ptr<1> -> i32
// LLVM-NEXT: arith.minui %{{[0-9]+}}, %arg7 : i32
// The epilogue: a slot per CTA of the grid, the tile's first CTA's slots
// merged by its last split.
// LLVM: nvvm.read.ptx.sreg.nctaid.x
// LLVM: llvm.atomicrmw add
// LLVM: llvm.nvvm.barrier.cta.red.or.aligned.count
// LLVM: llvm.return
// LLVM: ^bb2:
// LLVM-NEXT: llvm.return
// The merge kernel merges the launches of a budget of -S (the split grid's
// slots): S = -parameter 19.
// LLVM: llvm.func @bal_kernel_merge(
// LLVM: nvvm.griddepcontrol wait
// LLVM: %[[NS:[0-9]+]] = arith.subi %c0_i32{{.*}}, %arg19 : i32
// LLVM-NEXT: arith.maxsi %{{.*}}, %[[NS]] : i32

// The default of BLASST decode over per-sequence lengths, with the merge
// kernel beside it (the runtime gives it the launches of a budget of -S);
// balanced-splits=false is the split grid; dense decode keeps the split
// grid with its lean entry.
// DEFAULT: q_group = 4 split_kv merge_kernel balanced_splits split_chunk = 1 per_seq_kv schedule
// DEFAULT-SAME: balanced_splits = true
// GRID: q_group = 4 split_kv merge_kernel split_chunk = 1 per_seq_kv schedule
// GRID-SAME: balanced_splits = false
// DENSE: q_group = 4 split_kv merge_kernel per_seq_kv schedule
// DENSE-NOT: balanced_splits
// DENSE-SAME: lean_entry = true
// UNIFORM: error: 'attn.attention' op decode schedule: balanced-splits=true shares the splits of a one-CTA-per-split grid by per-sequence lengths: it needs kv_lengths = per_sequence, without persistent or lean
// PREFILL: error: 'attn.attention' op balanced-splits=true is an sm_90a decode schedule (KV splits that follow per-sequence lengths)
// VERIFY: error: 'ws.kernel' op balanced_splits shares the CTAs of an sm_90a decode grid by per-sequence lengths: it needs q_group, split_kv and per_seq_kv, without persistent
func.func @bal(%q: memref<?x?x32x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x32x128xbf16>) {
  attn.attention %q, %k, %v -> %o spec(<head_dim = 128, q_heads = 32, kv_heads = 8, phase = decode, kv_lengths = per_sequence, sparsity = blasst(ln_lambda = -8.0)>) : memref<?x?x32x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x32x128xbf16>
  return
}
