//===- main.cpp - The blasst JIT API in one page --------------------------===//
//
// blasst-jit-example [preset]   (default mha-hd64-prefill)
// Compiles the preset for sm_90a in-process (cached), and runs it on GPU 0
// when there is one. Without a GPU it says why and exits 0.
//
//===----------------------------------------------------------------------===//
#include "blasst/JIT/JIT.h"

#include "llvm/Support/raw_ostream.h"

using namespace blasst;

int main(int argc, char **argv) {
  std::optional<AttentionSpec> spec =
      lookupPreset(argc > 1 ? argv[1] : "mha-hd64-prefill");
  if (!spec)
    return llvm::errs() << "unknown preset\n", 1;
  if (std::string why = jit::supports(*spec, Target::SM90a); !why.empty())
    return llvm::errs() << "unsupported: " << why << "\n", 1;

  jit::CompileOptions opts;
  opts.verbose = true; // progress and timings on stderr
  llvm::Expected<jit::CompiledKernel> ck =
      jit::compile(*spec, Target::SM90a, opts);
  if (!ck)
    return llvm::errs() << llvm::toString(ck.takeError()) << "\n", 1;
  llvm::outs() << "key " << ck->cacheKey << (ck->fromCache ? " (hit)" : "")
               << "\n"
               << ck->timings.toString() << "\n";
  jit::Kernel kernel(std::move(*ck));

  std::string why;
  if (!rt::deviceAvailable(&why))
    return llvm::outs() << "not running: " << why << "\n", 0;
  rt::Context ctx;
  rt::Status s = rt::Context::create(0, &ctx);
  rt::AttentionArgs a; // [B, S, H, D], densely packed
  a.batch = 1, a.seqQ = a.seqKV = 256, a.headDim = spec->headDim;
  a.numQHeads = spec->numQHeads, a.numKVHeads = spec->numKVHeads;
  a.setContiguousStrides();
  int64_t qBytes = 2 * a.seqQ * a.numQHeads * a.headDim;
  int64_t kvBytes = 2 * a.seqKV * a.numKVHeads * a.headDim;
  int64_t rows = a.batch * a.numQHeads; // LSE: float per row, stats: 2 int64
  int64_t lseBytes = spec->lse ? 4 * rows * a.seqQ : 0;
  int64_t statsBytes = spec->stats ? 16 * rows : 0;
  const int64_t bytes[6] = {qBytes, kvBytes,  kvBytes,
                            qBytes, lseBytes, statsBytes};
  const char *labels[6] = {"Q", "K", "V", "O", "LSE", "stats"};
  rt::DeviceBuffer bufs[6];
  uint64_t *ptrs[6] = {&a.q, &a.k, &a.v, &a.o, &a.lse, &a.stats};
  for (int i = 0; i < 6 && s; ++i)
    if (bytes[i] &&
        (s = rt::DeviceBuffer::allocate(ctx, bytes[i], labels[i], &bufs[i])))
      if ((s = bufs[i].fill(0x3c))) // bf16 0x3c3c ~ 0.0115
        *ptrs[i] = bufs[i].address();
  if (s && (s = kernel.load(ctx)) && (s = kernel.run(a, /*stream=*/nullptr)))
    s = ctx.synchronize();
  llvm::outs() << (s ? "ran on " + ctx.info().describe() : s.message()) << "\n";
  return s ? 0 : 1;
}
