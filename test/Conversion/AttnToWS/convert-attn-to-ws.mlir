// RUN: blasst-opt %s -split-input-file --convert-attn-to-ws="target=sm_90a overlap=false" | FileCheck %s --check-prefix=H100
// RUN: blasst-opt %s -split-input-file --convert-attn-to-ws=target=sm_100a | FileCheck %s --check-prefix=B200
// RUN: blasst-opt %s -split-input-file --convert-attn-to-ws="target=sm_90a block-n=64 stages=3 overlap=false" | FileCheck %s --check-prefix=KNOBS
// RUN: blasst-opt %s -split-input-file --convert-attn-to-ws="target=sm_90a overlap=true p-in-registers=false" | FileCheck %s --check-prefix=OVERLAP
// RUN: blasst-opt %s -split-input-file --convert-attn-to-ws="target=sm_90a pingpong=true overlap=false" | FileCheck %s --check-prefix=PINGPONG
// RUN: blasst-opt %s -split-input-file --convert-attn-to-ws=target=sm_90a | FileCheck %s --check-prefix=DEFAULT
// The default schedule of each target, the launch that replaces attn.attention,
// and the schedule knobs.

// H100-LABEL: func.func @llama
// H100: ws.launch @llama_kernel(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})
// H100-NOT: attn.attention
// H100: ws.kernel @llama_kernel target = sm_90a, block_m = 128, block_n = 128
// H100-DAG: ws.buffer @q smem [128, 128] bf16 stages 1
// H100-DAG: ws.buffer @k smem [128, 128] bf16 stages 2
// H100-DAG: ws.buffer @v smem [128, 128] bf16 stages 2
// H100-DAG: ws.buffer @s regs [64, 128] f32 stages 1
// H100-DAG: ws.buffer @p smem [128, 128] bf16 stages 1
// H100-DAG: ws.buffer @o regs [64, 128] f32 stages 1
// H100-DAG: ws.pipe @q_pipe depth 1 producer @producer consumers [@consumer0, @consumer1] buffers [@q] tx_bytes 32768
// H100-DAG: ws.pipe @k_pipe depth 2 producer @producer consumers [@consumer0, @consumer1] buffers [@k] tx_bytes 32768
// H100-DAG: ws.pipe @v_pipe depth 2 producer @producer consumers [@consumer0, @consumer1] buffers [@v] tx_bytes 32768
// H100: ws.role @producer load warps [0, 4) regs 24 {
// H100: ws.tma_load q -> @q via @q_pipe
// H100: ws.kv_loop {
// H100: ws.tma_load k -> @k via @k_pipe
// H100: ws.tma_load v -> @v via @v_pipe
// H100: ws.role @consumer0 compute warps [4, 8) regs 240 rows [0, 64) {
// H100: ws.kv_loop {
// H100-NEXT: ws.acquire @k_pipe
// H100-NEXT: ws.mma qk @q, @k -> @s
// H100-NEXT: ws.release @k_pipe
// H100-NEXT: ws.row_max @s
// H100-NEXT: ws.softmax_update @s
// H100-NEXT: ws.exp2_store_p @s -> @p
// H100-NEXT: ws.correct @o
// H100-NEXT: ws.acquire @v_pipe
// H100-NEXT: ws.mma pv @p, @v -> @o
// H100-NEXT: ws.release @v_pipe
// H100: ws.epilogue @o
// H100: ws.role @consumer1 compute warps [8, 12) regs 240 rows [64, 128) {

