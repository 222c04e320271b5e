//! What delayed a cycle: what ran on the CPU a cycle started on between
//! its release and its start, from a bounded per-CPU history of the
//! scheduler, IRQ and softirq events.
//!
//! One model for every probe that knows its cycles' releases and starts
//! on the trace's clock (`CLOCK_MONOTONIC`): `observe` derives them from
//! the trace itself ([`crate::observe::cycles`]); the periodic probes
//! (`cyclic`, `wakeup`) measure them and hand them over ([`periodic`]).
//! It sits beside the tracer's events, below both kinds, so neither names
//! the other.
//!
//! Each CPU keeps its recent events ([`CpuHistory`]): who was switched in,
//! IRQ handlers entered and left, softirqs entered and left. Events older
//! than the history's reach (`history_ns` behind the CPU's newest event, or
//! past `cap` records) are folded into the state they leave behind (who
//! runs, which IRQ or softirq is active), so the history always knows the
//! CPU's state from its base time on, and it allocates nothing once its
//! ring has grown to its working size. An explanation starts from the
//! last switch before the release, found by binary search (a switch sets
//! the whole state: no switch happens inside an IRQ handler or a softirq),
//! so it costs the events of the latency, not of the history. The model
//! asks for an explanation
//! only for the cycles it has to explain (over the threshold, a window's
//! worst), when the cycle finishes, while the history still covers it.
//!
//! An explanation cuts `[release, start)` into slices between events and
//! gives each slice to exactly one part, so the parts add up to the
//! latency exactly:
//!
//! * an IRQ handler running (by line, with its handler name), which takes
//!   its time out of whatever it interrupted;
//! * else a softirq running (by vector, `event::softirq_name`), in IRQ exit
//!   or in `ksoftirqd`, taken out of the thread it ran in;
//! * else the thread running (pid, name, kernel priority; summed per pid);
//! * else, when the CPU was idle (pid 0), **unexplained**: no traced event
//!   says why the task was not running (the timer's hardware delivery,
//!   leaving an idle state, on a VM the hypervisor's steal);
//! * and **unknown** for the time before the history's first event, when
//!   nothing says what the CPU did.
//!
//! A kernel may not trace every switch (seen on 6.18 in a Firecracker VM:
//! no switch out of idle, nor out of a thread of the VM's init process, and
//! no IRQ-time event on an idle CPU). A switch out of a thread the history
//! has not seen switched in says it ran. After a switch to idle, it is
//! taken as switched in at the last event of the first interrupt traced
//! after going idle (an expiry, a wake-up, a softirq, an IRQ's exit, the
//! idle task re-arming its tick, up to an IRQ entered, a thread's own
//! timer, or a gap over [`INTERRUPT_GAP_NS`]), as the observation model
//! takes an untraced start ([`crate::observe::cycles`]); or at its switch
//! out when nothing was traced between. Its time before that point is
//! counted unexplained: a lower bound of what it ran. After a switch to
//! another thread, it is taken as switched in at the end of the last
//! interrupt that woke it on this CPU (it preempted that thread on the
//! interrupt's return); with no such wake-up traced, that thread keeps the
//! time, as nothing says when it stopped.

use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::trace::event::{softirq_name, EventKind};
use crate::units::format_ns;

pub mod periodic;

/// The longest gap between two events of one interrupt, ns: an untraced
/// switch in is taken at the last event of the interrupt that woke the
/// thread (see the module doc), and an event after a longer gap belongs to
/// another interrupt or to the thread's run. One interrupt's expiry,
/// wake-up, softirq and re-armed tick follow each other within a few µs; a
/// VM's steal inside one only moves the switch earlier, still a lower
/// bound of what the woken thread waited.
pub const INTERRUPT_GAP_NS: u64 = 20_000;

/// A kernel task name as the tracepoint records it: at most 15 bytes and
/// a NUL, kept inline so a history record allocates nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Comm([u8; 16]);

impl Comm {
    /// `name`, cut to 16 bytes.
    pub fn new(name: &str) -> Comm {
        let mut b = [0u8; 16];
        let n = name.len().min(16);
        b[..n].copy_from_slice(&name.as_bytes()[..n]);
        Comm(b)
    }

    /// The name, up to its first NUL.
    pub fn as_string(&self) -> String {
        let n = self.0.iter().position(|&c| c == 0).unwrap_or(16);
        String::from_utf8_lossy(&self.0[..n]).into_owned()
    }
}

/// A thread as `sched_switch` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Thread {
    pid: u32,
    prio: i32,
    comm: Comm,
}

/// One event of a CPU's history.
#[derive(Debug, Clone, Copy)]
enum What {
    /// A thread was switched in.
    Run(Thread),
    /// An IRQ handler started.
    IrqIn(u32),
    /// An IRQ handler returned.
    IrqOut,
    /// A softirq started.
    SoftIn(u32),
    /// A softirq returned.
    SoftOut,
}

