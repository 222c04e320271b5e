//! The host snapshot: the facts about a machine that decide how its figures
//! must be read (rteval keeps the same snapshot in every report).
//!
//! A latency figure means little without the kernel that produced it: a
//! PREEMPT_RT kernel with isolated, tickless CPUs and a TSC clocksource is a
//! different machine from a virtual one with a voluntary-preemption kernel.
//! [`snapshot`] reads those facts once per run and stores them beside the
//! results, so a report rendered later, elsewhere, still says what was
//! measured.
//!
//! Every path is read under one root (design rule 5: `--sysroot`, `/` in
//! production), so the tests run against the fake trees in `tests/fixtures/`
//! that reproduce the kernel's files byte for byte. Values are trimmed of
//! their trailing newline. A snapshot is a description, not a precondition:
//! a missing or unreadable file gives an empty string (or `None`) and never
//! an error, because a container or an unusual kernel must still be able to
//! run and report. Code that *needs* a value (the online CPU list, to place
//! probes) uses [`online_cpus`], which fails with the path and the fix.
//!
//! The preemption model is taken from the most authoritative source that is
//! there, and the string names that source:
//!
//! 1. `/sys/kernel/realtime` reading `1` (only PREEMPT_RT kernels have it);
//! 2. `/sys/kernel/debug/sched/preempt` (or the 5.12 name
//!    `/sys/kernel/debug/sched_preempt`), whose current model is the word in
//!    parentheses: `none voluntary (full) lazy `;
//! 3. the kernel version string (`uname -v`): `PREEMPT_RT` (or the old
//!    `PREEMPT RT`) is rt, `PREEMPT_LAZY` lazy, a bare `PREEMPT` full, none
//!    of them "none or voluntary" (the version string cannot tell those two
//!    apart). For `PREEMPT_DYNAMIC` the model was chosen at boot: the
//!    `preempt=` parameter of `/proc/cmdline` gives it when present,
//!    otherwise the default is a Kconfig choice that only debugfs reveals.
//!
//! `preempt=` is consulted only when the kernel is PREEMPT_DYNAMIC (or its
//! version string could not be read): other kernels ignore the parameter,
//! and parameters after a lone `--` belong to init, not to the kernel.
//!
//! **The machine's identity.** A hostname tells machines apart until two
//! plant PCs are both called `plc`; `/etc/machine-id` does not, but it is
//! a secret of the machine that systemd asks programs never to publish
//! (machine-id(5)). [`machine_id`] stores what systemd recommends instead:
//! the id made specific to one application,
//! `sd_id128_get_machine_app_specific()` — HMAC-SHA256 keyed with the
//! machine id over jitterlab's application id [`MACHINE_APP_ID`], its first
//! 16 bytes marked as a version-4 UUID, printed as 32 hex digits — so
//! `systemd-id128 machine-id --app-specific=e521c4a0c50b4db09260a68c346eca47`
//! prints the same id on that machine, and the id cannot be turned back
//! into the machine id nor matched with another program's.
//!
//! The design rules cited here are in `docs/design.md`.

use std::fs;
use std::path::Path;

use anyhow::{bail, Result};
use hmac::{Hmac, Mac};
use jitterlab_core::result::{HostDetails, HostSnapshot};
use jitterlab_core::units::CpuList;
use sha2::Sha256;

/// `/sys/kernel/realtime`, present on PREEMPT_RT kernels.
const REALTIME: &str = "sys/kernel/realtime";
/// The online CPU list.
const ONLINE: &str = "sys/devices/system/cpu/online";
/// Where debugfs shows the dynamic preemption model, newest name first.
const DEBUG_PREEMPT: [&str; 2] = [
    "sys/kernel/debug/sched/preempt",
    "sys/kernel/debug/sched_preempt",
];

/// jitterlab's application id for [`machine_id`] (made once with
/// `systemd-id128 new`; changing it would change every machine's id).
pub const MACHINE_APP_ID: u128 = 0xe521c4a0_c50b4db0_9260a68c_346eca47;

