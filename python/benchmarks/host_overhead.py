#!/usr/bin/env python3
"""Host overhead per call of blasst.attention against a direct C API launch
of the same kernel, in one process.

On a GPU (the bar: the op costs at most 15 us per call more than the C API
launch through ctypes):

    python3 python/benchmarks/host_overhead.py [--json FILE]

prints, for a small shape (B1 S128 H8 D64, bf16: the kernel takes a few us,
so the host side is what is timed) and a BLASST one with statistics in
SDPA's layout:
  c_api      blasst_kernel_launch through ctypes, arguments prepared once
  op         blasst.attention (the eager fast path, see docs/python.md)
  dispatch   torch.ops.blasst.attention (the custom op through the dispatcher:
             what torch.compile'd code and autograd / fake-tensor users run)
  graph      blasst.attention captured 100 times in a CUDA graph, replayed
             (the GPU time per kernel: the floor a host path cannot beat)
  sdpa       torch.nn.functional.scaled_dot_product_attention, for scale
each as "host" (us per call of a burst of 200 calls, no synchronization:
what the host spends) and "sync" (us per call over 2000 calls and a final
synchronize: the host or the GPU, whichever is slower). The bar's number,
overhead_us, is measured apart from these: op and C API bursts of 200 calls
alternate for --rounds rounds (the order flips each round) and the median of
the per-round differences is reported with its quartiles, so that drifts of
the host hit both sides alike; bd_* time the pieces of the op's host path
one by one (torch.empty of the outputs, the plan key, the eager-path test,
the stream query).

Without a GPU, --stub measures the same Python path on the CPU: libblasst.so
is pointed at the fake driver (build/runtime/libblasst-fake-cuda.so, a
libcuda that records launches and runs nothing), the tensors are CPU tensors
standing in for CUDA ones, the current stream is 0; --profile adds a
cProfile of the op. Needs libblasst_jit.so (the kernel is compiled, not
run):

    BLASST_LIBRARY=build/lib/libblasst.so PYTHONPATH=python \\
      python3 python/benchmarks/host_overhead.py --stub \\
      --fake-driver build/runtime/libblasst-fake-cuda.so [--profile]
"""

import argparse
import json
import os
import statistics
import sys
import time


def per_call_us(fn, n, sync=None, reps=7, burst=False):
    """Median over reps of the us per call of n calls."""
    for _ in range(min(n, 100)):
        fn()
    if sync:
        sync()
    times = []
    for _ in range(reps):
        if sync:
            sync()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        if sync and not burst:
            sync()
        times.append((time.perf_counter() - t0) / n * 1e6)
    if sync:
        sync()
    return statistics.median(times)


def paired_overhead_us(op, base, n, rounds, sync):
    """Median and quartiles over `rounds` of (op - base) us per call, each
    timed as a burst of n calls without synchronization (host time), the
    two bursts of a round back to back in alternating order."""
    for _ in range(100):
        op()
        base()
    sync()
    diffs, ops, bases = [], [], []
    for r in range(rounds):
        t = {}
        for which, f in ((("op", op), ("base", base)) if r % 2 == 0
                         else (("base", base), ("op", op))):
            sync()
            t0 = time.perf_counter()
            for _ in range(n):
                f()
            t[which] = (time.perf_counter() - t0) / n * 1e6
        sync()
        diffs.append(t["op"] - t["base"])
        ops.append(t["op"])
        bases.append(t["base"])
    q = statistics.quantiles(diffs, n=4)
    return {"overhead_us": statistics.median(diffs),
            "overhead_q1_us": q[0], "overhead_q3_us": q[2],
            "op_paired_us": statistics.median(ops),
            "c_api_paired_us": statistics.median(bases),
            "op_min_us": min(ops), "c_api_min_us": min(bases),
            "overhead_of_mins_us": min(ops) - min(bases)}


