//! Where the journal and the lock live and how the journal file is read and
//! written (the `journal` module doc, **Where**, **Modes** and **Format**):
//! private directories, never through a symlink, every rewrite atomic and
//! synced.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use jitterlab_sys as sys;

use super::entry::{Document, VERSION};
use super::JOURNAL_ENV;
use crate::error::bad;
use crate::system::journal::undo::files::{is_symlink_error, read_nofollow};
use crate::system::procs::command_name;

/// The journal file for `root` (see the `journal` module doc), its
/// directory created.
pub(super) fn locate(root: &Path) -> Result<PathBuf> {
    journal_path(root, true)?.ok_or_else(|| anyhow!("no directory for the journal"))
}

/// The journal file for `root`: `JITTERLAB_JOURNAL`, else in jitterlab's
/// directory ([`state_dir`]). With `create`, the directory is created
/// (`0700`); without, `None` when it does not exist. Refuses a directory
/// others could write in.
pub(super) fn journal_path(root: &Path, create: bool) -> Result<Option<PathBuf>> {
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
/// `$XDG_RUNTIME_DIR/jitterlab` (the `journal` module doc). With `create`,
/// created `0700`, and an error (BadInput) naming both when neither can be
/// had; without, `None` when neither exists. A directory that exists but is
/// not private to this user is refused with the reason.
pub(super) fn state_dir(root: &Path, create: bool) -> Result<Option<PathBuf>> {
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
pub(super) fn load(path: &Path) -> Result<Option<Document>> {
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
pub(super) fn save(path: &Path, doc: &Document) -> Result<()> {
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
pub(super) fn write_synced(tmp: &Path, doc: &Document) -> Result<()> {
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
pub(super) fn sync_dir(path: &Path) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    File::open(dir)
        .and_then(|d| d.sync_all())
        .with_context(|| format!("cannot sync the directory {}", dir.display()))
}

/// Removes the journal at `path`; one that is not there is fine.
pub(super) fn remove_if_present(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => bail!("cannot remove the journal {}: {e}", path.display()),
    }
}

/// Removes the temporary files `<journal>.tmp.<pid>` beside the journal at
/// `path` that no live jitterlab is writing: a jitterlab killed (`kill
/// -9`) between writing one and renaming it over the journal leaves it.
/// Called under the machine lock. Unlinking never follows a symlink.
/// Returns each file removed with the pid in its name; one that cannot be
/// removed is left for the next time.
pub(super) fn remove_dead_tmps(path: &Path) -> Vec<(PathBuf, i32)> {
    let Some(name) = path.file_name() else {
        return Vec::new();
    };
    let dir = crate::out_files::directory_of(path);
    let mut prefix = name.to_os_string();
    prefix.push(".tmp.");
    let prefix = prefix.to_string_lossy().into_owned();
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for e in entries.flatten() {
        let file = e.file_name();
        let Some(pid) = file
            .to_str()
            .and_then(|f| f.strip_prefix(&prefix))
            .filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        let writer_lives = pid == std::process::id() as i32
            || command_name(pid).is_some_and(|c| c.starts_with("jitterlab"));
        if !writer_lives && fs::remove_file(e.path()).is_ok() {
            removed.push((e.path(), pid));
        }
    }
    removed.sort();
    removed
}

/// The temporary file beside the journal, unique to this process.
pub(super) fn tmp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp.{}", std::process::id()));
    path.with_file_name(name)
}
