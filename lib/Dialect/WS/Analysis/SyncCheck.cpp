//===- SyncCheck.cpp - Exhaustive check of a ws.kernel's synchronisation --===//
//
// An explicit-state model checker over the protocol (Protocol.h). Each role
// is one thread of control; only the steps with a barrier event or a TMA
// copy are modelled (the others touch no shared state the check is about).
// A state is a flat vector of integers (roles, mbarriers, named barriers,
// the stages consumers hold, the vote slots, the copies in flight); the
// search is breadth-first, so a trace is a shortest interleaving. A copy
// that planEagerLanding clears lands right after its issue (a persistent-set
// reduction; the conditions that make it sound are checked there).
//
//===----------------------------------------------------------------------===//
#include "SyncModel.h"

#include "llvm/ADT/StringExtras.h"

#include <chrono>
#include <cstring>
#include <deque>
#include <functional>

using namespace mlir;
using namespace blasst;
using namespace blasst::ws;
using namespace blasst::ws::sync;

std::optional<std::string> Model::build() {
  persistent = kernel.getPersistent();
  for (PipeOp p : kernel.getBody().getOps<PipeOp>()) {
    pipes.push_back(p);
    modelDepth.push_back(p.getDepth());
    numConsumersMax =
        std::max<int>(numConsumersMax, int(p.getConsumers().size()));
  }
  // Voters publish to the load role: one slot and one arrival each (per
  // block: a role's vote on block 0 before its loop and the loop's votes
  // on the blocks after it share its slots).
  for (RoleOp role : kernel.getBody().getOps<RoleOp>()) {
    bool publishes = false;
    role.walk([&](VoteOp v) {
      publishes |= v.getPublish();
      firstBlockVote |= v.getPublish() && v.votesFirstBlock();
    });
    numVoters += publishes;
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
    std::function<void(Operation *, bool)> addOne;
    std::optional<int64_t> keptOverride;
    // The decision windows (from, run) of kept_ahead conditions.
    SmallVector<std::pair<int, int>> windows;
    auto isKeptAhead = [](Operation *op) {
      if (auto a = dyn_cast<AcquireOp>(op))
        return bool(a.getKeptAhead());
      if (auto l = dyn_cast<TmaLoadOp>(op))
        return bool(l.getKeptAhead());
      if (auto r = dyn_cast<ReleaseOp>(op))
        return bool(r.getKeptAhead());
      return false;
    };
    auto add = [&](Operation *op, bool inSkip) {
      std::vector<Instr> &out = prog.seg[seg];
      if (seg == 1 && isKeptAhead(op)) {
        // kept_ahead: the acquire, copy and release run twice, as lowered
        // (emitKeptAhead): block n + kept_ahead when the run before block
        // n + kept_ahead - ahead was kept, block n + ahead unless the run
        // through block n was. The copy and the release come with the
        // acquire.
        auto a = dyn_cast<AcquireOp>(op);
        if (!a)
          return;
        auto load = cast<TmaLoadOp>(a->getNextNode());
        auto rel = cast<ReleaseOp>(load->getNextNode());
        int64_t ahead = int64_t(*a.getAhead());
        int64_t kept = int64_t(*a.getKeptAhead());
        int run = int(a.getKeptRun().value_or(1));
        for (bool keptInstance : {true, false}) {
          size_t before = out.size();
          keptOverride =
              keptInstance ? std::optional<int64_t>(kept) : std::nullopt;
          for (Operation *o :
               {a.getOperation(), load.getOperation(), rel.getOperation()})
            addOne(o, inSkip);
          keptOverride.reset();
          for (size_t i = before; i < out.size(); ++i) {
            out[i].keptFrom = keptInstance ? int(ahead - kept) : 0;
            out[i].keptRun = run;
            out[i].keptWhen = keptInstance;
          }
          prog.keptHistory =
              std::max(prog.keptHistory, int(a.getKeptHistory()));
          windows.push_back({keptInstance ? int(ahead - kept) : 0, run});
          keptFirstBlock = std::max(keptFirstBlock, ahead + run - 1);
        }
        return;
      }
      addOne(op, inSkip);
    };
    addOne = [&](Operation *op, bool inSkip) {
      const StepInfo *info = protocol.step(op);
      if (!info)
        return;
      std::vector<Instr> &out = prog.seg[seg];
      auto base = [&](Instr::Kind k) {
        Instr in;
        in.kind = k;
        in.op = op;
        in.block = info->block;
        if (keptOverride)
          in.block.ahead = *keptOverride;
        in.inSkip = inSkip;
        return in;
      };
      if (auto a = dyn_cast<AcquireOp>(op)) {
        Instr in = base(Instr::Kind::PipeWait);
        in.pipe = pipeIndex(a.getPipeAttr());
        in.producer = pipes[in.pipe].getProducer() == role.getSymName();
        in.drain = a.getDrain();
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
        in.bytes = dst.getLandedBytes(); // a decode Q tile: its packed rows
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
        prog.votesFirst |= vote.votesFirstBlock();
        if (in.publish) {
          if (prog.voter < 0)
            prog.voter = voter++;
          if (!vote.decidesNextBlock() && !vote.votesFirstBlock())
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
        bool votedInBody = false;
        loop.getBody().walk<WalkOrder::PreOrder>([&](Operation *op) {
          votedInBody |= isa<VoteOp>(op);
          auto region = op->getParentOfType<UnlessSkippedOp>();
          size_t before = prog.seg[1].size();
          add(op, region != nullptr);
          // A region on block n + k tests the decision (latest block) - (n
          // + k) votes back: the latest is n + 1 after the body's vote.
          if (region && region.getAhead())
            for (size_t i = before; i < prog.seg[1].size(); ++i)
              prog.seg[1][i].skipDepth =
                  (votedInBody ? 1 : 0) - int(int64_t(*region.getAhead()));
        });
        // A deferred P V's loop runs one more iteration (as lowered).
        prog.lag = protocol.carried(loop).deferredPV ? 1 : 0;
        for (const Instr &in : prog.seg[1])
          prog.skipHistory |= in.skipDepth > 0;
        seg = 2;
        if (loopStatsSpeculate) {
          Instr in;
          in.kind = Instr::Kind::ReadLastVotes;
          in.op = &top;
          prog.seg[2].push_back(in);
        }
        continue;
      }
      // (Before the loop, a skip region holds block 0's steps under the
      // role's vote on block 0.)
      top.walk<WalkOrder::PreOrder>([&](Operation *op) {
        add(op, op->getParentOfType<UnlessSkippedOp>() != nullptr);
      });
    }
    if (unsupported)
      return *unsupported;
    for (const Instr &in : prog.seg[1])
      prog.skipSteps |= in.inSkip;
    prog.branchVotes = prog.skipSteps;
    // Windows [0, r) and [D, D + r) (as emitKeptAhead's): the D - 1
    // decisions before the latest exactly, then a saturating count of the
    // kept ones in a row (RHist; SyncModel.h).
    if (!windows.empty()) {
      int maxFrom = 0;
      for (auto [from, run] : windows)
        maxFrom = std::max(maxFrom, from);
      int exact = std::max(0, maxFrom - 1);
      if (llvm::all_of(windows, [&](std::pair<int, int> w) {
            return w.first == 0 || w.first == exact + 1;
          })) {
        prog.histExact = exact;
        prog.histCap = 0;
        for (auto [from, run] : windows)
          prog.histCap = std::max(prog.histCap, from + run - 1 - exact);
      }
    }
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
  // The barriers, each pipe at the depth the search gives it.
  planShallowRings();
  int stages = 0;
  for (auto [i, p] : llvm::enumerate(pipes)) {
    const PipeInfo &info = protocol.pipe(p);
    int64_t d = modelDepth[i];
    maxDepth = std::max(maxDepth, d);
    fullBase.push_back(numMbar);
    for (int64_t s = 0; s < d; ++s)
      mbarCount.push_back(info.fullArrivals);
    numMbar += int(d);
    emptyBase.push_back(numMbar);
    for (int64_t s = 0; s < d; ++s)
      mbarCount.push_back(info.emptyArrivals);
    numMbar += int(d);
    stageBase.push_back(stages);
    stages += int(d);
  }
  if (numVoters) {
    voteBase = numMbar;
    mbarCount.append(2, numVoters);
    numMbar += 2;
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
    if (!readBeforeWrite && lastReader >= 0 && !p.skipHistory && !p.keptHistory)
      p.skipDeadFrom = lastReader + 1;
  }
  offMbar = int(roles.size()) * kRoleFields;
  offNamed = offMbar + numMbar * kMbarFields;
  offHeld = offNamed + int(named.size()) * kNamedFields;
  offSlots = offHeld + stages * std::max(numConsumersMax, 1);
  offCells = offSlots + 2 * numVoters;
  offQueue = offCells + numCells;
  planEagerLanding();
  planEagerProducts();
  return std::nullopt;
}

// Eager landing. A copy in flight lands at any later point; landing it
// right away in every state where it is in flight (exploring no other
// successor there) is a persistent-set reduction (Godefroid): sound when
// no transition that can run before the landing depends on it. The
// landing touches the stage's full barrier (its bytes), the stage's cells
// and the multiset of copies in flight; the conditions below make every
// other access to these wait for the full barrier's phase, which the
// copy's own bytes hold back:
//  (a) bytes: per block, the producer's releases expect exactly the bytes
//      of its copies into the pipe (an on_demand copy and its release are
//      skipped together), so the phase completes only once every copy of
//      the block has landed;
//  (b) the stage's storage is written by the pipe's copies only, and read
//      only by consumer steps (or tensor-core products) that follow, in
//      their role's program order, that role's acquire of the same block;
//  (c) a consumer releases a block only after its acquire of that block,
//      so the next copy into the stage waits for the landing too;
//  (d) each role acquires (and the producer fills) blocks 0, 1, ... in
//      order, each once (prologue blocks 0 .. k - 1, then n + k in the
//      loop), so no wait on the stage's barrier for an earlier phase runs
//      after the copy's issue (it could see the landing's completion).
// Where a condition fails the pipe's copies land in every order, and the
// summary says why.
std::optional<std::string> Model::eagerLandingFails(int p) const {
  PipeOp pipe = pipes[p];
  if (protocol.isMulticast(pipe))
    return std::string("a multicast pipe");
  bool block = perBlock(p);
  // (d) The blocks of the steps on `p` of one kind (consumer waits, or the
  // producer's copies and releases): once each, in order.
  auto inOrder = [&](const RoleProg &prog, auto pick) -> bool {
    int64_t next = 0;
    std::optional<int64_t> loop;
    for (int seg = 0; seg < 3; ++seg)
      for (const Instr &in : prog.seg[seg]) {
        if (in.pipe != p || !pick(in))
          continue;
        if (!block) {
          // Once per tile: in the tile's prologue.
          if (seg != 0)
            return false;
          continue;
        }
        if (seg == 2 || in.inSkip)
          return false;
        if (seg == 0) {
          if (in.block.kind != BlockRef::Kind::First &&
              in.block.kind != BlockRef::Kind::Once)
            return false;
          int64_t k = in.block.kind == BlockRef::Kind::Once ? 0 : in.block.ahead;
          if (k == next)
            ++next;
          else if (k != next - 1) // the same block again: a second step
            return false;
          continue;
        }
        if (in.block.kind != BlockRef::Kind::Current ||
            (loop && *loop != in.block.ahead))
          return false;
        loop = in.block.ahead;
      }
    return !block || !loop || *loop == next;
  };
  auto sameBlock = [&](const Instr &a, const Instr &b) {
    return !block || (a.block.kind == b.block.kind &&
                      (a.block.kind == BlockRef::Kind::Once ||
                       a.block.ahead == b.block.ahead));
  };
  // An acquire of `p` by the role before step `j` of segment `seg`, on the
  // step's block (a once-per-tile pipe: in the tile, any segment before).
  auto acquiredBefore = [&](const RoleProg &prog, int seg, size_t j) {
    for (int sg = block ? seg : 0; sg <= seg; ++sg)
      for (size_t i = 0; i < (sg == seg ? j : prog.seg[sg].size()); ++i) {
        const Instr &w = prog.seg[sg][i];
        if (w.kind == Instr::Kind::PipeWait && w.pipe == p && !w.producer &&
            sameBlock(w, prog.seg[seg][j]))
          return true;
      }
    return false;
  };
  // The cells the pipe's copies write (every stage).
  llvm::DenseSet<int> copied;
  const RoleProg *producer = nullptr;
  for (const RoleProg &prog : roles)
    for (int seg = 0; seg < 3; ++seg)
      for (const Instr &in : prog.seg[seg]) {
        if (in.kind != Instr::Kind::TmaIssue || in.pipe != p)
          continue;
        if (producer && producer != &prog)
          return std::string("two roles copy into it");
        producer = &prog;
        for (const Effect &e : in.effects)
          for (int c : e.cells)
            for (int st = 0; st < e.stages; ++st)
              copied.insert(c + st * e.stageStride);
      }
  if (!producer)
    return std::string("no copies");
  // (a) Bytes: per segment and block, copies = expected transaction bytes.
  for (int seg = 0; seg < 3; ++seg) {
    const std::vector<Instr> &body = producer->seg[seg];
    for (size_t i = 0; i < body.size(); ++i) {
      const Instr &in = body[i];
      if (in.pipe != p || !in.producer ||
          (in.kind != Instr::Kind::TmaIssue &&
           in.kind != Instr::Kind::PipeArrive))
        continue;
      int64_t copies = 0, expected = 0;
      size_t first = body.size(), last = 0;
      for (size_t j = 0; j < body.size(); ++j) {
        const Instr &o = body[j];
        if (o.pipe != p || !o.producer || !sameBlock(o, in))
          continue;
        if (o.kind == Instr::Kind::TmaIssue) {
          if (o.bytes <= 0)
            return std::string("a copy of no bytes");
          copies += o.bytes;
        } else if (o.kind == Instr::Kind::PipeArrive) {
          expected += o.tx;
        } else {
          continue;
        }
        if (o.onDemand != in.onDemand || o.inSkip)
          return std::string("an on_demand copy and its release differ");
        first = std::min(first, j);
        last = std::max(last, j);
      }
      if (copies != expected)
        return (llvm::Twine("its release expects ") + llvm::Twine(expected) +
                " bytes for a block whose copies bring " + llvm::Twine(copies))
            .str();
      // The skip decision an on_demand copy and its release read is the
      // same: nothing between them sets it.
      for (size_t j = first; j < last; ++j)
        if (body[j].kind == Instr::Kind::Vote ||
            body[j].kind == Instr::Kind::AwaitVote ||
            body[j].kind == Instr::Kind::LoadVote)
          return std::string("a vote between a copy and its release");
    }
  }
  if (!inOrder(*producer, [](const Instr &in) {
        return in.kind == Instr::Kind::TmaIssue;
      }) ||
      !inOrder(*producer, [](const Instr &in) {
        return in.kind == Instr::Kind::PipeArrive && in.producer;
      }))
    return std::string("the producer does not fill blocks 0, 1, ... in order");
  for (auto [r, prog] : llvm::enumerate(roles)) {
    bool consumer = prog.consumerIdx[p] >= 0;
    if (consumer && !inOrder(prog, [](const Instr &in) {
          return in.kind == Instr::Kind::PipeWait && !in.producer;
        }))
      return ("@" + prog.role.getSymName() +
              " does not acquire blocks 0, 1, ... in order, each once")
          .str();
    for (int seg = 0; seg < 3; ++seg)
      for (auto [j, in] : llvm::enumerate(prog.seg[seg])) {
        // (c) Releases after the acquire of the block.
        if (in.kind == Instr::Kind::PipeArrive && in.pipe == p &&
            !in.producer && !acquiredBefore(prog, seg, j))
          return ("@" + prog.role.getSymName() +
                  " releases a block it did not acquire before")
              .str();
        if (in.kind == Instr::Kind::TmaIssue && in.pipe == p)
          continue;
        // (b) Other accesses to the copied cells.
        for (auto *list : {&in.effects, &in.skipEffects})
          for (const Effect &e : *list) {
            bool touches = false;
            for (int c : e.cells)
              for (int st = 0; st < e.stages; ++st)
                touches |= copied.contains(c + st * e.stageStride);
            if (!touches)
              continue;
            std::string who = in.op->getName().getStringRef().str() +
                              " of @" + prog.role.getSymName().str();
            if (e.write || in.kind == Instr::Kind::TmaIssue)
              return who + " writes its storage (@" +
                     BufferOp(e.buffer).getSymName().str() + ")";
            if (!consumer || !acquiredBefore(prog, seg, j))
              return who + " reads its storage without acquiring the block "
                           "before";
          }
      }
  }
  return std::nullopt;
}

void Model::planEagerLanding() {
  std::string eager, full;
  llvm::raw_string_ostream eos(eager), fos(full);
  for (int p = 0; p < int(pipes.size()); ++p) {
    bool copies = false;
    for (RoleProg &prog : roles)
      for (std::vector<Instr> &seg : prog.seg)
        for (Instr &in : seg)
          copies |= in.kind == Instr::Kind::TmaIssue && in.pipe == p;
    if (!copies)
      continue;
    std::optional<std::string> why = eagerLandingFails(p);
    for (RoleProg &prog : roles)
      for (std::vector<Instr> &seg : prog.seg)
        for (Instr &in : seg)
          if (in.kind == Instr::Kind::TmaIssue && in.pipe == p)
            in.eager = !why;
    if (why)
      fos << (full.empty() ? "" : "; ") << "@" << pipes[p].getSymName()
          << " (" << *why << ")";
    else
      eos << (eager.empty() ? "" : ", ") << "@" << pipes[p].getSymName();
  }
  if (!eager.empty())
    reduction = "copies into " + eager + " land eagerly";
  if (!full.empty())
    reduction += (reduction.empty() ? "" : "; ") +
                 ("copies landing in every order: " + full);
}

// Shallow token rings. A pipe with no storage (cross-stage P's handshake
// pipes) is a ring of tokens: its depth changes its barriers and nothing
// else. Where such a ring is deeper than 2, the search gives it depth 2 (so
// the trip-count bound, largest depth + 2, counts only the rings that hold
// data) and checks at every wait and arrival on it that the real depth gives
// the same outcome. That makes the two models step alike:
//  - one producer and one consumer, neither the MMA warp (no commits), no
//    copies, each release completing its phase (checked here);
//  - every arrival is for the next block of its side (checked at each:
//    ringAgrees), so the ring's barriers at any depth are a function of two
//    counts, blocks filled F and blocks released R (stage st of depth d has
//    completed #{b < F: b = st mod d} fill phases);
//  - a wait's outcome (pass, block, or two phases apart: parity aliasing)
//    is a function of F or R, its block and the depth; ringAgrees computes
//    it for both depths and requires the same;
//  - at exit a ring is balanced at any depth exactly when F = R.
// So, by induction over a run, a run of the depth-2 model with no
// disagreement is a run of the real one with the same steps, checks and
// verdicts, and the other way round (what the search explores of one it
// explores of the other). Where a wait or an arrival disagrees the search
// stops ("not verified") and checkSync searches again at the real depths,
// as it does for any verdict other than a pass (the verdict and the trace
// come from the real depths).
void Model::planShallowRings() {
  shallow.assign(pipes.size(), false);
  if (!shallowRings)
    return;
  SmallVector<std::string> names;
  for (auto [p, pipe] : llvm::enumerate(pipes)) {
    const PipeInfo &info = protocol.pipe(pipe);
    if (info.depth <= 2 || !info.perBlock || info.multicast ||
        !pipe.getBuffers().empty() || pipe.getConsumers().size() != 1)
      continue;
    bool ok = true;
    for (auto [r, prog] : llvm::enumerate(roles))
      for (const std::vector<Instr> &seg : prog.seg)
        for (const Instr &in : seg) {
          if (in.pipe != int(p))
            continue;
          if (int(r) == mmaRole || in.commit || in.inSkip ||
              (in.kind != Instr::Kind::PipeWait &&
               in.kind != Instr::Kind::PipeArrive))
            ok = false;
          if (in.kind == Instr::Kind::PipeArrive &&
              (in.tx != 0 || in.arrivals != (in.producer ? info.fullArrivals
                                                         : info.emptyArrivals)))
            ok = false;
        }
    if (!ok)
      continue;
    shallow[p] = true;
    modelDepth[p] = 2;
    names.push_back(("@" + pipe.getSymName()).str());
  }
  if (names.empty())
    return;
  llvm::raw_string_ostream os(shallowNote);
  os << "token rings " << llvm::join(names, ", ")
     << " searched at depth 2, every wait and arrival on them agreeing with "
        "their depth";
}

bool Model::ringAgrees(const State &s, const Instr &in, const Blk &b,
                       bool arrival) const {
  int p = in.pipe;
  int64_t d = depth(p), real = realDepth(p);
  // A producer waits on the empty barriers and arrives on the full ones.
  bool onFull = in.producer == arrival;
  int base = onFull ? fullBase[p] : emptyBase[p];
  // Blocks filled (full) or released (empty) so far: phases completed.
  int64_t count = 0;
  for (int64_t st = 0; st < d; ++st)
    count += mbar(s, base + int(st))[MCompleted];
  auto disagree = [&](const llvm::Twine &why) {
    if (!modelBound)
      modelBound = ("@" + pipes[p].getSymName() + " at depth 2: " + why +
                    " (block " + llvm::Twine(b.abs) + ")")
                       .str();
    return false;
  };
  if (arrival)
    return count == b.abs || disagree("an arrival out of block order");
  // Phases stage `st` of a ring of depth `dep` completed.
  auto done = [&](int64_t dep, int64_t st) {
    return count > st ? (count - 1 - st) / dep + 1 : int64_t(0);
  };
  if (mbar(s, base + int(b.abs % d))[MCompleted] != done(d, b.abs % d))
    return disagree("arrivals out of block order");
  // The wait needs the stage's phases up to block b - depth (a producer, or
  // a consumer's look-ahead past the end) or up to block b (a consumer).
  int64_t extra = !b.exists || in.producer ? 0 : 1;
  auto outcome = [&](int64_t dep) {
    int64_t need = b.abs / dep + extra, have = done(dep, b.abs % dep);
    return have < need - 1 || have > need ? 0 : have >= need ? 1 : 2;
  };
  return outcome(d) == outcome(real) ||
         disagree("a wait whose outcome differs at depth " + llvm::Twine(real));
}

void Model::initial(State s, SmallVectorImpl<State> &out) {
  setTrips(s);
  split.reset();
  State t = s;
  for (int r = 0; r < int(roles.size()); ++r)
    normalize(t, r);
  if (!split) {
    out.push_back(std::move(t));
    return;
  }
  auto [tile, at] = *split;
  State lower = s, upper = s;
  lower[offTrips + 2 * tile + 1] = int32_t(at);
  upper[offTrips + 2 * tile] = int32_t(at + 1);
  initial(std::move(lower), out);
  initial(std::move(upper), out);
}

void Model::normalize(State &s, int r) const {
  const RoleProg &p = roles[r];
  int64_t tiles = numTiles;
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
    int64_t tile = role(s, r, RTile);
    if (seg == 0) {
      seg = blockExists(tile, 0) ? 1 : 2;
      role(s, r, RN) = 0;
      // The loop starts with block 0 kept (loop-carried skip = false), or
      // with the prologue's vote on it (vote-first-block), and a load
      // role's vote state as the lowering initialises it. Before block 0
      // there is no block: "skipped" (a deferred P V's decision).
      if (!p.votesFirst)
        role(s, r, RSkip) = 0;
      role(s, r, RSkip1) = role(s, r, RSkip2) = p.skipHistory ? 1 : 0;
      role(s, r, RKnown) = role(s, r, RKept) = 1;
      role(s, r, RRun) = 0;
    } else if (seg == 1) {
      // A deferred P V's loop runs one more iteration (the last block's).
      if (!blockExists(tile, ++role(s, r, RN) - p.lag)) {
        seg = 2;
        // The decision history lives only in the loop (set at its first
        // ws.await_vote).
        role(s, r, RHist) = 0;
      }
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
    b.local = exactTrip(tile) - 1;
    break;
  }
  b.exists = blockExists(tile, b.local);
  b.abs = tileBase(tile) + b.local;
  if (in.pipe >= 0 && b.abs >= 0) {
    b.stage = b.abs % depth(in.pipe);
    b.round = b.abs / depth(in.pipe);
  }
  return b;
}

static uint64_t hashWords(const State &s) {
  // Four independent lanes of two words each (the multiplies of one lane
  // wait on each other; four lanes keep the multiplier busy), then mixed.
  constexpr uint64_t kMul = 0xff51afd7ed558ccdull;
  uint64_t h[4] = {0x9E3779B97F4A7C15ull ^ s.size(), 0xC2B2AE3D27D4EB4Full,
                   0x165667B19E3779F9ull, 0x27D4EB2F165667C5ull};
  auto word2 = [&](size_t i) {
    return uint64_t(uint32_t(s[i])) | uint64_t(uint32_t(s[i + 1])) << 32;
  };
  auto mix = [&](uint64_t &x, uint64_t w) {
    x = (x ^ w) * kMul;
    x ^= x >> 29;
  };
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    mix(h[0], word2(i));
    mix(h[1], word2(i + 2));
    mix(h[2], word2(i + 4));
    mix(h[3], word2(i + 6));
  }
  for (; i + 2 <= s.size(); i += 2)
    mix(h[0], word2(i));
  if (i < s.size())
    mix(h[0], uint32_t(s[i]));
  uint64_t out = h[0];
  for (int k = 1; k < 4; ++k)
    mix(out, h[k]);
  return out;
}

bool StateStore::insert(const State &s) {
  if (ref.empty())
    ref = s;
  uint64_t h = hashWords(s);
  size_t mask = table.size() - 1;
  size_t i = h & mask;
  for (;; i = (i + 1) & mask) {
    uint32_t e = table[i];
    if (!e)
      break;
    if (hashes[e - 1] == h && equal(int(e - 1), s))
      return false;
  }
  // Each word as its difference from the reference state (the first one
  // stored), zigzag/LEB128-coded; a run of equal words as a 0 byte and the
  // run's length (a difference is never coded with a leading 0 byte).
  auto put = [&](uint32_t z) {
    while (z >= 0x80) {
      bytes.push_back(uint8_t(z | 0x80));
      z >>= 7;
    }
    bytes.push_back(uint8_t(z));
  };
  auto refAt = [&](size_t k) { return k < ref.size() ? ref[k] : 0; };
  for (size_t k = 0; k < s.size();) {
    int32_t d = s[k] - refAt(k);
    if (d == 0) {
      size_t j = k;
      while (j < s.size() && s[j] == refAt(j))
        ++j;
      bytes.push_back(0);
      put(uint32_t(j - k));
      k = j;
      continue;
    }
    put((uint32_t(d) << 1) ^ uint32_t(d >> 31));
    ++k;
  }
  hashes.push_back(h);
  start.push_back(bytes.size());
  table[i] = uint32_t(hashes.size());
  if (2 * hashes.size() > table.size())
    grow();
  return true;
}

template <typename F> bool StateStore::decode(int idx, F &&word) const {
  size_t i = start[idx], k = 0;
  auto next = [&] {
    uint32_t z = 0;
    for (int shift = 0;; shift += 7) {
      uint8_t b = bytes[i++];
      z |= uint32_t(b & 0x7f) << shift;
      if (!(b & 0x80))
        return z;
    }
  };
  auto refAt = [&](size_t j) { return j < ref.size() ? ref[j] : 0; };
  while (i < start[idx + 1]) {
    if (bytes[i] == 0) {
      ++i;
      for (uint32_t n = next(); n; --n, ++k)
        if (!word(k, refAt(k)))
          return false;
      continue;
    }
    uint32_t z = next();
    if (!word(k, refAt(k) + (int32_t(z >> 1) ^ -int32_t(z & 1))))
      return false;
    ++k;
  }
  return true;
}

bool StateStore::equal(int idx, const State &s) const {
  size_t n = 0;
  return decode(idx,
                [&](size_t k, int32_t v) {
                  ++n;
                  return k < s.size() && s[k] == v;
                }) &&
         n == s.size();
}

State StateStore::get(int idx) const {
  State s;
  decode(idx, [&](size_t, int32_t v) {
    s.push_back(v);
    return true;
  });
  return s;
}

void StateStore::grow() {
  table.assign(table.size() * 2, 0);
  size_t mask = table.size() - 1;
  for (size_t e = 0; e < hashes.size(); ++e)
    for (size_t i = hashes[e] & mask;; i = (i + 1) & mask)
      if (!table[i]) {
        table[i] = uint32_t(e + 1);
        break;
      }
}

bool Model::eagerProductAt(const State &s, const SyncCheckOptions &options) {
  if (mmaRole < 0 || s[offQueue] == 0 ||
      !(options.eagerProducts || options.forceEagerProducts))
    return false;
  if (options.eagerLanding)
    for (int i = offCopies; i < int(s.size()); i += kCopyFields)
      if (instrs[s[i + 4]]->eager)
        return false; // the copy lands first
  if (options.forceEagerProducts)
    return true;
  int who = -1;
  const char *why = productEagerFails(s, who);
  if (why) {
    ++refusedProductStates;
    ++productRefusals[{why, who}];
    return false;
  }
  ++eagerProductStates;
  return true;
}

void Model::completeEagerly(State &t, Label &l,
                            const SyncCheckOptions &options) {
  std::vector<Label> done;
  while (eagerProductAt(t, options)) {
    SmallVector<std::pair<State, Label>> one;
    stepTensorCores(t, one);
    if (split || violation || one.size() != 1) {
      // Left to the search, which splits the interval or reports the
      // violation with its trace when it expands this state.
      split.reset();
      violation.reset();
      break;
    }
    t = std::move(one[0].first);
    done.push_back(one[0].second);
  }
  if (done.empty())
    return;
  auto chain = std::make_shared<std::vector<Label>>();
  if (l.then)
    *chain = *l.then;
  llvm::append_range(*chain, done);
  l.then = chain;
}

SyncCheckResult Model::run(const SyncCheckOptions &options) {
  SyncCheckResult result;
  auto start = std::chrono::steady_clock::now();
  maxTrip = std::max(maxDepth, keptFirstBlock) + options.extraBlocks;
  numTiles = persistent ? int(options.persistentTiles) : 1;
  {
    std::string b;
    llvm::raw_string_ostream os(b);
    os << "every interleaving of " << roles.size() << " roles";
    if (numVoters)
      os << ", every keep/skip outcome of the votes";
    os << ", " << (persistent ? "each tile with " : "") << "0 to " << maxTrip
       << " KV blocks";
    if (persistent)
      os << " (" << numTiles << " tiles)";
    result.bounds = b;
  }
  // One search for every trip count of every tile: the initial state
  // stands for all of them ([0, maxTrip] per tile) and is split where a
  // step's outcome depends on a trip count its interval does not decide.
  // A state with interval [lo, hi] stands for the concrete states of the
  // trip counts lo .. hi, whose steps are all alike (every question about
  // the trip count a step asked, the interval answered); so the search
  // visits exactly the concrete states of the configurations one by one,
  // each prefix they share once.
  offTrips = offQueue + (mmaRole >= 0 ? 1 + kQueueCapacity * kQueueFields : 0);
  offCopies = offTrips + 2 * numTiles;
  tripLo.assign(numTiles, 0);
  tripHi.assign(numTiles, maxTrip);
  trips.assign(numTiles, 0);
  nodes.clear();
  seen.clear();
  eagerProductStates = refusedProductStates = 0;
  beforeCompletion.clear();
  productRefusals.clear();
  violation.reset();
  violationSteps.clear();
  violationActor = -1;
  {
    State s(offCopies, 0);
    for (int m = 0; m < numMbar; ++m)
      mbar(s, m)[MPending] = int32_t(mbarCount[m]);
    for (int i = offHeld; i < offCells; ++i)
      s[i] = -1;
    for (int t = 0; t < numTiles; ++t) {
      s[offTrips + 2 * t] = 0;
      s[offTrips + 2 * t + 1] = int32_t(maxTrip);
    }
    SmallVector<State> roots;
    initial(std::move(s), roots);
    for (State &r : roots)
      if (seen.insert(r))
        nodes.push_back({-1, {}});
  }
  auto fail = [&](int cur, const State &s) {
    result.status = SyncCheckResult::Status::Failed;
    // The trace names the smallest trip counts the state stands for.
    for (int t = 0; t < numTiles; ++t)
      trips[t] = s[offTrips + 2 * t];
    result.trace = trace(cur, &s, explainBlocked(s));
  };
  SmallVector<std::pair<State, Label>> succ;
  SmallVector<State> work;
  for (size_t cur = 0; cur < nodes.size(); ++cur) {
    if (int64_t(nodes.size()) > options.maxStates) {
      State s = seen.get(int(cur));
      for (int t = 0; t < numTiles; ++t)
        trips[t] = s[offTrips + 2 * t];
      result.status = SyncCheckResult::Status::NotVerified;
      result.message =
          (llvm::Twine("not verified: the search exceeded ") +
           llvm::Twine(options.maxStates) + " states with " + configName())
              .str();
      return result;
    }
    work.assign(1, seen.get(int(cur)));
    while (!work.empty()) {
      State s = work.pop_back_val();
      setTrips(s);
      split.reset();
      succ.clear();
      SmallVector<std::string> why(roles.size());
      bool allDone = true;
      // Eager landing (planEagerLanding): where a copy that may land
      // eagerly is in flight, {its landing} is a persistent set, the only
      // successor explored.
      int eager = -1;
      if (options.eagerLanding)
        for (int i = offCopies; i < int(s.size()) && eager < 0;
             i += kCopyFields)
          if (instrs[s[i + 4]]->eager)
            eager = i;
      // Eager completion (SyncEager.cpp): where no other step can depend
      // on the product at the head of the queue before it completes,
      // {its completion} is a persistent set. (Successors are completed
      // eagerly before they are stored, below; this catches the states
      // where that was left to the search: a split or a violation.)
      bool eagerProduct = eager < 0 && eagerProductAt(s, options);
      for (int r = 0; r < int(roles.size()) && eager < 0 && !eagerProduct;
           ++r) {
        allDone &= role(s, r, RSeg) == kDone;
        stepRole(s, r, succ, why[r]);
        if (violation)
          break;
      }
      // Each copy in flight may land now.
      if (!violation && !eagerProduct)
        for (int i = offCopies; i < int(s.size()); i += kCopyFields) {
          if (eager >= 0 && i != eager)
            continue;
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
            while (copyTile + 1 < numTiles && tileBase(copyTile + 1) <= cb.abs)
              ++copyTile;
            cb.local = cb.abs - tileBase(copyTile);
          }
          if (!applyEffects(t, copy, cb, copyTile, -1))
            break;
          bar[MTx] -= s[i + 3];
          completeIfDone(t, m);
          t.erase(t.begin() + i, t.begin() + i + kCopyFields);
          Label l;
          l.copyPipe = p;
          l.copyStage = st;
          succ.push_back({std::move(t), l});
        }
      if (!violation && eager < 0)
        stepTensorCores(s, succ);
      if (split) {
        // Some step asked about a trip count the interval does not decide
        // (and was answered arbitrarily): what it found is dropped, and
        // each half of the interval is stepped on its own.
        violation.reset();
        violationSteps.clear();
        violationActor = -1;
        modelBound.reset();
        auto [tile, at] = *split;
        State lower = s, upper = std::move(s);
        lower[offTrips + 2 * tile + 1] = int32_t(at);
        upper[offTrips + 2 * tile] = int32_t(at + 1);
        work.push_back(std::move(upper));
        work.push_back(std::move(lower));
        continue;
      }
      if (modelBound) {
        result.statesExplored = int64_t(nodes.size());
        result.status = SyncCheckResult::Status::NotVerified;
        result.message = "not verified: " + *modelBound;
        return result;
      }
      if (violation) {
        result.message = violation->message;
        result.op = violation->op;
        fail(int(cur), s);
        break;
      }
      if (succ.empty()) {
        if (!allDone) {
          std::string message = "deadlock: no role can step and ";
          llvm::raw_string_ostream os(message);
          int waiting = 0;
          for (int r = 0; r < int(roles.size()); ++r)
            if (role(s, r, RSeg) != kDone)
              os << (waiting++ ? ", " : "") << "@"
                 << roles[r].role.getSymName();
          os << (waiting == 1 ? " waits" : " wait") << " forever";
          result.message = message;
          fail(int(cur), s);
          break;
        }
        if (std::optional<Violation> v = checkEnd(s)) {
          result.message = v->message;
          result.op = v->op;
          fail(int(cur), s);
          break;
        }
        continue;
      }
      for (auto &[t, l] : succ) {
        // A successor whose product completes eagerly has that completion
        // as its only successor: it is taken now and the state in between
        // is not stored (the steps go with the label, for a trace).
        if (mmaRole >= 0 &&
            (options.eagerProducts || options.forceEagerProducts) &&
            t[offQueue] > 0) {
          // A successor met before was completed (or left) the same way:
          // a duplicate either way, without walking the roles again.
          if (!beforeCompletion.insert(t))
            continue;
          completeEagerly(t, l, options);
        }
        if (seen.insert(t))
          nodes.push_back({int(cur), l});
      }
    }
    if (result.status == SyncCheckResult::Status::Failed)
      break;
  }
  result.statesExplored = int64_t(nodes.size());
  result.reduction = options.eagerLanding ? reduction : "";
  if (!shallowNote.empty())
    result.reduction =
        shallowNote + (result.reduction.empty() ? "" : "; ") + result.reduction;
  if (mmaRole >= 0 && options.forceEagerProducts) {
    result.reduction += (result.reduction.empty() ? "" : "; ") +
                        std::string("every product completed eagerly, "
                                    "unchecked (force-eager-products)");
  } else if (mmaRole >= 0 && options.eagerProducts &&
             eagerProductStates + refusedProductStates > 0) {
    std::string b;
    llvm::raw_string_ostream os(b);
    int64_t all = eagerProductStates + refusedProductStates;
    os << "products complete eagerly in " << eagerProductStates << " of " << all
       << " states with one at the head of the queue";
    // The most frequent reasons the others were searched in every order.
    SmallVector<std::pair<int64_t, std::pair<std::string, int>>> why;
    for (auto &[k, n] : productRefusals)
      why.push_back({n, k});
    std::stable_sort(why.begin(), why.end(),
                     [](auto &x, auto &y) { return x.first > y.first; });
    for (size_t i = 0; i < why.size() && i < 2; ++i) {
      os << (i ? ", " : "; in every order where: ") << why[i].second.first;
      if (why[i].second.second >= 0)
        os << " (@" << roles[why[i].second.second].role.getSymName() << ")";
      os << " " << why[i].first;
    }
    result.reduction += (result.reduction.empty() ? "" : "; ") + b;
  }
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return result;
}
SmallVector<std::string> Model::explainBlocked(const State &s) {
  // The same expansion as the search's, with the text: it stops at the
  // same violation.
  std::optional<Violation> savedViolation = std::move(violation);
  std::vector<Label> savedSteps = std::move(violationSteps);
  int savedActor = violationActor;
  violation.reset();
  explain = true;
  SmallVector<std::string> why(roles.size());
  SmallVector<std::pair<State, Label>> succ;
  for (int r = 0; r < int(roles.size()); ++r) {
    stepRole(s, r, succ, why[r]);
    if (violation)
      break;
  }
  explain = false;
  violation = std::move(savedViolation);
  violationSteps = std::move(savedSteps);
  violationActor = savedActor;
  return why;
}

