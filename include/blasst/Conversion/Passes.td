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
    Option<"kvSplits", "kv-splits", "int64_t", /*default=*/"0",
           "sm_90a decode: CTAs that split each tile's KV blocks (0: chosen "
           "at launch from batch, kv heads, length and SM count)">,
    Option<"splitInterleave", "split-interleave", "std::string",
           /*default=*/"\"auto\"",
           "sm_90a decode: the KV splits take chunks of split-chunk KV "
           "blocks in turn (split s of S: chunks s, s + S, ...) instead of "
           "one contiguous range each: auto (the default), true or false">,
    Option<"splitChunk", "split-chunk", "int64_t", /*default=*/"0",
           "sm_90a decode with split-interleave: KV blocks per chunk (0: "
           "default)">,
    Option<"overlap", "overlap", "std::string", /*default=*/"\"auto\"",
           "sm_90a: intra-warpgroup overlap (block n's P V and block n+1's "
           "Q Kᵀ issued together; block n+1's softmax runs during P V): "
           "auto (default: on), true or false">,
    Option<"pingpong", "pingpong", "std::string", /*default=*/"\"auto\"",
           "sm_90a: the consumer warpgroups take turns for their GEMMs "
           "(named barriers), so one's softmax overlaps the other's GEMMs: "
           "auto (default: off), true or false">,
    Option<"kvMulticast", "kv-multicast", "std::string", /*default=*/"\"auto\"",
           "sm_90a: clusters of two neighbouring query blocks share each "
           "K/V tile through TMA multicast (non-causal): auto (default: "
           "off), true or false">,
    Option<"persistent", "persistent", "std::string", /*default=*/"\"auto\"",
           "sm_90a: persistent CTAs that walk the (query block, head) tiles "
           "of their batch entry, longest causal tiles first: auto "
           "(default: off), true or false">,
    Option<"ctasPerSm", "ctas-per-sm", "int64_t", /*default=*/"0",
           "sm_90a: CTAs resident per SM, 1 or 2 (2: registers and shared "
           "memory of half an SM each); 0: 1">,
    Option<"lean", "lean", "std::string", /*default=*/"\"auto\"",
           "sm_90a dense decode: persistent CTAs, one per SM, each taking "
           "an even share of all tiles' KV blocks across tile boundaries "
           "(implies persistent): auto (default: off), true or false">,
    Option<"balancedSplits", "balanced-splits", "std::string",
           /*default=*/"\"auto\"",
           "sm_90a decode over per-sequence lengths: each tile takes KV "
           "splits in proportion to its sequence's length (the launch's "
           "CTAs shared out by blocks): auto (default: on for BLASST "
           "decode with one CTA per split, off for dense decode), true or "
           "false">,
    Option<"leanEntry", "lean-entry", "std::string", /*default=*/"\"auto\"",
           "sm_90a dense decode: a lean entry (<kernel>_lean) beside the "
           "one-CTA-per-split kernel, launched where the split grid's waves "
           "are ragged or, with per-sequence lengths, the grid is at most "
           "two waves (the runtime picks per launch): auto (default: on at "
           "head_dim 64 and 128 over a contiguous or paged KV cache, with "
           "cp.async K/V), true or false">,
    Option<"shortEntry", "short-entry", "std::string", /*default=*/"\"auto\"",
           "sm_90a prefill: a short-sequence entry (<kernel>_short) "
           "beside the kernel, launched for short sequences (the runtime "
           "picks per launch): at head_dim 128 with 128-key blocks beside "
           "wider ones, where it computes fewer padded keys; at head_dim 64 "
           "two CTAs per SM with 64-key blocks, where the query tiles average "
           "at most 3072 keys (dense or BLASST): auto (default: on at "
           "head_dim 64 and 128 without persistent CTAs or K/V multicast), "
           "true or false">,
    Option<"tmaEntry", "tma-entry", "std::string", /*default=*/"\"auto\"",
           "sm_90a dense decode: a TMA entry (<kernel>_tma) beside the "
           "cp.async kernel, launched instead of the split grid on GPUs "
           "with under 4.2 TB/s of DRAM bandwidth (the runtime picks per "
           "device): auto (default: on at head_dim 128 over a contiguous "
           "KV cache with cp.async K/V and one CTA per split), true or "
           "false">,
    Option<"mergeKernel", "merge-kernel", "std::string", /*default=*/"\"auto\"",
           "sm_90a decode: a second kernel over many CTAs that can merge "
           "the splits' partials instead of each tile's last split (the "
           "runtime picks per launch): auto (default: on for decode "
           "without persistent CTAs), true or false">,
    Option<"kvCpAsync", "kv-cp-async", "std::string", /*default=*/"\"auto\"",
           "sm_90a decode: the load warpgroup copies K and V with cp.async "
           "(16 bytes per thread, into the TMA's swizzled layout) instead of "
           "TMA: auto (default: on for dense decode, contiguous or paged KV "
           "cache, with one CTA per split or lean CTAs), true or false">,
    Option<"pInRegisters", "p-in-registers", "std::string", /*default=*/"\"auto\"",
           "sm_90a: keep P in registers (wgmma with A from registers) "
           "instead of a round trip through shared memory: auto (default: "
           "on with the overlap), true or false">,
    Option<"qInRegisters", "q-in-registers", "std::string", /*default=*/"\"auto\"",
           "sm_90a: load each consumer's Q rows into registers once and "
           "issue Q Kᵀ with A from registers (no Q reads from shared memory "
           "per KV block; head_dim / 4 more registers per thread): auto "
           "(default: off), true or false">,
  ];
}

