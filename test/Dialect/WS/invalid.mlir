// RUN: blasst-opt %s -split-input-file -verify-diagnostics
// One case per user-facing ws error: kernel budgets, buffers, pipes, roles,
// steps and ws.launch.

// Kernel: block_m must be a multiple of 64.
// expected-error @below {{block_m must be a positive multiple of 64 and block_n a positive multiple of 16, got block_m = 96, block_n = 64}}
ws.kernel @k target = sm_90a, block_m = 96, block_n = 64, spec = <head_dim = 64> {
  ws.role @r load warps [0, 1) {
  }
}

// -----

// Kernel: at least one role.
// expected-error @below {{'ws.kernel' op has no ws.role}}
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @q smem [64, 64] bf16 stages 1
}

// -----

// Kernel: role warp ranges are disjoint.
// expected-error @below {{roles 'a' [0, 4) and 'b' [2, 6) overlap}}
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.role @a load warps [0, 4) {
  }
  ws.role @b load warps [2, 6) {
  }
}

// -----

// Kernel: two consumer warpgroups claiming the same query rows (rows 64-127
// would never be computed).
// expected-error @below {{roles 'consumer0' rows [0, 64) and 'consumer1' rows [0, 64) claim the same query rows}}
ws.kernel @k target = sm_90a, block_m = 128, block_n = 64, spec = <head_dim = 64> {
  ws.role @consumer0 compute warps [4, 8) rows [0, 64) {
  }
  ws.role @consumer1 compute warps [8, 12) rows [0, 64) {
  }
}

// -----

// Kernel: every query row of the CTA belongs to a compute role.
// expected-error @below {{query rows [128, 192) of the CTA's 192 belong to no compute role}}
ws.kernel @k target = sm_90a, block_m = 192, block_n = 64, spec = <head_dim = 64> {
  ws.role @consumer0 compute warps [4, 8) rows [0, 64) {
  }
  ws.role @consumer1 compute warps [8, 12) rows [64, 128) {
  }
}

// -----

// Kernel: a gap between the compute roles' rows.
// expected-error @below {{query rows [64, 128) of the CTA's 192 belong to no compute role}}
ws.kernel @k target = sm_90a, block_m = 192, block_n = 64, spec = <head_dim = 64> {
  ws.role @consumer0 compute warps [4, 8) rows [0, 64) {
  }
  ws.role @consumer1 compute warps [8, 12) rows [128, 192) {
  }
}

// -----

// Kernel: an sm_90a compute warpgroup computes 64 rows (one wgmma tile); a
// role without `rows` claims all of block_m.
// expected-error @below {{compute role 'c' has 4 warps, which compute 64 query rows on sm_90a, but claims rows [0, 128)}}
ws.kernel @k target = sm_90a, block_m = 128, block_n = 64, spec = <head_dim = 64> {
  ws.role @c compute warps [0, 4) {
  }
}

// -----

// Kernel: sm_100a softmax warpgroups split the rows the same way.
// expected-error @below {{roles 'softmax0' rows [0, 128) and 'softmax1' rows [64, 192) claim the same query rows}}
ws.kernel @k target = sm_100a, block_m = 256, block_n = 128, spec = <head_dim = 64> {
  ws.role @softmax0 softmax warps [0, 4) rows [0, 128) {
  }
  ws.role @softmax1 softmax warps [4, 8) rows [64, 192) {
  }
}

// -----

// Kernel: sm_100a rows no softmax role owns.
// expected-error @below {{query rows [0, 128) of the CTA's 256 belong to no softmax role}}
ws.kernel @k target = sm_100a, block_m = 256, block_n = 128, spec = <head_dim = 64> {
  ws.role @softmax1 softmax warps [4, 8) rows [128, 256) {
  }
}

// -----

// Role: at most the 32 warps of a CTA.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  // expected-error @below {{warp range [0, 33) exceeds the 32 warps of a CTA}}
  ws.role @r load warps [0, 33) {
  }
}

// -----

// Kernel: the roles of one warpgroup agree on a register budget.
// expected-error @below {{warpgroup 0 has roles with different register budgets ('a' 24, 'b' 32); setmaxnreg applies to a whole warpgroup}}
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.role @a load warps [0, 2) regs 24 {
  }
  ws.role @b load warps [2, 4) regs 32 {
  }
}

// -----

// Kernel: if any warpgroup sets a budget, every occupied one does.
// expected-error @below {{warpgroup 1 has no register budget while other warpgroups set one}}
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.role @a load warps [0, 4) regs 24 {
  }
  ws.role @b load warps [4, 8) {
  }
}

// -----

// Kernel: the budgets fit in the CTA's 64K registers.
// expected-error @below {{register budgets need 98304 registers, a CTA has 65536}}
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.role @a load warps [0, 4) regs 256 {
  }
  ws.role @b load warps [4, 8) regs 256 {
  }
  ws.role @c load warps [8, 12) regs 256 {
  }
}

// -----

// Kernel: the budgets fit in the CTA's launch allocation (ptxas' 168
// registers x 384 threads), not just in 65536: setmaxnreg.inc would wait.
// expected-error @below {{register budgets need 65536 registers, a CTA has 65536 and launches with 64512 (384 threads x 168): setmaxnreg cannot grow past the launch's}}
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.role @a load warps [0, 4) regs 32 {
  }
  ws.role @b load warps [4, 8) regs 240 {
  }
  ws.role @c load warps [8, 12) regs 240 {
  }
}

// -----

// Kernel: shared memory within the target's limit.
// expected-error @below {{shared memory buffers need 524288 bytes, sm_90a allows at most 232448}}
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @big smem [1024, 128] f32 stages 1
  ws.role @r load warps [0, 1) {
  }
}

// -----

// Kernel: tensor memory needs sm_100a (reported on the buffer).
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  // expected-error @below {{'ws.buffer' op is in tensor memory, which needs sm_100a; the kernel targets sm_90a}}
  ws.buffer @s tmem [64, 64] f32 stages 1
  ws.role @r load warps [0, 1) {
  }
}

// -----

// Kernel: at most 512 tensor memory columns.
// expected-error @below {{tensor memory buffers need 1024 columns, there are 512}}
ws.kernel @k target = sm_100a, block_m = 128, block_n = 128, spec = <head_dim = 64> {
  ws.buffer @s tmem [128, 512] f32 stages 2
  ws.role @r load warps [0, 1) {
  }
}

// -----

// Buffer: the shape is [rows, columns].
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  // expected-error @below {{shape must be [rows, columns], got 1 dims}}
  ws.buffer @q smem [64] bf16 stages 1
  ws.role @r load warps [0, 1) {
  }
}

// -----

// Buffer: dims are positive.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  // expected-error @below {{shape dims must be in [1, 65536]}}
  ws.buffer @q smem [0, 64] bf16 stages 1
  ws.role @r load warps [0, 1) {
  }
}

// -----

// Buffer: at least one stage.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  // expected-error @below {{stages must be in [1, 16], got 0}}
  ws.buffer @q smem [64, 64] bf16 stages 0
  ws.role @r load warps [0, 1) {
  }
}

// -----

// Buffer: element type bf16, f16 or f32.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  // expected-error @below {{element type must be bf16, f16, f32 or i32 (a vote word), got 'i8'}}
  ws.buffer @q smem [64, 64] i8 stages 1
  ws.role @r load warps [0, 1) {
  }
}

// -----

// Buffer: a tensor memory tile has at most 128 lanes.
ws.kernel @k target = sm_100a, block_m = 256, block_n = 128, spec = <head_dim = 64> {
  // expected-error @below {{a tensor memory tile has at most 128 rows (lanes), got 256}}
  ws.buffer @s tmem [256, 128] f32 stages 1
  ws.role @r load warps [0, 1) {
  }
}

// -----

// Buffer: aliases names a ws.buffer.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  // expected-error @below {{aliases @r, which is not a ws.buffer of the kernel}}
  ws.buffer @q smem [64, 64] bf16 stages 1 aliases @r
  ws.role @r load warps [0, 1) {
  }
}

// -----

// Buffer: no alias chains (nor self-aliases): the target owns storage.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @a smem [64, 64] bf16 stages 1
  ws.buffer @b smem [64, 64] bf16 stages 1 aliases @a
  // expected-error @below {{may only alias a buffer that owns storage}}
  ws.buffer @c smem [64, 64] bf16 stages 1 aliases @b
  ws.role @r load warps [0, 1) {
  }
}

// -----

// Buffer: an alias lives in the same memory space as its target.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @q smem [64, 64] bf16 stages 1
  // expected-error @below {{aliases @q in another memory space}}
  ws.buffer @p regs [64, 64] bf16 stages 1 aliases @q
  ws.role @r load warps [0, 1) {
  }
}

// -----

// Buffer: an alias fits in its target.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @q smem [64, 64] bf16 stages 1
  // expected-error @below {{is larger than the buffer it aliases, @q}}
  ws.buffer @o smem [64, 64] f32 stages 1 aliases @q
  ws.role @r load warps [0, 1) {
  }
}

// -----

// Pipe: depth at least 1.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  // expected-error @below {{depth must be in [1, 16], got 0}}
  ws.pipe @p depth 0 producer @a consumers [@b]
  ws.role @a load warps [0, 1) {
  }
  ws.role @b load warps [1, 2) {
  }
}

// -----

// Pipe: the producer is a role.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  // expected-error @below {{producer @x is not a ws.role of the kernel}}
  ws.pipe @p depth 1 producer @x consumers [@b]
  ws.role @a load warps [0, 1) {
  }
  ws.role @b load warps [1, 2) {
  }
}

// -----

// Pipe: at least one consumer.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  // expected-error @below {{needs at least one consumer role}}
  ws.pipe @p depth 1 producer @a consumers []
  ws.role @a load warps [0, 1) {
  }
}

