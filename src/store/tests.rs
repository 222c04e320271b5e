//! Round trips through a real SQLite file in a temporary directory.

use std::collections::BTreeMap;
use std::path::Path;

use jitterlab_core::probe::MAX_METRICS;
use jitterlab_core::result::{
    EndReason, HostSnapshot, Params, ProbeKind, RealtimeReport, RunResult, ThreadResult,
    UsageDelta, SCHEMA_VERSION as RESULT_SCHEMA,
};
use jitterlab_core::stats::MetricStats;
use jitterlab_core::window::{WindowRow, WindowStat};

use super::*;

pub(super) fn start<'a>(cmd: &'a [String]) -> RunStart<'a> {
    RunStart {
        started_at: "2026-11-21T12:00:00Z",
        probe: "cyclic",
        command_line: cmd,
        params_json: "{}".into(),
        host_json: "{}".into(),
        hostname: "plc-7",
        kernel_release: "6.18.0-rt",
        machine_id: None,
        realtime: Some(true),
        kind: RunKind::Run,
        name: "cyclic",
        spec_json: None,
    }
}

/// A window of `kind` whose first three metrics had 1000 samples of
/// maximum `max`, the others none.
fn row_of(kind: ProbeKind, window: u64, max: i64) -> WindowRow {
    let s = WindowStat {
        count: 1000,
        min: 3_000,
        max,
        mean: 5_000,
        ..WindowStat::default()
    };
    let mut stats = [WindowStat::default(); MAX_METRICS];
    stats[..3].fill(s);
    WindowRow {
        thread: 0,
        cpu: 1,
        window,
        start_ns: window * 1_000_000_000,
        cycles: 1000,
        overruns: 0,
        metrics: kind.metrics(),
        stats,
    }
}

/// A cyclic probe's window ([`row_of`]).
pub(super) fn row(window: u64, lat_max: i64) -> WindowRow {
    row_of(ProbeKind::Cyclic, window, lat_max)
}

pub(super) fn result() -> (RunResult, MetricStats) {
    let mut lat = MetricStats::new(false, Some(100_000));
    for v in [3_000, 5_000, 250_000] {
        lat.record(v);
    }
    let mut metrics = BTreeMap::new();
    metrics.insert("latency".to_string(), lat.summary());
    let t = ThreadResult {
        thread: 0,
        cpu: 1,
        tid: 4242,
        cycles: 3,
        releases: 3,
        skipped: 0,
        overruns: 0,
        metrics,
        outliers: BTreeMap::new(),
        calibration: None,
        usage: UsageDelta::default(),
        window_rows: 2,
        dropped_rows: 0,
        counters: BTreeMap::new(),
    };
    let r = RunResult {
        schema_version: RESULT_SCHEMA,
        tool: "jitterlab".into(),
        tool_version: "0.1.0".into(),
        probe: ProbeKind::Cyclic,
        started_at: "2026-11-21T12:00:00Z".into(),
        elapsed_ns: 3_000_000,
        end: EndReason::Completed,
        interrupted: false,
        signal: None,
        command_line: vec!["jitterlab".into()],
        params: Params {
            duration_ns: Some(3_000_000),
            cpus: vec![1],
            ..Params::default()
        },
        realtime: RealtimeReport {
            realtime: true,
            defaults: vec![],
        },
        host: HostSnapshot::default(),
        threads: vec![t],
        combined: None,
        limits: vec![],
        break_event: None,
        warnings: vec![],
        detail: None,
    };
    (r, lat)
}

#[test]
fn new_database_is_migrated_to_the_current_schema() {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(&dir.path().join("j.db")).unwrap();
    assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION);
    assert!(s.list_runs().unwrap().is_empty());
    assert_eq!(s.latest_run().unwrap(), None);
    // Opening again applies nothing twice.
    drop(s);
    let s = Store::open(&dir.path().join("j.db")).unwrap();
    assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION);
}