def ConvertWSToNVVM : Pass<"convert-ws-to-nvvm", "mlir::ModuleOp"> {
  let summary = "Lower each ws.kernel to an NVVM kernel (llvm.func)";
  let description = [{
    Lowers a verified sm_90a `ws.kernel` to an `llvm.func` kernel with the
    ABI of runtime/include/blasst/Runtime/KernelABI.h, using typed NVVM ops:
    buffers become offsets in dynamic shared memory (128B-swizzled tiles,
    1024-byte aligned), pipes become full/empty mbarrier rings, roles become
    warp-range branches with setmaxnreg, `tma_load` becomes
    cp.async.bulk.tensor, `mma` becomes wgmma.mma_async, and the softmax steps
    become f32 arithmetic on the wgmma accumulator fragments. The result
    still holds scf/arith ops: the `blasst-ws-to-llvm` pipeline runs this
    pass (device-only) and then the NVVM, SCF, arith and cf conversions to
    the LLVM dialect.
    Kernels for a target the pass cannot lower yet are refused by name, and
    so is a module with attn ops left (run `convert-attn-to-ws` first) or
    with no `ws.kernel`: the result would be an empty module.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect", "::mlir::NVVM::NVVMDialect",
                           "::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect"];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"sm_90a\"",
           "GPU target: sm_90a (sm_100a is not lowered yet)">,
    Option<"deviceOnly", "device-only", "bool", /*default=*/"false",
           "drop host functions (those launching kernels), keeping only "
           "the device code">,
    Option<"timeline", "timeline", "bool", /*default=*/"false",
           "profiling (sm_90a): %globaltimer stamps at the roles' points "
           "into a global `blasst_stamps` (a row of 16 u64 per CTA and item; "
           "docs/design.md \"Timeline\"), read by blasst-bench --stamps">,
  ];
}

def AnnotateItemLoops : Pass<"blasst-annotate-item-loops", "mlir::ModuleOp"> {
  let summary = "Keep LLVM's LICM out of persistent CTAs' tile loops";
  let description = [{
    Runs on the LLVM dialect, after the cf conversion. A persistent prefill
    CTA walks its tiles in a loop (`convert-ws-to-nvvm` gives that `scf.for`
    the location name `blasst.item_loop`, which the SCF and cf conversions
    pass on to the loop's branches). Every back-edge branch with that
    location gets `loop_annotation<licm = <disable = true>>`, i.e. LLVM IR's
    `llvm.licm.disable`: LICM would hoist each tile's invariants (the
    last block's column masks, the Q descriptors) out of the tile loop,
    where they stay live around the consumers' whole KV loop and ptxas
    spills (docs/design.md "Persistent CTAs under the overlap"). Recomputing
    them once per tile costs a few dozen instructions.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // BLASST_CONVERSION_PASSES
