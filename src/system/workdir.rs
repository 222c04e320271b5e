//! Private work directories, and the files jitterlab creates in them: where
//! jitterlab, running as root, writes without letting another local user
//! choose what it writes to.
//!
//! **Why.** A predictable name in a world-writable directory
//! (`/tmp/jitterlab-<pid>`) can be created first by anyone: reused with
//! `create_dir_all` and filled with `File::create`, it lets another user
//! plant a symbolic link that makes root truncate any file
//! (`fs.protected_symlinks` is 0 on some machines). So:
//!
//! - **Fresh directories only.** [`create_work_dir`] and
//!   [`create_disk_dir`] make a directory with a random name
//!   (`jitterlab-` or `jitterlab-disk-`, then 16 hex digits) by a single
//!   `mkdir(2)` with mode 0700, which fails when the name exists: a
//!   directory jitterlab did not create is never used (a taken name is
//!   simply drawn again). The random part comes from std's `RandomState`
//!   (keys from the kernel's random source); safety does not rest on it,
//!   the exclusive `mkdir` gives that, it only keeps names from being
//!   guessed and taken in advance.
//! - **Where.** The work directory (neighbours' and rtla's output, one
//!   `cell-N` directory per bench cell, made with [`create_subdir`]) lies in
//!   jitterlab's runtime directory
//!   ([`crate::system::journal::runtime_dir`]: `<sysroot>/run/jitterlab` as
//!   root, else `$XDG_RUNTIME_DIR/jitterlab`), which only its owner can
//!   write. The `disk`, `misc` and `usb` loads need a real block device,
//!   and the runtime directory is often tmpfs: they get a separate fresh
//!   directory in [`DEFAULT_DISK_BASE`] (`/var/tmp`, the real one: the load
//!   writes to the live machine, like a process runs on it) or in the
//!   scenario's `usb_path`; [`check_disk_base`] refuses a base on tmpfs or
//!   ramfs (`statfs(2)`).
//! - **New files** are opened by [`create_file`] with
//!   `O_CREAT | O_EXCL | O_NOFOLLOW` and mode 0600: never an existing file,
//!   never through a symbolic link.
//! - **Journaled.** Each directory is written to the journal
//!   ([`Undo::WorkDir`]) *before* the `mkdir`, and forgotten once
//!   [`WorkDir::remove`] has removed it at the end; after a `kill -9`,
//!   `jitterlab restore` removes it through
//!   [`crate::system::journal::undo::workdir::undo`].
//!
//! **Removal is symlink-safe.** What `jitterlab restore` removes, and why
//! that is safe, is in [`crate::system::journal::undo::workdir`], below the journal
//! (the journal calls it); the two name shapes are defined there too.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{self, ErrorKind};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context, Result};
use jitterlab_sys as sys;

use crate::system::journal::undo::workdir::{DISK_PREFIX, WORK_PREFIX};
use crate::system::journal::{runtime_dir, Journal, Undo};

/// Where the disk loads write when the scenario names no directory: a
/// directory that survives reboots and is normally on the root file
/// system's block device (unlike `/tmp` on many machines).
pub const DEFAULT_DISK_BASE: &str = "/var/tmp";
/// How many taken names [`fresh`] draws before it gives up.
const ATTEMPTS: usize = 32;

/// A directory jitterlab created, journaled until [`WorkDir::remove`].
#[derive(Debug)]
pub struct WorkDir {
    path: PathBuf,
    journal_id: Option<u64>,
}

impl WorkDir {
    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the directory with everything in it and forgets its journal
    /// entry. On failure the entry stays, for `jitterlab restore`.
    pub fn remove(mut self, journal: &mut Journal) -> Result<()> {
        match fs::remove_dir_all(&self.path) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => {
                return Err(anyhow!(
                    "cannot remove the work directory {}: {e}; `jitterlab restore` removes it",
                    self.path.display()
                ))
            }
        }
        if let Some(id) = self.journal_id.take() {
            journal.done(id)?;
        }
        Ok(())
    }
}

/// A fresh private work directory in jitterlab's runtime directory for
/// `root` (see the module doc), journaled.
pub fn create_work_dir(root: &Path, journal: &mut Journal) -> Result<WorkDir> {
    fresh(&runtime_dir(root)?, WORK_PREFIX, journal)
}

