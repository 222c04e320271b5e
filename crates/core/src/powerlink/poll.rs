//! Which poll a PRes answers, told by time rather than by payload.
//!
//! A real CN does not echo the MN's outputs, and an empty PRes carries
//! nothing to tell one cycle's answer from another's. What does tell them
//! apart is the order of events on one clock: a PRes whose receive stamp
//! (the kernel's, CLOCK_REALTIME) is earlier than the instant this cycle's
//! PReq to its CN was handed to the driver cannot answer that PReq; it
//! belongs to an earlier poll. [`PollBook`] keeps, per CN, the send instant
//! of the poll in flight and whether an earlier poll timed out without its
//! PRes, and sorts every PRes into one [`PresMatch`]:
//!
//! - **answered**: the CN is awaited and the PRes was received at or after
//!   this poll's send instant;
//! - **late**: it answers an earlier poll that timed out (missed) and has
//!   not had its late PRes yet — received before this poll went out, or
//!   after this poll's own window closed;
//! - **stale**: anything else (a second PRes to one poll, one no poll asked
//!   for). Never credited to the current cycle.
//!
//! Since an answered PRes is never received before its PReq was sent, and
//! the PReq goes out after the cycle's SoC, the completion (SoC sent → last
//! answered PRes received) is never negative ([`completion_ns`]).
//!
//! The send instant is the clock read just *before* the send call: it is at
//! or before the frame's real send, so no genuine answer is ever earlier.

/// How a received PRes is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PresMatch {
    /// The answer to the poll in flight: counted for this cycle.
    Answered,
    /// The answer to an earlier poll that timed out.
    Late,
    /// No outstanding poll's answer.
    Stale,
}

/// One CN's polls as the MN sees them; see the module doc.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PollBook {
    /// The send instant of the poll in flight, CLOCK_REALTIME ns.
    sent: u64,
    /// The poll in flight still waits for its PRes.
    awaited: bool,
    /// The last poll that timed out has not had its (late) PRes yet.
    owed: bool,
}

impl PollBook {
    /// A poll to this CN is about to be sent; `sent_ns` is the clock read
    /// just before the send call.
    pub fn poll(&mut self, sent_ns: u64) {
        self.sent = sent_ns;
        self.awaited = true;
    }

    /// Whether the poll in flight still waits for its PRes.
    pub fn awaited(&self) -> bool {
        self.awaited
    }

    /// The poll in flight's window closed: true when it was still awaited
    /// (a missed PRes, whose late answer may still come).
    pub fn time_out(&mut self) -> bool {
        let missed = self.awaited;
        if missed {
            self.awaited = false;
            self.owed = true;
        }
        missed
    }

    /// Counts a PRes received at `rx_ns` (CLOCK_REALTIME, the kernel's
    /// receive stamp).
    pub fn take(&mut self, rx_ns: u64) -> PresMatch {
        if self.awaited && rx_ns >= self.sent {
            self.awaited = false;
            // Frames are taken in the order received: an earlier poll's
            // late answer would have come before this one.
            self.owed = false;
            PresMatch::Answered
        } else if self.owed {
            self.owed = false;
            PresMatch::Late
        } else {
            PresMatch::Stale
        }
    }

    /// Forgets every poll (a new phase of the run starts its books afresh).
    pub fn reset(&mut self) {
        *self = PollBook::default();
    }
}

/// SoC sent → last answered PRes received, ns, on one clock: never
/// negative for PRes counted [`PresMatch::Answered`], which are received
/// after their PReq, itself sent after the SoC. `None` when no PRes was
/// answered in the cycle.
pub fn completion_ns(soc_sent: u64, last_answered_rx: Option<u64>) -> Option<u64> {
    last_answered_rx.map(|rx| rx.saturating_sub(soc_sent))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_after_the_preq_is_this_cycles() {
        let mut b = PollBook::default();
        b.poll(1_000);
        assert!(b.awaited());
        assert_eq!(b.take(1_050), PresMatch::Answered);
        assert!(!b.awaited());
        // A second PRes to the same poll is stale, not counted twice.
        assert_eq!(b.take(1_060), PresMatch::Stale);
    }

    #[test]
    fn a_late_answer_of_cycle_k_arriving_in_cycle_k_plus_1_is_late_not_answered() {
        let mut b = PollBook::default();
        // Cycle k: PReq at 1 000 µs, window closes without a PRes.
        b.poll(1_000_000);
        assert!(b.time_out(), "the poll was awaited: missed");
        // Cycle k+1: the PReq goes out at 1 500 µs; the PRes of cycle k
        // was received at 1 499.990 µs (before it), and is taken only now.
        b.poll(1_500_000);
        assert_eq!(b.take(1_499_990), PresMatch::Late);
        assert!(b.awaited(), "cycle k+1's own answer is still awaited");
        // Cycle k+1's own answer then counts for k+1.
        assert_eq!(b.take(1_500_040), PresMatch::Answered);
        // The completion of cycle k+1 (SoC sent at 1 499.900 µs) only
        // counts its own answer: positive, although the late PRes was
        // received 10 µs before the PReq.
        assert_eq!(completion_ns(1_499_900, Some(1_500_040)), Some(140));
    }

    #[test]
    fn an_answer_after_its_own_window_is_late() {
        let mut b = PollBook::default();
        b.poll(2_000);
        assert!(b.time_out());
        assert!(!b.time_out(), "missed once only");
        assert_eq!(b.take(2_300), PresMatch::Late);
        assert_eq!(b.take(2_310), PresMatch::Stale, "late once only");
    }

    #[test]
    fn an_earlier_answer_with_no_missed_poll_is_stale() {
        let mut b = PollBook::default();
        b.poll(1_000);
        assert_eq!(b.take(1_010), PresMatch::Answered);
        b.poll(2_000);
        // Received before this PReq, and the last poll was answered.
        assert_eq!(b.take(1_990), PresMatch::Stale);
        assert!(b.awaited());
    }

    #[test]
    fn a_newer_answer_settles_the_debt_of_an_older_miss() {
        let mut b = PollBook::default();
        b.poll(1_000);
        assert!(b.time_out());
        b.poll(2_000);
        assert_eq!(b.take(2_010), PresMatch::Answered);
        // Whatever comes now is not the missed poll's.
        b.poll(3_000);
        assert_eq!(b.take(2_990), PresMatch::Stale);
    }

    #[test]
    fn completion_is_never_negative() {
        assert_eq!(completion_ns(5_000, None), None);
        assert_eq!(completion_ns(5_000, Some(5_000)), Some(0));
        // Even a stamp before the SoC (clocks stepped) gives 0, not less.
        assert_eq!(completion_ns(5_000, Some(4_984)), Some(0));
        // And an answered PRes is never before its PReq, sent after the SoC.
        let mut b = PollBook::default();
        let soc = 10_000;
        b.poll(soc + 5);
        assert_eq!(b.take(soc - 16), PresMatch::Stale);
        assert!(
            b.awaited(),
            "a PRes received before the PReq answers nothing"
        );
    }

    #[test]
    fn reset_forgets_everything() {
        let mut b = PollBook::default();
        b.poll(1);
        b.time_out();
        b.reset();
        assert_eq!(b, PollBook::default());
        assert_eq!(b.take(5), PresMatch::Stale);
    }
}
