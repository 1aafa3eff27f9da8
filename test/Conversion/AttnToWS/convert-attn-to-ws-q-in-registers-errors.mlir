// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a q-in-registers=true block-n=176" 2>&1 | FileCheck %s --check-prefix=WIDE
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_100a q-in-registers=true" 2>&1 | FileCheck %s --check-prefix=B200
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a q-in-registers=maybe" 2>&1 | FileCheck %s --check-prefix=KNOB
// RUN: printf 'head_dim=256 q_heads=4 kv_heads=4' > %t.spec
// RUN: not blasst-compile --spec %t.spec --q-in-registers --emit ws -o - 2>&1 | FileCheck %s --check-prefix=HD256
// Q in registers where it does not fit, or on a target without wgmma, is
// refused with the reason.
// WIDE: error: 'attn.attention' op q-in-registers=true is not available here: Q takes head_dim / 4 registers per thread, and at head_dim 128 with S, P and O in flight it needs block_n <= 144 (got 176)
// B200: error: 'attn.attention' op overlap, pingpong, p-in-registers and q-in-registers are sm_90a schedules
// KNOB: error: convert-attn-to-ws: option q-in-registers must be auto, true or false, got 'maybe'
// HD256: error: 'attn.attention' op q-in-registers=true is not available here: Q takes head_dim / 4 registers per thread, and at head_dim > 128 they do not fit the consumers' 240
func.func @dense(%q: memref<?x?x8x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x8x128xbf16>) {
  attn.attention %q, %k, %v -> %o spec(<head_dim = 128, q_heads = 8, kv_heads = 8>) : memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>
  return
}
