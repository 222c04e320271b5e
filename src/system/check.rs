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
//! or unreadable file is a finding ("unknown ..."), never an error. The one
//! fact not read under the root is the privilege of the process itself (its
//! effective uid and resource limits), which [`findings`] takes as arguments
//! so that it stays a pure function of the tree.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write as _};
use std::fs;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use jitterlab_core::result::HostSnapshot;
use jitterlab_core::units::CpuList;
use serde::Serialize;

use crate::cli::CheckArgs;
use crate::system::host::{self, read_opt};
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
/// exit status 1 when one of them is `fail`.
pub fn run(root: &Path, args: &CheckArgs) -> Result<ExitCode> {
    let found = findings(root, jitterlab_sys::effective_uid(), Limits::current());
    let host = host::snapshot(root);
    if args.json {
        println!("{}", render_json(&host, &found)?);
    } else {
        print!("{}", render_text(&found));
    }
    Ok(if found.iter().any(|f| f.severity == Severity::Fail) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Every finding for the tree under `root`, for a process with effective
/// user id `uid` and resource limits `limits`.
pub fn findings(root: &Path, uid: u32, limits: Limits) -> Vec<Finding> {
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
        smt(root),
        cache_allocation(root),
        privileges(uid, limits),
        irqbalance(root),
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
    let Ok(entries) = fs::read_dir(root.join("proc")) else {
        return unknown("cannot list /proc");
    };
    let mut processes = 0usize;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        processes += 1;
        let comm = read_opt(root, &format!("proc/{name}/comm"));
        if comm.as_deref().map(str::trim) == Some("irqbalance") {
            return Finding::new(
                ID,
                Severity::Warn,
                "irqbalance is running: it moves IRQs back onto probe CPUs",
                "systemctl stop irqbalance while measuring",
            );
        }
    }
    if processes == 0 {
        return unknown("no processes under /proc");
    }
    Finding::ok(ID, "irqbalance is not running")
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
                ("smt", "ok"),
                ("cache-allocation", "info"),
                ("privileges", "ok"),
                ("irqbalance", "info"),
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
                ("smt", "ok"),
                ("cache-allocation", "ok"),
                ("privileges", "ok"),
                ("irqbalance", "info"),
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
        assert_eq!(found.len(), 13);
        assert!(found[1..].iter().all(|f| f.summary.starts_with("unknown")
            || f.id == "realtime-kernel"
            || f.id == "privileges"
            || f.id == "tracefs"));
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
                "irqbalance is running: it moves IRQs back onto probe CPUs",
                "systemctl stop irqbalance while measuring",
            )
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
    }
}
