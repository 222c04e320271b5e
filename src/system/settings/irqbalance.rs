//! Pausing irqbalance while a configuration moves IRQs.
//!
//! irqbalance rewrites `/proc/irq/N/smp_affinity` every few seconds to
//! spread interrupts over all CPUs, so it would undo the IRQ affinity of a
//! configuration (`irq_cpus`) in the middle of a cell and put interrupts
//! back on the probe CPUs. Stopping its service is the user's decision and
//! outlives jitterlab; pausing the process is not: [`IrqbalancePause`]
//! sends every running irqbalance `SIGSTOP` before the IRQs are moved and
//! `SIGCONT` after they are restored (a configuration applies it just
//! before the IRQ setting, and restore runs in reverse order). A stopped
//! irqbalance keeps its state and simply carries on when resumed.
//!
//! **Finding it.** A process is irqbalance when its `/proc/PID/comm` under
//! the sysroot reads `irqbalance` ([`find`], which `jitterlab check` uses
//! too). Signals go to live processes, which are never under a sysroot
//! (see [`crate::system::procs`]): a pid is only signalled when the real
//! `/proc/PID/comm` names irqbalance as well, so a fake tree cannot make
//! jitterlab stop an unrelated process. A process that is already stopped
//! (someone else paused it) is left as it is and not resumed later.
//!
//! **Journal first.** Each process is journaled ([`Undo::Stopped`], with
//! its start time) *before* the signal, so `jitterlab restore` resumes it
//! after a `kill -9` — but only while the pid still belongs to the process
//! that was stopped (same start time). The stop is verified by reading the
//! state `T` from `/proc/PID/stat`; the resume by reading a state other
//! than `T`.
//!
//! Report shape: `requested` is `paused`; `before`, `applied` and
//! `verified` are `pid N STATE` per process (`applied`: `SIGSTOP to pid
//! N`), joined by `, `; all three read `not running` when there is none.

use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::path::Path;
use std::time::Duration;

use anyhow::{anyhow, Result};
use jitterlab_sys as sys;

use super::{Setting, SettingReport};
use crate::error::bad;
use crate::system::host::read_opt;
use crate::system::journal::{resume_stopped, Journal, Undo};
use crate::system::procs::{read_stat, wait_for};

/// The command name irqbalance runs under.
pub const COMM: &str = "irqbalance";

/// How long [`IrqbalancePause`] waits for a stopped process to show `T`.
const STOP_WAIT: Duration = Duration::from_secs(2);

/// What a scan of `/proc` under a sysroot found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// How many processes `/proc` lists (0 means the tree has no process
    /// table, as fake trees do).
    pub processes: usize,
    /// The pids whose `comm` is `irqbalance`, ascending.
    pub pids: Vec<i32>,
}

/// The irqbalance processes listed under `root/proc` (by `/proc/PID/comm`);
/// an error when `/proc` cannot be listed.
pub fn find(root: &Path) -> io::Result<Found> {
    let mut found = Found {
        processes: 0,
        pids: Vec::new(),
    };
    for entry in fs::read_dir(root.join("proc"))?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        found.processes += 1;
        if read_opt(root, &format!("proc/{pid}/comm"))
            .as_deref()
            .map(str::trim)
            == Some(COMM)
        {
            found.pids.push(pid);
        }
    }
    found.pids.sort_unstable();
    Ok(found)
}

/// True when the live process `pid` (real `/proc`) is irqbalance.
fn is_live_irqbalance(pid: i32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == COMM)
}

/// One process this setting stopped and has not resumed yet.
#[derive(Debug, Clone, Copy)]
struct Paused {
    /// The journal entry.
    id: u64,
    pid: i32,
    start_ticks: u64,
}

/// Pauses every running irqbalance (see the module doc).
#[derive(Debug, Default)]
pub struct IrqbalancePause {
    /// When set, only these pids are considered (tests: never stop a
    /// process the test did not start).
    among: Option<BTreeSet<i32>>,
    /// Stopped and not yet resumed, oldest first.
    paused: Vec<Paused>,
}

