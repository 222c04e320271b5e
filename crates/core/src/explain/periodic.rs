//! What delayed the late cycles of our own periodic probes (`cyclic`,
//! `wakeup`): the same model as `observe`'s ([`super`]), fed with the
//! releases and starts the probe measured itself instead of ones derived
//! from the trace.
//!
//! **One clock.** A periodic probe reads `CLOCK_MONOTONIC` (its release
//! schedule and its `clock_nanosleep` are on it) and the tracer stamps its
//! events with the same clock (the tracefs instance's `trace_clock` is
//! `mono`, perf events ask `use_clockid` `CLOCK_MONOTONIC`), so a cycle's
//! release and start are put on the trace's clock unchanged.
//!
//! **Which cycles.** In its loop each probe thread asks a [`Picker`]
//! whether a cycle is one to explain: over the threshold, or the worst of
//! its window so far (so a window's final worst is always among those
//! handed over). The picker is a division and two comparisons, and the
//! cycles it picks are handed to a reader thread off the probe CPUs as
//! [`Wanted`] records through a wait-free queue; nothing is formatted or
//! allocated in the loop.
//!
//! **The reader** feeds every traced event to an [`Explainer`] and hands
//! it the wanted cycles; a cycle is explained once the merged trace has
//! passed its start (every event before it is in), while its CPU's history
//! still reaches back to its release ([`HISTORY_NS`]). Of each thread's
//! cycles it keeps, as `observe` does, every one over the threshold and
//! each window's worst, up to [`MAX_EXPLANATIONS`] (past it the longest;
//! the rest counted). A
//! cycle on whose CPU the kernel dropped events between its release and
//! its start is not explained, and counted: a gap in the trace is never
//! taken for idle time.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::{CpuHistory, Explanation, IrqNames};
use crate::spec::{Key, KeyFlag, ValueType};
use crate::trace::event::{Event, EventKind};

/// The `explain` key of the periodic probes' `[[probe]]` tables. It is
/// not among their `wire_keys` (two kinds write it); the stored JSON has
/// it only when it is true.
pub const EXPLAIN_KEY: Key = Key {
    name: "explain",
    ty: ValueType::Bool,
    default: "false",
    help: "trace the probe CPUs and say what ran between the release and the start of each cycle over the threshold and of each window's worst",
    flag: KeyFlag {
        long_help: Some(
            "This traces every scheduler, IRQ and softirq event of the probe CPUs, read by a thread off them; the threads, IRQs and softirqs that ran are named with their time, and the time no event explains is given.",
        ),
        ..KeyFlag::DERIVED
    },
};

/// Why a periodic probe of `kind` with `explain` cannot measure in a
/// container: its tracer is the host kernel's, which a container neither
/// has nor may have. `None` without `explain`.
pub fn not_in_container(kind: &str, explain: bool) -> Option<String> {
    explain.then(|| {
        format!(
            "{kind} with explain = true is N/A in a container: it traces the host kernel's scheduler, which a container cannot reach; set explain = false, or measure it on the host"
        )
    })
}

/// How far back each CPU's history reaches, ns: far longer than a wanted
/// cycle waits for the reader (a read every few milliseconds).
pub const HISTORY_NS: u64 = 2_000_000_000;

/// The most records each CPU's history keeps.
pub const HISTORY_CAP: usize = 1 << 17;

/// The most explanations a result keeps (the longest); the others are
/// counted.
pub const MAX_EXPLANATIONS: usize = 1000;

/// A cycle a probe thread wants explained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wanted {
    /// The probe thread's index in the run.
    pub thread: u32,
    /// Its kernel thread id.
    pub tid: u32,
    /// The CPU it runs on.
    pub cpu: u32,
    /// The cycle's number (from 0, per thread).
    pub cycle: u64,
    /// Its release, ns of `CLOCK_MONOTONIC`.
    pub release_ns: u64,
    /// Its start (the clock read after the wake-up).
    pub start_ns: u64,
    /// Its window's number.
    pub window: u64,
    /// True when its latency is over the threshold.
    pub over: bool,
}

impl Wanted {
    /// Its wake-up latency, ns.
    pub fn latency_ns(&self) -> u64 {
        self.start_ns.saturating_sub(self.release_ns)
    }
}

/// Picks, in a probe thread's loop, the cycles to explain: each over the
/// threshold, and each that is the worst of its window so far.
#[derive(Debug, Clone)]
pub struct Picker {
    t0: u64,
    window_ns: u64,
    threshold_ns: u64,
    window: u64,
    /// The worst latency of the current window; 0: none yet.
    worst: u64,
}

