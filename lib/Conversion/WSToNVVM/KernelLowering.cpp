//===- KernelLowering.cpp - Kernel, roles and KV loops --------------------===//
//
// The kernel ABI, mbarrier initialisation, role dispatch, persistent tile
// loops, KV loops with what they carry, and turn barriers.
//
//===----------------------------------------------------------------------===//
#include "KernelLowering.h"

#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <limits>
#include <map>

using namespace mlir;
using namespace blasst;
using namespace blasst::ws;
using namespace blasst::ws::lowering;

//===----------------------------------------------------------------------===//
// Kernel skeleton
//===----------------------------------------------------------------------===//

LogicalResult KernelLowering::emitKernel(ModuleOp module) {
  b.setInsertionPointToEnd(module.getBody());
  StringRef smemName = "__blasst_dynamic_smem";
  if (!module.lookupSymbol(smemName))
    LLVM::GlobalOp::create(b, loc, LLVM::LLVMArrayType::get(b.getI8Type(), 0),
                           /*isConstant=*/false, LLVM::Linkage::External,
                           smemName, Attribute(), /*alignment=*/kTileAlign,
                           /*addrSpace=*/3);
  if (env.timeline && !module.lookupSymbol(kTimelineGlobal)) {
    // Zero-initialised (the cubin's .bss: no bytes in the file), visible to
    // cuModuleGetGlobal.
    OpBuilder gb(ctx);
    gb.setInsertionPointToEnd(module.getBody());
    auto ty = LLVM::LLVMArrayType::get(i64, kTimelineRows * kTimelineRowWords);
    auto global = LLVM::GlobalOp::create(
        gb, loc, ty, /*isConstant=*/false, LLVM::Linkage::External,
        kTimelineGlobal, Attribute(), /*alignment=*/8, /*addrSpace=*/1);
    gb.setInsertionPointToStart(gb.createBlock(&global.getInitializerRegion()));
    LLVM::ReturnOp::create(gb, loc,
                           LLVM::ZeroOp::create(gb, loc, ty).getResult());
  }

  // split_kv kernels (decode) take the workspace as parameter 14; with a KV
  // cache option the lengths, the block table and max_pages (15-17); kernels
  // that store O with TMA take 14-17 (null / 0) and O's tensor map as 18
  // (ABI 4), so each index means one thing and the PTX of every other
  // kernel is as before.
  bool oTensorMap =
      kernel.walk([](TmaStoreOp) { return WalkResult::interrupt(); })
          .wasInterrupted();
  // Persistent decode CTAs and splits that follow the lengths take the
  // launch's split count (or CTA budget) and batch as parameters 19 and 20
  // (a 1-D grid).
  bool persistentDecode =
      (kernel.getPersistent() || kernel.getBalancedSplits()) &&
      kernel.getQGroup();
  // cp_async K/V pipes: K's and V's pointers and strides (22-29, ABI 6),
  // with page_size the page pool's size (30).
  bool cpAsync = kernel.hasCpAsyncPipes();
  SmallVector<Type> params = abiParamTypes(
      cpAsync && pageSize       ? kNumPages + 1
      : cpAsync                 ? kNumCpAsyncParams
      : kernel.getMergeKernel() ? kMergeLaunch + 1
      : persistentDecode        ? kDecodeBatch + 1
      : oTensorMap              ? kTmO + 1
                                : kNumParams + (kernel.getSplitKv() ? 1 : 0) +
                         (hasKVCacheParams() ? kNumKVCacheParams : 0));
  auto fnType =
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), params);
  func = LLVM::LLVMFuncOp::create(b, loc, kernel.getSymName(), fnType);
  func->setAttr(NVVM::NVVMDialect::getKernelFuncAttrName(), b.getUnitAttr());
  int32_t threads = kernel.getNumWarps() * 32;
  func->setAttr(NVVM::NVVMDialect::getMaxntidAttrName(),
                b.getDenseI32ArrayAttr({threads, 1, 1}));
  // A register cap at entry is what lets setmaxnreg move registers.
  func->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                b.getI32IntegerAttr(int32_t(kernel.getCtasPerSM())));
  auto tmapType = LLVM::LLVMArrayType::get(b.getI8Type(), 128);
  SmallVector<unsigned> tensorMaps = {kTmQ, kTmK, kTmV};
  if (oTensorMap)
    tensorMaps.push_back(kTmO);
  for (unsigned i : tensorMaps) {
    func.setArgAttr(i, LLVM::LLVMDialect::getByValAttrName(),
                    TypeAttr::get(tmapType));
    func.setArgAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                    b.getI64IntegerAttr(64));
    func.setArgAttr(i, NVVM::NVVMDialect::getGridConstantAttrName(),
                    b.getUnitAttr());
  }
  for (unsigned i : {kO, kLse, kStats})
    func.setArgAttr(i, LLVM::LLVMDialect::getNoAliasAttrName(),
                    b.getUnitAttr());
  if (kernel.getSplitKv() || oTensorMap)
    func.setArgAttr(kWorkspace, LLVM::LLVMDialect::getNoAliasAttrName(),
                    b.getUnitAttr());

  Block *entry = func.addEntryBlock(b);
  b.setInsertionPointToStart(entry);
  smemBase = LLVM::AddressOfOp::create(b, loc, ptrSh, smemName);
  smemBase32 = LLVM::PtrToIntOp::create(b, loc, i32, smemBase);
  tid = NVVM::ThreadIdXOp::create(b, loc, i32);
  warp = divu(tid, c32(32));
  // Persistent prefill CTAs: the warp index through a shuffle from lane 0
  // (every thread runs this at entry, converged), so ptxas knows it is the
  // same in every lane of a warp and the role dispatch splits no warp
  // (CUTLASS's canonical_warp_idx_sync). Without it ptxas compiles the
  // roles' tile loops as possibly diverged and moves every wgmma descriptor
  // of the KV loop from the vector path by R2UR (session 46, head_dim 128:
  // 685 against 606 instructions a KV block with 128-key blocks, 745
  // against 665 with 176). The other kernels keep tid / 32: in the default
  // prefill kernel the shuffle changes LLVM's role dispatch (a switch,
  // values sunk into the roles) and ptxas serialises the wgmmas (C7511);
  // persistent and lean decode's loops do not change with it.
  if (kernel.getPersistent() && spec.phase == Phase::Prefill)
    warp = NVVM::ShflOp::create(b, loc, i32, c32(-1), warp, c32(0), c32(31),
                                NVVM::ShflKind::idx, UnitAttr())
               .getResult();
  lane = remu(tid, c32(32));
  mBlock = NVVM::BlockIdXOp::create(b, loc, i32);
  // reverse_tiles: the hardware hands out CTAs in ctaid.x order, so the
  // last query blocks (the longest causal tiles) go first and the short ones
  // fill the tail of the last wave.
  if (kernel.getReverseTiles() && !kernel.getPersistent())
    mBlock = sub(sub(NVVM::GridDimXOp::create(b, loc, i32), c32(1)), mBlock);
  head = NVVM::BlockIdYOp::create(b, loc, i32);
  batch = NVVM::BlockIdZOp::create(b, loc, i32);
  kvHead = divu(head, c32(spec.gqaRatio()));
  // balanced_splits: the CTA's sequence is known after its search below.
  if (hasKVCacheParams() && !kernel.getBalancedSplits())
    emitKVCacheStart();
  if (qGroup) {
    // Decode: grid y is the KV head; the tile's rows are the tokens of its
    // q_group q heads (head: the first of them). With split KV, grid x is
    // query tile + tiles x split.
    kvHead = head;
    head = mul(kvHead, c32(qGroup));
    numQTiles = divu(add(param(kSeqQ), c32(tokensPerTile - 1)),
                     c32(tokensPerTile));
    if (kernel.getSplitKv()) {
      if (kernel.getPersistent()) {
        // The launch's split count (parameter 19); emitPersistentRole sets
        // the rest per item.
        numSplits = param(kDecodeSplits);
        tileSplits = numSplits;
      } else if (kernel.getBalancedSplits()) {
        emitBalancedSplit();
      } else {
        Value x = NVVM::BlockIdXOp::create(b, loc, i32);
        numSplits = divu(NVVM::GridDimXOp::create(b, loc, i32), numQTiles);
        tileSplits = numSplits;
        setDecodeSplit(x);
      }
    }
  }
  if (kernel.getKvMulticast()) {
    ctaRank = NVVM::BlockInClusterIdXOp::create(b, loc, i32);
    partnerRank = arith::XOrIOp::create(b, loc, ctaRank, c32(1));
  }
  if (env.timeline) {
    Value first = cmp(arith::CmpIPredicate::eq, tid, c32(0));
    stamp(kTimelineEntry, first);
    stamp(kTimelineSmid, first, ext64(NVVM::SmIdOp::create(b, loc, i32)));
  }
  emitPrologue();
  // merge_kernel: the merge kernel may be scheduled as soon as every CTA of
  // this grid has started (it waits for this grid's end before reading).
  if (kernel.getMergeKernel())
    NVVM::GriddepcontrolOp::create(b, loc,
                                   NVVM::GridDepActionKind::launch_dependents);
  target.emitKernelStart();
  // Named barriers (the protocol allocates them: turns first, then one
  // per compute warpgroup); the hardware has 16, id 0 is __syncthreads.
  for (auto order : kernel.getBody().getOps<OrderOp>())
    for (Attribute r : order.getRoles())
      if (protocol.turnBarrier(order, cast<FlatSymbolRefAttr>(r).getValue())
              .id > 15)
        return order.emitOpError() << "needs more than 15 named barriers";
  if (target.regsPerWarpgroup()) {
    if (failed(emitRolesExclusive()))
      return failure();
  } else {
    for (auto role : kernel.getBody().getOps<RoleOp>())
      if (failed(emitRole(role)))
        return failure();
  }
  // A CTA of a pair may not exit while its partner can still arrive on its
  // barriers or multicast into its shared memory.
  if (kernel.getKvMulticast())
    clusterSync();
  target.emitKernelEnd();
  LLVM::ReturnOp::create(b, loc, ValueRange{});

  // What the host needs to launch it (blasst-compile writes <stem>.meta).
  func->setAttr("blasst.smem_bytes", b.getI64IntegerAttr(layout.totalBytes));
  func->setAttr("blasst.threads", b.getI64IntegerAttr(threads));
  if (kernel.getPersistent())
    func->setAttr("blasst.persistent", b.getUnitAttr());
  if (kernel.getLean())
    func->setAttr("blasst.lean", b.getUnitAttr());
  if (cpAsync)
    func->setAttr("blasst.kv_cp_async", b.getUnitAttr());
  if (kernel.getBalancedSplits())
    func->setAttr("blasst.balanced_splits", b.getUnitAttr());
  // The lean entry `<kernel>_lean` beside this one (convert-attn-to-ws
  // builds it; findLoweredKernel checks it is there), the short-sequence
  // entry `<kernel>_short` and the TMA entry `<kernel>_tma`.
  if (std::optional<DictionaryAttr> record = kernel.getSchedule()) {
    if (auto e = record->getAs<BoolAttr>("lean_entry"); e && e.getValue())
      func->setAttr("blasst.lean_entry", b.getUnitAttr());
    if (auto e = record->getAs<BoolAttr>("short_entry"); e && e.getValue())
      func->setAttr("blasst.short_entry", b.getUnitAttr());
    if (auto e = record->getAs<BoolAttr>("tma_entry"); e && e.getValue())
      func->setAttr("blasst.tma_entry", b.getUnitAttr());
  }
  if (kernel.getCtasPerSM() > 1)
    func->setAttr("blasst.ctas_per_sm",
                  b.getI64IntegerAttr(kernel.getCtasPerSM()));
  if (kernel.getKvMulticast()) {
    func->setAttr(NVVM::NVVMDialect::getClusterDimAttrName(),
                  b.getDenseI32ArrayAttr({2, 1, 1}));
    func->setAttr("blasst.cluster_m", b.getI32IntegerAttr(2));
  }
  if (qGroup)
    func->setAttr("blasst.q_group", b.getI64IntegerAttr(qGroup));
  if (kernel.getSplitKv()) {
    func->setAttr("blasst.split_kv", b.getUnitAttr());
    if (std::optional<uint64_t> chunk = kernel.getSplitChunk())
      func->setAttr("blasst.split_chunk", b.getI64IntegerAttr(int64_t(*chunk)));
    if (std::optional<DictionaryAttr> record = kernel.getSchedule())
      if (auto n = record->getAs<IntegerAttr>("kv_splits"))
        func->setAttr("blasst.kv_splits", b.getI64IntegerAttr(n.getInt()));
  }
  if (oTensorMap)
    func->setAttr("blasst.o_tensor_map", b.getUnitAttr());
  // Several Q tiles per CTA (sm_100a): each its own TMA box of
  // block_m / q_tiles rows, the runtime's Q (and O) box.
  int64_t qLoads = 0;
  kernel.walk([&](TmaLoadOp load) {
    if (load.getTensor() == Tensor::q)
      ++qLoads;
  });
  if (qLoads > 1)
    func->setAttr("blasst.q_tiles", b.getI64IntegerAttr(qLoads));
  // The sink seed changes which blocks a split keeps (the host's skip
  // model must know).
  if (kernel
          .walk([](TmaLoadOp load) {
            return load.getSink() ? WalkResult::interrupt()
                                  : WalkResult::advance();
          })
          .wasInterrupted())
    func->setAttr("blasst.sink_seed", b.getUnitAttr());
  // So does the vote on each split's first block (published or not).
  bool votesFirst = false;
  kernel.walk([&](VoteOp v) { votesFirst |= v.votesFirstBlock(); });
  if (votesFirst)
    func->setAttr("blasst.vote_first_block", b.getUnitAttr());
  if (kernel.getPerSeqKv())
    func->setAttr("blasst.per_seq_kv", b.getUnitAttr());
  if (pageSize)
    func->setAttr("blasst.page_size", b.getI64IntegerAttr(pageSize));
  func->setAttr("blasst.block_m", b.getI64IntegerAttr(blockM));
  func->setAttr("blasst.block_n", b.getI64IntegerAttr(blockN));
  func->setAttr("blasst.spec", kernel.getSpecAttr());
  // A second entry of another kernel: launched instead of it, its merge
  // kernel shared (findLoweredKernel checks both).
  if (FlatSymbolRefAttr of = kernel.getEntryOfAttr())
    func->setAttr("blasst.entry_of", b.getStringAttr(of.getValue()));
  if (kernel.getMergeKernel()) {
    func->setAttr("blasst.merge_kernel", b.getUnitAttr());
    if (!kernel.getEntryOfAttr())
      return target.emitMergeKernel(module);
  }
  return success();
}

