//===- SyncModel.h - The state model of blasst-verify-sync ------*- C++ -*-===//
//
// Private to the sync checker: the modelled steps of each role, the flat
// state vector (roles, mbarriers, named barriers, the stages consumers hold,
// the vote slots, the copies in flight) and the Model that builds the
// programs (SyncCheck.cpp) and steps them (SyncStep.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef BLASST_LIB_DIALECT_WS_ANALYSIS_SYNCMODEL_H
#define BLASST_LIB_DIALECT_WS_ANALYSIS_SYNCMODEL_H

#include "blasst/Dialect/WS/Analysis/SyncCheck.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <memory>
#include <optional>
#include <unordered_map>

namespace blasst::ws::sync {
using namespace mlir;

/// What a buffer region holds: the value the attention algorithm put there.
enum class VKind : int32_t {
  None, ///< nothing written yet
  Q,    ///< Q of the tile
  K,    ///< K of a block
  V,    ///< V of a block
  S,    ///< the scores Q Kᵀ of a block
  P,    ///< P of a block
  F,    ///< the correction factors of a block
  L,    ///< the final row sums of the tile
  A,    ///< O accumulated through a block
  C,    ///< O rescaled for a block (before its P V)
  E,    ///< the normalised output tile (the j-th epilogue)
  D,    ///< a voter's keep/skip decision on a block (tag: block * 2 + skip)
};
constexpr int32_t kTagBits = 20;
inline int32_t makeValue(VKind k, int64_t tag) {
  return (int32_t(k) << kTagBits) | int32_t(tag & ((1 << kTagBits) - 1));
}

/// One read or write of shared storage by a step.
struct Effect {
  enum class Tag {
    Tile,      ///< the tile (Q, row sums)
    Block,     ///< the step's block
    PrevBlock, ///< the block before (anything for block 0)
    LastBlock, ///< the tile's last block (anything with no block)
    Ordinal,   ///< the j-th epilogue / store of the role in the tile
  };
  bool write = false;
  VKind kind = VKind::None;
  Tag tag = Tag::Block;
  int ordinal = 0;
  BufferOp buffer;
  /// The storage it touches (aliases resolved).
  BufferRegion region;
  /// The cells of stage 0; stage s adds s * stageStride.
  SmallVector<int, 4> cells;
  int stages = 1, stageStride = 0;
};

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
    Access,        ///< reads / writes shared storage (its effects)
    MmaIssue,      ///< tcgen05.mma: queued for the tensor cores
    LoadVote,      ///< ws.load_vote: reads a voter's decision word
  };
  Kind kind;
  /// Index into Model::instrs.
  int id = -1;
  /// Reads checked and writes done by the step (a copy or a queued MMA:
  /// when it completes).
  std::vector<Effect> effects;
  /// A P V in a skip region (sm_100a): what a skipped block's product
  /// leaves behind, in issue order: O through the block before is O through
  /// this one (nothing is issued; the queue entry only renames the value).
  std::vector<Effect> skipEffects;
  /// A release by an MMA warp (sm_100a): tcgen05.commit, which arrives
  /// once every product issued before it is done.
  bool commit = false;
  Operation *op = nullptr;
  int pipe = -1;
  bool producer = false;
  BlockRef block;
  int64_t arrivals = 0, tx = 0, bytes = 0;
  int named = -1;
  int64_t threads = 0;
  bool inSkip = false, publish = false, onDemand = false;
  /// A producer's `drain` wait: for the consumers' release of the stage's
  /// current round (its last copy), not for the stage to be free.
  bool drain = false;
  /// A pipe wait (PipeWait) of a block in round `round` of its stage: how
  /// many phases its barrier must have completed. A producer waits on the
  /// empty barrier for the previous round's release (a drain: this
  /// round's), a consumer on the full barrier for this round's fill.
  int64_t phasesNeeded(int64_t round) const {
    return producer && !drain ? round : round + 1;
  }
  /// In a skip region with `ahead`: how many of the role's votes before
  /// the latest one decide it (a deferred P V's region on block n - 1
  /// before the body's vote: 1; 0: the latest).
  int skipDepth = 0;
  int64_t speculate = 0;
  /// A load role's step with `kept_ahead` (ws.tma_load): it runs only when
  /// whether the decisions on blocks n - keptFrom .. n - keptFrom -
  /// keptRun + 1 were all "kept" equals keptWhen (keptFrom < 0: always).
  int keptFrom = -1, keptRun = 0;
  bool keptWhen = false;
  /// A tma_load whose copy the search lands right after its issue (the
  /// pipe passed Model::eagerLandingFails: see there).
  bool eager = false;
};

