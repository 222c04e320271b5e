//! `jitterlab run response`: its flags, their checks, and the one-cell
//! spec they make ([Xu EPICS]'s response latency). Built on the flags'
//! toolkit ([`crate::probe::flags`]), which holds what every kind's flags
//! share.
//!
//! The documents cited here are listed in `docs/design.md`.

use std::path::Path;

use anyhow::Result;
use jitterlab_core::defaults;
use jitterlab_core::response::{ResponseParams, PARAMS};
use jitterlab_core::result::ProbeKind;
use jitterlab_core::spec::ProbeParams;
use jitterlab_core::units::CpuList;

use crate::error::bad;
use crate::output::errln;
use crate::probe::flags::{
    cell_and_plan, check_common, common_cell, common_flags, cpu_or_last, flag_of, key_params,
    probe_cpu, refuse_periodic_flags, time_text, CommonArgs, DeploymentArg, Flag, FlagValues,
    FromFlags, KindFlags, OneCell, ValueKind,
};
use crate::store::Db;
use crate::system::host;

/// `jitterlab run response`'s flags, as the command line gave them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseRunArgs {
    /// `--cpu`.
    pub cpu: Option<usize>,
    /// Its parameters (`--event-cpu`, `--source`).
    pub params: ResponseParams,
    /// `--interval`, ns.
    pub interval: u64,
    /// Options every probe shares (--cycles counts events; --max-latency
    /// limits event → response sent).
    pub common: CommonArgs,
}

/// `jitterlab run response`'s flags: `--cpu`, its keys' (`--event-cpu`,
/// `--source`), `--interval` and the common ones.
pub fn flags() -> KindFlags {
    let mut flags = vec![
        Flag::new(
            "cpu",
            ValueKind::Cpu,
            "CPU of the real-time thread [default: the last online CPU]",
        ),
        flag_of(&PARAMS, "event_cpu"),
        flag_of(&PARAMS, "source"),
        Flag::new(
            "interval",
            ValueKind::Period,
            "Time between events (at least 10us)",
        )
        .default(time_text(defaults::PERIOD_NS)),
    ];
    flags.extend(common_flags());
    KindFlags {
        about: "Response latency: an event made on another CPU (eventfd write or UDP datagram \
                between two namespaces) wakes the real-time thread, which answers it ([Xu \
                EPICS]'s interrupt-to-user and total response)",
        long_about: None,
        hidden: false,
        flags,
    }
}

impl FromFlags for ResponseRunArgs {
    fn from_flags(v: &FlagValues) -> Result<ResponseRunArgs> {
        Ok(ResponseRunArgs {
            cpu: v.opt_usize("cpu"),
            params: key_params(ProbeKind::Response, v, v.u64("interval"))?,
            interval: v.u64("interval"),
            common: CommonArgs::read(v),
        })
    }
}

/// `jitterlab run response`, as the command line gave it: see [`check`].
pub fn one_cell(v: &FlagValues, root: &Path, db: &Db) -> Result<OneCell> {
    check(root, db, &ResponseRunArgs::from_flags(v)?)
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
    let params = ProbeParams::new(a.params.clone());
    common_cell(params, a.interval, vec![cpu], online, &a.common)
}
