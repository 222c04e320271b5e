//! The managing node (MN): the measuring thread's POWERLINK cycle, and the
//! bring-up of the CNs before it.
//!
//! **One cycle** ([`Mn::cycle`]), at an absolute release of the schedule:
//!
//! 1. the frames queued since the last cycle are taken (the StatusResponse
//!    the last SoA asked for, PRes that came after their timeout);
//! 2. **SoC** to 01-11-1E-00-00-01, NetTime the wall clock at the send,
//!    RelativeTime the release's time since the first release in µs (so
//!    the CN side knows which release a SoC opened); its send instant is
//!    the driver's transmit stamp where there is one, else the clock read
//!    right after the send;
//! 3. per CN, a **PReq** to the CN's MAC (learnt from its IdentResponse)
//!    carrying `out_bytes` outputs whose first byte is the cycle's tag (the
//!    cycle number's low byte), then a wait for its **PRes** up to the
//!    response timeout — blocking in `ppoll`, or, `--wait busy-poll`,
//!    spinning on non-blocking receives. A PRes counts when it echoes the
//!    tag: an older one (the answer to a poll that timed out) is counted
//!    **late** for its CN, against that missed poll. With
//!    **`--chaining`**, one **PResMN** (node 240 to 01-11-1E-00-00-02,
//!    every CN's outputs in node order) and one wait for all the chained
//!    PRes, up to the timeout plus the last CN's slot;
//! 4. **SoA** to 01-11-1E-00-00-03 with the asynchronous slot the
//!    scheduler chose (`jitterlab_core::powerlink::mn_async`: the MN's NMT
//!    command or SDO frame after an invite to 240, an UnspecifiedInvite to
//!    a CN that announced a frame, StatusRequests with the ER flag of the
//!    CN's error-signalling handshake, IdentRequests), and the MN's own
//!    ASnd after it; the answer is taken at step 1 of the next cycle.
//!
//! IdentResponses and StatusResponses are matched by their source node,
//! whether addressed to 240 or to broadcast (255, as the reference CN
//! sends them), and only from the configured node ids.
//!
//! A CN's answer that does not come within the timeout is **missed**. The
//! cycle ends when the SoA has gone out: a cycle that ends after the next
//! release is **late**, and the schedule skips the releases it ran over
//! (`jitterlab_core::cycle`).
//!
//! **Bring-up** ([`Mn::bring_up`], in [`bring_up`]) comes before the
//! measurement.
//!
//! Nothing in a cycle allocates: the frame buffers, the outputs and the
//! per-CN books are made by [`Mn::new`] (DESIGN rule 2).

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use jitterlab_core::cycle::{CycleSample, Schedule};
use jitterlab_core::netcycle::{CnCounts, Wait};
use jitterlab_core::powerlink::errsig::ErrSig;
use jitterlab_core::powerlink::mn_async::{Scheduler, Wants};
use jitterlab_core::powerlink::sdo_client::SdoClient;
use jitterlab_core::powerlink::{
    decode, encode, ASnd, ASndService, DecodeError, Frame, IdentResponse, NetTime, NmtCommand,
    NmtCommandId, NmtState, PReq, PRes, RequestedService, Soa, Soc, BROADCAST_NODE, EPL_VERSION,
    MAC_ASND, MAC_PRES, MAC_SOA, MAC_SOC, MAX_FRAME_LEN, MN_NODE,
};
use jitterlab_sys::{self as sys, rx_timestamp::realtime_ns};
use serde::Serialize;

use super::link::Link;
use crate::probe::helper_thread::sleep_until;
use crate::probe::ScheduleCounts;

mod bring_up;
pub mod cfm;

pub use bring_up::bring_up_budget_ns;
pub use jitterlab_core::powerlink::mn_async::Slot as AsyncSlot;

/// The broadcast MAC, for a CN whose MAC is not known.
const BROADCAST_MAC: [u8; 6] = [0xff; 6];

