//! The bring-up of the CNs before the measurement, as the reference MN
//! (openPOWERLINK) does it:
//!
//! 1. **PRE_OPERATIONAL_1, the reduced cycle**: SoAs only, back to back
//!    (not paced by the cycle time). The first ten invite no one (the
//!    reference's C_DLL_PREOP1_START_CYCLES); then the asynchronous slot
//!    scheduler (`jitterlab_core::powerlink::mn_async`) picks each SoA:
//!    IdentRequests round robin over the unidentified CNs and node 253,
//!    StatusRequests of the ER/EC handshake for the identified ones. Each
//!    SoA that invites a CN waits for its answer up to [`ASYNC_WAIT_NS`],
//!    no longer than the answer takes. A CN's MAC is learnt from the source
//!    of its IdentResponse, which may be addressed to 240 or to 255.
//!    The MN sends no broadcast NMTResetNode first (the reference does): a
//!    CN that comes from an earlier run is brought back through
//!    NMTResetConfiguration anyway, and a reset would cost every run the
//!    CN's ~0.6 s of resetting.
//! 2. Still in the reduced cycle, the **configuration manager** ([`super::cfm`])
//!    writes each identified CN that announces SDO by ASnd over SDO (the
//!    MN's frames after an UnspecifiedInvite to 240, the CN's answers after
//!    an UnspecifiedInvite to it, back to back: a write costs two slots, not
//!    two cycles), checks its device type when the configuration gives
//!    one, closes the SDO connection, sends NMTResetConfiguration and
//!    identifies the CN again. A refused write or an SDO timeout ends the
//!    bring-up with the CN, the object and the reason. A CN that announces
//!    no SDO by ASnd is brought up unconfigured (the reference MN would
//!    fail it; the line printed per CN says so).
//! 3. With **`--chaining`**, every CN must announce PRes chaining (feature
//!    flag bit 18); one that does not fails the run as bad input, naming
//!    it, before anything is measured.
//! 4. **PRE_OPERATIONAL_2, then READY_TO_OPERATE**: isochronous cycles at
//!    the measured cycle time whose asynchronous slot carries, besides the
//!    handshake's StatusRequests, the MN's NMT commands after an
//!    NMTRequestInvite to 240: EnableReadyToOperate to a CN whose PRes says
//!    PRE_OPERATIONAL_2, StartNode to one that says READY_TO_OPERATE, again
//!    after [`COMMAND_AGAIN`] cycles without a change, until every CN's
//!    PRes says OPERATIONAL. Bring-up always polls with PReq; chained CNs
//!    take their PResMN slots once measured.
//!
//! On a terminal, a bring-up prints how far it got every second.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use anyhow::Result;
use jitterlab_core::powerlink::ident::{describe, FEATURE_PRES_CHAINING, FEATURE_SDO_ASND};
use jitterlab_core::powerlink::sdo_client::{Outcome, DEFAULT_RETRIES, DEFAULT_TIMEOUT_NS};
use jitterlab_core::powerlink::{IdentResponse, NmtCommandId, NmtState, RequestedService};
use jitterlab_core::units::format_duration_exact;
use jitterlab_sys as sys;

use super::cfm::{short, Step};
use super::{AsyncSlot, Book, BringUp, Mn, Stamps};
use crate::error::bad;

/// How long a reduced cycle waits for the answer to a SoA that invites a
/// node.
pub const ASYNC_WAIT_NS: u64 = 2_000_000;
/// How often a bring-up on a terminal says how far it got.
const PROGRESS_EVERY_NS: u64 = 1_000_000_000;
/// SoAs inviting no one that open PRE_OPERATIONAL_1.
const PREOP1_START_CYCLES: u32 = 10;
/// Cycles a CN gets to take an NMT command before it is sent again.
pub const COMMAND_AGAIN: u64 = 8;

