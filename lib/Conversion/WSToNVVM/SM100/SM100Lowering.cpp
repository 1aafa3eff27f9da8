//===- SM100Lowering.cpp - sm_100a: tcgen05 and tensor memory -------------===//
//
// Roles and placement, tensor memory (allocation, column map), the MMA
// thread's products and commits, the softmax warpgroups' row of S (read once
// into registers) and stores of P, the correction warpgroup's rescale of O
// and epilogue (staging O for the epilogue warp's bulk copies), all one row
// per thread.
//
//===----------------------------------------------------------------------===//
#include "SM100Lowering.h"
#include "Tcgen05.h"

#include "llvm/ADT/StringSet.h"

#include <cmath>

using namespace mlir;
using namespace blasst;
using namespace blasst::ws;
using namespace blasst::ws::lowering;

/// Columns per tcgen05.ld of a softmax role's row of S (all in flight, one
/// wait) and per tcgen05.ld/st of the correction role (80 registers: 16).
constexpr int64_t kChunk = 32;
constexpr int64_t kCorrChunk = 16;
/// FA4's conditional rescale: a row keeps its running max while the max
/// grows by at most this much in the log2 domain (log2 256: exponentials
/// stay below 256).
constexpr float kRescaleThreshold = 8.0f;

std::unique_ptr<TargetLowering>
blasst::ws::lowering::createSM100Lowering(KernelEnv &env) {
  return std::make_unique<SM100Lowering>(env);
}

//===----------------------------------------------------------------------===//
// Roles and placement
//===----------------------------------------------------------------------===//

LogicalResult SM100Lowering::checkRole(RoleOp role) {
  switch (role.getKind()) {
  case RoleKind::softmax:
  case RoleKind::correction:
    // One row per thread: a warpgroup's warp w reaches tensor-memory lanes
    // [32 (w % 4), +32), so the role is one whole warpgroup.
    if (role.getWarpBegin() % 4 || role.getNumWarps() != 4)
      return role.emitOpError()
             << "on sm_100a a " << stringifyRoleKind(role.getKind())
             << " role is one warpgroup (4 warps from a multiple of 4), got "
                "warps ["
             << role.getWarpBegin() << ", " << role.getWarpEnd() << ")";
    return success();
  case RoleKind::mma:
  case RoleKind::load:
  case RoleKind::epilogue:
    return success();
  case RoleKind::compute:
    break;
  }
  return role.emitOpError()
         << "role kind 'compute' is not lowered on sm_100a (its schedule "
            "splits the work into softmax, correction, mma, load and "
            "epilogue roles)";
}

LogicalResult SM100Lowering::checkPlacement(Operation *op, RoleState &st) {
  RoleKind kind = st.role.getKind();
  auto refuse = [&](StringRef where) {
    return op->emitOpError() << "runs in a '" << stringifyRoleKind(kind)
                             << "' role; on sm_100a it runs in " << where;
  };
  if (isa<MmaOp>(op) && kind != RoleKind::mma)
    return refuse("the mma role");
  if (isa<ReadScoresOp, RowMaxOp, SoftmaxUpdateOp, Exp2StoreOp,
          StoreRowSumsOp>(op) &&
      kind != RoleKind::softmax)
    return refuse("a softmax role");
  if (isa<CorrectOp, EpilogueOp>(op) && kind != RoleKind::correction)
    return refuse("the correction role");
  if (isa<TmaLoadOp>(op) && kind != RoleKind::load)
    return refuse("the load role");
  if (isa<TmaStoreOp>(op) && kind != RoleKind::epilogue)
    return refuse("the epilogue role");
  if (isa<VoteOp, StoreVoteOp>(op) && kind != RoleKind::softmax)
    return refuse("a softmax role");
  if (isa<LoadVoteOp>(op) && kind != RoleKind::mma &&
      kind != RoleKind::correction)
    return refuse("the mma or the correction role");
  if (isa<AwaitVoteOp>(op))
    return op->emitOpError() << "is not lowered on sm_100a (V on demand is "
                                "sm_90a only)";
  if (auto u = dyn_cast<SoftmaxUpdateOp>(op); u && !u.getFactorsAttr())
    return op->emitOpError() << "on sm_100a hands the correction factors to "
                                "the correction role: it needs `-> @f`";
  if (auto c = dyn_cast<CorrectOp>(op); c && !c.getFactorsAttr())
    return op->emitOpError()
           << "on sm_100a reads the factors a softmax role wrote: it needs "
              "`by @f`";
  if (auto e = dyn_cast<EpilogueOp>(op);
      e && (!e.getSumsAttr() || !e.getStagingAttr()))
    return op->emitOpError() << "on sm_100a reads the row sums a softmax "
                                "role wrote and stages O for a tma_store: it "
                                "needs `-> @stage sums @l`";
  return success();
}