/// How the MN runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MnConfig {
    /// The CNs polled: their node ids, ascending.
    pub nodes: Vec<u8>,
    /// Output bytes per CN.
    pub out_bytes: u16,
    /// Input bytes per CN.
    pub in_bytes: u16,
    /// PollResponse Chaining while measuring.
    pub chained: bool,
    /// The time between two chained CNs' PRes slots, ns.
    pub chain_step_ns: u64,
    /// How the MN waits for a PRes.
    pub wait: Wait,
    /// How long it waits, ns.
    pub response_timeout_ns: u64,
    /// The cycle time, ns.
    pub period_ns: u64,
    /// What the configuration manager writes to each CN (none: the CNs are
    /// not configured).
    pub plans: Vec<cfm::CnPlan>,
}

/// What the MN counted beyond the per-CN books.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct MnCounts {
    /// SoC sends that failed.
    pub soc_send_errors: u64,
    /// SoCs whose send instant is the clock read after the send (no
    /// transmit stamp).
    pub soc_unstamped: u64,
    /// Other sends that failed.
    pub send_errors: u64,
    /// PRes that echo no outstanding poll (neither current nor late).
    pub stale_pres: u64,
    /// IdentResponses received.
    pub ident_responses: u64,
    /// StatusResponses received.
    pub status_responses: u64,
    /// Frames that broke the layout, dropped.
    pub malformed: u64,
    /// Frames of message types not spoken, dropped.
    pub unsupported: u64,
    /// Frames from no CN of ours (another MN's, another node's).
    pub foreign: u64,
    /// SDO frames sent.
    pub sdo_sent: u64,
    /// SDO frames received.
    pub sdo_received: u64,
    /// Receive calls that failed.
    pub receive_errors: u64,
}

/// One CN as the MN knows it.
#[derive(Debug, Clone)]
struct Book {
    mac: Option<[u8; 6]>,
    state: Option<NmtState>,
    counts: CnCounts,
    /// Waiting for its PRes in this cycle.
    awaited: bool,
    /// Tags of polls that timed out and whose PRes may still come.
    missed: [u64; 4],
    /// Cycle of the last NMT command sent to it (bring-up).
    commanded: Option<u64>,
    /// Its error-signalling handshake.
    errsig: ErrSig,
    /// Its last IdentResponse.
    ident: Option<IdentResponse>,
    /// Its SDO client.
    sdo: SdoClient,
    /// Where its configuration stands.
    conf: bring_up::Conf,
}

impl Book {
    fn missed_bit(&mut self, tag: u8, set: bool) -> bool {
        let (w, b) = (usize::from(tag / 64), tag % 64);
        let was = self.missed[w] & (1 << b) != 0;
        if set {
            self.missed[w] |= 1 << b;
        } else {
            self.missed[w] &= !(1 << b);
        }
        was
    }
}

/// The receive stamps of a frame: software (CLOCK_REALTIME) and hardware.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stamps {
    /// Software, CLOCK_REALTIME ns.
    pub soft: Option<u64>,
    /// Hardware, ns of the NIC's clock.
    pub hw: Option<u64>,
}

/// What one cycle measured (CLOCK_MONOTONIC unless said otherwise).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cycle {
    /// The SoC's send instant.
    pub soc_mono: u64,
    /// The SoC's send instant, CLOCK_REALTIME.
    pub soc_real: u64,
    /// The SoC's hardware transmit stamp.
    pub soc_hw: Option<u64>,
    /// The last PRes of the cycle received.
    pub last_pres: Stamps,
    /// The SoA handed to the wire.
    pub soa_mono: u64,
}

impl Cycle {
    /// SoC sent → last PRes received, ns, on one clock (the NIC's when both
    /// have a hardware stamp, else the kernel's wall clock).
    pub fn completion_ns(&self) -> Option<i64> {
        match (self.soc_hw, self.last_pres.hw) {
            (Some(tx), Some(rx)) => Some(rx as i64 - tx as i64),
            _ => self
                .last_pres
                .soft
                .map(|rx| rx as i64 - self.soc_real as i64),
        }
    }
}

/// How the bring-up went.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct BringUp {
    /// Until every CN answered its IdentRequest, ns.
    pub identified_ns: u64,
    /// Until every CN's PRes said OPERATIONAL, ns.
    pub operational_ns: u64,
    /// Isochronous cycles it took.
    pub cycles: u64,
}

