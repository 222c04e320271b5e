//! The on-disk journal of every change jitterlab makes to the machine, so
//! that `jitterlab restore` can undo them after a `kill -9` (design rule 4),
//! and the machine lock that keeps two jitterlabs from changing the machine
//! at once.
//!
//! Normal ends, errors, Ctrl-C, SIGTERM and every other terminating signal
//! (`crate::termination`) undo every change in the process that made it. `SIGKILL` (or a crash, or the OOM killer) cannot be caught,
//! so each change is written here *before* it is made — or, for a process,
//! right after it exists — and forgotten once it has been undone:
//!
//! - [`Undo::Neighbour`]: a neighbour's process group, to be killed
//!   (here);
//! - [`Undo::Netns`]: a network namespace, to be deleted (here);
//! - [`Undo::File`]: a sysfs/procfs value, to be written back verbatim —
//!   only to a file on the settings' allow-list
//!   ([`crate::system::journal::undo::files`]), never through a symlink, never
//!   creating one (here);
//! - [`Undo::Stopped`]: a process jitterlab stopped with `SIGSTOP` (a
//!   running irqbalance, paused while IRQs are moved), to be resumed with
//!   `SIGCONT` — only while its pid and start time still match (here,
//!   [`resume_stopped`]).
//! - [`Undo::ResctrlGroup`]: a resctrl group jitterlab created, to be
//!   removed (`{ "kind": "resctrl-group", "path": "/sys/fs/resctrl/rt",
//!   "files": [] }`; `files` lists what a fake tree's stand-in created;
//!   [`crate::system::journal::undo::resctrl`]);
//! - [`Undo::ResctrlMount`]: resctrl, mounted by jitterlab, to be
//!   unmounted (`{ "kind": "resctrl-mount", "target": "/sys/fs/resctrl" }`;
//!   [`crate::system::journal::undo::resctrl`]);
//! - [`Undo::TracefsMount`]: tracefs, mounted by jitterlab for its
//!   tracer, to be unmounted (`{ "kind": "tracefs-mount", "target":
//!   "/sys/kernel/tracing" }`; [`crate::system::journal::undo::tracefs`]);
//! - [`Undo::TracefsInstance`]: a tracefs instance jitterlab made for its
//!   tracer, to be removed (`{ "kind": "tracefs-instance", "path":
//!   "/sys/kernel/tracing/instances/jitterlab-4242" }`;
//!   [`crate::system::journal::undo::tracefs`]);
//! - [`Undo::WorkDir`]: a private work directory, to be removed with its
//!   content (`{ "kind": "work-dir", "path": "/run/jitterlab/jitterlab-…" }`;
//!   [`crate::system::journal::undo::workdir`]);
//! - [`Undo::Cgroup`]: the cgroup of a cell's neighbours, every process in
//!   it killed and the group removed (`{ "kind": "cgroup", "path":
//!   "/sys/fs/cgroup/jitterlab-…" }`; [`crate::system::journal::undo::cgroup`]).
//! - [`Undo::Container`]: a container of a `container` cell, removed with
//!   `ENGINE rm -f NAME` (`{ "kind": "container", "engine": "podman",
//!   "name": "jitterlab-4242-1" }`; [`crate::system::journal::undo::container`]);
//! - [`Undo::ContainerCgroup`]: the parent cgroup that gives the
//!   containers a real-time budget, removed from every hierarchy (`{
//!   "kind": "container-cgroup", "path": "/sys/fs/cgroup/cpu/jitterlab-ctr-…",
//!   "files": [] }`; [`crate::system::journal::undo::container`]).
//!
//! **Layering.** The modules that journal their changes — the settings,
//! the neighbours' cgroup, the work directories, the deployment container
//! — use this module, so it never uses them: each undo step lives here or
//! below the journal in [`undo`] (the settings' allow-list, resctrl, work
//! directories, cgroups, containers), which the modules above call too.
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
//! stale one a dead process of the same pid left). A jitterlab killed
//! between writing its temporary file and renaming it leaves
//! `<journal>.tmp.<pid>`: under the lock, [`replay`] (saying so) and the
//! claim of a journal remove every such file whose pid is no live
//! jitterlab (`file::remove_dead_tmps`).
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
//!
//! **Layout.** This module is the journal a process keeps ([`Journal`]),
//! the refusals and `jitterlab restore`; `entry` is what the journal holds
//! (the [`Undo`] kinds and the document), `lock` the [`MachineLock`],
//! `file` where the journal lives and how it is read and written, and
//! `restore` the replay that puts the machine back ([`replay`]).
//!
//! The design rules cited here are in `docs/design.md`.

