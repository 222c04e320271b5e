//! `jitterlab run observe`: its flags, checked against the machine, turned
//! into the one-cell spec of an `observe` probe ([`super`]). Built on the
//! flags' toolkit ([`crate::probe::flags`]), which holds what every kind's
//! flags share.
//!
//! One target (`--pid`, `--tid`, `--comm`, or `-- COMMAND ARGS…`), an
//! optional `--period` (else inferred from the task), `--explain`, and the
//! observer's own CPU (`--cpu`, default the first online CPU). The
//! observer runs at SCHED_OTHER with no `/dev/cpu_dma_latency` request: it
//! must not perturb the task it watches. The one configuration places the
//! task as a bench's does (`super::place`): its probe CPUs are every CPU
//! but `--cpu` (where the lifecycle puts the observer), and a started
//! command gets `--priority` when given; an attached task is not changed.
//!
//! The target and `--explain` are the probe's keys: their flags are read
//! by the keys' own check (`key_params`), the one that reads a spec's
//! `[[probe]]` table, so "no target" and "two targets" are one rule with
//! one message for both (naming flags here, keys there). Refused with exit
//! 2 and nothing changed: no target, two targets, a zero id, a target that
//! names no running thread, a zero period, a container deployment,
//! `--break-trace`.

use std::path::{Path, PathBuf};

use anyhow::Result;
use jitterlab_core::observe::params::PARAMS;
use jitterlab_core::observe::{ObserveParams, ObserveTarget};
use jitterlab_core::probe::InContainer;
use jitterlab_core::result::ProbeKind;
use jitterlab_core::spec::{Given, GivenValues, KindTable, Policy, ProbeParams};

use crate::error::bad;
use crate::probe::flags::{
    check_common, common_cell, common_flags, flag_of, key_params, others, probe_cpu, CommonArgs,
    DeploymentArg, Flag, FlagValues, FromFlags, KindFlags, MonitoredTask, OneCell, TaskArgs,
    ValueKind,
};
use crate::store::Db;
use crate::system::host;

/// `jitterlab run observe`'s flags, as the command line gave them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObserveRunArgs {
    /// Its parameters from its keys' flags (`--pid`, `--tid`, `--comm`,
    /// `-- COMMAND`, `--explain`), read by the keys' own check.
    pub params: ObserveParams,
    /// `--period`, ns.
    pub period: Option<u64>,
    /// `--cpu`: the observer's.
    pub cpu: Option<usize>,
    /// `--container`: the container `--comm` is looked for in.
    pub container: Option<String>,
    /// `--replay` (hidden).
    pub replay: Option<PathBuf>,
    /// Options every probe shares (--break-trace does not apply).
    pub common: CommonArgs,
}

/// `jitterlab run observe`'s flags: its keys' target flags, `--period`,
/// `--explain`, the observer's `--cpu`, the hidden `--replay`, the common
/// ones, and last the command to start.
pub fn flags() -> KindFlags {
    let mut flags = vec![
        flag_of(&PARAMS, "pid"),
        flag_of(&PARAMS, "tid"),
        flag_of(&PARAMS, "comm"),
        Flag::new(
            "period",
            ValueKind::Time,
            "The task's period T0 [default: inferred, the median of its first 16 periods]",
        ),
        flag_of(&PARAMS, "explain"),
        Flag::new(
            "cpu",
            ValueKind::Cpu,
            "CPU the observer thread runs on (not the task's) [default: the first online CPU]",
        ),
        Flag::new(
            "container",
            ValueKind::Text,
            "Find the --comm thread among the processes of this running container (podman or \
             docker) only; it is observed from the host",
        )
        .value_name("NAME"),
        Flag::new(
            "replay",
            ValueKind::Path,
            "Read the events from a recording (JSON lines) instead of the live trace",
        )
        .hidden(),
    ];
    flags.extend(common_flags());
    flags.push(flag_of(&PARAMS, "command"));
    KindFlags {
        about: "A running task's cycles from the kernel's scheduler and timer tracepoints \
                (latency split into timer IRQ and thread latency, period, jitter, execution \
                time, overruns), and what delayed its late cycles; the task is not changed",
        long_about: None,
        hidden: false,
        flags,
    }
}

