use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::*;
use crate::cell::{CellContext, CellKey, StoredCell};
use crate::result::Params;
use crate::result::ProbeKind;
use crate::roundtrip::{Budget, BudgetVerdict};
use crate::stats::MetricStats;

/// A summary of `values` (signed or not).
fn stats(signed: bool, values: &[i64]) -> MetricSummary {
    let mut s = MetricStats::new(signed, None);
    for &v in values {
        s.record(v);
    }
    s.summary()
}

/// A result of `probe` with `metrics` combined and `limits` on them.
fn result(
    probe: ProbeKind,
    metrics: &[(&str, MetricSummary)],
    limits: &[(&str, u64)],
    detail: Option<Value>,
) -> RunResult {
    let m: BTreeMap<String, MetricSummary> = metrics
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    let mut r = RunResult::partial(
        probe,
        Params::default(),
        "2026-11-27T06:00:00Z".into(),
        2_000_000_000,
        m.clone(),
        String::new(),
    );
    r.limits = limits
        .iter()
        .map(|&(metric, limit)| crate::result::check_limit(metric, limit, m.get(metric).unwrap()))
        .collect();
    r.detail = detail;
    r
}

/// A round trip's detail: its role, a budget with `samples` and `over`,
/// and what the I/O simulator received.
fn roundtrip_detail(role: &str, samples: u64, over: u64, rx: Value) -> Value {
    let mut v = BudgetVerdict::new(Budget {
        terms: Vec::new(),
        own_ns: Some(1_000_000),
    });
    v.samples = samples;
    v.over = over;
    json!({ "role": role, "budget": v, "io": { "rx": rx } })
}

#[test]
fn zero_round_trips_are_not_measured_with_what_became_of_the_messages() {
    let r = result(
        ProbeKind::Roundtrip,
        &[("screw-to-screw", stats(false, &[]))],
        &[("screw-to-screw", 1_000_000)],
        Some(roundtrip_detail(
            "both",
            0,
            0,
            json!({"accepted": 0, "malformed": 30, "unsupported": 0, "not_ours": 0}),
        )),
    );
    let v = verdicts(&r);
    let reason =
        "no round trip completed: of the messages from the controller, 0 accepted, 30 malformed";
    assert_eq!(
        v.iter().map(Verdict::line).collect::<Vec<_>>(),
        [
            format!("NOT MEASURED screw-to-screw: no sample, limit 1000.000us: {reason}"),
            format!("NOT MEASURED round-trip budget: 0 round trips, budget 1000.000us: {reason}"),
        ]
    );
    assert_eq!(
        v[0].status,
        Status::NotMeasured {
            reason: reason.into()
        }
    );
    assert_eq!((v[0].observed_ns, v[0].samples), (None, Some(0)));
    assert!(r.failed());
    // In JSON the figure is null, with the reason beside it.
    assert_eq!(
        serde_json::to_value(&v[0]).unwrap(),
        json!({
            "name": "screw-to-screw",
            "limit_ns": 1_000_000,
            "observed_ns": null,
            "samples": 0,
            "status": "not-measured",
            "reason": reason,
            "decided": format!("no sample, limit 1000.000us: {reason}"),
        })
    );
}

#[test]
fn a_controller_alone_has_no_screw_to_screw_verdict() {
    let r = result(
        ProbeKind::Roundtrip,
        &[
            ("screw-to-screw", stats(false, &[])),
            ("controller", stats(false, &[20_000, 30_000])),
        ],
        &[("screw-to-screw", 1_000_000)],
        Some(roundtrip_detail("controller", 0, 0, json!({}))),
    );
    let v = verdicts(&r);
    assert_eq!(
        v.iter().map(Verdict::line).collect::<Vec<_>>(),
        ["PASS controller measured: 2 samples"]
    );
    assert!(!r.failed());
    // A controller that never handled an input fails, saying why.
    let mut none = r.clone();
    none.combined
        .as_mut()
        .unwrap()
        .insert("controller".into(), stats(false, &[]));
    none.detail = Some(json!({
        "role": "controller",
        "controller": {"rx": {"accepted": 0, "not_ours": 12}},
    }));
    assert_eq!(
        verdicts(&none).iter().map(Verdict::line).collect::<Vec<_>>(),
        ["NOT MEASURED controller measured: 0 samples: no controller cycle handled a new input: of the messages from the I/O simulator, 0 accepted, 12 not ours"]
    );
    assert!(none.failed());
}

