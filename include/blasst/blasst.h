/*===- blasst.h - The stable C API of blasst ------------------------------===*
 *
 * Plain C (C99) over the runtime and the JIT, for any language: opaque
 * handles, status codes and the last error's message text. No C++ types, no
 * CUDA header: streams are `void *` (a CUstream or cudaStream_t, which are
 * the same), device memory is a `uint64_t` address.
 *
 * Two shared libraries implement it:
 *   libblasst.so      the runtime part (sections "Errors" to "Kernels"):
 *                     load a kernel (cubin files, memory, or an AOT kernel
 *                     package) and launch it. Links no LLVM/MLIR and no
 *                     libcuda (the driver is dlopen'ed at first use).
 *   libblasst_jit.so  the JIT part (section "JIT"): compile a spec to a
 *                     cubin in-process, with the on-disk cache. Links
 *                     LLVM/MLIR and libblasst.so.
 *
 * Conventions:
 *  - Every fallible function returns a blasst_status. On failure,
 *    blasst_last_error() gives the message (what was being done and why);
 *    every call that returns a status sets it ("" on success). It is per
 *    thread and valid until that thread's next blasst call.
 *  - Output handles and strings are written only on success. Strings
 *    returned through `char **` are malloc'ed: free them with blasst_free().
 *    `const char *` results of a handle live as long as the handle.
 *  - Specs are text in the spec format (`key=value`, separated by spaces,
 *    commas or newlines): `dtype=bf16 head_dim=128 q_heads=32 kv_heads=8
 *    causal=true sparsity=blasst:a=256 stats=true`. Targets are "sm_90a"
 *    and "sm_100a".
 *  - Nothing here aborts or throws; a handle is not synchronised (use one
 *    per thread or lock around it), the functions without one are
 *    thread-safe.
 *
 *===----------------------------------------------------------------------===*/
#ifndef BLASST_BLASST_H
#define BLASST_BLASST_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define BLASST_API
#else
#define BLASST_API __attribute__((visibility("default")))
#endif

/* The version of this header's API; a change that breaks callers raises
 * it (blasst_c_api_version() returns the library's). */
#define BLASST_C_API_VERSION 1

/* Every enum below ends with a *_MAX_ENUM_ = 0x7fffffff entry, which is not
 * a value of it: the enum stays int-sized, and any int a caller passes is a
 * valid value of its type in C++ too (the library answers an unknown one
 * with BLASST_ERROR_INVALID_ARGUMENT, or "unknown status"). */

/*===----------------------------------------------------------------------===*
 * Errors
 *===----------------------------------------------------------------------===*/

typedef enum blasst_status {
  BLASST_OK = 0,
  /* A null or out-of-range argument, spec text that does not parse or
   * validate, tensors that do not match the kernel. */
  BLASST_ERROR_INVALID_ARGUMENT = 1,
  /* Valid, but not something blasst builds or runs: a spec the target
   * cannot compile, a GPU the kernel's target does not run on. */
  BLASST_ERROR_UNSUPPORTED = 2,
  /* A file, or a package entry for the spec and target, does not exist. */
  BLASST_ERROR_NOT_FOUND = 3,
  /* A file exists but is not what it should be (a corrupt cubin, bad
   * metadata, a malformed package manifest). */
  BLASST_ERROR_BAD_FILE = 4,
  /* Kernels or a package built for another kernel ABI version. */
  BLASST_ERROR_ABI_MISMATCH = 5,
  /* No CUDA driver, or no GPU with that ordinal. */
  BLASST_ERROR_NO_DEVICE = 6,
  /* A CUDA driver call failed (the message has the driver's error). */
  BLASST_ERROR_CUDA = 7,
  /* The compiler failed (JIT only; the message has its diagnostics). */
  BLASST_ERROR_COMPILE = 8,
  /* A bug in blasst. */
  BLASST_ERROR_INTERNAL = 9,
  BLASST_STATUS_MAX_ENUM_ = 0x7fffffff
} blasst_status;

