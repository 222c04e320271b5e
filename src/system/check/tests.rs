//! The tests of the audit as a whole (every finding of a fixture tree, the
//! probe CPUs) and the helpers the areas' tests share.

use super::isolation::{smt, SMT_ACTIVE};
use super::timers::{nohz_full, timer_migration, NOHZ_FULL};
use super::*;
use crate::testutil::{copy_fixture, fixture};
use std::fs;

/// The limits of a root process in the tests.
pub(super) const ROOT_LIMITS: Limits = Limits {
    rtprio: Limit::Value(0),
    memlock: Limit::Value(8 << 20),
};

fn ids(found: &[Finding]) -> Vec<(&'static str, &'static str)> {
    found.iter().map(|f| (f.id, f.severity.name())).collect()
}

fn find<'a>(found: &'a [Finding], id: &str) -> &'a Finding {
    found.iter().find(|f| f.id == id).unwrap()
}

/// Writes `text` to `rel` under `root`, making its directories.
pub(super) fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// The online CPUs and a probe CPU list of the RT fixture.
pub(super) fn rt_cpus(probe: &str) -> (CpuList, CpuList) {
    (
        CpuList::parse("0-7").unwrap(),
        CpuList::parse(probe).unwrap(),
    )
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
