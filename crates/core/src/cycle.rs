//! The periodic release schedule of a cyclic task and the per-cycle metrics,
//! exactly as `docs/design.md` defines them.
//!
//! Releases are `t_release,k = t_0 + k·T0` on one monotonic clock. For each
//! measured cycle k, with start `t_start,k` (wake-up) and end `t_end,k`:
//!
//! * wake-up latency `L_k = t_start,k − t_release,k`;
//! * period `T_per,k = t_start,k − t_start,k−1` (from the second cycle on);
//! * periodic jitter `J_k = T_per,k − (t_release,k − t_release,k−1)`, signed;
//! * execution time `E_k = t_end,k − t_start,k`;
//! * overrun: `t_end,k > t_release,k+1`. The task then waits for the first
//!   release at or after `t_end,k`; the releases passed over are *skipped*
//!   and counted, so the task never runs a burst of catch-up cycles (the
//!   cyclictest rule, and what a PLC runtime does). Always:
//!   `cycles + skipped = releases`.
//!
//! The skip rule itself is [`next_release_after`]: [`Schedule`] applies it
//! to the end of each cycle, and the event probes that pace themselves on a
//! release grid (`ctxswitch`, `response`) apply it to the moment they are
//! ready for the next release, so it exists once.
//!
//! [`run`] is the probe loop itself, generic over a [`Clock`], so the very
//! loop that runs on the machine is driven in tests by an injected clock.
//! With the real clock it compiles to: read clock, sleep, read clock, work,
//! read clock, record — nothing else.
//!
//! Beside the sample live the two words every consumer of it shares: the
//! [`Metric`]s a sample carries and the [`CycleSink`](crate::recorder::CycleSink) trait a probe pushes samples
//! into (implemented in `recorder` and `window`).

/// One measured cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CycleSample {
    /// 0-based number of this measured cycle.
    pub cycle: u64,
    /// 0-based index of the release this cycle served.
    pub release_index: u64,
    /// Scheduled release time (absolute, ns).
    pub release: u64,
    /// Wake-up time (absolute, ns).
    pub start: u64,
    /// End of the cycle's work (absolute, ns).
    pub end: u64,
    /// `L_k`, ns.
    pub latency: i64,
    /// `T_per,k`, ns; `None` for the first cycle.
    pub period: Option<i64>,
    /// `J_k`, ns; `None` for the first cycle.
    pub jitter: Option<i64>,
    /// `E_k`, ns.
    pub exec: i64,
    /// True when this cycle ran past the next release.
    pub overrun: bool,
    /// Releases skipped because of this cycle's overrun.
    pub skipped: u64,
}

/// The metrics a cyclic probe measures, in the order rows store them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Metric {
    /// Wake-up latency `L_k`.
    Latency = 0,
    /// Period `T_per,k`.
    Period = 1,
    /// Periodic jitter `J_k` (signed).
    Jitter = 2,
    /// Execution time `E_k`.
    Exec = 3,
}

/// All metrics in storage order.
pub const METRICS: [Metric; 4] = [
    Metric::Latency,
    Metric::Period,
    Metric::Jitter,
    Metric::Exec,
];

impl Metric {
    /// The metric's value in a sample, if the sample has one.
    #[inline(always)]
    pub fn value(self, s: &CycleSample) -> Option<i64> {
        match self {
            Metric::Latency => Some(s.latency),
            Metric::Period => s.period,
            Metric::Jitter => s.jitter,
            Metric::Exec => Some(s.exec),
        }
    }

    /// The name used in CLI, JSON, CSV and the database.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Latency => "latency",
            Metric::Period => "period",
            Metric::Jitter => "jitter",
            Metric::Exec => "exec",
        }
    }

    /// True for metrics whose share over the user's threshold means something
    /// (a late wake-up, a large jitter); a period or an execution time is
    /// compared with its own limit (`--max-exec`) instead.
    pub fn thresholded(self) -> bool {
        matches!(self, Metric::Latency | Metric::Jitter)
    }

    /// True for metrics with a meaningful negative side.
    pub fn signed(self) -> bool {
        matches!(self, Metric::Jitter)
    }
}

/// The release schedule and the cycle accounting of one periodic task.
#[derive(Debug, Clone)]
pub struct Schedule {
    t0: u64,
    period: u64,
    next_index: u64,
    prev: Option<(u64, u64)>, // (start, release) of the previous measured cycle
    cycles: u64,
    skipped: u64,
    overruns: u64,
}

impl Schedule {
    /// A schedule whose release 0 is at `t0` with period `period` ns (> 0).
    pub fn new(t0: u64, period: u64) -> Schedule {
        assert!(period > 0, "period must be positive");
        Schedule {
            t0,
            period,
            next_index: 0,
            prev: None,
            cycles: 0,
            skipped: 0,
            overruns: 0,
        }
    }

    /// The first release time.
    pub fn t0(&self) -> u64 {
        self.t0
    }

