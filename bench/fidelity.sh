#!/usr/bin/env bash
# Wake-up latency fidelity: jitterlab's `wakeup` probe against cyclictest,
# interleaved on the same CPU (design rule 10).
#
# For each condition (idle; a CPU hog from `stress-ng --cpu 1 --taskset 0`),
# ROUNDS rounds of one jitterlab run and one cyclictest run of SECS seconds
# each, same CPU, same priority, same 1 ms interval, alternating which tool
# goes first. Both write a 1 us histogram in cyclictest's -h format; the
# summary (bench/summarize_fidelity.py) computes both tools' percentiles from
# those files with the same code and prints the medians over rounds and the
# jitterlab/cyclictest ratios as Markdown.
#
# Environment (defaults):
#   ROUNDS=5 SECS=30 CPU=1      rounds per condition, seconds per run, measured CPU
#   PRIORITY=95 INTERVAL_US=1000 HIST_US=10000
#   CONDITIONS="idle cpu-stress"   any subset, in this order or another
#   STRESS_CPU=0                CPU the stress-ng hog is pinned to
#   PAUSE=1                     seconds of rest between runs
#   JITTERLAB=target/release/jitterlab   (built with cargo build --release if missing)
#   OUT=bench/out/fidelity-<date>        output directory
#   JITTERLAB_OLD=PATH          a second jitterlab binary (e.g. an older build)
#                               run in every round too, as tool "jitterlab-old";
#                               the three tools' order rotates from round to round
#                               and the summary adds a new/old table
# Smoke test: ROUNDS=1 SECS=2 bench/fidelity.sh
#
# Needs root (SCHED_FIFO, mlockall), rt-tests, stress-ng, python3. Sends no
# network traffic. Run it on an otherwise idle machine.
#
# The design rules cited here are in docs/design.md.
set -euo pipefail
SCRIPT=fidelity.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ROUNDS=${ROUNDS:-5}
SECS=${SECS:-30}
CPU=${CPU:-1}
PRIORITY=${PRIORITY:-95}
INTERVAL_US=${INTERVAL_US:-1000}
HIST_US=${HIST_US:-10000}
CONDITIONS=${CONDITIONS:-idle cpu-stress}
read -r -a CONDS <<<"$CONDITIONS"
((${#CONDS[@]})) || { echo "fidelity.sh: error: CONDITIONS is empty" >&2; exit 2; }
STRESS_CPU=${STRESS_CPU:-0}
PAUSE=${PAUSE:-1}
OUT_DEFAULTED=$([[ -z ${OUT:-} ]] && echo 1 || echo 0)
OUT=${OUT:-bench/out/fidelity-$(date +%Y%m%d-%H%M%S)}

need_uint ROUNDS SECS CPU PRIORITY INTERVAL_US HIST_US STRESS_CPU PAUSE
((ROUNDS >= 1 && SECS >= 1)) || die "ROUNDS and SECS must be at least 1"

need cyclictest rt-tests
need python3 python3
need setsid util-linux
for c in "${CONDS[@]}"; do
    case $c in
        idle) ;;
        cpu-stress) need stress-ng stress-ng ;;
        *) die "unknown condition '$c' in CONDITIONS; use idle and/or cpu-stress" ;;
    esac
done
need_root_cpu "$CPU"

ensure_jitterlab
JITTERLAB_OLD=${JITTERLAB_OLD:-}
TOOLS=(jitterlab cyclictest)
if [[ -n $JITTERLAB_OLD ]]; then
    [[ -x $JITTERLAB_OLD ]] || die "JITTERLAB_OLD=$JITTERLAB_OLD is not an executable file"
    TOOLS=(jitterlab jitterlab-old cyclictest)
fi

# --- the stress-ng neighbour: its own process group, stopped on exit -------
STRESS_PID=""

stop_stress() {
    [[ -n $STRESS_PID ]] || return 0
    kill -TERM -- "-$STRESS_PID" 2>/dev/null || true
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        kill -0 -- "-$STRESS_PID" 2>/dev/null || break
        sleep 0.2
    done
    kill -KILL -- "-$STRESS_PID" 2>/dev/null || true
    wait "$STRESS_PID" 2>/dev/null || true
    STRESS_PID=""
}
extra_cleanup() { stop_stress; }

start_stress() { # start_stress LOGFILE
    setsid stress-ng --cpu 1 --taskset "$STRESS_CPU" --timeout 0 >"$1" 2>&1 </dev/null &
    STRESS_PID=$!
    sleep 1
    kill -0 "$STRESS_PID" 2>/dev/null || die "stress-ng did not start; see $1"
}

run_jitterlab() { # run_jitterlab DIR
    run_child "$1/jitterlab.log" "$1/jitterlab.log" \
        "$JITTERLAB" run wakeup --cpus "$CPU" --interval "${INTERVAL_US}us" \
        --priority "$PRIORITY" --duration "${SECS}s" --no-db \
        --json "$1/jitterlab.json" --histogram "$1/jitterlab.hist" ||
        die "jitterlab failed; see $1/jitterlab.log"
}

