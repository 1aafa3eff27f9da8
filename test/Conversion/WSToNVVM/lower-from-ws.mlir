// RUN: blasst-opt %s -split-input-file --convert-ws-to-nvvm | FileCheck %s
// Lowering tests that start from hand-written ws IR (not from attn), one
// kernel per lowering family: the kernel ABI, mbarrier pipes and TMA copies
// (KernelLowering, Pipes.cpp); wgmma with A from shared memory or registers,
// the softmax on fragments and the epilogue (SM90/); BLASST votes, skip
// regions and V on demand (Votes.cpp, SkipRegions.cpp); turns; persistent
// tiles and their order; K/V multicast; Q fragments.

// The plain schedule, one compute warpgroup: P through shared memory, LSE.
// CHECK-LABEL: llvm.func @plain(
// CHECK-SAME: blasst.smem_bytes = {{[0-9]+}} : i64, blasst.spec = #attn.spec<{{.*}}>, blasst.threads = 256 : i64
// CHECK-SAME: nvvm.kernel, nvvm.maxntid = array<i32: 256, 1, 1>
// Pipes: full rings complete with the load role's one arrival, empty rings
// with the compute warpgroup's 128.
// CHECK-COUNT-3: nvvm.mbarrier.init %{{.*}}, %c1_i32{{.*}} : !llvm.ptr<3>, i32
// CHECK: nvvm.fence.mbarrier.init
// CHECK: nvvm.barrier0
// CHECK: nvvm.setmaxregister  decrease 40
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c8192_i32
// CHECK: scf.for
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %c16384_i32
// CHECK: nvvm.setmaxregister  decrease 232
// Q Kᵀ: K-major B; P V: MN-major B.
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: nvvm.mbarrier.arrive %{{.*}} : !llvm.ptr<3>
// CHECK: nvvm.shfl.sync  bfly
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : vector<2xbf16>, !llvm.ptr<3>
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>
// CHECK: nvvm.barrier id = %c1_i32{{.*}} number_of_threads = %c128_i32
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>]
// CHECK: llvm.call_intrinsic "llvm.nvvm.lg2.approx.f"
// CHECK: llvm.store {{.*}} : vector<2xbf16>, !llvm.ptr
ws.kernel @plain target = sm_90a, block_m = 64, block_n = 128, spec = <dtype = bf16, head_dim = 64, q_heads = 4, kv_heads = 4, lse = true> {
  ws.buffer @q smem [64, 64] bf16 stages 1
  ws.buffer @k smem [128, 64] bf16 stages 2
  ws.buffer @v smem [128, 64] bf16 stages 2
  ws.buffer @s regs [64, 128] f32 stages 1
  ws.buffer @p smem [64, 128] bf16 stages 1
  ws.buffer @o regs [64, 64] f32 stages 1
  ws.pipe @q_pipe depth 1 producer @producer consumers [@consumer] buffers [@q] tx_bytes 8192
  ws.pipe @k_pipe depth 2 producer @producer consumers [@consumer] buffers [@k] tx_bytes 16384
  ws.pipe @v_pipe depth 2 producer @producer consumers [@consumer] buffers [@v] tx_bytes 16384
  ws.role @producer load warps [0, 4) regs 40 {
    ws.acquire @q_pipe
    ws.tma_load q -> @q via @q_pipe
    ws.release @q_pipe
    ws.kv_loop {
      ws.acquire @k_pipe
      ws.tma_load k -> @k via @k_pipe
      ws.release @k_pipe
      ws.acquire @v_pipe
      ws.tma_load v -> @v via @v_pipe
      ws.release @v_pipe
    }
  }
  ws.role @consumer compute warps [4, 8) regs 232 rows [0, 64) {
    ws.acquire @q_pipe
    ws.kv_loop {
      ws.acquire @k_pipe
      ws.mma qk @q, @k -> @s
      ws.release @k_pipe
      ws.row_max @s
      ws.softmax_update @s
      ws.exp2_store_p @s -> @p
      ws.correct @o
      ws.acquire @v_pipe
      ws.mma pv @p, @v -> @o
      ws.release @v_pipe
    }
    ws.release @q_pipe
    ws.epilogue @o {lse}
  }
}

