//===- AttentionSpec.cpp - What an attention kernel computes --------------===//
//
// Parsing, printing, validation and presets of AttentionSpec. Only the C++17
// standard library is used (see the header for why), and nothing throws, so
// the library also links into code built with -fno-exceptions.
//
//===----------------------------------------------------------------------===//

#include "blasst/Spec/AttentionSpec.h"

#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <sstream>

using namespace blasst;

namespace {

// Limits shared by validate() and the error messages. 1024 is far above any
// real head size or head count; the bound exists to reject typos (an extra
// zero) before they reach shape computations that could overflow.
constexpr int kMaxHeadDim = 1024;
constexpr int kMaxHeads = 1024;

const char *const kKnownKeys[] = {
    "name",     "preset",   "dtype",  "head_dim", "head_dim_v",
    "q_heads",  "kv_heads", "causal", "phase",    "softmax_scale",
    "sparsity", "lambda_max", "lse",   "stats", "kv_lengths", "kv_cache"};

std::string knownKeysList() {
  std::string out;
  for (const char *key : kKnownKeys) {
    if (!out.empty())
      out += ", ";
    out += key;
  }
  return out;
}

/// Formats `v` with the fewest significant digits that still read back as
/// exactly `v`, so printed specs stay readable ("256", not "256.00000000000")
/// while parseSpec(toString()) remains the identity.
std::string formatShortestDouble(double v) {
  char buf[64];
  for (int precision : {6, 9, 12, 15, 17}) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v)
      break;
  }
  return buf;
}

/// Formats with %.17g, which always round-trips a double.
std::string formatExactDouble(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

/// Strict integer parse: the whole string must be a base-10 integer that fits
/// in an int. strtol alone would accept "12x" and leading blanks.
bool parseInt(const std::string &s, int &out) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0])))
    return false;
  errno = 0;
  char *end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno == ERANGE || *end != '\0' || end == s.c_str())
    return false;
  if (v < INT_MIN || v > INT_MAX)
    return false;
  out = static_cast<int>(v);
  return true;
}

/// Strict floating-point parse; rejects trailing junk and values that
/// overflow or underflow (strtod reports both as ERANGE). "inf" and "nan" are
/// accepted here and rejected by validate(), which explains why.
/// Parses a double; `outOfRange` (when given) tells a number beyond a
/// double's normal range (1e-320, 1e400) from text that is no number.
bool parseDouble(const std::string &s, double &out,
                 bool *outOfRange = nullptr) {
  if (outOfRange)
    *outOfRange = false;
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0])))
    return false;
  errno = 0;
  char *end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (*end != '\0' || end == s.c_str())
    return false;
  if (errno == ERANGE) {
    if (outOfRange)
      *outOfRange = true;
    return false;
  }
  out = v;
  return true;
}

/// The message for a number that did not parse.
std::string badNumber(const std::string &value, const std::string &what,
                      bool outOfRange) {
  if (outOfRange)
    return "number " + quoteForMessage(value) + " for " + what +
           " is out of range (beyond a double's normal range)";
  return "invalid number " + quoteForMessage(value) + " for " + what;
}

std::optional<bool> parseBool(const std::string &s) {
  if (s == "true" || s == "1")
    return true;
  if (s == "false" || s == "0")
    return false;
  return std::nullopt;
}

