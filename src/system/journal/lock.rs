//! The machine lock (the `journal` module doc, **One machine, one
//! lock**): an exclusive `flock` on `<dir>/lock` that names its holder, so
//! that a refusal can say who is changing the machine.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use jitterlab_sys as sys;

use super::entry::Holder;
use super::file::{journal_path, load, state_dir};
use crate::error::bad;
use crate::system::journal::undo::files::{is_symlink_error, read_nofollow};
use crate::system::procs::read_stat;

/// How long [`MachineLock::take`] retries a held lock before it refuses:
/// long enough to ride over a holder that is just letting go.
const LOCK_WAIT: Duration = Duration::from_millis(100);

/// The exclusive `flock` on `<dir>/lock` that everything which changes the
/// machine holds (the `journal` module doc). Let go — and the file removed
/// — on drop; the kernel lets it go when the process dies.
#[derive(Debug)]
pub struct MachineLock {
    file: File,
    path: PathBuf,
}

/// The live jitterlab a lock file names.
pub(super) struct LockHolder {
    pid: i32,
    /// What it is doing, when the lock file names a subcommand.
    pub(super) holder: Option<Holder>,
    command: String,
    /// The refusal is for `jitterlab restore`: `Some(owner)`, the pid that
    /// owns the journal it would replay (`None` inside: no journal).
    restoring: Option<Option<u32>>,
}

impl LockHolder {
    /// The refusal for whoever meets this holder.
    pub(super) fn refusal(&self) -> String {
        let owns_journal = |owner: Option<u32>| owner.is_some_and(|o| o as i32 == self.pid);
        match self.restoring {
            // Another restore: nothing to stop, only to wait for.
            Some(_) if self.holder == Some(Holder::Restore) => format!(
                "another `jitterlab restore` (pid {}) is putting this machine back; wait for it to end",
                self.pid
            ),
            // The holder owns the journal to replay: it undoes it itself.
            Some(owner) if owns_journal(owner) => format!(
                "jitterlab pid {} (`jitterlab {}`) is still running and holds its changes; stop it with Ctrl-C (it restores them itself)",
                self.pid, self.command
            ),
            // A holder unrelated to that journal (or to none).
            Some(_) => format!(
                "another jitterlab (pid {}, `jitterlab {}`) is changing this machine; run `jitterlab restore` again once it has ended (it puts back its own changes itself)",
                self.pid, self.command
            ),
            None => format!(
                "another jitterlab (pid {}, `jitterlab {}`) is changing this machine; wait for it to end or stop it (Ctrl-C puts back what it changed)",
                self.pid, self.command
            ),
        }
    }
}

impl MachineLock {
    /// Takes the lock for `holder` (the directory created, the `journal`
    /// module doc); retries for [`LOCK_WAIT`], then refuses with BadInput
    /// naming the holder.
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
                                if holder == Holder::Restore {
                                    h.restoring = Some(journal_owner(root));
                                }
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

/// The pid that owns the journal of `root` (`None`: no journal, or one
/// that cannot be read — the replay says why once it has the lock).
fn journal_owner(root: &Path) -> Option<u32> {
    let path = journal_path(root, false).ok()??;
    Some(load(&path).ok()??.owner_pid)
}

/// The live jitterlab a lock file names (`PID START_TICKS COMMAND`), read
/// without taking the lock; `None` when there is none, or it died.
pub(super) fn live_holder(lock: &Path) -> Option<LockHolder> {
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
        restoring: None,
    })
}
