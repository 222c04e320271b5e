//! A cgroup per cell for its neighbours, so that stopping the cell — or
//! `jitterlab restore` after a `kill -9` — ends the whole tree of processes
//! they started, even those that left the neighbour's process group.
//!
//! **Why.** A neighbour's process group and its parent-death signal reach
//! the leader and the workers that stay in the group; a worker that calls
//! `setsid` or `setpgid` (hackbench's, a user's script running `setsid`)
//! leaves the group, and the parent-death signal reaches only the direct
//! child. A cgroup holds every descendant, whatever it does with its process
//! group, and the kernel can kill it as a whole.
//!
//! **Which hierarchy** ([`find`], from `/proc/self/mountinfo`):
//!
//! - **cgroup v2**, wherever it is mounted — `/sys/fs/cgroup` on a unified
//!   machine, `/sys/fs/cgroup/unified` on a hybrid one. No controller is
//!   needed: a v2 group can always be killed (`cgroup.kill`, Linux ≥ 5.14;
//!   on older kernels it is frozen with `cgroup.freeze` when it has that,
//!   Linux ≥ 5.2, and every pid in `cgroup.procs` is sent `SIGKILL`, until
//!   none is left). The group is made at the top of the hierarchy: a
//!   controller enabled there (a systemd machine's `cpu`, `memory`) then
//!   applies to it with its defaults (no limit, weight 100).
//! - else the **v1 `freezer`**: the group is frozen (`freezer.state` =
//!   `FROZEN`), every task is sent `SIGKILL`, the group is thawed so they
//!   can die, until none is left.
//! - **never the v1 `cpu` or `cpuset` controllers**, nor a freezer mounted
//!   together with them: a new v1 `cpu` group has no real-time budget, a
//!   `cpuset` group needs CPUs and memory nodes before it takes a task.
//!
//! Where no hierarchy is usable (no cgroup file system, or not writable:
//! not root), neighbours are contained by their process group alone, as
//! before; the bench says so once, in its plan.
//!
//! **Joining.** A neighbour joins its group before it `exec`s: the group's
//! `cgroup.procs` is opened in the parent, and the child writes `0` to it
//! between `fork` and `exec` ([`jitterlab_sys::join_cgroup_before_exec`]),
//! so nothing it forks is ever outside the group.
//!
//! **Journaled.** [`CellGroup::create`] journals the group
//! ([`Undo::Cgroup`]) before its `mkdir`; [`CellGroup::stop`] kills what is
//! left in it, removes it and forgets the entry.
//! [`crate::system::journal::undo::cgroup::undo`] does the same for `jitterlab
//! restore`, and only for a directory named `jitterlab-` + 16 hex digits
//! directly under the mount point of a cgroup v2 or v1 freezer hierarchy
//! mounted now — nothing else is touched. The killing and removing itself,
//! and what the journal's replay needs of it, live in
//! [`crate::system::journal::undo::cgroup`], below the journal.
//!
//! **A fake `--sysroot`** does not apply: cgroups are live kernel objects,
//! like the processes they hold (which the journal looks up in the real
//! `/proc`), so the real `/proc/self/mountinfo` and the real cgroup file
//! systems are used even when the settings go to a fake tree.

use std::fs::{self, OpenOptions};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{anyhow, Result};
use jitterlab_sys as sys;

use crate::system::journal::undo::cgroup::{
    cgroup_mounts, kill_and_remove, CgroupMount, Kind, MOUNTINFO, PREFIX,
};
use crate::system::journal::{Journal, Undo};

/// A mounted cgroup hierarchy neighbours can be contained in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hierarchy {
    /// Its mount point, where the cells' groups are made.
    pub mount: PathBuf,
    /// Its kind.
    pub kind: Kind,
}

impl Hierarchy {
    /// For the plan: "cgroup v2 at /sys/fs/cgroup/unified".
    pub fn describe(&self) -> String {
        match self.kind {
            Kind::V2 => format!("cgroup v2 at {}", self.mount.display()),
            Kind::V1Freezer => format!("the cgroup v1 freezer at {}", self.mount.display()),
        }
    }
}

/// The hierarchy neighbours are contained in on this machine (see the
/// module doc), or why there is none ("no cgroup v2 or v1 freezer is
/// mounted", "… is not writable (not root)").
pub fn find() -> std::result::Result<Hierarchy, String> {
    let text =
        fs::read_to_string(MOUNTINFO).map_err(|e| format!("cannot read {MOUNTINFO}: {e}"))?;
    choose(&cgroup_mounts(&text), sys::can_write)
}

