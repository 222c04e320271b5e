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
//!    cycle number's low byte, for a reader of a capture), then a wait for
//!    its **PRes** up to the response timeout — blocking in `ppoll`, or,
//!    `--wait busy-poll`, spinning on non-blocking receives. Which poll a
//!    PRes answers is told by time, whatever its payload
//!    (`jitterlab_core::powerlink::poll`): one received before this
//!    cycle's PReq to its CN was sent answers an earlier poll — **late**
//!    when that poll was missed, else stale —, never this one. With
//!    **`--chaining`**, one **PResMN** (node 240 to 01-11-1E-00-00-02,
//!    every CN's outputs in node order) and one wait for all the chained
//!    PRes, up to the timeout plus the last CN's slot;
//! 4. **SoA** to 01-11-1E-00-00-03 inviting one CN (round robin) to a
//!    StatusRequest, whose ASnd StatusResponse is taken at step 1 of the
//!    next cycle.
//!
//! A CN's answer that does not come within the timeout is **missed**. The
//! cycle ends when the SoA has gone out: a cycle that ends after the next
//! release is **late**, and the schedule skips the releases it ran over
//! (`jitterlab_core::cycle`).
//!
//! **One SoC schedule** (`jitterlab_core::powerlink::soc_schedule`) from
//! the bring-up's first SoC to the measurement's last: [`Mn::iso_cycle`]
//! runs every isochronous cycle on it, the bring-up's, the keep-alive
//! cycles between the bring-up and the measurement ([`KeepAlive`]: the
//! runner prepares the probe, then releases it tens of milliseconds later,
//! and a real CN drops out of operational after a few lost SoCs), and the
//! measurement's, which starts at a release of the same grid. After a late
//! wake-up a release closer than the spacing floor to the last SoC is
//! passed over, as the reference MN does (the rule and its source are in
//! that module's doc).
//!
//! **NMT states through the measurement** (`jitterlab_core::powerlink::
//! track`): every PRes and StatusResponse's state; a CN that leaves
//! NMT_CS_OPERATIONAL is an outage with when, which state and the cycles
//! it cost.
//!
//! **Capture** (`--pcap` with `--role mn`): every frame sent, stamped with
//! the clock read after the send (the SoC with its transmit stamp), and
//! every frame received, with its kernel receive stamp, into the capture
//! ring ([`super::capture`]).
//!
//! **Bring-up** ([`Mn::bring_up`]), before the measurement: as DS 301's MN
//! does, first a reduced cycle of SoA IdentRequests (MN in
//! PRE_OPERATIONAL_1) until every CN answered with an IdentResponse (its
//! MAC is learnt from it), then isochronous cycles at the measured cycle
//! time (MN in PRE_OPERATIONAL_2, then READY_TO_OPERATE) whose
//! asynchronous slot carries the MN's own ASnd NMTCommands — the SoA
//! invites no one (NoService, target 240, the MN keeps the slot) and the
//! command follows it — EnableReadyToOperate to a CN whose PRes says
//! PRE_OPERATIONAL_2, StartNode to one that says READY_TO_OPERATE, again
//! after 8 cycles without a change, until every CN's PRes says
//! OPERATIONAL. Bring-up always polls with PReq; chained CNs take their
//! PResMN slots once measured.
//!
//! Nothing in a cycle allocates: the frame buffers, the outputs and the
//! per-CN books are made by [`Mn::new`] (DESIGN rule 2).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::thread::JoinHandle;

use anyhow::{anyhow, Context, Result};
use jitterlab_core::cycle::CycleSample;
use jitterlab_core::netcycle::{CnCounts, Wait};
use jitterlab_core::powerlink::poll::{PollBook, PresMatch};
use jitterlab_core::powerlink::soc_schedule::{SocCounts, SocSchedule};
use jitterlab_core::powerlink::track::{NmtOutage, NmtTrack};
use jitterlab_core::powerlink::{
    decode, encode, ASnd, ASndService, DecodeError, Frame, NetTime, NmtCommand, NmtCommandId,
    NmtState, PReq, PRes, RequestedService, Soa, Soc, EPL_VERSION, MAC_ASND, MAC_PRES, MAC_SOA,
    MAC_SOC, MAX_FRAME_LEN, MN_NODE,
};
use jitterlab_sys::{self as sys, rx_timestamp::realtime_ns};
use serde::Serialize;

