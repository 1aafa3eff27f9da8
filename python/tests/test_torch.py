"""The PyTorch op without a GPU: registration, argument errors before any
launch, the fake (meta) implementation, torch.compile(fullgraph=True)
tracing. Skipped where PyTorch is not installed (this machine, CI); the GPU
tests are test/gpu/python_op.py.
"""

import os
import subprocess
import sys
import unittest

try:
    import torch
except ImportError:
    torch = None

import blasst


@unittest.skipIf(torch is None, "PyTorch is not installed")
class TorchOpTest(unittest.TestCase):
    def meta(self, *shape, dtype=None):
        return torch.empty(*shape, dtype=dtype or torch.bfloat16,
                           device="meta")

    def test_registered(self):
        self.assertTrue(hasattr(torch.ops.blasst, "attention"))

    def test_fake_shapes_both_layouts(self):
        q, k = self.meta(2, 300, 8, 128), self.meta(2, 517, 2, 128)
        o, lse, st = torch.ops.blasst.attention(q, k, k, True, 0.1, "bshd",
                                                None, 0, 1.0, True, False)
        self.assertEqual(tuple(o.shape), (2, 300, 8, 128))
        self.assertEqual(tuple(lse.shape), (2, 8, 300))
        self.assertEqual(lse.dtype, torch.float32)
        self.assertEqual(st.numel(), 0)
        q, k = self.meta(2, 8, 300, 64), self.meta(2, 1, 517, 64)
        out = blasst.attention(q, k, k, layout="bhsd", return_lse=True)
        self.assertEqual(tuple(out[0].shape), (2, 8, 300, 64))
        self.assertEqual(tuple(out[1].shape), (2, 8, 300))

    def test_argument_errors_name_the_problem(self):
        q, k = self.meta(2, 300, 8, 128), self.meta(2, 517, 2, 128)
        cases = [
            ((q.float(), k, k), {}, TypeError, "dtype torch.float32"),
            ((q, k.half(), k), {}, TypeError, "one dtype"),
            ((q[0], k, k), {}, ValueError, "4-D"),
            ((q, self.meta(2, 517, 3, 128), self.meta(2, 517, 3, 128)), {},
             ValueError, "not a multiple of k/v's 3 heads"),
            ((q, self.meta(2, 517, 2, 64), self.meta(2, 517, 2, 64)), {},
             ValueError, "head_dim 128, k and v 64"),
            ((q, k, self.meta(2, 516, 2, 128)), {}, ValueError,
             "one shape"),
            ((q, self.meta(3, 517, 2, 128), self.meta(3, 517, 2, 128)), {},
             ValueError, "batch"),
            ((q, k, k), {"layout": "sbhd"}, ValueError, "layout"),
            ((q, k, k), {"layout": ["bshd"]}, TypeError,
             "layout must be 'bshd' or 'bhsd'"),
            ((q, k, k), {"phase": ["decode"]}, TypeError,
             "phase None, 'prefill' or 'decode', got layout='bshd', "
             "phase=['decode']"),
            ((q, k, k), {"scale": -1.0}, ValueError, "scale"),
            ((q, k, k), {"return_stats": True}, ValueError,
             "return_stats needs a sparsity"),
            ((q, k, k), {"sparsity": 0.5}, TypeError, "blasst.Sparsity"),
            ((torch.zeros(2, 3, 8, 128, dtype=torch.bfloat16), k, k), {},
             ValueError, "the kernels run on CUDA devices"),
        ]
        for args, kwargs, exc, text in cases:
            with self.subTest(text=text):
                with self.assertRaises(exc) as cm:
                    blasst.attention(*args, **kwargs)
                self.assertIn(text, str(cm.exception))

    def test_decode_arguments_on_meta_tensors(self):
        i32 = torch.int32
        q, k = self.meta(2, 4, 8, 128), self.meta(2, 1000, 2, 128)
        pool = self.meta(9, 64, 2, 128)
        table, lens = self.meta(2, 5, dtype=i32), self.meta(2, dtype=i32)
        o, lse = blasst.attention(q, pool, pool, block_table=table,
                                  kv_lengths=lens, return_lse=True)
        self.assertEqual(tuple(o.shape), (2, 4, 8, 128))
        self.assertEqual(tuple(lse.shape), (2, 8, 4))
        o = blasst.attention(q, k, k, kv_lengths=lens, seq_kv=700,
                             phase="decode")
        self.assertEqual(tuple(o.shape), (2, 4, 8, 128))
        # BLASST decode with the caches: O, LSE and the statistics.
        sp = blasst.Sparsity(a=1, device="meta")
        for kw in (dict(kv_lengths=lens),
                   dict(block_table=table),
                   dict(block_table=table, kv_lengths=lens, seq_kv=300)):
            with self.subTest(cache=sorted(kw)):
                kk = pool if "block_table" in kw else k
                o, lse, st = blasst.attention(
                    q, kk, kk, sparsity=sp, return_lse=True,
                    return_stats=True, causal=True, **kw)
                self.assertEqual(tuple(o.shape), (2, 4, 8, 128))
                self.assertEqual(tuple(lse.shape), (2, 8, 4))
                self.assertEqual(tuple(st.shape), (2, 8, 2))
                self.assertEqual(st.dtype, torch.int64)
        cases = [
            ((q, k, k), {"kv_lengths": self.meta(2, dtype=torch.int64)},
             TypeError, "must be torch.int32"),
            ((q, k, k), {"kv_lengths": self.meta(3, dtype=i32)},
             ValueError, "[batch] = (2,)"),
            ((q, k, k), {"kv_lengths": torch.zeros(2, dtype=i32)},
             ValueError, "kv_lengths is on cpu"),
            ((q, k, k), {"seq_kv": 1001}, ValueError, "not in [1, 1000]"),
            ((q, k, k), {"seq_kv": 0}, ValueError, "seq_kv must be >= 1"),
            ((q, k, k), {"phase": "chunked"}, ValueError, "phase must be"),
            ((q, self.meta(9, 24, 2, 128), self.meta(9, 24, 2, 128)),
             {"block_table": table}, ValueError,
             "page size 24 is not a power of two from 16 to 256"),
            ((q, pool, pool), {"block_table": table, "seq_kv": 321},
             ValueError, "max_pages x page = 5 x 64 = 320"),
            ((q, pool, pool), {"block_table": self.meta(2, 5)}, TypeError,
             "block_table has dtype torch.bfloat16"),
            # BLASST decode takes the caches; what the decode kernels do
            # not take is refused with the reason, as without a sparsity.
            ((q, k, k), {"kv_lengths": lens, "sparsity": sp,
                         "phase": "prefill"},
             ValueError, "kv_lengths and block_table are decode arguments"),
            ((self.meta(2, 9, 8, 128), pool, pool),
             {"block_table": table, "sparsity": sp}, ValueError,
             "1 to 8 new tokens"),
            ((q, pool, pool), {"block_table": table, "return_stats": True},
             ValueError, "return_stats needs a sparsity"),
            ((q, pool, pool), {"block_table": table, "sparsity": sp,
                               "seq_kv": 321},
             ValueError, "max_pages x page = 5 x 64 = 320"),
        ]
        for args, kwargs, exc, text in cases:
            with self.subTest(text=text):
                with self.assertRaises(exc) as cm:
                    blasst.attention(*args, **kwargs)
                self.assertIn(text, str(cm.exception))

    def test_cpu_tensors_are_refused(self):
        q = torch.zeros(1, 4, 2, 64, dtype=torch.bfloat16)
        with self.assertRaises(ValueError) as cm:
            blasst.attention(q, q, q)
        self.assertIn("CUDA", str(cm.exception))

    def test_sparsity(self):
        sp = blasst.Sparsity(a=1000, device="cpu")
        self.assertEqual(sp.kind, "a")
        self.assertAlmostEqual(sp.threshold.item(), 9.965784, places=5)
        sp.set(a=8)
        self.assertEqual(sp.threshold.item(), 3.0)
        with self.assertRaises(ValueError):
            sp.set(ln_lambda=-3)
        with self.assertRaises(blasst.BlasstError):
            sp.set(a=-1)
        sp = blasst.Sparsity(ln_lambda=-3, lambda_max=0.5, device="cpu")
        with self.assertRaises(ValueError) as cm:
            sp.set(ln_lambda=-0.1)
        self.assertIn("above the cap", str(cm.exception))
        # kind and lambda_max choose the kernel, and the op's plans are
        # keyed on the object: they cannot change after it is made.
        with self.assertRaises(AttributeError):
            sp.lambda_max = 0.25
        with self.assertRaises(AttributeError):
            sp.kind = "a"
        self.assertEqual((sp.kind, sp.lambda_max), ("ln_lambda", 0.5))
        with self.assertRaises(ValueError):
            blasst.Sparsity()
        with self.assertRaises(ValueError):
            blasst.Sparsity(a=1, ln_lambda=-1)
        with self.assertRaises(ValueError):
            blasst.Sparsity(a=1, lambda_max=2)
        # A Sparsity on another device than the inputs.
        q = self.meta(1, 128, 4, 64)
        with self.assertRaises(ValueError) as cm:
            blasst.attention(q, q, q, sparsity=blasst.Sparsity(
                a=1, device="cpu"))
        self.assertIn("create it with Sparsity(..., device=q.device)",
                      str(cm.exception))

    def test_compile_fullgraph_traces_the_op(self):
        if not hasattr(torch, "compile"):
            self.skipTest("no torch.compile")
        graphs = []

        def backend(gm, example_inputs):
            graphs.append(gm)
            return gm.forward

        def f(q, k, v):
            o, lse = blasst.attention(q, k, v, causal=True, return_lse=True,
                                      layout="bhsd")
            return o * 2, lse

        q, k = self.meta(2, 8, 256, 64), self.meta(2, 2, 256, 64)
        o, lse = torch.compile(f, fullgraph=True, backend=backend)(q, k, k)
        self.assertEqual(tuple(o.shape), (2, 8, 256, 64))
        self.assertEqual(len(graphs), 1)
        code = graphs[0].code
        self.assertIn("blasst.attention", code)

        # With a Sparsity: its threshold tensor is a graph input (read at
        # run time), not a constant.
        sp = blasst.Sparsity(a=1000.0, device="meta")

        def g(q, k, v):
            return blasst.attention(q, k, v, sparsity=sp, return_stats=True,
                                    layout="bhsd")

        o, stats = torch.compile(g, fullgraph=True, backend=backend)(q, k, k)
        self.assertEqual(tuple(stats.shape), (2, 8, 2))
        self.assertEqual(stats.dtype, torch.int64)
        self.assertEqual(len(graphs), 2)
        self.assertIn("blasst.attention", graphs[1].code)

        # BLASST decode with a paged cache and per-sequence lengths: the
        # table and the lengths are graph inputs too.
        def h(q, pool, table, lens):
            return blasst.attention(q, pool, pool, sparsity=sp,
                                    return_stats=True, block_table=table,
                                    kv_lengths=lens)

        qd, pool = self.meta(2, 1, 8, 64), self.meta(9, 64, 2, 64)
        table = self.meta(2, 4, dtype=torch.int32)
        lens = self.meta(2, dtype=torch.int32)
        o, stats = torch.compile(h, fullgraph=True, backend=backend)(
            qd, pool, table, lens)
        self.assertEqual(tuple(o.shape), (2, 1, 8, 64))
        self.assertEqual(tuple(stats.shape), (2, 8, 2))
        self.assertEqual(len(graphs), 3)
        self.assertIn("blasst.attention", graphs[2].code)

    def test_calibration_bisection(self):
        # The kernel replaced by a skip rate that grows with log2(a) (a
        # staircase, as block counts are), to check the search alone.
        import math
        from blasst import _calibrate as cal_mod
        L = 8192
        launches = []

        def fake_attention(q, k, v, causal, scale, sparsity, return_stats,
                           layout):
            log2a = float(sparsity.threshold)
            launches.append(log2a)
            rate = min(max((log2a - math.log2(L) + 44.0) / 40.0, 0.0), 0.98)
            skipped = int(rate * 500) * 2
            return None, torch.tensor([[[1000, skipped]]])

        saved = cal_mod.attention
        cal_mod.attention = fake_attention
        try:
            q = torch.zeros(1, L, 1, 64)
            for target in (0.5, 0.7, 0.9):
                c = blasst.calibrate(q, q, q, target_skip=target)
                self.assertTrue(c.reached, c)
                self.assertLessEqual(abs(c.skip - target), 0.01)
                self.assertLessEqual(c.steps, 40)
                self.assertAlmostEqual(float(c), c.a)
            c = blasst.calibrate(q, q, q, target_skip=0.995)
            self.assertFalse(c.reached)
            self.assertEqual(c.a, float(L))  # lambda = 1: the most there is
            self.assertAlmostEqual(c.skip, 0.98)
            with self.assertRaises(ValueError):
                blasst.calibrate(q, q, q, target_skip=1.5)
        finally:
            cal_mod.attention = saved

    def test_opcheck_fake(self):
        opcheck = getattr(getattr(torch, "library", None), "opcheck", None)
        if opcheck is None:
            self.skipTest("no torch.library.opcheck")
        q, k = self.meta(1, 128, 4, 64), self.meta(1, 128, 2, 64)
        opcheck(torch.ops.blasst.attention.default,
                (q, k, k, False, 0.125, "bshd", None, 0, 1.0, True, False),
                test_utils=("test_schema", "test_faketensor"))


