//! The summary a user reads on stdout after `jitterlab run cyclic|wakeup`.
//!
//! It answers, in this order: what was measured and under which conditions
//! (the header — above all whether the result may be called real-time, and if
//! not, which required default was missing and what to do about it), how much
//! was measured per thread, the statistics, where the worst samples happened,
//! and whether the run passed its limits.
//!
//! Layout choices:
//!
//! * **One table per thread** (and one for all threads combined when the
//!   result has it): a row per metric in the order of the probe's metric
//!   table (its descriptor's), only metrics that have samples; columns
//!   `min p50 p90 p99 p99.9 p99.99 max mean stddev >thr%`. Every time in the
//!   tables is printed in microseconds with three decimals, which is exactly
//!   the nanosecond the core measured — no rounding, no unit switching within
//!   a column, so columns compare at a glance. Columns are right-aligned at a
//!   fixed width of 10 characters, enough for ±99 999.999 µs; a wider value
//!   pushes its row out rather than
//!   being cut. The last column, `>thr%`, is the share of samples whose
//!   magnitude exceeded the threshold named in the table's title, with four
//!   decimals so that one sample in a million still shows. It is `-` for
//!   `period` and `exec`, which have no threshold: a period's magnitude is the
//!   period itself, and an execution time has its own limit (`--max-exec`).
//! * **Header values** (period, calibration) use the readable unit
//!   [`format_ns`] picks; the period is printed the way the user typed it.
//!   The kernel, its preemption, the clocksource and the duration are the
//!   record's (`super::header`), printed once above the summary.
//! * **Outliers**: the five largest latencies and the five largest
//!   |jitter| per thread, with the measured-cycle number (0-based) and the time
//!   since the first release in seconds (three decimals, truncated), so a spike
//!   can be matched against a trace or a neighbour's log.
//! * **Verdicts** are not the summary's: they are the record's verdict
//!   block (`super::verdict`, placed by `super::header::record` right under
//!   the header), the headline with the exit status, then a
//!   `PASS`/`FAIL`/`NOT MEASURED` line per limit and check; for a signed
//!   metric the observed figure is the largest magnitude, and the line says
//!   so (`max |jitter|`).
//!
//! What differs between probes — the label of the period line, what a
//! sample is called, which metrics have outlier lists, whether threads
//! report a calibration — is read from the probe's descriptor
//! (`jitterlab_core::probe`), never switched on by kind.
//!
//! The function only formats a finished [`RunResult`]; it reads nothing else,
//! so the same summary can be printed again from a stored result. Every
//! text it did not write itself (the host's names, the defaults' details,
//! notes, warnings) is printed through [`crate::output::shown`].

use std::fmt::Write as _;

use jitterlab_core::outlier::Outlier;
use jitterlab_core::probe::{MetricDef, MetricUnit};
use jitterlab_core::result::{EndReason, RunResult, ThreadResult};
use jitterlab_core::stats::MetricSummary;
use jitterlab_core::units::{format_duration_exact, format_ns, CpuList};

use crate::output::shown;

/// Outliers listed per metric and thread.
const OUTLIERS_SHOWN: usize = 5;
/// Width of a time column.
const COL: usize = 10;
/// Width of the metric-name column.
const NAME: usize = 8;
/// Width of the `>thr%` column.
const PCT: usize = 9;
/// Width of the header's label column.
const LABEL: usize = 13;

