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
use crate::spec::{Check, Key, KeyFlag, KindTable, ProbeParams, ValueType};

/// The `roundtrip` probe's own keys.
pub const KEYS: &[Key] = &[
    Key {
        name: "scan",
        ty: ValueType::Duration,
        default: "500us",
        help: "the controller's scan per cycle (the budget's \"Controller scan time\"; 0 for none; shorter than the controller period)",
        flag: KeyFlag::DERIVED,
    },
    Key {
        name: "working_set",
        ty: ValueType::Memory,
        default: "256KiB",
        help: "memory the controller's scan walks per cycle (0 for none)",
        flag: KeyFlag::DERIVED,
    },
    Key {
        name: "io_period",
        ty: ValueType::Period,
        default: "500us",
        help: "the I/O simulator's publish and apply period (the budget's \"OPC UA\" term, counted twice)",
        flag: KeyFlag::DERIVED,
    },
    Key {
        name: "network_budget",
        ty: ValueType::Duration,
        default: "100us",
        help: "the budget's network term, each way (counted twice)",
        flag: KeyFlag::DERIVED,
    },
    Key {
        name: "opcua",
        ty: ValueType::Duration,
        default: "the I/O period",
        help: "the budget's OPC UA term, each way",
        flag: KeyFlag::DERIVED,
    },
    Key {
        name: "budget",
        ty: ValueType::PositiveDuration,
        default: "the sum of its terms",
        help: "a budget of one's own instead of the computed worst case; any screw-to-screw sample over the budget fails the run (exit 1)",
        flag: KeyFlag::DERIVED,
    },
    Key {
        name: "transport",
        ty: ValueType::Choice {
            what: "transport",
            names: &["udp", "eth"],
        },
        default: "udp",
        help: "the transport of the UADP messages",
        flag: KeyFlag {
            value_name: Some("TRANSPORT"),
            value_helps: &[
                "UADP over UDP (opc.udp://224.0.0.22:4840)",
                "UADP in raw Ethernet frames (opc.eth://01-00-5E-00-00-01, EtherType 0xB62C)",
            ],
            ..KeyFlag::DERIVED
        },
    },
    Key {
        name: "io_cpu",
        ty: ValueType::Cpu("1"),
        default: "the first neighbour CPU",
        help: "CPU of the I/O simulator's real-time loop",
        flag: KeyFlag::DERIVED,
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

#[cfg(test)]
mod tests {
    use crate::spec::testing::IDLE;
    use crate::spec::Spec;

    fn ok(text: &str) -> Spec {
        crate::spec::testing::ok(text, IDLE)
    }

    fn err(text: &str) -> String {
        crate::spec::testing::err(text, IDLE)
    }

    #[test]
    fn a_roundtrip_probe_takes_seed_001s_keys_and_defaults() {
        use crate::roundtrip::{RoundtripParams, Transport};
        let s = ok("duration = \"10s\"\n[[probe]]\nkind = \"roundtrip\"\n");
        let p = &s.probes[0];
        assert_eq!(p.period_ns, 5_000_000);
        assert_eq!(
            p.params.get::<RoundtripParams>(),
            Some(&RoundtripParams::default())
        );
        // The threshold and the limit are the budget: 6.7 ms.
        assert_eq!(p.threshold(), 6_700_000);
        assert_eq!(p.latency_limit(), Some(6_700_000));
        assert_eq!(p.scan(), Some((256 << 10, 500_000)));
        let s = ok("duration = \"10s\"\n[[probe]]\nkind = \"roundtrip\"\nperiod = \"2ms\"\nscan = \"200us\"\nio_period = \"250us\"\nnetwork_budget = \"50us\"\nopcua = \"300us\"\nbudget = \"4ms\"\ntransport = \"eth\"\nio_cpu = \"0\"\n");
        let p = &s.probes[0];
        let r = p.params.get::<RoundtripParams>().unwrap();
        assert_eq!(
            (
                r.io_period_ns,
                r.scan_ns,
                r.network_ns,
                r.opcua_ns,
                r.budget_ns
            ),
            (250_000, 200_000, 50_000, Some(300_000), Some(4_000_000))
        );
        assert_eq!((r.transport, r.io_cpu), (Transport::Eth, Some(0)));
        assert_eq!(
            r.budget(p.period_ns).computed_ns(),
            300_000 * 2 + 50_000 * 2 + 2_000_000 + 200_000
        );
        assert_eq!(p.latency_limit(), Some(4_000_000));
        // The stored form reads back the same probe.
        let json = serde_json::to_string(p).unwrap();
        assert_eq!(
            &serde_json::from_str::<crate::spec::ProbeSpec>(&json).unwrap(),
            p
        );
    }

    #[test]
    fn a_roundtrip_probes_bad_keys_are_named() {
        let probe =
            |body: &str| format!("duration = \"10s\"\n[[probe]]\nkind = \"roundtrip\"\n{body}");
        assert_eq!(
            err(&probe("transport = \"tcp\"\n")),
            "bench.toml:4: probe[0].transport: unknown transport \"tcp\"; use udp or eth"
        );
        assert_eq!(
            err(&probe("scan = \"5ms\"\n")),
            "bench.toml:4: probe[0].scan: scan 5ms must be shorter than the controller period 5ms"
        );
        assert_eq!(
            err(&probe("io_cpu = \"0-1\"\n")),
            "bench.toml:4: probe[0].io_cpu: give exactly one CPU, e.g. io_cpu = \"1\""
        );
        assert_eq!(
            err(&probe("max_latency = \"1ms\"\n")),
            "bench.toml:4: probe[0].max_latency: max_latency applies only to kind = \"cyclic\" or kind = \"wakeup\" or kind = \"ctxswitch\" or kind = \"response\" or kind = \"timerlat\" or kind = \"netcycle\" or kind = \"observe\"; remove it from this roundtrip probe"
        );
        assert_eq!(
            err("duration = \"10s\"\n[[probe]]\nkind = \"cyclic\"\nbudget = \"1ms\"\n"),
            "bench.toml:4: probe[0].budget: budget applies only to kind = \"roundtrip\"; remove it from this cyclic probe"
        );
    }
}
