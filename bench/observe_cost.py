#!/usr/bin/env python3
"""What observing costs the observed task: cyclictest's wake-up latency alone
and observed by `jitterlab run observe`, in many short interleaved rounds,
with a bootstrap interval on the pooled p99 ratio.

    sudo [ROUNDS=20] [SECS=5] [CPU=1] [OUT=bench/out/observe-cost] [OPTS="--explain"] \
        python3 bench/observe_cost.py [JITTERLAB [JITTERLAB2 ...]]
    REPORT=1 [ROUNDS=N] OUT=DIR python3 bench/observe_cost.py [JITTERLAB ...]
        # the tables again, from the files in DIR; nothing is run

Each round runs `cyclictest -q -m -p95 -i1000 -t1 -a CPU -h 20000` for SECS s
once alone (`-D SECS`) and once started by each jitterlab binary given
(`jitterlab run observe --duration SECS --no-db [OPTS] -- cyclictest …`; two
builds compare two observers in one run), so the whole cyclictest run is
observed (bench/observe_agree.sh attaches after 1 s, which leaves a tenth of
its "observed" histogram unobserved). The order of the arms rotates from
round to round, so a drift of the machine falls on every arm alike.
cyclictest writes its histogram (1 us bins) to a file in OUT; the observer is
stopped by its duration and stops cyclictest with it.

Printed: one row per round (p50 / p99 / max, us, of each arm, p50 and p99
interpolated within their bin; the events each observer read), then per arm
the pool of every round's histograms: p50, p99, max, mean, the p50 and mean
above alone's, and the pooled p99 ratio with its 95 % interval from 2 000
bootstrap resamples of the rounds. A round one of whose observers did not run
(no "events read" line) is left out and said.
"""

import os
import random
import re
import shutil
import subprocess
import sys
import time

JLS = sys.argv[1:] or ["target/release/jitterlab"]
ROUNDS = int(os.environ.get("ROUNDS", os.environ.get("PAIRS", "20")))
SECS = int(os.environ.get("SECS", "5"))
CPU = os.environ.get("CPU", "1")
OUT = os.environ.get("OUT", "bench/out/observe-cost")
OPTS = os.environ.get("OPTS", "").split()
# REPORT=1: print the tables of the rounds already in OUT, run nothing.
REPORT = os.environ.get("REPORT") == "1"
BINS = 20000
# The arms: alone, then one per binary ("obsd" for the first, as before
# there could be two, "obsd2", … for the others).
ARMS = ["alone"] + ["obsd" if i == 0 else f"obsd{i + 1}" for i in range(len(JLS))]


def cyclictest(hist):
    return ["cyclictest", "-q", "-m", "-p95", "-i1000", "-t1", "-a", CPU,
            "-h", str(BINS), f"--histfile={hist}"]


def read_hist(path):
    """Counts per 1 us bin (only the bins that hold any) and the maximum
    of a cyclictest histogram file."""
    counts = {}
    top = 0
    with open(path) as f:
        for line in f:
            if line[:1].isdigit():
                b, n = (int(x) for x in line.split()[:2])
                if n:
                    counts[b] = counts.get(b, 0) + n
            elif line.startswith("# Max Latencies:"):
                top = max(top, int(line.split()[3]))
    return counts, top


def pcts(counts, top):
    """p50, p99 (interpolated within their 1 us bin, as the counts spread
    over it evenly), max and mean (us) of binned counts."""
    total = sum(counts.values())
    if total == 0:
        return None
    found = {}
    c = 0
    for i in sorted(counts):
        n = counts[i]
        for q in (0.50, 0.99):
            if q not in found and c + n >= total * q:
                found[q] = i + (total * q - c) / n
        c += n
    mean = sum(i * n for i, n in counts.items()) / total
    return found[0.50], found[0.99], top, mean


def pool(hists):
    counts = {}
    top = 0
    for h, t in hists:
        for i, n in h.items():
            counts[i] = counts.get(i, 0) + n
        top = max(top, t)
    return counts, top


