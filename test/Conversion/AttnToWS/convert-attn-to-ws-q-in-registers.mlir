// RUN: blasst-opt %s -split-input-file --convert-attn-to-ws="target=sm_90a q-in-registers=true" | FileCheck %s
// Q in registers: each consumer loads its 64 Q rows once (ws.load_frag,
// after the Q tile arrives) and every Q Kᵀ reads them; at head_dim 128 the
// FA3 tiles then use 144-key blocks (Q's 32 registers per thread do not fit
// beside S, P and O at 176). BLASST kernels keep the same steps.

// CHECK-LABEL: ws.kernel @dense_kernel
// CHECK-SAME: block_n = 144
// CHECK: ws.buffer @qr regs [64, 128] bf16 stages 1
// CHECK: ws.role @consumer0
// CHECK-NEXT: ws.acquire @q_pipe
// CHECK-NEXT: ws.load_frag @q -> @qr
// CHECK: ws.mma qk @qr, @k -> @s
// CHECK: ws.kv_loop
// CHECK: ws.mma qk @qr, @k -> @s {ahead = 1 : i64, async}
// CHECK: ws.role @consumer1
// CHECK-NEXT: ws.acquire @q_pipe
// CHECK-NEXT: ws.load_frag @q -> @qr
// CHECK-NOT: ws.mma qk @q,
func.func @dense(%q: memref<?x?x8x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x8x128xbf16>) {
  attn.attention %q, %k, %v -> %o spec(<head_dim = 128, q_heads = 8, kv_heads = 8>) : memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>
  return
}

// -----

// CHECK-LABEL: ws.kernel @hd64_kernel
// CHECK-SAME: block_n = 128
// CHECK: ws.buffer @qr regs [64, 64] bf16 stages 1
func.func @hd64(%q: memref<?x?x8x64xbf16>, %k: memref<?x?x8x64xbf16>, %v: memref<?x?x8x64xbf16>, %o: memref<?x?x8x64xbf16>) {
  attn.attention %q, %k, %v -> %o spec(<head_dim = 64, q_heads = 8, kv_heads = 8>) : memref<?x?x8x64xbf16>, memref<?x?x8x64xbf16>, memref<?x?x8x64xbf16>, memref<?x?x8x64xbf16>
  return
}

