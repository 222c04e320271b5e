//! The SoC period and jitter as the CN side received them (`rx-period`,
//! `rx-jitter`), from the receive stamps the CN emulator hands over.
//!
//! `rx-period` is the distance between the receive stamps of two SoCs in a
//! row; `rx-jitter` is that minus the distance of the releases they
//! opened. With both roles here the MN writes each release's time since
//! its first release into the SoC's RelativeTime (µs), so the releases
//! are known exactly, skipped ones included. A foreign MN's RelativeTime
//! says nothing of its schedule (`--role cn`): the releases between two
//! SoCs are then the nominal cycles nearest to the stamps' distance
//! (at least one).

use jitterlab_core::recorder::{slots, Sample, SampleSink};

use super::cn::SocRx;
use crate::probe::Recorder;

/// The previous SoC and how to read the next one.
#[derive(Debug, Clone)]
pub struct RxPeriods {
    period_ns: u64,
    /// The RelativeTime is ours (both roles here).
    relative_is_ours: bool,
    prev: Option<(u64, u64)>,
    pushed: u64,
}

impl RxPeriods {
    /// For a cycle of `period_ns`; `relative_is_ours`: the SoCs'
    /// RelativeTime is our MN's.
    pub fn new(period_ns: u64, relative_is_ours: bool) -> RxPeriods {
        RxPeriods {
            period_ns,
            relative_is_ours,
            prev: None,
            pushed: 0,
        }
    }

    /// The release a SoC opened: its RelativeTime in cycles, rounded.
    fn release_of(&self, soc: &SocRx) -> u64 {
        (soc.relative_us * 1_000 + self.period_ns / 2) / self.period_ns
    }

    /// `(rx-period, rx-jitter)` of `soc` after the previous one, if there
    /// is a previous one of an earlier release.
    pub fn next(&mut self, soc: SocRx) -> Option<(i64, i64)> {
        let release = self.release_of(&soc);
        let prev = self.prev.replace((release, soc.rx_ns));
        let (prev_release, prev_rx) = prev?;
        let per = soc.rx_ns as i64 - prev_rx as i64;
        let cycles = match self.relative_is_ours {
            true if release > prev_release => release - prev_release,
            true => return None,
            false => ((per.max(0) as u64 + self.period_ns / 2) / self.period_ns).max(1),
        };
        Some((per, per - (cycles * self.period_ns) as i64))
    }

    /// Pushes the sample of `soc`, if it makes one, at `at`.
    pub fn push(&mut self, recorder: &mut Recorder, soc: SocRx, at: u64) {
        if let Some((per, jit)) = self.next(soc) {
            recorder.push(&Sample {
                index: self.pushed,
                at,
                values: slots([None, None, None, None, None, Some(per), Some(jit)]),
            });
            self.pushed += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn soc(relative_us: u64, rx_ns: u64) -> SocRx {
        SocRx { relative_us, rx_ns }
    }

    #[test]
    fn our_relative_time_names_the_releases_skipped_ones_too() {
        let mut r = RxPeriods::new(500_000, true);
        assert_eq!(r.next(soc(0, 1_000_000)), None);
        assert_eq!(r.next(soc(500, 1_500_300)), Some((500_300, 300)));
        // Release 2 was skipped: 3 is 1000 µs after 1.
        assert_eq!(r.next(soc(1500, 2_499_900)), Some((999_600, -400)));
        // A repeated or older SoC makes no sample, and starts again.
        assert_eq!(r.next(soc(1500, 2_600_000)), None);
        assert_eq!(r.next(soc(2000, 3_100_000)), Some((500_000, 0)));
    }

    #[test]
    fn a_foreign_mns_cycles_are_the_nearest_whole_periods() {
        let mut r = RxPeriods::new(500_000, false);
        assert_eq!(r.next(soc(77, 10_000_000)), None);
        assert_eq!(r.next(soc(1, 10_499_000)), Some((499_000, -1_000)));
        assert_eq!(r.next(soc(9, 11_510_000)), Some((1_011_000, 11_000)));
        // Far too early still counts one cycle.
        assert_eq!(r.next(soc(9, 11_610_000)), Some((100_000, -400_000)));
    }
}