void SM100Lowering::initRunningState(RoleState &st) {
  // A softmax thread's row: m and l in registers (o unused: O is in tensor
  // memory, the placeholder keeps the driver's carried tuple).
  st.o = c32(0);
  for (int i = 0; i < 2; ++i) {
    st.m[i] = cf(-INFINITY);
    st.l[i] = cf(0.0f);
  }
}

//===----------------------------------------------------------------------===//
// Tensor memory
//===----------------------------------------------------------------------===//

int64_t SM100Lowering::allocColumns() {
  int64_t cols = std::max<int64_t>(kernel.getTensorMemoryColumns(), 32);
  return int64_t(llvm::PowerOf2Ceil(uint64_t(cols)));
}

int64_t SM100Lowering::tmemColumn(BufferOp buf) {
  if (std::optional<StringRef> of = buf.getAliases()) {
    int64_t at = 0;
    if (std::optional<ArrayRef<int64_t>> off = buf.getAliasOffset())
      at = (*off)[1];
    return tmemColumn(
               cast<BufferOp>(SymbolTable::lookupSymbolIn(kernel, *of))) +
           at;
  }
  int64_t col = 0;
  for (auto other : kernel.getBody().getOps<BufferOp>()) {
    if (other == buf)
      break;
    if (other.getSpace() == MemorySpace::tmem && !other.getAliases())
      col += other.getTensorMemoryColumns();
  }
  return col;
}

void SM100Lowering::emitKernelStart() {
  // Warp 0 allocates (a whole warp, .sync.aligned) and gives up the permit;
  // the address goes through shared memory to every thread.
  Value slot = smemPtr(c32(layout.tmemSlot));
  {
    OpBuilder::InsertionGuard guard(b);
    openIf(cmp(arith::CmpIPredicate::eq, warp, c32(0)));
    t5::emitTmemAlloc(b, loc, slot, allocColumns());
  }
  {
    // The descriptors of every shared-memory operand stage (Q and K
    // K-major, V MN-major), for the MMA thread.
    OpBuilder::InsertionGuard guard(b);
    openIf(cmp(arith::CmpIPredicate::eq, tid, c32(0)));
    llvm::StringSet<> done;
    auto write = [&](BufferOp buf, bool mnMajor) {
      if (buf.getSpace() != MemorySpace::smem ||
          !done.insert(buf.getSymName()).second)
        return;
      for (int64_t i = 0; i < int64_t(buf.getStages()); ++i) {
        Value desc = t5::emitSmemDesc(
            b, loc, smemAddr(c32(offsetOf(buf) + i * buf.getStageBytes())),
            operandLayout(buf, mnMajor));
        LLVM::StoreOp::create(b, loc, desc,
                              smemPtr(c32(descSlot(buf) + 8 * i)), 8);
      }
    };
    kernel.walk([&](MmaOp mma) {
      write(bufferOf(mma.getAAttr()), /*mnMajor=*/false);
      write(bufferOf(mma.getBAttr()), /*mnMajor=*/mma.getKind() == MmaKind::pv);
    });
  }
  t5::emitFenceBeforeThreadSync(b, loc);
  NVVM::Barrier0Op::create(b, loc);
  t5::emitFenceAfterThreadSync(b, loc);
  tmemBase = t5::emitTmemBase(b, loc, slot);
}

int64_t SM100Lowering::descSlot(BufferOp buf) {
  int64_t i = 0;
  for (auto other : kernel.getBody().getOps<BufferOp>()) {
    if (other == buf)
      break;
    i += int64_t(other.getStages());
  }
  return layout.tmemSlot + 8 * (1 + i);
}

Value SM100Lowering::loadDesc(BufferOp buf, Value stage) {
  Value slot = add(c32(descSlot(buf)), mul(stage, c32(8)));
  return LLVM::LoadOp::create(b, loc, i64, smemPtr(slot), 8);
}

void SM100Lowering::emitKernelEnd() {
  // Every role's tensor-memory accesses are done (waited for, and the MMA
  // thread's last commit was awaited by the correction role) before the
  // barrier; warp 0 frees the columns.
  t5::emitFenceBeforeThreadSync(b, loc);
  NVVM::Barrier0Op::create(b, loc);
  t5::emitFenceAfterThreadSync(b, loc);
  OpBuilder::InsertionGuard guard(b);
  openIf(cmp(arith::CmpIPredicate::eq, warp, c32(0)));
  t5::emitTmemDealloc(b, loc, tmemBase, allocColumns());
}

void SM100Lowering::emitCommitRelease(Value mbar) {
  t5::emitCommit(b, loc, mbar);
}