/// The first writable v2 mount, else the first writable v1 freezer.
fn choose(
    mounts: &[CgroupMount],
    writable: impl Fn(&Path) -> bool,
) -> std::result::Result<Hierarchy, String> {
    let mut unwritable = None;
    for kind in [Kind::V2, Kind::V1Freezer] {
        for m in mounts.iter().filter(|m| m.kind == Some(kind)) {
            let h = Hierarchy {
                mount: m.mount.clone(),
                kind,
            };
            if writable(&m.mount) {
                return Ok(h);
            }
            unwritable.get_or_insert(h);
        }
    }
    Err(match unwritable {
        Some(h) => format!(
            "{} is not writable by jitterlab (run as root)",
            h.describe()
        ),
        None => "no cgroup v2 and no cgroup v1 freezer is mounted".into(),
    })
}

/// The cgroup of one cell's neighbours, journaled until [`CellGroup::stop`].
#[derive(Debug)]
pub struct CellGroup {
    path: PathBuf,
    kind: Kind,
    journal_id: Option<u64>,
}

impl CellGroup {
    /// Makes a fresh group `jitterlab-<16 hex digits>` at the top of `h`,
    /// journaled before the `mkdir` (a name that exists is drawn again).
    pub fn create(h: &Hierarchy, journal: &mut Journal) -> Result<CellGroup> {
        for _ in 0..32 {
            let path = h
                .mount
                .join(format!("{PREFIX}{}", crate::system::random_suffix()));
            let id = journal.record(Undo::Cgroup { path: path.clone() })?;
            match fs::create_dir(&path) {
                Ok(()) => {
                    return Ok(CellGroup {
                        path,
                        kind: h.kind,
                        journal_id: Some(id),
                    })
                }
                Err(e) => {
                    journal.done(id)?;
                    if e.kind() != ErrorKind::AlreadyExists {
                        return Err(anyhow!(
                            "cannot create a cgroup for the neighbours in {}: {e}",
                            h.mount.display()
                        ));
                    }
                }
            }
        }
        Err(anyhow!(
            "cannot create a cgroup for the neighbours in {}: every name drawn was taken",
            h.mount.display()
        ))
    }

    #[cfg(test)]
    /// The group's directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Makes the child `cmd` starts join this group before it `exec`s:
    /// opens `cgroup.procs` now, in the parent.
    pub fn join_before_exec(&self, cmd: &mut Command) -> Result<()> {
        let procs = self.path.join("cgroup.procs");
        let file = OpenOptions::new()
            .write(true)
            .open(&procs)
            .map_err(|e| anyhow!("cannot open {} to add a neighbour: {e}", procs.display()))?;
        sys::join_cgroup_before_exec(cmd, file);
        Ok(())
    }

