//===- SyncData.cpp - Data flow in the sync checker ----------------------===//
//
// Which value each read of shared storage must see. Every buffer that owns
// storage (smem, tmem; aliases resolved) is cut into cells: its stages, each
// split into rows x columns wherever some access begins or ends (P over part
// of S). A cell holds a symbolic value: what the algorithm put there (Q of
// the tile, K or V of a block, S or P of a block, the correction factors of
// a block, O accumulated through or rescaled for a block, the row sums, an
// output tile). A step's writes set the cells; its reads must find exactly
// the value attention needs (P V of block n reads P and V of block n and O
// rescaled for block n; the correction of block n reads that block's
// factors and O through block n - 1). Only cells two agents touch are
// modelled (a role, TMA, the tensor cores of sm_100a's MMA warp); a role's
// private storage follows program order and is checked in checkRoleLocal.
//
// sm_100a's MMA warp issues products that the tensor cores run in issue
// order (PTX ISA: tcgen05.mma from one thread are pipelined in order); each
// release of that warp is a tcgen05.commit, which arrives once every
// product issued before it is done. The queue of products and commits is
// part of the state; the tensor cores finish its head at any time.
//
//===----------------------------------------------------------------------===//
#include "SyncModel.h"

#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace blasst;
using namespace blasst::ws;
using namespace blasst::ws::sync;

void Model::effectsOf(Operation *op, RoleOp role, Instr &in) {
  auto add = [&](FlatSymbolRefAttr name, bool write, VKind kind,
                 Effect::Tag tag, int ordinal = 0) {
    if (!name)
      return;
    auto buf = dyn_cast_or_null<BufferOp>(
        SymbolTable::lookupSymbolIn(kernel, name.getAttr()));
    if (!buf || buf.getSpace() == MemorySpace::regs)
      return;
    Effect e;
    e.write = write;
    e.kind = kind;
    e.tag = tag;
    e.ordinal = ordinal;
    e.buffer = buf;
    e.region = protocol.regionOf(buf, role);
    in.effects.push_back(e);
  };
  // The j-th op of this kind in the role (epilogues, stores).
  auto ordinalOf = [&](Operation *o) {
    int j = 0;
    bool found = false;
    role.walk([&](Operation *x) {
      if (x == o)
        found = true;
      else if (!found && x->getName() == o->getName())
        ++j;
    });
    return j;
  };
  using Tag = Effect::Tag;
  // Whether O's P V follows a correction role's rescale (sm_100a).
  auto rescaledElsewhere = [&](FlatSymbolRefAttr acc) {
    bool found = false;
    kernel.walk([&](CorrectOp c) {
      found |= c.getAccAttr() == acc && c.getFactorsAttr() != nullptr;
    });
    return found;
  };
  // Score steps other than ws.read_scores work on the registers it loaded
  // (tcgen05.ld); only it reads the scores in tensor memory.
  auto scoresRead = [&](FlatSymbolRefAttr scores) {
    auto buf = dyn_cast_or_null<BufferOp>(
        SymbolTable::lookupSymbolIn(kernel, scores.getAttr()));
    if (buf && buf.getSpace() == MemorySpace::tmem && !isa<ReadScoresOp>(op))
      return;
    add(scores, false, VKind::S, Tag::Block);
  };
  llvm::TypeSwitch<Operation *>(op)
      .Case([&](TmaLoadOp o) {
        switch (o.getTensor()) {
        case Tensor::q:
          add(o.getDstAttr(), true, VKind::Q, Tag::Tile);
          break;
        case Tensor::k:
          add(o.getDstAttr(), true, VKind::K, Tag::Block);
          break;
        case Tensor::v:
          add(o.getDstAttr(), true, VKind::V, Tag::Block);
          break;
        default:
          break;
        }
      })
      .Case([&](MmaOp o) {
        if (o.getKind() == MmaKind::qk) {
          add(o.getAAttr(), false, VKind::Q, Tag::Tile);
          add(o.getBAttr(), false, VKind::K, Tag::Block);
          add(o.getDAttr(), true, VKind::S, Tag::Block);
          return;
        }
        add(o.getAAttr(), false, VKind::P, Tag::Block);
        add(o.getBAttr(), false, VKind::V, Tag::Block);
        if (rescaledElsewhere(o.getDAttr()))
          add(o.getDAttr(), false, VKind::C, Tag::Block);
        else
          add(o.getDAttr(), false, VKind::A, Tag::PrevBlock);
        add(o.getDAttr(), true, VKind::A, Tag::Block);
      })
      .Case([&](LoadFragOp o) { add(o.getSrcAttr(), false, VKind::Q, Tag::Tile); })
      .Case<ReadScoresOp, VoteOp, Exp2Op, RowMaxOp>(
          [&](auto o) { scoresRead(o.getScoresAttr()); })
      .Case([&](SoftmaxUpdateOp o) {
        scoresRead(o.getScoresAttr());
        add(o.getFactorsAttr(), true, VKind::F, Tag::Block);
      })
      .Case([&](Exp2StoreOp o) {
        scoresRead(o.getScoresAttr());
        add(o.getPAttr(), true, VKind::P, Tag::Block);
      })
      .Case([&](CorrectOp o) {
        add(o.getFactorsAttr(), false, VKind::F, Tag::Block);
        add(o.getAccAttr(), false, VKind::A, Tag::PrevBlock);
        add(o.getAccAttr(), true, VKind::C, Tag::Block);
      })
      .Case([&](StoreRowSumsOp o) {
        add(o.getDstAttr(), true, VKind::L, Tag::Tile);
      })
      .Case([&](StoreVoteOp o) {
        add(o.getWordAttr(), true, VKind::D, Tag::Block);
      })
      .Case([&](LoadVoteOp o) {
        add(o.getWordAttr(), false, VKind::D, Tag::Block);
      })
      .Case([&](EpilogueOp o) {
        add(o.getAccAttr(), false, VKind::A, Tag::LastBlock);
        add(o.getSumsAttr(), false, VKind::L, Tag::Tile);
        add(o.getStagingAttr(), true, VKind::E, Tag::Ordinal, ordinalOf(o));
      })
      .Case([&](TmaStoreOp o) {
        add(o.getSrcAttr(), false, VKind::E, Tag::Ordinal, ordinalOf(o));
      })
      .Default([](Operation *) {});
}

