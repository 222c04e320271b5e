//! `jitterlab check`: is this machine ready to measure real-time latency?
//!
//! A latency figure is only as good as the machine that produced it: a probe
//! on a voluntary-preemption kernel, sharing its CPU with other tasks, the
//! timer tick, migrated timers, a sibling hyper-thread and a CPU that changes
//! its frequency measures the set-up more than the software. `check` reads
//! the settings that decide this, before any run, and prints one *finding*
//! per setting: what was found and, when it is not the best set-up for
//! measuring, the concrete command or kernel parameter that changes it
//! (DESIGN rule 8). It changes nothing on the machine.
//!
//! Every finding has an `id` (kebab-case, stable for scripts), a
//! [`Severity`], a one-line `summary` and a `fix` (empty when the finding is
//! `ok`, or when there is nothing to do). Severities mean:
//!
//! - `ok`: the setting is the one for measuring;
//! - `info`: worth knowing, or unknown, but the figures stay meaningful;
//! - `warn`: the figures will show this machine's set-up, not its best case;
//! - `fail`: `jitterlab` cannot measure here at all (only an unreadable
//!   online CPU list, without which no probe can be placed).
//!
//! The exit status is 1 when a `fail` finding exists, 0 otherwise, so a
//! warning never breaks a script that only wants to know whether a run is
//! possible.
//!
//! Every path is read under `--sysroot` (DESIGN rule 5), so each finding is
//! tested against the fake trees of `tests/fixtures/`; the summaries and
//! fixes name the paths as they are on a real system (`/sys/...`). A missing
//! or unreadable file is a finding ("unknown ..."), never an error. The
//! facts not read under the root are the privilege of the process itself
//! (its effective uid and resource limits) and its `PATH` (whose
//! directories are then looked up under the root), which [`findings_for`]
//! takes as arguments so that it stays a pure function of the tree.
//!
//! **Probe CPUs.** Some findings are about the CPUs the probe will run on
//! (`--cpus`; by default the last online CPU, as `jitterlab run` chooses):
//!
//! - `smt-siblings`: an online hyper-thread sibling
//!   (`cpuN/topology/thread_siblings_list`) that is not a probe CPU itself
//!   shares the probe's core, caches and pipeline;
//! - `c-states`: the idle states of `cpuN/cpuidle/stateK/` (`name`, exit
//!   `latency` in µs, `disable`); a deepest enabled exit latency above
//!   10 µs is a warning, although a run keeps the CPUs out of such states by
//!   holding `/dev/cpu_dma_latency` at 0 — the warning is for the user's own
//!   software, which does not;
//! - `irqs-on-probe-cpus`: every IRQ whose `effective_affinity_list` (else
//!   `smp_affinity_list`) includes a probe CPU and that has a handler (a
//!   line in `/proc/interrupts`, parsed by [`crate::system::counters`]),
//!   with its handler's name and the interrupts it delivered there since
//!   boot, most first.
//!
//! `turbo` reads `intel_pstate/no_turbo` and `cpufreq/boost`;
//! `neighbour-tools` looks for the programs the neighbours and traces run
//! (stress-ng, hackbench, ip, rtla, perf) and names the Debian package of
//! each missing one; `irqbalance` says that a configuration with `irq_cpus`
//! pauses it for the cell ([`crate::system::settings::irqbalance`]).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write as _};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use jitterlab_core::result::HostSnapshot;
use jitterlab_core::units::CpuList;
use serde::Serialize;

use crate::cli::CheckArgs;
use crate::error::bad;
use crate::system::counters::interrupt_lines;
use crate::system::host::{self, read_opt};
use crate::system::settings::irqbalance;
use crate::system::settings::resctrl;
use crate::system::trace::{find_tracefs, TracefsStatus};

/// Version of the `--json` output.
pub const SCHEMA_VERSION: u32 = 1;

const ONLINE: &str = "sys/devices/system/cpu/online";
const ISOLATED: &str = "sys/devices/system/cpu/isolated";
const NOHZ_FULL: &str = "sys/devices/system/cpu/nohz_full";
const CLOCKSOURCE: &str = "sys/devices/system/clocksource/clocksource0/current_clocksource";
const RT_RUNTIME: &str = "proc/sys/kernel/sched_rt_runtime_us";
const TIMER_MIGRATION: &str = "proc/sys/kernel/timer_migration";
const SMT_ACTIVE: &str = "sys/devices/system/cpu/smt/active";
const CPUINFO: &str = "proc/cpuinfo";
const RESCTRL_INFO: &str = "sys/fs/resctrl/info";
const CPU_DIR: &str = "sys/devices/system/cpu";
const NO_TURBO: &str = "sys/devices/system/cpu/intel_pstate/no_turbo";
const BOOST: &str = "sys/devices/system/cpu/cpufreq/boost";
const CPUIDLE_DRIVER: &str = "sys/devices/system/cpu/cpuidle/current_driver";
const IRQ_DIR: &str = "proc/irq";
/// A C-state exit latency above this (µs) is a warning.
const C_STATE_LIMIT_US: u64 = 10;
/// How many IRQs the `irqs-on-probe-cpus` summary names.
const IRQS_SHOWN: usize = 10;
/// `PATH` when the environment has none (the usual root `PATH`).
const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/// The programs neighbours and traces run, with their Debian packages.
const TOOLS: [(&str, &str); 5] = [
    ("stress-ng", "stress-ng"),
    ("hackbench", "rt-tests"),
    ("ip", "iproute2"),
    ("rtla", "rtla"),
    ("perf", "linux-perf"),
];

/// How much a finding matters for measuring (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The setting is the one for measuring.
    Ok,
    /// Worth knowing, or unknown; the figures stay meaningful.
    Info,
    /// The figures will show this set-up rather than the machine's best.
    Warn,
    /// Nothing can be measured here.
    Fail,
}

impl Severity {
    /// The word printed and serialized.
    pub fn name(self) -> &'static str {
        match self {
            Severity::Ok => "ok",
            Severity::Info => "info",
            Severity::Warn => "warn",
            Severity::Fail => "fail",
        }
    }
}

/// One result of the audit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Stable kebab-case name, e.g. `isolated-cpus`.
    pub id: &'static str,
    /// How much it matters.
    pub severity: Severity,
    /// One line: what was found.
    pub summary: String,
    /// The command or kernel parameter that changes it; empty for `ok`.
    pub fix: String,
}

impl Finding {
    fn new(id: &'static str, severity: Severity, summary: impl Into<String>, fix: &str) -> Self {
        Finding {
            id,
            severity,
            summary: summary.into(),
            fix: fix.to_string(),
        }
    }

    fn ok(id: &'static str, summary: impl Into<String>) -> Self {
        Finding::new(id, Severity::Ok, summary, "")
    }
}

/// One resource limit of the process (its soft value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// `RLIM_INFINITY`.
    Unlimited,
    /// A finite value.
    Value(u64),
    /// `getrlimit` failed.
    Unknown,
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Limit::Unlimited => f.write_str("unlimited"),
            Limit::Value(v) => write!(f, "{v}"),
            Limit::Unknown => f.write_str("unknown"),
        }
    }
}

/// The resource limits that let an unprivileged user run real-time probes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// `RLIMIT_RTPRIO`: the highest real-time priority allowed.
    pub rtprio: Limit,
    /// `RLIMIT_MEMLOCK`: bytes that may be locked (`mlockall`).
    pub memlock: Limit,
}

impl Limits {
    /// The soft limits of this process.
    pub fn current() -> Limits {
        let get = |r| match jitterlab_sys::rlimit(r) {
            Ok((soft, _)) => soft.map_or(Limit::Unlimited, Limit::Value),
            Err(_) => Limit::Unknown,
        };
        Limits {
            rtprio: get(jitterlab_sys::Resource::RtPrio),
            memlock: get(jitterlab_sys::Resource::MemLock),
        }
    }
}

