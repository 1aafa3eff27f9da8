// blasst-verify-sync lands a TMA copy right after its issue (explores no
// other successor while it is in flight) only where the protocol shows that
// no other step can see the copy before its full barrier completes: the
// release expects exactly the block's copied bytes, every read of the stage
// and every consumer release follows that role's acquire of the block, and
// blocks are acquired in order (planEagerLanding in SyncCheck.cpp,
// docs/design.md "Eager landing"). Where a pipe fails that, its copies land
// in every order and the stats line says why. The verdicts without the
// reduction are the same:
// RUN: blasst-opt %s -split-input-file -verify-diagnostics --blasst-verify-sync=stats=true -o /dev/null 2>&1 | FileCheck %s
// RUN: blasst-opt %s -split-input-file -verify-diagnostics --blasst-verify-sync=eager-landing=false -o /dev/null

// Every read after its acquire: every pipe's copies land eagerly.
// CHECK: verify-sync @k_read_after_acquire: {{[0-9]+}} states, {{.*}} ms (copies into @q_pipe, @k_pipe, @v_pipe land eagerly)
ws.kernel @k_read_after_acquire target = sm_90a, block_m = 128, block_n = 176, spec = <head_dim = 128, q_heads = 32, kv_heads = 8, causal = true> {
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
    ws.kv_loop {
      ws.acquire @v_pipe
      ws.acquire @k_pipe
      ws.mma qk @q, @k -> @s
      ws.release @k_pipe
      ws.softmax_update @s
      ws.exp2_store_p @s -> @p
      ws.mma pv @p, @v -> @o
      ws.release @v_pipe
    }
    ws.release @q_pipe
    ws.epilogue @o
  }
  ws.role @consumer1 compute warps [8, 12) regs 240 rows [64, 128) {
    ws.acquire @q_pipe
    ws.kv_loop {
      ws.acquire @v_pipe
      ws.acquire @k_pipe
      ws.mma qk @q, @k -> @s
      ws.release @k_pipe
      ws.softmax_update @s
      ws.exp2_store_p @s -> @p
      ws.mma pv @p, @v -> @o
      ws.release @v_pipe
    }
    ws.release @q_pipe
    ws.epilogue @o
  }
}

// -----

// The consumers read K after acquiring V but before acquiring K. The producer
// copies K, then V, so V's full barrier does not order K's landing: the
// read can come first. Landed eagerly, K's copy would always be there before
// V's copy is issued and the search would pass this kernel (684 states);
// the read before the acquire keeps @k_pipe's copies in every order.
// CHECK: verify-sync @k_read_before_acquire: {{.*}} (copies into @q_pipe, @v_pipe land eagerly; copies landing in every order: @k_pipe (ws.mma of @consumer0 reads its storage without acquiring the block before))
// expected-note @+1 {{with 1 KV block}}
ws.kernel @k_read_before_acquire target = sm_90a, block_m = 128, block_n = 176, spec = <head_dim = 128, q_heads = 32, kv_heads = 8, causal = true> {
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
    ws.kv_loop {
      ws.acquire @v_pipe
      // expected-error @+1 {{fails sync verification: read before write: @consumer0 reads @k (stage 0) expecting K of block 0 but finds nothing (never written)}}
      ws.mma qk @q, @k -> @s
      ws.acquire @k_pipe
      ws.release @k_pipe
      ws.softmax_update @s
      ws.exp2_store_p @s -> @p
      ws.mma pv @p, @v -> @o
      ws.release @v_pipe
    }
    ws.release @q_pipe
    ws.epilogue @o
  }
  ws.role @consumer1 compute warps [8, 12) regs 240 rows [64, 128) {
    ws.acquire @q_pipe
    ws.kv_loop {
      ws.acquire @v_pipe
      ws.mma qk @q, @k -> @s
      ws.acquire @k_pipe
      ws.release @k_pipe
      ws.softmax_update @s
      ws.exp2_store_p @s -> @p
      ws.mma pv @p, @v -> @o
      ws.release @v_pipe
    }
    ws.release @q_pipe
    ws.epilogue @o
  }
}

// -----

// K copied twice per block: the copies bring twice the bytes the release
// expects, so the barrier completes with a copy in flight. The byte check
// keeps @k_pipe's copies in every order and the late one is found.
// CHECK: verify-sync @k_copied_twice: {{.*}} copies landing in every order: @k_pipe (its release expects 45056 bytes for a block whose copies bring 90112))
// expected-note @+1 {{with 1 KV block}}
ws.kernel @k_copied_twice target = sm_90a, block_m = 128, block_n = 176, spec = <head_dim = 128, q_heads = 32, kv_heads = 8, causal = true> {
  ws.buffer @q smem [128, 128] bf16 stages 1
  ws.buffer @k smem [176, 128] bf16 stages 2
  ws.buffer @v smem [176, 128] bf16 stages 2
  ws.buffer @s regs [64, 176] f32 stages 1
  ws.buffer @p regs [64, 176] bf16 stages 1
  ws.buffer @o regs [64, 128] f32 stages 1
  ws.pipe @q_pipe depth 1 producer @producer consumers [@consumer0, @consumer1] buffers [@q] tx_bytes 32768
  // expected-error @+1 {{fails sync verification: the copy of a block in phase 0 lands while @k_pipe.full[0] is in phase 1}}
  ws.pipe @k_pipe depth 2 producer @producer consumers [@consumer0, @consumer1] buffers [@k] tx_bytes 45056
  ws.pipe @v_pipe depth 2 producer @producer consumers [@consumer0, @consumer1] buffers [@v] tx_bytes 45056
  ws.role @producer load warps [0, 4) regs 24 {
    ws.acquire @q_pipe
    ws.tma_load q -> @q via @q_pipe
    ws.release @q_pipe
    ws.kv_loop {
      ws.acquire @k_pipe
      ws.tma_load k -> @k via @k_pipe
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
      ws.acquire @v_pipe
      ws.acquire @k_pipe
      ws.mma qk @q, @k -> @s
      ws.release @k_pipe
      ws.softmax_update @s
      ws.exp2_store_p @s -> @p
      ws.mma pv @p, @v -> @o
      ws.release @v_pipe
    }
    ws.release @q_pipe
    ws.epilogue @o
  }
  ws.role @consumer1 compute warps [8, 12) regs 240 rows [64, 128) {
    ws.acquire @q_pipe
    ws.kv_loop {
      ws.acquire @v_pipe
      ws.acquire @k_pipe
      ws.mma qk @q, @k -> @s
      ws.release @k_pipe
      ws.softmax_update @s
      ws.exp2_store_p @s -> @p
      ws.mma pv @p, @v -> @o
      ws.release @v_pipe
    }
    ws.release @q_pipe
    ws.epilogue @o
  }
}