/// The managing node; see the module doc.
pub struct Mn {
    /// Its link.
    pub link: Link,
    cfg: MnConfig,
    books: Vec<Book>,
    tx: Vec<u8>,
    rx: Vec<u8>,
    out: Vec<u8>,
    state: NmtState,
    counts: MnCounts,
    cycles: u64,
    relative_base: u64,
    /// What each CN (in `books` order) wants from the asynchronous slot.
    wants: Vec<Wants>,
    sched: Scheduler,
    /// Node id → 1 + its index in `books` (0: not configured).
    index: [u8; 256],
    /// The source of the last ASnd taken (bring-up's wait for an answer).
    last_asnd: Option<u8>,
}

impl Mn {
    /// The MN of `cfg` on `link`, every buffer made now.
    pub fn new(link: Link, cfg: MnConfig) -> Mn {
        let n = cfg.nodes.len();
        let out_bytes = usize::from(cfg.out_bytes);
        let out_len = match cfg.chained {
            true => n * usize::from(cfg.out_bytes),
            false => usize::from(cfg.out_bytes),
        };
        Mn {
            link,
            cfg,
            books: vec![
                Book {
                    mac: None,
                    state: None,
                    counts: CnCounts::default(),
                    awaited: false,
                    missed: [0; 4],
                    commanded: None,
                    errsig: ErrSig::default(),
                    ident: None,
                    sdo: SdoClient::default(),
                    conf: bring_up::Conf::default(),
                };
                n
            ],
            tx: vec![0; MAX_FRAME_LEN],
            rx: vec![0; MAX_FRAME_LEN],
            out: vec![0; out_len.max(out_bytes)],
            state: NmtState::MS_NOT_ACTIVE,
            counts: MnCounts::default(),
            cycles: 0,
            relative_base: 0,
            wants: vec![Wants::default(); n],
            sched: Scheduler::default(),
            index: [0; 256],
            last_asnd: None,
        }
        .numbered()
    }

    fn numbered(mut self) -> Mn {
        for (i, &node) in self.cfg.nodes.iter().enumerate() {
            self.books[i].counts.node = node;
            self.wants[i].node = node;
            self.index[usize::from(node)] = i as u8 + 1;
        }
        self
    }

    /// The index in `books` of CN `node`, when it is one of ours.
    fn index_of(&self, node: u8) -> Option<usize> {
        match self.index[usize::from(node)] {
            0 => None,
            k => Some(usize::from(k) - 1),
        }
    }

    /// The per-CN counts.
    pub fn per_cn(&self) -> Vec<CnCounts> {
        self.books.iter().map(|b| b.counts.clone()).collect()
    }

    /// The MN's own counts.
    pub fn counts(&self) -> MnCounts {
        self.counts
    }

    /// Encodes `frame` to `dst` and sends it; counts a failure.
    fn send(&mut self, frame: &Frame<'_>, dst: [u8; 6]) {
        let sent = encode(frame, dst, self.link.mac(), &mut self.tx)
            .map_err(|_| ())
            .and_then(|n| self.link.send(&self.tx[..n]).map_err(|_| ()));
        if sent.is_err() {
            self.counts.send_errors += 1;
        }
    }

    /// Takes every queued frame without waiting.
    fn drain(&mut self, last: &mut Stamps) {
        while self.take_one(last) {}
    }

    /// Takes one queued frame, if any (true when there was one).
    fn take_one(&mut self, last: &mut Stamps) -> bool {
        // The receive buffer is lent out while its frame is read, so the
        // frame's borrowed parts can go to `&mut self` methods.
        let mut rx = std::mem::take(&mut self.rx);
        let took = self.take_from(&mut rx, last);
        self.rx = rx;
        took
    }

