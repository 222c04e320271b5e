//! `jitterlab run X`: its flags turned into a one-cell [`Spec`] — one
//! configuration (`default`), the `idle` scenario, the `host` deployment,
//! one probe — and the [`RunOptions`] only a run has, so the runner
//! measures a run exactly as it measures a bench cell.
//!
//! [`one_cell`] first refuses what is wrong, in the order `jitterlab run`
//! always checked it and with the same one-line messages naming the flag
//! (exit 2): the flags a probe does not take, the CPUs against the
//! machine's online list, the period, the scan against the period, a
//! working set or buffer against the machine's memory, the
//! policy/priority/nice triple, zero counts and times, the output paths and
//! the database, the length of the run and its window rows, and last what
//! the probe itself refuses (its own argument checks, the UDP source's
//! environment, rtla's limits and the timerlat tracer's availability). The
//! rules shared with the spec checker — the scan shorter than the period,
//! which of priority and nice a policy takes — are the spec model's own
//! functions ([`scan_fits`], [`sched_fields`]), each front door naming its
//! own keys or flags. Then the `*_cell` builders, pure functions of the
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
//!   `--engine` goes in [`RunOptions`], and [`one_cell`] refuses, last,
//!   what keeps the probe out of a container (timerlat refuses it first,
//!   with the reason), a host without a working engine (naming what to
//!   install) and a host that cannot run one (not root, a cgroup
//!   controller split between v1 and v2, with the fix). `--stream` and
//!   `--calibration` are the hidden flags of the run inside a container.

use std::path::{Path, PathBuf};

use anyhow::Result;
use jitterlab_core::chase::{ChaseParams, Roles};
use jitterlab_core::cyclic::CyclicParams;
use jitterlab_core::defaults;
use jitterlab_core::limits;
use jitterlab_core::response::ResponseParams;
use jitterlab_core::result::ProbeKind;
use jitterlab_core::spec::{
    scan_fits, sched_fields, ConfigSettings, Configuration, Deployment, PlainParams, Policy,
    ProbeParams, ProbeScope, ProbeSpec, Scenario, SchedError, Spec, NICES, PRIORITIES,
};
use jitterlab_core::timerlat::TimerlatParams;
use jitterlab_core::units::{format_duration_exact, CpuList};

use super::{
    ChaseRunArgs, CommonArgs, CtxswitchRunArgs, CyclicArgs, DeploymentArg, ResponseRunArgs,
    RunCommand, TimerlatRunArgs, WakeupArgs,
};
use crate::error::bad;
use crate::out_files;
use crate::output::errln;
use crate::probe::timerlat::TimerlatRequest;
use crate::probe::{ctxswitch, response, timerlat};
use crate::runner::{self, RunOptions, Stop};
use crate::system::container::Engine;
use crate::system::host;
use jitterlab_core::probe::InContainer;
use jitterlab_core::result::Calibration;

/// A run, as the runner takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OneCell {
    /// The one-cell spec.
    pub spec: Spec,
    /// What only a run asks for.
    pub options: RunOptions,
}

/// Checks `jitterlab run X`'s flags against the machine (see the module
/// doc) and turns them into the one-cell spec the runner measures: each
/// subcommand's function, as [`RunCommand::one_cell`] names it.
pub fn one_cell(root: &Path, db: &Path, run: &RunCommand) -> Result<OneCell> {
    let one = run.one_cell(root, db)?;
    let cell = one.spec.cells().remove(0);
    if cell.in_container() {
        // Last, as a probe's own environment is: what keeps this probe out
        // of a container, then an engine that works and a host it can run on.
        if let Some(why) = crate::probe::cell_kind_unavailable(&one.spec, &cell, root) {
            return Err(bad(why));
        }
        let (_, found) = crate::system::container::choose(one.options.engine)?;
        crate::system::container::refuse_host(root, jitterlab_sys::effective_uid())?;
        errln!("jitterlab: container: {found}");
    }
    Ok(one)
}