void Model::skippedEffectsOf(Operation *op, RoleOp role, Instr &in) {
  auto mma = dyn_cast<MmaOp>(op);
  if (!mma || mma.getKind() != MmaKind::pv)
    return;
  // The O the rescale of a skipped block left alone (it skips too): O
  // through the block before, which is O through this one.
  Instr tmp;
  effectsOf(op, role, tmp);
  for (Effect &e : tmp.effects) {
    if (e.buffer.getSymName() != mma.getD() || !e.write)
      continue;
    Effect read = e;
    read.write = false;
    read.tag = Effect::Tag::PrevBlock;
    in.skipEffects = {read, e};
  }
}

void Model::buildCells() {
  // Cut each owner where an access begins or ends.
  SmallVector<Effect *> all;
  for (RoleProg &p : roles)
    for (std::vector<Instr> &seg : p.seg)
      for (Instr &in : seg)
        for (auto *list : {&in.effects, &in.skipEffects})
          for (Effect &e : *list)
            all.push_back(&e);
  for (Effect *e : all) {
    Cells &c = cells[e->region.buffer.getOperation()];
    c.rowCuts.append({e->region.rowBegin, e->region.rowEnd});
    c.colCuts.append({e->region.colBegin, e->region.colEnd});
  }
  for (auto &[op, c] : cells) {
    llvm::sort(c.rowCuts);
    c.rowCuts.erase(llvm::unique(c.rowCuts), c.rowCuts.end());
    llvm::sort(c.colCuts);
    c.colCuts.erase(llvm::unique(c.colCuts), c.colCuts.end());
    c.stages = int(cast<BufferOp>(op).getStages());
  }
  // Stable cell numbering: in buffer order.
  for (BufferOp b : kernel.getBody().getOps<BufferOp>()) {
    auto it = cells.find(b.getOperation());
    if (it == cells.end())
      continue;
    it->second.base = numCells;
    numCells += it->second.stages * it->second.perStage();
  }
  for (Effect *e : all) {
    const Cells &c = cells[e->region.buffer.getOperation()];
    size_t nc = c.colCuts.size() - 1;
    for (size_t ri = 0; ri + 1 < c.rowCuts.size(); ++ri)
      for (size_t ci = 0; ci < nc; ++ci)
        if (c.rowCuts[ri] >= e->region.rowBegin &&
            c.rowCuts[ri + 1] <= e->region.rowEnd &&
            c.colCuts[ci] >= e->region.colBegin &&
            c.colCuts[ci + 1] <= e->region.colEnd)
          e->cells.push_back(c.base + int(ri * nc + ci));
    e->stages = c.stages;
    e->stageStride = c.perStage();
  }
  // The agents that touch each cell: a role, TMA or the tensor cores.
  int tmaAgent = int(roles.size()), tensorAgent = tmaAgent + 1;
  std::vector<llvm::SmallSet<int, 4>> agents(numCells);
  for (auto [r, p] : llvm::enumerate(roles))
    for (std::vector<Instr> &seg : p.seg)
      for (Instr &in : seg) {
        int agent = in.kind == Instr::Kind::TmaIssue   ? tmaAgent
                    : in.kind == Instr::Kind::MmaIssue ? tensorAgent
                                                       : int(r);
        for (Effect &e : in.effects)
          for (int cell : e.cells)
            for (int st = 0; st < e.stages; ++st)
              agents[cell + st * e.stageStride].insert(agent);
      }
  // Keep effects on shared cells; drop storage steps with none left.
  for (RoleProg &p : roles)
    for (std::vector<Instr> &seg : p.seg) {
      for (Instr &in : seg)
        llvm::erase_if(in.effects, [&](const Effect &e) {
          return llvm::all_of(e.cells,
                              [&](int c) { return agents[c].size() < 2; });
        });
      llvm::erase_if(seg, [](const Instr &in) {
        return in.kind == Instr::Kind::Access && in.effects.empty();
      });
    }
}

