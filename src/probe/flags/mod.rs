//! The toolkit below every kind's `run` flags: what the flags of
//! `jitterlab run KIND` share, and how they become the one-cell [`Spec`]
//! the runner measures — one configuration (`default`), the `idle`
//! scenario, the `host` deployment, one probe — with the [`RunOptions`]
//! only a run has, so the runner measures a run exactly as it measures a
//! bench cell. Each kind's own flags, their checks and its `*_cell`
//! builder live in its folder (`src/probe/KIND/flags.rs`; `cyclic` and
//! `wakeup` in `periodic/flags.rs`), built on this; its [`Registration`]
//! names its flags and its check, and `jitterlab run` takes its
//! subcommands from the registry. This module imports no kind and nothing
//! of the command line (`src/cli*`), so the kinds' flags sit between the
//! two without a circle: `cli` → `probe::KIND::flags` → `probe::flags`.
//!
//! The flags are data ([`decl`]), and nothing below `src/cli*` knows the
//! command-line parser:
//!
//! - a [`Flag`] declares one flag: its id and `--name`, value name, help
//!   (and long help), default, [`ValueKind`] (a time, period, window,
//!   size, count within its limits, integer range, CPU, CPU list, choice
//!   of names, text, file or switch), heading, whether it is hidden, its
//!   environment variable, the flags it conflicts with;
//! - [`KindFlags`] is a kind's subcommand: its help (`about`, the one
//!   paragraph `jitterlab run --help` lists; `long_about`) and its flags,
//!   its own then [`common_flags`];
//! - [`key_flags`] derives the flags of a kind's own parameters from its
//!   core key table (`Key`: name, value type, default, help, and what its
//!   flag needs beyond them, `KeyFlag`), so a parameter is declared once;
//! - [`FlagValues`] is what a command line gave, a plain typed map by id
//!   (`u64`, `i64`, `usize`, `bool`, `String`, `CpuList`, `PathBuf`), which
//!   a kind reads into its plain args struct ([`FromFlags`];
//!   [`CommonArgs::read`] for the shared ones), its parameters through its
//!   key table's own check, as a spec's ([`key_params`]).
//!
//! `src/cli/flags.rs` turns a [`KindFlags`] into clap's subcommand, each
//! value kind with the parser `jitterlab run` has always used
//! (`src/cli/parse.rs`: the one unit grammar, size grammar, CPU list
//! format and limits, so every bad value's message is unchanged), and what
//! clap matched into [`FlagValues`].
//!
//! What moved here, and from where:
//!
//! - from `cli.rs`: [`CommonArgs`], [`DeploymentArg`] and [`EngineArg`]
//!   ([`args`]); the kinds' own parsers (`source_parser`, `samples`,
//!   `iterations`, `chase_length`) became value kinds of their flags;
//! - from `cli/one_cell.rs`: [`OneCell`], [`cell_and_plan`], the checks
//!   every probe's flags share ([`probe_cpu`], [`measured_cpus`],
//!   [`refuse_periodic_flags`], [`check_common`] with the scheduling and
//!   deployment checks under it) and the builders of the one-cell spec
//!   ([`common_cell`], [`cpu_or_last`], [`configuration`], [`probe`],
//!   [`options`], [`spec`], [`deployed`], [`others`]); each kind's check
//!   and builder went to its folder; `cli::one_cell::one_cell` stays, and
//!   finds the kind's check through the registry;
//! - from `runner`: [`check_machine_memory`], which the kinds' checks call
//!   (the runner re-exports it for the spec checker).
//!
//! A kind's check first refuses what is wrong, in the order `jitterlab
//! run` always checked it and with the same one-line messages naming the
//! flag (exit 2): the flags a probe does not take, the CPUs against the
//! machine's online list, the period, the scan against the period, a
//! working set or buffer against the machine's memory, the
//! policy/priority/nice triple, zero counts and times, the output paths and
//! the database, the length of the run and its window rows, and last what
//! the probe itself refuses (its own argument checks, the UDP source's
//! environment, rtla's limits and the timerlat tracer's availability). The
//! rules shared with the spec checker — a kind's rules between its
//! parameters (the scan shorter than the period, chaining's payload, the
//! response timeout shorter than the cycle), which of priority and nice a
//! policy takes — are the spec model's own functions (the kind's
//! `Params::validate`, refused through [`param_rule`]; [`sched_fields`]),
//! each front door naming its own keys or flags. Then the `*_cell` builders, pure functions of the
//! flags and the online CPUs, make the spec.
//!
//! How a run's flags map onto the spec:
//!
//! - `--cpu`/`--cpus` (default: the last online CPU; for `wakeup` and
//!   `timerlat`, every online CPU but CPU 0) are the configuration's probe
//!   CPUs, the other online CPUs its neighbour CPUs (`--roles`'s neighbour
//!   for a chase; they size the chase's buffer and place the response
//!   probe's events), `--roles`'s irq CPU its `irq_cpus` setting;
//! - `--policy`, `--priority`, `--nice`, `--no-dma-latency` are the
//!   configuration's scheduling and `dma_latency`;
//! - `--period`/`--interval`, `--threshold`, `--window`, `--outliers`, the
//!   `--max-*` limits and the probe's own flags are the probe's;
//! - `--duration` (default 10s) is the spec's duration; `--cycles` and a
//!   chase without `--duration` end the run by count instead
//!   ([`Stop`]), as do the other run-only flags, in [`RunOptions`];
//! - `--deployment` is the spec's one deployment; with `container`,
//!   `--engine` goes in [`RunOptions`], and `cli::one_cell::one_cell`
//!   refuses, last, what keeps the probe out of a container (timerlat
//!   refuses it first, with the reason), a host without a working engine
//!   (naming what to install) and a host that cannot run one (not root, a
//!   cgroup controller split between v1 and v2, with the fix). `--stream`
//!   and `--calibration` are hidden flags: a run streamed and calibrated as
//!   the cell a container cell hands over (`jitterlab __cell`) is.
//!
//! [`Registration`]: super::Registration