void KernelLowering::emitPrologue() {
  // Thread 0 initialises every mbarrier; the fences make the init visible to
  // the other threads and to the TMA unit (async proxy) before anyone uses it.
  scf::IfOp init = openIf(cmp(arith::CmpIPredicate::eq, tid, c32(0)));
  for (auto pipe : kernel.getBody().getOps<PipeOp>()) {
    // The arrivals that complete a phase (the protocol; with kv_multicast
    // the partner CTA's consumer warps also release K/V stages here, lane 0
    // of each, emitRelease).
    // A cp_async stage: one arrival per producer thread (cp.async.mbarrier.
    // arrive.noinc once its copies land).
    const PipeInfo &info = protocol.pipe(pipe);
    int64_t fullCount =
        info.cpAsyncThreads ? info.cpAsyncThreads : info.fullArrivals;
    int64_t emptyCount = protocol.pipe(pipe).emptyArrivals;
    for (int64_t s = 0; s < int64_t(pipe.getDepth()); ++s) {
      NVVM::MBarrierInitOp::create(b, loc, barrier(pipe, true, c32(s)),
                                   c32(fullCount), Value());
      NVVM::MBarrierInitOp::create(b, loc, barrier(pipe, false, c32(s)),
                                   c32(emptyCount), Value());
    }
  }
  if (layout.voteBarrier >= 0)
    for (int64_t parity = 0; parity < 2; ++parity)
      NVVM::MBarrierInitOp::create(
          b, loc, smemPtr(c32(layout.voteBarrier + 8 * parity)),
          c32(int64_t(layout.voterIndex.size())), Value());
  NVVM::FenceMbarrierInitOp::create(b, loc);
  NVVM::FenceProxyOp::create(
      b, loc, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
  b.setInsertionPointAfter(init);
  // Decode with padding rows: zeroed before the barrier below.
  zeroQPaddingRows(kernel.getNumWarps() * 32);
  // A pair's barriers are initialised before either CTA arrives on the
  // other's or multicasts into it.
  if (kernel.getKvMulticast())
    clusterSync();
  else
    NVVM::Barrier0Op::create(b, loc);
}

void KernelLowering::clusterSync() {
  NVVM::ClusterArriveOp::create(b, loc, b.getUnitAttr());
  NVVM::ClusterWaitOp::create(b, loc, b.getUnitAttr());
}

Value KernelLowering::numKVBlocks() {
  // ceil(seqKV / blockN); causal (bottom-right): keys up to the last row's
  // diagonal, (mBlock + 1) * blockM + seqKV - seqQ.
  // Split KV: the CTA's share (computed once, emitKernel).
  if (kvCount)
    return kvCount;
  Value seqKV = seqKVLen();
  Value n = divu(add(seqKV, c32(blockN - 1)), c32(blockN));
  if (!spec.causal)
    return n;
  // Decode: the tile's last token is (mBlock + 1) * tokensPerTile - 1.
  Value lastKey =
      sub(add(mul(add(mBlock, c32(1)), c32(qGroup ? tokensPerTile : blockM)),
              seqKV),
          param(kSeqQ));
  lastKey = arith::MaxSIOp::create(b, loc, lastKey, c32(0));
  Value nCausal = divu(add(lastKey, c32(blockN - 1)), c32(blockN));
  return arith::MinUIOp::create(b, loc, n, nCausal);
}

void KernelLowering::setDecodeSplit(Value x) {
  split = divu(x, numQTiles);
  mBlock = remu(x, numQTiles);
  setSplitRange();
}

void KernelLowering::emitBalancedSplit() {
  Value perBatch = mul(numQTiles, c32(spec.numKVHeads));
  Value batches = param(kDecodeBatch);
  Value budget = param(kDecodeSplits);
  Value cta = NVVM::BlockIdXOp::create(b, loc, i32);
  auto umax = [&](Value x, Value y) {
    return arith::MaxUIOp::create(b, loc, x, y).getResult();
  };
  auto ceilDiv = [&](Value x, Value y) {
    return divu(add(x, sub(y, c32(1))), y);
  };
  // Every thread of the CTA runs this at entry (full, converged warps), so
  // each warp reads the lengths 32 at a time, a lane a sequence: one load
  // latency per 32 sequences, the sums and the search by shuffles.
  auto shfl = [&](NVVM::ShflKind kind, Value v, Value lanes) {
    int32_t clamp = kind == NVVM::ShflKind::up ? 0 : 31;
    return NVVM::ShflOp::create(b, loc, i32, c32(-1), v, lanes, c32(clamp),
                                kind, UnitAttr())
        .getResult();
  };
  // The length of lane `lane`'s sequence of the 32 from `first`, at most
  // the launch's bound, seq_kv (then at most C + tiles CTAs take part,
  // whatever the lengths); 0 past the batch.
  auto laneLen = [&](Value first) {
    Value seq = add(first, lane);
    Value valid = cmp(arith::CmpIPredicate::ult, seq, batches);
    Value safe = arith::MinUIOp::create(b, loc, seq, sub(batches, c32(1)));
    return select(valid, seqLenOf(safe), c32(0));
  };
  // Budget 1: one split per tile (per = W); a negative budget -S: S splits
  // per tile whatever the lengths (the split grid's mapping, which the
  // runtime takes past two waves, where the hardware's dispatch balances);
  // no pass over the lengths either way.
  Value search = cmp(arith::CmpIPredicate::sgt, budget, c32(1));
  auto ifOp = scf::IfOp::create(b, loc, TypeRange{i32, i32, i32, i32, i32},
                                search, /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    // Pass 1: W, the tiles' blocks; the first 32 sequences' lengths carried
    // on for pass 2 (one load latency fewer up to 32 sequences).
    auto sum = scf::ForOp::create(b, loc, c32(0), batches, c32(32),
                                  ValueRange{c32(0), c32(0)});
    {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(sum.getBody());
      Value first = sum.getInductionVar();
      Value mine = laneLen(first), v = blocksOfLen(mine);
      for (int32_t d = 16; d >= 1; d /= 2)
        v = add(v, shfl(NVVM::ShflKind::bfly, v, c32(d)));
      auto args = sum.getRegionIterArgs();
      scf::YieldOp::create(
          b, loc,
          ValueRange{add(args[0], v),
                     select(cmp(arith::CmpIPredicate::eq, first, c32(0)), mine,
                            args[1])});
    }
    Value firstLens = sum.getResult(1);
    Value w = mul(perBatch, sum.getResult(0));
    Value per = umax(ceilDiv(w, budget), c32(1));
    // Pass 2: the sequence whose tiles' splits hold CTA `cta` (its first
    // CTA and split count), and how many CTAs the splits take in all.
    // Sequence b's tiles take s_b = max(1, ceil(U_b / per)) splits each:
    // an inclusive scan of the 32 lanes' CTAs, the first lane past `cta`
    // by ballot. Its length comes from the lane that found it (no second
    // load before the CTA's first copy).
    auto walk =
        scf::ForOp::create(b, loc, c32(0), batches, c32(32),
                           ValueRange{c32(0), batches, c32(0), c32(1), c32(0)});
    {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(walk.getBody());
      Value first = walk.getInductionVar();
      auto args = walk.getRegionIterArgs();
      Value prefix = args[0];
      Value valid = cmp(arith::CmpIPredicate::ult, add(first, lane), batches);
      auto cached = scf::IfOp::create(
          b, loc, TypeRange{i32}, cmp(arith::CmpIPredicate::eq, first, c32(0)),
          /*withElseRegion=*/true);
      {
        OpBuilder::InsertionGuard g2(b);
        b.setInsertionPointToStart(&cached.getThenRegion().front());
        scf::YieldOp::create(b, loc, ValueRange{firstLens});
        b.setInsertionPointToStart(&cached.getElseRegion().front());
        scf::YieldOp::create(b, loc, ValueRange{laneLen(first)});
      }
      Value len = cached.getResult(0);
      Value blocks = blocksOfLen(len);
      Value s = select(valid, umax(ceilDiv(blocks, per), c32(1)), c32(0));
      Value incl = mul(perBatch, s);
      for (int32_t d = 1; d < 32; d *= 2) {
        Value up = shfl(NVVM::ShflKind::up, incl, c32(d));
        incl = select(cmp(arith::CmpIPredicate::uge, lane, c32(d)),
                      add(incl, up), incl);
      }
      Value hit = arith::AndIOp::create(
          b, loc, valid,
          cmp(arith::CmpIPredicate::ult, cta, add(prefix, incl)));
      Value mask = NVVM::VoteSyncOp::create(b, loc, i32, c32(-1), hit,
                                            NVVM::VoteSyncKind::ballot);
      Value at = LLVM::CountTrailingZerosOp::create(b, loc, i32, mask, false);
      Value sAt = shfl(NVVM::ShflKind::idx, s, at);
      Value lenAt = shfl(NVVM::ShflKind::idx, len, at);
      Value inclAt = shfl(NVVM::ShflKind::idx, incl, at);
      Value found = arith::AndIOp::create(
          b, loc, cmp(arith::CmpIPredicate::eq, args[1], batches),
          cmp(arith::CmpIPredicate::ne, mask, c32(0)));
      Value total = shfl(NVVM::ShflKind::idx, incl, c32(31));
      scf::YieldOp::create(
          b, loc,
          ValueRange{add(prefix, total), select(found, add(first, at), args[1]),
                     select(found, sub(add(prefix, inclAt), mul(perBatch, sAt)),
                            args[2]),
                     select(found, sAt, args[3]),
                     select(found, lenAt, args[4])});
    }
    scf::YieldOp::create(b, loc, walk.getResults());
    b.setInsertionPointToStart(&ifOp.getElseRegion().front());
    Value uniform = arith::MaxSIOp::create(b, loc, c32(1), sub(c32(0), budget));
    Value perSeq = mul(perBatch, uniform);
    Value seq = divu(cta, perSeq);
    scf::YieldOp::create(
        b, loc,
        ValueRange{mul(perSeq, batches),
                   arith::MinUIOp::create(b, loc, seq, batches),
                   mul(seq, perSeq), uniform, c32(0)});
  }
  Value used = ifOp.getResult(0);
  // CTAs past the tiles' splits (at most C + tiles take part) return.
  Block *entryBlock = b.getInsertionBlock();
  Region *body = entryBlock->getParent();
  Block *live = b.createBlock(body, body->end());
  Block *exit = b.createBlock(body, body->end());
  LLVM::ReturnOp::create(b, loc, ValueRange{});
  b.setInsertionPointToEnd(entryBlock);
  LLVM::CondBrOp::create(b, loc, cmp(arith::CmpIPredicate::ult, cta, used),
                         live, exit);
  b.setInsertionPointToStart(live);
  Value s = ifOp.getResult(3);
  Value inBatch = sub(cta, ifOp.getResult(2));
  Value tileInBatch = divu(inBatch, s);
  batch = ifOp.getResult(1);
  kvHead = divu(tileInBatch, numQTiles);
  head = mul(kvHead, c32(qGroup));
  mBlock = remu(tileInBatch, numQTiles);
  split = remu(inBatch, s);
  numSplits = tileSplits = s;
  // The tile's first slot (its splits' CTAs are consecutive).
  leanFirstCta = ext64(sub(cta, split));
  // The search's length, else (budgets 1 and -S) the sequence's, loaded
  // here where the CTA is known to be live (batch < the batch count).
  auto len = scf::IfOp::create(b, loc, TypeRange{i32}, search,
                               /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&len.getThenRegion().front());
    scf::YieldOp::create(b, loc, ValueRange{ifOp.getResult(4)});
    b.setInsertionPointToStart(&len.getElseRegion().front());
    scf::YieldOp::create(b, loc, ValueRange{seqLenOf(batch)});
  }
  emitKVCacheStart(len.getResult(0));
  setSplitRange();
}

