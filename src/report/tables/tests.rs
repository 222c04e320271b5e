//! Tests of the tables: snapshots of every format for three fixtures, and
//! the figures checked against values computed by hand.
//!
//! The snapshots are the files under `tests/fixtures/reports/`; they are what
//! users see, so read them when they change. To rewrite them after a wanted
//! change, run the tests with `UPDATE_SNAPSHOTS=1`:
//!
//! ```text
//! UPDATE_SNAPSHOTS=1 cargo test report::tables
//! ```
//!
//! then review `git diff tests/fixtures/reports/`.
//!
//! The documents cited here are listed in `docs/design.md`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use jitterlab_core::cell::{
    CellContext, CellKey, CellStatus, CpuCounters, NeighbourReport, StoredCell, StoredRun,
};
use jitterlab_core::result::{
    EndReason, HostSnapshot, Params, ProbeKind, RealtimeReport, RunResult, ThreadResult,
    UsageDelta, SCHEMA_VERSION,
};
use jitterlab_core::stats::MetricSummary;

use super::*;
use crate::error::BadInput;

// ---------------------------------------------------------------------------
// Fixtures.

/// Cycles of a 60 s cell at 4 ms.
const COUNT: u64 = 15_000;
/// The fixture's period, T0.
const T0: u64 = 4_000_000;
/// The fixture's latency threshold.
const THRESHOLD: u64 = 100_000;

fn summary(min: i64, p50: i64, max: i64, mean: i64, count: u64) -> MetricSummary {
    MetricSummary {
        count,
        min: Some(min),
        max: Some(max),
        mean: Some(mean),
        stddev: None,
        p50: Some(p50),
        p90: None,
        p99: None,
        p99_9: None,
        p99_99: None,
        threshold: None,
        over_threshold: None,
        over_threshold_pct: None,
    }
}

fn with_threshold(mut s: MetricSummary, threshold: u64, over: u64) -> MetricSummary {
    s.threshold = Some(threshold);
    s.over_threshold = Some(over);
    s.over_threshold_pct = Some(100.0 * over as f64 / s.count as f64);
    s
}

/// A cyclic cell's figures, in ns: latency (min, p50, max) and how many
/// samples exceeded 100 µs, jitter (min, max), period (min, max), exec (max,
/// mean).
struct Cyc {
    lat: (i64, i64, i64),
    over: u64,
    jit: (i64, i64),
    per: (i64, i64),
    exec: (i64, i64),
}

fn cyclic_metrics(c: &Cyc) -> BTreeMap<String, MetricSummary> {
    let mut m = BTreeMap::new();
    let (lmin, lp50, lmax) = c.lat;
    m.insert(
        "latency".to_string(),
        with_threshold(summary(lmin, lp50, lmax, lp50, COUNT), THRESHOLD, c.over),
    );
    m.insert(
        "jitter".to_string(),
        summary(c.jit.0, 0, c.jit.1, 0, COUNT - 1),
    );
    m.insert(
        "period".to_string(),
        summary(c.per.0, T0 as i64, c.per.1, T0 as i64, COUNT - 1),
    );
    m.insert(
        "exec".to_string(),
        summary(c.exec.1 - 20_000, c.exec.1, c.exec.0, c.exec.1, COUNT),
    );
    m
}

fn result(
    probe: ProbeKind,
    period_ns: u64,
    threads: Vec<(usize, BTreeMap<String, MetricSummary>, UsageDelta)>,
    combined: Option<BTreeMap<String, MetricSummary>>,
) -> RunResult {
    RunResult {
        schema_version: SCHEMA_VERSION,
        tool: "jitterlab".into(),
        tool_version: "0.1.0".into(),
        probe,
        started_at: "2026-11-21T12:00:00Z".into(),
        elapsed_ns: 60_000_000_000,
        end: EndReason::Completed,
        interrupted: false,
        signal: None,
        command_line: vec!["jitterlab".into(), "bench".into()],
        params: Params {
            period_ns,
            duration_ns: Some(60_000_000_000),
            cpus: threads.iter().map(|t| t.0).collect(),
            scan_ns: 100_000,
            working_set_bytes: 262_144,
            threshold_ns: THRESHOLD,
            ..Params::default()
        },
        realtime: RealtimeReport {
            realtime: true,
            defaults: vec![],
        },
        host: HostSnapshot {
            hostname: "plc-7".into(),
            kernel_release: "6.12.0-rt5-amd64".into(),
            ..HostSnapshot::default()
        },
        threads: threads
            .into_iter()
            .enumerate()
            .map(|(i, (cpu, metrics, usage))| ThreadResult {
                thread: i as u32,
                cpu,
                tid: 4000 + i as i32,
                cycles: COUNT,
                releases: COUNT,
                skipped: 0,
                overruns: 0,
                metrics,
                outliers: BTreeMap::new(),
                calibration: None,
                usage,
                window_rows: 60,
                dropped_rows: 0,
                counters: BTreeMap::new(),
            })
            .collect(),
        combined,
        limits: vec![],
        break_event: None,
        warnings: vec![],
        detail: None,
    }
}

fn usage(voluntary: u64, involuntary: u64) -> UsageDelta {
    UsageDelta {
        voluntary_switches: voluntary,
        involuntary_switches: involuntary,
        minor_faults: 0,
        major_faults: 0,
    }
}

fn key(configuration: &str, scenario: &str, repetition: u32) -> CellKey {
    CellKey {
        configuration: configuration.into(),
        scenario: scenario.into(),
        deployment: "host".into(),
        probe: "cyclic".into(),
        repetition,
    }
}

fn counters(steal_ns: u64, lines: &[(&str, u64)], softirqs: &[(&str, u64)]) -> CpuCounters {
    CpuCounters {
        cpu: 1,
        steal_ns,
        irqs: lines.iter().map(|l| l.1).sum(),
        irq_lines: lines.iter().map(|(n, v)| (n.to_string(), *v)).collect(),
        softirqs: softirqs.iter().map(|(n, v)| (n.to_string(), *v)).collect(),
    }
}

fn stress(args: &[&str], cpu_time_ns: u64, bogo: &[(&str, u64)]) -> NeighbourReport {
    let mut argv = vec!["stress-ng".to_string()];
    argv.extend(args.iter().map(|a| a.to_string()));
    NeighbourReport {
        name: "stress-ng".into(),
        argv,
        cpus: vec![0],
        pgid: 5000,
        cpu_time_ns,
        wall_ns: 60_000_000_000,
        bogo_ops: bogo.iter().map(|(n, v)| (n.to_string(), *v)).collect(),
        end: "stopped".into(),
        healthy: true,
        stderr_tail: vec![],
        load: None,
    }
}

/// What the bench saw around a cell of each scenario.
fn context(scenario: &str) -> CellContext {
    match scenario {
        "idle" => CellContext {
            cpus: vec![counters(
                0,
                &[("LOC", 15_000), ("RES", 10), ("24", 20)],
                &[
                    ("TIMER", 15_000),
                    ("RCU", 40),
                    ("SCHED", 12),
                    ("HRTIMER", 3),
                ],
            )],
            net_rx: BTreeMap::from([(0, 0), (1, 0)]),
            ..CellContext::default()
        },
        "cpu" => CellContext {
            cpus: vec![counters(
                0,
                &[("LOC", 15_000), ("RES", 310), ("CAL", 12)],
                &[("TIMER", 15_000), ("RCU", 95), ("SCHED", 300)],
            )],
            net_rx: BTreeMap::from([(0, 0), (1, 0)]),
            neighbours: vec![stress(
                &["--cpu", "1", "--cpu-load", "100"],
                59_400_000_000,
                &[("cpu", 1_234_567)],
            )],
            ..CellContext::default()
        },
        _ => CellContext {
            cpus: vec![counters(
                1_250_000,
                &[("LOC", 15_000), ("RES", 1_210), ("TLB", 640), ("CAL", 33)],
                &[
                    ("TIMER", 15_000),
                    ("RCU", 220),
                    ("SCHED", 1_300),
                    ("NET_RX", 5),
                ],
            )],
            net_rx: BTreeMap::from([(0, 42), (1, 5)]),
            neighbours: vec![stress(
                &[
                    "--cpu",
                    "8",
                    "--cache",
                    "4",
                    "--vm",
                    "4",
                    "--vm-bytes",
                    "128M",
                ],
                58_200_000_000,
                &[("cpu", 800_000), ("cache", 4_000), ("vm", 96_000)],
            )],
            ..CellContext::default()
        },
    }
}

fn cyclic_cell(
    configuration: &str,
    scenario: &str,
    rep: u32,
    c: Cyc,
    involuntary: u64,
) -> StoredCell {
    StoredCell {
        key: key(configuration, scenario, rep),
        status: CellStatus::Completed,
        result: Some(result(
            ProbeKind::Cyclic,
            T0,
            vec![(1, cyclic_metrics(&c), usage(COUNT, involuntary))],
            None,
        )),
        context: context(scenario),
    }
}

