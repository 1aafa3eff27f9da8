// RUN: blasst-opt %s -split-input-file -verify-diagnostics
// One case per user-facing attn error: spec syntax, spec validity, operands.

func.func @unknown_key() attributes {s = #attn.spec<
  // expected-error @below {{unknown spec key 'heads'}}
  heads = 4>} { return }

// -----

func.func @duplicate_key() attributes {s = #attn.spec<head_dim = 64,
  // expected-error @below {{duplicate spec key 'head_dim'}}
  head_dim = 128>} { return }

// -----

func.func @unknown_preset() attributes {s = #attn.spec<preset =
  // expected-error @below {{unknown preset 'llama9'}}
  "llama9">} { return }

// -----

func.func @preset_not_first() attributes {s = #attn.spec<causal = true,
  // expected-error @below {{'preset' must be the first key}}
  preset = "llama3-8b-prefill">} { return }

// -----

func.func @bad_dtype() attributes {s = #attn.spec<dtype =
  // expected-error @below {{dtype must be bf16 or f16, got 'f32'}}
  f32>} { return }

// -----

func.func @bad_bool() attributes {s = #attn.spec<causal =
  // expected-error @below {{'causal' must be true or false}}
  yes>} { return }

// -----

func.func @bad_phase() attributes {s = #attn.spec<phase =
  // expected-error @below {{phase must be prefill or decode}}
  training>} { return }

// -----

func.func @bad_head_dim() attributes {s = #attn.spec<head_dim =
  // expected-error @below {{'head_dim' must be positive, got 0}}
  0>} { return }

// -----

func.func @bad_sparsity() attributes {s = #attn.spec<sparsity =
  // expected-error @below {{sparsity must be none, blasst(a = <float>) or blasst(ln_lambda = <float>)}}
  topk(k = 4)>} { return }

// -----

func.func @bad_sparsity_param() attributes {s = #attn.spec<sparsity = blasst(
  // expected-error @below {{blasst takes 'a' or 'ln_lambda', got 'lambda'}}
  lambda = 0.1)>} { return }

// -----

