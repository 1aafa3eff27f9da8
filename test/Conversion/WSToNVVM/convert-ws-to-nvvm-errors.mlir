// RUN: blasst-opt %s -split-input-file --convert-ws-to-nvvm -verify-diagnostics
// What the sm_90a lowering refuses, each with its reason.

// expected-error @below {{targets sm_100a but the pass lowers sm_90a}}
ws.kernel @b200 target = sm_100a, block_m = 128, block_n = 128, spec = <head_dim = 64> {
  ws.role @r load warps [0, 1) {
  }
}

// -----

ws.kernel @bad_kind target = sm_90a, block_m = 128, block_n = 128, spec = <head_dim = 64> {
  // expected-error @below {{role kind 'correction' is not lowered on sm_90a (load and compute roles are)}}
  ws.role @r correction warps [0, 4) {
  }
}

// -----

ws.kernel @twice target = sm_90a, block_m = 64, block_n = 128, spec = <head_dim = 64> {
  ws.buffer @k smem [128, 64] bf16 stages 2
  ws.pipe @k_pipe depth 2 producer @p consumers [@c] buffers [@k] tx_bytes 16384
  ws.role @p load warps [0, 4) {
    // expected-error @below {{acquires pipe @k_pipe 2 times per KV block; the sm_90a lowering needs exactly one}}
    ws.kv_loop {
      ws.acquire @k_pipe
      ws.release @k_pipe
      ws.acquire @k_pipe
      ws.release @k_pipe
    }
  }
  ws.role @c compute warps [4, 8) {
  }
}

// -----

ws.kernel @regs_p target = sm_90a, block_m = 64, block_n = 128, spec = <head_dim = 64> {
  ws.buffer @q smem [128, 64] bf16 stages 1
  ws.buffer @v smem [128, 64] bf16 stages 1
  ws.buffer @p regs [64, 128] bf16 stages 1
  ws.buffer @o regs [64, 64] f32 stages 1
  ws.role @c compute warps [0, 4) {
    ws.kv_loop {
      // expected-error @below {{operand a in registers needs P from a preceding ws.exp2_store_p or ws.pack_p in the same block}}
      ws.mma pv @p, @v -> @o
    }
  }
}

// -----

ws.kernel @math_in_load target = sm_90a, block_m = 128, block_n = 128, spec = <head_dim = 64> {
  ws.buffer @o regs [64, 64] f32 stages 1
  ws.role @r load warps [0, 4) {
    // expected-error @below {{runs in a 'load' role; on sm_90a it is lowered in compute roles only}}
    ws.epilogue @o
  }
}

// -----

ws.kernel @tma_in_compute target = sm_90a, block_m = 128, block_n = 128, spec = <head_dim = 64> {
  ws.buffer @q smem [128, 64] bf16 stages 1
  ws.pipe @q_pipe depth 1 producer @c consumers [@d] buffers [@q] tx_bytes 16384
  ws.role @c compute warps [0, 4) rows [0, 64) {
    // expected-error @below {{runs in a compute role; on sm_90a TMA loads are issued by a load role}}
    ws.tma_load q -> @q via @q_pipe
  }
  ws.role @d compute warps [4, 8) rows [64, 128) {
  }
}

// -----

// Regression (found by fuzzing): a clean error, not a crash. (Before the
// kv_loop, row_max now works on block 0: a prologue.) After the loop there
// is no block.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, q_heads = 8, kv_heads = 8> {
  ws.buffer @q smem [64, 64] bf16 stages 1
  ws.buffer @kb smem [64, 64] bf16 stages 1
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.pipe @k_pipe depth 1 producer @ld consumers [@c] buffers [@kb] tx_bytes 8192
  ws.role @ld load warps [4, 8) {
    ws.kv_loop {
      ws.acquire @k_pipe
      ws.tma_load k -> @kb via @k_pipe
      ws.release @k_pipe
    }
  }
  ws.role @c compute warps [0, 4) {
    ws.mma qk @q, @kb -> @s
    ws.kv_loop {
    }
    // expected-error @below {{is lowered inside the kv_loop or before it (on block 0), not after it}}
    ws.row_max @s
  }
}

// -----