    /// The period T0 in ns.
    pub fn period(&self) -> u64 {
        self.period
    }

    /// The release the task waits for next.
    #[inline(always)]
    pub fn next_release(&self) -> u64 {
        self.t0 + self.next_index * self.period
    }

    /// Releases that have come due so far: measured cycles plus skipped ones.
    pub fn releases(&self) -> u64 {
        self.next_index
    }

    /// Measured cycles.
    pub fn cycles(&self) -> u64 {
        self.cycles
    }

    /// Releases skipped after overruns.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Cycles that overran.
    pub fn overruns(&self) -> u64 {
        self.overruns
    }

    /// Passes over the release the task would serve next without a cycle
    /// for it: counted skipped (so `cycles + skipped = releases` holds), not
    /// as an overrun. For a caller whose own rule forbids that release (a
    /// minimum spacing between two cycles' starts).
    pub fn pass_over(&mut self) {
        self.next_index += 1;
        self.skipped += 1;
    }

    /// Accounts the cycle that served [`Schedule::next_release`], started at
    /// `start` and ended at `end`, and moves on to the next release to serve.
    #[inline(always)]
    pub fn complete(&mut self, start: u64, end: u64) -> CycleSample {
        let k = self.next_index;
        let release = self.next_release();
        let latency = start as i64 - release as i64;
        let (period, jitter) = match self.prev {
            Some((prev_start, prev_release)) => {
                let per = start as i64 - prev_start as i64;
                (Some(per), Some(per - (release - prev_release) as i64))
            }
            None => (None, None),
        };
        // A release at `end` itself is still served (with zero latency): the
        // releases skipped are those before `end`, i.e. at or before end − 1.
        let (_, skipped) = next_release_after(release, self.period, end.saturating_sub(1));
        let (overrun, next) = (skipped > 0, k + 1 + skipped);
        let sample = CycleSample {
            cycle: self.cycles,
            release_index: k,
            release,
            start,
            end,
            latency,
            period,
            jitter,
            exec: end as i64 - start as i64,
            overrun,
            skipped,
        };
        self.cycles += 1;
        self.skipped += skipped;
        self.overruns += overrun as u64;
        self.next_index = next;
        self.prev = Some((start, release));
        sample
    }
}

/// The skip-after-overrun rule on the release grid `release + k·period`
/// (k ≥ 1): the first release after `now`, and how many grid points were
/// passed over to get there (0 when the next one is still ahead). A point
/// at `now` itself has come due, so it is passed over: a task never runs a
/// burst of catch-up releases. `period` must be positive.
#[inline]
pub fn next_release_after(release: u64, period: u64, now: u64) -> (u64, u64) {
    let next = release.saturating_add(period);
    if now < next {
        return (next, 0);
    }
    // `now` is at or past `next`: jump to the first point after `now`.
    let behind = (now - next) / period + 1;
    (next.saturating_add(behind.saturating_mul(period)), behind)
}

/// The clock a probe loop reads and sleeps on.
pub trait Clock {
    /// Current time, ns, monotonic.
    fn now(&mut self) -> u64;
    /// Sleeps until the absolute time `t` (returns at or after `t`).
    fn sleep_until(&mut self, t: u64);
}

/// What the loop does after a cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Go on with the next release.
    Continue,
    /// End the loop.
    Stop,
}