/// Run 7: bench `codesys-tcc`, configurations `baseline` and `tcc` (`cat`
/// unavailable), scenarios `idle`, `cpu`, `codesys`, two repetitions of a
/// cyclic probe at 4 ms; `tcc/codesys` repetition 1 failed (its neighbour
/// died; its figures must not show).
fn fixture_run() -> StoredRun {
    let c = |lat, over, jit, per, exec| Cyc {
        lat,
        over,
        jit,
        per,
        exec,
    };
    let mut cells = vec![
        cyclic_cell(
            "baseline",
            "idle",
            0,
            c(
                (2_100, 3_050, 21_000),
                0,
                (-20_100, 18_400),
                (3_979_900, 4_018_400),
                (301_000, 120_000),
            ),
            0,
        ),
        cyclic_cell(
            "baseline",
            "idle",
            1,
            c(
                (2_050, 3_100, 24_400),
                0,
                (-22_000, 21_300),
                (3_978_000, 4_021_300),
                (310_500, 121_000),
            ),
            0,
        ),
        cyclic_cell(
            "baseline",
            "cpu",
            0,
            c(
                (2_300, 4_200, 88_000),
                0,
                (-85_000, 86_000),
                (3_915_000, 4_086_000),
                (905_000, 125_500),
            ),
            3,
        ),
        cyclic_cell(
            "baseline",
            "cpu",
            1,
            c(
                (2_250, 4_150, 102_300),
                1,
                (-90_500, 99_800),
                (3_909_500, 4_099_800),
                (950_000, 126_000),
            ),
            4,
        ),
        cyclic_cell(
            "baseline",
            "codesys",
            0,
            c(
                (2_400, 5_000, 163_000),
                3,
                (-185_000, 163_000),
                (3_815_000, 4_163_000),
                (1_279_000, 128_000),
            ),
            12,
        ),
        cyclic_cell(
            "baseline",
            "codesys",
            1,
            c(
                (2_350, 4_900, 150_000),
                2,
                (-170_000, 150_000),
                (3_830_000, 4_150_000),
                (1_150_000, 127_400),
            ),
            9,
        ),
        cyclic_cell(
            "tcc",
            "idle",
            0,
            c(
                (1_900, 2_600, 12_000),
                0,
                (-10_050, 9_800),
                (3_989_950, 4_009_800),
                (150_000, 100_000),
            ),
            0,
        ),
        cyclic_cell(
            "tcc",
            "idle",
            1,
            c(
                (1_950, 2_650, 11_800),
                0,
                (-9_000, 10_400),
                (3_991_000, 4_010_400),
                (152_500, 100_500),
            ),
            0,
        ),
        cyclic_cell(
            "tcc",
            "cpu",
            0,
            c(
                (2_000, 3_000, 40_000),
                0,
                (-41_000, 38_000),
                (3_959_000, 4_038_000),
                (400_000, 105_000),
            ),
            1,
        ),
        cyclic_cell(
            "tcc",
            "cpu",
            1,
            c(
                (2_050, 3_050, 45_500),
                0,
                (-44_000, 43_500),
                (3_956_000, 4_043_500),
                (420_000, 105_200),
            ),
            0,
        ),
        cyclic_cell(
            "tcc",
            "codesys",
            0,
            c(
                (2_100, 3_500, 60_000),
                0,
                (-66_000, 60_000),
                (3_934_000, 4_060_000),
                (507_000, 110_000),
            ),
            2,
        ),
        cyclic_cell(
            "tcc",
            "codesys",
            1,
            c(
                (2_000, 3_400, 950_000),
                1_000,
                (-900_000, 950_000),
                (3_100_000, 4_950_000),
                (990_000, 300_000),
            ),
            40,
        ),
    ];
    // The baseline's first repetition under the codesys load overran every
    // cycle it ran: its figures came from 82 of 2507 releases (as
    // [Intel CODESYS]'s baseline row did), which its row must say.
    let overran = cells
        .iter_mut()
        .find(|c| c.key.configuration == "baseline" && c.key.scenario == "codesys")
        .unwrap();
    let t = &mut overran.result.as_mut().unwrap().threads[0];
    (t.releases, t.cycles, t.skipped, t.overruns) = (2_507, 82, 2_425, 82);
    let failed = cells.last_mut().unwrap();
    failed.status = CellStatus::Failed;
    failed.context.failure =
        Some("neighbour stress-ng exited early with status 2 after 0.8 s".into());
    let n = &mut failed.context.neighbours[0];
    n.healthy = false;
    n.end = "exited early with status 2".into();
    n.cpu_time_ns = 790_000_000;
    n.wall_ns = 800_000_000;
    n.bogo_ops.clear();
    n.stderr_tail = vec![
        "stress-ng: error: [4242] stress-ng-vm: cannot allocate 128M: Cannot allocate memory"
            .into(),
        "stress-ng: info: [4242] unsuccessful run completed in 0.80s".into(),
    ];
    StoredRun {
        id: 7,
        started_at: "2026-11-21T12:00:00Z".into(),
        kind: "bench".into(),
        name: "codesys-tcc".into(),
        status: "completed".into(),
        hostname: "plc-7".into(),
        kernel_release: "6.12.0-rt5-amd64".into(),
        configurations: vec!["baseline".into(), "tcc".into()],
        scenarios: vec!["idle".into(), "cpu".into(), "codesys".into()],
        unavailable: vec![(
            "cat".into(),
            "no L3 cache allocation on this CPU (/sys/fs/resctrl has no L3 schemata)".into(),
        )],
        cells,
        probes: Vec::new(),
    }
}

/// Run 3: one `jitterlab run wakeup` on CPUs 0-1: two threads, figures in
/// `combined`, threshold 50 µs.
fn single_run() -> StoredRun {
    let lat = |min, p50, max, over, count| {
        let mut m = BTreeMap::new();
        m.insert(
            "latency".to_string(),
            with_threshold(summary(min, p50, max, p50, count), 50_000, over),
        );
        m
    };
    let r = result(
        ProbeKind::Wakeup,
        1_000_000,
        vec![
            (0, lat(1_800, 2_700, 54_321, 3, 60_000), usage(60_000, 7)),
            (1, lat(1_900, 2_600, 31_000, 0, 60_000), usage(60_000, 0)),
        ],
        Some(lat(1_800, 2_650, 54_321, 3, 120_000)),
    );
    let cpu = |cpu, steal_ns| CpuCounters {
        cpu,
        steal_ns,
        irqs: 60_500,
        irq_lines: BTreeMap::from([("LOC".to_string(), 60_000), ("RES".to_string(), 500)]),
        softirqs: BTreeMap::from([("TIMER".to_string(), 60_000)]),
    };
    StoredRun {
        id: 3,
        started_at: "2026-11-20T09:30:00Z".into(),
        kind: "run".into(),
        name: "wakeup".into(),
        status: "completed".into(),
        hostname: "plc-7".into(),
        kernel_release: "6.12.0-rt5-amd64".into(),
        configurations: vec!["default".into()],
        scenarios: vec!["none".into()],
        unavailable: vec![],
        cells: vec![StoredCell {
            key: CellKey {
                configuration: "default".into(),
                scenario: "none".into(),
                deployment: "host".into(),
                probe: "wakeup".into(),
                repetition: 0,
            },
            status: CellStatus::Completed,
            result: Some(r),
            context: CellContext {
                cpus: vec![cpu(0, 0), cpu(1, 350_000)],
                net_rx: BTreeMap::from([(0, 12), (1, 0)]),
                ..CellContext::default()
            },
        }],
        probes: Vec::new(),
    }
}

/// Run 8: run 7 again after a change: `tcc/cpu` was not run, `cat` became
/// available and ran `idle` once, `baseline/idle`'s max latency fell to
/// three quarters, and `tcc/codesys` completed both repetitions.
fn later_run() -> StoredRun {
    let mut b = fixture_run();
    b.id = 8;
    b.started_at = "2026-11-22T08:00:00Z".into();
    b.cells
        .retain(|c| !(c.key.configuration == "tcc" && c.key.scenario == "cpu"));
    for c in &mut b.cells {
        let m = &mut c.result.as_mut().unwrap().threads[0].metrics;
        if c.key.configuration == "baseline" && c.key.scenario == "idle" {
            let l = m.get_mut("latency").unwrap();
            // 21 000 → 15 750 and 24 400 → 18 300: 75 % of A at both ends.
            l.max = Some(l.max.unwrap() * 3 / 4);
        }
        if c.key.configuration == "tcc" && c.key.scenario == "codesys" && c.key.repetition == 1 {
            *c = cyclic_cell(
                "tcc",
                "codesys",
                1,
                Cyc {
                    lat: (2_000, 3_400, 58_000),
                    over: 0,
                    jit: (-61_000, 58_000),
                    per: (3_939_000, 4_058_000),
                    exec: (498_000, 109_000),
                },
                1,
            );
        }
    }
    b.configurations.push("cat".into());
    b.unavailable.clear();
    b.cells.push(cyclic_cell(
        "cat",
        "idle",
        0,
        Cyc {
            lat: (1_700, 2_300, 9_000),
            over: 0,
            jit: (-7_000, 6_500),
            per: (3_993_000, 4_006_500),
            exec: (120_000, 57_000),
        },
        0,
    ));
    b
}

// ---------------------------------------------------------------------------
// Snapshots.

fn snapshot(name: &str, got: &str) {
    let path: PathBuf = [env!("CARGO_MANIFEST_DIR"), "tests/fixtures/reports", name]
        .iter()
        .collect();
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; write it with UPDATE_SNAPSHOTS=1 cargo test and review it",
            path.display()
        )
    });
    assert_eq!(
        got,
        want,
        "{} differs; if the change is wanted, rewrite it with UPDATE_SNAPSHOTS=1 and review the diff\n--- got ---\n{got}",
        path.display()
    );
}

const FORMATS: [(Format, &str); 4] = [
    (Format::Text, "txt"),
    (Format::Md, "md"),
    (Format::Csv, "csv"),
    (Format::Json, "json"),
];

#[test]
fn bench_run_snapshots() {
    let run = fixture_run();
    for (f, ext) in FORMATS {
        let got = render(&run, &TableOptions::default(), f).unwrap();
        snapshot(&format!("bench.{ext}"), &got);
    }
}

#[test]
fn single_run_snapshots() {
    let run = single_run();
    for (f, ext) in FORMATS {
        let got = render(&run, &TableOptions::default(), f).unwrap();
        snapshot(&format!("single.{ext}"), &got);
    }
}

#[test]
fn compare_snapshots() {
    let (a, b) = (fixture_run(), later_run());
    for (f, ext) in FORMATS {
        let got = compare(&a, &b, f).unwrap();
        snapshot(&format!("compare.{ext}"), &got);
    }
}

// ---------------------------------------------------------------------------
// Figures by hand.

fn json_of(run: &StoredRun, opts: &TableOptions) -> serde_json::Value {
    serde_json::from_str(&render(run, opts, Format::Json).unwrap()).unwrap()
}

