"""The PyTorch op: blasst.attention, registered as torch.ops.blasst.attention.

Imported by blasst/__init__.py when PyTorch is importable. The kernels are
launched through the C API (ctypes): nothing is built against PyTorch's C++
ABI, so any PyTorch with torch.library works (custom_op and register_fake:
2.4 and later; older versions get a plain function that torch.compile cannot
trace).

Layouts: `layout="bshd"` ([batch, seq, heads, head_dim], FlashAttention's)
or "bhsd" ([batch, heads, seq, head_dim], SDPA's). Either is passed to the
kernel through strides (no copy); any strides work whose head_dim stride is
1, whose other strides are multiples of 8 elements, and whose data pointer is
16-byte aligned (what TMA needs). Anything else is refused with the reason
before a launch; call .contiguous() (or .clone() for a misaligned view).

Decode (`phase="decode"`, or picked automatically for 1..8 new tokens per
sequence against a longer K/V): the split-KV decode kernels, with optional
per-sequence KV lengths (`kv_lengths=`, int32 [B] on the GPU) and paged K/V
(`block_table=`, int32 [B, max_pages]; k and v are then page pools
[num_pages, page, Hkv, D]); a Sparsity (BLASST decode) works with either.
Their split-KV workspace is allocated once per layout, device and stream
(_workspace), not per call.
"""

import ctypes
import math
import operator
import threading
from typing import Optional, Tuple

import torch

from . import _capi, _kernels

__all__ = ["attention", "Sparsity"]

_DTYPES = {torch.bfloat16: "bf16", torch.float16: "f16"}
_LAYOUTS = ("bshd", "bhsd")
_LOG2E = 1.4426950408889634
_DEVICE_TYPE = "cuda"  # where the kernels run
_PHASES = (None, "prefill", "decode")
_MAX_DECODE_SEQ_Q = 8  # the runtime's kMaxDecodeSeqQ
_PAGE_SIZES = (16, 32, 64, 128, 256)  # a paged cache's pages (the spec's)


class Sparsity:
    """BLASST's run-time threshold: lambda = a / L_kv (`a=`) or a fixed
    ln(lambda) (`ln_lambda=`), capped at `lambda_max` (at most 1).

    The threshold lives in a one-element float32 tensor on the GPU
    (`threshold`, in the kernel's log2 domain) that the kernel reads when it
    runs: set() changes it in place, so a captured CUDA graph replays with the
    new value, and no kernel is recompiled. `a` / `ln_lambda` may also be a
    float32 CUDA tensor of one element, read at every call (converted on the
    device). Create it before capturing a CUDA graph: `device` defaults to
    the current CUDA device.
    """

    def __init__(self, a=None, ln_lambda=None, lambda_max=1.0, device=None):
        if (a is None) == (ln_lambda is None):
            raise ValueError("blasst.Sparsity needs exactly one of a= and "
                             "ln_lambda=")
        if not (0.0 < float(lambda_max) <= 1.0):
            raise ValueError("lambda_max must be in (0, 1], got %r"
                             % (lambda_max,))
        self._kind = "a" if a is not None else "ln_lambda"
        self._lambda_max = float(lambda_max)
        value = a if a is not None else ln_lambda
        self._source = None
        if isinstance(value, torch.Tensor):
            if value.numel() != 1 or value.dtype != torch.float32 \
                    or value.device.type != "cuda":
                raise ValueError(
                    "a tensor %s must be one float32 element on a CUDA "
                    "device, got %s on %s with %d elements" % (
                        self.kind, value.dtype, value.device, value.numel()))
            self._source = value
            self.threshold = None
            self.value = None
            return
        if device is None:
            device = torch.device("cuda", torch.cuda.current_device()) \
                if torch.cuda.is_available() else torch.device("cpu")
        self.threshold = torch.empty(1, dtype=torch.float32, device=device)
        self.set(**{self.kind: value})

    # Read-only: the op's fast path keys its plans on the object (the kernel
    # follows kind and lambda_max); set() changes only the threshold.
    @property
    def kind(self):
        return self._kind

    @property
    def lambda_max(self):
        return self._lambda_max

    def set(self, a=None, ln_lambda=None):
        """Changes the threshold in place (same kind as constructed)."""
        value = a if self.kind == "a" else ln_lambda
        other = ln_lambda if self.kind == "a" else a
        if value is None or other is not None:
            raise ValueError("this Sparsity was made with %s=: set(%s=...)"
                             % (self.kind, self.kind))
        if self._source is not None:
            raise ValueError("this Sparsity reads a tensor; change the "
                             "tensor instead")
        value = float(value)
        if self.kind == "ln_lambda" and value > math.log(self.lambda_max):
            raise ValueError(
                "ln_lambda %r is above the cap ln(lambda_max) = %r" % (
                    value, math.log(self.lambda_max)))
        kind = _capi.SPARSITY_A if self.kind == "a" \
            else _capi.SPARSITY_LN_LAMBDA
        t = _capi.log2_threshold(kind, value)  # validates the value
        if torch.cuda.is_available() and self.threshold.is_cuda and \
                torch.cuda.is_current_stream_capturing():
            raise RuntimeError("Sparsity.set() during CUDA graph capture "
                               "would be replayed; call it between replays")
        self.threshold.fill_(t)
        self.value = value

    def _tensor(self):
        """The threshold tensor, unchecked (the op's plan checks it)."""
        src = self._source
        if src is None:
            return self.threshold
        return torch.log2(src) if self.kind == "a" else src * _LOG2E

    def log2_threshold(self, device):
        """The threshold tensor for a launch on `device`."""
        if self._source is not None:
            src = self._source
            t = torch.log2(src) if self.kind == "a" else src * _LOG2E
        else:
            t = self.threshold
        if t.device != device:
            raise ValueError(
                "the Sparsity's threshold is on %s but the inputs are on %s: "
                "create it with Sparsity(..., device=q.device)"
                % (t.device, device))
        return t

    def __repr__(self):
        return "blasst.Sparsity(%s=%s, lambda_max=%r)" % (
            self.kind, "<tensor>" if self._source is not None else self.value,
            self.lambda_max)


