//! The verdict section of the page: its headline names a verdict that
//! did not pass and never says every verdict passed when one failed.

use std::collections::BTreeMap;

use jitterlab_core::cell::{CellContext, CellKey};
use jitterlab_core::result::{Params, ProbeKind};
use jitterlab_core::stats::MetricStats;
use serde_json::json;

use super::*;

/// A netcycle cell of scenario `scenario` with `late` late cycles of
/// 4000 (none allowed).
fn netcycle_cell(scenario: &str, late: u64) -> StoredCell {
    let mut s = MetricStats::new(false, None);
    s.record(1_000);
    let mut r = RunResult::partial(
        ProbeKind::Netcycle,
        Params::default(),
        "2026-11-27T06:00:00Z".into(),
        1_000_000_000,
        BTreeMap::from([("latency".to_string(), s.summary())]),
        String::new(),
    );
    let reasons: Vec<String> = (late > 0)
        .then(|| format!("late cycles: {late} of 4000 (allowed 0)"))
        .into_iter()
        .collect();
    r.detail = Some(json!({
        "role": "both", "cns": 3, "chaining": false, "wait": "blocking",
        "response_timeout_ns": 25_000, "out_bytes": 4, "in_bytes": 4, "wire_ns": 10_000,
        "cycles": 4000, "late_cycles": late, "polls": 12000, "missed_pres": 0, "late_pres": 0,
        "held": {"held": late == 0, "reasons": reasons},
    }));
    StoredCell {
        key: CellKey {
            configuration: "tuned".into(),
            scenario: scenario.into(),
            deployment: "host".into(),
            probe: "netcycle".into(),
            repetition: 0,
        },
        status: CellStatus::Completed,
        result: Some(r),
        context: CellContext::default(),
    }
}

fn bench(cells: Vec<StoredCell>) -> StoredRun {
    StoredRun {
        id: 4,
        started_at: "2026-11-27T06:00:00Z".into(),
        kind: "bench".into(),
        name: "powerlink".into(),
        status: "completed".into(),
        hostname: "ipc-2".into(),
        kernel_release: "6.12.0".into(),
        configurations: vec!["tuned".into()],
        scenarios: vec!["idle".into(), "cpu".into()],
        unavailable: Vec::new(),
        cells,
        probes: Vec::new(),
    }
}

#[test]
fn the_headline_names_a_cycle_time_not_held_and_never_says_every_verdict_passed() {
    let run = bench(vec![netcycle_cell("idle", 0), netcycle_cell("cpu", 3)]);
    assert_eq!(
        exit_status(&run),
        (
            Some(1),
            "1 of 4 verdicts did not pass: tuned/cpu/host/netcycle rep 0: FAIL cycle time held: 4000 cycles, 3 late; 12000 PRes polled, 0 missed: late cycles: 3 of 4000 (allowed 0)".into()
        )
    );
    let html = verdict(&run);
    assert!(
        !html.contains("every verdict") && !html.contains("every limit"),
        "{html}"
    );
    assert!(html.contains("<td class=\"fail\">FAIL</td>"), "{html}");
    let held = bench(vec![netcycle_cell("idle", 0), netcycle_cell("cpu", 0)]);
    assert_eq!(
        exit_status(&held),
        (
            Some(0),
            "every verdict passed (4 of 4) and no cell failed".into()
        )
    );
}
