#!/usr/bin/env python3
"""Deterministic mutation fuzzing of blasst-opt and blasst-compile over the lit
inputs (the ctest `blasst-fuzz`).

Seeds: every `.mlir` file under test/ (split at `// -----` like
-split-input-file), every `.spec` file under test/ and one spec per preset.
Each mutant (1-3 line, token or byte edits; seeded, so a run is repeatable)
runs through the pipeline its content calls for: ws IR through
--blasst-ws-to-llvm, attn IR through --blasst-attn-to-llvm (or the sm_100a
schedule, or convert-attn-to-ws with random options of its own: the pass must
check what blasst-compile checks first), anything else through the parser and
verifiers; specs through blasst-compile with random schedule flags (values no
schedule takes among them). A failure is
  crash  a signal, an exit code other than 0/1, or LLVM's crash output
         ("PLEASE submit a bug report", "Stack dump", "LLVM ERROR",
         an assertion, "UNREACHABLE")
  hang   no answer within --timeout seconds
  sync   a ws kernel that lowers (exit 0) and still does after one of its
         ws.acquire / ws.release / ws.tma_load lines is deleted:
         blasst-verify-sync runs in the pipeline and must reject it.
Every such line of every ws kernel of the lit inputs that lowers is deleted
once, on top of --count random mutants. Deletions the checker is known to
miss are listed in tools/fuzz/known-sync-escapes.txt: they are reported, not
failures; a listed one that no longer lowers (or no longer exists) is a
failure, so the list stays current.

Failures are written to --out (default BUILD/fuzz-failures) as the input plus
the command that fails on it; the exit status is 1 if there is any.

usage: fuzz-lit.py --build BUILD [--src SRC] [--seed N] [--count N]
                   [--jobs N] [--timeout S] [--out DIR]
(--seed and --count default to $BLASST_FUZZ_SEED / $BLASST_FUZZ_COUNT, else
1 and 500: about 30 s on the 2-core machine.)
"""
import argparse
import concurrent.futures
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

CRASH = re.compile(r"PLEASE submit a bug report|Stack dump|LLVM ERROR|"
                   r"Assertion .* failed|UNREACHABLE executed")
SYNC_STEP = re.compile(r"^\s*ws\.(acquire|release|tma_load)\b")
SPLIT = re.compile(r"^// -----\s*$", re.M)

NUMBERS = ["0", "1", "-1", "2", "3", "7", "15", "16", "17", "24", "63", "64",
           "65", "96", "127", "128", "129", "192", "255", "256", "257", "512",
           "1024", "4096", "65536", "2147483647", "2147483648", "-2147483648",
           "9223372036854775807", "99999999999999999999"]
KEYWORDS = [["sm_90a", "sm_100a"],
            ["load", "compute", "mma", "softmax", "correction", "epilogue"],
            ["smem", "regs", "tmem"], ["qk", "pv"], ["bf16", "f16", "f32"],
            ["true", "false"], ["prefill", "decode"],
            ["acquire", "release"], ["turn_wait", "turn_pass"]]
SPEC_VALUES = ["0", "-1", "1", "64", "80", "96", "128", "256", "1025",
               "99999999999", "1e308", "1e-320", "-1e308", "nan", "inf",
               "-inf", "0x10", "", "bf16", "f16", "fp8", "none", "default",
               "true", "false", "decode", "blasst:a=0", "blasst:a=1e308",
               "blasst:ln_lambda=-1e400", "blasst:ln_lambda=nan",
               "blasst:ln_lambda=-8", "blasst:a=256", "blasst:", "8b-name"]
SPEC_KEYS = ["name", "preset", "dtype", "head_dim", "head_dim_v", "q_heads",
             "kv_heads", "causal", "phase", "softmax_scale", "sparsity",
             "lambda_max", "lse", "stats", "bogus"]
KNOBS = ["--block-m=64", "--block-m=128", "--block-m=256", "--block-n=16",
         "--block-n=64", "--block-n=80", "--block-n=176", "--block-n=240",
         "--stages=1", "--stages=3", "--stages=17", "--producer-regs=24",
         "--consumer-regs=232", "--consumer-regs=256", "--overlap=false",
         "--pingpong=true", "--persistent=true", "--p-in-registers=false",
         "--q-in-registers=true", "--kv-multicast=true",
         "--v-on-demand=true", "--v-on-demand=false",
         "--v-speculate-after=0", "--v-speculate-after=3", "--stats",
         "--sparsity=blasst:a=64", "--no-blasst-vote",
         # Values no schedule takes (session 39: truncated or crashing).
         "--block-m=192", "--block-m=60", "--kv-splits=4294967297",
         "--kv-splits=1025", "--ctas-per-sm=0", "--ctas-per-sm=2",
         "--v-speculate-after=4294967297", "--split-chunk=0",
         "--k-kept-run=9", "--k-kept-ahead=-1"]