Value SM100Lowering::rowAddr(int64_t column) {
  // Lane 32 (warp % 4): the lanes this warp may access.
  Value laneBase = mul(remu(warp, c32(4)), c32(32));
  return t5::tmemAddr(b, loc, tmemBase, laneBase, column);
}

SmallVector<Value> SM100Lowering::loadF32(int64_t column, int64_t n) {
  Value v = t5::emitLoadColumns(b, loc, rowAddr(column), n, /*wait=*/true);
  SmallVector<Value> out;
  for (int64_t j = 0; j < n; ++j) {
    Value x = LLVM::ExtractElementOp::create(b, loc, v, c32(j));
    out.push_back(LLVM::BitcastOp::create(b, loc, f32, x));
  }
  return out;
}

void SM100Lowering::storeF32(int64_t column, ArrayRef<Value> vals) {
  auto vecTy = VectorType::get({int64_t(vals.size())}, i32);
  Value v = LLVM::UndefOp::create(b, loc, vecTy);
  for (auto [j, x] : llvm::enumerate(vals))
    v = LLVM::InsertElementOp::create(
        b, loc, v, LLVM::BitcastOp::create(b, loc, i32, x), c32(int64_t(j)));
  // Waiting per chunk: ptxas keeps a tcgen05.st's source registers until
  // its wait::st, and four chunks in flight are 128 of them.
  t5::emitStoreColumns(b, loc, rowAddr(column), v, /*wait=*/true);
}

Value SM100Lowering::packPair(Value x, Value y) {
  // The lower element in the low half (cvt.rn.bf16x2.f32 d, y, x).
  Value pair = LLVM::UndefOp::create(b, loc, VectorType::get({2}, f32));
  pair = LLVM::InsertElementOp::create(b, loc, pair, x, c32(0));
  pair = LLVM::InsertElementOp::create(b, loc, pair, y, c32(1));
  Value packed = LLVM::FPTruncOp::create(
      b, loc, VectorType::get({2}, elemTy), pair);
  return LLVM::BitcastOp::create(b, loc, i32, packed);
}

int64_t SM100Lowering::rowBeginOfStats(FlatSymbolRefAttr buf) {
  for (auto pipe : kernel.getBody().getOps<PipeOp>())
    for (Attribute a : pipe.getBuffers())
      if (cast<FlatSymbolRefAttr>(a).getValue() == buf.getValue())
        if (auto role = dyn_cast_or_null<RoleOp>(SymbolTable::lookupSymbolIn(
                kernel, pipe.getProducerAttr().getAttr())))
          return role.getRowBegin().value_or(0);
  return 0;
}

//===----------------------------------------------------------------------===//
// Matrix products (the MMA thread)
//===----------------------------------------------------------------------===//

