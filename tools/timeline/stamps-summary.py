#!/usr/bin/env python3
"""Summarises blasst-bench --stamps files (ptx-stamps.py's points): per
launch the CTAs' spread of entry, the intervals between the points (min,
median, max over CTAs; from %clock64 at the clock rate %globaltimer gives
over each consumer's run), the span from the first entry to the last ret,
and the spread of the main loops (the imbalance of the splits).
Usage: stamps-summary.py FILE..."""
import statistics as st, sys

def q(xs, p):
    xs = sorted(xs); return xs[min(len(xs) - 1, int(p * (len(xs) - 1) + 0.5))]

def show(title, rows):
    if not rows: return
    g = [[r[1 + i] for i in range(8)] for r in rows]
    c = [[r[9 + i] for i in range(8)] for r in rows]
    t0 = min(x[0] for x in g)
    span = (max(x[5] for x in g) - t0) / 1e3
    # clock rate (cycles per ns) from the consumers' start -> ret.
    rates = [(cc[5] - cc[1]) / (gg[5] - gg[1]) for gg, cc in zip(g, c) if gg[5] > gg[1]]
    rate = st.median(rates) if rates else 1.755
    def iv(a, b, clock=True):
        if clock:
            return [(cc[b] - cc[a]) / rate / 1e3 for cc in c]
        return [(gg[b] - gg[a]) / 1e3 for gg in g]
    def fmt(xs): return "%6.2f %6.2f %6.2f" % (min(xs), st.median(xs), max(xs))
    print(title)
    print("  CTAs %d  SMs %d  span %.2f µs  clock %.3f GHz" % (len(rows), len(set(x[7] for x in g)), span, rate))
    print("  interval (µs)            min    med    max")
    print("  entry after first CTA  ", fmt([(x[0] - t0) / 1e3 for x in g]))
    print("  entry -> consumer start", fmt(iv(0, 1)))
    print("  consumer -> Q,K0 ready ", fmt(iv(1, 2)))
    print("  K0 ready -> membar     ", fmt(iv(2, 3)))
    print("  membar -> counter      ", fmt(iv(3, 4)))
    print("  counter -> ret         ", fmt(iv(4, 5)))
    print("  entry -> ret           ", fmt(iv(0, 5)))
    ends = sorted((x[5] - t0) / 1e3 for x in g)
    print("  ret after first entry: first %.2f  median %.2f  last-but-one %.2f  last %.2f" % (
        ends[0], st.median(ends), ends[-2] if len(ends) > 1 else ends[0], ends[-1]))
    mains = iv(2, 3)
    print("  main loop spread: max/median %.3f" % (max(mains) / st.median(mains)))

for path in sys.argv[1:]:
    title, rows = None, []
    for line in open(path):
        if line.startswith('#'):
            if title: show(title, rows)
            title, rows = line[2:].strip(), []
        elif line.strip():
            rows.append([int(v) for v in line.split()])
    if title: show(title, rows)