# convert-attn-to-ws's own options, given to blasst-opt directly (the pass
# must check them itself: blasst-compile and the JIT check them first).
PASS_SIZES = ["block-m", "block-n", "stages", "producer-regs",
              "consumer-regs", "kv-splits", "split-chunk", "ctas-per-sm"]
PASS_SWITCHES = ["balanced-splits", "kv-cp-async", "kv-multicast", "lean",
                 "lean-entry", "merge-kernel", "overlap", "p-in-registers",
                 "persistent", "pingpong", "q-in-registers",
                 "short-entry", "split-interleave", "tma-entry"]


def attn_pass_options(rng):
    opts = ["target=" + rng.choice(["sm_90a", "sm_90a", "sm_100a"])]
    for _ in range(rng.randint(1, 3)):
        if rng.random() < 0.6:
            opts.append(rng.choice(PASS_SIZES) + "=" + rng.choice(NUMBERS))
        else:
            opts.append(rng.choice(PASS_SWITCHES) + "=" +
                        rng.choice(["true", "false", "auto"]))
    return "--convert-attn-to-ws=" + " ".join(opts)


def chunks_of(path):
    text = open(path, encoding="utf-8", errors="surrogateescape").read()
    return [c for c in SPLIT.split(text) if c.strip()]


def mutate_lines(lines, rng):
    """1-3 edits of a list of lines; returns a new list."""
    lines = list(lines)
    for _ in range(rng.randint(1, 3)):
        if not lines:
            break
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        op = rng.randrange(8)
        if op == 0:
            del lines[i]
        elif op == 1:
            lines.insert(i, lines[j])
        elif op == 2:
            lines[i], lines[j] = lines[j], lines[i]
        elif op == 3:  # a number
            nums = list(re.finditer(r"-?\b\d+\b", lines[i]))
            if nums:
                m = rng.choice(nums)
                lines[i] = (lines[i][:m.start()] + rng.choice(NUMBERS) +
                            lines[i][m.end():])
        elif op == 4:  # a symbol reference
            syms = sorted(set(re.findall(r"@[\w.]+", "\n".join(lines))))
            here = re.findall(r"@[\w.]+", lines[i])
            if syms and here:
                lines[i] = lines[i].replace(rng.choice(here),
                                            rng.choice(syms), 1)
        elif op == 5:  # a keyword of the same family
            group = rng.choice(KEYWORDS)
            hits = [w for w in group if re.search(rf"\b{w}\b", lines[i])]
            if hits:
                lines[i] = re.sub(rf"\b{rng.choice(hits)}\b",
                                  rng.choice(group), lines[i], count=1)
        elif op == 6:  # a byte
            s = lines[i]
            k = rng.randrange(len(s) + 1)
            if rng.random() < 0.5 and s:
                lines[i] = s[:k] + s[k + 1:]
            else:
                lines[i] = s[:k] + rng.choice("{}()[]<>,:=@%#\"x0-") + s[k:]
        else:  # truncate
            del lines[i:]
    return lines


def mutate_spec(text, rng):
    lines = text.split("\n")
    for _ in range(rng.randint(1, 3)):
        op = rng.randrange(6)
        i = rng.randrange(len(lines)) if lines else 0
        if op == 0 and lines:  # a value
            m = re.match(r"\s*([\w]+)\s*=", lines[i])
            key = m.group(1) if m else rng.choice(SPEC_KEYS)
            lines[i] = f"{key} = {rng.choice(SPEC_VALUES)}"
        elif op == 1:  # a key
            lines.insert(i, f"{rng.choice(SPEC_KEYS)} = "
                            f"{rng.choice(SPEC_VALUES)}")
        elif op == 2 and lines:
            del lines[i]
        elif op == 3 and lines:
            lines.insert(i, lines[rng.randrange(len(lines))])
        elif op == 4:  # raw bytes, control characters included
            # Bytes >= 0x80 as surrogates: written back as the raw byte.
            junk = "".join(chr(b if b < 0x80 else 0xDC00 + b) for b in (
                rng.randrange(256) for _ in range(rng.randint(1, 12))))
            lines.insert(i, junk)
        else:
            text = "\n".join(lines)
            lines = text[:rng.randrange(len(text) + 1)].split("\n")
    return "\n".join(lines)