struct RoleProg {
  RoleOp role;
  /// Prologue, kv_loop body, epilogue.
  std::vector<Instr> seg[3];
  /// For each pipe: this role's index among its consumers (-1: none).
  SmallVector<int> consumerIdx;
  int voter = -1;
  /// Whether the vote's outcome changes what the role does.
  bool branchVotes = false;
  /// Whether a skip region holds a modelled step.
  bool skipSteps = false;
  /// From this step of the loop body on, the role's decision (RSkip) is
  /// dead until the body's next vote: it is reset so that states differing
  /// only there merge (-1: live across the back edge, or never read).
  int skipDeadFrom = -1;
  /// Whether the role has a kv_loop (a prologue step on block 0 runs only
  /// when there is a block; a role without a loop runs every step).
  bool hasLoop = false;
  /// A deferred P V (LoopCarried::deferredPV): the loop runs one more
  /// iteration than the tile has blocks.
  int lag = 0;
  /// Whether a skip region tests an earlier decision than the latest
  /// (RSkip1, RSkip2 are kept).
  bool skipHistory = false;
  /// A load role with `kept_ahead` steps: how many decisions before the
  /// latest its conditions read (RHist; 0: none).
  int keptHistory = 0;
  /// How RHist holds that history. Every window the conditions read is
  /// [0, r) or [D, D + r) of the decisions back (0: the latest), so the
  /// lowering's carried decisions are a bit vector, but the checker needs
  /// only the D - 1 decisions before the latest exactly (`histExact` bits)
  /// and how many kept ones follow them in a row, saturated at `histCap`
  /// (at kept_run 8 and D = 2: 2 x 9 history values instead of 2^9; the
  /// decode matrix's largest search 554 k states instead of 1.85 M).
  /// histCap < 0: the plain bit vector (windows of another shape).
  int histExact = 0, histCap = -1;
  /// The role votes on block 0 before its kv_loop (vote-first-block): the
  /// loop starts with that decision instead of "kept".
  bool votesFirst = false;
};

// Flat state layout.
enum RoleField {
  RSeg,
  RTile,
  RN,
  RIdx,
  RSub,
  RSkip,
  RSkip1, ///< the decision one vote before RSkip (skipHistory roles)
  RSkip2, ///< two votes before
  RKnown,
  RKept,
  RRun,
  RWaitGen,
  RPrevKept,
  /// keptHistory roles: the decisions before the latest (bit i: on block
  /// n - 1 - i skipped; blocks before 0 count as skipped), or with
  /// histCap >= 0 the first histExact of those bits and above them the
  /// count of kept decisions in a row that follow.
  RHist,
  kRoleFields
};
enum MbarField { MCompleted, MPending, MTx, kMbarFields };
enum NamedField { NArrived, NGen, NMask, kNamedFields };
constexpr int kCopyFields = 5; // pipe, stage, round, bytes, instr
constexpr int kQueueFields = 3; // instr, loop counter, tile
constexpr int kQueueCapacity = 16;
/// A queue entry's loop counter with this bit: a skipped block's P V.
constexpr int32_t kSkippedEntry = 1 << 24;
constexpr int kDone = 3;

using State = std::vector<int32_t>;

struct Label {
  int actor = -1; ///< role index, -1: a copy lands, -2: the tensor cores
  const Instr *instr = nullptr;
  int64_t block = 0;
  int variant = 0; ///< vote: 1 = skip; 2: skipped region; 3: no such
                   ///< block (not run); 4: past the end; 5: once per tile;
                   ///< 6: a kept_ahead step whose condition does not hold
  int copyPipe = -1, copyStage = 0;
  /// Steps of the same role run with this one as one atomic step (see
  /// Model::stepRole): their own labels.
  std::shared_ptr<std::vector<Label>> then;
};

