//! Tests of the round-trip table: stored rows built by hand (a `redhat`
//! bench with host and container deployments, two repetitions, a failed
//! cell, samples beyond the budget, an unavailable configuration), its
//! exact text, and the same figures in Markdown, CSV and JSON; and a run
//! read back from a database.

use std::collections::BTreeMap;

use jitterlab_core::cell::{CellContext, CellKey, CellStatus, StoredCell, StoredRun};
use jitterlab_core::result::{
    EndReason, HostSnapshot, Params, ProbeKind, RealtimeReport, RunResult, ThreadResult,
    UsageDelta, SCHEMA_VERSION,
};
use jitterlab_core::roundtrip::{Budget, BudgetInputs, BudgetVerdict};
use jitterlab_core::stats::MetricSummary;
use serde_json::json;

use crate::report::tables::{render, Format, Table, TableOptions};

/// The seed's budget: 6.7 ms.
const BUDGET: u64 = 6_700_000;

fn summary(count: u64, min: i64, p50: i64, p99: i64, max: i64) -> MetricSummary {
    MetricSummary {
        count,
        min: Some(min),
        max: Some(max),
        mean: Some(p50),
        stddev: None,
        p50: Some(p50),
        p90: None,
        p99: Some(p99),
        p99_9: None,
        p99_99: None,
        threshold: None,
        over_threshold: None,
        over_threshold_pct: None,
    }
}

/// A roundtrip cell's figures, ns: T1→T4 (min, median, p99, max), the
/// round trips and how many went beyond the budget, T2→T3 (median, max),
/// the task's jitter (min, max) and its execution time's stddev.
struct Rt {
    s2s: (i64, i64, i64, i64),
    trips: u64,
    over: u64,
    t2t3: (i64, i64),
    jitter: (i64, i64),
    exec_sd: i64,
}

fn seed_budget(own_ns: Option<u64>) -> Budget {
    Budget::seed001(
        BudgetInputs {
            opcua_ns: 500_000,
            network_ns: 100_000,
            controller_period_ns: 5_000_000,
            scan_ns: 500_000,
        },
        own_ns,
    )
}

fn result(f: &Rt, budget: Budget) -> RunResult {
    let (a, b, c, d) = f.s2s;
    let mut s2s = summary(f.trips, a, b, c, d);
    s2s.threshold = Some(budget.total_ns());
    s2s.over_threshold = Some(f.over);
    let mut metrics = BTreeMap::new();
    metrics.insert("screw-to-screw".to_string(), s2s);
    metrics.insert(
        "controller".to_string(),
        summary(f.trips, 500_000, f.t2t3.0, f.t2t3.1, f.t2t3.1),
    );
    metrics.insert(
        "jitter".to_string(),
        summary(12_000, f.jitter.0, 0, f.jitter.1, f.jitter.1),
    );
    let mut exec = summary(12_000, 540_000, 560_000, 600_000, 900_000);
    exec.stddev = Some(f.exec_sd);
    metrics.insert("exec".to_string(), exec);
    let mut verdict = BudgetVerdict::new(budget.clone());
    verdict.samples = f.trips;
    verdict.over = f.over;
    RunResult {
        schema_version: SCHEMA_VERSION,
        tool: "jitterlab".into(),
        tool_version: "0.1.0".into(),
        probe: ProbeKind::Roundtrip,
        started_at: "2026-11-24T09:00:00Z".into(),
        elapsed_ns: 60_000_000_000,
        end: EndReason::Completed,
        interrupted: false,
        signal: None,
        command_line: vec!["jitterlab".into(), "bench".into()],
        params: Params {
            period_ns: 5_000_000,
            duration_ns: Some(60_000_000_000),
            cpus: vec![3],
            scan_ns: 500_000,
            working_set_bytes: 262_144,
            threshold_ns: budget.total_ns(),
            ..Params::default()
        },
        realtime: RealtimeReport {
            realtime: true,
            defaults: vec![],
        },
        host: HostSnapshot {
            hostname: "ipc-4".into(),
            kernel_release: "6.12.0-rt5-amd64".into(),
            ..HostSnapshot::default()
        },
        threads: vec![ThreadResult {
            thread: 0,
            cpu: 3,
            tid: 4000,
            cycles: 12_000,
            releases: 12_000,
            skipped: 0,
            overruns: 0,
            metrics,
            outliers: BTreeMap::new(),
            calibration: None,
            usage: UsageDelta {
                voluntary_switches: 12_000,
                involuntary_switches: 0,
                minor_faults: 0,
                major_faults: 0,
            },
            window_rows: 60,
            dropped_rows: 0,
            counters: BTreeMap::new(),
        }],
        combined: None,
        limits: vec![],
        break_event: None,
        warnings: vec![],
        detail: Some(json!({
            "role": "both",
            "transport": "udp",
            "clock": "shared",
            "budget_terms": budget.names_line(),
            "budget_formula": budget.formula(),
            "budget": verdict,
        })),
    }
}

