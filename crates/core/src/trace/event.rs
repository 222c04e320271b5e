//! The events the tracer hands to the observation model: one variant per
//! kernel tracepoint jitterlab reads, with the fields the model uses, in
//! nanoseconds of `CLOCK_MONOTONIC` (the clock of hrtimer expiries, so a
//! timer's `expires` compares directly with event times).
//!
//! A thread is its kernel pid (a thread id, `tid` to user space); `comm`
//! is the kernel's 16-byte task name as the tracepoint recorded it.
//! Priorities are the kernel's `prio` (0..=99 real-time, highest first,
//! 100..=139 normal), as `sched_switch` records them.

use serde::{Deserialize, Serialize};

/// One traced event on one CPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// When it happened, ns of `CLOCK_MONOTONIC`.
    pub time_ns: u64,
    /// The CPU it happened on.
    pub cpu: u32,
    /// What happened.
    pub kind: EventKind,
}

/// What a traced event was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum EventKind {
    /// `sched:sched_waking`: `pid` is being woken (by the thread running on
    /// `cpu`), to run on `target_cpu`.
    Waking {
        /// The woken thread.
        pid: u32,
        /// Its kernel priority.
        prio: i32,
        /// The CPU it will run on.
        target_cpu: u32,
    },
    /// `sched:sched_wakeup`: `pid` is runnable on `target_cpu`.
    Wakeup {
        /// The woken thread.
        pid: u32,
        /// Its kernel priority.
        prio: i32,
        /// The CPU it will run on.
        target_cpu: u32,
    },
    /// `sched:sched_switch`: `cpu` stops running `prev` and runs `next`.
    Switch {
        /// The thread switched out.
        prev_pid: u32,
        /// Its name.
        prev_comm: String,
        /// Its kernel priority.
        prev_prio: i32,
        /// Its state as the kernel's `prev_state` bits: 0 runnable
        /// (preempted), 1 interruptible sleep (`S`), 2 uninterruptible
        /// (`D`), and so on.
        prev_state: u64,
        /// The thread switched in.
        next_pid: u32,
        /// Its name.
        next_comm: String,
        /// Its kernel priority.
        next_prio: i32,
    },
    /// `timer:hrtimer_start`: the thread running on `cpu` (`pid`, from the
    /// record's header) armed `timer` to expire at `expires_ns`.
    HrtimerStart {
        /// The thread that armed it; 0 for the idle task, and for an
        /// interrupt (hard or soft IRQ, NMI: the record's flags say so) that
        /// armed it in whatever thread it interrupted — a tick re-armed in
        /// its handler is no sleep of that thread.
        pid: u32,
        /// The timer's address: the key that matches its expiry.
        timer: u64,
        /// When it is to expire (hard), ns of its clock base.
        expires_ns: u64,
        /// The soft expiry (≤ `expires_ns`: the earliest it may fire).
        softexpires_ns: u64,
    },
    /// `timer:hrtimer_expire_entry`: `timer`'s handler starts; `now_ns` is
    /// the base's time the expiry was handled at.
    HrtimerExpire {
        /// The timer's address.
        timer: u64,
        /// The base's time when it was handled.
        now_ns: u64,
    },
    /// `irq:irq_handler_entry`.
    IrqEntry {
        /// The IRQ line.
        irq: u32,
        /// Its handler's name (`/proc/interrupts`' last column).
        name: String,
    },
    /// `irq:irq_handler_exit`.
    IrqExit {
        /// The IRQ line.
        irq: u32,
    },
    /// `irq:softirq_entry`.
    SoftirqEntry {
        /// The softirq vector (0 HI, 1 TIMER, 2 NET_TX, 3 NET_RX, 4 BLOCK,
        /// 5 IRQ_POLL, 6 TASKLET, 7 SCHED, 8 HRTIMER, 9 RCU).
        vec: u32,
    },
    /// `irq:softirq_exit`.
    SoftirqExit {
        /// The softirq vector.
        vec: u32,
    },
    /// The kernel dropped `count` records on `cpu` before `time_ns` (the
    /// ring buffer was full): the model never takes the gap for a long
    /// cycle.
    Lost {
        /// How many records were lost.
        count: u64,
    },
}

/// The softirq vectors' names, as `/proc/softirqs` prints them.
pub const SOFTIRQ_NAMES: [&str; 10] = [
    "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU",
];

/// The name of softirq vector `vec`, or `vec N` for one this table does not
/// know.
pub fn softirq_name(vec: u32) -> String {
    SOFTIRQ_NAMES
        .get(vec as usize)
        .map(|s| (*s).to_string())
        .unwrap_or_else(|| format!("vec {vec}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn softirq_vectors_are_named_as_proc_softirqs_names_them() {
        assert_eq!(softirq_name(1), "TIMER");
        assert_eq!(softirq_name(3), "NET_RX");
        assert_eq!(softirq_name(9), "RCU");
        assert_eq!(softirq_name(12), "vec 12");
    }
}
