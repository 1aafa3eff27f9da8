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
#include "blasst/Dialect/WS/Analysis/SyncCheck.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <deque>
#include <optional>
#include <unordered_map>

using namespace mlir;
using namespace blasst;
using namespace blasst::ws;

namespace {

/// One modelled step of a role.
struct Instr {
  enum class Kind {
    PipeWait,      ///< acquire: wait on full (consumer) or empty (producer)
    PipeArrive,    ///< release: arrive on full (producer) or empty (consumer)
    TmaIssue,      ///< tma_load: an asynchronous copy into a stage
    NamedSync,     ///< bar.sync on a named barrier shared with another role
    NamedArrive,   ///< bar.arrive
    Vote,          ///< ws.vote: keep/skip (and publish to the load role)
    AwaitVote,     ///< ws.await_vote
    ReadLastVotes, ///< the load role reads the last block's votes (stats)
  };
  Kind kind;
  Operation *op = nullptr;
  int pipe = -1;
  bool producer = false;
  BlockRef block;
  int64_t arrivals = 0, tx = 0, bytes = 0;
  int named = -1;
  int64_t threads = 0;
  bool inSkip = false, publish = false, onDemand = false;
  int64_t speculate = 0;
};

struct RoleProg {
  RoleOp role;
  /// Prologue, kv_loop body, epilogue.
  SmallVector<Instr> seg[3];
  /// For each pipe: this role's index among its consumers (-1: none).
  SmallVector<int> consumerIdx;
  int voter = -1;
  /// Whether the vote's outcome changes what the role does.
  bool branchVotes = false;
  /// Whether a skip region holds a modelled step.
  bool skipSteps = false;
};

// Flat state layout.
enum RoleField {
  RSeg,
  RTile,
  RN,
  RIdx,
  RSub,
  RSkip,
  RKnown,
  RKept,
  RRun,
  RWaitGen,
  RPrevKept,
  kRoleFields
};
enum MbarField { MCompleted, MPending, MTx, kMbarFields };
enum NamedField { NArrived, NGen, NMask, kNamedFields };
constexpr int kCopyFields = 4; // pipe, stage, round, bytes
constexpr int kDone = 3;

using State = std::vector<int32_t>;

struct Label {
  int actor = -1; ///< role index, or -1: a copy lands
  const Instr *instr = nullptr;
  int64_t block = 0;
  int variant = 0; ///< vote: 1 = skip; 2: skipped region; 3: no such
                   ///< block (not run); 4: past the end; 5: once per tile
  int copyPipe = -1, copyStage = 0;
};

struct Node {
  State state;
  int parent;
  Label label;
};

class Model {
public:
  Model(KernelOp kernel, const ProtocolAnalysis &protocol)
      : kernel(kernel), protocol(protocol) {}

  /// Builds the programs; a reason when the model cannot cover the kernel.
  std::optional<std::string> build();
  SyncCheckResult run(const SyncCheckOptions &options);

private:
  KernelOp kernel;
  const ProtocolAnalysis &protocol;
  mutable SmallVector<PipeOp> pipes;
  SmallVector<int> fullBase, emptyBase, stageBase;
  int numConsumersMax = 0;
  int voteBase = -1, numMbar = 0, numVoters = 0;
  SmallVector<int64_t> mbarCount;
  SmallVector<NamedBarrier> named;
  mutable std::vector<RoleProg> roles;
  bool persistent = false;
  int64_t maxDepth = 1;

  // Offsets into a state.
  int offMbar = 0, offNamed = 0, offHeld = 0, offSlots = 0, offCopies = 0;

  // The configuration being explored.
  SmallVector<int64_t> trips, base;

  // The search.
  std::vector<Node> nodes;
  std::unordered_map<std::string, int> seen;

  // A violation found while expanding a state.
  struct Violation {
    std::string message;
    Operation *op = nullptr;
  };
  std::optional<Violation> violation;

