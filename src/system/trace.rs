//! `--break-trace`: stop the kernel's tracer the moment a latency crosses a
//! threshold, as cyclictest's `-b` does, so the trace buffer ends with the
//! events that caused the outlier.
//!
//! With ftrace running (e.g. `trace-cmd start -e sched -e irq`), the trace
//! buffer is a ring: by the time a run ends, the events around a rare
//! outlier are long overwritten. [`BreakTracer::fire`] writes a marker into
//! the trace (`trace_marker`) naming the latency, CPU and cycle, then writes
//! `0` to `tracing_on`, freezing the buffer; `trace-cmd show` or
//! `cat /sys/kernel/tracing/trace` then ends at the marker.
//!
//! [`find_tracefs`] locates tracefs under the `--sysroot` root (design rule 5)
//! before a run starts, and [`TracefsStatus::explain`] tells the user how to
//! fix what is missing (design rule 8). tracefs lives at `/sys/kernel/tracing`
//! since Linux 4.1; older set-ups reach it through debugfs at
//! `/sys/kernel/debug/tracing`. As an unprivileged user the directory cannot
//! even be listed (tracefs is mode 0700), which is reported as
//! [`TracefsStatus::NoAccess`] rather than as a missing tracer.
//!
//! [`BreakTracer`] opens both files before the measurement loop, because
//! `fire` runs inside it (design rule 2): it formats the marker into a stack
//! buffer with `core::fmt` (no heap allocation) and makes exactly two
//! `write` calls. `trace_marker` is opened for appending, the way
//! `echo … >> trace_marker` does, so a fake tree collects every marker;
//! `tracing_on` is opened without truncation, so the fake tree keeps its
//! content until `fire` overwrites it with `0\n`.
//!
//! [`unmount_tracefs`] undoes the one change the tracer (`crate::trace`)
//! may make here: mounting tracefs where it was not mounted (a journaled
//! setting, `Undo::TracefsMount`). It lives with the journal's other undo
//! steps (`system::journal::undo::tracefs`), because both the tracer and
//! `jitterlab restore` call it.
//!
//! The design rules cited here are in `docs/design.md`.

use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

pub use crate::system::journal::undo::tracefs::unmount_tracefs;

/// Where tracefs is relative to the root.
const TRACEFS: &str = "sys/kernel/tracing";
/// tracefs reached through debugfs (kernels before 4.1, or tracefs unmounted
/// while debugfs is mounted).
const DEBUGFS_TRACING: &str = "sys/kernel/debug/tracing";

/// Whether `--break-trace` can work on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TracefsStatus {
    /// tracefs is mounted at this directory (it holds `trace_marker`).
    Ready(PathBuf),
    /// This directory exists, empty: tracefs is not mounted on it.
    NotMounted(PathBuf),
    /// This directory cannot be searched (tracefs and debugfs are mode 0700):
    /// the user is not root.
    NoAccess(PathBuf),
    /// The kernel has no tracefs directory at all (built without ftrace).
    Missing,
}

impl TracefsStatus {
    /// One line for the user: what was found, and the fix when it is not
    /// ready. Paths are the real ones under the root.
    pub fn explain(&self) -> String {
        match self {
            TracefsStatus::Ready(dir) => format!("tracefs is ready at {}", dir.display()),
            TracefsStatus::NotMounted(dir) => format!(
                "tracefs is not mounted at {0}; mount it with: mount -t tracefs nodev {0}",
                dir.display()
            ),
            TracefsStatus::NoAccess(dir) => format!(
                "cannot look inside {} (permission denied); tracing needs root: run jitterlab as root",
                dir.display()
            ),
            TracefsStatus::Missing => "tracefs is missing: there is no /sys/kernel/tracing nor \
                 /sys/kernel/debug/tracing; boot a kernel built with CONFIG_FTRACE=y \
                 (in a container, bind-mount /sys/kernel/tracing)"
                .to_string(),
        }
    }
}

/// What a look at `dir/trace_marker` found.
enum Marker {
    /// It is there: tracefs is mounted on `dir`.
    Found,
    /// `dir` cannot be searched by this user.
    Denied,
    /// Not there (or `dir` does not exist).
    Absent,
}

/// Looks for `trace_marker` in `dir` without opening it.
fn look_for_marker(dir: &Path) -> Marker {
    match fs::metadata(dir.join("trace_marker")) {
        Ok(_) => Marker::Found,
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => Marker::Denied,
        Err(_) => Marker::Absent,
    }
}