fn cell(
    configuration: &str,
    scenario: &str,
    deployment: &str,
    repetition: u32,
    status: CellStatus,
    f: Option<Rt>,
) -> StoredCell {
    StoredCell {
        key: CellKey {
            configuration: configuration.into(),
            scenario: scenario.into(),
            deployment: deployment.into(),
            probe: "roundtrip".into(),
            repetition,
        },
        status,
        result: f.map(|f| result(&f, seed_budget(None))),
        context: CellContext::default(),
    }
}

const NO_CACHE: &str =
    "needs cache allocation (resctrl on CAT hardware), and this machine has none";

/// Run 12: preset redhat with host and container deployments and two
/// repetitions, on a machine without cache allocation. The cells are
/// stored in the order they ran (repetition by repetition), so host and
/// container rows of one scenario are told apart only by their keys;
/// `baseline/idle/container` repetition 1 failed (its figures must not
/// count), `baseline/noisy-neighbour/host` went beyond the budget in both
/// repetitions.
fn redhat_run() -> StoredRun {
    let rt = |s2s, trips, over, t2t3, jitter, exec_sd| {
        Some(Rt {
            s2s,
            trips,
            over,
            t2t3,
            jitter,
            exec_sd,
        })
    };
    let ok = CellStatus::Completed;
    let mut cells = Vec::new();
    for rep in 0..2 {
        cells.push(cell(
            "baseline",
            "idle",
            "host",
            rep,
            ok,
            rt(
                (
                    1_002_150,
                    3_731_500,
                    5_959_700,
                    6_325_600 + rep as i64 * 1_000,
                ),
                10_700,
                0,
                (3_282_900, 5_511_400),
                (-12_300, 14_750),
                4_540,
            ),
        ));
        cells.push(cell(
            "baseline",
            "idle",
            "container",
            rep,
            if rep == 0 { ok } else { CellStatus::Failed },
            rt(
                (1_010_000, 3_800_000, 6_010_000, 6_400_000),
                10_650,
                if rep == 0 { 0 } else { 9 },
                (3_300_000, 5_600_000),
                (-16_000, 15_500),
                5_010,
            ),
        ));
        cells.push(cell(
            "baseline",
            "noisy-neighbour",
            "host",
            rep,
            ok,
            rt(
                (
                    1_022_800,
                    4_094_000,
                    6_389_800,
                    9_822_600 - rep as i64 * 500_000,
                ),
                10_050,
                2 + rep as u64,
                (3_627_000, 9_195_400),
                (-41_545, 41_783),
                15_670,
            ),
        ));
        cells.push(cell(
            "baseline",
            "noisy-neighbour",
            "container",
            rep,
            ok,
            rt(
                (1_015_000, 4_000_000, 6_300_000, 6_650_000),
                10_100,
                0,
                (3_600_000, 6_000_000),
                (-29_000, 28_000),
                12_000,
            ),
        ));
    }
    StoredRun {
        id: 12,
        started_at: "2026-11-24T09:00:00Z".into(),
        kind: "bench".into(),
        name: "redhat".into(),
        status: "completed".into(),
        hostname: "ipc-4".into(),
        kernel_release: "6.12.0-rt5-amd64".into(),
        configurations: vec!["baseline".into()],
        scenarios: vec!["idle".into(), "noisy-neighbour".into()],
        unavailable: vec![("cache-partitioned".into(), NO_CACHE.into())],
        cells,
        probes: Vec::new(),
    }
}

