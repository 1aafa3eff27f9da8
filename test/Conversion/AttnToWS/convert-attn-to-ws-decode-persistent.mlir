// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a persistent=true" | FileCheck %s
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a persistent=true" --blasst-verify-sync=report 2>&1 >/dev/null | FileCheck %s --check-prefix=SYNC
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a persistent=true" --blasst-verify-sync --convert-ws-to-nvvm | FileCheck %s --check-prefix=LLVM
// RUN: sed -e 's/phase = decode/phase = decode, sparsity = blasst(ln_lambda = -8.0)/' %s | not blasst-opt --convert-attn-to-ws="target=sm_90a persistent=true" 2>&1 | FileCheck %s --check-prefix=SPARSE
// RUN: sed -e 's/phase = decode/phase = decode, kv_lengths = per_sequence/' %s | not blasst-opt --convert-attn-to-ws="target=sm_90a persistent=true" 2>&1 | FileCheck %s --check-prefix=SPARSE
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a persistent=true split-interleave=true" 2>&1 | FileCheck %s --check-prefix=SPARSE
// RUN: sed -e 's/128/64/g' %s | not blasst-opt --convert-attn-to-ws="target=sm_90a persistent=true" 2>&1 | FileCheck %s --check-prefix=HD64
// RUN: sed -e 's/phase = decode/phase = decode, kv_cache = paged(page = 64)/' %s | not blasst-opt --convert-attn-to-ws="target=sm_90a persistent=true" 2>&1 | FileCheck %s --check-prefix=PAGED
// Persistent decode CTAs (dense, head_dim 128): a 1-D grid of CTAs walks the
// (batch, KV head, query tile, split) items; the launch's split count and
// batch are kernel parameters 19 and 20 (docs/design.md, "Persistent
// decode").

// CHECK: ws.kernel @gqa_kernel
// CHECK-SAME: persistent q_group = 4 split_kv

// SYNC: remark: synchronisation verified ({{[0-9]+}} states): deadlock-free
// SYNC-SAME: each tile with 0 to {{[0-9]+}} KV blocks (2 tiles)

// The items: ctaid.x, ctaid.x + nctaid.x, ... below batch (parameter 20) x
// KV heads x query tiles x splits (parameter 19).
// LLVM-LABEL: llvm.func @gqa_kernel(
// LLVM-SAME: %arg18: !llvm.ptr, %arg19: i32, %arg20: i32)
// LLVM-SAME: blasst.persistent
// LLVM-SAME: blasst.split_kv
// LLVM: %[[TILE:[0-9]+]] = arith.muli %{{[0-9]+}}, %arg19 : i32
// LLVM: %[[HEAD:[0-9]+]] = arith.muli %[[TILE]], %c8_i32{{.*}} : i32
// LLVM: %[[ITEMS:[0-9]+]] = arith.muli %arg20, %[[HEAD]] : i32
// LLVM: %[[FIRST:[0-9]+]] = nvvm.read.ptx.sreg.ctaid.x : i32
// LLVM: %[[STRIDE:[0-9]+]] = nvvm.read.ptx.sreg.nctaid.x : i32
// LLVM: scf.for %{{.*}} = %[[FIRST]] to %[[ITEMS]] step %[[STRIDE]] iter_args

// SPARSE: error: 'attn.attention' op decode schedule: persistent=true: persistent decode CTAs are implemented for dense attention (no sparsity or split-interleave), over KV caches of one length unless lean (lean CTAs share per-sequence lengths' blocks)
// HD64: error: 'attn.attention' op decode schedule: persistent=true: persistent decode CTAs are available at head_dim 128, lean CTAs at 64, 128 and 256
// PAGED: error: 'attn.attention' op decode schedule: persistent=true with a paged kv_cache: CTAs walking the splits read contiguous K/V only (lean CTAs take pages)
func.func @gqa(%q: memref<?x?x32x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x32x128xbf16>) {
  attn.attention %q, %k, %v -> %o spec(<head_dim = 128, q_heads = 32, kv_heads = 8, phase = decode>) : memref<?x?x32x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x32x128xbf16>
  return
}