// -----

// The overlap schedule with BLASST and V on demand: Q Kᵀ of block n+1 in
// flight during the softmax, P V with P from registers (inline PTX), the
// vote (warp vote, then the warpgroup's named-barrier AND), the fused skip
// regions as one branch, and the load role that reads the published votes,
// copies V on demand and counts the statistics.
// CHECK-LABEL: llvm.func @overlap_blasst(
// The load role: block n's votes (one of two vote barriers by parity), V
// copied only when kept (expect 0 bytes otherwise), the counts flushed.
// CHECK: scf.for
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: llvm.load %{{.*}} : !llvm.ptr<3> -> i32
// CHECK: arith.select %{{.*}}, %c0_i32{{.*}}, %c16384_i32
// CHECK: nvvm.mbarrier.arrive.expect_tx
// CHECK: llvm.atomicrmw add
// CHECK: llvm.atomicrmw add
// The compute role.
// CHECK: nvvm.setmaxregister  decrease 240
// CHECK: llvm.inline_asm has_side_effects {{.*}}wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// CHECK: nvvm.wgmma.wait.group.sync.aligned 1
// CHECK: nvvm.vote.sync  all
// CHECK: llvm.call_intrinsic "llvm.nvvm.barrier.cta.red.and.aligned.count"
// The published decision: one thread stores it and arrives on the vote
// barrier of the block's parity.
// CHECK: llvm.store %{{.*}}, %{{.*}} : i32, !llvm.ptr<3>
// CHECK: nvvm.mbarrier.arrive %{{.*}} : !llvm.ptr<7>
// One branch for the softmax, the P V wait and the correction (fuse_next):
// the wait and V's release on both paths.
// CHECK: scf.if
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: nvvm.mbarrier.arrive
// CHECK: } else {
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: nvvm.mbarrier.arrive
// CHECK: scf.yield
// CHECK-NOT: llvm.atomicrmw
// CHECK-LABEL: llvm.return
ws.kernel @overlap_blasst target = sm_90a, block_m = 64, block_n = 128, spec = <dtype = bf16, head_dim = 64, q_heads = 4, kv_heads = 4, causal = true, sparsity = blasst(a = 64.0), stats = true> reverse_tiles {
  ws.buffer @q smem [64, 64] bf16 stages 1
  ws.buffer @k smem [128, 64] bf16 stages 2
  ws.buffer @v smem [128, 64] bf16 stages 2
  ws.buffer @s regs [64, 128] f32 stages 1
  ws.buffer @p regs [64, 128] bf16 stages 1
  ws.buffer @o regs [64, 64] f32 stages 1
  ws.pipe @q_pipe depth 1 producer @producer consumers [@consumer] buffers [@q] tx_bytes 8192
  ws.pipe @k_pipe depth 2 producer @producer consumers [@consumer] buffers [@k] tx_bytes 16384
  ws.pipe @v_pipe depth 2 producer @producer consumers [@consumer] buffers [@v] tx_bytes 16384
  ws.role @producer load warps [0, 4) regs 24 {
    ws.acquire @q_pipe
    ws.tma_load q -> @q via @q_pipe
    ws.release @q_pipe
    ws.acquire @k_pipe
    ws.tma_load k -> @k via @k_pipe
    ws.release @k_pipe
    ws.kv_loop {
      ws.acquire @k_pipe {ahead = 1 : i64}
      ws.tma_load k -> @k via @k_pipe {ahead = 1 : i64}
      ws.release @k_pipe {ahead = 1 : i64}
      ws.await_vote {stats}
      ws.acquire @v_pipe
      ws.tma_load v -> @v via @v_pipe {on_demand}
      ws.release @v_pipe
    }
  }
  ws.role @consumer compute warps [4, 8) regs 240 rows [0, 64) {
    ws.acquire @q_pipe
    ws.acquire @k_pipe
    ws.mma qk @q, @k -> @s
    ws.release @k_pipe
    ws.row_max @s
    ws.softmax_update @s
    ws.exp2_store_p @s -> @p
    ws.kv_loop {
      ws.acquire @k_pipe {ahead = 1 : i64}
      ws.mma qk @q, @k -> @s {ahead = 1 : i64, async}
      ws.acquire @v_pipe
      ws.unless_skipped {
        ws.mma pv @p, @v -> @o {async}
      }
      ws.mma_wait {pending = 1 : i64}
      ws.release @k_pipe {ahead = 1 : i64}
      ws.row_max @s {ahead = 1 : i64}
      ws.vote @s {publish}
      ws.unless_skipped attributes {fuse_next} {
        ws.softmax_update @s
        ws.exp2 @s
      }
      ws.mma_wait
      ws.release @v_pipe
      ws.unless_skipped {
        ws.correct @o
        ws.pack_p @s -> @p
      }
    }
    ws.release @q_pipe
    ws.epilogue @o
  }
}