fn only_roundtrip() -> TableOptions {
    TableOptions {
        baseline: None,
        tables: vec![Table::Kind("roundtrip")],
        explain: false,
    }
}

#[test]
fn the_round_trip_table_in_text() {
    let got = render(&redhat_run(), &only_roundtrip(), Format::Text).unwrap();
    assert_eq!(
        got,
        "run          12 (bench redhat)
started      2026-11-24T09:00:00Z
host         ipc-4
kernel       6.12.0-rt5-amd64
status       completed
unavailable  cache-partitioned: needs cache allocation (resctrl on CAT hardware), and this machine has none

Round trip (Red Hat and Intel): screw to screw against the worst-case budget
cell                                                   reps  T1→T4 min     median        p99               max  over budget  T2→T3 median  T2→T3 max  max |jitter|  exec stddev  releases  cycles  skipped  overruns
baseline/idle/host/roundtrip                              2  1002.2 µs  3731.5 µs  5959.7 µs  6325.6–6326.6 µs   0 of 21400     3282.9 µs  5511.4 µs       14.8 µs       4.5 µs     12000   12000        0         0
baseline/idle/container/roundtrip                       1/2  1010.0 µs  3800.0 µs  6010.0 µs         6400.0 µs   0 of 10650     3300.0 µs  5600.0 µs       16.0 µs       5.0 µs     12000   12000        0         0
baseline/noisy-neighbour/host/roundtrip                   2  1022.8 µs  4094.0 µs  6389.8 µs  9322.6–9822.6 µs   5 of 20100     3627.0 µs  9195.4 µs       41.8 µs      15.7 µs     12000   12000        0         0
baseline/noisy-neighbour/container/roundtrip              2  1015.0 µs  4000.0 µs  6300.0 µs         6650.0 µs   0 of 20200     3600.0 µs  6000.0 µs       29.0 µs      12.0 µs     12000   12000        0         0
cache-partitioned/idle/host/roundtrip                     -        N/A        N/A        N/A               N/A          N/A           N/A        N/A           N/A          N/A       N/A     N/A      N/A       N/A
cache-partitioned/idle/container/roundtrip                -        N/A        N/A        N/A               N/A          N/A           N/A        N/A           N/A          N/A       N/A     N/A      N/A       N/A
cache-partitioned/noisy-neighbour/host/roundtrip          -        N/A        N/A        N/A               N/A          N/A           N/A        N/A           N/A          N/A       N/A     N/A      N/A       N/A
cache-partitioned/noisy-neighbour/container/roundtrip     -        N/A        N/A        N/A               N/A          N/A           N/A        N/A           N/A          N/A       N/A     N/A      N/A       N/A
N/A cache-partitioned: needs cache allocation (resctrl on CAT hardware), and this machine has none
k/n in reps: only k of n repetitions completed; the figures are theirs (see the explanations for the others)
T1→T4: the I/O simulator's input change to the I/O tick that applies the output computed from it (screw to screw); over budget: T1→T4 samples beyond the budget, of all round trips (summed over repetitions); T2→T3: the controller's receive stamp of the change to its publish of the output; max |jitter|: the controller task's largest periodic jitter by magnitude; exec stddev: the standard deviation of its execution time
the controller's schedule: releases: cycles the schedule released; cycles: those measured, the only ones the figures come from; skipped: releases passed over after an overrun (never caught up); overruns: cycles that ended after the next release
worst-case round trip (Red Hat and Intel), the budget every T1→T4 sample is checked against:
OPC UA + Network + Controller rate + Controller scan time + Network + OPC UA = Worst-case
500 µs + 100 µs + 5000 µs + 500 µs + 100 µs + 500 µs = 6.7 ms
verdict: FAILED: 5 samples beyond 6.7 ms (of 72350 round trips; baseline/noisy-neighbour/host/roundtrip 5)
"
    );
}