    /// Kills every process left in the group, removes it, and forgets its
    /// journal entry. Returns the line for the cell's notes; on failure the
    /// entry stays (for `jitterlab restore`) and the error says so.
    pub fn stop(mut self, journal: &mut Journal) -> Result<String> {
        let line = kill_and_remove(&self.path, self.kind)
            .map_err(|e| anyhow!("{e}; `jitterlab restore` kills what is left and removes it"))?;
        if let Some(id) = self.journal_id.take() {
            journal.done(id)?;
        }
        Ok(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::journal::undo::cgroup::{procs, undo};
    use crate::system::journal::JOURNAL_ENV;
    use serial_test::serial;
    use std::os::unix::process::ExitStatusExt;
    use std::time::{Duration, Instant};

    const HYBRID: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime shared:9 - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime shared:10 - cgroup2 cgroup2 rw,nsdelegate
";

    #[test]
    fn mountinfo_yields_v2_first_then_a_freezer_never_cpu_or_cpuset() {
        let mounts = cgroup_mounts(HYBRID);
        assert_eq!(
            mounts,
            vec![
                CgroupMount {
                    mount: "/sys/fs/cgroup/cpu".into(),
                    kind: None
                },
                CgroupMount {
                    mount: "/sys/fs/cgroup/cpuset".into(),
                    kind: None
                },
                CgroupMount {
                    mount: "/sys/fs/cgroup/freezer".into(),
                    kind: Some(Kind::V1Freezer)
                },
                CgroupMount {
                    mount: "/sys/fs/cgroup/systemd".into(),
                    kind: None
                },
                CgroupMount {
                    mount: "/sys/fs/cgroup/unified".into(),
                    kind: Some(Kind::V2)
                },
            ]
        );
        let all = |_: &Path| true;
        assert_eq!(
            choose(&mounts, all),
            Ok(Hierarchy {
                mount: "/sys/fs/cgroup/unified".into(),
                kind: Kind::V2
            })
        );
        // Without v2: the freezer.
        let v1 = cgroup_mounts(&HYBRID.replace("cgroup2 cgroup2", "tmpfs tmpfs"));
        assert_eq!(
            choose(&v1, all),
            Ok(Hierarchy {
                mount: "/sys/fs/cgroup/freezer".into(),
                kind: Kind::V1Freezer
            })
        );
        // A freezer mounted with cpu or cpuset is never used.
        let shared = "1 0 0:1 / /cg rw - cgroup cgroup rw,cpu,freezer\n\
                      2 0 0:2 / /cs rw - cgroup cgroup rw,freezer,cpuset\n";
        assert_eq!(
            choose(&cgroup_mounts(shared), all),
            Err("no cgroup v2 and no cgroup v1 freezer is mounted".into())
        );
        // Unified, with a space in the mount point.
        let unified = "25 1 0:22 / /sys/fs/my\\040cgroup rw - cgroup2 cgroup2 rw\n";
        assert_eq!(
            choose(&cgroup_mounts(unified), |_: &Path| false),
            Err("cgroup v2 at /sys/fs/my cgroup is not writable by jitterlab (run as root)".into())
        );
    }

    /// The usable hierarchy here, or why the test is skipped.
    fn usable() -> Option<Hierarchy> {
        match find() {
            Ok(h) => Some(h),
            Err(why) => {
                eprintln!("skipping: no usable cgroup here: {why}");
                None
            }
        }
    }

    /// Every usable hierarchy of this machine (v2 and the v1 freezer).
    fn all_usable() -> Vec<Hierarchy> {
        let text = fs::read_to_string(MOUNTINFO).unwrap();
        cgroup_mounts(&text)
            .into_iter()
            .filter_map(|m| {
                Some(Hierarchy {
                    kind: m.kind?,
                    mount: m.mount,
                })
            })
            .filter(|h| sys::can_write(&h.mount))
            .collect()
    }

    /// Kills and removes the group at the path when a test fails before
    /// it did (a leaked tree would outlive the test).
    struct Cleanup(PathBuf, Kind);

    impl Drop for Cleanup {
        fn drop(&mut self) {
            if self.0.exists() {
                let _ = kill_and_remove(&self.0, self.1);
            }
        }
    }

    /// A journal in a fresh temporary directory (`JITTERLAB_JOURNAL`),
    /// with that directory as its machine root: its lock is the test's own,
    /// never the one a jitterlab running on this machine holds. The
    /// cgroups are the real ones all the same (their paths are absolute).
    fn journal() -> (tempfile::TempDir, Journal) {
        let dir = tempfile::tempdir().unwrap();
        std::env::set_var(JOURNAL_ENV, dir.path().join("journal.json"));
        let j = Journal::begin(dir.path()).unwrap();
        (dir, j)
    }

    /// Whether a process `pid` is alive (not a zombie).
    fn alive(pid: i32) -> bool {
        crate::system::procs::read_stat(pid).is_some_and(|s| s.is_alive())
    }

    /// Starts, in `group`, a `sleep` in a process group of its own (the
    /// neighbour's leader) and a second `sleep` that `setsid` moves into a
    /// session of its own first (a worker that left the neighbour's process
    /// group, as a daemonising tool does) — both with argument vectors, no
    /// shell; returns the leader's child and the escaped sleep's pid.
    fn escaping_tree(group: &CellGroup, _dir: &Path) -> (std::process::Child, i32) {
        let quiet = |cmd: &mut Command| {
            cmd.stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null());
        };
        let mut leader = Command::new("sleep");
        leader.arg("86432");
        quiet(&mut leader);
        sys::set_child_hooks(&mut leader, &[], None);
        group.join_before_exec(&mut leader).unwrap();
        let child = leader.spawn().unwrap();
        // Not a group leader when it starts, `setsid` makes the session in
        // place and becomes the sleep: its pid is the escaped sleep's.
        let mut escaper = Command::new("setsid");
        escaper.args(["sleep", "86431"]);
        quiet(&mut escaper);
        group.join_before_exec(&mut escaper).unwrap();
        let escaped = escaper.spawn().unwrap().id() as i32;
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            // Once `setsid` has run, the sleep leads a group of its own.
            let stat = crate::system::procs::read_stat(escaped);
            if stat.is_some_and(|s| s.is_alive() && s.pgrp == escaped) {
                break;
            }
            assert!(Instant::now() < deadline, "the escaped sleep started");
            std::thread::sleep(Duration::from_millis(10));
        }
        (child, escaped)
    }

