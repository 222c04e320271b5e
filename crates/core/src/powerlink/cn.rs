//! Emulated POWERLINK controlled nodes (CNs): the NMT state machine of EPSG
//! DS 301 (7.1.4) for node ids 1..=N, and what each CN answers to a frame
//! it received — pure, so the `netcycle` probe's CN emulator thread only
//! receives, asks here, encodes and sends.
//!
//! # The states a CN walks through
//!
//! ```text
//! NOT_ACTIVE ──SoA or SoC──▶ PRE_OPERATIONAL_1 ──SoC──▶ PRE_OPERATIONAL_2
//!   ──NMTEnableReadyToOperate──▶ READY_TO_OPERATE ──NMTStartNode──▶ OPERATIONAL
//! NMTStopNode (PRE_OP_2, READY, OPERATIONAL) ──▶ STOPPED
//! NMTEnterPreOperational2 (OPERATIONAL, STOPPED) ──▶ PRE_OPERATIONAL_2
//! NMTResetNode / ResetCommunication / ResetConfiguration / SwReset ──▶ NOT_ACTIVE
//! ```
//!
//! A real CN passes through its reset states (NMT_GS_RESET_*) to
//! NOT_ACTIVE; an emulated one has nothing to reset, so it lands there at
//! once. A CN's application is always ready: NMTEnableReadyToOperate takes
//! effect on reception. Error detection (loss of SoC, of PReq) is not
//! emulated: a CN stays in its state when the MN pauses between bring-up
//! and measurement.
//!
//! # What a CN answers ([`ControlledNodes::handle`])
//!
//! - **PReq** to it, in PRE_OPERATIONAL_2, READY_TO_OPERATE or
//!   OPERATIONAL: a **PRes** with its NMT state, RD set only in
//!   OPERATIONAL, and its `in_bytes` inputs, whose first bytes echo the
//!   PReq's output bytes (as many as both sizes allow) so that the MN can
//!   tell a stale PRes from the current one; the other input bytes hold
//!   the node id. Not in NOT_ACTIVE, PRE_OPERATIONAL_1 (no isochronous
//!   traffic yet) or STOPPED ("largely passive").
//! - **PResMN** (PollResponse Chaining, EPSG DS 302-C), when configured
//!   chained: every CN in those three states answers with its PRes, the
//!   k-th CN `(k-1) × chain_step_ns` after the PResMN (its time-triggered
//!   slot), echoing its share of the PResMN's payload (`out_bytes` per CN,
//!   in node order).
//! - **SoA** IdentRequest / StatusRequest naming it: an **ASnd
//!   IdentResponse** / **StatusResponse**, in every state but NOT_ACTIVE
//!   (a SoA first takes a NOT_ACTIVE CN to PRE_OPERATIONAL_1, then it
//!   answers the same SoA: the MN identifies its CNs with its first SoAs).
//! - **ASnd NMTCommand** to it or to broadcast (255): the state change
//!   above; nothing is sent back (the MN reads the new state in the next
//!   PRes or StatusResponse).
//!
//! # Addressing (checked against DS 301 and Wireshark's `packet-epl.c`)
//!
//! The answers go where DS 301 sends them and openPOWERLINK does: a PRes
//! to the PRes multicast 01-11-1E-00-00-02 with destination node 255, an
//! IdentResponse or StatusResponse to the ASnd multicast 01-11-1E-00-00-04
//! with destination node 240 (the MN); [`Frame::multicast_mac`] gives the
//! MAC. Every CN answers from the emulator's one MAC address: the MN learns
//! it from the IdentResponse and sends each PReq (and each NMTCommand) to
//! it. Wireshark dissects by EtherType and node ids, so it reads these
//! frames whatever the MACs.
//!
//! Nothing here allocates after [`ControlledNodes::new`]: the answers go
//! into the caller's vector, whose capacity [`ControlledNodes::new`] says
//! ([`ControlledNodes::max_answers`]), and the frames borrow the inputs it
//! keeps.

use super::frame::*;
use super::nmt::{NmtCommandId, NmtState, RequestedService};
use super::{BROADCAST_NODE, EPL_VERSION, MAX_CN_NODE, MN_NODE};

/// NMT_FeatureFlags_U32 bit 0: isochronous.
pub const FEATURE_ISOCHRONOUS: u32 = 1 << 0;
/// NMT_FeatureFlags_U32 bit 18: PollResponse Chaining (EPSG DS 302-C).
pub const FEATURE_PRES_CHAINING: u32 = 1 << 18;
/// The asynchronous MTU an emulated CN announces: C_DLL_MIN_ASYNC_MTU.
pub const ASYNC_MTU: u16 = 300;

