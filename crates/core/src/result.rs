//! The result of a run, as written to `--json` and (later) the database.
//!
//! The model is versioned ([`SCHEMA_VERSION`], design rule 9): a reader checks
//! the version before it trusts a field. Times are integer nanoseconds; the
//! only floats are percentages. Everything a reader needs to judge the figures
//! is inside: the parameters, the host snapshot, which real-time defaults held
//! and which did not (and so whether the result may be called real-time), how
//! the run ended, and the calibration the scan workload used.
//!
//! The design rules cited here are in `docs/design.md`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::outlier::Outlier;
use crate::stats::MetricSummary;

/// Which probe produced a result (defined with the probe descriptors).
pub use crate::probe::kind::ProbeKind;

/// Version of the JSON result schema. Bump on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EndReason {
    /// Reached its duration or cycle count.
    Completed,
    /// Ended early by a terminating signal (SIGINT, SIGTERM, SIGHUP…).
    Interrupted,
    /// Ended by `--break-trace`.
    BreakTrace,
}

/// A terminating signal's name as a person reads it: `SIGTERM`, `SIGINT`,
/// `SIGHUP`, else `signal N`.
pub fn signal_name(signal: i32) -> String {
    match signal {
        1 => "SIGHUP".into(),
        2 => "SIGINT".into(),
        15 => "SIGTERM".into(),
        n => format!("signal {n}"),
    }
}

impl EndReason {
    /// The name used in JSON and as a stored run's status.
    pub fn name(&self) -> &'static str {
        match self {
            EndReason::Completed => "completed",
            EndReason::Interrupted => "interrupted",
            EndReason::BreakTrace => "break-trace",
        }
    }
}

/// Parameters of the run as validated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Params {
    /// Period (cyclic) or interval (wakeup), ns.
    pub period_ns: u64,
    /// Requested duration, ns.
    pub duration_ns: Option<u64>,
    /// Requested cycle count.
    pub cycles: Option<u64>,
    /// Probe CPUs.
    pub cpus: Vec<usize>,
    /// `fifo`, `rr` or `other`.
    pub policy: String,
    /// Real-time priority (fifo/rr).
    pub priority: Option<i32>,
    /// Nice value (other).
    pub nice: Option<i32>,
    /// Scan compute target per cycle, ns (cyclic).
    pub scan_ns: u64,
    /// Working set walked per cycle, bytes (cyclic).
    pub working_set_bytes: u64,
    /// Window width, ns.
    pub window_ns: u64,
    /// Threshold for "% over", ns.
    pub threshold_ns: u64,
    /// `--break-trace` latency, ns.
    pub break_trace_ns: Option<u64>,
    /// `--strict` was given.
    pub strict: bool,
}

/// The parameters of a run no flag changed: a 1 ms period for the default
/// 10 s, SCHED_FIFO at the default priority, 1 s windows, the default
/// threshold, no scan and no CPU chosen yet (a wake-up probe's). Variants are
/// written from it with struct update syntax, as the tests do.
impl Default for Params {
    fn default() -> Params {
        use crate::defaults;
        Params {
            period_ns: defaults::PERIOD_NS,
            duration_ns: Some(defaults::DURATION_NS),
            cycles: None,
            cpus: Vec::new(),
            policy: "fifo".into(),
            priority: Some(defaults::PRIORITY),
            nice: None,
            scan_ns: 0,
            working_set_bytes: 0,
            window_ns: defaults::WINDOW_NS,
            threshold_ns: defaults::THRESHOLD_NS,
            break_trace_ns: None,
            strict: false,
        }
    }
}

/// One real-time default of design rule 3 and whether it held.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DefaultStatus {
    /// `scheduler`, `affinity`, `mlockall`, `prefault`, `cpu_dma_latency`, …
    pub name: String,
    /// What was asked for.
    pub requested: String,
    /// True when it was applied (and verified where it can be).
    pub applied: bool,
    /// The kernel's answer or the reason, and what to do about it.
    pub detail: String,
    /// False for defaults that do not decide whether a result is real-time.
    pub required: bool,
}

/// The real-time set-up as it was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct RealtimeReport {
    /// False when any required default could not be had: the figures then do
    /// not describe real-time behaviour.
    pub realtime: bool,
    /// Every default, applied or not.
    pub defaults: Vec<DefaultStatus>,
}

