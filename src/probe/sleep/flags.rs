//! `jitterlab run sleep` (the `test-probe` feature, hidden): `--cpu`, its
//! two parameters (`--slack`, `--spin`: the flags of its keys,
//! `jitterlab_core::sleep::KEYS`, derived by `key_flags`, and read by the
//! keys' own check, `key_params`) and the flags every probe shares,
//! checked — its parameters by the same `validate` a spec's are — and
//! turned into the one-cell spec of a sleep probe every period of the
//! default 1 ms. Built on the flags' toolkit ([`crate::probe::flags`]).

use std::path::Path;

use anyhow::Result;
use jitterlab_core::defaults;
use jitterlab_core::result::ProbeKind;
use jitterlab_core::sleep::{SleepParams, PARAMS};
use jitterlab_core::spec::{Params, ProbeParams};

use crate::error::bad;
use crate::probe::flags::{
    check_common, common_cell, common_flags, key_flags, key_params, param_rule, probe_cpu,
    refuse_periodic_flags, CommonArgs, Flag, FlagValues, FromFlags, KindFlags, OneCell, ValueKind,
};
use crate::store::Db;

/// `jitterlab run sleep`'s flags, as the command line gave them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SleepRunArgs {
    /// `--cpu`.
    pub cpu: Option<usize>,
    /// Its parameters (`--slack`, `--spin`).
    pub params: SleepParams,
    /// Options every probe shares.
    pub common: CommonArgs,
}

/// `jitterlab run sleep`'s flags (hidden): `--cpu`, its keys' and the
/// common ones (--break-trace, --histogram and the --max-* limits do not
/// apply).
pub fn flags() -> KindFlags {
    let mut flags = vec![Flag::new(
        "cpu",
        ValueKind::Cpu,
        "CPU to sleep on [default: the last online CPU]",
    )];
    flags.extend(key_flags(&PARAMS));
    flags.extend(common_flags());
    KindFlags {
        about: "A probe compiled only for tests: how late a thread wakes from a sleep of one \
                period (1 ms), one sample per sleep",
        long_about: None,
        hidden: true,
        flags,
    }
}

impl FromFlags for SleepRunArgs {
    fn from_flags(v: &FlagValues) -> Result<SleepRunArgs> {
        Ok(SleepRunArgs {
            cpu: v.opt_usize("cpu"),
            params: key_params(ProbeKind::Sleep, v, defaults::PERIOD_NS)?,
            common: CommonArgs::read(v),
        })
    }
}

/// `jitterlab run sleep`, as the command line gave it: see [`check`].
pub fn one_cell(v: &FlagValues, root: &Path, db: &Db) -> Result<OneCell> {
    check(root, db, &SleepRunArgs::from_flags(v)?)
}

/// `jitterlab run sleep`: one sleep probe on one CPU, every period of the
/// default 1 ms, with the common flags.
pub fn check(root: &Path, db: &Db, a: &SleepRunArgs) -> Result<OneCell> {
    refuse_periodic_flags(ProbeKind::Sleep, &a.common)?;
    if a.common.max_latency.is_some() {
        return Err(bad("--max-latency does not apply to run sleep"));
    }
    let online = crate::system::host::online_cpus(root)?;
    let cpu = probe_cpu(&online, a.cpu, "--cpu")?;
    let params = a.params.clone();
    params.validate(defaults::PERIOD_NS).map_err(param_rule)?;
    check_common(db, &a.common, defaults::PERIOD_NS, 1)?;
    common_cell(
        ProbeParams::new(params),
        defaults::PERIOD_NS,
        vec![cpu],
        &online,
        &a.common,
    )
}