run_jitterlab-old() { # run_jitterlab-old DIR
    run_child "$1/jitterlab-old.log" "$1/jitterlab-old.log" \
        "$JITTERLAB_OLD" run wakeup --cpus "$CPU" --interval "${INTERVAL_US}us" \
        --priority "$PRIORITY" --duration "${SECS}s" --no-db \
        --json "$1/jitterlab-old.json" --histogram "$1/jitterlab-old.hist" ||
        die "jitterlab-old failed; see $1/jitterlab-old.log"
}

run_cyclictest() { # run_cyclictest DIR
    run_child "$1/cyclictest.hist" "$1/cyclictest.log" \
        cyclictest -m -p"$PRIORITY" -i"$INTERVAL_US" -a"$CPU" -t1 -D"$SECS" -q -h "$HIST_US" ||
        die "cyclictest failed; see $1/cyclictest.log"
}

# steal_ticks: time the hypervisor ran something else while this guest's
# measured CPU wanted to run (/proc/stat, field 9 of the cpuN line, in
# USER_HZ ticks). It is the noise neither tool can remove; the summary shows
# it per run.
steal_ticks() { awk -v c="cpu$CPU" '$1 == c { print $9 }' /proc/stat; }
mkdir -p "$(dirname "$OUT")"
getconf CLK_TCK >"$OUT.clk_tck" 2>/dev/null || true

warn_if_busy

mkdir -p "$OUT"
mv -f "$OUT.clk_tck" "$OUT/clk_tck" 2>/dev/null || true
printf '%s\n' "${CONDS[@]}" >"$OUT/conditions"
{
    echo "date: $(date -Is)"
    echo "host: $(uname -a)"
    echo "rt-tests: $(dpkg-query -W -f '${Version}' rt-tests 2>/dev/null || echo unknown)"
    echo "stress-ng: $(stress-ng --version 2>/dev/null || echo none)"
    echo "jitterlab: $("$JITTERLAB" --version 2>/dev/null || echo unknown) ($JITTERLAB)"
    [[ -z $JITTERLAB_OLD ]] || echo "jitterlab-old: $("$JITTERLAB_OLD" --version 2>/dev/null || echo unknown) ($JITTERLAB_OLD)"
    echo "loadavg at start: $(cat /proc/loadavg)"
    echo "ROUNDS=$ROUNDS SECS=$SECS CPU=$CPU PRIORITY=$PRIORITY INTERVAL_US=$INTERVAL_US HIST_US=$HIST_US"
    echo "CONDITIONS=$CONDITIONS STRESS_CPU=$STRESS_CPU"
    echo "jitterlab: $JITTERLAB run wakeup --cpus $CPU --interval ${INTERVAL_US}us --priority $PRIORITY --duration ${SECS}s --no-db --json J --histogram H"
    echo "cyclictest: cyclictest -m -p$PRIORITY -i$INTERVAL_US -a$CPU -t1 -D$SECS -q -h $HIST_US"
    echo "stress: stress-ng --cpu 1 --taskset $STRESS_CPU --timeout 0"
} >"$OUT/meta.txt"

nconds=${#CONDS[@]}
ntools=${#TOOLS[@]}
note "$nconds condition(s) x $ROUNDS round(s) x $ntools tools x ${SECS}s ~ $((nconds * ROUNDS * ntools * (SECS + PAUSE) + nconds * 2))s; output in $OUT"

for cond in "${CONDS[@]}"; do
    if [[ $cond == cpu-stress ]]; then
        start_stress "$OUT/stress-ng.log"
        note "[$cond] stress-ng running as pid $STRESS_PID on CPU $STRESS_CPU"
    fi
    for ((r = 1; r <= ROUNDS; r++)); do
        dir="$OUT/$cond/round$r"
        mkdir -p "$dir"
        # Rotate which tool goes first (two tools: alternate).
        order=()
        for ((k = 0; k < ntools; k++)); do order+=("${TOOLS[$(((r - 1 + k) % ntools))]}"); done
        echo "${order[*]}" >"$dir/order"
        for tool in "${order[@]}"; do
            note "[$cond] round $r/$ROUNDS: $tool (${SECS}s)"
            s0=$(steal_ticks)
            "run_$tool" "$dir"
            echo $(($(steal_ticks) - s0)) >"$dir/$tool.steal"
            sleep "$PAUSE"
        done
    done
    if [[ $cond == cpu-stress ]]; then
        stop_stress
    fi
done

python3 bench/summarize_fidelity.py "$OUT" | tee "$OUT/summary.md"
if ((OUT_DEFAULTED)); then
    ln -sfn "$(basename "$OUT")" bench/out/fidelity-latest
fi
note "summary written to $OUT/summary.md"
