#!/usr/bin/env bash
# Orchestration overhead: does a 2-configuration x 7-scenario bench end within
# 5 % of the time its plan announces (the plan counts set-up, warm-ups and the
# one idle calibration)?
#
# The spec (written to OUT/overhead.toml): configurations `baseline` (SCHED_OTHER,
# no PM QoS request) and `tuned` (SCHED_FIFO 95, cpu_dma_latency 0), scenarios
# idle, cpu, disk, usb, network, scheduling, misc (the built-ins of [Baumgartner POWERLINK]),
# a cyclic probe at 500 us, DURATION per cell (default 10s) after WARMUP (1s).
# This machine has no USB drive: the usb scenario writes to OUT/usb, the same
# load on another path (--usb-path), so all 14 cells run.
#
#   jitterlab --db OUT/overhead.db bench OUT/overhead.toml --usb-path OUT/usb
#
# The plan's total is printed by jitterlab on stdout ("total: …"); the
# elapsed wall time of the whole command is measured here with `date +%s%N`
# around it. Prints planned, elapsed and elapsed/planned.
#
# Environment: DURATION=10s WARMUP=1s REPEAT=1 (benches run one after another)
#   JITTERLAB=target/release/jitterlab OUT=bench/out/overhead-<date>
# Needs root (network namespaces, SCHED_FIFO), stress-ng, rt-tests, iproute2.
# Traffic goes only between the two network namespaces the bench creates.
#
# The documents cited here are listed in docs/design.md.
set -euo pipefail
SCRIPT=overhead.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-1s}
REPEAT=${REPEAT:-1}
need_uint REPEAT
OUT=${OUT:-bench/out/overhead-$(date +%Y%m%d-%H%M%S)}
[[ $EUID -eq 0 ]] || die "run as root: the network scenario creates namespaces"
need stress-ng stress-ng
need hackbench rt-tests
need ip iproute2
need python3 python3
ensure_jitterlab
warn_if_busy
mkdir -p "$OUT/usb"

ONLINE=$(cat /sys/devices/system/cpu/online)
PROBE=$(python3 -c 'import sys
s=set()
for p in sys.argv[1].split(","):
    a,_,b=p.partition("-"); s.update(range(int(a),int(b or a)+1))
print(max(s))' "$ONLINE")

cat >"$OUT/overhead.toml" <<SPEC
name = "overhead"
duration = "$DURATION"
warmup = "$WARMUP"

[[configuration]]
name = "baseline"
probe_cpus = "$PROBE"
policy = "other"
dma_latency = false

[[configuration]]
name = "tuned"
probe_cpus = "$PROBE"

$(for s in idle cpu disk usb network scheduling misc; do printf '[[scenario]]\nname = "%s"\nbuiltin = "%s"\n\n' "$s" "$s"; done)
[[probe]]
kind = "cyclic"
period = "500us"
scan = "50us"
working_set = "64KiB"
SPEC

printf '%-4s %12s %12s %9s\n' rep planned_s elapsed_s ratio
for ((r = 1; r <= REPEAT; r++)); do
    t0=$(date +%s%N)
    run_child "$OUT/bench-$r.out" "$OUT/bench-$r.err" \
        "$JITTERLAB" --db "$OUT/overhead.db" bench "$OUT/overhead.toml" --usb-path "$OUT/usb" \
        || die "the bench failed (exit $?); see $OUT/bench-$r.err"
    t1=$(date +%s%N)
    # jitterlab's own account: "bench took Xms of a planned Yms"
    planned=$(grep -o 'of a planned [0-9a-z]*' "$OUT/bench-$r.err" | awk '{print $4}')
    python3 - "$planned" "$t0" "$t1" "$r" <<'PY'
import re, sys
planned, t0, t1, rep = sys.argv[1:]
m = re.fullmatch(r"(\d+)(ms|s|m)", planned)
scale = {"ms": 1e-3, "s": 1.0, "m": 60.0}[m.group(2)]
p = int(m.group(1)) * scale
e = (int(t1) - int(t0)) / 1e9
print(f"{rep:<4} {p:12.1f} {e:12.1f} {e / p:9.3f}")
PY
done
note "outputs in $OUT"
