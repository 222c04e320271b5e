//! Host quirks that keep a container from running, or from being
//! real-time, read from the sysroot and explained with their fix. Nothing
//! here changes the machine: a quirk jitterlab can work around without
//! touching the host (resource limits it passes to the container itself)
//! is worked around and said; one it cannot (a cgroup controller split
//! between v1 and v2) is refused with the command that fixes it.
//!
//! - **Cgroup controller split** ([`CgroupLayout::split`]): on a hybrid
//!   host (v1 hierarchies beside a cgroup v2 mount) a controller that sits
//!   in v2 — `hugetlb` on the machine this was written on, whose
//!   `/proc/cgroups` gives it hierarchy 0 while `cgroup.controllers` of the
//!   v2 mount lists it — makes crun refuse every container ("cgroups in
//!   hybrid mode not supported, drop all controllers from cgroupv2"). The
//!   fix mounts the controller as a v1 hierarchy of its own: `mkdir -p
//!   /sys/fs/cgroup/hugetlb && mount -t cgroup -o hugetlb cgroup
//!   /sys/fs/cgroup/hugetlb`.
//! - **Hard resource limits** ([`ulimits`]): podman gives a rootful
//!   container `nofile` and `nproc` of 1048576 unless told otherwise; when
//!   this process's hard limits are lower and it lacks `CAP_SYS_RESOURCE`
//!   to raise them (`/proc/self/limits`, `CapEff` of `/proc/self/status`),
//!   crun's `setrlimit` fails and no container starts. jitterlab then
//!   passes `--ulimit nofile=1024:1024 --ulimit nproc=1024:1024` itself (a
//!   flag of that container, not a change to the host) and says so. The
//!   real-time limits it would like to give (`rtprio=99:99`,
//!   `memlock=-1:-1`) are left out the same way when they cannot be
//!   raised: the container's root then schedules and locks through the
//!   capabilities it is given (`SYS_NICE`, `IPC_LOCK`).
//! - **RT group scheduling**: whether the `cpu` v1 hierarchy has
//!   `cpu.rt_runtime_us` ([`CgroupLayout::cpu_v1`]); the budget a parent
//!   cgroup can get is [`super::rt_parent`]'s.
//!
//! Every path is read under the sysroot (design rule 5), so each quirk is
//! tested against fake `/proc/self/mountinfo`, `/proc/cgroups`,
//! `/proc/self/limits`, `/proc/self/status` and `/sys/fs/cgroup` trees.
//!
//! The design rules cited here are in `docs/design.md`.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use super::Engine;
use crate::system::journal::undo::cgroup_layout::V2_CAPABLE;
pub use crate::system::journal::undo::cgroup_layout::{under, CgroupLayout};

/// A controller split on a hybrid host (module doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    /// The controllers in v2, by their v1 names.
    pub controllers: Vec<String>,
    /// The v2 mount point.
    pub v2: PathBuf,
    /// Where the v1 hierarchies are mounted (`/sys/fs/cgroup`).
    pub v1_dir: PathBuf,
}

impl Split {
    /// What was found and what it does to containers.
    pub fn summary(&self) -> String {
        let (what, verb) = match self.controllers.as_slice() {
            [one] => (format!("the {one} controller"), "sits"),
            many => (format!("the {} controllers", many.join(", ")), "sit"),
        };
        format!(
            "{what} {verb} in cgroup v2 ({}) while the others are v1: the container runtime (crun) refuses this hybrid mode (\"cgroups in hybrid mode not supported, drop all controllers from cgroupv2\"), so no container can start",
            self.v2.display()
        )
    }

    /// The commands that mount each split controller as a v1 hierarchy of
    /// its own (not kept across a reboot).
    pub fn fix(&self) -> String {
        let commands: Vec<String> = self
            .controllers
            .iter()
            .map(|c| {
                let target = self.v1_dir.join(c);
                format!(
                    "mkdir -p {t} && mount -t cgroup -o {c} cgroup {t}",
                    t = target.display()
                )
            })
            .collect();
        commands.join(" && ")
    }
}

/// What the container's quirks read of the layout (the layout itself, and
/// what the undo of the parent cgroup reads, are below the journal).
impl CgroupLayout {
    /// The controllers split between v1 and v2 on a hybrid host (module
    /// doc), or `None`: a pure v1 or pure v2 host, or a hybrid one whose v2
    /// mount holds no controller.
    pub fn split(&self) -> Option<Split> {
        let v2 = self.v2.as_ref()?;
        if self.v1.is_empty() {
            return None;
        }
        let in_v2: Vec<String> = match &self.v2_controllers {
            Some(list) => list.clone(),
            None => self
                .proc_cgroups
                .iter()
                .filter(|(name, h)| **h == 0 && V2_CAPABLE.contains(&name.as_str()))
                .map(|(name, _)| name.clone())
                .collect(),
        };
        // A controller a v1 hierarchy holds is not split, whatever v2 says.
        let controllers: Vec<String> = in_v2
            .into_iter()
            .filter(|c| !self.v1.iter().any(|m| m.controllers.contains(c)))
            .collect();
        if controllers.is_empty() {
            return None;
        }
        let v1_dir = self.v1[0]
            .mount
            .parent()
            .map_or_else(|| PathBuf::from("/sys/fs/cgroup"), Path::to_path_buf);
        Some(Split {
            controllers,
            v2: v2.clone(),
            v1_dir,
        })
    }

    /// The mount point of the v1 hierarchy holding the `cpu` controller.
    pub fn cpu_v1(&self) -> Option<&Path> {
        self.v1
            .iter()
            .find(|m| m.controllers.iter().any(|c| c == "cpu"))
            .map(|m| m.mount.as_path())
    }
}

