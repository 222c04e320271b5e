//! The figures of a POWERLINK capture, computed frame by frame: what
//! `jitterlab analyze FILE` reports for any capture of a POWERLINK segment
//! — the `netcycle` probe's own `--pcap` files, or one a user took with
//! tcpdump beside a real managing node.
//!
//! # Why here, and how
//!
//! A capture is a sequence of `(stamp, frame)`; everything [Baumgartner POWERLINK] asks of
//! a cycle (Table 4's min cycle, max cycle and deviation) and everything a
//! user asks of a segment (which CN missed its PRes, how fast each answers,
//! which NMT state each is in) follows from that sequence alone, so the
//! analysis is pure and lives in core. [`Analyzer`] is fed one frame at a
//! time ([`Analyzer::push`] for an Ethernet frame, [`Analyzer::push_ethertype`]
//! for an EtherType and payload, what a Linux cooked capture gives) and
//! keeps only counters, exact moments, fixed-size histograms
//! ([`MetricStats`]) and the distinct SoC periods with their counts
//! ([`ExactValues`], at most [`EXACT_PERIODS`] per clock, in tables made
//! once): memory stays flat whatever the length of the capture, and no
//! frame allocates. [`Analyzer::finish`] turns the counters into an
//! [`Analysis`], the one value reports render.
//!
//! # What is counted, and the rules
//!
//! - **Frames**: every frame; POWERLINK ones (EtherType 0x88AB, also behind
//!   an 802.1Q tag) by message type; other protocols by EtherType (the first
//!   [`OTHER_ETHERTYPES`] kinds by name, the rest as a sum); malformed
//!   frames (broken layout, or an Ethernet header cut short) and message
//!   types jitterlab does not speak (AInv, AMNI) are counted and dropped.
//! - **Stamps going back**: a frame stamped before the frame ahead of it
//!   (the capturing machine's clock was stepped, or files were merged out
//!   of order) is counted, with the first one's number; the wire periods
//!   across it are kept as measured (negative ones included), and reports
//!   warn and never call such a capture's cycle time held.
//! - **Cycles** are SoCs. The SoC period `T_per` is measured three ways:
//!   from the capture's stamps (the wire, as the capturing machine saw it),
//!   and from the SoC's own NetTime and RelativeTime fields (the MN's clock,
//!   RelativeTime in µs), each only while that field advances — an MN that
//!   leaves a field at zero or repeats it is counted as `stalled`, not
//!   measured. MN-side against wire-side shows what the network and the
//!   capture added to the MN's own jitter. Min, max, mean and stddev are
//!   exact; so are the percentiles, from every distinct period kept with
//!   its count (up to [`EXACT_PERIODS`] of them; past that, from the
//!   histogram, with its resolution given).
//! - **Deviation** is the design's `max |T_per − T0|`. `T0` is the cycle time
//!   given (`--cycle`) or, failing that, inferred: the median of the first
//!   [`INFER_PERIODS`] wire periods, rounded to the nearest µs (an MN's
//!   cycle time is a configured whole number of µs, and the median ignores
//!   the odd late SoC). The result says which.
//! - **Per CN**: a PReq opens a poll; the polled node's PRes answers it
//!   (response time PReq → PRes). A poll still open when the next PReq,
//!   SoA or SoC is seen is **missed**. A PRes with no open poll of its node
//!   is **chained** when a PResMN opened its cycle (PollResponse Chaining:
//!   CNs answer at set times, unpolled), else **unexpected** (a late answer
//!   after its poll was given up, or a capture that began mid-cycle). A
//!   poll still open when the capture ends is not counted as missed.
//! - **Per cycle**: completion time SoC → last PRes of a CN; a cycle is
//!   **over T0** when its traffic (its last PRes, or its SoA if later)
//!   ended more than `T0` after its SoC ([`over_t0`], the test `run
//!   netcycle` applies to its own stamps too, there to the PRes within its
//!   response timeout, here to every PRes the capture holds; what `run netcycle` calls
//!   **late**, an SoA after the next release, needs the releases, which a
//!   capture does not hold). A cycle is closed by the next SoC; the
//!   capture's last cycle counts only if its SoA was captured (a capture cut
//!   mid-cycle would otherwise show a short completion).
//! - **NMT**: the MN's state is the last seen in a SoA or PResMN; a CN's the
//!   last seen in its PRes, IdentResponse or StatusResponse. ASnd services
//!   are counted by kind.
//!
//! The design rules and documents cited here are in `docs/design.md`.

