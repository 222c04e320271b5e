//! CPU isolation findings: the CPUs `isolcpus=` keeps other tasks off, SMT,
//! and hyper-thread siblings that share a probe CPU's core.

use std::path::Path;

use jitterlab_core::units::CpuList;

use super::finding::{
    cpu_words, per_cpu_command, probe_unknown, probe_words, unknown, Finding, Severity, CPU_DIR,
};
use crate::system::host::read_opt;

const ISOLATED: &str = "sys/devices/system/cpu/isolated";
pub(super) const SMT_ACTIVE: &str = "sys/devices/system/cpu/smt/active";

/// `isolated-cpus`: the CPUs `isolcpus=` keeps other tasks off.
pub(super) fn isolated_cpus(root: &Path) -> Finding {
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

/// `smt`: whether simultaneous multithreading is on.
pub(super) fn smt(root: &Path) -> Finding {
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

/// `smt-siblings`: online hyper-thread siblings of the probe CPUs that are
/// not probe CPUs themselves.
pub(super) fn smt_siblings(
    root: &Path,
    online: Option<&CpuList>,
    probe: Option<&CpuList>,
) -> Finding {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::check::tests::{rt_cpus, write};
    use crate::testutil::copy_fixture;
    use std::fs;

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
}
