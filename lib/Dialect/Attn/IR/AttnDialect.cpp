//===- AttnDialect.cpp - The attn dialect ---------------------------------===//
//
// The spec attribute's syntax is keyed and forgiving (every key optional, a
// preset to start from) because people write it by hand in tests and specs;
// its printed form is canonical: every key, in a fixed order.
//
//===----------------------------------------------------------------------===//
#include "blasst/Dialect/Attn/IR/Attn.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace blasst;
using namespace blasst::attn;

#include "blasst/Dialect/Attn/IR/AttnDialect.cpp.inc"

void AttnDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "blasst/Dialect/Attn/IR/AttnAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "blasst/Dialect/Attn/IR/AttnOps.cpp.inc"
      >();
}

Type blasst::attn::getElementType(MLIRContext *ctx, DType dtype) {
  switch (dtype) {
  case DType::BF16:
    return BFloat16Type::get(ctx);
  case DType::F16:
    return Float16Type::get(ctx);
  }
  llvm_unreachable("unknown dtype");
}

//===----------------------------------------------------------------------===//
// SpecAttr
//===----------------------------------------------------------------------===//

AttentionSpec SpecAttr::toSpec() const {
  AttentionSpec s;
  s.dtype = isa<BFloat16Type>(getDtype()) ? DType::BF16 : DType::F16;
  s.headDim = getHeadDim();
  s.headDimV = getHeadDimV();
  s.numQHeads = getQHeads();
  s.numKVHeads = getKvHeads();
  s.causal = getCausal();
  s.phase = getPhase();
  if (getSoftmaxScale())
    s.softmaxScale = getSoftmaxScale().getValueAsDouble();
  s.sparsity.kind = getSparsity();
  if (getSparsityValue())
    s.sparsity.value = getSparsityValue().getValueAsDouble();
  if (getLambdaMax())
    s.sparsity.lambdaMax = getLambdaMax().getValueAsDouble();
  s.lse = getLse();
  s.stats = getStats();
  s.kvPerSequence = getKvPerSequence();
  s.kvPageSize = int(getKvPageSize());
  return s;
}

SpecAttr SpecAttr::fromSpec(MLIRContext *ctx, const AttentionSpec &s) {
  Builder b(ctx);
  FloatAttr scale =
      s.softmaxScale ? b.getF64FloatAttr(*s.softmaxScale) : FloatAttr();
  FloatAttr sparsityValue =
      s.sparsity.isDense() ? FloatAttr() : b.getF64FloatAttr(s.sparsity.value);
  FloatAttr lambdaMax = s.sparsity.lambdaMax == 1.0
                            ? FloatAttr()
                            : b.getF64FloatAttr(s.sparsity.lambdaMax);
  return SpecAttr::get(ctx, getElementType(ctx, s.dtype), s.headDim, s.headDimV,
                       s.numQHeads, s.numKVHeads, s.causal, s.phase, scale,
                       s.sparsity.kind, sparsityValue, lambdaMax, s.lse,
                       s.stats, s.kvPerSequence, s.kvPageSize);
}