use std::path::Path;

use anyhow::Result;
use jitterlab_core::defaults;
use jitterlab_core::limits;
use jitterlab_core::result::{Calibration, ProbeKind};
use jitterlab_core::spec::{
    sched_fields, ConfigSettings, Configuration, Deployment, Given, GivenValues, KindTable,
    ParamError, Params, Policy, ProbeParams, ProbeScope, ProbeSpec, Scenario, SchedError, Spec,
    NICES, PRIORITIES,
};
use jitterlab_core::units::{format_duration_exact, CpuList};

use super::plan::{self, RunOptions, Stop};
use crate::error::bad;
use crate::out_files::RunOutputs;
use crate::store::Db;
use crate::system::container::Engine;

pub mod args;
pub mod decl;

pub use args::{
    common_flags, no_db_flag, CommonArgs, DeploymentArg, EngineArg, DEPLOYMENT, ENGINE,
};
pub use decl::{flag_of, key_flags, time_text, Flag, FlagValues, KindFlags, Value, ValueKind};

/// The user's own task `jitterlab monitor` watches instead of its wake-up
/// probe (`--pid`, `--tid`, `--comm`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MonitoredTask {
    /// Every thread of a process, or the one that behaves periodically.
    Pid(u32),
    /// One thread.
    Tid(u32),
    /// The thread of this name.
    Comm(String),
}

/// What `jitterlab monitor` hands the kind that measures a running task
/// (the [`Registration`]'s `task`): the task, its flags, and the flags
/// every probe shares, already set for a run without end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskArgs {
    /// The task.
    pub task: MonitoredTask,
    /// `--period`, ns: the task's T0, else inferred.
    pub period: Option<u64>,
    /// `--explain`.
    pub explain: bool,
    /// `--container`: the container `--comm` is looked for in.
    pub container: Option<String>,
    /// The shared flags.
    pub common: CommonArgs,
}

/// A run, as the runner takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OneCell {
    /// The one-cell spec.
    pub spec: Spec,
    /// What only a run asks for.
    pub options: RunOptions,
}

/// A kind's plain args struct, read from the values a command line gave
/// its declared flags.
pub trait FromFlags: Sized {
    /// The args of `v` (its parameters refused as a spec's would be).
    fn from_flags(v: &FlagValues) -> Result<Self>;
}

/// `kind`'s parameters from the values of its key flags, read by its key
/// table's own check (`KindTable::given`), as a spec's keys are: the one
/// place a kind's parameters are read from its keys. A key flag not given
/// (and without a default) takes the check's default.
pub fn key_params<P: Params + Clone>(kind: ProbeKind, v: &FlagValues, period_ns: u64) -> Result<P> {
    let mut given = GivenValues::new();
    for key in kind.descriptor().params.keys {
        let value = match v.get(key.name) {
            Some(Value::U64(n)) => Given::Num(*n),
            Some(Value::I64(n)) => Given::Num(*n as u64),
            Some(Value::Usize(c)) => Given::Cpu(*c),
            Some(Value::Bool(b)) => Given::Bool(*b),
            Some(Value::Text(t)) => Given::Text(t.clone()),
            Some(Value::Texts(t)) => Given::Texts(t.clone()),
            Some(Value::Cpus(_) | Value::Path(_)) | None => continue,
        };
        given.insert(key.name, value);
    }
    let params = KindTable::given(kind, &given, period_ns).map_err(bad)?;
    Ok(params
        .get::<P>()
        .cloned()
        .expect("a kind's check makes its own parameters"))
}

