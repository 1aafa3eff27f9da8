"""Peer sweep on the H200: our kernels (through blasst-bench) and PyTorch's
SDPA with its cuDNN and FlashAttention-2 backends, plus FlexAttention on a
subset, on the same shapes in one run. Writes results.json and, when
matplotlib is importable, plot.png.

usage: python3 tools/bench/harness.py KERNEL_DIR BLASST_BENCH OUT_DIR [--quick]
       [--seqs 4096,16384] [--no-flex]
       python3 tools/bench/harness.py --replot RESULTS_JSON OUT_DIR
         (only the plot, from a results.json, e.g. one merged from runs)
Shapes: seq 1K..64K with 32K tokens per batch (batch = max(1, 32K / seq)).
"""
import json
import os
import subprocess
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

SEQS = [1024, 2048, 4096, 8192, 16384, 32768, 65536]


# How the last time_ms call ran fn: "graph" (captured once into a CUDA graph
# and replayed) or "eager" (capture failed: plain calls).
LAST_MODE = None


def capture_graph(fn):
    """fn captured into a CUDA graph (after three warm-up calls on a side
    stream, as capture wants); RuntimeError where fn cannot be captured."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g


def time_ms(fn, warmup=5, iters=20, graph=True):
    """Median GPU time of fn in ms. fn is captured into a CUDA graph and
    replayed (graph=True, falling back to plain calls where capture fails;
    LAST_MODE says which), and every timed call sits between its own two
    CUDA events, all enqueued before any is read, as blasst-bench times our
    kernels: the GPU never waits for the host. (Until session 22 each call
    was recorded, launched and synchronised in turn, so a peer's time held
    PyTorch's host dispatch of SDPA, tens of microseconds, whenever that
    exceeded the kernel: decode peers at short lengths read too slow.)"""
    global LAST_MODE
    run, LAST_MODE = fn, "eager"
    if graph:
        try:
            run, LAST_MODE = capture_graph(fn).replay, "graph"
        except RuntimeError:
            torch.cuda.synchronize()
            run, LAST_MODE = fn, "eager"
    for _ in range(warmup):
        run()
    torch.cuda.synchronize()
    events = [(torch.cuda.Event(enable_timing=True),
               torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
    for s, e in events:
        s.record()
        run()
        e.record()
    torch.cuda.synchronize()
    times = sorted(s.elapsed_time(e) for s, e in events)
    return times[len(times) // 2]


def kernel_us(fn, iters=20):
    """GPU time of fn's kernels, µs per call: the durations CUPTI records
    (torch.profiler) for each kernel, memset and memcpy fn launches, summed
    and averaged over iters plain calls, gaps left out. A lower bound of
    what a stream spends on fn, free of host dispatch whatever the timer;
    the kernels' names come with it: {name: µs per call}."""
    import tempfile
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            fn()
        torch.cuda.synchronize()
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        prof.export_chrome_trace(f.name)
        trace = json.load(open(f.name))
    names = {}
    for e in trace.get("traceEvents", []):
        if e.get("cat") in ("kernel", "gpu_memset", "gpu_memcpy") and "dur" in e:
            names[e["name"][:60]] = names.get(e["name"][:60], 0.0) + e["dur"] / iters
    return sum(names.values()), names


def flops(batch, qh, seq, dim, causal):
    return 4.0 * batch * qh * seq * seq * dim * (0.5 if causal else 1.0)


def blasst(bench, stem, batch, seq):
    out = stem + f".b{batch}s{seq}.json"
    cmd = [bench, "--kernel", stem, "--batch", str(batch), "--seq", str(seq),
           "--check", "rows:8", "--warmup", "5", "--iters", "20", "--json", out]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": (r.stdout + r.stderr)[-400:]}
    with open(out) as f:
        k = json.load(f)["kernels"][0]
    return {"ms": k["timing"]["median_ms"], "passed": k.get("passed")}