LogicalResult SpecAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               Type dtype, int64_t headDim, int64_t headDimV,
                               int64_t qHeads, int64_t kvHeads, bool causal,
                               Phase phase, FloatAttr softmaxScale,
                               SparsityKind sparsity, FloatAttr sparsityValue,
                               FloatAttr lambdaMax, bool lse, bool stats,
                               bool kvPerSequence, int64_t kvPageSize) {
  if (!isa<BFloat16Type, Float16Type>(dtype))
    return emitError() << "attention dtype must be bf16 or f16, got " << dtype;
  auto fits = [](int64_t v) { return v > 0 && v <= (1 << 20); };
  if (!fits(headDim) || !fits(headDimV) || !fits(qHeads) || !fits(kvHeads))
    return emitError() << "head dims and head counts must be positive";
  if ((sparsity == SparsityKind::None) != !sparsityValue)
    return emitError() << "a sparsity value is given exactly when the policy "
                          "is not 'none'";
  AttentionSpec s;
  s.dtype = isa<BFloat16Type>(dtype) ? DType::BF16 : DType::F16;
  s.headDim = headDim;
  s.headDimV = headDimV;
  s.numQHeads = qHeads;
  s.numKVHeads = kvHeads;
  s.causal = causal;
  s.phase = phase;
  if (softmaxScale)
    s.softmaxScale = softmaxScale.getValueAsDouble();
  s.sparsity.kind = sparsity;
  if (sparsityValue)
    s.sparsity.value = sparsityValue.getValueAsDouble();
  if (lambdaMax)
    s.sparsity.lambdaMax = lambdaMax.getValueAsDouble();
  s.lse = lse;
  s.stats = stats;
  if (kvPageSize < 0 || kvPageSize > (1 << 20))
    return emitError() << "kv_cache page size must be positive, got "
                       << kvPageSize;
  s.kvPerSequence = kvPerSequence;
  s.kvPageSize = int(kvPageSize);
  std::string reason = s.validate();
  if (!reason.empty())
    return emitError() << "invalid attention spec: " << reason;
  return success();
}

namespace {
/// Parses `key = value` pairs of #attn.spec into an AttentionSpec.
struct SpecParser {
  AsmParser &p;
  AttentionSpec spec;
  llvm::StringSet<> seen;
  bool headDimVGiven = false;

  ParseResult parseInt(StringRef key, int &out) {
    int64_t v;
    SMLoc loc = p.getCurrentLocation();
    if (p.parseInteger(v))
      return failure();
    if (v <= 0 || v > (1 << 20))
      return p.emitError(loc) << "'" << key << "' must be positive, got " << v;
    out = static_cast<int>(v);
    return success();
  }
  ParseResult parseBool(StringRef key, bool &out) {
    SMLoc loc = p.getCurrentLocation();
    StringRef kw;
    if (p.parseKeyword(&kw))
      return failure();
    if (kw != "true" && kw != "false")
      return p.emitError(loc) << "'" << key << "' must be true or false";
    out = kw == "true";
    return success();
  }
  ParseResult parseFloat(double &out) {
    SMLoc loc = p.getCurrentLocation();
    if (p.parseFloat(out))
      return p.emitError(loc) << "expected a number";
    return success();
  }

