//===- SM90Decode.cpp - sm_90a: the decode epilogue -----------------------===//
//
// The epilogue of the decode schedule (ws.kernel q_group, split_kv): tile
// rows are (token, q head) pairs of one KV head; with one split O is written
// directly, with several each split writes its normalised O (f32) and LSE to
// the workspace and the last split of the tile to finish merges them by LSE.
//
// Workspace (kernel parameter 14, ABI 3), for T = batch x kv_heads x query
// tiles tiles and S splits (grid x = query tiles x S; persistent: parameter
// 19; lean: two slots per CTA instead of T x S, LoweringBase::leanSlot):
//   float partO[T][S][block_m][head_dim_v]
//   float partLse[T][S][block_m]          (log2 domain: m + log2 l, -inf)
//   int32 counter[T]                      (zero before the first launch; the
//                                          merging CTA resets it to zero)
// tile = (batch * kv_heads + kv_head) * query tiles + query tile. Rows
// without a token (past seq_q, or the padding rows when q_group does not
// divide block_m: tokenOfRow) are neither written to the workspace nor
// merged nor stored.
//
//===----------------------------------------------------------------------===//
#include "SM90Lowering.h"

#include <cmath>

using namespace mlir;
using namespace blasst;
using namespace blasst::ws;
using namespace blasst::ws::lowering;

/// O and LSE of one output row of a packed tile: row `row` (i32, in the
/// tile) goes to token tokenOfRow(row) of q head qHeadOfRow(row).
void SM90Lowering::storeDecodeRow(Value row, ArrayRef<std::pair<Value, Value>> cols,
                                  Value lseLog2) {
  Value token = tokenOfRow(row), qHead = qHeadOfRow(row);
  Value seqQ = param(kSeqQ);
  OpBuilder::InsertionGuard guard(b);
  openIf(cmp(arith::CmpIPredicate::slt, token, seqQ));
  Value base = LLVM::GEPOp::create(
      b, loc, ptrGen, elemTy, param(kO),
      ValueRange{add64(add64(mul64(ext64(batch), param(kOStrideB)),
                             mul64(ext64(qHead), param(kOStrideH))),
                       mul64(ext64(token), param(kOStrideS)))});
  auto pairTy = VectorType::get({2}, f32);
  auto pairElemTy = VectorType::get({2}, elemTy);
  for (auto [col, pairValue] : cols) {
    (void)pairTy;
    Value packed = LLVM::FPTruncOp::create(b, loc, pairElemTy, pairValue);
    Value ptr =
        LLVM::GEPOp::create(b, loc, ptrGen, elemTy, base, ValueRange{col});
    LLVM::StoreOp::create(b, loc, packed, ptr, /*alignment=*/4);
  }
  if (lseLog2) {
    Value lse = select(arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                             lseLog2, cf(-INFINITY)),
                       cf(-INFINITY), fmul(lseLog2, cf(float(M_LN2))));
    storeLse(batch, qHead, seqQ, token, lse);
  }
}