    #[test]
    #[serial]
    fn stop_kills_a_tree_that_left_its_process_group_and_removes_the_group() {
        if sys::effective_uid() != 0 {
            eprintln!("skipping: cgroups need root");
            return;
        }
        let hierarchies = all_usable();
        if hierarchies.is_empty() {
            eprintln!("skipping: no cgroup v2 or v1 freezer is mounted");
            return;
        }
        // Every kind this machine has (a hybrid one has both).
        for h in hierarchies {
            let (jdir, mut j) = journal();
            let g = CellGroup::create(&h, &mut j).unwrap();
            let path = g.path().to_path_buf();
            let _cleanup = Cleanup(path.clone(), h.kind);
            assert_eq!(path.parent().unwrap(), h.mount);
            assert_eq!(j.pending(), 1);
            let (mut child, escaped) = escaping_tree(&g, jdir.path());
            let leader = child.id() as i32;
            // The escaped sleep is in another process group, but in the cgroup.
            let pg = crate::system::procs::read_stat(escaped).unwrap().pgrp;
            assert_ne!(pg, leader);
            let mut members = procs(&path);
            members.sort_unstable();
            let mut expected = vec![leader, escaped];
            expected.sort_unstable();
            assert_eq!(members, expected, "{}", h.describe());

            let line = g.stop(&mut j).unwrap();
            assert_eq!(
                line,
                format!(
                    "killed 2 processes left in cgroup {} and removed it",
                    path.display()
                )
            );
            assert_eq!(child.wait().unwrap().signal(), Some(sys::SIGKILL));
            assert!(!alive(escaped));
            assert!(!path.exists());
            assert_eq!(j.pending(), 0);
            j.finish().unwrap();
        }
    }

    #[test]
    #[serial]
    fn undo_kills_and_removes_a_journaled_group_and_refuses_other_paths() {
        let Some(h) = usable() else { return };
        if sys::effective_uid() != 0 {
            eprintln!("skipping: cgroups need root");
            return;
        }
        let (jdir, mut j) = journal();
        let g = CellGroup::create(&h, &mut j).unwrap();
        let path = g.path().to_path_buf();
        let _cleanup = Cleanup(path.clone(), h.kind);
        let (mut child, escaped) = escaping_tree(&g, jdir.path());
        // kill -9 of jitterlab: the group and its journal entry stay.
        drop(g);
        drop(j);
        assert_eq!(
            undo(&path),
            (
                format!(
                    "killed 2 processes left in cgroup {} and removed it",
                    path.display()
                ),
                true
            )
        );
        assert_eq!(child.wait().unwrap().signal(), Some(sys::SIGKILL));
        assert!(!alive(escaped));
        assert!(!path.exists());
        assert_eq!(
            undo(&path),
            (format!("cgroup {} was already gone", path.display()), true)
        );
        // Paths jitterlab would not have made are left alone.
        let name = "it is not a name jitterlab gives its cgroups";
        for (p, why) in [
            (h.mount.clone(), name.to_string()),
            (h.mount.join("system.slice"), name.to_string()),
            (
                PathBuf::from("/etc/jitterlab-0123456789abcdef"),
                "/etc is not the mount point of a cgroup v2 or v1 freezer hierarchy".to_string(),
            ),
            (
                h.mount.join("a/jitterlab-0123456789abcdef"),
                format!(
                    "{} is not the mount point of a cgroup v2 or v1 freezer hierarchy",
                    h.mount.join("a").display()
                ),
            ),
        ] {
            assert_eq!(
                undo(&p),
                (format!("left {} alone: {why}", p.display()), true)
            );
        }
        // An empty group is simply removed.
        let (_jdir, mut j) = journal();
        let g = CellGroup::create(&h, &mut j).unwrap();
        let path = g.path().to_path_buf();
        assert_eq!(
            g.stop(&mut j).unwrap(),
            format!("removed cgroup {} (empty)", path.display())
        );
        j.finish().unwrap();
    }
}