/* "BLASST_OK", "BLASST_ERROR_NOT_FOUND", ...; "unknown status" else. */
BLASST_API const char *blasst_status_name(blasst_status status);
/* The last error message of this thread ("" after a successful call). */
BLASST_API const char *blasst_last_error(void);
/* Frees a string this API returned through a `char **`. NULL is a no-op. */
BLASST_API void blasst_free(void *p);

/*===----------------------------------------------------------------------===*
 * Versions, devices, specs
 *===----------------------------------------------------------------------===*/

/* "blasst 0.1.0". */
BLASST_API const char *blasst_version(void);
/* BLASST_C_API_VERSION of the library. */
BLASST_API int blasst_c_api_version(void);
/* The kernel ABI (parameters and metadata) this library launches. */
BLASST_API int blasst_kernel_abi_version(void);

/* Number of GPUs. BLASST_ERROR_NO_DEVICE with the reason when the driver
 * cannot be loaded or initialised (*count is set to 0 then). */
BLASST_API blasst_status blasst_device_count(int *count);
/* The target whose kernels GPU `device` runs: "sm_90a" (compute capability
 * 9.0) or "sm_100a" (10.0); BLASST_ERROR_UNSUPPORTED for other GPUs. The
 * string is static. */
BLASST_API blasst_status blasst_device_target(int device, const char **target);

/* Parses and validates `spec` and, if `target` is not NULL, checks that
 * the compiler builds it for that target. INVALID_ARGUMENT (parse or
 * validation error, with the line) or UNSUPPORTED (the reason). */
BLASST_API blasst_status blasst_spec_check(const char *spec, const char *target);
/* The canonical text of `spec` (one `key=value` per line), as the runtime
 * and the compiler read it. */
BLASST_API blasst_status blasst_spec_canonical(const char *spec, char **out);
/* The key under which a kernel package stores the kernel of `spec` for
 * `target`: everything that determines the cubin, on one line. The run-time
 * values are left out (the name, softmax_scale, and the sparsity value `a`
 * or `ln_lambda`: the kernel takes them as launch arguments), so one
 * kernel serves every value. */
BLASST_API blasst_status blasst_kernel_key(const char *spec, const char *target,
                                           char **out);

/*===----------------------------------------------------------------------===*
 * Kernels (libblasst.so)
 *===----------------------------------------------------------------------===*/

typedef struct blasst_kernel blasst_kernel;

/* `device`: a GPU ordinal, or BLASST_NO_DEVICE to only read and check the
 * kernel (metadata, spec, cubin image) without a driver: such a handle
 * answers every query and blasst_kernel_check_args, but cannot launch. */
#define BLASST_NO_DEVICE (-1)

/* Loads `<stem>.cubin`, `<stem>.meta` and `<stem>.spec` (what
 * blasst-compile --emit cubin -o STEM writes). */
BLASST_API blasst_status blasst_kernel_load_files(const char *stem, int device,
                                                  blasst_kernel **out);
/* Loads a cubin from memory with its metadata and spec text (what the JIT
 * returns). `spec` is the spec launches default to (scale, threshold); it
 * must describe the cubin (the same blasst_kernel_key). */
BLASST_API blasst_status blasst_kernel_load_data(const void *cubin,
                                                 size_t size, const char *meta,
                                                 const char *spec, int device,
                                                 blasst_kernel **out);
/* Loads the kernel of `spec` for `target` from an AOT kernel package (a
 * directory with `manifest.txt`, see docs/python.md): the entry whose
 * blasst_kernel_key equals the spec's. `target` NULL: the device's
 * (blasst_device_target; required with BLASST_NO_DEVICE). The loaded
 * kernel's spec is `spec` (its scale and threshold are the defaults).
 * NOT_FOUND when the directory, its manifest or the entry is missing;
 * ABI_MISMATCH when the package was built for another kernel ABI. */
BLASST_API blasst_status blasst_kernel_load_package(const char *dir,
                                                    const char *spec,
                                                    const char *target,
                                                    int device,
                                                    blasst_kernel **out);
BLASST_API void blasst_kernel_destroy(blasst_kernel *kernel);