/// How the emulated CNs are set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CnConfig {
    /// CNs emulated, node ids 1..=cns (1–239).
    pub cns: u8,
    /// Output bytes per CN (PReq payload, or its share of the PResMN).
    pub out_bytes: u16,
    /// Input bytes per CN (PRes payload).
    pub in_bytes: u16,
    /// Answer a PResMN (PollResponse Chaining) as well as a PReq.
    pub chained: bool,
    /// Chained: the time between two CNs' PRes slots, ns.
    pub chain_step_ns: u64,
    /// The PReq → PRes time each CN announces in its IdentResponse, ns.
    pub response_time_ns: u32,
}

/// What a CN sends in answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    /// A Poll Response.
    PRes,
    /// An ASnd IdentResponse to the MN.
    IdentResponse,
    /// An ASnd StatusResponse to the MN.
    StatusResponse,
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

/// What a received frame did to the emulated CNs.
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

/// The emulated CNs (node ids 1..=N) and their NMT states.
#[derive(Debug, Clone)]
pub struct ControlledNodes {
    config: CnConfig,
    states: Vec<NmtState>,
    /// `in_bytes` per CN, in node order: the echo, then the node id.
    inputs: Vec<u8>,
}

impl ControlledNodes {
    /// `config.cns` CNs in NOT_ACTIVE; `cns` is clamped to 1–239 and the
    /// byte counts to C_DLL_ISOCHR_MAX_PAYL.
    pub fn new(config: CnConfig) -> ControlledNodes {
        let mut config = config;
        config.cns = config.cns.clamp(1, MAX_CN_NODE);
        config.in_bytes = config.in_bytes.min(super::MAX_PDO_PAYLOAD as u16);
        config.out_bytes = config.out_bytes.min(super::MAX_PDO_PAYLOAD as u16);
        let n = usize::from(config.cns);
        let per = usize::from(config.in_bytes);
        let mut inputs = vec![0u8; n * per];
        for (i, chunk) in inputs.chunks_exact_mut(per.max(1)).enumerate() {
            chunk.fill(i as u8 + 1);
        }
        ControlledNodes {
            config,
            states: vec![NmtState::CS_NOT_ACTIVE; n],
            inputs,
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
        usize::from(self.config.cns)
    }

    /// True for a node id emulated here.
    pub fn is_ours(&self, node: u8) -> bool {
        (1..=self.config.cns).contains(&node)
    }

    /// The NMT state of `node`, or `None` when it is not emulated here.
    pub fn state(&self, node: u8) -> Option<NmtState> {
        self.is_ours(node)
            .then(|| self.states[usize::from(node) - 1])
    }

    /// Every emulated CN's state, in node order.
    pub fn states(&self) -> &[NmtState] {
        &self.states
    }

    fn set(&mut self, node: u8, to: NmtState, h: &mut Handled) {
        let s = &mut self.states[usize::from(node) - 1];
        if *s != to {
            *s = to;
            h.transitions += 1;
        }
    }

    /// Copies `echo` into the first input bytes of `node`.
    fn echo(&mut self, node: u8, echo: &[u8]) {
        let per = usize::from(self.config.in_bytes);
        let at = (usize::from(node) - 1) * per;
        let n = echo.len().min(per);
        self.inputs[at..at + n].copy_from_slice(&echo[..n]);
    }

    /// Runs `frame` through every emulated CN: state changes, and the
    /// frames to send, appended to `answers` after clearing it (in the
    /// order to send them).
    pub fn handle(&mut self, frame: &Frame<'_>, answers: &mut Vec<Answer>) -> Handled {
        answers.clear();
        let mut h = Handled::default();
        match frame {
            Frame::Soc(_) => {
                for node in 1..=self.config.cns {
                    match self.states[usize::from(node) - 1] {
                        NmtState::CS_NOT_ACTIVE => {
                            self.set(node, NmtState::CS_PRE_OPERATIONAL_1, &mut h)
                        }
                        NmtState::CS_PRE_OPERATIONAL_1 => {
                            self.set(node, NmtState::CS_PRE_OPERATIONAL_2, &mut h)
                        }
                        _ => {}
                    }
                }
            }
            Frame::PReq(p) if self.is_ours(p.node) => {
                if polled(self.states[usize::from(p.node) - 1]) {
                    self.echo(p.node, p.payload);
                    answers.push(Answer {
                        node: p.node,
                        reply: Reply::PRes,
                        offset_ns: 0,
                    });
                } else {
                    h.refused = true;
                }
            }
            Frame::PRes(p) if p.is_pres_mn() && self.config.chained => {
                let out = usize::from(self.config.out_bytes);
                let mut slot = 0u64;
                for node in 1..=self.config.cns {
                    if !polled(self.states[usize::from(node) - 1]) {
                        continue;
                    }
                    let at = (usize::from(node) - 1) * out;
                    let share = p.payload.get(at..at + out).unwrap_or(&[]);
                    self.echo(node, share);
                    answers.push(Answer {
                        node,
                        reply: Reply::PRes,
                        offset_ns: slot * self.config.chain_step_ns,
                    });
                    slot += 1;
                }
            }
            Frame::Soa(s) => {
                for node in 1..=self.config.cns {
                    if self.states[usize::from(node) - 1] == NmtState::CS_NOT_ACTIVE {
                        self.set(node, NmtState::CS_PRE_OPERATIONAL_1, &mut h);
                    }
                }
                if self.is_ours(s.target) {
                    let reply = match s.service {
                        RequestedService::IDENT_REQUEST => Some(Reply::IdentResponse),
                        RequestedService::STATUS_REQUEST => Some(Reply::StatusResponse),
                        _ => None,
                    };
                    match reply {
                        Some(reply) => answers.push(Answer {
                            node: s.target,
                            reply,
                            offset_ns: 0,
                        }),
                        None => h.refused = true,
                    }
                }
            }
            Frame::ASnd(ASnd {
                dest,
                service: ASndService::NmtCommand(c),
                ..
            }) => {
                if *dest == BROADCAST_NODE {
                    for node in 1..=self.config.cns {
                        self.command(node, c.id, &mut h);
                    }
                } else if self.is_ours(*dest) {
                    self.command(*dest, c.id, &mut h);
                }
            }
            _ => {}
        }
        h.answered = !answers.is_empty();
        h
    }

    /// Applies NMT state command `id` to `node`.
    fn command(&mut self, node: u8, id: NmtCommandId, h: &mut Handled) {
        let now = self.states[usize::from(node) - 1];
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
            (
                NmtCommandId::RESET_NODE
                | NmtCommandId::RESET_COMMUNICATION
                | NmtCommandId::RESET_CONFIGURATION
                | NmtCommandId::SW_RESET,
                _,
            ) => NmtState::CS_NOT_ACTIVE,
            _ => {
                h.refused = true;
                return;
            }
        };
        self.set(node, to, h);
    }

