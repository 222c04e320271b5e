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
//! 6. idle, while a CN is not identified (or none is): the IdentRequest
//!    sweep, every slot; once every CN is identified (steady state):
//!    **SoA NoService**, and an IdentRequest to the diagnostic device every
//!    [`SWEEP_EVERY`]th idle slot. No StatusRequest goes to an identified
//!    CN whose handshake is complete: its PRes carries its NMT state and
//!    its RS (pending frames) every cycle, so a StatusRequest would only
//!    cost both ends a frame. This is what the reference MN sends in
//!    `ref_mn_cn.pcap` once its three CNs are Operational: NoService, and
//!    an IdentRequest to 253 every 7th SoA (in 86 of the 87 gaps; one took
//!    8 cycles). The reference re-asks an unanswered IdentRequest after
//!    its status-request delay, five cycles' time (`nmtmnu.c:1047, 2947`:
//!    0x1006 × `C_NMT_STATREQ_CYCLE`), plus the two cycles the missing
//!    answer and the new request take through its queues.
//!
//! Within a tier the CNs take turns (round robin from the last one
//! served), so no CN starves another. Pure: the caller keeps each CN's
//! [`Wants`] and sends what [`Scheduler::next`] returns.

use super::nmt::NmtCommandId;

/// The diagnostic device's node id, scanned with IdentRequests in any case.
pub const DIAGNOSTIC_NODE: u8 = 253;
/// Once every CN is identified, one idle slot in this many sends an
/// IdentRequest to the diagnostic device; the others send NoService.
pub const SWEEP_EVERY: u64 = 7;

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

    /// `n` slots of SoA, as the capture's letters: `.` NoService, `I`
    /// IdentRequest to 253, `S` StatusRequest, `U` UnspecifiedInvite, `N`
    /// NMTRequestInvite.
    fn letters(slots: impl Iterator<Item = Slot>) -> String {
        slots
            .map(|s| match s {
                Slot::NoService => '.',
                Slot::Ident(DIAGNOSTIC_NODE) => 'I',
                Slot::Ident(_) => 'i',
                Slot::Status(_) => 'S',
                Slot::Invite(_) | Slot::Sdo(_) => 'U',
                Slot::Command(..) => 'N',
            })
            .collect()
    }

    #[test]
    fn steady_state_sends_no_service_and_asks_253_every_seventh_slot() {
        let mut w = cns(&[1, 32]);
        let mut s = Scheduler::default();
        let got: Vec<Slot> = (0..15).map(|_| s.next(&mut w)).collect();
        let mut want = vec![Slot::NoService; 15];
        want[6] = Slot::Ident(DIAGNOSTIC_NODE);
        want[13] = Slot::Ident(DIAGNOSTIC_NODE);
        assert_eq!(got, want);
    }

    #[test]
    fn steady_state_is_the_reference_mns_sequence_in_its_capture() {
        // ref_mn_cn.pcap from SoC 2828 on, when all three CNs are
        // Operational: every SoA's RequestedServiceID (byte 20), as letters.
        let capture: String =
            super::super::capture_tests::frames(super::super::capture_tests::REF_MN_CN)
                .iter()
                .skip(2827)
                .filter(|f| f[14] & 0x7f == 5)
                .map(|f| match (f[20], f[21]) {
                    (0, 0) => '.',
                    (1, DIAGNOSTIC_NODE) => 'I',
                    (1, _) => 'i',
                    (2, _) => 'S',
                    (0xff, _) => 'U',
                    (3, _) => 'N',
                    other => panic!("an unexpected SoA {other:?}"),
                })
                .collect();
        assert_eq!(capture.len(), 617);
        // First the tail of the NMT commands' state monitoring (two
        // StatusRequests, not modelled), then the steady state from the
        // SoA after frame 2893's IdentRequest to 253.
        assert_eq!(&capture[..8], "I.S...SI");
        let steady = &capture[8..];
        assert_eq!(steady.len(), 609);
        assert_eq!(steady.matches('I').count(), 86);
        assert_eq!(steady.matches(['S', 'U', 'N', 'i']).count(), 0);
        // The reference's re-ask runs on its own timer: once, 8 cycles
        // instead of 7 (SoA frames 7317 → 7381). Up to there, the capture's
        // 553 SoAs are ours exactly.
        assert_eq!(steady.find("I.......I"), Some(552));
        let mut w = cns(&[1, 32, 110]);
        let mut s = Scheduler::default();
        let ours = letters((0..553).map(|_| s.next(&mut w)));
        assert_eq!(ours, steady[..553]);
    }

    #[test]
    fn steady_state_never_starves_a_handshake_an_sdo_frame_or_an_identification() {
        let mut w = cns(&[1, 32, 110]);
        let mut s = Scheduler::default();
        for _ in 0..3 {
            assert_eq!(s.next(&mut w), Slot::NoService);
        }
        // A CN rebooted (EC=1 again): its StatusRequests come at once.
        w[1].status = true;
        assert_eq!(s.next(&mut w), Slot::Status(32));
        w[1].status = false;
        // The user's SDO transfer, and the CN's answer it announced.
        w[2].sdo_out = true;
        assert_eq!(s.next(&mut w), Slot::Sdo(110));
        w[2].sdo_out = false;
        w[2].invite = true;
        assert_eq!(s.next(&mut w), Slot::Invite(110));
        w[2].invite = false;
        // A CN lost its identification: it is asked every idle slot,
        // with the diagnostic device in turn.
        w[0].identified = false;
        let got: Vec<Slot> = (0..3).map(|_| s.next(&mut w)).collect();
        assert_eq!(
            got,
            vec![Slot::Ident(1), Slot::Ident(DIAGNOSTIC_NODE), Slot::Ident(1)]
        );
        w[0].identified = true;
        // Back to NoService, the sweep's slots counted as idle ones: the
        // 7th idle slot since the start asks 253.
        let got: Vec<Slot> = (0..3).map(|_| s.next(&mut w)).collect();
        assert_eq!(
            got,
            vec![
                Slot::Ident(DIAGNOSTIC_NODE),
                Slot::NoService,
                Slot::NoService
            ]
        );
    }

    #[test]
    fn nothing_configured_sends_no_service() {
        assert_eq!(Scheduler::default().next(&mut []), Slot::NoService);
    }
}
