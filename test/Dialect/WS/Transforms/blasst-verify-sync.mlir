// The schedules convert-attn-to-ws builds verify (dense, BLASST with V on
// demand, ping-pong, persistent CTAs, the plain schedule, three stages):
// RUN: blasst-opt %s -split-input-file -verify-diagnostics --convert-attn-to-ws --blasst-insert-vote --blasst-v-on-demand=mode=auto --blasst-verify-sync=report=true -o /dev/null
// RUN: blasst-opt %s -split-input-file -verify-diagnostics --convert-attn-to-ws --blasst-insert-vote --blasst-v-on-demand="mode=auto speculate-after=0" --blasst-verify-sync=report=true -o /dev/null
// RUN: blasst-opt %s -split-input-file -verify-diagnostics --convert-attn-to-ws=pingpong=true --blasst-insert-vote --blasst-v-on-demand=mode=auto --blasst-verify-sync=report=true -o /dev/null
// RUN: blasst-opt %s -split-input-file -verify-diagnostics --convert-attn-to-ws="persistent=true overlap=false" --blasst-insert-vote --blasst-v-on-demand=mode=auto --blasst-verify-sync=report=true -o /dev/null
// RUN: blasst-opt %s -split-input-file -verify-diagnostics --convert-attn-to-ws=overlap=false --blasst-insert-vote --blasst-v-on-demand=mode=auto --blasst-verify-sync=report=true -o /dev/null
// RUN: blasst-opt %s -split-input-file -verify-diagnostics --convert-attn-to-ws="block-n=64 stages=3" --blasst-insert-vote --blasst-v-on-demand=mode=auto --blasst-verify-sync=report=true -o /dev/null
// The mutations below are ws IR, which the attn passes leave as it is: each
// one lowers today, and each is rejected with a trace.

// A dense GQA causal kernel.
func.func @dense(%q: memref<?x?x32x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x32x128xbf16>) {
  // expected-remark @+1 {{synchronisation verified}}
  attn.attention %q, %k, %v -> %o spec(<head_dim = 128, q_heads = 32, kv_heads = 8, causal = true>) : memref<?x?x32x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x32x128xbf16>
  return
}

// -----

// BLASST with statistics (V on demand on the default schedule: every
// keep/skip outcome of the published votes).
func.func @sparse(%q: memref<?x?x32x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x32x128xbf16>, %stats: memref<?x32x2xi64>) {
  // expected-remark @+1 {{synchronisation verified}}
  attn.attention %q, %k, %v -> %o stats(%stats : memref<?x32x2xi64>) spec(<head_dim = 128, q_heads = 32, kv_heads = 8, causal = true, sparsity = blasst(a = 256.0), stats = true>) : memref<?x?x32x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x32x128xbf16>
  return
}

// -----

