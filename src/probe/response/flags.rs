//! `jitterlab run response`: its flags, their checks, and the one-cell
//! spec they make ([Xu EPICS]'s response latency). Built on the flags'
//! toolkit ([`crate::probe::flags`]), which holds what every kind's flags
//! share.
//!
//! The documents cited here are listed in `docs/design.md`.

use std::path::Path;

use anyhow::Result;
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::Args;
use jitterlab_core::defaults;
use jitterlab_core::response::{ResponseParams, ResponseSource};
use jitterlab_core::result::ProbeKind;
use jitterlab_core::spec::ProbeParams;
use jitterlab_core::units::CpuList;

use crate::error::bad;
use crate::output::errln;
use crate::probe::flags::parse::{default_time, period};
use crate::probe::flags::{
    cell_and_plan, check_common, common_cell, cpu_or_last, matched, probe_cpu,
    refuse_periodic_flags, subcommand, CommonArgs, DeploymentArg, OneCell,
};
use crate::store::Db;
use crate::system::host;

/// Response latency: an event made on another CPU (eventfd write or UDP
/// datagram between two namespaces) wakes the real-time thread, which
/// answers it ([Xu EPICS]'s interrupt-to-user and total response).
#[derive(Debug, Args)]
pub struct ResponseRunArgs {
    /// CPU of the real-time thread [default: the last online CPU].
    #[arg(long, value_name = "CPU")]
    pub cpu: Option<usize>,

    /// CPU the events are made on [default: the first other online CPU].
    #[arg(long, value_name = "CPU")]
    pub event_cpu: Option<usize>,

    /// What makes the event.
    #[arg(long, default_value = ResponseSource::Eventfd.name(), value_parser = source_parser())]
    pub source: ResponseSource,

    /// Time between events (at least 10us).
    #[arg(long, value_name = "TIME", default_value = default_time(defaults::PERIOD_NS), value_parser = period, allow_hyphen_values = true)]
    pub interval: u64,

    /// Options every probe shares (--cycles counts events; --max-latency
    /// limits event → response sent).
    #[command(flatten)]
    pub common: CommonArgs,
}

/// `--source`: the one [`ResponseSource`] type, each name with its help.
fn source_parser() -> impl TypedValueParser<Value = ResponseSource> {
    let help = |s: ResponseSource| match s {
        ResponseSource::Eventfd => "An eventfd write from the event thread",
        ResponseSource::Udp => "A UDP datagram through a veth pair between two namespaces",
    };
    PossibleValuesParser::new(
        ResponseSource::ALL.map(|s| PossibleValue::new(s.name()).help(help(s))),
    )
    .map(|name| ResponseSource::parse(&name).expect("one of the possible values"))
}

/// `jitterlab run response`'s subcommand.
pub fn command() -> clap::Command {
    subcommand::<ResponseRunArgs>(ProbeKind::Response)
}

/// `jitterlab run response`, as clap matched it: see [`check`].
pub fn one_cell(m: &clap::ArgMatches, root: &Path, db: &Db) -> Result<OneCell> {
    check(root, db, &matched(m)?)
}

/// Checks `jitterlab run response`'s flags against the machine under
/// `root` and makes its one-cell spec (`db`: the results database it is
/// stored in).
pub fn check(root: &Path, db: &Db, a: &ResponseRunArgs) -> Result<OneCell> {
    refuse_periodic_flags(ProbeKind::Response, &a.common)?;
    if a.common.deployment == DeploymentArg::Container {
        let run = response_cell(a, &host::online_cpus(root)?)?;
        if let Some(why) = crate::probe::container::not_applicable(&run.spec.probes[0]) {
            return Err(bad(why));
        }
    }
    let online = host::online_cpus(root)?;
    probe_cpu(&online, a.cpu, "--cpu")?;
    check_common(db, &a.common, a.interval, 1)?;
    let run = response_cell(a, &online)?;
    let (cell, plan) = cell_and_plan(&run);
    let args = super::args(&run.spec, &cell, &plan);
    for w in super::validate(&args, &online)? {
        errln!("jitterlab: warning: {w}");
    }
    super::check_environment(&args)?;
    Ok(run)
}

/// `jitterlab run response`: events from `--event-cpu`, else from the
/// first other online CPU (the configuration's first neighbour).
pub fn response_cell(a: &ResponseRunArgs, online: &CpuList) -> Result<OneCell> {
    let cpu = cpu_or_last(online, a.cpu)?;
    let params = ProbeParams::new(ResponseParams {
        source: Some(a.source),
        event_cpu: a.event_cpu,
    });
    common_cell(params, a.interval, vec![cpu], online, &a.common)
}
