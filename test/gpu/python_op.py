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
   over a direct C API launch;
8. decode (phase picked from the shapes): contiguous K/V over head_dim
   64/128 x MHA/GQA/MQA x causal or not x seq_q 1/2/4/8 x both layouts, f16,
   long and short KV; per-sequence lengths (0, 1, ... ; the keys past each
   length large, or NaN past seq_kv) and paged caches (pages 16-256, a
   shuffled table, NaN in the pages no sequence owns), every element against
   float64 with LSE; BLASST decode (nothing skipped = dense with every block
   counted, skipping on peaked data, a CUDA graph with the workspace
   captured replayed with changed thresholds); BLASST decode with the KV
   caches the same way (per-sequence lengths incl. 0 and 1, paged pools of
   pages 16/32/64/256 and one uniform length, every sequence's visited
   blocks counted, paged skipping exactly what contiguous skips, a paged
   graph replayed with the threshold and lengths changed); the workspace
   cached (no
   allocation per call) and a graph replayed with lengths changed in place;
   the refusals; decode timing beside SDPA.

Usage: python3 test/gpu/python_op.py [--out DIR] [--skip-timing]
       [--decode-only]
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
# 8. decode: contiguous, per-sequence lengths, paged, BLASST decode
# -------------------------------------------------------------------------

def decode_reference(q, k, v, causal, scale, layout, lengths=None):
    """float64 O and LSE of decode: each sequence b attends its first
    lengths[b] keys (all of them without lengths); causal bottom-right per
    sequence (token i sees keys j <= i + len - Sq)."""
    if lengths is None:
        return reference(q, k, v, causal, scale, layout)
    outs, lses = [], []
    for b, n in enumerate(lengths):
        kb = to_bshd(k, layout)[b:b + 1, :n]
        vb = to_bshd(v, layout)[b:b + 1, :n]
        o, lse = reference(q[b:b + 1], from_bshd(kb, layout),
                           from_bshd(vb, layout), causal, scale, layout)
        outs.append(o)
        lses.append(lse)
    return torch.cat(outs), torch.cat(lses)


def decode_plan(q, k, v, **kw):
    """The plan the fast path used for this call (to read the kernel)."""
    from blasst import ops
    cache = ops._cache_key(kw.get("seq_kv"), kw.get("kv_lengths"),
                           kw.get("block_table"))
    if all(kw.get(n) is None for n in ("seq_kv", "kv_lengths",
                                       "block_table")):
        cache = None
    return ops._plans().get(ops._fast_key(
        q, k, v, bool(kw.get("causal", False)), kw.get("layout", "bshd"),
        kw.get("sparsity"), bool(kw.get("return_lse", False)),
        bool(kw.get("return_stats", False)), kw.get("phase"), cache))


def decode_case(name, q, k, v, ref_k, ref_v, lengths=None, **kw):
    """Runs blasst.attention(q, k, v, **kw) (LSE on) with poisoned outputs
    and checks every element against the float64 reference over ref_k /
    ref_v ([B, Skv, Hkv, D] in the layout, contiguous per sequence)."""
    layout = kw.get("layout", "bshd")
    causal = kw.get("causal", False)
    D = q.shape[-1]
    B, Sq, Hq = (q.shape[0], q.shape[1], q.shape[2]) if layout == "bshd" \
        else (q.shape[0], q.shape[2], q.shape[1])
    oshape = tuple(q.shape)
    (o, lse), reused = poisoned(
        lambda: blasst.attention(q, k, v, return_lse=True, **kw),
        (oshape, q.dtype), ((B, Hq, Sq), torch.float32))
    torch.cuda.synchronize()
    ref, ref_lse = decode_reference(q, ref_k, ref_v, causal,
                                    1.0 / math.sqrt(D), layout, lengths)
    # The error bound's max|V| over the keys each sequence sees (the ones
    # past its length hold 100 or NaN).
    seen = ref_v if lengths is None else torch.cat(
        [to_bshd(ref_v, layout)[b, :n].flatten()
         for b, n in enumerate(lengths)] + [ref_v.new_zeros(1)])
    ok, info = compare(o, ref, seen, lse, ref_lse)
    p = decode_plan(q, k, v, return_lse=True, **kw)
    decode = p is not None and p.decode
    info.update(decode=decode, splits=p.args.kv_splits if p else "?",
                poisoned=reused)
    report("decode " + name, ok and decode and tuple(o.shape) == oshape,
           **info)
    return ok