LogicalResult SM90Lowering::emitDecodeEpilogue(EpilogueOp op, RoleState &st) {
  int64_t n = bufferOf(op.getAccAttr()).getShape()[1];
  Value t = st.threadInRole;
  Value w = divu(t, c32(32)), ln = remu(t, c32(32));
  Value rowInTile = add(c32(st.rowBegin), add(mul(w, c32(16)), divu(ln, c32(4))));
  Value col0 = mul(remu(ln, c32(4)), c32(2));
  auto pairTy = VectorType::get({2}, f32);
  Value quadLead = cmp(arith::CmpIPredicate::eq, remu(ln, c32(4)), c32(0));

  // Per fragment row: 1 / l (0 for a row that saw no key) and the LSE in
  // the log2 domain.
  Value inv[2], lse2[2];
  for (int i = 0; i < 2; ++i) {
    Value l = quadReduce(st.l[i], /*isMax=*/false);
    Value empty =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, l, cf(0.0f));
    inv[i] = select(empty, cf(0.0f), arith::DivFOp::create(b, loc, cf(1.0f), l));
    Value log2l = LLVM::CallIntrinsicOp::create(
                      b, loc, f32, b.getStringAttr("llvm.nvvm.lg2.approx.f"),
                      ValueRange{l})
                      .getResult(0);
    lse2[i] = select(empty, cf(-INFINITY), fadd(st.m[i], log2l));
  }
  auto normalisedPair = [&](int i, int64_t j) {
    Value pair = LLVM::UndefOp::create(b, loc, pairTy);
    for (int k = 0; k < 2; ++k)
      pair = LLVM::InsertElementOp::create(
          b, loc, pair, fmul(extract(st.o, 4 * j + 2 * i + k), inv[i]),
          c32(k));
    return pair;
  };

  // One split (null workspace): O straight to the output. Lean: a tile one
  // CTA covers alone too.
  Value ws = param(kWorkspace);
  Value direct = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, ws,
                                      LLVM::ZeroOp::create(b, loc, ptrGen));
  bool lean = kernel.getLean(), balanced = kernel.getBalancedSplits();
  if (lean || balanced)
    direct = arith::OrIOp::create(
        b, loc, direct, cmp(arith::CmpIPredicate::eq, tileSplits, c32(1)));
  auto ifOp = scf::IfOp::create(b, loc, TypeRange{}, direct,
                                /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    for (int i = 0; i < 2; ++i) {
      SmallVector<std::pair<Value, Value>> cols;
      for (int64_t j = 0; j < n / 8; ++j)
        cols.push_back({add(col0, c32(8 * j)), normalisedPair(i, j)});
      Value row = add(rowInTile, c32(8 * i));
      // The LSE once per row (the quad's first thread).
      storeDecodeRow(row, cols, Value());
      if (op.getLse()) {
        OpBuilder::InsertionGuard inner(b);
        openIf(quadLead);
        storeDecodeRow(row, {}, lse2[i]);
      }
    }
  }
  b.setInsertionPoint(ifOp.elseBlock()->getTerminator());

  // Several splits: this split's partial O and LSE into the workspace.
  auto [batches, kvHeads] = decodeTileGrid();
  Value numTiles = mul(mul(batches, kvHeads), numQTiles);
  Value tile = add(mul(add(mul(batch, kvHeads), kvHead), numQTiles), mBlock);
  // Slots (tile, split); lean: two per CTA (LoweringBase::leanSlot);
  // balanced_splits: one per CTA of the grid (a tile's are consecutive).
  Value gridX = NVVM::GridDimXOp::create(b, loc, i32);
  Value slots = lean       ? mul64(c64(2), ext64(gridX))
                : balanced ? ext64(gridX)
                           : mul64(ext64(numTiles), ext64(numSplits));
  Value lseBase = mul64(mul64(slots, c64(blockM)), c64(n));
  Value counterBase = add64(lseBase, mul64(slots, c64(blockM)));
  Value mySlot =
      lean       ? leanSlot
      : balanced ? ext64(NVVM::BlockIdXOp::create(b, loc, i32))
                 : add64(mul64(ext64(tile), ext64(numSplits)), ext64(split));
  for (int i = 0; i < 2; ++i) {
    Value row = add(rowInTile, c32(8 * i));
    // Only rows with a token have a partial (the merge reads no other):
    // at seq_q 1 and q_group 4 that is 4 rows of 64. Padding rows (q_group
    // not dividing block_m) have token kPaddingToken.
    OpBuilder::InsertionGuard rowGuard(b);
    openIf(cmp(arith::CmpIPredicate::slt, tokenOfRow(row), param(kSeqQ)));
    Value rowBase =
        add64(mul64(add64(mul64(mySlot, c64(blockM)), ext64(row)), c64(n)),
              ext64(col0));
    for (int64_t j = 0; j < n / 8; ++j) {
      Value ptr = LLVM::GEPOp::create(b, loc, ptrGen, f32, ws,
                                      ValueRange{add64(rowBase, c64(8 * j))});
      LLVM::StoreOp::create(b, loc, normalisedPair(i, j), ptr,
                            /*alignment=*/8);
    }
    OpBuilder::InsertionGuard inner(b);
    openIf(quadLead);
    Value ptr = LLVM::GEPOp::create(
        b, loc, ptrGen, f32, ws,
        ValueRange{add64(lseBase, add64(mul64(mySlot, c64(blockM)),
                                        ext64(row)))});
    LLVM::StoreOp::create(b, loc, lse2[i], ptr, /*alignment=*/4);
  }
  // merge_kernel: when the launch says so (parameter kMergeLaunch), the
  // second kernel (emitMergeKernel) merges the partials once this grid has
  // finished (griddepcontrol.wait); otherwise the tile's last split does.
  if (kernel.getMergeKernel())
    openIf(cmp(arith::CmpIPredicate::eq, param(kMergeLaunch), c32(0)));
  // Release: the partials are visible GPU-wide before the counter moves.
  NVVM::MembarOp::create(b, loc, NVVM::MemScopeKind::GPU);
  int64_t roleThreads = st.role.getNumWarps() * 32;
  NVVM::BarrierOp::create(b, loc, Type(), c32(st.barrierId), c32(roleThreads),
                          nullptr, Value());
  // One thread counts the split in; the last one resets the counter (the
  // workspace is reusable by the next launch) and its role merges.
  Value counter = LLVM::GEPOp::create(b, loc, ptrGen, i32, ws,
                                      ValueRange{add64(counterBase, ext64(tile))});
  Value first = cmp(arith::CmpIPredicate::eq, t, c32(0));
  auto count = scf::IfOp::create(b, loc, TypeRange{i1}, first,
                                 /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(count.thenBlock());
    Value old = LLVM::AtomicRMWOp::create(b, loc, LLVM::AtomicBinOp::add,
                                          counter, c32(1),
                                          LLVM::AtomicOrdering::acq_rel);
    Value last = cmp(arith::CmpIPredicate::eq, old, sub(tileSplits, c32(1)));
    {
      OpBuilder::InsertionGuard reset(b);
      openIf(last);
      LLVM::StoreOp::create(b, loc, c32(0), counter, /*alignment=*/4);
    }
    scf::YieldOp::create(b, loc, ValueRange{last});
    b.setInsertionPointToStart(count.elseBlock());
    scf::YieldOp::create(b, loc, ValueRange{arith::ConstantOp::create(
                                     b, loc, b.getBoolAttr(false))});
  }
  Value isLast =
      LLVM::CallIntrinsicOp::create(
          b, loc, i1,
          b.getStringAttr("llvm.nvvm.barrier.cta.red.or.aligned.count"),
          ValueRange{c32(st.barrierId), c32(roleThreads), count.getResult(0)})
          .getResult(0);
  if (st.timelineBase == kTimelineCompute)
    stamp(kTimelineCounter, timelineThread(st));
  openIf(isLast);
  // Acquire: the other splits' partials, written before their counts.
  NVVM::MembarOp::create(b, loc, NVVM::MemScopeKind::GPU);
  // The merge: each thread takes four columns of a row in turn (rows
  // without a token are left out; they follow the rows with one, so at
  // seq_q 1 and q_group 4 the 128 threads cover the tile's 4 rows of 128
  // columns in their first pass);
  // O = sum_s 2^(lse_s - m) O_s / sum_s 2^(lse_s - m), m = max_s lse_s, in
  // one online pass over the splits in chunks of kMergeChunk: a chunk's
  // loads are independent of one another and of the running values, so a
  // thread waits for one memory latency per chunk (the merging CTA runs
  // after every other split has finished: its latency is the launch's;
  // session 22 timed the merge at 3.8 µs with column pairs in chunks of 8,
  // four round trips at 16 splits).
  // Indices past S are clamped to S - 1 and weigh 0.
  constexpr int64_t kMergeChunk = 16;
  Value tileSlot =
      lean || balanced ? leanFirstCta : mul64(ext64(tile), ext64(numSplits));
  Value quads = c32(blockM * n / kMergeCols);
  auto loop = scf::ForOp::create(b, loc, t, quads, c32(roleThreads));
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value idx = loop.getInductionVar();
    Value row = divu(idx, c32(n / kMergeCols));
    Value col = mul(remu(idx, c32(n / kMergeCols)), c32(kMergeCols));
    openIf(cmp(arith::CmpIPredicate::slt, tokenOfRow(row), param(kSeqQ)));
    MergedQuad r = foldSplits(ws, lseBase, tileSlot, row, col, c32(0),
                              /*stride=*/1, tileSplits, kMergeChunk, n,
                              lean ? leanZeroOffset : Value());
    storeMergedQuad(op, row, col, r);
  }
  return success();
}

