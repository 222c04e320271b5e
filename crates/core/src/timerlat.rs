//! The `timerlat` probe's parameters: rtla's user-space threads and
//! whether it measures on every probe CPU. Neither is a spec key (a bench
//! cell measures on its first probe CPU, with kernel threads); the command
//! line sets them.

use crate::defaults;
use crate::probe::kind::ProbeKind;
use crate::spec::param::{take, Ordered};
use crate::spec::{ParamTable, Params, ProbeParams};

/// What only the `timerlat` probe takes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TimerlatParams {
    /// rtla's user-space threads (`--user-threads`; a spec cannot set
    /// it).
    pub user_threads: bool,
    /// Measure on every probe CPU of the configuration (`jitterlab run
    /// timerlat --cpus`), not only its first (a bench cell).
    pub every_probe_cpu: bool,
}

/// How the `timerlat` probe's parameters are declared.
pub const PARAMS: ParamTable = ParamTable {
    keys: &[],
    shared: &["period", "max_latency"],
    default_period_ns: defaults::PERIOD_NS,
    wire_keys: &["user_threads", "every_probe_cpu"],
    defaults: |_| ProbeParams::new(TimerlatParams::default()),
    check: |_, _| Ok(ProbeParams::new(TimerlatParams::default())),
    read: |_, m| {
        Ok(ProbeParams::new(TimerlatParams {
            user_threads: take(m, "user_threads")?,
            every_probe_cpu: take(m, "every_probe_cpu")?,
        }))
    },
};

impl Params for TimerlatParams {
    fn kind(&self) -> ProbeKind {
        ProbeKind::Timerlat
    }

    fn wire(&self) -> Vec<(&'static str, Ordered)> {
        let mut out = Vec::new();
        if self.user_threads {
            out.push(("user_threads", Ordered::Bool(true)));
        }
        if self.every_probe_cpu {
            out.push(("every_probe_cpu", Ordered::Bool(true)));
        }
        out
    }

    fn every_probe_cpu(&self) -> bool {
        self.every_probe_cpu
    }
}