typedef enum blasst_kernel_attr {
  BLASST_ATTR_ABI_VERSION = 0,
  BLASST_ATTR_DTYPE = 1, /* blasst_dtype */
  BLASST_ATTR_HEAD_DIM = 2,
  BLASST_ATTR_Q_HEADS = 3,
  BLASST_ATTR_KV_HEADS = 4,
  BLASST_ATTR_CAUSAL = 5,   /* 0 or 1 */
  BLASST_ATTR_LSE = 6,      /* 0 or 1: needs an LSE buffer */
  BLASST_ATTR_STATS = 7,    /* 0 or 1: needs a stats buffer */
  BLASST_ATTR_SPARSITY = 8, /* blasst_sparsity */
  BLASST_ATTR_BLOCK_M = 9,
  BLASST_ATTR_BLOCK_N = 10,
  BLASST_ATTR_THREADS = 11,
  BLASST_ATTR_SMEM_BYTES = 12,
  BLASST_ATTR_DEVICE = 13,          /* the ordinal, or BLASST_NO_DEVICE */
  BLASST_ATTR_KV_PER_SEQUENCE = 14, /* 0 or 1: needs seq_lens_kv */
  BLASST_ATTR_KV_PAGE_SIZE = 15,    /* 0 (contiguous) or the page size */
  /* 0, or the keys per KV block of the kernel's short-sequence entry, which
   * a launch takes instead for short sequences (sm_90a prefill: at head_dim
   * 128 dense with persistent CTAs where no query tile has more than 4096
   * keys, BLASST where the kernel's wider blocks would compute more padded
   * keys; at head_dim 64 where the query tiles average at most 3072 keys). */
  BLASST_ATTR_SHORT_BLOCK_N = 16,
  /* CTAs per SM of the short-sequence entry: 1, or 2 (head_dim 64). */
  BLASST_ATTR_SHORT_CTAS_PER_SM = 17,
  /* Dense sm_90a decode: 0, no TMA entry; 1, the kernel holds one (the same
   * split grid with K/V by TMA) that this kernel's launches do not take (no
   * device, or a device of 4.2 TB/s of DRAM bandwidth or more); 2, its
   * split-grid launches take it (a device of lower bandwidth, e.g. the
   * H100's 3.35 TB/s). */
  BLASST_ATTR_TMA_ENTRY = 18,
  BLASST_ATTR_MAX_ENUM_ = 0x7fffffff
} blasst_kernel_attr;

typedef enum blasst_dtype {
  BLASST_DTYPE_BF16 = 0,
  BLASST_DTYPE_F16 = 1,
  BLASST_DTYPE_MAX_ENUM_ = 0x7fffffff
} blasst_dtype;
typedef enum blasst_sparsity {
  BLASST_SPARSITY_NONE = 0,      /* dense */
  BLASST_SPARSITY_A = 1,         /* lambda = a / L_kv */
  BLASST_SPARSITY_LN_LAMBDA = 2, /* fixed ln(lambda) */
  BLASST_SPARSITY_MAX_ENUM_ = 0x7fffffff
} blasst_sparsity;

BLASST_API blasst_status blasst_kernel_get_attr(const blasst_kernel *kernel,
                                                blasst_kernel_attr attr,
                                                int64_t *value);
/* The kernel's spec (canonical text), entry point name and target. */
BLASST_API const char *blasst_kernel_spec(const blasst_kernel *kernel);
BLASST_API const char *blasst_kernel_name(const blasst_kernel *kernel);
BLASST_API const char *blasst_kernel_target(const blasst_kernel *kernel);
/* The spec's sparsity value (`a` or `ln_lambda`; 0 when dense) and
 * lambda_max. */
BLASST_API double blasst_kernel_sparsity_value(const blasst_kernel *kernel);
BLASST_API double blasst_kernel_lambda_max(const blasst_kernel *kernel);

/* Where a BLASST kernel's threshold comes from at launch. */
typedef enum blasst_threshold_source {
  /* The kernel spec's `a` or `ln_lambda` (ignored by dense kernels). */
  BLASST_THRESHOLD_SPEC = 0,
  /* log2_threshold, by value (baked into a captured CUDA graph). */
  BLASST_THRESHOLD_VALUE = 1,
  /* One float at log2_threshold_ptr in device memory, read by the kernel
   * when it runs: a CUDA graph replays with the value there at replay. */
  BLASST_THRESHOLD_DEVICE = 2,
  BLASST_THRESHOLD_MAX_ENUM_ = 0x7fffffff
} blasst_threshold_source;

