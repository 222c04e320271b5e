#!/usr/bin/env bash
# What the chase sees of a cache-thrashing neighbour: the chase's median
# and p99 cycles, idle and with `stress-ng --cache 1` on another CPU, with
# the buffer inside L2, between L2 and L3, and at 4x L3 (sizes read from
# sysfs for the probe CPU). Conditions alternate, each buffer size measured
# idle then loaded, so drift of the machine spreads over both alike.
#
#   CPU=1 NEIGHBOUR=0 SAMPLES=200 bench/chase_cache.sh
SCRIPT=bench/chase_cache.sh
source "$(dirname "$0")/lib.sh"

CPU=${CPU:-1}
NEIGHBOUR=${NEIGHBOUR:-0}
SAMPLES=${SAMPLES:-200}
need_uint CPU NEIGHBOUR SAMPLES
need_root_cpu "$CPU"
need stress-ng stress-ng
ensure_jitterlab
warn_if_busy

cache_kib() { # LEVEL: size of the probe CPU's unified/data cache of that level, KiB
    local d
    for d in /sys/devices/system/cpu/cpu"$CPU"/cache/index*; do
        if [[ $(cat "$d/level") == "$1" && $(cat "$d/type") != Instruction ]]; then
            sed 's/K$//' "$d/size"
            return
        fi
    done
    die "CPU $CPU has no level-$1 cache in sysfs"
}
L2=$(cache_kib 2)
L3=$(cache_kib 3)
SIZES=("$((L2 / 2))KiB" "$(((L2 + L3 / 4) / 2 > L2 ? (L2 + L3 / 4) / 2 : L2 * 2))KiB" "$((L3 * 4))KiB")
note "L2 ${L2} KiB, L3 ${L3} KiB: buffers ${SIZES[*]}"

NEIGH=""
extra_cleanup() {
    if [[ -n $NEIGH ]]; then
        kill -INT -- "-$NEIGH" 2>/dev/null || true
        wait "$NEIGH" 2>/dev/null || true
        NEIGH=""
    fi
}
OUT=$(mktemp -d)
printf '%-10s %-8s %12s %12s\n' buffer neighbour median_cycles p99_cycles
for size in "${SIZES[@]}"; do
    for cond in idle cache; do
        if [[ $cond == cache ]]; then
            setsid taskset -c "$NEIGHBOUR" stress-ng --cache 1 --timeout 0 >/dev/null 2>&1 </dev/null &
            NEIGH=$!
            sleep 2
        fi
        run_child "$OUT/out" "$OUT/err" "$JITTERLAB" run chase --cpu "$CPU" --buffer "$size" \
            --samples "$SAMPLES" --no-db --json "$OUT/r.json" ||
            die "jitterlab run chase failed: $(tail -3 "$OUT/err")"
        extra_cleanup
        python3 - "$OUT/r.json" "$size" "$cond" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["threads"][0]["metrics"]["chase"]
print(f"{sys.argv[2]:<10} {sys.argv[3]:<8} {m['p50']:>12} {m['p99']:>12}")
PY
    done
done
rm -rf "$OUT"
