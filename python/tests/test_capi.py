"""The ctypes bindings and the AOT packages, without PyTorch or a GPU.

Run: python3 -m unittest discover -s python/tests -t python (ctest
blasst-python-tests sets BLASST_LIBRARY / BLASST_JIT_LIBRARY to the build's
libraries). Tests that compile need libblasst_jit.so and ptxas and skip
without them.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import blasst
from blasst import _capi, _kernels, aot

SPEC = "dtype=bf16 head_dim=64 q_heads=4 kv_heads=2 causal=true"
SPARSE = SPEC + " sparsity=blasst:a=256 stats=true"


def can_compile():
    if not _capi.jit_available():
        return False, _capi._jit_error
    try:
        _capi.Compiled(SPEC, "sm_90a", os.environ.get("BLASST_CACHE_DIR"))
        return True, ""
    except blasst.BlasstError as e:
        return False, str(e)


class CApiTest(unittest.TestCase):
    def test_versions(self):
        self.assertTrue(_capi.version().startswith("blasst "))
        self.assertEqual(_capi.kernel_abi_version(), 7)
        self.assertTrue(os.path.exists(_capi.library_path()))

    def test_errors_carry_status_and_text(self):
        with self.assertRaises(blasst.BlasstError) as cm:
            _capi.spec_check("dtype=bf16 colour=blue")
        self.assertEqual(cm.exception.status, "BLASST_ERROR_INVALID_ARGUMENT")
        self.assertIn("unknown key 'colour'", str(cm.exception))
        with self.assertRaises(blasst.BlasstError) as cm:
            _capi.spec_check("head_dim=96 head_dim_v=96", "sm_90a")
        self.assertEqual(cm.exception.status, "BLASST_ERROR_UNSUPPORTED")
        self.assertIn("head_dim 96", str(cm.exception))
        _capi.spec_check(SPEC, "sm_90a")
        self.assertEqual(_capi.last_error(), "")

    def test_kernel_key_ignores_run_time_values(self):
        k1 = _capi.kernel_key(SPEC + " sparsity=blasst:a=256", "sm_90a")
        k2 = _capi.kernel_key(SPEC + " sparsity=blasst:a=9 softmax_scale=0.3",
                              "sm_90a")
        k3 = _capi.kernel_key(SPEC + " sparsity=blasst:ln_lambda=-2", "sm_90a")
        self.assertEqual(k1, k2)
        self.assertNotEqual(k1, k3)
        self.assertIn("head_dim=64\n", _capi.spec_canonical(SPEC))

    def test_op_spec_texts_are_valid(self):
        for kind in (None, "a", "ln_lambda"):
            for lmax in (1.0, 0.25):
                if kind is None and lmax != 1.0:
                    continue
                s = _kernels.spec_text("f16", 128, 16, 4, True, True,
                                       kind is not None, kind, lmax)
                _capi.spec_check(s, "sm_90a")

    def test_thresholds(self):
        self.assertEqual(_capi.log2_threshold(_capi.SPARSITY_A, 8), 3.0)
        with self.assertRaises(blasst.BlasstError):
            _capi.log2_threshold(_capi.SPARSITY_LN_LAMBDA, 1.0)

    def test_missing_and_bad_files(self):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        with self.assertRaises(blasst.BlasstError) as cm:
            _capi.Kernel.from_files(os.path.join(d, "none"))
        self.assertEqual(cm.exception.status, "BLASST_ERROR_NOT_FOUND")
        with self.assertRaises(blasst.BlasstError) as cm:
            _capi.Kernel.from_package(d, SPEC, "sm_90a")
        self.assertEqual(cm.exception.status, "BLASST_ERROR_NOT_FOUND")
        self.assertIn("no manifest.txt", str(cm.exception))
        with open(os.path.join(d, "manifest.txt"), "w") as f:
            f.write("format = 1\nabi_version = 1\n")
        with self.assertRaises(blasst.BlasstError) as cm:
            _capi.Kernel.from_package(d, SPEC, "sm_90a")
        self.assertEqual(cm.exception.status, "BLASST_ERROR_ABI_MISMATCH")
        self.assertIn("kernel ABI version 1", str(cm.exception))

    def test_device_count_without_a_driver_is_zero(self):
        self.assertGreaterEqual(_capi.device_count(), 0)

    def test_missing_library_is_reported(self):
        env = dict(os.environ, BLASST_LIBRARY="/nonexistent/libblasst.so")
        r = subprocess.run(
            [sys.executable, "-c", "import blasst; blasst._capi.lib()"],
            env=env, capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("/nonexistent/libblasst.so (no such file)", r.stderr)
        self.assertIn("BLASST_LIBRARY", r.stderr)

    def test_import_without_torch(self):
        r = subprocess.run(
            [sys.executable, "-c",
             "import sys; sys.modules['torch'] = None\n"
             "import blasst\n"
             "assert not blasst.torch_available\n"
             "try:\n blasst.attention(1, 2, 3)\n"
             "except ImportError as e: print('ImportError', e)\n"],
            capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("ImportError blasst.attention and blasst.calibrate "
                      "need PyTorch", r.stdout)


class AotTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        ok, why = can_compile()
        if not ok:
            raise unittest.SkipTest("cannot compile here: " + why)
        cls.dir = tempfile.mkdtemp()
        cls.cache = os.environ.get("BLASST_CACHE_DIR")
        cls.built = aot.build(cls.dir, [SPEC, SPARSE], "sm_90a", cls.cache)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_grid(self):
        specs = aot.expand_grid("dtype=bf16|f16 head_dim=64 causal=false|true")
        self.assertEqual(len(specs), 4)
        self.assertIn("dtype=f16 head_dim=64 causal=true", specs)

    def test_package_is_found_by_spec_and_target(self):
        self.assertEqual(self.built, 2)
        abi, compiler, entries = aot.read_manifest(self.dir)
        self.assertEqual(abi, 7)
        self.assertEqual(len(entries), 2)
        self.assertEqual(aot.check(self.dir), 2)
        # Another `a`: the same kernel; its spec is the one asked for.
        k = _capi.Kernel.from_package(
            self.dir, SPEC + " sparsity=blasst:a=4000 stats=true", "sm_90a")
        self.assertEqual(k.attrs["sparsity"], _capi.SPARSITY_A)
        self.assertEqual(k.sparsity_value, 4000.0)
        self.assertEqual(k.attrs["device"], _capi.NO_DEVICE)
        with self.assertRaises(blasst.BlasstError) as cm:
            _capi.Kernel.from_package(self.dir, SPEC + " lse=true", "sm_90a")
        self.assertEqual(cm.exception.status, "BLASST_ERROR_NOT_FOUND")
        self.assertIn("python -m blasst.aot build", str(cm.exception))
        # Rebuilding adds nothing.
        self.assertEqual(aot.build(self.dir, [SPEC], "sm_90a", self.cache), 0)

    def test_cache_warnings_are_not_lost(self):
        # A cache directory that cannot be one: a good kernel, and the
        # notes (a Python warning where the op compiles) say why it was not
        # kept, instead of every process compiling again in silence.
        path = os.path.join(self.dir, "cache-is-a-file")
        with open(path, "w") as f:
            f.write("x")
        c = _capi.Compiled(SPEC, "sm_90a", path)
        self.assertFalse(c.from_cache)
        self.assertIn("warning: not cached: cannot create", c.notes)
        c = _capi.Compiled(SPEC, "sm_90a", self.cache)
        self.assertEqual(c.notes, "")

    def test_args_are_checked_without_a_gpu(self):
        k = _capi.Kernel.from_package(self.dir, SPEC, "sm_90a")
        a = _capi.AttentionArgs()
        a.q, a.k, a.v, a.o = 0x10000, 0x20000, 0x30000, 0x40000
        a.batch, a.seq_q, a.seq_kv = 1, 100, 100
        a.q_heads, a.kv_heads, a.head_dim = 4, 2, 64
        # [B, H, S, D] strides for all four.
        a.q_strides[:] = (4 * 100 * 64, 64, 100 * 64)
        a.k_strides[:] = (2 * 100 * 64, 64, 100 * 64)
        a.v_strides[:] = (2 * 100 * 64, 64, 100 * 64)
        a.o_strides[:] = (4 * 100 * 64, 64, 100 * 64)
        k.check_args(a)
        a.kv_heads = 3
        with self.assertRaises(blasst.BlasstError) as cm:
            k.check_args(a)
        self.assertIn("kv_heads = 2", str(cm.exception))
        a.kv_heads = 2
        a.threshold_source = _capi.THRESHOLD_DEVICE
        a.log2_threshold_ptr = 0x50000
        with self.assertRaises(blasst.BlasstError) as cm:
            k.check_args(a)
        self.assertIn("the kernel is dense", str(cm.exception))
        with self.assertRaises(blasst.BlasstError) as cm:
            k.launch(a)
        self.assertEqual(cm.exception.status, "BLASST_ERROR_INVALID_ARGUMENT")

    def test_decode_kernels_build(self):
        # Decode specs build (the JIT's resolved schedule), with their KV
        # cache attributes. (The workspace a launch needs is sized on a
        # device: _stub_decode.py, through the fake driver.)
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        dec = _kernels.spec_text("bf16", 64, 8, 8, True, phase="decode")
        paged = _kernels.spec_text("bf16", 64, 8, 8, True, phase="decode",
                                   kv_per_sequence=True, kv_page=32)
        self.assertIn("phase=decode kv_lengths=per_sequence "
                      "kv_cache=paged:page=32", paged)
        dec128 = _kernels.spec_text("bf16", 128, 32, 8, False, phase="decode")
        self.assertEqual(aot.build(d, [dec, paged, dec128], "sm_90a",
                                   self.cache), 3)
        k = _capi.Kernel.from_package(d, dec, "sm_90a")
        self.assertEqual(k.attrs["block_m"], 64)
        self.assertEqual((k.attrs["kv_per_sequence"],
                          k.attrs["kv_page_size"]), (0, 0))
        self.assertEqual(k.attrs["short_block_n"], 0)  # decode: none
        self.assertEqual(k.attrs["short_ctas_per_sm"], 1)
        self.assertEqual(k.attrs["tma_entry"], 0)  # head_dim 64: none
        # head_dim 128: a TMA entry, not taken without a device.
        k128 = _capi.Kernel.from_package(d, dec128, "sm_90a")
        self.assertEqual(k128.attrs["tma_entry"], 1)
        kp = _capi.Kernel.from_package(d, paged, "sm_90a")
        self.assertEqual((kp.attrs["kv_per_sequence"],
                          kp.attrs["kv_page_size"]), (1, 32))
        with self.assertRaises(ValueError):
            _kernels.spec_text("bf16", 64, 8, 8, True, kv_page=32)

    def test_get_kernel_uses_the_package_without_compiling(self):
        blasst.add_package(self.dir)
        self.addCleanup(_kernels._packages.remove, self.dir)
        before = _kernels.compile_count()
        s = _kernels.spec_text("bf16", 64, 4, 2, True, False, True, "a")
        k = _kernels.get_kernel(s, _capi.NO_DEVICE, "sm_90a")
        self.assertEqual(_kernels.compile_count(), before)
        self.assertIs(k, _kernels.get_kernel(s, _capi.NO_DEVICE, "sm_90a"))
        _kernels.clear_cache()

    def test_package_of_another_abi_is_refused(self):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        aot.build(d, [SPEC], "sm_90a", self.cache)
        m = os.path.join(d, "manifest.txt")
        text = open(m).read().replace("abi_version = 7", "abi_version = 1")
        open(m, "w").write(text)
        with self.assertRaises(blasst.BlasstError) as cm:
            _capi.Kernel.from_package(d, SPEC, "sm_90a")
        self.assertEqual(cm.exception.status, "BLASST_ERROR_ABI_MISMATCH")
        self.assertIn("rebuild the package", str(cm.exception))
        # The op does not skip it for the JIT either.
        blasst.add_package(d)
        self.addCleanup(_kernels._packages.remove, d)
        with self.assertRaises(blasst.BlasstError):
            _kernels.get_kernel(SPEC, _capi.NO_DEVICE, "sm_90a")
        # The tool does not mix ABIs in one package.
        with self.assertRaises(RuntimeError) as cm:
            aot.build(d, [SPARSE], "sm_90a", self.cache)
        self.assertIn("kernel ABI version 1", str(cm.exception))
        self.assertEqual(aot.build(d, [SPARSE], "sm_90a", self.cache,
                                   force=True), 1)

    def test_cli(self):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        py = os.path.dirname(os.path.dirname(os.path.abspath(blasst.__file__)))
        env = dict(os.environ, PYTHONPATH=py)
        r = subprocess.run(
            [sys.executable, "-m", "blasst.aot", "build", "-o", d, "--grid",
             "dtype=bf16 head_dim=64 q_heads=4 kv_heads=2 causal=false|true"],
            env=env, capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("2 in the package", r.stdout)
        r = subprocess.run([sys.executable, "-m", "blasst.aot", "list", d],
                           env=env, capture_output=True, text=True)
        self.assertIn("2 kernels", r.stdout)
        r = subprocess.run(
            [sys.executable, "-m", "blasst.aot", "build", "-o", d, "--spec",
             "head_dim=96 head_dim_v=96"],
            env=env, capture_output=True, text=True)
        self.assertEqual(r.returncode, 1)
        self.assertIn("blasst.aot: error:", r.stderr)
        self.assertIn("head_dim 96", r.stderr)

    def test_no_kernel_and_no_jit_says_how_to_build_one(self):
        env = dict(os.environ, BLASST_JIT_LIBRARY="/nonexistent/jit.so",
                   BLASST_KERNEL_PATH=self.dir)
        code = ("import blasst\nfrom blasst import _kernels, _capi\n"
                "try:\n"
                " _kernels.get_kernel(%r, _capi.NO_DEVICE, 'sm_90a')\n"
                "except RuntimeError as e: print(e)\n"
                "k = _kernels.get_kernel(%r, _capi.NO_DEVICE, 'sm_90a')\n"
                "print('found', k.name)\n" % (SPEC + " lse=true", SPEC))
        r = subprocess.run([sys.executable, "-c", code], env=env,
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("not in the packages " + self.dir, r.stdout)
        self.assertIn("JIT library is not available", r.stdout)
        self.assertIn("python -m blasst.aot build --target sm_90a", r.stdout)
        self.assertIn("found ", r.stdout)


if __name__ == "__main__":
    unittest.main()
