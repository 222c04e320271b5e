#!/usr/bin/env bash
# [Baumgartner POWERLINK]'s load table (Table 2, High-End PC) on this machine: the
# netcycle probe's managing node (MN) per cycle time x CN count, SECS each,
# and per cell the stack's load (the MN thread's CPU time over wall time,
# the seed's definition), its ratio to the seed's figure and whether the
# load is held (ratio <= 1.0; for the seed's "< 1%", below 1 %). Whether
# the cycle time itself was held (no late cycle, no missed PRes) is printed
# beside it.
#
# The machine's floor: after the binaries in each cell, cyclictest
# (rt-tests) at the cell's cycle time, one thread on the same CPU at
# SCHED_FIFO PRIO (default 95, the MN's), for the same SECS; its CPU time
# over wall time (all its threads' /proc/PID/task/*/schedstat over SECS
# once it runs) is what merely waking once per cycle costs here. A cell whose floor exceeds
# the seed's figure says "the machine's wake-up alone exceeds the seed"
# rather than "no". FLOOR=0 leaves it out.
#
# BINS names the binaries to compare, as NAME=PATH words; with more than
# one, each cell runs every binary in turn (interleaved), so the machine's
# drift falls on all of them alike. WAIT passes --wait to every run.
#
#   sudo bench/netcycle_load.sh                                  # all 24 cells, ~6 min
#   sudo CELLS="10ms:40 1ms:10" bench/netcycle_load.sh           # a few cells
#   sudo BINS="before=/tmp/jl-old after=target/release/jitterlab" bench/netcycle_load.sh
#
# The three cells the wire cannot carry at 100 Mbit/s (20 and 40 CNs at
# 250 us, 40 at 500 us) are printed N/A (wire), as the seed has them, and
# not run. Writes bench/out/netcycle_load/ (summary.md, one JSON per run).
#
# The documents cited here are listed in docs/design.md.
SCRIPT=bench/netcycle_load.sh
source "$(dirname "$0")/lib.sh"