// -----

// Ping-pong: the two compute warpgroups take turns for their GEMMs through
// named barriers (wait: bar.sync of the role's barrier; pass: bar.arrive on
// the next role's), counting both roles' threads.
// CHECK-LABEL: llvm.func @pingpong(
// CHECK: nvvm.barrier.arrive id = %c{{[0-9]+}}_i32{{.*}} number_of_threads = %c256_i32
// CHECK: nvvm.barrier id = %c{{[0-9]+}}_i32{{.*}} number_of_threads = %c256_i32
ws.kernel @pingpong target = sm_90a, block_m = 128, block_n = 128, spec = <dtype = bf16, head_dim = 64, q_heads = 4, kv_heads = 4> {
  ws.buffer @q smem [128, 64] bf16 stages 1
  ws.buffer @k smem [128, 64] bf16 stages 2
  ws.buffer @v smem [128, 64] bf16 stages 2
  ws.buffer @s regs [64, 128] f32 stages 1
  ws.buffer @p regs [64, 128] bf16 stages 1
  ws.buffer @o regs [64, 64] f32 stages 1
  ws.pipe @q_pipe depth 1 producer @producer consumers [@c0, @c1] buffers [@q] tx_bytes 16384
  ws.pipe @k_pipe depth 2 producer @producer consumers [@c0, @c1] buffers [@k] tx_bytes 16384
  ws.pipe @v_pipe depth 2 producer @producer consumers [@c0, @c1] buffers [@v] tx_bytes 16384
  ws.order @gemm_turn roles [@c0, @c1]
  ws.role @producer load warps [0, 4) regs 24 {
    ws.acquire @q_pipe
    ws.tma_load q -> @q via @q_pipe
    ws.release @q_pipe
    ws.kv_loop {
      ws.acquire @k_pipe
      ws.tma_load k -> @k via @k_pipe
      ws.release @k_pipe
      ws.acquire @v_pipe
      ws.tma_load v -> @v via @v_pipe
      ws.release @v_pipe
    }
  }
  ws.role @c0 compute warps [4, 8) regs 240 rows [0, 64) {
    ws.acquire @q_pipe
    ws.kv_loop {
      ws.turn_wait @gemm_turn
      ws.acquire @k_pipe
      ws.mma qk @q, @k -> @s
      ws.release @k_pipe
      ws.turn_pass @gemm_turn
      ws.row_max @s
      ws.softmax_update @s
      ws.exp2_store_p @s -> @p
      ws.correct @o
      ws.acquire @v_pipe
      ws.mma pv @p, @v -> @o
      ws.release @v_pipe
    }
    ws.release @q_pipe
    ws.epilogue @o
  }
  ws.role @c1 compute warps [8, 12) regs 240 rows [64, 128) {
    ws.acquire @q_pipe
    ws.kv_loop {
      ws.turn_wait @gemm_turn
      ws.acquire @k_pipe
      ws.mma qk @q, @k -> @s
      ws.release @k_pipe
      ws.turn_pass @gemm_turn
      ws.row_max @s
      ws.softmax_update @s
      ws.exp2_store_p @s -> @p
      ws.correct @o
      ws.acquire @v_pipe
      ws.mma pv @p, @v -> @o
      ws.release @v_pipe
    }
    ws.release @q_pipe
    ws.epilogue @o
  }
}

// -----

