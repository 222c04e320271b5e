#!/usr/bin/env bash
# Observing our own probe: `jitterlab run observe` on `jitterlab run cyclic`,
# and the observer's figures set beside the ones the probe measured itself,
# per metric and per cycle.
#
# Per round: `jitterlab run cyclic --cpu CPU --period 1ms --duration SECS`
# and, started at once beside it, `jitterlab run observe --pid PID` of it
# for SECS+3 s (the observer finds the probe thread, `cyclic-cpu1`, among
# the process's threads when it starts, and ends after it). Both keep every
# cycle (`--outliers 10000`: each cycle's value, cycle number and start
# time since the run's first release; so SECS is at most 10 at 1 ms), and
# the observer's cycles are paired with the probe's by their start times
# (the offset between the two runs' time bases: of those that pair the most,
# the one whose pairs' latency differences spread the least).
#
# Printed per round and metric (latency, period, jitter, execution time):
# p50 / p99 / max of each run over its own cycles, and over the cycles
# matched, the per-cycle difference probe - observer (p1 / p50 / p99);
# then the cycle counts: the probe's, the observer's, the probe's cycles
# within the span the observer saw (it attaches some 100 ms after the first
# release), and those of them the observer has no cycle for.
#
# What differs by construction: the probe's start and end are its own
# CLOCK_MONOTONIC reads after the sleep returns and after the scan; the
# observer's are the kernel's switch in and switch out (the trace clock is
# `mono`, the same clock). So per cycle the observer's latency is shorter
# by the return from clock_nanosleep to the probe's first clock read, and
# its execution time longer by that plus the sample's recording and the
# next clock_nanosleep up to the switch out; period and jitter, start to
# start, agree up to the variation of that return path.
#
# Environment (defaults):
#   ROUNDS=3 SECS=10 CPU=1
#   JITTERLAB=target/release/jitterlab
#   OUT=bench/out/observe-self-<date>    output directory
# Smoke test: ROUNDS=1 SECS=2 bench/observe_self.sh
#
# Needs root (SCHED_FIFO, mlockall, tracefs) and python3. Sends no traffic.
# A run refused because another jitterlab holds the machine lock is retried
# (the pair together) after a second, for up to 10 minutes.
set -euo pipefail

ROUNDS=${ROUNDS:-3}
SECS=${SECS:-10}
CPU=${CPU:-1}
OUT=${OUT:-bench/out/observe-self-$(date -u +%Y%m%d-%H%M%S)}
SCRIPT=observe_self.sh
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"

need python3 python3
need_uint ROUNDS SECS CPU
[ "$SECS" -ge 1 ] && [ "$SECS" -le 10 ] || die "SECS=$SECS: give 1 to 10 (every cycle is kept: --outliers takes at most 10000)"
need_root_cpu "$CPU"
ensure_jitterlab
warn_if_busy
mkdir -p "$OUT"

{
    echo "date: $(date -u +%FT%TZ)"
    echo "kernel: $(uname -r)"
    echo "jitterlab: $("$JITTERLAB" --version)"
    echo "load at start: $(cat /proc/loadavg)"
    echo "cyclic: $JITTERLAB run cyclic --cpu $CPU --period 1ms --duration ${SECS}s --no-db --outliers 10000 --json $OUT/cyclic-R.json"
    echo "observe: $JITTERLAB run observe --pid PID --duration $((SECS + 3))s --no-db --outliers 10000 --json $OUT/observe-R.json"
} >"$OUT/meta.txt"

# Each run has its own journal file: the observer journals its trace
# instance, the probe changes nothing it must journal.
CYCLIC=""
extra_cleanup() {
    if [[ -n $CYCLIC ]]; then
        kill -TERM "$CYCLIC" 2>/dev/null || true
        wait "$CYCLIC" 2>/dev/null || true
        CYCLIC=""
    fi
}
locked() { grep -q "machine lock\|another jitterlab" "$1"; }

# pair R: the probe and its observer, retried while the lock is held.
pair() {
    local r=$1 tries=0 orc crc
    while :; do
        JITTERLAB_JOURNAL=$OUT/journal-cyclic.json setsid "$JITTERLAB" run cyclic --cpu "$CPU" \
            --period 1ms --duration "${SECS}s" --no-db --outliers 10000 \
            --json "$OUT/cyclic-$r.json" >"$OUT/cyclic-$r.txt" 2>&1 </dev/null &
        CYCLIC=$!
        orc=0
        JITTERLAB_JOURNAL=$OUT/journal-observe.json run_child "$OUT/observe-$r.txt" "$OUT/observe-$r.txt" \
            "$JITTERLAB" run observe --pid "$CYCLIC" --duration "$((SECS + 3))s" --no-db \
            --outliers 10000 --json "$OUT/observe-$r.json" || orc=$?
        if locked "$OUT/observe-$r.txt"; then
            extra_cleanup
        else
            crc=0
            wait "$CYCLIC" || crc=$?
            CYCLIC=""
            if ! locked "$OUT/cyclic-$r.txt"; then
                [ "$crc" -eq 0 ] || die "round $r: run cyclic ended $crc (see $OUT/cyclic-$r.txt)"
                [ "$orc" -eq 0 ] || die "round $r: run observe ended $orc (see $OUT/observe-$r.txt)"
                return
            fi
        fi
        tries=$((tries + 1))
        [ "$tries" -lt 600 ] || die "another jitterlab held the machine lock for 10 minutes"
        sleep 1
    done
}

