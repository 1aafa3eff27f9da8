//===- Protocol.cpp - The pipeline protocol of a ws.kernel ----------------===//
#include "blasst/Dialect/WS/Analysis/Protocol.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace blasst;
using namespace blasst::ws;

/// Threads of `role` that arrive on a barrier: one elected thread of a load
/// role (it issues the copies), every thread of the others.
/// The arrivals a role makes on a barrier: one from a load role's elected
/// thread (TMA) and from an MMA role's issuing thread (sm_100a: its
/// releases are tcgen05.commit, one arrival each); every thread otherwise.
static int64_t arrivingThreads(RoleOp role) {
  return role.getKind() == RoleKind::load || role.getKind() == RoleKind::mma
             ? 1
             : role.getNumWarps() * 32;
}

static RoleOp lookupRole(KernelOp kernel, Attribute ref) {
  return cast<RoleOp>(SymbolTable::lookupSymbolIn(
      kernel, cast<FlatSymbolRefAttr>(ref).getAttr()));
}

ProtocolAnalysis::ProtocolAnalysis(KernelOp kernel) : kernel(kernel) {
  llvm::SmallDenseSet<Operation *> perBlock, multicast;
  kernel.walk([&](AcquireOp a) {
    if (a->getParentOfType<KVLoopOp>())
      perBlock.insert(
          SymbolTable::lookupSymbolIn(kernel, a.getPipeAttr().getAttr()));
  });
  if (kernel.getKvMulticast())
    kernel.walk([&](TmaLoadOp load) {
      if (load.getTensor() == Tensor::k || load.getTensor() == Tensor::v)
        multicast.insert(
            SymbolTable::lookupSymbolIn(kernel, load.getPipeAttr().getAttr()));
    });
  for (PipeOp p : kernel.getBody().getOps<PipeOp>()) {
    PipeInfo info;
    info.depth = int64_t(p.getDepth());
    info.perBlock = perBlock.contains(p);
    info.multicast = multicast.contains(p);
    RoleOp producer = lookupRole(kernel, p.getProducerAttr());
    info.fullArrivals = arrivingThreads(producer);
    if (p.getCpAsync())
      info.cpAsyncThreads = producer.getNumWarps() * 32;
    for (Attribute c : p.getConsumers()) {
      RoleOp role = lookupRole(kernel, c);
      info.emptyArrivals += arrivingThreads(role);
      if (info.multicast)
        info.emptyArrivals += role.getNumWarps();
    }
    pipes[p] = info;
  }

  // Named barriers: the turns first (a role passes the turn to the next
  // role's barrier), then one per compute warpgroup.
  int64_t nextId = 1;
  for (OrderOp order : kernel.getBody().getOps<OrderOp>()) {
    ArrayAttr roles = order.getRoles();
    for (auto [i, r] : llvm::enumerate(roles)) {
      RoleOp prev =
          lookupRole(kernel, roles[(i + roles.size() - 1) % roles.size()]);
      RoleOp self = lookupRole(kernel, r);
      turnBarriers[(order.getSymName() + "/" + self.getSymName()).str()] = {
          nextId++, 32 * (self.getNumWarps() + prev.getNumWarps())};
    }
  }
  // sm_90a's compute warpgroups, and sm_100a's softmax warpgroups that vote
  // (the vote's AND reduction).
  for (RoleOp role : kernel.getBody().getOps<RoleOp>())
    if (role.getKind() == RoleKind::compute ||
        (role.getKind() == RoleKind::softmax &&
         role.walk([](VoteOp) { return WalkResult::interrupt(); })
             .wasInterrupted()))
      roleBarriers[role] = {nextId++, role.getNumWarps() * 32};
  lastNamedBarrier = nextId - 1;

  for (RoleOp role : kernel.getBody().getOps<RoleOp>()) {
    bool seenLoop = false;
    for (Operation &top : role.getBody().front()) {
      bool isLoop = isa<KVLoopOp>(top);
      // The softmax steps after a `row_max {ahead = k}` work on that block
      // (the overlap schedule's block n + 1), as do the vote and the P they
      // produce.
      int64_t scoreAhead = 0;
      top.walk([&](StepOpInterface s) {
        if (isa<RowMaxOp>(s.getOperation()))
          scoreAhead = s.getStepAhead();
        int64_t ahead = s.getStepAhead();
        if (isa<VoteOp, SoftmaxUpdateOp, Exp2Op, Exp2StoreOp, PackPOp,
                CorrectOp, ReadScoresOp>(s.getOperation()))
          ahead = scoreAhead;
        StepInfo info;
        info.role = role;
        PipeOp pipe;
        if (FlatSymbolRefAttr ref = s.getStepPipe())
          pipe =
              cast<PipeOp>(SymbolTable::lookupSymbolIn(kernel, ref.getAttr()));
        if (isLoop)
          info.block = {BlockRef::Kind::Current, ahead};
        else if (pipe && !pipes[pipe].perBlock)
          info.block = {BlockRef::Kind::Once, 0};
        else
          // A prologue pipe step with `ahead = k` works on block k.
          info.block = {seenLoop ? BlockRef::Kind::Last : BlockRef::Kind::First,
                        seenLoop ? 0 : ahead};
        using K = BarrierEvent::Kind;
        using B = BarrierEvent::Barrier;
        if (pipe) {
          bool producer = pipe.getProducer() == role.getSymName();
          BarrierEvent e;
          e.pipe = pipe;
          if (isa<AcquireOp>(s)) {
            e.kind = K::Wait;
            e.barrier = producer ? B::PipeEmpty : B::PipeFull;
            info.events.push_back(e);
          } else if (isa<ReleaseOp>(s)) {
            e.kind = K::Arrive;
            e.barrier = producer ? B::PipeFull : B::PipeEmpty;
            e.arrivals = arrivingThreads(role);
            e.txBytes = producer ? pipe.getLandedBytes() : 0;
            info.events.push_back(e);
          }
        }
        BarrierEvent named;
        named.barrier = B::Named;
        named.arrivals = arrivingThreads(role);
        if (auto turn = dyn_cast<TurnWaitOp>(s.getOperation())) {
          auto order = cast<OrderOp>(SymbolTable::lookupSymbolIn(
              kernel, turn.getOrderAttr().getAttr()));
          // The first role holds the turn before its first wait.
          bool first = order.getRoles()[0] ==
                       FlatSymbolRefAttr::get(role.getSymNameAttr());
          if (!(first && info.block.kind == BlockRef::Kind::First)) {
            named.kind = K::Sync;
            named.named = turnBarrier(order, role.getSymName());
            info.events.push_back(named);
          }
        } else if (auto turn = dyn_cast<TurnPassOp>(s.getOperation())) {
          auto order = cast<OrderOp>(SymbolTable::lookupSymbolIn(
              kernel, turn.getOrderAttr().getAttr()));
          ArrayAttr roles = order.getRoles();
          size_t idx =
              llvm::find(roles, FlatSymbolRefAttr::get(role.getSymNameAttr())) -
              roles.begin();
          // The last role's pass after its loop would have no matching wait.
          if (!(idx + 1 == roles.size() &&
                info.block.kind == BlockRef::Kind::Last)) {
            named.kind = K::Arrive;
            named.named = turnBarrier(
                order, cast<FlatSymbolRefAttr>(roles[(idx + 1) % roles.size()])
                           .getValue());
            info.events.push_back(named);
          }
        } else if (auto vote = dyn_cast<VoteOp>(s.getOperation())) {
          // The warpgroup's AND reduction, then (published) one thread's
          // arrival on the vote barrier of the block's parity.
          named.kind = K::Sync;
          named.named = roleBarrier(role);
          info.events.push_back(named);
          if (vote.getPublish())
            info.events.push_back({K::Arrive, B::Vote, PipeOp(), {}, 1, 0});
        } else if (isa<AwaitVoteOp>(s.getOperation())) {
          info.events.push_back({K::Wait, B::Vote, PipeOp(), {}, 0, 0});
        } else if (auto store = dyn_cast<Exp2StoreOp>(s.getOperation())) {
          // P in shared memory: the warpgroup waits for all of its P.
          auto p = cast<BufferOp>(
              SymbolTable::lookupSymbolIn(kernel, store.getPAttr().getAttr()));
          if (p.getSpace() == MemorySpace::smem) {
            named.kind = K::Sync;
            named.named = roleBarrier(role);
            info.events.push_back(named);
          }
        }
        SmallVector<BufferAccess> accesses;
        s.getBufferAccesses(accesses);
        for (const BufferAccess &a : accesses) {
          auto buf = cast<BufferOp>(
              SymbolTable::lookupSymbolIn(kernel, a.buffer.getAttr()));
          (a.write ? info.writes : info.reads).push_back(regionOf(buf, role));
        }
        steps[s] = std::move(info);
      });
      seenLoop |= isLoop;
    }
  }
}

