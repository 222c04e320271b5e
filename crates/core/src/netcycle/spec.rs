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
use crate::spec::{short, Check, Key, KindTable, ProbeParams, ValueType};

/// The `netcycle` probe's own keys.
pub const KEYS: &[Key] = &[
    Key {
        name: "cns",
        ty: ValueType::Int(1, MAX_CN_NODE as i64),
        default: "3",
        help: "controlled nodes, node ids 1..=cns",
    },
    Key {
        name: "chaining",
        ty: ValueType::Bool,
        default: "false",
        help: "PollResponse Chaining: one PResMN carries every CN's outputs",
    },
    Key {
        name: "wait",
        ty: ValueType::Choice {
            what: "wait",
            names: &["blocking", "busy-poll"],
        },
        default: "blocking",
        help: "how the managing node waits for each PRes",
    },
    Key {
        name: "response_timeout",
        ty: ValueType::PositiveDuration,
        default: "100us",
        help: "how long the managing node waits for one PRes, shorter than the period",
    },
    Key {
        name: "out_bytes",
        ty: ValueType::Int(0, MAX_PDO_PAYLOAD as i64),
        default: "1",
        help: "output bytes per CN",
    },
    Key {
        name: "in_bytes",
        ty: ValueType::Int(0, MAX_PDO_PAYLOAD as i64),
        default: "6",
        help: "input bytes per CN",
    },
    Key {
        name: "cn_cpu",
        ty: ValueType::Cpu("1"),
        default: "the first neighbour CPU",
        help: "the CN emulator's CPU",
    },
    Key {
        name: "max_late_cycles",
        ty: ValueType::Int(0, i64::MAX),
        default: "0",
        help: "late cycles a held cycle time may have",
    },
    Key {
        name: "max_missed_pres",
        ty: ValueType::Int(0, i64::MAX),
        default: "0",
        help: "missed PRes a held cycle time may have",
    },
];

/// The POWERLINK master's parameters from its table, whose cycle time is
/// `period_ns`. The rule between keys is [`NetcycleParams`]'s `validate`;
/// a response timeout given must be shorter than the cycle time.
pub(super) fn check(t: &KindTable, period_ns: u64) -> Check<ProbeParams> {
    let d = NetcycleParams::default();
    let int = |key: &str, default: u64| -> Check<u64> { Ok(t.num(key)?.unwrap_or(default)) };
    let cns = int("cns", u64::from(d.cns))? as u8;
    let out_bytes = int("out_bytes", u64::from(d.out_bytes))? as u16;
    let in_bytes = int("in_bytes", u64::from(d.in_bytes))? as u16;
    let chaining = t.flag("chaining")?.unwrap_or(false);
    let wait = t.choice("wait")?.and_then(Wait::parse).unwrap_or(d.wait);
    let response_timeout_ns = match t.num("response_timeout")? {
        Some(ns) if ns >= period_ns => {
            return Err(t.err(
                "response_timeout",
                format!(
                    "response_timeout {} must be shorter than the cycle time (period) {}",
                    short(ns),
                    short(period_ns)
                ),
            ))
        }
        Some(ns) => ns,
        None => d.response_timeout_ns,
    };
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
