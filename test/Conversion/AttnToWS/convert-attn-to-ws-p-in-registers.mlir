// RUN: blasst-opt %s -split-input-file --convert-attn-to-ws="target=sm_90a p-in-registers=true overlap=false" | FileCheck %s
// P in registers: each consumer's P is a register buffer (its 64 rows), the
// P V product reads it; with BLASST too (P is produced and consumed inside
// the same skip region in this schedule).

// CHECK-LABEL: ws.kernel @dense_kernel
// CHECK: ws.buffer @p regs [64, 128] bf16 stages 1
// CHECK: ws.exp2_store_p @s -> @p
// CHECK: ws.mma pv @p, @v -> @o
func.func @dense(%q: memref<?x?x8x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x8x128xbf16>) {
  attn.attention %q, %k, %v -> %o spec(<head_dim = 128, q_heads = 8, kv_heads = 8>) : memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>
  return
}

// -----

// CHECK-LABEL: ws.kernel @sparse_kernel
// CHECK: ws.buffer @p regs [64, 128] bf16 stages 1
func.func @sparse(%q: memref<?x?x8x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x8x128xbf16>) {
  attn.attention %q, %k, %v -> %o spec(<head_dim = 128, q_heads = 8, kv_heads = 8, sparsity = blasst(ln_lambda = -8.0)>) : memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>
  return
}
