// RUN: blasst-opt %s --convert-attn-to-ws=target=sm_90a | FileCheck %s
// RUN: blasst-opt %s --convert-attn-to-ws=target=sm_100a -verify-diagnostics
// head_dim 256: sm_90a uses 64-key blocks so Q and two K/V stages fit in
// shared memory; sm_100a refuses it (O would not fit in tensor memory).

// CHECK-LABEL: ws.kernel @hd256_kernel target = sm_90a, block_m = 128, block_n = 64
// CHECK-DAG: ws.buffer @k smem [64, 256] bf16 stages 2
// CHECK-DAG: ws.buffer @o regs [64, 256] f32 stages 1
func.func @hd256(%q: memref<?x?x8x256xbf16>, %k: memref<?x?x8x256xbf16>, %v: memref<?x?x8x256xbf16>, %o: memref<?x?x8x256xbf16>) {
  // expected-error @below {{cannot be compiled for sm_100a: head_dim 256 is not supported on sm_100a: tensor memory holds at most 512 columns}}
  attn.attention %q, %k, %v -> %o spec(<head_dim = 256, q_heads = 8, kv_heads = 8>) : memref<?x?x8x256xbf16>, memref<?x?x8x256xbf16>, memref<?x?x8x256xbf16>, memref<?x?x8x256xbf16>
  return
}
