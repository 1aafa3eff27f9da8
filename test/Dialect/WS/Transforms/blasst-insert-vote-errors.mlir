// RUN: blasst-opt %s -split-input-file --convert-attn-to-ws=target=sm_100a --blasst-insert-vote -verify-diagnostics
// BLASST schedules the pass cannot build yet are refused with the reason.

func.func @b200(%q: memref<?x?x8x64xbf16>, %k: memref<?x?x8x64xbf16>, %v: memref<?x?x8x64xbf16>, %o: memref<?x?x8x64xbf16>) {
  // expected-error @below {{BLASST on sm_100a needs the vote to reach the MMA warp, which is not implemented yet; sm_90a only}}
  attn.attention %q, %k, %v -> %o spec(<head_dim = 64, q_heads = 8, kv_heads = 8, sparsity = blasst(ln_lambda = -8.0)>) : memref<?x?x8x64xbf16>, memref<?x?x8x64xbf16>, memref<?x?x8x64xbf16>, memref<?x?x8x64xbf16>
  return
}
