//===- SyncCheck.cpp - Exhaustive check of a ws.kernel's synchronisation --===//
//
// An explicit-state model checker over the protocol (Protocol.h). Each role
// is one thread of control; only the steps with a barrier event or a TMA
// copy are modelled (the others touch no shared state the check is about).
// A state is a flat vector of integers (roles, mbarriers, named barriers,
// the stages consumers hold, the vote slots, the copies in flight); the
// search is breadth-first, so a trace is a shortest interleaving.
//
//===----------------------------------------------------------------------===//
#include "SyncModel.h"

#include <chrono>
#include <deque>

using namespace mlir;
using namespace blasst;
using namespace blasst::ws;
using namespace blasst::ws::sync;

std::optional<std::string> Model::build() {
  persistent = kernel.getPersistent();
  for (PipeOp p : kernel.getBody().getOps<PipeOp>()) {
    pipes.push_back(p);
    maxDepth = std::max<int64_t>(maxDepth, p.getDepth());
    numConsumersMax =
        std::max<int>(numConsumersMax, int(p.getConsumers().size()));
  }
  int stages = 0;
  for (auto [i, p] : llvm::enumerate(pipes)) {
    const PipeInfo &info = protocol.pipe(p);
    fullBase.push_back(numMbar);
    for (int64_t s = 0; s < info.depth; ++s)
      mbarCount.push_back(info.fullArrivals);
    numMbar += int(info.depth);
    emptyBase.push_back(numMbar);
    for (int64_t s = 0; s < info.depth; ++s)
      mbarCount.push_back(info.emptyArrivals);
    numMbar += int(info.depth);
    stageBase.push_back(stages);
    stages += int(info.depth);
  }
  // Voters publish to the load role: one slot and one arrival each.
  for (RoleOp role : kernel.getBody().getOps<RoleOp>())
    role.walk([&](VoteOp v) {
      if (v.getPublish())
        ++numVoters;
    });
  if (numVoters) {
    voteBase = numMbar;
    mbarCount.append(2, numVoters);
    numMbar += 2;
  }

  int voter = 0;
  blackwell = kernel.getTarget() == ws::Target::sm_100a;
  for (RoleOp role : kernel.getBody().getOps<RoleOp>()) {
    // sm_100a: one thread of the MMA warp issues tcgen05.mma; the tensor
    // cores run the products in issue order, and its releases are commits.
    bool asyncMma = blackwell && role.getKind() == RoleKind::mma;
    if (asyncMma) {
      if (mmaRole >= 0)
        return std::string("two MMA roles");
      mmaRole = int(roles.size());
    }
    RoleProg prog;
    prog.role = role;
    for (PipeOp p : pipes) {
      int idx = -1;
      for (auto [i, c] : llvm::enumerate(p.getConsumers()))
        if (cast<FlatSymbolRefAttr>(c).getValue() == role.getSymName())
          idx = int(i);
      prog.consumerIdx.push_back(idx);
    }
    int seg = 0;
    bool loopStatsSpeculate = false;
    std::optional<std::string> unsupported;
    auto add = [&](Operation *op, bool inSkip) {
      const StepInfo *info = protocol.step(op);
      if (!info)
        return;
      std::vector<Instr> &out = prog.seg[seg];
      auto base = [&](Instr::Kind k) {
        Instr in;
        in.kind = k;
        in.op = op;
        in.block = info->block;
        in.inSkip = inSkip;
        return in;
      };
      if (auto a = dyn_cast<AcquireOp>(op)) {
        Instr in = base(Instr::Kind::PipeWait);
        in.pipe = pipeIndex(a.getPipeAttr());
        in.producer = pipes[in.pipe].getProducer() == role.getSymName();
        out.push_back(in);
        return;
      }
      if (auto rel = dyn_cast<ReleaseOp>(op)) {
        Instr in = base(Instr::Kind::PipeArrive);
        in.commit = asyncMma;
        in.pipe = pipeIndex(rel.getPipeAttr());
        in.producer = pipes[in.pipe].getProducer() == role.getSymName();
        for (const BarrierEvent &e : info->events) {
          in.arrivals = e.arrivals;
          in.tx = e.txBytes;
        }
        // kv_multicast: the partner CTA is assumed to mirror this one (its
        // consumer warps' remote arrivals come with this role's).
        if (!in.producer && protocol.isMulticast(pipes[in.pipe]))
          in.arrivals += role.getNumWarps();
        for (auto load : op->getBlock()->getOps<TmaLoadOp>())
          in.onDemand |=
              load.getOnDemand() && load.getPipeAttr() == rel.getPipeAttr();
        out.push_back(in);
        return;
      }
      if (auto load = dyn_cast<TmaLoadOp>(op)) {
        Instr in = base(Instr::Kind::TmaIssue);
        in.pipe = pipeIndex(load.getPipeAttr());
        in.producer = true;
        in.onDemand = load.getOnDemand();
        auto dst = cast<BufferOp>(
            SymbolTable::lookupSymbolIn(kernel, load.getDstAttr().getAttr()));
        in.bytes = dst.getStageBytes();
        effectsOf(op, role, in);
        out.push_back(in);
        return;
      }
      if (isa<MmaOp>(op) && asyncMma) {
        Instr in = base(Instr::Kind::MmaIssue);
        effectsOf(op, role, in);
        if (inSkip)
          skippedEffectsOf(op, role, in);
        out.push_back(in);
        return;
      }
      if (isa<LoadVoteOp>(op)) {
        Instr in = base(Instr::Kind::LoadVote);
        effectsOf(op, role, in);
        out.push_back(in);
        return;
      }
      // Reads and writes of storage (kept only where another agent touches
      // the same cells, see buildCells).
      {
        Instr in = base(Instr::Kind::Access);
        effectsOf(op, role, in);
        if (!in.effects.empty())
          out.push_back(in);
      }
      if (auto vote = dyn_cast<VoteOp>(op)) {
        Instr in = base(Instr::Kind::Vote);
        in.publish = vote.getPublish();
        if (in.publish) {
          prog.voter = voter++;
          if (!vote.decidesNextBlock())
            unsupported = "a published vote that does not decide block n + 1";
        }
        out.push_back(in);
        return;
      }
      if (auto await = dyn_cast<AwaitVoteOp>(op)) {
        Instr in = base(Instr::Kind::AwaitVote);
        in.speculate = int64_t(await.getSpeculateAfter().value_or(0));
        loopStatsSpeculate |= await.getStats() && in.speculate > 0;
        out.push_back(in);
        return;
      }
      // Named barriers shared with another role (turns); a warpgroup's own
      // barrier (the vote's reduction, a P store) involves only the role.
      for (const BarrierEvent &e : info->events) {
        if (e.barrier != BarrierEvent::Barrier::Named ||
            e.named.id == protocol.roleBarrier(role).id)
          continue;
        Instr in =
            base(e.kind == BarrierEvent::Kind::Sync ? Instr::Kind::NamedSync
                                                    : Instr::Kind::NamedArrive);
        in.named = namedIndex(e.named);
        in.threads = e.named.threads;
        in.arrivals = e.arrivals;
        out.push_back(in);
      }
    };
    for (Operation &top : role.getBody().front()) {
      if (auto loop = dyn_cast<KVLoopOp>(top)) {
        if (seg != 0)
          return std::string("a role with two kv_loops");
        seg = 1;
        prog.hasLoop = true;
        loop.getBody().walk<WalkOrder::PreOrder>([&](Operation *op) {
          add(op, op->getParentOfType<UnlessSkippedOp>() != nullptr);
        });
        seg = 2;
        if (loopStatsSpeculate) {
          Instr in;
          in.kind = Instr::Kind::ReadLastVotes;
          in.op = &top;
          prog.seg[2].push_back(in);
        }
        continue;
      }
      top.walk<WalkOrder::PreOrder>([&](Operation *op) { add(op, false); });
    }
    if (unsupported)
      return *unsupported;
    for (const Instr &in : prog.seg[1])
      prog.skipSteps |= in.inSkip;
    prog.branchVotes = prog.skipSteps;
    roles.push_back(std::move(prog));
  }
  // A vote matters to the model only when it publishes or decides steps
  // the model runs; the others are left out (fewer states).
  for (RoleProg &p : roles) {
    for (const Instr &in : p.seg[1])
      if (in.kind == Instr::Kind::Vote && in.publish)
        p.branchVotes = true;
    for (std::vector<Instr> &seg : p.seg)
      llvm::erase_if(seg, [&](const Instr &in) {
        return in.kind == Instr::Kind::Vote && !p.branchVotes;
      });
  }
  buildCells();
  for (RoleProg &p : roles)
    for (std::vector<Instr> &seg : p.seg)
      for (Instr &in : seg) {
        in.id = int(instrs.size());
        instrs.push_back(&in);
      }
  // Where a role's decision dies in the loop body: after its last reader,
  // when every reader follows a vote of the same iteration.
  for (RoleProg &p : roles) {
    int firstWriter = -1, lastReader = -1;
    bool readBeforeWrite = false;
    for (auto [i, in] : llvm::enumerate(p.seg[1])) {
      bool writes = in.kind == Instr::Kind::Vote ||
                    in.kind == Instr::Kind::LoadVote ||
                    in.kind == Instr::Kind::AwaitVote;
      bool reads = in.inSkip || in.onDemand ||
                   llvm::any_of(in.effects, [](const Effect &e) {
                     return e.write && e.kind == VKind::D;
                   });
      if (reads) {
        readBeforeWrite |= firstWriter < 0;
        lastReader = int(i);
      }
      if (writes && firstWriter < 0)
        firstWriter = int(i);
    }
    if (!readBeforeWrite && lastReader >= 0)
      p.skipDeadFrom = lastReader + 1;
  }
  offMbar = int(roles.size()) * kRoleFields;
  offNamed = offMbar + numMbar * kMbarFields;
  offHeld = offNamed + int(named.size()) * kNamedFields;
  offSlots = offHeld + stages * std::max(numConsumersMax, 1);
  offCells = offSlots + 2 * numVoters;
  offQueue = offCells + numCells;
  offCopies = offQueue + (mmaRole >= 0 ? 1 + kQueueCapacity * kQueueFields : 0);
  return std::nullopt;
}

