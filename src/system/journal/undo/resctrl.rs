//! Undoing what cache allocation changed: removing a resctrl group jitterlab
//! created and unmounting the resctrl file system it mounted.
//!
//! Both the cache-allocation setting (`settings::resctrl`, on every normal
//! exit path) and the journal's replay after a crash (`jitterlab restore`)
//! need these two steps, so they live below both: the journal does not
//! depend on the settings, and the settings depend on the journal.

use std::fs;
use std::io::ErrorKind;
use std::path::Path;

use jitterlab_core::resctrl as rc;
use jitterlab_sys as sys;

/// Where resctrl is mounted, under the sysroot.
pub const RESCTRL: &str = "sys/fs/resctrl";

/// The files the fake-tree stand-in creates in a new group (module doc).
pub const STANDIN_FILES: [&str; 4] = ["cpus_list", "mode", "schemata", "tasks"];

/// Removes the resctrl group directory `path`: first the `files` the
/// fake-tree stand-in created (none on a real resctrl), then the directory
/// (the kernel gives its CPUs and tasks back to the default group). The
/// line to print and whether it is handled; a path that is not a group of
/// a resctrl root (an edited journal) is left alone. Used by
/// the cache-allocation setting's restore and `jitterlab restore`.
pub fn remove_group(path: &Path, files: &[String]) -> (String, bool) {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let in_resctrl = path.parent().is_some_and(|p| p.ends_with(RESCTRL));
    let files_ok = files.iter().all(|f| STANDIN_FILES.contains(&f.as_str()));
    if !in_resctrl || rc::check_group_name(&name).is_err() || !files_ok {
        return (
            format!(
                "left {} alone: not a resctrl group jitterlab creates",
                path.display()
            ),
            false,
        );
    }
    for f in files {
        match fs::remove_file(path.join(f)) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => {
                return (
                    format!(
                        "could not remove resctrl group {}: {}: {e}",
                        path.display(),
                        path.join(f).display()
                    ),
                    false,
                )
            }
        }
    }
    match fs::remove_dir(path) {
        Ok(()) => (
            format!(
                "restored resctrl: removed group {name} ({})",
                path.display()
            ),
            true,
        ),
        Err(e) if e.kind() == ErrorKind::NotFound => (
            format!(
                "restored resctrl: group {name} ({}) was already gone",
                path.display()
            ),
            true,
        ),
        Err(e) => (
            format!("could not remove resctrl group {}: {e}", path.display()),
            false,
        ),
    }
}

/// Unmounts the resctrl file system jitterlab mounted at `target`; the
/// line to print and whether it is handled. Only a resctrl mount at a
/// `…/sys/fs/resctrl` is unmounted: anything else there now (or nothing)
/// is left as it is. Used by the cache-allocation setting's restore and `jitterlab
/// restore`.
pub fn unmount(target: &Path) -> (String, bool) {
    if !target.ends_with(RESCTRL) {
        return (
            format!("left {} alone: not a resctrl mount point", target.display()),
            false,
        );
    }
    let gone = || {
        (
            format!(
                "restored resctrl: {} was no longer mounted",
                target.display()
            ),
            true,
        )
    };
    match sys::filesystem_type(target) {
        Ok(m) if m == sys::RESCTRL_MAGIC => {}
        Ok(_) => return gone(),
        Err(e) if e.kind() == ErrorKind::NotFound => return gone(),
        Err(e) => {
            return (
                format!("could not unmount resctrl from {}: {e}", target.display()),
                false,
            )
        }
    }
    match sys::unmount(target) {
        Ok(()) => (
            format!("restored resctrl: unmounted {}", target.display()),
            true,
        ),
        // EINVAL: nothing is mounted there any more.
        Err(e) if e.kind() == ErrorKind::InvalidInput => gone(),
        Err(e) => (
            format!("could not unmount resctrl from {}: {e}", target.display()),
            false,
        ),
    }
}