/// `jitterlab run cyclic`.
pub(super) fn cyclic(root: &Path, db: &Path, a: &CyclicArgs) -> Result<OneCell> {
    let online = host::online_cpus(root)?;
    probe_cpu(&online, a.cpu, "--cpu")?;
    if a.period == 0 {
        return Err(bad("--period must be positive; give e.g. --period 1ms"));
    }
    if !scan_fits(a.scan, a.period) {
        return Err(bad(format!(
            "--scan {} is not shorter than --period {}; shorten the scan or lengthen the period",
            format_duration_exact(a.scan),
            format_duration_exact(a.period)
        )));
    }
    runner::check_machine_memory(root, "--working-set ", a.working_set)?;
    check_common(db, &a.common, a.period, 1)?;
    cyclic_cell(a, &online)
}

/// `jitterlab run wakeup`.
pub(super) fn wakeup(root: &Path, db: &Path, a: &WakeupArgs) -> Result<OneCell> {
    let online = host::online_cpus(root)?;
    let cpus = measured_cpus(&online, a.cpus.as_ref())?;
    if a.interval == 0 {
        return Err(bad("--interval must be positive; give e.g. --interval 1ms"));
    }
    check_common(db, &a.common, a.interval, cpus.len())?;
    wakeup_cell(a, &online)
}

/// `jitterlab run chase`.
pub(super) fn chase(root: &Path, db: &Path, a: &ChaseRunArgs) -> Result<OneCell> {
    let c = &a.common;
    refuse_periodic_flags(ProbeKind::Chase, c)?;
    if c.max_latency.is_some() {
        return Err(bad(
            "--max-latency does not apply to a chase: it measures CPU cycles, not a latency",
        ));
    }
    if c.cycles.is_some() {
        return Err(bad(
            "a chase counts samples: use --samples instead of --cycles",
        ));
    }
    let online = host::online_cpus(root)?;
    let roles = roles(a)?;
    probe_cpu(&online, roles.map(|r| r.test).or(a.cpu), "--cpu")?;
    if let Some(r) = &roles {
        for (role, c) in [("neighbour", r.neighbour), ("irq", r.irq)] {
            if let Some(c) = c.filter(|c| !online.contains(*c)) {
                return Err(bad(format!(
                    "--roles: the {role} CPU {c} is not online (online CPUs: {online})"
                )));
            }
        }
    }
    if a.samples == Some(0) {
        return Err(bad("--samples must be at least 1"));
    }
    if let Some(bytes) = a.buffer {
        runner::check_machine_memory(root, "--buffer ", bytes)?;
    }
    check_common(db, c, 0, 1)?;
    chase_cell(a, &online)
}

/// `jitterlab run ctxswitch`.
pub(super) fn ctxswitch(root: &Path, db: &Path, a: &CtxswitchRunArgs) -> Result<OneCell> {
    refuse_periodic_flags(ProbeKind::Ctxswitch, &a.common)?;
    let online = host::online_cpus(root)?;
    probe_cpu(&online, a.cpu, "--cpu")?;
    check_common(db, &a.common, a.interval, 1)?;
    let run = ctxswitch_cell(a, &online)?;
    let (cell, plan) = cell_and_plan(&run);
    ctxswitch::validate(&ctxswitch::args(&run.spec, &cell, &plan), &online)?;
    Ok(run)
}

/// `jitterlab run response`.
pub(super) fn response(root: &Path, db: &Path, a: &ResponseRunArgs) -> Result<OneCell> {
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
    let args = response::args(&run.spec, &cell, &plan);
    for w in response::validate(&args, &online)? {
        errln!("jitterlab: warning: {w}");
    }
    response::check_environment(&args)?;
    Ok(run)
}