/// The machine id file.
const MACHINE_ID: &str = "etc/machine-id";

/// The machine's identity as jitterlab stores it (see the module doc):
/// `None` when `/etc/machine-id` under `root` is missing, empty,
/// `uninitialized` or not an id.
pub fn machine_id(root: &Path) -> Option<String> {
    app_specific_id(&read_opt(root, MACHINE_ID)?)
}

/// systemd's `sd_id128_get_app_specific()` of the machine id `text` (32
/// hex digits, or a UUID's 36 characters, as systemd reads the file) with
/// [`MACHINE_APP_ID`], as 32 lowercase hex digits; `None` for text that is
/// not an id, or the all-zero id.
fn app_specific_id(text: &str) -> Option<String> {
    let id = uuid::Uuid::try_parse(text.trim()).ok()?;
    if id.is_nil() {
        return None;
    }
    // HMAC takes a key of any length: `new_from_slice` cannot fail here.
    let mut mac = Hmac::<Sha256>::new_from_slice(id.as_bytes()).ok()?;
    mac.update(&MACHINE_APP_ID.to_be_bytes());
    let digest = mac.finalize().into_bytes();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    Some(uuid::Uuid::from_bytes(bytes).simple().to_string())
}

/// Reads `rel` under `root`, trimmed of trailing whitespace (the kernel's
/// newline); `None` when it cannot be read.
pub(crate) fn read_opt(root: &Path, rel: &str) -> Option<String> {
    let bytes = fs::read(root.join(rel)).ok()?;
    Some(String::from_utf8_lossy(&bytes).trim_end().to_string())
}

/// Reads `rel` under `root`, or an empty string when it cannot be read.
fn read_or_empty(root: &Path, rel: &str) -> String {
    read_opt(root, rel).unwrap_or_default()
}

/// Reads an integer sysctl; `None` when missing or not an integer.
fn read_i64(root: &Path, rel: &str) -> Option<i64> {
    read_opt(root, rel)?.trim().parse().ok()
}

/// Takes a snapshot of the machine under `root` (`/` in production).
///
/// Never fails: whatever cannot be read is left empty (see the module doc).
pub fn snapshot(root: &Path) -> HostSnapshot {
    let cmdline = read_or_empty(root, "proc/cmdline");
    let kernel_version = read_or_empty(root, "proc/sys/kernel/version");
    let cpuinfo = read_or_empty(root, "proc/cpuinfo");
    let realtime = read_or_empty(root, REALTIME);
    let debug_preempt = DEBUG_PREEMPT
        .iter()
        .find_map(|rel| read_opt(root, rel).map(|text| (*rel, text)));
    let machine = read_opt(root, "proc/sys/kernel/arch")
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    HostSnapshot {
        hostname: read_or_empty(root, "proc/sys/kernel/hostname"),
        kernel_release: read_or_empty(root, "proc/sys/kernel/osrelease"),
        preemption: preemption_model(
            &realtime,
            debug_preempt
                .as_ref()
                .map(|(rel, text)| (*rel, text.as_str())),
            &cmdline,
            &kernel_version,
        ),
        realtime_kernel: realtime.trim() == "1",
        kernel_version,
        machine,
        cpu_model: cpu_model(&cpuinfo),
        cpus_online: read_or_empty(root, ONLINE),
        cpus_isolated: read_or_empty(root, "sys/devices/system/cpu/isolated"),
        cpus_nohz_full: read_or_empty(root, "sys/devices/system/cpu/nohz_full"),
        clocksource: read_or_empty(
            root,
            "sys/devices/system/clocksource/clocksource0/current_clocksource",
        ),
        sched_rt_runtime_us: read_i64(root, "proc/sys/kernel/sched_rt_runtime_us"),
        sched_rt_period_us: read_i64(root, "proc/sys/kernel/sched_rt_period_us"),
        virtualized: cpuinfo_has_flag(&cpuinfo, "hypervisor"),
        details: Some(details(root, &cpuinfo)),
        cmdline,
        machine_id: machine_id(root),
    }
}