impl IrqbalancePause {
    /// The setting: pauses every irqbalance process.
    pub fn new() -> IrqbalancePause {
        IrqbalancePause::default()
    }

    /// The setting limited to `pids` (the ones a test started).
    #[cfg(test)]
    pub fn among(pids: impl IntoIterator<Item = i32>) -> IrqbalancePause {
        IrqbalancePause {
            among: Some(pids.into_iter().collect()),
            paused: Vec::new(),
        }
    }

    /// The live irqbalance processes to pause: found under `root`, among
    /// the allowed pids, and irqbalance in the real `/proc` too.
    fn candidates(&self, root: &Path) -> io::Result<Vec<i32>> {
        Ok(find(root)?
            .pids
            .into_iter()
            .filter(|p| self.among.as_ref().is_none_or(|a| a.contains(p)))
            .filter(|p| is_live_irqbalance(*p))
            .collect())
    }

    /// Resumes what this setting stopped, newest first (see
    /// [`Setting::restore`]).
    fn resume_all(&mut self, journal: &mut Journal) -> Result<Vec<String>> {
        let mut lines = Vec::new();
        let mut kept = Vec::new();
        while let Some(p) = self.paused.pop() {
            let (line, handled) = resume_stopped(p.pid, p.start_ticks, COMM);
            lines.push(line);
            if !handled {
                kept.push(p);
                continue;
            }
            if let Err(e) = journal.done(p.id) {
                kept.reverse();
                self.paused.extend(kept);
                return Err(e);
            }
        }
        kept.reverse();
        self.paused = kept;
        Ok(lines)
    }

    /// Stops every candidate, journaling each first, and fills in the
    /// report.
    fn pause(
        &mut self,
        pids: &[i32],
        journal: &mut Journal,
        report: &mut SettingReport,
    ) -> Result<()> {
        let (mut before, mut applied, mut verified) = (Vec::new(), Vec::new(), Vec::new());
        for &pid in pids {
            let Some(stat) = read_stat(pid).filter(|s| s.is_alive()) else {
                report.notes.push(format!(
                    "{COMM} (pid {pid}) ended before it could be paused"
                ));
                continue;
            };
            before.push(format!("pid {pid} {}", stat.state));
            if stat.state == 'T' {
                report.notes.push(format!(
                    "{COMM} (pid {pid}) is already stopped; left as it is (and not resumed afterwards)"
                ));
                verified.push(format!("pid {pid} T"));
                continue;
            }
            let id = journal.record(Undo::Stopped {
                pid,
                start_ticks: stat.start_ticks,
                comm: COMM.to_string(),
            })?;
            if let Err(e) = sys::kill_process(pid, sys::SIGSTOP) {
                journal.done(id)?;
                if read_stat(pid).filter(|s| s.is_alive()).is_none() {
                    report.notes.push(format!(
                        "{COMM} (pid {pid}) ended before it could be paused"
                    ));
                    before.pop();
                    continue;
                }
                return Err(anyhow!("cannot stop {COMM} (pid {pid}) with SIGSTOP: {e}"));
            }
            self.paused.push(Paused {
                id,
                pid,
                start_ticks: stat.start_ticks,
            });
            applied.push(format!("SIGSTOP to pid {pid}"));
            match wait_for(pid, STOP_WAIT, |s| s.state == 'T') {
                Some(s) => {
                    if s.state != 'T' {
                        report.ok = false;
                        report.notes.push(format!(
                            "{COMM} (pid {pid}) did not stop: its state is still {}",
                            s.state
                        ));
                    }
                    verified.push(format!("pid {pid} {}", s.state));
                }
                None => verified.push(format!("pid {pid} gone")),
            }
        }
        let join = |v: Vec<String>| {
            if v.is_empty() {
                "not running".to_string()
            } else {
                v.join(", ")
            }
        };
        report.before = join(before);
        report.applied = if applied.is_empty() {
            "nothing".to_string()
        } else {
            applied.join(", ")
        };
        report.verified = join(verified);
        Ok(())
    }
}

impl Setting for IrqbalancePause {
    fn name(&self) -> String {
        COMM.to_string()
    }

