// Uses blasst::runtime only: the spec, the kernel ABI and the driver check,
// with no LLVM header on the include path.
#include "blasst/Runtime/AttentionKernel.h"
#include "blasst/Spec/AttentionSpec.h"

#include <cstdio>

int main() {
  std::optional<blasst::AttentionSpec> spec =
      blasst::lookupPreset("llama3-8b-prefill");
  if (!spec)
    return 1;
  std::string why;
  bool gpu = blasst::rt::deviceAvailable(&why);
  std::printf("runtime-only: %s, head_dim %d; GPU: %s\n", spec->name.c_str(),
              spec->headDim, gpu ? "yes" : why.c_str());
  return 0;
}
