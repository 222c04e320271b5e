//! Output paths named on the command line (`--json`, `--csv`, `--histogram`,
//! `--pcap`, `--db`, `report -o`, `report --histogram`): checked before the
//! first release, opened so that no other user can redirect them, replaced
//! atomically, and named in every error. The runner, the command line and
//! the reports all write through here, so it sits below each of them.
//!
//! jitterlab runs as root, often with outputs in shared directories such as
//! `/tmp`. Whatever sits at an output path may have been put there by
//! another user, so an output is only ever one of:
//!
//! - `-`: standard output, for the text formats (`--json -`, `--csv -`,
//!   `--histogram -`, `report -o -`). What jitterlab would otherwise print
//!   on standard output (a run's summary, a bench's tables) then goes to
//!   standard error, so that the pipe holds the file alone; two outputs
//!   cannot both be `-`. A capture (`--pcap`) is binary and is never
//!   written to standard output ([`check_binary_output`]).
//! - `/dev/null`, given literally: discarded (nothing is opened).
//! - a regular file, or a path where nothing is yet: written into a new
//!   file created beside it (`O_CREAT | O_EXCL | O_NOFOLLOW`, a random name
//!   `.jitterlab-XXXXXXXXXX.tmp`), flushed, fsynced and renamed over the
//!   path. A reader sees the old file or the new one, never half of one; a
//!   symbolic link planted at the path between the check and the rename is
//!   replaced, never followed. An existing file keeps its permission bits
//!   (not set-id bits) and, where jitterlab may give it, its owner and
//!   group.
//!
//! Everything else is refused, before anything runs and again when the file
//! is created: a symbolic link at the last component (`ln -s
//! /root-only/file /tmp/pub/out.json` must never overwrite the root-only
//! file — give the file's own path), a directory, a named pipe (which would
//! hand the result to whoever reads it, or hang the run with no reader), a
//! socket, and a device — terminals included: `-` writes to the terminal
//! when it is one, while a terminal's path may be another user's terminal.
//! A path on a kernel interface file system (procfs, sysfs, debugfs,
//! tracefs, cgroup, resctrl, …) is refused too: such files take values, not
//! results, and root would otherwise write JSON into a kernel knob.
//!
//! A run can last 48 hours; an output that cannot be written must be found
//! before it starts, not after (design rule 8). [`check_output`] therefore
//! looks at the path with `lstat(2)` (never opening it: an open of a FIFO
//! blocks until a reader comes) and creates and removes a temporary file
//! in its directory, which is what writing it will need; it leaves the
//! machine as it found it.
//!
//! [`create`] opens an output written whole once the result is known
//! (`--json`, `--histogram`, `report -o`): an [`Output`] dropped before
//! [`Output::finish`] — an error half-way — leaves the old file as it was.
//! [`create_streamed`] opens one streamed while a run goes on (`--csv`
//! rows as windows drain, `--pcap` frames): what was written is the result
//! even when the run ends on SIGINT, SIGTERM or an error (a full disk
//! included: what reached the file), so a dropped one is renamed over the
//! path all the same. Neither leaves its temporary
//! file behind (only `SIGKILL`, which nothing survives, can).
//!
//! [`write_replacing`] writes a report (`report -o`, every render of
//! `--follow -o`) through [`create`].
//!
//! [`check_database`] is the same check for `--db`, which must also be a
//! regular file: SQLite writes `PATH-journal` and `PATH-wal` beside it (so
//! `--db /dev/null` would create `/dev/null-journal`).
//!
//! The design rules cited here are in `docs/design.md`.

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, IsTerminal, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use anyhow::Result;
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

/// The path that means standard output.
pub const STDOUT: &str = "-";

/// True when `path` is `-`, standard output.
pub fn is_stdout(path: &Path) -> bool {
    path == Path::new(STDOUT)
}

/// What an output path is, once looked at without following anything.
enum Target {
    /// `-`.
    Stdout,
    /// `/dev/null`, given literally.
    Discard,
    /// A regular file to replace, with its metadata.
    Existing(std::fs::Metadata),
    /// Nothing there yet.
    New,
}

