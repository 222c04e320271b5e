//! The `netcycle` probe's parameters and the figures it stores: [Baumgartner POWERLINK]'s
//! cyclic real-time Ethernet master (a POWERLINK managing node polling N
//! controlled nodes), its "held" verdict, and the result detail the load
//! table is read from.
//!
//! The probe itself (the managing node's real-time thread, the controlled
//! nodes' emulator, the sockets) lives in the binary's `probe::netcycle`;
//! the frames in [`crate::powerlink`]. What is here is what a spec, the
//! command line, the store and the reports share, without I/O.
//!
//! **Held.** A cycle time is held when, over the whole run, no cycle was
//! late (the next SoC's release came before the cycle's last frame went
//! out) and no PRes was missed (none failed to arrive within the response
//! timeout). Users who accept a few give `max_late_cycles` /
//! `max_missed_pres` ([`Held::judge`]). A run in which a CN left
//! NMT_CS_OPERATIONAL never holds its cycle time ([`Held::left_operational`]).
//!
//! The documents cited here are listed in `docs/design.md`.

pub mod defaults;
pub mod params;
mod spec;
pub mod stamp;
pub mod verdict;

use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};

use crate::netns::PairKind;
use crate::powerlink::track::NmtOutage;
use crate::probe::descriptor::{ns, InContainer, ProbeDescriptor, ReportWords};

/// How the managing node waits for a PRes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Wait {
    /// A blocking receive with the response timeout: the thread sleeps
    /// until the PRes (or the timeout) wakes it, so its CPU time is the
    /// stack's work.
    #[default]
    Blocking,
    /// Spinning on a non-blocking receive until the PRes or the timeout:
    /// lower response latency, and the stack's CPU load reads as 100 % of
    /// the polling phase. A separate, labelled mode.
    BusyPoll,
}

impl Wait {
    /// The name on the command line, in specs and results.
    pub fn name(self) -> &'static str {
        match self {
            Wait::Blocking => "blocking",
            Wait::BusyPoll => "busy-poll",
        }
    }

    /// True for [`Wait::Blocking`], the default (specs leave it out).
    pub fn is_blocking(&self) -> bool {
        *self == Wait::Blocking
    }

    /// The mode called `name`.
    pub fn parse(name: &str) -> Option<Wait> {
        [Wait::Blocking, Wait::BusyPoll]
            .into_iter()
            .find(|w| w.name() == name)
    }
}

/// Which POWERLINK nodes run here.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeRole {
    /// The managing node and the emulated CNs, in two namespaces joined by
    /// a veth pair.
    #[default]
    Both,
    /// The managing node alone, polling real CNs on `--interface`.
    Mn,
    /// The emulated CNs alone, answering a real MN on `--interface`.
    Cn,
}

impl NodeRole {
    /// The name on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            NodeRole::Both => "both",
            NodeRole::Mn => "mn",
            NodeRole::Cn => "cn",
        }
    }

    /// The role called `name`.
    pub fn parse(name: &str) -> Option<NodeRole> {
        [NodeRole::Both, NodeRole::Mn, NodeRole::Cn]
            .into_iter()
            .find(|r| r.name() == name)
    }
}

