#!/bin/bash
# What each tracepoint `run observe` records costs the observed task, without
# jitterlab: cyclictest's wake-up latency with the tracepoints enabled one at a
# time in a tracefs instance of this script's own (filtered as `run observe`
# filters them, by the task's name here instead of its ids), nothing reading
# them, the configurations in turn, ROUNDS times.
#
#   sudo [ROUNDS=10] [SECS=3] [CPU=1] [OUT=bench/out/tracepoint-cost] bash bench/tracepoint_cost.sh
#
# Configurations: off (no event enabled), expire (timer:hrtimer_expire_entry
# of sleep timers, the release), wakeup (sched:sched_wakeup of the task),
# switch (sched:sched_switch of the task and to idle), start (timer:hrtimer_start
# by the task, its arming), all (the four, as `run observe` records them
# without --explain), all-but-wakeup (the same without the wake-up),
# all-local (the four with trace_clock local, the
# scheduler's clock, instead of mono) and all-unfiltered (the four, no
# filter); CONFIGS="off all …" runs a choice of them. Printed per
# configuration: cyclictest's pooled p50, mean and p99 (us, the p50 and p99
# interpolated within their 1 us bin) and the p50 and mean above `off`'s.
# The instance is removed on every exit; tracefs is mounted (and unmounted
# again) when it is not.
set -eu
ROUNDS=${ROUNDS:-10}
SECS=${SECS:-3}
CPU=${CPU:-1}
OUT=${OUT:-bench/out/tracepoint-cost}
command -v cyclictest >/dev/null || { echo "cyclictest is missing: apt-get install rt-tests" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "tracing needs root" >&2; exit 2; }
mkdir -p "$OUT"
T=/sys/kernel/tracing
mounted=
if [ ! -e "$T/instances" ]; then
  mount -t tracefs nodev "$T"
  mounted=1
fi
I=$T/instances/jl-tracepoint-cost
cleanup() {
  if [ -d "$I" ]; then
    for e in sched/sched_wakeup sched/sched_switch timer/hrtimer_start timer/hrtimer_expire_entry; do
      echo 0 > "$I/events/$e/enable" 2>/dev/null || true
      echo 0 > "$I/events/$e/filter" 2>/dev/null || true
    done
    rmdir "$I"
  fi
  [ -z "$mounted" ] || umount "$T"
}
trap cleanup EXIT
mkdir "$I"
echo mono > "$I/trace_clock"

EXPIRE='function.function == hrtimer_wakeup || function.function == timerfd_tmrproc || function.function == posix_timer_fn || function.function == it_real_fn'
WAKEUP='comm == "cyclictest"'
SWITCH='prev_comm == "cyclictest" || next_comm == "cyclictest" || next_pid == 0'
# hrtimer_start carries no name: its filter keeps every arming in a
# cyclictest's context, whose pid is known only once it runs (set below).
set_point() { # set_point EVENT FILTER|- : enables EVENT, filtered unless -
  [ "$2" = - ] || echo "$2" > "$I/events/$1/filter"
  echo 1 > "$I/events/$1/enable"
}
configure() {
  echo mono > "$I/trace_clock"
  for e in sched/sched_wakeup sched/sched_switch timer/hrtimer_start timer/hrtimer_expire_entry; do
    echo 0 > "$I/events/$e/enable"
    echo 0 > "$I/events/$e/filter"
  done
  case $1 in
    off) ;;
    expire) set_point timer/hrtimer_expire_entry "$EXPIRE" ;;
    wakeup) set_point sched/sched_wakeup "$WAKEUP" ;;
    switch) set_point sched/sched_switch "$SWITCH" ;;
    start) set_point timer/hrtimer_start "common_pid == $2" ;;
    all)
      set_point timer/hrtimer_expire_entry "$EXPIRE"
      set_point sched/sched_wakeup "$WAKEUP"
      set_point sched/sched_switch "$SWITCH"
      set_point timer/hrtimer_start "common_pid == $2" ;;
    all-but-wakeup)
      set_point timer/hrtimer_expire_entry "$EXPIRE"
      set_point sched/sched_switch "$SWITCH"
      set_point timer/hrtimer_start "common_pid == $2" ;;
    all-local)
      configure all "$2"
      echo local > "$I/trace_clock"
      return ;;
    all-unfiltered)
      for e in timer/hrtimer_expire_entry sched/sched_wakeup sched/sched_switch timer/hrtimer_start; do
        set_point $e -
      done ;;
  esac
  echo 0 > "$I/tracing_on"
  echo > "$I/trace"
  echo 1 > "$I/tracing_on"
}
CONFIGS=${CONFIGS:-off expire wakeup switch start all all-unfiltered}
for r in $(seq 1 "$ROUNDS"); do
  for c in $CONFIGS; do
    # The pid of the next cyclictest is not known before it starts: the
    # arming filter takes its main thread's pid + 1 .. + 3 (its measuring
    # thread), set once it runs.
    configure "$c" 0
    cyclictest -q -m -p95 -i1000 -t1 -a "$CPU" -h 2000 --histfile="$OUT/$c-$r.hist" -D "${SECS}s" > /dev/null &
    ct=$!
    if [ "$c" = start ] || [ "${c#all}" != "$c" ] && [ "$c" != all-unfiltered ]; then
      sleep 0.05
      tids=$(ls /proc/$ct/task | tr '\n' ' ')
      f=$(for t in $tids; do printf 'common_pid == %s || ' "$t"; done | sed 's/ || $//')
      echo "$f" > "$I/events/timer/hrtimer_start/filter"
    fi
    wait "$ct"
    # What the instance recorded (nobody read it): its entries on CPU.
    echo "$(cat "$I/per_cpu/cpu$CPU/stats" | sed -n 's/^entries: //p')" > "$OUT/$c-$r.entries"
  done
done

# The histograms' figures as bench/observe_cost.py reads them.
python3 - "$(dirname "$0")" "$OUT" "$ROUNDS" $CONFIGS <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
from observe_cost import pcts, pool, read_hist
out, rounds, configs = sys.argv[2], int(sys.argv[3]), sys.argv[4:]
rows = {}
for c in configs:
    p50, p99, _, mean = pcts(*pool([read_hist(f"{out}/{c}-{r}.hist") for r in range(1, rounds + 1)]))
    entries = [int(open(f"{out}/{c}-{r}.entries").read() or 0) for r in range(1, rounds + 1)]
    rows[c] = (p50, mean, p99, sorted(entries)[len(entries) // 2])
base = rows["off"]
print("| configuration | p50 | mean | p99 | p50 above off | mean above off | p99 ratio | events recorded per run (median) |")
print("|---|---|---|---|---|---|---|---|")
for c in configs:
    p50, mean, p99, n = rows[c]
    print(f"| {c} | {p50:.2f} | {mean:.2f} | {p99:.1f} | {p50 - base[0]:+.2f} | {mean - base[1]:+.2f} | {p99 / base[2]:.3f} | {n} |")
EOF