/// The spec's one cell and its plan, for the probe's own checks.
pub fn cell_and_plan(run: &OneCell) -> (jitterlab_core::spec::CellPlan, plan::RunPlan) {
    let cell = run.spec.cells().remove(0);
    let plan = plan::plan(&run.spec, &cell, &run.options);
    (cell, plan)
}

// ---------------------------------------------------------------------------
// The checks every probe's flags share.

/// A kind's broken rule between its parameters (its `Params::validate`),
/// refused as bad input in the command line's words.
pub fn param_rule(e: ParamError) -> anyhow::Error {
    bad(e.flag_text())
}

/// The one CPU a probe runs on: `cpu` if given and online (else a refusal
/// naming `flag`), or the last online CPU.
pub fn probe_cpu(online: &CpuList, cpu: Option<usize>, flag: &str) -> Result<usize> {
    let cpu = match cpu {
        Some(c) => c,
        None => online
            .iter()
            .last()
            .ok_or_else(|| bad("no CPU is online"))?,
    };
    if !online.contains(cpu) {
        return Err(bad(format!(
            "CPU {cpu} is not online (online CPUs: {online}); choose one of them with {flag}"
        )));
    }
    Ok(cpu)
}

/// The CPUs of a `--cpus` list, each online; without one, every online CPU
/// but CPU 0 when there is more than one (CPU 0 takes the housekeeping).
pub fn measured_cpus(online: &CpuList, list: Option<&CpuList>) -> Result<Vec<usize>> {
    let cpus: Vec<usize> = match list {
        Some(list) => {
            if let Some(off) = list.iter().find(|c| !online.contains(*c)) {
                return Err(bad(format!(
                    "CPU {off} in --cpus is not online (online CPUs: {online}); choose CPUs from that list"
                )));
            }
            list.iter().collect()
        }
        None if online.len() > 1 => online.iter().filter(|&c| c != 0).collect(),
        None => online.iter().collect(),
    };
    if cpus.is_empty() {
        return Err(bad("no CPU is online"));
    }
    Ok(cpus)
}

/// Refuses the shared flags that mean nothing to an event probe.
pub fn refuse_periodic_flags(kind: ProbeKind, c: &CommonArgs) -> Result<()> {
    let name = kind.name();
    let refused = [
        (c.break_trace.is_some(), "--break-trace"),
        (c.histogram.is_some(), "--histogram"),
        (c.max_jitter.is_some(), "--max-jitter"),
        (c.max_exec.is_some(), "--max-exec"),
    ];
    for (given, flag) in refused {
        if given {
            return Err(bad(format!(
                "{flag} applies to the periodic probes (cyclic, wakeup); remove it from run {name}"
            )));
        }
    }
    Ok(())
}

/// The priority (fifo, rr) or nice value (other) of the probe threads, by
/// the spec model's rule; `--strict` with `--policy other` is refused too
/// (it can never be real-time).
fn sched(c: &CommonArgs) -> Result<(Option<i32>, Option<i32>)> {
    if c.strict && c.policy == Policy::Other && c.priority.is_none() {
        return Err(bad(
            "--strict needs a real-time policy, and --policy other is never real-time; use --policy fifo or rr",
        ));
    }
    sched_fields(c.policy, c.priority.map(i64::from), c.nice.map(i64::from)).map_err(|e| {
        bad(match e {
            SchedError::PriorityWithOther(p) => format!(
                "--priority {p} is not allowed with --policy other; use --nice to weight a time-sharing thread, or --policy fifo"
            ),
            SchedError::NiceWithRealtime(n) => format!(
                "--nice {n} applies only to --policy other; use --priority with --policy {}",
                c.policy.name()
            ),
            SchedError::Priority(p) => format!(
                "--priority {p} is outside {}-{} for --policy {}; choose a priority in that range",
                PRIORITIES.start(),
                PRIORITIES.end(),
                c.policy.name()
            ),
            SchedError::Nice(n) => format!(
                "--nice {n} is outside {}..{}; choose a nice value in that range",
                NICES.start(),
                NICES.end()
            ),
        })
    })
}

