#!/usr/bin/env bash
# Report speed and database size.
#
# Every timed command runs 5 times; the script prints the median and the
# maximum wall time in ms and the size of its output in bytes. The formats
# are those `jitterlab report --help` lists (text, md, csv, json, and html
# where this jitterlab has it).
#
# 1. Speed over many runs: a database of RUNS runs x 20 cells. One real
#    bench of 20 cells (4 configurations x 5 scenarios of the wakeup probe,
#    CELL long each, no warm-up) is measured, then copied RUNS-1 times inside
#    the database (python3's sqlite3: every row of runs, hosts, cells,
#    metrics, windows, outliers, with new ids), so every run is a real one.
#    Timed:
#      jitterlab --db DB runs
#      jitterlab --db DB report LAST --format F        (every format F)
#      jitterlab --db DB report FIRST LAST            (compare)
# 2. One cell and a 48-hour run: one real `jitterlab run cyclic` of REAL
#    seconds (1 ms period, 1 s windows) into a fresh database; its report is
#    timed in every format (1 cell). Then its windows are extended to
#    WINDOWS (172 800 = 48 hours) with python3's sqlite3: each new window a
#    copy of a real one drawn at random (seeded), three planted latency
#    maxima larger than any real one (at 1/4, 1/2 and the last window, the
#    last the largest), the stored result given the 48 hours' length and
#    that maximum. The run is copied as run 2, still `running` (its process:
#    this script), as a 48-hour run looks to `report --follow` in its last
#    window. Timed: `runs`, and `report 1` (finished) and `report 2`
#    (running: figures so far from the windows) in every format; the text
#    of both must name the planted maximum, else the script fails.
#    Then `report 2 --follow` watches run 2 while FOLLOW windows are added
#    to it, one a second (as the writer commits them), until the run is
#    marked interrupted: the number of renders and the follower's CPU time
#    in all (bash's `time`), against one render of a one-shot report.
# 3. Size: two one-cell benches of the cyclic probe (1 ms period, 1 s
#    windows), SHORT and LONG measured seconds, each into a fresh database;
#    the size difference per second of measurement, times 3600, is the growth
#    per cell-hour (the per-cell constant part cancels out); printed with the
#    constant part.
#
# Environment: RUNS=100 CELL=1s REAL=10 WINDOWS=172800 FOLLOW=10 SHORT=20 LONG=80
#   JITTERLAB=target/release/jitterlab OUT=bench/out/report-<date>
# The 48-hour database (about 60 MB) is made under TMPDIR (/tmp) and removed
# at the end.
# Needs root (SCHED_FIFO for the probes), python3. No network traffic.
set -euo pipefail
SCRIPT=report_speed.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

RUNS=${RUNS:-100}
CELL=${CELL:-1s}
REAL=${REAL:-10}
WINDOWS=${WINDOWS:-172800}
FOLLOW=${FOLLOW:-10}
SHORT=${SHORT:-20}
LONG=${LONG:-80}
need_uint RUNS REAL WINDOWS FOLLOW SHORT LONG
(( WINDOWS > REAL )) || die "WINDOWS=$WINDOWS must be more than the REAL=$REAL windows measured"
OUT=${OUT:-bench/out/report-$(date +%Y%m%d-%H%M%S)}
need python3 python3
ensure_jitterlab
warn_if_busy
mkdir -p "$OUT"
DB=$OUT/speed.db
rm -f "$DB" "$DB-wal" "$DB-shm" # a database left by an earlier run in the same OUT
LONGDIR=$(mktemp -d "${TMPDIR:-/tmp}/report-speed.XXXXXX")
extra_cleanup() { rm -rf "$LONGDIR"; }