/// The facts of [`HostDetails`] under `root`: what a missing file cannot
/// tell stays empty (`None` for the cores).
fn details(root: &Path, cpuinfo: &str) -> HostDetails {
    let field = |key: &str| {
        cpuinfo.lines().find_map(|line| {
            let (k, v) = line.split_once(':')?;
            (k.trim() == key).then(|| v.trim().to_string())
        })
    };
    let hypervisor = if cpuinfo_has_flag(cpuinfo, "hypervisor") {
        hypervisor(root).unwrap_or_else(|| "unknown".into())
    } else {
        String::new()
    };
    HostDetails {
        microcode: field("microcode").unwrap_or_default(),
        cores: cores(root),
        smt: read_or_empty(root, "sys/devices/system/cpu/smt/control"),
        hypervisor,
        resctrl: root.join("sys/fs/resctrl/info").is_dir()
            || read_or_empty(root, "proc/filesystems")
                .lines()
                .any(|l| l.split_whitespace().last() == Some("resctrl")),
    }
}

/// Physical cores: the distinct sibling lists of the online CPUs
/// (`core_cpus_list`, or its older name `thread_siblings_list`); `None`
/// when a CPU's list cannot be read.
fn cores(root: &Path) -> Option<u32> {
    let online = CpuList::parse(&read_opt(root, ONLINE)?).ok()?;
    let mut seen: Vec<String> = Vec::new();
    for cpu in online.iter() {
        let dir = format!("sys/devices/system/cpu/cpu{cpu}/topology");
        let list = read_opt(root, &format!("{dir}/core_cpus_list"))
            .or_else(|| read_opt(root, &format!("{dir}/thread_siblings_list")))?;
        if !seen.contains(&list) {
            seen.push(list);
        }
    }
    (!seen.is_empty()).then_some(seen.len() as u32)
}

/// The hypervisor by name, from what the kernel shows of it: Xen's
/// `/sys/hypervisor/type`, the firmware's vendor (DMI), or a paravirtual
/// clocksource; `None` when nothing names it.
fn hypervisor(root: &Path) -> Option<String> {
    if let Some(t) = read_opt(root, "sys/hypervisor/type").filter(|t| !t.is_empty()) {
        return Some(if t == "xen" { "Xen".into() } else { t });
    }
    let dmi = |f: &str| read_opt(root, &format!("sys/class/dmi/id/{f}")).unwrap_or_default();
    let (vendor, product) = (dmi("sys_vendor"), dmi("product_name"));
    let by_vendor = [
        ("QEMU", "KVM (QEMU)"),
        ("Microsoft Corporation", "Hyper-V"),
        ("VMware", "VMware"),
        ("innotek GmbH", "VirtualBox"),
        ("Xen", "Xen"),
        ("Amazon EC2", "KVM (Amazon EC2)"),
        ("Google", "KVM (Google Compute Engine)"),
    ];
    for (v, name) in by_vendor {
        if vendor.starts_with(v) {
            return Some(name.into());
        }
    }
    if product.starts_with("KVM") {
        return Some("KVM".into());
    }
    let sources = read_or_empty(
        root,
        "sys/devices/system/clocksource/clocksource0/available_clocksource",
    );
    let by_clock = [
        ("kvm-clock", "KVM"),
        ("hyperv_clocksource_tsc_page", "Hyper-V"),
        ("xen", "Xen"),
    ];
    by_clock
        .iter()
        .find(|(c, _)| sources.split_whitespace().any(|s| s == *c))
        .map(|(_, name)| name.to_string())
}

/// The online CPUs under `root`; fails naming the path when the file is
/// missing, empty or not in the kernel's list format.
pub fn online_cpus(root: &Path) -> Result<CpuList> {
    let path = root.join(ONLINE);
    let text = match fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) => bail!(
            "cannot read the online CPU list {}: {e}; is --sysroot the root of a Linux system with /sys mounted?",
            path.display()
        ),
    };
    match CpuList::parse(&text) {
        Ok(list) if !list.is_empty() => Ok(list),
        _ => bail!(
            "{} does not hold a CPU list (it reads {:?}); expected the kernel's format, e.g. 0-3,5",
            path.display(),
            text.trim_end()
        ),
    }
}

