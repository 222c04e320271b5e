//! Output paths named on the command line (`--json`, `--csv`, `--histogram`,
//! `--pcap`, `--db`, `report -o`), checked before the first release and
//! named in every error. The runner, the command line and the reports all
//! write through here, so it sits below each of them.
//!
//! A run can last 48 hours; an output that cannot be written must be found
//! before it starts, not after (DESIGN rule 8). [`check_output`] therefore
//! does more than ask `access(2)`, which answers "yes" to root for almost
//! anything:
//!
//! - a directory, a block device, or a character device that is neither a
//!   terminal nor `/dev/null` is refused (`--json /dev/sda` must never be
//!   written, `--histogram /dev/full` can never be);
//! - a path on a kernel interface file system (procfs, sysfs, debugfs,
//!   tracefs, cgroup, resctrl, …) is refused: such files take values, not
//!   results, and root would otherwise write JSON into a kernel knob;
//! - an existing path is opened for writing — without truncating it — and
//!   given a zero-length `write(2)`, which the kernel answers with the
//!   error the real write would get (`EIO` for `/proc/version`, `ENOSPC`
//!   for `/dev/full`) and which changes nothing;
//! - a new path is created exclusively and removed again, so the check
//!   leaves the machine as it found it.
//!
//! [`Named`] wraps the writer of a finished output so that any later I/O
//! error (a full disk at the end of the run) names the flag and the path;
//! [`create`] opens one.
//!
//! [`write_replacing`] writes a report (`report -o`, every render of
//! `--follow -o`) so that a reader sees the old file or the new one.
//!
//! [`check_database`] is the same check for `--db`, which must also be a
//! regular file: SQLite writes `PATH-journal` and `PATH-wal` beside it (so
//! `--db /dev/null` would create `/dev/null-journal`).

use std::fs::{File, OpenOptions};
use std::io::{self, IsTerminal, Write};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use jitterlab_sys as sys;

use crate::error::bad;

/// Kernel interface file systems (statfs `f_type` magics from
/// `include/uapi/linux/magic.h`) that never hold a result file.
const KERNEL_FILESYSTEMS: &[(i64, &str)] = &[
    (0x9fa0, "procfs"),
    (0x6265_6572, "sysfs"),
    (0x6462_6720, "debugfs"),
    (0x7472_6163, "tracefs"),
    (0x0027_e0eb, "cgroup"),
    (0x6367_7270, "cgroup2"),
    (sys::RESCTRL_MAGIC, "resctrl"),
    (0xcafe_4a11, "bpf"),
    (0x7363_6673, "securityfs"),
    (0x6265_6570, "configfs"),
    (0xde5e_81e4, "efivarfs"),
    (0x6165_676c, "pstore"),
];

/// Refuses an output path that cannot take a result, before anything
/// starts; changes nothing on the machine (see the module doc).
pub fn check_output(flag: &str, path: &Path) -> Result<()> {
    let shown = path.display();
    match std::fs::metadata(path) {
        Ok(meta) => {
            let ft = meta.file_type();
            if ft.is_dir() {
                return Err(bad(format!(
                    "{flag} {shown} is a directory; give a file path"
                )));
            }
            if ft.is_block_device() {
                return Err(bad(format!(
                    "{flag} {shown} is a block device; give a file path"
                )));
            }
            kernel_filesystem(flag, path, path)?;
            let file = OpenOptions::new().write(true).open(path).map_err(|e| {
                bad(format!(
                    "{flag} {shown} cannot be opened for writing ({e}); choose another path or fix its permissions"
                ))
            })?;
            if ft.is_char_device() && !file.is_terminal() && !is_dev_null(path) {
                return Err(bad(format!(
                    "{flag} {shown} is a device, not a file; give a file path (or /dev/null to discard)"
                )));
            }
            // A zero-length write changes nothing but meets the error the
            // real write would (EIO on /proc/version, ENOSPC on /dev/full).
            (&file).write(&[]).map_err(|e| {
                bad(format!(
                    "{flag} {shown} cannot be written ({e}); choose another path"
                ))
            })?;
            Ok(())
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let parent = match path.parent() {
                Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                _ => PathBuf::from("."),
            };
            if !parent.is_dir() {
                return Err(bad(format!(
                    "{flag} {shown}: directory {} does not exist; create it or choose another path",
                    parent.display()
                )));
            }
            kernel_filesystem(flag, path, &parent)?;
            match OpenOptions::new().write(true).create_new(true).open(path) {
                Ok(_) => {
                    let _ = std::fs::remove_file(path);
                    Ok(())
                }
                Err(e) => Err(bad(format!(
                    "{flag} {shown} cannot be created in {} ({e}); choose another path",
                    parent.display()
                ))),
            }
        }
        Err(e) => Err(bad(format!(
            "{flag} {shown} cannot be examined ({e}); choose another path"
        ))),
    }
}

/// Refuses `--db PATH` unless it is a regular file or does not exist yet,
/// then applies [`check_output`].
pub fn check_database(path: &Path) -> Result<()> {
    if let Ok(meta) = std::fs::metadata(path) {
        if !meta.is_file() && !meta.is_dir() {
            return Err(bad(format!(
                "--db {} is not a regular file; the results database needs one (SQLite writes {}-journal and {}-wal beside it); give a file path",
                path.display(),
                path.display(),
                path.display()
            )));
        }
    }
    check_output("--db", path)
}

fn is_dev_null(path: &Path) -> bool {
    std::fs::canonicalize(path).is_ok_and(|p| p == Path::new("/dev/null"))
}

