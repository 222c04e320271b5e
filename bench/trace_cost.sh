#!/usr/bin/env bash
# The cost of the tracer under `run observe` (src/trace/): how many events
# per second it reads, and how much CPU time its reading thread spends per
# event, while `cyclictest -m -p95 -i1000 -t1 -a CPU` runs on the traced
# CPU, as when jitterlab observes cyclictest.
#
# One run of SECS seconds: cyclictest starts, then the tracer's measurement
# (the ignored test `trace::tests::trace_cost`, built in release) traces
# every tracepoint jitterlab reads (sched_waking, sched_wakeup,
# sched_switch, hrtimer_start, hrtimer_expire_entry, irq_handler_entry/exit,
# softirq_entry/exit) on TRACE_CPUS, reading every 10 ms, and prints one
# line:
#   trace_cost: S s: N events (R/s), L lost; reader CPU C s (P % of a CPU),
#   X ns per event; cpuN READ read LOST lost LATE late (the kernel's count:
#   K read, E left, O lost), …
# The reader's CPU time is its thread's schedstat run time over the reading
# (not the stop, which waits for the kernel to close the events). The cost
# inside the traced tasks (the kernel writing each record) is not in it: it
# shows in the observed task's latency with and without tracing.
# cyclictest's own summary line follows.
#
# Environment (defaults):
#   SECS=10 CPU=1 TRACE_CPUS=$CPU   seconds, cyclictest's CPU, traced CPUs
#   PRIORITY=95 INTERVAL_US=1000    cyclictest's priority and interval
#   OUT=bench/out/trace-cost-<date> output directory
# Smoke test: SECS=2 bench/trace_cost.sh
#
# Needs root (tracing every task of a CPU, SCHED_FIFO), rt-tests,
# util-linux (setsid). Run it on an otherwise idle machine.
set -euo pipefail
SCRIPT=trace_cost.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SECS=${SECS:-10}
CPU=${CPU:-1}
TRACE_CPUS=${TRACE_CPUS:-$CPU}
PRIORITY=${PRIORITY:-95}
INTERVAL_US=${INTERVAL_US:-1000}
OUT=${OUT:-bench/out/trace-cost-$(date +%Y%m%d-%H%M%S)}

need_uint SECS CPU PRIORITY INTERVAL_US
((SECS >= 1)) || die "SECS must be at least 1"
[[ $TRACE_CPUS =~ ^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$ ]] ||
    die "TRACE_CPUS=$TRACE_CPUS is not a CPU list (e.g. 1 or 0-1)"
need cyclictest rt-tests
need setsid util-linux
need_root_cpu "$CPU"
mkdir -p "$OUT"

TEST=(cargo test --release --features test-probe --bin jitterlab)
note "building the measurement (${TEST[*]} --no-run)"
"${TEST[@]}" --no-run >"$OUT/build.log" 2>&1 || die "the build failed; see $OUT/build.log"
warn_if_busy

CYCLIC=""
stop_cyclictest() {
    [[ -n $CYCLIC ]] || return 0
    kill -TERM -- "-$CYCLIC" 2>/dev/null || true
    wait "$CYCLIC" 2>/dev/null || true
    CYCLIC=""
}
extra_cleanup() { stop_cyclictest; }

# cyclictest runs a second longer than the tracing on each side.
setsid cyclictest -m -p"$PRIORITY" -i"$INTERVAL_US" -t1 -a"$CPU" -q -D "$((SECS + 2))" \
    >"$OUT/cyclictest.txt" 2>&1 </dev/null &
CYCLIC=$!
sleep 1
TRACE_COST_SECS=$SECS TRACE_COST_CPUS=$TRACE_CPUS run_child "$OUT/trace_cost.log" "$OUT/trace_cost.log" \
    "${TEST[@]}" trace::tests::trace_cost -- --ignored --exact --nocapture ||
    die "the measurement failed; see $OUT/trace_cost.log"
wait "$CYCLIC" || die "cyclictest failed; see $OUT/cyclictest.txt"
CYCLIC=""

grep '^trace_cost:' "$OUT/trace_cost.log" || die "no result line in $OUT/trace_cost.log"
grep 'T: 0' "$OUT/cyclictest.txt" | sed 's/^/cyclictest: /' || true
