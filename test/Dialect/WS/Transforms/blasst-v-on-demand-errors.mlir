// RUN: blasst-opt %s -split-input-file --convert-attn-to-ws --blasst-insert-vote --blasst-v-on-demand -verify-diagnostics
// RUN: blasst-opt %s -split-input-file --convert-attn-to-ws=overlap=false --blasst-insert-vote --blasst-v-on-demand=mode=auto | FileCheck %s --check-prefix=AUTO
// RUN: not blasst-opt %s -split-input-file --convert-attn-to-ws --blasst-insert-vote "--blasst-v-on-demand=speculate-after=-2" 2>&1 | FileCheck %s --check-prefix=NEG
// NEG: error: blasst-v-on-demand: speculate-after must be 0 (always wait for the votes) to 2147483647, or -1 (the kernel's default), got -2
// The lowering counts kept blocks in 32 bits: 2^32 + 1 would be 1 there.
// RUN: not blasst-opt %s -split-input-file --convert-attn-to-ws --blasst-insert-vote "--blasst-v-on-demand=speculate-after=4294967297" 2>&1 | FileCheck %s --check-prefix=NEGBIG
// NEGBIG: error: blasst-v-on-demand: speculate-after must be 0 (always wait for the votes) to 2147483647, or -1 (the kernel's default), got 4294967297
// RUN: not blasst-opt %s -split-input-file --convert-attn-to-ws --blasst-insert-vote "--blasst-v-on-demand=k-ahead=-1" 2>&1 | FileCheck %s --check-prefix=NEGK
// NEGK: error: blasst-v-on-demand: k-ahead must be 0 (the default for the kernel) or more, got -1
// Asked for explicitly (mode=true), V on demand is refused with the reason
// where it cannot be done; mode=auto leaves those kernels as they are.

// AUTO-NOT: ws.await_vote
// AUTO-NOT: {on_demand}
func.func @dense(%q: memref<?x?x8x64xbf16>, %k: memref<?x?x8x64xbf16>, %v: memref<?x?x8x64xbf16>, %o: memref<?x?x8x64xbf16>) {
  // expected-error @below {{blasst-v-on-demand needs a BLASST sparsity policy: without votes nothing tells which V tiles are needed}}
  attn.attention %q, %k, %v -> %o spec(<head_dim = 64, q_heads = 8, kv_heads = 8>) : memref<?x?x8x64xbf16>, memref<?x?x8x64xbf16>, memref<?x?x8x64xbf16>, memref<?x?x8x64xbf16>
  return
}

// -----

// expected-error @below {{blasst-v-on-demand is not available with persistent CTAs or kv_multicast}}
ws.kernel @persistent target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> persistent {
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.role @c compute warps [0, 4) {
    ws.kv_loop {
      ws.row_max @s {ahead = 1}
      ws.vote @s
    }
  }
}

// -----

// The plain schedule votes on a block right before its P V: no time to
// copy V after the vote.
// expected-error @below {{blasst-v-on-demand needs the overlap schedule (votes on block n + 1, one block before its P V): with a vote on the block itself the V copy's latency would stall every kept block}}
ws.kernel @plain target = sm_90a, block_m = 64, block_n = 64, spec = <head_dim = 64, sparsity = blasst(ln_lambda = -8.0)> {
  ws.buffer @s regs [64, 64] f32 stages 1
  ws.role @c compute warps [0, 4) {
    ws.kv_loop {
      ws.row_max @s
      ws.vote @s
    }
  }
}
