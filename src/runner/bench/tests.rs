//! [`measure_cell`] with a fake probe: what it asks the registry for, what
//! it records in the store and the cell's context, how it ends. Nothing
//! here needs root.

use super::*;
use crate::probe::fake::Synthetic;
use jitterlab_core::result::ProbeKind;
use jitterlab_core::spec::{parse, SpecContext};
use serial_test::serial;

/// A bench of one ctxswitch cell on the CPU the test runs on, under
/// SCHED_OTHER, 5 s long.
fn spec() -> Spec {
    let cpu = jitterlab_sys::current_cpu().unwrap_or(0);
    let online: CpuList = [cpu].into_iter().collect();
    parse(
        &format!(
            "name = \"t\"\nduration = \"5s\"\n[[configuration]]\nname = \"c\"\nprobe_cpus = \"{cpu}\"\npolicy = \"other\"\n\
             [[probe]]\nkind = \"ctxswitch\"\nmax_latency = \"100us\"\n"
        ),
        "t.toml",
        &SpecContext {
            online: &online,
            builtins: &["idle"],
        },
    )
    .unwrap()
}

/// What a test holds: the store with the bench begun, the cell's id, a
/// journal that records nothing, the cell's directory.
struct Rig {
    dir: tempfile::TempDir,
    store: Option<Store>,
    cell: i64,
    journal: Journal,
}

fn rig(spec: &Spec) -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("j.db")).unwrap();
    let cmd = vec!["jitterlab".to_string(), "bench".to_string()];
    let keys: Vec<CellKey> = spec.cells().iter().map(|c| c.key.clone()).collect();
    let (_, cells) = store
        .begin_bench(
            &RunStart {
                started_at: "now",
                probe: "bench",
                command_line: &cmd,
                params_json: "{}".into(),
                host_json: "{}".into(),
                hostname: "h",
                kernel_release: "k",
                machine_id: None,
                realtime: None,
                kind: crate::store::RunKind::Bench,
                name: "t",
                spec_json: None,
            },
            &keys,
        )
        .unwrap();
    store.start_cell(cells[0]).unwrap();
    let journal = Journal::on_demand(dir.path()).unwrap();
    Rig {
        store: Some(store),
        cell: cells[0],
        journal,
        dir,
    }
}