LogicalResult SM100Lowering::emitMma(MmaOp op, RoleState &st) {
  BufferOp a = bufferOf(op.getAAttr()), bb = bufferOf(op.getBAttr()),
           d = bufferOf(op.getDAttr());
  if (d.getSpace() != MemorySpace::tmem)
    return op.emitOpError() << "writes " << op.getDAttr()
                            << "; on sm_100a the accumulator is in tensor "
                               "memory";
  if (bb.getSpace() != MemorySpace::smem)
    return op.emitOpError() << "reads B from " << op.getBAttr()
                            << "; on sm_100a B comes from shared memory";
  PipeOp bPipe;
  for (auto pipe : kernel.getBody().getOps<PipeOp>())
    for (Attribute x : pipe.getBuffers())
      if (cast<FlatSymbolRefAttr>(x).getValue() == bb.getSymName())
        bPipe = pipe;
  if (!bPipe)
    return op.emitOpError() << op.getBAttr() << " is carried by no pipe";
  auto ab = elemTy.isBF16() ? t5::MmaInputType::BF16 : t5::MmaInputType::F16;
  int64_t m = d.getShape()[0];
  // Only for a KV block that exists (Q Kᵀ of block n + 1 in the last
  // iteration, or of block 0 of a tile that sees no key, would compute
  // scores nobody reads).
  OpBuilder::InsertionGuard guard(b);
  if (Value exists = blockExists(st, bPipe, op.getAhead()))
    openIf(exists);
  // After the acquires (mbarrier waits): order the tensor-memory accesses
  // other threads made before their arrivals ahead of these products.
  t5::emitFenceAfterThreadSync(b, loc);
  auto [stage, phase] = stagePhase(st, bPipe, op.getAhead());
  (void)phase;
  int64_t bRows = bb.getShape()[0];
  Value base = reloadTmemBase();
  Value dAddr = t5::tmemAddr(b, loc, base, Value(), tmemColumn(d));
  Value falseV = arith::ConstantOp::create(b, loc, b.getBoolAttr(false));
  Value trueV = arith::ConstantOp::create(b, loc, b.getBoolAttr(true));
  if (op.getKind() == MmaKind::qk) {
    // S = Q Kᵀ: both K-major, 128B-swizzled 64-column panels as TMA wrote
    // them; a k-step of 16 is 32 bytes inside a panel.
    if (a.getSpace() != MemorySpace::smem)
      return op.emitOpError() << "reads Q from tensor memory; not lowered";
    int64_t n = bRows, k = a.getShape()[1];
    if (!t5::isValidMmaShapeF16(m, n))
      return op.emitOpError() << "has no tcgen05 shape M " << m << " N " << n;
    uint32_t idesc =
        t5::encodeInstrDescF16(ab, m, n, t5::Major::K, t5::Major::K);
    Value aDesc = loadDesc(a, c32(0));
    Value bDesc = loadDesc(bb, stage);
    for (int64_t j = 0; j < k / 16; ++j) {
      int64_t panel = (j * 16) / kPanelElems, in = (j * 16) % kPanelElems;
      Value ad = t5::advanceSmemDesc(
          b, loc, aDesc, panel * m * kSwizzleBytes + in * 2);
      Value bd = t5::advanceSmemDesc(
          b, loc, bDesc, panel * bRows * kSwizzleBytes + in * 2);
      t5::emitMmaSS(b, loc, dAddr, ad, bd, idesc, j ? trueV : falseV);
    }
    return success();
  }
  // O += P V: P (16-bit, two keys per column) from tensor memory, V
  // MN-major (LBO = one 64-column panel of all keys, SBO = 8 keys); a
  // k-step of 16 keys is 8 columns of P and 16 rows (2048 B) of V.
  if (a.getSpace() != MemorySpace::tmem)
    return op.emitOpError() << "reads P from shared memory; on sm_100a P is "
                               "in tensor memory";
  int64_t n = bb.getShape()[1], keys = bRows;
  if (!t5::isValidMmaShapeF16(m, n))
    return op.emitOpError() << "has no tcgen05 shape M " << m << " N " << n;
  uint32_t idesc =
      t5::encodeInstrDescF16(ab, m, n, t5::Major::K, t5::Major::MN);
  Value bDesc = loadDesc(bb, stage);
  // The first block overwrites O (whatever the correction role left there).
  Value accFirst = st.inLoop ? cmp(arith::CmpIPredicate::ne, st.kvBlock, c32(0))
                             : falseV;
  int64_t pCol = tmemColumn(a);
  for (int64_t j = 0; j < keys / 16; ++j) {
    Value aAddr = t5::tmemAddr(b, loc, base, Value(), pCol + 8 * j);
    Value bd = t5::advanceSmemDesc(b, loc, bDesc, j * 16 * kSwizzleBytes);
    t5::emitMmaTS(b, loc, dAddr, aAddr, bd, idesc, j ? trueV : accFirst);
  }
  return success();
}

LogicalResult SM100Lowering::emitMmaWait(MmaWaitOp op, RoleState &) {
  return op.emitOpError() << "is not lowered on sm_100a (the MMA role's "
                             "releases are tcgen05.commit)";
}

LogicalResult SM100Lowering::emitLoadFrag(LoadFragOp op, RoleState &) {
  return op.emitOpError() << "is not lowered on sm_100a";
}

//===----------------------------------------------------------------------===//
// Softmax (one row per thread)
//===----------------------------------------------------------------------===//

SmallVector<Value> SM100Lowering::readRow(int64_t col, int64_t n) {
  // Every load in flight before the one wait::ld.
  SmallVector<std::pair<Value, int64_t>> loads;
  for (int64_t at = 0; at < n;) {
    int64_t w = std::min<int64_t>(kChunk, int64_t(llvm::bit_floor(
                                              uint64_t(n - at))));
    loads.push_back({t5::emitLoadColumns(b, loc, rowAddr(col + at), w,
                                         /*wait=*/false),
                     w});
    at += w;
  }
  NVVM::Tcgen05WaitOp::create(
      b, loc, NVVM::Tcgen05WaitKindAttr::get(ctx, NVVM::Tcgen05WaitKind::LOAD));
  SmallVector<Value> out;
  for (auto [v, w] : loads)
    for (int64_t j = 0; j < w; ++j) {
      Value x = w == 1 ? v : LLVM::ExtractElementOp::create(b, loc, v, c32(j));
      out.push_back(LLVM::BitcastOp::create(b, loc, f32, x));
    }
  return out;
}

