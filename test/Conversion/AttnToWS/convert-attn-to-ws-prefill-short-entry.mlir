// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a" | FileCheck %s
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-verify-sync=report 2>&1 >/dev/null | FileCheck %s --check-prefix=SYNC
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a" --blasst-verify-sync --convert-ws-to-nvvm | FileCheck %s --check-prefix=LLVM
// RUN: sed -e 's/q_heads = 16, kv_heads = 16/q_heads = 16, kv_heads = 16, causal = true/' %s | blasst-opt --convert-attn-to-ws="target=sm_90a" | FileCheck %s --check-prefix=CAUSAL
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a short-entry=false" | FileCheck %s --check-prefix=OFF
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a block-n=128" | FileCheck %s --check-prefix=OFF
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a persistent=true" | FileCheck %s --check-prefix=OFF
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_90a kv-multicast=true" | FileCheck %s --check-prefix=OFF
// RUN: sed -e 's/x128xbf16/x64xbf16/g; s/head_dim = 128/head_dim = 64/' %s | blasst-opt --convert-attn-to-ws="target=sm_90a" | FileCheck %s --check-prefix=TWO
// RUN: sed -e 's/x128xbf16/x64xbf16/g; s/head_dim = 128/head_dim = 64/' %s | blasst-opt --convert-attn-to-ws="target=sm_90a" --blasst-verify-sync=report 2>&1 >/dev/null | FileCheck %s --check-prefix=SYNC
// RUN: sed -e 's/x128xbf16/x64xbf16/g; s/head_dim = 128/head_dim = 64/' %s | blasst-opt --convert-attn-to-ws="target=sm_90a" --blasst-verify-sync --convert-ws-to-nvvm | FileCheck %s --check-prefix=LLVM64
// RUN: sed -e 's/x128xbf16/x64xbf16/g; s/head_dim = 128/head_dim = 64/' %s | blasst-opt --convert-attn-to-ws="target=sm_90a stages=4" | FileCheck %s --check-prefix=TWO
// RUN: sed -e 's/x128xbf16/x64xbf16/g; s/head_dim = 128/head_dim = 64/' %s | blasst-opt --convert-attn-to-ws="target=sm_90a overlap=false" | FileCheck %s --check-prefix=OFF
// RUN: sed -e 's/x128xbf16/x64xbf16/g; s/head_dim = 128/head_dim = 64/' %s | not blasst-opt --convert-attn-to-ws="target=sm_90a overlap=false short-entry=true" 2>&1 | FileCheck %s --check-prefix=ERR
// RUN: sed -e 's/x128xbf16/x64xbf16/g; s/head_dim = 128/head_dim = 64/' %s | blasst-opt --convert-attn-to-ws="target=sm_90a q-in-registers=true" | FileCheck %s --check-prefix=QREG
// The two-CTA entry's blocks are 64 keys: a kernel asked for 64-key blocks has none (its blocks would not be wider).
// RUN: sed -e 's/x128xbf16/x64xbf16/g; s/head_dim = 128/head_dim = 64/' %s | blasst-opt --convert-attn-to-ws="target=sm_90a block-n=64 stages=3" | FileCheck %s --check-prefix=OFF
// RUN: sed -e 's/x128xbf16/x64xbf16/g; s/head_dim = 128/head_dim = 64/' %s | not blasst-opt --convert-attn-to-ws="target=sm_90a block-n=64 short-entry=true" 2>&1 | FileCheck %s --check-prefix=ERR
// RUN: sed -e 's/kv_heads = 16>/kv_heads = 16, sparsity = blasst(ln_lambda = -8.0)>/' %s | blasst-opt --convert-attn-to-ws="target=sm_90a short-entry=false" | FileCheck %s --check-prefix=OFF
// RUN: sed -e 's/kv_heads = 16>/kv_heads = 16, sparsity = blasst(ln_lambda = -8.0)>/' %s | blasst-opt --convert-attn-to-ws="target=sm_90a" --blasst-insert-vote --blasst-v-on-demand --blasst-verify-sync=report 2>&1 | FileCheck %s --check-prefix=BLASST
// RUN: sed -e 's/x128xbf16/x64xbf16/g; s/head_dim = 128/head_dim = 64/; s/kv_heads = 16>/kv_heads = 16, sparsity = blasst(ln_lambda = -8.0)>/' %s | blasst-opt --convert-attn-to-ws="target=sm_90a short-entry=false" | FileCheck %s --check-prefix=OFF
// RUN: sed -e 's/x128xbf16/x64xbf16/g; s/head_dim = 128/head_dim = 64/; s/kv_heads = 16>/kv_heads = 16, sparsity = blasst(ln_lambda = -8.0)>/' %s | blasst-opt --convert-attn-to-ws="target=sm_90a" --blasst-insert-vote --blasst-v-on-demand --blasst-verify-sync=report 2>&1 | FileCheck %s --check-prefix=BLASST64
// RUN: sed -e 's/x128xbf16/x64xbf16/g; s/head_dim = 128/head_dim = 64/; s/kv_heads = 16>/kv_heads = 16, sparsity = blasst(ln_lambda = -8.0)>/' %s | not blasst-opt --convert-attn-to-ws="target=sm_90a short-entry=true overlap=false" 2>&1 | FileCheck %s --check-prefix=ERR
// RUN: blasst-opt %s --convert-attn-to-ws="target=sm_100a" | FileCheck %s --check-prefix=OFF
// RUN: sed -e 's/x128xbf16/x256xbf16/g; s/head_dim = 128/head_dim = 256/' %s | not blasst-opt --convert-attn-to-ws="target=sm_90a short-entry=true" 2>&1 | FileCheck %s --check-prefix=ERR
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a short-entry=true block-n=128" 2>&1 | FileCheck %s --check-prefix=ERR
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a short-entry=maybe" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: (cat %s; echo 'func.func @mha_kernel_short() { return }') | not blasst-opt --convert-attn-to-ws="target=sm_90a" 2>&1 | FileCheck %s --check-prefix=TAKEN
// The short-sequence entry (docs/design.md, Schedule options, short-entry): dense
// prefill at head_dim 128 with KV blocks wider than 128 keys carries
// `<kernel>_short`, the same schedule with 128-key blocks, which the
// runtime launches where the wide blocks compute more padded keys; at
// head_dim 64 the entry runs two CTAs per SM (64-key blocks, 3 stages, P in
// shared memory, 24 / 104 registers; launched with its own shared memory,
// so the kernel's stages do not matter to it).

