// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a block-n=48" 2>&1 | FileCheck %s
// A paged cache needs KV blocks that are part of one page or whole pages.

// CHECK: error: 'attn.attention' op decode schedule: block-n=48 with a paged kv_cache of page 64: one must divide the other (a KV block is part of one page or whole pages)
func.func @paged(%q: memref<?x?x32x128xbf16>, %k: memref<?x64x8x128xbf16>, %v: memref<?x64x8x128xbf16>, %o: memref<?x?x32x128xbf16>) {
  attn.attention %q, %k, %v -> %o spec(<head_dim = 128, q_heads = 32, kv_heads = 8, phase = decode, kv_cache = paged(page = 64)>) : memref<?x?x32x128xbf16>, memref<?x64x8x128xbf16>, memref<?x64x8x128xbf16>, memref<?x?x32x128xbf16>
  return
}
