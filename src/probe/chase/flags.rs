//! `jitterlab run chase`: its flags, their checks, and the one-cell spec
//! they make ([Red Hat caterpillar]'s pointer chase, placed by `--roles`).
//! Built on the flags' toolkit ([`crate::probe::flags`]), which holds what
//! every kind's flags share.
//!
//! The documents cited here are listed in `docs/design.md`.

use std::path::Path;

use anyhow::Result;
use jitterlab_core::chase::params::PARAMS;
use jitterlab_core::chase::{ChaseParams, Roles};
use jitterlab_core::defaults;
use jitterlab_core::limits;
use jitterlab_core::result::ProbeKind;
use jitterlab_core::spec::ProbeParams;
use jitterlab_core::units::CpuList;

use crate::error::bad;
use crate::probe::flags::{
    check_common, check_machine_memory, common_flags, configuration, cpu_or_last, deployed,
    flag_of, key_params, options, others, probe, probe_cpu, refuse_periodic_flags, spec,
    CommonArgs, Flag, FlagValues, FromFlags, KindFlags, OneCell, ValueKind,
};
use crate::probe::Stop;
use crate::store::Db;
use crate::system::host;

/// `jitterlab run chase`'s flags, as the command line gave them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChaseRunArgs {
    /// `--cpu`.
    pub cpu: Option<usize>,
    /// `--roles`, as written.
    pub roles: Option<String>,
    /// Its parameters (`--buffer`, `--iterations`, `--samples`, and
    /// `--chase-length`, which is no key of a spec).
    pub params: ChaseParams,
    /// Options every probe shares (--cycles, --break-trace, --histogram and
    /// the --max-* limits do not apply to a chase).
    pub common: CommonArgs,
}

/// `jitterlab run chase`'s flags: `--cpu`, `--roles`, its keys'
/// (`--buffer`, `--iterations`, `--samples`), `--chase-length` and the
/// common ones.
pub fn flags() -> KindFlags {
    let mut flags = vec![
        Flag::new(
            "cpu",
            ValueKind::Cpu,
            "CPU to chase on [default: the last online CPU; with --roles, the test role]",
        )
        .conflicts(&["roles"]),
        Flag::new(
            "roles",
            ValueKind::Text,
            "Cores as [Red Hat caterpillar]'s script places them: \
             test=CPU,neighbour=CPU,irq=CPU. The neighbour CPU chooses the shared cache that \
             sizes the buffer; the irq CPU receives every movable IRQ for the run (put back \
             after)",
        )
        .value_name("ROLES"),
        flag_of(&PARAMS, "buffer"),
        flag_of(&PARAMS, "iterations"),
        flag_of(&PARAMS, "samples").conflicts(&["duration"]),
        Flag::new(
            "chase_length",
            ValueKind::Count(&limits::CHASE_LENGTH),
            "Dependent loads in one timed chase (continuing around the buffer's cycle from one \
             chase to the next)",
        )
        .default(defaults::CHASE_LENGTH.to_string()),
    ];
    flags.extend(common_flags());
    KindFlags {
        about: "Cache sensitivity: a pointer chase over a buffer sized to the cache the \
                neighbours share, timed in CPU cycles, with caterpillar's per-sample columns \
                ([Red Hat caterpillar])",
        long_about: None,
        hidden: false,
        flags,
    }
}

impl FromFlags for ChaseRunArgs {
    fn from_flags(v: &FlagValues) -> Result<ChaseRunArgs> {
        Ok(ChaseRunArgs {
            cpu: v.opt_usize("cpu"),
            roles: v.opt_text("roles"),
            params: ChaseParams {
                chase_length: v.u64("chase_length"),
                ..key_params(ProbeKind::Chase, v, 0)?
            },
            common: CommonArgs::read(v),
        })
    }
}

/// `jitterlab run chase`, as the command line gave it: see [`check`].
pub fn one_cell(v: &FlagValues, root: &Path, db: &Db) -> Result<OneCell> {
    check(root, db, &ChaseRunArgs::from_flags(v)?)
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
    if a.params.samples == Some(0) {
        return Err(bad("--samples must be at least 1"));
    }
    if let Some(bytes) = a.params.buffer_bytes {
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
    let params = ProbeParams::new(a.params.clone());
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
