// RUN: blasst-opt %s --convert-attn-to-ws=target=sm_100a --ws-print-protocol -o /dev/null 2>&1 | FileCheck %s
// sm_100a: the MMA role's releases are tcgen05.commit from its one issuing
// thread, one arrival each (the lowering inits the barriers with these
// counts and blasst-verify-sync checks the same); softmax and correction
// warpgroups arrive with all 128 threads, the load thread once.

// CHECK: pipe @q_pipe depth 1 once full-arrivals 1 empty-arrivals 1
// CHECK: pipe @k_pipe depth 2 per-block full-arrivals 1 empty-arrivals 1
// CHECK: pipe @s0_pipe depth 1 per-block full-arrivals 1 empty-arrivals 128
// CHECK: pipe @p0_pipe depth 1 per-block full-arrivals 128 empty-arrivals 1
// CHECK: pipe @o0_pipe depth 1 per-block full-arrivals 128 empty-arrivals 1
// CHECK: pipe @done_pipe depth 1 once full-arrivals 1 empty-arrivals 128
// CHECK: pipe @epi0_pipe depth 1 once full-arrivals 128 empty-arrivals 32
func.func @causal_gqa(%q: memref<?x?x32x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x32x128xbf16>) {
  attn.attention %q, %k, %v -> %o spec(<head_dim = 128, q_heads = 32, kv_heads = 8, causal = true>) : memref<?x?x32x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x32x128xbf16>
  return
}