def fake_driver():
    """The fake libcuda (build/runtime/libblasst-fake-cuda.so), or None."""
    path = os.environ.get("BLASST_FAKE_DRIVER", "")
    if not path:
        from blasst import _capi
        try:
            lib = _capi.library_path()
        except OSError:
            return None
        path = os.path.join(os.path.dirname(lib), os.pardir, "runtime",
                            "libblasst-fake-cuda.so")
    return path if os.path.isfile(path) else None


@unittest.skipIf(torch is None, "PyTorch is not installed")
class FastPathTest(unittest.TestCase):
    def run_stub(self, script):
        # In a subprocess: libblasst.so must load the fake driver from the
        # start, and the op's device hooks are replaced there.
        from blasst import _capi
        driver = fake_driver()
        if driver is None:
            self.skipTest("no fake driver (build/runtime/"
                          "libblasst-fake-cuda.so)")
        if not _capi.jit_available():
            self.skipTest("no libblasst_jit.so to compile the kernels")
        env = dict(os.environ, BLASST_LIBCUDA=os.path.abspath(driver))
        here = os.path.dirname(os.path.abspath(__file__))
        r = subprocess.run([sys.executable, os.path.join(here, script)],
                           env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=900)
        out = r.stdout.decode(errors="replace")
        if "ptxas" in out and "not found" in out:
            self.skipTest("no ptxas")
        self.assertEqual(r.returncode, 0, out[-3000:])
        self.assertIn("OK", out)

    def test_fast_path_and_plans_with_the_fake_driver(self):
        self.run_stub("_stub_fast_path.py")

    def test_decode_with_the_fake_driver(self):
        # The decode phase (picked from the shapes or asked for), the split-KV
        # workspace (cached, not per call), per-sequence lengths and paged
        # caches (the pointers the launch passes), and their errors.
        self.run_stub("_stub_decode.py")


if __name__ == "__main__":
    unittest.main()