#[derive(Debug, Clone, Copy)]
struct Rec {
    time: u64,
    what: What,
}

/// What a CPU is doing at some point.
#[derive(Debug, Clone, Copy, Default)]
struct State {
    /// The running thread; `None`: not known yet.
    running: Option<Thread>,
    /// The IRQ line whose handler runs.
    irq: Option<u32>,
    /// The softirq vector that runs.
    softirq: Option<u32>,
}

impl State {
    fn apply(&mut self, w: &What) {
        match *w {
            // No switch happens inside an IRQ handler or a softirq (both
            // run with preemption off; on PREEMPT_RT a softirq thread can
            // be preempted, and its softirq's rest is then counted as the
            // thread's).
            What::Run(t) => {
                *self = State {
                    running: Some(t),
                    irq: None,
                    softirq: None,
                }
            }
            What::IrqIn(l) => self.irq = Some(l),
            What::IrqOut => self.irq = None,
            What::SoftIn(v) => self.softirq = Some(v),
            What::SoftOut => self.softirq = None,
        }
    }
}

/// One CPU's recent events, and its state before the oldest kept.
#[derive(Debug)]
pub struct CpuHistory {
    recs: VecDeque<Rec>,
    base: State,
    /// From when `base` holds; `None` before the first event.
    base_time: Option<u64>,
    history_ns: u64,
    cap: usize,
    /// The pid of the last thread switched in.
    running: Option<u32>,
    /// While idle: the last event of the first interrupt traced since,
    /// and whether that interrupt has ended.
    after_idle: Option<(u64, bool)>,
    /// While a thread runs: the last threads woken here (a few, the
    /// oldest replaced), each with the last event of the interrupt that
    /// woke it; the newest's interrupt may go on unless `woke_ended`. A
    /// fixed array: the history allocates nothing per event.
    woken: [Option<(u32, u64)>; WOKEN],
    /// The newest wake-up's slot in `woken`.
    woke_last: usize,
    /// The newest wake-up's interrupt has ended.
    woke_ended: bool,
}

/// The wake-ups a CPU's history keeps while a thread runs.
const WOKEN: usize = 4;

impl CpuHistory {
    /// An empty history keeping `history_ns` of events, at most `cap`
    /// records (at least one).
    pub fn new(history_ns: u64, cap: usize) -> CpuHistory {
        CpuHistory {
            recs: VecDeque::new(),
            base: State::default(),
            base_time: None,
            history_ns,
            cap: cap.max(1),
            running: None,
            after_idle: None,
            woken: [None; WOKEN],
            woke_last: 0,
            woke_ended: true,
        }
    }

