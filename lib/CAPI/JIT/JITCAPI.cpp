//===- JITCAPI.cpp - blasst.h over the JIT (libblasst_jit.so) -------------===//
//
// The C API's JIT part: compile a spec to a cubin (jit::compile, with its
// cache) and hand out the cubin, metadata and spec text that
// blasst_kernel_load_data (libblasst.so) loads. Errors go to libblasst.so's
// per-thread last error.
//
//===----------------------------------------------------------------------===//
#include "../CAPIInternal.h"

#include "blasst/JIT/JIT.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <new>
#include <thread>
#include <unistd.h>

using namespace blasst;
using namespace blasst::capi;

struct blasst_compiled {
  jit::CompiledKernel ck;
  std::string meta;
  std::string spec;
};

namespace {

bool writeFile(const std::string &path, const std::string &data,
               std::string *why) {
  // A unique temporary name (process, thread and call: two threads may
  // write one stem), then rename: a reader never sees half a file.
  static std::atomic<unsigned> calls{0};
  std::string tmp =
      path + ".tmp" + std::to_string(::getpid()) + "." +
      std::to_string(std::hash<std::thread::id>()(std::this_thread::get_id())) +
      "." + std::to_string(calls++);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {
      *why = "cannot create '" + tmp + "': " + std::strerror(errno);
      return false;
    }
    out.write(data.data(), std::streamsize(data.size()));
    out.close();
    if (!out) {
      *why = "cannot write '" + tmp + "'";
      std::remove(tmp.c_str());
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    *why = "cannot rename '" + tmp + "' to '" + path +
           "': " + std::strerror(errno);
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

} // namespace

blasst_status blasst_jit_compile(const char *spec, const char *target,
                                 const char *cacheDir, blasst_compiled **out) {
  if (!spec || !target || !out)
    return fail(BLASST_ERROR_INVALID_ARGUMENT,
                "spec, target and out must not be null");
  SpecOrError parsed = parseSpec(spec, "<spec>");
  if (!parsed)
    return fail(BLASST_ERROR_INVALID_ARGUMENT, "bad spec: " + parsed.error);
  std::optional<Target> t = parseTarget(target);
  if (!t)
    return fail(BLASST_ERROR_INVALID_ARGUMENT,
                std::string("unknown target '") + target + "' (expected " +
                    targetChoices() + ")");
  if (std::string why = jit::supports(*parsed.spec, *t); !why.empty())
    return fail(BLASST_ERROR_UNSUPPORTED,
                std::string("cannot compile the spec for ") + target + ": " +
                    why);
  jit::CompileOptions opts;
  if (cacheDir)
    opts.cacheDir = cacheDir;
  llvm::Expected<jit::CompiledKernel> ck = jit::compile(*parsed.spec, *t, opts);
  if (!ck)
    return fail(BLASST_ERROR_COMPILE, llvm::toString(ck.takeError()));
  auto *c = new (std::nothrow) blasst_compiled;
  if (!c)
    return fail(BLASST_ERROR_INTERNAL, "out of memory");
  c->ck = std::move(*ck);
  c->meta = rt::formatKernelInfo(c->ck.info);
  c->spec = c->ck.spec.toString();
  *out = c;
  return ok();
}

void blasst_compiled_destroy(blasst_compiled *compiled) { delete compiled; }

const void *blasst_compiled_cubin(const blasst_compiled *c, size_t *size) {
  if (size)
    *size = c ? c->ck.cubin.size() : 0;
  return c ? c->ck.cubin.data() : nullptr;
}

const char *blasst_compiled_meta(const blasst_compiled *c) {
  return c ? c->meta.c_str() : "";
}

const char *blasst_compiled_spec(const blasst_compiled *c) {
  return c ? c->spec.c_str() : "";
}

int blasst_compiled_from_cache(const blasst_compiled *c) {
  return c && c->ck.fromCache ? 1 : 0;
}

const char *blasst_compiled_notes(const blasst_compiled *c) {
  return c ? c->ck.notes.c_str() : "";
}

blasst_status blasst_compiled_write(const blasst_compiled *c,
                                    const char *stem) {
  if (!c || !stem)
    return fail(BLASST_ERROR_INVALID_ARGUMENT,
                "compiled and stem must not be null");
  std::string s = stem, why;
  // The .meta records the content hash of the three files, as the JIT
  // cache's and blasst-compile's do: loading checks they belong together.
  rt::KernelInfo info = c->ck.info;
  info.contentSha256 = rt::kernelContentHash(c->ck.cubin.data(),
                                             c->ck.cubin.size(), c->spec, info);
  // The metadata last, as the JIT cache does: it marks a complete kernel.
  if (!writeFile(s + ".cubin",
                 std::string(c->ck.cubin.data(), c->ck.cubin.size()), &why) ||
      !writeFile(s + ".spec", c->spec, &why) ||
      !writeFile(s + ".meta", rt::formatKernelInfo(info), &why))
    return fail(BLASST_ERROR_BAD_FILE, "cannot write kernel '" + s + "': " + why);
  return ok();
}
