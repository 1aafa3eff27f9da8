//===- CAPIInternal.h - What the two C API libraries share -----*- C++ -*-===//
//
// The per-thread last error lives in libblasst.so; libblasst_jit.so sets it
// through blasst__set_error, the one exported symbol that is not in
// blasst.h (so there is one blasst_last_error for both libraries).
//
//===----------------------------------------------------------------------===//
#ifndef BLASST_LIB_CAPI_CAPIINTERNAL_H
#define BLASST_LIB_CAPI_CAPIINTERNAL_H

#include "blasst/blasst.h"

#include <cstdlib>
#include <cstring>
#include <string>

extern "C" BLASST_API blasst_status blasst__set_error(blasst_status status,
                                                      const char *message);

namespace blasst::capi {

/// Sets this thread's last error and returns `status`.
inline blasst_status fail(blasst_status status, const std::string &message) {
  return blasst__set_error(status, message.c_str());
}
/// Clears this thread's last error and returns BLASST_OK.
inline blasst_status ok() { return blasst__set_error(BLASST_OK, ""); }

/// A malloc'ed copy of `s` (the API's `char **` results, freed by
/// blasst_free), or nullptr when out of memory.
inline char *copyString(const std::string &s) {
  char *p = static_cast<char *>(std::malloc(s.size() + 1));
  if (p)
    std::memcpy(p, s.c_str(), s.size() + 1);
  return p;
}

} // namespace blasst::capi

#endif // BLASST_LIB_CAPI_CAPIINTERNAL_H