use super::capture::CaptureRing;
use super::link::Link;
use crate::probe::helper_thread::{setup_helper_thread, sleep_until};
use crate::probe::ScheduleCounts;

/// How long the bring-up waits for one IdentResponse before it asks again.
const IDENT_WAIT_NS: u64 = 10_000_000;
/// Cycles a CN gets to take an NMT command before it is sent again.
const COMMAND_AGAIN: u64 = 8;
/// The broadcast MAC, for a CN whose MAC is not known.
const BROADCAST_MAC: [u8; 6] = [0xff; 6];

/// Outages out of NMT_CS_OPERATIONAL a measurement keeps (more are only
/// counted).
const OUTAGE_ROOM: usize = 256;

/// How the MN runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MnConfig {
    /// CNs polled (`nodes.len()`).
    pub cns: u8,
    /// Their node ids, ascending (`NetcycleParams::nodes`).
    pub nodes: Vec<u8>,
    /// The smallest distance between two SoCs
    /// (`soc_schedule::spacing_floor`), ns.
    pub spacing_floor_ns: u64,
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
    /// PRes that answer no outstanding poll (neither current nor late).
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
    /// Receive calls that failed.
    pub receive_errors: u64,
}

/// One CN as the MN knows it.
#[derive(Debug, Clone)]
struct Book {
    mac: Option<[u8; 6]>,
    state: Option<NmtState>,
    counts: CnCounts,
    /// Its polls: which one a PRes answers.
    poll: PollBook,
    /// Cycle of the last NMT command sent to it (bring-up).
    commanded: Option<u64>,
}

/// What the asynchronous slot of a cycle carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AsyncSlot {
    /// SoA StatusRequest to a CN.
    Status(u8),
    /// The MN's own ASnd NMTCommand to a CN (after a SoA inviting no one).
    Command(u8, NmtCommandId),
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
    status_next: usize,
    relative_base: u64,
    /// The one SoC schedule, from the bring-up's first SoC on.
    schedule: Option<SocSchedule>,
    /// The NMT states while measuring, and the cycle and monotonic time
    /// the measurement started at.
    track: Option<(NmtTrack, u64, u64)>,
    /// `--pcap` in the MN role: every frame sent and received.
    capture: Option<CaptureRing>,
}

impl Mn {
    /// The MN of `cfg` on `link`, every buffer made now.
    pub fn new(link: Link, cfg: MnConfig) -> Mn {
        let n = cfg.nodes.len();
        let out_len = match cfg.chained {
            true => n * usize::from(cfg.out_bytes),
            false => usize::from(cfg.out_bytes),
        };
        let books = cfg
            .nodes
            .iter()
            .map(|&node| Book {
                mac: None,
                state: None,
                counts: CnCounts {
                    node,
                    ..CnCounts::default()
                },
                poll: PollBook::default(),
                commanded: None,
            })
            .collect();
        Mn {
            link,
            books,
            tx: vec![0; MAX_FRAME_LEN],
            rx: vec![0; MAX_FRAME_LEN],
            out: vec![0; out_len.max(usize::from(cfg.out_bytes))],
            state: NmtState::MS_NOT_ACTIVE,
            counts: MnCounts::default(),
            cycles: 0,
            status_next: 0,
            relative_base: 0,
            schedule: None,
            track: None,
            capture: None,
            cfg,
        }
    }

    /// Captures every frame sent and received into `ring` (`--pcap`).
    pub fn capture_into(&mut self, ring: CaptureRing) {
        self.capture = Some(ring);
    }

    /// Frames the capture ring had no room for (0 without a capture).
    pub fn capture_dropped(&self) -> u64 {
        self.capture.as_ref().map_or(0, |r| r.dropped)
    }

    /// The per-CN counts.
    pub fn per_cn(&self) -> Vec<CnCounts> {
        self.books.iter().map(|b| b.counts.clone()).collect()
    }

    /// The MN's own counts.
    pub fn counts(&self) -> MnCounts {
        self.counts
    }

    /// The index of CN `node` in the books, if it is one of ours.
    fn index_of(&self, node: u8) -> Option<usize> {
        self.cfg.nodes.binary_search(&node).ok()
    }

