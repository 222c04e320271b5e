#!/usr/bin/env bash
# The cost of serving live metrics on the probe: jitterlab's `wakeup` probe
# with and without `--metrics`, against cyclictest on the same CPU,
# interleaved (design rule 10).
#
# Each round runs three measurements of SECS seconds back to back on one
# CPU, same priority, same 1 ms interval, the order rotating from round to
# round:
#   jitterlab          jitterlab run wakeup … (no metrics)
#   jitterlab-metrics  the same with --metrics 127.0.0.1:PORT, scraped
#                      (GET /metrics) every SCRAPE_S seconds by a loop of
#                      this script pinned to SCRAPER_CPU, as a Prometheus
#                      server would
#   cyclictest         cyclictest -m -p… -i… -a CPU -t1 -q -h HIST_US
# All three write a 1 us histogram in cyclictest's -h format; the summary
# computes every tool's percentiles from those files with the same code as
# bench/fidelity.sh (bench/summarize_fidelity.py's reader) and prints the
# medians over rounds and the ratios: each jitterlab against cyclictest, and
# with metrics against without. The hypervisor's steal time on the measured
# CPU is recorded per run (it moves p99 more than anything a tool does on a
# VM).
#
# Environment (defaults):
#   ROUNDS=3 SECS=30 CPU=1      rounds, seconds per run, measured CPU
#   PRIORITY=95 INTERVAL_US=1000 HIST_US=10000
#   PORT=19464                  where --metrics serves (127.0.0.1)
#   SCRAPE_S=1 SCRAPER_CPU=0    scrape interval, CPU of the scrape loop
#   PAUSE=1                     seconds of rest between runs
#   WAIT_S=600                  how long a run refused for another jitterlab
#                               changing the machine is retried
#   JITTERLAB=target/release/jitterlab   (built with cargo build --release if missing)
#   OUT=bench/out/metrics-cost-<date>    output directory
# Smoke test: ROUNDS=1 SECS=3 bench/metrics_cost.sh
#
# Needs root (SCHED_FIFO, mlockall), rt-tests, python3, util-linux
# (setsid, taskset). Sends nothing but its scrapes, to 127.0.0.1. Run it
# on an otherwise idle machine.
#
# The design rules cited here are in docs/design.md.
set -euo pipefail
SCRIPT=metrics_cost.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ROUNDS=${ROUNDS:-3}
SECS=${SECS:-30}
CPU=${CPU:-1}
PRIORITY=${PRIORITY:-95}
INTERVAL_US=${INTERVAL_US:-1000}
HIST_US=${HIST_US:-10000}
PORT=${PORT:-19464}
SCRAPE_S=${SCRAPE_S:-1}
SCRAPER_CPU=${SCRAPER_CPU:-0}
PAUSE=${PAUSE:-1}
WAIT_S=${WAIT_S:-600}
OUT_DEFAULTED=$([[ -z ${OUT:-} ]] && echo 1 || echo 0)
OUT=${OUT:-bench/out/metrics-cost-$(date +%Y%m%d-%H%M%S)}

need_uint ROUNDS SECS CPU PRIORITY INTERVAL_US HIST_US PORT SCRAPE_S SCRAPER_CPU PAUSE WAIT_S
((ROUNDS >= 1 && SECS >= 1 && SCRAPE_S >= 1)) || die "ROUNDS, SECS and SCRAPE_S must be at least 1"
((PORT >= 1 && PORT <= 65535)) || die "PORT=$PORT is not a port"
need cyclictest rt-tests
need python3 python3
need setsid util-linux
need taskset util-linux
need_root_cpu "$CPU"
[[ -d /sys/devices/system/cpu/cpu$SCRAPER_CPU ]] || die "CPU $SCRAPER_CPU does not exist (set SCRAPER_CPU=)"
ensure_jitterlab
TOOLS=(jitterlab jitterlab-metrics cyclictest)

# --- the scrape loop: its own process group, stopped on exit --------------
SCRAPER_PID=""
stop_scraper() {
    [[ -n $SCRAPER_PID ]] || return 0
    kill -TERM -- "-$SCRAPER_PID" 2>/dev/null || true
    wait "$SCRAPER_PID" 2>/dev/null || true
    SCRAPER_PID=""
}
extra_cleanup() { stop_scraper; }

