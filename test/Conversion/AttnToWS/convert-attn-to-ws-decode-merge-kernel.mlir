// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a merge-kernel=true" | FileCheck %s
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a merge-kernel=true" --blasst-verify-sync=report 2>&1 >/dev/null | FileCheck %s --check-prefix=SYNC
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a merge-kernel=true" --blasst-verify-sync --convert-ws-to-nvvm | FileCheck %s --check-prefix=LLVM
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a merge-kernel=true persistent=true" 2>&1 | FileCheck %s --check-prefix=PERSISTENT
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a" | FileCheck %s --check-prefix=DEFAULT
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a persistent=true" | FileCheck %s --check-prefix=DEFAULT-PERSISTENT
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a merge-kernel=false" | FileCheck %s --check-prefix=OFF
// RUN: sed -e 's/, phase = decode//' %s | not blasst-opt --convert-attn-to-ws="target=sm_90a merge-kernel=true" 2>&1 | FileCheck %s --check-prefix=PREFILL
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a merge-kernel=sometimes" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a merge-kernel=true" | sed -e 's/q_group = 4 split_kv merge_kernel/q_group = 4 merge_kernel/' | not blasst-opt 2>&1 | FileCheck %s --check-prefix=VERIFY
// The splits' merge as a second kernel (docs/design.md "The merge kernel"):
// the attention kernel writes every split's partial O and LSE and lets its
// dependent launch early; when the launch says so (parameter 21, the
// runtime's pick) its splits return there and <kernel>_merge waits for
// them, folds every eighth split per warp and combines the eight folds
// through shared memory; otherwise the tile's last split merges as without
// merge_kernel. sm_90a decode takes it by default (DEFAULT).

// CHECK: ws.kernel @gqa_kernel
// CHECK-SAME: q_group = 4 split_kv merge_kernel
// CHECK-SAME: merge_kernel = true

// SYNC: remark: synchronisation verified ({{[0-9]+}} states): deadlock-free

// The attention kernel: the dependents may launch once every CTA started;
// parameter 21 (the launch runs the merge kernel) decides whether the tile's
// last split counts in and merges after the partials are written.
// LLVM-LABEL: llvm.func @gqa_kernel(
// LLVM-SAME: %arg20: i32, %arg21: i32, %arg22: !llvm.ptr,
// LLVM-SAME: blasst.merge_kernel
// LLVM: nvvm.griddepcontrol launch_dependents
// LLVM: %[[IN:[0-9]+]] = arith.cmpi eq, %arg21, %c0_i32
// LLVM-NEXT: scf.if %[[IN]] {
// LLVM: llvm.atomicrmw add
// LLVM: llvm.nvvm.barrier.cta.red.or.aligned.count
// LLVM: llvm.return
// The merge kernel: a persistent decode kernel's 21 parameters (19: the
// split count), 256 threads; it waits for the attention kernel's writes.
// LLVM-LABEL: llvm.func @gqa_kernel_merge(
// LLVM-SAME: %arg19: i32, %arg20: i32)
// LLVM-SAME: blasst.merge_of = "gqa_kernel"
// LLVM-SAME: nvvm.kernel
// LLVM-SAME: nvvm.maxntid = array<i32: 256, 1, 1>
// LLVM: nvvm.griddepcontrol wait
// Warp w folds splits w, w + 8, ...: chunks of 8 loads, stride 64 splits.
// LLVM: %[[W:[0-9]+]] = arith.divui %{{[0-9]+}}, %c32_i32
// LLVM: scf.for %{{.*}} = %[[W]] to %arg19 step %c64_i32{{.*}} iter_args
// LLVM-COUNT-8: llvm.load %{{[0-9]+}} {alignment = 16 : i64} : !llvm.ptr -> vector<4xf32>
// LLVM: nvvm.barrier0
// LLVM-COUNT-8: llvm.load %{{[0-9]+}} {alignment = 8 : i64} : !llvm.ptr<3> -> vector<4xf32>

// DEFAULT: q_group = 4 split_kv merge_kernel schedule
// DEFAULT-SAME: merge_kernel = true
// DEFAULT-PERSISTENT: persistent
// DEFAULT-PERSISTENT-NOT: merge_kernel = true
// DEFAULT-PERSISTENT-SAME: merge_kernel = false
// OFF: q_group = 4 split_kv schedule
// OFF-SAME: merge_kernel = false
// PERSISTENT: error: 'attn.attention' op decode schedule: merge-kernel=true with persistent CTAs: the second merge kernel is for the one-CTA-per-split grid
// PREFILL: error: 'attn.attention' op merge-kernel=true merges the KV splits of sm_90a decode (phase = decode)
// BAD: merge-kernel
// VERIFY: error: 'ws.kernel' op merge_kernel merges the splits of a decode kernel (sm_90a, split_kv, not persistent)
func.func @gqa(%q: memref<?x?x32x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x32x128xbf16>) {
  attn.attention %q, %k, %v -> %o spec(<head_dim = 128, q_heads = 32, kv_heads = 8, phase = decode>) : memref<?x?x32x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x32x128xbf16>
  return
}
