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
}

/// What to record for observing `tids` (kernel thread ids), with or
/// without explanations. With no thread known yet (a command not started),
/// or with `explain`, everything unfiltered.
pub fn selection(tids: &[u32], explain: bool) -> Selection {
    if explain {
        return Selection {
            points: TracePoint::ALL.to_vec(),
            filters: Vec::new(),
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
    Selection { points, filters }
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
