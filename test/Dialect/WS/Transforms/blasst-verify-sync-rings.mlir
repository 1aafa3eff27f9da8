// Shallow token rings (docs/design.md "Shallow token rings"): a pipe with
// no storage deeper than 2 (cross-stage P's handshake rings, depth 4) is
// searched at depth 2, every wait and arrival on it checked to give the
// outcome its own depth gives; where one does not, or the search does not
// pass, the kernel is searched again at its real depths.
// RUN: blasst-opt %s -split-input-file -verify-diagnostics --blasst-verify-sync=report=true -o /dev/null

// Cross-stage P with depth-4 handshake rings (dense; BLASST kernels are
// verified at depth 4 by blasst-verify-sync-matrix.test).
// expected-remark @+1 {{token rings @x0_pipe, @x1_pipe searched at depth 2, every wait and arrival on them agreeing with their depth}}
ws.kernel @depth4 target = sm_100a, block_m = 256, block_n = 128, spec = <dtype = bf16, head_dim = 128, head_dim_v = 128, q_heads = 16, kv_heads = 16, causal = false, phase = prefill, softmax_scale = default, sparsity = none, lse = false, stats = false> schedule {block_m = 256 : i64, block_n = 128 : i64, consumer_regs = 184 : i64, cross_stage_p = true, cross_stage_p_depth = 4 : i64, cross_stage_p_hold_a = 1 : i64, cross_stage_p_hold_b = 4 : i64, kv_multicast = false, overlap = false, p_in_registers = false, persistent = false, pingpong = false, producer_regs = 64 : i64, q_in_registers = false, stages = 2 : i64, v_on_demand = false} {
  ws.buffer @q0 smem [128, 128] bf16 stages 1
  ws.buffer @q1 smem [128, 128] bf16 stages 1
  ws.buffer @k smem [128, 128] bf16 stages 2
  ws.buffer @v smem [128, 128] bf16 stages 2
  ws.buffer @o_stage0 smem [128, 128] bf16 stages 1 aliases @q0
  ws.buffer @o_stage1 smem [128, 128] bf16 stages 1 aliases @q1
  ws.buffer @f0 smem [128, 2] f32 stages 1
  ws.buffer @f1 smem [128, 2] f32 stages 1
  ws.buffer @l0 smem [128, 2] f32 stages 1
  ws.buffer @l1 smem [128, 2] f32 stages 1
  ws.buffer @s0 tmem [128, 128] f32 stages 1
  ws.buffer @s1 tmem [128, 128] f32 stages 1
  ws.buffer @p0 tmem [128, 128] bf16 stages 1 aliases @s1 at [0, 64]
  ws.buffer @p1 tmem [128, 128] bf16 stages 1 aliases @s0 at [0, 64]
  ws.buffer @o0 tmem [128, 128] f32 stages 1
  ws.buffer @o1 tmem [128, 128] f32 stages 1
  ws.pipe @q_pipe depth 1 producer @load consumers [@mma] buffers [@q0, @q1] tx_bytes 65536
  ws.pipe @k_pipe depth 2 producer @load consumers [@mma] buffers [@k] tx_bytes 32768
  ws.pipe @v_pipe depth 2 producer @load consumers [@mma] buffers [@v] tx_bytes 32768
  ws.pipe @s0_pipe depth 1 producer @mma consumers [@softmax0] buffers [@s0]
  ws.pipe @s1_pipe depth 1 producer @mma consumers [@softmax1] buffers [@s1]
  ws.pipe @p0_pipe depth 1 producer @softmax0 consumers [@mma] buffers [@p0]
  ws.pipe @p1_pipe depth 1 producer @softmax1 consumers [@mma] buffers [@p1]
  ws.pipe @f0_pipe depth 1 producer @softmax0 consumers [@correction] buffers [@f0]
  ws.pipe @f1_pipe depth 1 producer @softmax1 consumers [@correction] buffers [@f1]
  ws.pipe @l0_pipe depth 1 producer @softmax0 consumers [@correction] buffers [@l0]
  ws.pipe @l1_pipe depth 1 producer @softmax1 consumers [@correction] buffers [@l1]
  ws.pipe @o0_pipe depth 1 producer @correction consumers [@mma] buffers [@o0]
  ws.pipe @o1_pipe depth 1 producer @correction consumers [@mma] buffers [@o1]
  ws.pipe @done_pipe depth 1 producer @mma consumers [@correction]
  ws.pipe @epi0_pipe depth 1 producer @correction consumers [@epilogue] buffers [@o_stage0]
  ws.pipe @epi1_pipe depth 1 producer @correction consumers [@epilogue] buffers [@o_stage1]
  ws.pipe @x0_pipe depth 4 producer @softmax0 consumers [@softmax1]
  ws.pipe @x1_pipe depth 4 producer @softmax1 consumers [@softmax0]
  ws.role @softmax0 softmax warps [0, 4) regs 184 rows [0, 128) {
    ws.kv_loop {
      ws.acquire @s0_pipe
      ws.read_scores @s0
      ws.release @s0_pipe
      ws.acquire @x0_pipe
      ws.release @x0_pipe
      ws.row_max @s0
      ws.acquire @f0_pipe
      ws.softmax_update @s0 -> @f0
      ws.release @f0_pipe
      ws.acquire @x1_pipe
      ws.release @x1_pipe
      ws.acquire @p0_pipe
      ws.exp2_store_p @s0 -> @p0 {hold = 1 : i64}
      ws.release @p0_pipe
    }
    ws.acquire @l0_pipe
    ws.store_row_sums -> @l0
    ws.release @l0_pipe
  }
  ws.role @softmax1 softmax warps [4, 8) regs 184 rows [128, 256) {
    ws.kv_loop {
      ws.acquire @s1_pipe
      ws.read_scores @s1
      ws.release @s1_pipe
      ws.acquire @x1_pipe
      ws.release @x1_pipe
      ws.row_max @s1
      ws.acquire @f1_pipe
      ws.softmax_update @s1 -> @f1
      ws.release @f1_pipe
      ws.acquire @x0_pipe
      ws.release @x0_pipe
      ws.acquire @x0_pipe {ahead = 1 : i64}
      ws.acquire @p1_pipe
      ws.exp2_store_p @s1 -> @p1 {hold = 4 : i64}
      ws.release @p1_pipe
    }
    ws.acquire @l1_pipe
    ws.store_row_sums -> @l1
    ws.release @l1_pipe
  }
  ws.role @correction correction warps [8, 12) regs 80 {
    ws.kv_loop {
      ws.acquire @f0_pipe
      ws.acquire @o0_pipe
      ws.correct @o0 by @f0
      ws.release @o0_pipe
      ws.release @f0_pipe
      ws.acquire @f1_pipe
      ws.acquire @o1_pipe
      ws.correct @o1 by @f1
      ws.release @o1_pipe
      ws.release @f1_pipe
    }
    ws.acquire @done_pipe
    ws.acquire @l0_pipe
    ws.acquire @epi0_pipe
    ws.epilogue @o0 -> @o_stage0 sums @l0
    ws.release @epi0_pipe
    ws.release @l0_pipe
    ws.acquire @l1_pipe
    ws.acquire @epi1_pipe
    ws.epilogue @o1 -> @o_stage1 sums @l1
    ws.release @epi1_pipe
    ws.release @l1_pipe
    ws.release @done_pipe
  }
  ws.role @mma mma warps [12, 13) regs 64 {
    ws.acquire @q_pipe
    ws.acquire @k_pipe
    ws.acquire @s0_pipe
    ws.mma qk @q0, @k -> @s0
    ws.release @s0_pipe
    ws.acquire @s1_pipe
    ws.mma qk @q1, @k -> @s1
    ws.release @s1_pipe
    ws.release @k_pipe
    ws.kv_loop {
      ws.acquire @v_pipe
      ws.acquire @k_pipe {ahead = 1 : i64}
      ws.acquire @s0_pipe {ahead = 1 : i64}
      ws.mma qk @q0, @k -> @s0 {ahead = 1 : i64}
      ws.release @s0_pipe {ahead = 1 : i64}
      ws.acquire @p0_pipe
      ws.acquire @o0_pipe
      ws.mma pv @p0, @v -> @o0
      ws.release @o0_pipe
      ws.release @p0_pipe
      ws.acquire @s1_pipe {ahead = 1 : i64}
      ws.mma qk @q1, @k -> @s1 {ahead = 1 : i64}
      ws.release @s1_pipe {ahead = 1 : i64}
      ws.acquire @p1_pipe
      ws.acquire @o1_pipe
      ws.mma pv @p1, @v -> @o1
      ws.release @o1_pipe
      ws.release @p1_pipe
      ws.release @k_pipe {ahead = 1 : i64}
      ws.release @v_pipe
    }
    ws.acquire @done_pipe
    ws.release @done_pipe
    ws.release @q_pipe
  }
  ws.role @load load warps [13, 14) regs 64 {
    ws.acquire @q_pipe
    ws.tma_load q -> @q0 via @q_pipe
    ws.tma_load q -> @q1 via @q_pipe
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
  ws.role @epilogue epilogue warps [14, 15) regs 64 {
    ws.acquire @epi0_pipe
    ws.tma_store @o_stage0 -> o
    ws.release @epi0_pipe
    ws.acquire @epi1_pipe
    ws.tma_store @o_stage1 -> o
    ws.release @epi1_pipe
  }
}

// -----

// A token ring whose slack is used: the load role runs ahead of the
// correction role on @t_pipe by more than two blocks. At depth 2 its wait
// for block 2 would block where depth 4 passes: searched again at depth 4,
// where it verifies.
// expected-remark @+1 {{token rings searched at their depths after 266 states at depth 2 (not verified: @t_pipe at depth 2: a wait whose outcome differs at depth 4 (block 2))}}
ws.kernel @ring_slack target = sm_100a, block_m = 256, block_n = 128, spec = <dtype = bf16, head_dim = 128, head_dim_v = 128, q_heads = 16, kv_heads = 16, causal = false, phase = prefill, softmax_scale = default, sparsity = none, lse = false, stats = false> schedule {block_m = 256 : i64, block_n = 128 : i64, consumer_regs = 184 : i64, cross_stage_p = true, cross_stage_p_depth = 4 : i64, cross_stage_p_hold_a = 1 : i64, cross_stage_p_hold_b = 4 : i64, kv_multicast = false, overlap = false, p_in_registers = false, persistent = false, pingpong = false, producer_regs = 64 : i64, q_in_registers = false, stages = 2 : i64, v_on_demand = false} {
  ws.buffer @q0 smem [128, 128] bf16 stages 1
  ws.buffer @q1 smem [128, 128] bf16 stages 1
  ws.buffer @k smem [128, 128] bf16 stages 2
  ws.buffer @v smem [128, 128] bf16 stages 2
  ws.buffer @o_stage0 smem [128, 128] bf16 stages 1 aliases @q0
  ws.buffer @o_stage1 smem [128, 128] bf16 stages 1 aliases @q1
  ws.buffer @f0 smem [128, 2] f32 stages 1
  ws.buffer @f1 smem [128, 2] f32 stages 1
  ws.buffer @l0 smem [128, 2] f32 stages 1
  ws.buffer @l1 smem [128, 2] f32 stages 1
  ws.buffer @s0 tmem [128, 128] f32 stages 1
  ws.buffer @s1 tmem [128, 128] f32 stages 1
  ws.buffer @p0 tmem [128, 128] bf16 stages 1 aliases @s1 at [0, 64]
  ws.buffer @p1 tmem [128, 128] bf16 stages 1 aliases @s0 at [0, 64]
  ws.buffer @o0 tmem [128, 128] f32 stages 1
  ws.buffer @o1 tmem [128, 128] f32 stages 1
  ws.pipe @q_pipe depth 1 producer @load consumers [@mma] buffers [@q0, @q1] tx_bytes 65536
  ws.pipe @k_pipe depth 2 producer @load consumers [@mma] buffers [@k] tx_bytes 32768
  ws.pipe @v_pipe depth 2 producer @load consumers [@mma] buffers [@v] tx_bytes 32768
  ws.pipe @s0_pipe depth 1 producer @mma consumers [@softmax0] buffers [@s0]
  ws.pipe @s1_pipe depth 1 producer @mma consumers [@softmax1] buffers [@s1]
  ws.pipe @p0_pipe depth 1 producer @softmax0 consumers [@mma] buffers [@p0]
  ws.pipe @p1_pipe depth 1 producer @softmax1 consumers [@mma] buffers [@p1]
  ws.pipe @f0_pipe depth 1 producer @softmax0 consumers [@correction] buffers [@f0]
  ws.pipe @f1_pipe depth 1 producer @softmax1 consumers [@correction] buffers [@f1]
  ws.pipe @l0_pipe depth 1 producer @softmax0 consumers [@correction] buffers [@l0]
  ws.pipe @l1_pipe depth 1 producer @softmax1 consumers [@correction] buffers [@l1]
  ws.pipe @o0_pipe depth 1 producer @correction consumers [@mma] buffers [@o0]
  ws.pipe @o1_pipe depth 1 producer @correction consumers [@mma] buffers [@o1]
  ws.pipe @done_pipe depth 1 producer @mma consumers [@correction]
  ws.pipe @epi0_pipe depth 1 producer @correction consumers [@epilogue] buffers [@o_stage0]
  ws.pipe @epi1_pipe depth 1 producer @correction consumers [@epilogue] buffers [@o_stage1]
  ws.pipe @t_pipe depth 4 producer @load consumers [@correction]
  ws.pipe @x0_pipe depth 4 producer @softmax0 consumers [@softmax1]
  ws.pipe @x1_pipe depth 4 producer @softmax1 consumers [@softmax0]
  ws.role @softmax0 softmax warps [0, 4) regs 184 rows [0, 128) {
    ws.kv_loop {
      ws.acquire @s0_pipe
      ws.read_scores @s0
      ws.release @s0_pipe
      ws.acquire @x0_pipe
      ws.release @x0_pipe
      ws.row_max @s0
      ws.acquire @f0_pipe
      ws.softmax_update @s0 -> @f0
      ws.release @f0_pipe
      ws.acquire @x1_pipe
      ws.release @x1_pipe
      ws.acquire @p0_pipe
      ws.exp2_store_p @s0 -> @p0 {hold = 1 : i64}
      ws.release @p0_pipe
    }
    ws.acquire @l0_pipe
    ws.store_row_sums -> @l0
    ws.release @l0_pipe
  }
  ws.role @softmax1 softmax warps [4, 8) regs 184 rows [128, 256) {
    ws.kv_loop {
      ws.acquire @s1_pipe
      ws.read_scores @s1
      ws.release @s1_pipe
      ws.acquire @x1_pipe
      ws.release @x1_pipe
      ws.row_max @s1
      ws.acquire @f1_pipe
      ws.softmax_update @s1 -> @f1
      ws.release @f1_pipe
      ws.acquire @x0_pipe
      ws.release @x0_pipe
      ws.acquire @x0_pipe {ahead = 1 : i64}
      ws.acquire @p1_pipe
      ws.exp2_store_p @s1 -> @p1 {hold = 4 : i64}
      ws.release @p1_pipe
    }
    ws.acquire @l1_pipe
    ws.store_row_sums -> @l1
    ws.release @l1_pipe
  }
  ws.role @correction correction warps [8, 12) regs 80 {
    ws.kv_loop {
      ws.acquire @t_pipe
      ws.release @t_pipe
      ws.acquire @f0_pipe
      ws.acquire @o0_pipe
      ws.correct @o0 by @f0
      ws.release @o0_pipe
      ws.release @f0_pipe
      ws.acquire @f1_pipe
      ws.acquire @o1_pipe
      ws.correct @o1 by @f1
      ws.release @o1_pipe
      ws.release @f1_pipe
    }
    ws.acquire @done_pipe
    ws.acquire @l0_pipe
    ws.acquire @epi0_pipe
    ws.epilogue @o0 -> @o_stage0 sums @l0
    ws.release @epi0_pipe
    ws.release @l0_pipe
    ws.acquire @l1_pipe
    ws.acquire @epi1_pipe
    ws.epilogue @o1 -> @o_stage1 sums @l1
    ws.release @epi1_pipe
    ws.release @l1_pipe
    ws.release @done_pipe
  }
  ws.role @mma mma warps [12, 13) regs 64 {
    ws.acquire @q_pipe
    ws.acquire @k_pipe
    ws.acquire @s0_pipe
    ws.mma qk @q0, @k -> @s0
    ws.release @s0_pipe
    ws.acquire @s1_pipe
    ws.mma qk @q1, @k -> @s1
    ws.release @s1_pipe
    ws.release @k_pipe
    ws.kv_loop {
      ws.acquire @v_pipe
      ws.acquire @k_pipe {ahead = 1 : i64}
      ws.acquire @s0_pipe {ahead = 1 : i64}
      ws.mma qk @q0, @k -> @s0 {ahead = 1 : i64}
      ws.release @s0_pipe {ahead = 1 : i64}
      ws.acquire @p0_pipe
      ws.acquire @o0_pipe
      ws.mma pv @p0, @v -> @o0
      ws.release @o0_pipe
      ws.release @p0_pipe
      ws.acquire @s1_pipe {ahead = 1 : i64}
      ws.mma qk @q1, @k -> @s1 {ahead = 1 : i64}
      ws.release @s1_pipe {ahead = 1 : i64}
      ws.acquire @p1_pipe
      ws.acquire @o1_pipe
      ws.mma pv @p1, @v -> @o1
      ws.release @o1_pipe
      ws.release @p1_pipe
      ws.release @k_pipe {ahead = 1 : i64}
      ws.release @v_pipe
    }
    ws.acquire @done_pipe
    ws.release @done_pipe
    ws.release @q_pipe
  }
  ws.role @load load warps [13, 14) regs 64 {
    ws.acquire @q_pipe
    ws.tma_load q -> @q0 via @q_pipe
    ws.tma_load q -> @q1 via @q_pipe
    ws.release @q_pipe
    ws.kv_loop {
      ws.acquire @t_pipe
      ws.release @t_pipe
      ws.acquire @k_pipe
      ws.tma_load k -> @k via @k_pipe
      ws.release @k_pipe
      ws.acquire @v_pipe
      ws.tma_load v -> @v via @v_pipe
      ws.release @v_pipe
    }
  }
  ws.role @epilogue epilogue warps [14, 15) regs 64 {
    ws.acquire @epi0_pipe
    ws.tma_store @o_stage0 -> o
    ws.release @epi0_pipe
    ws.acquire @epi1_pipe
    ws.tma_store @o_stage1 -> o
    ws.release @epi1_pipe
  }
}

// -----

// Cross-stage P at depth 4 without tile 1's wait for the next block's
// token (as @no_head_start in blasst-verify-sync-sm100.mlir): found at
// depth 2, searched again at depth 4 for the verdict and the trace.
// expected-note @+1 {{with 2 KV blocks}}
ws.kernel @no_head_start_depth4 target = sm_100a, block_m = 256, block_n = 128, spec = <dtype = bf16, head_dim = 128, head_dim_v = 128, q_heads = 16, kv_heads = 16, causal = false, phase = prefill, softmax_scale = default, sparsity = none, lse = false, stats = false> schedule {block_m = 256 : i64, block_n = 128 : i64, consumer_regs = 184 : i64, cross_stage_p = true, cross_stage_p_depth = 4 : i64, cross_stage_p_hold_a = 1 : i64, cross_stage_p_hold_b = 4 : i64, kv_multicast = false, overlap = false, p_in_registers = false, persistent = false, pingpong = false, producer_regs = 64 : i64, q_in_registers = false, stages = 2 : i64, v_on_demand = false} {
  ws.buffer @q0 smem [128, 128] bf16 stages 1
  ws.buffer @q1 smem [128, 128] bf16 stages 1
  ws.buffer @k smem [128, 128] bf16 stages 2
  ws.buffer @v smem [128, 128] bf16 stages 2
  ws.buffer @o_stage0 smem [128, 128] bf16 stages 1 aliases @q0
  ws.buffer @o_stage1 smem [128, 128] bf16 stages 1 aliases @q1
  ws.buffer @f0 smem [128, 2] f32 stages 1
  ws.buffer @f1 smem [128, 2] f32 stages 1
  ws.buffer @l0 smem [128, 2] f32 stages 1
  ws.buffer @l1 smem [128, 2] f32 stages 1
  ws.buffer @s0 tmem [128, 128] f32 stages 1
  ws.buffer @s1 tmem [128, 128] f32 stages 1
  ws.buffer @p0 tmem [128, 128] bf16 stages 1 aliases @s1 at [0, 64]
  ws.buffer @p1 tmem [128, 128] bf16 stages 1 aliases @s0 at [0, 64]
  ws.buffer @o0 tmem [128, 128] f32 stages 1
  ws.buffer @o1 tmem [128, 128] f32 stages 1
  ws.pipe @q_pipe depth 1 producer @load consumers [@mma] buffers [@q0, @q1] tx_bytes 65536
  ws.pipe @k_pipe depth 2 producer @load consumers [@mma] buffers [@k] tx_bytes 32768
  ws.pipe @v_pipe depth 2 producer @load consumers [@mma] buffers [@v] tx_bytes 32768
  ws.pipe @s0_pipe depth 1 producer @mma consumers [@softmax0] buffers [@s0]
  ws.pipe @s1_pipe depth 1 producer @mma consumers [@softmax1] buffers [@s1]
  ws.pipe @p0_pipe depth 1 producer @softmax0 consumers [@mma] buffers [@p0]
  ws.pipe @p1_pipe depth 1 producer @softmax1 consumers [@mma] buffers [@p1]
  ws.pipe @f0_pipe depth 1 producer @softmax0 consumers [@correction] buffers [@f0]
  ws.pipe @f1_pipe depth 1 producer @softmax1 consumers [@correction] buffers [@f1]
  ws.pipe @l0_pipe depth 1 producer @softmax0 consumers [@correction] buffers [@l0]
  ws.pipe @l1_pipe depth 1 producer @softmax1 consumers [@correction] buffers [@l1]
  ws.pipe @o0_pipe depth 1 producer @correction consumers [@mma] buffers [@o0]
  ws.pipe @o1_pipe depth 1 producer @correction consumers [@mma] buffers [@o1]
  ws.pipe @done_pipe depth 1 producer @mma consumers [@correction]
  ws.pipe @epi0_pipe depth 1 producer @correction consumers [@epilogue] buffers [@o_stage0]
  ws.pipe @epi1_pipe depth 1 producer @correction consumers [@epilogue] buffers [@o_stage1]
  ws.pipe @x0_pipe depth 4 producer @softmax0 consumers [@softmax1]
  ws.pipe @x1_pipe depth 4 producer @softmax1 consumers [@softmax0]
  ws.role @softmax0 softmax warps [0, 4) regs 184 rows [0, 128) {
    ws.kv_loop {
      ws.acquire @s0_pipe
      // expected-error @+1 {{value overwritten before it was read: @softmax0 reads @s0 (stage 0) expecting S of block 1 but finds P of block 0}}
      ws.read_scores @s0
      ws.release @s0_pipe
      ws.acquire @x0_pipe
      ws.release @x0_pipe
      ws.row_max @s0
      ws.acquire @f0_pipe
      ws.softmax_update @s0 -> @f0
      ws.release @f0_pipe
      ws.acquire @x1_pipe
      ws.release @x1_pipe
      ws.acquire @p0_pipe
      ws.exp2_store_p @s0 -> @p0 {hold = 1 : i64}
      ws.release @p0_pipe
    }
    ws.acquire @l0_pipe
    ws.store_row_sums -> @l0
    ws.release @l0_pipe
  }
  ws.role @softmax1 softmax warps [4, 8) regs 184 rows [128, 256) {
    ws.kv_loop {
      ws.acquire @s1_pipe
      ws.read_scores @s1
      ws.release @s1_pipe
      ws.acquire @x1_pipe
      ws.release @x1_pipe
      ws.row_max @s1
      ws.acquire @f1_pipe
      ws.softmax_update @s1 -> @f1
      ws.release @f1_pipe
      ws.acquire @x0_pipe
      ws.release @x0_pipe
      ws.acquire @p1_pipe
      ws.exp2_store_p @s1 -> @p1 {hold = 4 : i64}
      ws.release @p1_pipe
    }
    ws.acquire @l1_pipe
    ws.store_row_sums -> @l1
    ws.release @l1_pipe
  }
  ws.role @correction correction warps [8, 12) regs 80 {
    ws.kv_loop {
      ws.acquire @f0_pipe
      ws.acquire @o0_pipe
      ws.correct @o0 by @f0
      ws.release @o0_pipe
      ws.release @f0_pipe
      ws.acquire @f1_pipe
      ws.acquire @o1_pipe
      ws.correct @o1 by @f1
      ws.release @o1_pipe
      ws.release @f1_pipe
    }
    ws.acquire @done_pipe
    ws.acquire @l0_pipe
    ws.acquire @epi0_pipe
    ws.epilogue @o0 -> @o_stage0 sums @l0
    ws.release @epi0_pipe
    ws.release @l0_pipe
    ws.acquire @l1_pipe
    ws.acquire @epi1_pipe
    ws.epilogue @o1 -> @o_stage1 sums @l1
    ws.release @epi1_pipe
    ws.release @l1_pipe
    ws.release @done_pipe
  }
  ws.role @mma mma warps [12, 13) regs 64 {
    ws.acquire @q_pipe
    ws.acquire @k_pipe
    ws.acquire @s0_pipe
    ws.mma qk @q0, @k -> @s0
    ws.release @s0_pipe
    ws.acquire @s1_pipe
    ws.mma qk @q1, @k -> @s1
    ws.release @s1_pipe
    ws.release @k_pipe
    ws.kv_loop {
      ws.acquire @v_pipe
      ws.acquire @k_pipe {ahead = 1 : i64}
      ws.acquire @s0_pipe {ahead = 1 : i64}
      ws.mma qk @q0, @k -> @s0 {ahead = 1 : i64}
      ws.release @s0_pipe {ahead = 1 : i64}
      ws.acquire @p0_pipe
      ws.acquire @o0_pipe
      ws.mma pv @p0, @v -> @o0
      ws.release @o0_pipe
      ws.release @p0_pipe
      ws.acquire @s1_pipe {ahead = 1 : i64}
      ws.mma qk @q1, @k -> @s1 {ahead = 1 : i64}
      ws.release @s1_pipe {ahead = 1 : i64}
      ws.acquire @p1_pipe
      ws.acquire @o1_pipe
      ws.mma pv @p1, @v -> @o1
      ws.release @o1_pipe
      ws.release @p1_pipe
      ws.release @k_pipe {ahead = 1 : i64}
      ws.release @v_pipe
    }
    ws.acquire @done_pipe
    ws.release @done_pipe
    ws.release @q_pipe
  }
  ws.role @load load warps [13, 14) regs 64 {
    ws.acquire @q_pipe
    ws.tma_load q -> @q0 via @q_pipe
    ws.tma_load q -> @q1 via @q_pipe
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
  ws.role @epilogue epilogue warps [14, 15) regs 64 {
    ws.acquire @epi0_pipe
    ws.tma_store @o_stage0 -> o
    ws.release @epi0_pipe
    ws.acquire @epi1_pipe
    ws.tma_store @o_stage1 -> o
    ws.release @epi1_pipe
  }
}