/// `jitterlab run timerlat`.
pub(super) fn timerlat(root: &Path, db: &Path, a: &TimerlatRunArgs) -> Result<OneCell> {
    if let (DeploymentArg::Container, InContainer::NotApplicable(why)) =
        (a.deployment, ProbeKind::Timerlat.descriptor().container)
    {
        return Err(bad(format!("--deployment container: {why}")));
    }
    let online = host::online_cpus(root)?;
    measured_cpus(&online, a.cpus.as_ref())?;
    let run = timerlat_cell(a, &online)?;
    let (cell, _) = cell_and_plan(&run);
    TimerlatRequest::new(&run.spec, &cell, PathBuf::new()).validate()?;
    out_files::check_outputs(&[("--json", a.json.as_deref())])?;
    if !a.no_db {
        out_files::check_database(db)?;
        crate::store::check_for_writing(db)?;
    }
    timerlat::availability(root)
        .map_err(|why| bad(format!("cannot measure interrupt latency here: {why}")))?;
    Ok(run)
}

/// The spec's one cell and its plan, for the probe's own checks.
pub(super) fn cell_and_plan(run: &OneCell) -> (jitterlab_core::spec::CellPlan, runner::RunPlan) {
    let cell = run.spec.cells().remove(0);
    let plan = runner::plan(&run.spec, &cell, &run.options);
    (cell, plan)
}

// ---------------------------------------------------------------------------
// The checks every probe's flags share.

