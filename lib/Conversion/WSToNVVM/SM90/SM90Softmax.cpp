//===- SM90Softmax.cpp - sm_90a: the online softmax -----------------------===//
//
// Masking and row maxima of the score fragment, the running max and
// correction, exponentials, P in shared memory or registers, O's correction
// and the vote's per-thread test.
//
//===----------------------------------------------------------------------===//
#include "SM90Lowering.h"

#include <cmath>

using namespace mlir;
using namespace blasst;
using namespace blasst::ws;
using namespace blasst::ws::lowering;

//===----------------------------------------------------------------------===//
// Online softmax
//===----------------------------------------------------------------------===//

Value SM90Lowering::quadReduce(Value v, bool isMax) {
  for (int64_t offset : {1, 2}) {
    Value other =
        NVVM::ShflOp::create(b, loc, f32, c32(-1), v, c32(offset), c32(31),
                             NVVM::ShflKind::bfly, UnitAttr());
    v = isMax ? fmax(v, other) : fadd(v, other);
  }
  return v;
}

LogicalResult SM90Lowering::emitRowMax(RowMaxOp op, RoleState &st) {
  if (failed(requireBlock(op, st)))
    return failure();
  // With ahead = 1 the scores are block n+1's; the steps after work on them.
  bool next = op.getAhead() && *op.getAhead() == 1;
  if (next) {
    if (!st.sNext)
      return op.emitOpError() << "with ahead = 1 needs the scores of a "
                                 "preceding ws.mma qk {ahead = 1}";
    st.s = st.sNext;
    st.sNext = Value();
  }
  if (failed(checkFragment(op, op.getScoresAttr(), st.s,
                           "scores of a preceding ws.mma qk")))
    return failure();
  st.sExp = false;
  int64_t n = bufferOf(op.getScoresAttr()).getShape()[1];
  // Thread coordinates in the fragment.
  Value t = st.threadInRole;
  Value w = divu(t, c32(32)), ln = remu(t, c32(32));
  Value rowInTile = add(mul(w, c32(16)), divu(ln, c32(4)));
  Value colInBlock = mul(remu(ln, c32(4)), c32(2));
  // roleRow0: the first query (token) of the role's rows, for the uniform
  // causal test; rowIdx: each fragment row's query.
  Value roleRow0, qRow0;
  if (qGroup) {
    roleRow0 = tokenOfRow(c32(st.rowBegin));
  } else {
    roleRow0 = add(mul(mBlock, c32(blockM)), c32(st.rowBegin));
    qRow0 = add(roleRow0, rowInTile);
  }
  // Before the loop: block 0. A block past the end is fully masked below.
  Value block = st.inLoop ? st.kvBlock : c32(0);
  st.scoresReal = Value();
  if (next) {
    block = add(block, c32(1));
    st.scoresReal = cmp(arith::CmpIPredicate::slt, block, st.numBlocks);
  }
  // The sink (the sequence's block 0) is not the split's.
  Value keyBlock = op.getSink() ? c32(0) : mul(absBlock(block), c32(blockN));
  Value keyBase = add(keyBlock, colInBlock);
  Value seqKV = seqKVLen();
  // Causal (bottom-right): key <= row + seqKV - seqQ.
  Value diag = sub(seqKV, param(kSeqQ));
  Value negInf = cf(-INFINITY);
  for (int i = 0; i < 2; ++i)
    st.rowIdx[i] =
        qGroup ? tokenOfRow(add(add(c32(st.rowBegin), rowInTile), c32(8 * i)))
               : add(qRow0, c32(8 * i));

  // Only the blocks that hold the sequence tail or cross the causal
  // diagonal need a mask; the test is uniform over the role's rows.
  Value blockEnd = add(keyBlock, c32(blockN));
  // Split KV: keys from the split's end on are masked too (the look-ahead
  // past the split's last block is the next split's first).
  Value keyEnd = kvEndKey && !op.getSink() ? kvEndKey : seqKV;
  Value needMask = cmp(arith::CmpIPredicate::sgt, blockEnd, keyEnd);
  if (spec.causal) {
    Value firstVisibleLimit = add(add(roleRow0, diag), c32(1));
    needMask = arith::OrIOp::create(
        b, loc, needMask,
        cmp(arith::CmpIPredicate::sgt, blockEnd, firstVisibleLimit));
  }
  auto ifOp = scf::IfOp::create(b, loc, TypeRange{st.s.getType()}, needMask,
                                /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    Value masked = st.s;
    for (int i = 0; i < 2; ++i) {
      Value limit = keyEnd; // first invisible key
      if (spec.causal)
        limit = arith::MinSIOp::create(b, loc, limit,
                                       add(add(st.rowIdx[i], diag), c32(1)));
      for (int64_t j = 0; j < n / 8; ++j)
        for (int k = 0; k < 2; ++k) {
          int64_t idx = 4 * j + 2 * i + k;
          Value key = add(keyBase, c32(8 * j + k));
          Value visible = cmp(arith::CmpIPredicate::slt, key, limit);
          masked =
              insert(masked, select(visible, extract(st.s, idx), negInf), idx);
        }
    }
    scf::YieldOp::create(b, loc, masked);
    b.setInsertionPointToStart(ifOp.elseBlock());
    scf::YieldOp::create(b, loc, st.s);
  }
  st.s = ifOp.getResult(0);

  // The max over raw scores, scaled once (scale > 0): scores stay raw and
  // exp2 takes fma(s, scale, -m).
  // A chain, not a tree: at head_dim 64 the tree made the kernel 20% slower
  // on the H200 (ptxas schedules it worse), elsewhere it changed nothing
  // measurable, BLASST's skipped blocks included
  // (docs/results/2026-11-29-hd256.md).
  // (Two or four chains per row instead of one: within 0.6% on BLASST's
  // skipped blocks, docs/results/2026-11-29-skip-path.md.)
  for (int i = 0; i < 2; ++i) {
    Value mx = negInf;
    for (int64_t j = 0; j < n / 8; ++j)
      for (int k = 0; k < 2; ++k)
        mx = fmax(mx, extract(st.s, 4 * j + 2 * i + k));
    st.mPart[i] = mx;
    st.mBlock[i] = Value();
    // A BLASST kernel's vote needs only each thread's max (emitVote): the
    // quad reduction waits for the kept path (ensureBlockMax).
    if (!st.threshold)
      ensureBlockMax(st, i);
  }
  if (op.getSink()) {
    // The seed: the sink's row maxima become the running max; O and the
    // row sums are untouched (a -inf row, all of block 0 masked, stays
    // -inf).
    for (int i = 0; i < 2; ++i) {
      ensureBlockMax(st, i);
      st.m[i] = fmax(st.m[i], st.mBlock[i]);
      st.mPart[i] = st.mBlock[i] = Value();
    }
  }
  return success();
}

