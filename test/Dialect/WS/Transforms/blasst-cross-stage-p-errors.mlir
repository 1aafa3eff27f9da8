// RUN: blasst-opt %s -split-input-file -verify-diagnostics --blasst-cross-stage-p
// RUN: blasst-opt %s -split-input-file --blasst-cross-stage-p=mode=auto | FileCheck %s --check-prefix=AUTO
// RUN: not blasst-opt %s --blasst-cross-stage-p=mode=maybe 2>&1 | FileCheck %s --check-prefix=MODE

// sm_90a keeps S in registers: asked for explicitly, an error with the
// reason; in auto mode the kernel is left as it is.
// AUTO: ws.kernel @llama3_8b_prefill_kernel target = sm_90a
// AUTO-NOT: x0_pipe
// MODE: blasst-cross-stage-p: mode must be true, auto or false, got 'maybe'
// expected-error @+1 {{blasst-cross-stage-p does not apply: sm_90a keeps S in registers: there is no S region to hand to P}}
ws.kernel @llama3_8b_prefill_kernel target = sm_90a, block_m = 128, block_n = 176, spec = <dtype = bf16, head_dim = 128, head_dim_v = 128, q_heads = 32, kv_heads = 8, causal = true, phase = prefill, softmax_scale = default, sparsity = none, lse = false, stats = false> reverse_tiles schedule {block_m = 128 : i64, block_n = 176 : i64, consumer_regs = 240 : i64, kv_multicast = false, overlap = true, p_in_registers = true, persistent = false, pingpong = false, producer_regs = 24 : i64, q_in_registers = false, stages = 2 : i64, v_on_demand = false} {
  ws.buffer @q smem [128, 128] bf16 stages 1
  ws.buffer @k smem [176, 128] bf16 stages 2
  ws.buffer @v smem [176, 128] bf16 stages 2
  ws.buffer @s regs [64, 176] f32 stages 1
  ws.buffer @p regs [64, 176] bf16 stages 1
  ws.buffer @o regs [64, 128] f32 stages 1
  ws.pipe @q_pipe depth 1 producer @producer consumers [@consumer0, @consumer1] buffers [@q] tx_bytes 32768
  ws.pipe @k_pipe depth 2 producer @producer consumers [@consumer0, @consumer1] buffers [@k] tx_bytes 45056
  ws.pipe @v_pipe depth 2 producer @producer consumers [@consumer0, @consumer1] buffers [@v] tx_bytes 45056
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
      ws.mma pv @p, @v -> @o {async}
      ws.mma_wait {pending = 1 : i64}
      ws.release @k_pipe {ahead = 1 : i64}
      ws.row_max @s {ahead = 1 : i64}
      ws.softmax_update @s
      ws.exp2 @s {guarded}
      ws.mma_wait
      ws.release @v_pipe
      ws.correct @o
      ws.pack_p @s -> @p
    }
    ws.release @q_pipe
    ws.epilogue @o
  }
  ws.role @consumer1 compute warps [8, 12) regs 240 rows [64, 128) {
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
      ws.mma pv @p, @v -> @o {async}
      ws.mma_wait {pending = 1 : i64}
      ws.release @k_pipe {ahead = 1 : i64}
      ws.row_max @s {ahead = 1 : i64}
      ws.softmax_update @s
      ws.exp2 @s {guarded}
      ws.mma_wait
      ws.release @v_pipe
      ws.correct @o
      ws.pack_p @s -> @p
    }
    ws.release @q_pipe
    ws.epilogue @o
  }
}
