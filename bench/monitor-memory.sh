#!/usr/bin/env bash
# Monitor memory: does `jitterlab monitor`'s peak memory stay the same
# however long it runs? It must: every window goes to the database as it
# is drained, and nothing else grows with the length of the run.
#
# Interleaved, on one CPU, at one interval:
#   jitterlab monitor for SMALL samples, cyclictest for SMALL loops,
#   jitterlab monitor for BIG samples,   cyclictest for BIG loops.
# The monitor never ends by itself: it gets SIGTERM after SAMPLES x
# INTERVAL (the samples it actually took are read back from its database).
# cyclictest (rt-tests) is the peer: a C program whose memory is known not
# to grow; its peak beside ours says what a constant footprint looks like.
# Peak resident set size from /usr/bin/time -f %M (KiB).
#
#   /usr/bin/time -f %M timeout -s TERM T jitterlab --db D monitor --cpus CPU \
#       --interval INTERVAL --window WINDOW
#   /usr/bin/time -f %M cyclictest -m -q -p 95 -a CPU -t 1 -i INTERVAL_US -l N
#
# Small windows (WINDOW=10ms) make a hundred window rows a second, so a row
# kept in memory would show: 10 M samples at 100 us are 100 000 rows.
#
# Environment (defaults):
#   BIG=10000000 SMALL=100000   samples (at 100 us: 1000 s and 10 s)
#   INTERVAL_US=100 WINDOW=10ms CPU=1
#   JITTERLAB=target/release/jitterlab OUT=bench/out/monitor-memory-<date>
# Smoke test: BIG=200000 SMALL=20000 bench/monitor-memory.sh
#
# Needs root, /usr/bin/time (Debian package time), cyclictest (rt-tests),
# sqlite3 or python3. Sends no network traffic.
set -euo pipefail
SCRIPT=monitor-memory.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BIG=${BIG:-10000000}
SMALL=${SMALL:-100000}
INTERVAL_US=${INTERVAL_US:-100}
WINDOW=${WINDOW:-10ms}
CPU=${CPU:-1}
OUT=${OUT:-bench/out/monitor-memory-$(date +%Y%m%d-%H%M%S)}

need_uint BIG SMALL INTERVAL_US CPU
((BIG > SMALL && SMALL >= 1)) || die "need BIG > SMALL >= 1 (got BIG=$BIG SMALL=$SMALL)"
[[ -x /usr/bin/time ]] || die "/usr/bin/time not found; install it with: apt-get install -y time"
need cyclictest rt-tests
need python3 python3
need timeout coreutils
need_root_cpu "$CPU"
ensure_jitterlab
warn_if_busy

mkdir -p "$OUT"
{
    echo "date: $(date -Is)"
    echo "host: $(uname -a)"
    echo "jitterlab: $("$JITTERLAB" --version 2>/dev/null | head -1) ($JITTERLAB)"
    echo "cyclictest: $(cyclictest --help 2>&1 | head -1)"
    echo "BIG=$BIG SMALL=$SMALL INTERVAL_US=$INTERVAL_US WINDOW=$WINDOW CPU=$CPU"
} >"$OUT/meta.txt"
note "about $(((SMALL + BIG) * INTERVAL_US * 2 / 1000000))s of measuring; output in $OUT"

for n in "$SMALL" "$BIG"; do
    secs=$(python3 -c "print($n * $INTERVAL_US / 1e6)")
    db="$OUT/monitor-$n.db"
    note "jitterlab monitor for ${secs}s ($n samples at ${INTERVAL_US}us)"
    run_child "$OUT/monitor-$n.log" "$OUT/monitor-$n.log" /usr/bin/time -f %M -o "$OUT/rss-monitor-$n.kib" \
        timeout --preserve-status -s TERM "$secs" \
        "$JITTERLAB" --db "$db" monitor --cpus "$CPU" --interval "${INTERVAL_US}us" --window "$WINDOW" ||
        die "jitterlab monitor failed; see $OUT/monitor-$n.log"
    note "cyclictest -l $n"
    run_child "$OUT/cyclictest-$n.log" "$OUT/cyclictest-$n.log" /usr/bin/time -f %M -o "$OUT/rss-cyclictest-$n.kib" \
        cyclictest -m -q -p 95 -a "$CPU" -t 1 -i "$INTERVAL_US" -l "$n" ||
        die "cyclictest failed; see $OUT/cyclictest-$n.log"
done

python3 - "$OUT" "$SMALL" "$BIG" <<'EOF' | tee "$OUT/summary.md"
import os, sqlite3, sys

out, small, big = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def kib(name):
    return int(open(os.path.join(out, name)).read().split()[-1])
def taken(n):
    c = sqlite3.connect(os.path.join(out, f"monitor-{n}.db"))
    return c.execute("SELECT COALESCE(SUM(cycles), 0), COUNT(*) FROM windows").fetchone()
print("| samples asked | monitor: samples taken | window rows stored | monitor peak RSS | cyclictest peak RSS | ratio |")
print("|---:|---:|---:|---:|---:|---:|")
rss = {}
for n in (small, big):
    m, c = kib(f"rss-monitor-{n}.kib"), kib(f"rss-cyclictest-{n}.kib")
    rss[n] = (m, c)
    s, w = taken(n)
    print(f"| {n:,} | {s:,} | {w:,} | {m:,} KiB | {c:,} KiB | {m / c:.2f} |".replace(",", " "))
dm = rss[big][0] - rss[small][0]
dc = rss[big][1] - rss[small][1]
print()
print(f"monitor: the long run peaks {dm:+,} KiB against the short one ({dm / 1024:+.2f} MiB; target: within 1 MiB)".replace(",", " "))
print(f"cyclictest: {dc:+,} KiB".replace(",", " "))
EOF
