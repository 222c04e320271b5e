//! From one cell of a checked spec to what the measurement needs: the
//! [`RunPlan`].
//!
//! Both front doors end here. A bench cell is a cell of the spec the user
//! wrote; `jitterlab run X` is the one cell of the spec the command line
//! built from its flags. Neither is checked again: the spec checker and the
//! command line each refused what is wrong, naming their own keys or flags.
//! What only a run can ask for — output files, `--cycles`, `--strict`,
//! `--break-trace`, the live view — travels beside the spec in
//! [`RunOptions`]; a bench cell measures with [`RunOptions::default`].

use jitterlab_core::defaults;
use jitterlab_core::result::{Calibration, Params, ProbeKind};
use jitterlab_core::spec::{CellPlan, Spec};

use crate::out_files::RunOutputs;
use crate::system::container::Engine;
use crate::system::rt::SchedRequest;

/// How a measurement ends (serialized in a container cell's hand-over,
/// `probe::container::InnerCell`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stop {
    /// At the spec's duration (a bench cell; a run with `--duration` or its
    /// default). A chase with a sample count ends after it, sooner.
    #[default]
    Duration,
    /// After this many cycles (hand-overs, events) per thread: `--cycles`.
    Cycles(u64),
    /// After the chase's samples ([`jitterlab_core::defaults::SAMPLES`]
    /// unless given), with no deadline: `run chase` without `--duration`.
    Samples,
    /// Never on its own, only by a signal: `jitterlab monitor`.
    Never,
}

/// What `jitterlab run` asks for beside its one-cell spec; the default is
/// a bench cell's (no files of its own, rows into the bench's store).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOptions {
    /// How the measurement ends.
    pub stop: Stop,
    /// `--strict`: fail when a real-time default cannot be applied.
    pub strict: bool,
    /// `--json`, `--junit`, `--csv`, `--histogram`: the files it writes.
    pub outputs: RunOutputs,
    /// `--histogram-buckets`: the 1 µs buckets of the main latency's
    /// histogram (stored, and written by `--histogram`).
    pub histogram_buckets: usize,
    /// `--break-trace`: the latency that stops the kernel trace and the run.
    pub break_trace: Option<u64>,
    /// `--progress`: the live view even when stdout is not a terminal.
    pub progress: bool,
    /// `--engine`: a `container` cell's engine; `None`: podman, else
    /// docker, whichever works.
    pub engine: Option<Engine>,
    /// `--stream` (hidden), and the cell inside a container (`__cell`):
    /// the window rows and the result as JSON lines on stdout, for the
    /// host side of a container cell (`probe::container::stream`); no
    /// live view, no summary.
    pub stream: bool,
    /// `--calibration` (hidden), or handed over with a container cell
    /// (`__cell`): the scan calibrations to measure with, by thread,
    /// instead of calibrating (a bench's, made idle on the host).
    pub calibrated: Option<Vec<Calibration>>,
    /// `jitterlab monitor`: the series, its retention and its alerts.
    pub monitor: Option<MonitorOptions>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            stop: Stop::Duration,
            strict: false,
            outputs: RunOutputs::default(),
            histogram_buckets: defaults::HISTOGRAM_BUCKETS,
            break_trace: None,
            progress: false,
            engine: None,
            stream: false,
            calibrated: None,
            monitor: None,
        }
    }
}

/// What `jitterlab monitor` asks of the runner beside its wake-up cell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonitorOptions {
    /// `--series`.
    pub series: String,
    /// `--keep-windows`, `--keep-5min`, `--keep-hourly`.
    pub retention: crate::store::monitor::Retention,
    /// `--max-latency`: the alert limit, ns.
    pub max_latency_ns: Option<u64>,
}

/// The limits a measurement checks its result against.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// On the main latency, ns.
    pub latency: Option<u64>,
    /// On the periodic jitter's magnitude, ns.
    pub jitter: Option<u64>,
    /// On the execution time, ns.
    pub exec: Option<u64>,
}

/// A measurement, planned and ready to start.
#[derive(Debug, Clone, PartialEq)]
pub struct RunPlan {
    /// The probe.
    pub kind: ProbeKind,
    /// Period or interval, ns.
    pub period: u64,
    /// Probe CPUs, one thread each.
    pub cpus: Vec<usize>,
    /// Every probe CPU of the configuration (a kind that measures on the
    /// first only still has its observer keep off all of them:
    /// `Placement::Observer`).
    pub config_cpus: Vec<usize>,
    /// The cell's neighbour CPUs (an observer keeps off them where it can).
    pub neighbour_cpus: Vec<usize>,
    /// `(working set, scan)` for the cyclic probe.
    pub scan: Option<(u64, u64)>,
    /// Scheduling request.
    pub sched: SchedRequest,
    /// Parameters as stored in the result.
    pub params: Params,
    /// Worst samples kept per metric.
    pub outliers: usize,
    /// The limits of the result.
    pub limits: Limits,
    /// 1 µs buckets of the main latency's histogram every probe thread
    /// keeps (`--histogram-buckets`, else the default).
    pub histogram_buckets: usize,
}

/// The plan of one cell of `spec` (a run's only cell, or a bench's).
pub fn plan(spec: &Spec, cell: &CellPlan, opts: &RunOptions) -> RunPlan {
    let config = &spec.configurations[cell.configuration];
    let probe = &spec.probes[cell.probe];
    let cpus = probe.cpus(&config.probe_cpus);
    let (duration_ns, cycles) = match opts.stop {
        Stop::Duration => (Some(spec.cell_duration_ns(cell)), None),
        Stop::Cycles(n) => (None, Some(n)),
        Stop::Samples => (None, probe.samples()),
        Stop::Never => (None, None),
    };
    let scan = probe.scan();
    RunPlan {
        kind: probe.kind(),
        period: probe.period_ns,
        scan,
        sched: SchedRequest {
            policy: config.policy,
            priority: config.priority.unwrap_or(0),
            nice: config.nice.unwrap_or(0),
        },
        params: Params {
            period_ns: probe.period_ns,
            duration_ns,
            cycles,
            cpus: cpus.clone(),
            policy: config.policy.name().into(),
            priority: config.priority,
            nice: config.nice,
            scan_ns: scan.map_or(0, |s| s.1),
            working_set_bytes: scan.map_or(0, |s| s.0),
            window_ns: probe.window_ns,
            threshold_ns: probe.threshold(),
            break_trace_ns: opts.break_trace,
            strict: opts.strict,
        },
        cpus,
        config_cpus: config.probe_cpus.clone(),
        neighbour_cpus: spec.neighbour_cpus(cell),
        outliers: probe.outliers,
        limits: Limits {
            latency: probe.latency_limit(),
            jitter: probe.max_jitter_ns,
            exec: probe.max_exec_ns,
        },
        histogram_buckets: opts.histogram_buckets,
    }
}

/// The priority of a probe's real-time threads in `plan` (the event probes'
/// and rtla's threads are SCHED_FIFO whatever the policy).
pub fn fifo_priority(plan: &RunPlan) -> i32 {
    plan.params.priority.unwrap_or(defaults::PRIORITY)
}