// Regression (found by fuzzing): a clean error, not a crash.
// spec head_dim_v = 1 but the O accumulator buffer is [64, 64]: st.o is an
// empty struct, emitCorrect extracts field 0 -> ExtractValueOp with no type.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, head_dim_v = 1, q_heads = 8, kv_heads = 8> {
  ws.buffer @q smem [64, 64] bf16 stages 1
  ws.buffer @kb smem [64, 64] bf16 stages 1
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.buffer @o regs [64, 64] f32 stages 1
  ws.pipe @k_pipe depth 1 producer @ld consumers [@c] buffers [@kb] tx_bytes 8192
  ws.role @ld load warps [4, 8) {
    ws.kv_loop {
      ws.acquire @k_pipe
      ws.tma_load k -> @kb via @k_pipe
      ws.release @k_pipe
    }
  }
  ws.role @c compute warps [0, 4) {
    ws.kv_loop {
      ws.acquire @k_pipe
      ws.mma qk @q, @kb -> @s
      ws.release @k_pipe
      ws.row_max @s
      ws.softmax_update @s
      // expected-error @below {{is 64x64 but the O accumulator it names is 64x0}}
      ws.correct @o
    }
  }
}

// -----

// Regression (found by fuzzing): a clean error, not a crash.
// row_max on a scores buffer wider than the mma's accumulator (no register
// budget, so the role verifier does not notice): extract past the S struct.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, q_heads = 8, kv_heads = 8> {
  ws.buffer @q smem [64, 64] bf16 stages 1
  ws.buffer @kb smem [64, 64] bf16 stages 1
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.buffer @wide regs [64, 128] f32 stages 1
  ws.pipe @k_pipe depth 1 producer @ld consumers [@c] buffers [@kb] tx_bytes 8192
  ws.role @ld load warps [4, 8) {
    ws.kv_loop {
      ws.acquire @k_pipe
      ws.tma_load k -> @kb via @k_pipe
      ws.release @k_pipe
    }
  }
  ws.role @c compute warps [0, 4) {
    ws.kv_loop {
      ws.acquire @k_pipe
      ws.mma qk @q, @kb -> @s
      ws.release @k_pipe
      // expected-error @below {{@wide is 64x128 but the scores of a preceding ws.mma qk it names is 64x64}}
      ws.row_max @wide
    }
  }
}

// -----

// Regression (found by fuzzing): a clean error, not a crash.
// epilogue of an accumulator wider than spec.head_dim_v (no register budget).
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, q_heads = 8, kv_heads = 8> {
  ws.buffer @o regs [64, 256] f32 stages 1
  ws.role @c compute warps [0, 4) {
    // expected-error @below {{@o is 64x256 but the O accumulator it names is 64x64}}
    ws.epilogue @o
  }
}

// -----

// Regression (found by fuzzing): a clean error, not a crash.
// P in registers filled from a 64-column scores buffer, consumed by a
// P.V over 128 keys: wgmmaRegisterA slices st.pRegs out of range.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 128, spec = <head_dim = 64, q_heads = 8, kv_heads = 8> {
  ws.buffer @q smem [64, 64] bf16 stages 1
  ws.buffer @kb smem [128, 64] bf16 stages 1
  ws.buffer @vb smem [128, 64] bf16 stages 1
  ws.buffer @s regs [64, 128] f32 stages 1
  ws.buffer @s2 regs [64, 64] f32 stages 1
  ws.buffer @p regs [64, 128] bf16 stages 1
  ws.buffer @o regs [64, 64] f32 stages 1
  ws.pipe @k_pipe depth 1 producer @ld consumers [@c] buffers [@kb] tx_bytes 16384
  ws.pipe @v_pipe depth 1 producer @ld consumers [@c] buffers [@vb] tx_bytes 16384
  ws.role @ld load warps [4, 8) {
    ws.kv_loop {
      ws.acquire @k_pipe
      ws.tma_load k -> @kb via @k_pipe
      ws.release @k_pipe
      ws.acquire @v_pipe
      ws.tma_load v -> @vb via @v_pipe
      ws.release @v_pipe
    }
  }
  ws.role @c compute warps [0, 4) {
    ws.kv_loop {
      ws.acquire @k_pipe
      ws.mma qk @q, @kb -> @s
      ws.release @k_pipe
      ws.row_max @s
      ws.softmax_update @s
      // expected-error @below {{@s2 is 64x64 but the scores it names is 64x128}}
      ws.exp2_store_p @s2 -> @p
      ws.acquire @v_pipe
      ws.mma pv @p, @vb -> @o
      ws.release @v_pipe
    }
    ws.epilogue @o
  }
}

