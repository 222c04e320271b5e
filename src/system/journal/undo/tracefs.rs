//! Undoing the tracer's changes to the machine: tracefs, mounted by
//! jitterlab where it was not mounted so the tracer could read the
//! tracepoints' ids and formats (`Undo::TracefsMount`), and the private
//! tracefs instance whose buffers it reads (`Undo::TracefsInstance`). The
//! tracer calls them at its stop, and `jitterlab restore` after a crash.

use std::io;
use std::path::Path;

/// Where tracefs is relative to the root.
const TRACEFS: &str = "sys/kernel/tracing";

/// Unmounts the tracefs jitterlab mounted at `target`; the line to print
/// and whether it is handled. Only a tracefs at a `…/sys/kernel/tracing` is
/// unmounted: anything else there now (or nothing) is left as it is. A
/// busy mount (a shell inside it) stays, with what to do. Used by the
/// tracer's stop and by `jitterlab restore`.
pub fn unmount_tracefs(target: &Path) -> (String, bool) {
    use jitterlab_sys as sys;
    if !target.ends_with(TRACEFS) {
        return (
            format!("left {} alone: not a tracefs mount point", target.display()),
            false,
        );
    }
    let gone = || {
        (
            format!(
                "restored tracefs: {} was no longer mounted",
                target.display()
            ),
            true,
        )
    };
    match sys::filesystem_type(target) {
        Ok(m) if m == sys::TRACEFS_MAGIC => {}
        Ok(_) => return gone(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return gone(),
        Err(e) => {
            return (
                format!("could not unmount tracefs from {}: {e}", target.display()),
                false,
            )
        }
    }
    match sys::unmount(target) {
        Ok(()) => (
            format!("restored tracefs: unmounted {}", target.display()),
            true,
        ),
        // EINVAL: nothing is mounted there any more.
        Err(e) if e.kind() == io::ErrorKind::InvalidInput => gone(),
        Err(e) => (
            format!(
                "could not unmount tracefs from {0}: {e}; close what uses it and run `umount {0}`",
                target.display()
            ),
            false,
        ),
    }
}

/// Removes the tracefs instance jitterlab made at `path` (its events,
/// buffers and settings go with it); the line to print and whether it is
/// handled. Only a directory `jitterlab-*` in an `instances` directory is
/// removed. Used by the tracer's stop and by `jitterlab restore`.
pub fn remove_instance(path: &Path) -> (String, bool) {
    let ours = path
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("jitterlab-"))
        && path
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|n| n == "instances");
    if !ours {
        return (
            format!(
                "left {} alone: not a jitterlab tracefs instance",
                path.display()
            ),
            false,
        );
    }
    match std::fs::remove_dir(path) {
        Ok(()) => (
            format!("restored tracefs: removed the instance {}", path.display()),
            true,
        ),
        Err(e) if e.kind() == io::ErrorKind::NotFound => (
            format!(
                "restored tracefs: the instance {} was already gone",
                path.display()
            ),
            true,
        ),
        Err(e) => (
            format!(
                "could not remove the tracefs instance {0}: {e}; stop what reads its buffers and run `rmdir {0}`",
                path.display()
            ),
            false,
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;
    use crate::testutil::copy_fixture;

    #[test]
    fn unmount_tracefs_leaves_what_is_not_its_mount_alone() {
        let root = copy_fixture("sysroot-vm");
        let elsewhere = root.path().join("sys/kernel/debug");
        assert_eq!(
            unmount_tracefs(&elsewhere),
            (
                format!(
                    "left {} alone: not a tracefs mount point",
                    elsewhere.display()
                ),
                false
            )
        );
        let target = root.path().join(TRACEFS);
        let gone = (
            format!(
                "restored tracefs: {} was no longer mounted",
                target.display()
            ),
            true,
        );
        assert_eq!(unmount_tracefs(&target), gone);
        fs::create_dir_all(&target).unwrap();
        assert_eq!(unmount_tracefs(&target), gone);
    }

    #[test]
    fn unmount_tracefs_unmounts_a_tracefs() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join(TRACEFS);
        fs::create_dir_all(&target).unwrap();
        if let Err(e) = jitterlab_sys::mount("nodev", &target, "tracefs") {
            eprintln!("skipped: mounting tracefs needs root: {e}");
            return;
        }
        assert!(target.join("events/sched/sched_switch/id").exists());
        assert_eq!(
            unmount_tracefs(&target),
            (
                format!("restored tracefs: unmounted {}", target.display()),
                true
            )
        );
        assert!(!target.join("events").exists());
    }
}
