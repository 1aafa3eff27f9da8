// RUN: blasst-opt %s -split-input-file --convert-attn-to-ws=target=sm_90a -verify-diagnostics
// Specs and knobs the sm_90a schedule refuses, each with its reason.

func.func @hd96(%q: memref<?x?x8x96xbf16>, %k: memref<?x?x8x96xbf16>, %v: memref<?x?x8x96xbf16>, %o: memref<?x?x8x96xbf16>) {
  // expected-error @below {{cannot be compiled for sm_90a: head_dim 96 is not supported}}
  attn.attention %q, %k, %v -> %o spec(<head_dim = 96, q_heads = 8, kv_heads = 8>) : memref<?x?x8x96xbf16>, memref<?x?x8x96xbf16>, memref<?x?x8x96xbf16>, memref<?x?x8x96xbf16>
  return
}

// -----

func.func @dv(%q: memref<?x?x8x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x64xbf16>, %o: memref<?x?x8x64xbf16>) {
  // expected-error @below {{cannot be compiled for sm_90a: head_dim 128 != head_dim_v 64}}
  attn.attention %q, %k, %v -> %o spec(<head_dim = 128, head_dim_v = 64, q_heads = 8, kv_heads = 8>) : memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x64xbf16>, memref<?x?x8x64xbf16>
  return
}