void KernelLowering::setSplitRange() {
  // The tile's blocks (numKVBlocks reads kvCount once it is set).
  kvCount = kvBegin = kvEndKey = Value();
  Value total = numKVBlocks();
  if (std::optional<uint64_t> chunk = kernel.getSplitChunk()) {
    // Interleaved: chunks of C blocks in turn, split s takes chunks s,
    // s + S, ... of the tile's ceil(total / C); the last chunk may be
    // short (by C x chunks - total blocks). No split end to mask: a
    // look-ahead past the split's last block is past the tile's last.
    splitChunk = int64_t(*chunk);
    Value c = c32(splitChunk);
    Value chunks = divu(add(total, c32(splitChunk - 1)), c);
    Value has = cmp(arith::CmpIPredicate::ugt, chunks, split);
    Value mine = select(
        has, divu(add(sub(chunks, split), sub(numSplits, c32(1))), numSplits),
        c32(0));
    Value ownsLast =
        arith::AndIOp::create(b, loc, has,
                              cmp(arith::CmpIPredicate::eq,
                                  remu(sub(chunks, c32(1)), numSplits), split));
    Value shortBy = select(ownsLast, sub(mul(chunks, c), total), c32(0));
    kvCount = sub(mul(mine, c), shortBy);
  } else {
    // The split's KV blocks: an even share of the tile's blocks (the
    // last splits may get fewer, or none: then O = 0 and LSE = -inf).
    Value per = divu(add(total, sub(numSplits, c32(1))), numSplits);
    kvBegin = arith::MinUIOp::create(b, loc, mul(split, per), total);
    kvCount = arith::MinUIOp::create(b, loc, sub(total, kvBegin), per);
    kvEndKey = arith::MinUIOp::create(b, loc, seqKVLen(),
                                      mul(add(kvBegin, kvCount), c32(blockN)));
  }
}