struct Node {
  int parent;
  Label label;
};

/// The states found by the search, coded (StateStore::insert) one after
/// another in an arena, and an open-addressing hash set of their indices.
/// Exact: a state is found again only when every word is equal.
class StateStore {
public:
  void clear() {
    ref.clear();
    bytes.clear();
    start.assign(1, 0);
    hashes.clear();
    table.assign(1 << 12, 0);
  }
  size_t size() const { return hashes.size(); }
  /// Whether `s` is new (then it is added).
  bool insert(const State &s);
  State get(int i) const;
  bool equal(int i, const State &s) const;

private:
  std::vector<uint8_t> bytes;
  std::vector<size_t> start{0};
  std::vector<uint64_t> hashes;
  /// Index + 1 of a state; 0: empty.
  std::vector<uint32_t> table = std::vector<uint32_t>(1 << 12, 0);
  State ref;
  void grow();
  /// Decodes state `idx`, calling `word(k, value)` for each word in order;
  /// stops (false) where `word` returns false.
  template <typename F> bool decode(int idx, F &&word) const;
};

class Model {
public:
  /// `shallowRings`: token rings deeper than 2 are searched at depth 2
  /// (Model::planShallowRings).
  Model(KernelOp kernel, const ProtocolAnalysis &protocol,
        bool shallowRings = false)
      : kernel(kernel), protocol(protocol), shallowRings(shallowRings) {}

  /// Builds the programs; a reason when the model cannot cover the kernel.
  std::optional<std::string> build();
  SyncCheckResult run(const SyncCheckOptions &options);
  /// The role-local checks, then the search.
  SyncCheckResult runAll(const SyncCheckOptions &options);
  /// Whether some token ring is searched shallower than it is.
  bool usesShallowRings() const { return !shallowNote.empty(); }

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
  /// Every modelled step, by Instr::id.
  std::vector<const Instr *> instrs;
  /// The storage cells of each buffer that owns storage: its stages, each
  /// cut into rows x columns where some access begins or ends.
  struct Cells {
    int base = 0, stages = 1;
    SmallVector<int64_t> rowCuts, colCuts;
    int perStage() const {
      return int((rowCuts.size() - 1) * (colCuts.size() - 1));
    }
  };
  llvm::DenseMap<Operation *, Cells> cells;
  int numCells = 0;
  /// The role whose products the tensor cores run asynchronously (sm_100a).
  int mmaRole = -1;
  /// sm_100a: block 0 is never skipped (its P V overwrites O).
  bool blackwell = false;
  /// The voters publish a vote on block 0 (vote-first-block): block n's
  /// votes are phase n / 2 of the vote barrier n % 2 ((n - 1) / 2 without),
  /// and the load role reads block 0's votes like any block's.
  bool firstBlockVote = false;
  /// The vote barrier phase of block `n`'s votes.
  int64_t votePhase(int64_t n) const {
    return firstBlockVote ? n / 2 : (n - 1) / 2;
  }
  /// Set when a bound of the model itself is exceeded.
  mutable std::optional<std::string> modelBound;
  bool persistent = false;
  int64_t maxDepth = 1;
  /// kept_ahead steps: the first block copied kept_ahead ahead is ahead +
  /// kept_run - 1 (the decisions before block 0 count as skipped); the
  /// trip bound reaches past it by the same extra blocks as past the depth.
  int64_t keptFirstBlock = 0;
  /// Per pipe, the depth the search gives it: its own, or 2 for a shallow
  /// token ring (planShallowRings).
  SmallVector<int64_t> modelDepth;
  SmallVector<bool> shallow;
  bool shallowRings = false;
  /// The shallow rings, for the summary.
  std::string shallowNote;
  /// Decides which token rings are searched at depth 2.
  void planShallowRings();

  // Offsets into a state.
  int offMbar = 0, offNamed = 0, offHeld = 0, offSlots = 0, offCells = 0,
      offQueue = 0, offTrips = 0, offCopies = 0;

