"""Where the op's kernels come from: AOT kernel packages, then the JIT.

No PyTorch here. A kernel is found by its spec and target alone
(_capi.kernel_key): the softmax scale and the sparsity value are launch
arguments, so one kernel serves every value of them.

Packages are searched in the order they were added with add_package(), then
the directories in $BLASST_KERNEL_PATH (colon-separated). Without a package
entry the JIT compiles the kernel (cached on disk) where libblasst_jit.so is
available. A package of another kernel ABI is an error, not skipped.
"""

import math
import os
import threading
import warnings

from . import _capi

_lock = threading.Lock()
_packages = []
_kernels = {}  # (key, device) -> _capi.Kernel
_by_spec = {}  # (spec text, device, target) -> the same kernels
_compile_count = 0
# Bumped by clear_cache(): the op's per-call plans (ops.py) hold kernels and
# are rebuilt when it changes.
generation = 0


def add_package(directory):
    """Searches `directory` (a kernel package, python -m blasst.aot build)
    for kernels, before the ones added earlier and $BLASST_KERNEL_PATH."""
    directory = os.path.abspath(directory)
    if not os.path.isfile(os.path.join(directory, "manifest.txt")):
        raise FileNotFoundError(
            "%s is not a blasst kernel package (no manifest.txt); build one "
            "with python -m blasst.aot build" % directory)
    with _lock:
        if directory in _packages:
            _packages.remove(directory)
        _packages.insert(0, directory)


def packages():
    """The package directories searched, in order."""
    env = [p for p in os.environ.get("BLASST_KERNEL_PATH", "").split(":") if p]
    return list(_packages) + [os.path.abspath(p) for p in env]


def clear_cache():
    """Forgets the loaded kernels (the next call loads them again)."""
    global generation
    with _lock:
        _kernels.clear()
        _by_spec.clear()
        generation += 1


def spec_text(dtype, head_dim, q_heads, kv_heads, causal, lse=False,
              stats=False, sparsity=None, lambda_max=1.0, phase="prefill",
              kv_per_sequence=False, kv_page=0):
    """The op's spec for these parameters. `sparsity`: None, "a" or
    "ln_lambda"; the spec carries a canonical value for it (the kernel takes
    the real one at launch). `phase` "decode" (1..8 new tokens per sequence,
    split KV), with a KV cache: `kv_per_sequence` (int32 lengths [batch]),
    `kv_page` (a paged cache of that page size; 0: contiguous). Prefill specs
    carry none of these keys (their text and keys are as before)."""
    s = ("dtype=%s head_dim=%d head_dim_v=%d q_heads=%d kv_heads=%d "
         "causal=%s lse=%s stats=%s" % (
             dtype, head_dim, head_dim, q_heads, kv_heads,
             "true" if causal else "false", "true" if lse else "false",
             "true" if stats else "false"))
    if sparsity == "a":
        s += " sparsity=blasst:a=1"
    elif sparsity == "ln_lambda":
        s += " sparsity=blasst:ln_lambda=%r" % (math.log(lambda_max) - 1.0)
    elif sparsity is not None:
        raise ValueError("sparsity kind must be None, 'a' or 'ln_lambda', "
                         "got %r" % (sparsity,))
    if sparsity is not None and lambda_max != 1.0:
        s += " lambda_max=%r" % float(lambda_max)
    if phase == "decode":
        s += " phase=decode"
        if kv_per_sequence:
            s += " kv_lengths=per_sequence"
        if kv_page:
            s += " kv_cache=paged:page=%d" % kv_page
    elif phase != "prefill" or kv_per_sequence or kv_page:
        raise ValueError("a KV cache (per-sequence lengths, pages) needs "
                         "phase 'decode'; got phase %r" % (phase,))
    return s


def compile_count():
    """How many kernels this process compiled or loaded from the JIT cache
    (tests: a changed threshold must not add one)."""
    return _compile_count


def get_kernel(spec, device, target=None):
    """The loaded kernel of `spec` on GPU `device` (or, with device
    _capi.NO_DEVICE, read and checked only; `target` is then required)."""
    global _compile_count
    asked = (spec, device, target)
    fast = _by_spec.get(asked)
    if fast is not None:  # the per-launch path: one dict lookup
        return fast
    if target is None:
        target = _capi.device_target(device)
    key = (_capi.kernel_key(spec, target), device)
    k = _kernels.get(key)
    if k is not None:
        _by_spec[asked] = k
        return k
    with _lock:
        k = _kernels.get(key)
        if k is not None:
            return k
        # An unsupported spec is reported as such, not as a missing kernel.
        _capi.spec_check(spec, target)
        searched = packages()
        for directory in searched:
            try:
                k = _capi.Kernel.from_package(directory, spec, target, device)
                break
            except _capi.BlasstError as e:
                if e.code != _capi.ERROR_NOT_FOUND:
                    raise
        if k is None:
            if not _capi.jit_available():
                raise RuntimeError(
                    "blasst: no kernel for %s: %s, and %s. Build a package "
                    "where the compiler is installed: python -m blasst.aot "
                    "build --target %s --spec '%s' -o DIR, then "
                    "blasst.add_package(DIR) or BLASST_KERNEL_PATH=DIR" % (
                        key[0],
                        "not in the packages " + ", ".join(searched)
                        if searched else "no kernel package was added",
                        _capi._jit_error, target, spec))
            compiled = _capi.Compiled(spec, target)
            _compile_count += 1
            for line in compiled.notes.splitlines():
                if line.startswith("warning:"):
                    warnings.warn("blasst JIT: " + line[len("warning:"):]
                                  .strip(), RuntimeWarning, stacklevel=3)
            k = compiled.load(spec, device)
        _kernels[key] = k
        _by_spec[asked] = k
        return k