/// The sparsity checks, shared by parseSparsity (so a bad value is reported
/// with its line number) and validate() (for specs built in code).
std::string checkSparsityValue(const SparsityPolicy &p) {
  if (!(std::isfinite(p.lambdaMax) && p.lambdaMax > 0 && p.lambdaMax <= 1))
    return "lambda_max must be in (0, 1], got " +
           formatShortestDouble(p.lambdaMax) +
           ": above 1 a block whose maximum exceeds the running maximum "
           "(the block that dominates the softmax) could be skipped";
  if (p.kind == SparsityKind::None && p.lambdaMax != 1)
    return "lambda_max needs a sparsity policy";
  switch (p.kind) {
  case SparsityKind::None:
    return "";
  case SparsityKind::ScaleFactor:
    if (!std::isfinite(p.value))
      return "sparsity scale factor a must be finite";
    if (!(p.value > 0))
      return "sparsity scale factor a must be > 0, got " +
             formatShortestDouble(p.value);
    return "";
  case SparsityKind::LnLambda:
    if (!std::isfinite(p.value))
      return "sparsity ln_lambda must be finite";
    // lambda is a threshold on exp(s - rowmax) <= 1; lambda >= 1 would skip
    // every block, so only negative logarithms make sense.
    if (!(p.value < 0))
      return "sparsity ln_lambda must be < 0 (the log of a threshold below "
             "1), got " +
             formatShortestDouble(p.value);
    // The kernel takes ln_lambda * log2(e) as a float32.
    if (p.value * kLog2E < -double(std::numeric_limits<float>::max()))
      return "sparsity ln_lambda = " + formatShortestDouble(p.value) +
             " is out of range: the kernel takes ln_lambda * log2(e) as a "
             "float32 (at least -3.4e38)";
    if (p.value > std::log(p.lambdaMax))
      return "sparsity ln_lambda = " + formatShortestDouble(p.value) +
             " is above the cap ln(lambda_max) = " +
             formatShortestDouble(std::log(p.lambdaMax)) +
             " (lambda_max = " + formatShortestDouble(p.lambdaMax) +
             "): lower ln_lambda or raise lambda_max (at most 1)";
    return "";
  }
  return "unknown sparsity kind";
}

std::string checkRange(const char *key, int v, int lo, int hi) {
  if (v >= lo && v <= hi)
    return "";
  return std::string(key) + " " + std::to_string(v) + " out of range [" +
         std::to_string(lo) + ", " + std::to_string(hi) + "]";
}

AttentionSpec makeSpec(const char *name, int headDim, int qHeads, int kvHeads,
                       bool causal, Phase phase) {
  AttentionSpec s;
  s.name = name;
  s.dtype = DType::BF16;
  s.headDim = headDim;
  s.headDimV = headDim;
  s.numQHeads = qHeads;
  s.numKVHeads = kvHeads;
  s.causal = causal;
  s.phase = phase;
  return s;
}

/// The preset table, in presetNames() order; each spec's name is its key.
const std::vector<AttentionSpec> &presets() {
  static const std::vector<AttentionSpec> table = [] {
    std::vector<AttentionSpec> t;
    t.push_back(
        makeSpec("llama3-8b-prefill", 128, 32, 8, true, Phase::Prefill));
    // Decode attends one new token to the whole cache, so there is nothing
    // to mask.
    t.push_back(makeSpec("llama3-8b-decode", 128, 32, 8, false, Phase::Decode));
    t.push_back(
        makeSpec("llama3-70b-prefill", 128, 64, 8, true, Phase::Prefill));
    t.push_back(
        makeSpec("mha-hd64-prefill", 64, 16, 16, false, Phase::Prefill));
    t.push_back(
        makeSpec("mha-hd128-prefill", 128, 16, 16, false, Phase::Prefill));
    t.push_back(
        makeSpec("mqa-hd128-prefill", 128, 16, 1, true, Phase::Prefill));
    AttentionSpec sparse =
        makeSpec("llama3-8b-prefill-blasst", 128, 32, 8, true, Phase::Prefill);
    sparse.sparsity = {SparsityKind::ScaleFactor, 256.0};
    sparse.stats = true;
    t.push_back(std::move(sparse));
    return t;
  }();
  return table;
}

std::string presetNamesList() {
  std::string out;
  for (const AttentionSpec &p : presets()) {
    if (!out.empty())
      out += ", ";
    out += p.name;
  }
  return out;
}

/// Splits one (comment-free) line into tokens separated by blanks or commas.
std::vector<std::string> tokenize(const std::string &rawLine) {
  // `key = value` reads better in files: glue blanks around '=' first.
  std::string line;
  for (size_t i = 0; i < rawLine.size(); ++i) {
    char c = rawLine[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      size_t j = i;
      while (j < rawLine.size() &&
             std::isspace(static_cast<unsigned char>(rawLine[j])))
        ++j;
      bool beforeEq = j < rawLine.size() && rawLine[j] == '=';
      bool afterEq = !line.empty() && line.back() == '=';
      if (beforeEq || afterEq) {
        i = j - 1;
        continue;
      }
    }
    line += c;
  }
  std::vector<std::string> tokens;
  std::string cur;
  for (char c : line) {
    if (c == ',' || std::isspace(static_cast<unsigned char>(c))) {
      if (!cur.empty())
        tokens.push_back(std::move(cur));
      cur.clear();
      continue;
    }
    cur += c;
  }
  if (!cur.empty())
    tokens.push_back(std::move(cur));
  return tokens;
}

