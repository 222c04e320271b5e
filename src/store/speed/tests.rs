//! The incremental totals against a whole-cell sum, the progress a watcher
//! polls, and the live figures of a run and of a bench cell.

use jitterlab_core::cell::CellKey;
use jitterlab_core::probe::MAX_METRICS;
use jitterlab_core::result::{Params, ProbeKind};
use jitterlab_core::window::{WindowRow, WindowStat};

use super::super::{RunIds, RunStart};
use std::path::Path;

use super::*;

fn params() -> Params {
    Params {
        duration_ns: Some(172_800_000_000_000),
        cpus: vec![1],
        ..Params::default()
    }
}

fn start<'a>(cmd: &'a [String], params_json: String) -> RunStart<'a> {
    RunStart {
        started_at: "2026-11-21T12:00:00Z",
        probe: "wakeup",
        command_line: cmd,
        params_json,
        host_json: "{}".into(),
        hostname: "plc-7",
        kernel_release: "6.18.0-rt",
        machine_id: None,
        realtime: Some(true),
        kind: RunKind::Run,
        name: "wakeup",
        spec_json: None,
    }
}

/// A wake-up window of `thread`: 1000 samples, latency `min`…`max`, mean
/// `mean`; the period, jitter and execution time fixed.
fn window(thread: u32, window: u64, min: i64, max: i64, mean: i64) -> WindowRow {
    let mut stats = [WindowStat::default(); MAX_METRICS];
    stats[0] = WindowStat {
        count: 1000,
        min,
        max,
        mean,
        ..WindowStat::default()
    };
    stats[1] = WindowStat {
        count: 999,
        min: 990_000,
        max: 1_010_000,
        mean: 1_000_000,
        ..WindowStat::default()
    };
    stats[2] = WindowStat {
        count: 999,
        min: -10_000,
        max: 10_000,
        mean: 0,
        ..WindowStat::default()
    };
    WindowRow {
        thread,
        cpu: 1 + thread,
        window,
        start_ns: window * 1_000_000_000,
        cycles: 1000,
        overruns: 0,
        metrics: ProbeKind::Wakeup.metrics(),
        stats,
    }
}

/// The whole-cell sum the store used before the totals were kept.
fn whole_cell(s: &Store, cell: i64) -> BTreeMap<String, Totals> {
    let mut stmt = s
        .conn
        .prepare(
            "SELECT metric, SUM(count), MIN(min), MAX(max), SUM(CAST(mean AS REAL) * count)
             FROM window_metrics WHERE cell_id = ?1 GROUP BY metric",
        )
        .unwrap();
    stmt.query_map([cell], |r| {
        Ok((
            r.get(0)?,
            Totals {
                count: r.get(1)?,
                min: r.get(2)?,
                max: r.get(3)?,
                weighted: r.get(4)?,
            },
        ))
    })
    .unwrap()
    .collect::<rusqlite::Result<_>>()
    .unwrap()
}

fn begin(dir: &Path) -> (Store, RunIds) {
    let mut s = Store::open(&dir.join("j.db")).unwrap();
    let cmd = vec!["jitterlab".to_string()];
    let ids = s
        .begin_run(&start(&cmd, serde_json::to_string(&params()).unwrap()))
        .unwrap();
    (s, ids)
}

