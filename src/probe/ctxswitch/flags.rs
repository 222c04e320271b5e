//! `jitterlab run ctxswitch`: its flags, their checks, and the one-cell
//! spec they make. Built on the flags' toolkit ([`crate::probe::flags`]),
//! which holds what every kind's flags share.

use std::path::Path;

use anyhow::Result;
use jitterlab_core::defaults;
use jitterlab_core::result::ProbeKind;
use jitterlab_core::spec::{PlainParams, ProbeParams};
use jitterlab_core::units::CpuList;

use crate::probe::flags::{
    cell_and_plan, check_common, common_cell, common_flags, cpu_or_last, probe_cpu,
    refuse_periodic_flags, time_text, CommonArgs, Flag, FlagValues, FromFlags, KindFlags, OneCell,
    ValueKind,
};
use crate::store::Db;
use crate::system::host;

/// `jitterlab run ctxswitch`'s flags, as the command line gave them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CtxswitchRunArgs {
    /// `--cpu`.
    pub cpu: Option<usize>,
    /// `--interval`, ns.
    pub interval: u64,
    /// Options every probe shares (--cycles counts hand-overs;
    /// --max-latency limits the hand-over latency).
    pub common: CommonArgs,
}

/// `jitterlab run ctxswitch`'s flags: `--cpu`, `--interval` and the common
/// ones.
pub fn flags() -> KindFlags {
    let mut flags = vec![
        Flag::new(
            "cpu",
            ValueKind::Cpu,
            "CPU both threads share [default: the last online CPU]",
        ),
        Flag::new(
            "interval",
            ValueKind::Period,
            "One round trip (two hand-overs) per interval (at least 10us); 0 hands the token \
             back to back, as `perf bench sched pipe` does (the CPU is then busy with real-time \
             work for the whole run)",
        )
        .default(time_text(defaults::PERIOD_NS)),
    ];
    flags.extend(common_flags());
    KindFlags {
        about: "Context-switch latency: two SCHED_FIFO threads on one CPU handing a token back \
                and forth (eventfd); one sample per hand-over",
        long_about: None,
        hidden: false,
        flags,
    }
}

impl FromFlags for CtxswitchRunArgs {
    fn from_flags(v: &FlagValues) -> Result<CtxswitchRunArgs> {
        Ok(CtxswitchRunArgs {
            cpu: v.opt_usize("cpu"),
            interval: v.u64("interval"),
            common: CommonArgs::read(v),
        })
    }
}

/// `jitterlab run ctxswitch`, as the command line gave it: see [`check`].
pub fn one_cell(v: &FlagValues, root: &Path, db: &Db) -> Result<OneCell> {
    check(root, db, &CtxswitchRunArgs::from_flags(v)?)
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