State Model::initial() const {
  State s(offCopies, 0);
  for (int m = 0; m < numMbar; ++m)
    mbar(s, m)[MPending] = int32_t(mbarCount[m]);
  for (int i = offHeld; i < offSlots; ++i)
    s[i] = -1;
  for (int i = offSlots; i < offCells; ++i)
    s[i] = -1;
  for (int r = 0; r < int(roles.size()); ++r)
    normalize(s, r);
  return s;
}

void Model::normalize(State &s, int r) const {
  const RoleProg &p = roles[r];
  int64_t tiles = int64_t(trips.size());
  while (true) {
    int32_t &seg = role(s, r, RSeg);
    if (seg == kDone)
      return;
    int32_t &idx = role(s, r, RIdx);
    if (seg == 1 && p.skipDeadFrom >= 0 && idx >= p.skipDeadFrom)
      role(s, r, RSkip) = 0;
    if (idx < int32_t(p.seg[seg].size()))
      return;
    idx = 0;
    int64_t n = tripOf(s, r);
    if (seg == 0) {
      seg = n > 0 ? 1 : 2;
      role(s, r, RN) = 0;
      // The loop starts with block 0 kept (loop-carried skip = false) and
      // a load role's vote state as the lowering initialises it.
      role(s, r, RSkip) = 0;
      role(s, r, RKnown) = role(s, r, RKept) = 1;
      role(s, r, RRun) = 0;
    } else if (seg == 1) {
      if (++role(s, r, RN) >= n)
        seg = 2;
    } else {
      if (++role(s, r, RTile) >= tiles) {
        seg = kDone;
        // Finished roles all look alike.
        for (int f = 0; f < kRoleFields; ++f)
          if (f != RSeg)
            role(s, r, RoleField(f)) = 0;
      } else {
        seg = 0;
      }
    }
  }
}