    /// [`Mn::take_one`] with the receive buffer `rx`.
    fn take_from(&mut self, rx: &mut [u8], last: &mut Stamps) -> bool {
        let got = match self.link.recv(rx) {
            Ok(Some(got)) => got,
            Ok(None) => return false,
            Err(_) => {
                self.counts.receive_errors += 1;
                return false;
            }
        };
        let stamps = Stamps {
            soft: got.soft_ns,
            hw: got.hw_ns,
        };
        let echo_bytes = self.cfg.out_bytes > 0 && self.cfg.in_bytes > 0;
        let tag = self.cycles.wrapping_sub(1) as u8;
        let r = match decode(&rx[..got.len]) {
            Ok(r) => r,
            Err(DecodeError::Unsupported(_)) => {
                self.counts.unsupported += 1;
                return true;
            }
            Err(_) => {
                self.counts.malformed += 1;
                return true;
            }
        };
        match r.frame {
            Frame::PRes(p) if self.index_of(p.node).is_some() => {
                let k = self.index_of(p.node).unwrap_or_default();
                self.wants[k].invite |= p.rs > 0;
                let b = &mut self.books[k];
                b.state = Some(p.nmt);
                let echo = match echo_bytes {
                    true => p.payload.first().copied(),
                    false => None,
                };
                if b.awaited && echo.is_none_or(|e| e == tag) {
                    b.awaited = false;
                    b.counts.answered += 1;
                    last.soft = last.soft.max(stamps.soft);
                    last.hw = last.hw.max(stamps.hw);
                } else if match echo {
                    // Echoing a poll that timed out: late, against it.
                    Some(e) => b.missed_bit(e, false),
                    // No echo to tell by: late while misses are unmatched.
                    None => b.counts.late < b.counts.missed,
                } {
                    b.counts.late += 1;
                } else {
                    self.counts.stale_pres += 1;
                }
            }
            Frame::ASnd(ASnd {
                src,
                dest: MN_NODE | BROADCAST_NODE,
                service,
            }) if self.index_of(src).is_some() => {
                let k = self.index_of(src).unwrap_or_default();
                self.take_asnd(k, r.src_mac, &service);
            }
            _ => self.counts.foreign += 1,
        }
        true
    }

    /// Takes an ASnd from the CN of index `k`, sent from `mac`.
    fn take_asnd(&mut self, k: usize, mac: [u8; 6], service: &ASndService<'_>) {
        let (b, w) = (&mut self.books[k], &mut self.wants[k]);
        self.last_asnd = Some(b.counts.node);
        match service {
            ASndService::IdentResponse(i) => {
                b.mac = Some(mac);
                b.state = Some(i.nmt);
                b.ident = Some(*i);
                w.identified = true;
                w.status = b.errsig.wants_status();
                w.invite |= i.rs > 0;
                self.counts.ident_responses += 1;
            }
            ASndService::StatusResponse(s) => {
                b.state = Some(s.nmt);
                b.errsig.answered(s.ec);
                w.status = b.errsig.wants_status();
                w.invite |= s.rs > 0;
                self.counts.status_responses += 1;
            }
            ASndService::Sdo(s) => {
                self.counts.sdo_received += 1;
                if let Some(outcome) = b.sdo.receive(s, sys::monotonic_ns()) {
                    self.configured(k, outcome);
                }
                return;
            }
            _ => {
                self.counts.foreign += 1;
                return;
            }
        }
        if let ASndService::IdentResponse(_) = service {
            self.identified(k);
        }
    }

    /// Takes frames until no CN is awaited any more or the monotonic time
    /// `deadline` passed; then every CN still awaited has missed.
    fn collect(&mut self, deadline: u64, mut awaited: usize, last: &mut Stamps) {
        while awaited > 0 {
            let now = sys::monotonic_ns();
            if now >= deadline {
                break;
            }
            if self.cfg.wait == Wait::Blocking {
                match self.link.wait(Some(deadline - now)) {
                    Ok(true) => {}
                    Ok(false) => continue,
                    Err(_) => {
                        self.counts.receive_errors += 1;
                        continue;
                    }
                }
            }
            while self.take_one(last) {
                awaited = self.books.iter().filter(|b| b.awaited).count();
                if awaited == 0 {
                    break;
                }
            }
        }
        let tag = self.cycles.wrapping_sub(1) as u8;
        for b in self.books.iter_mut().filter(|b| b.awaited) {
            b.awaited = false;
            b.counts.missed += 1;
            b.missed_bit(tag, true);
        }
    }