def decode_contiguous():
    n = 0
    for hd in (64, 128):
        for hq, hkv in ((8, 8), (32, 8), (8, 1)):
            for causal in (False, True):
                for sq in (1, 2, 4, 8):
                    layout = "bshd" if sq % 4 else "bhsd"
                    torch.manual_seed(n)
                    B, Skv = 2, 3000
                    q = rand((B, sq, hq, hd), torch.bfloat16, layout)
                    k = rand((B, Skv, hkv, hd), torch.bfloat16, layout)
                    v = rand((B, Skv, hkv, hd), torch.bfloat16, layout)
                    decode_case("bf16 hd%d q%d/kv%d %s sq%d %s B%d Skv%d" % (
                        hd, hq, hkv, "causal" if causal else "full", sq,
                        layout, B, Skv), q, k, v, k, v, causal=causal,
                        layout=layout)
                    n += 1
    # f16; a long KV (many splits); a short one (one split, no workspace);
    # KV as long as the block; no LSE (what transformers' decode calls).
    for dtype, B, sq, Skv in ((torch.float16, 2, 8, 3000),
                              (torch.float16, 3, 1, 517),
                              (torch.bfloat16, 1, 4, 32768),
                              (torch.bfloat16, 4, 2, 100),
                              (torch.bfloat16, 4, 1, 64)):
        q = rand((B, sq, 32, 128), dtype, "bshd")
        k = rand((B, Skv, 8, 128), dtype, "bshd")
        v = rand((B, Skv, 8, 128), dtype, "bshd")
        decode_case("%s hd128 q32/kv8 causal sq%d B%d Skv%d" % (
            str(dtype)[6:], sq, B, Skv), q, k, v, k, v, causal=True)
    q = rand((4, 1, 32, 128), torch.bfloat16, "bhsd")
    k = rand((4, 2000, 8, 128), torch.bfloat16, "bhsd")
    o = blasst.attention(q, k, k, layout="bhsd")
    ref, _ = reference(q, k, k, False, 1 / math.sqrt(128), "bhsd")
    ok, info = compare(o, ref, k)
    p = decode_plan(q, k, k, layout="bhsd")
    report("decode without LSE (bhsd, 1 token)", ok and p.decode, **info)
    # phase="prefill" still runs the prefill kernel on the same shapes.
    q = rand((3, 1, 8, 128), torch.bfloat16, "bshd")
    k = rand((3, 517, 2, 128), torch.bfloat16, "bshd")
    o_p = blasst.attention(q, k, k, causal=True, return_lse=True,
                           phase="prefill")
    p = decode_plan(q, k, k, causal=True, return_lse=True, phase="prefill")
    ref, ref_lse = reference(q, k, k, True, 1 / math.sqrt(128), "bshd")
    ok, info = compare(o_p[0], ref, k, o_p[1], ref_lse)
    report("phase='prefill' on decode shapes", ok and not p.decode, **info)


def decode_lengths():
    """Per-sequence lengths (0 and 1 included); the keys past each length
    hold large finite values (they must be masked out, not read as keys)."""
    lens = [0, 1, 5, 3000, 777, 2999]
    B, Skv = len(lens), 3000
    for hd, hq, hkv, causal, sq, layout in (
            (128, 32, 8, True, 1, "bshd"), (128, 32, 8, True, 4, "bshd"),
            (128, 32, 8, True, 8, "bhsd"), (128, 32, 8, False, 2, "bshd"),
            (128, 32, 8, False, 8, "bhsd"), (64, 8, 1, True, 8, "bshd"),
            (64, 8, 1, True, 1, "bhsd")):
        torch.manual_seed(hd * sq + causal)
        q = rand((B, sq, hq, hd), torch.bfloat16, layout)
        k = to_bshd(rand((B, Skv, hkv, hd), torch.bfloat16, layout), layout)
        v = to_bshd(rand((B, Skv, hkv, hd), torch.bfloat16, layout), layout)
        for b, n in enumerate(lens):
            k[b, n:] = 100.0
            v[b, n:] = 100.0
        k, v = from_bshd(k, layout), from_bshd(v, layout)
        lengths = torch.tensor(lens, dtype=torch.int32, device="cuda")
        decode_case("lengths %s bf16 hd%d q%d/kv%d %s sq%d %s" % (
            lens, hd, hq, hkv, "causal" if causal else "full", sq, layout),
            q, k, v, k, v, lengths=lens, causal=causal, layout=layout,
            kv_lengths=lengths)
    # A bound below K/V's extent (seq_kv): the keys past it are not read.
    q = rand((2, 2, 32, 128), torch.bfloat16, "bshd")
    k = rand((2, 4096, 8, 128), torch.bfloat16, "bshd")
    k[:, 1500:] = float("nan")
    lengths = torch.tensor([1500, 900], dtype=torch.int32, device="cuda")
    decode_case("lengths [1500, 900] seq_kv=1500 (NaN past it)", q, k, k,
                k, k, lengths=[1500, 900], causal=True, kv_lengths=lengths,
                seq_kv=1500)