// -----

// Pipe: consumers are symbol references.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  // expected-error @below {{consumers must be role symbols, got "b"}}
  ws.pipe @p depth 1 producer @a consumers ["b"]
  ws.role @a load warps [0, 1) {
  }
  ws.role @b load warps [1, 2) {
  }
}

// -----

// Pipe: every consumer is a role.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  // expected-error @below {{consumer @x is not a ws.role of the kernel}}
  ws.pipe @p depth 1 producer @a consumers [@b, @x]
  ws.role @a load warps [0, 1) {
  }
  ws.role @b load warps [1, 2) {
  }
}

// -----

// Pipe: a role does not consume its own pipe.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  // expected-error @below {{role @a cannot both produce and consume}}
  ws.pipe @p depth 1 producer @a consumers [@a]
  ws.role @a load warps [0, 1) {
  }
}

// -----

// Pipe: each consumer once.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  // expected-error @below {{consumer @b is listed twice}}
  ws.pipe @p depth 1 producer @a consumers [@b, @b]
  ws.role @a load warps [0, 1) {
  }
  ws.role @b load warps [1, 2) {
  }
}

// -----

// Pipe: guarded buffers are ws.buffers.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  // expected-error @below {{buffer @b is not a ws.buffer of the kernel}}
  ws.pipe @p depth 1 producer @a consumers [@b] buffers [@b]
  ws.role @a load warps [0, 1) {
  }
  ws.role @b load warps [1, 2) {
  }
}

// -----

// Pipe: a guarded buffer has one stage per pipe stage.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @kb smem [64, 64] bf16 stages 2
  // expected-error @below {{buffer @kb has 2 stages but the pipe has depth 3}}
  ws.pipe @p depth 3 producer @a consumers [@b] buffers [@kb]
  ws.role @a load warps [0, 1) {
  }
  ws.role @b load warps [1, 2) {
  }
}

// -----

// Pipe: a TMA pipe guards only shared memory.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @s regs [64, 64] f32 stages 1
  // expected-error @below {{a TMA pipe (tx_bytes) may only guard smem buffers; @s is not in smem}}
  ws.pipe @p depth 1 producer @a consumers [@b] buffers [@s] tx_bytes 16384
  ws.role @a load warps [0, 1) {
  }
  ws.role @b load warps [1, 2) {
  }
}

// -----

// Pipe: tx_bytes is one stage of the guarded buffers.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @kb smem [64, 64] bf16 stages 2
  ws.buffer @vb smem [64, 64] bf16 stages 2
  // expected-error @below {{tx_bytes is 8192 but one stage of its buffers is 16384 bytes}}
  ws.pipe @p depth 2 producer @a consumers [@b] buffers [@kb, @vb] tx_bytes 8192
  ws.role @a load warps [0, 1) {
  }
  ws.role @b load warps [1, 2) {
  }
}

// -----

// Pipe: tx_bytes below the mbarrier's 2^20 transaction count. Only reachable
// through aliases (or a buffer listed twice): the smem limit is below 1 MiB.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @b0 smem [256, 256] bf16 stages 1
  ws.buffer @b1 smem [256, 256] bf16 stages 1 aliases @b0
  ws.buffer @b2 smem [256, 256] bf16 stages 1 aliases @b0
  ws.buffer @b3 smem [256, 256] bf16 stages 1 aliases @b0
  ws.buffer @b4 smem [256, 256] bf16 stages 1 aliases @b0
  ws.buffer @b5 smem [256, 256] bf16 stages 1 aliases @b0
  ws.buffer @b6 smem [256, 256] bf16 stages 1 aliases @b0
  ws.buffer @b7 smem [256, 256] bf16 stages 1 aliases @b0
  // expected-error @below {{tx_bytes 1048576 exceeds the mbarrier transaction count limit (2^20 - 1)}}
  ws.pipe @p depth 1 producer @a consumers [@b] buffers [@b0, @b1, @b2, @b3, @b4, @b5, @b6, @b7] tx_bytes 1048576
  ws.role @a load warps [0, 1) {
  }
  ws.role @b load warps [1, 2) {
  }
}

// -----

// Role: a non-empty warp range.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.role @a load warps [0, 1) {
  }
  // expected-error @below {{warp range [4, 4) is empty or negative}}
  ws.role @b load warps [4, 4) {
  }
}

// -----

// Role: setmaxnreg budgets are multiples of 8 in [24, 256].
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  // expected-error @below {{register budget must be a multiple of 8 in [24, 256] (setmaxnreg), got 20}}
  ws.role @r load warps [0, 4) regs 20 {
  }
}

// -----

// Role: rows lie within the CTA's block_m rows.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  // expected-error @below {{rows must be [begin, end) within the CTA's 64 query rows}}
  ws.role @r load warps [0, 4) rows [0, 128) {
  }
}

// -----

// Role: a wgmma-issuing role (compute on sm_90a) spans whole warpgroups.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  // expected-error @below {{issues wgmma and must span whole warpgroups (warps [4k, 4j)), got [0, 2)}}
  ws.role @r compute warps [0, 2) {
  }
}

// -----

// Role: the register buffers a role touches fit in its budget.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @o regs [64, 256] f32 stages 1
  // expected-error @below {{register buffers need 128 registers per thread, the budget is 24}}
  ws.role @r compute warps [0, 4) regs 24 {
    ws.kv_loop {
      ws.correct @o
    }
  }
}

// -----

// Steps: a pipe operand names a ws.pipe.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.role @r load warps [0, 1) {
    // expected-error @below {{'ws.acquire' op @nope does not name a ws.pipe of the kernel}}
    ws.acquire @nope
  }
}

// -----

// Steps: acquire/release only on a pipe the role takes part in.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.pipe @p depth 1 producer @a consumers [@b]
  ws.role @a load warps [0, 1) {
  }
  ws.role @b load warps [1, 2) {
  }
  ws.role @c load warps [2, 3) {
    // expected-error @below {{'ws.release' op role 'c' is neither the producer nor a consumer of pipe @p}}
    ws.release @p
  }
}

// -----

// Steps: tma_load loads Q, K or V, never O.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @kb smem [64, 64] bf16 stages 1
  ws.pipe @p depth 1 producer @a consumers [@b] buffers [@kb] tx_bytes 8192
  ws.role @a load warps [0, 1) {
    // expected-error @below {{loads only Q, K or V}}
    ws.tma_load o -> @kb via @p
  }
  ws.role @b load warps [1, 2) {
  }
}

// -----

// Steps: tma_load writes shared memory.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @s regs [64, 64] bf16 stages 1
  ws.pipe @p depth 1 producer @a consumers [@b] buffers [@s]
  ws.role @a load warps [0, 1) {
    // expected-error @below {{destination @s must be in smem}}
    ws.tma_load k -> @s via @p
  }
  ws.role @b load warps [1, 2) {
  }
}

// -----

// Steps: only the pipe's producer issues its TMA loads.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @kb smem [64, 64] bf16 stages 1
  ws.pipe @p depth 1 producer @a consumers [@b] buffers [@kb] tx_bytes 8192
  ws.role @a load warps [0, 1) {
  }
  ws.role @b load warps [1, 2) {
    // expected-error @below {{is issued by role 'b' but pipe @p is produced by @a}}
    ws.tma_load k -> @kb via @p
  }
}

// -----

// Steps: the tma_load destination is guarded by the pipe it completes on.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @kb smem [64, 64] bf16 stages 1
  ws.buffer @vb smem [64, 64] bf16 stages 1
  ws.pipe @p depth 1 producer @a consumers [@b] buffers [@kb] tx_bytes 8192
  ws.role @a load warps [0, 1) {
    // expected-error @below {{destination @vb is not guarded by pipe @p}}
    ws.tma_load v -> @vb via @p
  }
  ws.role @b load warps [1, 2) {
  }
}

// -----

// Steps: tma_load completes on a pipe with tx_bytes.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @kb smem [64, 64] bf16 stages 1
  ws.pipe @p depth 1 producer @a consumers [@b] buffers [@kb]
  ws.role @a load warps [0, 1) {
    // expected-error @below {{pipe @p has neither tx_bytes nor cp_async; TMA completes on a transaction-counting pipe}}
    ws.tma_load k -> @kb via @p
  }
  ws.role @b load warps [1, 2) {
  }
}

// -----

// Pipes: cp_async and tx_bytes exclude each other.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @kb smem [64, 64] bf16 stages 1
  // expected-error @below {{cp_async and tx_bytes exclude each other}}
  ws.pipe @p depth 1 producer @a consumers [@b] buffers [@kb] tx_bytes 8192 cp_async
  ws.role @a load warps [0, 4) {
  }
  ws.role @b compute warps [4, 8) {
  }
}

// -----

// Pipes: a cp_async pipe is filled by a load role's threads.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @kb smem [64, 64] bf16 stages 1
  // expected-error @below {{cp_async needs a load role as producer, got @a}}
  ws.pipe @p depth 1 producer @a consumers [@b] buffers [@kb] cp_async
  ws.role @a compute warps [0, 4) {
  }
  ws.role @b load warps [4, 8) {
  }
}

// -----

// Pipes: a cp_async pipe guards the smem buffers it fills.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @kb regs [64, 64] f32 stages 1
  // expected-error @below {{a cp_async pipe may only guard smem buffers; @kb is not in smem}}
  ws.pipe @p depth 1 producer @a consumers [@b] buffers [@kb] cp_async
  ws.role @a load warps [0, 4) {
  }
  ws.role @b compute warps [4, 8) {
  }
}

// -----

