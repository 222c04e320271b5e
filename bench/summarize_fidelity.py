#!/usr/bin/env python3
"""Summarise a bench/fidelity.sh run as Markdown tables.

Usage: summarize_fidelity.py OUTDIR

OUTDIR holds one directory per condition (listed, in order, in
OUTDIR/conditions; otherwise every subdirectory, sorted), each with one
directory per round:

    OUTDIR/<condition>/round<N>/jitterlab.hist   1 us histogram (cyclictest -h format)
    OUTDIR/<condition>/round<N>/jitterlab.json   jitterlab's result (optional)
    OUTDIR/<condition>/round<N>/cyclictest.hist  cyclictest -q -h output
    OUTDIR/<condition>/round<N>/order            the tools in the order they ran
    OUTDIR/<condition>/round<N>/jitterlab-old.hist  optional: a second jitterlab build
                                                 (JITTERLAB_OLD); adds the new/old table

Fairness: the percentiles of BOTH tools are computed here, by the same code,
from their 1 us histogram files (nearest rank: the q-quantile of n samples is
the sample of rank ceil(q*n)). A bucket line "NNNNNN CCCCCC" counts the
latencies in [N us, N+1 us); a percentile is reported as its bucket's lower
edge, i.e. the latency truncated to whole microseconds, which is what
cyclictest itself records. Samples beyond the last bucket ("# Histogram
Overflows:") count in n; a percentile that falls among them is shown as
">=H" (H = number of buckets). The max comes from "# Max Latencies:".

jitterlab's own nanosecond-resolution p50/p99/p99.9/max, from
threads[0].metrics.latency in its JSON, are printed as an extra column.

Per condition and tool, each statistic is the median over rounds; the ratio
is jitterlab's median divided by cyclictest's. Only the standard library is
used.
"""

import json
import os
import re
import statistics
import sys

# (label, numerator, denominator, JSON key)
QUANTILES = [("p50", 1, 2, "p50"), ("p99", 99, 100, "p99"), ("p99.9", 999, 1000, "p99_9")]
TOOLS = ["jitterlab", "cyclictest"]
BUCKET_LINE = re.compile(r"^\s*(\d+)\s+(\d+(?:\s+\d+)*)\s*$")


