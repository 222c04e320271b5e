#!/bin/sh
# Observing a task we did not start, checked against the task's own figures
# and priced: `jitterlab run observe` on cyclictest while cyclictest writes its
# own latency histogram, and cyclictest's p99 with and without the observer,
# interleaved.
#
#   sudo [SECS=20] [ROUNDS=3] [CPU=1] [OUT=bench/out/observe] bench/observe_agree.sh [JITTERLAB]
#
# Part 1 (agreement), per round: cyclictest -m -p95 -i1000 -t1 -a CPU -h 20000
# for SECS+4 s; after 2 s, `jitterlab run observe --pid PID --duration SECS`.
# Printed side by side: cyclictest's p50/p99/max wake-up latency (its own
# histogram, 1 us bins, over its whole run) and the observer's latency,
# thread latency (switch-in minus the timer's handling) and timer IRQ latency
# (handling minus expiry) over its SECS window. cyclictest's figure includes
# its own clock read after waking; the observer's latency ends at the switch
# in (or, where the kernel traces no switch out of idle, at the last event
# before it).
# Part 2 (cost), per round: cyclictest alone, then observed, then observed
# with --explain (every scheduler, timer, IRQ and softirq event of every
# CPU recorded, unfiltered), each SECS s; the observed/alone ratio of
# cyclictest's p99 and max, and the trace events each observer read; a
# last row pools the rounds' histograms.
set -eu
JL=${1:-target/release/jitterlab}
SECS=${SECS:-20}
ROUNDS=${ROUNDS:-3}
CPU=${CPU:-1}
OUT=${OUT:-bench/out/observe}
mkdir -p "$OUT"
command -v cyclictest >/dev/null || { echo "cyclictest is missing: apt-get install rt-tests" >&2; exit 2; }
[ -x "$JL" ] || { echo "$JL is not built: cargo build --release" >&2; exit 2; }

# p50 p99 max (us) of a cyclictest -h histogram file.
hist_pcts() {
  awk '/^[0-9]/ { n[$1+0] = $2; t += $2 } /# Max Latencies/ { max = $4 + 0 }
       END { c = 0; p50 = ""; p99 = "";
             for (i = 0; i <= 20000; i++) { c += n[i];
               if (p50 == "" && c >= t * 0.50) p50 = i;
               if (p99 == "" && c >= t * 0.99) p99 = i }
             printf "%s %s %d", p50, p99, max }' "$1"
}
# p50 p99 max (us) of the histogram files given, pooled (their counts
# added, the largest maximum).
hist_pool() {
  awk '/^[0-9]/ { n[$1+0] += $2; t += $2 } /# Max Latencies/ { if ($4 + 0 > max) max = $4 + 0 }
       END { c = 0; p50 = ""; p99 = "";
             for (i = 0; i <= 20000; i++) { c += n[i];
               if (p50 == "" && c >= t * 0.50) p50 = i;
               if (p99 == "" && c >= t * 0.99) p99 = i }
             printf "%s %s %d", p50, p99, max }' "$@"
}
# p50 p99 max (us) of metric $2 in a jitterlab run --json file.
jl_pcts() {
  python3 -c 'import json,sys
m = json.load(open(sys.argv[1]))["threads"][0]["metrics"].get(sys.argv[2])
print("- - -" if not m else "%.1f %.1f %.1f" % (m["p50"]/1e3, m["p99"]/1e3, m["max"]/1e3))' "$1" "$2"
}
jl_count() {
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["threads"][0]["metrics"]["latency"]["count"])' "$1"
}

echo "## agreement: cyclictest's own histogram vs run observe (us: p50 p99 max)"
echo "| round | cyclictest | observe latency | observe thread latency | observe timer IRQ latency | cycles observed |"
echo "|---|---|---|---|---|---|"
r=1
while [ "$r" -le "$ROUNDS" ]; do
  cyclictest -q -m -p95 -i1000 -t1 -a "$CPU" -h 20000 -D $((SECS + 4))s > "$OUT/ct-$r.hist" &
  ct=$!
  sleep 2
  "$JL" run observe --pid "$ct" --duration "${SECS}s" --no-db --json "$OUT/obs-$r.json" > "$OUT/obs-$r.txt" 2>&1 || true
  wait "$ct"
  echo "| $r | $(hist_pcts "$OUT/ct-$r.hist") | $(jl_pcts "$OUT/obs-$r.json" latency) | $(jl_pcts "$OUT/obs-$r.json" thread_latency) | $(jl_pcts "$OUT/obs-$r.json" irq_latency) | $(jl_count "$OUT/obs-$r.json") |"
  r=$((r + 1))
done

echo
echo "## cost: cyclictest's p99/max alone and observed, interleaved (us)"
echo "| round | alone p50 p99 max | observed p50 p99 max | p99 ratio | max ratio | events | --explain p50 p99 max | p99 ratio | max ratio | events |"
echo "|---|---|---|---|---|---|---|---|---|---|"
# The events an observer read: its "trace: N events read" line.
events() { sed -n 's/.*trace: \([0-9]*\) events read.*/\1/p' "$1"; }
ratios() { echo "$1 $2" | awk '{ printf "%.2f | %.2f", ($2 ? $5 / $2 : 0), ($3 ? $6 / $3 : 0) }'; }
observed() { # observed() NAME [OPTIONS]: cyclictest observed for SECS s
  name=$1; shift
  cyclictest -q -m -p95 -i1000 -t1 -a "$CPU" -h 20000 -D $((SECS + 1))s > "$OUT/$name-$r.hist" &
  ct=$!
  sleep 1
  "$JL" run observe --pid "$ct" --duration "${SECS}s" --no-db "$@" > "$OUT/$name-$r.txt" 2>&1 || true
  wait "$ct"
  # An observer that did not run (another jitterlab holds the machine
  # lock): the round was not observed, and is left out of the pool.
  if [ -z "$(events "$OUT/$name-$r.txt")" ]; then
    mv "$OUT/$name-$r.hist" "$OUT/$name-$r.unobserved"
    : > "$OUT/$name-$r.hist"
  fi
}
# What a row says of an observer: its events, or why it did not run.
said() { e=$(events "$1"); echo "${e:-not observed: $(head -n 1 "$1" | cut -c1-60)}"; }
r=1
while [ "$r" -le "$ROUNDS" ]; do
  cyclictest -q -m -p95 -i1000 -t1 -a "$CPU" -h 20000 -D "${SECS}s" > "$OUT/alone-$r.hist"
  observed obsd
  observed expl --explain
  a=$(hist_pcts "$OUT/alone-$r.hist"); o=$(hist_pcts "$OUT/obsd-$r.hist"); x=$(hist_pcts "$OUT/expl-$r.hist")
  echo "| $r | $a | $o | $(ratios "$a" "$o") | $(said "$OUT/obsd-$r.txt") | $x | $(ratios "$a" "$x") | $(said "$OUT/expl-$r.txt") |"
  r=$((r + 1))
done
# The pool: every round alone, the rounds observed.
a=$(hist_pool "$OUT"/alone-*.hist); o=$(hist_pool "$OUT"/obsd-*.hist); x=$(hist_pool "$OUT"/expl-*.hist)
echo "| pooled | $a | $o | $(ratios "$a" "$o") | | $x | $(ratios "$a" "$x") | |"
