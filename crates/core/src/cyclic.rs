//! The `cyclic` probe's parameters: the scan each cycle computes and the
//! memory it walks, and whether it explains its late cycles, declared once
//! with their keys. The probe itself (its
//! release schedule and metrics) is [`crate::cycle`]'s and the binary's.

use crate::defaults;
use crate::spec::param::{take, Ordered};
use crate::spec::{
    scan_fits, short, Key, KeyFlag, ParamError, ParamTable, Params, ProbeParams, ValueType,
};
use crate::units::format_duration_exact;

/// What only the `cyclic` probe takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CyclicParams {
    /// Compute time of the scan per cycle, ns; shorter than the period
    /// ([`scan_fits`]).
    pub scan_ns: u64,
    /// Memory the scan walks per cycle, bytes.
    pub working_set_bytes: u64,
    /// Trace the probe CPU and explain the late cycles
    /// ([`crate::explain::periodic`]).
    pub explain: bool,
}

impl Default for CyclicParams {
    fn default() -> CyclicParams {
        CyclicParams {
            scan_ns: defaults::SCAN_NS,
            working_set_bytes: defaults::WORKING_SET_BYTES,
            explain: false,
        }
    }
}

/// The `cyclic` probe's own keys.
pub const KEYS: &[Key] = &[
    Key {
        name: "scan",
        ty: ValueType::Duration,
        default: "100us",
        help: "compute time of the scan per cycle, calibrated once on the idle probe CPU before the run and then fixed (0 for none); shorter than the period",
        flag: KeyFlag::DERIVED,
    },
    Key {
        name: "working_set",
        ty: ValueType::Memory,
        default: "256KiB",
        help: "memory the scan walks per cycle in a random order, one cache line at a time (0 for none; at most 4GiB and half the machine's memory)",
        flag: KeyFlag::DERIVED,
    },
    crate::explain::periodic::EXPLAIN_KEY,
];

/// How the `cyclic` probe's parameters are declared.
pub const PARAMS: ParamTable = ParamTable {
    keys: KEYS,
    shared: &["period", "max_latency", "max_jitter", "max_exec"],
    default_period_ns: defaults::PERIOD_NS,
    wire_keys: &["scan_ns", "working_set_bytes"],
    defaults: |_| ProbeParams::new(CyclicParams::default()),
    check: |t, _| {
        let d = CyclicParams::default();
        Ok(ProbeParams::new(CyclicParams {
            scan_ns: t.num("scan")?.unwrap_or(d.scan_ns),
            working_set_bytes: t.num("working_set")?.unwrap_or(d.working_set_bytes),
            explain: t.flag("explain")?.unwrap_or(false),
        }))
    },
    read: |_, m| {
        Ok(ProbeParams::new(CyclicParams {
            scan_ns: take(m, "scan_ns")?,
            working_set_bytes: take(m, "working_set_bytes")?,
            explain: take(m, "explain")?,
        }))
    },
};

impl Params for CyclicParams {
    fn kind(&self) -> crate::probe::kind::ProbeKind {
        crate::probe::kind::ProbeKind::Cyclic
    }

    fn wire(&self) -> Vec<(&'static str, Ordered)> {
        let mut w = vec![
            ("scan_ns", Ordered::U64(self.scan_ns)),
            ("working_set_bytes", Ordered::U64(self.working_set_bytes)),
        ];
        // Written only when asked: a run without it stores what it did.
        if self.explain {
            w.push(("explain", Ordered::Bool(true)));
        }
        w
    }

    fn not_in_container(&self) -> Option<String> {
        crate::explain::periodic::not_in_container("cyclic", self.explain)
    }

    fn validate(&self, period_ns: u64) -> Result<(), ParamError> {
        match scan_fits(self.scan_ns, period_ns) {
            true => Ok(()),
            false => Err(ParamError {
                key: "scan",
                near: &["period"],
                message: format!(
                    "scan {} must be shorter than the period {}",
                    short(self.scan_ns),
                    short(period_ns)
                ),
                flag_message: Some(format!(
                    "--scan {} is not shorter than --period {}; shorten the scan or lengthen the period",
                    format_duration_exact(self.scan_ns),
                    format_duration_exact(period_ns)
                )),
                when_written: false,
            }),
        }
    }

    fn scan(&self) -> Option<(u64, u64)> {
        Some((self.working_set_bytes, self.scan_ns))
    }
}
