//! The on-disk journal of every change jitterlab makes to the machine, so
//! that `jitterlab restore` can undo them after a `kill -9` (DESIGN rule 4).
//!
//! Normal ends, errors, Ctrl-C and SIGTERM undo every change in the process
//! that made it. `SIGKILL` (or a crash, or the OOM killer) cannot be caught,
//! so each change is written here *before* it is made — or, for a process,
//! right after it exists — and forgotten once it has been undone:
//!
//! - [`Undo::Neighbour`]: a neighbour's process group, to be killed;
//! - [`Undo::Netns`]: a network namespace, to be deleted;
//! - [`Undo::File`]: a sysfs/procfs value, to be written back verbatim.
//! - [`Undo::Stopped`]: a process jitterlab stopped with `SIGSTOP` (a
//!   running irqbalance, paused while IRQs are moved), to be resumed with
//!   `SIGCONT` — only while its pid and start time still match.
//! - [`Undo::ResctrlGroup`]: a resctrl group jitterlab created, to be
//!   removed (`{ "kind": "resctrl-group", "path": "/sys/fs/resctrl/rt",
//!   "files": [] }`; `files` lists what a fake tree's stand-in created);
//! - [`Undo::ResctrlMount`]: resctrl, mounted by jitterlab, to be
//!   unmounted (`{ "kind": "resctrl-mount", "target": "/sys/fs/resctrl" }`).
//! - [`Undo::WorkDir`]: a private work directory, to be removed with its
//!   content (`{ "kind": "work-dir", "path": "/run/jitterlab/jitterlab-…" }`);
//! - [`Undo::Cgroup`]: the cgroup of a cell's neighbours, every process in
//!   it killed and the group removed (`{ "kind": "cgroup", "path":
//!   "/sys/fs/cgroup/jitterlab-…" }`).
//!
//! **Where.** `<sysroot>/run/jitterlab/journal.json`. `/run` is cleared by a
//! reboot, exactly when the processes and sysfs values it describes are gone
//! too. Without the right to create that directory (not root) the journal
//! goes to `$XDG_RUNTIME_DIR/jitterlab/journal.json`, which has the same
//! lifetime. `JITTERLAB_JOURNAL` (a full file path) overrides both.
//!
//! **Format.** One JSON document, rewritten atomically for every change
//! (write a temporary file, fsync it, rename it over the journal, fsync the
//! directory), so a crash leaves either the old or the new document, never
//! half of one:
//!
//! ```json
//! {
//!   "version": 1,
//!   "owner_pid": 4242,
//!   "owner_start_ticks": 123456,
//!   "boot_id": "8232558a-e607-429e-b949-d9ba93805a87",
//!   "started_at": "2025-01-01T12:00:00Z",
//!   "entries": [
//!     { "id": 1, "kind": "neighbour", "pgid": 4250, "start_ticks": 123470,
//!       "argv": ["stress-ng", "--cpu", "1"] }
//!   ]
//! }
//! ```
//!
//! `owner_start_ticks` (the owner's start time, field 22 of
//! `/proc/PID/stat`) tells a live owner from an unrelated process that got
//! the dead owner's pid; `boot_id` (`/proc/sys/kernel/random/boot_id`) tells
//! whether the journal's pids and process groups can still exist at all.
//!
//! **One owner.** [`Journal::begin`] refuses while another jitterlab holds a
//! journal, or while a dead one left changes behind: two runs at once would
//! disturb each other's measurement, and a journal that is never replayed
//! would leave the machine changed. The journal is claimed with a hard link
//! (which fails when the file exists), so two jitterlabs starting at the
//! same moment cannot both take it.
//!
//! Processes and process groups are live things: they are looked up in the
//! real `/proc`, never under the sysroot.

// Not called by a command yet: `bench` and `restore` will; remove this allow
// when they do.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use jitterlab_sys as sys;
use serde::{Deserialize, Serialize};

use crate::error::bad;
use crate::system::procs::{group_members, read_stat, wait_for};

/// The environment variable that names the journal file (tests use it).
pub const JOURNAL_ENV: &str = "JITTERLAB_JOURNAL";
/// The journal's schema version.
const VERSION: u32 = 1;
/// Where the kernel names the current boot.
const BOOT_ID: &str = "/proc/sys/kernel/random/boot_id";
/// How long [`restore`] waits for a killed process group to vanish.
const KILL_WAIT: Duration = Duration::from_secs(3);

