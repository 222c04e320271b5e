//! `jitterlab run timerlat`: its flags, their checks, and the one-cell
//! spec they make (rtla's threads on every CPU of `--cpus`). Built on the
//! flags' toolkit ([`crate::probe::flags`]), which holds what every kind's
//! flags share; timerlat takes none of the common flags.

use std::path::{Path, PathBuf};

use anyhow::Result;
use jitterlab_core::defaults;
use jitterlab_core::probe::InContainer;
use jitterlab_core::result::ProbeKind;
use jitterlab_core::spec::{
    ConfigSettings, Configuration, Policy, ProbeParams, ProbeScope, ProbeSpec,
};
use jitterlab_core::timerlat::TimerlatParams;
use jitterlab_core::units::CpuList;

use super::TimerlatRequest;
use crate::error::bad;
use crate::out_files;
use crate::probe::flags::{
    cell_and_plan, measured_cpus, no_db_flag, others, spec, time_text, DeploymentArg, Flag,
    FlagValues, FromFlags, KindFlags, OneCell, ValueKind, DEPLOYMENT,
};
use crate::probe::plan::RunOptions;
use crate::store::Db;
use crate::system::host;

/// `jitterlab run timerlat`'s flags, as the command line gave them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimerlatRunArgs {
    /// `--cpus`.
    pub cpus: Option<CpuList>,
    /// `--period`, ns.
    pub period: u64,
    /// `--duration`, ns.
    pub duration: u64,
    /// `--priority`.
    pub priority: u8,
    /// `--threshold`, ns.
    pub threshold: u64,
    /// `--user-threads`.
    pub user_threads: bool,
    /// `--json`.
    pub json: Option<PathBuf>,
    /// `--no-db`.
    pub no_db: bool,
    /// `--deployment`.
    pub deployment: DeploymentArg,
}

/// `jitterlab run timerlat`'s flags: its own, none of the common ones.
pub fn flags() -> KindFlags {
    use ValueKind::{CpuList, Int, Path, Period, Switch, Time};
    KindFlags {
        about: "Interrupt and thread latency from the kernel's timerlat tracer, through `rtla \
                timerlat hist` (Debian package rtla); refused, with the reason, where the \
                kernel has no timerlat tracer",
        long_about: None,
        hidden: false,
        flags: vec![
            Flag::new(
                "cpus",
                CpuList,
                "CPUs to measure, e.g. 1,3 or 2-5 [default: every online CPU but CPU 0 when \
                 there is more than one]",
            ),
            Flag::new(
                "period",
                Period,
                "Period of the tracer's timer (whole microseconds, 100us to 1s)",
            )
            .default(time_text(defaults::PERIOD_NS)),
            Flag::new(
                "duration",
                Time,
                "How long to measure (whole seconds: rtla's own unit)",
            )
            .default(time_text(defaults::DURATION_NS)),
            Flag::new(
                "priority",
                Int(0, i64::from(u8::MAX)),
                "SCHED_FIFO priority of the tracer's measuring threads",
            )
            .value_name("PRIO")
            .hyphen_values(false)
            .default(defaults::PRIORITY.to_string()),
            Flag::new(
                "threshold",
                Time,
                "Latency above which a sample counts in the \"% over\" column",
            )
            .default(time_text(defaults::THRESHOLD_NS)),
            Flag::new(
                "user_threads",
                Switch,
                "Measure with user-space threads (rtla -u, since rtla 6.6): adds the \
                 return-to-user latency",
            ),
            Flag::new(
                "json",
                Path,
                "Also write the whole versioned result as JSON to this file (`-`: stdout; the \
                 summary then goes to stderr)",
            ),
            no_db_flag(),
            Flag::new(
                "deployment",
                DEPLOYMENT,
                "Where the probe runs; timerlat measures the host kernel's tracer and is N/A in \
                 a container (refused with the reason)",
            )
            .value_name("DEPLOYMENT")
            .default("host"),
        ],
    }
}

impl FromFlags for TimerlatRunArgs {
    fn from_flags(v: &FlagValues) -> Result<TimerlatRunArgs> {
        Ok(TimerlatRunArgs {
            cpus: v.opt_cpus("cpus"),
            period: v.u64("period"),
            duration: v.u64("duration"),
            priority: v.i64("priority") as u8,
            threshold: v.u64("threshold"),
            user_threads: v.switch("user_threads"),
            json: v.opt_path("json"),
            no_db: v.switch("no_db"),
            deployment: DeploymentArg::read(v),
        })
    }
}

/// `jitterlab run timerlat`, as the command line gave it: see [`check`].
pub fn one_cell(v: &FlagValues, root: &Path, db: &Db) -> Result<OneCell> {
    check(root, db, &TimerlatRunArgs::from_flags(v)?)
}

/// Checks `jitterlab run timerlat`'s flags against the machine under
/// `root` and makes its one-cell spec (`db`: the results database it is
/// stored in).
pub fn check(root: &Path, db: &Db, a: &TimerlatRunArgs) -> Result<OneCell> {
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
    db.check_for_writing()?;
    super::availability(root)
        .map_err(|why| bad(format!("cannot measure interrupt latency here: {why}")))?;
    Ok(run)
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
            outputs: out_files::RunOutputs {
                json: a.json.clone(),
                ..Default::default()
            },
            ..RunOptions::default()
        },
    })
}