mod entry;
mod file;
mod lock;
mod restore;
pub mod undo;

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Result};

pub use entry::{Holder, Undo};
pub(crate) use file::runtime_dir;
pub use lock::MachineLock;
#[cfg(test)]
pub use restore::restore;
pub use restore::{replay, resume_stopped, Replay};

use crate::error::bad;
use crate::output::errln;
use crate::system::procs::read_stat;
use entry::{boot_id, changes, now_rfc3339, other_boot, owner_alive, Document, Entry, VERSION};
use file::{
    journal_path, load, locate, remove_dead_tmps, remove_if_present, save, state_dir, sync_dir,
    tmp_path, write_synced,
};
use lock::live_holder;
use restore::ended_with_boot;

/// The environment variable that names the journal file (tests use it).
pub const JOURNAL_ENV: &str = "JITTERLAB_JOURNAL";

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
    /// files against it, [`crate::system::journal::undo::files`]).
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

    /// Forgets every entry of `ids` (their changes were undone), going on
    /// past an entry it cannot forget: one line `journal: ERROR` for each
    /// such entry, for the caller to report. An entry left behind only
    /// makes `jitterlab restore` find its change already undone.
    pub fn done_all(&mut self, ids: impl IntoIterator<Item = u64>) -> Vec<String> {
        ids.into_iter()
            .filter_map(|id| self.done(id).err())
            .map(|e| format!("journal: {e:#}"))
            .collect()
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
    remove_dead_tmps(&path);
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
                    Some(note) => errln!("jitterlab: note: {note}"),
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

/// What `restore` says on stderr when entries stay.
pub fn left_message(r: &Replay) -> String {
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
mod tests;

/// For the tests that must change the real machine (`/`), whose lock a
/// jitterlab running on this machine may hold.
#[cfg(test)]
pub mod testing {
    use std::time::{Duration, Instant};

    use anyhow::Result;

    use crate::error::BadInput;

    /// How long a test of the real root waits for another jitterlab to let
    /// the real machine lock go.
    pub const REAL_ROOT_WAIT: Duration = Duration::from_secs(30);

    /// Runs `f` on the real root, again while another jitterlab holds the
    /// real machine lock, for at most [`REAL_ROOT_WAIT`]; `None`, saying
    /// why the test skips, when it never let go. Any other error panics.
    pub fn on_real_root<T>(mut f: impl FnMut() -> Result<T>) -> Option<T> {
        let end = Instant::now() + REAL_ROOT_WAIT;
        loop {
            match f() {
                Ok(t) => return Some(t),
                Err(e) if is_held(&e) && Instant::now() < end => {
                    std::thread::sleep(Duration::from_millis(200));
                }
                Err(e) if is_held(&e) => {
                    eprintln!(
                        "skipped: another jitterlab held the real machine lock for {REAL_ROOT_WAIT:?}: {e}"
                    );
                    return None;
                }
                Err(e) => panic!("{e:#}"),
            }
        }
    }

    /// The refusal of a machine lock another jitterlab holds.
    fn is_held(e: &anyhow::Error) -> bool {
        let m = e.to_string();
        e.downcast_ref::<BadInput>().is_some()
            && (m.starts_with("another jitterlab") || m.contains(" is still running and holds"))
    }
}
