// RUN: not blasst-opt %s --blasst-ws-to-llvm 2>&1 | FileCheck %s --check-prefix=ATTN
// RUN: not blasst-opt %s --convert-ws-to-nvvm 2>&1 | FileCheck %s --check-prefix=ATTN
// RUN: not blasst-opt %s --blasst-ws-to-llvm=target=sm_90a -o %t 2>&1 | FileCheck %s --check-prefix=ATTN
// RUN: echo 'module {}' | not blasst-opt --blasst-ws-to-llvm 2>&1 | FileCheck %s --check-prefix=EMPTY
// RUN: echo 'module {}' | not blasst-opt --blasst-attn-to-llvm 2>&1 | FileCheck %s --check-prefix=EMPTY
// The ws lowering given attention-level IR (no schedule yet) or nothing at
// all is an error, not an empty module and exit 0.

// ATTN: error: 'attn.attention' op is attention-level IR, which convert-ws-to-nvvm cannot lower: run --convert-attn-to-ws first (the blasst-attn-to-llvm pipeline does both)
// ATTN-NOT: llvm.func
// EMPTY: error: convert-ws-to-nvvm: the module has no ws.kernel to lower
// EMPTY-NOT: llvm.
func.func @f(%q: memref<?x?x32x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x32x128xbf16>) {
  attn.attention %q, %k, %v -> %o spec(<preset = "llama3-8b-prefill">)
    : memref<?x?x32x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x32x128xbf16>
  return
}
