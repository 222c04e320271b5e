//! Putting the machine back from the journal (the `journal` module doc,
//! **Restore**): [`replay`] undoes every entry a dead jitterlab left, newest
//! first, each kind with its own step, and says what it did, one line per
//! entry.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Result;
use jitterlab_sys as sys;

use super::entry::{other_boot, owner_alive, plural, Entry, Holder, Undo};
use super::file::{load, locate, remove_dead_tmps, remove_if_present, save, sync_dir};
use super::lock::MachineLock;
use crate::error::bad;
use crate::system::journal::undo::files::{self, is_symlink_error, read_nofollow};
use crate::system::procs::{group_members, read_stat, wait_for};

/// How long [`replay`] waits for a killed process group to vanish.
const KILL_WAIT: Duration = Duration::from_secs(3);

/// What a replay did.
#[derive(Debug)]
pub struct Replay {
    /// One line per entry, newest first (after a note for a journal of
    /// another boot): what was put back, killed, dropped or left, and why.
    pub lines: Vec<String>,
    /// How many entries could not be undone and stay in the journal.
    pub left: usize,
    /// The journal file.
    pub path: PathBuf,
}

/// Replays the journal left on disk (after a crash or kill -9), newest entry
/// first, under the machine lock (the `journal` module doc, **Restore**);
/// removes the journal when every entry was handled, else keeps the entries
/// that were not. No journal → no lines (the caller prints "nothing to restore").
/// Owner alive → error "jitterlab pid N is still running and holds these
/// changes; stop it with Ctrl-C (it restores them itself)".
pub fn replay(root: &Path) -> Result<Replay> {
    let _lock = MachineLock::take(root, Holder::Restore)?;
    let path = locate(root)?;
    let mut lines: Vec<String> = remove_dead_tmps(&path)
        .into_iter()
        .map(|(file, pid)| {
            format!(
                "removed {}, a temporary journal file left by jitterlab pid {pid}, which was killed",
                file.display()
            )
        })
        .collect();
    let Some(mut doc) = load(&path)? else {
        return Ok(Replay {
            lines,
            left: 0,
            path,
        });
    };
    if owner_alive(&doc) {
        return Err(bad(format!(
            "jitterlab pid {} is still running and holds these changes; stop it with Ctrl-C (it restores them itself)",
            doc.owner_pid
        )));
    }
    let other_boot = other_boot(&doc);
    if other_boot {
        lines.push(format!(
            "the journal {} was written in another boot (jitterlab pid {}, started {}): what ended with that boot is dropped, nothing of it written back",
            path.display(),
            doc.owner_pid,
            doc.started_at
        ));
    }
    let mut left = Vec::new();
    for entry in doc.entries.iter().rev() {
        let ended = other_boot.then(|| ended_with_boot(&entry.undo)).flatten();
        let (line, handled) = match ended {
            Some(line) => (line, true),
            None => undo(root, entry),
        };
        lines.push(line);
        if !handled {
            left.push(entry.clone());
        }
    }
    let kept = left.len();
    if left.is_empty() {
        remove_if_present(&path)?;
        sync_dir(&path)?;
    } else {
        left.reverse();
        doc.entries = left;
        save(&path, &doc)?;
    }
    Ok(Replay {
        lines,
        left: kept,
        path,
    })
}

/// [`replay`]'s lines.
#[cfg(test)]
pub fn restore(root: &Path) -> Result<Vec<String>> {
    Ok(replay(root)?.lines)
}

/// The line for an entry of a journal of another boot when what it undoes
/// ended with that boot (processes, namespaces, kernel values, resctrl,
/// cgroups); `None` for a kind that outlives a reboot (a work directory in
/// `/var/tmp`), which is then undone as in the same boot.
pub(super) fn ended_with_boot(undo: &Undo) -> Option<String> {
    Some(match undo {
        Undo::WorkDir { .. } | Undo::Container { .. } => return None,
        Undo::ContainerCgroup { path, .. } => {
            format!("cgroup {} ended with the reboot", path.display())
        }
        Undo::Cgroup { path } => format!("cgroup {} ended with the reboot", path.display()),
        Undo::File { path, old } => format!(
            "did not write {:?} back to {}: it was the value before the machine restarted",
            old.trim_end(),
            path.display()
        ),
        Undo::Neighbour { pgid, argv, .. } => format!(
            "neighbour process group {pgid} (`{}`) ended with the reboot",
            argv.join(" ")
        ),
        Undo::Netns { name } => format!("network namespace {name} ended with the reboot"),
        Undo::Stopped { pid, comm, .. } => format!("{comm} (pid {pid}) ended with the reboot"),
        Undo::ResctrlGroup { path, .. } => {
            format!("resctrl group {} ended with the reboot", path.display())
        }
        Undo::ResctrlMount { target } => format!(
            "the resctrl mount at {} ended with the reboot",
            target.display()
        ),
        Undo::TracefsMount { target } => format!(
            "the tracefs mount at {} ended with the reboot",
            target.display()
        ),
        Undo::TracefsInstance { path } => format!(
            "the tracefs instance {} ended with the reboot",
            path.display()
        ),
    })
}

