// RUN: blasst-opt %s -split-input-file --convert-ws-to-nvvm=target=sm_100a -verify-diagnostics
// What the sm_100a lowering refuses, each with its reason.

// expected-error @below {{targets sm_90a but the pass lowers sm_100a}}
ws.kernel @h200 target = sm_90a, block_m = 128, block_n = 128, spec = <head_dim = 64> {
  ws.role @r load warps [0, 1) {
  }
}

// -----

ws.kernel @compute_role target = sm_100a, block_m = 128, block_n = 128, spec = <head_dim = 64> {
  // expected-error @below {{role kind 'compute' is not lowered on sm_100a}}
  ws.role @c compute warps [0, 4) rows [0, 128) {
  }
}

// -----

ws.kernel @softmax_split target = sm_100a, block_m = 128, block_n = 128, spec = <head_dim = 64> {
  // expected-error @below {{on sm_100a a softmax role is one warpgroup (4 warps from a multiple of 4), got warps [2, 6)}}
  ws.role @s softmax warps [2, 6) rows [0, 128) {
  }
}

// -----

// row_max works on the row of S read_scores holds in registers.
ws.kernel @no_read target = sm_100a, block_m = 128, block_n = 128, spec = <head_dim = 64> {
  ws.buffer @s0 tmem [128, 128] f32 stages 1
  ws.pipe @s0_pipe depth 1 producer @mma consumers [@softmax0] buffers [@s0]
  ws.role @softmax0 softmax warps [0, 4) rows [0, 128) {
    ws.kv_loop {
      ws.acquire @s0_pipe
      ws.release @s0_pipe
      // expected-error @below {{needs a preceding ws.read_scores}}
      ws.row_max @s0
    }
  }
  ws.role @mma mma warps [4, 5) {
    ws.kv_loop {
      ws.acquire @s0_pipe
      ws.release @s0_pipe
    }
  }
}

// -----

// A row of 256 scores does not fit a softmax thread's registers.
ws.kernel @wide_row target = sm_100a, block_m = 128, block_n = 256, spec = <head_dim = 64> {
  ws.buffer @s0 tmem [128, 256] f32 stages 1
  ws.pipe @s0_pipe depth 1 producer @mma consumers [@softmax0] buffers [@s0]
  ws.role @softmax0 softmax warps [0, 4) rows [0, 128) {
    ws.kv_loop {
      ws.acquire @s0_pipe
      // expected-error @below {{reads @s0; the sm_100a lowering holds a row of S (in tensor memory, a multiple of 16 and at most 128 columns) in a softmax thread's registers, got 256 columns}}
      ws.read_scores @s0
      ws.release @s0_pipe
    }
  }
  ws.role @mma mma warps [4, 5) {
    ws.kv_loop {
      ws.acquire @s0_pipe
      ws.release @s0_pipe
    }
  }
}

// -----

// P for the tcgen05 P V lives in tensor memory.
ws.kernel @p_in_smem target = sm_100a, block_m = 128, block_n = 128, spec = <head_dim = 64> {
  ws.buffer @s0 tmem [128, 128] f32 stages 1
  ws.buffer @p0 smem [128, 128] bf16 stages 1
  ws.buffer @f0 smem [128, 2] f32 stages 1
  ws.pipe @s0_pipe depth 1 producer @mma consumers [@softmax0] buffers [@s0]
  ws.role @softmax0 softmax warps [0, 4) rows [0, 128) {
    ws.kv_loop {
      ws.acquire @s0_pipe
      ws.read_scores @s0
      ws.row_max @s0
      ws.softmax_update @s0 -> @f0
      // expected-error @below {{stores P in @p0; the sm_100a lowering stores P (64 columns) in the kernel's tensor memory}}
      ws.exp2_store_p @s0 -> @p0
      ws.release @s0_pipe
    }
  }
  ws.role @mma mma warps [4, 5) {
    ws.kv_loop {
      ws.acquire @s0_pipe
      ws.release @s0_pipe
    }
  }
}
