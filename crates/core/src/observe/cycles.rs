//! The cycles of an observed task, from the tracer's events: an
//! incremental [`Observer`] fed events in time order, yielding one
//! [`ObservedCycle`] per cycle a target thread finishes.
//!
//! # A cycle
//!
//! A target thread's cycle runs from its **start** (switched in after a
//! sleep) to its **end** (switched out to sleep: `prev_state` with a sleep
//! bit). A switch out that leaves it runnable is a preemption: the cycle
//! goes on, and the time until it is switched back in is counted as
//! `preempted_ns`. The first cycle counted is the first that starts after
//! the observer saw the thread go to sleep, so no cycle is taken half.
//!
//! Its **release** is when it was meant to start:
//!
//! * when it slept on a timer — it armed an hrtimer (`HrtimerStart` by its
//!   pid) before its sleep, and that timer's expiry was handled before the
//!   start and not before its soft expiry (a timer on another clock than
//!   the events', `CLOCK_REALTIME`, fails that) — the timer's hard expiry; its latency is then split as rtla
//!   timerlat splits it for its own threads: the **timer IRQ latency**,
//!   from the expiry to the expiry handled, and the **thread latency**,
//!   from the expiry handled (or the expiry, if handled within its slack
//!   before it) to the start; the two add up to the latency;
//! * else on the period schedule: anchored at the first such cycle's
//!   wake-up (or its start, with no wake-up seen), releases every `T0`, the
//!   release of a cycle the last one at or before its start.
//!
//! `T0` is the configured period, or, inferred, the median (the lower of
//! the two middle values for an even count) of the thread's first `N`
//! start-to-start periods — or, when at least half of those cycles and
//! the one before each were released by their timers, of the gaps between
//! those timers' expiries: the schedule the task armed, which its
//! latencies do not move. The cycles seen before it is known are held and yielded once
//! it is, and every cycle says which it was ([`PeriodSource`]).
//!
//! Then the same figures as `run cyclic`: `latency` = start − release,
//! `period` = start − previous start, `jitter` = period − n·T0, where n is
//! the number of T0 between the two cycles' releases (their gap over T0,
//! rounded, at least 1): `T_per − T0` for a cycle that follows the
//! previous release, and for one after skipped releases the same
//! `T_per − (t_release,k − t_release,k−1)` as `run cyclic`
//! (`docs/design.md`), not the skipped time again; `exec` = end − start; the CPU it started on and whether that differs from the
//! previous cycle's (a migration); an **overrun** when the next release
//! (the timer it armed before going to sleep, else the next release of the
//! period schedule) comes before its end. A thread whose timer expires
//! before it switched out to sleep on it — armed for a time already past
//! (an overrun), or held between arming and sleeping (preempted, or its
//! VM's CPU stalled by the host) past the expiry — never sleeps: the
//! expiry is handled while it still runs. Then its cycle ends when it armed
//! the timer, and the next starts when the expiry was handled (if it was
//! on its CPU; else when it is switched back in).
//!
//! # Starts the kernel does not trace
//!
//! Some kernels do not trace every `sched_switch`: on 6.18 in a
//! Firecracker VM (haltpoll idle driver) no switch whose prev is the idle
//! task is traced, nor one whose prev is a thread of the VM's init process
//! (the switches *into* those tasks are there, those out of them are not).
//! A thread woken while such a task has the CPU then runs without a switch
//! in. The signature: an event of the thread's own context (its switch out,
//! a timer it arms) while the model has it asleep — it ran, whatever the
//! CPU's last traced switch says. Its start is then taken at the last event
//! on that CPU of the interrupt that woke it, from its wake-up on (the
//! wake-up, the timer expiry, a softirq's exit, the idle task re-arming its
//! tick), and not before the CPU's last traced switch (a thread switched in
//! after the wake-up ran before it): the earliest it could have run, so its
//! latency is a lower bound, short by the switch's cost. The interrupt's
//! events follow each other within [`INTERRUPT_GAP_NS`]; an event after a longer
//! gap, or an IRQ entered after the wake-up, may be inside its run, so the
//! events from it on are not taken. Such a cycle says so
//! ([`StartSource::Untraced`]); its explanation shows the CPU as the
//! history has it.
//!
//! On the same kernel a quiet CPU may trace nothing at all between the
//! thread's sleep and its own next event: no expiry, no wake-up, no
//! switch. Its start is then only bounded: not before the CPU's last
//! traced event nor before the soft expiry of the timer it slept on. The
//! cycle is kept at that bound for its period and execution time, but its
//! latency is not measured ([`StartSource::NoWakeup`]: `latency_ns` 0 and
//! no split; the probe records no latency sample for it).
//!
//! # Lost events
//!
//! A `Lost` record on the CPU a target thread last ran or was woken on
//! marks that thread's open cycle (the one running, or, while it sleeps,
//! the next) as not measured: it is neither yielded nor taken as a long
//! cycle, only counted ([`Observer::not_measured`]), and the cycle after it
//! has no period (its previous start is not known for sure).
//!
//! The observer keeps per CPU the history an explanation needs
//! ([`crate::explain`]); [`Observer::explain`] says what delayed a cycle
//! while its history still covers it: right after the observer yielded it.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::explain::{CpuHistory, Explanation, IrqNames, INTERRUPT_GAP_NS};
use crate::trace::event::{Event, EventKind};

