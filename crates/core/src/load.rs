//! The CPU load of a real-time stack: the kernel's text formats it is read
//! from, and the arithmetic that turns two readings into a [`StackLoad`].
//!
//! [Baumgartner POWERLINK] reports "the load of all POWERLINK threads on a single core":
//! the managing node's threads' CPU time over wall time (the design, "POWERLINK
//! load"). jitterlab reads three kernel files for it, all parsed here so
//! that every figure can be checked by hand against real-format text:
//!
//! - `/proc/<pid>/task/<tid>/schedstat`: `run_ns wait_ns timeslices`
//!   ([`TaskSchedstat`]). `run_ns` is the scheduler's `sum_exec_runtime`,
//!   kept in nanoseconds: the precise figure, and the stack load's source.
//!   It is brought up to date whenever the scheduler looks at the thread
//!   (a tick, a switch, a wake-up), so a thread that is *running* while it
//!   is read may be up to one tick behind (4 ms at HZ=250); a thread that
//!   is blocked — the managing node between cycles, or after it stopped —
//!   reads exactly. The file exists when the kernel has
//!   `CONFIG_SCHED_INFO`.
//! - `/proc/stat`'s `cpuN` line: `user nice system idle iowait irq softirq
//!   steal …` in USER_HZ ticks ([`CpuTimes`]). USER_HZ is 100 on every
//!   architecture, whatever the kernel's own `HZ`: the kernel keeps these
//!   times in nanoseconds and prints them divided down to 10 ms units.
//!   - *idle*: with `CONFIG_NO_HZ_COMMON` (and no `nohz=off`) an online
//!     CPU's idle time is measured from the moment it goes idle to the
//!     moment an interrupt or a task wakes it (nanoseconds), so wall time
//!     minus idle + iowait is the time the CPU was busy — tasks, interrupts
//!     and softirqs, including the receive work done on the way out of an
//!     interrupt that woke an idle CPU. Printed in 10 ms units, a reading is
//!     good to 10 ms, so a busy figure over `D` seconds is good to about
//!     `2 × 10 ms / D` (0.2 percentage points over 10 s). Without NO_HZ,
//!     idle is tick-sampled (each tick charges a whole `1/HZ` to what it
//!     interrupted).
//!   - *softirq*: tick-sampled unless `CONFIG_IRQ_TIME_ACCOUNTING`: a tick
//!     that lands in softirq context charges the whole tick to softirq, and
//!     a NO_HZ CPU that is idle has no tick, so softirq work done between
//!     idle periods is mostly missed. With `CONFIG_IRQ_TIME_ACCOUNTING` (and
//!     no `tsc=noirqtime`) it is measured at each softirq's entry and exit.
//!
//!   [`Accounting`] reads which of these the kernel does from its
//!   configuration and command line, and says it in plain words beside
//!   each figure ([`StackLoad::cpu_busy_source`],
//!   [`StackLoad::softirq_source`]).
//! - `/proc/schedstat`'s `cpuN` lines (versions 15 to 17; present only with
//!   `CONFIG_SCHEDSTATS`): field 7 is `rq_cpu_time`, nanoseconds
//!   ([`parse_rq_cpu_time`]). It looks like a precise busy time but is not
//!   used for one, for three reasons: it grows only when a task leaves the
//!   CPU, so a task that keeps the CPU without a switch (one CPU hog alone
//!   on its CPU) adds nothing until it does; it counts tasks only, so the
//!   interrupt and softirq work done while the CPU was idle — the network
//!   receive work this load is about — is left out; and the kernels this
//!   tool targets (this one included) often do not build it. The parse is
//!   kept for diagnosis.
//!
//! Percentages exist only at the edge ([`StackLoad::stack_percent`] and its
//! siblings): every stored figure is integer nanoseconds (design rule 1).
//!
//! The design rules and documents cited here are in `docs/design.md`.

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Ticks per second of `/proc/stat`'s CPU times (USER_HZ): 100 on every
/// architecture, whatever the kernel's internal `HZ`.
pub const USER_HZ: u64 = 100;
/// Nanoseconds in one `/proc/stat` tick (1 s / [`USER_HZ`]).
pub const NS_PER_USER_TICK: u64 = 1_000_000_000 / USER_HZ;

