"""blasst as a Hugging Face transformers attention implementation.

    import blasst.hf
    blasst.hf.configure(a=None)                       # dense (the default)
    blasst.hf.configure(a=1000, per_layer={0: None, 5: 4000},
                        collect_stats=True)           # BLASST, per layer
    model = AutoModelForCausalLM.from_pretrained(
        ..., attn_implementation="blasst", dtype=torch.bfloat16)
    ...
    blasst.hf.skip_stats()    # {layer: (visited, skipped KV blocks)}

configure() (or register()) registers "blasst" with transformers'
AttentionInterface and AttentionMaskInterface; this module imports without
transformers, which is needed only from then on. Every attention layer of the
model then runs blasst.attention on the [B, H, S, D] query, key and value
transformers passes (strides, no copy; GQA by head counts, no repeat), with
the layer's `scaling`, causal from `is_causal` (the call's, else the
module's), and O written in the [B, S, H, D] layout transformers wants.

The layer's `a` (lambda = a / L_kv) is `per_layer[module.layer_idx]` when
given, else `a`; None is the dense kernel. Each layer's threshold lives in a
blasst.Sparsity (one per layer and device), so configure() with new values
between forward passes recompiles nothing. With collect_stats, each layer's
skip counters are summed on the GPU (no synchronization) until
reset_stats().

Refused with a clear exception (what the kernels cannot compute): dropout >
0, sliding windows, logit soft-capping, attention sinks, position biases,
and masks other than "causal" or "none" (padding in a batch, packed
sequences, custom masks). The mask is the one transformers builds for SDPA:
None where is_causal says it all; a materialized mask is checked once per
forward (it is the same tensor in every layer) against the causal and full
patterns. Causal is bottom-right aligned (query i sees keys j <= i + Skv -
Sq), which is what a KV cache needs; a StaticCache prefill (mask None with
more key slots than queries) attends the first Sq keys, as transformers'
SDPA path does.
"""

import threading

__all__ = ["configure", "register", "skip_stats", "reset_stats",
           "calibrate_layers", "attention_forward", "NAME"]

NAME = "blasst"

_lock = threading.Lock()
_registered = False


class _Config:
    def __init__(self, a=None, per_layer=None, lambda_max=1.0,
                 collect_stats=False):
        self.a = a
        self.per_layer = dict(per_layer or {})
        self.lambda_max = float(lambda_max)
        self.collect_stats = bool(collect_stats)
        self.sparsity = {}  # (layer, device) -> blasst.Sparsity
        self.stats = {}  # layer -> int64 tensor [2] on the device


_config = _Config()
_mask_seen = [None, None]  # the last mask checked, and its verdict
_capture = None  # calibrate_layers: layer -> (q, k, v, causal, scale)


def register():
    """Registers "blasst" with transformers' AttentionInterface (and its
    mask with AttentionMaskInterface). Needs transformers."""
    global _registered
    if _registered:
        return
    try:
        from transformers import AttentionInterface
        from transformers.masking_utils import (AttentionMaskInterface,
                                                sdpa_mask)
    except ImportError as e:
        raise ImportError("blasst.hf needs transformers (with "
                          "AttentionInterface and masking_utils: 4.53 or "
                          "later): %s" % e)
    with _lock:
        AttentionInterface.register(NAME, attention_forward)
        # SDPA's mask: None where is_causal says it all.
        AttentionMaskInterface.register(NAME, sdpa_mask)
        _registered = True


def configure(a=None, per_layer=None, lambda_max=1.0, collect_stats=False):
    """Sets the `a` of every layer (None: dense), per-layer overrides
    ({layer_idx: a or None}), the cap lambda_max, and whether to sum each
    layer's skip statistics; registers "blasst" with transformers. Resets the
    statistics."""
    for value in [a] + list((per_layer or {}).values()):
        if value is not None and not float(value) > 0:
            raise ValueError("blasst.hf.configure: a must be > 0 or None, "
                             "got %r" % (value,))
    global _config
    register()
    _config = _Config(a, per_layer, lambda_max, collect_stats)


def layer_a(layer):
    """The `a` configured for a layer (None: dense)."""
    return _config.per_layer.get(layer, _config.a)


def reset_stats():
    _config.stats = {}


def skip_stats():
    """{layer_idx: (visited, skipped)} KV blocks summed since configure() or
    reset_stats() (layers that ran BLASST with collect_stats)."""
    return {layer: tuple(int(x) for x in t.tolist())
            for layer, t in sorted(_config.stats.items())}


