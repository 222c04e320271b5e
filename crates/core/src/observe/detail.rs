//! What an `observe` run stores as its result's `detail`, beyond its
//! metrics: which thread it watched and why that one, the period `T0` and
//! where it came from, the counts the metrics do not carry (overruns,
//! migrations, cycles not measured because trace events were lost) and
//! the explanations of its late cycles. The text report prints it
//! ([`ObserveDetail::lines`], [`Explanation::line`]); a stored run of an
//! older version without a field reads it as empty.

use serde::{Deserialize, Serialize};

use super::cycles::PeriodSource;
use crate::explain::Explanation;
use crate::units::{format_duration_exact, CpuList};

/// The `detail` of an `observe` result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObserveDetail {
    /// What was asked for (`pid 1234`, `comm plc`, …).
    pub target: String,
    /// The thread whose cycles are the samples; `None` when none finished
    /// a cycle.
    #[serde(default)]
    pub tid: Option<u32>,
    /// Its name.
    #[serde(default)]
    pub comm: String,
    /// The CPUs its measured cycles started on, in the order first seen.
    #[serde(default)]
    pub task_cpus: Vec<u32>,
    /// How many threads the target had to choose from.
    #[serde(default)]
    pub candidates: usize,
    /// How many of them were seen running at a real-time priority (the
    /// chosen thread is one of them when any is).
    #[serde(default)]
    pub realtime_candidates: usize,
    /// T0, ns; `None`: not known (too few periods to infer it).
    #[serde(default)]
    pub t0_ns: Option<u64>,
    /// Where T0 came from.
    #[serde(default)]
    pub t0_source: Option<PeriodSource>,
    /// Periods T0 is inferred from (fewer than the model asks for when
    /// the trace ended first).
    #[serde(default)]
    pub infer_periods: usize,
    /// Cycles measured.
    #[serde(default)]
    pub cycles: u64,
    /// Of them, released by the timer the task slept on.
    #[serde(default)]
    pub timer_released: u64,
    /// Of them, started without a traced switch in (out of idle, or out
    /// of a task whose switches out the kernel does not trace:
    /// [`StartSource::Untraced`](super::cycles::StartSource)).
    #[serde(default)]
    pub untraced_starts: u64,
    /// Of them, started with no wake-up traced either: their latency is
    /// not measured.
    #[serde(default)]
    pub no_wakeup_starts: u64,
    /// Cycles whose next release came before their end.
    #[serde(default)]
    pub overruns: u64,
    /// Cycles that started on another CPU than the one before.
    #[serde(default)]
    pub migrations: u64,
    /// The cycle after which the thread's wake-ups were not recorded
    /// (it was released by its own timer: `super::filter::TimerReleased`);
    /// `None`: recorded throughout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wakeups_off_after: Option<u64>,
    /// Cycles not measured: trace events were lost on the task's CPU.
    #[serde(default)]
    pub not_measured: u64,
    /// Trace events the kernel dropped.
    #[serde(default)]
    pub lost_events: u64,
    /// What delayed the cycles over the threshold and each window's worst.
    #[serde(default)]
    pub explanations: Vec<Explanation>,
    /// Explanations left out past the most a result keeps.
    #[serde(default)]
    pub explanations_dropped: u64,
    /// Where the observer and the task ran; `None` in a replay, and in
    /// results stored before it was kept.
    #[serde(default)]
    pub placement: Option<super::placement::Placement>,
}