BufferRegion ProtocolAnalysis::regionOf(BufferOp buffer, RoleOp role) const {
  // An alias is a region of the buffer that owns the storage: its rows and
  // columns from `at`, its width in the owner's element columns.
  ArrayRef<int64_t> shape = buffer.getShape();
  BufferRegion r{buffer, 0, shape[0], 0, shape[1]};
  if (std::optional<StringRef> target = buffer.getAliases()) {
    auto owner = cast<BufferOp>(SymbolTable::lookupSymbolIn(
        kernel,
        FlatSymbolRefAttr::get(kernel.getContext(), *target).getAttr()));
    int64_t row = 0, col = 0;
    if (std::optional<ArrayRef<int64_t>> at = buffer.getAliasOffset())
      row = (*at)[0], col = (*at)[1];
    int64_t cols = llvm::divideCeil(
        shape[1] * buffer.getElementType().getIntOrFloatBitWidth(),
        owner.getElementType().getIntOrFloatBitWidth());
    r = {owner, row, row + shape[0], col, col + cols};
  }
  // A compute role works on its own rows of a CTA-wide tile (Q, P in
  // shared memory); register tiles are private to the role anyway.
  if (std::optional<int64_t> rowBegin = role.getRowBegin())
    if (shape[0] == int64_t(kernel.getBlockM()) &&
        buffer.getSpace() != MemorySpace::regs) {
      r.rowBegin += *rowBegin;
      r.rowEnd = r.rowBegin + (role.getRowEnd().value_or(shape[0]) - *rowBegin);
    }
  return r;
}

