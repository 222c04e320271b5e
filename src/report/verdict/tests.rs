use std::collections::BTreeMap;

use jitterlab_core::result::{check_limit, Params, ProbeKind, RunResult};
use jitterlab_core::roundtrip::{Budget, BudgetVerdict};
use jitterlab_core::stats::{MetricStats, MetricSummary};
use serde_json::json;

use super::*;

/// A summary of `values`.
fn stats(values: &[i64]) -> MetricSummary {
    let mut s = MetricStats::new(false, None);
    for &v in values {
        s.record(v);
    }
    s.summary()
}

/// A round-trip result of `role` whose I/O simulator received `rx`, with
/// the budget of 1 ms as its screw-to-screw limit.
fn roundtrip(role: &str, metrics: &[(&str, MetricSummary)], rx: serde_json::Value) -> RunResult {
    let m: BTreeMap<String, MetricSummary> = metrics
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    let mut r = RunResult::partial(
        ProbeKind::Roundtrip,
        Params::default(),
        "2026-11-27T06:00:00Z".into(),
        2_000_000_000,
        m.clone(),
        String::new(),
    );
    r.warnings.clear();
    r.limits = vec![check_limit(
        "screw-to-screw",
        1_000_000,
        &m["screw-to-screw"],
    )];
    let budget = BudgetVerdict::new(Budget {
        terms: Vec::new(),
        own_ns: Some(1_000_000),
    });
    r.detail = Some(json!({
        "role": role,
        "budget": budget,
        "budget_terms": "budget given",
        "budget_formula": "budget given: 1 ms",
        "io": if role == "controller" { serde_json::Value::Null } else { json!({"rx": rx}) },
    }));
    r
}

const REASON: &str =
    "no round trip completed: of the messages from the controller, 0 accepted, 30 malformed";

/// What `jitterlab run` prints of `r`: its record (the header, the verdict
/// block right under it) and its summary.
fn printed(r: &RunResult) -> String {
    crate::report::header::record(
        crate::report::tables::Format::Text,
        &crate::report::header::of_result(r),
        &of_result(r),
        &crate::report::text::summary(r),
    )
    .unwrap()
}

#[test]
fn zero_round_trips_print_not_measured_never_a_pass() {
    let r = roundtrip(
        "both",
        &[("screw-to-screw", stats(&[]))],
        json!({"accepted": 0, "malformed": 30, "unsupported": 0, "not_ours": 0}),
    );
    let text = printed(&r);
    let block = format!(
        "verdict: 2 of 2 verdicts did not pass, exit status 1\n  NOT MEASURED screw-to-screw: no sample, limit 1000.000us: {REASON}\n  NOT MEASURED round-trip budget: 0 round trips, budget 1000.000us: {REASON}\n"
    );
    // Once, right under the header, above the summary.
    assert!(text.contains(&format!("\n\n{block}\nprobe ")), "{text}");
    assert_eq!(text.matches("verdict:").count(), 1, "{text}");
    assert!(
        text.contains(&format!(
            "\n  0 round trips: the budget of 1.000ms is NOT MEASURED: {REASON}\n"
        )),
        "{text}"
    );
    assert!(
        !text.contains("PASS") && !text.contains("max 0.000us"),
        "{text}"
    );
    // JSON: the figure is null, with the reason beside it.
    let j: serde_json::Value =
        serde_json::from_str(&crate::runner::result_json(&r).unwrap()).unwrap();
    assert_eq!(j["limits"][0]["observed_ns"], serde_json::Value::Null);
    let v = &j["verdict"]["cells"][0]["verdicts"][0];
    assert_eq!(v["observed_ns"], serde_json::Value::Null);
    assert_eq!(v["status"], "not-measured");
    assert_eq!(v["reason"], REASON);
    assert_eq!(j["verdict"]["exit_status"], 1);
    assert_eq!(exit_status(&of_result(&r)), 1);
}