/// The one CPU a probe runs on: `cpu` if given and online (else a refusal
/// naming `flag`), or the last online CPU.
pub(super) fn probe_cpu(online: &CpuList, cpu: Option<usize>, flag: &str) -> Result<usize> {
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
fn measured_cpus(online: &CpuList, list: Option<&CpuList>) -> Result<Vec<usize>> {
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

/// `--roles`, parsed.
fn roles(a: &ChaseRunArgs) -> Result<Option<Roles>> {
    match &a.roles {
        Some(r) => Ok(Some(r.parse().map_err(|e| bad(format!("--roles: {e}")))?)),
        None => Ok(None),
    }
}

/// Refuses the shared flags that mean nothing to an event probe.
pub(super) fn refuse_periodic_flags(kind: ProbeKind, c: &CommonArgs) -> Result<()> {
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
/// threads of `period`: scheduling, zero counts and times, output paths,
/// the database (unless `--no-db`), the run's length and its window rows.
pub(super) fn check_common(db: &Path, c: &CommonArgs, period: u64, threads: usize) -> Result<()> {
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
    out_files::check_outputs(&[
        ("--json", c.json.as_deref()),
        ("--junit", c.junit.as_deref()),
        ("--csv", c.csv.as_deref()),
        ("--histogram", c.histogram.as_deref()),
    ])?;
    if !c.no_db {
        out_files::check_database(db)?;
        crate::store::check_for_writing(db)?;
    }
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
fn others(online: &CpuList, probe_cpus: &[usize]) -> Vec<usize> {
    online.iter().filter(|c| !probe_cpus.contains(c)).collect()
}

/// The run's configuration, scheduled as the common flags say.
fn configuration(
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
fn probe(params: ProbeParams, period_ns: u64, c: &CommonArgs) -> ProbeSpec {
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
fn options(c: &CommonArgs, stop: Stop) -> Result<RunOptions> {
    Ok(RunOptions {
        stop,
        strict: c.strict,
        json: c.json.clone(),
        junit: c.junit.clone(),
        csv: c.csv.clone(),
        histogram: c.histogram.clone(),
        histogram_buckets: c.histogram_buckets,
        break_trace: c.break_trace,
        progress: c.progress,
        no_db: c.no_db,
        engine: c.engine.map(Engine::from),
        stream: c.stream,
        calibrated: calibrations(c)?,
        monitor: None,
    })
}

/// How a run of the common flags ends: at its duration, or after
/// `--cycles`.
fn stop(c: &CommonArgs) -> Stop {
    match c.cycles {
        Some(n) => Stop::Cycles(n),
        None => Stop::Duration,
    }
}

/// The spec of one cell: `config` × idle × host × `probe`, measured for
/// `duration_ns`.
fn spec(config: Configuration, probe: ProbeSpec, duration_ns: u64) -> Spec {
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
fn deployed(mut spec: Spec, c: &CommonArgs) -> Spec {
    spec.deployments = vec![Deployment::from(c.deployment).name().into()];
    spec
}

/// A run of the common flags: `params` on `probe_cpus`, the other online
/// CPUs its neighbours.
pub(super) fn common_cell(
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
pub(super) fn cpu_or_last(online: &CpuList, cpu: Option<usize>) -> Result<usize> {
    cpu.or_else(|| online.iter().last())
        .ok_or_else(|| bad("no CPU is online"))
}

/// `jitterlab run cyclic`.
pub fn cyclic_cell(a: &CyclicArgs, online: &CpuList) -> Result<OneCell> {
    let params = ProbeParams::new(CyclicParams {
        scan_ns: a.scan,
        working_set_bytes: a.working_set,
    });
    let cpu = cpu_or_last(online, a.cpu)?;
    common_cell(params, a.period, vec![cpu], online, &a.common)
}

/// `jitterlab run wakeup`.
pub fn wakeup_cell(a: &WakeupArgs, online: &CpuList) -> Result<OneCell> {
    let cpus = measured_cpus(online, a.cpus.as_ref())?;
    common_cell(
        ProbeParams::new(PlainParams(ProbeKind::Wakeup)),
        a.interval,
        cpus,
        online,
        &a.common,
    )
}

/// `jitterlab run chase`: no period; `--roles` places the probe, the
/// neighbour CPU and the IRQs (an `irq_cpus` setting of the configuration);
/// without `--duration` it ends by its samples.
pub fn chase_cell(a: &ChaseRunArgs, online: &CpuList) -> Result<OneCell> {
    let c = &a.common;
    let roles = roles(a)?;
    let cpu = cpu_or_last(online, roles.map(|r| r.test).or(a.cpu))?;
    let params = ProbeParams::new(ChaseParams {
        buffer_bytes: a.buffer,
        iterations: Some(a.iterations),
        samples: a.samples,
        chase_length: a.chase_length,
    });
    let neighbours = match roles.and_then(|r| r.neighbour) {
        Some(n) => vec![n],
        None => others(online, &[cpu]),
    };
    let mut config = configuration(vec![cpu], neighbours, c)?;
    config.settings.irq_cpus = roles.and_then(|r| r.irq).map(|i| vec![i]);
    let stop = match c.duration {
        Some(_) => Stop::Duration,
        None => Stop::Samples,
    };
    Ok(OneCell {
        spec: deployed(
            spec(
                config,
                probe(params, 0, c),
                c.duration.unwrap_or(defaults::DURATION_NS),
            ),
            c,
        ),
        options: options(c, stop)?,
    })
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

/// `jitterlab run timerlat`: rtla's SCHED_FIFO threads at `--priority` on
/// every CPU of `--cpus`.
pub fn timerlat_cell(a: &TimerlatRunArgs, online: &CpuList) -> Result<OneCell> {
    let cpus = measured_cpus(online, a.cpus.as_ref())?;
    let neighbours = others(online, &cpus);
    let config = Configuration {
        name: "default".into(),
        probe_cpus: cpus,
        neighbour_cpus: neighbours,
        policy: Policy::Fifo,
        priority: Some(i32::from(a.priority)),
        nice: None,
        dma_latency: true,
        settings: ConfigSettings::default(),
    };
    let probe = ProbeSpec {
        name: ProbeKind::Timerlat.name().into(),
        period_ns: a.period,
        threshold_ns: Some(a.threshold),
        window_ns: defaults::WINDOW_NS,
        outliers: defaults::OUTLIERS,
        max_latency_ns: None,
        max_jitter_ns: None,
        max_exec_ns: None,
        params: ProbeParams::new(TimerlatParams {
            user_threads: a.user_threads,
            every_probe_cpu: true,
        }),
        scope: ProbeScope::default(),
    };
    Ok(OneCell {
        spec: spec(config, probe, a.duration),
        options: RunOptions {
            json: a.json.clone(),
            no_db: a.no_db,
            ..RunOptions::default()
        },
    })
}

#[cfg(test)]
mod tests;
