// RUN: blasst-opt %s -split-input-file --convert-attn-to-ws="target=sm_90a" | FileCheck %s
// RUN: blasst-opt %s -split-input-file --convert-attn-to-ws="target=sm_90a" --blasst-verify-sync --convert-ws-to-nvvm | FileCheck %s --check-prefix=LLVM
// RUN: blasst-opt %s -split-input-file --convert-attn-to-ws="target=sm_90a kv-splits=4" | FileCheck %s --check-prefix=SPLITS
// RUN: blasst-opt %s -split-input-file --convert-attn-to-ws="target=sm_90a split-chunk=2" | FileCheck %s --check-prefix=CHUNK
// RUN: blasst-opt %s -split-input-file --convert-attn-to-ws="target=sm_90a split-interleave=true" --blasst-verify-sync --convert-ws-to-nvvm | FileCheck %s --check-prefix=ILLLVM
// RUN: blasst-opt %s -split-input-file --convert-attn-to-ws="target=sm_90a kv-cp-async=false" | FileCheck %s --check-prefix=TMA
// RUN: blasst-opt %s -split-input-file --convert-attn-to-ws="target=sm_90a kv-cp-async=false" --blasst-verify-sync --convert-ws-to-nvvm | FileCheck %s --check-prefix=TMALLVM
// The decode schedule (phase = decode, sm_90a): the q heads of one KV head
// packed into one 64-row tile (q_group), a producer warpgroup and one
// consumer warpgroup (the overlap schedule with P in registers), 64-key
// blocks (128 at head_dim 64) through 3 K/V stages that the producer's 128
// threads fill with cp.async (kv_cp_async, the default of dense decode over
// a contiguous cache; Q by TMA), and the KV blocks split across CTAs
// (split_kv). The load role's threads then stay until the consumer released
// Q (`drain`; racecheck hung on CTAs with no KV block without it). With
// kv-cp-async=false (TMA), 2 stages (4 at head_dim 64), and no drain.

// CHECK-LABEL: ws.kernel @gqa_kernel target = sm_90a, block_m = 64, block_n = 64, spec = <{{.*}}phase = decode{{.*}}> q_group = 4 split_kv merge_kernel schedule {{{.*}}kv_cp_async = true{{.*}}stages = 3
// CHECK-NOT: reverse_tiles
// CHECK: ws.buffer @q smem [64, 128] bf16 stages 1
// CHECK: ws.buffer @k smem [64, 128] bf16 stages 3
// CHECK: ws.pipe @q_pipe depth 1 producer @producer consumers [@consumer0] buffers [@q] tx_bytes 16384
// CHECK: ws.pipe @k_pipe depth 3 producer @producer consumers [@consumer0] buffers [@k] cp_async
// CHECK: ws.pipe @v_pipe depth 3 producer @producer consumers [@consumer0] buffers [@v] cp_async
// CHECK: ws.role @producer load warps [0, 4) regs 80
// CHECK: ws.kv_loop
// CHECK: ws.release @v_pipe
// CHECK-NEXT: }
// CHECK-NEXT: ws.acquire @q_pipe {drain}
// CHECK-NEXT: }
// CHECK: ws.role @consumer0 compute warps [4, 8) regs 240 rows [0, 64)
// CHECK-NOT: ws.role @consumer1
// CHECK: ws.epilogue @o {lse}

