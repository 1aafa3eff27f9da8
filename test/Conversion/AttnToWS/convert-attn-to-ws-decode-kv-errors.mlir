// RUN: blasst-opt %s -split-input-file --convert-attn-to-ws=target=sm_90a -verify-diagnostics
// KV cache options the compiler refuses, each with its reason.

func.func @prefill_perseq(%q: memref<?x?x8x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x8x128xbf16>) {
  // expected-error @below {{cannot be compiled for sm_90a: kv_lengths = per_sequence is not supported with phase = prefill: the prefill kernels take one contiguous KV of the launch's seq_kv (use phase = decode)}}
  attn.attention %q, %k, %v -> %o spec(<head_dim = 128, q_heads = 8, kv_heads = 8, kv_lengths = per_sequence>) : memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>
  return
}

// -----

func.func @prefill_paged(%q: memref<?x?x8x128xbf16>, %k: memref<?x64x8x128xbf16>, %v: memref<?x64x8x128xbf16>, %o: memref<?x?x8x128xbf16>) {
  // expected-error @below {{a paged kv_cache is not supported with phase = prefill}}
  attn.attention %q, %k, %v -> %o spec(<head_dim = 128, q_heads = 8, kv_heads = 8, kv_cache = paged(page = 64)>) : memref<?x?x8x128xbf16>, memref<?x64x8x128xbf16>, memref<?x64x8x128xbf16>, memref<?x?x8x128xbf16>
  return
}

// -----

func.func @page_dim(%q: memref<?x?x8x128xbf16>, %k: memref<?x32x8x128xbf16>, %v: memref<?x32x8x128xbf16>, %o: memref<?x?x8x128xbf16>) {
  // expected-error @below {{K dim 1 (page) is 32 but the spec says 64}}
  attn.attention %q, %k, %v -> %o spec(<head_dim = 128, q_heads = 8, kv_heads = 8, phase = decode, kv_cache = paged(page = 64)>) : memref<?x?x8x128xbf16>, memref<?x32x8x128xbf16>, memref<?x32x8x128xbf16>, memref<?x?x8x128xbf16>
  return
}