// Persistent CTAs: a tile loop over ctaid.x, +nctaid.x, the last query
// blocks first (reverse_tiles); the K/V rings' block count and Q's phase
// carried across tiles. The tiles go by L2 sections of KV heads (16 MiB
// over the batch entries, nctaid.z, and each KV head's K and V KiB), and
// odd rounds of nctaid.x tiles run backwards (the snake).
// CHECK-LABEL: llvm.func @persistent(
// CHECK-SAME: blasst.persistent
// CHECK: %[[KIB:.*]] = arith.muli %{{.*}}, %c256_i32
// CHECK: %[[BATCHES:.*]] = nvvm.read.ptx.sreg.nctaid.z
// CHECK: %[[BUDGET:.*]] = arith.divui %c16384_i32, %[[BATCHES]]
// CHECK: %[[CTAS:.*]] = nvvm.read.ptx.sreg.nctaid.x
// CHECK: scf.for %[[TILE:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %c0_i32{{.*}}, %{{.*}} = %c0_i32{{.*}}) -> (i32, i32)
// CHECK-NEXT: %[[ROUND:.*]] = arith.divui %[[TILE]], %[[CTAS]]
// CHECK: %[[SNAKE:.*]] = arith.select %{{.*}}, %{{.*}}, %[[TILE]]
// CHECK-NEXT: arith.divui %[[SNAKE]], %{{.*}}
ws.kernel @persistent target = sm_90a, block_m = 64, block_n = 128, spec = <dtype = bf16, head_dim = 64, q_heads = 4, kv_heads = 4, lse = true> persistent reverse_tiles {
  ws.buffer @q smem [64, 64] bf16 stages 1
  ws.buffer @k smem [128, 64] bf16 stages 2
  ws.buffer @v smem [128, 64] bf16 stages 2
  ws.buffer @s regs [64, 128] f32 stages 1
  ws.buffer @p smem [64, 128] bf16 stages 1
  ws.buffer @o regs [64, 64] f32 stages 1
  ws.pipe @q_pipe depth 1 producer @producer consumers [@consumer] buffers [@q] tx_bytes 8192
  ws.pipe @k_pipe depth 2 producer @producer consumers [@consumer] buffers [@k] tx_bytes 16384
  ws.pipe @v_pipe depth 2 producer @producer consumers [@consumer] buffers [@v] tx_bytes 16384
  ws.role @producer load warps [0, 4) regs 40 {
    ws.acquire @q_pipe
    ws.tma_load q -> @q via @q_pipe
    ws.release @q_pipe
    ws.kv_loop {
      ws.acquire @k_pipe
      ws.tma_load k -> @k via @k_pipe
      ws.release @k_pipe
      ws.acquire @v_pipe
      ws.tma_load v -> @v via @v_pipe
      ws.release @v_pipe
    }
  }
  ws.role @consumer compute warps [4, 8) regs 232 rows [0, 64) {
    ws.acquire @q_pipe
    ws.kv_loop {
      ws.acquire @k_pipe
      ws.mma qk @q, @k -> @s
      ws.release @k_pipe
      ws.row_max @s
      ws.softmax_update @s
      ws.exp2_store_p @s -> @p
      ws.correct @o
      ws.acquire @v_pipe
      ws.mma pv @p, @v -> @o
      ws.release @v_pipe
    }
    ws.release @q_pipe
    ws.epilogue @o {lse}
  }
}

// -----