    fn validate(&self, root: &Path) -> Result<()> {
        for pid in self.candidates(root).unwrap_or_default() {
            if let Err(e) = sys::kill_process(pid, 0) {
                if e.kind() == io::ErrorKind::PermissionDenied {
                    return Err(bad(format!(
                        "cannot pause {COMM} (pid {pid}) while IRQs are moved: signalling it needs root; run jitterlab as root"
                    )));
                }
            }
        }
        Ok(())
    }

    fn apply(&mut self, root: &Path, journal: &mut Journal) -> Result<SettingReport> {
        let mut report = SettingReport {
            name: self.name(),
            requested: "paused".into(),
            before: "not running".into(),
            applied: "nothing".into(),
            verified: "not running".into(),
            ok: true,
            notes: Vec::new(),
        };
        let pids = match self.candidates(root) {
            Ok(pids) => pids,
            Err(e) => {
                report.notes.push(format!(
                    "cannot list {} ({e}): an irqbalance, if one runs, is not paused",
                    root.join("proc").display()
                ));
                return Ok(report);
            }
        };
        if pids.is_empty() {
            report
                .notes
                .push(format!("{COMM} is not running: nothing to pause"));
            return Ok(report);
        }
        if let Err(e) = self.pause(&pids, journal, &mut report) {
            let _ = self.resume_all(journal);
            return Err(e);
        }
        Ok(report)
    }

