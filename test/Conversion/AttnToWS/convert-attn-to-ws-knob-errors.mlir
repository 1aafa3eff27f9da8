// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a stages=4" 2>&1 | FileCheck %s --check-prefix=SMEM
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a consumer-regs=256" 2>&1 | FileCheck %s --check-prefix=REGS
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a block-n=72" 2>&1 | FileCheck %s --check-prefix=BLOCK
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_80" 2>&1 | FileCheck %s --check-prefix=TARGET
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a stages=-1" 2>&1 | FileCheck %s --check-prefix=NEG
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a wibble=1" 2>&1 | FileCheck %s --check-prefix=OPT
// Knobs that make the schedule invalid are refused by the ws verifiers with
// the reason; tile sizes no schedule takes, unknown targets and options are
// refused up front.

// SMEM: error: 'ws.kernel' op shared memory buffers need 393216 bytes, sm_90a allows at most 232448
// SMEM: error: 'attn.attention' op the sm_90a schedule for this spec is invalid (see above)
// REGS: error: 'ws.kernel' op register budgets need 68608 registers, a CTA has 65536
// BLOCK: error: 'attn.attention' op block-n=72: keys per KV block must be a positive multiple of 16 and at most 256 (the N of one wgmma)
// TARGET: error: convert-attn-to-ws: unknown target 'sm_80' (expected sm_90a or sm_100a)
// NEG: error: convert-attn-to-ws: option stages must not be negative, got -1
// OPT: no such option wibble
func.func @llama(%q: memref<?x?x32x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x32x128xbf16>) {
  attn.attention %q, %k, %v -> %o spec(<preset = "llama3-8b-prefill">) : memref<?x?x32x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x32x128xbf16>
  return
}
