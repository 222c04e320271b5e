//! What the tracer records for `run observe`: the tracepoints and each
//! one's kernel-side filter, chosen from the observed threads and whether
//! explanations are asked for.
//!
//! Every traced event is written by the kernel on the CPU where it
//! happens, inside the observed task's own wake-up path for the events
//! between its timer's expiry and its switch in: recording less is how
//! observing costs the task less. Explaining a late cycle needs every
//! event of its CPU (who ran, which IRQ, which softirq), so with
//! `--explain` everything is recorded, unfiltered. Without it, the cycles
//! need only:
//!
//! * `sched_switch` of the observed threads (in and out) and the switches
//!   to idle, which say when a CPU went idle for the kernels that trace no
//!   switch out of idle (see [`super::cycles`]);
//! * `sched_wakeup` of the observed threads (`sched_waking`, the same
//!   wake-up a few instructions earlier, is left out);
//! * `hrtimer_start` by the observed threads (the sleep they arm);
//! * `hrtimer_expire_entry` of the timers a thread sleeps on: those whose
//!   callback wakes a sleeper (`hrtimer_wakeup`: `clock_nanosleep`,
//!   `nanosleep`, `poll`/`epoll` time-outs), a timerfd, a POSIX timer or an
//!   itimer. The expiry runs in the timer interrupt, in whatever task's
//!   context, so it cannot be filtered by pid; a kernel whose filters do
//!   not know `.function` (older than 6.1) records every expiry.
//!
//! Once the observed thread is known to be released by its own timer —
//! [`TimerReleased`]: at least [`RELEASED_BY_TIMER`] of its first
//! [`FIRST_CYCLES`] cycles — its `sched_wakeup` is not recorded either
//! ([`Selection::timer_released`], the tracepoint disabled in the
//! instance): the expiry already marks both its release and the interrupt
//! that wakes it, and the wake-up was the second record written in its
//! wake-up path. Measured (`bench/tracepoint_cost.sh`, BENCHMARKS.md):
//! cyclictest's median latency +1.49 µs with the four tracepoints, +0.88
//! without the wake-up. What the cycles lose: each cycle's `wake_ns`, and
//! an untraced start (see [`super::cycles`]) is taken at the expiry, the
//! wake-up's fraction of a microsecond before, or, when the expiry was
//! on another CPU than the thread ran, not measured.
//!
//! IRQ and softirq events are not recorded then, nor the idle task's
//! timers: a start the kernel traces no switch for (see
//! [`super::cycles`]) is then taken at the last of the wake-up and the
//! expiry, a lower bound looser than with `--explain`. The filters are the
//! kernel's event filter syntax (tracefs `events/*/*/filter`), written
//! into the tracer's private instance only.

use crate::trace::decode::TracePoint;

/// The longest filter written: the kernel refuses one of a page or more.
pub const MAX_FILTER: usize = 4000;

/// The timer callbacks a periodic thread's sleep ends in.
pub const SLEEP_CALLBACKS: [&str; 4] = [
    "hrtimer_wakeup",
    "timerfd_tmrproc",
    "posix_timer_fn",
    "it_real_fn",
];

/// The tracepoints to record and the filters to set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// The tracepoints recorded.
    pub points: Vec<TracePoint>,
    /// Each filtered tracepoint's filter; the others record every event.
    pub filters: Vec<(TracePoint, String)>,
    /// Tracepoints of `points` recorded no more (disabled).
    pub off: Vec<TracePoint>,
}

impl Selection {
    /// The selection for a thread known to be released by its own timer
    /// (module doc): its wake-ups are not recorded. Their filter stays
    /// (switched off, the tracepoint records nothing; cleared first, it
    /// would record every wake-up of the machine until then). With
    /// `--explain` (every event recorded, unfiltered) nothing changes.
    pub fn timer_released(mut self) -> Selection {
        if self.filters.is_empty() {
            // Unfiltered: every event recorded, as explaining asks.
            return self;
        }
        self.off.push(TracePoint::SchedWakeup);
        self
    }
}

/// Cycles [`TimerReleased`] decides from.
pub const FIRST_CYCLES: u32 = 32;

/// Of them, how many must be released by the thread's own timer.
pub const RELEASED_BY_TIMER: u32 = 30;

/// Whether the observed thread is released by its own timer: decided once,
/// from its first [`FIRST_CYCLES`] cycles, at least [`RELEASED_BY_TIMER`]
/// of them released by the expiry of the timer it slept on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TimerReleased {
    cycles: u32,
    by_timer: u32,
}

impl TimerReleased {
    /// Takes the thread's next cycle (`by_timer`: released by its timer);
    /// true once, at the cycle that decides it is.
    pub fn take(&mut self, by_timer: bool) -> bool {
        if self.cycles >= FIRST_CYCLES {
            return false;
        }
        self.cycles += 1;
        self.by_timer += u32::from(by_timer);
        self.cycles == FIRST_CYCLES && self.by_timer >= RELEASED_BY_TIMER
    }
}

/// What to record for observing `tids` (kernel thread ids), with or
/// without explanations. With no thread known yet (a command not started),
/// or with `explain`, everything unfiltered.
pub fn selection(tids: &[u32], explain: bool) -> Selection {
    if explain {
        return Selection {
            points: TracePoint::ALL.to_vec(),
            filters: Vec::new(),
            off: Vec::new(),
        };
    }
    let points = vec![
        TracePoint::SchedWakeup,
        TracePoint::SchedSwitch,
        TracePoint::HrtimerStart,
        TracePoint::HrtimerExpireEntry,
    ];
    let mut filters = Vec::new();
    filters.push((TracePoint::HrtimerExpireEntry, expiry_filter()));
    filters.extend(
        [
            TracePoint::SchedWakeup,
            TracePoint::SchedSwitch,
            TracePoint::HrtimerStart,
        ]
        .into_iter()
        .filter_map(|p| pid_filter(p, tids).map(|f| (p, f))),
    );
    Selection {
        points,
        filters,
        off: Vec::new(),
    }
}