void SM100Lowering::maskRow(RoleState &st, MutableArrayRef<Value> s,
                            Value block) {
  // Sequence end and causal (bottom-right: key <= row + seqKV - seqQ).
  Value row = add(add(mul(mBlock, c32(blockM)), c32(st.rowBegin)), tileRow());
  Value limit = param(kSeqKV);
  if (spec.causal)
    limit = arith::MinSIOp::create(
        b, loc, limit,
        add(sub(add(row, param(kSeqKV)), param(kSeqQ)), c32(1)));
  // Key j of the block is visible below `limit`.
  Value rel = sub(limit, mul(block, c32(blockN)));
  Value negInf = cf(-INFINITY);
  for (size_t j = 0; j < s.size(); ++j)
    s[j] = select(cmp(arith::CmpIPredicate::sgt, rel, c32(int64_t(j))), s[j],
                  negInf);
}

LogicalResult SM100Lowering::emitReadScores(ReadScoresOp op, RoleState &st) {
  if (failed(requireBlock(op, st)))
    return failure();
  BufferOp s = bufferOf(op.getScoresAttr());
  int64_t n = s.getShape()[1];
  if (s.getSpace() != MemorySpace::tmem || n % 16 || n > 128)
    return op.emitOpError()
           << "reads " << op.getScoresAttr()
           << "; the sm_100a lowering holds a row of S (in tensor memory, a "
              "multiple of 16 and at most 128 columns) in a softmax thread's "
              "registers, got "
           << n << " columns";
  // The acquire waited for the MMA thread's commit: order the reads of S
  // after it. The whole row in registers (one wait::ld), masked once;
  // row_max and exp2_store_p work on it, so S may be released (and
  // overwritten) right after this step: fence::before orders the reads
  // before that release's arrive.
  t5::emitFenceAfterThreadSync(b, loc);
  st.sRow = readRow(tmemColumn(s), n);
  maskRow(st, st.sRow, blockOfScores(st));
  t5::emitFenceBeforeThreadSync(b, loc);
  return success();
}

LogicalResult SM100Lowering::emitRowMax(RowMaxOp op, RoleState &st) {
  if (failed(requireBlock(op, st)))
    return failure();
  if (op.getAhead() && *op.getAhead())
    return op.emitOpError() << "with ahead is not lowered on sm_100a";
  if (op.getSink())
    return op.emitOpError() << "with sink (split-KV decode) is not lowered on "
                               "sm_100a";
  if (st.sRow.empty())
    return op.emitOpError() << "needs a preceding ws.read_scores";
  // A tree (max is exact in any order): 7 levels instead of a 128-long
  // dependent chain.
  SmallVector<Value> level(st.sRow);
  while (level.size() > 1) {
    SmallVector<Value> next;
    for (size_t i = 0; i + 1 < level.size(); i += 2)
      next.push_back(fmax(level[i], level[i + 1]));
    if (level.size() % 2)
      next.push_back(level.back());
    level = std::move(next);
  }
  st.mBlock[0] = fmul(level[0], param(kScaleLog2));
  return success();
}

LogicalResult SM100Lowering::emitSoftmaxUpdate(SoftmaxUpdateOp op,
                                               RoleState &st) {
  if (failed(requireBlock(op, st)))
    return failure();
  if (!st.mBlock[0])
    return op.emitOpError() << "needs a preceding ws.row_max";
  Value mNew = fmax(st.m[0], st.mBlock[0]);
  // FA4's conditional rescale (kernels without a BLASST vote, which needs
  // the true running max): while the row max grew by at most
  // kRescaleThreshold (log2 domain) the row keeps its old max, so the
  // factor is exactly 1 and the correction role may leave O alone; the
  // exponentials are then at most 2^kRescaleThreshold. O and l use the same
  // max, so the final O / l and the LSE are exact. A row that has seen no
  // key (m = -inf) always takes the new max (the difference is +inf or NaN).
  Value keep;
  if (lazyRescale()) {
    keep = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLE,
                                 fsub(mNew, st.m[0]), cf(kRescaleThreshold));
    mNew = select(keep, st.m[0], mNew);
  }
  // A row with no visible key yet keeps m = -inf; subtract 0 instead.
  Value isInf = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, mNew,
                                      cf(-INFINITY));
  st.mUse[0] = select(isInf, cf(0.0f), mNew);
  st.corr[0] = exp2(fsub(st.m[0], st.mUse[0]));
  if (keep)
    st.corr[0] = select(keep, cf(1.0f), st.corr[0]);
  st.m[0] = mNew;
  // Per row: the factor and the running max, for the correction role.
  Value slot = add(c32(offsetOf(bufferOf(op.getFactorsAttr()))),
                   mul(tileRow(), c32(8)));
  LLVM::StoreOp::create(b, loc, st.corr[0], smemPtr(slot), 4);
  LLVM::StoreOp::create(b, loc, mNew, smemPtr(add(slot, c32(4))), 4);
  return success();
}

