//! The scheduler knobs a real-time measurement turns: timer migration and
//! real-time throttling.
//!
//! - [`Sysctl`] sets `kernel.timer_migration` (`0` keeps a CPU's timers on
//!   that CPU instead of moving them onto busy ones, such as the probe's)
//!   or `kernel.sched_rt_runtime_us` (`-1` turns real-time throttling off:
//!   by default a real-time task may use 950 ms of every second, and a
//!   busy-looping probe would be stopped for the rest). They are files
//!   under `/proc/sys/kernel/`, written as a decimal number and a newline.
//!   Only these two names are accepted: a configuration never chooses a
//!   path.
//! - [`FairServer`] sets the runtime of the fair deadline server, which on
//!   kernels since 6.12 reserves time for normal tasks on each CPU in place
//!   of classic throttling: `/sys/kernel/debug/sched/fair_server/cpuN/runtime`
//!   in nanoseconds per `…/period` (50 ms per 1 s by default; 0 turns it
//!   off). It lives in debugfs, which may not be mounted or readable (it is
//!   root-only); then the setting changes nothing and says so in a note.
//!   On a kernel older than 6.12 there is no fair server, and the note says
//!   that `kernel.sched_rt_runtime_us` alone throttles.
//!
//! Report shapes: a sysctl reports its bare value in every field
//! (`requested` `0`, `before` `1`, …); the fair server reports
//! `cpuN=RUNTIME` per CPU, space-separated, and `requested` is
//! `RUNTIME ns on CPUs LIST`.

use std::path::{Path, PathBuf};

use anyhow::Result;
use jitterlab_core::units::CpuList;

use super::{check_online, check_writable, read_value, Setting, SettingReport, Writes};
use crate::error::bad;
use crate::system::host::read_opt;
use crate::system::journal::undo::files::{FAIR_SERVER, SYSCTL_NAMES};
use crate::system::journal::Journal;

/// The sysctls [`Sysctl`] may set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    TimerMigration,
    SchedRtRuntimeUs,
}

impl Key {
    fn name(self) -> &'static str {
        match self {
            Key::TimerMigration => "kernel.timer_migration",
            Key::SchedRtRuntimeUs => "kernel.sched_rt_runtime_us",
        }
    }

    /// The file under the sysroot.
    fn rel(self) -> &'static str {
        match self {
            Key::TimerMigration => "proc/sys/kernel/timer_migration",
            Key::SchedRtRuntimeUs => "proc/sys/kernel/sched_rt_runtime_us",
        }
    }
}

/// The real-time period the runtime is a share of.
const RT_PERIOD: &str = "proc/sys/kernel/sched_rt_period_us";
/// The kernel release, to tell a kernel without a fair server.
const OSRELEASE: &str = "proc/sys/kernel/osrelease";

/// One of the sysctls `kernel.timer_migration` and
/// `kernel.sched_rt_runtime_us`, set to an integer.
#[derive(Debug)]
pub struct Sysctl {
    key: Key,
    value: i64,
    writes: Writes,
}

impl Sysctl {
    /// The names [`Sysctl::new`] accepts.
    pub const NAMES: [&'static str; 2] = SYSCTL_NAMES;

    /// The request `name = value`; an unknown name is bad input.
    pub fn new(name: &str, value: i64) -> Result<Sysctl> {
        let key = match name {
            "kernel.timer_migration" => Key::TimerMigration,
            "kernel.sched_rt_runtime_us" => Key::SchedRtRuntimeUs,
            _ => {
                return Err(bad(format!(
                    "unknown sysctl {name:?}; jitterlab sets {}",
                    Self::NAMES.join(" and ")
                )))
            }
        };
        Ok(Sysctl {
            key,
            value,
            writes: Writes::default(),
        })
    }
}

impl Setting for Sysctl {
    fn name(&self) -> String {
        self.key.name().to_string()
    }