def peers(batch, qh, kvh, seq, dim, causal, with_flex):
    q = torch.randn(batch, qh, seq, dim, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(batch, kvh, seq, dim, device="cuda", dtype=torch.bfloat16)
    v = torch.randn(batch, kvh, seq, dim, device="cuda", dtype=torch.bfloat16)
    res = {}
    for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION),
                          ("fa2", SDPBackend.FLASH_ATTENTION)):
        try:
            with sdpa_kernel(backend):
                res[name] = time_ms(lambda: torch.nn.functional
                                    .scaled_dot_product_attention(
                                        q, k, v, is_causal=causal,
                                        enable_gqa=qh != kvh))
        except Exception as exc:  # noqa: BLE001 - recorded, not fatal
            res[name] = None
            res[name + "_error"] = str(exc)[:200]
    if with_flex:
        try:
            from torch.nn.attention.flex_attention import (create_block_mask,
                                                           flex_attention)
            flex = torch.compile(flex_attention)
            mask = None
            if causal:
                mask = create_block_mask(lambda b, h, qi, ki: qi >= ki,
                                         None, None, seq, seq)
            res["flex"] = time_ms(lambda: flex(q, k, v, block_mask=mask,
                                               enable_gqa=qh != kvh))
        except Exception as exc:  # noqa: BLE001
            res["flex"] = None
            res["flex_error"] = str(exc)[:200]
    return res


def main():
    if sys.argv[1] == "--replot":
        with open(sys.argv[2]) as f:
            plot(json.load(f), sys.argv[3])
        return
    kdir, bench, out = sys.argv[1:4]
    quick = "--quick" in sys.argv
    no_flex = "--no-flex" in sys.argv
    seqs = SEQS[2::2] if quick else SEQS
    if "--seqs" in sys.argv:
        seqs = [int(x) for x in sys.argv[sys.argv.index("--seqs") + 1].split(",")]
    os.makedirs(out, exist_ok=True)
    rows = []
    for name in sorted(os.listdir(kdir)):
        if not name.endswith(".meta"):
            continue
        stem = os.path.join(kdir, name[:-5])
        spec = dict(kv.split("=", 1) for kv in
                    open(stem + ".spec").read().split() if "=" in kv)
        dim, qh, kvh = int(spec["head_dim"]), int(spec["q_heads"]), int(spec["kv_heads"])
        causal = spec["causal"] == "true"
        for seq in seqs:
            batch = max(1, 32768 // seq)
            row = {"kernel": os.path.basename(stem), "dim": dim, "q_heads": qh,
                   "kv_heads": kvh, "causal": causal, "seq": seq, "batch": batch}
            row["blasst"] = blasst(bench, stem, batch, seq)
            row.update(peers(batch, qh, kvh, seq, dim, causal,
                             with_flex=not no_flex and dim == 128
                             and seq in (4096, 16384)))
            f = flops(batch, qh, seq, dim, causal)
            for key in ("cudnn", "fa2", "flex"):
                if row.get(key):
                    row[key + "_tflops"] = f / row[key] / 1e9
            if row["blasst"].get("ms"):
                row["blasst_tflops"] = f / row["blasst"]["ms"] / 1e9
            rows.append(row)
            print(json.dumps(row), flush=True)
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(rows, f, indent=1)
    plot(rows, out)


def plot(rows, out):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not available: no plot (results.json has the numbers)")
        return
    groups = sorted({(r["dim"], r["q_heads"], r["kv_heads"], r["causal"]) for r in rows})
    fig, axes = plt.subplots(len(groups) // 2 + len(groups) % 2, 2,
                             figsize=(12, 3 * ((len(groups) + 1) // 2)), squeeze=False)
    for ax, g in zip(axes.flat, groups):
        sel = [r for r in rows if (r["dim"], r["q_heads"], r["kv_heads"], r["causal"]) == g]
        for key, label in (("blasst_tflops", "blasst"), ("cudnn_tflops", "cuDNN"),
                           ("fa2_tflops", "FA2"), ("flex_tflops", "Flex")):
            pts = [(r["seq"], r[key]) for r in sel if r.get(key)]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
        ax.set_xscale("log", base=2)
        ax.set_title(f"hd{g[0]} {g[1]}/{g[2]} heads {'causal' if g[3] else 'non-causal'}")
        ax.set_ylabel("TFLOP/s")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "plot.png"), dpi=110)


if __name__ == "__main__":
    main()