class Hist:
    """A 1 us latency histogram in cyclictest's -h format (all thread columns summed)."""

    def __init__(self, path):
        self.path = path
        self.buckets = []
        self.total = None
        self.overflows = 0
        self.max_us = None
        self.min_us = None
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = BUCKET_LINE.match(line)
                if m:
                    idx = int(m.group(1))
                    count = sum(int(c) for c in m.group(2).split())
                    if idx != len(self.buckets):
                        raise ValueError(f"{path}: bucket {idx} out of order (expected {len(self.buckets)})")
                    self.buckets.append(count)
                    continue
                if not line.startswith("#"):
                    continue
                key, _, rest = line[1:].partition(":")
                nums = [int(x) for x in rest.split() if x.isdigit()]
                key = key.strip()
                if key == "Total" and nums:
                    self.total = nums[0]
                elif key == "Histogram Overflows" and nums:
                    self.overflows = nums[0]
                elif key == "Max Latencies" and nums:
                    self.max_us = max(nums)
                elif key == "Min Latencies" and nums:
                    self.min_us = min(nums)
        if not self.buckets:
            raise ValueError(f"{path}: no histogram bucket lines (expected 'NNNNNN CCCCCC')")
        in_buckets = sum(self.buckets)
        if self.total is not None and self.total != in_buckets:
            print(f"warning: {path}: '# Total: {self.total}' but the buckets hold {in_buckets}", file=sys.stderr)

    @property
    def n(self):
        """All samples: the buckets plus the overflows (cyclictest's Total excludes overflows)."""
        return sum(self.buckets) + self.overflows

    def at_rank(self, rank):
        """(value_us, overflowed) of the sample of 1-based rank."""
        cum = 0
        for i, c in enumerate(self.buckets):
            cum += c
            if cum >= rank:
                return i, False
        return len(self.buckets), True

    def quantile(self, num, den):
        n = self.n
        if n == 0:
            return None
        rank = min(max(1, -(-n * num // den)), n)  # ceil(n*num/den), exact in integers
        return self.at_rank(rank)

    def maximum(self):
        if self.max_us is not None:
            return self.max_us, False
        if self.overflows:
            return len(self.buckets), True
        nonzero = [i for i, c in enumerate(self.buckets) if c]
        return (nonzero[-1], False) if nonzero else None

    def late(self, from_us):
        """Samples of at least from_us microseconds (buckets >= from_us, plus overflows)."""
        return sum(self.buckets[from_us:]) + self.overflows


def json_latency(path):
    """threads[0].metrics.latency from a jitterlab JSON result, or None."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        return doc["threads"][0]["metrics"]["latency"]
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return None


def median_flagged(values):
    """Median of (value, overflowed) pairs. The result is flagged as a lower
    bound only when a middle element it comes from is one (an overflow sorts
    above every exact value of the same number)."""
    values = sorted(v for v in values if v is not None)
    if not values:
        return None
    mid = len(values) // 2
    middle = values[mid : mid + 1] if len(values) % 2 else values[mid - 1 : mid + 1]
    return statistics.mean(v for v, _ in middle), any(f for _, f in middle)


def fmt_us(vf):
    if vf is None:
        return "n/a"
    v, flagged = vf
    s = f"{v:g}" if float(v).is_integer() else f"{v:.1f}"
    return (">=" if flagged else "") + s


def fmt_ratio(a, b):
    if a is None or b is None or b[0] == 0:
        return "n/a"
    r = f"{a[0] / b[0]:.2f}"
    return r + " (overflow)" if a[1] or b[1] else r


def fmt_ns_as_us(v):
    return "n/a" if v is None else f"{v / 1000:.3f}"


def conditions(outdir):
    listed = os.path.join(outdir, "conditions")
    if os.path.exists(listed):
        with open(listed, encoding="utf-8") as f:
            names = [l.strip() for l in f if l.strip()]
        return [c for c in names if os.path.isdir(os.path.join(outdir, c))]
    return sorted(d for d in os.listdir(outdir) if os.path.isdir(os.path.join(outdir, d)))


def rounds(conddir):
    found = []
    for d in os.listdir(conddir):
        m = re.fullmatch(r"round(\d+)", d)
        if m and os.path.isdir(os.path.join(conddir, d)):
            found.append((int(m.group(1)), os.path.join(conddir, d)))
    return [p for _, p in sorted(found)]


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    outdir = argv[1]
    conds = conditions(outdir)
    if not conds:
        print(f"error: no condition directories in {outdir}", file=sys.stderr)
        return 1

    try:
        with open(os.path.join(outdir, "clk_tck"), encoding="utf-8") as f:
            clk_tck = int(f.read().strip())
    except (OSError, ValueError):
        clk_tck = 100

    def steal_ms(rdir, tool):
        """Hypervisor steal on the measured CPU during one run, in ms (or "")."""
        try:
            with open(os.path.join(rdir, f"{tool}.steal"), encoding="utf-8") as f:
                return str(int(f.read().strip()) * 1000 // clk_tck)
        except (OSError, ValueError):
            return ""

    tools = list(TOOLS)
    if any(os.path.exists(os.path.join(rd, "jitterlab-old.hist"))
           for c in conds for rd in rounds(os.path.join(outdir, c))):
        tools = ["jitterlab", "jitterlab-old", "cyclictest"]
    old_new = []  # per condition: new vs old, each vs cyclictest
    summary = []  # rows of the main table
    paired = []  # per condition: median over rounds of the per-round p99 ratio
    detail = []  # rows of the per-round table
    nrounds = set()
    for cond in conds:
        rdirs = rounds(os.path.join(outdir, cond))
        stats = {t: {"q": {label: [] for label, *_ in QUANTILES}, "max": [], "n": [], "over": 0} for t in tools}
        ns = {key: [] for key in ["p50", "p99", "p99_9", "max"]}
        pair_ratios = []
        old_ratios = []  # per round: new p99 / old p99
        old_cyc = []  # per round: old p99 / cyclictest p99
        used = 0
        for rdir in rdirs:
            try:
                hists = {t: Hist(os.path.join(rdir, f"{t}.hist")) for t in tools}
            except (OSError, ValueError) as e:
                print(f"warning: skipping {rdir}: {e}", file=sys.stderr)
                continue
            used += 1
            order = ""
            try:
                with open(os.path.join(rdir, "order"), encoding="utf-8") as f:
                    order = f.read().split()[0] + " first"
            except (OSError, IndexError):
                pass
            a99 = hists["jitterlab"].quantile(99, 100)
            b99 = hists["cyclictest"].quantile(99, 100)
            if a99[0] is not None and b99[0] and not a99[1] and not b99[1]:
                pair_ratios.append(a99[0] / b99[0])
            if "jitterlab-old" in hists:
                o99 = hists["jitterlab-old"].quantile(99, 100)
                if a99[0] is not None and o99[0] and not a99[1] and not o99[1]:
                    old_ratios.append(a99[0] / o99[0])
                if o99[0] is not None and b99[0] and not o99[1] and not b99[1]:
                    old_cyc.append(o99[0] / b99[0])
            for t, h in hists.items():
                row = [cond, os.path.basename(rdir), order, t, str(h.n)]
                for label, num, den, _ in QUANTILES:
                    q = h.quantile(num, den)
                    stats[t]["q"][label].append(q)
                    row.append(fmt_us(q))
                mx = h.maximum()
                stats[t]["max"].append(mx)
                stats[t]["n"].append((h.n, False))
                stats[t]["over"] += h.overflows
                row += [fmt_us(mx), str(h.overflows), steal_ms(rdir, t)]
                detail.append(row)
            lat = json_latency(os.path.join(rdir, "jitterlab.json"))
            for key in ns:
                v = None if lat is None else lat.get(key)
                if isinstance(v, (int, float)):
                    ns[key].append(v)
        nrounds.add(used)
        if used == 0:
            continue

        def ns_median(key):
            return statistics.median(ns[key]) if ns[key] else None

        for label, _, _, key in QUANTILES:
            a = median_flagged(stats["jitterlab"]["q"][label])
            b = median_flagged(stats["cyclictest"]["q"][label])
            summary.append([cond, label, fmt_us(a), fmt_us(b), fmt_ratio(a, b), fmt_ns_as_us(ns_median(key))])
        a = median_flagged(stats["jitterlab"]["max"])
        b = median_flagged(stats["cyclictest"]["max"])
        summary.append([cond, "max (for information)", fmt_us(a), fmt_us(b), fmt_ratio(a, b), fmt_ns_as_us(ns_median("max"))])
        a = median_flagged(stats["jitterlab"]["n"])
        b = median_flagged(stats["cyclictest"]["n"])
        summary.append([cond, "samples", fmt_us(a), fmt_us(b), fmt_ratio(a, b), ""])
        summary.append([cond, "overflows (all rounds)", str(stats["jitterlab"]["over"]), str(stats["cyclictest"]["over"]), "", ""])
        if "jitterlab-old" in tools:
            a = median_flagged(stats["jitterlab"]["q"]["p99"])
            o = median_flagged(stats["jitterlab-old"]["q"]["p99"])
            med = lambda v: f"{statistics.median(v):.2f}" if v else ""
            old_new.append([cond, fmt_us(o), fmt_us(a), fmt_ratio(a, o), med(old_ratios),
                            " ".join(f"{x:.2f}" for x in old_ratios),
                            med(old_cyc), med(pair_ratios)])
        if pair_ratios:
            paired.append([cond, f"{statistics.median(pair_ratios):.2f}",
                           " ".join(f"{x:.2f}" for x in pair_ratios)])

    if not summary:
        print(f"error: no complete round under {outdir}", file=sys.stderr)
        return 1

    r = "/".join(str(n) for n in sorted(nrounds))
    print(f"## Wake-up latency fidelity: jitterlab vs cyclictest (median over {r} rounds, us)\n")
    print_table(
        ["condition", "statistic", "jitterlab (1 us hist)", "cyclictest (1 us hist)", "ratio jitterlab/cyclictest", "jitterlab ns-resolution (JSON)"],
        summary,
        "llrrrr",
    )
    print()
    print("Both tools' percentiles are computed from their 1 us histogram files by the same code "
          "(nearest rank, rank = ceil(q*n), n including overflows); a value is its bucket's lower "
          "edge, i.e. the latency truncated to whole us as cyclictest records it. \">=H\" marks a "
          "percentile that fell among the overflows. The last column is jitterlab's own "
          "HDR-histogram figure (exact below 2048 ns, within 0.1 % above), shown in us with ns "
          "digits. The max is for information only: one sample, it does not repeat from run to run.")
    if paired:
        print("\n### Paired p99 ratio (jitterlab/cyclictest within each round)\n")
        print_table(["condition", "median of per-round ratios", "per-round ratios"], paired, "lrl")
        print()
        print("Each round runs the two tools back to back, so a round's ratio compares them under "
              "nearly the same host conditions; the median of those ratios is less sensitive to "
              "noise that drifts from round to round than the ratio of two medians.")
    if old_new:
        print("\n### New build vs old build (p99, us)\n")
        print_table(["condition", "old median p99", "new median p99", "ratio new/old",
                     "median of per-round new/old", "per-round new/old",
                     "old/cyclictest (per-round median)", "new/cyclictest (per-round median)"],
                    old_new, "lrrrrlrr")
        print()
        print("Each round runs the three tools back to back on the same CPU, the order "
              "rotating from round to round; a ratio below 1 means the new build's p99 is lower.")
    print("\n### Per round\n")
    print_table(
        ["condition", "round", "order", "tool", "samples", "p50", "p99", "p99.9", "max", "overflows",
         "steal on CPU (ms)"],
        detail,
        "llllrrrrrrr",
    )
    return 0


def print_table(header, rows, align):
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---:" if a == "r" else "---" for a in align) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