/// Renders the end-of-run summary. The text ends with a newline.
pub fn summary(r: &RunResult) -> String {
    let mut o = String::new();
    if let Some((rows, hz)) = super::chase::rows_of(r) {
        o.push_str(&super::chase::sample_table(&rows, hz));
        o.push('\n');
    }
    header(&mut o, r);
    if !r.threads.is_empty() {
        o.push('\n');
    }
    for t in &r.threads {
        thread_line(&mut o, r, t);
    }
    let parts = crate::probe::parts::of(r.probe);
    for line in parts.summary_head.map_or_else(Vec::new, |head| head(r)) {
        let _ = writeln!(o, "{}", shown(&line));
    }
    for t in &r.threads {
        o.push('\n');
        table(
            &mut o,
            &format!("CPU {}", t.cpu),
            r.probe.metrics(),
            r.params.threshold_ns,
            &t.metrics,
        );
    }
    if let Some(c) = &r.combined {
        o.push('\n');
        table(
            &mut o,
            "all CPUs combined",
            r.probe.metrics(),
            r.params.threshold_ns,
            c,
        );
    }
    for t in &r.threads {
        outliers(&mut o, r, t);
    }
    if let Some(b) = parts.summary.and_then(|block| block(r)) {
        o.push('\n');
        o.push_str(&b);
    }
    tail(&mut o, r);
    o
}

/// Exact microseconds with three decimals: `12345` ns → `12.345`.
pub(crate) fn us(ns: i64) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let a = ns.unsigned_abs();
    format!("{sign}{}.{:03}", a / 1_000, a % 1_000)
}

/// A largest latency as the run listing prints it: `48.123us`, or `-` when
/// none was measured.
pub(crate) fn latency_or_dash(ns: Option<i64>) -> String {
    match ns {
        Some(v) => format!("{}us", us(v)),
        None => "-".into(),
    }
}

/// [`us`] for unsigned nanoseconds.
fn us_u(ns: u64) -> String {
    format!("{}.{:03}", ns / 1_000, ns % 1_000)
}

/// Seconds with three decimals, truncated: `12345678901` ns → `12.345`.
fn secs(ns: u64) -> String {
    format!(
        "{}.{:03}",
        ns / 1_000_000_000,
        (ns % 1_000_000_000) / 1_000_000
    )
}

fn readable(ns: u64) -> String {
    format_ns(i64::try_from(ns).unwrap_or(i64::MAX))
}

// Writing into a String cannot fail; `let _ =` below says so.

fn kv(o: &mut String, label: &str, value: &str) {
    let _ = writeln!(o, "{label:<LABEL$}{}", shown(value));
}

fn header(o: &mut String, r: &RunResult) {
    let p = &r.params;
    kv(o, "probe", r.probe.name());
    if let Some(label) = r.probe.descriptor().words.period {
        kv(o, label, &format_duration_exact(p.period_ns));
    }
    let cpus: CpuList = p.cpus.iter().copied().collect();
    kv(o, "cpus", &cpus.to_string());
    let mut policy = p.policy.clone();
    if let Some(prio) = p.priority {
        let _ = write!(policy, ", priority {prio}");
    }
    if let Some(nice) = p.nice {
        let _ = write!(policy, ", nice {nice}");
    }
    kv(o, "policy", &policy);
    // The kernel, its preemption, the clocksource and the duration are the
    // record's (`super::header`), printed once above this summary.
    if r.realtime.realtime {
        kv(o, "real-time", "yes");
    } else {
        kv(
            o,
            "real-time",
            "NO - these figures do not describe real-time behaviour:",
        );
        for d in r
            .realtime
            .defaults
            .iter()
            .filter(|d| d.required && !d.applied)
        {
            let _ = writeln!(
                o,
                "{:LABEL$}- {} (requested {}): {}",
                "",
                shown(&d.name),
                shown(&d.requested),
                shown(&d.detail)
            );
        }
    }
    match r.end {
        EndReason::Completed => {}
        EndReason::Interrupted => match r.signal {
            Some(n) => kv(
                o,
                "end",
                &format!(
                    "stopped by {} before the requested length",
                    jitterlab_core::result::signal_name(n)
                ),
            ),
            None => kv(
                o,
                "end",
                "interrupted by a signal before the requested length",
            ),
        },
        EndReason::BreakTrace => kv(o, "end", "stopped by --break-trace"),
    }
}

