#!/usr/bin/env bash
# The cost of --explain on the probe: `jitterlab run cyclic` with and
# without `--explain`, interleaved on one CPU (design rule 10), the order
# alternating from round to round.
#
# Each round runs SECS seconds without and SECS seconds with --explain
# (the tracer on the probe CPU, its reader off it), same CPU, priority,
# period and scan. The summary prints, per round and as medians over the
# rounds, the wake-up latency's p50, p99 and max from each run's JSON
# result, the ratio with/without, the hypervisor's steal time on the CPU
# during each run (from /proc/stat), and the trace events and explanations
# of the --explain runs.
#
# Environment (defaults):
#   ROUNDS=5 SECS=10 CPU=1 THRESHOLD=100us
#   JITTERLAB=target/release/jitterlab
#   OUT=bench/out/explain-cost-<date>    output directory
# Smoke test: ROUNDS=1 SECS=2 bench/explain_cost.sh
#
# Needs root (SCHED_FIFO, mlockall, tracefs) and python3. Sends no traffic.
#
# The design rules cited here are in docs/design.md.
set -euo pipefail

ROUNDS=${ROUNDS:-5}
SECS=${SECS:-10}
CPU=${CPU:-1}
THRESHOLD=${THRESHOLD:-100us}
JITTERLAB=${JITTERLAB:-target/release/jitterlab}
OUT=${OUT:-bench/out/explain-cost-$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"

# The CPU's steal time, in USER_HZ ticks.
steal() { awk -v c="cpu$CPU" '$1 == c { print $9 }' /proc/stat; }

# run NAME ROUND [FLAGS…]: one run, retried while another jitterlab holds
# the machine lock.
run() {
  local name=$1 round=$2
  shift 2
  local base="$OUT/$name-$round"
  while :; do
    local s0
    s0=$(steal)
    if "$JITTERLAB" run cyclic --cpu "$CPU" --duration "${SECS}s" \
      --threshold "$THRESHOLD" --no-db --json "$base.json" "$@" \
      >"$base.txt" 2>"$base.err"; then
      echo $(($(steal) - s0)) >"$base.steal"
      return
    fi
    if grep -q "machine lock\|another jitterlab" "$base.err"; then
      sleep 2
      continue
    fi
    cat "$base.err" >&2
    exit 1
  done
}

for r in $(seq 1 "$ROUNDS"); do
  if ((r % 2)); then
    run plain "$r"
    run explain "$r" --explain
  else
    run explain "$r" --explain
    run plain "$r"
  fi
done

python3 - "$OUT" "$ROUNDS" <<'EOF'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def load(name, r):
    res = json.load(open(f"{out}/{name}-{r}.json"))
    lat = res["threads"][0]["metrics"]["latency"]
    steal = int(open(f"{out}/{name}-{r}.steal").read()) * 10  # ms at USER_HZ 100
    d = res.get("detail") or {}
    return lat["p50"] / 1e3, lat["p99"] / 1e3, lat["max"] / 1e3, steal, d.get("events"), len(d.get("explanations", []))
rows = [(r, load("plain", r), load("explain", r)) for r in range(1, rounds + 1)]
print("| round | p99 without, us (steal ms) | p99 with --explain, us (steal ms) | ratio | trace events, explanations |")
print("|---:|---:|---:|---:|---:|")
for r, a, b in rows:
    print(f"| {r} | {a[1]:.1f} ({a[3]}) | {b[1]:.1f} ({b[3]}) | {b[1] / a[1]:.2f} | {b[4]}, {b[5]} |")
med = lambda i, k: statistics.median(x[k][i] for x in rows)
print()
print("| statistic, us (median over rounds) | without | with --explain | with / without |")
print("|---|---:|---:|---:|")
for name, i in (("p50", 0), ("p99", 1), ("max", 2)):
    a, b = med(i, 1), med(i, 2)
    print(f"| {name} | {a:.1f} | {b:.1f} | {b / a:.2f} |")
EOF