// Pipes: a cp_async pipe needs the buffers it fills.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  // expected-error @below {{cp_async needs the buffers it fills}}
  ws.pipe @p depth 1 producer @a consumers [@b] cp_async
  ws.role @a load warps [0, 4) {
  }
  ws.role @b compute warps [4, 8) {
  }
}

// -----

// Steps: a cp_async pipe copies K or V.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @qb smem [64, 64] bf16 stages 1
  ws.pipe @p depth 1 producer @a consumers [@b] buffers [@qb] cp_async
  ws.role @a load warps [0, 4) {
    // expected-error @below {{a cp_async pipe (@p) copies K or V tiles only}}
    ws.tma_load q -> @qb via @p
  }
  ws.role @b compute warps [4, 8) {
  }
}

// -----

// Steps: in the kv_loop a pipe step may run at most the pipe's depth ahead.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @kb smem [64, 64] bf16 stages 2
  ws.pipe @p depth 2 producer @a consumers [@b] buffers [@kb] tx_bytes 8192
  ws.role @a load warps [0, 1) {
    ws.kv_loop {
      // expected-error @below {{ahead must be in [-1, 2] (the depth of pipe @p), got 3}}
      ws.acquire @p {ahead = 3 : i64}
    }
  }
  ws.role @b load warps [1, 2) {
  }
}

// -----

// Steps: before the kv_loop `ahead = k` is block k of the prologue, below
// the pipe's depth.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @kb smem [64, 64] bf16 stages 2
  ws.pipe @p depth 2 producer @a consumers [@b] buffers [@kb] tx_bytes 8192
  ws.role @a load warps [0, 1) {
    // expected-error @below {{before the kv_loop ahead = k works on block k and must be in [0, 2) (the depth of pipe @p), got 2}}
    ws.tma_load k -> @kb via @p {ahead = 2 : i64}
    ws.kv_loop {
    }
  }
  ws.role @b load warps [1, 2) {
  }
}

// -----

// Steps: no look-ahead after the kv_loop.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @kb smem [64, 64] bf16 stages 2
  ws.pipe @p depth 2 producer @a consumers [@b] buffers [@kb] tx_bytes 8192
  ws.role @a load warps [0, 1) {
    ws.kv_loop {
    }
    // expected-error @below {{ahead after the kv_loop is not meaningful}}
    ws.release @p {ahead = 1 : i64}
  }
  ws.role @b load warps [1, 2) {
  }
}

// -----

// Steps: tma_store writes only O.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @st smem [64, 64] bf16 stages 1
  ws.role @r epilogue warps [0, 1) {
    // expected-error @below {{stores only O}}
    ws.tma_store @st -> k
  }
}

// -----

// Steps: tma_store reads shared memory.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @o regs [64, 64] f32 stages 1
  ws.role @r epilogue warps [0, 1) {
    // expected-error @below {{source @o must be in smem}}
    ws.tma_store @o -> o
  }
}

// -----

// Steps: mma operand b is in shared memory.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @q smem [64, 64] bf16 stages 1
  ws.buffer @kr regs [64, 64] bf16 stages 1
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.role @r compute warps [0, 4) {
    // expected-error @below {{operand b @kr must be in smem}}
    ws.mma qk @q, @kr -> @s
  }
}

// -----

// Steps: the wgmma accumulator is in registers on sm_90a.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @q smem [64, 64] bf16 stages 1
  ws.buffer @kb smem [64, 64] bf16 stages 1
  ws.buffer @s smem [64, 64] f32 stages 1
  ws.role @r compute warps [0, 4) {
    // expected-error @below {{accumulator @s must be in regs on sm_90a}}
    ws.mma qk @q, @kb -> @s
  }
}

// -----

// Steps: tcgen05.mma reads operand a from smem or tmem on sm_100a.
ws.kernel @k target = sm_100a, block_m = 128, block_n = 128, spec = <head_dim = 64> {
  ws.buffer @p regs [128, 128] bf16 stages 1
  ws.buffer @vb smem [128, 64] bf16 stages 1
  ws.buffer @o tmem [128, 64] f32 stages 1
  ws.role @r mma warps [0, 1) {
    // expected-error @below {{operand a @p must be in smem or tmem on sm_100a}}
    ws.mma pv @p, @vb -> @o
  }
}

// -----

// Steps: the accumulator is f32.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @q smem [64, 64] bf16 stages 1
  ws.buffer @kb smem [64, 64] bf16 stages 1
  ws.buffer @s regs [64, 64] bf16 stages 1
  ws.role @r compute warps [0, 4) {
    // expected-error @below {{accumulator must be f32}}
    ws.mma qk @q, @kb -> @s
  }
}

// -----

// Steps: mma operands a and b share an element type.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @q smem [64, 64] bf16 stages 1
  ws.buffer @kb smem [64, 64] f16 stages 1
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.role @r compute warps [0, 4) {
    // expected-error @below {{operands a and b have different element types}}
    ws.mma qk @q, @kb -> @s
  }
}

// -----

// Steps: qk shapes compose as d[M, N] = a[M, D] b[N, D]^T.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @q smem [64, 64] bf16 stages 1
  ws.buffer @kb smem [64, 128] bf16 stages 1
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.role @r compute warps [0, 4) {
    // expected-error @below {{shapes do not compose: a 64x64, b 64x128, d 64x64 for qk}}
    ws.mma qk @q, @kb -> @s
  }
}

// -----

// Steps: wgmma tiles have a multiple of 64 rows.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @q smem [64, 64] bf16 stages 1
  ws.buffer @kb smem [64, 64] bf16 stages 1
  ws.buffer @s regs [32, 64] f32 stages 1
  ws.role @r compute warps [0, 4) {
    // expected-error @below {{wgmma tiles have a multiple of 64 rows, got 32}}
    ws.mma qk @q, @kb -> @s
  }
}

// -----

// Steps: score steps take an f32 S tile in registers or tensor memory.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @s smem [64, 64] f32 stages 1
  ws.role @r compute warps [0, 4) {
    ws.kv_loop {
      // expected-error @below {{'ws.row_max' op scores @s must be an f32 buffer in registers or tensor memory}}
      ws.row_max @s
    }
  }
}

// -----

// Steps: P is stored in the P.V operand type, not f32.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.buffer @p regs [64, 64] f32 stages 1
  ws.role @r compute warps [0, 4) {
    ws.kv_loop {
      // expected-error @below {{P @p must be bf16 or f16}}
      ws.exp2_store_p @s -> @p
    }
  }
}

// -----

// Steps: correct rescales an accumulator in registers or tensor memory.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @o smem [64, 64] f32 stages 1
  ws.role @r compute warps [0, 4) {
    ws.kv_loop {
      // expected-error @below {{'ws.correct' op accumulator @o must be in registers or tensor memory}}
      ws.correct @o
    }
  }
}

// -----

// Steps: the epilogue reads an accumulator in registers or tensor memory.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @o smem [64, 64] f32 stages 1
  ws.role @r compute warps [0, 4) {
    // expected-error @below {{'ws.epilogue' op accumulator @o must be in registers or tensor memory}}
    ws.epilogue @o
  }
}

// -----

// Steps: the epilogue stages O in shared memory.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @o regs [64, 64] f32 stages 1
  ws.buffer @st regs [64, 64] bf16 stages 1
  ws.role @r compute warps [0, 4) {
    // expected-error @below {{staging buffer @st must be in smem}}
    ws.epilogue @o -> @st
  }
}

// -----

// Steps: buffer operands name a ws.buffer of the kernel.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @kb smem [64, 64] bf16 stages 1
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.role @r compute warps [0, 4) {
    // expected-error @below {{operand a @q does not name a ws.buffer of the kernel}}
    ws.mma qk @q, @kb -> @s
  }
}

// -----

// Steps: a step runs inside a ws.role (or its kv_loop).
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.pipe @p depth 1 producer @a consumers [@b]
  // expected-error @below {{expects parent op to be one of 'ws.role, ws.kv_loop, ws.unless_skipped'}}
  ws.acquire @p
  ws.role @a load warps [0, 1) {
  }
  ws.role @b load warps [1, 2) {
  }
}

// -----

// Launch: the callee is a ws.kernel.
func.func @not_a_kernel() {
  return
}
func.func @launch(%q: memref<?x?x8x64xf16>) {
  // expected-error @below {{'ws.launch' op @not_a_kernel does not name a ws.kernel}}
  ws.launch @not_a_kernel(%q) : memref<?x?x8x64xf16>
  return
}

// -----

// Pipe: a buffer guarded twice would double the expected TMA bytes.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @kb smem [64, 64] bf16 stages 1
  // expected-error @below {{buffer @kb is listed twice}}
  ws.pipe @p depth 1 producer @a consumers [@b] buffers [@kb, @kb] tx_bytes 16384
  ws.role @a load warps [0, 1) {
  }
  ws.role @b load warps [1, 2) {
  }
}

// -----

// Kernel: a malformed tmem buffer is reported by the buffer, not mis-sized.
ws.kernel @k target = sm_100a, block_m = 128, block_n = 128, spec = <head_dim = 64> {
  // expected-error @below {{shape must be [rows, columns], got 1 dims}}
  ws.buffer @t tmem [128] f32 stages 1
  ws.role @r load warps [0, 1) {
  }
}

// -----

// Step: a buffer declared after the step that uses it is checked first.
ws.kernel @k target = sm_90a, block_m = 128, block_n = 128, spec = <head_dim = 64> {
  ws.role @r compute warps [0, 4) {
    // expected-error @below {{operand a @a is a malformed ws.buffer}}
    ws.mma qk @a, @b -> @d
  }
  ws.buffer @a smem [] bf16 stages 1
  ws.buffer @b smem [64, 64] bf16 stages 1
  ws.buffer @d regs [64, 64] f32 stages 1
}

// -----

