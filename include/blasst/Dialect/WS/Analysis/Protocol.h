//===- Protocol.h - The pipeline protocol of a ws.kernel --------*- C++ -*-===//
//
// The one owner of the pipeline protocol: for every step of a ws.kernel,
// which KV block it works on, the stage and phase of the pipes it waits on
// and arrives at (barrier ids and arrival counts), the buffer regions it
// reads and writes (sub-ranges of a buffer's rows and columns, aliases
// resolved to the buffer that owns the storage), and which values a role's
// kv_loop carries across its back-edge. The lowering materialises these
// answers and --ws-print-protocol prints them; the sync checker
// (SyncCheck.h, --blasst-verify-sync) reasons over them.
//
// Stage and phase of a per-block pipe of depth D at KV block b (counted
// from the first block the CTA streams, across the tiles of a persistent
// CTA): stage = b mod D, phase = (b / D) mod 2. A consumer waits on
// full[stage] for `phase`; a producer waits on empty[stage] for the flipped
// parity (a fresh barrier passes at once). Once-per-CTA pipes (Q) use stage
// 0 and phase 0 (a persistent CTA flips it per tile).
//
//===----------------------------------------------------------------------===//
#ifndef BLASST_DIALECT_WS_ANALYSIS_PROTOCOL_H
#define BLASST_DIALECT_WS_ANALYSIS_PROTOCOL_H

#include "blasst/Dialect/WS/IR/WS.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"

namespace blasst::ws {

/// Which KV block a step works on.
struct BlockRef {
  enum class Kind {
    Once,    ///< A once-per-CTA pipe (Q) or a step on no block.
    First,   ///< Before the kv_loop: block `ahead` (a prologue; usually 0).
    Current, ///< Inside the kv_loop: block n + ahead.
    Last,    ///< After the kv_loop: the last block (an epilogue).
  };
  Kind kind = Kind::Once;
  int64_t ahead = 0;
  /// Whether the block may lie outside [0, numBlocks): a look-ahead in the
  /// loop, or block 0 / the last block of a tile with no KV block.
  bool mayNotExist() const {
    return (kind == Kind::Current && ahead != 0) || kind == Kind::First ||
           kind == Kind::Last;
  }
};

/// Rows [rowBegin, rowEnd) and columns [colBegin, colEnd) of one stage of a
/// buffer. "P of tile 0 lives in columns [0, 64) of S of tile 1" is the
/// region {s1, rows, [0, 64)}.
struct BufferRegion {
  BufferOp buffer; ///< The buffer that owns the storage (aliases resolved).
  int64_t rowBegin = 0, rowEnd = 0, colBegin = 0, colEnd = 0;
  bool overlaps(const BufferRegion &o) const {
    return buffer == o.buffer && rowBegin < o.rowEnd && o.rowBegin < rowEnd &&
           colBegin < o.colEnd && o.colBegin < colEnd;
  }
};

/// A named barrier (bar.sync / bar.arrive / bar.red): its id (0 is
/// __syncthreads; at most 16 per CTA) and the threads that complete it.
struct NamedBarrier {
  int64_t id = 0;
  int64_t threads = 0;
};

/// A wait on, or an arrival at, one barrier.
struct BarrierEvent {
  enum class Kind { Wait, Arrive, Sync };
  enum class Barrier {
    PipeFull,  ///< A pipe's full ring: data landed (mbarrier).
    PipeEmpty, ///< A pipe's empty ring: the stage is free (mbarrier).
    Named,     ///< A named barrier (turns, a warpgroup's own sync).
    Vote,      ///< The vote barrier of the block's parity (V on demand).
  };
  Kind kind = Kind::Wait;
  Barrier barrier = Barrier::PipeFull;
  PipeOp pipe;        ///< PipeFull / PipeEmpty.
  NamedBarrier named; ///< Named.
  /// Arrive / Sync: the arrivals this step contributes (one per thread of
  /// the role, or 1 for an elected thread).
  int64_t arrivals = 0;
  /// Arrive on a full ring with a TMA transaction: the bytes delivered.
  int64_t txBytes = 0;
  bool full() const { return barrier == Barrier::PipeFull; }
};

/// Everything the protocol says about one step.
struct StepInfo {
  RoleOp role;
  BlockRef block;
  llvm::SmallVector<BarrierEvent, 1> events;
  llvm::SmallVector<BufferRegion, 2> reads, writes;
};

/// One pipe: its ring depth, whether it carries a stage per KV block, and
/// how many arrivals complete a phase of each ring.
struct PipeInfo {
  int64_t depth = 1;
  bool perBlock = false;
  /// kv_multicast: both CTAs of a pair fill its stages, and the partner's
  /// consumer warps also release them (one remote arrival per warp).
  bool multicast = false;
  int64_t fullArrivals = 0, emptyArrivals = 0;
  /// cp_async: the producer's threads, each arriving on the full barrier
  /// once its copies land (the barrier's count in hardware); 0 otherwise.
  /// The protocol counts them as the one arrival of an elected thread whose
  /// bytes land later, as for TMA: the threads run the same steps.
  int64_t cpAsyncThreads = 0;
};

/// What a role's kv_loop carries across its back-edge besides the running
/// state (O, m, l) of a compute role.
struct LoopCarried {
  /// S of block n: the loop's Q Kᵀ runs one block ahead and its softmax
  /// works on block n.
  bool scores = false;
  /// The correction factors: O is rescaled before the body's own
  /// softmax_update (block 0's softmax is the prologue).
  bool correction = false;
  /// The skip decision: a skip region precedes the body's vote (P V of
  /// block n, decided in the previous iteration).
  bool skip = false;
  /// A load role's speculative V copies: whether the last decision is
  /// known, that decision, and the run of kept blocks.
  bool voteState = false;
  /// The statistics counters (a voting role's or the load role's).
  bool counters = false;
  /// A deferred P V (`ws.mma pv {ahead = -1}` in a compute role): P of
  /// block n - 1, block n's correction factors and the decision on n - 1
  /// besides, and one more iteration than the tile has blocks (the last
  /// block's P V). The lowering and the sync checker both follow this.
  bool deferredPV = false;
};

class ProtocolAnalysis {
public:
  explicit ProtocolAnalysis(KernelOp kernel);

