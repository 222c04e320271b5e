//! The `observe` probe's parameters as every probe's are declared
//! ([`crate::spec::param`]): its [`ParamTable`] (keys in [`super::spec`])
//! and the stored `observe` object.

use super::spec::ObserveParams;
use crate::probe::kind::ProbeKind;
use crate::spec::param::Ordered;
use crate::spec::{ParamTable, Params, ProbeParams};

/// How the `observe` probe's parameters are declared. Without a period
/// its T0 is the observed task's own, inferred (0).
pub const PARAMS: ParamTable = ParamTable {
    keys: super::spec::KEYS,
    shared: &["period", "max_latency", "max_jitter", "max_exec"],
    default_period_ns: 0,
    wire_keys: &["observe"],
    defaults: |_| ProbeParams::new(ObserveParams::default()),
    check: super::spec::check,
    read: |_, m| match m.remove("observe") {
        Some(v) if !v.is_null() => serde_json::from_value::<ObserveParams>(v)
            .map(ProbeParams::new)
            .map_err(|e| format!("observe: {e}")),
        _ => Err("an observe probe needs its observe object".into()),
    },
};

impl Params for ObserveParams {
    fn kind(&self) -> ProbeKind {
        ProbeKind::Observe
    }

    fn wire(&self) -> Vec<(&'static str, Ordered)> {
        vec![("observe", Ordered::of(self))]
    }
}
