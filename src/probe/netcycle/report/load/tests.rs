//! Tests of the load table and of the netcycle rows of the conditions
//! table: a `powerlink` bench built by hand from a spec (a sweep limited
//! to idle, the SoC-jitter probe under two conditions), with a cell of
//! every kind — held with a ratio, held where the seed says `< 1%`, the
//! same point measured by two probes, late cycles, missed PRes, both, a
//! frame set that cannot fit the wire, a failed cell — rendered exactly in
//! text, Markdown, CSV and JSON.

use std::collections::BTreeMap;

use jitterlab_core::netcycle::NetcycleParams;

use jitterlab_core::cell::{CellContext, CellStatus, StoredCell, StoredRun};
use jitterlab_core::load::StackLoad;
use jitterlab_core::netcycle::{Held, NetcycleDetail, NodeRole, Wait};
use jitterlab_core::result::{
    EndReason, HostSnapshot, Params, ProbeKind, RealtimeReport, RunResult, ThreadResult,
    UsageDelta, SCHEMA_VERSION,
};
use jitterlab_core::spec::{parse, SpecContext};
use jitterlab_core::stats::MetricSummary;
use jitterlab_core::units::CpuList;
use serde_json::Value;

use crate::report::tables::{render, Format, Table, TableOptions};

/// The bench: preset powerlink's shape, smaller — a sweep of 250 µs, 500
/// µs, 1 ms, 5 ms × 3, 20 CNs on the idle machine, and the SoC-jitter
/// probe under idle and cpu.
const SPEC: &str = r#"
name = "powerlink"
duration = "60s"
[[configuration]]
name = "tuned"
probe_cpus = "1"
[[scenario]]
name = "idle"
builtin = "idle"
[[scenario]]
name = "cpu"
builtin = "cpu"
[[probe]]
kind = "netcycle"
name = "soc-jitter"
period = "500us"
cns = 3
[[probe]]
kind = "netcycle"
name = "load-250us-3cn"
period = "250us"
cns = 3
scenarios = ["idle"]
duration = "10s"
[[probe]]
kind = "netcycle"
name = "load-250us-20cn"
period = "250us"
cns = 20
scenarios = ["idle"]
duration = "10s"
[[probe]]
kind = "netcycle"
name = "load-500us-3cn"
period = "500us"
cns = 3
scenarios = ["idle"]
duration = "10s"
[[probe]]
kind = "netcycle"
name = "load-500us-20cn"
period = "500us"
cns = 20
scenarios = ["idle"]
duration = "10s"
[[probe]]
kind = "netcycle"
name = "load-1ms-3cn"
period = "1ms"
cns = 3
scenarios = ["idle"]
duration = "10s"
[[probe]]
kind = "netcycle"
name = "load-1ms-20cn"
period = "1ms"
cns = 20
scenarios = ["idle"]
duration = "10s"
[[probe]]
kind = "netcycle"
name = "load-5ms-3cn"
period = "5ms"
cns = 3
scenarios = ["idle"]
duration = "10s"
[[probe]]
kind = "netcycle"
name = "load-5ms-20cn"
period = "5ms"
cns = 20
scenarios = ["idle"]
duration = "10s"
response_timeout = "200us"
max_late_cycles = 2
"#;

fn spec() -> jitterlab_core::spec::Spec {
    let online = CpuList::parse("0-1").unwrap();
    parse(
        SPEC,
        "powerlink.toml",
        &SpecContext {
            online: &online,
            builtins: &["idle", "cpu"],
        },
    )
    .unwrap()
}

fn summary(min: i64, max: i64) -> MetricSummary {
    MetricSummary {
        count: 20_000,
        min: Some(min),
        max: Some(max),
        mean: Some((min + max) / 2),
        stddev: None,
        p50: Some((min + max) / 2),
        p90: None,
        p99: None,
        p99_9: None,
        p99_99: None,
        threshold: None,
        over_threshold: None,
        over_threshold_pct: None,
    }
}

/// One netcycle cell's figures: stack and wall time (`None`: no load
/// measured), late cycles, missed PRes, the SoC period as sent and as
/// received (min, max).
struct Nc {
    load: Option<(u64, u64)>,
    late: u64,
    missed: u64,
    sent: (i64, i64),
    received: (i64, i64),
}

