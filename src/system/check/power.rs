//! Power and frequency findings: the cpufreq governors, turbo, and the idle
//! states (C-states) of the probe CPUs with their exit latencies.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use jitterlab_core::units::CpuList;

use super::finding::{cpu_words, probe_unknown, probe_words, unknown, Finding, Severity, CPU_DIR};
use crate::system::host::read_opt;

const NO_TURBO: &str = "sys/devices/system/cpu/intel_pstate/no_turbo";
const BOOST: &str = "sys/devices/system/cpu/cpufreq/boost";
const CPUIDLE_DRIVER: &str = "sys/devices/system/cpu/cpuidle/current_driver";
/// A C-state exit latency above this (µs) is a warning.
const C_STATE_LIMIT_US: u64 = 10;

/// `cpufreq-governor`: the online CPUs that do not use the performance
/// governor, grouped by governor.
pub(super) fn cpufreq_governor(root: &Path, online: Option<&CpuList>) -> Finding {
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

/// `turbo`: whether turbo (intel_pstate `no_turbo`, cpufreq `boost`) is on.
pub(super) fn turbo(root: &Path) -> Finding {
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

/// `c-states`: the idle states of the probe CPUs and the deepest enabled
/// exit latency.
pub(super) fn c_states(root: &Path, probe: Option<&CpuList>) -> Finding {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::check::tests::{rt_cpus, write};
    use crate::testutil::copy_fixture;

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
}