  const PipeInfo &pipe(PipeOp pipe) const { return pipes.find(pipe)->second; }
  bool isPerBlock(PipeOp p) const { return pipe(p).perBlock; }
  bool isMulticast(PipeOp p) const { return pipe(p).multicast; }
  /// The protocol of a step op (StepOpInterface); null for other ops.
  const StepInfo *step(mlir::Operation *op) const {
    auto it = steps.find(op);
    return it == steps.end() ? nullptr : &it->second;
  }
  /// What `loop`'s back-edge carries (its role's kind decides the running
  /// state).
  LoopCarried carried(KVLoopOp loop) const;
  /// The storage region `access` names within `role` (its rows for a
  /// CTA-wide tile, aliases resolved).
  BufferRegion regionOf(BufferOp buffer, RoleOp role) const;
  /// The named barrier of a compute role's warpgroup (P stores, the vote's
  /// AND reduction); id 0 for other roles.
  NamedBarrier roleBarrier(RoleOp role) const {
    return roleBarriers.lookup(role);
  }
  /// The named barrier `role` waits on for its turn in `order` (its threads
  /// and the previous role's).
  NamedBarrier turnBarrier(OrderOp order, llvm::StringRef role) const {
    return turnBarriers.lookup((order.getSymName() + "/" + role).str());
  }
  /// The highest named barrier id the kernel uses.
  int64_t maxNamedBarrier() const { return lastNamedBarrier; }
  /// Prints every pipe and step (the `--ws-print-protocol` test pass).
  void print(llvm::raw_ostream &os) const;

private:
  mutable KernelOp kernel;
  llvm::DenseMap<mlir::Operation *, PipeInfo> pipes;
  llvm::DenseMap<mlir::Operation *, StepInfo> steps;
  llvm::DenseMap<mlir::Operation *, NamedBarrier> roleBarriers;
  llvm::StringMap<NamedBarrier> turnBarriers;
  int64_t lastNamedBarrier = 0;
};

} // namespace blasst::ws

#endif // BLASST_DIALECT_WS_ANALYSIS_PROTOCOL_H
