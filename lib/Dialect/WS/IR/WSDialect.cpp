//===- WSDialect.cpp - The ws dialect and its structural verifiers --------===//
//
// The verifiers encode the hardware and protocol rules a schedule must obey
// before anything is lowered: they are the first line of the static checks
// (the synchronization checker is the second).
//
//===----------------------------------------------------------------------===//
#include "blasst/Dialect/WS/IR/WS.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace blasst;
using namespace blasst::ws;

#include "blasst/Dialect/WS/IR/WSDialect.cpp.inc"
#include "blasst/Dialect/WS/IR/WSEnums.cpp.inc"

void WSDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "blasst/Dialect/WS/IR/WSOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static int64_t bitWidth(Type t) {
  if (auto f = dyn_cast<FloatType>(t))
    return f.getWidth();
  if (auto i = dyn_cast<IntegerType>(t))
    return i.getWidth();
  return 0;
}

/// Looks `name` up among the symbols of the enclosing ws.kernel.
template <typename OpTy>
static OpTy lookup(Operation *from, FlatSymbolRefAttr name) {
  auto kernel = from->getParentOfType<KernelOp>();
  if (!kernel || !name)
    return nullptr;
  return dyn_cast_or_null<OpTy>(
      SymbolTable::lookupSymbolIn(kernel, name.getAttr()));
}

/// Resolves a buffer operand of a step or emits an error naming the operand.
static FailureOr<BufferOp> lookupBuffer(Operation *op, FlatSymbolRefAttr name,
                                        StringRef what) {
  if (auto buffer = lookup<BufferOp>(op, name)) {
    // Steps may be verified before a buffer declared after them.
    if (buffer.getShape().size() != 2 || int64_t(buffer.getStages()) < 1 ||
        llvm::any_of(buffer.getShape(), [](int64_t d) { return d <= 0; }))
      return op->emitOpError()
             << what << " " << name << " is a malformed ws.buffer";
    return buffer;
  }
  return op->emitOpError() << what << " " << name
                           << " does not name a ws.buffer of the kernel";
}

static FailureOr<PipeOp> lookupPipe(Operation *op, FlatSymbolRefAttr name) {
  if (auto pipe = lookup<PipeOp>(op, name))
    return pipe;
  return op->emitOpError() << name << " does not name a ws.pipe of the kernel";
}

static ws::Target getTarget(Operation *op) {
  return op->getParentOfType<KernelOp>().getTarget();
}

//===----------------------------------------------------------------------===//
// KernelOp
//===----------------------------------------------------------------------===//

int64_t KernelOp::getNumWarps() {
  int64_t end = 0;
  for (auto role : getBody().getOps<RoleOp>())
    end = std::max<int64_t>(end, role.getWarpEnd());
  return llvm::alignTo(end, 4);
}

bool KernelOp::hasCpAsyncPipes() {
  return llvm::any_of(getBody().getOps<PipeOp>(),
                      [](PipeOp p) { return p.getCpAsync(); });
}

int64_t KernelOp::getSharedMemoryBytes() {
  int64_t bytes = 0;
  for (auto buffer : getBody().getOps<BufferOp>())
    if (buffer.getSpace() == MemorySpace::smem && !buffer.getAliases())
      bytes += buffer.getStageBytes() * buffer.getStages();
  return bytes;
}

int64_t KernelOp::getTensorMemoryColumns() {
  int64_t columns = 0;
  for (auto buffer : getBody().getOps<BufferOp>())
    if (buffer.getSpace() == MemorySpace::tmem && !buffer.getAliases())
      columns += buffer.getTensorMemoryColumns();
  return columns;
}

int64_t KernelOp::getWarpgroupRegisters(int64_t wg) {
  for (auto role : getBody().getOps<RoleOp>())
    if (role.getRegs() && int64_t(role.getWarpBegin()) < 4 * (wg + 1) &&
        int64_t(role.getWarpEnd()) > 4 * wg)
      return *role.getRegs();
  return 0;
}

void KernelOp::recordSchedule(ArrayRef<NamedAttribute> entries) {
  std::optional<DictionaryAttr> record = getSchedule();
  if (!record)
    return;
  NamedAttrList attrs(*record);
  for (const NamedAttribute &e : entries)
    attrs.set(e.getName(), e.getValue());
  setScheduleAttr(attrs.getDictionary(getContext()));
}