/// The checks of the options every probe shares, for a run of `threads`
/// threads of `period`: scheduling, zero counts and times, output paths
/// (two naming one file refused), the database `db` the run is stored in
/// (none with `--no-db`), the run's length and its window rows.
pub fn check_common(db: &Db, c: &CommonArgs, period: u64, threads: usize) -> Result<()> {
    sched(c)?;
    check_deployment(c)?;
    if c.duration == Some(0) {
        return Err(bad("--duration must be positive; give e.g. --duration 10s"));
    }
    if c.cycles == Some(0) {
        return Err(bad("--cycles must be at least 1"));
    }
    if c.window == 0 {
        return Err(bad("--window must be positive; give e.g. --window 1s"));
    }
    if c.break_trace == Some(0) {
        return Err(bad(
            "--break-trace must be positive; give e.g. --break-trace 500us",
        ));
    }
    if c.histogram_buckets == 0 {
        return Err(bad("--histogram-buckets must be at least 1"));
    }
    outputs(c).check()?;
    db.check_for_writing()?;
    // How long the run lasts: its duration, or its cycles of one period.
    let lasts = match (c.duration, c.cycles) {
        (Some(d), _) => Some(d),
        (None, None) => Some(defaults::DURATION_NS),
        (None, Some(n)) if period > 0 => {
            let ns = n.saturating_mul(period);
            if ns > limits::MAX_TIME_NS {
                return Err(bad(format!(
                    "--cycles {n} of {} take longer than {}, the longest run; give fewer cycles",
                    format_duration_exact(period),
                    format_duration_exact(limits::MAX_TIME_NS)
                )));
            }
            Some(ns)
        }
        (None, Some(_)) => None,
    };
    if let Some(ns) = lasts {
        limits::check_window_rows(ns, c.window, threads as u64)
            .map_err(|e| bad(format!("--window {}: {e}", format_duration_exact(c.window))))?;
    }
    Ok(())
}

/// The flags that go with `--deployment`: `--engine` only with a
/// container; no `--break-trace` (the kernel trace is the host's) nor
/// `--histogram` (written from the probe threads' own histograms, which
/// stay in the container) in one; the internal `--stream` and
/// `--calibration` only on the host side of a container's own run.
fn check_deployment(c: &CommonArgs) -> Result<()> {
    let container = c.deployment == DeploymentArg::Container;
    if c.engine.is_some() && !container {
        return Err(bad(
            "--engine applies only to --deployment container; add it, or drop --engine",
        ));
    }
    if !container {
        return Ok(());
    }
    let refused = [
        (
            c.break_trace.is_some(),
            "--break-trace stops the host kernel's trace, which a container cannot reach; drop it, or use --deployment host",
        ),
        (
            c.histogram.is_some(),
            "--histogram is written from the probe threads' own histograms, which stay in the container; the stored histograms are in the database (jitterlab report) and --json; drop --histogram, or use --deployment host",
        ),
        (
            c.stream || c.calibration.is_some(),
            "--stream and --calibration are internal to the probe side of a container cell; drop them",
        ),
    ];
    for (given, why) in refused {
        if given {
            return Err(bad(format!("--deployment container: {why}")));
        }
    }
    Ok(())
}

/// `--calibration`'s scan calibrations.
fn calibrations(c: &CommonArgs) -> Result<Option<Vec<Calibration>>> {
    c.calibration
        .as_deref()
        .map(|text| {
            serde_json::from_str(text)
                .map_err(|e| bad(format!("--calibration is not a list of calibrations: {e}")))
        })
        .transpose()
}

// ---------------------------------------------------------------------------
// The one-cell specs.

/// The CPUs of `online` that are not in `probe_cpus`.
pub fn others(online: &CpuList, probe_cpus: &[usize]) -> Vec<usize> {
    online.iter().filter(|c| !probe_cpus.contains(c)).collect()
}

/// The run's configuration, scheduled as the common flags say.
pub fn configuration(
    probe_cpus: Vec<usize>,
    neighbour_cpus: Vec<usize>,
    c: &CommonArgs,
) -> Result<Configuration> {
    let (priority, nice) = sched(c)?;
    Ok(Configuration {
        name: "default".into(),
        probe_cpus,
        neighbour_cpus,
        policy: c.policy,
        priority,
        nice,
        dma_latency: !c.no_dma_latency,
        settings: ConfigSettings::default(),
    })
}

