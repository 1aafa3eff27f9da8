// RUN: blasst-opt %s -split-input-file | blasst-opt -split-input-file | FileCheck %s
// Round trip of attn.attention and the canonical printing of #attn.spec.

// A preset expands to every key.
// CHECK-LABEL: func.func @preset
// CHECK: attn.attention %{{.*}}, %{{.*}}, %{{.*}} -> %{{.*}} spec(<dtype = bf16, head_dim = 128, head_dim_v = 128, q_heads = 32, kv_heads = 8, causal = true, phase = prefill, softmax_scale = default, sparsity = none, lse = false, stats = false>)
func.func @preset(%q: memref<?x?x32x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x32x128xbf16>) {
  attn.attention %q, %k, %v -> %o spec(<preset = "llama3-8b-prefill">) : memref<?x?x32x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x32x128xbf16>
  return
}

// -----

// MQA, f16, static shapes, explicit scale, a fixed ln(lambda) and LSE output.
// CHECK-LABEL: func.func @mqa_f16
// CHECK: lse(%{{.*}} : memref<2x16x512xf32>)
// CHECK-SAME: dtype = f16, head_dim = 64, head_dim_v = 64, q_heads = 16, kv_heads = 1, causal = false
// CHECK-SAME: softmax_scale = 1.250000e-01, sparsity = blasst(ln_lambda = -6.000000e+00), lse = true
func.func @mqa_f16(%q: memref<2x512x16x64xf16>, %k: memref<2x1024x1x64xf16>, %v: memref<2x1024x1x64xf16>, %o: memref<2x512x16x64xf16>, %lse: memref<2x16x512xf32>) {
  attn.attention %q, %k, %v -> %o lse(%lse : memref<2x16x512xf32>) spec(<dtype = f16, head_dim = 64, q_heads = 16, kv_heads = 1, softmax_scale = 0.125, sparsity = blasst(ln_lambda = -6.0), lse = true>) : memref<2x512x16x64xf16>, memref<2x1024x1x64xf16>, memref<2x1024x1x64xf16>, memref<2x512x16x64xf16>
  return
}

// -----

// GQA 4:1 with the calibrated policy lambda = a / L and skip statistics.
// CHECK-LABEL: func.func @gqa_stats
// CHECK: stats(%{{.*}} : memref<?x8x2xi64>)
// CHECK-SAME: sparsity = blasst(a = 2.560000e+02), lse = false, stats = true
func.func @gqa_stats(%q: memref<?x?x8x128xbf16>, %k: memref<?x?x2x128xbf16>, %v: memref<?x?x2x128xbf16>, %o: memref<?x?x8x128xbf16>, %s: memref<?x8x2xi64>) {
  attn.attention %q, %k, %v -> %o stats(%s : memref<?x8x2xi64>) spec(<head_dim = 128, q_heads = 8, kv_heads = 2, causal = true, sparsity = blasst(a = 256.0), stats = true>) : memref<?x?x8x128xbf16>, memref<?x?x2x128xbf16>, memref<?x?x2x128xbf16>, memref<?x?x8x128xbf16>
  return
}

// -----

// A preset with overrides (later keys win), decode phase.
// CHECK-LABEL: func.func @decode
// CHECK: causal = false, phase = decode
func.func @decode(%q: memref<8x1x32x128xbf16>, %k: memref<8x?x8x128xbf16>, %v: memref<8x?x8x128xbf16>, %o: memref<8x1x32x128xbf16>) {
  attn.attention %q, %k, %v -> %o spec(<preset = "llama3-8b-prefill", causal = false, phase = decode>) : memref<8x1x32x128xbf16>, memref<8x?x8x128xbf16>, memref<8x?x8x128xbf16>, memref<8x1x32x128xbf16>
  return
}

// -----

// A lower cap on the effective lambda (printed only when not 1).
// CHECK-LABEL: func.func @capped
// CHECK-SAME: sparsity = blasst(a = 2.560000e+02, lambda_max = 2.500000e-01)
func.func @capped() attributes {s = #attn.spec<sparsity = blasst(a = 256.0, lambda_max = 0.25)>} { return }

// -----

// Decode KV caches: printed after stats, only when not the defaults; paged
// K/V are [num_pages, page, kv_heads, head_dim] (their first dim is not
// the batch).
// CHECK-LABEL: func.func @paged
// CHECK: phase = decode, {{.*}}stats = false, kv_lengths = per_sequence, kv_cache = paged(page = 64)>)
func.func @paged(%q: memref<2x1x32x128xbf16>, %k: memref<100x64x8x128xbf16>, %v: memref<100x64x8x128xbf16>, %o: memref<2x1x32x128xbf16>) {
  attn.attention %q, %k, %v -> %o spec(<head_dim = 128, q_heads = 32, kv_heads = 8, phase = decode, kv_cache = paged(page = 64), kv_lengths = per_sequence>) : memref<2x1x32x128xbf16>, memref<100x64x8x128xbf16>, memref<100x64x8x128xbf16>, memref<2x1x32x128xbf16>
  return
}