#[test]
fn the_totals_of_a_growing_cell_are_those_of_a_whole_cell_read() {
    let dir = tempfile::tempdir().unwrap();
    let (mut writer, ids) = begin(dir.path());
    // The reader stays open while rows arrive, as `report --follow` does.
    let reader = Store::open(&dir.path().join("j.db")).unwrap();
    assert_eq!(
        reader.window_totals(ids.cell).unwrap(),
        WindowTotals::default()
    );
    // Thread 1's first window is committed before thread 0's, and each
    // drain brings the threads' windows in any order.
    let drains: [&[WindowRow]; 4] = [
        &[window(1, 0, 5_000, 40_000, 9_000)],
        &[
            window(0, 0, 4_000, 30_000, 8_000),
            window(0, 1, 6_000, 70_000, 8_500),
        ],
        &[
            window(1, 2, 3_000, 20_000, 7_000),
            window(1, 1, 5_500, 90_000, 9_500),
        ],
        &[window(0, 2, 4_500, 50_000, 8_100)],
    ];
    for rows in drains {
        writer.insert_windows(ids.cell, rows).unwrap();
        let live = reader.window_totals(ids.cell).unwrap();
        assert_eq!(live.metrics, whole_cell(&reader, ids.cell));
        let fresh = Store::open(&dir.path().join("j.db")).unwrap();
        assert_eq!(live, fresh.window_totals(ids.cell).unwrap());
    }
    let t = reader.window_totals(ids.cell).unwrap();
    assert_eq!((t.windows, t.cycles), (6, 6000));
    assert_eq!(
        t.metrics["latency"],
        Totals {
            count: 6000,
            min: Some(3_000),
            max: Some(90_000),
            weighted: Some(50_100_000.0),
        }
    );
    // The execution time had no samples: count 0, no figures, no summary.
    assert_eq!(t.metrics["exec"].summary(), None);
}

/// A 48-hour run (172 800 one-second windows) with its largest latency in
/// one window near the end: the live figures and, once its process is
/// gone, the partial figures of the report name exactly that maximum.
#[test]
fn a_48_hour_cell_reports_its_largest_window() {
    const WINDOWS: u64 = 172_800;
    const PLANTED: u64 = 171_234;
    let dir = tempfile::tempdir().unwrap();
    let (mut writer, ids) = begin(dir.path());
    let rows: Vec<WindowRow> = (0..WINDOWS)
        .map(|w| {
            // Maxima wander between 20 and 60 µs, one window has 1.234567 ms.
            let max = if w == PLANTED {
                1_234_567
            } else {
                20_000 + (w * 7_919 % 40_000) as i64
            };
            window(0, w, 4_000 + (w % 1000) as i64, max, 9_000)
        })
        .collect();
    for chunk in rows.chunks(20_000) {
        writer.insert_windows(ids.cell, chunk).unwrap();
    }
    let reader = Store::open(&dir.path().join("j.db")).unwrap();
    let live = reader.live_cells(ids.run).unwrap();
    assert_eq!(live.len(), 1);
    let l = &live[0];
    assert_eq!(
        (l.name.as_str(), l.position, l.of),
        ("default/none/host/wakeup", 1, 1)
    );
    assert_eq!(l.plan, Some((ProbeKind::Wakeup, params())));
    assert_eq!((l.windows, l.cycles), (WINDOWS, WINDOWS * 1000));
    assert_eq!(l.measured_ns, WINDOWS * 1_000_000_000);
    let lat = &l.metrics["latency"];
    assert_eq!(
        (lat.count, lat.min, lat.max, lat.mean),
        (WINDOWS * 1000, Some(4_000), Some(1_234_567), Some(9_000))
    );
    assert_eq!(lat.p99, None, "no percentiles from windows");
    assert_eq!(l.latency_max_ns(), Some(1_234_567));
    // A chase's first metric is in cycles: no latency to list.
    let chase = LiveCell {
        plan: Some((ProbeKind::Chase, params())),
        ..l.clone()
    };
    assert_eq!(chase.latency_max_ns(), None);
    // The process dies: the report's partial figures say the same.
    writer
        .conn
        .execute("UPDATE runs SET pid = 0, boot_id = 'gone'", [])
        .unwrap();
    writer
        .conn
        .execute(
            "UPDATE cells SET plan_json = ?1",
            [serde_json::json!({"probe": ProbeKind::Wakeup, "params": params()}).to_string()],
        )
        .unwrap();
    let after = Store::open(&dir.path().join("j.db")).unwrap();
    let run = after.load_run(ids.run).unwrap();
    let partial = run.cells[0].result.as_ref().unwrap();
    assert_eq!(
        partial.combined.as_ref().unwrap()["latency"].max,
        Some(1_234_567)
    );
}

fn cell(id: i64, status: CellStatus, newest: Option<(i64, i64)>) -> CellProgress {
    CellProgress { id, status, newest }
}

