//===- Passes.td - ws schedule transformations -------------*- tablegen -*-===//
#ifndef BLASST_WS_TRANSFORMS_PASSES
#define BLASST_WS_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

def BLASSTInsertVote : Pass<"blasst-insert-vote", "mlir::ModuleOp"> {
  let summary = "Insert the BLASST skip vote into kernels with a sparsity policy";
  let description = [{
    For every ws.kernel whose spec has a BLASST policy, in each role that
    computes row maxima inside its kv_loop: insert `ws.vote` right after the
    block's `ws.row_max`, and wrap every maximal run of skippable steps that
    follows it (softmax_update, exp2_store_p, exp2, pack_p, correct, the P·V
    mma) in `ws.unless_skipped`. Acquires and releases stay outside, so
    every mbarrier arrival happens on both paths and the pipeline never
    desynchronises; Q·Kᵀ and the K/V loads stay (prefill; --blasst-v-on-demand
    then leaves out the V copies of skipped blocks, all but those it issues
    before the votes after a run of kept blocks). On sm_100a the voters are
    the softmax roles; before each skip region that would hand a buffer on
    (the factors, P) each stores its decision in a word of that buffer's own
    (`ws.store_vote @vote_p0`, a new smem [1, 1] i32 buffer) under the same
    pipe, and the role that reads the buffer (the correction role, the MMA
    warp) reads the word (`ws.load_vote`) after its acquire of that pipe,
    before its own skip region around the rescale or P·V. Kernels with no sparsity policy
    are left untouched, so their code is byte-identical to a build without
    the pass.

    Split-KV decode kernels (`split_kv`) also get the **sink seed**
    (option `sink-seed`): each split's running max starts from the scores of
    the sequence's KV block 0 (the attention sink) instead of -inf, so a
    split that starts mid-sequence votes its leading blocks against the
    sink rather than keeping them until one of its own raises the max. The
    load role copies block 0's K once into a buffer of its own
    (`@sink`, pipe `@sink_pipe` of depth 1, `ws.tma_load k {sink}`), the
    compute role multiplies it before its prologue's block and takes its row
    maxima as the running max (`ws.row_max {sink}`); O and the row sums are
    untouched, so the result is the same softmax with fewer kept blocks.

    With the sink seed the running max is defined at each split's first
    block, so that block is voted on like the others (option
    `vote-first-block`): `ws.vote` after the prologue's `ws.row_max`, and
    block 0's `softmax_update` and `exp2_store_p` in a `ws.unless_skipped`
    before the kv_loop (its P·V, correction and, with V on demand, its V
    copy follow the same decision). Without it the first block of every
    split is kept.
  }];
  let options = [
    Option<"sinkSeed", "sink-seed", "std::string", /*default=*/"\"auto\"",
           "true: seed each split's running max from KV block 0 (an error "
           "where the kernel is not a split-KV decode kernel); false: a "
           "fresh -inf; auto: seeded for split-KV decode kernels">,
    Option<"voteFirstBlock", "vote-first-block", "std::string",
           /*default=*/"\"auto\"",
           "true: vote on each KV split's first block (needs the sink seed: "
           "an error without it); false: keep it; auto: what the schedule "
           "record says, else wherever the sink seed is">
  ];
  let dependentDialects = ["::blasst::ws::WSDialect"];
}

