//! The safe real-time defaults of design rule 3, applied and reported.
//!
//! A probe thread asks for: its CPU (pinned), SCHED_FIFO at priority 95 (or
//! what the user chose), memory locked (`mlockall(MCL_CURRENT|MCL_FUTURE)`),
//! a pre-faulted stack, `/dev/cpu_dma_latency` held at 0 µs, and
//! absolute-time `clock_nanosleep` on CLOCK_MONOTONIC. Each is tried, verified
//! where the kernel lets us read it back, and recorded as a
//! [`DefaultStatus`] with the kernel's answer and the fix. When a required one
//! fails the result is marked "not real-time" (and `--strict` turns that into
//! an error) — as jitterdebugger insists, a latency figure measured without
//! them says nothing about real-time behaviour and must not pass for one.
//!
//! Process-wide defaults (mlockall, PM QoS) are applied by the controlling
//! thread before the probes start; per-thread ones inside each probe thread.
//! Threads that are not real-time (the controller, the metrics server) keep
//! off the probe CPUs with [`keep_off_probe_cpus`].
//!
//! The design rules cited here are in `docs/design.md`.

use std::io;
use std::path::Path;

use jitterlab_core::result::DefaultStatus;
use jitterlab_sys::{self as sys, DmaLatencyGuard, Policy};

/// Stack each probe thread pre-faults before its loop.
pub const PREFAULT_STACK: usize = 256 * 1024;

/// Why a call failed, with the fix, for the common errno values.
fn explain(e: &io::Error, what: &str) -> String {
    let fix = match e.raw_os_error() {
        Some(1) => {
            " — run as root, or grant CAP_SYS_NICE/CAP_IPC_LOCK, or raise the limit (ulimit -r 99 for priorities, ulimit -l unlimited for mlock); with RT group scheduling also give the cgroup cpu.rt_runtime_us"
        }
        Some(12) => " — not enough lockable memory: raise RLIMIT_MEMLOCK (ulimit -l unlimited)",
        Some(22) => " — the kernel rejected the value (is the CPU online?)",
        Some(2) => " — the device does not exist (kernel without PM QoS?)",
        Some(13) => " — permission denied: run as root",
        _ => "",
    };
    format!("{what} failed: {e}{fix}")
}

fn status(
    name: &str,
    requested: String,
    result: Result<String, String>,
    required: bool,
) -> DefaultStatus {
    match result {
        Ok(detail) => DefaultStatus {
            name: name.into(),
            requested,
            applied: true,
            detail,
            required,
        },
        Err(detail) => DefaultStatus {
            name: name.into(),
            requested,
            applied: false,
            detail,
            required,
        },
    }
}

/// Locks all memory of the process.
pub fn lock_memory() -> DefaultStatus {
    let r = sys::lock_all_memory()
        .map(|()| "all current and future pages locked".to_string())
        .map_err(|e| explain(&e, "mlockall(MCL_CURRENT|MCL_FUTURE)"));
    status("mlockall", "MCL_CURRENT|MCL_FUTURE".into(), r, true)
}

/// Holds `/dev/cpu_dma_latency` (under `root`) at 0 µs, unless `skip`.
pub fn hold_dma_latency(root: &Path, skip: bool) -> (Option<DmaLatencyGuard>, DefaultStatus) {
    let path = root.join("dev/cpu_dma_latency");
    if skip {
        let s = status(
            "cpu_dma_latency",
            "not held (--no-dma-latency)".into(),
            Err("not requested: CPUs may enter deep idle states between cycles".into()),
            true,
        );
        return (None, s);
    }
    match DmaLatencyGuard::hold(&path, 0) {
        Ok(g) => (
            Some(g),
            status(
                "cpu_dma_latency",
                "0 us".into(),
                Ok(format!(
                    "{} held open at 0 us for the whole run",
                    path.display()
                )),
                true,
            ),
        ),
        Err(e) => (
            None,
            status(
                "cpu_dma_latency",
                "0 us".into(),
                Err(explain(&e, &format!("writing 0 to {}", path.display()))),
                true,
            ),
        ),
    }
}

