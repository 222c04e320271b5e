#!/usr/bin/env bash
# The reference stack's own managing-node load, beside [Baumgartner POWERLINK] Table 2:
# openPOWERLINK V2.7.2's Linux user-space MN (demo_mn_console, raw-socket
# driver) polling reference CNs (demo_cn_console) on the topology of
# bench/powerlink_interop.sh (namespaces, a bridge, a private /dev/shm each).
#
#   bench/powerlink_ref_load.sh OPLK_DIR
#   CELLS="3x10ms 3x1ms" WINDOW=30 bench/powerlink_ref_load.sh /tmp/oplk
#
# CELLS is a list of CNSxCYCLE (default "3x50ms 3x10ms 3x1ms"). The shipped
# Demo_3CN mnobd.cdc fixes CNs 1, 32, 110 and 50 ms; for every other cell a
# copy is made under OUT with the cycle patched (the MN's 0x1006 and the
# 0x1006 inside each CN's concise DCF 0x1F22/n) and, for more than 3 CNs,
# nodes 2, 3, ... added as copies of node 1's entries (0x1F81, 0x1C09,
# 0x1F26, 0x1F27, 0x1F92, 0x1F22; no MN-side PDO mapping, so their PReq is
# empty). Nothing else of the project changes: PRes timeout 200 us, async
# slot 500 us, loss thresholds as shipped.
#
# Per cell: CNs first, the MN 3 s later, then wait (up to SETTLE=90 s) until
# every CN's PRes says Operational with RD=1 (if they never do, the cell is
# measured anyway and marked so); then the MN process's CPU time
# over WINDOW seconds (default 30): the sum over all its threads of
# /proc/PID/task/*/schedstat run time (ns), the same definition as
# jitterlab's POWERLINK load, cross-checked with utime+stime of
# /proc/PID/stat. The cell holds when every CN stayed Operational through the
# window and no NMTResetNode went out in it. Prints (and writes to
# OUT/summary.md) the table: load, [Baumgartner POWERLINK] Table 2's figure, the ratio,
# held, SoC period p50/max over the window, the busiest MN threads.
#
# CAPTURE=0 runs without tcpdump (Operational and held then come from the
# CN logs, no SoC figures): on veth the sender pays each receiver's delivery,
# tcpdump's included.
#
# Root; sends frames only inside the namespaces it makes and deletes them on
# every exit. MN_CPU=N / CN_CPU=N keep the MN / the CNs on CPU N (a cpuset
# cgroup, see bench/powerlink_interop.sh); unset, the demos put every
# openPOWERLINK thread on CPU 1 themselves, as the seed's one-core figure.
#
# The documents cited here are listed in docs/design.md.
SCRIPT=bench/powerlink_ref_load.sh
source "$(dirname "${BASH_SOURCE[0]}")/powerlink_interop.sh"

# [Baumgartner POWERLINK] Table 2 (High-End PC): load in % per cycle (us) and CN count;
# "<1" where the seed says "< 1%"
seed_load() {
    case "$1:$2" in
    250:3) echo 37 ;;
    500:3) echo 18 ;; 500:10) echo 28 ;; 500:20) echo 43 ;;
    1000:3) echo 8 ;; 1000:10) echo 14 ;; 1000:20) echo 21 ;; 1000:40) echo 39 ;;
    2000:3) echo 3 ;; 2000:10) echo 5 ;; 2000:20) echo 9 ;; 2000:40) echo 18 ;;
    5000:3) echo "<1" ;; 5000:10) echo 1 ;; 5000:20) echo 4 ;; 5000:40) echo 6 ;;
    10000:3 | 10000:10 | 10000:20) echo "<1" ;; 10000:40) echo 2 ;;
    *) echo - ;;
    esac
}

