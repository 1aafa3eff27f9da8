//===- KVCache.cpp - Per-sequence KV lengths and the paged KV cache -------===//
//
// The decode KV caches serving engines use (ws.kernel per_seq_kv,
// page_size; kernel parameters 15-17, ABI 4):
//   - per_seq_kv: the CTA's sequence length is lengths[batch] (read once,
//     at most the launch's seq_kv: a length past the caller's bound reads
//     no row past the cache);
//     its block count, tail mask, causal diagonal and splits follow it
//     (LoweringBase::seqKVLen).
//   - page_size = P: K and V are [num_pages, P, kv_heads, head_dim], their
//     tensor maps 4-D {D, H, P, num_pages} with boxes of min(block_n, P)
//     rows. A block of block_n keys that starts at key k is page
//     table[batch][k / P] from row k mod P (P >= block_n), or block_n / P
//     whole pages (P < block_n), one copy each into consecutive rows of the
//     stage; the stage's transaction bytes are unchanged. The load role
//     reads the table entries before it waits for the stage (the read
//     overlaps the wait). A page past the sequence's length gets the page
//     coordinate -1, which TMA fills with zeros; table reads are clamped
//     to the sequence's row (entries min(pages of its length, max_pages)
//     - 1 at most), so a length beyond the table cannot read past it (the
//     caller guarantees lengths <= max_pages * P; the host checks where it
//     knows both). A table entry outside [0, num_pages) is TMA's zero fill
//     too: the kernel never reads outside the page pool. BLASST's V copies
//     on demand read their entries at the copy, inside the kept branch (a
//     skipped block reads none); the stage's tx is the same either way.
//     cp_async pipes (dense decode's default) take the same entries: each
//     load thread copies its rows from their pages through the page stride
//     (Pipes.cpp, emitCpAsyncCopy) and reads nothing for an entry outside
//     [0, num_pages) (parameter 30) or a row past the length.
//
//===----------------------------------------------------------------------===//
#include "KernelLowering.h"

using namespace mlir;
using namespace blasst;
using namespace blasst::ws;
using namespace blasst::ws::lowering;

namespace {
/// An i32 load through the global address space marked invariant:
/// ld.global.nc (the lengths and the block table do not change during the
/// launch).
Value loadInvariantI32(OpBuilder &b, Location loc, Value base, Value index) {
  auto ptrGlobal = LLVM::LLVMPointerType::get(b.getContext(), 1);
  Value global = LLVM::AddrSpaceCastOp::create(b, loc, ptrGlobal, base);
  Value ptr = LLVM::GEPOp::create(b, loc, ptrGlobal, b.getI32Type(), global,
                                  ValueRange{index});
  return LLVM::LoadOp::create(b, loc, b.getI32Type(), ptr, /*alignment=*/4,
                              /*isVolatile=*/false, /*isNonTemporal=*/false,
                              /*isInvariant=*/true);
}
} // namespace

bool KernelLowering::hasKVCacheParams() {
  return kernel.getPerSeqKv() || kernel.getPageSize();
}

Value KernelLowering::seqLenOf(Value seq) {
  Value len = loadInvariantI32(b, loc, param(kSeqLensKV), ext64(seq));
  return arith::MinUIOp::create(b, loc, len, param(kSeqKV));
}

Value KernelLowering::blocksOfLen(Value len) {
  return divu(add(len, c32(blockN - 1)), c32(blockN));
}

Value KernelLowering::seqBlocksOf(Value seq) {
  return blocksOfLen(seqLenOf(seq));
}

Value KernelLowering::sumSeqBlocks(Value batches) {
  auto sum =
      scf::ForOp::create(b, loc, c32(0), batches, c32(1), ValueRange{c32(0)});
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(sum.getBody());
  scf::YieldOp::create(
      b, loc,
      ValueRange{add(sum.getRegionIterArgs()[0],
                     seqBlocksOf(sum.getInductionVar()))});
  return sum.getResult(0);
}

