// RUN: blasst-opt %s -split-input-file | blasst-opt -split-input-file | FileCheck %s
// Round trip of ws.kernel and its buffers, pipes, roles and steps, and of
// ws.launch.

// sm_90a: a TMA producer and two wgmma consumer warpgroups splitting the rows;
// every step op of the Hopper schedule, in the prologue, kv_loop and epilogue.
// CHECK-LABEL: ws.kernel @fa3 target = sm_90a, block_m = 128, block_n = 128, spec = <dtype = bf16, head_dim = 128, head_dim_v = 128, q_heads = 32, kv_heads = 8, causal = true
// CHECK:         ws.buffer @q smem [128, 128] bf16 stages 1
// CHECK:         ws.buffer @k smem [128, 128] bf16 stages 2
// CHECK:         ws.buffer @s regs [64, 128] f32 stages 1
// CHECK:         ws.buffer @p regs [64, 128] bf16 stages 1
// CHECK:         ws.pipe @q_pipe depth 1 producer @producer consumers [@consumer0, @consumer1] buffers [@q] tx_bytes 32768
// CHECK:         ws.pipe @k_pipe depth 2 producer @producer consumers [@consumer0, @consumer1] buffers [@k] tx_bytes 32768
// CHECK:         ws.role @producer load warps [0, 4) regs 24 {
// CHECK-NEXT:      ws.acquire @q_pipe
// CHECK-NEXT:      ws.tma_load q -> @q via @q_pipe
// CHECK-NEXT:      ws.release @q_pipe
// CHECK-NEXT:      ws.kv_loop {
// CHECK-NEXT:        ws.acquire @k_pipe
// CHECK-NEXT:        ws.tma_load k -> @k via @k_pipe
// CHECK:             ws.tma_load v -> @v via @v_pipe
// CHECK:         ws.role @consumer0 compute warps [4, 8) regs 240 rows [0, 64) {
// CHECK:           ws.kv_loop {
// CHECK:             ws.mma qk @q, @k -> @s
// CHECK:             ws.row_max @s
// CHECK-NEXT:        ws.softmax_update @s
// CHECK-NEXT:        ws.exp2_store_p @s -> @p
// CHECK-NEXT:        ws.correct @o
// CHECK:             ws.mma pv @p, @v -> @o
// CHECK:           ws.release @q_pipe
// CHECK-NEXT:      ws.epilogue @o
// CHECK:         ws.role @consumer1 compute warps [8, 12) regs 240 rows [64, 128) {
ws.kernel @fa3 target = sm_90a, block_m = 128, block_n = 128, spec = #attn.spec<preset = "llama3-8b-prefill"> {
  ws.buffer @q smem [128, 128] bf16 stages 1
  ws.buffer @k smem [128, 128] bf16 stages 2
  ws.buffer @v smem [128, 128] bf16 stages 2
  ws.buffer @s regs [64, 128] f32 stages 1
  ws.buffer @p regs [64, 128] bf16 stages 1
  ws.buffer @o regs [64, 128] f32 stages 1
  ws.pipe @q_pipe depth 1 producer @producer consumers [@consumer0, @consumer1] buffers [@q] tx_bytes 32768
  ws.pipe @k_pipe depth 2 producer @producer consumers [@consumer0, @consumer1] buffers [@k] tx_bytes 32768
  ws.pipe @v_pipe depth 2 producer @producer consumers [@consumer0, @consumer1] buffers [@v] tx_bytes 32768
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
  ws.role @consumer0 compute warps [4, 8) regs 240 rows [0, 64) {
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
    ws.epilogue @o
  }
  ws.role @consumer1 compute warps [8, 12) regs 240 rows [64, 128) {
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
    ws.epilogue @o
  }
}

// -----