/// Undoes one entry of this boot: the line to print, and whether it is
/// handled (may be forgotten). A line of an entry that is not handled says
/// what to do by hand.
fn undo(root: &Path, entry: &Entry) -> (String, bool) {
    let (line, handled) = match &entry.undo {
        Undo::File { path, old } => return restore_file(root, entry.id, path, old),
        Undo::Netns { name } => delete_netns(name),
        Undo::ResctrlGroup { path, files } => {
            crate::system::journal::undo::resctrl::remove_group(path, files)
        }
        Undo::ResctrlMount { target } => crate::system::journal::undo::resctrl::unmount(target),
        Undo::TracefsMount { target } => {
            crate::system::journal::undo::tracefs::unmount_tracefs(target)
        }
        Undo::TracefsInstance { path } => {
            crate::system::journal::undo::tracefs::remove_instance(path)
        }
        Undo::WorkDir { path } => crate::system::journal::undo::workdir::undo(path),
        Undo::Cgroup { path } => crate::system::journal::undo::cgroup::undo(path),
        Undo::Container { engine, name } => {
            crate::system::journal::undo::container::remove_container(engine, name)
        }
        Undo::ContainerCgroup { path, files } => {
            crate::system::journal::undo::container::remove_parent(root, path, files)
        }
        Undo::Neighbour {
            pgid,
            start_ticks,
            argv,
        } => kill_neighbour(*pgid, *start_ticks, &argv.join(" ")),
        Undo::Stopped {
            pid,
            start_ticks,
            comm,
        } => resume_stopped(*pid, *start_ticks, comm),
    };
    match advice(&entry.undo).filter(|_| !handled) {
        Some(a) => (format!("{line}; {a}"), handled),
        None => (line, handled),
    }
}

/// What to do by hand when an entry of this kind could not be undone,
/// where its line does not say it already (the other kinds' lines name
/// what to delete, remove or unmount).
pub(super) fn advice(undo: &Undo) -> Option<String> {
    match undo {
        Undo::Neighbour { pgid, .. } => Some(format!("kill it by hand (kill -KILL -- -{pgid})")),
        Undo::Stopped { pid, .. } => Some(format!("resume it by hand (kill -CONT {pid})")),
        _ => None,
    }
}

/// Writes a journaled value back: only to a file on the settings'
/// allow-list (else the entry is kept, with the reason), not when the file
/// holds it already or is gone with what it belonged to (both handled),
/// never through a symlink and never creating the file.
fn restore_file(root: &Path, id: u64, path: &Path, old: &str) -> (String, bool) {
    let Some(file) = files::setting_file(root, path) else {
        let under = if root == Path::new("/") {
            String::new()
        } else {
            format!(" under the sysroot {}", root.display())
        };
        return (
            format!(
                "journal entry {id} names {}, which no jitterlab setting writes{under}; remove the entry by hand if you wrote it",
                path.display()
            ),
            false,
        );
    };
    let shown = old.trim_end();
    match read_nofollow(path) {
        Ok(now) if now == old => {
            return (format!("{} already holds {shown:?}", path.display()), true)
        }
        Err(e) if e.kind() == ErrorKind::NotFound && file.is_gone() => {
            return (
                format!(
                    "nothing to put back in {}: it is gone, and {} went with it",
                    path.display(),
                    file.what
                ),
                true,
            )
        }
        _ => {}
    }
    match files::write_value(path, old) {
        Ok(()) => (format!("restored {} to {shown:?}", path.display()), true),
        Err(e) if is_symlink_error(&e) => (
            format!(
                "could not restore {} to {shown:?}: it is a symlink now, and jitterlab never writes through one; see what replaced it and put the value back by hand",
                path.display()
            ),
            false,
        ),
        Err(e) => (
            format!(
                "could not restore {} to {shown:?}: {e}; write it back by hand",
                path.display()
            ),
            false,
        ),
    }
}

