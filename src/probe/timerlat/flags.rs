//! `jitterlab run timerlat`: its flags, their checks, and the one-cell
//! spec they make (rtla's threads on every CPU of `--cpus`). Built on the
//! flags' toolkit ([`crate::probe::flags`]), which holds what every kind's
//! flags share; timerlat takes none of the common flags.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;
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
use crate::probe::flags::parse::{cpu_list, default_time, duration, period};
use crate::probe::flags::{
    cell_and_plan, matched, measured_cpus, others, spec, subcommand, DeploymentArg, OneCell,
};
use crate::probe::plan::RunOptions;
use crate::store::Db;
use crate::system::host;

/// Interrupt and thread latency from the kernel's timerlat tracer,
/// through `rtla timerlat hist` (Debian package rtla); refused, with the
/// reason, where the kernel has no timerlat tracer.
#[derive(Debug, Args)]
pub struct TimerlatRunArgs {
    /// CPUs to measure, e.g. 1,3 or 2-5 [default: every online CPU but CPU 0
    /// when there is more than one].
    #[arg(long, value_name = "LIST", value_parser = cpu_list)]
    pub cpus: Option<CpuList>,

    /// Period of the tracer's timer (whole microseconds, 100us to 1s).
    #[arg(long, value_name = "TIME", default_value = default_time(defaults::PERIOD_NS), value_parser = period, allow_hyphen_values = true)]
    pub period: u64,

    /// How long to measure (whole seconds: rtla's own unit).
    #[arg(long, value_name = "TIME", default_value = default_time(defaults::DURATION_NS), value_parser = duration, allow_hyphen_values = true)]
    pub duration: u64,

    /// SCHED_FIFO priority of the tracer's measuring threads.
    #[arg(long, value_name = "PRIO", default_value_t = defaults::PRIORITY as u8)]
    pub priority: u8,

    /// Latency above which a sample counts in the "% over" column.
    #[arg(long, value_name = "TIME", default_value = default_time(defaults::THRESHOLD_NS), value_parser = duration, allow_hyphen_values = true)]
    pub threshold: u64,

    /// Measure with user-space threads (rtla -u, since rtla 6.6): adds the
    /// return-to-user latency.
    #[arg(long)]
    pub user_threads: bool,

    /// Also write the whole versioned result as JSON to this file (`-`:
    /// stdout; the summary then goes to stderr).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Do not store the run in the results database.
    #[arg(long)]
    pub no_db: bool,

    /// Where the probe runs; timerlat measures the host kernel's tracer and
    /// is N/A in a container (refused with the reason).
    #[arg(long, value_enum, default_value = "host")]
    pub deployment: DeploymentArg,
}

/// `jitterlab run timerlat`'s subcommand.
pub fn command() -> clap::Command {
    subcommand::<TimerlatRunArgs>(ProbeKind::Timerlat)
}

/// `jitterlab run timerlat`, as clap matched it: see [`check`].
pub fn one_cell(m: &clap::ArgMatches, root: &Path, db: &Db) -> Result<OneCell> {
    check(root, db, &matched(m)?)
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
