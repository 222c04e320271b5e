//! The probe threads of a container, seen from the host: found through the
//! container's first process (`ENGINE inspect`) by their names
//! (`cyclic-cpu1`: the lifecycle names each probe thread `KIND-cpuN`), and
//! read in the host's `/proc` — their scheduling policy and priority,
//! their allowed CPUs, the process's locked memory, the machine's PM QoS
//! target — so a result says, independently of what the probe inside
//! reported, that the container's probe was real-time. Their `schedstat`
//! (time on the CPU, time waiting on the run queue, time slices) is
//! sampled as the rows arrive and becomes each thread's counters.
//!
//! Processes are live things: the real `/proc` is read, never the sysroot
//! (only the PM QoS device is taken under it).

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use serde::Serialize;

/// One probe thread as the host sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ThreadView {
    /// Its name (`cyclic-cpu1`).
    pub name: String,
    /// Its thread id on the host.
    pub host_tid: i32,
    /// Its scheduling policy (`SCHED_FIFO`, …).
    pub policy: String,
    /// Its real-time priority (0 for a time-sharing policy).
    pub priority: u32,
    /// The CPUs it may run on (`Cpus_allowed_list`).
    pub cpus: String,
    /// `schedstat` when the probe was ready: on-CPU ns, run-queue wait ns,
    /// time slices.
    #[serde(skip)]
    pub first: Option<[u64; 3]>,
    /// The last `schedstat` read while it measured.
    #[serde(skip)]
    pub last: Option<[u64; 3]>,
}

/// The container's probe threads and process, as the host sees them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct HostView {
    /// The container's first process (jitterlab) on the host.
    pub pid: i32,
    /// Its probe threads.
    pub threads: Vec<ThreadView>,
    /// Memory it has locked (`VmLck`), kB.
    pub locked_kb: Option<u64>,
    /// The machine's CPU latency target while it ran
    /// (`/dev/cpu_dma_latency`), µs: 0 when the probe's request holds.
    pub pm_qos_us: Option<i32>,
}

/// The scheduling policies by number (`sched_setscheduler`).
fn policy_name(n: u32) -> String {
    match n {
        0 => "SCHED_OTHER".into(),
        1 => "SCHED_FIFO".into(),
        2 => "SCHED_RR".into(),
        3 => "SCHED_BATCH".into(),
        5 => "SCHED_IDLE".into(),
        6 => "SCHED_DEADLINE".into(),
        n => format!("policy {n}"),
    }
}

/// `(rt_priority, policy)` of a `/proc/PID/task/TID/stat` text (fields 40
/// and 41, counted after the command name, which may hold spaces).
pub fn sched_of_stat(stat: &str) -> Option<(u32, u32)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state).
    Some((f.get(37)?.parse().ok()?, f.get(38)?.parse().ok()?))
}

/// A `status` field's value (`Cpus_allowed_list`, `VmLck`).
pub fn status_field<'a>(status: &'a str, name: &str) -> Option<&'a str> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .map(str::trim)
}

/// The three numbers of a `schedstat` text.
pub fn parse_schedstat(text: &str) -> Option<[u64; 3]> {
    let v: Vec<u64> = text
        .split_whitespace()
        .map(|n| n.parse().ok())
        .collect::<Option<_>>()?;
    (v.len() == 3).then(|| [v[0], v[1], v[2]])
}

impl HostView {
    /// The probe threads named `names` of process `pid` as they are now,
    /// and the PM QoS target under `root`.
    pub fn read(pid: i32, names: &[String], root: &Path) -> HostView {
        let task = format!("/proc/{pid}/task");
        let mut threads = Vec::new();
        for entry in fs::read_dir(&task).into_iter().flatten().flatten() {
            let dir = entry.path();
            let Ok(comm) = fs::read_to_string(dir.join("comm")) else {
                continue;
            };
            let name = comm.trim().to_string();
            if !names.contains(&name) {
                continue;
            }
            let Some(host_tid) = entry.file_name().to_str().and_then(|t| t.parse().ok()) else {
                continue;
            };
            let (priority, policy) = fs::read_to_string(dir.join("stat"))
                .ok()
                .and_then(|s| sched_of_stat(&s))
                .unwrap_or((0, u32::MAX));
            let cpus = fs::read_to_string(dir.join("status"))
                .ok()
                .and_then(|s| status_field(&s, "Cpus_allowed_list").map(str::to_string))
                .unwrap_or_default();
            let first = fs::read_to_string(dir.join("schedstat"))
                .ok()
                .and_then(|s| parse_schedstat(&s));
            threads.push(ThreadView {
                name,
                host_tid,
                policy: policy_name(policy),
                priority,
                cpus,
                first,
                last: first,
            });
        }
        threads.sort_by(|a, b| a.name.cmp(&b.name));
        let locked_kb = fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|s| {
                status_field(&s, "VmLck")?
                    .trim_end_matches("kB")
                    .trim()
                    .parse()
                    .ok()
            });
        let pm_qos_us = fs::read(root.join("dev/cpu_dma_latency"))
            .ok()
            .and_then(|b| Some(i32::from_ne_bytes(b.get(..4)?.try_into().ok()?)));
        HostView {
            pid,
            threads,
            locked_kb,
            pm_qos_us,
        }
    }

    /// Reads every thread's `schedstat` again (a thread that has ended
    /// keeps its last reading).
    pub fn sample(&mut self) {
        for t in &mut self.threads {
            let path = format!("/proc/{}/task/{}/schedstat", self.pid, t.host_tid);
            if let Some(now) = fs::read_to_string(path)
                .ok()
                .and_then(|s| parse_schedstat(&s))
            {
                t.last = Some(now);
            }
        }
    }

    /// The counters of the thread named `name`: what its `schedstat` grew
    /// by while it measured.
    pub fn counters(&self, name: &str) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        let Some(t) = self.threads.iter().find(|t| t.name == name) else {
            return out;
        };
        if let (Some(a), Some(b)) = (t.first, t.last) {
            for (i, key) in [
                "host on-CPU ns",
                "host run-queue wait ns",
                "host time slices",
            ]
            .into_iter()
            .enumerate()
            {
                out.insert(key.to_string(), b[i].saturating_sub(a[i]));
            }
        }
        out
    }

    /// The host thread id of the thread named `name`.
    pub fn host_tid(&self, name: &str) -> Option<i32> {
        self.threads
            .iter()
            .find(|t| t.name == name)
            .map(|t| t.host_tid)
    }
}
