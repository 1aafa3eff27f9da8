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

// -----

// The epilogue stages O for the TMA store in TMA's 64-column panels.
ws.kernel @stage_96_columns target = sm_100a, block_m = 128, block_n = 128, spec = <head_dim = 64> {
  ws.buffer @o0 tmem [128, 96] f32 stages 1
  ws.buffer @l0 smem [128, 2] f32 stages 1
  ws.buffer @st smem [128, 96] bf16 stages 1
  ws.pipe @l0_pipe depth 1 producer @softmax0 consumers [@correction] buffers [@l0]
  ws.pipe @epi_pipe depth 1 producer @correction consumers [@epilogue] buffers [@st]
  ws.role @softmax0 softmax warps [0, 4) rows [0, 128) {
    ws.acquire @l0_pipe
    ws.store_row_sums -> @l0
    ws.release @l0_pipe
  }
  ws.role @correction correction warps [4, 8) {
    ws.acquire @l0_pipe
    ws.acquire @epi_pipe
    // expected-error @below {{stages O for a TMA store in 64-column panels (one 128-byte swizzle span), got 96 columns}}
    ws.epilogue @o0 -> @st sums @l0
    ws.release @epi_pipe
    ws.release @l0_pipe
  }
  ws.role @epilogue epilogue warps [8, 9) {
    ws.acquire @epi_pipe
    ws.tma_store @st -> o
    ws.release @epi_pipe
  }
}

// -----

// The TMA store takes boxes of 128 rows by 64 columns (the epilogue role
// comes first here, so its store is lowered before the staging).
ws.kernel @store_96_columns target = sm_100a, block_m = 128, block_n = 128, spec = <head_dim = 64> {
  ws.buffer @o0 tmem [128, 96] f32 stages 1
  ws.buffer @l0 smem [128, 2] f32 stages 1
  ws.buffer @st smem [128, 96] bf16 stages 1
  ws.pipe @l0_pipe depth 1 producer @softmax0 consumers [@correction] buffers [@l0]
  ws.pipe @epi_pipe depth 1 producer @correction consumers [@epilogue] buffers [@st]
  ws.role @epilogue epilogue warps [8, 9) {
    ws.acquire @epi_pipe
    // expected-error @below {{stores O in boxes of 128 rows by 64 columns (O's tensor map), not a 128x96 tile}}
    ws.tma_store @st -> o
    ws.release @epi_pipe
  }
  ws.role @softmax0 softmax warps [0, 4) rows [0, 128) {
    ws.acquire @l0_pipe
    ws.store_row_sums -> @l0
    ws.release @l0_pipe
  }
  ws.role @correction correction warps [4, 8) {
    ws.acquire @l0_pipe
    ws.acquire @epi_pipe
    ws.epilogue @o0 -> @st sums @l0
    ws.release @epi_pipe
    ws.release @l0_pipe
  }
}

// -----

// A staged tile no epilogue with `sums` writes cannot be stored.
ws.kernel @store_unstaged target = sm_100a, block_m = 128, block_n = 128, spec = <head_dim = 64> {
  ws.buffer @st smem [128, 64] bf16 stages 1
  ws.pipe @epi_pipe depth 1 producer @correction consumers [@epilogue] buffers [@st]
  ws.role @epilogue epilogue warps [8, 9) {
    ws.acquire @epi_pipe
    // expected-error @below {{stores @st, which no ws.epilogue with `sums` stages}}
    ws.tma_store @st -> o
    ws.release @epi_pipe
  }
  ws.role @correction correction warps [4, 8) {
    ws.acquire @epi_pipe
    ws.release @epi_pipe
  }
}

// -----

// The staging tile is one 128-row tile of the accumulator's columns.
ws.kernel @stage_64_rows target = sm_100a, block_m = 128, block_n = 128, spec = <head_dim = 64> {
  ws.buffer @o0 tmem [128, 64] f32 stages 1
  ws.buffer @l0 smem [128, 2] f32 stages 1
  ws.buffer @st smem [64, 64] bf16 stages 1
  ws.pipe @l0_pipe depth 1 producer @softmax0 consumers [@correction] buffers [@l0]
  ws.role @softmax0 softmax warps [0, 4) rows [0, 128) {
    ws.acquire @l0_pipe
    ws.store_row_sums -> @l0
    ws.release @l0_pipe
  }
  ws.role @correction correction warps [4, 8) {
    ws.acquire @l0_pipe
    // expected-error @below {{stages a 64x64 tile for a 128x64 accumulator}}
    ws.epilogue @o0 -> @st sums @l0
    ws.release @l0_pipe
  }
}