impl Picker {
    /// Windows of `window_ns` from the first release `t0`, the threshold
    /// `threshold_ns`.
    pub fn new(t0: u64, window_ns: u64, threshold_ns: u64) -> Picker {
        Picker {
            t0,
            window_ns: window_ns.max(1),
            threshold_ns,
            window: 0,
            worst: 0,
        }
    }

    /// Whether the cycle released at `release` and started at `start` is
    /// one to explain: its window and whether it is over the threshold.
    #[inline(always)]
    pub fn pick(&mut self, release: u64, start: u64) -> Option<(u64, bool)> {
        let window = start.saturating_sub(self.t0) / self.window_ns;
        if window != self.window {
            self.window = window;
            self.worst = 0;
        }
        let latency = start.saturating_sub(release);
        let over = latency > self.threshold_ns;
        let worst = latency > self.worst;
        if worst {
            self.worst = latency;
        }
        (over || worst).then_some((window, over))
    }
}

/// What a periodic probe's run stores as its result's `detail` with
/// `explain`: the explanations of its late cycles. A result without it
/// (every run without `explain`, every run of an older version) has no
/// `detail`; a field missing from a stored one reads as empty.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExplainDetail {
    /// What delayed the cycles over the threshold and each window's worst,
    /// in the order they were kept.
    #[serde(default)]
    pub explanations: Vec<Explanation>,
    /// Explanations left out past the most a result keeps.
    #[serde(default)]
    pub explanations_dropped: u64,
    /// Cycles to explain whose CPU lost trace events between their release
    /// and their start: not explained.
    #[serde(default)]
    pub not_explained: u64,
    /// Cycles to explain the probe threads could not hand over (the queue
    /// to the reader was full).
    #[serde(default)]
    pub not_handed_over: u64,
    /// Trace events the kernel dropped.
    #[serde(default)]
    pub lost_events: u64,
    /// Trace events read.
    #[serde(default)]
    pub events: u64,
}

impl ExplainDetail {
    /// The explanation of cycle `cycle` of the thread on `cpu`, if one was
    /// kept.
    pub fn explanation(&self, cpu: u32, cycle: u64) -> Option<&Explanation> {
        self.explanations
            .iter()
            .find(|x| x.cpu == cpu && x.cycle == cycle)
    }

    /// What the run's warnings say about cycles left unexplained: lost
    /// trace events, a full queue; nothing when every cycle was explained.
    pub fn warnings(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if self.not_explained > 0 || self.lost_events > 0 {
            lines.push(format!(
                "--explain: {} cycles not explained ({} trace events lost)",
                self.not_explained, self.lost_events
            ));
        }
        if self.not_handed_over > 0 {
            lines.push(format!(
                "--explain: {} cycles not explained: the probe could not hand them to the trace reader in time",
                self.not_handed_over
            ));
        }
        if self.explanations_dropped > 0 {
            lines.push(format!(
                "--explain: {} explanations not kept: a result keeps the {} longest",
                self.explanations_dropped,
                self.explanations.len()
            ));
        }
        lines
    }
}

/// A thread's window and its worst explained cycle (its latency, its
/// explanation, and whether it was kept already as over the threshold).
#[derive(Debug, Default)]
struct Tally {
    thread: u32,
    window: Option<u64>,
    worst: Option<(u64, Explanation, bool)>,
}

/// One traced CPU: its history and the last time it lost events.
#[derive(Debug)]
struct Traced {
    cpu: u32,
    history: CpuHistory,
    lost_at: Vec<u64>,
}

/// Explains the wanted cycles of a run's probe threads from the trace of
/// their CPUs (module doc).
#[derive(Debug)]
pub struct Explainer {
    cpus: Vec<Traced>,
    names: IrqNames,
    pending: VecDeque<Wanted>,
    /// The newest event time pushed.
    newest: Option<u64>,
    tallies: Vec<Tally>,
    detail: ExplainDetail,
    /// The most explanations kept.
    max: usize,
}

impl Explainer {
    /// An explainer of cycles on `cpus`, each CPU's history reaching
    /// [`HISTORY_NS`] back.
    pub fn new(cpus: &[u32]) -> Explainer {
        Explainer::with_history(cpus, HISTORY_NS, HISTORY_CAP)
    }