# cycle_us CYCLE: 1ms, 500us, 50ms -> microseconds
cycle_us() {
    local c=$1
    [[ $c =~ ^([0-9]+)(us|ms|s)$ ]] || die "cycle '$c' is not like 500us, 1ms or 50ms"
    case ${BASH_REMATCH[2]} in
    us) echo "${BASH_REMATCH[1]}" ;;
    ms) echo $((BASH_REMATCH[1] * 1000)) ;;
    s) echo $((BASH_REMATCH[1] * 1000000)) ;;
    esac
}

# The concise DCF tool: make TEMPLATE OUT CYCLE_US NODES (u32 count; per
# entry u16 index, u8 subindex, u32 size, data; 0x1F22/n holds a CN's own
# concise DCF in the same format), or dump FILE.
CDC_PY=$(
    cat <<'PY'
import struct, sys

def parse(b):
    n = struct.unpack_from('<I', b)[0]
    off, out = 4, []
    for _ in range(n):
        idx, sub, size = struct.unpack_from('<HBI', b, off)
        off += 7
        out.append([idx, sub, b[off:off + size]])
        off += size
    if off != len(b):
        sys.exit(f'concise DCF: {len(b) - off} bytes after its {n} entries')
    return out

def build(entries):
    return struct.pack('<I', len(entries)) + b''.join(
        struct.pack('<HBI', i, s, len(d)) + d for i, s, d in entries)

def set_cycle(entries, us):
    for e in entries:
        if e[0] == 0x1006 and e[1] == 0:
            e[2] = struct.pack('<I', us)
        elif e[0] == 0x1F22 and len(e[2]) >= 4:
            inner = parse(e[2])
            set_cycle(inner, us)
            e[2] = build(inner)

PER_NODE = (0x1F81, 0x1C09, 0x1F26, 0x1F27, 0x1F92, 0x1F22)

def make(template, out, us, nodes):
    entries = parse(open(template, 'rb').read())
    have = {s for i, s, _ in entries if i == 0x1F81}
    extra = [n for n in nodes if n not in have]
    drop = have - set(nodes)
    if drop:
        sys.exit(f'the template configures node(s) {sorted(drop)} that NODES lacks')
    res, k = [], 0
    while k < len(entries):
        j = k
        while j < len(entries) and entries[j][0] == entries[k][0]:
            j += 1
        run = entries[k:j]
        res.extend(run)
        one = [e for e in run if e[1] == 1]
        if entries[k][0] in PER_NODE and one:
            # the added nodes get node 1's value, after the run of that index
            res.extend([entries[k][0], n, one[0][2]] for n in extra)
        k = j
    set_cycle(res, us)
    open(out, 'wb').write(build(res))

def dump(path, b=None, ind=''):
    for i, s, d in parse(b if b is not None else open(path, 'rb').read()):
        v = int.from_bytes(d, 'little') if len(d) <= 8 else None
        print(f'{ind}{i:04X}/{s:02X} {len(d)} B' + (f' = 0x{v:X}' if v is not None else ''))
        if i == 0x1F22 and len(d) >= 4:
            dump(path, d, ind + '    ')

if sys.argv[1] == 'make':
    make(sys.argv[2], sys.argv[3], int(sys.argv[4]), [int(n) for n in sys.argv[5].split(',')])
else:
    dump(sys.argv[2])
PY
)

# all_operational FILE NODES: every node's PRes says 0xFD with RD=1 (the
# latest PRes of each), exit 0
OPS_PY=$(
    cat <<'PY'
import struct, sys
path, nodes = sys.argv[1], [int(n) for n in sys.argv[2].split(',')]
data = open(path, 'rb').read()
off, last = 24, {}
while off + 16 <= len(data):
    _, _, incl, _ = struct.unpack_from('<IIII', data, off)
    off += 16
    if off + incl > len(data):
        break
    b = data[off:off + incl]
    off += incl
    if len(b) > 18 and b[12:14] == b'\x88\xab' and b[14] & 0x7f == 4:
        last[b[16]] = b[17] == 0xFD and b[18] & 1
sys.exit(0 if all(last.get(n) for n in nodes) else 1)
PY
)