/// Refuses an output path that cannot take a result, before anything
/// starts; changes nothing on the machine and never blocks (see the module
/// doc). `-` (standard output) is accepted.
pub fn check_output(flag: &str, path: &Path) -> Result<()> {
    match target(flag, path)? {
        Target::Stdout | Target::Discard => Ok(()),
        Target::Existing(_) | Target::New => {
            // What writing it will do: a new file beside it.
            let (file, tmp) = temporary_beside(flag, path)?;
            drop(file);
            let _ = std::fs::remove_file(&tmp);
            Ok(())
        }
    }
}

/// [`check_output`] for a binary output (`--pcap`), which `-` cannot take:
/// standard output carries the run's summary, and binary on a terminal is
/// no use to anyone.
pub fn check_binary_output(flag: &str, path: &Path) -> Result<()> {
    if is_stdout(path) {
        return Err(bad(format!(
            "{flag} -: a capture is binary and is not written to standard output; give a file path"
        )));
    }
    check_output(flag, path)
}

/// Checks every output a command was given (flag and path, `None` for
/// one not asked for), refuses two on standard output, and when one is
/// there sends what the command prints on standard output to standard
/// error instead (see the module doc).
pub fn check_outputs(outputs: &[(&str, Option<&Path>)]) -> Result<()> {
    let on_stdout: Vec<&str> = outputs
        .iter()
        .filter(|(_, p)| p.is_some_and(is_stdout))
        .map(|(flag, _)| *flag)
        .collect();
    if let [first, second, ..] = on_stdout[..] {
        return Err(bad(format!(
            "{first} - and {second} - both ask for standard output; give a file path to all but one of them"
        )));
    }
    for (flag, path) in outputs {
        if let Some(p) = path {
            check_output(flag, p)?;
        }
    }
    if !on_stdout.is_empty() {
        crate::output::print_to_stderr();
    }
    Ok(())
}

/// The files a run writes beside its database — `--json`, `--junit`,
/// `--csv`, `--histogram` — taken from its flags once, carried by its
/// options to the runner, and checked together by [`RunOutputs::check`]
/// before anything runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunOutputs {
    /// `--json`: the whole result.
    pub json: Option<PathBuf>,
    /// `--junit`: the verdicts as JUnit XML.
    pub junit: Option<PathBuf>,
    /// `--csv`: the window rows, streamed.
    pub csv: Option<PathBuf>,
    /// `--histogram`: cyclictest's wake-up latency histogram.
    pub histogram: Option<PathBuf>,
}

