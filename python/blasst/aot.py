"""Ahead-of-time kernel packages: compile specs where the compiler is, run
them where it is not.

    python -m blasst.aot build -o kernels/ --spec "dtype=bf16 head_dim=128 \\
        q_heads=32 kv_heads=8 causal=true"
    python -m blasst.aot build -o kernels/ --grid "dtype=bf16|f16 \\
        head_dim=64|128 q_heads=8 kv_heads=8|2 causal=false|true lse=false|true"
    python -m blasst.aot list kernels/
    python -m blasst.aot check kernels/

A package is a directory of `<stem>.{cubin,meta,spec}` per kernel and a
`manifest.txt` naming each kernel's key (runtime/include/blasst/Runtime/
KernelPackage.h has the format). The runtime (libblasst.so, the C API, the
Python op) finds a kernel in it from its spec and target alone, with no LLVM
present, and refuses a package of another kernel ABI version. The sparsity
value (`a`, `ln_lambda`) and the softmax scale are not part of the key: one
kernel serves every value. Building needs libblasst_jit.so (and ptxas); no
GPU. An existing package of the same ABI is extended.

No PyTorch here.
"""

import argparse
import hashlib
import itertools
import os
import sys

from . import _capi

MANIFEST = "manifest.txt"
FORMAT = 1


def expand_grid(grid):
    """"dtype=bf16|f16 head_dim=64|128" -> every combination, as spec
    texts."""
    axes = []
    for item in grid.split():
        if "=" not in item:
            raise ValueError("grid item %r is not key=value" % item)
        key, values = item.split("=", 1)
        axes.append(["%s=%s" % (key, v) for v in values.split("|")])
    return [" ".join(combo) for combo in itertools.product(*axes)]


def _stem(key):
    return "k_" + hashlib.sha256(key.encode()).hexdigest()[:16]


def read_manifest(directory):
    """(abi_version, compiler_version, {key: stem}) of a package, or None
    when the directory has no manifest. Lines it does not know are errors
    (the C runtime reads the same format)."""
    path = os.path.join(directory, MANIFEST)
    if not os.path.exists(path):
        return None
    abi, compiler, fmt, entries = None, "", None, {}
    with open(path) as f:
        for no, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            key, _, value = (part.strip() for part in line.partition("="))
            if key == "abi_version":
                abi = int(value)
            elif key == "format":
                fmt = int(value)
            elif key == "compiler_version":
                compiler = value
            elif key == "kernel":
                stem, _, kkey = value.partition(" ")
                entries[kkey.strip()] = stem
            else:
                raise ValueError("%s:%d: unknown key %r" % (path, no, key))
    if fmt is not None and fmt != FORMAT:
        raise ValueError("%s: package format %d, this tool writes %d"
                         % (path, fmt, FORMAT))
    return abi, compiler, entries


def write_manifest(directory, entries):
    lines = ["# blasst kernel package: kernels by spec and target "
             "(python -m blasst.aot)",
             "format = %d" % FORMAT,
             "abi_version = %d" % _capi.kernel_abi_version(),
             "compiler_version = %s" % _capi.version()]
    for key in sorted(entries):
        lines.append("kernel = %s %s" % (entries[key], key))
    tmp = os.path.join(directory, MANIFEST + ".tmp%d" % os.getpid())
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, os.path.join(directory, MANIFEST))


