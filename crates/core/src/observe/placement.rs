//! Where an `observe` measurement ran: the observer thread, and the task
//! it watched.
//!
//! The configuration of an `observe` cell places the *task*, not the
//! observer: its probe CPUs and real-time policy are the task's, applied
//! to a command jitterlab started (pinned to the probe CPUs, given a
//! real-time policy the configuration sets) and never to a task it
//! attached to (`pid`, `tid`, `comm`), which runs as its owner set it. The
//! observer runs off the probe CPUs ([`crate::observer::observer_cpu`]: a housekeeping CPU,
//! else a neighbour CPU, else — one CPU online — it shares a probe CPU), at
//! SCHED_OTHER, with no `/dev/cpu_dma_latency` request of its own, so it
//! never competes with the task it watches. [`Placement`] keeps what held,
//! read back from the kernel, in the result's `detail`; its
//! [`lines`](Placement::lines) are what a cell's context says.

use serde::{Deserialize, Serialize};

use crate::units::CpuList;

/// A policy and priority as the kernel reports them
/// (`sched_getscheduler`'s raw policy), as the context prints them:
/// `SCHED_OTHER`, `SCHED_FIFO 95`.
pub fn sched_text(policy: i32, priority: i32) -> String {
    match policy {
        0 => "SCHED_OTHER".into(),
        1 => format!("SCHED_FIFO {priority}"),
        2 => format!("SCHED_RR {priority}"),
        3 => "SCHED_BATCH".into(),
        5 => "SCHED_IDLE".into(),
        6 => "SCHED_DEADLINE".into(),
        p => format!("policy {p} priority {priority}"),
    }
}

/// Where the observer and the task ran (the `placement` of an `observe`
/// result's `detail`); every field read back from the kernel.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    /// The CPU the observer measured on (`sched_getcpu`).
    pub observer_cpu: Option<u32>,
    /// Its policy ([`sched_text`]).
    pub observer_policy: String,
    /// True when it shares a probe CPU (no other CPU is online).
    #[serde(default)]
    pub observer_shares: bool,
    /// The configuration's probe CPUs: the task's.
    pub probe_cpus: Vec<usize>,
    /// The configuration's policy for the task ([`sched_text`]).
    pub config_policy: String,
    /// True when jitterlab started the task and placed it; false: it
    /// attached to a running task and changed nothing of it.
    pub started: bool,
    /// What placing a started task could not do, each with its error.
    #[serde(default)]
    pub failed: Vec<String>,
    /// The observed thread's policy at the end ([`sched_text`]); `None`:
    /// not read (no thread chosen, or it had ended).
    #[serde(default)]
    pub task_policy: Option<String>,
}

