// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a block-m=128" 2>&1 | FileCheck %s --check-prefix=BLOCKM
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a pingpong=true" 2>&1 | FileCheck %s --check-prefix=PINGPONG
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_100a" 2>&1 | FileCheck %s --check-prefix=SM100
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a kv-splits=-1" 2>&1 | FileCheck %s --check-prefix=NEG
// RUN: sed -e 's/phase = decode/phase = prefill/' %s | not blasst-opt --convert-attn-to-ws="target=sm_90a kv-splits=2" 2>&1 | FileCheck %s --check-prefix=PREFILL
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a split-interleave=false split-chunk=4" 2>&1 | FileCheck %s --check-prefix=CHUNKOFF
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a split-chunk=2000" 2>&1 | FileCheck %s --check-prefix=CHUNKBIG
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a split-chunk=-2" 2>&1 | FileCheck %s --check-prefix=CHUNKNEG
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a split-interleave=maybe" 2>&1 | FileCheck %s --check-prefix=ILBAD
// RUN: sed -e 's/phase = decode/phase = prefill/' %s | not blasst-opt --convert-attn-to-ws="target=sm_90a split-chunk=2" 2>&1 | FileCheck %s --check-prefix=PCHUNK
// RUN: sed -e 's/phase = decode/phase = prefill/' %s | not blasst-opt --convert-attn-to-ws="target=sm_90a split-interleave=true" 2>&1 | FileCheck %s --check-prefix=PIL
// RUN: sed -e 's/phase = decode/phase = prefill/' %s | not blasst-opt --convert-attn-to-ws="target=sm_90a kv-cp-async=true" 2>&1 | FileCheck %s --check-prefix=CPAPREFILL
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a kv-cp-async=true persistent=true" 2>&1 | FileCheck %s --check-prefix=CPAPERSISTENT
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a kv-cp-async=often" 2>&1 | FileCheck %s --check-prefix=CPABAD
// RUN: not blasst-opt %s --convert-attn-to-ws="target=sm_90a kv-splits=1025" 2>&1 | FileCheck %s --check-prefix=KVBIG
// The tile sizes the pass checks itself (blasst-compile and the JIT check
// them first; blasst-opt reaches the pass directly).
// RUN: sed -e 's/phase = decode/phase = prefill/' %s | not blasst-opt --convert-attn-to-ws="target=sm_90a block-m=192" 2>&1 | FileCheck %s --check-prefix=PBLOCKM192
// RUN: sed -e 's/phase = decode/phase = prefill/' %s | not blasst-opt --convert-attn-to-ws="target=sm_90a block-m=60" 2>&1 | FileCheck %s --check-prefix=PBLOCKM60
// RUN: sed -e 's/phase = decode/phase = prefill/' %s | not blasst-opt --convert-attn-to-ws="target=sm_100a block-m=128" 2>&1 | FileCheck %s --check-prefix=PBLOCKM100
// Knobs the decode schedule refuses (and split KV on a prefill spec).

// KVBIG: error: 'attn.attention' op kv-splits=1025: KV splits per tile are 1 to 1024 (0: chosen at launch)
// PBLOCKM192: error: 'attn.attention' op block-m=192: the sm_90a schedule splits block_m between two consumer warpgroups of 64 query rows each (one wgmma tile), so block_m must be 128
// PBLOCKM60: error: 'attn.attention' op block-m=60: query rows per CTA must be a positive multiple of 64
// PBLOCKM100: error: 'attn.attention' op block-m=128: the sm_100a schedule computes two Q tiles of 128 rows (tcgen05.mma's M, one row per softmax thread), so block_m must be 256

// CPAPREFILL: error: 'attn.attention' op kv-cp-async=true copies K/V with cp.async in sm_90a decode, with one CTA per split or lean CTAs (not with persistent CTAs walking the splits)
// CPAPERSISTENT: error: 'attn.attention' op kv-cp-async=true copies K/V with cp.async in sm_90a decode, with one CTA per split or lean CTAs (not with persistent CTAs walking the splits)
// CPABAD: convert-attn-to-ws: option kv-cp-async must be auto, true or false, got 'often'

// BLOCKM: error: 'attn.attention' op decode schedule: block-m=128: the decode schedule packs the tokens of a kv head's q heads into one 64-row tile (one consumer warpgroup)
// PINGPONG: error: 'attn.attention' op decode schedule: kv-multicast and pingpong are prefill schedules
// SM100: error: 'attn.attention' op cannot be compiled for sm_100a: phase = decode is not implemented on sm_100a yet (the decode schedule is sm_90a's)
// NEG: convert-attn-to-ws: option kv-splits must not be negative, got -1
// CHUNKOFF: error: 'attn.attention' op decode schedule: split-chunk=4 with split-interleave=false: chunks are how interleaved splits take their KV blocks
// CHUNKBIG: error: 'attn.attention' op decode schedule: split-chunk=2000: a chunk is 1 to 1024 KV blocks
// CHUNKNEG: convert-attn-to-ws: option split-chunk must not be negative, got -2
// ILBAD: convert-attn-to-ws: option split-interleave must be auto, true or false, got 'maybe'
// PCHUNK: error: 'attn.attention' op split-chunk=2: split KV is the decode schedule's (phase = decode)
// PIL: error: 'attn.attention' op split-interleave=true: split KV is the decode schedule's (phase = decode)
// PREFILL: error: 'attn.attention' op kv-splits=2: split KV is the decode schedule's (phase = decode)
func.func @decode(%q: memref<?x?x32x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x32x128xbf16>) {
  attn.attention %q, %k, %v -> %o spec(<head_dim = 128, q_heads = 32, kv_heads = 8, phase = decode>) : memref<?x?x32x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x32x128xbf16>
  return
}