/// Facts about the machine that decide how to read the figures (rteval keeps
/// such a snapshot in every report).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct HostSnapshot {
    /// Host name.
    pub hostname: String,
    /// `uname -r`.
    pub kernel_release: String,
    /// `uname -v` (names PREEMPT_RT / PREEMPT_DYNAMIC).
    pub kernel_version: String,
    /// `uname -m`.
    pub machine: String,
    /// `/proc/cmdline`.
    pub cmdline: String,
    /// Preemption model: `full`, `voluntary`, `none`, `lazy`, `rt`, or what the
    /// kernel says, with where it came from.
    pub preemption: String,
    /// True on a PREEMPT_RT kernel (`/sys/kernel/realtime` is 1).
    pub realtime_kernel: bool,
    /// `model name` from `/proc/cpuinfo`.
    pub cpu_model: String,
    /// Online CPUs.
    pub cpus_online: String,
    /// Isolated CPUs (`isolcpus=`).
    pub cpus_isolated: String,
    /// `nohz_full` CPUs.
    pub cpus_nohz_full: String,
    /// Current clocksource.
    pub clocksource: String,
    /// `kernel.sched_rt_runtime_us` (−1: no RT throttling).
    pub sched_rt_runtime_us: Option<i64>,
    /// `kernel.sched_rt_period_us`.
    pub sched_rt_period_us: Option<i64>,
    /// True when the kernel reports running under a hypervisor.
    pub virtualized: bool,
    /// The machine's identity: a hash of `/etc/machine-id`, never the id
    /// itself (systemd's app-specific id for jitterlab); absent when the
    /// machine has none, and in results stored before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_id: Option<String>,
    /// What a qualification record names beyond the above (microcode,
    /// cores and SMT, the hypervisor, resctrl); `None` in results stored
    /// before it was kept, which reports show as "not recorded".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<HostDetails>,
}

/// The host facts a qualification record needs that the first snapshots
/// did not keep ([`HostSnapshot::details`]). An empty string or `None` is
/// a fact the machine did not give (no `microcode` line on ARM, no SMT
/// control file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct HostDetails {
    /// `microcode` of `/proc/cpuinfo`'s first processor (`0x1000065`).
    pub microcode: String,
    /// Physical cores: distinct `core_cpus_list` (or `thread_siblings_list`)
    /// of the online CPUs.
    pub cores: Option<u32>,
    /// `/sys/devices/system/cpu/smt/control`: `on`, `off`, `forceoff`,
    /// `notsupported`, `notimplemented`.
    pub smt: String,
    /// The hypervisor by name (`KVM`, `Xen`, `Hyper-V`, `VMware`, …),
    /// `unknown` when the CPU says it runs under one that nothing names;
    /// empty on bare metal.
    pub hypervisor: String,
    /// True when the kernel offers resctrl (`/sys/fs/resctrl` or a
    /// `resctrl` line in `/proc/filesystems`).
    pub resctrl: bool,
}

/// How the scan workload was calibrated (once, idle, on the probe CPU).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Calibration {
    /// CPU it was calibrated on.
    pub cpu: usize,
    /// Target scan time, ns.
    pub scan_target_ns: u64,
    /// Working set, bytes.
    pub working_set_bytes: u64,
    /// Cache lines in the working set's random cycle.
    pub nodes: u64,
    /// Median time of one pass over the working set, ns.
    pub pass_ns: u64,
    /// Compute iterations per scan, fixed for the whole run.
    pub iterations: u64,
    /// Median time of a whole scan after calibration, ns.
    pub measured_scan_ns: u64,
    /// Explanation when the target could not be met.
    pub note: Option<String>,
}

/// Resource usage of a probe thread over its measured loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct UsageDelta {
    /// Voluntary context switches (about one per cycle: the sleep).
    pub voluntary_switches: u64,
    /// Involuntary context switches (preemptions).
    pub involuntary_switches: u64,
    /// Minor page faults during the loop (should be 0 with mlockall).
    pub minor_faults: u64,
    /// Major page faults during the loop.
    pub major_faults: u64,
}

