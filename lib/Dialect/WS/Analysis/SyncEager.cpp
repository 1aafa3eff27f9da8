//===- SyncEager.cpp - Eager completion of tensor-core products ----------===//
//
// sm_100a: the tensor cores finish the product at the head of the MMA
// warp's queue at any later point. Where, in a state, no other agent can
// take a step that depends on that completion before it happens, the
// search completes it right away and explores no other successor there (a
// persistent set, Godefroid LNCS 1032, as for the copies that land eagerly
// in SyncCheck.cpp). Unlike eager landing this is decided per state: the
// happens-before argument runs through the other roles' pipes (P over the
// sibling's S is ordered through the token pipes), so it depends on where
// each role stands. The conditions (docs/design.md "Eager completion"):
//  (e) the product's cells: every step another role can reach before a
//      wait it cannot pass (below) reads none of the cells the product
//      writes and writes none it reads or writes; the same for the copies
//      such steps issue and the copies in flight;
//  (f) the commits that drain with it (those right behind it in the queue,
//      and the MMA warp's commits up to its next product): no such step
//      waits on or arrives at their barriers, or issues a copy against
//      them, so no wait's outcome (or parity) depends on when they drain;
//  (g) a wait cannot pass before the product completes when its phase is
//      the barrier's next one (no parity aliasing) and every arrival that
//      completes that phase comes from the MMA warp (its arrivals are
//      commits, which the queue holds behind the product) or from one role
//      that is itself held by such waits without arriving on the barrier
//      first (a greatest fixed point over the roles: the first role to pass
//      one of these waits would need an arrival that comes only after);
//  (h) the MMA warp's own steps before the product completes issue
//      products and commits (they queue behind it: enqueue and completion
//      commute) and satisfy (e)-(f) for everything else.
// Walks follow each role's program from where it stands, through every
// skip region, across the loop's back edge and into the epilogue and the
// next tile wherever the trip-count interval leaves that open; a step whose
// block the interval does not decide counts as touching every stage.
//
//===----------------------------------------------------------------------===//
#include "SyncModel.h"

using namespace mlir;
using namespace blasst;
using namespace blasst::ws;
using namespace blasst::ws::sync;

std::optional<Model::Blk> Model::decidedBlock(const Instr &in, int64_t tile,
                                              int64_t n) const {
  auto saved = split;
  split.reset();
  Blk b = blockAt(in, tile, n);
  bool undecided = split.has_value();
  split = saved;
  if (undecided)
    return std::nullopt;
  return b;
}

void Model::planEagerProducts() {
  arriver.assign(numMbar, -1);
  if (mmaRole < 0)
    return;
  auto roleNamed = [&](StringRef name) {
    for (auto [i, p] : llvm::enumerate(roles))
      if (p.role.getSymName() == name)
        return int(i);
    return -1;
  };
  for (auto [p, pipe] : llvm::enumerate(pipes)) {
    bool copies = false;
    for (const RoleProg &prog : roles)
      for (const std::vector<Instr> &seg : prog.seg)
        for (const Instr &in : seg)
          copies |= in.kind == Instr::Kind::TmaIssue && in.pipe == int(p);
    int producer = copies ? -1 : roleNamed(pipe.getProducer());
    int consumer =
        pipe.getConsumers().size() == 1
            ? roleNamed(
                  cast<FlatSymbolRefAttr>(pipe.getConsumers()[0]).getValue())
            : -1;
    for (int64_t st = 0; st < depth(int(p)); ++st) {
      arriver[fullBase[p] + st] = producer;
      arriver[emptyBase[p] + st] = consumer;
    }
  }
}

template <typename F>
bool Model::forEachFuture(const State &s, int r, F &&visit) const {
  // A path knows more about the trip count of its tile than the state: the
  // loop's next iteration runs only where its block exists, the epilogue
  // only where it does not ([lo, hi], the tile's interval on this path).
  struct Pos {
    int seg, idx;
    int64_t n, tile, lo, hi;
    /// The phases this path's waits passed: (mbarrier, phases completed).
    PassedWaits passed;
  };
  if (role(s, r, RSeg) == kDone)
    return true;
  SmallVector<Pos, 4> stack;
  int64_t tile0 = role(s, r, RTile);
  stack.push_back({role(s, r, RSeg),
                   role(s, r, RIdx),
                   role(s, r, RN),
                   tile0,
                   tripLo[clampTile(tile0)],
                   tripHi[clampTile(tile0)],
                   {}});
  const RoleProg &prog = roles[r];
  int budget = 8192;
  while (!stack.empty()) {
    Pos p = stack.pop_back_val();
    while (true) {
      if (p.idx >= int(prog.seg[p.seg].size())) {
        if (p.seg == 2) {
          if (p.tile + 1 >= numTiles)
            break;
          p = {0,
               0,
               0,
               p.tile + 1,
               tripLo[p.tile + 1],
               tripHi[p.tile + 1],
               std::move(p.passed)};
          continue;
        }
        // Block k exists on the loop's path (trip >= k + 1), not on the
        // epilogue's (trip <= k).
        int64_t k = p.seg == 0 ? 0 : p.n + 1;
        Pos loop = p, out = p;
        loop.seg = 1;
        loop.idx = 0;
        loop.n = k;
        loop.lo = std::max(p.lo, k + 1);
        out.seg = 2;
        out.idx = 0;
        out.n = p.seg == 0 ? 0 : k;
        out.hi = std::min(p.hi, k);
        bool canLoop = loop.lo <= loop.hi, canExit = out.lo <= out.hi;
        if (canLoop && canExit)
          stack.push_back(out);
        if (!canLoop && !canExit)
          break;
        p = canLoop ? loop : out;
        continue;
      }
      if (--budget < 0)
        return false;
      int64_t t = clampTile(p.tile);
      int64_t savedLo = tripLo[t], savedHi = tripHi[t];
      tripLo[t] = p.lo;
      tripHi[t] = p.hi;
      Visit v = visit(prog.seg[p.seg][p.idx], p.tile, p.n, p.passed);
      tripLo[t] = savedLo;
      tripHi[t] = savedHi;
      if (v == Visit::Fail)
        return false;
      if (v == Visit::End)
        break;
      ++p.idx;
    }
  }
  return true;
}

