//! Settings: reversible changes to the machine — IRQ affinity (with
//! irqbalance paused meanwhile), sysctls, the cpufreq governor and
//! frequencies, resctrl cache groups — each read, validated, applied,
//! verified and restored (design rule 4).
//!
//! A configuration is a list of [`Setting`]s. Each one
//!
//! 1. **validates** its request against the machine under the sysroot
//!    ([`Setting::validate`]) and refuses bad input — an offline CPU, a
//!    governor the driver does not offer, a frequency outside the CPU's
//!    range, a missing privilege — with a [`BadInput`](crate::error::BadInput)
//!    that names the fix, before anything is written;
//! 2. **applies** it ([`Setting::apply`]): for every file, reads the old
//!    content, journals it (`Undo::File`, fsynced to disk), and only then
//!    writes the new value with the trailing newline the kernel expects
//!    (the irqbalance pause journals each process, `Undo::Stopped`, before
//!    it sends `SIGSTOP`);
//! 3. **verifies** it by reading every value back, and says what it asked
//!    for, what it found, what it wrote and what it read back in a
//!    [`SettingReport`], which the cell's result keeps;
//! 4. **restores** it ([`Setting::restore`]): writes each old content back,
//!    newest first, and forgets the journal entry. After a crash, the
//!    journal still holds the entries, and `jitterlab restore`
//!    ([`crate::system::journal::replay`]) writes them back.
//!
//! A value that already reads as requested is not written (and not
//! journaled): writing it would change nothing but could still disturb the
//! kernel (a cpufreq governor restarts, an IRQ move is queued).
//!
//! **Failure.** An error in `apply` (the journal cannot be written, a write
//! the setting needs fails) first restores what that `apply` had written,
//! so a failed setting leaves nothing behind. A write that fails in
//! `restore` does not stop the others: it is reported as a `could not
//! restore …` line and stays journaled, so [`Journal::finish`] reports it
//! and `jitterlab restore` can try again.
//!
//! Every path is taken under the sysroot (design rule 5), so the tests run
//! against the fake trees `tests/fixtures/settings-*`, which reproduce the
//! kernel's formats, and compare the whole tree byte for byte after
//! restore.
//!
//! **Which files.** A setting writes only files on the allow-list of
//! [`files`] (the sysctls, IRQ affinity, cpufreq, fair-server and resctrl
//! files it knows, matched exactly under the sysroot): [`Writes`] refuses
//! to journal any other, and `jitterlab restore` writes nothing else back.
//! Every write and write-back opens with `O_NOFOLLOW` and never creates a
//! file.
//!
//! The design rules cited here are in `docs/design.md`.

// Not called by a command yet: `jitterlab apply` and the bench runner will;
// remove this allow when they do.

pub mod cpufreq;
pub mod irq;
pub mod irqbalance;
pub mod resctrl;
pub mod sysctl;

use std::io;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context, Result};
use jitterlab_core::units::CpuList;
use jitterlab_sys as sys;

use crate::error::bad;
use crate::system::host::online_cpus;
use crate::system::journal::undo::files;
use crate::system::journal::{Journal, Undo};
/// What a setting reports: [`jitterlab_core::cell::SettingReport`] (the
/// cell's context stores it). The four value fields use one shape per
/// setting (its module doc says which), so `before`, `applied` and
/// `verified` can be compared by eye.
pub use jitterlab_core::cell::SettingReport;

use jitterlab_core::spec::Configuration;

use self::cpufreq::{Cpufreq, CpufreqRequest};
use self::irq::IrqAffinity;
use self::irqbalance::IrqbalancePause;
use self::resctrl::CacheAllocation;
use self::sysctl::{FairServer, Sysctl};

/// One reversible change to the machine (see the module doc for the
/// contract of each step).
pub trait Setting: Send {
    /// The setting's name, as [`SettingReport::name`].
    fn name(&self) -> String;

    /// Checks the request against the machine under `root`; refuses bad
    /// input with a `BadInput` naming the fix. Writes nothing.
    fn validate(&self, root: &Path) -> Result<()>;

