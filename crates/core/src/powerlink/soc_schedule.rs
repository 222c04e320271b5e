//! The managing node's one SoC schedule, from the first SoC of the bring-up
//! through the measurement, and the reference's spacing rule after a late
//! wake-up.
//!
//! **One grid.** Releases are `t0 + k·T` ([`crate::cycle::Schedule`]) from
//! the bring-up's first isochronous cycle on; the measurement starts at a
//! release of that same grid ([`SocSchedule::start_measurement`]) and
//! counts its own cycles from there, so the CNs see one SoC period from
//! their first SoC to the last.
//!
//! **The spacing rule of openPOWERLINK V2.7.2's Linux user-space MN.**
//! Its cycle timer is a POSIX interval timer on CLOCK_MONOTONIC whose
//! expiries are signals taken by one timer thread
//! (`stack/src/kernel/timer/hrestimer-posix.c:157-161` timer_create with
//! SIGEV_SIGNAL, `:329-333` it_interval = the cycle, `:475-481`
//! sigwaitinfo then the callback): its expiries stay on one grid, and
//! expiries that pass while a signal is still pending coalesce into it
//! (the kernel counts them as overruns), so a late callback never brings a
//! burst of cycles. The callback (`stack/src/kernel/edrv/edrvcyclic.c:486`)
//! starts a cycle only when the previous cycle's frame list has been sent
//! to its end (`edrvcyclic.c:506-510`: otherwise
//! kErrorEdrvTxListNotFinishedYet, reported as a cycle error at `:607-614`,
//! and that expiry sends no SoC). The list is time-triggered from its SoC:
//! each frame after the SoC leaves on a slot timer at its offset from the
//! one before (`edrvcyclic.c:766-785`), the first PReq after the SoC's own
//! frame time, each next one a PRes timeout (0x1F92/n) after the previous
//! PReq, the SoA after the last CN's (`stack/src/kernel/dll/dllknode.c:
//! 786-791, 820, 850-861`; the list is built at `dllkevent.c:1084-1097`).
//! So the next SoC never leaves less than the cycle's planned isochronous
//! span D after the previous one — SoC frame time plus one PRes timeout
//! per polled CN — and an expiry within D of the previous SoC is passed
//! over: after a late wake-up the reference sends its next SoC at the
//! first grid release at least D after the late one, never two SoCs back
//! to back.
//!
//! **Here.** Our MN's cycle is event-driven (the next PReq leaves when the
//! PRes is in, the SoA after the last one), so its own SoA may go well
//! before D; the rule is kept on the SoCs themselves:
//! [`SocSchedule::next_release`] passes over every release earlier than
//! the last SoC's send instant + the floor ([`spacing_floor`]: D, at most
//! half the cycle — the reference's configuration tool never lets D reach
//! the cycle, while our response timeout only has to be shorter than it,
//! and a floor of a whole cycle would pass over every other release). A
//! release passed over is counted skipped (`cycles + skipped = releases`
//! holds) and in [`SocCounts::spaced`], not as an overrun.

use serde::{Deserialize, Serialize};

use crate::cycle::{CycleSample, Schedule};

/// The minimum SoC spacing for a cycle of `period_ns` whose planned
/// isochronous span (SoC to SoA with every CN's full response window) is
/// `planned_ns`: the span, at most half the cycle.
pub fn spacing_floor(period_ns: u64, planned_ns: u64) -> u64 {
    planned_ns.min(period_ns / 2)
}

/// The planned isochronous span of a cycle, as the reference reserves it:
/// the SoC's frame time, then per CN its response window (`timeout_ns`,
/// which starts at the PReq's send); chained, the PResMN's frame time, one
/// window and one PRes slot (`chain_step_ns`) per further CN.
pub fn planned_span(
    soc_frame_ns: u64,
    cns: u64,
    timeout_ns: u64,
    chained: Option<(u64, u64)>,
) -> u64 {
    match chained {
        None => soc_frame_ns + cns * timeout_ns,
        Some((pres_mn_frame_ns, chain_step_ns)) => {
            soc_frame_ns + pres_mn_frame_ns + timeout_ns + cns.saturating_sub(1) * chain_step_ns
        }
    }
}