def _dims(q, k, v, layout, kv_lengths=None, block_table=None, seq_kv=None):
    """(B, Sq, Skv, Hq, Hkv, D, page) after checking everything a launch
    needs; ValueError / TypeError naming the problem. With a block table, k
    and v are page pools ([num_pages, page, Hkv, D] in the layout's order)
    and page is their page size (else 0); Skv is seq_kv when given (the
    length, or the bound of kv_lengths), else K/V's sequence extent (paged:
    max_pages x page)."""
    if layout not in _LAYOUTS:
        raise ValueError("layout must be 'bshd' or 'bhsd', got %r" % (layout,))
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError("blasst.attention: %s must be a torch.Tensor, "
                            "got %s" % (name, type(t).__name__))
        if t.dim() != 4:
            raise ValueError(
                "blasst.attention: %s must be 4-D [%s], got shape %s" % (
                    name, ", ".join({"bshd": "B S H D", "bhsd": "B H S D"}
                                    [layout].split()), tuple(t.shape)))
        if t.dtype not in _DTYPES:
            raise TypeError("blasst.attention: %s has dtype %s; the kernels "
                            "take torch.bfloat16 or torch.float16"
                            % (name, t.dtype))
        if t.device.type != _DEVICE_TYPE and t.device.type != "meta":
            raise ValueError("blasst.attention: %s is on %s; the kernels run "
                             "on CUDA devices" % (name, t.device))
    if not (q.dtype == k.dtype == v.dtype):
        raise TypeError("blasst.attention: q, k, v must have one dtype, got "
                        "%s, %s, %s" % (q.dtype, k.dtype, v.dtype))
    if not (q.device == k.device == v.device):
        raise ValueError("blasst.attention: q, k, v must be on one device, "
                         "got %s, %s, %s" % (q.device, k.device, v.device))
    if layout == "bshd":
        (B, Sq, Hq, D), (Bk, Skv, Hkv, Dk) = q.shape, k.shape
    else:
        (B, Hq, Sq, D), (Bk, Hkv, Skv, Dk) = q.shape, k.shape
    if tuple(k.shape) != tuple(v.shape):
        raise ValueError("blasst.attention: k and v must have one shape, got "
                         "%s and %s" % (tuple(k.shape), tuple(v.shape)))
    page = 0
    if block_table is not None:
        # Page pools: [num_pages, page, Hkv, D] ("bshd") or
        # [num_pages, Hkv, page, D] ("bhsd").
        page = Skv
        if page not in _PAGE_SIZES:
            raise ValueError(
                "blasst.attention: with a block_table, k and v are page "
                "pools [num_pages, page, kv_heads, head_dim]%s; their page "
                "size %d is not a power of two from 16 to 256" % (
                    "" if layout == "bshd" else " (layout 'bhsd': "
                    "[num_pages, kv_heads, page, head_dim])", page))
        if Bk < 1:
            raise ValueError("blasst.attention: the page pools k and v have "
                             "no pages")
        Skv = _check_block_table(block_table, q, B, page, seq_kv)
    elif Bk != B:
        raise ValueError("blasst.attention: q has batch %d, k and v %d"
                         % (B, Bk))
    elif seq_kv is not None:
        if not 1 <= seq_kv <= Skv:
            raise ValueError(
                "blasst.attention: seq_kv %d is not in [1, %d] (k and v "
                "hold %d keys per sequence)" % (seq_kv, Skv, Skv))
        Skv = seq_kv
    if kv_lengths is not None:
        _check_tensor("kv_lengths", kv_lengths, q, (B,), "[batch]")
    if Dk != D:
        raise ValueError("blasst.attention: q has head_dim %d, k and v %d "
                         "(different head sizes are not supported)" % (D, Dk))
    if Hkv < 1 or Hq % Hkv:
        raise ValueError("blasst.attention: q's %d heads are not a multiple "
                         "of k/v's %d heads (GQA/MQA need q_heads = n * "
                         "kv_heads)" % (Hq, Hkv))
    if Skv == 0 and B * Sq > 0:
        raise ValueError("blasst.attention: k and v have no keys (seq_kv = 0)")
    return B, Sq, Skv, Hq, Hkv, D, page