fn held(load_permille: u64) -> Nc {
    Nc {
        load: Some((load_permille * 10_000_000, 10_000_000_000)),
        late: 0,
        missed: 0,
        sent: (480_000, 520_000),
        received: (470_000, 530_000),
    }
}

fn result(p: &jitterlab_core::spec::ProbeSpec, f: &Nc) -> RunResult {
    let n = p.params.get::<NetcycleParams>().unwrap();
    let cycles = 10_000_000_000 / p.period_ns;
    let polls = cycles * u64::from(n.cns);
    let mut metrics = BTreeMap::new();
    metrics.insert("period".to_string(), summary(f.sent.0, f.sent.1));
    metrics.insert("rx-period".to_string(), summary(f.received.0, f.received.1));
    metrics.insert("latency".to_string(), summary(2_000, 30_000));
    let detail = NetcycleDetail {
        role: NodeRole::Both,
        cns: n.cns,
        chaining: n.chaining,
        wait: Wait::Blocking,
        response_timeout_ns: n.response_timeout_ns,
        out_bytes: n.out_bytes,
        in_bytes: n.in_bytes,
        wire_ns: n.wire_ns(),
        cycles,
        late_cycles: f.late,
        over_t0_cycles: None,
        polls,
        missed_pres: f.missed,
        late_pres: 0,
        held: Held::judge(n, cycles, f.late, polls, f.missed),
        soc_spacing: None,
        left_operational: vec![],
        per_cn: vec![],
        load: f.load.map(|(stack, wall)| StackLoad {
            wall_ns: wall,
            cpu: 1,
            threads: vec![],
            stack_ns: stack,
            cpu_busy_ns: Some(stack + 1_000_000),
            cpu_busy_source: "test".into(),
            softirq_ns: None,
            softirq_source: "test".into(),
            hz: None,
        }),
        cn: None,
        mn: None,
        stamps: vec![],
        steering: vec![],
        pcap: None,
    };
    RunResult {
        schema_version: SCHEMA_VERSION,
        tool: "jitterlab".into(),
        tool_version: "0.1.0".into(),
        probe: ProbeKind::Netcycle,
        started_at: "2026-12-01T10:00:00Z".into(),
        elapsed_ns: 10_000_000_000,
        end: EndReason::Completed,
        interrupted: false,
        signal: None,
        command_line: vec!["jitterlab".into(), "bench".into()],
        params: Params {
            period_ns: p.period_ns,
            cpus: vec![1],
            ..Params::default()
        },
        realtime: RealtimeReport {
            realtime: true,
            defaults: vec![],
        },
        host: HostSnapshot::default(),
        threads: vec![ThreadResult {
            thread: 0,
            cpu: 1,
            tid: 4100,
            cycles,
            releases: cycles,
            skipped: 0,
            overruns: 0,
            metrics,
            outliers: BTreeMap::new(),
            calibration: None,
            usage: UsageDelta::default(),
            window_rows: 10,
            dropped_rows: 0,
            counters: BTreeMap::new(),
        }],
        combined: None,
        limits: vec![],
        break_event: None,
        warnings: vec![],
        detail: Some(serde_json::to_value(detail).unwrap()),
    }
}

/// The figures of each cell, by `scenario/probe`; a cell without any is
/// skipped (the wire) or failed.
fn figures(scenario: &str, probe: &str) -> Option<Nc> {
    Some(match (scenario, probe) {
        ("idle", "soc-jitter") => held(210),
        ("cpu", "soc-jitter") => Nc {
            sent: (495_500, 504_800),
            received: (489_900, 512_300),
            ..held(230)
        },
        ("idle", "load-250us-3cn") => held(412),
        ("idle", "load-500us-3cn") => held(203),
        ("idle", "load-500us-20cn") => Nc {
            late: 3,
            ..held(512)
        },
        ("idle", "load-1ms-3cn") => held(96),
        ("idle", "load-1ms-20cn") => Nc {
            missed: 2,
            ..held(330)
        },
        ("idle", "load-5ms-3cn") => held(6),
        ("idle", "load-5ms-20cn") => Nc {
            late: 4,
            missed: 1,
            ..held(39)
        },
        _ => return None,
    })
}

