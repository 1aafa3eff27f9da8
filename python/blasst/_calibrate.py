"""Calibration: the `a` (lambda = a / L_kv) that skips a target fraction of
KV blocks on sample inputs.

Bisection on log2(a) with the kernel's own statistics. Every step is one
launch of the same BLASST kernel with another run-time threshold (the
threshold tensor of a blasst.Sparsity): nothing is recompiled. The skip rate
is non-decreasing in `a` and saturates where lambda reaches lambda_max
(a >= lambda_max * L_kv), so a target above that rate cannot be reached:
the largest useful `a` is returned then, with reached = False.
"""

import math

import torch

from .ops import Sparsity, attention

__all__ = ["calibrate", "Calibration", "skip_rate"]


class Calibration(float):
    """The calibrated `a` (a float), with what was measured: `skip` (the
    rate reached), `target`, `reached` (|skip - target| <= tol), `steps`
    (kernel launches) and `history` [(a, skip), ...]."""

    def __new__(cls, a, **info):
        self = super().__new__(cls, a)
        self.a = float(a)
        self.__dict__.update(info)
        return self

    def __repr__(self):
        return ("Calibration(a=%g, skip=%.4f, target=%.4f, reached=%s, "
                "steps=%d)" % (self.a, self.skip, self.target, self.reached,
                               self.steps))


def skip_rate(stats):
    """Skipped / visited KV blocks of a stats tensor [B, H, 2]."""
    total = stats.sum(dim=(0, 1)).tolist()
    return total[1] / total[0] if total[0] else 0.0


def calibrate(q, k, v, target_skip=0.7, causal=False, *, scale=None,
              layout="bshd", lambda_max=1.0, tol=0.01, max_steps=40):
    """The `a` that makes the BLASST kernel skip `target_skip` of the KV
    blocks on (q, k, v), within `tol` when the data allow it. Returns a
    Calibration (a float: use it as blasst.Sparsity(a=...))."""
    if not (0.0 <= target_skip <= 1.0):
        raise ValueError("target_skip must be in [0, 1], got %r"
                         % (target_skip,))
    if tol <= 0:
        raise ValueError("tol must be > 0, got %r" % (tol,))
    seq_kv = k.shape[1] if layout == "bshd" else k.shape[2]
    sp = Sparsity(a=1.0, lambda_max=lambda_max, device=q.device)
    history = []

    def measure(log2a):
        sp.set(a=2.0 ** log2a)
        _, stats = attention(q, k, v, causal=causal, scale=scale,
                             sparsity=sp, return_stats=True, layout=layout)
        r = skip_rate(stats)
        history.append((2.0 ** log2a, r))
        return r

    # lambda = a / L_kv reaches the cap at a = lambda_max * L_kv: the most
    # skipping there is. 2^-60 below it skips (practically) nothing.
    hi = math.log2(lambda_max * max(seq_kv, 1))
    lo = hi - 60.0
    r_hi, r_lo = measure(hi), measure(lo)
    best = min(((hi, r_hi), (lo, r_lo)), key=lambda p: abs(p[1] - target_skip))
    if r_hi < target_skip - tol or r_lo > target_skip + tol:
        pass  # unreachable: the closer end
    else:
        while len(history) < max_steps and abs(best[1] - target_skip) > tol \
                and hi - lo > 1e-6:
            mid = 0.5 * (lo + hi)
            r = measure(mid)
            if abs(r - target_skip) < abs(best[1] - target_skip):
                best = (mid, r)
            if r < target_skip:
                lo = mid
            else:
                hi = mid
    return Calibration(2.0 ** best[0], skip=best[1], target=target_skip,
                       reached=abs(best[1] - target_skip) <= tol,
                       steps=len(history), history=history)
