//! Undoing a cell's cgroup: killing every process left in a group
//! jitterlab made for a cell's neighbours and removing the group — at the
//! end of the cell ([`crate::neighbour::cgroup::CellGroup::stop`]) and in
//! `jitterlab restore` after a `kill -9` ([`undo`]).
//!
//! The cell's group is journaled (`Undo::Cgroup`) by
//! [`crate::neighbour::cgroup`], which uses the journal, and the journal's
//! replay calls [`undo`]: so this step lives below the journal (as
//! [`super::resctrl`] does) and the neighbours' cgroup module
//! above it, and the journal does not depend on the neighbours. What both
//! need — the group's name shape ([`PREFIX`], [`crate::system::RANDOM_DIGITS`]), the
//! hierarchy [`Kind`]s and the cgroup mounts of `/proc/self/mountinfo`
//! ([`cgroup_mounts`]) — lives here too.
//!
//! **Killing** ([`kill_and_remove`]): on cgroup v2, `cgroup.kill` (Linux ≥
//! 5.14), else freeze with `cgroup.freeze` where the kernel has it (Linux ≥
//! 5.2), `SIGKILL` every pid in `cgroup.procs`, thaw; on the v1 freezer,
//! freeze (`freezer.state` = `FROZEN`), `SIGKILL` every task, thaw so they
//! can die. Either is repeated until the group is empty, then the group is
//! removed (retried while the kernel says it is busy).
//!
//! **Only jitterlab's groups.** [`undo`] acts only on a directory named
//! `jitterlab-` + 16 hex digits directly under the mount point of a cgroup
//! v2 or v1 freezer hierarchy mounted now; anything else is left alone,
//! with the reason. Cgroups are live kernel objects: the real
//! `/proc/self/mountinfo` and cgroup file systems are used, never the
//! sysroot.

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use jitterlab_sys as sys;

/// Where the kernel lists the mounts this process sees.
pub const MOUNTINFO: &str = "/proc/self/mountinfo";
/// The name prefix of a cell's group.
pub const PREFIX: &str = "jitterlab-";
/// How long a kill may take to empty the group, and its removal to succeed.
const KILL_WAIT: Duration = Duration::from_secs(3);
/// How long a freeze may take before the kill goes ahead anyway.
const FREEZE_WAIT: Duration = Duration::from_secs(1);

/// The kind of cgroup hierarchy a group lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// cgroup v2 (unified).
    V2,
    /// A cgroup v1 hierarchy with the freezer controller (and neither `cpu`
    /// nor `cpuset`).
    V1Freezer,
}

/// One mount of a cgroup file system, as `/proc/self/mountinfo` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupMount {
    /// Its mount point.
    pub mount: PathBuf,
    /// Its kind, `None` for a v1 hierarchy jitterlab never uses.
    pub kind: Option<Kind>,
}

/// The cgroup mounts in a `mountinfo` text: v2 mounts as [`Kind::V2`], v1
/// mounts with `freezer` and without `cpu`/`cpuset` as
/// [`Kind::V1Freezer`], other v1 mounts with no kind (never used).
pub fn cgroup_mounts(mountinfo: &str) -> Vec<CgroupMount> {
    let mut out = Vec::new();
    for line in mountinfo.lines() {
        // ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL…] - FSTYPE SOURCE SUPER
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let Some(mount) = left.split(' ').nth(4) else {
            continue;
        };
        let mut r = right.split(' ');
        let (Some(fstype), _, Some(superopts)) = (r.next(), r.next(), r.next()) else {
            continue;
        };
        let kind = match fstype {
            "cgroup2" => Some(Kind::V2),
            "cgroup" => {
                let opts: Vec<&str> = superopts.split(',').collect();
                let has = |o: &str| opts.contains(&o);
                (has("freezer") && !has("cpu") && !has("cpuset")).then_some(Kind::V1Freezer)
            }
            _ => continue,
        };
        out.push(CgroupMount {
            mount: PathBuf::from(unescape(mount)),
            kind,
        });
    }
    out
}