    /// The frame of `answer`, borrowing the CN's inputs; send it to
    /// [`Frame::multicast_mac`].
    pub fn frame(&self, answer: &Answer) -> Frame<'_> {
        let node = answer.node;
        let nmt = self.state(node).unwrap_or(NmtState::CS_NOT_ACTIVE);
        match answer.reply {
            Reply::PRes => {
                let per = usize::from(self.config.in_bytes);
                let at = (usize::from(node) - 1) * per;
                Frame::PRes(PRes {
                    node,
                    nmt,
                    ms: false,
                    en: false,
                    rd: nmt == NmtState::CS_OPERATIONAL,
                    pr: 0,
                    rs: 0,
                    pdo_version: 0,
                    payload: &self.inputs[at..at + per],
                })
            }
            Reply::IdentResponse => Frame::ASnd(ASnd {
                dest: MN_NODE,
                src: node,
                service: ASndService::IdentResponse(IdentResponse {
                    en: false,
                    ec: false,
                    pr: 0,
                    rs: 0,
                    nmt,
                    epl_version: EPL_VERSION,
                    feature_flags: FEATURE_ISOCHRONOUS
                        | if self.config.chained {
                            FEATURE_PRES_CHAINING
                        } else {
                            0
                        },
                    mtu: ASYNC_MTU,
                    poll_in_size: self.config.out_bytes,
                    poll_out_size: self.config.in_bytes,
                    response_time: self.config.response_time_ns,
                    device_type: 0,
                    vendor_id: 0,
                    product_code: 0,
                    revision: 0,
                    serial: u32::from(node),
                    verify_conf_date: 0,
                    verify_conf_time: 0,
                }),
            }),
            Reply::StatusResponse => Frame::ASnd(ASnd {
                dest: MN_NODE,
                src: node,
                service: ASndService::StatusResponse(StatusResponse {
                    en: false,
                    ec: false,
                    pr: 0,
                    rs: 0,
                    nmt,
                    static_errors: 0,
                    errors: &[],
                }),
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