def _check_tensor(name, t, q, shape, what):
    """An int32 tensor of the KV cache on q's device, of `shape`, rows
    contiguous (the kernel reads it as int32 `what`)."""
    if not isinstance(t, torch.Tensor):
        raise TypeError("blasst.attention: %s must be a torch.Tensor "
                        "(int32 %s), got %s" % (name, what, type(t).__name__))
    if t.dtype != torch.int32:
        raise TypeError("blasst.attention: %s has dtype %s; it must be "
                        "torch.int32 %s" % (name, t.dtype, what))
    if tuple(t.shape) != tuple(shape):
        raise ValueError("blasst.attention: %s has shape %s; it must be %s "
                         "= %s" % (name, tuple(t.shape), what, tuple(shape)))
    if t.device != q.device:
        raise ValueError("blasst.attention: %s is on %s but q is on %s"
                         % (name, t.device, q.device))
    if t.numel() > 1 and not t.is_contiguous():
        raise ValueError("blasst.attention: %s has strides %s; the kernel "
                         "reads it contiguous (call .contiguous())"
                         % (name, t.stride()))


def _check_block_table(table, q, B, page, seq_kv):
    """The block table's checks; returns the KV length bound seq_kv
    (default: what the table holds, max_pages x page)."""
    if not isinstance(table, torch.Tensor) or table.dim() != 2:
        raise ValueError(
            "blasst.attention: block_table must be a 2-D int32 tensor "
            "[batch, max_pages], got %s" % (
                tuple(table.shape) if isinstance(table, torch.Tensor)
                else type(table).__name__))
    max_pages = table.shape[1]
    _check_tensor("block_table", table, q, (B, max(max_pages, 1)),
                  "[batch, max_pages]")
    holds = max_pages * page
    if seq_kv is None:
        return holds
    if not 1 <= seq_kv <= holds:
        raise ValueError(
            "blasst.attention: seq_kv %d does not fit the block table: it "
            "holds at most max_pages x page = %d x %d = %d keys per sequence"
            % (seq_kv, max_pages, page, holds))
    return seq_kv


def _bshd_strides(t, layout):
    """Element strides (batch, seq, head) and the head_dim stride. A
    dimension of extent 1 is never stepped over, so its stride (which
    PyTorch leaves arbitrary, 0 after expand) becomes the tensor's span,
    which the kernel's checks accept."""
    return _bshd_strides_of(t.shape, t.stride(), layout)


def _bshd_strides_of(n, s, layout):
    order = (0, 1, 2) if layout == "bshd" else (0, 2, 1)
    span = max([s[i] * n[i] for i in order if n[i] > 1] + [n[3]])
    return tuple(s[i] if n[i] > 1 else span for i in order), s[3]


def _check_memory(name, t, layout):
    (sb, ss, sh), sd = _bshd_strides(t, layout)
    if sd != 1 and t.shape[3] > 1:
        raise ValueError(
            "blasst.attention: %s's head_dim stride is %d; it must be 1 "
            "(call .contiguous())" % (name, sd))
    for what, st, size in (("batch", sb, t.shape[0]),
                           ("seq", ss, t.shape[1 if layout == "bshd" else 2]),
                           ("head", sh, t.shape[2 if layout == "bshd" else 1])):
        if size > 1 and (st <= 0 or st % 8):
            raise ValueError(
                "blasst.attention: %s's %s stride is %d elements; TMA needs "
                "a positive multiple of 8 (16 bytes): call .contiguous()"
                % (name, what, st))
    if t.data_ptr() % 16:
        raise ValueError(
            "blasst.attention: %s's data pointer 0x%x is not 16-byte aligned "
            "(a view at an odd offset): call .clone()" % (name, t.data_ptr()))


# The GPU ordinal of a device and the raw current stream of a GPU (with
# _DEVICE_TYPE: what the CPU benchmark, python/benchmarks/host_overhead.py
# --stub, stands in).
def _device_index(device):
    return device.index if device.index is not None \
        else torch.cuda.current_device()


# torch._C._cuda_getCurrentRawStream(index) returns the cudaStream_t as an
# int without building a torch.cuda.Stream (what inductor's generated code
# calls); torch.cuda.current_stream where a build lacks it.
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or \
    (lambda index: torch.cuda.current_stream(index).cuda_stream)