std::string Model::valueName(int32_t v) const {
  auto kind = VKind(v >> kTagBits);
  int64_t tag = v & ((1 << kTagBits) - 1);
  std::string out;
  llvm::raw_string_ostream os(out);
  switch (kind) {
  case VKind::None:
    return "nothing (never written)";
  case VKind::Q:
    os << "Q of tile " << tag;
    break;
  case VKind::K:
    os << "K of block " << tag;
    break;
  case VKind::V:
    os << "V of block " << tag;
    break;
  case VKind::S:
    os << "S of block " << tag;
    break;
  case VKind::P:
    os << "P of block " << tag;
    break;
  case VKind::F:
    os << "the correction factors of block " << tag;
    break;
  case VKind::L:
    os << "the row sums of tile " << tag;
    break;
  case VKind::A:
    os << "O accumulated through block " << tag;
    break;
  case VKind::C:
    os << "O rescaled for block " << tag;
    break;
  case VKind::E:
    os << "output tile " << (tag % 16) << " of tile " << (tag / 16);
    break;
  case VKind::D:
    os << "the decision on block " << (tag / 2) << " ("
       << (tag % 2 ? "skip" : "keep") << ")";
    break;
  }
  return out;
}

bool Model::applyEffects(State &t, const Instr &in, const Blk &b, int64_t tile,
                         int actor, int32_t *decision, bool skipped) {
  for (const Effect &e : skipped ? in.skipEffects : in.effects) {
    BufferOp buffer = e.buffer;
    bool any = false;
    int64_t tag = 0;
    switch (e.tag) {
    case Effect::Tag::Tile:
      tag = tile;
      break;
    case Effect::Tag::Block:
      tag = b.abs;
      break;
    case Effect::Tag::PrevBlock:
      tag = b.abs - 1;
      any = b.local <= 0;
      break;
    case Effect::Tag::LastBlock: {
      int64_t trip = exactTrip(tile);
      tag = tileBase(tile) + trip - 1;
      any = trip == 0;
      break;
    }
    case Effect::Tag::Ordinal:
      tag = tile * 16 + e.ordinal;
      break;
    }
    bool word = e.kind == VKind::D;
    if (word)
      tag = tag * 2 + (e.write && decision ? *decision : 0);
    int32_t value = makeValue(e.kind, tag);
    int stage = e.stages > 1 ? int(b.abs % e.stages) : 0;
    for (int cell : e.cells) {
      int32_t &c = t[offCells + cell + stage * e.stageStride];
      if (e.write) {
        c = value;
        continue;
      }
      if (any || c == value)
        continue;
      // A decision word: either decision on this block, which the reader
      // takes.
      if (word && (c | 1) == (value | 1)) {
        if (decision)
          *decision = c & 1;
        continue;
      }
      // Which kind of hazard: the value is not there yet, or it is gone.
      bool early = c == 0 || (VKind(c >> kTagBits) == e.kind &&
                              (c & ((1 << kTagBits) - 1)) < tag);
      std::string who =
          actor >= 0 ? ("@" + roles[actor].role.getSymName()).str()
                     : actor == -2 ? std::string("the tensor cores")
                                   : std::string("a TMA copy");
      if (!violation)
        violation = Violation{
            (llvm::Twine(early ? "read before write: " : "value overwritten "
                                                         "before it was read: ") +
             who + " reads @" + buffer.getSymName() + " (stage " +
             llvm::Twine(stage) + ") expecting " +
             (word ? "the decision on block " + std::to_string(tag / 2)
                   : valueName(value)) +
             " but finds " + valueName(c))
                .str(),
            in.op};
      return false;
    }
  }
  return true;
}