SM90Lowering::MergedQuad
SM90Lowering::foldSplits(Value ws, Value lseBase, Value tileSlot, Value row,
                         Value col, Value first, int64_t stride, Value count,
                         int64_t chunk, int64_t n, Value zeroOffset) {
  auto quadTy = VectorType::get({kMergeCols}, f32);
  // Split s's LSE at lseRow + s x block_m, its columns at oRow + s x
  // block_m x n (floats).
  Value rowSlot = add64(mul64(tileSlot, c64(blockM)), ext64(row));
  Value lseRow = add64(lseBase, rowSlot);
  Value oRow = add64(mul64(rowSlot, c64(n)), ext64(col));
  Value lastSplit = sub(count, c32(1));
  Value zeroQuad = LLVM::ZeroOp::create(b, loc, quadTy);
  auto chunks = scf::ForOp::create(b, loc, first, count, c32(chunk * stride),
                                   ValueRange{cf(-INFINITY), cf(0.0f), zeroQuad});
  OpBuilder::InsertionGuard inner(b);
  b.setInsertionPointToStart(chunks.getBody());
  Value s0 = chunks.getInductionVar();
  Value m = chunks.getRegionIterArgs()[0];
  SmallVector<Value> lse, part;
  for (int64_t k = 0; k < chunk; ++k) {
    Value s = add(s0, c32(k * stride));
    Value inRange = cmp(arith::CmpIPredicate::slt, s, count);
    Value si = select(inRange, s, lastSplit);
    if (zeroOffset)
      si = select(cmp(arith::CmpIPredicate::eq, si, c32(0)), zeroOffset, si);
    Value sc = ext64(si);
    Value lsePtr = LLVM::GEPOp::create(
        b, loc, ptrGen, f32, ws,
        ValueRange{add64(lseRow, mul64(sc, c64(blockM)))});
    Value oPtr = LLVM::GEPOp::create(
        b, loc, ptrGen, f32, ws,
        ValueRange{add64(oRow, mul64(sc, c64(blockM * n)))});
    lse.push_back(select(
        inRange,
        LLVM::LoadOp::create(b, loc, f32, lsePtr, /*alignment=*/4).getResult(),
        cf(-INFINITY)));
    part.push_back(LLVM::LoadOp::create(b, loc, quadTy, oPtr,
                                        /*alignment=*/4 * kMergeCols));
  }
  Value mNew = m;
  for (Value x : lse)
    mNew = fmax(mNew, x);
  // m stays -inf while every split so far was empty: weights 0.
  Value mSafe = nonInfinite(mNew);
  Value scale = exp2(fsub(m, mSafe));
  Value sum = fmul(chunks.getRegionIterArgs()[1], scale);
  Value acc = arith::MulFOp::create(b, loc, chunks.getRegionIterArgs()[2],
                                    splat(scale));
  for (int64_t k = 0; k < chunk; ++k) {
    Value wgt = exp2(fsub(lse[k], mSafe));
    sum = fadd(sum, wgt);
    acc = arith::AddFOp::create(b, loc, acc,
                                arith::MulFOp::create(b, loc, splat(wgt), part[k]));
  }
  scf::YieldOp::create(b, loc, ValueRange{mNew, sum, acc});
  return {chunks.getResult(0), chunks.getResult(1), chunks.getResult(2)};
}