// The kernel takes the workspace as parameter 14 (ABI 3); grid y is the KV
// head, grid x query tile + tiles x split; the Q copy's head coordinate is
// the KV head's first q head; the epilogue writes O directly when the
// workspace is null, else the split's partials, counts the split in and the
// last split merges.
// The K/V copies (kv_cp_async, ABI 6): K's and V's pointers and strides are
// parameters 22-29; each of the 128 load threads copies 8 16-byte pieces of
// a 64 x 128 tile (rows at or past the length read nothing: src-size 0)
// into the TMA's swizzled layout and arrives once they land; the consumer
// fences the generic proxy's writes before its wgmma.
// LLVM-LABEL: llvm.func @gqa_kernel(
// LLVM-SAME: %arg14: !llvm.ptr {llvm.noalias}, %arg15: !llvm.ptr, %arg16: !llvm.ptr, %arg17: i32, %arg18: !llvm.ptr, %arg19: i32, %arg20: i32, %arg21: i32, %arg22: !llvm.ptr, %arg23: !llvm.ptr, %arg24: i64, %arg25: i64, %arg26: i64, %arg27: i64, %arg28: i64, %arg29: i64)
// LLVM-SAME: blasst.kv_cp_async
// LLVM-SAME: blasst.q_group = 4
// LLVM-SAME: blasst.split_kv
// LLVM: nvvm.read.ptx.sreg.nctaid.x
// LLVM: nvvm.mbarrier.init %{{.*}}, %c128_i32
// LLVM: nvvm.cp.async.bulk.tensor.shared.cluster.global
// LLVM-COUNT-8: nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 16, cache = {{ *}}cg, %{{.*}}
// LLVM: nvvm.cp.async.mbarrier.arrive %{{.*}} {noinc = true}
// LLVM-COUNT-8: nvvm.cp.async.shared.global %{{.*}}, %{{.*}}, 16, cache = {{ *}}cg, %{{.*}}
// LLVM: nvvm.cp.async.mbarrier.arrive %{{.*}} {noinc = true}
// LLVM: nvvm.mbarrier.try_wait.parity %{{[0-9]+}}, %{{[0-9]+}}, %c10000000_i32_{{[0-9]+}} : !llvm.ptr<3>, i32, i32
// LLVM-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// LLVM: nvvm.wgmma.mma_async
// LLVM: llvm.icmp "eq" %arg14
// LLVM: nvvm.memory.barrier <gpu>
// LLVM: llvm.atomicrmw add
// LLVM: llvm.nvvm.barrier.cta.red.or.aligned.count
// LLVM: nvvm.memory.barrier <gpu>
// LLVM: scf.for
// A power-of-two group has no padding rows: nothing zeroed, no padding token.
// LLVM-NOT: vector<4xi32>, !llvm.ptr<3>
// LLVM-NOT: 1073741824

// SPLITS: ws.kernel @gqa_kernel {{.*}} q_group = 4 split_kv merge_kernel schedule {{{.*}}kv_splits = 4 : i64

// TMA-LABEL: ws.kernel @gqa_kernel {{.*}} schedule {{{.*}}kv_cp_async = false{{.*}}stages = 2
// TMA: ws.pipe @k_pipe depth 2 producer @producer consumers [@consumer0] buffers [@k] tx_bytes 16384
// TMA: ws.role @producer load warps [0, 4) regs 24
// TMA-NOT: drain
// TMA: ws.role @consumer0
// TMALLVM-LABEL: llvm.func @gqa_kernel(
// TMALLVM-SAME: %arg20: i32, %arg21: i32)
// TMALLVM-NOT: blasst.kv_cp_async
// TMALLVM-NOT: nvvm.cp.async.shared.global
// TMALLVM: nvvm.cp.async.bulk.tensor.shared.cluster.global
// TMALLVM: nvvm.cp.async.bulk.tensor.shared.cluster.global
// TMALLVM-NOT: nvvm.cp.async.shared.global
// TMALLVM: llvm.func @gqa_kernel_merge

// Interleaved splits (split_chunk = C): split s walks chunks s, s + S, ...
// of C blocks; a chunk size asks for them (split-interleave defaults to 1
// block per chunk). Its block count: ceil(blocks / C) chunks, s's share,
// less the short last chunk's gap when s owns it; no split end to mask.
// CHUNK: ws.kernel @gqa_kernel {{.*}} q_group = 4 split_kv merge_kernel split_chunk = 2 schedule {{{.*}}split_chunk = 2 : i64, split_interleave = true
// ILLLVM-LABEL: llvm.func @gqa_kernel(
// ILLLVM-SAME: blasst.split_chunk = 1 : i64
// ILLLVM-SAME: blasst.split_kv
// ILLLVM: %[[NCTA:[0-9]+]] = nvvm.read.ptx.sreg.nctaid.x
// ILLLVM: %[[NSPLITS:[0-9]+]] = arith.divui %[[NCTA]], %{{[0-9]+}} : i32
// ILLLVM: %[[SPLIT:[0-9]+]] = arith.divui %{{[0-9]+}}, %{{[0-9]+}} : i32
// ILLLVM: %[[HAS:[0-9]+]] = arith.cmpi ugt, %[[CHUNKS:[0-9]+]], %[[SPLIT]] : i32
// ILLLVM: arith.subi %[[CHUNKS]], %[[SPLIT]] : i32
// ILLLVM: arith.select %[[HAS]]
func.func @gqa(%q: memref<?x?x32x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x32x128xbf16>, %lse: memref<?x32x?xf32>) {
  attn.attention %q, %k, %v -> %o lse(%lse : memref<?x32x?xf32>) spec(<head_dim = 128, q_heads = 32, kv_heads = 8, causal = true, phase = decode, lse = true>) : memref<?x?x32x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x32x128xbf16>
  return
}