LoopCarried ProtocolAnalysis::carried(KVLoopOp loop) const {
  LoopCarried c;
  RoleOp role = loop->getParentOfType<RoleOp>();
  bool compute = role.getKind() == RoleKind::compute;
  // Before the loop: a Q Kᵀ of block 0 (scores in flight into the loop) and
  // a softmax_update (block 0's correction factors).
  bool qkBefore = false, updateBefore = false;
  for (Operation &op : role.getBody().front()) {
    if (&op == loop.getOperation())
      break;
    op.walk([&](Operation *o) {
      if (auto m = dyn_cast<MmaOp>(o))
        qkBefore |= m.getKind() == MmaKind::qk;
      updateBefore |= isa<SoftmaxUpdateOp>(o);
    });
  }
  // One pass over the body, in order and into skip regions.
  bool softmaxAhead = false, qkAhead = false, correctFirst = false,
       sawUpdate = false, skipFirst = false, sawVote = false;
  auto isAhead = [](std::optional<uint64_t> a) { return a && *a == 1; };
  loop.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (auto r = dyn_cast<RowMaxOp>(op))
      softmaxAhead |= isAhead(r.getAhead());
    else if (auto m = dyn_cast<MmaOp>(op)) {
      qkAhead |= m.getKind() == MmaKind::qk && isAhead(m.getAhead());
      c.deferredPV |= m.getAhead() && int64_t(*m.getAhead()) < 0;
    }
    else if (isa<SoftmaxUpdateOp>(op))
      sawUpdate = true;
    else if (isa<CorrectOp>(op))
      correctFirst |= !sawUpdate;
    else if (auto v = dyn_cast<VoteOp>(op)) {
      sawVote = true;
      c.counters |= v.getStats();
    } else if (isa<UnlessSkippedOp>(op))
      skipFirst |= !sawVote;
    else if (auto a = dyn_cast<AwaitVoteOp>(op)) {
      c.voteState |= a.getSpeculateAfter().value_or(0) > 0;
      c.counters |= a.getStats();
    }
  });
  c.scores = compute && qkBefore && qkAhead && !softmaxAhead;
  c.correction = compute && updateBefore && correctFirst;
  c.skip = compute && sawVote && skipFirst;
  c.voteState &= role.getKind() == RoleKind::load;
  c.deferredPV &= compute;
  return c;
}

