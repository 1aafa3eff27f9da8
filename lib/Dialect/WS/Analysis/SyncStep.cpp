//===- SyncStep.cpp - What each modelled step does, and the traces ------===//
//
// The semantics the sync checker gives each step (mbarrier waits with the
// parity window, arrivals, copies landing later, named barriers, vote
// slots), the checks at exit, and the text of a violation's trace.
//
//===----------------------------------------------------------------------===//
#include "SyncModel.h"

#include <chrono>
#include <deque>

using namespace mlir;
using namespace blasst;
using namespace blasst::ws;
using namespace blasst::ws::sync;

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
  if (explain)
    why = (llvm::Twine("waits on ") + mbarName(m) + " for phase " +
           llvm::Twine(need - 1) + " (" + llvm::Twine(done) + " completed)")
              .str();
  return false;
}

bool Model::arrive(State &t, const Instr &in, const Blk &b, bool noBytes,
                   int consumer) {
  int p = in.pipe;
  auto fail = [&](const llvm::Twine &msg) {
    if (!violation)
      violation = Violation{msg.str(), in.op};
    return false;
  };
  if (shallow[p] && !ringAgrees(t, in, b, /*arrival=*/true))
    return false;
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
  bar[MTx] += int32_t(noBytes ? 0 : in.tx);
  completeIfDone(t, m);
  if (!in.producer && consumer >= 0 &&
      held(t, p, int(b.stage), consumer) == b.round)
    held(t, p, int(b.stage), consumer) = -1;
  return true;
}

