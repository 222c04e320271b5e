//! When the next SoC is due, as a CN that has seen the last ones can tell:
//! the last SoC's arrival plus the cycle, the cycle being the shorter of
//! the last two gaps (a release the managing node skipped doubles one gap,
//! not two). For a CN emulator that would sleep on a timer until a little
//! before that instant instead of on its socket, so that the SoC's send
//! has no sleeping receiver to wake and costs the managing node's CPU no
//! inter-processor interrupt. Not used yet: fed with the instants the
//! frames were read (not their receive stamps) and woken 50 µs early, such
//! an emulator lost PRes on a loaded VM (BENCHMARKS.md).

/// The arrivals of the last SoCs (monotonic ns).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SocForecast {
    last: Option<u64>,
    gap: Option<u64>,
    cycle: Option<u64>,
}

impl SocForecast {
    /// A SoC arrived at `at`.
    pub fn soc(&mut self, at: u64) {
        if let Some(last) = self.last.filter(|&l| at > l) {
            let gap = at - last;
            self.cycle = Some(self.gap.map_or(gap, |g| g.min(gap)));
            self.gap = Some(gap);
        }
        self.last = Some(at);
    }

    /// The cycle as seen: the shorter of the last two gaps between SoCs
    /// (none before the second SoC).
    pub fn cycle(&self) -> Option<u64> {
        self.cycle
    }

    /// When the next SoC is due.
    pub fn due(&self) -> Option<u64> {
        Some(self.last? + self.cycle?)
    }

    /// When to wake `lead` ns before the next SoC is due, if that is still
    /// ahead of `now`; none when it is not (the SoC is late, or about to
    /// come) or not known yet.
    pub fn wake_at(&self, now: u64, lead: u64) -> Option<u64> {
        self.due()
            .map(|d| d.saturating_sub(lead))
            .filter(|&w| w > now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_due_before_two_socs() {
        let mut f = SocForecast::default();
        assert_eq!(f.wake_at(0, 0), None);
        f.soc(1_000_000);
        assert_eq!((f.cycle(), f.due(), f.wake_at(0, 0)), (None, None, None));
    }

    #[test]
    fn the_next_soc_is_due_a_cycle_after_the_last_and_the_wake_comes_lead_before() {
        let mut f = SocForecast::default();
        f.soc(1_000_000);
        f.soc(2_000_500);
        assert_eq!(f.cycle(), Some(1_000_500));
        assert_eq!(f.due(), Some(3_001_000));
        assert_eq!(f.wake_at(2_100_000, 50_000), Some(2_951_000));
        // Within the lead of the SoC, or past it: no sleep.
        assert_eq!(f.wake_at(2_951_000, 50_000), None);
        assert_eq!(f.wake_at(3_500_000, 50_000), None);
    }

    #[test]
    fn a_skipped_release_doubles_one_gap_and_not_the_cycle() {
        let mut f = SocForecast::default();
        for at in [0, 1_000_000, 3_000_000] {
            f.soc(at);
        }
        assert_eq!((f.cycle(), f.due()), (Some(1_000_000), Some(4_000_000)));
        // A longer cycle for good: taken after its second gap.
        f.soc(5_000_000);
        assert_eq!(f.cycle(), Some(2_000_000));
        f.soc(5_000_000);
        assert_eq!(f.cycle(), Some(2_000_000), "a repeated stamp is no gap");
    }
}