    fn validate(&self, root: &Path) -> Result<()> {
        let (name, v) = (self.key.name(), self.value);
        match self.key {
            Key::TimerMigration if !(0..=1).contains(&v) => {
                return Err(bad(format!("{name} must be 0 or 1, not {v}")));
            }
            Key::SchedRtRuntimeUs if v < -1 => {
                return Err(bad(format!(
                    "{name} must be -1 (no real-time throttling) or a runtime in microseconds, not {v}"
                )));
            }
            Key::SchedRtRuntimeUs => {
                let period = read_opt(root, RT_PERIOD).and_then(|p| p.trim().parse::<i64>().ok());
                if let Some(period) = period.filter(|p| v > *p) {
                    return Err(bad(format!(
                        "{name}={v} exceeds kernel.sched_rt_period_us ({period}); give -1 (no throttling) or at most {period}"
                    )));
                }
            }
            Key::TimerMigration => {}
        }
        check_writable(
            &root.join(self.key.rel()),
            &format!("this kernel has no {name}; remove it from the configuration"),
            &format!("setting {name}"),
        )
    }

    fn apply(&mut self, root: &Path, journal: &mut Journal) -> Result<SettingReport> {
        let path = root.join(self.key.rel());
        let result = apply_sysctl(&mut self.writes, journal, &path, self.value);
        let (before, verified) = self.writes.undo_after(journal, result)?;
        Ok(SettingReport {
            name: self.name(),
            requested: self.value.to_string(),
            ok: verified.parse::<i64>() == Ok(self.value),
            before,
            applied: self.value.to_string(),
            verified,
            notes: Vec::new(),
        })
    }

    fn restore(&mut self, _root: &Path, journal: &mut Journal) -> Result<Vec<String>> {
        self.writes.restore(journal)
    }
}

/// Writes `value` to the sysctl file `path` unless it holds it already;
/// returns the value before and the value read back.
fn apply_sysctl(
    writes: &mut Writes,
    journal: &mut Journal,
    path: &Path,
    value: i64,
) -> Result<(String, String)> {
    let old = read_value(path)?;
    let before = old.trim_end().to_string();
    if before.parse::<i64>() != Ok(value) {
        writes.write_or_fail(journal, path, &old, &format!("{value}\n"))?;
    }
    let verified = read_value(path)?.trim_end().to_string();
    Ok((before, verified))
}

/// The fair deadline server's runtime on some CPUs (kernels since 6.12).
#[derive(Debug)]
pub struct FairServer {
    cpus: CpuList,
    runtime_ns: u64,
    writes: Writes,
}

impl FairServer {
    /// The request: `runtime_ns` (0 turns the server off) on `cpus`.
    pub fn new(cpus: CpuList, runtime_ns: u64) -> FairServer {
        FairServer {
            cpus,
            runtime_ns,
            writes: Writes::default(),
        }
    }

    /// `…/fair_server/cpuN/FILE` under `root`.
    fn file(root: &Path, cpu: usize, file: &str) -> PathBuf {
        root.join(format!("{FAIR_SERVER}/cpu{cpu}/{file}"))
    }

    /// Why the fair server cannot be set here, and whether that means the
    /// request is not in effect (`false`: a kernel that has no fair server
    /// needs none).
    fn unavailable(root: &Path) -> (String, bool) {
        let release = read_opt(root, OSRELEASE).unwrap_or_default();
        match kernel_version(&release) {
            Some(v) if v < (6, 12) => (
                format!(
                    "this kernel ({release}) predates the fair deadline server (6.12): kernel.sched_rt_runtime_us alone throttles real-time tasks"
                ),
                true,
            ),
            _ => (
                format!(
                    "cannot set the fair deadline server: {} is not there (debugfs not mounted or not readable; as root: mount -t debugfs none /sys/kernel/debug)",
                    root.join(FAIR_SERVER).display()
                ),
                false,
            ),
        }
    }
}

impl Setting for FairServer {
    fn name(&self) -> String {
        "fair_server_runtime".into()
    }

    fn validate(&self, root: &Path) -> Result<()> {
        check_online(root, &self.cpus, "fair server CPUs")?;
        if !root.join(FAIR_SERVER).is_dir() {
            return Ok(());
        }
        for cpu in self.cpus.iter() {
            let runtime = Self::file(root, cpu, "runtime");
            if !runtime.exists() {
                continue;
            }
            let period_path = Self::file(root, cpu, "period");
            let period = std::fs::read_to_string(&period_path)
                .ok()
                .and_then(|p| p.trim().parse::<u64>().ok());
            if let Some(period) = period.filter(|p| self.runtime_ns > *p) {
                return Err(bad(format!(
                    "fair server runtime {} ns exceeds CPU {cpu}'s period of {period} ns ({}); give at most {period}",
                    self.runtime_ns,
                    period_path.display()
                )));
            }
            check_writable(
                &runtime,
                "the CPU has no fair server",
                "setting the fair deadline server",
            )?;
        }
        Ok(())
    }