/// What only the `netcycle` probe takes; the cycle time is the probe's
/// `period`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetcycleParams {
    /// How many controlled nodes are polled (or emulated): node ids
    /// 1..=cns, or the `node_ids` when given (then `cns` is their count).
    pub cns: u8,
    /// The controlled nodes' ids (1–239, ascending, no repeat), when they
    /// are not 1..=cns: a real network's ids, e.g. 1, 32 and 110. Empty:
    /// 1..=cns. Read them through [`NetcycleParams::nodes`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub node_ids: Vec<u8>,
    /// PollResponse Chaining: one PResMN, time-triggered PRes.
    #[serde(default)]
    pub chaining: bool,
    /// How the managing node waits for each PRes.
    #[serde(default)]
    pub wait: Wait,
    /// How the CN emulator waits for each frame: blocking, or spinning on
    /// its receive ring on its own CPU (like hardware CNs answering within
    /// µs; no interrupt reaches it, so its end's receive work is not
    /// steered and runs inline in the managing node's send). Polling by
    /// default; results stored before the option lack it and read blocking.
    #[serde(default, skip_serializing_if = "Wait::is_blocking")]
    pub cn_wait: Wait,
    /// How long the managing node waits for one PRes, ns.
    pub response_timeout_ns: u64,
    /// Output bytes per CN (PReq payload, or the CN's share of the PResMN).
    pub out_bytes: u16,
    /// Input bytes per CN (PRes payload).
    pub in_bytes: u16,
    /// Late cycles a run may have and still hold its cycle time.
    #[serde(default)]
    pub max_late_cycles: u64,
    /// Missed PRes a run may have and still hold its cycle time.
    #[serde(default)]
    pub max_missed_pres: u64,
    /// The emulated CNs' CPU; `None`: the first neighbour CPU (for
    /// `jitterlab run`, the first other online CPU).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cn_cpu: Option<usize>,
    /// Which nodes run here.
    #[serde(default)]
    pub role: NodeRole,
    /// The network interface of a one-role run on a real segment; `None`:
    /// both roles here through a veth pair.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<String>,
    /// Where to write what the CN side received (nanosecond pcap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcap: Option<String>,
    /// The identity the emulated CNs report (0x1000, 0x1018, their
    /// IdentResponse); `None`: the emulator's defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<crate::powerlink::od::Identity>,
    /// The concise DCF (openCONFIGURATOR's binary, as the reference MN
    /// loads it) the managing node configures the CNs from; it names the
    /// nodes. `None`: the run's own PDO mapping.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cdc: Option<String>,
}

impl Default for NetcycleParams {
    fn default() -> Self {
        NetcycleParams {
            cns: defaults::NETCYCLE_CNS,
            node_ids: Vec::new(),
            chaining: false,
            wait: Wait::Blocking,
            // Measured cheaper for the managing node (BENCHMARKS.md).
            cn_wait: Wait::BusyPoll,
            response_timeout_ns: defaults::PRES_TIMEOUT_NS,
            out_bytes: defaults::NETCYCLE_OUT_BYTES,
            in_bytes: defaults::NETCYCLE_IN_BYTES,
            max_late_cycles: 0,
            max_missed_pres: 0,
            cn_cpu: None,
            role: NodeRole::Both,
            interface: None,
            pcap: None,
            identity: None,
            cdc: None,
        }
    }
}

impl NetcycleParams {
    /// The controlled nodes' ids, ascending: the `node_ids` given, else
    /// 1..=cns.
    pub fn nodes(&self) -> Vec<u8> {
        match self.node_ids.is_empty() {
            true => (1..=self.cns).collect(),
            false => self.node_ids.clone(),
        }
    }

    /// Parses a node id list as `--node-ids` takes it: ids and ranges,
    /// comma-separated (`1,32,110`, `1-3,10`), each 1–239. Returns the ids
    /// ascending, or what to fix.
    pub fn parse_node_ids(list: &str) -> Result<Vec<u8>, String> {
        let max = crate::powerlink::MAX_CN_NODE;
        let id = |t: &str| -> Result<u8, String> {
            match t.trim().parse::<u8>() {
                Ok(n) if (1..=max).contains(&n) => Ok(n),
                _ => Err(format!(
                    "{:?} is not a CN node id: give numbers from 1 to {max}",
                    t.trim()
                )),
            }
        };
        let mut ids = Vec::new();
        for part in list.split(',') {
            if part.trim().is_empty() {
                return Err(format!(
                    "{list:?} has an empty item: give ids separated by commas, e.g. 1,32,110"
                ));
            }
            match part.split_once('-') {
                Some((a, b)) => {
                    let (a, b) = (id(a)?, id(b)?);
                    if a > b {
                        return Err(format!(
                            "the range {a}-{b} runs backwards: write it {b}-{a}"
                        ));
                    }
                    ids.extend(a..=b);
                }
                None => ids.push(id(part)?),
            }
        }
        ids.sort_unstable();
        if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
            return Err(format!("node {} is listed twice", w[0]));
        }
        Ok(ids)
    }

    /// One cycle's frames, for the wire-time bound.
    pub fn cycle_load(&self) -> crate::powerlink::CycleLoad {
        crate::powerlink::CycleLoad {
            cns: usize::from(self.cns),
            output_bytes: usize::from(self.out_bytes),
            input_bytes: usize::from(self.in_bytes),
            chained: self.chaining,
            asnd: None,
        }
    }

    /// The lower bound of one cycle's wire time at 100 Mbit/s, ns.
    pub fn wire_ns(&self) -> u64 {
        crate::powerlink::wire_time(&self.cycle_load())
    }

    /// Why a cycle of `period_ns` cannot carry this cycle's frames at
    /// 100 Mbit/s (`N/A (wire)`), or `None` when it can.
    pub fn wire_unfit(&self, period_ns: u64) -> Option<String> {
        crate::powerlink::fits(period_ns, &self.cycle_load()).err()
    }
}