    /// Journals and writes the change, reads it back and reports. On error,
    /// what this call had written is restored first.
    fn apply(&mut self, root: &Path, journal: &mut Journal) -> Result<SettingReport>;

    /// Writes back every old value, newest first, forgetting each journal
    /// entry it restored; one line per value (`restored PATH to "OLD"` or
    /// `could not restore …`). `Err` only when the journal cannot be
    /// written. Restoring twice, or before `apply`, does nothing.
    fn restore(&mut self, root: &Path, journal: &mut Journal) -> Result<Vec<String>>;
}

/// Validates every setting, then applies them in order; nothing is written
/// unless all are valid. When one fails to apply, the ones applied before
/// it are restored (newest first) and its error is returned.
pub fn apply_all(
    settings: &mut [Box<dyn Setting>],
    root: &Path,
    journal: &mut Journal,
) -> Result<Vec<SettingReport>> {
    for s in settings.iter() {
        s.validate(root)?;
    }
    let mut reports = Vec::with_capacity(settings.len());
    for i in 0..settings.len() {
        match settings[i].apply(root, journal) {
            Ok(r) => reports.push(r),
            Err(e) => {
                for s in settings[..i].iter_mut().rev() {
                    let _ = s.restore(root, journal);
                }
                return Err(e);
            }
        }
    }
    Ok(reports)
}

/// Restores every setting, the last applied first; the lines of all of
/// them (see [`Setting::restore`]).
pub fn restore_all(
    settings: &mut [Box<dyn Setting>],
    root: &Path,
    journal: &mut Journal,
) -> Result<Vec<String>> {
    let mut lines = Vec::new();
    for s in settings.iter_mut().rev() {
        lines.extend(s.restore(root, journal)?);
    }
    Ok(lines)
}

/// A configuration's settings, in the order they are applied.
pub type Settings = Vec<Box<dyn Setting>>;

/// Moving every IRQ to `irq_cpus` away from the `probe` CPUs: irqbalance
/// paused first (it would move them back), then the IRQ affinity; with
/// the affinity's warnings. A configuration's `irq_cpus` and the chase's
/// `irq` role both go through here.
pub fn irq_settings(irq_cpus: &[usize], probe: CpuList) -> (Settings, Vec<String>) {
    let irq = IrqAffinity::new(irq_cpus.iter().copied().collect(), probe);
    let warnings = irq.warnings();
    let v: Settings = vec![Box::new(IrqbalancePause::new()), Box::new(irq)];
    (v, warnings)
}

/// The machine settings a configuration asks for, in the order they are
/// applied (restored in reverse), with their warnings.
///
/// - `irq_cpus` first pauses irqbalance ([`IrqbalancePause`]), which would
///   move the IRQs back, then moves them; restore moves them back before it
///   resumes irqbalance.
/// - `governor`, `min_freq` and `max_freq` are one cpufreq setting of the
///   probe CPUs.
/// - `rt_runtime_us = -1` also sets the probe CPUs' fair-server runtime to
///   0: since Linux 6.12 the fair deadline server, not only the sysctl,
///   throttles real-time tasks (on older kernels that part is a note, not a
///   change). `fair_server_runtime` sets that runtime explicitly, with or
///   without `rt_runtime_us`, and replaces the implicit 0.
pub fn config_settings(config: &Configuration) -> Result<(Settings, Vec<String>)> {
    let s = &config.settings;
    let probe: CpuList = config.probe_cpus.iter().copied().collect();
    let mut v: Vec<Box<dyn Setting>> = Vec::new();
    let mut warnings = Vec::new();
    if let Some(cpus) = &s.irq_cpus {
        let (irq, w) = irq_settings(cpus, probe.clone());
        v.extend(irq);
        warnings.extend(w);
    }
    if !s.cache.is_empty() || s.cache_default.is_some() {
        v.push(Box::new(CacheAllocation::new(
            s.cache.clone(),
            s.cache_default.clone(),
        )));
    }
    if s.governor.is_some() || s.min_freq_khz.is_some() || s.max_freq_khz.is_some() {
        v.push(Box::new(Cpufreq::new(CpufreqRequest {
            cpus: probe.clone(),
            governor: s.governor.clone(),
            min_khz: s.min_freq_khz,
            max_khz: s.max_freq_khz,
            required: true,
        })));
    }
    if let Some(t) = s.timer_migration {
        v.push(Box::new(Sysctl::new(
            "kernel.timer_migration",
            i64::from(t),
        )?));
    }
    if let Some(r) = s.rt_runtime_us {
        v.push(Box::new(Sysctl::new("kernel.sched_rt_runtime_us", r)?));
    }
    let fair_server = s
        .fair_server_runtime_ns
        .or((s.rt_runtime_us == Some(-1)).then_some(0));
    if let Some(runtime_ns) = fair_server {
        v.push(Box::new(FairServer::new(probe, runtime_ns)));
    }
    Ok((v, warnings))
}

