//===- Passes.td - blasst conversion passes ----------------*- tablegen -*-===//
#ifndef BLASST_CONVERSION_PASSES
#define BLASST_CONVERSION_PASSES

include "mlir/Pass/PassBase.td"

def ConvertAttnToWS : Pass<"convert-attn-to-ws", "mlir::ModuleOp"> {
  let summary = "Build a target's warp-specialized schedule for each attn.attention";
  let description = [{
    Replaces each `attn.attention` with a `ws.launch` of a new `ws.kernel`
    holding the target's default schedule:

    * sm_90a: a producer warpgroup (one elected thread issues TMA) feeding
      Q once and K/V through multi-stage smem rings, and two consumer
      warpgroups of 64 query rows each that share the K/V stages and keep S,
      P and O in registers (wgmma).
    * sm_100a: a load warp, an MMA warp (tcgen05), two softmax warpgroups of
      128 rows each, a correction warpgroup and an epilogue warp; S, P and O
      live in tensor memory, P over its own S.

    Specs the target cannot compile are refused with the reason. Schedule
    knobs are options; 0 means "the target's default for this head_dim".
  }];
  let dependentDialects = ["::blasst::ws::WSDialect"];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"sm_90a\"",
           "GPU target: sm_90a or sm_100a">,
    Option<"blockM", "block-m", "int64_t", /*default=*/"0",
           "query rows per CTA (0: target default)">,
    Option<"blockN", "block-n", "int64_t", /*default=*/"0",
           "keys per KV block (0: target default)">,
    Option<"stages", "stages", "int64_t", /*default=*/"0",
           "K/V pipeline depth (0: target default)">,
    Option<"producerRegs", "producer-regs", "int64_t", /*default=*/"0",
           "setmaxnreg budget of the load/producer warpgroup (0: default)">,
    Option<"consumerRegs", "consumer-regs", "int64_t", /*default=*/"0",
           "setmaxnreg budget of the compute/softmax warpgroups (0: default)">,
  ];
}

#endif // BLASST_CONVERSION_PASSES