/// Periods the observer infers `T0` from when none is given.
pub const INFER_PERIODS: usize = 16;

/// How long each CPU's history reaches back by default, ns.
pub const HISTORY_NS: u64 = 1_000_000_000;

/// The most records each CPU's history keeps by default.
pub const HISTORY_CAP: usize = 1 << 16;


/// What the observer is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObserverConfig {
    /// The threads observed (kernel pids).
    pub tids: Vec<u32>,
    /// `T0`, ns, when it is given (`--period`); `None`: inferred.
    pub period_ns: Option<u64>,
    /// How many start-to-start periods `T0` is inferred from.
    pub infer_periods: usize,
    /// How long each CPU's history reaches back, ns.
    pub history_ns: u64,
    /// The most records each CPU's history keeps.
    pub history_cap: usize,
}

impl ObserverConfig {
    /// Observing `tids` with the default inference and history.
    pub fn new(tids: Vec<u32>, period_ns: Option<u64>) -> ObserverConfig {
        ObserverConfig {
            tids,
            period_ns,
            infer_periods: INFER_PERIODS,
            history_ns: HISTORY_NS,
            history_cap: HISTORY_CAP,
        }
    }
}

/// Where a cycle's `T0` came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PeriodSource {
    /// Given (`--period`).
    Given,
    /// The median of the thread's first start-to-start periods.
    Inferred,
    /// The median of the gaps between the expiries of the timers the
    /// thread's first cycles were released by.
    Timer,
}

/// Where a cycle's release came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReleaseSource {
    /// The hard expiry of the timer the thread slept on.
    Timer,
    /// The period schedule.
    Period,
}

/// How a cycle's start was seen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StartSource {
    /// Its switch in was traced.
    #[default]
    Traced,
    /// Its switch in was not traced (out of idle, or out of a task whose
    /// switches this kernel does not trace): taken at the last event of the
    /// interrupt that woke it (see the module doc).
    Untraced,
    /// Neither its switch in nor its wake-up traced (a quiet idle CPU):
    /// taken at the earliest it could have run; its latency is not
    /// measured.
    #[serde(rename = "no-wakeup")]
    NoWakeup,
}

