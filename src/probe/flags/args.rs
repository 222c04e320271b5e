//! The flags every probe's `run` subcommand shares: their declarations
//! ([`common_flags`], listed after each kind's own) and the plain
//! [`CommonArgs`] read from their values; `--deployment` and `--engine`.

use std::path::PathBuf;

use jitterlab_core::defaults;
use jitterlab_core::limits;
use jitterlab_core::spec::{Deployment, Policy};

use super::decl::{time_text, Flag, FlagValues, ValueKind};
use crate::system::container::Engine;

/// Options shared by every probe's `run` subcommand, as the command line
/// gave them ([`common_flags`] declares them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommonArgs {
    /// `--duration`, ns.
    pub duration: Option<u64>,
    /// `--cycles`.
    pub cycles: Option<u64>,
    /// `--policy`.
    pub policy: Policy,
    /// `--priority`.
    pub priority: Option<i32>,
    /// `--nice`.
    pub nice: Option<i32>,
    /// `--strict`.
    pub strict: bool,
    /// `--window`, ns.
    pub window: u64,
    /// `--threshold`, ns.
    pub threshold: u64,
    /// `--outliers`.
    pub outliers: usize,
    /// `--json`.
    pub json: Option<PathBuf>,
    /// `--junit`.
    pub junit: Option<PathBuf>,
    /// `--csv`.
    pub csv: Option<PathBuf>,
    /// `--histogram`.
    pub histogram: Option<PathBuf>,
    /// `--histogram-buckets`.
    pub histogram_buckets: usize,
    /// `--max-latency`, ns.
    pub max_latency: Option<u64>,
    /// `--max-jitter`, ns.
    pub max_jitter: Option<u64>,
    /// `--max-exec`, ns.
    pub max_exec: Option<u64>,
    /// `--break-trace`, ns.
    pub break_trace: Option<u64>,
    /// `--progress`.
    pub progress: bool,
    /// `--no-dma-latency`.
    pub no_dma_latency: bool,
    /// `--no-db`.
    pub no_db: bool,
    /// `--deployment`.
    pub deployment: DeploymentArg,
    /// `--engine`.
    pub engine: Option<EngineArg>,
    /// `--stream` (hidden).
    pub stream: bool,
    /// `--calibration` (hidden), JSON.
    pub calibration: Option<String>,
}

/// `--policy`'s names and their help.
pub const POLICY: ValueKind = ValueKind::Choice {
    names: &["fifo", "rr", "other"],
    helps: &[
        "SCHED_FIFO (real-time)",
        "SCHED_RR (real-time, round robin among equal priorities)",
        "SCHED_OTHER (time-sharing; not real-time)",
    ],
};

/// `--priority` and `--nice`: any `i32`; the range is the check's.
pub const I32: ValueKind = ValueKind::Int(i32::MIN as i64, i32::MAX as i64);

/// `--policy`, `--priority`: shared with `jitterlab monitor`.
pub fn policy_flag() -> Flag {
    Flag::new("policy", POLICY, "Scheduling policy")
        .value_name("POLICY")
        .default(Policy::Fifo.name())
}

/// The flags of [`CommonArgs`], in the order help lists them.
pub fn common_flags() -> Vec<Flag> {
    use ValueKind::{Count, Path, Switch, Text, Time, Window};
    vec![
        Flag::new(
            "duration",
            Time,
            "How long to run [default: 10s unless --cycles is given]",
        )
        .conflicts(&["cycles"]),
        Flag::new(
            "cycles",
            Count(&limits::CYCLES),
            "Number of measured cycles per thread, instead of --duration",
        ),
        policy_flag(),
        Flag::new(
            "priority",
            I32,
            "Real-time priority for fifo/rr (1-99) [default: 95]; not with other",
        )
        .value_name("PRIO"),
        Flag::new(
            "nice",
            I32,
            "Nice value for --policy other (-20..19) [default: 0]; not with fifo/rr",
        )
        .value_name("NICE"),
        Flag::new(
            "strict",
            Switch,
            "Fail (exit 2) when a real-time default (scheduler, pinning, mlockall, \
             /dev/cpu_dma_latency) cannot be applied, instead of marking the result \
             \"not real-time\"",
        ),
        Flag::new(
            "window",
            Window,
            "Width of the per-window rows (min, max, mean, count); at least 1ms",
        )
        .default(time_text(defaults::WINDOW_NS)),
        Flag::new(
            "threshold",
            Time,
            "Threshold for the share of samples over it (EPICS tables use 100us)",
        )
        .default(time_text(defaults::THRESHOLD_NS)),
        Flag::new(
            "outliers",
            Count(&limits::OUTLIERS),
            "Outliers kept per metric, with cycle number and time since start (at most 10000)",
        )
        .default(defaults::OUTLIERS.to_string()),
        Flag::new(
            "json",
            Path,
            "Write the schema-versioned result (statistics, host snapshot, real-time set-up) \
             as JSON (`-`: stdout; the summary then goes to stderr)",
        ),
        Flag::new(
            "junit",
            Path,
            "Write the verdicts as a JUnit XML report for CI servers: one test case per limit \
             and check, a failure with its figure, \"not measured\" as a failure with its \
             reason (`-`: stdout)",
        ),
        Flag::new(
            "csv",
            Path,
            "Write the per-window rows as CSV (streamed while running into a file renamed over \
             FILE when the run ends; `-`: stdout, row by row)",
        ),
        Flag::new(
            "histogram",
            Path,
            "Write the wake-up latency histogram in cyclictest's text format (1 us buckets; \
             `-`: stdout)",
        ),
        Flag::new(
            "histogram_buckets",
            Count(&limits::HISTOGRAM_BUCKETS),
            "Number of 1 us buckets of the main latency's histogram, stored with the run and \
             written by --histogram (at most 100000); later latencies count as overflows",
        )
        .default(defaults::HISTOGRAM_BUCKETS.to_string()),
        Flag::new(
            "max_latency",
            Time,
            "Exit 1 when a wake-up latency exceeds this",
        ),
        Flag::new(
            "max_jitter",
            Time,
            "Exit 1 when a periodic jitter's magnitude exceeds this",
        ),
        Flag::new(
            "max_exec",
            Time,
            "Exit 1 when an execution time exceeds this",
        ),
        Flag::new(
            "break_trace",
            Time,
            "When a wake-up latency exceeds this, mark the kernel trace buffer, stop tracing, \
             and end the run (cyclictest's -b)",
        ),
        Flag::new(
            "progress",
            Switch,
            "Show the live status even when stdout is not a terminal (plain lines on stderr, \
             once a second)",
        ),
        Flag::new(
            "no_dma_latency",
            Switch,
            "Do not hold /dev/cpu_dma_latency at 0 (to measure an untuned baseline)",
        ),
        no_db_flag(),
        Flag::new(
            "deployment",
            DEPLOYMENT,
            "Where the probe runs: on the host, or inside a container built from this \
             jitterlab (FROM scratch, no registry), with every real-time default or not at all",
        )
        .value_name("DEPLOYMENT")
        .default("host"),
        Flag::new(
            "engine",
            ENGINE,
            "The container engine of --deployment container [default: podman, else docker, \
             whichever answers `ENGINE version`]",
        )
        .value_name("ENGINE"),
        Flag::new(
            "stream",
            Switch,
            "Internal: write the window rows and the result as JSON lines on stdout (the probe \
             side of a container cell)",
        )
        .hidden(),
        Flag::new(
            "calibration",
            Text,
            "Internal: the scan calibrations to measure with, as JSON (a bench's, made idle on \
             the host, for its container cell)",
        )
        .value_name("JSON")
        .hidden(),
    ]
}