/// What one probe thread measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThreadResult {
    /// Thread index.
    pub thread: u32,
    /// CPU it was pinned to.
    pub cpu: usize,
    /// Kernel thread id.
    pub tid: i32,
    /// Measured cycles.
    pub cycles: u64,
    /// Releases due: always `cycles + skipped`.
    pub releases: u64,
    /// Releases skipped after overruns.
    pub skipped: u64,
    /// Cycles that overran.
    pub overruns: u64,
    /// Statistics per metric name.
    pub metrics: BTreeMap<String, MetricSummary>,
    /// Largest outliers per metric name.
    pub outliers: BTreeMap<String, Vec<Outlier>>,
    /// Scan calibration (cyclic probe).
    pub calibration: Option<Calibration>,
    /// Context switches and page faults during the loop.
    pub usage: UsageDelta,
    /// Window rows queued.
    pub window_rows: u64,
    /// Window rows dropped because the writer fell behind.
    pub dropped_rows: u64,
    /// Named counters of the thread beyond its metrics (per-node frame
    /// counts of a network probe, …); empty for today's probes, and then
    /// left out of the JSON.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub counters: BTreeMap<String, u64>,
}

/// One pass/fail limit and what was observed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LimitCheck {
    /// Metric name.
    pub metric: String,
    /// Limit on the metric's largest magnitude, ns.
    pub limit_ns: u64,
    /// Largest magnitude observed, ns; `None` (JSON `null`) when the
    /// metric has no sample: not measured, never 0.
    pub observed_ns: Option<u64>,
    /// True when `observed_ns > limit_ns`.
    pub exceeded: bool,
    /// The samples behind `observed_ns` (absent in results stored before
    /// it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<u64>,
}

/// The `--break-trace` event that ended a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BreakEvent {
    /// CPU of the thread that saw it.
    pub cpu: usize,
    /// Its measured-cycle number.
    pub cycle: u64,
    /// The latency that broke the limit, ns.
    pub latency_ns: u64,
    /// True when tracing was stopped so the trace buffer holds the lead-up.
    pub tracing_stopped: bool,
    /// Where the trace is, or why there is none.
    pub detail: String,
}

/// A whole run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// `jitterlab`.
    pub tool: String,
    /// Version of jitterlab.
    pub tool_version: String,
    /// The probe.
    pub probe: ProbeKind,
    /// Start, RFC 3339, UTC.
    pub started_at: String,
    /// Measured time from first release to end, ns.
    pub elapsed_ns: u64,
    /// How the run ended.
    pub end: EndReason,
    /// True when the run ended before its duration or cycle count.
    pub interrupted: bool,
    /// The terminating signal that stopped it (15 for SIGTERM), when one
    /// did: a run stopped on request, not one whose process died.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// The command line.
    pub command_line: Vec<String>,
    /// Parameters.
    pub params: Params,
    /// Real-time set-up.
    pub realtime: RealtimeReport,
    /// Host snapshot.
    pub host: HostSnapshot,
    /// Per thread.
    pub threads: Vec<ThreadResult>,
    /// All threads combined (for more than one thread).
    pub combined: Option<BTreeMap<String, MetricSummary>>,
    /// Pass/fail limits.
    pub limits: Vec<LimitCheck>,
    /// `--break-trace` event.
    pub break_event: Option<BreakEvent>,
    /// Warnings printed during the run.
    pub warnings: Vec<String>,
    /// What an event probe reports beyond its metrics (the chase's buffer
    /// and TSC frequency, the response probe's event source, rtla's
    /// output…), as that probe's module documents it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<serde_json::Value>,
}

impl RunResult {
    /// The result of a cell whose process ended (killed, power lost) before
    /// it stored its result: only what its committed windows say, as the
    /// combined figures, marked interrupted, with `note` as its warning.
    pub fn partial(
        probe: ProbeKind,
        params: Params,
        started_at: String,
        elapsed_ns: u64,
        metrics: BTreeMap<String, MetricSummary>,
        note: String,
    ) -> RunResult {
        RunResult {
            schema_version: SCHEMA_VERSION,
            tool: "jitterlab".into(),
            tool_version: String::new(),
            probe,
            started_at,
            elapsed_ns,
            end: EndReason::Interrupted,
            interrupted: true,
            signal: None,
            command_line: Vec::new(),
            params,
            realtime: RealtimeReport::default(),
            host: HostSnapshot::default(),
            threads: Vec::new(),
            combined: Some(metrics),
            limits: Vec::new(),
            break_event: None,
            warnings: vec![note],
            detail: None,
        }
    }
}

