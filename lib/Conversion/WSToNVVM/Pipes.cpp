//===- Pipes.cpp - mbarrier pipes and TMA copies --------------------------===//
//
// Acquire and release of a pipe stage (the stage and phase of the block a
// step works on) and the TMA copies that fill a stage.
//
//===----------------------------------------------------------------------===//
#include "KernelLowering.h"

#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace blasst;
using namespace blasst::ws;
using namespace blasst::ws::lowering;

//===----------------------------------------------------------------------===//
// Pipes and copies
//===----------------------------------------------------------------------===//

LogicalResult KernelLowering::emitAcquire(AcquireOp op, RoleState &st) {
  PipeOp pipe = pipeOf(op.getPipeAttr());

  OpBuilder::InsertionGuard guard(b);
  bool producer = isProducer(pipe, st);
  // Paged K/V: the block-table reads before the wait (KVCache.cpp).
  prefetchPageCoords(op, st);
  Value exists = blockExists(st, pipe, aheadOf(op));
  // A consumer's look-ahead in the loop (block n+1, which is past the end
  // in the last iteration) needs no branch: past the end it waits for the
  // stage's previous phase, which has completed (or, on a fresh barrier,
  // passes at once). The branch cost a resolve stall every iteration.
  bool branchFree =
      exists && !producer && st.inLoop && aheadOf(op) && *aheadOf(op) == 1;
  if (exists && !branchFree)
    openIf(exists);
  auto [stage, phase] = stagePhase(st, pipe, aheadOf(op));
  // The producer waits for the consumers to have emptied the stage in the
  // previous round (parity flipped: a fresh barrier passes at once); a
  // drain, for their release of this round.
  Value parity = producer && !op.getDrain()
                     ? arith::XOrIOp::create(b, loc, phase, c32(1))
                     : phase;
  if (branchFree)
    parity = arith::XOrIOp::create(
        b, loc, parity, arith::ExtUIOp::create(b, loc, i32, notI1(exists)));
  NVVM::MBarrierTryWaitParityOp::create(
      b, loc, barrier(pipe, /*full=*/!producer, stage), parity,
      c32(kWaitTicks));
  // A cp_async stage was written through the generic proxy; the consumers'
  // wgmma read it through the async proxy.
  if (!producer && pipe.getCpAsync())
    NVVM::FenceProxyOp::create(
        b, loc, NVVM::ProxyKind::async_shared,
        NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
  stampWait(st);
  return success();
}

LogicalResult KernelLowering::emitRelease(ReleaseOp op, RoleState &st) {
  PipeOp pipe = pipeOf(op.getPipeAttr());
  OpBuilder::InsertionGuard guard(b);
  if (Value exists = blockExists(st, pipe, aheadOf(op)))
    openIf(exists);
  auto [stage, phase] = stagePhase(st, pipe, aheadOf(op));
  (void)phase;
  if (target.releasesByCommit(st)) {
    // sm_100a's MMA thread: one arrival once its products are done.
    target.emitCommitRelease(barrier(pipe, isProducer(pipe, st), stage));
    return success();
  }
  if (isProducer(pipe, st) && pipe.getCpAsync()) {
    // Each thread's arrival completes once its copies have landed.
    NVVM::CpAsyncMBarrierArriveOp::create(b, loc, barrier(pipe, true, stage),
                                          /*noinc=*/true);
    return success();
  }
  if (isProducer(pipe, st)) {
    // A TMA stage of a load role whose threads all run (cp_async pipes
    // beside it): its first thread arrives, as it copied.
    if (st.allThreadsLoad)
      openIf(cmp(arith::CmpIPredicate::eq, st.threadInRole, c32(0)));
    Value full = barrier(pipe, true, stage);
    // A V copy on demand that was not issued (every voter skipped the
    // block): the arrive completes the stage with no bytes to wait for.
    bool onDemand = false;
    for (auto load : op->getBlock()->getOps<TmaLoadOp>())
      onDemand |= load.getOnDemand() && load.getPipe() == pipe.getSymName();
    if (onDemand && !st.skip)
      return op.emitOpError() << "releases an on_demand copy's stage with no "
                                 "ws.await_vote decision";
    if (std::optional<uint64_t> tx = pipe.getTxBytes())
      NVVM::MBarrierArriveExpectTxOp::create(
          b, loc, Type(), full,
          onDemand ? select(st.skip, c32(0), c32(int64_t(*tx)))
                   : c32(int64_t(*tx)),
          NVVM::MemScopeKind::CTA,
          /*relaxed=*/false, Value());
    else
      NVVM::MBarrierArriveOp::create(b, loc, Type(), full, Value(),
                                     NVVM::MemScopeKind::CTA,
                                     /*relaxed=*/false);
    return success();
  }
  Value empty = barrier(pipe, false, stage);
  NVVM::MBarrierArriveOp::create(b, loc, Type(), empty, Value(),
                                 NVVM::MemScopeKind::CTA,
                                 /*relaxed=*/false);
  if (protocol.isMulticast(pipe)) {
    // The partner's producer multicasts into this stage too: lane 0 of each
    // warp tells it the stage is free (the warp's reads are done: the
    // release follows the wgmma wait, which is warp-synchronous).
    openIf(cmp(arith::CmpIPredicate::eq, lane, c32(0)));
    Value remote = NVVM::MapaOp::create(
        b, loc, LLVM::LLVMPointerType::get(ctx, 7), empty, partnerRank);
    NVVM::MBarrierArriveOp::create(b, loc, Type(), remote, Value(),
                                   NVVM::MemScopeKind::CLUSTER,
                                   /*relaxed=*/false);
  }
  return success();
}

LogicalResult KernelLowering::emitTmaLoad(TmaLoadOp op, RoleState &st) {
  PipeOp pipe = pipeOf(op.getPipeAttr());
  BufferOp dst = bufferOf(op.getDstAttr());
  OpBuilder::InsertionGuard guard(b);
  // A copy one block ahead, or of block 0 before the loop, runs only when
  // that block exists (the acquire and release around it test the same).
  if (Value exists = blockExists(st, pipe, aheadOf(op)))
    openIf(exists);
  if (op.getOnDemand()) {
    if (!st.skip)
      return op.emitOpError() << "needs a ws.await_vote decision before it";
    openIf(notI1(st.skip));
  }
  if (st.allThreadsLoad && !pipe.getCpAsync())
    openIf(cmp(arith::CmpIPredicate::eq, st.threadInRole, c32(0)));
  auto [stage, phase] = stagePhase(st, pipe, aheadOf(op));
  (void)phase;
  ArrayRef<int64_t> shape = dst.getShape();
  int64_t rows = shape[0], cols = shape[1];
  if (cols % kPanelElems)
    return op.emitOpError() << "needs a multiple of 64 columns, got " << cols;
  Value tmap, seqCoord, headCoord;
  switch (op.getTensor()) {
  case Tensor::q:
    tmap = param(kTmQ);
    if (qGroup) {
      // Decode: a box of q_group heads (from the KV head's first) by
      // tokensPerTile tokens; rows land token-major.
      seqCoord = mul(mBlock, c32(tokensPerTile));
      headCoord = head;
      break;
    }
    seqCoord = mul(mBlock, c32(blockM));
    // Several Q tiles per CTA (sm_100a): the k-th copy takes the rows after
    // the earlier ones'.
    if (int64_t before = qRowsBefore(op))
      seqCoord = add(seqCoord, c32(before));
    headCoord = head;
    break;
  case Tensor::k:
  case Tensor::v:
    tmap = param(op.getTensor() == Tensor::k ? kTmK : kTmV);
    if (op.getSink()) {
      // The sequence's block 0, whatever split this CTA walks.
      seqCoord = c32(0);
    } else {
      if (!protocol.isPerBlock(pipe))
        return op.emitOpError() << "loads K/V on a pipe no kv_loop acquires";
      seqCoord = mul(absBlock(blockOf(st, pipe, aheadOf(op))), c32(blockN));
    }
    headCoord = kvHead;
    break;
  case Tensor::o:
    return op.emitOpError() << "cannot load O";
  }
  Value stageBase =
      add(c32(offsetOf(dst)), mul(stage, c32(dst.getStageBytes())));
  // (The ws.tma_load verifier admits only K and V on a cp_async pipe.)
  if (pipe.getCpAsync()) {
    if (protocol.isMulticast(pipe))
      return op.emitOpError() << "cp_async copies need K/V without multicast";
    if (!pageSize)
      return emitCpAsyncCopy(op, st, stageBase, seqCoord, rows, cols, {});
    // Paged: the block's pages from the table (read before the acquire's
    // wait where the copy does not hang on a vote; KVCache.cpp).
    if (rows != blockN)
      return op.emitOpError() << "paged K/V copies need whole blocks of "
                                 "block_n rows";
    return emitCpAsyncCopy(op, st, stageBase, seqCoord, rows, cols,
                           takePageCoords(op, st));
  }
  Value mbar = barrier(pipe, true, stage);
  if (pageSize && op.getTensor() != Tensor::q) {
    // Paged K/V: one copy per page the block covers (KVCache.cpp).
    if (protocol.isMulticast(pipe) || rows != blockN)
      return op.emitOpError() << "paged K/V copies need whole blocks of "
                                 "block_n rows without multicast";
    emitPagedKVCopies(op, takePageCoords(op, st), tmap, headCoord, stageBase,
                      mbar, rows, cols);
    return success();
  }
  // kv_multicast: this CTA copies its half of the block's rows into both
  // CTAs of the pair (the same offsets; each full barrier expects the whole
  // tile, half from each producer).
  Value mask, rowOffset = c32(0);
  if (protocol.isMulticast(pipe)) {
    int64_t half = rows / 2;
    rowOffset = mul(ctaRank, c32(half));
    seqCoord = add(seqCoord, rowOffset);
    mask = arith::ConstantOp::create(b, loc, b.getI16IntegerAttr(3));
  }
  // One copy per 64-column panel: [rows x 128 B], swizzled by the TMA unit.
  for (int64_t p = 0; p < cols / kPanelElems; ++p) {
    // The own CTA's shared address is a valid shared::cluster address.
    Value dstPtr = LLVM::AddrSpaceCastOp::create(
        b, loc, LLVM::LLVMPointerType::get(ctx, 7),
        smemPtr(add(add(stageBase, c32(p * rows * kSwizzleBytes)),
                    mul(rowOffset, c32(kSwizzleBytes)))));
    SmallVector<Value> coords = {c32(p * kPanelElems), headCoord, seqCoord,
                                 batch};
    NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
        b, loc, dstPtr, tmap, coords, mbar, ValueRange{}, mask, Value(),
        NVVM::TMALoadMode::TILE, /*isCTAOnly=*/false, nullptr, Value());
  }
  return success();
}