impl Placement {
    /// What the context of the cell says: where the observer ran, how the
    /// task was placed, and where it ran (`task_cpus`: the CPUs its
    /// cycles started on).
    pub fn lines(&self, task_cpus: &[u32]) -> Vec<String> {
        let probe: CpuList = self.probe_cpus.iter().copied().collect();
        let observer = match (self.observer_cpu, self.observer_shares) {
            (Some(c), false) => format!("CPU {c}, off the probe CPUs {probe}"),
            (Some(c), true) => {
                format!(
                    "CPU {c}, shared with the task (no CPU but the probe CPUs {probe} is online)"
                )
            }
            (None, _) => "CPU not read".into(),
        };
        let ran: CpuList = task_cpus.iter().map(|&c| c as usize).collect();
        let ran = match (task_cpus.len(), &self.task_policy) {
            (0, _) => "it finished no cycle".to_string(),
            (1, Some(p)) => format!("it ran on CPU {ran} at {p}"),
            (_, Some(p)) => format!("it ran on CPUs {ran} at {p}"),
            (1, None) => format!("it ran on CPU {ran}"),
            (_, None) => format!("it ran on CPUs {ran}"),
        };
        let task = match (self.started, self.config_policy.as_str()) {
            (true, "SCHED_OTHER") => format!(
                "task: started, pinned to the probe CPUs {probe}, its policy its own (the configuration asks for no real-time policy); {ran}"
            ),
            (true, p) => format!(
                "task: started, pinned to the probe CPUs {probe} at {p} by the configuration; {ran}"
            ),
            (false, p) => format!(
                "task: attached, not changed: the configuration's CPUs {probe} and {p} were not applied to it; {ran}"
            ),
        };
        let mut o = vec![
            format!(
                "observer: {observer}, {}, no /dev/cpu_dma_latency request of its own",
                self.observer_policy
            ),
            task,
        ];
        o.extend(
            self.failed
                .iter()
                .map(|f| format!("task: not placed as asked: {f}")),
        );
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_s_policies_read_as_the_context_prints_them() {
        assert_eq!(sched_text(0, 0), "SCHED_OTHER");
        assert_eq!(sched_text(1, 95), "SCHED_FIFO 95");
        assert_eq!(sched_text(2, 10), "SCHED_RR 10");
        assert_eq!(sched_text(5, 0), "SCHED_IDLE");
        assert_eq!(sched_text(9, 1), "policy 9 priority 1");
    }

    #[test]
    fn the_context_says_where_the_observer_ran_and_how_the_task_was_placed() {
        let started = Placement {
            observer_cpu: Some(0),
            observer_policy: "SCHED_OTHER".into(),
            observer_shares: false,
            probe_cpus: vec![1],
            config_policy: "SCHED_FIFO 95".into(),
            started: true,
            failed: Vec::new(),
            task_policy: Some("SCHED_FIFO 95".into()),
        };
        assert_eq!(
            started.lines(&[1]),
            [
                "observer: CPU 0, off the probe CPUs 1, SCHED_OTHER, no /dev/cpu_dma_latency request of its own",
                "task: started, pinned to the probe CPUs 1 at SCHED_FIFO 95 by the configuration; it ran on CPU 1 at SCHED_FIFO 95",
            ]
        );
        let own = Placement {
            config_policy: "SCHED_OTHER".into(),
            task_policy: Some("SCHED_OTHER".into()),
            failed: vec!["sched_setscheduler(tid 7, SCHED_FIFO 95): EPERM".into()],
            ..started.clone()
        };
        assert_eq!(
            own.lines(&[1])[1..],
            [
                "task: started, pinned to the probe CPUs 1, its policy its own (the configuration asks for no real-time policy); it ran on CPU 1 at SCHED_OTHER",
                "task: not placed as asked: sched_setscheduler(tid 7, SCHED_FIFO 95): EPERM",
            ]
        );
        let attached = Placement {
            observer_cpu: Some(0),
            observer_shares: true,
            probe_cpus: vec![0],
            started: false,
            task_policy: Some("SCHED_FIFO 80".into()),
            ..started.clone()
        };
        assert_eq!(
            attached.lines(&[0, 1]),
            [
                "observer: CPU 0, shared with the task (no CPU but the probe CPUs 0 is online), SCHED_OTHER, no /dev/cpu_dma_latency request of its own",
                "task: attached, not changed: the configuration's CPUs 0 and SCHED_FIFO 95 were not applied to it; it ran on CPUs 0-1 at SCHED_FIFO 80",
            ]
        );
        assert_eq!(
            attached.lines(&[])[1],
            "task: attached, not changed: the configuration's CPUs 0 and SCHED_FIFO 95 were not applied to it; it finished no cycle"
        );
        // A detail stored before the placement was kept reads without it.
        let old: Placement = serde_json::from_str(
            r#"{"observer_cpu":0,"observer_policy":"SCHED_OTHER","probe_cpus":[1],"config_policy":"SCHED_OTHER","started":false}"#,
        )
        .unwrap();
        assert_eq!((old.failed.len(), old.task_policy), (0, None));
    }
}