void SM100Lowering::storeColumns(int64_t col, ArrayRef<Value> vals) {
  // Power-of-two pieces (tcgen05.st .x1 ... .x128), no wait.
  for (size_t at = 0; at < vals.size();) {
    size_t w = llvm::bit_floor(vals.size() - at);
    Value v;
    if (w == 1) {
      v = vals[at];
    } else {
      v = LLVM::UndefOp::create(b, loc, VectorType::get({int64_t(w)}, i32));
      for (size_t j = 0; j < w; ++j)
        v = LLVM::InsertElementOp::create(b, loc, v, vals[at + j],
                                          c32(int64_t(j)));
    }
    t5::emitStoreColumns(b, loc, rowAddr(col + int64_t(at)), v,
                         /*wait=*/false);
    at += w;
  }
}

Value SM100Lowering::exp2StoreRow(RoleState &st, int64_t pCol, int64_t hold) {
  // The row in quarters: quarter q's exponentials, packed two per column;
  // the first store once `hold` quarters are packed, then one per quarter.
  ArrayRef<Value> row = st.sRow;
  int64_t quarter = int64_t(row.size()) / 4;
  Value negM = arith::NegFOp::create(b, loc, st.mUse[0]);
  Value sum = cf(0.0f);
  SmallVector<Value> packed;
  size_t stored = 0;
  for (int64_t q = 0; q < 4; ++q) {
    for (int64_t j = q * quarter; j < (q + 1) * quarter; j += 2) {
      Value e[2];
      for (int k = 0; k < 2; ++k) {
        e[k] = exp2(
            LLVM::FMAOp::create(b, loc, row[j + k], param(kScaleLog2), negM));
        sum = fadd(sum, e[k]);
      }
      packed.push_back(packPair(e[0], e[1]));
    }
    if (q + 1 < hold)
      continue;
    storeColumns(pCol + int64_t(stored), ArrayRef(packed).drop_front(stored));
    stored = packed.size();
  }
  return sum;
}

LogicalResult SM100Lowering::emitExp2Store(Exp2StoreOp op, RoleState &st) {
  if (failed(requireBlock(op, st)))
    return failure();
  if (!st.mUse[0])
    return op.emitOpError() << "needs a preceding ws.softmax_update";
  if (st.sRow.empty())
    return op.emitOpError() << "needs a preceding ws.read_scores";
  BufferOp p = bufferOf(op.getPAttr());
  int64_t pCols = int64_t(st.sRow.size()) / 2;
  if (p.getSpace() != MemorySpace::tmem ||
      tmemColumn(p) + pCols > allocColumns())
    return op.emitOpError()
           << "stores P in " << op.getPAttr()
           << "; the sm_100a lowering stores P (" << pCols
           << " columns) in the kernel's tensor memory";
  int64_t hold = op.getHold().value_or(1);
  if (hold < 1 || hold > 4)
    return op.emitOpError() << "hold must be 1 to 4 quarters, got " << hold;
  // S is in registers (read_scores): P may go anywhere the IR puts it (over
  // its own S, or with cross-stage P over the sibling's S once the
  // handshake tokens said it was read). The acquires before this step
  // waited for those tokens and for the P V that read the previous P.
  t5::emitFenceAfterThreadSync(b, loc);
  Value sum = exp2StoreRow(st, tmemColumn(p), hold);
  st.l[0] = fadd(fmul(st.l[0], st.corr[0]), sum);
  // P complete before the release: wait for the stores, then order them
  // before the arrive.
  NVVM::Tcgen05WaitOp::create(
      b, loc,
      NVVM::Tcgen05WaitKindAttr::get(ctx, NVVM::Tcgen05WaitKind::STORE));
  t5::emitFenceBeforeThreadSync(b, loc);
  return success();
}

LogicalResult SM100Lowering::emitExp2InPlace(Exp2Op op, RoleState &) {
  return op.emitOpError() << "is not lowered on sm_100a";
}

LogicalResult SM100Lowering::emitPackP(PackPOp op, RoleState &) {
  return op.emitOpError() << "is not lowered on sm_100a";
}

LogicalResult SM100Lowering::emitStoreRowSums(StoreRowSumsOp op,
                                              RoleState &st) {
  Value slot = add(c32(offsetOf(bufferOf(op.getDstAttr()))),
                   mul(tileRow(), c32(8)));
  LLVM::StoreOp::create(b, loc, st.l[0], smemPtr(slot), 4);
  LLVM::StoreOp::create(b, loc, st.m[0], smemPtr(add(slot, c32(4))), 4);
  return success();
}

