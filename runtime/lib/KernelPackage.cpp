//===- KernelPackage.cpp - Ahead-of-time kernel packages ------------------===//
//
// The manifest of a kernel package and the lookup of a kernel by spec and
// target. See KernelPackage.h.
//
//===----------------------------------------------------------------------===//
#include "blasst/Runtime/KernelPackage.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

using namespace blasst;
using namespace blasst::rt;

namespace {

std::string trim(const std::string &s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos)
    return "";
  size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

bool parseInt(const std::string &s, int *out) {
  if (s.empty() || s.size() > 9)
    return false;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9')
      return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

Status failWith(PackageError *error, PackageError kind, std::string message) {
  if (error)
    *error = kind;
  return Status::error(std::move(message));
}

bool isDirectory(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

/// Reads a whole file; NotFound when it does not exist.
Status readFile(const std::string &path, const char *what, std::string *out,
                PackageError *error) {
  int openErrno = 0;
  if (Status s = readWholeFile(path, what, out, &openErrno); !s)
    return failWith(error,
                    openErrno == ENOENT ? PackageError::NotFound
                                        : PackageError::BadFile,
                    s.message());
  return Status::success();
}

/// A stem is a plain file name: no directory, no blanks.
bool validStem(const std::string &stem) {
  if (stem.empty() || stem == "." || stem == "..")
    return false;
  for (char c : stem)
    if (c == '/' || c == '\\' || c == ' ' || c == '\t')
      return false;
  return true;
}

} // namespace

std::string blasst::rt::kernelKey(const AttentionSpec &spec, Target target) {
  std::string key = std::string("target=") + blasst::toString(target);
  key += std::string(" dtype=") + blasst::toString(spec.dtype);
  key += " head_dim=" + std::to_string(spec.headDim);
  key += " head_dim_v=" + std::to_string(spec.headDimV);
  key += " q_heads=" + std::to_string(spec.numQHeads);
  key += " kv_heads=" + std::to_string(spec.numKVHeads);
  key += std::string(" causal=") + (spec.causal ? "true" : "false");
  key += std::string(" phase=") + blasst::toString(spec.phase);
  switch (spec.sparsity.kind) {
  case SparsityKind::None:
    key += " sparsity=none";
    break;
  case SparsityKind::ScaleFactor:
    key += " sparsity=blasst:a";
    break;
  case SparsityKind::LnLambda:
    key += " sparsity=blasst:ln_lambda";
    break;
  }
  if (!spec.sparsity.isDense()) {
    // lambda_max is a constant in the kernel (the cap); %.17g is exact.
    char buf[40];
    std::snprintf(buf, sizeof(buf), "%.17g", spec.sparsity.lambdaMax);
    key += std::string(" lambda_max=") + buf;
  }
  key += std::string(" lse=") + (spec.lse ? "true" : "false");
  key += std::string(" stats=") + (spec.stats ? "true" : "false");
  // The decode KV caches, only when not the defaults (other keys, and the
  // packages written with them, read as before).
  if (spec.kvPerSequence)
    key += " kv_lengths=per_sequence";
  if (spec.kvPageSize)
    key += " kv_cache=" + kvCacheToString(spec.kvPageSize);
  return key;
}

const PackageEntry *KernelPackage::find(const std::string &key) const {
  for (const PackageEntry &e : entries)
    if (e.key == key)
      return &e;
  return nullptr;
}

Status blasst::rt::parseManifest(const std::string &text,
                                 const std::string &sourceName,
                                 KernelPackage *out, PackageError *error) {
  if (error)
    *error = PackageError::None;
  if (!out)
    return failWith(error, PackageError::BadFile,
                    "parseManifest: the output pointer is null");
  struct Line {
    std::string key, value;
    int no;
  };
  std::vector<Line> lines;
  auto at = [&](int no) { return sourceName + ":" + std::to_string(no) + ": "; };
  std::istringstream in(text);
  std::string raw;
  for (int no = 1; std::getline(in, raw); ++no) {
    std::string line = trim(raw);
    if (line.empty() || line[0] == '#')
      continue;
    size_t eq = line.find('=');
    if (eq == std::string::npos)
      return failWith(error, PackageError::BadFile,
                      at(no) + "expected 'key = value', got '" + line + "'");
    lines.push_back({trim(line.substr(0, eq)), trim(line.substr(eq + 1)), no});
  }

  // The ABI version and the format first: a package of another ABI may
  // have other keys, and its kernels other parameters.
  KernelPackage pkg;
  bool haveAbi = false, haveFormat = false;
  for (const Line &l : lines) {
    if (l.key == "abi_version") {
      if (!parseInt(l.value, &pkg.abiVersion))
        return failWith(error, PackageError::BadFile,
                        at(l.no) + "abi_version '" + l.value +
                            "' is not an integer");
      haveAbi = true;
    } else if (l.key == "format") {
      if (!parseInt(l.value, &pkg.format))
        return failWith(error, PackageError::BadFile,
                        at(l.no) + "format '" + l.value +
                            "' is not an integer");
      haveFormat = true;
    } else if (l.key == "compiler_version") {
      pkg.compilerVersion = l.value;
    }
  }
  if (!haveAbi)
    return failWith(error, PackageError::BadFile,
                    sourceName + ": missing 'abi_version': not a blasst "
                                 "kernel package manifest");
  if (pkg.abiVersion != kKernelABIVersion)
    return failWith(
        error, PackageError::AbiMismatch,
        sourceName + ": the package was built for kernel ABI version " +
            std::to_string(pkg.abiVersion) +
            (pkg.compilerVersion.empty() ? ""
                                         : " (" + pkg.compilerVersion + ")") +
            ", but this runtime implements version " +
            std::to_string(kKernelABIVersion) +
            ": rebuild the package with this blasst (python -m blasst.aot "
            "build)");
  if (!haveFormat)
    return failWith(error, PackageError::BadFile,
                    sourceName + ": missing 'format'");
  if (pkg.format != kPackageFormat)
    return failWith(error, PackageError::BadFile,
                    sourceName + ": package format " +
                        std::to_string(pkg.format) +
                        " is not the one this runtime reads (" +
                        std::to_string(kPackageFormat) + ")");

  for (const Line &l : lines) {
    if (l.key == "abi_version" || l.key == "format" ||
        l.key == "compiler_version")
      continue;
    if (l.key != "kernel")
      return failWith(error, PackageError::BadFile,
                      at(l.no) + "unknown key '" + l.key +
                          "' (known keys: format, abi_version, "
                          "compiler_version, kernel)");
    size_t space = l.value.find(' ');
    PackageEntry e;
    e.stem = l.value.substr(0, space);
    e.key = space == std::string::npos ? "" : trim(l.value.substr(space + 1));
    e.line = l.no;
    if (!validStem(e.stem))
      return failWith(error, PackageError::BadFile,
                      at(l.no) + "kernel stem '" + e.stem +
                          "' is not a plain file name");
    if (e.key.empty())
      return failWith(error, PackageError::BadFile,
                      at(l.no) + "kernel '" + e.stem + "' has no key");
    if (const PackageEntry *prev = pkg.find(e.key))
      return failWith(error, PackageError::BadFile,
                      at(l.no) + "kernel '" + e.stem + "' has the key of '" +
                          prev->stem + "' (line " + std::to_string(prev->line) +
                          ")");
    pkg.entries.push_back(std::move(e));
  }
  *out = std::move(pkg);
  return Status::success();
}

Status blasst::rt::readKernelPackage(const std::string &dir,
                                     KernelPackage *out, PackageError *error) {
  if (error)
    *error = PackageError::None;
  if (!isDirectory(dir))
    return failWith(error, PackageError::NotFound,
                    "no kernel package at '" + dir + "': not a directory");
  std::string path = dir + "/" + kPackageManifest;
  std::string text;
  if (Status s = readFile(path, "the package manifest", &text, error); !s) {
    if (error && *error == PackageError::NotFound)
      return Status::error("'" + dir + "' is not a blasst kernel package: " +
                           "it has no " + kPackageManifest);
    return s;
  }
  if (Status s = parseManifest(text, path, out, error); !s)
    return s;
  out->dir = dir;
  return Status::success();
}

std::string blasst::rt::formatManifest(const KernelPackage &package) {
  std::string out = "# blasst kernel package: kernels by spec and target "
                    "(KernelPackage.h)\n";
  out += "format = " + std::to_string(package.format) + "\n";
  out += "abi_version = " + std::to_string(package.abiVersion) + "\n";
  if (!package.compilerVersion.empty())
    out += "compiler_version = " + package.compilerVersion + "\n";
  for (const PackageEntry &e : package.entries)
    out += "kernel = " + e.stem + " " + e.key + "\n";
  return out;
}

Status blasst::rt::readPackageKernel(const KernelPackage &package,
                                     const AttentionSpec &spec, Target target,
                                     KernelInfo *info, std::string *cubin,
                                     PackageError *error) {
  if (error)
    *error = PackageError::None;
  std::string key = kernelKey(spec, target);
  const PackageEntry *entry = package.find(key);
  if (!entry) {
    AttentionSpec plain = spec;
    plain.name.clear();
    return failWith(
        error, PackageError::NotFound,
        "the kernel package '" + package.dir + "' has no kernel for " + key +
            " (it has " + std::to_string(package.entries.size()) +
            " kernels); add it with: python -m blasst.aot build --target " +
            blasst::toString(target) + " --spec '" + plain.toShortString() +
            "' -o " + package.dir);
  }
  std::string stem = package.dir + "/" + entry->stem;
  std::string metaText, specText;
  if (Status s = readFile(stem + ".meta", "kernel metadata", &metaText, error);
      !s)
    return failWith(error, PackageError::BadFile,
                    "kernel package '" + package.dir + "': " + s.message());
  if (Status s = parseKernelInfo(metaText, stem + ".meta", info); !s)
    return failWith(error, PackageError::BadFile,
                    "kernel package '" + package.dir + "': " + s.message());
  if (info->target != blasst::toString(target))
    return failWith(error, PackageError::BadFile,
                    stem + ".meta: target " + info->target +
                        " but the manifest says " + blasst::toString(target));
  if (Status s = readFile(stem + ".spec", "kernel spec", &specText, error); !s)
    return failWith(error, PackageError::BadFile,
                    "kernel package '" + package.dir + "': " + s.message());
  SpecOrError stored = parseSpec(specText, stem + ".spec");
  if (!stored)
    return failWith(error, PackageError::BadFile, stored.error);
  if (kernelKey(*stored.spec, target) != key)
    return failWith(error, PackageError::BadFile,
                    stem + ".spec describes " +
                        kernelKey(*stored.spec, target) +
                        ", but the manifest lists it as " + key);
  if (Status s = readFile(stem + ".cubin", "cubin", cubin, error); !s)
    return failWith(error, PackageError::BadFile,
                    "kernel package '" + package.dir + "': " + s.message());
  if (std::string bad =
          checkCubinImage(cubin->data(), cubin->size(), info->kernelName);
      !bad.empty())
    return failWith(error, PackageError::BadFile,
                    stem + ".cubin: bad cubin (" +
                        std::to_string(cubin->size()) + " bytes): " + bad);
  if (std::string bad =
          checkKernelContent(cubin->data(), cubin->size(), specText, *info);
      !bad.empty())
    return failWith(error, PackageError::BadFile,
                    stem + ".{cubin,spec,meta}: " + bad);
  return Status::success();
}
