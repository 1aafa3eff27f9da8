//===- Frontend.cpp - From an AttentionSpec to ws IR ----------------------===//
#include "blasst/Compiler/Frontend.h"
#include "blasst/Conversion/Passes.h"
#include "blasst/Dialect/WS/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace blasst;

void blasst::registerAllBLASSTDialects(DialectRegistry &registry) {
  registry.insert<attn::AttnDialect, ws::WSDialect, arith::ArithDialect,
                  func::FuncDialect, gpu::GPUDialect, LLVM::LLVMDialect,
                  NVVM::NVVMDialect, memref::MemRefDialect, nvgpu::NVGPUDialect,
                  scf::SCFDialect, vector::VectorDialect>();
}

std::string blasst::kernelBaseName(const AttentionSpec &spec) {
  if (!spec.name.empty()) {
    std::string n;
    // A PTX identifier starts with a letter or '_': "8b-prefill" becomes
    // "_8b_prefill" (ptxas rejects a leading digit with a syntax error).
    if (std::isdigit(static_cast<unsigned char>(spec.name[0])))
      n += '_';
    for (char c : spec.name)
      n += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    return n;
  }
  return "attention";
}

OwningOpRef<ModuleOp> blasst::buildAttnModule(MLIRContext *ctx,
                                              const AttentionSpec &spec,
                                              StringRef name) {
  ctx->loadDialect<attn::AttnDialect, ws::WSDialect, func::FuncDialect>();
  OpBuilder b(ctx);
  Location loc = b.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());

  Type et = attn::getElementType(ctx, spec.dtype);
  int64_t dyn = ShapedType::kDynamic;
  auto bshd = [&](int64_t heads, int64_t dim) {
    return MemRefType::get({dyn, dyn, heads, dim}, et);
  };
  SmallVector<Type> args{bshd(spec.numQHeads, spec.headDim),
                         bshd(spec.numKVHeads, spec.headDim),
                         bshd(spec.numKVHeads, spec.headDimV),
                         bshd(spec.numQHeads, spec.headDimV)};
  if (spec.lse)
    args.push_back(MemRefType::get({dyn, spec.numQHeads, dyn}, b.getF32Type()));
  if (spec.stats)
    args.push_back(
        MemRefType::get({dyn, spec.numQHeads, 2}, b.getIntegerType(64)));
  auto func = func::FuncOp::create(b, loc, name, b.getFunctionType(args, {}));
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value lse = spec.lse ? entry->getArgument(4) : Value();
  Value stats = spec.stats ? entry->getArgument(spec.lse ? 5 : 4) : Value();
  attn::AttentionOp::create(b, loc, entry->getArgument(0),
                            entry->getArgument(1), entry->getArgument(2),
                            entry->getArgument(3), lse, stats,
                            attn::SpecAttr::fromSpec(ctx, spec));
  func::ReturnOp::create(b, loc);
  return module;
}

static int64_t toPassOption(int64_t knob) { return knob; }
static std::string toPassOption(std::optional<bool> knob) {
  return printScheduleKnob(knob);
}
static int64_t toPassOption(std::optional<int64_t> knob) {
  return knob.value_or(0);
}

void blasst::resolveCrossStageP(const AttentionSpec &spec,
                                ScheduleOptions &o) {
  if (o.target != blasst::Target::SM100a)
    return;
  if (!o.crossStageP)
    o.crossStageP = true;
  if (!*o.crossStageP)
    return;
  ws::BLASSTCrossStagePOptions defaults;
  if (!o.crossStagePDepth || !*o.crossStagePDepth)
    o.crossStagePDepth = ws::defaultCrossStagePDepth();
  if (!o.crossStagePHoldA)
    o.crossStagePHoldA = defaults.holdA;
  if (!o.crossStagePHoldB)
    o.crossStagePHoldB = defaults.holdB;
}