_empty_strided = torch.empty_strided


class _Plan:
    """What a launch of one (shapes, strides, dtypes, devices, flags) needs,
    checked once: the kernel, a blasst_attention_args with every field but
    the data pointers and the scale filled in, the output shapes. Data
    pointers (and their alignment) are checked at every call."""

    __slots__ = ("empty", "o_shape", "lse_shape", "stats_shape", "dtype",
                 "device", "index", "args", "ref", "fn", "handle", "kernel",
                 "generation", "default_scale", "o_stride", "lse_stride",
                 "stats_stride", "kv", "ws", "ws_key", "decode")


# Plans per thread (a plan's args struct is written at every call and read
# by the C API while the GIL is released: threads must not share one).
_tls = threading.local()
_MAX_PLANS = 256  # a dynamic-shape workload starts over past this


def _contiguous_strides(shape):
    strides, n = [], 1
    for extent in reversed(shape):
        strides.append(n)
        n *= max(extent, 1)
    return tuple(reversed(strides))


def _plan(q, k, v, causal, layout, threshold, kind, lambda_max, return_lse,
          return_stats, kv_lengths=None, block_table=None, seq_kv=None,
          phase=None):
    """Checks everything about the arguments but the data pointers (the
    errors name the problem) and builds their _Plan."""
    B, Sq, Skv, Hq, Hkv, D, page = _dims(q, k, v, layout, kv_lengths,
                                         block_table, seq_kv)
    per_sequence = kv_lengths is not None
    cache = per_sequence or page
    _check_phase(phase, cache, Sq)
    if q.device.type != _DEVICE_TYPE:
        raise ValueError("blasst.attention: the inputs are on %s; the "
                         "kernels run on CUDA devices" % q.device)
    if kind not in (0, 1, 2) or (kind == 0) != (threshold is None):
        raise ValueError("blasst.attention: a threshold tensor goes with a "
                         "sparsity kind (1: a, 2: ln_lambda) and only then "
                         "(got kind %r, threshold %s)"
                         % (kind, "None" if threshold is None else "a tensor"))
    if threshold is not None and (threshold.dtype != torch.float32 or
                                  threshold.numel() != 1 or
                                  threshold.device != q.device):
        raise ValueError("blasst.attention: the threshold must be one "
                         "float32 on %s, got %s on %s" % (
                             q.device, threshold.dtype, threshold.device))
    p = _Plan()
    p.kv = bool(cache)
    p.ws = None
    p.ws_key = None
    p.decode = False
    p.empty = B * Sq == 0
    p.o_shape = (B, Sq, Hq, D) if layout == "bshd" else (B, Hq, Sq, D)
    p.lse_shape = (B, Hq, Sq) if return_lse else (0,)
    p.stats_shape = (B, Hq, 2) if return_stats else (0,)
    p.dtype, p.device = q.dtype, q.device
    p.generation = _kernels.generation
    p.default_scale = 1.0 / math.sqrt(D) if D else 1.0
    # The outputs are allocated with torch.empty_strided (contiguous
    # strides): it costs the host less than torch.empty (measured on the
    # H200's host: 2.4-4.8 us against 6.5-6.8 us in the same run).
    p.o_stride = _contiguous_strides(p.o_shape)
    p.lse_stride = _contiguous_strides(p.lse_shape)
    p.stats_stride = _contiguous_strides(p.stats_shape)
    if p.empty:
        return p
    for name, t in (("q", q), ("k", k), ("v", v)):
        _check_memory(name, t, layout)
    sparsity = {0: None, 1: "a", 2: "ln_lambda"}[kind]
    p.index = _device_index(q.device)

    def spec_of(phase):
        return _kernels.spec_text(_DTYPES[q.dtype], D, Hq, Hkv, causal,
                                  return_lse, return_stats, sparsity,
                                  lambda_max, phase, per_sequence, page)

    p.decode = bool(cache) or phase == "decode" or (
        phase is None and _auto_decode(spec_of("decode"), Sq, Skv, p.index))
    spec = spec_of("decode" if p.decode else "prefill")
    p.kernel = _kernels.get_kernel(spec, p.index)
    a = p.args = _capi.AttentionArgs()
    a.batch, a.seq_q, a.seq_kv = B, Sq, Skv
    a.q_heads, a.kv_heads, a.head_dim = Hq, Hkv, D
    a.q_strides[:] = _bshd_strides(q, layout)[0]
    a.k_strides[:] = _bshd_strides(k, layout)[0]
    a.v_strides[:] = _bshd_strides(v, layout)[0]
    # O is allocated contiguous in q's layout.
    a.o_strides[:] = _bshd_strides_of(p.o_shape, p.o_stride, layout)[0]
    a.threshold_source = _capi.THRESHOLD_SPEC if threshold is None \
        else _capi.THRESHOLD_DEVICE
    a.flags = _capi.LAUNCH_ZERO_STATS if return_stats else 0
    if page:
        a.max_pages = block_table.shape[1]
        a.num_pages = k.shape[0]
    p.ref = ctypes.byref(a)
    p.fn = _capi.lib().blasst_kernel_launch
    p.handle = p.kernel._h
    if p.decode:
        # The split count and the workspace it needs, fixed for the plan
        # (kv_splits 0: the kernel's choice from the SM count). The
        # pointers are not looked at here: stand-ins that pass the checks.
        if per_sequence:
            a.seq_lens_kv = 16
        if page:
            a.block_table = 16
        a.q = a.k = a.v = a.o = 16
        a.lse = 16 if return_lse else 0
        a.stats = 16 if return_stats else 0
        a.log2_threshold_ptr = 16 if threshold is not None else 0
        nbytes, splits = p.kernel.workspace_bytes(a)
        a.q = a.k = a.v = a.o = a.lse = a.stats = a.log2_threshold_ptr = 0
        a.seq_lens_kv = a.block_table = 0
        # The kv_splits that asks for the launch the workspace was sized
        # for again: the split grid's count, or 0 for lean CTAs (the
        # runtime makes that choice again from the same arguments; a
        # pinned count would turn the lean entry off).
        a.kv_splits = splits
        if nbytes:
            a.workspace_bytes = nbytes
            p.ws = {}
            p.ws_key = (p.index, nbytes, splits, D,
                        p.kernel.attrs["block_m"])
    return p