/// Refuses a path whose file system (that of `probe`, the path itself or
/// its parent) is a kernel interface.
fn kernel_filesystem(flag: &str, path: &Path, probe: &Path) -> Result<()> {
    let Ok(magic) = sys::filesystem_type(probe) else {
        return Ok(());
    };
    match KERNEL_FILESYSTEMS.iter().find(|(m, _)| *m == magic) {
        Some((_, name)) => Err(bad(format!(
            "{flag} {} is on {name}, a kernel interface, not a place for results; choose another path",
            path.display()
        ))),
        None => Ok(()),
    }
}

/// A writer whose every error names the flag and the path it writes.
pub struct Named<W: Write> {
    inner: W,
    what: String,
}

impl<W: Write> Named<W> {
    /// Wraps `inner`, which writes `flag`'s file `path`.
    pub fn new(inner: W, flag: &str, path: &Path) -> Self {
        Named {
            inner,
            what: format!("{flag} {}", path.display()),
        }
    }

    fn name(&self, e: io::Error) -> io::Error {
        io::Error::new(e.kind(), format!("writing {}: {e}", self.what))
    }
}

impl<W: Write> Write for Named<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner.write(buf).map_err(|e| self.name(e))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush().map_err(|e| self.name(e))
    }
}

/// Creates (truncating) `flag`'s output file `path`, buffered, its errors
/// naming both.
pub fn create(flag: &str, path: &Path) -> Result<Named<io::BufWriter<File>>> {
    let file = File::create(path).with_context(|| format!("creating {flag} {}", path.display()))?;
    Ok(Named::new(io::BufWriter::new(file), flag, path))
}

/// Writes `text` to `path` so that a reader sees the old file or the new
/// one, never half of one: a temporary file beside it, renamed over it. An
/// existing file keeps its permissions; a new one gets the usual
/// `0666 & !umask`. A path that is not a regular file (`/dev/null`, a
/// terminal) is written in place: it cannot be renamed over.
pub fn write_replacing(path: &Path, text: &str) -> Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::PermissionsExt as _;
    let named = |e: std::io::Error| anyhow::anyhow!("writing -o {}: {e}", path.display());
    let existing = std::fs::metadata(path).ok();
    if existing.as_ref().is_some_and(|m| !m.is_file()) {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(named)?;
        return f.write_all(text.as_bytes()).map_err(named);
    }
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".jitterlab-report")
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)
        .map_err(named)?;
    if let Some(m) = existing {
        tmp.as_file()
            .set_permissions(m.permissions())
            .map_err(named)?;
    }
    tmp.write_all(text.as_bytes()).map_err(named)?;
    tmp.as_file().sync_all().map_err(named)?;
    tmp.persist(path).map_err(|e| named(e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::BadInput;

    fn refusal(r: Result<()>) -> String {
        let e = r.expect_err("refused");
        assert!(e.downcast_ref::<BadInput>().is_some(), "{e:#} is bad input");
        e.to_string()
    }

    #[test]
    fn proc_files_are_refused_before_anything_runs() {
        assert_eq!(
            refusal(check_output("--json", Path::new("/proc/version"))),
            "--json /proc/version is on procfs, a kernel interface, not a place for results; choose another path"
        );
        assert_eq!(
            refusal(check_output("--csv", Path::new("/proc/sys/kernel/new-file"))),
            "--csv /proc/sys/kernel/new-file is on procfs, a kernel interface, not a place for results; choose another path"
        );
    }

    #[test]
    fn sysfs_knobs_are_refused() {
        let knob = Path::new("/sys/kernel/mm/transparent_hugepage/enabled");
        if !knob.exists() {
            eprintln!("skipped: {} is absent here", knob.display());
            return;
        }
        assert_eq!(
            refusal(check_output("--histogram", knob)),
            "--histogram /sys/kernel/mm/transparent_hugepage/enabled is on sysfs, a kernel interface, not a place for results; choose another path"
        );
    }

    #[test]
    fn a_full_device_is_refused_and_dev_null_accepted() {
        assert_eq!(
            refusal(check_output("--histogram", Path::new("/dev/full"))),
            "--histogram /dev/full is a device, not a file; give a file path (or /dev/null to discard)"
        );
        check_output("--json", Path::new("/dev/null")).unwrap();
    }

    #[test]
    fn the_database_must_be_a_regular_file() {
        assert_eq!(
            refusal(check_database(Path::new("/dev/null"))),
            "--db /dev/null is not a regular file; the results database needs one (SQLite writes /dev/null-journal and /dev/null-wal beside it); give a file path"
        );
        assert!(!Path::new("/dev/null-journal").exists());
    }

    #[test]
    fn a_new_file_is_checked_and_not_left_behind() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.json");
        check_output("--json", &p).unwrap();
        assert!(!p.exists());
        assert_eq!(
            refusal(check_output("--json", &dir.path().join("no/out.json"))),
            format!(
                "--json {}/no/out.json: directory {}/no does not exist; create it or choose another path",
                dir.path().display(),
                dir.path().display()
            )
        );
        assert_eq!(
            refusal(check_output("--csv", dir.path())),
            format!(
                "--csv {} is a directory; give a file path",
                dir.path().display()
            )
        );
    }

    #[test]
    fn an_existing_file_is_not_truncated_by_the_check() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("old.csv");
        std::fs::write(&p, "kept\n").unwrap();
        check_output("--csv", &p).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "kept\n");
    }

    #[test]
    fn write_errors_name_the_flag_and_the_path() {
        let f = OpenOptions::new().write(true).open("/dev/full").unwrap();
        let mut w = Named::new(f, "--histogram", Path::new("/dev/full"));
        let e = w.write_all(b"x").unwrap_err();
        assert_eq!(
            e.to_string(),
            "writing --histogram /dev/full: No space left on device (os error 28)"
        );
    }
}
