#!/usr/bin/env bash
# The database a year of `jitterlab monitor` leaves, and `report --monitor`
# on it.
#
# 1. `jitterlab __synth-monitor --days DAYS --cpus CPUS` writes a synthetic
#    series into a new database: 1 s windows of a wake-up monitor at 1 ms
#    (1 000 samples a window), through the monitor's own store calls, an hour
#    of windows per drain, a 5-minute histogram per CPU every 5 minutes and
#    the default retention after every drain (windows and histograms 7 days,
#    5-minute rows a year, hourly rows for ever). Timed (wall, peak RSS).
# 2. Sizes: the database file and its -wal (after the writer ended, and the
#    largest while it wrote, polled every second); per table its rows and the bytes
#    of its pages (SQLite's dbstat); the growth per further year: the bytes
#    of the hourly rows alone (a copy without the other rollups, vacuumed:
#    what each year adds once the windows and 5-minute rows have reached
#    their bound), per 8 760 rows.
# 3. Times `jitterlab report --monitor` (text) and `--format html -o FILE`
#    RUNS times each: the median and the maximum wall time (hyperfine when it
#    is installed, else /usr/bin/time), the output's size, the peak RSS.
#
# Environment: DAYS=365 CPUS=1 RUNS=3 JITTERLAB=target/release/jitterlab
#   OUT=bench/out/monitor-year-<date>  KEEP=0 (1: keep the database)
# The database (about 100 MB per CPU) is made under TMPDIR (/tmp) and removed
# at the end unless KEEP=1. Needs python3 (sqlite3 module) and /usr/bin/time
# (Debian `time`). No root, no network. About 12 minutes for a year on one CPU
# of this VM (release build).
set -euo pipefail
SCRIPT=monitor-year.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DAYS=${DAYS:-365}
CPUS=${CPUS:-1}
RUNS=${RUNS:-3}
KEEP=${KEEP:-0}
need_uint DAYS CPUS RUNS
(( RUNS >= 1 )) || die "RUNS=$RUNS: give at least 1"
OUT=${OUT:-bench/out/monitor-year-$(date +%Y%m%d-%H%M%S)}
need python3 python3
[[ -x /usr/bin/time ]] || die "/usr/bin/time not found; install it with: apt-get install -y time"
ensure_jitterlab
warn_if_busy
mkdir -p "$OUT"
DIR=$(mktemp -d "${TMPDIR:-/tmp}/monitor-year.XXXXXX")
DB=$DIR/monitor.db
POLLER=""
extra_cleanup() {
    [[ -z $POLLER ]] || kill "$POLLER" 2>/dev/null || true
    if [[ $KEEP == 1 ]]; then
        note "kept $DB"
    else
        rm -rf "$DIR"
    fi
}

{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "kernel: $(uname -r)"
    echo "jitterlab: $("$JITTERLAB" --version | head -1)"
    echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "command: $JITTERLAB --db $DB __synth-monitor --days $DAYS --cpus $CPUS"
} >"$OUT/meta.txt"

size() { if [[ -e $1 ]]; then stat -c %s "$1"; else echo 0; fi; }

note "writing $DAYS days on $CPUS CPU(s) into $DB"
# The -wal file's largest size while the writer runs, polled every second:
# the writer's last close checkpoints it into the database and removes it.
(
    max=0
    while [[ ! -e $DIR/synth.done ]]; do
        s=$(size "$DB-wal")
        (( s > max )) && max=$s
        echo "$max" >"$DIR/wal.max"
        sleep 1
    done
) &
POLLER=$!
run_child "$OUT/synth.out" "$OUT/synth.err" \
    /usr/bin/time -f 'synth_wall_s %e\nsynth_peak_rss_kb %M' \
    "$JITTERLAB" --db "$DB" __synth-monitor --days "$DAYS" --cpus "$CPUS"
touch "$DIR/synth.done"
wait "$POLLER" || true
POLLER=""
WAL_MAX=$(cat "$DIR/wal.max" 2>/dev/null || echo 0)
SYNTH_WALL=$(awk '/^synth_wall_s/ { print $2 }' "$OUT/synth.err")
SYNTH_RSS=$(awk '/^synth_peak_rss_kb/ { print $2 }' "$OUT/synth.err")

DB_BYTES=$(size "$DB")
WAL_BYTES=$(size "$DB-wal")

# Per table: rows and page bytes; then the hourly rows alone.
python3 - "$DB" "$DIR/hourly.db" >"$OUT/tables.txt" <<'EOF'
import shutil, sqlite3, sys
db, copy = sys.argv[1], sys.argv[2]
c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
pages = dict(c.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name"))
print("table rows bytes")
for (t,) in c.execute("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name"):
    rows = c.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0]
    print(t, rows, pages.get(t, 0))
