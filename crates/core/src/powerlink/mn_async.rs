//! The managing node's asynchronous slot scheduler: which SoA a cycle (or a
//! reduced cycle) sends, and what follows it, chosen as the reference MN
//! (openPOWERLINK) does — one asynchronous frame per cycle:
//!
//! 1. the MN's own **NMT command** (NMT priority): SoA NMTRequestInvite
//!    with target 240, the command right after it;
//! 2. a CN that announced a pending frame (RS > 0 in its PRes or
//!    StatusResponse), or whose SDO answer the MN awaits: SoA
//!    UnspecifiedInvite with target the CN;
//! 3. the MN's own **SDO** frame (generic priority): SoA UnspecifiedInvite
//!    with target 240, the frame right after it;
//! 4. a CN whose error-signalling handshake is not complete (or whose
//!    status the MN wants): SoA StatusRequest — every other slot at most
//!    while CNs wait for identification;
//! 5. a CN not identified yet, and the diagnostic device 253, which the
//!    reference always scans: SoA IdentRequest;
//! 6. idle: StatusRequests round robin over the identified CNs (their NMT
//!    state and pending requests), an IdentRequest sweep every
//!    [`SWEEP_EVERY`]th idle slot, or NoService when nothing is identified.
//!
//! Within a tier the CNs take turns (round robin from the last one
//! served), so no CN starves another. Pure: the caller keeps each CN's
//! [`Wants`] and sends what [`Scheduler::next`] returns.

use super::nmt::NmtCommandId;

/// The diagnostic device's node id, scanned with IdentRequests in any case.
pub const DIAGNOSTIC_NODE: u8 = 253;
/// One idle slot in this many sends an IdentRequest (to an unidentified
/// CN or the diagnostic device) instead of a StatusRequest.
pub const SWEEP_EVERY: u64 = 8;

/// What one CN needs from the asynchronous slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Wants {
    /// The CN's node id.
    pub node: u8,
    /// It answered an IdentRequest.
    pub identified: bool,
    /// The MN's NMT command queued for it.
    pub command: Option<NmtCommandId>,
    /// The MN has an SDO frame queued for it.
    pub sdo_out: bool,
    /// The MN awaits its SDO answer, or it announced pending frames (RS > 0).
    pub invite: bool,
    /// The MN wants its StatusResponse now (error signalling not complete).
    pub status: bool,
}

/// One cycle's asynchronous slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// SoA NoService (target 0): the slot stays empty.
    NoService,
    /// SoA IdentRequest to the node.
    Ident(u8),
    /// SoA StatusRequest to the CN.
    Status(u8),
    /// SoA UnspecifiedInvite to the CN: it sends its pending frame.
    Invite(u8),
    /// SoA NMTRequestInvite to 240, then the MN's NMT command to the CN.
    Command(u8, NmtCommandId),
    /// SoA UnspecifiedInvite to 240, then the MN's SDO frame to the CN.
    Sdo(u8),
}

/// The round-robin cursors of the scheduler.
#[derive(Debug, Clone, Default)]
pub struct Scheduler {
    cursor: usize,
    sweep: usize,
    idle: u64,
    /// The last slot was a StatusRequest of tier 4.
    after_status: bool,
}

