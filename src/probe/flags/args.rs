//! The flags every probe's `run` subcommand shares: [`CommonArgs`]
//! (flattened into each kind's own flags), `--deployment` and `--engine`.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use jitterlab_core::defaults;
use jitterlab_core::spec::{Deployment, Policy};

use super::parse::{
    cycles, default_time, duration, histogram_buckets, outliers, policy_parser, window,
};
use crate::system::container::Engine;

/// Options shared by `run cyclic` and `run wakeup`.
#[derive(Debug, Args)]
pub struct CommonArgs {
    /// How long to run [default: 10s unless --cycles is given].
    #[arg(long, value_name = "TIME", value_parser = duration, conflicts_with = "cycles", allow_hyphen_values = true)]
    pub duration: Option<u64>,

    /// Number of measured cycles per thread, instead of --duration.
    #[arg(long, value_name = "N", value_parser = cycles, allow_hyphen_values = true)]
    pub cycles: Option<u64>,

    /// Scheduling policy.
    #[arg(long, default_value = Policy::Fifo.name(), value_parser = policy_parser())]
    pub policy: Policy,

    /// Real-time priority for fifo/rr (1-99) [default: 95]; not with other.
    #[arg(long, value_name = "PRIO", allow_negative_numbers = true)]
    pub priority: Option<i32>,

    /// Nice value for --policy other (-20..19) [default: 0]; not with fifo/rr.
    #[arg(long, value_name = "NICE", allow_negative_numbers = true)]
    pub nice: Option<i32>,

    /// Fail (exit 2) when a real-time default (scheduler, pinning, mlockall,
    /// /dev/cpu_dma_latency) cannot be applied, instead of marking the result
    /// "not real-time".
    #[arg(long)]
    pub strict: bool,

    /// Width of the per-window rows (min, max, mean, count); at least 1ms.
    #[arg(long, value_name = "TIME", default_value = default_time(defaults::WINDOW_NS), value_parser = window, allow_hyphen_values = true)]
    pub window: u64,

    /// Threshold for the share of samples over it (EPICS tables use 100us).
    #[arg(long, value_name = "TIME", default_value = default_time(defaults::THRESHOLD_NS), value_parser = duration, allow_hyphen_values = true)]
    pub threshold: u64,

    /// Outliers kept per metric, with cycle number and time since start
    /// (at most 10000).
    #[arg(long, value_name = "N", default_value_t = defaults::OUTLIERS, value_parser = outliers, allow_hyphen_values = true)]
    pub outliers: usize,

    /// Write the schema-versioned result (statistics, host snapshot, real-time
    /// set-up) as JSON (`-`: stdout; the summary then goes to stderr).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Write the verdicts as a JUnit XML report for CI servers: one test
    /// case per limit and check, a failure with its figure, "not measured"
    /// as a failure with its reason (`-`: stdout).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,

    /// Write the per-window rows as CSV (streamed while running into a file
    /// renamed over FILE when the run ends; `-`: stdout, row by row).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,

    /// Write the wake-up latency histogram in cyclictest's text format
    /// (1 us buckets; `-`: stdout).
    #[arg(long, value_name = "FILE")]
    pub histogram: Option<PathBuf>,

    /// Number of 1 us buckets of the main latency's histogram, stored with
    /// the run and written by --histogram (at most 100000); later
    /// latencies count as overflows.
    #[arg(long, value_name = "N", default_value_t = defaults::HISTOGRAM_BUCKETS, value_parser = histogram_buckets, allow_hyphen_values = true)]
    pub histogram_buckets: usize,

    /// Exit 1 when a wake-up latency exceeds this.
    #[arg(long, value_name = "TIME", value_parser = duration, allow_hyphen_values = true)]
    pub max_latency: Option<u64>,

    /// Exit 1 when a periodic jitter's magnitude exceeds this.
    #[arg(long, value_name = "TIME", value_parser = duration, allow_hyphen_values = true)]
    pub max_jitter: Option<u64>,

    /// Exit 1 when an execution time exceeds this.
    #[arg(long, value_name = "TIME", value_parser = duration, allow_hyphen_values = true)]
    pub max_exec: Option<u64>,

    /// When a wake-up latency exceeds this, mark the kernel trace buffer, stop
    /// tracing, and end the run (cyclictest's -b).
    #[arg(long, value_name = "TIME", value_parser = duration, allow_hyphen_values = true)]
    pub break_trace: Option<u64>,

    /// Show the live status even when stdout is not a terminal (plain lines on
    /// stderr, once a second).
    #[arg(long)]
    pub progress: bool,

    /// Do not hold /dev/cpu_dma_latency at 0 (to measure an untuned baseline).
    #[arg(long)]
    pub no_dma_latency: bool,

    /// Do not store the run in the results database.
    #[arg(long)]
    pub no_db: bool,

    /// Where the probe runs: on the host, or inside a container built from
    /// this jitterlab (FROM scratch, no registry), with every real-time
    /// default or not at all.
    #[arg(long, value_enum, default_value = "host")]
    pub deployment: DeploymentArg,

    /// The container engine of --deployment container [default: podman,
    /// else docker, whichever answers `ENGINE version`].
    #[arg(long, value_enum)]
    pub engine: Option<EngineArg>,

    /// Internal: write the window rows and the result as JSON lines on
    /// stdout (the probe side of a container cell).
    #[arg(long, hide = true)]
    pub stream: bool,

    /// Internal: the scan calibrations to measure with, as JSON (a bench's,
    /// made idle on the host, for its container cell).
    #[arg(long, hide = true, value_name = "JSON")]
    pub calibration: Option<String>,
}

/// `--deployment`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DeploymentArg {
    /// On the host.
    Host,
    /// Inside a container (timerlat: N/A, with the reason).
    Container,
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EngineArg {
    /// Podman (Debian package podman).
    Podman,
    /// Docker (Debian package docker.io), where its daemon runs.
    Docker,
}

impl From<EngineArg> for Engine {
    fn from(e: EngineArg) -> Engine {
        match e {
            EngineArg::Podman => Engine::Podman,
            EngineArg::Docker => Engine::Docker,
        }
    }
}