#[test]
fn limits_say_the_figure_its_samples_and_the_limit() {
    let r = result(
        ProbeKind::Cyclic,
        &[
            ("latency", stats(false, &[10_000, 812_000, 30_000])),
            ("jitter", stats(true, &[-700, 300])),
        ],
        &[("latency", 500_000), ("jitter", 700)],
        None,
    );
    assert_eq!(
        verdicts(&r).iter().map(Verdict::line).collect::<Vec<_>>(),
        [
            "FAIL latency: max 812.000us of 3 samples > limit 500.000us",
            "PASS jitter: max |jitter| 0.700us of 2 samples <= limit 0.700us",
        ]
    );
    assert!(r.failed());
}

#[test]
fn a_probe_without_a_limit_passes_when_its_main_metric_has_samples_only() {
    let ok = result(
        ProbeKind::Wakeup,
        &[("latency", stats(false, &[5_000]))],
        &[],
        None,
    );
    assert_eq!(
        verdicts(&ok).iter().map(Verdict::line).collect::<Vec<_>>(),
        ["PASS latency measured: 1 sample"]
    );
    assert!(!ok.failed());
    let empty = result(ProbeKind::Wakeup, &[], &[], None);
    assert_eq!(
        verdicts(&empty)
            .iter()
            .map(Verdict::line)
            .collect::<Vec<_>>(),
        ["NOT MEASURED latency measured: 0 samples: no cycle recorded a latency sample"]
    );
    assert!(empty.failed());
}

/// A netcycle detail of `role` with `cycles`, `late` of them late.
fn netcycle_detail(role: &str, cycles: u64, late: u64) -> Value {
    let held = late == 0 && cycles > 0;
    let reasons: Vec<String> = if late > 0 {
        vec![format!("late cycles: {late} of {cycles} (allowed 0)")]
    } else {
        Vec::new()
    };
    json!({
        "role": role, "cns": 1, "chaining": false, "wait": "blocking",
        "response_timeout_ns": 25_000, "out_bytes": 4, "in_bytes": 4, "wire_ns": 10_000,
        "cycles": cycles, "late_cycles": late, "polls": cycles, "missed_pres": 0, "late_pres": 0,
        "held": {"held": held, "reasons": reasons},
    })
}

#[test]
fn a_cycle_time_not_held_fails_the_run() {
    let latency = stats(false, &[1_000, 2_000]);
    let not_held = result(
        ProbeKind::Netcycle,
        &[("latency", latency.clone())],
        &[],
        Some(netcycle_detail("both", 4000, 3)),
    );
    assert_eq!(
        verdicts(&not_held).iter().map(Verdict::line).collect::<Vec<_>>(),
        [
            "FAIL cycle time held: 4000 cycles, 3 late; 4000 PRes polled, 0 missed: late cycles: 3 of 4000 (allowed 0)",
            "PASS latency measured: 2 samples",
        ]
    );
    assert!(not_held.failed());
    let held = result(
        ProbeKind::Netcycle,
        &[("latency", latency.clone())],
        &[],
        Some(netcycle_detail("both", 4000, 0)),
    );
    assert_eq!(
        verdicts(&held)[0].line(),
        "PASS cycle time held: 4000 cycles, 0 late; 4000 PRes polled, 0 missed"
    );
    assert!(!held.failed());
    // The CNs alone judge no cycle, and say nothing of it.
    let cn = result(
        ProbeKind::Netcycle,
        &[],
        &[],
        Some(netcycle_detail("cn", 0, 0)),
    );
    assert!(verdicts(&cn).is_empty());
    assert!(!cn.failed());
}