/// Compares a metric's largest magnitude with a limit; a metric without a
/// sample has no observed figure and does not exceed (its verdict is "not
/// measured").
pub fn check_limit(metric: &str, limit_ns: u64, summary: &MetricSummary) -> LimitCheck {
    let observed = summary.largest_magnitude();
    LimitCheck {
        metric: metric.to_string(),
        limit_ns,
        observed_ns: observed,
        exceeded: observed.is_some_and(|o| o > limit_ns),
        samples: Some(summary.count),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::MetricStats;

    #[test]
    fn limit_uses_the_largest_magnitude_of_signed_metrics() {
        let mut s = MetricStats::new(true, None);
        s.record(-700);
        s.record(300);
        let c = check_limit("jitter", 500, &s.summary());
        assert_eq!((c.observed_ns, c.samples), (Some(700), Some(2)));
        assert!(c.exceeded);
        let ok = check_limit("jitter", 700, &s.summary());
        assert!(!ok.exceeded);
    }

    #[test]
    fn a_limit_without_a_sample_observes_nothing_and_reads_null() {
        let none = MetricStats::new(false, None).summary();
        let c = check_limit("screw-to-screw", 1_000, &none);
        assert_eq!(
            (c.observed_ns, c.exceeded, c.samples),
            (None, false, Some(0))
        );
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(
            json,
            r#"{"metric":"screw-to-screw","limit_ns":1000,"observed_ns":null,"exceeded":false,"samples":0}"#
        );
        // A limit stored before the sample count was kept reads back.
        let old: LimitCheck = serde_json::from_str(
            r#"{"metric":"latency","limit_ns":5,"observed_ns":7,"exceeded":true}"#,
        )
        .unwrap();
        assert_eq!((old.observed_ns, old.samples), (Some(7), None));
    }

    #[test]
    fn kinds_read_their_descriptor() {
        for &k in ProbeKind::ALL {
            assert_eq!(
                serde_json::to_string(&k).unwrap(),
                format!("\"{}\"", k.name())
            );
            assert_eq!(k.metrics().len(), k.descriptor().metrics.len());
        }
        assert_eq!(ProbeKind::Cyclic.metrics(), crate::probe::PERIODIC_METRICS);
        assert_eq!(
            ProbeKind::Chase.metric("chase").unwrap().unit,
            crate::probe::MetricUnit::Cycles
        );
        assert!(ProbeKind::Response.metric("latency").is_none());
        assert_eq!(ProbeKind::Response.main_latency(), Some("response"));
        assert_eq!(ProbeKind::Chase.main_latency(), None);
        assert!(ProbeKind::Wakeup.periodic() && !ProbeKind::Timerlat.periodic());
    }

    #[test]
    fn counters_are_left_out_of_the_json_when_empty() {
        let t = ThreadResult {
            thread: 0,
            cpu: 1,
            tid: 7,
            cycles: 2,
            releases: 2,
            skipped: 0,
            overruns: 0,
            metrics: BTreeMap::new(),
            outliers: BTreeMap::new(),
            calibration: None,
            usage: UsageDelta::default(),
            window_rows: 1,
            dropped_rows: 0,
            counters: BTreeMap::new(),
        };
        let json = serde_json::to_string(&t).unwrap();
        assert!(!json.contains("counters"), "{json}");
        // Today's JSON, without the field, reads back.
        assert_eq!(serde_json::from_str::<ThreadResult>(&json).unwrap(), t);
        let mut n = t.clone();
        n.counters.insert("node-1 frames".into(), 42);
        let json = serde_json::to_string(&n).unwrap();
        assert!(
            json.ends_with(r#""counters":{"node-1 frames":42}}"#),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<ThreadResult>(&json).unwrap(), n);
    }

    #[test]
    fn end_reason_serialises_kebab_case() {
        assert_eq!(
            serde_json::to_string(&EndReason::BreakTrace).unwrap(),
            "\"break-trace\""
        );
        // The names the store and the reports use are serde's names.
        for e in [
            EndReason::Completed,
            EndReason::Interrupted,
            EndReason::BreakTrace,
        ] {
            assert_eq!(
                serde_json::to_string(&e).unwrap(),
                format!("\"{}\"", e.name())
            );
        }
        for p in [ProbeKind::Cyclic, ProbeKind::Wakeup] {
            assert_eq!(
                serde_json::to_string(&p).unwrap(),
                format!("\"{}\"", p.name())
            );
        }
        assert_eq!(
            serde_json::to_string(&ProbeKind::Wakeup).unwrap(),
            "\"wakeup\""
        );
    }
}
