//! The `netcycle` probe's keys of a `[[probe]]` table, checked: [Baumgartner POWERLINK]'s
//! network size, payloads, PollResponse Chaining, how the managing node
//! waits and how long, the CN emulator's CPU and the held allowances.
//! Its key table and its check; the shared checker (`crate::spec`)
//! reads them through the kind's [`super::params::PARAMS`].
//!
//! ```toml
//! [[probe]]
//! kind = "netcycle"
//! period = "500us"            # the POWERLINK cycle time (default 500 µs)
//! cns = 10                    # controlled nodes, node ids 1..=cns (default 3)
//! chaining = false            # PollResponse Chaining: one PResMN
//! wait = "blocking"           # or "busy-poll" (its load reads 100 %)
//! response_timeout = "100us"  # how long the MN waits for one PRes
//! out_bytes = 1               # output bytes per CN ([Baumgartner POWERLINK] Table 1)
//! in_bytes = 6                # input bytes per CN ([Baumgartner POWERLINK] Table 1)
//! cn_cpu = "1"                # the CN emulator's CPU
//! max_late_cycles = 0         # late cycles a held cycle time may have
//! max_missed_pres = 0         # missed PRes a held cycle time may have
//! ```
//!
//! A cycle whose frames cannot fit on a 100 Mbit/s wire is not refused
//! here: a bench marks that cell `N/A (wire)` and goes on.
//!
//! The documents cited here are listed in `docs/design.md`.

use super::{NetcycleParams, Wait};
use crate::powerlink::{MAX_CN_NODE, MAX_PDO_PAYLOAD};
use crate::spec::{Check, Key, KeyFlag, KindTable, ProbeParams, ValueType};

/// The `netcycle` probe's own keys.
pub const KEYS: &[Key] = &[
    Key {
        name: "cns",
        ty: ValueType::Int(1, MAX_CN_NODE as i64),
        default: "3",
        help: "controlled nodes polled, node ids 1..=N (1-239)",
        flag: KeyFlag::DERIVED,
    },
    Key {
        name: "chaining",
        ty: ValueType::Bool,
        default: "false",
        help: "PollResponse Chaining: one PResMN with every CN's outputs, and time-triggered PRes, instead of a PReq per CN",
        flag: KeyFlag::DERIVED,
    },
    Key {
        name: "wait",
        ty: ValueType::Choice {
            what: "wait",
            names: &["blocking", "busy-poll"],
        },
        default: "blocking",
        help: "how the managing node waits for each PRes",
        flag: KeyFlag {
            value_name: Some("WAIT"),
            value_helps: &[
                "Sleep in the kernel until the PRes or the timeout; frames come from a receive ring, no system call to take one (the stack's load is its work; the default: measured on a VM, a PRes came later than a sleep and a wake-up cost, see BENCHMARKS.md)",
                "Spin on the receive ring until the PRes or the timeout (lower latency, and cheaper than sleeping against CNs that answer within a few µs; the load reads 100 % of the polling phase)",
            ],
            ..KeyFlag::DERIVED
        },
    },
    Key {
        name: "response_timeout",
        ty: ValueType::PositiveDuration,
        default: "100us",
        help: "how long the managing node waits for one PRes before it counts it missed (\"held\" depends on it; every summary prints it); shorter than the period",
        flag: KeyFlag::DERIVED,
    },
    Key {
        name: "out_bytes",
        ty: ValueType::Int(0, MAX_PDO_PAYLOAD as i64),
        default: "1",
        help: "output bytes per CN (PReq payload, or its share of the PResMN)",
        flag: KeyFlag::DERIVED,
    },
    Key {
        name: "in_bytes",
        ty: ValueType::Int(0, MAX_PDO_PAYLOAD as i64),
        default: "6",
        help: "input bytes per CN (PRes payload)",
        flag: KeyFlag::DERIVED,
    },
    Key {
        name: "cn_cpu",
        ty: ValueType::Cpu("1"),
        default: "the first neighbour CPU",
        help: "CPU of the CN emulator's real-time thread",
        flag: KeyFlag::DERIVED,
    },
    Key {
        name: "max_late_cycles",
        ty: ValueType::Int(0, i64::MAX),
        default: "0",
        help: "late cycles a run may have and still hold its cycle time",
        flag: KeyFlag::DERIVED,
    },
    Key {
        name: "max_missed_pres",
        ty: ValueType::Int(0, i64::MAX),
        default: "0",
        help: "missed PRes a run may have and still hold its cycle time",
        flag: KeyFlag::DERIVED,
    },
];

