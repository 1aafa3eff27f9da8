// blasst-verify-sync on sm_100a: the MMA warp's tcgen05.mma products run
// on the tensor cores in issue order and its releases are tcgen05.commit
// (they arrive once every product before them is done); every read of
// shared storage (smem, tensor memory; P over S, the output tile over Q)
// must see the value attention needs.
//
// The schedules convert-attn-to-ws builds for sm_100a verify:
// RUN: blasst-opt %s -split-input-file -verify-diagnostics --convert-attn-to-ws=target=sm_100a --blasst-verify-sync=report=true -o /dev/null
// RUN: blasst-opt %s -split-input-file -verify-diagnostics --convert-attn-to-ws="target=sm_100a block-n=64 stages=3" --blasst-verify-sync=report=true -o /dev/null
// With the vote pass (BLASST specs; dense ones are unchanged):
// RUN: blasst-opt %s -split-input-file -verify-diagnostics --convert-attn-to-ws=target=sm_100a --blasst-insert-vote --blasst-verify-sync=report=true -o /dev/null
// RUN: blasst-opt %s -split-input-file -verify-diagnostics --convert-attn-to-ws="target=sm_100a block-n=64 stages=3" --blasst-insert-vote --blasst-verify-sync=report=true -o /dev/null
// The mutations below are ws IR; each is rejected with a trace.

func.func @causal_gqa(%q: memref<?x?x32x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x32x128xbf16>) {
  // expected-remark @+1 {{synchronisation verified}}
  attn.attention %q, %k, %v -> %o spec(<head_dim = 128, q_heads = 32, kv_heads = 8, causal = true>) : memref<?x?x32x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x32x128xbf16>
  return
}

// -----

func.func @hd64_lse(%q: memref<?x?x16x64xf16>, %k: memref<?x?x16x64xf16>, %v: memref<?x?x16x64xf16>, %o: memref<?x?x16x64xf16>, %lse: memref<?x16x?xf32>) {
  // expected-remark @+1 {{synchronisation verified}}
  attn.attention %q, %k, %v -> %o lse(%lse : memref<?x16x?xf32>) spec(<dtype = f16, head_dim = 64, q_heads = 16, kv_heads = 16, lse = true>) : memref<?x?x16x64xf16>, memref<?x?x16x64xf16>, memref<?x?x16x64xf16>, memref<?x?x16x64xf16>
  return
}

// -----

