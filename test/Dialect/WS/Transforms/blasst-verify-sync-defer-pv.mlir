// The deferred P V of BLASST decode (blasst-v-on-demand's defer-pv: block
// n - 1's P V in iteration n, under the decision on n - 1) is proven by the
// sync checker; the mutations are rejected with their reason.
// RUN: blasst-opt %s --blasst-verify-sync | FileCheck %s --check-prefix=OK
// OK: ws.mma pv @p, @v -> @o {ahead = -1 : i64, async}
//
// P V of block n - 1 under the latest decision (on block n) instead of its
// own: a kept block after a skipped one reads a V nobody copied.
// RUN: sed 's/ws.unless_skipped attributes {ahead = -1 : i64} {/ws.unless_skipped {/' %s | not blasst-opt --blasst-verify-sync 2>&1 | FileCheck %s --check-prefix=DECISION
// DECISION: error: 'ws.mma' op fails sync verification: read before write: @consumer0 reads @v (stage {{[0-9]+}}) expecting V of block {{[0-9]+}} but finds nothing (never written)
//
// V released on block n while P V reads block n - 1: the release comes a
// block early (before its own acquire).
// RUN: sed 's/ws.release @v_pipe {ahead = -1 : i64}/ws.release @v_pipe/' %s | not blasst-opt --blasst-verify-sync 2>&1 | FileCheck %s --check-prefix=EARLY
// EARLY: error: 'ws.acquire' op fails sync verification: parity aliasing
//
// It lowers; the deferred P V outside its skip region is refused with the
// reason (the lowering needs the decision on block n - 1 carried).
// RUN: blasst-opt %s --convert-ws-to-nvvm | FileCheck %s --check-prefix=LOWER
// LOWER: llvm.func @gqa_kernel
// RUN: sed '/unless_skipped attributes {ahead = -1 : i64} {/{N;N;s/ *ws.unless_skipped attributes {ahead = -1 : i64} {\n\(.*\)\n *}/\1/}' %s | not blasst-opt --convert-ws-to-nvvm 2>&1 | FileCheck %s --check-prefix=UNWRAPPED
// UNWRAPPED: error: 'ws.kv_loop' op defers P V (ws.mma pv {ahead = -1}) but carries no skip decision or no P in registers
module {
  func.func @gqa(%arg0: memref<?x?x32x128xbf16>, %arg1: memref<?x?x8x128xbf16>, %arg2: memref<?x?x8x128xbf16>, %arg3: memref<?x?x32x128xbf16>, %arg4: memref<?x32x2xi64>) {
    ws.launch @gqa_kernel(%arg0, %arg1, %arg2, %arg3, %arg4) : memref<?x?x32x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x32x128xbf16>, memref<?x32x2xi64>
    return
  }
  ws.kernel @gqa_kernel target = sm_90a, block_m = 64, block_n = 64, spec = <dtype = bf16, head_dim = 128, head_dim_v = 128, q_heads = 32, kv_heads = 8, causal = true, phase = decode, softmax_scale = default, sparsity = blasst(ln_lambda = -8.000000e+00), lse = false, stats = true> q_group = 4 split_kv schedule {block_m = 64 : i64, block_n = 64 : i64, consumer_regs = 240 : i64, defer_pv = true, kv_multicast = false, overlap = true, p_in_registers = true, persistent = false, pingpong = false, producer_regs = 24 : i64, q_in_registers = false, stages = 4 : i64, v_on_demand = true, v_speculate_after = 0 : i64} {
    ws.buffer @q smem [64, 128] bf16 stages 1
    ws.buffer @k smem [64, 128] bf16 stages 4
    ws.buffer @v smem [64, 128] bf16 stages 4
    ws.buffer @s regs [64, 64] f32 stages 1
    ws.buffer @p regs [64, 64] bf16 stages 1
    ws.buffer @o regs [64, 128] f32 stages 1
    ws.pipe @q_pipe depth 1 producer @producer consumers [@consumer0] buffers [@q] tx_bytes 16384
    ws.pipe @k_pipe depth 4 producer @producer consumers [@consumer0] buffers [@k] tx_bytes 16384
    ws.pipe @v_pipe depth 4 producer @producer consumers [@consumer0] buffers [@v] tx_bytes 16384
    ws.role @producer load warps [0, 4) regs 24 {
      ws.acquire @q_pipe
      ws.tma_load q -> @q via @q_pipe
      ws.release @q_pipe
      ws.acquire @k_pipe
      ws.tma_load k -> @k via @k_pipe
      ws.release @k_pipe
      ws.acquire @k_pipe {ahead = 1 : i64}
      ws.tma_load k -> @k via @k_pipe {ahead = 1 : i64}
      ws.release @k_pipe {ahead = 1 : i64}
      ws.acquire @k_pipe {ahead = 2 : i64}
      ws.tma_load k -> @k via @k_pipe {ahead = 2 : i64}
      ws.release @k_pipe {ahead = 2 : i64}
      ws.acquire @k_pipe {ahead = 3 : i64}
      ws.tma_load k -> @k via @k_pipe {ahead = 3 : i64}
      ws.release @k_pipe {ahead = 3 : i64}
      ws.kv_loop {
        ws.await_vote {stats}
        ws.acquire @v_pipe
        ws.tma_load v -> @v via @v_pipe {on_demand}
        ws.release @v_pipe
        ws.acquire @k_pipe {ahead = 4 : i64}
        ws.tma_load k -> @k via @k_pipe {ahead = 4 : i64}
        ws.release @k_pipe {ahead = 4 : i64}
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
        ws.acquire @v_pipe {ahead = -1 : i64}
        ws.unless_skipped attributes {ahead = -1 : i64} {
          ws.mma pv @p, @v -> @o {ahead = -1 : i64, async}
        }
        ws.mma_wait {pending = 1 : i64}
        ws.release @k_pipe {ahead = 1 : i64}
        ws.row_max @s {ahead = 1 : i64}
        ws.vote @s {publish}
        ws.unless_skipped attributes {fuse_next} {
          ws.softmax_update @s
          ws.exp2 @s {guarded}
        }
        ws.mma_wait
        ws.release @v_pipe {ahead = -1 : i64}
        ws.unless_skipped attributes {ahead = 0 : i64} {
          ws.correct @o {ahead = 0 : i64}
        }
        ws.unless_skipped {
          ws.pack_p @s -> @p
        }
      }
      ws.release @q_pipe
      ws.epilogue @o
    }
  }
}