// -----

// ws.pack_p converts the exponentials ws.exp2 left in S; raw scores are
// refused, and so is exponentiating twice.
ws.kernel @pack_raw target = sm_90a, block_m = 64, block_n = 128, spec = <head_dim = 64> {
  ws.buffer @q smem [128, 64] bf16 stages 1
  ws.buffer @kb smem [128, 64] bf16 stages 1
  ws.buffer @s regs [64, 128] f32 stages 1
  ws.buffer @p regs [64, 128] bf16 stages 1
  ws.pipe @k_pipe depth 1 producer @ld consumers [@c] buffers [@kb] tx_bytes 16384
  ws.role @ld load warps [4, 8) {
    ws.kv_loop {
      ws.acquire @k_pipe
      ws.tma_load k -> @kb via @k_pipe
      ws.release @k_pipe
    }
  }
  ws.role @c compute warps [0, 4) {
    ws.kv_loop {
      ws.acquire @k_pipe
      ws.mma qk @q, @kb -> @s
      ws.release @k_pipe
      ws.row_max @s
      ws.softmax_update @s
      // expected-error @below {{needs the exponentials of a preceding ws.exp2 in the same block}}
      ws.pack_p @s -> @p
    }
  }
}

// -----

ws.kernel @exp_twice target = sm_90a, block_m = 64, block_n = 128, spec = <head_dim = 64> {
  ws.buffer @q smem [128, 64] bf16 stages 1
  ws.buffer @kb smem [128, 64] bf16 stages 1
  ws.buffer @s regs [64, 128] f32 stages 1
  ws.pipe @k_pipe depth 1 producer @ld consumers [@c] buffers [@kb] tx_bytes 16384
  ws.role @ld load warps [4, 8) {
    ws.kv_loop {
      ws.acquire @k_pipe
      ws.tma_load k -> @kb via @k_pipe
      ws.release @k_pipe
    }
  }
  ws.role @c compute warps [0, 4) {
    ws.kv_loop {
      ws.acquire @k_pipe
      ws.mma qk @q, @kb -> @s
      ws.release @k_pipe
      ws.row_max @s
      ws.softmax_update @s
      ws.exp2 @s
      // expected-error @below {{the scores are exponentiated already}}
      ws.exp2 @s
    }
  }
}

// -----

ws.kernel @regs_q target = sm_90a, block_m = 64, block_n = 128, spec = <head_dim = 64> {
  ws.buffer @qr regs [64, 64] bf16 stages 1
  ws.buffer @k smem [128, 64] bf16 stages 2
  ws.buffer @s regs [64, 128] f32 stages 1
  ws.pipe @k_pipe depth 2 producer @p consumers [@c] buffers [@k] tx_bytes 16384
  ws.role @p load warps [0, 4) {
    ws.kv_loop {
      ws.acquire @k_pipe
      ws.tma_load k -> @k via @k_pipe
      ws.release @k_pipe
    }
  }
  ws.role @c compute warps [4, 8) {
    ws.kv_loop {
      ws.acquire @k_pipe
      // expected-error @below {{operand a in registers needs Q from a preceding ws.load_frag in the same role}}
      ws.mma qk @qr, @k -> @s
      ws.release @k_pipe
    }
  }
}

// -----

ws.kernel @frag_in_loop target = sm_90a, block_m = 64, block_n = 128, spec = <head_dim = 64> {
  ws.buffer @q smem [128, 64] bf16 stages 1
  ws.buffer @qr regs [64, 64] bf16 stages 1
  ws.role @c compute warps [0, 4) {
    ws.kv_loop {
      // expected-error @below {{is lowered before the kv_loop only}}
      ws.load_frag @q -> @qr
    }
  }
}

// -----

// The sm_100a hand-over of the softmax state does not exist on sm_90a.
ws.kernel @handover target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.buffer @f smem [64, 2] f32 stages 1
  ws.role @r compute warps [0, 4) rows [0, 64) {
    ws.kv_loop {
      // expected-error @below {{'ws.softmax_update' op hands the softmax state to another role through shared memory; on sm_90a the compute role keeps it in registers}}
      ws.softmax_update @s -> @f
    }
  }
}