// B200-LABEL: ws.kernel @llama_kernel target = sm_100a, block_m = 256, block_n = 128
// B200-DAG: ws.buffer @s0 tmem [128, 128] f32 stages 1
// B200-DAG: ws.buffer @p0 tmem [128, 128] bf16 stages 1 aliases @s0
// B200-DAG: ws.buffer @o0 tmem [128, 128] f32 stages 1
// B200-DAG: ws.buffer @o_stage0 smem [128, 128] bf16 stages 1 aliases @q0
// B200-DAG: ws.buffer @o_stage1 smem [128, 128] bf16 stages 1 aliases @q1
// B200-DAG: ws.buffer @f0 smem [128, 2] f32 stages 1
// B200-DAG: ws.buffer @l0 smem [128, 2] f32 stages 1
// B200-DAG: ws.pipe @q_pipe depth 1 producer @load consumers [@mma] buffers [@q0, @q1] tx_bytes 65536
// B200-DAG: ws.pipe @s0_pipe depth 1 producer @mma consumers [@softmax0] buffers [@s0]
// B200-DAG: ws.pipe @p1_pipe depth 1 producer @softmax1 consumers [@mma] buffers [@p1]
// B200-DAG: ws.pipe @f0_pipe depth 1 producer @softmax0 consumers [@correction] buffers [@f0]
// B200-DAG: ws.pipe @l1_pipe depth 1 producer @softmax1 consumers [@correction] buffers [@l1]
// B200-DAG: ws.pipe @o0_pipe depth 1 producer @correction consumers [@mma] buffers [@o0]
// B200-DAG: ws.pipe @done_pipe depth 1 producer @mma consumers [@correction]
// B200-DAG: ws.pipe @epi0_pipe depth 1 producer @correction consumers [@epilogue] buffers [@o_stage0]
// B200: ws.role @softmax0 softmax warps [0, 4) regs 184 rows [0, 128) {
// B200: ws.read_scores @s0
// B200: ws.softmax_update @s0 -> @f0
// B200: ws.exp2_store_p @s0 -> @p0
// B200: ws.store_row_sums -> @l0
// B200: ws.role @softmax1 softmax warps [4, 8) regs 184 rows [128, 256) {
// B200: ws.role @correction correction warps [8, 12) regs 80 {
// B200: ws.acquire @f0_pipe
// B200-NEXT: ws.acquire @o0_pipe
// B200-NEXT: ws.correct @o0 by @f0
// B200-NEXT: ws.release @o0_pipe
// B200: ws.acquire @done_pipe
// B200: ws.epilogue @o0 -> @o_stage0 sums @l0
// B200: ws.role @mma mma warps [12, 13) regs 64 {
// B200: ws.mma qk @q0, @k -> @s0
// B200: ws.mma qk @q1, @k -> @s1
// B200: ws.kv_loop {
// B200: ws.mma pv @p0, @v -> @o0
// B200: ws.mma qk @q0, @k -> @s0 {ahead = 1 : i64}
// B200: ws.mma pv @p1, @v -> @o1
// B200: ws.mma qk @q1, @k -> @s1 {ahead = 1 : i64}
// B200: ws.role @load load warps [13, 14) regs 64 {
// B200: ws.role @epilogue epilogue warps [14, 15) regs 64 {
// B200: ws.tma_store @o_stage0 -> o
// B200: ws.tma_store @o_stage1 -> o

// KNOBS-LABEL: ws.kernel @llama_kernel target = sm_90a, block_m = 128, block_n = 64
// KNOBS-DAG: ws.buffer @k smem [64, 128] bf16 stages 3
// KNOBS-DAG: ws.pipe @k_pipe depth 3 producer @producer consumers [@consumer0, @consumer1] buffers [@k] tx_bytes 16384
func.func @llama(%q: memref<?x?x32x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x32x128xbf16>) {
  attn.attention %q, %k, %v -> %o spec(<preset = "llama3-8b-prefill">) : memref<?x?x32x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x32x128xbf16>
  return
}

// -----

// head_dim 64, f16, with LSE: the epilogue writes it; the launch passes it.
// H100-LABEL: func.func @hd64_lse
// H100: ws.launch @hd64_lse_kernel(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : {{.*}}memref<?x16x?xf32>
// H100: ws.kernel @hd64_lse_kernel
// H100-DAG: ws.buffer @q smem [128, 64] f16 stages 1
// H100-DAG: ws.pipe @k_pipe depth 2 {{.*}} tx_bytes 16384
// H100: ws.epilogue @o {lse}
// B200-LABEL: ws.kernel @hd64_lse_kernel target = sm_100a
// B200-DAG: ws.buffer @o0 tmem [128, 64] f32 stages 1
// B200: ws.epilogue @o0 -> @o_stage0 sums @l0 {lse}
func.func @hd64_lse(%q: memref<?x?x16x64xf16>, %k: memref<?x?x16x64xf16>, %v: memref<?x?x16x64xf16>, %o: memref<?x?x16x64xf16>, %lse: memref<?x16x?xf32>) {
  attn.attention %q, %k, %v -> %o lse(%lse : memref<?x16x?xf32>) spec(<dtype = f16, head_dim = 64, q_heads = 16, kv_heads = 16, lse = true>) : memref<?x?x16x64xf16>, memref<?x?x16x64xf16>, memref<?x?x16x64xf16>, memref<?x?x16x64xf16>
  return
}


// -----

