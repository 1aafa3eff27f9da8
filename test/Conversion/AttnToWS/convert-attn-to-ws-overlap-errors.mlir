// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a overlap=true block-n=96" -verify-diagnostics
// The overlap schedule holds S, O and P in the consumers' registers at once:
// above head_dim 128 only with blocks of at most 80 keys (the default there).
func.func @hd256(%q: memref<?x?x8x256xbf16>, %k: memref<?x?x8x256xbf16>, %v: memref<?x?x8x256xbf16>, %o: memref<?x?x8x256xbf16>) {
  // expected-error @below {{overlap=true is not available here: S, O and P in flight together do not fit the consumers' 240 registers at head_dim > 128 with block_n > 80}}
  attn.attention %q, %k, %v -> %o spec(<head_dim = 256, q_heads = 8, kv_heads = 8>) : memref<?x?x8x256xbf16>, memref<?x?x8x256xbf16>, memref<?x?x8x256xbf16>, memref<?x?x8x256xbf16>
  return
}
