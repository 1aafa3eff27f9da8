//===- KernelPackage.h - Ahead-of-time kernel packages ----------*- C++ -*-===//
//
// A kernel package is a directory of compiled kernels for machines without
// the compiler: `<stem>.cubin`, `<stem>.meta` and `<stem>.spec` per kernel
// (what blasst-compile -o STEM writes) and a `manifest.txt` that finds a
// kernel from its spec and target alone:
//
//   # blasst kernel package
//   format = 1
//   abi_version = 5
//   compiler_version = blasst 0.1.0
//   kernel = k0 target=sm_90a dtype=bf16 head_dim=128 ... stats=false
//
// Each `kernel` line is a stem and the kernel's key (kernelKey): the spec
// fields that determine the cubin, without the run-time values (the
// softmax scale and the sparsity value are launch arguments). The runtime
// refuses a package of another kernel ABI version before reading further.
// `python -m blasst.aot build` writes packages (python/blasst/aot.py).
//
// Plain C++17, no LLVM/MLIR, like the rest of the runtime.
//
//===----------------------------------------------------------------------===//
#ifndef BLASST_RUNTIME_KERNELPACKAGE_H
#define BLASST_RUNTIME_KERNELPACKAGE_H

#include "blasst/Runtime/AttentionKernel.h"

#include <string>
#include <vector>

namespace blasst::rt {

/// The manifest format this runtime reads and writes.
inline constexpr int kPackageFormat = 1;
/// The manifest's file name inside a package directory.
inline constexpr const char *kPackageManifest = "manifest.txt";

/// The key of `spec`'s kernel for `target`, on one line:
/// `target=sm_90a dtype=bf16 head_dim=128 head_dim_v=128 q_heads=32
/// kv_heads=8 causal=true phase=prefill sparsity=blasst:a lambda_max=1
/// lse=false stats=true`. Two specs with the same key have the same cubin.
std::string kernelKey(const AttentionSpec &spec, Target target);

struct PackageEntry {
  std::string stem; ///< File stem inside the package directory.
  std::string key;  ///< kernelKey of its spec and target.
  int line = 0;     ///< Manifest line, for messages.
};

struct KernelPackage {
  std::string dir;
  int format = kPackageFormat;
  int abiVersion = kKernelABIVersion;
  std::string compilerVersion;
  std::vector<PackageEntry> entries;

  /// The entry with `key`, or nullptr.
  const PackageEntry *find(const std::string &key) const;
};

/// What went wrong reading a package (for the C API's status codes).
enum class PackageError { None, NotFound, BadFile, AbiMismatch };

/// Parses manifest text. `sourceName` prefixes messages (`dir/manifest.txt:3:
/// ...`). The abi_version and format are checked before anything else.
Status parseManifest(const std::string &text, const std::string &sourceName,
                     KernelPackage *out, PackageError *error = nullptr);
/// Reads `<dir>/manifest.txt`.
Status readKernelPackage(const std::string &dir, KernelPackage *out,
                         PackageError *error = nullptr);
/// The manifest text of `package` (parseManifest gives it back).
std::string formatManifest(const KernelPackage &package);

/// The entry of `package` for `spec` and `target`, its metadata and
/// cubin read and checked (checkCubinImage), and its `.spec` checked to
/// have the same key. NotFound when there is no such entry (the message
/// names the key and how to build it).
Status readPackageKernel(const KernelPackage &package,
                         const AttentionSpec &spec, Target target,
                         KernelInfo *info, std::string *cubin,
                         PackageError *error = nullptr);

} // namespace blasst::rt

#endif // BLASST_RUNTIME_KERNELPACKAGE_H
