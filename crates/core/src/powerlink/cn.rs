//! Emulated POWERLINK controlled nodes (CNs) that a reference managing
//! node (openPOWERLINK) brings to Operational: the NMT state machine of
//! EPSG DS 301 (7.1.4) for any list of node ids, the error signalling
//! handshake, loss of SoC / PReq, and per CN an object dictionary
//! ([`super::od`]) with an SDO server ([`super::sdo_server`]) — pure, so
//! the `netcycle` probe's CN emulator only receives, asks here (with the
//! monotonic time), encodes and sends.
//!
//! # The states a CN walks through
//!
//! ```text
//! NOT_ACTIVE ──SoA or SoC──▶ PRE_OPERATIONAL_1 ──SoC──▶ PRE_OPERATIONAL_2
//!   ──NMTEnableReadyToOperate──▶ READY_TO_OPERATE ──NMTStartNode──▶ OPERATIONAL
//! NMTStopNode (PRE_OP_2, READY, OPERATIONAL) ──▶ STOPPED
//! NMTEnterPreOperational2 (OPERATIONAL, STOPPED) ──▶ PRE_OPERATIONAL_2
//! loss of SoC / PReq over threshold (PRE_OP_2, READY, OPERATIONAL, STOPPED) ──▶ PRE_OPERATIONAL_1
//! NMTResetNode / SwReset / ResetCommunication ──▶ silent RESET_SILENCE_NS ──▶ NOT_ACTIVE
//! NMTResetConfiguration ──▶ NOT_ACTIVE
//! ```
//!
//! A reset reloads the object dictionary: NMTResetNode, NMTSwReset and
//! NMTResetCommunication from the image 0x1010 stored (the defaults when
//! none, or after 0x1011 "load"); NMTResetConfiguration keeps the values
//! and applies the mappings again, as openPOWERLINK does. So after a
//! download with "save", a reset CN reports the stored 0x1020 date and
//! time in its IdentResponse and the MN skips the download.
//!
//! # What a CN answers ([`ControlledNodes::handle`]) — captures README §3
//!
//! - **PReq** to its own id (rule 6), in PRE_OPERATIONAL_2, READY_TO_OPERATE
//!   or OPERATIONAL: the RPDO mapping copies the payload into 0x6200 (and
//!   the emulator's application loops 0x6200/k back to 0x6000/k), and
//!   a **PRes** carries the TPDO mapping's bytes (Size = the mapped bytes:
//!   0 until the MN maps something), its NMT state, RD only in
//!   OPERATIONAL, PDOVersion 0x1800/2, and RS/PR when SDO frames wait.
//! - **PResMN** (PollResponse Chaining, EPSG DS 302-C), when configured
//!   chained: every polled CN answers, the k-th `(k-1) × chain_step_ns`
//!   after it, its share being `out_bytes` of the PResMN in node order.
//! - **SoA** naming its id, never another's (rule 10): IdentRequest → an
//!   **IdentResponse**, StatusRequest → a **StatusResponse**, both to node
//!   255 and the ASnd multicast (rule 1); UnspecifiedInvite → its next SDO
//!   frame, to node 240, one per invitation (rule 11).
//! - **ER/EC** (rule 7): EC is set at power-up. On a StatusRequest the CN
//!   sends the response it has (with the EC it has), then looks at ER: a
//!   change 0→1 sets EC, 1→0 clears it, so the MN sees it in the next one.
//! - **ASnd NMTCommand** to its id or to 255, whatever SoA came before
//!   (rule 14); **ASnd SDO** to its id or 255, in every state but
//!   NOT_ACTIVE and the resets (the MN configures in PRE_OPERATIONAL_1).
//!
//! # Loss of SoC and PReq (rule 24)
//!
//! A SoC not received within 0x1006 (µs) + 0x1C14 (ns) of the last one is
//! a loss of SoC (again each such time while none comes; not watched while
//! 0x1006 is 0, in PRE_OPERATIONAL_2 and before); a SoA in READY_TO_OPERATE
//! or OPERATIONAL with no PReq to the CN since the SoC is a loss of PReq
//! (not when chained). Each loss adds 8 to its threshold counter
//! (0x1C0B/2, 0x1C0D/2; 0x1C0B/1, 0x1C0D/1 count them all), each cycle
//! without one takes 1 off; reaching the threshold (0x1C0B/3, 0x1C0D/3;
//! 0 turns it off) sends the CN to PRE_OPERATIONAL_1 and clears the
//! counter. The time is the caller's monotonic clock: [`ControlledNodes::tick`]
//! at [`ControlledNodes::next_deadline`] finds a SoC that did not come.
//!
//! Nothing here allocates after [`ControlledNodes::new`]: the answers go
//! into the caller's vector of [`ControlledNodes::max_answers`] capacity,
//! the frames borrow buffers made at the start.