  // The trip counts. One search covers every trip count of every tile: a
  // state holds, per tile, the interval [lo, hi] of trip counts it stands
  // for (two words at offTrips). A step that asks about the trip count
  // where the interval does not decide it (tripQuery) makes the search
  // split the state in two and step each half (see Model::run).
  int numTiles = 1;
  int64_t maxTrip = 0;
  /// The interval of the state being stepped, per tile.
  mutable SmallVector<int64_t> tripLo, tripHi;
  /// The first undecided question of this step: split `tile`'s interval
  /// into [lo, at] and [at + 1, hi].
  mutable std::optional<std::pair<int64_t, int64_t>> split;
  /// The trip counts a trace or a message names (the smallest of the
  /// state's intervals).
  SmallVector<int64_t> trips;
  void setTrips(const State &s) {
    for (int t = 0; t < numTiles; ++t) {
      tripLo[t] = s[offTrips + 2 * t];
      tripHi[t] = s[offTrips + 2 * t + 1];
    }
  }
  int64_t clampTile(int64_t tile) const {
    return std::min<int64_t>(tile, numTiles - 1);
  }
  /// Whether block `k` of `tile` exists (k < the trip count).
  bool blockExists(int64_t tile, int64_t k) const {
    tile = clampTile(tile);
    if (k < 0)
      return false;
    if (k < tripLo[tile])
      return true;
    if (k >= tripHi[tile])
      return false;
    if (!split)
      split = {tile, k};
    return true;
  }
  /// The trip count of `tile` (where the interval holds more than one, the
  /// smallest, and a split).
  int64_t exactTrip(int64_t tile) const {
    tile = clampTile(tile);
    if (tripLo[tile] != tripHi[tile] && !split)
      split = {tile, tripLo[tile]};
    return tripLo[tile];
  }
  /// The CTA's blocks before `tile` (the persistent CTA's K/V counter).
  int64_t tileBase(int64_t tile) const {
    int64_t b = 0;
    for (int64_t t = 0; t < std::min<int64_t>(tile, numTiles); ++t)
      b += exactTrip(t);
    return b;
  }

  // The search.
  std::vector<Node> nodes;
  StateStore seen;

  // A violation found while expanding a state.
  struct Violation {
    std::string message;
    Operation *op = nullptr;
  };
  std::optional<Violation> violation;
  /// The steps a role ran in the atomic block that hit the violation.
  std::vector<Label> violationSteps;
  int violationActor = -1;
  /// Whether blocked steps say what they wait on (only for a trace: the
  /// text costs more than the step).
  bool explain = false;
  /// What each role of `s` waits on, by stepping it again with `explain`.
  SmallVector<std::string> explainBlocked(const State &s);

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
  int64_t depth(int p) const { return modelDepth[p]; }
  int64_t realDepth(int p) const { return protocol.pipe(pipes[p]).depth; }
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
  /// The states the search starts from (the initial state, split where
  /// the roles' first steps depend on the trip counts).
  void initial(State s, SmallVectorImpl<State> &out);
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
  /// For a wait or an arrival on a shallow ring: whether the ring at its
  /// real depth gives the same outcome (otherwise modelBound says why, and
  /// checkSync searches again at the real depth).
  bool ringAgrees(const State &s, const Instr &in, const Blk &b,
                  bool arrival) const;

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
  /// One step of role `r` and the steps that may run with it atomically.
  void stepRole(const State &s, int r,
                SmallVectorImpl<std::pair<State, Label>> &out,
                std::string &why);
  /// Runs the steps of role `r` that join the atomic block begun by `l`
  /// (`chain`: those run after it so far).
  void extendBlock(State t, Label l, std::vector<Label> chain, bool released,
                   int r, SmallVectorImpl<std::pair<State, Label>> &out);
  void stepOnce(const State &s, int r,
                SmallVectorImpl<std::pair<State, Label>> &out,
                std::string &why);
  /// Waits until `m` completed `need` phases; checks the parity window.
  bool waitOn(const State &s, int m, int64_t need, Operation *op,
              std::string &why);
  bool readVotes(State &s, int64_t block, Operation *op, std::string &why,
                 bool &allSkip);
  std::optional<Violation> checkEnd(const State &s) const;

  // Eager landing (a persistent-set reduction, SyncCheck.cpp).
  /// Why the copies into pipe `p` may not land eagerly (none: they may).
  std::optional<std::string> eagerLandingFails(int p) const;
  /// Marks the copies that land eagerly; says which and why not.
  void planEagerLanding();
  /// For the summary: the pipes whose copies land eagerly, and the reason
  /// for each one whose copies are searched in every order.
  std::string reduction;