def _check_phase(phase, cache, Sq):
    """The phase's checks (the plan's and the fake implementation's): a KV
    cache (`cache`: kv_lengths or a block table) needs the decode kernels,
    which take 1 to 8 new tokens per sequence, with or without a
    sparsity."""
    if phase not in _PHASES:
        raise ValueError("blasst.attention: phase must be None (chosen from "
                         "the shapes), 'prefill' or 'decode', got %r"
                         % (phase,))
    if cache and phase == "prefill":
        raise ValueError("blasst.attention: kv_lengths and block_table are "
                         "decode arguments (phase='decode' or None), got "
                         "phase='prefill'")
    if (cache or phase == "decode") and Sq > _MAX_DECODE_SEQ_Q:
        raise ValueError(
            "blasst.attention: the decode kernels take 1 to %d new tokens "
            "per sequence, q has %d%s" % (
                _MAX_DECODE_SEQ_Q, Sq, " (kv_lengths / block_table need "
                "the decode kernels)" if cache else
                "; use phase='prefill' (or None)"))


def _auto_decode(spec, Sq, Skv, index):
    """phase=None: the decode kernels for 1..8 new tokens per sequence
    against a longer K/V, where the compiler builds them for the device's
    target (head_dim 64/128, q_heads / kv_heads up to 64, sm_90a);
    else the prefill kernels."""
    if not (1 <= Sq <= _MAX_DECODE_SEQ_Q and Skv > Sq):
        return False
    try:
        _capi.spec_check(spec, _capi.device_target(index))
    except _capi.BlasstError:
        return False
    return True


# Split-KV workspaces: (device, stream, bytes, splits, head_dim, block_m) ->
# a zeroed uint8 tensor. A decode kernel leaves the workspace's counters at
# zero after each launch, and launches on one stream run one at a time, so
# every plan of one layout (the same bytes, splits and tile shape) on one
# stream shares one; each plan keeps its own per stream (p.ws).
_workspaces = {}
_MAX_WORKSPACES = 64
_ws_lock = threading.Lock()


def _capturing():
    return torch.cuda.is_current_stream_capturing()


def _workspace(p, stream):
    """The split-KV workspace of plan p on `stream`. Zeroed once, on the
    stream, when allocated; during CUDA graph capture a fresh one is
    allocated and zeroed inside the graph (so each replay starts from
    zeros) and not kept for eager calls (its zeroing has not run yet)."""
    if _capturing():
        return torch.zeros(p.args.workspace_bytes, dtype=torch.uint8,
                           device=p.device)
    key = p.ws_key + (stream,)
    with _ws_lock:
        ws = _workspaces.get(key)
        if ws is None:
            if len(_workspaces) >= _MAX_WORKSPACES:
                _workspaces.clear()  # the plans keep theirs
            ws = _workspaces[key] = torch.zeros(
                p.args.workspace_bytes, dtype=torch.uint8, device=p.device)
    p.ws[stream] = ws
    return ws


def _misaligned(q, k, v):
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.data_ptr() % 16:
            return ValueError(
                "blasst.attention: %s's data pointer 0x%x is not 16-byte "
                "aligned (a view at an odd offset): call .clone()"
                % (name, t.data_ptr()))
    return None


def _meta(t):
    return None if t is None or not isinstance(t, torch.Tensor) else \
        (t.shape, t.stride(), t.dtype, t.device)