// -----

// MQA at head_dim 64: all 16 q heads in one tile (4 tokens each), 3
// stages of 128 keys (4 with TMA).
// CHECK-LABEL: ws.kernel @mqa_kernel target = sm_90a, block_m = 64, block_n = 128, spec = <{{.*}}> q_group = 16 split_kv merge_kernel schedule {{{.*}}stages = 3
// TMA-LABEL: ws.kernel @mqa_kernel target = sm_90a, block_m = 64, block_n = 128, spec = <{{.*}}> q_group = 16 split_kv merge_kernel schedule {{{.*}}stages = 4
// CHECK: ws.pipe @q_pipe depth 1 producer @producer consumers [@consumer0] buffers [@q] tx_bytes 8192
// LLVM-LABEL: llvm.func @mqa_kernel(
// LLVM-SAME: blasst.q_group = 16
func.func @mqa(%q: memref<?x?x16x64xbf16>, %k: memref<?x?x1x64xbf16>, %v: memref<?x?x1x64xbf16>, %o: memref<?x?x16x64xbf16>) {
  attn.attention %q, %k, %v -> %o spec(<head_dim = 64, head_dim_v = 64, q_heads = 16, kv_heads = 1, phase = decode>) : memref<?x?x16x64xbf16>, memref<?x?x1x64xbf16>, memref<?x?x1x64xbf16>, memref<?x?x16x64xbf16>
  return
}

// -----

// A head ratio that is not a power of two (9 q / 3 kv heads: G = 3): 21
// tokens per tile in rows 0..62, row 63 padding. The Q copy lands 63 rows
// (tx_bytes 63 x 256); every thread zeroes the padding row of both panels
// (16 chunks of 16 bytes from byte 63 x 128) and fences it for the async
// proxy before the prologue's barrier; rows >= 63 get the token 2^30 (past
// any seq_q: no vote, no store, no merge).
// CHECK-LABEL: ws.kernel @g3_kernel {{.*}} q_group = 3 split_kv
// CHECK: ws.buffer @q smem [64, 128] bf16 stages 1
// CHECK: ws.pipe @q_pipe depth 1 producer @producer consumers [@consumer0] buffers [@q] tx_bytes 16128
// LLVM-LABEL: llvm.func @g3_kernel(
// LLVM-SAME: blasst.q_group = 3
// LLVM: scf.for %{{.*}} = %{{.*}} to %c16_i32 step %c256_i32
// LLVM: arith.constant 8064 : i32
// LLVM: llvm.store %{{.*}} {alignment = 16 : i64} : vector<4xi32>, !llvm.ptr<3>
// LLVM: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// LLVM-NEXT: nvvm.barrier0
// LLVM: arith.constant 16128 : i32
// LLVM: nvvm.mbarrier.arrive.expect_tx
// LLVM: %[[PACKED:.*]] = arith.cmpi ult, %{{.*}}, %c63_i32{{.*}} : i32
// LLVM: arith.select %[[PACKED]], %{{.*}}, %c1073741824_i32{{.*}} : i32
func.func @g3(%q: memref<?x?x9x128xbf16>, %k: memref<?x?x3x128xbf16>, %v: memref<?x?x3x128xbf16>, %o: memref<?x?x9x128xbf16>) {
  attn.attention %q, %k, %v -> %o spec(<head_dim = 128, q_heads = 9, kv_heads = 3, causal = true, phase = decode>) : memref<?x?x9x128xbf16>, memref<?x?x3x128xbf16>, memref<?x?x3x128xbf16>, memref<?x?x9x128xbf16>
  return
}