LogicalResult KernelLowering::emitRole(RoleOp role) {
  if (failed(target.checkRole(role)))
    return failure();
  int64_t begin = role.getWarpBegin(), end = role.getWarpEnd();
  Value inRole = arith::AndIOp::create(
      b, loc, cmp(arith::CmpIPredicate::uge, warp, c32(begin)),
      cmp(arith::CmpIPredicate::ult, warp, c32(end)));
  OpBuilder::InsertionGuard guard(b);
  openIf(inRole);

  // setmaxnreg moves registers between warpgroups relative to the cap the
  // kernel starts with (65536 / threads, rounded down to a multiple of 8).
  if (std::optional<int64_t> regs = role.getRegs()) {
    int64_t start =
        (kernel.getRegistersPerCTA() / (kernel.getNumWarps() * 32)) / 8 * 8;
    if (*regs != start)
      NVVM::SetMaxRegisterOp::create(
          b, loc, b.getI32IntegerAttr(*regs),
          NVVM::SetMaxRegisterActionAttr::get(
              ctx, *regs > start ? NVVM::SetMaxRegisterAction::increase
                                 : NVVM::SetMaxRegisterAction::decrease));
  }

  RoleState st;
  st.role = role;
  st.threadInRole = sub(tid, c32(begin * 32));
  VoteOp vote;
  role.walk([&](VoteOp v) { vote = v; });
  // Who counts the statistics is in the IR: a voter with `stats`, or the
  // load role whose ws.await_vote has `stats` (it reads every vote anyway).
  bool voter = vote && (role.getKind() == RoleKind::compute ||
                        role.getKind() == RoleKind::softmax);
  st.stats = voter && vote.getStats();
  role.walk([&](AwaitVoteOp a) {
    st.speculateAfter = int64_t(a.getSpeculateAfter().value_or(0));
    st.countVotes = a.getStats();
  });
  if (!kernel.getPersistent())
    startTile(st);
  st.rowBegin = role.getRowBegin().value_or(0);
  st.allThreadsLoad =
      role.getKind() == RoleKind::load &&
      llvm::any_of(kernel.getBody().getOps<PipeOp>(), [&](PipeOp p) {
        return p.getCpAsync() && p.getProducer() == role.getSymName();
      });
  if (st.allThreadsLoad) {
    // cp_async pipes: every thread of the role copies its share and
    // arrives; TMA copies and their releases stay with the first thread
    // (emitTmaLoad, emitRelease).
  } else if (role.getKind() == RoleKind::load) {
    // One thread issues every TMA copy and drives the pipes.
    openIf(cmp(arith::CmpIPredicate::eq, tid, c32(begin * 32)));
  } else if (role.getKind() == RoleKind::mma) {
    // One thread issues every tcgen05.mma and commits them (sm_100a).
    openIf(cmp(arith::CmpIPredicate::eq, tid, c32(begin * 32)));
  } else if (role.getKind() == RoleKind::compute || voter) {
    st.barrierId = protocol.roleBarrier(role).id;
    if (st.barrierId > 15)
      return role.emitOpError() << "needs more than 15 named barriers";
    if (vote) {
      // log2(lambda): fixed, or log2(a) - log2(L_kv) for this sequence.
      st.threshold = launchThreshold();
      if (spec.sparsity.kind == SparsityKind::ScaleFactor) {
        Value lkv = arith::UIToFPOp::create(b, loc, f32, seqKVLen());
        Value log2L =
            LLVM::CallIntrinsicOp::create(
                b, loc, f32, b.getStringAttr("llvm.nvvm.lg2.approx.f"),
                ValueRange{lkv})
                .getResult(0);
        st.threshold = fsub(st.threshold, log2L);
      }
      // lambda <= lambda_max (at most 1): above 1 a block whose maximum
      // exceeds the running maximum, the one that dominates the softmax,
      // would be skipped (a / L_kv with L_kv < a, or a threshold passed at
      // run time). Applied to this sequence's threshold. A NaN threshold
      // (a device float the host never sees: log2 of a scale factor of 0 or
      // below, a NaN written there) skips nothing: minnum alone would turn
      // it into the cap, the most skipping lambda_max allows.
      Value t = st.threshold;
      Value capped = arith::MinNumFOp::create(
          b, loc, t, cf(float(spec.sparsity.log2Cap())));
      Value isNum =
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::ORD, t, t);
      st.threshold = arith::SelectOp::create(
          b, loc, isNum, capped, cf(-std::numeric_limits<float>::infinity()));
    }
  }
  // --timeline: the load role and the first compute role are stamped.
  if (env.timeline && role.getKind() == RoleKind::load) {
    st.timelineBase = kTimelineLoad;
  } else if (env.timeline && role.getKind() == RoleKind::compute) {
    RoleOp firstCompute;
    for (auto r : kernel.getBody().getOps<RoleOp>())
      if (r.getKind() == RoleKind::compute &&
          (!firstCompute || r.getWarpBegin() < firstCompute.getWarpBegin()))
        firstCompute = r;
    if (firstCompute == role)
      st.timelineBase = kTimelineCompute;
  }
  if (kernel.getPersistent())
    return emitPersistentRole(role, st);
  stampItem(st, /*end=*/false);
  Block *item = b.getInsertionBlock();
  if (failed(emitSteps(role.getBody().front(), st)))
    return failure();
  // Steps may leave the builder inside an scf.if they opened (a decode
  // split's merge): the item ends with the role's block.
  b.setInsertionPoint(item->getTerminator());
  stampItem(st, /*end=*/true);
  return success();
}

/// The threshold argument: the float at log2ThresholdPtr when that is not
/// null (read when the kernel runs, so a replayed CUDA graph takes the value
/// in memory at replay), else the by-value log2Threshold.
Value KernelLowering::launchThreshold() {
  Value ptr = param(kLog2ThresholdPtr);
  Value isNull = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, ptr,
                                      LLVM::ZeroOp::create(b, loc, ptrGen));
  auto ifOp = scf::IfOp::create(b, loc, TypeRange{f32}, isNull,
                                /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  scf::YieldOp::create(b, loc, ValueRange{param(kLog2Threshold)});
  b.setInsertionPointToStart(ifOp.elseBlock());
  Value loaded = LLVM::LoadOp::create(b, loc, f32, ptr, /*alignment=*/4);
  scf::YieldOp::create(b, loc, ValueRange{loaded});
  return ifOp.getResult(0);
}

/// Whether a role carries the running state (O, m, l) through its kv_loop:
/// sm_90a's compute roles, sm_100a's softmax roles (m and l of their rows).
static bool carriesRunningState(RoleOp role) {
  return role.getKind() == RoleKind::compute ||
         role.getKind() == RoleKind::softmax;
}

/// The state a role starts each tile with: the tile's KV block count, and
/// for compute roles O = 0, m = -inf, l = 0 and zero block counters.
void KernelLowering::startTile(RoleState &st) {
  st.inLoop = st.afterLoop = false;
  st.s = st.sNext = st.skip = st.scoresReal = Value();
  st.pRegs.clear();
  st.qRegs.clear();
  st.inflight.clear();
  for (int i = 0; i < 2; ++i)
    st.mBlock[i] = st.mPart[i] = st.mUse[i] = st.corr[i] = Value();
  st.numBlocks = numKVBlocks();
  if (st.countVotes)
    st.voteSkips = c32(0);
  if (!carriesRunningState(st.role))
    return;
  target.initRunningState(st);
  if (st.stats)
    st.skipped = c32(0);
}