/// One finished cycle of an observed thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObservedCycle {
    /// The thread.
    pub tid: u32,
    /// The cycle's number among the thread's yielded and not-measured
    /// cycles, from 0.
    pub index: u64,
    /// When it was meant to start, ns.
    pub release_ns: u64,
    /// Where the release came from.
    pub release: ReleaseSource,
    /// When its timer's expiry was handled (`hrtimer_expire_entry`).
    pub expiry_handled_ns: Option<u64>,
    /// When it was woken (`sched_wakeup`), if that was seen.
    pub wake_ns: Option<u64>,
    /// Switched in.
    pub start_ns: u64,
    /// How the start was seen.
    #[serde(default)]
    pub start: StartSource,
    /// Switched out to sleep.
    pub end_ns: u64,
    /// The CPU it started on.
    pub cpu: u32,
    /// True when the previous cycle started on another CPU.
    pub migrated: bool,
    /// Start − release, ns (0 for a start within a timer's slack before
    /// its hard expiry; 0, not measured, for [`StartSource::NoWakeup`]).
    pub latency_ns: u64,
    /// Start − the previous cycle's start; `None` for the first cycle and
    /// after a cycle not measured.
    pub period_ns: Option<u64>,
    /// Period − n·T0, n the T0 between this release and the previous
    /// cycle's (1 unless releases were skipped; see the module doc).
    pub jitter_ns: Option<i64>,
    /// End − start, ns.
    pub exec_ns: u64,
    /// Timer expiry handled − expiry (timer releases only).
    pub irq_latency_ns: Option<u64>,
    /// Start − expiry handled (timer releases only).
    pub thread_latency_ns: Option<u64>,
    /// Time it was preempted (runnable, switched out) between start and
    /// end, ns.
    pub preempted_ns: u64,
    /// The next release came before its end.
    pub overrun: bool,
    /// The next release: the timer it armed before its sleep, else the
    /// period schedule's.
    pub next_release_ns: u64,
    /// T0, ns.
    pub t0_ns: u64,
    /// Where T0 came from.
    pub t0_source: PeriodSource,
}

/// True for a `prev_state` that leaves the thread runnable: no sleep bit
/// among the kernel's reported states (the low byte; a preemption is 0,
/// or `TASK_REPORT_MAX`, 0x100, where the kernel marks preemption so).
pub fn is_preemption(prev_state: u64) -> bool {
    prev_state & 0xff == 0
}

/// What a cycle is known to be once it ends, before T0 makes it figures.
#[derive(Debug, Clone, Copy)]
struct Raw {
    index: u64,
    cpu: u32,
    start: u64,
    how: StartSource,
    end: u64,
    wake: Option<u64>,
    /// The timer it slept on, when its expiry was handled before the
    /// start: (expiry, handled).
    timer: Option<(u64, u64)>,
    preempted: u64,
    /// The expiry of the timer it armed before going to sleep at its end.
    next_timer: Option<u64>,
    prev_start: Option<u64>,
    prev_cpu: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Not seen going to sleep yet.
    Unknown,
    /// Asleep (or woken, not yet switched in).
    Sleeping,
    /// Between start and end; `Some(t)`: preempted since `t`.
    Running(Option<u64>),
}

/// A timer a target thread armed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Armed {
    /// Its address.
    timer: u64,
    /// Its hard expiry.
    expires: u64,
    /// Its soft expiry.
    soft: u64,
    /// When it was armed.
    at: u64,
}

/// One observed thread's state.
#[derive(Debug)]
struct Track {
    tid: u32,
    phase: Phase,
    /// The last timer it armed while running.
    armed: Option<Armed>,
    /// The timer it went to sleep with, and when its expiry was handled.
    sleep_timer: Option<Armed>,
    handled: Option<u64>,
    wake: Option<u64>,
    /// While it sleeps, the last event on the CPU it was woken to of the
    /// interrupt that woke it: (CPU, time, an IRQ entered since).
    mark: Option<(u32, u64, bool)>,
    /// The cycle in progress.
    start: u64,
    /// How its start was seen.
    how: StartSource,
    cpu: u32,
    preempted: u64,
    /// The open cycle is not measured (events lost).
    lost: bool,
    /// The CPU it last ran on or was woken to.
    last_cpu: Option<u32>,
    prev_start: Option<u64>,
    prev_cpu: Option<u32>,
    /// The expiry of the timer the previous cycle was released by.
    prev_expiry: Option<u64>,
    /// The release of the last cycle yielded.
    last_release: Option<u64>,
    index: u64,
    t0: Option<(u64, PeriodSource)>,
    periods: Vec<u64>,
    /// Beside `periods`, the gaps between the expiries of the timers that
    /// released each of those cycles and the one before it.
    gaps: Vec<u64>,
    held: Vec<Raw>,
    /// The period schedule's anchor and the slot of its last release.
    anchor: Option<u64>,
}