  int pipeIndex(FlatSymbolRefAttr ref) const {
    for (auto [i, p] : llvm::enumerate(pipes))
      if (p.getSymName() == ref.getValue())
        return int(i);
    return -1;
  }
  int namedIndex(NamedBarrier b) {
    for (auto [i, n] : llvm::enumerate(named))
      if (n.id == b.id)
        return int(i);
    named.push_back(b);
    return int(named.size()) - 1;
  }
  int64_t depth(int p) const { return protocol.pipe(pipes[p]).depth; }
  bool perBlock(int p) const { return protocol.pipe(pipes[p]).perBlock; }
  int32_t &role(State &s, int r, RoleField f) const {
    return s[r * kRoleFields + f];
  }
  int32_t role(const State &s, int r, RoleField f) const {
    return s[r * kRoleFields + f];
  }
  int32_t *mbar(State &s, int m) const { return &s[offMbar + m * kMbarFields]; }
  const int32_t *mbar(const State &s, int m) const {
    return &s[offMbar + m * kMbarFields];
  }
  int32_t *nbar(State &s, int n) const {
    return &s[offNamed + n * kNamedFields];
  }
  int32_t &held(State &s, int p, int stage, int c) const {
    return s[offHeld + (stageBase[p] + stage) * numConsumersMax + c];
  }
  int32_t &slot(State &s, int parity, int v) const {
    return s[offSlots + parity * numVoters + v];
  }
  int64_t tripOf(const State &s, int r) const {
    return trips[std::min<size_t>(role(s, r, RTile), trips.size() - 1)];
  }

  State initial() const;
  void normalize(State &s, int r) const;
  void advance(State &s, int r) const {
    ++role(s, r, RIdx);
    role(s, r, RSub) = 0;
    normalize(s, r);
  }
  const Instr *current(const State &s, int r) const {
    int seg = role(s, r, RSeg);
    if (seg == kDone)
      return nullptr;
    return &roles[r].seg[seg][role(s, r, RIdx)];
  }

  struct Blk {
    bool exists = true;
    int64_t local = 0, abs = 0, stage = 0, round = 0;
  };
  Blk blockOf(const Instr &in, const State &s, int r) const;

  void completeIfDone(State &s, int m) const {
    int32_t *b = mbar(s, m);
    if (b[MPending] == 0 && b[MTx] == 0) {
      ++b[MCompleted];
      b[MPending] = int32_t(mbarCount[m]);
    }
  }
  std::string mbarName(int m) const;
  std::string describe(const Label &l) const;
  /// Expands role `r`; a blocked role adds nothing and sets `why`.
  void stepRole(const State &s, int r,
                SmallVectorImpl<std::pair<State, Label>> &out,
                std::string &why);
  /// Waits until `m` completed `need` phases; checks the parity window.
  bool waitOn(const State &s, int m, int64_t need, Operation *op,
              std::string &why);
  bool readVotes(State &s, int64_t block, Operation *op, std::string &why,
                 bool &allSkip);
  std::optional<Violation> checkEnd(const State &s) const;
  std::string trace(int node, const State *last,
                    ArrayRef<std::string> why) const;
  std::string configName() const;
};

} // namespace

std::optional<std::string> Model::build() {
  if (kernel.getTarget() != ws::Target::sm_90a)
    return std::string("sm_100a roles (mma, softmax, correction, epilogue) "
                       "and tensor-memory buffers have no lowering yet, so "
                       "the model has no semantics for their asynchronous "
                       "tcgen05 steps");
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
  for (RoleOp role : kernel.getBody().getOps<RoleOp>()) {
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
      SmallVector<Instr> &out = prog.seg[seg];
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
        out.push_back(in);
        return;
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
    for (SmallVector<Instr> &seg : p.seg)
      llvm::erase_if(seg, [&](const Instr &in) {
        return in.kind == Instr::Kind::Vote && !p.branchVotes;
      });
  }
  offMbar = int(roles.size()) * kRoleFields;
  offNamed = offMbar + numMbar * kMbarFields;
  offHeld = offNamed + int(named.size()) * kNamedFields;
  offSlots = offHeld + stages * std::max(numConsumersMax, 1);
  offCopies = offSlots + 2 * numVoters;
  return std::nullopt;
}