    fn book(&mut self, node: u8) -> Option<&mut Book> {
        self.index_of(node).map(|k| &mut self.books[k])
    }

    /// Sends the `n` bytes of the transmit buffer; captures them; true
    /// when the send went.
    fn send_tx(&mut self, n: usize) -> bool {
        let sent = self.link.send(&self.tx[..n]).is_ok();
        if sent {
            if let Some(ring) = self.capture.as_mut() {
                ring.push(realtime_ns(), &self.tx[..n]);
            }
        }
        sent
    }

    /// Encodes `frame` to `dst` and sends it; counts a failure.
    fn send(&mut self, frame: &Frame<'_>, dst: [u8; 6]) {
        let sent = match encode(frame, dst, self.link.mac(), &mut self.tx) {
            Ok(n) => self.send_tx(n),
            Err(_) => false,
        };
        if !sent {
            self.counts.send_errors += 1;
        }
    }

    /// Takes every queued frame without waiting.
    fn drain(&mut self, last: &mut Stamps) {
        while self.take_one(last) {}
    }

    /// Notes the NMT state a frame of `node` reported, while measuring.
    fn track(&mut self, node: u8, state: NmtState, from_pres: bool) {
        if let Some((t, cycle0, t0)) = self.track.as_mut() {
            let cycle = self.cycles.saturating_sub(*cycle0 + 1);
            let at = sys::monotonic_ns().saturating_sub(*t0);
            t.observe(node, state, cycle, at, from_pres);
        }
    }