LogicalResult KernelOp::verifyRegions() {
  int64_t blockM = getBlockM(), blockN = getBlockN();
  if (blockM <= 0 || blockN <= 0 || blockM % 64 || blockN % 16)
    return emitOpError() << "block_m must be a positive multiple of 64 and "
                            "block_n a positive multiple of 16, got block_m = "
                         << blockM << ", block_n = " << blockN;

  SmallVector<RoleOp> roles(getBody().getOps<RoleOp>());
  if (roles.empty())
    return emitOpError() << "has no ws.role";
  if (getPersistent()) {
    if (getTarget() != Target::sm_90a)
      return emitOpError() << "persistent is implemented for sm_90a only";
    // An order's first role starts with the turn; a second tile would need
    // the turn handed back across tiles.
    if (!getBody().getOps<OrderOp>().empty())
      return emitOpError() << "persistent cannot be combined with ws.order "
                              "(ping-pong) yet";
  }
  if (getKvMulticast()) {
    if (getTarget() != Target::sm_90a)
      return emitOpError() << "kv_multicast is implemented for sm_90a only";
    if (getPersistent())
      return emitOpError() << "kv_multicast cannot be combined with "
                              "persistent (a cluster's CTAs walk one tile "
                              "each)";
    // Both CTAs of a pair must visit the same KV blocks.
    if (getSpec().toSpec().causal)
      return emitOpError() << "kv_multicast needs non-causal attention (the "
                              "two query blocks of a causal pair visit "
                              "different numbers of KV blocks)";
    // Each CTA copies half of a tile, block_n / 2 rows: whole 8-row swizzle
    // atoms, since block_n is a multiple of 16 (checked above).
  }

  if (std::optional<uint64_t> group = getQGroup()) {
    int64_t g = int64_t(*group);
    if (getTarget() != Target::sm_90a)
      return emitOpError() << "q_group is implemented for sm_90a only";
    // G need not divide block_m: rows G x floor(block_m / G) on are
    // padding (no token).
    if (g < 1 || g > blockM || g > 64)
      return emitOpError() << "q_group = " << g
                           << " must be in [1, min(64, block_m = " << blockM
                           << ")] (a TMA box of q_group heads by "
                              "floor(block_m / q_group) tokens)";
    if (g != getSpec().toSpec().gqaRatio())
      return emitOpError() << "q_group = " << g
                           << " but the spec has q_heads / kv_heads = "
                           << getSpec().toSpec().gqaRatio();
    if (getKvMulticast())
      return emitOpError() << "q_group cannot be combined with kv_multicast";
    // Persistent decode CTAs walk (batch, KV head, query tile, split) items;
    // the launch's split count and batch are kernel parameters 19 and 20.
    // Lean CTAs also take a paged cache (each part reads its tile's table
    // row) and per-sequence lengths (the shares follow the lengths).
    if (getPersistent() && (!getSplitKv() || getSplitChunk() ||
                            ((getPerSeqKv() || getPageSize()) && !getLean())))
      return emitOpError()
             << "persistent with q_group needs split_kv over one contiguous "
                "range per split (no split_chunk; per_seq_kv or page_size "
                "only with lean)";
  }
  // The copies fill the tiles block_m and block_n describe: the lowering
  // steps the kv_loop by block_n keys and the runtime's tensor maps take
  // block_n-row K/V boxes and block_m query rows (over the Q copies), so a
  // buffer of another size would take more or fewer bytes than its pipe
  // expects, or be read past its end.
  int64_t qRows = 0;
  bool qLoaded = false;
  WalkResult tiles = walk([&](TmaLoadOp load) {
    auto dst = lookup<BufferOp>(load, load.getDstAttr());
    if (!dst || dst.getShape().size() != 2)
      return WalkResult::advance(); // the load's verifier reports it
    int64_t rows = dst.getShape()[0];
    if (load.getTensor() == Tensor::q) {
      qRows += rows;
      qLoaded = true;
    } else if (rows != blockN) {
      load.emitOpError() << "copies a " << stringifyTensor(load.getTensor())
                         << " tile of " << rows << " rows into "
                         << load.getDstAttr() << ", but the kernel's block_n "
                         << "is " << blockN
                         << " (each KV block is one tile of block_n keys)";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (tiles.wasInterrupted())
    return failure();
  // (Decode's copy lands q_group x floor(block_m / q_group) of them; the
  // rows after are padding.)
  if (qLoaded && qRows != blockM)
    return emitOpError() << "the Q copies fill " << qRows
                         << " query rows, the kernel's tile has " << blockM
                         << " (block_m)";
  if (std::optional<uint64_t> n = getCtasPerSm();
      n && (*n < 1 || *n > 2 || (*n > 1 && getTarget() != Target::sm_90a)))
    return emitOpError() << "ctas_per_sm = " << *n
                         << " must be 1 or 2 (2: sm_90a only)";
  if (getMergeKernel() &&
      (!getSplitKv() || getPersistent() || getTarget() != Target::sm_90a))
    return emitOpError() << "merge_kernel merges the splits of a decode "
                            "kernel (sm_90a, split_kv, not persistent)";
  if (getBalancedSplits() && (!getSplitKv() || !getPerSeqKv() || !getQGroup() ||
                              getPersistent() || getTarget() != Target::sm_90a))
    return emitOpError() << "balanced_splits shares the CTAs of an sm_90a "
                            "decode grid by per-sequence lengths: it needs "
                            "q_group, split_kv and per_seq_kv, without "
                            "persistent";
  if (getLean() && (!getPersistent() || !getQGroup()))
    return emitOpError() << "lean shares KV blocks among persistent decode "
                            "CTAs: it needs persistent and q_group";
  // The decode KV caches: the record of the spec's choice, read by the
  // lowering.
  AttentionSpec kernelSpec = getSpec().toSpec();
  if (getPerSeqKv() != kernelSpec.kvPerSequence)
    return emitOpError() << (getPerSeqKv() ? "has per_seq_kv but the spec has "
                                             "kv_lengths = uniform"
                                           : "the spec has kv_lengths = "
                                             "per_sequence but the kernel has "
                                             "no per_seq_kv");
  if (int64_t(getPageSize().value_or(0)) != kernelSpec.kvPageSize)
    return emitOpError() << "page_size = " << getPageSize().value_or(0)
                         << " but the spec's kv_cache has page size "
                         << kernelSpec.kvPageSize << " (0: contiguous)";
  if ((getPerSeqKv() || getPageSize()) && !getSplitKv())
    return emitOpError() << (getPerSeqKv() ? "per_seq_kv" : "page_size")
                         << " needs split_kv (the decode schedule)";
  if (std::optional<uint64_t> page = getPageSize()) {
    int64_t p = int64_t(*page), n = getBlockN();
    if (p % n && n % p)
      return emitOpError() << "page_size = " << p << " and block_n = " << n
                           << ": one must divide the other (a KV block is "
                              "part of one page or whole pages)";
  }

  if (std::optional<uint64_t> chunk = getSplitChunk()) {
    if (!getSplitKv())
      return emitOpError() << "split_chunk needs split_kv (the decode "
                              "schedule)";
    if (*chunk < 1 || *chunk > 1024)
      return emitOpError() << "split_chunk = " << int64_t(*chunk)
                           << ": a chunk is 1 to 1024 KV blocks";
  }
  if (getSplitKv()) {
    if (getTarget() != Target::sm_90a)
      return emitOpError() << "split_kv is implemented for sm_90a only";
    if (!getQGroup())
      return emitOpError() << "split_kv needs q_group (the decode schedule)";
    if (getBody().getOps<RoleOp>().empty() ||
        llvm::count_if(getBody().getOps<RoleOp>(), [](RoleOp r) {
          return r.getKind() == RoleKind::compute;
        }) != 1)
      return emitOpError() << "split_kv needs exactly one compute role (the "
                              "last split's merge runs in it)";
  }
  // Warp ranges are disjoint.
  for (auto [i, a] : llvm::enumerate(roles))
    for (RoleOp b : llvm::drop_begin(roles, i + 1))
      if (a.getWarpBegin() < b.getWarpEnd() &&
          b.getWarpBegin() < a.getWarpEnd())
        return emitOpError()
               << "roles '" << a.getSymName() << "' [" << a.getWarpBegin()
               << ", " << a.getWarpEnd() << ") and '" << b.getSymName() << "' ["
               << b.getWarpBegin() << ", " << b.getWarpEnd() << ") overlap";

  // Query rows: the roles that hold S and O (compute on sm_90a, softmax on
  // sm_100a) split [0, block_m) between them, every row to exactly one role;
  // a role without `rows` claims them all. A row claimed twice is computed
  // twice while another is never computed. On sm_90a the lowering gives each
  // compute warp 16 rows (a warpgroup one 64-row wgmma tile).
  RoleKind rowKind =
      getTarget() == Target::sm_90a ? RoleKind::compute : RoleKind::softmax;
  SmallVector<std::tuple<int64_t, int64_t, RoleOp>> claims;
  for (RoleOp r : roles) {
    if (r.getKind() != rowKind)
      continue;
    int64_t b = r.getRowBegin().value_or(0), e = r.getRowEnd().value_or(blockM);
    if (rowKind == RoleKind::compute && e - b != 16 * r.getNumWarps())
      return emitOpError() << "compute role '" << r.getSymName() << "' has "
                           << r.getNumWarps() << " warps, which compute "
                           << 16 * r.getNumWarps()
                           << " query rows on sm_90a, but claims rows [" << b
                           << ", " << e << ")";
    claims.emplace_back(b, e, r);
  }
  llvm::sort(claims,
             [](auto &x, auto &y) { return std::get<0>(x) < std::get<0>(y); });
  int64_t covered = 0;
  for (auto [i, c] : llvm::enumerate(claims)) {
    auto [b, e, r] = c;
    if (b < covered) {
      auto [pb, pe, p] = claims[i - 1];
      return emitOpError() << "roles '" << p.getSymName() << "' rows [" << pb
                           << ", " << pe << ") and '" << r.getSymName()
                           << "' rows [" << b << ", " << e
                           << ") claim the same query rows";
    }
    if (b > covered)
      return emitOpError() << "query rows [" << covered << ", " << b
                           << ") of the CTA's " << blockM << " belong to no "
                           << stringifyRoleKind(rowKind) << " role";
    covered = e;
  }
  if (!claims.empty() && covered < blockM)
    return emitOpError() << "query rows [" << covered << ", " << blockM
                         << ") of the CTA's " << blockM << " belong to no "
                         << stringifyRoleKind(rowKind) << " role";

  int64_t numWarps = getNumWarps();
  if (numWarps > kMaxWarpsPerCTA)
    return emitOpError() << "needs " << numWarps << " warps, a CTA has at most "
                         << kMaxWarpsPerCTA;

  // setmaxnreg acts on whole warpgroups: the roles of one warpgroup agree on
  // a budget, and if any role sets one, every warpgroup must have one.
  bool anyBudget = llvm::any_of(roles, [](RoleOp r) { return r.getRegs(); });
  // setmaxnreg moves registers only within the CTA's launch allocation:
  // ptxas' launch count (the register file's share per thread, a multiple
  // of 8; a warpgroup without a budget keeps it) times the threads. A
  // budget beyond it leaves setmaxnreg.inc waiting forever (384 threads:
  // 168 x 384 = 64512, not 65536; 32 + 2 x 240 per warpgroup hung on the
  // H100 in session 41).
  int64_t threads = numWarps * 32;
  int64_t launchRegs = getRegistersPerCTA() / threads / 8 * 8;
  int64_t totalRegs = 0;
  for (int64_t wg = 0; wg < numWarps / 4; ++wg) {
    std::optional<int64_t> budget;
    RoleOp first;
    bool occupied = false;
    for (RoleOp r : roles) {
      if (int64_t(r.getWarpBegin()) >= 4 * (wg + 1) ||
          int64_t(r.getWarpEnd()) <= 4 * wg)
        continue;
      occupied = true;
      if (!r.getRegs())
        continue;
      if (budget && *budget != int64_t(*r.getRegs()))
        return emitOpError()
               << "warpgroup " << wg << " has roles with different register "
               << "budgets ('" << first.getSymName() << "' " << *budget << ", '"
               << r.getSymName() << "' " << *r.getRegs()
               << "); setmaxnreg applies to a whole warpgroup";
      budget = r.getRegs();
      first = r;
    }
    if (anyBudget && occupied && !budget)
      return emitOpError() << "warpgroup " << wg
                           << " has no register budget while other "
                              "warpgroups set one";
    totalRegs += 128 * budget.value_or(launchRegs);
  }
  if (anyBudget && totalRegs > threads * launchRegs)
    return emitOpError() << "register budgets need " << totalRegs
                         << " registers, a CTA has " << getRegistersPerCTA()
                         << (getCtasPerSM() > 1
                                 ? " (ctas_per_sm = " +
                                       std::to_string(getCtasPerSM()) + ")"
                                 : std::string())
                         << " and launches with " << threads * launchRegs
                         << " (" << threads << " threads x " << launchRegs
                         << "): setmaxnreg cannot grow past the launch's";

  int64_t smem = getSharedMemoryBytes();
  if (smem > getSharedMemoryLimit())
    return emitOpError() << "shared memory buffers need " << smem << " bytes, "
                         << stringifyTarget(getTarget()) << " allows at most "
                         << getSharedMemoryLimit()
                         << (getCtasPerSM() > 1
                                 ? " (ctas_per_sm = " +
                                       std::to_string(getCtasPerSM()) + ")"
                                 : std::string());

  for (auto buffer : getBody().getOps<BufferOp>())
    if (buffer.getSpace() == MemorySpace::tmem &&
        getTarget() != ws::Target::sm_100a)
      return buffer.emitOpError()
             << "is in tensor memory, which needs sm_100a; the kernel "
                "targets "
             << stringifyTarget(getTarget());
  int64_t columns = getTensorMemoryColumns();
  if (columns > kTensorMemoryColumns)
    return emitOpError() << "tensor memory buffers need " << columns
                         << " columns, there are " << kTensorMemoryColumns;
  return success();
}

//===----------------------------------------------------------------------===//
// BufferOp
//===----------------------------------------------------------------------===//

int64_t BufferOp::getStageBytes() {
  if (getShape().size() != 2)
    return 0; // Malformed; the buffer's verifier reports it.
  int64_t elems = 1;
  for (int64_t d : getShape())
    elems *= d;
  return elems * bitWidth(getElementType()) / 8;
}

int64_t BufferOp::getLandedBytes() {
  int64_t bytes = getStageBytes();
  auto kernel = (*this)->getParentOfType<KernelOp>();
  std::optional<uint64_t> group = kernel ? kernel.getQGroup() : std::nullopt;
  if (!group || *group < 1 || getShape().size() != 2 || getShape()[0] < 1 ||
      getShape()[0] % int64_t(*group) == 0)
    return bytes;
  bool isQ = false;
  kernel.walk([&](TmaLoadOp load) {
    isQ |= load.getTensor() == Tensor::q &&
           load.getDstAttr().getValue() == getSymName();
  });
  if (!isQ)
    return bytes;
  int64_t rows = getShape()[0], g = int64_t(*group);
  return bytes / rows * (g * (rows / g));
}

int64_t BufferOp::getTensorMemoryColumns() {
  // A tmem tile has one row per lane; each column is 32 bits wide.
  ArrayRef<int64_t> shape = getShape();
  if (shape.size() != 2)
    return 0; // Malformed; the buffer's verifier reports it.
  return llvm::divideCeil(shape[1] * bitWidth(getElementType()), 32) *
         int64_t(getStages());
}

LogicalResult BufferOp::verify() {
  ArrayRef<int64_t> shape = getShape();
  if (shape.size() != 2)
    return emitOpError() << "shape must be [rows, columns], got "
                         << shape.size() << " dims";
  if (llvm::any_of(shape, [](int64_t d) { return d <= 0 || d > 65536; }))
    return emitOpError() << "shape dims must be in [1, 65536]";
  if (int64_t(getStages()) < 1 || int64_t(getStages()) > 16)
    return emitOpError() << "stages must be in [1, 16], got "
                         << int64_t(getStages());
  Type et = getElementType();
  if (!isa<BFloat16Type, Float16Type, Float32Type>(et) && !et.isInteger(32))
    return emitOpError()
           << "element type must be bf16, f16, f32 or i32 (a vote word), got "
           << et;
  if (getSpace() == MemorySpace::tmem) {
    if (shape[0] > kTensorMemoryLanes)
      return emitOpError() << "a tensor memory tile has at most "
                           << kTensorMemoryLanes << " rows (lanes), got "
                           << shape[0];
  }
  if (FlatSymbolRefAttr aliased = getAliasesAttr()) {
    auto other = lookup<BufferOp>(*this, aliased);
    if (!other)
      return emitOpError() << "aliases " << aliased
                           << ", which is not a ws.buffer of the kernel";
    if (other == *this || other.getAliases())
      return emitOpError() << "may only alias a buffer that owns storage";
    if (other.getSpace() != getSpace())
      return emitOpError() << "aliases " << aliased
                           << " in another memory space";
    if (getStageBytes() * getStages() >
        other.getStageBytes() * other.getStages())
      return emitOpError() << "is larger than the buffer it aliases, "
                           << aliased;
    if (std::optional<ArrayRef<int64_t>> at = getAliasOffset()) {
      // (Bounded so that the sums below cannot overflow.)
      if (at->size() != 2 ||
          llvm::any_of(*at, [](int64_t x) { return x < 0 || x > 65536; }))
        return emitOpError() << "at must be [row, column], both in [0, 65536]";
      int64_t ownBits = getElementType().getIntOrFloatBitWidth();
      int64_t otherBits = other.getElementType().getIntOrFloatBitWidth();
      int64_t cols = llvm::divideCeil(shape[1] * ownBits, otherBits);
      ArrayRef<int64_t> os = other.getShape();
      if ((*at)[0] + shape[0] > os[0] || (*at)[1] + cols > os[1])
        return emitOpError()
               << "at [" << (*at)[0] << ", " << (*at)[1] << "]: rows ["
               << (*at)[0] << ", " << (*at)[0] + shape[0] << ") and "
               << otherBits << "-bit columns [" << (*at)[1] << ", "
               << (*at)[1] + cols << ") do not fit " << aliased << " ("
               << os[0] << "x" << os[1] << ")";
    }
  } else if (getAliasOffset()) {
    return emitOpError() << "at needs aliases";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// PipeOp
//===----------------------------------------------------------------------===//

LogicalResult PipeOp::verify() {
  if (int64_t(getDepth()) < 1 || int64_t(getDepth()) > 16)
    return emitOpError() << "depth must be in [1, 16], got "
                         << int64_t(getDepth());
  if (!lookup<RoleOp>(*this, getProducerAttr()))
    return emitOpError() << "producer " << getProducerAttr()
                         << " is not a ws.role of the kernel";
  if (getConsumers().empty())
    return emitOpError() << "needs at least one consumer role";
  llvm::SmallDenseSet<Attribute> seen;
  for (Attribute a : getConsumers()) {
    auto ref = dyn_cast<FlatSymbolRefAttr>(a);
    if (!ref)
      return emitOpError() << "consumers must be role symbols, got " << a;
    if (!lookup<RoleOp>(*this, ref))
      return emitOpError() << "consumer " << ref
                           << " is not a ws.role of the kernel";
    if (ref == getProducerAttr())
      return emitOpError() << "role " << ref
                           << " cannot both produce and consume";
    if (!seen.insert(ref).second)
      return emitOpError() << "consumer " << ref << " is listed twice";
  }
  int64_t stageBytes = 0, landedBytes = 0;
  llvm::SmallDenseSet<Attribute> seenBuffers;
  for (Attribute a : getBuffers()) {
    auto ref = dyn_cast<FlatSymbolRefAttr>(a);
    auto buffer = ref ? lookup<BufferOp>(*this, ref) : BufferOp();
    if (!buffer)
      return emitOpError() << "buffer " << a
                           << " is not a ws.buffer of the kernel";
    if (!seenBuffers.insert(ref).second)
      return emitOpError() << "buffer " << ref << " is listed twice";
    if (buffer.getStages() != uint64_t(getDepth()))
      return emitOpError() << "buffer " << ref << " has "
                           << int64_t(buffer.getStages())
                           << " stages but the pipe has depth "
                           << int64_t(getDepth());
    stageBytes += buffer.getStageBytes();
    landedBytes += buffer.getLandedBytes();
  }
  if (getCpAsync()) {
    if (getTxBytes())
      return emitOpError() << "cp_async and tx_bytes exclude each other (a "
                              "cp_async stage completes by its producer "
                              "threads' arrivals)";
    auto producer = lookup<RoleOp>(*this, getProducerAttr());
    if (producer.getKind() != RoleKind::load)
      return emitOpError() << "cp_async needs a load role as producer, got "
                           << getProducerAttr();
    if (getBuffers().empty())
      return emitOpError() << "cp_async needs the buffers it fills";
    for (Attribute a : getBuffers()) {
      BufferOp buffer = lookup<BufferOp>(*this, cast<FlatSymbolRefAttr>(a));
      if (buffer.getSpace() != MemorySpace::smem)
        return emitOpError() << "a cp_async pipe may only guard smem buffers; "
                             << a << " is not in smem";
      if (buffer.getLandedBytes() != buffer.getStageBytes())
        return emitOpError() << "a cp_async pipe copies whole stages; " << a
                             << " lands only part of its stage";
    }
  }
  if (std::optional<int64_t> tx = getTxBytes()) {
    for (Attribute a : getBuffers())
      if (lookup<BufferOp>(*this, cast<FlatSymbolRefAttr>(a)).getSpace() !=
          MemorySpace::smem)
        return emitOpError() << "a TMA pipe (tx_bytes) may only guard smem "
                                "buffers; "
                             << a << " is not in smem";
    if (int64_t(*tx) != landedBytes) {
      InFlightDiagnostic diag = emitOpError()
                                << "tx_bytes is " << *tx
                                << " but one stage of its buffers is "
                                << stageBytes << " bytes";
      if (landedBytes != stageBytes)
        diag << ", of which TMA lands " << landedBytes
             << " (the q_group's packed rows)";
      return diag;
    }
    if (*tx >= (1u << 20))
      return emitOpError() << "tx_bytes " << *tx
                           << " exceeds the mbarrier transaction count limit "
                              "(2^20 - 1)";
  }
  return success();
}

int64_t PipeOp::getLandedBytes() {
  if (std::optional<int64_t> tx = getTxBytes())
    return *tx;
  if (!getCpAsync())
    return 0;
  int64_t bytes = 0;
  for (Attribute a : getBuffers())
    bytes +=
        lookup<BufferOp>(*this, cast<FlatSymbolRefAttr>(a)).getStageBytes();
  return bytes;
}

//===----------------------------------------------------------------------===//
// OrderOp
//===----------------------------------------------------------------------===//

LogicalResult OrderOp::verify() {
  if (getRoles().size() < 2)
    return emitOpError() << "needs at least two roles to take turns";
  llvm::SmallDenseSet<Attribute> seen;
  for (Attribute a : getRoles()) {
    auto ref = dyn_cast<FlatSymbolRefAttr>(a);
    if (!ref || !lookup<RoleOp>(*this, ref))
      return emitOpError() << a << " is not a ws.role of the kernel";
    if (!seen.insert(ref).second)
      return emitOpError() << "role " << ref << " is listed twice";
  }
  return success();
}

/// A turn step's role must be in the order's ring.
static LogicalResult verifyTurn(Operation *op, FlatSymbolRefAttr orderName) {
  auto order = lookup<OrderOp>(op, orderName);
  if (!order)
    return op->emitOpError()
           << orderName << " does not name a ws.order of the kernel";
  auto role = op->getParentOfType<RoleOp>();
  if (!llvm::is_contained(order.getRoles(),
                          FlatSymbolRefAttr::get(role.getSymNameAttr())))
    return op->emitOpError() << "role '" << role.getSymName()
                             << "' does not take part in " << orderName;
  return success();
}

LogicalResult TurnWaitOp::verify() { return verifyTurn(*this, getOrderAttr()); }
LogicalResult TurnPassOp::verify() { return verifyTurn(*this, getOrderAttr()); }

//===----------------------------------------------------------------------===//
// RoleOp
//===----------------------------------------------------------------------===//

LogicalResult RoleOp::verify() {
  int64_t begin = getWarpBegin(), end = getWarpEnd();
  if (begin < 0 || end <= begin)
    return emitOpError() << "warp range [" << begin << ", " << end
                         << ") is empty or negative";
  if (end > kMaxWarpsPerCTA)
    return emitOpError() << "warp range [" << begin << ", " << end
                         << ") exceeds the " << kMaxWarpsPerCTA
                         << " warps of a CTA";
  if (std::optional<int64_t> regs = getRegs())
    if (*regs < 24 || *regs > 256 || *regs % 8)
      return emitOpError() << "register budget must be a multiple of 8 in "
                              "[24, 256] (setmaxnreg), got "
                           << *regs;
  if (getRowBegin() || getRowEnd()) {
    auto kernel = (*this)->getParentOfType<KernelOp>();
    int64_t rb = getRowBegin().value_or(0), re = getRowEnd().value_or(0);
    if (!getRowBegin() || !getRowEnd() || rb < 0 || re <= rb ||
        re > int64_t(kernel.getBlockM()))
      return emitOpError() << "rows must be [begin, end) within the CTA's "
                           << kernel.getBlockM() << " query rows";
  }
  // wgmma is issued by a whole warpgroup.
  bool issuesWgmma =
      getTarget(*this) == ws::Target::sm_90a &&
      (getKind() == RoleKind::compute || !getBody().getOps<MmaOp>().empty() ||
       llvm::any_of(getBody().getOps<KVLoopOp>(), [](KVLoopOp l) {
         return !l.getBody().getOps<MmaOp>().empty();
       }));
  if (issuesWgmma && (getWarpBegin() % 4 || getWarpEnd() % 4))
    return emitOpError() << "issues wgmma and must span whole warpgroups "
                            "(warps [4k, 4j)), got ["
                         << getWarpBegin() << ", " << getWarpEnd() << ")";

  // Register buffers the role touches must fit in its budget (per thread).
  if (std::optional<int64_t> regs = getRegs()) {
    llvm::SmallDenseSet<Operation *> used;
    int64_t threads = 32 * getNumWarps();
    int64_t perThread = 0;
    getBody().walk([&](Operation *op) {
      for (NamedAttribute attr : op->getAttrs()) {
        auto ref = dyn_cast<FlatSymbolRefAttr>(attr.getValue());
        if (!ref)
          continue;
        auto buffer = lookup<BufferOp>(op, ref);
        if (buffer && buffer.getSpace() == MemorySpace::regs &&
            used.insert(buffer).second)
          perThread +=
              buffer.getStageBytes() * buffer.getStages() / 4 / threads;
      }
    });
    if (perThread > int64_t(*regs))
      return emitOpError() << "register buffers need " << perThread
                           << " registers per thread, the budget is " << *regs;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Steps
//===----------------------------------------------------------------------===//

/// Checks that the step's role takes part in `pipe`.
static LogicalResult verifyPipeParticipant(Operation *op,
                                           FlatSymbolRefAttr pipeName) {
  FailureOr<PipeOp> pipe = lookupPipe(op, pipeName);
  if (failed(pipe))
    return failure();
  auto role = op->getParentOfType<RoleOp>();
  auto self = FlatSymbolRefAttr::get(role.getSymNameAttr());
  if (pipe->getProducerAttr() == self ||
      llvm::is_contained(pipe->getConsumers(), self))
    return success();
  return op->emitOpError() << "role '" << role.getSymName()
                           << "' is neither the producer nor a consumer of "
                              "pipe "
                           << pipeName;
}

/// Block offsets only make sense per KV block.
static LogicalResult verifyAhead(Operation *op, std::optional<uint64_t> ahead) {
  if (!ahead)
    return success();
  int64_t k = int64_t(*ahead);
  if (k < -1 || k > 1)
    return op->emitOpError() << "ahead must be -1, 0 or 1, got " << k;
  if (!op->getParentOfType<KVLoopOp>())
    return op->emitOpError() << "ahead is only meaningful inside a kv_loop";
  return success();
}

/// A pipe step (acquire, tma_load, release) may run further ahead: in the
/// kv_loop on block n + k for -1 <= k <= the pipe's depth (further ahead the
/// stage would still hold an unread block), before it on block k < depth
/// (the prologue of a role that streams k blocks ahead; blasst-v-on-demand's
/// K copies). After the loop there is no block to be ahead of.
static LogicalResult verifyPipeAhead(Operation *op,
                                     std::optional<uint64_t> ahead,
                                     FlatSymbolRefAttr pipeName) {
  if (!ahead)
    return success();
  int64_t k = int64_t(*ahead);
  FailureOr<PipeOp> pipe = lookupPipe(op, pipeName);
  if (failed(pipe))
    return failure();
  int64_t depth = int64_t(pipe->getDepth());
  if (op->getParentOfType<KVLoopOp>()) {
    if (k < -1 || k > depth)
      return op->emitOpError()
             << "ahead must be in [-1, " << depth << "] (the depth of pipe "
             << pipeName << "), got " << k;
    return success();
  }
  for (Operation *prev = op->getPrevNode(); prev; prev = prev->getPrevNode())
    if (isa<KVLoopOp>(prev))
      return op->emitOpError() << "ahead after the kv_loop is not meaningful";
  if (k < 0 || k >= depth)
    return op->emitOpError()
           << "before the kv_loop ahead = k works on block k and must be in "
              "[0, "
           << depth << ") (the depth of pipe " << pipeName << "), got " << k;
  return success();
}

/// `kept_ahead = k, kept_run = r` (a load role's K copies whose depth
/// follows the decisions): in a load role's kv_loop after its
/// ws.await_vote, with 1 <= k < ahead and r >= 1, and the same on the
/// acquire, the copy and the release of the pipe at that `ahead` (the
/// lowering and the sync checker run the three under one condition).
static LogicalResult verifyKeptAhead(Operation *op,
                                     std::optional<uint64_t> ahead,
                                     std::optional<uint64_t> keptAhead,
                                     std::optional<uint64_t> keptRun,
                                     FlatSymbolRefAttr pipeName) {
  if (!keptAhead && !keptRun)
    return success();
  if (!keptAhead)
    return op->emitOpError() << "kept_run needs kept_ahead";
  if (!ahead)
    return op->emitOpError() << "kept_ahead needs ahead (the copy's depth "
                                "after a skipped block)";
  int64_t a = int64_t(*ahead), k = int64_t(*keptAhead);
  int64_t r = keptRun ? int64_t(*keptRun) : 1;
  if (k < 1 || k >= a)
    return op->emitOpError()
           << "kept_ahead must be in [1, ahead) = [1, " << a << "), got " << k;
  if (r < 1 || r > 8)
    return op->emitOpError() << "kept_run must be in [1, 8], got " << r;
  auto role = op->getParentOfType<RoleOp>();
  auto loop = dyn_cast<KVLoopOp>(op->getParentOp());
  if (!loop || !role || role.getKind() != RoleKind::load)
    return op->emitOpError()
           << "kept_ahead is for a load role's steps directly in its kv_loop";
  bool awaited = false;
  for (Operation *prev = op->getPrevNode(); prev; prev = prev->getPrevNode())
    awaited |= isa<AwaitVoteOp>(prev);
  if (!awaited)
    return op->emitOpError() << "kept_ahead needs a preceding ws.await_vote "
                                "in the same kv_loop (the decisions it "
                                "follows)";
  // The acquire, the copy and the release of this pipe at this `ahead`
  // must agree.
  auto attr = [](Operation &o, StringRef name) {
    auto a = o.getAttrOfType<IntegerAttr>(name);
    return a ? std::optional<uint64_t>(a.getInt()) : std::nullopt;
  };
  for (Operation &other : loop.getBody().front()) {
    if (!isa<AcquireOp, ReleaseOp, TmaLoadOp>(other) ||
        other.getAttrOfType<FlatSymbolRefAttr>("pipe") != pipeName ||
        attr(other, "ahead") != ahead)
      continue;
    if (attr(other, "kept_ahead") != keptAhead ||
        attr(other, "kept_run").value_or(1) != uint64_t(r))
      return op->emitOpError()
             << "kept_ahead / kept_run must be the same on the acquire, the "
                "copy and the release of "
             << pipeName << " {ahead = " << a << "}";
  }
  return success();
}

/// Whether some role of `op`'s kernel acquires `pipe` in a kv_loop (a pipe
/// of KV blocks, not one filled once per tile).
static bool acquiredInKVLoop(Operation *op, StringRef pipe) {
  bool perBlock = false;
  op->getParentOfType<KernelOp>().walk([&](AcquireOp a) {
    perBlock |= a.getPipe() == pipe && a->getParentOfType<KVLoopOp>();
  });
  return perBlock;
}

LogicalResult AcquireOp::verify() {
  if (failed(verifyPipeAhead(*this, getAhead(), getPipeAttr())) ||
      failed(verifyKeptAhead(*this, getAhead(), getKeptAhead(), getKeptRun(),
                             getPipeAttr())))
    return failure();
  if (getKeptAhead()) {
    auto load = dyn_cast_or_null<TmaLoadOp>((*this)->getNextNode());
    auto release =
        load ? dyn_cast_or_null<ReleaseOp>(load->getNextNode()) : ReleaseOp();
    if (!load || !release || load.getPipe() != getPipe() ||
        release.getPipe() != getPipe() || load.getAhead() != getAhead() ||
        release.getAhead() != getAhead())
      return emitOpError() << "kept_ahead: the acquire must be followed by "
                              "its copy and its release (one step, run "
                              "twice under two conditions)";
  }
  if (getDrain() && failed(verifyDrain()))
    return failure();
  return verifyPipeParticipant(*this, getPipeAttr());
}

/// `drain`: the producer's last step on a pipe filled once per tile, after
/// its release there, directly in the role (it waits for the consumers'
/// release of what the role copied last).
LogicalResult AcquireOp::verifyDrain() {
  FailureOr<PipeOp> pipe = lookupPipe(*this, getPipeAttr());
  if (failed(pipe))
    return failure();
  auto role = (*this)->getParentOfType<RoleOp>();
  if (!role ||
      pipe->getProducerAttr() != FlatSymbolRefAttr::get(role.getSymNameAttr()))
    return emitOpError() << "drain is a wait of the pipe's producer (the "
                            "consumers' release of its last copy); "
                         << getPipeAttr() << " is not produced by this role";
  if ((*this)->getParentOp() != role.getOperation() || getAhead() ||
      getKeptAhead())
    return emitOpError() << "drain runs once, directly in the role (not in "
                            "a kv_loop, no ahead)";
  if (acquiredInKVLoop(*this, getPipe()))
    return emitOpError() << "drain is for a pipe filled once per tile: "
                         << getPipeAttr() << " is acquired in a kv_loop";
  auto onPipe = [&](Operation &op) {
    return isa<AcquireOp, ReleaseOp, TmaLoadOp>(op) &&
           op.getAttrOfType<FlatSymbolRefAttr>("pipe") == getPipeAttr();
  };
  bool released = false;
  for (Operation *op = (*this)->getPrevNode(); op && !released;
       op = op->getPrevNode())
    released = isa<ReleaseOp>(op) && onPipe(*op);
  bool later = false;
  for (Operation *op = (*this)->getNextNode(); op; op = op->getNextNode())
    later |= onPipe(*op);
  if (!released || later)
    return emitOpError() << "drain must follow the role's release of "
                         << getPipeAttr() << " and be its last step there";
  return success();
}
LogicalResult ReleaseOp::verify() {
  if (failed(verifyPipeAhead(*this, getAhead(), getPipeAttr())) ||
      failed(verifyKeptAhead(*this, getAhead(), getKeptAhead(), getKeptRun(),
                             getPipeAttr())))
    return failure();
  return verifyPipeParticipant(*this, getPipeAttr());
}

LogicalResult MmaWaitOp::verify() {
  if (int64_t(getPending()) < 0 || int64_t(getPending()) > 7)
    return emitOpError() << "pending must be in [0, 7] (wgmma.wait_group), "
                            "got "
                         << int64_t(getPending());
  return success();
}

int64_t KernelOp::getRegistersPerCTA() {
  return kRegistersPerCTA / getCtasPerSM();
}
int64_t KernelOp::getSharedMemoryLimit() {
  return getCtasPerSM() == 1
             ? kSharedMemoryBytes
             : kSharedMemoryPerSM / getCtasPerSM() - kReservedSharedPerCTA;
}

LogicalResult TmaLoadOp::verify() {
  if (failed(verifyPipeAhead(*this, getAhead(), getPipeAttr())) ||
      failed(verifyKeptAhead(*this, getAhead(), getKeptAhead(), getKeptRun(),
                             getPipeAttr())))
    return failure();
  if (getKeptAhead() && (getOnDemand() || getSink()))
    return emitOpError() << "kept_ahead copies are neither on_demand nor sink";
  if (getOnDemand()) {
    if (getTensor() != Tensor::v)
      return emitOpError() << "on_demand loads V only (K feeds the vote)";
    bool awaited = false;
    for (Operation *op = (*this)->getPrevNode(); op; op = op->getPrevNode())
      awaited |= isa<AwaitVoteOp>(op);
    if (!awaited || !isa<KVLoopOp>((*this)->getParentOp()))
      return emitOpError() << "on_demand needs a preceding ws.await_vote in "
                              "the same kv_loop block";
  }
  FailureOr<PipeOp> pipe = lookupPipe(*this, getPipeAttr());
  FailureOr<BufferOp> dst = lookupBuffer(*this, getDstAttr(), "destination");
  if (failed(pipe) || failed(dst))
    return failure();
  if (getSink()) {
    if (getTensor() != Tensor::k || getOnDemand() || getAhead() ||
        !isa<RoleOp>((*this)->getParentOp()))
      return emitOpError() << "sink copies K of the sequence's block 0 once, "
                              "before the kv_loop (no ahead, not on_demand)";
    if (acquiredInKVLoop(*this, getPipe()))
      return emitOpError() << "sink needs a pipe of its own: " << getPipeAttr()
                           << " is acquired in a kv_loop";
  }
  if (getTensor() == Tensor::o)
    return emitOpError() << "loads only Q, K or V";
  if (dst->getSpace() != MemorySpace::smem)
    return emitOpError() << "destination " << getDstAttr()
                         << " must be in smem";
  if (pipe->getProducer() != getRole().getSymName())
    return emitOpError() << "is issued by role '" << getRole().getSymName()
                         << "' but pipe " << getPipeAttr() << " is produced by "
                         << pipe->getProducerAttr();
  if (!llvm::is_contained(pipe->getBuffers(), getDstAttr()))
    return emitOpError() << "destination " << getDstAttr()
                         << " is not guarded by pipe " << getPipeAttr();
  if (!pipe->getTxBytes() && !pipe->getCpAsync())
    return emitOpError() << "pipe " << getPipeAttr()
                         << " has neither tx_bytes nor cp_async; TMA completes "
                            "on a transaction-counting pipe";
  if (pipe->getCpAsync() && getTensor() != Tensor::k &&
      getTensor() != Tensor::v)
    return emitOpError() << "a cp_async pipe (" << getPipeAttr()
                         << ") copies K or V tiles only";
  return success();
}

LogicalResult TmaStoreOp::verify() {
  FailureOr<BufferOp> src = lookupBuffer(*this, getSrcAttr(), "source");
  if (failed(src))
    return failure();
  if (getTensor() != Tensor::o)
    return emitOpError() << "stores only O";
  if (src->getSpace() != MemorySpace::smem)
    return emitOpError() << "source " << getSrcAttr() << " must be in smem";
  return success();
}

LogicalResult MmaOp::verify() {
  if (failed(verifyAhead(*this, getAhead())))
    return failure();
  FailureOr<BufferOp> a = lookupBuffer(*this, getAAttr(), "operand a");
  FailureOr<BufferOp> b = lookupBuffer(*this, getBAttr(), "operand b");
  FailureOr<BufferOp> d = lookupBuffer(*this, getDAttr(), "accumulator d");
  if (failed(a) || failed(b) || failed(d))
    return failure();
  ws::Target target = getTarget(*this);
  MemorySpace accSpace =
      target == ws::Target::sm_90a ? MemorySpace::regs : MemorySpace::tmem;
  MemorySpace aAlt = accSpace;
  if (b->getSpace() != MemorySpace::smem)
    return emitOpError() << "operand b " << getBAttr() << " must be in smem";
  if (d->getSpace() != accSpace)
    return emitOpError() << "accumulator " << getDAttr() << " must be in "
                         << stringifyMemorySpace(accSpace) << " on "
                         << stringifyTarget(target);
  if (a->getSpace() != MemorySpace::smem && a->getSpace() != aAlt)
    return emitOpError() << "operand a " << getAAttr() << " must be in smem or "
                         << stringifyMemorySpace(aAlt) << " on "
                         << stringifyTarget(target);
  if (!d->getElementType().isF32())
    return emitOpError() << "accumulator must be f32";
  if (a->getElementType() != b->getElementType())
    return emitOpError() << "operands a and b have different element types";

  // qk: d[M,N] = a[M,D] b[N,D]^T;  pv: d[M,Dv] += a[M,N] b[N,Dv].
  ArrayRef<int64_t> as = a->getShape(), bs = b->getShape(), ds = d->getShape();
  int64_t m = ds[0], n = ds[1];
  int64_t k = getKind() == MmaKind::qk ? bs[1] : bs[0];
  int64_t bN = getKind() == MmaKind::qk ? bs[0] : bs[1];
  if (as[1] != k || bN != n || as[0] % m)
    return emitOpError() << "shapes do not compose: a " << as[0] << "x" << as[1]
                         << ", b " << bs[0] << "x" << bs[1] << ", d " << m
                         << "x" << n << " for " << stringifyMmaKind(getKind());
  if (target == ws::Target::sm_90a && m % 64)
    return emitOpError() << "wgmma tiles have a multiple of 64 rows, got " << m;
  return success();
}

/// Score steps work on the block's S tile.
static LogicalResult verifyScores(Operation *op, FlatSymbolRefAttr name) {
  FailureOr<BufferOp> s = lookupBuffer(op, name, "scores");
  if (failed(s))
    return failure();
  if (s->getSpace() == MemorySpace::smem || !s->getElementType().isF32())
    return op->emitOpError() << "scores " << name
                             << " must be an f32 buffer in registers or "
                                "tensor memory";
  return success();
}

LogicalResult ReadScoresOp::verify() {
  return verifyScores(*this, getScoresAttr());
}
LogicalResult RowMaxOp::verify() {
  if (failed(verifyAhead(*this, getAhead())))
    return failure();
  if (getAhead() && int64_t(*getAhead()) < 0)
    return emitOpError() << "ahead must be 0 or 1 (the scores of this block "
                            "or of the next)";
  if (getSink() && (getAhead() || !isa<RoleOp>((*this)->getParentOp())))
    return emitOpError() << "sink seeds the running max before the kv_loop "
                            "(no ahead)";
  return verifyScores(*this, getScoresAttr());
}
/// Per-row factors handed between roles: smem, f32, two columns (the
/// factor or row sum, and the running max) for each of `rows` rows.
static LogicalResult verifyRowFactors(Operation *op, FlatSymbolRefAttr name,
                                      StringRef what, int64_t rows) {
  FailureOr<BufferOp> f = lookupBuffer(op, name, what);
  if (failed(f))
    return failure();
  if (f->getSpace() != MemorySpace::smem || !f->getElementType().isF32() ||
      f->getShape()[1] != 2 || (rows && f->getShape()[0] != rows))
    return op->emitOpError()
           << what << " " << name << " must be an f32 smem buffer of "
           << (rows ? std::to_string(rows) : std::string("the role's"))
           << " rows and 2 columns (per row: value, running max)";
  return success();
}

/// The rows of a buffer named by `name` (0 when it cannot be looked up).
static int64_t bufferRows(Operation *op, FlatSymbolRefAttr name) {
  auto kernel = op->getParentOfType<KernelOp>();
  auto buf = kernel ? SymbolTable::lookupNearestSymbolFrom<BufferOp>(
                          kernel, name.getAttr())
                    : BufferOp();
  return buf ? buf.getShape()[0] : 0;
}

LogicalResult SoftmaxUpdateOp::verify() {
  if (failed(verifyScores(*this, getScoresAttr())))
    return failure();
  if (FlatSymbolRefAttr f = getFactorsAttr())
    return verifyRowFactors(*this, f, "factors",
                            bufferRows(*this, getScoresAttr()));
  return success();
}

LogicalResult StoreRowSumsOp::verify() {
  if ((*this)->getParentOfType<KVLoopOp>())
    return emitOpError() << "hands over the final row sums: it must follow "
                            "the ws.kv_loop";
  return verifyRowFactors(*this, getDstAttr(), "destination", 0);
}

LogicalResult Exp2StoreOp::verify() {
  if (failed(verifyScores(*this, getScoresAttr())))
    return failure();
  FailureOr<BufferOp> p = lookupBuffer(*this, getPAttr(), "P");
  if (failed(p))
    return failure();
  if (p->getElementType().isF32())
    return emitOpError() << "P " << getPAttr()
                         << " must be bf16 or f16 (the P·V operand type)";
  if (getHold() && (*getHold() < 1 || *getHold() > 4))
    return emitOpError() << "hold must be 1 to 4 quarters of the row, got "
                         << *getHold();
  return success();
}

LogicalResult Exp2Op::verify() { return verifyScores(*this, getScoresAttr()); }

LogicalResult LoadFragOp::verify() {
  FailureOr<BufferOp> src = lookupBuffer(*this, getSrcAttr(), "source");
  FailureOr<BufferOp> dst = lookupBuffer(*this, getDstAttr(), "destination");
  if (failed(src) || failed(dst))
    return failure();
  if (src->getSpace() != MemorySpace::smem)
    return emitOpError() << "source " << getSrcAttr()
                         << " must be in shared memory";
  if (dst->getSpace() != MemorySpace::regs)
    return emitOpError() << "destination " << getDstAttr()
                         << " must be in registers";
  if (src->getElementType() != dst->getElementType() ||
      dst->getElementType().isF32())
    return emitOpError() << "source and destination must have the same "
                            "16-bit element type";
  if (dst->getShape()[0] != 64 || dst->getShape()[1] != src->getShape()[1] ||
      src->getShape()[0] % 64)
    return emitOpError() << "destination " << getDstAttr()
                         << " must be 64 rows of the source's "
                         << src->getShape()[1] << " columns (a warpgroup's "
                         << "rows of a " << src->getShape()[0] << "-row tile)";
  if (dst->getShape()[1] % 16)
    return emitOpError() << "needs a multiple of 16 columns (wgmma k-steps)";
  return success();
}

LogicalResult PackPOp::verify() {
  if (failed(verifyScores(*this, getScoresAttr())))
    return failure();
  FailureOr<BufferOp> p = lookupBuffer(*this, getPAttr(), "P");
  FailureOr<BufferOp> s = lookupBuffer(*this, getScoresAttr(), "scores");
  if (failed(p) || failed(s))
    return failure();
  if (p->getSpace() != MemorySpace::regs)
    return emitOpError() << "P " << getPAttr()
                         << " must be in registers (in shared memory, "
                            "ws.exp2_store_p writes it)";
  if (p->getElementType().isF32())
    return emitOpError() << "P " << getPAttr()
                         << " must be bf16 or f16 (the P·V operand type)";
  if (p->getShape() != s->getShape())
    return emitOpError() << "P " << getPAttr() << " and the scores "
                         << getScoresAttr() << " differ in shape";
  return success();
}

/// The O accumulator lives in registers (sm_90a) or tensor memory (sm_100a).
static LogicalResult verifyAccumulator(Operation *op, FlatSymbolRefAttr name) {
  FailureOr<BufferOp> acc = lookupBuffer(op, name, "accumulator");
  if (failed(acc))
    return failure();
  if (acc->getSpace() == MemorySpace::smem)
    return op->emitOpError() << "accumulator " << name
                             << " must be in registers or tensor memory";
  return success();
}

LogicalResult CorrectOp::verify() {
  if (failed(verifyAccumulator(*this, getAccAttr())))
    return failure();
  if (failed(verifyAhead(*this, getAhead())))
    return failure();
  if (getAhead() && int64_t(*getAhead()) != 0)
    return emitOpError() << "ahead must be 0 (the factor of block n, carried "
                            "from the previous iteration), got "
                         << int64_t(*getAhead());
  if (FlatSymbolRefAttr f = getFactorsAttr())
    return verifyRowFactors(*this, f, "factors",
                            bufferRows(*this, getAccAttr()));
  return success();
}

LogicalResult EpilogueOp::verify() {
  if (failed(verifyAccumulator(*this, getAccAttr())))
    return failure();
  if (FlatSymbolRefAttr staging = getStagingAttr()) {
    FailureOr<BufferOp> st = lookupBuffer(*this, staging, "staging");
    if (failed(st))
      return failure();
    if (st->getSpace() != MemorySpace::smem)
      return emitOpError() << "staging buffer " << staging
                           << " must be in smem";
  }
  if (FlatSymbolRefAttr f = getSumsAttr())
    return verifyRowFactors(*this, f, "row sums",
                            bufferRows(*this, getAccAttr()));
  return success();
}

//===----------------------------------------------------------------------===//
// BLASST
//===----------------------------------------------------------------------===//

LogicalResult VoteOp::verify() {
  if (failed(verifyScores(*this, getScoresAttr())))
    return failure();
  bool first = votesFirstBlock();
  if (!first && !(*this)->getParentOfType<KVLoopOp>())
    return emitOpError() << "must be inside a ws.kv_loop, or before it (the "
                            "vote on block 0)";
  // The vote reads the block's row maxima.
  bool sawRowMax = false;
  for (Operation *op = (*this)->getPrevNode(); op; op = op->getPrevNode())
    if (auto rm = dyn_cast<RowMaxOp>(op))
      sawRowMax |= rm.getScoresAttr() == getScoresAttr();
  if (!sawRowMax)
    return emitOpError() << "needs a preceding ws.row_max " << getScoresAttr()
                         << " in the same block";
  auto kernel = (*this)->getParentOfType<KernelOp>();
  AttentionSpec spec = kernel.getSpec().toSpec();
  if (spec.sparsity.isDense())
    return emitOpError() << "in a kernel whose spec has no sparsity policy";
  // Exactly one role kind counts the statistics the spec asks for: the
  // voters, or the load role that reads their published votes.
  AwaitVoteOp await;
  kernel.walk([&](AwaitVoteOp a) { await = a; });
  bool counted = getStats() || (getPublish() && await && await.getStats());
  if (counted != spec.stats)
    return emitOpError() << "stats must be counted (here, or by the "
                            "ws.await_vote {stats} that reads this vote) "
                            "exactly when the spec asks for statistics";
  if (getStats() && await && await.getStats() && getPublish())
    return emitOpError() << "stats are counted twice: by this vote and by "
                            "the ws.await_vote {stats} that reads it";
  if (getPublish() && !await)
    return emitOpError() << "publishes its decision but no load role has a "
                            "ws.await_vote";
  if (first) {
    // Block 0 is voted on against a running max the sink seed defined
    // (with -inf every row's difference would be +inf or NaN: kept), and
    // like the loop's blocks: the load role reads every block's votes.
    bool seeded = false;
    RowMaxOp latest;
    for (Operation *op = (*this)->getPrevNode(); op; op = op->getPrevNode())
      if (auto rm = dyn_cast<RowMaxOp>(op)) {
        seeded |= rm.getSink();
        if (!latest)
          latest = rm;
      }
    if (latest && latest.getSink())
      return emitOpError() << "votes on block 0 before block 0's row maxima "
                              "(a ws.row_max after the sink's)";
    if (!seeded)
      return emitOpError() << "votes on block 0 before the kv_loop, but no "
                              "ws.row_max {sink} seeds the running max it "
                              "compares with";
    VoteOp loopVote;
    for (Operation *op = (*this)->getNextNode(); op; op = op->getNextNode())
      if (auto loop = dyn_cast<KVLoopOp>(op))
        loop.walk([&](VoteOp v) { loopVote = v; });
    if (!loopVote)
      return emitOpError() << "votes on block 0 but the role's kv_loop "
                              "votes on no block";
    if (loopVote.getPublish() != getPublish() ||
        loopVote.getStats() != getStats())
      return emitOpError() << "votes on block 0 with publish / stats unlike "
                              "the kv_loop's vote (the load role and the "
                              "counters take every block's decision alike)";
  }
  return success();
}

bool VoteOp::votesFirstBlock() {
  if (!isa<RoleOp>((*this)->getParentOp()))
    return false;
  for (Operation *op = (*this)->getNextNode(); op; op = op->getNextNode())
    if (isa<KVLoopOp>(op))
      return true;
  return false;
}

/// A vote word: smem [1, 1] i32, one stage.
static LogicalResult verifyVoteWord(Operation *op, FlatSymbolRefAttr name) {
  FailureOr<BufferOp> w = lookupBuffer(op, name, "vote word");
  if (failed(w))
    return failure();
  if (w->getSpace() != MemorySpace::smem || !w->getElementType().isInteger(32) ||
      w->getShape()[0] != 1 || w->getShape()[1] != 1 || w->getStages() != 1 ||
      w->getAliases())
    return op->emitOpError() << "vote word " << name
                             << " must be an smem [1, 1] i32 buffer of one "
                                "stage that owns its storage";
  if (!isa<KVLoopOp>(op->getParentOp()))
    return op->emitOpError() << "must be directly inside a ws.kv_loop";
  return success();
}

LogicalResult StoreVoteOp::verify() {
  if (failed(verifyVoteWord(*this, getWordAttr())))
    return failure();
  bool voted = false;
  for (Operation *op = (*this)->getPrevNode(); op; op = op->getPrevNode())
    voted |= isa<VoteOp>(op);
  if (!voted)
    return emitOpError() << "needs a preceding ws.vote in the same block";
  int64_t writers = 0;
  (*this)->getParentOfType<KernelOp>().walk([&](StoreVoteOp s) {
    writers += s.getWordAttr() == getWordAttr();
  });
  if (writers != 1)
    return emitOpError() << "vote word " << getWordAttr()
                         << " has more than one writer";
  return success();
}

LogicalResult LoadVoteOp::verify() {
  if (failed(verifyVoteWord(*this, getWordAttr())))
    return failure();
  if (!getRole().walk([](VoteOp) { return WalkResult::interrupt(); })
           .wasInterrupted()) {
    bool stored = false;
    (*this)->getParentOfType<KernelOp>().walk([&](StoreVoteOp s) {
      stored |= s.getWordAttr() == getWordAttr();
    });
    if (stored)
      return success();
    return emitOpError() << "reads vote word " << getWordAttr()
                         << ", which no ws.store_vote writes";
  }
  return emitOpError() << "in a role that votes itself";
}

bool VoteOp::decidesNextBlock() {
  for (Operation *op = (*this)->getPrevNode(); op; op = op->getPrevNode())
    if (auto rm = dyn_cast<RowMaxOp>(op);
        rm && rm.getAhead() && *rm.getAhead() == 1)
      return true;
  return false;
}

LogicalResult AwaitVoteOp::verify() {
  auto loop = dyn_cast<KVLoopOp>((*this)->getParentOp());
  if (!loop || getRole().getKind() != RoleKind::load)
    return emitOpError() << "must be directly inside a load role's kv_loop";
  if (llvm::count_if(loop.getBody().front(),
                     [](Operation &op) { return isa<AwaitVoteOp>(op); }) != 1)
    return emitOpError() << "appears more than once in one kv_loop";
  // The lowering counts kept blocks in 32 bits.
  if (std::optional<uint64_t> k = getSpeculateAfter();
      k && (*k < 1 || *k > uint64_t(INT32_MAX)))
    return emitOpError() << "speculate_after must be 1 to 2147483647 (the "
                            "kept blocks before a copy issued without its "
                            "votes)";
  // Every role that multiplies by V must publish a vote on block n + 1 (the
  // overlap schedule's, after row_max {ahead = 1}): the block is loaded
  // only when one of them keeps it, and block 0 is never voted on.
  auto kernel = (*this)->getParentOfType<KernelOp>();
  if (kernel.getPersistent() || kernel.getKvMulticast())
    return emitOpError() << "is not lowered with persistent CTAs or "
                            "kv_multicast (the vote barrier follows one "
                            "tile's KV blocks in one CTA)";
  int64_t voters = 0;
  bool firstVoters = false;
  for (auto role : kernel.getBody().getOps<RoleOp>()) {
    bool pv = false;
    role.walk([&](MmaOp m) { pv |= m.getKind() == MmaKind::pv; });
    if (!pv)
      continue;
    VoteOp vote; // the kv_loop's
    bool first = false; // and one on block 0 before it
    role.walk([&](VoteOp v) {
      if (v.votesFirstBlock())
        first = true;
      else
        vote = v;
    });
    if (!vote || !vote.getPublish())
      return emitOpError() << "role '" << role.getSymName()
                           << "' multiplies by V but publishes no vote";
    if (!vote.decidesNextBlock())
      return emitOpError() << "role '" << role.getSymName()
                           << "' votes on its own block; on-demand loads need "
                              "the overlap schedule's vote on block n + 1 "
                              "(after ws.row_max {ahead = 1})";
    ++voters;
    // The vote barriers count every voter's vote on each block: on block 0
    // too, or on no voter's.
    if (voters == 1)
      firstVoters = first;
    else if (first != firstVoters)
      return emitOpError() << "role '" << role.getSymName() << "' "
                           << (first ? "votes" : "does not vote")
                           << " on block 0 unlike the voters before it "
                              "(the load role reads block 0's votes from "
                              "every voter or from none)";
  }
  if (!voters)
    return emitOpError() << "has no voter";
  return success();
}

LogicalResult UnlessSkippedOp::verify() {
  // The decision is the latest vote: earlier in this block, or, for a
  // region before the loop's vote, the previous iteration's (the overlap
  // schedule votes on block n+1 after its row_max {ahead = 1}).
  auto checkBody = [&]() -> LogicalResult {
    for (Operation &op : getBody().front())
      if (isa<AcquireOp, ReleaseOp, TmaLoadOp, VoteOp, UnlessSkippedOp,
              TurnWaitOp, TurnPassOp, StoreVoteOp, LoadVoteOp>(op))
        return op.emitOpError()
               << "cannot be skipped: pipe traffic and votes must run on "
                  "both paths";
    return success();
  };
  if (isa<RoleOp>((*this)->getParentOp())) {
    // Before the kv_loop: block 0's steps, under the vote on block 0.
    if (getAhead() || getFuseNext())
      return emitOpError() << "before the kv_loop takes neither ahead nor "
                              "fuse_next (block 0's steps, decided by the "
                              "vote on block 0)";
    bool voted = false;
    for (Operation *op = (*this)->getPrevNode(); op; op = op->getPrevNode())
      if (auto v = dyn_cast<VoteOp>(op))
        voted |= v.votesFirstBlock();
    bool loopAfter = false;
    for (Operation *op = (*this)->getNextNode(); op; op = op->getNextNode())
      loopAfter |= isa<KVLoopOp>(op);
    if (!voted || !loopAfter)
      return emitOpError() << "outside a ws.kv_loop needs a preceding "
                              "ws.vote on block 0 and the role's kv_loop "
                              "after it";
    return checkBody();
  }
  auto loop = cast<KVLoopOp>((*this)->getParentOp());
  bool loaded = false;
  for (Operation *op = (*this)->getPrevNode(); op; op = op->getPrevNode())
    loaded |= isa<LoadVoteOp>(op);
  if (loop.getBody().front().getOps<VoteOp>().empty() && !loaded)
    return emitOpError()
           << "needs a ws.vote in the same kv_loop or a ws.load_vote before it";
  if (failed(checkBody()))
    return failure();
  if (std::optional<uint64_t> a = getAhead()) {
    int64_t k = int64_t(*a);
    if (k < -1 || k > 1)
      return emitOpError() << "ahead must be -1, 0 or 1, got " << k;
    // The decision on block n + 1 exists only after the loop's vote.
    bool voted = false;
    for (Operation *op = (*this)->getPrevNode(); op; op = op->getPrevNode())
      voted |= isa<VoteOp>(op);
    if (k == 1 && !voted)
      return emitOpError() << "ahead = 1 before the kv_loop's ws.vote: the "
                              "decision on block n + 1 is not known yet";
  }
  SmallVector<Operation *> mids;
  if (getFuseNext() && !getFusablePartner(mids))
    return emitOpError()
           << "fuse_next needs a next ws.unless_skipped after only mma_wait "
              "and release steps, this one holding only softmax_update and "
              "exp2, the next only correct and pack_p";
  return success();
}

UnlessSkippedOp
UnlessSkippedOp::getFusablePartner(SmallVectorImpl<Operation *> &mids) {
  auto only = [](UnlessSkippedOp r, auto allowed) {
    return llvm::all_of(r.getBody().front(), allowed);
  };
  // Between them: waits, releases, and a deferred P·V's correction of
  // block n under its own decision (a region with `ahead`, only `correct`).
  auto ownCorrection = [](Operation *op) {
    auto r = dyn_cast<UnlessSkippedOp>(op);
    return r && r.getAhead() &&
           llvm::all_of(r.getBody().front(),
                        [](Operation &o) { return isa<CorrectOp>(o); });
  };
  Operation *op = (*this)->getNextNode();
  for (; op && (isa<MmaWaitOp, ReleaseOp>(op) || ownCorrection(op));
       op = op->getNextNode())
    mids.push_back(op);
  auto second = dyn_cast_or_null<UnlessSkippedOp>(op);
  if (mids.empty() || !second ||
      !only(*this,
            [](Operation &o) { return isa<SoftmaxUpdateOp, Exp2Op>(o); }) ||
      !only(second, [](Operation &o) { return isa<CorrectOp, PackPOp>(o); }))
    return UnlessSkippedOp();
  return second;
}

//===----------------------------------------------------------------------===//
// LaunchOp
//===----------------------------------------------------------------------===//

LogicalResult LaunchOp::verifySymbolUses(SymbolTableCollection &tables) {
  Operation *target = tables.lookupNearestSymbolFrom(*this, getKernelAttr());
  // After convert-ws-to-nvvm the launch names the lowered kernel function;
  // the host side binds it through the runtime.
  if (target && target->hasAttr("nvvm.kernel"))
    return success();
  auto kernel = dyn_cast_or_null<KernelOp>(target);
  if (!kernel)
    return emitOpError() << getKernelAttr() << " does not name a ws.kernel";
  AttentionSpec spec = kernel.getSpec().toSpec();
  size_t expected = 4 + spec.lse + spec.stats;
  if (getArgs().size() != expected)
    return emitOpError() << "kernel " << getKernelAttr() << " takes "
                         << expected << " memrefs (q, k, v, o"
                         << (spec.lse ? ", lse" : "")
                         << (spec.stats ? ", stats" : "") << "), got "
                         << getArgs().size();
  Type et = kernel.getSpec().getDtype();
  for (auto [i, arg] : llvm::enumerate(getArgs().take_front(4))) {
    auto type = cast<MemRefType>(arg.getType());
    if (type.getRank() != 4 || type.getElementType() != et)
      return emitOpError() << "argument " << i << " must be a rank-4 memref of "
                           << et << " ([batch, seq, heads, dim]), got " << type;
  }
  return success();
}

#define GET_OP_CLASSES
#include "blasst/Dialect/WS/IR/WSOps.cpp.inc"

#include "blasst/Dialect/WS/IR/WSInterfaces.cpp.inc"

void blasst::ws::getStepBufferAccesses(
    Operation *op, SmallVectorImpl<BufferAccess> &accesses) {
  auto read = [&](FlatSymbolRefAttr buf) {
    if (buf)
      accesses.push_back({buf, /*write=*/false});
  };
  auto write = [&](FlatSymbolRefAttr buf) {
    if (buf)
      accesses.push_back({buf, /*write=*/true});
  };
  llvm::TypeSwitch<Operation *>(op)
      .Case([&](TmaLoadOp o) { write(o.getDstAttr()); })
      .Case([&](TmaStoreOp o) { read(o.getSrcAttr()); })
      .Case([&](MmaOp o) {
        read(o.getAAttr());
        read(o.getBAttr());
        // P V accumulates into O: it reads what it writes.
        if (o.getKind() == MmaKind::pv)
          read(o.getDAttr());
        write(o.getDAttr());
      })
      .Case([&](LoadFragOp o) {
        read(o.getSrcAttr());
        write(o.getDstAttr());
      })
      .Case<ReadScoresOp, RowMaxOp, VoteOp>(
          [&](auto o) { read(o.getScoresAttr()); })
      .Case([&](SoftmaxUpdateOp o) {
        read(o.getScoresAttr());
        write(o.getFactorsAttr());
      })
      .Case([&](StoreRowSumsOp o) { write(o.getDstAttr()); })
      .Case([&](StoreVoteOp o) { write(o.getWordAttr()); })
      .Case([&](LoadVoteOp o) { read(o.getWordAttr()); })
      .Case([&](Exp2StoreOp o) {
        read(o.getScoresAttr());
        write(o.getPAttr());
      })
      .Case([&](Exp2Op o) {
        read(o.getScoresAttr());
        write(o.getScoresAttr());
      })
      .Case([&](PackPOp o) {
        read(o.getScoresAttr());
        write(o.getPAttr());
      })
      .Case([&](CorrectOp o) {
        read(o.getFactorsAttr());
        read(o.getAccAttr());
        write(o.getAccAttr());
      })
      .Case([&](EpilogueOp o) {
        read(o.getAccAttr());
        read(o.getSumsAttr());
        write(o.getStagingAttr());
      })
      .Default([](Operation *) {});
}