// The overlap schedule (sm_90a, FlashAttention-3's intra-warpgroup overlap):
// block 0's softmax is the prologue; each iteration issues Q Kᵀ of block
// n+1 and P V of block n, waits for the scores only (pending = 1), runs
// block n+1's softmax during P V, then waits for O and rescales it.
// The sm_90a default for dense head_dim <= 128 is this schedule with P in
// registers and, at head_dim 128, 192-key blocks without the causal mask
// (176, FA3's, with it: the next case).
// DEFAULT-LABEL: ws.kernel @overlap_kernel target = sm_90a, block_m = 128, block_n = 192
// DEFAULT: ws.buffer @p regs [64, 192] bf16 stages 1
// With P in registers the exponentials stay f32 in S until the wait that
// retires P V(n) (which reads the previous P); P is packed after it.
// DEFAULT: ws.row_max @s {ahead = 1 : i64}
// DEFAULT-NEXT: ws.softmax_update @s
// DEFAULT-NEXT: ws.exp2 @s {guarded}
// DEFAULT-NEXT: ws.mma_wait
// DEFAULT-NEXT: ws.release @v_pipe
// DEFAULT-NEXT: ws.correct @o
// DEFAULT-NEXT: ws.pack_p @s -> @p
// DEFAULT-NEXT: }
// OVERLAP-LABEL: ws.kernel @overlap_kernel
// OVERLAP: ws.buffer @s regs [64, 128] f32 stages 1
// OVERLAP: ws.role @consumer0
// OVERLAP: ws.acquire @k_pipe
// OVERLAP-NEXT: ws.mma qk @q, @k -> @s
// OVERLAP-NEXT: ws.release @k_pipe
// OVERLAP-NEXT: ws.row_max @s
// OVERLAP-NEXT: ws.softmax_update @s
// OVERLAP-NEXT: ws.exp2_store_p @s -> @p
// OVERLAP-NEXT: ws.kv_loop {
// OVERLAP-NEXT: ws.acquire @k_pipe {ahead = 1 : i64}
// OVERLAP-NEXT: ws.mma qk @q, @k -> @s {ahead = 1 : i64, async}
// OVERLAP-NEXT: ws.acquire @v_pipe
// OVERLAP-NEXT: ws.mma pv @p, @v -> @o {async}
// OVERLAP-NEXT: ws.mma_wait {pending = 1 : i64}
// OVERLAP-NEXT: ws.release @k_pipe {ahead = 1 : i64}
// OVERLAP-NEXT: ws.row_max @s {ahead = 1 : i64}
// OVERLAP-NEXT: ws.softmax_update @s
// OVERLAP-NEXT: ws.mma_wait
// OVERLAP-NEXT: ws.exp2_store_p @s -> @p
// OVERLAP-NEXT: ws.release @v_pipe
// OVERLAP-NEXT: ws.correct @o
// OVERLAP-NEXT: }
// OVERLAP-NEXT: ws.release @q_pipe
func.func @overlap(%q: memref<?x?x8x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x8x128xbf16>) {
  attn.attention %q, %k, %v -> %o spec(<head_dim = 128, q_heads = 8, kv_heads = 8>) : memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>
  return
}

// -----

// Causal head_dim 128 keeps FA3's 176-key blocks (192 spills with the mask
// and measured slower with BLASST, docs/results/2026-11-29-session6.md §7).
// DEFAULT-LABEL: ws.kernel @overlap_causal_kernel target = sm_90a, block_m = 128, block_n = 176
// DEFAULT: ws.buffer @p regs [64, 176] bf16 stages 1
func.func @overlap_causal(%q: memref<?x?x8x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x8x128xbf16>) {
  attn.attention %q, %k, %v -> %o spec(<head_dim = 128, q_heads = 8, kv_heads = 8, causal = true>) : memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>
  return
}

// -----

// Ping-pong (sm_90a): the consumers take turns for P V of block n and
// Q Kᵀ of block n+1; one's softmax runs during the other's GEMMs.
// PINGPONG-LABEL: ws.kernel @pingpong_kernel
// PINGPONG: ws.order @gemm_turn roles [@consumer0, @consumer1]
// PINGPONG: ws.role @consumer0
// PINGPONG: ws.turn_wait @gemm_turn
// PINGPONG-NEXT: ws.kv_loop {
// PINGPONG-NEXT: ws.acquire @k_pipe
// PINGPONG-NEXT: ws.mma qk @q, @k -> @s
// PINGPONG-NEXT: ws.release @k_pipe
// PINGPONG-NEXT: ws.turn_pass @gemm_turn
// PINGPONG: ws.turn_wait @gemm_turn
// PINGPONG-NEXT: ws.acquire @v_pipe
// PINGPONG-NEXT: ws.mma pv @p, @v -> @o
// PINGPONG-NEXT: ws.release @v_pipe
// PINGPONG-NEXT: }
// PINGPONG-NEXT: ws.turn_pass @gemm_turn
func.func @pingpong(%q: memref<?x?x8x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x8x128xbf16>) {
  attn.attention %q, %k, %v -> %o spec(<head_dim = 128, q_heads = 8, kv_heads = 8>) : memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>
  return
}
