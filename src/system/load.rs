//! Reads the CPU load of a stack of threads: two snapshots of the threads'
//! `schedstat` and of their CPU's `/proc/stat` line, and the load between
//! them ([`jitterlab_core::load::StackLoad`]).
//!
//! The `netcycle` probe reports [Baumgartner POWERLINK]'s "CPU load of the stack" — the
//! managing node's threads' CPU time over wall time — with it: a
//! [`LoadMeter::start`] when the measured part of a cell begins, a
//! [`LoadMeter::finish`] when it ends. Both read files, allocate and take
//! the kernel's locks, so they belong before and after the real-time loop,
//! never inside it (design rule 2). Call `finish` while the threads still
//! exist but are blocked (between cycles, or told to stop and waiting):
//! a blocked thread's `schedstat` is exact, a running one's may lag by up
//! to a tick (see [`jitterlab_core::load`]).
//!
//! What is read, every path under the sysroot (design rule 5):
//!
//! | file | what |
//! |---|---|
//! | `proc/self/task/TID/schedstat` | each thread's CPU time, ns |
//! | `proc/stat` | the CPU's idle, iowait and softirq ticks |
//! | `proc/config.gz`, else `boot/config-RELEASE` (`proc/sys/kernel/osrelease`) | `HZ` and how idle and softirq time are kept |
//! | `proc/cmdline` | `nohz=off`, `tsc=noirqtime` |
//!
//! `proc/self` stays `proc/self` under a fake root: the fake tree provides
//! the threads it names, which is what lets the tests give exact figures.
//! The threads must belong to this process (their ids from
//! `jitterlab_sys::gettid()`).
//!
//! A thread's missing `schedstat` is an error naming `CONFIG_SCHED_INFO`;
//! an unreadable `/proc/stat` only leaves the busy and softirq figures
//! unknown (the stack load is the figure the seed reports; they stand
//! beside it), and a missing kernel configuration leaves their sources
//! saying "unknown".
//!
//! The design rules and documents cited here are in `docs/design.md`.

use std::fs::{self, File};
use std::io::{ErrorKind, Read};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use jitterlab_core::load::{
    parse_stat_cpu, parse_task_schedstat, Accounting, CpuTimes, LoadParseError, StackLoad,
    ThreadLoad,
};

use crate::system::host::read_opt;

/// One thread being measured and its CPU time at the start.
#[derive(Debug, Clone)]
struct Thread {
    name: String,
    tid: i32,
    run_ns: u64,
}

/// The first snapshot of a load measurement; [`LoadMeter::finish`] takes
/// the second and computes the load between them.
#[derive(Debug)]
pub struct LoadMeter {
    root: PathBuf,
    cpu: usize,
    threads: Vec<Thread>,
    /// The CPU's `/proc/stat` times, or why they could not be read.
    stat: Result<CpuTimes, String>,
    accounting: Accounting,
    start_ns: u64,
}

impl LoadMeter {
    /// Snapshots the threads' schedstat and the CPU's /proc/stat line now.
    ///
    /// `threads` are `(name, tid)` of threads of this process; `cpu` is the
    /// CPU the stack runs on. Fails when a thread's `schedstat` cannot be
    /// read, or when `/proc/stat` has no line for `cpu`.
    pub fn start(root: &Path, cpu: usize, threads: &[(String, i32)]) -> Result<LoadMeter> {
        Self::start_at(root, cpu, threads, jitterlab_sys::monotonic_ns())
    }

    /// Snapshots again and computes the load over the time between.
    pub fn finish(self) -> Result<StackLoad> {
        self.finish_at(jitterlab_sys::monotonic_ns())
    }

