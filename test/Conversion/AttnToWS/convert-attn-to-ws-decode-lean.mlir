// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a lean=true" | FileCheck %s
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a lean=true kv-cp-async=false" | FileCheck %s --check-prefix=TMA
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a lean=true" --blasst-verify-sync=report 2>&1 >/dev/null | FileCheck %s --check-prefix=SYNC
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a lean=true" --blasst-verify-sync --convert-ws-to-nvvm | FileCheck %s --check-prefix=LLVM
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a lean=true persistent=false" 2>&1 | FileCheck %s --check-prefix=NOTPERSISTENT
// RUN: sed -e 's/phase = decode/phase = decode, sparsity = blasst(ln_lambda = -8.0)/' %s | not blasst-opt --convert-attn-to-ws="target=sm_90a lean=true" 2>&1 | FileCheck %s --check-prefix=SPARSE
// RUN: sed -e 's/, phase = decode//' %s | not blasst-opt --convert-attn-to-ws="target=sm_90a lean=true" 2>&1 | FileCheck %s --check-prefix=PREFILL
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a lean=maybe" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a lean=true kv-splits=4" 2>&1 | FileCheck %s --check-prefix=SPLITS
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a lean=true" | sed -e 's/ persistent lean / lean /' | not blasst-opt 2>&1 | FileCheck %s --check-prefix=VERIFY
// RUN: sed -e 's/x128xbf16/x64xbf16/g; s/head_dim = 128/head_dim = 64/' %s | blasst-opt --convert-attn-to-ws="target=sm_90a lean=true" --blasst-verify-sync=report 2>&1 >/dev/null | FileCheck %s --check-prefix=SYNC
// RUN: sed -e 's/phase = decode/phase = decode, kv_cache = paged(page = 16)/' %s | blasst-opt --convert-attn-to-ws="target=sm_90a lean=true" | FileCheck %s --check-prefix=PAGED
// RUN: sed -e 's/x128xbf16/x256xbf16/g; s/head_dim = 128/head_dim = 256/' %s | blasst-opt --convert-attn-to-ws="target=sm_90a lean=true" | FileCheck %s --check-prefix=HD256
// RUN: sed -e 's/x128xbf16/x256xbf16/g; s/head_dim = 128/head_dim = 256/' %s | blasst-opt --convert-attn-to-ws="target=sm_90a lean=true" --blasst-verify-sync=report 2>&1 >/dev/null | FileCheck %s --check-prefix=SYNC
// RUN: sed -e 's/x128xbf16/x256xbf16/g; s/head_dim = 128/head_dim = 256/' %s | not blasst-opt --convert-attn-to-ws="target=sm_90a persistent=true" 2>&1 | FileCheck %s --check-prefix=HD256WALK
// RUN: sed -e 's/phase = decode/phase = decode, kv_cache = paged(page = 16)/' %s | blasst-opt --convert-attn-to-ws="target=sm_90a lean=true" | sed -e 's/ persistent lean / persistent /' | not blasst-opt 2>&1 | FileCheck %s --check-prefix=PAGEDBAD
// RUN: sed -e 's/phase = decode/phase = decode, kv_lengths = per_sequence/' %s | blasst-opt --convert-attn-to-ws="target=sm_90a lean=true" --blasst-verify-sync=report 2>&1 >/dev/null | FileCheck %s --check-prefix=SYNC
// RUN: sed -e 's/phase = decode/phase = decode, kv_lengths = per_sequence/' %s | blasst-opt --convert-attn-to-ws="target=sm_90a lean=true" --blasst-verify-sync --convert-ws-to-nvvm | FileCheck %s --check-prefix=PERSEQ
// RUN: sed -e 's/phase = decode/phase = decode, kv_lengths = per_sequence/' %s | blasst-opt --convert-attn-to-ws="target=sm_90a lean=true" | sed -e 's/ persistent lean / persistent /' | not blasst-opt 2>&1 | FileCheck %s --check-prefix=PAGEDBAD
// Lean decode (docs/design.md "Lean decode"): persistent decode CTAs, one
// per SM, each an even share of the launch's KV blocks across tile
// boundaries; each tile merges the parts its CTAs wrote.

// CHECK: ws.kernel @gqa_kernel
// CHECK-SAME: persistent lean q_group = 4 split_kv
// CHECK-SAME: kv_cp_async = true
// CHECK-SAME: lean = true
// CHECK-SAME: persistent = true
// CHECK-SAME: stages = 3
// CHECK: ws.pipe @k_pipe depth 3 producer @producer consumers [@consumer0] buffers [@k] cp_async
// CHECK: ws.pipe @v_pipe depth 3 producer @producer consumers [@consumer0] buffers [@v] cp_async
// No drain in lean CTAs (the split grid's load role has one): the next
// item's setup would wait for the consumer (0.5% slower, session 38).
// CHECK: ws.role @producer load
// CHECK-NOT: drain
// CHECK: ws.role @consumer0