Model::Blk Model::blockOf(const Instr &in, const State &s, int r) const {
  return blockAt(in, role(s, r, RTile), role(s, r, RN));
}

Model::Blk Model::blockAt(const Instr &in, int64_t tile, int64_t loopN) const {
  Blk b;
  int64_t n = trips[std::min<size_t>(tile, trips.size() - 1)];
  if (in.pipe >= 0 && !perBlock(in.pipe)) {
    // Once per tile: stage 0, the tile's phase.
    b.local = b.abs = b.round = tile;
    return b;
  }
  switch (in.block.kind) {
  case BlockRef::Kind::Once:
    b.local = 0;
    break;
  case BlockRef::Kind::First:
    b.local = in.block.ahead; // block k of a prologue with ahead = k
    break;
  case BlockRef::Kind::Current:
    b.local = loopN + in.block.ahead;
    break;
  case BlockRef::Kind::Last:
    b.local = n - 1;
    break;
  }
  b.exists = b.local >= 0 && b.local < n;
  b.abs = base[tile] + b.local;
  if (in.pipe >= 0 && b.abs >= 0) {
    b.stage = b.abs % depth(in.pipe);
    b.round = b.abs / depth(in.pipe);
  }
  return b;
}

SyncCheckResult Model::run(const SyncCheckOptions &options) {
  SyncCheckResult result;
  auto start = std::chrono::steady_clock::now();
  int64_t maxTrip = maxDepth + options.extraBlocks;
  int64_t tiles = persistent ? options.persistentTiles : 1;
  {
    std::string b;
    llvm::raw_string_ostream os(b);
    os << "every interleaving of " << roles.size() << " roles";
    if (numVoters)
      os << ", every keep/skip outcome of the votes";
    os << ", " << (persistent ? "each tile with " : "") << "0 to " << maxTrip
       << " KV blocks";
    if (persistent)
      os << " (" << tiles << " tiles)";
    result.bounds = b;
  }
  // Every trip count per tile.
  SmallVector<SmallVector<int64_t>> configs = {{}};
  for (int64_t t = 0; t < tiles; ++t) {
    SmallVector<SmallVector<int64_t>> next;
    for (auto &c : configs)
      for (int64_t n = 0; n <= maxTrip; ++n) {
        next.push_back(c);
        next.back().push_back(n);
      }
    configs = std::move(next);
  }
  for (auto &config : configs) {
    trips = config;
    base.assign(1, 0);
    for (int64_t n : trips)
      base.push_back(base.back() + n);
    nodes.clear();
    seen.clear();
    violation.reset();
    violationSteps.clear();
    violationActor = -1;
    auto key = [](const State &s) {
      return std::string(reinterpret_cast<const char *>(s.data()),
                         s.size() * sizeof(int32_t));
    };
    State init = initial();
    seen.emplace(key(init), 0);
    nodes.push_back({std::move(init), -1, {}});
    for (size_t cur = 0; cur < nodes.size(); ++cur) {
      if (int64_t(nodes.size()) + result.statesExplored > options.maxStates) {
        result.status = SyncCheckResult::Status::NotVerified;
        result.message =
            (llvm::Twine("not verified: the search exceeded ") +
             llvm::Twine(options.maxStates) + " states with " + configName())
                .str();
        return result;
      }
      SmallVector<std::pair<State, Label>> succ;
      SmallVector<std::string> why(roles.size());
      State s = nodes[cur].state;
      bool allDone = true;
      for (int r = 0; r < int(roles.size()); ++r) {
        allDone &= role(s, r, RSeg) == kDone;
        stepRole(s, r, succ, why[r]);
        if (violation)
          break;
      }
      // Each copy in flight may land now.
      if (!violation)
        for (int i = offCopies; i < int(s.size()); i += kCopyFields) {
          State t = s;
          int p = s[i], st = s[i + 1];
          int m = fullBase[p] + st;
          int32_t *bar = mbar(t, m);
          if (bar[MCompleted] != s[i + 2]) {
            violation = Violation{
                (llvm::Twine("the copy of a block in phase ") +
                 llvm::Twine(s[i + 2]) + " lands while " + mbarName(m) +
                 " is in phase " + llvm::Twine(bar[MCompleted]))
                    .str(),
                pipes[p]};
            break;
          }
          // The copy's data is there before its bytes complete the phase.
          const Instr &copy = *instrs[s[i + 4]];
          Blk cb;
          int64_t copyTile = s[i + 2];
          if (perBlock(p)) {
            cb.abs = int64_t(s[i + 2]) * depth(p) + st;
            copyTile = 0;
            while (copyTile + 1 < int64_t(trips.size()) &&
                   base[copyTile + 1] <= cb.abs)
              ++copyTile;
            cb.local = cb.abs - base[copyTile];
          }
          if (!applyEffects(t, copy, cb, copyTile, trips[copyTile], -1))
            break;
          bar[MTx] -= s[i + 3];
          completeIfDone(t, m);
          t.erase(t.begin() + i, t.begin() + i + kCopyFields);
          Label l;
          l.copyPipe = p;
          l.copyStage = st;
          succ.push_back({std::move(t), l});
        }
      if (!violation)
        stepTensorCores(s, succ);
      if (modelBound) {
        result.status = SyncCheckResult::Status::NotVerified;
        result.message = "not verified: " + *modelBound;
        return result;
      }
      if (violation) {
        result.status = SyncCheckResult::Status::Failed;
        result.message = violation->message;
        result.op = violation->op;
        result.trace = trace(int(cur), &s, why);
        break;
      }
      if (succ.empty()) {
        if (!allDone) {
          result.status = SyncCheckResult::Status::Failed;
          result.message = "deadlock: no role can step and ";
          llvm::raw_string_ostream os(result.message);
          int waiting = 0;
          for (int r = 0; r < int(roles.size()); ++r)
            if (role(s, r, RSeg) != kDone)
              os << (waiting++ ? ", " : "") << "@"
                 << roles[r].role.getSymName();
          os << (waiting == 1 ? " waits" : " wait") << " forever";
          result.trace = trace(int(cur), &s, why);
          break;
        }
        if (std::optional<Violation> v = checkEnd(s)) {
          result.status = SyncCheckResult::Status::Failed;
          result.message = v->message;
          result.op = v->op;
          result.trace = trace(int(cur), &s, why);
          break;
        }
        continue;
      }
      for (auto &[t, l] : succ) {
        auto [it, inserted] = seen.emplace(key(t), int(nodes.size()));
        if (inserted)
          nodes.push_back({std::move(t), int(cur), l});
      }
    }
    result.statesExplored += int64_t(nodes.size());
    if (result.status == SyncCheckResult::Status::Failed)
      break;
  }
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return result;
}

SyncCheckResult blasst::ws::checkSync(KernelOp kernel,
                                      const ProtocolAnalysis &protocol,
                                      const SyncCheckOptions &options) {
  Model model(kernel, protocol);
  if (std::optional<std::string> reason = model.build()) {
    SyncCheckResult r;
    r.status = SyncCheckResult::Status::NotVerified;
    r.message = "not verified: " + *reason;
    return r;
  }
  return model.runAll(options);
}

SyncCheckResult Model::runAll(const SyncCheckOptions &options) {
  for (const RoleProg &p : roles)
    if (std::optional<Violation> v = checkRoleLocal(p)) {
      RoleOp role = p.role;
      SyncCheckResult r;
      r.status = SyncCheckResult::Status::Failed;
      r.message = v->message;
      r.op = v->op;
      r.trace = "in program order of @" + role.getSymName().str() +
                " (no interleaving needed)";
      return r;
    }
  return run(options);
}