def _key(q, k, v, causal, layout, threshold, kind, lambda_max, return_lse,
         return_stats, kv_lengths=None, block_table=None, seq_kv=None,
         phase=None):
    """Everything a _Plan's checks and fields depend on: a changed shape,
    stride, dtype, device or flag is another plan."""
    return (q.shape, k.shape, v.shape, q.stride(), k.stride(), v.stride(),
            q.dtype, k.dtype, v.dtype, q.device, k.device, v.device,
            causal, layout, kind, lambda_max, return_lse, return_stats,
            None if threshold is None else
            (threshold.dtype, threshold.shape, threshold.device),
            phase, seq_kv, _meta(kv_lengths), _meta(block_table))


def _fast_key(q, k, v, causal, layout, sparsity, return_lse,
              return_stats, phase=None, cache=None):
    """_key for the eager fast path, cheaper to build and hash: a
    blasst.Sparsity stands for its threshold tensor (fixed when it is made:
    set() fills it in place, a tensor source is read through the same
    conversion at every call), so the key holds the object, hashed by
    identity, instead of the tensor's dtype, shape and device. The key
    keeps the Sparsity alive as long as its plan (at most _MAX_PLANS).
    `cache`: None, or (seq_kv, kv_lengths, block_table) of a decode KV
    cache (their metadata, _cache_key)."""
    return (q.shape, k.shape, v.shape, q.stride(), k.stride(), v.stride(),
            q.dtype, k.dtype, v.dtype, q.device, k.device, v.device,
            causal, layout, return_lse, return_stats, sparsity, phase, cache)


def _cache_key(seq_kv, kv_lengths, block_table):
    if seq_kv is None and kv_lengths is None and block_table is None:
        return None
    return (seq_kv, _meta(kv_lengths), _meta(block_table))


def _plans():
    try:
        return _tls.plans
    except AttributeError:
        plans = _tls.plans = {}
        return plans


def _get_plan(plans, key, q, k, v, causal, layout, threshold, kind,
              lambda_max, return_lse, return_stats, kv_lengths=None,
              block_table=None, seq_kv=None, phase=None):
    p = plans.get(key)
    if p is None or p.generation != _kernels.generation:
        if len(plans) >= _MAX_PLANS:
            plans.clear()
        p = plans[key] = _plan(q, k, v, causal, layout, threshold, kind,
                               lambda_max, return_lse, return_stats,
                               kv_lengths, block_table, seq_kv, phase)
    return p


def _run(p, q, k, v, scale, threshold, return_lse, return_stats,
         kv_lengths=None, block_table=None):
    """Launches a plan's kernel on q, k, v; returns O, and LSE / stats when
    asked for (None otherwise)."""
    o = _empty_strided(p.o_shape, p.o_stride, dtype=p.dtype, device=p.device)
    lse = _empty_strided(p.lse_shape, p.lse_stride, dtype=torch.float32,
                         device=p.device) if return_lse else None
    # The kernel adds to the counters: the launch zeroes them first
    # (BLASST_LAUNCH_ZERO_STATS: one memset on the stream, cheaper on the
    # host than torch.zeros).
    stats = _empty_strided(p.stats_shape, p.stats_stride, dtype=torch.int64,
                           device=p.device) if return_stats else None
    if p.empty:
        if stats is not None:
            stats.zero_()
        return o, lse, stats
    qp, kp, vp = q.data_ptr(), k.data_ptr(), v.data_ptr()
    if (qp | kp | vp) & 15:
        raise _misaligned(q, k, v)
    a = p.args
    a.q, a.k, a.v, a.o = qp, kp, vp, o.data_ptr()
    if return_lse:
        a.lse = lse.data_ptr()
    if return_stats:
        a.stats = stats.data_ptr()
    if threshold is not None:
        a.log2_threshold_ptr = threshold.data_ptr()
    a.softmax_scale = scale
    stream = _raw_stream(p.index)
    if p.kv:
        a.seq_lens_kv = 0 if kv_lengths is None else kv_lengths.data_ptr()
        a.block_table = 0 if block_table is None else block_table.data_ptr()
    if p.ws is not None:
        # During capture a fresh workspace, zeroed in the graph
        # (_workspace): never the eager one of the same stream, nor another
        # graph's.
        ws = None if _capturing() else p.ws.get(stream)
        if ws is None:
            ws = _workspace(p, stream)
        a.workspace = ws.data_ptr()
    status = p.fn(p.handle, p.ref, stream)
    if status:
        _capi.check(status)
    return o, lse, stats


