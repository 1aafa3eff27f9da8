"""BLASST on real attention, on the GPU: the Q/K/V that
tools/bench/capture_smollm2.py captured from SmolLM2-135M (9 q / 3 kv heads,
head_dim 64, causal), through the Python op (blasst.attention), dense and
with BLASST at several `a` (lambda = a / L_kv), against PyTorch SDPA (cuDNN,
FlashAttention-2) in the same run.

usage: python3 tools/bench/real_attention.py CAPTURE.pt [--a 16,64,256,1024]
         [--prefill-batch 4] [--decode-batch 16] [--iters 50] [--json OUT]

Per captured layer:
- prefill: the whole sequence (causal), the layer's tensors repeated
  --prefill-batch times as batch entries (the same map each time; more CTAs
  to time);
- decode: the last token's query against the whole K/V (one new token,
  seq_q 1), repeated --decode-batch times.
Each kernel's output is checked against float32 attention of the same bf16
inputs (every element; NaN fails; rel L2 and max abs printed), the skip rate
comes from the statistics kernel (stats=true), the time from the kernel
without statistics. Times are medians of CUDA-graph replays timed in turns
(one replay of each variant per round, each between its own events), so no
variant is favoured by order or drift.

Needs BLASST_LIBRARY and BLASST_KERNEL_PATH (a package from blasst.aot with
SmolLM2's kernels: test/gpu/build-perplexity.sh's) and PYTHONPATH=python.
"""
import argparse
import json
import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import blasst

# The CUDA-graph capture every peer script uses (tools/bench/harness.py).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import capture_graph  # noqa: E402


def time_in_turns(fns, warmup=5, iters=50):
    """{name: median ms}: every fn captured into a CUDA graph, then `iters`
    rounds of one replay each, in turns, each replay between its own two
    events."""
    graphs = {n: capture_graph(f) for n, f in fns.items()}
    for _ in range(warmup):
        for g in graphs.values():
            g.replay()
    torch.cuda.synchronize()
    ev = {n: [] for n in graphs}
    for _ in range(iters):
        for n, g in graphs.items():
            s, e = (torch.cuda.Event(enable_timing=True),
                    torch.cuda.Event(enable_timing=True))
            s.record()
            g.replay()
            e.record()
            ev[n].append((s, e))
    torch.cuda.synchronize()
    out = {}
    for n, pairs in ev.items():
        t = sorted(s.elapsed_time(e) for s, e in pairs)
        out[n] = t[len(t) // 2]
    return out


def reference(q, k, v, causal, scale):
    """float32 attention of the bf16 inputs ([B, H, S, D]), GQA by repeat;
    causal bottom-right aligned as blasst's."""
    rep = q.shape[1] // k.shape[1]
    qf, kf, vf = q.float(), k.float().repeat_interleave(rep, 1), \
        v.float().repeat_interleave(rep, 1)
    sq, skv = q.shape[2], k.shape[2]
    mask = None
    if causal:
        i = torch.arange(sq, device=q.device)[:, None]
        j = torch.arange(skv, device=q.device)[None, :]
        mask = j <= i + (skv - sq)
    return F.scaled_dot_product_attention(qf, kf, vf, attn_mask=mask,
                                          scale=scale)


def check(o, ref):
    """Every element of every batch entry (the same inputs each) against
    the float32 reference."""
    o, ref = o.float(), ref.expand(o.shape)
    bad = torch.isnan(o).any().item()
    rel = ((o - ref).norm() / ref.norm()).item()
    mx = (o - ref).abs().max().item()
    return {"rel_l2": rel, "max_abs": mx, "nan": bool(bad)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("capture")
    ap.add_argument("--a", default="16,64,256,1024")
    ap.add_argument("--prefill-batch", type=int, default=4)
    ap.add_argument("--decode-batch", type=int, default=16)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    a_values = [float(x) for x in args.a.split(",") if x]
    cap = torch.load(args.capture)
    dev = torch.device("cuda")
    print("%s; %s; text %s (%d tokens)" % (
        torch.cuda.get_device_name(), cap["model"],
        cap["text"]["sha256_16"], cap["text"]["tokens"]), flush=True)
    rows, fails = [], 0
    for layer, t in sorted(cap["layers"].items()):
        scale = t["scale"]
        for phase in ("prefill", "decode"):
            nb = args.prefill_batch if phase == "prefill" else \
                args.decode_batch
            q = t["q"].to(dev)
            if phase == "decode":
                q = q[:, :, -1:, :]
            q = q.expand(nb, -1, -1, -1).contiguous()
            k = t["k"].to(dev).expand(nb, -1, -1, -1).contiguous()
            v = t["v"].to(dev).expand(nb, -1, -1, -1).contiguous()
            causal = phase == "prefill"
            ref = reference(q[:1], k[:1], v[:1], causal, scale)
            fns, res = {}, {}

            def ours(sp=None, stats=False):
                return blasst.attention(q, k, v, causal=causal, scale=scale,
                                        sparsity=sp, layout="bhsd",
                                        return_stats=stats)
            o = ours()
            res["dense"] = check(o, ref)
            fns["dense"] = lambda: ours()
            for a in a_values:
                sp = blasst.Sparsity(a=a, device=dev)
                o, st = ours(sp, True)
                visited = st[..., 0].sum().item()
                skipped = st[..., 1].sum().item()
                r = check(o, ref)
                r["skip"] = skipped / max(1, visited)
                res["a=%g" % a] = r
                fns["a=%g" % a] = (lambda sp=sp: ours(sp))
            rep = q.shape[1] // k.shape[1]
            ke, ve = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
            for peer, be in (("cudnn", SDPBackend.CUDNN_ATTENTION),
                             ("fa2", SDPBackend.FLASH_ATTENTION)):
                def sdpa(be=be):
                    with sdpa_kernel(be):
                        return F.scaled_dot_product_attention(
                            q, ke, ve, is_causal=causal, scale=scale)
                try:
                    sdpa()
                    fns[peer] = sdpa
                except RuntimeError as e:
                    res[peer] = {"error": str(e)[:120]}
            times = time_in_turns(fns, iters=args.iters)
            for n, ms in times.items():
                res.setdefault(n, {})["ms"] = ms
            # A NaN anywhere, or dense off by more than bf16 output
            # rounding, fails; BLASST's error is what it skipped: reported.
            fails += sum(1 for r in res.values() if r.get("nan"))
            fails += res["dense"]["rel_l2"] > 2e-2
            row = {"layer": layer, "phase": phase, "batch": nb,
                   "seq_q": q.shape[2], "seq_kv": k.shape[2], "results": res}
            rows.append(row)
            d = res["dense"]["ms"]
            print("layer %2d %-7s B%-2d  dense %.4f ms (rel %.1e)  " % (
                layer, phase, nb, d, res["dense"]["rel_l2"]) + "  ".join(
                "%s %.2fx skip %.1f%% rel %.1e" % (
                    n, d / r["ms"], 100 * r["skip"], r["rel_l2"])
                for n, r in res.items() if n.startswith("a=")) +
                "  " + "  ".join("%s/ours %.2fx" % (n, res[n]["ms"] / d)
                                 for n in ("cudnn", "fa2")
                                 if "ms" in res.get(n, {})), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(),
                       "capture": {k: cap[k] for k in ("model", "text")},
                       "rows": rows}, f, indent=1)
    print("real attention: %d rows, %d failed" % (len(rows), fails))
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