/// How long [`resume_stopped`] waits for a resumed process to leave the
/// stopped state.
const RESUME_WAIT: Duration = Duration::from_secs(2);

/// Resumes process `pid`, which jitterlab stopped, with `SIGCONT` and checks
/// that it left the stopped state (`T`): the line to print, and whether the
/// entry is handled. A process that has ended, or whose pid now belongs to
/// another process (another start time), is left alone and handled. Used by
/// the replay and by the irqbalance setting's own restore.
pub fn resume_stopped(pid: i32, start_ticks: u64, comm: &str) -> (String, bool) {
    let Some(stat) = read_stat(pid).filter(|s| s.is_alive()) else {
        return (format!("{comm} (pid {pid}) had ended"), true);
    };
    if stat.start_ticks != start_ticks {
        return (
            format!(
                "left pid {pid} alone: it now belongs to another process (started at tick {}, the stopped {comm} at tick {start_ticks})",
                stat.start_ticks
            ),
            true,
        );
    }
    if let Err(e) = sys::kill_process(pid, sys::SIGCONT) {
        return (format!("could not resume {comm} (pid {pid}): {e}"), false);
    }
    match wait_for(pid, RESUME_WAIT, |s| s.state != 'T') {
        Some(s) if s.state == 'T' => (
            format!("sent SIGCONT to {comm} (pid {pid}), but it is still stopped (state T)"),
            false,
        ),
        Some(_) => (format!("resumed {comm} (pid {pid})"), true),
        None => (format!("{comm} (pid {pid}) had ended"), true),
    }
}

/// Deletes a journaled namespace through [`crate::net::hosts::undo`], the
/// one place that deletes namespaces: it refuses a name jitterlab would not
/// have made, so an edited journal cannot delete someone else's namespace.
/// A namespace that is already gone is fine.
fn delete_netns(name: &str) -> (String, bool) {
    use crate::net::hosts::{undo, NetChange};
    match undo(&NetChange::Netns(name.to_string())) {
        Ok(true) => (format!("deleted network namespace {name}"), true),
        Ok(false) => (format!("network namespace {name} was already gone"), true),
        Err(e) => (
            format!("could not delete network namespace {name}: {e:#}"),
            false,
        ),
    }
}

/// Kills the journaled process group `pgid` when it still exists.
///
/// A pid is only reused once nothing refers to it — neither a process nor
/// a process group with members. So while any process is in group `pgid`,
/// the group is ours; the only doubt is a leader pid that now belongs to a
/// newer process, which its start time exposes (and which means our group
/// had emptied: its members would have kept the pid from reuse).
fn kill_neighbour(pgid: i32, start_ticks: u64, cmd: &str) -> (String, bool) {
    if let Some(leader) = read_stat(pgid) {
        if leader.start_ticks != start_ticks {
            return (
                format!(
                    "left process group {pgid} alone: pid {pgid} now belongs to another process (started at tick {}, the neighbour `{cmd}` at tick {start_ticks})",
                    leader.start_ticks
                ),
                true,
            );
        }
    }
    let members = group_members(pgid);
    if members.is_empty() {
        return (
            format!("neighbour process group {pgid} (`{cmd}`) had already ended"),
            true,
        );
    }
    let _ = sys::kill_group(pgid, sys::SIGKILL);
    let deadline = Instant::now() + KILL_WAIT;
    loop {
        let alive = group_members(pgid);
        if alive.is_empty() {
            return (
                format!(
                    "killed neighbour process group {pgid} (`{cmd}`): {}",
                    plural(members.len(), "process", "processes")
                ),
                true,
            );
        }
        if Instant::now() >= deadline {
            let pids: Vec<String> = alive.iter().map(|p| p.to_string()).collect();
            return (
                format!(
                    "could not kill neighbour process group {pgid} (`{cmd}`): pids {} are still alive",
                    pids.join(", ")
                ),
                false,
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