/// The window rows stored for `cell`: (rows, samples).
fn stored_rows(dir: &Path, cell: i64) -> (i64, i64) {
    let conn = rusqlite::Connection::open(dir.join("j.db")).unwrap();
    conn.query_row(
        "SELECT COUNT(*), COALESCE(SUM(cycles), 0) FROM windows WHERE cell_id = ?1",
        [cell],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .unwrap()
}

/// The plan stored for `cell`.
fn stored_plan(dir: &Path, cell: i64) -> serde_json::Value {
    let conn = rusqlite::Connection::open(dir.join("j.db")).unwrap();
    let text: String = conn
        .query_row("SELECT plan_json FROM cells WHERE id = ?1", [cell], |r| {
            r.get(0)
        })
        .unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Measures the one cell of `spec` with `build`; returns what it gave and
/// the cell's context.
fn measure_one(
    spec: &Spec,
    rig: &mut Rig,
    signalled: bool,
    calibrated: Option<&[Calibration]>,
    build: &mut dyn FnMut(&Cell<'_>, &mut Journal) -> Result<Probes>,
) -> (Result<CellMeasured>, CellContext, Option<String>) {
    let cells = spec.cells();
    let signalled = AtomicBool::new(signalled);
    let mut context = CellContext::default();
    let mut store_failure = None;
    let mut ticks = 0;
    let measured = measure_cell(
        CellRequest {
            root: rig.dir.path(),
            spec,
            cell: &cells[0],
            id: rig.cell,
            calibrated,
            defaults: Vec::new(),
            signalled: &signalled,
            workdir: &rig.dir.path().join("cell-1"),
            engine: None,
        },
        CellState {
            store: &mut rig.store,
            journal: &mut rig.journal,
            store_failure: &mut store_failure,
            context: &mut context,
        },
        build,
        &mut || ticks += 1,
    );
    assert!(rig.store.is_some(), "the store goes back to the bench");
    (measured, context, store_failure)
}

#[test]
#[serial]
fn a_cell_asks_the_registry_for_a_bench_cell_and_records_its_rows_plan_and_result() {
    let spec = spec();
    let mut rig = rig(&spec);
    let cal = Calibration {
        cpu: 0,
        scan_target_ns: 1,
        working_set_bytes: 0,
        nodes: 0,
        pass_ns: 0,
        iterations: 7,
        measured_scan_ns: 1,
        note: None,
    };
    let cell_dir = rig.dir.path().join("cell-1");
    let mut asked = Vec::new();
    let (measured, context, store_failure) = measure_one(
        &spec,
        &mut rig,
        false,
        Some(std::slice::from_ref(&cal)),
        &mut |cell, _| {
            asked.push((
                cell.plan.kind,
                cell.stop,
                cell.calibrated.map(|c| c[0].iterations),
                cell.workdir.map(Path::to_path_buf),
                cell.plan.params.duration_ns,
            ));
            Ok(Probes::threads(vec![Box::new(Synthetic::new(150).0)]))
        },
    );
    assert_eq!(
        asked,
        [(
            ProbeKind::Ctxswitch,
            Stop::Duration,
            Some(7),
            Some(cell_dir),
            Some(5_000_000_000)
        )]
    );
    let m = measured.unwrap();
    let t = &m.result.threads[0];
    assert_eq!((t.cycles, t.metrics["handover"].max), (150, Some(150_000)));
    // The spec's limit, on the probe's main latency.
    assert_eq!(
        (
            m.result.limits[0].metric.as_str(),
            m.result.limits[0].exceeded
        ),
        ("handover", true)
    );
    assert_eq!(m.histograms.len(), 1);
    // Stored as the bench stores a cell, its 1 µs histogram reads back:
    // hand-overs of 1 … 150 µs, one in each bin.
    let store = rig.store.as_mut().unwrap();
    store
        .finish_cell(
            rig.cell,
            CellStatus::Completed,
            Some(&m.result),
            &context,
            &m.histograms,
        )
        .unwrap();
    let run = store.latest_run().unwrap().unwrap();
    let fine = store.load_histograms_1us(run).unwrap();
    assert_eq!(fine.len(), 1);
    assert_eq!(
        fine[0]
            .iter()
            .map(|f| (f.thread, f.metric.as_str(), f.hist.count()))
            .collect::<Vec<_>>(),
        [(Some(0), "handover", 150)]
    );
    let bins = &fine[0][0].hist.buckets;
    assert_eq!((bins[0], bins[1], bins[150], bins[151]), (0, 1, 1, 0));
    assert_eq!(bins.iter().sum::<u64>(), 150);
    // The probe was torn down into the cell's notes; the counters of an
    // empty sysroot are unknown, and the notes say so.
    assert_eq!(context.notes[0], "torn down");
    assert!(
        context.notes[1].starts_with("unknown (unreadable): "),
        "{:?}",
        context.notes
    );
    assert_eq!(store_failure, None);
    // Every sample is in a stored window row of the cell, and its plan is
    // stored.
    assert_eq!(stored_rows(rig.dir.path(), rig.cell), (1, 150));
    let plan = stored_plan(rig.dir.path(), rig.cell);
    assert_eq!(plan["probe"], "ctxswitch");
    assert_eq!(plan["params"]["duration_ns"], 5_000_000_000u64);
}

#[test]
#[serial]
fn a_probe_that_cannot_be_built_fails_the_cell_after_its_plan_is_stored() {
    let spec = spec();
    let mut rig = rig(&spec);
    let (measured, context, _) = measure_one(&spec, &mut rig, false, None, &mut |_, _| {
        anyhow::bail!("creating the namespaces failed")
    });
    assert_eq!(
        measured.err().unwrap().to_string(),
        "creating the namespaces failed"
    );
    assert_eq!(context.notes.len(), 1, "{:?}", context.notes);
    assert_eq!(stored_rows(rig.dir.path(), rig.cell), (0, 0));
    assert_eq!(stored_plan(rig.dir.path(), rig.cell)["probe"], "ctxswitch");
}

#[test]
#[serial]
fn a_signal_ends_the_cell_interrupted() {
    let spec = spec();
    let mut rig = rig(&spec);
    let started = Instant::now();
    let (measured, _, _) = measure_one(&spec, &mut rig, true, None, &mut |_, _| {
        Ok(Probes::threads(vec![Box::new(Synthetic::new(u64::MAX).0)]))
    });
    let r = measured.unwrap().result;
    assert!(r.interrupted);
    assert_eq!(r.end, jitterlab_core::result::EndReason::Interrupted);
    // Long before the cell's 5 s.
    assert!(started.elapsed() < Duration::from_secs(2));
}