/// `jitterlab check`: prints the findings (text, or JSON with `--json`);
/// exit status 1 when one of them is `fail`. `--cpus` naming a CPU that is
/// not online is bad input.
pub fn run(root: &Path, args: &CheckArgs) -> Result<ExitCode> {
    let probe = probe_cpus(root, args.cpus.as_ref())?;
    let found = findings_for(
        root,
        probe.as_ref(),
        &search_path(),
        jitterlab_sys::effective_uid(),
        Limits::current(),
    );
    let host = host::snapshot(root);
    if args.json {
        crate::output::outln!("{}", render_json(&host, &found)?)?;
    } else {
        crate::output::out!("{}", render_text(&found))?;
    }
    Ok(if found.iter().any(|f| f.severity == Severity::Fail) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The probe CPUs of the audit: `given` (every one must be online, when the
/// online CPUs are known), else the last online CPU; `None` when neither is
/// known.
fn probe_cpus(root: &Path, given: Option<&CpuList>) -> Result<Option<CpuList>> {
    let online = host::online_cpus(root).ok();
    let Some(given) = given else {
        return Ok(online
            .and_then(|o| o.iter().last())
            .map(|c| [c].into_iter().collect()));
    };
    if let Some(online) = online {
        let offline: CpuList = given.iter().filter(|c| !online.contains(*c)).collect();
        if !offline.is_empty() {
            let what = if offline.len() == 1 {
                format!("CPU {offline} is")
            } else {
                format!("CPUs {offline} are")
            };
            return Err(bad(format!(
                "--cpus {given}: {what} not online (online CPUs: {online}); name the probe CPUs among them"
            )));
        }
    }
    Ok(Some(given.clone()))
}

/// This process's `PATH`, or the usual one when it has none.
fn search_path() -> String {
    std::env::var("PATH")
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| DEFAULT_PATH.to_string())
}

/// Every finding for the tree under `root`, as `run` without `--cpus` finds
/// them (probe CPU: the last online one), for a process with effective user
/// id `uid`, resource limits `limits` and the usual root `PATH` (not this
/// process's, so that a fixture's findings do not depend on it).
#[cfg(test)]
pub fn findings(root: &Path, uid: u32, limits: Limits) -> Vec<Finding> {
    let probe = probe_cpus(root, None).ok().flatten();
    findings_for(root, probe.as_ref(), DEFAULT_PATH, uid, limits)
}

/// Every finding for the tree under `root`, about the probe CPUs `probe`
/// (`None`: unknown), for a process with effective user id `uid`, resource
/// limits `limits` and the program search path `path` (`PATH`'s format; its
/// directories are looked up under `root`).
pub fn findings_for(
    root: &Path,
    probe: Option<&CpuList>,
    path: &str,
    uid: u32,
    limits: Limits,
) -> Vec<Finding> {
    let host = &host::snapshot(root);
    let online = host::online_cpus(root).ok();
    let mut out = Vec::new();
    if online.is_none() {
        out.push(Finding::new(
            "online-cpus",
            Severity::Fail,
            format!("cannot read the online CPUs (/{ONLINE})"),
            "mount sysfs (mount -t sysfs sysfs /sys), or give --sysroot the root of a Linux system",
        ));
    }
    out.extend([
        realtime_kernel(host),
        isolated_cpus(root),
        nohz_full(root),
        clocksource(host),
        rt_throttling(host),
        timer_migration(root),
        cpufreq_governor(root, online.as_ref()),
        turbo(root),
        c_states(root, probe),
        smt(root),
        smt_siblings(root, online.as_ref(), probe),
        cache_allocation(root),
        privileges(uid, limits),
        irqs_on_probe_cpus(root, online.as_ref(), probe),
        irqbalance(root),
        neighbour_tools(root, path),
        tracefs(root),
    ]);
    out
}

fn realtime_kernel(host: &HostSnapshot) -> Finding {
    const ID: &str = "realtime-kernel";
    if host.realtime_kernel {
        Finding::ok(
            ID,
            format!("PREEMPT_RT kernel (preemption: {})", host.preemption),
        )
    } else {
        Finding::new(
            ID,
            Severity::Warn,
            format!("not a PREEMPT_RT kernel (preemption: {})", host.preemption),
            "install a PREEMPT_RT kernel (Debian: linux-image-rt-amd64) and boot it",
        )
    }
}

fn isolated_cpus(root: &Path) -> Finding {
    const ID: &str = "isolated-cpus";
    const FIX: &str =
        "boot with isolcpus=<cpus> nohz_full=<cpus> rcu_nocbs=<cpus> for the probe CPUs";
    match read_opt(root, ISOLATED) {
        Some(cpus) if !cpus.trim().is_empty() => {
            Finding::ok(ID, format!("isolated CPUs: {}", cpus.trim()))
        }
        Some(_) => Finding::new(
            ID,
            Severity::Warn,
            "no isolated CPUs: other tasks share the probe CPUs",
            FIX,
        ),
        None => Finding::new(
            ID,
            Severity::Warn,
            format!("unknown isolated CPUs: cannot read /{ISOLATED}"),
            FIX,
        ),
    }
}

fn nohz_full(root: &Path) -> Finding {
    const ID: &str = "nohz-full";
    match read_opt(root, NOHZ_FULL) {
        // Kernels before 5.x print "(null)" when nohz_full= was not given.
        Some(cpus) if !cpus.trim().is_empty() && cpus.trim() != "(null)" => {
            Finding::ok(ID, format!("tickless (nohz_full) CPUs: {}", cpus.trim()))
        }
        Some(_) => Finding::new(
            ID,
            Severity::Info,
            "no tickless (nohz_full) CPUs: the timer tick interrupts the probe CPUs",
            "boot with nohz_full=<cpus> for the probe CPUs",
        ),
        None => Finding::new(
            ID,
            Severity::Info,
            format!("unknown tickless CPUs: no /{NOHZ_FULL} (kernel built without CONFIG_NO_HZ_FULL)"),
            "boot a kernel built with CONFIG_NO_HZ_FULL=y, with nohz_full=<cpus> for the probe CPUs",
        ),
    }
}

fn clocksource(host: &HostSnapshot) -> Finding {
    const ID: &str = "clocksource";
    const FIX: &str =
        "clocksource=tsc tsc=reliable on the kernel command line, if the TSC is stable";
    match host.clocksource.trim() {
        "tsc" => Finding::ok(ID, "clocksource is tsc"),
        "" => Finding::new(
            ID,
            Severity::Warn,
            format!("unknown clocksource: cannot read /{CLOCKSOURCE}"),
            FIX,
        ),
        other => Finding::new(
            ID,
            Severity::Warn,
            format!("clocksource is {other}, not tsc: reading the clock costs more"),
            FIX,
        ),
    }
}

fn rt_throttling(host: &HostSnapshot) -> Finding {
    const ID: &str = "rt-throttling";
    const FIX: &str = "sysctl -w kernel.sched_rt_runtime_us=-1 (only while measuring)";
    match (host.sched_rt_runtime_us, host.sched_rt_period_us) {
        (Some(-1), _) => Finding::ok(ID, "real-time throttling is off"),
        (Some(runtime), Some(period)) => Finding::new(
            ID,
            Severity::Info,
            format!("real-time tasks may use {runtime} of every {period} us"),
            FIX,
        ),
        (Some(runtime), None) => Finding::new(
            ID,
            Severity::Info,
            format!("real-time tasks may use {runtime} us of every period (period unknown)"),
            FIX,
        ),
        (None, _) => Finding::new(
            ID,
            Severity::Info,
            format!("unknown real-time throttling: cannot read /{RT_RUNTIME}"),
            FIX,
        ),
    }
}

/// An info finding for a flag file that is missing or holds an unexpected
/// value (`value` is what it read, if anything).
fn unknown(id: &'static str, what: &str, path: &str, value: Option<&str>) -> Finding {
    let summary = match value {
        Some(v) => format!("unknown {what}: /{path} reads {v:?}"),
        None => format!("unknown {what}: cannot read /{path}"),
    };
    Finding::new(id, Severity::Info, summary, "")
}

fn timer_migration(root: &Path) -> Finding {
    const ID: &str = "timer-migration";
    match read_opt(root, TIMER_MIGRATION).as_deref().map(str::trim) {
        Some("0") => Finding::ok(ID, "timer migration is off"),
        Some("1") => Finding::new(
            ID,
            Severity::Info,
            "timer migration is on: timers of idle CPUs may move onto the probe CPUs",
            "sysctl -w kernel.timer_migration=0",
        ),
        other => unknown(ID, "timer migration", TIMER_MIGRATION, other),
    }
}

fn cpufreq_governor(root: &Path, online: Option<&CpuList>) -> Finding {
    const ID: &str = "cpufreq-governor";
    let Some(online) = online else {
        return Finding::new(
            ID,
            Severity::Info,
            "unknown cpufreq governors: the online CPUs are unknown",
            "",
        );
    };
    let mut any_cpufreq = false;
    let mut by_governor: BTreeMap<String, BTreeSet<usize>> = BTreeMap::new();
    for cpu in online.iter() {
        let dir = format!("sys/devices/system/cpu/cpu{cpu}/cpufreq");
        any_cpufreq |= root.join(&dir).is_dir();
        let governor = read_opt(root, &format!("{dir}/scaling_governor"))
            .map(|g| g.trim().to_string())
            .filter(|g| !g.is_empty())
            .unwrap_or_else(|| "unknown".into());
        by_governor.entry(governor).or_default().insert(cpu);
    }
    if !any_cpufreq {
        return Finding::new(
            ID,
            Severity::Info,
            "no cpufreq (a VM, or frequency fixed by firmware)",
            "",
        );
    }
    by_governor.remove("performance");
    if by_governor.is_empty() {
        return Finding::ok(ID, "every online CPU uses the performance governor");
    }
    let others: Vec<String> = by_governor
        .iter()
        .map(|(g, cpus)| format!("{g} on CPUs {}", CpuList(cpus.clone())))
        .collect();
    let cpus: BTreeSet<usize> = by_governor.into_values().flatten().collect();
    let numbers: Vec<String> = cpus.iter().map(usize::to_string).collect();
    Finding::new(
        ID,
        Severity::Warn,
        format!("not every CPU uses the performance governor: {}", others.join(", ")),
        &format!(
            "for N in {}; do echo performance > /sys/devices/system/cpu/cpu$N/cpufreq/scaling_governor; done",
            numbers.join(" ")
        ),
    )
}

fn smt(root: &Path) -> Finding {
    const ID: &str = "smt";
    match read_opt(root, SMT_ACTIVE).as_deref().map(str::trim) {
        Some("0") => Finding::ok(ID, "SMT is off"),
        Some("1") => Finding::new(
            ID,
            Severity::Warn,
            "SMT is on: a sibling thread shares the probe CPU's core",
            "nosmt on the kernel command line, or keep siblings of probe CPUs idle",
        ),
        other => unknown(ID, "SMT state", SMT_ACTIVE, other),
    }
}

/// What the machine offers for cache allocation
/// ([`crate::system::settings::resctrl::capabilities`]): the CPU flags,
/// and once resctrl is mounted its levels, ways, CLOSIDs, CDP and MBA.
fn cache_allocation(root: &Path) -> Finding {
    const ID: &str = "cache-allocation";
    if read_opt(root, CPUINFO).is_none() && !root.join(RESCTRL_INFO).is_dir() {
        return Finding::new(
            ID,
            Severity::Info,
            format!("unknown cache allocation: cannot read /{CPUINFO}"),
            "",
        );
    }
    let caps = match resctrl::capabilities(root) {
        Ok(Some(caps)) => caps,
        Ok(None) => {
            return Finding::new(
                ID,
                Severity::Info,
                "no cache allocation (no CAT/RDT in this CPU, or hidden by the hypervisor): cache-partitioned configurations cannot run here",
                "",
            )
        }
        Err(e) => {
            return Finding::new(
                ID,
                Severity::Info,
                format!("unknown cache allocation: {e:#}"),
                "",
            )
        }
    };
    let flags = if caps.flags.is_empty() {
        "no CPU flag".to_string()
    } else {
        caps.flags.join(" ")
    };
    if !caps.mounted {
        Finding::new(
            ID,
            Severity::Info,
            format!("cache allocation ({flags}), but resctrl is not mounted"),
            "mount -t resctrl resctrl /sys/fs/resctrl",
        )
    } else if caps.resources.is_empty() {
        Finding::new(
            ID,
            Severity::Info,
            format!("cache allocation ({flags}), but resctrl at /sys/fs/resctrl offers no allocation resource (monitoring only)"),
            "",
        )
    } else {
        Finding::ok(
            ID,
            format!(
                "cache allocation ({flags}), resctrl mounted at /sys/fs/resctrl: {}",
                caps.summary()
            ),
        )
    }
}

/// The privilege finding for a process with effective uid `uid` and
/// resource limits `limits`.
fn privileges(uid: u32, limits: Limits) -> Finding {
    const ID: &str = "privileges";
    if uid == 0 {
        return Finding::ok(ID, "running as root");
    }
    let memlock = match limits.memlock {
        Limit::Value(bytes) => format!("{bytes} bytes"),
        other => other.to_string(),
    };
    Finding::new(
        ID,
        Severity::Warn,
        format!(
            "not root (uid {uid}): RLIMIT_RTPRIO {}, RLIMIT_MEMLOCK {memlock}",
            limits.rtprio
        ),
        "run as root, or set rtprio 99 and memlock unlimited in /etc/security/limits.conf",
    )
}

fn irqbalance(root: &Path) -> Finding {
    const ID: &str = "irqbalance";
    let unknown = |why: &str| {
        Finding::new(
            ID,
            Severity::Info,
            format!("unknown whether irqbalance runs: {why}"),
            "",
        )
    };
    let found = match irqbalance::find(root) {
        Err(_) => return unknown("cannot list /proc"),
        Ok(f) if f.processes == 0 => return unknown("no processes under /proc"),
        Ok(f) => f,
    };
    if found.pids.is_empty() {
        return Finding::ok(ID, "irqbalance is not running");
    }
    let pids: Vec<String> = found.pids.iter().map(i32::to_string).collect();
    let noun = if pids.len() == 1 { "pid" } else { "pids" };
    Finding::new(
        ID,
        Severity::Warn,
        format!(
            "irqbalance is running ({noun} {}): it moves IRQs back onto probe CPUs; a configuration with irq_cpus pauses it (SIGSTOP) for each cell and resumes it afterwards",
            pids.join(", ")
        ),
        "to stop it for good: systemctl disable --now irqbalance",
    )
}

/// `probe CPU 1` or `probe CPUs 2-3`.
fn probe_words(probe: &CpuList) -> String {
    format!("probe {}", cpu_words(probe))
}

/// `CPU 1` or `CPUs 2-3`.
fn cpu_words(cpus: &CpuList) -> String {
    if cpus.len() == 1 {
        format!("CPU {cpus}")
    } else {
        format!("CPUs {cpus}")
    }
}

/// The info finding for a per-probe-CPU check when the probe CPUs are
/// unknown (no online CPU list and no `--cpus`).
fn probe_unknown(id: &'static str, what: &str) -> Finding {
    Finding::new(
        id,
        Severity::Info,
        format!("unknown {what}: the probe CPUs are unknown"),
        "give them with --cpus",
    )
}

/// `echo VALUE > /sys/devices/system/cpu/cpuN/FILE` for one CPU, a `for`
/// loop for several.
fn per_cpu_command(cpus: &CpuList, value: &str, file: &str) -> String {
    let numbers: Vec<String> = cpus.iter().map(|c| c.to_string()).collect();
    if numbers.len() == 1 {
        format!(
            "echo {value} > /sys/devices/system/cpu/cpu{}/{file}",
            numbers[0]
        )
    } else {
        format!(
            "for N in {}; do echo {value} > /sys/devices/system/cpu/cpu$N/{file}; done",
            numbers.join(" ")
        )
    }
}

fn smt_siblings(root: &Path, online: Option<&CpuList>, probe: Option<&CpuList>) -> Finding {
    const ID: &str = "smt-siblings";
    let (Some(online), Some(probe)) = (online, probe) else {
        return probe_unknown(ID, "SMT siblings");
    };
    let mut shared = Vec::new();
    let mut unreadable = CpuList::default();
    for cpu in probe.iter() {
        let rel = format!("{CPU_DIR}/cpu{cpu}/topology/thread_siblings_list");
        let Some(siblings) = read_opt(root, &rel).and_then(|t| CpuList::parse(&t).ok()) else {
            unreadable = unreadable.iter().chain([cpu]).collect();
            continue;
        };
        let others: CpuList = siblings
            .iter()
            .filter(|s| *s != cpu && online.contains(*s) && !probe.contains(*s))
            .collect();
        if !others.is_empty() {
            shared.push((cpu, others));
        }
    }
    if !shared.is_empty() {
        let parts: Vec<String> = shared
            .iter()
            .map(|(cpu, others)| format!("probe CPU {cpu} with {}", cpu_words(others)))
            .collect();
        let all: CpuList = shared.iter().flat_map(|(_, o)| o.iter()).collect();
        return Finding::new(
            ID,
            Severity::Warn,
            format!(
                "online SMT siblings share a core with the probe: {}; they share its caches and pipeline",
                parts.join(", ")
            ),
            &format!("{} (or boot with nosmt)", per_cpu_command(&all, "0", "online")),
        );
    }
    if !unreadable.is_empty() {
        let file = if unreadable.len() == 1 {
            format!("cpu{unreadable}")
        } else {
            "cpuN".into()
        };
        return Finding::new(
            ID,
            Severity::Info,
            format!(
                "unknown SMT siblings of {}: cannot read /{CPU_DIR}/{file}/topology/thread_siblings_list",
                probe_words(&unreadable)
            ),
            "",
        );
    }
    Finding::ok(
        ID,
        format!(
            "no online SMT sibling shares a core with {}",
            probe_words(probe)
        ),
    )
}

fn turbo(root: &Path) -> Finding {
    const ID: &str = "turbo";
    let no_turbo = read_opt(root, NO_TURBO);
    let boost = read_opt(root, BOOST);
    if no_turbo.is_none() && boost.is_none() {
        return Finding::new(
            ID,
            Severity::Info,
            format!("no turbo control: neither /{NO_TURBO} nor /{BOOST} exists (a VM, or turbo left to the firmware)"),
            "",
        );
    }
    let (mut on, mut off, mut fixes) = (Vec::new(), Vec::new(), Vec::new());
    if let Some(v) = no_turbo.as_deref().map(str::trim) {
        match v {
            "1" => off.push("intel_pstate no_turbo = 1"),
            "0" => {
                on.push("intel_pstate no_turbo = 0");
                fixes.push(format!("echo 1 > /{NO_TURBO}"));
            }
            other => return unknown(ID, "turbo state", NO_TURBO, Some(other)),
        }
    }
    if let Some(v) = boost.as_deref().map(str::trim) {
        match v {
            "0" => off.push("cpufreq boost = 0"),
            "1" => {
                on.push("cpufreq boost = 1");
                fixes.push(format!("echo 0 > /{BOOST}"));
            }
            other => return unknown(ID, "turbo state", BOOST, Some(other)),
        }
    }
    if on.is_empty() {
        return Finding::ok(ID, format!("turbo is off ({})", off.join(", ")));
    }
    Finding::new(
        ID,
        Severity::Info,
        format!(
            "turbo is on ({}): the clock follows load and temperature, so execution times vary",
            on.join(", ")
        ),
        &format!("{} (while measuring)", fixes.join("; ")),
    )
}

/// One idle state of a CPU (`cpuN/cpuidle/stateK/`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct IdleState {
    name: String,
    /// Exit latency, µs; `None` when unreadable.
    latency_us: Option<u64>,
    disabled: bool,
}

/// The idle states of `cpu` in index order; `None` without a `cpuidle`
/// directory (or without states in it).
fn idle_states(root: &Path, cpu: usize) -> Option<Vec<IdleState>> {
    let dir = format!("{CPU_DIR}/cpu{cpu}/cpuidle");
    let mut indexes: Vec<usize> = fs::read_dir(root.join(&dir))
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_prefix("state")?.parse().ok())
        .collect();
    indexes.sort_unstable();
    let states: Vec<IdleState> = indexes
        .into_iter()
        .map(|k| {
            let file = |f: &str| read_opt(root, &format!("{dir}/state{k}/{f}"));
            IdleState {
                name: file("name")
                    .map(|n| n.trim().to_string())
                    .filter(|n| !n.is_empty())
                    .unwrap_or_else(|| format!("state{k}")),
                latency_us: file("latency").and_then(|l| l.trim().parse().ok()),
                disabled: file("disable").as_deref().map(str::trim) == Some("1"),
            }
        })
        .collect();
    (!states.is_empty()).then_some(states)
}