// A consumer's release of V removed: with one KV block the stage's empty
// barrier is left with half its arrivals (with more, the producer waits
// forever).
// expected-error @+2 {{fails sync verification: unbalanced at exit: @v_pipe.empty[0] has 128 of 256 arrivals}}
// expected-note @+1 {{with 1 KV block}}
ws.kernel @consumer_release_removed target = sm_90a, block_m = 128, block_n = 176, spec = <head_dim = 128, q_heads = 32, kv_heads = 8, causal = true> {
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

// -----

// The producer's release of K removed: no copy completes a full phase, the
// consumers wait forever.
// expected-error @+2 {{fails sync verification: deadlock: no role can step and @consumer0, @consumer1 wait forever}}
// expected-note @+1 {{@consumer0: ws.acquire @q_pipe (tile 0); blocked at ws.acquire @k_pipe (block 0): waits on @k_pipe.full[0] for phase 0 (0 completed)}}
ws.kernel @producer_release_removed target = sm_90a, block_m = 128, block_n = 176, spec = <head_dim = 128, q_heads = 32, kv_heads = 8, causal = true> {
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

// -----

// Ping-pong with consumer0's turn_pass after the loop removed: consumer1's
// last turn_wait never completes.
// expected-error @+2 {{fails sync verification: deadlock: no role can step and @consumer1 waits forever}}
// expected-note @+1 {{blocked at ws.turn_wait @gemm_turn: waits on named barrier 2 (128 of 256 threads arrived)}}
ws.kernel @turn_pass_removed target = sm_90a, block_m = 128, block_n = 128, spec = <head_dim = 128, q_heads = 32, kv_heads = 8, causal = true> {
  ws.buffer @q smem [128, 128] bf16 stages 1
  ws.buffer @k smem [128, 128] bf16 stages 2
  ws.buffer @v smem [128, 128] bf16 stages 2
  ws.buffer @s regs [64, 128] f32 stages 1
  ws.buffer @p regs [64, 128] bf16 stages 1
  ws.buffer @o regs [64, 128] f32 stages 1
  ws.pipe @q_pipe depth 1 producer @producer consumers [@consumer0, @consumer1] buffers [@q] tx_bytes 32768
  ws.pipe @k_pipe depth 2 producer @producer consumers [@consumer0, @consumer1] buffers [@k] tx_bytes 32768
  ws.pipe @v_pipe depth 2 producer @producer consumers [@consumer0, @consumer1] buffers [@v] tx_bytes 32768
  ws.order @gemm_turn roles [@consumer0, @consumer1]
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
    ws.turn_wait @gemm_turn
    ws.kv_loop {
      ws.acquire @k_pipe {ahead = 1 : i64}
      ws.mma qk @q, @k -> @s {ahead = 1 : i64, async}
      ws.acquire @v_pipe
      ws.mma pv @p, @v -> @o {async}
      ws.turn_pass @gemm_turn
      ws.mma_wait {pending = 1 : i64}
      ws.release @k_pipe {ahead = 1 : i64}
      ws.row_max @s {ahead = 1 : i64}
      ws.softmax_update @s
      ws.exp2 @s {guarded}
      ws.mma_wait
      ws.release @v_pipe
      ws.correct @o
      ws.pack_p @s -> @p
      ws.turn_wait @gemm_turn
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
    ws.turn_wait @gemm_turn
    ws.kv_loop {
      ws.acquire @k_pipe {ahead = 1 : i64}
      ws.mma qk @q, @k -> @s {ahead = 1 : i64, async}
      ws.acquire @v_pipe
      ws.mma pv @p, @v -> @o {async}
      ws.turn_pass @gemm_turn
      ws.mma_wait {pending = 1 : i64}
      ws.release @k_pipe {ahead = 1 : i64}
      ws.row_max @s {ahead = 1 : i64}
      ws.softmax_update @s
      ws.exp2 @s {guarded}
      ws.mma_wait
      ws.release @v_pipe
      ws.correct @o
      ws.pack_p @s -> @p
      ws.turn_wait @gemm_turn
    }
    ws.turn_pass @gemm_turn
    ws.release @q_pipe
    ws.epilogue @o
  }
}

// -----

// The producer's acquire of V removed: the copy of block 2 overwrites the
// stage of block 0 before the consumers released it.
// expected-note @+1 {{with 3 KV blocks}}
ws.kernel @producer_acquire_removed target = sm_90a, block_m = 128, block_n = 176, spec = <head_dim = 128, q_heads = 32, kv_heads = 8, causal = true> {
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
      // expected-error @+1 {{stage-reuse hazard: the copy of block 2 writes stage 0 of @v_pipe (block 0 there) before every consumer released it}}
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

// -----

// Persistent CTAs with consumer1's release of Q removed: the producer's
// acquire of Q for the second tile waits forever (even with no KV block).
// expected-error @+2 {{fails sync verification: deadlock: no role can step and @producer, @consumer0, @consumer1 wait forever}}
// expected-note @+1 {{@producer: ws.acquire @q_pipe (tile 0), ws.tma_load q (tile 0), ws.release @q_pipe (tile 0); blocked at ws.acquire @q_pipe (tile 1): waits on @q_pipe.empty[0] for phase 0 (0 completed)}}
ws.kernel @persistent_q_release_removed target = sm_90a, block_m = 128, block_n = 128, spec = <head_dim = 128, q_heads = 32, kv_heads = 8, causal = true> persistent {
  ws.buffer @q smem [128, 128] bf16 stages 1
  ws.buffer @k smem [128, 128] bf16 stages 2
  ws.buffer @v smem [128, 128] bf16 stages 2
  ws.buffer @s regs [64, 128] f32 stages 1
  ws.buffer @p smem [128, 128] bf16 stages 1
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
    ws.epilogue @o
  }
}

// -----

// K and V rings of depth 1 on the overlap schedule: slower, but neither a
// deadlock nor a hazard (the look-ahead K is released in the same block).
// expected-remark @+1 {{synchronisation verified}}
ws.kernel @depth_one target = sm_90a, block_m = 128, block_n = 176, spec = <head_dim = 128, q_heads = 32, kv_heads = 8, causal = true> {
  ws.buffer @q smem [128, 128] bf16 stages 1
  ws.buffer @k smem [176, 128] bf16 stages 1
  ws.buffer @v smem [176, 128] bf16 stages 1
  ws.buffer @s regs [64, 176] f32 stages 1
  ws.buffer @p regs [64, 176] bf16 stages 1
  ws.buffer @o regs [64, 128] f32 stages 1
  ws.pipe @q_pipe depth 1 producer @producer consumers [@consumer0, @consumer1] buffers [@q] tx_bytes 32768
  ws.pipe @k_pipe depth 1 producer @producer consumers [@consumer0, @consumer1] buffers [@k] tx_bytes 45056
  ws.pipe @v_pipe depth 1 producer @producer consumers [@consumer0, @consumer1] buffers [@v] tx_bytes 45056
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

// -----

// The first sm_100a schedule (before issue 17): the correction role gets
// nothing from the softmax roles, neither the factor of each block nor the
// row sums. Rejected by the data flow, in program order.
// expected-note @+1 {{in program order of @correction}}
ws.kernel @blackwell target = sm_100a, block_m = 256, block_n = 128, spec = <head_dim = 128, q_heads = 32, kv_heads = 8, causal = true> {
  ws.buffer @q0 smem [128, 128] bf16 stages 1
  ws.buffer @q1 smem [128, 128] bf16 stages 1
  ws.buffer @k smem [128, 128] bf16 stages 2
  ws.buffer @v smem [128, 128] bf16 stages 2
  ws.buffer @o_stage smem [128, 128] bf16 stages 1 aliases @q0
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
      // expected-error @+1 {{'ws.correct' op fails sync verification: data flow: ws.correct rescales @o0 by each block's correction factor, but @correction computes none (no ws.softmax_update of its own) and no `by` buffer brings it from a softmax role}}
      ws.correct @o0
      ws.release @o0_pipe
      ws.acquire @o1_pipe
      ws.correct @o1
      ws.release @o1_pipe
    }
    ws.acquire @epi_pipe
    ws.epilogue @o0 -> @o_stage
    ws.release @epi_pipe
    ws.acquire @epi_pipe
    ws.epilogue @o1 -> @o_stage
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

// The overlap schedule without the wait that retires Q Kᵀ of block n + 1:
// K's stage is released while the wgmma still reads it.
// expected-note @+1 {{in program order of @consumer0}}
ws.kernel @qk_not_waited target = sm_90a, block_m = 128, block_n = 176, spec = <dtype = bf16, head_dim = 128, head_dim_v = 128, q_heads = 32, kv_heads = 8, causal = true, phase = prefill, softmax_scale = default, sparsity = none, lse = false, stats = false> reverse_tiles schedule {block_m = 128 : i64, block_n = 176 : i64, consumer_regs = 240 : i64, kv_multicast = false, overlap = true, p_in_registers = true, persistent = false, pingpong = false, producer_regs = 24 : i64, q_in_registers = false, stages = 2 : i64, v_on_demand = false} {
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
      // expected-error @+1 {{async hazard: releases @k_pipe while the async product reading @k is in flight}}
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

// -----

// V released before the wait for P V.
// expected-note @+1 {{in program order of @consumer0}}
ws.kernel @pv_wait_after_release target = sm_90a, block_m = 128, block_n = 176, spec = <dtype = bf16, head_dim = 128, head_dim_v = 128, q_heads = 32, kv_heads = 8, causal = true, phase = prefill, softmax_scale = default, sparsity = none, lse = false, stats = false> reverse_tiles schedule {block_m = 128 : i64, block_n = 176 : i64, consumer_regs = 240 : i64, kv_multicast = false, overlap = true, p_in_registers = true, persistent = false, pingpong = false, producer_regs = 24 : i64, q_in_registers = false, stages = 2 : i64, v_on_demand = false} {
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
      // expected-error @+1 {{async hazard: releases @v_pipe while the async product reading @v is in flight}}
      ws.release @v_pipe
      ws.mma_wait
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

// -----

// A second asynchronous P V into O while the first is in flight.
// expected-note @+1 {{in program order of @consumer0}}
ws.kernel @two_products_into_o target = sm_90a, block_m = 128, block_n = 176, spec = <dtype = bf16, head_dim = 128, head_dim_v = 128, q_heads = 32, kv_heads = 8, causal = true, phase = prefill, softmax_scale = default, sparsity = none, lse = false, stats = false> reverse_tiles schedule {block_m = 128 : i64, block_n = 176 : i64, consumer_regs = 240 : i64, kv_multicast = false, overlap = true, p_in_registers = true, persistent = false, pingpong = false, producer_regs = 24 : i64, q_in_registers = false, stages = 2 : i64, v_on_demand = false} {
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
      // expected-error @+1 {{async hazard: two products into @o without a ws.mma_wait between them}}
      ws.mma pv @p, @v -> @o {async}
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

// -----

// A drain (the load role's wait for the consumers' release of Q) moved
// before the kv_loop: the consumer releases Q after its loop, which waits
// for K copies the load role never issues.
// expected-error @+2 {{fails sync verification: deadlock: no role can step and @producer, @consumer0 wait forever}}
// expected-note-re @+1 {{with 1 KV block{{.*}}blocked at ws.acquire @q_pipe {drain} (tile 0): waits on @q_pipe.empty[0] for phase 0 (0 completed)}}
ws.kernel @drain_before_loop target = sm_90a, block_m = 64, block_n = 64, spec = <dtype = bf16, head_dim = 128, head_dim_v = 128, q_heads = 32, kv_heads = 8, causal = true, phase = decode, softmax_scale = default, sparsity = none, lse = true, stats = false, kv_lengths = per_sequence> q_group = 4 split_kv merge_kernel per_seq_kv schedule {block_m = 64 : i64, block_n = 64 : i64, consumer_regs = 240 : i64, kv_cp_async = true, kv_multicast = false, lean_entry = true, merge_kernel = true, overlap = true, p_in_registers = true, persistent = false, pingpong = false, producer_regs = 80 : i64, q_in_registers = false, split_interleave = false, stages = 3 : i64, v_on_demand = false} {
  ws.buffer @q smem [64, 128] bf16 stages 1
  ws.buffer @k smem [64, 128] bf16 stages 3
  ws.buffer @v smem [64, 128] bf16 stages 3
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.buffer @p regs [64, 64] bf16 stages 1
  ws.buffer @o regs [64, 128] f32 stages 1
  ws.pipe @q_pipe depth 1 producer @producer consumers [@consumer0] buffers [@q] tx_bytes 16384
  ws.pipe @k_pipe depth 3 producer @producer consumers [@consumer0] buffers [@k] cp_async
  ws.pipe @v_pipe depth 3 producer @producer consumers [@consumer0] buffers [@v] cp_async
  ws.role @producer load warps [0, 4) regs 80 {
    ws.acquire @q_pipe
    ws.tma_load q -> @q via @q_pipe
    ws.release @q_pipe
    ws.acquire @q_pipe {drain}
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
    ws.epilogue @o {lse}
  }
}
