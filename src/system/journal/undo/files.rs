//! The files jitterlab's settings write — one allow-list, consulted by the
//! settings before they journal a write ([`crate::system::settings::Writes`]) and by
//! `jitterlab restore` before it writes a journaled value back
//! ([`crate::system::journal`]).
//!
//! **Why.** `restore` runs as root and writes whatever old value a journal
//! entry holds to the path the entry names. A hand-made or planted entry
//! must not turn that into "write anything anywhere": only a file that a
//! setting can have changed is written back, and anything else is refused
//! with the reason and kept for a person to look at. Because the settings
//! refuse to journal a file this list does not know, a new setting cannot
//! forget to add its files here: its first test fails until it does.
//!
//! **What.** Paths under the sysroot, matched lexically, component by
//! component (no `canonicalize`, so a symlink cannot launder a path; a
//! `..` or `.` component never matches):
//!
//! | path under the sysroot | setting |
//! |---|---|
//! | `proc/sys/kernel/timer_migration`, `proc/sys/kernel/sched_rt_runtime_us` | [`crate::system::settings::sysctl::Sysctl`] |
//! | `proc/irq/default_smp_affinity`, `proc/irq/N/smp_affinity_list` | [`crate::system::settings::irq::IrqAffinity`] |
//! | `sys/devices/system/cpu/cpufreq/policyN/F`, `sys/devices/system/cpu/cpuN/cpufreq/F`, F = `scaling_governor`, `scaling_min_freq`, `scaling_max_freq` | [`crate::system::settings::cpufreq::Cpufreq`] |
//! | `sys/kernel/debug/sched/fair_server/cpuN/runtime` | [`crate::system::settings::sysctl::FairServer`] |
//! | `sys/fs/resctrl/schemata` | [`crate::system::settings::resctrl::CacheAllocation`] |
//! | `sys/fs/cgroup/M/jitterlab-ctr-X/F`, F = `cpu.rt_period_us`, `cpu.rt_runtime_us`, X = 16 hex digits | the containers' real-time parent cgroup ([`crate::system::container`]) |
//!
//! N is a decimal number as the kernel writes it (no sign, no leading
//! zero). Writing goes through [`write_value`], which opens with
//! `O_NOFOLLOW` and never creates a file, so a symlink put in place of a
//! kernel file is refused rather than followed (the directories above it
//! are the kernel's own under `/`; under a fake sysroot they are the
//! caller's tree).
//!
//! **Gone.** Some of these files belong to something that can disappear
//! while the journal waits: an IRQ (its `proc/irq/N`), a cpufreq policy, a
//! CPU's fair server, resctrl (unmounting it resets its schemata), the
//! containers' parent cgroup. When
//! that has happened, the change went with it and there is nothing to put
//! back: [`SettingFile::is_gone`] says so, so that `restore` can drop the
//! entry instead of keeping it for ever. A sysctl or the default IRQ mask
//! never goes.
//!
//! **Below the settings.** The journal's restore consults this list, and
//! the settings journal every write, so this module must not depend on
//! the settings: the paths it matches ([`CPU_DIR`], [`IRQ_DIR`],
//! [`IRQ_DEFAULT`], [`FAIR_SERVER`], [`SYSCTL_NAMES`]) are defined here,
//! and the settings take them from here.

use std::fs::{self, OpenOptions};
use std::io::{self, ErrorKind, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

use jitterlab_sys as sys;

use super::container::{PARENT_PREFIX, RT_FILES};
use super::resctrl::RESCTRL;

/// The sysctls [`crate::system::settings::sysctl::Sysctl`] sets (its `NAMES`).
pub(crate) const SYSCTL_NAMES: [&str; 2] = ["kernel.timer_migration", "kernel.sched_rt_runtime_us"];
/// The IRQ directory of procfs.
pub(crate) const IRQ_DIR: &str = "proc/irq";
/// The CPUs new IRQs start on (hex mask).
pub(crate) const IRQ_DEFAULT: &str = "proc/irq/default_smp_affinity";
/// The CPU directory of sysfs.
pub(crate) const CPU_DIR: &str = "sys/devices/system/cpu";
/// The fair deadline server's per-CPU directories.
pub(crate) const FAIR_SERVER: &str = "sys/kernel/debug/sched/fair_server";

/// Where the cgroup hierarchies are mounted.
const CGROUP_DIR: &str = "sys/fs/cgroup";

/// The cpufreq files [`crate::system::settings::cpufreq::Cpufreq`] writes in a policy.
const CPUFREQ_FILES: [&str; 3] = ["scaling_governor", "scaling_min_freq", "scaling_max_freq"];

/// A file on the allow-list (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingFile {
    /// What the file holds, for messages: `kernel.timer_migration`, `IRQ
    /// 36's affinity`.
    pub what: String,
    /// `(anchor, base)`: the file's owner is gone when `anchor` no longer
    /// exists while `base` (the file system it lives in) still does.
    gone: Option<(PathBuf, PathBuf)>,
}

