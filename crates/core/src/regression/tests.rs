use super::*;
use crate::cell::{CellContext, CellKey, StoredCell};
use crate::result::{Params, RunResult};
use crate::stats::MetricSummary;

/// A summary with `count` samples, p99 and max as given.
fn summary(count: u64, p99: i64, max: i64) -> MetricSummary {
    MetricSummary {
        count,
        min: (count > 0).then_some(1_000),
        max: (count > 0).then_some(max),
        mean: None,
        stddev: None,
        p50: None,
        p90: None,
        p99: (count > 0).then_some(p99),
        p99_9: None,
        p99_99: None,
        threshold: None,
        over_threshold: None,
        over_threshold_pct: None,
    }
}

fn cell(config: &str, status: CellStatus, latency: Option<MetricSummary>) -> StoredCell {
    let result = latency.map(|s| {
        RunResult::partial(
            ProbeKind::Wakeup,
            Params::default(),
            "2026-11-21T12:00:00Z".into(),
            1,
            BTreeMap::from([("latency".to_string(), s)]),
            String::new(),
        )
    });
    StoredCell {
        key: CellKey {
            configuration: config.into(),
            scenario: "idle".into(),
            deployment: "host".into(),
            probe: "wakeup".into(),
            repetition: 0,
        },
        status,
        result,
        context: CellContext::default(),
    }
}

fn run(id: i64, cells: Vec<StoredCell>) -> StoredRun {
    StoredRun {
        id,
        started_at: "2026-11-21T12:00:00Z".into(),
        kind: "bench".into(),
        name: "t".into(),
        status: "completed".into(),
        hostname: "plc-7".into(),
        kernel_release: "6.18".into(),
        configurations: vec![],
        scenarios: vec![],
        unavailable: vec![],
        cells,
        probes: vec![],
    }
}

#[test]
fn a_25_percent_p99_increase_regresses_beyond_10_and_not_beyond_30() {
    let base = run(
        1,
        vec![cell(
            "a",
            CellStatus::Completed,
            Some(summary(100, 40_000, 50_000)),
        )],
    );
    let now = run(
        2,
        vec![cell(
            "a",
            CellStatus::Completed,
            Some(summary(100, 50_000, 50_000)),
        )],
    );
    let c = compare(&base, &now, 10.0);
    assert_eq!(c.rows.len(), 2);
    assert_eq!(
        (
            c.rows[0].figure,
            c.rows[0].base,
            c.rows[0].run,
            c.rows[0].change_pct,
            c.rows[0].outcome
        ),
        (
            "p99",
            Some(40_000),
            Some(50_000),
            Some(25.0),
            Outcome::Regressed
        )
    );
    assert_eq!(
        (c.rows[1].figure, c.rows[1].change_pct, c.rows[1].outcome),
        ("max", Some(0.0), Outcome::Within)
    );
    assert!(c.regressed && !c.passed());
    let c = compare(&base, &now, 30.0);
    assert!(!c.regressed && c.passed());
    // Exactly the allowed change is within it.
    assert!(compare(&base, &now, 25.0).passed());
}

#[test]
fn no_sample_is_not_measured_never_a_pass() {
    let base = run(
        1,
        vec![cell("a", CellStatus::Completed, Some(summary(0, 0, 0)))],
    );
    let now = run(
        2,
        vec![cell(
            "a",
            CellStatus::Completed,
            Some(summary(100, 50_000, 60_000)),
        )],
    );
    let c = compare(&base, &now, 10.0);
    assert!(c.rows.iter().all(|r| r.outcome == Outcome::NotMeasured));
    assert_eq!(c.rows[0].reason.as_deref(), Some("no sample in the base"));
    assert!(!c.regressed);
    assert!(!c.passed(), "nothing compared passes nothing");
    // A failed repetition has no figure either.
    let failed = run(
        3,
        vec![cell("a", CellStatus::Failed, Some(summary(100, 1, 1)))],
    );
    let c = compare(&now, &failed, 10.0);
    assert_eq!(c.rows.len(), 2);
    assert_eq!(
        c.rows[0].reason.as_deref(),
        Some("no completed repetition in the run")
    );
    assert!(!c.passed());
}

#[test]
fn the_worst_repetition_counts_and_cells_of_one_side_are_listed() {
    let mut second = cell(
        "a",
        CellStatus::Completed,
        Some(summary(100, 70_000, 90_000)),
    );
    second.key.repetition = 1;
    let base = run(
        1,
        vec![
            cell(
                "a",
                CellStatus::Completed,
                Some(summary(100, 60_000, 80_000)),
            ),
            cell("old", CellStatus::Completed, Some(summary(1, 1, 1))),
        ],
    );
    let now = run(
        2,
        vec![
            cell(
                "a",
                CellStatus::Completed,
                Some(summary(100, 50_000, 60_000)),
            ),
            second,
            cell("new", CellStatus::Completed, Some(summary(1, 1, 1))),
        ],
    );
    let c = compare(&base, &now, 0.0);
    assert_eq!(c.rows[0].run, Some(70_000));
    assert_eq!(c.rows[1].run, Some(90_000));
    assert_eq!(c.rows[0].change_pct, Some(10_000.0 / 60_000.0 * 100.0));
    assert_eq!(c.only_in_base, ["old/idle/host/wakeup"]);
    assert_eq!(c.only_in_run, ["new/idle/host/wakeup"]);
}

#[test]
fn a_zero_base_regresses_on_any_increase() {
    let base = run(
        1,
        vec![cell("a", CellStatus::Completed, Some(summary(5, 0, 0)))],
    );
    let now = run(
        2,
        vec![cell("a", CellStatus::Completed, Some(summary(5, 0, 3)))],
    );
    let c = compare(&base, &now, 1000.0);
    assert_eq!(c.rows[0].change_pct, Some(0.0));
    assert_eq!(
        (c.rows[1].change_pct, c.rows[1].outcome),
        (None, Outcome::Regressed)
    );
}

#[test]
fn max_regression_is_a_percentage_of_zero_or_more() {
    assert_eq!(parse_max_regression("10"), Ok(10.0));
    assert_eq!(parse_max_regression("2.5%"), Ok(2.5));
    assert_eq!(parse_max_regression("0"), Ok(0.0));
    for bad in ["-5", "ten", "", "inf", "NaN"] {
        assert_eq!(
            parse_max_regression(bad),
            Err(format!("--max-regression {bad}: give the largest allowed increase as a percentage of the baseline, 0 or more (e.g. 10)")),
            "{bad}"
        );
    }
}
