// RUN: blasst-opt %s -split-input-file --convert-attn-to-ws=target=sm_90a -verify-diagnostics
// Decode specs and knobs the decode schedule refuses, each with its reason.

func.func @ratio128(%q: memref<?x?x128x64xbf16>, %k: memref<?x?x1x64xbf16>, %v: memref<?x?x1x64xbf16>, %o: memref<?x?x128x64xbf16>) {
  // expected-error @below {{q_heads / kv_heads = 128 is not supported with phase = decode: the q heads of a kv head are packed into one 64-row tile, so at most 64 of them}}
  attn.attention %q, %k, %v -> %o spec(<head_dim = 64, head_dim_v = 64, q_heads = 128, kv_heads = 1, phase = decode>) : memref<?x?x128x64xbf16>, memref<?x?x1x64xbf16>, memref<?x?x1x64xbf16>, memref<?x?x128x64xbf16>
  return
}
