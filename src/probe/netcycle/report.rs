//! The POWERLINK block of a `netcycle` result: the held verdict with its
//! reasons, the response timeout it depends on, the wire time, the cycles
//! and PRes counted (late cycles, missed and late PRes), one row per CN,
//! the SoC spacing (the schedule's floor, the smallest sent, releases
//! passed over for it), every time a CN left NMT_CS_OPERATIONAL, the CN side (SoCs received, frames answered, NMT bring-up), the stamps
//! each side had and the capture. Printed after `jitterlab run netcycle`
//! and rebuilt by `jitterlab report` from the stored result's `detail`
//! (`jitterlab_core::netcycle::NetcycleDetail`, filled by
//! `probe::netcycle`).
//!
//! Its tables are here too: the load table ([`load`]) and its side of the
//! condition table ([`conditions`]); [`PARTS`] is what its registration
//! gives the reports.

use std::fmt::Write as _;

use jitterlab_core::netcycle::{NetcycleDetail, NodeRole, SocSpacing, Wait};
use jitterlab_core::powerlink::analyze::{LATE_RULE, OVER_T0_RULE};
use jitterlab_core::result::{ProbeKind, RunResult};
use jitterlab_core::units::{format_duration_exact, format_ns};
use serde_json::Value;

use crate::output::shown;
use crate::probe::parts::{KindTable, ReportParts};

mod conditions;
mod load;

/// What the reports print of a `netcycle` run beyond its metrics.
pub(crate) const PARTS: ReportParts = ReportParts {
    summary: Some(netcycle_block),
    tables: &[KindTable {
        name: "load",
        help: "[Baumgartner POWERLINK] Tables 2–3: the POWERLINK managing node's CPU load per cycle time × controlled nodes, N/A where not held, vs the seed",
        applies: load::any_sweep,
        build: load::load,
        none: |run| {
            format!(
                "no load table: no cell of run {} ran the netcycle probe",
                run.id
            )
        },
    }],
    conditions: Some(&conditions::CONDITIONS),
    ..ReportParts::NONE
};