# scrape_loop LOG: GET /metrics every SCRAPE_S s until killed; one line per
# scrape in LOG ("ok BYTES" when the answer is a 200 with the samples
# counter in it, else "failed").
scrape_loop() {
    local log=$1 answer
    while :; do
        sleep "$SCRAPE_S"
        answer=$(
            exec 3<>"/dev/tcp/127.0.0.1/$PORT" 2>/dev/null || exit 0
            printf 'GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n' >&3
            cat <&3
        ) || true
        if [[ $answer == "HTTP/1.1 200 OK"* && $answer == *jitterlab_samples_total* ]]; then
            echo "ok ${#answer}" >>"$log"
        else
            echo "failed" >>"$log"
        fi
    done
}
export -f scrape_loop
export PORT SCRAPE_S

# wakeup DIR NAME [ARGS…]: one jitterlab run. A run refused because another
# jitterlab (a bench, an apply) is changing the machine is retried every
# 10 s, up to WAIT_S seconds: on a shared machine another user's bench may
# hold it for a while.
wakeup() {
    local dir=$1 name=$2 waited=0
    shift 2
    until run_child "$dir/$name.log" "$dir/$name.log" \
        "$JITTERLAB" run wakeup --cpus "$CPU" --interval "${INTERVAL_US}us" \
        --priority "$PRIORITY" --duration "${SECS}s" --no-db \
        --json "$dir/$name.json" --histogram "$dir/$name.hist" "$@"; do
        grep -q 'is changing this machine' "$dir/$name.log" && ((waited < WAIT_S)) ||
            die "$name failed; see $dir/$name.log"
        note "$(tail -1 "$dir/$name.log"); retrying in 10 s"
        sleep 10
        waited=$((waited + 10))
    done
}

run_jitterlab() { wakeup "$1" jitterlab; }

run_jitterlab-metrics() { # run_jitterlab-metrics DIR
    : >"$1/scrapes"
    setsid taskset -c "$SCRAPER_CPU" bash -c 'scrape_loop "$0"' "$1/scrapes" </dev/null &
    SCRAPER_PID=$!
    wakeup "$1" jitterlab-metrics --metrics "127.0.0.1:$PORT"
    stop_scraper
    local ok
    ok=$(grep -c '^ok' "$1/scrapes" || true)
    ((ok >= 1)) || die "no scrape of $1 succeeded; see $1/scrapes and $1/jitterlab-metrics.log"
}

run_cyclictest() { # run_cyclictest DIR
    run_child "$1/cyclictest.hist" "$1/cyclictest.log" \
        cyclictest -m -p"$PRIORITY" -i"$INTERVAL_US" -a"$CPU" -t1 -D"$SECS" -q -h "$HIST_US" ||
        die "cyclictest failed; see $1/cyclictest.log"
}

steal_ticks() { awk -v c="cpu$CPU" '$1 == c { print $9 }' /proc/stat; }

warn_if_busy
mkdir -p "$OUT"
getconf CLK_TCK >"$OUT/clk_tck" 2>/dev/null || true
{
    echo "date: $(date -Is)"
    echo "host: $(uname -a)"
    echo "rt-tests: $(dpkg-query -W -f '${Version}' rt-tests 2>/dev/null || echo unknown)"
    echo "jitterlab: $("$JITTERLAB" --version 2>/dev/null || echo unknown) ($JITTERLAB)"
    echo "loadavg at start: $(cat /proc/loadavg)"
    echo "ROUNDS=$ROUNDS SECS=$SECS CPU=$CPU PRIORITY=$PRIORITY INTERVAL_US=$INTERVAL_US HIST_US=$HIST_US"
    echo "PORT=$PORT SCRAPE_S=$SCRAPE_S SCRAPER_CPU=$SCRAPER_CPU"
    echo "jitterlab: $JITTERLAB run wakeup --cpus $CPU --interval ${INTERVAL_US}us --priority $PRIORITY --duration ${SECS}s --no-db --json J --histogram H [--metrics 127.0.0.1:$PORT]"
    echo "cyclictest: cyclictest -m -p$PRIORITY -i$INTERVAL_US -a$CPU -t1 -D$SECS -q -h $HIST_US"
} >"$OUT/meta.txt"
note "$ROUNDS round(s) x ${#TOOLS[@]} runs x ${SECS}s ~ $((ROUNDS * ${#TOOLS[@]} * (SECS + PAUSE)))s; output in $OUT"