/// `--no-db`: every kind has it (`jitterlab run` decides the database
/// from it).
pub fn no_db_flag() -> Flag {
    Flag::new(
        "no_db",
        ValueKind::Switch,
        "Do not store the run in the results database",
    )
}

impl CommonArgs {
    /// The common flags' values.
    pub fn read(v: &FlagValues) -> CommonArgs {
        let i32_of = |id: &str| v.opt_i64(id).map(|n| n as i32);
        CommonArgs {
            duration: v.opt_u64("duration"),
            cycles: v.opt_u64("cycles"),
            policy: Policy::parse(&v.text("policy")).expect("one of --policy's names"),
            priority: i32_of("priority"),
            nice: i32_of("nice"),
            strict: v.switch("strict"),
            window: v.u64("window"),
            threshold: v.u64("threshold"),
            outliers: v.u64("outliers") as usize,
            json: v.opt_path("json"),
            junit: v.opt_path("junit"),
            csv: v.opt_path("csv"),
            histogram: v.opt_path("histogram"),
            histogram_buckets: v.u64("histogram_buckets") as usize,
            max_latency: v.opt_u64("max_latency"),
            max_jitter: v.opt_u64("max_jitter"),
            max_exec: v.opt_u64("max_exec"),
            break_trace: v.opt_u64("break_trace"),
            progress: v.switch("progress"),
            no_dma_latency: v.switch("no_dma_latency"),
            no_db: v.switch("no_db"),
            deployment: DeploymentArg::read(v),
            engine: v
                .opt_text("engine")
                .map(|n| EngineArg::parse(&n).expect("one of --engine's names")),
            stream: v.switch("stream"),
            calibration: v.opt_text("calibration"),
        }
    }
}

/// `--deployment`'s names and their help.
pub const DEPLOYMENT: ValueKind = ValueKind::Choice {
    names: &["host", "container"],
    helps: &[
        "On the host",
        "Inside a container (timerlat: N/A, with the reason)",
    ],
};

/// `--engine`'s names and their help.
pub const ENGINE: ValueKind = ValueKind::Choice {
    names: &["podman", "docker"],
    helps: &[
        "Podman (Debian package podman)",
        "Docker (Debian package docker.io), where its daemon runs",
    ],
};

/// `--deployment`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeploymentArg {
    /// On the host.
    Host,
    /// Inside a container (timerlat: N/A, with the reason).
    Container,
}

impl DeploymentArg {
    /// `--deployment`'s value.
    pub fn read(v: &FlagValues) -> DeploymentArg {
        match v.text("deployment").as_str() {
            "container" => DeploymentArg::Container,
            _ => DeploymentArg::Host,
        }
    }
}

impl From<DeploymentArg> for Deployment {
    fn from(d: DeploymentArg) -> Deployment {
        match d {
            DeploymentArg::Host => Deployment::Host,
            DeploymentArg::Container => Deployment::Container,
        }
    }
}

/// `--engine`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineArg {
    /// Podman (Debian package podman).
    Podman,
    /// Docker (Debian package docker.io), where its daemon runs.
    Docker,
}

impl EngineArg {
    /// The engine of one of [`ENGINE`]'s names.
    pub fn parse(name: &str) -> Option<EngineArg> {
        match name {
            "podman" => Some(EngineArg::Podman),
            "docker" => Some(EngineArg::Docker),
            _ => None,
        }
    }
}

impl From<EngineArg> for Engine {
    fn from(e: EngineArg) -> Engine {
        match e {
            EngineArg::Podman => Engine::Podman,
            EngineArg::Docker => Engine::Docker,
        }
    }
}
