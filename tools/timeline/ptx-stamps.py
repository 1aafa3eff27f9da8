#!/usr/bin/env python3
"""In-kernel timeline of a split-KV decode kernel (sm_90a, blasst-compile
--emit ptx): inserts %globaltimer and %clock64 stamps into the PTX, written
to a module global `blasst_stamps` (a row of 16 u64 per CTA, row = linear
CTA id: values 0-7 %globaltimer, 8-15 %clock64 at the same points), which
`blasst-bench --stamps FILE` reads after a launch; stamps-summary.py prints
the intervals. Points (thread 0 for the entry, the consumer warpgroup's
first thread, tid 128, for the rest):
  0 CTA entry, 1 consumer start (after its setmaxnreg to 240),
  2 consumer past its first two waits (Q and the first K tile),
  3 before the epilogue's membar.gl (the split's partials written),
  4 after the bar.red that spreads the split counter's answer,
  5 ret (the merging CTA's includes the merge); value 7 holds %smid.
The anchors are textual (the first tid read, the setmaxnreg to 240, the
first membar.gl / bar.red.or.pred, ret): a kernel without them (prefill,
one split) is refused with the anchors that are missing. The stamps cost
0.3-1 us per launch (docs/results/2026-12-03-session22.md).
Usage: ptx-stamps.py IN.ptx OUT.ptx, then ptxas -arch=sm_90a OUT.ptx and a
.meta without content_sha256 (the hash is the unstamped cubin's)."""
import re, sys

src = open(sys.argv[1]).read().split('\n')
n = [0]

def stamp(slot, tid, smid=False):
    n[0] += 1
    k = n[0]
    v = f"%bsv{k}"
    lines = [
        "{",
        f".reg .pred %bsp{k}; .reg .u32 %bst{k}, %bsc{k}, %bsn{k}; .reg .u64 %bsa{k}, %bso{k}, {v}, %bsk{k};",
        f"mov.u32 %bst{k}, %tid.x;",
        f"setp.eq.u32 %bsp{k}, %bst{k}, {tid};",
        f"mov.u32 %bsc{k}, %ctaid.z; mov.u32 %bsn{k}, %nctaid.y; mul.lo.u32 %bsc{k}, %bsc{k}, %bsn{k};",
        f"mov.u32 %bsn{k}, %ctaid.y; add.u32 %bsc{k}, %bsc{k}, %bsn{k};",
        f"mov.u32 %bsn{k}, %nctaid.x; mul.lo.u32 %bsc{k}, %bsc{k}, %bsn{k};",
        f"mov.u32 %bsn{k}, %ctaid.x; add.u32 %bsc{k}, %bsc{k}, %bsn{k};",
        f"mul.wide.u32 %bso{k}, %bsc{k}, 128;",
        f"mov.u64 %bsa{k}, blasst_stamps; add.u64 %bsa{k}, %bsa{k}, %bso{k};",
        f"mov.u64 {v}, %globaltimer;",
        f"mov.u64 %bsk{k}, %clock64;",
        f"@%bsp{k} st.global.u64 [%bsa{k}+{slot*8}], {v};",
        f"@%bsp{k} st.global.u64 [%bsa{k}+{(slot+8)*8}], %bsk{k};",
    ]
    if smid:
        lines += [f"mov.u32 %bsn{k}, %smid; cvt.u64.u32 {v}, %bsn{k};",
                  f"@%bsp{k} st.global.u64 [%bsa{k}+56], {v};"]
    return lines + ["}"]

out = []
state = None
ends_after_consumer = 0
done = set()
entry_seen = False
for line in src:
    s = line.strip()
    if s.startswith('.visible .entry') and not entry_seen:
        out.append('.visible .global .align 8 .b64 blasst_stamps[65536];')
        entry_seen = True
    if s == 'ret;' and 'ret' not in done:
        out += stamp(5, 128)
        out.append(line); done.add('ret'); continue
    if s.startswith('membar.gl;') and 'membar' not in done:
        out += stamp(3, 128)
        out.append(line); done.add('membar'); continue
    out.append(line)
    if re.match(r'mov\.u32\s+%r\d+, %tid\.x;', s) and 'entry' not in done:
        out += stamp(0, 0, smid=True); done.add('entry')
    elif s.startswith('setmaxnreg.dec.sync.aligned.u32') and s.endswith('240;') and 'cons' not in done:
        out += stamp(1, 128); done.add('cons'); state = 'cons'
    elif s == '// end inline asm' and state == 'cons':
        ends_after_consumer += 1
        if ends_after_consumer == 2:
            out += stamp(2, 128); state = None; done.add('waits')
    elif s.startswith('bar.red.or.pred') and 'red' not in done:
        out += stamp(4, 128); done.add('red')
need = {'entry', 'cons', 'waits', 'membar', 'red', 'ret'}
if need - done:
    sys.exit(f"ptx-stamps.py: {sys.argv[1]}: anchors not found: {sorted(need - done)} (a split-KV decode kernel for sm_90a?)")
open(sys.argv[2], 'w').write('\n'.join(out))
