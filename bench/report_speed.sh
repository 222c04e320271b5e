#!/usr/bin/env bash
# Report speed and database size.
#
# 1. Speed: a database of RUNS runs x 20 cells. One real bench of 20 cells
#    (4 configurations x 5 scenarios of the wakeup probe, CELL long each,
#    no warm-up) is measured, then copied RUNS-1 times inside the database
#    (python3's sqlite3: every row of runs, hosts, cells, metrics, windows,
#    outliers, with new ids), so every run is a real one. Then, 5 times each,
#    the wall time of:
#      jitterlab --db DB runs
#      jitterlab --db DB report LAST --format text|md|csv|json
#      jitterlab --db DB report FIRST LAST            (compare)
#    Prints the median and the maximum of each, in ms.
# 2. Size: two one-cell benches of the cyclic probe (1 ms period, 1 s
#    windows), SHORT and LONG measured seconds, each into a fresh database;
#    the size difference per second of measurement, times 3600, is the growth
#    per cell-hour (the per-cell constant part cancels out); printed with the
#    constant part.
#
# Environment: RUNS=100 CELL=1s SHORT=20 LONG=80
#   JITTERLAB=target/release/jitterlab OUT=bench/out/report-<date>
# Needs root (SCHED_FIFO for the probes), python3. No network traffic.
set -euo pipefail
SCRIPT=report_speed.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

RUNS=${RUNS:-100}
CELL=${CELL:-1s}
SHORT=${SHORT:-20}
LONG=${LONG:-80}
need_uint RUNS SHORT LONG
OUT=${OUT:-bench/out/report-$(date +%Y%m%d-%H%M%S)}
need python3 python3
ensure_jitterlab
warn_if_busy
mkdir -p "$OUT"
DB=$OUT/speed.db

{
    printf 'name = "twenty"\nduration = "%s"\nwarmup = "0"\n\n' "$CELL"
    for c in c1 c2 c3 c4; do printf '[[configuration]]\nname = "%s"\n\n' "$c"; done
    for s in s1 s2 s3 s4 s5; do printf '[[scenario]]\nname = "%s"\nbuiltin = "idle"\n\n' "$s"; done
    printf '[[probe]]\nkind = "wakeup"\n'
} >"$OUT/twenty.toml"
note "measuring one bench of 20 cells"
run_child "$OUT/twenty.out" "$OUT/twenty.err" "$JITTERLAB" --db "$DB" bench "$OUT/twenty.toml" \
    || die "the bench failed; see $OUT/twenty.err"

note "copying it to $RUNS runs"
python3 - "$DB" "$RUNS" <<'PY'
import sqlite3, sys
db, runs = sys.argv[1], int(sys.argv[2])
c = sqlite3.connect(db)
cols = lambda t: [r[1] for r in c.execute(f"PRAGMA table_info({t})")]
run_cols = [x for x in cols("runs") if x != "id"]
cell_cols = [x for x in cols("cells") if x not in ("id", "run_id")]
for _ in range(runs - 1):
    cur = c.execute(f"INSERT INTO runs ({','.join(run_cols)}) SELECT {','.join(run_cols)} FROM runs WHERE id = 1")
    run = cur.lastrowid
    c.execute("INSERT INTO hosts SELECT ?, hostname, kernel_release, snapshot_json FROM hosts WHERE run_id = 1", (run,))
    for (cell,) in c.execute("SELECT id FROM cells WHERE run_id = 1 ORDER BY id").fetchall():
        cur = c.execute(f"INSERT INTO cells (run_id, {','.join(cell_cols)}) SELECT ?, {','.join(cell_cols)} FROM cells WHERE id = ?", (run, cell))
        new = cur.lastrowid
        for t in ("metrics", "windows", "outliers"):
            tc = [x for x in cols(t) if x != "cell_id"]
            c.execute(f"INSERT INTO {t} (cell_id, {','.join(tc)}) SELECT ?, {','.join(tc)} FROM {t} WHERE cell_id = ?", (new, cell))
c.commit()
n_runs, = c.execute("SELECT COUNT(*) FROM runs").fetchone()
n_cells, = c.execute("SELECT COUNT(*) FROM cells").fetchone()
print(f"database: {n_runs} runs, {n_cells} cells", file=sys.stderr)
PY
ls -l "$DB" >&2

time_ms() { # prints the wall time of "$@" in ms; output discarded
    local t0 t1
    t0=$(date +%s%N)
    "$@" >/dev/null
    t1=$(date +%s%N)
    echo $(((t1 - t0) / 1000000))
}
printf '%-28s %10s %10s\n' command median_ms max_ms
measure() {
    local label=$1
    shift
    local v=()
    for _ in 1 2 3 4 5; do v+=("$(time_ms "$@")"); done
    python3 -c 'import sys, statistics as s; v=[int(x) for x in sys.argv[2:]]; print(f"{sys.argv[1]:<28} {s.median(v):10.0f} {max(v):10d}")' "$label" "${v[@]}"
}
measure "runs" "$JITTERLAB" --db "$DB" runs
for f in text md csv json; do
    measure "report $RUNS --format $f" "$JITTERLAB" --db "$DB" report "$RUNS" --format "$f"
done
measure "report 1 $RUNS (compare)" "$JITTERLAB" --db "$DB" report 1 "$RUNS"

note "database growth: cells of ${SHORT}s and ${LONG}s"
size_of() { # one cell of $1 seconds into a fresh database; prints its bytes
    local db=$OUT/size-$1.db
    rm -f "$db"
    printf 'duration = "%ss"\nwarmup = "0"\n[[probe]]\nkind = "cyclic"\nperiod = "1ms"\n' "$1" >"$OUT/size-$1.toml"
    run_child "$OUT/size-$1.out" "$OUT/size-$1.err" "$JITTERLAB" --db "$db" bench "$OUT/size-$1.toml" \
        || die "the size bench failed; see $OUT/size-$1.err"
    stat -c %s "$db"
}
s=$(size_of "$SHORT")
l=$(size_of "$LONG")
python3 - "$s" "$l" "$SHORT" "$LONG" <<'PY'
import sys
s, l, a, b = map(int, sys.argv[1:])
per_s = (l - s) / (b - a)
print(f"database of a {a}s cell: {s} bytes; of a {b}s cell: {l} bytes")
print(f"growth: {per_s:.0f} bytes per measured second = {per_s * 3600 / 1e6:.2f} MB per cell-hour "
      f"(+ about {(s - per_s * a) / 1e3:.0f} kB per run and cell, the fixed part)")
PY
note "outputs in $OUT"
