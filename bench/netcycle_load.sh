#!/usr/bin/env bash
# Seed 004's load table (Table 2, High-End PC) on this machine: the
# netcycle probe's managing node (MN) per cycle time x CN count, SECS each,
# and per cell the stack's load (the MN thread's CPU time over wall time,
# the seed's definition), its ratio to the seed's figure and whether the
# load is held (ratio <= 1.0; for the seed's "< 1%", below 1 %). Whether
# the cycle time itself was held (no late cycle, no missed PRes) is printed
# beside it.
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
SCRIPT=bench/netcycle_load.sh
source "$(dirname "$0")/lib.sh"

SECS=${SECS:-15}
WAIT=${WAIT:-}
ALL="250us:3 250us:10 250us:20 250us:40 500us:3 500us:10 500us:20 500us:40
1ms:3 1ms:10 1ms:20 1ms:40 2ms:3 2ms:10 2ms:20 2ms:40
5ms:3 5ms:10 5ms:20 5ms:40 10ms:3 10ms:10 10ms:20 10ms:40"
CELLS=${CELLS:-$ALL}
need_uint SECS
[[ $EUID -eq 0 ]] || die "run as root: the probe makes network namespaces and runs SCHED_FIFO"
need ip iproute2
need python3 python3
BINS=${BINS:-this=$JITTERLAB}
[[ $BINS == "this=$JITTERLAB" ]] && ensure_jitterlab
for b in $BINS; do
    [[ $b == *=* ]] || die "BINS word '$b' is not NAME=PATH"
    [[ -x ${b#*=} ]] || die "BINS: ${b#*=} is not an executable file"
done
for c in $CELLS; do
    [[ $c =~ ^(250us|500us|1ms|2ms|5ms|10ms):(3|10|20|40)$ ]] ||
        die "CELLS word '$c' is not one of seed 004's cells (CYCLE:CNS, e.g. 1ms:10)"
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
    echo "cells: ${SECS}s each, MN on CPU $CPU"
} >"$OUT/meta.txt"

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
done

python3 - "$OUT" "$BINS" "$CELLS" <<'PY' | tee "$OUT/summary.md"
import json, os, sys
out, bins, cells = sys.argv[1], [b.split("=")[0] for b in sys.argv[2].split()], sys.argv[3].split()
# Seed 004, Table 2 (High-End PC): percent; 0 = "< 1%"; None = N/A.
SEED = {"250us": [37, None, None, None], "500us": [18, 28, 43, None], "1ms": [8, 14, 21, 39],
        "2ms": [3, 5, 9, 18], "5ms": [0, 1, 4, 6], "10ms": [0, 0, 0, 2]}
COLS = [3, 10, 20, 40]
head = "| cell | seed |" + "".join(f" {b} load | {b} ratio | {b} load held | {b} cycle held |" for b in bins)
print(head)
print("|---|---:|" + "---:|---:|---|---|" * len(bins))
for c in cells:
    cycle, cns = c.split(":")
    seed = SEED[cycle][COLS.index(int(cns))]
    row = f"| {cycle} x {cns} | {'N/A' if seed is None else ('< 1%' if seed == 0 else f'{seed}%')} |"
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
        cyc = "yes" if d["held"]["held"] else f"no (late {d['late_cycles']}, missed {d['missed_pres']})"
        row += f" {load:.1f}% | {ratio} | {held} | {cyc} |"
    print(row)
PY