def build(directory, specs, target="sm_90a", cache_dir=None, force=False,
          log=None):
    """Compiles `specs` for `target` into the package at `directory`.
    Returns the number of kernels compiled (specs whose key the package
    already has are skipped)."""
    log = log or (lambda msg: None)
    os.makedirs(directory, exist_ok=True)
    existing = read_manifest(directory)
    entries = {}
    if existing is not None:
        abi, compiler, entries = existing
        if abi != _capi.kernel_abi_version():
            if not force:
                raise RuntimeError(
                    "%s holds kernels for kernel ABI version %s (%s); this "
                    "blasst builds version %d: use another directory or "
                    "--force to replace them" % (
                        directory, abi, compiler or "unknown compiler",
                        _capi.kernel_abi_version()))
            for stem in entries.values():
                for ext in (".cubin", ".meta", ".spec"):
                    try:
                        os.remove(os.path.join(directory, stem + ext))
                    except FileNotFoundError:
                        pass
            entries = {}
    built = 0
    for spec in specs:
        _capi.spec_check(spec, target)
        key = _capi.kernel_key(spec, target)
        if key in entries:
            log("have   %s" % key)
            continue
        compiled = _capi.Compiled(spec, target, cache_dir)
        stem = _stem(key)
        compiled.write(os.path.join(directory, stem))
        entries[key] = stem
        built += 1
        log("%s %s -> %s" % ("cached" if compiled.from_cache else "built ",
                             key, stem))
        write_manifest(directory, entries)  # each kernel lands at once
    write_manifest(directory, entries)
    return built


def check(directory, log=None):
    """Loads every kernel of a package by its key (no GPU: the files are
    read and checked). Returns the number of kernels."""
    log = log or (lambda msg: None)
    manifest = read_manifest(directory)
    if manifest is None:
        raise FileNotFoundError("%s has no %s" % (directory, MANIFEST))
    n = 0
    for key, stem in sorted(manifest[2].items()):
        spec = open(os.path.join(directory, stem + ".spec")).read()
        target = key.split()[0].split("=", 1)[1]
        _capi.Kernel.from_package(directory, spec, target)
        log("ok %s %s" % (stem, key))
        n += 1
    return n


def main(argv=None):
    p = argparse.ArgumentParser(
        prog="python -m blasst.aot",
        description="Ahead-of-time blasst kernel packages.")
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="compile specs into a package")
    b.add_argument("-o", "--output", required=True, help="package directory")
    b.add_argument("--spec", action="append", default=[],
                   help="a spec (key=value ...); repeatable")
    b.add_argument("--spec-file", action="append", default=[],
                   help="a file with one spec per line; repeatable")
    b.add_argument("--grid", action="append", default=[],
                   help="specs with alternatives: 'dtype=bf16|f16 "
                        "head_dim=64|128 ...' (every combination)")
    b.add_argument("--target", default="sm_90a", help="sm_90a (default) or "
                   "sm_100a")
    b.add_argument("--cache-dir", default=None, help="JIT cache directory")
    b.add_argument("--force", action="store_true",
                   help="replace a package of another kernel ABI")
    b.add_argument("-q", "--quiet", action="store_true")
    l = sub.add_parser("list", help="print a package's kernels")
    l.add_argument("package")
    c = sub.add_parser("check", help="read and check every kernel (no GPU)")
    c.add_argument("package")
    args = p.parse_args(argv)
    out = lambda msg: print(msg, flush=True)
    try:
        if args.command == "build":
            specs = list(args.spec)
            for f in args.spec_file:
                with open(f) as fh:
                    specs += [s.split("#")[0].strip() for s in fh
                              if s.split("#")[0].strip()]
            for g in args.grid:
                specs += expand_grid(g)
            if not specs:
                p.error("build needs --spec, --spec-file or --grid")
            n = build(args.output, specs, args.target, args.cache_dir,
                      args.force, None if args.quiet else out)
            out("%s: %d kernels compiled, %d in the package" % (
                args.output, n, len(read_manifest(args.output)[2])))
        elif args.command == "list":
            m = read_manifest(args.package)
            if m is None:
                raise FileNotFoundError("%s has no %s" % (args.package,
                                                         MANIFEST))
            out("abi_version %s, %s, %d kernels" % (m[0], m[1], len(m[2])))
            for key, stem in sorted(m[2].items()):
                out("%s %s" % (stem, key))
        else:
            n = check(args.package, out)
            out("%s: %d kernels ok" % (args.package, n))
    except (_capi.BlasstError, OSError, ValueError, RuntimeError) as e:
        print("blasst.aot: error: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
