"""Mutation fuzzer for the ws lowering: takes ws IR emitted by blasst-compile
(--emit ws), deletes, duplicates, swaps and re-attributes step ops, and runs
each mutant through blasst-opt --blasst-ws-to-llvm, then mlir-translate and
llc (NVPTX, sm_90a) when it lowers. A crash, an assertion, invalid IR
(dominance, verification) or an llc failure is a bug: the lowering must
either produce a valid kernel or reject the schedule with a diagnostic.
Mutants that crash are written next to the inputs as crash_*.mlir.

usage: python3 tools/fuzz/mutate-ws.py BUILD SEED COUNT base.mlir [base2.mlir ...]
  e.g. build/bin/blasst-compile --preset llama3-8b-prefill-blasst --emit ws -o /tmp/s.mlir
       python3 tools/fuzz/mutate-ws.py build 1 200 /tmp/s.mlir
"""
import random
import re
import subprocess
import sys

LLVM = "/usr/lib/llvm-22/bin"
FIXED = ("ws.kernel", "ws.launch", "ws.buffer", "ws.pipe", "ws.role", "ws.order")


def steps(lines):
    return [i for i, l in enumerate(lines)
            if l.strip().startswith("ws.") and not l.strip().startswith(FIXED)]


def mutate(lines, rng):
    for _ in range(rng.randint(1, 3)):
        idx = steps(lines)
        i, j = rng.choice(idx), rng.choice(idx)
        op = rng.randint(0, 5)
        if op == 0:
            lines[i] = ""
        elif op == 1:
            lines.insert(i, lines[j])
        elif op == 2:
            lines[i], lines[j] = lines[j], lines[i]
        elif op == 3:
            lines[i] = (lines[i].replace("{ahead = 1 : i64", "{ahead = -1 : i64")
                        .replace("ws.row_max @s", "ws.row_max @s {ahead = 1 : i64}", 1))
        elif op == 4:
            lines[i] = (lines[i].replace("pending = 1", f"pending = {rng.randint(0, 3)}")
                        .replace("ws.mma_wait", "ws.mma_wait {pending = 2 : i64}"))
        else:
            lines[i] = (lines[i].replace(", async}", "}")
                        .replace("ws.mma pv @p, @v -> @o", "ws.mma pv @p, @v -> @o {async}"))
    return lines


def main():
    build, seed, count, bases = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
    rng = random.Random(seed)
    texts = [open(b).read().split("\n") for b in bases]
    bad = lowered = 0
    for it in range(count):
        src = "\n".join(mutate(list(rng.choice(texts)), rng))
        p = subprocess.run([f"{build}/bin/blasst-opt", "-", "--blasst-ws-to-llvm"],
                           input=src, capture_output=True, text=True, timeout=120)
        why = None
        if p.returncode not in (0, 1) or re.search(
                r"Stack dump|LLVM ERROR|Assertion|dominate|verification failed", p.stderr):
            why = p.stderr[-400:]
        elif p.returncode == 0:
            lowered += 1
            ir = re.sub(r"blasst.spec = #attn.spec<[^>]*>, ", "", p.stdout)
            t = subprocess.run([f"{LLVM}/mlir-translate", "--mlir-to-llvmir",
                                "--allow-unregistered-dialect"], input=ir,
                               capture_output=True, text=True)
            if t.returncode:
                why = "mlir-translate: " + t.stderr[-400:]
            else:
                l = subprocess.run([f"{LLVM}/llc", "-march=nvptx64", "-mcpu=sm_90a",
                                    "-mattr=+ptx80", "-o", "/dev/null"], input=t.stdout,
                                   capture_output=True, text=True)
                if l.returncode:
                    why = "llc: " + l.stderr[-400:]
        if why:
            bad += 1
            name = f"crash_{seed}_{it}.mlir"
            open(name, "w").write(src)
            print("BUG", name, why.replace("\n", " | "))
    print(f"{count} mutants, {lowered} lowered to PTX, {bad} bugs")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