/// How to undo one change to the machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Undo {
    /// A neighbour's process group: kill every member.
    Neighbour {
        /// The process group id (= the leader's pid).
        pgid: i32,
        /// The leader's start time (field 22 of `/proc/PID/stat`, clock
        /// ticks after boot), to recognise a reused pid.
        start_ticks: u64,
        /// The command it runs, for the report.
        argv: Vec<String>,
    },
    /// A network namespace jitterlab created: `ip netns delete NAME`.
    Netns {
        /// The namespace's name.
        name: String,
    },
    /// A file's old content: written back verbatim.
    File {
        /// The absolute path as written (already under the sysroot).
        path: PathBuf,
        /// Its content before the change.
        old: String,
    },
    /// A process stopped with `SIGSTOP`: resume it with `SIGCONT`, unless
    /// its pid now belongs to another process. Journaled before the signal.
    Stopped {
        /// The stopped process.
        pid: i32,
        /// Its start time (field 22 of `/proc/PID/stat`), to recognise a
        /// reused pid.
        start_ticks: u64,
        /// Its command name (`/proc/PID/comm`), for the report.
        comm: String,
    },
    /// A resctrl group jitterlab created: removed
    /// ([`crate::system::resctrl_undo::remove_group`]).
    ResctrlGroup {
        /// The group's directory (already under the sysroot).
        path: PathBuf,
        /// Files to remove before the directory: empty on a real resctrl,
        /// where the kernel removes them; in a fake tree, what jitterlab's
        /// stand-in for the kernel created.
        #[serde(default)]
        files: Vec<String>,
    },
    /// resctrl, mounted by jitterlab: unmounted
    /// ([`crate::system::resctrl_undo::unmount`]).
    ResctrlMount {
        /// The mount point (already under the sysroot).
        target: PathBuf,
    },
    /// A private work directory jitterlab made (neighbour output, disk
    /// load files): removed with what it holds, symlink-safely
    /// ([`crate::system::workdir::undo`]). Journaled before the `mkdir`.
    WorkDir {
        /// The directory (`<runtime dir>/jitterlab-XXXXXXXX` or
        /// `<disk base>/jitterlab-disk-XXXXXXXX`).
        path: PathBuf,
    },
    /// A cgroup jitterlab made for a cell's neighbours: every process in it
    /// killed, then removed ([`crate::neighbour::cgroup::undo`]).
    /// Journaled before the `mkdir`.
    Cgroup {
        /// The group's directory in the real cgroup file system (cgroups
        /// are live kernel objects, never under the sysroot).
        path: PathBuf,
    },
}

/// One journaled change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Entry {
    /// Unique within the journal, increasing.
    id: u64,
    /// What undoes it.
    #[serde(flatten)]
    undo: Undo,
}

/// The journal file's content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Document {
    version: u32,
    owner_pid: u32,
    owner_start_ticks: u64,
    boot_id: String,
    started_at: String,
    entries: Vec<Entry>,
}

/// This process's journal: every change it has made and not yet undone.
///
/// Dropping a journal with pending entries leaves the file on disk (that is
/// what `jitterlab restore` is for); dropping one with none removes it.
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    doc: Document,
    next_id: u64,
    closed: bool,
}

impl Journal {
    /// Creates the journal for this process. Refuses with BadInput when one
    /// exists: owner alive → "another jitterlab (pid N) is running and holds
    /// K changes to this machine; wait for it or stop it"; owner dead or
    /// other boot → "an unreplayed journal at PATH (jitterlab pid N, started
    /// T) holds K changes; run `jitterlab restore` first". An existing
    /// journal of a dead owner with zero entries is simply replaced.
    pub fn begin(root: &Path) -> Result<Journal> {
        let path = locate(root)?;
        let me = std::process::id();
        let doc = Document {
            version: VERSION,
            owner_pid: me,
            owner_start_ticks: read_stat(me as i32).map_or(0, |s| s.start_ticks),
            boot_id: boot_id(),
            started_at: now_rfc3339(),
            entries: Vec::new(),
        };
        let tmp = tmp_path(&path);
        // Two rounds: a stale journal is removed in the first, and a
        // competitor that claims the file in between is refused in the second.
        for _ in 0..2 {
            if let Some(old) = load(&path)? {
                if owner_alive(&old) {
                    return Err(bad(format!(
                        "another jitterlab (pid {}) is running and holds {} to this machine; wait for it or stop it",
                        old.owner_pid,
                        changes(old.entries.len())
                    )));
                }
                if !old.entries.is_empty() {
                    return Err(bad(format!(
                        "an unreplayed journal at {} (jitterlab pid {}, started {}) holds {}; run `jitterlab restore` first",
                        path.display(),
                        old.owner_pid,
                        old.started_at,
                        changes(old.entries.len())
                    )));
                }
                remove_if_present(&path)?;
            }
            write_synced(&tmp, &doc)?;
            let claimed = fs::hard_link(&tmp, &path);
            let _ = fs::remove_file(&tmp);
            match claimed {
                Ok(()) => {
                    sync_dir(&path)?;
                    return Ok(Journal {
                        path,
                        doc,
                        next_id: 1,
                        closed: false,
                    });
                }
                Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(anyhow!("cannot create the journal {}: {e}", path.display())),
            }
        }
        bail!(
            "cannot claim the journal {}: another jitterlab keeps replacing it",
            path.display()
        )
    }

