use std::collections::BTreeMap;
use std::path::Path;

use super::*;
use jitterlab_core::cell::{CellContext, CellKey, CellStatus};
use jitterlab_core::result::{Params, ProbeKind, RunResult};

use crate::error::BadInput;
use crate::report::stored::{report, ReportRequest};
use crate::store::{BenchSpecJson, RunKind, RunStart, RunStatus};

/// A wake-up latency summary of 100 samples from `low` with the given
/// p99 and max.
fn latency(low: i64, p99: i64, max: i64) -> jitterlab_core::stats::MetricSummary {
    jitterlab_core::stats::MetricSummary {
        count: 100,
        min: Some(low),
        max: Some(max),
        mean: Some(low),
        stddev: Some(0),
        p50: Some(low),
        p90: Some(low),
        p99: Some(p99),
        p99_9: Some(max),
        p99_99: Some(max),
        threshold: Some(100_000),
        over_threshold: Some(0),
        over_threshold_pct: Some(0.0),
    }
}

/// Stores a bench of two cells (`baseline` and `tuned`, idle, wakeup);
/// `tuned` is `None` when it failed.
fn bench(
    store: &mut Store,
    baseline: jitterlab_core::stats::MetricSummary,
    tuned: Option<jitterlab_core::stats::MetricSummary>,
) -> i64 {
    let key = |c: &str| CellKey {
        configuration: c.into(),
        scenario: "idle".into(),
        deployment: "host".into(),
        probe: "wakeup".into(),
        repetition: 0,
    };
    let spec = BenchSpecJson {
        configurations: vec!["baseline".into(), "tuned".into()],
        scenarios: vec!["idle".into()],
        unavailable: vec![],
        spec: serde_json::json!({"name": "ci"}),
        source: None,
    };
    let cmd = vec!["jitterlab".to_string()];
    let (id, cells) = store
        .begin_bench(
            &RunStart {
                started_at: "2026-11-21T12:00:00Z",
                probe: "bench",
                command_line: &cmd,
                params_json: "{}".into(),
                host_json: "{}".into(),
                hostname: "plc-7",
                kernel_release: "6.18",
                machine_id: None,
                realtime: None,
                kind: RunKind::Bench,
                name: "ci",
                spec_json: Some(serde_json::to_string(&spec).unwrap()),
            },
            &[key("baseline"), key("tuned")],
        )
        .unwrap();
    let result = |s: jitterlab_core::stats::MetricSummary| {
        RunResult::partial(
            ProbeKind::Wakeup,
            Params::default(),
            "2026-11-21T12:00:00Z".into(),
            1_000_000_000,
            BTreeMap::from([("latency".to_string(), s)]),
            String::new(),
        )
    };
    let ctx = CellContext::default();
    store
        .finish_cell(
            cells[0],
            CellStatus::Completed,
            Some(&result(baseline)),
            &ctx,
            &[],
        )
        .unwrap();
    match tuned {
        Some(t) => store
            .finish_cell(cells[1], CellStatus::Completed, Some(&result(t)), &ctx, &[])
            .unwrap(),
        None => store
            .finish_cell(cells[1], CellStatus::Failed, None, &ctx, &[])
            .unwrap(),
    }
    store
        .finish_run_row(id, RunStatus::Completed, None, 2_000_000_000, None)
        .unwrap();
    id
}

/// Run 1 (base) and run 2, whose baseline cell's p99 is 25 % higher
/// (40 us → 50 us) at the same max, and whose tuned cell failed.
fn two_runs(dir: &Path) -> std::path::PathBuf {
    let db = dir.join("ci.db");
    let mut store = Store::open(&db).unwrap();
    bench(
        &mut store,
        latency(10_000, 40_000, 80_000),
        Some(latency(5_000, 20_000, 30_000)),
    );
    bench(&mut store, latency(10_000, 50_000, 80_000), None);
    db
}

fn request(against: &str, pct: Option<&str>, format: Format) -> ReportRequest {
    ReportRequest {
        runs: vec!["2".into()],
        format,
        baseline: None,
        tables: vec![],
        explain: true,
        histogram: None,
        output: None,
        junit: None,
        follow: false,
        monitor: None,
        against: Some(against.into()),
        max_regression: pct.map(String::from),
    }
}