/// Shared by parseSpec and parseSpecFile; `numKeys` lets the file variant
/// reject empty files, whereas an empty string is a fine way to ask for the
/// defaults in code.
SpecOrError parseSpecImpl(const std::string &text,
                          const std::string &sourceName, int &numKeys) {
  SpecOrError result;
  AttentionSpec spec;
  // Key -> line it was first set on, to report duplicates usefully.
  std::map<std::string, int> seen;
  bool headDimVGiven = false, headDimGiven = false;
  // lambda_max belongs to the sparsity policy, which a later `sparsity` key
  // replaces: it is applied after all keys.
  std::optional<double> lambdaMax;
  numKeys = 0;

  std::istringstream in(text);
  std::string line;
  int lineNo = 0;
  while (std::getline(in, line)) {
    ++lineNo;
    std::string where =
        escapeForMessage(sourceName) + ":" + std::to_string(lineNo) + ": ";
    auto fail = [&](const std::string &msg) {
      result.spec.reset();
      result.error = where + msg;
      return result;
    };

    size_t hash = line.find('#');
    if (hash != std::string::npos)
      line.erase(hash);

    for (const std::string &token : tokenize(line)) {
      size_t eq = token.find('=');
      if (eq == std::string::npos || eq == 0)
        return fail("expected key=value, got " + quoteForMessage(token));
      std::string key = token.substr(0, eq);
      std::string value = token.substr(eq + 1);

      // Spellings of the KV cache keys other engines use.
      if (key == "page_size" || key == "block_table" || key == "seq_lens")
        return fail("unknown key " + quoteForMessage(key) +
                    " (a paged KV cache is 'kv_cache=paged:page=<n>', "
                    "per-sequence KV lengths 'kv_lengths=per_sequence')");
      bool known = false;
      for (const char *k : kKnownKeys)
        known |= key == k;
      if (!known)
        return fail("unknown key " + quoteForMessage(key) +
                    " (known keys: " + knownKeysList() + ")");

      auto [it, inserted] = seen.emplace(key, lineNo);
      if (!inserted)
        return fail("duplicate key '" + key + "' (first set on line " +
                    std::to_string(it->second) + ")");
      // A preset replaces the whole spec, so it would silently discard keys
      // given before it.
      if (key == "preset" && seen.size() > 1)
        return fail("preset must come first");
      ++numKeys;

      if (value.empty())
        return fail("missing value for key '" + key + "'");

      auto invalidEnum = [&](const char *allowed) {
        return fail("invalid value " + quoteForMessage(value) + " for " + key +
                    " (expected " + allowed + ")");
      };

      if (key == "name") {
        spec.name = value;
      } else if (key == "preset") {
        std::optional<AttentionSpec> p = lookupPreset(value);
        if (!p)
          return fail("unknown preset " + quoteForMessage(value) +
                      " (known presets: " + presetNamesList() + ")");
        spec = *p;
      } else if (key == "dtype") {
        std::optional<DType> d = parseDType(value);
        if (!d)
          return invalidEnum("bf16|f16");
        spec.dtype = *d;
      } else if (key == "head_dim" || key == "head_dim_v" || key == "q_heads" ||
                 key == "kv_heads") {
        int v = 0;
        if (!parseInt(value, v))
          return fail("invalid integer " + quoteForMessage(value) + " for " +
                      key);
        if (key == "head_dim") {
          spec.headDim = v;
          headDimGiven = true;
        } else if (key == "head_dim_v") {
          spec.headDimV = v;
          headDimVGiven = true;
        } else if (key == "q_heads") {
          spec.numQHeads = v;
        } else {
          spec.numKVHeads = v;
        }
      } else if (key == "causal" || key == "lse" || key == "stats") {
        std::optional<bool> b = parseBool(value);
        if (!b)
          return invalidEnum("true|false|1|0");
        if (key == "causal")
          spec.causal = *b;
        else if (key == "lse")
          spec.lse = *b;
        else
          spec.stats = *b;
      } else if (key == "phase") {
        std::optional<Phase> p = parsePhase(value);
        if (!p)
          return invalidEnum("prefill|decode");
        spec.phase = *p;
      } else if (key == "kv_lengths") {
        if (value == "uniform")
          spec.kvPerSequence = false;
        else if (value == "per_sequence")
          spec.kvPerSequence = true;
        else
          return invalidEnum("uniform|per_sequence");
      } else if (key == "kv_cache") {
        int page = 0;
        if (value == "contiguous") {
          spec.kvPageSize = 0;
        } else if (value.rfind("paged:page=", 0) == 0 &&
                   parseInt(value.substr(11), page)) {
          // The range is validate()'s (a message with the allowed sizes);
          // 0 would read as contiguous.
          if (page <= 0)
            return fail("kv_cache page size " + std::to_string(page) +
                        " is not supported: a power of two from " +
                        std::to_string(kMinKVPage) + " to " +
                        std::to_string(kMaxKVPage));
          spec.kvPageSize = page;
        } else {
          return invalidEnum("contiguous|paged:page=<n>");
        }
      } else if (key == "softmax_scale") {
        if (value == "default") {
          spec.softmaxScale.reset();
        } else {
          double d = 0;
          bool range = false;
          if (!parseDouble(value, d, &range))
            return fail(badNumber(value, "softmax_scale", range) +
                        (range ? "" : " (expected a float or 'default')"));
          spec.softmaxScale = d;
        }
      } else if (key == "lambda_max") {
        double d = 0;
        bool range = false;
        if (!parseDouble(value, d, &range))
          return fail(badNumber(value, "lambda_max", range));
        lambdaMax = d;
      } else if (key == "sparsity") {
        std::string err;
        std::optional<SparsityPolicy> p = parseSparsity(value, err);
        if (!p)
          return fail("invalid sparsity " + quoteForMessage(value) + ": " +
                      err);
        spec.sparsity = *p;
      }
    }
  }

  // Almost every model has equal Q/K and V head sizes, so head_dim alone
  // means both; this applies on top of a preset as well.
  if (headDimGiven && !headDimVGiven)
    spec.headDimV = spec.headDim;
  if (lambdaMax)
    spec.sparsity.lambdaMax = *lambdaMax;

  std::string reason = spec.validate();
  if (!reason.empty()) {
    result.error = escapeForMessage(sourceName) + ": invalid spec: " + reason;
    return result;
  }
  result.spec = std::move(spec);
  return result;
}

} // namespace

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