bool Model::touchesProduct(const Instr &in, const std::optional<Blk> &b) const {
  for (auto *list : {&in.effects, &in.skipEffects})
    for (const Effect &e : *list) {
      // Bit 1: the product reads the cell, bit 2: it writes it.
      uint8_t need = e.write ? 3 : 2;
      bool any = false;
      for (int c : e.cells)
        for (int st = 0; st < e.stages && !any; ++st)
          any = productCells[c + st * e.stageStride] & need;
      if (!any)
        continue;
      if (e.stages == 1)
        return true;
      if (!b || b->abs < 0)
        return true;
      int stage = int(b->abs % e.stages);
      for (int c : e.cells)
        if (productCells[c + stage * e.stageStride] & need)
          return true;
    }
  return false;
}

const char *Model::productEagerFails(const State &s, int &who) {
  who = -1;
  const int32_t *head = &s[offQueue + 1];
  const Instr &h = *instrs[head[0]];
  bool skipped = head[1] & kSkippedEntry;
  int64_t hTile = head[2];
  std::optional<Blk> hb = decidedBlock(h, hTile, head[1] & ~kSkippedEntry);
  if (!hb)
    return "its block is not decided";
  // The product's cells (bit 1 read, bit 2 written).
  productCells.assign(numCells, 0);
  for (const Effect &e : skipped ? h.skipEffects : h.effects) {
    int stage = e.stages > 1 ? int(hb->abs % e.stages) : 0;
    for (int c : e.cells)
      productCells[c + stage * e.stageStride] |= e.write ? 2 : 1;
  }
  // The barriers of the commits that may drain with it.
  drained.assign(numMbar, 0);
  auto markArrive = [&](const Instr &in, const std::optional<Blk> &b,
                        std::vector<uint8_t> &set) {
    int base = in.producer ? fullBase[in.pipe] : emptyBase[in.pipe];
    if (b && b->exists) {
      set[base + int(b->stage)] = 1;
      return;
    }
    for (int64_t st = 0; st < depth(in.pipe); ++st)
      set[base + st] = 1;
  };
  bool productBehind = false;
  for (int i = 1; i < s[offQueue] && !productBehind; ++i) {
    const int32_t *e = &s[offQueue + 1 + i * kQueueFields];
    const Instr &in = *instrs[e[0]];
    if (in.kind != Instr::Kind::PipeArrive) {
      productBehind = true;
      break;
    }
    markArrive(in, decidedBlock(in, e[2], e[1] & ~kSkippedEntry), drained);
  }
  if (!productBehind &&
      !forEachFuture(
          s, mmaRole,
          [&](const Instr &in, int64_t tile, int64_t n, PassedWaits &) {
            // The next product ends the drain: issued, or in a skipped block
            // its renaming entry (either way queued), where its block exists.
            if (in.kind == Instr::Kind::MmaIssue &&
                (!in.inSkip || !in.skipEffects.empty())) {
              std::optional<Blk> b = decidedBlock(in, tile, n);
              if (b && b->exists)
                return Visit::End;
            }
            if (in.kind == Instr::Kind::PipeArrive)
              markArrive(in, decidedBlock(in, tile, n), drained);
            return Visit::Next;
          }))
    return "the MMA warp's next commits are too many to follow";
  // Whether a step touches a drained barrier: waits on, arrives at, or (a
  // copy) checks and completes.
  auto touchesDrain = [&](const Instr &in, const std::optional<Blk> &b) {
    if (in.pipe < 0)
      return false;
    auto hit = [&](int base) {
      if (b && b->exists)
        return drained[base + int(b->stage)] != 0;
      for (int64_t st = 0; st < depth(in.pipe); ++st)
        if (drained[base + st])
          return true;
      return false;
    };
    switch (in.kind) {
    case Instr::Kind::PipeWait:
      return hit(in.producer ? emptyBase[in.pipe] : fullBase[in.pipe]);
    case Instr::Kind::PipeArrive:
      return hit(in.producer ? fullBase[in.pipe] : emptyBase[in.pipe]);
    case Instr::Kind::TmaIssue:
      return hit(emptyBase[in.pipe]) || hit(fullBase[in.pipe]);
    default:
      return false;
    }
  };
  // Copies in flight.
  for (int i = offCopies; i < int(s.size()); i += kCopyFields) {
    int p = s[i], st = s[i + 1];
    if (drained[fullBase[p] + st])
      return "a copy in flight completes a barrier that drains with it";
    Blk cb;
    cb.stage = st;
    cb.abs = perBlock(p) ? int64_t(s[i + 2]) * depth(p) + st : 0;
    if (touchesProduct(*instrs[s[i + 4]], cb))
      return "a copy in flight writes storage it touches";
  }
  // The roles, held by waits they cannot pass before it completes: a
  // greatest fixed point (each round assumes the arrivals found so far).
  int numRoles = int(roles.size());
  roleArrivals.assign(size_t(numRoles) * numMbar, 0);
  std::vector<uint8_t> mine(numMbar);
  const char *reason = nullptr;
  // The (role, mbarrier) pairs each role's walk relied on being quiet: a
  // role is walked again only when one of them arrives after all.
  relied.resize(numRoles);
  for (auto &v : relied)
    v.clear();
  for (int round = 0; round <= numRoles * numMbar + 1; ++round) {
    bool changed = false;
    for (int r = 0; r < numRoles; ++r) {
      if (round > 0 && llvm::none_of(relied[r], [&](std::pair<int, int> am) {
            return roleArrivals[size_t(am.first) * numMbar + am.second] != 0;
          }))
        continue;
      relied[r].clear();
      std::fill(mine.begin(), mine.end(), 0);
      auto held = [&](int m) {
        int a = arriver[m];
        if (a == mmaRole)
          return true;
        if (a < 0 || a == r || roleArrivals[size_t(a) * numMbar + m])
          return false;
        relied[r].push_back({a, m});
        return true;
      };
      bool ok = forEachFuture(
          s, r,
          [&](const Instr &in, int64_t tile, int64_t n, PassedWaits &passed) {
            switch (in.kind) {
            case Instr::Kind::PipeWait: {
              std::optional<Blk> b = decidedBlock(in, tile, n);
              if (!in.inSkip && b && b->exists) {
                int m = (in.producer ? emptyBase[in.pipe] : fullBase[in.pipe]) +
                        int(b->stage);
                int64_t need = in.phasesNeeded(b->round);
                // The phases an earlier wait of this path passed completed
                // before this one runs.
                int64_t done = mbar(s, m)[MCompleted];
                for (auto &[pm, pd] : passed)
                  if (pm == m)
                    done = std::max(done, pd);
                if (done == need - 1 && held(m))
                  return Visit::End;
                if (done < need)
                  passed.push_back({m, need});
                if (done < need - 1) {
                  reason = "a wait more than one phase ahead";
                  return Visit::Fail;
                }
              }
              if (touchesDrain(in, b)) {
                reason = "a wait on a barrier that drains with it";
                return Visit::Fail;
              }
              return Visit::Next;
            }
            case Instr::Kind::PipeArrive: {
              if (r == mmaRole)
                return Visit::Next; // a commit: queued behind it
              std::optional<Blk> b = decidedBlock(in, tile, n);
              if (touchesDrain(in, b)) {
                reason = "an arrival on a barrier that drains with it";
                return Visit::Fail;
              }
              markArrive(in, b, mine);
              return Visit::Next;
            }
            case Instr::Kind::TmaIssue: {
              std::optional<Blk> b = decidedBlock(in, tile, n);
              if (touchesDrain(in, b)) {
                reason = "a copy against a barrier that drains with it";
                return Visit::Fail;
              }
              if (touchesProduct(in, b)) {
                reason = "a copy into storage it touches";
                return Visit::Fail;
              }
              return Visit::Next;
            }
            case Instr::Kind::Access:
            case Instr::Kind::LoadVote:
              if (touchesProduct(in, decidedBlock(in, tile, n))) {
                reason = "a step on storage it touches";
                return Visit::Fail;
              }
              return Visit::Next;
            default:
              // Products and commits queue behind it; named barriers, votes
              // and vote barriers are none of its business.
              return Visit::Next;
            }
          });
      if (!ok) {
        who = r;
        return reason ? reason : "a walk too long to follow";
      }
      uint8_t *have = &roleArrivals[size_t(r) * numMbar];
      for (int m = 0; m < numMbar; ++m)
        if (mine[m] && !have[m]) {
          have[m] = 1;
          changed = true;
        }
    }
    if (!changed)
      return nullptr;
  }
  return "no fixed point";
}