/// The block of a netcycle result, if it is one.
pub fn netcycle_block(r: &RunResult) -> Option<String> {
    if r.probe != ProbeKind::Netcycle {
        return None;
    }
    let d: NetcycleDetail = serde_json::from_value(r.detail.clone()?).ok()?;
    let mut o = String::new();
    let poll = match d.chaining {
        true => "PollResponse Chaining (one PResMN)",
        false => "a PReq per CN",
    };
    let wait = match d.wait {
        Wait::Blocking => "blocking wait",
        Wait::BusyPoll => "busy-poll wait (its load reads 100 %)",
    };
    let _ = writeln!(
        o,
        "POWERLINK: managing node and {} CNs ({}), {poll}, {wait}",
        d.cns,
        match d.role {
            NodeRole::Both => "both here, over a veth pair",
            NodeRole::Mn => "the managing node here, the CNs on the network",
            NodeRole::Cn => "emulated here, the managing node on the network",
        }
    );
    let _ = writeln!(
        o,
        "  response timeout {}; cycle {}; wire time at least {} at 100 Mbit/s ({} output and {} input bytes per CN)",
        format_duration_exact(d.response_timeout_ns),
        format_duration_exact(r.params.period_ns),
        format_ns(d.wire_ns as i64),
        d.out_bytes,
        d.in_bytes
    );
    let verdict = match (d.held.held, d.role) {
        (_, NodeRole::Cn) => "not judged".to_string(),
        (true, _) => "held".to_string(),
        (false, _) => format!("NOT held: {}", d.held.reasons.join("; ")),
    };
    let _ = writeln!(o, "  cycle time {verdict}");
    if d.role != NodeRole::Cn {
        let _ = writeln!(
            o,
            "  {} cycles, {} late; {} PRes polled, {} missed ({} came after the timeout)",
            d.cycles, d.late_cycles, d.polls, d.missed_pres, d.late_pres
        );
        // Two counts, two names: what "held" judges, and what `analyze`
        // counts on a capture of the same traffic.
        let _ = writeln!(o, "  late: {LATE_RULE}");
        if let Some(over) = d.over_t0_cycles {
            let _ = writeln!(
                o,
                "  {over} cycles over T0: {OVER_T0_RULE}, of the PRes within the response timeout (analyze applies the same test to a capture, where every PRes counts)"
            );
        }
        if let Some(sp) = &d.soc_spacing {
            let _ = writeln!(o, "  {}", spacing_line(sp));
        }
        for out in &d.left_operational {
            let _ = writeln!(o, "  {}", out.describe());
        }
        if !d.per_cn.is_empty() {
            let _ = writeln!(
                o,
                "  {:>6} {:>10} {:>10} {:>8} {:>8}",
                "CN", "polls", "answered", "missed", "late"
            );
            for c in &d.per_cn {
                let _ = writeln!(
                    o,
                    "  {:>6} {:>10} {:>10} {:>8} {:>8}",
                    c.node, c.polls, c.answered, c.missed, c.late
                );
            }
        }
    }
    if let Some(mn) = &d.mn {
        let n = |path: &[&str]| {
            path.iter()
                .try_fold(mn, |x, k| x.get(k))
                .and_then(Value::as_u64)
        };
        if let Some(up) = n(&["bring_up", "operational_ns"]) {
            let _ = writeln!(
                o,
                "  bring-up: every CN identified after {}, operational after {} ({} cycles)",
                format_ns(n(&["bring_up", "identified_ns"]).unwrap_or(0) as i64),
                format_ns(up as i64),
                n(&["bring_up", "cycles"]).unwrap_or(0)
            );
        }
        let _ = writeln!(
            o,
            "  managing node: {} StatusResponses, {} stale PRes, {} malformed, {} foreign frames, {} send errors, {} SoCs without a transmit stamp",
            n(&["counts", "status_responses"]).unwrap_or(0),
            n(&["counts", "stale_pres"]).unwrap_or(0),
            n(&["counts", "malformed"]).unwrap_or(0),
            n(&["counts", "foreign"]).unwrap_or(0),
            n(&["counts", "send_errors"]).unwrap_or(0) + n(&["counts", "soc_send_errors"]).unwrap_or(0),
            n(&["counts", "soc_unstamped"]).unwrap_or(0),
        );
    }
    if let Some(cn) = &d.cn {
        let n = |k: &str| cn.get(k).and_then(Value::as_u64).unwrap_or(0);
        let states = cn
            .get("nodes")
            .and_then(Value::as_array)
            .map(|nodes| summarize_states(nodes))
            .unwrap_or_default();
        let _ = writeln!(
            o,
            "  CN side: {} frames received ({} SoCs), {} answered, {} malformed, {} refused by their state; {}",
            n("frames"),
            n("socs"),
            n("answered"),
            n("malformed"),
            n("refused"),
            shown(&states)
        );
        if let Some(line) = services_line(cn) {
            let _ = writeln!(o, "  {line}");
        }
        if d.role == NodeRole::Both {
            let _ = writeln!(
                o,
                "  (on a veth pair the CN side's receive stamps are taken in the sender's context: rx-period and rx-jitter validate the pipeline; a real NIC measures what the network adds)"
            );
        }
    }
    if let Some(l) = &d.load {
        let _ = writeln!(
            o,
            "  stack load: {:.1} % of one CPU (the managing node's thread: {} of CPU time over {}, Baumgartner and Schoenegger's figure)",
            l.stack_percent(),
            format_ns(l.stack_ns as i64),
            format_ns(l.wall_ns as i64)
        );
        if let Some(b) = l.busy_percent() {
            let _ = writeln!(
                o,
                "  CPU {} busy: {b:.1} % ({})",
                l.cpu,
                shown(&l.cpu_busy_source)
            );
        }
        if let Some(s) = l.softirq_percent() {
            let _ = writeln!(
                o,
                "  CPU {} softirq: {s:.1} % ({})",
                l.cpu,
                shown(&l.softirq_source)
            );
        }
    }
    for s in &d.steering {
        let _ = writeln!(o, "  receive steering: {}", shown(s));
    }
    for s in &d.stamps {
        let _ = writeln!(o, "  stamps, {}", shown(s));
    }
    if let Some(p) = &d.pcap {
        let _ = writeln!(
            o,
            "  capture {}: {} frames, {} dropped",
            shown(p.get("path").and_then(Value::as_str).unwrap_or("?")),
            p.get("frames").and_then(Value::as_u64).unwrap_or(0),
            p.get("dropped").and_then(Value::as_u64).unwrap_or(0)
        );
    }
    Some(o)
}

/// `SoC spacing: at least 389.516us sent (floor 306.720us, the reference
/// MN's rule; 0 releases passed over for it)`.
fn spacing_line(sp: &SocSpacing) -> String {
    let min = match sp.min_ns {
        Some(ns) => format!("at least {} sent", format_ns(ns as i64)),
        None => "fewer than two SoCs sent".into(),
    };
    format!(
        "SoC spacing: {min} (floor {}, the reference MN's rule; {} releases passed over for it)",
        format_ns(sp.floor_ns as i64),
        sp.passed_over
    )
}

/// `all 3 CNs NMT_CS_OPERATIONAL, the last after 1.204ms`, or each CN's
/// state when they differ.
fn summarize_states(nodes: &[Value]) -> String {
    let state = |v: &Value| {
        v.get("state")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string()
    };
    let first = nodes.first().map(state).unwrap_or_default();
    if nodes.iter().all(|v| state(v) == first) {
        let last = nodes
            .iter()
            .filter_map(|v| v.get("operational_after_ns").and_then(Value::as_u64))
            .max();
        match last {
            Some(ns) if first == "NMT_CS_OPERATIONAL" => format!(
                "all {} CNs {first}, the last after {}",
                nodes.len(),
                format_ns(ns as i64)
            ),
            _ => format!("all {} CNs {first}", nodes.len()),
        }
    } else {
        let each: Vec<String> = nodes
            .iter()
            .map(|v| {
                format!(
                    "CN {} {}",
                    v.get("node").and_then(Value::as_u64).unwrap_or(0),
                    state(v)
                )
            })
            .collect();
        each.join(", ")
    }
}