/// The machine row of `table` whose key columns are `key`, as a map.
fn row(
    doc: &serde_json::Value,
    table: &str,
    title_has: &str,
    key: [&str; 2],
) -> BTreeMap<String, serde_json::Value> {
    let t = doc["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == table && t["title"].as_str().unwrap().contains(title_has))
        .unwrap_or_else(|| panic!("no {table} table titled …{title_has}…"));
    let cols: Vec<&str> = t["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    let r = t["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r[0] == key[0] && r[1] == key[1])
        .unwrap_or_else(|| panic!("no row {key:?}"));
    cols.iter()
        .zip(r.as_array().unwrap())
        .map(|(c, v)| (c.to_string(), v.clone()))
        .collect()
}

fn text_line<'a>(text: &'a str, title: &str, first: &str) -> &'a str {
    let from = text.find(title).unwrap_or_else(|| panic!("no {title}"));
    text[from..]
        .lines()
        .find(|l| l.starts_with(first))
        .unwrap_or_else(|| panic!("no line {first} under {title}"))
}

#[test]
fn vs_baseline_is_the_ratio_of_minima_and_of_maxima() {
    let run = fixture_run();
    let doc = json_of(&run, &TableOptions::default());
    let tcc = row(
        &doc,
        "configurations",
        "scenario codesys",
        ["tcc", "codesys"],
    );
    // tcc/codesys: only repetition 0 completed (max jitter 60 µs); baseline's
    // max jitter is 150 µs and 163 µs: 60/163 = 36.8 %, 60/150 = 40.0 %.
    assert_eq!(tcc["max_jitter_ns_min"], 60_000);
    assert_eq!(tcc["max_jitter_ns_max"], 60_000);
    assert_eq!(tcc["max_jitter_vs_baseline_pct_min"], 36.8);
    assert_eq!(tcc["max_jitter_vs_baseline_pct_max"], 40.0);
    // Min jitter −66 µs against −185 and −170: 35.7 % and 38.8 %.
    assert_eq!(tcc["min_jitter_vs_baseline_pct_min"], 35.7);
    assert_eq!(tcc["min_jitter_vs_baseline_pct_max"], 38.8);
    // Max cycle time 507 µs against 1150 and 1279: 44.1 % and 39.6 %.
    assert_eq!(tcc["max_exec_vs_baseline_pct_min"], 39.6);
    assert_eq!(tcc["max_exec_vs_baseline_pct_max"], 44.1);
    // Average cycle time 110 µs against 127.4 and 128: 86.3 % and 85.9 %.
    assert_eq!(tcc["mean_exec_vs_baseline_pct_min"], 85.9);
    assert_eq!(tcc["mean_exec_vs_baseline_pct_max"], 86.3);
    assert_eq!(tcc["reps"], 2);
    assert_eq!(tcc["completed"], 1);
    assert_eq!(tcc["status"], "completed+failed");
    let base = row(
        &doc,
        "configurations",
        "scenario codesys",
        ["baseline", "codesys"],
    );
    assert_eq!(base["max_jitter_vs_baseline_pct_min"], 100.0);
    assert_eq!(base["max_jitter_vs_baseline_pct_max"], 100.0);
    let text = render(&run, &TableOptions::default(), Format::Text).unwrap();
    assert_eq!(
        text_line(&text, "Configurations — scenario codesys", "tcc"),
        "tcc             1/2         60.0 µs   36.8–40.0%          -66.0 µs   35.7–38.8%          507.0 µs   39.6–44.1%        110.0 µs   85.9–86.3%       15000     15000        0         0"
    );
    assert_eq!(
        text_line(&text, "Configurations — scenario codesys", "baseline"),
        "baseline          2  150.0–163.0 µs       100.0%  -185.0–-170.0 µs       100.0%  1150.0–1279.0 µs       100.0%  127.4–128.0 µs       100.0%  2507–15000  82–15000   0–2425      0–82"
    );
}

/// [Intel CODESYS]'s baseline row came from 82 of 2507 releases and no report
/// said so: every row gives its releases, cycles, skipped releases and
/// overruns, and a note names the repetition that skipped.
#[test]
fn rows_say_how_many_cycles_their_figures_came_from() {
    let run = fixture_run();
    let doc = json_of(&run, &TableOptions::default());
    for title in ["scenario codesys", "configuration baseline", "Latency"] {
        let table = if title.starts_with("scenario") {
            "configurations"
        } else if title == "Latency" {
            "latency"
        } else {
            "conditions"
        };
        let base = row(&doc, table, title, ["baseline", "codesys"]);
        let names = ["releases", "cycles", "skipped", "overruns"];
        let got: Vec<&serde_json::Value> = names
            .iter()
            .flat_map(|n| [&base[&format!("{n}_min")], &base[&format!("{n}_max")]])
            .collect();
        assert_eq!(
            got,
            [2_507, 15_000, 82, 15_000, 0, 2_425, 0, 82]
                .map(serde_json::Value::from)
                .iter()
                .collect::<Vec<_>>(),
            "{table}"
        );
    }
    let text = render(&run, &TableOptions::default(), Format::Text).unwrap();
    assert_eq!(
        text.matches("\nbaseline/codesys/host/cyclic, repetition 0: the figures come from 82 of 2507 releases (2425 skipped after 82 overruns)\n").count(),
        3,
        "{text}"
    );
    assert_eq!(
        text.matches("\nreleases: cycles the schedule released; cycles: those measured, the only ones the figures come from; skipped: releases passed over after an overrun (never caught up); overruns: cycles that ended after the next release\n").count(),
        6,
        "{text}"
    );
}

#[test]
fn another_baseline_and_a_zero_baseline() {
    let mut run = fixture_run();
    let opts = TableOptions {
        baseline: Some("tcc".into()),
        tables: vec![Table::Configurations],
        explain: false,
    };
    let doc = json_of(&run, &opts);
    let base = row(
        &doc,
        "configurations",
        "scenario idle",
        ["baseline", "idle"],
    );
    // baseline/idle max cycle time 301 and 310.5 µs against tcc's 150 and
    // 152.5 µs: 200.7 % and 203.6 %.
    assert_eq!(base["max_exec_vs_baseline_pct_min"], 200.7);
    assert_eq!(base["max_exec_vs_baseline_pct_max"], 203.6);
    assert_eq!(base["baseline"], "tcc");
    // A baseline of 0 has no ratio.
    for c in run
        .cells
        .iter_mut()
        .filter(|c| c.key.configuration == "tcc")
    {
        let m = &mut c.result.as_mut().unwrap().threads[0].metrics;
        m.get_mut("jitter").unwrap().max = Some(0);
    }
    let text = render(&run, &opts, Format::Text).unwrap();
    let line = text_line(&text, "Configurations — scenario idle", "baseline");
    assert!(line.contains("18.4–21.3 µs          n/a"), "{line}");
    let doc = json_of(&run, &opts);
    let base = row(
        &doc,
        "configurations",
        "scenario idle",
        ["baseline", "idle"],
    );
    assert_eq!(
        base["max_jitter_vs_baseline_pct_min"],
        serde_json::Value::Null
    );
}

#[test]
fn deviation_is_the_larger_distance_from_t0() {
    let doc = json_of(&fixture_run(), &TableOptions::default());
    let r = row(
        &doc,
        "conditions",
        "configuration baseline",
        ["baseline", "idle"],
    );
    // Repetition 0: periods 3979.9–4018.4 µs, T0 4000 µs: max(18.4, 20.1) =
    // 20.1 µs. Repetition 1: 3978.0–4021.3 µs: max(21.3, 22.0) = 22.0 µs.
    assert_eq!(r["deviation_ns_min"], 20_100);
    assert_eq!(r["deviation_ns_max"], 22_000);
    assert_eq!(r["min_period_ns_min"], 3_978_000);
    assert_eq!(r["min_period_ns_max"], 3_979_900);
    assert_eq!(r["t0_ns"], 4_000_000);
    // A period entirely above T0: the upper distance wins.
    let cpu = row(&doc, "conditions", "configuration tcc", ["tcc", "cpu"]);
    // 3959.0–4038.0 → max(38.0, 41.0); 3956.0–4043.5 → max(43.5, 44.0).
    assert_eq!(cpu["deviation_ns_min"], 41_000);
    assert_eq!(cpu["deviation_ns_max"], 44_000);
    let mut run = fixture_run();
    let c = &mut run.cells[0];
    let p = c.result.as_mut().unwrap().threads[0]
        .metrics
        .get_mut("period")
        .unwrap();
    p.min = Some(4_000_500);
    p.max = Some(4_030_000);
    let (r, m) = build::figures_of(c).unwrap();
    assert_eq!((build::DEVIATION.get)(r, m), Some(30_000));
    let text = render(&fixture_run(), &TableOptions::default(), Format::Text).unwrap();
    assert_eq!(
        text_line(&text, "Conditions — configuration baseline", "idle"),
        "idle         2  3978.0–3979.9 µs  4018.4–4021.3 µs    20.1–22.0 µs       15000     15000        0         0"
    );
}

