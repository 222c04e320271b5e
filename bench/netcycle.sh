#!/usr/bin/env bash
# [Baumgartner POWERLINK] on this machine with the netcycle probe (a POWERLINK managing
# node polling emulated controlled nodes over a veth pair):
#
# 1. Both of the seed's tables: preset powerlink (the load sweep, Tables
#    2-3, on the idle machine; the SoC jitter at 500 us under the seven
#    stress conditions, Tables 4-5), DURATION per cell, then its load and
#    conditions tables (Markdown) from the store.
# 2. The SoC's timing against a peer: ROUNDS rounds, interleaved on the
#    same CPU, of `jitterlab run netcycle --cycle 500us` (3 CNs) and
#    `cyclictest -i 500` (the bare timer wake-up, no frame), SECS each.
#    cyclictest's max wake-up latency is the floor any SoC release sits on;
#    the ratio says what the frames and the polling add to it.
#
# The seed's MN ran openPOWERLINK's kernel-space stack with its own NIC
# driver on a dedicated core of a 2010 industrial PC; this is user space
# over veth on the CPUs of this machine. Report, do not promise.
#
#   DURATION=20s ROUNDS=3 SECS=20 bench/netcycle.sh
#   CYCLES=1ms,10ms CNS=3,40 bench/netcycle.sh     # a smaller load table
#
# The documents cited here are listed in docs/design.md.
SCRIPT=bench/netcycle.sh
source "$(dirname "$0")/lib.sh"

DURATION=${DURATION:-20s}
ROUNDS=${ROUNDS:-3}
SECS=${SECS:-20}
CYCLES=${CYCLES:-}
CNS=${CNS:-}
need_uint ROUNDS SECS
[[ $EUID -eq 0 ]] || die "run as root: the probe makes network namespaces and runs SCHED_FIFO"
need ip iproute2
need cyclictest rt-tests
need stress-ng stress-ng
need python3 python3
ensure_jitterlab
warn_if_busy

OUT=bench/out/netcycle
rm -rf "$OUT"
mkdir -p "$OUT"
NCPU=$(nproc)
CPU=$((NCPU - 1))
DB="$OUT/netcycle.db"
{
    echo "kernel: $(uname -r)"
    echo "jitterlab: $($JITTERLAB --version)"
    echo "cyclictest: $(cyclictest --help 2>&1 | head -1)"
    echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "preset cells: $DURATION each; peer rounds: $ROUNDS x ${SECS}s on CPU $CPU"
} >"$OUT/meta.txt"

CHOICE=()
[[ -n $CYCLES ]] && CHOICE+=(--cycles "$CYCLES")
[[ -n $CNS ]] && CHOICE+=(--cns "$CNS")
note "preset powerlink, $DURATION per cell"
echo "$JITTERLAB --db $DB bench --preset powerlink ${CHOICE[*]} --duration $DURATION --json $OUT/bench.json" >>"$OUT/meta.txt"
run_child "$OUT/bench.txt" "$OUT/bench.txt" "$JITTERLAB" --db "$DB" bench --preset powerlink \
    "${CHOICE[@]}" --duration "$DURATION" --json "$OUT/bench.json" ||
    [[ $? -eq 1 ]] || die "the bench failed; see $OUT/bench.txt"
"$JITTERLAB" --db "$DB" report --table load --format md --no-explain >"$OUT/load.md"
"$JITTERLAB" --db "$DB" report --table conditions --format md --no-explain >"$OUT/conditions.md"

for r in $(seq 1 "$ROUNDS"); do
    note "round $r: netcycle, ${SECS}s on CPU $CPU"
    echo "$JITTERLAB --db $DB run netcycle --cycle 500us --cns 3 --cpu $CPU --duration ${SECS}s --json $OUT/netcycle-$r.json" >>"$OUT/meta.txt"
    run_child "$OUT/netcycle-$r.txt" "$OUT/netcycle-$r.txt" "$JITTERLAB" --db "$DB" run netcycle \
        --cycle 500us --cns 3 --cpu "$CPU" --duration "${SECS}s" --json "$OUT/netcycle-$r.json" ||
        die "netcycle failed; see $OUT/netcycle-$r.txt"
    note "round $r: cyclictest, ${SECS}s on CPU $CPU"
    echo "cyclictest -m -p 95 -i 500 -a $CPU -t 1 -D ${SECS}s -q" >>"$OUT/meta.txt"
    run_child "$OUT/cyclictest-$r.txt" "$OUT/cyclictest-$r.txt" cyclictest -m -p 95 -i 500 \
        -a "$CPU" -t 1 -D "${SECS}s" -q || die "cyclictest failed; see $OUT/cyclictest-$r.txt"
done

python3 - "$OUT" "$ROUNDS" <<'PY' | tee "$OUT/summary.md"
import json, re, sys
out, rounds = sys.argv[1], int(sys.argv[2])
us = lambda ns: f"{ns / 1e3:.1f}"
print(open(f"{out}/load.md").read())
print(open(f"{out}/conditions.md").read())
print("| round | SoC period min / max µs (MN sent) | deviation µs | CN received min / max µs | deviation µs | release latency max µs | cyclictest max µs | SoC deviation ÷ cyclictest max | held |")
print("|---|---|---|---|---|---|---|---|---|")
for r in range(1, rounds + 1):
    res = json.load(open(f"{out}/netcycle-{r}.json"))
    t0 = res["params"]["period_ns"]
    m = res["threads"][0]["metrics"]
    p, rx, lat = m["period"], m["rx-period"], m["latency"]
    dev = max(p["max"] - t0, t0 - p["min"])
    rdev = max(rx["max"] - t0, t0 - rx["min"])
    text = open(f"{out}/cyclictest-{r}.txt").read()
    ct = int(re.findall(r"Max:\s+(\d+)", text)[-1]) * 1000
    d = res["detail"]
    held = "yes" if d["held"]["held"] else "no: " + "; ".join(d["held"]["reasons"])
    print(f"| {r} | {us(p['min'])} / {us(p['max'])} | {us(dev)} | {us(rx['min'])} / {us(rx['max'])} | {us(rdev)} "
          f"| {us(lat['max'])} | {us(ct)} | {dev / ct:.2f} | {held} |")
PY
