//! The board and the latest snapshots as the Prometheus text exposition
//! format 0.0.4 (`text/plain; version=0.0.4`), the names in base units.
//!
//! The families are built as the `prometheus` crate's data model
//! (`prometheus::proto`) and written by its `TextEncoder`, which is the
//! format's reference writer for Rust: label values escaped, `le="+Inf"`
//! added, counters named with their `_total` as 0.0.4 wants. (The
//! `prometheus-client` crate writes OpenMetrics text instead: a counter's
//! `# TYPE` line names it without `_total` and its sample with it, which a
//! 0.0.4 reader such as `promtool check metrics` takes for an untyped
//! family without help.)
//!
//! What is served (`docs/metrics.md` lists it with an example):
//!
//! * per probe thread and metric (labels `host`, `cell`, `probe`,
//!   `thread`, `cpu`, `metric`): `jitterlab_sample_seconds` — a histogram
//!   with `le` bounds of 1, 2, 5 µs … 100 ms (`…_cycles` for a metric in
//!   CPU cycles, bounds 1000 … 10^8 cycles); signed metrics by magnitude —,
//!   `jitterlab_max_seconds` (since the start), `jitterlab_window_max_seconds`,
//!   `jitterlab_window_min_seconds` and `jitterlab_window_mean_seconds` (the
//!   last window);
//! * per probe thread: `jitterlab_samples_total`, `jitterlab_windows_total`,
//!   `jitterlab_dropped_rows_total`, and for a periodic probe
//!   `jitterlab_overruns_total`;
//! * `jitterlab_run_info` (`host`, `command`), `jitterlab_cell_info` (the
//!   current cell's configuration, scenario, deployment, probe and
//!   repetition), `jitterlab_cells_done` and `jitterlab_cells_planned`,
//!   `jitterlab_neighbour_running` (1 running, 0 died) and
//!   `jitterlab_setting_info` (1 in effect, 0 asked for but not had);
//! * a monitor with `--max-latency`: `jitterlab_alerts_total` (`host`,
//!   `cpu`: windows over the limit, each logged to the system log) and
//!   `jitterlab_alert_log_failures_total` (`host`: alerts the system log
//!   refused).
//!
//! Every figure comes from the last closed window: a scrape is at most one
//! window (1 s by default) behind the probe, and the figures of one thread
//! always agree with each other.

use jitterlab_core::metrics_snapshot::{MetricSnapshot, BOUNDS};
use jitterlab_core::probe::{MetricDef, MetricUnit};
use prometheus::proto::{
    Bucket, Counter, Gauge, Histogram, LabelPair, Metric, MetricFamily, MetricType,
};
use prometheus::{Encoder, TextEncoder};

use super::board::{Board, ProbeThread, State};

/// The content type of what [`render`] writes.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The exposition of `board` now.
pub fn render(board: &Board) -> String {
    let mut state = board.lock();
    let families = families(board, &mut state);
    drop(state);
    let mut out = Vec::new();
    // Writing into memory fails only for a family without samples, which
    // `families` never makes.
    let _ = TextEncoder::new().encode(&families, &mut out);
    String::from_utf8(out).unwrap_or_default()
}

/// The name of a family of unit `unit`: `jitterlab_NAME_seconds` or
/// `jitterlab_NAME_cycles`.
fn unit_name(name: &str, unit: MetricUnit) -> String {
    match unit {
        MetricUnit::Ns => format!("jitterlab_{name}_seconds"),
        MetricUnit::Cycles => format!("jitterlab_{name}_cycles"),
    }
}

/// A value of `unit` in the family's base unit (ns to seconds; cycles as
/// they are).
fn base(v: f64, unit: MetricUnit) -> f64 {
    match unit {
        MetricUnit::Ns => v / 1e9,
        MetricUnit::Cycles => v,
    }
}

/// Families in the order they are written, each with its samples.
struct Families(Vec<MetricFamily>);

impl Families {
    /// Adds `metric` to the family `name`, made with `help` and `kind` when
    /// it is new.
    fn add(&mut self, name: &str, help: &str, kind: MetricType, metric: Metric) {
        if let Some(f) = self.0.iter_mut().find(|f| f.name() == name) {
            f.mut_metric().push(metric);
            return;
        }
        let mut f = MetricFamily::default();
        f.set_name(name.to_string());
        f.set_help(help.to_string());
        f.set_field_type(kind);
        f.set_metric(vec![metric]);
        self.0.push(f);
    }

    fn gauge(&mut self, name: &str, help: &str, labels: &[(&str, &str)], v: f64) {
        let mut g = Gauge::default();
        g.set_value(v);
        let mut m = with_labels(labels);
        m.set_gauge(g);
        self.add(name, help, MetricType::GAUGE, m);
    }

    fn counter(&mut self, name: &str, help: &str, labels: &[(&str, &str)], v: u64) {
        let mut c = Counter::default();
        c.set_value(v as f64);
        let mut m = with_labels(labels);
        m.set_counter(c);
        self.add(name, help, MetricType::COUNTER, m);
    }
}

/// A metric with these labels, in this order.
fn with_labels(labels: &[(&str, &str)]) -> Metric {
    let pairs = labels
        .iter()
        .map(|(k, v)| {
            let mut p = LabelPair::default();
            p.set_name(k.to_string());
            p.set_value(v.to_string());
            p
        })
        .collect();
    let mut m = Metric::default();
    m.set_label(pairs);
    m
}