/// Processes that open one new database at the same moment (a run and
/// `jitterlab runs` beside it) each see it migrated, none applies a step
/// twice ("duplicate column name").
#[test]
fn a_new_database_opened_by_many_at_once_is_migrated_once() {
    for _ in 0..20 {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("j.db");
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(4));
        let opened: Vec<Result<i64, String>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    let (p, barrier) = (&p, barrier.clone());
                    s.spawn(move || {
                        barrier.wait();
                        Store::open(p)
                            .and_then(|s| s.schema_version())
                            .map_err(|e| format!("{e:#}"))
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(opened, vec![Ok(SCHEMA_VERSION); 4]);
    }
}

#[test]
fn a_file_that_is_not_a_database_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("notes.txt");
    std::fs::write(
        &p,
        "this is not SQLite, just text that is long enough to have a header",
    )
    .unwrap();
    let e = Store::open(&p).err().unwrap();
    assert_eq!(
        e.to_string(),
        format!(
            "{} is not a usable jitterlab database; give another path with --db",
            p.display()
        )
    );
}

#[test]
fn a_newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("j.db");
    let c = Connection::open(&p).unwrap();
    c.pragma_update(None, "user_version", 99).unwrap();
    drop(c);
    let e = Store::open(&p).err().unwrap();
    assert_eq!(
        e.to_string(),
        format!(
            "{} has schema version 99, newer than this jitterlab's {SCHEMA_VERSION}; use a newer jitterlab or another --db",
            p.display()
        )
    );
}

#[test]
fn windows_are_stored_and_listed_while_running() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(&dir.path().join("j.db")).unwrap();
    let cmd = vec!["jitterlab".to_string(), "run".to_string()];
    let ids = s.begin_run(&start(&cmd)).unwrap();
    s.insert_windows(ids.cell, &[row(0, 40_000), row(1, 90_000)])
        .unwrap();
    s.insert_windows(ids.cell, &[row(2, 60_000)]).unwrap();
    let runs = s.list_runs().unwrap();
    assert_eq!(runs.len(), 1);
    let r = &runs[0];
    assert_eq!(r.id, ids.run);
    assert_eq!(r.status, "running");
    assert_eq!(r.hostname, "plc-7");
    assert_eq!(r.realtime, Some(true));
    assert_eq!(
        (r.cycles, r.windows, r.latency_max_ns),
        (3000, 3, Some(90_000))
    );
    // The row's exec stats had no samples: stored as count 0 and NULLs.
    let (count, min): (i64, Option<i64>) = s
        .conn
        .query_row(
            "SELECT count, min FROM window_metrics WHERE window = 2 AND metric = 'exec'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((count, min), (0, None));
    // Still running in this process: an open does not touch it.
    drop(s);
    let s = Store::open(&dir.path().join("j.db")).unwrap();
    assert_eq!(s.list_runs().unwrap()[0].status, "running");
    assert_eq!(s.load_result(ids.run).unwrap(), None);
}

#[test]
fn a_run_records_the_version_and_commit_that_wrote_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(&dir.path().join("j.db")).unwrap();
    let cmd = vec!["jitterlab".to_string()];
    let ids = s.begin_run(&start(&cmd)).unwrap();
    let stored: String = s
        .conn
        .query_row(
            "SELECT tool_version FROM runs WHERE id = ?1",
            [ids.run],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(stored, crate::version::TOOL_VERSION);
    assert!(
        stored.starts_with(concat!(env!("CARGO_PKG_VERSION"), " (commit ")),
        "{stored}"
    );
}

#[test]
fn a_chase_has_no_max_latency_in_the_listing() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(&dir.path().join("j.db")).unwrap();
    let cmd = vec!["jitterlab".to_string(), "run".to_string()];
    let ids = s
        .begin_run(&RunStart {
            probe: "chase",
            name: "chase",
            ..start(&cmd)
        })
        .unwrap();
    // The chase's windows hold cycles per chase in their first slot.
    s.insert_windows(ids.cell, &[row_of(ProbeKind::Chase, 0, 593_919)])
        .unwrap();
    let r = &s.list_runs().unwrap()[0];
    assert_eq!((r.cycles, r.windows, r.latency_max_ns), (1000, 1, None));
}