/// Run 21, stored as a bench stores it: cells in run order, the wire cell
/// skipped with the bench's note.
fn powerlink_run() -> StoredRun {
    let s = spec();
    let cells = s
        .cells()
        .iter()
        .map(|c| {
            let p = &s.probes[c.probe];
            let f = figures(&c.key.scenario, &p.name);
            let (status, notes) = match (&f, s.cell_na(c)) {
                (_, Some(why)) => (CellStatus::Skipped, vec![why]),
                (Some(_), None) => (CellStatus::Completed, vec![]),
                (None, None) => (CellStatus::Failed, vec![]),
            };
            StoredCell {
                key: c.key.clone(),
                status,
                result: f.map(|f| result(p, &f)),
                context: CellContext {
                    notes,
                    ..CellContext::default()
                },
            }
        })
        .collect();
    StoredRun {
        id: 21,
        started_at: "2026-12-01T10:00:00Z".into(),
        kind: "bench".into(),
        name: "powerlink".into(),
        status: "completed".into(),
        hostname: "ipc-2".into(),
        kernel_release: "6.12.0-rt5-amd64".into(),
        configurations: vec!["tuned".into()],
        scenarios: vec!["idle".into(), "cpu".into()],
        unavailable: vec![],
        cells,
        probes: s.probes,
    }
}

fn only(t: Table) -> TableOptions {
    TableOptions {
        baseline: None,
        tables: vec![t],
        explain: false,
    }
}

const HEAD: &str = "run          21 (bench powerlink)
started      2026-12-01T10:00:00Z
host         ipc-2
kernel       6.12.0-rt5-amd64
status       completed
";