def sync_key(label, lines, i):
    """What names a deleted sync step across edits of its file: the file,
    kernel, role, the step and which occurrence of it in the role."""
    kernel = role = "?"
    start = 0
    for j in range(i, -1, -1):
        m = re.match(r"\s*ws\.role (@[\w.]+)", lines[j])
        if m and role == "?":
            role, start = m.group(1), j
        m = re.match(r"\s*ws\.kernel (@[\w.]+)", lines[j])
        if m:
            kernel = m.group(1)
            break
    step = lines[i].strip()
    nth = sum(1 for l in lines[start:i + 1] if l.strip() == step)
    return (label.split("#")[0], kernel, role, step, str(nth))


def read_known(path):
    known = set()
    if os.path.exists(path):
        for line in open(path):
            line = line.split("#", 1)[0].strip()
            if line:
                known.add(tuple(f.strip() for f in line.split("|")))
    return known


def mlir_command(text, rng):
    if "ws.kernel" in text:
        return rng.choice([["--blasst-ws-to-llvm"], ["--blasst-ws-to-llvm"],
                           ["--blasst-insert-vote", "--blasst-ws-to-llvm"],
                           ["--ws-print-protocol"]])
    if "attn.attention" in text:
        return rng.choice([["--blasst-attn-to-llvm"], ["--blasst-attn-to-llvm"],
                           ["--convert-attn-to-ws=target=sm_100a"],
                           [attn_pass_options(rng)], [attn_pass_options(rng)],
                           [attn_pass_options(rng), "--blasst-insert-vote",
                            "--blasst-ws-to-llvm"]])
    return []


