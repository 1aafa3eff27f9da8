#!/usr/bin/env python3
"""The Python op on an H200 (run by test/gpu/run-python.sh, which sets the
library and kernel package paths; no LLVM there, so every kernel comes from
the AOT package that test/gpu/build-python.sh builds).

1. correctness: blasst.attention against a float64 reference on fresh
   random inputs, every element checked (outputs poisoned with NaN first,
   NaN fails), over bf16/f16 x head_dim 64/128 x causal or not x MHA/GQA
   (+ MQA) x [B,S,H,D]/[B,H,S,D] x LSE or not, two shapes (one with rows
   that see no key); strided views (no copy) and refused layouts;
2. BLASST: a threshold that skips nothing equals dense; ln_lambda and `a`
   kernels skip on peaked data within the dense tolerance;
3. torch.compile(fullgraph=True) (inductor) gives the eager result;
4. a CUDA graph replayed with a changed threshold: different skip counts, no
   recompile, no re-capture;
5. calibration reaches 50/70/90% (and 70% causal) within +-1%;
6. packages without LLVM: no JIT library, libblasst.so needs no LLVM, a
   missing kernel says how to build it, another ABI is refused;
7. timing beside torch SDPA (2 shapes), and the op's host overhead per call
   over a direct C API launch.

Usage: python3 test/gpu/python_op.py [--out DIR] [--skip-timing]
Exit 0 when every check passed.
"""

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

import blasst
from blasst import _capi, _kernels

FAILS = []
LOG = []


def report(name, ok, **info):
    line = "%s %s %s" % ("PASS" if ok else "FAIL", name,
                         " ".join("%s=%s" % kv for kv in info.items()))
    print(line, flush=True)
    LOG.append(dict(name=name, ok=bool(ok), **{k: str(v) for k, v in
                                               info.items()}))
    if not ok:
        FAILS.append(name)


def to_bshd(t, layout):
    return t if layout == "bshd" else t.transpose(1, 2)


def from_bshd(t, layout):
    return t if layout == "bshd" else t.transpose(1, 2)


