//===- Sha256.h - SHA-256 for the runtime (no LLVM) -------------*- C++ -*-===//
//
// Internal to the runtime: the content hash of a kernel's files (.cubin,
// .spec, .meta) is checked where no LLVM is linked (blasst-bench, the
// runtime's loadFiles), so the runtime carries its own FIPS 180-4 SHA-256.
//
//===----------------------------------------------------------------------===//
#ifndef BLASST_RUNTIME_LIB_SHA256_H
#define BLASST_RUNTIME_LIB_SHA256_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace blasst::rt::detail {

class Sha256 {
public:
  Sha256();
  void update(const void *data, size_t size);
  void update(const std::string &s) { update(s.data(), s.size()); }
  /// The digest as 64 lowercase hex digits. Ends the computation.
  std::string finalHex();

private:
  void block(const uint8_t *p);
  uint32_t h[8];
  uint8_t buffer[64];
  size_t buffered = 0;
  uint64_t totalBytes = 0;
};

} // namespace blasst::rt::detail

#endif // BLASST_RUNTIME_LIB_SHA256_H