def breakdown_us(torch, blasst, q, k, v, kw, sp, stats, causal, layout):
    """The pieces of the op's host path, each timed alone (best of 7
    repetitions of 2000 calls, us per call)."""
    import timeit
    from blasst import ops
    th = None if sp is None else sp._tensor()
    kind = 0 if sp is None else 1
    o_shape = tuple(q.shape)
    o_strides = torch.empty(o_shape, device="meta").stride()
    dev = q.device
    rs = stats is not None
    pieces = {
        "bd_empty_o_us": lambda: torch.empty(o_shape, dtype=q.dtype,
                                             device=dev),
        "bd_empty_stats_us": lambda: torch.empty((1, q.shape[1], 2),
                                                 dtype=torch.int64,
                                                 device=dev),
        "bd_empty_o_index_us": lambda: torch.empty(o_shape, dtype=q.dtype,
                                                   device=dev.index or 0),
        "bd_new_empty_o_us": lambda: q.new_empty(o_shape),
        "bd_empty_strided_o_us": lambda: torch.empty_strided(
            o_shape, o_strides, dtype=q.dtype, device=dev),
        "bd_fast_key_us": (lambda: ops._fast_key(
            q, k, v, causal, layout, sp, False, rs))
        if hasattr(ops, "_fast_key") else (lambda: None),
        "bd_key_us": lambda: ops._key(q, k, v, causal, layout, th, kind, 1.0,
                                      False, rs),
        "bd_direct_us": lambda: ops._direct(q, k, v),
        "bd_raw_stream_us": lambda: ops._raw_stream(dev.index or 0),
        "bd_data_ptr_x3_us": lambda: (q.data_ptr(), k.data_ptr(),
                                      v.data_ptr()),
    }
    out = {}
    for name, f in pieces.items():
        out[name] = min(timeit.repeat(f, number=2000, repeat=7)) / 2000 * 1e6
    torch.cuda.synchronize()
    return out


def c_api_args(torch, blasst, q, k, v, o, spec, device, threshold=None,
               stats=None, decode=False):
    """The prepared blasst_attention_args of q/k/v/o in [B, S, H, D] and a
    launch through the C API (ctypes, nothing per call but the call)."""
    from blasst import _capi, _kernels
    kernel = _kernels.get_kernel(spec, device)
    a = _capi.AttentionArgs()
    a.q, a.k, a.v, a.o = q.data_ptr(), k.data_ptr(), v.data_ptr(), \
        o.data_ptr()
    B, S, Hq, D = q.shape
    a.batch, a.seq_q, a.seq_kv = B, S, k.shape[1]
    a.q_heads, a.kv_heads, a.head_dim = Hq, k.shape[2], D
    a.q_strides[:] = q.stride()[:3]
    a.k_strides[:] = k.stride()[:3]
    a.v_strides[:] = v.stride()[:3]
    a.o_strides[:] = o.stride()[:3]
    a.softmax_scale = D ** -0.5
    if threshold is not None:
        a.threshold_source = _capi.THRESHOLD_DEVICE
        a.log2_threshold_ptr = threshold.data_ptr()
    if stats is not None:
        # As the op does: the launch zeroes the counters (one memset).
        a.stats = stats.data_ptr()
        a.flags = _capi.LAUNCH_ZERO_STATS
    if decode:
        # Decode: the split-KV workspace, allocated once (as the op keeps
        # its own per plan and stream), and the kv_splits that asks for
        # the launch it was sized for again (0 for lean CTAs).
        nbytes, splits = kernel.workspace_bytes(a)
        a.kv_splits = splits
        if nbytes:
            c_api_args.workspaces.append(torch.zeros(
                nbytes, dtype=torch.uint8, device=q.device))
            a.workspace = c_api_args.workspaces[-1].data_ptr()
            a.workspace_bytes = nbytes
    return kernel, a


c_api_args.workspaces = []  # kept alive for the launches


