//! The SoC's send instant on the measuring clock: the driver stamps a
//! transmit on CLOCK_REALTIME, and the cycle's `send` (release → SoC sent)
//! and the schedule's spacing are on CLOCK_MONOTONIC, so the stamp is
//! carried over by the offset between the two clocks read around the send.
//!
//! **Why a window, and why bounded.** The two clocks cannot be read at one
//! instant. Read as one monotonic then one realtime read, anything that
//! comes between them (an interrupt and the softirqs run at its exit, the
//! hypervisor taking the vCPU away) makes the realtime read late, and the
//! stamp carried over comes out early by that whole delay, which on a
//! loaded VM can outlast a release's wake-up and send together: the SoC
//! came out "sent" before its release and `send` negative (the unit tests
//! replay such a sequence). So the realtime read is taken between two
//! monotonic reads and matched with their midpoint (the error is at most
//! half the window, whatever came between), and the instant is held to
//! what causality allows: the driver stamped the frame after the MN
//! started the send and before the send returned
//! ([`SendWindow::mono_of`]).

/// The clock reads around one SoC send, all ns: CLOCK_MONOTONIC just
/// before the send, then just after it CLOCK_MONOTONIC, CLOCK_REALTIME and
/// CLOCK_MONOTONIC again, in that order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendWindow {
    /// CLOCK_MONOTONIC, read just before the send.
    pub mono_before: u64,
    /// CLOCK_MONOTONIC, read first after the send returned.
    pub mono_after: u64,
    /// CLOCK_REALTIME, read between `mono_after` and `mono_last`.
    pub real_after: u64,
    /// CLOCK_MONOTONIC, read after `real_after`.
    pub mono_last: u64,
}

impl SendWindow {
    /// The CLOCK_MONOTONIC instant of `real`, a CLOCK_REALTIME instant
    /// within the send (the driver's transmit stamp; `real_after` when
    /// there is none): carried over with the midpoint of the reads around
    /// `real_after`, then held within `[mono_before, mono_after]`.
    pub fn mono_of(&self, real: u64) -> u64 {
        let mid = self.mono_after + self.mono_last.saturating_sub(self.mono_after) / 2;
        let carried = mid as i128 + (real as i128 - self.real_after as i128);
        carried.clamp(
            i128::from(self.mono_before),
            i128::from(self.mono_after.max(self.mono_before)),
        ) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cycle whose realtime read came 110 µs after its first monotonic
    /// read: released at 5.000000 ms, woken 12 µs late, the send started 4
    /// µs later, the driver stamped it 9 µs after that and the send
    /// returned 2 µs later; then an interrupt held the thread between the
    /// monotonic and the realtime read. The realtime clock runs
    /// 1 700 000 000 s ahead of the monotonic one.
    const OFFSET: u64 = 1_700_000_000_000_000_000;
    const RELEASE: u64 = 5_000_000;
    const STARTED: u64 = RELEASE + 12_000 + 4_000;
    const STAMPED: u64 = STARTED + 9_000;
    const RETURNED: u64 = STAMPED + 2_000;
    const HELD: u64 = 110_000;

    fn window() -> SendWindow {
        SendWindow {
            mono_before: STARTED,
            mono_after: RETURNED,
            real_after: RETURNED + HELD + OFFSET,
            mono_last: RETURNED + HELD + 1_000,
        }
    }

    #[test]
    fn a_read_held_between_the_clocks_no_longer_puts_the_soc_before_its_release() {
        let w = window();
        let stamp = STAMPED + OFFSET;
        // The former carry-over, with the first monotonic read alone:
        // 85 µs before the release.
        let former = w.mono_after as i64 + (stamp as i64 - w.real_after as i64);
        assert_eq!(former - RELEASE as i64, -85_000);
        // The window's midpoint misses by half the hold, and the send
        // bounds hold it: no earlier than the send started.
        assert_eq!(w.mono_of(stamp), STARTED);
        assert_eq!(w.mono_of(stamp) - RELEASE, 16_000);
    }

    #[test]
    fn a_prompt_read_carries_the_stamp_over_exactly() {
        let w = SendWindow {
            mono_before: STARTED,
            mono_after: RETURNED,
            real_after: RETURNED + 40 + OFFSET,
            mono_last: RETURNED + 80,
        };
        assert_eq!(w.mono_of(STAMPED + OFFSET), STAMPED);
        // Without a stamp, the realtime read itself: the send's return.
        assert_eq!(w.mono_of(w.real_after), RETURNED);
    }

    #[test]
    fn a_stamp_outside_the_send_is_held_to_its_bounds() {
        let w = SendWindow {
            mono_before: STARTED,
            mono_after: RETURNED,
            real_after: RETURNED + 40 + OFFSET,
            mono_last: RETURNED + 80,
        };
        assert_eq!(w.mono_of(OFFSET), STARTED);
        assert_eq!(w.mono_of(u64::MAX), RETURNED);
    }
}
