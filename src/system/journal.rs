//! The on-disk journal of every change jitterlab makes to the machine, so
//! that `jitterlab restore` can undo them after a `kill -9` (DESIGN rule 4),
//! and the machine lock that keeps two jitterlabs from changing the machine
//! at once.
//!
//! Normal ends, errors, Ctrl-C and SIGTERM undo every change in the process
//! that made it. `SIGKILL` (or a crash, or the OOM killer) cannot be caught,
//! so each change is written here *before* it is made — or, for a process,
//! right after it exists — and forgotten once it has been undone:
//!
//! - [`Undo::Neighbour`]: a neighbour's process group, to be killed
//!   (here);
//! - [`Undo::Netns`]: a network namespace, to be deleted (here);
//! - [`Undo::File`]: a sysfs/procfs value, to be written back verbatim —
//!   only to a file on the settings' allow-list
//!   ([`crate::system::settings::files`]), never through a symlink, never
//!   creating one (here);
//! - [`Undo::Stopped`]: a process jitterlab stopped with `SIGSTOP` (a
//!   running irqbalance, paused while IRQs are moved), to be resumed with
//!   `SIGCONT` — only while its pid and start time still match (here,
//!   [`resume_stopped`]).
//! - [`Undo::ResctrlGroup`]: a resctrl group jitterlab created, to be
//!   removed (`{ "kind": "resctrl-group", "path": "/sys/fs/resctrl/rt",
//!   "files": [] }`; `files` lists what a fake tree's stand-in created;
//!   [`crate::system::resctrl_undo`]);
//! - [`Undo::ResctrlMount`]: resctrl, mounted by jitterlab, to be
//!   unmounted (`{ "kind": "resctrl-mount", "target": "/sys/fs/resctrl" }`;
//!   [`crate::system::resctrl_undo`]).
//! - [`Undo::WorkDir`]: a private work directory, to be removed with its
//!   content (`{ "kind": "work-dir", "path": "/run/jitterlab/jitterlab-…" }`;
//!   [`crate::system::workdir_undo`]);
//! - [`Undo::Cgroup`]: the cgroup of a cell's neighbours, every process in
//!   it killed and the group removed (`{ "kind": "cgroup", "path":
//!   "/sys/fs/cgroup/jitterlab-…" }`; [`crate::system::cgroup_undo`]).
//!
//! **Layering.** The modules that journal their changes — the settings,
//! the neighbours' cgroup, the work directories — use this module, so it
//! never uses them: each undo step lives here or in a small module below
//! the journal (`resctrl_undo`, `workdir_undo`, `cgroup_undo`, and the
//! settings' allow-list `settings::files`), which the modules above may
//! call too.
//!
//! **Where.** jitterlab's directory is `<sysroot>/run/jitterlab`. `/run` is
//! cleared by a reboot, exactly when the processes and sysfs values the
//! journal describes are gone too. Without the right to create that
//! directory (not root) it is `$XDG_RUNTIME_DIR/jitterlab`, which has the
//! same lifetime. It holds the journal, `journal.json`, and the machine
//! lock, `lock`. `JITTERLAB_JOURNAL` (a full file path) moves the journal,
//! never the lock.
//!
//! **Modes.** jitterlab creates its directory `0700` and the journal and
//! the lock `0600`. An existing directory must be a real directory (not a
//! symlink) owned by this user and writable by nobody else, else jitterlab
//! refuses with the reason: another local user who could write there could
//! plant a journal for root to replay. The same holds for the directory of
//! a `JITTERLAB_JOURNAL` path. The journal itself is never read or written
//! through a symlink: a symlink at the journal path is refused with what it
//! is, and the temporary file `<journal>.tmp.<pid>` is created afresh
//! (`O_CREAT|O_EXCL|O_NOFOLLOW`, after unlinking — never following — a
//! stale one a dead process of the same pid left).
//!
//! **Format.** One JSON document, rewritten atomically for every change
//! (write the temporary file, fsync it, rename it over the journal, fsync
//! the directory), so a crash leaves either the old or the new document,
//! never half of one:
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
//! whether the journal's pids, process groups and values can still exist
//! at all.
//!
//! **One machine, one lock.** Everything that changes settings or starts
//! neighbours — `bench`, `apply`, a `run` whose probe changes the machine
//! (IRQ moves, namespaces), `restore` — first takes an exclusive `flock` on
//! [`MachineLock`] (`<dir>/lock`), whatever `JITTERLAB_JOURNAL` says, so two
//! jitterlabs with different journals still exclude each other. The kernel
//! lets the lock go when its holder dies, even by `kill -9`; the holder
//! writes `PID START_TICKS COMMAND` into it, so the refusal can name it,
//! and removes it when it lets go. Under a fake sysroot the lock is the
//! fake tree's, so parallel tests do not collide.
//!
//! **One owner.** [`Journal::begin_as`] takes the lock and then refuses
//! while a journal holds changes a dead jitterlab left: a journal that is
//! never replayed would leave the machine changed. The journal is claimed
//! with a hard link (which fails when the file exists), so even two
//! jitterlabs that do not share a lock cannot both take it. A journal of
//! another boot is dropped with a note instead: its values belong to a
//! machine state that no longer exists.
//!
//! **Measuring only.** A `run` that changes nothing still refuses while a
//! dead jitterlab's changes are unreplayed (the machine is not as it
//! should be) or while a `bench` or a changing `run` holds the lock (it
//! would disturb that measurement), but runs beside a live `apply` — that
//! is what `apply` is for. [`Journal::on_demand`] checks that and takes the
//! lock and the journal only at its first [`Journal::record`].
//!
//! **Restore** ([`replay`]) puts back every entry, newest first. An entry
//! whose target is gone (an IRQ freed, a namespace or process group that
//! ended, a resctrl group removed) counts as restored and is dropped. An
//! entry that still needs a person stays in the journal with a line that
//! says what failed and what to do; a file entry that no setting writes
//! is refused with that reason and kept. `jitterlab restore` exits 0 when
//! the journal is gone, 1 when entries stay (so `run` and `bench` keep
//! refusing until a person has seen to them and `restore` ran again; a
//! file that holds its old value again is dropped then), and 2 for bad
//! input (a journal that is not jitterlab's, a live owner).
//!
//! Processes and process groups are live things: they are looked up in the
//! real `/proc`, never under the sysroot.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use jitterlab_sys as sys;
use serde::{Deserialize, Serialize};