/// A fresh private directory for the disk loads in `base`, journaled.
/// `base` must pass [`check_disk_base`]; `what` names it in the error
/// ("/var/tmp", "usb_path /media/usb").
pub fn create_disk_dir(base: &Path, what: &str, journal: &mut Journal) -> Result<WorkDir> {
    check_disk_base(base).map_err(|why| anyhow!("{what} {why}"))?;
    fresh(base, DISK_PREFIX, journal)
}

/// Why `dir` cannot hold the disk loads' files, if it cannot: it is not an
/// existing directory, it is on tmpfs or ramfs (memory, so the load would
/// never reach a block device), or this process may not write in it. The
/// reason reads after the directory's name ("is on tmpfs (memory, not a
/// block device)").
pub fn check_disk_base(dir: &Path) -> std::result::Result<(), String> {
    match fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err("is not a directory".into()),
        Err(e) => return Err(format!("cannot be used ({e})")),
    }
    let fs_name = match sys::filesystem_type(dir) {
        Ok(sys::TMPFS_MAGIC) => Some("tmpfs"),
        Ok(sys::RAMFS_MAGIC) => Some("ramfs"),
        Ok(_) => None,
        Err(e) => return Err(format!("cannot be used ({e})")),
    };
    if let Some(name) = fs_name {
        return Err(format!("is on {name} (memory, not a block device)"));
    }
    if !sys::can_write(dir) {
        return Err("is not writable by jitterlab".into());
    }
    Ok(())
}

/// Makes `base/PREFIX<random>` with mode 0700 by one exclusive `mkdir`,
/// journaled first; a name that exists is drawn again.
fn fresh(base: &Path, prefix: &str, journal: &mut Journal) -> Result<WorkDir> {
    for _ in 0..ATTEMPTS {
        let path = base.join(format!("{prefix}{}", crate::system::random_suffix()));
        let id = journal.record(Undo::WorkDir { path: path.clone() })?;
        match DirBuilder::new().mode(0o700).create(&path) {
            Ok(()) => {
                return Ok(WorkDir {
                    path,
                    journal_id: Some(id),
                })
            }
            Err(e) => {
                journal.done(id)?;
                if e.kind() != ErrorKind::AlreadyExists {
                    return Err(anyhow!(
                        "cannot create a work directory in {}: {e}",
                        base.display()
                    ));
                }
            }
        }
    }
    Err(anyhow!(
        "cannot create a work directory in {}: {ATTEMPTS} random names were all taken",
        base.display()
    ))
}

/// Makes the directory `parent/name` with mode 0700; fails when it exists.
/// For directories inside a [`WorkDir`] (one per bench cell).
pub fn create_subdir(parent: &Path, name: &str) -> Result<PathBuf> {
    let path = parent.join(name);
    DirBuilder::new()
        .mode(0o700)
        .create(&path)
        .with_context(|| format!("cannot create the directory {}", path.display()))?;
    Ok(path)
}