use super::frame::*;
use super::nmt::{NmtCommandId, NmtState, RequestedService, ServiceId};
use super::od::{index, Identity, Od, Reload};
use super::sdo_server::{SdoCounts, SdoServer};
use super::{BROADCAST_NODE, EPL_VERSION, MAX_CN_NODE, MAX_PDO_PAYLOAD, MN_NODE};

/// NMT_FeatureFlags_U32 bit 0: isochronous.
pub const FEATURE_ISOCHRONOUS: u32 = 1 << 0;
/// NMT_FeatureFlags_U32 bit 2: SDO by ASnd.
pub const FEATURE_SDO_ASND: u32 = 1 << 2;
/// NMT_FeatureFlags_U32 bit 6: dynamic PDO mapping.
pub const FEATURE_DYNAMIC_PDO: u32 = 1 << 6;
/// NMT_FeatureFlags_U32 bit 18: PollResponse Chaining (EPSG DS 302-C).
pub const FEATURE_PRES_CHAINING: u32 = 1 << 18;
pub use super::od::ASYNC_MTU;
/// How long a CN stays silent in an NMTResetNode, NMTSwReset or
/// NMTResetCommunication, ns. The reference CN answered about 0.55 s after
/// the MN's broadcast NMTResetNode, and an openPOWERLINK MN that hears a
/// CN within 0.5 s of it, still in its reduced PRE_OPERATIONAL_1 cycle,
/// can stop with a full asynchronous transmit buffer (captures README,
/// caveat "PreOp1 crash"). Not applied at power-up.
pub const RESET_SILENCE_NS: u64 = 600_000_000;
/// What a loss adds to a threshold counter.
const LOSS_STEP: u64 = 8;
/// Priority of a pending SDO frame in RS/PR: generic (3).
const PR_GENERIC: u8 = 3;

/// How the emulated CNs are set up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CnConfig {
    /// The node ids emulated (1–239; sorted, repeats dropped).
    pub nodes: Vec<u8>,
    /// Output bytes per CN in a PResMN (chained).
    pub out_bytes: u16,
    /// Answer a PResMN (PollResponse Chaining) as well as a PReq.
    pub chained: bool,
    /// Chained: the time between two CNs' PRes slots, ns.
    pub chain_step_ns: u64,
    /// The PReq → PRes time each CN announces (0x1F98/3, IdentResponse), ns.
    pub response_time_ns: u32,
    /// What each CN reports as its identity.
    pub identity: Identity,
}

/// What a CN sends in answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    /// A Poll Response.
    PRes,
    /// An ASnd IdentResponse.
    IdentResponse,
    /// An ASnd StatusResponse.
    StatusResponse,
    /// An ASnd SDO frame to the MN.
    Sdo,
}

/// One frame to send: which CN, what, and how long after the frame that
/// asked for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    /// The answering CN.
    pub node: u8,
    /// What it sends.
    pub reply: Reply,
    /// When, after the received frame, ns (a chained PRes's slot; 0 for
    /// "at once").
    pub offset_ns: u64,
}

/// What a received frame (or the passing time) did to the emulated CNs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Handled {
    /// CNs whose NMT state changed.
    pub transitions: usize,
    /// Frames to send were put in the caller's list.
    pub answered: bool,
    /// A PReq, SoA invitation or NMTCommand for one of our CNs that its
    /// state does not answer (e.g. a PReq to a CN still in
    /// PRE_OPERATIONAL_1).
    pub refused: bool,
}