// Role: any role that issues wgmma on sm_90a spans whole warpgroups.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @q smem [64, 64] bf16 stages 1
  ws.buffer @kb smem [64, 64] bf16 stages 1
  ws.buffer @s regs [64, 64] f32 stages 1
  // expected-error @below {{issues wgmma and must span whole warpgroups}}
  ws.role @m mma warps [0, 1) {
    ws.mma qk @q, @kb -> @s
  }
}

// -----

ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, q_heads = 4, kv_heads = 4> {
  ws.role @r load warps [0, 1) {
  }
}
// Launch: the kernel's spec fixes the number of memrefs.
func.func @launch_count(%q: memref<?x?x4x64xbf16>) {
  // expected-error @below {{kernel @k takes 4 memrefs (q, k, v, o), got 1}}
  ws.launch @k(%q) : memref<?x?x4x64xbf16>
  return
}

// -----

ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, q_heads = 4, kv_heads = 4> {
  ws.role @r load warps [0, 1) {
  }
}
// Launch: Q, K, V, O are rank-4 memrefs of the spec's dtype.
func.func @launch_type(%q: memref<?x?x4x64xf16>) {
  // expected-error @below {{argument 0 must be a rank-4 memref of 'bf16' ([batch, seq, heads, dim]), got 'memref<?x?x4x64xf16>'}}
  ws.launch @k(%q, %q, %q, %q) : memref<?x?x4x64xf16>, memref<?x?x4x64xf16>, memref<?x?x4x64xf16>, memref<?x?x4x64xf16>
  return
}

// -----

// Vote: needs the block's row max first.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> {
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.role @c compute warps [0, 4) {
    ws.kv_loop {
      // expected-error @below {{needs a preceding ws.row_max @s in the same block}}
      ws.vote @s
    }
  }
}

// -----

// Vote: only in kernels with a sparsity policy.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.role @c compute warps [0, 4) {
    ws.kv_loop {
      ws.row_max @s
      // expected-error @below {{in a kernel whose spec has no sparsity policy}}
      ws.vote @s
    }
  }
}

// -----

// Vote: counters exactly when the spec asks for statistics.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> {
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.role @c compute warps [0, 4) {
    ws.kv_loop {
      ws.row_max @s
      // expected-error @below {{stats must be counted (here, or by the ws.await_vote {stats} that reads this vote) exactly when the spec asks for statistics}}
      ws.vote @s {stats}
    }
  }
}

// -----

// Vote: per KV block, so inside the kv_loop.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> {
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.role @c compute warps [0, 4) {
    ws.row_max @s
    // expected-error @below {{must be inside a ws.kv_loop}}
    ws.vote @s
  }
}

// -----

// unless_skipped: needs a vote before it.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> {
  ws.buffer @o regs [64, 64] f32 stages 1
  ws.role @c compute warps [0, 4) {
    ws.kv_loop {
      // expected-error @below {{needs a ws.vote in the same kv_loop or a ws.load_vote before it}}
      ws.unless_skipped {
        ws.correct @o
      }
    }
  }
}

// -----

// unless_skipped {ahead = 1}: the decision on block n + 1 comes from the
// loop's vote, so not before it.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> {
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.buffer @o regs [64, 64] f32 stages 1
  ws.role @c compute warps [0, 4) {
    ws.kv_loop {
      // expected-error @below {{ahead = 1 before the kv_loop's ws.vote: the decision on block n + 1 is not known yet}}
      ws.unless_skipped attributes {ahead = 1 : i64} {
        ws.correct @o
      }
      ws.row_max @s {ahead = 1 : i64}
      ws.vote @s
    }
  }
}

// -----

// unless_skipped: a decision on block n - 1, n or n + 1 only.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> {
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.buffer @o regs [64, 64] f32 stages 1
  ws.role @c compute warps [0, 4) {
    ws.kv_loop {
      ws.row_max @s
      ws.vote @s
      // expected-error @below {{ahead must be -1, 0 or 1, got -2}}
      ws.unless_skipped attributes {ahead = -2 : i64} {
        ws.correct @o
      }
    }
  }
}

// -----

// correct {ahead}: only block n's carried factor (a deferred P V).
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> {
  ws.buffer @o regs [64, 64] f32 stages 1
  ws.role @c compute warps [0, 4) {
    ws.kv_loop {
      // expected-error @below {{ahead must be 0 (the factor of block n, carried from the previous iteration), got 1}}
      ws.correct @o {ahead = 1 : i64}
    }
  }
}

// -----

// unless_skipped: pipe traffic runs on both paths.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> {
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.pipe @p depth 1 producer @a consumers [@c]
  ws.role @a load warps [4, 5) {
  }
  ws.role @c compute warps [0, 4) {
    ws.kv_loop {
      ws.row_max @s
      ws.vote @s
      ws.unless_skipped {
        // expected-error @below {{cannot be skipped: pipe traffic and votes must run on both paths}}
        ws.acquire @p
      }
    }
  }
}

// -----

// unless_skipped: fuse_next needs the fusable shape (the softmax, the P V
// wait and V's release, then the correction and P).
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> {
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.buffer @o regs [64, 64] f32 stages 1
  ws.role @c compute warps [0, 4) {
    ws.kv_loop {
      ws.row_max @s
      ws.vote @s
      // expected-error @below {{fuse_next needs a next ws.unless_skipped after only mma_wait and release steps, this one holding only softmax_update and exp2, the next only correct and pack_p}}
      ws.unless_skipped attributes {fuse_next} {
        ws.softmax_update @s
      }
      ws.correct @o
    }
  }
}

// -----

// store_vote: after the role's vote.
ws.kernel @k target = sm_100a, block_m = 256, block_n = 128, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> {
  ws.buffer @w smem [1, 1] i32 stages 1
  ws.role @c softmax warps [0, 4) rows [0, 128) {
    ws.kv_loop {
      // expected-error @below {{needs a preceding ws.vote in the same block}}
      ws.store_vote @w
    }
  }
}

// -----

// store_vote: the word is smem [1, 1] i32.
ws.kernel @k target = sm_100a, block_m = 256, block_n = 128, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> {
  ws.buffer @s tmem [128, 128] f32 stages 1
  ws.buffer @w smem [1, 2] i32 stages 1
  ws.role @c softmax warps [0, 4) rows [0, 128) {
    ws.kv_loop {
      ws.read_scores @s
      ws.row_max @s
      ws.vote @s
      // expected-error @below {{vote word @w must be an smem [1, 1] i32 buffer of one stage that owns its storage}}
      ws.store_vote @w
    }
  }
}

// -----

// store_vote: one writer per word.
ws.kernel @k target = sm_100a, block_m = 256, block_n = 128, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> {
  ws.buffer @s tmem [128, 128] f32 stages 1
  ws.buffer @w smem [1, 1] i32 stages 1
  ws.role @c softmax warps [0, 4) rows [0, 128) {
    ws.kv_loop {
      ws.read_scores @s
      ws.row_max @s
      ws.vote @s
      // expected-error @below {{vote word @w has more than one writer}}
      ws.store_vote @w
      ws.store_vote @w
    }
  }
}

// -----

// load_vote: a word some voter stores.
ws.kernel @k target = sm_100a, block_m = 256, block_n = 128, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> {
  ws.buffer @w smem [1, 1] i32 stages 1
  ws.role @m mma warps [12, 13) {
    ws.kv_loop {
      // expected-error @below {{reads vote word @w, which no ws.store_vote writes}}
      ws.load_vote @w
    }
  }
}

// -----

// load_vote: only in a role that does not vote itself.
ws.kernel @k target = sm_100a, block_m = 256, block_n = 128, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> {
  ws.buffer @s tmem [128, 128] f32 stages 1
  ws.buffer @w smem [1, 1] i32 stages 1
  ws.role @c softmax warps [0, 4) rows [0, 128) {
    ws.kv_loop {
      ws.read_scores @s
      ws.row_max @s
      ws.vote @s
      ws.store_vote @w
      // expected-error @below {{in a role that votes itself}}
      ws.load_vote @w
    }
  }
}

// -----

// A skip path that leaves out the hand-over of the decision (or a pipe
// arrival: above) cannot be written.
ws.kernel @k target = sm_100a, block_m = 256, block_n = 128, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> {
  ws.buffer @s tmem [128, 128] f32 stages 1
  ws.buffer @w smem [1, 1] i32 stages 1
  ws.role @c softmax warps [0, 4) rows [0, 128) {
    ws.kv_loop {
      ws.read_scores @s
      ws.row_max @s
      ws.vote @s
      ws.unless_skipped {
        // expected-error @below {{cannot be skipped: pipe traffic and votes must run on both paths}}
        ws.store_vote @w
      }
    }
  }
}

// -----

// Vote: the statistics are counted once, not by the voter and by the load
// role that reads its published vote.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0), stats = true> {
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.role @c compute warps [0, 4) {
    ws.kv_loop {
      ws.row_max @s
      // expected-error @below {{stats are counted twice: by this vote and by the ws.await_vote {stats} that reads it}}
      ws.vote @s {publish, stats}
    }
  }
  ws.role @a load warps [4, 5) {
    ws.kv_loop {
      ws.await_vote {stats}
    }
  }
}

// -----

// Buffer: an alias placed with `at` must fit the buffer it aliases (in that
// buffer's element columns: 128 bf16 columns are 64 f32 ones).
ws.kernel @k target = sm_100a, block_m = 128, block_n = 128, spec = <head_dim = 64> {
  ws.buffer @s tmem [128, 128] f32 stages 1
  // expected-error @below {{at [0, 96]: rows [0, 128) and 32-bit columns [96, 160) do not fit @s (128x128)}}
  ws.buffer @p tmem [128, 128] bf16 stages 1 aliases @s at [0, 96]
}

// -----