fn thread_line(o: &mut String, r: &RunResult, t: &ThreadResult) {
    let d = r.probe.descriptor();
    if d.periodic {
        let _ = writeln!(
            o,
            "CPU {}: cycles {}, releases {}, skipped {}, overruns {}",
            t.cpu, t.cycles, t.releases, t.skipped, t.overruns
        );
    } else {
        let _ = writeln!(o, "CPU {}: {} {}", t.cpu, t.cycles, d.words.samples);
    }
    if d.calibrated {
        if let Some(c) = &t.calibration {
            let _ = writeln!(
                o,
                "  calibration: {} iterations, pass {}, measured scan {} (target {})",
                c.iterations,
                readable(c.pass_ns),
                readable(c.measured_scan_ns),
                readable(c.scan_target_ns)
            );
            if let Some(note) = &c.note {
                let _ = writeln!(o, "  calibration note: {}", shown(note));
            }
        }
    }
    if t.dropped_rows > 0 {
        let _ = writeln!(
            o,
            "  window rows dropped: {} of {} (the writer fell behind)",
            t.dropped_rows,
            t.window_rows + t.dropped_rows
        );
    }
}

/// One value in a metric's own unit: exact microseconds for nanoseconds,
/// whole cycles for cycles.
fn value(unit: MetricUnit, v: i64) -> String {
    match unit {
        MetricUnit::Ns => us(v),
        MetricUnit::Cycles => v.to_string(),
    }
}

fn table(
    o: &mut String,
    title: &str,
    defs: &[MetricDef],
    threshold_ns: u64,
    metrics: &std::collections::BTreeMap<String, MetricSummary>,
) {
    // A probe's metrics share one unit (the chase's are all cycles).
    let unit = defs.first().map_or(MetricUnit::Ns, |d| d.unit);
    let name_w = defs
        .iter()
        .map(|d| d.name.len())
        .max()
        .unwrap_or(0)
        .max(NAME);
    match unit {
        MetricUnit::Ns => {
            let _ = writeln!(o, "{title} (us, threshold {}us)", us_u(threshold_ns));
        }
        MetricUnit::Cycles => {
            let _ = writeln!(o, "{title} (cycles)");
        }
    }
    let _ = write!(o, "{:<name_w$}", "metric");
    for h in [
        "min", "p50", "p90", "p99", "p99.9", "p99.99", "max", "mean", "stddev",
    ] {
        let _ = write!(o, "{h:>COL$}");
    }
    let _ = writeln!(o, "{:>PCT$}", ">thr%");
    let mut rows = 0;
    for d in defs {
        let Some(s) = metrics.get(d.name).filter(|s| s.count > 0) else {
            continue;
        };
        rows += 1;
        let _ = write!(o, "{:<name_w$}", d.name);
        for v in [
            s.min, s.p50, s.p90, s.p99, s.p99_9, s.p99_99, s.max, s.mean, s.stddev,
        ] {
            let cell = v.map_or_else(|| "-".to_string(), |v| value(d.unit, v));
            let _ = write!(o, "{cell:>COL$}");
        }
        // Only latency and jitter are compared with the threshold; a period's
        // or an execution time's share over a latency threshold says nothing.
        match s.over_threshold_pct {
            Some(pct) => {
                let _ = writeln!(o, "{pct:>PCT$.4}");
            }
            None => {
                let _ = writeln!(o, "{:>PCT$}", "-");
            }
        }
    }
    if rows == 0 {
        o.push_str("(no samples)\n");
    }
}

/// The metrics whose largest values are listed, as the probe's descriptor
/// names them (latency and |jitter| for the periodic probes, the chase's
/// cycles, every latency of the others), in its metric-table order.
fn outlier_metrics(r: &RunResult) -> impl Iterator<Item = &'static MetricDef> {
    let d = r.probe.descriptor();
    d.metrics
        .iter()
        .filter(|m| d.words.outliers.contains(&m.name))
}