/// What the emulated CNs received and answered, over all of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CnCounts {
    /// ASnd frames received for our CNs (to their ids or 255), by
    /// ServiceID.
    pub asnd_received: [u64; 256],
    /// ASnd frames answered, by ServiceID.
    pub asnd_sent: [u64; 256],
    /// Losses of SoC.
    pub soc_losses: u64,
    /// Losses of PReq.
    pub preq_losses: u64,
    /// Thresholds reached (a CN sent back to PRE_OPERATIONAL_1).
    pub cycle_errors: u64,
}

impl Default for CnCounts {
    fn default() -> Self {
        CnCounts {
            asnd_received: [0; 256],
            asnd_sent: [0; 256],
            soc_losses: 0,
            preq_losses: 0,
            cycle_errors: 0,
        }
    }
}

/// One emulated CN.
#[derive(Debug, Clone)]
struct Node {
    id: u8,
    state: NmtState,
    /// Silent in a reset until this monotonic time.
    reset_until: Option<u64>,
    /// EC of the next StatusResponse.
    ec: bool,
    /// EC of the StatusResponse being answered.
    status_ec: bool,
    /// The ER of the last StatusRequest.
    er: bool,
    od: Od,
    sdo: SdoServer,
    /// The PRes payload, filled from the TPDO mapping.
    pres: Vec<u8>,
    /// The last SoC, monotonic ns.
    last_soc: Option<u64>,
    /// When a SoC is late: the time of the next loss of SoC.
    soc_deadline: Option<u64>,
    /// A loss of SoC was raised since the last SoC.
    soc_lost: bool,
    /// A PReq came since the last SoC.
    preq_seen: bool,
}

impl Node {
    fn new(id: u8, config: &CnConfig) -> Node {
        let features = FEATURE_ISOCHRONOUS
            | FEATURE_SDO_ASND
            | FEATURE_DYNAMIC_PDO
            | if config.chained {
                FEATURE_PRES_CHAINING
            } else {
                0
            };
        Node {
            id,
            state: NmtState::CS_NOT_ACTIVE,
            reset_until: None,
            ec: true,
            status_ec: true,
            er: false,
            od: Od::new(id, &config.identity, features, config.response_time_ns),
            sdo: SdoServer::new(),
            pres: vec![0; MAX_PDO_PAYLOAD],
            last_soc: None,
            soc_deadline: None,
            soc_lost: false,
            preq_seen: false,
        }
    }

    /// SoC timeout: 0x1006 (µs) + 0x1C14 (ns), or `None` when 0x1006 is 0.
    fn soc_timeout(&self) -> Option<u64> {
        match self.od.get(index::CYCLE_LEN, 0) {
            0 => None,
            us => Some(us * 1000 + self.od.get(index::LOSS_TOLERANCE, 0)),
        }
    }

    /// Counts a loss of the frame `counters` (0x1C0B or 0x1C0D); true when
    /// its threshold is reached.
    fn loss(&mut self, counters: u16) -> bool {
        let all = self.od.get(counters, 1);
        self.od.set(counters, 1, all.wrapping_add(1));
        let threshold = self.od.get(counters, 3);
        if threshold == 0 {
            // Threshold counting is off (openPOWERLINK's errhndk.c too).
            return false;
        }
        let count = self.od.get(counters, 2) + LOSS_STEP;
        let reached = count >= threshold;
        self.od.set(counters, 2, if reached { 0 } else { count });
        reached
    }

    /// A cycle without a loss of the frame `counters`.
    fn no_loss(&mut self, counters: u16) {
        let count = self.od.get(counters, 2);
        self.od.set(counters, 2, count.saturating_sub(1));
    }

    fn rs(&self) -> (u8, u8) {
        match self.sdo.pending() {
            0 => (0, 0),
            n => (n, PR_GENERIC),
        }
    }
}

/// The emulated CNs and their NMT states.
#[derive(Debug, Clone)]
pub struct ControlledNodes {
    config: CnConfig,
    nodes: Vec<Node>,
    /// Node id → index in `nodes` (or `u8::MAX`).
    slot: [u8; 256],
    counts: CnCounts,
    /// The time of the frame being handled, monotonic ns.
    now: u64,
}

