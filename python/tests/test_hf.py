"""blasst.hf, the transformers adapter, on the CPU: a tiny random Llama
(GQA) with attn_implementation="blasst", blasst.attention replaced by an
SDPA stand-in with the op's contract (layouts by stride, GQA by head counts,
bottom-right causal, scale), must give eager attention's logits, in a
forward pass and in cached decoding; per-layer `a`, statistics and the
refusals. Skipped without PyTorch or transformers (CI installs neither).
"""

import unittest
from unittest import mock

try:
    import torch
    import transformers
    from transformers import LlamaConfig, LlamaForCausalLM
except ImportError:
    torch = None

import blasst


def standin(calls):
    """An SDPA-based blasst.attention for float32 CPU tensors, recording its
    calls."""
    import torch.nn.functional as F

    def attention(q, k, v, *, causal=False, scale=None, sparsity=None,
                  return_lse=False, return_stats=False, layout="bshd"):
        assert layout in ("bshd", "bhsd")
        calls.append(dict(q_shape=tuple(q.shape), k_shape=tuple(k.shape),
                          causal=causal, scale=scale, sparsity=sparsity,
                          layout=layout, q_stride=q.stride()))
        if layout == "bshd":
            q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        B, H, Sq, D = q.shape
        Hkv, Skv = k.shape[1], k.shape[2]
        k = k.repeat_interleave(H // Hkv, dim=1)
        v = v.repeat_interleave(H // Hkv, dim=1)
        mask = None
        if causal:
            i = torch.arange(Sq)[:, None]
            j = torch.arange(Skv)[None, :]
            mask = j <= i + (Skv - Sq)
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                           scale=scale)
        if layout == "bshd":
            o = o.transpose(1, 2).contiguous()
        out = (o,)
        if return_stats:
            out += (torch.tensor([[[10, 3]] * H] * B, dtype=torch.int64),)
        return out[0] if len(out) == 1 else out
    return attention


@unittest.skipIf(torch is None, "PyTorch or transformers is not installed")
class HfAdapterTest(unittest.TestCase):
    def model(self, impl, **kw):
        torch.manual_seed(0)
        config = LlamaConfig(vocab_size=101, hidden_size=128,
                             intermediate_size=256, num_hidden_layers=3,
                             num_attention_heads=4, num_key_value_heads=2,
                             head_dim=64, max_position_embeddings=512,
                             rope_theta=10000.0, **kw)
        config._attn_implementation = impl
        m = LlamaForCausalLM(config).eval()
        return m

    def setUp(self):
        import blasst.hf
        self.calls = []
        p = mock.patch.object(blasst, "attention", standin(self.calls))
        p.start()
        self.addCleanup(p.stop)
        blasst.hf.configure(a=None)
        self.addCleanup(blasst.hf.configure, a=None)

    def pair(self):
        eager = self.model("eager")
        ours = self.model("blasst")
        ours.load_state_dict(eager.state_dict())
        return eager, ours

    def test_logits_equal_eager(self):
        import blasst.hf
        eager, ours = self.pair()
        ids = torch.randint(0, 101, (2, 37))
        with torch.no_grad():
            want = eager(ids).logits
            got = ours(ids).logits
        self.assertEqual(len(self.calls), 3)  # one per layer
        c = self.calls[0]
        self.assertEqual(c["q_shape"], (2, 37, 4, 64))  # [B, S, H, D]
        self.assertEqual(c["k_shape"], (2, 37, 2, 64))  # GQA: no repeat
        self.assertTrue(c["causal"])
        self.assertAlmostEqual(c["scale"], 64 ** -0.5)
        self.assertIsNone(c["sparsity"])
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
        self.assertEqual(blasst.hf.skip_stats(), {})

    def test_cached_decoding_equals_eager(self):
        eager, ours = self.pair()
        ids = torch.randint(0, 101, (1, 21))
        kw = dict(max_new_tokens=6, do_sample=False, min_new_tokens=6)
        with torch.no_grad():
            want = eager.generate(ids, **kw)
            got = ours.generate(ids, **kw)
            # A prefill chunk after cached tokens (Sq > 1, Skv > Sq):
            # bottom-right causal.
            cache_e = eager(ids[:, :13], use_cache=True).past_key_values
            cache_o = ours(ids[:, :13], use_cache=True).past_key_values
            le = eager(ids[:, 13:], past_key_values=cache_e).logits
            lo = ours(ids[:, 13:], past_key_values=cache_o).logits
        self.assertTrue(torch.equal(got, want), (got, want))
        self.assertTrue(any(c["q_shape"][1] == 1 and c["k_shape"][1] > 1
                            for c in self.calls))
        torch.testing.assert_close(lo, le, rtol=1e-5, atol=1e-5)

    def test_per_layer_a_and_stats(self):
        import blasst.hf
        blasst.hf.configure(a=1000.0, per_layer={1: None, 2: 4000.0},
                            collect_stats=True)
        _, ours = self.pair()
        ids = torch.randint(0, 101, (1, 16))
        with torch.no_grad():
            ours(ids)
            ours(ids)
        sp = [c["sparsity"] for c in self.calls[:3]]
        self.assertEqual(sp[0].value, 1000.0)
        self.assertIsNone(sp[1])
        self.assertEqual(sp[2].value, 4000.0)
        self.assertIs(self.calls[3]["sparsity"], sp[0])  # reused
        self.assertEqual(blasst.hf.skip_stats(),
                         {0: (80, 24), 2: (80, 24)})
        blasst.hf.reset_stats()
        self.assertEqual(blasst.hf.skip_stats(), {})
        with self.assertRaises(ValueError):
            blasst.hf.configure(a=-1)

    def test_refusals(self):
        _, ours = self.pair()
        ids = torch.randint(0, 101, (2, 9))
        pad = torch.ones(2, 9, dtype=torch.long)
        pad[1, :3] = 0  # left padding in one row
        with torch.no_grad(), self.assertRaises(NotImplementedError) as cm:
            ours(ids, attention_mask=pad)
        self.assertIn("neither causal nor full", str(cm.exception))
        # An all-ones mask is the causal case.
        with torch.no_grad():
            ours(ids, attention_mask=torch.ones(2, 9, dtype=torch.long))
        import blasst.hf
        q = torch.zeros(1, 4, 8, 64)
        k = torch.zeros(1, 2, 8, 64)
        layer = ours.model.layers[0].self_attn
        for kw, text in ((dict(dropout=0.1), "dropout"),
                         (dict(sliding_window=4), "sliding-window"),
                         (dict(softcap=30.0), "soft-capping"),
                         (dict(s_aux=torch.zeros(4)), "s_aux")):
            with self.subTest(text=text):
                with self.assertRaises(NotImplementedError) as cm:
                    blasst.hf.attention_forward(layer, q, k, k, None, **kw)
                self.assertIn(text, str(cm.exception))


if __name__ == "__main__":
    unittest.main()
