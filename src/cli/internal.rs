//! The flags of jitterlab's internal commands (`__net-sink`, `__net-flood`,
//! `__rps`, `__synth-monitor`, `__cell`): the network flood's two ends and the
//! receive steering, which jitterlab starts inside a namespace with `ip
//! netns exec` (design rule 6: an argument vector, never a shell), the
//! synthetic monitor series of the benchmarks, and the cell a container
//! cell hands the jitterlab in its container. Hidden from `--help`; each
//! becomes the plain request of `net::flood`, `net::rps`,
//! `store::monitor::synth` or `probe::container::InnerCell`.
//!
//! The design rules cited here are in `docs/design.md`.

use std::net::IpAddr;

use clap::Args;
use jitterlab_core::units::CpuList;

use crate::net::flood::{FloodArgs, SinkArgs};

/// `jitterlab __net-sink`: receive the flood inside the probe's namespace.
#[derive(Debug, Args)]
pub struct NetSinkArgs {
    /// Interface whose receive queue 0 is steered with RPS.
    #[arg(long, value_name = "IFACE")]
    pub iface: String,

    /// CPUs that do the interface's receive work, kernel list format (e.g. 1
    /// or 0-1).
    #[arg(long, value_name = "LIST", value_parser = rps_cpus)]
    pub rps_cpus: CpuList,

    /// UDP port to receive on.
    #[arg(long, value_name = "PORT")]
    pub port: u16,
}

/// `jitterlab __rps`: steer an interface's receive work in this namespace.
#[derive(Debug, Args)]
pub struct NetRpsArgs {
    /// Interface whose receive queue 0 is steered with RPS.
    #[arg(long, value_name = "IFACE")]
    pub iface: String,

    /// CPUs that do the interface's receive work, kernel list format.
    #[arg(long, value_name = "LIST", value_parser = rps_cpus)]
    pub rps_cpus: CpuList,
}

impl NetRpsArgs {
    /// What `__rps` is asked for.
    pub fn request(&self) -> crate::net::rps::RpsArgs {
        crate::net::rps::RpsArgs {
            iface: self.iface.clone(),
            rps_cpus: self.rps_cpus.clone(),
        }
    }
}

/// `jitterlab __net-flood`: send UDP datagrams as fast as possible.
#[derive(Debug, Args)]
pub struct NetFloodArgs {
    /// Destination address: in 198.18.0.0/15 or loopback, nothing else.
    #[arg(long, value_name = "ADDR")]
    pub dst: IpAddr,

    /// Destination UDP port.
    #[arg(long, value_name = "PORT")]
    pub port: u16,

    /// Payload bytes per datagram.
    #[arg(long, value_name = "BYTES", default_value_t = 1400, value_parser = clap::value_parser!(u16).range(1..=65507))]
    pub size: u16,
}

impl NetSinkArgs {
    /// What the sink is asked for.
    pub fn request(&self) -> SinkArgs {
        SinkArgs {
            iface: self.iface.clone(),
            rps_cpus: self.rps_cpus.clone(),
            port: self.port,
        }
    }
}

impl NetFloodArgs {
    /// What the flood is asked for.
    pub fn request(&self) -> FloodArgs {
        FloodArgs {
            dst: self.dst,
            port: self.port,
            size: self.size,
        }
    }
}

/// The sink's `--rps-cpus`: any CPU list (an empty one is refused by the
/// sink itself, which says what to give).
fn rps_cpus(s: &str) -> Result<CpuList, String> {
    CpuList::parse(s).map_err(|e| e.to_string())
}

/// `jitterlab __synth-monitor`: a synthetic monitor series in a new
/// database (`bench/monitor-year.sh`; see `store::monitor::synth`).
#[derive(Debug, Args)]
pub struct SynthMonitorArgs {
    /// Days of 1 s windows to write.
    #[arg(long, value_name = "N", default_value_t = 365, value_parser = clap::value_parser!(u32).range(1..=3650))]
    pub days: u32,

    /// CPUs the synthetic monitor measures (0 … N−1).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub cpus: u32,

    /// Seed of the latencies.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,

    /// The first window's start: RFC 3339, whole seconds.
    #[arg(long, value_name = "TIME", default_value = "2025-01-01T00:00:00Z", value_parser = unix_seconds)]
    pub start: i64,

    /// The series' name.
    #[arg(long, value_name = "NAME", default_value = "synthetic")]
    pub name: String,
}

impl SynthMonitorArgs {
    /// What to write.
    pub fn request(&self) -> crate::store::monitor::synth::SynthRequest {
        crate::store::monitor::synth::SynthRequest {
            days: self.days,
            cpus: self.cpus,
            seed: self.seed,
            start_s: self.start,
            name: self.name.clone(),
        }
    }
}

/// An RFC 3339 time as Unix seconds.
fn unix_seconds(s: &str) -> Result<i64, String> {
    time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
        .map(|t| t.unix_timestamp())
        .map_err(|_| "not a time: give RFC 3339 (2025-01-01T00:00:00Z)".to_string())
}

/// `jitterlab __cell`: measure a container cell inside its container.
#[derive(Debug, Args)]
pub struct CellArgs {
    /// The cell, as the host hands it over: `probe::container::InnerCell`
    /// as JSON.
    #[arg(value_name = "JSON")]
    pub cell: String,
}

impl CellArgs {
    /// The cell to measure, read and checked.
    pub fn request(&self) -> anyhow::Result<crate::probe::container::InnerCell> {
        crate::probe::container::InnerCell::parse(&self.cell)
    }
}
