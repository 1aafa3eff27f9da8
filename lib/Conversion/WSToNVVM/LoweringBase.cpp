//===- LoweringBase.cpp - State and helpers shared by the ws lowering -----===//
#include "LoweringBase.h"

using namespace mlir;
using namespace blasst;
using namespace blasst::ws;
using namespace blasst::ws::lowering;

FailureOr<SmemLayout> blasst::ws::lowering::computeLayout(KernelOp kernel) {
  SmemLayout layout;
  int64_t offset = 0;
  for (auto buf : kernel.getBody().getOps<BufferOp>()) {
    if (buf.getSpace() != MemorySpace::smem || buf.getAliases())
      continue;
    offset = llvm::alignTo(offset, kTileAlign);
    layout.bufferOffset[buf.getSymName()] = offset;
    offset += buf.getStageBytes() * int64_t(buf.getStages());
  }
  for (auto buf : kernel.getBody().getOps<BufferOp>())
    if (buf.getSpace() == MemorySpace::smem && buf.getAliases())
      layout.bufferOffset[buf.getSymName()] =
          layout.bufferOffset[*buf.getAliases()];
  offset = llvm::alignTo(offset, 8);
  for (auto pipe : kernel.getBody().getOps<PipeOp>()) {
    layout.pipeBarriers[pipe.getSymName()] = offset;
    offset += 2 * 8 * int64_t(pipe.getDepth());
  }
  if (kernel.walk([](AwaitVoteOp) { return WalkResult::interrupt(); })
          .wasInterrupted()) {
    for (auto role : kernel.getBody().getOps<RoleOp>())
      role.walk([&](VoteOp v) {
        layout.votesFirstBlock |= v.getPublish() && v.votesFirstBlock();
        if (v.getPublish() &&
            layout.voterIndex
                .try_emplace(role.getSymName(), layout.voterIndex.size())
                .second) {
          layout.voterRowBegin.push_back(role.getRowBegin().value_or(0));
        }
      });
    layout.voteBarrier = offset;
    layout.voteFlags = offset + 2 * 8;
    offset += 2 * 8 + 2 * 4 * int64_t(layout.voterIndex.size());
  }
  if (llvm::any_of(kernel.getBody().getOps<BufferOp>(), [](BufferOp buf) {
        return buf.getSpace() == MemorySpace::tmem;
      })) {
    // The slot, then one 8-byte slot per buffer stage (sm_100a keeps the
    // MMA thread's descriptors there, SM100Lowering::descSlot).
    layout.tmemSlot = offset;
    int64_t stages = 0;
    for (auto buf : kernel.getBody().getOps<BufferOp>())
      stages += int64_t(buf.getStages());
    offset += 8 * (1 + stages);
  }
  layout.totalBytes = offset;
  if (offset > kernel.getSharedMemoryLimit())
    return kernel.emitOpError()
           << "needs " << offset << " bytes of shared memory with barriers, "
           << "the limit is " << kernel.getSharedMemoryLimit();
  return layout;
}

KernelEnv::KernelEnv(KernelOp kernel, const SmemLayout &layout,
                     const ProtocolAnalysis &protocol)
    : kernel(kernel), layout(layout), protocol(protocol),
      spec(kernel.getSpec().toSpec()), ctx(kernel.getContext()), b(ctx),
      loc(kernel.getLoc()) {
  i1 = b.getI1Type();
  i16 = b.getI16Type();
  i32 = b.getI32Type();
  i64 = b.getI64Type();
  f32 = b.getF32Type();
  ptrSh = LLVM::LLVMPointerType::get(ctx, 3);
  ptrGen = LLVM::LLVMPointerType::get(ctx);
  elemTy = attn::getElementType(ctx, spec.dtype);
  blockM = kernel.getBlockM();
  blockN = kernel.getBlockN();
  if (std::optional<uint64_t> g = kernel.getQGroup()) {
    qGroup = int64_t(*g);
    tokensPerTile = blockM / qGroup;
  }
  pageSize = int64_t(kernel.getPageSize().value_or(0));
}

SmallVector<Type> LoweringBase::abiParamTypes(unsigned count) const {
  SmallVector<Type> params(count, ptrGen);
  for (unsigned i = 0; i < count; ++i) {
    switch (i) {
    case kSeqQ:
    case kSeqKV:
    case kMaxPages:
    case kDecodeSplits:
    case kDecodeBatch:
    case kMergeLaunch:
    case kNumPages:
      params[i] = i32;
      break;
    case kOStrideB:
    case kOStrideS:
    case kOStrideH:
    case kKStrideB:
    case kKStrideS:
    case kKStrideH:
    case kVStrideB:
    case kVStrideS:
    case kVStrideH:
      params[i] = i64;
      break;
    case kScaleLog2:
    case kLog2Threshold:
      params[i] = f32;
      break;
    default: // tensor maps, pointers
      break;
    }
  }
  return params;
}