/// What is wrong with a kernel text this module parses.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LoadParseError {
    /// A task's `schedstat` is not three unsigned numbers.
    #[error(
        "a task's schedstat must be three unsigned numbers `run_ns wait_ns timeslices`, not {0:?}"
    )]
    Schedstat(String),
    /// `/proc/stat` has no line for the CPU.
    #[error(
        "/proc/stat has no cpu{0} line: CPU {0} is offline or does not exist; name an online CPU"
    )]
    StatCpuMissing(usize),
    /// A `/proc/stat` CPU line is too short or not numeric.
    #[error("/proc/stat's cpu{cpu} line must hold at least 8 unsigned numbers (user nice system idle iowait irq softirq steal), not {line:?}")]
    StatCpuLine {
        /// The CPU whose line it is.
        cpu: usize,
        /// The line as read.
        line: String,
    },
    /// `/proc/schedstat` does not start with a version this module reads.
    #[error("/proc/schedstat has version {0}; jitterlab reads versions 15 to 17")]
    SchedstatVersion(String),
    /// `/proc/schedstat` has no line for the CPU.
    #[error("/proc/schedstat has no cpu{0} line: CPU {0} is offline or does not exist")]
    RqCpuMissing(usize),
    /// A `/proc/schedstat` CPU line is too short or not numeric.
    #[error("/proc/schedstat's cpu{cpu} line must hold at least 9 unsigned numbers (field 7 is rq_cpu_time), not {line:?}")]
    RqCpuLine {
        /// The CPU whose line it is.
        cpu: usize,
        /// The line as read.
        line: String,
    },
}

/// One reading of a thread's `/proc/<pid>/task/<tid>/schedstat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskSchedstat {
    /// Time on a CPU, ns (`sum_exec_runtime`).
    pub run_ns: u64,
    /// Time spent runnable, waiting on a run queue, ns (`run_delay`).
    pub wait_ns: u64,
    /// How many times it was given a CPU (`pcount`).
    pub timeslices: u64,
}

/// Parses a task's `schedstat` text (`"316395998 93890572 1060\n"`).
pub fn parse_task_schedstat(text: &str) -> Result<TaskSchedstat, LoadParseError> {
    let bad = || LoadParseError::Schedstat(text.trim_end().to_string());
    let mut it = text.split_ascii_whitespace().map(str::parse::<u64>);
    let mut next = || it.next().and_then(Result::ok).ok_or_else(bad);
    let stat = TaskSchedstat {
        run_ns: next()?,
        wait_ns: next()?,
        timeslices: next()?,
    };
    if it.next().is_some() {
        return Err(bad());
    }
    Ok(stat)
}

/// One CPU's times from its `/proc/stat` line, in USER_HZ ticks
/// ([`NS_PER_USER_TICK`] ns each).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuTimes {
    /// Time in user mode.
    pub user: u64,
    /// Time in user mode at a positive nice value.
    pub nice: u64,
    /// Time in the kernel on behalf of tasks.
    pub system: u64,
    /// Time idle (NO_HZ: measured; else tick-sampled).
    pub idle: u64,
    /// Time idle with a task of this CPU waiting for I/O.
    pub iowait: u64,
    /// Time in hard interrupts.
    pub irq: u64,
    /// Time in softirqs.
    pub softirq: u64,
    /// Time the hypervisor ran something else while this CPU had work.
    pub steal: u64,
}

impl CpuTimes {
    /// Idle and iowait together: the time the CPU had nothing to run.
    pub fn idle_total(&self) -> u64 {
        self.idle.saturating_add(self.iowait)
    }
}

/// Finds CPU `cpu`'s line in the whole text of `/proc/stat` and parses it.
/// Lines after `steal` (guest, guest_nice) are ignored; every kernel since
/// 2.6.11 prints at least the eight read here.
pub fn parse_stat_cpu(text: &str, cpu: usize) -> Result<CpuTimes, LoadParseError> {
    let line = cpu_line(text, cpu).ok_or(LoadParseError::StatCpuMissing(cpu))?;
    let bad = || LoadParseError::StatCpuLine {
        cpu,
        line: line.to_string(),
    };
    let mut f = [0u64; 8];
    let mut fields = line.split_ascii_whitespace().skip(1);
    for slot in &mut f {
        *slot = fields.next().and_then(|t| t.parse().ok()).ok_or_else(bad)?;
    }
    let [user, nice, system, idle, iowait, irq, softirq, steal] = f;
    Ok(CpuTimes {
        user,
        nice,
        system,
        idle,
        iowait,
        irq,
        softirq,
        steal,
    })
}