/// The time a bring-up may take: `base_ns` (identification, the NMT
/// commands, the CNs' own resets), plus, per write the configuration
/// manager may make, two asynchronous slots (the MN's request and the CN's
/// answer) of at most [`ASYNC_WAIT_NS`] each.
pub fn bring_up_budget_ns(base_ns: u64, plans: &[super::cfm::CnPlan]) -> u64 {
    let writes: u64 = plans.iter().map(|p| p.objects.len() as u64 + 3).sum();
    base_ns + writes * 2 * ASYNC_WAIT_NS
}

/// What one CN announced in its IdentResponse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Announced {
    /// The CN's node id.
    pub node: u8,
    /// Its IdentResponse.
    pub ident: IdentResponse,
}

impl Announced {
    /// One line, e.g. `CN 1: features 0x00010265 (isochronous, …), …`.
    pub fn line(&self) -> String {
        describe(self.node, &self.ident)
    }
}

/// Where the configuration of one CN stands.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) enum Conf {
    /// Not identified yet.
    #[default]
    Pending,
    /// Its writes are going: `at` is the one whose outcome is awaited.
    Running {
        /// The writes.
        steps: Vec<Step>,
        /// The next outcome's write.
        at: usize,
    },
    /// Every write went; the SDO connection is being closed.
    Closing {
        /// Writes made.
        writes: usize,
    },
    /// NMTResetConfiguration is queued or sent; its next IdentResponse is
    /// awaited.
    Resetting {
        /// Writes made.
        writes: usize,
    },
    /// Configured and identified again.
    Done {
        /// Writes made.
        writes: usize,
    },
    /// Not configured, for the reason given.
    Skipped(&'static str),
    /// Its configuration failed, for the reason given.
    Failed(String),
}

impl Conf {
    fn finished(&self) -> bool {
        matches!(self, Conf::Done { .. } | Conf::Skipped(_))
    }
}

impl Mn {
    /// What the configuration manager did to each CN, one line per CN.
    pub fn configuration(&self) -> Vec<String> {
        self.books.iter().map(conf_line).collect()
    }

    /// CN `k` answered an IdentResponse: its configuration starts (after
    /// the device type check), or, after NMTResetConfiguration, is done.
    pub(super) fn identified(&mut self, k: usize) {
        let b = &mut self.books[k];
        let Some(ident) = b.ident else {
            return;
        };
        match b.conf {
            Conf::Resetting { writes } => b.conf = Conf::Done { writes },
            Conf::Pending => {
                let node = b.counts.node;
                b.conf = match self.cfg.plans.iter().find(|p| p.node == node) {
                    None => Conf::Skipped("the configuration has no entry for it"),
                    Some(plan) => match plan.device_type_mismatch(&ident) {
                        Some(why) => Conf::Failed(why),
                        None if ident.feature_flags & FEATURE_SDO_ASND == 0 => {
                            Conf::Skipped("it announces no SDO by ASnd (feature flag bit 2)")
                        }
                        None => {
                            let steps = plan.steps(&ident);
                            for s in &steps {
                                b.sdo.push(s.transfer.clone());
                            }
                            Conf::Running { steps, at: 0 }
                        }
                    },
                };
            }
            _ => {}
        }
    }

    /// CN `k`'s SDO client ended a transfer with `outcome`.
    pub(super) fn configured(&mut self, k: usize, outcome: Outcome) {
        let b = &mut self.books[k];
        let node = b.counts.node;
        let Conf::Running { steps, at } = &mut b.conf else {
            return;
        };
        let step = &steps[*at];
        let plan = self.cfg.plans.iter().find(|p| p.node == node);
        let failed = match outcome {
            Outcome::Written(_) | Outcome::Read(..) => None,
            Outcome::Aborted(_, _) if step.abort_ok => None,
            Outcome::Aborted(a, code) => Some(match plan {
                Some(p) => p.refusal(step, code),
                None => format!("CN {node} refused {}: {code}", short(a)),
            }),
            Outcome::TimedOut(a) => Some(format!(
                "CN {node} did not answer the SDO write of {} ({} tries, {} apart); check that it speaks SDO over ASnd",
                short(a),
                DEFAULT_RETRIES + 1,
                format_duration_exact(DEFAULT_TIMEOUT_NS)
            )),
            Outcome::Failed(a, why) => Some(format!(
                "CN {node} answered the SDO write of {} with {why}",
                short(a)
            )),
        };
        if let Some(why) = failed {
            b.sdo.close();
            b.conf = Conf::Failed(why);
            return;
        }
        *at += 1;
        if *at == steps.len() {
            let writes = steps.len();
            b.sdo.close();
            b.conf = Conf::Closing { writes };
        }
    }

