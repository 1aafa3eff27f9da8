"""Run by test_torch.FastPathTest in a subprocess: the op's eager fast path
and its per-call plans, on the CPU, with libblasst.so launching through the
fake driver ($BLASST_LIBCUDA: launches recorded, nothing run) and CPU tensors
standing in for CUDA ones. Prints OK at the end; any failure raises.
"""

import ctypes
import operator
import os

import torch

import blasst
from blasst import _capi, _kernels, ops

ops._DEVICE_TYPE = "cpu"
ops._device_index = lambda device: 0
ops._raw_stream = lambda index: 0
ops._on_device = operator.attrgetter("is_cpu")

fake = ctypes.CDLL(os.environ["BLASST_LIBCUDA"])
assert _capi.device_count() == 1, _capi.device_count()


def launches():
    return fake.blasstFakeLaunches()


def plans():
    return ops._plans()


def bf16(*shape):
    return torch.zeros(*shape, dtype=torch.bfloat16)


def expect(exc, text, fn):
    try:
        fn()
    except exc as e:
        assert text in str(e), (text, str(e))
        return
    raise AssertionError("no %s (%s)" % (exc.__name__, text))


# The fast path launches without the dispatcher, one plan per signature.
q = bf16(1, 128, 4, 64)
n = launches()
o = blasst.attention(q, q, q)
assert launches() == n + 1 and o.shape == q.shape and o.dtype == q.dtype
assert len(plans()) == 1
p = next(iter(plans().values()))
assert tuple(p.args.q_strides) == (128 * 256, 256, 64)
blasst.attention(q, q, q)
assert launches() == n + 2 and len(plans()) == 1

# A hit still sees a changed shape, stride, dtype, layout or flag.
qt = bf16(1, 4, 128, 64)  # the same shape read as [B, H, S, D]
blasst.attention(qt, qt, qt, layout="bhsd")
assert len(plans()) == 2
strided = bf16(1, 128, 8, 64)[:, :, :4]  # a head-sliced view
blasst.attention(strided, strided, strided)
assert len(plans()) == 3
p = plans()[ops._fast_key(strided, strided, strided, False, "bshd", None,
                          False, False)]
assert tuple(p.args.q_strides) == (128 * 512, 512, 64), tuple(p.args.q_strides)
expect(TypeError, "dtype torch.float32",
       lambda: blasst.attention(q.float(), q.float(), q.float()))
expect(ValueError, "multiple of 8",
       lambda: blasst.attention(*[bf16(1, 128, 4, 68)[..., :64]] * 3))
expect(ValueError, "16-byte aligned",  # same shape and strides, odd offset
       lambda: blasst.attention(*[bf16(1 * 128 * 4 * 64 + 4)[4:].view(
           1, 128, 4, 64)] * 3))
o, lse = blasst.attention(q, q, q, return_lse=True)
assert lse.shape == (1, 4, 128) and lse.dtype == torch.float32
# The outputs (torch.empty_strided with the plan's strides) are contiguous.
assert o.is_contiguous() and lse.is_contiguous()
# BLASST: the threshold tensor is read at every call; the launch zeroes the
# counters (one memset of the stats tensor's 8 words on the stream: the fake
# driver records it and writes nothing).
sp = blasst.Sparsity(a=1000, device="cpu")
memsets = fake.blasstFakeMemsets()
o, stats = blasst.attention(q, q, q, sparsity=sp, return_stats=True)
assert stats.shape == (1, 4, 2) and stats.dtype == torch.int64
assert stats.is_contiguous()
assert fake.blasstFakeMemsets() == memsets + 1
ptr, value, words = ctypes.c_uint64(), ctypes.c_uint(), ctypes.c_size_t()
fake.blasstFakeLastMemset(ctypes.byref(ptr), ctypes.byref(value),
                          ctypes.byref(words))
assert (ptr.value, value.value, words.value) == (stats.data_ptr(), 0, 16), \
    (ptr.value, value.value, words.value)
# One plan per Sparsity object (its threshold tensor is fixed); another
# Sparsity, the default scale and an explicit one reuse what they can.
n_plans = len(plans())
blasst.attention(q, q, q, sparsity=sp, return_stats=True, scale=0.5)
assert len(plans()) == n_plans
assert plans()[ops._fast_key(q, q, q, False, "bshd", sp, False, True)] \
    .default_scale == 0.125
blasst.attention(q, q, q, sparsity=blasst.Sparsity(a=5, device="cpu"),
                 return_stats=True)
assert len(plans()) == n_plans + 1
expect(ValueError, "create it with Sparsity(..., device=q.device)",
       lambda: blasst.attention(q, q, q, sparsity=blasst.Sparsity(
           a=1, device="meta")))
# clear_cache() drops the plans' kernels.
key = ops._fast_key(q, q, q, False, "bshd", None, False, False)
old = plans()[key].kernel
_kernels.clear_cache()
blasst.attention(q, q, q)
assert plans()[key].kernel is not old
assert plans()[key].kernel is _kernels.get_kernel(old.spec, 0)

# What must not take the fast path goes through the op (the dispatcher).
calls = []
real = ops._op


def spy(*args):
    calls.append(1)
    return real(*args)


ops._op = spy
try:
    blasst.attention(q, q, q)
    assert not calls
    qg = q.clone().requires_grad_()
    blasst.attention(qg, q, q)
    assert len(calls) == 1
    with torch.no_grad():
        blasst.attention(qg, q, q)
    assert len(calls) == 1
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode() as mode:
        fq = mode.from_tensor(q)
        assert blasst.attention(fq, fq, fq).shape == q.shape
    assert len(calls) == 2
    with torch.profiler.profile():
        blasst.attention(q, q, q)
    assert len(calls) == 3
finally:
    ops._op = real

# torch.compile traces the op although eager calls skip the dispatcher.
graphs = []


def backend(gm, example_inputs):
    graphs.append(gm)
    return gm.forward


def f(q, k, v):
    return blasst.attention(q, k, v, causal=True) * 2


n = launches()
out = torch.compile(f, fullgraph=True, backend=backend)(q, q, q)
assert len(graphs) == 1 and "blasst.attention" in graphs[0].code, \
    graphs[0].code
assert launches() == n + 1 and out.shape == q.shape
# O's strides in the plan are those of the O each call allocates (extent-1
# dimensions included).
for shape, layout in (((2, 64, 1, 64), "bshd"), ((2, 1, 64, 64), "bhsd"),
                      ((1, 64, 4, 128), "bshd")):
    x = bf16(*shape)
    o = blasst.attention(x, x, x, layout=layout)
    p = plans()[ops._fast_key(x, x, x, False, layout, None, False, False)]
    assert tuple(p.args.o_strides) == ops._bshd_strides(o, layout)[0], shape
print("OK")