/// One journaled write: the file, its old content, the journal entry.
#[derive(Debug, Clone)]
struct Written {
    id: u64,
    path: PathBuf,
    old: String,
}

/// The writes a setting made and has not restored yet, oldest first.
#[derive(Debug, Default)]
struct Writes(Vec<Written>);

impl Writes {
    /// Journals `old` (the content `path` holds now) and then writes
    /// `value`. The outer error is the journal's, or a file that is not on
    /// the allow-list ([`files::setting_file`]): nothing was written. The
    /// inner result is the write's own; when it failed, nothing changed, so
    /// the journal entry is dropped again.
    fn write(
        &mut self,
        journal: &mut Journal,
        path: &Path,
        old: &str,
        value: &str,
    ) -> Result<io::Result<()>> {
        if files::setting_file(journal.root(), path).is_none() {
            return Err(anyhow!(
                "refusing to change {}: it is not on the list of files jitterlab's settings write (system::journal::undo::files), so `jitterlab restore` could not put it back",
                path.display()
            ));
        }
        let id = journal.record(Undo::File {
            path: path.to_path_buf(),
            old: old.to_string(),
        })?;
        match write_value(path, value) {
            Ok(()) => {
                self.0.push(Written {
                    id,
                    path: path.to_path_buf(),
                    old: old.to_string(),
                });
                Ok(Ok(()))
            }
            Err(e) => {
                journal.done(id)?;
                Ok(Err(e))
            }
        }
    }

    /// Like [`Writes::write`], but a failed write is an error naming the
    /// file and the value.
    fn write_or_fail(
        &mut self,
        journal: &mut Journal,
        path: &Path,
        old: &str,
        value: &str,
    ) -> Result<()> {
        self.write(journal, path, old, value)?
            .with_context(|| format!("cannot write {:?} to {}", value.trim_end(), path.display()))
    }

    /// Writes every old value back, newest first (see [`Setting::restore`]).
    fn restore(&mut self, journal: &mut Journal) -> Result<Vec<String>> {
        let mut lines = Vec::new();
        let mut kept = Vec::new();
        while let Some(w) = self.0.pop() {
            match write_value(&w.path, &w.old) {
                Ok(()) => {
                    if let Err(e) = journal.done(w.id) {
                        // The value is back; its entry stays in the journal,
                        // where a replay writes the same value again. Keep
                        // what is not restored yet.
                        kept.reverse();
                        self.0.extend(kept);
                        return Err(e);
                    }
                    lines.push(format!(
                        "restored {} to {:?}",
                        w.path.display(),
                        w.old.trim_end()
                    ));
                }
                Err(e) => {
                    lines.push(format!(
                        "could not restore {} to {:?}: {e}",
                        w.path.display(),
                        w.old.trim_end()
                    ));
                    kept.push(w);
                }
            }
        }
        kept.reverse();
        self.0 = kept;
        Ok(lines)
    }

    /// Restores after a failed `apply` and hands its error back.
    fn undo_after<T>(&mut self, journal: &mut Journal, result: Result<T>) -> Result<T> {
        if result.is_err() {
            let _ = self.restore(journal);
        }
        result
    }
}

/// Writes `value` to an existing file, never through a symlink
/// ([`files::write_value`], which `jitterlab restore` uses too).
fn write_value(path: &Path, value: &str) -> io::Result<()> {
    files::write_value(path, value)
}

