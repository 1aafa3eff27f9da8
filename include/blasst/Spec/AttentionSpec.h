//===- AttentionSpec.h - What an attention kernel computes ------*- C++ -*-===//
//
// The problem-level description of one attention computation, shared by the
// compiler (attn dialect, JIT API), the tools and the runtime. Deliberately
// plain C++17 with no LLVM/MLIR dependency: blasst-bench and the runtime use it
// on machines that have neither.
//
//===----------------------------------------------------------------------===//
#ifndef BLASST_SPEC_ATTENTIONSPEC_H
#define BLASST_SPEC_ATTENTIONSPEC_H

#include <optional>
#include <string>
#include <vector>

namespace blasst {

enum class DType { BF16, F16 };
enum class Phase { Prefill, Decode };
/// The GPU targets, as the spec, the runtime, the JIT and the tools name
/// them (toString: "sm_90a", "sm_100a"). The ws dialect has its own enum for
/// the ws.kernel attribute; toWSTarget (Conversion/AttnToWS/AttnToWS.h) is
/// the one conversion to it.
enum class Target { SM90a, SM100a };
/// Every target, in enum order.
inline constexpr Target kAllTargets[] = {Target::SM90a, Target::SM100a};

/// BLASST dynamic block sparsity. With `ScaleFactor`, lambda = a / L_kv is
/// computed per sequence in the kernel; with `LnLambda`, ln(lambda) is fixed.
/// log2(e): the kernels take the softmax scale and ln(lambda) in the log2
/// domain.
inline constexpr double kLog2E = 1.4426950408889634074;

enum class SparsityKind { None, ScaleFactor, LnLambda };

struct SparsityPolicy {
  SparsityKind kind = SparsityKind::None;
  double value = 0.0; // `a` for ScaleFactor, ln(lambda) for LnLambda.
  /// The cap on the effective lambda, in (0, 1] (spec key `lambda_max`). A
  /// block is skipped when every weight it would get is below lambda; with
  /// lambda above 1 a block whose maximum exceeds the running maximum (the
  /// block that dominates the softmax) could be skipped. The kernel applies
  /// min(lambda, lambda_max) per sequence, so `a / L_kv` with L_kv < a is
  /// capped too.
  double lambdaMax = 1.0;

  bool isDense() const { return kind == SparsityKind::None; }
  /// log2(lambda_max): the kernel's threshold is at most this (<= 0).
  double log2Cap() const;
  /// log2 of the effective threshold for a KV length `lkv` (the value the
  /// kernel compares m_block - m_running with, in the log2 domain).
  double log2Threshold(double lkv) const;
  bool operator==(const SparsityPolicy &o) const {
    return kind == o.kind && value == o.value && lambdaMax == o.lambdaMax;
  }
};

struct AttentionSpec {
  /// Optional human-readable name (a preset's name, or the spec file's).
  std::string name;
  DType dtype = DType::BF16;
  int headDim = 128;
  int headDimV = 128;
  int numQHeads = 32;
  int numKVHeads = 8;
  bool causal = false;
  Phase phase = Phase::Prefill;
  /// Softmax scale; nullopt means 1/sqrt(headDim).
  std::optional<double> softmaxScale;
  SparsityPolicy sparsity;
  /// Emit the log-sum-exp output (one float per query row and head).
  bool lse = false;
  /// Emit per (batch, head) visited/skipped KV block counters.
  bool stats = false;
  /// Decode KV caches (issue 20; spec keys `kv_lengths` and `kv_cache`):
  /// every sequence of the batch has its own KV length (an int32 device
  /// array [batch]) instead of the launch's one seq_kv.
  bool kvPerSequence = false;
  /// 0: K and V are contiguous [batch, seq_kv, kv_heads, head_dim]; else the
  /// page size (a power of two, kMinKVPage..kMaxKVPage) of a paged cache:
  /// K and V are [num_pages, page, kv_heads, head_dim] and an int32 block
  /// table [batch, max_pages] names each sequence's pages.
  int kvPageSize = 0;
  bool paged() const { return kvPageSize != 0; }

  double effectiveScale() const;
  int gqaRatio() const { return numQHeads / numKVHeads; }

  /// Structural validity (independent of any target): positive sizes, kv heads
  /// dividing q heads, stats only with a sparsity policy, finite scale, ...
  /// Returns an empty string when valid, else the reason.
  std::string validate() const;

  /// Canonical key=value text, one key per line; parseSpec(toString()) is the
  /// identity. Also the cache key material of the JIT.
  std::string toString() const;
  /// The same on one line, `key=value` separated by spaces (for summaries).
  std::string toShortString() const;

  bool operator==(const AttentionSpec &o) const;
  bool operator!=(const AttentionSpec &o) const { return !(*this == o); }
};

/// Result of parsing: either a spec or an error message that names the source
/// and line (`file:3: unknown key 'foo'`).
struct SpecOrError {
  std::optional<AttentionSpec> spec;
  std::string error;
  explicit operator bool() const { return spec.has_value(); }
};

/// Parses the key=value spec format. `#` starts a comment; blank lines are
/// ignored; keys may also be separated by spaces or commas on one line.
/// Keys: name, preset (start from a preset, later keys override), dtype
/// (bf16|f16), head_dim, head_dim_v, q_heads, kv_heads, causal (true|false),
/// phase (prefill|decode), softmax_scale, sparsity
/// (none|blasst:a=<float>|blasst:ln_lambda=<float>), lse, stats,
/// kv_lengths (uniform|per_sequence), kv_cache (contiguous|paged:page=<n>).
/// `sourceName` prefixes error messages. The result is validated.
SpecOrError parseSpec(const std::string &text,
                      const std::string &sourceName = "<spec>");
/// Reads and parses a spec file.
SpecOrError parseSpecFile(const std::string &path);

/// Parses a sparsity policy string: none | blasst:a=<float> |
/// blasst:ln_lambda=<float>. Returns an error string on failure.
std::optional<SparsityPolicy> parseSparsity(const std::string &text,
                                            std::string &error);
std::string sparsityToString(const SparsityPolicy &p);

/// Named presets (llama3-8b-prefill, llama3-8b-decode, ...).
std::optional<AttentionSpec> lookupPreset(const std::string &name);
std::vector<std::string> presetNames();

const char *toString(DType d);
const char *toString(Phase p);
const char *toString(Target t);
std::optional<DType> parseDType(const std::string &s);
std::optional<Phase> parsePhase(const std::string &s);
std::optional<Target> parseTarget(const std::string &s);
/// "sm_90a or sm_100a": what an unknown target's message lists.
std::string targetChoices();
int dtypeBytes(DType d);
/// Page sizes a paged KV cache may have (powers of two).
inline constexpr int kMinKVPage = 16;
inline constexpr int kMaxKVPage = 256;
/// `kv_cache` values: "contiguous" or "paged:page=<n>".
std::string kvCacheToString(int pageSize);

/// `text` for an error message: printable ASCII as is, control and
/// non-ASCII bytes and '\\' as \xNN / \\, so a binary file's bytes reach
/// the terminal as text. quoteForMessage also puts it in single quotes and
/// cuts it after 64 bytes ('...'... (N bytes)).
std::string escapeForMessage(const std::string &text);
std::string quoteForMessage(const std::string &text);

/// Whether the compiler can build this (valid) spec for `target`. Returns an
/// empty string when supported, else the reason.
std::string checkSupported(const AttentionSpec &spec, Target target);

} // namespace blasst

#endif // BLASST_SPEC_ATTENTIONSPEC_H
