// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a overlap=false" --convert-ws-to-nvvm | FileCheck %s
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a overlap=false" --convert-ws-to-nvvm=device-only | FileCheck %s --check-prefix=DEVICE
// The sm_90a lowering of the default schedule: the kernel signature (ABI v1),
// mbarrier rings, the warpgroup role split with setmaxnreg, TMA loads of
// 64-column panels, wgmma for S = Q Kᵀ (K-major B) and O += P V (MN-major
// B), and the online softmax on the accumulator fragments.

// The host function keeps its launch, now naming the lowered kernel.
// CHECK-LABEL: func.func @attn
// CHECK: ws.launch @attn_kernel(
// DEVICE-NOT: func.func @attn

// CHECK: llvm.mlir.global external @__blasst_dynamic_smem() {addr_space = 3 : i32, alignment = 1024 : i64}
// CHECK-LABEL: llvm.func @attn_kernel(
// CHECK-SAME: %{{.*}}: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant}
// CHECK-SAME: %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: f32, %{{.*}}: f32, %{{.*}}: !llvm.ptr)
// CHECK-SAME: blasst.block_m = 128 : i64, blasst.block_n = 128 : i64
// CHECK-SAME: blasst.smem_bytes = 196688 : i64, blasst.spec = #attn.spec<{{.*}}>, blasst.threads = 384 : i64
// CHECK-SAME: nvvm.kernel, nvvm.maxntid = array<i32: 384, 1, 1>, nvvm.minctasm = 1 : i32

// Thread 0 initialises the rings: full barriers expect one producer thread,
// empty barriers the 256 consumer threads.
// CHECK: nvvm.mbarrier.init %{{.*}}, %{{.*}} : !llvm.ptr<3>, i32
// CHECK: nvvm.fence.mbarrier.init
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK: nvvm.barrier0

// Producer warpgroup: gives registers away, one thread issues TMA.
// CHECK: nvvm.setmaxregister decrease 24
// CHECK: nvvm.mbarrier.try_wait.parity
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global
// CHECK: nvvm.cp.async.bulk.tensor.shared.cluster.global
// CHECK: nvvm.mbarrier.arrive.expect_tx %{{.*}}, %{{.*}} : !llvm.ptr<3>, i32
// CHECK: scf.for

// Consumer warpgroups: take registers, S = Q Kᵀ in eight k16 steps.
// CHECK: nvvm.setmaxregister increase 240
// CHECK: scf.for {{.*}} iter_args(
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: nvvm.mbarrier.arrive
// Row max across the quad, exp2, P to smem, then the warpgroup barrier.
// CHECK: nvvm.shfl.sync  bfly
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f"
// CHECK: llvm.store {{.*}} : vector<2xbf16>, !llvm.ptr<3>
// CHECK: nvvm.fence.proxy
// CHECK: nvvm.barrier id = {{.*}} number_of_threads = {{.*}}
// O += P V with V MN-major (layout B row = transposed).
// CHECK: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 128, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>]
// CHECK: scf.yield
// Epilogue: normalise and store bf16 pairs to O.
// CHECK: llvm.store {{.*}} : vector<2xbf16>, !llvm.ptr
// CHECK: nvvm.setmaxregister increase 240
func.func @attn(%q: memref<?x?x16x128xbf16>, %k: memref<?x?x16x128xbf16>, %v: memref<?x?x16x128xbf16>, %o: memref<?x?x16x128xbf16>) {
  attn.attention %q, %k, %v -> %o spec(<preset = "mha-hd128-prefill">) : memref<?x?x16x128xbf16>, memref<?x?x16x128xbf16>, memref<?x?x16x128xbf16>, memref<?x?x16x128xbf16>
  return
}