use serde::Serialize;

use super::{
    decode_payload, ASndService, DecodeError, Frame, NmtState, ETHERTYPE_POWERLINK, MAX_CN_NODE,
};
use crate::ether::{self, TypeOrLength};
use crate::stats::{ExactValues, MetricStats, MetricSummary, Moments};

/// How many SoC periods an inferred cycle time is the median of.
pub const INFER_PERIODS: usize = 1024;
/// How many distinct SoC periods, per clock, are kept to give exact
/// percentiles (a table of 2 MiB per clock, mapped as it fills; periods
/// cluster around the cycle time, so a capture of any length has far
/// fewer).
pub const EXACT_PERIODS: usize = 1 << 16;
/// How many kinds of other EtherTypes are counted by name.
pub const OTHER_ETHERTYPES: usize = 8;
/// How an inferred cycle time was found, in words a report prints.
pub const INFER_RULE: &str =
    "the median of the first 1024 SoC periods in the capture, rounded to the nearest µs";

/// What a cycle "over T0" is, in words a report prints beside the count.
pub const OVER_T0_RULE: &str =
    "the cycle's last PRes, or its SoA if later, came more than T0 after its SoC";

/// What a "late" cycle of `run netcycle` is, the count its held verdict
/// judges: it needs the cycle's release, which a capture does not hold.
pub const LATE_RULE: &str = "the cycle's SoA went out after the next cycle's release";

/// Whether a cycle is over `t0_ns` ([`OVER_T0_RULE`]): the one test
/// `analyze` applies to a capture's frames and `run netcycle` to the
/// stamps of the frames it sent and received, so both count the same
/// cycles. `soc_ns` is the SoC's stamp, `last_pres_ns` the last PRes of a
/// CN received in the cycle, `soa_ns` the SoA's stamp, all on one clock.
pub fn over_t0(soc_ns: u64, last_pres_ns: Option<u64>, soa_ns: Option<u64>, t0_ns: u64) -> bool {
    let end = last_pres_ns.max(soa_ns).unwrap_or(soc_ns);
    end.saturating_sub(soc_ns) > t0_ns
}

/// Frames seen, by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct FrameCounts {
    /// Every frame fed.
    pub total: u64,
    /// Frames with EtherType 0x88AB (malformed and unsupported included).
    pub powerlink: u64,
    /// Frames of any other protocol.
    pub other: u64,
    /// POWERLINK frames that break the layout, and frames too short for an
    /// Ethernet header: counted and dropped.
    pub malformed: u64,
    /// POWERLINK frames of a message type not spoken (AInv, AMNI).
    pub unsupported: u64,
    /// SoC frames.
    pub soc: u64,
    /// PReq frames.
    pub preq: u64,
    /// PRes frames of CNs.
    pub pres: u64,
    /// PResMN frames (PRes of the MN, PollResponse Chaining).
    pub pres_mn: u64,
    /// SoA frames.
    pub soa: u64,
    /// ASnd frames.
    pub asnd: u64,
}

/// ASnd frames by service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct AsndCounts {
    /// IdentResponse.
    pub ident_response: u64,
    /// StatusResponse.
    pub status_response: u64,
    /// NMTCommand.
    pub nmt_command: u64,
    /// Any other service (NMTRequest, SDO, …).
    pub other: u64,
}