impl FromFlags for ObserveRunArgs {
    fn from_flags(v: &FlagValues) -> Result<ObserveRunArgs> {
        Ok(ObserveRunArgs {
            params: key_params(ProbeKind::Observe, v, 0)?,
            period: v.opt_u64("period"),
            cpu: v.opt_usize("cpu"),
            container: v.opt_text("container"),
            replay: v.opt_path("replay"),
            common: CommonArgs::read(v),
        })
    }
}

/// `jitterlab run observe`, as the command line gave it: see [`check`].
pub fn one_cell(v: &FlagValues, root: &Path, db: &Db) -> Result<OneCell> {
    check(root, db, &ObserveRunArgs::from_flags(v)?)
}

/// `jitterlab monitor --pid/--tid/--comm`: `run observe`'s one-cell spec
/// of the task, its parameters read by the same keys' check and checked
/// as `run observe` checks its flags (the same messages); the monitor
/// makes it endless.
pub fn monitor_cell(t: &TaskArgs, root: &Path, db: &Db) -> Result<OneCell> {
    let mut given = GivenValues::new();
    match &t.task {
        MonitoredTask::Pid(p) => given.insert("pid", Given::Num(u64::from(*p))),
        MonitoredTask::Tid(id) => given.insert("tid", Given::Num(u64::from(*id))),
        MonitoredTask::Comm(c) => given.insert("comm", Given::Text(c.clone())),
    };
    given.insert("explain", Given::Bool(t.explain));
    let params = KindTable::given(ProbeKind::Observe, &given, 0).map_err(bad)?;
    let args = ObserveRunArgs {
        params: params
            .get::<ObserveParams>()
            .cloned()
            .expect("the observe check makes observe parameters"),
        period: t.period,
        cpu: None,
        container: t.container.clone(),
        replay: None,
        common: t.common.clone(),
    };
    check(root, db, &args)
}

/// Checks `jitterlab run observe`'s flags against the machine and makes
/// its one-cell spec.
pub fn check(root: &Path, db: &Db, a: &ObserveRunArgs) -> Result<OneCell> {
    let c = &a.common;
    if let (DeploymentArg::Container, InContainer::NotApplicable(why)) =
        (c.deployment, ProbeKind::Observe.descriptor().container)
    {
        return Err(bad(format!("--deployment container: {why}")));
    }
    if c.break_trace.is_some() {
        return Err(bad(
            "--break-trace applies to the periodic probes (cyclic, wakeup); remove it from run observe",
        ));
    }
    if let Some(name) = &a.container {
        if !matches!(a.params.target, ObserveTarget::Comm(_)) || a.replay.is_some() {
            return Err(bad(format!(
                "--container {name} takes --comm NAME: the ids inside a container are not the host's, and a recording has no container"
            )));
        }
    }
    if a.period == Some(0) {
        return Err(bad(
            "--period must be positive; give e.g. --period 1ms, or leave it out to infer it",
        ));
    }
    let online = host::online_cpus(root)?;
    let first = online.iter().next();
    let cpu = probe_cpu(&online, a.cpu.or(first), "--cpu")?;
    // The configuration places the task (a started command): every other
    // CPU; the observer runs off them, on --cpu (alone, it shares it).
    let task_cpus = match others(&online, &[cpu]) {
        v if v.is_empty() => vec![cpu],
        v => v,
    };
    let params = ObserveParams {
        replay: a.replay.as_ref().map(|p| p.display().to_string()),
        container: a.container.clone(),
        ..a.params.clone()
    };
    super::check(root, &params)?;
    let period = a.period.unwrap_or(0);
    check_common(db, c, period, 1)?;
    let mut run = common_cell(ProbeParams::new(params), period, task_cpus, &online, c)?;
    let config = &mut run.spec.configurations[0];
    if c.priority.is_none() {
        config.policy = Policy::Other;
        config.priority = None;
    }
    config.dma_latency = false;
    Ok(run)
}
