//! What the probes with a helper thread share. `ctxswitch` starts a
//! partner thread and `response` an event thread beside the calling thread,
//! which the runner has pinned and made SCHED_FIFO: both set their helper
//! up the same way ([`setup_helper_thread`]), check the calling thread the
//! same way ([`own_thread_warnings`]), refuse the same arguments (a CPU
//! that is not online, a priority outside SCHED_FIFO's range, a zero count
//! or duration), pace their releases with the same absolute sleep (the
//! skip rule is `jitterlab_core::cycle::next_release_after`), and end for
//! the same reasons ([`Ended`]).

use anyhow::Result;
use jitterlab_core::units::CpuList;
use jitterlab_sys::{self as sys, Policy};
use serde::Serialize;

use crate::error::bad;
use crate::system::rt::{self, SchedRequest};

/// Stack of a helper thread: what it pre-faults plus room for the rest.
pub(crate) const HELPER_STACK: usize = rt::PREFAULT_STACK + 512 * 1024;

/// Why a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Ended {
    /// `count` samples were pushed.
    Count,
    /// `duration` passed.
    Duration,
    /// The stop flag was raised.
    Stopped,
}

/// Sleeps until the absolute monotonic time `t`, again after a signal.
#[inline(always)]
pub(crate) fn sleep_until(t: u64) {
    while let Err(e) = sys::sleep_until_ns(t) {
        if e != sys::EINTR {
            break;
        }
    }
}

/// Sets up a helper thread of a probe (the partner, the event thread) on
/// `cpu` at SCHED_FIFO `priority` with the probe thread's defaults
/// (signals blocked, pinned, scheduled, stack pre-faulted); returns one
/// warning per default that failed, prefixed with `role`.
pub(crate) fn setup_helper_thread(role: &str, cpu: usize, priority: i32) -> Vec<String> {
    let sched = SchedRequest {
        policy: Policy::Fifo,
        priority,
        nice: 0,
    };
    rt::setup_probe_thread(cpu, sched)
        .into_iter()
        .filter(|s| !s.applied)
        .map(|s| format!("{role}: {}", s.detail))
        .collect()
}

/// Warnings when the calling thread is not where the runner should have
/// put it: on `cpu`, SCHED_FIFO at `priority`.
pub(crate) fn own_thread_warnings(role: &str, cpu: usize, priority: i32) -> Vec<String> {
    let mut out = Vec::new();
    match sys::current_cpu() {
        Ok(c) if c == cpu => {}
        Ok(c) => out.push(format!(
            "{role}: runs on CPU {c}, not on CPU {cpu}; pin it before the probe runs"
        )),
        Err(e) => out.push(format!("{role}: sched_getcpu failed: {e}")),
    }
    match sys::get_scheduler() {
        Ok((policy, prio)) if policy & 0xff == Policy::Fifo.raw() && prio == priority => {}
        Ok((policy, prio)) => out.push(format!(
            "{role}: runs with policy {policy} priority {prio}, not SCHED_FIFO priority {priority}"
        )),
        Err(e) => out.push(format!("{role}: sched_getscheduler failed: {e}")),
    }
    out
}

/// Refuses (as bad input) a CPU that is not online; `flag` names the option.
pub(crate) fn check_cpu(cpu: usize, online: &CpuList, flag: &str) -> Result<()> {
    if online.contains(cpu) {
        Ok(())
    } else {
        Err(bad(format!(
            "CPU {cpu} is not online (online CPUs: {online}); choose one of them with {flag}"
        )))
    }
}

/// Refuses (as bad input) a priority outside SCHED_FIFO's range.
pub(crate) fn check_priority(priority: i32) -> Result<()> {
    let (lo, hi) = sys::priority_range(Policy::Fifo);
    if (lo..=hi).contains(&priority) {
        Ok(())
    } else {
        Err(bad(format!(
            "--priority {priority} is outside SCHED_FIFO's {lo}-{hi}; choose a priority in that range"
        )))
    }
}

/// Refuses (as bad input) a zero `--count` or `--duration`.
pub(crate) fn check_limits(count: Option<u64>, duration: Option<u64>) -> Result<()> {
    if count == Some(0) {
        return Err(bad("--count must be positive; give e.g. --count 10000"));
    }
    if duration == Some(0) {
        return Err(bad("--duration must be positive; give e.g. --duration 10s"));
    }
    Ok(())
}

/// Test helpers of the probes that need real-time threads.
#[cfg(test)]
pub(crate) mod test_support {
    use jitterlab_sys as sys;

    /// True when this process may use SCHED_FIFO; otherwise says why the
    /// test is skipped.
    pub(crate) fn can_run_realtime() -> bool {
        if sys::effective_uid() != 0 {
            eprintln!("skipping: SCHED_FIFO threads need root (CAP_SYS_NICE)");
            return false;
        }
        true
    }

    /// The last online CPU.
    pub(crate) fn probe_cpu() -> usize {
        crate::system::host::online_cpus(std::path::Path::new("/"))
            .unwrap()
            .iter()
            .last()
            .unwrap()
    }
}