class Runner:
    def __init__(self, args):
        self.args = args
        self.tmp = tempfile.mkdtemp(prefix="blasst-fuzz-")
        self.opt = os.path.join(args.build, "bin", "blasst-opt")
        self.compile = os.path.join(args.build, "bin", "blasst-compile")

    def run(self, name, content, suffix, argv):
        """Runs argv (with {} replaced by the input file). Returns
        (kind, detail): kind is None, 'crash' or 'hang'; rc for exit 0."""
        path = os.path.join(self.tmp, f"{name}{suffix}")
        with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(content)
        cmd = [path if a == "{}" else a for a in argv]
        try:
            p = subprocess.run(cmd, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, timeout=self.args.timeout)
        except subprocess.TimeoutExpired:
            return "hang", cmd, -1, f"no answer in {self.args.timeout} s"
        err = p.stderr.decode("latin-1")
        if p.returncode not in (0, 1) or CRASH.search(err):
            return "crash", cmd, p.returncode, err[-1500:]
        return None, cmd, p.returncode, ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--src", default=os.path.dirname(os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))))
    # Another seed or more mutants for a longer run, without editing ctest:
    # BLASST_FUZZ_SEED=7 BLASST_FUZZ_COUNT=5000 ctest -R blasst-fuzz
    ap.add_argument("--seed", type=int,
                    default=int(os.environ.get("BLASST_FUZZ_SEED", 1)))
    ap.add_argument("--count", type=int,
                    default=int(os.environ.get("BLASST_FUZZ_COUNT", 500)))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=30)
    ap.add_argument("--out")
    args = ap.parse_args()
    out = args.out or os.path.join(args.build, "fuzz-failures")
    rng = random.Random(args.seed)
    runner = Runner(args)

    test_dir = os.path.join(args.src, "test")
    mlir_seeds, spec_seeds = [], []
    for root, dirs, files in os.walk(test_dir):
        dirs.sort()
        for f in sorted(files):
            path = os.path.join(root, f)
            rel = os.path.relpath(path, args.src)
            if f.endswith(".mlir"):
                mlir_seeds += [(f"{rel}#{k}", c)
                               for k, c in enumerate(chunks_of(path))]
            elif f.endswith(".spec"):
                spec_seeds.append((rel, open(path, encoding="utf-8",
                                             errors="surrogateescape").read()))
    presets = subprocess.run([runner.compile, "--list-presets"],
                             capture_output=True, text=True).stdout.split()
    spec_seeds += [(f"preset:{p}", f"preset = {p}\n") for p in presets]

    # Jobs: (label, content, suffix, argv, sync-deletion?)
    jobs = []
    for n in range(args.count):
        if rng.random() < 0.75:
            label, text = rng.choice(mlir_seeds)
            mutant = "\n".join(mutate_lines(text.split("\n"), rng))
            argv = [runner.opt, "{}"] + mlir_command(mutant, rng)
            jobs.append((f"m{n}", label, mutant, ".mlir", argv, None))
        else:
            label, text = rng.choice(spec_seeds)
            mutant = mutate_spec(text, rng)
            target = rng.choice(["sm_90a", "sm_90a", "sm_100a"])
            emit = "ws" if target == "sm_100a" else rng.choice(
                ["ws", "llvm-dialect", "ptx"])
            knobs = rng.sample(KNOBS, rng.randint(0, 2))
            argv = [runner.compile, "--spec", "{}", "--target", target,
                    "--emit", emit, "-o", os.devnull] + knobs
            jobs.append((f"s{n}", label, mutant, ".spec", argv, None))

    # Sync deletions: kernels of the lit inputs that lower as they are.
    ws_seeds = [(l, t) for l, t in mlir_seeds if "ws.kernel" in t and
                any(SYNC_STEP.match(x) for x in t.split("\n"))]
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        base = list(pool.map(
            lambda k: runner.run(f"base{k}", ws_seeds[k][1], ".mlir",
                                 [runner.opt, "{}", "--blasst-ws-to-llvm"]),
            range(len(ws_seeds))))
    candidates = []
    for (label, text), (kind, _, rc, _) in zip(ws_seeds, base):
        if kind is None and rc == 0:
            lines = text.split("\n")
            candidates += [(label, lines, i, sync_key(label, lines, i))
                           for i, l in enumerate(lines) if SYNC_STEP.match(l)]
    for n, (label, lines, i, key) in enumerate(candidates):
        mutant = "\n".join(lines[:i] + lines[i + 1:])
        jobs.append((f"d{n}", f"{label} without line {i + 1}: "
                     f"{lines[i].strip()}", mutant, ".mlir",
                     [runner.opt, "{}", "--blasst-ws-to-llvm"], key))
    known = read_known(os.path.join(args.src, "tools", "fuzz",
                                    "known-sync-escapes.txt"))

    def work(job):
        name, label, content, suffix, argv, key = job
        kind, cmd, rc, detail = runner.run(name, content, suffix, argv)
        if kind is None and rc == 0 and not key:
            kind = "clean"
        elif kind is None and key and rc == 0:
            kind, detail = "sync", "lowered with exit 0 (blasst-verify-sync " \
                                   "did not reject it)\n" + " | ".join(key)
        return job, kind, cmd, detail

    failures, escaped = [], set()
    counts = {"crash": 0, "hang": 0, "sync": 0, "clean": 0}
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for job, kind, cmd, detail in pool.map(work, jobs):
            if kind == "sync":
                escaped.add(job[5])
                if job[5] in known:
                    continue
            if kind == "clean":
                counts[kind] += 1
            elif kind:
                counts[kind] += 1
                failures.append((job, kind, cmd, detail))
    shutil.rmtree(runner.tmp, ignore_errors=True)
    stale = sorted(known - escaped)

    if failures:
        os.makedirs(out, exist_ok=True)
    for (name, label, content, suffix, argv, _), kind, cmd, detail in failures:
        path = os.path.join(out, f"{kind}-seed{args.seed}-{name}{suffix}")
        with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(content)
        shown = " ".join(path if a.endswith(f"{name}{suffix}") else a
                         for a in cmd)
        print(f"{kind.upper()}: {label}\n  {shown}\n  "
              + detail.strip().replace("\n", "\n  ")[:1500])
    for key in stale:
        print("STALE: known-sync-escapes.txt lists a deletion that no longer "
              "lowers (or no longer exists): remove it\n  " + " | ".join(key))
    print(f"blasst-fuzz: seed {args.seed}: {args.count} mutants of "
          f"{len(mlir_seeds)} IR chunks and {len(spec_seeds)} specs "
          f"({counts['clean']} went through with exit 0), "
          f"{len(candidates)} sync-step deletions; "
          f"{counts['crash']} crashes, {counts['hang']} hangs, "
          f"{counts['sync']} new deletions that still lower "
          f"({len(known & escaped)} known), {len(stale)} stale known")
    return 1 if failures or stale else 0


if __name__ == "__main__":
    sys.exit(main())