#[test]
fn a_result_stored_before_verdicts_gets_them_recomputed() {
    // A limit of an older version said 0 for a metric without a sample.
    let mut r = result(
        ProbeKind::Roundtrip,
        &[("screw-to-screw", stats(false, &[]))],
        &[],
        Some(roundtrip_detail("both", 0, 0, json!({"accepted": 0}))),
    );
    r.limits = vec![serde_json::from_value::<LimitCheck>(json!({
        "metric": "screw-to-screw", "limit_ns": 1_000_000, "observed_ns": 0, "exceeded": false
    }))
    .unwrap()];
    let v = verdicts(&r);
    assert_eq!(
        v[0].line(),
        "NOT MEASURED screw-to-screw: no sample, limit 1000.000us: no round trip completed: of the messages from the controller, 0 accepted"
    );
    assert!(r.failed());
    // An external tool's limit, with no summary of its metric kept, is
    // judged on the figure it stored.
    let mut rtla = result(ProbeKind::Timerlat, &[], &[], None);
    rtla.limits = vec![serde_json::from_value::<LimitCheck>(json!({
        "metric": "thread", "limit_ns": 1, "observed_ns": 2, "exceeded": true
    }))
    .unwrap()];
    assert_eq!(
        verdicts(&rtla)[0].line(),
        "FAIL thread: max 0.002us > limit 0.001us"
    );
}

#[test]
fn a_bench_names_each_cell_and_its_headline_counts_what_did_not_pass() {
    let key = |scenario: &str| CellKey {
        configuration: "base".into(),
        scenario: scenario.into(),
        deployment: "host".into(),
        probe: "netcycle".into(),
        repetition: 0,
    };
    let held = result(
        ProbeKind::Netcycle,
        &[("latency", stats(false, &[1_000]))],
        &[],
        Some(netcycle_detail("both", 10, 0)),
    );
    let mut late = held.clone();
    late.detail = Some(netcycle_detail("both", 10, 2));
    let cell = |k: CellKey, status, result| StoredCell {
        key: k,
        status,
        result,
        context: CellContext::default(),
    };
    let mut failed = cell(key("io"), CellStatus::Failed, None);
    failed.context.failure = Some("neighbour stress-ng died".into());
    let run = StoredRun {
        id: 1,
        started_at: String::new(),
        kind: "bench".into(),
        name: "netcycle".into(),
        status: "completed".into(),
        hostname: String::new(),
        kernel_release: String::new(),
        configurations: Vec::new(),
        scenarios: Vec::new(),
        unavailable: Vec::new(),
        cells: vec![
            cell(key("idle"), CellStatus::Completed, Some(held)),
            cell(key("cpu"), CellStatus::Completed, Some(late)),
            failed,
        ],
        probes: Vec::new(),
    };
    let cells = run_verdicts(&run, false);
    assert_eq!(
        failures(&cells),
        [
            "base/cpu/host/netcycle rep 0: FAIL cycle time held: 10 cycles, 2 late; 10 PRes polled, 0 missed: late cycles: 2 of 10 (allowed 0)",
            "base/io/host/netcycle rep 0: FAIL cell ran: failed: neighbour stress-ng died",
        ]
    );
    assert_eq!(headline(&cells), "2 of 5 verdicts did not pass");
    assert_eq!(headline(&cells[..1]), "every verdict passed (2 of 2)");
}

