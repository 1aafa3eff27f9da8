// RUN: blasst-opt %s -split-input-file --convert-attn-to-ws="target=sm_90a" | FileCheck %s
// RUN: blasst-opt %s -split-input-file --convert-attn-to-ws="target=sm_90a" --blasst-verify-sync --convert-ws-to-nvvm | FileCheck %s --check-prefix=LLVM
// RUN: blasst-opt %s -split-input-file --convert-attn-to-ws="target=sm_90a kv-cp-async=false" --blasst-verify-sync --convert-ws-to-nvvm | FileCheck %s --check-prefix=TMA
// The decode KV caches (issue 20 part 2): per-sequence KV lengths and a
// paged cache, recorded on the ws.kernel (per_seq_kv, page_size) and
// lowered with kernel parameters 15-17 (ABI 4): the CTA's length read once
// from the lengths array; the load role reads a block's page from the
// block table before it waits for the stage, and copies a block of 64 keys
// as 4 pages of 16 (head_dim 128: block_n 64): by default with cp.async
// (kv_cp_async, 6 stages; parameter 30 is the page pool's size), with
// kv-cp-async=false by TMA (one copy per page and panel).

// CHECK-LABEL: ws.kernel @perseq_kernel target = sm_90a, block_m = 64, block_n = 64, spec = <{{.*}}phase = decode{{.*}}kv_lengths = per_sequence> q_group = 4 split_kv merge_kernel per_seq_kv schedule
// LLVM-LABEL: llvm.func @perseq_kernel(
// LLVM-SAME: %arg14: !llvm.ptr {llvm.noalias}, %arg15: !llvm.ptr, %arg16: !llvm.ptr, %arg17: i32, %arg18: !llvm.ptr, %arg19: i32, %arg20: i32, %arg21: i32, %arg22: !llvm.ptr, %arg23: !llvm.ptr, %arg24: i64, %arg25: i64, %arg26: i64, %arg27: i64, %arg28: i64, %arg29: i64)
// LLVM-SAME: blasst.kv_cp_async
// LLVM-SAME: blasst.per_seq_kv
// LLVM-NOT: blasst.page_size
// LLVM: llvm.addrspacecast %arg15 : !llvm.ptr to !llvm.ptr<1>
// LLVM: llvm.load {{.*}} invariant {{.*}} : !llvm.ptr<1> -> i32
func.func @perseq(%q: memref<?x?x32x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x32x128xbf16>) {
  attn.attention %q, %k, %v -> %o spec(<head_dim = 128, q_heads = 32, kv_heads = 8, causal = true, phase = decode, kv_lengths = per_sequence>) : memref<?x?x32x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x32x128xbf16>
  return
}

// -----

// CHECK-LABEL: ws.kernel @paged_kernel target = sm_90a, block_m = 64, block_n = 64, spec = <{{.*}}kv_lengths = per_sequence, kv_cache = paged(page = 16)> q_group = 4 split_kv merge_kernel per_seq_kv page_size = 16 schedule {{{.*}}kv_cp_async = true{{.*}}stages = 6
// CHECK: ws.pipe @k_pipe depth 6 producer @producer consumers [@consumer0] buffers [@k] cp_async
// LLVM-LABEL: llvm.func @paged_kernel(
// LLVM-SAME: %arg29: i64, %arg30: i32)
// LLVM-SAME: blasst.kv_cp_async
// LLVM-SAME: blasst.page_size = 16
// LLVM-SAME: blasst.per_seq_kv
// The table reads (four pages per block) before the producer's wait, then
// each thread's 8 rows from their pages.
// LLVM: llvm.addrspacecast %arg16 : !llvm.ptr to !llvm.ptr<1>
// LLVM: llvm.load {{.*}} invariant {{.*}} : !llvm.ptr<1> -> i32
// LLVM: llvm.addrspacecast %arg16
// LLVM: llvm.addrspacecast %arg16
// LLVM: llvm.addrspacecast %arg16
// LLVM: nvvm.mbarrier.try_wait.parity
// LLVM: arith.cmpi ult, %{{.*}}, %arg30 : i32
// LLVM-COUNT-8: nvvm.cp.async.shared.global
// LLVM: nvvm.cp.async.mbarrier.arrive
// TMA-LABEL: llvm.func @paged_kernel(
// TMA-NOT: blasst.kv_cp_async
// TMA-SAME: blasst.page_size = 16
// TMA-SAME: blasst.per_seq_kv
// TMA: llvm.addrspacecast %arg16 : !llvm.ptr to !llvm.ptr<1>
// TMA: llvm.load {{.*}} invariant {{.*}} : !llvm.ptr<1> -> i32
// TMA: llvm.addrspacecast %arg16
// TMA: llvm.addrspacecast %arg16
// TMA: llvm.addrspacecast %arg16
// TMA: nvvm.mbarrier.try_wait.parity
// TMA-COUNT-8: nvvm.cp.async.bulk.tensor.shared.cluster.global
func.func @paged(%q: memref<?x?x32x128xbf16>, %k: memref<?x16x8x128xbf16>, %v: memref<?x16x8x128xbf16>, %o: memref<?x?x32x128xbf16>) {
  attn.attention %q, %k, %v -> %o spec(<head_dim = 128, q_heads = 32, kv_heads = 8, phase = decode, kv_lengths = per_sequence, kv_cache = paged(page = 16)>) : memref<?x?x32x128xbf16>, memref<?x16x8x128xbf16>, memref<?x16x8x128xbf16>, memref<?x?x32x128xbf16>
  return
}

// -----

// One length for the batch over pages of 256 (blocks of 128 keys at
// head_dim 64 inside a page): no lengths array, one copy per panel.
// CHECK-LABEL: ws.kernel @paged_uniform_kernel target = sm_90a, block_m = 64, block_n = 128, spec = <{{.*}}kv_cache = paged(page = 256)> q_group = 16 split_kv merge_kernel page_size = 256 schedule
// LLVM-LABEL: llvm.func @paged_uniform_kernel(
// LLVM-SAME: blasst.page_size = 256
// LLVM-NOT: blasst.per_seq_kv
// LLVM-NOT: llvm.addrspacecast %arg15
func.func @paged_uniform(%q: memref<?x?x16x64xbf16>, %k: memref<?x?x1x64xbf16>, %v: memref<?x?x1x64xbf16>, %o: memref<?x?x16x64xbf16>) {
  attn.attention %q, %k, %v -> %o spec(<head_dim = 64, q_heads = 16, kv_heads = 1, phase = decode, kv_cache = paged(page = 256)>) : memref<?x?x16x64xbf16>, memref<?x?x1x64xbf16>, memref<?x?x1x64xbf16>, memref<?x?x16x64xbf16>
  return
}
