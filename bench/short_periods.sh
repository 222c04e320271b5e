#!/usr/bin/env bash
# Short periods: how often does a cycle miss its period, jitterlab's `cyclic`
# probe against cyclictest, interleaved on the same CPU (design rule 10).
#
# For each period P (1ms, 250us, 100us, 50us), one run of each tool of SECS
# seconds on CPU, alternating which goes first:
#   jitterlab run cyclic --scan 0us --working-set 0 --period P --duration SECSs --cpu CPU --json J
#   cyclictest -m -p95 -i<P in us> -a<CPU> -t1 -D<SECS> -q -h <buckets>
# jitterlab counts overruns (a cycle that ends after the next release; with no
# work that is a wake-up more than about one period late). cyclictest counts
# no overruns, so its late wake-ups are read from its 1 us histogram:
# latencies of at least P (buckets >= P us) plus the histogram's overflows.
# Prints a Markdown table with both counts per million cycles and the ratio.
#
# Environment (defaults):
#   PERIODS="1ms 250us 100us 50us"  (units us, ms or s)
#   SECS=60 CPU=1 PRIORITY=95 (cyclictest's; jitterlab uses its default, 95)
#   HIST_US=<max(10000, 2*P)>  cyclictest histogram buckets (must exceed P)
#   PAUSE=1 JITTERLAB=target/release/jitterlab OUT=bench/out/short-periods-<date>
# Smoke test: SECS=2 PERIODS="1ms 100us" bench/short_periods.sh
#
# Needs root, rt-tests, python3. Sends no network traffic. Run it on an
# otherwise idle machine.
#
# The design rules cited here are in docs/design.md.
set -euo pipefail
SCRIPT=short_periods.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PERIODS=${PERIODS:-1ms 250us 100us 50us}
read -r -a PERS <<<"$PERIODS"
((${#PERS[@]})) || { echo "short_periods.sh: error: PERIODS is empty" >&2; exit 2; }
SECS=${SECS:-60}
CPU=${CPU:-1}
PRIORITY=${PRIORITY:-95}
PAUSE=${PAUSE:-1}
OUT=${OUT:-bench/out/short-periods-$(date +%Y%m%d-%H%M%S)}

need_uint SECS CPU PRIORITY PAUSE
((SECS >= 1)) || die "SECS must be at least 1"
need cyclictest rt-tests
need python3 python3
need setsid util-linux
need_root_cpu "$CPU"

# period_us TEXT: 250us -> 250, 1ms -> 1000, 1s -> 1000000
period_us() {
    [[ $1 =~ ^([0-9]+)(us|ms|s)$ ]] || die "period '$1' must be a whole number with unit us, ms or s (e.g. 250us)"
    local n=${BASH_REMATCH[1]}
    case ${BASH_REMATCH[2]} in
        us) echo "$n" ;;
        ms) echo $((n * 1000)) ;;
        s) echo $((n * 1000000)) ;;
    esac
}
for p in "${PERS[@]}"; do
    us=$(period_us "$p")
    ((us >= 1)) || die "period '$p' is zero"
done

ensure_jitterlab
warn_if_busy

mkdir -p "$OUT"
{
    echo "date: $(date -Is)"
    echo "host: $(uname -a)"
    echo "rt-tests: $(dpkg-query -W -f '${Version}' rt-tests 2>/dev/null || echo unknown)"
    echo "jitterlab: $("$JITTERLAB" --version 2>/dev/null || echo unknown) ($JITTERLAB)"
    echo "loadavg at start: $(cat /proc/loadavg)"
    echo "PERIODS=$PERIODS SECS=$SECS CPU=$CPU PRIORITY=$PRIORITY"
} >"$OUT/meta.txt"
: >"$OUT/periods"

