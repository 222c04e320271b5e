//! The `wakeup` probe's parameters: whether it explains its late cycles
//! ([`crate::explain::periodic`]), declared once with its key; everything
//! else it takes is what every periodic probe shares.

use crate::explain::periodic::EXPLAIN_KEY;
use crate::probe::kind::ProbeKind;
use crate::spec::param::{take, Ordered};
use crate::spec::{Key, ParamTable, Params, ProbeParams};

/// What only the `wakeup` probe takes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WakeupParams {
    /// Trace the probe CPUs and explain the late cycles.
    pub explain: bool,
}

/// The `wakeup` probe's own keys.
pub const KEYS: &[Key] = &[EXPLAIN_KEY];

/// How the `wakeup` probe's parameters are declared.
pub const PARAMS: ParamTable = ParamTable {
    keys: KEYS,
    shared: &["period", "max_latency", "max_jitter"],
    default_period_ns: crate::defaults::PERIOD_NS,
    wire_keys: &[],
    defaults: |_| ProbeParams::new(WakeupParams::default()),
    check: |t, _| {
        Ok(ProbeParams::new(WakeupParams {
            explain: t.flag("explain")?.unwrap_or(false),
        }))
    },
    read: |_, m| {
        Ok(ProbeParams::new(WakeupParams {
            explain: take(m, "explain")?,
        }))
    },
};

impl Params for WakeupParams {
    fn kind(&self) -> ProbeKind {
        ProbeKind::Wakeup
    }

    /// Nothing, unless it explains: a run without it stores what it did.
    fn wire(&self) -> Vec<(&'static str, Ordered)> {
        match self.explain {
            true => vec![("explain", Ordered::Bool(true))],
            false => Vec::new(),
        }
    }
}
