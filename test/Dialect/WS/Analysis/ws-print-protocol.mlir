// RUN: blasst-opt %s -split-input-file --ws-print-protocol -o /dev/null 2>&1 | FileCheck %s
// The protocol analysis: each pipe's arrival counts, each step's KV block
// (first, n+k, last, once), the barriers it waits on and arrives at, the
// buffer regions it reads and writes, and what each kv_loop carries.

// The overlap schedule with BLASST and V on demand, one compute warpgroup.
// CHECK-LABEL: protocol of @overlap_blasst
// The load role's one elected thread completes a full phase; the
// warpgroup's 128 threads an empty one.
// CHECK: pipe @q_pipe depth 1 once full-arrivals 1 empty-arrivals 128
// CHECK: pipe @k_pipe depth 2 per-block full-arrivals 1 empty-arrivals 128
// CHECK: role @producer
// CHECK: acquire block once wait @q_pipe.empty
// CHECK: release block once arrive @q_pipe.full x1 tx 8192
// Block 0's K before the loop, the loop's K one block ahead.
// CHECK: tma_load block first writes @k[0:128, 0:64]
// CHECK: acquire block n+1 wait @k_pipe.empty
// CHECK: release block n+1 arrive @k_pipe.full x1 tx 16384
// CHECK: await_vote block n wait vote
// CHECK: tma_load block n writes @v[0:128, 0:64]
// CHECK: kv_loop carries counters
// CHECK: role @consumer
// The role's rows of the CTA-wide Q tile.
// CHECK: mma block first reads @q[0:64, 0:64] reads @k[0:128, 0:64] writes @s[0:64, 0:128]
// CHECK: release block first arrive @k_pipe.empty x128
// CHECK: mma block n+1 reads @q[0:64, 0:64] reads @k[0:128, 0:64] writes @s[0:64, 0:128]
// P V of block n accumulates into O.
// CHECK: mma block n reads @p[0:64, 0:128] reads @v[0:128, 0:64] reads @o[0:64, 0:64] writes @o[0:64, 0:64]
// The softmax after row_max {ahead = 1} works on block n + 1.
// CHECK: row_max block n+1 reads @s
// The warpgroup's AND reduction on its named barrier, then one thread's
// arrival on the vote barrier.
// CHECK: vote block n+1 sync bar1/128 x128 arrive vote x1 reads @s
// CHECK: exp2 block n+1 reads @s[0:64, 0:128] writes @s[0:64, 0:128]
// CHECK: release block n arrive @v_pipe.empty x128
// CHECK: pack_p block n+1 reads @s[0:64, 0:128] writes @p[0:64, 0:128]
// CHECK: epilogue block last reads @o
// The decision on block n + 1 crosses the back-edge to P V.
// CHECK: kv_loop carries o m l skip
ws.kernel @overlap_blasst target = sm_90a, block_m = 64, block_n = 128, spec = <dtype = bf16, head_dim = 64, q_heads = 4, kv_heads = 4, causal = true, sparsity = blasst(a = 64.0), stats = true> reverse_tiles {
  ws.buffer @q smem [64, 64] bf16 stages 1
  ws.buffer @k smem [128, 64] bf16 stages 2
  ws.buffer @v smem [128, 64] bf16 stages 2
  ws.buffer @s regs [64, 128] f32 stages 1
  ws.buffer @p regs [64, 128] bf16 stages 1
  ws.buffer @o regs [64, 64] f32 stages 1
  ws.pipe @q_pipe depth 1 producer @producer consumers [@consumer] buffers [@q] tx_bytes 8192
  ws.pipe @k_pipe depth 2 producer @producer consumers [@consumer] buffers [@k] tx_bytes 16384
  ws.pipe @v_pipe depth 2 producer @producer consumers [@consumer] buffers [@v] tx_bytes 16384
  ws.role @producer load warps [0, 4) regs 24 {
    ws.acquire @q_pipe
    ws.tma_load q -> @q via @q_pipe
    ws.release @q_pipe
    ws.acquire @k_pipe
    ws.tma_load k -> @k via @k_pipe
    ws.release @k_pipe
    ws.kv_loop {
      ws.acquire @k_pipe {ahead = 1 : i64}
      ws.tma_load k -> @k via @k_pipe {ahead = 1 : i64}
      ws.release @k_pipe {ahead = 1 : i64}
      ws.await_vote {stats}
      ws.acquire @v_pipe
      ws.tma_load v -> @v via @v_pipe {on_demand}
      ws.release @v_pipe
    }
  }
  ws.role @consumer compute warps [4, 8) regs 240 rows [0, 64) {
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
      ws.unless_skipped {
        ws.mma pv @p, @v -> @o {async}
      }
      ws.mma_wait {pending = 1 : i64}
      ws.release @k_pipe {ahead = 1 : i64}
      ws.row_max @s {ahead = 1 : i64}
      ws.vote @s {publish}
      ws.unless_skipped attributes {fuse_next} {
        ws.softmax_update @s
        ws.exp2 @s
      }
      ws.mma_wait
      ws.release @v_pipe
      ws.unless_skipped {
        ws.correct @o
        ws.pack_p @s -> @p
      }
    }
    ws.release @q_pipe
    ws.epilogue @o
  }
}

// -----

