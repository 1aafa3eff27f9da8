"""blasst: warp-specialized FlashAttention kernels with BLASST block skipping,
for PyTorch.

    import blasst
    o = blasst.attention(q, k, v, causal=True)                  # dense
    sp = blasst.Sparsity(a=1000)                                 # lambda = a/L
    o, stats = blasst.attention(q, k, v, sparsity=sp, return_stats=True)
    a = blasst.calibrate(q, k, v, target_skip=0.7)              # -> Sparsity(a=a)

The native libraries (libblasst.so, and libblasst_jit.so where the compiler
is installed) are found at run time: see blasst._capi. Without PyTorch the
package still imports (the C API bindings and the AOT tool work);
blasst.attention then raises ImportError.
"""

from . import _capi
from ._capi import BlasstError
from ._kernels import add_package, packages, clear_cache, get_kernel

__version__ = "0.1.0"

try:
    import torch as _torch  # noqa: F401
except ImportError as _e:  # the op needs PyTorch; the rest does not
    _torch_error = _e

    def _needs_torch(*args, **kwargs):
        raise ImportError("blasst.attention and blasst.calibrate need "
                          "PyTorch: %s" % _torch_error)

    attention = calibrate = Sparsity = _needs_torch
    torch_available = False
else:
    from .ops import attention, Sparsity
    from ._calibrate import calibrate, Calibration, skip_rate
    torch_available = True


def compile(spec, target="sm_90a", cache_dir=None):
    """JIT-compiles a spec (needs libblasst_jit.so); returns a
    blasst._capi.Compiled (cubin, meta, spec; .write(stem), .load())."""
    return _capi.Compiled(spec, target, cache_dir)


__all__ = ["attention", "Sparsity", "calibrate", "add_package", "packages",
           "clear_cache", "compile", "BlasstError", "torch_available"]