/// Decides the preemption model from the sources in the module doc, most
/// authoritative first. `debug_preempt` is the debugfs file's path relative
/// to the root and its text.
fn preemption_model(
    realtime: &str,
    debug_preempt: Option<(&str, &str)>,
    cmdline: &str,
    version: &str,
) -> String {
    if realtime.trim() == "1" {
        return format!("rt (/{REALTIME})");
    }
    if let Some((rel, text)) = debug_preempt {
        let current = text
            .split_whitespace()
            .find_map(|w| w.strip_prefix('(')?.strip_suffix(')'));
        if let Some(model) = current {
            return format!("{model} (/{rel})");
        }
    }
    let words: Vec<&str> = version.split_whitespace().collect();
    let has = |w: &str| words.contains(&w);
    let old_rt = words.windows(2).any(|p| p == ["PREEMPT", "RT"]);
    if has("PREEMPT_RT") || old_rt {
        return "rt (kernel version string)".into();
    }
    let dynamic = has("PREEMPT_DYNAMIC");
    if dynamic || words.is_empty() {
        if let Some(model) = cmdline_preempt(cmdline) {
            return format!("{model} (preempt= on the kernel command line)");
        }
    }
    if dynamic {
        "dynamic, model unknown (mount debugfs to read /sys/kernel/debug/sched/preempt)".into()
    } else if has("PREEMPT_LAZY") {
        "lazy (kernel version string)".into()
    } else if has("PREEMPT") {
        "full (kernel version string)".into()
    } else if words.is_empty() {
        "unknown (kernel version string unreadable)".into()
    } else {
        "none or voluntary (kernel version string)".into()
    }
}

/// The last `preempt=` model on the kernel's part of the command line (the
/// kernel lets a later parameter override an earlier one), when it names a
/// model the kernel knows.
fn cmdline_preempt(cmdline: &str) -> Option<&str> {
    cmdline
        .split_whitespace()
        .take_while(|w| *w != "--")
        .filter_map(|w| w.strip_prefix("preempt="))
        .last()
        .filter(|m| matches!(*m, "none" | "voluntary" | "full" | "lazy"))
}

/// The CPU model from `/proc/cpuinfo`: x86's `model name`, else what ARM
/// kernels print (`Model name`, the board's `Model`, the SoC's `Hardware`,
/// or the implementer and part numbers), else `unknown`.
fn cpu_model(cpuinfo: &str) -> String {
    let field = |key: &str| {
        cpuinfo.lines().find_map(|line| {
            let (k, v) = line.split_once(':')?;
            let v = v.trim();
            (k.trim() == key && !v.is_empty()).then_some(v)
        })
    };
    for key in ["model name", "Model name", "Model", "Hardware"] {
        if let Some(v) = field(key) {
            return v.to_string();
        }
    }
    match (field("CPU implementer"), field("CPU part")) {
        (Some(imp), Some(part)) => format!("CPU implementer {imp} part {part}"),
        (None, Some(part)) => format!("CPU part {part}"),
        _ => "unknown".into(),
    }
}

