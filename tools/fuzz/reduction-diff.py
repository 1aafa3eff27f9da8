"""Differential check of a reduction of the sync checker: eager completion of
tensor-core products (docs/design.md "Eager completion"; the default) or,
with --option=shallow-token-rings, shallow token rings: every one-step
deletion and every swap of adjacent steps of the given ws kernels is
verified with OPTION=true and =false, and the verdicts (verified,
violation, not verified, rejected) must agree. Prints MISMATCH lines and a
summary.

usage: python3 tools/fuzz/reduction-diff.py BUILD [--option=NAME] kernel.mlir [...]
  e.g. for sp in none blasst:a=256; do
         for csp in --cross-stage-p-depth=2 --cross-stage-p=false; do
           build/bin/blasst-compile --spec s.spec --target sm_100a --emit ws \
             --sparsity=$sp $csp -o /tmp/k_${sp%%:*}${csp##*=}.mlir
       done; done
       python3 tools/fuzz/reduction-diff.py build /tmp/k_*.mlir
  (session 15: head_dim 64, depth 2: 764 mutants, no mismatch, ~10 min;
  session 16, --option=shallow-token-rings on the depth-4 kernels: see
  docs/design.md "Shallow token rings")
"""
import os
import subprocess
import sys

OPT = os.path.join(sys.argv[1], "bin", "blasst-opt")
files = sys.argv[2:]
option = "eager-products"
if files and files[0].startswith("--option="):
    option = files.pop(0)[len("--option="):]
FIXED = ("ws.kernel", "ws.launch", "ws.buffer", "ws.pipe", "ws.role", "ws.order", "ws.kv_loop", "ws.unless_skipped")
def verdict(text, opt):
    p = subprocess.run([OPT, "-", "--blasst-verify-sync=" + opt, "-o", "/dev/null"], input=text, capture_output=True, text=True, timeout=300)
    err = p.stderr
    if "fails sync verification" in err:
        return "FAIL"
    if "not verified" in err:
        return "NV"
    if p.returncode != 0:
        return "REJ"  # the verifier, or another error
    return "OK"
n = mism = 0
for f in files:
    lines = open(f).read().split("\n")
    idx = [i for i, l in enumerate(lines) if l.strip().startswith("ws.") and not l.strip().startswith(FIXED)]
    muts = []
    for i in idx:
        m = list(lines); m[i] = ""; muts.append(("del", i, m))
    for a, b in zip(idx, idx[1:]):
        if b == a + 1:
            m = list(lines); m[a], m[b] = m[b], m[a]; muts.append(("swap", a, m))
    for kind, i, m in muts:
        t = "\n".join(m)
        v1 = verdict(t, option + "=true"); v0 = verdict(t, option + "=false")
        n += 1
        if v1 != v0:
            mism += 1
            print("MISMATCH", f, kind, i, lines[i].strip(), v1, v0, flush=True)
print("done", n, "mutants", mism, "mismatches", flush=True)
sys.exit(1 if mism else 0)