impl Scheduler {
    /// The slot for the CNs `cns` (in a stable order) want now. Takes the
    /// queued command off the CN it serves; the caller clears `sdo_out`,
    /// `invite` and `status` as their frames go and come.
    pub fn next(&mut self, cns: &mut [Wants]) -> Slot {
        let n = cns.len();
        if n == 0 {
            return Slot::NoService;
        }
        let unidentified = cns.iter().filter(|w| !w.identified).count();
        let identified = n - unidentified;
        type Pick = fn(&mut Wants) -> Option<Slot>;
        let tiers: [Pick; 4] = [
            |w| w.command.take().map(|c| Slot::Command(w.node, c)),
            |w| w.invite.then_some(Slot::Invite(w.node)),
            |w| w.sdo_out.then_some(Slot::Sdo(w.node)),
            |w| w.status.then_some(Slot::Status(w.node)),
        ];
        // A CN stuck in the error-signalling handshake takes every other
        // slot at most while CNs wait for their IdentRequest.
        let status_yields = self.after_status && unidentified > 0;
        self.after_status = false;
        for (t, pick) in tiers.into_iter().enumerate() {
            if t == 3 && status_yields {
                break;
            }
            for i in 0..n {
                let k = (self.cursor + i) % n;
                if let Some(slot) = pick(&mut cns[k]) {
                    self.cursor = k + 1;
                    self.after_status = t == 3;
                    return slot;
                }
            }
        }
        self.idle += 1;
        if unidentified > 0 || identified == 0 || self.idle.is_multiple_of(SWEEP_EVERY) {
            // The sweep: the unidentified CNs, then the diagnostic device.
            let mut order = cns
                .iter()
                .filter(|w| !w.identified)
                .map(|w| w.node)
                .chain([DIAGNOSTIC_NODE]);
            let len = unidentified + 1;
            let node = order.nth(self.sweep % len).unwrap_or(DIAGNOSTIC_NODE);
            self.sweep = (self.sweep + 1) % len;
            return Slot::Ident(node);
        }
        for i in 0..n {
            let k = (self.cursor + i) % n;
            if cns[k].identified {
                self.cursor = k + 1;
                return Slot::Status(cns[k].node);
            }
        }
        Slot::NoService
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cns(ids: &[u8]) -> Vec<Wants> {
        ids.iter()
            .map(|&node| Wants {
                node,
                identified: true,
                ..Wants::default()
            })
            .collect()
    }

    #[test]
    fn commands_first_then_invites_then_sdo_then_status() {
        let mut w = cns(&[1, 32, 110]);
        let mut s = Scheduler::default();
        w[2].status = true;
        w[1].sdo_out = true;
        w[0].invite = true;
        w[2].command = Some(NmtCommandId::START_NODE);
        assert_eq!(s.next(&mut w), Slot::Command(110, NmtCommandId::START_NODE));
        assert_eq!(w[2].command, None, "the command is taken");
        assert_eq!(s.next(&mut w), Slot::Invite(1));
        w[0].invite = false;
        assert_eq!(s.next(&mut w), Slot::Sdo(32));
        w[1].sdo_out = false;
        assert_eq!(s.next(&mut w), Slot::Status(110));
    }

    #[test]
    fn a_cn_stuck_in_error_signalling_leaves_every_other_slot_to_identification() {
        let mut w = cns(&[1, 32]);
        w[1].identified = false;
        w[0].status = true;
        let mut s = Scheduler::default();
        let got: Vec<Slot> = (0..4).map(|_| s.next(&mut w)).collect();
        assert_eq!(
            got,
            vec![
                Slot::Status(1),
                Slot::Ident(32),
                Slot::Status(1),
                Slot::Ident(DIAGNOSTIC_NODE)
            ]
        );
    }

    #[test]
    fn cns_take_turns_within_a_tier() {
        let mut w = cns(&[1, 32, 110]);
        let mut s = Scheduler::default();
        for x in w.iter_mut() {
            x.sdo_out = true;
        }
        let got: Vec<Slot> = (0..4).map(|_| s.next(&mut w)).collect();
        assert_eq!(
            got,
            vec![Slot::Sdo(1), Slot::Sdo(32), Slot::Sdo(110), Slot::Sdo(1)]
        );
    }

    #[test]
    fn unidentified_cns_and_253_are_swept() {
        let mut w = cns(&[1, 32, 110]);
        w[0].identified = false;
        w[2].identified = false;
        let mut s = Scheduler::default();
        let got: Vec<Slot> = (0..4).map(|_| s.next(&mut w)).collect();
        assert_eq!(
            got,
            vec![
                Slot::Ident(1),
                Slot::Ident(110),
                Slot::Ident(DIAGNOSTIC_NODE),
                Slot::Ident(1)
            ]
        );
    }

    #[test]
    fn idle_slots_ask_status_round_robin_and_sweep_253_every_eighth() {
        let mut w = cns(&[1, 32]);
        let mut s = Scheduler::default();
        let got: Vec<Slot> = (0..8).map(|_| s.next(&mut w)).collect();
        assert_eq!(
            got,
            vec![
                Slot::Status(1),
                Slot::Status(32),
                Slot::Status(1),
                Slot::Status(32),
                Slot::Status(1),
                Slot::Status(32),
                Slot::Status(1),
                Slot::Ident(DIAGNOSTIC_NODE),
            ]
        );
    }

    #[test]
    fn nothing_configured_sends_no_service() {
        assert_eq!(Scheduler::default().next(&mut []), Slot::NoService);
    }
}