#[test]
fn progress_changes_with_each_window_and_status_only() {
    let dir = tempfile::tempdir().unwrap();
    let (mut writer, ids) = begin(dir.path());
    let reader = Store::open(&dir.path().join("j.db")).unwrap();
    assert_eq!(reader.progress(ids.run + 1).unwrap(), None);
    let p0 = reader.progress(ids.run).unwrap().unwrap();
    assert_eq!(
        p0,
        RunProgress {
            status: RunStatus::Running,
            cells: vec![cell(ids.cell, CellStatus::Running, None)],
            window_ns: 1_000_000_000,
        }
    );
    assert_eq!(
        reader.progress(ids.run).unwrap().unwrap(),
        p0,
        "nothing new"
    );
    writer
        .insert_windows(ids.cell, &[window(0, 0, 1, 2, 1), window(1, 0, 1, 2, 1)])
        .unwrap();
    let p1 = reader.progress(ids.run).unwrap().unwrap();
    assert_eq!(
        p1.cells,
        vec![cell(ids.cell, CellStatus::Running, Some((1, 0)))]
    );
    writer
        .insert_windows(ids.cell, &[window(0, 1, 1, 2, 1), window(1, 1, 1, 2, 1)])
        .unwrap();
    let p2 = reader.progress(ids.run).unwrap().unwrap();
    assert_eq!(
        p2.cells,
        vec![cell(ids.cell, CellStatus::Running, Some((1, 1)))]
    );
    // The process "dies": the poll marks the run and its cell interrupted.
    writer
        .conn
        .execute("UPDATE runs SET pid = 0 WHERE id = ?1", [ids.run])
        .unwrap();
    let p3 = reader.progress(ids.run).unwrap().unwrap();
    assert_eq!(p3.status, RunStatus::Interrupted);
    assert_eq!(
        p3.cells,
        vec![cell(ids.cell, CellStatus::Interrupted, None)]
    );
    assert_eq!(reader.list_runs().unwrap()[0].status, "interrupted");
    assert!(reader.live_cells(ids.run).unwrap().is_empty());
}

#[test]
fn a_bench_s_measuring_cell_is_live_with_its_own_window_width() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(&dir.path().join("j.db")).unwrap();
    let cmd = vec!["jitterlab".to_string(), "bench".to_string()];
    let mut st = start(&cmd, "{}".into());
    st.kind = RunKind::Bench;
    st.name = "t";
    st.realtime = None;
    let key = |c: &str| CellKey {
        configuration: c.into(),
        scenario: "idle".into(),
        deployment: "host".into(),
        probe: "wakeup".into(),
        repetition: 0,
    };
    let (run, cells) = s.begin_bench(&st, &[key("a"), key("b")]).unwrap();
    let p = s.progress(run).unwrap().unwrap();
    assert_eq!(p.window_ns, 1_000_000_000, "nothing stored says: 1 s");
    assert!(s.live_cells(run).unwrap().is_empty(), "no cell measuring");
    let mut plan = params();
    plan.window_ns = 250_000_000;
    plan.cpus = vec![0, 1];
    s.start_cell(cells[1]).unwrap();
    s.record_cell_plan(cells[1], ProbeKind::Wakeup, &plan)
        .unwrap();
    s.insert_windows(
        cells[1],
        &[
            window(0, 0, 4_000, 30_000, 8_000),
            window(1, 0, 5_000, 60_000, 9_000),
        ],
    )
    .unwrap();
    let p = s.progress(run).unwrap().unwrap();
    assert_eq!(p.window_ns, 250_000_000);
    assert_eq!(
        p.cells,
        vec![
            cell(cells[0], CellStatus::Pending, None),
            cell(cells[1], CellStatus::Running, Some((1, 0)))
        ]
    );
    let live = s.live_cells(run).unwrap();
    assert_eq!(live.len(), 1);
    assert_eq!(
        (live[0].name.as_str(), live[0].position, live[0].of),
        ("b/idle/host/wakeup", 2, 2)
    );
    assert_eq!((live[0].windows, live[0].measured_ns), (2, 250_000_000));
    let lat = &live[0].metrics["latency"];
    assert_eq!(
        (lat.count, lat.min, lat.max, lat.mean),
        (2000, Some(4_000), Some(60_000), Some(8_500))
    );
}
