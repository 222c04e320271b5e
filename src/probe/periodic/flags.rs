//! `jitterlab run cyclic` and `jitterlab run wakeup`: their flags, their
//! checks and the one-cell specs they make (the two kinds share the
//! periodic thread body, [`super`]). Built on the flags' toolkit
//! ([`crate::probe::flags`]), which holds what every kind's flags share.

use std::path::Path;

use anyhow::Result;
use jitterlab_core::cyclic::{CyclicParams, PARAMS};
use jitterlab_core::defaults;
use jitterlab_core::result::ProbeKind;
use jitterlab_core::spec::{Params, ProbeParams};
use jitterlab_core::units::CpuList;
use jitterlab_core::wakeup::{WakeupParams, PARAMS as WAKEUP_PARAMS};

use crate::error::bad;
use crate::probe::flags::{
    check_common, check_machine_memory, common_cell, common_flags, cpu_or_last, key_flags,
    key_params, measured_cpus, param_rule, probe_cpu, time_text, CommonArgs, Flag, FlagValues,
    DeploymentArg, FromFlags, KindFlags, OneCell, ValueKind,
};
use crate::store::Db;
use crate::system::host;

/// `jitterlab run cyclic`'s flags, as the command line gave them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CyclicArgs {
    /// `--period`, ns.
    pub period: u64,
    /// `--cpu`.
    pub cpu: Option<usize>,
    /// Its parameters (`--scan`, `--working-set`, `--explain`).
    pub params: CyclicParams,
    /// Options every probe shares.
    pub common: CommonArgs,
}

/// `jitterlab run wakeup`'s flags, as the command line gave them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WakeupArgs {
    /// `--interval`, ns.
    pub interval: u64,
    /// `--cpus`.
    pub cpus: Option<CpuList>,
    /// Its parameters (`--explain`).
    pub params: WakeupParams,
    /// Options every probe shares.
    pub common: CommonArgs,
}

/// `jitterlab run cyclic`'s flags: `--period`, `--cpu`, its keys'
/// (`--scan`, `--working-set`, `--explain`) and the common ones.
pub fn cyclic_flags() -> KindFlags {
    let mut flags = vec![
        Flag::new(
            "period",
            ValueKind::Period,
            "Task period T0 (at least 10us)",
        )
        .default(time_text(defaults::PERIOD_NS)),
        Flag::new(
            "cpu",
            ValueKind::Cpu,
            "CPU to run the task on [default: the last online CPU]",
        ),
    ];
    flags.extend(key_flags(&PARAMS));
    flags.extend(common_flags());
    KindFlags {
        about: "Control-task emulation: a periodic task with a cache-sensitive scan (wake-up \
                latency, period, periodic jitter, execution time, overruns)",
        long_about: None,
        hidden: false,
        flags,
    }
}

/// `--interval` of `run wakeup` (and `jitterlab monitor`).
pub fn interval_flag() -> Flag {
    Flag::new(
        "interval",
        ValueKind::Period,
        "Wake-up interval of every thread (at least 10us)",
    )
    .default(time_text(defaults::PERIOD_NS))
}

/// `--cpus` of `run wakeup` (and `jitterlab monitor`).
pub fn cpus_flag() -> Flag {
    Flag::new(
        "cpus",
        ValueKind::CpuList,
        "CPUs to measure, one thread each, e.g. 1,3 or 2-5 [default: every online CPU but CPU 0 \
         when there is more than one]",
    )
}

/// `jitterlab run wakeup`'s flags: `--interval`, `--cpus`, its key's
/// (`--explain`) and the common ones.
pub fn wakeup_flags() -> KindFlags {
    let mut flags = vec![interval_flag(), cpus_flag()];
    flags.extend(key_flags(&WAKEUP_PARAMS));
    flags.extend(common_flags());
    KindFlags {
        about: "Timer wake-up latency on one thread per CPU, as cyclictest measures it",
        long_about: None,
        hidden: false,
        flags,
    }
}

impl FromFlags for CyclicArgs {
    fn from_flags(v: &FlagValues) -> Result<CyclicArgs> {
        Ok(CyclicArgs {
            period: v.u64("period"),
            cpu: v.opt_usize("cpu"),
            params: key_params(ProbeKind::Cyclic, v, v.u64("period"))?,
            common: CommonArgs::read(v),
        })
    }
}

impl FromFlags for WakeupArgs {
    fn from_flags(v: &FlagValues) -> Result<WakeupArgs> {
        Ok(WakeupArgs {
            interval: v.u64("interval"),
            cpus: v.opt_cpus("cpus"),
            params: key_params(ProbeKind::Wakeup, v, v.u64("interval"))?,
            common: CommonArgs::read(v),
        })
    }
}

/// `jitterlab run cyclic`, as the command line gave it: see [`cyclic`].
pub fn cyclic_one_cell(v: &FlagValues, root: &Path, db: &Db) -> Result<OneCell> {
    cyclic(root, db, &CyclicArgs::from_flags(v)?)
}

/// `jitterlab run wakeup`, as the command line gave it: see [`wakeup`].
pub fn wakeup_one_cell(v: &FlagValues, root: &Path, db: &Db) -> Result<OneCell> {
    wakeup(root, db, &WakeupArgs::from_flags(v)?)
}

/// Checks `jitterlab run cyclic`'s flags against the machine under `root`
/// and makes its one-cell spec (`db`: the results database it is stored in).
pub fn cyclic(root: &Path, db: &Db, a: &CyclicArgs) -> Result<OneCell> {
    let online = host::online_cpus(root)?;
    probe_cpu(&online, a.cpu, "--cpu")?;
    if a.period == 0 {
        return Err(bad("--period must be positive; give e.g. --period 1ms"));
    }
    a.params.validate(a.period).map_err(param_rule)?;
    check_explain(a.params.explain, &a.common)?;
    check_machine_memory(root, "--working-set ", a.params.working_set_bytes)?;
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
    check_explain(a.params.explain, &a.common)?;
    check_common(db, &a.common, a.interval, cpus.len())?;
    wakeup_cell(a, &online)
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
    let params = ProbeParams::new(a.params.clone());
    let cpu = cpu_or_last(online, a.cpu)?;
    common_cell(params, a.period, vec![cpu], online, &a.common)
}

/// `jitterlab run wakeup`.
pub fn wakeup_cell(a: &WakeupArgs, online: &CpuList) -> Result<OneCell> {
    let cpus = measured_cpus(online, a.cpus.as_ref())?;
    common_cell(
        ProbeParams::new(a.params.clone()),
        a.interval,
        cpus,
        online,
        &a.common,
    )
}