/// The held verdict of a run: held or not, and why not.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Held {
    /// True when the cycle time was held.
    pub held: bool,
    /// Why not, one reason per line (`3 late cycles (allowed 0)`); empty
    /// when held.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
}

impl Held {
    /// The verdict for `late_cycles` of `cycles` and `missed_pres` of
    /// `polls`, against the allowances in `p`.
    pub fn judge(
        p: &NetcycleParams,
        cycles: u64,
        late_cycles: u64,
        polls: u64,
        missed_pres: u64,
    ) -> Held {
        let mut reasons = Vec::new();
        if late_cycles > p.max_late_cycles {
            reasons.push(format!(
                "late cycles: {late_cycles} of {cycles} (allowed {})",
                p.max_late_cycles
            ));
        }
        if missed_pres > p.max_missed_pres {
            reasons.push(format!(
                "missed responses: {missed_pres} of {polls} (allowed {})",
                p.max_missed_pres
            ));
        }
        if cycles == 0 {
            reasons.push("no cycle was measured".into());
        }
        Held {
            held: reasons.is_empty(),
            reasons,
        }
    }

    /// Adds the reason of CNs that left NMT_CS_OPERATIONAL during the
    /// measurement (`untold` more were only counted): such a run never
    /// holds. The first three are described, the rest counted.
    pub fn left_operational(&mut self, outages: &[NmtOutage], untold: u64) {
        let n = outages.len() as u64 + untold;
        if n == 0 {
            return;
        }
        let told: Vec<String> = outages.iter().take(3).map(NmtOutage::describe).collect();
        let more = n - told.len() as u64;
        let what = match n {
            1 => "departure",
            _ => "departures",
        };
        let mut reason = format!("{n} {what} from NMT_CS_OPERATIONAL: {}", told.join("; "));
        if more > 0 {
            reason.push_str(&format!("; {more} more"));
        }
        self.reasons.push(reason);
        self.held = false;
    }
}

/// The SoC spacing of a measurement.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SocSpacing {
    /// The smallest distance the schedule keeps between two SoCs (the
    /// reference MN's rule), ns.
    pub floor_ns: u64,
    /// The smallest distance between two SoCs sent (their send stamps),
    /// ns; `None` with fewer than two SoCs.
    pub min_ns: Option<u64>,
    /// Releases passed over to keep the floor (counted skipped).
    pub passed_over: u64,
}

/// One CN's counts over a run, as the managing node saw them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CnCounts {
    /// The node id.
    pub node: u8,
    /// PReq sent to it (or, chained, PResMN cycles it was due to answer).
    pub polls: u64,
    /// PRes received from it within the response timeout.
    pub answered: u64,
    /// Polls without a PRes within the timeout (POWERLINK's "loss of
    /// PRes").
    pub missed: u64,
    /// Of the missed, the PRes that did arrive, after the timeout.
    pub late: u64,
}