def _launch(q, k, v, causal, scale, layout, threshold, kind, lambda_max,
            return_lse, return_stats, kv_lengths=None, block_table=None,
            seq_kv=0, phase=""):
    """The op's implementation (every output a tensor). seq_kv 0 and phase
    "" are the op schema's None."""
    seq_kv, phase = seq_kv or None, phase or None
    key = _key(q, k, v, causal, layout, threshold, kind, lambda_max,
               return_lse, return_stats, kv_lengths, block_table, seq_kv,
               phase)
    p = _get_plan(_plans(), key, q, k, v, causal, layout, threshold, kind,
                  lambda_max, return_lse, return_stats, kv_lengths,
                  block_table, seq_kv, phase)
    o, lse, stats = _run(p, q, k, v, scale, threshold, return_lse,
                         return_stats, kv_lengths, block_table)
    if lse is None:
        lse = torch.empty((0,), dtype=torch.float32, device=p.device)
    if stats is None:
        stats = torch.empty((0,), dtype=torch.int64, device=p.device)
    return o, lse, stats


def _fake(q, k, v, causal, scale, layout, threshold=None, kind=0,
          lambda_max=1.0, return_lse=False, return_stats=False,
          kv_lengths=None, block_table=None, seq_kv=0, phase=""):
    B, Sq, Skv, Hq, Hkv, D, page = _dims(q, k, v, layout, kv_lengths,
                                         block_table, seq_kv or None)
    _check_phase(phase or None, kv_lengths is not None or page, Sq)
    o = q.new_empty((B, Sq, Hq, D) if layout == "bshd" else (B, Hq, Sq, D))
    lse = q.new_empty((B, Hq, Sq) if return_lse else (0,),
                      dtype=torch.float32)
    stats = q.new_empty((B, Hq, 2) if return_stats else (0,),
                        dtype=torch.int64)
    return o, lse, stats


_custom_op = getattr(getattr(torch, "library", None), "custom_op", None)
if _custom_op is not None:
    @_custom_op("blasst::attention", mutates_args=())
    def _attention_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                      causal: bool, scale: float, layout: str,
                      threshold: Optional[torch.Tensor] = None,
                      kind: int = 0, lambda_max: float = 1.0,
                      return_lse: bool = False, return_stats: bool = False,
                      kv_lengths: Optional[torch.Tensor] = None,
                      block_table: Optional[torch.Tensor] = None,
                      seq_kv: int = 0, phase: str = ""
                      ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return _launch(q, k, v, causal, scale, layout, threshold, kind,
                       lambda_max, return_lse, return_stats, kv_lengths,
                       block_table, seq_kv, phase)

    _attention_op.register_fake(_fake)
    _op = torch.ops.blasst.attention
else:  # PyTorch before 2.4: no custom_op; eager only
    _op = _launch


# Eager calls skip the dispatcher (torch.ops.blasst.attention costs more
# host time than the launch itself) where that is exactly what the op would
# do: plain tensors on the GPU, nothing tracing or transforming them, no
# autograd graph to record. Everything else goes through the op, as before:
# torch.compile / torch.export (is_compiling is True while dynamo traces, so
# the op lands in the graph), FakeTensor and other subclasses or dispatch
# modes, TorchFunctionModes, torch.jit.trace, functorch transforms (vmap,
# grad), inputs that require grad while grad mode is on (the op's autograd
# behaviour: no derivative), the profiler (so traces show the op).
_Tensor = torch.Tensor
_is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling",
                        None) or (lambda: False)
_fn_modes = getattr(torch._C, "_is_torch_function_mode_enabled",
                    lambda: False)
_dispatch_modes = getattr(torch._C, "_len_torch_dispatch_stack", lambda: 0)
_jit_tracing = getattr(torch._C, "_get_tracing_state", lambda: None)
_transforms = getattr(torch._C, "_are_functorch_transforms_active",
                      lambda: False)
_grad_enabled = torch.is_grad_enabled
_profiler = torch.autograd.profiler
_on_device = operator.attrgetter("is_cuda")  # the stub benchmark: is_cpu


def _direct(q, k, v):
    return (not _is_compiling()
            and type(q) is _Tensor and type(k) is _Tensor
            and type(v) is _Tensor and _on_device(q)
            and not ((q.requires_grad or k.requires_grad or v.requires_grad)
                     and _grad_enabled())
            and not _fn_modes() and _dispatch_modes() == 0
            and _jit_tracing() is None and not _transforms()
            and not getattr(_profiler, "_is_profiler_enabled", False))