# window_report FILE NODES T1 T2 TASKS1 TASKS2: SoC periods, resets, states
# inside [T1, T2]; the busiest MN threads
WIN_PY=$(
    cat <<'PY'
import struct, sys
from collections import Counter
path, nodes, t1, t2, s1, s2 = sys.argv[1], [int(n) for n in sys.argv[2].split(',')], float(sys.argv[3]), float(sys.argv[4]), sys.argv[5], sys.argv[6]
data = open(path, 'rb').read()
off, socs, resets, bad, pres = 24, [], 0, Counter(), Counter()
while off + 16 <= len(data):
    sec, ns, incl, _ = struct.unpack_from('<IIII', data, off)
    off += 16
    b = data[off:off + incl]
    off += incl
    t = sec + ns / 1e9
    if not (t1 <= t <= t2) or len(b) < 19 or b[12:14] != b'\x88\xab':
        continue
    mt = b[14] & 0x7f
    if mt == 1:
        socs.append(t)
    elif mt == 4:
        pres[b[16]] += 1
        if not (b[17] == 0xFD and b[18] & 1):
            bad[b[16]] += 1
    elif mt == 6 and b[17] == 4 and b[18] == 0x28:
        resets += 1
per = sorted((b - a) * 1e6 for a, b in zip(socs, socs[1:]))
p50 = per[len(per) // 2] if per else float('nan')
mx = per[-1] if per else float('nan')
mn = per[0] if per else float('nan')
held = resets == 0 and not bad and all(pres[n] for n in nodes)
def tasks(f):
    r = {}
    for line in open(f):
        tid, comm, ns = line.rstrip('\n').split('\t')
        r[tid] = (comm, int(ns))
    return r
a, b = tasks(s1), tasks(s2)
busy = sorted(((b[t][1] - a.get(t, (None, 0))[1], b[t][0]) for t in b), reverse=True)
wall = (t2 - t1) * 1e9
top = ', '.join(f'{c} {ns / wall * 100:.2f}%' for ns, c in busy[:3])
print(f"{'yes' if held else 'no'}\t{len(per)}\t{mn:.0f}\t{p50:.0f}\t{mx:.0f}\t{resets}\t"
      + (','.join(f'{n}:{bad[n]}' for n in nodes if bad[n]) or '-') + f"\t{top}")
PY
)

# tasks_snapshot PID FILE: tid, name, schedstat run ns of every thread
tasks_snapshot() {
    local pid=$1 file=$2 t
    : >"$file"
    for t in /proc/"$pid"/task/*; do
        printf '%s\t%s\t%s\n' "${t##*/}" "$(cat "$t/comm" 2>/dev/null)" \
            "$(cut -d' ' -f1 "$t/schedstat" 2>/dev/null || echo 0)" >>"$file"
    done
}

