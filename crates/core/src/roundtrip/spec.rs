//! The `roundtrip` probe's keys of a `[[probe]]` table, checked: [Red Hat controls]'s
//! loop periods and budget terms, the transport and the I/O simulator's
//! CPU: its key table and its check, which the shared checker
//! (`crate::spec`) reads through the kind's [`super::params::PARAMS`].
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

use super::{RoundtripParams, Transport};
use crate::spec::{Check, Key, KindTable, ProbeParams, ValueType};

/// The `roundtrip` probe's own keys.
pub const KEYS: &[Key] = &[
    Key {
        name: "scan",
        ty: ValueType::Duration,
        default: "500us",
        help: "the controller's scan per cycle, shorter than the period",
    },
    Key {
        name: "working_set",
        ty: ValueType::Memory,
        default: "256KiB",
        help: "memory the controller's scan walks per cycle",
    },
    Key {
        name: "io_period",
        ty: ValueType::Period,
        default: "500us",
        help: "the I/O simulator's publish and apply period",
    },
    Key {
        name: "network_budget",
        ty: ValueType::Duration,
        default: "100us",
        help: "the budget's network term, each way",
    },
    Key {
        name: "opcua",
        ty: ValueType::Duration,
        default: "io_period",
        help: "the budget's OPC UA term",
    },
    Key {
        name: "budget",
        ty: ValueType::PositiveDuration,
        default: "the sum of its terms",
        help: "a budget of one's own instead of the sum",
    },
    Key {
        name: "transport",
        ty: ValueType::Choice {
            what: "transport",
            names: &["udp", "eth"],
        },
        default: "udp",
        help: "what carries the messages",
    },
    Key {
        name: "io_cpu",
        ty: ValueType::Cpu("1"),
        default: "the first neighbour CPU",
        help: "the I/O simulator's CPU",
    },
];

/// The round trip's parameters from its table; the rule between its scan
/// and the controller period is [`RoundtripParams`]' `validate`.
pub(super) fn check(t: &KindTable, _period_ns: u64) -> Check<ProbeParams> {
    let d = RoundtripParams::default();
    Ok(ProbeParams::new(RoundtripParams {
        scan_ns: t.num("scan")?.unwrap_or(d.scan_ns),
        io_period_ns: t.num("io_period")?.unwrap_or(d.io_period_ns),
        working_set_bytes: t.num("working_set")?.unwrap_or(d.working_set_bytes),
        network_ns: t.num("network_budget")?.unwrap_or(d.network_ns),
        opcua_ns: t.num("opcua")?,
        budget_ns: t.num("budget")?,
        transport: t
            .choice("transport")?
            .and_then(Transport::parse)
            .unwrap_or_default(),
        io_cpu: t.cpu("io_cpu")?,
        ..d
    }))
}