# The formats `report` has: the possible values of --format in its help.
FORMATS=$("$JITTERLAB" report --help | awk '
    /^ *--format/ { on = 1; next }
    on && /^ *--/ { exit }
    on && match($0, /^ *- [a-z]+:/) { v = substr($0, RSTART, RLENGTH); gsub(/[ :-]/, "", v); print v }')
[[ -n $FORMATS ]] || die "could not read the formats from: $JITTERLAB report --help"
note "formats:" $FORMATS

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
import sqlite3, sys, uuid
db, runs = sys.argv[1], int(sys.argv[2])
c = sqlite3.connect(db)
cols = lambda t: [r[1] for r in c.execute(f"PRAGMA table_info({t})")]
# Every table of a cell's rows (windows, window_metrics, metrics, outliers,
# counters, 1 us histograms, whatever this schema has).
per_cell = [t for (t,) in c.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            if t != "cells" and "cell_id" in cols(t)]
run_cols = [x for x in cols("runs") if x not in ("id", "uid")]
host_cols = [x for x in cols("hosts") if x != "run_id"]
cell_cols = [x for x in cols("cells") if x not in ("id", "run_id")]
uid = ", uid" if "uid" in cols("runs") else ""
for _ in range(runs - 1):
    # A copy is another run: a uid of its own where runs have one.
    cur = c.execute(f"INSERT INTO runs ({','.join(run_cols)}{uid}) SELECT {','.join(run_cols)}"
                    f"{', ?' if uid else ''} FROM runs WHERE id = 1", (str(uuid.uuid4()),) if uid else ())
    run = cur.lastrowid
    c.execute(f"INSERT INTO hosts (run_id, {','.join(host_cols)}) SELECT ?, {','.join(host_cols)} FROM hosts WHERE run_id = 1", (run,))
    for (cell,) in c.execute("SELECT id FROM cells WHERE run_id = 1 ORDER BY id").fetchall():
        cur = c.execute(f"INSERT INTO cells (run_id, {','.join(cell_cols)}) SELECT ?, {','.join(cell_cols)} FROM cells WHERE id = ?", (run, cell))
        new = cur.lastrowid
        for t in per_cell:
            tc = [x for x in cols(t) if x != "cell_id"]
            c.execute(f"INSERT INTO {t} (cell_id, {','.join(tc)}) SELECT ?, {','.join(tc)} FROM {t} WHERE cell_id = ?", (new, cell))
c.commit()
n_runs, = c.execute("SELECT COUNT(*) FROM runs").fetchone()
n_cells, = c.execute("SELECT COUNT(*) FROM cells").fetchone()
print(f"database: {n_runs} runs, {n_cells} cells", file=sys.stderr)
PY
ls -l "$DB" >&2

printf '%-56s %10s %10s %10s\n' command median_ms max_ms bytes
measure() { # LABEL COMMAND...: 5 runs; median and max wall time, output size
    local label=$1 v=() t0 t1
    shift
    for _ in 1 2 3 4 5; do
        t0=$(date +%s%N)
        "$@" >"$LONGDIR/out" || die "failed: $*"
        t1=$(date +%s%N)
        v+=($(((t1 - t0) / 1000000)))
    done
    python3 -c 'import sys, statistics as s; v=[int(x) for x in sys.argv[3:]]; print(f"{sys.argv[1]:<56} {s.median(v):10.0f} {max(v):10d} {int(sys.argv[2]):10d}")' \
        "$label" "$(stat -c %s "$LONGDIR/out")" "${v[@]}"
}
measure "runs ($RUNS runs x 20 cells)" "$JITTERLAB" --db "$DB" runs
for f in $FORMATS; do
    measure "report $RUNS --format $f" "$JITTERLAB" --db "$DB" report "$RUNS" --format "$f"
done
measure "report 1 $RUNS (compare)" "$JITTERLAB" --db "$DB" report 1 "$RUNS"

note "one cell: ${REAL}s of run cyclic"
LONGDB=$LONGDIR/long.db
run_child "$OUT/long.out" "$OUT/long.err" "$JITTERLAB" --db "$LONGDB" run cyclic --period 1ms \
    --duration "${REAL}s" || die "the run failed; see $OUT/long.err"
for f in $FORMATS; do
    measure "1 cell: report 1 --format $f" "$JITTERLAB" --db "$LONGDB" report 1 --format "$f"
done

note "extending it to $WINDOWS windows"
TOP=$(python3 - "$LONGDB" "$WINDOWS" "$$" <<'PY'
import json, random, sqlite3, sys, uuid
db, total, pid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
c = sqlite3.connect(db)
(run, params), = c.execute("SELECT id, params_json FROM runs").fetchall()
(cell,), = c.execute("SELECT id FROM cells WHERE run_id = ?", (run,)).fetchall()
p = json.loads(params)
width = p["window_ns"]
heads = c.execute("SELECT thread, cpu, window, cycles, overruns FROM windows WHERE cell_id = ?",
                  (cell,)).fetchall()
figures = {}
for t, w, *rest in c.execute("SELECT thread, window, metric, count, min, max, mean FROM window_metrics "
                             "WHERE cell_id = ?", (cell,)):
    figures.setdefault((t, w), []).append(rest)
real = sorted({h[2] for h in heads})
real_max = max(f[3] for v in figures.values() for f in v if f[0] == "latency" and f[3] is not None)
planted = {total // 4: 2 * real_max + 1, total // 2: 3 * real_max + 7, total - 1: 4 * real_max + 3}
top = max(planted.values())
rng = random.Random(15)
wrows, mrows = [], []
for w in range(max(real) + 1, total):
    src = rng.choice(real)
    for t, cpu, _, cycles, overruns in (h for h in heads if h[2] == src):
        wrows.append((cell, t, cpu, w, w * width, cycles, overruns))
        for metric, n, lo, hi, mean in figures[(t, src)]:
            if metric == "latency" and w in planted:
                hi = planted[w]
            mrows.append((cell, t, w, metric, n, lo, hi, mean))
c.executemany("INSERT INTO windows VALUES (?, ?, ?, ?, ?, ?, ?)", wrows)
c.executemany("INSERT INTO window_metrics VALUES (?, ?, ?, ?, ?, ?, ?, ?)", mrows)
# The stored result: the 48 hours' length and largest latency.
elapsed = total * width
p["duration_ns"] = elapsed
for table, key in (("runs", run), ("cells", cell)):
    (text,), = c.execute(f"SELECT result_json FROM {table} WHERE id = ?", (key,)).fetchall()
    r = json.loads(text)
    r["elapsed_ns"] = elapsed
    r["params"]["duration_ns"] = elapsed
    for t in r["threads"]:
        t["metrics"]["latency"]["max"] = top
    if r.get("combined"):
        r["combined"]["latency"]["max"] = top
    c.execute(f"UPDATE {table} SET result_json = ? WHERE id = ?", (json.dumps(r), key))
c.execute("UPDATE runs SET params_json = ?, elapsed_ns = ? WHERE id = ?", (json.dumps(p), elapsed, run))
c.execute("UPDATE metrics SET max_ns = ? WHERE cell_id = ? AND metric = 'latency'", (top, cell))
# Run 2: the same run in its last window, measuring still (process: pid).
cols = lambda t: [r[1] for r in c.execute(f"PRAGMA table_info({t})")]
rc = [x for x in cols("runs") if x not in ("id", "uid")]
uid = ", uid" if "uid" in cols("runs") else ""
run2 = c.execute(f"INSERT INTO runs ({','.join(rc)}{uid}) SELECT {','.join(rc)}{', ?' if uid else ''} "
                 "FROM runs WHERE id = ?", ((str(uuid.uuid4()),) if uid else ()) + (run,)).lastrowid
c.execute("UPDATE runs SET status = 'running', finished_at = NULL, result_json = NULL, elapsed_ns = NULL, "
          "pid = ? WHERE id = ?", (pid, run2))
hc = [x for x in cols("hosts") if x != "run_id"]
c.execute(f"INSERT INTO hosts (run_id, {','.join(hc)}) SELECT ?, {','.join(hc)} FROM hosts WHERE run_id = ?",
          (run2, run))
cc = [x for x in cols("cells") if x not in ("id", "run_id")]
cell2 = c.execute(f"INSERT INTO cells (run_id, {','.join(cc)}) SELECT ?, {','.join(cc)} FROM cells WHERE id = ?",
                  (run2, cell)).lastrowid
c.execute("UPDATE cells SET status = 'running', finished_at = NULL, result_json = NULL WHERE id = ?", (cell2,))
# Its windows, and what else the running cell has stored (not its result's
# statistics: those come at the end).
for t in ("windows", "window_metrics"):
    tc = [x for x in cols(t) if x != "cell_id"]
    c.execute(f"INSERT INTO {t} (cell_id, {','.join(tc)}) SELECT ?, {','.join(tc)} FROM {t} WHERE cell_id = ?",
              (cell2, cell))
c.commit()
n, = c.execute("SELECT COUNT(*) FROM windows WHERE cell_id = ?", (cell,)).fetchone()
print(f"run {run}: {n} windows ({elapsed / 3.6e12:.1f} h), largest latency {top} ns; "
      f"run {run2}: the same, still running", file=sys.stderr)
print(top)
PY
) || die "extending the run failed"
ls -l "$LONGDB" >&2
# The planted maximum as the text report prints it: exact microseconds.
TOP_US=$(python3 -c 'import sys; n = int(sys.argv[1]); print(f"{n // 1000}.{n % 1000:03d}")' "$TOP")
for r in 1 2; do
    "$JITTERLAB" --db "$LONGDB" report "$r" >"$LONGDIR/check" || die "report $r of the long run failed"
    grep -q -- " $TOP_US" "$LONGDIR/check" \
        || die "report $r of the long run does not show its largest latency ${TOP_US}us; see $LONGDIR/check"
done
note "both reports of the long run show its largest latency, ${TOP_US}us"
measure "$WINDOWS windows: runs" "$JITTERLAB" --db "$LONGDB" runs
for f in $FORMATS; do
    measure "$WINDOWS windows: report 1 --format $f (finished)" "$JITTERLAB" --db "$LONGDB" report 1 --format "$f"
done
for f in $FORMATS; do
    measure "$WINDOWS windows: report 2 --format $f (running)" "$JITTERLAB" --db "$LONGDB" report 2 --format "$f"
done

note "following run 2 while $FOLLOW windows are added to it, one a second"
(
    TIMEFORMAT='%R %U %S'
    time "$JITTERLAB" --db "$LONGDB" report 2 --follow >"$LONGDIR/follow.out" 2>"$LONGDIR/follow.err"
) 2>"$LONGDIR/follow.time" &
FOLLOWER=$!
python3 - "$LONGDB" "$FOLLOW" <<'PY' || die "adding windows to the running run failed"
import sqlite3, sys, time
db, n = sys.argv[1], int(sys.argv[2])
c = sqlite3.connect(db)
(run, cell), = c.execute("SELECT r.id, c.id FROM runs r JOIN cells c ON c.run_id = r.id "
                         "WHERE r.status = 'running'").fetchall()
(last,), = c.execute("SELECT MAX(window) FROM windows WHERE cell_id = ?", (cell,)).fetchall()
for k in range(1, n + 1):
    time.sleep(1)
    w = last + k
    # As the writer commits a window: its row and its metrics, one commit.
    c.execute("INSERT INTO windows SELECT cell_id, thread, cpu, ?, start_ns + ? * 1000000000, cycles, overruns "
              "FROM windows WHERE cell_id = ? AND window = 0", (w, w, cell))
    c.execute("INSERT INTO window_metrics SELECT cell_id, thread, ?, metric, count, min, max, mean "
              "FROM window_metrics WHERE cell_id = ? AND window = 0", (w, cell))
    c.commit()
time.sleep(1)
# The run ends: its process is gone, as after a kill.
c.execute("UPDATE runs SET status = 'interrupted' WHERE id = ?", (run,))
c.execute("UPDATE cells SET status = 'interrupted' WHERE id = ?", (cell,))
c.commit()
PY
wait "$FOLLOWER" || die "report --follow failed: $(cat "$LONGDIR/follow.err")"
read -r wall user sys <"$LONGDIR/follow.time"
renders=$(grep -c '^--- .* ---$' "$LONGDIR/follow.out")
python3 - "$wall" "$user" "$sys" "$renders" "$FOLLOW" <<'PY'
import sys
wall, user, sys_ = map(float, sys.argv[1:4])
renders, added = int(sys.argv[4]), int(sys.argv[5])
cpu = user + sys_
print(f"report 2 --follow while {added} windows were added: {renders} renders in {wall:.1f} s, "
      f"{cpu * 1000:.0f} ms of CPU in all ({cpu * 1000 / renders:.0f} ms per render)")
PY

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