for span in (300, 3600):
    n = c.execute("SELECT COUNT(*) FROM monitor_rollups WHERE span = ?", (span,)).fetchone()[0]
    print(f"rollups_{span} {n}")
h = c.execute("SELECT COUNT(*) FROM monitor_rollups WHERE hist IS NOT NULL").fetchone()[0]
print(f"histograms {h}")
c.close()
shutil.copy(db, copy)
d = sqlite3.connect(copy)
d.execute("DELETE FROM monitor_rollups WHERE span <> 3600")
d.commit()
d.execute("VACUUM")
n = d.execute("SELECT COUNT(*) FROM monitor_rollups").fetchone()[0]
b = d.execute("SELECT SUM(pgsize) FROM dbstat WHERE name = 'monitor_rollups'").fetchone()[0]
print(f"hourly_only_rows {n}")
print(f"hourly_only_bytes {b}")
EOF
rm -f "$DIR/hourly.db"

# time_it NAME COMMAND...: RUNS wall times (s) into $OUT/NAME.times, the last
# output kept; prints "median max peak_rss_kb".
time_it() {
    local name=$1
    shift
    : >"$OUT/$name.times"
    if command -v hyperfine >/dev/null; then
        hyperfine --runs "$RUNS" --export-json "$OUT/$name.json" --output="$OUT/$name.out" -- "$(printf '%q ' "$@")" >/dev/null
        python3 -c '
import json, sys
for t in json.load(open(sys.argv[1]))["results"][0]["times"]: print(f"{t:.3f} 0")' "$OUT/$name.json" >"$OUT/$name.times"
    else
        for _ in $(seq "$RUNS"); do
            /usr/bin/time -o "$OUT/$name.time1" -f '%e %M' "$@" >"$OUT/$name.out"
            cat "$OUT/$name.time1" >>"$OUT/$name.times"
        done
        rm -f "$OUT/$name.time1"
    fi
    sort -n "$OUT/$name.times" | awk '{ t[NR] = $1; if ($2 > m) m = $2 } END { printf "%s %s %s\n", t[int((NR + 1) / 2)], t[NR], m }'
}
read -r TEXT_MED TEXT_MAX TEXT_RSS < <(time_it report-text "$JITTERLAB" --db "$DB" report --monitor)
read -r HTML_MED HTML_MAX HTML_RSS < <(time_it report-html "$JITTERLAB" --db "$DB" report --monitor --format html -o "$OUT/monitor.html")
TEXT_BYTES=$(size "$OUT/report-text.out")
HTML_BYTES=$(size "$OUT/monitor.html")
cp "$OUT/report-text.out" "$OUT/report.txt"

val() { awk -v k="$1" '$1 == k { print $2 }' "$OUT/tables.txt"; }
bytes() { awk -v k="$1" '$1 == k { print $3 }' "$OUT/tables.txt"; }
rows() { awk -v k="$1" '$1 == k { print $2 }' "$OUT/tables.txt"; }
mb() { awk -v b="$1" 'BEGIN { printf "%.1f MB", b / 1e6 }'; }
HOURLY_ROWS=$(val hourly_only_rows)
HOURLY_BYTES=$(val hourly_only_bytes)
PER_YEAR=$(awk -v b="$HOURLY_BYTES" -v n="$HOURLY_ROWS" -v c="$CPUS" 'BEGIN { if (n > 0) printf "%.0f", b / n * 8760 * c; else print 0 }')

{
    echo "## \`jitterlab monitor\`: $DAYS days at 1 ms on $CPUS CPU(s), default retention"
    echo
    echo "| | |"
    echo "|---|---:|"
    echo "| writing it (\`__synth-monitor\`) | ${SYNTH_WALL} s, peak RSS ${SYNTH_RSS} kB |"
    echo "| database file | $DB_BYTES B ($(mb "$DB_BYTES")) |"
    echo "| its -wal file: after the writer closed it / the largest while it wrote | $WAL_BYTES B / $WAL_MAX B |"
    for t in window_metrics windows monitor_rollups; do
        echo "| \`$t\` | $(rows "$t") rows, $(bytes "$t") B ($(mb "$(bytes "$t")")) |"
    done
    echo "| 5-minute / hourly rows, histograms held | $(val rollups_300) / $(val rollups_3600) / $(val histograms) |"
    echo "| hourly rows alone (vacuumed copy) | $HOURLY_ROWS rows, $HOURLY_BYTES B: $PER_YEAR B per further year |"
    echo "| \`report --monitor\` (text), median / max of $RUNS | ${TEXT_MED} s / ${TEXT_MAX} s, $TEXT_BYTES B, peak RSS ${TEXT_RSS} kB |"
    echo "| \`report --monitor --format html\`, median / max of $RUNS | ${HTML_MED} s / ${HTML_MAX} s, $HTML_BYTES B, peak RSS ${HTML_RSS} kB |"
} | tee "$OUT/summary.md"
note "raw outputs in $OUT"