LogicalResult blasst::lowerToWS(ModuleOp module, const ScheduleOptions &opts,
                                bool insertVote, bool verifyStats) {
  bool decode = false;
  module.walk([&](attn::AttentionOp op) {
    decode |= op.getSpec().getPhase() == Phase::Decode;
  });
  if (std::string why = checkScheduleKnobs(opts, decode); !why.empty())
    return module.emitError() << "schedule option " << why;
  PassManager pm(module.getContext());
  ConvertAttnToWSOptions passOpts;
  passOpts.target = toString(opts.target);
  // Every convert-attn-to-ws knob of the table, as the option of the same
  // name (the V-on-demand knobs are handled below).
#define BLASST_ATTN_TO_WS_KNOB(Kind, Field, Name, Help)                        \
  passOpts.Field = toPassOption(opts.Field);
#include "blasst/Conversion/AttnToWS/ScheduleKnobs.def"
  pm.addPass(createConvertAttnToWS(passOpts));
  if (opts.sinkSeed == true && !insertVote)
    return module.emitError()
           << "the sink seed (--sink-seed) seeds the running max BLASST's "
              "votes compare with; this compile inserts no vote";
  if (opts.voteFirstBlock == true && !insertVote)
    return module.emitError()
           << "the vote on each KV split's first block (--vote-first-block) "
              "is a BLASST vote; this compile inserts no vote";
  if (insertVote) {
    ws::BLASSTInsertVoteOptions iOpts;
    iOpts.sinkSeed = printScheduleKnob(opts.sinkSeed);
    iOpts.voteFirstBlock = printScheduleKnob(opts.voteFirstBlock);
    pm.addPass(ws::createBLASSTInsertVote(iOpts));
  }
  // V on demand: by default wherever it applies (BLASST on the sm_90a
  // overlap schedule); --v-on-demand asks for it (an error where it cannot
  // be done), --v-on-demand=false leaves it out.
  // (Asked for without the vote pass, the pass says why it cannot run.)
  // A speculation depth asks for V on demand.
  if (opts.vSpeculateAfter && opts.vOnDemand == false)
    return module.emitError()
           << "the V speculation depth needs V on demand, which is off "
              "(--v-on-demand=false)";
  // So does the K copy depth that follows the decisions.
  bool keptKnob = opts.kKeptAhead || opts.kKeptRun;
  if (keptKnob && opts.vOnDemand == false)
    return module.emitError()
           << "the K copy depth that follows the decisions (--k-kept-ahead, "
              "--k-kept-run) needs V on demand, which is off "
              "(--v-on-demand=false)";
  if (opts.kKeptAhead && *opts.kKeptAhead < 0)
    return module.emitError()
           << "--k-kept-ahead must be 0 (K always as far ahead as the ring "
              "is deep) or more, got "
           << *opts.kKeptAhead;
  if (opts.kKeptRun && (*opts.kKeptRun < 1 || *opts.kKeptRun > 8))
    return module.emitError()
           << "--k-kept-run must be in [1, 8] (kept blocks in a row), got "
           << *opts.kKeptRun;
  if (opts.kKeptRun && opts.kKeptAhead == 0)
    return module.emitError()
           << "--k-kept-run = " << *opts.kKeptRun
           << " has no effect with --k-kept-ahead=0 (K always as far ahead "
              "as the ring is deep)";
  std::optional<bool> vOnDemand = opts.vOnDemand;
  if (!vOnDemand && (opts.vSpeculateAfter || keptKnob))
    vOnDemand = true;
  if (vOnDemand ? *vOnDemand : insertVote) {
    ws::BLASSTVOnDemandOptions vOpts;
    vOpts.mode = vOnDemand ? "true" : "auto";
    if (opts.vSpeculateAfter)
      vOpts.speculateAfter = *opts.vSpeculateAfter;
    if (opts.kKeptAhead)
      vOpts.kKeptAhead = *opts.kKeptAhead;
    if (opts.kKeptRun)
      vOpts.kKeptRun = *opts.kKeptRun;
    pm.addPass(ws::createBLASSTVOnDemand(vOpts));
  } else if (vOnDemand == false) {
    // Only the schedule record: convert-attn-to-ws recorded the spec's
    // default, which may be V on demand.
    ws::BLASSTVOnDemandOptions vOpts;
    vOpts.mode = "false";
    pm.addPass(ws::createBLASSTVOnDemand(vOpts));
  }
  // Cross-stage P: by default on sm_100a wherever it applies (auto mode;
  // --cross-stage-p=false leaves it out); asked for explicitly it is an
  // error where it cannot be done (sm_90a keeps S in registers). The
  // defaults of depth and hold are the pass's (resolveCrossStageP spells
  // them out for the JIT's cache key).
  if ((opts.crossStagePDepth || opts.crossStagePHoldA ||
       opts.crossStagePHoldB) &&
      opts.crossStageP == false)
    return module.emitError()
           << "the cross-stage P handshake depth and hold schedule need "
              "cross-stage P, which is off (--cross-stage-p=false)";
  if (opts.crossStageP.value_or(opts.target == blasst::Target::SM100a)) {
    ws::BLASSTCrossStagePOptions cOpts;
    cOpts.mode = opts.crossStageP ? "true" : "auto";
    if (opts.crossStagePDepth)
      cOpts.depth = *opts.crossStagePDepth;
    if (opts.crossStagePHoldA)
      cOpts.holdA = *opts.crossStagePHoldA;
    if (opts.crossStagePHoldB)
      cOpts.holdB = *opts.crossStagePHoldB;
    pm.addPass(ws::createBLASSTCrossStageP(cOpts));
  }
  // After the last ws transform: every schedule is proven deadlock-free and
  // hazard-free within the checker's bounds before it is lowered.
  ws::BLASSTVerifySyncOptions verifyOpts;
  verifyOpts.stats = verifyStats;
  pm.addPass(ws::createBLASSTVerifySync(verifyOpts));
  return pm.run(module);
}

