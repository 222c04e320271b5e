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
//! command gets `--priority` when given; an attached task is not changed. Refused with exit 2 and nothing changed: no target, two
//! targets, a target that names no running thread, a zero period, a
//! container deployment, `--break-trace`.

use std::path::{Path, PathBuf};

use anyhow::Result;
use jitterlab_core::observe::params::PARAMS;
use jitterlab_core::observe::{ObserveParams, ObserveTarget};
use jitterlab_core::probe::InContainer;
use jitterlab_core::result::ProbeKind;
use jitterlab_core::spec::{Policy, ProbeParams};

use crate::error::bad;
use crate::probe::flags::{
    check_common, common_cell, common_flags, flag_of, others, probe_cpu, CommonArgs, DeploymentArg,
    Flag, FlagValues, FromFlags, KindFlags, MonitoredTask, OneCell, TaskArgs, ValueKind,
};
use crate::store::Db;
use crate::system::host;

/// `jitterlab run observe`'s flags, as the command line gave them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObserveRunArgs {
    /// `--pid`.
    pub pid: Option<u32>,
    /// `--tid`.
    pub tid: Option<u32>,
    /// `--comm`.
    pub comm: Option<String>,
    /// `--period`, ns.
    pub period: Option<u64>,
    /// `--explain`.
    pub explain: bool,
    /// `--cpu`: the observer's.
    pub cpu: Option<usize>,
    /// `--container`: the container `--comm` is looked for in.
    pub container: Option<String>,
    /// `--replay` (hidden).
    pub replay: Option<PathBuf>,
    /// Options every probe shares (--break-trace does not apply).
    pub common: CommonArgs,
    /// `-- COMMAND ARGS…`.
    pub command: Vec<String>,
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
        let id = |name: &str| v.opt_i64(name).map(|n| n as u32);
        Ok(ObserveRunArgs {
            pid: id("pid"),
            tid: id("tid"),
            comm: v.opt_text("comm"),
            period: v.opt_u64("period"),
            explain: v.switch("explain"),
            cpu: v.opt_usize("cpu"),
            container: v.opt_text("container"),
            replay: v.opt_path("replay"),
            common: CommonArgs::read(v),
            command: v.texts("command"),
        })
    }
}

/// The one target of the flags.
fn target(a: &ObserveRunArgs) -> Result<ObserveTarget> {
    let mut given: Vec<(&str, ObserveTarget)> = Vec::new();
    if let Some(p) = a.pid {
        given.push(("--pid", ObserveTarget::Pid(p)));
    }
    if let Some(t) = a.tid {
        given.push(("--tid", ObserveTarget::Tid(t)));
    }
    if let Some(c) = &a.comm {
        given.push(("--comm", ObserveTarget::Comm(c.clone())));
    }
    if !a.command.is_empty() {
        given.push(("-- COMMAND", ObserveTarget::Command(a.command.clone())));
    }
    match given.len() {
        0 => Err(bad(
            "nothing to observe: give --pid PID, --tid TID, --comm NAME or -- COMMAND ARGS",
        )),
        1 => Ok(given.remove(0).1),
        _ => Err(bad(format!(
            "observe watches one target: keep one of {} and {}",
            given[0].0, given[1].0
        ))),
    }
}

/// `jitterlab run observe`, as the command line gave it: see [`check`].
pub fn one_cell(v: &FlagValues, root: &Path, db: &Db) -> Result<OneCell> {
    check(root, db, &ObserveRunArgs::from_flags(v)?)
}

/// `jitterlab monitor --pid/--tid/--comm`: `run observe`'s one-cell spec
/// of the task, checked as `run observe` checks its flags (the same
/// messages); the monitor makes it endless.
pub fn monitor_cell(t: &TaskArgs, root: &Path, db: &Db) -> Result<OneCell> {
    let (mut pid, mut tid, mut comm) = (None, None, None);
    match &t.task {
        MonitoredTask::Pid(p) => pid = Some(*p),
        MonitoredTask::Tid(id) => tid = Some(*id),
        MonitoredTask::Comm(c) => comm = Some(c.clone()),
    }
    let args = ObserveRunArgs {
        pid,
        tid,
        comm,
        period: t.period,
        explain: t.explain,
        cpu: None,
        container: t.container.clone(),
        replay: None,
        common: t.common.clone(),
        command: Vec::new(),
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
    let target = target(a)?;
    if let ObserveTarget::Pid(0) | ObserveTarget::Tid(0) = target {
        return Err(bad(
            "0 is no process or thread id; give one ps -eL -o pid,tid,comm lists",
        ));
    }
    if let Some(name) = &a.container {
        if !matches!(target, ObserveTarget::Comm(_)) || a.replay.is_some() {
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
        target,
        explain: a.explain,
        replay: a.replay.as_ref().map(|p| p.display().to_string()),
        container: a.container.clone(),
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