/// Undoes mountinfo's octal escapes (`\040` for a space).
pub fn unescape(field: &str) -> String {
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let digit = |k: usize| u32::from(b[i + k] - b'0');
            out.push((digit(1) * 64 + digit(2) * 8 + digit(3)) as u8);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The kind of the hierarchy mounted exactly at `mount` now, if it is one
/// jitterlab uses.
fn kind_of_mount(mount: &Path) -> Option<Kind> {
    let text = fs::read_to_string(MOUNTINFO).ok()?;
    cgroup_mounts(&text)
        .into_iter()
        .find(|m| m.mount == mount)?
        .kind
}

/// Kills everything in the group at `path` and removes the group: the line
/// saying what was done, or the error.
pub fn kill_and_remove(path: &Path, kind: Kind) -> std::result::Result<String, String> {
    let shown = path.display();
    let found = procs(path).len();
    let deadline = Instant::now() + KILL_WAIT;
    if found > 0 {
        match kind {
            Kind::V2 => kill_v2(path)?,
            Kind::V1Freezer => kill_v1(path)?,
        }
        loop {
            let left = procs(path);
            if left.is_empty() {
                break;
            }
            if Instant::now() >= deadline {
                let pids: Vec<String> = left.iter().map(|p| p.to_string()).collect();
                return Err(format!(
                    "could not kill every process in cgroup {shown}: pids {} are still alive",
                    pids.join(", ")
                ));
            }
            // Whatever a fork slipped in before the freeze, or what is
            // still being torn down: kill again.
            match kind {
                Kind::V2 => kill_v2(path)?,
                Kind::V1Freezer => kill_v1(path)?,
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    // A killed process leaves its group a moment after it is gone from
    // `cgroup.procs`: the removal is retried while the kernel says busy.
    loop {
        match fs::remove_dir(path) {
            Ok(()) => break,
            Err(e) if e.kind() == ErrorKind::NotFound => break,
            Err(e) if e.kind() == ErrorKind::ResourceBusy && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10))
            }
            Err(e) => return Err(format!("could not remove cgroup {shown}: {e}")),
        }
    }
    Ok(match found {
        0 => format!("removed cgroup {shown} (empty)"),
        1 => format!("killed 1 process left in cgroup {shown} and removed it"),
        n => format!("killed {n} processes left in cgroup {shown} and removed it"),
    })
}

/// cgroup v2: `cgroup.kill` where the kernel has it; else freeze (where
/// possible), `SIGKILL` every member, thaw.
fn kill_v2(path: &Path) -> std::result::Result<(), String> {
    let kill = path.join("cgroup.kill");
    if kill.exists() {
        return fs::write(&kill, "1").map_err(|e| format!("cannot write {}: {e}", kill.display()));
    }
    let freeze = path.join("cgroup.freeze");
    let frozen = freeze.exists() && fs::write(&freeze, "1").is_ok();
    if frozen {
        let events = path.join("cgroup.events");
        wait_until(FREEZE_WAIT, || {
            fs::read_to_string(&events).is_ok_and(|t| t.lines().any(|l| l == "frozen 1"))
        });
    }
    kill_members(path);
    if frozen {
        let _ = fs::write(&freeze, "0");
    }
    Ok(())
}

/// cgroup v1 freezer: freeze, `SIGKILL` every task, thaw (a frozen task
/// cannot die).
fn kill_v1(path: &Path) -> std::result::Result<(), String> {
    let state = path.join("freezer.state");
    fs::write(&state, "FROZEN").map_err(|e| format!("cannot write {}: {e}", state.display()))?;
    wait_until(FREEZE_WAIT, || {
        fs::read_to_string(&state).is_ok_and(|t| t.trim() == "FROZEN")
    });
    kill_members(path);
    fs::write(&state, "THAWED").map_err(|e| format!("cannot write {}: {e}", state.display()))
}

/// `SIGKILL` to every process listed in the group (never this process).
fn kill_members(path: &Path) {
    let me = std::process::id() as i32;
    for pid in procs(path) {
        if pid != me {
            let _ = sys::kill_process(pid, sys::SIGKILL);
        }
    }
}

/// The pids in the group's `cgroup.procs` (none when it cannot be read).
pub fn procs(path: &Path) -> Vec<i32> {
    fs::read_to_string(path.join("cgroup.procs"))
        .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

/// Polls `done` every 5 ms until it holds or `timeout` passed.
fn wait_until(timeout: Duration, done: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Why `path` is not a group jitterlab made, or its hierarchy's kind.
fn check(path: &Path) -> std::result::Result<Kind, String> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if !crate::system::has_shape(name, PREFIX) {
        return Err("it is not a name jitterlab gives its cgroups".into());
    }
    let Some(mount) = path.parent() else {
        return Err("it is not a name jitterlab gives its cgroups".into());
    };
    kind_of_mount(mount).ok_or_else(|| {
        format!(
            "{} is not the mount point of a cgroup v2 or v1 freezer hierarchy",
            mount.display()
        )
    })
}

/// Replays a journaled `Undo::Cgroup` (the journal's): kills every process in the group
/// and removes it. The line to print, and whether the entry is handled: a
/// group that is gone (or that died with a reboot), or a path jitterlab
/// would not have made (left alone, with the reason), is; a group whose
/// processes or directory could not be removed is not.
pub fn undo(path: &Path) -> (String, bool) {
    let shown = path.display();
    let kind = match check(path) {
        Ok(k) => k,
        Err(why) => return (format!("left {shown} alone: {why}"), true),
    };
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return (format!("left {shown} alone: it is not a directory"), true),
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return (format!("cgroup {shown} was already gone"), true)
        }
        Err(e) => return (format!("could not examine cgroup {shown}: {e}"), false),
    }
    match kill_and_remove(path, kind) {
        Ok(line) => (line, true),
        Err(e) => (e, false),
    }
}