/// CPU `cpu`'s run-queue time from the whole text of `/proc/schedstat`
/// (versions 15 to 17): field 7 of its `cpuN` line, `rq_cpu_time`, ns —
/// the time tasks other than the idle task spent on the CPU, counted when
/// each left it. See the module documentation for why the load does not
/// use it.
pub fn parse_rq_cpu_time(text: &str, cpu: usize) -> Result<u64, LoadParseError> {
    let version = text
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("version "))
        .map(str::trim);
    match version.map(str::parse::<u32>) {
        Some(Ok(15..=17)) => {}
        _ => {
            let shown = version.unwrap_or("(no version line)");
            return Err(LoadParseError::SchedstatVersion(shown.to_string()));
        }
    }
    let line = cpu_line(text, cpu).ok_or(LoadParseError::RqCpuMissing(cpu))?;
    let numbers: Vec<Option<u64>> = line
        .split_ascii_whitespace()
        .skip(1)
        .map(|t| t.parse().ok())
        .collect();
    match numbers.get(6) {
        Some(Some(ns)) if numbers.len() >= 9 && numbers.iter().all(Option::is_some) => Ok(*ns),
        _ => Err(LoadParseError::RqCpuLine {
            cpu,
            line: line.to_string(),
        }),
    }
}

/// The line of `text` whose first word is `cpu<cpu>` exactly.
fn cpu_line(text: &str, cpu: usize) -> Option<&str> {
    let name = format!("cpu{cpu}");
    text.lines()
        .find(|l| l.split_ascii_whitespace().next() == Some(name.as_str()))
}

/// How the running kernel keeps `/proc/stat`'s idle and softirq times, as
/// its configuration (`/proc/config.gz` or `/boot/config-RELEASE`) and its
/// command line say. `None` in a field: not known (no configuration found).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Accounting {
    /// The kernel's tick rate (`CONFIG_HZ`).
    pub hz: Option<u64>,
    /// Idle time measured by NO_HZ idle accounting (`CONFIG_NO_HZ_COMMON`
    /// and no `nohz=off` on the command line) rather than tick-sampled.
    pub nohz_idle: Option<bool>,
    /// What turned NO_HZ idle accounting off, when it is off.
    pub nohz_off_by: Option<&'static str>,
    /// Softirq time measured at entry and exit
    /// (`CONFIG_IRQ_TIME_ACCOUNTING` and no `tsc=noirqtime`) rather than
    /// tick-sampled.
    pub irq_time: Option<bool>,
    /// What turned interrupt time accounting off, when it is off.
    pub irq_time_off_by: Option<&'static str>,
}

/// How the figures' precision is limited by `/proc/stat`'s printing.
const PRINTED: &str = "printed in USER_HZ=100 units (10 ms per reading)";

impl Accounting {
    /// What `config` (the configuration's text, `None` when none was found)
    /// and `cmdline` (`/proc/cmdline`) say.
    pub fn from_config(config: Option<&str>, cmdline: &str) -> Accounting {
        let Some(config) = config else {
            return Accounting::default();
        };
        let param = |p: &str| cmdline.split_ascii_whitespace().any(|w| w == p);
        let hz = config_value(config, "CONFIG_HZ").and_then(|v| v.parse().ok());
        let (nohz_idle, nohz_off_by) = if !config_on(config, "CONFIG_NO_HZ_COMMON") {
            (false, Some("a periodic tick: no CONFIG_NO_HZ_COMMON"))
        } else if param("nohz=off") {
            (false, Some("nohz=off"))
        } else {
            (true, None)
        };
        let (irq_time, irq_time_off_by) = if !config_on(config, "CONFIG_IRQ_TIME_ACCOUNTING") {
            (false, Some("no CONFIG_IRQ_TIME_ACCOUNTING"))
        } else if param("tsc=noirqtime") {
            (false, Some("tsc=noirqtime"))
        } else {
            (true, None)
        };
        Accounting {
            hz,
            nohz_idle: Some(nohz_idle),
            nohz_off_by,
            irq_time: Some(irq_time),
            irq_time_off_by,
        }
    }

    /// `HZ=250`, or `HZ unknown`.
    fn hz_text(&self) -> String {
        match self.hz {
            Some(hz) => format!("HZ={hz}"),
            None => "HZ unknown".into(),
        }
    }

    /// How the busy time was read and its resolution, said plainly.
    pub fn busy_source(&self) -> String {
        let idle = match (self.nohz_idle, self.nohz_off_by) {
            (Some(true), _) => "idle measured in ns by NO_HZ idle accounting".to_string(),
            (Some(false), by) => format!(
                "idle tick-sampled at {} ({})",
                self.hz_text(),
                by.unwrap_or("no NO_HZ")
            ),
            (None, _) => "idle accounting unknown (no kernel configuration found)".to_string(),
        };
        format!("wall - (idle + iowait) from /proc/stat: {idle}, {PRINTED}")
    }

    /// How the softirq time was read and its resolution, said plainly.
    pub fn softirq_source(&self) -> String {
        let how = match (self.irq_time, self.irq_time_off_by) {
            (Some(true), _) => {
                "measured at each softirq's entry and exit (CONFIG_IRQ_TIME_ACCOUNTING)".to_string()
            }
            (Some(false), by) => format!(
                "tick-sampled at {} ({})",
                self.hz_text(),
                by.unwrap_or("no CONFIG_IRQ_TIME_ACCOUNTING")
            ),
            (None, _) => "unknown accounting (no kernel configuration found)".to_string(),
        };
        format!("{how}, {PRINTED}")
    }
}