#[test]
fn a_run_whose_process_is_gone_is_marked_interrupted_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("j.db");
    let mut s = Store::open(&p).unwrap();
    let cmd = vec!["jitterlab".to_string()];
    let ids = s.begin_run(&start(&cmd)).unwrap();
    s.insert_windows(ids.cell, &[row(0, 1), row(1, 2)]).unwrap();
    // Pretend another (dead) process wrote it: pid 0 never has a /proc entry.
    s.conn
        .execute("UPDATE runs SET pid = 0 WHERE id = ?1", [ids.run])
        .unwrap();
    drop(s);
    let s = Store::open(&p).unwrap();
    let r = &s.list_runs().unwrap()[0];
    assert_eq!(r.status, "interrupted");
    assert_eq!(r.windows, 2, "every committed window survives");
}

#[test]
fn a_finished_run_round_trips_with_its_histograms() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(&dir.path().join("j.db")).unwrap();
    let cmd = vec!["jitterlab".to_string()];
    let ids = s.begin_run(&start(&cmd)).unwrap();
    let (r, lat) = result();
    let h = lat.histograms();
    let stored = StoredHistogram {
        thread: Some(0),
        metric: "latency",
        positive: h.positive.clone(),
        negative: None,
        fine: None,
    };
    s.finish_run(ids, &r, &[stored]).unwrap();
    assert_eq!(s.load_result(ids.run).unwrap(), Some(r.clone()));
    assert_eq!(s.list_runs().unwrap()[0].status, "completed");
    assert_eq!(s.latest_run().unwrap(), Some(ids.run));
    // The stored histogram deserialises to the same counts.
    let blob: Vec<u8> = s
        .conn
        .query_row(
            "SELECT hist_positive FROM metrics WHERE metric = 'latency' AND thread = 0",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let back: Histogram<u64> = hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut std::io::Cursor::new(blob))
        .unwrap();
    assert_eq!(back.len(), 3);
    assert_eq!(back.count_at(3_000), 1);
    let p99: i64 = s
        .conn
        .query_row(
            "SELECT p99_ns FROM metrics WHERE metric = 'latency'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(p99, 250_000);
    assert_eq!(
        s.load_result(999).err().unwrap().to_string(),
        "there is no run 999 in the database; list the runs with: jitterlab runs"
    );
}

pub(super) fn key(c: &str, sc: &str, rep: u32) -> CellKey {
    CellKey {
        configuration: c.into(),
        scenario: sc.into(),
        deployment: "host".into(),
        probe: "cyclic".into(),
        repetition: rep,
    }
}

/// A bench whose every cell was skipped is listed as skipped, not as
/// completed: the listing counts its skipped cells.
#[test]
fn a_bench_whose_every_cell_was_skipped_is_listed_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(&dir.path().join("j.db")).unwrap();
    let cmd = vec!["jitterlab".to_string(), "bench".to_string()];
    let mut st = start(&cmd);
    st.kind = RunKind::Bench;
    st.name = "usb";
    st.realtime = None;
    let (run, cells) = s.begin_bench(&st, &[key("tuned", "usb", 0)]).unwrap();
    s.finish_cell(
        cells[0],
        CellStatus::Skipped,
        None,
        &CellContext::default(),
        &[],
    )
    .unwrap();
    s.finish_run_row(run, RunStatus::Completed, None, 0, None)
        .unwrap();
    let listed = &s.list_runs().unwrap()[0];
    assert_eq!(
        (listed.cells, listed.cells_done, listed.cells_skipped),
        (1, 1, 1)
    );
    let table = crate::report::stored::runs_table(&s.list_runs().unwrap());
    let words: Vec<&str> = table.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(words[3..7], ["bench", "usb", "skipped", "1/1"], "{table}");
}