nper=${#PERS[@]}
note "$nper period(s) x 2 tools x ${SECS}s ~ $((nper * 2 * (SECS + PAUSE)))s; output in $OUT"

i=0
for p in "${PERS[@]}"; do
    us=$(period_us "$p")
    hist=${HIST_US:-$((2 * us > 10000 ? 2 * us : 10000))}
    ((hist > us)) || die "HIST_US=$hist must exceed the period ($us us) to count late wake-ups"
    dir="$OUT/period-$p"
    mkdir -p "$dir"
    echo "$p $us" >>"$OUT/periods"
    if ((i % 2 == 0)); then order=(jitterlab cyclictest); else order=(cyclictest jitterlab); fi
    echo "${order[*]}" >"$dir/order"
    for tool in "${order[@]}"; do
        note "period $p: $tool (${SECS}s)"
        if [[ $tool == jitterlab ]]; then
            run_child "$dir/jitterlab.log" "$dir/jitterlab.log" \
                "$JITTERLAB" run cyclic --scan 0us --working-set 0 --period "$p" \
                --duration "${SECS}s" --cpu "$CPU" --json "$dir/jitterlab.json" ||
                die "jitterlab failed; see $dir/jitterlab.log"
        else
            run_child "$dir/cyclictest.hist" "$dir/cyclictest.log" \
                cyclictest -m -p"$PRIORITY" -i"$us" -a"$CPU" -t1 -D"$SECS" -q -h "$hist" ||
                die "cyclictest failed; see $dir/cyclictest.log"
        fi
        sleep "$PAUSE"
    done
    i=$((i + 1))
done

python3 - "$OUT" "$ROOT/bench" <<'EOF' | tee "$OUT/summary.md"
import json, os, sys

outdir, benchdir = sys.argv[1], sys.argv[2]
sys.path.insert(0, benchdir)
from summarize_fidelity import Hist  # the same histogram reader as the fidelity summary


def per_million(k, n):
    return None if not n else k * 1e6 / n


def fmt(x):
    return "n/a" if x is None else f"{x:.1f}"


rows = []
with open(os.path.join(outdir, "periods")) as f:
    periods = [l.split() for l in f if l.strip()]
for text, us in periods:
    us = int(us)
    d = os.path.join(outdir, f"period-{text}")
    with open(os.path.join(d, "jitterlab.json")) as f:
        t = json.load(f)["threads"][0]
    cycles, overruns = t["cycles"], t["overruns"]
    if t.get("releases") is not None and t.get("skipped") is not None and cycles + t["skipped"] != t["releases"]:
        print(f"warning: {text}: jitterlab cycles + skipped != releases", file=sys.stderr)
    h = Hist(os.path.join(d, "cyclictest.hist"))
    ct_cycles = h.n  # '# Total:' plus '# Histogram Overflows:'
    late = h.late(us)
    a, b = per_million(overruns, cycles), per_million(late, ct_cycles)
    if a is None or b is None:
        ratio = "n/a"
    elif b == 0:
        ratio = "n/a (cyclictest 0)" if a else "1.00 (both 0)"
    else:
        ratio = f"{a / b:.2f}"
    rows.append([text, str(cycles), str(overruns), fmt(a), str(ct_cycles), str(late), fmt(b), ratio])

print("## Short periods: missed periods, jitterlab overruns vs cyclictest late wake-ups\n")
hdr = ["period", "jitterlab cycles", "jitterlab overruns", "per million cycles",
       "cyclictest cycles", "cyclictest late wake-ups (>= period)", "per million cycles",
       "ratio jitterlab/cyclictest"]
print("| " + " | ".join(hdr) + " |")
print("|---|" + "---:|" * (len(hdr) - 1))
for r in rows:
    print("| " + " | ".join(r) + " |")
print("\njitterlab: overruns from threads[0] of its JSON (a cycle that ended after the next "
      "release; its skipped releases are not counted as cycles). cyclictest: cycles are "
      "'# Total:' (which counts only the histogram's buckets) plus '# Histogram Overflows:'; "
      "late wake-ups are the samples in buckets >= the period in us plus the overflows.")
EOF
note "summary written to $OUT/summary.md"
