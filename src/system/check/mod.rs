//! `jitterlab check`: is this machine ready to measure real-time latency?
//!
//! A latency figure is only as good as the machine that produced it: a probe
//! on a voluntary-preemption kernel, sharing its CPU with other tasks, the
//! timer tick, migrated timers, a sibling hyper-thread and a CPU that changes
//! its frequency measures the set-up more than the software. `check` reads
//! the settings that decide this, before any run, and prints one *finding*
//! per setting: what was found and, when it is not the best set-up for
//! measuring, the concrete command or kernel parameter that changes it
//! (design rule 8). It changes nothing on the machine.
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
//! Every path is read under `--sysroot` (design rule 5), so each finding is
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
//!
//! **Layout.** This module gathers the findings in the order they are
//! printed; each area's findings live in their own module: [`sched`]
//! (PREEMPT_RT, throttling, privileges), [`timers`] (clocksource, tick,
//! timer migration), [`power`] (governors, turbo, C-states), [`isolation`]
//! (isolated CPUs, SMT and siblings), [`cache`] (cache allocation),
//! [`irqs`] (IRQs on the probe CPUs, irqbalance), [`tools`] (neighbour
//! tools, tracefs) and [`container`] (deployment `container`: a working
//! engine, a cgroup controller split between v1 and v2, hard resource
//! limits, the RT group budget, root — the last section, `container-*`,
//! which `audit` adds after running each engine's `version`);
//! [`finding`] is what a finding is. The text and JSON
//! forms, and the command that prints them, are [`crate::report::check`]'s.
//!
//! The design rules cited here are in `docs/design.md`.

mod cache;
mod container;
mod finding;
mod irqs;
mod isolation;
mod power;
mod sched;
mod timers;
mod tools;

use std::path::Path;

use anyhow::Result;
use jitterlab_core::result::HostSnapshot;
use jitterlab_core::units::CpuList;

pub use finding::{Finding, Severity};
pub use sched::Limits;
// The tests build the limits of the process they stand for.
#[cfg(test)]
pub use sched::Limit;

use crate::error::bad;
use crate::system::host;

const ONLINE: &str = "sys/devices/system/cpu/online";
/// `PATH` when the environment has none (the usual root `PATH`).
const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// What `jitterlab check` is asked: the output form and the probe CPUs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckRequest {
    /// Print the schema-versioned findings and host snapshot as JSON.
    pub json: bool,
    /// The probe CPUs the audit is about (`--cpus`); `None`: the last
    /// online CPU, as `jitterlab run` uses.
    pub cpus: Option<CpuList>,
}

/// The audit `jitterlab check` prints ([`crate::report::check::run`]): the
/// host snapshot and every finding for the request's probe CPUs. `--cpus`
/// naming a CPU that is not online is bad input.
pub fn audit(root: &Path, request: &CheckRequest) -> Result<(HostSnapshot, Vec<Finding>)> {
    let probe = probe_cpus(root, request.cpus.as_ref())?;
    let uid = jitterlab_sys::effective_uid();
    let mut found = findings_for(root, probe.as_ref(), &search_path(), uid, Limits::current());
    // Last, as their own section: what running each engine found.
    let engines: Vec<_> = crate::system::container::Engine::ALL
        .into_iter()
        .map(crate::system::container::probe)
        .collect();
    found.extend(container::findings(root, &engines, uid));
    Ok((host::snapshot(root), found))
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
        sched::realtime_kernel(host),
        isolation::isolated_cpus(root),
        timers::nohz_full(root),
        timers::clocksource(host),
        sched::rt_throttling(host),
        timers::timer_migration(root),
        power::cpufreq_governor(root, online.as_ref()),
        power::turbo(root),
        power::c_states(root, probe),
        isolation::smt(root),
        isolation::smt_siblings(root, online.as_ref(), probe),
        cache::cache_allocation(root),
        sched::privileges(uid, limits),
        irqs::irqs_on_probe_cpus(root, online.as_ref(), probe),
        irqs::irqbalance(root),
        tools::neighbour_tools(root, path),
        tools::tracefs(root),
    ]);
    out
}

#[cfg(test)]
mod tests;
