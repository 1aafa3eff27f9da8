// Calls the README's C++ block (readme-snippet.cpp) where a GPU is usable;
// elsewhere it is only compiled and linked.
#include "blasst/JIT/JIT.h"

#include <cstdio>

llvm::Expected<blasst::jit::Kernel>
loadAttention(const blasst::rt::Context &ctx);

int main() {
  std::string why;
  if (!blasst::rt::deviceAvailable(&why))
    return std::printf("readme-snippet: built; not run: %s\n", why.c_str()), 0;
  blasst::rt::Context ctx;
  if (blasst::rt::Status s = blasst::rt::Context::create(0, &ctx); !s)
    return std::printf("%s\n", s.message().c_str()), 1;
  llvm::Expected<blasst::jit::Kernel> kernel = loadAttention(ctx);
  if (!kernel)
    return std::printf("%s\n", llvm::toString(kernel.takeError()).c_str()), 1;
  std::printf("readme-snippet: loaded on %s\n", ctx.info().describe().c_str());
  return 0;
}