/// A persistent CTA walks the (query block, q head) tiles of its batch entry
/// (grid z), ctaid.x, ctaid.x + nctaid.x, ..., in L2 sections of KV heads and
/// snake rounds (below), the last query blocks first with reverse_tiles (the
/// longest causal tiles) in every other section. Decode: the launch's
/// (batch, KV head, query tile, split) items on a 1-D grid (the split count
/// and batch are parameters 19 and 20); the splits of a tile are consecutive
/// items, so they run on different CTAs at once.
LogicalResult KernelLowering::emitPersistentRole(RoleOp role, RoleState &st) {
  if (kernel.getLean())
    return emitLeanItems(role, st);
  if (qGroup) {
    Value perHead = mul(numQTiles, numSplits);
    Value perBatch = mul(perHead, c32(spec.numKVHeads));
    Value items = mul(param(kDecodeBatch), perBatch);
    return emitItemLoop(role, st, items, [&](Value item) {
      batch = divu(item, perBatch);
      Value inBatch = remu(item, perBatch);
      kvHead = divu(inBatch, perHead);
      head = mul(kvHead, c32(qGroup));
      // Item split + S x query tile is x = query tile + query tiles x
      // split.
      Value inHead = remu(inBatch, perHead);
      setDecodeSplit(add(divu(inHead, numSplits),
                         mul(remu(inHead, numSplits), numQTiles)));
    });
  }
  Value numMBlocks = divu(add(param(kSeqQ), c32(blockM - 1)), c32(blockM));
  Value tiles = mul(numMBlocks, c32(spec.numQHeads));
  // L2 sections: the K/V of `secKV` KV heads (all batch entries, grid z, at
  // once) fit kPersistentL2KiB; a section's tiles come before the next's.
  // Without them the CTAs of an entry spread over every head at once: at
  // 16K x 16 heads the K/V working set is 128 MB and half the L2 reads miss
  // (ncu, session 42).
  int64_t elemBytes = elemTy.getIntOrFloatBitWidth() / 8;
  Value kvKiB = mul(divu(add(param(kSeqKV), c32(1023)), c32(1024)),
                    c32(int64_t(spec.headDim + spec.headDimV) * elemBytes));
  Value budget = divu(c32(kPersistentL2KiB),
                      NVVM::GridDimZOp::create(b, loc, i32).getResult());
  Value fit = divu(budget, select(cmp(arith::CmpIPredicate::eq, kvKiB, c32(0)),
                                  c32(1), kvKiB));
  Value secKV =
      select(cmp(arith::CmpIPredicate::ult, fit, c32(1)), c32(1),
             select(cmp(arith::CmpIPredicate::ugt, fit, c32(spec.numKVHeads)),
                    c32(spec.numKVHeads), fit));
  Value secQ = mul(secKV, c32(spec.gqaRatio()));
  Value perSec = mul(numMBlocks, secQ);
  Value ctas = NVVM::GridDimXOp::create(b, loc, i32);
  return emitItemLoop(role, st, tiles, [&](Value tile) {
    // Snake rounds: the CTAs take round k's nctaid.x consecutive tiles left
    // to right when k is even, right to left when odd (full rounds only), so
    // along a section's descending causal lengths every CTA's sum is about
    // equal.
    Value round = divu(tile, ctas);
    Value first = mul(round, ctas);
    Value flip = arith::AndIOp::create(
        b, loc,
        cmp(arith::CmpIPredicate::ne,
            arith::AndIOp::create(b, loc, round, c32(1)), c32(0)),
        cmp(arith::CmpIPredicate::ule, add(first, ctas), tiles));
    Value t = select(flip, sub(add(first, sub(ctas, c32(1))), sub(tile, first)),
                     tile);
    // Within a section, the heads (those sharing a KV head adjacent) go
    // fastest, then the query blocks, in the opposite direction in every
    // other section (descending causal lengths, then ascending: the snake
    // stays balanced across the sections' seams); the last section may be
    // short.
    Value sec = divu(t, perSec);
    Value r = sub(t, mul(sec, perSec));
    Value secHead = mul(sec, secQ);
    Value left = sub(c32(spec.numQHeads), secHead);
    Value heads =
        select(cmp(arith::CmpIPredicate::ult, left, secQ), left, secQ);
    Value m = divu(r, heads);
    head = add(secHead, sub(r, mul(m, heads)));
    Value last = sub(numMBlocks, c32(1));
    Value oddSec = cmp(arith::CmpIPredicate::ne,
                       arith::AndIOp::create(b, loc, sec, c32(1)), c32(0));
    if (kernel.getReverseTiles())
      oddSec = notI1(oddSec);
    mBlock = select(oddSec, sub(last, m), m);
    kvHead = divu(head, c32(spec.gqaRatio()));
  });
}