Value SM90Lowering::splat(Value x) {
  auto quadTy = VectorType::get({kMergeCols}, f32);
  Value v = LLVM::UndefOp::create(b, loc, quadTy);
  for (int64_t k = 0; k < kMergeCols; ++k)
    v = LLVM::InsertElementOp::create(b, loc, v, x, c32(k));
  return v;
}

Value SM90Lowering::nonInfinite(Value m) {
  return select(arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, m,
                                      cf(-INFINITY)),
                cf(0.0f), m);
}

void SM90Lowering::storeMergedQuad(EpilogueOp op, Value row, Value col,
                                   MergedQuad r) {
  auto pairTy = VectorType::get({2}, f32);
  // Every split empty (a row that sees no key): O = 0, LSE = -inf.
  Value none = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, r.m,
                                     cf(-INFINITY));
  Value inverse =
      select(none, cf(0.0f), arith::DivFOp::create(b, loc, cf(1.0f), r.sum));
  Value out = arith::MulFOp::create(b, loc, r.acc, splat(inverse));
  SmallVector<std::pair<Value, Value>> cols;
  for (int64_t h = 0; h < kMergeCols / 2; ++h) {
    Value pair = LLVM::UndefOp::create(b, loc, pairTy);
    for (int64_t k = 0; k < 2; ++k)
      pair = LLVM::InsertElementOp::create(
          b, loc, pair,
          LLVM::ExtractElementOp::create(b, loc, out, c32(2 * h + k)), c32(k));
    cols.push_back({add(col, c32(2 * h)), pair});
  }
  storeDecodeRow(row, cols, Value());
  if (op.getLse()) {
    OpBuilder::InsertionGuard inner(b);
    openIf(cmp(arith::CmpIPredicate::eq, col, c32(0)));
    Value log2s = LLVM::CallIntrinsicOp::create(
                      b, loc, f32, b.getStringAttr("llvm.nvvm.lg2.approx.f"),
                      ValueRange{r.sum})
                      .getResult(0);
    storeDecodeRow(row, {}, select(none, cf(-INFINITY), fadd(r.m, log2s)));
  }
}