/// The filter of `point` that keeps the events of `tids`; `None` where
/// the point is not filtered by pid, there is no thread, or the filter
/// would be longer than [`MAX_FILTER`] (then every event is recorded).
pub fn pid_filter(point: TracePoint, tids: &[u32]) -> Option<String> {
    if tids.is_empty() {
        return None;
    }
    let fields: &[&str] = match point {
        TracePoint::SchedSwitch => &["prev_pid", "next_pid"],
        TracePoint::SchedWaking | TracePoint::SchedWakeup => &["pid"],
        TracePoint::HrtimerStart => &["common_pid"],
        _ => return None,
    };
    let mut terms: Vec<String> = tids
        .iter()
        .flat_map(|t| fields.iter().map(move |f| format!("{f} == {t}")))
        .collect();
    if point == TracePoint::SchedSwitch {
        terms.push("next_pid == 0".into());
    }
    let f = terms.join(" || ");
    (f.len() <= MAX_FILTER).then_some(f)
}

/// The filter of `hrtimer_expire_entry` that keeps the expiries of the
/// timers a thread sleeps on ([`SLEEP_CALLBACKS`]).
pub fn expiry_filter() -> String {
    SLEEP_CALLBACKS
        .iter()
        .map(|f| format!("function.function == {f}"))
        .collect::<Vec<_>>()
        .join(" || ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explaining_records_every_tracepoint_unfiltered() {
        let s = selection(&[42], true);
        assert_eq!(s.points, TracePoint::ALL.to_vec());
        assert!(s.filters.is_empty());
    }

    #[test]
    fn without_explanations_only_the_threads_scheduling_and_sleep_timers_are_recorded() {
        let s = selection(&[42, 43], false);
        assert_eq!(
            s.points,
            [
                TracePoint::SchedWakeup,
                TracePoint::SchedSwitch,
                TracePoint::HrtimerStart,
                TracePoint::HrtimerExpireEntry,
            ]
        );
        let f = |p: TracePoint| {
            s.filters
                .iter()
                .find(|(q, _)| *q == p)
                .map(|(_, f)| f.as_str())
        };
        assert_eq!(
            f(TracePoint::SchedSwitch),
            Some("prev_pid == 42 || next_pid == 42 || prev_pid == 43 || next_pid == 43 || next_pid == 0")
        );
        assert_eq!(f(TracePoint::SchedWakeup), Some("pid == 42 || pid == 43"));
        assert_eq!(
            f(TracePoint::HrtimerStart),
            Some("common_pid == 42 || common_pid == 43")
        );
        assert_eq!(
            f(TracePoint::HrtimerExpireEntry),
            Some("function.function == hrtimer_wakeup || function.function == timerfd_tmrproc || function.function == posix_timer_fn || function.function == it_real_fn")
        );
    }

    #[test]
    fn a_thread_released_by_its_timer_has_its_wake_ups_left_out() {
        let s = selection(&[42], false).timer_released();
        assert_eq!(s.off, [TracePoint::SchedWakeup]);
        // The filters as they were: the wake-ups' stays, not cleared.
        assert_eq!(
            (s.points, s.filters),
            (
                selection(&[42], false).points,
                selection(&[42], false).filters
            )
        );
        // Explaining records everything still.
        assert_eq!(
            selection(&[42], true).timer_released(),
            selection(&[42], true)
        );
    }

    #[test]
    fn timer_released_is_decided_once_from_the_first_32_cycles() {
        let decide = |by_timer: &[bool]| {
            let mut r = TimerReleased::default();
            by_timer
                .iter()
                .enumerate()
                .filter(|(_, &b)| r.take(b))
                .map(|(i, _)| i)
                .collect::<Vec<_>>()
        };
        // 32 of 32: decided at the 32nd cycle, once.
        assert_eq!(decide(&[true; 40]), [31]);
        // 30 of 32: yes; 29 of 32: never, whatever follows.
        let mut v = vec![true; 40];
        v[3] = false;
        v[9] = false;
        assert_eq!(decide(&v), [31]);
        v[20] = false;
        assert_eq!(decide(&v), Vec::<usize>::new());
        assert_eq!(decide(&[false; 64]), Vec::<usize>::new());
    }

    #[test]
    fn no_thread_yet_filters_nothing_by_pid() {
        let s = selection(&[], false);
        assert_eq!(s.filters.len(), 1);
        assert_eq!(s.filters[0].0, TracePoint::HrtimerExpireEntry);
        assert_eq!(pid_filter(TracePoint::SchedSwitch, &[]), None);
        assert_eq!(pid_filter(TracePoint::HrtimerExpireEntry, &[1]), None);
        assert_eq!(pid_filter(TracePoint::IrqHandlerEntry, &[1]), None);
    }

    #[test]
    fn a_filter_too_long_for_the_kernel_is_not_set() {
        // 46 bytes a seven-digit thread ("prev_pid == 1000000 || next_pid
        // == 1000000 || ") and 13 for idle: 86 threads fit, 87 do not.
        let tids: Vec<u32> = (1_000_000..1_000_087).collect();
        assert_eq!(
            pid_filter(TracePoint::SchedSwitch, &tids[..86]).map(|f| f.len()),
            Some(3969)
        );
        assert_eq!(pid_filter(TracePoint::SchedSwitch, &tids), None);
        assert!(pid_filter(TracePoint::SchedWakeup, &tids).is_some());
    }
}
