"""ctypes bindings of blasst's C API (include/blasst/blasst.h).

No PyTorch here: this module loads in any Python 3 and is what the AOT tool,
the tests and the torch op build on.

Where the libraries come from (the first that exists wins):
  1. $BLASST_LIBRARY: the path of libblasst.so, or a directory holding it;
  2. the package's own _lib/ directory (copied there before `pip install`);
  3. the build tree, when this package is imported from a source checkout
     (<repo>/build/lib, or $BLASST_BUILD_DIR/lib);
  4. the system's library path (ctypes.util.find_library("blasst")).
libblasst_jit.so (the compiler) is $BLASST_JIT_LIBRARY, else the file of
that name next to libblasst.so. It is optional: without it, kernels come from
AOT packages only.
"""

import ctypes
import ctypes.util
import os
import threading

__all__ = [
    "BlasstError", "Status", "lib", "jit_lib", "jit_available",
    "library_path", "Kernel", "Compiled", "AttentionArgs",
]

# blasst_status
OK = 0
ERROR_INVALID_ARGUMENT = 1
ERROR_UNSUPPORTED = 2
ERROR_NOT_FOUND = 3
ERROR_BAD_FILE = 4
ERROR_ABI_MISMATCH = 5
ERROR_NO_DEVICE = 6
ERROR_CUDA = 7
ERROR_COMPILE = 8
ERROR_INTERNAL = 9

NO_DEVICE = -1

# blasst_kernel_attr
ATTR = {
    "abi_version": 0, "dtype": 1, "head_dim": 2, "q_heads": 3,
    "kv_heads": 4, "causal": 5, "lse": 6, "stats": 7, "sparsity": 8,
    "block_m": 9, "block_n": 10, "threads": 11, "smem_bytes": 12,
    "device": 13, "kv_per_sequence": 14, "kv_page_size": 15,
    "short_block_n": 16, "short_ctas_per_sm": 17, "tma_entry": 18,
}
DTYPE_NAMES = {0: "bf16", 1: "f16"}
SPARSITY_NONE, SPARSITY_A, SPARSITY_LN_LAMBDA = 0, 1, 2
THRESHOLD_SPEC, THRESHOLD_VALUE, THRESHOLD_DEVICE = 0, 1, 2
LAUNCH_ZERO_STATS = 1  # blasst_launch_flags


class BlasstError(RuntimeError):
    """A failed C API call: `status` (e.g. "BLASST_ERROR_NOT_FOUND") and the
    library's message."""

    def __init__(self, status, message):
        self.status = status
        self.code = None
        super().__init__(message)


class AttentionArgs(ctypes.Structure):
    """blasst_attention_args."""
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("threshold_source", ctypes.c_int32),
        ("q", ctypes.c_uint64), ("k", ctypes.c_uint64),
        ("v", ctypes.c_uint64), ("o", ctypes.c_uint64),
        ("lse", ctypes.c_uint64), ("stats", ctypes.c_uint64),
        ("batch", ctypes.c_int64), ("seq_q", ctypes.c_int64),
        ("seq_kv", ctypes.c_int64), ("q_heads", ctypes.c_int64),
        ("kv_heads", ctypes.c_int64), ("head_dim", ctypes.c_int64),
        ("q_strides", ctypes.c_int64 * 3), ("k_strides", ctypes.c_int64 * 3),
        ("v_strides", ctypes.c_int64 * 3), ("o_strides", ctypes.c_int64 * 3),
        ("softmax_scale", ctypes.c_double),
        ("log2_threshold", ctypes.c_float),
        ("flags", ctypes.c_uint32),
        ("log2_threshold_ptr", ctypes.c_uint64),
        ("workspace", ctypes.c_uint64), ("workspace_bytes", ctypes.c_uint64),
        ("kv_splits", ctypes.c_int32), ("reserved", ctypes.c_uint32),
        ("seq_lens_kv", ctypes.c_uint64), ("block_table", ctypes.c_uint64),
        ("max_pages", ctypes.c_int64), ("num_pages", ctypes.c_int64),
    ]

    def __init__(self):
        super().__init__()
        self.struct_size = ctypes.sizeof(AttentionArgs)


