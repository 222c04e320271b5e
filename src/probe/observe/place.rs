//! Where an `observe` cell's task runs: a command the probe started is
//! placed by the cell's configuration, a task it attached to is left as
//! it is, and what held is read back for the result
//! ([`jitterlab_core::observe::placement`]).
//!
//! A started command is ours: it is pinned to the configuration's probe
//! CPUs before it executes (as a neighbour is), and once it runs every
//! thread it has is pinned there too and, when the configuration sets a
//! real-time policy, given it (`sched_setaffinity`, `sched_setscheduler`
//! on each thread) — after its threads set their own, so the
//! configuration wins over what the command asked for itself. The
//! observer thread's own CPU and policy are the lifecycle's
//! (`Placement::Observer`); [`observer`] reads them back on it.

use std::path::Path;

use jitterlab_core::defaults;
use jitterlab_core::observe::placement::{sched_text, Placement};
use jitterlab_core::spec::{Configuration, Policy};
use jitterlab_core::units::CpuList;
use jitterlab_sys as sys;

use super::target;

/// The placement a cell's configuration asks for its task: the probe
/// CPUs, and the policy (`started`: jitterlab starts the task and places
/// it; else it attaches and changes nothing).
pub fn asked(config: &Configuration, started: bool) -> Placement {
    let (policy, priority) = config_sched(config);
    Placement {
        probe_cpus: config.probe_cpus.clone(),
        config_policy: sched_text(policy.raw(), priority),
        started,
        ..Placement::default()
    }
}

/// The configuration's policy and priority (a real-time policy without a
/// priority gets the default one, as a probe thread does).
fn config_sched(config: &Configuration) -> (Policy, i32) {
    match config.policy {
        Policy::Other => (Policy::Other, 0),
        p => (p, config.priority.unwrap_or(defaults::PRIORITY)),
    }
}

/// Places every thread of the started command `pid` (under `root`'s
/// `/proc`) as `config` asks: pinned to its probe CPUs and, with a
/// real-time policy, scheduled so. Returns what failed, each with its
/// call and error.
pub fn command(root: &Path, pid: u32, config: &Configuration) -> Vec<String> {
    let cpus: CpuList = config.probe_cpus.iter().copied().collect();
    let (policy, priority) = config_sched(config);
    let mut failed = Vec::new();
    for t in target::of_command(root, pid) {
        let tid = t.tid as i32;
        if let Err(e) = sys::set_thread_affinity(tid, &config.probe_cpus) {
            failed.push(format!("sched_setaffinity(tid {tid}, CPUs {cpus}): {e}"));
        }
        if policy != Policy::Other {
            if let Err(e) = sys::set_thread_scheduler(tid, policy, priority) {
                failed.push(format!(
                    "sched_setscheduler(tid {tid}, {}): {e}",
                    sched_text(policy.raw(), priority)
                ));
            }
        }
    }
    failed
}

/// The calling (observer) thread's CPU and policy, read back from the
/// kernel into `p`.
pub fn observer(p: &mut Placement) {
    p.observer_cpu = sys::current_cpu().ok().map(|c| c as u32);
    p.observer_policy = match sys::thread_scheduler(sys::gettid()) {
        Ok((policy, prio)) => sched_text(policy, prio),
        Err(e) => format!("policy not read ({e})"),
    };
    p.observer_shares = p
        .observer_cpu
        .is_some_and(|c| p.probe_cpus.contains(&(c as usize)));
}

/// The observed thread's policy at the end, read back into `p`.
pub fn task(p: &mut Placement, tid: u32) {
    p.task_policy = sys::thread_scheduler(tid as i32)
        .ok()
        .map(|(policy, prio)| sched_text(policy, prio));
}
