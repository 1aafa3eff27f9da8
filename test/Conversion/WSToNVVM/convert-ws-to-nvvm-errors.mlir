// RUN: blasst-opt %s -split-input-file --convert-ws-to-nvvm -verify-diagnostics
// What the sm_90a lowering refuses, each with its reason.

// expected-error @below {{cannot be lowered: the sm_100a lowering (tcgen05, tensor memory) is not built yet}}
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

ws.kernel @twice target = sm_90a, block_m = 128, block_n = 128, spec = <head_dim = 64> {
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

ws.kernel @regs_p target = sm_90a, block_m = 128, block_n = 128, spec = <head_dim = 64> {
  ws.buffer @q smem [128, 64] bf16 stages 1
  ws.buffer @v smem [128, 64] bf16 stages 1
  ws.buffer @p regs [64, 128] bf16 stages 1
  ws.buffer @o regs [64, 64] f32 stages 1
  ws.role @c compute warps [0, 4) {
    ws.kv_loop {
      // expected-error @below {{operand a in registers needs P from a preceding ws.exp2_store_p in the same block}}
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
  ws.role @c compute warps [0, 4) {
    // expected-error @below {{runs in a compute role; on sm_90a TMA loads are issued by a load role}}
    ws.tma_load q -> @q via @q_pipe
  }
  ws.role @d compute warps [4, 8) {
  }
}