    /// [`LoadMeter::start`] at monotonic time `now_ns`.
    fn start_at(
        root: &Path,
        cpu: usize,
        threads: &[(String, i32)],
        now_ns: u64,
    ) -> Result<LoadMeter> {
        if threads.is_empty() {
            bail!("the load of a stack needs at least one of its threads to measure");
        }
        let threads = threads
            .iter()
            .map(|(name, tid)| {
                let stat = read_thread(root, name, *tid)?;
                Ok(Thread {
                    name: name.clone(),
                    tid: *tid,
                    run_ns: stat.run_ns,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let stat = match read_stat(root, cpu) {
            Ok(times) => Ok(times),
            Err(NoStat::CpuMissing(why)) => bail!("{why}"),
            Err(NoStat::Unknown(why)) => Err(why),
        };
        Ok(LoadMeter {
            root: root.to_path_buf(),
            cpu,
            threads,
            stat,
            accounting: accounting(root),
            start_ns: now_ns,
        })
    }

    /// [`LoadMeter::finish`] at monotonic time `now_ns`.
    fn finish_at(self, now_ns: u64) -> Result<StackLoad> {
        let mut threads = Vec::with_capacity(self.threads.len());
        for t in &self.threads {
            let now = read_thread(&self.root, &t.name, t.tid)?;
            if now.run_ns == 0 && now.timeslices == 0 {
                bail!(
                    "{} reads `0 0 0` although thread {} (tid {}) has run: this kernel keeps scheduler statistics only with CONFIG_SCHEDSTATS or delay accounting; boot with `delayacct` or run `sysctl kernel.sched_schedstats=1`",
                    schedstat_path(&self.root, t.tid).display(),
                    t.name,
                    t.tid
                );
            }
            if now.run_ns < t.run_ns {
                bail!(
                    "thread {} (tid {}) had run {} ns at the start and {} ns at the end: it ended and its id was reused; keep the threads alive until the load is read",
                    t.name,
                    t.tid,
                    t.run_ns,
                    now.run_ns
                );
            }
            threads.push(ThreadLoad {
                name: t.name.clone(),
                tid: t.tid,
                cpu_ns: now.run_ns - t.run_ns,
            });
        }
        let stat = match (self.stat, read_stat(&self.root, self.cpu)) {
            (Ok(before), Ok(after)) => Ok((before, after)),
            (Err(why), _) => Err(why),
            (Ok(_), Err(NoStat::CpuMissing(_))) => Err(format!(
                "CPU {} went offline during the measurement",
                self.cpu
            )),
            (Ok(_), Err(NoStat::Unknown(why))) => Err(why),
        };
        Ok(StackLoad::compute(
            now_ns.saturating_sub(self.start_ns),
            self.cpu,
            threads,
            stat,
            &self.accounting,
        ))
    }
}

/// `root/proc/self/task/TID/schedstat`.
fn schedstat_path(root: &Path, tid: i32) -> PathBuf {
    root.join(format!("proc/self/task/{tid}/schedstat"))
}

/// Reads and parses thread `tid`'s `schedstat`, naming what is missing.
fn read_thread(root: &Path, name: &str, tid: i32) -> Result<jitterlab_core::load::TaskSchedstat> {
    let path = schedstat_path(root, tid);
    let text = match fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            let task = path.parent().unwrap_or(root);
            if task.is_dir() {
                bail!(
                    "{} is missing: the kernel was built without CONFIG_SCHED_INFO, so a thread's CPU time cannot be read in ns; use a kernel built with CONFIG_SCHED_INFO=y (Debian's are)",
                    path.display()
                );
            }
            bail!(
                "thread {name} (tid {tid}) is not a thread of this process ({} is missing): it has ended, or the id is wrong; measure the load while its threads are alive",
                task.display()
            );
        }
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    parse_task_schedstat(&text).with_context(|| format!("reading {}", path.display()))
}

/// Why a CPU's `/proc/stat` times could not be had.
#[derive(Debug)]
enum NoStat {
    /// The file has no line for the CPU (the message says so).
    CpuMissing(String),
    /// The file could not be read, or its line is malformed.
    Unknown(String),
}

/// CPU `cpu`'s `/proc/stat` times under `root`.
fn read_stat(root: &Path, cpu: usize) -> Result<CpuTimes, NoStat> {
    let path = root.join("proc/stat");
    let text = fs::read_to_string(&path)
        .map_err(|e| NoStat::Unknown(format!("{} could not be read ({e})", path.display())))?;
    parse_stat_cpu(&text, cpu).map_err(|e| match e {
        LoadParseError::StatCpuMissing(_) => NoStat::CpuMissing(e.to_string()),
        _ => NoStat::Unknown(e.to_string()),
    })
}

/// How this kernel keeps `/proc/stat`'s idle and softirq times: its
/// configuration under `root` and its command line.
fn accounting(root: &Path) -> Accounting {
    let config = kernel_config(root).map(|(_, text)| text);
    let cmdline = read_opt(root, "proc/cmdline").unwrap_or_default();
    Accounting::from_config(config.as_deref(), &cmdline)
}

/// The kernel configuration under `root` and where it was read:
/// `proc/config.gz` (decompressed with `flate2`), else
/// `boot/config-RELEASE` (`RELEASE` from `proc/sys/kernel/osrelease`);
/// `None` when neither can be read.
pub fn kernel_config(root: &Path) -> Option<(PathBuf, String)> {
    let gz = root.join("proc/config.gz");
    if let Ok(file) = File::open(&gz) {
        let mut text = String::new();
        if flate2::read::GzDecoder::new(file)
            .read_to_string(&mut text)
            .is_ok()
        {
            return Some((gz, text));
        }
    }
    let release = read_opt(root, "proc/sys/kernel/osrelease")?;
    let boot = root.join(format!("boot/config-{}", release.trim()));
    let text = fs::read_to_string(&boot).ok()?;
    Some((boot, text))
}

#[cfg(test)]
mod tests;