    fn apply(&mut self, root: &Path, journal: &mut Journal) -> Result<SettingReport> {
        let mut report = SettingReport {
            name: self.name(),
            requested: format!("{} ns on CPUs {}", self.runtime_ns, self.cpus),
            before: String::new(),
            applied: String::new(),
            verified: String::new(),
            ok: true,
            notes: Vec::new(),
        };
        if !root.join(FAIR_SERVER).is_dir() {
            let (note, ok) = Self::unavailable(root);
            report.notes.push(note);
            report.ok = ok;
            return Ok(report);
        }
        let result = self.apply_cpus(root, journal, &mut report);
        self.writes.undo_after(journal, result)?;
        Ok(report)
    }

    fn restore(&mut self, _root: &Path, journal: &mut Journal) -> Result<Vec<String>> {
        self.writes.restore(journal)
    }
}

impl FairServer {
    /// Writes the runtime of every CPU that has a fair server and fills in
    /// the report.
    fn apply_cpus(
        &mut self,
        root: &Path,
        journal: &mut Journal,
        report: &mut SettingReport,
    ) -> Result<()> {
        let want = self.runtime_ns.to_string();
        let (mut before, mut applied, mut verified) = (Vec::new(), Vec::new(), Vec::new());
        for cpu in self.cpus.iter() {
            let path = Self::file(root, cpu, "runtime");
            if !path.exists() {
                report.notes.push(format!(
                    "CPU {cpu} has no fair server ({} is missing)",
                    path.display()
                ));
                report.ok = false;
                continue;
            }
            let old = read_value(&path)?;
            let was = old.trim_end().to_string();
            if was != want {
                self.writes
                    .write_or_fail(journal, &path, &old, &format!("{want}\n"))?;
            }
            let now = read_value(&path)?.trim_end().to_string();
            report.ok &= now == want;
            before.push(format!("cpu{cpu}={was}"));
            applied.push(format!("cpu{cpu}={want}"));
            verified.push(format!("cpu{cpu}={now}"));
        }
        report.before = before.join(" ");
        report.applied = applied.join(" ");
        report.verified = verified.join(" ");
        Ok(())
    }
}

/// `(major, minor)` of a kernel release such as `6.12.48+deb13-amd64`.
fn kernel_version(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.trim().split(['.', '-', '+']);
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::settings::testing::{bad_text, cpus, journal_env, read, tree};
    use crate::testutil::{copy_fixture, fixture};
    use serial_test::serial;
    use std::fs;

    #[test]
    #[serial]
    fn timer_migration_off_and_back() {
        let (_jdir, _) = journal_env();
        let dir = copy_fixture("settings-pc");
        let root = dir.path();
        let mut j = Journal::begin(root).unwrap();
        let mut s = Sysctl::new("kernel.timer_migration", 0).unwrap();
        s.validate(root).unwrap();
        let report = s.apply(root, &mut j).unwrap();
        assert_eq!(
            report,
            SettingReport {
                name: "kernel.timer_migration".into(),
                requested: "0".into(),
                before: "1".into(),
                applied: "0".into(),
                verified: "0".into(),
                ok: true,
                notes: vec![],
            }
        );
        assert_eq!(read(root, "proc/sys/kernel/timer_migration"), "0\n");
        assert_eq!(j.pending(), 1);
        let path = root.join("proc/sys/kernel/timer_migration");
        assert_eq!(
            s.restore(root, &mut j).unwrap(),
            vec![format!("restored {} to \"1\"", path.display())]
        );
        assert_eq!(tree(root), tree(&fixture("settings-pc")));
        j.finish().unwrap();
    }

    #[test]
    #[serial]
    fn rt_throttling_off_and_back() {
        let (_jdir, _) = journal_env();
        let dir = copy_fixture("settings-pc");
        let root = dir.path();
        let mut j = Journal::begin(root).unwrap();
        let mut s = Sysctl::new("kernel.sched_rt_runtime_us", -1).unwrap();
        s.validate(root).unwrap();
        let report = s.apply(root, &mut j).unwrap();
        assert_eq!(
            (
                report.before.as_str(),
                report.applied.as_str(),
                report.verified.as_str(),
                report.ok
            ),
            ("950000", "-1", "-1", true)
        );
        assert_eq!(read(root, "proc/sys/kernel/sched_rt_runtime_us"), "-1\n");
        s.restore(root, &mut j).unwrap();
        assert_eq!(tree(root), tree(&fixture("settings-pc")));
        j.finish().unwrap();
    }

    #[test]
    #[serial]
    fn a_value_already_in_place_is_not_written() {
        let (_jdir, _) = journal_env();
        let dir = copy_fixture("settings-pc");
        let root = dir.path();
        let mut j = Journal::begin(root).unwrap();
        let mut s = Sysctl::new("kernel.sched_rt_runtime_us", 950_000).unwrap();
        let report = s.apply(root, &mut j).unwrap();
        assert_eq!(
            (report.before, report.verified, report.ok),
            ("950000".into(), "950000".into(), true)
        );
        assert_eq!(j.pending(), 0);
        assert_eq!(s.restore(root, &mut j).unwrap(), Vec::<String>::new());
        j.finish().unwrap();
    }

    #[test]
    fn sysctl_bad_input() {
        let root = fixture("settings-pc");
        assert_eq!(
            bad_text(Sysctl::new("kernel.panic", 0).unwrap_err()),
            "unknown sysctl \"kernel.panic\"; jitterlab sets kernel.timer_migration and kernel.sched_rt_runtime_us"
        );
        let v = |name: &str, value: i64| Sysctl::new(name, value).unwrap().validate(&root);
        assert_eq!(
            bad_text(v("kernel.timer_migration", 2).unwrap_err()),
            "kernel.timer_migration must be 0 or 1, not 2"
        );
        assert_eq!(
            bad_text(v("kernel.sched_rt_runtime_us", -2).unwrap_err()),
            "kernel.sched_rt_runtime_us must be -1 (no real-time throttling) or a runtime in microseconds, not -2"
        );
        assert_eq!(
            bad_text(v("kernel.sched_rt_runtime_us", 1_000_001).unwrap_err()),
            "kernel.sched_rt_runtime_us=1000001 exceeds kernel.sched_rt_period_us (1000000); give -1 (no throttling) or at most 1000000"
        );
        v("kernel.sched_rt_runtime_us", 1_000_000).unwrap();
        v("kernel.timer_migration", 1).unwrap();

        let dir = copy_fixture("settings-pc");
        fs::remove_file(dir.path().join("proc/sys/kernel/timer_migration")).unwrap();
        assert_eq!(
            bad_text(
                Sysctl::new("kernel.timer_migration", 0)
                    .unwrap()
                    .validate(dir.path())
                    .unwrap_err()
            ),
            format!(
                "{}/proc/sys/kernel/timer_migration does not exist: this kernel has no kernel.timer_migration; remove it from the configuration",
                dir.path().display()
            )
        );
    }

    #[test]
    #[serial]
    fn fair_server_off_on_two_cpus_and_back() {
        let (_jdir, _) = journal_env();
        let dir = copy_fixture("settings-pc");
        let root = dir.path();
        let mut j = Journal::begin(root).unwrap();
        let mut s = FairServer::new(cpus("2-3"), 0);
        s.validate(root).unwrap();
        let report = s.apply(root, &mut j).unwrap();
        assert_eq!(
            report,
            SettingReport {
                name: "fair_server_runtime".into(),
                requested: "0 ns on CPUs 2-3".into(),
                before: "cpu2=50000000 cpu3=50000000".into(),
                applied: "cpu2=0 cpu3=0".into(),
                verified: "cpu2=0 cpu3=0".into(),
                ok: true,
                notes: vec![],
            }
        );
        let fs = "sys/kernel/debug/sched/fair_server";
        assert_eq!(read(root, &format!("{fs}/cpu2/runtime")), "0\n");
        assert_eq!(read(root, &format!("{fs}/cpu3/runtime")), "0\n");
        assert_eq!(read(root, &format!("{fs}/cpu1/runtime")), "50000000\n");
        let p = |c: u32| {
            root.join(format!("{fs}/cpu{c}/runtime"))
                .display()
                .to_string()
        };
        assert_eq!(
            s.restore(root, &mut j).unwrap(),
            vec![
                format!("restored {} to \"50000000\"", p(3)),
                format!("restored {} to \"50000000\"", p(2)),
            ]
        );
        assert_eq!(tree(root), tree(&fixture("settings-pc")));
        j.finish().unwrap();
    }

    #[test]
    #[serial]
    fn fair_server_without_debugfs_or_on_an_old_kernel_is_a_note() {
        let (_jdir, _) = journal_env();
        let dir = copy_fixture("settings-vm");
        let root = dir.path();
        let mut j = Journal::begin(root).unwrap();
        let mut s = FairServer::new(cpus("1"), 0);
        s.validate(root).unwrap();
        let report = s.apply(root, &mut j).unwrap();
        assert_eq!(
            report,
            SettingReport {
                name: "fair_server_runtime".into(),
                requested: "0 ns on CPUs 1".into(),
                before: String::new(),
                applied: String::new(),
                verified: String::new(),
                ok: false,
                notes: vec![format!(
                    "cannot set the fair deadline server: {}/sys/kernel/debug/sched/fair_server is not there (debugfs not mounted or not readable; as root: mount -t debugfs none /sys/kernel/debug)",
                    root.display()
                )],
            }
        );
        fs::write(root.join(OSRELEASE), "6.1.0-37-amd64\n").unwrap();
        let report = s.apply(root, &mut j).unwrap();
        assert!(report.ok);
        assert_eq!(
            report.notes,
            vec!["this kernel (6.1.0-37-amd64) predates the fair deadline server (6.12): kernel.sched_rt_runtime_us alone throttles real-time tasks".to_string()]
        );
        assert_eq!(j.pending(), 0);
        j.finish().unwrap();
    }

    #[test]
    #[serial]
    fn fair_server_missing_for_one_cpu_is_not_ok() {
        let (_jdir, _) = journal_env();
        let dir = copy_fixture("settings-pc");
        let root = dir.path();
        fs::remove_dir_all(root.join(FAIR_SERVER).join("cpu3")).unwrap();
        let mut j = Journal::begin(root).unwrap();
        let mut s = FairServer::new(cpus("2-3"), 10_000_000);
        s.validate(root).unwrap();
        let report = s.apply(root, &mut j).unwrap();
        assert_eq!(
            (report.before.as_str(), report.verified.as_str(), report.ok),
            ("cpu2=50000000", "cpu2=10000000", false)
        );
        assert_eq!(
            report.notes,
            vec![format!(
                "CPU 3 has no fair server ({}/cpu3/runtime is missing)",
                root.join(FAIR_SERVER).display()
            )]
        );
        s.restore(root, &mut j).unwrap();
        assert_eq!(
            read(root, &format!("{FAIR_SERVER}/cpu2/runtime")),
            "50000000\n"
        );
        j.finish().unwrap();
    }

    #[test]
    fn fair_server_bad_input() {
        let root = fixture("settings-pc");
        assert_eq!(
            bad_text(FairServer::new(cpus("1"), 1_000_000_001).validate(&root).unwrap_err()),
            format!(
                "fair server runtime 1000000001 ns exceeds CPU 1's period of 1000000000 ns ({}/cpu1/period); give at most 1000000000",
                root.join(FAIR_SERVER).display()
            )
        );
        assert_eq!(
            bad_text(FairServer::new(cpus("3-5"), 0).validate(&root).unwrap_err()),
            "fair server CPUs must be online CPUs, but 4-5 are not online here (online: 0-3)"
        );
        assert_eq!(
            bad_text(
                FairServer::new(CpuList::default(), 0)
                    .validate(&root)
                    .unwrap_err()
            ),
            "no fair server CPUs given; name at least one online CPU (online: 0-3)"
        );
    }

    #[test]
    fn kernel_versions() {
        assert_eq!(kernel_version("6.12.48+deb13-amd64"), Some((6, 12)));
        assert_eq!(kernel_version("6.1.0-37-amd64\n"), Some((6, 1)));
        assert_eq!(kernel_version("5.15-rc1"), Some((5, 15)));
        assert_eq!(kernel_version("6"), None);
        assert_eq!(kernel_version(""), None);
    }
}