    /// Takes one queued frame, if any (true when there was one).
    fn take_one(&mut self, last: &mut Stamps) -> bool {
        let got = match self.link.recv(&mut self.rx) {
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
        // Without a kernel stamp, now: still after the frame came.
        let rx_real = stamps.soft.unwrap_or_else(realtime_ns);
        if let Some(ring) = self.capture.as_mut() {
            ring.push(rx_real, &self.rx[..got.len]);
        }
        let r = match decode(&self.rx[..got.len]) {
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
                let k = self.index_of(p.node).expect("checked");
                let b = &mut self.books[k];
                b.state = Some(p.nmt);
                match b.poll.take(rx_real) {
                    PresMatch::Answered => {
                        b.counts.answered += 1;
                        last.soft = last.soft.max(Some(rx_real));
                        last.hw = last.hw.max(stamps.hw);
                    }
                    PresMatch::Late => b.counts.late += 1,
                    PresMatch::Stale => self.counts.stale_pres += 1,
                }
                self.track(p.node, p.nmt, true);
            }
            Frame::ASnd(ASnd {
                src,
                dest: MN_NODE,
                service,
            }) if self.index_of(src).is_some() => {
                let k = self.index_of(src).expect("checked");
                let b = &mut self.books[k];
                match service {
                    ASndService::IdentResponse(i) => {
                        b.mac = Some(r.src_mac);
                        b.state = Some(i.nmt);
                        self.counts.ident_responses += 1;
                    }
                    ASndService::StatusResponse(s) => {
                        b.state = Some(s.nmt);
                        self.counts.status_responses += 1;
                        self.track(src, s.nmt, false);
                    }
                    _ => self.counts.foreign += 1,
                }
            }
            _ => self.counts.foreign += 1,
        }
        true
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
                awaited = self.books.iter().filter(|b| b.poll.awaited()).count();
                if awaited == 0 {
                    break;
                }
            }
        }
        for b in self.books.iter_mut() {
            if b.poll.time_out() {
                b.counts.missed += 1;
            }
        }
    }

    /// Runs one cycle for `release`; see the module doc.
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
        let soc_sent = self.link.send_soc(&self.tx[..n]).is_ok();
        if !soc_sent {
            self.counts.soc_send_errors += 1;
        }
        let (mono_after, real_after) = (sys::monotonic_ns(), realtime_ns());
        let stamp = self.link.soc_stamp();
        if stamp.soft_ns.is_none() {
            self.counts.soc_unstamped += 1;
        }
        let soc_real = stamp.soft_ns.unwrap_or(real_after);
        let soc_mono = (mono_after as i64 + (soc_real as i64 - real_after as i64)) as u64;
        if soc_sent {
            if let Some(ring) = self.capture.as_mut() {
                ring.push(soc_real, &self.tx[..n]);
            }
        }
        // The polls.
        let per = usize::from(self.cfg.out_bytes);
        let cns = self.books.len();
        if chained {
            for (k, share) in self.out.chunks_exact_mut(per.max(1)).enumerate() {
                if per > 0 && k < cns {
                    share.fill(0);
                    share[0] = tag;
                }
            }
            let len = cns * per;
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
            let sent_at = realtime_ns();
            for b in self.books.iter_mut() {
                b.counts.polls += 1;
                b.poll.poll(sent_at);
            }
            if !self.send_tx(n) {
                self.counts.send_errors += 1;
            }
            let slots = (cns as u64).saturating_sub(1) * self.cfg.chain_step_ns;
            let deadline = sys::monotonic_ns() + self.cfg.response_timeout_ns + slots;
            self.collect(deadline, cns, &mut last);
        } else {
            for k in 0..cns {
                if per > 0 {
                    self.out[..per].fill(0);
                    self.out[0] = tag;
                }
                let b = &self.books[k];
                let (node, dst) = (b.counts.node, b.mac.unwrap_or(BROADCAST_MAC));
                let preq = Frame::PReq(PReq {
                    node,
                    ms: false,
                    ea: false,
                    rd: self.state == NmtState::MS_OPERATIONAL,
                    pdo_version: 0,
                    payload: &self.out[..per],
                });
                let sent = match encode(&preq, dst, self.link.mac(), &mut self.tx) {
                    Ok(n) => {
                        // Read before the send: no answer can be earlier.
                        let b = &mut self.books[k];
                        b.counts.polls += 1;
                        b.poll.poll(realtime_ns());
                        self.send_tx(n)
                    }
                    Err(_) => false,
                };
                if !sent {
                    self.counts.send_errors += 1;
                }
                let deadline = sys::monotonic_ns() + self.cfg.response_timeout_ns;
                self.collect(deadline, 1, &mut last);
            }
        }
        // SoA, and the MN's own ASnd.
        let (service, target) = match slot {
            AsyncSlot::Status(k) => (RequestedService::STATUS_REQUEST, k),
            AsyncSlot::Command(..) => (RequestedService::NO_SERVICE, MN_NODE),
        };
        self.send_soa(service, target);
        if let AsyncSlot::Command(node, id) = slot {
            let dst = self.book(node).and_then(|b| b.mac).unwrap_or(MAC_ASND);
            let cmd = Frame::ASnd(ASnd {
                dest: node,
                src: MN_NODE,
                service: ASndService::NmtCommand(NmtCommand { id, data: &[] }),
            });
            self.send(&cmd, dst);
        }
        Cycle {
            soc_mono,
            soc_real,
            soc_hw: stamp.hw_ns,
            last_pres: last,
            soa_mono: sys::monotonic_ns(),
        }
    }

    /// Runs the next isochronous cycle on the one SoC schedule (made at the
    /// first call, a cycle from now): sleeps to its release (passing over
    /// those the spacing floor forbids), runs the cycle, accounts it.
    pub fn iso_cycle(&mut self, slot: AsyncSlot, chained: bool) -> (Cycle, CycleSample) {
        self.grid();
        let release = self.schedule.as_mut().expect("made").next_release();
        sleep_until(release);
        let wake = sys::monotonic_ns();
        let c = self.cycle(release, slot, chained);
        let s = self
            .schedule
            .as_mut()
            .expect("made")
            .complete(wake, c.soc_mono, c.soa_mono);
        (c, s)
    }

    /// The one schedule's grid, `(t0, period)`: made now, a cycle from
    /// now, if there is none yet.
    pub fn grid(&mut self) -> (u64, u64) {
        let period = self.cfg.period_ns;
        let floor = self.cfg.spacing_floor_ns;
        let base = &mut self.relative_base;
        let s = self.schedule.get_or_insert_with(|| {
            let s = SocSchedule::new(sys::monotonic_ns() + period, period, floor);
            *base = s.t0();
            s
        });
        (s.t0(), s.period())
    }

    /// The next StatusRequest's CN, round robin.
    fn status_slot(&mut self) -> AsyncSlot {
        let k = self.status_next % self.books.len();
        self.status_next = k + 1;
        AsyncSlot::Status(self.books[k].counts.node)
    }

    /// Every CN's counts and the MN's start afresh (a new phase).
    fn counts_afresh(&mut self) {
        for b in self.books.iter_mut() {
            let node = b.counts.node;
            b.counts = CnCounts {
                node,
                ..CnCounts::default()
            };
            b.poll.reset();
        }
        self.counts = MnCounts::default();
    }

    fn send_soa(&mut self, service: RequestedService, target: u8) {
        let soa = Frame::Soa(Soa {
            nmt: self.state,
            ea: false,
            er: false,
            service,
            target,
            epl_version: EPL_VERSION,
        });
        self.send(&soa, MAC_SOA);
    }

    /// Brings every CN to OPERATIONAL within `within_ns` (see the module
    /// doc), or fails naming each CN that did not get there and the state
    /// it was last seen in. Counts start afresh afterwards.
    pub fn bring_up(&mut self, within_ns: u64, stop: &AtomicBool) -> Result<BringUp> {
        let start = sys::monotonic_ns();
        let deadline = start + within_ns;
        let mut last = Stamps::default();
        // Identification: the reduced cycle.
        self.state = NmtState::MS_PRE_OPERATIONAL_1;
        self.drain(&mut last);
        while let Some(k) = self.books.iter().position(|b| b.mac.is_none()) {
            let node = self.books[k].counts.node;
            if sys::monotonic_ns() >= deadline || stop.load(Relaxed) {
                return Err(self.not_up(within_ns, stop));
            }
            self.send_soa(RequestedService::IDENT_REQUEST, node);
            let until = (sys::monotonic_ns() + IDENT_WAIT_NS).min(deadline);
            while self.books[k].mac.is_none() {
                let now = sys::monotonic_ns();
                if now >= until {
                    break;
                }
                if self.link.wait(Some(until - now)).unwrap_or(false) {
                    self.drain(&mut last);
                }
            }
        }
        let identified_ns = sys::monotonic_ns() - start;
        // Isochronous cycles until every CN is operational.
        self.state = NmtState::MS_PRE_OPERATIONAL_2;
        let mut cycles = 0u64;
        let mut cursor = 0usize;
        loop {
            let state = |b: &Book| b.state;
            if self
                .books
                .iter()
                .all(|b| state(b) == Some(NmtState::CS_OPERATIONAL))
            {
                break;
            }
            if self.books.iter().all(|b| {
                matches!(
                    state(b),
                    Some(NmtState::CS_READY_TO_OPERATE | NmtState::CS_OPERATIONAL)
                )
            }) {
                self.state = NmtState::MS_READY_TO_OPERATE;
            }
            if sys::monotonic_ns() >= deadline || stop.load(Relaxed) {
                return Err(self.not_up(within_ns, stop));
            }
            let slot = self.next_command(&mut cursor, cycles);
            self.iso_cycle(slot, false);
            cycles += 1;
        }
        self.state = NmtState::MS_OPERATIONAL;
        self.drain(&mut last);
        self.counts_afresh();
        Ok(BringUp {
            identified_ns,
            operational_ns: sys::monotonic_ns() - start,
            cycles,
        })
    }

    /// The asynchronous slot of a bring-up cycle: the next NMT command a CN
    /// needs (round robin from `cursor`), else a StatusRequest.
    fn next_command(&mut self, cursor: &mut usize, cycle: u64) -> AsyncSlot {
        let n = self.books.len();
        for i in 0..n {
            let k = (*cursor + i) % n;
            let b = &mut self.books[k];
            let id = match b.state {
                Some(NmtState::CS_PRE_OPERATIONAL_2) => NmtCommandId::ENABLE_READY_TO_OPERATE,
                Some(NmtState::CS_READY_TO_OPERATE) => NmtCommandId::START_NODE,
                _ => continue,
            };
            if b.commanded.is_some_and(|c| cycle < c + COMMAND_AGAIN) {
                continue;
            }
            b.commanded = Some(cycle);
            *cursor = k + 1;
            return AsyncSlot::Command(b.counts.node, id);
        }
        self.status_slot()
    }

    /// The error of a bring-up that did not finish.
    fn not_up(&self, within_ns: u64, stop: &AtomicBool) -> anyhow::Error {
        if stop.load(Relaxed) {
            return anyhow::anyhow!("interrupted while bringing the CNs up");
        }
        let why: Vec<String> = self
            .books
            .iter()
            .filter(|b| b.state != Some(NmtState::CS_OPERATIONAL))
            .map(|b| match (b.mac, b.state) {
                (None, _) => format!("CN {} never answered its IdentRequest", b.counts.node),
                (Some(_), Some(s)) => format!("CN {} is in {}", b.counts.node, s),
                (Some(_), None) => format!("CN {} was identified, then went silent", b.counts.node),
            })
            .collect();
        anyhow::anyhow!(
            "the CNs did not all reach NMT_CS_OPERATIONAL within {}: {}; check that the CNs run and answer node ids {}",
            jitterlab_core::units::format_duration_exact(within_ns),
            why.join("; "),
            self.cfg
                .nodes
                .iter()
                .map(u8::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )
    }

    /// Measures from the first release of the one schedule at or after
    /// `first` for `releases` releases (or until `stop`), calling
    /// `on_cycle` after each cycle with what it measured and its schedule
    /// sample; the StatusRequests go round robin. Counts, NMT tracking and
    /// the SoC spacing start afresh here.
    ///
    /// The measurement starts at a release of the schedule, a cycle or two
    /// after the runner's start; the runner raises `stop` at its start +
    /// the duration. A `stop` raised at or after `deadline` is that end,
    /// and the run still serves its `releases`; one raised before it (an
    /// interruption) ends the run after the cycle.
    pub fn run(
        &mut self,
        first: u64,
        releases: Option<u64>,
        stop: &AtomicBool,
        deadline: Option<u64>,
        on_cycle: &mut dyn FnMut(&Cycle, &CycleSample),
    ) -> Measured {
        self.state = NmtState::MS_OPERATIONAL;
        let mut last = Stamps::default();
        self.drain(&mut last);
        self.counts_afresh();
        self.grid();
        let start = self
            .schedule
            .as_mut()
            .expect("made")
            .start_measurement(first);
        self.track = Some((
            NmtTrack::new(&self.cfg.nodes, OUTAGE_ROOM),
            self.cycles,
            start,
        ));
        loop {
            let slot = self.status_slot();
            let (c, s) = self.iso_cycle(slot, self.cfg.chained);
            on_cycle(&c, &s);
            let sched = self.schedule.as_mut().expect("made");
            sched.next_release();
            let done = releases.is_some_and(|r| sched.counts().releases >= r);
            let interrupted = stop.load(Relaxed)
                && (releases.is_none() || deadline.is_none_or(|d| sys::monotonic_ns() < d));
            if done || interrupted {
                break;
            }
        }
        let sched = self.schedule.as_ref().expect("made");
        let counts = sched.counts();
        let (mut track, ..) = self.track.take().expect("made above");
        Measured {
            schedule: ScheduleCounts {
                cycles: counts.cycles,
                releases: counts.releases,
                skipped: counts.skipped,
                overruns: counts.overruns,
            },
            soc: counts,
            floor_ns: sched.floor_ns(),
            min_soc_spacing_ns: sched.min_spacing_ns(),
            outages: track.finish(counts.cycles),
            untold_outages: track.untold(),
        }
    }

    /// Keep-alive cycles on the one schedule until a release at or after
    /// `hand_at` (read before each cycle) comes next, or `stop`.
    fn keep_cycling(&mut self, hand_at: &AtomicU64, stop: &AtomicBool) {
        self.state = NmtState::MS_OPERATIONAL;
        self.grid();
        loop {
            let next = self.schedule.as_mut().expect("made").next_release();
            if next >= hand_at.load(Relaxed) || stop.load(Relaxed) {
                return;
            }
            let slot = self.status_slot();
            self.iso_cycle(slot, false);
        }
    }
}