  ParseResult parseValue(StringRef key, SMLoc keyLoc) {
    if (key == "preset") {
      std::string name;
      SMLoc loc = p.getCurrentLocation();
      if (p.parseString(&name))
        return failure();
      if (seen.size() != 1)
        return p.emitError(keyLoc) << "'preset' must be the first key";
      std::optional<AttentionSpec> preset = lookupPreset(name);
      if (!preset) {
        std::string known;
        for (const std::string &n : presetNames())
          known += (known.empty() ? "" : ", ") + n;
        return p.emitError(loc)
               << "unknown preset '" << name << "' (known: " << known << ")";
      }
      spec = *preset;
      headDimVGiven = true;
      return success();
    }
    if (key == "dtype") {
      Type t;
      SMLoc loc = p.getCurrentLocation();
      if (p.parseType(t))
        return failure();
      if (isa<BFloat16Type>(t))
        spec.dtype = DType::BF16;
      else if (isa<Float16Type>(t))
        spec.dtype = DType::F16;
      else
        return p.emitError(loc) << "dtype must be bf16 or f16, got " << t;
      return success();
    }
    if (key == "head_dim")
      return parseInt(key, spec.headDim);
    if (key == "head_dim_v") {
      headDimVGiven = true;
      return parseInt(key, spec.headDimV);
    }
    if (key == "q_heads")
      return parseInt(key, spec.numQHeads);
    if (key == "kv_heads")
      return parseInt(key, spec.numKVHeads);
    if (key == "causal")
      return parseBool(key, spec.causal);
    if (key == "lse")
      return parseBool(key, spec.lse);
    if (key == "stats")
      return parseBool(key, spec.stats);
    if (key == "phase") {
      SMLoc loc = p.getCurrentLocation();
      StringRef kw;
      if (p.parseKeyword(&kw))
        return failure();
      std::optional<Phase> ph = parsePhase(kw.str());
      if (!ph)
        return p.emitError(loc) << "phase must be prefill or decode";
      spec.phase = *ph;
      return success();
    }
    if (key == "kv_lengths") {
      SMLoc loc = p.getCurrentLocation();
      StringRef kw;
      if (p.parseKeyword(&kw))
        return failure();
      if (kw != "uniform" && kw != "per_sequence")
        return p.emitError(loc) << "kv_lengths must be uniform or per_sequence";
      spec.kvPerSequence = kw == "per_sequence";
      return success();
    }
    if (key == "kv_cache") {
      SMLoc loc = p.getCurrentLocation();
      StringRef kw;
      if (p.parseKeyword(&kw))
        return failure();
      if (kw == "contiguous") {
        spec.kvPageSize = 0;
        return success();
      }
      if (kw != "paged")
        return p.emitError(loc)
               << "kv_cache must be contiguous or paged(page = <n>)";
      StringRef param;
      SMLoc paramLoc;
      if (p.parseLParen())
        return failure();
      paramLoc = p.getCurrentLocation();
      if (p.parseKeyword(&param) || param != "page")
        return p.emitError(paramLoc) << "paged takes 'page = <n>'";
      if (p.parseEqual() || parseInt(key, spec.kvPageSize))
        return failure();
      return p.parseRParen();
    }
    if (key == "softmax_scale") {
      if (succeeded(p.parseOptionalKeyword("default"))) {
        spec.softmaxScale.reset();
        return success();
      }
      double v;
      if (parseFloat(v))
        return failure();
      spec.softmaxScale = v;
      return success();
    }
    if (key == "sparsity") {
      if (succeeded(p.parseOptionalKeyword("none"))) {
        spec.sparsity = SparsityPolicy();
        return success();
      }
      SMLoc loc = p.getCurrentLocation();
      StringRef kind;
      if (p.parseKeyword(&kind) || kind != "blasst")
        return p.emitError(loc)
               << "sparsity must be none, blasst(a = <float>) or "
                  "blasst(ln_lambda = <float>)";
      StringRef param;
      SMLoc paramLoc;
      double v;
      if (p.parseLParen())
        return failure();
      paramLoc = p.getCurrentLocation();
      if (p.parseKeyword(&param) || p.parseEqual() || parseFloat(v))
        return failure();
      if (param == "a")
        spec.sparsity = {SparsityKind::ScaleFactor, v};
      else if (param == "ln_lambda")
        spec.sparsity = {SparsityKind::LnLambda, v};
      else
        return p.emitError(paramLoc)
               << "blasst takes 'a' or 'ln_lambda', got '" << param << "'";
      // An optional cap on the effective lambda.
      if (succeeded(p.parseOptionalComma())) {
        SMLoc capLoc = p.getCurrentLocation();
        if (p.parseKeyword(&param) || p.parseEqual() ||
            parseFloat(spec.sparsity.lambdaMax))
          return failure();
        if (param != "lambda_max")
          return p.emitError(capLoc) << "blasst takes 'lambda_max' after its "
                                        "threshold, got '"
                                     << param << "'";
      }
      return p.parseRParen();
    }
    return p.emitError(keyLoc)
           << "unknown spec key '" << key
           << "' (known: preset, dtype, head_dim, head_dim_v, q_heads, "
              "kv_heads, causal, phase, softmax_scale, sparsity, lse, stats, "
              "kv_lengths, kv_cache)";
  }
};
} // namespace

