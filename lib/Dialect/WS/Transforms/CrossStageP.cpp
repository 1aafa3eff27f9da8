//===- CrossStageP.cpp - Each tile's P over its sibling's S ---------------===//
//
// The sm_100a two-tile schedule before and after (tile t, sibling u):
//
//   softmax_t:  acquire s_t; read_scores; ... exp2_store_p -> P_t over S_t;
//               release p_t; release s_t
//   mma:        P_t V_n, then Q_t K_n+1ᵀ (behind it: P_t lies over S_t)
//
//   softmax_t:  acquire s_t; read_scores; release s_t;
//               acquire x_t; release x_t                 (S_t(n) read)
//               ...; acquire x_u; release x_u; (tile 1: acquire x_0
//               {ahead 1}); exp2_store_p -> P_t over S_u
//   mma:        Q_0 K_n+1ᵀ, P_0 V_n, Q_1 K_n+1ᵀ, P_1 V_n
//
//===----------------------------------------------------------------------===//
#include "blasst/Dialect/WS/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace blasst::ws {
#define GEN_PASS_DEF_BLASSTCROSSSTAGEP
#include "blasst/Dialect/WS/Transforms/Passes.h.inc"
} // namespace blasst::ws

using namespace mlir;
using namespace blasst;
using namespace blasst::ws;

namespace {
/// What the pass needs of one tile.
struct Tile {
  RoleOp softmax;
  KVLoopOp loop;
  BufferOp s, p;
  PipeOp sPipe, pPipe;
  ReadScoresOp read;
  Exp2StoreOp store;
  ReleaseOp sRelease;
  AcquireOp pAcquire;
  ReleaseOp pRelease;
};

struct CrossStagePPass
    : public blasst::ws::impl::BLASSTCrossStagePBase<CrossStagePPass> {
  using Base::Base;
  void runOnOperation() override;
  /// The reason it does not apply, or the two tiles.
  std::string analyse(KernelOp kernel, Tile (&tiles)[2], RoleOp &mma);
  void rewrite(KernelOp kernel, Tile (&tiles)[2], RoleOp mma);
};
} // namespace

template <typename OpT>
static OpT findIn(Block &body, llvm::function_ref<bool(OpT)> pred) {
  for (auto op : body.getOps<OpT>())
    if (pred(op))
      return op;
  return OpT();
}

