//! `jitterlab run chase`: its flags, their checks, and the one-cell spec
//! they make ([Red Hat caterpillar]'s pointer chase, placed by `--roles`).
//! Built on the flags' toolkit ([`crate::probe::flags`]), which holds what
//! every kind's flags share.
//!
//! The documents cited here are listed in `docs/design.md`.

use std::path::Path;

use anyhow::Result;
use clap::Args;
use jitterlab_core::chase::{ChaseParams, Roles};
use jitterlab_core::defaults;
use jitterlab_core::limits;
use jitterlab_core::result::ProbeKind;
use jitterlab_core::spec::ProbeParams;
use jitterlab_core::units::CpuList;

use crate::error::bad;
use crate::probe::flags::parse::{at_most, memory};
use crate::probe::flags::{
    check_common, check_machine_memory, configuration, cpu_or_last, deployed, matched, options,
    others, probe, probe_cpu, refuse_periodic_flags, spec, subcommand, CommonArgs, OneCell,
};
use crate::probe::Stop;
use crate::store::Db;
use crate::system::host;

/// Cache sensitivity: a pointer chase over a buffer sized to the cache
/// the neighbours share, timed in CPU cycles, with caterpillar's
/// per-sample columns ([Red Hat caterpillar]).
#[derive(Debug, Args)]
pub struct ChaseRunArgs {
    /// CPU to chase on [default: the last online CPU; with --roles, the
    /// test role].
    #[arg(long, value_name = "CPU", conflicts_with = "roles")]
    pub cpu: Option<usize>,

    /// Cores as [Red Hat caterpillar]'s script places them: test=CPU,neighbour=CPU,irq=CPU.
    /// The neighbour CPU chooses the shared cache that sizes the buffer; the
    /// irq CPU receives every movable IRQ for the run (put back after).
    #[arg(long, value_name = "ROLES")]
    pub roles: Option<String>,

    /// Buffer to chase [default: half of the cache level the probe CPU
    /// shares with the neighbours].
    #[arg(long, value_name = "SIZE", value_parser = memory)]
    pub buffer: Option<u64>,

    /// Timed chases per sample; a sample's jitter is their max - min.
    #[arg(long, value_name = "N", default_value_t = defaults::ITERATIONS, value_parser = iterations, allow_hyphen_values = true)]
    pub iterations: u64,

    /// Samples to take [default: 200, or as many as --duration allows].
    #[arg(long, value_name = "N", conflicts_with = "duration", value_parser = samples, allow_hyphen_values = true)]
    pub samples: Option<u64>,

    /// Dependent loads in one timed chase (continuing around the buffer's
    /// cycle from one chase to the next).
    #[arg(long, value_name = "N", default_value_t = defaults::CHASE_LENGTH, value_parser = chase_length, allow_hyphen_values = true)]
    pub chase_length: u64,

    /// Options every probe shares (--cycles, --break-trace, --histogram and
    /// the --max-* limits do not apply to a chase).
    #[command(flatten)]
    pub common: CommonArgs,
}

/// `--samples`: a count, at most [`limits::SAMPLES`].
fn samples(s: &str) -> Result<u64, String> {
    at_most(s, &limits::SAMPLES)
}

/// `--iterations`: a count, at most [`limits::ITERATIONS`].
fn iterations(s: &str) -> Result<u64, String> {
    at_most(s, &limits::ITERATIONS)
}

/// `--chase-length`: a count, at most [`limits::CHASE_LENGTH`].
fn chase_length(s: &str) -> Result<u64, String> {
    at_most(s, &limits::CHASE_LENGTH)
}

/// `jitterlab run chase`'s subcommand.
pub fn command() -> clap::Command {
    subcommand::<ChaseRunArgs>(ProbeKind::Chase)
}

/// `jitterlab run chase`, as clap matched it: see [`check`].
pub fn one_cell(m: &clap::ArgMatches, root: &Path, db: &Db) -> Result<OneCell> {
    check(root, db, &matched(m)?)
}

/// Checks `jitterlab run chase`'s flags against the machine under `root`
/// and makes its one-cell spec (`db`: the results database it is stored in).
pub fn check(root: &Path, db: &Db, a: &ChaseRunArgs) -> Result<OneCell> {
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
        check_machine_memory(root, "--buffer ", bytes)?;
    }
    check_common(db, c, 0, 1)?;
    chase_cell(a, &online)
}

/// `--roles`, parsed.
fn roles(a: &ChaseRunArgs) -> Result<Option<Roles>> {
    match &a.roles {
        Some(r) => Ok(Some(r.parse().map_err(|e| bad(format!("--roles: {e}")))?)),
        None => Ok(None),
    }
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