# logs_operational NODES: every reference CN's log says it entered Operational
logs_operational() {
    local n
    for n in ${1//,/ }; do
        grep -q -- '->NmtCsOperational ' "$OUT/c$n.log" 2>/dev/null || return 1
    done
}

# stat_ticks PID: utime + stime of the process (all threads), clock ticks
stat_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

load_main() {
    [[ $# -eq 1 ]] || die "usage: $SCRIPT OPLK_DIR   (env CELLS=\"3x50ms 3x10ms 3x1ms\" WINDOW=30 SETTLE=90)"
    local oplk=$1
    [[ $EUID -eq 0 ]] || die "run as root: it makes network namespaces and the stacks run SCHED_FIFO"
    need ip iproute2
    need unshare util-linux
    need stdbuf coreutils
    need tcpdump tcpdump
    need python3 python3
    [[ $oplk == /* ]] || oplk=$PLK_CALLER_PWD/$oplk
    plk_demos "$oplk"
    local cells=${CELLS:-3x50ms 3x10ms 3x1ms}
    WINDOW=${WINDOW:-30}
    SETTLE=${SETTLE:-90}
    CAPTURE=${CAPTURE:-1}
    need_uint WINDOW SETTLE
    [[ $CAPTURE == [01] ]] || die "CAPTURE=$CAPTURE: give 1 (tcpdump on the bridge) or 0 (none: the MN's load without the capture's share)"
    local base=${OUT:-$ROOT/bench/out/powerlink_ref_load}
    [[ $base == /* ]] || base=$PLK_CALLER_PWD/$base
    rm -rf "$base"
    mkdir -p "$base"
    local tick
    tick=$(getconf CLK_TCK)
    warn_if_busy
    {
        echo "kernel: $(uname -r); CPUs: $(nproc); openPOWERLINK: $oplk"
        echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
        echo "cells: $cells; capture $CAPTURE; window ${WINDOW}s; settle <= ${SETTLE}s; MN_CPU=${MN_CPU:-demo default 1} CN_CPU=${CN_CPU:-demo default 1}"
    } >"$base/meta.txt"
    local rows=() cell
    for cell in $cells; do
        [[ $cell =~ ^([0-9]+)x([0-9]+(us|ms|s))$ ]] || die "cell '$cell' is not CNSxCYCLE, e.g. 3x1ms"
        local ncn=${BASH_REMATCH[1]} cyc=${BASH_REMATCH[2]} us
        us=$(cycle_us "$cyc")
        ((ncn >= 3)) || die "cell $cell: the shipped CDC has 3 CNs; give 3 or more"
        local nodes=1,32,110 n=2
        while (($(tr , '\n' <<<"$nodes" | wc -l) < ncn)); do
            nodes+=",$n"
            n=$((n + 1))
            ((n == 32)) && n=33
            ((n == 110)) && n=111
        done
        OUT=$base/$cell
        mkdir -p "$OUT/run/mn"
        python3 -c "$CDC_PY" make "$(dirname "$MN_BIN")/mnobd.cdc" "$OUT/run/mn/mnobd.cdc" "$us" "$nodes" ||
            die "cannot make the concise DCF for $cell"
        python3 -c "$CDC_PY" dump "$OUT/run/mn/mnobd.cdc" >"$OUT/mnobd.txt"
        note "cell $cell: CNs $nodes"
        echo "cell $cell: nodes $nodes, CDC $OUT/run/mn/mnobd.cdc" >>"$base/meta.txt"
        : >"$OUT/meta.txt"
        plk_bridge
        plk_node mn mn0 "$(plk_mac 240)"
        IFS=, read -r -a ids <<<"$nodes"
        for n in "${ids[@]}"; do
            plk_node "c$n" "c$n" "$(plk_mac "$n")"
        done
        [[ $CAPTURE == 1 ]] && plk_capture "$OUT/segment.pcap"
        for n in "${ids[@]}"; do
            plk_oplk "c$n" "$OUT/run/c$n" "$CN_BIN" -n "$n" -d "c$n"
        done
        plk_sleep 3
        local t_mn
        t_mn=$(plk_now)
        plk_oplk mn "$OUT/run/mn" "$MN_BIN" -c mnobd.cdc -d mn0
        local pid=$PLK_LAST up=no deadline=$((SECONDS + SETTLE))
        while ((SECONDS < deadline)); do
            sleep 0.5
            kill -0 "$pid" 2>/dev/null || break
            if { [[ $CAPTURE == 1 ]] && python3 -c "$OPS_PY" "$OUT/segment.pcap" "$nodes"; } ||
                { [[ $CAPTURE == 0 ]] && logs_operational "$nodes"; }; then
                up=yes
                break
            fi
        done
        local row
        if kill -0 "$pid" 2>/dev/null; then
            # measured either way: a cell whose CNs never all got to
            # Operational still shows what the MN spends trying
            local settle ticks1 ticks2 t1 t2
            settle=$(awk -v a="$(plk_now)" -v b="$t_mn" 'BEGIN{printf "%.1f", a-b}')
            [[ $up == yes ]] || settle="never (${SETTLE}"
            plk_sleep 2 # past the last NMT command
            t1=$(plk_now)
            ticks1=$(stat_ticks "$pid")
            tasks_snapshot "$pid" "$OUT/tasks1.tsv"
            plk_sleep "$WINDOW"
            t2=$(plk_now)
            ticks2=$(stat_ticks "$pid")
            tasks_snapshot "$pid" "$OUT/tasks2.tsv"
            local left=0 n2 # CNs' departures from Operational by the window's end
            for n2 in ${nodes//,/ }; do
                left=$((left + $(grep -c 'NmtCsOperational->' "$OUT/c$n2.log")))
            done
            sleep 0.3
            plk_cleanup
            local ns_load tick_load win
            ns_load=$(awk -v t1="$t1" -v t2="$t2" 'FNR==NR{a[$1]=$3; next} {s+=$3-a[$1]} END{printf "%.2f", s/((t2-t1)*1e9)*100}' \
                "$OUT/tasks1.tsv" "$OUT/tasks2.tsv")
            tick_load=$(awk -v a="$ticks1" -v b="$ticks2" -v h="$tick" -v t1="$t1" -v t2="$t2" 'BEGIN{printf "%.2f", (b-a)/h/(t2-t1)*100}')
            if [[ $CAPTURE == 1 ]]; then
                win=$(python3 -c "$WIN_PY" "$OUT/segment.pcap" "$nodes" "$t1" "$t2" "$OUT/tasks1.tsv" "$OUT/tasks2.tsv")
            else
                # no capture: held from the CN logs (no CN left Operational by the
                # window's end), no SoC figures
                win=$(python3 -c "$WIN_PY" /dev/null "$nodes" "$t1" "$t2" "$OUT/tasks1.tsv" "$OUT/tasks2.tsv" | awk -F'\t' -v l="$left" 'BEGIN{OFS="\t"} {$1 = (l ? "no" : "yes (CN logs)"); $2 = "-"; $3 = "-"; $4 = "-"; $5 = "-"; $6 = "-"; $7 = (l ? l " CN(s) left Op" : "-"); print}')
            fi
            IFS=$'\t' read -r held nper pmin p50 pmax resets notop top <<<"$win"
            local seed ratio
            seed=$(seed_load "$us" "$ncn")
            case $seed in
            -) ratio=- ;;
            "<1") ratio="$(awk -v l="$ns_load" 'BEGIN{printf "≥ %.2f", l/1}') (vs < 1 %)" ;;
            *) ratio=$(awk -v l="$ns_load" -v s="$seed" 'BEGIN{printf "%.2f", l/s}') ;;
            esac
            [[ $seed == - ]] || seed="$seed %"
            [[ $up == yes ]] || held="no, never all Operational;"
            row="| $ncn | $cyc | $ns_load % | $tick_load % | $seed | $ratio | $held (resets $resets, not Op $notop) | $p50 / $pmin / $pmax | ${settle} s | $top |"
        else
            plk_cleanup
            row="| $ncn | $cyc | not measured: the MN exited (see $OUT/mn.log) | | $(seed_load "$us" "$ncn") | | | | | |"
        fi
        echo "$row" >>"$base/rows.md"
        rows+=("$row")
        note "$row"
    done
    {
        echo "openPOWERLINK V2.7.2 Linux user-space MN load (demo_mn_console, schedstat of all its threads over ${WINDOW} s), reference CNs; Table 2 of Baumgartner and Schoenegger, \"POWERLINK and Real-Time Linux\", beside it"
        echo
        echo "| CNs | cycle | MN load (schedstat) | MN load (utime+stime) | seed Table 2 | ratio | held | SoC period p50 / min / max (us) | to all Operational | busiest MN threads |"
        echo "|---|---|---|---|---|---|---|---|---|---|"
        printf '%s\n' "${rows[@]}"
    } | tee "$base/summary.md"
}

load_main "$@"