// Buffer: `at` places an alias.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  // expected-error @below {{at needs aliases}}
  ws.buffer @s smem [64, 64] bf16 stages 1 at [0, 0]
}

// -----

// Order: turns need at least two roles.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  // expected-error @below {{needs at least two roles to take turns}}
  ws.order @t roles [@a]
  ws.role @a load warps [0, 1) {
  }
}

// -----

// Turn steps: only roles of the ring take turns.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.order @t roles [@a, @b]
  ws.role @a load warps [0, 1) {
  }
  ws.role @b load warps [1, 2) {
  }
  ws.role @c load warps [2, 3) {
    // expected-error @below {{role 'c' does not take part in @t}}
    ws.turn_wait @t
  }
}

// -----

// Regression (found by fuzzing): a clean error, not a crash.
ws.kernel @tiny target = sm_90a, block_m = 64, block_n = 64, spec = <dtype = f16, head_dim = 64, q_heads = 8, kv_heads = 8, causal = false> {
  ws.buffer @q smem [64, 64] f16 stages 1
  ws.buffer @k smem [64, 64] f16 stages 1
  ws.role @compute compute warps [0, 4) {
    ws.kv_loop {
      // expected-error @below {{is a malformed ws.buffer}}
      ws.mma qk @q, @k -> @s
    }
  }
  ws.buffer @s regs [0, 64] f32 stages 1
}

// -----

// Regression (found by fuzzing): a clean error, not a crash.
ws.kernel @big target = sm_90a, block_m = 64, block_n = 64, spec = <dtype = f16, head_dim = 64, q_heads = 8, kv_heads = 8, causal = false> {
  // expected-error @below {{exceeds the 32 warps of a CTA}}
  ws.role @ld load warps [0, 9223372036854775807) regs 24 {
  }
}

// -----

// Regression (found by fuzzing): a clean error, not a crash.
// A pipe of depth 2^60 with no buffers: 16 * depth overflows to 0, so the
// smem check passes, and the prologue loops 2^60 times (hang / OOM).
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, q_heads = 8, kv_heads = 8> {
  // expected-error @below {{depth must be in [1, 16]}}
  ws.pipe @x depth 1152921504606846976 producer @a consumers [@b]
  ws.role @a load warps [0, 4) {
  }
  ws.role @b load warps [4, 8) {
  }
}

// -----

// Steps: pack_p writes P in registers (in smem, exp2_store_p writes it).
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.buffer @p smem [64, 64] bf16 stages 1
  ws.role @r compute warps [0, 4) {
    ws.kv_loop {
      // expected-error @below {{P @p must be in registers (in shared memory, ws.exp2_store_p writes it)}}
      ws.pack_p @s -> @p
    }
  }
}

// -----

// Steps: pack_p keeps the fragment's shape.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.buffer @p regs [64, 128] bf16 stages 1
  ws.role @r compute warps [0, 4) {
    ws.kv_loop {
      // expected-error @below {{P @p and the scores @s differ in shape}}
      ws.pack_p @s -> @p
    }
  }
}

// -----

// Steps: pack_p produces the P.V operand type.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.buffer @p regs [64, 64] f32 stages 1
  ws.role @r compute warps [0, 4) {
    ws.kv_loop {
      // expected-error @below {{P @p must be bf16 or f16 (the P·V operand type)}}
      ws.pack_p @s -> @p
    }
  }
}

// -----

// Steps: exp2 works on an f32 S tile in registers or tensor memory.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @s smem [64, 64] f32 stages 1
  ws.role @r compute warps [0, 4) {
    ws.kv_loop {
      // expected-error @below {{'ws.exp2' op scores @s must be an f32 buffer in registers or tensor memory}}
      ws.exp2 @s
    }
  }
}

// -----

// Steps: load_frag reads shared memory.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @q regs [64, 64] bf16 stages 1
  ws.buffer @qr regs [64, 64] bf16 stages 1
  ws.role @r compute warps [0, 4) {
    // expected-error @below {{source @q must be in shared memory}}
    ws.load_frag @q -> @qr
  }
}

// -----

// Steps: load_frag writes registers.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @q smem [64, 64] bf16 stages 1
  ws.buffer @qr smem [64, 64] bf16 stages 1
  ws.role @r compute warps [0, 4) {
    // expected-error @below {{destination @qr must be in registers}}
    ws.load_frag @q -> @qr
  }
}

// -----

// Steps: load_frag keeps the 16-bit element type.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @q smem [64, 64] bf16 stages 1
  ws.buffer @qr regs [64, 64] f16 stages 1
  ws.role @r compute warps [0, 4) {
    // expected-error @below {{source and destination must have the same 16-bit element type}}
    ws.load_frag @q -> @qr
  }
}

// -----

// Steps: load_frag takes a warpgroup's 64 rows of all the source's columns.
ws.kernel @k target = sm_90a, block_m = 128, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @q smem [128, 64] bf16 stages 1
  ws.buffer @qr regs [128, 64] bf16 stages 1
  ws.role @r compute warps [0, 4) {
    // expected-error @below {{destination @qr must be 64 rows of the source's 64 columns (a warpgroup's rows of a 128-row tile)}}
    ws.load_frag @q -> @qr
  }
}

// -----

// kv_multicast: non-causal only (the pair must visit the same KV blocks).
// expected-error @below {{'ws.kernel' op kv_multicast needs non-causal attention}}
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, causal = true> kv_multicast {
  ws.role @r load warps [0, 1) {
  }
}


// -----

// expected-error @below {{'ws.kernel' op kv_multicast cannot be combined with persistent}}
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> persistent kv_multicast {
  ws.role @r load warps [0, 1) {
  }
}

// -----

// Decode: q_group packs q_heads / kv_heads heads (32 / 8 = 4 by default).
// expected-error @below {{'ws.kernel' op q_group = 8 but the spec has q_heads / kv_heads = 4}}
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, phase = decode> q_group = 8 split_kv {
  ws.role @r load warps [0, 1) {
  }
}

// -----

// A q_group larger than the tile has no row for each head of a token.
// expected-error @below {{'ws.kernel' op q_group = 65 must be in [1, min(64, block_m = 64)] (a TMA box of q_group heads by floor(block_m / q_group) tokens)}}
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, q_heads = 65, kv_heads = 1, phase = decode> q_group = 65 split_kv {
  ws.role @r load warps [0, 1) {
  }
}

// -----

// q_group = 3 packs 3 x 21 = 63 rows: the Q copy lands 63 of the 64 rows,
// and the Q pipe's tx_bytes must say so (64 rows would never complete).
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, q_heads = 3, kv_heads = 1, phase = decode> q_group = 3 split_kv {
  ws.buffer @q smem [64, 64] bf16 stages 1
  // expected-error @below {{'ws.pipe' op tx_bytes is 8192 but one stage of its buffers is 8192 bytes, of which TMA lands 8064 (the q_group's packed rows)}}
  ws.pipe @q_pipe depth 1 producer @p consumers [@c] buffers [@q] tx_bytes 8192
  ws.role @p load warps [0, 4) {
    ws.acquire @q_pipe
    ws.tma_load q -> @q via @q_pipe
    ws.release @q_pipe
  }
  ws.role @c compute warps [4, 8) {
  }
}

// -----

// expected-error @below {{'ws.kernel' op q_group is implemented for sm_90a only}}
ws.kernel @k target = sm_100a, block_m = 64, block_n = 64, spec = <head_dim = 64, phase = decode> q_group = 4 {
  ws.role @r load warps [0, 1) {
  }
}

// -----

// expected-error @below {{'ws.kernel' op persistent with q_group needs split_kv over one contiguous range per split (no split_chunk; per_seq_kv or page_size only with lean)}}
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, phase = decode> persistent q_group = 4 {
  ws.role @r load warps [0, 1) {
  }
}

// -----

// expected-error @below {{'ws.kernel' op persistent with q_group needs split_kv over one contiguous range per split (no split_chunk; per_seq_kv or page_size only with lean)}}
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, phase = decode> persistent q_group = 4 split_kv split_chunk = 2 {
  ws.role @r load warps [0, 1) {
  }
}

// -----

// expected-error @below {{'ws.kernel' op q_group cannot be combined with kv_multicast}}
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, phase = decode> kv_multicast q_group = 4 {
  ws.role @r load warps [0, 1) {
  }
}

// -----

// expected-error @below {{'ws.kernel' op split_kv needs q_group (the decode schedule)}}
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, phase = decode> split_kv {
  ws.role @r load warps [0, 1) {
  }
}

// -----

// expected-error @below {{'ws.kernel' op split_chunk needs split_kv (the decode schedule)}}
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, phase = decode> q_group = 4 split_chunk = 2 {
  ws.role @r load warps [0, 1) {
  }
}

// -----

// expected-error @below {{'ws.kernel' op split_chunk = 0: a chunk is 1 to 1024 KV blocks}}
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, phase = decode> q_group = 4 split_kv split_chunk = 0 {
  ws.role @r load warps [0, 1) {
  }
}

// -----

// The last split's merge runs in the one compute role.
// expected-error @below {{'ws.kernel' op split_kv needs exactly one compute role}}
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, phase = decode> q_group = 4 split_kv {
  ws.role @r load warps [0, 1) {
  }
}

// -----

// V on demand: a published vote needs a load role that awaits it.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> {
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.role @c compute warps [0, 4) {
    ws.kv_loop {
      ws.row_max @s {ahead = 1}
      // expected-error @below {{publishes its decision but no load role has a ws.await_vote}}
      ws.vote @s {publish}
    }
  }
}

// -----

// V on demand: the load role awaits the votes.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> {
  ws.role @c compute warps [0, 4) {
    ws.kv_loop {
      // expected-error @below {{must be directly inside a load role's kv_loop}}
      ws.await_vote
    }
  }
}