impl Track {
    /// A thread not seen yet.
    fn new(tid: u32, period_ns: Option<u64>, infer: usize) -> Track {
        Track {
            tid,
            phase: Phase::Unknown,
            armed: None,
            sleep_timer: None,
            handled: None,
            wake: None,
            mark: None,
            start: 0,
            how: StartSource::Traced,
            cpu: 0,
            preempted: 0,
            lost: false,
            last_cpu: None,
            prev_start: None,
            prev_cpu: None,
            prev_expiry: None,
            last_release: None,
            index: 0,
            t0: period_ns.map(|p| (p, PeriodSource::Given)),
            periods: Vec::with_capacity(infer),
            gaps: Vec::with_capacity(infer),
            held: Vec::with_capacity(infer + 1),
            anchor: None,
        }
    }
}

/// Turns events into the cycles of the target threads (see the module
/// doc).
#[derive(Debug)]
pub struct Observer {
    tracks: Vec<Track>,
    infer: usize,
    /// `T0` when given.
    period_ns: Option<u64>,
    history_ns: u64,
    history_cap: usize,
    cpus: Vec<CpuHistory>,
    /// Per CPU: who its last traced switch switched in, the time of its
    /// last event, and the time of its last traced switch.
    running: Vec<(Option<u32>, u64, u64)>,
    names: IrqNames,
    done: VecDeque<ObservedCycle>,
    not_measured: u64,
    lost_events: u64,
}

impl Observer {
    /// An observer of `config.tids`.
    pub fn new(config: &ObserverConfig) -> Observer {
        let infer = config.infer_periods.max(1);
        Observer {
            tracks: config
                .tids
                .iter()
                .map(|&tid| Track::new(tid, config.period_ns, infer))
                .collect(),
            infer,
            period_ns: config.period_ns,
            history_ns: config.history_ns,
            history_cap: config.history_cap,
            cpus: Vec::new(),
            running: Vec::new(),
            names: IrqNames::default(),
            done: VecDeque::with_capacity(infer + 1),
            not_measured: 0,
            lost_events: 0,
        }
    }

    /// Takes in the next event (events come in time order).
    pub fn push(&mut self, e: &Event) {
        let cpu = e.cpu as usize;
        if self.cpus.len() <= cpu {
            let (h, cap) = (self.history_ns, self.history_cap);
            self.cpus.resize_with(cpu + 1, || CpuHistory::new(h, cap));
        }
        self.cpus[cpu].push(e.time_ns, &e.kind, &mut self.names);
        if self.running.len() <= cpu {
            self.running.resize(cpu + 1, (None, 0, 0));
        }
        let t = e.time_ns;
        self.follow_wake(e);
        match &e.kind {
            EventKind::Switch {
                prev_pid,
                prev_state,
                next_pid,
                ..
            } => {
                if let Some(i) = self.track(*prev_pid) {
                    self.untraced_start(i, e.cpu, t);
                    self.switched_out(i, t, e.cpu, *prev_state);
                }
                self.running[cpu].0 = Some(*next_pid);
                self.running[cpu].2 = t;
                if let Some(i) = self.track(*next_pid) {
                    self.switched_in(i, t, e.cpu);
                }
            }
            EventKind::HrtimerStart {
                pid,
                timer,
                expires_ns,
                softexpires_ns,
            } => {
                if let Some(i) = self.track(*pid) {
                    self.untraced_start(i, e.cpu, t);
                    self.tracks[i].armed = Some(Armed {
                        timer: *timer,
                        expires: *expires_ns,
                        soft: *softexpires_ns,
                        at: t,
                    });
                }
            }
            EventKind::HrtimerExpire { timer, .. } => {
                for i in 0..self.tracks.len() {
                    let tr = &mut self.tracks[i];
                    let sleeping_on = tr.sleep_timer.is_some_and(|a| a.timer == *timer);
                    if tr.phase == Phase::Sleeping && sleeping_on && tr.handled.is_none() {
                        tr.handled = Some(t);
                        tr.mark.get_or_insert((e.cpu, t, false));
                        continue;
                    }
                    // A sleep that did not sleep: the timer this cycle armed
                    // expired before the thread switched out (see the
                    // module doc). Its cycle ended when it armed the timer;
                    // on its CPU still, the next starts now.
                    let Phase::Running(preempted) = tr.phase else {
                        continue;
                    };
                    let Some(a) = tr.armed.filter(|a| a.timer == *timer) else {
                        continue;
                    };
                    let cpu = tr.cpu;
                    self.went_to_sleep(i, a.at);
                    self.tracks[i].handled = Some(t);
                    if preempted.is_none() {
                        self.switched_in(i, t, cpu);
                    }
                }
            }
            EventKind::Wakeup {
                pid, target_cpu, ..
            } => {
                if let Some(i) = self.track(*pid) {
                    let tr = &mut self.tracks[i];
                    tr.last_cpu = Some(*target_cpu);
                    if tr.phase == Phase::Sleeping && tr.wake.is_none() {
                        tr.wake = Some(t);
                        tr.mark = Some((*target_cpu, t, false));
                    }
                }
            }
            EventKind::Lost { count } => {
                self.lost_events += count;
                for tr in &mut self.tracks {
                    if tr.last_cpu == Some(e.cpu) && tr.phase != Phase::Unknown {
                        tr.lost = true;
                    }
                }
            }
            EventKind::Waking { .. }
            | EventKind::IrqEntry { .. }
            | EventKind::IrqExit { .. }
            | EventKind::SoftirqEntry { .. }
            | EventKind::SoftirqExit { .. } => {}
        }
        self.running[cpu].1 = t;
    }