std::string CrossStagePPass::analyse(KernelOp kernel, Tile (&tiles)[2],
                                     RoleOp &mma) {
  if (kernel.getTarget() != ws::Target::sm_100a)
    return "sm_90a keeps S in registers: there is no S region to hand to P";
  SmallVector<RoleOp> softmax;
  for (RoleOp r : kernel.getBody().getOps<RoleOp>()) {
    if (r.getKind() == RoleKind::softmax)
      softmax.push_back(r);
    if (r.getKind() == RoleKind::mma)
      mma = r;
  }
  if (softmax.size() != 2 || !mma)
    return "needs two softmax roles (two tiles) and an MMA role";
  for (int t = 0; t < 2; ++t) {
    Tile &tile = tiles[t];
    tile.softmax = softmax[t];
    for (auto l : softmax[t].getBody().getOps<KVLoopOp>())
      tile.loop = l;
    if (!tile.loop)
      return "a softmax role without a kv_loop";
    Block &body = tile.loop.getBody().front();
    tile.read = findIn<ReadScoresOp>(body, [](ReadScoresOp) { return true; });
    // (BLASST: inside a skip region; the handshake acquires and releases
    // added around it stay outside, so a skipped block still takes and
    // hands on its tokens.)
    tile.loop.walk([&](Exp2StoreOp e) { tile.store = e; });
    if (!tile.read || !tile.store)
      return ("@" + softmax[t].getSymName() +
              " has no ws.read_scores and ws.exp2_store_p in its kv_loop")
          .str();
    tile.s = SymbolTable::lookupNearestSymbolFrom<BufferOp>(
        kernel, tile.read.getScoresAttr());
    tile.p =
        SymbolTable::lookupNearestSymbolFrom<BufferOp>(kernel, tile.store.getPAttr());
    if (!tile.s || !tile.p || tile.s.getSpace() != MemorySpace::tmem ||
        tile.p.getSpace() != MemorySpace::tmem)
      return "S and P are not in tensor memory";
    if (tile.p.getAliases() != tile.s.getSymName() || tile.p.getAliasOffset())
      return ("@" + tile.p.getSymName() + " does not lie over the start of @" +
              tile.s.getSymName() + " (already reassigned?)")
          .str();
    for (PipeOp pipe : kernel.getBody().getOps<PipeOp>()) {
      if (pipe.getProducer() == mma.getSymName() &&
          llvm::is_contained(pipe.getBuffers(),
                             FlatSymbolRefAttr::get(tile.s.getSymNameAttr())))
        tile.sPipe = pipe;
      if (pipe.getProducer() == softmax[t].getSymName() &&
          llvm::is_contained(pipe.getConsumers(),
                             FlatSymbolRefAttr::get(mma.getSymNameAttr())) &&
          llvm::is_contained(pipe.getBuffers(),
                             FlatSymbolRefAttr::get(tile.p.getSymNameAttr())))
        tile.pPipe = pipe;
    }
    if (!tile.sPipe || !tile.pPipe)
      return ("no S pipe (mma -> @" + softmax[t].getSymName() +
              ") or P pipe (@" + softmax[t].getSymName() + " -> mma)")
          .str();
    tile.sRelease = findIn<ReleaseOp>(body, [&](ReleaseOp r) {
      return r.getPipe() == tile.sPipe.getSymName();
    });
    tile.pAcquire = findIn<AcquireOp>(body, [&](AcquireOp a) {
      return a.getPipe() == tile.pPipe.getSymName();
    });
    tile.pRelease = findIn<ReleaseOp>(body, [&](ReleaseOp r) {
      return r.getPipe() == tile.pPipe.getSymName();
    });
    if (!tile.sRelease || !tile.pAcquire || !tile.pRelease)
      return ("@" + softmax[t].getSymName() +
              " does not release S and acquire and release P in its kv_loop")
          .str();
    // P (two 16-bit values per 32-bit column) must fit beside the S columns
    // the sibling's P does not take: half of S.
    int64_t pCols = tile.p.getShape()[1] *
                    tile.p.getElementType().getIntOrFloatBitWidth() / 32;
    if (2 * pCols > tile.s.getShape()[1])
      return "P takes more than half of S's columns";
  }
  if (tiles[0].s.getShape() != tiles[1].s.getShape())
    return "the two tiles' S differ in shape";
  return "";
}