// K/V multicast: the partner CTA's consumer warps also release K/V stages
// (4 remote arrivals, one per warp).
// CHECK-LABEL: protocol of @multicast
// CHECK: pipe @q_pipe depth 1 once full-arrivals 1 empty-arrivals 128{{$}}
// CHECK: pipe @k_pipe depth 2 per-block full-arrivals 1 empty-arrivals 132 multicast
ws.kernel @multicast target = sm_90a, block_m = 64, block_n = 128, spec = <dtype = bf16, head_dim = 64, q_heads = 4, kv_heads = 4, lse = true> kv_multicast {
  ws.buffer @q smem [64, 64] bf16 stages 1
  ws.buffer @k smem [128, 64] bf16 stages 2
  ws.buffer @v smem [128, 64] bf16 stages 2
  ws.buffer @s regs [64, 128] f32 stages 1
  ws.buffer @p smem [64, 128] bf16 stages 1
  ws.buffer @o regs [64, 64] f32 stages 1
  ws.pipe @q_pipe depth 1 producer @producer consumers [@consumer] buffers [@q] tx_bytes 8192
  ws.pipe @k_pipe depth 2 producer @producer consumers [@consumer] buffers [@k] tx_bytes 16384
  ws.pipe @v_pipe depth 2 producer @producer consumers [@consumer] buffers [@v] tx_bytes 16384
  ws.role @producer load warps [0, 4) regs 40 {
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
  ws.role @consumer compute warps [4, 8) regs 232 rows [0, 64) {
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
    ws.epilogue @o {lse}
  }
}

// Regions of aliases: on sm_100a P overwrites its own S (a bf16 P of 128
// columns is 64 f32 columns of S); placed with `at` into the sibling tile's S
// (cross-stage P), P of tile 0 is columns [64, 128) of S of tile 1.
// RUN: blasst-compile --preset llama3-8b-prefill --target sm_100a --cross-stage-p=false --emit ws -o %t.b200.mlir 2>/dev/null
// RUN: blasst-opt %t.b200.mlir --ws-print-protocol -o /dev/null 2>&1 | FileCheck %s --check-prefix=OWN
// OWN: exp2_store_p block n reads @s0[0:128, 0:128] writes @s0[0:128, 0:64]
// RUN: sed -e 's/@p0 tmem \[128, 128\] bf16 stages 1 aliases @s0/@p0 tmem [128, 128] bf16 stages 1 aliases @s1 at [0, 64]/' %t.b200.mlir > %t.cross.mlir
// RUN: blasst-opt %t.cross.mlir --ws-print-protocol -o /dev/null 2>&1 | FileCheck %s --check-prefix=CROSS
// CROSS: exp2_store_p block n reads @s0[0:128, 0:128] writes @s1[0:128, 64:128]
// What blasst-compile builds with --cross-stage-p: P of each tile over the
// other half of the sibling's S.
// RUN: blasst-compile --preset llama3-8b-prefill --target sm_100a --cross-stage-p --emit ws -o - 2>/dev/null | blasst-opt --ws-print-protocol -o /dev/null 2>&1 | FileCheck %s --check-prefix=DEFAULT
// DEFAULT: exp2_store_p block n reads @s0[0:128, 0:128] writes @s1[0:128, 64:128]
// DEFAULT: exp2_store_p block n reads @s1[0:128, 0:128] writes @s0[0:128, 64:128]

// -----

// Dense decode with cp.async K/V: every thread of the load role copies
// (cp-async-threads), and after its kv_loop the role waits for the
// consumer's release of Q (the drain: this round's phase of the empty
// barrier, not the previous one's).
// CHECK-LABEL: protocol of @decode_cp_async
// CHECK: pipe @k_pipe depth 3 per-block full-arrivals 1 empty-arrivals 128 cp-async-threads 128
// CHECK: role @producer
// CHECK: acquire block once wait @q_pipe.empty
// CHECK-NOT: drain
// CHECK: release block once arrive @q_pipe.full x1 tx 16384
// CHECK: release block n arrive @v_pipe.full
// CHECK-NEXT: acquire block once wait @q_pipe.empty drain (this round's release)
// CHECK-NEXT: kv_loop carries nothing
// CHECK-NEXT: role @consumer0
ws.kernel @decode_cp_async target = sm_90a, block_m = 64, block_n = 64, spec = <dtype = bf16, head_dim = 128, head_dim_v = 128, q_heads = 32, kv_heads = 8, causal = true, phase = decode, softmax_scale = default, sparsity = none, lse = true, stats = false, kv_lengths = per_sequence> q_group = 4 split_kv merge_kernel per_seq_kv schedule {block_m = 64 : i64, block_n = 64 : i64, consumer_regs = 240 : i64, kv_cp_async = true, kv_multicast = false, lean_entry = true, merge_kernel = true, overlap = true, p_in_registers = true, persistent = false, pingpong = false, producer_regs = 80 : i64, q_in_registers = false, split_interleave = false, stages = 3 : i64, v_on_demand = false} {
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
    ws.kv_loop {
      ws.acquire @k_pipe
      ws.tma_load k -> @k via @k_pipe
      ws.release @k_pipe
      ws.acquire @v_pipe
      ws.tma_load v -> @v via @v_pipe
      ws.release @v_pipe
    }
    ws.acquire @q_pipe {drain}
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
