//! What the journal holds and how it is written: the [`Holder`] of the
//! machine lock, one [`Undo`] per change, the journal document itself (its
//! JSON form is the `journal` module doc's **Format**), and the facts and
//! phrases the lock, the refusals and the replay share (is the owner alive,
//! is the journal of another boot, "2 changes").

use std::fs;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::system::procs::read_stat;

/// The journal's schema version.
pub(super) const VERSION: u32 = 1;

/// Where the kernel names the current boot.
const BOOT_ID: &str = "/proc/sys/kernel/random/boot_id";

/// What the jitterlab holding the machine lock is doing: written into the
/// lock file, so another jitterlab can name it, and a measuring-only run
/// can tell `apply` (which it may run beside) from the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holder {
    /// `jitterlab run …` whose probe changes the machine.
    Run,
    /// `jitterlab bench`.
    Bench,
    /// `jitterlab apply`.
    Apply,
    /// `jitterlab restore`.
    Restore,
}

impl Holder {
    /// The subcommand.
    pub fn name(self) -> &'static str {
        match self {
            Holder::Run => "run",
            Holder::Bench => "bench",
            Holder::Apply => "apply",
            Holder::Restore => "restore",
        }
    }

    pub(super) fn parse(word: &str) -> Option<Holder> {
        [Holder::Run, Holder::Bench, Holder::Apply, Holder::Restore]
            .into_iter()
            .find(|h| h.name() == word)
    }
}

/// How to undo one change to the machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Undo {
    /// A neighbour's process group: kill every member.
    Neighbour {
        /// The process group id (= the leader's pid).
        pgid: i32,
        /// The leader's start time (field 22 of `/proc/PID/stat`, clock
        /// ticks after boot), to recognise a reused pid.
        start_ticks: u64,
        /// The command it runs, for the report.
        argv: Vec<String>,
    },
    /// A network namespace jitterlab created: `ip netns delete NAME`.
    Netns {
        /// The namespace's name.
        name: String,
    },
    /// A file's old content: written back verbatim, only to a file on the
    /// settings' allow-list ([`crate::system::journal::undo::files`]).
    File {
        /// The absolute path as written (already under the sysroot).
        path: PathBuf,
        /// Its content before the change.
        old: String,
    },
    /// A process stopped with `SIGSTOP`: resume it with `SIGCONT`, unless
    /// its pid now belongs to another process. Journaled before the signal.
    Stopped {
        /// The stopped process.
        pid: i32,
        /// Its start time (field 22 of `/proc/PID/stat`), to recognise a
        /// reused pid.
        start_ticks: u64,
        /// Its command name (`/proc/PID/comm`), for the report.
        comm: String,
    },
    /// A resctrl group jitterlab created: removed
    /// ([`crate::system::journal::undo::resctrl::remove_group`]).
    ResctrlGroup {
        /// The group's directory (already under the sysroot).
        path: PathBuf,
        /// Files to remove before the directory: empty on a real resctrl,
        /// where the kernel removes them; in a fake tree, what jitterlab's
        /// stand-in for the kernel created.
        #[serde(default)]
        files: Vec<String>,
    },
    /// resctrl, mounted by jitterlab: unmounted
    /// ([`crate::system::journal::undo::resctrl::unmount`]).
    ResctrlMount {
        /// The mount point (already under the sysroot).
        target: PathBuf,
    },
    /// tracefs, mounted by jitterlab for its tracer: unmounted
    /// ([`crate::system::trace::unmount_tracefs`]). Journaled before the
    /// `mount`.
    TracefsMount {
        /// The mount point (already under the sysroot).
        target: PathBuf,
    },
    /// A tracefs instance jitterlab made for its tracer
    /// (`<tracefs>/instances/jitterlab-<pid>`): removed with `rmdir`
    /// ([`crate::system::journal::undo::tracefs::remove_instance`]).
    /// Journaled before the `mkdir`.
    TracefsInstance {
        /// The instance's directory (already under the sysroot).
        path: PathBuf,
    },
    /// A private work directory jitterlab made (neighbour output, disk
    /// load files): removed with what it holds, symlink-safely
    /// ([`crate::system::journal::undo::workdir::undo`]). Journaled before the `mkdir`.
    WorkDir {
        /// The directory (`<runtime dir>/jitterlab-XXXXXXXX` or
        /// `<disk base>/jitterlab-disk-XXXXXXXX`).
        path: PathBuf,
    },
    /// A cgroup jitterlab made for a cell's neighbours: every process in it
    /// killed, then removed ([`crate::system::journal::undo::cgroup::undo`]).
    /// Journaled before the `mkdir`.
    Cgroup {
        /// The group's directory in the real cgroup file system (cgroups
        /// are live kernel objects, never under the sysroot).
        path: PathBuf,
    },
    /// A container jitterlab started for a cell: removed with `ENGINE rm
    /// -f NAME` ([`crate::system::journal::undo::container::remove_container`]).
    /// Journaled before the engine is started.
    Container {
        /// The engine's program (`podman`, `docker`).
        engine: String,
        /// The container's name (`jitterlab-<pid>-<cell>`).
        name: String,
    },
    /// The parent cgroup jitterlab made for its containers' real-time
    /// budget (`--cgroup-parent`): removed from every cgroup hierarchy,
    /// the groups the engine made in it first
    /// ([`crate::system::journal::undo::container::remove_parent`]). Journaled
    /// before the `mkdir`; its `cpu.rt_*` values are `File` entries of
    /// their own.
    ContainerCgroup {
        /// The group's directory in the `cpu` hierarchy (already under the
        /// sysroot).
        path: PathBuf,
        /// Files to remove before the directory: empty on a real cgroup
        /// file system, where the kernel removes them; in a fake tree, what
        /// jitterlab's stand-in for the kernel created.
        #[serde(default)]
        files: Vec<String>,
    },
}

/// One journaled change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Entry {
    /// Unique within the journal, increasing.
    pub(super) id: u64,
    /// What undoes it.
    #[serde(flatten)]
    pub(super) undo: Undo,
}

/// The journal file's content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Document {
    pub(super) version: u32,
    pub(super) owner_pid: u32,
    pub(super) owner_start_ticks: u64,
    pub(super) boot_id: String,
    pub(super) started_at: String,
    pub(super) entries: Vec<Entry>,
}

/// True when the journal's owner is this boot's process `owner_pid` with the
/// recorded start time (and not a zombie).
pub(super) fn owner_alive(doc: &Document) -> bool {
    doc.boot_id == boot_id()
        && i32::try_from(doc.owner_pid)
            .ok()
            .and_then(read_stat)
            .is_some_and(|s| s.is_alive() && s.start_ticks == doc.owner_start_ticks)
}

/// True when the journal names a boot, and it is not this one.
pub(super) fn other_boot(doc: &Document) -> bool {
    let now = boot_id();
    !doc.boot_id.is_empty() && !now.is_empty() && doc.boot_id != now
}

/// "1 change", "2 changes".
pub(super) fn changes(n: usize) -> String {
    plural(n, "change", "changes")
}

/// `n` and the noun in singular or plural.
pub(super) fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// This boot's id, or an empty string when the kernel does not say.
pub(super) fn boot_id() -> String {
    fs::read_to_string(BOOT_ID)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Now, in RFC 3339 to the second (UTC).
pub(super) fn now_rfc3339() -> String {
    let now = time::OffsetDateTime::now_utc();
    now.replace_nanosecond(0)
        .unwrap_or(now)
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}
