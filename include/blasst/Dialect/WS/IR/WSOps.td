//===- WSOps.td - The warp-specialized pipeline dialect ----*- tablegen -*-===//
//
// A `ws.kernel` is one CTA's whole schedule: the buffers it owns, the mbarrier
// pipes between its roles, and each role's per-KV-block steps. Steps refer to
// buffers and pipes by symbol, so a pass that re-points a buffer (cross-stage
// P) or wraps steps in a skip region (BLASST) is a local IR rewrite, and the
// synchronization checker can step each role symbolically.
//
//===----------------------------------------------------------------------===//
#ifndef BLASST_WS_OPS
#define BLASST_WS_OPS

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/RegionKindInterface.td"
include "blasst/Dialect/Attn/IR/AttnBase.td"
include "blasst/Dialect/WS/IR/WSInterfaces.td"

def WS_Dialect : Dialect {
  let name = "ws";
  let cppNamespace = "::blasst::ws";
  let summary = "Warp-specialized attention pipelines";
  let description = [{
    Describes how one CTA computes an attention tile: roles (warp ranges with
    register budgets), buffers (shared memory, tensor memory or registers,
    with pipeline stages), pipes (mbarrier rings between a producer role and
    consumer roles) and the steps each role runs per KV block.
  }];
  let dependentDialects = ["::blasst::attn::AttnDialect"];
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def WS_TargetEnum : I32EnumAttr<"Target", "GPU target", [
    I32EnumAttrCase<"sm_90a", 0>, I32EnumAttrCase<"sm_100a", 1>]> {
  let cppNamespace = "::blasst::ws";
}

def WS_MemorySpaceEnum : I32EnumAttr<"MemorySpace", "where a buffer lives", [
    I32EnumAttrCase<"smem", 0>, I32EnumAttrCase<"tmem", 1>,
    I32EnumAttrCase<"regs", 2>]> {
  let cppNamespace = "::blasst::ws";
}

def WS_RoleKindEnum : I32EnumAttr<"RoleKind", "what a role does", [
    I32EnumAttrCase<"load", 0>, I32EnumAttrCase<"compute", 1>,
    I32EnumAttrCase<"mma", 2>, I32EnumAttrCase<"softmax", 3>,
    I32EnumAttrCase<"correction", 4>, I32EnumAttrCase<"epilogue", 5>]> {
  let cppNamespace = "::blasst::ws";
}

def WS_MmaKindEnum : I32EnumAttr<"MmaKind", "which matrix product", [
    I32EnumAttrCase<"qk", 0>, I32EnumAttrCase<"pv", 1>]> {
  let cppNamespace = "::blasst::ws";
}

def WS_TensorEnum : I32EnumAttr<"Tensor", "a global tensor of the problem", [
    I32EnumAttrCase<"q", 0>, I32EnumAttrCase<"k", 1>, I32EnumAttrCase<"v", 2>,
    I32EnumAttrCase<"o", 3>]> {
  let cppNamespace = "::blasst::ws";
}

class WS_Op<string mnemonic, list<Trait> traits = []>
    : Op<WS_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Structure: kernel, buffers, pipes, roles
//===----------------------------------------------------------------------===//

def WS_KernelOp : WS_Op<"kernel", [Symbol, SymbolTable, NoTerminator,
                                   SingleBlock, IsolatedFromAbove,
                                   NoRegionArguments]> {
  let summary = "One CTA's warp-specialized attention schedule";
  let description = [{
    Holds `ws.buffer`, `ws.pipe` and `ws.role` ops. A CTA computes `block_m`
    query rows of one (batch, q head) and streams K/V in blocks of `block_n`
    keys. The verifier checks the CTA-wide rules: role warp ranges disjoint,
    register budgets per warpgroup consistent and within the 64K registers
    of a CTA, shared memory within the target's limit, tensor memory only on
    sm_100a and within 512 columns.

    With `persistent`, a CTA stays resident and walks the (query block, q
    head) tiles of its batch entry, longest causal tiles first; the roles'
    steps run once per tile and the K/V rings continue across tiles.

    With `lean` (persistent decode), the CTAs share the launch's KV blocks
    evenly instead of walking whole splits: the W = tiles x ceil(seq_kv /
    block_n) blocks in tile order, CTA c of C takes blocks [c per, (c + 1)
    per), per = ceil(W / C), which covers the end of one tile, whole tiles
    and the start of another; each tile's part is one of that tile's splits
    (split index: c minus the first CTA that covers the tile; kernel
    parameter 19 is the workspace's slots per tile), merged like splits. The
    CTAs' shares differ by at most one block, whatever the tile count.

    With `ctas_per_sm = n` (sm_90a, 1 or 2), n CTAs share an SM: the
    registers at entry are 65536 / (n x threads) (rounded down to a multiple
    of 8; setmaxnreg moves them between warpgroups within that), the shared
    memory at most 233472 / n - 1024 bytes, and the kernel asks ptxas for n
    CTAs per SM (`.minnctapersm`). More copies in flight per SM, at fewer
    registers per thread.

    With `kv_multicast`, CTAs run in clusters of two neighbouring query
    blocks of one (batch, head), which read the same K/V: each CTA's
    producer copies half of every K/V tile and multicasts it into both
    CTAs, a K/V stage is free once the consumers of both CTAs released it,
    and the pair shares half the L2 traffic of two separate CTAs.

    With `reverse_tiles`, CTAs take the query blocks last first (ctaid.x 0
    gets the last block; a persistent CTA walks its tiles from the last
    query block down): the longest causal tiles start first and the short
    ones fill the tail of the last wave.

    With `q_group = G` (decode, sm_90a), a CTA computes one KV head: the
    rows of its tile are the query tokens of the G q heads that share that
    KV head, packed token-major (row r is token `block * block_m / G + r / G`
    of q head `kv_head * G + r % G`), so each K/V block is read once for all
    of them. grid y is the KV head; Q is copied with a box of G heads by
    `block_m / G` tokens (rounded down). When G does not divide block_m
    (e.g. 3, 5, 6, 7), the last `block_m mod G` rows are padding: the copy
    lands G x floor(block_m / G) rows (the Q pipe's `tx_bytes`), the kernel
    zeroes the others, and they count as tokens past seq_q (no vote, no
    store).

    With `split_kv` (decode), the KV blocks of a tile are split across CTAs
    (grid x = query tiles x splits, the split count chosen at launch): each
    split writes its O (f32, normalised) and LSE to a workspace (kernel
    parameter 14), and the last split of a tile to finish merges them by
    LSE into O (a counter per tile in the workspace, reset by that CTA).
    One split (workspace null) writes O directly. With `merge_kernel` the
    kernel takes a 22nd parameter (i32, 21): when it is 1 no split merges
    (the splits return after writing their partials; 0: the last split
    merges as above), and the lowering emits a second kernel,
    `<sym_name>_merge`
    (256 threads, the same parameters as a persistent decode kernel: 19 is
    the launch's split count), that the runtime launches after this one on
    grid (query tiles x M, kv heads, batch), M = ceil(q_group x min(seq_q,
    block_m / q_group) x head_dim_v / 128): each of its CTAs merges 32
    four-column units of a tile, its eight warps folding every eighth split
    and combining through shared memory. The attention kernel lets it launch
    early (griddepcontrol.launch_dependents); it waits for the attention
    kernel's writes (griddepcontrol.wait). A split takes one
    contiguous range of the tile's KV blocks; with `split_chunk = C` the
    splits take chunks of C blocks in turn instead (split s of S: chunks s,
    s + S, s + 2S, ..., each walked in order), so blocks that attention
    keeps in runs (a local window, a retrieved passage) spread over the
    splits instead of piling onto one.

    With `balanced_splits` (decode with `per_seq_kv`, one CTA per split)
    the splits follow the lengths: the grid is 1-D, kernel parameter 19 is
    the launch's CTA budget C and 20 the batch; W = the tiles' blocks
    (tile t of sequence b: U_b = ceil(min(length_b, seq_kv) / block_n)),
    per = max(1,
    ceil(W / C)), and tile t takes s_t = max(1, ceil(U_b / per)) splits, the
    tiles' splits numbered in tile order: CTA c finds its tile and split by
    one pass over the lengths after one for W, and CTAs past the last
    split exit at once (at most C + tiles take part). A split's blocks are
    those of split k of s_t as above (split_chunk included), its workspace
    slot is c (the grid's slots), a tile of one split writes O directly.
    A budget of at most 1 takes no pass: C = 1 is one split per tile, and
    C = -S is S splits per tile (the split grid's mapping on tiles x S CTAs).
    With `merge_kernel` too, `<kernel>_merge` merges the launches of a
    budget of -S (the split grid's slots; it takes S = -parameter 19); with
    a budget C the tile's last split merges.

    With `per_seq_kv` (decode, the spec's `kv_lengths = per_sequence`) a CTA
    reads its sequence's KV length from an int32 array [batch] (kernel
    parameter 15) instead of the launch's seq_kv: its block count, the tail
    mask, the causal diagonal and its splits follow that length. With
    `page_size = P` (decode, the spec's paged `kv_cache`) K and V are pages
    of P tokens and the load role takes each KV block's page from the block
    table (parameters 16 and 17); a block of block_n > P keys is block_n / P
    copies. Both need `split_kv`.

    With `entry_of = @k` the kernel is a second entry of `@k` in the same
    module (`<k>_lean`, `<k>_short`, `<k>_tma`): the runtime launches it
    instead of `@k` with `@k`'s parameter array. With `merge_kernel` it
    takes parameter 21 as `@k` does and shares `@k`'s merge kernel (the
    lowering emits none for it).

    `schedule` records the schedule `convert-attn-to-ws` resolved (every
    knob with its value, defaults included): what was asked for, for
    `--summary` and for reading the IR. The lowering reads the structure
    (roles, buffers, pipes, steps), never this record.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, WS_TargetEnum:$target,
                       I64Attr:$block_m, I64Attr:$block_n,
                       Attn_SpecAttr:$spec, UnitAttr:$persistent,
                       UnitAttr:$kv_multicast, UnitAttr:$reverse_tiles,
                       OptionalAttr<I64Attr>:$q_group, UnitAttr:$split_kv,
                       OptionalAttr<I64Attr>:$split_chunk,
                       UnitAttr:$per_seq_kv, OptionalAttr<I64Attr>:$page_size,
                       OptionalAttr<DictionaryAttr>:$schedule,
                       UnitAttr:$lean, OptionalAttr<I64Attr>:$ctas_per_sm,
                       UnitAttr:$merge_kernel, UnitAttr:$balanced_splits,
                       OptionalAttr<FlatSymbolRefAttr>:$entry_of);
  let regions = (region SizedRegion<1>:$body);
  let hasRegionVerifier = 1;
  let assemblyFormat = [{
    $sym_name `target` `=` $target `,` `block_m` `=` $block_m `,` `block_n` `=`
    $block_n `,` `spec` `=` $spec (`persistent` $persistent^)? (`lean` $lean^)?
    (`kv_multicast` $kv_multicast^)? (`reverse_tiles` $reverse_tiles^)?
    (`q_group` `=` $q_group^)? (`split_kv` $split_kv^)? (`merge_kernel` $merge_kernel^)?
    (`balanced_splits` $balanced_splits^)?
    (`split_chunk` `=` $split_chunk^)? (`per_seq_kv` $per_seq_kv^)? (`page_size` `=` $page_size^)?
    (`ctas_per_sm` `=` $ctas_per_sm^)?
    (`entry_of` $entry_of^)?
    (`schedule` $schedule^)?
    attr-dict-with-keyword $body
  }];
    let extraClassDeclaration = [{
    /// CTAs resident per SM (ctas_per_sm, default 1).
    int64_t getCtasPerSM() { return int64_t(getCtasPerSm().value_or(1)); }
    /// The registers of one CTA and its shared memory limit at that residency.
    int64_t getRegistersPerCTA();
    int64_t getSharedMemoryLimit();
    /// Number of warps the CTA launches (roles rounded up to warpgroups).
    int64_t getNumWarps();
    /// Whether a pipe's producer copies with cp.async (sm_90a decode K/V:
    /// the kernel then takes K's and V's pointers and strides).
    bool hasCpAsyncPipes();
    /// Shared memory bytes of all non-aliasing smem buffers.
    int64_t getSharedMemoryBytes();
    /// Tensor memory columns of all non-aliasing tmem buffers.
    int64_t getTensorMemoryColumns();
    /// The register budget of warpgroup `wg`, or 0 when no role sets one.
    int64_t getWarpgroupRegisters(int64_t wg);
    /// Sets `entries` in the schedule record (what a pass did), when the
    /// kernel has a record.
    void recordSchedule(::llvm::ArrayRef<::mlir::NamedAttribute> entries);
  }];
}

def WS_BufferOp : WS_Op<"buffer", [Symbol, HasParent<"KernelOp">]> {
  let summary = "A staged buffer in shared memory, tensor memory or registers";
  let description = [{
    `shape` is one stage's shape (rows, columns); `stages` copies form a ring.
    Register buffers are private to each role that uses them. `aliases` names
    a buffer whose storage this one reuses (P over S in tensor memory, the
    O staging tile over Q), so it takes no storage of its own. `at [row,
    column]` places it inside that buffer, in the owner's rows and element
    columns: a bf16 P of 128 columns takes 64 f32 columns of S, so
    `@p0 tmem [128, 128] bf16 stages 1 aliases @s1 at [0, 64]` is P of tile
    0 in columns [64, 128) of S of tile 1 (cross-stage P). Without `at` it
    starts at [0, 0].
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, WS_MemorySpaceEnum:$space,
                       DenseI64ArrayAttr:$shape, TypeAttr:$element_type,
                       I64Attr:$stages,
                       OptionalAttr<FlatSymbolRefAttr>:$aliases,
                       OptionalAttr<DenseI64ArrayAttr>:$alias_offset);
  let assemblyFormat = [{
    $sym_name $space $shape $element_type `stages` $stages
    (`aliases` $aliases^)? (`at` $alias_offset^)? attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Bytes of one stage.
    int64_t getStageBytes();
    /// Bytes a TMA copy lands in one stage: the stage, except the Q tile of
    /// a q_group kernel where G does not divide its rows (G x floor(rows /
    /// G) rows land, the rest is padding).
    int64_t getLandedBytes();
    /// Tensor memory columns (32-bit) of all stages.
    int64_t getTensorMemoryColumns();
  }];
}

def WS_PipeOp : WS_Op<"pipe", [Symbol, HasParent<"KernelOp">]> {
  let summary = "An mbarrier ring between a producer role and consumer roles";
  let description = [{
    `depth` stages, each with a full barrier (producer → consumers) and an
    empty barrier (consumers → producer). `buffers` are the buffers whose
    stages the ring guards: their stage count must equal `depth`. A TMA pipe
    gives `tx_bytes`, the bytes one stage's copies deliver, which must equal
    one stage of its buffers (for the Q tile of a `q_group` kernel, the rows
    the copy lands: G x floor(block_m / G)).

    `cp_async` (sm_90a decode K/V, instead of `tx_bytes`): every thread of
    the producer (a load role) copies its share of a stage's tile with
    16-byte `cp.async` into the same 128B-swizzled layout the TMA unit would
    write, then arrives on the stage's full barrier once its copies have
    landed (`cp.async.mbarrier.arrive.noinc`; the barrier counts one arrival
    per producer thread). The protocol is the TMA pipe's: a stage completes
    when all of its bytes have landed, and the consumers fence the generic
    proxy's writes before their wgmma read them.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, I64Attr:$depth,
                       FlatSymbolRefAttr:$producer,
                       ArrayAttr:$consumers,
                       DefaultValuedAttr<ArrayAttr, "{}">:$buffers,
                       OptionalAttr<I64Attr>:$tx_bytes,
                       UnitAttr:$cp_async);
  let assemblyFormat = [{
    $sym_name `depth` $depth `producer` $producer `consumers` $consumers
    (`buffers` $buffers^)? (`tx_bytes` $tx_bytes^)? (`cp_async` $cp_async^)?
    attr-dict
  }];
  let extraClassDeclaration = [{
    /// The bytes one stage's copies land, which complete its full barrier:
    /// tx_bytes, or with cp_async the stage of its buffers; 0 for a pipe
    /// whose producer only arrives.
    int64_t getLandedBytes();
  }];
  let hasVerifier = 1;
}

def WS_OrderOp : WS_Op<"order", [Symbol, HasParent<"KernelOp">]> {
  let summary = "Roles that take turns (ping-pong scheduling)";
  let description = [{
    The listed roles run the steps between their `ws.turn_wait` and
    `ws.turn_pass` one at a time, in ring order, starting with the first:
    on sm_90a, one consumer warpgroup's GEMMs run while the other does its
    softmax. The first role holds the turn before its first wait; the last
    role's pass after its kv_loop is dropped, so waits and passes balance.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, ArrayAttr:$roles);
  let assemblyFormat = "$sym_name `roles` $roles attr-dict";
  let hasVerifier = 1;
}

def WS_RoleOp : WS_Op<"role", [Symbol, HasParent<"KernelOp">, NoTerminator,
                               SingleBlock, NoRegionArguments]> {
  let summary = "A set of warps with one job and one register budget";
  let description = [{
    Warps `[warp_begin, warp_end)` of the CTA run the body. `regs` is the
    per-thread register budget set with `setmaxnreg` (24..256, a multiple of
    8); it applies to whole warpgroups. `rows` is the slice of the CTA's query
    rows the role owns, for roles that own rows: the compute roles (sm_90a) or
    softmax roles (sm_100a) of a kernel split `[0, block_m)` between them, each
    row to exactly one role (one without `rows` claims all of them); an sm_90a
    compute role owns 16 rows per warp.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, WS_RoleKindEnum:$kind,
                       I64Attr:$warp_begin, I64Attr:$warp_end,
                       OptionalAttr<I64Attr>:$regs,
                       OptionalAttr<I64Attr>:$row_begin,
                       OptionalAttr<I64Attr>:$row_end);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name $kind `warps` ` ` `[` $warp_begin `,` $warp_end `)`
    (`regs` $regs^)? (`rows` ` ` `[` $row_begin^ `,` $row_end `)`)?
    attr-dict-with-keyword $body
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getNumWarps() { return getWarpEnd() - getWarpBegin(); }
  }];
}

//===----------------------------------------------------------------------===//
// Steps
//===----------------------------------------------------------------------===//

def WS_KVLoopOp : WS_Op<"kv_loop", [HasParent<"RoleOp">, NoTerminator,
                                    SingleBlock, NoRegionArguments]> {
  let summary = "The steps run once per KV block";
  let description = [{
    Iterates over the KV blocks the CTA visits (for causal attention, up to
    the diagonal). The body is the steady state; what precedes it in the role
    is the prologue and what follows is the epilogue.
  }];
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "attr-dict-with-keyword $body";
}

class WS_StepOp<string mnemonic, list<Trait> traits = []>
    : WS_Op<mnemonic, !listconcat(traits, [
        ParentOneOf<["RoleOp", "KVLoopOp", "UnlessSkippedOp"]>,
        WS_StepOpInterface])>;

def WS_AcquireOp : WS_StepOp<"acquire"> {
  let summary = "Wait until the pipe's current stage is ready for this role";
  let description = [{
    The producer waits for the stage to be empty; a consumer waits for it to
    be full.

    `drain` (the producer's last step on a pipe, after its release, outside
    any kv_loop): the producer waits until the consumers have released the
    stage it filled last, and takes nothing. Its warps then stay until what
    they copied has been consumed (decode's cp.async load role, whose 128
    threads otherwise exit as soon as their copies are issued: in a CTA with
    no KV block that is at once after Q's copy, where compute-sanitizer's
    racecheck hung).
  }];
  let arguments = (ins FlatSymbolRefAttr:$pipe, OptionalAttr<I64Attr>:$ahead,
                       OptionalAttr<I64Attr>:$kept_ahead,
                       OptionalAttr<I64Attr>:$kept_run, UnitAttr:$drain);
  let builders = [
    OpBuilder<(ins "::mlir::FlatSymbolRefAttr":$pipe, "::mlir::IntegerAttr":$ahead), [{
      build($_builder, $_state, pipe, ahead, ::mlir::IntegerAttr(), ::mlir::IntegerAttr(), ::mlir::UnitAttr());
    }]>
  ];
  let extraClassDeclaration = [{
    ::mlir::LogicalResult verifyDrain();
    /// With kept_ahead: how many decisions before block n's the conditions
    /// read (ahead - kept_ahead + kept_run - 1; ws.tma_load); 0 without.
    int64_t getKeptHistory() {
      if (!getKeptAhead() || !getAhead())
        return 0;
      return int64_t(*getAhead()) - int64_t(*getKeptAhead()) +
             int64_t(getKeptRun().value_or(1)) - 1;
    }
  }];
  let assemblyFormat = "$pipe attr-dict";
  let hasVerifier = 1;
}

def WS_ReleaseOp : WS_StepOp<"release"> {
  let summary = "Hand the pipe's current stage on and advance the ring";
  let description = [{
    The producer marks the stage full (for TMA pipes: the arrive that sets
    the expected transaction bytes); a consumer marks it empty.
  }];
  let arguments = (ins FlatSymbolRefAttr:$pipe, OptionalAttr<I64Attr>:$ahead,
                       OptionalAttr<I64Attr>:$kept_ahead,
                       OptionalAttr<I64Attr>:$kept_run);
  let builders = [
    OpBuilder<(ins "::mlir::FlatSymbolRefAttr":$pipe, "::mlir::IntegerAttr":$ahead), [{
      build($_builder, $_state, pipe, ahead, ::mlir::IntegerAttr(), ::mlir::IntegerAttr());
    }]>
  ];
  let assemblyFormat = "$pipe attr-dict";
  let hasVerifier = 1;
}

def WS_TmaLoadOp : WS_StepOp<"tma_load"> {
  let summary = "Copy a tile of Q, K or V into a pipe's smem buffer with TMA";
  let description = [{
    `ahead = k` copies the tile of KV block n + k (the load role running k
    blocks ahead on that pipe, k at most the pipe's depth); before the
    kv_loop it copies block k (the prologue of such a role; acquire and
    release take the same `ahead`). `on_demand` (V, after a `ws.await_vote` in the
    same block): the copy is issued only when a voter kept the block; for a
    block every voter skipped, the pipe's release arrives with no
    transaction bytes, so the stage still completes and no consumer waits.
    `sink` (K, before the kv_loop, on a pipe no kv_loop uses): the sequence's
    KV block 0 whatever split the CTA walks, the attention sink a split's
    running max is seeded from (`ws.row_max {sink}`).

    `kept_ahead = k, kept_run = r` (with `ahead = a`, k < a, on the
    acquire, the copy and the release of a load role's kv_loop, after its
    `ws.await_vote`; blasst-v-on-demand's `k-kept-ahead`): the copy depth
    follows the decisions. Block n + a is copied in iteration n unless the r
    decisions on blocks n - r + 1 .. n were all "kept"; then it is copied in
    iteration n + a - k, k blocks ahead, under the same r decisions (the
    blocks before block 0 count as skipped). So while blocks are kept the
    ring streams k blocks ahead, like dense decode, and a V copy does not
    queue behind K copies issued far ahead of it; after a skip it streams a
    blocks ahead again. Every block is still copied exactly once, in an
    iteration where its stage is free; the copies may leave out of block
    order.
  }];
  let arguments = (ins WS_TensorEnum:$tensor, FlatSymbolRefAttr:$dst,
                       FlatSymbolRefAttr:$pipe, OptionalAttr<I64Attr>:$ahead,
                       UnitAttr:$on_demand, UnitAttr:$sink,
                       OptionalAttr<I64Attr>:$kept_ahead,
                       OptionalAttr<I64Attr>:$kept_run);
  let builders = [
    OpBuilder<(ins "::blasst::ws::TensorAttr":$tensor, "::mlir::FlatSymbolRefAttr":$dst,
                   "::mlir::FlatSymbolRefAttr":$pipe, "::mlir::IntegerAttr":$ahead,
                   "::mlir::UnitAttr":$on_demand, "::mlir::UnitAttr":$sink), [{
      build($_builder, $_state, tensor, dst, pipe, ahead, on_demand, sink,
            ::mlir::IntegerAttr(), ::mlir::IntegerAttr());
    }]>
  ];
  let assemblyFormat = "$tensor `->` $dst `via` $pipe attr-dict";
  let hasVerifier = 1;
}

def WS_TmaStoreOp : WS_StepOp<"tma_store"> {
  let summary = "Copy the output tile from shared memory to O with TMA";
  let arguments = (ins FlatSymbolRefAttr:$src, WS_TensorEnum:$tensor);
  let assemblyFormat = "$src `->` $tensor attr-dict";
  let hasVerifier = 1;
}

def WS_MmaOp : WS_StepOp<"mma"> {
  let summary = "A tensor-core matrix product: S = Q Kᵀ or O += P V";
  let description = [{
    `qk`: d[M, N] = a[M, D] · b[N, D]ᵀ. `pv`: d[M, Dv] += a[M, N] · b[N, Dv].
    On sm_90a this is wgmma (d in registers, a in smem or registers); on
    sm_100a tcgen05.mma (d in tensor memory, a in smem or tensor memory). b is
    always in shared memory. `a` may have more rows than `d` when several
    roles share one Q tile (each takes its `rows`).

    With `async` the product is issued and committed but not waited for: a
    later `ws.mma_wait` does that, so other steps overlap it.

    Block offsets (on mma, acquire and release): inside a kv_loop a step
    with `ahead = k` works on KV block n + k and runs only when that block
    exists; a pipe step before the loop works on block 0 and one after it on
    the last block (both only when there is a block).
  }];
  let arguments = (ins WS_MmaKindEnum:$kind, FlatSymbolRefAttr:$a,
                       FlatSymbolRefAttr:$b, FlatSymbolRefAttr:$d,
                       UnitAttr:$async, OptionalAttr<I64Attr>:$ahead);
  let assemblyFormat = "$kind $a `,` $b `->` $d attr-dict";
  let hasVerifier = 1;
}

def WS_LoadFragOp : WS_StepOp<"load_frag"> {
  let summary = "Load a role's rows of a shared-memory tile as wgmma A fragments";
  let description = [{
    Copies the role's 64 rows of `src` (a 128B-swizzled tile in shared memory,
    e.g. Q) into the registers `dst` names, in wgmma's register-A fragment
    layout (sm_90a: ldmatrix), so that a later `ws.mma` with `dst` as operand
    a reads no shared memory. The registers stay valid until the role ends.
  }];
  let arguments = (ins FlatSymbolRefAttr:$src, FlatSymbolRefAttr:$dst);
  let assemblyFormat = "$src `->` $dst attr-dict";
  let hasVerifier = 1;
}

def WS_MmaWaitOp : WS_StepOp<"mma_wait"> {
  let summary = "Wait until at most `pending` async mma groups are in flight";
  let arguments = (ins DefaultValuedAttr<I64Attr, "0">:$pending);
  let assemblyFormat = "attr-dict";
  let hasVerifier = 1;
}

def WS_TurnWaitOp : WS_StepOp<"turn_wait"> {
  let summary = "Wait until it is this role's turn in an order";
  let arguments = (ins FlatSymbolRefAttr:$order);
  let assemblyFormat = "$order attr-dict";
  let hasVerifier = 1;
}

def WS_TurnPassOp : WS_StepOp<"turn_pass"> {
  let summary = "Hand the turn to the next role of an order";
  let arguments = (ins FlatSymbolRefAttr:$order);
  let assemblyFormat = "$order attr-dict";
  let hasVerifier = 1;
}

class WS_ScoreStepOp<string mnemonic, string summary_>
    : WS_StepOp<mnemonic> {
  let summary = summary_;
  let arguments = (ins FlatSymbolRefAttr:$scores);
  let assemblyFormat = "$scores attr-dict";
  let hasVerifier = 1;
}

def WS_ReadScoresOp : WS_ScoreStepOp<"read_scores",
    "Make the block's scores available in registers (tcgen05.ld / wgmma wait)">;
def WS_RowMaxOp : WS_StepOp<"row_max"> {
  let summary = "The block's per-row maximum of scale · S (with the causal mask)";
  let description = [{
    Before the kv_loop it works on block 0 (the scores of a Q Kᵀ issued
    there). Inside it, `ahead = 1` takes the scores of block n + 1 from a
    `ws.mma qk {ahead = 1}`, and the softmax steps after it work on that
    block: a block past the end is fully masked, so it leaves the running
    max and the row sums unchanged.

    `sink` (before the kv_loop): the scores are those of the sequence's KV
    block 0 (a `ws.mma qk` on a `ws.tma_load {sink}` tile), masked as that
    block, and their row maxima become the running max (BLASST decode: a
    split that does not start at block 0 votes against the sink's scores
    instead of a fresh -inf). Nothing else of the block is used.
  }];
  let arguments = (ins FlatSymbolRefAttr:$scores, OptionalAttr<I64Attr>:$ahead,
                       UnitAttr:$sink);
  let assemblyFormat = "$scores attr-dict";
  let hasVerifier = 1;
}
def WS_SoftmaxUpdateOp : WS_StepOp<"softmax_update"> {
  let summary = "Update the running max; compute the correction factor of O and l";
  let description = [{
    Without `factors` the correction factor stays in the role's registers
    for its own `ws.correct` (sm_90a). With `-> @f` the role writes it, per
    row, to the shared-memory buffer `@f` (f32, two columns per row: the
    factor and the running max) for a correction role's
    `ws.correct ... by @f` (sm_100a).
  }];
  let arguments = (ins FlatSymbolRefAttr:$scores,
                       OptionalAttr<FlatSymbolRefAttr>:$factors);
  let assemblyFormat = "$scores (`->` $factors^)? attr-dict";
  let hasVerifier = 1;
}

def WS_StoreRowSumsOp : WS_StepOp<"store_row_sums"> {
  let summary = "Write the final row sums and running max for another role";
  let description = [{
    After the kv_loop, a softmax role that does not write O itself hands its
    loop-carried row sums and running max (per row: sum, max) to the
    correction role's `ws.epilogue ... sums @f` through the shared-memory
    buffer `@f`.
  }];
  let arguments = (ins FlatSymbolRefAttr:$dst);
  let assemblyFormat = "`->` $dst attr-dict";
  let hasVerifier = 1;
}

def WS_Exp2StoreOp : WS_StepOp<"exp2_store_p"> {
  let summary = "P = exp2(S · scale · log2 e − m), row sums, store P";
  let description = [{
    `hold = q` (sm_100a, set by blasst-cross-stage-p): the role computes q
    quarters of its row's exponentials before the first tcgen05.st of P,
    then stores the rest as it goes (4: one store after all of them).
  }];
  let arguments = (ins FlatSymbolRefAttr:$scores, FlatSymbolRefAttr:$p,
                       OptionalAttr<I64Attr>:$hold);
  let assemblyFormat = "$scores `->` $p attr-dict";
  let hasVerifier = 1;
}

def WS_Exp2Op : WS_StepOp<"exp2"> {
  let summary =
      "exp2(S · scale · log2 e − m) in place in the S fragment, and row sums";
  let description = [{
    The exponentials stay f32 in the scores' registers; a later
    `ws.pack_p` turns them into the P·V operand. FlashAttention-3's order in
    the overlap schedule: block n+1's exponentials run while P V of block n
    is on the tensor cores, and P is written only after the `ws.mma_wait`
    that retires P V(n), whose A operand is the previous P (a wgmma's A
    registers must not change before its wait).

    With `guarded`, the exponentials of a look-ahead block are computed only
    when that block exists (past the end they are 0 and never read). On
    sm_90a the branch also puts them in a region of their own, which is
    what makes ptxas run them before the wait for P V(n).
  }];
  let arguments = (ins FlatSymbolRefAttr:$scores, UnitAttr:$guarded);
  let assemblyFormat = "$scores attr-dict";
  let hasVerifier = 1;
}

def WS_PackPOp : WS_StepOp<"pack_p"> {
  let summary = "Pack the exponentiated scores into P in registers";
  let description = [{
    Converts the f32 exponentials a preceding `ws.exp2` left in the scores'
    registers to the P·V operand type, in wgmma's register-A fragment (P in
    registers only: the accumulator and A fragments put the same rows and
    columns in the same thread).
  }];
  let arguments = (ins FlatSymbolRefAttr:$scores, FlatSymbolRefAttr:$p);
  let assemblyFormat = "$scores `->` $p attr-dict";
  let hasVerifier = 1;
}

def WS_CorrectOp : WS_StepOp<"correct"> {
  let summary = "Rescale the output accumulator by the correction factor";
  let description = [{
    Without `by` the factor is the one the role's own `ws.softmax_update`
    computed for this block; `by @f` reads it from the buffer a softmax
    role's `ws.softmax_update ... -> @f` wrote (sm_100a's correction role).

    `ahead = 0` in a kv_loop whose softmax works on block n + 1 (a deferred
    P·V, below `ws.unless_skipped`): the factor of block n, computed by the
    previous iteration's `ws.softmax_update` and carried across the
    back-edge, instead of the one this iteration computes for block n + 1.
  }];
  let arguments = (ins FlatSymbolRefAttr:$acc,
                       OptionalAttr<FlatSymbolRefAttr>:$factors,
                       OptionalAttr<I64Attr>:$ahead);
  let assemblyFormat = "$acc (`by` $factors^)? attr-dict";
  let hasVerifier = 1;
}

def WS_EpilogueOp : WS_StepOp<"epilogue"> {
  let summary = "Normalise O by the row sums and write it (and the LSE)";
  let description = [{
    Without `staging` the role writes O to global memory itself; with it, the
    normalised tile goes to the given smem buffer for a `ws.tma_store`.
    Without `sums` the row sums and the running max are the role's own;
    `sums @f` reads them from the buffer a softmax role's
    `ws.store_row_sums` wrote.
  }];
  let arguments = (ins FlatSymbolRefAttr:$acc,
                       OptionalAttr<FlatSymbolRefAttr>:$staging,
                       OptionalAttr<FlatSymbolRefAttr>:$sums,
                       UnitAttr:$lse);
  let assemblyFormat = "$acc (`->` $staging^)? (`sums` $sums^)? attr-dict";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// BLASST block skipping (inserted by --blasst-insert-vote)
//===----------------------------------------------------------------------===//

def WS_VoteOp : WS_StepOp<"vote"> {
  let summary = "Decide whether this KV block is skipped (BLASST)";
  let description = [{
    After the block's row maxima: each row tests `m_block - m_running <
    log2(lambda)` against the true running max; the rows that share one P·V
    (a warpgroup on sm_90a) skip only when all of them agree: `vote.sync.all`
    within a warp, then a named-barrier AND reduction across the warpgroup.
    Rows past the end of the query sequence do not vote. With `stats`, the
    role counts visited and skipped blocks into the kernel's stats buffer.
    With `publish`, the decision also goes to the load role's
    `ws.await_vote` (V loaded on demand).
    The threshold comes from the kernel's `log2Threshold` argument (per the
    spec's policy: fixed ln(lambda), or log2(a) - log2(L_kv) computed in the
    kernel), so it can change between launches without recompiling.

    Before the kv_loop (BLASST decode, `blasst-insert-vote` option
    `vote-first-block`): the vote on block 0, after the prologue's
    `ws.row_max`, in a compute role whose running max the sink seed
    (`ws.row_max {sink}`) defined; block 0's skippable steps after it are
    in `ws.unless_skipped` as the loop's are.
  }];
  let arguments = (ins FlatSymbolRefAttr:$scores, UnitAttr:$stats,
                       UnitAttr:$publish);
  let assemblyFormat = "$scores attr-dict";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Whether it decides on block n + 1: it follows a `ws.row_max {ahead =
    /// 1}` (the overlap schedule; block 0 is voted on, if at all, before
    /// the kv_loop).
    bool decidesNextBlock();
    /// Whether it is the prologue's vote on block 0 (before the kv_loop).
    bool votesFirstBlock();
  }];
}

def WS_AwaitVoteOp : WS_StepOp<"await_vote"> {
  let summary = "The load role learns whether this KV block was skipped";
  let description = [{
    In a load role's kv_loop: waits until every compute role whose
    `ws.vote` has `publish` decided on the block, which is skipped when all
    of them skipped it. Block 0 is kept unless the voters vote on it before
    their kv_loop (a `ws.vote` there: BLASST decode's `vote-first-block`);
    the loop's votes decide blocks n + 1. The decision drives the `on_demand` copies
    that follow (BLASST without the V loads of skipped blocks): the voters
    write their decisions to shared memory and arrive on one of two
    mbarriers (by block parity) per block.

    `speculate_after = K`: when the K blocks before this one were all kept,
    the block counts as kept without waiting for its votes (which are read
    at the next block). The copy is then issued about one block earlier than
    a vote allows, so a run of kept blocks never waits for V, and a
    mispredicted skipped block costs a V copy nobody reads. Without it every
    block from 1 on waits for its votes.

    `stats`: this role counts the published votes into the kernel's stats
    buffer (it reads every vote anyway), so the voters keep no counters of
    their own (their `ws.vote` has no `stats`).
  }];
  let arguments = (ins OptionalAttr<I64Attr>:$speculate_after,
                       UnitAttr:$stats);
  let assemblyFormat = "attr-dict";
  let hasVerifier = 1;
}

def WS_StoreVoteOp : WS_StepOp<"store_vote"> {
  let summary = "Hand this block's skip decision to the roles that skip with it";
  let description = [{
    sm_100a: after the role's `ws.vote`, one thread writes the decision
    (nonzero: skipped) to the shared-memory word `@w` (smem, [1, 1], i32).
    `blasst-insert-vote` puts it inside the acquire and release of the pipe
    that carries what the next skip region hands on (the factors, P); that
    release publishes it (an mbarrier arrive orders the store before the
    waiters' reads), and the role that reads the buffer reads the word with
    `ws.load_vote @w` after its acquire of the pipe and leaves out the
    block's rescale or P V. On sm_100a block 0 is always kept (its P V
    overwrites O).
  }];
  let arguments = (ins FlatSymbolRefAttr:$word);
  let assemblyFormat = "$word attr-dict";
  let hasVerifier = 1;
}

def WS_LoadVoteOp : WS_StepOp<"load_vote"> {
  let summary = "Learn the skip decision a voter stored for this block";
  let description = [{
    In a kv_loop of a role without a vote of its own (sm_100a's MMA warp and
    correction role): reads the word a `ws.store_vote @w` wrote for this
    block; the `ws.unless_skipped` regions after it (up to the next
    `ws.load_vote`) run only when that voter kept the block.
  }];
  let arguments = (ins FlatSymbolRefAttr:$word);
  let assemblyFormat = "$word attr-dict";
  let hasVerifier = 1;
}

def WS_UnlessSkippedOp : WS_Op<"unless_skipped", [
    ParentOneOf<["KVLoopOp", "RoleOp"]>, NoTerminator, SingleBlock,
    NoRegionArguments]> {
  let summary = "Steps that run only for blocks the vote kept";
  let description = [{
    Holds the skippable steps (softmax_update, exp2_store_p, exp2, pack_p,
    correct, the P·V mma). A skipped block leaves the running max, row sums and O as they
    were: its correction factor is exactly 1. Pipe acquires and releases are
    never inside, so every barrier arrival happens on both paths. The
    decision is the role's latest `ws.vote` or `ws.load_vote`.

    With `fuse_next`, this region and the next one (with only `mma_wait`
    and `release` steps between them) are decided by one branch: the kept
    path runs both regions and the steps between, the skip path only the
    steps between. The shape this is for (measured on the H200): the
    overlap schedule with P in registers, the first region holding the
    softmax (softmax_update, exp2), the second the correction and P
    (correct, pack_p). `blasst-insert-vote` sets it where that shape holds.
    Between the two there may also be a region with `ahead` holding only
    `correct` (a deferred P·V's correction of block n: it runs on both
    paths under its own decision).

    `ahead = k` (-1, 0 or 1): the decision on block n + k instead of the
    latest one. A deferred P·V (`blasst-v-on-demand` option `defer-pv`)
    runs block n - 1's P·V under `ahead = -1` and block n's correction under
    `ahead = 0` while the vote of the iteration decides block n + 1; the
    decision on the block before block 0 is "skipped" (there is none).

    Directly in a role (before its kv_loop): block 0's steps, decided by
    the role's vote on block 0 before it (`vote-first-block`); no `ahead`
    or `fuse_next` there.
  }];
  let arguments = (ins UnitAttr:$fuse_next, OptionalAttr<I64Attr>:$ahead);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "attr-dict-with-keyword $body";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The region a `fuse_next` would join this one with, and the steps
    /// between them in `mids`, or null when the shape does not allow it.
    UnlessSkippedOp getFusablePartner(
        ::llvm::SmallVectorImpl<::mlir::Operation *> &mids);
  }];
}

//===----------------------------------------------------------------------===//
// Host side
//===----------------------------------------------------------------------===//

def WS_LaunchOp : WS_Op<"launch", [DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Launch a ws.kernel over [batch, seq, heads, dim] memrefs";
  let arguments = (ins FlatSymbolRefAttr:$kernel, Variadic<AnyMemRef>:$args);
  let assemblyFormat = [{
    $kernel `(` $args `)` attr-dict (`:` type($args)^)?
  }];
}

#endif // BLASST_WS_OPS
