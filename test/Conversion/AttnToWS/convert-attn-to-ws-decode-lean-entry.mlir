// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a" | FileCheck %s
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-verify-sync=report 2>&1 >/dev/null | FileCheck %s --check-prefix=SYNC
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-verify-sync --convert-ws-to-nvvm | FileCheck %s --check-prefix=LLVM
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a lean-entry=false" | FileCheck %s --check-prefix=OFF
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a kv-splits=4" | FileCheck %s --check-prefix=OFF
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a kv-cp-async=false" | FileCheck %s --check-prefix=OFF
// RUN: sed -e 's/phase = decode/phase = decode, kv_lengths = per_sequence/' %s | blasst-opt --convert-attn-to-ws="target=sm_90a" | FileCheck %s --check-prefix=PERSEQ
// RUN: sed -e 's/phase = decode/phase = decode, kv_cache = paged(page = 64)/' %s | blasst-opt --convert-attn-to-ws="target=sm_90a" | FileCheck %s --check-prefix=PAGED
// RUN: sed -e 's/phase = decode/phase = decode, kv_cache = paged(page = 16)/' %s | blasst-opt --convert-attn-to-ws="target=sm_90a" --blasst-verify-sync --convert-ws-to-nvvm | FileCheck %s --check-prefix=PAGEDLLVM
// RUN: sed -e 's/x128xbf16/x64xbf16/g; s/head_dim = 128/head_dim = 64/' %s | blasst-opt --convert-attn-to-ws="target=sm_90a" | FileCheck %s --check-prefix=HD64
// RUN: sed -e 's/x128xbf16/x64xbf16/g; s/head_dim = 128/head_dim = 64/' %s | blasst-opt --convert-attn-to-ws="target=sm_90a block-n=64" | FileCheck %s --check-prefix=OFF
// RUN: sed -e 's/x128xbf16/x256xbf16/g; s/head_dim = 128/head_dim = 256/' %s | blasst-opt --convert-attn-to-ws="target=sm_90a" | FileCheck %s --check-prefix=OFF
// RUN: sed -e 's/x128xbf16/x256xbf16/g; s/head_dim = 128/head_dim = 256/' %s | blasst-opt --convert-attn-to-ws="target=sm_90a block-n=32 stages=5" | FileCheck %s --check-prefix=HD256
// RUN: sed -e 's/x128xbf16/x256xbf16/g; s/head_dim = 128/head_dim = 256/' %s | not blasst-opt --convert-attn-to-ws="target=sm_90a lean-entry=true" 2>&1 | FileCheck %s --check-prefix=ERR
// RUN: sed -e 's/x128xbf16/x64xbf16/g; s/head_dim = 128/head_dim = 64/' %s | not blasst-opt --convert-attn-to-ws="target=sm_90a lean-entry=true block-n=64" 2>&1 | FileCheck %s --check-prefix=ERR
// RUN: sed -e 's/phase = decode/phase = decode, sparsity = blasst(ln_lambda = -8.0)/' %s | blasst-opt --convert-attn-to-ws="target=sm_90a" | FileCheck %s --check-prefix=OFF
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a lean=true" | FileCheck %s --check-prefix=LEAN
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a lean-entry=true kv-splits=4" 2>&1 | FileCheck %s --check-prefix=ERR
// RUN: sed -e 's/phase = decode/phase = decode, kv_lengths = per_sequence/' %s | blasst-opt --convert-attn-to-ws="target=sm_90a lean-entry=true" --blasst-verify-sync --convert-ws-to-nvvm | FileCheck %s --check-prefix=PERSEQLLVM
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a lean-entry=maybe" 2>&1 | FileCheck %s --check-prefix=BAD
// The lean entry (docs/design.md "Lean decode"): dense decode with one CTA
// per split carries `<kernel>_lean`, the same spec with lean CTAs, which the
// runtime launches where the split grid's waves are ragged.

// CHECK: ws.launch @gqa_kernel(
// CHECK: ws.kernel @gqa_kernel
// CHECK-SAME: q_group = 4 split_kv merge_kernel
// CHECK-SAME: lean_entry = true
// CHECK: ws.kernel @gqa_kernel_lean
// CHECK-SAME: persistent lean q_group = 4 split_kv
// CHECK-SAME: lean = true
// CHECK-SAME: lean_entry = false
// CHECK-SAME: merge_kernel = false

// Per-sequence lengths: the entry too (the runtime takes it for every
// launch: its shares follow the lengths).
// PERSEQ: ws.kernel @gqa_kernel
// PERSEQ-SAME: per_seq_kv
// PERSEQ-SAME: lean_entry = true
// PERSEQ: ws.kernel @gqa_kernel_lean
// PERSEQ-SAME: persistent lean q_group = 4 split_kv per_seq_kv

