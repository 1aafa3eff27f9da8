// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a" | FileCheck %s
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-verify-sync=report 2>&1 >/dev/null | FileCheck %s --check-prefix=SYNC
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-verify-sync --convert-ws-to-nvvm | FileCheck %s --check-prefix=LLVM
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a tma-entry=false" | FileCheck %s --check-prefix=OFF
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a kv-cp-async=false" | FileCheck %s --check-prefix=OFF
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a lean=true" | FileCheck %s --check-prefix=OFF
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a stages=4 kv-splits=2" | FileCheck %s --check-prefix=ASKED
// RUN: sed -e 's/phase = decode/phase = decode, kv_lengths = per_sequence/' %s | blasst-opt --convert-attn-to-ws="target=sm_90a" | FileCheck %s --check-prefix=OFF
// RUN: sed -e 's/phase = decode/phase = decode, kv_cache = paged(page = 64)/' %s | blasst-opt --convert-attn-to-ws="target=sm_90a" | FileCheck %s --check-prefix=OFF
// RUN: sed -e 's/x128xbf16/x64xbf16/g; s/head_dim = 128/head_dim = 64/' %s | blasst-opt --convert-attn-to-ws="target=sm_90a" | FileCheck %s --check-prefix=OFF
// RUN: sed -e 's/phase = decode/phase = decode, sparsity = blasst(ln_lambda = -8.0)/' %s | blasst-opt --convert-attn-to-ws="target=sm_90a" | FileCheck %s --check-prefix=OFF
// RUN: sed -e 's/phase = decode/phase = decode, kv_cache = paged(page = 64)/' %s | not blasst-opt --convert-attn-to-ws="target=sm_90a tma-entry=true" 2>&1 | FileCheck %s --check-prefix=ERR
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a tma-entry=true kv-cp-async=false" 2>&1 | FileCheck %s --check-prefix=ERR
// RUN: sed -e 's/phase = decode/phase = prefill/' %s | not blasst-opt --convert-attn-to-ws="target=sm_90a tma-entry=true" 2>&1 | FileCheck %s --check-prefix=ERR
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a tma-entry=maybe" 2>&1 | FileCheck %s --check-prefix=BAD
// The TMA entry (docs/design.md "Decode's K/V loads by device"): dense
// decode at head_dim 128 over a contiguous cache copies K/V with cp.async
// and carries `<kernel>_tma`, the same split grid with K/V by TMA in TMA's
// default ring (2 stages), which the runtime launches instead on GPUs of
// lower DRAM bandwidth (rt::preferTmaDecode). It is an entry of the kernel
// and shares its merge kernel.

// CHECK: ws.launch @gqa_kernel(
// CHECK: ws.kernel @gqa_kernel
// CHECK-SAME: q_group = 4 split_kv merge_kernel
// CHECK-SAME: kv_cp_async = true
// CHECK-SAME: stages = 3
// CHECK-SAME: tma_entry = true
// CHECK: ws.pipe @k_pipe depth 3 producer @producer consumers [@consumer0] buffers [@k] cp_async
// CHECK: ws.kernel @gqa_kernel_lean
// CHECK-SAME: entry_of @gqa_kernel
// CHECK: ws.kernel @gqa_kernel_tma
// CHECK-SAME: q_group = 4 split_kv merge_kernel entry_of @gqa_kernel
// CHECK-SAME: kv_cp_async = false
// CHECK-SAME: lean_entry = false
// CHECK-SAME: producer_regs = 24
// CHECK-SAME: stages = 2
// CHECK-SAME: tma_entry = false
// CHECK: ws.buffer @k smem [64, 128] bf16 stages 2
// CHECK: ws.pipe @k_pipe depth 2 producer @producer consumers [@consumer0] buffers [@k] tx_bytes 16384

// All three kernels are proven.
// SYNC: remark: synchronisation verified
// SYNC: remark: synchronisation verified
// SYNC: remark: synchronisation verified

// The kernel says so (findLoweredKernel reads it); the entry names its
// kernel, takes parameter 21 (merge_kernel) and no cp.async parameters,
// and copies K/V with TMA; one merge kernel, the kernel's.
// LLVM: llvm.func @gqa_kernel(
// LLVM-SAME: blasst.tma_entry
// LLVM: llvm.func @gqa_kernel_merge(
// LLVM: llvm.func @gqa_kernel_tma(
// LLVM-SAME: %arg21: i32)
// LLVM-SAME: blasst.entry_of = "gqa_kernel"
// LLVM-SAME: blasst.merge_kernel
// LLVM-NOT: blasst.kv_cp_async
// LLVM: nvvm.cp.async.bulk.tensor.shared.cluster.global
// LLVM-NOT: llvm.func @gqa_kernel_tma_merge

// What was asked for holds in the entry too (its stages, a fixed split
// count).
// ASKED: ws.kernel @gqa_kernel_tma
// ASKED-SAME: kv_splits = 2
// ASKED-SAME: stages = 4

// OFF: ws.kernel @gqa_kernel
// OFF-NOT: tma_entry = true
// OFF-NOT: ws.kernel @gqa_kernel_tma

// ERR: error: 'attn.attention' op tma-entry=true needs sm_90a dense decode at head_dim 128 over a contiguous KV cache of one length (not paged, not per-sequence lengths), with cp.async K/V and one CTA per split
// BAD: tma-entry
func.func @gqa(%q: memref<?x?x32x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x32x128xbf16>) {
  attn.attention %q, %k, %v -> %o spec(<head_dim = 128, q_heads = 32, kv_heads = 8, phase = decode>) : memref<?x?x32x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x32x128xbf16>
  return
}