impl SettingFile {
    /// True when what the file belongs to no longer exists (an IRQ that
    /// was freed, a policy or fair server of a CPU that went away, resctrl
    /// unmounted), so the change it held went with it.
    pub fn is_gone(&self) -> bool {
        let Some((anchor, base)) = &self.gone else {
            return false;
        };
        let missing = matches!(fs::metadata(anchor), Err(e) if e.kind() == ErrorKind::NotFound);
        missing && base.is_dir()
    }
}

/// The allow-list entry of `path`, a file under `root`, or `None` when no
/// jitterlab setting writes it (module doc).
pub fn setting_file(root: &Path, path: &Path) -> Option<SettingFile> {
    let rel = path.strip_prefix(root).ok()?;
    let parts: Vec<&str> = rel
        .components()
        .map(|c| match c {
            Component::Normal(s) => s.to_str(),
            _ => None,
        })
        .collect::<Option<_>>()?;
    let file = |what: String, gone: Option<(&str, &str)>| {
        Some(SettingFile {
            what,
            gone: gone.map(|(a, b)| (root.join(a), root.join(b))),
        })
    };
    if let Some(rest) = under(&parts, "proc/sys") {
        let name = rest.join(".");
        return SYSCTL_NAMES
            .contains(&name.as_str())
            .then(|| file(name, None))
            .flatten();
    }
    if parts == split(IRQ_DEFAULT) {
        return file("the default IRQ affinity".into(), None);
    }
    if let Some([n, "smp_affinity_list"]) = under(&parts, IRQ_DIR) {
        let n = number(n)?;
        let anchor = format!("{IRQ_DIR}/{n}");
        return file(format!("IRQ {n}'s affinity"), Some((&anchor, IRQ_DIR)));
    }
    if let Some(rest) = under(&parts, CPU_DIR) {
        let (anchor, name, f) = match rest {
            ["cpufreq", policy, f] => {
                let n = number(policy.strip_prefix("policy")?)?;
                (
                    format!("{CPU_DIR}/cpufreq/{policy}"),
                    format!("policy{n}"),
                    f,
                )
            }
            [cpu, "cpufreq", f] => {
                let n = number(cpu.strip_prefix("cpu")?)?;
                (format!("{CPU_DIR}/{cpu}/cpufreq"), format!("CPU {n}"), f)
            }
            _ => return None,
        };
        if !CPUFREQ_FILES.contains(f) {
            return None;
        }
        return file(format!("cpufreq {name}'s {f}"), Some((&anchor, CPU_DIR)));
    }
    if let Some([cpu, "runtime"]) = under(&parts, FAIR_SERVER) {
        let n = number(cpu.strip_prefix("cpu")?)?;
        let anchor = format!("{FAIR_SERVER}/{cpu}");
        return file(
            format!("CPU {n}'s fair-server runtime"),
            Some((&anchor, FAIR_SERVER)),
        );
    }
    if let Some([mount, group, f]) = under(&parts, CGROUP_DIR) {
        if !crate::system::has_shape(group, PARENT_PREFIX) || !RT_FILES.contains(f) {
            return None;
        }
        let anchor = format!("{CGROUP_DIR}/{mount}/{group}");
        let base = format!("{CGROUP_DIR}/{mount}");
        return file(
            format!("the container cgroup {group}'s {f}"),
            Some((&anchor, &base)),
        );
    }
    if let Some(["schemata"]) = under(&parts, RESCTRL) {
        let anchor = format!("{RESCTRL}/info");
        return file(
            "resctrl's default schemata".into(),
            Some((&anchor, RESCTRL)),
        );
    }
    None
}

/// The components of a relative path constant.
fn split(rel: &'static str) -> Vec<&'static str> {
    rel.split('/').collect()
}

/// What follows `prefix` (a relative path constant) in `parts`.
fn under<'a>(parts: &'a [&'a str], prefix: &'static str) -> Option<&'a [&'a str]> {
    let prefix = split(prefix);
    parts.strip_prefix(prefix.as_slice())
}