// Its CTAs find their tiles from the lengths: the launch's blocks (one pass
// over the batch, a length each), then the first and last tile and the
// first tile's prefix (a second pass); the item loop carries the prefix
// (t0's sequence and its first block) and walks it to each tile's sequence.
// PERSEQLLVM-LABEL: llvm.func @gqa_kernel_lean(
// PERSEQLLVM: nvvm.read.ptx.sreg.nctaid.x
// PERSEQLLVM: scf.for %{{.*}} = %{{.*}} to %arg20 step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (i32)
// PERSEQLLVM: llvm.load %{{.*}} invariant
// PERSEQLLVM: %[[S:[0-9]+]]:5 = scf.for %{{.*}} = %{{.*}} to %arg20 step
// PERSEQLLVM: llvm.load %{{.*}} invariant
// PERSEQLLVM: scf.for %{{.*}} = %[[S]]#1 to %[[S]]#2 step %{{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %[[CB:[a-z0-9]+]] = %[[S]]#3, %[[CP:[a-z0-9]+]] = %[[S]]#4)
// PERSEQLLVM: scf.for %{{.*}} = %[[CB]] to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %[[CP]])
// PERSEQLLVM: llvm.load %{{.*}} invariant

// Both kernels are proven.
// SYNC: remark: synchronisation verified
// SYNC: remark: synchronisation verified

// The kernel says so (findLoweredKernel reads it), its entry is lean.
// LLVM: llvm.func @gqa_kernel(
// LLVM-SAME: blasst.lean_entry
// LLVM: llvm.func @gqa_kernel_lean(
// LLVM-SAME: blasst.lean
// LLVM-SAME: blasst.persistent

// A paged cache of one length: the entry's parts read their tiles' table
// rows (the kernel keeps the paged cache's 6 stages).
// PAGED: ws.kernel @gqa_kernel
// PAGED-SAME: page_size = 64
// PAGED-SAME: lean_entry = true
// PAGED: ws.kernel @gqa_kernel_lean
// PAGED-SAME: persistent lean q_group = 4 split_kv page_size = 64
// PAGED-SAME: stages = 6

// Each part's table row follows its batch entry (the tile t / (KV heads x
// query tiles)): table + batch x max_pages, inside the lean item loop.
// PAGEDLLVM-LABEL: llvm.func @gqa_kernel_lean(
// PAGEDLLVM: nvvm.read.ptx.sreg.nctaid.x
// PAGEDLLVM: scf.for %[[T:[a-z0-9]+]] = %{{[0-9]+}} to %{{[0-9]+}} step %c1_i32{{.*}} iter_args
// PAGEDLLVM: %[[B:[0-9]+]] = arith.divui %[[T]], %{{[0-9]+}} : i32
// PAGEDLLVM: %[[B64:[0-9]+]] = arith.extui %[[B]] : i32 to i64
// PAGEDLLVM: arith.muli %[[B64]], %{{[0-9]+}} : i64

// head_dim 64: 128-key blocks (the default's), lean entry too; the entry's
// warpgroups keep the 256 registers they start with (no setmaxnreg: at 240
// the compute warpgroup spilled), the kernel's move them as before.
// HD64: ws.kernel @gqa_kernel
// HD64-SAME: block_n = 128
// HD64-SAME: lean_entry = true
// HD64: ws.role @producer load warps [0, 4) regs 80
// HD64: ws.role @consumer0 compute warps [4, 8) regs 240
// HD64: ws.kernel @gqa_kernel_lean
// HD64-SAME: persistent lean q_group = 4 split_kv
// HD64-SAME: consumer_regs = 256
// HD64-SAME: producer_regs = 256
// HD64: ws.role @producer load warps [0, 4) regs 256
// HD64: ws.role @consumer0 compute warps [4, 8) regs 256

// Head_dim 256: the split grid's 64-key blocks (the default) take no entry;
// with the lean CTAs' 32-key blocks (opt-in) the entry is there.
// HD256: ws.kernel @gqa_kernel
// HD256-SAME: block_n = 32
// HD256-SAME: lean_entry = true
// HD256: ws.kernel @gqa_kernel_lean
// HD256-SAME: persistent lean q_group = 4 split_kv
// HD256-SAME: consumer_regs = 256
// HD256-SAME: stages = 5
// OFF: ws.kernel @gqa_kernel
// OFF-NOT: lean_entry = true
// OFF-NOT: ws.kernel @gqa_kernel_lean

// LEAN: ws.kernel @gqa_kernel
// LEAN-SAME: lean_entry = false
// LEAN-NOT: ws.kernel @gqa_kernel_lean

// ERR: error: 'attn.attention' op lean-entry=true needs sm_90a dense decode at head_dim 64, 128 or 256 over a contiguous or paged KV cache (one length or per-sequence lengths)
// BAD: lean-entry
func.func @gqa(%q: memref<?x?x32x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x32x128xbf16>) {
  attn.attention %q, %k, %v -> %o spec(<head_dim = 128, q_heads = 32, kv_heads = 8, phase = decode>) : memref<?x?x32x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x32x128xbf16>
  return
}