LoweringBase::LoweringBase(KernelEnv &env)
    : env(env), kernel(env.kernel), layout(env.layout), protocol(env.protocol),
      spec(env.spec), ctx(env.ctx), b(env.b), loc(env.loc), i1(env.i1),
      i16(env.i16), i32(env.i32), i64(env.i64), f32(env.f32),
      elemTy(env.elemTy), ptrSh(env.ptrSh), ptrGen(env.ptrGen),
      blockM(env.blockM), blockN(env.blockN), func(env.func),
      smemBase(env.smemBase), smemBase32(env.smemBase32), tid(env.tid),
      warp(env.warp), lane(env.lane), mBlock(env.mBlock), head(env.head),
      batch(env.batch), kvHead(env.kvHead), blockBase(env.blockBase),
      tileParity(env.tileParity), ctaRank(env.ctaRank),
      partnerRank(env.partnerRank), qGroup(env.qGroup),
      tokensPerTile(env.tokensPerTile), numQTiles(env.numQTiles),
      numSplits(env.numSplits), split(env.split), kvBegin(env.kvBegin),
      kvCount(env.kvCount), kvEndKey(env.kvEndKey), tileSplits(env.tileSplits),
      leanSlot(env.leanSlot), leanFirstCta(env.leanFirstCta),
      leanZeroOffset(env.leanZeroOffset), splitChunk(env.splitChunk),
      kvLen(env.kvLen), pageSize(env.pageSize), tableRow(env.tableRow),
      lastTableEntry(env.lastTableEntry) {}

void LoweringBase::zeroQPaddingRows(int64_t threads) {
  if (!hasPaddingRows())
    return;
  BufferOp q;
  kernel.walk([&](TmaLoadOp load) {
    if (load.getTensor() == Tensor::q)
      q = bufferOf(load.getDstAttr());
  });
  if (!q)
    return;
  // Each 64-column panel is rows x 128 B; the 128 B swizzle permutes 16 B
  // chunks inside a row, so a padding row is the same 128 B either way.
  int64_t rows = q.getShape()[0], panels = q.getShape()[1] / kPanelElems;
  int64_t packed = qGroup * tokensPerTile;
  int64_t chunksPerPanel = (rows - packed) * (kSwizzleBytes / 16);
  int64_t total = panels * chunksPerPanel * int64_t(q.getStages());
  auto loop = scf::ForOp::create(b, loc, tid, c32(total), c32(threads));
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value idx = loop.getInductionVar();
    // Chunk idx: panel (of all stages' panels) idx / chunksPerPanel.
    Value panel = divu(idx, c32(chunksPerPanel));
    Value chunk = remu(idx, c32(chunksPerPanel));
    Value offset = add(add(c32(offsetOf(q) + packed * kSwizzleBytes),
                           mul(panel, c32(rows * kSwizzleBytes))),
                       mul(chunk, c32(16)));
    auto v4 = VectorType::get({4}, i32);
    Value zero = LLVM::ZeroOp::create(b, loc, v4);
    LLVM::StoreOp::create(b, loc, zero, smemPtr(offset), /*alignment=*/16);
  }
  NVVM::FenceProxyOp::create(
      b, loc, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
}

Value LoweringBase::hasRows(int64_t rowBegin) {
  if (qGroup)
    return cmp(arith::CmpIPredicate::slt, tokenOfRow(c32(rowBegin)),
               param(kSeqQ));
  Value firstRow = add(mul(mBlock, c32(blockM)), c32(rowBegin));
  return cmp(arith::CmpIPredicate::slt, firstRow, param(kSeqQ));
}

void LoweringBase::stamp(int64_t slot, Value who, Value value) {
  if (!env.timeline)
    return;
  OpBuilder::InsertionGuard guard(b);
  Value ordinal = env.itemOrdinal ? env.itemOrdinal : c32(0);
  Value cta = add(NVVM::BlockIdXOp::create(b, loc, i32),
                  mul(NVVM::GridDimXOp::create(b, loc, i32),
                      add(NVVM::BlockIdYOp::create(b, loc, i32),
                          mul(NVVM::GridDimYOp::create(b, loc, i32),
                              NVVM::BlockIdZOp::create(b, loc, i32)))));
  Value row = add(mul(cta, c32(kTimelineItems)), ordinal);
  openIf(arith::AndIOp::create(
      b, loc, who,
      arith::AndIOp::create(
          b, loc, cmp(arith::CmpIPredicate::ult, ordinal, c32(kTimelineItems)),
          cmp(arith::CmpIPredicate::ult, row, c32(kTimelineRows)))));
  if (!value)
    value = NVVM::GlobalTimerOp::create(b, loc, i64);
  auto ptrGlobal = LLVM::LLVMPointerType::get(ctx, 1);
  Value base = LLVM::AddressOfOp::create(b, loc, ptrGlobal, kTimelineGlobal);
  Value ptr = LLVM::GEPOp::create(
      b, loc, ptrGlobal, i64, base,
      ValueRange{add64(mul64(ext64(row), c64(kTimelineRowWords)), c64(slot))});
  LLVM::StoreOp::create(b, loc, value, ptr, /*alignment=*/8);
}

Value LoweringBase::timelineThread(RoleState &st) {
  // The load role's steps run in its one issuing thread already.
  if (st.role.getKind() == RoleKind::load)
    return arith::ConstantOp::create(b, loc, b.getBoolAttr(true));
  return cmp(arith::CmpIPredicate::eq, st.threadInRole, c32(0));
}

void LoweringBase::stampItem(RoleState &st, bool end) {
  if (st.timelineBase < 0)
    return;
  if (!end)
    st.waitStamps = 0;
  int64_t slot = !end                               ? st.timelineBase
                 : st.timelineBase == kTimelineLoad ? kTimelineLoad + 2
                                                    : kTimelineCompute + 5;
  stamp(slot, timelineThread(st));
}

void LoweringBase::stampWait(RoleState &st) {
  int64_t waits = st.timelineBase == kTimelineLoad ? 1 : 2;
  if (st.timelineBase < 0 || st.waitStamps >= waits)
    return;
  stamp(st.timelineBase + 1 + st.waitStamps++, timelineThread(st));
}