/// Creates the new file `path` for writing, mode 0600: fails when anything
/// exists at `path` — a file, or a symbolic link, which is never followed
/// (`O_CREAT | O_EXCL | O_NOFOLLOW`).
pub fn create_file(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(sys::O_NOFOLLOW)
        .mode(0o600)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::has_shape;
    use crate::system::journal::JOURNAL_ENV;
    use serial_test::serial;
    use std::io::Write;
    use std::os::unix::fs::{symlink, PermissionsExt};

    /// A journal in a fresh temporary directory (`JITTERLAB_JOURNAL`), the
    /// machine root of its lock too (never the real lock).
    fn journal() -> (tempfile::TempDir, Journal) {
        let dir = tempfile::tempdir().unwrap();
        std::env::set_var(JOURNAL_ENV, dir.path().join("journal.json"));
        let j = Journal::begin(dir.path()).unwrap();
        (dir, j)
    }

    fn mode(p: &Path) -> u32 {
        fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
    }

    /// The journal file's entries, as JSON.
    fn entries(j: &tempfile::TempDir) -> Vec<serde_json::Value> {
        let text = fs::read_to_string(j.path().join("journal.json")).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v["entries"].as_array().unwrap().clone()
    }

    #[test]
    #[serial]
    fn a_work_dir_is_fresh_private_journaled_and_removed() {
        let (jdir, mut j) = journal();
        let root = tempfile::tempdir().unwrap();
        let w = create_work_dir(root.path(), &mut j).unwrap();
        let name = w.path().file_name().unwrap().to_str().unwrap().to_string();
        assert_eq!(
            w.path().parent().unwrap(),
            root.path().join("run/jitterlab")
        );
        assert!(has_shape(&name, WORK_PREFIX), "{name}");
        assert_eq!(mode(w.path()), 0o700);
        assert_eq!(
            entries(&jdir),
            vec![serde_json::json!({"id": 1, "kind": "work-dir", "path": w.path()})]
        );
        // A second one has another name.
        let w2 = create_work_dir(root.path(), &mut j).unwrap();
        assert_ne!(w2.path(), w.path());

        let cell = create_subdir(w.path(), "cell-1").unwrap();
        assert_eq!(mode(&cell), 0o700);
        assert_eq!(
            format!("{:#}", create_subdir(w.path(), "cell-1").unwrap_err()),
            format!(
                "cannot create the directory {}: File exists (os error 17)",
                cell.display()
            )
        );
        let mut f = create_file(&cell.join("n.stdout")).unwrap();
        f.write_all(b"out").unwrap();
        assert_eq!(mode(&cell.join("n.stdout")), 0o600);
        let path = w.path().to_path_buf();
        w.remove(&mut j).unwrap();
        w2.remove(&mut j).unwrap();
        assert!(!path.exists());
        assert_eq!(entries(&jdir), Vec::<serde_json::Value>::new());
        j.finish().unwrap();
    }

    #[test]
    fn create_file_refuses_existing_files_and_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        fs::write(&victim, "precious\n").unwrap();
        let link = dir.path().join("n.stdout");
        symlink(&victim, &link).unwrap();
        assert_eq!(
            create_file(&link).unwrap_err().kind(),
            ErrorKind::AlreadyExists
        );
        let dangling = dir.path().join("n.stderr");
        symlink(dir.path().join("would-be-created"), &dangling).unwrap();
        assert_eq!(
            create_file(&dangling).unwrap_err().kind(),
            ErrorKind::AlreadyExists
        );
        assert!(!dir.path().join("would-be-created").exists());
        assert_eq!(
            create_file(&victim).unwrap_err().kind(),
            ErrorKind::AlreadyExists
        );
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");
    }

    #[test]
    #[serial]
    fn a_disk_dir_is_refused_on_memory_file_systems() {
        let (_jdir, mut j) = journal();
        let base = tempfile::tempdir().unwrap();
        let d = create_disk_dir(base.path(), "the base", &mut j).unwrap();
        let name = d.path().file_name().unwrap().to_str().unwrap();
        assert!(has_shape(name, DISK_PREFIX), "{name}");
        assert_eq!(mode(d.path()), 0o700);
        d.remove(&mut j).unwrap();

        let missing = base.path().join("missing");
        assert_eq!(
            create_disk_dir(&missing, "usb_path", &mut j)
                .unwrap_err()
                .to_string(),
            format!("usb_path cannot be used (No such file or directory (os error 2))")
        );
        let file = base.path().join("file");
        fs::write(&file, "").unwrap();
        assert_eq!(check_disk_base(&file), Err("is not a directory".into()));
        // /dev/shm is tmpfs on every Linux with a standard /dev.
        if sys::filesystem_type(Path::new("/dev/shm")).ok() == Some(sys::TMPFS_MAGIC) {
            assert_eq!(
                check_disk_base(Path::new("/dev/shm")),
                Err("is on tmpfs (memory, not a block device)".into())
            );
        } else {
            eprintln!("skipping the tmpfs case: /dev/shm is not tmpfs here");
        }
        assert_eq!(j.pending(), 0);
        j.finish().unwrap();
    }

    #[test]
    #[serial]
    fn fresh_names_differ_and_errors_name_the_base() {
        let (_jdir, mut j) = journal();
        let base = tempfile::tempdir().unwrap();
        // Every directory made is new: mkdir(2) without reuse, so a planted
        // directory (or symlink) of the right shape can only be skipped.
        let mut made = Vec::new();
        for _ in 0..20 {
            let d = fresh(base.path(), WORK_PREFIX, &mut j).unwrap();
            assert!(!made.iter().any(|m: &WorkDir| m.path() == d.path()));
            made.push(d);
        }
        let e = fresh(&base.path().join("missing"), WORK_PREFIX, &mut j).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "cannot create a work directory in {}: No such file or directory (os error 2)",
                base.path().join("missing").display()
            )
        );
        assert_eq!(j.pending(), 20);
        for d in made {
            d.remove(&mut j).unwrap();
        }
        j.finish().unwrap();
    }
}