impl RunOutputs {
    /// Each output with its flag, `None` for one not asked for.
    pub fn named(&self) -> [(&'static str, Option<&Path>); 4] {
        [
            ("--json", self.json.as_deref()),
            ("--junit", self.junit.as_deref()),
            ("--csv", self.csv.as_deref()),
            ("--histogram", self.histogram.as_deref()),
        ]
    }

    /// [`check_outputs`] of every output, then refuses two outputs that
    /// name the same file (each would replace the other's; `/dev/null`
    /// may take several).
    pub fn check(&self) -> Result<()> {
        let named = self.named();
        check_outputs(&named)?;
        let files: Vec<(&str, &Path)> = named
            .iter()
            .filter_map(|(flag, p)| Some((*flag, (*p)?)))
            .filter(|(_, p)| !is_stdout(p) && *p != Path::new("/dev/null"))
            .collect();
        for (i, (first, a)) in files.iter().enumerate() {
            for (second, b) in &files[i + 1..] {
                if same_file(a, b) {
                    return Err(bad(format!(
                        "{first} {} and {second} {} name the same file; give each output its own path",
                        a.display(),
                        b.display()
                    )));
                }
            }
        }
        Ok(())
    }
}

/// True when `a` and `b` name one file: the same name in the same
/// directory (both directories exist: [`check_output`] looked).
fn same_file(a: &Path, b: &Path) -> bool {
    let dir = |p: &Path| std::fs::canonicalize(directory_of(p)).ok();
    a.file_name() == b.file_name() && dir(a).is_some() && dir(a) == dir(b)
}

/// Looks at `path` with `lstat(2)` and says what it is, or refuses it
/// naming `flag`, the path and what to do.
fn target(flag: &str, path: &Path) -> Result<Target> {
    if is_stdout(path) {
        return Ok(Target::Stdout);
    }
    let shown = path.display();
    match std::fs::symlink_metadata(path) {
        Ok(meta) => {
            let ft = meta.file_type();
            let what = if ft.is_symlink() {
                return Err(bad(format!(
                    "{flag} {shown} is a symbolic link, which jitterlab never writes through (it could point at any file); give the file's own path, or - for standard output"
                )));
            } else if ft.is_dir() {
                return Err(bad(format!(
                    "{flag} {shown} is a directory; give a file path"
                )));
            } else if ft.is_fifo() {
                "a named pipe (FIFO)"
            } else if ft.is_socket() {
                "a socket"
            } else if ft.is_block_device() {
                "a block device"
            } else if ft.is_char_device() {
                if path == Path::new("/dev/null") {
                    return Ok(Target::Discard);
                }
                "a device"
            } else {
                kernel_filesystem(flag, path, path)?;
                return Ok(Target::Existing(meta));
            };
            Err(bad(format!(
                "{flag} {shown} is {what}, not a file; give a file path (or - for standard output, /dev/null to discard)"
            )))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let parent = directory_of(path);
            if !parent.is_dir() {
                return Err(bad(format!(
                    "{flag} {shown}: directory {} does not exist; create it or choose another path",
                    parent.display()
                )));
            }
            kernel_filesystem(flag, path, parent)?;
            Ok(Target::New)
        }
        Err(e) => Err(bad(format!(
            "{flag} {shown} cannot be examined ({e}); choose another path"
        ))),
    }
}

/// The directory `path` is in (`.` for a bare file name).
pub fn directory_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Creates a new, empty file with a random name in `path`'s directory
/// (`O_CREAT | O_EXCL | O_NOFOLLOW`: it cannot be anything planted there),
/// mode `0666 & !umask`; returns it and its path.
fn temporary_beside(flag: &str, path: &Path) -> Result<(File, PathBuf)> {
    let dir = directory_of(path);
    let mut last = None;
    // A name taken (by chance or on purpose) is drawn again.
    for _ in 0..16 {
        let mut name = OsString::from(".jitterlab-");
        name.push(fastrand::alphanumeric().to_string());
        for _ in 1..10 {
            name.push(fastrand::alphanumeric().to_string());
        }
        name.push(".tmp");
        let tmp = dir.join(name);
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o666)
            .custom_flags(sys::O_NOFOLLOW)
            .open(&tmp)
        {
            Ok(file) => return Ok((file, tmp)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => {
                last = Some(e);
                break;
            }
        }
    }
    let e = last.unwrap_or_else(|| io::ErrorKind::AlreadyExists.into());
    Err(bad(format!(
        "{flag} {}: cannot create a file in {} ({e}); choose another path or fix the directory's permissions",
        path.display(),
        dir.display()
    )))
}

/// Refuses `--db PATH` unless it is a regular file or does not exist yet,
/// then checks it can be written in place (SQLite writes it in place).
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
    check_in_place("--db", path)
}

