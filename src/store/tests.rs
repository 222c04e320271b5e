//! Round trips through a real SQLite file in a temporary directory.

use std::collections::BTreeMap;

use jitterlab_core::result::{
    EndReason, HostSnapshot, Params, ProbeKind, RealtimeReport, RunResult, ThreadResult,
    UsageDelta, SCHEMA_VERSION as RESULT_SCHEMA,
};
use jitterlab_core::stats::MetricStats;
use jitterlab_core::window::{WindowRow, WindowStat};

use super::*;

fn start<'a>(cmd: &'a [String]) -> RunStart<'a> {
    RunStart {
        started_at: "2026-11-21T12:00:00Z",
        probe: "cyclic",
        command_line: cmd,
        params_json: "{}".into(),
        host_json: "{}".into(),
        hostname: "plc-7",
        kernel_release: "6.18.0-rt",
        realtime: Some(true),
        kind: "run",
        name: "cyclic",
        spec_json: None,
    }
}

fn row(window: u64, lat_max: i64) -> WindowRow {
    let s = WindowStat {
        count: 1000,
        min: 3_000,
        max: lat_max,
        mean: 5_000,
    };
    WindowRow {
        thread: 0,
        cpu: 1,
        window,
        start_ns: window * 1_000_000_000,
        cycles: 1000,
        overruns: 0,
        stats: [s, s, s, WindowStat::default()],
    }
}

fn result() -> (RunResult, MetricStats) {
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
        command_line: vec!["jitterlab".into()],
        params: Params {
            period_ns: 1_000_000,
            duration_ns: Some(3_000_000),
            cycles: None,
            cpus: vec![1],
            policy: "fifo".into(),
            priority: Some(95),
            nice: None,
            scan_ns: 0,
            working_set_bytes: 0,
            window_ns: 1_000_000_000,
            threshold_ns: 100_000,
            break_trace_ns: None,
            strict: false,
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
            "{} has schema version 99, newer than this jitterlab's 3; use a newer jitterlab or another --db",
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
            "SELECT exec_count, exec_min_ns FROM windows WHERE window = 2",
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
    s.insert_windows(ids.cell, &[row(0, 593_919)]).unwrap();
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

fn key(c: &str, sc: &str, rep: u32) -> CellKey {
    CellKey {
        configuration: c.into(),
        scenario: sc.into(),
        deployment: "host".into(),
        probe: "cyclic".into(),
        repetition: rep,
    }
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
    };
    let mut st = start(&cmd);
    st.kind = "bench";
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
        c.execute_batch(MIGRATIONS[0]).unwrap();
        c.pragma_update(None, "user_version", 1).unwrap();
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
    st.kind = "bench";
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
