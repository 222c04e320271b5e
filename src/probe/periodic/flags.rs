//! `jitterlab run cyclic` and `jitterlab run wakeup`: their flags, their
//! checks and the one-cell specs they make (the two kinds share the
//! periodic thread body, [`super`]). Built on the flags' toolkit
//! ([`crate::probe::flags`]), which holds what every kind's flags share.

use std::path::Path;

use anyhow::Result;
use clap::Args;
use jitterlab_core::cyclic::CyclicParams;
use jitterlab_core::defaults;
use jitterlab_core::result::ProbeKind;
use jitterlab_core::spec::{Params, ProbeParams};
use jitterlab_core::units::CpuList;
use jitterlab_core::wakeup::WakeupParams;

use crate::error::bad;
use crate::probe::flags::parse::{cpu_list, default_size, default_time, duration, memory, period};
use crate::probe::flags::{
    check_common, check_machine_memory, common_cell, cpu_or_last, matched, measured_cpus,
    param_rule, probe_cpu, subcommand, CommonArgs, DeploymentArg, OneCell,
};
use crate::store::Db;
use crate::system::host;

/// Control-task emulation: a periodic task with a cache-sensitive scan
/// (wake-up latency, period, periodic jitter, execution time, overruns).
#[derive(Debug, Args)]
pub struct CyclicArgs {
    /// Task period T0 (at least 10us).
    #[arg(long, value_name = "TIME", default_value = default_time(defaults::PERIOD_NS), value_parser = period, allow_hyphen_values = true)]
    pub period: u64,

    /// CPU to run the task on [default: the last online CPU].
    #[arg(long, value_name = "CPU")]
    pub cpu: Option<usize>,

    /// Compute time of the scan per cycle, calibrated once on the idle probe
    /// CPU before the run and then fixed (0 for none).
    #[arg(long, value_name = "TIME", default_value = default_time(defaults::SCAN_NS), value_parser = duration, allow_hyphen_values = true)]
    pub scan: u64,

    /// Memory the scan walks per cycle in a random order, one cache line at a
    /// time (0 for none; at most 4GiB and half the machine's memory).
    #[arg(long, value_name = "SIZE", default_value = default_size(defaults::WORKING_SET_BYTES), value_parser = memory)]
    pub working_set: u64,

    /// Say what delayed each cycle over --threshold and each window's
    /// worst: the threads, IRQs and softirqs that ran on its CPU between
    /// its release and its start, and the time no event explains. This
    /// traces every scheduler, IRQ and softirq event of the probe CPUs,
    /// read by a thread off them.
    #[arg(long)]
    pub explain: bool,

    /// Options every probe shares.
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Timer wake-up latency on one thread per CPU, as cyclictest measures it.
#[derive(Debug, Args)]
pub struct WakeupArgs {
    /// Wake-up interval of every thread (at least 10us).
    #[arg(long, value_name = "TIME", default_value = default_time(defaults::PERIOD_NS), value_parser = period, allow_hyphen_values = true)]
    pub interval: u64,

    /// CPUs to measure, one thread each, e.g. 1,3 or 2-5 [default: every
    /// online CPU but CPU 0 when there is more than one].
    #[arg(long, value_name = "LIST", value_parser = cpu_list)]
    pub cpus: Option<CpuList>,

    /// Say what delayed each cycle over --threshold and each window's
    /// worst: the threads, IRQs and softirqs that ran on its CPU between
    /// its release and its start, and the time no event explains. This
    /// traces every scheduler, IRQ and softirq event of the probe CPUs,
    /// read by a thread off them.
    #[arg(long)]
    pub explain: bool,

    /// Options every probe shares.
    #[command(flatten)]
    pub common: CommonArgs,
}

/// `jitterlab run cyclic`'s subcommand.
pub fn cyclic_command() -> clap::Command {
    subcommand::<CyclicArgs>(ProbeKind::Cyclic)
}

/// `jitterlab run cyclic`, as clap matched it: see [`cyclic`].
pub fn cyclic_one_cell(m: &clap::ArgMatches, root: &Path, db: &Db) -> Result<OneCell> {
    cyclic(root, db, &matched(m)?)
}

/// `jitterlab run wakeup`'s subcommand.
pub fn wakeup_command() -> clap::Command {
    subcommand::<WakeupArgs>(ProbeKind::Wakeup)
}

/// `jitterlab run wakeup`, as clap matched it: see [`wakeup`].
pub fn wakeup_one_cell(m: &clap::ArgMatches, root: &Path, db: &Db) -> Result<OneCell> {
    wakeup(root, db, &matched(m)?)
}

/// Checks `jitterlab run cyclic`'s flags against the machine under `root`
/// and makes its one-cell spec (`db`: the results database it is stored in).
pub fn cyclic(root: &Path, db: &Db, a: &CyclicArgs) -> Result<OneCell> {
    let online = host::online_cpus(root)?;
    probe_cpu(&online, a.cpu, "--cpu")?;
    if a.period == 0 {
        return Err(bad("--period must be positive; give e.g. --period 1ms"));
    }
    cyclic_params(a).validate(a.period).map_err(param_rule)?;
    check_explain(a.explain, &a.common)?;
    check_machine_memory(root, "--working-set ", a.working_set)?;
    check_common(db, &a.common, a.period, 1)?;
    cyclic_cell(a, &online)
}

/// Checks `jitterlab run wakeup`'s flags against the machine under `root`
/// and makes its one-cell spec.
pub fn wakeup(root: &Path, db: &Db, a: &WakeupArgs) -> Result<OneCell> {
    let online = host::online_cpus(root)?;
    let cpus = measured_cpus(&online, a.cpus.as_ref())?;
    if a.interval == 0 {
        return Err(bad("--interval must be positive; give e.g. --interval 1ms"));
    }
    check_explain(a.explain, &a.common)?;
    check_common(db, &a.common, a.interval, cpus.len())?;
    wakeup_cell(a, &online)
}

/// `jitterlab run cyclic`'s parameters.
fn cyclic_params(a: &CyclicArgs) -> CyclicParams {
    CyclicParams {
        scan_ns: a.scan,
        working_set_bytes: a.working_set,
        explain: a.explain,
    }
}

/// `--explain` traces the host kernel: refused with `--deployment
/// container`, whose probe runs where tracefs is not.
fn check_explain(explain: bool, c: &CommonArgs) -> Result<()> {
    if explain && c.deployment == DeploymentArg::Container {
        return Err(bad(
            "--explain traces the host kernel's scheduler, which a container cannot reach; drop --explain, or use --deployment host",
        ));
    }
    Ok(())
}

/// `jitterlab run cyclic`.
pub fn cyclic_cell(a: &CyclicArgs, online: &CpuList) -> Result<OneCell> {
    let params = ProbeParams::new(cyclic_params(a));
    let cpu = cpu_or_last(online, a.cpu)?;
    common_cell(params, a.period, vec![cpu], online, &a.common)
}

/// `jitterlab run wakeup`.
pub fn wakeup_cell(a: &WakeupArgs, online: &CpuList) -> Result<OneCell> {
    let cpus = measured_cpus(online, a.cpus.as_ref())?;
    common_cell(
        ProbeParams::new(WakeupParams { explain: a.explain }),
        a.interval,
        cpus,
        online,
        &a.common,
    )
}