fn c_states(root: &Path, probe: Option<&CpuList>) -> Finding {
    const ID: &str = "c-states";
    let Some(probe) = probe else {
        return probe_unknown(ID, "C-states");
    };
    // Probe CPUs grouped by what their states say, and the deepest enabled
    // exit latency of each group.
    let mut groups: BTreeMap<String, (BTreeSet<usize>, u64)> = BTreeMap::new();
    let mut without = CpuList::default();
    for cpu in probe.iter() {
        let Some(states) = idle_states(root, cpu) else {
            without = without.iter().chain([cpu]).collect();
            continue;
        };
        let text: Vec<String> = states
            .iter()
            .map(|s| {
                let latency = s
                    .latency_us
                    .map_or("? us".to_string(), |l| format!("{l} us"));
                let off = if s.disabled { " disabled" } else { "" };
                format!("{} {latency}{off}", s.name)
            })
            .collect();
        let deepest = states
            .iter()
            .filter(|s| !s.disabled)
            .filter_map(|s| s.latency_us)
            .max()
            .unwrap_or(0);
        groups
            .entry(text.join(", "))
            .or_insert_with(|| (BTreeSet::new(), deepest))
            .0
            .insert(cpu);
    }
    if groups.is_empty() {
        let driver = read_opt(root, CPUIDLE_DRIVER)
            .map(|d| d.trim().to_string())
            .filter(|d| !d.is_empty())
            .unwrap_or_else(|| "unknown".into());
        return Finding::new(
            ID,
            Severity::Info,
            format!(
                "no cpuidle states on {} (cpuidle driver: {driver}): idling is left to the hypervisor or firmware",
                probe_words(probe)
            ),
            "",
        );
    }
    let worst = groups.values().map(|(_, d)| *d).max().unwrap_or(0);
    let worst_cpus: CpuList = groups
        .values()
        .filter(|(_, d)| *d == worst)
        .flat_map(|(c, _)| c.iter().copied())
        .collect();
    let mut parts: Vec<String> = groups
        .iter()
        .map(|(text, (cpus, _))| format!("{}: {text}", cpu_words(&CpuList(cpus.clone()))))
        .collect();
    if !without.is_empty() {
        parts.push(format!("no cpuidle on {}", cpu_words(&without)));
    }
    let states = parts.join("; ");
    if worst <= C_STATE_LIMIT_US {
        return Finding::ok(
            ID,
            format!("deepest enabled C-state exits in {worst} us ({states})"),
        );
    }
    Finding::new(
        ID,
        Severity::Warn,
        format!(
            "deepest enabled C-state exits in {worst} us on {} ({states}); a run holds /dev/cpu_dma_latency at 0 (unless a configuration sets dma_latency = false), which keeps the CPUs out of such states",
            cpu_words(&worst_cpus)
        ),
        "for your own software: hold a configuration with jitterlab apply SPEC (dma_latency = true), or boot with idle=poll or processor.max_cstate=1 (with intel_idle.max_cstate=0 on Intel)",
    )
}