/// The CN side's ASnd services and SDO commands in one line:
/// `CN ASnd received: NMTCommand 10, SDO 153; sent: IdentResponse 7, …;
/// SDO WriteByIndex 51 received, 51 answered, aborts 0x06020000 ×3; losses:
/// SoC 30, PReq 0, 3 back to NMT_CS_PRE_OPERATIONAL_1`, or `None` for a
/// result without them.
fn services_line(cn: &Value) -> Option<String> {
    let s = cn.get("services")?;
    let map = |k: &str| -> String {
        let m = s.get(k).and_then(Value::as_object);
        let items: Vec<String> = m
            .into_iter()
            .flatten()
            .map(|(name, n)| format!("{name} {}", n.as_u64().unwrap_or(0)))
            .collect();
        match items.is_empty() {
            true => "none".into(),
            false => items.join(", "),
        }
    };
    let n = |k: &str| s.get(k).and_then(Value::as_u64).unwrap_or(0);
    let sdo: Vec<String> = s
        .get("sdo_received")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(name, got)| {
            let answered = s
                .get("sdo_answered")
                .and_then(|a| a.get(name))
                .and_then(Value::as_u64)
                .unwrap_or(0);
            format!(
                "{name} {} received, {answered} answered",
                got.as_u64().unwrap_or(0)
            )
        })
        .collect();
    let aborts: Vec<String> = s
        .get("sdo_aborts")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(code, k)| format!("{code} ×{}", k.as_u64().unwrap_or(0)))
        .collect();
    let line = format!(
        "CN ASnd received: {}; sent: {}; SDO: {}{}; losses: SoC {}, PReq {}, {} back to NMT_CS_PRE_OPERATIONAL_1",
        map("asnd_received"),
        map("asnd_sent"),
        match sdo.is_empty() {
            true => "no command".to_string(),
            false => sdo.join(", "),
        },
        match aborts.is_empty() {
            true => String::new(),
            false => format!(", aborts {}", aborts.join(", ")),
        },
        n("soc_losses"),
        n("preq_losses"),
        n("cycle_errors"),
    );
    Some(shown(&line).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soc_spacing_says_its_floor_and_what_was_sent() {
        let sp = SocSpacing {
            floor_ns: 306_720,
            min_ns: Some(389_516),
            passed_over: 2,
        };
        assert_eq!(
            spacing_line(&sp),
            "SoC spacing: at least 389.516us sent (floor 306.720us, the reference MN's rule; 2 releases passed over for it)"
        );
        let none = SocSpacing { min_ns: None, ..sp };
        assert!(spacing_line(&none).starts_with("SoC spacing: fewer than two SoCs sent (floor"));
    }

    #[test]
    fn states_are_summed_up_when_alike_and_listed_when_not() {
        let alike: Vec<Value> = (1..=3)
            .map(|n| serde_json::json!({"node": n, "state": "NMT_CS_OPERATIONAL", "operational_after_ns": n * 1000}))
            .collect();
        assert_eq!(
            summarize_states(&alike),
            "all 3 CNs NMT_CS_OPERATIONAL, the last after 3.000us"
        );
        let apart = vec![
            serde_json::json!({"node": 1, "state": "NMT_CS_OPERATIONAL"}),
            serde_json::json!({"node": 2, "state": "NMT_CS_STOPPED"}),
        ];
        assert_eq!(
            summarize_states(&apart),
            "CN 1 NMT_CS_OPERATIONAL, CN 2 NMT_CS_STOPPED"
        );
    }

    #[test]
    fn the_cn_services_fit_one_line() {
        let cn = serde_json::json!({"services": {
            "asnd_received": {"NMTCommand": 10, "SDO": 153},
            "asnd_sent": {"IdentResponse": 7, "SDO": 60},
            "sdo_received": {"WriteByIndex": 51},
            "sdo_answered": {"WriteByIndex": 51},
            "sdo_aborts": {"0x06020000": 3},
            "sdo_connections": 3, "sdo_out_of_sequence": 0,
            "soc_losses": 30, "preq_losses": 0, "cycle_errors": 3
        }});
        assert_eq!(
            services_line(&cn).unwrap(),
            "CN ASnd received: NMTCommand 10, SDO 153; sent: IdentResponse 7, SDO 60; SDO: WriteByIndex 51 received, 51 answered, aborts 0x06020000 ×3; losses: SoC 30, PReq 0, 3 back to NMT_CS_PRE_OPERATIONAL_1"
        );
        assert_eq!(services_line(&serde_json::json!({})), None);
    }
}
