//! The `roundtrip` probe's parameters as every probe's are declared
//! ([`crate::spec::param`]): its [`ParamTable`] (keys in [`super::spec`])
//! and [`RoundtripParams`]' answers to what the shared code asks of a probe
//! (the budget as its threshold and latency limit, its controller's scan,
//! the stored `roundtrip` object).

use super::defaults;
use super::RoundtripParams;
use crate::probe::kind::ProbeKind;
use crate::spec::param::Ordered;
use crate::spec::{scan_fits, short, ParamError, ParamTable, Params, ProbeParams};
use crate::units::format_duration_exact;

/// How the `roundtrip` probe's parameters are declared.
pub const PARAMS: ParamTable = ParamTable {
    keys: super::spec::KEYS,
    shared: &["period"],
    default_period_ns: defaults::CONTROLLER_PERIOD_NS,
    wire_keys: &["roundtrip"],
    defaults: |_| ProbeParams::new(RoundtripParams::default()),
    check: super::spec::check,
    read: |_, m| match m.remove("roundtrip") {
        Some(v) if !v.is_null() => serde_json::from_value::<RoundtripParams>(v)
            .map(ProbeParams::new)
            .map_err(|e| format!("roundtrip: {e}")),
        _ => Err("a roundtrip probe needs its roundtrip object".into()),
    },
};

impl Params for RoundtripParams {
    fn kind(&self) -> ProbeKind {
        ProbeKind::Roundtrip
    }

    fn wire(&self) -> Vec<(&'static str, Ordered)> {
        vec![("roundtrip", Ordered::of(self))]
    }

    /// The controller's scan must be shorter than its period.
    fn validate(&self, period_ns: u64) -> Result<(), ParamError> {
        match scan_fits(self.scan_ns, period_ns) {
            true => Ok(()),
            false => Err(ParamError {
                key: "scan",
                near: &["period"],
                message: format!(
                    "scan {} must be shorter than the controller period {}",
                    short(self.scan_ns),
                    short(period_ns)
                ),
                flag_message: Some(format!(
                    "--scan {} is not shorter than --controller-period {}; shorten the scan or lengthen the period",
                    format_duration_exact(self.scan_ns),
                    format_duration_exact(period_ns)
                )),
                when_written: false,
            }),
        }
    }

    /// The budget.
    fn default_threshold(&self, period_ns: u64) -> Option<u64> {
        Some(self.budget(period_ns).total_ns())
    }

    /// `max_latency`, else the budget: any sample over it fails the run.
    fn latency_limit(&self, period_ns: u64, max_latency_ns: Option<u64>) -> Option<u64> {
        Some(max_latency_ns.unwrap_or_else(|| self.budget(period_ns).total_ns()))
    }

    fn scan(&self) -> Option<(u64, u64)> {
        Some((self.working_set_bytes, self.scan_ns))
    }
}