/// The handler name(s) in a `/proc/interrupts` description such as
/// `IO-APIC 4-edge ttyS0`: its last word, or, for a shared IRQ
/// (`... ehci_hcd:usb1, uhci_hcd:usb2`), everything from the last word
/// before the first `, `.
fn irq_name(description: &str) -> &str {
    let head = description.split(", ").next().unwrap_or(description);
    let start = head.rfind(' ').map_or(0, |i| i + 1);
    &description[start..]
}

fn irqs_on_probe_cpus(root: &Path, online: Option<&CpuList>, probe: Option<&CpuList>) -> Finding {
    const ID: &str = "irqs-on-probe-cpus";
    let Some(probe) = probe else {
        return probe_unknown(ID, "IRQs on probe CPUs");
    };
    let Ok(entries) = fs::read_dir(root.join(IRQ_DIR)) else {
        return Finding::new(
            ID,
            Severity::Info,
            format!("unknown IRQ affinity: cannot list /{IRQ_DIR}"),
            "",
        );
    };
    let lines = interrupt_lines(root);
    // (IRQ, handler name, interrupts delivered to the probe CPUs).
    let mut hits: Vec<(u32, String, Option<u64>)> = Vec::new();
    for entry in entries.flatten() {
        let Some(irq) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let list = |file: &str| {
            read_opt(root, &format!("{IRQ_DIR}/{irq}/{file}"))
                .filter(|t| !t.trim().is_empty())
                .and_then(|t| CpuList::parse(&t).ok())
        };
        let Some(affinity) = list("effective_affinity_list").or_else(|| list("smp_affinity_list"))
        else {
            continue;
        };
        if !affinity.iter().any(|c| probe.contains(c)) {
            continue;
        }
        match &lines {
            // No line: no handler, so it delivers nothing.
            Some(lines) => {
                let Some(line) = lines.get(&irq.to_string()) else {
                    continue;
                };
                let count = probe
                    .iter()
                    .map(|c| line.counts.get(&c).copied().unwrap_or(0))
                    .sum();
                hits.push((irq, irq_name(&line.description).to_string(), Some(count)));
            }
            None => hits.push((irq, String::new(), None)),
        }
    }
    if hits.is_empty() {
        return Finding::ok(
            ID,
            format!("no device IRQ is routed to {}", probe_words(probe)),
        );
    }
    hits.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
    let mut items: Vec<String> = hits
        .iter()
        .take(IRQS_SHOWN)
        .map(|(irq, name, count)| match count {
            Some(n) => format!("{irq} {name} ({n})"),
            None => irq.to_string(),
        })
        .collect();
    if hits.len() > IRQS_SHOWN {
        items.push(format!("and {} more", hits.len() - IRQS_SHOWN));
    }
    let noun = if hits.len() == 1 {
        "IRQ is"
    } else {
        "IRQs are"
    };
    let counted = if lines.is_some() {
        " (interrupts taken there since boot)"
    } else {
        " (names and counts unknown: cannot read /proc/interrupts)"
    };
    let others: CpuList = online
        .map(|o| o.iter().filter(|c| !probe.contains(*c)).collect())
        .unwrap_or_default();
    let fix = if others.is_empty() {
        "no other online CPU can take them; a machine with more CPUs can".to_string()
    } else {
        format!(
            "set irq_cpus = \"{others}\" in a configuration of your spec: jitterlab bench and jitterlab apply move them there for the cell (pausing irqbalance meanwhile)"
        )
    };
    Finding::new(
        ID,
        Severity::Warn,
        format!(
            "{} {noun} routed to {}{counted}: {}",
            hits.len(),
            probe_words(probe),
            items.join(", ")
        ),
        &fix,
    )
}