// -----

// V on demand: every role that multiplies by V publishes its vote...
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> {
  ws.buffer @v smem [64, 64] bf16 stages 2
  ws.buffer @p regs [64, 64] bf16 stages 1
  ws.buffer @o regs [64, 64] f32 stages 1
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.pipe @v_pipe depth 2 producer @l consumers [@c] buffers [@v] tx_bytes 8192
  ws.role @l load warps [0, 4) {
    ws.kv_loop {
      // expected-error @below {{role 'c' multiplies by V but publishes no vote}}
      ws.await_vote
      ws.acquire @v_pipe
      ws.tma_load v -> @v via @v_pipe {on_demand}
      ws.release @v_pipe
    }
  }
  ws.role @c compute warps [4, 8) {
    ws.kv_loop {
      ws.row_max @s {ahead = 1}
      ws.vote @s
      ws.acquire @v_pipe
      ws.mma pv @p, @v -> @o
      ws.release @v_pipe
    }
  }
}

// -----

// ... on block n + 1 (the overlap schedule: block 0 is never voted on).
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> {
  ws.buffer @v smem [64, 64] bf16 stages 2
  ws.buffer @p regs [64, 64] bf16 stages 1
  ws.buffer @o regs [64, 64] f32 stages 1
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.pipe @v_pipe depth 2 producer @l consumers [@c] buffers [@v] tx_bytes 8192
  ws.role @l load warps [0, 4) {
    ws.kv_loop {
      // expected-error @below {{role 'c' votes on its own block; on-demand loads need the overlap schedule's vote on block n + 1 (after ws.row_max {ahead = 1})}}
      ws.await_vote
      ws.acquire @v_pipe
      ws.tma_load v -> @v via @v_pipe {on_demand}
      ws.release @v_pipe
    }
  }
  ws.role @c compute warps [4, 8) {
    ws.kv_loop {
      ws.row_max @s
      ws.vote @s {publish}
      ws.acquire @v_pipe
      ws.mma pv @p, @v -> @o
      ws.release @v_pipe
    }
  }
}

// -----

// V on demand: K feeds the vote, so only V copies wait for it...
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> {
  ws.buffer @k smem [64, 64] bf16 stages 2
  ws.pipe @k_pipe depth 2 producer @l consumers [@c] buffers [@k] tx_bytes 8192
  ws.role @c compute warps [4, 8) {
  }
  ws.role @l load warps [0, 4) {
    ws.kv_loop {
      ws.acquire @k_pipe
      // expected-error @below {{on_demand loads V only (K feeds the vote)}}
      ws.tma_load k -> @k via @k_pipe {on_demand}
      ws.release @k_pipe
    }
  }
}

// -----

// ... and only after the load role learned the decision.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> {
  ws.buffer @v smem [64, 64] bf16 stages 2
  ws.pipe @v_pipe depth 2 producer @l consumers [@c] buffers [@v] tx_bytes 8192
  ws.role @c compute warps [4, 8) {
  }
  ws.role @l load warps [0, 4) {
    ws.kv_loop {
      ws.acquire @v_pipe
      // expected-error @below {{on_demand needs a preceding ws.await_vote in the same kv_loop block}}
      ws.tma_load v -> @v via @v_pipe {on_demand}
      ws.release @v_pipe
    }
  }
}

// -----

// V on demand: one vote barrier per CTA and tile.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> persistent {
  ws.role @l load warps [0, 4) {
    ws.kv_loop {
      // expected-error @below {{is not lowered with persistent CTAs or kv_multicast}}
      ws.await_vote
    }
  }
}

// -----

// Speculating after zero kept blocks would never read a vote.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> {
  ws.role @l load warps [0, 4) {
    ws.kv_loop {
      // expected-error @below {{speculate_after must be 1 to 2147483647 (the kept blocks before a copy issued without its votes)}}
      ws.await_vote {speculate_after = 0}
    }
  }
}

// -----

// The lowering counts kept blocks in 32 bits: 2^32 + 1 would speculate
// after 1 kept block there, not what the sync checker proved.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> {
  ws.role @l load warps [0, 4) {
    ws.kv_loop {
      // expected-error @below {{speculate_after must be 1 to 2147483647 (the kept blocks before a copy issued without its votes)}}
      ws.await_vote {speculate_after = 4294967297}
    }
  }
}

// -----

// Steps: the correction factors handed to another role are an f32 smem
// buffer of the scores' rows and two columns.
ws.kernel @k target = sm_100a, block_m = 256, block_n = 128, spec = <head_dim = 64> {
  ws.buffer @s tmem [128, 128] f32 stages 1
  ws.buffer @f smem [128, 1] f32 stages 1
  ws.role @r softmax warps [0, 4) rows [0, 128) {
    ws.kv_loop {
      // expected-error @below {{'ws.softmax_update' op factors @f must be an f32 smem buffer of 128 rows and 2 columns (per row: value, running max)}}
      ws.softmax_update @s -> @f
    }
  }
}

// -----

ws.kernel @k target = sm_100a, block_m = 256, block_n = 128, spec = <head_dim = 64> {
  ws.buffer @o tmem [128, 64] f32 stages 1
  ws.buffer @f tmem [128, 2] f32 stages 1
  ws.role @r correction warps [0, 4) {
    ws.kv_loop {
      // expected-error @below {{'ws.correct' op factors @f must be an f32 smem buffer of 128 rows and 2 columns}}
      ws.correct @o by @f
    }
  }
}

// -----

ws.kernel @k target = sm_100a, block_m = 256, block_n = 128, spec = <head_dim = 64> {
  ws.buffer @o tmem [128, 64] f32 stages 1
  ws.buffer @l smem [64, 2] f32 stages 1
  ws.role @r correction warps [0, 4) {
    // expected-error @below {{'ws.epilogue' op row sums @l must be an f32 smem buffer of 128 rows and 2 columns}}
    ws.epilogue @o sums @l
  }
}

// -----

// Steps: the final row sums are handed over after the loop.
ws.kernel @k target = sm_100a, block_m = 256, block_n = 128, spec = <head_dim = 64> {
  ws.buffer @l smem [128, 2] f32 stages 1
  ws.role @r softmax warps [0, 4) rows [0, 128) {
    ws.kv_loop {
      // expected-error @below {{'ws.store_row_sums' op hands over the final row sums: it must follow the ws.kv_loop}}
      ws.store_row_sums -> @l
    }
  }
}

// -----

// The decode KV caches: the kernel's record matches the spec, needs the
// decode schedule, and a KV block is part of one page or whole pages.
// expected-error @below {{'ws.kernel' op has per_seq_kv but the spec has kv_lengths = uniform}}
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, phase = decode> q_group = 4 split_kv per_seq_kv {
  ws.role @r load warps [0, 1) {
  }
}

// -----

// expected-error @below {{'ws.kernel' op the spec has kv_lengths = per_sequence but the kernel has no per_seq_kv}}
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, phase = decode, kv_lengths = per_sequence> q_group = 4 split_kv {
  ws.role @r load warps [0, 1) {
  }
}

// -----

// expected-error @below {{'ws.kernel' op page_size = 32 but the spec's kv_cache has page size 64 (0: contiguous)}}
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, phase = decode, kv_cache = paged(page = 64)> q_group = 4 split_kv page_size = 32 {
  ws.role @r load warps [0, 1) {
  }
}

// -----

// expected-error @below {{'ws.kernel' op per_seq_kv needs split_kv (the decode schedule)}}
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, phase = decode, kv_lengths = per_sequence> per_seq_kv {
  ws.role @r load warps [0, 1) {
  }
}

// -----

// expected-error @below {{'ws.kernel' op page_size = 64 and block_n = 48: one must divide the other (a KV block is part of one page or whole pages)}}
ws.kernel @k target = sm_90a, block_m = 64, block_n = 48, spec = <head_dim = 64, phase = decode, kv_cache = paged(page = 64)> q_group = 4 split_kv page_size = 64 {
  ws.role @r load warps [0, 1) {
  }
}

// -----

// The sink seed: a sink copy is K of the sequence's block 0, once, before
// the kv_loop...
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> {
  ws.buffer @v smem [64, 64] bf16 stages 1
  ws.pipe @v_pipe depth 1 producer @l consumers [@c] buffers [@v] tx_bytes 8192
  ws.role @c compute warps [4, 8) {
  }
  ws.role @l load warps [0, 4) {
    ws.acquire @v_pipe
    // expected-error @below {{sink copies K of the sequence's block 0 once, before the kv_loop (no ahead, not on_demand)}}
    ws.tma_load v -> @v via @v_pipe {sink}
    ws.release @v_pipe
  }
}

// -----

// ... through a pipe of its own (no kv_loop acquires it) ...
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> {
  ws.buffer @k smem [64, 64] bf16 stages 2
  ws.pipe @k_pipe depth 2 producer @l consumers [@c] buffers [@k] tx_bytes 8192
  ws.role @c compute warps [4, 8) {
  }
  ws.role @l load warps [0, 4) {
    ws.acquire @k_pipe
    // expected-error @below {{sink needs a pipe of its own: @k_pipe is acquired in a kv_loop}}
    ws.tma_load k -> @k via @k_pipe {sink}
    ws.release @k_pipe
    ws.kv_loop {
      ws.acquire @k_pipe
      ws.tma_load k -> @k via @k_pipe
      ws.release @k_pipe
    }
  }
}

// -----

// ... and its row maxima seed the running max before the kv_loop.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> {
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.role @c compute warps [4, 8) {
    ws.kv_loop {
      // expected-error @below {{sink seeds the running max before the kv_loop (no ahead)}}
      ws.row_max @s {sink}
    }
  }
}

// -----