impl ObserveDetail {
    /// The summary's lines about the observation.
    pub fn lines(&self) -> Vec<String> {
        let mut o = Vec::new();
        let on = match self.task_cpus.len() {
            0 => String::new(),
            1 => format!(", on CPU {}", self.task_cpus[0]),
            _ => {
                let cpus: CpuList = self.task_cpus.iter().map(|&c| c as usize).collect();
                format!(", on CPUs {cpus}")
            }
        };
        match self.tid {
            Some(tid) if self.candidates > 1 && self.realtime_candidates > 0 => o.push(format!(
                "observed: tid {tid} ({}), the most regular of the {} real-time threads among {} threads of {}{on}",
                self.comm, self.realtime_candidates, self.candidates, self.target
            )),
            Some(tid) if self.candidates > 1 => o.push(format!(
                "observed: tid {tid} ({}), the most regular of {} threads of {}{on}",
                self.comm, self.candidates, self.target
            )),
            Some(tid) => o.push(format!(
                "observed: tid {tid} ({}) of {}{on}",
                self.comm, self.target
            )),
            None => o.push(format!(
                "observed: {}: no cycle finished (not measured)",
                self.target
            )),
        }
        o.push(match (self.t0_ns, self.t0_source) {
            (Some(t), Some(PeriodSource::Given)) => {
                format!("T0: {} (given)", format_duration_exact(t))
            }
            (Some(t), Some(PeriodSource::Timer)) => format!(
                "T0: {} (inferred: the median of the first {} gaps between the task's timer expiries)",
                format_duration_exact(t),
                self.infer_periods
            ),
            (Some(t), _) => format!(
                "T0: {} (inferred: the median of the first {} periods)",
                format_duration_exact(t),
                self.infer_periods
            ),
            (None, _) => format!(
                "T0: not measured (fewer than {} periods to infer it from; give --period)",
                self.infer_periods
            ),
        });
        o.push(format!(
            "cycles: {} ({} released by the task's timer), overruns {}, migrations {}",
            self.cycles, self.timer_released, self.overruns, self.migrations
        ));
        if self.untraced_starts > 0 {
            o.push(format!(
                "starts: {} of {} not traced by this kernel (a switch out of idle, or of a task whose switches out it does not trace): each taken at the end of the interrupt that woke it (latency is a lower bound by the switch's cost)",
                self.untraced_starts, self.cycles
            ));
        }
        if self.no_wakeup_starts > 0 {
            o.push(format!(
                "starts: {} of {} not traced by this kernel with no wake-up traced either: latency not measured",
                self.no_wakeup_starts, self.cycles
            ));
        }
        if let Some(cycle) = self.wakeups_off_after {
            o.push(format!(
                "wake-ups: not recorded after cycle {cycle}: at least {} of its first {} cycles were released by its own timer, whose expiry marks each release (one record less in its wake-up path)",
                super::filter::RELEASED_BY_TIMER,
                super::filter::FIRST_CYCLES
            ));
        }
        o.push(format!(
            "not measured: {} cycles ({} trace events lost)",
            self.not_measured, self.lost_events
        ));
        o
    }

    /// The explanation of the thread's cycle `index`, if one was kept.
    pub fn explanation(&self, index: u64) -> Option<&Explanation> {
        self.explanations.iter().find(|x| x.cycle == index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_lines_say_what_was_observed_and_where_t0_came_from() {
        let d = ObserveDetail {
            target: "pid 900".into(),
            tid: Some(903),
            comm: "PLC_Task".into(),
            task_cpus: vec![3, 1, 2],
            candidates: 5,
            t0_ns: Some(4_000_000),
            t0_source: Some(PeriodSource::Inferred),
            infer_periods: 16,
            cycles: 250,
            timer_released: 249,
            overruns: 2,
            migrations: 1,
            not_measured: 3,
            lost_events: 40,
            ..ObserveDetail::default()
        };
        assert_eq!(
            d.lines(),
            [
                "observed: tid 903 (PLC_Task), the most regular of 5 threads of pid 900, on CPUs 1-3",
                "T0: 4ms (inferred: the median of the first 16 periods)",
                "cycles: 250 (249 released by the task's timer), overruns 2, migrations 1",
                "not measured: 3 cycles (40 trace events lost)",
            ]
        );
        let none = ObserveDetail {
            target: "comm plc".into(),
            infer_periods: 16,
            ..ObserveDetail::default()
        };
        assert_eq!(
            none.lines()[..2],
            [
                "observed: comm plc: no cycle finished (not measured)",
                "T0: not measured (fewer than 16 periods to infer it from; give --period)",
            ]
        );
        let idle = ObserveDetail {
            untraced_starts: 240,
            no_wakeup_starts: 8,
            ..d.clone()
        };
        assert_eq!(
            idle.lines()[3..5],
            [
                "starts: 240 of 250 not traced by this kernel (a switch out of idle, or of a task whose switches out it does not trace): each taken at the end of the interrupt that woke it (latency is a lower bound by the switch's cost)",
                "starts: 8 of 250 not traced by this kernel with no wake-up traced either: latency not measured",
            ]
        );
        let quiet = ObserveDetail {
            wakeups_off_after: Some(31),
            ..d.clone()
        };
        assert_eq!(
            quiet.lines()[3],
            "wake-ups: not recorded after cycle 31: at least 30 of its first 32 cycles were released by its own timer, whose expiry marks each release (one record less in its wake-up path)"
        );
        assert!(!serde_json::to_string(&d).unwrap().contains("wakeups_off_after"));
        // A stored detail of an older version, without the newer fields.
        let old: ObserveDetail = serde_json::from_str(r#"{"target":"tid 7"}"#).unwrap();
        assert_eq!(
            (old.untraced_starts, old.no_wakeup_starts, old.wakeups_off_after),
            (0, 0, None)
        );
        let old: ObserveDetail = serde_json::from_str(r#"{"target":"tid 7"}"#).unwrap();
        assert_eq!(old.target, "tid 7");
        assert!(old.explanations.is_empty());
    }
}