#[test]
fn a_bench_round_trips_with_its_cells_in_plan_order() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(&dir.path().join("j.db")).unwrap();
    let cmd = vec!["jitterlab".to_string(), "bench".to_string()];
    let spec = BenchSpecJson {
        configurations: vec!["tuned".into(), "baseline".into()],
        scenarios: vec!["idle".into()],
        unavailable: vec![("cat".into(), "needs resctrl".into())],
        spec: serde_json::json!({"name": "t"}),
        source: None,
    };
    let mut st = start(&cmd);
    st.kind = RunKind::Bench;
    st.name = "t";
    st.realtime = None;
    st.spec_json = Some(serde_json::to_string(&spec).unwrap());
    let keys = [key("tuned", "idle", 0), key("baseline", "idle", 0)];
    let (run, cells) = s.begin_bench(&st, &keys).unwrap();
    assert_eq!(cells.len(), 2);
    s.start_cell(cells[0]).unwrap();
    s.insert_windows(cells[0], &[row(0, 40_000)]).unwrap();
    let (r, _) = result();
    let ctx = CellContext {
        notes: vec!["a note".into()],
        ..CellContext::default()
    };
    s.finish_cell(cells[0], CellStatus::Completed, Some(&r), &ctx, &[])
        .unwrap();
    s.start_cell(cells[1]).unwrap();
    let listed = &s.list_runs().unwrap()[0];
    assert_eq!(
        (
            listed.kind.as_str(),
            listed.name.as_str(),
            listed.cells,
            listed.cells_done
        ),
        ("bench", "t", 2, 1)
    );
    let back = s.load_run(run).unwrap();
    assert_eq!(back.kind, "bench");
    assert_eq!(back.configurations, vec!["tuned", "baseline"]);
    assert_eq!(
        back.unavailable,
        vec![("cat".to_string(), "needs resctrl".to_string())]
    );
    assert_eq!(back.cells.len(), 2);
    assert_eq!(back.cells[0].key, keys[0]);
    assert_eq!(back.cells[0].status, CellStatus::Completed);
    assert_eq!(back.cells[0].result.as_ref(), Some(&r));
    assert_eq!(back.cells[0].context, ctx);
    assert_eq!(back.cells[1].status, CellStatus::Running);
    assert_eq!(back.cells[1].result, None);
    // The process "dies": the running cell and the run become interrupted.
    s.conn
        .execute("UPDATE runs SET pid = 0 WHERE id = ?1", [run])
        .unwrap();
    drop(s);
    let s = Store::open(&dir.path().join("j.db")).unwrap();
    let back = s.load_run(run).unwrap();
    assert_eq!(back.status, "interrupted");
    assert_eq!(back.cells[1].status, CellStatus::Interrupted);
    assert_eq!(back.cells[0].status, CellStatus::Completed);
}

#[test]
fn a_schema_1_database_is_migrated_and_its_runs_still_read() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("j.db");
    let (r, _) = result();
    {
        let c = Connection::open(&p).unwrap();
        schema::create_at(&c, 1);
        c.execute(
            "INSERT INTO runs (started_at, probe, status, command_line, tool_version, result_schema,
                               params_json, pid, boot_id, realtime, result_json)
             VALUES ('2026-11-20T10:00:00Z', 'cyclic', 'completed', '[]', '0.1.0', 1, '{}', 0, '', 1, ?1)",
            [serde_json::to_string(&r).unwrap()],
        )
        .unwrap();
        c.execute(
            "INSERT INTO cells (run_id, name, configuration, scenario, deployment, probe)
             VALUES (1, 'cyclic', 'default', 'none', 'host', 'cyclic')",
            [],
        )
        .unwrap();
    }
    let s = Store::open(&p).unwrap();
    assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION);
    let back = s.load_run(1).unwrap();
    assert_eq!((back.kind.as_str(), back.name.as_str()), ("run", "cyclic"));
    assert_eq!(back.cells[0].status, CellStatus::Completed);
    assert_eq!(back.cells[0].result.as_ref(), Some(&r));
}