def BLASSTVOnDemand : Pass<"blasst-v-on-demand", "mlir::ModuleOp"> {
  let summary = "Load V only for KV blocks a BLASST vote kept";
  let description = [{
    For every voted ws.kernel (run after --blasst-insert-vote): the load
    role copies K one block ahead, waits for the consumers' votes on block n
    (`ws.await_vote`) and copies block n's V only when a voter kept it
    (`ws.tma_load v {on_demand}`); the votes publish their decisions. A
    skipped block then costs its K tile only: the L2 to shared memory
    traffic of V, about half of what a skipped block moves, is gone. After
    `speculate-after` kept blocks in a row (default 2; decode 0: it defers P V instead) the load role copies
    the next V without waiting for its votes, a block earlier: with nothing
    skippable the V copies are as early as without this pass, and a
    skipped block right after such a run costs one unread V copy. The
    V pipe's release still arrives on skipped blocks (no transaction
    bytes), so the consumers' waits and releases are unchanged.

    `k-ahead = A` copies K A blocks ahead (blocks 0 .. A - 1 before the
    loop): while the load role waits for the votes on block n, K of blocks
    n + 1 .. n + A are in flight. Decode kernels (q_group), bandwidth-bound,
    take the K pipe's depth by default: with one block ahead a run of
    skipped blocks would keep at most two K tiles in flight per CTA.
    `v-first` (auto: decode kernels) puts V(n)'s vote wait and copy before
    the copy of K(n + A): a speculated V copy then leaves as soon as its
    slot and the run's last vote allow instead of queueing behind K's slot.

    `k-kept-ahead = k` (auto: 2 for decode kernels with V first, K more
    than 2 blocks ahead and no speculation) makes the K copy depth follow
    the decisions (`ws.tma_load {kept_ahead, kept_run}`): while the last
    `k-kept-run` (default 6) blocks were all kept, K is copied k blocks
    ahead instead of A, so V(n), copied after its votes, does not queue
    behind K tiles issued A blocks ahead; after a skipped block the copies
    run A ahead again. With nothing skippable decode then streams like
    dense decode (measured on the H200: 0.94-0.96x of dense with K 4
    ahead, 1.00x with this), and runs of skipped blocks keep A K tiles in
    flight.

    `defer-pv` (auto: decode kernels without speculation) moves the compute
    role's P V of block n into the next iteration: `ws.acquire @v {ahead =
    -1}`, `ws.unless_skipped {ahead = -1} { ws.mma pv ... {ahead = -1} }`,
    `ws.release @v {ahead = -1}`, and block n's correction (`ws.correct
    {ahead = 0}` in a region `{ahead = 0}`) before P of block n + 1 is
    packed. The votes on block n still come from the Q Kᵀ of the iteration
    before, so V(n) is copied two iterations before its P V instead of one,
    and every decision is the same as without it. P of two blocks and the
    correction factor of one stay in registers across the back-edge; the
    loop runs one more iteration (the last block's P V).

    Needs the overlap schedule (the votes on block n + 1 come one block
    before that block's P V, which hides the V copy's latency), one CTA per
    tile (no persistent CTAs, no kv_multicast). Kernels without a sparsity
    policy are an error: nothing decides which V tiles are needed.

    `mode=auto` (what blasst-compile and the JIT use unless told) rewrites
    only the kernels where this applies and leaves the others as they are:
    BLASST kernels of the overlap schedule at head_dim <= 128 without
    ping-pong, persistent CTAs or kv_multicast. `mode=true` (the default) rewrites every kernel
    and fails with the reason on one it cannot rewrite. `mode=false` rewrites
    nothing (blasst-compile --v-on-demand=false). The pass records its
    decision in each kernel's schedule: `v_on_demand = true` where it
    rewrites, `false` (and no `v_speculate_after`) where it does not.
  }];
  let options = [
    Option<"mode", "mode", "std::string", /*default=*/"\"true\"",
           "true: every kernel (an error where it does not apply); auto: the "
           "kernels where it applies; false: none (the schedule record says "
           "so)">,
    Option<"speculateAfter", "speculate-after", "int64_t", /*default=*/"-1",
           "copy V without waiting for the votes after this many kept blocks "
           "in a row (ws.await_vote {speculate_after}); 0: always wait; -1: "
           "the kernel's schedule record (v_speculate_after), else 0 for "
           "decode kernels (q_group) and 2 otherwise">,
    Option<"kAhead", "k-ahead", "int64_t", /*default=*/"0",
           "how many blocks the K copies run ahead of the V copies, 1 to the "
           "K pipe's depth; 0: the K pipe's depth for decode kernels "
           "(q_group), 1 otherwise">,
    Option<"vFirst", "v-first", "std::string", /*default=*/"\"auto\"",
           "true: the loop copies V(n) (after its votes) before K(n + A); "
           "false: K(n + A) first; auto: V first for decode kernels "
           "(q_group)">,
    Option<"kKeptAhead", "k-kept-ahead", "int64_t", /*default=*/"-1",
           "while the last k-kept-run blocks were kept, copy K this many "
           "blocks ahead instead of k-ahead (1 .. k-ahead - 1); 0: always "
           "k-ahead; -1: 2 for decode kernels (q_group) with V first, "
           "k-ahead > 2 and no speculation, else 0">,
    Option<"kKeptRun", "k-kept-run", "int64_t", /*default=*/"-1",
           "how many kept blocks in a row switch K to k-kept-ahead (1-8); "
           "-1: 6. Given where the K depth does not follow the decisions, "
           "an error">,
    Option<"deferPV", "defer-pv", "std::string", /*default=*/"\"auto\"",
           "true: the compute role runs block n's P V one block later (in "
           "the iteration that votes on n + 2), so V(n) has two blocks to "
           "land; needs speculate-after 0; false: P V of block n in its own "
           "iteration; auto: deferred for decode kernels (q_group) that do "
           "not speculate">
  ];
  let dependentDialects = ["::blasst::ws::WSDialect"];
}

def BLASSTCrossStageP : Pass<"blasst-cross-stage-p", "mlir::ModuleOp"> {
  let summary = "Cross-stage P: each tile's P over its sibling's S, Q Kᵀ first";
  let description = [{
    In the two-tile sm_100a schedule P_t lies over its own S_t, so the next
    Q Kᵀ of tile t waits behind its exp2, P store and P V: BLASST's skipped
    exponentials turn into waiting. This pass moves each tile's P into the
    other half of the sibling's S region (`ws.buffer @p0 ... aliases @s1
    at [0, 64]`), so S_t is free the moment softmax_t has read it:
      - softmax_t releases S_t right after `ws.read_scores`, then hands a
        token to the sibling through a new pipe `@x<t>_pipe` (depth
        `depth`): "S_t of block n read";
      - tile 0 stores P_0 of block n over S_1 once S_1 of block n was read;
        tile 1 stores P_1 of block n over S_0 only once S_0 of block n + 1
        was read (`acquire @x0_pipe {ahead = 1}`), because the MMA warp
        issues Q_0 K_n+1ᵀ before P_1 V_n; taking block 0's token with
        block 1's in view is the one-block head start;
      - the MMA warp issues each tile's Q Kᵀ of block n + 1 before its
        P V of block n (Q_0 K_n+1ᵀ, P_0 V_n, Q_1 K_n+1ᵀ, P_1 V_n), each
        gated only by the S release;
      - `ws.exp2_store_p {hold}` records the store schedule (quarters of
        the row's exponentials computed before the first P store).
    The tokens are pipe traffic outside skip regions, so a skipped block
    consumes its token too. blasst-verify-sync proves the result (without
    the head start, P of a block is overwritten by the sibling's next
    scores; without the S release before a Q Kᵀ, the scores are).

    `mode=auto` (blasst-compile and the JIT) rewrites the kernels it
    applies to (sm_100a two-tile schedules with P over its own S, dense and
    voted BLASST kernels) and
    records `cross_stage_p` in each kernel's schedule; `mode=true` (the
    default) fails with the reason on a kernel it cannot rewrite (sm_90a
    keeps S in registers); `mode=false` does nothing.
  }];
  let options = [
    Option<"mode", "mode", "std::string", /*default=*/"\"true\"",
           "true: every kernel (an error where it does not apply); auto: the "
           "kernels where it applies; false: none">,
    Option<"depth", "depth", "int64_t", /*default=*/"0",
           "depth of the handshake pipes between the sibling softmax roles "
           "(0: 4, the seeds' ring; a softmax role never gets more than two "
           "tokens ahead of its sibling in this schedule, so 2 suffices)">,
    Option<"holdA", "hold-a", "int64_t", /*default=*/"1",
           "quarters of tile 0's exponentials before its first P store">,
    Option<"holdB", "hold-b", "int64_t", /*default=*/"4",
           "quarters of tile 1's exponentials before its first P store">
  ];
  let dependentDialects = ["::blasst::ws::WSDialect"];
}

def BLASSTVerifySync : Pass<"blasst-verify-sync", "mlir::ModuleOp"> {
  let summary = "Prove every ws.kernel's pipeline deadlock-free and hazard-free";
  let description = [{
    For every ws.kernel (sm_90a and sm_100a), an exhaustive exploration of
    its protocol (ProtocolAnalysis): each role runs its prologue, its
    kv_loop N times and its epilogue as one thread of control; pipes are
    mbarrier rings (full and empty per stage, the protocol's arrival counts,
    stage = b mod D, phase = b / D), TMA copies land at any later point,
    sm_100a's tcgen05.mma products complete in issue order at any later
    point and the MMA warp's releases are commits that arrive after them,
    named barriers (turns) and the V-on-demand vote barriers are modelled,
    and every keep/skip outcome of a published vote is explored. Shared
    storage (smem, tmem, aliases resolved) holds symbolic values (K of block
    b, P of block b, O rescaled for block b, ...) and every read must see
    the one attention needs. All interleavings (hashed states, breadth
    first, steps up to the next wait run as one; a copy lands right after
    its issue where a static check of the protocol shows no other step can
    see it before its full barrier completes) for N = 0 .. max depth + 2
    (persistent CTAs: two tiles, each with every N). Reported as an error on
    the kernel or the offending step with a shortest trace as a note: a
    deadlock, a wait more than one phase from its barrier (parity aliasing),
    an arrival in another block's phase or beyond the count, pipes
    unbalanced at exit, a copy into a stage a consumer of the previous round
    still holds, a consumer passing its full barrier while a copy into the
    stage is in flight, a vote slot overwritten before it was read, a read
    before its value was written or after it was overwritten; in program
    order: async wgmma hazards (a release, read or second product before
    the wait that retires a product) and values a role needs but never gets.
    See docs/design.md ("Sync verification") for the bounds.
  }];
  let options = [
    Option<"report", "report", "bool", /*default=*/"false",
           "also emit a remark with what was proven for each kernel">,
    Option<"stats", "stats", "bool", /*default=*/"false",
           "print states explored and time per kernel on stderr">,
    Option<"eagerLanding", "eager-landing", "bool", /*default=*/"true",
           "land a TMA copy right after its issue where the protocol makes "
           "that sound (every read and release of the stage after its "
           "acquire, bytes expected = bytes copied); false: every order">,
    Option<"eagerProducts", "eager-products", "bool", /*default=*/"true",
           "sm_100a: complete the tensor-core product at the head of the "
           "queue right away in the states where no other step can depend "
           "on it first (docs/design.md, \"Eager completion\"); false: "
           "every order">,
    Option<"forceEagerProducts", "force-eager-products", "bool",
           /*default=*/"false",
           "tests only, unsound: complete every product right away, "
           "unchecked (shows which races the check keeps)">,
    Option<"shallowTokenRings", "shallow-token-rings", "bool",
           /*default=*/"true",
           "search a token ring deeper than 2 (a pipe with no storage) at "
           "depth 2, checking that every wait and arrival on it agrees with "
           "its depth (docs/design.md, \"Shallow token rings\"); false: at "
           "its depth">
  ];
  let dependentDialects = ["::blasst::ws::WSDialect"];
}

def WSPrintProtocol : Pass<"ws-print-protocol", "mlir::ModuleOp"> {
  let summary = "Print each ws.kernel's pipeline protocol (for tests)";
  let description = [{
    Prints, for every ws.kernel, the ProtocolAnalysis: each pipe's depth,
    whether it carries a stage per KV block, and the arrivals that complete
    a phase of its full and empty rings; each step's KV block (first, n+k,
    last, once), the barriers it waits on and arrives at, and the buffer
    regions it reads and writes; what each kv_loop carries across its
    back-edge. The IR is unchanged.
  }];
}

#endif // BLASST_WS_TRANSFORMS_PASSES
