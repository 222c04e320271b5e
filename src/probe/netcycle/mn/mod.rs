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
//!    response timeout — blocking in `ppoll` (against `--cn-wait
//!    busy-poll`, after spinning for the CNs' response time:
//!    `MnConfig::spin_ns`), or, `--wait busy-poll`, spinning on
//!    non-blocking receives. A PRes counts when it echoes the
//!    tag: an older one (the answer to a poll that timed out) is counted
//!    **late** for its CN, against that missed poll. With
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

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use anyhow::Result;
use jitterlab_core::cycle::{CycleSample, Schedule};
use jitterlab_core::netcycle::{CnCounts, Wait};
use jitterlab_core::powerlink::{
    decode, encode, ASnd, ASndService, DecodeError, Frame, NetTime, NmtCommand, NmtCommandId,
    NmtState, PReq, PRes, RequestedService, Soa, Soc, EPL_VERSION, MAC_ASND, MAC_PRES, MAC_SOA,
    MAC_SOC, MAX_FRAME_LEN, MN_NODE,
};
use jitterlab_sys::{self as sys, rx_timestamp::realtime_ns};
use serde::Serialize;

use super::link::Link;
use crate::probe::helper_thread::sleep_until;
use crate::probe::ScheduleCounts;

/// How long the bring-up waits for one IdentResponse before it asks again.
const IDENT_WAIT_NS: u64 = 10_000_000;
/// Cycles a CN gets to take an NMT command before it is sent again.
const COMMAND_AGAIN: u64 = 8;
/// The broadcast MAC, for a CN whose MAC is not known.
const BROADCAST_MAC: [u8; 6] = [0xff; 6];

/// How the MN runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MnConfig {
    /// CNs polled, node ids 1..=cns.
    pub cns: u8,
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
    status_next: u8,
    relative_base: u64,
}

impl Mn {
    /// The MN of `cfg` on `link`, every buffer made now.
    pub fn new(link: Link, cfg: MnConfig) -> Mn {
        let n = usize::from(cfg.cns);
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
                };
                n
            ],
            tx: vec![0; MAX_FRAME_LEN],
            rx: vec![0; MAX_FRAME_LEN],
            out: vec![0; out_len.max(usize::from(cfg.out_bytes))],
            state: NmtState::MS_NOT_ACTIVE,
            counts: MnCounts::default(),
            cycles: 0,
            status_next: 1,
            relative_base: 0,
        }
        .numbered()
    }

    fn numbered(mut self) -> Mn {
        for (i, b) in self.books.iter_mut().enumerate() {
            b.counts.node = i as u8 + 1;
        }
        self
    }

    /// The per-CN counts.
    pub fn per_cn(&self) -> Vec<CnCounts> {
        self.books.iter().map(|b| b.counts.clone()).collect()
    }

    /// The MN's own counts.
    pub fn counts(&self) -> MnCounts {
        self.counts
    }

    fn book(&mut self, node: u8) -> Option<&mut Book> {
        (1..=self.cfg.cns)
            .contains(&node)
            .then(|| &mut self.books[usize::from(node) - 1])
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
        let echo_bytes = self.cfg.out_bytes > 0 && self.cfg.in_bytes > 0;
        let tag = self.cycles.wrapping_sub(1) as u8;
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
        let cns = self.cfg.cns;
        match r.frame {
            Frame::PRes(p) if (1..=cns).contains(&p.node) => {
                let b = &mut self.books[usize::from(p.node) - 1];
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
                dest: MN_NODE,
                service,
            }) if (1..=cns).contains(&src) => {
                let b = &mut self.books[usize::from(src) - 1];
                match service {
                    ASndService::IdentResponse(i) => {
                        b.mac = Some(r.src_mac);
                        b.state = Some(i.nmt);
                        self.counts.ident_responses += 1;
                    }
                    ASndService::StatusResponse(s) => {
                        b.state = Some(s.nmt);
                        self.counts.status_responses += 1;
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
        let ids = 1..=self.cfg.cns;
        if chained {
            for (k, share) in self.out.chunks_exact_mut(per.max(1)).enumerate() {
                if per > 0 && k < usize::from(self.cfg.cns) {
                    share.fill(0);
                    share[0] = tag;
                }
            }
            for b in self.books.iter_mut() {
                b.awaited = true;
                b.counts.polls += 1;
                b.missed_bit(tag, false);
            }
            let len = usize::from(self.cfg.cns) * per;
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
            let slots = u64::from(self.cfg.cns - 1) * self.cfg.chain_step_ns;
            let deadline = sys::monotonic_ns() + self.cfg.response_timeout_ns + slots;
            self.collect(deadline, usize::from(self.cfg.cns), &mut last);
        } else {
            for node in ids {
                if per > 0 {
                    self.out[..per].fill(0);
                    self.out[0] = tag;
                }
                let b = &mut self.books[usize::from(node) - 1];
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
        while let Some(node) = self.books.iter().position(|b| b.mac.is_none()) {
            let node = node as u8 + 1;
            if sys::monotonic_ns() >= deadline || stop.load(Relaxed) {
                return Err(self.not_up(within_ns, stop));
            }
            self.send_soa(RequestedService::IDENT_REQUEST, node);
            let until = (sys::monotonic_ns() + IDENT_WAIT_NS).min(deadline);
            while self.books[usize::from(node) - 1].mac.is_none() {
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
        let period = self.cfg.period_ns;
        let mut schedule = Schedule::new(sys::monotonic_ns() + period, period);
        self.relative_base = schedule.t0();
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
            let release = schedule.next_release();
            sleep_until(release);
            let wake = sys::monotonic_ns();
            let c = self.cycle(release, slot, false);
            schedule.complete(wake, c.soa_mono);
            cycles += 1;
        }
        self.state = NmtState::MS_OPERATIONAL;
        self.drain(&mut last);
        for b in self.books.iter_mut() {
            let node = b.counts.node;
            b.counts = CnCounts {
                node,
                ..CnCounts::default()
            };
            b.missed = [0; 4];
        }
        self.counts = MnCounts::default();
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
            return AsyncSlot::Command(k as u8 + 1, id);
        }
        let node = self.status_next;
        self.status_next = node % self.cfg.cns + 1;
        AsyncSlot::Status(node)
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
            "the CNs did not all reach NMT_CS_OPERATIONAL within {}: {}; check that the CNs run and answer node ids 1-{}",
            jitterlab_core::units::format_duration_exact(within_ns),
            why.join("; "),
            self.cfg.cns
        )
    }

    /// Measures from `t0` for `releases` releases (or until `stop`),
    /// calling `on_cycle` after each cycle with what it measured and its
    /// schedule sample; the StatusRequests go round robin.
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
            let node = self.status_next;
            self.status_next = node % self.cfg.cns + 1;
            let c = self.cycle(release, AsyncSlot::Status(node), self.cfg.chained);
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