const char *blasst::toString(DType d) {
  switch (d) {
  case DType::BF16:
    return "bf16";
  case DType::F16:
    return "f16";
  }
  return "?";
}

const char *blasst::toString(Phase p) {
  switch (p) {
  case Phase::Prefill:
    return "prefill";
  case Phase::Decode:
    return "decode";
  }
  return "?";
}

const char *blasst::toString(Target t) {
  switch (t) {
  case Target::SM90a:
    return "sm_90a";
  case Target::SM100a:
    return "sm_100a";
  }
  return "?";
}

std::optional<DType> blasst::parseDType(const std::string &s) {
  if (s == "bf16")
    return DType::BF16;
  if (s == "f16")
    return DType::F16;
  return std::nullopt;
}

std::optional<Phase> blasst::parsePhase(const std::string &s) {
  if (s == "prefill")
    return Phase::Prefill;
  if (s == "decode")
    return Phase::Decode;
  return std::nullopt;
}

std::optional<Target> blasst::parseTarget(const std::string &s) {
  for (Target t : kAllTargets)
    if (s == toString(t))
      return t;
  return std::nullopt;
}

std::string blasst::targetChoices() {
  std::string out;
  size_t n = std::size(kAllTargets);
  for (size_t i = 0; i < n; ++i)
    out += std::string(i == 0 ? "" : i + 1 == n ? " or " : ", ") +
           toString(kAllTargets[i]);
  return out;
}

int blasst::dtypeBytes(DType d) {
  switch (d) {
  case DType::BF16:
  case DType::F16:
    return 2;
  }
  return 0;
}

//===----------------------------------------------------------------------===//
// Sparsity
//===----------------------------------------------------------------------===//