Value SM100Lowering::voteSkipsOwnRows(RoleState &st) {
  // This thread's row: m_block - m_running < log2(lambda) (both already
  // scaled by log2 e · scale); a row past seqQ abstains, NaN (-inf - -inf)
  // compares false. Block 0 is always kept: its P V overwrites O
  // (accumulate off), so skipping it would leave O undefined.
  Value small = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT,
                                      fsub(st.mBlock[0], st.m[0]),
                                      st.threshold);
  Value row = add(add(mul(mBlock, c32(blockM)), c32(st.rowBegin)), tileRow());
  Value abstain = cmp(arith::CmpIPredicate::sge, row, param(kSeqQ));
  Value pred = arith::OrIOp::create(b, loc, small, abstain);
  return arith::AndIOp::create(
      b, loc, pred, cmp(arith::CmpIPredicate::ne, st.kvBlock, c32(0)));
}

//===----------------------------------------------------------------------===//
// Correction and epilogue (one row per thread)
//===----------------------------------------------------------------------===//

LogicalResult SM100Lowering::emitCorrect(CorrectOp op, RoleState &st) {
  if (!st.inLoop)
    return op.emitOpError() << "is lowered inside the kv_loop only";
  BufferOp o = bufferOf(op.getAccAttr());
  Value slot = add(c32(offsetOf(bufferOf(op.getFactorsAttr()))),
                   mul(tileRow(), c32(8)));
  Value factor = LLVM::LoadOp::create(b, loc, f32, smemPtr(slot), 4);
  // Block 0: O holds nothing yet (its P V overwrites it). Uniform branch.
  OpBuilder::InsertionGuard guard(b);
  openIf(cmp(arith::CmpIPredicate::ne, st.kvBlock, c32(0)));
  // Conditional rescale: a warp whose 32 rows all kept their max (factor
  // exactly 1) skips the tensor-memory round trip; tcgen05.ld/st are
  // warp-collective, hence the vote.
  if (lazyRescale()) {
    Value rescale = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE,
                                          factor, cf(1.0f));
    openIf(NVVM::VoteSyncOp::create(b, loc, i1, c32(-1), rescale,
                                    NVVM::VoteSyncKind::any));
  }
  t5::emitFenceAfterThreadSync(b, loc);
  int64_t col = tmemColumn(o), n = o.getShape()[1];
  for (int64_t c = 0; c < n / kCorrChunk; ++c) {
    SmallVector<Value> v = loadF32(col + c * kCorrChunk, kCorrChunk);
    for (Value &x : v)
      x = fmul(x, factor);
    storeF32(col + c * kCorrChunk, v);
  }
  NVVM::Tcgen05WaitOp::create(
      b, loc,
      NVVM::Tcgen05WaitKindAttr::get(ctx, NVVM::Tcgen05WaitKind::STORE));
  t5::emitFenceBeforeThreadSync(b, loc);
  return success();
}

LogicalResult SM100Lowering::emitEpilogue(EpilogueOp op, RoleState &st) {
  if (st.inLoop)
    return op.emitOpError() << "inside the kv_loop is not lowered";
  BufferOp o = bufferOf(op.getAccAttr());
  BufferOp stage = bufferOf(op.getStagingAttr());
  int64_t dv = o.getShape()[1];
  if (stage.getShape()[0] != 128 || stage.getShape()[1] != dv)
    return op.emitOpError() << "stages a " << stage.getShape()[0] << "x"
                            << stage.getShape()[1] << " tile for a 128x" << dv
                            << " accumulator";
  Value r = tileRow();
  Value slot = add(c32(offsetOf(bufferOf(op.getSumsAttr()))), mul(r, c32(8)));
  Value l = LLVM::LoadOp::create(b, loc, f32, smemPtr(slot), 4);
  Value m = LLVM::LoadOp::create(b, loc, f32, smemPtr(add(slot, c32(4))), 4);
  // Rows that saw no key (causal, seqQ > seqKV) output 0 and LSE -inf.
  Value empty =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, l, cf(0.0f));
  Value inv =
      select(empty, cf(0.0f), arith::DivFOp::create(b, loc, cf(1.0f), l));
  // The acquire of the done pipe waited for the last commit.
  t5::emitFenceAfterThreadSync(b, loc);
  int64_t col = tmemColumn(o);
  // The staging tile has TMA's layout, as Q's tile (which it lies over):
  // 64-column panels of 128 rows x 128 B, 128B-swizzled: the 16-byte chunk
  // j of row r (columns 8j..8j+7 of its panel) at r · 128 + (j ^ r % 8) · 16.
  // The epilogue warp stores each panel with one cp.async.bulk.tensor; the
  // eight rows of a quarter-warp's 16-byte stores hit eight distinct chunks.
  if (dv % kPanelElems)
    return op.emitOpError() << "stages O for a TMA store in 64-column panels "
                               "(one 128-byte swizzle span), got "
                            << dv << " columns";
  // computeLayout puts every smem buffer at a multiple of kTileAlign (an
  // alias at its aliasee's offset): panel rows r and r + 8 swizzle alike.
  Value rowBase = add(c32(offsetOf(stage)), mul(r, c32(kSwizzleBytes)));
  Value rowSwizzle = remu(r, c32(8));
  for (int64_t c = 0; c < dv / kCorrChunk; ++c) {
    SmallVector<Value> v = loadF32(col + c * kCorrChunk, kCorrChunk);
    for (int64_t q = 0; q < kCorrChunk / 8; ++q) {
      Value vec = LLVM::UndefOp::create(b, loc, VectorType::get({4}, i32));
      for (int64_t j = 0; j < 4; ++j)
        vec = LLVM::InsertElementOp::create(
            b, loc, vec,
            packPair(fmul(v[8 * q + 2 * j], inv), fmul(v[8 * q + 2 * j + 1], inv)),
            c32(j));
      int64_t chunk = (c * kCorrChunk) / 8 + q; // 8 columns of dv
      int64_t panel = chunk / 8;
      Value at = add(add(rowBase, c32(panel * 128 * kSwizzleBytes)),
                     mul(arith::XOrIOp::create(b, loc, rowSwizzle,
                                               c32(chunk % 8)),
                         c32(16)));
      LLVM::StoreOp::create(b, loc, vec, smemPtr(at), 16);
    }
  }
  t5::emitFenceBeforeThreadSync(b, loc);
  // The bulk copies (async proxy) read what these generic stores wrote.
  NVVM::FenceProxyOp::create(
      b, loc, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
  if (op.getLse()) {
    Value row = add(add(mul(mBlock, c32(blockM)),
                        c32(rowBeginOfStats(op.getSumsAttr()))),
                    r);
    Value seqQ = param(kSeqQ);
    OpBuilder::InsertionGuard guard(b);
    openIf(cmp(arith::CmpIPredicate::slt, row, seqQ));
    // lse = ln(sum exp(s * scale)) = (m + log2 l) * ln 2.
    Value log2l = LLVM::CallIntrinsicOp::create(
                      b, loc, f32, b.getStringAttr("llvm.nvvm.lg2.approx.f"),
                      ValueRange{l})
                      .getResult(0);
    Value lse = fmul(fadd(m, log2l), cf(float(M_LN2)));
    lse = select(empty, cf(-INFINITY), lse);
    storeLse(batch, head, seqQ, row, lse);
  }
  return success();
}