#[test]
fn spread_over_repetitions_and_one_repetition_plain() {
    let run = fixture_run();
    let doc = json_of(&run, &TableOptions::default());
    let r = row(&doc, "latency", "Latency", ["baseline", "cpu"]);
    assert_eq!(r["max_latency_ns_min"], 88_000);
    assert_eq!(r["max_latency_ns_max"], 102_300);
    assert_eq!(r["p50_latency_ns_min"], 4_150);
    assert_eq!(r["p50_latency_ns_max"], 4_200);
    let one = row(&doc, "latency", "Latency", ["tcc", "codesys"]);
    // The failed repetition's 950 µs is not a figure of the scenario.
    assert_eq!(one["max_latency_ns_min"], 60_000);
    assert_eq!(one["max_latency_ns_max"], 60_000);
    assert_eq!(
        crate::render::number::time_text(build::Spread {
            lo: 41_240,
            hi: 57_949
        }),
        "41.2–57.9 µs"
    );
    assert_eq!(
        crate::render::number::time_text(build::Spread {
            lo: 57_940,
            hi: 57_949
        }),
        "57.9 µs"
    );
    assert_eq!(crate::render::number::us1(-185_050), "-185.1");
    assert_eq!(crate::render::number::us1(49), "0.0");
    assert_eq!(crate::render::number::us1(50), "0.1");
    let text = render(&run, &TableOptions::default(), Format::Text).unwrap();
    assert_eq!(
        text_line(&text, "Latency", "baseline/cpu/host/cyclic"),
        "baseline/cpu/host/cyclic         2      2.3 µs      4.2 µs   88.0–102.3 µs  0.0000–0.0067       15000     15000        0         0"
    );
    assert_eq!(
        text_line(&text, "Latency", "tcc/codesys/host/cyclic"),
        "tcc/codesys/host/cyclic        1/2      2.1 µs      3.5 µs         60.0 µs         0.0000       15000     15000        0         0"
    );
}

#[test]
fn share_over_threshold() {
    let doc = json_of(&fixture_run(), &TableOptions::default());
    let r = row(&doc, "latency", "Latency", ["baseline", "codesys"]);
    // 3 and 2 of 15 000 samples over 100 µs: 0.02 % and 0.01333… % → 0.0133.
    assert_eq!(r["over_threshold_pct_min"], 0.0133);
    assert_eq!(r["over_threshold_pct_max"], 0.02);
    assert_eq!(r["threshold_ns"], 100_000);
    let text = render(&fixture_run(), &TableOptions::default(), Format::Text).unwrap();
    assert!(
        text.contains("\ncell                          reps         min      median             max     % > 100 µs    releases    cycles  skipped  overruns\n"),
        "{text}"
    );
    // A run without a threshold has `-`.
    let mut run = single_run();
    let m = run.cells[0]
        .result
        .as_mut()
        .unwrap()
        .combined
        .as_mut()
        .unwrap();
    let l = m.get_mut("latency").unwrap();
    l.threshold = None;
    l.over_threshold = None;
    l.over_threshold_pct = None;
    let text = render(&run, &TableOptions::default(), Format::Text).unwrap();
    assert!(
        text.contains(
            "cell                      reps     min  median      max  % over threshold  releases  cycles  skipped  overruns\n\
             default/none/host/wakeup     1  1.8 µs  2.7 µs  54.3 µs                 -     30000   30000        0         0\n"
        ),
        "{text}"
    );
}

#[test]
fn compare_gives_b_as_percent_of_a() {
    let got = compare(&fixture_run(), &later_run(), Format::Json).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&got).unwrap();
    let t = &doc["tables"][0];
    let cols: Vec<&str> = t["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    let find = |cell: [&str; 2], fig: &str| -> BTreeMap<&str, serde_json::Value> {
        let r = t["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r[0] == cell[0] && r[1] == cell[1] && r[4] == fig)
            .unwrap_or_else(|| panic!("no {cell:?} {fig}"));
        cols.iter()
            .copied()
            .zip(r.as_array().unwrap().iter().cloned())
            .collect()
    };
    // baseline/idle max latency: A 21.0–24.4 µs, B 15.75–18.3 µs: 75 % at
    // both ends.
    let r = find(["baseline", "idle"], "max_latency_ns");
    assert_eq!(
        (r["a_min"].clone(), r["a_max"].clone()),
        (21_000.into(), 24_400.into())
    );
    assert_eq!(
        (r["b_min"].clone(), r["b_max"].clone()),
        (15_750.into(), 18_300.into())
    );
    assert_eq!(r["b_pct_of_a_min"], 75.0);
    assert_eq!(r["b_pct_of_a_max"], 75.0);
    // tcc/codesys max jitter: A 60 µs (one completed), B 58–60 µs:
    // 58/60 = 96.7 %, 60/60 = 100 %.
    let r = find(["tcc", "codesys"], "max_jitter_ns");
    assert_eq!(r["b_pct_of_a_min"], 96.7);
    assert_eq!(r["b_pct_of_a_max"], 100.0);
    assert_eq!(r["a_status"], "completed+failed");
    assert_eq!(r["b_status"], "completed");
    // Cells in one run only.
    let r = find(["tcc", "cpu"], "max_latency_ns");
    assert_eq!(r["b_status"], "absent");
    assert_eq!(r["b_pct_of_a_min"], serde_json::Value::Null);
    let r = find(["cat", "idle"], "max_latency_ns");
    assert_eq!(r["a_status"], "absent");
    assert_eq!(r["b_max"], 9_000);
    assert_eq!(
        t["notes"],
        serde_json::json!([
            "only in A (run 7): tcc/cpu/host/cyclic",
            "only in B (run 8): cat/idle/host/cyclic"
        ])
    );
    let text = compare(&fixture_run(), &later_run(), Format::Text).unwrap();
    assert!(
        text.contains("\n                              max latency                21.0–24.4 µs      15.8–18.3 µs         75.0%\n"),
        "{text}"
    );
}

#[test]
fn unknown_baseline_is_bad_input() {
    let opts = TableOptions {
        baseline: Some("fast".into()),
        ..TableOptions::default()
    };
    let e = render(&fixture_run(), &opts, Format::Text).unwrap_err();
    assert!(e.downcast_ref::<BadInput>().is_some());
    assert_eq!(
        e.to_string(),
        "--baseline fast is not a configuration of run 7 (configurations: baseline, tcc, cat)"
    );
    // The unavailable configuration is one: its ratios are all n/a.
    let opts = TableOptions {
        baseline: Some("cat".into()),
        tables: vec![Table::Configurations],
        explain: false,
    };
    let text = render(&fixture_run(), &opts, Format::Text).unwrap();
    let line = text_line(&text, "Configurations — scenario idle", "tcc");
    assert_eq!(line.matches("n/a").count(), 4, "{line}");
}

#[test]
fn table_choice_and_explain_switch() {
    let run = fixture_run();
    let only = TableOptions {
        tables: vec![Table::Latency, Table::Latency],
        explain: false,
        ..TableOptions::default()
    };
    let doc = json_of(&run, &only);
    let names: Vec<&str> = doc["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["latency"]);
    assert_eq!(doc["explanations"], serde_json::json!([]));
    let text = render(&run, &only, Format::Text).unwrap();
    assert!(!text.contains("Explanations"), "{text}");
    // Auto: 3 configuration tables (one per scenario), 2 condition tables
    // (one per measured configuration), 1 latency table.
    let doc = json_of(&run, &TableOptions::default());
    let names: Vec<&str> = doc["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "configurations",
            "configurations",
            "configurations",
            "conditions",
            "conditions",
            "latency"
        ]
    );
    // A wake-up run has no execution time: asked for, the table is not
    // there, and the text says why.
    let opts = TableOptions {
        tables: vec![Table::Configurations],
        explain: false,
        ..TableOptions::default()
    };
    let text = render(&single_run(), &opts, Format::Text).unwrap();
    assert!(
        text.ends_with(
            "\nno configuration table: no cell of run 3 measured an execution time (cyclic probe)\n"
        ),
        "{text}"
    );
}

#[test]
fn cells_without_figures_show_their_status() {
    let mut run = fixture_run();
    for c in run
        .cells
        .iter_mut()
        .filter(|c| c.key.configuration == "tcc" && c.key.scenario == "idle")
    {
        c.status = if c.key.repetition == 0 {
            CellStatus::Interrupted
        } else {
            CellStatus::Pending
        };
    }
    run.cells
        .retain(|c| !(c.key.configuration == "tcc" && c.key.scenario == "cpu"));
    let opts = TableOptions {
        explain: false,
        ..TableOptions::default()
    };
    // The interrupted repetition's figures are shown, marked partial.
    let text = render(&run, &opts, Format::Text).unwrap();
    assert_eq!(
        text_line(&text, "Configurations — scenario idle", "tcc"),
        "tcc             0/2       9.8 µs*   46.0–53.3%       -10.1 µs*   45.7–50.0%       150.0 µs*   48.3–49.8%       100.0 µs*   82.6–83.3%    15000*  15000*       0*        0*"
    );
    assert!(
        text.contains(&format!("\n{}\n", super::build::INTERRUPTED_NOTE)),
        "{text}"
    );
    // Without figures (killed before its first window), the status stands.
    for c in run
        .cells
        .iter_mut()
        .filter(|c| c.key.configuration == "tcc" && c.key.scenario == "idle")
    {
        c.result = None;
    }
    let text = render(&run, &opts, Format::Text).unwrap();
    assert_eq!(
        text_line(&text, "Configurations — scenario idle", "tcc"),
        "tcc             0/2  interrupted+pending            -  interrupted+pending            -  interrupted+pending            -  interrupted+pending            -  interrupted+pending  interrupted+pending  interrupted+pending  interrupted+pending"
    );
    assert!(!text.contains(super::build::INTERRUPTED_NOTE), "{text}");
    assert_eq!(
        text_line(&text, "Conditions — configuration tcc", "cpu"),
        "cpu          -              not run              not run              not run              not run              not run              not run              not run"
    );
    let doc = json_of(&run, &opts);
    let r = row(&doc, "conditions", "configuration tcc", ["tcc", "cpu"]);
    assert_eq!(r["status"], "not run");
    assert_eq!(r["reps"], 0);
    assert_eq!(r["min_period_ns_min"], serde_json::Value::Null);
}