    /// Journals `undo` and returns its id; the entry is on disk (fsynced)
    /// before this returns.
    pub fn record(&mut self, undo: Undo) -> Result<u64> {
        let id = self.next_id;
        self.doc.entries.push(Entry { id, undo });
        if let Err(e) = self.save() {
            self.doc.entries.pop();
            return Err(e);
        }
        self.next_id += 1;
        Ok(id)
    }

    /// Forgets entry `id`: its change was undone normally.
    pub fn done(&mut self, id: u64) -> Result<()> {
        let Some(at) = self.doc.entries.iter().position(|e| e.id == id) else {
            bail!("journal {} has no entry {id}", self.path.display());
        };
        let entry = self.doc.entries.remove(at);
        if let Err(e) = self.save() {
            self.doc.entries.insert(at, entry);
            return Err(e);
        }
        Ok(())
    }

    #[cfg(test)]
    /// How many changes are journaled and not yet undone.
    pub fn pending(&self) -> usize {
        self.doc.entries.len()
    }

    #[cfg(test)]
    /// The journal file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Ends the journal: removes the file when no entry is pending; else
    /// leaves it for `jitterlab restore` and says so in the error.
    pub fn finish(mut self) -> Result<()> {
        self.closed = true;
        if self.doc.entries.is_empty() {
            remove_if_present(&self.path)?;
            return sync_dir(&self.path);
        }
        bail!(
            "{} to this machine not undone; the journal {} keeps them: run `jitterlab restore`",
            changes(self.doc.entries.len()),
            self.path.display()
        )
    }