bool Model::readVotes(State &s, int64_t block, Operation *op, std::string &why,
                      bool &allSkip) {
  int parity = int(block % 2);
  if (!waitOn(s, voteBase + parity, votePhase(block) + 1, op, why))
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

/// Steps that block: a block of steps run atomically starts with one.
static bool isWait(const Instr &in) {
  switch (in.kind) {
  case Instr::Kind::PipeWait:
  case Instr::Kind::NamedSync:
  case Instr::Kind::AwaitVote:
  case Instr::Kind::ReadLastVotes:
  case Instr::Kind::Vote:
    return true;
  default:
    return false;
  }
}
/// Steps that enable another agent (an arrival, a copy or a product
/// issued): only such steps may follow one in an atomic block.
static bool isRelease(const Instr &in) {
  switch (in.kind) {
  case Instr::Kind::PipeArrive:
  case Instr::Kind::NamedArrive:
  case Instr::Kind::TmaIssue:
  case Instr::Kind::MmaIssue:
    return true;
  default:
    return false;
  }
}

/// A step that touches only its own role's state: an sm_100a vote (a
/// keep/skip choice the role keeps to itself; the decision reaches the
/// others through ws.store_vote). It commutes with every step of every other
/// agent, so it may join any atomic block.
static bool isLocal(const Instr &in) {
  return in.kind == Instr::Kind::Vote && !in.publish;
}

// Partial-order reduction (Lipton's movers): a role's step is run together
// with the steps after it up to the next wait, as long as no storage access
// follows an arrival. Waits only read barrier state, storage accesses enable
// nobody, arrivals only enable others; so every behaviour of the
// step-by-step model -- a deadlock, a wrong value read, a barrier misuse --
// has an equivalent interleaving of the blocks. A local step (isLocal)
// joins the block wherever it comes; where it branches (a vote: keep or
// skip) the block continues on each branch.
void Model::stepRole(const State &s, int r,
                     SmallVectorImpl<std::pair<State, Label>> &out,
                     std::string &why) {
  SmallVector<std::pair<State, Label>> first;
  stepOnce(s, r, first, why);
  for (auto &[t, l] : first) {
    if (violation || modelBound)
      return;
    bool released = l.instr && isRelease(*l.instr);
    extendBlock(std::move(t), std::move(l), {}, released, r, out);
    if (violation || modelBound)
      return;
  }
}

void Model::extendBlock(State t, Label l, std::vector<Label> chain,
                        bool released, int r,
                        SmallVectorImpl<std::pair<State, Label>> &out) {
  while (true) {
    const Instr *next = current(t, r);
    if (!next ||
        (!isLocal(*next) && (isWait(*next) || (released && !isRelease(*next)))))
      break;
    SmallVector<std::pair<State, Label>> one;
    std::string ignored;
    stepOnce(t, r, one, ignored);
    if (violation || modelBound) {
      // The trace shows the steps of the block before the violation.
      violationSteps.assign(1, l);
      llvm::append_range(violationSteps, chain);
      violationActor = r;
      return;
    }
    if (one.empty())
      break;
    if (one.size() > 1) {
      for (auto &[u, ul] : one) {
        std::vector<Label> c = chain;
        c.push_back(ul);
        extendBlock(std::move(u), l, std::move(c), released || isRelease(*next),
                    r, out);
        if (violation || modelBound)
          return;
      }
      return;
    }
    t = std::move(one[0].first);
    chain.push_back(one[0].second);
    released |= isRelease(*next);
  }
  if (!chain.empty())
    l.then = std::make_shared<std::vector<Label>>(std::move(chain));
  out.push_back({std::move(t), std::move(l)});
}

void Model::stepOnce(const State &s, int r,
                     SmallVectorImpl<std::pair<State, Label>> &out,
                     std::string &why) {
  const Instr *inp = current(s, r);
  if (!inp)
    return;
  const Instr &in = *inp;
  const RoleProg &prog = roles[r];
  State t = s;
  Label label;
  label.actor = r;
  label.instr = &in;
  auto fail = [&](const llvm::Twine &msg) {
    if (!violation)
      violation = Violation{msg.str(), in.op};
  };
  // A skipped block's region runs nothing. A skipped P V of sm_100a's MMA
  // warp issues nothing either; its queue entry only renames O (through the
  // block before = through this one) in issue order.
  static constexpr RoleField kDecision[] = {RSkip, RSkip1, RSkip2};
  if (in.keptFrom >= 0) {
    // kept_ahead: the decisions n - keptFrom .. n - keptFrom - keptRun + 1
    // (0: RSkip, the latest; i > 0: bit i - 1 of RHist).
    bool allKept = true;
    int exact = prog.histCap >= 0 ? prog.histExact : 1 << 30;
    int32_t hist = int32_t(role(s, r, RHist));
    for (int i = in.keptFrom; i < in.keptFrom + in.keptRun; ++i)
      if (i == 0 || i - 1 < exact)
        allKept &= !(i == 0 ? role(s, r, RSkip) : (hist >> (i - 1)) & 1);
    // Compressed: the decisions from histExact back on are a count of the
    // kept ones in a row.
    if (int count = in.keptFrom + in.keptRun - 1 - exact;
        prog.histCap >= 0 && count > 0)
      allKept &= (hist >> exact) >= count;
    if (allKept != in.keptWhen) {
      label.variant = 6;
      label.block = blockOf(in, s, r).local;
      advance(t, r);
      out.push_back({std::move(t), label});
      return;
    }
  }
  if (in.inSkip && role(s, r, kDecision[in.skipDepth])) {
    label.variant = 2;
    if (in.kind == Instr::Kind::MmaIssue && !in.skipEffects.empty()) {
      Blk b = blockOf(in, s, r);
      label.block = b.local;
      if (b.exists &&
          !enqueue(t, in, b, role(s, r, RTile), role(s, r, RN), true))
        return;
    }
    advance(t, r);
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
        if (shallow[p] && !ringAgrees(s, in, b, /*arrival=*/false))
          return;
        int m = fullBase[p] + int(b.stage);
        if (!waitOn(s, m, b.round, in.op, why))
          return;
        label.variant = 4;
      }
      advance(t, r);
      out.push_back({std::move(t), label});
      return;
    }
    if (shallow[p] && !ringAgrees(s, in, b, /*arrival=*/false))
      return;
    if (in.producer) {
      if (!waitOn(s, emptyBase[p] + int(b.stage), in.phasesNeeded(b.round),
                  in.op, why))
        return;
    } else {
      if (!waitOn(s, fullBase[p] + int(b.stage), in.phasesNeeded(b.round),
                  in.op, why))
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
    if (b.exists) {
      if (in.commit) {
        if (!enqueue(t, in, b, role(s, r, RTile), role(s, r, RN)))
          return;
      } else if (!arrive(t, in, b, in.onDemand && role(s, r, RSkip),
                         prog.consumerIdx[in.pipe])) {
        return;
      }
    }
    advance(t, r);
    out.push_back({std::move(t), label});
    return;
  }
  case Instr::Kind::MmaIssue: {
    if (!b.exists)
      label.variant = 3;
    else if (!enqueue(t, in, b, role(s, r, RTile), role(s, r, RN)))
      return;
    advance(t, r);
    out.push_back({std::move(t), label});
    return;
  }
  case Instr::Kind::Access: {
    // A prologue step on block 0 or a look-ahead past the end does not run;
    // an epilogue runs with or without blocks.
    bool runs = b.exists || in.block.kind == BlockRef::Kind::Last ||
                in.block.kind == BlockRef::Kind::Once || !prog.hasLoop;
    if (!runs)
      label.variant = 3;
    else {
      // ws.store_vote writes the role's decision.
      int32_t decision = role(s, r, RSkip);
      if (!applyEffects(t, in, b, role(s, r, RTile), r, &decision))
        return;
    }
    advance(t, r);
    out.push_back({std::move(t), label});
    return;
  }
  case Instr::Kind::LoadVote: {
    // The voter's decision on this block, for the skip regions after it.
    int32_t decision = 0;
    if (!applyEffects(t, in, b, role(s, r, RTile), r, &decision))
      return;
    role(t, r, RSkip) = decision;
    label.variant = decision;
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
                               int32_t(in.bytes), int32_t(in.id)});
      // Copies in flight form a multiset: keep them sorted.
      SmallVector<std::array<int32_t, kCopyFields>> copies;
      for (size_t i = 0; i < tail.size(); i += kCopyFields)
        copies.push_back(
            {tail[i], tail[i + 1], tail[i + 2], tail[i + 3], tail[i + 4]});
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
      if (explain)
        why = (llvm::Twine("waits on named barrier ") +
               llvm::Twine(named[in.named].id) + " (" +
               llvm::Twine(nb[NArrived]) + " of " + llvm::Twine(in.threads) +
               " threads arrived)")
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
    int64_t tile = role(s, r, RTile);
    auto beforeEnd = [&](int64_t k) { return k < 0 || blockExists(tile, k); };
    // The loop's vote decides block n + 1; the prologue's block 0.
    int64_t local = role(s, r, RSeg) == 0 ? 0 : role(s, r, RN) + 1;
    // The decision on the block past the end is not published; it matters
    // only where skip regions hold modelled steps.
    bool branch = prog.branchVotes &&
                  (prog.skipSteps || (in.publish && beforeEnd(local)));
    // sm_100a votes on its own block and always keeps block 0.
    if (blackwell) {
      local = b.local;
      branch &= local > 0;
    }
    for (int skip = 0; skip < (branch ? 2 : 1); ++skip) {
      State u = t;
      if (prog.skipHistory) {
        role(u, r, RSkip2) = role(u, r, RSkip1);
        role(u, r, RSkip1) = role(u, r, RSkip);
      }
      role(u, r, RSkip) = skip;
      if (in.publish && beforeEnd(local)) {
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
        if (bar[MCompleted] != votePhase(local))
          return fail(llvm::Twine("the vote on block ") + llvm::Twine(local) +
                      " arrives in phase " + llvm::Twine(bar[MCompleted]) +
                      " of " + mbarName(m) + ", not " +
                      llvm::Twine(votePhase(local)));
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
    if (int h = prog.keptHistory;
        h && (n == 0 || k == 0 || !role(s, r, RSub))) {
      // The decisions before block n: shift in block n - 1's (blocks before
      // 0 count as skipped).
      if (prog.histCap >= 0) {
        // The first histExact bits shift; the one leaving them (or the
        // latest, without exact bits) extends or resets the kept count.
        int e = prog.histExact;
        int32_t low = (1 << e) - 1, hist = int32_t(role(s, r, RHist));
        int32_t latest = role(s, r, RSkip) & 1;
        int32_t leaving = e == 0 ? latest : (hist >> (e - 1)) & 1;
        int32_t count =
            leaving ? 0 : std::min<int32_t>((hist >> e) + 1, prog.histCap);
        role(t, r, RHist) =
            n == 0 ? low : (((hist << 1) | latest) & low) | (count << e);
      } else {
        int32_t mask = (1 << h) - 1;
        role(t, r, RHist) =
            n == 0
                ? mask
                : ((role(s, r, RHist) << 1) | (role(s, r, RSkip) & 1)) & mask;
      }
    }
    if (n == 0 && !firstBlockVote) {
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
      // Whether block n - 1 was kept: known, or read from its votes now
      // (block -1 before a voted block 0: none, a run of 0).
      bool prevKept = n > 0 && role(s, r, RKept);
      if (n > 0 && !role(s, r, RKnown)) {
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
    int64_t tile = role(s, r, RTile);
    if (!role(s, r, RKnown) && blockExists(tile, 0))
      if (!readVotes(t, exactTrip(tile) - 1, in.op, why, allSkip))
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
  if (l.actor == -1) {
    os << "the copy into @" << pipes[l.copyPipe].getSymName() << " stage "
       << l.copyStage << " lands";
    return out;
  }
  if (l.actor == -2) {
    auto mma = cast<MmaOp>(l.instr->op);
    os << (mma.getKind() == MmaKind::qk ? "Q Kᵀ" : "P V") << " -> @"
       << mma.getD() << " (block " << l.block << ") "
       << (l.variant == 2 ? "skipped: O through it = O through the block "
                            "before"
                          : "completes");
    return out;
  }
  os << l.instr->op->getName().getStringRef();
  if (l.instr->kind == Instr::Kind::Access ||
      l.instr->kind == Instr::Kind::MmaIssue) {
    SmallVector<BufferAccess> acc;
    cast<StepOpInterface>(l.instr->op).getBufferAccesses(acc);
    for (auto [i, a] : llvm::enumerate(acc))
      os << (i ? ", " : " ") << (a.write ? "->" : "") << a.buffer;
  }
  if (l.instr->commit)
    os << " (commit)";
  if (auto a = dyn_cast<AcquireOp>(l.instr->op))
    os << " @" << a.getPipe() << (a.getDrain() ? " {drain}" : "");
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
  else if (l.block < 0 && !named)
    os << " (no KV block)";
  else if (l.variant == 4)
    os << " (block " << l.block << ": past the end)";
  else if (!named && l.instr->kind != Instr::Kind::ReadLastVotes)
    os << " (block " << l.block << ")";
  if (l.instr->kind == Instr::Kind::Vote ||
      l.instr->kind == Instr::Kind::LoadVote)
    os << (l.variant == 1 ? " skip" : " keep");
  if (l.variant == 2)
    os << " [skipped block]";
  if (l.variant == 6)
    os << (l.instr->keptWhen ? " [not run: a block before it was skipped]"
                             : " [not run: the blocks before it were kept]");
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
      if (n->label.actor == int(r)) {
        steps.push_back(describe(n->label));
        if (n->label.then)
          for (const Label &l : *n->label.then)
            if (l.actor == int(r)) // not the products completed with it
              steps.push_back(describe(l));
      }
    if (violationActor == int(r))
      for (const Label &l : violationSteps)
        steps.push_back(describe(l));
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