// expected-error @below {{invalid attention spec: q_heads 32 is not a multiple of kv_heads 6}}
func.func @bad_ratio() attributes {s = #attn.spec<q_heads = 32, kv_heads = 6>} { return }

// -----

// expected-error @below {{invalid attention spec: stats need a sparsity policy}}
func.func @stats_dense() attributes {s = #attn.spec<stats = true>} { return }

// -----

func.func @rank(%q: memref<?x32x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x32x128xbf16>) {
  // expected-error @below {{Q must have rank 4 [batch, seq, heads, dim]}}
  attn.attention %q, %k, %v -> %o spec(<preset = "llama3-8b-prefill">) : memref<?x32x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x32x128xbf16>
  return
}

// -----

func.func @element_type(%q: memref<?x?x32x128xf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x32x128xbf16>) {
  // expected-error @below {{Q element type must be 'bf16' (from the spec), got 'f16'}}
  attn.attention %q, %k, %v -> %o spec(<preset = "llama3-8b-prefill">) : memref<?x?x32x128xf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x32x128xbf16>
  return
}

// -----

func.func @heads(%q: memref<?x?x32x128xbf16>, %k: memref<?x?x4x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x32x128xbf16>) {
  // expected-error @below {{K dim 2 (heads) is 4 but the spec says 8}}
  attn.attention %q, %k, %v -> %o spec(<preset = "llama3-8b-prefill">) : memref<?x?x32x128xbf16>, memref<?x?x4x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x32x128xbf16>
  return
}

// -----

func.func @kv_seq(%q: memref<?x?x32x128xbf16>, %k: memref<?x100x8x128xbf16>, %v: memref<?x99x8x128xbf16>, %o: memref<?x?x32x128xbf16>) {
  // expected-error @below {{seq of K (100) and V (99) differ}}
  attn.attention %q, %k, %v -> %o spec(<preset = "llama3-8b-prefill">) : memref<?x?x32x128xbf16>, memref<?x100x8x128xbf16>, memref<?x99x8x128xbf16>, memref<?x?x32x128xbf16>
  return
}

// -----

func.func @batch(%q: memref<2x?x32x128xbf16>, %k: memref<3x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x32x128xbf16>) {
  // expected-error @below {{batch of Q (2) and K (3) differ}}
  attn.attention %q, %k, %v -> %o spec(<preset = "llama3-8b-prefill">) : memref<2x?x32x128xbf16>, memref<3x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x32x128xbf16>
  return
}

// -----

func.func @missing_lse(%q: memref<?x?x32x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x32x128xbf16>) {
  // expected-error @below {{the spec asks for lse but no lse operand is given}}
  attn.attention %q, %k, %v -> %o spec(<preset = "llama3-8b-prefill", lse = true>) : memref<?x?x32x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x32x128xbf16>
  return
}

// -----

func.func @extra_lse(%q: memref<?x?x32x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x32x128xbf16>, %l: memref<?x32x?xf32>) {
  // expected-error @below {{an lse operand is given but the spec has lse = false}}
  attn.attention %q, %k, %v -> %o lse(%l : memref<?x32x?xf32>) spec(<preset = "llama3-8b-prefill">) : memref<?x?x32x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x32x128xbf16>
  return
}

// -----

func.func @lse_type(%q: memref<?x?x32x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x32x128xbf16>, %l: memref<?x32x?xf16>) {
  // expected-error @below {{lse element type must be 'f32' (from the spec), got 'f16'}}
  attn.attention %q, %k, %v -> %o lse(%l : memref<?x32x?xf16>) spec(<preset = "llama3-8b-prefill", lse = true>) : memref<?x?x32x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x32x128xbf16>
  return
}

// -----

func.func @missing_stats(%q: memref<?x?x32x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x32x128xbf16>) {
  // expected-error @below {{the spec asks for stats but no stats operand is given}}
  attn.attention %q, %k, %v -> %o spec(<preset = "llama3-8b-prefill-blasst">) : memref<?x?x32x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x32x128xbf16>
  return
}

// -----

func.func @extra_stats(%q: memref<?x?x32x128xbf16>, %k: memref<?x?x8x128xbf16>, %v: memref<?x?x8x128xbf16>, %o: memref<?x?x32x128xbf16>, %s: memref<?x32x2xi64>) {
  // expected-error @below {{a stats operand is given but the spec has stats = false}}
  attn.attention %q, %k, %v -> %o stats(%s : memref<?x32x2xi64>) spec(<preset = "llama3-8b-prefill">) : memref<?x?x32x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x8x128xbf16>, memref<?x?x32x128xbf16>
  return
}

// -----

// expected-error @below {{invalid attention spec: lambda_max must be in (0, 1], got 2}}
func.func @cap_above_one() attributes {s = #attn.spec<sparsity = blasst(a = 256.0, lambda_max = 2.0)>} { return }

// -----

// expected-error @below {{invalid attention spec: sparsity ln_lambda = -1 is above the cap ln(lambda_max) = -2.3025850929940455 (lambda_max = 0.1)}}
func.func @fixed_above_cap() attributes {s = #attn.spec<sparsity = blasst(ln_lambda = -1.0, lambda_max = 0.1)>} { return }

// -----

func.func @bad_cap_key() attributes {s = #attn.spec<sparsity = blasst(a = 1.0,
  // expected-error @below {{blasst takes 'lambda_max' after its threshold, got 'cap'}}
  cap = 0.5)>} { return }

// -----

// expected-error @below {{invalid attention spec: kv_cache page size 48 is not supported: a power of two from 16 to 256}}
func.func @bad_page() attributes {s = #attn.spec<phase = decode, kv_cache = paged(page = 48)>} { return }

// -----

// expected-error @below {{kv_cache page size 512 is not supported: a power of two from 16 to 256}}
func.func @big_page() attributes {s = #attn.spec<phase = decode, kv_cache = paged(page = 512)>} { return }

// -----

func.func @bad_lengths() attributes {s = #attn.spec<phase = decode, kv_lengths =
  // expected-error @below {{kv_lengths must be uniform or per_sequence}}
  ragged>} { return }

// -----

func.func @bad_cache() attributes {s = #attn.spec<phase = decode, kv_cache =
  // expected-error @below {{kv_cache must be contiguous or paged(page = <n>)}}
  blocked>} { return }

// -----

func.func @bad_paged_key() attributes {s = #attn.spec<phase = decode, kv_cache = paged(
  // expected-error @below {{paged takes 'page = <n>'}}
  size = 64)>} { return }