for ((r = 1; r <= ROUNDS; r++)); do
    dir="$OUT/round$r"
    mkdir -p "$dir"
    order=()
    for ((k = 0; k < ${#TOOLS[@]}; k++)); do order+=("${TOOLS[$(((r - 1 + k) % ${#TOOLS[@]}))]}"); done
    echo "${order[*]}" >"$dir/order"
    for tool in "${order[@]}"; do
        note "round $r/$ROUNDS: $tool (${SECS}s)"
        s0=$(steal_ticks)
        "run_$tool" "$dir"
        echo $(($(steal_ticks) - s0)) >"$dir/$tool.steal"
        sleep "$PAUSE"
    done
done

python3 - "$OUT" <<'PY' | tee "$OUT/summary.md"
"""Medians over rounds of each tool's percentiles (from its 1 us histogram,
bench/summarize_fidelity.py's reader), and the ratios."""
import os
import statistics
import sys

sys.path.insert(0, "bench")
from summarize_fidelity import Hist, QUANTILES  # noqa: E402

out = sys.argv[1]
tools = ["jitterlab", "jitterlab-metrics", "cyclictest"]
try:
    clk = int(open(os.path.join(out, "clk_tck")).read().strip())
except (OSError, ValueError):
    clk = 100
rounds = sorted(
    (d for d in os.listdir(out) if d.startswith("round")), key=lambda d: int(d[5:])
)
stats = {t: {"p50": [], "p99": [], "p99.9": [], "max": [], "n": [], "steal": []} for t in tools}
scrapes = []
per_round = []
for rd in rounds:
    d = os.path.join(out, rd)
    for t in tools:
        h = Hist(os.path.join(d, f"{t}.hist"))
        row = [rd, t]
        for label, num, den, _ in QUANTILES:
            v, over = h.quantile(num, den)
            stats[t][label].append(v)
            row.append((">=" if over else "") + str(v))
        mx = h.maximum()[0]
        stats[t]["max"].append(mx)
        stats[t]["n"].append(h.n)
        steal = int(open(os.path.join(d, f"{t}.steal")).read().strip()) * 1000 // clk
        stats[t]["steal"].append(steal)
        row += [str(mx), str(h.n), str(steal)]
        per_round.append(row)
    lines = open(os.path.join(d, "scrapes")).read().split()
    scrapes.append((lines.count("ok"), lines.count("failed")))

med = lambda t, k: statistics.median(stats[t][k])
ratio = lambda a, b: "n/a" if b == 0 else f"{a / b:.2f}"
print(f"## Serving metrics: jitterlab wakeup with and without --metrics against cyclictest (median over {len(rounds)} rounds, us)\n")
print("| statistic | jitterlab | jitterlab --metrics | cyclictest | jitterlab / cyclictest | --metrics / cyclictest | --metrics / without |")
print("|---|---:|---:|---:|---:|---:|---:|")
for k in ["p50", "p99", "p99.9", "max"]:
    a, m, c = med("jitterlab", k), med("jitterlab-metrics", k), med("cyclictest", k)
    print(f"| {k} | {a:g} | {m:g} | {c:g} | {ratio(a, c)} | {ratio(m, c)} | {ratio(m, a)} |")
print(f"| samples | {med('jitterlab', 'n'):g} | {med('jitterlab-metrics', 'n'):g} | {med('cyclictest', 'n'):g} | | | |")
print(f"| steal on the CPU (ms) | {med('jitterlab', 'steal'):g} | {med('jitterlab-metrics', 'steal'):g} | {med('cyclictest', 'steal'):g} | | | |")
ok = sum(s[0] for s in scrapes)
failed = sum(s[1] for s in scrapes)
print(f"\nScrapes of the --metrics runs: {ok} answered with the metrics, {failed} failed.\n")
print("### Per round\n")
print("| round | tool | p50 | p99 | p99.9 | max | samples | steal (ms) |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
for row in per_round:
    print("| " + " | ".join(row) + " |")
PY
if ((OUT_DEFAULTED)); then
    ln -sfn "$(basename "$OUT")" bench/out/metrics-cost-latest
fi
note "summary written to $OUT/summary.md"