#[test]
fn a_killed_cell_reads_back_with_partial_figures_from_its_windows() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(&dir.path().join("j.db")).unwrap();
    let cmd = vec!["jitterlab".to_string(), "bench".to_string()];
    let mut st = start(&cmd);
    st.kind = RunKind::Bench;
    let keys = [key("tuned", "idle", 0), key("tuned", "cpu", 0)];
    let (run, cells) = s.begin_bench(&st, &keys).unwrap();
    let (r, _) = result();
    let mut params = r.params.clone();
    params.window_ns = 1_000_000_000;
    s.start_cell(cells[0]).unwrap();
    s.record_cell_plan(cells[0], ProbeKind::Cyclic, &params)
        .unwrap();
    let mut late = row(1, 90_000);
    late.stats[0] = WindowStat {
        count: 3000,
        min: 2_000,
        max: 90_000,
        mean: 9_000,
        ..WindowStat::default()
    };
    s.insert_windows(cells[0], &[row(0, 40_000), late]).unwrap();
    // The process dies here: no result; the next open marks it interrupted.
    s.conn
        .execute("UPDATE runs SET pid = 0, boot_id = 'gone'", [])
        .unwrap();
    drop(s);
    let s = Store::open(&dir.path().join("j.db")).unwrap();
    let back = s.load_run(run).unwrap();
    let cell = &back.cells[0];
    assert_eq!(cell.status, CellStatus::Interrupted);
    let partial = cell.result.as_ref().expect("figures from the windows");
    assert_eq!(partial.probe, ProbeKind::Cyclic);
    assert!(partial.interrupted);
    assert_eq!(partial.params, params);
    assert_eq!(partial.elapsed_ns, 2_000_000_000);
    assert_eq!(
        partial.warnings,
        ["partial: the process ended before this cell's result was stored; figures from its 2 committed window rows (count, min, max, mean; no percentiles)"]
    );
    let m = partial.combined.as_ref().unwrap();
    // latency: 1000 samples at mean 5 µs and 3000 at mean 9 µs.
    let lat = &m["latency"];
    assert_eq!(
        (lat.count, lat.min, lat.max, lat.mean, lat.p50),
        (4000, Some(2_000), Some(90_000), Some(8_000), None)
    );
    let period = &m["period"];
    assert_eq!(
        (period.count, period.min, period.max, period.mean),
        (2000, Some(3_000), Some(90_000), Some(5_000))
    );
    assert!(!m.contains_key("exec"), "no exec sample was stored");
    // A cell that never measured has nothing to show.
    assert_eq!(back.cells[1].status, CellStatus::Pending);
    assert!(back.cells[1].result.is_none());
}

/// A copy of the fixture database `name` (opening one migrates it).
fn fixture(name: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join(name);
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/databases")
        .join(name);
    std::fs::copy(src, &copy).unwrap();
    (dir, copy)
}

/// One stored window metric: (thread, window, metric, count, min, max, mean).
type Named = (u32, i64, String, i64, Option<i64>, Option<i64>, Option<i64>);

fn named_rows(s: &Store, cell: i64) -> Vec<Named> {
    let mut stmt = s
        .conn
        .prepare(
            "SELECT thread, window, metric, count, min, max, mean FROM window_metrics
             WHERE cell_id = ?1 ORDER BY thread, window, metric",
        )
        .unwrap();
    stmt.query_map([cell], |r| {
        Ok((
            r.get(0)?,
            r.get(1)?,
            r.get(2)?,
            r.get(3)?,
            r.get(4)?,
            r.get(5)?,
            r.get(6)?,
        ))
    })
    .unwrap()
    .collect::<rusqlite::Result<_>>()
    .unwrap()
}

fn named(window: i64, metric: &str, count: i64, min: i64, max: i64, mean: i64) -> Named {
    (
        0,
        window,
        metric.into(),
        count,
        Some(min),
        Some(max),
        Some(mean),
    )
}

