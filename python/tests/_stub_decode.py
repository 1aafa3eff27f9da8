"""Run by test_torch.DecodeFastPathTest in a subprocess: the op's decode
path on the CPU, with libblasst.so launching through the fake driver
($BLASST_LIBCUDA: one sm_90 GPU with 132 SMs; launches recorded, nothing
run) and CPU tensors standing in for CUDA ones: the phase picked from the
shapes, the decode specs, the split-KV workspace (sized by the C API, cached
per layout and stream, not per call), per-sequence lengths and paged caches
(the pointers the launch passes), and the errors. Prints OK at the end; any
failure raises.
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
ops._capturing = lambda: False

fake = ctypes.CDLL(os.environ["BLASST_LIBCUDA"])
assert _capi.device_count() == 1, _capi.device_count()


def launches():
    return fake.blasstFakeLaunches()


def last_kv_cache():
    out = (ctypes.c_uint64 * 3)()
    fake.blasstFakeLastKVCache(out)
    return tuple(out)


def plans():
    return ops._plans()


def plan_of(q, k, v, **kw):
    """The plan the last call with these tensors used (the fast path's)."""
    cache = ops._cache_key(kw.get("seq_kv"), kw.get("kv_lengths"),
                           kw.get("block_table"))
    if all(kw.get(n) is None for n in ("seq_kv", "kv_lengths",
                                       "block_table")):
        cache = None
    return plans()[ops._fast_key(
        q, k, v, bool(kw.get("causal", False)), kw.get("layout", "bshd"),
        kw.get("sparsity"), bool(kw.get("return_lse", False)),
        bool(kw.get("return_stats", False)), kw.get("phase"), cache)]


def bf16(*shape):
    return torch.zeros(*shape, dtype=torch.bfloat16)


def i32(*values):
    return torch.tensor(values, dtype=torch.int32)


def expect(exc, text, fn):
    try:
        fn()
    except exc as e:
        assert text in str(e), (text, str(e))
        return
    raise AssertionError("no %s (%s)" % (exc.__name__, text))


# The phase from the shapes: 1..8 new tokens against a longer K/V is decode
# (batch 2 x 2 kv heads x 1 tile: 132 SMs / 4 = 33 splits, at most blocks/2
# = 32 of the 64 blocks of 64 keys at head_dim 128), with a workspace.
q = bf16(2, 4, 8, 128)
k = bf16(2, 4096, 2, 128)
n = launches()
o = blasst.attention(q, k, k, causal=True)
# Two launches a call over a contiguous cache: the split grid and its merge
# kernel (the split model's pick for 4-8 new tokens a sequence; the decode
# calls below have 4, with 4 q heads a kv head). Over the paged cache below
# the runtime merges in the kernel: one launch.
PER_CALL = 2
assert launches() == n + PER_CALL and o.shape == q.shape, launches() - n
p = plan_of(q, k, k, causal=True)
assert p.decode and "phase=decode" in p.kernel.spec, p.kernel.spec
# The launch asks again for the split count the workspace was sized for
# (the C API's answer with the bytes; 0 only where lean CTAs are taken).
assert p.args.kv_splits == 32, p.args.kv_splits
bytes_, splits = p.kernel.workspace_bytes(p.args)
assert splits == 32 and p.args.workspace_bytes == bytes_ > 0, (bytes_, splits)
tiles = 2 * 2 * 1
assert bytes_ == tiles * 32 * 64 * 129 * 4 + tiles * 4, bytes_
ws = p.ws[0]
assert ws.numel() == bytes_ and ws.dtype == torch.uint8 and \
    int(ws.count_nonzero()) == 0
assert p.args.workspace == ws.data_ptr()
# Under CUDA graph capture a launch takes a fresh workspace (zeroed in the
# graph), never the eager one of the same stream nor another capture's.
captured, real_workspace = [], ops._workspace
ops._workspace = lambda p_, s_: captured.append(real_workspace(p_, s_)) or \
    captured[-1]  # kept alive, as a graph's pool keeps them
ops._capturing = lambda: True
try:
    blasst.attention(q, k, k, causal=True)
    first = p.args.workspace
    blasst.attention(q, k, k, causal=True)
    assert len(captured) == 2 and first == captured[0].data_ptr()
    assert p.args.workspace == captured[1].data_ptr() != first
    assert ws.data_ptr() not in (first, p.args.workspace)
finally:
    ops._capturing = lambda: False
    ops._workspace = real_workspace
assert p.ws[0] is ws  # eager calls keep theirs
# The workspace is the plan's (per stream), not allocated per call; another
# plan of the same layout (here: the same shapes in another phase key)
# shares it.
blasst.attention(q, k, k, causal=True)
assert plan_of(q, k, k, causal=True).ws[0] is ws
blasst.attention(q, k, k, causal=True, phase="decode")
assert plan_of(q, k, k, causal=True, phase="decode").ws[0] is ws
# Another stream, another workspace.
ops._raw_stream = lambda index: 77
blasst.attention(q, k, k, causal=True)
assert plan_of(q, k, k, causal=True).ws[77] is not ws
ops._raw_stream = lambda index: 0
# phase="prefill" and shapes the decode kernels do not take stay prefill.
blasst.attention(q, k, k, causal=True, phase="prefill")
pp = plan_of(q, k, k, causal=True, phase="prefill")
assert not pp.decode and "decode" not in pp.kernel.spec and pp.ws is None
for qs, ks in (((2, 16, 8, 128), (2, 4096, 2, 128)),   # Sq > 8
               ((2, 4, 8, 128), (2, 4, 2, 128))):       # K/V not longer
    qq, kk = bf16(*qs), bf16(*ks)
    blasst.attention(qq, kk, kk)
    assert not plan_of(qq, kk, kk).decode, (qs, ks)
# 3 q per kv head (not a power of two): decode, 21 tokens per tile.
qq, kk = bf16(1, 1, 12, 128), bf16(1, 512, 4, 128)
blasst.attention(qq, kk, kk)
assert plan_of(qq, kk, kk).decode
expect(ValueError, "1 to 8 new tokens",
       lambda: blasst.attention(bf16(1, 9, 8, 128), k[:1], k[:1],
                                phase="decode"))
expect(ValueError, "phase must be",
       lambda: blasst.attention(q, k, k, phase="generate"))
# A short KV: one split, no workspace (the kernel writes O directly).
ks = bf16(2, 100, 2, 128)
blasst.attention(q, ks, ks)
ps = plan_of(q, ks, ks)
assert ps.decode and ps.args.kv_splits == 1 and ps.ws is None
# One token, MQA, [B, H, S, D], LSE.
q1, k1 = bf16(3, 8, 1, 64), bf16(3, 1, 1000, 64)
o, lse = blasst.attention(q1, k1, k1, layout="bhsd", return_lse=True)
assert o.shape == q1.shape and lse.shape == (3, 8, 1)
assert plan_of(q1, k1, k1, layout="bhsd", return_lse=True).decode

# BLASST decode (contiguous KV): the threshold and the statistics.
sp = blasst.Sparsity(a=1000, device="cpu")
o, st = blasst.attention(q, k, k, sparsity=sp, return_stats=True)
pb = plan_of(q, k, k, sparsity=sp, return_stats=True)
assert pb.decode and "sparsity=blasst" in pb.kernel.spec
assert st.shape == (2, 8, 2)

# Per-sequence lengths: int32 [B] on q's device, passed as parameter 15;
# seq_kv (their bound) defaults to K/V's extent.
lens = i32(4096, 0)
blasst.attention(q, k, k, causal=True, kv_lengths=lens)
pl = plan_of(q, k, k, causal=True, kv_lengths=lens)
assert "kv_lengths=per_sequence" in pl.kernel.spec
assert pl.args.seq_kv == 4096
assert last_kv_cache() == (lens.data_ptr(), 0, 0), last_kv_cache()
# ... launched by the kernel's lean entry (one or two waves of the split
# grid: 4 tiles x 32 splits = 128 lean CTAs sharing the lengths' blocks),
# with a workspace of two slots per CTA.
grid, blk, dep = (ctypes.c_uint * 3)(), ctypes.c_uint(), ctypes.c_int()
fake.blasstFakeLaunchShape(0, grid, ctypes.byref(blk), ctypes.byref(dep))
assert tuple(grid) == (128, 1, 1), tuple(grid)
assert pl.args.kv_splits == 0 and pl.args.workspace_bytes == \
    2 * 128 * 64 * 129 * 4 + 4 * 4, pl.args.workspace_bytes
lens2 = i32(7, 1)  # new data, same plan, new pointer
blasst.attention(q, k, k, causal=True, kv_lengths=lens2)
assert plan_of(q, k, k, causal=True, kv_lengths=lens2) is pl
assert last_kv_cache()[0] == lens2.data_ptr()
# A smaller bound (the keys past it are not read).
blasst.attention(q, k, k, kv_lengths=lens2, seq_kv=1000)
assert plan_of(q, k, k, kv_lengths=lens2, seq_kv=1000).args.seq_kv == 1000
expect(ValueError, "seq_kv 5000 is not in [1, 4096]",
       lambda: blasst.attention(q, k, k, seq_kv=5000))
expect(TypeError, "must be torch.int32",
       lambda: blasst.attention(q, k, k, kv_lengths=lens.long()))
expect(ValueError, "it must be [batch] = (2,)",
       lambda: blasst.attention(q, k, k, kv_lengths=i32(1, 2, 3)))
expect(ValueError, "kv_lengths is on meta",
       lambda: blasst.attention(q, k, k, kv_lengths=torch.empty(
           2, dtype=torch.int32, device="meta")))
expect(TypeError, "int32 [batch]",
       lambda: blasst.attention(q, k, k, kv_lengths=[1, 2]))
expect(ValueError, "decode arguments",
       lambda: blasst.attention(q, k, k, kv_lengths=lens, phase="prefill"))
expect(ValueError, "1 to 8 new tokens",
       lambda: blasst.attention(bf16(2, 9, 8, 128), k, k, kv_lengths=lens))

# Paged: k and v are pools [num_pages, page, Hkv, D], the table int32
# [B, max_pages]; seq_kv defaults to max_pages x page.
pool = bf16(11, 64, 2, 128)
table = torch.randperm(11)[:10].to(torch.int32).view(2, 5)
blasst.attention(q, pool, pool, block_table=table, kv_lengths=lens2)
pg = plan_of(q, pool, pool, block_table=table, kv_lengths=lens2)
assert "kv_cache=paged:page=64" in pg.kernel.spec and \
    "kv_lengths=per_sequence" in pg.kernel.spec, pg.kernel.spec
assert (pg.args.seq_kv, pg.args.max_pages, pg.args.num_pages) == (320, 5, 11)
assert tuple(pg.args.k_strides) == (64 * 256, 256, 128)
assert last_kv_cache() == (lens2.data_ptr(), table.data_ptr(), 5)
# Uniform length (no kv_lengths), given by seq_kv; [num_pages, H, page, D].
poolt = bf16(11, 2, 16, 128)
table16 = torch.arange(22, dtype=torch.int32).view(2, 11) % 11
blasst.attention(q, poolt, poolt, block_table=table16, seq_kv=150,
                 layout="bhsd", phase="decode")
pt = plan_of(q, poolt, poolt, block_table=table16, seq_kv=150,
             layout="bhsd", phase="decode")
assert "kv_cache=paged:page=16" in pt.kernel.spec and \
    "per_sequence" not in pt.kernel.spec
assert last_kv_cache() == (0, table16.data_ptr(), 11)
assert tuple(pt.args.k_strides) == (16 * 256, 128, 16 * 128), \
    tuple(pt.args.k_strides)
expect(ValueError, "not a power of two from 16 to 256",
       lambda: blasst.attention(q, bf16(4, 48, 2, 128), bf16(4, 48, 2, 128),
                                block_table=table))
expect(ValueError, "not a power of two from 16 to 256",
       lambda: blasst.attention(q, bf16(4, 512, 2, 128),
                                bf16(4, 512, 2, 128), block_table=table))
expect(ValueError, "does not fit the block table",
       lambda: blasst.attention(q, pool, pool, block_table=table,
                                seq_kv=321))
expect(ValueError, "[batch, max_pages] = (2, 5)",
       lambda: blasst.attention(q, pool, pool, block_table=table[:1]))
expect(TypeError, "must be torch.int32",
       lambda: blasst.attention(q, pool, pool, block_table=table.long()))
expect(ValueError, "2-D int32",
       lambda: blasst.attention(q, pool, pool, block_table=table.view(-1)))
expect(ValueError, "call .contiguous()",
       lambda: blasst.attention(q, pool, pool,
                                block_table=table.t().contiguous().t()))

# BLASST decode with a KV cache: the spec carries the sparsity and the
# cache; the launch passes the lengths, the table and max_pages as dense
# decode does, the threshold's pointer and the statistics (zeroed first).
def last_pointers():
    """The last launch's O, LSE, stats, threshold and workspace pointers."""
    out = (ctypes.c_uint64 * 5)()
    fake.blasstFakeLastPointers(out)
    return dict(zip(("o", "lse", "stats", "threshold", "workspace"), out))


def launched_dims(param):
    """The global dims of the tensor map the last launch passed as `param`
    (1: K, 2: V)."""
    n = fake.blasstFakeLaunchedMap(param)
    rank, addr = ctypes.c_uint(), ctypes.c_uint64()
    dims, strides = (ctypes.c_uint64 * 5)(), (ctypes.c_uint64 * 4)()
    box, ints = (ctypes.c_uint * 5)(), [ctypes.c_int() for _ in range(3)]
    assert fake.blasstFakeEncode(n, ctypes.byref(rank), ctypes.byref(addr),
                                 dims, strides, box,
                                 *(ctypes.byref(i) for i in ints)), n
    return tuple(dims[:rank.value])


def last_memset():
    ptr, value, words = ctypes.c_uint64(), ctypes.c_uint(), ctypes.c_size_t()
    fake.blasstFakeLastMemset(ctypes.byref(ptr), ctypes.byref(value),
                              ctypes.byref(words))
    return ptr.value, value.value, words.value


fake.blasstFakeLaunchedMap.restype = ctypes.c_uint64
fake.blasstFakeEncode.restype = ctypes.c_bool
target = _capi.device_target(0)


def key_of(p):
    return _capi.kernel_key(p.kernel.spec, target)


uniform = plan_of(q, k, k, sparsity=sp, return_stats=True)  # above
dense_lens = plan_of(q, k, k, causal=True, kv_lengths=lens)
keys = {key_of(uniform)}
# Per-sequence lengths, contiguous K/V (`a`: each sequence's lambda is
# a / its own length, in the kernel).
n = launches()
o, st = blasst.attention(q, k, k, sparsity=sp, return_stats=True,
                         kv_lengths=lens2)
assert launches() == n + PER_CALL and o.shape == q.shape and st.shape == (2, 8, 2)
bl = plan_of(q, k, k, sparsity=sp, return_stats=True, kv_lengths=lens2)
assert bl.decode and bl.ws is not None, (bl.decode, bl.ws)
for part in ("sparsity=blasst:a=", "phase=decode", "kv_lengths=per_sequence",
             "stats=true"):
    assert part in bl.kernel.spec, (part, bl.kernel.spec)
assert "kv_cache" not in bl.kernel.spec, bl.kernel.spec
assert last_kv_cache() == (lens2.data_ptr(), 0, 0), last_kv_cache()
ptrs = last_pointers()
assert ptrs["stats"] == st.data_ptr() and ptrs["o"] == o.data_ptr(), ptrs
assert ptrs["threshold"] == sp.threshold.data_ptr(), ptrs
assert ptrs["workspace"] == bl.ws[0].data_ptr(), ptrs
assert last_memset() == (st.data_ptr(), 0, st.numel() * 2), last_memset()
keys.add(key_of(bl))
# Not the uniform BLASST kernel's key, nor dense's with the lengths.
assert key_of(bl) not in (key_of(uniform), key_of(dense_lens))
# A new threshold is a launch argument: no compile, the same plan.
compiled = _kernels.compile_count()
sp.set(a=7.5)
blasst.attention(q, k, k, sparsity=sp, return_stats=True, kv_lengths=lens2)
assert plan_of(q, k, k, sparsity=sp, return_stats=True,
               kv_lengths=lens2) is bl
assert _kernels.compile_count() == compiled
assert last_pointers()["threshold"] == sp.threshold.data_ptr()

# Paged with per-sequence lengths (page 64), causal, LSE and statistics.
n = launches()
o, lse, st = blasst.attention(q, pool, pool, causal=True, sparsity=sp,
                              return_lse=True, return_stats=True,
                              block_table=table, kv_lengths=lens2)
# One launch: for this paged BLASST kernel the split model merges in the
# kernel (no merge kernel).
assert launches() == n + 1, launches() - n
assert o.shape == q.shape and lse.shape == (2, 8, 4) and st.shape == (2, 8, 2)
bp = plan_of(q, pool, pool, causal=True, sparsity=sp, return_lse=True,
             return_stats=True, block_table=table, kv_lengths=lens2)
for part in ("sparsity=blasst:a=", "phase=decode", "kv_lengths=per_sequence",
             "kv_cache=paged:page=64", "causal=true", "lse=true"):
    assert part in bp.kernel.spec, (part, bp.kernel.spec)
assert (bp.args.seq_kv, bp.args.max_pages, bp.args.num_pages) == (320, 5, 11)
assert last_kv_cache() == (lens2.data_ptr(), table.data_ptr(), 5)
ptrs = last_pointers()
assert (ptrs["o"], ptrs["lse"], ptrs["stats"], ptrs["threshold"]) == (
    o.data_ptr(), lse.data_ptr(), st.data_ptr(), sp.threshold.data_ptr())
# The pool's tensor maps: [num_pages, page, Hkv, D] (innermost first).
assert launched_dims(1) == launched_dims(2) == (128, 2, 64, 11), \
    launched_dims(1)
assert last_memset() == (st.data_ptr(), 0, st.numel() * 2)
assert key_of(bp) not in keys and key_of(bp) != key_of(pg)
keys.add(key_of(bp))

# Paged, one length for all (seq_kv), page 16, [num_pages, H, page, D],
# ln_lambda, no statistics: the threshold pointer alone.
sp_ln = blasst.Sparsity(ln_lambda=-3.0, device="cpu")
o = blasst.attention(q, poolt, poolt, block_table=table16, seq_kv=150,
                     layout="bhsd", sparsity=sp_ln)
bt = plan_of(q, poolt, poolt, block_table=table16, seq_kv=150,
             layout="bhsd", sparsity=sp_ln)
assert "sparsity=blasst:ln_lambda" in bt.kernel.spec and \
    "kv_cache=paged:page=16" in bt.kernel.spec and \
    "per_sequence" not in bt.kernel.spec and "stats=false" in \
    bt.kernel.spec, bt.kernel.spec
assert (bt.args.seq_kv, bt.args.max_pages, bt.args.num_pages) == (150, 11, 11)
assert last_kv_cache() == (0, table16.data_ptr(), 11), last_kv_cache()
ptrs = last_pointers()
assert ptrs["stats"] == 0 and ptrs["lse"] == 0 and \
    ptrs["threshold"] == sp_ln.threshold.data_ptr(), ptrs
assert launched_dims(1) == (128, 2, 16, 11), launched_dims(1)
assert key_of(bt) not in keys and key_of(bt) != key_of(pt)
keys.add(key_of(bt))
assert len(keys) == 4, keys

# What BLASST decode with a cache does not take is refused with the
# reason: a prefill phase, more than 8 new tokens, a head ratio the decode
# tile cannot pack, a table too small; statistics need a sparsity.
expect(ValueError, "kv_lengths and block_table are decode arguments",
       lambda: blasst.attention(q, pool, pool, block_table=table,
                                sparsity=sp, phase="prefill"))
expect(ValueError, "1 to 8 new tokens",
       lambda: blasst.attention(bf16(2, 9, 8, 128), k, k, kv_lengths=lens,
                                sparsity=sp))
expect(blasst.BlasstError, "q_heads / kv_heads = 65",
       lambda: blasst.attention(bf16(2, 1, 130, 128), pool, pool,
                                block_table=table, sparsity=sp,
                                kv_lengths=lens))
expect(ValueError, "does not fit the block table",
       lambda: blasst.attention(q, pool, pool, block_table=table,
                                sparsity=sp, seq_kv=321))
expect(ValueError, "return_stats needs a sparsity",
       lambda: blasst.attention(q, pool, pool, block_table=table,
                                return_stats=True))

# Through the dispatcher (requires_grad): the same checks and launch.
calls = []
real = ops._op


def spy(*args):
    calls.append(args)
    return real(*args)


ops._op = spy
try:
    qg = q.clone().requires_grad_()
    n = launches()
    blasst.attention(qg, pool, pool, block_table=table, kv_lengths=lens2)
    # One launch: dense decode over per-sequence lengths takes the lean
    # entry here (its CTAs merge in the kernel).
    assert len(calls) == 1 and launches() == n + 1, launches() - n
    assert last_kv_cache() == (lens2.data_ptr(), table.data_ptr(), 5)
    blasst.attention(qg, k, k)  # the op's schema as before
    assert len(calls[-1]) == 11, len(calls[-1])
    # BLASST with the caches through the op: the same launch.
    n = launches()
    o, st = blasst.attention(qg, pool, pool, sparsity=sp, return_stats=True,
                             block_table=table, kv_lengths=lens2)
    assert len(calls) == 3 and launches() == n + 1 and st.shape == (2, 8, 2)
    assert last_kv_cache() == (lens2.data_ptr(), table.data_ptr(), 5)
    assert last_pointers()["stats"] == st.data_ptr()
finally:
    ops._op = real

# Fake tensors and torch.compile: shapes, and the op in the graph.
from torch._subclasses.fake_tensor import FakeTensorMode
with FakeTensorMode() as mode:
    fq, fp, ft, fl = (mode.from_tensor(t) for t in (q, pool, table, lens2))
    assert blasst.attention(fq, fp, fp, block_table=ft,
                            kv_lengths=fl).shape == q.shape
graphs = []


def backend(gm, example_inputs):
    graphs.append(gm)
    return gm.forward


def f(q, pool, table, lens):
    return blasst.attention(q, pool, pool, block_table=table,
                            kv_lengths=lens) * 2


n = launches()
out = torch.compile(f, fullgraph=True, backend=backend)(q, pool, table, lens2)
assert len(graphs) == 1 and "blasst.attention" in graphs[0].code
assert launches() == n + 1 and out.shape == q.shape  # the lean entry
print("OK")