void KernelLowering::emitKVCacheStart(Value len) {
  if (kernel.getPerSeqKv())
    kvLen = len ? len : seqLenOf(batch);
  if (!pageSize)
    return;
  Value maxPages = param(kMaxPages);
  tableRow = mul64(ext64(batch), ext64(maxPages));
  Value pages =
      divu(add(seqKVLen(), c32(pageSize - 1)), c32(pageSize));
  Value last =
      sub(arith::MinSIOp::create(b, loc, pages, maxPages), c32(1));
  lastTableEntry = arith::MaxSIOp::create(b, loc, last, c32(0));
}

SmallVector<std::pair<Value, Value>>
KernelLowering::pageCoordsOf(TmaLoadOp op, Value block) {
  // A sink copy's block is the sequence's, not the split's.
  Value key0 = mul(op.getSink() ? block : absBlock(block), c32(blockN));
  int64_t copies = blockN > pageSize ? blockN / pageSize : 1;
  Value first = divu(key0, c32(pageSize));
  Value rowInPage = pageSize > blockN ? remu(key0, c32(pageSize)) : c32(0);
  SmallVector<std::pair<Value, Value>> coords;
  for (int64_t j = 0; j < copies; ++j) {
    Value idx = add(first, c32(j));
    Value entry = loadInvariantI32(
        b, loc, param(kBlockTable),
        add64(tableRow,
              ext64(arith::MinSIOp::create(b, loc, idx, lastTableEntry))));
    // A page that starts past the length: coordinate -1 (zero fill).
    Value inSeq =
        cmp(arith::CmpIPredicate::slt, mul(idx, c32(pageSize)), seqKVLen());
    coords.push_back({rowInPage, select(inSeq, entry, c32(-1))});
  }
  return coords;
}

void KernelLowering::prefetchPageCoords(AcquireOp op, RoleState &st) {
  // Not for on_demand copies: emitPagedKVCopies reads their entries under
  // the decision, so the V stream's order stays the load role's.
  PipeOp pipe = pipeOf(op.getPipeAttr());
  if (!pageSize || !isProducer(pipe, st) || !protocol.isPerBlock(pipe))
    return;
  for (auto load : op->getBlock()->getOps<TmaLoadOp>()) {
    if (load.getPipe() != pipe.getSymName() ||
        load.getAhead() != op.getAhead() || load.getOnDemand() ||
        (load.getTensor() != Tensor::k && load.getTensor() != Tensor::v))
      continue;
    st.pageCoords[load] = pageCoordsOf(load, blockOf(st, pipe, aheadOf(op)));
  }
}

SmallVector<std::pair<Value, Value>>
KernelLowering::takePageCoords(TmaLoadOp op, RoleState &st) {
  auto it = st.pageCoords.find(op);
  if (it == st.pageCoords.end())
    return pageCoordsOf(
        op, op.getSink() ? c32(0)
                         : blockOf(st, pipeOf(op.getPipeAttr()), aheadOf(op)));
  SmallVector<std::pair<Value, Value>> coords = std::move(it->second);
  st.pageCoords.erase(it);
  return coords;
}

void KernelLowering::emitPagedKVCopies(TmaLoadOp op,
                                       ArrayRef<std::pair<Value, Value>> coords,
                                       Value tmap, Value headCoord,
                                       Value stageBase, Value mbar,
                                       int64_t rows, int64_t cols) {
  int64_t boxRows = std::min(blockN, pageSize);
  for (int64_t p = 0; p < cols / kPanelElems; ++p)
    for (auto [j, rc] : llvm::enumerate(coords)) {
      Value dstPtr = LLVM::AddrSpaceCastOp::create(
          b, loc, LLVM::LLVMPointerType::get(ctx, 7),
          smemPtr(add(stageBase, c32(p * rows * kSwizzleBytes +
                                     int64_t(j) * boxRows * kSwizzleBytes))));
      SmallVector<Value> c = {c32(p * kPanelElems), headCoord, rc.first,
                              rc.second};
      NVVM::CpAsyncBulkTensorGlobalToSharedClusterOp::create(
          b, loc, dstPtr, tmap, c, mbar, ValueRange{}, Value(), Value(),
          NVVM::TMALoadMode::TILE, /*isCTAOnly=*/false, nullptr, Value());
    }
}