/// The whole content of a kernel file (its trailing newline kept), or an
/// error naming it.
fn read_value(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
}

/// Refuses a file that is missing (`missing` says what that means and what
/// to do), on a read-only file system (which no privilege makes writable:
/// `/proc/sys` in most containers), or that this process may not write
/// (`needs` says what the privilege is needed for).
fn check_writable(path: &Path, missing: &str, needs: &str) -> Result<()> {
    if !path.exists() {
        return Err(bad(format!("{} does not exist: {missing}", path.display())));
    }
    match sys::write_access(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::ReadOnlyFilesystem => Err(bad(format!(
            "cannot write {}: its file system is mounted read-only (as /proc/sys is in most containers); run jitterlab where it can be written, or remove the setting from the configuration",
            path.display()
        ))),
        Err(e) if sys::effective_uid() == 0 => Err(bad(format!(
            "cannot write {}: {e}, even as root; {needs} is not possible here",
            path.display()
        ))),
        Err(_) => Err(bad(format!(
            "cannot write {}: {needs} needs root; run jitterlab as root",
            path.display()
        ))),
    }
}

/// `CPU 2` or `CPUs 2-3`.
fn cpus_noun(list: &CpuList) -> String {
    if list.len() == 1 {
        format!("CPU {list}")
    } else {
        format!("CPUs {list}")
    }
}

/// `CPU 2 has` or `CPUs 2-3 have`: the list and the verb in the number
/// that goes with it (`one` for a single CPU, `many` otherwise).
fn cpus_phrase(list: &CpuList, one: &str, many: &str) -> String {
    let verb = if list.len() == 1 { one } else { many };
    format!("{} {verb}", cpus_noun(list))
}