// Q in registers: ldmatrix.x4 per 16-column k-step once before the loop,
// then Q Kᵀ with A from registers.
// CHECK-LABEL: llvm.func @qregs(
// CHECK-COUNT-4: nvvm.ldmatrix
// CHECK: scf.for
// CHECK: llvm.inline_asm has_side_effects {{.*}}wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
ws.kernel @qregs target = sm_90a, block_m = 64, block_n = 128, spec = <dtype = bf16, head_dim = 64, q_heads = 4, kv_heads = 4, lse = true> {
  ws.buffer @q smem [64, 64] bf16 stages 1
  ws.buffer @k smem [128, 64] bf16 stages 2
  ws.buffer @v smem [128, 64] bf16 stages 2
  ws.buffer @s regs [64, 128] f32 stages 1
  ws.buffer @p smem [64, 128] bf16 stages 1
  ws.buffer @o regs [64, 64] f32 stages 1
  ws.buffer @qr regs [64, 64] bf16 stages 1
  ws.pipe @q_pipe depth 1 producer @producer consumers [@consumer] buffers [@q] tx_bytes 8192
  ws.pipe @k_pipe depth 2 producer @producer consumers [@consumer] buffers [@k] tx_bytes 16384
  ws.pipe @v_pipe depth 2 producer @producer consumers [@consumer] buffers [@v] tx_bytes 16384
  ws.role @producer load warps [0, 4) regs 40 {
    ws.acquire @q_pipe
    ws.tma_load q -> @q via @q_pipe
    ws.release @q_pipe
    ws.kv_loop {
      ws.acquire @k_pipe
      ws.tma_load k -> @k via @k_pipe
      ws.release @k_pipe
      ws.acquire @v_pipe
      ws.tma_load v -> @v via @v_pipe
      ws.release @v_pipe
    }
  }
  ws.role @consumer compute warps [4, 8) regs 232 rows [0, 64) {
    ws.acquire @q_pipe
    ws.load_frag @q -> @qr
    ws.kv_loop {
      ws.acquire @k_pipe
      ws.mma qk @qr, @k -> @s
      ws.release @k_pipe
      ws.row_max @s
      ws.softmax_update @s
      ws.exp2_store_p @s -> @p
      ws.correct @o
      ws.acquire @v_pipe
      ws.mma pv @p, @v -> @o
      ws.release @v_pipe
    }
    ws.release @q_pipe
    ws.epilogue @o {lse}
  }
}

// -----

// K/V multicast: clusters of two CTAs; each copies half of every K/V tile
// into both (ctamask 3) and also releases the partner's stages remotely.
// CHECK-LABEL: llvm.func @multicast(
// CHECK-SAME: blasst.cluster_m = 2 : i32
// CHECK-SAME: nvvm.cluster_dim = array<i32: 2, 1, 1>
// CHECK: nvvm.read.ptx.sreg.cluster.ctaid.x
// CHECK: nvvm.cluster.arrive
// CHECK: nvvm.cluster.wait
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global {{.*}} multicast_mask
// CHECK: nvvm.mapa
// CHECK: nvvm.mbarrier.arrive %{{.*}} {{.*}}!llvm.ptr<7>
ws.kernel @multicast target = sm_90a, block_m = 64, block_n = 128, spec = <dtype = bf16, head_dim = 64, q_heads = 4, kv_heads = 4, lse = true> kv_multicast {
  ws.buffer @q smem [64, 64] bf16 stages 1
  ws.buffer @k smem [128, 64] bf16 stages 2
  ws.buffer @v smem [128, 64] bf16 stages 2
  ws.buffer @s regs [64, 128] f32 stages 1
  ws.buffer @p smem [64, 128] bf16 stages 1
  ws.buffer @o regs [64, 64] f32 stages 1
  ws.pipe @q_pipe depth 1 producer @producer consumers [@consumer] buffers [@q] tx_bytes 8192
  ws.pipe @k_pipe depth 2 producer @producer consumers [@consumer] buffers [@k] tx_bytes 16384
  ws.pipe @v_pipe depth 2 producer @producer consumers [@consumer] buffers [@v] tx_bytes 16384
  ws.role @producer load warps [0, 4) regs 40 {
    ws.acquire @q_pipe
    ws.tma_load q -> @q via @q_pipe
    ws.release @q_pipe
    ws.kv_loop {
      ws.acquire @k_pipe
      ws.tma_load k -> @k via @k_pipe
      ws.release @k_pipe
      ws.acquire @v_pipe
      ws.tma_load v -> @v via @v_pipe
      ws.release @v_pipe
    }
  }
  ws.role @consumer compute warps [4, 8) regs 232 rows [0, 64) {
    ws.acquire @q_pipe
    ws.kv_loop {
      ws.acquire @k_pipe
      ws.mma qk @q, @k -> @s
      ws.release @k_pipe
      ws.row_max @s
      ws.softmax_update @s
      ws.exp2_store_p @s -> @p
      ws.correct @o
      ws.acquire @v_pipe
      ws.mma pv @p, @v -> @o
      ws.release @v_pipe
    }
    ws.release @q_pipe
    ws.epilogue @o {lse}
  }
}