/// Count, min, mean and max of a time, in ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MinMeanMax {
    /// Samples.
    pub count: u64,
    /// Smallest.
    pub min: i64,
    /// Mean, rounded to 1 ns.
    pub mean: i64,
    /// Largest.
    pub max: i64,
}

impl MinMeanMax {
    fn of(m: &Moments) -> Option<MinMeanMax> {
        Some(MinMeanMax {
            count: m.count,
            min: (m.count > 0).then_some(m.min)?,
            mean: m.mean()?,
            max: m.max,
        })
    }
}

/// The cycle time `T0` deviations and late cycles are measured against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CycleTime {
    /// `T0` in ns.
    pub ns: u64,
    /// True when inferred from the capture ([`INFER_RULE`]), false when
    /// given.
    pub inferred: bool,
}

/// SoC periods on one clock.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Periods {
    /// The periods' statistics (ns): min is Table 4's "Min Cycle", max its
    /// "Max Cycle".
    pub period: MetricSummary,
    /// `max |T_per − T0|` (ns), when there is a `T0` and a period.
    pub deviation: Option<u64>,
    /// SoCs whose field did not advance past the previous SoC's (zero,
    /// repeated or going back): not measured. Always 0 for the wire.
    pub stalled: u64,
    /// `None`: the percentiles are exact to the ns (from every period's
    /// value, [`EXACT_PERIODS`]). Else the width, ns, of the histogram's
    /// counter at the largest of them: more distinct periods than are
    /// kept exactly, the percentiles are exact to within it.
    pub percentile_resolution_ns: Option<u64>,
}

/// One CN's polls and answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CnFigures {
    /// The node id (1–239).
    pub node: u8,
    /// PReq frames to it.
    pub preq: u64,
    /// PReqs it answered with its PRes before the next PReq, SoA or SoC.
    pub answered: u64,
    /// PReqs it did not answer in time.
    pub missed: u64,
    /// PRes sent unpolled after a PResMN (PollResponse Chaining).
    pub chained: u64,
    /// PRes with neither an open poll nor a PResMN before it in its cycle.
    pub unexpected: u64,
    /// PReq → PRes response time (ns) of the answered polls.
    pub response: Option<MinMeanMax>,
    /// The last NMT state it sent (PRes, IdentResponse, StatusResponse).
    pub nmt: Option<u8>,
}

/// A malformed frame and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Malformed {
    /// Its number in the capture (1-based).
    pub frame: u64,
    /// What was wrong (byte offsets count from the POWERLINK data, after
    /// the EtherType).
    pub error: String,
}

/// Frames of one other protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct EtherTypeCount {
    /// The EtherType (an IEEE 802.3 frame counts under its length field,
    /// ≤ 1500).
    pub ethertype: u16,
    /// Frames.
    pub frames: u64,
}

/// Everything a capture showed; see the module documentation for the rules.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Analysis {
    /// Frames by kind.
    pub frames: FrameCounts,
    /// The first malformed frame.
    pub first_malformed: Option<Malformed>,
    /// The first unsupported message type seen.
    pub first_unsupported_type: Option<u8>,
    /// Other protocols, in order of first sighting.
    pub other_ethertypes: Vec<EtherTypeCount>,
    /// Other frames whose EtherType did not fit in `other_ethertypes`.
    pub other_ethertypes_more: u64,
    /// Stamps of the first and the last frame (ns).
    pub first_ts: Option<u64>,
    /// Stamp of the last frame (ns).
    pub last_ts: Option<u64>,
    /// Frames stamped earlier than the frame before them: the capturing
    /// machine's clock went back (or the file was merged out of order), so
    /// the wire periods across them are not real.
    pub backwards_stamps: u64,
    /// The number (1-based) of the first of them.
    pub first_backwards_frame: Option<u64>,
    /// The cycle time deviations and late cycles are measured against;
    /// `None` without `--cycle` and with fewer than two SoCs.
    pub cycle_time: Option<CycleTime>,
    /// Cycles (SoCs).
    pub cycles: u64,
    /// SoC periods from the capture's stamps (`None` below two SoCs).
    pub wire: Option<Periods>,
    /// SoC periods from the SoCs' NetTime (`None` when it never advanced).
    pub net_time: Option<Periods>,
    /// SoC periods from the SoCs' RelativeTime (`None` when it never
    /// advanced).
    pub relative_time: Option<Periods>,
    /// SoC → last PRes of a CN, over the closed cycles that had one.
    pub completion: Option<MinMeanMax>,
    /// Closed cycles over `T0` ([`OVER_T0_RULE`], [`over_t0`]): the test
    /// `run netcycle` applies as `over_t0_cycles` to the PRes within its
    /// response timeout (its `late_cycles` are another count,
    /// [`LATE_RULE`]). The JSON keeps the name it had.
    pub late_cycles: Option<u64>,
    /// Closed cycles (those late cycles are counted among).
    pub closed_cycles: u64,
    /// Every CN seen, by node id.
    pub cns: Vec<CnFigures>,
    /// The MN's last NMT state (SoA, PResMN).
    pub mn_nmt: Option<u8>,
    /// ASnd frames by service.
    pub asnd: AsndCounts,
}