_lock = threading.RLock()
_lib = None
_lib_path = None
_jit = None
_jit_error = None


def _here():
    return os.path.dirname(os.path.abspath(__file__))


def _candidates(name, env):
    """Paths to try for lib<name>.so, in order."""
    filename = "lib%s.so" % name
    out = []
    value = os.environ.get(env, "")
    if value:
        out.append(os.path.join(value, filename) if os.path.isdir(value)
                   else value)
        return out  # an explicit choice is not second-guessed
    out.append(os.path.join(_here(), "_lib", filename))
    build = os.environ.get("BLASST_BUILD_DIR", "")
    if build:
        out.append(os.path.join(build, "lib", filename))
    # python/blasst/ in a source checkout: the build tree is ../../build.
    out.append(os.path.join(_here(), os.pardir, os.pardir, "build", "lib",
                            filename))
    found = ctypes.util.find_library(name)
    if found:
        out.append(found)
    return out


def _load(name, env):
    tried = []
    for path in _candidates(name, env):
        if os.sep in path and not os.path.exists(path):
            tried.append("%s (no such file)" % path)
            continue
        try:
            handle = ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
            continue
        return handle, os.path.abspath(path) if os.sep in path else path
    raise OSError(
        "blasst: cannot load lib%s.so; tried: %s. Set %s to the library "
        "(or its directory), or copy it into %s (see the README)"
        % (name, "; ".join(tried) or "nothing", env,
           os.path.join(_here(), "_lib")))


def _declare(l):
    c = ctypes
    vp, cp, i64p = c.c_void_p, c.c_char_p, c.POINTER(c.c_int64)
    sigs = {
        "blasst_status_name": (cp, [c.c_int]),
        "blasst_last_error": (cp, []),
        "blasst_free": (None, [vp]),
        "blasst_version": (cp, []),
        "blasst_c_api_version": (c.c_int, []),
        "blasst_kernel_abi_version": (c.c_int, []),
        "blasst_device_count": (c.c_int, [c.POINTER(c.c_int)]),
        "blasst_device_target": (c.c_int, [c.c_int, c.POINTER(cp)]),
        "blasst_spec_check": (c.c_int, [cp, cp]),
        "blasst_spec_canonical": (c.c_int, [cp, c.POINTER(vp)]),
        "blasst_kernel_key": (c.c_int, [cp, cp, c.POINTER(vp)]),
        "blasst_kernel_load_files": (c.c_int, [cp, c.c_int, c.POINTER(vp)]),
        "blasst_kernel_load_data": (c.c_int, [vp, c.c_size_t, cp, cp, c.c_int,
                                              c.POINTER(vp)]),
        "blasst_kernel_load_package": (c.c_int, [cp, cp, cp, c.c_int,
                                                 c.POINTER(vp)]),
        "blasst_kernel_destroy": (None, [vp]),
        "blasst_kernel_get_attr": (c.c_int, [vp, c.c_int, i64p]),
        "blasst_kernel_spec": (cp, [vp]),
        "blasst_kernel_name": (cp, [vp]),
        "blasst_kernel_target": (cp, [vp]),
        "blasst_kernel_sparsity_value": (c.c_double, [vp]),
        "blasst_kernel_lambda_max": (c.c_double, [vp]),
        "blasst_attention_args_init": (None, [c.POINTER(AttentionArgs)]),
        "blasst_log2_threshold": (c.c_int, [c.c_int, c.c_double,
                                            c.POINTER(c.c_float)]),
        "blasst_kernel_check_args": (c.c_int, [vp, c.POINTER(AttentionArgs)]),
        "blasst_kernel_launch": (c.c_int, [vp, c.POINTER(AttentionArgs), vp]),
        "blasst_kernel_workspace_bytes": (c.c_int, [
            vp, c.POINTER(AttentionArgs), c.POINTER(c.c_uint64),
            c.POINTER(c.c_int32)]),
    }
    for name, (res, args) in sigs.items():
        f = getattr(l, name)
        f.restype = res
        f.argtypes = args