/// Every family of the board, with the latest snapshot of each thread.
fn families(board: &Board, state: &mut State) -> Vec<MetricFamily> {
    let mut f = Families(Vec::new());
    let host = board.host.as_str();
    f.gauge(
        "jitterlab_run_info",
        "The jitterlab command serving these metrics (always 1).",
        &[
            ("host", host),
            ("command", board.command),
            ("version", crate::version::TOOL_VERSION),
        ],
        1.0,
    );
    if let Some((done, planned)) = state.cells {
        f.gauge(
            "jitterlab_cells_planned",
            "Cells the command measures (a run: 1).",
            &[("host", host)],
            planned as f64,
        );
        f.gauge(
            "jitterlab_cells_done",
            "Cells measured (or skipped) so far.",
            &[("host", host)],
            done as f64,
        );
    }
    if let Some(key) = &state.cell {
        let repetition = key.repetition.to_string();
        f.gauge(
            "jitterlab_cell_info",
            "The cell being measured (always 1).",
            &[
                ("host", host),
                ("cell", &key.name()),
                ("configuration", &key.configuration),
                ("scenario", &key.scenario),
                ("deployment", &key.deployment),
                ("probe", &key.probe),
                ("repetition", &repetition),
            ],
            1.0,
        );
    }
    let cell = state.cell.as_ref().map(|k| k.name()).unwrap_or_default();
    for (name, running) in &state.neighbours {
        f.gauge(
            "jitterlab_neighbour_running",
            "A neighbour of the current cell: 1 while it runs, 0 once it died.",
            &[("host", host), ("cell", &cell), ("neighbour", name)],
            f64::from(u8::from(*running)),
        );
    }
    for s in &state.settings {
        f.gauge(
            "jitterlab_setting_info",
            "A setting of the configuration in effect: 1 when the machine holds the value, 0 when it was asked for but could not be had.",
            &[("host", host), ("setting", &s.name), ("value", &s.value)],
            f64::from(u8::from(s.in_effect)),
        );
    }
    if let Some(alerts) = &state.alerts {
        for (cpu, &n) in &alerts.windows {
            f.counter(
                "jitterlab_alerts_total",
                "Windows whose latency exceeded --max-latency, each logged to the system log at priority warning.",
                &[("host", host), ("cpu", &cpu.to_string())],
                n,
            );
        }
        f.counter(
            "jitterlab_alert_log_failures_total",
            "Alerts the system log (journal or /dev/log) refused; each was written to stderr instead.",
            &[("host", host)],
            alerts.log_failures,
        );
    }
    for t in state.threads.iter_mut() {
        thread_families(&mut f, host, t);
    }
    f.0
}

/// The families of one probe thread's latest snapshot.
fn thread_families(f: &mut Families, host: &str, t: &mut ProbeThread) {
    let snap = *t.reader.read();
    let (thread, cpu) = (t.thread.to_string(), t.cpu.to_string());
    let labels = [
        ("host", host),
        ("cell", t.cell.as_str()),
        ("probe", t.probe),
        ("thread", thread.as_str()),
        ("cpu", cpu.as_str()),
    ];
    f.counter(
        "jitterlab_samples_total",
        "Samples measured in the closed windows (a periodic probe: cycles).",
        &labels,
        snap.samples,
    );
    f.counter(
        "jitterlab_windows_total",
        "Windows closed (one row each).",
        &labels,
        snap.windows,
    );
    if t.periodic {
        f.counter(
            "jitterlab_overruns_total",
            "Cycles that ran past the next release.",
            &labels,
            snap.overruns,
        );
    }
    f.counter(
        "jitterlab_dropped_rows_total",
        "Window rows the writer could not take in time (counted, never waited for).",
        &labels,
        snap.dropped_rows,
    );
    for (def, m) in t.metrics.iter().zip(&snap.metrics) {
        let mut l = labels.to_vec();
        l.push(("metric", def.name));
        metric_families(f, def, m, &l);
    }
}

/// The families of one metric of a thread.
fn metric_families(f: &mut Families, def: &MetricDef, m: &MetricSnapshot, labels: &[(&str, &str)]) {
    let unit = def.unit;
    let mut h = Histogram::default();
    h.set_sample_count(m.count);
    h.set_sample_sum(base(m.sum as f64, unit));
    let cumulative = m.cumulative();
    h.set_bucket(
        BOUNDS
            .iter()
            .zip(cumulative)
            .map(|(&b, c)| {
                let mut bucket = Bucket::default();
                bucket.set_upper_bound(base(b as f64, unit));
                bucket.set_cumulative_count(c);
                bucket
            })
            .collect(),
    );
    let mut metric = with_labels(labels);
    metric.set_histogram(h);
    let (help, unit_word) = match unit {
        MetricUnit::Ns => (
            "Samples of each metric of each probe thread, seconds; signed metrics (jitter) by magnitude.",
            "seconds",
        ),
        MetricUnit::Cycles => (
            "Samples of each metric of each probe thread, CPU cycles; signed metrics by magnitude.",
            "cycles",
        ),
    };
    f.add(
        &unit_name("sample", unit),
        help,
        MetricType::HISTOGRAM,
        metric,
    );
    if let Some(max) = m.max {
        f.gauge(
            &unit_name("max", unit),
            &format!("The largest value of each metric since the start, {unit_word}."),
            labels,
            base(max as f64, unit),
        );
    }
    if m.window.count > 0 {
        let w = &m.window;
        for (name, what, v) in [
            ("window_max", "largest", w.max),
            ("window_min", "smallest", w.min),
            ("window_mean", "mean", w.mean),
        ] {
            f.gauge(
                &unit_name(name, unit),
                &format!("The {what} value of each metric in the last closed window, {unit_word}."),
                labels,
                base(v as f64, unit),
            );
        }
    }
}