/// The POWERLINK master's parameters from its table, whose cycle time is
/// `period_ns`. The rules between keys (chaining and payload, response
/// timeout and cycle time) are [`NetcycleParams`]' `validate`.
pub(super) fn check(t: &KindTable, _period_ns: u64) -> Check<ProbeParams> {
    let d = NetcycleParams::default();
    let int = |key: &str, default: u64| -> Check<u64> { Ok(t.num(key)?.unwrap_or(default)) };
    let cns = int("cns", u64::from(d.cns))? as u8;
    let out_bytes = int("out_bytes", u64::from(d.out_bytes))? as u16;
    let in_bytes = int("in_bytes", u64::from(d.in_bytes))? as u16;
    let chaining = t.flag("chaining")?.unwrap_or(false);
    let wait = t.choice("wait")?.and_then(Wait::parse).unwrap_or(d.wait);
    let response_timeout_ns = t.num("response_timeout")?.unwrap_or(d.response_timeout_ns);
    Ok(ProbeParams::new(NetcycleParams {
        cns,
        chaining,
        wait,
        response_timeout_ns,
        out_bytes,
        in_bytes,
        max_late_cycles: int("max_late_cycles", 0)?,
        max_missed_pres: int("max_missed_pres", 0)?,
        cn_cpu: t.cpu("cn_cpu")?,
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
    fn a_netcycle_probe_takes_seed_004s_keys_and_defaults() {
        use crate::netcycle::{NetcycleParams, NodeRole, Wait};
        let s = ok("duration = \"10s\"\n[[probe]]\nkind = \"netcycle\"\n");
        let p = &s.probes[0];
        assert_eq!(p.period_ns, 500_000);
        assert_eq!(
            p.params.get::<NetcycleParams>(),
            Some(&NetcycleParams::default())
        );
        let s = ok("duration = \"10s\"\n[[probe]]\nkind = \"netcycle\"\nperiod = \"1ms\"\ncns = 40\nchaining = true\nwait = \"busy-poll\"\nresponse_timeout = \"250us\"\nout_bytes = 2\nin_bytes = 8\ncn_cpu = \"0\"\nmax_late_cycles = 3\nmax_missed_pres = 7\nmax_latency = \"200us\"\nmax_jitter = \"50us\"\n");
        let p = &s.probes[0];
        assert_eq!(p.period_ns, 1_000_000);
        assert_eq!(
            p.params.get::<NetcycleParams>(),
            Some(&NetcycleParams {
                cns: 40,
                node_ids: Vec::new(),
                chaining: true,
                wait: Wait::BusyPoll,
                response_timeout_ns: 250_000,
                cn_wait: Wait::BusyPoll,
                out_bytes: 2,
                in_bytes: 8,
                max_late_cycles: 3,
                max_missed_pres: 7,
                cn_cpu: Some(0),
                role: NodeRole::Both,
                interface: None,
                pcap: None,
                identity: None,
                cdc: None,
            })
        );
        assert_eq!(
            (p.max_latency_ns, p.max_jitter_ns),
            (Some(200_000), Some(50_000))
        );
        // 40 CNs at 250 µs cannot fit even chained: the spec keeps the cell
        // (a bench marks it N/A (wire)), the probe says why.
        let s = ok("duration = \"10s\"\n[[probe]]\nkind = \"netcycle\"\nperiod = \"250us\"\ncns = 40\nchaining = true\n");
        let p = &s.probes[0];
        assert!(p
            .params
            .get::<NetcycleParams>()
            .unwrap()
            .wire_unfit(p.period_ns)
            .unwrap()
            .starts_with("40 CNs need at least 289.3 µs"));
        // The stored form reads back the same probe.
        let json = serde_json::to_string(p).unwrap();
        assert_eq!(
            &serde_json::from_str::<crate::spec::ProbeSpec>(&json).unwrap(),
            p
        );
    }

    #[test]
    fn a_netcycle_probes_bad_keys_are_named() {
        let probe =
            |body: &str| format!("duration = \"10s\"\n[[probe]]\nkind = \"netcycle\"\n{body}");
        for (body, message) in [
            ("cns = 0\n", "bench.toml:4: probe[0].cns: 0 is out of range 1..=239"),
            ("cns = 240\n", "bench.toml:4: probe[0].cns: 240 is out of range 1..=239"),
            ("in_bytes = 1491\n", "bench.toml:4: probe[0].in_bytes: 1491 is out of range 0..=1490"),
            ("out_bytes = -1\n", "bench.toml:4: probe[0].out_bytes: -1 is out of range 0..=1490"),
            ("wait = \"spin\"\n", "bench.toml:4: probe[0].wait: unknown wait \"spin\"; use blocking or busy-poll"),
            ("response_timeout = \"500us\"\n", "bench.toml:4: probe[0].response_timeout: response_timeout 500us must be shorter than the cycle time (period) 500us"),
            ("response_timeout = \"0s\"\n", "bench.toml:4: probe[0].response_timeout: response_timeout must be longer than 0"),
            ("cn_cpu = \"0-1\"\n", "bench.toml:4: probe[0].cn_cpu: give exactly one CPU, e.g. cn_cpu = \"1\""),
            ("cn_cpu = \"7\"\n", "bench.toml:4: probe[0].cn_cpu: CPU 7 is not online (online CPUs: 0-1)"),
            ("chaining = true\ncns = 200\nout_bytes = 10\n", "bench.toml:6: probe[0].out_bytes: with chaining one PResMN carries every CN's outputs: 200 CNs × 10 bytes = 2000 bytes, more than its 1490; give fewer out_bytes or cns"),
            ("max_late_cycles = -1\n", "bench.toml:4: probe[0].max_late_cycles: -1 is out of range 0..=9223372036854775807"),
            ("chaining = \"yes\"\n", "bench.toml:4: probe[0].chaining: invalid type: string \"yes\", expected a boolean"),
            ("max_exec = \"1ms\"\n", "bench.toml:4: probe[0].max_exec: max_exec applies only to kind = \"cyclic\" or kind = \"observe\"; remove it from this netcycle probe"),
        ] {
            assert_eq!(err(&probe(body)), message, "{body}");
        }
        assert_eq!(
            err("duration = \"10s\"\n[[probe]]\nkind = \"cyclic\"\ncns = 3\n"),
            "bench.toml:4: probe[0].cns: cns applies only to kind = \"netcycle\"; remove it from this cyclic probe"
        );
    }

    #[test]
    fn a_response_timeout_is_refused_by_a_spec_only_when_written_and_by_flags_always() {
        use crate::netcycle::NetcycleParams;
        use crate::spec::{ParamError, Params};
        // The default 100 µs with a 100 µs cycle: a bench runs it.
        let s = ok("duration = \"10s\"\n[[probe]]\nkind = \"netcycle\"\nperiod = \"100us\"\n");
        assert_eq!(
            s.probes[0].params.get::<NetcycleParams>(),
            Some(&NetcycleParams::default())
        );
        assert_eq!(
            err("duration = \"10s\"\n[[probe]]\nkind = \"netcycle\"\nperiod = \"100us\"\nresponse_timeout = \"100us\"\n"),
            "bench.toml:5: probe[0].response_timeout: response_timeout 100us must be shorter than the cycle time (period) 100us"
        );
        // The same rule, in the command line's words.
        let e = NetcycleParams::default().validate(100_000).unwrap_err();
        assert_eq!(
            (e.key, e.when_written, e.flag_text()),
            (
                "response_timeout",
                true,
                "--response-timeout 100us must be shorter than the --cycle 100us"
            )
        );
        assert_eq!(NetcycleParams::default().validate(100_001), Ok(()));
        // Chaining's payload is refused whatever is written, before the
        // timeout.
        let e = NetcycleParams {
            cns: 200,
            out_bytes: 10,
            chaining: true,
            ..NetcycleParams::default()
        }
        .validate(100_000)
        .unwrap_err();
        assert_eq!(
            e,
            ParamError {
                key: "out_bytes",
                near: &["cns"],
                message: "with chaining one PResMN carries every CN's outputs: 200 CNs × 10 bytes = 2000 bytes, more than its 1490; give fewer out_bytes or cns".into(),
                flag_message: Some("--chaining: one PResMN carries every CN's outputs: 200 CNs × 10 bytes = 2000 bytes, more than its 1490; give fewer --out-bytes or --cns".into()),
                when_written: false,
            }
        );
        assert_eq!(
            err("duration = \"10s\"\n[[probe]]\nkind = \"netcycle\"\nchaining = true\ncns = 200\n\nout_bytes = 8\n"),
            "bench.toml:7: probe[0].out_bytes: with chaining one PResMN carries every CN's outputs: 200 CNs × 8 bytes = 1600 bytes, more than its 1490; give fewer out_bytes or cns"
        );
    }

    #[test]
    fn a_netcycle_cell_that_cannot_fit_the_wire_stays_and_takes_no_time() {
        let text = "name = \"wire\"\nduration = \"10s\"\nwarmup = \"0\"\n\
                    [[probe]]\nkind = \"netcycle\"\nname = \"fits\"\nperiod = \"1ms\"\ncns = 40\n\
                    [[probe]]\nkind = \"netcycle\"\nname = \"tight\"\nperiod = \"250us\"\ncns = 40\n";
        let s = ok(text);
        let cells = s.cells();
        assert_eq!(cells.len(), 2);
        assert_eq!(s.cell_na(&cells[0]), None);
        let na = s.cell_na(&cells[1]).expect("40 CNs cannot fit 250 µs");
        assert!(
            na.starts_with("N/A (wire): 40 CNs need at least ")
                && na.ends_with(", more than the 250 µs cycle"),
            "{na}"
        );
        assert_eq!(s.planned_ns(1_000_000_000, 0), 11_000_000_000);
        let plan = s.plan_text(1_000_000_000, 0);
        let lines: Vec<&str> = plan.lines().collect();
        assert_eq!(lines[3], "  total: 11s");
        assert_eq!(
            lines[4],
            "  1/2  default/idle/host/fits   rep 1  (warm-up 0s + 10s)"
        );
        assert_eq!(
            lines[5],
            format!("  2/2  default/idle/host/tight  rep 1  ({na}; skipped)")
        );
    }
}