def calibrate_layers(model, input_ids, target_skip=0.7, **calibrate_kw):
    """Per-layer `a` reaching `target_skip` on one forward pass of
    `input_ids`: the pass runs dense while each layer's q, k, v are kept,
    then blasst.calibrate() bisects each layer's threshold on them (no
    recompiles). Returns {layer_idx: blasst.Calibration} (a float, with
    .skip and .reached); pass {i: float(c)} as configure(per_layer=...).
    The model must use attn_implementation="blasst"."""
    import torch
    import blasst
    global _capture, _config
    saved = _config
    _config = _Config()  # dense while capturing
    _capture = {}
    try:
        with torch.no_grad():
            model(input_ids)
        captured, _capture = _capture, None
    finally:
        _capture = None
        _config = saved
    if not captured:
        raise RuntimeError("blasst.hf.calibrate_layers: no attention layer "
                           "ran through blasst (attn_implementation="
                           "\"blasst\"?)")
    return {layer: blasst.calibrate(q, k, v, target_skip=target_skip,
                                    causal=causal, scale=scale,
                                    layout="bshd", **calibrate_kw)
            for layer, (q, k, v, causal, scale) in sorted(captured.items())}


def _sparsity(layer, a, device):
    import blasst
    key = (layer, device)
    sp = _config.sparsity.get(key)
    if sp is None:
        sp = _config.sparsity[key] = blasst.Sparsity(
            a=a, lambda_max=_config.lambda_max, device=device)
    elif sp.value != float(a):
        sp.set(a=a)
    return sp


def _refuse(what):
    raise NotImplementedError("blasst attention (transformers): %s" % what)


def _mask_kind(mask, q_len, kv_len):
    """"full" or "causal" (bottom-right) for a materialized mask; anything
    else is refused. The verdict of the last mask is kept (transformers
    passes one mask object to every layer of a forward)."""
    import torch
    if _mask_seen[0] is mask:
        return _mask_seen[1]
    if mask.dim() != 4 or mask.shape[-2] != q_len or mask.shape[-1] != kv_len:
        _refuse("an attention mask of shape %s (expected [B, 1, %d, %d])"
                % (tuple(mask.shape), q_len, kv_len))
    allowed = mask if mask.dtype == torch.bool else mask > -1.0
    i = torch.arange(q_len, device=mask.device)[:, None]
    j = torch.arange(kv_len, device=mask.device)[None, :]
    causal = (j <= i + (kv_len - q_len)).expand_as(allowed)
    if bool(allowed.all()):
        kind = "full"
    elif torch.equal(allowed, causal):
        kind = "causal"
    else:
        _refuse("this attention mask is neither causal nor full (padding "
                "in a batch, packed sequences or a custom mask); the kernels "
                "take causal or no masking only: run unpadded sequences, "
                "one per batch row of equal length")
    _mask_seen[0], _mask_seen[1] = mask, kind
    return kind


def attention_forward(module, query, key, value, attention_mask,
                      dropout=0.0, scaling=None, is_causal=None,
                      sliding_window=None, softcap=None, **kwargs):
    """transformers' attention function signature: query [B, Hq, Sq, D],
    key/value [B, Hkv, Skv, D]; returns ([B, Sq, Hq, D], None)."""
    import blasst
    if dropout:
        _refuse("dropout %r (train with dropout off, or evaluate)" % dropout)
    if sliding_window is not None:
        _refuse("sliding-window attention (sliding_window=%r)"
                % (sliding_window,))
    if softcap is not None:
        _refuse("logit soft-capping (softcap=%r)" % (softcap,))
    for name in ("s_aux", "sinks", "position_bias"):
        if kwargs.get(name) is not None:
            _refuse("%s" % name)
    if kwargs.get("output_attentions"):
        _refuse("output_attentions=True (the kernels do not form the "
                "attention matrix)")
    q_len, kv_len = query.shape[2], key.shape[2]
    causal = is_causal if is_causal is not None \
        else getattr(module, "is_causal", True)
    if attention_mask is not None:
        # A materialized mask decides (as it does for SDPA).
        causal = _mask_kind(attention_mask, q_len, kv_len) == "causal"
    else:
        causal = bool(causal) and q_len > 1
        if causal and kv_len > q_len:
            # A StaticCache prefill: the slots past Sq are empty (SDPA's
            # top-left causal); attend the first Sq keys.
            key, value = key[:, :, :q_len], value[:, :, :q_len]
    layer = getattr(module, "layer_idx", None)
    a = layer_a(layer)
    # [B, H, S, D] views as [B, S, H, D]: O comes back contiguous in the
    # layout transformers reshapes to [B, S, H * D] without a copy.
    q, k, v = (t.transpose(1, 2) for t in (query, key, value))
    if _capture is not None:
        _capture[layer] = (q, k, v, causal, scaling)
    if a is None:
        o = blasst.attention(q, k, v, causal=causal, scale=scaling,
                             layout="bshd")
    elif _config.collect_stats:
        o, stats = blasst.attention(
            q, k, v, causal=causal, scale=scaling, layout="bshd",
            sparsity=_sparsity(layer, a, query.device), return_stats=True)
        total = stats.sum(dim=(0, 1))
        acc = _config.stats.get(layer)
        _config.stats[layer] = total if acc is None else acc + total
    else:
        o = blasst.attention(q, k, v, causal=causal, scale=scaling,
                             layout="bshd",
                             sparsity=_sparsity(layer, a, query.device))
    return o, None