/// Refuses an empty CPU list or one with CPUs that are not online under
/// `root`; `what` names the list (`IRQ CPUs`, `cpufreq CPUs`).
fn check_online(root: &Path, cpus: &CpuList, what: &str) -> Result<()> {
    let online = online_cpus(root)?;
    if cpus.is_empty() {
        return Err(bad(format!(
            "no {what} given; name at least one online CPU (online: {online})"
        )));
    }
    let offline: CpuList = cpus.iter().filter(|c| !online.contains(*c)).collect();
    if !offline.is_empty() {
        let verb = if offline.len() == 1 { "is" } else { "are" };
        return Err(bad(format!(
            "{what} must be online CPUs, but {offline} {verb} not online here (online: {online})"
        )));
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod testing {
    //! Helpers shared by the settings tests: a private journal, whole-tree
    //! snapshots, immutable files.

    use std::fs;
    use std::path::{Path, PathBuf};
    use std::process::Command;

    use jitterlab_core::units::CpuList;

    use crate::error::BadInput;
    use crate::system::journal::JOURNAL_ENV;

    /// A CPU list from the kernel's list format.
    pub fn cpus(text: &str) -> CpuList {
        CpuList::parse(text).unwrap()
    }

    /// The message of an error that must be bad input (exit 2).
    pub fn bad_text(e: anyhow::Error) -> String {
        assert!(
            e.downcast_ref::<BadInput>().is_some(),
            "not bad input: {e:#}"
        );
        e.to_string()
    }

    /// Points `JITTERLAB_JOURNAL` at a fresh temporary directory (tests that
    /// call this are `#[serial]`) and returns it with the journal path.
    pub fn journal_env() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.json");
        std::env::set_var(JOURNAL_ENV, &path);
        (dir, path)
    }

    /// Every file under `dir`, by path relative to `dir`, with its bytes;
    /// without `run/`, where jitterlab keeps its own directory under a fake
    /// sysroot (`run/jitterlab`: the machine lock), which is no setting.
    pub fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
        fn walk(base: &Path, dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
            for entry in fs::read_dir(dir).unwrap() {
                let p = entry.unwrap().path();
                if p == base.join("run") {
                    continue;
                }
                if p.is_dir() {
                    walk(base, &p, out);
                } else {
                    let rel = p.strip_prefix(base).unwrap().to_path_buf();
                    out.push((rel, fs::read(&p).unwrap()));
                }
            }
        }
        let mut out = Vec::new();
        walk(dir, dir, &mut out);
        out.sort();
        out
    }

    /// The content of `rel` under `root`.
    pub fn read(root: &Path, rel: &str) -> String {
        fs::read_to_string(root.join(rel)).unwrap()
    }

    /// Files made immutable (`chattr +i`) so that a write fails even for
    /// root, as the kernel's write to an unmovable IRQ does; the flag is
    /// cleared on drop so the temporary tree can be removed.
    pub struct Immutable(Vec<PathBuf>);

    impl Immutable {
        /// Marks `rels` under `root` immutable; `None` (after saying why)
        /// when that is not possible here: not root, or no `chattr`, or a
        /// file system without the flag.
        pub fn mark(root: &Path, rels: &[&str]) -> Option<Immutable> {
            if jitterlab_sys::effective_uid() != 0 {
                eprintln!("skipping: chattr +i needs root");
                return None;
            }
            let mut done = Immutable(Vec::new());
            for rel in rels {
                let p = root.join(rel);
                match Command::new("chattr").arg("+i").arg(&p).output() {
                    Ok(o) if o.status.success() => done.0.push(p),
                    Ok(o) => {
                        eprintln!(
                            "skipping: chattr +i {} failed: {}",
                            p.display(),
                            String::from_utf8_lossy(&o.stderr).trim()
                        );
                        return None;
                    }
                    Err(e) => {
                        eprintln!("skipping: cannot run chattr (e2fsprogs): {e}");
                        return None;
                    }
                }
            }
            Some(done)
        }
    }

    impl Drop for Immutable {
        fn drop(&mut self) {
            for p in &self.0 {
                let _ = Command::new("chattr").arg("-i").arg(p).status();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::irq::IrqAffinity;
    use super::sysctl::Sysctl;
    use super::testing::{cpus, journal_env, read, tree};
    use super::*;
    use crate::error::BadInput;
    use crate::system::host::online_cpus;
    use crate::system::journal;
    use crate::testutil::{copy_fixture, fixture};
    use serial_test::serial;
    use std::os::unix::process::ExitStatusExt;
    use std::process::Command;

    /// The environment variable that makes [`crash_child`] run, naming the
    /// tree it changes.
    const CRASH_ROOT: &str = "JITTERLAB_TEST_CRASH_ROOT";

    /// Not a test of its own: the child process of
    /// [`kill_9_after_two_settings_then_restore_gives_the_tree_back`]. It
    /// applies two settings and kills itself with SIGKILL, as `kill -9`
    /// would, leaving the journal behind.
    #[test]
    #[ignore = "run as a child process by kill_9_after_two_settings_then_restore_gives_the_tree_back"]
    fn crash_child() {
        let root = PathBuf::from(std::env::var_os(CRASH_ROOT).expect("JITTERLAB_TEST_CRASH_ROOT"));
        let mut j = Journal::begin(&root).unwrap();
        let mut settings: Vec<Box<dyn Setting>> = vec![
            Box::new(Sysctl::new("kernel.timer_migration", 0).unwrap()),
            Box::new(IrqAffinity::new(cpus("0"), cpus("1"))),
        ];
        apply_all(&mut settings, &root, &mut j).unwrap();
        jitterlab_sys::kill_process(std::process::id() as i32, jitterlab_sys::SIGKILL).unwrap();
        unreachable!("SIGKILL ends the process");
    }

    #[test]
    #[serial]
    fn kill_9_after_two_settings_then_restore_gives_the_tree_back() {
        let (_jdir, journal_path) = journal_env();
        let dir = copy_fixture("settings-vm");
        let root = dir.path();
        let child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "system::settings::tests::crash_child",
                "--ignored",
                "--test-threads=1",
                "--nocapture",
            ])
            .env(CRASH_ROOT, root)
            .env(journal::JOURNAL_ENV, &journal_path)
            .output()
            .unwrap();
        assert_eq!(
            child.status.signal(),
            Some(9),
            "the child must die of SIGKILL; it said: {}",
            String::from_utf8_lossy(&child.stderr)
        );
        assert_eq!(read(root, "proc/sys/kernel/timer_migration"), "0\n");
        assert_eq!(read(root, "proc/irq/default_smp_affinity"), "1\n");
        assert_eq!(read(root, "proc/irq/42/smp_affinity_list"), "0\n");
        assert!(journal_path.exists());

        let p = |rel: &str| root.join(rel).display().to_string();
        let mut expected: Vec<String> = ["42", "41", "36", "26", "24"]
            .iter()
            .map(|n| {
                format!(
                    "restored {} to \"0-1\"",
                    p(&format!("proc/irq/{n}/smp_affinity_list"))
                )
            })
            .collect();
        expected.push(format!(
            "restored {} to \"3\"",
            p("proc/irq/default_smp_affinity")
        ));
        expected.push(format!(
            "restored {} to \"1\"",
            p("proc/sys/kernel/timer_migration")
        ));
        assert_eq!(journal::restore(root).unwrap(), expected);
        assert_eq!(tree(root), tree(&fixture("settings-vm")));
        assert!(!journal_path.exists());
    }

    /// Timer migration, the default IRQ affinity and every IRQ's
    /// `smp_affinity_list` on the real machine, verbatim.
    fn real_values() -> Vec<(String, String)> {
        let mut paths = vec![
            "/proc/sys/kernel/timer_migration".to_string(),
            "/proc/irq/default_smp_affinity".to_string(),
        ];
        let mut irqs: Vec<usize> = std::fs::read_dir("/proc/irq")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse().ok())
            .collect();
        irqs.sort_unstable();
        paths.extend(
            irqs.iter()
                .map(|n| format!("/proc/irq/{n}/smp_affinity_list")),
        );
        paths
            .into_iter()
            .filter_map(|p| Some((p.clone(), std::fs::read_to_string(&p).ok()?)))
            .collect()
    }

    #[test]
    #[serial]
    fn real_machine_timer_migration_and_irqs_to_cpu_0_and_back() {
        if jitterlab_sys::effective_uid() != 0 {
            eprintln!("skipping: changing /proc/sys and /proc/irq needs root");
            return;
        }
        let root = Path::new("/");
        for p in [
            "proc/sys/kernel/timer_migration",
            "proc/irq/default_smp_affinity",
        ] {
            if !root.join(p).exists() {
                eprintln!("skipping: no /{p} here");
                return;
            }
        }
        let (_jdir, journal_path) = journal_env();
        // The real lock: a jitterlab running on this machine is waited for.
        let Some(mut j) = crate::system::journal::testing::on_real_root(|| Journal::begin(root))
        else {
            return;
        };
        let original = real_values();
        let probe: CpuList = online_cpus(root)
            .unwrap()
            .iter()
            .filter(|c| *c != 0)
            .collect();
        let mut settings: Vec<Box<dyn Setting>> = vec![
            Box::new(Sysctl::new("kernel.timer_migration", 0).unwrap()),
            Box::new(IrqAffinity::new(cpus("0"), probe)),
        ];
        let reports = apply_all(&mut settings, root, &mut j);
        let now = real_values();
        let lines = restore_all(&mut settings, root, &mut j).unwrap();
        let reports = reports.unwrap();
        assert!(reports.iter().all(|r| r.ok), "{reports:#?}");
        assert_eq!(reports[0].verified, "0");

        // Took effect: every IRQ on CPU 0 but those the kernel refused.
        assert_eq!(now[0].1, "0\n");
        assert_eq!(now[1].1.trim_end().trim_start_matches(['0', ',']), "1");
        let refused: Vec<&String> = reports[1]
            .notes
            .iter()
            .filter(|n| n.contains("the kernel refused to move it"))
            .collect();
        for (path, value) in &now[2..] {
            let irq = path.split('/').nth(3).unwrap();
            let listed = refused
                .iter()
                .any(|n| n.starts_with(&format!("IRQ {irq} ")));
            assert!(
                value == "0\n" || listed,
                "{path} reads {value:?} and is not listed as refused: {refused:?}"
            );
        }
        // And came back: every value as it was, nothing left journaled.
        assert_eq!(real_values(), original, "restore said: {lines:#?}");
        assert_eq!(j.pending(), 0);
        j.finish().unwrap();
        assert!(!journal_path.exists());
    }

    #[test]
    #[serial]
    fn bad_input_in_any_setting_writes_nothing() {
        let (_jdir, _) = journal_env();
        let dir = copy_fixture("settings-pc");
        let root = dir.path();
        let mut j = Journal::begin(root).unwrap();
        let mut settings: Vec<Box<dyn Setting>> = vec![
            Box::new(Sysctl::new("kernel.timer_migration", 0).unwrap()),
            Box::new(IrqAffinity::new(cpus("0,7"), cpus("2-3"))),
        ];
        let e = apply_all(&mut settings, root, &mut j).unwrap_err();
        assert!(e.downcast_ref::<BadInput>().is_some());
        assert_eq!(
            e.to_string(),
            "IRQ CPUs must be online CPUs, but 7 is not online here (online: 0-3)"
        );
        assert_eq!(tree(root), tree(&fixture("settings-pc")));
        assert_eq!(j.pending(), 0);
        j.finish().unwrap();
    }

    #[test]
    #[serial]
    fn a_failed_apply_restores_its_own_writes_and_the_settings_before_it() {
        let (_jdir, _) = journal_env();
        let dir = copy_fixture("settings-vm");
        let root = dir.path();
        let mut j = Journal::begin(root).unwrap();
        let mut settings: Vec<Box<dyn Setting>> = vec![
            Box::new(Sysctl::new("kernel.timer_migration", 0).unwrap()),
            Box::new(IrqAffinity::new(cpus("0"), cpus("1"))),
        ];
        // IRQ 36's value is not text: the IRQ setting fails after it
        // wrote the default affinity and IRQs 24 and 26.
        let irq36 = root.join("proc/irq/36/smp_affinity_list");
        std::fs::write(&irq36, b"\xff\n").unwrap();
        let e = apply_all(&mut settings, root, &mut j).unwrap_err();
        assert_eq!(
            format!("{e:#}"),
            format!(
                "cannot read {}: stream did not contain valid UTF-8",
                irq36.display()
            )
        );
        assert_eq!(j.pending(), 0);
        std::fs::write(&irq36, "0-1\n").unwrap();
        assert_eq!(tree(root), tree(&fixture("settings-vm")));
        assert_eq!(
            restore_all(&mut settings, root, &mut j).unwrap(),
            Vec::<String>::new()
        );
        j.finish().unwrap();
    }

    /// A configuration with probe CPU 3 and `settings`.
    fn configuration(settings: jitterlab_core::spec::ConfigSettings) -> Configuration {
        Configuration {
            name: "c".into(),
            probe_cpus: vec![3],
            neighbour_cpus: vec![0, 1, 2],
            policy: jitterlab_core::spec::Policy::Fifo,
            priority: Some(95),
            nice: None,
            dma_latency: true,
            settings,
        }
    }

    #[test]
    #[serial]
    fn a_configuration_applies_its_settings_in_order_and_gives_the_tree_back() {
        use jitterlab_core::spec::ConfigSettings;
        let (_jdir, _) = journal_env();
        let dir = copy_fixture("settings-pc");
        let root = dir.path();
        let (mut settings, warnings) = config_settings(&configuration(ConfigSettings {
            irq_cpus: Some(vec![0]),
            min_freq_khz: Some(2_000_000),
            max_freq_khz: Some(2_800_000),
            timer_migration: Some(false),
            fair_server_runtime_ns: Some(40_000_000),
            ..ConfigSettings::default()
        }))
        .unwrap();
        assert_eq!(warnings, Vec::<String>::new());
        let mut j = Journal::begin(root).unwrap();
        let reports = apply_all(&mut settings, root, &mut j).unwrap();
        let summary: Vec<(&str, &str)> = reports
            .iter()
            .map(|r| (r.name.as_str(), r.requested.as_str()))
            .collect();
        assert_eq!(
            summary,
            [
                ("irqbalance", "paused"),
                ("irq_affinity", "0"),
                ("cpufreq", "min 2000000 kHz, max 2800000 kHz on CPUs 3"),
                ("kernel.timer_migration", "0"),
                ("fair_server_runtime", "40000000 ns on CPUs 3"),
            ]
        );
        let policy = "sys/devices/system/cpu/cpufreq/policy2";
        assert_eq!(
            read(root, &format!("{policy}/scaling_min_freq")),
            "2000000\n"
        );
        assert_eq!(
            read(root, &format!("{policy}/scaling_max_freq")),
            "2800000\n"
        );
        assert_eq!(
            read(root, "sys/kernel/debug/sched/fair_server/cpu3/runtime"),
            "40000000\n"
        );
        restore_all(&mut settings, root, &mut j).unwrap();
        assert_eq!(tree(root), tree(&fixture("settings-pc")));
        j.finish().unwrap();
    }

    #[test]
    fn rt_runtime_off_sets_the_fair_server_to_0_unless_told_otherwise() {
        use jitterlab_core::spec::ConfigSettings;
        let names = |s: ConfigSettings| -> Vec<String> {
            config_settings(&configuration(s))
                .unwrap()
                .0
                .iter()
                .map(|s| s.name())
                .collect()
        };
        assert_eq!(
            names(ConfigSettings {
                rt_runtime_us: Some(-1),
                ..ConfigSettings::default()
            }),
            ["kernel.sched_rt_runtime_us", "fair_server_runtime"]
        );
        assert_eq!(
            names(ConfigSettings {
                rt_runtime_us: Some(950_000),
                ..ConfigSettings::default()
            }),
            ["kernel.sched_rt_runtime_us"]
        );
        assert_eq!(
            names(ConfigSettings {
                governor: Some("performance".into()),
                ..ConfigSettings::default()
            }),
            ["cpufreq"]
        );
        assert_eq!(names(ConfigSettings::default()), Vec::<String>::new());
    }

    #[test]
    #[serial]
    fn an_explicit_fair_server_runtime_replaces_the_implicit_0() {
        use jitterlab_core::spec::ConfigSettings;
        let (_jdir, _) = journal_env();
        let dir = copy_fixture("settings-pc");
        let root = dir.path();
        let mut j = Journal::begin(root).unwrap();
        for (explicit, requested) in [
            (None, "0 ns on CPUs 3"),
            (Some(40_000_000), "40000000 ns on CPUs 3"),
        ] {
            let (mut settings, _) = config_settings(&configuration(ConfigSettings {
                rt_runtime_us: Some(-1),
                fair_server_runtime_ns: explicit,
                ..ConfigSettings::default()
            }))
            .unwrap();
            let reports = apply_all(&mut settings, root, &mut j).unwrap();
            assert_eq!(reports[1].requested, requested);
            restore_all(&mut settings, root, &mut j).unwrap();
        }
        assert_eq!(tree(root), tree(&fixture("settings-pc")));
        j.finish().unwrap();
    }

    fn fs_remove_and_make_dir(p: &Path) {
        std::fs::remove_file(p).unwrap();
        std::fs::create_dir(p).unwrap();
    }

    #[test]
    #[serial]
    fn a_value_that_cannot_be_restored_stays_journaled() {
        let (_jdir, _) = journal_env();
        let dir = copy_fixture("settings-vm");
        let root = dir.path();
        let mut j = Journal::begin(root).unwrap();
        let mut s = Sysctl::new("kernel.timer_migration", 0).unwrap();
        s.apply(root, &mut j).unwrap();
        let path = root.join("proc/sys/kernel/timer_migration");
        fs_remove_and_make_dir(&path);
        assert_eq!(
            s.restore(root, &mut j).unwrap(),
            vec![format!(
                "could not restore {} to \"1\": Is a directory (os error 21)",
                path.display()
            )]
        );
        assert_eq!(j.pending(), 1);
        std::fs::remove_dir(&path).unwrap();
        std::fs::write(&path, "0\n").unwrap();
        assert_eq!(
            s.restore(root, &mut j).unwrap(),
            vec![format!("restored {} to \"1\"", path.display())]
        );
        assert_eq!(j.pending(), 0);
        assert_eq!(s.restore(root, &mut j).unwrap(), Vec::<String>::new());
        assert_eq!(tree(root), tree(&fixture("settings-vm")));
        j.finish().unwrap();
    }
}