    /// Moves the marks of the sleeping threads woken to `e`'s CPU to `e`
    /// while it belongs to the interrupt that woke them.
    fn follow_wake(&mut self, e: &Event) {
        let waking = match &e.kind {
            EventKind::IrqEntry { .. } => false,
            EventKind::HrtimerExpire { .. }
            | EventKind::Waking { .. }
            | EventKind::Wakeup { .. }
            | EventKind::IrqExit { .. }
            | EventKind::SoftirqEntry { .. }
            | EventKind::SoftirqExit { .. }
            | EventKind::HrtimerStart { pid: 0, .. } => true,
            EventKind::HrtimerStart { .. } | EventKind::Switch { .. } | EventKind::Lost { .. } => {
                return
            }
        };
        for tr in &mut self.tracks {
            if tr.phase != Phase::Sleeping {
                continue;
            }
            if let Some((c, at, ended)) = &mut tr.mark {
                if *c == e.cpu && !*ended {
                    if waking && e.time_ns.saturating_sub(*at) <= INTERRUPT_GAP_NS {
                        *at = e.time_ns;
                    } else {
                        *ended = true;
                    }
                }
            }
        }
    }

    /// Thread `i`, asleep for the model, shows an event of its own on
    /// `cpu` at `t`: it ran, switched in without a traced switch (see the
    /// module doc).
    fn untraced_start(&mut self, i: usize, cpu: u32, t: u64) {
        let (_, last, switched) = self.running[cpu as usize];
        let tr = &self.tracks[i];
        if tr.phase != Phase::Sleeping {
            return;
        }
        let (at, how) = match (tr.mark, tr.wake) {
            (Some((c, at, _)), _) if c == cpu => (at.max(switched), StartSource::Untraced),
            (_, Some(w)) => (last.max(w), StartSource::Untraced),
            // A timer due later (on another clock) bounds nothing.
            (_, None) => (
                last.max(tr.sleep_timer.map_or(0, |a| a.soft).min(t)),
                StartSource::NoWakeup,
            ),
        };
        self.switched_in(i, at.min(t), cpu);
        self.tracks[i].how = how;
        self.running[cpu as usize].0 = Some(self.tracks[i].tid);
    }

    /// Observes `tid` too from the next event on (a thread the process
    /// started after the observation began); its first cycle is the first
    /// it starts after the observer saw it go to sleep. A thread observed
    /// already is left as it is.
    pub fn watch(&mut self, tid: u32) {
        if tid != 0 && self.track(tid).is_none() {
            self.tracks
                .push(Track::new(tid, self.period_ns, self.infer));
        }
    }