/// Lean decode: the W = sum over tiles of U_t blocks (U_t = ceil(seq_kv /
/// block_n) of the tile's sequence: the launch's seq_kv, or with per_seq_kv
/// its own length; tiles in workspace order, tile t's blocks from its
/// prefix B_t) in shares of per = max(1, ceil(W / C)) for the C = nctaid.x
/// CTAs; CTA c takes [c per, min((c + 1) per, W)), as parts of the tiles it
/// touches: the part of tile t is its blocks [max(c per, B_t), min((c + 1)
/// per, B_t + U_t)) - B_t, clipped to the tile's own count (causal tiles
/// may have fewer), split c - first(t) of last(t) - first(t) + 1, last(t)
/// = (B_t + U_t - 1) / per (0 when B_t + U_t = 0), first(t) = B_t / per, or
/// last(t) for an empty tile (a sequence of length 0: the CTA whose share
/// holds the block before it writes its empty result). Both are monotone
/// in t, so a CTA's tiles are t0 .. t1 - 1: t0 the first with last(t) >= c,
/// t1 the first with first(t) > c. With per_seq_kv the prefixes come from
/// the lengths: two passes over the batch before the loop (the sum W, then
/// t0 and t1), and the loop carries the prefix of its last tile's sequence
/// forward to the next tile's.
LogicalResult KernelLowering::emitLeanItems(RoleOp role, RoleState &st) {
  Value perBatch = mul(numQTiles, c32(spec.numKVHeads));
  Value batches = param(kDecodeBatch);
  Value tiles = mul(batches, perBatch);
  Value ctas = NVVM::GridDimXOp::create(b, loc, i32);
  Value cta = NVVM::BlockIdXOp::create(b, loc, i32);
  auto umax = [&](Value x, Value y) {
    return arith::MaxUIOp::create(b, loc, x, y).getResult();
  };
  auto umin = [&](Value x, Value y) {
    return arith::MinUIOp::create(b, loc, x, y).getResult();
  };
  auto ceilDiv = [&](Value x, Value y) {
    return divu(add(x, sub(y, c32(1))), y);
  };
  // The part of the tile that starts at block `tileBegin` of the launch
  // and has `u` blocks: sets split, tileSplits, the lean slots and the
  // tile's KV range.
  auto setPart = [&](Value tileBegin, Value u, Value begin, Value end,
                     Value per) {
    Value tileEnd = add(tileBegin, u);
    Value lastCta = select(cmp(arith::CmpIPredicate::eq, tileEnd, c32(0)),
                           c32(0), divu(sub(tileEnd, c32(1)), per));
    Value firstCta = select(cmp(arith::CmpIPredicate::ugt, u, c32(0)),
                            divu(tileBegin, per), lastCta);
    Value from = umax(begin, tileBegin);
    Value lo = sub(from, tileBegin);
    Value hi = sub(umax(umin(end, tileEnd), from), tileBegin);
    split = sub(cta, firstCta);
    tileSplits = add(sub(lastCta, firstCta), c32(1));
    leanSlot = ext64(select(cmp(arith::CmpIPredicate::ule, tileBegin, begin),
                            cta, add(ctas, cta)));
    leanFirstCta = ext64(firstCta);
    leanZeroOffset =
        select(cmp(arith::CmpIPredicate::eq, mul(firstCta, per), tileBegin),
               c32(0), ctas);
    // The tile's own blocks (a causal tile may have fewer than U).
    kvCount = kvBegin = kvEndKey = Value();
    Value own = numKVBlocks();
    kvBegin = umin(lo, own);
    kvCount = sub(umin(hi, own), kvBegin);
    kvEndKey = umin(seqKVLen(), mul(add(kvBegin, kvCount), c32(blockN)));
  };
  auto setTile = [&](Value t) {
    batch = divu(t, perBatch);
    Value inBatch = remu(t, perBatch);
    kvHead = divu(inBatch, numQTiles);
    head = mul(kvHead, c32(qGroup));
    mBlock = remu(inBatch, numQTiles);
    return inBatch;
  };

  if (!kernel.getPerSeqKv()) {
    Value u = ceilDiv(param(kSeqKV), c32(blockN));
    Value total = mul(tiles, u);
    Value per = umax(ceilDiv(total, ctas), c32(1));
    Value begin = umin(mul(cta, per), total);
    Value end = umin(add(begin, per), total);
    Value any = cmp(arith::CmpIPredicate::ult, begin, end);
    // Tiles t0 .. t1 - 1 (none when the share is empty: t0 = t1).
    Value t0 = divu(begin, u);
    Value t1 = select(any, add(divu(sub(end, c32(1)), u), c32(1)), t0);
    return emitItemLoop(role, st, t0, t1, c32(1), [&](Value t) {
      setTile(t);
      // A paged cache: the part's table row (KVCache.cpp).
      if (pageSize)
        emitKVCacheStart();
      setPart(mul(t, u), u, begin, end, per);
    });
  }

  // Per-sequence lengths. Pass 1: W.
  Value total = mul(perBatch, sumSeqBlocks(batches));
  Value per = umax(ceilDiv(total, ctas), c32(1));
  Value cPer = mul(cta, per), nextPer = add(cPer, per);
  Value begin = umin(cPer, total);
  Value end = umin(add(begin, per), total);
  // Pass 2: t0, t1 and the prefix (in blocks) of t0's sequence. Within
  // sequence b (prefix B = perBatch x the blocks before it, U blocks a
  // tile), tile r has last >= c from r = floor((c per - B) / U) (0 when c
  // per <= B), and first > c from r = ceil(((c + 1) per - B) / U); its
  // empty tiles (U = 0) all have first = last = (B - 1) / per.
  auto search =
      scf::ForOp::create(b, loc, c32(0), batches, c32(1),
                         ValueRange{c32(0), tiles, tiles, c32(0), c32(0)});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(search.getBody());
    Value bb = search.getInductionVar();
    auto args = search.getRegionIterArgs();
    Value blocksBefore = args[0], t0 = args[1], t1 = args[2];
    Value u = seqBlocksOf(bb);
    Value base = mul(perBatch, blocksBefore);
    Value uSafe = umax(u, c32(1));
    Value nonEmpty = cmp(arith::CmpIPredicate::ugt, u, c32(0));
    Value emptyOwner = select(cmp(arith::CmpIPredicate::eq, base, c32(0)),
                              c32(0), divu(sub(base, c32(1)), per));
    Value r0 = select(nonEmpty,
                      select(cmp(arith::CmpIPredicate::ugt, cPer, base),
                             divu(sub(cPer, base), uSafe), c32(0)),
                      select(cmp(arith::CmpIPredicate::uge, emptyOwner, cta),
                             c32(0), perBatch));
    Value r1 = select(nonEmpty,
                      select(cmp(arith::CmpIPredicate::ugt, nextPer, base),
                             ceilDiv(sub(nextPer, base), uSafe), c32(0)),
                      select(cmp(arith::CmpIPredicate::ugt, emptyOwner, cta),
                             c32(0), perBatch));
    Value first = mul(bb, perBatch);
    Value found0 =
        arith::AndIOp::create(b, loc, cmp(arith::CmpIPredicate::eq, t0, tiles),
                              cmp(arith::CmpIPredicate::ult, r0, perBatch));
    Value found1 =
        arith::AndIOp::create(b, loc, cmp(arith::CmpIPredicate::eq, t1, tiles),
                              cmp(arith::CmpIPredicate::ult, r1, perBatch));
    scf::YieldOp::create(
        b, loc,
        ValueRange{add(blocksBefore, u), select(found0, add(first, r0), t0),
                   select(found1, add(first, r1), t1),
                   select(found0, bb, args[3]), select(found0, base, args[4])});
  }
  Value t0 = search.getResult(1), t1 = search.getResult(2);
  return emitItemLoop(
      role, st, t0, t1, c32(1),
      [&](Value t) {
        Value inBatch = setTile(t);
        // The prefix of this tile's sequence: the carried one (of the
        // previous tile's, or t0's) plus the sequences between.
        Value fromB = itemCarry[0], fromBase = itemCarry[1];
        auto walk = scf::ForOp::create(b, loc, fromB, batch, c32(1),
                                       ValueRange{fromBase});
        {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(walk.getBody());
          scf::YieldOp::create(
              b, loc,
              ValueRange{
                  add(walk.getRegionIterArgs()[0],
                      mul(perBatch, seqBlocksOf(walk.getInductionVar())))});
        }
        Value base = walk.getResult(0);
        itemCarryNext = {batch, base};
        // kvLen (this sequence's length), and a paged cache's table row.
        emitKVCacheStart();
        Value u = ceilDiv(seqKVLen(), c32(blockN));
        setPart(add(base, mul(inBatch, u)), u, begin, end, per);
      },
      ValueRange{search.getResult(3), search.getResult(4)});
}

/// The loop of a persistent CTA over items ctaid.x, ctaid.x + nctaid.x, ...
/// below `items`: `setItem` sets the item's tile (mBlock, head, kvHead,
/// batch, the split) before its steps. Every role walks the same items; the
/// K/V rings continue across them (a loop-carried count of the blocks
/// already streamed), the Q pipe flips phase per item.
LogicalResult KernelLowering::emitItemLoop(
    RoleOp role, RoleState &st, Value lb, Value items, Value step,
    llvm::function_ref<void(Value)> setItem, ValueRange carryInit) {
  Value first = lb ? lb : NVVM::BlockIdXOp::create(b, loc, i32).getResult();
  Value stride =
      step ? step : NVVM::GridDimXOp::create(b, loc, i32).getResult();
  SmallVector<Value> init = {c32(0), c32(0)};
  llvm::append_range(init, carryInit);
  // Prefill tiles: named for blasst-annotate-item-loops (no LICM out of the
  // loop). Decode items keep the plain location (their kernels unchanged).
  Location loopLoc =
      spec.phase == Phase::Prefill
          ? Location(NameLoc::get(b.getStringAttr(kItemLoopMarker), loc))
          : loc;
  auto forOp = scf::ForOp::create(b, loopLoc, first, items, stride, init);
  Value savedM = mBlock, savedHead = head, savedKV = kvHead, savedB = batch;
  Value savedRow = tableRow, savedLast = lastTableEntry, savedLen = kvLen;
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(forOp.getBody());
    itemCarry.assign(forOp.getRegionIterArgs().begin() + 2,
                     forOp.getRegionIterArgs().end());
    itemCarryNext.clear();
    setItem(forOp.getInductionVar());
    assert(itemCarryNext.size() == carryInit.size() &&
           "setItem yields one value per carried value");
    SmallVector<Value> next = std::move(itemCarryNext);
    blockBase = forOp.getRegionIterArgs()[0];
    tileParity = forOp.getRegionIterArgs()[1];
    startTile(st);
    if (env.timeline)
      env.itemOrdinal = divu(sub(forOp.getInductionVar(), first), stride);
    stampItem(st, /*end=*/false);
    Value streamed = add(blockBase, st.numBlocks);
    if (failed(emitSteps(role.getBody().front(), st)))
      return failure();
    // Steps may leave the builder inside an scf.if they opened (a decode
    // split's merge): the item's yield ends the loop body.
    b.setInsertionPointToEnd(forOp.getBody());
    stampItem(st, /*end=*/true);
    SmallVector<Value> yielded = {
        streamed, arith::XOrIOp::create(b, loc, tileParity, c32(1))};
    llvm::append_range(yielded, next);
    scf::YieldOp::create(b, loc, yielded);
  }
  mBlock = savedM;
  head = savedHead;
  kvHead = savedKV;
  batch = savedB;
  tableRow = savedRow;
  lastTableEntry = savedLast;
  kvLen = savedLen;
  split = kvBegin = kvCount = kvEndKey = Value();
  leanSlot = leanFirstCta = leanZeroOffset = Value();
  tileSplits = numSplits;
  blockBase = tileParity = Value();
  itemCarry.clear();
  env.itemOrdinal = Value();
  return success();
}