    fn save(&self) -> Result<()> {
        save(&self.path, &self.doc)
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        if !self.closed && self.doc.entries.is_empty() {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// Replays the journal left on disk (after a crash or kill -9), newest entry
/// first, and returns one line per entry saying what it put back / killed /
/// left and why; removes the journal when every entry was handled (else
/// keeps the entries that were not). No journal → `Ok(vec![])` (the caller
/// prints "nothing to restore"). Owner alive → error "jitterlab pid N is
/// still running and holds these changes; stop it with Ctrl-C (it restores
/// them itself)".
pub fn restore(root: &Path) -> Result<Vec<String>> {
    let path = locate(root)?;
    let Some(mut doc) = load(&path)? else {
        return Ok(Vec::new());
    };
    if owner_alive(&doc) {
        return Err(bad(format!(
            "jitterlab pid {} is still running and holds these changes; stop it with Ctrl-C (it restores them itself)",
            doc.owner_pid
        )));
    }
    let same_boot = doc.boot_id == boot_id();
    let mut lines = Vec::new();
    let mut left = Vec::new();
    for entry in doc.entries.iter().rev() {
        let (line, handled) = undo(&entry.undo, same_boot);
        lines.push(line);
        if !handled {
            left.push(entry.clone());
        }
    }
    if left.is_empty() {
        remove_if_present(&path)?;
        sync_dir(&path)?;
    } else {
        left.reverse();
        doc.entries = left;
        save(&path, &doc)?;
    }
    Ok(lines)
}

/// Undoes one entry: the line to print, and whether it is handled (may be
/// forgotten).
fn undo(undo: &Undo, same_boot: bool) -> (String, bool) {
    match undo {
        Undo::File { path, old } => match fs::write(path, old) {
            Ok(()) => (
                format!("restored {} to {:?}", path.display(), old.trim_end()),
                true,
            ),
            Err(e) => (
                format!(
                    "could not restore {} to {:?}: {e}",
                    path.display(),
                    old.trim_end()
                ),
                false,
            ),
        },
        Undo::Netns { name } => delete_netns(name),
        Undo::ResctrlGroup { path, files } => {
            crate::system::resctrl_undo::remove_group(path, files)
        }
        Undo::ResctrlMount { target } => crate::system::resctrl_undo::unmount(target),
        Undo::WorkDir { path } => crate::system::workdir::undo(path),
        Undo::Cgroup { path } => crate::neighbour::cgroup::undo(path, same_boot),
        Undo::Neighbour {
            pgid,
            start_ticks,
            argv,
        } => kill_neighbour(*pgid, *start_ticks, &argv.join(" "), same_boot),
        Undo::Stopped {
            pid,
            start_ticks,
            comm,
        } => {
            if same_boot {
                resume_stopped(*pid, *start_ticks, comm)
            } else {
                (format!("{comm} (pid {pid}) ended with the reboot"), true)
            }
        }
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
fn kill_neighbour(pgid: i32, start_ticks: u64, cmd: &str, same_boot: bool) -> (String, bool) {
    if !same_boot {
        return (
            format!("neighbour process group {pgid} (`{cmd}`) ended with the reboot"),
            true,
        );
    }
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

/// The journal file for `root` (see the module doc), its directory created.
fn locate(root: &Path) -> Result<PathBuf> {
    if let Some(path) = std::env::var_os(JOURNAL_ENV).filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir).with_context(|| {
                format!(
                    "cannot create the directory of {JOURNAL_ENV}={}",
                    path.display()
                )
            })?;
        }
        return Ok(path);
    }
    Ok(runtime_dir(root)?.join("journal.json"))
}

/// jitterlab's runtime directory for `root`, created: `<root>/run/jitterlab`
/// when this process may write there (root), else
/// `$XDG_RUNTIME_DIR/jitterlab`. The journal lives there (unless
/// `JITTERLAB_JOURNAL` says otherwise), and so do the private work
/// directories of [`crate::system::workdir`].
pub(crate) fn runtime_dir(root: &Path) -> Result<PathBuf> {
    let system = root.join("run/jitterlab");
    let system_err = match usable_dir(&system) {
        Ok(()) => return Ok(system),
        Err(e) => e,
    };
    let user_err = match std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        Some(dir) => {
            let user = PathBuf::from(dir).join("jitterlab");
            match usable_dir(&user) {
                Ok(()) => return Ok(user),
                Err(e) => format!("nor {}: {e}", user.display()),
            }
        }
        None => "and $XDG_RUNTIME_DIR is not set".to_string(),
    };
    Err(bad(format!(
        "cannot keep a journal of changes to this machine: cannot write {} ({system_err}) {user_err}; run as root or set XDG_RUNTIME_DIR",
        system.display()
    )))
}

/// Creates `dir` and checks that this process may write in it.
fn usable_dir(dir: &Path) -> std::result::Result<(), String> {
    fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    if sys::can_write(dir) {
        Ok(())
    } else {
        Err("not writable".into())
    }
}

/// The journal at `path`, or `None` when there is none.
fn load(path: &Path) -> Result<Option<Document>> {
    let text = match fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => bail!("cannot read the journal {}: {e}", path.display()),
    };
    let doc: Document = serde_json::from_str(&text).map_err(|e| {
        bad(format!(
            "the journal {} is not a jitterlab journal ({e}); undo what it lists by hand, then delete it",
            path.display()
        ))
    })?;
    if doc.version != VERSION {
        return Err(bad(format!(
            "the journal {} has version {}, this jitterlab reads version {VERSION}; replay it with the jitterlab that wrote it",
            path.display(),
            doc.version
        )));
    }
    Ok(Some(doc))
}

/// Rewrites the journal atomically: temporary file, fsync, rename, fsync of
/// the directory.
fn save(path: &Path, doc: &Document) -> Result<()> {
    let tmp = tmp_path(path);
    write_synced(&tmp, doc)?;
    fs::rename(&tmp, path)
        .with_context(|| format!("cannot replace the journal {}", path.display()))?;
    sync_dir(path)
}

/// Writes `doc` to `tmp` and fsyncs it.
fn write_synced(tmp: &Path, doc: &Document) -> Result<()> {
    let mut text = serde_json::to_string_pretty(doc)?;
    text.push('\n');
    let write = || -> std::io::Result<()> {
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()
    };
    write().with_context(|| format!("cannot write the journal {}", tmp.display()))
}

/// Fsyncs the directory holding `path`, so a rename or removal is durable.
fn sync_dir(path: &Path) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    File::open(dir)
        .and_then(|d| d.sync_all())
        .with_context(|| format!("cannot sync the directory {}", dir.display()))
}

fn remove_if_present(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => bail!("cannot remove the journal {}: {e}", path.display()),
    }
}

/// The temporary file beside the journal, unique to this process.
fn tmp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp.{}", std::process::id()));
    path.with_file_name(name)
}

/// True when the journal's owner is this boot's process `owner_pid` with the
/// recorded start time (and not a zombie).
fn owner_alive(doc: &Document) -> bool {
    doc.boot_id == boot_id()
        && i32::try_from(doc.owner_pid)
            .ok()
            .and_then(read_stat)
            .is_some_and(|s| s.is_alive() && s.start_ticks == doc.owner_start_ticks)
}