SECS=${SECS:-15}
WAIT=${WAIT:-}
FLOOR=${FLOOR:-1}
PRIO=${PRIO:-95}
ALL="250us:3 250us:10 250us:20 250us:40 500us:3 500us:10 500us:20 500us:40
1ms:3 1ms:10 1ms:20 1ms:40 2ms:3 2ms:10 2ms:20 2ms:40
5ms:3 5ms:10 5ms:20 5ms:40 10ms:3 10ms:10 10ms:20 10ms:40"
CELLS=${CELLS:-$ALL}
need_uint SECS
[[ $EUID -eq 0 ]] || die "run as root: the probe makes network namespaces and runs SCHED_FIFO"
need ip iproute2
need python3 python3
[[ $FLOOR == 0 ]] || need cyclictest rt-tests
need_uint PRIO
BINS=${BINS:-this=$JITTERLAB}
[[ $BINS == "this=$JITTERLAB" ]] && ensure_jitterlab
for b in $BINS; do
    [[ $b == *=* ]] || die "BINS word '$b' is not NAME=PATH"
    [[ -x ${b#*=} ]] || die "BINS: ${b#*=} is not an executable file"
done
for c in $CELLS; do
    [[ $c =~ ^(250us|500us|1ms|2ms|5ms|10ms):(3|10|20|40)$ ]] ||
        die "CELLS word '$c' is not one of the cells of Table 2 of Baumgartner and Schoenegger, \"POWERLINK and Real-Time Linux\" (CYCLE:CNS, e.g. 1ms:10)"
done
warn_if_busy

OUT=${OUT:-bench/out/netcycle_load}
rm -rf "$OUT"
mkdir -p "$OUT"
CPU=$(($(nproc) - 1))
WAITARG=()
[[ -n $WAIT ]] && WAITARG=(--wait "$WAIT")
{
    echo "kernel: $(uname -r)"
    for b in $BINS; do echo "${b%%=*}: ${b#*=} ($("${b#*=}" --version))"; done
    echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "cells: ${SECS}s each, MN on CPU $CPU, SCHED_FIFO $PRIO"
} >"$OUT/meta.txt"

# floor CYCLE CELL: cyclictest's CPU time over wall time at CYCLE, in
# percent, into $OUT/floor-CELL.txt.
floor() {
    local us
    case $1 in *us) us=${1%us} ;; *ms) us=$((${1%ms} * 1000)) ;; esac
    note "$1: the floor, cyclictest -i $us (load average $(cut -d' ' -f1 /proc/loadavg))"
    echo "cyclictest -q -m -t1 -a $CPU -p $PRIO -i $us -D $((SECS + 2))s  # CPU time over ${SECS}s" >>"$OUT/meta.txt"
    setsid cyclictest -q -m -t1 -a "$CPU" -p "$PRIO" -i "$us" -D "$((SECS + 2))s" >"$OUT/floor-$2.log" 2>&1 </dev/null &
    CHILD=$!
    sleep 1
    local a b
    a=$(cpu_wall "$CHILD")
    sleep "$SECS"
    b=$(cpu_wall "$CHILD")
    wait "$CHILD" || true
    CHILD=""
    python3 -c 'import sys; a, b = [list(map(int, x.split())) for x in sys.argv[1:]]; print(f"{100 * (b[0] - a[0]) / (b[1] - a[1]):.2f}")' "$a" "$b" >"$OUT/floor-$2.txt"
}
# cpu_wall PID: the CPU ns of all its threads and CLOCK_MONOTONIC ns.
cpu_wall() {
    local t cpu=0
    for t in /proc/"$1"/task/*/schedstat; do
        read -r ns _ <"$t" && cpu=$((cpu + ns))
    done
    echo "$cpu $(python3 -c 'import time; print(time.monotonic_ns())')"
}

for c in $CELLS; do
    cycle=${c%%:*} cns=${c##*:}
    case $c in 250us:20 | 250us:40 | 500us:40) continue ;; esac
    for b in $BINS; do
        name=${b%%=*} bin=${b#*=}
        note "$cycle x $cns CNs: $name (load average $(cut -d' ' -f1 /proc/loadavg))"
        echo "$bin --db $OUT/load.db run netcycle --cycle $cycle --cns $cns ${WAITARG[*]} --cpu $CPU --duration ${SECS}s --json $OUT/$name-$c.json  # load avg $(cut -d' ' -f1 /proc/loadavg)" >>"$OUT/meta.txt"
        # Another jitterlab changing the machine refuses the run: wait for it.
        for try in $(seq 1 60); do
            run_child "$OUT/$name-$c.txt" "$OUT/$name-$c.txt" "$bin" --db "$OUT/load.db" run netcycle \
                --cycle "$cycle" --cns "$cns" "${WAITARG[@]}" --cpu "$CPU" --duration "${SECS}s" \
                --json "$OUT/$name-$c.json" && break
            if grep -q "another jitterlab" "$OUT/$name-$c.txt"; then
                note "another jitterlab is running; again in 5 s (try $try)"
                sleep 5
                continue
            fi
            # Exit status 1: the run measured, the cycle time was not held.
            [[ -s $OUT/$name-$c.json ]] || note "the run failed; see $OUT/$name-$c.txt"
            break
        done
    done
    [[ $FLOOR == 0 ]] || floor "$cycle" "$c"
done

python3 - "$OUT" "$BINS" "$CELLS" <<'PY' | tee "$OUT/summary.md"
import json, os, sys
out, bins, cells = sys.argv[1], [b.split("=")[0] for b in sys.argv[2].split()], sys.argv[3].split()
# [Baumgartner POWERLINK] Table 2 (High-End PC): percent; 0 = "< 1%"; None = N/A.
SEED = {"250us": [37, None, None, None], "500us": [18, 28, 43, None], "1ms": [8, 14, 21, 39],
        "2ms": [3, 5, 9, 18], "5ms": [0, 1, 4, 6], "10ms": [0, 0, 0, 2]}
COLS = [3, 10, 20, 40]
def floor(c):
    try:
        return float(open(f"{out}/floor-{c}.txt").read())
    except (OSError, ValueError):
        return None
floors = any(floor(c) is not None for c in cells)
head = "| cell | seed |" + (" floor |" if floors else "") + "".join(f" {b} load | {b} ratio | {b} load held | {b} cycle held |" for b in bins)
print(head)
print("|---|---:|" + ("---:|" if floors else "") + "---:|---:|---|---|" * len(bins))
for c in cells:
    cycle, cns = c.split(":")
    seed = SEED[cycle][COLS.index(int(cns))]
    row = f"| {cycle} x {cns} | {'N/A' if seed is None else ('< 1%' if seed == 0 else f'{seed}%')} |"
    fl = floor(c)
    if floors:
        row += " - |" if fl is None or seed is None else f" {fl:.2f}% |"
    # The seed's "< 1%" is held below 1 %.
    over = fl is not None and seed is not None and (fl >= 1 if seed == 0 else fl > seed)
    for b in bins:
        path = f"{out}/{b}-{c}.json"
        if seed is None:
            row += " N/A (wire) | - | - | - |"
            continue
        if not os.path.exists(path):
            row += " (no result) | - | - | - |"
            continue
        d = json.load(open(path))["detail"]
        load = 100 * d["load"]["stack_ns"] / d["load"]["wall_ns"]
        if seed == 0:
            ratio, held = "-", "yes" if load < 1 else "no"
        else:
            ratio = load / seed
            held = "yes" if ratio <= 1.0 else "no"
            ratio = f"{ratio:.2f}"
        if held == "no" and over:
            held = "no: the machine's wake-up alone exceeds the seed"
        cyc = "yes" if d["held"]["held"] else f"no (late {d['late_cycles']}, missed {d['missed_pres']})"
        row += f" {load:.1f}% | {ratio} | {held} | {cyc} |"
    print(row)
PY