// TMA on request (lean's copies before session 29).
// TMA: ws.pipe @k_pipe depth 2 producer @producer consumers [@consumer0] buffers [@k] tx_bytes 16384
// TMA-NOT: drain

// SYNC: remark: synchronisation verified ({{[0-9]+}} states): deadlock-free

// The share: W = batch (parameter 20) x KV heads x query tiles x ceil(seq_kv
// / 64) blocks, per = max(1, ceil(W / nctaid.x)); the CTA walks the tiles its
// blocks [ctaid.x per, min(+ per, W)) touch, one after another.
// Lean CTAs copy K/V by cp.async (the pointers and strides, 22-29).
// LLVM-LABEL: llvm.func @gqa_kernel(
// LLVM-SAME: %arg19: i32, %arg20: i32, %arg21: i32, %arg22: !llvm.ptr, %arg23: !llvm.ptr
// LLVM-SAME: %arg29: i64)
// LLVM-SAME: blasst.kv_cp_async
// LLVM-SAME: blasst.lean
// LLVM-SAME: blasst.persistent
// LLVM: %[[TILES:[0-9]+]] = arith.muli %arg20, %{{[0-9]+}} : i32
// LLVM: %[[C:[0-9]+]] = nvvm.read.ptx.sreg.nctaid.x : i32
// LLVM: nvvm.read.ptx.sreg.ctaid.x : i32
// LLVM: %[[U:[0-9]+]] = arith.divui %{{[0-9]+}}, %c64_i32{{.*}} : i32
// LLVM: %[[W:[0-9]+]] = arith.muli %[[TILES]], %[[U]] : i32
// LLVM: %[[PER:[0-9]+]] = arith.divui %{{[0-9]+}}, %[[C]] : i32
// LLVM: arith.maxui %[[PER]], %c1_i32{{.*}} : i32
// LLVM: scf.for %{{.*}} = %{{[0-9]+}} to %{{[0-9]+}} step %c1_i32{{.*}} iter_args

// NOTPERSISTENT: error: 'attn.attention' op decode schedule: lean=true with persistent=false: lean is how persistent decode CTAs share the KV blocks
// SPARSE: error: 'attn.attention' op decode schedule: persistent=true: persistent decode CTAs are implemented for dense attention
// PREFILL: error: 'attn.attention' op lean=true is an sm_90a decode schedule (CTAs sharing the KV blocks of every tile)
// BAD: lean
// SPLITS: error: 'attn.attention' op decode schedule: lean=true with kv-splits=4: lean CTAs share the KV blocks evenly (one per SM); they take no split count
// Head_dim 64 (128-key blocks) and a paged cache of one length: lean too
// (each part reads its tile's table row).
// PAGED: ws.kernel @gqa_kernel
// PAGED-SAME: persistent lean q_group = 4 split_kv page_size = 16
// Head_dim 256: 32-key blocks in 5 stages, both warpgroups at 256
// registers (no setmaxnreg; with the split grid's 64-key blocks in 2
// stages the compute warpgroup spilled 340 bytes).
// HD256: ws.kernel @gqa_kernel
// HD256-SAME: persistent lean q_group = 4 split_kv
// HD256-SAME: block_n = 32
// HD256-SAME: consumer_regs = 256
// HD256-SAME: producer_regs = 256
// HD256-SAME: stages = 5
// HD256: ws.pipe @k_pipe depth 5 producer @producer consumers [@consumer0] buffers [@k] cp_async
// Persistent CTAs walking the splits stay at head_dim 128.
// HD256WALK: error: 'attn.attention' op decode schedule: persistent=true: persistent decode CTAs are available at head_dim 128, lean CTAs at 64, 128 and 256
// PAGEDBAD: error: 'ws.kernel' op persistent with q_group needs split_kv over one contiguous range per split (no split_chunk; per_seq_kv or page_size only with lean)
// Per-sequence lengths: the shares follow each sequence's blocks; a part
// whose tile spans CTAs writes slot c (the part holding the CTA's first
// block) or C + c (its last tile's) of 2 C (SM90Decode.cpp).
// PERSEQ-LABEL: llvm.func @gqa_kernel(
// PERSEQ-SAME: blasst.per_seq_kv
// PERSEQ: %[[C:[0-9]+]] = nvvm.read.ptx.sreg.nctaid.x : i32
// PERSEQ: arith.muli %c2_i64{{.*}}, %{{[0-9]+}} : i64
// VERIFY: error: 'ws.kernel' op lean shares KV blocks among persistent decode CTAs: it needs persistent and q_group
func.func @gqa(%q: memref<?x?x32x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x32x128xbf16>) {
  attn.attention %q, %k, %v -> %o spec(<head_dim = 128, q_heads = 32, kv_heads = 8, phase = decode>) : memref<?x?x32x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x32x128xbf16>
  return
}