/* One attention launch. Q and O are [batch, seq_q, q_heads, head_dim], K
 * and V [batch, seq_kv, kv_heads, head_dim], of the kernel's dtype, each
 * with its own element strides for batch, seq and head (head_dim's stride
 * is 1): [B, S, H, D] and [B, H, S, D] tensors alike. TMA needs every
 * pointer 16-byte aligned and every stride a positive multiple of 8
 * elements. O may not share memory with Q, K or V (no attention in place):
 * such a launch is refused (BLASST_ERROR_INVALID_ARGUMENT). */
typedef struct blasst_attention_args {
  /* sizeof(blasst_attention_args): set by blasst_attention_args_init. */
  uint32_t struct_size;
  /* blasst_threshold_source. */
  int32_t threshold_source;
  uint64_t q, k, v, o;
  /* float [batch, q_heads, seq_q], contiguous: given iff the kernel has
   * BLASST_ATTR_LSE. */
  uint64_t lse;
  /* int64 [batch, q_heads, 2] (visited, skipped KV blocks), contiguous,
   * zeroed by the caller or by the launch (BLASST_LAUNCH_ZERO_STATS; the
   * kernel adds to it): given iff the kernel has BLASST_ATTR_STATS. */
  uint64_t stats;
  int64_t batch, seq_q, seq_kv, q_heads, kv_heads, head_dim;
  /* Element strides {batch, seq, head}. */
  int64_t q_strides[3], k_strides[3], v_strides[3], o_strides[3];
  /* > 0: the softmax scale; 0: the spec's (1/sqrt(head_dim) by default). */
  double softmax_scale;
  /* The threshold in the kernel's log2 domain: log2(a) for `a` kernels
   * (the kernel subtracts log2(seq_kv)), ln_lambda * log2(e) for
   * `ln_lambda` kernels; capped at log2(lambda_max) in the kernel. */
  float log2_threshold;
  /* blasst_launch_flags, or-ed. */
  uint32_t flags;
  /* Device address of one float (BLASST_THRESHOLD_DEVICE), 4-byte aligned. */
  uint64_t log2_threshold_ptr;
  /* Decode kernels (phase = decode, split KV; ignored by others): the
   * device memory for the splits' partial O and LSE and the per-tile
   * counters, of blasst_kernel_workspace_bytes() bytes, zeroed before its
   * first use (the kernel leaves it reusable; one launch at a time per
   * workspace); 0 if the launch needs none. kv_splits: 0 for the
   * kernel's own choice (its kv_splits, else from the SM count); with
   * neither a workspace nor kv_splits, that choice where it needs no
   * workspace, else one split. */
  uint64_t workspace;
  uint64_t workspace_bytes;
  int32_t kv_splits;
  /* Must be 0. */
  uint32_t reserved;
  /* Decode KV caches (fields added with kernel ABI 4; a caller built with
   * the older, shorter struct passes its struct_size and gets them as 0).
   * seq_lens_kv: int32 [batch] in device memory, each sequence's KV length
   * (0 allowed), given iff the kernel has BLASST_ATTR_KV_PER_SEQUENCE;
   * seq_kv is then an upper bound of them (>= 1). block_table: int32
   * [batch, max_pages] page indices, given iff BLASST_ATTR_KV_PAGE_SIZE is
   * not 0; k and v are then [num_pages, page, kv_heads, head_dim] (strides:
   * {page, token, head}). The caller guarantees lengths <= max_pages x
   * page (seq_kv is checked against it), table entries in [0, num_pages),
   * and finite K/V values past each length inside its last page. */
  uint64_t seq_lens_kv;
  uint64_t block_table;
  int64_t max_pages;
  int64_t num_pages;
} blasst_attention_args;