/// The value of `CONFIG_X=value` in a kernel configuration; `None` when the
/// option is not set.
pub fn config_value<'a>(config: &'a str, option: &str) -> Option<&'a str> {
    config.lines().find_map(|l| {
        let (k, v) = l.trim().split_once('=')?;
        (k == option).then(|| v.trim_matches('"'))
    })
}

/// True when a kernel configuration sets `option` to `y` (or `m`).
pub fn config_on(config: &str, option: &str) -> bool {
    matches!(config_value(config, option), Some("y" | "m"))
}

/// One thread's share of a [`StackLoad`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadLoad {
    /// What the thread is (`mn`, `mn-rx` …).
    pub name: String,
    /// Its kernel thread id.
    pub tid: i32,
    /// CPU time it used over the measurement, ns.
    pub cpu_ns: u64,
}

/// The CPU load of a stack over one measurement ([Baumgartner POWERLINK] Tables 2–3):
/// its threads' CPU time over wall time, and beside it how busy the stack's
/// CPU was and how much of that the softirq accounting saw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StackLoad {
    /// Wall time between the two readings, ns.
    pub wall_ns: u64,
    /// The CPU the stack (the managing node) runs on.
    pub cpu: usize,
    /// Each thread's CPU time.
    pub threads: Vec<ThreadLoad>,
    /// The sum of the threads' `cpu_ns`.
    pub stack_ns: u64,
    /// The stack's CPU's busy time, `wall - (idle + iowait)` from
    /// `/proc/stat`; `None` when `/proc/stat` could not be read.
    pub cpu_busy_ns: Option<u64>,
    /// How `cpu_busy_ns` was read and its resolution, said plainly.
    pub cpu_busy_source: String,
    /// The stack's CPU's softirq time from `/proc/stat`; `None` when it
    /// could not be read.
    pub softirq_ns: Option<u64>,
    /// How `softirq_ns` was read and its resolution, said plainly.
    pub softirq_source: String,
    /// The kernel's tick rate, when its configuration says.
    pub hz: Option<u64>,
}

/// The threads' CPU time over `wall_ns` as a percentage; 0 when `wall_ns`
/// is 0.
fn percent(ns: u64, wall_ns: u64) -> f64 {
    if wall_ns == 0 {
        return 0.0;
    }
    ns as f64 * 100.0 / wall_ns as f64
}

impl StackLoad {
    /// Builds the load from the wall time, the threads' CPU times and the
    /// CPU's `/proc/stat` times at both ends — or why they could not be
    /// read, which then leaves the busy and softirq figures unknown and
    /// their sources saying why.
    pub fn compute(
        wall_ns: u64,
        cpu: usize,
        threads: Vec<ThreadLoad>,
        stat: Result<(CpuTimes, CpuTimes), String>,
        accounting: &Accounting,
    ) -> StackLoad {
        let stack_ns = threads.iter().map(|t| t.cpu_ns).sum();
        let ticks_ns = |t: u64| t.saturating_mul(NS_PER_USER_TICK);
        let (cpu_busy_ns, softirq_ns, cpu_busy_source, softirq_source) = match stat {
            Ok((before, after)) => {
                let idle = ticks_ns(after.idle_total().saturating_sub(before.idle_total()));
                let softirq = ticks_ns(after.softirq.saturating_sub(before.softirq));
                (
                    Some(wall_ns.saturating_sub(idle)),
                    Some(softirq),
                    accounting.busy_source(),
                    accounting.softirq_source(),
                )
            }
            Err(why) => (
                None,
                None,
                format!("unknown: {why}"),
                format!("unknown: {why}"),
            ),
        };
        StackLoad {
            wall_ns,
            cpu,
            threads,
            stack_ns,
            cpu_busy_ns,
            cpu_busy_source,
            softirq_ns,
            softirq_source,
            hz: accounting.hz,
        }
    }

    /// The stack's load: its threads' CPU time over wall time, %.
    pub fn stack_percent(&self) -> f64 {
        percent(self.stack_ns, self.wall_ns)
    }

    /// The stack's CPU's busy time over wall time, %.
    pub fn busy_percent(&self) -> Option<f64> {
        self.cpu_busy_ns.map(|ns| percent(ns, self.wall_ns))
    }

    /// The stack's CPU's softirq time over wall time, %.
    pub fn softirq_percent(&self) -> Option<f64> {
        self.softirq_ns.map(|ns| percent(ns, self.wall_ns))
    }
}

#[cfg(test)]
mod tests;
