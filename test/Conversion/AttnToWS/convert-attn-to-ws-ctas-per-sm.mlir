// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a ctas-per-sm=2 consumer-regs=232" | FileCheck %s
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a ctas-per-sm=2 consumer-regs=232" --blasst-verify-sync --convert-ws-to-nvvm | FileCheck %s --check-prefix=LLVM
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a ctas-per-sm=2" 2>&1 | FileCheck %s --check-prefix=REGS
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a ctas-per-sm=3" 2>&1 | FileCheck %s --check-prefix=THREE
// RUN: sed -e "s/, phase = decode//" %s | not blasst-opt --convert-attn-to-ws="target=sm_100a ctas-per-sm=2" 2>&1 | FileCheck %s --check-prefix=THREE
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a ctas-per-sm=2 consumer-regs=232 stages=4" 2>&1 | FileCheck %s --check-prefix=SMEM
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a ctas-per-sm=2 consumer-regs=232" | sed -e 's/ctas_per_sm = 2/ctas_per_sm = 4/' | not blasst-opt 2>&1 | FileCheck %s --check-prefix=VERIFY
// Two CTAs per SM (sm_90a, opt-in, session 23: compiled, not measured): the
// registers at entry and the shared memory of half an SM each; ptxas is
// asked for two CTAs per SM.

// CHECK: ws.kernel @gqa_kernel
// CHECK-SAME: ctas_per_sm = 2
// CHECK: ws.role @producer load warps [0, 4) regs 24
// CHECK: ws.role @consumer0 compute warps [4, 8) regs 232

// LLVM: llvm.func @gqa_kernel(
// LLVM-SAME: blasst.ctas_per_sm = 2
// LLVM-SAME: nvvm.minctasm = 2
// LLVM: nvvm.setmaxregister decrease 24
// LLVM: nvvm.setmaxregister increase 232

// REGS: error: 'ws.kernel' op register budgets need 33792 registers, a CTA has 32768 (ctas_per_sm = 2)
// THREE: error: 'attn.attention' op ctas-per-sm={{[0-9]}}: 1 or 2 CTAs per SM (2: sm_90a)
// SMEM: error: 'ws.kernel' op shared memory buffers need {{[0-9]+}} bytes, sm_90a allows at most 115712 (ctas_per_sm = 2)
// VERIFY: error: 'ws.kernel' op ctas_per_sm = 4 must be 1 or 2 (2: sm_90a only)
func.func @gqa(%q: memref<?x?x32x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x32x128xbf16>) {
  attn.attention %q, %k, %v -> %o spec(<head_dim = 128, q_heads = 32, kv_heads = 8, phase = decode>) : memref<?x?x32x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x32x128xbf16>
  return
}
