/*===- capi-test.c - The C API, compiled as C ------------------------------===*
 *
 * Exercises blasst.h from plain C99 without a GPU: versions, status names
 * and the last error, spec checks and kernel keys, thresholds, missing and
 * corrupt files, kernel packages (missing, another ABI, no entry, a stale
 * manifest) and argument checks. Linked against libblasst.so alone; with
 * -DBLASST_TEST_JIT also against libblasst_jit.so, which compiles a real
 * kernel into a package first (skipped without ptxas). GPU parts run only
 * where the driver sees a GPU that runs sm_90a kernels.
 *
 * Usage: blasst-capi-test [--jit]   (exit 0: passed, 1: failed)
 *
 *===----------------------------------------------------------------------===*/
/* mkdtemp, unlink under -std=c99. */
#define _POSIX_C_SOURCE 200809L

#include "blasst/blasst.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int failures = 0;
static int checks = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    ++checks;                                                                  \
    if (!(cond)) {                                                             \
      ++failures;                                                              \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n  last error: %s\n",         \
              __FILE__, __LINE__, #cond, blasst_last_error());                 \
    }                                                                          \
  } while (0)

#ifdef BLASST_TEST_JIT
/* A part that needs what this machine lacks: skipped, but a failure where
 * the test was told to expect it ($BLASST_TEST_EXPECT_SM90A: CTest's run on
 * the fake driver's sm_90a GPU, where nothing may skip). */
static void skip_part(const char *what) {
  if (getenv("BLASST_TEST_EXPECT_SM90A")) {
    ++checks;
    ++failures;
    fprintf(stderr, "not skippable here ($BLASST_TEST_EXPECT_SM90A): %s\n",
            what);
    return;
  }
  printf("%s: skipped\n", what);
}
#endif

/* The call returned `status` and the last error contains `text`. */
#define CHECK_FAILS(call, status, text)                                        \
  do {                                                                         \
    blasst_status s_ = (call);                                                 \
    ++checks;                                                                  \
    if (s_ != (status) || !strstr(blasst_last_error(), (text))) {              \
      ++failures;                                                              \
      fprintf(stderr,                                                          \
              "%s:%d: %s\n  returned %s, expected %s\n  last error: '%s'\n"    \
              "  expected it to contain: '%s'\n",                              \
              __FILE__, __LINE__, #call, blasst_status_name(s_),               \
              blasst_status_name(status), blasst_last_error(), (text));        \
    }                                                                          \
  } while (0)

#define CHECK_OK(call)                                                         \
  do {                                                                         \
    blasst_status s_ = (call);                                                 \
    ++checks;                                                                  \
    if (s_ != BLASST_OK) {                                                     \
      ++failures;                                                              \
      fprintf(stderr, "%s:%d: %s returned %s: %s\n", __FILE__, __LINE__,     \
              #call, blasst_status_name(s_), blasst_last_error());             \
    }                                                                          \
  } while (0)

static char tmpdir[256];

static void path(char *out, size_t n, const char *name) {
  snprintf(out, n, "%s/%s", tmpdir, name);
}

static void write_file(const char *name, const char *data, size_t size) {
  char p[512];
  path(p, sizeof(p), name);
  FILE *f = fopen(p, "wb");
  if (!f) {
    perror(p);
    exit(1);
  }
  fwrite(data, 1, size, f);
  fclose(f);
}

static void write_text(const char *name, const char *text) {
  write_file(name, text, strlen(text));
}

/* The whole file (malloc'd), or NULL. */
static char *read_text(const char *name) {
  char p[512];
  path(p, sizeof(p), name);
  FILE *f = fopen(p, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (text) {
    size_t got = fread(text, 1, (size_t)n, f);
    text[got] = 0;
  }
  fclose(f);
  return text;
}

static const char *kSpec =
    "dtype=bf16 head_dim=64 q_heads=4 kv_heads=2 causal=true";
static const char *kMeta = "abi_version = 7\nkernel = k\ntarget = sm_90a\n"
                           "block_m = 128\nblock_n = 128\nthreads = 384\n"
                           "smem_bytes = 100000\n";

static void test_versions_and_errors(void) {
  CHECK(strncmp(blasst_version(), "blasst ", 7) == 0);
  CHECK(blasst_c_api_version() == BLASST_C_API_VERSION);
  CHECK(blasst_kernel_abi_version() == 7);
  CHECK(strcmp(blasst_status_name(BLASST_OK), "BLASST_OK") == 0);
  CHECK(strcmp(blasst_status_name(BLASST_ERROR_ABI_MISMATCH),
               "BLASST_ERROR_ABI_MISMATCH") == 0);
  CHECK(strcmp(blasst_status_name((blasst_status)99), "unknown status") == 0);
  blasst_free(NULL);

  /* A failure sets the message, the next successful call clears it. */
  CHECK_FAILS(blasst_spec_check("head_dim=", NULL),
              BLASST_ERROR_INVALID_ARGUMENT, "bad spec");
  CHECK(blasst_last_error()[0] != '\0');
  CHECK_OK(blasst_spec_check(kSpec, NULL));
  CHECK(blasst_last_error()[0] == '\0');
}

static void test_specs(void) {
  CHECK_FAILS(blasst_spec_check("dtype=bf16 colour=blue", NULL),
              BLASST_ERROR_INVALID_ARGUMENT, "unknown key 'colour'");
  CHECK_FAILS(blasst_spec_check("q_heads=6 kv_heads=4", NULL),
              BLASST_ERROR_INVALID_ARGUMENT, "kv_heads");
  CHECK_FAILS(blasst_spec_check(NULL, NULL), BLASST_ERROR_INVALID_ARGUMENT,
              "null");
  CHECK_FAILS(blasst_spec_check(kSpec, "sm_80"), BLASST_ERROR_INVALID_ARGUMENT,
              "unknown target 'sm_80'");
  CHECK_FAILS(blasst_spec_check("head_dim=96 head_dim_v=96", "sm_90a"),
              BLASST_ERROR_UNSUPPORTED, "head_dim 96 is not supported");
  CHECK_OK(blasst_spec_check(kSpec, "sm_90a"));

  char *canon = NULL;
  CHECK_OK(blasst_spec_canonical(kSpec, &canon));
  CHECK(canon && strstr(canon, "head_dim=64\n") && strstr(canon, "causal=true\n"));
  blasst_free(canon);

  /* The key leaves out the run-time values: a, ln_lambda, scale, name. */
  char *k1 = NULL, *k2 = NULL, *k3 = NULL;
  CHECK_OK(blasst_kernel_key("name=x head_dim=64 sparsity=blasst:a=256 "
                             "softmax_scale=0.5",
                             "sm_90a", &k1));
  CHECK_OK(blasst_kernel_key("head_dim=64 sparsity=blasst:a=1000", "sm_90a",
                             &k2));
  CHECK_OK(blasst_kernel_key("head_dim=64 sparsity=blasst:ln_lambda=-3",
                             "sm_90a", &k3));
  CHECK(k1 && k2 && k3 && strcmp(k1, k2) == 0 && strcmp(k1, k3) != 0);
  CHECK(k1 && strncmp(k1, "target=sm_90a dtype=bf16 head_dim=64", 36) == 0);
  CHECK(k1 && strstr(k1, "sparsity=blasst:a lambda_max=1 "));
  CHECK(k1 && !strchr(k1, '\n'));
  blasst_free(k1);
  blasst_free(k2);
  blasst_free(k3);
  /* The decode KV caches are other kernels. */
  CHECK_OK(blasst_kernel_key("head_dim=64 phase=decode", "sm_90a", &k1));
  CHECK_OK(blasst_kernel_key("head_dim=64 phase=decode "
                             "kv_lengths=per_sequence",
                             "sm_90a", &k2));
  CHECK_OK(blasst_kernel_key("head_dim=64 phase=decode "
                             "kv_lengths=per_sequence kv_cache=paged:page=64",
                             "sm_90a", &k3));
  CHECK(k1 && k2 && k3 && strcmp(k1, k2) != 0 && strcmp(k2, k3) != 0);
  CHECK(k1 && !strstr(k1, "kv_lengths") && !strstr(k1, "kv_cache"));
  CHECK(k3 && strstr(k3, " kv_lengths=per_sequence kv_cache=paged:page=64"));
  blasst_free(k1);
  blasst_free(k2);
  /* BLASST decode with a paged cache: another kernel again. */
  CHECK_OK(blasst_kernel_key("head_dim=64 phase=decode "
                             "kv_lengths=per_sequence kv_cache=paged:page=64 "
                             "sparsity=blasst:a=64 stats=true",
                             "sm_90a", &k1));
  CHECK(k1 && strcmp(k1, k3) != 0);
  CHECK(k1 && strstr(k1, "kv_cache=paged:page=64") && strstr(k1, "blasst"));
  CHECK_OK(blasst_spec_check("head_dim=64 phase=decode "
                             "kv_lengths=per_sequence kv_cache=paged:page=64 "
                             "sparsity=blasst:a=64",
                             "sm_90a"));
  blasst_free(k1);
  blasst_free(k3);
  CHECK_FAILS(blasst_kernel_key(kSpec, "sm_75", &k1),
              BLASST_ERROR_INVALID_ARGUMENT, "unknown target");
}

static void test_thresholds(void) {
  float t = 0;
  CHECK_OK(blasst_log2_threshold(BLASST_SPARSITY_A, 8.0, &t));
  CHECK(t == 3.0f);
  CHECK_OK(blasst_log2_threshold(BLASST_SPARSITY_LN_LAMBDA, -2.0, &t));
  CHECK(fabsf(t - (float)(-2.0 / log(2.0))) < 1e-6f);
  CHECK_FAILS(blasst_log2_threshold(BLASST_SPARSITY_A, 0.0, &t),
              BLASST_ERROR_INVALID_ARGUMENT, "a must be finite and > 0");
  CHECK_FAILS(blasst_log2_threshold(BLASST_SPARSITY_LN_LAMBDA, 0.5, &t),
              BLASST_ERROR_INVALID_ARGUMENT, "ln_lambda must be finite and < 0");
  CHECK_FAILS(blasst_log2_threshold(BLASST_SPARSITY_NONE, 1.0, &t),
              BLASST_ERROR_INVALID_ARGUMENT, "needs sparsity kind");

  blasst_attention_args a;
  memset(&a, 0x5a, sizeof(a));
  blasst_attention_args_init(&a);
  CHECK(a.struct_size == sizeof(a));
  CHECK(a.threshold_source == BLASST_THRESHOLD_SPEC && a.q == 0 &&
        a.softmax_scale == 0 && a.log2_threshold_ptr == 0);
}

static void test_files(void) {
  blasst_kernel *k = NULL;
  char stem[512];
  path(stem, sizeof(stem), "nothing");
  CHECK_FAILS(blasst_kernel_load_files(stem, BLASST_NO_DEVICE, &k),
              BLASST_ERROR_NOT_FOUND, "nothing.meta");
  CHECK(k == NULL);

  /* Metadata of another kernel ABI: refused before anything else. */
  write_text("old.meta", "abi_version = 1\nkernel = k\nold_key = 3\n");
  write_text("old.spec", kSpec);
  write_text("old.cubin", "x");
  path(stem, sizeof(stem), "old");
  CHECK_FAILS(blasst_kernel_load_files(stem, BLASST_NO_DEVICE, &k),
              BLASST_ERROR_ABI_MISMATCH,
              "built for kernel ABI version 1, but this runtime implements "
              "version 7");

  /* Good metadata and spec, a cubin that is not one. */
  write_text("junk.meta", kMeta);
  write_text("junk.spec", kSpec);
  write_text("junk.cubin", "this is not an ELF file at all, "
                           "just text long enough to be read as one");
  path(stem, sizeof(stem), "junk");
  CHECK_FAILS(blasst_kernel_load_files(stem, BLASST_NO_DEVICE, &k),
              BLASST_ERROR_BAD_FILE, "not an ELF file");
  /* A spec the metadata's target cannot build. */
  write_text("junk.spec", "head_dim=96 head_dim_v=96");
  CHECK_FAILS(blasst_kernel_load_files(stem, BLASST_NO_DEVICE, &k),
              BLASST_ERROR_UNSUPPORTED, "head_dim 96");
  write_text("junk.spec", "head_dim=64 colour=red");
  CHECK_FAILS(blasst_kernel_load_files(stem, BLASST_NO_DEVICE, &k),
              BLASST_ERROR_BAD_FILE, "junk.spec:1: unknown key 'colour'");
  CHECK_FAILS(blasst_kernel_load_data("x", 1, "abi_version = 7\n", kSpec,
                                      BLASST_NO_DEVICE, &k),
              BLASST_ERROR_BAD_FILE, "missing required key");
  CHECK_FAILS(blasst_kernel_load_data(NULL, 0, kMeta, kSpec, BLASST_NO_DEVICE,
                                      &k),
              BLASST_ERROR_INVALID_ARGUMENT, "must not be null");
}

static void test_packages(void) {
  blasst_kernel *k = NULL;
  char dir[512];
  path(dir, sizeof(dir), "no-such-package");
  CHECK_FAILS(blasst_kernel_load_package(dir, kSpec, "sm_90a",
                                         BLASST_NO_DEVICE, &k),
              BLASST_ERROR_NOT_FOUND, "not a directory");
  CHECK_FAILS(blasst_kernel_load_package(tmpdir, kSpec, "sm_90a",
                                         BLASST_NO_DEVICE, &k),
              BLASST_ERROR_NOT_FOUND, "has no manifest.txt");
  CHECK_FAILS(blasst_kernel_load_package(tmpdir, kSpec, NULL, BLASST_NO_DEVICE,
                                         &k),
              BLASST_ERROR_INVALID_ARGUMENT, "a target is needed");

  /* A package built for kernel ABI 1. */
  write_text("manifest.txt", "format = 1\nabi_version = 1\ncompiler_version "
                             "= blasst 0.0.9\nkernel = k0 target=sm_90a\n");
  CHECK_FAILS(
      blasst_kernel_load_package(tmpdir, kSpec, "sm_90a", BLASST_NO_DEVICE, &k),
      BLASST_ERROR_ABI_MISMATCH,
      "built for kernel ABI version 1 (blasst 0.0.9), but this "
      "runtime implements version 7: rebuild");
  /* No entry for the spec: the message says how to build one. */
  write_text("manifest.txt", "format = 1\nabi_version = 7\n");
  CHECK_FAILS(blasst_kernel_load_package(tmpdir, kSpec, "sm_90a",
                                         BLASST_NO_DEVICE, &k),
              BLASST_ERROR_NOT_FOUND, "python -m blasst.aot build");
  write_text("manifest.txt", "format = 1\nabi_version = 7\ncolour = red\n");
  CHECK_FAILS(blasst_kernel_load_package(tmpdir, kSpec, "sm_90a",
                                         BLASST_NO_DEVICE, &k),
              BLASST_ERROR_BAD_FILE, "manifest.txt:3: unknown key 'colour'");
  write_text("manifest.txt",
             "format = 1\nabi_version = 7\nkernel = ../x target=sm_90a\n");
  CHECK_FAILS(blasst_kernel_load_package(tmpdir, kSpec, "sm_90a",
                                         BLASST_NO_DEVICE, &k),
              BLASST_ERROR_BAD_FILE, "not a plain file name");
  /* An entry whose files are missing. */
  char *key = NULL;
  CHECK_OK(blasst_kernel_key(kSpec, "sm_90a", &key));
  char manifest[1024];
  snprintf(manifest, sizeof(manifest),
           "format = 1\nabi_version = 7\nkernel = gone %s\n", key ? key : "");
  blasst_free(key);
  write_text("manifest.txt", manifest);
  CHECK_FAILS(blasst_kernel_load_package(tmpdir, kSpec, "sm_90a",
                                         BLASST_NO_DEVICE, &k),
              BLASST_ERROR_BAD_FILE, "gone.meta");
  char p[512];
  path(p, sizeof(p), "manifest.txt");
  unlink(p);
}

static void test_devices(void) {
  int count = -1;
  blasst_status s = blasst_device_count(&count);
  if (s != BLASST_OK) {
    CHECK(s == BLASST_ERROR_NO_DEVICE && count == 0);
    CHECK(blasst_last_error()[0] != '\0');
    printf("no GPU (%s): device parts skipped\n", blasst_last_error());
    return;
  }
  const char *target = NULL;
  CHECK_FAILS(blasst_device_target(count, &target), BLASST_ERROR_NO_DEVICE,
              "there is no GPU");
  if (count > 0) {
    s = blasst_device_target(0, &target);
    CHECK(s == BLASST_OK || s == BLASST_ERROR_UNSUPPORTED);
    printf("GPU 0 runs %s\n", s == BLASST_OK ? target : blasst_last_error());
  }
}

#ifdef BLASST_TEST_JIT
/* Whether GPU 0 is there and runs sm_90a kernels. */
static int gpu0_runs_sm90a(void) {
  int count = 0;
  const char *target = NULL;
  return blasst_device_count(&count) == BLASST_OK && count > 0 &&
         blasst_device_target(0, &target) == BLASST_OK &&
         strcmp(target, "sm_90a") == 0;
}

/* Compiles a kernel into a package with the JIT, then loads it by spec. */
static void test_jit_package(void) {
  blasst_compiled *c = NULL;
  char cache[512];
  path(cache, sizeof(cache), "cache");
  CHECK_FAILS(blasst_jit_compile("head_dim=96 head_dim_v=96", "sm_90a", cache,
                                 &c),
              BLASST_ERROR_UNSUPPORTED, "head_dim 96");
  CHECK_FAILS(blasst_jit_compile("head_dim=256 head_dim_v=256", "sm_100a",
                                 cache, &c),
              BLASST_ERROR_UNSUPPORTED, "head_dim 256");
  CHECK_FAILS(blasst_jit_compile("dtype=fp8", "sm_90a", cache, &c),
              BLASST_ERROR_INVALID_ARGUMENT, "dtype");
  const char *sparse = "dtype=bf16 head_dim=64 q_heads=4 kv_heads=2 "
                       "causal=true sparsity=blasst:a=256 stats=true";
  blasst_status s = blasst_jit_compile(sparse, "sm_90a", cache, &c);
  if (s == BLASST_ERROR_COMPILE && strstr(blasst_last_error(), "ptxas")) {
    printf("no ptxas (%s): JIT parts skipped\n", blasst_last_error());
    return;
  }
  CHECK(s == BLASST_OK);
  if (s != BLASST_OK)
    return;
  CHECK(strcmp(blasst_compiled_notes(c), "") == 0);
  /* sm_100a compiles here too (it runs only on a B200). A cache directory
   * that cannot be one gives a good kernel and says why it was not kept. */
  blasst_compiled *b200 = NULL;
  char notdir[512];
  path(notdir, sizeof(notdir), "cache-is-a-file");
  write_text("cache-is-a-file", "x");
  CHECK_OK(blasst_jit_compile(kSpec, "sm_100a", notdir, &b200));
  CHECK(strstr(blasst_compiled_meta(b200), "target = sm_100a\n") != NULL);
  CHECK(!blasst_compiled_from_cache(b200));
  CHECK(strstr(blasst_compiled_notes(b200), "warning: not cached: cannot "
                                            "create") != NULL);
  blasst_compiled_destroy(b200);
  size_t size = 0;
  CHECK(blasst_compiled_cubin(c, &size) != NULL && size > 1000);
  CHECK(strstr(blasst_compiled_meta(c), "abi_version = 7\n") != NULL);
  CHECK(strstr(blasst_compiled_spec(c), "sparsity=blasst:a=256\n") != NULL);

  /* A package: the kernel's files and a manifest line with its key. */
  char stem[512], *key = NULL, manifest[1024];
  path(stem, sizeof(stem), "k0");
  CHECK_OK(blasst_compiled_write(c, stem));
  CHECK_OK(blasst_kernel_key(sparse, "sm_90a", &key));
  snprintf(manifest, sizeof(manifest),
           "format = 1\nabi_version = 7\nkernel = k0 %s\n", key ? key : "");
  blasst_free(key);
  write_text("manifest.txt", manifest);

  /* Found by spec and target alone, with another a: one kernel serves
   * every value, and the loaded kernel's spec is the one asked for. */
  blasst_kernel *k = NULL;
  const char *asked = "dtype=bf16 head_dim=64 q_heads=4 kv_heads=2 "
                      "causal=true sparsity=blasst:a=1000 stats=true";
  CHECK_OK(blasst_kernel_load_package(tmpdir, asked, "sm_90a",
                                      BLASST_NO_DEVICE, &k));
  if (k) {
    int64_t v = 0;
    CHECK_OK(blasst_kernel_get_attr(k, BLASST_ATTR_HEAD_DIM, &v));
    CHECK(v == 64);
    CHECK_OK(blasst_kernel_get_attr(k, BLASST_ATTR_SPARSITY, &v));
    CHECK(v == BLASST_SPARSITY_A);
    CHECK_OK(blasst_kernel_get_attr(k, BLASST_ATTR_STATS, &v));
    CHECK(v == 1);
    CHECK_OK(blasst_kernel_get_attr(k, BLASST_ATTR_DEVICE, &v));
    CHECK(v == BLASST_NO_DEVICE);
    CHECK(blasst_kernel_sparsity_value(k) == 1000.0);
    CHECK(strcmp(blasst_kernel_target(k), "sm_90a") == 0);
    CHECK_FAILS(blasst_kernel_get_attr(k, (blasst_kernel_attr)77, &v),
                BLASST_ERROR_INVALID_ARGUMENT, "unknown kernel attribute");

    /* Argument checks, no driver: [B, H, S, D] strides for Q. */
    blasst_attention_args a;
    blasst_attention_args_init(&a);
    a.q = 0x10000000000ull; /* 1 TiB apart: never overlapping */
    a.k = 0x20000000000ull;
    a.v = 0x30000000000ull;
    a.o = 0x40000000000ull;
    a.stats = 0x50000;
    a.batch = 2;
    a.seq_q = 300;
    a.seq_kv = 517;
    a.q_heads = 4;
    a.kv_heads = 2;
    a.head_dim = 64;
    int64_t q[3] = {4 * 300 * 64, 64, 300 * 64};
    int64_t kv[3] = {517 * 2 * 64, 2 * 64, 64};
    int64_t o[3] = {300 * 4 * 64, 4 * 64, 64};
    memcpy(a.q_strides, q, sizeof(q));
    memcpy(a.k_strides, kv, sizeof(kv));
    memcpy(a.v_strides, kv, sizeof(kv));
    memcpy(a.o_strides, o, sizeof(o));
    CHECK_OK(blasst_kernel_check_args(k, &a));
    a.threshold_source = BLASST_THRESHOLD_DEVICE;
    CHECK_FAILS(blasst_kernel_check_args(k, &a), BLASST_ERROR_INVALID_ARGUMENT,
                "needs log2_threshold_ptr");
    a.log2_threshold_ptr = 0x60002;
    CHECK_FAILS(blasst_kernel_check_args(k, &a), BLASST_ERROR_INVALID_ARGUMENT,
                "not 4-byte aligned");
    a.log2_threshold_ptr = 0x60000;
    CHECK_OK(blasst_kernel_check_args(k, &a));
    a.stats = 0;
    CHECK_FAILS(blasst_kernel_check_args(k, &a), BLASST_ERROR_INVALID_ARGUMENT,
                "no stats pointer");
    a.stats = 0x50000;
    a.q_heads = 8;
    CHECK_FAILS(blasst_kernel_check_args(k, &a), BLASST_ERROR_INVALID_ARGUMENT,
                "numQHeads is 8 but the kernel was compiled for q_heads = 4");
    a.q_heads = 4;
    a.k_strides[1] = 100;
    CHECK_FAILS(blasst_kernel_check_args(k, &a), BLASST_ERROR_INVALID_ARGUMENT,
                "not a multiple of 16 bytes");
    a.k_strides[1] = 2 * 64;
    a.softmax_scale = 1e300;
    CHECK_FAILS(blasst_kernel_check_args(k, &a), BLASST_ERROR_INVALID_ARGUMENT,
                "softmax_scale");
    a.softmax_scale = 0.25;
    a.flags = BLASST_LAUNCH_ZERO_STATS;
    CHECK_OK(blasst_kernel_check_args(k, &a));
    a.flags = 6;
    CHECK_FAILS(blasst_kernel_check_args(k, &a), BLASST_ERROR_INVALID_ARGUMENT,
                "unknown launch flags 0x6");
    a.flags = 0;
    {
      uint64_t bytes = 7;
      int32_t splits = 0;
      CHECK_OK(blasst_kernel_workspace_bytes(k, &a, &bytes, &splits));
      CHECK(bytes == 0 && splits == 1); /* a prefill kernel: none */
    }
    a.kv_splits = -1;
    CHECK_FAILS(blasst_kernel_check_args(k, &a), BLASST_ERROR_INVALID_ARGUMENT,
                "kv_splits is -1");
    a.kv_splits = 0;
    a.reserved = 1;
    CHECK_FAILS(blasst_kernel_check_args(k, &a), BLASST_ERROR_INVALID_ARGUMENT,
                "args.reserved must be 0");
    a.reserved = 0;
    a.struct_size = 8;
    CHECK_FAILS(blasst_kernel_check_args(k, &a), BLASST_ERROR_INVALID_ARGUMENT,
                "struct_size");
    /* The struct before the KV cache fields (ABI 4) is accepted; they read
     * as 0. */
    a.seq_lens_kv = 0x1000;
    a.struct_size = (uint32_t)offsetof(blasst_attention_args, seq_lens_kv);
    CHECK_OK(blasst_kernel_check_args(k, &a));
    a.struct_size = sizeof(a);
    CHECK_FAILS(blasst_kernel_check_args(k, &a), BLASST_ERROR_INVALID_ARGUMENT,
                "a seqLensKV pointer was given but the kernel was compiled "
                "with kv_lengths = uniform");
    a.seq_lens_kv = 0;
    a.block_table = 0x2000;
    a.max_pages = 4;
    a.num_pages = 4;
    CHECK_FAILS(blasst_kernel_check_args(k, &a), BLASST_ERROR_INVALID_ARGUMENT,
                "compiled for a contiguous kv_cache");
    a.block_table = 0;
    a.max_pages = a.num_pages = 0;
    {
      int64_t v = -1;
      CHECK_OK(blasst_kernel_get_attr(k, BLASST_ATTR_KV_PER_SEQUENCE, &v));
      CHECK(v == 0);
      CHECK_OK(blasst_kernel_get_attr(k, BLASST_ATTR_KV_PAGE_SIZE, &v));
      CHECK(v == 0);
      /* BLASST prefill at head_dim 64 carries the two-CTA short-sequence
       * entry (64-key blocks, two CTAs per SM; session 45). */
      CHECK_OK(blasst_kernel_get_attr(k, BLASST_ATTR_SHORT_BLOCK_N, &v));
      CHECK(v == 64);
      CHECK_OK(blasst_kernel_get_attr(k, BLASST_ATTR_SHORT_CTAS_PER_SM, &v));
      CHECK(v == 2);
      CHECK_OK(blasst_kernel_get_attr(k, BLASST_ATTR_TMA_ENTRY, &v));
      CHECK(v == 0);
    }
    CHECK_FAILS(blasst_kernel_launch(k, &a, NULL), BLASST_ERROR_INVALID_ARGUMENT,
                "BLASST_NO_DEVICE");
    blasst_kernel_destroy(k);
  }
  /* Another sparsity kind is another kernel. */
  CHECK_FAILS(blasst_kernel_load_package(
                  tmpdir, "dtype=bf16 head_dim=64 q_heads=4 kv_heads=2 "
                          "causal=true sparsity=blasst:ln_lambda=-3 stats=true",
                  "sm_90a", BLASST_NO_DEVICE, &k),
              BLASST_ERROR_NOT_FOUND, "has no kernel for target=sm_90a");
  /* In-memory loading and the files it wrote. */
  CHECK_OK(blasst_kernel_load_data(blasst_compiled_cubin(c, &size), size,
                                   blasst_compiled_meta(c),
                                   blasst_compiled_spec(c), BLASST_NO_DEVICE,
                                   &k));
  blasst_kernel_destroy(k);
  CHECK_OK(blasst_kernel_load_files(stem, BLASST_NO_DEVICE, &k));
  blasst_kernel_destroy(k);
  /* Files that were not written together are refused, with or without a
   * device: an edited .meta against its content hash... */
  char *meta = read_text("k0.meta");
  char *threads = meta ? strstr(meta, "threads = 384\n") : NULL;
  CHECK(meta && strstr(meta, "content_sha256 = ") && threads);
  if (threads) {
    memcpy(threads, "threads = 256", 13);
    write_text("k0.meta", meta);
    CHECK_FAILS(blasst_kernel_load_files(stem, BLASST_NO_DEVICE, &k),
                BLASST_ERROR_BAD_FILE,
                "do not match the content hash their .meta records");
    memcpy(threads, "threads = 384", 13);
    /* ...and with no hash (a hand-edited kernel), a spec the metadata does
     * not describe: the decode kernel's packing is not in this .meta. */
    char *line = strstr(meta, "content_sha256 = ");
    char *end = line ? strchr(line, '\n') : NULL;
    if (end)
      memmove(line, end + 1, strlen(end + 1) + 1);
    write_text("k0.meta", meta);
    CHECK_OK(blasst_kernel_load_files(stem, BLASST_NO_DEVICE, &k));
    blasst_kernel_destroy(k);
    write_text("k0.spec", "dtype=bf16 head_dim=64 q_heads=4 kv_heads=2 "
                          "sparsity=blasst:a=256 stats=true phase=decode\n");
    CHECK_FAILS(blasst_kernel_load_files(stem, BLASST_NO_DEVICE, &k),
                BLASST_ERROR_BAD_FILE, "does not match the spec");
  }
  free(meta);
  CHECK_OK(blasst_compiled_write(c, stem));

  /* A kernel on the GPU, where one runs sm_90a. */
  if (gpu0_runs_sm90a()) {
    CHECK_OK(blasst_kernel_load_package(tmpdir, asked, NULL, 0, &k));
    blasst_kernel_destroy(k);
  } else {
    skip_part("no sm_90a GPU: loading on a device");
  }
  blasst_compiled_destroy(c);
}

/* A decode kernel's workspace and the kv_splits that asks for its launch
 * again: a split grid's count, or for the lean entry (per-sequence lengths,
 * up to two waves of the split grid and 32 sequences) the kv_splits given,
 * 0; passing that back keeps the launch the bytes were sized for. Both
 * follow the GPU's SM count: without a device they are refused; CTest runs
 * this with the fake driver too (one sm_90a GPU of 132 SMs). */
static void test_jit_decode_workspace(void) {
  const char *spec = "dtype=bf16 head_dim=64 q_heads=4 kv_heads=2 "
                     "phase=decode kv_lengths=per_sequence";
  char cache[512];
  path(cache, sizeof(cache), "cache");
  blasst_compiled *c = NULL;
  if (blasst_jit_compile(spec, "sm_90a", cache, &c) != BLASST_OK) {
    printf("(%s)\n", blasst_last_error());
    skip_part("decode kernel not compiled: its workspace");
    return;
  }
  CHECK(strstr(blasst_compiled_meta(c), "lean_entry = 1\n") != NULL);
  size_t size = 0;
  blasst_kernel *k = NULL;
  const void *cubin = blasst_compiled_cubin(c, &size);
  CHECK_OK(blasst_kernel_load_data(cubin, size, blasst_compiled_meta(c),
                                   blasst_compiled_spec(c), BLASST_NO_DEVICE,
                                   &k));
  blasst_attention_args a;
  blasst_attention_args_init(&a);
  a.q = 0x10000000000ull; /* 1 TiB apart: never overlapping */
  a.k = 0x20000000000ull;
  a.v = 0x30000000000ull;
  a.o = 0x40000000000ull;
  a.seq_lens_kv = 0x50000;
  a.seq_q = 1;
  a.seq_kv = 32768;
  a.q_heads = 4;
  a.kv_heads = 2;
  a.head_dim = 64;
  int64_t q[3] = {4 * 64, 4 * 64, 64};
  int64_t kv[3] = {32768 * 2 * 64, 2 * 64, 64};
  memcpy(a.q_strides, q, sizeof(q));
  memcpy(a.k_strides, kv, sizeof(kv));
  memcpy(a.v_strides, kv, sizeof(kv));
  memcpy(a.o_strides, q, sizeof(q));
  uint64_t bytes = 0;
  int32_t splits = -1;
  a.batch = 4;
  CHECK_OK(blasst_kernel_check_args(k, &a));
  CHECK_FAILS(blasst_kernel_workspace_bytes(k, &a, &bytes, &splits),
              BLASST_ERROR_INVALID_ARGUMENT, "follow the GPU's SM count");
  blasst_kernel_destroy(k);
  k = NULL;
  if (!gpu0_runs_sm90a()) {
    skip_part("no sm_90a GPU: the decode workspace on a device");
    blasst_compiled_destroy(c);
    return;
  }
  CHECK_OK(blasst_kernel_load_data(cubin, size, blasst_compiled_meta(c),
                                   blasst_compiled_spec(c), 0, &k));
  blasst_compiled_destroy(c);
  if (!k)
    return;
  /* Batch 4: the lean entry, a workspace, kv_splits 0 to pass back. */
  CHECK_OK(blasst_kernel_workspace_bytes(k, &a, &bytes, &splits));
  CHECK(bytes > 0 && splits == 0);
  /* Batch 33 sequences: the split grid, its count. */
  a.batch = 33;
  CHECK_OK(blasst_kernel_workspace_bytes(k, &a, &bytes, &splits));
  CHECK(bytes > 0 && splits > 1);
  /* A count asked for is the split grid's and comes back as asked. */
  a.batch = 4;
  a.kv_splits = 3;
  CHECK_OK(blasst_kernel_workspace_bytes(k, &a, &bytes, &splits));
  CHECK(bytes > 0 && splits == 3);
  /* The query's pointers may be stand-ins (the Python op sizes its plan's
   * workspace so); a launch's O may not share memory with Q, K or V. */
  blasst_attention_args stand = a;
  stand.q = stand.k = stand.v = stand.o = 16;
  CHECK_OK(blasst_kernel_workspace_bytes(k, &stand, &bytes, &splits));
  stand = a;
  stand.o = stand.k;
  CHECK_FAILS(blasst_kernel_launch(k, &stand, NULL),
              BLASST_ERROR_INVALID_ARGUMENT,
              "overlaps K (0x20000000000): the kernel writes O while every "
              "CTA of a head still reads K");
  blasst_kernel_destroy(k);
}
#endif

int main(void) {
  snprintf(tmpdir, sizeof(tmpdir), "%s/blasst-capi-XXXXXX",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  test_versions_and_errors();
  test_specs();
  test_thresholds();
  test_files();
  test_packages();
  test_devices();
#ifdef BLASST_TEST_JIT
  test_jit_package();
  test_jit_decode_workspace();
#endif
  char cmd[600];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0)
    fprintf(stderr, "warning: could not remove %s\n", tmpdir);
  printf("%d checks, %d failed\n", checks, failures);
  return failures ? 1 : 0;
}