Attribute SpecAttr::parse(AsmParser &p, Type) {
  SMLoc start = p.getCurrentLocation();
  SpecParser sp{p, AttentionSpec(), {}, false};
  if (p.parseLess())
    return {};
  if (failed(p.parseOptionalGreater())) {
    auto parseOne = [&]() -> ParseResult {
      SMLoc keyLoc = p.getCurrentLocation();
      StringRef key;
      if (p.parseKeyword(&key))
        return failure();
      if (!sp.seen.insert(key).second)
        return p.emitError(keyLoc) << "duplicate spec key '" << key << "'";
      if (p.parseEqual())
        return failure();
      return sp.parseValue(key, keyLoc);
    };
    if (p.parseCommaSeparatedList(parseOne) || p.parseGreater())
      return {};
  }
  // head_dim_v follows head_dim unless given.
  if (!sp.headDimVGiven)
    sp.spec.headDimV = sp.spec.headDim;
  std::string reason = sp.spec.validate();
  if (!reason.empty()) {
    p.emitError(start) << "invalid attention spec: " << reason;
    return {};
  }
  return fromSpec(p.getContext(), sp.spec);
}

void SpecAttr::print(AsmPrinter &p) const {
  AttentionSpec s = toSpec();
  p << "<dtype = " << getDtype() << ", head_dim = " << s.headDim
    << ", head_dim_v = " << s.headDimV << ", q_heads = " << s.numQHeads
    << ", kv_heads = " << s.numKVHeads
    << ", causal = " << (s.causal ? "true" : "false")
    << ", phase = " << toString(s.phase) << ", softmax_scale = ";
  if (getSoftmaxScale())
    p.printFloat(getSoftmaxScale().getValue());
  else
    p << "default";
  p << ", sparsity = ";
  auto printCap = [&] {
    if (getLambdaMax()) {
      p << ", lambda_max = ";
      p.printFloat(getLambdaMax().getValue());
    }
  };
  switch (s.sparsity.kind) {
  case SparsityKind::None:
    p << "none";
    break;
  case SparsityKind::ScaleFactor:
    p << "blasst(a = ";
    p.printFloat(getSparsityValue().getValue());
    printCap();
    p << ")";
    break;
  case SparsityKind::LnLambda:
    p << "blasst(ln_lambda = ";
    p.printFloat(getSparsityValue().getValue());
    printCap();
    p << ")";
    break;
  }
  p << ", lse = " << (s.lse ? "true" : "false")
    << ", stats = " << (s.stats ? "true" : "false");
  if (s.kvPerSequence)
    p << ", kv_lengths = per_sequence";
  if (s.kvPageSize)
    p << ", kv_cache = paged(page = " << s.kvPageSize << ")";
  p << ">";
}

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

/// Checks `type` against an expected shape where -1 means "any size". Dynamic
/// dims are accepted anywhere; the runtime checks them before launch.
static LogicalResult checkShape(Operation *op, StringRef name, Type type,
                                Type elementType, ArrayRef<int64_t> expected,
                                ArrayRef<StringRef> dimNames) {
  auto memref = cast<MemRefType>(type);
  if (memref.getRank() != static_cast<int64_t>(expected.size()))
    return op->emitOpError()
           << name << " must have rank " << expected.size() << " ["
           << llvm::join(dimNames, ", ") << "], got " << type;
  if (memref.getElementType() != elementType)
    return op->emitOpError()
           << name << " element type must be " << elementType
           << " (from the spec), got " << memref.getElementType();
  for (auto [i, want] : llvm::enumerate(expected)) {
    int64_t got = memref.getDimSize(i);
    if (want < 0 || ShapedType::isDynamic(got) || got == want)
      continue;
    return op->emitOpError() << name << " dim " << i << " (" << dimNames[i]
                             << ") is " << got << " but the spec says " << want;
  }
  return success();
}