/// Runs the periodic loop: sleep to the release, stamp the start, do `work`,
/// stamp the end, account the cycle, hand it to `on_cycle`, until `on_cycle`
/// returns [`Flow::Stop`].
#[inline(always)]
pub fn run<C: Clock, W: FnMut(), S: FnMut(&CycleSample) -> Flow>(
    clock: &mut C,
    schedule: &mut Schedule,
    mut work: W,
    mut on_cycle: S,
) {
    loop {
        clock.sleep_until(schedule.next_release());
        let start = clock.now();
        work();
        let end = clock.now();
        let sample = schedule.complete(start, end);
        if on_cycle(&sample) == Flow::Stop {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scripted clock: the i-th sleep wakes `wake_delays[i]` ns after its
    /// deadline; the i-th cycle's work takes `work[i]` ns (the second clock
    /// read after a sleep returns the start plus that).
    struct ScriptClock {
        t: u64,
        wake_delays: Vec<u64>,
        work: Vec<u64>,
        sleeps: usize,
        reads_since_sleep: u32,
    }

    impl Clock for ScriptClock {
        fn now(&mut self) -> u64 {
            self.reads_since_sleep += 1;
            if self.reads_since_sleep == 2 {
                self.t += self.work.get(self.sleeps - 1).copied().unwrap_or(0);
            }
            self.t
        }
        fn sleep_until(&mut self, t: u64) {
            let d = self.wake_delays.get(self.sleeps).copied().unwrap_or(0);
            self.sleeps += 1;
            self.reads_since_sleep = 0;
            // Never earlier than the deadline; if already past it, wake now.
            self.t = self.t.max(t) + d;
        }
    }

    fn drive(clock: &mut ScriptClock, sched: &mut Schedule, n: usize) -> Vec<CycleSample> {
        let mut out = Vec::new();
        run(
            clock,
            sched,
            || {},
            |s| {
                out.push(*s);
                if out.len() == n {
                    Flow::Stop
                } else {
                    Flow::Continue
                }
            },
        );
        out
    }

    #[test]
    fn formulas_on_a_hand_computed_run() {
        // T0 = 1000 ns from t0 = 10_000; wake delays 10, 50, 5, 0; work 100 ns.
        let mut clock = ScriptClock {
            t: 0,
            wake_delays: vec![10, 50, 5, 0],
            work: vec![100; 4],
            sleeps: 0,
            reads_since_sleep: 0,
        };
        let mut sched = Schedule::new(10_000, 1_000);
        let out = drive(&mut clock, &mut sched, 4);
        let lat: Vec<i64> = out.iter().map(|s| s.latency).collect();
        assert_eq!(lat, vec![10, 50, 5, 0]);
        let per: Vec<Option<i64>> = out.iter().map(|s| s.period).collect();
        assert_eq!(per, vec![None, Some(1040), Some(955), Some(995)]);
        let jit: Vec<Option<i64>> = out.iter().map(|s| s.jitter).collect();
        // J_k = T_per,k − T0: a late start then an earlier one is a negative jitter.
        assert_eq!(jit, vec![None, Some(40), Some(-45), Some(-5)]);
        assert!(out.iter().all(|s| s.exec == 100 && !s.overrun));
        assert_eq!(sched.releases(), 4);
        assert_eq!(sched.cycles() + sched.skipped(), sched.releases());
    }

    #[test]
    fn injected_overrun_skips_forward_without_catch_up_burst() {
        // Cycle 1 works 3_500 ns in a 1_000 ns period.
        let mut clock = ScriptClock {
            t: 0,
            wake_delays: vec![0; 4],
            work: vec![100, 3_500, 100, 100],
            sleeps: 0,
            reads_since_sleep: 0,
        };
        let mut sched = Schedule::new(0, 1_000);
        let out = drive(&mut clock, &mut sched, 4);
        // Cycle 1 served release 1 (1_000), ended at 4_500: releases 2, 3 and
        // 4 are skipped, the next cycle serves release 5 on time.
        assert_eq!(out[1].release_index, 1);
        assert!(out[1].overrun);
        assert_eq!(out[1].skipped, 3);
        assert_eq!(out[2].release_index, 5);
        assert_eq!(out[2].start, 5_000);
        assert_eq!(out[2].latency, 0);
        assert_eq!(out[2].period, Some(4_000));
        // Jitter is relative to the releases actually served: zero.
        assert_eq!(out[2].jitter, Some(0));
        // No burst: consecutive starts after the overrun are one period apart.
        assert_eq!(out[3].start - out[2].start, 1_000);
        assert_eq!(
            (sched.cycles(), sched.skipped(), sched.releases()),
            (4, 3, 7)
        );
        assert_eq!(sched.overruns(), 1);
    }

    #[test]
    fn overrun_accounting_is_exact() {
        let mut sched = Schedule::new(0, 1_000);
        let s0 = sched.complete(0, 3_500);
        assert_eq!((s0.overrun, s0.skipped), (true, 3));
        assert_eq!(sched.next_release(), 4_000);
        assert_eq!(
            (sched.cycles(), sched.skipped(), sched.releases()),
            (1, 3, 4)
        );
        // Ending exactly on a release is not an overrun past it: that release
        // is served (with zero latency), not skipped.
        let s1 = sched.complete(4_000, 5_000);
        assert_eq!((s1.overrun, s1.skipped), (false, 0));
        let s2 = sched.complete(5_000, 7_000);
        assert_eq!((s2.overrun, s2.skipped), (true, 1));
        assert_eq!(sched.next_release(), 7_000);
        assert_eq!(sched.overruns(), 2);
        assert_eq!(sched.cycles() + sched.skipped(), sched.releases());
    }

    #[test]
    fn next_release_skips_missed_points_without_a_burst() {
        // On time: the next grid point, nothing skipped.
        assert_eq!(next_release_after(1_000, 100, 1_050), (1_100, 0));
        // Exactly at the next point: it is due now, so it counts as missed.
        assert_eq!(next_release_after(1_000, 100, 1_100), (1_200, 1));
        // 2.5 intervals late: points 1100 and 1200 skipped.
        assert_eq!(next_release_after(1_000, 100, 1_250), (1_300, 2));
    }

    #[test]
    fn late_wake_up_alone_is_an_overrun() {
        let mut sched = Schedule::new(0, 1_000);
        // Woken 2_500 ns late, tiny work: ends past release 1 and 2.
        let s = sched.complete(2_500, 2_600);
        assert_eq!(s.latency, 2_500);
        assert!(s.overrun);
        assert_eq!(s.skipped, 2);
        assert_eq!(sched.next_release(), 3_000);
    }
}
