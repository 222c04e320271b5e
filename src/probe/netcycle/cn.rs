//! The CN emulator: one real-time loop answering for a list of node ids
//! through `jitterlab_core::powerlink::cn` — receive a frame (blocking, up
//! to the CNs' next deadline: the end of a reset, an overdue SoC; at most
//! a short timeout so that the stop flag is seen), run it through the CNs'
//! state machines with the monotonic time, encode and send what they
//! answer — and stamping every SoC it receives. The report counts every
//! ASnd service and every SDO command received and answered, the SDO
//! aborts by code, and the losses of SoC and PReq.
//!
//! With `--cn-wait busy-poll` ([`CnEmulator::polling`]) it spins on its
//! receive ring for [`POLL_NS`] after each frame instead of sleeping, as a
//! hardware CN answers within µs: no wake-up, so the managing node's send
//! needs no interrupt to the emulator's CPU (on a VM each one is a VM exit,
//! three times [Baumgartner POWERLINK]'s per-PRes budget; see BENCHMARKS.md). Between
//! cycles it sleeps, so the kernel never throttles it.
//!
//! Each SoC's kernel receive stamp is handed to whoever measures
//! ([`SocRx`]: the managing node's thread through a lock-free queue when
//! both roles run here, the CN's own recorder with `--role cn`), with the
//! SoC's RelativeTime, which says which release of the MN's schedule it
//! opened (the MN fills it with the release time since its first release,
//! in µs). With `--pcap` every frame received (kernel stamp) and every
//! frame the CNs send (stamped with the clock read right after the send)
//! is copied into the capture ring, so the capture is the segment as the
//! CN side sees it and `jitterlab analyze` finds every PRes. Chained PRes go out in their slots: the emulator spins until a
//! slot's offset after the PResMN has passed (a few µs; on a veth pair
//! each send takes longer than a slot, so it rarely spins).
//!
//! The loop allocates nothing: the state machine, the answer list and the
//! frame buffers are made by [`CnEmulator::new`], before it runs.
//!
//! The documents cited here are listed in `docs/design.md`.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use std::collections::BTreeMap;

use jitterlab_core::powerlink::cn::{Answer, CnConfig, ControlledNodes};
use jitterlab_core::powerlink::{decode, encode, Frame, NmtState, MAX_FRAME_LEN};
use jitterlab_sys as sys;
use serde::Serialize;

use super::capture::CaptureRing;
use super::link::Link;

/// How long one wait for a frame lasts before the stop flag is read again.
const WAIT_NS: u64 = 20_000_000;

/// How long a polling emulator spins after its last frame before it
/// sleeps until the next (the next cycle's SoC): a cycle's PReqs come
/// µs apart, and a thread spinning for ever at a real-time priority is
/// throttled by the kernel (`sched_rt_runtime_us`), which loses PRes.
const POLL_NS: u64 = 100_000;

/// One SoC as the CN side received it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SocRx {
    /// The SoC's RelativeTime, µs.
    pub relative_us: u64,
    /// Its receive stamp, ns (hardware when the link has hardware stamps,
    /// else the kernel's software stamp, CLOCK_REALTIME).
    pub rx_ns: u64,
}

/// What the CN emulator counted.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct CnSideCounts {
    /// POWERLINK frames received.
    pub frames: u64,
    /// SoCs among them.
    pub socs: u64,
    /// SoCs without a receive stamp (not handed over).
    pub socs_unstamped: u64,
    /// Frames sent (PRes, IdentResponse, StatusResponse, SDO).
    pub answered: u64,
    /// Sends that failed.
    pub send_errors: u64,
    /// Frames that broke the layout, dropped.
    pub malformed: u64,
    /// Frames of message types not spoken (AInv, AMNI), dropped.
    pub unsupported: u64,
    /// Requests a CN's NMT state does not answer (e.g. a PReq before
    /// PRE_OPERATIONAL_2, a command out of order).
    pub refused: u64,
    /// Receive calls that failed.
    pub receive_errors: u64,
}

/// One CN at the end.
#[derive(Debug, Clone, Serialize)]
pub struct CnNode {
    /// Node id.
    pub node: u8,
    /// Its NMT state's name.
    pub state: String,
    /// From the first frame received to this CN's NMT_CS_OPERATIONAL, ns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operational_after_ns: Option<u64>,
}

/// ASnd services and SDO commands, received and answered (`detail.cn.asnd`,
/// `detail.cn.sdo`): names as keys, only the ones seen.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Services {
    /// ASnd frames received for our CNs, by service.
    pub asnd_received: BTreeMap<String, u64>,
    /// ASnd frames sent, by service.
    pub asnd_sent: BTreeMap<String, u64>,
    /// SDO commands received, by command.
    pub sdo_received: BTreeMap<String, u64>,
    /// SDO commands answered (response or abort), by command.
    pub sdo_answered: BTreeMap<String, u64>,
    /// SDO aborts sent, by code (`0x06020000`).
    pub sdo_aborts: BTreeMap<String, u64>,
    /// SDO connections opened.
    pub sdo_connections: u64,
    /// SDO frames out of sequence, dropped.
    pub sdo_out_of_sequence: u64,
    /// Losses of SoC.
    pub soc_losses: u64,
    /// Losses of PReq.
    pub preq_losses: u64,
    /// Loss thresholds reached (a CN sent back to PRE_OPERATIONAL_1).
    pub cycle_errors: u64,
}