LogicalResult KernelLowering::emitKeptAhead(AcquireOp op, RoleState &st) {
  // The copy and the release right after the acquire (the verifier).
  auto load = dyn_cast_or_null<TmaLoadOp>(op->getNextNode());
  auto release =
      load ? dyn_cast_or_null<ReleaseOp>(load->getNextNode()) : ReleaseOp();
  if (!load || !release || !st.skip)
    return op.emitOpError() << "kept_ahead needs the copy and the release "
                               "right after the acquire, after the load "
                               "role's ws.await_vote";
  int64_t ahead = int64_t(*op.getAhead()), kept = int64_t(*op.getKeptAhead());
  int64_t run = int64_t(op.getKeptRun().value_or(1));
  int64_t back = ahead - kept;
  if (size_t(op.getKeptHistory()) > st.skipHist.size())
    return op.emitOpError()
           << "kept_ahead needs " << op.getKeptHistory()
           << " decisions of history, the loop carries " << st.skipHist.size();
  // Whether the `run` decisions ending `from` blocks before block n were all
  // "kept" (from = 0: through block n's own, st.skip).
  auto allKept = [&](int64_t from) {
    Value any;
    for (int64_t i = from; i < from + run; ++i) {
      Value s = i == 0 ? st.skip : st.skipHist[i - 1];
      any = any ? arith::OrIOp::create(b, loc, any, s) : s;
    }
    return notI1(any);
  };
  auto emitTriple = [&]() -> LogicalResult {
    if (failed(emitAcquire(op, st)) || failed(emitTmaLoad(load, st)))
      return failure();
    return emitRelease(release, st);
  };
  {
    // Block n + kept_ahead, when the run through block n + kept_ahead -
    // ahead was kept (it was not copied `ahead` blocks ahead then).
    OpBuilder::InsertionGuard guard(b);
    openIf(allKept(back));
    for (Operation *o :
         {op.getOperation(), load.getOperation(), release.getOperation()})
      aheadNow[o] = uint64_t(kept);
    LogicalResult r = emitTriple();
    aheadNow.clear();
    if (failed(r))
      return r;
  }
  // Block n + ahead, unless the run through block n was kept.
  OpBuilder::InsertionGuard guard(b);
  openIf(notI1(allKept(0)));
  return emitTriple();
}

LogicalResult KernelLowering::emitStep(Operation *op, RoleState &st) {
  if (failed(target.checkPlacement(op, st)))
    return failure();
  // Every thread of a cp_async load role runs its steps: the pipe steps
  // and the vote reads are written for that (each thread reads the votes;
  // the first counts the statistics and issues the TMA copies).
  if (st.allThreadsLoad &&
      !isa<KVLoopOp, AcquireOp, ReleaseOp, TmaLoadOp, AwaitVoteOp>(op))
    return op->emitOpError()
           << "in a load role that fills cp_async pipes (all of its threads "
              "run its steps): only acquire, copy, release and await_vote "
              "are supported";
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](KVLoopOp o) { return emitLoop(o, st); })
      .Case([&](AcquireOp o) {
        return o.getKeptAhead() && st.inLoop ? emitKeptAhead(o, st)
                                             : emitAcquire(o, st);
      })
      // A kept_ahead copy and release: emitted with their acquire.
      .Case([&](ReleaseOp o) {
        return o.getKeptAhead() && st.inLoop ? success() : emitRelease(o, st);
      })
      .Case([&](TmaLoadOp o) {
        return o.getKeptAhead() && st.inLoop ? success() : emitTmaLoad(o, st);
      })
      .Case([&](MmaOp o) { return target.emitMma(o, st); })
      .Case([&](RowMaxOp o) { return target.emitRowMax(o, st); })
      .Case([&](SoftmaxUpdateOp o) { return target.emitSoftmaxUpdate(o, st); })
      .Case([&](Exp2StoreOp o) { return target.emitExp2Store(o, st); })
      .Case([&](Exp2Op o) { return target.emitExp2InPlace(o, st); })
      .Case([&](PackPOp o) { return target.emitPackP(o, st); })
      .Case([&](CorrectOp o) { return target.emitCorrect(o, st); })
      .Case([&](EpilogueOp o) {
        if (st.timelineBase == kTimelineCompute)
          stamp(kTimelineEpilogue, timelineThread(st));
        return target.emitEpilogue(o, st);
      })
      .Case([&](ReadScoresOp o) { return target.emitReadScores(o, st); })
      .Case([&](StoreRowSumsOp o) { return target.emitStoreRowSums(o, st); })
      .Case([&](TmaStoreOp o) { return target.emitTmaStore(o, st); })
      .Case([&](VoteOp o) { return emitVote(o, st); })
      .Case([&](AwaitVoteOp o) { return emitAwaitVote(o, st); })
      .Case([&](StoreVoteOp o) { return emitStoreVote(o, st); })
      .Case([&](LoadVoteOp o) { return emitLoadVote(o, st); })
      .Case([&](LoadFragOp o) { return target.emitLoadFrag(o, st); })
      .Case([&](MmaWaitOp o) { return target.emitMmaWait(o, st); })
      .Case([&](TurnWaitOp o) { return emitTurn(o, /*wait=*/true); })
      .Case([&](TurnPassOp o) { return emitTurn(o, /*wait=*/false); })
      .Case([&](UnlessSkippedOp o) { return emitUnlessSkipped(o, st); })
      .Default([&](Operation *o) {
        return o->emitOpError() << "is not lowered on " << target.name();
      });
}