// The next Q Kᵀ of tile 0 issued before P V of this block: the scores of
// block 1 land over P of block 0 (P lies over S) before P V reads it.
// expected-note @+1 {{with 2 KV blocks}}
ws.kernel @qk_before_pv target = sm_100a, block_m = 256, block_n = 128, spec = <dtype = bf16, head_dim = 128, head_dim_v = 128, q_heads = 8, kv_heads = 8, causal = false, phase = prefill, softmax_scale = default, sparsity = none, lse = false, stats = false> schedule {block_m = 256 : i64, block_n = 128 : i64, consumer_regs = 192 : i64, kv_multicast = false, overlap = false, p_in_registers = false, persistent = false, pingpong = false, producer_regs = 48 : i64, q_in_registers = false, stages = 2 : i64, v_on_demand = false} {
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
  ws.buffer @p0 tmem [128, 128] bf16 stages 1 aliases @s0
  ws.buffer @p1 tmem [128, 128] bf16 stages 1 aliases @s1
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
  ws.role @softmax0 softmax warps [0, 4) regs 192 rows [0, 128) {
    ws.kv_loop {
      ws.acquire @s0_pipe
      ws.read_scores @s0
      ws.row_max @s0
      ws.acquire @f0_pipe
      ws.softmax_update @s0 -> @f0
      ws.release @f0_pipe
      ws.acquire @p0_pipe
      ws.exp2_store_p @s0 -> @p0
      ws.release @p0_pipe
      ws.release @s0_pipe
    }
    ws.acquire @l0_pipe
    ws.store_row_sums -> @l0
    ws.release @l0_pipe
  }
  ws.role @softmax1 softmax warps [4, 8) regs 192 rows [128, 256) {
    ws.kv_loop {
      ws.acquire @s1_pipe
      ws.read_scores @s1
      ws.row_max @s1
      ws.acquire @f1_pipe
      ws.softmax_update @s1 -> @f1
      ws.release @f1_pipe
      ws.acquire @p1_pipe
      ws.exp2_store_p @s1 -> @p1
      ws.release @p1_pipe
      ws.release @s1_pipe
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
  ws.role @mma mma warps [12, 13) regs 48 {
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
      ws.acquire @p0_pipe
      ws.acquire @o0_pipe
      ws.acquire @s0_pipe {ahead = 1 : i64}
      ws.mma qk @q0, @k -> @s0 {ahead = 1 : i64}
      ws.release @s0_pipe {ahead = 1 : i64}
      // expected-error @+1 {{'ws.mma' op fails sync verification: value overwritten before it was read: the tensor cores reads @p0 (stage 0) expecting P of block 0 but finds S of block 1}}
      ws.mma pv @p0, @v -> @o0
      ws.release @o0_pipe
      ws.release @p0_pipe
      ws.acquire @p1_pipe
      ws.acquire @o1_pipe
      ws.mma pv @p1, @v -> @o1
      ws.release @o1_pipe
      ws.release @p1_pipe
      ws.acquire @s1_pipe {ahead = 1 : i64}
      ws.mma qk @q1, @k -> @s1 {ahead = 1 : i64}
      ws.release @s1_pipe {ahead = 1 : i64}
      ws.release @k_pipe {ahead = 1 : i64}
      ws.release @v_pipe
    }
    ws.acquire @done_pipe
    ws.release @done_pipe
    ws.release @q_pipe
  }
  ws.role @load load warps [13, 14) regs 48 {
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
  ws.role @epilogue epilogue warps [14, 15) regs 48 {
    ws.acquire @epi0_pipe
    ws.tma_store @o_stage0 -> o
    ws.release @epi0_pipe
    ws.acquire @epi1_pipe
    ws.tma_store @o_stage1 -> o
    ws.release @epi1_pipe
  }
}
// -----

// P V issued without waiting for the correction role's rescale of O.
// expected-note @+1 {{with 1 KV block}}
ws.kernel @pv_without_correction target = sm_100a, block_m = 256, block_n = 128, spec = <dtype = bf16, head_dim = 128, head_dim_v = 128, q_heads = 8, kv_heads = 8, causal = false, phase = prefill, softmax_scale = default, sparsity = none, lse = false, stats = false> schedule {block_m = 256 : i64, block_n = 128 : i64, consumer_regs = 192 : i64, kv_multicast = false, overlap = false, p_in_registers = false, persistent = false, pingpong = false, producer_regs = 48 : i64, q_in_registers = false, stages = 2 : i64, v_on_demand = false} {
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
  ws.buffer @p0 tmem [128, 128] bf16 stages 1 aliases @s0
  ws.buffer @p1 tmem [128, 128] bf16 stages 1 aliases @s1
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
  ws.role @softmax0 softmax warps [0, 4) regs 192 rows [0, 128) {
    ws.kv_loop {
      ws.acquire @s0_pipe
      ws.read_scores @s0
      ws.row_max @s0
      ws.acquire @f0_pipe
      ws.softmax_update @s0 -> @f0
      ws.release @f0_pipe
      ws.acquire @p0_pipe
      ws.exp2_store_p @s0 -> @p0
      ws.release @p0_pipe
      ws.release @s0_pipe
    }
    ws.acquire @l0_pipe
    ws.store_row_sums -> @l0
    ws.release @l0_pipe
  }
  ws.role @softmax1 softmax warps [4, 8) regs 192 rows [128, 256) {
    ws.kv_loop {
      ws.acquire @s1_pipe
      ws.read_scores @s1
      ws.row_max @s1
      ws.acquire @f1_pipe
      ws.softmax_update @s1 -> @f1
      ws.release @f1_pipe
      ws.acquire @p1_pipe
      ws.exp2_store_p @s1 -> @p1
      ws.release @p1_pipe
      ws.release @s1_pipe
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
  ws.role @mma mma warps [12, 13) regs 48 {
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
      ws.acquire @p0_pipe
      // expected-error @+1 {{read before write: the tensor cores reads @o0 (stage 0) expecting O rescaled for block 0 but finds nothing (never written)}}
      ws.mma pv @p0, @v -> @o0
      ws.release @p0_pipe
      ws.acquire @s0_pipe {ahead = 1 : i64}
      ws.mma qk @q0, @k -> @s0 {ahead = 1 : i64}
      ws.release @s0_pipe {ahead = 1 : i64}
      ws.acquire @p1_pipe
      ws.acquire @o1_pipe
      ws.mma pv @p1, @v -> @o1
      ws.release @o1_pipe
      ws.release @p1_pipe
      ws.acquire @s1_pipe {ahead = 1 : i64}
      ws.mma qk @q1, @k -> @s1 {ahead = 1 : i64}
      ws.release @s1_pipe {ahead = 1 : i64}
      ws.release @k_pipe {ahead = 1 : i64}
      ws.release @v_pipe
    }
    ws.acquire @done_pipe
    ws.release @done_pipe
    ws.release @q_pipe
  }
  ws.role @load load warps [13, 14) regs 48 {
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
  ws.role @epilogue epilogue warps [14, 15) regs 48 {
    ws.acquire @epi0_pipe
    ws.tma_store @o_stage0 -> o
    ws.release @epi0_pipe
    ws.acquire @epi1_pipe
    ws.tma_store @o_stage1 -> o
    ws.release @epi1_pipe
  }
}
// -----

// The correction role reads the factors of a block without waiting for
// softmax0 to write them.
// expected-note @+1 {{@correction: ws.acquire @o0_pipe (block 0)}}
ws.kernel @correction_without_factors target = sm_100a, block_m = 256, block_n = 128, spec = <dtype = bf16, head_dim = 128, head_dim_v = 128, q_heads = 8, kv_heads = 8, causal = false, phase = prefill, softmax_scale = default, sparsity = none, lse = false, stats = false> schedule {block_m = 256 : i64, block_n = 128 : i64, consumer_regs = 192 : i64, kv_multicast = false, overlap = false, p_in_registers = false, persistent = false, pingpong = false, producer_regs = 48 : i64, q_in_registers = false, stages = 2 : i64, v_on_demand = false} {
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
  ws.buffer @p0 tmem [128, 128] bf16 stages 1 aliases @s0
  ws.buffer @p1 tmem [128, 128] bf16 stages 1 aliases @s1
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
  ws.role @softmax0 softmax warps [0, 4) regs 192 rows [0, 128) {
    ws.kv_loop {
      ws.acquire @s0_pipe
      ws.read_scores @s0
      ws.row_max @s0
      ws.acquire @f0_pipe
      ws.softmax_update @s0 -> @f0
      ws.release @f0_pipe
      ws.acquire @p0_pipe
      ws.exp2_store_p @s0 -> @p0
      ws.release @p0_pipe
      ws.release @s0_pipe
    }
    ws.acquire @l0_pipe
    ws.store_row_sums -> @l0
    ws.release @l0_pipe
  }
  ws.role @softmax1 softmax warps [4, 8) regs 192 rows [128, 256) {
    ws.kv_loop {
      ws.acquire @s1_pipe
      ws.read_scores @s1
      ws.row_max @s1
      ws.acquire @f1_pipe
      ws.softmax_update @s1 -> @f1
      ws.release @f1_pipe
      ws.acquire @p1_pipe
      ws.exp2_store_p @s1 -> @p1
      ws.release @p1_pipe
      ws.release @s1_pipe
    }
    ws.acquire @l1_pipe
    ws.store_row_sums -> @l1
    ws.release @l1_pipe
  }
  ws.role @correction correction warps [8, 12) regs 80 {
    ws.kv_loop {
      ws.acquire @o0_pipe
      // expected-error @+1 {{read before write: @correction reads @f0 (stage 0) expecting the correction factors of block 0 but finds nothing (never written)}}
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
  ws.role @mma mma warps [12, 13) regs 48 {
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
      ws.acquire @p0_pipe
      ws.acquire @o0_pipe
      ws.mma pv @p0, @v -> @o0
      ws.release @o0_pipe
      ws.release @p0_pipe
      ws.acquire @s0_pipe {ahead = 1 : i64}
      ws.mma qk @q0, @k -> @s0 {ahead = 1 : i64}
      ws.release @s0_pipe {ahead = 1 : i64}
      ws.acquire @p1_pipe
      ws.acquire @o1_pipe
      ws.mma pv @p1, @v -> @o1
      ws.release @o1_pipe
      ws.release @p1_pipe
      ws.acquire @s1_pipe {ahead = 1 : i64}
      ws.mma qk @q1, @k -> @s1 {ahead = 1 : i64}
      ws.release @s1_pipe {ahead = 1 : i64}
      ws.release @k_pipe {ahead = 1 : i64}
      ws.release @v_pipe
    }
    ws.acquire @done_pipe
    ws.release @done_pipe
    ws.release @q_pipe
  }
  ws.role @load load warps [13, 14) regs 48 {
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
  ws.role @epilogue epilogue warps [14, 15) regs 48 {
    ws.acquire @epi0_pipe
    ws.tma_store @o_stage0 -> o
    ws.release @epi0_pipe
    ws.acquire @epi1_pipe
    ws.tma_store @o_stage1 -> o
    ws.release @epi1_pipe
  }
}
// -----

// Without the MMA warp's last commit the correction role writes the output
// tile before the products are done: the output tile lies over Q, whose
// copy can still land after it (with no KV block at all).
// expected-note @+1 {{with 0 KV blocks}}
ws.kernel @no_last_commit target = sm_100a, block_m = 256, block_n = 128, spec = <dtype = bf16, head_dim = 128, head_dim_v = 128, q_heads = 8, kv_heads = 8, causal = false, phase = prefill, softmax_scale = default, sparsity = none, lse = false, stats = false> schedule {block_m = 256 : i64, block_n = 128 : i64, consumer_regs = 192 : i64, kv_multicast = false, overlap = false, p_in_registers = false, persistent = false, pingpong = false, producer_regs = 48 : i64, q_in_registers = false, stages = 2 : i64, v_on_demand = false} {
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
  ws.buffer @p0 tmem [128, 128] bf16 stages 1 aliases @s0
  ws.buffer @p1 tmem [128, 128] bf16 stages 1 aliases @s1
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
  ws.role @softmax0 softmax warps [0, 4) regs 192 rows [0, 128) {
    ws.kv_loop {
      ws.acquire @s0_pipe
      ws.read_scores @s0
      ws.row_max @s0
      ws.acquire @f0_pipe
      ws.softmax_update @s0 -> @f0
      ws.release @f0_pipe
      ws.acquire @p0_pipe
      ws.exp2_store_p @s0 -> @p0
      ws.release @p0_pipe
      ws.release @s0_pipe
    }
    ws.acquire @l0_pipe
    ws.store_row_sums -> @l0
    ws.release @l0_pipe
  }
  ws.role @softmax1 softmax warps [4, 8) regs 192 rows [128, 256) {
    ws.kv_loop {
      ws.acquire @s1_pipe
      ws.read_scores @s1
      ws.row_max @s1
      ws.acquire @f1_pipe
      ws.softmax_update @s1 -> @f1
      ws.release @f1_pipe
      ws.acquire @p1_pipe
      ws.exp2_store_p @s1 -> @p1
      ws.release @p1_pipe
      ws.release @s1_pipe
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
  }
  ws.role @mma mma warps [12, 13) regs 48 {
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
      ws.acquire @p0_pipe
      ws.acquire @o0_pipe
      ws.mma pv @p0, @v -> @o0
      ws.release @o0_pipe
      ws.release @p0_pipe
      ws.acquire @s0_pipe {ahead = 1 : i64}
      ws.mma qk @q0, @k -> @s0 {ahead = 1 : i64}
      ws.release @s0_pipe {ahead = 1 : i64}
      ws.acquire @p1_pipe
      ws.acquire @o1_pipe
      ws.mma pv @p1, @v -> @o1
      ws.release @o1_pipe
      ws.release @p1_pipe
      ws.acquire @s1_pipe {ahead = 1 : i64}
      ws.mma qk @q1, @k -> @s1 {ahead = 1 : i64}
      ws.release @s1_pipe {ahead = 1 : i64}
      ws.release @k_pipe {ahead = 1 : i64}
      ws.release @v_pipe
    }
    ws.release @q_pipe
  }
  ws.role @load load warps [13, 14) regs 48 {
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
  ws.role @epilogue epilogue warps [14, 15) regs 48 {
    ws.acquire @epi0_pipe
    // expected-error @+1 {{value overwritten before it was read: @epilogue reads @o_stage0 (stage 0) expecting output tile 0 of tile 0 but finds Q of tile 0}}
    ws.tma_store @o_stage0 -> o
    ws.release @epi0_pipe
    ws.acquire @epi1_pipe
    ws.tma_store @o_stage1 -> o
    ws.release @epi1_pipe
  }
}

// -----

// Cross-stage P without tile 1's wait for the next block's token (the
// head start): P_1 of block 0 lands over S_0 of block 1 before softmax0
// read those scores.
// expected-note @+1 {{with 2 KV blocks}}
ws.kernel @no_head_start target = sm_100a, block_m = 256, block_n = 128, spec = <dtype = bf16, head_dim = 128, head_dim_v = 128, q_heads = 8, kv_heads = 8, causal = false, phase = prefill, softmax_scale = default, sparsity = none, lse = false, stats = false> schedule {block_m = 256 : i64, block_n = 128 : i64, consumer_regs = 192 : i64, cross_stage_p = true, cross_stage_p_depth = 2 : i64, kv_multicast = false, overlap = false, p_in_registers = false, persistent = false, pingpong = false, producer_regs = 48 : i64, q_in_registers = false, stages = 2 : i64, v_on_demand = false} {
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
  ws.pipe @x0_pipe depth 2 producer @softmax0 consumers [@softmax1]
  ws.pipe @x1_pipe depth 2 producer @softmax1 consumers [@softmax0]
  ws.role @softmax0 softmax warps [0, 4) regs 192 rows [0, 128) {
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
  ws.role @softmax1 softmax warps [4, 8) regs 192 rows [128, 256) {
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
  ws.role @mma mma warps [12, 13) regs 48 {
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
  ws.role @load load warps [13, 14) regs 48 {
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
  ws.role @epilogue epilogue warps [14, 15) regs 48 {
    ws.acquire @epi0_pipe
    ws.tma_store @o_stage0 -> o
    ws.release @epi0_pipe
    ws.acquire @epi1_pipe
    ws.tma_store @o_stage1 -> o
    ws.release @epi1_pipe
  }
}

// -----

// Cross-stage P with S released before it is read: the next Q Kᵀ
// overwrites the scores.
// expected-note @+1 {{with 2 KV blocks}}
ws.kernel @s_free_before_read target = sm_100a, block_m = 256, block_n = 128, spec = <dtype = bf16, head_dim = 128, head_dim_v = 128, q_heads = 8, kv_heads = 8, causal = false, phase = prefill, softmax_scale = default, sparsity = none, lse = false, stats = false> schedule {block_m = 256 : i64, block_n = 128 : i64, consumer_regs = 192 : i64, cross_stage_p = true, cross_stage_p_depth = 2 : i64, kv_multicast = false, overlap = false, p_in_registers = false, persistent = false, pingpong = false, producer_regs = 48 : i64, q_in_registers = false, stages = 2 : i64, v_on_demand = false} {
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
  ws.pipe @x0_pipe depth 2 producer @softmax0 consumers [@softmax1]
  ws.pipe @x1_pipe depth 2 producer @softmax1 consumers [@softmax0]
  ws.role @softmax0 softmax warps [0, 4) regs 192 rows [0, 128) {
    ws.kv_loop {
      ws.acquire @s0_pipe
      ws.release @s0_pipe
      // expected-error @+1 {{value overwritten before it was read: @softmax0 reads @s0 (stage 0) expecting S of block 0 but finds S of block 1}}
      ws.read_scores @s0
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
  ws.role @softmax1 softmax warps [4, 8) regs 192 rows [128, 256) {
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
  ws.role @mma mma warps [12, 13) regs 48 {
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
  ws.role @load load warps [13, 14) regs 48 {
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
  ws.role @epilogue epilogue warps [14, 15) regs 48 {
    ws.acquire @epi0_pipe
    ws.tma_store @o_stage0 -> o
    ws.release @epi0_pipe
    ws.acquire @epi1_pipe
    ws.tma_store @o_stage1 -> o
    ws.release @epi1_pipe
  }
}

// -----

// BLASST (blasst-insert-vote): every keep/skip outcome of both tiles' votes.
func.func @blasst_causal_gqa(%q: memref<?x?x32x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x32x128xbf16>, %s: memref<?x32x2xi64>) {
  // expected-remark @+1 {{synchronisation verified}}
  attn.attention %q, %k, %v -> %o stats(%s : memref<?x32x2xi64>) spec(<head_dim = 128, q_heads = 32, kv_heads = 8, causal = true, sparsity = blasst(a = 1000.0), stats = true>) : memref<?x?x32x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x32x128xbf16>
  return
}

// -----

func.func @blasst_hd64(%q: memref<?x?x16x64xf16>, %k: memref<?x?x16x64xf16>, %v: memref<?x?x16x64xf16>, %o: memref<?x?x16x64xf16>) {
  // expected-remark @+1 {{synchronisation verified}}
  attn.attention %q, %k, %v -> %o spec(<dtype = f16, head_dim = 64, q_heads = 16, kv_heads = 16, sparsity = blasst(ln_lambda = -4.0)>) : memref<?x?x16x64xf16>, memref<?x?x16x64xf16>, memref<?x?x16x64xf16>, memref<?x?x16x64xf16>
  return
}

// -----

// The MMA warp reads tile 0's decision before its acquire of P_0: the
// word of block 0 may not be written yet.
// expected-note @+1 {{with 1 KV block}}
ws.kernel @mma_reads_early target = sm_100a, block_m = 256, block_n = 128, spec = <dtype = bf16, head_dim = 64, head_dim_v = 64, q_heads = 8, kv_heads = 8, causal = false, phase = prefill, softmax_scale = default, sparsity = blasst(ln_lambda = -8.000000e+00), lse = false, stats = false> schedule {block_m = 256 : i64, block_n = 128 : i64, consumer_regs = 160 : i64, kv_multicast = false, overlap = false, p_in_registers = false, persistent = false, pingpong = false, producer_regs = 96 : i64, q_in_registers = false, stages = 2 : i64, v_on_demand = false} {
  ws.buffer @q0 smem [128, 64] bf16 stages 1
  ws.buffer @q1 smem [128, 64] bf16 stages 1
  ws.buffer @k smem [128, 64] bf16 stages 2
  ws.buffer @v smem [128, 64] bf16 stages 2
  ws.buffer @o_stage0 smem [128, 64] bf16 stages 1 aliases @q0
  ws.buffer @o_stage1 smem [128, 64] bf16 stages 1 aliases @q1
  ws.buffer @f0 smem [128, 2] f32 stages 1
  ws.buffer @f1 smem [128, 2] f32 stages 1
  ws.buffer @l0 smem [128, 2] f32 stages 1
  ws.buffer @l1 smem [128, 2] f32 stages 1
  ws.buffer @s0 tmem [128, 128] f32 stages 1
  ws.buffer @s1 tmem [128, 128] f32 stages 1
  ws.buffer @p0 tmem [128, 128] bf16 stages 1 aliases @s0
  ws.buffer @p1 tmem [128, 128] bf16 stages 1 aliases @s1
  ws.buffer @o0 tmem [128, 64] f32 stages 1
  ws.buffer @o1 tmem [128, 64] f32 stages 1
  ws.buffer @vote_f0 smem [1, 1] i32 stages 1
  ws.buffer @vote_p0 smem [1, 1] i32 stages 1
  ws.buffer @vote_f1 smem [1, 1] i32 stages 1
  ws.buffer @vote_p1 smem [1, 1] i32 stages 1
  ws.pipe @q_pipe depth 1 producer @load consumers [@mma] buffers [@q0, @q1] tx_bytes 32768
  ws.pipe @k_pipe depth 2 producer @load consumers [@mma] buffers [@k] tx_bytes 16384
  ws.pipe @v_pipe depth 2 producer @load consumers [@mma] buffers [@v] tx_bytes 16384
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
  ws.role @softmax0 softmax warps [0, 4) regs 160 rows [0, 128) {
    ws.kv_loop {
      ws.acquire @s0_pipe
      ws.read_scores @s0
      ws.row_max @s0
      ws.vote @s0
      ws.acquire @f0_pipe
      ws.store_vote @vote_f0
      ws.unless_skipped {
        ws.softmax_update @s0 -> @f0
      }
      ws.release @f0_pipe
      ws.acquire @p0_pipe
      ws.store_vote @vote_p0
      ws.unless_skipped {
        ws.exp2_store_p @s0 -> @p0
      }
      ws.release @p0_pipe
      ws.release @s0_pipe
    }
    ws.acquire @l0_pipe
    ws.store_row_sums -> @l0
    ws.release @l0_pipe
  }
  ws.role @softmax1 softmax warps [4, 8) regs 160 rows [128, 256) {
    ws.kv_loop {
      ws.acquire @s1_pipe
      ws.read_scores @s1
      ws.row_max @s1
      ws.vote @s1
      ws.acquire @f1_pipe
      ws.store_vote @vote_f1
      ws.unless_skipped {
        ws.softmax_update @s1 -> @f1
      }
      ws.release @f1_pipe
      ws.acquire @p1_pipe
      ws.store_vote @vote_p1
      ws.unless_skipped {
        ws.exp2_store_p @s1 -> @p1
      }
      ws.release @p1_pipe
      ws.release @s1_pipe
    }
    ws.acquire @l1_pipe
    ws.store_row_sums -> @l1
    ws.release @l1_pipe
  }
  ws.role @correction correction warps [8, 12) regs 96 {
    ws.kv_loop {
      ws.acquire @f0_pipe
      ws.acquire @o0_pipe
      ws.load_vote @vote_f0
      ws.unless_skipped {
        ws.correct @o0 by @f0
      }
      ws.release @o0_pipe
      ws.release @f0_pipe
      ws.acquire @f1_pipe
      ws.acquire @o1_pipe
      ws.load_vote @vote_f1
      ws.unless_skipped {
        ws.correct @o1 by @f1
      }
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
  ws.role @mma mma warps [12, 13) regs 96 {
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
      // expected-error @+1 {{read before write: @mma reads @vote_p0 (stage 0) expecting the decision on block 0 but finds nothing (never written)}}
      ws.load_vote @vote_p0
      ws.acquire @p0_pipe
      ws.acquire @o0_pipe
      ws.unless_skipped {
        ws.mma pv @p0, @v -> @o0
      }
      ws.release @o0_pipe
      ws.release @p0_pipe
      ws.acquire @s0_pipe {ahead = 1 : i64}
      ws.mma qk @q0, @k -> @s0 {ahead = 1 : i64}
      ws.release @s0_pipe {ahead = 1 : i64}
      ws.acquire @p1_pipe
      ws.acquire @o1_pipe
      ws.load_vote @vote_p1
      ws.unless_skipped {
        ws.mma pv @p1, @v -> @o1
      }
      ws.release @o1_pipe
      ws.release @p1_pipe
      ws.acquire @s1_pipe {ahead = 1 : i64}
      ws.mma qk @q1, @k -> @s1 {ahead = 1 : i64}
      ws.release @s1_pipe {ahead = 1 : i64}
      ws.release @k_pipe {ahead = 1 : i64}
      ws.release @v_pipe
    }
    ws.acquire @done_pipe
    ws.release @done_pipe
    ws.release @q_pipe
  }
  ws.role @load load warps [13, 14) regs 96 {
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
  ws.role @epilogue epilogue warps [14, 15) regs 96 {
    ws.acquire @epi0_pipe
    ws.tma_store @o_stage0 -> o
    ws.release @epi0_pipe
    ws.acquire @epi1_pipe
    ws.tma_store @o_stage1 -> o
    ws.release @epi1_pipe
  }
}

// -----

// softmax0 stores the decision for the correction role after releasing the
// factors: the correction role may read the word first.
// expected-note @+1 {{with 1 KV block}}
ws.kernel @store_after_release target = sm_100a, block_m = 256, block_n = 128, spec = <dtype = bf16, head_dim = 64, head_dim_v = 64, q_heads = 8, kv_heads = 8, causal = false, phase = prefill, softmax_scale = default, sparsity = blasst(ln_lambda = -8.000000e+00), lse = false, stats = false> schedule {block_m = 256 : i64, block_n = 128 : i64, consumer_regs = 160 : i64, kv_multicast = false, overlap = false, p_in_registers = false, persistent = false, pingpong = false, producer_regs = 96 : i64, q_in_registers = false, stages = 2 : i64, v_on_demand = false} {
  ws.buffer @q0 smem [128, 64] bf16 stages 1
  ws.buffer @q1 smem [128, 64] bf16 stages 1
  ws.buffer @k smem [128, 64] bf16 stages 2
  ws.buffer @v smem [128, 64] bf16 stages 2
  ws.buffer @o_stage0 smem [128, 64] bf16 stages 1 aliases @q0
  ws.buffer @o_stage1 smem [128, 64] bf16 stages 1 aliases @q1
  ws.buffer @f0 smem [128, 2] f32 stages 1
  ws.buffer @f1 smem [128, 2] f32 stages 1
  ws.buffer @l0 smem [128, 2] f32 stages 1
  ws.buffer @l1 smem [128, 2] f32 stages 1
  ws.buffer @s0 tmem [128, 128] f32 stages 1
  ws.buffer @s1 tmem [128, 128] f32 stages 1
  ws.buffer @p0 tmem [128, 128] bf16 stages 1 aliases @s0
  ws.buffer @p1 tmem [128, 128] bf16 stages 1 aliases @s1
  ws.buffer @o0 tmem [128, 64] f32 stages 1
  ws.buffer @o1 tmem [128, 64] f32 stages 1
  ws.buffer @vote_f0 smem [1, 1] i32 stages 1
  ws.buffer @vote_p0 smem [1, 1] i32 stages 1
  ws.buffer @vote_f1 smem [1, 1] i32 stages 1
  ws.buffer @vote_p1 smem [1, 1] i32 stages 1
  ws.pipe @q_pipe depth 1 producer @load consumers [@mma] buffers [@q0, @q1] tx_bytes 32768
  ws.pipe @k_pipe depth 2 producer @load consumers [@mma] buffers [@k] tx_bytes 16384
  ws.pipe @v_pipe depth 2 producer @load consumers [@mma] buffers [@v] tx_bytes 16384
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
  ws.role @softmax0 softmax warps [0, 4) regs 160 rows [0, 128) {
    ws.kv_loop {
      ws.acquire @s0_pipe
      ws.read_scores @s0
      ws.row_max @s0
      ws.vote @s0
      ws.acquire @f0_pipe
      ws.unless_skipped {
        ws.softmax_update @s0 -> @f0
      }
      ws.release @f0_pipe
      ws.store_vote @vote_f0
      ws.acquire @p0_pipe
      ws.store_vote @vote_p0
      ws.unless_skipped {
        ws.exp2_store_p @s0 -> @p0
      }
      ws.release @p0_pipe
      ws.release @s0_pipe
    }
    ws.acquire @l0_pipe
    ws.store_row_sums -> @l0
    ws.release @l0_pipe
  }
  ws.role @softmax1 softmax warps [4, 8) regs 160 rows [128, 256) {
    ws.kv_loop {
      ws.acquire @s1_pipe
      ws.read_scores @s1
      ws.row_max @s1
      ws.vote @s1
      ws.acquire @f1_pipe
      ws.store_vote @vote_f1
      ws.unless_skipped {
        ws.softmax_update @s1 -> @f1
      }
      ws.release @f1_pipe
      ws.acquire @p1_pipe
      ws.store_vote @vote_p1
      ws.unless_skipped {
        ws.exp2_store_p @s1 -> @p1
      }
      ws.release @p1_pipe
      ws.release @s1_pipe
    }
    ws.acquire @l1_pipe
    ws.store_row_sums -> @l1
    ws.release @l1_pipe
  }
  ws.role @correction correction warps [8, 12) regs 96 {
    ws.kv_loop {
      ws.acquire @f0_pipe
      ws.acquire @o0_pipe
      // expected-error @+1 {{read before write: @correction reads @vote_f0 (stage 0) expecting the decision on block 0 but finds nothing (never written)}}
      ws.load_vote @vote_f0
      ws.unless_skipped {
        ws.correct @o0 by @f0
      }
      ws.release @o0_pipe
      ws.release @f0_pipe
      ws.acquire @f1_pipe
      ws.acquire @o1_pipe
      ws.load_vote @vote_f1
      ws.unless_skipped {
        ws.correct @o1 by @f1
      }
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
  ws.role @mma mma warps [12, 13) regs 96 {
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
      ws.acquire @p0_pipe
      ws.acquire @o0_pipe
      ws.load_vote @vote_p0
      ws.unless_skipped {
        ws.mma pv @p0, @v -> @o0
      }
      ws.release @o0_pipe
      ws.release @p0_pipe
      ws.acquire @s0_pipe {ahead = 1 : i64}
      ws.mma qk @q0, @k -> @s0 {ahead = 1 : i64}
      ws.release @s0_pipe {ahead = 1 : i64}
      ws.acquire @p1_pipe
      ws.acquire @o1_pipe
      ws.load_vote @vote_p1
      ws.unless_skipped {
        ws.mma pv @p1, @v -> @o1
      }
      ws.release @o1_pipe
      ws.release @p1_pipe
      ws.acquire @s1_pipe {ahead = 1 : i64}
      ws.mma qk @q1, @k -> @s1 {ahead = 1 : i64}
      ws.release @s1_pipe {ahead = 1 : i64}
      ws.release @k_pipe {ahead = 1 : i64}
      ws.release @v_pipe
    }
    ws.acquire @done_pipe
    ws.release @done_pipe
    ws.release @q_pipe
  }
  ws.role @load load warps [13, 14) regs 96 {
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
  ws.role @epilogue epilogue warps [14, 15) regs 96 {
    ws.acquire @epi0_pipe
    ws.tma_store @o_stage0 -> o
    ws.release @epi0_pipe
    ws.acquire @epi1_pipe
    ws.tma_store @o_stage1 -> o
    ws.release @epi1_pipe
  }
}

// -----

// The MMA warp does not learn the decision: it issues P_0 V for a block
// softmax0 skipped, whose P was never stored (S of that block is there).
// expected-note @+1 {{with 2 KV blocks}}
ws.kernel @mma_unaware target = sm_100a, block_m = 256, block_n = 128, spec = <dtype = bf16, head_dim = 64, head_dim_v = 64, q_heads = 8, kv_heads = 8, causal = false, phase = prefill, softmax_scale = default, sparsity = blasst(ln_lambda = -8.000000e+00), lse = false, stats = false> schedule {block_m = 256 : i64, block_n = 128 : i64, consumer_regs = 160 : i64, kv_multicast = false, overlap = false, p_in_registers = false, persistent = false, pingpong = false, producer_regs = 96 : i64, q_in_registers = false, stages = 2 : i64, v_on_demand = false} {
  ws.buffer @q0 smem [128, 64] bf16 stages 1
  ws.buffer @q1 smem [128, 64] bf16 stages 1
  ws.buffer @k smem [128, 64] bf16 stages 2
  ws.buffer @v smem [128, 64] bf16 stages 2
  ws.buffer @o_stage0 smem [128, 64] bf16 stages 1 aliases @q0
  ws.buffer @o_stage1 smem [128, 64] bf16 stages 1 aliases @q1
  ws.buffer @f0 smem [128, 2] f32 stages 1
  ws.buffer @f1 smem [128, 2] f32 stages 1
  ws.buffer @l0 smem [128, 2] f32 stages 1
  ws.buffer @l1 smem [128, 2] f32 stages 1
  ws.buffer @s0 tmem [128, 128] f32 stages 1
  ws.buffer @s1 tmem [128, 128] f32 stages 1
  ws.buffer @p0 tmem [128, 128] bf16 stages 1 aliases @s0
  ws.buffer @p1 tmem [128, 128] bf16 stages 1 aliases @s1
  ws.buffer @o0 tmem [128, 64] f32 stages 1
  ws.buffer @o1 tmem [128, 64] f32 stages 1
  ws.buffer @vote_f0 smem [1, 1] i32 stages 1
  ws.buffer @vote_p0 smem [1, 1] i32 stages 1
  ws.buffer @vote_f1 smem [1, 1] i32 stages 1
  ws.buffer @vote_p1 smem [1, 1] i32 stages 1
  ws.pipe @q_pipe depth 1 producer @load consumers [@mma] buffers [@q0, @q1] tx_bytes 32768
  ws.pipe @k_pipe depth 2 producer @load consumers [@mma] buffers [@k] tx_bytes 16384
  ws.pipe @v_pipe depth 2 producer @load consumers [@mma] buffers [@v] tx_bytes 16384
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
  ws.role @softmax0 softmax warps [0, 4) regs 160 rows [0, 128) {
    ws.kv_loop {
      ws.acquire @s0_pipe
      ws.read_scores @s0
      ws.row_max @s0
      ws.vote @s0
      ws.acquire @f0_pipe
      ws.store_vote @vote_f0
      ws.unless_skipped {
        ws.softmax_update @s0 -> @f0
      }
      ws.release @f0_pipe
      ws.acquire @p0_pipe
      ws.store_vote @vote_p0
      ws.unless_skipped {
        ws.exp2_store_p @s0 -> @p0
      }
      ws.release @p0_pipe
      ws.release @s0_pipe
    }
    ws.acquire @l0_pipe
    ws.store_row_sums -> @l0
    ws.release @l0_pipe
  }
  ws.role @softmax1 softmax warps [4, 8) regs 160 rows [128, 256) {
    ws.kv_loop {
      ws.acquire @s1_pipe
      ws.read_scores @s1
      ws.row_max @s1
      ws.vote @s1
      ws.acquire @f1_pipe
      ws.store_vote @vote_f1
      ws.unless_skipped {
        ws.softmax_update @s1 -> @f1
      }
      ws.release @f1_pipe
      ws.acquire @p1_pipe
      ws.store_vote @vote_p1
      ws.unless_skipped {
        ws.exp2_store_p @s1 -> @p1
      }
      ws.release @p1_pipe
      ws.release @s1_pipe
    }
    ws.acquire @l1_pipe
    ws.store_row_sums -> @l1
    ws.release @l1_pipe
  }
  ws.role @correction correction warps [8, 12) regs 96 {
    ws.kv_loop {
      ws.acquire @f0_pipe
      ws.acquire @o0_pipe
      ws.load_vote @vote_f0
      ws.unless_skipped {
        ws.correct @o0 by @f0
      }
      ws.release @o0_pipe
      ws.release @f0_pipe
      ws.acquire @f1_pipe
      ws.acquire @o1_pipe
      ws.load_vote @vote_f1
      ws.unless_skipped {
        ws.correct @o1 by @f1
      }
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
  ws.role @mma mma warps [12, 13) regs 96 {
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
      ws.acquire @p0_pipe
      ws.acquire @o0_pipe
      // expected-error @+1 {{value overwritten before it was read: the tensor cores reads @p0 (stage 0) expecting P of block 1 but finds S of block 1}}
      ws.mma pv @p0, @v -> @o0
      ws.release @o0_pipe
      ws.release @p0_pipe
      ws.acquire @s0_pipe {ahead = 1 : i64}
      ws.mma qk @q0, @k -> @s0 {ahead = 1 : i64}
      ws.release @s0_pipe {ahead = 1 : i64}
      ws.acquire @p1_pipe
      ws.acquire @o1_pipe
      ws.load_vote @vote_p1
      ws.unless_skipped {
        ws.mma pv @p1, @v -> @o1
      }
      ws.release @o1_pipe
      ws.release @p1_pipe
      ws.acquire @s1_pipe {ahead = 1 : i64}
      ws.mma qk @q1, @k -> @s1 {ahead = 1 : i64}
      ws.release @s1_pipe {ahead = 1 : i64}
      ws.release @k_pipe {ahead = 1 : i64}
      ws.release @v_pipe
    }
    ws.acquire @done_pipe
    ws.release @done_pipe
    ws.release @q_pipe
  }
  ws.role @load load warps [13, 14) regs 96 {
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
  ws.role @epilogue epilogue warps [14, 15) regs 96 {
    ws.acquire @epi0_pipe
    ws.tma_store @o_stage0 -> o
    ws.release @epi0_pipe
    ws.acquire @epi1_pipe
    ws.tma_store @o_stage1 -> o
    ws.release @epi1_pipe
  }
}

// -----

// The correction role does not learn the decision: it rescales O by the
// factors of a block softmax0 skipped (never written).
// expected-note @+1 {{with 2 KV blocks}}
ws.kernel @correction_unaware target = sm_100a, block_m = 256, block_n = 128, spec = <dtype = bf16, head_dim = 64, head_dim_v = 64, q_heads = 8, kv_heads = 8, causal = false, phase = prefill, softmax_scale = default, sparsity = blasst(ln_lambda = -8.000000e+00), lse = false, stats = false> schedule {block_m = 256 : i64, block_n = 128 : i64, consumer_regs = 160 : i64, kv_multicast = false, overlap = false, p_in_registers = false, persistent = false, pingpong = false, producer_regs = 96 : i64, q_in_registers = false, stages = 2 : i64, v_on_demand = false} {
  ws.buffer @q0 smem [128, 64] bf16 stages 1
  ws.buffer @q1 smem [128, 64] bf16 stages 1
  ws.buffer @k smem [128, 64] bf16 stages 2
  ws.buffer @v smem [128, 64] bf16 stages 2
  ws.buffer @o_stage0 smem [128, 64] bf16 stages 1 aliases @q0
  ws.buffer @o_stage1 smem [128, 64] bf16 stages 1 aliases @q1
  ws.buffer @f0 smem [128, 2] f32 stages 1
  ws.buffer @f1 smem [128, 2] f32 stages 1
  ws.buffer @l0 smem [128, 2] f32 stages 1
  ws.buffer @l1 smem [128, 2] f32 stages 1
  ws.buffer @s0 tmem [128, 128] f32 stages 1
  ws.buffer @s1 tmem [128, 128] f32 stages 1
  ws.buffer @p0 tmem [128, 128] bf16 stages 1 aliases @s0
  ws.buffer @p1 tmem [128, 128] bf16 stages 1 aliases @s1
  ws.buffer @o0 tmem [128, 64] f32 stages 1
  ws.buffer @o1 tmem [128, 64] f32 stages 1
  ws.buffer @vote_f0 smem [1, 1] i32 stages 1
  ws.buffer @vote_p0 smem [1, 1] i32 stages 1
  ws.buffer @vote_f1 smem [1, 1] i32 stages 1
  ws.buffer @vote_p1 smem [1, 1] i32 stages 1
  ws.pipe @q_pipe depth 1 producer @load consumers [@mma] buffers [@q0, @q1] tx_bytes 32768
  ws.pipe @k_pipe depth 2 producer @load consumers [@mma] buffers [@k] tx_bytes 16384
  ws.pipe @v_pipe depth 2 producer @load consumers [@mma] buffers [@v] tx_bytes 16384
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
  ws.role @softmax0 softmax warps [0, 4) regs 160 rows [0, 128) {
    ws.kv_loop {
      ws.acquire @s0_pipe
      ws.read_scores @s0
      ws.row_max @s0
      ws.vote @s0
      ws.acquire @f0_pipe
      ws.store_vote @vote_f0
      ws.unless_skipped {
        ws.softmax_update @s0 -> @f0
      }
      ws.release @f0_pipe
      ws.acquire @p0_pipe
      ws.store_vote @vote_p0
      ws.unless_skipped {
        ws.exp2_store_p @s0 -> @p0
      }
      ws.release @p0_pipe
      ws.release @s0_pipe
    }
    ws.acquire @l0_pipe
    ws.store_row_sums -> @l0
    ws.release @l0_pipe
  }
  ws.role @softmax1 softmax warps [4, 8) regs 160 rows [128, 256) {
    ws.kv_loop {
      ws.acquire @s1_pipe
      ws.read_scores @s1
      ws.row_max @s1
      ws.vote @s1
      ws.acquire @f1_pipe
      ws.store_vote @vote_f1
      ws.unless_skipped {
        ws.softmax_update @s1 -> @f1
      }
      ws.release @f1_pipe
      ws.acquire @p1_pipe
      ws.store_vote @vote_p1
      ws.unless_skipped {
        ws.exp2_store_p @s1 -> @p1
      }
      ws.release @p1_pipe
      ws.release @s1_pipe
    }
    ws.acquire @l1_pipe
    ws.store_row_sums -> @l1
    ws.release @l1_pipe
  }
  ws.role @correction correction warps [8, 12) regs 96 {
    ws.kv_loop {
      ws.acquire @f0_pipe
      ws.acquire @o0_pipe
      // expected-error @+1 {{read before write: @correction reads @f0 (stage 0) expecting the correction factors of block 1 but finds the correction factors of block 0}}
      ws.correct @o0 by @f0
      ws.release @o0_pipe
      ws.release @f0_pipe
      ws.acquire @f1_pipe
      ws.acquire @o1_pipe
      ws.load_vote @vote_f1
      ws.unless_skipped {
        ws.correct @o1 by @f1
      }
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
  ws.role @mma mma warps [12, 13) regs 96 {
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
      ws.acquire @p0_pipe
      ws.acquire @o0_pipe
      ws.load_vote @vote_p0
      ws.unless_skipped {
        ws.mma pv @p0, @v -> @o0
      }
      ws.release @o0_pipe
      ws.release @p0_pipe
      ws.acquire @s0_pipe {ahead = 1 : i64}
      ws.mma qk @q0, @k -> @s0 {ahead = 1 : i64}
      ws.release @s0_pipe {ahead = 1 : i64}
      ws.acquire @p1_pipe
      ws.acquire @o1_pipe
      ws.load_vote @vote_p1
      ws.unless_skipped {
        ws.mma pv @p1, @v -> @o1
      }
      ws.release @o1_pipe
      ws.release @p1_pipe
      ws.acquire @s1_pipe {ahead = 1 : i64}
      ws.mma qk @q1, @k -> @s1 {ahead = 1 : i64}
      ws.release @s1_pipe {ahead = 1 : i64}
      ws.release @k_pipe {ahead = 1 : i64}
      ws.release @v_pipe
    }
    ws.acquire @done_pipe
    ws.release @done_pipe
    ws.release @q_pipe
  }
  ws.role @load load warps [13, 14) regs 96 {
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
  ws.role @epilogue epilogue warps [14, 15) regs 96 {
    ws.acquire @epi0_pipe
    ws.tma_store @o_stage0 -> o
    ws.release @epi0_pipe
    ws.acquire @epi1_pipe
    ws.tma_store @o_stage1 -> o
    ws.release @epi1_pipe
  }
}

// -----

// A skip path that drops one arrival (P_0's release inside the MMA warp's
// skip region) cannot be written: the verifier refuses it before the
// checker runs.
ws.kernel @skip_drops_arrival target = sm_100a, block_m = 256, block_n = 128, spec = <dtype = bf16, head_dim = 64, head_dim_v = 64, q_heads = 8, kv_heads = 8, causal = false, phase = prefill, softmax_scale = default, sparsity = blasst(ln_lambda = -8.000000e+00), lse = false, stats = false> schedule {block_m = 256 : i64, block_n = 128 : i64, consumer_regs = 160 : i64, kv_multicast = false, overlap = false, p_in_registers = false, persistent = false, pingpong = false, producer_regs = 96 : i64, q_in_registers = false, stages = 2 : i64, v_on_demand = false} {
  ws.buffer @q0 smem [128, 64] bf16 stages 1
  ws.buffer @q1 smem [128, 64] bf16 stages 1
  ws.buffer @k smem [128, 64] bf16 stages 2
  ws.buffer @v smem [128, 64] bf16 stages 2
  ws.buffer @o_stage0 smem [128, 64] bf16 stages 1 aliases @q0
  ws.buffer @o_stage1 smem [128, 64] bf16 stages 1 aliases @q1
  ws.buffer @f0 smem [128, 2] f32 stages 1
  ws.buffer @f1 smem [128, 2] f32 stages 1
  ws.buffer @l0 smem [128, 2] f32 stages 1
  ws.buffer @l1 smem [128, 2] f32 stages 1
  ws.buffer @s0 tmem [128, 128] f32 stages 1
  ws.buffer @s1 tmem [128, 128] f32 stages 1
  ws.buffer @p0 tmem [128, 128] bf16 stages 1 aliases @s0
  ws.buffer @p1 tmem [128, 128] bf16 stages 1 aliases @s1
  ws.buffer @o0 tmem [128, 64] f32 stages 1
  ws.buffer @o1 tmem [128, 64] f32 stages 1
  ws.buffer @vote_f0 smem [1, 1] i32 stages 1
  ws.buffer @vote_p0 smem [1, 1] i32 stages 1
  ws.buffer @vote_f1 smem [1, 1] i32 stages 1
  ws.buffer @vote_p1 smem [1, 1] i32 stages 1
  ws.pipe @q_pipe depth 1 producer @load consumers [@mma] buffers [@q0, @q1] tx_bytes 32768
  ws.pipe @k_pipe depth 2 producer @load consumers [@mma] buffers [@k] tx_bytes 16384
  ws.pipe @v_pipe depth 2 producer @load consumers [@mma] buffers [@v] tx_bytes 16384
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
  ws.role @softmax0 softmax warps [0, 4) regs 160 rows [0, 128) {
    ws.kv_loop {
      ws.acquire @s0_pipe
      ws.read_scores @s0
      ws.row_max @s0
      ws.vote @s0
      ws.acquire @f0_pipe
      ws.store_vote @vote_f0
      ws.unless_skipped {
        ws.softmax_update @s0 -> @f0
      }
      ws.release @f0_pipe
      ws.acquire @p0_pipe
      ws.store_vote @vote_p0
      ws.unless_skipped {
        ws.exp2_store_p @s0 -> @p0
      }
      ws.release @p0_pipe
      ws.release @s0_pipe
    }
    ws.acquire @l0_pipe
    ws.store_row_sums -> @l0
    ws.release @l0_pipe
  }
  ws.role @softmax1 softmax warps [4, 8) regs 160 rows [128, 256) {
    ws.kv_loop {
      ws.acquire @s1_pipe
      ws.read_scores @s1
      ws.row_max @s1
      ws.vote @s1
      ws.acquire @f1_pipe
      ws.store_vote @vote_f1
      ws.unless_skipped {
        ws.softmax_update @s1 -> @f1
      }
      ws.release @f1_pipe
      ws.acquire @p1_pipe
      ws.store_vote @vote_p1
      ws.unless_skipped {
        ws.exp2_store_p @s1 -> @p1
      }
      ws.release @p1_pipe
      ws.release @s1_pipe
    }
    ws.acquire @l1_pipe
    ws.store_row_sums -> @l1
    ws.release @l1_pipe
  }
  ws.role @correction correction warps [8, 12) regs 96 {
    ws.kv_loop {
      ws.acquire @f0_pipe
      ws.acquire @o0_pipe
      ws.load_vote @vote_f0
      ws.unless_skipped {
        ws.correct @o0 by @f0
      }
      ws.release @o0_pipe
      ws.release @f0_pipe
      ws.acquire @f1_pipe
      ws.acquire @o1_pipe
      ws.load_vote @vote_f1
      ws.unless_skipped {
        ws.correct @o1 by @f1
      }
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
  ws.role @mma mma warps [12, 13) regs 96 {
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
      ws.acquire @p0_pipe
      ws.acquire @o0_pipe
      ws.load_vote @vote_p0
      ws.unless_skipped {
        ws.mma pv @p0, @v -> @o0
        // expected-error @+1 {{cannot be skipped: pipe traffic and votes must run on both paths}}
        ws.release @p0_pipe
      }
      ws.release @o0_pipe
      ws.acquire @s0_pipe {ahead = 1 : i64}
      ws.mma qk @q0, @k -> @s0 {ahead = 1 : i64}
      ws.release @s0_pipe {ahead = 1 : i64}
      ws.acquire @p1_pipe
      ws.acquire @o1_pipe
      ws.load_vote @vote_p1
      ws.unless_skipped {
        ws.mma pv @p1, @v -> @o1
      }
      ws.release @o1_pipe
      ws.release @p1_pipe
      ws.acquire @s1_pipe {ahead = 1 : i64}
      ws.mma qk @q1, @k -> @s1 {ahead = 1 : i64}
      ws.release @s1_pipe {ahead = 1 : i64}
      ws.release @k_pipe {ahead = 1 : i64}
      ws.release @v_pipe
    }
    ws.acquire @done_pipe
    ws.release @done_pipe
    ws.release @q_pipe
  }
  ws.role @load load warps [13, 14) regs 96 {
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
  ws.role @epilogue epilogue warps [14, 15) regs 96 {
    ws.acquire @epi0_pipe
    ws.tma_store @o_stage0 -> o
    ws.release @epi0_pipe
    ws.acquire @epi1_pipe
    ws.tma_store @o_stage1 -> o
    ws.release @epi1_pipe
  }
}