def reference(q, k, v, causal, scale, layout):
    """float64 O (q's layout) and LSE [B, H, Sq]; bottom-right causal, rows
    that see no key: O = 0, LSE = -inf."""
    q, k, v = (to_bshd(t, layout).double() for t in (q, k, v))
    B, Sq, Hq, D = q.shape
    Skv, Hkv = k.shape[1], k.shape[2]
    k = k.repeat_interleave(Hq // Hkv, dim=2)
    v = v.repeat_interleave(Hq // Hkv, dim=2)
    s = torch.einsum("bqhd,bkhd->bhqk", q, k) * scale
    if causal:
        i = torch.arange(Sq, device=q.device)[:, None]
        j = torch.arange(Skv, device=q.device)[None, :]
        s = s.masked_fill(~(j <= i + (Skv - Sq)), float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    finite = torch.isfinite(lse)
    p = torch.where(finite[..., None], torch.exp(s - lse[..., None]),
                    torch.zeros_like(s))
    o = torch.einsum("bhqk,bkhd->bqhd", p, v)
    return from_bshd(o, layout), lse


def unit_roundoff(dtype):
    return 2.0 ** -8 if dtype == torch.bfloat16 else 2.0 ** -11


def compare(o, ref, v, lse=None, ref_lse=None):
    """Every element of O (and LSE): finite, within 4u(max|V| + |ref|),
    relative L2 within 1e-2 (bf16) / 5e-3 (f16); LSE within 1e-3, -inf
    exactly where the reference is. Returns (ok, info)."""
    u = unit_roundoff(o.dtype)
    od = o.double()
    nonfinite = int((~torch.isfinite(od)).sum())
    err = (od - ref).abs()
    bound = 4 * u * (v.double().abs().max() + ref.abs())
    over = int((err > bound).sum())
    rel = float(torch.linalg.vector_norm(od - ref) /
                max(float(torch.linalg.vector_norm(ref)), 1e-300))
    rel_max = 1e-2 if o.dtype == torch.bfloat16 else 5e-3
    info = dict(elements=o.numel(), nonfinite=nonfinite, over_bound=over,
                rel_l2="%.2e" % rel, max_abs="%.2e" % float(
                    torch.nan_to_num(err, nan=float("inf")).max()))
    ok = nonfinite == 0 and over == 0 and rel <= rel_max
    if lse is not None:
        fin = torch.isfinite(ref_lse)
        lse_bad = int((~torch.isfinite(lse[fin])).sum())
        lse_err = float((lse[fin].double() - ref_lse[fin]).abs().max()) \
            if fin.any() else 0.0
        masked_bad = int((lse[~fin] != float("-inf")).sum())
        info.update(lse_err="%.2e" % lse_err, lse_nonfinite=lse_bad,
                    lse_masked_bad=masked_bad)
        ok = ok and lse_bad == 0 and lse_err <= 1e-3 and masked_bad == 0
    return ok, info


def poisoned(fn, *shapes_dtypes):
    """Runs fn() after filling and freeing blocks of the shapes the op
    allocates first (O, then LSE), so that their memory starts as NaN.
    Returns (result, whether the poisoned blocks were reused)."""
    blocks = [torch.full(s, float("nan"), dtype=d, device="cuda")
              for s, d in shapes_dtypes]
    ptrs = [b.data_ptr() for b in blocks]
    del blocks
    out = fn()
    outs = out if isinstance(out, tuple) else (out,)
    reused = all(t.data_ptr() == p for t, p in zip(outs, ptrs))
    return out, reused


def rand(shape, dtype, layout):
    B, S, H, D = shape
    t = torch.randn(B, S, H, D, device="cuda", dtype=torch.float32)
    return from_bshd(t, layout).to(dtype).contiguous()  # in its layout


# -------------------------------------------------------------------------
# 1. correctness matrix
# -------------------------------------------------------------------------

def correctness():
    n = reused_all = 0
    shapes = [(2, 300, 517), (1, 517, 300)]  # the second: rows with no key
    heads = [(8, 8), (8, 2)]
    for dtype in (torch.bfloat16, torch.float16):
        for hd in (64, 128):
            for causal in (False, True):
                for hq, hkv in heads:
                    for layout in ("bshd", "bhsd"):
                        for lse in (False, True):
                            for B, Sq, Skv in shapes:
                                ok, reused = one_case(dtype, hd, causal, hq,
                                                      hkv, layout, lse, B, Sq,
                                                      Skv)
                                n += 1
                                reused_all += reused
    # MQA, and one query row per sequence (decode-like), both layouts.
    for layout in ("bshd", "bhsd"):
        one_case(torch.bfloat16, 64, True, 4, 1, layout, False, 2, 300, 517)
        one_case(torch.bfloat16, 128, True, 8, 2, layout, True, 3, 1, 517)
    print("correctness: %d cases, outputs poisoned in %d" % (n, reused_all))


def one_case(dtype, hd, causal, hq, hkv, layout, want_lse, B, Sq, Skv):
    torch.manual_seed(hash((str(dtype), hd, causal, hq, hkv, layout, want_lse,
                            B, Sq, Skv)) % 2 ** 31)
    q = rand((B, Sq, hq, hd), dtype, layout)
    k = rand((B, Skv, hkv, hd), dtype, layout)
    v = rand((B, Skv, hkv, hd), dtype, layout)
    scale = 1.0 / math.sqrt(hd)
    oshape = (B, Sq, hq, hd) if layout == "bshd" else (B, hq, Sq, hd)
    allocs = [(oshape, dtype)] + ([((B, hq, Sq), torch.float32)]
                                  if want_lse else [])
    out, reused = poisoned(lambda: blasst.attention(
        q, k, v, causal=causal, return_lse=want_lse, layout=layout), *allocs)
    torch.cuda.synchronize()
    o, lse = (out if want_lse else (out, None))
    ref, ref_lse = reference(q, k, v, causal, scale, layout)
    ok, info = compare(o, ref, v, lse, ref_lse if want_lse else None)
    ok = ok and tuple(o.shape) == oshape and o.dtype == dtype
    name = "attention %s hd%d %s q%d/kv%d %s%s B%d Sq%d Skv%d" % (
        str(dtype)[6:], hd, "causal" if causal else "full", hq, hkv, layout,
        " lse" if want_lse else "", B, Sq, Skv)
    if not ok or not reused:
        info["poisoned"] = reused
    report(name, ok, **info)
    return ok, reused


def strided_and_refused():
    # q, k, v as views of one fused [B, S, 3, H, D] tensor: strides, no copy.
    B, S, H, D = 2, 384, 8, 128
    qkv = torch.randn(B, S, 3, H, D, device="cuda").to(torch.bfloat16)
    q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
    o = blasst.attention(q, k, v)
    ref, _ = reference(q, k, v, False, 1 / math.sqrt(D), "bshd")
    ok, info = compare(o, ref, v)
    report("fused qkv views (strides %s)" % (q.stride(),), ok, **info)
    # Extent-1 dimensions with arbitrary strides (unsqueeze, expand: 0).
    q1 = torch.randn(300, 8, D, device="cuda").to(torch.bfloat16)[None]
    k1 = torch.randn(517, 8, D, device="cuda").to(torch.bfloat16)[None] \
        .expand(1, -1, -1, -1)
    o1 = blasst.attention(q1, k1, k1, causal=True)
    ref1, _ = reference(q1, k1, k1, True, 1 / math.sqrt(D), "bshd")
    ok, info = compare(o1, ref1, k1)
    report("extent-1 batch with stride %d" % k1.stride(0), ok, **info)
    # Work queued on a side stream runs there.
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        q2 = (q * 1).contiguous()
        o2 = blasst.attention(q2, k, v)
    s.synchronize()
    report("side stream", torch.equal(o2, o))
    # Refused before a launch, with the reason.
    pad = torch.zeros(B, S, H, D + 4, device="cuda", dtype=torch.bfloat16)
    cases = [
        ("head stride not a multiple of 8", lambda: blasst.attention(
            pad[..., :D], k, v), ValueError, "stride"),
        ("float32", lambda: blasst.attention(q.float(), k, v), TypeError,
         "float32"),
        ("head_dim stride", lambda: blasst.attention(
            q.transpose(2, 3).contiguous().transpose(2, 3), k, v), ValueError,
         "head_dim stride"),
        ("misaligned view", lambda: blasst.attention(
            torch.zeros(B * S * H * D + 1, device="cuda",
                        dtype=torch.bfloat16)[1:].view(B, S, H, D), k, v),
         ValueError, "16-byte aligned"),
        ("head_dim 96", lambda: blasst.attention(
            *(torch.zeros(1, 64, 2, 96, device="cuda", dtype=torch.bfloat16),)
            * 3), blasst.BlasstError, "head_dim 96"),
    ]
    for name, fn, exc, text in cases:
        try:
            fn()
            report("refused: " + name, False, error="none raised")
        except exc as e:
            report("refused: " + name, text in str(e), error=str(e)[:160])
        except Exception as e:  # the wrong exception
            report("refused: " + name, False, error=repr(e)[:160])


# -------------------------------------------------------------------------
# 2-5. BLASST: skipping, CUDA graphs, calibration
# -------------------------------------------------------------------------

def dial(B, H, S, D, offsets_log2, dtype=torch.bfloat16, seed=0):
    """[B, S, H, D] q, k, v whose KV block b (128 keys) scores about
    offsets_log2[b, h] (log2 units, [B, H, nblocks]) relative to block 0's
    sink: q = alpha u + noise, k = beta_b u + noise."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    scale = 1.0 / math.sqrt(D)
    u = torch.randn(B, H, D, device="cuda", generator=g)
    u = u / u.norm(dim=-1, keepdim=True)
    alpha = 2.0 * math.sqrt(D)
    beta = offsets_log2 / (scale * alpha * 1.4426950408889634)  # [B, H, n]
    beta = beta.repeat_interleave(128, dim=-1)[..., :S]          # [B, H, S]
    q = alpha * u[:, None] + 0.1 * torch.randn(B, S, H, D, device="cuda",
                                               generator=g)
    k = beta.permute(0, 2, 1)[..., None] * u[:, None] + \
        0.1 * torch.randn(B, S, H, D, device="cuda", generator=g)
    v = torch.randn(B, S, H, D, device="cuda", generator=g)
    return q.to(dtype), k.to(dtype), v.to(dtype)


def offsets(B, H, n, lo, hi, seed=1):
    g = torch.Generator(device="cuda").manual_seed(seed)
    o = lo + (hi - lo) * torch.rand(B, H, n, device="cuda", generator=g)
    o[..., 0] = 4.0  # the sink: block 0 sets the running maximum
    return o


def skipped(stats):
    return int(stats[..., 1].sum()), int(stats[..., 0].sum())


def blasst_checks():
    B, H, S, D = 1, 8, 2048, 128
    q, k, v = dial(B, H, S, D, offsets(B, H, S // 128, -60.0, -5.0))
    ref, _ = reference(q, k, v, False, 1 / math.sqrt(D), "bshd")
    # Nothing skipped: the dense result.
    sp = blasst.Sparsity(a=1e-30)
    o, st = blasst.attention(q, k, v, sparsity=sp, return_stats=True)
    sk, vis = skipped(st)
    ok, info = compare(o, ref, v)
    report("a=1e-30 skips nothing, equals dense", ok and sk == 0 and vis > 0,
           skipped=sk, visited=vis, **info)
    # lambda = e^-20: the blocks scoring below -28.9 (log2) are skipped; what
    # they held is below the output's rounding.
    for sp in (blasst.Sparsity(ln_lambda=-20.0),
               blasst.Sparsity(a=S * math.exp(-20.0))):
        o, st = blasst.attention(q, k, v, sparsity=sp, return_stats=True)
        sk, vis = skipped(st)
        ok, info = compare(o, ref, v)
        report("%r skips on peaked data" % sp, ok and 0 < sk < vis,
               skipped=sk, visited=vis, rate="%.3f" % (sk / max(vis, 1)),
               **info)
    # Causal, with LSE-free stats.
    sp = blasst.Sparsity(a=S * math.exp(-20.0))
    o, st = blasst.attention(q, k, v, causal=True, sparsity=sp,
                             return_stats=True)
    refc, _ = reference(q, k, v, True, 1 / math.sqrt(D), "bshd")
    ok, info = compare(o, refc, v)
    sk, vis = skipped(st)
    report("causal a skips on peaked data", ok and sk > 0, skipped=sk,
           visited=vis, **info)
    return q, k, v, ref


def cuda_graph(q, k, v, ref):
    S = k.shape[1]
    sp = blasst.Sparsity(a=1e-30, device=q.device)
    compiled = _kernels.compile_count()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm up (loads the kernel)
        blasst.attention(q, k, v, sparsity=sp, return_stats=True)
    torch.cuda.current_stream().wait_stream(side)
    loaded = len(_kernels._kernels)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        o, st = blasst.attention(q, k, v, sparsity=sp, return_stats=True)
    counts = []
    for a in (1e-30, S * math.exp(-20.0), 1e-30):
        sp.set(a=a)
        g.replay()
        torch.cuda.synchronize()
        counts.append(skipped(st)[0])
        if a > 1e-30:
            ok, info = compare(o, ref, v)
            report("graph replay at a=%.3g matches the reference" % a, ok,
                   **info)
    report("CUDA graph replays with a changed threshold",
           counts[0] == 0 and counts[1] > 0 and counts[2] == 0
           and len(_kernels._kernels) == loaded
           and _kernels.compile_count() == compiled,
           skipped_per_replay=counts, kernels_loaded=len(_kernels._kernels))


def compiled_op():
    B, S, H, D = 2, 512, 8, 64
    q = torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(B, 2, S, D, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(B, 2, S, D, device="cuda", dtype=torch.bfloat16)

    def f(q, k, v):
        o, lse = blasst.attention(q * 1.0, k, v, causal=True, return_lse=True,
                                  layout="bhsd")
        return o.float() * 2, lse

    eager = f(q, k, v)
    try:
        cf = torch.compile(f, fullgraph=True)
        got = cf(q, k, v)
        torch.cuda.synchronize()
        report("torch.compile(fullgraph=True) equals eager",
               torch.equal(got[0], eager[0]) and torch.equal(got[1], eager[1]))
    except Exception as e:
        report("torch.compile(fullgraph=True) equals eager", False,
               error=repr(e)[:300])


def calibration():
    B, H, S, D = 1, 8, 8192, 128
    q, k, v = dial(B, H, S, D, offsets(B, H, S // 128, -40.0, 0.0, seed=3),
                   seed=4)
    for target, causal in ((0.5, False), (0.7, False), (0.9, False),
                           (0.7, True)):
        t0 = time.perf_counter()
        cal = blasst.calibrate(q, k, v, target_skip=target, causal=causal)
        dt = time.perf_counter() - t0
        # The a it returns reproduces the rate.
        _, st = blasst.attention(q, k, v, causal=causal,
                                 sparsity=blasst.Sparsity(a=float(cal)),
                                 return_stats=True)
        again = blasst.skip_rate(st)
        report("calibrate target %.2f%s" % (target, " causal" if causal
                                             else ""),
               cal.reached and abs(cal.skip - target) <= 0.01
               and abs(again - target) <= 0.01,
               a="%.4g" % cal.a, skip="%.4f" % cal.skip,
               again="%.4f" % again, steps=cal.steps, seconds="%.2f" % dt)


# -------------------------------------------------------------------------
# 6. packages without LLVM
# -------------------------------------------------------------------------

def packages():
    lib = _capi.library_path()
    ldd = subprocess.run(["ldd", lib], capture_output=True, text=True).stdout
    report("libblasst.so needs no LLVM/MLIR", "LLVM" not in ldd and "MLIR"
           not in ldd, lib=lib)
    report("no JIT library here", not _capi.jit_available(),
           why=(_capi._jit_error or "")[:120])
    report("kernels come from packages", bool(_kernels.packages()),
           packages=_kernels.packages())
    q = torch.zeros(1, 64, 6, 64, device="cuda", dtype=torch.bfloat16)
    try:
        blasst.attention(q, q, q)
        report("a kernel not in the package", False, error="none raised")
    except RuntimeError as e:
        report("a kernel not in the package", "python -m blasst.aot build"
               in str(e), error=str(e)[:200])
    # A package of another kernel ABI is refused with the reason.
    src = _kernels.packages()[0]
    d = tempfile.mkdtemp()
    try:
        for f in os.listdir(src):
            shutil.copy(os.path.join(src, f), d)
        m = os.path.join(d, "manifest.txt")
        text = open(m).read().replace("abi_version = %d"
                                      % _capi.kernel_abi_version(),
                                      "abi_version = 1")
        open(m, "w").write(text)
        spec = _kernels.spec_text("bf16", 64, 8, 8, False)
        try:
            _capi.Kernel.from_package(d, spec, None, 0)
            report("a package of another ABI", False, error="none raised")
        except blasst.BlasstError as e:
            report("a package of another ABI",
                   e.status == "BLASST_ERROR_ABI_MISMATCH", error=str(e)[:200])
    finally:
        shutil.rmtree(d)


# -------------------------------------------------------------------------
# 7. timing
# -------------------------------------------------------------------------

def time_ms(fn, iters=20, reps=5):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(True), torch.cuda.Event(True)
        a.record()
        for _ in range(iters):
            fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / iters)
    return statistics.median(times)


def timing(results):
    for B, S, H, D, causal in ((4, 4096, 16, 128, False),
                               (4, 4096, 16, 128, True)):
        q = torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16)
        v = torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16)
        flops = 4 * B * H * S * S * D / (2 if causal else 1)
        t_b = time_ms(lambda: blasst.attention(q, k, v, causal=causal,
                                               layout="bhsd"))
        t_s = time_ms(lambda: F.scaled_dot_product_attention(
            q, k, v, is_causal=causal))
        row = dict(shape="B%d S%d H%d D%d %s" % (B, S, H, D,
                                                  "causal" if causal
                                                  else "full"),
                   blasst_ms="%.3f" % t_b, sdpa_ms="%.3f" % t_s,
                   blasst_tflops="%.0f" % (flops / t_b / 1e9),
                   sdpa_tflops="%.0f" % (flops / t_s / 1e9),
                   ratio="%.3f" % (t_s / t_b))
        results.append(row)
        report("timing " + row["shape"], True, **row)

    # Host overhead: the op against a direct C API launch, small shape.
    q = torch.randn(1, 128, 8, 64, device="cuda", dtype=torch.bfloat16)
    spec = _kernels.spec_text("bf16", 64, 8, 8, False)
    kernel = _kernels.get_kernel(spec, torch.cuda.current_device())
    o = torch.empty_like(q)
    a = _capi.AttentionArgs()
    a.q = a.k = a.v = q.data_ptr()
    a.o = o.data_ptr()
    a.batch, a.seq_q, a.seq_kv, a.q_heads, a.kv_heads, a.head_dim = \
        1, 128, 128, 8, 8, 64
    for s in (a.q_strides, a.k_strides, a.v_strides, a.o_strides):
        s[:] = q.stride()[:3]
    stream = torch.cuda.current_stream().cuda_stream

    def per_call_us(fn, n=2000):
        for _ in range(50):
            fn()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) / n * 1e6

    op = per_call_us(lambda: blasst.attention(q, q, q))
    raw = per_call_us(lambda: kernel.launch(a, stream))
    sdpa = per_call_us(lambda: F.scaled_dot_product_attention(
        q.transpose(1, 2), q.transpose(1, 2), q.transpose(1, 2)))
    row = dict(op_us="%.1f" % op, c_api_launch_us="%.1f" % raw,
               overhead_us="%.1f" % (op - raw), sdpa_us="%.1f" % sdpa)
    results.append(row)
    report("host overhead per call (B1 S128 H8 D64)", True, **row)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", default=None)
    p.add_argument("--skip-timing", action="store_true")
    args = p.parse_args()
    if not torch.cuda.is_available():
        print("SKIPPED: no CUDA device")
        return 2
    print("torch %s, %s, %s, %s" % (torch.__version__,
                                    torch.cuda.get_device_name(),
                                    _capi.version(), _capi.library_path()))
    timings = []
    steps = [("correctness", correctness),
             ("strided and refused", strided_and_refused),
             ("packages", packages), ("compile", compiled_op),
             ("calibration", calibration)]
    for name, fn in steps:
        print("=== %s ===" % name, flush=True)
        try:
            fn()
        except Exception as e:
            import traceback
            traceback.print_exc()
            report(name + " raised", False, error=repr(e)[:300])
    print("=== blasst and CUDA graphs ===", flush=True)
    try:
        cuda_graph(*blasst_checks())
    except Exception as e:
        import traceback
        traceback.print_exc()
        report("blasst raised", False, error=repr(e)[:300])
    if not args.skip_timing:
        print("=== timing ===", flush=True)
        try:
            timing(timings)
        except Exception as e:
            report("timing raised", False, error=repr(e)[:300])
    n = len(LOG)
    print("%d passed, %d failed" % (n - len(FAILS), len(FAILS)))
    if FAILS:
        print("failed: " + "; ".join(FAILS[:20]))
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "python-op.json"), "w") as f:
            json.dump(dict(checks=LOG, timing=timings, failed=FAILS,
                           torch=torch.__version__,
                           device=torch.cuda.get_device_name()), f, indent=1)
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