  // Data flow (SyncData.cpp).
  /// Cuts every owner buffer into cells and gives each step its effects;
  /// drops effects on storage only one agent touches.
  void buildCells();
  void effectsOf(Operation *op, RoleOp role, Instr &in);
  /// Checks the reads and does the writes of `in` for block `b` of `tile`.
  /// A decision word (VKind::D) is written with `*decision` and a read
  /// sets it.
  bool applyEffects(State &t, const Instr &in, const Blk &b, int64_t tile,
                    int actor, int32_t *decision = nullptr,
                    bool skipped = false);
  /// The effects of a skipped P V (Instr::skipEffects).
  void skippedEffectsOf(Operation *op, RoleOp role, Instr &in);
  std::string valueName(int32_t v) const;
  /// The block of `in` for a given tile and loop counter.
  Blk blockAt(const Instr &in, int64_t tile, int64_t n) const;
  /// Queues a product or a commit of the MMA role.
  bool enqueue(State &t, const Instr &in, const Blk &b, int64_t tile,
               int64_t loopN, bool skipped = false);
  /// Removes the queue's head.
  void popQueue(State &t) const;
  /// Does the commits at the head of the queue.
  bool drainCommits(State &t);
  /// The tensor cores finish the product at the head of the queue.
  void stepTensorCores(const State &s,
                       SmallVectorImpl<std::pair<State, Label>> &out);
  /// Barrier arithmetic of an arrival (a release, or a commit done).
  bool arrive(State &t, const Instr &in, const Blk &b, bool noBytes,
              int consumer);
  /// Role-local checks in program order: async wgmma groups, values a role
  /// must compute itself.
  std::optional<Violation> checkRoleLocal(const RoleProg &prog);
  std::string trace(int node, const State *last,
                    ArrayRef<std::string> why) const;
  std::string configName() const;

  // Eager completion of tensor-core products (SyncEager.cpp).
  enum class Visit { Next, End, Fail };
  using PassedWaits = SmallVector<std::pair<int, int64_t>, 4>;
  /// Calls `visit(instr, tile, n, passed)` on the steps role `r` may run from
  /// where it stands in `s`, on every path the trip-count interval leaves open,
  /// until `visit` ends the path; false when it fails (or the walk is too
  /// long).
  template <typename F>
  bool forEachFuture(const State &s, int r, F &&visit) const;
  /// The block of `in` where the state's interval decides it (no split).
  std::optional<Blk> decidedBlock(const Instr &in, int64_t tile,
                                  int64_t n) const;
  /// Whether `in` (on block `b`; none: any stage) touches the cells of the
  /// product being completed so that order matters (productCells).
  bool touchesProduct(const Instr &in, const std::optional<Blk> &b) const;
  /// Why the product at the head of the queue may not complete eagerly in
  /// `s` (nullptr: it may; `who`: the role whose steps stop it, or -1).
  const char *productEagerFails(const State &s, int &who);
  void planEagerProducts();
  /// Whether the product at the head of `s`'s queue completes eagerly.
  bool eagerProductAt(const State &s, const SyncCheckOptions &options);
  /// Completes the products at the head of `t`'s queue that complete
  /// eagerly, adding their steps to `l`.
  void completeEagerly(State &t, Label &l, const SyncCheckOptions &options);
  /// Per mbarrier: the one role whose arrivals complete its phases (-1:
  /// several, or a copy's bytes).
  SmallVector<int> arriver;
  std::vector<uint8_t> productCells, drained, roleArrivals;
  std::vector<SmallVector<std::pair<int, int>, 4>> relied;
  /// The successors with a product queued that were met before.
  StateStore beforeCompletion;
  /// States whose product completed eagerly / was refused, and why.
  int64_t eagerProductStates = 0, refusedProductStates = 0;
  std::map<std::pair<std::string, int>, int64_t> productRefusals;
};

} // namespace blasst::ws::sync

#endif // BLASST_LIB_DIALECT_WS_ANALYSIS_SYNCMODEL_H
