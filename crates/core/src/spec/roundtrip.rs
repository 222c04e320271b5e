//! The `roundtrip` probe's keys of a `[[probe]]` table, checked: [Red Hat controls]'s
//! loop periods and budget terms, the transport and the I/O simulator's
//! CPU. Kept beside the checker of the other probes' keys (`check.rs`), so
//! that one file stays readable.
//!
//! ```toml
//! [[probe]]
//! kind = "roundtrip"
//! period = "5ms"            # the controller's period (default 5 ms)
//! scan = "500us"            # the controller's scan (default 500 µs)
//! working_set = "256KiB"    # memory the scan walks
//! io_period = "500us"       # the I/O simulator's publish/apply period
//! network_budget = "100us"  # the budget's network term, each way
//! opcua = "500us"           # the budget's OPC UA term (default: io_period)
//! budget = "6.7ms"          # a budget of one's own instead of the sum
//! transport = "udp"         # udp or eth
//! io_cpu = "1"              # the I/O simulator's CPU
//! ```
//!
//! The documents cited here are listed in `docs/design.md`.

use std::ops::Range;

use toml::Spanned;

use super::check::{Check, Checker};
use super::plan::short;
use super::raw::RawProbe;
use super::{scan_fits, ProbeParams};
use crate::defaults;
use crate::limits;
use crate::roundtrip::{RoundtripParams, Transport};

/// The round trip's parameters from `r`, whose controller period is
/// `period_ns`; `key` names a key of this probe table in messages, `table`
/// is the table's span.
pub(super) fn roundtrip_params(
    ck: &Checker,
    r: &RawProbe,
    period_ns: u64,
    key: &dyn Fn(&str) -> String,
    table: Range<usize>,
) -> Check<ProbeParams> {
    let d = RoundtripParams::default();
    let scan_ns = match &r.scan {
        Some(v) => ck.duration(v, &key("scan"))?,
        None => d.scan_ns,
    };
    if !scan_fits(scan_ns, period_ns) {
        let span = r
            .scan
            .as_ref()
            .or(r.period.as_ref())
            .map_or(table, |v| v.span());
        return Err(ck.err(
            span,
            &key("scan"),
            format!(
                "scan {} must be shorter than the controller period {}",
                short(scan_ns),
                short(period_ns)
            ),
        ));
    }
    let io_period_ns = match &r.io_period {
        Some(v) => {
            let ns = ck.positive_duration(v, &key("io_period"), "io_period")?;
            limits::check_period(ns).map_err(|e| ck.err(v.span(), &key("io_period"), e))?
        }
        None => d.io_period_ns,
    };
    let working_set_bytes = match &r.working_set {
        Some(v) => ck.memory(v, &key("working_set"))?,
        None => d.working_set_bytes,
    };
    let transport = match &r.transport {
        Some(v) => Some(Transport::parse(v.get_ref()).ok_or_else(|| {
            ck.err(
                v.span(),
                &key("transport"),
                format!("unknown transport {:?}; use udp or eth", v.get_ref()),
            )
        })?),
        None => None,
    };
    Ok(ProbeParams::Roundtrip(Box::new(RoundtripParams {
        io_period_ns,
        scan_ns,
        working_set_bytes,
        network_ns: opt(ck, &r.network_budget, &key("network_budget"))?
            .unwrap_or(defaults::NETWORK_BUDGET_NS),
        opcua_ns: opt(ck, &r.opcua, &key("opcua"))?,
        budget_ns: match &r.budget {
            Some(v) => Some(ck.positive_duration(v, &key("budget"), "budget")?),
            None => None,
        },
        transport: transport.unwrap_or_default(),
        io_cpu: match &r.io_cpu {
            Some(v) => match ck.cpus(v, &key("io_cpu"))? {
                Some(list) if list.len() == 1 => Some(list[0]),
                _ => {
                    return Err(ck.err(
                        v.span(),
                        &key("io_cpu"),
                        "give exactly one CPU, e.g. io_cpu = \"1\"",
                    ))
                }
            },
            None => None,
        },
        ..d
    })))
}

/// An optional duration key.
fn opt(ck: &Checker, v: &Option<Spanned<String>>, key: &str) -> Check<Option<u64>> {
    match v {
        Some(v) => Ok(Some(ck.duration(v, key)?)),
        None => Ok(None),
    }
}