#[test]
fn a_run_that_held_its_budget_says_so_and_the_table_is_chosen_by_default() {
    let mut run = redhat_run();
    run.cells
        .retain(|c| c.key.scenario == "idle" && c.status == CellStatus::Completed);
    let got = render(&run, &TableOptions::default(), Format::Text).unwrap();
    // Chosen without asking, after the latency table.
    let latency = got.find("\nLatency\n").expect("latency table");
    let rt = got
        .find("\nRound trip (Red Hat and Intel)")
        .expect("round-trip table");
    assert!(latency < rt, "{got}");
    assert!(
        got.contains("\nverdict: held (none of 32050 round trips beyond 6.7 ms)\n"),
        "{got}"
    );
    // A run without round trips has no such table, and asking for it says why.
    run.cells.clear();
    let got = render(&run, &only_roundtrip(), Format::Text).unwrap();
    assert!(
        got.contains("\nno round-trip table: no cell of run 12 ran the roundtrip probe\n"),
        "{got}"
    );
}

#[test]
fn a_budget_of_ones_own_and_two_budgets_get_a_line_each() {
    let mut run = redhat_run();
    run.cells.retain(|c| c.key.deployment == "host");
    for c in run.cells.iter_mut().filter(|c| c.key.scenario == "idle") {
        let r = c.result.as_mut().unwrap();
        let f = Rt {
            s2s: (1_000_000, 3_000_000, 5_000_000, 5_500_000),
            trips: 100,
            over: 1,
            t2t3: (3_000_000, 5_000_000),
            jitter: (-1_000, 1_000),
            exec_sd: 1_000,
        };
        *r = result(&f, seed_budget(Some(5_250_500)));
    }
    let got = render(&run, &only_roundtrip(), Format::Text).unwrap();
    let notes: Vec<&str> = got
        .lines()
        .skip_while(|l| !l.starts_with("worst-case"))
        .collect();
    assert_eq!(
        notes,
        [
            "worst-case round trip (Red Hat and Intel) of baseline/idle/host/roundtrip:",
            "OPC UA + Network + Controller rate + Controller scan time + Network + OPC UA = Worst-case",
            "500 µs + 100 µs + 5000 µs + 500 µs + 100 µs + 500 µs = 6.7 ms; budget given: 5.250ms",
            "verdict: FAILED: 2 samples beyond 5250.5 µs (of 200 round trips; baseline/idle/host/roundtrip 2)",
            "worst-case round trip (Red Hat and Intel) of baseline/noisy-neighbour/host/roundtrip:",
            "OPC UA + Network + Controller rate + Controller scan time + Network + OPC UA = Worst-case",
            "500 µs + 100 µs + 5000 µs + 500 µs + 100 µs + 500 µs = 6.7 ms",
            "verdict: FAILED: 5 samples beyond 6.7 ms (of 20100 round trips; baseline/noisy-neighbour/host/roundtrip 5)",
        ]
    );
}