/// The CN side's part of the result (`detail.cn`).
#[derive(Debug, Clone, Serialize)]
pub struct CnReport {
    /// Counts.
    #[serde(flatten)]
    pub counts: CnSideCounts,
    /// ASnd services and SDO commands.
    pub services: Services,
    /// The CNs reaching NMT_CS_OPERATIONAL, every one of them: from the
    /// first frame received to the last CN operational, ns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bring_up_ns: Option<u64>,
    /// Per CN.
    pub nodes: Vec<CnNode>,
    /// The SoCs the managing node's queue had no room for.
    pub socs_not_handed_over: u64,
}

/// The CN emulator, set up.
pub struct CnEmulator {
    /// Its link.
    pub link: Link,
    cns: ControlledNodes,
    answers: Vec<Answer>,
    rx: Vec<u8>,
    tx: Vec<u8>,
    counts: CnSideCounts,
    first_frame: Option<u64>,
    operational_at: Vec<Option<u64>>,
    /// SoCs the consumer had no room for (counted by the caller's hand-over).
    pub socs_not_handed_over: u64,
    /// Spin on the link instead of sleeping until a frame comes.
    polling: bool,
}

impl CnEmulator {
    /// The emulator of `config`'s CNs on `link`, every buffer made now.
    pub fn new(link: Link, config: CnConfig) -> CnEmulator {
        let cns = ControlledNodes::new(config);
        let n = cns.config().nodes.len();
        CnEmulator {
            link,
            answers: Vec::with_capacity(cns.max_answers()),
            cns,
            rx: vec![0; MAX_FRAME_LEN],
            tx: vec![0; MAX_FRAME_LEN],
            counts: CnSideCounts::default(),
            first_frame: None,
            operational_at: vec![None; n],
            socs_not_handed_over: 0,
            polling: false,
        }
    }

    /// The emulator spinning on its link for each frame instead of
    /// sleeping until one comes (`--cn-wait busy-poll`): a frame is then
    /// answered without a wake-up, like a hardware CN's within µs. With a
    /// receive ring the spin reads memory; it runs on the emulator's own
    /// CPU, never the managing node's.
    pub fn polling(mut self, polling: bool) -> CnEmulator {
        self.polling = polling;
        self
    }

    /// Answers every frame until `stop` is raised or the monotonic time
    /// `end` passed, handing each stamped SoC to `on_soc` and, with a
    /// capture, copying every frame into it.
    pub fn run(
        &mut self,
        stop: &AtomicBool,
        end: Option<u64>,
        on_soc: &mut dyn FnMut(SocRx),
        mut capture: Option<&mut CaptureRing>,
    ) {
        let mut last_frame = 0;
        loop {
            if stop.load(Relaxed) {
                return;
            }
            let now = sys::monotonic_ns();
            if end.is_some_and(|e| now >= e) {
                return;
            }
            let h = self.cns.tick(now);
            if h.transitions > 0 {
                self.note_states(now);
            }
            let until = [end, self.cns.next_deadline()].into_iter().flatten().min();
            let wait = until.map_or(WAIT_NS, |u| u.saturating_sub(now).min(WAIT_NS));
            if self.polling && now < last_frame + POLL_NS {
                if !self.link.ready() {
                    std::hint::spin_loop();
                    continue;
                }
            } else {
                match self.link.wait(Some(wait)) {
                    Ok(true) => {}
                    Ok(false) => continue,
                    Err(_) => {
                        self.counts.receive_errors += 1;
                        continue;
                    }
                }
            }
            loop {
                let got = match self.link.recv(&mut self.rx) {
                    Ok(Some(got)) => got,
                    Ok(None) => break,
                    Err(_) => {
                        self.counts.receive_errors += 1;
                        break;
                    }
                };
                let read_at = sys::monotonic_ns();
                last_frame = read_at;
                self.first_frame.get_or_insert(read_at);
                self.counts.frames += 1;
                let stamp = match self.link.hardware() {
                    true => got.hw_ns.or(got.soft_ns),
                    false => got.soft_ns,
                };
                if let Some(c) = capture.as_deref_mut() {
                    c.push(
                        got.soft_ns.unwrap_or_else(sys::rx_timestamp::realtime_ns),
                        &self.rx[..got.len],
                    );
                }
                self.frame(got.len, stamp, read_at, on_soc, capture.as_deref_mut());
            }
        }
    }

