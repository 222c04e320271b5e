//! Undoing a private work directory: removing, for `jitterlab restore`, a
//! directory [`crate::system::workdir`] made and a `kill -9` left behind.
//!
//! The work directories journal themselves (the journal's `Undo::WorkDir`) and the
//! journal's replay calls [`undo`], so this step lives below the journal
//! (as [`crate::system::journal::undo::resctrl`] does), and `workdir` above it: the
//! journal does not depend on `workdir`, and `workdir` depends on the
//! journal. The name prefixes ([`WORK_PREFIX`], [`DISK_PREFIX`]) live
//! here, since both sides need them; the random part and its shape are
//! [`crate::system::random_suffix`] and [`crate::system::has_shape`].
//!
//! **Removal is symlink-safe.** [`undo`] removes only an absolute path with
//! no `.`/`..` whose last component has one of the two name shapes (a
//! work directory must also lie in a directory named `jitterlab`, as the
//! runtime directory is), that is a real directory (`lstat`, not a symbolic
//! link) and is owned by the effective user — a directory no other user can
//! have made. Anything else is left alone, with the reason. The removal
//! itself is `std::fs::remove_dir_all`, which on Linux has been
//! symlink-safe since Rust 1.58.1 (CVE-2022-21658): it walks the tree with
//! `openat(O_NOFOLLOW)` and `unlinkat` relative to directory descriptors,
//! removing a symbolic link itself, never what it points to.

use std::fs;
use std::io::ErrorKind;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path};

use crate::system::has_shape;

use jitterlab_sys as sys;

/// The name prefix of a work directory in the runtime directory.
pub const WORK_PREFIX: &str = "jitterlab-";
/// The name prefix of a disk load directory.
pub const DISK_PREFIX: &str = "jitterlab-disk-";

/// Why `path` is not a directory jitterlab made (see the module doc);
/// `Ok(None)` when nothing is there.
fn not_ours(path: &Path) -> std::result::Result<Option<()>, String> {
    let plain = path.is_absolute()
        && path
            .components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let in_runtime_dir = path
        .parent()
        .and_then(|p| p.file_name())
        .is_some_and(|n| n == "jitterlab");
    let shaped = has_shape(name, DISK_PREFIX) || (has_shape(name, WORK_PREFIX) && in_runtime_dir);
    if !plain || !shaped {
        return Err("it is not a name jitterlab gives its work directories".into());
    }
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot examine it ({e})")),
    };
    if meta.file_type().is_symlink() {
        return Err("it is a symbolic link, not a directory jitterlab made".into());
    }
    if !meta.is_dir() {
        return Err("it is not a directory".into());
    }
    let me = sys::effective_uid();
    if meta.uid() != me {
        return Err(format!(
            "it belongs to uid {}, not to jitterlab's uid {me}",
            meta.uid()
        ));
    }
    Ok(Some(()))
}

/// Replays a journaled `Undo::WorkDir`: removes the directory with what
/// it holds when it is one jitterlab made, symlink-safely (see the module
/// doc). The line to print, and whether the entry is handled: a directory
/// that is gone, or that jitterlab did not make (left alone), is; one that
/// could not be removed is not.
pub fn undo(path: &Path) -> (String, bool) {
    let shown = path.display();
    match not_ours(path) {
        Ok(Some(())) => {}
        Ok(None) => return (format!("work directory {shown} was already gone"), true),
        Err(why) => return (format!("left {shown} alone: {why}"), true),
    }
    // Symlink-safe on Linux since Rust 1.58.1: see the module doc.
    match fs::remove_dir_all(path) {
        Ok(()) => (format!("removed work directory {shown}"), true),
        Err(e) => (
            format!("could not remove work directory {shown}: {e}"),
            false,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn undo_removes_only_directories_jitterlab_made() {
        let root = tempfile::tempdir().unwrap();
        let rt = root.path().join("run/jitterlab");
        fs::create_dir_all(&rt).unwrap();
        let victim = root.path().join("victim");
        fs::write(&victim, "precious\n").unwrap();

        // Ours, with content and a symlink to the victim inside: removed,
        // the victim untouched.
        let ours = rt.join("jitterlab-0123456789abcdef");
        fs::create_dir_all(ours.join("cell-1")).unwrap();
        fs::write(ours.join("cell-1/n.stdout"), "x").unwrap();
        symlink(&victim, ours.join("cell-1/link")).unwrap();
        assert_eq!(
            undo(&ours),
            (format!("removed work directory {}", ours.display()), true)
        );
        assert!(!ours.exists());
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");
        assert_eq!(
            undo(&ours),
            (
                format!("work directory {} was already gone", ours.display()),
                true
            )
        );

        // A disk directory may lie anywhere.
        let disk = root.path().join("jitterlab-disk-fedcba9876543210");
        fs::create_dir(&disk).unwrap();
        assert_eq!(
            undo(&disk),
            (format!("removed work directory {}", disk.display()), true)
        );
        assert!(!disk.exists());

        // Refused, each with its reason, and nothing removed.
        let left = |p: &Path, why: &str| {
            assert_eq!(
                undo(p),
                (format!("left {} alone: {why}", p.display()), true)
            );
        };
        let not_a_name = "it is not a name jitterlab gives its work directories";
        left(&victim, not_a_name);
        left(Path::new("/etc"), not_a_name);
        // The runtime shape outside a `jitterlab` directory.
        let stray = root.path().join("jitterlab-0123456789abcdef");
        fs::create_dir(&stray).unwrap();
        left(&stray, not_a_name);
        left(
            &rt.join("../jitterlab/jitterlab-0123456789abcdef"),
            not_a_name,
        );
        left(
            Path::new("run/jitterlab/jitterlab-0123456789abcdef"),
            not_a_name,
        );
        let link = rt.join("jitterlab-aaaaaaaaaaaaaaaa");
        symlink(root.path(), &link).unwrap();
        left(
            &link,
            "it is a symbolic link, not a directory jitterlab made",
        );
        let file = rt.join("jitterlab-bbbbbbbbbbbbbbbb");
        fs::write(&file, "").unwrap();
        left(&file, "it is not a directory");
        assert!(stray.exists() && link.exists() && file.exists());
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious\n");

        // Another user's directory of the right shape.
        if sys::effective_uid() == 0 {
            let theirs = rt.join("jitterlab-cccccccccccccccc");
            fs::create_dir(&theirs).unwrap();
            std::os::unix::fs::chown(&theirs, Some(65534), None).unwrap();
            left(&theirs, "it belongs to uid 65534, not to jitterlab's uid 0");
            assert!(theirs.exists());
        } else {
            eprintln!("skipping the foreign-owner case: chown needs root");
        }
    }
}
