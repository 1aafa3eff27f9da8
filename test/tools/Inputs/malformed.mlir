// Not valid: the attention op is missing its result arrow.
func.func @f(%q: memref<?x?x8x64xbf16>) {
  attn.attention %q, %q, %q %q spec(<head_dim = 64, q_heads = 8, kv_heads = 8>) : memref<?x?x8x64xbf16>, memref<?x?x8x64xbf16>, memref<?x?x8x64xbf16>, memref<?x?x8x64xbf16>
  return
}
