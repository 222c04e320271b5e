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
//!    right after the send, carried over to CLOCK_MONOTONIC within the
//!    clock reads around the send (`jitterlab_core::netcycle::stamp`);
//! 3. per CN, a **PReq** to the CN's MAC (learnt from its IdentResponse)
//!    carrying `out_bytes` outputs whose first byte is the cycle's tag (the
//!    cycle number's low byte, for a reader of a capture), then a wait for
//!    its **PRes** up to the response timeout — blocking in `ppoll` (against `--cn-wait busy-poll`,
//!    after spinning for the CNs' response time: `MnConfig::spin_ns`),
//!    or, `--wait busy-poll`, spinning on its receive ring. Which poll a
//!    PRes answers is told by time, whatever its payload
//!    (`jitterlab_core::powerlink::poll`): one received before this
//!    cycle's PReq to its CN was sent answers an earlier poll — **late**
//!    when that poll was missed, else stale —, never this one. With
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
//! **Bring-up** ([`Mn::bring_up`], in [`bring_up`]) comes before the
//! measurement.
//!
//! Nothing in a cycle allocates: the frame buffers, the outputs and the
//! per-CN books are made by [`Mn::new`] (design rule 2).
//!
//! The design rules cited here are in `docs/design.md`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::thread::JoinHandle;

use anyhow::{anyhow, Context, Result};
use jitterlab_core::cycle::CycleSample;
use jitterlab_core::netcycle::stamp::SendWindow;
use jitterlab_core::netcycle::{CnCounts, Wait};
use jitterlab_core::powerlink::errsig::ErrSig;
use jitterlab_core::powerlink::mn_async::{Scheduler, Wants};
use jitterlab_core::powerlink::poll::{PollBook, PresMatch};
use jitterlab_core::powerlink::sdo_client::SdoClient;
use jitterlab_core::powerlink::soc_schedule::{SocCounts, SocSchedule};
use jitterlab_core::powerlink::track::{NmtOutage, NmtTrack};
use jitterlab_core::powerlink::{
    decode, encode, ASnd, ASndService, DecodeError, Frame, IdentResponse, NetTime, NmtCommand,
    NmtCommandId, NmtState, PReq, PRes, RequestedService, Soa, Soc, BROADCAST_NODE, EPL_VERSION,
    MAC_ASND, MAC_PRES, MAC_SOA, MAC_SOC, MAX_FRAME_LEN, MN_NODE,
};
use jitterlab_sys::{self as sys, rx_timestamp::realtime_ns};
use serde::Serialize;

use super::capture::CaptureRing;
use super::link::Link;
use crate::probe::helper_thread::{setup_helper_thread, sleep_until};
use crate::probe::ScheduleCounts;

mod bring_up;
pub mod cfm;

pub use bring_up::bring_up_budget_ns;
pub use jitterlab_core::powerlink::mn_async::Slot as AsyncSlot;

/// The broadcast MAC, for a CN whose MAC is not known.
const BROADCAST_MAC: [u8; 6] = [0xff; 6];

/// Outages out of NMT_CS_OPERATIONAL a measurement keeps (more are only
/// counted).
const OUTAGE_ROOM: usize = 256;

/// How the MN runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MnConfig {
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
    /// With the blocking wait, how long after each PReq it spins on the
    /// receive ring before it sleeps, ns (0: it sleeps at once): the window
    /// a CN answering within µs is due in.
    pub spin_ns: u64,
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
    /// Its polls: which one a PRes answers.
    poll: PollBook,
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
    /// The one SoC schedule, from the bring-up's first SoC on.
    schedule: Option<SocSchedule>,
    /// The NMT states while measuring, and the cycle and monotonic time
    /// the measurement started at.
    track: Option<(NmtTrack, u64, u64)>,
    /// `--pcap` in the MN role: every frame sent and received.
    capture: Option<CaptureRing>,
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
                errsig: ErrSig::default(),
                ident: None,
                sdo: SdoClient::default(),
                conf: bring_up::Conf::default(),
            })
            .collect();
        let mut index = [0u8; 256];
        for (k, &node) in cfg.nodes.iter().enumerate() {
            index[usize::from(node)] = k as u8 + 1;
        }
        let wants = cfg
            .nodes
            .iter()
            .map(|&node| Wants {
                node,
                ..Wants::default()
            })
            .collect();
        Mn {
            link,
            books,
            tx: vec![0; MAX_FRAME_LEN],
            rx: vec![0; MAX_FRAME_LEN],
            out: vec![0; out_len.max(out_bytes)],
            state: NmtState::MS_NOT_ACTIVE,
            counts: MnCounts::default(),
            cycles: 0,
            relative_base: 0,
            schedule: None,
            track: None,
            capture: None,
            wants,
            sched: Scheduler::default(),
            index,
            last_asnd: None,
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
            t.note(node, state, cycle, at, from_pres);
        }
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
        // Without a kernel stamp, now: still after the frame came.
        let rx_real = stamps.soft.unwrap_or_else(realtime_ns);
        if let Some(ring) = self.capture.as_mut() {
            ring.push(rx_real, &rx[..got.len]);
        }
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
                dest: MN_NODE | BROADCAST_NODE,
                service,
            }) if self.index_of(src).is_some() => {
                let k = self.index_of(src).unwrap_or_default();
                self.take_asnd(k, r.src_mac, &service);
                if let ASndService::StatusResponse(st) = service {
                    self.track(src, st.nmt, false);
                }
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
        let spin_until = sys::monotonic_ns() + self.cfg.spin_ns;
        while awaited > 0 {
            let now = sys::monotonic_ns();
            if now >= deadline {
                break;
            }
            if self.cfg.wait == Wait::Blocking && now < spin_until {
                if !self.link.ready() {
                    std::hint::spin_loop();
                    continue;
                }
            } else if self.cfg.wait == Wait::Blocking {
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
        let mono_before = sys::monotonic_ns();
        let soc_sent = self.link.send_soc(&self.tx[..n]).is_ok();
        let mono_after = sys::monotonic_ns();
        let real_after = realtime_ns();
        let window = SendWindow {
            mono_before,
            mono_after,
            real_after,
            mono_last: sys::monotonic_ns(),
        };
        if !soc_sent {
            self.counts.soc_send_errors += 1;
        }
        let stamp = self.link.soc_stamp();
        if stamp.soft_ns.is_none() {
            self.counts.soc_unstamped += 1;
        }
        let soc_real = stamp.soft_ns.unwrap_or(real_after);
        let soc_mono = window.mono_of(soc_real);
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
        self.send_slot(slot);
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
        let sent = match encode(&frame, MAC_ASND, mac, &mut self.tx) {
            Ok(n) => self.send_tx(n),
            Err(_) => false,
        };
        match sent {
            true => self.counts.sdo_sent += 1,
            false => self.counts.send_errors += 1,
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

    /// Measures from the first release of the one schedule at or after
    /// `first` for `releases` releases (or until `stop`), calling
    /// `on_cycle` after each cycle with what it measured and its schedule
    /// sample; idle slots are NoService, as the reference MN's in its
    /// steady state (`mn_async`). Counts, NMT tracking and
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
            let slot = self.next_slot();
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
            let slot = self.next_slot();
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
