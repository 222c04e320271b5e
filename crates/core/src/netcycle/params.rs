//! The `netcycle` probe's parameters as every probe's are declared
//! ([`crate::spec::param`]): its [`ParamTable`] (keys in [`super::spec`])
//! and [`NetcycleParams`]' answers to what the shared code asks of a probe
//! (the frames' fit on the wire, the rules between payload and chaining
//! and between response timeout and cycle, the stored `netcycle` object).

use super::defaults;
use super::NetcycleParams;
use crate::powerlink::MAX_PDO_PAYLOAD;
use crate::probe::kind::ProbeKind;
use crate::spec::param::Ordered;
use crate::spec::{short, ParamError, ParamTable, Params, ProbeParams};
use crate::units::format_duration_exact;

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
    /// fit in one frame's payload; the managing node waits for a PRes less
    /// than a cycle (a spec refuses only a `response_timeout` it writes:
    /// the default with a shorter period has always run in a bench).
    fn validate(&self, period_ns: u64) -> Result<(), ParamError> {
        let outputs = usize::from(self.cns) * usize::from(self.out_bytes);
        if self.chaining && outputs > MAX_PDO_PAYLOAD {
            let (cns, bytes) = (self.cns, self.out_bytes);
            let carries = format!(
                "one PResMN carries every CN's outputs: {cns} CNs × {bytes} bytes = {outputs} bytes, more than its {MAX_PDO_PAYLOAD}"
            );
            return Err(ParamError {
                key: "out_bytes",
                near: &["cns"],
                message: format!("with chaining {carries}; give fewer out_bytes or cns"),
                flag_message: Some(format!(
                    "--chaining: {carries}; give fewer --out-bytes or --cns"
                )),
                when_written: false,
            });
        }
        if self.response_timeout_ns >= period_ns {
            let timeout = self.response_timeout_ns;
            return Err(ParamError {
                key: "response_timeout",
                near: &[],
                message: format!(
                    "response_timeout {} must be shorter than the cycle time (period) {}",
                    short(timeout),
                    short(period_ns)
                ),
                flag_message: Some(format!(
                    "--response-timeout {} must be shorter than the --cycle {}",
                    format_duration_exact(timeout),
                    format_duration_exact(period_ns)
                )),
                when_written: true,
            });
        }
        Ok(())
    }

    fn wire_unfit(&self, period_ns: u64) -> Option<String> {
        NetcycleParams::wire_unfit(self, period_ns)
    }
}