impl ControlledNodes {
    /// The CNs of `config` in NOT_ACTIVE; ids out of 1–239 are dropped
    /// (none left: node 1), byte counts are clamped to
    /// C_DLL_ISOCHR_MAX_PAYL.
    pub fn new(config: CnConfig) -> ControlledNodes {
        let mut config = config;
        config.nodes.retain(|n| (1..=MAX_CN_NODE).contains(n));
        config.nodes.sort_unstable();
        config.nodes.dedup();
        if config.nodes.is_empty() {
            config.nodes.push(1);
        }
        config.out_bytes = config.out_bytes.min(MAX_PDO_PAYLOAD as u16);
        let mut slot = [u8::MAX; 256];
        let nodes: Vec<Node> = config
            .nodes
            .iter()
            .enumerate()
            .map(|(i, &id)| {
                slot[usize::from(id)] = i as u8;
                Node::new(id, &config)
            })
            .collect();
        ControlledNodes {
            config,
            nodes,
            slot,
            counts: CnCounts::default(),
            now: 0,
        }
    }

    /// The set-up.
    pub fn config(&self) -> &CnConfig {
        &self.config
    }

    /// The most answers one frame can ask for (a PResMN: every CN): give
    /// [`ControlledNodes::handle`] a vector of this capacity and it never
    /// allocates.
    pub fn max_answers(&self) -> usize {
        self.nodes.len()
    }

    /// True for a node id emulated here.
    pub fn is_ours(&self, node: u8) -> bool {
        self.slot[usize::from(node)] != u8::MAX
    }

    fn at(&self, node: u8) -> Option<usize> {
        match self.slot[usize::from(node)] {
            u8::MAX => None,
            i => Some(usize::from(i)),
        }
    }

    /// The NMT state of `node`, or `None` when it is not emulated here.
    pub fn state(&self, node: u8) -> Option<NmtState> {
        self.at(node).map(|i| self.nodes[i].state)
    }