#[test]
fn the_load_table_in_text() {
    let got = render(&powerlink_run(), &only(Table::Kind("load")), Format::Text).unwrap();
    assert_eq!(
        got,
        format!(
            "{HEAD}
Stack load (Baumgartner and Schoenegger, Tables 2–3) — configuration tuned, scenario idle, host
cycle        3 CNs     vs seed                                      20 CNs  vs seed
250 µs       41.2%       ×1.11                                  N/A (wire)        -
500 µs  20.3–21.0%  ×1.13–1.17            N/A (late cycles: 3; load 51.2%)        -
1 ms          9.6%       ×1.20                 N/A (missed: 2; load 33.0%)        -
5 ms          0.6%           -  N/A (late cycles: 4, missed: 1; load 3.9%)        -
{}
held: no late cycle and no missed PRes over the whole run, with response timeouts of 100 µs, 200 µs (each cell's in the CSV and JSON); \"held\" depends on it: a longer timeout misses fewer PRes but lets a slow answer push the cycle late
held here allows 2 late cycles and 0 missed PRes (the spec's max_late_cycles, max_missed_pres)
N/A (wire) at 250 µs × 20 CNs: 20 CNs need at least 282.2 µs of wire time per cycle at 100 Mbit/s, more than the 250 µs cycle
500 µs × 3 CNs: the figures of probes soc-jitter and load-500us-3cn
",
            super::LOAD_NOTE
        )
    );
}

#[test]
fn the_same_cells_in_markdown() {
    let got = render(&powerlink_run(), &only(Table::Kind("load")), Format::Md).unwrap();
    assert!(
        got.contains(
            "### Stack load (Baumgartner and Schoenegger, Tables 2–3) — configuration tuned, scenario idle, host\n\n\
             | cycle | 3 CNs | vs seed | 20 CNs | vs seed |\n\
             |---|---:|---:|---:|---:|\n\
             | 250 µs | 41.2% | ×1.11 | N/A (wire) | - |\n\
             | 500 µs | 20.3–21.0% | ×1.13–1.17 | N/A (late cycles: 3; load 51.2%) | - |\n\
             | 1 ms | 9.6% | ×1.20 | N/A (missed: 2; load 33.0%) | - |\n\
             | 5 ms | 0.6% | - | N/A (late cycles: 4, missed: 1; load 3.9%) | - |\n\
             \nload: the managing node threads' CPU time (their schedstat) ÷ wall time,"
        ),
        "{got}"
    );
    // One table: the rows for scripts are not printed.
    assert_eq!(got.matches("### Stack load").count(), 1, "{got}");
}

/// The CSV's load columns, after every other table's.
const LOAD_COLUMNS: [&str; 15] = [
    "cycle_ns",
    "cns",
    "chaining",
    "wait",
    "response_timeout_ns",
    "wire_ns",
    "held",
    "na",
    "late_cycles",
    "missed_pres",
    "stack_load_pct_min",
    "stack_load_pct_max",
    "seed_load",
    "vs_seed_min",
    "vs_seed_max",
];

#[test]
fn the_same_cells_in_csv_one_row_each() {
    let got = render(&powerlink_run(), &only(Table::Kind("load")), Format::Csv).unwrap();
    let lines: Vec<&str> = got.lines().collect();
    let header: Vec<&str> = lines[0].split(',').collect();
    assert_eq!(header[header.len() - 15..], LOAD_COLUMNS, "{}", lines[0]);
    // The columns every run has come first, unchanged.
    assert_eq!(
        header[1..header.len() - 15],
        crate::report::tables::csv_columns()
    );
    let tail = |l: &str| -> Vec<String> {
        let f: Vec<&str> = l.split(',').collect();
        let mut v: Vec<String> = f[..8].iter().map(|s| s.to_string()).collect();
        v.extend(f[f.len() - 15..].iter().map(|s| s.to_string()));
        v
    };
    let rows: Vec<Vec<String>> = lines[1..].iter().map(|l| tail(l)).collect();
    let want: Vec<Vec<&str>> = vec![
        vec![
            "load",
            "tuned",
            "idle",
            "host",
            "load-250us-3cn",
            "1",
            "1",
            "completed",
            "250000",
            "3",
            "false",
            "blocking",
            "100000",
            "53760",
            "true",
            "",
            "0",
            "0",
            "41.2",
            "41.2",
            "37%",
            "1.11",
            "1.11",
        ],
        vec![
            "load",
            "tuned",
            "idle",
            "host",
            "load-250us-20cn",
            "1",
            "0",
            "skipped",
            "250000",
            "20",
            "false",
            "blocking",
            "100000",
            "282240",
            "",
            "wire",
            "",
            "",
            "",
            "",
            "N/A",
            "",
            "",
        ],
        vec![
            "load",
            "tuned",
            "idle",
            "host",
            "soc-jitter",
            "1",
            "1",
            "completed",
            "500000",
            "3",
            "false",
            "blocking",
            "100000",
            "53760",
            "true",
            "",
            "0",
            "0",
            "21.0",
            "21.0",
            "18%",
            "1.17",
            "1.17",
        ],
        vec![
            "load",
            "tuned",
            "idle",
            "host",
            "load-500us-3cn",
            "1",
            "1",
            "completed",
            "500000",
            "3",
            "false",
            "blocking",
            "100000",
            "53760",
            "true",
            "",
            "0",
            "0",
            "20.3",
            "20.3",
            "18%",
            "1.13",
            "1.13",
        ],
        vec![
            "load",
            "tuned",
            "idle",
            "host",
            "load-500us-20cn",
            "1",
            "1",
            "completed",
            "500000",
            "20",
            "false",
            "blocking",
            "100000",
            "282240",
            "false",
            "late cycles",
            "3",
            "0",
            "51.2",
            "51.2",
            "43%",
            "",
            "",
        ],
        vec![
            "load",
            "tuned",
            "idle",
            "host",
            "load-1ms-3cn",
            "1",
            "1",
            "completed",
            "1000000",
            "3",
            "false",
            "blocking",
            "100000",
            "53760",
            "true",
            "",
            "0",
            "0",
            "9.6",
            "9.6",
            "8%",
            "1.2",
            "1.2",
        ],
        vec![
            "load",
            "tuned",
            "idle",
            "host",
            "load-1ms-20cn",
            "1",
            "1",
            "completed",
            "1000000",
            "20",
            "false",
            "blocking",
            "100000",
            "282240",
            "false",
            "missed",
            "0",
            "2",
            "33.0",
            "33.0",
            "21%",
            "",
            "",
        ],
        vec![
            "load",
            "tuned",
            "idle",
            "host",
            "load-5ms-3cn",
            "1",
            "1",
            "completed",
            "5000000",
            "3",
            "false",
            "blocking",
            "100000",
            "53760",
            "true",
            "",
            "0",
            "0",
            "0.6",
            "0.6",
            "< 1%",
            "",
            "",
        ],
        vec![
            "load",
            "tuned",
            "idle",
            "host",
            "load-5ms-20cn",
            "1",
            "1",
            "completed",
            "5000000",
            "20",
            "false",
            "blocking",
            "200000",
            "282240",
            "false",
            "late cycles+missed",
            "4",
            "1",
            "3.9",
            "3.9",
            "4%",
            "",
            "",
        ],
    ];
    assert_eq!(rows, want);
}

#[test]
fn the_same_cells_in_json_with_the_notes() {
    let doc: Value = serde_json::from_str(
        &render(&powerlink_run(), &only(Table::Kind("load")), Format::Json).unwrap(),
    )
    .unwrap();
    let tables = doc["tables"].as_array().unwrap();
    assert_eq!(tables.len(), 1, "the grid is for people only");
    let t = &tables[0];
    assert_eq!(t["name"], "load");
    assert_eq!(
        t["title"],
        "Stack load (Baumgartner and Schoenegger, Tables 2–3) — configuration tuned, scenario idle, host"
    );
    let cols: Vec<&str> = t["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(
        cols[..7],
        [
            "configuration",
            "scenario",
            "deployment",
            "probe",
            "reps",
            "completed",
            "status"
        ]
    );
    assert_eq!(cols[7..22], LOAD_COLUMNS);
    // Then what each cell's figures came from: the schedule's counts.
    assert_eq!(
        cols[22..],
        [
            "releases_min",
            "releases_max",
            "cycles_min",
            "cycles_max",
            "skipped_min",
            "skipped_max",
            "overruns_min",
            "overruns_max"
        ]
    );
    let row = |i: usize| -> BTreeMap<&str, &Value> {
        cols.iter()
            .copied()
            .zip(t["rows"][i].as_array().unwrap())
            .collect()
    };
    let r = row(0);
    assert_eq!(r["probe"], "load-250us-3cn");
    assert_eq!(r["stack_load_pct_max"], 41.2);
    assert_eq!(r["vs_seed_min"], 1.11);
    assert_eq!(r["held"], true);
    assert_eq!(r["releases_min"], r["cycles_min"]);
    assert!(r["releases_min"].as_u64().unwrap() > 0, "{r:?}");
    assert_eq!(r["skipped_max"], 0);
    let wire = row(1);
    assert_eq!(wire["na"], "wire");
    assert_eq!(wire["held"], &Value::Null);
    assert_eq!(wire["stack_load_pct_min"], &Value::Null);
    assert_eq!(wire["wire_ns"], 282_240);
    let both = row(8);
    assert_eq!(both["late_cycles"], 4);
    assert_eq!(both["missed_pres"], 1);
    assert_eq!(both["response_timeout_ns"], 200_000);
    let notes: Vec<&str> = t["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert_eq!(notes[0], super::LOAD_NOTE);
    assert!(
        notes[1].contains("response timeouts of 100 µs, 200 µs"),
        "{}",
        notes[1]
    );
}

#[test]
fn the_load_table_is_chosen_for_a_sweep_and_the_csv_of_other_runs_is_unchanged() {
    let run = powerlink_run();
    let got = render(&run, &TableOptions::default(), Format::Text).unwrap();
    let titles: Vec<&str> = got
        .lines()
        .filter(|l| {
            ["Conditions", "Latency", "Stack load", "Configurations"]
                .iter()
                .any(|t| l.starts_with(t))
        })
        .collect();
    // The sweep's probes ran idle only: no condition table of their own.
    assert_eq!(
        titles,
        [
            "Conditions — configuration tuned, host, soc-jitter (T0 = 500us)",
            "Latency",
            "Stack load (Baumgartner and Schoenegger, Tables 2–3) — configuration tuned, scenario idle, host",
        ]
    );
    // One netcycle cell per scenario is no sweep: no load table unless asked.
    let mut single = run.clone();
    single.cells.retain(|c| c.key.probe == "soc-jitter");
    let got = render(&single, &TableOptions::default(), Format::Text).unwrap();
    assert!(!got.contains("Stack load"), "{got}");
    let got = render(&single, &only(Table::Kind("load")), Format::Text).unwrap();
    let tables: Vec<&str> = got
        .lines()
        .filter(|l| l.starts_with("Stack load"))
        .collect();
    assert_eq!(
        tables,
        [
            "Stack load (Baumgartner and Schoenegger, Tables 2–3) — configuration tuned, scenario idle, host",
            "Stack load (Baumgartner and Schoenegger, Tables 2–3) — configuration tuned, scenario cpu, host",
        ]
    );
    assert!(got.contains("\n500 µs  21.0%    ×1.17\n"), "{got}");
    assert!(got.contains("\n500 µs  23.0%    ×1.28\n"), "{got}");
    // Without a netcycle cell: no table, and asking says why.
    let mut none = run.clone();
    none.cells.clear();
    let got = render(&none, &only(Table::Kind("load")), Format::Text).unwrap();
    assert!(
        got.contains("\nno load table: no cell of run 21 ran the netcycle probe\n"),
        "{got}"
    );
    // A run without netcycle cells writes the CSV it always did: no load
    // or CN column in its header.
    let csv = render(&none, &TableOptions::default(), Format::Csv).unwrap();
    assert_eq!(
        csv.lines().next().unwrap(),
        format!("table,{}", crate::report::tables::csv_columns().join(","))
    );
}

/// The run with its `cpu` condition not held: 3 late cycles (each
/// skipping one release), 1 cycle over T0.
fn cpu_not_held() -> StoredRun {
    let mut run = powerlink_run();
    let cell = run
        .cells
        .iter_mut()
        .find(|c| c.key.scenario == "cpu" && c.key.probe == "soc-jitter")
        .unwrap();
    let r = cell.result.as_mut().unwrap();
    let d = r.detail.as_mut().unwrap();
    d["late_cycles"] = 3.into();
    d["over_t0_cycles"] = 1.into();
    d["held"] =
        serde_json::json!({"held": false, "reasons": ["late cycles: 3 of 20000 (allowed 0)"]});
    let t = &mut r.threads[0];
    (t.cycles, t.skipped, t.overruns) = (t.releases - 3, 3, 3);
    run
}

#[test]
fn the_condition_table_gives_both_ends_of_the_wire() {
    let got = render(&cpu_not_held(), &only(Table::Conditions), Format::Text).unwrap();
    assert_eq!(
        got,
        format!(
            "{HEAD}
Conditions — configuration tuned, host, soc-jitter (T0 = 500us)
scenario  reps  MN min cycle  MN max cycle  MN deviation  CN min cycle  CN max cycle  CN deviation  releases  cycles  skipped  late  over T0  missed PRes  held
idle         1      480.0 µs      520.0 µs       20.0 µs      470.0 µs      530.0 µs       30.0 µs     20000   20000        0     0        -            0   yes
cpu          1      495.5 µs      504.8 µs        4.8 µs      489.9 µs      512.3 µs       12.3 µs     20000   19997        3     3        1            0    NO
{}
tuned/cpu/host/soc-jitter, repetition 0: the figures come from 19997 of 20000 releases (3 skipped after 3 overruns)
{}
{}
NO cpu: late cycles: 3 of 20000 (allowed 0)
",
            crate::render::rows::SCHEDULE_NOTE,
            super::super::conditions::NETCYCLE_NOTE,
            super::super::conditions::HELD_NOTE
        )
    );
    let csv = render(&cpu_not_held(), &only(Table::Conditions), Format::Csv).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    let header: Vec<&str> = lines[0].split(',').collect();
    let rx = [
        "rx_min_period_ns_min",
        "rx_min_period_ns_max",
        "rx_max_period_ns_min",
        "rx_max_period_ns_max",
        "rx_deviation_ns_min",
        "rx_deviation_ns_max",
    ];
    let counts = [
        "late_cycles_min",
        "late_cycles_max",
        "over_t0_cycles_min",
        "over_t0_cycles_max",
        "missed_pres_min",
        "missed_pres_max",
        "held",
        "held_repetitions",
    ];
    assert_eq!(header[header.len() - 14..header.len() - 8], rx);
    assert_eq!(header[header.len() - 8..], counts);
    let cpu: Vec<&str> = lines[2].split(',').collect();
    assert_eq!(
        cpu[..5],
        ["conditions", "tuned", "cpu", "host", "soc-jitter"]
    );
    assert_eq!(
        cpu[cpu.len() - 14..],
        [
            "489900", "489900", "512300", "512300", "12300", "12300", "3", "3", "1", "1", "0", "0",
            "false", "1"
        ]
    );
    let idle: Vec<&str> = lines[1].split(',').collect();
    assert_eq!(
        idle[idle.len() - 8..],
        ["0", "0", "", "", "0", "0", "true", "1"]
    );
    let min_sent = header
        .iter()
        .position(|h| *h == "min_period_ns_min")
        .unwrap();
    assert_eq!(cpu[min_sent], "495500");
}

#[test]
fn a_cell_without_figures_shows_its_status_and_one_without_load_says_held() {
    let mut run = powerlink_run();
    for c in run.cells.iter_mut() {
        match c.key.probe.as_str() {
            "load-1ms-3cn" => {
                c.status = CellStatus::Failed;
                c.result = None;
            }
            "load-250us-3cn" => {
                let r = c.result.as_mut().unwrap();
                r.detail
                    .as_mut()
                    .unwrap()
                    .as_object_mut()
                    .unwrap()
                    .remove("load");
            }
            _ => {}
        }
    }
    let got = render(&run, &only(Table::Kind("load")), Format::Text).unwrap();
    let rows: Vec<&str> = got
        .lines()
        .filter(|l| l.starts_with("250 µs") || l.starts_with("1 ms"))
        .collect();
    assert_eq!(
        rows,
        [
            "250 µs        held           -                                  N/A (wire)        -",
            "1 ms        failed           -                 N/A (missed: 2; load 33.0%)        -",
        ]
    );
}

/// A run whose spec was not kept (or not readable) still places its
/// measured cells from what they stored; the skipped wire cell, which
/// stored nothing, drops out.
#[test]
fn without_the_stored_spec_the_cells_place_themselves() {
    let mut run = powerlink_run();
    run.probes.clear();
    let got = render(&run, &only(Table::Kind("load")), Format::Text).unwrap();
    assert!(
        got.contains(
            "\n250 µs       41.2%       ×1.11                                           -        -\n"
        ),
        "{got}"
    );
    assert!(!got.contains("N/A (wire) at"), "{got}");
    // Allowances live in the spec only.
    assert!(!got.contains("held here allows"), "{got}");
}

/// Through the database as a bench stores it: the spec's probes come back
/// from `spec_json`, and with them the wire cell's figure.
#[test]
fn a_run_read_back_from_the_database_renders_the_same_tables() {
    let run = powerlink_run();
    let back = crate::report::tables::tests::through_the_store(
        &run,
        serde_json::to_value(spec()).unwrap(),
    );
    assert_eq!(back.probes, run.probes);
    assert_eq!(back, run);
    for f in [Format::Text, Format::Md, Format::Csv, Format::Json] {
        assert_eq!(
            render(&back, &TableOptions::default(), f).unwrap(),
            render(&run, &TableOptions::default(), f).unwrap()
        );
    }
}

#[test]
fn a_limited_probe_has_condition_rows_for_its_scenarios_only() {
    let mut run = powerlink_run();
    run.scenarios.push("disk".into());
    let rows = |run: &StoredRun| -> Vec<String> {
        let got = render(run, &only(Table::Conditions), Format::Text).unwrap();
        got.lines()
            .skip_while(|l| !l.starts_with("scenario "))
            .skip(1)
            .take_while(|l| !l.starts_with("releases: "))
            .map(|l| l.split_whitespace().next().unwrap().to_string())
            .collect()
    };
    // Not limited: a scenario without its cell is `not run`.
    assert_eq!(rows(&run), ["idle", "cpu", "disk"]);
    // Limited to idle and cpu: disk was never planned for it.
    let p = run
        .probes
        .iter_mut()
        .find(|p| p.name == "soc-jitter")
        .unwrap();
    p.scope.scenarios = vec!["idle".into(), "cpu".into()];
    assert_eq!(rows(&run), ["idle", "cpu"]);
    // Limited to one scenario of several: no table at all.
    let p = run
        .probes
        .iter_mut()
        .find(|p| p.name == "soc-jitter")
        .unwrap();
    p.scope.scenarios = vec!["cpu".into()];
    let got = render(&run, &only(Table::Conditions), Format::Text).unwrap();
    assert!(!got.contains("Conditions —"), "{got}");
}

#[test]
fn a_cn_that_left_operational_reads_in_its_cell() {
    assert_eq!(super::na_text(0, 0, 1), "N/A (left operational: 1)");
    assert_eq!(
        super::na_text(2, 0, 1),
        "N/A (late cycles: 2, left operational: 1)"
    );
    assert_eq!(super::na_text(3, 2, 0), "N/A (late cycles: 3, missed: 2)");
    assert_eq!(super::na_text(0, 4, 0), "N/A (missed: 4)");
    assert_eq!(super::na_text(0, 0, 0), "N/A");
}