/// The database's check that `path` can be written in place: an existing
/// path is opened for writing — without truncating it — and given a
/// zero-length `write(2)`, which the kernel answers with the error the real
/// write would get and which changes nothing; a new path is created
/// exclusively and removed again.
fn check_in_place(flag: &str, path: &Path) -> Result<()> {
    let shown = path.display();
    match std::fs::metadata(path) {
        Ok(meta) => {
            let ft = meta.file_type();
            if ft.is_dir() {
                return Err(bad(format!(
                    "{flag} {shown} is a directory; give a file path"
                )));
            }
            kernel_filesystem(flag, path, path)?;
            let file = OpenOptions::new().write(true).open(path).map_err(|e| {
                bad(format!(
                    "{flag} {shown} cannot be opened for writing ({e}); choose another path or fix its permissions"
                ))
            })?;
            if ft.is_char_device() && !file.is_terminal() {
                return Err(bad(format!(
                    "{flag} {shown} is a device, not a file; give a file path"
                )));
            }
            (&file).write(&[]).map_err(|e| {
                bad(format!(
                    "{flag} {shown} cannot be written ({e}); choose another path"
                ))
            })?;
            Ok(())
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let parent = directory_of(path);
            if !parent.is_dir() {
                return Err(bad(format!(
                    "{flag} {shown}: directory {} does not exist; create it or choose another path",
                    parent.display()
                )));
            }
            kernel_filesystem(flag, path, parent)?;
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

/// The temporary file of an [`Output`] and the path it replaces.
struct Replacing {
    out: BufWriter<File>,
    tmp: PathBuf,
    path: PathBuf,
}

impl Replacing {
    /// Flushes, fsyncs and renames the temporary file over the path. When
    /// the flush or the fsync fails (a full disk), `keep_partial` still
    /// renames what reached the file — a streamed output's rows so far are
    /// the result — and the error is returned all the same; otherwise, or
    /// when the rename fails, the temporary file is removed.
    fn commit(self, keep_partial: bool) -> io::Result<()> {
        let Replacing { out, tmp, path } = self;
        let written = match out.into_inner() {
            Ok(f) => f.sync_all(),
            Err(e) => Err(e.into_error()),
        };
        let renamed = match &written {
            Err(_) if !keep_partial => None,
            _ => Some(std::fs::rename(&tmp, &path)),
        };
        match renamed {
            Some(Ok(())) => {
                if let Ok(dir) = File::open(directory_of(&path)) {
                    // The rename itself reaches the disk (best effort: some
                    // file systems refuse fsync on a directory).
                    let _ = dir.sync_all();
                }
            }
            _ => {
                let _ = std::fs::remove_file(&tmp);
            }
        }
        written.and(renamed.unwrap_or(Ok(())))
    }

    /// Removes the temporary file; the path keeps what it held.
    fn discard(self) {
        let _ = std::fs::remove_file(&self.tmp);
    }
}

/// Where an [`Output`] writes.
enum Sink {
    Stdout(io::Stdout),
    Discard,
    /// `None` once finished.
    File(Option<Replacing>),
}

/// One output file being written (see the module doc): standard output,
/// nothing (`/dev/null`), or a temporary file renamed over the path by
/// [`Output::finish`]. Every error names the flag and the path.
pub struct Output {
    what: String,
    sink: Sink,
    /// Whether a drop before [`Output::finish`] keeps what was written.
    streamed: bool,
}

/// Opens `flag`'s output `path` for a file written whole: dropped before
/// [`Output::finish`], it leaves the path as it was.
pub fn create(flag: &str, path: &Path) -> Result<Output> {
    open(flag, path, false)
}

/// Opens `flag`'s output `path` for a file streamed during a run: dropped
/// before [`Output::finish`] (an interrupted run, an error), what was
/// written still replaces the path.
pub fn create_streamed(flag: &str, path: &Path) -> Result<Output> {
    open(flag, path, true)
}

fn open(flag: &str, path: &Path, streamed: bool) -> Result<Output> {
    let what = format!("{flag} {}", path.display());
    let sink = match target(flag, path)? {
        Target::Stdout => Sink::Stdout(io::stdout()),
        Target::Discard => Sink::Discard,
        target @ (Target::Existing(_) | Target::New) => {
            let (file, tmp) = temporary_beside(flag, path)?;
            let replacing = Replacing {
                out: BufWriter::new(file),
                tmp,
                path: path.to_path_buf(),
            };
            if let Target::Existing(meta) = target {
                if let Err(e) = keep_mode(replacing.out.get_ref(), &meta) {
                    replacing.discard();
                    return Err(anyhow::anyhow!("writing {what}: {e}"));
                }
            }
            Sink::File(Some(replacing))
        }
    };
    Ok(Output {
        what,
        sink,
        streamed,
    })
}

/// Gives the new file `file` the owner (where allowed), group and
/// permission bits of the file it replaces — not its set-id and sticky
/// bits, which a results file has no use for and which another user may
/// have set on a file planted for root to fill.
fn keep_mode(file: &File, old: &std::fs::Metadata) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let new = file.metadata()?;
    if (new.uid(), new.gid()) != (old.uid(), old.gid()) {
        // Only root may give a file away; anyone else keeps it as theirs.
        let _ = std::os::unix::fs::fchown(file, Some(old.uid()), Some(old.gid()));
    }
    file.set_permissions(std::fs::Permissions::from_mode(old.mode() & 0o777))
}

impl Output {
    /// `e` naming the flag and the path; on standard output a closed pipe
    /// is [`crate::output::ReaderGone`], the quiet end of any printing.
    fn name(&self, e: io::Error) -> io::Error {
        if matches!(self.sink, Sink::Stdout(_)) && e.kind() == io::ErrorKind::BrokenPipe {
            return io::Error::new(e.kind(), crate::output::ReaderGone);
        }
        io::Error::new(e.kind(), format!("writing {}: {e}", self.what))
    }

    /// Ends the output: flushes it and, for a file, fsyncs it and renames
    /// it over the path. A closed standard output is
    /// [`crate::output::ReaderGone`].
    pub fn finish(mut self) -> Result<()> {
        let what = self.what.clone();
        let done = match &mut self.sink {
            Sink::Stdout(out) => match out.flush() {
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                    return Err(anyhow::Error::new(crate::output::ReaderGone))
                }
                r => r,
            },
            Sink::Discard => Ok(()),
            Sink::File(r) => r.take().map_or(Ok(()), |r| r.commit(self.streamed)),
        };
        done.map_err(|e| anyhow::anyhow!("writing {what}: {e}"))
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let r = match &mut self.sink {
            Sink::Stdout(out) => out.write(buf),
            Sink::Discard => Ok(buf.len()),
            Sink::File(Some(r)) => r.out.write(buf),
            Sink::File(None) => Err(io::Error::other("already finished")),
        };
        r.map_err(|e| self.name(e))
    }

    fn flush(&mut self) -> io::Result<()> {
        let r = match &mut self.sink {
            Sink::Stdout(out) => out.flush(),
            Sink::Discard | Sink::File(None) => Ok(()),
            Sink::File(Some(r)) => r.out.flush(),
        };
        r.map_err(|e| self.name(e))
    }
}

impl Drop for Output {
    /// An output not finished: a streamed one keeps what was written (it
    /// is the result of an interrupted run), a whole one leaves the path
    /// as it was; neither leaves its temporary file.
    fn drop(&mut self) {
        if let Sink::File(r) = &mut self.sink {
            if let Some(r) = r.take() {
                if self.streamed {
                    let _ = r.commit(true);
                } else {
                    r.discard();
                }
            }
        } else {
            let _ = self.flush();
        }
    }
}

/// Writes the report `text` to `-o`'s `path` through [`create`]: a reader
/// sees the old file or the new one, never half of one.
pub fn write_replacing(path: &Path, text: &str) -> Result<()> {
    if is_stdout(path) {
        // A closed pipe is the quiet end of every other printing.
        return crate::output::write_to(&mut io::stdout().lock(), text);
    }
    let mut out = create("-o", path)?;
    out.write_all(text.as_bytes())?;
    out.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::BadInput;
    use std::os::unix::fs::PermissionsExt;
    use std::time::Duration;

    fn refusal(r: Result<()>) -> String {
        let e = r.expect_err("refused");
        assert!(e.downcast_ref::<BadInput>().is_some(), "{e:#} is bad input");
        e.to_string()
    }

    /// The names in `dir`, sorted.
    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    /// Runs `f` on a thread and fails the test if it has not returned
    /// within 20 s (a check that blocks on a FIFO never would).
    fn within_20s<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(Duration::from_secs(20))
            .expect("returned instead of blocking")
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
    fn devices_are_refused_and_dev_null_discards() {
        assert_eq!(
            refusal(check_output("--histogram", Path::new("/dev/full"))),
            "--histogram /dev/full is a device, not a file; give a file path (or - for standard output, /dev/null to discard)"
        );
        check_output("--json", Path::new("/dev/null")).unwrap();
        let mut out = create("--json", Path::new("/dev/null")).unwrap();
        out.write_all(b"gone").unwrap();
        out.finish().unwrap();
        // /dev/stdout is a symbolic link (to /proc/self/fd/1): `-` it is.
        assert_eq!(
            refusal(check_output("--csv", Path::new("/dev/stdout"))),
            "--csv /dev/stdout is a symbolic link, which jitterlab never writes through (it could point at any file); give the file's own path, or - for standard output"
        );
    }

    #[test]
    fn a_terminal_path_is_refused_as_a_device() {
        let tty = Path::new("/dev/tty");
        if !tty.exists() {
            eprintln!("skipped: {} is absent here", tty.display());
            return;
        }
        assert_eq!(
            refusal(check_output("--json", tty)),
            "--json /dev/tty is a device, not a file; give a file path (or - for standard output, /dev/null to discard)"
        );
    }

    #[test]
    fn two_outputs_naming_one_file_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.json");
        let again = dir.path().join(".").join("out.json");
        let o = RunOutputs {
            json: Some(out.clone()),
            csv: Some(again.clone()),
            ..RunOutputs::default()
        };
        assert_eq!(
            refusal(o.check()),
            format!(
                "--json {} and --csv {} name the same file; give each output its own path",
                out.display(),
                again.display()
            )
        );
        // Each its own file, or discarded twice: accepted, nothing left.
        let o = RunOutputs {
            json: Some(out),
            csv: Some(dir.path().join("rows.csv")),
            junit: Some("/dev/null".into()),
            histogram: Some("/dev/null".into()),
        };
        o.check().unwrap();
        assert!(names(dir.path()).is_empty());
    }

    #[test]
    fn two_outputs_on_standard_output_are_refused_first() {
        let o = RunOutputs {
            json: Some(STDOUT.into()),
            junit: Some(STDOUT.into()),
            ..RunOutputs::default()
        };
        assert_eq!(
            refusal(o.check()),
            "--json - and --junit - both ask for standard output; give a file path to all but one of them"
        );
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
    fn a_new_file_is_checked_and_nothing_left_behind() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.json");
        check_output("--json", &p).unwrap();
        assert_eq!(names(dir.path()), Vec::<String>::new());
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
    fn an_existing_file_is_not_touched_by_the_check() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("old.csv");
        std::fs::write(&p, "kept\n").unwrap();
        check_output("--csv", &p).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "kept\n");
        assert_eq!(names(dir.path()), ["old.csv"]);
    }

    #[test]
    fn a_symbolic_link_is_refused_and_its_target_left_intact() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "root only\n").unwrap();
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
        let link = dir.path().join("out.json");
        std::os::unix::fs::symlink(&secret, &link).unwrap();
        let expected = format!(
            "--json {} is a symbolic link, which jitterlab never writes through (it could point at any file); give the file's own path, or - for standard output",
            link.display()
        );
        assert_eq!(refusal(check_output("--json", &link)), expected);
        assert_eq!(
            refusal(create("--json", &link).map(|_| ())),
            expected,
            "refused again when created"
        );
        // A dangling link (the target not yet there) too.
        let dangling = dir.path().join("out.csv");
        std::os::unix::fs::symlink(dir.path().join("later"), &dangling).unwrap();
        refusal(check_output("--csv", &dangling));
        assert!(!dir.path().join("later").exists());
        assert_eq!(std::fs::read_to_string(&secret).unwrap(), "root only\n");
        assert_eq!(names(dir.path()), ["out.csv", "out.json", "secret"]);
    }

    #[test]
    fn a_hard_link_is_replaced_not_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "root only\n").unwrap();
        let p = dir.path().join("out.json");
        std::fs::hard_link(&secret, &p).unwrap();
        let mut out = create("--json", &p).unwrap();
        out.write_all(b"{}\n").unwrap();
        out.finish().unwrap();
        assert_eq!(std::fs::read_to_string(&secret).unwrap(), "root only\n");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "{}\n");
    }

    #[test]
    fn a_link_planted_after_the_check_is_replaced_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "root only\n").unwrap();
        let p = dir.path().join("out.csv");
        let mut out = create_streamed("--csv", &p).unwrap();
        out.write_all(b"a,b\n").unwrap();
        std::os::unix::fs::symlink(&secret, &p).unwrap();
        out.finish().unwrap();
        assert_eq!(std::fs::read_to_string(&secret).unwrap(), "root only\n");
        assert!(!std::fs::symlink_metadata(&p).unwrap().is_symlink());
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "a,b\n");
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("out.json");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        let f = fifo.clone();
        let got = within_20s(move || refusal(check_output("--json", &f)));
        assert_eq!(
            got,
            format!(
                "--json {} is a named pipe (FIFO), not a file; give a file path (or - for standard output, /dev/null to discard)",
                fifo.display()
            )
        );
        let f = fifo.clone();
        within_20s(move || refusal(create("--json", &f).map(|_| ())));
    }

    #[test]
    fn a_socket_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.csv");
        let _listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        assert_eq!(
            refusal(check_output("--csv", &path)),
            format!(
                "--csv {} is a socket, not a file; give a file path (or - for standard output, /dev/null to discard)",
                path.display()
            )
        );
    }

    #[test]
    fn an_existing_file_is_replaced_whole_with_its_mode() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.json");
        std::fs::write(&p, "old\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
        let old_inode = std::fs::metadata(&p).unwrap().ino();
        let mut out = create("--json", &p).unwrap();
        out.write_all(b"new\n").unwrap();
        out.flush().unwrap();
        // Until it is finished, readers see the old file.
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "old\n");
        out.finish().unwrap();
        let meta = std::fs::metadata(&p).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new\n");
        assert_eq!(meta.permissions().mode() & 0o7777, 0o640);
        assert_ne!(meta.ino(), old_inode, "a new file, renamed over the old");
        assert_eq!(names(dir.path()), ["out.json"]);
        // Set-id bits planted on the old file are not carried over.
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o6755)).unwrap();
        let mut out = create("--json", &p).unwrap();
        out.write_all(b"newer\n").unwrap();
        out.finish().unwrap();
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o755);
    }

    #[test]
    fn a_whole_output_dropped_unfinished_leaves_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.json");
        std::fs::write(&p, "old\n").unwrap();
        let mut out = create("--json", &p).unwrap();
        out.write_all(b"{\"half").unwrap();
        drop(out);
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "old\n");
        assert_eq!(names(dir.path()), ["out.json"]);
    }

    #[test]
    fn a_streamed_output_dropped_unfinished_keeps_what_was_written() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("rows.csv");
        std::fs::write(&p, "old\n").unwrap();
        let mut out = create_streamed("--csv", &p).unwrap();
        out.write_all(b"h\nrow 1\n").unwrap();
        drop(out);
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "h\nrow 1\n");
        assert_eq!(names(dir.path()), ["rows.csv"]);
    }

    #[test]
    fn two_outputs_on_standard_output_are_refused() {
        assert_eq!(
            refusal(check_outputs(&[
                ("--json", Some(Path::new("-"))),
                ("--csv", None),
                ("--histogram", Some(Path::new("-"))),
            ])),
            "--json - and --histogram - both ask for standard output; give a file path to all but one of them"
        );
        assert_eq!(
            refusal(check_binary_output("--pcap", Path::new("-"))),
            "--pcap -: a capture is binary and is not written to standard output; give a file path"
        );
        check_output("--json", Path::new("-")).unwrap();
    }

    #[test]
    fn write_errors_name_the_flag_and_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("gone");
        std::fs::create_dir(&sub).unwrap();
        let p = sub.join("h.txt");
        let mut out = create("--histogram", &p).unwrap();
        out.write_all(b"x").unwrap();
        std::fs::remove_dir_all(&sub).unwrap();
        assert_eq!(
            format!("{:#}", out.finish().unwrap_err()),
            format!(
                "writing --histogram {}: No such file or directory (os error 2)",
                p.display()
            )
        );
    }
}
