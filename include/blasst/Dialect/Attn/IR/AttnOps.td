//===- AttnOps.td - The problem-level attention dialect ----*- tablegen -*-===//
//
// One op per attention computation. The spec attribute says what is computed;
// the operands are the [batch, seq, heads, dim] tensors in device memory.
//
//===----------------------------------------------------------------------===//
#ifndef BLASST_ATTN_OPS
#define BLASST_ATTN_OPS

include "blasst/Dialect/Attn/IR/AttnBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

class Attn_Op<string mnemonic, list<Trait> traits = []>
    : Op<Attn_Dialect, mnemonic, traits>;

def Attn_AttentionOp : Attn_Op<"attention", [AttrSizedOperandSegments]> {
  let summary = "softmax(scale * Q Kᵀ [+ causal mask]) V";
  let description = [{
    Computes attention over [batch, seq, heads, dim] memrefs. `lse` (if the
    spec asks for it) is a [batch, q_heads, seq_q] f32 memref of log-sum-exp
    values; `stats` (if the spec asks for it) is a [batch, q_heads, 2] i64
    memref of visited and skipped KV block counts.

    ```mlir
    attn.attention %q, %k, %v -> %o spec(#attn.spec<preset = "llama3-8b-prefill">)
        : memref<?x?x32x128xbf16>, memref<?x?x8x128xbf16>,
          memref<?x?x8x128xbf16>, memref<?x?x32x128xbf16>
    ```
  }];
  let arguments = (ins
    AnyMemRef:$q, AnyMemRef:$k, AnyMemRef:$v, AnyMemRef:$o,
    Optional<AnyMemRef>:$lse, Optional<AnyMemRef>:$stats,
    Attn_SpecAttr:$spec);
  let assemblyFormat = [{
    $q `,` $k `,` $v `->` $o (`lse` `(` $lse^ `:` type($lse) `)`)?
    (`stats` `(` $stats^ `:` type($stats) `)`)? `spec` `(` $spec `)` attr-dict
    `:` type($q) `,` type($k) `,` type($v) `,` type($o)
  }];
  let hasVerifier = 1;
}

#endif // BLASST_ATTN_OPS