void CrossStagePPass::rewrite(KernelOp kernel, Tile (&tiles)[2], RoleOp mma) {
  MLIRContext *ctx = kernel.getContext();
  OpBuilder b(ctx);
  auto sym = [&](StringRef n) { return FlatSymbolRefAttr::get(ctx, n); };
  auto ahead1 = b.getI64IntegerAttr(1);
  int64_t holds[2] = {holdA, holdB};
  int64_t ring = depth ? int64_t(depth) : defaultCrossStagePDepth();

  // The handshake pipes: x<t>_pipe, softmax_t -> softmax_u, after the last
  // pipe of the kernel.
  Operation *lastPipe = nullptr;
  for (PipeOp p : kernel.getBody().getOps<PipeOp>())
    lastPipe = p;
  std::string xName[2];
  b.setInsertionPointAfter(lastPipe);
  for (int t = 0; t < 2; ++t) {
    xName[t] = ("x" + llvm::Twine(t) + "_pipe").str();
    PipeOp::create(
        b, kernel.getLoc(), b.getStringAttr(xName[t]),
        b.getI64IntegerAttr(ring), sym(tiles[t].softmax.getSymName()),
        b.getArrayAttr({sym(tiles[1 - t].softmax.getSymName())}),
        b.getArrayAttr({}), IntegerAttr());
  }

  for (int t = 0; t < 2; ++t) {
    Tile &tile = tiles[t], &sib = tiles[1 - t];
    Location loc = tile.store.getLoc();
    // P_t over the other half of the sibling's S.
    int64_t pCols = tile.p.getShape()[1] *
                    tile.p.getElementType().getIntOrFloatBitWidth() / 32;
    tile.p.setAliasesAttr(sym(sib.s.getSymName()));
    tile.p.setAliasOffset(
        ArrayRef<int64_t>{0, sib.s.getShape()[1] - pCols});
    tile.store.setHoldAttr(b.getI64IntegerAttr(holds[t]));
    // S_t is free once read; then the token "S_t of block n read".
    tile.sRelease->moveAfter(tile.read);
    b.setInsertionPointAfter(tile.sRelease);
    AcquireOp::create(b, loc, sym(xName[t]), IntegerAttr());
    ReleaseOp::create(b, loc, sym(xName[t]), IntegerAttr());
    // Tile 0's P of block n goes over S_1 once S_1 of block n was read (the
    // MMA warp issues P_0 V_n before Q_1 K_n+1ᵀ). Tile 1's goes over S_0
    // only once S_0 of block n + 1 was read (Q_0 K_n+1ᵀ is issued before
    // P_1 V_n): it takes block n's token and waits for block n + 1's, taken
    // in the next iteration (past the last block the wait passes). Taking
    // block 0's token with block 1's in view is the one-block head start.
    b.setInsertionPoint(tile.pAcquire);
    AcquireOp::create(b, loc, sym(xName[1 - t]), IntegerAttr());
    ReleaseOp::create(b, loc, sym(xName[1 - t]), IntegerAttr());
    if (t == 1)
      AcquireOp::create(b, loc, sym(xName[1 - t]), ahead1);
  }

  // The MMA warp: each tile's Q Kᵀ of block n + 1 (with its S acquire and
  // release) before its P V of block n: tile 0's scores, P_0 V_n, tile 1's
  // scores, P_1 V_n.
  KVLoopOp loop;
  for (auto l : mma.getBody().getOps<KVLoopOp>())
    loop = l;
  Block &body = loop.getBody().front();
  for (int t = 0; t < 2; ++t) {
    Operation *pv = nullptr;
    SmallVector<Operation *> qk;
    for (Operation &op : body) {
      bool onS = false;
      if (auto a = dyn_cast<AcquireOp>(op)) {
        onS = a.getPipe() == tiles[t].sPipe.getSymName();
        if (!pv && a.getPipe() == tiles[t].pPipe.getSymName())
          pv = &op;
      } else if (auto r = dyn_cast<ReleaseOp>(op)) {
        onS = r.getPipe() == tiles[t].sPipe.getSymName();
      } else if (auto m = dyn_cast<MmaOp>(op)) {
        onS = m.getKind() == MmaKind::qk &&
              m.getD() == tiles[t].s.getSymName();
      }
      if (onS)
        qk.push_back(&op);
    }
    for (Operation *op : qk)
      op->moveBefore(pv);
  }

  // The schedule record says what ran.
  kernel.recordSchedule(
      {b.getNamedAttr("cross_stage_p", b.getBoolAttr(true)),
       b.getNamedAttr("cross_stage_p_depth", b.getI64IntegerAttr(ring)),
       b.getNamedAttr("cross_stage_p_hold_a", b.getI64IntegerAttr(holdA)),
       b.getNamedAttr("cross_stage_p_hold_b", b.getI64IntegerAttr(holdB))});
}

void CrossStagePPass::runOnOperation() {
  if (mode != "true" && mode != "auto" && mode != "false") {
    getOperation().emitError()
        << "blasst-cross-stage-p: mode must be true, auto or false, got '"
        << mode << "'";
    return signalPassFailure();
  }
  if (depth < 0 || holdA < 1 || holdA > 4 || holdB < 1 || holdB > 4) {
    getOperation().emitError()
        << "blasst-cross-stage-p: depth must be at least 1 and hold-a, hold-b "
           "1 to 4 quarters";
    return signalPassFailure();
  }
  if (mode == "false")
    return;
  for (KernelOp kernel : getOperation().getBody()->getOps<KernelOp>()) {
    Tile tiles[2];
    RoleOp mma;
    std::string reason = analyse(kernel, tiles, mma);
    if (!reason.empty()) {
      if (mode == "true") {
        kernel.emitOpError() << "blasst-cross-stage-p does not apply: "
                             << reason;
        return signalPassFailure();
      }
      if (kernel.getTarget() == ws::Target::sm_100a)
        kernel.recordSchedule(NamedAttribute(
            StringAttr::get(kernel.getContext(), "cross_stage_p"),
            BoolAttr::get(kernel.getContext(), false)));
      continue;
    }
    rewrite(kernel, tiles, mma);
  }
}