    /// [`Explainer::new`] with histories of `history_ns` and at most `cap`
    /// records.
    pub fn with_history(cpus: &[u32], history_ns: u64, cap: usize) -> Explainer {
        Explainer {
            cpus: cpus
                .iter()
                .map(|&cpu| Traced {
                    cpu,
                    history: CpuHistory::new(history_ns, cap),
                    lost_at: Vec::new(),
                })
                .collect(),
            names: IrqNames::default(),
            pending: VecDeque::new(),
            newest: None,
            tallies: Vec::new(),
            detail: ExplainDetail::default(),
            max: MAX_EXPLANATIONS,
        }
    }

    /// Keeps at most `max` explanations (the longest), not
    /// [`MAX_EXPLANATIONS`].
    pub fn keep_at_most(mut self, max: usize) -> Explainer {
        self.max = max;
        self
    }

    /// Takes in one event of the merged trace (in time order).
    pub fn push(&mut self, e: &Event) {
        self.newest = Some(self.newest.map_or(e.time_ns, |n| n.max(e.time_ns)));
        let Some(c) = self.cpus.iter_mut().find(|c| c.cpu == e.cpu) else {
            return;
        };
        if let EventKind::Lost { count } = e.kind {
            self.detail.lost_events += count;
            c.lost_at.push(e.time_ns);
            return;
        }
        self.detail.events += 1;
        c.history.push(e.time_ns, &e.kind, &mut self.names);
    }

    /// A cycle to explain, once the trace has passed its start.
    pub fn want(&mut self, w: Wanted) {
        self.pending.push_back(w);
    }

    /// Explains every wanted cycle the trace has passed the start of.
    pub fn explain_ready(&mut self) {
        let Some(newest) = self.newest else {
            return;
        };
        let mut i = 0;
        while i < self.pending.len() {
            if self.pending[i].start_ns <= newest {
                let w = self.pending.remove(i).expect("a pending cycle");
                self.explain(w);
            } else {
                i += 1;
            }
        }
    }

    /// Explains what is still wanted with the trace there is, closes every
    /// thread's last window, and hands over what was kept.
    pub fn finish(mut self) -> ExplainDetail {
        while let Some(w) = self.pending.pop_front() {
            self.explain(w);
        }
        for i in 0..self.tallies.len() {
            self.close_window(i);
        }
        self.detail
    }

    fn explain(&mut self, w: Wanted) {
        let Some(c) = self.cpus.iter().find(|c| c.cpu == w.cpu) else {
            self.detail.not_explained += 1;
            return;
        };
        if c.lost_at
            .iter()
            .any(|&t| t >= w.release_ns && t <= w.start_ns)
        {
            self.detail.not_explained += 1;
            return;
        }
        let mut x = c.history.explain(w.release_ns, w.start_ns, &self.names);
        x.tid = w.tid;
        x.cycle = w.cycle;
        x.cpu = w.cpu;
        let i = match self.tallies.iter().position(|t| t.thread == w.thread) {
            Some(i) => i,
            None => {
                self.tallies.push(Tally {
                    thread: w.thread,
                    ..Tally::default()
                });
                self.tallies.len() - 1
            }
        };
        if self.tallies[i].window != Some(w.window) {
            self.close_window(i);
            self.tallies[i].window = Some(w.window);
        }
        let latency = w.latency_ns();
        let t = &mut self.tallies[i];
        if latency > 0 && t.worst.as_ref().is_none_or(|(l, ..)| latency > *l) {
            t.worst = Some((latency, x.clone(), w.over));
        }
        if w.over {
            self.keep(x);
        }
    }

    fn close_window(&mut self, i: usize) {
        if let Some((_, x, false)) = self.tallies[i].worst.take() {
            self.keep(x);
        }
    }

    /// Keeps `x`; past [`MAX_EXPLANATIONS`], in place of the shortest kept
    /// when it is longer (so the largest latencies, which the reports list,
    /// keep theirs), and counts the one left out.
    fn keep(&mut self, x: Explanation) {
        let kept = &mut self.detail.explanations;
        if kept.len() < self.max {
            kept.push(x);
            return;
        }
        self.detail.explanations_dropped += 1;
        let late = |x: &Explanation| x.to_ns.saturating_sub(x.from_ns);
        if let Some((i, least)) = kept.iter().enumerate().min_by_key(|(_, k)| late(k)) {
            if late(&x) > late(least) {
                kept[i] = x;
            }
        }
    }
}

#[cfg(test)]
mod tests;