/// The listing as schema 3 computed it, from its window columns.
fn schema_3_listing(path: &Path) -> Vec<(i64, i64, i64, Option<i64>)> {
    let c = Connection::open(path).unwrap();
    let mut stmt = c
        .prepare(
            "SELECT r.id, COALESCE(SUM(w.cycles), 0), COUNT(w.window),
                    MAX(CASE WHEN COALESCE(json_extract(c.result_json, '$.probe'), c.probe) = 'chase'
                             THEN NULL ELSE w.latency_max_ns END)
             FROM runs r
             LEFT JOIN cells c ON c.run_id = r.id
             LEFT JOIN windows w ON w.cell_id = c.id
             GROUP BY r.id ORDER BY r.id",
        )
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

#[test]
fn schema_3_fixtures_migrate_with_every_window_figure_under_its_metric_name() {
    let (_d, p) = fixture("bench-epics.db");
    let s = Store::open(&p).unwrap();
    assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION);
    // ctxswitch: slot 0 was the hand-over; its three empty slots are gone.
    assert_eq!(
        named_rows(&s, 2),
        [named(0, "handover", 2000, 2313, 7071, 2770)]
    );
    // response: wakeup, response and rx-to-thread, in slots 0, 1, 2.
    assert_eq!(
        named_rows(&s, 3),
        [
            named(0, "response", 999, 11943, 303010, 18694),
            named(0, "rx-to-thread", 999, 5063, 293746, 10201),
            named(0, "wakeup", 999, 7416, 296580, 13186),
        ]
    );
    let head: (i64, i64, i64, i64, i64) = s
        .conn
        .query_row(
            "SELECT cpu, window, start_ns, cycles, overruns FROM windows WHERE cell_id = 3",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
        )
        .unwrap();
    assert_eq!(head, (1, 0, 0, 999, 0));
    drop(s);

    let (_d, p) = fixture("run-chase.db");
    let s = Store::open(&p).unwrap();
    assert_eq!(
        named_rows(&s, 1),
        [
            named(0, "chase", 2000, 10036, 62920, 10227),
            named(0, "sample-jitter", 20, 78, 52832, 7452),
        ]
    );
    drop(s);

    // The killed cell had no result: its stored plan names the kind.
    let (_d, p) = fixture("bench-killed.db");
    let s = Store::open(&p).unwrap();
    let rows = named_rows(&s, 1);
    assert_eq!(rows.len(), 3 * 4);
    assert_eq!(
        rows[..4],
        [
            named(0, "exec", 1000, 48102, 74792, 49772),
            named(0, "jitter", 999, -11116, 11669, -2),
            named(0, "latency", 1000, 13298, 26706, 15656),
            named(0, "period", 999, 988884, 1011669, 999998),
        ]
    );
    // The run's old columns are gone.
    let columns: i64 = s
        .conn
        .query_row(
            "SELECT COUNT(*) FROM pragma_table_info('windows')",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(columns, 7);
}

#[test]
fn every_fixture_keeps_its_windows_and_its_listing_through_the_migration() {
    for name in [
        "bench-caterpillar.db",
        "bench-epics.db",
        "bench-killed.db",
        "bench-powerlink.db",
        "run-chase.db",
        "run-cyclic.db",
        "run-wakeup.db",
    ] {
        let (_d, p) = fixture(name);
        let before = schema_3_listing(&p);
        // Window rows per cell and the number of metrics of its kind.
        let expected: i64 = {
            let c = Connection::open(&p).unwrap();
            let mut stmt = c
                .prepare(
                    "SELECT COALESCE(json_extract(c.result_json, '$.probe'),
                                     json_extract(c.plan_json, '$.probe'), c.probe),
                            (SELECT COUNT(*) FROM windows w WHERE w.cell_id = c.id)
                     FROM cells c",
                )
                .unwrap();
            let per_cell: Vec<(String, i64)> = stmt
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .unwrap()
                .collect::<rusqlite::Result<_>>()
                .unwrap();
            per_cell
                .iter()
                .map(|(k, n)| n * ProbeKind::parse(k).unwrap().metrics().len() as i64)
                .sum()
        };
        let s = Store::open(&p).unwrap();
        let stored: i64 = s
            .conn
            .query_row("SELECT COUNT(*) FROM window_metrics", [], |r| r.get(0))
            .unwrap();
        assert_eq!(stored, expected, "{name}");
        let after: Vec<(i64, i64, i64, Option<i64>)> = s
            .list_runs()
            .unwrap()
            .iter()
            .map(|r| (r.id, r.cycles, r.windows, r.latency_max_ns))
            .collect();
        assert_eq!(after, before, "{name}");
    }
}