bool Model::enqueue(State &t, const Instr &in, const Blk &b, int64_t tile,
                    int64_t loopN, bool skipped) {
  int32_t &count = t[offQueue];
  if (count >= kQueueCapacity) {
    modelBound = (llvm::Twine("more than ") + llvm::Twine(kQueueCapacity) +
                  " tensor-core products and commits in flight")
                     .str();
    return false;
  }
  int32_t *e = &t[offQueue + 1 + count * kQueueFields];
  e[0] = in.id;
  e[1] = int32_t(loopN) | (skipped ? kSkippedEntry : 0);
  e[2] = int32_t(tile);
  ++count;
  return drainCommits(t);
}

bool Model::drainCommits(State &t) {
  int32_t &count = t[offQueue];
  while (count > 0) {
    int32_t *head = &t[offQueue + 1];
    const Instr &in = *instrs[head[0]];
    if (in.kind != Instr::Kind::PipeArrive)
      return true;
    Blk b = blockAt(in, head[2], head[1]);
    if (!arrive(t, in, b, false, roles[mmaRole].consumerIdx[in.pipe]))
      return false;
    popQueue(t);
  }
  return true;
}

void Model::popQueue(State &t) const {
  int32_t &count = t[offQueue];
  int32_t *head = &t[offQueue + 1];
  std::copy(head + kQueueFields, head + count * kQueueFields, head);
  --count;
  // Unused entries stay zero: equal queues hash alike.
  std::fill(head + count * kQueueFields, head + (count + 1) * kQueueFields, 0);
}

void Model::stepTensorCores(const State &s,
                            SmallVectorImpl<std::pair<State, Label>> &out) {
  if (mmaRole < 0 || s[offQueue] == 0)
    return;
  State t = s;
  int32_t *head = &t[offQueue + 1];
  const Instr &in = *instrs[head[0]];
  int64_t tile = head[2];
  bool skipped = head[1] & kSkippedEntry;
  Blk b = blockAt(in, tile, head[1] & ~kSkippedEntry);
  if (!applyEffects(t, in, b, tile, -2, nullptr, skipped))
    return;
  popQueue(t);
  if (!drainCommits(t))
    return;
  Label l;
  l.actor = -2;
  l.instr = &in;
  l.block = b.local;
  if (skipped)
    l.variant = 2;
  out.push_back({std::move(t), l});
}