/// The run's probe: `params`, every `period`, with the common flags'
/// threshold, window, outliers and limits.
pub fn probe(params: ProbeParams, period_ns: u64, c: &CommonArgs) -> ProbeSpec {
    ProbeSpec {
        name: params.kind().name().into(),
        period_ns,
        threshold_ns: Some(c.threshold),
        window_ns: c.window,
        outliers: c.outliers,
        max_latency_ns: c.max_latency,
        max_jitter_ns: c.max_jitter,
        max_exec_ns: c.max_exec,
        params,
        scope: ProbeScope::default(),
    }
}

/// The run options of the common flags.
pub fn options(c: &CommonArgs, stop: Stop) -> Result<RunOptions> {
    Ok(RunOptions {
        stop,
        strict: c.strict,
        outputs: outputs(c),
        histogram_buckets: c.histogram_buckets,
        break_trace: c.break_trace,
        progress: c.progress,
        engine: c.engine.map(Engine::from),
        stream: c.stream,
        calibrated: calibrations(c)?,
        monitor: None,
    })
}

/// The files the common flags ask a run to write.
fn outputs(c: &CommonArgs) -> RunOutputs {
    RunOutputs {
        json: c.json.clone(),
        junit: c.junit.clone(),
        csv: c.csv.clone(),
        histogram: c.histogram.clone(),
    }
}

/// How a run of the common flags ends: at its duration, or after
/// `--cycles`.
pub fn stop(c: &CommonArgs) -> Stop {
    match c.cycles {
        Some(n) => Stop::Cycles(n),
        None => Stop::Duration,
    }
}

/// The spec of one cell: `config` × idle × host × `probe`, measured for
/// `duration_ns`.
pub fn spec(config: Configuration, probe: ProbeSpec, duration_ns: u64) -> Spec {
    Spec {
        name: probe.kind().name().into(),
        duration_ns,
        warmup_ns: 0,
        repetitions: 1,
        deployments: vec!["host".into()],
        baseline: config.name.clone(),
        configurations: vec![config],
        scenarios: vec![Scenario::idle()],
        probes: vec![probe],
        warnings: Vec::new(),
    }
}

/// `spec` deployed where `--deployment` says.
pub fn deployed(mut spec: Spec, c: &CommonArgs) -> Spec {
    spec.deployments = vec![Deployment::from(c.deployment).name().into()];
    spec
}

/// A run of the common flags: `params` on `probe_cpus`, the other online
/// CPUs its neighbours.
pub fn common_cell(
    params: ProbeParams,
    period_ns: u64,
    probe_cpus: Vec<usize>,
    online: &CpuList,
    c: &CommonArgs,
) -> Result<OneCell> {
    let neighbours = others(online, &probe_cpus);
    Ok(OneCell {
        spec: deployed(
            spec(
                configuration(probe_cpus, neighbours, c)?,
                probe(params, period_ns, c),
                c.duration.unwrap_or(defaults::DURATION_NS),
            ),
            c,
        ),
        options: options(c, stop(c))?,
    })
}

/// The last online CPU unless `cpu` is given.
pub fn cpu_or_last(online: &CpuList, cpu: Option<usize>) -> Result<usize> {
    cpu.or_else(|| online.iter().last())
        .ok_or_else(|| bad("no CPU is online"))
}

/// Refuses a buffer of `bytes` (a working set, a chase buffer) larger than
/// half of the machine's memory, `MemTotal` of `<root>/proc/meminfo`: the
/// probe allocates, touches and locks it (`mlockall`). `what` starts the
/// message (`--working-set `, `spec.toml: probe[0].working_set: `). Where
/// meminfo cannot be read (a fake sysroot without it) only the static
/// bound of the parser applies.
pub fn check_machine_memory(root: &Path, what: &str, bytes: u64) -> Result<()> {
    let Ok(text) = std::fs::read_to_string(root.join("proc/meminfo")) else {
        return Ok(());
    };
    let Some(total) = limits::mem_total_bytes(&text) else {
        return Ok(());
    };
    limits::check_memory_of_machine(bytes, total).map_err(|e| bad(format!("{what}{e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_cpu_is_the_one_given_if_online_else_the_last_online() {
        let online = CpuList::parse("0-3").unwrap();
        assert_eq!(probe_cpu(&online, None, "--cpu").unwrap(), 3);
        assert_eq!(probe_cpu(&online, Some(1), "--cpu").unwrap(), 1);
        assert_eq!(
            probe_cpu(&online, Some(7), "--cpu")
                .unwrap_err()
                .to_string(),
            "CPU 7 is not online (online CPUs: 0-3); choose one of them with --cpu"
        );
        assert_eq!(
            measured_cpus(&online, None).unwrap(),
            [1, 2, 3],
            "every online CPU but CPU 0"
        );
    }
}