r=1
while [ "$r" -le "$ROUNDS" ]; do
    note "round $r of $ROUNDS"
    pair "$r"
    r=$((r + 1))
done

python3 - "$OUT" "$ROUNDS" <<'EOF' | tee "$OUT/summary.md"
import bisect, json, sys

out, rounds = sys.argv[1], int(sys.argv[2])
METRICS = ["latency", "period", "jitter", "exec"]
MATCH_NS = 100_000  # a start within 100 us of the probe's is the same cycle


def cycles(result):
    """{metric: {cycle: (value ns, start since the first release ns)}}"""
    kept = result["threads"][0]["outliers"]
    return {m: {o["cycle"]: (o["value"], o["since_start_ns"]) for o in kept.get(m, [])} for m in METRICS}


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))]


def us(ns):
    return "%.1f" % (ns / 1e3)


def match(c, o):
    """Pairs (observer cycle, probe cycle) by start time. The two runs count
    time from their own first release: the offset between them is found by
    trying the observer's middle cycle as each probe cycle it can be (the
    observer attaches less than 1000 cycles late and misses few). Starts
    are 1 ms apart give or take a few us, so an offset a cycle or two off
    pairs almost as many: of the offsets that pair the most (within 3; 90 %
    of the observer's cycles at least, tried first on every 100th), the one
    whose pairs' latency differences spread the least (the same cycle's two
    latencies differ by the steady return path, two neighbours' by their
    own variation)."""
    cs = sorted((s, i) for i, (_, s) in c["exec"].items())
    os_ = sorted((s, i) for i, (_, s) in o["exec"].items() if s > 0)
    starts = [s for s, _ in cs]

    def pairs(off, step=1):
        got = []
        for s, i in os_[::step]:
            t = s + off
            j = bisect.bisect_left(starts, t)
            near = [k for k in (j - 1, j) if 0 <= k < len(starts)]
            k = min(near, key=lambda k: abs(starts[k] - t))
            if abs(starts[k] - t) <= MATCH_NS:
                got.append((i, cs[k][1]))
        return got

    def spread(got):
        d = sorted(c["latency"][b][0] - o["latency"][a][0]
                   for a, b in got if a in o["latency"] and b in c["latency"])
        if not d:
            return float("inf")
        m = d[(len(d) - 1) // 2]
        return sum(abs(x - m) for x in d) / len(d)

    anchor, index = os_[len(os_) // 2]
    sampled = len(os_[::100])
    found = [pairs(s - anchor) for s, i in cs
             if i + 50 >= index and i <= index + 1500 and len(pairs(s - anchor, 100)) * 10 >= sampled * 9]
    most = max(map(len, found), default=0)
    if most * 10 < len(os_) * 9:
        sys.exit("no offset pairs 90 % of the observer's cycles")
    best = min((p for p in found if len(p) + 3 >= most), key=spread)
    return best, cs, os_


print("## run observe on run cyclic: each run's own figures (us: p50 / p99 / max), and per matched cycle cyclic - observe (us: p1 / p50 / p99)")
print()
print("| round | metric | cyclic | observe | per cycle, cyclic - observe |")
print("|---|---|---|---|---|")
counts = []
for r in range(1, rounds + 1):
    cr = json.load(open(f"{out}/cyclic-{r}.json"))
    orr = json.load(open(f"{out}/observe-{r}.json"))
    c, o = cycles(cr), cycles(orr)
    pairs, cs, os_ = match(c, o)
    for m in METRICS:
        fig = []
        for res in (cr, orr):
            s = res["threads"][0]["metrics"][m]
            fig.append(f"{us(s['p50'])} / {us(s['p99'])} / {us(s['max'])}")
        d = [c[m][b][0] - o[m][a][0] for a, b in pairs if a in o[m] and b in c[m]]
        diff = f"{us(pct(d, 0.01))} / {us(pct(d, 0.5))} / {us(pct(d, 0.99))}" if d else "not measured"
        print(f"| {r} | {m} | {fig[0]} | {fig[1]} | {diff} |")
    first = min(b for _, b in pairs) if pairs else None
    span = [i for _, i in cs if first is not None and i >= first]
    seen = {b for _, b in pairs}
    unseen = len([i for i in span if i not in seen])
    counts.append((r, len(cs), len(os_), len(span), len(seen), unseen, len(pairs) - len(seen)))

print()
print("| round | cyclic cycles | observe cycles | cyclic cycles in the observed span | of them matched | not seen by observe | observe cycles on a cycle already matched |")
print("|---|---|---|---|---|---|---|")
for row in counts:
    print("| " + " | ".join(str(x) for x in row) + " |")
EOF
note "raw results, meta.txt and summary.md in $OUT"