def _declare_jit(l):
    c = ctypes
    vp, cp = c.c_void_p, c.c_char_p
    sigs = {
        "blasst_jit_compile": (c.c_int, [cp, cp, cp, c.POINTER(vp)]),
        "blasst_compiled_destroy": (None, [vp]),
        "blasst_compiled_cubin": (vp, [vp, c.POINTER(c.c_size_t)]),
        "blasst_compiled_meta": (cp, [vp]),
        "blasst_compiled_spec": (cp, [vp]),
        "blasst_compiled_from_cache": (c.c_int, [vp]),
        "blasst_compiled_notes": (cp, [vp]),
        "blasst_compiled_write": (c.c_int, [vp, cp]),
    }
    for name, (res, args) in sigs.items():
        f = getattr(l, name)
        f.restype = res
        f.argtypes = args


def lib():
    """libblasst.so (loaded and declared on first use)."""
    global _lib, _lib_path
    if _lib is None:
        with _lock:
            if _lib is None:
                l, path = _load("blasst", "BLASST_LIBRARY")
                _declare(l)
                if l.blasst_c_api_version() != 1:
                    raise OSError("blasst: %s implements C API version %d; "
                                  "this package needs 1"
                                  % (path, l.blasst_c_api_version()))
                _lib_path = path
                _lib = l
    return _lib


def library_path():
    lib()
    return _lib_path


def jit_lib():
    """libblasst_jit.so; raises OSError (with what was tried) without it."""
    global _jit, _jit_error
    if _jit is None and _jit_error is None:
        with _lock:
            if _jit is None and _jit_error is None:
                base = os.path.dirname(library_path()) \
                    if os.sep in (library_path() or "") else ""
                env = os.environ.get("BLASST_JIT_LIBRARY", "")
                path = env or os.path.join(base, "libblasst_jit.so")
                try:
                    if os.sep in path and not os.path.exists(path):
                        raise OSError("no such file")
                    l = ctypes.CDLL(path)
                    _declare_jit(l)
                    _jit = l
                except OSError as e:
                    _jit_error = ("the blasst JIT library is not available "
                                  "(%s: %s); kernels come from AOT packages "
                                  "only" % (path, e))
    if _jit is None:
        raise OSError(_jit_error)
    return _jit


def jit_available():
    try:
        jit_lib()
        return True
    except OSError:
        return False


def _b(s):
    return None if s is None else s.encode() if isinstance(s, str) else s


def _s(b):
    return b.decode(errors="replace") if b is not None else None


def check(status):
    """Raises BlasstError for a non-OK status, with the last error text."""
    if status != OK:
        l = lib()
        err = BlasstError(_s(l.blasst_status_name(status)),
                          _s(l.blasst_last_error()))
        err.code = status
        raise err


def _take_string(fn, *args):
    out = ctypes.c_void_p()
    check(fn(*args, ctypes.byref(out)))
    try:
        return ctypes.string_at(out.value).decode()
    finally:
        lib().blasst_free(out)


def status_name(status):
    return _s(lib().blasst_status_name(status))


def last_error():
    return _s(lib().blasst_last_error())


def version():
    return _s(lib().blasst_version())


def kernel_abi_version():
    return lib().blasst_kernel_abi_version()


def device_count():
    """Number of GPUs; 0 (not an error) without a driver."""
    n = ctypes.c_int(0)
    return n.value if lib().blasst_device_count(ctypes.byref(n)) == OK else 0


def device_target(device):
    t = ctypes.c_char_p()
    check(lib().blasst_device_target(device, ctypes.byref(t)))
    return _s(t.value)


def spec_check(spec, target=None):
    check(lib().blasst_spec_check(_b(spec), _b(target)))


def spec_canonical(spec):
    return _take_string(lib().blasst_spec_canonical, _b(spec))


def kernel_key(spec, target):
    return _take_string(lib().blasst_kernel_key, _b(spec), _b(target))


def log2_threshold(kind, value):
    out = ctypes.c_float()
    check(lib().blasst_log2_threshold(kind, float(value), ctypes.byref(out)))
    return out.value