// The merge kernel (ws.kernel merge_kernel): grid (query tiles x M, kv
// heads, batch), 256 threads. CTA g of a tile takes its four-column units
// 32 g to 32 g + 31 (unit u: row u / (n / 4), columns 4 (u mod n / 4));
// warp w folds splits w, w + 8, w + 16, ... of the unit its lane names, and
// the first warp combines the eight partial folds through shared memory and
// stores the row's columns (and LSE). Its parameters are a persistent
// decode kernel's (19: the launch's split count), so the runtime passes the
// attention kernel's parameter array unchanged.
LogicalResult SM90Lowering::emitMergeKernel(ModuleOp module) {
  EpilogueOp epilogue;
  kernel.walk([&](EpilogueOp e) { epilogue = e; });
  if (!epilogue || !qGroup)
    return kernel.emitOpError()
           << "merge_kernel needs a decode kernel (q_group) with a ws.epilogue";
  int64_t n = bufferOf(epilogue.getAccAttr()).getShape()[1];
  constexpr int64_t kWarps = 8, kUnitsPerCTA = 32, kFields = 2 + kMergeCols;
  if (n % kMergeCols)
    return epilogue.emitOpError()
           << "merge_kernel: head_dim_v " << n << " is not a multiple of "
           << kMergeCols;

  // Kernel state the shared helpers (param, tokenOfRow, storeDecodeRow)
  // read; the attention kernel's is restored afterwards.
  LLVM::LLVMFuncOp attention = func;
  Value saved[] = {tid, mBlock, head, batch, kvHead, numQTiles, numSplits};
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(module.getBody());
  StringRef smemName = "__blasst_merge_smem";
  auto smemTy = LLVM::LLVMArrayType::get(f32, kWarps * kUnitsPerCTA * kFields);
  if (!module.lookupSymbol(smemName))
    LLVM::GlobalOp::create(b, loc, smemTy, /*isConstant=*/false,
                           LLVM::Linkage::Internal, smemName, Attribute(),
                           /*alignment=*/16, /*addrSpace=*/3);
  // The persistent-decode parameter list: the launch passes the same
  // arguments to both kernels.
  SmallVector<Type> params = abiParamTypes(kDecodeBatch + 1);
  auto fnType =
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), params);
  func = LLVM::LLVMFuncOp::create(b, loc, (kernel.getSymName() + "_merge").str(),
                                  fnType);
  func->setAttr(NVVM::NVVMDialect::getKernelFuncAttrName(), b.getUnitAttr());
  func->setAttr(NVVM::NVVMDialect::getMaxntidAttrName(),
                b.getDenseI32ArrayAttr({int32_t(kWarps * 32), 1, 1}));
  func->setAttr("blasst.merge_of", b.getStringAttr(kernel.getSymName()));
  for (unsigned i : {unsigned(kO), unsigned(kLse), kWorkspace})
    func.setArgAttr(i, LLVM::LLVMDialect::getNoAliasAttrName(),
                    b.getUnitAttr());
  b.setInsertionPointToStart(func.addEntryBlock(b));
  // The attention kernel's partials, all of them, visible.
  NVVM::GriddepcontrolOp::create(b, loc, NVVM::GridDepActionKind::wait);

  tid = NVVM::ThreadIdXOp::create(b, loc, i32);
  Value w = divu(tid, c32(32)), ln = remu(tid, c32(32));
  numQTiles = divu(add(param(kSeqQ), c32(tokensPerTile - 1)),
                   c32(tokensPerTile));
  Value x = NVVM::BlockIdXOp::create(b, loc, i32);
  Value perTile = divu(NVVM::GridDimXOp::create(b, loc, i32), numQTiles);
  mBlock = divu(x, perTile);
  Value g = remu(x, perTile);
  kvHead = NVVM::BlockIdYOp::create(b, loc, i32);
  head = mul(kvHead, c32(qGroup));
  batch = NVVM::BlockIdZOp::create(b, loc, i32);
  // balanced_splits: the runtime runs the merge kernel only for a budget
  // of -S (S splits per tile, the split grid's slots).
  numSplits = kernel.getBalancedSplits()
                  ? arith::MaxSIOp::create(b, loc, c32(1),
                                           sub(c32(0), param(kDecodeSplits)))
                        .getResult()
                  : param(kDecodeSplits);
  Value batches = NVVM::GridDimZOp::create(b, loc, i32);
  Value kvHeads = NVVM::GridDimYOp::create(b, loc, i32);
  // The workspace as the attention kernel's epilogue lays it out.
  Value ws = param(kWorkspace);
  Value numTiles = mul(mul(batches, kvHeads), numQTiles);
  Value tile = add(mul(add(mul(batch, kvHeads), kvHead), numQTiles), mBlock);
  Value slots = mul64(ext64(numTiles), ext64(numSplits));
  Value lseBase = mul64(mul64(slots, c64(blockM)), c64(n));
  Value tileSlot = mul64(ext64(tile), ext64(numSplits));
  Value unit = add(mul(g, c32(kUnitsPerCTA)), ln);
  Value row = divu(unit, c32(n / kMergeCols));
  Value col = mul(remu(unit, c32(n / kMergeCols)), c32(kMergeCols));
  Value valid = arith::AndIOp::create(
      b, loc, cmp(arith::CmpIPredicate::ult, row, c32(blockM)),
      cmp(arith::CmpIPredicate::slt, tokenOfRow(row), param(kSeqQ)));
  auto quadTy = VectorType::get({kMergeCols}, f32);
  auto fold = scf::IfOp::create(b, loc, TypeRange{f32, f32, quadTy}, valid,
                                /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(fold.thenBlock());
    MergedQuad r = foldSplits(ws, lseBase, tileSlot, row, col, w, kWarps,
                              numSplits, /*chunk=*/8, n);
    scf::YieldOp::create(b, loc, ValueRange{r.m, r.sum, r.acc});
    b.setInsertionPointToStart(fold.elseBlock());
    scf::YieldOp::create(
        b, loc,
        ValueRange{cf(-INFINITY), cf(0.0f), LLVM::ZeroOp::create(b, loc, quadTy)});
  }
  // Fields of (warp, lane): max, sum, four columns.
  Value smem = LLVM::AddressOfOp::create(b, loc, ptrSh, smemName);
  auto field = [&](Value warp, int64_t f) {
    Value idx = add(mul(add(mul(warp, c32(kUnitsPerCTA)), ln), c32(kFields)),
                    c32(f));
    return LLVM::GEPOp::create(b, loc, ptrSh, f32, smem, ValueRange{idx});
  };
  LLVM::StoreOp::create(b, loc, fold.getResult(0), field(w, 0), 4);
  LLVM::StoreOp::create(b, loc, fold.getResult(1), field(w, 1), 4);
  LLVM::StoreOp::create(b, loc, fold.getResult(2), field(w, 2), 8);
  NVVM::Barrier0Op::create(b, loc);
  openIf(arith::AndIOp::create(b, loc,
                               cmp(arith::CmpIPredicate::eq, w, c32(0)),
                               valid));
  SmallVector<Value> ms, sums, accs;
  Value mx = cf(-INFINITY);
  for (int64_t k = 0; k < kWarps; ++k) {
    ms.push_back(LLVM::LoadOp::create(b, loc, f32, field(c32(k), 0), 4));
    sums.push_back(LLVM::LoadOp::create(b, loc, f32, field(c32(k), 1), 4));
    accs.push_back(LLVM::LoadOp::create(b, loc, quadTy, field(c32(k), 2), 8));
    mx = fmax(mx, ms.back());
  }
  Value mSafe = nonInfinite(mx);
  Value sum = cf(0.0f);
  Value acc = LLVM::ZeroOp::create(b, loc, quadTy);
  for (int64_t k = 0; k < kWarps; ++k) {
    Value wgt = exp2(fsub(ms[k], mSafe));
    sum = fadd(sum, fmul(sums[k], wgt));
    acc = arith::AddFOp::create(b, loc, acc,
                                arith::MulFOp::create(b, loc, splat(wgt), accs[k]));
  }
  storeMergedQuad(epilogue, row, col, {mx, sum, acc});
  b.setInsertionPointToEnd(&func.getBody().front());
  LLVM::ReturnOp::create(b, loc, ValueRange{});

  func = attention;
  std::tie(tid, mBlock, head, batch, kvHead, numQTiles, numSplits) =
      std::make_tuple(saved[0], saved[1], saved[2], saved[3], saved[4],
                      saved[5], saved[6]);
  return success();
}