/// True when `dir` is a directory with nothing in it (an unused mount point).
fn is_empty_dir(dir: &Path) -> bool {
    fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_none())
}

/// Finds tracefs under `root`: `sys/kernel/tracing`, then
/// `sys/kernel/debug/tracing`.
pub fn find_tracefs(root: &Path) -> TracefsStatus {
    let tracefs = root.join(TRACEFS);
    let via_debugfs = root.join(DEBUGFS_TRACING);
    match look_for_marker(&tracefs) {
        Marker::Found => return TracefsStatus::Ready(tracefs),
        Marker::Denied => return TracefsStatus::NoAccess(tracefs),
        Marker::Absent => {}
    }
    let debugfs_denied = match look_for_marker(&via_debugfs) {
        Marker::Found => return TracefsStatus::Ready(via_debugfs),
        Marker::Denied => true,
        Marker::Absent => false,
    };
    if is_empty_dir(&tracefs) {
        TracefsStatus::NotMounted(tracefs)
    } else if debugfs_denied {
        TracefsStatus::NoAccess(root.join("sys/kernel/debug"))
    } else {
        TracefsStatus::Missing
    }
}

/// Longest marker: the fixed text plus four 20-digit numbers.
const MARKER_CAP: usize = 160;

/// A fixed buffer on the stack that `write!` can format into.
struct StackBuf {
    bytes: [u8; MARKER_CAP],
    len: usize,
}

impl StackBuf {
    fn new() -> StackBuf {
        StackBuf {
            bytes: [0; MARKER_CAP],
            len: 0,
        }
    }

    fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

impl fmt::Write for StackBuf {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        if end > MARKER_CAP {
            return Err(fmt::Error);
        }
        self.bytes[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// Formats the marker `fire` writes, newline-terminated like a trace line.
fn format_marker(
    buf: &mut StackBuf,
    threshold_ns: u64,
    cpu: usize,
    cycle: u64,
    latency_ns: u64,
) -> fmt::Result {
    use std::fmt::Write as _;
    writeln!(
        buf,
        "jitterlab: hit latency threshold ({latency_ns} ns > {threshold_ns} ns) on cpu {cpu}, cycle {cycle}"
    )
}

/// Stops the kernel tracer when a probe sees a latency above a threshold;
/// open before the measurement loop, fire from inside it.
#[derive(Debug)]
pub struct BreakTracer {
    marker: File,
    tracing_on: File,
    threshold_ns: u64,
}

impl BreakTracer {
    /// Opens `trace_marker` and `tracing_on` in the tracefs directory `dir`
    /// (as found by [`find_tracefs`]) for writing. The error names the file.
    pub fn open(dir: &Path, threshold_ns: u64) -> io::Result<BreakTracer> {
        let open = |name: &str, append: bool| {
            let path = dir.join(name);
            OpenOptions::new()
                .write(true)
                .append(append)
                .open(&path)
                .map_err(|e| {
                    io::Error::new(
                        e.kind(),
                        format!("cannot open {} for writing: {e}", path.display()),
                    )
                })
        };
        Ok(BreakTracer {
            marker: open("trace_marker", true)?,
            tracing_on: open("tracing_on", false)?,
            threshold_ns,
        })
    }

    /// Writes the marker naming `latency_ns`, `cpu` and `cycle` to the trace,
    /// then stops tracing. True when both writes went through whole.
    /// Allocates nothing.
    #[cold]
    pub fn fire(&mut self, cpu: usize, cycle: u64, latency_ns: u64) -> bool {
        let mut buf = StackBuf::new();
        let formatted = format_marker(&mut buf, self.threshold_ns, cpu, cycle, latency_ns).is_ok();
        let text = buf.as_bytes();
        let marked = formatted && matches!(self.marker.write(text), Ok(n) if n == text.len());
        let stopped = matches!(self.tracing_on.write(b"0\n"), Ok(2));
        marked && stopped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    use crate::testutil::{copy_fixture, fixture};

    #[test]
    fn rt_fixture_has_tracefs_ready() {
        let root = fixture("sysroot-rt");
        let status = find_tracefs(&root);
        let dir = root.join("sys/kernel/tracing");
        assert_eq!(status, TracefsStatus::Ready(dir.clone()));
        assert_eq!(
            status.explain(),
            format!("tracefs is ready at {}", dir.display())
        );
    }

    #[test]
    fn empty_mount_point_is_not_mounted() {
        let root = copy_fixture("sysroot-vm");
        let dir = root.path().join("sys/kernel/tracing");
        fs::create_dir_all(&dir).unwrap();
        let status = find_tracefs(root.path());
        assert_eq!(status, TracefsStatus::NotMounted(dir.clone()));
        let d = dir.display();
        assert_eq!(
            status.explain(),
            format!("tracefs is not mounted at {d}; mount it with: mount -t tracefs nodev {d}")
        );
        assert_eq!(
            TracefsStatus::NotMounted(PathBuf::from("/sys/kernel/tracing")).explain(),
            "tracefs is not mounted at /sys/kernel/tracing; mount it with: mount -t tracefs nodev /sys/kernel/tracing"
        );
    }

    #[test]
    fn no_tracing_directory_is_missing() {
        let root = copy_fixture("sysroot-vm");
        let status = find_tracefs(root.path());
        assert_eq!(status, TracefsStatus::Missing);
        assert_eq!(
            status.explain(),
            "tracefs is missing: there is no /sys/kernel/tracing nor /sys/kernel/debug/tracing; boot a kernel built with CONFIG_FTRACE=y (in a container, bind-mount /sys/kernel/tracing)"
        );
    }

    #[test]
    fn tracefs_through_debugfs_is_found() {
        let root = copy_fixture("sysroot-vm");
        fs::create_dir_all(root.path().join("sys/kernel/tracing")).unwrap();
        let dir = root.path().join("sys/kernel/debug/tracing");
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("trace_marker"), "").unwrap();
        assert_eq!(find_tracefs(root.path()), TracefsStatus::Ready(dir));
    }

    #[test]
    fn unsearchable_tracefs_needs_root() {
        let root = copy_fixture("sysroot-rt");
        let dir = root.path().join("sys/kernel/tracing");
        assert_eq!(
            TracefsStatus::NoAccess(dir.clone()).explain(),
            format!(
                "cannot look inside {} (permission denied); tracing needs root: run jitterlab as root",
                dir.display()
            )
        );
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o000)).unwrap();
        // Root bypasses the mode; only an unprivileged user sees NoAccess.
        let privileged = fs::read_dir(&dir).is_ok();
        let status = find_tracefs(root.path());
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        if privileged {
            assert_eq!(status, TracefsStatus::Ready(dir));
        } else {
            assert_eq!(status, TracefsStatus::NoAccess(dir));
        }
    }