def make_paged(k, v, lens, page, layout, seed):
    """Page pools and a shuffled block table for contiguous [B, S, H, D]
    k, v (bshd) and their lengths: each sequence's pages in a random order
    in the pool, spare pages filled with NaN (never read), the table's
    unused entries naming them; returns (k_pool, v_pool, table) with the
    pools in `layout`."""
    B, S, H, D = k.shape
    max_pages = (S + page - 1) // page
    need = [(n + page - 1) // page for n in lens]
    spare = B
    num = sum(need) + spare
    g = torch.Generator().manual_seed(seed)
    perm = torch.randperm(num, generator=g).tolist()
    kp = torch.full((num, page, H, D), float("nan"), dtype=k.dtype,
                    device=k.device)
    vp = kp.clone()
    table = torch.empty(B, max_pages, dtype=torch.int32)
    spares = perm[sum(need):]
    nxt = 0
    for b in range(B):
        for j in range(max_pages):
            if j < need[b]:
                pid = perm[nxt]
                nxt += 1
                # The sequence's keys; past its length (in its last page)
                # large finite values, which must be masked out.
                rows = min(page, lens[b] - j * page)
                kp[pid, :rows] = k[b, j * page:j * page + rows]
                vp[pid, :rows] = v[b, j * page:j * page + rows]
                kp[pid, rows:] = 100.0
                vp[pid, rows:] = 100.0
            else:
                pid = spares[(b + j) % len(spares)]
            table[b, j] = pid
    if layout == "bhsd":
        kp = kp.transpose(1, 2).contiguous()
        vp = vp.transpose(1, 2).contiguous()
    return kp, vp, table.cuda()


def decode_paged():
    lens = [0, 1, 5, 3000, 777, 2999]
    B, Skv = len(lens), 3000
    for page, hd, hq, hkv, causal, sq, layout, per_seq in (
            (16, 128, 32, 8, True, 4, "bshd", True),
            (64, 128, 32, 8, True, 1, "bshd", True),
            (64, 128, 32, 8, True, 8, "bhsd", True),
            (256, 128, 32, 8, True, 2, "bshd", True),
            (64, 128, 8, 8, False, 1, "bshd", False),
            (32, 64, 8, 1, True, 8, "bshd", True)):
        torch.manual_seed(page + sq)
        lens_b = lens if per_seq else [Skv] * B
        q = rand((B, sq, hq, hd), torch.bfloat16, layout)
        k = rand((B, Skv, hkv, hd), torch.bfloat16, "bshd")
        v = rand((B, Skv, hkv, hd), torch.bfloat16, "bshd")
        kp, vp, table = make_paged(k, v, lens_b, page, layout, page * 7 + sq)
        kw = dict(causal=causal, layout=layout, block_table=table)
        if per_seq:
            kw["kv_lengths"] = torch.tensor(lens, dtype=torch.int32,
                                            device="cuda")
        else:
            kw["seq_kv"] = Skv
        decode_case("paged page %d %s bf16 hd%d q%d/kv%d %s sq%d %s" % (
            page, "lengths %s" % lens if per_seq else "uniform %d" % Skv, hd,
            hq, hkv, "causal" if causal else "full", sq, layout),
            q, kp, vp, from_bshd(k, layout), from_bshd(v, layout),
            lengths=lens_b if per_seq else None, **kw)


def decode_dial(B, Hq, Hkv, Sq, S, D, lo, hi, seed=0):
    """Decode inputs whose KV block b (64 keys) scores about offsets[b]
    (log2) against block 0 (the sink), for every token of every q head of
    a KV head: q = alpha u + noise, k = beta_b u + noise (u per KV head)."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    scale = 1.0 / math.sqrt(D)
    u = torch.randn(B, Hkv, D, device="cuda", generator=g)
    u = u / u.norm(dim=-1, keepdim=True)
    alpha = 2.0 * math.sqrt(D)
    off = offsets(B, Hkv, (S + 63) // 64, lo, hi, seed=seed + 1)
    beta = (off / (scale * alpha * 1.4426950408889634)) \
        .repeat_interleave(64, dim=-1)[..., :S]
    uq = u.repeat_interleave(Hq // Hkv, dim=1)
    q = alpha * uq[:, None] + 0.1 * torch.randn(B, Sq, Hq, D, device="cuda",
                                                generator=g)
    k = beta.permute(0, 2, 1)[..., None] * u[:, None] + \
        0.1 * torch.randn(B, S, Hkv, D, device="cuda", generator=g)
    v = torch.randn(B, S, Hkv, D, device="cuda", generator=g)
    return (t.to(torch.bfloat16) for t in (q, k, v))


def decode_blasst():
    """BLASST decode (contiguous KV): a threshold that skips nothing equals
    dense and visits every block; a threshold on peaked data skips and stays
    within the dense tolerance; the statistics count every tile's blocks;
    a CUDA graph (the workspace captured) replays with a changed
    threshold."""
    first = True
    for hd, hq, hkv, causal, sq, B, S in ((128, 32, 8, False, 1, 2, 16384),
                                          (128, 32, 8, True, 4, 2, 16384),
                                          (128, 32, 8, False, 8, 1, 32768),
                                          (64, 8, 1, False, 2, 4, 8192)):
        q, k, v = decode_dial(B, hq, hkv, sq, S, hd, -60.0, -5.0,
                              seed=hd + sq)
        ref, _ = reference(q, k, v, causal, 1 / math.sqrt(hd), "bshd")
        name = "hd%d q%d/kv%d %s sq%d B%d S%d" % (
            hd, hq, hkv, "causal" if causal else "full", sq, B, S)
        sp = blasst.Sparsity(a=1e-30)
        o, st = blasst.attention(q, k, v, causal=causal, sparsity=sp,
                                 return_stats=True)
        p = decode_plan(q, k, v, causal=causal, sparsity=sp,
                        return_stats=True)
        sk, vis = skipped(st)
        bn = p.kernel.attrs["block_n"]
        G = hq // hkv
        tiles = -(-sq // (64 // G))
        want = B * hq * tiles * (-(-S // bn))
        ok, info = compare(o, ref, v)
        report("blasst decode a=1e-30 skips nothing %s" % name,
               ok and p.decode and sk == 0 and
               (vis == want if not causal else 0 < vis <= want),
               skipped=sk, visited=vis, expected_visited=want,
               splits=p.args.kv_splits, **info)
        # ln_lambda kernels: the first shape only.
        for sp in ((blasst.Sparsity(ln_lambda=-20.0),) if first else ()) + \
                (blasst.Sparsity(a=S * math.exp(-20.0)),):
            o, st = blasst.attention(q, k, v, causal=causal, sparsity=sp,
                                     return_stats=True)
            sk, vis = skipped(st)
            ok, info = compare(o, ref, v)
            report("blasst decode %r %s" % (sp, name), ok and 0 < sk < vis,
                   skipped=sk, visited=vis, rate="%.3f" % (sk / max(vis, 1)),
                   **info)
        first = False
    # A CUDA graph of BLASST decode (its split-KV workspace is allocated in
    # the capture) replayed with a changed threshold, then eager again.
    q, k, v = decode_dial(2, 32, 8, 1, 16384, 128, -60.0, -5.0, seed=11)
    ref, _ = reference(q, k, v, False, 1 / math.sqrt(128), "bshd")
    sp = blasst.Sparsity(a=1e-30)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        blasst.attention(q, k, v, sparsity=sp, return_stats=True)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        o, st = blasst.attention(q, k, v, sparsity=sp, return_stats=True)
    counts, oks = [], []
    for a in (1e-30, 16384 * math.exp(-20.0), 1e-30, 16384 * math.exp(-20.0)):
        sp.set(a=a)
        g.replay()
        torch.cuda.synchronize()
        counts.append(skipped(st)[0])
        oks.append(compare(o, ref, v)[0])
        # Eager calls in between (the eager workspace, another layout).
        blasst.attention(q, k, v, sparsity=sp, return_stats=True)
        blasst.attention(q[:1], k[:1], v[:1], sparsity=sp,
                         return_stats=True)
    report("blasst decode CUDA graph replays with a changed threshold",
           all(oks) and counts[0] == 0 and counts[1] > 0 and counts[2] == 0
           and counts[3] == counts[1], skipped_per_replay=counts)


def blasst_cache_inputs(B, hq, hkv, sq, S, hd, lens, seed, layout="bshd"):
    """decode_dial's peaked inputs (contiguous [B, S, Hkv, D], bshd) with
    the keys and values past each sequence's length set to 100 (they must
    be masked before the vote: unmasked, they would dominate every score);
    q in `layout`."""
    q, k, v = decode_dial(B, hq, hkv, sq, S, hd, -60.0, -5.0, seed=seed)
    for b, n in enumerate(lens):
        k[b, n:] = 100.0
        v[b, n:] = 100.0
    return from_bshd(q, layout).contiguous(), k, v


def blasst_cache_case(name, q, k, v, lens, page, per_seq, causal, layout,
                      sparsities):
    """BLASST decode with a KV cache, every element of O and LSE against
    the float64 reference of the sequences' lengths: a=1e-30 skips nothing
    (the dense result; every sequence's heads count the blocks of its own
    length, a length-0 sequence none), then thresholds that skip on the
    peaked data stay within the dense tolerance. k, v: contiguous bshd;
    page 0: contiguous K/V with kv_lengths, else a paged pool (make_paged,
    shuffled, NaN in the spare pages) with kv_lengths (per_seq) or seq_kv.
    Returns (stats, plan) of each threshold."""
    B, S, hkv, hd = k.shape
    sq, hq = (q.shape[1], q.shape[2]) if layout == "bshd" else \
        (q.shape[2], q.shape[1])
    ref_k, ref_v = from_bshd(k, layout), from_bshd(v, layout)
    kw = dict(causal=causal, layout=layout, return_lse=True,
              return_stats=True)
    if per_seq:
        kw["kv_lengths"] = torch.tensor(lens, dtype=torch.int32,
                                        device="cuda")
    if page:
        kk, vv, table = make_paged(k, v, lens, page, layout, page + sq)
        kw["block_table"] = table
        if not per_seq:
            kw["seq_kv"] = S
    else:
        kk, vv = ref_k.contiguous(), ref_v.contiguous()
    ref, ref_lse = decode_reference(q, ref_k, ref_v, causal,
                                    1.0 / math.sqrt(hd), layout,
                                    lens if per_seq else None)
    seen = torch.cat([v[b, :n].flatten() for b, n in enumerate(lens)] +
                     [v.new_zeros(1)])
    out = []
    for i, sp in enumerate([blasst.Sparsity(a=1e-30)] + list(sparsities)):
        (o, lse, st), reused = poisoned(
            lambda: blasst.attention(q, kk, vv, sparsity=sp, **kw),
            (tuple(q.shape), q.dtype), ((B, hq, sq), torch.float32))
        torch.cuda.synchronize()
        p = decode_plan(q, kk, vv, sparsity=sp, **kw)
        ok, info = compare(o, ref, seen, lse, ref_lse)
        sk, vis = skipped(st)
        info.update(skipped=sk, visited=vis, splits=p.args.kv_splits,
                    poisoned=reused)
        if i == 0:
            # Nothing skipped: the blocks of each sequence's length, per q
            # head (tiles of 64 packed rows); causal rows may stop earlier.
            bn = p.kernel.attrs["block_n"]
            tiles = -(-sq // (64 // (hq // hkv)))
            want = [hq * tiles * (-(-n // bn)) for n in lens]
            got = [int(st[b, :, 0].sum()) for b in range(B)]
            counts = all((g == w) if not causal else (0 < g <= w or w == 0 ==
                                                      g)
                         for g, w in zip(got, want))
            empty = all(int(st[b].abs().sum()) == 0
                        for b, n in enumerate(lens) if n == 0)
            info.update(visited_per_seq=got, expected=want)
            report("blasst decode %s a=1e-30 skips nothing" % name,
                   ok and p.decode and sk == 0 and counts and empty, **info)
        else:
            report("blasst decode %s %r" % (name, sp), ok and p.decode and
                   0 < sk < vis, rate="%.3f" % (sk / max(vis, 1)), **info)
        out.append((st.clone(), p))
    return out


def decode_blasst_cache():
    """BLASST decode with the KV caches (issue 20): per-sequence lengths
    (0 and 1 included) over contiguous K/V and paged caches (pages 16, 32,
    64, 256, shuffled tables; one uniform length through seq_kv), checked
    as BLASST decode without caches is (decode_blasst); a paged cache skips
    exactly the blocks contiguous K/V skip; a CUDA graph replayed with the
    threshold and the lengths changed in place."""
    S = 8192
    lens = [0, 1, 5, 8192, 3333, 6000]
    B = len(lens)
    a_skip = S * math.exp(-20.0)
    for page, per_seq, hd, hq, hkv, causal, sq, layout in (
            (0, True, 128, 32, 8, False, 1, "bshd"),
            (0, True, 128, 32, 8, True, 4, "bhsd"),
            (16, True, 128, 32, 8, True, 4, "bshd"),
            (64, True, 128, 32, 8, False, 1, "bshd"),
            (64, True, 128, 32, 8, True, 8, "bhsd"),
            (256, True, 128, 32, 8, False, 2, "bshd"),
            (32, True, 64, 8, 1, True, 2, "bshd")):
        q, k, v = blasst_cache_inputs(B, hq, hkv, sq, S, hd, lens,
                                      seed=page + sq + hd, layout=layout)
        sps = [blasst.Sparsity(a=a_skip)]
        if page == 64 and not causal:  # the ln_lambda kernel: one case
            sps.append(blasst.Sparsity(ln_lambda=-20.0))
        blasst_cache_case("%s lengths %s hd%d q%d/kv%d %s sq%d %s" % (
            "paged page %d" % page if page else "contiguous", lens, hd, hq,
            hkv, "causal" if causal else "full", sq, layout),
            q, k, v, lens, page, per_seq, causal, layout, sps)
    # One length for all, paged (seq_kv): its skip counts equal the
    # contiguous kernel's on the same data (the same splits and blocks).
    q, k, v = blasst_cache_inputs(2, 32, 8, 1, S, 128, [S, S], seed=5)
    sp = blasst.Sparsity(a=a_skip)
    st_paged, pp = blasst_cache_case(
        "paged page 64 uniform %d hd128 q32/kv8 full sq1" % S, q, k, v,
        [S, S], 64, False, False, "bshd", [sp])[1]
    _, st = blasst.attention(q, k, v, sparsity=sp, return_stats=True)
    p = decode_plan(q, k, v, sparsity=sp, return_stats=True)
    # Comparable only with the same splits and blocks (then the votes see
    # the same scores in the same order): the case is built so that they
    # are, and fails if they are not (a comparison that did not happen).
    same = (p.args.kv_splits, p.kernel.attrs["block_n"]) == \
        (pp.args.kv_splits, pp.kernel.attrs["block_n"])
    report("blasst decode paged skips what contiguous skips",
           same and torch.equal(st.cpu(), st_paged.cpu()),
           compared=same, splits=(p.args.kv_splits, pp.args.kv_splits),
           block_n=(p.kernel.attrs["block_n"], pp.kernel.attrs["block_n"]),
           skipped=(skipped(st)[0], skipped(st_paged)[0]))

    # A CUDA graph of paged BLASST decode with per-sequence lengths,
    # replayed with the threshold and the lengths changed in place.
    q, k, v = blasst_cache_inputs(B, 32, 8, 1, S, 128, [S] * B, seed=9)
    kp, vp, table = make_paged(k, v, [S] * B, 64, "bshd", 3)
    ln = torch.tensor(lens, dtype=torch.int32, device="cuda")
    sp = blasst.Sparsity(a=1e-30)
    kw = dict(sparsity=sp, return_lse=True, return_stats=True,
              block_table=table, kv_lengths=ln)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        blasst.attention(q, kp, vp, **kw)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        o, lse, st = blasst.attention(q, kp, vp, **kw)
    counts, oks = [], []
    for a, new in ((1e-30, lens), (a_skip, lens), (a_skip, [S, 17, 0, 4000,
                                                           1, 8000]),
                   (1e-30, [S, 17, 0, 4000, 1, 8000])):
        sp.set(a=a)
        ln.copy_(torch.tensor(new, dtype=torch.int32))
        g.replay()
        torch.cuda.synchronize()
        ref, ref_lse = decode_reference(q, k, v, False, 1 / math.sqrt(128),
                                        "bshd", new)
        ok, info = compare(o, ref, v, lse, ref_lse)
        oks.append(ok)
        counts.append(skipped(st))
        if not ok:
            report("blasst decode graph a=%g lengths %s" % (a, new), ok,
                   **info)
    report("blasst decode paged CUDA graph replays with the threshold and "
           "the lengths changed in place",
           all(oks) and counts[0][0] == 0 and counts[1][0] > 0 and
           counts[3][0] == 0 and counts[0][1] != counts[3][1],
           skipped_visited_per_replay=counts)


def decode_workspace_and_graph():
    """The workspace is cached (no allocation per call); a dense decode graph
    with per-sequence lengths changed in place between replays."""
    from blasst import ops
    q = rand((4, 1, 32, 128), torch.bfloat16, "bshd")
    k = rand((4, 8192, 8, 128), torch.bfloat16, "bshd")
    v = rand((4, 8192, 8, 128), torch.bfloat16, "bshd")
    blasst.attention(q, k, v)
    p = decode_plan(q, k, v)
    torch.cuda.synchronize()
    before = torch.cuda.memory_stats().get("allocation.all.allocated", 0)
    for _ in range(50):
        blasst.attention(q, k, v)
    torch.cuda.synchronize()
    after = torch.cuda.memory_stats().get("allocation.all.allocated", 0)
    report("decode workspace cached (50 calls: only O allocated)",
           p.ws is not None and after - before == 50,
           allocations=after - before, workspace_bytes=p.args.workspace_bytes,
           splits=p.args.kv_splits, cached=len(ops._workspaces))
    lens = torch.tensor([8192, 1, 4000, 0], dtype=torch.int32, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        blasst.attention(q, k, v, kv_lengths=lens, return_lse=True)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        o, lse = blasst.attention(q, k, v, kv_lengths=lens, return_lse=True)
    oks = []
    for new in ([8192, 1, 4000, 0], [17, 8000, 0, 64], [8192] * 4):
        lens.copy_(torch.tensor(new, dtype=torch.int32))
        g.replay()
        torch.cuda.synchronize()
        ref, ref_lse = decode_reference(q, k, v, False, 1 / math.sqrt(128),
                                        "bshd", new)
        ok, info = compare(o, ref, v, lse, ref_lse)
        oks.append(ok)
        if not ok:
            report("decode graph lengths %s" % new, ok, **info)
    report("decode CUDA graph replays with lengths changed in place",
           all(oks), replays=len(oks))


def decode_refused():
    q = torch.zeros(2, 4, 32, 128, device="cuda", dtype=torch.bfloat16)
    pool = torch.zeros(9, 64, 8, 128, device="cuda", dtype=torch.bfloat16)
    table = torch.zeros(2, 5, dtype=torch.int32, device="cuda")
    lens = torch.zeros(2, dtype=torch.int32, device="cuda")
    sp = blasst.Sparsity(a=1000)
    cases = [
        ("page 48", lambda: blasst.attention(q, pool[:, :48], pool[:, :48],
                                             block_table=table), ValueError,
         "not a power of two from 16 to 256"),
        ("table too small", lambda: blasst.attention(
            q, pool, pool, block_table=table, seq_kv=321), ValueError,
         "does not fit the block table"),
        ("lengths int64", lambda: blasst.attention(
            q, pool, pool, block_table=table, kv_lengths=lens.long()),
         TypeError, "torch.int32"),
        ("lengths on the CPU", lambda: blasst.attention(
            q, pool, pool, block_table=table, kv_lengths=lens.cpu()),
         ValueError, "kv_lengths is on cpu"),
        ("lengths [B + 1]", lambda: blasst.attention(
            q, pool, pool, block_table=table,
            kv_lengths=torch.zeros(3, dtype=torch.int32, device="cuda")),
         ValueError, "[batch] = (2,)"),
        ("BLASST with a paged cache in prefill", lambda: blasst.attention(
            q, pool, pool, block_table=table, sparsity=sp, phase="prefill"),
         ValueError, "kv_lengths and block_table are decode arguments"),
        ("9 new tokens with a cache", lambda: blasst.attention(
            torch.zeros(2, 9, 32, 128, device="cuda", dtype=torch.bfloat16),
            pool, pool, block_table=table), ValueError, "1 to 8 new tokens"),
    ]
    for name, fn, exc, text in cases:
        try:
            fn()
            report("decode refused: " + name, False, error="none raised")
        except exc as e:
            report("decode refused: " + name, text in str(e),
                   error=str(e)[:160])
        except Exception as e:
            report("decode refused: " + name, False, error=repr(e)[:160])


def decode_timing(results):
    """Decode beside SDPA (one token, GQA 32/8, bf16), and the op's host
    time per decode call."""
    for B, S in ((1, 32768), (8, 8192), (32, 4096)):
        q = torch.randn(B, 1, 32, 128, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(B, S, 8, 128, device="cuda", dtype=torch.bfloat16)
        v = torch.randn_like(k)
        qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))
        t_b = time_ms(lambda: blasst.attention(q, k, v))
        # SDPA with GQA: enable_gqa (PyTorch 2.5+), else K/V repeated.
        try:
            F.scaled_dot_product_attention(qt, kt, vt, enable_gqa=True)
            t_s = time_ms(lambda: F.scaled_dot_product_attention(
                qt, kt, vt, enable_gqa=True))
        except TypeError:
            kr, vr = (t.repeat_interleave(4, dim=1) for t in (kt, vt))
            t_s = time_ms(lambda: F.scaled_dot_product_attention(qt, kr, vr))
        gbs = 2 * k.numel() * 2 / (t_b * 1e-3) / 1e9
        row = dict(shape="decode B%d Skv%d 32/8 hd128" % (B, S),
                   blasst_ms="%.4f" % t_b, sdpa_ms="%.4f" % t_s,
                   blasst_kv_gbs="%.0f" % gbs, ratio="%.3f" % (t_s / t_b))
        results.append(row)
        report("timing " + row["shape"], True, **row)


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
    p.add_argument("--decode-only", action="store_true",
                   help="only the decode checks (8) and decode timing")
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
    if args.decode_only:
        steps = []
    for name, fn in steps:
        print("=== %s ===" % name, flush=True)
        try:
            fn()
        except Exception as e:
            import traceback
            traceback.print_exc()
            report(name + " raised", False, error=repr(e)[:300])
    if not args.decode_only:
        print("=== blasst and CUDA graphs ===", flush=True)
        try:
            cuda_graph(*blasst_checks())
        except Exception as e:
            import traceback
            traceback.print_exc()
            report("blasst raised", False, error=repr(e)[:300])
    for name, fn in (("decode contiguous", decode_contiguous),
                     ("decode lengths", decode_lengths),
                     ("decode paged", decode_paged),
                     ("decode blasst", decode_blasst),
                     ("decode blasst with KV caches", decode_blasst_cache),
                     ("decode workspace and graph",
                      decode_workspace_and_graph),
                     ("decode refused", decode_refused)):
        print("=== %s ===" % name, flush=True)
        try:
            fn()
        except Exception as e:
            import traceback
            traceback.print_exc()
            report(name + " raised", False, error=repr(e)[:300])
    if not args.skip_timing:
        print("=== timing ===", flush=True)
        try:
            if not args.decode_only:
                timing(timings)
            decode_timing(timings)
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