SyncCheckResult blasst::ws::checkSync(KernelOp kernel,
                                      const ProtocolAnalysis &protocol,
                                      const SyncCheckOptions &options) {
  auto search = [&](bool shallowRings, bool &shallow) {
    Model model(kernel, protocol, shallowRings);
    shallow = false;
    if (std::optional<std::string> reason = model.build()) {
      SyncCheckResult r;
      r.status = SyncCheckResult::Status::NotVerified;
      r.message = "not verified: " + *reason;
      return r;
    }
    shallow = model.usesShallowRings();
    return model.runAll(options);
  };
  bool shallow = false;
  SyncCheckResult r = search(options.shallowTokenRings, shallow);
  if (!shallow || r.status == SyncCheckResult::Status::Verified)
    return r;
  // Shallow token rings prove only a pass: any other verdict, and a wait or
  // arrival whose outcome depends on the depth, is searched again at the
  // real depths (the verdict and its trace come from there).
  SyncCheckResult full = search(false, shallow);
  full.seconds += r.seconds;
  std::string why = r.status == SyncCheckResult::Status::NotVerified
                        ? r.message
                        : "a violation at depth 2";
  full.reduction = "token rings searched at their depths after " +
                   std::to_string(r.statesExplored) + " states at depth 2 (" +
                   why + ")" + (full.reduction.empty() ? "" : "; ") +
                   full.reduction;
  return full;
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