    fn restore(&mut self, _root: &Path, journal: &mut Journal) -> Result<Vec<String>> {
        self.resume_all(journal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::journal;
    use crate::system::settings::testing::{journal_env, tree};
    use crate::testutil::{copy_fixture, fixture};
    use serial_test::serial;
    use std::os::unix::fs::PermissionsExt;
    use std::process::{Child, Command};

    /// A copy of `sleep` named `irqbalance` (so its comm is `irqbalance`),
    /// started by the test; resumed, killed and reaped on drop.
    struct FakeIrqbalance {
        _dir: tempfile::TempDir,
        child: Child,
    }

    impl FakeIrqbalance {
        /// Starts one; `None` (after saying why) without a `sleep` binary.
        fn start() -> Option<FakeIrqbalance> {
            let Some(sleep) = ["/bin/sleep", "/usr/bin/sleep"]
                .into_iter()
                .find(|p| Path::new(p).exists())
            else {
                eprintln!("skipping: no /bin/sleep (coreutils) to copy");
                return None;
            };
            let dir = tempfile::tempdir().unwrap();
            let exe = dir.path().join(COMM);
            fs::copy(sleep, &exe).unwrap();
            fs::set_permissions(&exe, fs::Permissions::from_mode(0o755)).unwrap();
            // Another test thread that forks while the copy is open for
            // writing makes exec fail with ETXTBSY for a moment: retry.
            let mut tries = 0;
            let child = loop {
                match Command::new(&exe).arg("100").spawn() {
                    Ok(c) => break c,
                    Err(e) if e.kind() == io::ErrorKind::ExecutableFileBusy && tries < 100 => {
                        tries += 1;
                        std::thread::sleep(Duration::from_millis(10));
                    }
                    Err(e) => panic!("cannot start {}: {e}", exe.display()),
                }
            };
            let fake = FakeIrqbalance { _dir: dir, child };
            // Wait until it sleeps, so that `before` reads S.
            wait_for(fake.pid(), STOP_WAIT, |s| s.state == 'S');
            Some(fake)
        }

        fn pid(&self) -> i32 {
            self.child.id() as i32
        }

        fn state(&self) -> char {
            read_stat(self.pid()).unwrap().state
        }
    }

    impl Drop for FakeIrqbalance {
        fn drop(&mut self) {
            let _ = sys::kill_process(self.pid(), sys::SIGCONT);
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    /// Makes the journal at `path` look as if its owner had died.
    fn kill_owner(path: &Path) {
        let mut doc: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap();
        let ticks = doc["owner_start_ticks"].as_u64().unwrap();
        doc["owner_start_ticks"] = (ticks + 1).into();
        fs::write(path, serde_json::to_string(&doc).unwrap()).unwrap();
    }

    #[test]
    fn find_reads_comm_under_the_sysroot() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "proc/1/comm", "systemd\n");
        write(root, "proc/812/comm", "irqbalance\n");
        write(root, "proc/90/comm", "irqbalance-ui\n");
        write(root, "proc/irq/24/smp_affinity_list", "0-1\n");
        write(root, "proc/77/stat", "77 (x) S\n");
        assert_eq!(
            find(root).unwrap(),
            Found {
                processes: 4,
                pids: vec![812],
            }
        );
        assert_eq!(
            find(&root.join("nothing")).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
    }

    #[test]
    #[serial]
    fn not_running_is_a_report_and_changes_nothing() {
        let (jdir, _) = journal_env();
        let dir = copy_fixture("settings-vm");
        let root = dir.path();
        let mut j = Journal::begin(jdir.path()).unwrap();
        let mut s = IrqbalancePause::new();
        s.validate(root).unwrap();
        assert_eq!(
            s.apply(root, &mut j).unwrap(),
            SettingReport {
                name: "irqbalance".into(),
                requested: "paused".into(),
                before: "not running".into(),
                applied: "nothing".into(),
                verified: "not running".into(),
                ok: true,
                notes: vec!["irqbalance is not running: nothing to pause".into()],
            }
        );
        assert_eq!(j.pending(), 0);
        assert_eq!(s.restore(root, &mut j).unwrap(), Vec::<String>::new());
        assert_eq!(tree(root), tree(&fixture("settings-vm")));
        j.finish().unwrap();
    }

    #[test]
    #[serial]
    fn a_fake_tree_cannot_stop_a_process_that_is_not_irqbalance() {
        let (_jdir, _) = journal_env();
        let mut other = Command::new("sleep").arg("100").spawn().unwrap();
        let pid = other.id() as i32;
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), &format!("proc/{pid}/comm"), "irqbalance\n");
        let mut j = Journal::begin(dir.path()).unwrap();
        let mut s = IrqbalancePause::among([pid]);
        let report = s.apply(dir.path(), &mut j).unwrap();
        assert_eq!(
            (
                report.before.as_str(),
                report.applied.as_str(),
                report.notes
            ),
            (
                "not running",
                "nothing",
                vec!["irqbalance is not running: nothing to pause".to_string()]
            )
        );
        assert_ne!(read_stat(pid).unwrap().state, 'T');
        assert_eq!(j.pending(), 0);
        j.finish().unwrap();
        other.kill().unwrap();
        other.wait().unwrap();
    }

    #[test]
    #[serial]
    fn a_running_irqbalance_is_stopped_then_resumed() {
        let Some(fake) = FakeIrqbalance::start() else {
            return;
        };
        let (jdir, journal_path) = journal_env();
        let pid = fake.pid();
        let root = Path::new("/");
        let mut j = Journal::begin(jdir.path()).unwrap();
        let mut s = IrqbalancePause::among([pid]);
        s.validate(root).unwrap();
        assert_eq!(
            s.apply(root, &mut j).unwrap(),
            SettingReport {
                name: "irqbalance".into(),
                requested: "paused".into(),
                before: format!("pid {pid} S"),
                applied: format!("SIGSTOP to pid {pid}"),
                verified: format!("pid {pid} T"),
                ok: true,
                notes: vec![],
            }
        );
        assert_eq!(fake.state(), 'T');
        assert_eq!(j.pending(), 1);
        let doc: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(&journal_path).unwrap()).unwrap();
        assert_eq!(
            doc["entries"],
            serde_json::json!([{
                "id": 1,
                "kind": "stopped",
                "pid": pid,
                "start_ticks": read_stat(pid).unwrap().start_ticks,
                "comm": "irqbalance",
            }])
        );
        assert_eq!(
            s.restore(root, &mut j).unwrap(),
            vec![format!("resumed irqbalance (pid {pid})")]
        );
        assert_ne!(fake.state(), 'T');
        assert_eq!(j.pending(), 0);
        // Restoring twice does nothing.
        assert_eq!(s.restore(root, &mut j).unwrap(), Vec::<String>::new());
        j.finish().unwrap();
        assert!(!journal_path.exists());
    }