def stub_main(args):
    if args.fake_driver:
        os.environ["BLASST_LIBCUDA"] = os.path.abspath(args.fake_driver)
    if not os.environ.get("BLASST_LIBCUDA"):
        sys.exit("--stub needs --fake-driver (or BLASST_LIBCUDA)")
    import torch
    import blasst
    from blasst import _capi, _kernels, ops
    ops._DEVICE_TYPE = "cpu"
    ops._device_index = lambda device: 0
    ops._raw_stream = lambda index: 0
    ops._on_device = __import__("operator").attrgetter("is_cpu")
    print("torch %s, %s (fake driver: %d device, %s)" % (
        torch.__version__, _capi.version(), _capi.device_count(),
        _capi.device_target(0)))
    rows = []
    q = torch.zeros(1, 128, 8, 64, dtype=torch.bfloat16)
    o = torch.empty_like(q)
    kernel, a = c_api_args(torch, blasst, q, q, q, o,
                           _kernels.spec_text("bf16", 64, 8, 8, False), 0)
    fn, h, ref = _capi.lib().blasst_kernel_launch, kernel._h, \
        __import__("ctypes").byref(a)
    n = args.n
    rows.append(("C API launch (ctypes, fake driver)",
                 per_call_us(lambda: fn(h, ref, 0), n)))
    rows.append(("_capi.Kernel.launch", per_call_us(
        lambda: kernel.launch(a, 0), n)))
    rows.append(("ops._launch (no dispatch)", per_call_us(
        lambda: ops._launch(q, q, q, False, 0.125, "bshd", None, 0, 1.0,
                            False, False), n)))
    rows.append(("torch.ops.blasst.attention", per_call_us(
        lambda: torch.ops.blasst.attention(q, q, q, False, 0.125, "bshd",
                                           None, 0, 1.0, False, False), n)))
    rows.append(("blasst.attention", per_call_us(
        lambda: blasst.attention(q, q, q), n)))
    sp = blasst.Sparsity(a=1000, device="cpu")
    qg = torch.zeros(1, 128, 8, 64, dtype=torch.bfloat16).transpose(1, 2)
    kg = torch.zeros(1, 128, 2, 64, dtype=torch.bfloat16).transpose(1, 2)
    rows.append(("blasst.attention GQA bhsd BLASST+stats", per_call_us(
        lambda: blasst.attention(qg, kg, kg, layout="bhsd", sparsity=sp,
                                 causal=True, return_stats=True), n)))
    rows.append(("  of which torch.empty x3", per_call_us(
        lambda: (torch.empty((1, 128, 8, 64), dtype=torch.bfloat16),
                 torch.empty((0,), dtype=torch.float32),
                 torch.empty((0,), dtype=torch.int64)), n)))
    for name, us in rows:
        print("%-42s %8.2f us" % (name, us))
    if args.profile:
        import cProfile
        import pstats
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(n):
            blasst.attention(q, q, q)
        pr.disable()
        pstats.Stats(pr).sort_stats("tottime").print_stats(15)
    return rows


