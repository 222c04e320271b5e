//! `jitterlab run ctxswitch`: its flags, their checks, and the one-cell
//! spec they make. Built on the flags' toolkit ([`crate::probe::flags`]),
//! which holds what every kind's flags share.

use std::path::Path;

use anyhow::Result;
use clap::Args;
use jitterlab_core::defaults;
use jitterlab_core::result::ProbeKind;
use jitterlab_core::spec::{PlainParams, ProbeParams};
use jitterlab_core::units::CpuList;

use crate::probe::flags::parse::{default_time, period};
use crate::probe::flags::{
    cell_and_plan, check_common, common_cell, cpu_or_last, matched, probe_cpu,
    refuse_periodic_flags, subcommand, CommonArgs, OneCell,
};
use crate::store::Db;
use crate::system::host;

/// Context-switch latency: two SCHED_FIFO threads on one CPU handing a
/// token back and forth (eventfd); one sample per hand-over.
#[derive(Debug, Args)]
pub struct CtxswitchRunArgs {
    /// CPU both threads share [default: the last online CPU].
    #[arg(long, value_name = "CPU")]
    pub cpu: Option<usize>,

    /// One round trip (two hand-overs) per interval (at least 10us); 0
    /// hands the token back to back, as `perf bench sched pipe` does (the
    /// CPU is then busy with real-time work for the whole run).
    #[arg(long, value_name = "TIME", default_value = default_time(defaults::PERIOD_NS), value_parser = period, allow_hyphen_values = true)]
    pub interval: u64,

    /// Options every probe shares (--cycles counts hand-overs; --max-latency
    /// limits the hand-over latency).
    #[command(flatten)]
    pub common: CommonArgs,
}

/// `jitterlab run ctxswitch`'s subcommand.
pub fn command() -> clap::Command {
    subcommand::<CtxswitchRunArgs>(ProbeKind::Ctxswitch)
}

/// `jitterlab run ctxswitch`, as clap matched it: see [`check`].
pub fn one_cell(m: &clap::ArgMatches, root: &Path, db: &Db) -> Result<OneCell> {
    check(root, db, &matched(m)?)
}

/// Checks `jitterlab run ctxswitch`'s flags against the machine under
/// `root` and makes its one-cell spec (`db`: the results database it is
/// stored in).
pub fn check(root: &Path, db: &Db, a: &CtxswitchRunArgs) -> Result<OneCell> {
    refuse_periodic_flags(ProbeKind::Ctxswitch, &a.common)?;
    let online = host::online_cpus(root)?;
    probe_cpu(&online, a.cpu, "--cpu")?;
    check_common(db, &a.common, a.interval, 1)?;
    let run = ctxswitch_cell(a, &online)?;
    let (cell, plan) = cell_and_plan(&run);
    super::validate(&super::args(&run.spec, &cell, &plan), &online)?;
    Ok(run)
}

/// `jitterlab run ctxswitch`.
pub fn ctxswitch_cell(a: &CtxswitchRunArgs, online: &CpuList) -> Result<OneCell> {
    let cpu = cpu_or_last(online, a.cpu)?;
    common_cell(
        ProbeParams::new(PlainParams(ProbeKind::Ctxswitch)),
        a.interval,
        vec![cpu],
        online,
        &a.common,
    )
}