#[test]
fn the_migration_names_a_cell_s_columns_by_what_it_can_tell_of_its_kind() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("j.db");
    {
        let c = Connection::open(&p).unwrap();
        schema::create_at(&c, 3);
        c.execute_batch(
            "INSERT INTO runs (id, started_at, probe, status, command_line, tool_version,
                               result_schema, params_json, pid, boot_id, kind, name)
             VALUES (1, 't', 'bench', 'interrupted', '[]', '0.1.0', 1, '{}', 0, '', 'bench', 'b');
             INSERT INTO cells (id, run_id, name, configuration, scenario, deployment, probe,
                                status, plan_json)
             VALUES (1, 1, 'c/s/host/cat', 'c', 's', 'host', 'cat', 'interrupted',
                     '{\"probe\":\"chase\"}'),
                    (2, 1, 'c/s/host/odd', 'c', 's', 'host', 'odd', 'interrupted', NULL);
             INSERT INTO windows VALUES
                 (1, 0, 1, 0, 0, 10, 0, 10, 100, 900, 300, 1, 50, 50, 50, 0, NULL, NULL, NULL,
                  0, NULL, NULL, NULL),
                 (2, 0, 1, 0, 0, 10, 1, 10, 7000, 8000, 7500, 9, 1, 2, 1, 9, -3, 3, 0,
                  10, 5, 6, 5);",
        )
        .unwrap();
    }
    let s = Store::open(&p).unwrap();
    // The plan says chase: two metrics, the two empty slots dropped.
    assert_eq!(
        named_rows(&s, 1),
        [
            named(0, "chase", 10, 100, 900, 300),
            named(0, "sample-jitter", 1, 50, 50, 50),
        ]
    );
    // Nothing tells the kind: the columns keep their own names.
    assert_eq!(
        named_rows(&s, 2),
        [
            named(0, "exec", 10, 5, 6, 5),
            named(0, "jitter", 9, -3, 3, 0),
            named(0, "latency", 10, 7000, 8000, 7500),
            named(0, "period", 9, 1, 2, 1),
        ]
    );
    // The listing's max latency skips the chase's cycles.
    let r = &s.list_runs().unwrap()[0];
    assert_eq!((r.cycles, r.windows, r.latency_max_ns), (20, 2, Some(8000)));
}

#[test]
fn window_rows_are_stored_by_metric_name_and_counters_by_thread() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(&dir.path().join("j.db")).unwrap();
    let cmd = vec!["jitterlab".to_string()];
    let ids = s
        .begin_run(&RunStart {
            probe: "response",
            name: "response",
            ..start(&cmd)
        })
        .unwrap();
    s.insert_windows(ids.cell, &[row_of(ProbeKind::Response, 4, 77_000)])
        .unwrap();
    assert_eq!(
        named_rows(&s, ids.cell),
        [
            named(4, "response", 1000, 3_000, 77_000, 5_000),
            named(4, "rx-to-thread", 1000, 3_000, 77_000, 5_000),
            named(4, "wakeup", 1000, 3_000, 77_000, 5_000),
        ]
    );
    let (mut r, _) = result();
    r.threads[0].counters.insert("node-3 frames lost".into(), 2);
    r.threads[0].counters.insert("node-3 frames".into(), 9_000);
    s.finish_run(ids, &r, &[]).unwrap();
    let mut stmt = s
        .conn
        .prepare("SELECT thread, name, value FROM counters WHERE cell_id = ?1 ORDER BY name")
        .unwrap();
    let counters: Vec<(u32, String, i64)> = stmt
        .query_map([ids.cell], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert_eq!(
        counters,
        [
            (0, "node-3 frames".to_string(), 9_000),
            (0, "node-3 frames lost".to_string(), 2)
        ]
    );
    assert_eq!(s.load_result(ids.run).unwrap(), Some(r));
}

#[test]
fn the_schema_stays_on_the_first_page_of_the_file() {
    // A new file has its schema page and one root page per table and
    // index: a schema grown past page 1 would need more.
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(&dir.path().join("j.db")).unwrap();
    let (pages, roots): (i64, i64) = s
        .conn
        .query_row(
            "SELECT (SELECT page_count FROM pragma_page_count()),
                    (SELECT COUNT(*) FROM sqlite_master WHERE rootpage > 0)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(pages, 1 + roots);
}