std::optional<SparsityPolicy> blasst::parseSparsity(const std::string &text,
                                                    std::string &error) {
  static const char kExpected[] =
      "expected none, blasst:a=<float> or blasst:ln_lambda=<float>";
  if (text == "none")
    return SparsityPolicy{};

  static const std::string kPrefix = "blasst:";
  if (text.compare(0, kPrefix.size(), kPrefix) != 0) {
    error = kExpected;
    return std::nullopt;
  }
  std::string rest = text.substr(kPrefix.size());
  size_t eq = rest.find('=');
  if (eq == std::string::npos) {
    error = kExpected;
    return std::nullopt;
  }
  std::string param = rest.substr(0, eq);
  std::string value = rest.substr(eq + 1);

  SparsityPolicy p;
  if (param == "a") {
    p.kind = SparsityKind::ScaleFactor;
  } else if (param == "ln_lambda") {
    p.kind = SparsityKind::LnLambda;
  } else {
    error = "unknown blasst parameter " + quoteForMessage(param) + " (" +
            kExpected + ")";
    return std::nullopt;
  }
  if (value.empty()) {
    error = "missing value for blasst " + param;
    return std::nullopt;
  }
  bool range = false;
  if (!parseDouble(value, p.value, &range)) {
    error = badNumber(value, "blasst " + param, range);
    return std::nullopt;
  }
  std::string reason = checkSparsityValue(p);
  if (!reason.empty()) {
    error = reason;
    return std::nullopt;
  }
  return p;
}

double SparsityPolicy::log2Cap() const { return std::log2(lambdaMax); }

double SparsityPolicy::log2Threshold(double lkv) const {
  double t = kind == SparsityKind::ScaleFactor ? std::log2(value) - std::log2(lkv)
                                               : value * kLog2E;
  return std::min(t, log2Cap());
}

std::string blasst::sparsityToString(const SparsityPolicy &p) {
  switch (p.kind) {
  case SparsityKind::None:
    return "none";
  case SparsityKind::ScaleFactor:
    return "blasst:a=" + formatShortestDouble(p.value);
  case SparsityKind::LnLambda:
    return "blasst:ln_lambda=" + formatShortestDouble(p.value);
  }
  return "none";
}

//===----------------------------------------------------------------------===//
// Messages
//===----------------------------------------------------------------------===//

std::string blasst::escapeForMessage(const std::string &text) {
  std::string out;
  for (char ch : text) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c == '\\') {
      out += "\\\\";
    } else if (c >= 0x20 && c < 0x7f) {
      out += ch;
    } else {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  return out;
}

std::string blasst::quoteForMessage(const std::string &text) {
  constexpr size_t kMaxBytes = 64;
  if (text.size() <= kMaxBytes)
    return "'" + escapeForMessage(text) + "'";
  return "'" + escapeForMessage(text.substr(0, kMaxBytes)) + "'... (" +
         std::to_string(text.size()) + " bytes)";
}

//===----------------------------------------------------------------------===//
// AttentionSpec
//===----------------------------------------------------------------------===//

double AttentionSpec::effectiveScale() const {
  if (softmaxScale)
    return *softmaxScale;
  return 1.0 / std::sqrt(static_cast<double>(headDim));
}

