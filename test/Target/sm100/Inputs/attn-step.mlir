// One tcgen05 attention step for one 128-row query tile and one 128-key KV
// block, written by hand in the NVVM dialect: the groundwork the sm_100a
// lowering builds on (docs/design.md, "sm_100a: tcgen05 through NVVM").
// Nothing here can run (no B200); the tests check the PTX and that ptxas
// assembles it without spills.
//
// 256 threads. Warpgroup 0 (warps 0-3) is the softmax warpgroup: warp w owns
// query rows / tensor-memory lanes [32w, 32w + 32). Warp 4 loads Q, K, V with
// TMA, warp 5 issues the MMAs (one elected thread), warps 6-7 idle.
//
// Tensor memory (256 columns, allocated by warp 0): S = Q Kᵀ at columns
// [0, 128) (f32), P (bf16, two per column) over S's columns [0, 64), O = P V
// at columns [128, 128 + hd). An address is lane << 16 | column.
//
// Shared memory: Q, K, V (hd / 64 panels of 128 rows x 128 B each, 128B
// swizzled as TMA writes them), then the mbarriers tma, s_full, p_full,
// o_full and the tensor-memory base address written by tcgen05.alloc.
//
// Instruction descriptors (kind::f16, PTX ISA 9.7.16.4.2, Table 42):
//   dtype f32 = 1 << 4, atype bf16 = 1 << 7, btype bf16 = 1 << 10,
//   transpose B (MN-major) = 1 << 16, N >> 3 at bit 17, M >> 4 at bit 24.
//   Q Kᵀ (M 128, N 128, both K-major):           0x08200490 = 136316048
//   P V  (M 128, N hd, V MN-major), hd = 128:     0x08210490 = 136381584
//                                   hd = 64:      0x08110490 = 135333008
// Shared memory descriptors (PTX ISA 9.7.16.4.1, Table 40), built with
// nvvm.tcgen05.mma_smem_desc from fields already divided by 16:
//   Q, K (K-major, 128B swizzle): LBO 16 B (unused), SBO 1024 B (8 rows);
//   V (MN-major): LBO 16384 B (next 64-column panel), SBO 1024 B (8 keys).

llvm.mlir.global external @__blasst_dynamic_smem() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>

// The kernels: one step at head_dim 64 and at 128 (bf16).
llvm.func @attn_step_bf16_hd64(
    %tmQ: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant},
    %tmK: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant},
    %tmV: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant},
    %out: !llvm.ptr<1> {llvm.noalias})
    attributes {nvvm.kernel, nvvm.maxntid = array<i32: 256, 1, 1>, nvvm.minctasm = 1 : i32} {
  %hd = arith.constant 64 : i32
  %idescQK = arith.constant 136316048 : i32
  %idescPV = arith.constant 135333008 : i32
  // softmax_scale * log2(e) = log2(e) / sqrt(64)
  %scale = arith.constant 0.180336878 : f32
  llvm.call @attn_step(%tmQ, %tmK, %tmV, %out, %hd, %idescQK, %idescPV, %scale)
      : (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr<1>, i32, i32, i32, f32) -> ()
  llvm.return
}

llvm.func @attn_step_bf16_hd128(
    %tmQ: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant},
    %tmK: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant},
    %tmV: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant},
    %out: !llvm.ptr<1> {llvm.noalias})
    attributes {nvvm.kernel, nvvm.maxntid = array<i32: 256, 1, 1>, nvvm.minctasm = 1 : i32} {
  %hd = arith.constant 128 : i32
  %idescQK = arith.constant 136316048 : i32
  %idescPV = arith.constant 136381584 : i32
  // log2(e) / sqrt(128)
  %scale = arith.constant 0.127517432 : f32
  llvm.call @attn_step(%tmQ, %tmK, %tmV, %out, %hd, %idescQK, %idescPV, %scale)
      : (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr<1>, i32, i32, i32, f32) -> ()
  llvm.return
}