/// "1 change", "2 changes".
fn changes(n: usize) -> String {
    plural(n, "change", "changes")
}

/// `n` and the noun in singular or plural.
fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// This boot's id, or an empty string when the kernel does not say.
fn boot_id() -> String {
    fs::read_to_string(BOOT_ID)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Now, in RFC 3339 to the second (UTC).
fn now_rfc3339() -> String {
    let now = time::OffsetDateTime::now_utc();
    now.replace_nanosecond(0)
        .unwrap_or(now)
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// `jitterlab restore`: replays the journal and says what it did.
pub fn restore_command(root: &Path) -> Result<std::process::ExitCode> {
    let lines = restore(root)?;
    if lines.is_empty() {
        println!("nothing to restore");
    }
    for l in lines {
        println!("{l}");
    }
    Ok(std::process::ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::BadInput;
    use serial_test::serial;
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    use std::process::Command;

    /// Points `JITTERLAB_JOURNAL` at a fresh temporary directory and returns
    /// it with the journal path.
    fn journal_env() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.json");
        std::env::set_var(JOURNAL_ENV, &path);
        (dir, path)
    }

    fn me() -> u32 {
        std::process::id()
    }

    fn my_ticks() -> u64 {
        read_stat(me() as i32).unwrap().start_ticks
    }

    fn started_at(path: &Path) -> String {
        let v: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap();
        v["started_at"].as_str().unwrap().to_string()
    }

    /// Makes the journal at `path` look as if its owner had died (its pid
    /// now another process's), as after a `kill -9`.
    fn kill_owner(path: &Path) {
        let mut doc = load(path).unwrap().unwrap();
        doc.owner_start_ticks += 1;
        save(path, &doc).unwrap();
    }

    fn is_bad(e: &anyhow::Error) -> bool {
        e.downcast_ref::<BadInput>().is_some()
    }

    #[test]
    #[serial]
    fn record_and_done_rewrite_the_exact_document() {
        let (_dir, path) = journal_env();
        let mut j = Journal::begin(Path::new("/")).unwrap();
        assert_eq!(j.path(), path);
        let at = started_at(&path);
        // RFC 3339 to the second, UTC: 2025-01-01T12:00:00Z.
        assert_eq!((at.len(), &at[10..11], &at[19..]), (20, "T", "Z"));
        let head = format!(
            "{{\n  \"version\": 1,\n  \"owner_pid\": {},\n  \"owner_start_ticks\": {},\n  \"boot_id\": \"{}\",\n  \"started_at\": \"{at}\",\n",
            me(),
            my_ticks(),
            boot_id()
        );
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            format!("{head}  \"entries\": []\n}}\n")
        );
        let file = j
            .record(Undo::File {
                path: "/sys/x/scaling_governor".into(),
                old: "powersave\n".into(),
            })
            .unwrap();
        let group = j
            .record(Undo::Neighbour {
                pgid: 4250,
                start_ticks: 99,
                argv: vec!["stress-ng".into(), "--cpu".into(), "1".into()],
            })
            .unwrap();
        let netns = j
            .record(Undo::Netns {
                name: "jl-io".into(),
            })
            .unwrap();
        assert_eq!((file, group, netns, j.pending()), (1, 2, 3, 3));
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            format!(
                "{head}  \"entries\": [
    {{
      \"id\": 1,
      \"kind\": \"file\",
      \"path\": \"/sys/x/scaling_governor\",
      \"old\": \"powersave\\n\"
    }},
    {{
      \"id\": 2,
      \"kind\": \"neighbour\",
      \"pgid\": 4250,
      \"start_ticks\": 99,
      \"argv\": [
        \"stress-ng\",
        \"--cpu\",
        \"1\"
      ]
    }},
    {{
      \"id\": 3,
      \"kind\": \"netns\",
      \"name\": \"jl-io\"
    }}
  ]
}}
"
            )
        );
        j.done(group).unwrap();
        j.done(file).unwrap();
        assert_eq!(j.pending(), 1);
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            format!(
                "{head}  \"entries\": [
    {{
      \"id\": 3,
      \"kind\": \"netns\",
      \"name\": \"jl-io\"
    }}
  ]
}}
"
            )
        );
        assert_eq!(
            j.done(2).unwrap_err().to_string(),
            format!("journal {} has no entry 2", path.display())
        );
        // Ids are never reused.
        let next = j
            .record(Undo::Netns {
                name: "jl-b".into(),
            })
            .unwrap();
        assert_eq!(next, 4);
        j.done(next).unwrap();
        j.done(netns).unwrap();
        assert_eq!(j.pending(), 0);
        j.finish().unwrap();
        assert!(!path.exists());
        // No temporary file is left beside it.
        assert_eq!(fs::read_dir(path.parent().unwrap()).unwrap().count(), 0);
    }

    #[test]
    #[serial]
    fn finish_and_drop_keep_a_journal_with_pending_changes() {
        let (_dir, path) = journal_env();
        let mut j = Journal::begin(Path::new("/")).unwrap();
        j.record(Undo::Netns { name: "a".into() }).unwrap();
        j.record(Undo::Netns { name: "b".into() }).unwrap();
        assert_eq!(
            j.finish().unwrap_err().to_string(),
            format!(
                "2 changes to this machine not undone; the journal {} keeps them: run `jitterlab restore`",
                path.display()
            )
        );
        assert!(path.exists());
        fs::remove_file(&path).unwrap();

        let mut j = Journal::begin(Path::new("/")).unwrap();
        j.record(Undo::Netns { name: "a".into() }).unwrap();
        drop(j);
        assert_eq!(load(&path).unwrap().unwrap().entries.len(), 1);
        fs::remove_file(&path).unwrap();

        // Without pending changes, dropping removes it.
        let j = Journal::begin(Path::new("/")).unwrap();
        drop(j);
        assert!(!path.exists());
    }

    #[test]
    #[serial]
    fn begin_refuses_while_the_owner_lives_or_its_changes_are_unreplayed() {
        let (_dir, path) = journal_env();
        let mut j = Journal::begin(Path::new("/")).unwrap();
        let e = Journal::begin(Path::new("/")).unwrap_err();
        assert!(is_bad(&e));
        assert_eq!(
            e.to_string(),
            format!(
                "another jitterlab (pid {}) is running and holds 0 changes to this machine; wait for it or stop it",
                me()
            )
        );
        j.record(Undo::Netns { name: "a".into() }).unwrap();
        assert_eq!(
            Journal::begin(Path::new("/")).unwrap_err().to_string(),
            format!(
                "another jitterlab (pid {}) is running and holds 1 change to this machine; wait for it or stop it",
                me()
            )
        );
        j.record(Undo::Netns { name: "b".into() }).unwrap();
        let at = started_at(&path);
        drop(j);

        // The owner's pid now belongs to another process.
        kill_owner(&path);
        let unreplayed = format!(
            "an unreplayed journal at {} (jitterlab pid {}, started {at}) holds 2 changes; run `jitterlab restore` first",
            path.display(),
            me()
        );
        let e = Journal::begin(Path::new("/")).unwrap_err();
        assert!(is_bad(&e));
        assert_eq!(e.to_string(), unreplayed);

        // Written in another boot.
        let mut doc = load(&path).unwrap().unwrap();
        doc.owner_start_ticks = my_ticks();
        doc.boot_id = "00000000-0000-0000-0000-000000000000".into();
        save(&path, &doc).unwrap();
        assert_eq!(
            Journal::begin(Path::new("/")).unwrap_err().to_string(),
            unreplayed
        );

        // A dead owner's empty journal is simply replaced.
        doc.entries.clear();
        doc.owner_pid = 1;
        save(&path, &doc).unwrap();
        let j = Journal::begin(Path::new("/")).unwrap();
        let now = load(&path).unwrap().unwrap();
        assert_eq!(
            (
                now.owner_pid,
                now.owner_start_ticks,
                now.boot_id,
                now.entries
            ),
            (me(), my_ticks(), boot_id(), vec![])
        );
        j.finish().unwrap();
    }

    #[test]
    #[serial]
    fn a_damaged_or_foreign_journal_is_refused() {
        let (_dir, path) = journal_env();
        fs::write(&path, "{\"version\":1").unwrap();
        let e = Journal::begin(Path::new("/")).unwrap_err();
        assert!(is_bad(&e));
        assert_eq!(
            e.to_string(),
            format!(
                "the journal {} is not a jitterlab journal (EOF while parsing an object at line 1 column 12); undo what it lists by hand, then delete it",
                path.display()
            )
        );
        fs::write(
            &path,
            "{\"version\":2,\"owner_pid\":1,\"owner_start_ticks\":0,\"boot_id\":\"\",\"started_at\":\"\",\"entries\":[]}",
        )
        .unwrap();
        assert_eq!(
            restore(Path::new("/")).unwrap_err().to_string(),
            format!(
                "the journal {} has version 2, this jitterlab reads version 1; replay it with the jitterlab that wrote it",
                path.display()
            )
        );
    }

    /// Every file under `dir` with its bytes.
    fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
        let mut out = Vec::new();
        for entry in fs::read_dir(dir).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                out.extend(tree(&p));
            } else {
                out.push((p.clone(), fs::read(&p).unwrap()));
            }
        }
        out.sort();
        out
    }

    #[test]
    #[serial]
    fn restore_writes_files_back_byte_for_byte_and_removes_the_journal() {
        let (_jdir, path) = journal_env();
        let root = tempfile::tempdir().unwrap();
        let gov = root
            .path()
            .join("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
        let schemata = root.path().join("sys/fs/resctrl/schemata");
        fs::create_dir_all(gov.parent().unwrap()).unwrap();
        fs::create_dir_all(schemata.parent().unwrap()).unwrap();
        fs::write(&gov, "powersave\n").unwrap();
        fs::write(&schemata, "    L3:0=fff;1=fff\n      MB:0=100;1=100\n").unwrap();
        let before = tree(root.path());

        // Two settings journaled, then written; the second value changes twice.
        let mut j = Journal::begin(root.path()).unwrap();
        for (p, new) in [
            (&gov, "performance"),
            (&schemata, "L3:0=f0\n"),
            (&gov, "schedutil"),
        ] {
            let old = fs::read_to_string(p).unwrap();
            j.record(Undo::File {
                path: p.clone(),
                old,
            })
            .unwrap();
            fs::write(p, new).unwrap();
        }
        drop(j); // kill -9: nothing undone.
        assert_ne!(tree(root.path()), before);

        let e = restore(root.path()).unwrap_err();
        assert!(is_bad(&e));
        assert_eq!(
            e.to_string(),
            format!(
                "jitterlab pid {} is still running and holds these changes; stop it with Ctrl-C (it restores them itself)",
                me()
            )
        );
        kill_owner(&path);
        assert_eq!(
            restore(root.path()).unwrap(),
            vec![
                format!("restored {} to \"performance\"", gov.display()),
                format!(
                    "restored {} to \"    L3:0=fff;1=fff\\n      MB:0=100;1=100\"",
                    schemata.display()
                ),
                format!("restored {} to \"powersave\"", gov.display()),
            ]
        );
        assert_eq!(tree(root.path()), before);
        assert!(!path.exists());
        assert_eq!(restore(root.path()).unwrap(), Vec::<String>::new());
    }

    #[test]
    #[serial]
    fn restore_keeps_what_it_could_not_undo() {
        let (_jdir, path) = journal_env();
        let root = tempfile::tempdir().unwrap();
        let gone = root.path().join("no/such/dir/value");
        let ok = root.path().join("value");
        fs::write(&ok, "1\n").unwrap();
        let mut j = Journal::begin(root.path()).unwrap();
        j.record(Undo::File {
            path: gone.clone(),
            old: "0\n".into(),
        })
        .unwrap();
        j.record(Undo::File {
            path: ok.clone(),
            old: "0\n".into(),
        })
        .unwrap();
        j.record(Undo::Netns {
            name: "jl4194305tx".into(),
        })
        .unwrap();
        drop(j);
        kill_owner(&path);
        assert_eq!(
            restore(root.path()).unwrap(),
            vec![
                "network namespace jl4194305tx was already gone".to_string(),
                format!("restored {} to \"0\"", ok.display()),
                format!(
                    "could not restore {} to \"0\": No such file or directory (os error 2)",
                    gone.display()
                ),
            ]
        );
        assert_eq!(fs::read_to_string(&ok).unwrap(), "0\n");
        let left = load(&path).unwrap().unwrap();
        assert_eq!(
            left.entries,
            vec![Entry {
                id: 1,
                undo: Undo::File {
                    path: gone,
                    old: "0\n".into()
                }
            }]
        );
        fs::remove_file(&path).unwrap();
    }

    #[test]
    #[serial]
    fn restore_kills_a_journaled_process_group_and_leaves_no_member() {
        let (_jdir, path) = journal_env();
        let mut leader = Command::new("sleep")
            .arg("100")
            .process_group(0)
            .spawn()
            .unwrap();
        let pgid = leader.id() as i32;
        let mut member = Command::new("sleep")
            .arg("100")
            .process_group(pgid)
            .spawn()
            .unwrap();
        assert_eq!(group_members(pgid), vec![pgid, member.id() as i32]);
        let mut j = Journal::begin(Path::new("/")).unwrap();
        j.record(Undo::Neighbour {
            pgid,
            start_ticks: read_stat(pgid).unwrap().start_ticks,
            argv: vec!["sleep".into(), "100".into()],
        })
        .unwrap();
        drop(j);
        kill_owner(&path);
        assert_eq!(
            restore(Path::new("/")).unwrap(),
            vec![format!(
                "killed neighbour process group {pgid} (`sleep 100`): 2 processes"
            )]
        );
        assert_eq!(group_members(pgid), Vec::<i32>::new());
        assert_eq!(leader.wait().unwrap().signal(), Some(9));
        assert_eq!(member.wait().unwrap().signal(), Some(9));
        assert!(!path.exists());
    }

    #[test]
    #[serial]
    fn restore_leaves_reused_pids_and_other_boots_alone() {
        let (_jdir, path) = journal_env();
        let mut stranger = Command::new("sleep")
            .arg("100")
            .process_group(0)
            .spawn()
            .unwrap();
        let pgid = stranger.id() as i32;
        let ticks = read_stat(pgid).unwrap().start_ticks;
        let mut j = Journal::begin(Path::new("/")).unwrap();
        // An older neighbour whose pid the stranger got.
        j.record(Undo::Neighbour {
            pgid,
            start_ticks: ticks - 1,
            argv: vec!["hackbench".into()],
        })
        .unwrap();
        drop(j);
        kill_owner(&path);
        assert_eq!(
            restore(Path::new("/")).unwrap(),
            vec![format!(
                "left process group {pgid} alone: pid {pgid} now belongs to another process (started at tick {ticks}, the neighbour `hackbench` at tick {})",
                ticks - 1
            )]
        );
        assert_eq!(group_members(pgid), vec![pgid]);

        // A journal of another boot: its groups died with that boot.
        let mut j = Journal::begin(Path::new("/")).unwrap();
        j.record(Undo::Neighbour {
            pgid,
            start_ticks: ticks,
            argv: vec!["sleep".into(), "100".into()],
        })
        .unwrap();
        drop(j);
        let mut doc = load(&path).unwrap().unwrap();
        doc.boot_id = "00000000-0000-0000-0000-000000000000".into();
        save(&path, &doc).unwrap();
        assert_eq!(
            restore(Path::new("/")).unwrap(),
            vec![format!(
                "neighbour process group {pgid} (`sleep 100`) ended with the reboot"
            )]
        );
        assert_eq!(group_members(pgid), vec![pgid]);
        assert!(!path.exists());

        stranger.kill().unwrap();
        stranger.wait().unwrap();
        // A group that ended on its own.
        let mut j = Journal::begin(Path::new("/")).unwrap();
        j.record(Undo::Neighbour {
            pgid,
            start_ticks: ticks,
            argv: vec!["sleep".into(), "100".into()],
        })
        .unwrap();
        drop(j);
        kill_owner(&path);
        assert_eq!(
            restore(Path::new("/")).unwrap(),
            vec![format!(
                "neighbour process group {pgid} (`sleep 100`) had already ended"
            )]
        );
    }

    #[test]
    #[serial]
    fn journal_lives_under_the_sysroot_else_in_the_runtime_dir() {
        let saved = (
            std::env::var_os(JOURNAL_ENV),
            std::env::var_os("XDG_RUNTIME_DIR"),
        );
        std::env::remove_var(JOURNAL_ENV);
        let root = tempfile::tempdir().unwrap();
        let j = Journal::begin(root.path()).unwrap();
        assert_eq!(j.path(), root.path().join("run/jitterlab/journal.json"));
        assert!(j.path().exists());
        j.finish().unwrap();

        // `run` cannot be a directory: the runtime directory takes over.
        let root = tempfile::tempdir().unwrap();
        fs::write(root.path().join("run"), "").unwrap();
        let xdg = tempfile::tempdir().unwrap();
        std::env::set_var("XDG_RUNTIME_DIR", xdg.path());
        let j = Journal::begin(root.path()).unwrap();
        assert_eq!(j.path(), xdg.path().join("jitterlab/journal.json"));
        j.finish().unwrap();

        std::env::remove_var("XDG_RUNTIME_DIR");
        let e = Journal::begin(root.path()).unwrap_err();
        assert!(is_bad(&e));
        assert_eq!(
            e.to_string(),
            format!(
                "cannot keep a journal of changes to this machine: cannot write {}/run/jitterlab (Not a directory (os error 20)) and $XDG_RUNTIME_DIR is not set; run as root or set XDG_RUNTIME_DIR",
                root.path().display()
            )
        );
        std::env::set_var("XDG_RUNTIME_DIR", root.path().join("run"));
        assert_eq!(
            restore(root.path()).unwrap_err().to_string(),
            format!(
                "cannot keep a journal of changes to this machine: cannot write {0}/run/jitterlab (Not a directory (os error 20)) nor {0}/run/jitterlab: Not a directory (os error 20); run as root or set XDG_RUNTIME_DIR",
                root.path().display()
            )
        );
        for (key, value) in [(JOURNAL_ENV, saved.0), ("XDG_RUNTIME_DIR", saved.1)] {
            match value {
                Some(v) => std::env::set_var(key, v),
                None => std::env::remove_var(key),
            }
        }
    }
}