    /// The next finished cycle, oldest first.
    pub fn pop(&mut self) -> Option<ObservedCycle> {
        self.done.pop_front()
    }

    /// What delayed `c`: what ran on its CPU between its release and its
    /// start (see [`crate::explain`]); ask right after it was yielded,
    /// while the history covers it.
    pub fn explain(&self, c: &ObservedCycle) -> Explanation {
        let mut x = match self.cpus.get(c.cpu as usize) {
            Some(h) => h.explain(c.release_ns, c.start_ns, &self.names),
            None => CpuHistory::new(0, 1).explain(c.release_ns, c.start_ns, &self.names),
        };
        x.tid = c.tid;
        x.cycle = c.index;
        x.cpu = c.cpu;
        x
    }

    /// Cycles not measured because trace events were lost.
    pub fn not_measured(&self) -> u64 {
        self.not_measured
    }

    /// Trace events the `Lost` records said were dropped.
    pub fn lost_events(&self) -> u64 {
        self.lost_events
    }

    /// `tid`'s T0 and where it came from, once known.
    pub fn t0(&self, tid: u32) -> Option<(u64, PeriodSource)> {
        self.track(tid).and_then(|i| self.tracks[i].t0)
    }

    /// Cycles of `tid` held until its T0 is inferred.
    pub fn held(&self, tid: u32) -> usize {
        self.track(tid).map_or(0, |i| self.tracks[i].held.len())
    }

    fn track(&self, tid: u32) -> Option<usize> {
        if tid == 0 {
            return None;
        }
        self.tracks.iter().position(|t| t.tid == tid)
    }

    fn switched_in(&mut self, i: usize, t: u64, cpu: u32) {
        let tr = &mut self.tracks[i];
        tr.last_cpu = Some(cpu);
        match tr.phase {
            Phase::Sleeping => {
                tr.phase = Phase::Running(None);
                tr.start = t;
                tr.how = StartSource::Traced;
                tr.cpu = cpu;
                tr.preempted = 0;
                tr.armed = None;
            }
            Phase::Running(Some(since)) => {
                tr.preempted += t - since;
                tr.phase = Phase::Running(None);
            }
            Phase::Running(None) | Phase::Unknown => {}
        }
    }

    fn switched_out(&mut self, i: usize, t: u64, cpu: u32, state: u64) {
        let tr = &mut self.tracks[i];
        tr.last_cpu = Some(cpu);
        if is_preemption(state) {
            if tr.phase == Phase::Running(None) {
                tr.phase = Phase::Running(Some(t));
            }
            return;
        }
        self.went_to_sleep(i, t);
    }

    /// Thread `i`'s cycle ends at `t`: it goes to sleep (or, an overrun,
    /// tried to).
    fn went_to_sleep(&mut self, i: usize, t: u64) {
        let tr = &mut self.tracks[i];
        let was_sleeping = tr.phase == Phase::Sleeping;
        let raw = match tr.phase {
            Phase::Running(since) => {
                // Handled before its soft expiry, the timer ran on another
                // clock than the events' (CLOCK_REALTIME): no release of it.
                let timer = match (tr.sleep_timer, tr.handled) {
                    (Some(a), Some(h)) if h <= tr.start && a.soft <= h => Some((a.expires, h)),
                    _ => None,
                };
                let raw = Raw {
                    index: tr.index,
                    cpu: tr.cpu,
                    start: tr.start,
                    how: tr.how,
                    end: t,
                    wake: tr.wake,
                    timer,
                    preempted: tr.preempted + since.map_or(0, |s| t.saturating_sub(s)),
                    next_timer: tr.armed.map(|a| a.expires),
                    prev_start: tr.prev_start,
                    prev_cpu: tr.prev_cpu,
                };
                tr.index += 1;
                Some(raw)
            }
            Phase::Sleeping | Phase::Unknown => None,
        };
        tr.phase = Phase::Sleeping;
        tr.sleep_timer = tr.armed.take();
        tr.handled = None;
        tr.wake = None;
        tr.mark = None;
        // A sleep seen while asleep: a cycle between went unseen. An own
        // event makes an untraced start first, so only a model's error
        // leads here; it is counted, never silently taken as a long cycle.
        let lost = std::mem::take(&mut tr.lost);
        let Some(raw) = raw else {
            if was_sleeping {
                self.not_measured += 1;
                tr.prev_start = None;
                tr.prev_cpu = None;
                tr.prev_expiry = None;
            }
            return;
        };
        if lost {
            self.not_measured += 1;
            tr.prev_start = None;
            tr.prev_cpu = None;
            tr.prev_expiry = None;
            return;
        }
        let prev_expiry = tr.prev_expiry;
        tr.prev_start = Some(raw.start);
        tr.prev_cpu = Some(raw.cpu);
        tr.prev_expiry = raw.timer.map(|(expires, _)| expires);
        if tr.t0.is_some() {
            let c = finish(tr, &raw);
            self.done.push_back(c);
            return;
        }
        if let Some(p) = raw.prev_start {
            tr.periods.push(raw.start - p);
            if let (Some((expires, _)), Some(before)) = (raw.timer, prev_expiry) {
                tr.gaps.push(expires.saturating_sub(before));
            }
        }
        tr.held.push(raw);
        if tr.periods.len() >= self.infer {
            self.infer_t0(i);
        }
    }

