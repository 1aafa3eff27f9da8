"""Times PyTorch SDPA (cuDNN and FlashAttention-2 backends) on the H200 for
the same shapes as blasst-bench, in the same run. Prints one JSON per line."""
import json
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel


def bench(fn, warmup=10, iters=30):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    times.sort()
    return times[len(times) // 2]


def main():
    heads, dim = 16, 128
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
