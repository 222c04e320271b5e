//! `--metrics ADDR` of `run` (every probe), `bench` and `apply`: serve live
//! Prometheus metrics while the command runs (`crate::metrics`).
//!
//! `run` takes it before or after the probe's name (`jitterlab run
//! --metrics :9464 wakeup`, `jitterlab run wakeup --metrics :9464`): the
//! flag is global to `run`'s subcommands, so no probe's flags repeat it.

use std::net::SocketAddr;

use clap::Args;

use super::RunCommand;

/// The `--metrics` flag.
#[derive(Debug, Clone, Args)]
pub struct MetricsArg {
    /// Serve live Prometheus metrics at ADDR while this runs: PORT, :PORT
    /// (on 127.0.0.1) or HOST:PORT (0.0.0.0 for every interface; port 0
    /// for any free one, printed); GET /metrics (see docs/metrics.md).
    #[arg(long = "metrics", value_name = "ADDR", value_parser = metrics_addr, global = true)]
    pub addr: Option<SocketAddr>,
}

/// `jitterlab run`: the probe, and `--metrics`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// `--metrics`, before or after the probe.
    #[command(flatten)]
    pub metrics: MetricsArg,

    /// The probe to run.
    #[command(subcommand)]
    pub probe: RunCommand,
}

fn metrics_addr(s: &str) -> Result<SocketAddr, String> {
    crate::metrics::parse_addr(s)
}