    /// Infers thread `i`'s T0 from the periods it has, and yields the
    /// cycles held until then.
    fn infer_t0(&mut self, i: usize) {
        let tr = &mut self.tracks[i];
        if tr.periods.is_empty() {
            return;
        }
        // Half the periods at least between two timer releases: the
        // timers' schedule (a start the kernel traced too little of to
        // find its timer leaves a period without a gap).
        let (of, source) = if !tr.gaps.is_empty() && tr.gaps.len() * 2 >= tr.periods.len() {
            (&mut tr.gaps, PeriodSource::Timer)
        } else {
            (&mut tr.periods, PeriodSource::Inferred)
        };
        of.sort_unstable();
        let median = of[(of.len() - 1) / 2];
        tr.t0 = Some((median, source));
        let held = std::mem::take(&mut tr.held);
        for raw in &held {
            let c = finish(tr, raw);
            self.done.push_back(c);
        }
    }

    /// The trace has ended: a thread still without T0 gets it from the
    /// periods it has (fewer than asked for; [`Observer::periods`] says
    /// how many), and its held cycles are yielded. A thread without a
    /// single period keeps its cycles (no T0, nothing measured).
    pub fn finish(&mut self) {
        for i in 0..self.tracks.len() {
            if self.tracks[i].t0.is_none() {
                self.infer_t0(i);
            }
        }
    }

    /// How many periods — or, for a T0 from its timer
    /// ([`PeriodSource::Timer`]), gaps between timer expiries — `tid`'s
    /// inferred T0 is the median of.
    pub fn periods(&self, tid: u32) -> usize {
        self.track(tid).map_or(0, |i| {
            let tr = &self.tracks[i];
            match tr.t0 {
                Some((_, PeriodSource::Timer)) => tr.gaps.len(),
                _ => tr.periods.len(),
            }
        })
    }
}