    /// Runs one cycle for `release`, woken at `wake`; see the module doc.
    pub fn cycle(&mut self, release: u64, slot: AsyncSlot, chained: bool) -> Cycle {
        let mut last = Stamps::default();
        self.drain(&mut last);
        last = Stamps::default();
        let tag = self.cycles as u8;
        self.cycles += 1;
        // SoC.
        let net = realtime_ns();
        let soc = Frame::Soc(Soc {
            mc: false,
            ps: false,
            net_time: NetTime {
                seconds: (net / 1_000_000_000) as u32,
                nanoseconds: (net % 1_000_000_000) as u32,
            },
            relative_time: release.saturating_sub(self.relative_base) / 1_000,
        });
        let n = encode(&soc, MAC_SOC, self.link.mac(), &mut self.tx)
            .expect("a SoC fits any frame buffer");
        if self.link.send_soc(&self.tx[..n]).is_err() {
            self.counts.soc_send_errors += 1;
        }
        let (mono_after, real_after) = (sys::monotonic_ns(), realtime_ns());
        let stamp = self.link.soc_stamp();
        if stamp.soft_ns.is_none() {
            self.counts.soc_unstamped += 1;
        }
        let soc_real = stamp.soft_ns.unwrap_or(real_after);
        let soc_mono = (mono_after as i64 + (soc_real as i64 - real_after as i64)) as u64;
        // The polls.
        let per = usize::from(self.cfg.out_bytes);
        let n_cns = self.books.len();
        if chained {
            for (k, share) in self.out.chunks_exact_mut(per.max(1)).enumerate() {
                if per > 0 && k < n_cns {
                    share.fill(0);
                    share[0] = tag;
                }
            }
            for b in self.books.iter_mut() {
                b.awaited = true;
                b.counts.polls += 1;
                b.missed_bit(tag, false);
            }
            let len = n_cns * per;
            let pres_mn = Frame::PRes(PRes {
                node: MN_NODE,
                nmt: self.state,
                ms: false,
                en: false,
                rd: true,
                pr: 0,
                rs: 0,
                pdo_version: 0,
                payload: &self.out[..len],
            });
            let n = encode(&pres_mn, MAC_PRES, self.link.mac(), &mut self.tx)
                .expect("the spec checked the PResMN's size");
            if self.link.send(&self.tx[..n]).is_err() {
                self.counts.send_errors += 1;
            }
            let slots = (n_cns as u64).saturating_sub(1) * self.cfg.chain_step_ns;
            let deadline = sys::monotonic_ns() + self.cfg.response_timeout_ns + slots;
            self.collect(deadline, n_cns, &mut last);
        } else {
            for k in 0..n_cns {
                if per > 0 {
                    self.out[..per].fill(0);
                    self.out[0] = tag;
                }
                let b = &mut self.books[k];
                let node = b.counts.node;
                b.awaited = true;
                b.counts.polls += 1;
                b.missed_bit(tag, false);
                let dst = b.mac.unwrap_or(BROADCAST_MAC);
                let preq = Frame::PReq(PReq {
                    node,
                    ms: false,
                    ea: false,
                    rd: self.state == NmtState::MS_OPERATIONAL,
                    pdo_version: 0,
                    payload: &self.out[..per],
                });
                let sent = encode(&preq, dst, self.link.mac(), &mut self.tx)
                    .map_err(|_| ())
                    .and_then(|n| self.link.send(&self.tx[..n]).map_err(|_| ()));
                if sent.is_err() {
                    self.counts.send_errors += 1;
                }
                let deadline = sys::monotonic_ns() + self.cfg.response_timeout_ns;
                self.collect(deadline, 1, &mut last);
            }
        }
        // SoA, and the MN's own ASnd.
        self.send_slot(slot);
        Cycle {
            soc_mono,
            soc_real,
            soc_hw: stamp.hw_ns,
            last_pres: last,
            soa_mono: sys::monotonic_ns(),
        }
    }

    /// The asynchronous slot the scheduler chooses now, after each SDO
    /// client had its timeouts checked.
    fn next_slot(&mut self) -> AsyncSlot {
        let now = sys::monotonic_ns();
        for k in 0..self.books.len() {
            if let Some(outcome) = self.books[k].sdo.tick(now) {
                self.configured(k, outcome);
            }
            let (c, w) = (&self.books[k].sdo, &mut self.wants[k]);
            w.sdo_out = c.wants_to_send();
            w.invite |= c.awaiting();
        }
        self.sched.next(&mut self.wants)
    }