/// What a measurement counted on the schedule and the NMT states.
#[derive(Debug, Clone, Default)]
pub struct Measured {
    /// The runner's schedule counts.
    pub schedule: ScheduleCounts,
    /// The same, with the releases passed over for the spacing.
    pub soc: SocCounts,
    /// The spacing floor, ns.
    pub floor_ns: u64,
    /// The smallest distance between two SoCs sent, ns.
    pub min_soc_spacing_ns: Option<u64>,
    /// The CNs' outages out of NMT_CS_OPERATIONAL.
    pub outages: Vec<NmtOutage>,
    /// Outages only counted (the list was full).
    pub untold_outages: u64,
}

/// The MN cycling on its own thread between the bring-up and the
/// measurement, on the one schedule, so that the CNs keep getting SoCs
/// while the runner gets the measurement ready. The thread is made (pinned,
/// real-time) before the bring-up ends, so that taking the MN over costs
/// no thread start between two SoCs.
pub struct KeepAlive {
    grid: Option<(u64, u64)>,
    hand_at: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    give: Option<Sender<Mn>>,
    thread: JoinHandle<(Option<Mn>, Vec<String>)>,
}

impl KeepAlive {
    /// Starts the keep-alive thread on `cpu` (the measuring thread's) at
    /// SCHED_FIFO one above `priority` (the measuring thread's): the
    /// measuring thread's own set-up between preparation and release (its
    /// recorder's buffers, touched page by page, take milliseconds) must
    /// not hold a SoC back, and the keep-alive thread sleeps between its
    /// frames. It waits for an MN ([`KeepAlive::keep`]).
    pub fn spawn(cpu: usize, priority: i32) -> Result<KeepAlive> {
        let priority = (priority + 1).min(99);
        let hand_at = Arc::new(AtomicU64::new(u64::MAX));
        let stop = Arc::new(AtomicBool::new(false));
        let (h, s) = (Arc::clone(&hand_at), Arc::clone(&stop));
        let (ready, up) = std::sync::mpsc::channel();
        let (give, take) = std::sync::mpsc::channel::<Mn>();
        let thread = std::thread::Builder::new()
            .name("jl-pl-mn-keep".into())
            .spawn(move || {
                let warnings = setup_helper_thread("managing node (keep-alive)", cpu, priority);
                let _ = ready.send(());
                match take.recv() {
                    Ok(mut mn) => {
                        mn.keep_cycling(&h, &s);
                        (Some(mn), warnings)
                    }
                    Err(_) => (None, warnings),
                }
            })
            .context("starting the managing node's keep-alive cycles")?;
        // Born at the caller's priority, it would wait behind the caller:
        // wait until it has its own.
        let _ = up.recv();
        Ok(KeepAlive {
            grid: None,
            hand_at,
            stop,
            give: Some(give),
            thread,
        })
    }