LogicalResult KernelLowering::emitLoop(KVLoopOp loop, RoleState &st) {
  if (st.inLoop)
    return loop.emitOpError() << "nested kv_loops are not supported";
  // Each pipe used in the loop must be acquired exactly once per iteration
  // and look-ahead by this role: stage and phase then follow the block
  // index (cross-stage P's tile 1 takes x0's token of block n and waits for
  // block n + 1's, `ahead = 1`).
  std::map<std::pair<std::string, uint64_t>, int> acquires;
  loop.walk([&](AcquireOp a) {
    ++acquires[{a.getPipe().str(), a.getAhead().value_or(0)}];
  });
  for (auto &[key, n] : acquires)
    if (n != 1)
      return loop.emitOpError()
             << "acquires pipe @" << key.first
             << (key.second ? " {ahead = " + std::to_string(key.second) + "}"
                            : std::string())
             << " " << n
             << " times per KV block; the sm_90a lowering needs exactly one";

  bool compute = carriesRunningState(st.role);
  // Values a prologue computed for the loop's first iteration come in as
  // iteration arguments, and each iteration yields the next one's (the
  // protocol's LoopCarried says which): S of block n when the loop's Q Kᵀ
  // runs one block ahead; the correction factors and P in registers when
  // block 0's softmax is the prologue; the skip decision when P V of block
  // n was decided in the previous iteration (block 0 is kept, unless the
  // prologue voted on it: vote-first-block, with the sink seed's running
  // max).
  LoopCarried carried = protocol.carried(loop);
  bool carryS = carried.scores;
  bool carryCorr = carried.correction;
  bool carrySkip = carried.skip;
  if (carrySkip && !st.skip) {
    // Block 0 (the prologue's softmax, not voted on) is kept; the loop's
    // votes count blocks 1.. (and not the block past the end).
    st.skip = arith::ConstantOp::create(b, loc, b.getBoolAttr(false));
  }
  size_t numP = compute ? st.pRegs.size() : 0;
  // A deferred P V: block n - 1's P and decision, and block n's correction
  // factors (1 before block 0: O is still 0), come in from the iteration
  // before; block -1 does not exist, so its decision is "skipped".
  st.deferPV = carried.deferredPV;
  if (st.deferPV) {
    if (!carrySkip || !numP)
      return loop.emitOpError()
             << "defers P V (ws.mma pv {ahead = -1}) but carries no skip "
                "decision or no P in registers: the deferred P V is lowered "
                "for BLASST kernels with P in registers";
    st.pHeld.assign(numP, Value());
    for (Value &v : st.pHeld)
      v = LLVM::UndefOp::create(b, loc, i32);
    st.corrHeld[0] = st.corrHeld[1] = cf(1.0f);
    st.skipPrev = arith::ConstantOp::create(b, loc, b.getBoolAttr(true));
  }
  bool carryVote = carried.voteState;
  if (carryVote) {
    // Before block 0 (whose await yields its own state): any values; with
    // block 0 voted on, "block -1 known and skipped", so block 0 waits for
    // its votes (a run of 0 kept blocks).
    st.voteKnown = arith::ConstantOp::create(b, loc, b.getBoolAttr(true));
    st.voteKept = arith::ConstantOp::create(
        b, loc, b.getBoolAttr(!layout.votesFirstBlock));
    st.keptRun = c32(0);
  }
  SmallVector<Value> init;
  if (compute)
    init = st.carried();
  if (st.stats)
    init.push_back(st.skipped);
  if (carryS)
    init.push_back(st.s);
  if (carryCorr)
    init.append({st.corr[0], st.corr[1]});
  init.append(st.pRegs.begin(), st.pRegs.begin() + numP);
  if (carrySkip)
    init.push_back(st.skip);
  if (st.deferPV) {
    init.append(st.pHeld.begin(), st.pHeld.end());
    init.append({st.corrHeld[0], st.corrHeld[1], st.skipPrev});
  }
  if (carryVote)
    init.append({st.voteKnown, st.voteKept, st.keptRun});
  if (st.countVotes)
    init.push_back(st.voteSkips);
  // A load role whose copy depth follows the decisions (kept_ahead) carries
  // the decisions on the blocks before n that its conditions read.
  int64_t histDepth = 0;
  loop.walk([&](AcquireOp a) {
    histDepth = std::max(histDepth, a.getKeptHistory());
  });
  st.skipHist.assign(histDepth, Value());
  for (Value &v : st.skipHist) {
    v = arith::ConstantOp::create(b, loc, b.getBoolAttr(true));
    init.push_back(v);
  }
  // A deferred P V runs the last block's in one more iteration (when there
  // is a block), where every step on block n or later finds no block.
  Value trip = st.numBlocks;
  if (st.deferPV)
    trip = select(cmp(arith::CmpIPredicate::eq, st.numBlocks, c32(0)), c32(0),
                  add(st.numBlocks, c32(1)));
  auto forOp = scf::ForOp::create(b, loc, c32(0), trip, c32(1), init);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(forOp.getBody());
  st.inLoop = true;
  st.kvBlock = forOp.getInductionVar();
  // Unpacks loop-carried values (iteration arguments or results) into st.
  auto unpack = [&](ValueRange vals) {
    size_t k = 0;
    if (compute) {
      st.setCarried(vals.take_front(5));
      k = 5;
    }
    if (st.stats)
      st.skipped = vals[k++];
    if (carryS)
      st.s = vals[k++];
    if (carryCorr) {
      st.corr[0] = vals[k++];
      st.corr[1] = vals[k++];
    }
    for (size_t i = 0; i < numP; ++i)
      st.pRegs[i] = vals[k++];
    if (carrySkip)
      st.skip = vals[k++];
    if (st.deferPV) {
      for (Value &v : st.pHeld)
        v = vals[k++];
      st.corrHeld[0] = vals[k++];
      st.corrHeld[1] = vals[k++];
      st.skipPrev = vals[k++];
    }
    if (carryVote) {
      st.voteKnown = vals[k++];
      st.voteKept = vals[k++];
      st.keptRun = vals[k++];
    }
    if (st.countVotes)
      st.voteSkips = vals[k++];
    for (Value &v : st.skipHist)
      v = vals[k++];
  };
  unpack(forOp.getRegionIterArgs());
  st.sNext = Value();
  // The decision on block n (before the body's vote on n + 1) and P of
  // block n: what a deferred P V carries to the next iteration.
  st.skipCur = carrySkip ? st.skip : Value();
  SmallVector<Value> pOfBlock(st.pRegs.begin(), st.pRegs.begin() + numP);
  if (failed(emitSteps(loop.getBody().front(), st)))
    return failure();
  if (!init.empty()) {
    // With iter args the body has no implicit yield: yield the state.
    SmallVector<Value> yields;
    if (compute)
      yields = st.carried();
    if (st.stats)
      yields.push_back(st.skipped);
    if (carryS) {
      if (!st.sNext)
        return loop.emitOpError()
               << "carries S across blocks but computes no next-block Q Kᵀ "
                  "(ws.mma qk {ahead = 1})";
      yields.push_back(st.sNext);
    }
    if (carryCorr) {
      if (!st.corr[0])
        return loop.emitOpError()
               << "carries the correction factors of a prologue softmax but "
                  "its body computes none for the next iteration";
      yields.append({st.corr[0], st.corr[1]});
    }
    if (numP && st.pRegs.size() != numP)
      return loop.emitOpError()
             << "carries P in registers from the prologue but its body "
                "computes no P for the next iteration";
    yields.append(st.pRegs.begin(), st.pRegs.begin() + numP);
    if (carrySkip)
      yields.push_back(st.skip);
    if (st.deferPV) {
      if (!st.corr[0])
        return loop.emitOpError() << "defers P V but its body computes no "
                                     "correction factors for block n + 1";
      yields.append(pOfBlock.begin(), pOfBlock.end());
      yields.append({st.corr[0], st.corr[1], st.skipCur});
    }
    if (carryVote)
      yields.append({st.voteKnown, st.voteKept, st.keptRun});
    if (st.countVotes)
      yields.push_back(st.voteSkips);
    if (!st.skipHist.empty()) {
      yields.push_back(st.skip);
      yields.append(st.skipHist.begin(), st.skipHist.end() - 1);
    }
    scf::YieldOp::create(b, loc, yields);
  }
  st.inLoop = false;
  st.afterLoop = true;
  st.skip = st.skipCur = st.skipPrev = Value();
  st.skipHist.clear();
  st.s = st.sNext = Value();
  st.inflight.clear();
  b.setInsertionPointAfter(forOp);
  // Values computed in the body that are not carried do not exist here.
  for (int i = 0; i < 2; ++i)
    st.corr[i] = st.mUse[i] = st.mBlock[i] = st.mPart[i] = Value();
  st.pRegs.resize(numP);
  unpack(forOp.getResults());
  st.s = Value();
  st.skipPrev = Value();
  st.pHeld.clear();
  st.corrHeld[0] = st.corrHeld[1] = Value();
  if (st.stats)
    emitStatsFlush(st);
  if (st.countVotes) {
    if (carryVote) {
      // The votes on the last block were not read when the load role
      // copied its V without them.
      auto last = scf::IfOp::create(b, loc, TypeRange{i32}, notI1(st.voteKnown),
                                    /*withElseRegion=*/true);
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(last.thenBlock());
      scf::YieldOp::create(
          b, loc, ValueRange{readVotes(sub(st.numBlocks, c32(1)), st).second});
      b.setInsertionPointToStart(last.elseBlock());
      scf::YieldOp::create(b, loc, ValueRange{c32(0)});
      b.setInsertionPointAfter(last);
      st.voteSkips = add(st.voteSkips, last.getResult(0));
    }
    emitVoteStatsFlush(st);
  }
  return success();
}

LogicalResult KernelLowering::emitTurn(Operation *op, bool wait) {
  // The protocol says which barrier; a step it gives none (the first role
  // holds the turn before its first wait, the last role's pass after its
  // loop has no matching wait) emits nothing.
  for (const BarrierEvent &e : protocol.step(op)->events) {
    if (wait)
      NVVM::BarrierOp::create(b, loc, Type(), c32(e.named.id),
                              c32(e.named.threads), nullptr, Value());
    else
      NVVM::BarrierArriveOp::create(b, loc, c32(e.named.id),
                                    c32(e.named.threads));
  }
  return success();
}

/// The roles as one if / else-if chain, warps in no role last (sm_100a: six
/// roles, three of them with fewer registers than the entry). With one `if`
/// per role, ptxas sees every role's code reachable after the others'
/// setmaxnreg.dec, and the values later roles use live through the
/// 48-register ones: they spill.
LogicalResult KernelLowering::emitRolesExclusive() {
  OpBuilder::InsertionGuard guard(b);
  for (auto role : kernel.getBody().getOps<RoleOp>()) {
    Value inRole = arith::AndIOp::create(
        b, loc, cmp(arith::CmpIPredicate::uge, warp, c32(role.getWarpBegin())),
        cmp(arith::CmpIPredicate::ult, warp, c32(role.getWarpEnd())));
    auto ifOp = scf::IfOp::create(b, loc, TypeRange{}, inRole,
                                  /*withElseRegion=*/true);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    if (failed(emitRole(role)))
      return failure();
    b.setInsertionPoint(ifOp.elseBlock()->getTerminator());
  }
  return emitWarpgroupRegs();
}

/// setmaxnreg sets a whole warpgroup's registers: every role of a
/// warpgroup must ask for the same count, and a warp no role holds (sm_100a:
/// warp 15, beside the MMA, load and epilogue warps) sets it too. Each warp
/// executes it in its own branch, as CUTLASS's sm_100 kernels do.
LogicalResult KernelLowering::emitWarpgroupRegs() {
  int64_t numGroups = (kernel.getNumWarps() + 3) / 4;
  int64_t start =
      (kernel.getRegistersPerCTA() / (kernel.getNumWarps() * 32)) / 8 * 8;
  for (int64_t g = 0; g < numGroups; ++g) {
    std::optional<int64_t> regs;
    SmallVector<bool, 4> held(4, false);
    for (auto role : kernel.getBody().getOps<RoleOp>()) {
      int64_t begin = int64_t(role.getWarpBegin()),
              end = int64_t(role.getWarpEnd());
      if (end <= 4 * g || begin >= 4 * g + 4)
        continue;
      for (int64_t w = begin; w < end; ++w)
        if (w >= 4 * g && w < 4 * g + 4)
          held[w - 4 * g] = true;
      if (!role.getRegs())
        continue;
      if (regs && *regs != int64_t(*role.getRegs()))
        return role.emitOpError()
               << "asks for " << *role.getRegs() << " registers but warpgroup "
               << g << " already has " << *regs
               << " (setmaxnreg sets a whole warpgroup's)";
      regs = role.getRegs();
    }
    if (!regs || *regs == start)
      continue;
    for (int64_t w = 0; w < 4; ++w) {
      if (held[w] || 4 * g + w >= kernel.getNumWarps())
        continue;
      OpBuilder::InsertionGuard guard(b);
      openIf(cmp(arith::CmpIPredicate::eq, warp, c32(4 * g + w)));
      NVVM::SetMaxRegisterOp::create(
          b, loc, b.getI32IntegerAttr(*regs),
          NVVM::SetMaxRegisterActionAttr::get(
              ctx, *regs > start ? NVVM::SetMaxRegisterAction::increase
                                 : NVVM::SetMaxRegisterAction::decrease));
    }
  }
  return success();
}