    /// CN `k`'s SDO client sent a frame: once the connection is closed,
    /// NMTResetConfiguration goes to the CN, which is then identified
    /// again.
    pub(super) fn sdo_sent(&mut self, k: usize) {
        let b = &mut self.books[k];
        if let Conf::Closing { writes } = b.conf {
            if b.sdo.idle() {
                b.conf = Conf::Resetting { writes };
                self.wants[k].command = Some(NmtCommandId::RESET_CONFIGURATION);
                self.wants[k].identified = false;
            }
        }
    }

    /// How far the configuration got, in one line.
    fn progress(&self) -> String {
        let identified = self.wants.iter().filter(|w| w.identified).count();
        let done = self.books.iter().filter(|b| b.conf.finished()).count();
        let (made, total) = self.books.iter().fold((0, 0), |(m, t), b| match &b.conf {
            Conf::Running { steps, at } => (m + at, t + steps.len()),
            Conf::Closing { writes } | Conf::Resetting { writes } | Conf::Done { writes } => {
                (m + writes, t + writes)
            }
            _ => (m, t),
        });
        format!(
            "{identified} of {n} CNs identified, {done} configured, {made} of {total} SDO writes made",
            n = self.books.len()
        )
    }

    /// The error of the CNs whose configuration failed, if any.
    fn conf_failed(&self) -> Option<anyhow::Error> {
        let why: Vec<&str> = self
            .books
            .iter()
            .filter_map(|b| match &b.conf {
                Conf::Failed(why) => Some(why.as_str()),
                _ => None,
            })
            .collect();
        (!why.is_empty()).then(|| anyhow::anyhow!("{}", why.join("; ")))
    }