/// A cycle's figures once T0 is known.
fn finish(tr: &mut Track, r: &Raw) -> ObservedCycle {
    let (t0, t0_source) = tr.t0.expect("finished with a T0");
    let t0 = t0.max(1);
    let (release, source, period_next) = match r.timer {
        Some((expires, _)) => (expires, ReleaseSource::Timer, expires + t0),
        None => {
            let anchor = *tr
                .anchor
                .get_or_insert(r.wake.unwrap_or(r.start).min(r.start));
            let slot = (r.start - anchor) / t0;
            let release = anchor + slot * t0;
            (release, ReleaseSource::Period, release + t0)
        }
    };
    let next_release = r.next_timer.unwrap_or(period_next);
    let period = r.prev_start.map(|p| r.start - p);
    // The T0 between the two releases: 1 unless releases were skipped.
    let n = match (r.prev_start, tr.last_release) {
        (Some(_), Some(before)) => (release.saturating_sub(before) + t0 / 2) / t0,
        _ => 1,
    }
    .max(1);
    tr.last_release = Some(release);
    let (irq, thread) = match r.timer {
        Some((expires, handled)) => (
            Some(handled.saturating_sub(expires)),
            Some(r.start.saturating_sub(handled.max(expires))),
        ),
        None => (None, None),
    };
    ObservedCycle {
        tid: tr.tid,
        index: r.index,
        release_ns: release,
        release: source,
        expiry_handled_ns: r.timer.map(|(_, h)| h),
        wake_ns: r.wake,
        start_ns: r.start,
        start: r.how,
        end_ns: r.end,
        cpu: r.cpu,
        migrated: r.prev_cpu.is_some_and(|p| p != r.cpu),
        latency_ns: match r.how {
            StartSource::NoWakeup => 0,
            _ => r.start.saturating_sub(release),
        },
        period_ns: period,
        jitter_ns: period.map(|p| p as i64 - (n * t0) as i64),
        exec_ns: r.end - r.start,
        irq_latency_ns: irq,
        thread_latency_ns: thread,
        preempted_ns: r.preempted,
        overrun: next_release < r.end,
        next_release_ns: next_release,
        t0_ns: t0,
        t0_source,
    }
}

/// Of several threads' start-to-start periods, the thread that behaves
/// periodically: among those with at least `min_periods` periods, the
/// smallest spread — the mean absolute deviation of its periods from their
/// median (the lower middle value), relative to that median; a tie goes to
/// the thread with more periods, then the lower tid. `None` when no thread
/// has enough periods.
pub fn most_periodic(periods: &[(u32, Vec<u64>)], min_periods: usize) -> Option<u32> {
    // (deviation sum, count, median) compared as sum / (count · median).
    let score = |p: &[u64]| -> Option<(u128, u128)> {
        let mut s = p.to_vec();
        s.sort_unstable();
        let median = *s.get((s.len().max(1) - 1) / 2)?;
        if median == 0 {
            return None;
        }
        let dev: u128 = s.iter().map(|&x| u128::from(x.abs_diff(median))).sum();
        Some((dev, s.len() as u128 * u128::from(median)))
    };
    let mut best: Option<(u32, usize, (u128, u128))> = None;
    for (tid, p) in periods {
        if p.len() < min_periods.max(1) {
            continue;
        }
        let Some(sc) = score(p) else { continue };
        let better = match best {
            None => true,
            Some((btid, bn, (bd, bq))) => {
                let (l, r) = (sc.0 * bq, bd * sc.1);
                l < r || (l == r && (p.len() > bn || (p.len() == bn && *tid < btid)))
            }
        };
        if better {
            best = Some((*tid, p.len(), sc));
        }
    }
    best.map(|(tid, ..)| tid)
}

/// Of several threads' start-to-start periods, the threads whose median
/// period (the lower middle value) is within a factor of two of the given
/// `t0`: with a period given, the task is the thread that runs at it (a
/// started cyclictest's main thread sleeps 10 ms at a time beside its
/// 1 ms measuring thread, both placed at one policy). In `periods` order.
pub fn near_period(periods: &[(u32, Vec<u64>)], t0: u64) -> Vec<u32> {
    periods
        .iter()
        .filter(|(_, p)| {
            let mut s = p.clone();
            s.sort_unstable();
            s.get((s.len().max(1) - 1) / 2)
                .is_some_and(|&m| m >= t0 / 2 && m <= t0.saturating_mul(2))
        })
        .map(|(tid, _)| *tid)
        .collect()
}

#[cfg(test)]
mod near_period_tests {
    use super::near_period;

    #[test]
    fn with_a_period_given_the_threads_running_at_it_are_kept() {
        let ms = 1_000_000;
        let main = (10, vec![10 * ms, 10 * ms, 10 * ms]);
        let task = (11, vec![ms, 1_100_000, 900_000, 5 * ms]);
        let none = (12, vec![]);
        let edge = (13, vec![ms / 2, 2 * ms, 2 * ms]);
        assert_eq!(near_period(&[main.clone(), task, none, edge], ms), [11, 13]);
        assert_eq!(near_period(&[main], ms), Vec::<u32>::new());
    }
}