    #[test]
    #[serial]
    fn after_a_crash_restore_resumes_it() {
        let Some(fake) = FakeIrqbalance::start() else {
            return;
        };
        let (jdir, journal_path) = journal_env();
        let pid = fake.pid();
        let root = Path::new("/");
        let mut j = Journal::begin(jdir.path()).unwrap();
        let mut s = IrqbalancePause::among([pid]);
        assert!(s.apply(root, &mut j).unwrap().ok);
        assert_eq!(fake.state(), 'T');
        // The process dies without restoring: its state is gone, the
        // journal stays.
        drop(s);
        drop(j);
        kill_owner(&journal_path);
        assert_eq!(
            journal::restore(jdir.path()).unwrap(),
            vec![format!("resumed irqbalance (pid {pid})")]
        );
        assert_ne!(fake.state(), 'T');
        assert!(!journal_path.exists());
    }

    #[test]
    #[serial]
    fn restore_leaves_a_reused_pid_stopped_and_alone() {
        let Some(fake) = FakeIrqbalance::start() else {
            return;
        };
        let (jdir, journal_path) = journal_env();
        let pid = fake.pid();
        let ticks = read_stat(pid).unwrap().start_ticks;
        sys::kill_process(pid, sys::SIGSTOP).unwrap();
        assert_eq!(
            wait_for(pid, STOP_WAIT, |s| s.state == 'T').unwrap().state,
            'T'
        );
        let mut j = Journal::begin(jdir.path()).unwrap();
        // An older irqbalance whose pid this process got.
        j.record(Undo::Stopped {
            pid,
            start_ticks: ticks - 1,
            comm: COMM.into(),
        })
        .unwrap();
        drop(j);
        kill_owner(&journal_path);
        assert_eq!(
            journal::restore(jdir.path()).unwrap(),
            vec![format!(
                "left pid {pid} alone: it now belongs to another process (started at tick {ticks}, the stopped irqbalance at tick {})",
                ticks - 1
            )]
        );
        assert_eq!(fake.state(), 'T');
        assert!(!journal_path.exists());
    }

    #[test]
    #[serial]
    fn an_irqbalance_stopped_by_someone_else_is_left_stopped() {
        let Some(fake) = FakeIrqbalance::start() else {
            return;
        };
        let (jdir, _) = journal_env();
        let pid = fake.pid();
        sys::kill_process(pid, sys::SIGSTOP).unwrap();
        wait_for(pid, STOP_WAIT, |s| s.state == 'T');
        let root = Path::new("/");
        let mut j = Journal::begin(jdir.path()).unwrap();
        let mut s = IrqbalancePause::among([pid]);
        assert_eq!(
            s.apply(root, &mut j).unwrap(),
            SettingReport {
                name: "irqbalance".into(),
                requested: "paused".into(),
                before: format!("pid {pid} T"),
                applied: "nothing".into(),
                verified: format!("pid {pid} T"),
                ok: true,
                notes: vec![format!(
                    "irqbalance (pid {pid}) is already stopped; left as it is (and not resumed afterwards)"
                )],
            }
        );
        assert_eq!(j.pending(), 0);
        assert_eq!(s.restore(root, &mut j).unwrap(), Vec::<String>::new());
        assert_eq!(fake.state(), 'T');
        j.finish().unwrap();
    }

    #[test]
    #[serial]
    fn a_process_that_ended_is_not_resumed() {
        let (jdir, journal_path) = journal_env();
        let mut gone = Command::new("true").spawn().unwrap();
        let pid = gone.id() as i32;
        gone.wait().unwrap();
        let mut j = Journal::begin(jdir.path()).unwrap();
        j.record(Undo::Stopped {
            pid,
            start_ticks: 1,
            comm: COMM.into(),
        })
        .unwrap();
        drop(j);
        kill_owner(&journal_path);
        assert_eq!(
            journal::restore(jdir.path()).unwrap(),
            vec![format!("irqbalance (pid {pid}) had ended")]
        );
    }
}