    /// Every emulated CN's id and state, in node order.
    pub fn states(&self) -> impl Iterator<Item = (u8, NmtState)> + '_ {
        self.nodes.iter().map(|n| (n.id, n.state))
    }

    /// The object dictionary of `node`.
    pub fn od(&self, node: u8) -> Option<&Od> {
        self.at(node).map(|i| &self.nodes[i].od)
    }

    /// The EC flag `node`'s next StatusResponse carries.
    pub fn ec(&self, node: u8) -> Option<bool> {
        self.at(node).map(|i| self.nodes[i].ec)
    }

    /// ASnd and loss counts, over every CN.
    pub fn counts(&self) -> &CnCounts {
        &self.counts
    }

    /// The SDO servers' counts, summed over every CN.
    pub fn sdo_counts(&self) -> SdoCounts {
        let mut all = SdoCounts::default();
        for n in &self.nodes {
            all.add(n.sdo.counts());
        }
        all
    }

    fn set(&mut self, i: usize, to: NmtState, h: &mut Handled) {
        let n = &mut self.nodes[i];
        if n.state != to {
            n.state = to;
            h.transitions += 1;
        }
    }

    /// The earliest monotonic time at which [`ControlledNodes::tick`] has
    /// something to do (a reset ends, a SoC is overdue), if any.
    pub fn next_deadline(&self) -> Option<u64> {
        self.nodes
            .iter()
            .flat_map(|n| [n.reset_until, n.soc_deadline])
            .flatten()
            .min()
    }

    /// What the passing time does at monotonic `now_ns`: resets end, late
    /// SoCs are lost.
    pub fn tick(&mut self, now_ns: u64) -> Handled {
        let mut h = Handled::default();
        self.now = now_ns;
        for i in 0..self.nodes.len() {
            if self.nodes[i].reset_until.is_some_and(|t| now_ns >= t) {
                self.nodes[i].reset_until = None;
                self.set(i, NmtState::CS_NOT_ACTIVE, &mut h);
            }
            while self.nodes[i].soc_deadline.is_some_and(|t| now_ns >= t) {
                let n = &mut self.nodes[i];
                let step = n.soc_timeout().unwrap_or(u64::MAX);
                n.soc_deadline = n.soc_deadline.and_then(|t| t.checked_add(step));
                if !matches!(
                    n.state,
                    NmtState::CS_READY_TO_OPERATE | NmtState::CS_OPERATIONAL | NmtState::CS_STOPPED
                ) {
                    continue;
                }
                n.soc_lost = true;
                self.counts.soc_losses += 1;
                if n.loss(index::LOSS_SOC) {
                    self.cycle_error(i, &mut h);
                }
            }
        }
        h
    }

    /// The threshold of a loss counter was reached: back to
    /// PRE_OPERATIONAL_1.
    fn cycle_error(&mut self, i: usize, h: &mut Handled) {
        self.counts.cycle_errors += 1;
        self.set(i, NmtState::CS_PRE_OPERATIONAL_1, h);
    }

    /// Runs `frame`, received at monotonic `now_ns`, through every
    /// emulated CN: state changes, and the frames to send, appended to
    /// `answers` after clearing it (in the order to send them).
    pub fn handle(&mut self, frame: &Frame<'_>, now_ns: u64, answers: &mut Vec<Answer>) -> Handled {
        answers.clear();
        let mut h = self.tick(now_ns);
        match frame {
            Frame::Soc(_) => {
                for i in 0..self.nodes.len() {
                    let n = &mut self.nodes[i];
                    if n.reset_until.is_some() {
                        continue;
                    }
                    if !n.soc_lost && n.last_soc.is_some() {
                        n.no_loss(index::LOSS_SOC);
                    }
                    n.soc_lost = false;
                    n.preq_seen = false;
                    n.last_soc = Some(now_ns);
                    n.soc_deadline = n.soc_timeout().map(|t| now_ns + t);
                    match n.state {
                        NmtState::CS_NOT_ACTIVE => {
                            self.set(i, NmtState::CS_PRE_OPERATIONAL_1, &mut h)
                        }
                        NmtState::CS_PRE_OPERATIONAL_1 => {
                            self.set(i, NmtState::CS_PRE_OPERATIONAL_2, &mut h)
                        }
                        _ => {}
                    }
                }
            }
            Frame::PReq(p) => {
                if let Some(i) = self.at(p.node) {
                    let n = &mut self.nodes[i];
                    if n.reset_until.is_some() {
                    } else if polled(n.state) {
                        n.preq_seen = true;
                        n.od.take_rpdo(p.payload);
                        answers.push(Answer {
                            node: p.node,
                            reply: Reply::PRes,
                            offset_ns: 0,
                        });
                    } else {
                        h.refused = true;
                    }
                }
            }
            Frame::PRes(p) if p.is_pres_mn() && self.config.chained => {
                let out = usize::from(self.config.out_bytes);
                let mut slot = 0u64;
                for (k, n) in self.nodes.iter_mut().enumerate() {
                    if n.reset_until.is_some() || !polled(n.state) {
                        continue;
                    }
                    n.preq_seen = true;
                    let at = k * out;
                    n.od.take_rpdo(p.payload.get(at..at + out).unwrap_or(&[]));
                    answers.push(Answer {
                        node: n.id,
                        reply: Reply::PRes,
                        offset_ns: slot * self.config.chain_step_ns,
                    });
                    slot += 1;
                }
            }
            Frame::Soa(s) => self.soa(s, answers, &mut h),
            Frame::ASnd(a) => self.asnd(a, &mut h),
            _ => {}
        }
        // The PRes payloads, from the mappings (after the RPDO copy).
        for a in answers.iter() {
            if a.reply == Reply::PRes {
                if let Some(i) = self.at(a.node) {
                    let n = &mut self.nodes[i];
                    n.od.fill_tpdo(&mut n.pres);
                }
            }
        }
        h.answered = !answers.is_empty();
        h
    }

    fn soa(&mut self, s: &Soa, answers: &mut Vec<Answer>, h: &mut Handled) {
        for i in 0..self.nodes.len() {
            let n = &mut self.nodes[i];
            if n.reset_until.is_some() {
                continue;
            }
            match n.state {
                NmtState::CS_NOT_ACTIVE => self.set(i, NmtState::CS_PRE_OPERATIONAL_1, h),
                NmtState::CS_READY_TO_OPERATE | NmtState::CS_OPERATIONAL
                    if !self.config.chained =>
                {
                    if n.preq_seen {
                        n.no_loss(index::LOSS_PREQ);
                    } else {
                        self.counts.preq_losses += 1;
                        if n.loss(index::LOSS_PREQ) {
                            self.cycle_error(i, h);
                        }
                    }
                    self.nodes[i].preq_seen = false;
                }
                _ => {}
            }
        }
        let Some(i) = self.at(s.target) else {
            return;
        };
        let n = &mut self.nodes[i];
        if n.reset_until.is_some() {
            return;
        }
        let reply = match s.service {
            RequestedService::IDENT_REQUEST => Some(Reply::IdentResponse),
            RequestedService::STATUS_REQUEST => {
                // The response as prepared, then ER looked at: the change
                // shows in the next response.
                n.status_ec = n.ec;
                if s.er != n.er {
                    n.er = s.er;
                    n.ec = s.er;
                }
                Some(Reply::StatusResponse)
            }
            RequestedService::UNSPECIFIED_INVITE => n.sdo.next_frame().map(|_| Reply::Sdo),
            _ => None,
        };
        match reply {
            Some(reply) => {
                let service = match reply {
                    Reply::IdentResponse => ServiceId::IDENT_RESPONSE,
                    Reply::StatusResponse => ServiceId::STATUS_RESPONSE,
                    _ => ServiceId::SDO,
                };
                self.counts.asnd_sent[usize::from(service.0)] += 1;
                answers.push(Answer {
                    node: s.target,
                    reply,
                    offset_ns: 0,
                });
            }
            None => h.refused = true,
        }
    }

    fn asnd(&mut self, a: &ASnd<'_>, h: &mut Handled) {
        let (first, last) = match (a.dest, self.at(a.dest)) {
            (BROADCAST_NODE, _) => (0, self.nodes.len()),
            (_, Some(i)) => (i, i + 1),
            _ => return,
        };
        let service = match a.service {
            ASndService::IdentResponse(_) => ServiceId::IDENT_RESPONSE,
            ASndService::StatusResponse(_) => ServiceId::STATUS_RESPONSE,
            ASndService::NmtCommand(_) => ServiceId::NMT_COMMAND,
            ASndService::Sdo(_) => ServiceId::SDO,
            ASndService::Other { id, .. } => id,
        };
        self.counts.asnd_received[usize::from(service.0)] += 1;
        for i in first..last {
            match &a.service {
                ASndService::NmtCommand(c) => self.command(i, c.id, h),
                ASndService::Sdo(sdo) => {
                    let n = &mut self.nodes[i];
                    if n.reset_until.is_some() || n.state == NmtState::CS_NOT_ACTIVE {
                        h.refused = true;
                    } else {
                        n.sdo.receive(sdo, &mut n.od);
                    }
                }
                _ => {}
            }
        }
    }

    /// Applies NMT state command `id` to the CN at `i`.
    fn command(&mut self, i: usize, id: NmtCommandId, h: &mut Handled) {
        let now = self.nodes[i].state;
        if self.nodes[i].reset_until.is_some() {
            h.refused = true;
            return;
        }
        let to = match (id, now) {
            (NmtCommandId::ENABLE_READY_TO_OPERATE, NmtState::CS_PRE_OPERATIONAL_2) => {
                NmtState::CS_READY_TO_OPERATE
            }
            (NmtCommandId::START_NODE, NmtState::CS_READY_TO_OPERATE) => NmtState::CS_OPERATIONAL,
            (
                NmtCommandId::STOP_NODE,
                NmtState::CS_PRE_OPERATIONAL_2
                | NmtState::CS_READY_TO_OPERATE
                | NmtState::CS_OPERATIONAL,
            ) => NmtState::CS_STOPPED,
            (
                NmtCommandId::ENTER_PRE_OPERATIONAL_2,
                NmtState::CS_OPERATIONAL | NmtState::CS_STOPPED,
            ) => NmtState::CS_PRE_OPERATIONAL_2,
            (NmtCommandId::RESET_CONFIGURATION, _) => {
                self.reset(i, Reload::Keep);
                NmtState::CS_NOT_ACTIVE
            }
            (
                NmtCommandId::RESET_NODE
                | NmtCommandId::RESET_COMMUNICATION
                | NmtCommandId::SW_RESET,
                _,
            ) => {
                self.reset(i, Reload::Stored);
                // Silent until `tick` ends the reset.
                let n = &mut self.nodes[i];
                n.reset_until = Some(self.now + RESET_SILENCE_NS);
                if id == NmtCommandId::RESET_COMMUNICATION {
                    NmtState::GS_RESET_COMMUNICATION
                } else {
                    NmtState::GS_RESET_APPLICATION
                }
            }
            _ => {
                h.refused = true;
                return;
            }
        };
        self.set(i, to, h);
    }

    /// A reset of the CN at `i`: its OD reloaded as `reload` says, its SDO
    /// connection closed, its loss watch stopped.
    fn reset(&mut self, i: usize, reload: Reload) {
        let n = &mut self.nodes[i];
        n.od.reset(reload);
        n.sdo.close();
        n.last_soc = None;
        n.soc_deadline = None;
        n.soc_lost = false;
        n.preq_seen = false;
    }

    /// The frame of `answer`, borrowing the CN's buffers; send it to
    /// [`Frame::multicast_mac`].
    pub fn frame(&self, answer: &Answer) -> Frame<'_> {
        let Some(i) = self.at(answer.node) else {
            unreachable!("answers name only our nodes");
        };
        let n = &self.nodes[i];
        let node = n.id;
        let nmt = n.state;
        let (rs, pr) = n.rs();
        match answer.reply {
            Reply::PRes => Frame::PRes(PRes {
                node,
                nmt,
                ms: false,
                en: false,
                rd: nmt == NmtState::CS_OPERATIONAL,
                pr,
                rs,
                pdo_version: n.od.get(index::TPDO_COMM, 2) as u8,
                payload: &n.pres[..n.od.tpdo_len()],
            }),
            Reply::IdentResponse => Frame::ASnd(ASnd {
                dest: BROADCAST_NODE,
                src: node,
                service: ASndService::IdentResponse(IdentResponse {
                    en: false,
                    ec: false,
                    pr,
                    rs,
                    nmt,
                    epl_version: EPL_VERSION,
                    feature_flags: n.od.get(index::FEATURE_FLAGS, 0) as u32,
                    mtu: n.od.get(index::CYCLE_TIMING, 8) as u16,
                    poll_in_size: n.od.get(index::CYCLE_TIMING, 4) as u16,
                    poll_out_size: n.od.get(index::CYCLE_TIMING, 5) as u16,
                    response_time: n.od.get(index::CYCLE_TIMING, 3) as u32,
                    device_type: n.od.get(index::DEVICE_TYPE, 0) as u32,
                    vendor_id: n.od.get(index::IDENTITY, 1) as u32,
                    product_code: n.od.get(index::IDENTITY, 2) as u32,
                    revision: n.od.get(index::IDENTITY, 3) as u32,
                    serial: n.od.get(index::IDENTITY, 4) as u32,
                    verify_conf_date: n.od.get(index::VERIFY_CONF, 1) as u32,
                    verify_conf_time: n.od.get(index::VERIFY_CONF, 2) as u32,
                }),
            }),
            Reply::StatusResponse => Frame::ASnd(ASnd {
                dest: BROADCAST_NODE,
                src: node,
                service: ASndService::StatusResponse(StatusResponse {
                    en: false,
                    ec: n.status_ec,
                    pr,
                    rs,
                    nmt,
                    static_errors: 0,
                    errors: &[],
                }),
            }),
            Reply::Sdo => Frame::ASnd(ASnd {
                dest: MN_NODE,
                src: node,
                service: ASndService::Sdo(n.sdo.sent_frame()),
            }),
        }
    }
}

/// True for the states in which a CN is polled (answers a PReq or its
/// PResMN slot).
fn polled(s: NmtState) -> bool {
    matches!(
        s,
        NmtState::CS_PRE_OPERATIONAL_2 | NmtState::CS_READY_TO_OPERATE | NmtState::CS_OPERATIONAL
    )
}

#[cfg(test)]
#[path = "cn_tests.rs"]
mod tests;