State Model::initial() const {
  State s(offCopies, 0);
  for (int m = 0; m < numMbar; ++m)
    mbar(s, m)[MPending] = int32_t(mbarCount[m]);
  for (int i = offHeld; i < offSlots; ++i)
    s[i] = -1;
  for (int i = offSlots; i < offCopies; ++i)
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
  Blk b;
  int64_t tile = role(s, r, RTile);
  int64_t n = tripOf(s, r);
  if (in.pipe >= 0 && !perBlock(in.pipe)) {
    // Once per tile: stage 0, the tile's phase.
    b.local = b.abs = b.round = tile;
    return b;
  }
  switch (in.block.kind) {
  case BlockRef::Kind::Once:
  case BlockRef::Kind::First:
    b.local = 0;
    break;
  case BlockRef::Kind::Current:
    b.local = role(s, r, RN) + in.block.ahead;
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

std::string Model::mbarName(int m) const {
  std::string out;
  llvm::raw_string_ostream os(out);
  if (voteBase >= 0 && m >= voteBase) {
    os << "the vote barrier of parity " << (m - voteBase);
    return out;
  }
  for (auto [i, p] : llvm::enumerate(pipes)) {
    int64_t d = depth(int(i));
    if (m >= fullBase[i] && m < fullBase[i] + d)
      os << "@" << p.getSymName() << ".full[" << (m - fullBase[i]) << "]";
    else if (m >= emptyBase[i] && m < emptyBase[i] + d)
      os << "@" << p.getSymName() << ".empty[" << (m - emptyBase[i]) << "]";
  }
  return out;
}

bool Model::waitOn(const State &s, int m, int64_t need, Operation *op,
                   std::string &why) {
  int64_t done = mbar(s, m)[MCompleted];
  // try_wait.parity tells only the parity of the phase: the barrier must be
  // the waited phase or the one after it.
  if (done < need - 1 || done > need) {
    if (!violation)
      violation =
          Violation{(llvm::Twine("parity aliasing: a wait for phase ") +
                     llvm::Twine(need - 1) + " of " + mbarName(m) +
                     " while the barrier has completed " + llvm::Twine(done) +
                     " phases (more than one phase apart, the parity test " +
                     (done > need ? "blocks forever" : "passes early") + ")")
                        .str(),
                    op};
    return false;
  }
  if (done >= need)
    return true;
  why = (llvm::Twine("waits on ") + mbarName(m) + " for phase " +
         llvm::Twine(need - 1) + " (" + llvm::Twine(done) + " completed)")
            .str();
  return false;
}

bool Model::readVotes(State &s, int64_t block, Operation *op, std::string &why,
                      bool &allSkip) {
  int parity = int(block % 2);
  if (!waitOn(s, voteBase + parity, (block - 1) / 2 + 1, op, why))
    return false;
  allSkip = true;
  for (int v = 0; v < numVoters; ++v) {
    int32_t value = slot(s, parity, v);
    if (value < 0 || value / 2 != block) {
      violation = Violation{(llvm::Twine("the load role reads voter ") +
                             llvm::Twine(v) + "'s decision on block " +
                             llvm::Twine(block) + " but the slot holds " +
                             (value < 0 ? llvm::Twine("none")
                                        : "block " + llvm::Twine(value / 2)))
                                .str(),
                            op};
      return false;
    }
    allSkip &= value % 2 == 1;
    slot(s, parity, v) = -1;
  }
  return true;
}

void Model::stepRole(const State &s, int r,
                     SmallVectorImpl<std::pair<State, Label>> &out,
                     std::string &why) {
  const Instr *inp = current(s, r);
  if (!inp)
    return;
  const Instr &in = *inp;
  const RoleProg &prog = roles[r];
  State t = s;
  Label label{r, &in, 0, 0};
  auto fail = [&](const llvm::Twine &msg) {
    if (!violation)
      violation = Violation{msg.str(), in.op};
  };
  // A skipped block's region runs nothing.
  if (in.inSkip && role(s, r, RSkip)) {
    advance(t, r);
    label.variant = 2;
    out.push_back({std::move(t), label});
    return;
  }
  Blk b = blockOf(in, s, r);
  label.block = b.local;
  if (in.pipe >= 0 && !perBlock(in.pipe))
    label.variant = 5;
  else if (in.pipe >= 0 && !b.exists)
    label.variant = 3;
  switch (in.kind) {
  case Instr::Kind::PipeWait: {
    int p = in.pipe;
    if (!b.exists) {
      // A consumer's look-ahead past the end waits for the stage's
      // previous phase, which has completed; other steps on a block that
      // does not exist do not run.
      if (!in.producer && role(s, r, RSeg) == 1 && in.block.ahead == 1) {
        int m = fullBase[p] + int(b.stage);
        if (!waitOn(s, m, b.round, in.op, why))
          return;
        label.variant = 4;
      }
      advance(t, r);
      out.push_back({std::move(t), label});
      return;
    }
    if (in.producer) {
      if (!waitOn(s, emptyBase[p] + int(b.stage), b.round, in.op, why))
        return;
    } else {
      if (!waitOn(s, fullBase[p] + int(b.stage), b.round + 1, in.op, why))
        return;
      for (int i = offCopies; i < int(s.size()); i += kCopyFields)
        if (s[i] == p && s[i + 1] == b.stage)
          return fail(llvm::Twine("read before write: @") +
                      pipes[p].getSymName() + " stage " + llvm::Twine(b.stage) +
                      " passes its full barrier for block " +
                      llvm::Twine(b.abs) +
                      " while a copy into it is in flight");
      int c = prog.consumerIdx[p];
      if (c >= 0)
        held(t, p, int(b.stage), c) = int32_t(b.round);
    }
    advance(t, r);
    out.push_back({std::move(t), label});
    return;
  }
  case Instr::Kind::PipeArrive: {
    int p = in.pipe;
    if (b.exists) {
      int m = (in.producer ? fullBase[p] : emptyBase[p]) + int(b.stage);
      int32_t *bar = mbar(t, m);
      if (bar[MCompleted] != b.round)
        return fail(llvm::Twine("arrives on ") + mbarName(m) + " for block " +
                    llvm::Twine(b.abs) + " (phase " + llvm::Twine(b.round) +
                    ") while the barrier is in phase " +
                    llvm::Twine(bar[MCompleted]) +
                    ": its arrivals count toward another block");
      if (in.arrivals > bar[MPending])
        return fail(llvm::Twine("arrival overflow on ") + mbarName(m) + ": " +
                    llvm::Twine(in.arrivals) + " arrivals with " +
                    llvm::Twine(bar[MPending]) + " pending");
      bar[MPending] -= int32_t(in.arrivals);
      bool noBytes = in.onDemand && role(s, r, RSkip);
      bar[MTx] += int32_t(noBytes ? 0 : in.tx);
      completeIfDone(t, m);
      int c = prog.consumerIdx[p];
      if (!in.producer && c >= 0 && held(t, p, int(b.stage), c) == b.round)
        held(t, p, int(b.stage), c) = -1;
    }
    advance(t, r);
    out.push_back({std::move(t), label});
    return;
  }
  case Instr::Kind::TmaIssue: {
    int p = in.pipe;
    if (b.exists && !(in.onDemand && role(s, r, RSkip))) {
      // The stage is free once every consumer released its previous round
      // (the empty barrier completed that phase).
      if (mbar(t, emptyBase[p] + int(b.stage))[MCompleted] < b.round) {
        std::string who = "before every consumer released it";
        for (auto [ci, c] : llvm::enumerate(pipes[p].getConsumers())) {
          int32_t h = held(t, p, int(b.stage), int(ci));
          if (h >= 0 && h < b.round)
            who = ("while @" + cast<FlatSymbolRefAttr>(c).getValue() +
                   " still holds it")
                      .str();
        }
        return fail(llvm::Twine("stage-reuse hazard: the copy of block ") +
                    llvm::Twine(b.abs) + " writes stage " +
                    llvm::Twine(b.stage) + " of @" + pipes[p].getSymName() +
                    " (block " + llvm::Twine(b.abs - depth(p)) + " there) " +
                    who);
      }
      State tail(t.begin() + offCopies, t.end());
      t.resize(offCopies);
      tail.insert(tail.end(), {int32_t(p), int32_t(b.stage), int32_t(b.round),
                               int32_t(in.bytes)});
      // Copies in flight form a multiset: keep them sorted.
      SmallVector<std::array<int32_t, 4>> copies;
      for (size_t i = 0; i < tail.size(); i += kCopyFields)
        copies.push_back({tail[i], tail[i + 1], tail[i + 2], tail[i + 3]});
      llvm::sort(copies);
      for (auto &c : copies)
        t.insert(t.end(), c.begin(), c.end());
    }
    advance(t, r);
    out.push_back({std::move(t), label});
    return;
  }
  case Instr::Kind::NamedSync:
  case Instr::Kind::NamedArrive: {
    int32_t *nb = nbar(t, in.named);
    bool sync = in.kind == Instr::Kind::NamedSync;
    if (sync && role(s, r, RSub) == 1) {
      if (nb[NGen] > role(s, r, RWaitGen)) {
        advance(t, r);
        out.push_back({std::move(t), label});
        return;
      }
      why =
          (llvm::Twine("waits on named barrier ") +
           llvm::Twine(named[in.named].id) + " (" + llvm::Twine(nb[NArrived]) +
           " of " + llvm::Twine(in.threads) + " threads arrived)")
              .str();
      return;
    }
    if (nb[NMask] & (1 << r))
      return fail(llvm::Twine("arrives twice on named barrier ") +
                  llvm::Twine(named[in.named].id) +
                  " before it completed (a turn passed twice)");
    nb[NArrived] += int32_t(in.arrivals);
    nb[NMask] |= 1 << r;
    if (nb[NArrived] > in.threads)
      return fail(llvm::Twine("named barrier ") +
                  llvm::Twine(named[in.named].id) +
                  " overflows: " + llvm::Twine(nb[NArrived]) + " of " +
                  llvm::Twine(in.threads) + " threads");
    bool completes = nb[NArrived] == in.threads;
    if (completes) {
      ++nb[NGen];
      nb[NArrived] = nb[NMask] = 0;
    }
    if (sync && !completes) {
      role(t, r, RSub) = 1;
      role(t, r, RWaitGen) = nb[NGen];
    } else {
      advance(t, r);
    }
    out.push_back({std::move(t), label});
    return;
  }
  case Instr::Kind::Vote: {
    int64_t n = tripOf(s, r);
    int64_t local = role(s, r, RN) + 1;
    // The decision on the block past the end is not published; it matters
    // only where skip regions hold modelled steps.
    bool branch =
        prog.branchVotes && (prog.skipSteps || (in.publish && local < n));
    for (int skip = 0; skip < (branch ? 2 : 1); ++skip) {
      State u = t;
      role(u, r, RSkip) = skip;
      if (in.publish && local < n) {
        int parity = int(local % 2);
        int32_t &sl = slot(u, parity, prog.voter);
        if (sl >= 0)
          return fail(llvm::Twine("vote slot overwritten: the decision on "
                                  "block ") +
                      llvm::Twine(local) +
                      " replaces the unread one on block " +
                      llvm::Twine(sl / 2));
        sl = int32_t(local * 2 + skip);
        int m = voteBase + parity;
        int32_t *bar = mbar(u, m);
        if (bar[MCompleted] != (local - 1) / 2)
          return fail(llvm::Twine("the vote on block ") + llvm::Twine(local) +
                      " arrives in phase " + llvm::Twine(bar[MCompleted]) +
                      " of " + mbarName(m) + ", not " +
                      llvm::Twine((local - 1) / 2));
        bar[MPending] -= 1;
        completeIfDone(u, m);
      }
      advance(u, r);
      Label l = label;
      l.block = local;
      l.variant = skip;
      out.push_back({std::move(u), l});
    }
    return;
  }
  case Instr::Kind::AwaitVote: {
    int64_t n = role(s, r, RN);
    int64_t k = in.speculate;
    bool allSkip = false;
    if (n == 0) {
      role(t, r, RSkip) = 0;
      role(t, r, RKnown) = role(t, r, RKept) = 1;
      role(t, r, RRun) = int32_t(std::max<int64_t>(k - 1, 0));
      advance(t, r);
      out.push_back({std::move(t), label});
      return;
    }
    if (k == 0) {
      if (!readVotes(t, n, in.op, why, allSkip))
        return;
      role(t, r, RSkip) = allSkip;
      advance(t, r);
      out.push_back({std::move(t), label});
      return;
    }
    if (role(s, r, RSub) == 0) {
      // Whether block n - 1 was kept: known, or read from its votes now.
      bool prevKept = role(s, r, RKept);
      if (!role(s, r, RKnown)) {
        if (!readVotes(t, n - 1, in.op, why, allSkip))
          return;
        prevKept = !allSkip;
      }
      role(t, r, RRun) =
          prevKept ? int32_t(std::min<int64_t>(role(s, r, RRun) + 1, k)) : 0;
      role(t, r, RSub) = 1;
      out.push_back({std::move(t), label});
      return;
    }
    if (role(s, r, RRun) >= k) {
      // Speculate: copy V without its votes (read at block n + 1).
      role(t, r, RSkip) = 0;
      role(t, r, RKnown) = 0;
      role(t, r, RKept) = 1;
    } else {
      if (!readVotes(t, n, in.op, why, allSkip))
        return;
      role(t, r, RSkip) = allSkip;
      role(t, r, RKnown) = 1;
      role(t, r, RKept) = !allSkip;
    }
    advance(t, r);
    out.push_back({std::move(t), label});
    return;
  }
  case Instr::Kind::ReadLastVotes: {
    bool allSkip;
    int64_t n = tripOf(s, r);
    if (!role(s, r, RKnown) && n > 0)
      if (!readVotes(t, n - 1, in.op, why, allSkip))
        return;
    advance(t, r);
    out.push_back({std::move(t), label});
    return;
  }
  }
}

std::optional<Model::Violation> Model::checkEnd(const State &s) const {
  for (int m = 0; m < numMbar; ++m) {
    const int32_t *bar = mbar(s, m);
    if (bar[MPending] != mbarCount[m] || bar[MTx] != 0)
      return Violation{(llvm::Twine("unbalanced at exit: ") + mbarName(m) +
                        " has " + llvm::Twine(mbarCount[m] - bar[MPending]) +
                        " of " + llvm::Twine(mbarCount[m]) +
                        " arrivals of an unfinished phase" +
                        (bar[MTx] ? " and transaction bytes pending" : ""))
                           .str(),
                       nullptr};
  }
  for (auto [i, p] : llvm::enumerate(pipes))
    for (int64_t st = 0; st < depth(int(i)); ++st) {
      int32_t filled = mbar(s, fullBase[i] + int(st))[MCompleted];
      int32_t emptied = mbar(s, emptyBase[i] + int(st))[MCompleted];
      if (filled != emptied)
        return Violation{
            (llvm::Twine("unbalanced at exit: stage ") + llvm::Twine(st) +
             " of @" + p.getSymName() + " was filled " + llvm::Twine(filled) +
             " times and emptied " + llvm::Twine(emptied) + " times")
                .str(),
            p};
    }
  for (auto [i, nb] : llvm::enumerate(named))
    if (s[offNamed + int(i) * kNamedFields + NArrived])
      return Violation{
          (llvm::Twine("unbalanced at exit: named barrier ") +
           llvm::Twine(nb.id) + " has " +
           llvm::Twine(s[offNamed + int(i) * kNamedFields + NArrived]) +
           " arrivals nobody waits for")
              .str(),
          nullptr};
  return std::nullopt;
}

std::string Model::describe(const Label &l) const {
  std::string out;
  llvm::raw_string_ostream os(out);
  if (l.actor < 0) {
    os << "the copy into @" << pipes[l.copyPipe].getSymName() << " stage "
       << l.copyStage << " lands";
    return out;
  }
  os << l.instr->op->getName().getStringRef();
  if (auto a = dyn_cast<AcquireOp>(l.instr->op))
    os << " @" << a.getPipe();
  else if (auto r = dyn_cast<ReleaseOp>(l.instr->op))
    os << " @" << r.getPipe();
  else if (auto t = dyn_cast<TmaLoadOp>(l.instr->op))
    os << " " << stringifyTensor(t.getTensor());
  else if (auto t = dyn_cast<TurnWaitOp>(l.instr->op))
    os << " @" << t.getOrder();
  else if (auto t = dyn_cast<TurnPassOp>(l.instr->op))
    os << " @" << t.getOrder();
  bool named = l.instr->kind == Instr::Kind::NamedSync ||
               l.instr->kind == Instr::Kind::NamedArrive;
  if (l.variant == 5)
    os << " (tile " << l.block << ")";
  else if (l.variant == 3)
    os << " (no block " << l.block << ": not run)";
  else if (l.variant == 4)
    os << " (block " << l.block << ": past the end)";
  else if (!named && l.instr->kind != Instr::Kind::ReadLastVotes)
    os << " (block " << l.block << ")";
  if (l.instr->kind == Instr::Kind::Vote)
    os << (l.variant == 1 ? " skip" : " keep");
  if (l.variant == 2)
    os << " [skipped block]";
  return out;
}

std::string Model::configName() const {
  std::string out;
  llvm::raw_string_ostream os(out);
  if (trips.size() == 1) {
    os << trips[0] << " KV block" << (trips[0] == 1 ? "" : "s");
  } else {
    os << "tiles of";
    for (int64_t n : trips)
      os << " " << n;
    os << " KV blocks";
  }
  return out;
}

std::string Model::trace(int node, const State *last,
                         ArrayRef<std::string> why) const {
  SmallVector<const Node *> path;
  for (int i = node; i >= 0; i = nodes[i].parent)
    if (nodes[i].parent >= 0)
      path.push_back(&nodes[i]);
  std::reverse(path.begin(), path.end());
  std::string out;
  llvm::raw_string_ostream os(out);
  os << "with " << configName() << ", after " << path.size() << " steps:";
  constexpr size_t kLast = 4;
  for (auto [r, prog] : llvm::enumerate(roles)) {
    SmallVector<std::string> steps;
    for (const Node *n : path)
      if (n->label.actor == int(r))
        steps.push_back(describe(n->label));
    os << "\n  @" << prog.role.getSymName() << ": ";
    if (steps.size() > kLast)
      os << "... ";
    for (size_t i = steps.size() > kLast ? steps.size() - kLast : 0;
         i < steps.size(); ++i)
      os << steps[i] << (i + 1 < steps.size() ? ", " : "");
    if (steps.empty())
      os << "(no step)";
    if (last && role(*last, int(r), RSeg) == kDone)
      os << "; finished";
    else if (r < why.size() && !why[r].empty()) {
      // The step it is blocked at, with its block (or tile).
      Label at;
      at.actor = int(r);
      at.instr = current(*last, int(r));
      Blk b = blockOf(*at.instr, *last, int(r));
      at.block = b.local;
      if (at.instr->pipe >= 0 && !perBlock(at.instr->pipe))
        at.variant = 5;
      else if (at.instr->pipe >= 0 && !b.exists)
        at.variant = 4;
      os << "; blocked at " << describe(at) << ": " << why[r];
    }
  }
  return out;
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
          bar[MTx] -= s[i + 3];
          completeIfDone(t, m);
          t.erase(t.begin() + i, t.begin() + i + kCopyFields);
          Label l;
          l.copyPipe = p;
          l.copyStage = st;
          succ.push_back({std::move(t), l});
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
  return model.run(options);
}