#[test]
fn explanations_state_zeros_and_name_the_noise() {
    let run = fixture_run();
    let ex = explain::explain(&run);
    let lines = |i: usize| -> Vec<String> {
        ex[i]
            .lines()
            .into_iter()
            .map(|(d, l)| format!("{}{l}", "  ".repeat(d)))
            .collect()
    };
    assert_eq!(
        lines(0),
        [
            "baseline/idle/host/cyclic rep 0: completed",
            "  probe CPU 1: no steal; 15030 interrupts (LOC=15000, 24=20, RES=10); 15055 softirqs (TIMER=15000, RCU=40, SCHED=12)",
            "  probe context switches: 15000 voluntary, no involuntary",
            "  NET_RX: none",
            "  neighbours: none",
        ]
    );
    assert_eq!(
        lines(11),
        [
            "tcc/codesys/host/cyclic rep 1: failed (neighbour stress-ng exited early with status 2 after 0.8 s)",
            "  probe CPU 1: steal 1.250ms; 16883 interrupts (LOC=15000, RES=1210, TLB=640); 16525 softirqs (TIMER=15000, SCHED=1300, RCU=220)",
            "  probe context switches: 15000 voluntary, 40 involuntary",
            "  NET_RX: 42 on CPU 0, 5 on CPU 1",
            "  neighbour stress-ng (CPU 0): CPU time 790.000ms in 800.000ms, 0.99 CPUs busy, unhealthy: exited early with status 2",
            "    stderr: stress-ng: error: [4242] stress-ng-vm: cannot allocate 128M: Cannot allocate memory",
            "    stderr: stress-ng: info: [4242] unsuccessful run completed in 0.80s",
        ]
    );
    // 58.2 s of CPU time in 60 s: 0.97 CPUs; bogo-ops summed over stressors.
    assert_eq!(ex[4].neighbours[0].cpus_busy, Some(0.97));
    assert_eq!(ex[4].neighbours[0].bogo_ops, Some(900_000));
}

#[test]
fn a_cell_that_traced_its_cycles_says_what_delayed_its_worst() {
    use jitterlab_core::explain::periodic::ExplainDetail;
    use jitterlab_core::explain::{Explanation, ThreadPart};
    use jitterlab_core::outlier::Outlier;
    let mut run = fixture_run();
    let r = run.cells[0].result.as_mut().unwrap();
    // Its worst latency (cycle 2500) and a smaller one, both explained.
    let late = |cycle: u64, value: i64| Outlier {
        value,
        cycle,
        since_start_ns: cycle * 1_000_000,
    };
    r.threads[0].outliers.insert(
        "latency".into(),
        vec![late(7, 88_000), late(2_500, 1_234_567)],
    );
    let x = |cycle: u64, ns: u64| Explanation {
        tid: 4000,
        cycle,
        cpu: 1,
        from_ns: 0,
        to_ns: ns,
        threads: vec![ThreadPart {
            pid: 77,
            comm: "jl-hog".into(),
            prio: 9,
            ns,
        }],
        ..Explanation::default()
    };
    let detail = ExplainDetail {
        explanations: vec![x(7, 88_000), x(2_500, 1_234_567)],
        ..ExplainDetail::default()
    };
    r.detail = Some(serde_json::to_value(&detail).unwrap());
    let ex = explain::explain(&run);
    assert_eq!(
        ex[0].lines().last().unwrap(),
        &(
            1,
            "what delayed the worst cycle: cycle 2500 late by 1.234ms: jl-hog (pid 77, prio 9) 1.234ms"
                .to_string()
        )
    );
    let json = serde_json::to_value(&ex[0]).unwrap();
    assert_eq!(
        json["traced"],
        serde_json::json!([
            "what delayed the worst cycle: cycle 2500 late by 1.234ms: jl-hog (pid 77, prio 9) 1.234ms"
        ])
    );
    // A cell that traced nothing says nothing of it, in lines or JSON.
    assert!(ex[1].traced.is_empty());
    assert!(serde_json::to_value(&ex[1])
        .unwrap()
        .get("traced")
        .is_none());
}

#[test]
fn a_starved_neighbour_and_rt_throttling_are_named_in_text_and_json() {
    use jitterlab_core::rt_throttle::{RtLimit, Stall, Throttling};
    let mut run = fixture_run();
    let cell = &mut run.cells[4];
    // The codesys-like stress-ng (16 CPUs asked of CPU 0) at 2.4 s of
    // CPU time in 60 s: 0.04 CPU of the 1.00 it asked.
    cell.context.neighbours[0].cpu_time_ns = 2_400_000_000;
    crate::neighbour::judge_loads(&mut cell.context.neighbours);
    cell.context.throttling = Some(Throttling {
        limit: Some(RtLimit {
            runtime_us: 950_000,
            period_us: 1_000_000,
        }),
        fair_server: true,
        messages: vec!["[ 1024.824060] sched: RT throttling activated".into()],
        rt_rqs: vec![],
        stalls: vec![
            Stall {
                metric: "latency".into(),
                ns: 52_000_000,
                at_ns: 2_950_000_000,
                window: 2,
            },
            Stall {
                metric: "latency".into(),
                ns: 51_000_000,
                at_ns: 3_950_000_000,
                window: 3,
            },
        ],
        realtime_probe: true,
        windows_hit: vec![],
    });
    let ex = explain::explain(&run);
    let lines: Vec<String> = ex[4].lines().into_iter().map(|(_, l)| l).collect();
    let neighbour = lines.iter().find(|l| l.starts_with("neighbour ")).unwrap();
    assert_eq!(
        neighbour,
        "neighbour stress-ng (CPU 0): CPU time 2.400s in 60.000s, 0.04 CPUs busy, 900000 bogo-ops, alive but short of its load: 0.04 CPU of the 1.00 asked (4 %; tolerance 20 %)"
    );
    assert_eq!(
        lines[lines.len() - 4..lines.len() - 1],
        [
            "RT throttling: 2 stalls of up to 52.000ms in windows 2, 3: the kernel held this real-time probe off, as sched_rt_runtime_us=950000 of sched_rt_period_us=1000000 (real-time tasks held off 50.000ms of every 1.000s)",
            "RT throttling evidence: kernel log: [ 1024.824060] sched: RT throttling activated; the kernel's fair deadline server (Linux 6.12 and later) also reserves 50 ms of every 1 s by default for normal tasks",
            "RT throttling fix (your decision, left unchanged by jitterlab): a probe that never sleeps needs rt_runtime_us = -1 in the configuration (and fair_server_runtime = \"0ns\" on Linux 6.12 and later); both are restored after the cell, and while set a runaway real-time task can hang its CPU",
        ]
    );
    let doc = json_of(&run, &TableOptions::default());
    let e = &doc["explanations"][4];
    assert_eq!(
        e["neighbours"][0]["load"],
        "short of its load: 0.04 CPU of the 1.00 asked (4 %; tolerance 20 %)"
    );
    // Then the windows it hit, derived from the stalls for a cell stored
    // before they were marked.
    assert_eq!(
        lines[lines.len() - 1],
        "RT throttling hit window 2 (2.000s to 3.000s: 1 stall of up to 52.000ms), window 3 (3.000s to 4.000s: 1 stall of up to 51.000ms)"
    );
    assert_eq!(e["throttling"].as_array().unwrap().len(), 4);
    // Under the tables too, in every format.
    let cell = format!("{} rep {}", ex[4].cell, ex[4].repetition);
    let short = format!(
        "{cell}: neighbour stress-ng short of its load: 0.04 CPU of the 1.00 asked (4 %; tolerance 20 %)"
    );
    let throttled = format!("{cell}: RT throttling: 2 stalls of up to 52.000ms in windows 2, 3: the kernel held this real-time probe off, as sched_rt_runtime_us=950000 of sched_rt_period_us=1000000 (real-time tasks held off 50.000ms of every 1.000s)");
    let text = render(&run, &TableOptions::default(), Format::Text).unwrap();
    assert!(text.contains(&short), "{text}");
    assert!(text.contains(&throttled), "{text}");
    assert!(
        text.contains(&format!("\n{cell}: RT throttling hit window 2 (2.000s to 3.000s: 1 stall of up to 52.000ms), window 3 (3.000s to 4.000s: 1 stall of up to 51.000ms)\n")),
        "{text}"
    );
    let notes = doc["notes"].as_array().unwrap();
    assert!(notes.contains(&serde_json::Value::from(short)), "{notes:?}");
    assert!(
        notes.contains(&serde_json::Value::from(throttled)),
        "{notes:?}"
    );
    // A neighbour that delivered its load says so after "healthy".
    let mut run = fixture_run();
    crate::neighbour::judge_loads(&mut run.cells[4].context.neighbours);
    let ex = explain::explain(&run);
    let lines: Vec<String> = ex[4].lines().into_iter().map(|(_, l)| l).collect();
    assert!(
        lines.iter().any(|l| l.ends_with(
            ", healthy, delivered its load: 0.97 CPU of the 1.00 asked (97 %; tolerance 20 %)"
        )),
        "{lines:?}"
    );
}

#[test]
fn csv_fields_are_quoted_only_when_needed() {
    use serde_json::json;
    assert_eq!(sheet::csv_field(&json!("plain text")), "plain text");
    assert_eq!(
        sheet::csv_field(&json!("no CAT, no MBA")),
        "\"no CAT, no MBA\""
    );
    assert_eq!(sheet::csv_field(&json!("say \"no\"")), "\"say \"\"no\"\"\"");
    assert_eq!(sheet::csv_field(&json!(-185_000)), "-185000");
    assert_eq!(sheet::csv_field(&json!(36.8)), "36.8");
    assert_eq!(sheet::csv_field(&serde_json::Value::Null), "");
    // A reason with a comma stays one field.
    let mut run = fixture_run();
    run.unavailable[0].1 = "no L3 CAT, no MBA".into();
    let csv = render(&run, &TableOptions::default(), Format::Csv).unwrap();
    let header_fields = csv.lines().next().unwrap().split(',').count();
    let line = csv.lines().find(|l| l.contains(",cat,idle,")).unwrap();
    assert_eq!(
        line,
        format!(
            "configurations,cat,idle,host,cyclic,0,0,unavailable,\"no L3 CAT, no MBA\"{}",
            ",".repeat(header_fields - 9)
        )
    );
}