use crate::error::bad;
use crate::output::{errln, outln};
use crate::system::procs::{group_members, read_stat, wait_for};
use crate::system::settings::files::{self, is_symlink_error, read_nofollow};

/// The environment variable that names the journal file (tests use it).
pub const JOURNAL_ENV: &str = "JITTERLAB_JOURNAL";
/// The journal's schema version.
const VERSION: u32 = 1;
/// Where the kernel names the current boot.
const BOOT_ID: &str = "/proc/sys/kernel/random/boot_id";
/// How long [`replay`] waits for a killed process group to vanish.
const KILL_WAIT: Duration = Duration::from_secs(3);
/// How long [`MachineLock::take`] retries a held lock before it refuses:
/// long enough to ride over a holder that is just letting go.
const LOCK_WAIT: Duration = Duration::from_millis(100);

/// What the jitterlab holding the machine lock is doing: written into the
/// lock file, so another jitterlab can name it, and a measuring-only run
/// can tell `apply` (which it may run beside) from the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holder {
    /// `jitterlab run …` whose probe changes the machine.
    Run,
    /// `jitterlab bench`.
    Bench,
    /// `jitterlab apply`.
    Apply,
    /// `jitterlab restore`.
    Restore,
}

impl Holder {
    /// The subcommand.
    pub fn name(self) -> &'static str {
        match self {
            Holder::Run => "run",
            Holder::Bench => "bench",
            Holder::Apply => "apply",
            Holder::Restore => "restore",
        }
    }

    fn parse(word: &str) -> Option<Holder> {
        [Holder::Run, Holder::Bench, Holder::Apply, Holder::Restore]
            .into_iter()
            .find(|h| h.name() == word)
    }
}

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
    /// A file's old content: written back verbatim, only to a file on the
    /// settings' allow-list ([`crate::system::settings::files`]).
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
    /// ([`crate::system::workdir_undo::undo`]). Journaled before the `mkdir`.
    WorkDir {
        /// The directory (`<runtime dir>/jitterlab-XXXXXXXX` or
        /// `<disk base>/jitterlab-disk-XXXXXXXX`).
        path: PathBuf,
    },
    /// A cgroup jitterlab made for a cell's neighbours: every process in it
    /// killed, then removed ([`crate::system::cgroup_undo::undo`]).
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
/// Either way the machine lock is let go.
#[derive(Debug)]
pub struct Journal {
    root: PathBuf,
    holder: Holder,
    /// The lock and the claimed file; `None` until the first change of an
    /// [`Journal::on_demand`] journal.
    held: Option<Held>,
    next_id: u64,
    closed: bool,
}

/// A claimed journal file and the machine lock held while it is ours.
#[derive(Debug)]
struct Held {
    path: PathBuf,
    doc: Document,
    /// Let go after the journal file is dealt with (field order).
    _lock: MachineLock,
}

/// Who would be refused, for [`refusal`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Purpose {
    /// A run that changes nothing on the machine.
    Measure,
    /// Anything that takes the machine lock.
    Change,
}

impl Journal {
    /// [`Journal::begin_as`] for a `run`, as the tests use it.
    #[cfg(test)]
    pub fn begin(root: &Path) -> Result<Journal> {
        Journal::begin_as(root, Holder::Run)
    }

    /// Takes the machine lock and creates the journal for this process.
    /// Refuses with BadInput: lock held → "another jitterlab (pid N,
    /// `jitterlab bench`) is changing this machine; …"; a journal whose
    /// owner is alive → "another jitterlab (pid N) is running and holds K
    /// changes …"; owner dead → "an unreplayed journal at PATH (jitterlab
    /// pid N, started T) holds K changes; run `jitterlab restore` first". A
    /// journal of a dead owner with zero entries, or of another boot, is
    /// replaced (the latter with a note on stderr).
    pub fn begin_as(root: &Path, holder: Holder) -> Result<Journal> {
        let held = claim(root, holder)?;
        Ok(Journal {
            root: root.to_path_buf(),
            holder,
            held: Some(held),
            next_id: 1,
            closed: false,
        })
    }

    /// The journal of a `run` that may change nothing: refuses now (exit 2)
    /// when a dead jitterlab's changes are unreplayed or when anything but
    /// a live `apply` holds the machine lock; takes the lock and the
    /// journal only at the first [`Journal::record`] (which then refuses as
    /// [`Journal::begin_as`] does). Creates nothing until then.
    pub fn on_demand(root: &Path) -> Result<Journal> {
        if let Some(why) = refusal(root, Purpose::Measure)? {
            return Err(bad(why));
        }
        Ok(Journal {
            root: root.to_path_buf(),
            holder: Holder::Run,
            held: None,
            next_id: 1,
            closed: false,
        })
    }

    /// The sysroot the journal was begun for (the settings check their
    /// files against it, [`crate::system::settings::files`]).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Journals `undo` and returns its id; the entry is on disk (fsynced)
    /// before this returns. The first change of an on-demand journal takes
    /// the lock and claims the file first.
    pub fn record(&mut self, undo: Undo) -> Result<u64> {
        if self.held.is_none() {
            self.held = Some(claim(&self.root, self.holder)?);
        }
        let held = self.held.as_mut().expect("claimed above");
        let id = self.next_id;
        held.doc.entries.push(Entry { id, undo });
        if let Err(e) = save(&held.path, &held.doc) {
            held.doc.entries.pop();
            return Err(e);
        }
        self.next_id += 1;
        Ok(id)
    }

    /// Forgets entry `id`: its change was undone normally.
    pub fn done(&mut self, id: u64) -> Result<()> {
        let Some(held) = self.held.as_mut() else {
            bail!("the journal has no entry {id}");
        };
        let Some(at) = held.doc.entries.iter().position(|e| e.id == id) else {
            bail!("journal {} has no entry {id}", held.path.display());
        };
        let entry = held.doc.entries.remove(at);
        if let Err(e) = save(&held.path, &held.doc) {
            held.doc.entries.insert(at, entry);
            return Err(e);
        }
        Ok(())
    }

    #[cfg(test)]
    /// How many changes are journaled and not yet undone.
    pub fn pending(&self) -> usize {
        self.held.as_ref().map_or(0, |h| h.doc.entries.len())
    }

    #[cfg(test)]
    /// The journal file (empty before an on-demand journal claimed one).
    pub fn path(&self) -> &Path {
        self.held.as_ref().map_or(Path::new(""), |h| &h.path)
    }