class Kernel:
    """A loaded kernel (blasst_kernel *). `device` is a GPU ordinal or
    NO_DEVICE (-1: read and checked only, cannot launch)."""

    def __init__(self, handle):
        self._h = ctypes.c_void_p(handle)
        self._lib = lib()
        l = self._lib
        self.spec = _s(l.blasst_kernel_spec(self._h))
        self.name = _s(l.blasst_kernel_name(self._h))
        self.target = _s(l.blasst_kernel_target(self._h))
        self.sparsity_value = l.blasst_kernel_sparsity_value(self._h)
        self.lambda_max = l.blasst_kernel_lambda_max(self._h)
        self.attrs = {}
        v = ctypes.c_int64()
        for name, code in ATTR.items():
            check(l.blasst_kernel_get_attr(self._h, code, ctypes.byref(v)))
            self.attrs[name] = v.value
        self.dtype = DTYPE_NAMES[self.attrs["dtype"]]

    @staticmethod
    def _load(fn, *args):
        h = ctypes.c_void_p()
        check(fn(*args, ctypes.byref(h)))
        return Kernel(h.value)

    @classmethod
    def from_files(cls, stem, device=NO_DEVICE):
        return cls._load(lib().blasst_kernel_load_files, _b(stem), device)

    @classmethod
    def from_data(cls, cubin, meta, spec, device=NO_DEVICE):
        buf = ctypes.create_string_buffer(cubin, len(cubin))
        return cls._load(lib().blasst_kernel_load_data, buf, len(cubin),
                         _b(meta), _b(spec), device)

    @classmethod
    def from_package(cls, directory, spec, target=None, device=NO_DEVICE):
        return cls._load(lib().blasst_kernel_load_package, _b(directory),
                         _b(spec), _b(target), device)

    def workspace_bytes(self, args):
        """(bytes, kv_splits) of a launch with `args`: the split-KV
        workspace a decode kernel needs (0: none) and the kv_splits that
        asks for that launch again (the split grid's count; for lean CTAs
        args.kv_splits as given, 0 for the kernel's own choice)."""
        n, splits = ctypes.c_uint64(), ctypes.c_int32()
        check(self._lib.blasst_kernel_workspace_bytes(
            self._h, ctypes.byref(args), ctypes.byref(n),
            ctypes.byref(splits)))
        return n.value, splits.value

    def check_args(self, args):
        check(self._lib.blasst_kernel_check_args(self._h, ctypes.byref(args)))

    def launch(self, args, stream=0):
        check(self._lib.blasst_kernel_launch(self._h, ctypes.byref(args),
                                             ctypes.c_void_p(stream or None)))

    def __del__(self):
        h, self._h = getattr(self, "_h", None), None
        if h and h.value and self._lib is not None:
            try:
                self._lib.blasst_kernel_destroy(h)
            except Exception:  # interpreter shutdown
                pass

    def __repr__(self):
        return "<blasst.Kernel %s %s device=%d>" % (
            self.name, self.target, self.attrs["device"])


class Compiled:
    """A JIT-compiled kernel (blasst_compiled *): cubin, metadata, spec."""

    def __init__(self, spec, target="sm_90a", cache_dir=None):
        j = jit_lib()
        h = ctypes.c_void_p()
        check(j.blasst_jit_compile(_b(spec), _b(target), _b(cache_dir),
                                   ctypes.byref(h)))
        self._h, self._jit = h, j
        size = ctypes.c_size_t()
        ptr = j.blasst_compiled_cubin(h, ctypes.byref(size))
        self.cubin = ctypes.string_at(ptr, size.value)
        self.meta = _s(j.blasst_compiled_meta(h))
        self.spec = _s(j.blasst_compiled_spec(h))
        self.from_cache = bool(j.blasst_compiled_from_cache(h))
        # Cache notes and warnings ("warning: not cached: ..."): the kernel
        # is good, but the next process compiles it again.
        self.notes = _s(j.blasst_compiled_notes(h))

    def write(self, stem):
        check(self._jit.blasst_compiled_write(self._h, _b(stem)))

    def load(self, spec=None, device=NO_DEVICE):
        """The kernel, with `spec` (default: the compiled one) as its spec."""
        return Kernel.from_data(self.cubin, self.meta, spec or self.spec,
                                device)

    def __del__(self):
        h, self._h = getattr(self, "_h", None), None
        if h and h.value:
            try:
                self._jit.blasst_compiled_destroy(h)
            except Exception:
                pass