def attention(q, k, v, *, causal=False, scale=None, sparsity=None,
              return_lse=False, return_stats=False, layout="bshd",
              phase=None, kv_lengths=None, block_table=None, seq_kv=None):
    """Attention over q [B, Sq, Hq, D] and k, v [B, Skv, Hkv, D] (or
    [B, H, S, D] with layout="bhsd"), bf16 or f16, on an sm_90a GPU.

    causal: bottom-right aligned (query i sees keys j <= i + Skv - Sq; rows
    that see no key output 0, LSE -inf). scale: softmax scale, default
    1/sqrt(D). sparsity: None (dense) or a blasst.Sparsity (BLASST
    skipping). GQA/MQA: Hq a multiple of Hkv.

    Returns O (the layout and dtype of q); with return_lse also LSE
    [B, Hq, Sq] float32 (natural log), with return_stats also the skip
    statistics [B, Hq, 2] int64 (visited, skipped KV blocks; needs a
    sparsity), in that order. Runs on PyTorch's current stream.

    Decode: phase None picks the decode kernels (split KV) for 1..8 new
    tokens per sequence (Sq) against a longer K/V where they are built for
    the shapes (head_dim 64/128, q_heads / kv_heads up to 64,
    sm_90a),
    else prefill; "prefill" / "decode" choose. A KV cache (decode only):
    kv_lengths, int32 [B] on q's device, each sequence's KV length (0
    allowed; at most seq_kv, not checked: it is on the GPU; the kernel
    reads a longer one as seq_kv); block_table,
    int32 [B, max_pages] page indices into k and v, which are then page
    pools [num_pages, page, Hkv, D] ([num_pages, Hkv, page, D] with "bhsd";
    page a power of two 16..256). seq_kv: the KV length (or the bound of
    kv_lengths); default K/V's sequence extent, for a paged cache
    max_pages x page. Causal stays bottom-right per sequence (token i of Sq
    sees keys j <= i + len - Sq). A sparsity works with the KV caches: each
    sequence votes on and counts its own blocks (a length 0 sequence none),
    and `a`'s lambda is a / that sequence's length.
    """
    if scale is not None:
        scale = float(scale)
        if not 0.0 < scale < math.inf:  # NaN fails too
            raise ValueError("blasst.attention: scale must be finite and > 0, "
                             "got %r" % scale)
    if sparsity is None:
        if return_stats:
            raise ValueError("blasst.attention: return_stats needs a "
                             "sparsity (a dense kernel skips nothing)")
        threshold, kind, lambda_max = None, 0, 1.0
    elif isinstance(sparsity, Sparsity):
        kind = 1 if sparsity.kind == "a" else 2
        lambda_max = sparsity.lambda_max
        threshold = None
    else:
        raise TypeError("blasst.attention: sparsity must be None or a "
                        "blasst.Sparsity, got %s" % type(sparsity).__name__)
    causal, return_lse, return_stats = \
        bool(causal), bool(return_lse), bool(return_stats)
    # (Before the fast path's key, which would fail to hash a list.)
    if not isinstance(layout, str) or \
            not (phase is None or isinstance(phase, str)):
        raise TypeError("blasst.attention: layout must be 'bshd' or 'bhsd' "
                        "and phase None, 'prefill' or 'decode', got "
                        "layout=%r, phase=%r" % (layout, phase))
    if seq_kv is not None:
        seq_kv = operator.index(seq_kv)
        if seq_kv < 1:
            raise ValueError("blasst.attention: seq_kv must be >= 1, got %d"
                             % seq_kv)
    if _direct(q, k, v):
        if sparsity is not None:
            threshold = sparsity._tensor()
        key = _fast_key(q, k, v, causal, layout, sparsity, return_lse,
                        return_stats, phase,
                        None if kv_lengths is None and block_table is None
                        and seq_kv is None else
                        _cache_key(seq_kv, kv_lengths, block_table))
        plans = _plans()
        p = plans.get(key)
        if p is None or p.generation != _kernels.generation:
            if threshold is not None:  # the error that names the Sparsity
                sparsity.log2_threshold(q.device)
            p = _get_plan(plans, key, q, k, v, causal, layout, threshold,
                          kind, lambda_max, return_lse, return_stats,
                          kv_lengths, block_table, seq_kv, phase)
        o, lse, stats = _run(p, q, k, v,
                             p.default_scale if scale is None else scale,
                             threshold, return_lse, return_stats,
                             kv_lengths, block_table)
    else:
        if scale is None:
            scale = 1.0 / math.sqrt(q.shape[-1]) \
                if isinstance(q, torch.Tensor) and q.dim() == 4 else 1.0
        if sparsity is not None:
            threshold = sparsity.log2_threshold(q.device)
        if phase not in _PHASES:
            raise ValueError("blasst.attention: phase must be None, "
                             "'prefill' or 'decode', got %r" % (phase,))
        if kv_lengths is None and block_table is None and seq_kv is None \
                and phase is None:  # the op's schema as before
            o, lse, stats = _op(q, k, v, causal, scale, layout, threshold,
                                kind, lambda_max, return_lse, return_stats)
        else:
            o, lse, stats = _op(q, k, v, causal, scale, layout, threshold,
                                kind, lambda_max, return_lse, return_stats,
                                kv_lengths, block_table, seq_kv or 0,
                                phase or "")
    if not return_lse and not return_stats:
        return o
    out = (o,)
    if return_lse:
        out += (lse,)
    if return_stats:
        out += (stats,)
    return out