/// A measurement's schedule counts (or the whole schedule's).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SocCounts {
    /// Cycles run.
    pub cycles: u64,
    /// Releases due: cycles plus skipped.
    pub releases: u64,
    /// Releases skipped: after an overrun, or passed over for the spacing.
    pub skipped: u64,
    /// Cycles that ran past the next release.
    pub overruns: u64,
    /// Of the skipped, the releases passed over for the spacing floor.
    pub spaced: u64,
}

/// The MN's SoC schedule; see the module doc.
#[derive(Debug, Clone)]
pub struct SocSchedule {
    grid: Schedule,
    floor_ns: u64,
    last_soc: Option<u64>,
    spaced: u64,
    /// Counts when the measurement started.
    mark: SocCounts,
    /// Smallest distance between two consecutive SoCs' send instants
    /// since the mark, ns.
    min_spacing: Option<u64>,
}

impl SocSchedule {
    /// A schedule whose release 0 is at `t0`, every `period_ns`, keeping
    /// SoCs at least `floor_ns` apart.
    pub fn new(t0: u64, period_ns: u64, floor_ns: u64) -> SocSchedule {
        SocSchedule {
            grid: Schedule::new(t0, period_ns),
            floor_ns,
            last_soc: None,
            spaced: 0,
            mark: SocCounts::default(),
            min_spacing: None,
        }
    }

    /// The first release of the grid.
    pub fn t0(&self) -> u64 {
        self.grid.t0()
    }

    /// The cycle time.
    pub fn period(&self) -> u64 {
        self.grid.period()
    }

    /// The minimum spacing of two SoCs.
    pub fn floor_ns(&self) -> u64 {
        self.floor_ns
    }

    /// The release the next SoC is due at: the grid's next one, passing
    /// over those earlier than the last SoC + the floor.
    pub fn next_release(&mut self) -> u64 {
        if let Some(last) = self.last_soc {
            while self.grid.next_release() < last.saturating_add(self.floor_ns) {
                self.grid.pass_over();
                self.spaced += 1;
            }
        }
        self.grid.next_release()
    }

    /// Accounts the cycle that served [`SocSchedule::next_release`]: woken
    /// at `wake`, its SoC sent at `soc_sent`, its last frame out at `end`
    /// (all CLOCK_MONOTONIC).
    pub fn complete(&mut self, wake: u64, soc_sent: u64, end: u64) -> CycleSample {
        if let Some(last) = self.last_soc {
            let d = soc_sent.saturating_sub(last);
            self.min_spacing = Some(self.min_spacing.map_or(d, |m| m.min(d)));
        }
        self.last_soc = Some(soc_sent);
        self.grid.complete(wake, end)
    }

    /// The counts of the whole schedule, bring-up included.
    fn total(&self) -> SocCounts {
        SocCounts {
            cycles: self.grid.cycles(),
            releases: self.grid.releases(),
            skipped: self.grid.skipped(),
            overruns: self.grid.overruns(),
            spaced: self.spaced,
        }
    }

    /// Starts the measurement at the first release at or after `at`
    /// (passing over, uncounted, the grid's releases before it), and
    /// returns that release. From here on [`SocSchedule::counts`] and
    /// [`SocSchedule::min_spacing_ns`] count the measurement only; the
    /// spacing rule still holds across the hand-over.
    pub fn start_measurement(&mut self, at: u64) -> u64 {
        while self.next_release() < at {
            self.grid.pass_over();
        }
        self.mark = self.total();
        self.min_spacing = None;
        self.grid.next_release()
    }

    /// The measurement's counts (everything, when it has not started).
    pub fn counts(&self) -> SocCounts {
        let (t, m) = (self.total(), self.mark);
        SocCounts {
            cycles: t.cycles - m.cycles,
            releases: t.releases - m.releases,
            skipped: t.skipped - m.skipped,
            overruns: t.overruns - m.overruns,
            spaced: t.spaced - m.spaced,
        }
    }

