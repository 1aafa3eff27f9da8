#!/usr/bin/env python3
"""Summarises blasst-bench --stamps files of kernels built with
blasst-compile --timeline (the layout is convert-ws-to-nvvm's, see
lib/Conversion/WSToNVVM/LoweringBase.h, kTimeline*): row = CTA x 8 + the
item's ordinal on the CTA, 16 u64 per row, %globaltimer in ns at
  0 CTA entry, 1-3 load role: item start, first wait passed, item end,
  4-9 first compute role: item start, first and second wait passed,
    epilogue start, split counter answered (decode with splits), item end,
  12 %smid.
Per launch: the span from the first entry to the last item end, and per
interval the min / median / max over the items (or CTAs) that have both
points; with several items per CTA also the gaps between them.
Usage: stamps-summary.py FILE..."""
import statistics as st
import sys

ROWS_PER_CTA = 8
NAMES = [
    ("entry -> consumer start", 0, 4, "first"),
    ("load: start -> first wait", 1, 2, "all"),
    ("consumer: start -> wait 1", 4, 5, "all"),
    ("consumer: wait 1 -> wait 2", 5, 6, "all"),
    ("consumer: wait 2 -> epilogue", 6, 7, "all"),
    ("epilogue -> counter", 7, 8, "all"),
    ("counter -> item end", 8, 9, "all"),
    ("epilogue -> item end", 7, 9, "all"),
]


def fmt(xs):
    return "%8.2f %8.2f %8.2f" % (min(xs), st.median(xs), max(xs))


def show(title, rows):
    ctas = {}
    for r in rows:
        ctas.setdefault(r[0] // ROWS_PER_CTA, {})[r[0] % ROWS_PER_CTA] = r[1:]
    entries = [items[0][0] for items in ctas.values() if 0 in items and items[0][0]]
    ends = [v[9] for items in ctas.values() for v in items.values() if v[9]]
    if not entries or not ends:
        print(title + "\n  (no entry or item-end stamps)")
        return
    t0 = min(entries)
    nitems = sum(len(items) for items in ctas.values())
    smids = {items[0][12] for items in ctas.values() if 0 in items}
    print(title)
    print("  CTAs %d  items %d  SMs %d  span %.2f us (first entry to last item end)"
          % (len(ctas), nitems, len(smids), (max(ends) - t0) / 1e3))
    print("  interval (us)                      min   median      max")
    print("  %-30s %s" % ("CTA entry after the first", fmt([(e - t0) / 1e3 for e in entries])))
    for name, a, b, which in NAMES:
        xs = []
        for items in ctas.values():
            for k, v in sorted(items.items()):
                if which == "first" and k:
                    continue
                if v[a] and v[b]:
                    xs.append((v[b] - v[a]) / 1e3)
        if xs:
            print("  %-30s %s" % (name, fmt(xs)))
    gaps, loads = [], []
    for items in ctas.values():
        for k in sorted(items):
            if k + 1 in items:
                v, w = items[k], items[k + 1]
                if v[9] and w[6]:
                    gaps.append((w[6] - v[9]) / 1e3)
                if v[3] and w[1]:
                    loads.append((w[1] - v[3]) / 1e3)
    if gaps:
        print("  %-30s %s" % ("item end -> next wait 2", fmt(gaps)))
    if loads:
        print("  %-30s %s" % ("load: item end -> next start", fmt(loads)))
    mains = [(v[7] - v[6]) / 1e3 for items in ctas.values() for v in items.values()
             if v[6] and v[7]]
    if len(mains) > 1:
        print("  main loops: max / median %.3f" % (max(mains) / st.median(mains)))
    last = sorted(ends)
    print("  item ends after the first entry: first %.2f  median %.2f  last %.2f"
          % ((last[0] - t0) / 1e3, (st.median(last) - t0) / 1e3, (last[-1] - t0) / 1e3))


for path in sys.argv[1:]:
    title, rows = None, []
    for line in open(path):
        if line.startswith("#"):
            if title:
                show(title, rows)
            title, rows = line[1:].strip(), []
        elif line.strip():
            rows.append([int(v) for v in line.split()])
    if title:
        show(title, rows)