#[test]
fn compare_names_differing_thresholds() {
    let a = fixture_run();
    let mut b = later_run();
    for c in &mut b.cells {
        let l = c.result.as_mut().unwrap().threads[0]
            .metrics
            .get_mut("latency")
            .unwrap();
        l.threshold = Some(50_000);
    }
    let text = compare(&a, &b, Format::Text).unwrap();
    assert!(
        text.contains("  % > threshold (A 100 µs, B 50 µs)  "),
        "{text}"
    );
}

// ---------------------------------------------------------------------------
// Through the database.

/// The bench fixture written with the store's own calls into a real SQLite
/// file, read back with `load_run`: the same run, the same tables, byte for
/// byte — reports depend on nothing but the database.
#[test]
fn a_run_stored_in_the_database_renders_the_same_tables() {
    let run = fixture_run();
    let back = through_the_store(&run, serde_json::json!({}));
    assert_eq!(back, run);
    for (f, ext) in FORMATS {
        let got = render(&back, &TableOptions::default(), f).unwrap();
        snapshot(&format!("bench.{ext}"), &got);
    }
}

/// `run` written into a fresh SQLite file with the store's own calls (as
/// a bench writes it, `spec` as its stored spec) and read back with
/// `load_run`, its id set back to `run`'s: what a report of a stored run
/// starts from.
pub(crate) fn through_the_store(run: &StoredRun, spec: serde_json::Value) -> StoredRun {
    use crate::store::{BenchSpecJson, RunKind, RunStart, RunStatus, Store};
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("r.db")).unwrap();
    let spec = BenchSpecJson {
        configurations: run.configurations.clone(),
        scenarios: run.scenarios.clone(),
        unavailable: run.unavailable.clone(),
        spec,
        source: None,
    };
    let cmd = vec!["jitterlab".to_string()];
    let keys: Vec<CellKey> = run.cells.iter().map(|c| c.key.clone()).collect();
    let (id, cells) = store
        .begin_bench(
            &RunStart {
                started_at: &run.started_at,
                probe: "bench",
                command_line: &cmd,
                params_json: "{}".into(),
                host_json: "{}".into(),
                hostname: &run.hostname,
                kernel_release: &run.kernel_release,
                machine_id: None,
                realtime: None,
                kind: RunKind::Bench,
                name: &run.name,
                spec_json: Some(serde_json::to_string(&spec).unwrap()),
            },
            &keys,
        )
        .unwrap();
    for (c, &cell) in run.cells.iter().zip(&cells) {
        store
            .finish_cell(cell, c.status, c.result.as_ref(), &c.context, &[])
            .unwrap();
    }
    store
        .finish_run_row(id, RunStatus::parse(&run.status).unwrap(), None, 0, None)
        .unwrap();
    let mut back = store.load_run(id).unwrap();
    back.id = run.id;
    back
}

#[test]
fn settings_are_explained_with_what_was_read_back() {
    let mut run = single_run();
    run.cells[0].context.settings = vec![
        jitterlab_core::cell::SettingReport {
            name: "kernel.timer_migration".into(),
            requested: "0".into(),
            before: "1".into(),
            applied: "0".into(),
            verified: "0".into(),
            ok: true,
            notes: vec![],
        },
        jitterlab_core::cell::SettingReport {
            name: "fair_server_runtime".into(),
            requested: "0 ns on CPUs 1".into(),
            before: String::new(),
            applied: String::new(),
            verified: String::new(),
            ok: false,
            notes: vec!["debugfs is not mounted".into()],
        },
    ];
    let text = render(&run, &TableOptions::default(), Format::Text).unwrap();
    assert!(
        text.contains("  setting kernel.timer_migration = 0: in effect (was 1; read back 0)\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "  setting fair_server_runtime = 0 ns on CPUs 1: NOT in effect (was ; read back )\n    debugfs is not mounted\n"
        ),
        "{text}"
    );
}

// ---------------------------------------------------------------------------
// The chase table ([Red Hat caterpillar]).

/// A chase cell's figures, in cycles: cycles per chase (min, median, p99,
/// max) and the sample jitter (median, max).
struct Ch {
    chase: (i64, i64, i64, i64),
    jitter: (i64, i64),
}

fn chase_metrics(c: &Ch) -> BTreeMap<String, MetricSummary> {
    let (min, p50, p99, max) = c.chase;
    let mut chase = summary(min, p50, max, p50, 20_000);
    chase.p99 = Some(p99);
    let (jp50, jmax) = c.jitter;
    BTreeMap::from([
        ("chase".to_string(), chase),
        (
            "sample-jitter".to_string(),
            summary(jp50 / 2, jp50, jmax, jp50, 200),
        ),
    ])
}

fn chase_cell(configuration: &str, scenario: &str, rep: u32, c: Ch) -> StoredCell {
    StoredCell {
        key: CellKey {
            probe: "chase".into(),
            ..key(configuration, scenario, rep)
        },
        status: CellStatus::Completed,
        result: Some(result(
            ProbeKind::Chase,
            0,
            vec![(1, chase_metrics(&c), usage(0, 0))],
            None,
        )),
        context: context(scenario),
    }
}

/// Run 9: bench `caterpillar` ([Red Hat caterpillar]), configurations `baseline` and
/// `cache-reserved`, scenarios `idle` and `neighbour`, a chase in each;
/// `baseline/neighbour` ran twice.
fn chase_run() -> StoredRun {
    let ch = |chase, jitter| Ch { chase, jitter };
    StoredRun {
        id: 9,
        started_at: "2026-11-23T10:00:00Z".into(),
        kind: "bench".into(),
        name: "caterpillar".into(),
        status: "completed".into(),
        hostname: "plc-7".into(),
        kernel_release: "6.12.0-rt5-amd64".into(),
        configurations: vec!["baseline".into(), "cache-reserved".into()],
        scenarios: vec!["idle".into(), "neighbour".into()],
        unavailable: vec![],
        cells: vec![
            chase_cell(
                "baseline",
                "idle",
                0,
                ch((18_015, 18_200, 19_000, 24_000), (1_500, 6_000)),
            ),
            chase_cell(
                "baseline",
                "neighbour",
                0,
                ch((18_100, 26_000, 31_000, 52_000), (9_000, 30_000)),
            ),
            chase_cell(
                "baseline",
                "neighbour",
                1,
                ch((18_050, 25_500, 30_500, 48_000), (9_500, 28_000)),
            ),
            chase_cell(
                "cache-reserved",
                "idle",
                0,
                ch((18_010, 18_150, 18_800, 21_000), (1_200, 3_000)),
            ),
            chase_cell(
                "cache-reserved",
                "neighbour",
                0,
                ch((18_020, 18_400, 20_100, 26_000), (2_000, 8_000)),
            ),
        ],
        probes: Vec::new(),
    }
}

/// `chase_run` on a machine without resctrl: `cache-reserved` could not run.
fn chase_run_without_resctrl() -> StoredRun {
    let mut run = chase_run();
    run.cells.retain(|c| c.key.configuration == "baseline");
    run.unavailable = vec![(
        "cache-reserved".into(),
        "no cache allocation: /sys/fs/resctrl is not mounted".into(),
    )];
    run
}