LogicalResult
KernelLowering::emitCpAsyncCopy(TmaLoadOp op, RoleState &st, Value stageBase,
                                Value seqRow0, int64_t rows, int64_t cols,
                                ArrayRef<std::pair<Value, Value>> pages) {
  // The tile [rows x cols] of K or V from sequence row seqRow0 of this
  // CTA's (batch, KV head), in 16-byte pieces: thread t copies piece
  // t mod perRow of rows t / perRow, + rowStep, ... into the layout the TMA
  // unit writes (64-column panels of 128-byte rows, the 16-byte unit j of
  // row r at unit j ^ (r mod 8)). Rows at or past the sequence's length
  // read nothing and land as zeros (src-size 0), as TMA's out-of-bounds
  // fill. Paged (`pages` = the block's (row in page, table entry) per page,
  // pageCoordsOf): row r is row first + r mod min(block_n, P) of page
  // entry r / min(block_n, P), read through K/V's page stride (their
  // "batch" stride); an entry outside [0, num_pages) reads nothing either.
  int64_t elemBytes = elemTy.getIntOrFloatBitWidth() / 8;
  int64_t unitElems = 16 / elemBytes, perRow = cols / unitElems;
  int64_t unitsPerPanel = kSwizzleBytes / 16;
  int64_t threads = st.role.getNumWarps() * 32;
  if (threads % perRow || rows % (threads / perRow))
    return op.emitOpError() << "cp_async: " << threads << " threads cannot "
                            << "share a " << rows << " x " << cols
                            << " tile in 16-byte pieces evenly";
  int64_t rowStep = threads / perRow;
  int64_t boxRows = std::min(blockN, pageSize);
  // A thread's rows r0 + i * rowStep (r0 < rowStep) then sit in page
  // i * rowStep / boxRows, known when the kernel is built.
  if (!pages.empty() && boxRows % rowStep)
    return op.emitOpError()
           << "cp_async: pages of " << pageSize << " rows cannot be copied "
           << rowStep << " rows apart";
  bool isK = op.getTensor() == Tensor::k;
  Value t = st.threadInRole;
  Value unit = remu(t, c32(perRow)), row0 = divu(t, c32(perRow));
  Value panel = divu(unit, c32(unitsPerPanel));
  Value inPanel = remu(unit, c32(unitsPerPanel));
  auto ext = [&](Value v) { return arith::ExtUIOp::create(b, loc, i64, v); };
  auto mul64 = [&](Value x, Value y) {
    return arith::MulIOp::create(b, loc, x, y).getResult();
  };
  auto add64 = [&](Value x, Value y) {
    return arith::AddIOp::create(b, loc, x, y).getResult();
  };
  // Element offset of (batch or page 0, row 0, KV head, this thread's
  // unit).
  Value strideB = param(isK ? kKStrideB : kVStrideB);
  Value base = add64(mul64(ext(kvHead), param(isK ? kKStrideH : kVStrideH)),
                     ext(mul(unit, c32(unitElems))));
  if (pages.empty())
    base = add64(base, mul64(ext(batch), strideB));
  Value strideS = param(isK ? kKStrideS : kVStrideS);
  Value ptr = param(isK ? kKPtr : kVPtr);
  Value len = seqKVLen();
  auto global = LLVM::LLVMPointerType::get(ctx, 1);
  Value panelBase = add(stageBase, mul(panel, c32(rows * kSwizzleBytes)));
  // Paged: whether each of the block's table entries names a pool page
  // (built at its first row).
  SmallVector<Value> inPool(pages.size());
  for (int64_t i = 0; i < rows / rowStep; ++i) {
    Value row = add(row0, c32(i * rowStep));
    Value seqRow = add(seqRow0, row);
    Value inside = cmp(arith::CmpIPredicate::ult, seqRow, len);
    Value elem;
    if (pages.empty()) {
      elem = add64(base, mul64(ext(select(inside, seqRow, c32(0))), strideS));
    } else {
      int64_t j = i * rowStep / boxRows;
      auto [first, entry] = pages[j];
      Value inPage = add(first, sub(row, c32(j * boxRows)));
      if (!inPool[j])
        inPool[j] = cmp(arith::CmpIPredicate::ult, entry, param(kNumPages));
      inside = arith::AndIOp::create(b, loc, inside, inPool[j]);
      elem =
          add64(add64(base, mul64(ext(select(inside, entry, c32(0))), strideB)),
                mul64(ext(select(inside, inPage, c32(0))), strideS));
    }
    Value src = LLVM::GEPOp::create(
        b, loc, ptrGen, b.getI8Type(), ptr,
        ValueRange{mul64(elem, arith::ConstantOp::create(
                                   b, loc, b.getI64IntegerAttr(elemBytes)))});
    src = LLVM::AddrSpaceCastOp::create(b, loc, global, src);
    Value swizzled = arith::XOrIOp::create(b, loc, inPanel, remu(row, c32(8)));
    Value dstPtr = smemPtr(add(add(panelBase, mul(row, c32(kSwizzleBytes))),
                               mul(swizzled, c32(16))));
    NVVM::CpAsyncOp::create(b, loc, dstPtr, src, b.getI32IntegerAttr(16),
                            NVVM::LoadCacheModifierKindAttr::get(
                                ctx, NVVM::LoadCacheModifierKind::CG),
                            select(inside, c32(16), c32(0)));
  }
  return success();
}

int64_t KernelLowering::qRowsBefore(TmaLoadOp op) {
  int64_t rows = 0;
  for (auto load : op->getBlock()->getOps<TmaLoadOp>()) {
    if (load == op)
      break;
    if (load.getTensor() == Tensor::q)
      rows += bufferOf(load.getDstAttr()).getShape()[0];
  }
  return rows;
}