std::string AttentionSpec::validate() const {
  // The name is printed as a bare token by toString(), so it must not contain
  // anything the tokenizer splits on or strips; and it is printed in
  // progress messages, so no control bytes either.
  for (char c : name)
    if (c == ',' || c == '#' || std::isspace(static_cast<unsigned char>(c)))
      return "name " + quoteForMessage(name) +
             " must not contain blanks, commas or '#'";
  for (char c : name)
    if (!std::isprint(static_cast<unsigned char>(c)))
      return "name " + quoteForMessage(name) +
             " must be printable ASCII (letters, digits, '-', '_', ...)";

  std::string r;
  if (!(r = checkRange("head_dim", headDim, 1, kMaxHeadDim)).empty() ||
      !(r = checkRange("head_dim_v", headDimV, 1, kMaxHeadDim)).empty() ||
      !(r = checkRange("q_heads", numQHeads, 1, kMaxHeads)).empty() ||
      !(r = checkRange("kv_heads", numKVHeads, 1, kMaxHeads)).empty())
    return r;
  if (numQHeads % numKVHeads != 0)
    return "q_heads " + std::to_string(numQHeads) +
           " is not a multiple of kv_heads " + std::to_string(numKVHeads);
  if (softmaxScale && !(std::isfinite(*softmaxScale) && *softmaxScale > 0))
    return "softmax_scale must be finite and > 0, got " +
           formatShortestDouble(*softmaxScale);
  // The kernel takes scale * log2(e) as a float32: it must be a finite,
  // normal float (a subnormal or infinite scale turns every score into 0,
  // inf or NaN).
  if (softmaxScale) {
    double s = *softmaxScale * kLog2E;
    if (!(s <= double(std::numeric_limits<float>::max()) &&
          s >= double(std::numeric_limits<float>::min())))
      return "softmax_scale " + formatShortestDouble(*softmaxScale) +
             " is out of range: the kernel takes softmax_scale * log2(e) as "
             "a float32, which must lie in [1.2e-38, 3.4e38]";
  }
  if (!(r = checkSparsityValue(sparsity)).empty())
    return r;
  // The counters count skipped blocks; a dense kernel skips none, and its
  // variant has no counter outputs to write them to.
  if (stats && sparsity.isDense())
    return "stats need a sparsity policy";
  if (kvPageSize != 0 &&
      (kvPageSize < kMinKVPage || kvPageSize > kMaxKVPage ||
       (kvPageSize & (kvPageSize - 1)) != 0))
    return "kv_cache page size " + std::to_string(kvPageSize) +
           " is not supported: a power of two from " +
           std::to_string(kMinKVPage) + " to " + std::to_string(kMaxKVPage);
  return "";
}

std::string blasst::kvCacheToString(int pageSize) {
  return pageSize ? "paged:page=" + std::to_string(pageSize) : "contiguous";
}

std::string AttentionSpec::toString() const {
  std::string out;
  if (!name.empty())
    out += "name=" + name + "\n";
  out += std::string("dtype=") + blasst::toString(dtype) + "\n";
  out += "head_dim=" + std::to_string(headDim) + "\n";
  out += "head_dim_v=" + std::to_string(headDimV) + "\n";
  out += "q_heads=" + std::to_string(numQHeads) + "\n";
  out += "kv_heads=" + std::to_string(numKVHeads) + "\n";
  out += std::string("causal=") + (causal ? "true" : "false") + "\n";
  out += std::string("phase=") + blasst::toString(phase) + "\n";
  out += "softmax_scale=" +
         (softmaxScale ? formatExactDouble(*softmaxScale) : "default") + "\n";
  out += "sparsity=" + sparsityToString(sparsity) + "\n";
  // The default cap (1) is left out: specs without the key read the same.
  if (sparsity.lambdaMax != 1.0)
    out += "lambda_max=" + formatExactDouble(sparsity.lambdaMax) + "\n";
  out += std::string("lse=") + (lse ? "true" : "false") + "\n";
  out += std::string("stats=") + (stats ? "true" : "false") + "\n";
  // The KV cache keys only when not the defaults: the text of every spec
  // without them (and so the JIT's cache keys) reads as before.
  if (kvPerSequence)
    out += "kv_lengths=per_sequence\n";
  if (kvPageSize)
    out += "kv_cache=" + kvCacheToString(kvPageSize) + "\n";
  return out;
}

std::string AttentionSpec::toShortString() const {
  AttentionSpec unnamed = *this;
  unnamed.name.clear();
  std::string out = unnamed.toString();
  // Drop the final newline, then join the lines with spaces.
  if (!out.empty() && out.back() == '\n')
    out.pop_back();
  for (char &c : out)
    if (c == '\n')
      c = ' ';
  return out;
}

bool AttentionSpec::operator==(const AttentionSpec &o) const {
  return name == o.name && dtype == o.dtype && headDim == o.headDim &&
         headDimV == o.headDimV && numQHeads == o.numQHeads &&
         numKVHeads == o.numKVHeads && causal == o.causal && phase == o.phase &&
         softmaxScale == o.softmaxScale && sparsity == o.sparsity &&
         lse == o.lse && stats == o.stats &&
         kvPerSequence == o.kvPerSequence && kvPageSize == o.kvPageSize;
}

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