    /// The smallest distance between two consecutive SoCs' send instants
    /// since the measurement started (its first SoC against the last one
    /// before it included), ns.
    pub fn min_spacing_ns(&self) -> Option<u64> {
        self.min_spacing
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: u64 = 1_000;

    #[test]
    fn the_floor_is_the_planned_span_at_most_half_a_cycle() {
        // 3 CNs, 100 µs windows, SoC 6.72 µs on the wire.
        let d = planned_span(6_720, 3, 100 * US, None);
        assert_eq!(d, 306_720);
        assert_eq!(spacing_floor(1_000 * US, d), 306_720);
        assert_eq!(spacing_floor(500 * US, d), 250 * US);
        // Chained: PResMN, one window, then one slot per further CN.
        assert_eq!(
            planned_span(6_720, 3, 100 * US, Some((10_000, 7_000))),
            6_720 + 10_000 + 100_000 + 14_000
        );
    }

    #[test]
    fn after_a_late_wake_up_the_next_soc_keeps_the_floor() {
        // 500 µs cycle, floor 250 µs: the SoC of release 0 leaves 440 µs
        // late; release 1 (60 µs after it) is passed over, the next SoC
        // goes at release 2.
        let mut s = SocSchedule::new(1_000 * US, 500 * US, 250 * US);
        assert_eq!(s.next_release(), 1_000 * US);
        let sample = s.complete(1_440 * US, 1_441 * US, 1_500 * US - 5 * US);
        assert!(!sample.overrun, "its SoA went before the next release");
        assert_eq!(s.next_release(), 2_000 * US);
        let c = s.counts();
        assert_eq!((c.cycles, c.releases, c.skipped), (1, 2, 1));
        assert_eq!((c.overruns, c.spaced), (0, 1));
        s.complete(2_000 * US + 10 * US, 2_000 * US + 11 * US, 2_100 * US);
        assert_eq!(s.min_spacing_ns(), Some(570 * US));
        assert!(s.min_spacing_ns().unwrap() >= s.floor_ns());
    }

    #[test]
    fn a_wake_up_late_by_less_than_the_slack_keeps_the_next_release() {
        let mut s = SocSchedule::new(0, 500 * US, 250 * US);
        s.next_release();
        s.complete(200 * US, 201 * US, 260 * US);
        // 500 − 201 = 299 µs ≥ 250 µs: release 1 is kept.
        assert_eq!(s.next_release(), 500 * US);
        assert_eq!(s.counts().spaced, 0);
    }

    #[test]
    fn whatever_the_wake_ups_no_two_socs_are_closer_than_the_floor() {
        // A wake-up latency pattern with every kind of lateness.
        let (period, floor) = (500 * US, 250 * US);
        let mut s = SocSchedule::new(0, period, floor);
        let mut sent = Vec::new();
        for k in 0..400u64 {
            let release = s.next_release();
            let late = (k * 7919 % 613) * US; // 0..612 µs
            let wake = release + late;
            let soc = wake + 2 * US;
            sent.push(soc);
            s.complete(wake, soc, soc + 55 * US);
        }
        let min = sent.windows(2).map(|w| w[1] - w[0]).min().unwrap();
        assert!(min >= floor, "{min}");
        assert_eq!(s.min_spacing_ns(), Some(min));
        let c = s.counts();
        assert_eq!(c.cycles + c.skipped, c.releases);
        assert!(c.spaced > 0 && c.overruns > 0, "{c:?}");
    }

    #[test]
    fn the_measurement_continues_the_bring_up_grid_and_counts_its_own() {
        let mut s = SocSchedule::new(10_000 * US, 1_000 * US, 300 * US);
        for _ in 0..5 {
            let r = s.next_release();
            s.complete(r + US, r + 2 * US, r + 100 * US);
        }
        // The measurement may start at 16.5 ms: its first release is the
        // grid's 17 ms, not 16.5 ms.
        assert_eq!(s.start_measurement(16_500 * US), 17_000 * US);
        assert_eq!(s.counts(), SocCounts::default());
        let r = s.next_release();
        assert_eq!(r, 17_000 * US);
        s.complete(r + US, r + 2 * US, r + 100 * US);
        let c = s.counts();
        assert_eq!((c.cycles, c.releases, c.skipped), (1, 1, 0));
        // The first measured SoC against the bring-up's last one (14 ms:
        // the releases of 15 and 16 ms were not served).
        assert_eq!(s.min_spacing_ns(), Some(3_000 * US));
        assert_eq!(s.t0(), 10_000 * US);
    }
}