std::string blasst::summarizeKernel(ws::KernelOp kernel) {
  std::string out;
  llvm::raw_string_ostream os(out);
  AttentionSpec spec = kernel.getSpec().toSpec();
  os << "kernel @" << kernel.getSymName() << "  target "
     << ws::stringifyTarget(kernel.getTarget()) << "  tile "
     << kernel.getBlockM() << " q rows x " << kernel.getBlockN()
     << " keys per KV block\n";
  os << "  spec: " << spec.toShortString() << "\n";
  // The schedule record the kernel carries, spelled as the knob table says.
  if (std::optional<DictionaryAttr> record = kernel.getSchedule()) {
    os << "  schedule: " << formatSchedule(scheduleFromAttr(*record));
    if (kernel.getReverseTiles())
      os << "  (last query blocks first)";
    os << "\n";
  }
  // Decode: the packing and the KV splits.
  if (std::optional<uint64_t> g = kernel.getQGroup()) {
    int64_t tokens = kernel.getBlockM() / int64_t(*g);
    os << "  decode: " << *g << " q heads x " << tokens
       << " tokens per tile (one tile per kv head while seq_q <= " << tokens
       << "; seq_q <= 8)";
    if (kernel.getSplitKv()) {
      os << ", split KV: ";
      IntegerAttr n;
      if (std::optional<DictionaryAttr> record = kernel.getSchedule())
        n = record->getAs<IntegerAttr>("kv_splits");
      if (kernel.getBalancedSplits())
        os << "splits that follow the per-sequence lengths (a 1-D grid: "
              "the launch's CTA budget, parameter 19, shared out by KV "
              "blocks; each CTA finds its tile and split from the lengths)";
      else if (n)
        os << n.getInt() << " splits";
      else
        os << "splits chosen at launch";
      if (std::optional<uint64_t> c = kernel.getSplitChunk())
        os << ", each taking chunks of " << *c << " KV block"
           << (*c == 1 ? "" : "s") << " in turn";
      else
        os << ", each one contiguous range";
      os << " (workspace: kernel parameter 14; the last split merges by "
            "LSE)";
    }
    os << "\n";
    if (kernel.getPerSeqKv() || kernel.getPageSize()) {
      bool cpAsync = kernel.hasCpAsyncPipes();
      os << "  kv cache: "
         << (kernel.getPerSeqKv() ? "per-sequence lengths (int32 [batch], "
                                    "parameter 15)"
                                  : "one length (seq_kv)");
      if (std::optional<uint64_t> p = kernel.getPageSize())
        os << ", paged: " << *p << "-token pages, block table parameters 16 "
           << "and 17, "
           << (int64_t(*p) >= int64_t(kernel.getBlockN())
                   ? std::string("one page per KV block")
                   : std::to_string(kernel.getBlockN() / int64_t(*p)) +
                         (cpAsync ? " pages per KV block"
                                  : " pages (copies) per KV block"))
           << (cpAsync ? ", cp.async rows through the page stride, the "
                         "pool's page count parameter 30"
                       : "");
      else
        os << ", contiguous K/V";
      os << "\n";
    }
  }
  // Cross-stage P, where it did not run: why.
  if (kernel.getTarget() == ws::Target::sm_90a)
    os << "  cross-stage P: not applicable (sm_90a keeps S in registers)\n";
  else if (std::optional<DictionaryAttr> record = kernel.getSchedule()) {
    BoolAttr on = record->getAs<BoolAttr>("cross_stage_p");
    if (!on || !on.getValue())
      os << "  cross-stage P: off (each tile's P lies over its own S: "
            "--cross-stage-p=false, or a kernel it does not apply to)\n";
  }
  os << "  CTA: " << kernel.getNumWarps() * 32 << " threads ("
     << kernel.getNumWarps() << " warps), shared memory "
     << kernel.getSharedMemoryBytes() << " B";
  if (kernel.getTarget() == ws::Target::sm_100a)
    os << ", tensor memory " << kernel.getTensorMemoryColumns()
       << " / 512 columns";
  int64_t regs = 0;
  for (int64_t wg = 0; wg < kernel.getNumWarps() / 4; ++wg)
    regs += 128 * kernel.getWarpgroupRegisters(wg);
  os << ", registers " << regs << " / " << ws::kRegistersPerCTA << "\n";

  os << "  roles:\n";
  for (auto role : kernel.getBody().getOps<ws::RoleOp>()) {
    int64_t steps = 0;
    role.getBody().walk([&](Operation *op) {
      if (!isa<ws::KVLoopOp>(op))
        ++steps;
    });
    os << llvm::format("    %-12s %-10s warps [%2d, %2d)",
                       role.getSymName().str().c_str(),
                       ws::stringifyRoleKind(role.getKind()).str().c_str(),
                       int(role.getWarpBegin()), int(role.getWarpEnd()));
    if (role.getRegs())
      os << "  regs " << *role.getRegs();
    if (role.getRowBegin())
      os << "  rows [" << *role.getRowBegin() << ", " << *role.getRowEnd()
         << ")";
    os << "  " << steps << " steps\n";
  }
  os << "  buffers:\n";
  for (auto buf : kernel.getBody().getOps<ws::BufferOp>()) {
    ArrayRef<int64_t> shape = buf.getShape();
    std::string type;
    llvm::raw_string_ostream ts(type);
    ts << buf.getElementType();
    os << llvm::format(
        "    %-8s %-4s %4dx%-4d %-4s x%d", buf.getSymName().str().c_str(),
        ws::stringifyMemorySpace(buf.getSpace()).str().c_str(), int(shape[0]),
        int(shape[1]), type.c_str(), int(buf.getStages()));
    if (buf.getAliases())
      os << "  aliases @" << *buf.getAliases();
    else if (buf.getSpace() == ws::MemorySpace::regs)
      os << "  " << buf.getStageBytes() * buf.getStages() / 4 / 128
         << " regs/thread of a warpgroup";
    else if (buf.getSpace() == ws::MemorySpace::tmem)
      os << "  " << buf.getTensorMemoryColumns() << " columns";
    else
      os << "  " << buf.getStageBytes() * buf.getStages() << " B";
    os << "\n";
  }
  os << "  pipes:\n";
  for (auto pipe : kernel.getBody().getOps<ws::PipeOp>()) {
    std::string consumers;
    for (Attribute c : pipe.getConsumers())
      consumers += (consumers.empty() ? "" : ",") +
                   cast<FlatSymbolRefAttr>(c).getValue().str();
    os << llvm::format("    %-9s depth %d  %s -> %s",
                       pipe.getSymName().str().c_str(), int(pipe.getDepth()),
                       pipe.getProducer().str().c_str(), consumers.c_str());
    if (pipe.getTxBytes())
      os << "  TMA " << *pipe.getTxBytes() << " B/stage";
    else if (pipe.getCpAsync())
      os << "  cp.async " << pipe.getLandedBytes() << " B/stage";
    os << "\n";
  }
  // BLASST: how the skip decision is made and what a skipped block saves.
  int64_t voters = 0;
  bool stats = false, onDemand = false, firstVote = false;
  kernel.walk([&](ws::VoteOp v) {
    // (A role's vote on block 0 is the same voter.)
    voters += !v.votesFirstBlock();
    firstVote |= v.votesFirstBlock();
    stats |= v.getStats();
  });
  kernel.walk([&](ws::TmaLoadOp l) { onDemand |= l.getOnDemand(); });
  std::optional<uint64_t> speculate;
  bool loadCounts = false;
  kernel.walk([&](ws::AwaitVoteOp a) {
    speculate = a.getSpeculateAfter();
    loadCounts |= a.getStats();
  });
  if (voters) {
    os << "  BLASST: a vote per KV block in " << voters << " role"
       << (voters == 1 ? "" : "s")
       << (stats        ? ", skip counters"
           : loadCounts ? ", skip counters (kept by the load role)"
                        : "")
       << "; a skipped block runs Q Kᵀ and its row max only";
    if (!onDemand)
      os << "; K and V are copied for every block";
    else if (!speculate)
      os << ", and its V tile is not copied (V on demand)";
    else
      os << ", and its V tile is not copied (V on demand) unless it follows "
         << *speculate << " kept block" << (*speculate == 1 ? "" : "s")
         << " (copied before the votes)";
    // How far the load role streams K ahead of the V copies (decode: the
    // K ring's depth).
    int64_t kAhead = 0, kKept = 0, kRun = 0;
    kernel.walk([&](ws::TmaLoadOp l) {
      if (l.getTensor() == ws::Tensor::k &&
          l->getParentOfType<ws::KVLoopOp>()) {
        kAhead = std::max<int64_t>(kAhead, l.getAhead().value_or(0));
        kKept = int64_t(l.getKeptAhead().value_or(0));
        kRun = int64_t(l.getKeptRun().value_or(1));
      }
    });
    if (onDemand && kAhead > 1)
      os << "; K copied " << kAhead << " blocks ahead";
    if (onDemand && kKept)
      os << " (" << kKept << " while the last " << kRun << " block"
         << (kRun == 1 ? " was" : "s were") << " kept)";
    if (onDemand && kernel.getPageSize())
      os << "; a kept block's V pages are looked up in the block table at "
            "the copy";
    bool sinkSeed = false;
    kernel.walk([&](ws::TmaLoadOp l) { sinkSeed |= l.getSink(); });
    if (sinkSeed)
      os << "; each KV split votes against the running max of KV block 0's "
            "scores (the sink seed)";
    if (sinkSeed)
      os << (firstVote ? ", its first block too"
                       : "; each split's first block is kept unvoted");
    os << "\n";
    // The threshold the kernel applies, and where the cap takes over.
    const SparsityPolicy &sp = spec.sparsity;
    auto g = [](double v) { return llvm::format("%g", v); };
    os << "  BLASST threshold: lambda = ";
    if (sp.kind == SparsityKind::ScaleFactor)
      os << "min(a / L_kv, " << g(sp.lambdaMax) << ") with a = " << g(sp.value)
         << ": capped at lambda_max = " << g(sp.lambdaMax)
         << " for KV lengths below " << g(sp.value / sp.lambdaMax) << " keys"
         << (kernel.getPerSeqKv() ? " (L_kv: each sequence's own length)"
                                  : "");
    else
      os << "exp(" << g(sp.value) << ") = " << g(std::exp(sp.value))
         << " (lambda_max = " << g(sp.lambdaMax)
         << " caps a threshold passed at run time)";
    os << "\n";
  }
  return out;
}