    /// Hands `mn` (brought up) to the thread, which cycles it on its
    /// schedule until [`KeepAlive::hand_over`].
    pub fn keep(&mut self, mut mn: Mn) -> Result<()> {
        self.grid = Some(mn.grid());
        let give = self
            .give
            .take()
            .context("the keep-alive thread has an MN")?;
        give.send(mn)
            .map_err(|_| anyhow!("the managing node's keep-alive thread is gone"))
    }

    /// Hands the MN back for a measurement that may start at `t0`, with
    /// the release it starts at — the first of the schedule at or after
    /// `t0` and two cycles from now (so the keep-alive thread, which may be
    /// asleep until the next release, has handed over before it) — and
    /// the keep-alive thread's warnings.
    pub fn hand_over(self, t0: u64) -> Result<(Mn, u64, Vec<String>)> {
        let (g0, t) = self.grid.context("the keep-alive thread was given no MN")?;
        let at = t0.max(sys::monotonic_ns() + 2 * t);
        let first = g0 + at.saturating_sub(g0).div_ceil(t) * t;
        self.hand_at.store(first, Relaxed);
        let (mn, warnings) = self
            .thread
            .join()
            .map_err(|_| anyhow!("the managing node's keep-alive thread panicked"))?;
        let mn = mn.context("the keep-alive thread lost its MN")?;
        Ok((mn, first, warnings))
    }

    /// Stops it and takes its MN back, if it had one (a run that does not
    /// measure).
    pub fn stop(mut self) -> Result<Option<Mn>> {
        self.stop.store(true, Relaxed);
        drop(self.give.take());
        self.thread
            .join()
            .map(|(mn, _)| mn)
            .map_err(|_| anyhow!("the managing node's keep-alive thread panicked"))
    }
}