/// A stress-ng neighbour on CPU 1 asked for `--cpu 1 --cpu-load 80`, that
/// used `cpu_ms` of CPU time in 15 s, judged as the bench judges it.
fn stress_ng(cpu_ms: u64, healthy: bool) -> crate::cell::NeighbourReport {
    let argv: Vec<String> = [
        "stress-ng",
        "--cpu",
        "1",
        "--cpu-load",
        "80",
        "--metrics-brief",
    ]
    .map(String::from)
    .to_vec();
    let intent = crate::noise::stress_ng_intent(&argv, 1).unwrap();
    let mut bogo = std::collections::BTreeMap::new();
    bogo.insert("cpu".to_string(), 595);
    let (cpu_time_ns, wall_ns) = (cpu_ms * 1_000_000, 15_000_000_000);
    crate::cell::NeighbourReport {
        name: "stress-ng-probe-cpus".into(),
        argv,
        cpus: vec![1],
        cpu_time_ns,
        wall_ns,
        load: healthy
            .then(|| {
                crate::noise::LoadCheck::judge(
                    &intent,
                    intent.cpu_milli,
                    cpu_time_ns,
                    wall_ns,
                    &bogo,
                )
            })
            .flatten(),
        bogo_ops: bogo,
        healthy,
        end: if healthy {
            "stopped".into()
        } else {
            "exited early with status 1".into()
        },
        ..Default::default()
    }
}

#[test]
fn a_neighbour_short_of_its_load_fails_its_cell() {
    // 390 ms in 15 s: 0.026 CPU of the 0.80 asked.
    let v = neighbour_verdicts(&[stress_ng(390, true)]);
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].status, Status::Fail);
    assert_eq!(
        v[0].line(),
        "FAIL neighbour stress-ng-probe-cpus load: short of its load: achieved 3 % of the 80 % asked (CPU time 390.000ms in 15.000s; tolerance 20 %)"
    );
    // 80 % of the request is the edge: 9.6 s of 15 s is 0.64 CPU of 0.80.
    let v = neighbour_verdicts(&[stress_ng(9_600, true)]);
    assert_eq!(
        v[0].line(),
        "PASS neighbour stress-ng-probe-cpus load: delivered its load: achieved 64 % of the 80 % asked (CPU time 9.600s in 15.000s; tolerance 20 %)"
    );
    let v = neighbour_verdicts(&[stress_ng(9_590, true)]);
    assert_eq!(v[0].status, Status::Fail, "{}", v[0].line());
    // Its CPU time could not be judged: not measured, with the reason.
    let v = neighbour_verdicts(&[stress_ng(9_600, false)]);
    let reason = "its CPU time cannot be judged: it exited early with status 1";
    assert_eq!(
        v[0].status,
        Status::NotMeasured {
            reason: reason.into()
        }
    );
    assert_eq!(
        v[0].line(),
        format!("NOT MEASURED neighbour stress-ng-probe-cpus load: {reason}")
    );
    // A neighbour with no stated request gets no verdict.
    let flood = crate::cell::NeighbourReport {
        name: "hackbench".into(),
        argv: vec!["hackbench".into(), "-P".into()],
        healthy: true,
        ..Default::default()
    };
    assert!(neighbour_verdicts(&[flood]).is_empty());
}

#[test]
fn a_cell_with_a_neighbour_short_of_its_load_fails_its_run() {
    let r = result(
        ProbeKind::Cyclic,
        &[("latency", stats(false, &[10_000, 20_000]))],
        &[],
        None,
    );
    let mut context = CellContext::default();
    context.neighbours.push(stress_ng(390, true));
    let v = cell_verdicts(&r, &context);
    let names: Vec<&str> = v.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(
        names,
        ["latency measured", "neighbour stress-ng-probe-cpus load"]
    );
    assert!(any_failed(&v));
    context.neighbours[0] = stress_ng(12_000, true);
    assert!(!any_failed(&cell_verdicts(&r, &context)));
}

#[test]
fn a_cell_stored_before_loads_were_judged_is_judged_from_what_it_stored() {
    let mut n = stress_ng(390, true);
    n.load = None;
    assert_eq!(
        neighbour_verdicts(&[n])[0].line(),
        "FAIL neighbour stress-ng-probe-cpus load: short of its load: achieved 3 % of the 80 % asked (CPU time 390.000ms in 15.000s; tolerance 20 %)"
    );
}