// sm_100a: S, P and O in tensor memory (P aliasing S), the O staging tile
// aliasing Q, read_scores, tma_store, and an epilogue that stages O and
// writes the LSE.
// CHECK-LABEL: ws.kernel @fa4 target = sm_100a, block_m = 256, block_n = 128, spec = <
// CHECK-SAME:    lse = true
// CHECK:         ws.buffer @o_stage smem [128, 128] bf16 stages 1 aliases @q0
// CHECK:         ws.buffer @s0 tmem [128, 128] f32 stages 1
// CHECK:         ws.buffer @p0 tmem [128, 128] bf16 stages 1 aliases @s0
// CHECK:         ws.buffer @p1 tmem [128, 128] bf16 stages 1 aliases @s1 at [0, 64]
// CHECK:         ws.buffer @o0 tmem [128, 128] f32 stages 1
// CHECK:         ws.pipe @q_pipe depth 1 producer @load consumers [@mma] buffers [@q0, @q1] tx_bytes 65536
// CHECK:         ws.pipe @s0_pipe depth 1 producer @mma consumers [@softmax0] buffers [@s0]{{$}}
// CHECK:         ws.pipe @p0_pipe depth 1 producer @softmax0 consumers [@mma]{{$}}
// CHECK:         ws.role @softmax0 softmax warps [0, 4) regs 192 rows [0, 128) {
// CHECK:             ws.read_scores @s0
// CHECK-NEXT:        ws.row_max @s0
// CHECK-NEXT:        ws.softmax_update @s0
// CHECK-NEXT:        ws.exp2_store_p @s0 -> @p0
// CHECK:         ws.role @correction correction warps [8, 12) regs 80 {
// CHECK:             ws.correct @o0
// CHECK:           ws.epilogue @o0 -> @o_stage {lse}
// CHECK:           ws.epilogue @o1 -> @o_stage {lse}
// CHECK:         ws.role @mma mma warps [12, 13) regs 48 {
// CHECK:             ws.mma qk @q0, @k -> @s0
// CHECK:             ws.mma pv @p0, @v -> @o0
// CHECK:         ws.role @load load warps [13, 14) regs 48 {
// CHECK:           ws.tma_load q -> @q1 via @q_pipe
// CHECK:         ws.role @epilogue epilogue warps [14, 15) regs 48 {
// CHECK-NEXT:      ws.acquire @epi_pipe
// CHECK-NEXT:      ws.tma_store @o_stage -> o
ws.kernel @fa4 target = sm_100a, block_m = 256, block_n = 128, spec = #attn.spec<preset = "llama3-8b-prefill", lse = true> {
  ws.buffer @q0 smem [128, 128] bf16 stages 1
  ws.buffer @q1 smem [128, 128] bf16 stages 1
  ws.buffer @k smem [128, 128] bf16 stages 2
  ws.buffer @v smem [128, 128] bf16 stages 2
  ws.buffer @o_stage smem [128, 128] bf16 stages 1 aliases @q0
  ws.buffer @s0 tmem [128, 128] f32 stages 1
  ws.buffer @s1 tmem [128, 128] f32 stages 1
  ws.buffer @p0 tmem [128, 128] bf16 stages 1 aliases @s0
  ws.buffer @p1 tmem [128, 128] bf16 stages 1 aliases @s1 at [0, 64]
  ws.buffer @o0 tmem [128, 128] f32 stages 1
  ws.buffer @o1 tmem [128, 128] f32 stages 1
  ws.pipe @q_pipe depth 1 producer @load consumers [@mma] buffers [@q0, @q1] tx_bytes 65536
  ws.pipe @k_pipe depth 2 producer @load consumers [@mma] buffers [@k] tx_bytes 32768
  ws.pipe @v_pipe depth 2 producer @load consumers [@mma] buffers [@v] tx_bytes 32768
  ws.pipe @s0_pipe depth 1 producer @mma consumers [@softmax0] buffers [@s0]
  ws.pipe @s1_pipe depth 1 producer @mma consumers [@softmax1] buffers [@s1]
  ws.pipe @p0_pipe depth 1 producer @softmax0 consumers [@mma]
  ws.pipe @p1_pipe depth 1 producer @softmax1 consumers [@mma]
  ws.pipe @o0_pipe depth 1 producer @mma consumers [@correction] buffers [@o0]
  ws.pipe @o1_pipe depth 1 producer @mma consumers [@correction] buffers [@o1]
  ws.pipe @epi_pipe depth 1 producer @correction consumers [@epilogue] buffers [@o_stage]
  ws.role @softmax0 softmax warps [0, 4) regs 192 rows [0, 128) {
    ws.kv_loop {
      ws.acquire @s0_pipe
      ws.acquire @p0_pipe
      ws.read_scores @s0
      ws.row_max @s0
      ws.softmax_update @s0
      ws.exp2_store_p @s0 -> @p0
      ws.release @p0_pipe
      ws.release @s0_pipe
    }
  }
  ws.role @softmax1 softmax warps [4, 8) regs 192 rows [128, 256) {
    ws.kv_loop {
      ws.acquire @s1_pipe
      ws.acquire @p1_pipe
      ws.read_scores @s1
      ws.row_max @s1
      ws.softmax_update @s1
      ws.exp2_store_p @s1 -> @p1
      ws.release @p1_pipe
      ws.release @s1_pipe
    }
  }
  ws.role @correction correction warps [8, 12) regs 80 {
    ws.kv_loop {
      ws.acquire @o0_pipe
      ws.correct @o0
      ws.release @o0_pipe
      ws.acquire @o1_pipe
      ws.correct @o1
      ws.release @o1_pipe
    }
    ws.acquire @epi_pipe
    ws.epilogue @o0 -> @o_stage {lse}
    ws.release @epi_pipe
    ws.acquire @epi_pipe
    ws.epilogue @o1 -> @o_stage {lse}
    ws.release @epi_pipe
  }
  ws.role @mma mma warps [12, 13) regs 48 {
    ws.acquire @q_pipe
    ws.kv_loop {
      ws.acquire @k_pipe
      ws.acquire @s0_pipe
      ws.mma qk @q0, @k -> @s0
      ws.release @s0_pipe
      ws.acquire @s1_pipe
      ws.mma qk @q1, @k -> @s1
      ws.release @s1_pipe
      ws.release @k_pipe
      ws.acquire @v_pipe
      ws.acquire @p0_pipe
      ws.acquire @o0_pipe
      ws.mma pv @p0, @v -> @o0
      ws.release @o0_pipe
      ws.release @p0_pipe
      ws.acquire @p1_pipe
      ws.acquire @o1_pipe
      ws.mma pv @p1, @v -> @o1
      ws.release @o1_pipe
      ws.release @p1_pipe
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
    ws.acquire @epi_pipe
    ws.tma_store @o_stage -> o
    ws.release @epi_pipe
    ws.acquire @epi_pipe
    ws.tma_store @o_stage -> o
    ws.release @epi_pipe
  }
}