    /// Sends the SoA of `slot` and the MN's own ASnd after it, as the
    /// reference MN does: an NMT command after an NMTRequestInvite to 240,
    /// an SDO frame after an UnspecifiedInvite to 240, both to the ASnd
    /// multicast MAC; a StatusRequest with the ER flag of the CN's
    /// error-signalling handshake.
    fn send_slot(&mut self, slot: AsyncSlot) {
        match slot {
            AsyncSlot::NoService => self.send_soa(RequestedService::NO_SERVICE, 0, false),
            AsyncSlot::Ident(node) => self.send_soa(RequestedService::IDENT_REQUEST, node, false),
            AsyncSlot::Status(node) => {
                let er = match self.index_of(node) {
                    Some(k) => {
                        let er = self.books[k].errsig.er();
                        self.books[k].errsig.requested();
                        self.wants[k].status = false;
                        er
                    }
                    None => false,
                };
                self.send_soa(RequestedService::STATUS_REQUEST, node, er);
            }
            AsyncSlot::Invite(node) => {
                if let Some(k) = self.index_of(node) {
                    self.wants[k].invite = false;
                }
                self.send_soa(RequestedService::UNSPECIFIED_INVITE, node, false);
            }
            AsyncSlot::Command(node, id) => {
                self.send_soa(RequestedService::NMT_REQUEST_INVITE, MN_NODE, false);
                self.send_command(node, id);
            }
            AsyncSlot::Sdo(node) => {
                self.send_soa(RequestedService::UNSPECIFIED_INVITE, MN_NODE, false);
                self.send_sdo(node);
            }
        }
    }

    /// Sends NMT command `id` to `node` (255: every CN), to the ASnd
    /// multicast MAC.
    fn send_command(&mut self, node: u8, id: NmtCommandId) {
        let cmd = Frame::ASnd(ASnd {
            dest: node,
            src: MN_NODE,
            service: ASndService::NmtCommand(NmtCommand { id, data: &[] }),
        });
        self.send(&cmd, MAC_ASND);
    }

    /// Sends the SDO frame `node`'s client has for it, if any, to the ASnd
    /// multicast MAC.
    fn send_sdo(&mut self, node: u8) {
        let Some(k) = self.index_of(node) else {
            return;
        };
        self.wants[k].sdo_out = false;
        let now = sys::monotonic_ns();
        let mac = self.link.mac();
        let Some(sdo) = self.books[k].sdo.next_frame(now) else {
            return;
        };
        let frame = Frame::ASnd(ASnd {
            dest: node,
            src: MN_NODE,
            service: ASndService::Sdo(sdo),
        });
        let sent = encode(&frame, MAC_ASND, mac, &mut self.tx)
            .map_err(|_| ())
            .and_then(|n| self.link.send(&self.tx[..n]).map_err(|_| ()));
        match sent {
            Ok(()) => self.counts.sdo_sent += 1,
            Err(()) => self.counts.send_errors += 1,
        }
        self.sdo_sent(k);
    }

    fn send_soa(&mut self, service: RequestedService, target: u8, er: bool) {
        let soa = Frame::Soa(Soa {
            nmt: self.state,
            ea: false,
            er,
            service,
            target,
            epl_version: EPL_VERSION,
        });
        self.send(&soa, MAC_SOA);
    }

    /// Measures from `t0` for `releases` releases (or until `stop`),
    /// calling `on_cycle` after each cycle with what it measured and its
    /// schedule sample; the asynchronous slots as the scheduler chooses.
    pub fn run(
        &mut self,
        t0: u64,
        releases: Option<u64>,
        stop: &AtomicBool,
        on_cycle: &mut dyn FnMut(&Cycle, &CycleSample),
    ) -> ScheduleCounts {
        self.relative_base = t0;
        self.state = NmtState::MS_OPERATIONAL;
        let mut schedule = Schedule::new(t0, self.cfg.period_ns);
        loop {
            let release = schedule.next_release();
            sleep_until(release);
            let wake = sys::monotonic_ns();
            let slot = self.next_slot();
            let c = self.cycle(release, slot, self.cfg.chained);
            let s = schedule.complete(wake, c.soa_mono);
            on_cycle(&c, &s);
            let due = s.release_index + 1 + s.skipped;
            if stop.load(Relaxed) || releases.is_some_and(|r| due >= r) {
                break;
            }
        }
        ScheduleCounts::of(&schedule)
    }
}