// kept_ahead (the K copy depth follows the decisions): below `ahead`...
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> {
  ws.buffer @k smem [64, 64] bf16 stages 4
  ws.buffer @v smem [64, 64] bf16 stages 2
  ws.buffer @p regs [64, 64] bf16 stages 1
  ws.buffer @o regs [64, 64] f32 stages 1
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.pipe @k_pipe depth 4 producer @l consumers [@c] buffers [@k] tx_bytes 8192
  ws.pipe @v_pipe depth 2 producer @l consumers [@c] buffers [@v] tx_bytes 8192
  ws.role @c compute warps [4, 8) {
    ws.kv_loop {
      ws.row_max @s {ahead = 1}
      ws.vote @s {publish}
      ws.acquire @v_pipe
      ws.mma pv @p, @v -> @o
      ws.release @v_pipe
    }
  }
  ws.role @l load warps [0, 4) {
    ws.kv_loop {
      ws.await_vote
      // expected-error @below {{kept_ahead must be in [1, ahead) = [1, 2), got 2}}
      ws.acquire @k_pipe {ahead = 2 : i64, kept_ahead = 2 : i64}
      ws.tma_load k -> @k via @k_pipe {ahead = 2 : i64, kept_ahead = 2 : i64}
      ws.release @k_pipe {ahead = 2 : i64, kept_ahead = 2 : i64}
    }
  }
}

// -----

// ...with ahead...
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> {
  ws.buffer @k smem [64, 64] bf16 stages 4
  ws.buffer @v smem [64, 64] bf16 stages 2
  ws.buffer @p regs [64, 64] bf16 stages 1
  ws.buffer @o regs [64, 64] f32 stages 1
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.pipe @k_pipe depth 4 producer @l consumers [@c] buffers [@k] tx_bytes 8192
  ws.pipe @v_pipe depth 2 producer @l consumers [@c] buffers [@v] tx_bytes 8192
  ws.role @c compute warps [4, 8) {
    ws.kv_loop {
      ws.row_max @s {ahead = 1}
      ws.vote @s {publish}
      ws.acquire @v_pipe
      ws.mma pv @p, @v -> @o
      ws.release @v_pipe
    }
  }
  ws.role @l load warps [0, 4) {
    ws.kv_loop {
      ws.await_vote
      // expected-error @below {{kept_ahead needs ahead (the copy's depth after a skipped block)}}
      ws.acquire @k_pipe {kept_ahead = 2 : i64}
    }
  }
}

// -----

// ...kept_run only with kept_ahead...
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> {
  ws.buffer @k smem [64, 64] bf16 stages 4
  ws.buffer @v smem [64, 64] bf16 stages 2
  ws.buffer @p regs [64, 64] bf16 stages 1
  ws.buffer @o regs [64, 64] f32 stages 1
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.pipe @k_pipe depth 4 producer @l consumers [@c] buffers [@k] tx_bytes 8192
  ws.pipe @v_pipe depth 2 producer @l consumers [@c] buffers [@v] tx_bytes 8192
  ws.role @c compute warps [4, 8) {
    ws.kv_loop {
      ws.row_max @s {ahead = 1}
      ws.vote @s {publish}
      ws.acquire @v_pipe
      ws.mma pv @p, @v -> @o
      ws.release @v_pipe
    }
  }
  ws.role @l load warps [0, 4) {
    ws.kv_loop {
      ws.await_vote
      // expected-error @below {{kept_run needs kept_ahead}}
      ws.acquire @k_pipe {ahead = 4 : i64, kept_run = 2 : i64}
    }
  }
}

// -----

// ...and in [1, 8]...
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> {
  ws.buffer @k smem [64, 64] bf16 stages 4
  ws.buffer @v smem [64, 64] bf16 stages 2
  ws.buffer @p regs [64, 64] bf16 stages 1
  ws.buffer @o regs [64, 64] f32 stages 1
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.pipe @k_pipe depth 4 producer @l consumers [@c] buffers [@k] tx_bytes 8192
  ws.pipe @v_pipe depth 2 producer @l consumers [@c] buffers [@v] tx_bytes 8192
  ws.role @c compute warps [4, 8) {
    ws.kv_loop {
      ws.row_max @s {ahead = 1}
      ws.vote @s {publish}
      ws.acquire @v_pipe
      ws.mma pv @p, @v -> @o
      ws.release @v_pipe
    }
  }
  ws.role @l load warps [0, 4) {
    ws.kv_loop {
      ws.await_vote
      // expected-error @below {{kept_run must be in [1, 8], got 9}}
      ws.release @k_pipe {ahead = 4 : i64, kept_ahead = 2 : i64, kept_run = 9 : i64}
    }
  }
}

// -----

// ...after the load role's ws.await_vote (the decisions it follows)...
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> {
  ws.buffer @k smem [64, 64] bf16 stages 4
  ws.buffer @v smem [64, 64] bf16 stages 2
  ws.buffer @p regs [64, 64] bf16 stages 1
  ws.buffer @o regs [64, 64] f32 stages 1
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.pipe @k_pipe depth 4 producer @l consumers [@c] buffers [@k] tx_bytes 8192
  ws.pipe @v_pipe depth 2 producer @l consumers [@c] buffers [@v] tx_bytes 8192
  ws.role @c compute warps [4, 8) {
    ws.kv_loop {
      ws.row_max @s {ahead = 1}
      ws.vote @s {publish}
      ws.acquire @v_pipe
      ws.mma pv @p, @v -> @o
      ws.release @v_pipe
    }
  }
  ws.role @l load warps [0, 4) {
    ws.kv_loop {
      // expected-error @below {{kept_ahead needs a preceding ws.await_vote in the same kv_loop}}
      ws.acquire @k_pipe {ahead = 4 : i64, kept_ahead = 2 : i64}
      ws.tma_load k -> @k via @k_pipe {ahead = 4 : i64, kept_ahead = 2 : i64}
      ws.release @k_pipe {ahead = 4 : i64, kept_ahead = 2 : i64}
      ws.await_vote
    }
  }
}

// -----

// ...the same on the acquire, the copy and the release...
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> {
  ws.buffer @k smem [64, 64] bf16 stages 4
  ws.buffer @v smem [64, 64] bf16 stages 2
  ws.buffer @p regs [64, 64] bf16 stages 1
  ws.buffer @o regs [64, 64] f32 stages 1
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.pipe @k_pipe depth 4 producer @l consumers [@c] buffers [@k] tx_bytes 8192
  ws.pipe @v_pipe depth 2 producer @l consumers [@c] buffers [@v] tx_bytes 8192
  ws.role @c compute warps [4, 8) {
    ws.kv_loop {
      ws.row_max @s {ahead = 1}
      ws.vote @s {publish}
      ws.acquire @v_pipe
      ws.mma pv @p, @v -> @o
      ws.release @v_pipe
    }
  }
  ws.role @l load warps [0, 4) {
    ws.kv_loop {
      ws.await_vote
      // expected-error @below {{kept_ahead / kept_run must be the same on the acquire, the copy and the release of @k_pipe {ahead = 4}}}
      ws.acquire @k_pipe {ahead = 4 : i64, kept_ahead = 2 : i64, kept_run = 4 : i64}
      ws.tma_load k -> @k via @k_pipe {ahead = 4 : i64, kept_ahead = 2 : i64}
      ws.release @k_pipe {ahead = 4 : i64, kept_ahead = 2 : i64, kept_run = 4 : i64}
    }
  }
}

// -----

// ...which follow one another...
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> {
  ws.buffer @k smem [64, 64] bf16 stages 4
  ws.buffer @v smem [64, 64] bf16 stages 2
  ws.buffer @p regs [64, 64] bf16 stages 1
  ws.buffer @o regs [64, 64] f32 stages 1
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.pipe @k_pipe depth 4 producer @l consumers [@c] buffers [@k] tx_bytes 8192
  ws.pipe @v_pipe depth 2 producer @l consumers [@c] buffers [@v] tx_bytes 8192
  ws.role @c compute warps [4, 8) {
    ws.kv_loop {
      ws.row_max @s {ahead = 1}
      ws.vote @s {publish}
      ws.acquire @v_pipe
      ws.mma pv @p, @v -> @o
      ws.release @v_pipe
    }
  }
  ws.role @l load warps [0, 4) {
    ws.kv_loop {
      ws.await_vote
      // expected-error @below {{kept_ahead: the acquire must be followed by its copy and its release}}
      ws.acquire @k_pipe {ahead = 4 : i64, kept_ahead = 2 : i64}
      ws.release @k_pipe {ahead = 4 : i64, kept_ahead = 2 : i64}
      ws.tma_load k -> @k via @k_pipe {ahead = 4 : i64, kept_ahead = 2 : i64}
    }
  }
}

// -----

// ...and not on_demand...
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> {
  ws.buffer @k smem [64, 64] bf16 stages 4
  ws.buffer @v smem [64, 64] bf16 stages 2
  ws.buffer @p regs [64, 64] bf16 stages 1
  ws.buffer @o regs [64, 64] f32 stages 1
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.pipe @k_pipe depth 4 producer @l consumers [@c] buffers [@k] tx_bytes 8192
  ws.pipe @v_pipe depth 2 producer @l consumers [@c] buffers [@v] tx_bytes 8192
  ws.role @c compute warps [4, 8) {
    ws.kv_loop {
      ws.row_max @s {ahead = 1}
      ws.vote @s {publish}
      ws.acquire @v_pipe
      ws.mma pv @p, @v -> @o
      ws.release @v_pipe
    }
  }
  ws.role @l load warps [0, 4) {
    ws.kv_loop {
      ws.await_vote
      ws.acquire @v_pipe {ahead = 2 : i64, kept_ahead = 1 : i64}
      // expected-error @below {{kept_ahead copies are neither on_demand nor sink}}
      ws.tma_load v -> @v via @v_pipe {ahead = 2 : i64, kept_ahead = 1 : i64, on_demand}
      ws.release @v_pipe {ahead = 2 : i64, kept_ahead = 1 : i64}
    }
  }
}