def gpu_main(args):
    import torch
    import torch.nn.functional as F
    import blasst
    from blasst import _capi, _kernels
    if not torch.cuda.is_available():
        print("SKIPPED: no CUDA device")
        return 2
    dev = torch.cuda.current_device()
    sync = torch.cuda.synchronize
    print("torch %s, %s, %s" % (torch.__version__,
                                torch.cuda.get_device_name(),
                                _capi.version()))
    results = []
    # Kernels in test/gpu/build-python.sh's and build-perplexity.sh's
    # packages (the GPU machine has no compiler).
    # The decode case (one token against 4096 keys, the decode kernel that
    # phase=None picks, with its split-KV workspace) is in build-python.sh's
    # package too.
    cases = [("B1 S128 H8 D64 dense", 8, 8, 64, False, None, False),
             ("B1 S128 H8 D128 causal BLASST bhsd", 8, 8, 128, True,
              1000.0, False),
             ("B1 S128 H8 D128 causal BLASST+stats bhsd", 8, 8, 128, True,
              1000.0, True),
             ("decode B8 Sq1 Skv4096 H32/8 D128 dense", 32, 8, 128, False,
              None, False)]
    for name, hq, hkv, hd, causal, a_value, want_stats in cases:
        decode = name.startswith("decode")
        B, Sq, Skv = (8, 1, 4096) if decode else (1, 128, 128)
        q = torch.randn(B, Sq, hq, hd, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(B, Skv, hkv, hd, device="cuda", dtype=torch.bfloat16)
        v = torch.randn_like(k)
        o = torch.empty_like(q)
        sp = stats = None
        if a_value is not None:
            sp = blasst.Sparsity(a=a_value)
        if want_stats:
            stats = torch.zeros(B, hq, 2, dtype=torch.int64, device="cuda")
        spec = _kernels.spec_text("bf16", hd, hq, hkv, causal,
                                  stats=stats is not None,
                                  sparsity="a" if sp is not None else None,
                                  phase="decode" if decode else "prefill")
        kernel, a = c_api_args(torch, blasst, q, k, v, o, spec, dev,
                               None if sp is None else sp.threshold, stats,
                               decode)
        fn = _capi.lib().blasst_kernel_launch
        h, ref = kernel._h, __import__("ctypes").byref(a)
        raw_stream = torch.cuda.current_stream().cuda_stream

        def c_api():
            fn(h, ref, raw_stream)
        # The op in SDPA's layout for the BLASST case (strides, no copy).
        layout = "bhsd" if sp is not None else "bshd"
        qo, ko, vo = ((t.transpose(1, 2) for t in (q, k, v))
                      if layout == "bhsd" else (q, k, v))
        kw = dict(causal=causal, layout=layout)
        if sp is not None:
            kw.update(sparsity=sp, return_stats=want_stats)

        def op():
            blasst.attention(qo, ko, vo, **kw)
        threshold = None if sp is None else sp.threshold
        kind = 0 if sp is None else 1

        def dispatch():
            torch.ops.blasst.attention(qo, ko, vo, causal, hd ** -0.5, layout,
                                       threshold, kind, 1.0, False,
                                       want_stats)
        qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))

        def sdpa():
            F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal,
                                           enable_gqa=hkv != hq)
        row = {"case": name}
        # The bar's number: the op and the C API launch timed in alternating
        # bursts (the order flips every round), so drifts of the host
        # (clocks, other processes) hit both alike; the overhead is the
        # median over rounds of (op burst - C API burst) per call.
        paired = paired_overhead_us(op, c_api, 200, args.rounds, sync)
        row.update(paired)
        for label, f in (("c_api", c_api), ("op", op),
                         ("dispatch", dispatch), ("sdpa", sdpa)):
            row[label + "_host_us"] = per_call_us(f, 200, sync, burst=True)
            row[label + "_sync_us"] = per_call_us(f, 2000, sync)
        # Where the op's host time goes (each piece alone, us per call).
        row.update(breakdown_us(torch, blasst, qo, ko, vo, kw, sp, stats,
                                causal, layout))
        # 100 op calls in one CUDA graph (a side stream, as capture needs).
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                op()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(100):
                op()
        row["graph_us"] = per_call_us(g.replay, 20, sync) / 100
        row["overhead_sync_us"] = row["op_sync_us"] - row["c_api_sync_us"]
        results.append(row)
        print(name)
        for key_, value in row.items():
            if key_ != "case":
                print("  %-20s %8.2f" % (key_, value))
    ok = all(r["overhead_us"] <= 15.0 for r in results)
    print("bar (median paired op - c_api host time <= 15 us): %s"
          % ("met" if ok else "NOT met"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(torch=torch.__version__,
                           device=torch.cuda.get_device_name(),
                           results=results), f, indent=1)
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--stub", action="store_true",
                   help="CPU tensors and the fake driver (no GPU needed)")
    p.add_argument("--fake-driver", default=None)
    p.add_argument("--profile", action="store_true")
    p.add_argument("-n", type=int, default=20000)
    p.add_argument("--json", default=None)
    p.add_argument("--rounds", type=int, default=41,
                   help="rounds of the paired op / C API measurement")
    args = p.parse_args()
    if args.stub:
        stub_main(args)
        return 0
    return gpu_main(args)


if __name__ == "__main__":
    sys.exit(main())