fn outliers(o: &mut String, r: &RunResult, t: &ThreadResult) {
    let what = r.probe.descriptor().words.sample;
    let note = crate::probe::parts::of(r.probe).outlier_note;
    for d in outlier_metrics(r) {
        let label = if d.signed {
            format!("|{}|", d.name)
        } else {
            d.name.to_string()
        };
        let unit = match d.unit {
            MetricUnit::Ns => "us",
            MetricUnit::Cycles => " cycles",
        };
        let Some(kept) = t.outliers.get(d.name).filter(|v| !v.is_empty()) else {
            continue;
        };
        let mut v: Vec<Outlier> = kept.clone();
        v.sort_by(|a, b| {
            b.value
                .unsigned_abs()
                .cmp(&a.value.unsigned_abs())
                .then(a.cycle.cmp(&b.cycle))
        });
        let _ = writeln!(o, "\nlargest {label}, CPU {}:", t.cpu);
        for x in v.iter().take(OUTLIERS_SHOWN) {
            let _ = writeln!(
                o,
                "{:>12}{unit}  {what} {:>9}  at {:>9}s",
                value(d.unit, x.value),
                x.cycle,
                secs(x.since_start_ns)
            );
            // What delayed it, when the probe explained it.
            if let Some(line) = note.and_then(|note| note(r, d.name, t.cpu, x.cycle)) {
                let _ = writeln!(o, "{:>16}{}", "", shown(&line));
            }
        }
    }
}