// -----

// A host function launching a kernel over its Q, K, V and O memrefs; the
// kernel has no register budgets and spells its spec out key by key.
// CHECK-LABEL: ws.kernel @tiny target = sm_90a, block_m = 64, block_n = 64, spec = <dtype = f16, head_dim = 64, head_dim_v = 64, q_heads = 8, kv_heads = 8, causal = false
// CHECK:         ws.role @compute compute warps [0, 4) {
// CHECK-LABEL: func.func @launch
// CHECK:         ws.launch @tiny(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : memref<?x?x8x64xf16>, memref<?x?x8x64xf16>, memref<?x?x8x64xf16>, memref<?x?x8x64xf16>
ws.kernel @tiny target = sm_90a, block_m = 64, block_n = 64, spec = <dtype = f16, head_dim = 64, q_heads = 8, kv_heads = 8, causal = false> {
  ws.buffer @q smem [64, 64] f16 stages 1
  ws.buffer @k smem [64, 64] f16 stages 1
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.role @compute compute warps [0, 4) {
    ws.kv_loop {
      ws.mma qk @q, @k -> @s
      ws.row_max @s
    }
  }
}
func.func @launch(%q: memref<?x?x8x64xf16>, %k: memref<?x?x8x64xf16>, %v: memref<?x?x8x64xf16>, %o: memref<?x?x8x64xf16>) {
  ws.launch @tiny(%q, %k, %v, %o) : memref<?x?x8x64xf16>, memref<?x?x8x64xf16>, memref<?x?x8x64xf16>, memref<?x?x8x64xf16>
  return
}

// -----

// The sm_100a hand-over of the softmax state to a correction role.
// CHECK-LABEL: ws.kernel @handover
// CHECK: ws.softmax_update @s -> @f
// CHECK: ws.store_row_sums -> @l
// CHECK: ws.correct @o by @f
// CHECK: ws.epilogue @o -> @st sums @l {lse}
ws.kernel @handover target = sm_100a, block_m = 128, block_n = 128, spec = <head_dim = 64> {
  ws.buffer @s tmem [128, 128] f32 stages 1
  ws.buffer @o tmem [128, 64] f32 stages 1
  ws.buffer @f smem [128, 2] f32 stages 1
  ws.buffer @l smem [128, 2] f32 stages 1
  ws.buffer @st smem [128, 64] bf16 stages 1
  ws.role @sm softmax warps [0, 4) rows [0, 128) {
    ws.kv_loop {
      ws.softmax_update @s -> @f
    }
    ws.store_row_sums -> @l
  }
  ws.role @c correction warps [4, 8) {
    ws.kv_loop {
      ws.correct @o by @f
    }
    ws.epilogue @o -> @st sums @l {lse}
  }
}