fn table_names(doc: &serde_json::Value) -> Vec<String> {
    doc["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

const NO_EXPLAIN: TableOptions = TableOptions {
    baseline: None,
    tables: Vec::new(),
    explain: false,
};

#[test]
fn chase_table_in_text() {
    let text = render(&chase_run(), &NO_EXPLAIN, Format::Text).unwrap();
    let want = "\
run          9 (bench caterpillar)
started      2026-11-23T10:00:00Z
host         plc-7
kernel       6.12.0-rt5-amd64
status       completed

Chase (baseline: baseline)
cell                                 reps    min chase  median chase    p99 chase    max chase  median jitter   max jitter  jitter vs baseline  samples
baseline/idle/host/chase                1        18015         18200        19000        24000           1500         6000              100.0%    20000
baseline/neighbour/host/chase           2  18050–18100   25500–26000  30500–31000  48000–52000      9000–9500  28000–30000              100.0%    20000
cache-reserved/idle/host/chase          1        18010         18150        18800        21000           1200         3000               80.0%    20000
cache-reserved/neighbour/host/chase     1        18020         18400        20100        26000           2000         8000          21.1–22.2%    20000
figures in CPU cycles (TSC): a chase is one timed walk of dependent loads; jitter = max − min of one sample's chases; jitter vs baseline = median jitter ÷ the baseline configuration's in the same scenario
samples: the timed chases the chase figures come from (an event probe has no release schedule)
";
    assert_eq!(text, want);
}

#[test]
fn chase_row_in_json_and_csv() {
    let doc = json_of(&chase_run(), &NO_EXPLAIN);
    let r = row(&doc, "chase", "Chase", ["cache-reserved", "neighbour"]);
    let want: BTreeMap<String, serde_json::Value> = [
        ("configuration", serde_json::json!("cache-reserved")),
        ("scenario", "neighbour".into()),
        ("deployment", "host".into()),
        ("probe", "chase".into()),
        ("reps", 1.into()),
        ("completed", 1.into()),
        ("status", "completed".into()),
        ("note", serde_json::Value::Null),
        ("baseline", "baseline".into()),
        ("min_chase_cycles_min", 18_020.into()),
        ("min_chase_cycles_max", 18_020.into()),
        ("p50_chase_cycles_min", 18_400.into()),
        ("p50_chase_cycles_max", 18_400.into()),
        ("p99_chase_cycles_min", 20_100.into()),
        ("p99_chase_cycles_max", 20_100.into()),
        ("max_chase_cycles_min", 26_000.into()),
        ("max_chase_cycles_max", 26_000.into()),
        ("p50_sample_jitter_cycles_min", 2_000.into()),
        ("p50_sample_jitter_cycles_max", 2_000.into()),
        ("max_sample_jitter_cycles_min", 8_000.into()),
        ("max_sample_jitter_cycles_max", 8_000.into()),
        // 2000 ÷ 9500 = 21.05 % → 21.1; 2000 ÷ 9000 = 22.2 %.
        ("p50_sample_jitter_vs_baseline_pct_min", 21.1.into()),
        ("p50_sample_jitter_vs_baseline_pct_max", 22.2.into()),
        // The timed chases its figures come from.
        ("samples_min", 20_000.into()),
        ("samples_max", 20_000.into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(r, want);
    assert_eq!(table_names(&doc), ["chase"]);
    // The CSV carries the same values under the union header; every other
    // field of the row is empty.
    let csv = render(&chase_run(), &NO_EXPLAIN, Format::Csv).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    assert_eq!(header[0], "table");
    assert_eq!(&header[1..], super::csv_columns().as_slice());
    for name in want.keys() {
        assert!(header.contains(&name.as_str()), "{name} not in the header");
    }
    let line = csv
        .lines()
        .find(|l| l.starts_with("chase,cache-reserved,neighbour,"))
        .unwrap();
    let expected: Vec<String> = header
        .iter()
        .map(|h| match *h {
            "table" => "chase".to_string(),
            h => want.get(h).map_or(String::new(), sheet::csv_field),
        })
        .collect();
    assert_eq!(line, expected.join(","));
    assert_eq!(
        line,
        format!(
            "chase,cache-reserved,neighbour,host,chase,1,1,completed,,baseline{}20000,20000,18020,18020,18400,18400,20100,20100,26000,26000,2000,2000,8000,8000,21.1,22.2",
            ",".repeat(header.iter().position(|h| *h == "samples_min").unwrap() - 9)
        )
    );
    assert_eq!(csv.lines().count(), 5);
}

#[test]
fn chase_table_of_an_unavailable_configuration_is_na_with_its_reason() {
    let run = chase_run_without_resctrl();
    let text = render(&run, &NO_EXPLAIN, Format::Text).unwrap();
    let from = text.find("Chase (baseline: baseline)\n").unwrap();
    assert_eq!(
        &text[from..],
        "\
Chase (baseline: baseline)
cell                                 reps    min chase  median chase    p99 chase    max chase  median jitter   max jitter  jitter vs baseline  samples
baseline/idle/host/chase                1        18015         18200        19000        24000           1500         6000              100.0%    20000
baseline/neighbour/host/chase           2  18050–18100   25500–26000  30500–31000  48000–52000      9000–9500  28000–30000              100.0%    20000
cache-reserved/idle/host/chase          -          N/A           N/A          N/A          N/A            N/A          N/A                 N/A      N/A
cache-reserved/neighbour/host/chase     -          N/A           N/A          N/A          N/A            N/A          N/A                 N/A      N/A
N/A cache-reserved: no cache allocation: /sys/fs/resctrl is not mounted
figures in CPU cycles (TSC): a chase is one timed walk of dependent loads; jitter = max − min of one sample's chases; jitter vs baseline = median jitter ÷ the baseline configuration's in the same scenario
samples: the timed chases the chase figures come from (an event probe has no release schedule)
"
    );
    let doc = json_of(&run, &NO_EXPLAIN);
    let r = row(&doc, "chase", "Chase", ["cache-reserved", "idle"]);
    assert_eq!(r["status"], "unavailable");
    assert_eq!(
        r["note"],
        "no cache allocation: /sys/fs/resctrl is not mounted"
    );
    assert_eq!(r["reps"], 0);
    assert_eq!(r["probe"], "chase");
    assert_eq!(r["p50_sample_jitter_cycles_min"], serde_json::Value::Null);
    assert_eq!(
        r["p50_sample_jitter_vs_baseline_pct_max"],
        serde_json::Value::Null
    );
    // Two configurations (one unavailable), two scenarios, chases only:
    // neither the configuration nor the condition nor the latency table
    // applies.
    assert_eq!(table_names(&doc), ["chase"]);
}

#[test]
fn chase_without_a_baseline_figure_is_na_and_another_baseline_works() {
    // The baseline's idle chase failed before it stored anything: the
    // cache-reserved idle row has no baseline figure.
    let mut run = chase_run();
    run.cells[0].status = CellStatus::Failed;
    run.cells[0].result = None;
    let text = render(&run, &NO_EXPLAIN, Format::Text).unwrap();
    assert_eq!(
        text_line(&text, "Chase", "baseline/idle/"),
        "baseline/idle/host/chase              0/1       failed        failed       failed       failed         failed       failed                   -   failed"
    );
    assert_eq!(
        text_line(&text, "Chase", "cache-reserved/idle/"),
        "cache-reserved/idle/host/chase          1        18010         18150        18800        21000           1200         3000                 n/a    20000"
    );
    // Against cache-reserved: baseline/neighbour's 9000–9500 ÷ 2000.
    let opts = TableOptions {
        baseline: Some("cache-reserved".into()),
        tables: vec![Table::Chase],
        explain: false,
    };
    let doc = json_of(&chase_run(), &opts);
    let r = row(
        &doc,
        "chase",
        "baseline: cache-reserved",
        ["baseline", "neighbour"],
    );
    assert_eq!(r["p50_sample_jitter_vs_baseline_pct_min"], 450.0);
    assert_eq!(r["p50_sample_jitter_vs_baseline_pct_max"], 475.0);
    assert_eq!(r["baseline"], "cache-reserved");
}

#[test]
fn default_tables_with_and_without_chases() {
    // A run of chases only: the chase table alone — no empty latency table,
    // even when a chase failed before it stored a result (its probe name
    // says what it is).
    let mut run = chase_run();
    run.cells[4].status = CellStatus::Failed;
    run.cells[4].result = None;
    let doc = json_of(&run, &NO_EXPLAIN);
    assert_eq!(table_names(&doc), ["chase"]);
    assert!(latency::latency(&run).is_empty());
    // Mixed: the bench fixture plus chase cells gets every table, and the
    // latency table keeps its cyclic rows only.
    let mut mixed = fixture_run();
    mixed.cells.extend(
        chase_run()
            .cells
            .into_iter()
            .filter(|c| c.key.configuration == "baseline"),
    );
    mixed.cells.push(chase_cell(
        "tcc",
        "idle",
        0,
        Ch {
            chase: (18_000, 18_100, 18_500, 19_000),
            jitter: (900, 1_000),
        },
    ));
    let doc = json_of(&mixed, &NO_EXPLAIN);
    assert_eq!(
        table_names(&doc),
        [
            "configurations",
            "configurations",
            "configurations",
            "conditions",
            "conditions",
            "latency",
            "chase"
        ]
    );
    let cells_of = |name: &str| -> Vec<String> {
        let t = doc["tables"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap();
        t["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (0..4)
                    .map(|i| r[i].as_str().unwrap())
                    .collect::<Vec<_>>()
                    .join("/")
            })
            .collect()
    };
    assert_eq!(
        cells_of("latency"),
        [
            "baseline/idle/host/cyclic",
            "baseline/cpu/host/cyclic",
            "baseline/codesys/host/cyclic",
            "tcc/idle/host/cyclic",
            "tcc/cpu/host/cyclic",
            "tcc/codesys/host/cyclic",
        ]
    );
    // The chase rows in groups() order; `cat` (unavailable) gets an N/A row
    // for each scenario with chase cells.
    assert_eq!(
        cells_of("chase"),
        [
            "baseline/idle/host/chase",
            "baseline/neighbour/host/chase",
            "tcc/idle/host/chase",
            "cat/idle/host/chase",
            "cat/neighbour/host/chase",
        ]
    );
    // The bench fixture alone has no chase table.
    let doc = json_of(&fixture_run(), &NO_EXPLAIN);
    assert!(!table_names(&doc).contains(&"chase".to_string()));
}

#[test]
fn asked_for_tables_that_do_not_apply_say_why() {
    let opts = TableOptions {
        tables: vec![Table::Chase],
        explain: false,
        ..TableOptions::default()
    };
    let text = render(&fixture_run(), &opts, Format::Text).unwrap();
    assert!(
        text.ends_with("\n\nno chase table: no cell of run 7 ran the chase probe\n"),
        "{text}"
    );
    let doc = json_of(&fixture_run(), &opts);
    assert_eq!(
        doc["notes"],
        serde_json::json!(["no chase table: no cell of run 7 ran the chase probe"])
    );
    assert_eq!(doc["tables"], serde_json::json!([]));
    let opts = TableOptions {
        tables: vec![Table::Latency],
        explain: false,
        ..TableOptions::default()
    };
    let doc = json_of(&chase_run(), &opts);
    assert_eq!(
        doc["notes"],
        serde_json::json!([
            "no latency table: every cell of run 9 ran the chase probe (see the chase table)"
        ])
    );
    let mut empty = chase_run();
    empty.cells.clear();
    let doc = json_of(&empty, &opts);
    assert_eq!(
        doc["notes"],
        serde_json::json!(["no latency table: run 9 has no cells"])
    );
}

#[test]
fn compare_includes_the_chase_figures() {
    let a = chase_run();
    let mut b = chase_run();
    b.id = 10;
    // cache-reserved/neighbour's median sample jitter 2000 → 1500: 75 %.
    let m = &mut b.cells[4].result.as_mut().unwrap().threads[0].metrics;
    m.get_mut("sample-jitter").unwrap().p50 = Some(1_500);
    let text = compare(&a, &b, Format::Text).unwrap();
    let from = text.find("cache-reserved/neighbour/host/chase").unwrap();
    let block: Vec<&str> = text[from..].lines().take(6).collect();
    assert_eq!(
        block,
        [
            "cache-reserved/neighbour/host/chase  min chase (cycles)                   18020        18020  100.0%",
            "                                     median chase (cycles)                18400        18400  100.0%",
            "                                     p99 chase (cycles)                   20100        20100  100.0%",
            "                                     max chase (cycles)                   26000        26000  100.0%",
            "                                     median sample jitter (cycles)         2000         1500   75.0%",
            "                                     max sample jitter (cycles)            8000         8000  100.0%",
        ]
    );
}

/// Run 11: bench `epics` ([Xu EPICS]) — a timerlat cell skipped (no tracer),
/// a ctxswitch cell, a UDP response cell; thresholds 100 µs.
fn epics_run() -> StoredRun {
    let lat = |min, p50, max, count, over| {
        with_threshold(summary(min, p50, max, p50, count), 100_000, over)
    };
    let event_cell =
        |probe: &str, kind: ProbeKind, metrics: Vec<(&str, MetricSummary)>| StoredCell {
            key: CellKey {
                probe: probe.into(),
                ..key("tuned", "network", 0)
            },
            status: CellStatus::Completed,
            result: Some(result(
                kind,
                0,
                vec![(
                    1,
                    metrics
                        .into_iter()
                        .map(|(n, s)| (n.to_string(), s))
                        .collect(),
                    usage(0, 0),
                )],
                None,
            )),
            context: context("network"),
        };
    StoredRun {
        id: 11,
        started_at: "2026-11-23T11:00:00Z".into(),
        kind: "bench".into(),
        name: "epics".into(),
        status: "completed".into(),
        hostname: "ioc-3".into(),
        kernel_release: "6.12.0-rt5-amd64".into(),
        configurations: vec!["tuned".into()],
        scenarios: vec!["network".into()],
        unavailable: vec![],
        cells: vec![
            StoredCell {
                key: CellKey {
                    probe: "timerlat".into(),
                    ..key("tuned", "network", 0)
                },
                status: CellStatus::Skipped,
                result: None,
                context: context("network"),
            },
            event_cell(
                "ctxswitch",
                ProbeKind::Ctxswitch,
                vec![("handover", lat(1_000, 2_300, 1_102_800, 60_000, 9))],
            ),
            // rx-to-thread measured nothing here: no row for it.
            event_cell(
                "response",
                ProbeKind::Response,
                vec![
                    ("wakeup", lat(7_900, 30_000, 2_492_300, 3_000, 32)),
                    ("response", lat(11_500, 43_600, 2_509_100, 3_000, 73)),
                    ("rx-to-thread", summary(0, 0, 0, 0, 0)),
                ],
            ),
        ],
        probes: Vec::new(),
    }
}

#[test]
fn latency_has_a_row_per_latency_of_seed_003() {
    let text = render(&epics_run(), &NO_EXPLAIN, Format::Text).unwrap();
    let want = "\
run          11 (bench epics)
started      2026-11-23T11:00:00Z
host         ioc-3
kernel       6.12.0-rt5-amd64
status       completed

Latency
cell                          latency   reps      min   median        max  % > 100 µs  samples
tuned/network/host/timerlat   thread     0/1  skipped  skipped    skipped     skipped  skipped
tuned/network/host/ctxswitch  handover     1   1.0 µs   2.3 µs  1102.8 µs      0.0150    60000
tuned/network/host/response   wakeup       1   7.9 µs  30.0 µs  2492.3 µs      1.0667     3000
tuned/network/host/response   response     1  11.5 µs  43.6 µs  2509.1 µs      2.4333     3000
samples: the samples of the row's figures (an event probe has no release schedule)
";
    assert_eq!(text, want);
    let doc = json_of(&epics_run(), &NO_EXPLAIN);
    let t = doc["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "latency")
        .unwrap();
    let at = t["columns"]
        .as_array()
        .unwrap()
        .iter()
        .position(|c| c == "metric")
        .unwrap();
    let metrics: Vec<&serde_json::Value> = t["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r[at])
        .collect();
    assert_eq!(
        metrics,
        [
            &serde_json::json!("thread"),
            &serde_json::json!("handover"),
            &serde_json::json!("wakeup"),
            &serde_json::json!("response")
        ]
    );
}

/// Run 7 with hostile text in every stored string a report prints: the
/// run's name and host, a configuration's unavailability reason, a cell's
/// note and failure, a neighbour's name, command and stderr.
fn hostile_run() -> StoredRun {
    const EVIL: &str = "x\u{1b}[31m\nforged";
    let mut run = fixture_run();
    run.name = EVIL.into();
    run.hostname = EVIL.into();
    run.unavailable[0].1 = EVIL.into();
    let cell = run
        .cells
        .iter_mut()
        .find(|c| !c.context.neighbours.is_empty())
        .unwrap();
    cell.context.notes.push(EVIL.into());
    cell.context.failure = Some(EVIL.into());
    let n = &mut cell.context.neighbours[0];
    n.name = EVIL.into();
    n.argv.push(EVIL.into());
    n.healthy = false;
    n.end = EVIL.into();
    n.stderr_tail = vec![EVIL.into()];
    run
}

#[test]
fn stored_text_is_printed_with_its_control_characters_escaped() {
    let run = hostile_run();
    for format in [Format::Text, Format::Md, Format::Csv] {
        let out = render(&run, &TableOptions::default(), format).unwrap();
        assert!(!out.contains('\u{1b}'), "{format:?}: {out}");
        assert!(
            !out.lines().any(|l| l.starts_with("forged")),
            "{format:?}: a stored newline forged a line: {out}"
        );
        // Markdown also escapes the `[` that could open a link.
        let evil = match format {
            Format::Md => "x\\u{1b}\\[31m\\nforged",
            _ => "x\\u{1b}[31m\\nforged",
        };
        assert!(out.contains(evil), "{format:?}: {out}");
    }
    let text = render(&run, &TableOptions::default(), Format::Text).unwrap();
    assert!(
        text.starts_with("run          7 (bench x\\u{1b}[31m\\nforged)\n"),
        "{text}"
    );
    assert!(
        text.contains("\nhost         x\\u{1b}[31m\\nforged\n"),
        "{text}"
    );
    assert!(
        text.contains("\n    stderr: x\\u{1b}[31m\\nforged\n"),
        "{text}"
    );
    let md = render(&run, &TableOptions::default(), Format::Md).unwrap();
    assert!(
        md.starts_with("## Run 7: x\\u{1b}\\[31m\\nforged (bench)\n"),
        "{md}"
    );
    // JSON keeps the exact text, escaped by JSON itself.
    let json = render(&run, &TableOptions::default(), Format::Json).unwrap();
    assert!(!json.contains('\u{1b}'));
    assert!(
        json.contains("\"name\": \"x\\u001b[31m\\nforged\""),
        "{json}"
    );
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(doc["name"], "x\u{1b}[31m\nforged");
    // The comparison's header too.
    let cmp = compare(&run, &fixture_run(), Format::Text).unwrap();
    assert!(!cmp.contains('\u{1b}'), "{cmp}");
    assert!(
        cmp.starts_with("A  run 7 (bench x\\u{1b}[31m\\nforged), started"),
        "{cmp}"
    );
}

/// Markdown renders stored names and hostnames as text: no inline HTML
/// (`<script>` would run where the Markdown is shown as HTML), no table
/// cell split by `|`, no code span, no link.
#[test]
fn markdown_escapes_stored_names_and_hostnames() {
    const EVIL: &str = "<script>alert(1)</script>|x `y` [l](http://e) a&b";
    const SHOWN: &str = r"&lt;script>alert(1)&lt;/script>\|x \`y\` \[l\](http://e) a&amp;b";
    let mut run = fixture_run();
    run.name = EVIL.into();
    run.hostname = EVIL.into();
    let cell = run
        .cells
        .iter_mut()
        .find(|c| !c.context.neighbours.is_empty())
        .unwrap();
    cell.context.neighbours[0].name = EVIL.into();
    let md = render(&run, &TableOptions::default(), Format::Md).unwrap();
    assert!(
        md.starts_with(&format!("## Run 7: {SHOWN} (bench)\n\n")),
        "{md}"
    );
    assert!(md.contains(&format!("\n- host: {SHOWN}\n")), "{md}");
    assert!(!md.contains('<'), "{md}");
    let cmp = compare(&run, &fixture_run(), Format::Md).unwrap();
    assert!(
        cmp.contains(&format!("- A: run 7 (bench {SHOWN}), started")),
        "{cmp}"
    );
    assert!(!cmp.contains('<'), "{cmp}");
    // What starts a heading or a quote only at the text's start.
    assert_eq!(sheet::md_escape("# h > q ~~s~~"), r"\# h > q \~\~s\~\~");
    assert_eq!(sheet::md_escape("> q"), r"\> q");
}

/// A neighbour short of its load fails its cell: its verdict is in the
/// record's verdict block, the exit status it calls for is 1, and JUnit
/// has it as a failed case of that cell.
#[test]
fn a_starved_neighbour_fails_its_cell_in_the_verdicts_and_junit() {
    let mut run = fixture_run();
    let cell = &mut run.cells[4];
    cell.context.neighbours[0].cpu_time_ns = 2_400_000_000;
    crate::neighbour::judge_loads(&mut cell.context.neighbours);
    let name = format!("{} rep {}", cell.key.name(), cell.key.repetition);
    let cells = crate::report::verdict::of_run(&run);
    assert_eq!(crate::report::verdict::exit_status(&cells), 1);
    let line = "FAIL neighbour stress-ng load: short of its load: achieved 4 % of the 100 % asked (CPU time 2.400s in 60.000s; tolerance 20 %)";
    assert!(
        crate::report::verdict::text(&cells).contains(&format!("\n  {name}\n    PASS ")),
        "{}",
        crate::report::verdict::text(&cells)
    );
    assert!(
        jitterlab_core::verdict::failures(&cells).contains(&format!("{name}: {line}")),
        "{:?}",
        jitterlab_core::verdict::failures(&cells)
    );
    let xml = crate::report::junit::render(
        &crate::report::junit::Head {
            title: "jitterlab bench codesys-tcc",
            single: "codesys-tcc",
            started_at: &run.started_at,
            hostname: &run.hostname,
        },
        &cells,
    );
    assert!(
        xml.contains(&format!(
            "<testcase classname=\"{name}\" name=\"neighbour stress-ng load\" time=\"60.000\">\n      <failure type=\"fail\" message=\"short of its load: achieved 4 % of the 100 % asked (CPU time 2.400s in 60.000s; tolerance 20 %)\">{line}</failure>"
        )),
        "{xml}"
    );
}