#[test]
fn a_controller_alone_does_not_print_screw_to_screw() {
    let r = roundtrip(
        "controller",
        &[
            ("screw-to-screw", stats(&[])),
            ("controller", stats(&[20_000, 30_000, 40_000])),
        ],
        json!(null),
    );
    let text = printed(&r);
    assert!(!text.contains("screw-to-screw"), "{text}");
    assert!(
        text.contains(
            "\n\nverdict: every verdict passed (1 of 1), exit status 0\n  PASS controller measured: 3 samples\n\nprobe "
        ),
        "{text}"
    );
    assert!(
        text.contains("\n  round trips: not measured here: the controller alone sees no T1 or T4: the I/O simulator's machine (--role io) measures the round trip\n"),
        "{text}"
    );
    assert_eq!(exit_status(&of_result(&r)), 0);
}

#[test]
fn markdown_and_json_blocks_carry_the_same_verdicts() {
    let r = roundtrip(
        "both",
        &[("screw-to-screw", stats(&[]))],
        json!({"accepted": 0, "malformed": 30}),
    );
    let cells = of_result(&r);
    assert_eq!(
        markdown(&cells),
        format!(
            "### Verdict\n\n**verdict: 2 of 2 verdicts did not pass, exit status 1**\n\n| verdict | status | what decided it |\n|---|---|---|\n| screw-to-screw | NOT MEASURED | no sample, limit 1000.000us: {REASON} |\n| round-trip budget | NOT MEASURED | 0 round trips, budget 1000.000us: {REASON} |\n"
        )
    );
    let j = json(&cells);
    assert_eq!(j["headline"], "2 of 2 verdicts did not pass");
    assert_eq!(j["exit_status"], 1);
    assert_eq!(j["cells"][0]["verdicts"][1]["name"], "round-trip budget");
    assert_eq!(j["cells"][0]["verdicts"][1]["reason"], REASON);
}

#[test]
fn a_bench_still_running_gives_its_verdicts_so_far_without_an_exit_status() {
    let done = CellVerdicts {
        cell: Some("base/idle/host/cyclic rep 0".into()),
        elapsed_ns: 1_000_000_000,
        skipped: None,
        verdicts: jitterlab_core::verdict::verdicts(&roundtrip(
            "both",
            &[("screw-to-screw", stats(&[]))],
            json!({"accepted": 0, "malformed": 30}),
        )),
    };
    let running = CellVerdicts {
        cell: Some("base/cpu/host/cyclic rep 0".into()),
        elapsed_ns: 0,
        skipped: Some(format!(
            "running: {}",
            jitterlab_core::verdict::NO_RESULT_YET
        )),
        verdicts: Vec::new(),
    };
    assert_eq!(
        headline(&[done.clone(), running]),
        "verdict so far: 2 of 2 verdicts did not pass (cells still to run)"
    );
    assert_eq!(
        headline(&[done]),
        "verdict: 2 of 2 verdicts did not pass, exit status 1"
    );
}

/// The JSON `run --json` writes starts with the record (`header`, then
/// `verdict`) and still reads back as the result it was written from; a
/// file of an older version, without either key, reads the same.
#[test]
fn the_json_a_run_writes_is_its_record_and_reads_back_as_its_result() {
    let r = roundtrip(
        "controller",
        &[
            ("screw-to-screw", stats(&[])),
            ("controller", stats(&[20_000, 30_000, 40_000])),
        ],
        json!(null),
    );
    let text = crate::runner::result_json(&r).unwrap();
    assert!(text.starts_with("{\n  \"header\": {\n"), "{text}");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        v["verdict"],
        json!({
            "headline": "every verdict passed (1 of 1)",
            "exit_status": 0,
            "cells": [{
                "cell": null,
                "elapsed_ns": r.elapsed_ns,
                "skipped": null,
                "verdicts": [{
                    "name": "controller measured",
                    "limit_ns": null,
                    "observed_ns": null,
                    "samples": 3,
                    "status": "pass",
                    "decided": "3 samples"
                }]
            }]
        })
    );
    let back: RunResult = serde_json::from_str(&text).unwrap();
    assert_eq!(
        serde_json::to_value(&back).unwrap(),
        serde_json::to_value(&r).unwrap()
    );
    let older = serde_json::to_string(&r).unwrap();
    let back: RunResult = serde_json::from_str(&older).unwrap();
    assert_eq!(
        serde_json::to_value(&back).unwrap(),
        serde_json::to_value(&r).unwrap()
    );
}
