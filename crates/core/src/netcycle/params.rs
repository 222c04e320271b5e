//! The `netcycle` probe's parameters as every probe's are declared
//! ([`crate::spec::param`]): its [`ParamTable`] (keys in [`super::spec`])
//! and [`NetcycleParams`]' answers to what the shared code asks of a probe
//! (the frames' fit on the wire, the rule between payload and chaining,
//! the stored `netcycle` object).

use super::defaults;
use super::NetcycleParams;
use crate::powerlink::MAX_PDO_PAYLOAD;
use crate::probe::ProbeKind;
use crate::spec::param::Ordered;
use crate::spec::{ParamError, ParamTable, Params, ProbeParams};

/// How the `netcycle` probe's parameters are declared.
pub const PARAMS: ParamTable = ParamTable {
    keys: super::spec::KEYS,
    shared: &["period", "max_latency", "max_jitter"],
    default_period_ns: defaults::NETCYCLE_PERIOD_NS,
    wire_keys: &["netcycle"],
    defaults: |_| ProbeParams::new(NetcycleParams::default()),
    check: super::spec::check,
    read: |_, m| match m.remove("netcycle") {
        Some(v) if !v.is_null() => serde_json::from_value::<NetcycleParams>(v)
            .map(ProbeParams::new)
            .map_err(|e| format!("netcycle: {e}")),
        _ => Err("a netcycle probe needs its netcycle object".into()),
    },
};

impl Params for NetcycleParams {
    fn kind(&self) -> ProbeKind {
        ProbeKind::Netcycle
    }

    fn wire(&self) -> Vec<(&'static str, Ordered)> {
        vec![("netcycle", Ordered::of(self))]
    }

    /// With chaining one PResMN carries every CN's outputs, so they must
    /// fit in one frame's payload.
    fn validate(&self, _period_ns: u64) -> Result<(), ParamError> {
        let outputs = usize::from(self.cns) * usize::from(self.out_bytes);
        match self.chaining && outputs > MAX_PDO_PAYLOAD {
            false => Ok(()),
            true => Err(ParamError {
                key: "out_bytes",
                near: &["cns"],
                message: format!(
                    "with chaining one PResMN carries every CN's outputs: {} CNs × {} bytes = {outputs} bytes, more than its {MAX_PDO_PAYLOAD}; give fewer out_bytes or cns",
                    self.cns, self.out_bytes
                ),
            }),
        }
    }

    fn wire_unfit(&self, period_ns: u64) -> Option<String> {
        NetcycleParams::wire_unfit(self, period_ns)
    }
}
