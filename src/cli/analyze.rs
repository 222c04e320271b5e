//! `jitterlab analyze FILE`: its flags, and the hidden `__synth-capture`
//! that writes a synthetic POWERLINK capture for the benchmark and tests.
//! Clap's types stop here: the reading and the report are
//! the `netcycle` probe's (`probe::netcycle::analyze`, the capture
//! reader of its own protocol), the writing `net::pcap::synth`'s.
//!
//! The documents cited here are listed in `docs/design.md`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};

use super::parse::cycle_time;
use crate::net::pcap::synth::SynthRequest;
use crate::probe::netcycle::analyze::{self, AnalyzeFormat, AnalyzeRequest};

/// `jitterlab analyze`.
#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    /// The capture: pcap or pcapng, Ethernet or Linux cooked (tcpdump -i
    /// any), e.g. `netcycle --pcap FILE` or `tcpdump -i IF -w FILE ether
    /// proto 0x88ab` on a POWERLINK segment.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,

    /// The cycle time T0 the deviation max |T_per − T0| and late cycles are
    /// measured against [default: inferred, the median of the first 1024
    /// SoC periods rounded to the nearest µs].
    #[arg(long, value_name = "TIME", value_parser = cycle_time)]
    pub cycle: Option<u64>,

    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: AnalyzeFormatArg,
}

/// `--format` of `analyze`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AnalyzeFormatArg {
    /// Tables for a person ([Baumgartner POWERLINK] Table 4's shape first).
    Text,
    /// One JSON document with a schema_version, times in ns.
    Json,
}

impl AnalyzeArgs {
    /// What `analyze` is asked for.
    pub fn request(&self) -> AnalyzeRequest {
        AnalyzeRequest {
            file: self.file.clone(),
            cycle_ns: self.cycle,
            format: match self.format {
                AnalyzeFormatArg::Text => AnalyzeFormat::Text,
                AnalyzeFormatArg::Json => AnalyzeFormat::Json,
            },
        }
    }

    /// Reads the capture and prints its figures.
    pub fn run(&self) -> anyhow::Result<ExitCode> {
        analyze::run(&self.request())
    }
}

/// `jitterlab __synth-capture`: a synthetic POWERLINK capture.
#[derive(Debug, Args)]
pub struct SynthCaptureArgs {
    /// Frames to write (the last cycle may be cut).
    #[arg(long, value_name = "N")]
    pub frames: u64,

    /// CNs the MN polls each cycle.
    #[arg(long, value_name = "K", default_value_t = 3, value_parser = clap::value_parser!(u8).range(1..=239))]
    pub cns: u8,

    /// The cycle time.
    #[arg(long, value_name = "TIME", default_value = "500us", value_parser = cycle_time)]
    pub cycle: u64,

    /// The largest SoC stamp jitter either way.
    #[arg(long, value_name = "TIME", default_value = "5us", value_parser = super::duration)]
    pub jitter: u64,

    /// Seed of the jitter.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub seed: u64,

    /// Leave every this many polls unanswered (0: none).
    #[arg(long, value_name = "M", default_value_t = 0)]
    pub miss_every: u64,

    /// Where to write the capture (nanosecond pcap).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
}

impl SynthCaptureArgs {
    /// What to write.
    pub fn request(&self) -> SynthRequest {
        SynthRequest {
            frames: self.frames,
            cns: self.cns,
            cycle_ns: self.cycle,
            jitter_ns: self.jitter,
            seed: self.seed,
            miss_every: self.miss_every,
            path: self.file.clone(),
        }
    }
}