/// What a `netcycle` run stores beyond its metrics (the result's
/// `detail`): the reports' load table and held verdict read it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NetcycleDetail {
    /// `both`, `mn` or `cn`.
    pub role: NodeRole,
    /// Controlled nodes polled.
    pub cns: u8,
    /// PollResponse Chaining.
    pub chaining: bool,
    /// How the MN waited for each PRes.
    pub wait: Wait,
    /// The response timeout, ns ("held" depends on it).
    pub response_timeout_ns: u64,
    /// Output bytes per CN.
    pub out_bytes: u16,
    /// Input bytes per CN.
    pub in_bytes: u16,
    /// Lower bound of one cycle's wire time at 100 Mbit/s, ns.
    pub wire_ns: u64,
    /// Cycles the MN ran (SoCs sent) while measuring.
    pub cycles: u64,
    /// Late cycles: the SoA went out after the next cycle's release
    /// ([`crate::powerlink::analyze::LATE_RULE`]), what "held" judges.
    pub late_cycles: u64,
    /// Cycles over T0: the last PRes within the response timeout, or the
    /// SoA if later, more than T0 after the SoC
    /// ([`crate::powerlink::analyze::over_t0`], the test `analyze` applies
    /// to a capture, where a PRes after the timeout counts too); `None` in
    /// results stored before it was counted, and without a managing node
    /// here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over_t0_cycles: Option<u64>,
    /// PRes the MN waited for (every CN, every cycle).
    pub polls: u64,
    /// PRes not received within the response timeout.
    pub missed_pres: u64,
    /// Of the missed, the ones that arrived after the timeout.
    pub late_pres: u64,
    /// Held or not, and why not.
    pub held: Held,
    /// The SoC spacing, when the managing node ran here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soc_spacing: Option<SocSpacing>,
    /// Every time a CN left NMT_CS_OPERATIONAL while measured: when, which
    /// state, the cycles it cost.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_operational: Vec<NmtOutage>,
    /// Per CN.
    #[serde(default)]
    pub per_cn: Vec<CnCounts>,
    /// The stack's CPU load (the MN threads' CPU time over wall time, the
    /// MN CPU's busy and softirq time), when measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<crate::load::StackLoad>,
    /// The CN emulator's side: NMT bring-up, SoCs received, frames
    /// answered, ASnd services and SDO commands received and answered,
    /// SDO aborts by code, losses of SoC and PReq, malformed frames dropped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cn: Option<serde_json::Value>,
    /// The managing node's side: its bring-up of the CNs and what else it
    /// counted (stale PRes, StatusResponses, send errors, SoCs without a
    /// transmit stamp).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mn: Option<serde_json::Value>,
    /// What stamps each side's socket had.
    #[serde(default)]
    pub stamps: Vec<String>,
    /// Where each veth end's receive work was steered (RPS), one line
    /// per end (`rps_cpus IF OLD -> NEW`), so that the CNs' work is not
    /// charged to the managing node's CPU.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steering: Vec<String>,
    /// The capture written with `--pcap`: path and frames.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcap: Option<serde_json::Value>,
}

// ---------------------------------------------------------------------------
// The kind's descriptor.

/// The `netcycle` probe's pair of network namespaces: the POWERLINK
/// managing node in `jl<pid>mn` and the emulated controlled nodes in
/// `jl<pid>cn`, on the /30 after the round trip's (POWERLINK itself needs
/// no address: raw frames).
pub const PAIR: PairKind = PairKind {
    ns_a: "mn",
    ns_b: "cn",
    veth_a: "m",
    veth_b: "c",
    ip_a: Ipv4Addr::new(198, 18, 0, 13),
    ip_b: Ipv4Addr::new(198, 18, 0, 14),
    prefix_len: 30,
    who: "the netcycle probe",
    needs_root: "the netcycle probe needs root (CAP_NET_ADMIN) to create the network namespaces of its managing node and controlled nodes; run as root, or run one role per machine with --role mn|cn --interface IF",
};