// BLASST carries the entry too (by default since session 45; one CTA per
// tile, not persistent: V on demand needs it): the vote
// passes give both kernels their votes, and the checker proves both; at
// head_dim 64 the two-CTA entry (104 registers hold the votes; causal
// without statistics ptxas keeps one value in local memory across the loop).
// BLASST: remark: synchronisation verified
// BLASST: remark: synchronisation verified
// BLASST: ws.kernel @mha_kernel target = sm_90a, block_m = 128, block_n = 192
// BLASST: ws.await_vote
// BLASST: ws.vote @s {publish}
// BLASST: ws.kernel @mha_kernel_short target = sm_90a, block_m = 128, block_n = 128
// BLASST-SAME: > entry_of @mha_kernel
// BLASST: ws.await_vote
// BLASST: ws.vote @s {publish}
// BLASST64: remark: synchronisation verified
// BLASST64: remark: synchronisation verified
// BLASST64: ws.kernel @mha_kernel target = sm_90a, block_m = 128, block_n = 128
// BLASST64: ws.await_vote
// BLASST64: ws.vote @s {publish}
// BLASST64: ws.kernel @mha_kernel_short target = sm_90a, block_m = 128, block_n = 64
// BLASST64-SAME: ctas_per_sm = 2 entry_of @mha_kernel
// BLASST64-SAME: consumer_regs = 104
// BLASST64: ws.await_vote
// BLASST64: ws.vote @s {publish}

// CHECK: ws.launch @mha_kernel(
// CHECK: ws.kernel @mha_kernel target = sm_90a, block_m = 128, block_n = 192
// CHECK-SAME: short_entry = true
// Dense: the entry is persistent (session 46), with persistent CTAs'
// registers.
// CHECK: ws.kernel @mha_kernel_short target = sm_90a, block_m = 128, block_n = 128
// CHECK-SAME: persistent reverse_tiles entry_of @mha_kernel
// CHECK-SAME: consumer_regs = 232
// CHECK-SAME: persistent = true
// CHECK-SAME: short_entry = false
// CHECK-NOT: ws.kernel

// CAUSAL: ws.kernel @mha_kernel target = sm_90a, block_m = 128, block_n = 176
// CAUSAL-SAME: reverse_tiles
// CAUSAL-SAME: short_entry = true
// CAUSAL: ws.kernel @mha_kernel_short target = sm_90a, block_m = 128, block_n = 128
// CAUSAL-SAME: persistent reverse_tiles

// Both kernels are proven.
// SYNC: remark: synchronisation verified
// SYNC: remark: synchronisation verified

// The kernel says so (findLoweredKernel reads it).
// LLVM: llvm.func @mha_kernel(
// LLVM-SAME: blasst.block_n = 192
// LLVM-SAME: blasst.short_entry
// LLVM: llvm.func @mha_kernel_short(
// LLVM-SAME: blasst.block_n = 128
// LLVM-NOT: blasst.short_entry

// TWO: ws.kernel @mha_kernel target = sm_90a, block_m = 128, block_n = 128
// TWO-SAME: short_entry = true
// TWO: ws.kernel @mha_kernel_short target = sm_90a, block_m = 128, block_n = 64
// TWO-SAME: ctas_per_sm = 2
// TWO-SAME: consumer_regs = 104
// TWO-SAME: p_in_registers = false
// TWO-SAME: producer_regs = 24
// TWO-SAME: short_entry = false, stages = 3
// TWO-NOT: ws.kernel

// LLVM64: llvm.func @mha_kernel(
// LLVM64-SAME: blasst.short_entry
// LLVM64: llvm.func @mha_kernel_short(
// LLVM64-SAME: blasst.block_n = 64
// LLVM64-SAME: blasst.ctas_per_sm = 2

// QREG: ws.kernel @mha_kernel_short
// QREG-SAME: q_in_registers = false

// OFF: ws.kernel @mha_kernel
// OFF-NOT: short_entry = true
// OFF-NOT: ws.kernel @mha_kernel_short

// ERR: error: 'attn.attention' op short-entry=true needs sm_90a prefill at head_dim 64 with the overlap and KV blocks wider than 64 keys or at 128 with blocks wider than 128 keys, with 128-row query tiles and one CTA per tile
// BAD: short-entry
// TAKEN: error: 'attn.attention' op the short-sequence entry's name mha_kernel_short is taken in this module
func.func @mha(%q: memref<?x?x16x128xbf16>, %k: memref<?x?x16x128xbf16>, %v: memref<?x?x16x128xbf16>, %o: memref<?x?x16x128xbf16>) {
  attn.attention %q, %k, %v -> %o spec(<head_dim = 128, q_heads = 16, kv_heads = 16>) : memref<?x?x16x128xbf16>, memref<?x?x16x128xbf16>, memref<?x?x16x128xbf16>, memref<?x?x16x128xbf16>
  return
}