/// The scheduling request of a probe thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchedRequest {
    /// Policy.
    pub policy: Policy,
    /// Priority (fifo/rr) — 0 for other.
    pub priority: i32,
    /// Nice value (other).
    pub nice: i32,
}

impl SchedRequest {
    fn describe(&self) -> String {
        match self.policy {
            Policy::Fifo => format!("SCHED_FIFO priority {}", self.priority),
            Policy::RoundRobin => format!("SCHED_RR priority {}", self.priority),
            Policy::Other => format!("SCHED_OTHER nice {}", self.nice),
        }
    }
}

/// Applies the per-thread defaults inside the calling probe thread, in the
/// order that makes each one count: signals blocked, pinned, scheduled,
/// stack pre-faulted. Returns one status per default.
pub fn setup_probe_thread(cpu: usize, sched: SchedRequest) -> Vec<DefaultStatus> {
    let mut out = Vec::with_capacity(4);
    // The terminating signals go to the controlling thread, never into a
    // probe's sleep.
    let _ = sys::block_signals(&sys::terminating_signals());

    let pin = sys::pin_to_cpu(cpu)
        .map_err(|e| explain(&e, &format!("sched_setaffinity(CPU {cpu})")))
        .and_then(|()| match sys::current_cpu() {
            Ok(c) if c == cpu => Ok(format!("pinned to CPU {cpu}")),
            Ok(c) => Err(format!("asked for CPU {cpu} but running on CPU {c}")),
            Err(e) => Err(explain(&e, "sched_getcpu")),
        });
    out.push(status("affinity", format!("CPU {cpu}"), pin, true));

    let sched_result = match sched.policy {
        Policy::Other => sys::set_scheduler(Policy::Other, 0)
            .and_then(|()| sys::set_thread_nice(sched.nice))
            .map_err(|e| explain(&e, &sched.describe()))
            .and_then(|()| {
                Err(format!(
                    "{} applied as requested; a time-sharing policy is not real-time",
                    sched.describe()
                ))
            }),
        p => sys::set_scheduler(p, sched.priority)
            .map_err(|e| explain(&e, &format!("sched_setscheduler({})", sched.describe())))
            .and_then(|()| match sys::get_scheduler() {
                Ok((pol, prio)) if prio == sched.priority && (pol & 0xff) == p.raw() => Ok(
                    format!("{} verified with sched_getscheduler", sched.describe()),
                ),
                Ok((pol, prio)) => Err(format!(
                    "asked for {} but the kernel reports policy {pol} priority {prio}",
                    sched.describe()
                )),
                Err(e) => Err(explain(&e, "sched_getscheduler")),
            }),
    };
    out.push(status("scheduler", sched.describe(), sched_result, true));

    sys::prefault_stack::<PREFAULT_STACK>();
    out.push(status(
        "prefault",
        format!(
            "{} KiB of stack and all sample buffers",
            PREFAULT_STACK / 1024
        ),
        Ok("touched before the loop".into()),
        true,
    ));
    out
}

/// The sleep primitive, always in force; listed so a result says how it slept.
pub fn clock_status() -> DefaultStatus {
    status(
        "clock",
        "clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)".into(),
        Ok("absolute-time sleeps on the monotonic clock".into()),
        true,
    )
}