/* blasst_attention_args.flags. */
typedef enum blasst_launch_flags {
  /* The launch zeroes the stats counters first (one cuMemsetD32Async on
   * the launch's stream, captured by CUDA graphs like the kernel), so the
   * caller need not: with it, stats may be uninitialised memory. */
  BLASST_LAUNCH_ZERO_STATS = 1,
  BLASST_LAUNCH_FLAGS_MAX_ENUM_ = 0x7fffffff
} blasst_launch_flags;

/* Zeroes `args` and sets struct_size. */
BLASST_API void blasst_attention_args_init(blasst_attention_args *args);
/* The log2-domain threshold of a sparsity value for `kind`: log2(a) or
 * ln_lambda * log2(e). INVALID_ARGUMENT for a value the kernel cannot take
 * (a <= 0, ln_lambda >= 0, not finite, beyond a float). */
BLASST_API blasst_status blasst_log2_threshold(blasst_sparsity kind,
                                               double value, float *out);

/* The workspace bytes a launch with `args` needs (0: none, e.g. one KV
 * split or a prefill kernel), and the kv_splits that asks for that launch
 * again (may be NULL): the split count of a split grid, or, where the
 * runtime takes lean CTAs (the kernel's lean entry, or a lean kernel),
 * args.kv_splits as given (typically 0: the runtime's choice). Launching
 * with a workspace of *bytes (or none when 0) and kv_splits = *kv_splits
 * gets the launch the bytes were sized for. */
BLASST_API blasst_status blasst_kernel_workspace_bytes(
    const blasst_kernel *kernel, const blasst_attention_args *args,
    uint64_t *bytes, int32_t *kv_splits);
/* Checks `args` against the kernel without the driver: the checks a launch
 * makes before it touches the GPU (shapes, heads, strides, alignment, the
 * LSE/stats/threshold buffers the kernel needs). */
BLASST_API blasst_status blasst_kernel_check_args(
    const blasst_kernel *kernel, const blasst_attention_args *args);
/* Checks, encodes and launches on `stream` (asynchronous; NULL: the legacy
 * default stream). Safe inside CUDA-graph capture: the arguments are
 * copied at the call, and with BLASST_THRESHOLD_DEVICE the threshold is
 * read when the kernel runs. */
BLASST_API blasst_status blasst_kernel_launch(
    const blasst_kernel *kernel, const blasst_attention_args *args,
    void *stream);

/*===----------------------------------------------------------------------===*
 * JIT (libblasst_jit.so)
 *===----------------------------------------------------------------------===*/

typedef struct blasst_compiled blasst_compiled;

/* Compiles `spec` for `target` (or finds it in the cache). `cache_dir`:
 * NULL or "" for the default ($BLASST_CACHE_DIR, else
 * $XDG_CACHE_HOME/blasst, else ~/.cache/blasst). UNSUPPORTED with the
 * reason for a spec the target cannot build, COMPILE with the compiler's
 * diagnostics. Needs no GPU. */
BLASST_API blasst_status blasst_jit_compile(const char *spec,
                                            const char *target,
                                            const char *cache_dir,
                                            blasst_compiled **out);
BLASST_API void blasst_compiled_destroy(blasst_compiled *compiled);
/* The cubin image, its metadata text (`.meta`) and spec text (`.spec`). */
BLASST_API const void *blasst_compiled_cubin(const blasst_compiled *compiled,
                                             size_t *size);
BLASST_API const char *blasst_compiled_meta(const blasst_compiled *compiled);
BLASST_API const char *blasst_compiled_spec(const blasst_compiled *compiled);
/* 1 when the kernel came from the cache. */
BLASST_API int blasst_compiled_from_cache(const blasst_compiled *compiled);
/* The compile's cache notes and warnings, one per line ("" when none): a
 * cache that could not be used or written ("warning: not cached: ..."), a
 * corrupt entry recompiled, a lock not taken. The kernel is good either
 * way; the notes say why the next process compiles it again. */
BLASST_API const char *blasst_compiled_notes(const blasst_compiled *compiled);
/* Writes `<stem>.cubin`, `<stem>.meta` and `<stem>.spec` (what
 * blasst_kernel_load_files reads). */
BLASST_API blasst_status blasst_compiled_write(const blasst_compiled *compiled,
                                               const char *stem);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* BLASST_BLASST_H */