// The step; inlined into each kernel, where hd is a constant.
llvm.func internal @attn_step(%tmQ: !llvm.ptr, %tmK: !llvm.ptr, %tmV: !llvm.ptr,
                              %out: !llvm.ptr<1>, %hd: i32, %idescQK: i32,
                              %idescPV: i32, %scale: f32)
    attributes {always_inline} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %c3 = arith.constant 3 : i32
  %c4 = arith.constant 4 : i32
  %c8 = arith.constant 8 : i32
  %c16 = arith.constant 16 : i32
  %c32 = arith.constant 32 : i32
  %c64 = arith.constant 64 : i32
  %c128 = arith.constant 128 : i32
  %c256 = arith.constant 256 : i32
  %c1024 = arith.constant 1024 : i32
  %ticks = arith.constant 10000000 : i32
  %tid = nvvm.read.ptx.sreg.tid.x : i32
  %warp = arith.divui %tid, %c32 : i32

  // Shared memory: a tile is 128 rows x hd x 2 B = hd * 256 B.
  %smem = llvm.mlir.addressof @__blasst_dynamic_smem : !llvm.ptr<3>
  %tile = arith.muli %hd, %c256 : i32
  %vOff = arith.muli %tile, %c2 : i32
  %barOff = arith.muli %tile, %c3 : i32
  %qPtr = llvm.getelementptr %smem[%c0] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
  %kPtr = llvm.getelementptr %smem[%tile] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
  %vPtr = llvm.getelementptr %smem[%vOff] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
  %tmaBar = llvm.getelementptr %smem[%barOff] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
  %sFull = llvm.getelementptr %tmaBar[8] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
  %pFull = llvm.getelementptr %tmaBar[16] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
  %oFull = llvm.getelementptr %tmaBar[24] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8
  %tmemSlot = llvm.getelementptr %tmaBar[32] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8

  // Thread 0 initialises the mbarriers; warp 0 allocates 256 columns of
  // tensor memory (the address goes to shared memory) and gives up the right
  // to allocate more.
  %isThread0 = arith.cmpi eq, %tid, %c0 : i32
  scf.if %isThread0 {
    nvvm.mbarrier.init %tmaBar, %c1 : !llvm.ptr<3>, i32
    nvvm.mbarrier.init %sFull, %c1 : !llvm.ptr<3>, i32
    nvvm.mbarrier.init %pFull, %c128 : !llvm.ptr<3>, i32
    nvvm.mbarrier.init %oFull, %c1 : !llvm.ptr<3>, i32
    nvvm.fence.mbarrier.init
  }
  %isWarp0 = arith.cmpi eq, %warp, %c0 : i32
  scf.if %isWarp0 {
    nvvm.tcgen05.alloc %tmemSlot, %c256 : !llvm.ptr<3>, i32
    nvvm.tcgen05.relinquish_alloc_permit
  }
  // The allocation's address is read by every thread after the barrier; the
  // fences order tcgen05 operations around the thread synchronisation.
  nvvm.tcgen05.fence <before>
  nvvm.barrier0
  nvvm.tcgen05.fence <after>
  %tmemBase = llvm.load %tmemSlot : !llvm.ptr<3> -> i32
  // S (and P over it) at column 0, O at column 128.
  %sCol = arith.addi %tmemBase, %c0 : i32
  %oCol = arith.addi %tmemBase, %c128 : i32

  %isSoftmax = arith.cmpi ult, %tid, %c128 : i32
  scf.if %isSoftmax {
    // Softmax warpgroup: each thread one query row (one tensor-memory lane).
    nvvm.setmaxregister increase 240
    nvvm.mbarrier.try_wait.parity %sFull, %c0, %ticks : !llvm.ptr<3>, i32, i32
    nvvm.tcgen05.fence <after>
    %lane0 = arith.muli %warp, %c32 : i32
    %laneField = arith.shli %lane0, %c16 : i32
    %sRowAddr = arith.addi %sCol, %laneField : i32
    %sRow = llvm.inttoptr %sRowAddr : i32 to !llvm.ptr<6>
    // S: 128 f32 columns of this thread's row, one register each.
    %sBits = nvvm.tcgen05.ld %sRow {shape = #nvvm.tcgen05_ldst_shape<shape_32x32b>} : vector<128xi32>
    nvvm.tcgen05.wait <load>
    %s = llvm.bitcast %sBits : vector<128xi32> to vector<128xf32>
    %scaleV = vector.broadcast %scale : f32 to vector<128xf32>
    %x = arith.mulf %s, %scaleV : vector<128xf32>
    %m = llvm.intr.vector.reduce.fmax(%x) : (vector<128xf32>) -> f32
    %mV = vector.broadcast %m : f32 to vector<128xf32>
    %xm = arith.subf %x, %mV : vector<128xf32>
    %p = llvm.intr.exp2(%xm) : (vector<128xf32>) -> vector<128xf32>
    %zero = arith.constant 0.0 : f32
    %l = "llvm.intr.vector.reduce.fadd"(%zero, %p) <{fastmathFlags = #llvm.fastmath<reassoc>}> : (f32, vector<128xf32>) -> f32
    // P as bf16, two per 32-bit column (the lower key in the low half),
    // stored over the first 64 of S's columns: the row's scores are all in
    // registers already (wait::ld above).
    %pBf16 = arith.truncf %p : vector<128xf32> to vector<128xbf16>
    %pBits = llvm.bitcast %pBf16 : vector<128xbf16> to vector<64xi32>
    nvvm.tcgen05.st %sRow, %pBits {shape = #nvvm.tcgen05_ldst_shape<shape_32x32b>} : vector<64xi32>
    nvvm.tcgen05.wait <store>
    nvvm.tcgen05.fence <before>
    nvvm.mbarrier.arrive %pFull : !llvm.ptr<3>
    // O = P V: read back 32 columns at a time, normalise, store row-major.
    nvvm.mbarrier.try_wait.parity %oFull, %c0, %ticks : !llvm.ptr<3>, i32, i32
    nvvm.tcgen05.fence <after>
    %one = arith.constant 1.0 : f32
    %invL = arith.divf %one, %l : f32
    %invLV = vector.broadcast %invL : f32 to vector<32xf32>
    %oRowAddr = arith.addi %oCol, %laneField : i32
    %rowElems = arith.muli %tid, %hd : i32
    scf.for %c = %c0 to %hd step %c32 : i32 {
      %addr = arith.addi %oRowAddr, %c : i32
      %oPtr = llvm.inttoptr %addr : i32 to !llvm.ptr<6>
      %oBits = nvvm.tcgen05.ld %oPtr {shape = #nvvm.tcgen05_ldst_shape<shape_32x32b>} : vector<32xi32>
      nvvm.tcgen05.wait <load>
      %o = llvm.bitcast %oBits : vector<32xi32> to vector<32xf32>
      %on = arith.mulf %o, %invLV : vector<32xf32>
      %idx = arith.addi %rowElems, %c : i32
      %dst = llvm.getelementptr %out[%idx] : (!llvm.ptr<1>, i32) -> !llvm.ptr<1>, f32
      llvm.store %on, %dst {alignment = 16 : i64} : vector<32xf32>, !llvm.ptr<1>
    }
    nvvm.tcgen05.fence <before>
  } else {
    nvvm.setmaxregister decrease 48
    %isLoad = arith.cmpi eq, %warp, %c4 : i32
    %c5 = arith.constant 5 : i32
    %isMma = arith.cmpi eq, %warp, %c5 : i32
    scf.if %isLoad {
      // Load warp: one elected thread issues the TMA copies of Q, K, V, one
      // 64-column panel (128 rows x 128 B, 128B swizzle) each.
      %elected = nvvm.elect.sync -> i1
      scf.if %elected {
        %txBytes = arith.muli %tile, %c3 : i32
        nvvm.mbarrier.arrive.expect_tx %tmaBar, %txBytes : !llvm.ptr<3>, i32
        scf.for %col = %c0 to %hd step %c64 : i32 {
          %panelOff = arith.muli %col, %c256 : i32
          %qDst = llvm.getelementptr %qPtr[%panelOff] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
          %kDst = llvm.getelementptr %kPtr[%panelOff] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
          %vDst = llvm.getelementptr %vPtr[%panelOff] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
          nvvm.cp.async.bulk.tensor.shared.cluster.global %qDst, %tmQ, %tmaBar, box[%col, %c0] {isCTAOnly = true} : !llvm.ptr<3>, !llvm.ptr
          nvvm.cp.async.bulk.tensor.shared.cluster.global %kDst, %tmK, %tmaBar, box[%col, %c0] {isCTAOnly = true} : !llvm.ptr<3>, !llvm.ptr
          nvvm.cp.async.bulk.tensor.shared.cluster.global %vDst, %tmV, %tmaBar, box[%col, %c0] {isCTAOnly = true} : !llvm.ptr<3>, !llvm.ptr
        }
      }
    }
    scf.if %isMma {
      // MMA warp: one elected thread issues every tcgen05.mma and commit
      // (a commit tracks the MMAs of the thread that executes it).
      %elected = nvvm.elect.sync -> i1
      scf.if %elected {
        %sTmem = llvm.inttoptr %sCol : i32 to !llvm.ptr<6>
        %oTmem = llvm.inttoptr %oCol : i32 to !llvm.ptr<6>
        // Descriptor fields in 16-byte units (the op does not divide).
        %lboK = arith.constant 1 : i32      // 16 B: unused for K-major swizzled
        %sbo = arith.constant 64 : i32      // 1024 B: the next 8 rows
        %lboV = arith.constant 1024 : i32   // 16384 B: the next 64-column panel
        %baseOff = arith.constant 0 : i8    // tiles are 1024-byte aligned
        %relative = arith.constant false
        %sw128 = arith.constant 2 : i8      // 128-byte swizzle
        %qAddr = llvm.ptrtoint %qPtr : !llvm.ptr<3> to i32
        %kAddr = llvm.ptrtoint %kPtr : !llvm.ptr<3> to i32
        %vAddr = llvm.ptrtoint %vPtr : !llvm.ptr<3> to i32
        %qEnc = arith.shrui %qAddr, %c4 : i32
        %kEnc = arith.shrui %kAddr, %c4 : i32
        %vEnc = arith.shrui %vAddr, %c4 : i32
        %descQ = nvvm.tcgen05.mma_smem_desc (%qEnc, %lboK, %sbo, %baseOff, %relative, %sw128) : (i32, i32, i32, i8, i1, i8) -> i64
        %descK = nvvm.tcgen05.mma_smem_desc (%kEnc, %lboK, %sbo, %baseOff, %relative, %sw128) : (i32, i32, i32, i8, i1, i8) -> i64
        %descV = nvvm.tcgen05.mma_smem_desc (%vEnc, %lboV, %sbo, %baseOff, %relative, %sw128) : (i32, i32, i32, i8, i1, i8) -> i64

        nvvm.mbarrier.try_wait.parity %tmaBar, %c0, %ticks : !llvm.ptr<3>, i32, i32
        nvvm.tcgen05.fence <after>
        // S = Q Kᵀ: hd / 16 k-steps. A k-step is 32 bytes into the swizzle
        // span of its 64-column panel (panels 16 KB apart); only the start
        // address field of the descriptors changes.
        %ksteps = arith.divui %hd, %c16 : i32
        scf.for %kk = %c0 to %ksteps step %c1 : i32 {
          %panel = arith.divui %kk, %c4 : i32
          %inPanel = arith.remui %kk, %c4 : i32
          %pOff = arith.muli %panel, %c1024 : i32
          %iOff = arith.muli %inPanel, %c2 : i32
          %off = arith.addi %pOff, %iOff : i32
          %off64 = arith.extui %off : i32 to i64
          %dA = arith.addi %descQ, %off64 : i64
          %dB = arith.addi %descK, %off64 : i64
          %accumulate = arith.cmpi ne, %kk, %c0 : i32
          nvvm.tcgen05.mma %sTmem, %dA, %dB, %idescQK, %accumulate {kind = #nvvm.tcgen05_mma_kind<f16>, ctaGroup = #nvvm.cta_group<cta_1>} : (!llvm.ptr<6>, i64, i64, i32, i1)
        }
        nvvm.tcgen05.commit %sFull : !llvm.ptr<3>
        // O = P V with P from tensor memory: 8 k-steps of 16 keys; a k-step
        // is 8 columns of P and 16 rows (2048 B) of V.
        nvvm.mbarrier.try_wait.parity %pFull, %c0, %ticks : !llvm.ptr<3>, i32, i32
        nvvm.tcgen05.fence <after>
        scf.for %kk = %c0 to %c8 step %c1 : i32 {
          %pColOff = arith.muli %kk, %c8 : i32
          %pAddr = arith.addi %sCol, %pColOff : i32
          %pTmem = llvm.inttoptr %pAddr : i32 to !llvm.ptr<6>
          %vStep = arith.muli %kk, %c128 : i32
          %vStep64 = arith.extui %vStep : i32 to i64
          %dB = arith.addi %descV, %vStep64 : i64
          %accumulate = arith.cmpi ne, %kk, %c0 : i32
          nvvm.tcgen05.mma %oTmem, %pTmem, %dB, %idescPV, %accumulate {kind = #nvvm.tcgen05_mma_kind<f16>, ctaGroup = #nvvm.cta_group<cta_1>} : (!llvm.ptr<6>, !llvm.ptr<6>, i64, i32, i1)
        }
        nvvm.tcgen05.commit %oFull : !llvm.ptr<3>
      }
    }
  }
  // Every role is done with tensor memory: warp 0 frees it.
  nvvm.barrier0
  scf.if %isWarp0 {
    nvvm.tcgen05.fence <after>
    %base = llvm.inttoptr %tmemBase : i32 to !llvm.ptr<6>
    nvvm.tcgen05.dealloc %base, %c256 : !llvm.ptr<6>, i32
  }
  llvm.return
}
