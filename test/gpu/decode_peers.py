"""Decode peers on the H200, for test/gpu/run-decode.sh's benchmark shapes:
PyTorch SDPA with its cuDNN and FlashAttention-2 backends (GQA through
enable_gqa where the backend takes it, else K/V expanded outside the timing)
and a device copy of the same K+V bytes (the bandwidth bound). bf16,
head_dim 128, 32 q / 8 kv heads (or --heads QH/KVH --head-dim D), one new
token (--seq-q N: N new tokens, non-causal, as speculative decoding's
verification without a mask). Prints one JSON per line: ms (median) and TB/s
of K+V bytes, and how each peer was timed (`*_timing`: "graph", replays of a
CUDA graph as harness.time_ms does by default since session 22, or "eager"
where capture failed; before, a peer's time held PyTorch's host dispatch).
--profile adds each peer's kernel time from CUPTI (`*_kernel_us`, per
kernel `*_kernels`; harness.kernel_us), free of host time.
usage: python3 test/gpu/decode_peers.py [--profile] [--heads QH/KVH]
                                        [--head-dim D] [--seq-q N]
                                        [batch:seq_kv ...]"""
import json
import os
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tools", "bench"))
import harness  # noqa: E402
from harness import time_ms  # noqa: E402

QH, KVH, D, SQ = 32, 8, 128, 1
PROFILE = False


def main():
    global QH, KVH, D, SQ, PROFILE
    args = sys.argv[1:]
    if "--profile" in args:
        args.remove("--profile")
        PROFILE = True
    while args and args[0] in ("--heads", "--head-dim", "--seq-q"):
        if len(args) < 2:
            sys.exit("decode_peers.py: %s needs a value" % args[0])
        if args[0] == "--heads":
            QH, KVH = (int(x) for x in args[1].split("/"))
        elif args[0] == "--seq-q":
            SQ = int(args[1])
        else:
            D = int(args[1])
        args = args[2:]
    if QH % KVH:
        sys.exit("decode_peers.py: --heads %d/%d: q heads must be a multiple "
                 "of kv heads" % (QH, KVH))
    shapes = [tuple(int(x) for x in s.split(":")) for s in args] or \
        [(8, 32768), (8, 131072), (1, 131072)]
    for batch, skv in shapes:
        q = torch.randn(batch, QH, SQ, D, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(batch, KVH, skv, D, device="cuda", dtype=torch.bfloat16)
        v = torch.randn_like(k)
        kv_bytes = 2 * k.numel() * k.element_size()
        row = {"batch": batch, "seq_kv": skv, "seq_q": SQ,
               "heads": "%d/%d" % (QH, KVH),
               "head_dim": D, "kv_bytes": kv_bytes}
        dst = torch.empty_like(k)

        def copy():
            dst.copy_(k)
            dst.copy_(v)
        ms = time_ms(copy, warmup=10, iters=50)
        row["copy_ms"], row["copy_tb_s"] = ms, kv_bytes / ms / 1e9
        row["copy_timing"] = harness.LAST_MODE
        for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION),
                              ("fa2", SDPBackend.FLASH_ATTENTION)):
            for gqa in (True, False):
                kk, vv = (k, v) if gqa else (
                    k.repeat_interleave(QH // KVH, 1),
                    v.repeat_interleave(QH // KVH, 1))
                try:
                    with sdpa_kernel(backend):
                        def f():
                            F.scaled_dot_product_attention(
                                q, kk, vv, enable_gqa=gqa)
                        ms = time_ms(f, warmup=10, iters=50)
                    key = name + ("_gqa" if gqa else "_expanded")
                    # Expanded K/V reads QH / KVH times the bytes; TB/s counts the
                    # GQA bytes (what a decode kernel must read) anyway.
                    row[key + "_ms"] = ms
                    row[key + "_tb_s"] = kv_bytes / ms / 1e9
                    row[key + "_timing"] = harness.LAST_MODE
                    if PROFILE:
                        # CUPTI's kernel durations (no host time whatever
                        # the timer): a check of the graph replays.
                        with sdpa_kernel(backend):
                            us, names = harness.kernel_us(f)
                        row[key + "_kernel_us"] = us
                        row[key + "_kernels"] = names
                except RuntimeError as e:
                    row[name + ("_gqa" if gqa else "_expanded")] = \
                        "unsupported: " + str(e).splitlines()[0][:80]
                del kk, vv
        print(json.dumps(row), flush=True)
        del q, k, v, dst
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