/// `text` when it is a decimal number as the kernel writes one.
fn number(text: &str) -> Option<&str> {
    let canonical = text.parse::<u32>().is_ok_and(|n| n.to_string() == text);
    canonical.then_some(text)
}

/// Writes `value` to an existing file in one `write` (sysfs and procfs take
/// a value in one call); truncates it, which procfs and sysfs ignore and a
/// fake tree needs. Never creates a file, and never writes through a
/// symlink (`O_NOFOLLOW`: `ELOOP`, see [`is_symlink_error`]).
pub fn write_value(path: &Path, value: &str) -> io::Result<()> {
    let mut f = OpenOptions::new()
        .write(true)
        .truncate(true)
        .custom_flags(sys::O_NOFOLLOW)
        .open(path)?;
    f.write_all(value.as_bytes())
}

/// The whole content of a file, not through a symlink (`O_NOFOLLOW`).
pub fn read_nofollow(path: &Path) -> io::Result<String> {
    let mut f = OpenOptions::new()
        .read(true)
        .custom_flags(sys::O_NOFOLLOW)
        .open(path)?;
    let mut text = String::new();
    f.read_to_string(&mut text)?;
    Ok(text)
}

/// True for the error an `O_NOFOLLOW` open gives for a symlink.
pub fn is_symlink_error(e: &io::Error) -> bool {
    e.raw_os_error() == Some(sys::ELOOP)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn what(root: &Path, rel: &str) -> Option<String> {
        setting_file(root, &root.join(rel)).map(|f| f.what)
    }

    #[test]
    fn every_file_a_setting_writes_is_on_the_list_and_nothing_else() {
        for root in [Path::new("/"), Path::new("/tmp/fake root")] {
            let accepted = [
                ("proc/sys/kernel/timer_migration", "kernel.timer_migration"),
                (
                    "proc/sys/kernel/sched_rt_runtime_us",
                    "kernel.sched_rt_runtime_us",
                ),
                ("proc/irq/default_smp_affinity", "the default IRQ affinity"),
                ("proc/irq/0/smp_affinity_list", "IRQ 0's affinity"),
                ("proc/irq/36/smp_affinity_list", "IRQ 36's affinity"),
                (
                    "sys/devices/system/cpu/cpufreq/policy2/scaling_governor",
                    "cpufreq policy2's scaling_governor",
                ),
                (
                    "sys/devices/system/cpu/cpufreq/policy0/scaling_min_freq",
                    "cpufreq policy0's scaling_min_freq",
                ),
                (
                    "sys/devices/system/cpu/cpu3/cpufreq/scaling_max_freq",
                    "cpufreq CPU 3's scaling_max_freq",
                ),
                (
                    "sys/kernel/debug/sched/fair_server/cpu1/runtime",
                    "CPU 1's fair-server runtime",
                ),
                ("sys/fs/resctrl/schemata", "resctrl's default schemata"),
                (
                    "sys/fs/cgroup/cpu/jitterlab-ctr-0123456789abcdef/cpu.rt_runtime_us",
                    "the container cgroup jitterlab-ctr-0123456789abcdef's cpu.rt_runtime_us",
                ),
                (
                    "sys/fs/cgroup/cpu,cpuacct/jitterlab-ctr-0123456789abcdef/cpu.rt_period_us",
                    "the container cgroup jitterlab-ctr-0123456789abcdef's cpu.rt_period_us",
                ),
            ];
            for (rel, w) in accepted {
                assert_eq!(what(root, rel).as_deref(), Some(w), "{rel}");
            }
            let refused = [
                "etc/passwd",
                "proc/sys/kernel/core_pattern",
                "proc/sys/kernel/timer_migration/x",
                "proc/sys/kernel",
                "proc/irq/36/smp_affinity",
                "proc/irq/036/smp_affinity_list",
                "proc/irq/+1/smp_affinity_list",
                "proc/irq/x/smp_affinity_list",
                "proc/irq/36/../../../etc/passwd",
                "proc/irq/../irq/36/smp_affinity_list",
                "proc/./sys/kernel/timer_migration/..",
                "sys/devices/system/cpu/cpufreq/policy2/scaling_setspeed",
                "sys/devices/system/cpu/cpufreq/boost",
                "sys/devices/system/cpu/cpu3/online",
                "sys/devices/system/cpu/cpux/cpufreq/scaling_governor",
                "sys/kernel/debug/sched/fair_server/cpu1/period",
                "sys/fs/resctrl/rt/schemata",
                "sys/fs/resctrl/tasks",
                "sys/fs/cgroup/cpu/cpu.rt_runtime_us",
                "sys/fs/cgroup/cpu/libpod_parent/cpu.rt_runtime_us",
                "sys/fs/cgroup/cpu/jitterlab-ctr-0123456789abcdef/cpu.shares",
                "sys/fs/cgroup/cpu/jitterlab-ctr-0123456789ABCDEF/cpu.rt_runtime_us",
                "sys/fs/cgroup/cpu/jitterlab-ctr-0123456789abcdef/x/cpu.rt_runtime_us",
                "",
            ];
            for rel in refused {
                assert_eq!(what(root, rel), None, "{rel}");
            }
        }
        // Outside the sysroot, or relative where the root is absolute.
        let root = Path::new("/tmp/fake");
        for p in [
            "/proc/sys/kernel/timer_migration",
            "/tmp/fake/../fake/proc/sys/kernel/timer_migration",
            "proc/sys/kernel/timer_migration",
            "/tmp/fakeproc/sys/kernel/timer_migration",
        ] {
            assert_eq!(setting_file(root, Path::new(p)), None, "{p}");
        }
    }

    #[test]
    fn a_file_is_gone_when_its_irq_policy_cpu_or_mount_is() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let f = |rel: &str| setting_file(root, &root.join(rel)).unwrap();
        let irq = f("proc/irq/36/smp_affinity_list");
        // No proc/irq at all: not a tree where IRQs could be gone.
        assert!(!irq.is_gone());
        fs::create_dir_all(root.join("proc/irq/35")).unwrap();
        assert!(irq.is_gone());
        fs::create_dir_all(root.join("proc/irq/36")).unwrap();
        assert!(!irq.is_gone());

        let schemata = f("sys/fs/resctrl/schemata");
        fs::create_dir_all(root.join("sys/fs/resctrl")).unwrap();
        assert!(schemata.is_gone(), "resctrl unmounted");
        fs::create_dir_all(root.join("sys/fs/resctrl/info")).unwrap();
        assert!(!schemata.is_gone());

        let runtime = f("sys/kernel/debug/sched/fair_server/cpu1/runtime");
        assert!(!runtime.is_gone(), "debugfs not mounted: keep it");
        fs::create_dir_all(root.join("sys/kernel/debug/sched/fair_server/cpu0")).unwrap();
        assert!(runtime.is_gone());

        let policy = f("sys/devices/system/cpu/cpufreq/policy2/scaling_governor");
        let cpu = f("sys/devices/system/cpu/cpu2/cpufreq/scaling_governor");
        fs::create_dir_all(root.join("sys/devices/system/cpu/cpufreq/policy0")).unwrap();
        assert!(policy.is_gone() && cpu.is_gone());
        fs::create_dir_all(root.join("sys/devices/system/cpu/cpufreq/policy2")).unwrap();
        fs::create_dir_all(root.join("sys/devices/system/cpu/cpu2")).unwrap();
        std::os::unix::fs::symlink(
            "../cpufreq/policy2",
            root.join("sys/devices/system/cpu/cpu2/cpufreq"),
        )
        .unwrap();
        assert!(!policy.is_gone() && !cpu.is_gone());

        for rel in [
            "proc/sys/kernel/timer_migration",
            "proc/irq/default_smp_affinity",
        ] {
            assert!(!f(rel).is_gone(), "{rel} never goes");
        }
    }

    #[test]
    fn values_are_never_written_through_a_symlink_nor_to_a_new_file() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        fs::write(&victim, "precious\n").unwrap();
        let link = dir.path().join("smp_affinity_list");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let e = write_value(&link, "0\n").unwrap_err();
        assert!(is_symlink_error(&e), "{e}");
        assert!(is_symlink_error(&read_nofollow(&link).unwrap_err()));
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");

        let new = dir.path().join("new");
        assert_eq!(
            write_value(&new, "0\n").unwrap_err().kind(),
            ErrorKind::NotFound
        );
        assert!(!new.exists());

        write_value(&victim, "0-1\n").unwrap();
        assert_eq!(read_nofollow(&victim).unwrap(), "0-1\n");
    }
}