SpecOrError blasst::parseSpec(const std::string &text,
                              const std::string &sourceName) {
  int numKeys = 0;
  return parseSpecImpl(text, sourceName, numKeys);
}

SpecOrError blasst::parseSpecFile(const std::string &path) {
  SpecOrError result;
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    result.error = "cannot open spec file '" + escapeForMessage(path) +
                   "': " + std::strerror(errno);
    return result;
  }
  // A spec is a few lines: read at most 1 MiB so a device or a pipe (say
  // /dev/zero) cannot make us read forever.
  constexpr std::streamsize kMaxBytes = 1 << 20;
  std::string text(kMaxBytes + 1, '\0');
  file.read(&text[0], kMaxBytes + 1);
  if (file.bad()) {
    result.error = "cannot read spec file '" + escapeForMessage(path) +
                   "': " + std::strerror(errno);
    return result;
  }
  text.resize(static_cast<size_t>(file.gcount()));
  if (static_cast<std::streamsize>(text.size()) > kMaxBytes) {
    result.error =
        "spec file '" + escapeForMessage(path) + "' is larger than 1 MiB";
    return result;
  }
  std::istringstream bufferIn(text);
  std::ostringstream buffer;
  buffer << bufferIn.rdbuf();

  int numKeys = 0;
  result = parseSpecImpl(buffer.str(), path, numKeys);
  // An empty file is almost always a mistake (wrong path, truncated write);
  // silently compiling the default spec would hide it.
  if (result && numKeys == 0) {
    result.spec.reset();
    result.error = escapeForMessage(path) + ": spec file has no keys";
  }
  return result;
}

//===----------------------------------------------------------------------===//
// Presets
//===----------------------------------------------------------------------===//

std::optional<AttentionSpec> blasst::lookupPreset(const std::string &name) {
  for (const AttentionSpec &p : presets())
    if (name == p.name)
      return p;
  return std::nullopt;
}

std::vector<std::string> blasst::presetNames() {
  std::vector<std::string> names;
  for (const AttentionSpec &p : presets())
    names.push_back(p.name);
  return names;
}

//===----------------------------------------------------------------------===//
// Target support
//===----------------------------------------------------------------------===//

std::string blasst::checkSupported(const AttentionSpec &spec, Target target) {
  std::string reason = spec.validate();
  if (!reason.empty())
    return reason;

  const char *targetName = blasst::toString(target);
  // Both dtypes use the same 16-bit MMA paths, so dtype never limits support.
  if (spec.headDim != spec.headDimV)
    return "head_dim " + std::to_string(spec.headDim) + " != head_dim_v " +
           std::to_string(spec.headDimV) +
           ": different Q/K and V head sizes are not supported";
  if (spec.headDim != 64 && spec.headDim != 128 && spec.headDim != 256)
    return "head_dim " + std::to_string(spec.headDim) +
           " is not supported on " + targetName + ": supported 64, 128, 256";
  if (target == Target::SM100a && spec.headDim == 256)
    return std::string("head_dim 256 is not supported on ") + targetName +
           ": tensor memory holds at most 512 columns: S/P (2x128) + O "
           "(2x256) exceed it";
  if (spec.phase != Phase::Decode && (spec.kvPerSequence || spec.paged()))
    return std::string(spec.kvPerSequence ? "kv_lengths = per_sequence"
                                          : "a paged kv_cache") +
           " is not supported with phase = prefill: the prefill kernels take "
           "one contiguous KV of the launch's seq_kv (use phase = decode)";
  if (spec.phase == Phase::Decode) {
    // The decode schedule (q heads of a KV head packed into one 64-row
    // tile, split KV) exists for sm_90a at head_dim 64, 128 and 256 (the
    // head dims sm_90a supports, checked above).
    if (target != Target::SM90a)
      return std::string("phase = decode is not implemented on ") +
             targetName + " yet (the decode schedule is sm_90a's)";
    // Any ratio G up to 64: a tile holds floor(64 / G) tokens of the G q
    // heads; when G does not divide 64 the last 64 mod G rows are padding.
    int g = spec.gqaRatio();
    if (g > 64)
      return "q_heads / kv_heads = " + std::to_string(g) +
             " is not supported with phase = decode: the q heads of a kv "
             "head are packed into one 64-row tile, so at most 64 of them";
  }
  return "";
}
