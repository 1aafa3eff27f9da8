//===- SyncCheck.h - Exhaustive check of a ws.kernel's synchronisation -*- C++
//-*-===//
//
// The sync checker: steps every role of a ws.kernel through its prologue,
// kv_loop and epilogue as one thread of control, with the pipes as mbarrier
// rings (ProtocolAnalysis gives depths, arrival counts, blocks and named
// barrier ids), TMA copies as asynchronous events that land at any later
// point, named barriers, the V-on-demand vote barriers and every keep/skip
// outcome of the votes, and explores every interleaving (explicit states,
// hashed) for each KV trip count within the bounds. It proves, within those
// bounds, that no reachable state is a deadlock, no wait is more than one
// phase away from its barrier (parity aliasing), no arrival lands in another
// block's phase or overflows it, every pipe round that was filled was also
// emptied at the end (no arrivals left over), no TMA copy writes a stage a
// consumer still holds from the previous round, and no consumer passes its
// full barrier while a copy into that stage is still in flight, and that
// every read of shared storage sees the value attention needs (data flow,
// SyncData.cpp). sm_100a's tcgen05 products run in issue order on the
// tensor cores and the MMA warp's releases are commits.
//
//===----------------------------------------------------------------------===//
#ifndef BLASST_DIALECT_WS_ANALYSIS_SYNCCHECK_H
#define BLASST_DIALECT_WS_ANALYSIS_SYNCCHECK_H

#include "blasst/Dialect/WS/Analysis/Protocol.h"

#include <string>

namespace blasst::ws {

struct SyncCheckOptions {
  /// Trip counts 0 .. maxDepth + extraBlocks are explored (per tile).
  int64_t extraBlocks = 2;
  /// Tiles a persistent CTA walks in the model (each with every trip count).
  int64_t persistentTiles = 2;
  /// A search that visits more states than this stops and says so.
  int64_t maxStates = 2000000;
  /// Land the copies that may land eagerly right after their issue (a
  /// persistent-set reduction; SyncCheck.cpp says when it applies).
  bool eagerLanding = true;
  /// Complete the tensor-core product at the head of the sm_100a queue
  /// right away in the states where no other step can depend on it first
  /// (a persistent-set reduction; SyncEager.cpp says when).
  bool eagerProducts = true;
  /// Tests only (unsound): complete every product eagerly, unchecked, to
  /// show which violations the check above keeps.
  bool forceEagerProducts = false;
  /// Search a token ring deeper than 2 (a pipe with no storage between two
  /// roles, neither the MMA warp) at depth 2, checking at every wait and
  /// arrival on it that its real depth gives the same outcome; where one
  /// does not, the search runs again at the real depth (SyncCheck.cpp says
  /// why that is sound).
  bool shallowTokenRings = true;
};

/// What the check found for one kernel.
struct SyncCheckResult {
  enum class Status {
    Verified,    ///< Every bound explored, nothing found.
    Failed,      ///< A violation (message, trace, op).
    NotVerified, ///< The model does not cover this kernel (message says why).
  };
  Status status = Status::Verified;
  std::string message;
  /// The interleaving that reaches the violation: the last steps of each
  /// role and what each one waits on.
  std::string trace;
  /// The step the violation is about (null: the kernel as a whole).
  mlir::Operation *op = nullptr;
  /// What was proven: the bounds, in words.
  std::string bounds;
  /// The reduction the search used: which copies landed eagerly and, for
  /// the others, why they were searched in every order.
  std::string reduction;
  int64_t statesExplored = 0;
  double seconds = 0;
};

/// Runs the exhaustive check of `kernel` over its protocol.
SyncCheckResult checkSync(KernelOp kernel, const ProtocolAnalysis &protocol,
                          const SyncCheckOptions &options = {});

} // namespace blasst::ws

#endif // BLASST_DIALECT_WS_ANALYSIS_SYNCCHECK_H