// -----

// ...and for a load role.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> {
  ws.buffer @k smem [64, 64] bf16 stages 4
  ws.pipe @k_pipe depth 4 producer @l consumers [@c] buffers [@k] tx_bytes 8192
  ws.role @l load warps [0, 4) {
  }
  ws.role @c compute warps [4, 8) {
    ws.kv_loop {
      // expected-error @below {{kept_ahead is for a load role's steps directly in its kv_loop}}
      ws.acquire @k_pipe {ahead = 2 : i64, kept_ahead = 1 : i64}
    }
  }
}

// -----

// The vote on block 0 before the kv_loop (vote-first-block) compares with
// the running max the sink seed defined ...
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> {
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.role @c compute warps [0, 4) {
    ws.row_max @s
    // expected-error @below {{votes on block 0 before the kv_loop, but no ws.row_max {sink} seeds the running max it compares with}}
    ws.vote @s
    ws.kv_loop {
      ws.row_max @s {ahead = 1}
      ws.vote @s
    }
  }
}

// -----

// ... after block 0's own row maxima, not the sink's ...
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> {
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.role @c compute warps [0, 4) {
    ws.row_max @s {sink}
    // expected-error @below {{votes on block 0 before block 0's row maxima (a ws.row_max after the sink's)}}
    ws.vote @s
    ws.row_max @s
    ws.kv_loop {
      ws.row_max @s {ahead = 1}
      ws.vote @s
    }
  }
}

// -----

// ... in a role whose kv_loop votes on the blocks after it ...
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> {
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.role @c compute warps [0, 4) {
    ws.row_max @s {sink}
    ws.row_max @s
    // expected-error @below {{votes on block 0 but the role's kv_loop votes on no block}}
    ws.vote @s
    ws.kv_loop {
      ws.row_max @s {ahead = 1}
    }
  }
}

// -----

// ... and like them (published when they are).
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> {
  ws.buffer @v smem [64, 64] bf16 stages 2
  ws.buffer @p regs [64, 64] bf16 stages 1
  ws.buffer @o regs [64, 64] f32 stages 1
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.pipe @v_pipe depth 2 producer @l consumers [@c] buffers [@v] tx_bytes 8192
  ws.role @l load warps [0, 4) {
    ws.kv_loop {
      ws.await_vote
      ws.acquire @v_pipe
      ws.tma_load v -> @v via @v_pipe {on_demand}
      ws.release @v_pipe
    }
  }
  ws.role @c compute warps [4, 8) {
    ws.row_max @s {sink}
    ws.row_max @s
    // expected-error @below {{votes on block 0 with publish / stats unlike the kv_loop's vote}}
    ws.vote @s
    ws.kv_loop {
      ws.acquire @v_pipe
      ws.mma pv @p, @v -> @o
      ws.release @v_pipe
      ws.row_max @s {ahead = 1}
      ws.vote @s {publish}
    }
  }
}

// -----

// unless_skipped before the kv_loop: block 0's steps, after the vote on
// block 0 ...
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> {
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.role @c compute warps [0, 4) {
    ws.row_max @s
    // expected-error @below {{outside a ws.kv_loop needs a preceding ws.vote on block 0 and the role's kv_loop after it}}
    ws.unless_skipped {
      ws.softmax_update @s
    }
    ws.kv_loop {
      ws.row_max @s {ahead = 1}
      ws.vote @s
    }
  }
}

// -----

// ... under that vote's decision (no ahead, no fuse_next).
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> {
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.role @c compute warps [0, 4) {
    ws.row_max @s {sink}
    ws.row_max @s
    ws.vote @s
    // expected-error @below {{before the kv_loop takes neither ahead nor fuse_next}}
    ws.unless_skipped attributes {ahead = -1 : i64} {
      ws.softmax_update @s
    }
    ws.kv_loop {
      ws.row_max @s {ahead = 1}
      ws.vote @s
    }
  }
}

// -----

// V on demand: the load role reads block 0's votes from every voter or
// from none.
ws.kernel @k target = sm_90a, block_m = 128, block_n = 64, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> {
  ws.buffer @v smem [64, 64] bf16 stages 2
  ws.buffer @p regs [64, 64] bf16 stages 1
  ws.buffer @o regs [64, 64] f32 stages 1
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.pipe @v_pipe depth 2 producer @l consumers [@c0, @c1] buffers [@v] tx_bytes 8192
  ws.role @l load warps [0, 4) {
    ws.kv_loop {
      // expected-error @below {{role 'c1' does not vote on block 0 unlike the voters before it}}
      ws.await_vote
      ws.acquire @v_pipe
      ws.tma_load v -> @v via @v_pipe {on_demand}
      ws.release @v_pipe
    }
  }
  ws.role @c0 compute warps [4, 8) rows [0, 64) {
    ws.row_max @s {sink}
    ws.row_max @s
    ws.vote @s {publish}
    ws.kv_loop {
      ws.acquire @v_pipe
      ws.mma pv @p, @v -> @o
      ws.release @v_pipe
      ws.row_max @s {ahead = 1}
      ws.vote @s {publish}
    }
  }
  ws.role @c1 compute warps [8, 12) rows [64, 128) {
    ws.kv_loop {
      ws.acquire @v_pipe
      ws.mma pv @p, @v -> @o
      ws.release @v_pipe
      ws.row_max @s {ahead = 1}
      ws.vote @s {publish}
    }
  }
}

// -----

// Steps: drain is the producer's wait.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @qb smem [64, 64] bf16 stages 1
  ws.pipe @p depth 1 producer @a consumers [@b] buffers [@qb] tx_bytes 8192
  ws.role @a load warps [0, 4) {
  }
  ws.role @b compute warps [4, 8) {
    ws.acquire @p
    ws.release @p
    // expected-error @below {{drain is a wait of the pipe's producer (the consumers' release of its last copy); @p is not produced by this role}}
    ws.acquire @p {drain}
  }
}

// -----

// Steps: drain runs once per tile, not in a kv_loop.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @qb smem [64, 64] bf16 stages 1
  ws.pipe @p depth 1 producer @a consumers [@b] buffers [@qb] tx_bytes 8192
  ws.role @a load warps [0, 4) {
    ws.kv_loop {
      ws.acquire @p
      ws.release @p
      // expected-error @below {{drain runs once, directly in the role (not in a kv_loop, no ahead)}}
      ws.acquire @p {drain}
    }
  }
  ws.role @b compute warps [4, 8) {
  }
}

// -----

// Steps: drain waits on a pipe filled once per tile.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @kb smem [64, 64] bf16 stages 2
  ws.pipe @p depth 2 producer @a consumers [@b] buffers [@kb] tx_bytes 8192
  ws.role @a load warps [0, 4) {
    ws.kv_loop {
      ws.acquire @p
      ws.release @p
    }
    // expected-error @below {{drain is for a pipe filled once per tile: @p is acquired in a kv_loop}}
    ws.acquire @p {drain}
  }
  ws.role @b compute warps [4, 8) {
  }
}

// -----

// Steps: drain follows the producer's release of the pipe.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @qb smem [64, 64] bf16 stages 1
  ws.pipe @p depth 1 producer @a consumers [@b] buffers [@qb] tx_bytes 8192
  ws.role @a load warps [0, 4) {
    // expected-error @below {{drain must follow the role's release of @p and be its last step there}}
    ws.acquire @p {drain}
  }
  ws.role @b compute warps [4, 8) {
  }
}

// -----

// Steps: drain is the producer's last step on the pipe.
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @qb smem [64, 64] bf16 stages 1
  ws.pipe @p depth 1 producer @a consumers [@b] buffers [@qb] tx_bytes 8192
  ws.role @a load warps [0, 4) {
    ws.acquire @p
    ws.release @p
    // expected-error @below {{drain must follow the role's release of @p and be its last step there}}
    ws.acquire @p {drain}
    ws.release @p
  }
  ws.role @b compute warps [4, 8) {
  }
}

// -----

// Buffer: an alias offset is bounded (a huge one wrapped the fit check).
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @q smem [64, 64] bf16 stages 1
  // expected-error @below {{at must be [row, column], both in [0, 65536]}}
  ws.buffer @p smem [32, 64] bf16 stages 1 aliases @q at [0, 9223372036854775807]
  ws.role @r load warps [0, 1) {
  }
}

// -----

// Kernel: each K/V copy fills one KV block of block_n keys (the lowering
// steps the kv_loop by block_n, the runtime's boxes take block_n rows).
ws.kernel @k target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @kb smem [128, 64] bf16 stages 1
  ws.pipe @p depth 1 producer @a consumers [@b] buffers [@kb] tx_bytes 16384
  ws.role @a load warps [0, 1) {
    // expected-error @below {{copies a k tile of 128 rows into @kb, but the kernel's block_n is 64 (each KV block is one tile of block_n keys)}}
    ws.tma_load k -> @kb via @p
  }
  ws.role @b load warps [1, 2) {
  }
}

// -----

// Kernel: the Q copies fill the tile's block_m query rows.
// expected-error @below {{the Q copies fill 64 query rows, the kernel's tile has 128 (block_m)}}
ws.kernel @k target = sm_90a, block_m = 128, block_n = 64, spec = <head_dim = 64> {
  ws.buffer @qb smem [64, 64] bf16 stages 1
  ws.pipe @p depth 1 producer @a consumers [@b] buffers [@qb] tx_bytes 8192
  ws.role @a load warps [0, 1) {
    ws.tma_load q -> @qb via @p
  }
  ws.role @b load warps [1, 2) {
  }
}