    /// What each identified CN announced, in node order.
    pub fn announced(&self) -> Vec<Announced> {
        self.books
            .iter()
            .filter_map(|b| {
                b.ident.map(|ident| Announced {
                    node: b.counts.node,
                    ident,
                })
            })
            .collect()
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
        for _ in 0..PREOP1_START_CYCLES {
            self.send_soa(RequestedService::NO_SERVICE, 0, false);
        }
        let mut identified_ns = None;
        let terminal = std::io::stderr().is_terminal();
        let mut progress_at = start + PROGRESS_EVERY_NS;
        while !self
            .books
            .iter()
            .zip(&self.wants)
            .all(|(b, w)| w.identified && b.conf.finished())
        {
            if identified_ns.is_none() && self.wants.iter().all(|w| w.identified) {
                identified_ns = Some(sys::monotonic_ns() - start);
                self.check_chaining()?;
            }
            if let Some(e) = self.conf_failed() {
                return Err(e);
            }
            if sys::monotonic_ns() >= deadline || stop.load(Relaxed) {
                return Err(self.not_up(within_ns, stop));
            }
            let now = sys::monotonic_ns();
            if terminal && now >= progress_at {
                progress_at = now + PROGRESS_EVERY_NS;
                crate::output::errln!("jitterlab: netcycle: bring-up: {}", self.progress());
            }
            let slot = self.next_slot();
            self.reduced_cycle(slot, deadline);
        }
        let identified_ns = identified_ns.unwrap_or(sys::monotonic_ns() - start);
        self.check_chaining()?;
        // Isochronous cycles until every CN is operational.
        self.state = NmtState::MS_PRE_OPERATIONAL_2;
        let mut cycles = 0u64;
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
            self.queue_commands(cycles);
            let slot = self.next_slot();
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

    /// One reduced cycle (PRE_OPERATIONAL_1): the SoA of `slot` and what
    /// follows it, then, when it invites a node, the wait for its answer
    /// (up to [`ASYNC_WAIT_NS`], not past `deadline`).
    fn reduced_cycle(&mut self, slot: AsyncSlot, deadline: u64) {
        self.last_asnd = None;
        self.send_slot(slot);
        let node = match slot {
            AsyncSlot::Ident(n) | AsyncSlot::Status(n) | AsyncSlot::Invite(n) => n,
            _ => return,
        };
        let until = (sys::monotonic_ns() + ASYNC_WAIT_NS).min(deadline);
        let mut last = Stamps::default();
        while self.last_asnd != Some(node) {
            let now = sys::monotonic_ns();
            if now >= until {
                break;
            }
            if self.link.wait(Some(until - now)).unwrap_or(false) {
                self.drain(&mut last);
            }
        }
    }

    /// With `--chaining`, refuses CNs that do not announce PRes chaining.
    fn check_chaining(&self) -> Result<()> {
        if !self.cfg.chained {
            return Ok(());
        }
        let lacking: Vec<String> = self
            .announced()
            .iter()
            .filter(|a| a.ident.feature_flags & FEATURE_PRES_CHAINING == 0)
            .map(|a| format!("CN {} (features {:#010x})", a.node, a.ident.feature_flags))
            .collect();
        match lacking.is_empty() {
            true => Ok(()),
            false => Err(bad(format!(
                "--chaining: these CNs announce no PRes chaining (feature flag bit 18 of their IdentResponse): {}; run without --chaining, or poll only CNs that chain",
                lacking.join(", ")
            ))),
        }
    }

    /// Queues the NMT command each CN needs next: EnableReadyToOperate in
    /// PRE_OPERATIONAL_2, StartNode in READY_TO_OPERATE, at most once in
    /// [`COMMAND_AGAIN`] cycles.
    fn queue_commands(&mut self, cycle: u64) {
        for (b, w) in self.books.iter_mut().zip(self.wants.iter_mut()) {
            let id = match b.state {
                Some(NmtState::CS_PRE_OPERATIONAL_2) => NmtCommandId::ENABLE_READY_TO_OPERATE,
                Some(NmtState::CS_READY_TO_OPERATE) => NmtCommandId::START_NODE,
                _ => continue,
            };
            if b.commanded.is_some_and(|c| cycle < c + COMMAND_AGAIN) {
                continue;
            }
            b.commanded = Some(cycle);
            w.command = Some(id);
        }
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
                (Some(_), _) if !b.conf.finished() => conf_line(b),
                (None, _) => format!("CN {} never answered its IdentRequest", b.counts.node),
                (Some(_), Some(s)) => format!("CN {} is in {}", b.counts.node, s),
                (Some(_), None) => format!("CN {} was identified, then went silent", b.counts.node),
            })
            .collect();
        let ids: Vec<String> = self.cfg.nodes.iter().map(u8::to_string).collect();
        anyhow::anyhow!(
            "the CNs did not all reach NMT_CS_OPERATIONAL within {}: {}; check that the CNs run and answer node ids {}",
            jitterlab_core::units::format_duration_exact(within_ns),
            why.join("; "),
            ids.join(", ")
        )
    }
}

/// What the configuration manager did to one CN.
fn conf_line(b: &Book) -> String {
    let node = b.counts.node;
    match &b.conf {
        Conf::Done { writes: 1 } => {
            format!("CN {node}: configuration up to date, cycle length written over SDO")
        }
        Conf::Done { writes } => {
            format!("CN {node}: configured over SDO ({writes} writes), reset and identified again")
        }
        Conf::Skipped(why) => format!("CN {node}: not configured: {why}"),
        Conf::Failed(why) => format!("CN {node}: configuration failed: {why}"),
        Conf::Pending => format!("CN {node}: not configured: never identified"),
        Conf::Running { at, steps } => format!(
            "CN {node}: configuration over SDO stopped at write {} of {} ({})",
            at + 1,
            steps.len(),
            short(steps[*at].transfer.addr())
        ),
        Conf::Closing { .. } | Conf::Resetting { .. } => format!(
            "CN {node}: configured over SDO, not identified again after NMTResetConfiguration"
        ),
    }
}
