// RUN: blasst-opt %s -split-input-file --convert-attn-to-ws="target=sm_90a persistent=true overlap=false" | FileCheck %s
// RUN: blasst-opt %s -split-input-file --convert-attn-to-ws="target=sm_90a persistent=true overlap=false" --convert-ws-to-nvvm | FileCheck %s --check-prefix=LLVM
// RUN: blasst-opt %s -split-input-file --convert-attn-to-ws="target=sm_90a persistent=true" | FileCheck %s --check-prefix=OVERLAP
// RUN: blasst-opt %s -split-input-file --convert-attn-to-ws="target=sm_90a persistent=true" --blasst-ws-to-llvm | FileCheck %s --check-prefix=LICM
// RUN: not blasst-opt %s -split-input-file --convert-attn-to-ws="target=sm_90a persistent=true overlap=false pingpong=true" 2>&1 | FileCheck %s --check-prefix=PINGPONG
// RUN: sed -e 's/x128xbf16/x256xbf16/g; s/head_dim = 128/head_dim = 256/' %s | not blasst-opt -split-input-file --convert-attn-to-ws="target=sm_90a persistent=true overlap=false" 2>&1 | FileCheck %s --check-prefix=HD256
// A persistent kernel: CTAs stay resident and walk the (query block, head)
// tiles of their batch entry, longest causal tiles first.

// CHECK: ws.kernel @causal_kernel target = sm_90a, block_m = 128, block_n = 128, spec = <{{.*}}> persistent reverse_tiles schedule {{{.*}}persistent = true{{.*}}} {

// The tile loop: ctaid.x, +nctaid.x, up to ceil(seq_q / block_m) * q_heads;
// the query block counts down (longest causal tiles first); the K/V rings'
// block count and Q's phase are carried across tiles.
// LLVM-LABEL: llvm.func @causal_kernel
// LLVM-SAME: blasst.persistent
// LLVM: nvvm.read.ptx.sreg.nctaid.x
// LLVM: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (i32, i32)

// HD256: error: 'attn.attention' op persistent=true is not available at head_dim > 128 yet: ptxas spills the consumers' registers
// Under the overlap (the default schedule): 144-key blocks, 40 registers for
// the load role and 232 for the consumers (the tile loop's state; 40 + 2 x
// 232 per thread of a warpgroup fills the launch's 168 x 384).
// OVERLAP: ws.kernel @causal_kernel target = sm_90a, block_m = 128, block_n = 144, {{.*}} persistent reverse_tiles schedule {{{.*}}overlap = true{{.*}}p_in_registers = true{{.*}}persistent = true{{.*}}}
// OVERLAP: ws.role @producer load warps [0, 4) regs 40
// OVERLAP: ws.role @consumer0 compute warps [4, 8) regs 232
// OVERLAP: ws.role @consumer1 compute warps [8, 12) regs 232
// The tile loop's back-edge keeps LLVM's LICM out (blasst-annotate-item-loops):
// hoisted, the tile's invariants stayed live around the KV loop and ptxas
// spilled.
// LICM: #[[$LICM:.*]] = #llvm.loop_licm<disable = true>
// LICM: #[[$ANN:.*]] = #llvm.loop_annotation<licm = #[[$LICM]]>
// LICM-LABEL: llvm.func @causal_kernel
// LICM: llvm.br ^{{.*}} {loop_annotation = #[[$ANN]]}
// LICM: llvm.br ^{{.*}} {loop_annotation = #[[$ANN]]}
// LICM: llvm.br ^{{.*}} {loop_annotation = #[[$ANN]]}
// LICM-NOT: loop_annotation
// PINGPONG: 'ws.kernel' op persistent cannot be combined with ws.order (ping-pong) yet
func.func @causal(%q: memref<?x?x8x128xbf16>, %k: memref<?x?x2x128xbf16>, %v: memref<?x?x2x128xbf16>, %o: memref<?x?x8x128xbf16>) {
  attn.attention %q, %k, %v -> %o spec(<head_dim = 128, q_heads = 8, kv_heads = 2, causal = true>) : memref<?x?x8x128xbf16>, memref<?x?x2x128xbf16>, memref<?x?x2x128xbf16>, memref<?x?x8x128xbf16>
  return
}
