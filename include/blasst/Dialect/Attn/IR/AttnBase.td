//===- AttnBase.td - attn dialect and its spec attribute ---*- tablegen -*-===//
//
// Split from AttnOps.td so that other dialects (ws) can use #attn.spec
// without TableGen emitting the attn ops again.
//
//===----------------------------------------------------------------------===//
#ifndef BLASST_ATTN_BASE
#define BLASST_ATTN_BASE

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Attn_Dialect : Dialect {
  let name = "attn";
  let cppNamespace = "::blasst::attn";
  let summary = "Problem-level attention computations";
  let description = [{
    The `attn` dialect describes *what* an attention kernel computes: the data
    type, head dimensions, query and key/value head counts (MHA, GQA, MQA),
    causality, phase, softmax scale and BLASST sparsity policy. It says nothing
    about how the computation is scheduled; `--convert-attn-to-ws` picks a
    target's warp-specialized schedule.
  }];
  let useDefaultAttributePrinterParser = 1;
}

class Attn_Attr<string name, string mnemonic_, list<Trait> traits = []>
    : AttrDef<Attn_Dialect, name, traits> {
  let mnemonic = mnemonic_;
}

def Attn_SpecAttr : Attn_Attr<"Spec", "spec"> {
  let summary = "The specification of one attention computation";
  let description = [{
    Every key may be omitted and then takes its default; `preset = "name"`
    starts from a named preset. Example:

    ```mlir
    #attn.spec<dtype = bf16, head_dim = 128, q_heads = 32, kv_heads = 8,
               causal = true, phase = prefill, sparsity = blasst(a = 256.0)>
    ```

    `sparsity` is `none`, `blasst(a = <float>)` (lambda = a / L_kv, computed per
    sequence) or `blasst(ln_lambda = <float>)` (a fixed threshold); either
    may add `lambda_max = <float>` (in (0, 1], default 1), the cap on the
    effective lambda the kernel applies per sequence.
    `softmax_scale` defaults to 1/sqrt(head_dim).

    Decode KV caches (printed only when not the default):
    `kv_lengths = per_sequence` (every sequence of the batch has its own KV
    length, an int32 device array; default `uniform`) and
    `kv_cache = paged(page = <n>)` (K and V are pages of n tokens, a power of
    two from 16 to 256, named by an int32 block table; default
    `contiguous`).
  }];
  let parameters = (ins
    "::mlir::Type":$dtype,
    "int64_t":$headDim,
    "int64_t":$headDimV,
    "int64_t":$qHeads,
    "int64_t":$kvHeads,
    "bool":$causal,
    "::blasst::Phase":$phase,
    OptionalParameter<"::mlir::FloatAttr">:$softmaxScale,
    "::blasst::SparsityKind":$sparsity,
    OptionalParameter<"::mlir::FloatAttr">:$sparsityValue,
    OptionalParameter<"::mlir::FloatAttr">:$lambdaMax,
    "bool":$lse,
    "bool":$stats,
    DefaultValuedParameter<"bool", "false">:$kvPerSequence,
    DefaultValuedParameter<"int64_t", "0">:$kvPageSize
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The plain C++ spec this attribute describes.
    ::blasst::AttentionSpec toSpec() const;
    /// Builds the attribute for a valid spec.
    static SpecAttr fromSpec(::mlir::MLIRContext *ctx,
                             const ::blasst::AttentionSpec &spec);
  }];
}

#endif // BLASST_ATTN_BASE
