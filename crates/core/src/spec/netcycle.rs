//! The `netcycle` probe's keys of a `[[probe]]` table, checked: [Baumgartner POWERLINK]'s
//! network size, payloads, PollResponse Chaining, how the managing node
//! waits and how long, the CN emulator's CPU and the held allowances.
//! Kept beside the checker of the other probes' keys (`check.rs`), so that
//! one file stays readable.
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

use std::ops::Range;

use toml::Spanned;

use super::check::{Check, Checker};
use super::plan::short;
use super::raw::RawProbe;
use super::ProbeParams;
use crate::netcycle::{NetcycleParams, Wait};
use crate::powerlink::{MAX_CN_NODE, MAX_PDO_PAYLOAD};

/// The POWERLINK master's parameters from `r`, whose cycle time is
/// `period_ns`; `key` names a key of this probe table in messages, `table`
/// is the table's span.
pub(super) fn netcycle_params(
    ck: &Checker,
    r: &RawProbe,
    period_ns: u64,
    key: &dyn Fn(&str) -> String,
    table: Range<usize>,
) -> Check<ProbeParams> {
    let d = NetcycleParams::default();
    let max_pdo = MAX_PDO_PAYLOAD as i64;
    let cns = match &r.cns {
        Some(v) => ck.int(v, &key("cns"), 1, i64::from(MAX_CN_NODE))? as u8,
        None => d.cns,
    };
    let out_bytes = match &r.out_bytes {
        Some(v) => ck.int(v, &key("out_bytes"), 0, max_pdo)? as u16,
        None => d.out_bytes,
    };
    let in_bytes = match &r.in_bytes {
        Some(v) => ck.int(v, &key("in_bytes"), 0, max_pdo)? as u16,
        None => d.in_bytes,
    };
    let chaining = r.chaining.as_ref().is_some_and(|v| *v.get_ref());
    if chaining && usize::from(cns) * usize::from(out_bytes) > MAX_PDO_PAYLOAD {
        let span = r
            .out_bytes
            .as_ref()
            .map(|v| v.span())
            .or(r.cns.as_ref().map(|v| v.span()))
            .unwrap_or(table);
        return Err(ck.err(
            span,
            &key("out_bytes"),
            format!(
                "with chaining one PResMN carries every CN's outputs: {cns} CNs × {out_bytes} bytes = {} bytes, more than its {MAX_PDO_PAYLOAD}; give fewer out_bytes or cns",
                usize::from(cns) * usize::from(out_bytes)
            ),
        ));
    }
    let wait = match &r.wait {
        Some(v) => Wait::parse(v.get_ref()).ok_or_else(|| {
            ck.err(
                v.span(),
                &key("wait"),
                format!("unknown wait {:?}; use blocking or busy-poll", v.get_ref()),
            )
        })?,
        None => d.wait,
    };
    let response_timeout_ns = match &r.response_timeout {
        Some(v) => {
            let ns = ck.positive_duration(v, &key("response_timeout"), "response_timeout")?;
            if ns >= period_ns {
                return Err(ck.err(
                    v.span(),
                    &key("response_timeout"),
                    format!(
                        "response_timeout {} must be shorter than the cycle time (period) {}",
                        short(ns),
                        short(period_ns)
                    ),
                ));
            }
            ns
        }
        None => d.response_timeout_ns,
    };
    let cn_cpu = match &r.cn_cpu {
        Some(v) => match ck.cpus(v, &key("cn_cpu"))? {
            Some(list) if list.len() == 1 => Some(list[0]),
            _ => {
                return Err(ck.err(
                    v.span(),
                    &key("cn_cpu"),
                    "give exactly one CPU, e.g. cn_cpu = \"1\"",
                ))
            }
        },
        None => None,
    };
    let allowance = |v: &Option<Spanned<i64>>, name: &str| -> Check<u64> {
        match v {
            Some(v) => Ok(ck.int(v, &key(name), 0, i64::MAX)? as u64),
            None => Ok(0),
        }
    };
    Ok(ProbeParams::Netcycle(Box::new(NetcycleParams {
        cns,
        chaining,
        wait,
        response_timeout_ns,
        out_bytes,
        in_bytes,
        max_late_cycles: allowance(&r.max_late_cycles, "max_late_cycles")?,
        max_missed_pres: allowance(&r.max_missed_pres, "max_missed_pres")?,
        cn_cpu,
        ..d
    })))
}