/// One clock's SoC periods while they are being counted.
struct Clock {
    stats: MetricStats,
    exact: ExactValues,
    prev: Option<u64>,
    stalled: u64,
}

impl Clock {
    fn new() -> Clock {
        Clock {
            stats: MetricStats::new(true, None),
            exact: ExactValues::new(EXACT_PERIODS),
            prev: None,
            stalled: 0,
        }
    }

    /// A wire stamp: every period counts (one going back is shown as
    /// negative, not hidden). Returns the period.
    fn stamp(&mut self, now: u64) -> Option<i64> {
        let period = self.prev.map(|p| now as i64 - p as i64);
        if let Some(p) = period {
            self.stats.record(p);
            self.exact.record(p);
        }
        self.prev = Some(now);
        period
    }

    /// An MN field: measured only when it advances.
    fn field(&mut self, now: u64) {
        match self.prev {
            Some(p) if now > p => {
                let period = (now - p).min(i64::MAX as u64) as i64;
                self.stats.record(period);
                self.exact.record(period);
            }
            Some(_) => self.stalled += 1,
            None if now == 0 => self.stalled += 1,
            None => {}
        }
        if now != 0 {
            self.prev = Some(now);
        }
    }

    fn periods(&self, t0: Option<u64>) -> Option<Periods> {
        let m = &self.stats.moments;
        let mut period = self.stats.summary();
        let percentile_resolution_ns = match self.exact.make_exact(&mut period) {
            true => None,
            false => [period.p50, period.p99, period.p99_99]
                .into_iter()
                .flatten()
                .map(|v| crate::hist::resolution_ns(v.unsigned_abs()))
                .max(),
        };
        (m.count > 0).then(|| Periods {
            period,
            percentile_resolution_ns,
            deviation: t0.map(|t0| {
                let t0 = t0 as i128;
                (m.min as i128 - t0)
                    .unsigned_abs()
                    .max((m.max as i128 - t0).unsigned_abs()) as u64
            }),
            stalled: self.stalled,
        })
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct CnCounters {
    seen: bool,
    preq: u64,
    answered: u64,
    missed: u64,
    chained: u64,
    unexpected: u64,
    response: Moments,
    nmt: Option<NmtState>,
}

/// The cycle being read: from its SoC to the next.
#[derive(Debug, Clone, Copy)]
struct OpenCycle {
    start: u64,
    last_pres: Option<u64>,
    soa: Option<u64>,
    pres_mn: bool,
}

/// Reads a capture frame by frame; see the module documentation.
pub struct Analyzer {
    given_t0: Option<u64>,
    inferred_t0: Option<u64>,
    frames: FrameCounts,
    first_malformed: Option<(u64, DecodeError)>,
    first_unsupported_type: Option<u8>,
    other_types: [(u16, u64); OTHER_ETHERTYPES],
    other_types_len: usize,
    other_types_more: u64,
    first_ts: Option<u64>,
    last_ts: Option<u64>,
    backwards: u64,
    first_backwards: Option<u64>,
    wire: Clock,
    net_time: Clock,
    relative_time: Clock,
    cycle: Option<OpenCycle>,
    completion: Moments,
    late: u64,
    closed: u64,
    early_periods: Vec<i64>,
    early_ends: Vec<u64>,
    poll: Option<(u8, u64)>,
    cns: Vec<CnCounters>,
    mn_nmt: Option<NmtState>,
    asnd: AsndCounts,
}

impl Analyzer {
    /// An analyzer measuring against `cycle_ns` (`T0`), or inferring it
    /// when `None`. Allocates everything it will use (about 1.5 MB of
    /// histograms, touched now, and 6 MiB of tables of distinct periods,
    /// mapped as they fill) here, once.
    pub fn new(cycle_ns: Option<u64>) -> Analyzer {
        Analyzer {
            given_t0: cycle_ns,
            inferred_t0: None,
            frames: FrameCounts::default(),
            first_malformed: None,
            first_unsupported_type: None,
            other_types: [(0, 0); OTHER_ETHERTYPES],
            other_types_len: 0,
            other_types_more: 0,
            first_ts: None,
            last_ts: None,
            backwards: 0,
            first_backwards: None,
            wire: Clock::new(),
            net_time: Clock::new(),
            relative_time: Clock::new(),
            cycle: None,
            completion: Moments::default(),
            late: 0,
            closed: 0,
            early_periods: Vec::with_capacity(INFER_PERIODS),
            early_ends: Vec::with_capacity(INFER_PERIODS + 1),
            poll: None,
            cns: vec![CnCounters::default(); usize::from(MAX_CN_NODE) + 1],
            mn_nmt: None,
            asnd: AsndCounts::default(),
        }
    }

    /// Frames fed so far.
    pub fn frames(&self) -> u64 {
        self.frames.total
    }

    /// Feeds one whole Ethernet frame (no preamble; a frame check sequence
    /// at the end is ignored) stamped `ts_ns`.
    pub fn push(&mut self, ts_ns: u64, frame: &[u8]) {
        match ether::parse(frame) {
            Ok(eth) => {
                let ethertype = match eth.type_or_length {
                    TypeOrLength::EtherType(t) | TypeOrLength::Length(t) => t,
                };
                self.push_ethertype(ts_ns, ethertype, eth.payload);
            }
            Err(_) => self.push_cut_short(ts_ns, frame.len()),
        }
    }

    /// Feeds a frame of `len` bytes too short for its link-layer header
    /// (Ethernet, or a Linux cooked header): counted as malformed.
    pub fn push_cut_short(&mut self, ts_ns: u64, len: usize) {
        self.count_frame(ts_ns);
        self.frames.malformed += 1;
        let e = DecodeError::Malformed {
            offset: len,
            what: "the link-layer header is cut short",
        };
        self.first_malformed.get_or_insert((self.frames.total, e));
    }

    /// Feeds one frame as its EtherType (or 802.3 length) and the bytes
    /// after it, stamped `ts_ns`: what a Linux cooked capture holds.
    pub fn push_ethertype(&mut self, ts_ns: u64, ethertype: u16, payload: &[u8]) {
        self.count_frame(ts_ns);
        if ethertype != ETHERTYPE_POWERLINK {
            self.count_other(ethertype);
            return;
        }
        self.frames.powerlink += 1;
        match decode_payload(payload) {
            Ok(frame) => self.frame(ts_ns, &frame),
            Err(DecodeError::Unsupported(t)) => {
                self.frames.unsupported += 1;
                self.first_unsupported_type.get_or_insert(t);
            }
            Err(e) => {
                self.frames.malformed += 1;
                self.first_malformed.get_or_insert((self.frames.total, e));
            }
        }
    }

    fn count_frame(&mut self, ts_ns: u64) {
        self.frames.total += 1;
        if self.last_ts.is_some_and(|last| ts_ns < last) {
            self.backwards += 1;
            self.first_backwards.get_or_insert(self.frames.total);
        }
        self.first_ts.get_or_insert(ts_ns);
        self.last_ts = Some(ts_ns);
    }

    fn count_other(&mut self, ethertype: u16) {
        self.frames.other += 1;
        let known = &mut self.other_types[..self.other_types_len];
        if let Some(slot) = known.iter_mut().find(|(t, _)| *t == ethertype) {
            slot.1 += 1;
        } else if self.other_types_len < OTHER_ETHERTYPES {
            self.other_types[self.other_types_len] = (ethertype, 1);
            self.other_types_len += 1;
        } else {
            self.other_types_more += 1;
        }
    }

    fn t0(&self) -> Option<u64> {
        self.given_t0.or(self.inferred_t0)
    }

    /// Ends the open poll, if any, as missed.
    fn give_up_poll(&mut self) {
        if let Some((node, _)) = self.poll.take() {
            self.cns[usize::from(node)].missed += 1;
        }
    }

    fn frame(&mut self, ts: u64, frame: &Frame<'_>) {
        match frame {
            Frame::Soc(soc) => {
                self.frames.soc += 1;
                self.give_up_poll();
                if let Some(c) = self.cycle.take() {
                    self.close(c);
                }
                self.cycle = Some(OpenCycle {
                    start: ts,
                    last_pres: None,
                    soa: None,
                    pres_mn: false,
                });
                if let Some(p) = self.wire.stamp(ts) {
                    self.learn_period(p);
                }
                let nt = soc.net_time;
                self.net_time
                    .field(u64::from(nt.seconds) * 1_000_000_000 + u64::from(nt.nanoseconds));
                self.relative_time
                    .field(soc.relative_time.saturating_mul(1_000));
            }
            Frame::PReq(p) => {
                self.frames.preq += 1;
                self.give_up_poll();
                let cn = &mut self.cns[usize::from(p.node)];
                cn.seen = true;
                cn.preq += 1;
                self.poll = Some((p.node, ts));
            }
            Frame::PRes(p) if p.is_pres_mn() => {
                self.frames.pres_mn += 1;
                self.mn_nmt = Some(p.nmt);
                if let Some(c) = self.cycle.as_mut() {
                    c.pres_mn = true;
                }
            }
            Frame::PRes(p) => {
                self.frames.pres += 1;
                let node = usize::from(p.node);
                let chained = self.cycle.is_some_and(|c| c.pres_mn);
                let cn = &mut self.cns[node];
                cn.seen = true;
                cn.nmt = Some(p.nmt);
                match self.poll {
                    Some((polled, at)) if polled == p.node => {
                        cn.answered += 1;
                        cn.response.add(ts as i64 - at as i64);
                        self.poll = None;
                    }
                    _ if chained => cn.chained += 1,
                    _ => cn.unexpected += 1,
                }
                if let Some(c) = self.cycle.as_mut() {
                    c.last_pres = Some(ts);
                }
            }
            Frame::Soa(s) => {
                self.frames.soa += 1;
                self.give_up_poll();
                self.mn_nmt = Some(s.nmt);
                if let Some(c) = self.cycle.as_mut() {
                    c.soa = Some(ts);
                }
            }
            Frame::ASnd(a) => {
                self.frames.asnd += 1;
                let cn_state = match a.service {
                    ASndService::IdentResponse(r) => {
                        self.asnd.ident_response += 1;
                        Some(r.nmt)
                    }
                    ASndService::StatusResponse(r) => {
                        self.asnd.status_response += 1;
                        Some(r.nmt)
                    }
                    ASndService::NmtCommand(_) => {
                        self.asnd.nmt_command += 1;
                        None
                    }
                    ASndService::Sdo(_) | ASndService::Other { .. } => {
                        self.asnd.other += 1;
                        None
                    }
                };
                if let (Some(nmt), 1..=MAX_CN_NODE) = (cn_state, a.src) {
                    let cn = &mut self.cns[usize::from(a.src)];
                    cn.seen = true;
                    cn.nmt = Some(nmt);
                }
            }
        }
    }

    /// Keeps the first periods until a cycle time can be inferred from
    /// them (none is needed when one was given).
    fn learn_period(&mut self, period: i64) {
        if self.t0().is_some() {
            return;
        }
        self.early_periods.push(period);
        if self.early_periods.len() == INFER_PERIODS {
            self.infer();
        }
    }

    /// Sets the inferred cycle time from the periods kept, and judges the
    /// cycles that closed before it was known.
    fn infer(&mut self) {
        let n = self.early_periods.len();
        if n == 0 {
            return;
        }
        // The nearest-rank median (rank ceil(n/2)), as `stats` quantiles.
        let rank = n.div_ceil(2) - 1;
        let (_, median, _) = self.early_periods.select_nth_unstable(rank);
        let median = (*median).max(0) as u64;
        let t0 = ((median + 500) / 1_000 * 1_000).max(1_000);
        self.inferred_t0 = Some(t0);
        self.late += self.early_ends.iter().filter(|&&e| e > t0).count() as u64;
        self.early_ends.clear();
    }

    fn close(&mut self, c: OpenCycle) {
        self.closed += 1;
        if let Some(p) = c.last_pres {
            self.completion.add(p as i64 - c.start as i64);
        }
        let end = c.last_pres.max(c.soa).unwrap_or(c.start);
        let took = end.saturating_sub(c.start);
        match self.t0() {
            Some(t0) => self.late += u64::from(over_t0(c.start, c.last_pres, c.soa, t0)),
            None if self.early_ends.len() < self.early_ends.capacity() => {
                self.early_ends.push(took)
            }
            None => {}
        }
    }

    /// Ends the capture: closes its last cycle if its SoA was seen, infers
    /// the cycle time from what periods there are if still needed, and
    /// returns the figures.
    pub fn finish(mut self) -> Analysis {
        if let Some(c) = self.cycle.take() {
            if c.soa.is_some() {
                self.close(c);
            }
        }
        if self.t0().is_none() {
            self.infer();
        }
        let t0 = self.t0();
        let cycle_time = t0.map(|ns| CycleTime {
            ns,
            inferred: self.given_t0.is_none(),
        });
        let cns = self
            .cns
            .iter()
            .enumerate()
            .filter(|(_, c)| c.seen)
            .map(|(node, c)| CnFigures {
                node: node as u8,
                preq: c.preq,
                answered: c.answered,
                missed: c.missed,
                chained: c.chained,
                unexpected: c.unexpected,
                response: MinMeanMax::of(&c.response),
                nmt: c.nmt.map(|s| s.0),
            })
            .collect();
        Analysis {
            frames: self.frames,
            first_malformed: self.first_malformed.map(|(frame, e)| Malformed {
                frame,
                error: e.to_string(),
            }),
            first_unsupported_type: self.first_unsupported_type,
            other_ethertypes: self.other_types[..self.other_types_len]
                .iter()
                .map(|&(ethertype, frames)| EtherTypeCount { ethertype, frames })
                .collect(),
            other_ethertypes_more: self.other_types_more,
            first_ts: self.first_ts,
            last_ts: self.last_ts,
            backwards_stamps: self.backwards,
            first_backwards_frame: self.first_backwards,
            cycle_time,
            cycles: self.frames.soc,
            wire: self.wire.periods(t0),
            net_time: self.net_time.periods(t0),
            relative_time: self.relative_time.periods(t0),
            completion: MinMeanMax::of(&self.completion),
            late_cycles: t0.map(|_| self.late),
            closed_cycles: self.closed,
            cns,
            mn_nmt: self.mn_nmt.map(|s| s.0),
            asnd: self.asnd,
        }
    }
}

#[cfg(test)]
#[path = "analyze_tests.rs"]
mod tests;