    /// Takes in an event of this CPU, if it is one the history keeps
    /// (`Switch`, IRQ and softirq entries and exits), and forgets what fell
    /// out of its reach. `names` learns the IRQ handlers' names.
    pub fn push(&mut self, time: u64, kind: &EventKind, names: &mut IrqNames) {
        if let EventKind::Switch {
            prev_pid,
            prev_comm,
            prev_prio,
            next_pid,
            ..
        } = kind
        {
            // Switched in untraced (module doc): out of idle, at the first
            // interrupt after it; out of another thread, at the end of the
            // interrupt that woke it here.
            let untraced = match self.running {
                Some(0) if *prev_pid != 0 => Some(self.after_idle.map_or(time, |(at, _)| at)),
                Some(r) if r != *prev_pid => self
                    .woken
                    .iter()
                    .flatten()
                    .find(|&&(pid, _)| pid == *prev_pid)
                    .map(|&(_, at)| at),
                _ => None,
            };
            if let Some(at) = untraced {
                let i = self.recs.partition_point(|r| r.time < at);
                let what = What::Run(Thread {
                    pid: *prev_pid,
                    prio: *prev_prio,
                    comm: Comm::new(prev_comm),
                });
                self.recs.insert(i, Rec { time: at, what });
            }
            self.running = Some(*next_pid);
            self.after_idle = None;
            self.woken = [None; WOKEN];
            self.woke_ended = true;
        } else if self.running.is_some() && !matches!(kind, EventKind::Lost { .. }) {
            let waking = matches!(
                kind,
                EventKind::HrtimerExpire { .. }
                    | EventKind::Waking { .. }
                    | EventKind::Wakeup { .. }
                    | EventKind::IrqExit { .. }
                    | EventKind::SoftirqEntry { .. }
                    | EventKind::SoftirqExit { .. }
                    | EventKind::HrtimerStart { pid: 0, .. }
            );
            let follow = |at: &mut u64, ended: &mut bool| {
                if waking && time.saturating_sub(*at) <= INTERRUPT_GAP_NS {
                    *at = time;
                } else {
                    *ended = true;
                }
            };
            if self.running == Some(0) {
                match &mut self.after_idle {
                    None => self.after_idle = Some((time, !waking)),
                    Some((at, ended)) if !*ended => follow(at, ended),
                    Some(_) => {}
                }
            } else if let EventKind::Wakeup { pid, .. } = kind {
                // Its own slot, else an empty one, else the oldest.
                let slot = self
                    .woken
                    .iter()
                    .position(|w| w.is_some_and(|(p, _)| p == *pid))
                    .or_else(|| self.woken.iter().position(Option::is_none))
                    .unwrap_or_else(|| {
                        (0..WOKEN)
                            .min_by_key(|&i| self.woken[i].map_or(0, |(_, at)| at))
                            .unwrap_or(0)
                    });
                self.woken[slot] = Some((*pid, time));
                self.woke_last = slot;
                self.woke_ended = false;
            } else if !self.woke_ended {
                if let Some((_, at)) = &mut self.woken[self.woke_last] {
                    let mut ended = false;
                    follow(at, &mut ended);
                    self.woke_ended = ended;
                }
            }
        }
        let what = match kind {
            EventKind::Switch {
                next_pid,
                next_comm,
                next_prio,
                ..
            } => What::Run(Thread {
                pid: *next_pid,
                prio: *next_prio,
                comm: Comm::new(next_comm),
            }),
            EventKind::IrqEntry { irq, name } => {
                names.learn(*irq, name);
                What::IrqIn(*irq)
            }
            EventKind::IrqExit { .. } => What::IrqOut,
            EventKind::SoftirqEntry { vec } => What::SoftIn(*vec),
            EventKind::SoftirqExit { .. } => What::SoftOut,
            _ => return,
        };
        if self.base_time.is_none() {
            self.base_time = Some(time);
        }
        let horizon = time.saturating_sub(self.history_ns);
        while let Some(first) = self.recs.front() {
            if first.time >= horizon && self.recs.len() < self.cap {
                break;
            }
            let first = self.recs.pop_front().expect("a front record");
            self.base.apply(&first.what);
            self.base_time = Some(first.time);
        }
        self.recs.push_back(Rec { time, what });
    }

    /// What ran on this CPU over `[from, to)`, as parts of an explanation
    /// (its `threads`, `irqs`, `softirqs`, `unexplained_ns`, `unknown_ns`;
    /// the caller fills in which cycle it explains).
    pub fn explain(&self, from: u64, to: u64, names: &IrqNames) -> Explanation {
        let mut x = Explanation {
            from_ns: from,
            to_ns: to,
            ..Explanation::default()
        };
        if to <= from {
            return x;
        }
        let base_time = self.base_time.unwrap_or(to);
        let mut cur = from;
        if cur < base_time {
            let until = base_time.min(to);
            x.unknown_ns += until - cur;
            cur = until;
        }
        // The state at `cur`: from the last switch at or before it (a
        // switch sets the whole state), else from the base; then on.
        let first = self.recs.partition_point(|r| r.time <= cur);
        let last_switch = self
            .recs
            .range(..first)
            .rposition(|r| matches!(r.what, What::Run(_)));
        let mut state = self.base;
        for r in self.recs.range(last_switch.unwrap_or(0)..first) {
            state.apply(&r.what);
        }
        for r in self.recs.range(first..) {
            if r.time >= to {
                break;
            }
            x.add(&state, r.time - cur, names);
            cur = r.time;
            state.apply(&r.what);
        }
        if to > cur {
            x.add(&state, to - cur, names);
        }
        x.order();
        x
    }
}

/// The IRQ handlers' names by line, as `irq_handler_entry` gave them last.
#[derive(Debug, Default)]
pub struct IrqNames(HashMap<u32, String>);

impl IrqNames {
    fn learn(&mut self, irq: u32, name: &str) {
        if self.0.get(&irq).map(String::as_str) != Some(name) {
            self.0.insert(irq, name.to_string());
        }
    }

    fn name(&self, irq: u32) -> String {
        self.0.get(&irq).cloned().unwrap_or_default()
    }
}

/// A thread that ran between a release and the start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadPart {
    /// Its kernel pid (thread id).
    pub pid: u32,
    /// Its name.
    pub comm: String,
    /// Its kernel priority (0..=99 real-time, 100..=139 normal).
    pub prio: i32,
    /// How long it ran, summed, ns (IRQs and softirqs taken out).
    pub ns: u64,
}

/// An IRQ handler that ran between a release and the start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IrqPart {
    /// The IRQ line.
    pub irq: u32,
    /// Its handler's name.
    pub name: String,
    /// How long its handlers ran, summed, ns.
    pub ns: u64,
}