    /// Handles the frame of `len` bytes in the receive buffer.
    fn frame(
        &mut self,
        len: usize,
        stamp: Option<u64>,
        read_at: u64,
        on_soc: &mut dyn FnMut(SocRx),
        mut capture: Option<&mut CaptureRing>,
    ) {
        let frame = match decode(&self.rx[..len]) {
            Ok(r) => r.frame,
            Err(jitterlab_core::powerlink::DecodeError::Unsupported(_)) => {
                self.counts.unsupported += 1;
                return;
            }
            Err(_) => {
                self.counts.malformed += 1;
                return;
            }
        };
        if let Frame::Soc(s) = &frame {
            self.counts.socs += 1;
            match stamp {
                Some(rx_ns) => on_soc(SocRx {
                    relative_us: s.relative_time,
                    rx_ns,
                }),
                None => self.counts.socs_unstamped += 1,
            }
        }
        let h = self.cns.handle(&frame, read_at, &mut self.answers);
        self.counts.refused += u64::from(h.refused);
        if h.transitions > 0 {
            self.note_states(read_at);
        }
        for i in 0..self.answers.len() {
            let a = self.answers[i];
            let f = self.cns.frame(&a);
            let dst = f
                .multicast_mac()
                .unwrap_or(jitterlab_core::powerlink::MAC_PRES);
            let Ok(n) = encode(&f, dst, self.link.mac(), &mut self.tx) else {
                self.counts.send_errors += 1;
                continue;
            };
            if a.offset_ns > 0 {
                // A chained PRes's slot: spin the few µs until it opens.
                let at = read_at + a.offset_ns;
                while sys::monotonic_ns() < at {
                    std::hint::spin_loop();
                }
            }
            match self.link.send(&self.tx[..n]) {
                Ok(()) => {
                    self.counts.answered += 1;
                    // The capture is the segment as the CN side sees it:
                    // its own answers too, stamped with the clock read
                    // right after the send.
                    if let Some(c) = capture.as_deref_mut() {
                        c.push(sys::rx_timestamp::realtime_ns(), &self.tx[..n]);
                    }
                }
                Err(_) => self.counts.send_errors += 1,
            }
        }
    }

    /// Notes the CNs that reached NMT_CS_OPERATIONAL at `at`.
    fn note_states(&mut self, at: u64) {
        for (i, (_, s)) in self.cns.states().enumerate() {
            if s == NmtState::CS_OPERATIONAL && self.operational_at[i].is_none() {
                self.operational_at[i] = Some(at);
            }
        }
    }

    /// The ASnd and SDO counts, named.
    fn services(&self) -> Services {
        let c = self.cns.counts();
        let sdo = self.cns.sdo_counts();
        let named = |counts: &[u64; 256], name: fn(u8) -> String| {
            counts
                .iter()
                .enumerate()
                .filter(|(_, n)| **n > 0)
                .map(|(id, n)| (name(id as u8), *n))
                .collect::<BTreeMap<_, _>>()
        };
        Services {
            asnd_received: named(&c.asnd_received, service_name),
            asnd_sent: named(&c.asnd_sent, service_name),
            sdo_received: named(&sdo.received, command_name),
            sdo_answered: named(&sdo.answered, command_name),
            sdo_aborts: sdo
                .abort_codes()
                .map(|(code, n)| (format!("{:#010x}", code.0), n))
                .chain((sdo.aborts_other > 0).then(|| ("other".to_string(), sdo.aborts_other)))
                .collect(),
            sdo_connections: sdo.connections,
            sdo_out_of_sequence: sdo.out_of_sequence,
            soc_losses: c.soc_losses,
            preq_losses: c.preq_losses,
            cycle_errors: c.cycle_errors,
        }
    }

    /// What the CN side did, for the result.
    pub fn report(&self) -> CnReport {
        let nodes: Vec<CnNode> = self
            .cns
            .states()
            .enumerate()
            .map(|(i, (node, s))| CnNode {
                node,
                state: state_name(s),
                operational_after_ns: self.operational_at[i]
                    .zip(self.first_frame)
                    .map(|(at, first)| at - first),
            })
            .collect();
        let bring_up_ns = match nodes.iter().all(|n| n.operational_after_ns.is_some()) {
            true => nodes.iter().filter_map(|n| n.operational_after_ns).max(),
            false => None,
        };
        CnReport {
            counts: self.counts,
            services: self.services(),
            bring_up_ns,
            nodes,
            socs_not_handed_over: self.socs_not_handed_over,
        }
    }
}

/// A CN state's DS 301 name, or its code.
pub fn state_name(s: NmtState) -> String {
    s.name(false)
        .map_or_else(|| format!("{:#04x}", s.0), str::to_string)
}

/// An ASnd ServiceID's name.
fn service_name(id: u8) -> String {
    match id {
        1 => "IdentResponse".into(),
        2 => "StatusResponse".into(),
        3 => "NMTRequest".into(),
        4 => "NMTCommand".into(),
        5 => "SDO".into(),
        _ => format!("service {id:#04x}"),
    }
}

/// An SDO command id's name.
fn command_name(id: u8) -> String {
    match id {
        0x01 => "WriteByIndex".into(),
        0x02 => "ReadByIndex".into(),
        0x03 => "WriteAllByIndex".into(),
        0x04 => "ReadAllByIndex".into(),
        0x31 => "WriteMultipleParameterByIndex".into(),
        0x32 => "ReadMultipleParameterByIndex".into(),
        _ => format!("command {id:#04x}"),
    }
}