def run(arm, k):
    """Runs `arm` of round `k` (unless REPORT); its histogram, and for an
    observed arm the events its observer read (None: it did not run) and
    its output."""
    hist = os.path.abspath(f"{OUT}/{arm}-{k}.hist")
    if arm == "alone":
        if not REPORT:
            subprocess.run(cyclictest(hist) + ["-D", f"{SECS}s"], check=True,
                           stdout=subprocess.DEVNULL)
        return hist, 0, ""
    txt = f"{OUT}/{arm}-{k}.txt"
    if not REPORT:
        jl = JLS[ARMS.index(arm) - 1]
        with open(txt, "w") as out:
            subprocess.run([jl, "run", "observe", "--duration", f"{SECS}s", "--no-db", *OPTS,
                            "--", *cyclictest(hist)],
                           stdout=out, stderr=subprocess.STDOUT)
    text = open(txt).read()
    m = re.search(r"trace: (\d+) events read", text)
    return hist, (int(m.group(1)) if m else None), text


def fmt(p):
    return "%.1f / %.1f / %d" % p[:3]


def interval(kept, arm):
    """The pooled p99 ratio of `arm` to alone, and its 95 % bootstrap
    interval over the rounds."""
    rng = random.Random(1)
    boot = []
    for _ in range(2000):
        pick = [kept[rng.randrange(len(kept))] for _ in kept]
        ba = pcts(*pool([r["alone"] for r in pick]))
        bo = pcts(*pool([r[arm] for r in pick]))
        boot.append(bo[1] / ba[1])
    boot.sort()
    return boot[int(0.025 * len(boot))], boot[int(0.975 * len(boot)) - 1]


def main():
    if not shutil.which("cyclictest") and not REPORT:
        sys.exit("cyclictest is missing: apt-get install rt-tests")
    for jl in JLS:
        if not os.access(jl, os.X_OK) and not REPORT:
            sys.exit(f"{jl} is not built: cargo build --release")
    os.makedirs(OUT, exist_ok=True)
    print(f"# {ROUNDS} rounds x {SECS} s, CPU {CPU}, observers: {' '.join(JLS)}, "
          f"options: {' '.join(OPTS) or '(none)'}")
    observed = ARMS[1:]
    print("| round | order | alone p50 / p99 / max | "
          + " | ".join(f"{a} p50 / p99 / max | p99 ratio | events" for a in observed) + " |")
    print("|---|---|---|" + "---|---|---|" * len(observed))
    kept = []
    for k in range(1, ROUNDS + 1):
        shift = (k - 1) % len(ARMS)
        order = ARMS[shift:] + ARMS[:shift]
        got = {}
        for arm in order:
            got[arm] = run(arm, k)
            if not REPORT:
                time.sleep(0.5)
        a = read_hist(got["alone"][0])
        pa = pcts(*a)
        cells, row = [], {"alone": a}
        for arm in observed:
            hist, events, text = got[arm]
            if events is None or not os.path.exists(hist):
                first = (text.strip().splitlines() or ["no output"])[0][:70]
                cells.append(f"not observed: {first} | | ")
                row = None
                continue
            o = read_hist(hist)
            po = pcts(*o)
            cells.append(f"{fmt(po)} | {po[1] / pa[1]:.2f} | {events}")
            if row is not None:
                row[arm] = o
        print(f"| {k} | {'/'.join(order)} | {fmt(pa)} | " + " | ".join(cells) + " |", flush=True)
        if row is not None:
            kept.append(row)
    if not kept:
        sys.exit("no round was observed")
    pa = pcts(*pool([r["alone"] for r in kept]))
    print()
    print(f"| pooled over {len(kept)} rounds | p50 / p99 / max | mean | p50 above alone | "
          "mean above alone | p99 ratio (95 % interval) |")
    print("|---|---|---|---|---|---|")
    print(f"| alone | {fmt(pa)} | {pa[3]:.2f} | | | |")
    for arm in observed:
        po = pcts(*pool([r[arm] for r in kept]))
        lo, hi = interval(kept, arm)
        print(f"| {arm} | {fmt(po)} | {po[3]:.2f} | {po[0] - pa[0]:+.2f} | {po[3] - pa[3]:+.2f} | "
              f"{po[1] / pa[1]:.3f} ({lo:.3f}-{hi:.3f}) |")


if __name__ == "__main__":
    main()