#[test]
fn the_comparison_table_is_exact() {
    let dir = tempfile::tempdir().unwrap();
    let db = two_runs(dir.path());
    let store = crate::store::open_existing(&db).unwrap();
    let (text, code) = against(&store, 2, 1, 10.0, Format::Text).unwrap();
    assert_eq!(
        text,
        "\
run 2 against base run 1: p99 and max per cell and metric; a regression is an increase of more than 10%
cell                       metric   figure      base       run  change  result
baseline/idle/host/wakeup  latency  p99     40.000us  50.000us  +25.0%  REGRESSED
baseline/idle/host/wakeup  latency  max     80.000us  80.000us   +0.0%  within
tuned/idle/host/wakeup     latency  p99     20.000us         -       -  not measured (no completed repetition in the run)
tuned/idle/host/wakeup     latency  max     30.000us         -       -  not measured (no completed repetition in the run)
REGRESSED beyond 10%: 1 of 2 figures compared; 2 not measured: baseline/idle/host/wakeup latency p99 +25.0%
"
    );
    assert_eq!(format!("{code:?}"), format!("{:?}", ExitCode::from(1)));
    let (csv, _) = against(&store, 2, 1, 10.0, Format::Csv).unwrap();
    assert_eq!(
        csv,
        "\
cell,metric,figure,unit,base,run,change_pct,result,reason
baseline/idle/host/wakeup,latency,p99,ns,40000,50000,25.0,regressed,
baseline/idle/host/wakeup,latency,max,ns,80000,80000,0.0,within,
tuned/idle/host/wakeup,latency,p99,ns,20000,,,not-measured,no completed repetition in the run
tuned/idle/host/wakeup,latency,max,ns,30000,,,not-measured,no completed repetition in the run
"
    );
    let (json, _) = against(&store, 2, 1, 10.0, Format::Json).unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["schema_version"], 1);
    assert_eq!((v["base"].as_i64(), v["run"].as_i64()), (Some(1), Some(2)));
    assert_eq!(v["max_regression_pct"], 10.0);
    assert_eq!(v["regressed"], true);
    assert_eq!(
        v["rows"][0],
        serde_json::json!({
            "cell": "baseline/idle/host/wakeup", "metric": "latency", "figure": "p99",
            "unit": "ns", "base": 40000, "run": 50000, "change_pct": 25.0,
            "outcome": "regressed"
        })
    );
    assert_eq!(v["rows"][2]["run"], serde_json::Value::Null);
    assert_eq!(v["rows"][2]["outcome"], "not-measured");
    let e = against(&store, 2, 1, 10.0, Format::Md).unwrap_err();
    assert_eq!(
        e.to_string(),
        "--against prints text, csv or json; give --format text, csv or json"
    );
}

#[test]
fn exit_1_beyond_the_allowed_regression_0_within_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = two_runs(dir.path());
    let code = |pct: &str| {
        let c = report(&db, &request("1", Some(pct), Format::Json)).unwrap();
        format!("{c:?}")
    };
    assert_eq!(code("10"), format!("{:?}", ExitCode::from(1)));
    assert_eq!(code("25"), format!("{:?}", ExitCode::SUCCESS));
    assert_eq!(code("30"), format!("{:?}", ExitCode::SUCCESS));
    // Run 1 against itself: every figure within 0 %.
    let mut same = request("1", Some("0"), Format::Text);
    same.runs = vec!["1".into()];
    assert_eq!(
        format!("{:?}", report(&db, &same).unwrap()),
        format!("{:?}", ExitCode::SUCCESS)
    );
}

#[test]
fn nothing_measured_on_both_sides_passes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("empty.db");
    let mut store = Store::open(&db).unwrap();
    let empty = jitterlab_core::stats::MetricSummary {
        count: 0,
        min: None,
        max: None,
        p99: None,
        ..latency(0, 0, 0)
    };
    bench(&mut store, empty.clone(), None);
    bench(&mut store, latency(1, 2, 3), None);
    drop(store);
    let store = crate::store::open_existing(&db).unwrap();
    let (text, code) = against(&store, 2, 1, 50.0, Format::Text).unwrap();
    assert!(
        text.ends_with(
            "NOT COMPARED: no figure was measured in both runs; 3 not measured; nothing passes\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("not measured (no sample in the base)"),
        "{text}"
    );
    assert_eq!(format!("{code:?}"), format!("{:?}", ExitCode::from(1)));
}

#[test]
fn bad_input_is_refused_with_what_to_fix() {
    let dir = tempfile::tempdir().unwrap();
    let db = two_runs(dir.path());
    let err = |r: ReportRequest| {
        let e = report(&db, &r).unwrap_err();
        assert!(e.downcast_ref::<BadInput>().is_some(), "{e:#}");
        e.to_string()
    };
    assert_eq!(
        err(request("1", Some("-5"), Format::Text)),
        "--max-regression -5: give the largest allowed increase as a percentage of the baseline, 0 or more (e.g. 10)"
    );
    assert_eq!(
        err(request("9", Some("10"), Format::Text)),
        "there is no run 9 in the database; list the runs with: jitterlab runs"
    );
    let mut two = request("1", Some("10"), Format::Text);
    two.runs = vec!["1".into(), "2".into()];
    assert_eq!(
        err(two),
        "--against compares one RUN with BASE; name one RUN (or none for the latest), not 2"
    );
}