void SM90Lowering::ensureBlockMax(RoleState &st, int i) {
  if (!st.mBlock[i])
    st.mBlock[i] =
        fmul(quadReduce(st.mPart[i], /*isMax=*/true), param(kScaleLog2));
}

LogicalResult SM90Lowering::emitSoftmaxUpdate(SoftmaxUpdateOp op,
                                              RoleState &st) {
  if (failed(requireBlock(op, st)))
    return failure();
  if (!st.mPart[0])
    return op.emitOpError() << "needs a preceding ws.row_max";
  for (int i = 0; i < 2; ++i)
    ensureBlockMax(st, i);
  for (int i = 0; i < 2; ++i) {
    Value mNew = fmax(st.m[i], st.mBlock[i]);
    // A row with no visible key yet keeps m = -inf; subtract 0 instead so
    // exp2 gives 0 rather than NaN.
    Value isInf = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, mNew,
                                        cf(-INFINITY));
    st.mUse[i] = select(isInf, cf(0.0f), mNew);
    st.corr[i] = exp2(fsub(st.m[i], st.mUse[i]));
    st.m[i] = mNew;
  }
  return success();
}

/// What an exponential step needs: a block, the max a ws.softmax_update
/// chose, and raw scores.
LogicalResult SM90Lowering::checkExp2Inputs(Operation *op,
                                            FlatSymbolRefAttr scores,
                                            RoleState &st) {
  if (failed(requireBlock(op, st)))
    return failure();
  if (!st.mUse[0])
    return op->emitOpError() << "needs a preceding ws.softmax_update";
  if (st.sExp)
    return op->emitOpError() << "the scores are exponentiated already";
  return checkFragment(op, scores, st.s, "scores");
}

