#!/usr/bin/env bash
# Memory: does jitterlab's peak memory grow with the length of a run, and is
# the growth what the window rows it keeps explain?
#
# Two runs of the cyclic probe at 100 us, one of SMALL cycles and one of BIG:
#   /usr/bin/time -f %M jitterlab run cyclic --period 100us --scan 0us --working-set 0 \
#       --cycles N --cpu CPU --json J
# (no scan: the default 100 us scan does not fit a 100 us period, and the scan's
# buffer would be the same in both runs anyway).
# %M is the peak resident set size in KiB. Prints, for each run, the peak RSS
# and threads[0].window_rows from the JSON; then the RSS difference in MiB and
# how much of it the extra window rows account for.
#
# Estimate of a row's cost: ROW_BYTES=200 bytes per row. A WindowRow is
# 168 bytes (2 x u32 + 4 x u64 + 4 metrics x {count, min, max, mean} x 8
# bytes); a growing Vec keeps up to twice what it holds and serialising adds
# some more, so 200 bytes is a round figure in between. The script prints
# rows x ROW_BYTES as the rows' estimated share of the difference; the rest
# is everything else (allocator, store, output buffers).
#
# Environment (defaults):
#   BIG=10000000 SMALL=100000   cycles (at 100 us: 1000 s and 10 s)
#   PERIOD=100us SCAN=0us WORKING_SET=0 CPU=1 ROW_BYTES=200
#   JITTERLAB=target/release/jitterlab OUT=bench/out/memory-<date>
# Smoke test: BIG=50000 SMALL=10000 bench/memory.sh
#
# Needs root, the Debian package `time` (/usr/bin/time, not the shell
# keyword), python3. Sends no network traffic. Run it on an otherwise idle
# machine.
set -euo pipefail
SCRIPT=memory.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BIG=${BIG:-10000000}
SMALL=${SMALL:-100000}
PERIOD=${PERIOD:-100us}
SCAN=${SCAN:-0us}
WORKING_SET=${WORKING_SET:-0}
CPU=${CPU:-1}
ROW_BYTES=${ROW_BYTES:-200}
OUT=${OUT:-bench/out/memory-$(date +%Y%m%d-%H%M%S)}

need_uint BIG SMALL CPU ROW_BYTES
((BIG > SMALL && SMALL >= 1)) || die "need BIG > SMALL >= 1 (got BIG=$BIG SMALL=$SMALL)"
[[ -x /usr/bin/time ]] || die "/usr/bin/time not found; install it with: apt-get install -y time"
need python3 python3
need setsid util-linux
need_root_cpu "$CPU"

ensure_jitterlab
warn_if_busy

mkdir -p "$OUT"
{
    echo "date: $(date -Is)"
    echo "host: $(uname -a)"
    echo "jitterlab: $("$JITTERLAB" --version 2>/dev/null || echo unknown) ($JITTERLAB)"
    echo "BIG=$BIG SMALL=$SMALL PERIOD=$PERIOD SCAN=$SCAN WORKING_SET=$WORKING_SET CPU=$CPU ROW_BYTES=$ROW_BYTES"
} >"$OUT/meta.txt"

if [[ $PERIOD =~ ^([0-9]+)(us|ms)$ ]]; then
    per_us=${BASH_REMATCH[1]}
    [[ ${BASH_REMATCH[2]} == ms ]] && per_us=$((per_us * 1000))
    note "about $(((SMALL + BIG) * per_us / 1000000))s of measuring; output in $OUT"
fi

for n in "$SMALL" "$BIG"; do
    note "jitterlab run cyclic --period $PERIOD --scan $SCAN --working-set $WORKING_SET --cycles $n --cpu $CPU"
    run_child "$OUT/run-$n.log" "$OUT/run-$n.log" /usr/bin/time -f %M -o "$OUT/rss-$n.kib" \
        "$JITTERLAB" run cyclic --period "$PERIOD" --scan "$SCAN" --working-set "$WORKING_SET" \
        --cycles "$n" --cpu "$CPU" --json "$OUT/run-$n.json" ||
        die "jitterlab failed; see $OUT/run-$n.log"
done

python3 - "$OUT" "$SMALL" "$BIG" "$ROW_BYTES" "$PERIOD" <<'EOF' | tee "$OUT/summary.md"
import json, os, sys

outdir, small, big, row_bytes, period = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
MiB = 1024 * 1024


def run(n):
    with open(os.path.join(outdir, f"rss-{n}.kib")) as f:
        # /usr/bin/time may put "Command exited with non-zero status" first.
        kib = int(f.read().split()[-1])
    with open(os.path.join(outdir, f"run-{n}.json")) as f:
        rows = json.load(f)["threads"][0]["window_rows"]
    return kib, rows


(ks, rs), (kb, rb) = run(small), run(big)
print(f"## Peak memory of `jitterlab run cyclic --period {period}`\n")
print("| cycles | peak RSS (KiB) | peak RSS (MiB) | window rows kept |")
print("|---:|---:|---:|---:|")
for n, k, r in [(small, ks, rs), (big, kb, rb)]:
    print(f"| {n} | {k} | {k / 1024:.1f} | {r} |")
diff = (kb - ks) * 1024
rows_bytes = (rb - rs) * row_bytes
print()
print(f"- Peak RSS difference: {diff / MiB:.2f} MiB ({kb - ks} KiB) for {big - small} more cycles.")
print(f"- Extra window rows: {rb - rs}, estimated at {row_bytes} bytes each = {rows_bytes / MiB:.3f} MiB.")
if diff > 0:
    print(f"- Share of the difference the rows explain: {100 * rows_bytes / diff:.1f} %.")
else:
    print("- The bigger run did not use more memory: nothing grows with the run's length.")
print(f"\nRow estimate: a WindowRow is 168 bytes (2 x u32, 4 x u64, 4 metrics x 4 x 8 bytes); "
      f"{row_bytes} bytes allows for a Vec's spare capacity and serialisation. Peak RSS "
      f"is /usr/bin/time's %M (KiB); it also counts mlockall'd, pre-faulted buffers, which "
      f"are the same in both runs.")
EOF
note "summary written to $OUT/summary.md"
