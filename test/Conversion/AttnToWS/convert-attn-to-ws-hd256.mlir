// RUN: blasst-opt %s --convert-attn-to-ws=target=sm_90a | FileCheck %s
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a overlap=false" | FileCheck %s --check-prefix=PLAIN
// RUN: blasst-opt %s --convert-attn-to-ws=target=sm_100a -verify-diagnostics
// head_dim 256: sm_90a runs the overlap with P in registers on 80-key blocks
// (Q and two K/V stages fill shared memory; S, P and O fill the registers);
// the plain schedule keeps P in shared memory and so takes 64-key blocks.
// sm_100a refuses it (O would not fit in tensor memory).

// CHECK-LABEL: ws.kernel @hd256_kernel target = sm_90a, block_m = 128, block_n = 80
// CHECK-DAG: ws.buffer @k smem [80, 256] bf16 stages 2
// CHECK-DAG: ws.buffer @p regs [64, 80] bf16 stages 1
// CHECK-DAG: ws.buffer @o regs [64, 256] f32 stages 1
// CHECK: ws.mma qk @q, @k -> @s {ahead = 1 : i64, async}
// PLAIN-LABEL: ws.kernel @hd256_kernel target = sm_90a, block_m = 128, block_n = 64
// PLAIN-DAG: ws.buffer @k smem [64, 256] bf16 stages 2
// PLAIN-DAG: ws.buffer @p smem [128, 64] bf16 stages 1
// PLAIN-NOT: ahead
func.func @hd256(%q: memref<?x?x8x256xbf16>, %k: memref<?x?x8x256xbf16>, %v: memref<?x?x8x256xbf16>, %o: memref<?x?x8x256xbf16>) {
  // expected-error @below {{cannot be compiled for sm_100a: head_dim 256 is not supported on sm_100a: tensor memory holds at most 512 columns}}
  attn.attention %q, %k, %v -> %o spec(<head_dim = 256, q_heads = 8, kv_heads = 8>) : memref<?x?x8x256xbf16>, memref<?x?x8x256xbf16>, memref<?x?x8x256xbf16>, memref<?x?x8x256xbf16>
  return
}