/// Static sizes of two dims must agree when both are known.
static LogicalResult checkSameDim(Operation *op, Value a, StringRef aName,
                                  Value b, StringRef bName, unsigned dimA,
                                  unsigned dimB, StringRef what) {
  int64_t x = cast<MemRefType>(a.getType()).getDimSize(dimA);
  int64_t y = cast<MemRefType>(b.getType()).getDimSize(dimB);
  if (ShapedType::isDynamic(x) || ShapedType::isDynamic(y) || x == y)
    return success();
  return op->emitOpError() << what << " of " << aName << " (" << x << ") and "
                           << bName << " (" << y << ") differ";
}

LogicalResult AttentionOp::verify() {
  AttentionSpec s = getSpec().toSpec();
  Type et = getSpec().getDtype();
  Operation *op = getOperation();
  StringRef bshd[] = {"batch", "seq", "heads", "dim"};
  // A paged cache: K and V are the page pool [num_pages, page, heads, dim]
  // (the block table and the per-sequence lengths are launch arguments).
  StringRef pages[] = {"num_pages", "page", "heads", "dim"};
  ArrayRef<StringRef> kvDims = s.paged() ? ArrayRef<StringRef>(pages) : bshd;
  int64_t kvSeq = s.paged() ? s.kvPageSize : -1;
  if (failed(checkShape(op, "Q", getQ().getType(), et,
                        {-1, -1, s.numQHeads, s.headDim}, bshd)) ||
      failed(checkShape(op, "K", getK().getType(), et,
                        {-1, kvSeq, s.numKVHeads, s.headDim}, kvDims)) ||
      failed(checkShape(op, "V", getV().getType(), et,
                        {-1, kvSeq, s.numKVHeads, s.headDimV}, kvDims)) ||
      failed(checkShape(op, "O", getO().getType(), et,
                        {-1, -1, s.numQHeads, s.headDimV}, bshd)))
    return failure();
  if ((!s.paged() &&
       (failed(checkSameDim(op, getQ(), "Q", getK(), "K", 0, 0, "batch")) ||
        failed(checkSameDim(op, getQ(), "Q", getV(), "V", 0, 0, "batch")))) ||
      (s.paged() && failed(checkSameDim(op, getK(), "K", getV(), "V", 0, 0,
                                        "num_pages"))) ||
      failed(checkSameDim(op, getQ(), "Q", getO(), "O", 0, 0, "batch")) ||
      failed(checkSameDim(op, getQ(), "Q", getO(), "O", 1, 1, "seq")) ||
      failed(checkSameDim(op, getK(), "K", getV(), "V", 1, 1, "seq")))
    return failure();

  Builder b(getContext());
  if (s.lse != static_cast<bool>(getLse()))
    return emitOpError() << (s.lse ? "the spec asks for lse but no lse "
                                     "operand is given"
                                   : "an lse operand is given but the spec "
                                     "has lse = false");
  if (getLse()) {
    StringRef bhs[] = {"batch", "heads", "seq"};
    if (failed(checkShape(op, "lse", getLse().getType(), b.getF32Type(),
                          {-1, s.numQHeads, -1}, bhs)) ||
        failed(checkSameDim(op, getQ(), "Q", getLse(), "lse", 1, 2, "seq")))
      return failure();
  }
  if (s.stats != static_cast<bool>(getStats()))
    return emitOpError() << (s.stats ? "the spec asks for stats but no stats "
                                       "operand is given"
                                     : "a stats operand is given but the spec "
                                       "has stats = false");
  if (getStats()) {
    StringRef bh2[] = {"batch", "heads", "visited/skipped"};
    if (failed(checkShape(op, "stats", getStats().getType(),
                          b.getIntegerType(64), {-1, s.numQHeads, 2}, bh2)))
      return failure();
  }
  return success();
}

#define GET_ATTRDEF_CLASSES
#include "blasst/Dialect/Attn/IR/AttnAttrs.cpp.inc"

#define GET_OP_CLASSES
#include "blasst/Dialect/Attn/IR/AttnOps.cpp.inc"