// ---------------------------------------------------------------------------
// Resource limits.

/// podman's `nofile` and `nproc` for a rootful container (`--ulimit`'s
/// documented default).
pub const PODMAN_DEFAULT_LIMIT: u64 = 1_048_576;

/// What jitterlab gives `nofile` and `nproc` when the engine's default
/// cannot be had (module doc).
pub const FALLBACK_LIMIT: u64 = 1024;

/// `CAP_SYS_RESOURCE`'s bit in the capability sets.
const CAP_SYS_RESOURCE: u32 = 24;

/// A hard limit of `/proc/self/limits`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hard {
    /// `unlimited`.
    Unlimited,
    /// A number.
    Value(u64),
}

/// The hard limits of a `/proc/self/limits` text, by the limit's name
/// (`Max open files`).
pub fn hard_limits(text: &str) -> BTreeMap<String, Hard> {
    let mut out = BTreeMap::new();
    for line in text.lines().skip(1) {
        // Columns are separated by two or more spaces; names hold single ones.
        let cols: Vec<&str> = line
            .split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        if let [name, _soft, hard, ..] = cols.as_slice() {
            let hard = match *hard {
                "unlimited" => Hard::Unlimited,
                v => match v.parse() {
                    Ok(n) => Hard::Value(n),
                    Err(_) => continue,
                },
            };
            out.insert(name.to_string(), hard);
        }
    }
    out
}

/// Whether the effective capabilities of a `/proc/self/status` text hold
/// `bit`; `None` when the line is missing.
pub fn has_capability(status: &str, bit: u32) -> Option<bool> {
    let hex = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))?
        .trim();
    let set = u64::from_str_radix(hex, 16).ok()?;
    Some(set & (1 << bit) != 0)
}

/// The `--ulimit` values a container gets, and what they say about this
/// host.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ulimits {
    /// Each `--ulimit` value, in order (`rtprio=99:99`, …).
    pub flags: Vec<String>,
    /// One line per limit worked around or left out (module doc).
    pub notes: Vec<String>,
}

/// The `--ulimit` values for a container of `engine`, from this process's
/// `/proc/self/limits` and `/proc/self/status` under `root`.
pub fn read_ulimits(root: &Path, engine: Engine) -> Ulimits {
    let read = |rel: &str| fs::read_to_string(root.join(rel)).ok();
    ulimits(
        engine,
        read("proc/self/limits").as_deref(),
        read("proc/self/status").as_deref(),
    )
}

/// The `--ulimit` values for a container of `engine` started by a process
/// with these limits and status texts (module doc). Docker's daemon
/// starts containers with its own limits and capabilities, so only
/// podman's depend on the caller's.
pub fn ulimits(engine: Engine, limits: Option<&str>, status: Option<&str>) -> Ulimits {
    let mut out = Ulimits::default();
    if engine == Engine::Docker {
        out.flags = vec!["rtprio=99:99".into(), "memlock=-1:-1".into()];
        return out;
    }
    let hard = limits.map(hard_limits).unwrap_or_default();
    // Unknown (a tree without the file): assume the engine's defaults hold.
    let can_raise = status
        .and_then(|s| has_capability(s, CAP_SYS_RESOURCE))
        .unwrap_or(true);
    let low = |name: &str, want: Option<u64>| -> Option<u64> {
        match hard.get(name) {
            Some(Hard::Value(v)) if !can_raise && want.is_none_or(|w| *v < w) => Some(*v),
            _ => None,
        }
    };
    let rtprio = low("Max realtime priority", Some(99));
    if rtprio.is_none() {
        out.flags.push("rtprio=99:99".into());
    }
    let memlock = low("Max locked memory", None);
    if memlock.is_none() {
        out.flags.push("memlock=-1:-1".into());
    }
    let mut below = Vec::new();
    let mut fallback = Vec::new();
    for (flag, name, words) in [
        ("nofile", "Max open files", "open files"),
        ("nproc", "Max processes", "processes"),
    ] {
        if let Some(v) = low(name, Some(PODMAN_DEFAULT_LIMIT)) {
            below.push(format!("{words} {v}"));
            let f = format!("{flag}={FALLBACK_LIMIT}:{FALLBACK_LIMIT}");
            fallback.push(format!("--ulimit {f}"));
            out.flags.push(f);
        }
    }
    if !below.is_empty() {
        out.notes.push(format!(
            "the hard limits of this process ({}) are below podman's default of {PODMAN_DEFAULT_LIMIT} and it lacks CAP_SYS_RESOURCE to raise them, so podman could not start a container with its defaults: jitterlab passes {} itself (a flag of the container, not a change to the host)",
            below.join(", "),
            fallback.join(" ")
        ));
    }
    if let Some(v) = rtprio {
        out.notes.push(format!(
            "RLIMIT_RTPRIO's hard limit here is {v} and this process lacks CAP_SYS_RESOURCE to raise it: the container gets no --ulimit rtprio=99:99, and its root sets SCHED_FIFO through CAP_SYS_NICE (--cap-add SYS_NICE)"
        ));
    }
    if let Some(v) = memlock {
        out.notes.push(format!(
            "RLIMIT_MEMLOCK's hard limit here is {v} bytes and this process lacks CAP_SYS_RESOURCE to raise it: the container gets no --ulimit memlock=-1:-1, and its root locks memory through CAP_IPC_LOCK (--cap-add IPC_LOCK)"
        ));
    }
    out
}