/// `netcycle`: [Baumgartner POWERLINK]'s POWERLINK managing node polling N controlled
/// nodes. Its samples: per cycle, the SoC's release latency (`latency`),
/// SoC-to-SoC as sent (`period`) and its jitter, release → SoC handed to
/// the wire (`send`), SoC → last PRes received (`completion`), the MN's
/// work from wake-up to SoA sent (`exec`); per SoC the CNs received, the
/// period and jitter as received (`rx-period`, `rx-jitter`).
pub const NETCYCLE: ProbeDescriptor = ProbeDescriptor {
    name: "netcycle",
    summary: "a POWERLINK managing node polling N controlled nodes: SoC jitter, held cycles, stack load",
    metrics: &[
        ns("latency", false, true),
        ns("period", false, false),
        ns("jitter", true, true),
        ns("send", false, false),
        ns("completion", false, false),
        ns("rx-period", false, false),
        ns("rx-jitter", true, false),
        ns("exec", false, false),
    ],
    main_latency: Some("latency"),
    periodic: false,
    calibrated: false,
    every_probe_cpu: false,
    listed: true,
    words: ReportWords {
        period: Some("cycle"),
        samples: "cycles",
        sample: "sample",
        outliers: &["latency", "jitter", "completion", "rx-jitter"],
    },
    params: &params::PARAMS,
    container: InContainer::NotApplicable(
        "netcycle is N/A in a container: its managing node and controlled nodes drive raw POWERLINK frames through network namespaces of their own; run it on the host",
    ),
    verdicts: Some(&verdict::VERDICTS),
    netns: Some(&PAIR),
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_seed_004s_smallest_network() {
        let p = NetcycleParams::default();
        assert_eq!((p.cns, p.out_bytes, p.in_bytes), (3, 1, 6));
        assert_eq!(p.response_timeout_ns, 100_000);
        assert_eq!(p.wire_ns(), 53_760);
        assert_eq!(p.wire_unfit(250_000), None);
    }

    #[test]
    fn forty_nodes_do_not_fit_250_us_even_chained() {
        let p = NetcycleParams {
            cns: 40,
            chaining: true,
            ..NetcycleParams::default()
        };
        let why = p.wire_unfit(250_000).expect("does not fit");
        assert!(why.contains("289"), "{why}");
        assert_eq!(p.wire_unfit(500_000), None);
    }

    #[test]
    fn held_needs_no_late_cycle_and_no_missed_response() {
        let p = NetcycleParams::default();
        assert_eq!(
            Held::judge(&p, 100, 0, 300, 0),
            Held {
                held: true,
                reasons: vec![]
            }
        );
        let h = Held::judge(&p, 100, 2, 300, 1);
        assert!(!h.held);
        assert_eq!(
            h.reasons,
            [
                "late cycles: 2 of 100 (allowed 0)",
                "missed responses: 1 of 300 (allowed 0)"
            ]
        );
        let lenient = NetcycleParams {
            max_late_cycles: 2,
            max_missed_pres: 1,
            ..p
        };
        assert!(Held::judge(&lenient, 100, 2, 300, 1).held);
        assert_eq!(
            Held::judge(&lenient, 0, 0, 0, 0).reasons,
            ["no cycle was measured"]
        );
    }

    #[test]
    fn a_cn_out_of_operational_means_not_held() {
        let p = NetcycleParams::default();
        let mut h = Held::judge(&p, 100, 0, 300, 0);
        h.left_operational(&[], 0);
        assert!(h.held);
        let out = NmtOutage {
            node: 32,
            at_ns: 1_200_000_000,
            cycle: 120,
            state: "NMT_CS_PRE_OPERATIONAL_1".into(),
            code: 0x1D,
            cycles: 57,
            back: true,
        };
        h.left_operational(std::slice::from_ref(&out), 0);
        assert!(!h.held);
        assert_eq!(
            h.reasons,
            ["1 departure from NMT_CS_OPERATIONAL: CN 32 left NMT_CS_OPERATIONAL at 1.200s (cycle 120) for NMT_CS_PRE_OPERATIONAL_1: 57 cycles, back"]
        );
        let mut h = Held::judge(&p, 100, 0, 300, 0);
        let four = vec![out; 4];
        h.left_operational(&four, 2);
        assert!(h.reasons[0].starts_with("6 departures from NMT_CS_OPERATIONAL: CN 32"));
        assert!(h.reasons[0].ends_with("; 3 more"), "{}", h.reasons[0]);
    }

    #[test]
    fn names_round_trip() {
        assert_eq!(Wait::parse("busy-poll"), Some(Wait::BusyPoll));
        assert_eq!(Wait::parse("spin"), None);
        assert_eq!(NodeRole::parse("cn"), Some(NodeRole::Cn));
        assert_eq!(
            serde_json::to_string(&Wait::BusyPoll).unwrap(),
            "\"busy-poll\""
        );
    }

    #[test]
    fn a_blocking_cn_wait_stays_out_of_the_parameters() {
        let p = NetcycleParams::default();
        assert_eq!(p.cn_wait, Wait::BusyPoll);
        let json = serde_json::to_value(&p).unwrap();
        assert_eq!(json["cn_wait"], "busy-poll");
        let blocking = NetcycleParams {
            cn_wait: Wait::Blocking,
            ..p
        };
        let mut json = serde_json::to_value(&blocking).unwrap();
        assert_eq!(json.get("cn_wait"), None);
        json["wait"] = "busy-poll".into();
        let back: NetcycleParams = serde_json::from_value(json).unwrap();
        assert_eq!((back.wait, back.cn_wait), (Wait::BusyPoll, Wait::Blocking));
    }
}