std::optional<Model::Violation>
Model::checkRoleLocal(const RoleProg &prog) {
  RoleOp role = prog.role;
  // Values a role must compute itself: a correction without `by` and an
  // epilogue without `sums` use the role's own running softmax state.
  bool ownSoftmax = false;
  role.walk([&](SoftmaxUpdateOp u) { ownSoftmax |= !u.getFactorsAttr(); });
  std::optional<Violation> v;
  role.walk([&](Operation *op) {
    if (v || ownSoftmax)
      return;
    if (auto c = dyn_cast<CorrectOp>(op); c && !c.getFactorsAttr())
      v = Violation{("data flow: ws.correct rescales @" + c.getAcc() +
                     " by each block's correction factor, but @" +
                     role.getSymName() +
                     " computes none (no ws.softmax_update of its own) and "
                     "no `by` buffer brings it from a softmax role")
                        .str(),
                    op};
    if (auto e = dyn_cast<EpilogueOp>(op); e && !e.getSumsAttr())
      v = Violation{("data flow: ws.epilogue normalises @" + e.getAcc() +
                     " by the row sums, but @" + role.getSymName() +
                     " computes none (no ws.softmax_update of its own) and "
                     "no `sums` buffer brings them from a softmax role")
                        .str(),
                    op};
  });
  // Scores in tensor memory: a score step needs the block's ws.read_scores
  // before it in the loop body (tcgen05.ld into the role's registers).
  role.walk([&](KVLoopOp loop) {
    llvm::SmallSet<StringRef, 2> loaded;
    loop.getBody().walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (v)
        return;
      if (auto r = dyn_cast<ReadScoresOp>(op)) {
        loaded.insert(r.getScores());
        return;
      }
      FlatSymbolRefAttr scores;
      if (auto o = dyn_cast<RowMaxOp>(op))
        scores = o.getScoresAttr();
      else if (auto o = dyn_cast<SoftmaxUpdateOp>(op))
        scores = o.getScoresAttr();
      else if (auto o = dyn_cast<Exp2StoreOp>(op))
        scores = o.getScoresAttr();
      else if (auto o = dyn_cast<VoteOp>(op))
        scores = o.getScoresAttr();
      if (!scores)
        return;
      auto buf = dyn_cast_or_null<BufferOp>(
          SymbolTable::lookupSymbolIn(kernel, scores.getAttr()));
      if (buf && buf.getSpace() == MemorySpace::tmem &&
          !loaded.contains(scores.getValue()))
        v = Violation{("data flow: " + op->getName().getStringRef() +
                       " works on the scores of " + scores.getValue() +
                       " in registers, but no ws.read_scores loaded them "
                       "from tensor memory earlier in the block")
                          .str(),
                      op};
    });
  });
  if (v)
    return v;

  // Asynchronous products of the role's own warpgroup (sm_90a wgmma):
  // issued, then retired by ws.mma_wait. Prologue, three loop iterations
  // (the steady state), epilogue, in program order.
  if (kernel.getTarget() != ws::Target::sm_90a)
    return std::nullopt;
  SmallVector<Operation *> order;
  for (Operation &top : role.getBody().front()) {
    if (auto loop = dyn_cast<KVLoopOp>(top)) {
      for (int it = 0; it < 3; ++it)
        loop.getBody().walk<WalkOrder::PreOrder>(
            [&](Operation *o) { order.push_back(o); });
      continue;
    }
    top.walk<WalkOrder::PreOrder>([&](Operation *o) { order.push_back(o); });
  }
  SmallVector<MmaOp> pending;
  auto bufName = [](FlatSymbolRefAttr a) { return "@" + a.getValue().str(); };
  for (Operation *op : order) {
    if (auto w = dyn_cast<MmaWaitOp>(op)) {
      int64_t keep = int64_t(w.getPending());
      if (int64_t(pending.size()) > keep)
        pending.erase(pending.begin(), pending.end() - keep);
      continue;
    }
    SmallVector<BufferAccess> acc;
    if (auto step = dyn_cast<StepOpInterface>(op))
      step.getBufferAccesses(acc);
    if (auto m = dyn_cast<MmaOp>(op)) {
      for (MmaOp p : pending)
        if (p.getDAttr() == m.getDAttr())
          return Violation{
              ("async hazard: two products into " + bufName(m.getDAttr()) +
               " without a ws.mma_wait between them (the second is issued "
               "while the first is in flight)")
                  ,
              op};
      if (m.getAsync())
        pending.push_back(m);
      else
        pending.clear(); // issued and waited for: every group retires
      continue;
    }
    for (MmaOp p : pending) {
      for (const BufferAccess &a : acc) {
        if (a.buffer == p.getDAttr())
          return Violation{("async hazard: " + op->getName().getStringRef() +
                            " touches " + bufName(a.buffer) +
                            " while the async product writing it is in "
                            "flight (no ws.mma_wait retires it first)")
                               .str(),
                           op};
        if (a.write && (a.buffer == p.getAAttr() || a.buffer == p.getBAttr()))
          return Violation{("async hazard: " + op->getName().getStringRef() +
                            " overwrites " + bufName(a.buffer) +
                            " while an async product still reads it")
                               .str(),
                           op};
      }
      if (auto rel = dyn_cast<ReleaseOp>(op)) {
        auto pipe = cast<PipeOp>(
            SymbolTable::lookupSymbolIn(kernel, rel.getPipeAttr().getAttr()));
        for (Attribute b : pipe.getBuffers())
          if (b == p.getAAttr() || b == p.getBAttr())
            return Violation{
                ("async hazard: releases @" + rel.getPipe() +
                 " while the async product reading " +
                 bufName(cast<FlatSymbolRefAttr>(b)) +
                 " is in flight (the producer may overwrite the stage)")
                    .str(),
                op};
      }
    }
  }
  if (!pending.empty())
    return Violation{"async hazard: a product is issued and never waited for",
                     pending.front()};
  return std::nullopt;
}