/// True when the first `flags` line of `/proc/cpuinfo` lists `flag`.
pub(crate) fn cpuinfo_has_flag(cpuinfo: &str, flag: &str) -> bool {
    cpuinfo
        .lines()
        .find_map(|line| {
            let (k, v) = line.split_once(':')?;
            (k.trim() == "flags").then_some(v)
        })
        .is_some_and(|flags| flags.split_whitespace().any(|f| f == flag))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{copy_fixture, fixture};

    const VM_CMDLINE: &str = "BOOT_IMAGE=/boot/vmlinuz-6.18.44-1-cloud-amd64 root=/dev/vda1 ro console=ttyS0 quiet mitigations=auto -- preempt=full";

    fn vm_snapshot() -> HostSnapshot {
        HostSnapshot {
            hostname: "vm".into(),
            kernel_release: "6.18.44-1-cloud-amd64".into(),
            kernel_version: "#1 SMP PREEMPT_DYNAMIC @0".into(),
            machine: "x86_64".into(),
            cmdline: VM_CMDLINE.into(),
            preemption:
                "dynamic, model unknown (mount debugfs to read /sys/kernel/debug/sched/preempt)"
                    .into(),
            realtime_kernel: false,
            cpu_model: "Intel(R) Xeon(R) Processor".into(),
            cpus_online: "0-1".into(),
            cpus_isolated: "".into(),
            cpus_nohz_full: "".into(),
            clocksource: "tsc".into(),
            sched_rt_runtime_us: Some(950_000),
            sched_rt_period_us: Some(1_000_000),
            virtualized: true,
            machine_id: None,
            details: Some(HostDetails {
                microcode: "0x1".into(),
                cores: Some(2),
                smt: "notsupported".into(),
                hypervisor: "unknown".into(),
                resctrl: false,
            }),
        }
    }

    #[test]
    fn vm_fixture_snapshot_is_exact() {
        assert_eq!(snapshot(&fixture("sysroot-vm")), vm_snapshot());
    }

    #[test]
    fn rt_fixture_snapshot_is_exact() {
        let expected = HostSnapshot {
            hostname: "rt-target".into(),
            kernel_release: "6.16.3+deb14-rt-amd64".into(),
            kernel_version: "#1 SMP PREEMPT_RT Debian 6.16.3-1 (2025-08-25)".into(),
            machine: "x86_64".into(),
            cmdline: "BOOT_IMAGE=/boot/vmlinuz-6.16.3+deb14-rt-amd64 root=UUID=3f1c2a9e-8d4b-4e57-9a0c-1b2d3e4f5a6b ro quiet isolcpus=2-7 nohz_full=2-7 rcu_nocbs=2-7 irqaffinity=0-1".into(),
            preemption: "rt (/sys/kernel/realtime)".into(),
            realtime_kernel: true,
            cpu_model: "Intel(R) Core(TM) i7-9700 CPU @ 3.00GHz".into(),
            cpus_online: "0-7".into(),
            cpus_isolated: "2-7".into(),
            cpus_nohz_full: "2-7".into(),
            clocksource: "tsc".into(),
            sched_rt_runtime_us: Some(-1),
            sched_rt_period_us: Some(1_000_000),
            virtualized: false,
            machine_id: None,
            details: Some(HostDetails {
                microcode: String::new(),
                cores: Some(8),
                smt: "off".into(),
                hypervisor: String::new(),
                resctrl: true,
            }),
        };
        assert_eq!(snapshot(&fixture("sysroot-rt")), expected);
    }

    #[test]
    fn debugfs_preempt_outranks_the_version_string() {
        let dir = copy_fixture("sysroot-vm");
        let sched = dir.path().join("sys/kernel/debug/sched");
        fs::create_dir_all(&sched).unwrap();
        fs::write(sched.join("preempt"), "none voluntary (full) lazy \n").unwrap();
        let expected = HostSnapshot {
            preemption: "full (/sys/kernel/debug/sched/preempt)".into(),
            ..vm_snapshot()
        };
        assert_eq!(snapshot(dir.path()), expected);
    }

    #[test]
    fn missing_arch_and_rt_sysctls_fall_back() {
        let dir = copy_fixture("sysroot-vm");
        let kernel = dir.path().join("proc/sys/kernel");
        fs::remove_file(kernel.join("arch")).unwrap();
        fs::write(kernel.join("sched_rt_runtime_us"), "garbage\n").unwrap();
        fs::remove_file(kernel.join("sched_rt_period_us")).unwrap();
        let expected = HostSnapshot {
            machine: std::env::consts::ARCH.into(),
            sched_rt_runtime_us: None,
            sched_rt_period_us: None,
            ..vm_snapshot()
        };
        assert_eq!(snapshot(dir.path()), expected);
    }

    #[test]
    fn empty_root_gives_an_empty_snapshot_without_failing() {
        let dir = tempfile::tempdir().unwrap();
        let expected = HostSnapshot {
            machine: std::env::consts::ARCH.into(),
            preemption: "unknown (kernel version string unreadable)".into(),
            cpu_model: "unknown".into(),
            details: Some(HostDetails::default()),
            ..HostSnapshot::default()
        };
        assert_eq!(snapshot(dir.path()), expected);
    }

    /// A debugfs preempt file: path relative to the root, and its text.
    type DebugFile<'a> = Option<(&'a str, &'a str)>;

    #[test]
    fn preemption_sources_in_order_of_authority() {
        let dbg = Some((
            "sys/kernel/debug/sched/preempt",
            "none voluntary (full) lazy \n",
        ));
        let old_dbg = Some(("sys/kernel/debug/sched_preempt", "none (voluntary) full \n"));
        let rt_dbg = Some(("sys/kernel/debug/sched/preempt", "full (lazy) \n"));
        let dynv = "#1 SMP PREEMPT_DYNAMIC Debian 6.12.38-1 (2025-07-16)";
        // (realtime, debugfs file, cmdline, version, expected)
        type Case<'a> = (&'a str, DebugFile<'a>, &'a str, &'a str, &'a str);
        let cases: &[Case] = &[
            (
                "1\n",
                rt_dbg,
                "",
                "#1 SMP PREEMPT_RT",
                "rt (/sys/kernel/realtime)",
            ),
            (
                "",
                dbg,
                "preempt=none",
                dynv,
                "full (/sys/kernel/debug/sched/preempt)",
            ),
            (
                "",
                old_dbg,
                "",
                dynv,
                "voluntary (/sys/kernel/debug/sched_preempt)",
            ),
            (
                "0\n",
                Some(("sys/kernel/debug/sched/preempt", "")),
                "",
                "#1 SMP PREEMPT_RT Debian",
                "rt (kernel version string)",
            ),
            (
                "",
                None,
                "",
                "#1 SMP PREEMPT RT Tue Jan 1 2019",
                "rt (kernel version string)",
            ),
            (
                "",
                None,
                "ro preempt=voluntary quiet",
                dynv,
                "voluntary (preempt= on the kernel command line)",
            ),
            (
                "",
                None,
                "preempt=none preempt=lazy",
                dynv,
                "lazy (preempt= on the kernel command line)",
            ),
            (
                "",
                None,
                "ro -- preempt=full",
                dynv,
                "dynamic, model unknown (mount debugfs to read /sys/kernel/debug/sched/preempt)",
            ),
            (
                "",
                None,
                "preempt=bogus",
                dynv,
                "dynamic, model unknown (mount debugfs to read /sys/kernel/debug/sched/preempt)",
            ),
            (
                "",
                None,
                "preempt=none",
                "#1 SMP PREEMPT Tue Jan 1 2019",
                "full (kernel version string)",
            ),
            (
                "",
                None,
                "",
                "#1 SMP PREEMPT_LAZY Tue Jan 1 2025",
                "lazy (kernel version string)",
            ),
            (
                "",
                None,
                "",
                "#1 SMP Debian 5.10.209-2 (2024-01-31)",
                "none or voluntary (kernel version string)",
            ),
            (
                "",
                None,
                "preempt=full",
                "",
                "full (preempt= on the kernel command line)",
            ),
            (
                "",
                None,
                "",
                "",
                "unknown (kernel version string unreadable)",
            ),
        ];
        for (realtime, debug, cmdline, version, expected) in cases {
            assert_eq!(
                preemption_model(realtime, *debug, cmdline, version),
                *expected,
                "realtime={realtime:?} debug={debug:?} cmdline={cmdline:?} version={version:?}"
            );
        }
    }

    #[test]
    fn cpu_model_falls_back_for_arm() {
        let pi32 = "processor\t: 0\nmodel name\t: ARMv7 Processor rev 3 (v7l)\nBogoMIPS\t: 108.00\n\nHardware\t: BCM2835\nRevision\t: c03111\nModel\t\t: Raspberry Pi 4 Model B Rev 1.1\n";
        assert_eq!(cpu_model(pi32), "ARMv7 Processor rev 3 (v7l)");
        let pi64 = "processor\t: 0\nBogoMIPS\t: 108.00\nFeatures\t: fp asimd evtstrm crc32 cpuid\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0xd08\nCPU revision\t: 3\n\nRevision\t: c03111\nModel\t\t: Raspberry Pi 4 Model B Rev 1.1\n";
        assert_eq!(cpu_model(pi64), "Raspberry Pi 4 Model B Rev 1.1");
        let soc = "processor\t: 0\nCPU part\t: 0xd03\n\nHardware\t: Allwinner sun50i Family\n";
        assert_eq!(cpu_model(soc), "Allwinner sun50i Family");
        let bare = "processor\t: 0\nCPU implementer\t: 0x41\nCPU part\t: 0xd0c\n\n";
        assert_eq!(cpu_model(bare), "CPU implementer 0x41 part 0xd0c");
        assert_eq!(
            cpu_model("processor\t: 0\nCPU part\t: 0xd0c\n"),
            "CPU part 0xd0c"
        );
        assert_eq!(cpu_model("processor\t: 0\n"), "unknown");
    }

    #[test]
    fn hypervisor_flag_must_be_a_whole_word_of_flags() {
        assert!(cpuinfo_has_flag(
            "flags\t\t: fpu hypervisor lm\n",
            "hypervisor"
        ));
        assert!(!cpuinfo_has_flag(
            "flags\t\t: fpu hypervisorx lm\n",
            "hypervisor"
        ));
        assert!(!cpuinfo_has_flag("bugs\t\t: hypervisor\n", "hypervisor"));
        assert!(!cpuinfo_has_flag("", "hypervisor"));
    }

    /// A machine id and its app-specific id for jitterlab, as systemd
    /// 252's `systemd-id128 machine-id --app-specific=MACHINE_APP_ID`
    /// printed it with the id bind-mounted over /etc/machine-id (unshare -m).
    const MACHINE: (&str, &str) = (
        "4a3f0c8e2b1d4e6f9a7b5c3d2e1f0a9b",
        "93c683ad344a4a78831f02e908650126",
    );

    #[test]
    fn the_machine_id_is_stored_hashed_as_systemd_makes_app_ids() {
        let dir = copy_fixture("sysroot-vm");
        let etc = dir.path().join("etc");
        fs::create_dir_all(&etc).unwrap();
        fs::write(etc.join("machine-id"), format!("{}\n", MACHINE.0)).unwrap();
        assert_eq!(machine_id(dir.path()).as_deref(), Some(MACHINE.1));
        let expected = HostSnapshot {
            machine_id: Some(MACHINE.1.into()),
            ..vm_snapshot()
        };
        assert_eq!(snapshot(dir.path()), expected);
        // The UUID spelling of the same id is the same machine.
        let uuid = uuid::Uuid::try_parse(MACHINE.0)
            .unwrap()
            .hyphenated()
            .to_string();
        fs::write(etc.join("machine-id"), uuid.to_uppercase()).unwrap();
        assert_eq!(machine_id(dir.path()).as_deref(), Some(MACHINE.1));
        for unusable in [
            "",
            "uninitialized\n",
            "00000000000000000000000000000000\n",
            "4a3f0c8e",
        ] {
            fs::write(etc.join("machine-id"), unusable).unwrap();
            assert_eq!(machine_id(dir.path()), None, "{unusable:?}");
        }
        fs::remove_file(etc.join("machine-id")).unwrap();
        assert_eq!(machine_id(dir.path()), None);
    }

    /// This machine's id, hashed here and by systemd itself, agree (the
    /// raw id is read, compared, and never printed).
    #[test]
    fn the_machine_id_matches_systemd_id128_on_this_machine() {
        let out = std::process::Command::new("systemd-id128")
            .args([
                "machine-id",
                &format!("--app-specific={MACHINE_APP_ID:032x}"),
            ])
            .output();
        let Some(out) = out.ok().filter(|o| o.status.success()) else {
            eprintln!(
                "skipping: systemd-id128 (Debian package systemd) or /etc/machine-id is missing"
            );
            return;
        };
        let theirs = String::from_utf8(out.stdout).unwrap();
        assert_eq!(machine_id(Path::new("/")), Some(theirs.trim().to_string()));
    }

    #[test]
    fn the_hypervisor_is_named_by_xen_dmi_or_its_clocksource() {
        let named = |files: &[(&str, &str)]| {
            let dir = copy_fixture("sysroot-vm");
            for (rel, text) in files {
                let p = dir.path().join(rel);
                fs::create_dir_all(p.parent().unwrap()).unwrap();
                fs::write(p, text).unwrap();
            }
            snapshot(dir.path()).details.unwrap().hypervisor
        };
        assert_eq!(named(&[]), "unknown");
        assert_eq!(named(&[("sys/hypervisor/type", "xen\n")]), "Xen");
        assert_eq!(
            named(&[("sys/class/dmi/id/sys_vendor", "QEMU\n")]),
            "KVM (QEMU)"
        );
        assert_eq!(
            named(&[("sys/class/dmi/id/sys_vendor", "Microsoft Corporation\n")]),
            "Hyper-V"
        );
        let clock = "sys/devices/system/clocksource/clocksource0/available_clocksource";
        assert_eq!(named(&[(clock, "tsc kvm-clock \n")]), "KVM");
        assert_eq!(named(&[(clock, "tsc hpet acpi_pm \n")]), "unknown");
        // Bare metal names none, whatever the firmware says.
        let dir = copy_fixture("sysroot-rt");
        fs::create_dir_all(dir.path().join("sys/class/dmi/id")).unwrap();
        fs::write(dir.path().join("sys/class/dmi/id/sys_vendor"), "QEMU\n").unwrap();
        assert_eq!(snapshot(dir.path()).details.unwrap().hypervisor, "");
    }

    #[test]
    fn resctrl_is_present_when_mounted_or_offered() {
        let dir = copy_fixture("sysroot-vm");
        assert!(!snapshot(dir.path()).details.unwrap().resctrl);
        fs::write(
            dir.path().join("proc/filesystems"),
            "nodev\tsysfs\nnodev\tresctrl\n",
        )
        .unwrap();
        assert!(snapshot(dir.path()).details.unwrap().resctrl);
    }

    #[test]
    fn online_cpus_reads_both_fixtures() {
        let rt = online_cpus(&fixture("sysroot-rt")).unwrap();
        assert_eq!(rt.iter().collect::<Vec<_>>(), (0..8).collect::<Vec<_>>());
        assert_eq!(
            online_cpus(&fixture("sysroot-vm")).unwrap().to_string(),
            "0-1"
        );
    }

    #[test]
    fn online_cpus_errors_name_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sys/devices/system/cpu/online");
        assert_eq!(
            online_cpus(dir.path()).unwrap_err().to_string(),
            format!(
                "cannot read the online CPU list {}: No such file or directory (os error 2); is --sysroot the root of a Linux system with /sys mounted?",
                path.display()
            )
        );
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, "0-x\n").unwrap();
        assert_eq!(
            online_cpus(dir.path()).unwrap_err().to_string(),
            format!(
                "{} does not hold a CPU list (it reads \"0-x\"); expected the kernel's format, e.g. 0-3,5",
                path.display()
            )
        );
        fs::write(&path, "\n").unwrap();
        assert_eq!(
            online_cpus(dir.path()).unwrap_err().to_string(),
            format!(
                "{} does not hold a CPU list (it reads \"\"); expected the kernel's format, e.g. 0-3,5",
                path.display()
            )
        );
    }
}