    /// Ends the journal: removes the file when no entry is pending; else
    /// leaves it for `jitterlab restore` and says so in the error. Lets the
    /// machine lock go either way.
    pub fn finish(mut self) -> Result<()> {
        self.closed = true;
        let Some(held) = self.held.as_ref() else {
            return Ok(());
        };
        if held.doc.entries.is_empty() {
            remove_if_present(&held.path)?;
            return sync_dir(&held.path);
        }
        bail!(
            "{} to this machine not undone; the journal {} keeps them: run `jitterlab restore`",
            changes(held.doc.entries.len()),
            held.path.display()
        )
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        if let Some(held) = &self.held {
            if !self.closed && held.doc.entries.is_empty() {
                let _ = fs::remove_file(&held.path);
            }
        }
    }
}

/// Takes the machine lock for `holder` and claims the journal file (see
/// [`Journal::begin_as`]).
fn claim(root: &Path, holder: Holder) -> Result<Held> {
    let lock = MachineLock::take(root, holder)?;
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
                return Err(bad(live_owner(&old)));
            }
            if !old.entries.is_empty() {
                match other_boot_note(&path, &old) {
                    Some(note) => eprintln!("jitterlab: note: {note}"),
                    None => return Err(bad(unreplayed(&path, &old))),
                }
            }
            remove_if_present(&path)?;
        }
        write_synced(&tmp, &doc)?;
        let claimed = fs::hard_link(&tmp, &path);
        let _ = fs::remove_file(&tmp);
        match claimed {
            Ok(()) => {
                sync_dir(&path)?;
                return Ok(Held {
                    path,
                    doc,
                    _lock: lock,
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

/// Why a jitterlab of `purpose` would be refused now, or `None`; looks
/// only, creates and changes nothing (a `--dry-run` says it, a
/// measuring-only run refuses with it).
fn refusal(root: &Path, purpose: Purpose) -> Result<Option<String>> {
    if let Some(dir) = state_dir(root, false)? {
        if let Some(h) = live_holder(&dir.join("lock")) {
            if purpose == Purpose::Change || h.holder != Some(Holder::Apply) {
                return Ok(Some(h.refusal()));
            }
        }
    }
    let Some(path) = journal_path(root, false)? else {
        return Ok(None);
    };
    let Some(old) = load(&path)? else {
        return Ok(None);
    };
    if owner_alive(&old) {
        // A live owner puts its changes back itself.
        return Ok((purpose == Purpose::Change).then(|| live_owner(&old)));
    }
    if old.entries.is_empty() || other_boot_note(&path, &old).is_some() {
        return Ok(None);
    }
    Ok(Some(unreplayed(&path, &old)))
}

/// For a `--dry-run` of a command that takes the machine lock: why the
/// real run would be refused now (the lock is held, a journal is
/// unreplayed), or `None`. Creates and changes nothing.
pub fn would_refuse(root: &Path) -> Result<Option<String>> {
    refusal(root, Purpose::Change)
}

/// "another jitterlab (pid N) is running and holds K changes …".
fn live_owner(doc: &Document) -> String {
    format!(
        "another jitterlab (pid {}) is running and holds {} to this machine; wait for it or stop it",
        doc.owner_pid,
        changes(doc.entries.len())
    )
}

/// "an unreplayed journal at PATH … run `jitterlab restore` first".
fn unreplayed(path: &Path, doc: &Document) -> String {
    format!(
        "an unreplayed journal at {} (jitterlab pid {}, started {}) holds {}; run `jitterlab restore` first",
        path.display(),
        doc.owner_pid,
        doc.started_at,
        changes(doc.entries.len())
    )
}

/// The note for a journal written in another boot whose every entry ended
/// with that boot (so it is dropped, nothing written back); `None` for a
/// journal of this boot, or one with an entry that outlives a reboot.
fn other_boot_note(path: &Path, doc: &Document) -> Option<String> {
    if !other_boot(doc)
        || doc
            .entries
            .iter()
            .any(|e| ended_with_boot(&e.undo).is_none())
    {
        return None;
    }
    Some(format!(
        "dropped the journal {} of another boot (jitterlab pid {}, started {}): its {} ended with that boot, nothing is written back",
        path.display(),
        doc.owner_pid,
        doc.started_at,
        changes(doc.entries.len())
    ))
}

/// The exclusive `flock` on `<dir>/lock` that everything which changes the
/// machine holds (module doc). Let go — and the file removed — on drop;
/// the kernel lets it go when the process dies.
#[derive(Debug)]
pub struct MachineLock {
    file: File,
    path: PathBuf,
}

/// The live jitterlab a lock file names.
struct LockHolder {
    pid: i32,
    holder: Option<Holder>,
    command: String,
    restoring: bool,
}

impl LockHolder {
    /// The refusal for whoever meets this holder.
    fn refusal(&self) -> String {
        if self.restoring {
            format!(
                "jitterlab pid {} (`jitterlab {}`) is still running and holds its changes; stop it with Ctrl-C (it restores them itself)",
                self.pid, self.command
            )
        } else {
            format!(
                "another jitterlab (pid {}, `jitterlab {}`) is changing this machine; wait for it to end or stop it (Ctrl-C puts back what it changed)",
                self.pid, self.command
            )
        }
    }
}

impl MachineLock {
    /// Takes the lock for `holder` (the directory created, module doc);
    /// retries for [`LOCK_WAIT`], then refuses with BadInput naming the
    /// holder.
    pub fn take(root: &Path, holder: Holder) -> Result<MachineLock> {
        let Some(dir) = state_dir(root, true)? else {
            bail!("no directory for the machine lock");
        };
        let path = dir.join("lock");
        let deadline = Instant::now() + LOCK_WAIT;
        loop {
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .custom_flags(sys::O_NOFOLLOW)
                .open(&path)
                .map_err(|e| {
                    if is_symlink_error(&e) {
                        bad(format!(
                            "the machine lock {0} is a symlink, not jitterlab's lock: jitterlab never follows a symlink there; remove it (rm {0}) and run again",
                            path.display()
                        ))
                    } else {
                        anyhow!("cannot open the machine lock {}: {e}", path.display())
                    }
                })?;
            match sys::flock(&file, sys::FlockOp::TryExclusive) {
                Ok(()) => {
                    // The previous holder may have removed the file between
                    // our open and our lock: then lock the new one.
                    if !same_file(&file, &path) {
                        continue;
                    }
                    let me = std::process::id();
                    let ticks = read_stat(me as i32).map_or(0, |s| s.start_ticks);
                    let mut f = &file;
                    f.set_len(0)
                        .and_then(|()| writeln!(f, "{me} {ticks} {}", holder.name()))
                        .with_context(|| {
                            format!("cannot write the machine lock {}", path.display())
                        })?;
                    return Ok(MachineLock { file, path });
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    if Instant::now() >= deadline {
                        let why = match live_holder(&path) {
                            Some(mut h) => {
                                h.restoring = holder == Holder::Restore;
                                h.refusal()
                            }
                            None => format!(
                                "another jitterlab holds the machine lock {}; wait for it to end or stop it",
                                path.display()
                            ),
                        };
                        return Err(bad(why));
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) => bail!("cannot lock {}: {e}", path.display()),
            }
        }
    }
}

impl Drop for MachineLock {
    fn drop(&mut self) {
        // Removed while still locked, so whoever opens the path next gets
        // a new file and a lock of its own; closing lets the lock go.
        if same_file(&self.file, &self.path) {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// True when `path` (not followed) is the file `file` has open.
fn same_file(file: &File, path: &Path) -> bool {
    match (file.metadata(), fs::symlink_metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// The live jitterlab a lock file names (`PID START_TICKS COMMAND`), read
/// without taking the lock; `None` when there is none, or it died.
fn live_holder(lock: &Path) -> Option<LockHolder> {
    let text = read_nofollow(lock).ok()?;
    let mut words = text.split_whitespace();
    let pid: i32 = words.next()?.parse().ok()?;
    let ticks: u64 = words.next()?.parse().ok()?;
    let command = words.next().unwrap_or("?").to_string();
    let alive = read_stat(pid).is_some_and(|s| s.is_alive() && s.start_ticks == ticks);
    alive.then(|| LockHolder {
        pid,
        holder: Holder::parse(&command),
        command,
        restoring: false,
    })
}

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
/// first, under the machine lock (module doc, **Restore**); removes the
/// journal when every entry was handled, else keeps the entries that were
/// not. No journal → no lines (the caller prints "nothing to restore").
/// Owner alive → error "jitterlab pid N is still running and holds these
/// changes; stop it with Ctrl-C (it restores them itself)".
pub fn replay(root: &Path) -> Result<Replay> {
    let _lock = MachineLock::take(root, Holder::Restore)?;
    let path = locate(root)?;
    let Some(mut doc) = load(&path)? else {
        return Ok(Replay {
            lines: Vec::new(),
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
    let mut lines = Vec::new();
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
fn ended_with_boot(undo: &Undo) -> Option<String> {
    Some(match undo {
        Undo::WorkDir { .. } => return None,
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
            crate::system::resctrl_undo::remove_group(path, files)
        }
        Undo::ResctrlMount { target } => crate::system::resctrl_undo::unmount(target),
        Undo::WorkDir { path } => crate::system::workdir_undo::undo(path),
        Undo::Cgroup { path } => crate::system::cgroup_undo::undo(path),
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
fn advice(undo: &Undo) -> Option<String> {
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

/// The journal file for `root` (see the module doc), its directory created.
fn locate(root: &Path) -> Result<PathBuf> {
    journal_path(root, true)?.ok_or_else(|| anyhow!("no directory for the journal"))
}

/// The journal file for `root`: `JITTERLAB_JOURNAL`, else in jitterlab's
/// directory ([`state_dir`]). With `create`, the directory is created
/// (`0700`); without, `None` when it does not exist. Refuses a directory
/// others could write in.
fn journal_path(root: &Path, create: bool) -> Result<Option<PathBuf>> {
    let Some(path) = std::env::var_os(JOURNAL_ENV).filter(|p| !p.is_empty()) else {
        return Ok(state_dir(root, create)?.map(|d| d.join("journal.json")));
    };
    let path = PathBuf::from(path);
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    match private_dir(dir, create, false) {
        Ok(true) => Ok(Some(path)),
        Ok(false) => Ok(None),
        Err(DirProblem::Unusable(_)) if !create => Ok(None),
        Err(DirProblem::Unusable(e)) => Err(anyhow!(
            "cannot create the directory of {JOURNAL_ENV}={}: {e}",
            path.display()
        )),
        Err(DirProblem::Unsafe(why)) => {
            Err(bad(format!("{JOURNAL_ENV}={}: {why}", path.display())))
        }
    }
}

/// jitterlab's runtime directory for `root`, created (`0700`): the journal
/// lives there (unless `JITTERLAB_JOURNAL` says otherwise), and so do the
/// private work directories of [`crate::system::workdir`].
pub(crate) fn runtime_dir(root: &Path) -> Result<PathBuf> {
    state_dir(root, true)?.ok_or_else(|| anyhow!("no runtime directory for jitterlab"))
}

/// jitterlab's directory for `root`: `<root>/run/jitterlab`, else
/// `$XDG_RUNTIME_DIR/jitterlab` (module doc). With `create`, created
/// `0700`, and an error (BadInput) naming both when neither can be had;
/// without, `None` when neither exists. A directory that exists but is not
/// private to this user is refused with the reason.
fn state_dir(root: &Path, create: bool) -> Result<Option<PathBuf>> {
    let system = root.join("run/jitterlab");
    let system_err = match private_dir(&system, create, true) {
        Ok(true) => return Ok(Some(system)),
        Ok(false) => String::new(),
        Err(DirProblem::Unusable(e)) => e,
        Err(DirProblem::Unsafe(why)) => return Err(bad(why)),
    };
    let user_err = match std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        Some(dir) => {
            let user = PathBuf::from(dir).join("jitterlab");
            match private_dir(&user, create, true) {
                Ok(true) => return Ok(Some(user)),
                Ok(false) => String::new(),
                Err(DirProblem::Unusable(e)) => format!("nor {}: {e}", user.display()),
                Err(DirProblem::Unsafe(why)) => return Err(bad(why)),
            }
        }
        None => "and $XDG_RUNTIME_DIR is not set".to_string(),
    };
    if !create {
        return Ok(None);
    }
    Err(bad(format!(
        "cannot keep a journal of changes to this machine: cannot write {} ({system_err}) {user_err}; run as root or set XDG_RUNTIME_DIR",
        system.display()
    )))
}

/// Why a directory cannot hold the journal or the lock.
#[derive(Debug)]
enum DirProblem {
    /// It cannot be had (not creatable, not writable, another user's when
    /// not root): try the next candidate.
    Unusable(String),
    /// It exists but others could write in it (or it is a symlink, or
    /// another user's while root): refuse, naming the fix.
    Unsafe(String),
}

/// Checks (with `create`, first creates, `0700`) the directory `dir`:
/// `Ok(false)` when it does not exist and `create` is off, `Ok(true)` when
/// it is a directory of this user's that nobody else may write in. `ours`:
/// jitterlab's own directory, which must not be a symlink and is tightened
/// to `0700`; else (the directory of a `JITTERLAB_JOURNAL` path) it is
/// followed and left as it is.
fn private_dir(dir: &Path, create: bool, ours: bool) -> std::result::Result<bool, DirProblem> {
    if create {
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| DirProblem::Unusable(e.to_string()))?;
    }
    let meta = if ours {
        fs::symlink_metadata(dir)
    } else {
        fs::metadata(dir)
    };
    let meta = match meta {
        Ok(m) => m,
        Err(e) if e.kind() == ErrorKind::NotFound && !create => return Ok(false),
        Err(e) => return Err(DirProblem::Unusable(e.to_string())),
    };
    let shown = dir.display();
    if meta.file_type().is_symlink() {
        return Err(DirProblem::Unsafe(format!(
            "{shown} is a symlink, not jitterlab's directory: jitterlab never follows a symlink there; remove it (rm {shown}) and run again"
        )));
    }
    if !meta.is_dir() {
        return Err(DirProblem::Unusable("not a directory".into()));
    }
    let me = sys::effective_uid();
    if meta.uid() != me {
        if me == 0 {
            return Err(DirProblem::Unsafe(format!(
                "{shown} belongs to user {}, not to root: another user may have made it to catch jitterlab's journal; remove it (rm -r {shown}) or choose a directory of root's own",
                meta.uid()
            )));
        }
        return Err(DirProblem::Unusable(format!(
            "it belongs to user {}",
            meta.uid()
        )));
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(DirProblem::Unsafe(format!(
            "{shown} is writable by other users (mode {mode:04o}): they could plant a journal there for root to replay; make it private (chmod 700 {shown}) or choose another directory"
        )));
    }
    if ours && mode & 0o077 != 0 {
        let _ = fs::set_permissions(dir, fs::Permissions::from_mode(0o700));
    }
    if !sys::can_write(dir) {
        return Err(DirProblem::Unusable("not writable".into()));
    }
    Ok(true)
}

/// The journal at `path`, or `None` when there is none. Never follows a
/// symlink: one at the journal path is refused with what it is.
fn load(path: &Path) -> Result<Option<Document>> {
    let symlink = || {
        let target = fs::read_link(path)
            .map(|t| t.display().to_string())
            .unwrap_or_else(|_| "?".into());
        bad(format!(
            "the journal path {0} is a symlink (to {target}), not a journal: jitterlab never follows a symlink there; remove it (rm {0}) and run again",
            path.display()
        ))
    };
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => return Err(symlink()),
        Ok(m) if !m.is_file() => {
            return Err(bad(format!(
            "the journal path {} is {}, not a journal; remove it, or point {JOURNAL_ENV} at a file",
            path.display(),
            if m.is_dir() {
                "a directory"
            } else {
                "not a regular file"
            }
        )))
        }
        Ok(_) => {}
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => bail!("cannot read the journal {}: {e}", path.display()),
    }
    let text = match read_nofollow(path) {
        Ok(t) => t,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) if is_symlink_error(&e) => return Err(symlink()),
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

/// Writes `doc` to a new file `tmp` (mode `0600`) and fsyncs it. A file
/// already at `tmp` — left by a dead process that had this pid, or planted
/// — is unlinked first (never followed), and the new one is created with
/// `O_CREAT|O_EXCL|O_NOFOLLOW`, so the write can never land anywhere else.
fn write_synced(tmp: &Path, doc: &Document) -> Result<()> {
    let mut text = serde_json::to_string_pretty(doc)?;
    text.push('\n');
    let write = || -> std::io::Result<()> {
        match fs::remove_file(tmp) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(sys::O_NOFOLLOW)
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

/// True when the journal names a boot, and it is not this one.
fn other_boot(doc: &Document) -> bool {
    let now = boot_id();
    !doc.boot_id.is_empty() && !now.is_empty() && doc.boot_id != now
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

/// `jitterlab restore`: replays the journal and says what it did, one line
/// per entry on stdout. Exit 0 when nothing is left; 1 when entries stay
/// in the journal, with a line on stderr saying so and what to do; bad
/// input (exit 2) is the caller's.
pub fn restore_command(root: &Path) -> Result<std::process::ExitCode> {
    let r = replay(root)?;
    if r.lines.is_empty() {
        outln!("nothing to restore")?;
    }
    // The lines quote what the journal recorded (a neighbour's command):
    // its control characters are escaped.
    for l in &r.lines {
        outln!("{}", crate::report::safe::shown(l))?;
    }
    if r.left > 0 {
        errln!("jitterlab: {}", left_message(&r));
        return Ok(std::process::ExitCode::from(1));
    }
    Ok(std::process::ExitCode::SUCCESS)
}

/// What `restore` says on stderr when entries stay.
fn left_message(r: &Replay) -> String {
    let (stay, lines) = if r.left == 1 {
        ("stays", "its line above says")
    } else {
        ("stay", "their lines above say")
    };
    format!(
        "{} could not be undone and {stay} in the journal {}: do by hand what {lines}, then run `jitterlab restore` again",
        changes(r.left),
        r.path.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::BadInput;
    use serial_test::serial;
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    use std::process::Command;

    /// Points `JITTERLAB_JOURNAL` at a fresh temporary directory and returns
    /// it with the journal path. Without root, `/run/jitterlab` cannot hold
    /// the machine lock: that directory is the runtime directory too, as
    /// `$XDG_RUNTIME_DIR` is for any user.
    fn journal_env() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.json");
        std::env::set_var(JOURNAL_ENV, &path);
        if sys::effective_uid() != 0 {
            static RUNTIME: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
            let runtime = RUNTIME.get_or_init(|| tempfile::tempdir().unwrap());
            std::env::set_var("XDG_RUNTIME_DIR", runtime.path());
        }
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

    /// "another jitterlab (pid ME, `jitterlab run`) is changing …".
    fn held_by_me(what: &str) -> String {
        format!(
            "another jitterlab (pid {}, `jitterlab {what}`) is changing this machine; wait for it to end or stop it (Ctrl-C puts back what it changed)",
            me()
        )
    }

    #[test]
    #[serial]
    fn begin_refuses_while_the_lock_is_held_or_changes_are_unreplayed() {
        let (_dir, path) = journal_env();
        let mut j = Journal::begin(Path::new("/")).unwrap();
        let e = Journal::begin(Path::new("/")).unwrap_err();
        assert!(is_bad(&e));
        assert_eq!(e.to_string(), held_by_me("run"));
        j.record(Undo::Netns { name: "a".into() }).unwrap();
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
        // A live owner that does not hold the lock (an older jitterlab).
        let mut doc = load(&path).unwrap().unwrap();
        doc.owner_start_ticks = my_ticks();
        save(&path, &doc).unwrap();
        assert_eq!(
            Journal::begin(Path::new("/")).unwrap_err().to_string(),
            format!(
                "another jitterlab (pid {}) is running and holds 2 changes to this machine; wait for it or stop it",
                me()
            )
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
    fn a_journal_of_another_boot_is_dropped_with_a_note_not_refused() {
        let (_dir, path) = journal_env();
        let mut j = Journal::begin(Path::new("/")).unwrap();
        j.record(Undo::File {
            path: "/proc/sys/kernel/timer_migration".into(),
            old: "1\n".into(),
        })
        .unwrap();
        drop(j);
        let mut doc = load(&path).unwrap().unwrap();
        doc.boot_id = "00000000-0000-0000-0000-000000000000".into();
        save(&path, &doc).unwrap();
        assert_eq!(
            other_boot_note(&path, &doc).unwrap(),
            format!(
                "dropped the journal {} of another boot (jitterlab pid {}, started {}): its 1 change ended with that boot, nothing is written back",
                path.display(),
                me(),
                doc.started_at
            )
        );
        // Neither a measuring run nor a dry run is refused for it.
        assert_eq!(refusal(Path::new("/"), Purpose::Measure).unwrap(), None);
        assert_eq!(would_refuse(Path::new("/")).unwrap(), None);
        let j = Journal::begin(Path::new("/")).unwrap();
        assert_eq!(load(&path).unwrap().unwrap().entries, vec![]);
        j.finish().unwrap();
        assert!(!path.exists());
    }

    #[test]
    #[serial]
    fn two_journal_paths_share_one_machine_lock() {
        let (_a, _) = journal_env();
        let root = tempfile::tempdir().unwrap();
        let apply = Journal::begin_as(root.path(), Holder::Apply).unwrap();
        let lock = root.path().join("run/jitterlab/lock");
        assert_eq!(
            fs::read_to_string(&lock).unwrap(),
            format!("{} {} apply\n", me(), my_ticks())
        );
        // Another journal path, the same machine: refused.
        let (_b, other) = journal_env();
        for holder in [Holder::Bench, Holder::Apply, Holder::Run] {
            let e = Journal::begin_as(root.path(), holder).unwrap_err();
            assert!(is_bad(&e));
            assert_eq!(e.to_string(), held_by_me("apply"));
        }
        let e = replay(root.path()).unwrap_err();
        assert!(is_bad(&e));
        assert_eq!(
            e.to_string(),
            format!(
                "jitterlab pid {} (`jitterlab apply`) is still running and holds its changes; stop it with Ctrl-C (it restores them itself)",
                me()
            )
        );
        assert!(!other.exists(), "the refused one made no journal");
        // Another sysroot is another machine.
        let elsewhere = tempfile::tempdir().unwrap();
        Journal::begin(elsewhere.path()).unwrap().finish().unwrap();

        // Let go on drop (as the kernel does on kill -9): the file goes too.
        drop(apply);
        assert!(!lock.exists());
        Journal::begin_as(root.path(), Holder::Bench)
            .unwrap()
            .finish()
            .unwrap();
    }

    #[test]
    #[serial]
    fn a_measuring_run_runs_beside_apply_only_and_not_over_unreplayed_changes() {
        let (_dir, path) = journal_env();
        let root = tempfile::tempdir().unwrap();
        // Nothing held: it starts and creates nothing until it changes something.
        let j = Journal::on_demand(root.path()).unwrap();
        assert_eq!((j.pending(), j.path()), (0, Path::new("")));
        assert!(!root.path().join("run").exists() && !path.exists());
        j.finish().unwrap();

        // Beside a live apply: it runs, but its first change is refused.
        let apply = Journal::begin_as(root.path(), Holder::Apply).unwrap();
        let mut j = Journal::on_demand(root.path()).unwrap();
        let e = j.record(Undo::Netns { name: "a".into() }).unwrap_err();
        assert!(is_bad(&e));
        assert_eq!(e.to_string(), held_by_me("apply"));
        assert_eq!(j.pending(), 0);
        drop(j);
        assert!(path.exists(), "apply's journal is left alone");
        // A dry run of a bench would be refused.
        assert_eq!(
            would_refuse(root.path()).unwrap(),
            Some(held_by_me("apply"))
        );
        drop(apply);

        // Beside a bench: refused.
        let bench = Journal::begin_as(root.path(), Holder::Bench).unwrap();
        let e = Journal::on_demand(root.path()).unwrap_err();
        assert!(is_bad(&e));
        assert_eq!(e.to_string(), held_by_me("bench"));
        drop(bench);

        // Free again: the first change takes the lock and the journal.
        let mut j = Journal::on_demand(root.path()).unwrap();
        j.record(Undo::Netns { name: "a".into() }).unwrap();
        assert_eq!(j.path(), path);
        assert_eq!(
            Journal::begin_as(root.path(), Holder::Bench)
                .unwrap_err()
                .to_string(),
            held_by_me("run")
        );
        let at = started_at(&path);
        drop(j); // kill -9
        kill_owner(&path);
        let unreplayed = format!(
            "an unreplayed journal at {} (jitterlab pid {}, started {at}) holds 1 change; run `jitterlab restore` first",
            path.display(),
            me()
        );
        let e = Journal::on_demand(root.path()).unwrap_err();
        assert!(is_bad(&e));
        assert_eq!(e.to_string(), unreplayed);
        assert_eq!(would_refuse(root.path()).unwrap(), Some(unreplayed));
        fs::remove_file(&path).unwrap();
        assert_eq!(would_refuse(root.path()).unwrap(), None);
    }

    #[test]
    #[serial]
    fn a_stale_lock_of_a_dead_holder_is_taken_over() {
        let (_dir, _path) = journal_env();
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("run/jitterlab");
        fs::create_dir_all(&dir).unwrap();
        // Left by a bench killed with -9: a pid that is not alive.
        fs::write(dir.join("lock"), "4194305 12 bench\n").unwrap();
        assert_eq!(Journal::on_demand(root.path()).unwrap().pending(), 0);
        assert_eq!(would_refuse(root.path()).unwrap(), None);
        let j = Journal::begin_as(root.path(), Holder::Bench).unwrap();
        assert_eq!(
            fs::read_to_string(dir.join("lock")).unwrap(),
            format!("{} {} bench\n", me(), my_ticks())
        );
        j.finish().unwrap();
    }

    #[test]
    #[serial]
    fn jitterlabs_directory_journal_and_lock_are_private() {
        let saved = std::env::var_os(JOURNAL_ENV);
        std::env::remove_var(JOURNAL_ENV);
        let root = tempfile::tempdir().unwrap();
        let mode = |p: &Path| fs::symlink_metadata(p).unwrap().mode() & 0o7777;
        let dir = root.path().join("run/jitterlab");
        let mut j = Journal::begin(root.path()).unwrap();
        j.record(Undo::Netns { name: "a".into() }).unwrap();
        assert_eq!(
            (
                mode(&dir),
                mode(&dir.join("journal.json")),
                mode(&dir.join("lock"))
            ),
            (0o700, 0o600, 0o600)
        );
        fs::remove_file(dir.join("journal.json")).unwrap();
        drop(j);

        // An existing directory of ours is tightened; one others may write
        // in is refused with the reason, and nothing is created in it.
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        Journal::begin(root.path()).unwrap().finish().unwrap();
        assert_eq!(mode(&dir), 0o700);
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).unwrap();
        let e = Journal::begin(root.path()).unwrap_err();
        assert!(is_bad(&e));
        assert_eq!(
            e.to_string(),
            format!(
                "{0} is writable by other users (mode 0777): they could plant a journal there for root to replay; make it private (chmod 700 {0}) or choose another directory",
                dir.display()
            )
        );
        assert_eq!(restore(root.path()).unwrap_err().to_string(), e.to_string());
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 0);
        // A symlink in its place.
        fs::remove_dir(&dir).unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), &dir).unwrap();
        assert_eq!(
            Journal::begin(root.path()).unwrap_err().to_string(),
            format!(
                "{0} is a symlink, not jitterlab's directory: jitterlab never follows a symlink there; remove it (rm {0}) and run again",
                dir.display()
            )
        );
        assert_eq!(fs::read_dir(elsewhere.path()).unwrap().count(), 0);

        // JITTERLAB_JOURNAL in a directory anyone may write in (as /tmp).
        let shared = tempfile::tempdir().unwrap();
        fs::set_permissions(shared.path(), fs::Permissions::from_mode(0o1777)).unwrap();
        let planted = shared.path().join("journal.json");
        std::env::set_var(JOURNAL_ENV, &planted);
        let e = Journal::begin(Path::new("/")).unwrap_err();
        assert!(is_bad(&e));
        assert_eq!(
            e.to_string(),
            format!(
                "{JOURNAL_ENV}={}: {1} is writable by other users (mode 1777): they could plant a journal there for root to replay; make it private (chmod 700 {1}) or choose another directory",
                planted.display(),
                shared.path().display()
            )
        );
        match saved {
            Some(v) => std::env::set_var(JOURNAL_ENV, v),
            None => std::env::remove_var(JOURNAL_ENV),
        }
    }

    #[test]
    #[serial]
    fn the_temporary_file_never_follows_a_planted_symlink() {
        let (dir, path) = journal_env();
        let victim = dir.path().join("victim");
        fs::write(&victim, "precious\n").unwrap();
        // Planted (or left by a dead process that had this pid) where the
        // next save writes its temporary file.
        std::os::unix::fs::symlink(&victim, tmp_path(&path)).unwrap();
        let mut j = Journal::begin(Path::new("/")).unwrap();
        std::os::unix::fs::symlink(&victim, tmp_path(&path)).unwrap();
        j.record(Undo::Netns { name: "a".into() }).unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");
        assert_eq!(load(&path).unwrap().unwrap().entries.len(), 1);
        // A stale regular file is replaced as well.
        fs::write(tmp_path(&path), "stale").unwrap();
        j.record(Undo::Netns { name: "b".into() }).unwrap();
        assert!(!tmp_path(&path).exists());
        assert_eq!(
            fs::metadata(&path).unwrap().mode() & 0o777,
            0o600,
            "the journal is root's only"
        );
        drop(j);
        fs::remove_file(&path).unwrap();
    }

    #[test]
    #[serial]
    fn a_symlink_at_the_journal_path_is_named_for_what_it_is() {
        let (dir, path) = journal_env();
        let target = dir.path().join("nowhere");
        std::os::unix::fs::symlink(&target, &path).unwrap();
        let expected = format!(
            "the journal path {0} is a symlink (to {1}), not a journal: jitterlab never follows a symlink there; remove it (rm {0}) and run again",
            path.display(),
            target.display()
        );
        let e = Journal::begin(Path::new("/")).unwrap_err();
        assert!(is_bad(&e));
        assert_eq!(e.to_string(), expected);
        assert_eq!(restore(Path::new("/")).unwrap_err().to_string(), expected);
        assert_eq!(
            Journal::on_demand(Path::new("/")).unwrap_err().to_string(),
            expected
        );
        assert!(!target.exists());
        // Pointing at a real file changes nothing either.
        fs::write(&target, "precious\n").unwrap();
        assert_eq!(
            Journal::begin(Path::new("/")).unwrap_err().to_string(),
            expected
        );
        assert_eq!(fs::read_to_string(&target).unwrap(), "precious\n");
        fs::remove_file(&path).unwrap();
        fs::create_dir(&path).unwrap();
        assert_eq!(
            Journal::begin(Path::new("/")).unwrap_err().to_string(),
            format!(
                "the journal path {} is a directory, not a journal; remove it, or point {JOURNAL_ENV} at a file",
                path.display()
            )
        );
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
    fn restore_drops_what_is_gone_and_keeps_what_needs_a_person() {
        let (_jdir, path) = journal_env();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let at = |rel: &str| root.join(rel);
        for d in [
            "proc/sys/kernel",
            "proc/irq/35",
            "sys/fs/resctrl/info",
            "etc",
        ] {
            fs::create_dir_all(at(d)).unwrap();
        }
        fs::write(at("proc/sys/kernel/timer_migration"), "0\n").unwrap();
        fs::write(at("proc/irq/default_smp_affinity"), "3\n").unwrap();
        // A value that cannot be written back (EISDIR, even for root).
        fs::create_dir(at("proc/sys/kernel/sched_rt_runtime_us")).unwrap();
        fs::write(at("etc/passwd"), "root:x:0:0\n").unwrap();
        std::os::unix::fs::symlink(at("etc/passwd"), at("sys/fs/resctrl/schemata")).unwrap();
        let before_victim = fs::read(at("etc/passwd")).unwrap();

        let mut j = Journal::begin(root).unwrap();
        let file = |rel: &str, old: &str| Undo::File {
            path: at(rel),
            old: old.into(),
        };
        for undo in [
            file("proc/sys/kernel/timer_migration", "1\n"),
            file("proc/irq/36/smp_affinity_list", "0-1\n"),
            file("proc/irq/default_smp_affinity", "3\n"),
            file("proc/sys/kernel/sched_rt_runtime_us", "950000\n"),
            file("etc/passwd", "hacked::0:0\n"),
            file("sys/fs/resctrl/schemata", "L3:0=fff\n"),
            Undo::Netns {
                name: "jl4194305tx".into(),
            },
        ] {
            j.record(undo).unwrap();
        }
        drop(j);
        kill_owner(&path);
        let r = replay(root).unwrap();
        let p = |rel: &str| at(rel).display().to_string();
        assert_eq!(
            r.lines,
            vec![
                "network namespace jl4194305tx was already gone".to_string(),
                format!(
                    "could not restore {} to \"L3:0=fff\": it is a symlink now, and jitterlab never writes through one; see what replaced it and put the value back by hand",
                    p("sys/fs/resctrl/schemata")
                ),
                format!(
                    "journal entry 5 names {}, which no jitterlab setting writes under the sysroot {}; remove the entry by hand if you wrote it",
                    p("etc/passwd"),
                    root.display()
                ),
                format!(
                    "could not restore {} to \"950000\": Is a directory (os error 21); write it back by hand",
                    p("proc/sys/kernel/sched_rt_runtime_us")
                ),
                format!("{} already holds \"3\"", p("proc/irq/default_smp_affinity")),
                format!(
                    "nothing to put back in {}: it is gone, and IRQ 36's affinity went with it",
                    p("proc/irq/36/smp_affinity_list")
                ),
                format!("restored {} to \"1\"", p("proc/sys/kernel/timer_migration")),
            ]
        );
        assert_eq!((r.left, &r.path), (3, &path));
        assert_eq!(
            left_message(&r),
            format!(
                "3 changes could not be undone and stay in the journal {}: do by hand what their lines above say, then run `jitterlab restore` again",
                path.display()
            )
        );
        assert_eq!(fs::read(at("etc/passwd")).unwrap(), before_victim);
        assert!(!at("proc/irq/36").exists(), "nothing created");
        assert_eq!(
            fs::read_to_string(at("proc/sys/kernel/timer_migration")).unwrap(),
            "1\n"
        );
        let ids: Vec<u64> = load(&path)
            .unwrap()
            .unwrap()
            .entries
            .iter()
            .map(|e| e.id)
            .collect();
        assert_eq!(ids, vec![4, 5, 6]);

        // A person puts the value back and removes the entries they wrote:
        // the next restore drops the rest, and the journal is gone.
        fs::remove_dir(at("proc/sys/kernel/sched_rt_runtime_us")).unwrap();
        fs::write(at("proc/sys/kernel/sched_rt_runtime_us"), "950000\n").unwrap();
        let mut doc = load(&path).unwrap().unwrap();
        doc.entries.retain(|e| e.id == 4);
        save(&path, &doc).unwrap();
        let r = replay(root).unwrap();
        assert_eq!(
            (r.lines, r.left),
            (
                vec![format!(
                    "{} already holds \"950000\"",
                    p("proc/sys/kernel/sched_rt_runtime_us")
                )],
                0
            )
        );
        assert!(!path.exists());
    }

    #[test]
    #[serial]
    fn a_hand_made_file_entry_is_refused_on_the_real_root_too() {
        let (jdir, path) = journal_env();
        // Harmless if it were written: a file of the test's own.
        let victim = jdir.path().join("victim");
        fs::write(&victim, "precious\n").unwrap();
        let mut j = Journal::begin(Path::new("/")).unwrap();
        j.record(Undo::File {
            path: victim.clone(),
            old: "hacked\n".into(),
        })
        .unwrap();
        drop(j);
        kill_owner(&path);
        let r = replay(Path::new("/")).unwrap();
        assert_eq!(
            (r.lines, r.left),
            (
                vec![format!(
                    "journal entry 1 names {}, which no jitterlab setting writes; remove the entry by hand if you wrote it",
                    victim.display()
                )],
                1
            )
        );
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");
        fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_process_left_as_it_was_gets_the_command_that_undoes_it() {
        let neighbour = Undo::Neighbour {
            pgid: 4250,
            start_ticks: 1,
            argv: vec!["hackbench".into()],
        };
        let stopped = Undo::Stopped {
            pid: 812,
            start_ticks: 1,
            comm: "irqbalance".into(),
        };
        assert_eq!(
            (advice(&neighbour), advice(&stopped)),
            (
                Some("kill it by hand (kill -KILL -- -4250)".to_string()),
                Some("resume it by hand (kill -CONT 812)".to_string())
            )
        );
        assert_eq!(
            advice(&Undo::Netns {
                name: "jl1tx".into()
            }),
            None
        );
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
            vec![
                format!(
                    "the journal {} was written in another boot (jitterlab pid {}, started {}): what ended with that boot is dropped, nothing of it written back",
                    path.display(),
                    me(),
                    doc.started_at
                ),
                format!("neighbour process group {pgid} (`sleep 100`) ended with the reboot")
            ]
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