/// True when `rel` under `root` is an executable file.
fn executable(root: &Path, rel: &str) -> bool {
    fs::metadata(root.join(rel)).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn neighbour_tools(root: &Path, path: &str) -> Finding {
    const ID: &str = "neighbour-tools";
    let dirs: Vec<&str> = path
        .split(':')
        .filter_map(|d| d.strip_prefix('/'))
        .collect();
    let (found, missing): (Vec<_>, Vec<_>) = TOOLS.iter().partition(|(tool, _)| {
        dirs.iter()
            .any(|d| executable(root, &format!("{}/{tool}", d.trim_end_matches('/'))))
    });
    let names = |list: &[&(&str, &str)]| -> Vec<String> {
        list.iter().map(|(t, _)| t.to_string()).collect()
    };
    if missing.is_empty() {
        return Finding::ok(
            ID,
            format!(
                "neighbour and tracing tools found: {}",
                names(&found).join(", ")
            ),
        );
    }
    let missing_words: Vec<String> = missing.iter().map(|(t, p)| format!("{t} ({p})")).collect();
    let found_words = if found.is_empty() {
        String::new()
    } else {
        format!("; found: {}", names(&found).join(", "))
    };
    let mut packages: Vec<&str> = missing.iter().map(|(_, p)| *p).collect();
    packages.dedup();
    Finding::new(
        ID,
        Severity::Info,
        format!(
            "missing neighbour and tracing tools: {}{found_words}; scenarios that need them cannot run",
            missing_words.join(", ")
        ),
        &format!("apt install {}", packages.join(" ")),
    )
}

fn tracefs(root: &Path) -> Finding {
    const ID: &str = "tracefs";
    let status = find_tracefs(root);
    let text = status.explain();
    if matches!(status, TracefsStatus::Ready(_)) {
        return Finding::ok(ID, text);
    }
    // explain() is "what was found; what to do": split it into the two.
    let (found, fix) = text.split_once("; ").unwrap_or((&text, ""));
    Finding::new(
        ID,
        Severity::Info,
        format!("{found} (needed only for --break-trace)"),
        fix,
    )
}

/// The text table: severity, id and summary, a `fix:` line under each
/// finding that is not ok, and a closing line of counts.
pub fn render_text(findings: &[Finding]) -> String {
    let width = findings.iter().map(|f| f.id.len()).max().unwrap_or(0);
    let mut out = String::new();
    for f in findings {
        let _ = writeln!(
            out,
            "{:<4}  {:<width$}  {}",
            f.severity.name(),
            f.id,
            f.summary
        );
        if f.severity != Severity::Ok && !f.fix.is_empty() {
            let _ = writeln!(out, "{:indent$}fix: {}", "", f.fix, indent = width + 8);
        }
    }
    let count = |s: Severity| findings.iter().filter(|f| f.severity == s).count();
    let _ = writeln!(
        out,
        "{} ok, {} info, {} warn, {} fail",
        count(Severity::Ok),
        count(Severity::Info),
        count(Severity::Warn),
        count(Severity::Fail)
    );
    out
}

/// The `--json` document: schema version, host snapshot, findings.
pub fn render_json(host: &HostSnapshot, findings: &[Finding]) -> Result<String> {
    #[derive(Serialize)]
    struct Report<'a> {
        schema_version: u32,
        host: &'a HostSnapshot,
        findings: &'a [Finding],
    }
    Ok(serde_json::to_string_pretty(&Report {
        schema_version: SCHEMA_VERSION,
        host,
        findings,
    })?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{copy_fixture, fixture};
    use std::fs::Permissions;

    const ROOT_LIMITS: Limits = Limits {
        rtprio: Limit::Value(0),
        memlock: Limit::Value(8 << 20),
    };

    fn ids(found: &[Finding]) -> Vec<(&'static str, &'static str)> {
        found.iter().map(|f| (f.id, f.severity.name())).collect()
    }

    fn find<'a>(found: &'a [Finding], id: &str) -> &'a Finding {
        found.iter().find(|f| f.id == id).unwrap()
    }

    fn write(root: &Path, rel: &str, text: &str) {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    #[test]
    fn vm_fixture_findings() {
        let found = findings(&fixture("sysroot-vm"), 0, ROOT_LIMITS);
        assert_eq!(
            ids(&found),
            [
                ("realtime-kernel", "warn"),
                ("isolated-cpus", "warn"),
                ("nohz-full", "info"),
                ("clocksource", "ok"),
                ("rt-throttling", "info"),
                ("timer-migration", "info"),
                ("cpufreq-governor", "info"),
                ("turbo", "info"),
                ("c-states", "info"),
                ("smt", "ok"),
                ("smt-siblings", "ok"),
                ("cache-allocation", "info"),
                ("privileges", "ok"),
                ("irqs-on-probe-cpus", "warn"),
                ("irqbalance", "info"),
                ("neighbour-tools", "info"),
                ("tracefs", "info"),
            ]
        );
        assert_eq!(
            find(&found, "realtime-kernel"),
            &Finding::new(
                "realtime-kernel",
                Severity::Warn,
                "not a PREEMPT_RT kernel (preemption: dynamic, model unknown (mount debugfs to read /sys/kernel/debug/sched/preempt))",
                "install a PREEMPT_RT kernel (Debian: linux-image-rt-amd64) and boot it",
            )
        );
        assert_eq!(
            find(&found, "isolated-cpus"),
            &Finding::new(
                "isolated-cpus",
                Severity::Warn,
                "no isolated CPUs: other tasks share the probe CPUs",
                "boot with isolcpus=<cpus> nohz_full=<cpus> rcu_nocbs=<cpus> for the probe CPUs",
            )
        );
        assert_eq!(
            find(&found, "rt-throttling"),
            &Finding::new(
                "rt-throttling",
                Severity::Info,
                "real-time tasks may use 950000 of every 1000000 us",
                "sysctl -w kernel.sched_rt_runtime_us=-1 (only while measuring)",
            )
        );
        assert_eq!(
            find(&found, "timer-migration").fix,
            "sysctl -w kernel.timer_migration=0"
        );
        assert_eq!(
            find(&found, "cpufreq-governor").summary,
            "no cpufreq (a VM, or frequency fixed by firmware)"
        );
        assert_eq!(
            find(&found, "cache-allocation").summary,
            "no cache allocation (no CAT/RDT in this CPU, or hidden by the hypervisor): cache-partitioned configurations cannot run here"
        );
        assert_eq!(
            find(&found, "tracefs"),
            &Finding::new(
                "tracefs",
                Severity::Info,
                "tracefs is missing: there is no /sys/kernel/tracing nor /sys/kernel/debug/tracing (needed only for --break-trace)",
                "boot a kernel built with CONFIG_FTRACE=y (in a container, bind-mount /sys/kernel/tracing)",
            )
        );
        assert_eq!(
            find(&found, "turbo"),
            &Finding::new(
                "turbo",
                Severity::Info,
                "no turbo control: neither /sys/devices/system/cpu/intel_pstate/no_turbo nor /sys/devices/system/cpu/cpufreq/boost exists (a VM, or turbo left to the firmware)",
                "",
            )
        );
        assert_eq!(
            find(&found, "c-states"),
            &Finding::new(
                "c-states",
                Severity::Info,
                "no cpuidle states on probe CPU 1 (cpuidle driver: none): idling is left to the hypervisor or firmware",
                "",
            )
        );
        assert_eq!(
            find(&found, "smt-siblings"),
            &Finding::ok(
                "smt-siblings",
                "no online SMT sibling shares a core with probe CPU 1"
            )
        );
        assert_eq!(
            find(&found, "irqs-on-probe-cpus"),
            &Finding::new(
                "irqs-on-probe-cpus",
                Severity::Warn,
                "8 IRQs are routed to probe CPU 1 (interrupts taken there since boot): 36 virtio1-req.0 (1170256), 38 virtio2-input.0 (2709), 26 ttyS0 (16), 25 ACPI:Ged (1), 35 virtio1-config (1), 29 virtio0-inflate (0), 33 virtio4-config (0), 40 virtio3-config (0)",
                "set irq_cpus = \"0\" in a configuration of your spec: jitterlab bench and jitterlab apply move them there for the cell (pausing irqbalance meanwhile)",
            )
        );
        assert_eq!(
            find(&found, "neighbour-tools"),
            &Finding::new(
                "neighbour-tools",
                Severity::Info,
                "missing neighbour and tracing tools: stress-ng (stress-ng), hackbench (rt-tests), ip (iproute2), rtla (rtla), perf (linux-perf); scenarios that need them cannot run",
                "apt install stress-ng rt-tests iproute2 rtla linux-perf",
            )
        );
    }

    #[test]
    fn rt_fixture_findings() {
        let found = findings(&fixture("sysroot-rt"), 0, ROOT_LIMITS);
        assert_eq!(
            ids(&found),
            [
                ("realtime-kernel", "ok"),
                ("isolated-cpus", "ok"),
                ("nohz-full", "ok"),
                ("clocksource", "ok"),
                ("rt-throttling", "ok"),
                ("timer-migration", "ok"),
                ("cpufreq-governor", "ok"),
                ("turbo", "ok"),
                ("c-states", "ok"),
                ("smt", "ok"),
                ("smt-siblings", "ok"),
                ("cache-allocation", "ok"),
                ("privileges", "ok"),
                ("irqs-on-probe-cpus", "ok"),
                ("irqbalance", "info"),
                ("neighbour-tools", "ok"),
                ("tracefs", "ok"),
            ]
        );
        assert_eq!(
            find(&found, "realtime-kernel").summary,
            "PREEMPT_RT kernel (preemption: rt (/sys/kernel/realtime))"
        );
        assert_eq!(find(&found, "isolated-cpus").summary, "isolated CPUs: 2-7");
        assert_eq!(
            find(&found, "cache-allocation"),
            &Finding::ok(
                "cache-allocation",
                "cache allocation (cat_l3 cdp_l3 rdt_a), resctrl mounted at /sys/fs/resctrl: L3 8 ways (cbm_mask ff); CLOSIDs unknown; CDP off (cdp_l3: mount with -o cdp for it); no MBA"
            )
        );
        assert_eq!(
            find(&found, "turbo"),
            &Finding::ok("turbo", "turbo is off (intel_pstate no_turbo = 1)")
        );
        assert_eq!(
            find(&found, "c-states"),
            &Finding::ok(
                "c-states",
                "deepest enabled C-state exits in 2 us (CPU 7: POLL 0 us, C1 1 us, C1E 2 us, C6 133 us disabled)"
            )
        );
        assert_eq!(
            find(&found, "irqs-on-probe-cpus"),
            &Finding::ok(
                "irqs-on-probe-cpus",
                "no device IRQ is routed to probe CPU 7"
            )
        );
        assert_eq!(
            find(&found, "neighbour-tools"),
            &Finding::ok(
                "neighbour-tools",
                "neighbour and tracing tools found: stress-ng, hackbench, ip, rtla, perf"
            )
        );
        assert!(found
            .iter()
            .all(|f| f.severity != Severity::Ok || f.fix.is_empty()));
    }

    #[test]
    fn missing_online_list_is_the_one_failure() {
        let dir = tempfile::tempdir().unwrap();
        let found = findings(dir.path(), 0, ROOT_LIMITS);
        assert_eq!(found[0].id, "online-cpus");
        assert_eq!(found[0].severity, Severity::Fail);
        assert_eq!(
            found[0].summary,
            "cannot read the online CPUs (/sys/devices/system/cpu/online)"
        );
        assert_eq!(
            found
                .iter()
                .filter(|f| f.severity == Severity::Fail)
                .count(),
            1
        );
        assert_eq!(found.len(), 18);
        assert!(found[1..].iter().all(|f| f.summary.starts_with("unknown")
            || f.id == "realtime-kernel"
            || f.id == "privileges"
            || f.id == "tracefs"
            || f.id == "turbo"
            || f.id == "neighbour-tools"));
        assert_eq!(
            find(&found, "smt-siblings"),
            &Finding::new(
                "smt-siblings",
                Severity::Info,
                "unknown SMT siblings: the probe CPUs are unknown",
                "give them with --cpus",
            )
        );
    }

    #[test]
    fn governors_other_than_performance_are_listed() {
        let dir = copy_fixture("sysroot-rt");
        let gov = |cpu: usize| format!("sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor");
        for cpu in [2, 3, 4] {
            write(dir.path(), &gov(cpu), "powersave\n");
        }
        write(dir.path(), &gov(7), "schedutil\n");
        let f = cpufreq_governor(dir.path(), Some(&CpuList::parse("0-7").unwrap()));
        assert_eq!(
            f,
            Finding::new(
                "cpufreq-governor",
                Severity::Warn,
                "not every CPU uses the performance governor: powersave on CPUs 2-4, schedutil on CPUs 7",
                "for N in 2 3 4 7; do echo performance > /sys/devices/system/cpu/cpu$N/cpufreq/scaling_governor; done",
            )
        );
    }

    #[test]
    fn smt_timer_migration_and_nohz_states() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        assert_eq!(smt(root).severity, Severity::Info);
        write(root, SMT_ACTIVE, "1\n");
        assert_eq!(
            smt(root),
            Finding::new(
                "smt",
                Severity::Warn,
                "SMT is on: a sibling thread shares the probe CPU's core",
                "nosmt on the kernel command line, or keep siblings of probe CPUs idle",
            )
        );
        assert_eq!(
            timer_migration(root).summary,
            "unknown timer migration: cannot read /proc/sys/kernel/timer_migration"
        );
        write(root, NOHZ_FULL, "(null)\n");
        assert_eq!(nohz_full(root).severity, Severity::Info);
        assert_eq!(
            nohz_full(root).fix,
            "boot with nohz_full=<cpus> for the probe CPUs"
        );
        write(root, NOHZ_FULL, "1-3\n");
        assert_eq!(
            nohz_full(root),
            Finding::ok("nohz-full", "tickless (nohz_full) CPUs: 1-3")
        );
    }

    #[test]
    fn clocksource_other_than_tsc_warns() {
        let host = HostSnapshot {
            clocksource: "kvm-clock".into(),
            ..HostSnapshot::default()
        };
        assert_eq!(
            clocksource(&host),
            Finding::new(
                "clocksource",
                Severity::Warn,
                "clocksource is kvm-clock, not tsc: reading the clock costs more",
                "clocksource=tsc tsc=reliable on the kernel command line, if the TSC is stable",
            )
        );
    }

    #[test]
    fn cache_allocation_without_resctrl_mounted() {
        let dir = copy_fixture("sysroot-rt");
        fs::remove_dir_all(dir.path().join("sys/fs/resctrl")).unwrap();
        assert_eq!(
            cache_allocation(dir.path()),
            Finding::new(
                "cache-allocation",
                Severity::Info,
                "cache allocation (cat_l3 cdp_l3 rdt_a), but resctrl is not mounted",
                "mount -t resctrl resctrl /sys/fs/resctrl",
            )
        );
    }

    #[test]
    fn cache_allocation_levels_ways_closids_cdp_and_mba() {
        let summary = |name: &str| cache_allocation(&fixture(name));
        assert_eq!(
            summary("resctrl-l3-8ways"),
            Finding::ok(
                "cache-allocation",
                "cache allocation (cat_l3 cdp_l3 rdt_a), resctrl mounted at /sys/fs/resctrl: L3 8 ways (cbm_mask ff) on id 0; 4 CLOSIDs; CDP off (cdp_l3: mount with -o cdp for it); no MBA"
            )
        );
        assert_eq!(
            summary("resctrl-l3-12ways-cdp").summary,
            "cache allocation (cat_l3 cdp_l3 mba rdt_a), resctrl mounted at /sys/fs/resctrl: L3CODE 12 ways (cbm_mask fff) on ids 0-1; L3DATA 12 ways (cbm_mask fff) on ids 0-1; 8 CLOSIDs; CDP on; MBA from 10% in steps of 10%"
        );
        assert_eq!(
            summary("resctrl-l2-20bit").summary,
            "cache allocation (cat_l2 cdp_l2 rdt_a), resctrl mounted at /sys/fs/resctrl: L2 20 ways (cbm_mask fffff) on ids 0-3; 8 CLOSIDs; CDP off (cdp_l2: mount with -o cdp for it); no MBA"
        );
        assert_eq!(
            summary("resctrl-l3-mb-sparse").summary,
            "cache allocation (cat_l3 cdp_l3 mba rdt_a), resctrl mounted at /sys/fs/resctrl: L3 15 ways (cbm_mask 7fff) on ids 0-1; 8 CLOSIDs; CDP off (cdp_l3: mount with -o cdp for it); MBA from 10% in steps of 10%"
        );
        // A malformed info file is named.
        let dir = copy_fixture("resctrl-l3-8ways");
        write(dir.path(), "sys/fs/resctrl/info/L3/num_closids", "four\n");
        assert_eq!(
            cache_allocation(dir.path()),
            Finding::new(
                "cache-allocation",
                Severity::Info,
                format!(
                    "unknown cache allocation: {}/sys/fs/resctrl/info/L3/num_closids reads \"four\", not a number",
                    dir.path().display()
                ),
                "",
            )
        );
        // Mounted, but only monitoring.
        fs::remove_dir_all(dir.path().join("sys/fs/resctrl/info/L3")).unwrap();
        assert_eq!(
            cache_allocation(dir.path()).summary,
            "cache allocation (cat_l3 cdp_l3 rdt_a), but resctrl at /sys/fs/resctrl offers no allocation resource (monitoring only)"
        );
    }

    #[test]
    fn privileges_of_a_user() {
        assert_eq!(
            privileges(0, ROOT_LIMITS),
            Finding::ok("privileges", "running as root")
        );
        let f = privileges(
            1000,
            Limits {
                rtprio: Limit::Value(0),
                memlock: Limit::Value(8_388_608),
            },
        );
        assert_eq!(
            f,
            Finding::new(
                "privileges",
                Severity::Warn,
                "not root (uid 1000): RLIMIT_RTPRIO 0, RLIMIT_MEMLOCK 8388608 bytes",
                "run as root, or set rtprio 99 and memlock unlimited in /etc/security/limits.conf",
            )
        );
        let f = privileges(
            1000,
            Limits {
                rtprio: Limit::Unknown,
                memlock: Limit::Unlimited,
            },
        );
        assert_eq!(
            f.summary,
            "not root (uid 1000): RLIMIT_RTPRIO unknown, RLIMIT_MEMLOCK unlimited"
        );
    }

    #[test]
    fn irqbalance_is_found_by_comm() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "proc/1/comm", "systemd\n");
        write(root, "proc/sys/kernel/timer_migration", "1\n");
        assert_eq!(
            irqbalance(root),
            Finding::ok("irqbalance", "irqbalance is not running")
        );
        write(root, "proc/812/comm", "irqbalance\n");
        assert_eq!(
            irqbalance(root),
            Finding::new(
                "irqbalance",
                Severity::Warn,
                "irqbalance is running (pid 812): it moves IRQs back onto probe CPUs; a configuration with irq_cpus pauses it (SIGSTOP) for each cell and resumes it afterwards",
                "to stop it for good: systemctl disable --now irqbalance",
            )
        );
        write(root, "proc/90/comm", "irqbalance\n");
        assert_eq!(
            irqbalance(root).summary,
            "irqbalance is running (pids 90, 812): it moves IRQs back onto probe CPUs; a configuration with irq_cpus pauses it (SIGSTOP) for each cell and resumes it afterwards"
        );
        let empty = tempfile::tempdir().unwrap();
        fs::create_dir(empty.path().join("proc")).unwrap();
        assert_eq!(
            irqbalance(empty.path()).summary,
            "unknown whether irqbalance runs: no processes under /proc"
        );
        assert_eq!(
            irqbalance(&empty.path().join("none")).summary,
            "unknown whether irqbalance runs: cannot list /proc"
        );
    }

    /// The online CPUs and a probe CPU list of the RT fixture.
    fn rt_cpus(probe: &str) -> (CpuList, CpuList) {
        (
            CpuList::parse("0-7").unwrap(),
            CpuList::parse(probe).unwrap(),
        )
    }

    #[test]
    fn probe_cpus_default_to_the_last_online_and_must_be_online() {
        let vm = fixture("sysroot-vm");
        assert_eq!(
            probe_cpus(&vm, None).unwrap(),
            Some(CpuList::parse("1").unwrap())
        );
        let given = CpuList::parse("0").unwrap();
        assert_eq!(probe_cpus(&vm, Some(&given)).unwrap(), Some(given));
        let e = probe_cpus(&vm, Some(&CpuList::parse("1-3").unwrap())).unwrap_err();
        assert!(e.downcast_ref::<crate::error::BadInput>().is_some());
        assert_eq!(
            e.to_string(),
            "--cpus 1-3: CPUs 2-3 are not online (online CPUs: 0-1); name the probe CPUs among them"
        );
        assert_eq!(
            probe_cpus(&vm, Some(&CpuList::parse("5").unwrap()))
                .unwrap_err()
                .to_string(),
            "--cpus 5: CPU 5 is not online (online CPUs: 0-1); name the probe CPUs among them"
        );
        // Online CPUs unknown: the given list stands, the default is unknown.
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(probe_cpus(dir.path(), None).unwrap(), None);
        assert_eq!(
            probe_cpus(dir.path(), Some(&CpuList::parse("5").unwrap())).unwrap(),
            Some(CpuList::parse("5").unwrap())
        );
    }

    #[test]
    fn an_online_smt_sibling_outside_the_probe_cpus_warns() {
        let dir = copy_fixture("sysroot-rt");
        let root = dir.path();
        let siblings = |cpu: usize| format!("{CPU_DIR}/cpu{cpu}/topology/thread_siblings_list");
        for (a, b) in [(2, 6), (3, 7)] {
            write(root, &siblings(a), &format!("{a},{b}\n"));
            write(root, &siblings(b), &format!("{a},{b}\n"));
        }
        let (online, probe) = rt_cpus("6-7");
        assert_eq!(
            smt_siblings(root, Some(&online), Some(&probe)),
            Finding::new(
                "smt-siblings",
                Severity::Warn,
                "online SMT siblings share a core with the probe: probe CPU 6 with CPU 2, probe CPU 7 with CPU 3; they share its caches and pipeline",
                "for N in 2 3; do echo 0 > /sys/devices/system/cpu/cpu$N/online; done (or boot with nosmt)",
            )
        );
        let (_, probe) = rt_cpus("7");
        assert_eq!(
            smt_siblings(root, Some(&online), Some(&probe)).fix,
            "echo 0 > /sys/devices/system/cpu/cpu3/online (or boot with nosmt)"
        );
        // A sibling that is a probe CPU itself, or offline, is no finding.
        let (_, probe) = rt_cpus("3,7");
        assert_eq!(
            smt_siblings(root, Some(&online), Some(&probe)),
            Finding::ok(
                "smt-siblings",
                "no online SMT sibling shares a core with probe CPUs 3,7"
            )
        );
        let (_, probe) = rt_cpus("7");
        let online_without_3 = CpuList::parse("0-2,4-7").unwrap();
        assert_eq!(
            smt_siblings(root, Some(&online_without_3), Some(&probe)).severity,
            Severity::Ok
        );
        fs::remove_file(root.join(siblings(7))).unwrap();
        assert_eq!(
            smt_siblings(root, Some(&online), Some(&probe)),
            Finding::new(
                "smt-siblings",
                Severity::Info,
                "unknown SMT siblings of probe CPU 7: cannot read /sys/devices/system/cpu/cpu7/topology/thread_siblings_list",
                "",
            )
        );
    }

    #[test]
    fn turbo_on_names_the_file_to_write() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, NO_TURBO, "0\n");
        assert_eq!(
            turbo(root),
            Finding::new(
                "turbo",
                Severity::Info,
                "turbo is on (intel_pstate no_turbo = 0): the clock follows load and temperature, so execution times vary",
                "echo 1 > /sys/devices/system/cpu/intel_pstate/no_turbo (while measuring)",
            )
        );
        fs::remove_file(root.join(NO_TURBO)).unwrap();
        write(root, BOOST, "1\n");
        assert_eq!(
            turbo(root),
            Finding::new(
                "turbo",
                Severity::Info,
                "turbo is on (cpufreq boost = 1): the clock follows load and temperature, so execution times vary",
                "echo 0 > /sys/devices/system/cpu/cpufreq/boost (while measuring)",
            )
        );
        write(root, BOOST, "0\n");
        assert_eq!(
            turbo(root),
            Finding::ok("turbo", "turbo is off (cpufreq boost = 0)")
        );
        write(root, BOOST, "yes\n");
        assert_eq!(
            turbo(root).summary,
            "unknown turbo state: /sys/devices/system/cpu/cpufreq/boost reads \"yes\""
        );
    }

    #[test]
    fn deep_c_states_on_a_probe_cpu_warn() {
        let dir = copy_fixture("sysroot-rt");
        let root = dir.path();
        // CPU 7 may enter C6 again; CPU 6 keeps it disabled.
        write(
            root,
            &format!("{CPU_DIR}/cpu7/cpuidle/state3/disable"),
            "0\n",
        );
        let (_, probe) = rt_cpus("6-7");
        assert_eq!(
            c_states(root, Some(&probe)),
            Finding::new(
                "c-states",
                Severity::Warn,
                "deepest enabled C-state exits in 133 us on CPU 7 (CPU 7: POLL 0 us, C1 1 us, C1E 2 us, C6 133 us; CPU 6: POLL 0 us, C1 1 us, C1E 2 us, C6 133 us disabled); a run holds /dev/cpu_dma_latency at 0 (unless a configuration sets dma_latency = false), which keeps the CPUs out of such states",
                "for your own software: hold a configuration with jitterlab apply SPEC (dma_latency = true), or boot with idle=poll or processor.max_cstate=1 (with intel_idle.max_cstate=0 on Intel)",
            )
        );
        // Grouped when they agree; a CPU without cpuidle is named.
        fs::remove_dir_all(root.join(format!("{CPU_DIR}/cpu5/cpuidle"))).unwrap();
        let (_, probe) = rt_cpus("2-6");
        assert_eq!(
            c_states(root, Some(&probe)),
            Finding::ok(
                "c-states",
                "deepest enabled C-state exits in 2 us (CPUs 2-4,6: POLL 0 us, C1 1 us, C1E 2 us, C6 133 us disabled; no cpuidle on CPU 5)"
            )
        );
        // Exactly the limit is fine.
        write(
            root,
            &format!("{CPU_DIR}/cpu6/cpuidle/state2/latency"),
            "10\n",
        );
        let (_, probe) = rt_cpus("6");
        assert_eq!(c_states(root, Some(&probe)).severity, Severity::Ok);
        write(
            root,
            &format!("{CPU_DIR}/cpu6/cpuidle/state2/latency"),
            "11\n",
        );
        assert_eq!(c_states(root, Some(&probe)).severity, Severity::Warn);
    }

    #[test]
    fn irq_names_are_the_handlers() {
        assert_eq!(irq_name("IO-APIC 4-edge ttyS0"), "ttyS0");
        assert_eq!(
            irq_name("IR-IO-APIC 16-fasteoi ehci_hcd:usb1, i801_smbus"),
            "ehci_hcd:usb1, i801_smbus"
        );
        assert_eq!(irq_name("GICv3 27 Level arch_timer"), "arch_timer");
        assert_eq!(irq_name("alone"), "alone");
        assert_eq!(irq_name(""), "");
    }

    #[test]
    fn irqs_routed_to_probe_cpus_are_listed_most_first() {
        let dir = copy_fixture("sysroot-rt");
        let root = dir.path();
        let (online, probe) = rt_cpus("1");
        assert_eq!(
            irqs_on_probe_cpus(root, Some(&online), Some(&probe)),
            Finding::new(
                "irqs-on-probe-cpus",
                Severity::Warn,
                "3 IRQs are routed to probe CPU 1 (interrupts taken there since boot): 125 nvme0q0 (88412), 9 acpi (4), 8 rtc0 (1)",
                "set irq_cpus = \"0,2-7\" in a configuration of your spec: jitterlab bench and jitterlab apply move them there for the cell (pausing irqbalance meanwhile)",
            )
        );
        // effective_affinity_list decides; smp_affinity_list only without it.
        write(root, "proc/irq/16/effective_affinity_list", "7\n");
        write(root, "proc/irq/124/effective_affinity_list", "\n");
        write(root, "proc/irq/124/smp_affinity_list", "6-7\n");
        let (_, probe) = rt_cpus("7");
        assert_eq!(
            irqs_on_probe_cpus(root, Some(&online), Some(&probe)).summary,
            "2 IRQs are routed to probe CPU 7 (interrupts taken there since boot): 16 ehci_hcd:usb1, i801_smbus (0), 124 enp0s31f6 (0)"
        );
        fs::remove_file(root.join("proc/interrupts")).unwrap();
        let f = irqs_on_probe_cpus(root, Some(&online), Some(&probe));
        assert_eq!(
            f.summary,
            "3 IRQs are routed to probe CPU 7 (names and counts unknown: cannot read /proc/interrupts): 3, 16, 124"
        );
        fs::remove_dir_all(root.join("proc/irq")).unwrap();
        assert_eq!(
            irqs_on_probe_cpus(root, Some(&online), Some(&probe)),
            Finding::new(
                "irqs-on-probe-cpus",
                Severity::Info,
                "unknown IRQ affinity: cannot list /proc/irq",
                "",
            )
        );
    }

    #[test]
    fn irqs_on_every_cpu_of_a_small_machine_are_cut_short() {
        let root = fixture("sysroot-vm");
        let probe = CpuList::parse("0-1").unwrap();
        assert_eq!(
            irqs_on_probe_cpus(&root, Some(&probe), Some(&probe)),
            Finding::new(
                "irqs-on-probe-cpus",
                Severity::Warn,
                "19 IRQs are routed to probe CPUs 0-1 (interrupts taken there since boot): 36 virtio1-req.0 (1170256), 42 virtio3-tx (18339), 41 virtio3-rx (5483), 38 virtio2-input.0 (2709), 39 virtio2-output.0 (2203), 31 virtio0-stats (2035), 32 virtio0-reporting_vq (998), 34 virtio4-input (178), 26 ttyS0 (16), 24 ACPI:Ged (1), and 9 more",
                "no other online CPU can take them; a machine with more CPUs can",
            )
        );
    }

    #[test]
    fn missing_tools_are_named_with_their_packages() {
        let dir = copy_fixture("sysroot-rt");
        let root = dir.path();
        fs::remove_file(root.join("usr/bin/rtla")).unwrap();
        // Not executable: not a program.
        fs::set_permissions(
            root.join("usr/bin/hackbench"),
            Permissions::from_mode(0o644),
        )
        .unwrap();
        assert_eq!(
            neighbour_tools(root, "/usr/bin:/usr/sbin/"),
            Finding::new(
                "neighbour-tools",
                Severity::Info,
                "missing neighbour and tracing tools: hackbench (rt-tests), rtla (rtla); found: stress-ng, ip, perf; scenarios that need them cannot run",
                "apt install rt-tests rtla",
            )
        );
        // Relative and empty PATH entries are not searched.
        assert_eq!(
            neighbour_tools(root, "usr/sbin::").fix,
            "apt install stress-ng rt-tests iproute2 rtla linux-perf"
        );
    }

    #[test]
    fn probe_cpus_steer_the_per_cpu_findings() {
        let dir = copy_fixture("sysroot-rt");
        let probe = CpuList::parse("1").unwrap();
        let found = findings_for(dir.path(), Some(&probe), DEFAULT_PATH, 0, ROOT_LIMITS);
        assert_eq!(find(&found, "irqs-on-probe-cpus").severity, Severity::Warn);
        assert_eq!(
            find(&found, "smt-siblings").summary,
            "no online SMT sibling shares a core with probe CPU 1"
        );
        assert_eq!(
            find(&found, "c-states").summary,
            "deepest enabled C-state exits in 2 us (CPU 1: POLL 0 us, C1 1 us, C1E 2 us, C6 133 us disabled)"
        );
    }

    #[test]
    fn tracefs_not_mounted_names_the_mount_command() {
        let dir = tempfile::tempdir().unwrap();
        let tracing = dir.path().join("sys/kernel/tracing");
        fs::create_dir_all(&tracing).unwrap();
        let f = tracefs(dir.path());
        assert_eq!(f.severity, Severity::Info);
        assert_eq!(
            f.summary,
            format!(
                "tracefs is not mounted at {} (needed only for --break-trace)",
                tracing.display()
            )
        );
        assert_eq!(
            f.fix,
            format!(
                "mount it with: mount -t tracefs nodev {}",
                tracing.display()
            )
        );
    }

    #[test]
    fn text_rendering_is_exact() {
        let list = [
            Finding::ok("smt", "SMT is off"),
            Finding::new(
                "timer-migration",
                Severity::Info,
                "timer migration is on",
                "sysctl -w kernel.timer_migration=0",
            ),
            Finding::new(
                "clocksource",
                Severity::Warn,
                "clocksource is hpet, not tsc",
                "clocksource=tsc",
            ),
            Finding::new(
                "online-cpus",
                Severity::Fail,
                "cannot read the online CPUs",
                "",
            ),
        ];
        assert_eq!(
            render_text(&list),
            "\
ok    smt              SMT is off
info  timer-migration  timer migration is on
                       fix: sysctl -w kernel.timer_migration=0
warn  clocksource      clocksource is hpet, not tsc
                       fix: clocksource=tsc
fail  online-cpus      cannot read the online CPUs
1 ok, 1 info, 1 warn, 1 fail
"
        );
        assert_eq!(render_text(&[]), "0 ok, 0 info, 0 warn, 0 fail\n");
    }

    #[test]
    fn json_shape() {
        let root = fixture("sysroot-vm");
        let host = host::snapshot(&root);
        let found = findings(&root, 0, ROOT_LIMITS);
        let v: serde_json::Value =
            serde_json::from_str(&render_json(&host, &found).unwrap()).unwrap();
        assert_eq!(v["schema_version"], 1);
        assert_eq!(v["host"]["hostname"], "vm");
        assert_eq!(v["host"]["cpus_online"], "0-1");
        let list = v["findings"].as_array().unwrap();
        assert_eq!(list.len(), found.len());
        assert_eq!(
            list[0],
            serde_json::json!({
                "id": "realtime-kernel",
                "severity": "warn",
                "summary": found[0].summary,
                "fix": "install a PREEMPT_RT kernel (Debian: linux-image-rt-amd64) and boot it",
            })
        );
        assert_eq!(list[3]["severity"], "ok");
        assert_eq!(list[3]["fix"], "");
        let ids: Vec<&str> = list.iter().map(|f| f["id"].as_str().unwrap()).collect();
        assert_eq!(ids, found.iter().map(|f| f.id).collect::<Vec<_>>());
        let smt = ids.iter().position(|id| *id == "smt-siblings").unwrap();
        assert_eq!(
            list[smt],
            serde_json::json!({
                "id": "smt-siblings",
                "severity": "ok",
                "summary": "no online SMT sibling shares a core with probe CPU 1",
                "fix": "",
            })
        );
    }
}