static void printRegion(raw_ostream &os, BufferRegion r) {
  os << "@" << r.buffer.getSymName() << "[" << r.rowBegin << ":" << r.rowEnd
     << ", " << r.colBegin << ":" << r.colEnd << "]";
}

void ProtocolAnalysis::print(raw_ostream &os) const {
  os << "protocol of @" << kernel.getSymName() << "\n";
  for (PipeOp p : kernel.getBody().getOps<PipeOp>()) {
    const PipeInfo &info = pipe(p);
    os << "  pipe @" << p.getSymName() << " depth " << info.depth
       << (info.perBlock ? " per-block" : " once") << " full-arrivals "
       << info.fullArrivals << " empty-arrivals " << info.emptyArrivals
       << (info.multicast ? " multicast" : "");
    if (info.cpAsyncThreads)
      os << " cp-async-threads " << info.cpAsyncThreads;
    os << "\n";
  }
  static const char *kinds[] = {"once", "first", "n", "last"};
  for (RoleOp role : kernel.getBody().getOps<RoleOp>()) {
    os << "  role @" << role.getSymName() << "\n";
    role.walk([&](StepOpInterface s) {
      const StepInfo &info = *step(s);
      os << "    " << s->getName().stripDialect() << " block "
         << kinds[int(info.block.kind)];
      if (info.block.kind == BlockRef::Kind::Current && info.block.ahead)
        os << (info.block.ahead > 0 ? "+" : "") << info.block.ahead;
      if (info.block.kind == BlockRef::Kind::First && info.block.ahead)
        os << "+" << info.block.ahead;
      for (const BarrierEvent &e : info.events) {
        static const char *verbs[] = {" wait ", " arrive ", " sync "};
        os << verbs[int(e.kind)];
        switch (e.barrier) {
        case BarrierEvent::Barrier::PipeFull:
        case BarrierEvent::Barrier::PipeEmpty:
          os << "@" << PipeOp(e.pipe).getSymName()
             << (e.full() ? ".full" : ".empty");
          break;
        case BarrierEvent::Barrier::Named:
          os << "bar" << e.named.id << "/" << e.named.threads;
          break;
        case BarrierEvent::Barrier::Vote:
          os << "vote";
          break;
        }
        if (e.arrivals)
          os << " x" << e.arrivals;
        if (e.txBytes)
          os << " tx " << e.txBytes;
      }
      // A drain waits for this round's release, not the previous one's.
      if (auto a = dyn_cast<AcquireOp>(s.getOperation()); a && a.getDrain())
        os << " drain (this round's release)";
      for (const BufferRegion &r : info.reads) {
        os << " reads ";
        printRegion(os, r);
      }
      for (const BufferRegion &r : info.writes) {
        os << " writes ";
        printRegion(os, r);
      }
      os << "\n";
    });
    role.walk([&](KVLoopOp loop) {
      LoopCarried c = carried(loop);
      os << "    kv_loop carries";
      if (role.getKind() == RoleKind::compute)
        os << " o m l";
      if (c.scores)
        os << " scores";
      if (c.correction)
        os << " correction";
      if (c.skip)
        os << " skip";
      if (c.voteState)
        os << " vote-state";
      if (c.counters)
        os << " counters";
      if (role.getKind() != RoleKind::compute && !c.voteState && !c.counters)
        os << " nothing";
      os << "\n";
    });
  }
}