/// A softirq that ran between a release and the start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SoftirqPart {
    /// Its vector.
    pub vec: u32,
    /// Its name (`NET_RX`, `TIMER`, …).
    pub name: String,
    /// How long it ran, summed, ns.
    pub ns: u64,
}

/// What delayed one cycle: everything that ran on its CPU between its
/// release and its start. The parts add up to `to_ns − from_ns`, the
/// cycle's latency, exactly ([`Explanation::total_ns`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Explanation {
    /// The thread delayed (`observe`: the observed thread; a periodic
    /// probe: its own measuring thread).
    pub tid: u32,
    /// Its cycle's number (from 0, per thread).
    pub cycle: u64,
    /// The CPU it started on, whose events these are.
    pub cpu: u32,
    /// The release, ns of `CLOCK_MONOTONIC`.
    pub from_ns: u64,
    /// The start.
    pub to_ns: u64,
    /// The threads that ran, longest first.
    pub threads: Vec<ThreadPart>,
    /// The IRQ handlers that ran, longest first.
    pub irqs: Vec<IrqPart>,
    /// The softirqs that ran, longest first.
    pub softirqs: Vec<SoftirqPart>,
    /// Time the CPU was idle: no traced event explains it.
    pub unexplained_ns: u64,
    /// Time before the history's reach: nothing says what ran.
    #[serde(default)]
    pub unknown_ns: u64,
}

impl Explanation {
    /// The latency explained: the sum of every part.
    pub fn total_ns(&self) -> u64 {
        self.threads.iter().map(|p| p.ns).sum::<u64>()
            + self.irqs.iter().map(|p| p.ns).sum::<u64>()
            + self.softirqs.iter().map(|p| p.ns).sum::<u64>()
            + self.unexplained_ns
            + self.unknown_ns
    }

    /// One line, as the text report prints it beside the outlier: `cycle
    /// 1234 late by 812.000us: ksoftirqd/1 (pid 21, prio 120) 640.000us,
    /// irq 24 virtio0-input 31.000us, softirq NET_RX 90.000us, unexplained
    /// 51.000us` (threads, IRQs, softirqs, each longest first, then the
    /// unexplained and unknown time when there is any).
    pub fn line(&self) -> String {
        let t = |ns: u64| format_ns(i64::try_from(ns).unwrap_or(i64::MAX));
        let mut parts: Vec<String> = Vec::new();
        for p in &self.threads {
            parts.push(format!(
                "{} (pid {}, prio {}) {}",
                p.comm,
                p.pid,
                p.prio,
                t(p.ns)
            ));
        }
        for p in &self.irqs {
            parts.push(format!("irq {} {} {}", p.irq, p.name, t(p.ns)));
        }
        for p in &self.softirqs {
            parts.push(format!("softirq {} {}", p.name, t(p.ns)));
        }
        if self.unexplained_ns > 0 {
            parts.push(format!("unexplained {}", t(self.unexplained_ns)));
        }
        if self.unknown_ns > 0 {
            parts.push(format!("before the trace history {}", t(self.unknown_ns)));
        }
        let mut o = format!(
            "cycle {} late by {}",
            self.cycle,
            t(self.to_ns.saturating_sub(self.from_ns))
        );
        if !parts.is_empty() {
            let _ = write!(o, ": {}", parts.join(", "));
        }
        o
    }

    fn add(&mut self, s: &State, ns: u64, names: &IrqNames) {
        if let Some(irq) = s.irq {
            match self.irqs.iter_mut().find(|p| p.irq == irq) {
                Some(p) => p.ns += ns,
                None => self.irqs.push(IrqPart {
                    irq,
                    name: names.name(irq),
                    ns,
                }),
            }
        } else if let Some(vec) = s.softirq {
            match self.softirqs.iter_mut().find(|p| p.vec == vec) {
                Some(p) => p.ns += ns,
                None => self.softirqs.push(SoftirqPart {
                    vec,
                    name: softirq_name(vec),
                    ns,
                }),
            }
        } else {
            match s.running {
                None => self.unknown_ns += ns,
                Some(t) if t.pid == 0 => self.unexplained_ns += ns,
                Some(t) => match self.threads.iter_mut().find(|p| p.pid == t.pid) {
                    Some(p) => p.ns += ns,
                    None => self.threads.push(ThreadPart {
                        pid: t.pid,
                        comm: t.comm.as_string(),
                        prio: t.prio,
                        ns,
                    }),
                },
            }
        }
    }

    /// Longest first within each kind; equal ones in the order they ran.
    fn order(&mut self) {
        self.threads.sort_by_key(|p| std::cmp::Reverse(p.ns));
        self.irqs.sort_by_key(|p| std::cmp::Reverse(p.ns));
        self.softirqs.sort_by_key(|p| std::cmp::Reverse(p.ns));
    }
}