LogicalResult SM90Lowering::emitExp2Store(Exp2StoreOp op, RoleState &st) {
  if (failed(checkExp2Inputs(op, op.getScoresAttr(), st)))
    return failure();
  BufferOp p = bufferOf(op.getPAttr());
  if (p.getShape()[1] != bufferOf(op.getScoresAttr()).getShape()[1])
    return op.emitOpError() << "P " << op.getPAttr() << " and the scores "
                            << op.getScoresAttr() << " differ in width";
  int64_t n = bufferOf(op.getScoresAttr()).getShape()[1];
  if (p.getSpace() == MemorySpace::regs) {
    return emitExp2ToRegisters(op, st, n);
  }
  if (p.getSpace() != MemorySpace::smem)
    return op.emitOpError() << "P must be in shared memory or registers";
  int64_t pRows = p.getShape()[0];
  Value t = st.threadInRole;
  Value w = divu(t, c32(32)), ln = remu(t, c32(32));
  Value quadRow = divu(ln, c32(4));              // l / 4, also row % 8
  Value inChunk = mul(remu(ln, c32(4)), c32(4)); // byte within 16-B chunk
  for (int i = 0; i < 2; ++i) {
    Value sum = cf(0.0f);
    // Row within the P tile and its byte offset in a panel.
    Value row =
        add(c32(st.rowBegin), add(mul(w, c32(16)), add(quadRow, c32(8 * i))));
    Value rowBase = add(c32(offsetOf(p)), mul(row, c32(kSwizzleBytes)));
    for (int64_t j = 0; j < n / 8; ++j) {
      Value packed = expPair(st, i, j, sum);
      // 128B swizzle: the 16-byte chunk index XOR (row % 8).
      int64_t panel = (8 * j) / kPanelElems, chunk = j % 8;
      Value swz = arith::XOrIOp::create(b, loc, c32(chunk), quadRow);
      Value off = add(add(rowBase, c32(panel * pRows * kSwizzleBytes)),
                      add(mul(swz, c32(16)), inChunk));
      LLVM::StoreOp::create(b, loc, packed, smemPtr(off), /*alignment=*/4);
    }
    st.l[i] = fadd(fmul(st.l[i], st.corr[i]), sum);
  }
  // Make the generic-proxy stores visible to wgmma (async proxy), then wait
  // for the whole warpgroup's P.
  NVVM::FenceProxyOp::create(
      b, loc, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
  NVVM::BarrierOp::create(b, loc, Type(), c32(st.barrierId),
                          c32(st.role.getNumWarps() * 32), nullptr, Value());
  return success();
}

/// exp2(s·scale - m) of fragment element `idx` (row half i).
Value SM90Lowering::expOf(RoleState &st, int i, int64_t idx) {
  return exp2(LLVM::FMAOp::create(b, loc, extract(st.s, idx), param(kScaleLog2),
                                  arith::NegFOp::create(b, loc, st.mUse[i])));
}

/// Two f32 values packed to the P element type.
Value SM90Lowering::packPair(Value x, Value y) {
  Value pair = LLVM::UndefOp::create(b, loc, VectorType::get({2}, f32));
  pair = LLVM::InsertElementOp::create(b, loc, pair, x, c32(0));
  pair = LLVM::InsertElementOp::create(b, loc, pair, y, c32(1));
  return LLVM::FPTruncOp::create(b, loc, VectorType::get({2}, elemTy), pair);
}

/// exp2(s·scale - m) of the fragment pair (row half i, columns 8j..), added
/// to `sum` and packed to the P element type.
Value SM90Lowering::expPair(RoleState &st, int i, int64_t j, Value &sum) {
  Value pv[2];
  for (int k = 0; k < 2; ++k) {
    pv[k] = expOf(st, i, 4 * j + 2 * i + k);
    sum = fadd(sum, pv[k]);
  }
  return packPair(pv[0], pv[1]);
}

/// The exponentials stay f32 in the S fragment (FA3's order in the overlap
/// schedule): ws.pack_p writes P after the wait that retires the P V still
/// reading the previous P.
LogicalResult SM90Lowering::emitExp2InPlace(Exp2Op op, RoleState &st) {
  if (failed(checkExp2Inputs(op, op.getScoresAttr(), st)))
    return failure();
  int64_t n = bufferOf(op.getScoresAttr()).getShape()[1];
  // `guarded`: a block past the end (the last iteration's look-ahead) is
  // fully masked, its exponentials are 0 and its P is never read, so they
  // are computed only for a real block. The branch matters beyond the
  // saving: with the exponentials in a region of their own, ptxas keeps
  // them in S's registers and schedules them before the wait for P V(n); in
  // straight-line code it allocated them to P's registers, so they waited
  // for P V(n) and only the row max overlapped it
  // (docs/results/2026-11-29-fa3-order.md). In a skip region the vote
  // already skips such a block (and the region is the branch).
  bool guard = op.getGuarded() && st.scoresReal && !st.inSkipRegion;
  scf::IfOp ifOp;
  Value s0 = st.s, l0 = st.l[0], l1 = st.l[1];
  OpBuilder::InsertionGuard ig(b);
  if (guard) {
    ifOp = scf::IfOp::create(b, loc, TypeRange{s0.getType(), f32, f32},
                             st.scoresReal, /*withElseRegion=*/true);
    b.setInsertionPointToStart(ifOp.elseBlock());
    scf::YieldOp::create(b, loc, ValueRange{s0, l0, l1});
    b.setInsertionPointToStart(ifOp.thenBlock());
  }
  Value s = exponentiate(st, n);
  st.s = s;
  if (guard) {
    scf::YieldOp::create(b, loc, ValueRange{s, st.l[0], st.l[1]});
    b.setInsertionPointAfter(ifOp);
    st.s = ifOp.getResult(0);
    st.l[0] = ifOp.getResult(1);
    st.l[1] = ifOp.getResult(2);
  }
  st.sExp = true;
  return success();
}

LogicalResult SM90Lowering::emitPackP(PackPOp op, RoleState &st) {
  if (!st.sExp)
    return op.emitOpError()
           << "needs the exponentials of a preceding ws.exp2 in the same block";
  if (failed(checkFragment(op, op.getScoresAttr(), st.s, "exponentials")))
    return failure();
  int64_t n = bufferOf(op.getScoresAttr()).getShape()[1];
  // Through an empty asm after the preceding wait: nothing hoists the
  // conversions above it (P's registers may be the ones an in-flight
  // P V reads).
  packP(st, fenceRegisters(st.s), n);
  return success();
}

/// The S fragment with exp2(s·scale - m) in place of each score; the row
/// sums take the block's exponentials (l = l·corr + sum).
Value SM90Lowering::exponentiate(RoleState &st, int64_t n) {
  Value s = st.s;
  for (int i = 0; i < 2; ++i) {
    Value sum = cf(0.0f);
    for (int64_t j = 0; j < n / 8; ++j)
      for (int k = 0; k < 2; ++k) {
        int64_t idx = 4 * j + 2 * i + k;
        Value e = expOf(st, i, idx);
        sum = fadd(sum, e);
        s = insert(s, e, idx);
      }
    st.l[i] = fadd(fmul(st.l[i], st.corr[i]), sum);
  }
  return s;
}

/// P in registers from the exponentials `s`: the S accumulator fragment and
/// wgmma's A-operand fragment put the same rows and columns in the same
/// thread, so packing pairs is all it takes (packed index 2j + i for
/// columns 8j.., row half i).
void SM90Lowering::packP(RoleState &st, Value s, int64_t n) {
  st.pRegs.assign(n / 4, Value());
  for (int i = 0; i < 2; ++i)
    for (int64_t j = 0; j < n / 8; ++j) {
      int64_t idx = 4 * j + 2 * i;
      st.pRegs[2 * j + i] = LLVM::BitcastOp::create(
          b, loc, i32, packPair(extract(s, idx), extract(s, idx + 1)));
    }
}

/// P stays in registers, packed straight from the exponentials (S keeps
/// the scores).
LogicalResult SM90Lowering::emitExp2ToRegisters(Exp2StoreOp op, RoleState &st,
                                                int64_t n) {
  packP(st, exponentiate(st, n), n);
  return success();
}

LogicalResult SM90Lowering::emitCorrect(CorrectOp op, RoleState &st) {
  if (failed(requireBlock(op, st)))
    return failure();
  // `ahead = 0`: block n's factors, carried from the iteration before (a
  // deferred P V); otherwise the latest softmax_update's.
  Value *corr = op.getAhead() ? st.corrHeld : st.corr;
  if (!corr[0])
    return op.emitOpError()
           << (op.getAhead() ? "with ahead = 0 is lowered with a deferred P "
                               "V (ws.mma pv {ahead = -1}) only"
                             : "needs a preceding ws.softmax_update");
  if (failed(checkFragment(op, op.getAccAttr(), st.o, "O accumulator")))
    return failure();
  int64_t n = bufferOf(op.getAccAttr()).getShape()[1];
  for (int64_t j = 0; j < n / 8; ++j)
    for (int i = 0; i < 2; ++i)
      for (int k = 0; k < 2; ++k) {
        int64_t idx = 4 * j + 2 * i + k;
        st.o = insert(st.o, fmul(extract(st.o, idx), corr[i]), idx);
      }
  return success();
}

Value SM90Lowering::voteSkipsOwnRows(RoleState &st) {
  // Per row: m_block - m_running < log2(lambda); rows past seqQ abstain.
  // NaN (-inf - -inf) compares false: no skip. Each thread tests its own
  // scores' max: rounding is monotonic, so fl(x * scale) - m < T holds for
  // the row's max exactly when it holds for every thread's, and the warp's
  // vote.all is the same decision without the quad shuffles.
  Value pred;
  Value scale = param(kScaleLog2);
  for (int i = 0; i < 2; ++i) {
    Value small = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT,
                                        fsub(fmul(st.mPart[i], scale), st.m[i]),
                                        st.threshold);
    Value abstain = cmp(arith::CmpIPredicate::sge, st.rowIdx[i], param(kSeqQ));
    Value rowPred = arith::OrIOp::create(b, loc, small, abstain);
    pred = i == 0 ? rowPred : arith::AndIOp::create(b, loc, pred, rowPred);
  }
  return pred;
}
