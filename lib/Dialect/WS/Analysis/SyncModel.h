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

#include <optional>
#include <unordered_map>

namespace blasst::ws::sync {
using namespace mlir;

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

} // namespace blasst::ws::sync

#endif // BLASST_LIB_DIALECT_WS_ANALYSIS_SYNCMODEL_H
