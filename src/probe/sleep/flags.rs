//! `jitterlab run sleep` (the `test-probe` feature, hidden): `--cpu`, its
//! two parameters (`--slack`, `--spin`: the help and default of its keys,
//! `jitterlab_core::sleep::KEYS`) and the flags every probe shares,
//! checked — its parameters by the same `validate` a spec's are — and
//! turned into the one-cell spec of a sleep probe every period of the
//! default 1 ms. Built on the flags' toolkit ([`crate::probe::flags`]).

use std::path::Path;

use anyhow::Result;
use clap::Args;
use jitterlab_core::defaults;
use jitterlab_core::result::ProbeKind;
use jitterlab_core::sleep::{SleepParams, SLACK, SPIN};
use jitterlab_core::spec::{Params, ProbeParams};

use crate::error::bad;
use crate::probe::flags::parse::duration;
use crate::probe::flags::{
    check_common, common_cell, matched, param_rule, probe_cpu, refuse_periodic_flags, subcommand,
    CommonArgs, OneCell,
};
use crate::store::Db;

/// A probe compiled only for tests: how late a thread wakes from a
/// sleep of one period (1 ms), one sample per sleep.
#[derive(Debug, Args)]
#[command(hide = true)]
pub struct SleepRunArgs {
    /// CPU to sleep on [default: the last online CPU].
    #[arg(long, value_name = "CPU")]
    pub cpu: Option<usize>,

    #[arg(long, value_name = "TIME", help = SLACK.help, default_value = SLACK.default, value_parser = duration)]
    pub slack: u64,

    #[arg(long, help = SPIN.help)]
    pub spin: bool,

    /// Options every probe shares (--break-trace, --histogram and the
    /// --max-* limits do not apply).
    #[command(flatten)]
    pub common: CommonArgs,
}

/// `jitterlab run sleep`'s subcommand (hidden).
pub fn command() -> clap::Command {
    subcommand::<SleepRunArgs>(ProbeKind::Sleep)
}

/// `jitterlab run sleep`, as clap matched it: see [`check`].
pub fn one_cell(m: &clap::ArgMatches, root: &Path, db: &Db) -> Result<OneCell> {
    check(root, db, &matched(m)?)
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
    let params = SleepParams {
        slack_ns: a.slack,
        spin: a.spin,
    };
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
