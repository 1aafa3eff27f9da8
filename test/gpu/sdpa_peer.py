"""Times PyTorch SDPA (cuDNN and FlashAttention-2 backends) on the H200 for
the same shapes as blasst-bench, in the same run. Prints one JSON per line.
Env: HEAD_DIM (default 128), HEADS (default 16)."""
import json
import os
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

# One CUDA-event timer for every peer script (tools/bench/harness.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tools", "bench"))
from harness import time_ms  # noqa: E402


def bench(fn, warmup=10, iters=30):
    return time_ms(fn, warmup=warmup, iters=iters)


def main():
    heads = int(os.environ.get("HEADS", "16"))
    dim = int(os.environ.get("HEAD_DIM", "128"))
    for seq in [int(s) for s in sys.argv[1:]] or [4096, 16384, 32768]:
        batch = max(1, 32768 // seq)
        q, k, v = (torch.randn(batch, heads, seq, dim, device="cuda",
                               dtype=torch.bfloat16) for _ in range(3))
        for causal in (False, True):
            flops = 4 * batch * heads * seq * seq * dim * (0.5 if causal else 1.0)
            for name, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION),
                                  ("fa2", SDPBackend.FLASH_ATTENTION)):
                try:
                    with sdpa_kernel(backend):
                        ms = bench(lambda: torch.nn.functional.scaled_dot_product_attention(
                            q, k, v, is_causal=causal))
                    print(json.dumps({"peer": name, "batch": batch, "heads": heads,
                                      "seq": seq, "dim": dim, "causal": causal,
                                      "ms": ms, "tflops": flops / ms / 1e9}), flush=True)
                except Exception as exc:  # noqa: BLE001 - report and go on
                    print(json.dumps({"peer": name, "seq": seq, "causal": causal,
                                      "error": str(exc)[:200]}), flush=True)


if __name__ == "__main__":
    main()