LogicalResult SM100Lowering::emitTmaStore(TmaStoreOp op, RoleState &st) {
  if (op.getTensor() != Tensor::o)
    return op.emitOpError() << "stores only O";
  BufferOp stage = bufferOf(op.getSrcAttr());
  EpilogueOp writer;
  kernel.walk([&](EpilogueOp e) {
    if (e.getStagingAttr() &&
        e.getStagingAttr().getValue() == stage.getSymName())
      writer = e;
  });
  if (!writer || !writer.getSumsAttr())
    return op.emitOpError() << "stores " << op.getSrcAttr()
                            << ", which no ws.epilogue with `sums` stages";
  int64_t rows = stage.getShape()[0], dv = stage.getShape()[1];
  if (rows != 128 || dv % kPanelElems)
    return op.emitOpError() << "stores O in boxes of 128 rows by 64 columns "
                               "(O's tensor map), not a "
                            << rows << "x" << dv << " tile";
  int64_t rowBegin = rowBeginOfStats(writer.getSumsAttr());
  // One thread stores the tile through O's tensor map (ABI 4, parameter
  // 15): a box of {64 columns, 1 head, 128 rows, 1} per panel from the
  // swizzled staging tile. The TMA unit writes nothing outside the tensor,
  // so rows at or past seqQ (the tensor map's sequence extent) stay
  // untouched. Its bulk group is its own: commit, then wait until the
  // staging tile has been read (the release, and the CTA's exit, follow).
  OpBuilder::InsertionGuard guard(b);
  openIf(cmp(arith::CmpIPredicate::eq, st.threadInRole, c32(0)));
  Value seqCoord =
      add(mul(mBlock, c32(blockM)), c32(rowBegin));
  for (int64_t p = 0; p < dv / kPanelElems; ++p) {
    Value src =
        smemPtr(add(c32(offsetOf(stage)), c32(p * rows * kSwizzleBytes)));
    SmallVector<Value> coords = {c32(p * kPanelElems), head, seqCoord, batch};
    NVVM::CpAsyncBulkTensorSharedCTAToGlobalOp::create(
        b, loc, param(kTmO), src, coords, Value(), NVVM::TMAStoreMode::TILE,
        Value());
  }
  NVVM::CpAsyncBulkCommitGroupOp::create(b, loc);
  // The staging tile may be reused once the copies have read it.
  NVVM::CpAsyncBulkWaitGroupOp::create(b, loc, b.getI32IntegerAttr(0),
                                       b.getUnitAttr());
  return success();
}