#[test]
fn the_same_rows_in_markdown_csv_and_json() {
    let run = redhat_run();
    let md = render(&run, &only_roundtrip(), Format::Md).unwrap();
    assert!(md.contains(
        "### Round trip (Red Hat and Intel): screw to screw against the worst-case budget\n\n\
         | cell | reps | T1→T4 min | median | p99 | max | over budget | T2→T3 median | T2→T3 max | max \\|jitter\\| | exec stddev | releases | cycles | skipped | overruns |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n\
         | baseline/idle/host/roundtrip | 2 | 1002.2 µs | 3731.5 µs | 5959.7 µs | 6325.6–6326.6 µs | 0 of 21400 | 3282.9 µs | 5511.4 µs | 14.8 µs | 4.5 µs | 12000 | 12000 | 0 | 0 |\n"
    ), "{md}");
    assert!(
        md.contains("\n\nOPC UA + Network + Controller rate + Controller scan time + Network + OPC UA = Worst-case\n\n500 µs + 100 µs + 5000 µs + 500 µs + 100 µs + 500 µs = 6.7 ms\n\n"),
        "{md}"
    );

    let csv = render(&run, &only_roundtrip(), Format::Csv).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    let header: Vec<&str> = lines[0].split(',').collect();
    let tail = [
        "budget_ns",
        "t1_t4_min_ns_min",
        "t1_t4_min_ns_max",
        "t1_t4_p50_ns_min",
        "t1_t4_p50_ns_max",
        "t1_t4_p99_ns_min",
        "t1_t4_p99_ns_max",
        "t1_t4_max_ns_min",
        "t1_t4_max_ns_max",
        "over_budget",
        "round_trips",
        "t2_t3_p50_ns_min",
        "t2_t3_p50_ns_max",
        "t2_t3_max_ns_min",
        "t2_t3_max_ns_max",
        "max_abs_jitter_ns_min",
        "max_abs_jitter_ns_max",
        "exec_stddev_ns_min",
        "exec_stddev_ns_max",
    ];
    assert_eq!(header[header.len() - tail.len()..], tail);
    assert_eq!(lines.len(), 1 + 8);
    let row = |i: usize| -> Vec<&str> { lines[i].split(',').collect() };
    let noisy = row(3);
    assert_eq!(
        noisy[..8],
        [
            "roundtrip",
            "baseline",
            "noisy-neighbour",
            "host",
            "roundtrip",
            "2",
            "2",
            "completed"
        ]
    );
    assert_eq!(
        noisy[noisy.len() - tail.len()..],
        [
            "6700000", "1022800", "1022800", "4094000", "4094000", "6389800", "6389800", "9322600",
            "9822600", "5", "20100", "3627000", "3627000", "9195400", "9195400", "41783", "41783",
            "15670", "15670"
        ]
    );
    // The reason has a comma: quoted.
    assert!(
        lines[5].starts_with(&format!(
            "roundtrip,cache-partitioned,idle,host,roundtrip,0,0,unavailable,\"{NO_CACHE}\","
        )),
        "{}",
        lines[5]
    );

    let doc: serde_json::Value =
        serde_json::from_str(&render(&run, &only_roundtrip(), Format::Json).unwrap()).unwrap();
    let t = &doc["tables"][0];
    assert_eq!(t["name"], "roundtrip");
    let cols: Vec<&str> = t["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    let r: BTreeMap<&str, &serde_json::Value> = cols
        .iter()
        .copied()
        .zip(t["rows"][1].as_array().unwrap())
        .collect();
    assert_eq!(r["deployment"], "container");
    assert_eq!(r["reps"], 2);
    assert_eq!(r["completed"], 1);
    assert_eq!(r["status"], "completed+failed");
    assert_eq!(r["over_budget"], 0);
    assert_eq!(r["round_trips"], 10_650);
    assert_eq!(r["t1_t4_p99_ns_max"], 6_010_000);
    assert_eq!(r["max_abs_jitter_ns_min"], 16_000);
    assert_eq!(r["budget_ns"], BUDGET);
    let notes = t["notes"].as_array().unwrap();
    assert_eq!(
        notes.last().unwrap(),
        "verdict: FAILED: 5 samples beyond 6.7 ms (of 72350 round trips; baseline/noisy-neighbour/host/roundtrip 5)"
    );
}

/// The rows go through the database as a bench stores them and come back
/// with the same table: the verdict and the budget lines are read from the
/// stored `detail`.
#[test]
fn a_run_read_back_from_the_database_renders_the_same_table() {
    let run = redhat_run();
    let back = crate::report::tables::tests::through_the_store(&run, json!({}));
    assert_eq!(back, run);
    for f in [Format::Text, Format::Md, Format::Csv, Format::Json] {
        assert_eq!(
            render(&back, &only_roundtrip(), f).unwrap(),
            render(&run, &only_roundtrip(), f).unwrap()
        );
    }
}