    #[test]
    fn fire_marks_the_trace_and_stops_tracing() {
        let root = copy_fixture("sysroot-rt");
        let dir = root.path().join("sys/kernel/tracing");
        let mut tracer = BreakTracer::open(&dir, 100_000).unwrap();
        assert_eq!(tracer.threshold_ns, 100_000);
        // Opening changes nothing.
        assert_eq!(fs::read_to_string(dir.join("tracing_on")).unwrap(), "1\n");
        assert_eq!(fs::read_to_string(dir.join("trace_marker")).unwrap(), "");
        assert!(tracer.fire(3, 42, 123_456));
        assert_eq!(fs::read_to_string(dir.join("tracing_on")).unwrap(), "0\n");
        assert_eq!(
            fs::read_to_string(dir.join("trace_marker")).unwrap(),
            "jitterlab: hit latency threshold (123456 ns > 100000 ns) on cpu 3, cycle 42\n"
        );
    }

    #[test]
    fn open_names_the_missing_file() {
        let root = copy_fixture("sysroot-vm");
        let dir = root.path().join("sys/kernel/tracing");
        fs::create_dir_all(&dir).unwrap();
        let err = BreakTracer::open(&dir, 1).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert_eq!(
            err.to_string(),
            format!(
                "cannot open {} for writing: No such file or directory (os error 2)",
                dir.join("trace_marker").display()
            )
        );
    }

    #[test]
    fn largest_marker_fits_the_stack_buffer() {
        let mut buf = StackBuf::new();
        format_marker(&mut buf, u64::MAX, usize::MAX, u64::MAX, u64::MAX).unwrap();
        let text = std::str::from_utf8(buf.as_bytes()).unwrap();
        assert_eq!(
            text,
            format!(
                "jitterlab: hit latency threshold ({0} ns > {0} ns) on cpu {1}, cycle {0}\n",
                u64::MAX,
                usize::MAX
            )
        );
        let mut full = StackBuf::new();
        let long = "x".repeat(MARKER_CAP + 1);
        assert!(fmt::Write::write_str(&mut full, &long).is_err());
        assert_eq!(full.as_bytes(), b"");
    }
}