/// Informational: RT throttling can stall a real-time thread that runs too
/// long, which shows up as a huge latency rather than an error.
pub fn throttling_status(rt_runtime_us: Option<i64>, rt_period_us: Option<i64>) -> DefaultStatus {
    let requested = "no RT throttling (kernel.sched_rt_runtime_us = -1)".to_string();
    match rt_runtime_us {
        Some(-1) => status("rt_throttling", requested, Ok("disabled".into()), false),
        Some(r) => status(
            "rt_throttling",
            requested,
            Err(format!(
                "real-time tasks may use {r} us of every {} us; a probe that runs longer is throttled (sysctl kernel.sched_rt_runtime_us=-1 disables it)",
                rt_period_us.unwrap_or(1_000_000)
            )),
            false,
        ),
        None => status("rt_throttling", requested, Err("unknown: /proc/sys/kernel/sched_rt_runtime_us unreadable".into()), false),
    }
}

/// Merges the per-thread statuses of several threads into one per default:
/// applied only when applied on every thread; the details of failures kept.
pub fn merge_thread_statuses(per_thread: &[(usize, Vec<DefaultStatus>)]) -> Vec<DefaultStatus> {
    let mut merged: Vec<DefaultStatus> = Vec::new();
    for (cpu, statuses) in per_thread {
        for s in statuses {
            match merged.iter_mut().find(|m| m.name == s.name) {
                None => {
                    let mut s = s.clone();
                    if per_thread.len() > 1 {
                        s.detail = format!("CPU {cpu}: {}", s.detail);
                        s.requested = strip_cpu(&s.requested);
                    }
                    merged.push(s);
                }
                Some(m) => {
                    if !s.applied && m.applied {
                        m.applied = false;
                        m.detail = format!("CPU {cpu}: {}", s.detail);
                    } else if !s.applied {
                        m.detail.push_str(&format!("; CPU {cpu}: {}", s.detail));
                    }
                }
            }
        }
    }
    merged
}

fn strip_cpu(requested: &str) -> String {
    if requested.starts_with("CPU ") {
        "each thread on its own CPU".into()
    } else {
        requested.to_string()
    }
}

/// Keeps the calling (controller) thread off the probe CPUs where the
/// machine has others.
pub fn keep_off_probe_cpus(root: &Path, probe_cpus: &[usize]) {
    if let Ok(online) = super::host::online_cpus(root) {
        let others: Vec<usize> = online.iter().filter(|c| !probe_cpus.contains(c)).collect();
        if !others.is_empty() {
            let _ = sys::set_affinity(&others);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(name: &str, applied: bool, detail: &str) -> DefaultStatus {
        DefaultStatus {
            name: name.into(),
            requested: "x".into(),
            applied,
            detail: detail.into(),
            required: true,
        }
    }

    #[test]
    fn merging_fails_a_default_failed_on_any_thread() {
        let m = merge_thread_statuses(&[
            (1, vec![st("scheduler", true, "ok")]),
            (2, vec![st("scheduler", false, "EPERM")]),
            (3, vec![st("scheduler", false, "EPERM")]),
        ]);
        assert_eq!(m.len(), 1);
        assert!(!m[0].applied);
        assert_eq!(m[0].detail, "CPU 2: EPERM; CPU 3: EPERM");
    }

    #[test]
    fn dma_latency_on_a_fake_device_writes_zero() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("dev")).unwrap();
        std::fs::write(dir.path().join("dev/cpu_dma_latency"), b"").unwrap();
        let (g, s) = hold_dma_latency(dir.path(), false);
        assert!(g.is_some() && s.applied);
        assert_eq!(
            std::fs::read(dir.path().join("dev/cpu_dma_latency")).unwrap(),
            vec![0; 4]
        );
        let (g, s) = hold_dma_latency(Path::new("/nonexistent-root"), false);
        assert!(g.is_none() && !s.applied);
        assert!(s.detail.starts_with("writing 0 to /nonexistent-root/dev/cpu_dma_latency failed: No such file or directory"), "{}", s.detail);
    }

    #[test]
    fn throttling_is_informational() {
        let s = throttling_status(Some(950_000), Some(1_000_000));
        assert!(!s.applied && !s.required);
        assert!(throttling_status(Some(-1), None).applied);
    }
}