fn tail(o: &mut String, r: &RunResult) {
    // The verdict block is part of the record above the summary
    // (`super::header::record`).
    if let Some(b) = &r.break_event {
        let stopped = if b.tracing_stopped {
            "tracing stopped"
        } else {
            "tracing not stopped"
        };
        let _ = write!(
            o,
            "\nbreak-trace: latency {}us on CPU {} at cycle {}, {stopped}",
            us_u(b.latency_ns),
            b.cpu,
            b.cycle
        );
        if b.detail.trim().is_empty() {
            o.push('\n');
        } else {
            let _ = writeln!(o, ": {}", shown(b.detail.trim()));
        }
    }
    if !r.warnings.is_empty() {
        o.push('\n');
    }
    for w in &r.warnings {
        let _ = writeln!(o, "warning: {}", shown(w));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    use jitterlab_core::result::{
        BreakEvent, Calibration, DefaultStatus, HostSnapshot, LimitCheck, Params, ProbeKind,
        RealtimeReport, UsageDelta, SCHEMA_VERSION,
    };

    /// A summary; `over`/`pct` of `None` for metrics without a threshold.
    fn ms(count: u64, v: [i64; 9], over: Option<u64>, pct: Option<f64>) -> MetricSummary {
        MetricSummary {
            count,
            min: Some(v[0]),
            p50: Some(v[1]),
            p90: Some(v[2]),
            p99: Some(v[3]),
            p99_9: Some(v[4]),
            p99_99: Some(v[5]),
            max: Some(v[6]),
            mean: Some(v[7]),
            stddev: Some(v[8]),
            threshold: over.map(|_| 100_000),
            over_threshold: over,
            over_threshold_pct: pct,
        }
    }

    fn out(value: i64, cycle: u64, since_start_ns: u64) -> Outlier {
        Outlier {
            value,
            cycle,
            since_start_ns,
        }
    }

    fn default(
        name: &str,
        requested: &str,
        applied: bool,
        required: bool,
        detail: &str,
    ) -> DefaultStatus {
        DefaultStatus {
            name: name.into(),
            requested: requested.into(),
            applied,
            detail: detail.into(),
            required,
        }
    }

    /// One cyclic thread, not real-time, interrupted, one limit failed.
    fn small_cyclic() -> RunResult {
        let mut metrics = BTreeMap::new();
        metrics.insert(
            "latency".to_string(),
            ms(
                4000,
                [
                    2_100, 3_050, 4_999, 12_345, 88_000, 1_234_567, 1_234_567, 3_412, 20_001,
                ],
                Some(1),
                Some(0.025),
            ),
        );
        metrics.insert(
            "jitter".to_string(),
            ms(
                3999,
                [
                    -250_000, 1, 900, 9_000, 80_000, 1_230_000, 1_230_000, 0, 19_876,
                ],
                Some(2),
                Some(0.05001250312578145),
            ),
        );
        // A metric without samples gets no row.
        metrics.insert(
            "period".to_string(),
            MetricSummary {
                count: 0,
                min: None,
                max: None,
                mean: None,
                stddev: None,
                p50: None,
                p90: None,
                p99: None,
                p99_9: None,
                p99_99: None,
                threshold: None,
                over_threshold: None,
                over_threshold_pct: None,
            },
        );
        let mut outliers = BTreeMap::new();
        outliers.insert(
            "latency".to_string(),
            vec![
                out(12_000, 7, 7_000_000),
                out(1_234_567, 2_500, 2_501_234_567),
                out(88_000, 3_999, 3_999_088_000),
            ],
        );
        outliers.insert(
            "jitter".to_string(),
            vec![
                out(-250_000, 2_501, 2_501_000_000),
                out(1_230_000, 2_500, 2_501_234_567),
                out(9_000, 11, 11_009_000),
                out(-9_000, 10, 10_000_000),
                out(8_000, 12, 12_008_000),
                out(7_000, 13, 13_007_000),
            ],
        );
        RunResult {
            schema_version: SCHEMA_VERSION,
            tool: "jitterlab".into(),
            tool_version: "0.1.0".into(),
            probe: ProbeKind::Cyclic,
            started_at: "2025-01-02T03:04:05Z".into(),
            elapsed_ns: 4_000_123_456,
            end: EndReason::Interrupted,
            interrupted: true,
            signal: None,
            command_line: vec!["jitterlab".into(), "run".into(), "cyclic".into()],
            params: Params {
                cpus: vec![1],
                scan_ns: 500_000,
                working_set_bytes: 262_144,
                ..Params::default()
            },
            realtime: RealtimeReport {
                realtime: false,
                defaults: vec![
                    default(
                        "scheduler",
                        "fifo 95",
                        false,
                        true,
                        "EPERM: run as root or grant CAP_SYS_NICE",
                    ),
                    default("mlockall", "MCL_CURRENT|MCL_FUTURE", true, true, "ok"),
                    default(
                        "cpu_dma_latency",
                        "0",
                        false,
                        false,
                        "/dev/cpu_dma_latency missing",
                    ),
                ],
            },
            host: HostSnapshot {
                hostname: "plc1".into(),
                kernel_release: "6.1.0-28-rt-amd64".into(),
                preemption: "rt".into(),
                realtime_kernel: true,
                clocksource: "tsc".into(),
                ..HostSnapshot::default()
            },
            threads: vec![ThreadResult {
                thread: 0,
                cpu: 1,
                tid: 4242,
                cycles: 4000,
                releases: 4001,
                skipped: 1,
                overruns: 1,
                metrics,
                outliers,
                calibration: Some(Calibration {
                    cpu: 1,
                    scan_target_ns: 500_000,
                    working_set_bytes: 262_144,
                    nodes: 4096,
                    pass_ns: 12_345,
                    iterations: 40,
                    measured_scan_ns: 498_765,
                    note: None,
                }),
                usage: UsageDelta::default(),
                window_rows: 5,
                dropped_rows: 0,
                counters: BTreeMap::new(),
            }],
            combined: None,
            limits: vec![
                LimitCheck {
                    metric: "latency".into(),
                    limit_ns: 1_000_000,
                    observed_ns: Some(1_234_567),
                    exceeded: true,
                    samples: None,
                },
                LimitCheck {
                    metric: "jitter".into(),
                    limit_ns: 2_000_000,
                    observed_ns: Some(1_230_000),
                    exceeded: false,
                    samples: None,
                },
            ],
            break_event: None,
            warnings: vec!["RT throttling is on (kernel.sched_rt_runtime_us = 950000)".into()],
            detail: None,
        }
    }

    #[test]
    fn small_cyclic_run_prints_exactly() {
        let want = "\
probe        cyclic
period       1ms
cpus         1
policy       fifo, priority 95
real-time    NO - these figures do not describe real-time behaviour:
             - scheduler (requested fifo 95): EPERM: run as root or grant CAP_SYS_NICE
end          interrupted by a signal before the requested length

CPU 1: cycles 4000, releases 4001, skipped 1, overruns 1
  calibration: 40 iterations, pass 12.345us, measured scan 498.765us (target 500.000us)

CPU 1 (us, threshold 100.000us)
metric         min       p50       p90       p99     p99.9    p99.99       max      mean    stddev    >thr%
latency      2.100     3.050     4.999    12.345    88.000  1234.567  1234.567     3.412    20.001   0.0250
jitter    -250.000     0.001     0.900     9.000    80.000  1230.000  1230.000     0.000    19.876   0.0500

largest latency, CPU 1:
    1234.567us  cycle      2500  at     2.501s
      88.000us  cycle      3999  at     3.999s
      12.000us  cycle         7  at     0.007s

largest |jitter|, CPU 1:
    1230.000us  cycle      2500  at     2.501s
    -250.000us  cycle      2501  at     2.501s
      -9.000us  cycle        10  at     0.010s
       9.000us  cycle        11  at     0.011s
       8.000us  cycle        12  at     0.012s

warning: RT throttling is on (kernel.sched_rt_runtime_us = 950000)
";
        let got = summary(&small_cyclic());
        assert_eq!(got, want, "\n--- got ---\n{got}");
    }

    #[test]
    fn wakeup_with_two_threads_prints_combined_and_break_trace() {
        let mut r = small_cyclic();
        r.probe = ProbeKind::Wakeup;
        r.end = EndReason::BreakTrace;
        r.realtime = RealtimeReport {
            realtime: true,
            defaults: vec![],
        };
        r.params.cpus = vec![0, 1];
        r.params.period_ns = 250_000;
        r.params.policy = "other".into();
        r.params.priority = None;
        r.params.nice = Some(0);
        r.host.preemption = String::new();
        r.host.clocksource = String::new();
        r.elapsed_ns = 999_999;
        let lat = ms(
            2,
            [
                5_000, 5_000, 7_000, 7_000, 7_000, 7_000, 7_000, 6_000, 1_000,
            ],
            Some(0),
            Some(0.0),
        );
        let mut metrics = BTreeMap::new();
        metrics.insert("latency".to_string(), lat.clone());
        let t0 = ThreadResult {
            cpu: 0,
            thread: 0,
            metrics: metrics.clone(),
            outliers: BTreeMap::new(),
            calibration: None,
            cycles: 2,
            releases: 2,
            skipped: 0,
            overruns: 0,
            window_rows: 1,
            dropped_rows: 2,
            counters: BTreeMap::new(),
            ..r.threads[0].clone()
        };
        let t1 = ThreadResult {
            cpu: 1,
            thread: 1,
            ..t0.clone()
        };
        r.threads = vec![t0, t1];
        let mut combined = BTreeMap::new();
        combined.insert(
            "latency".to_string(),
            ms(
                4,
                [
                    5_000, 5_000, 7_000, 7_000, 7_000, 7_000, 7_000, 6_000, 1_000,
                ],
                Some(0),
                Some(0.0),
            ),
        );
        combined.insert(
            "period".to_string(),
            ms(
                2,
                [
                    249_000, 250_000, 251_000, 251_000, 251_000, 251_000, 251_000, 250_000, 1_000,
                ],
                None,
                None,
            ),
        );
        r.combined = Some(combined);
        r.limits.clear();
        r.warnings.clear();
        r.break_event = Some(BreakEvent {
            cpu: 1,
            cycle: 1,
            latency_ns: 7_000,
            tracing_stopped: true,
            detail: "trace in /sys/kernel/tracing/trace".into(),
        });
        let want = "\
probe        wakeup
interval     250us
cpus         0-1
policy       other, nice 0
real-time    yes
end          stopped by --break-trace

CPU 0: cycles 2, releases 2, skipped 0, overruns 0
  window rows dropped: 2 of 3 (the writer fell behind)
CPU 1: cycles 2, releases 2, skipped 0, overruns 0
  window rows dropped: 2 of 3 (the writer fell behind)

CPU 0 (us, threshold 100.000us)
metric         min       p50       p90       p99     p99.9    p99.99       max      mean    stddev    >thr%
latency      5.000     5.000     7.000     7.000     7.000     7.000     7.000     6.000     1.000   0.0000

CPU 1 (us, threshold 100.000us)
metric         min       p50       p90       p99     p99.9    p99.99       max      mean    stddev    >thr%
latency      5.000     5.000     7.000     7.000     7.000     7.000     7.000     6.000     1.000   0.0000

all CPUs combined (us, threshold 100.000us)
metric         min       p50       p90       p99     p99.9    p99.99       max      mean    stddev    >thr%
latency      5.000     5.000     7.000     7.000     7.000     7.000     7.000     6.000     1.000   0.0000
period     249.000   250.000   251.000   251.000   251.000   251.000   251.000   250.000     1.000        -

break-trace: latency 7.000us on CPU 1 at cycle 1, tracing stopped: trace in /sys/kernel/tracing/trace
";
        let got = summary(&r);
        assert_eq!(got, want, "\n--- got ---\n{got}");
    }

    #[test]
    fn stored_text_in_the_summary_is_escaped() {
        let mut r = small_cyclic();
        r.warnings = vec!["neighbour said \u{1b}[2J\nPASS".into()];
        r.host.kernel_release = "6.12\u{1b}]0;title\u{7}".into();
        let text = summary(&r);
        assert!(!text.contains('\u{1b}'), "{text}");
        assert!(
            text.contains("\nwarning: neighbour said \\u{1b}[2J\\nPASS\n"),
            "{text}"
        );
        // The kernel is the record's, escaped there.
        assert!(!text.contains("6.12"), "{text}");
        let record = crate::report::header::text(&crate::report::header::of_result(&r));
        assert!(!record.contains('\u{1b}'), "{record}");
        assert!(
            record.contains("\nkernel       6.12\\u{1b}]0;title\\u{7} "),
            "{record}"
        );
    }

    #[test]
    fn microseconds_are_exact_to_the_nanosecond() {
        assert_eq!(us(12_345), "12.345");
        assert_eq!(us(-1), "-0.001");
        assert_eq!(us(0), "0.000");
        assert_eq!(us(100_000_000_007), "100000000.007");
        assert_eq!(secs(2_501_999_999), "2.501");
    }

    #[test]
    fn a_periodic_run_with_explain_prints_what_delayed_its_outlier_under_it() {
        use jitterlab_core::explain::periodic::ExplainDetail;
        use jitterlab_core::explain::{Explanation, ThreadPart};
        let x = |cpu: u32, cycle: u64| Explanation {
            tid: 4242,
            cycle,
            cpu,
            from_ns: 1_000_000,
            to_ns: 2_234_567,
            threads: vec![ThreadPart {
                pid: 77,
                comm: "jl-hog".into(),
                prio: 9,
                ns: 1_234_000,
            }],
            unexplained_ns: 567,
            ..Explanation::default()
        };
        let mut r = small_cyclic();
        // Cycle 2500 on CPU 1 is explained; cycle 7 only on another CPU.
        let detail = ExplainDetail {
            explanations: vec![x(1, 2_500), x(2, 7)],
            ..ExplainDetail::default()
        };
        r.detail = Some(serde_json::to_value(&detail).unwrap());
        let got = summary(&r);
        assert!(
            got.contains(
                "largest latency, CPU 1:\n    1234.567us  cycle      2500  at     2.501s\n                cycle 2500 late by 1.234ms: jl-hog (pid 77, prio 9) 1.234ms, unexplained 567ns\n      88.000us  cycle      3999  at     3.999s\n      12.000us  cycle         7  at     0.007s\n"
            ),
            "{got}"
        );
        assert_eq!(got.matches("late by").count(), 1, "{got}");
        // Without a detail, nothing more.
        assert!(!summary(&small_cyclic()).contains("late by"));
    }
}
