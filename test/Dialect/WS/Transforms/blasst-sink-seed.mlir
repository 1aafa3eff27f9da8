// The sink seed of BLASST decode (blasst-insert-vote's sink-seed, default
// for split-KV decode): each split's running max starts from the row maxima
// of the sequence's KV block 0, copied once through a depth-1 pipe of its
// own; the sync checker proves it, and the mutations are rejected.
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-insert-vote --blasst-v-on-demand --blasst-verify-sync | FileCheck %s
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a" "--blasst-insert-vote=sink-seed=false" | FileCheck %s --check-prefix=NOSINK
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-insert-vote --blasst-insert-vote | FileCheck %s --check-prefix=TWICE
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a" "--blasst-insert-vote=sink-seed=maybe" 2>&1 | FileCheck %s --check-prefix=BADSINK
// RUN: not blasst-opt %s -split-input-file --convert-attn-to-ws="target=sm_90a" "--blasst-insert-vote=sink-seed=true" 2>&1 | FileCheck %s --check-prefix=NOTDECODE
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-insert-vote --blasst-v-on-demand --blasst-verify-sync --convert-ws-to-nvvm | FileCheck %s --check-prefix=LLVM
//
// The consumer multiplies the sink without waiting for its copy: read
// before write.
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-insert-vote --blasst-v-on-demand | sed '/ws.role @consumer0/,$ {/ws.acquire @sink_pipe/d}' | not blasst-opt --blasst-verify-sync 2>&1 | FileCheck %s --check-prefix=NOWAIT
// NOWAIT: error: 'ws.mma' op fails sync verification: read before write: @consumer0 reads @sink (stage 0) expecting K of block 0 but finds nothing (never written)
//
// The load role arms the pipe but never copies: the consumer waits forever.
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-insert-vote --blasst-v-on-demand | sed '/ws.tma_load k -> @sink/d' | not blasst-opt --blasst-verify-sync 2>&1 | FileCheck %s --check-prefix=NOCOPY
// NOCOPY: error: 'ws.kernel' op fails sync verification: deadlock: no role can step and @consumer0 waits forever
// NOCOPY: blocked at ws.acquire @sink_pipe

// CHECK-LABEL: ws.kernel @gqa_kernel
// CHECK-SAME: sink_seed = true
// CHECK: ws.buffer @sink smem [64, 128] bf16 stages 1
// CHECK: ws.pipe @sink_pipe depth 1 producer @producer consumers [@consumer0] buffers [@sink] tx_bytes 16384
// CHECK: ws.role @producer
// CHECK: ws.release @q_pipe
// CHECK-NEXT: ws.acquire @sink_pipe
// CHECK-NEXT: ws.tma_load k -> @sink via @sink_pipe {sink}
// CHECK-NEXT: ws.release @sink_pipe
// CHECK-NEXT: ws.acquire @k_pipe{{$}}
// CHECK: ws.role @consumer0
// CHECK-NEXT: ws.acquire @q_pipe
// CHECK-NEXT: ws.acquire @sink_pipe
// CHECK-NEXT: ws.mma qk @q, @sink -> @s{{$}}
// CHECK-NEXT: ws.release @sink_pipe
// CHECK-NEXT: ws.row_max @s {sink}
// CHECK-NEXT: ws.acquire @k_pipe{{$}}
// CHECK-NEXT: ws.mma qk @q, @k -> @s{{$}}

// NOSINK-LABEL: ws.kernel @gqa_kernel
// NOSINK-SAME: sink_seed = false
// NOSINK-NOT: sink

// Run twice, the pass seeds once: one sink buffer, pipe, copy and seed.
// TWICE: ws.buffer @sink smem
// TWICE-NOT: ws.buffer @sink
// TWICE: ws.pipe @sink_pipe
// TWICE-NOT: ws.pipe @sink_pipe
// TWICE: ws.tma_load k -> @sink via @sink_pipe {sink}
// TWICE-NOT: ws.tma_load k -> @sink
// TWICE: ws.row_max @s {sink}
// TWICE-NOT: {sink}

// BADSINK: error: blasst-insert-vote: sink-seed must be true, false or auto, got 'maybe'

// LLVM: llvm.func @gqa_kernel
// LLVM-SAME: blasst.sink_seed

func.func @gqa(%q: memref<?x?x32x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x32x128xbf16>, %s: memref<?x32x2xi64>) {
  attn.attention %q, %k, %v -> %o stats(%s : memref<?x32x2xi64>) spec(<head_dim = 128, q_heads = 32, kv_heads = 8, causal = true, phase = decode, sparsity = blasst(ln_lambda = -8.0), stats = true>) : memref<?x?x32x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x32x128xbf16>
  return
}

// -----

// NOTDECODE: error: 'ws.kernel' op blasst-insert-vote: sink-seed applies to split-KV decode kernels (split_kv): other kernels walk the sequence from block 0
func.func @prefill(%q: memref<?x?x8x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x8x128xbf16>) {
  attn.attention %q, %k, %v -> %o spec(<head_dim = 128, q_heads = 8, kv_heads = 8, sparsity = blasst(ln_lambda = -8.0)>) : memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>
  return
}
