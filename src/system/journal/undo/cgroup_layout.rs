//! The cgroup hierarchies of the host as `/proc/self/mountinfo` and
//! `/proc/cgroups` describe them, under the sysroot: which v1 hierarchies
//! hold which controllers, and where cgroup v2 is mounted.
//!
//! The deployment container reads the layout to find its quirks (a
//! controller split between v1 and v2, the `cpu` v1 hierarchy that holds a
//! real-time budget: [`crate::system::container::quirks`]), and the undo of
//! the containers' parent cgroup ([`super::container`]) reads its mount
//! points to remove the group from every hierarchy; the layout lives here,
//! below the journal, so that undo step does not reach up into the
//! container module.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use super::cgroup::unescape;

/// The controllers cgroup v2 lists, by their v1 names (`io` is v1's
/// `blkio`), used when a v2 mount's `cgroup.controllers` cannot be read
/// (v2's implicit `perf_event` never blocks a container, and `net_cls`,
/// `net_prio` exist in v1 only).
pub(crate) const V2_CAPABLE: [&str; 8] = [
    "cpu", "cpuset", "memory", "blkio", "hugetlb", "pids", "rdma", "misc",
];

/// One cgroup v1 hierarchy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct V1Mount {
    /// Its mount point, as `/proc/self/mountinfo` names it (absolute, on
    /// the machine; join it under the sysroot to read it).
    pub mount: PathBuf,
    /// The controllers it holds (`cpu`, `cpuacct`, …); empty for a named
    /// hierarchy (`name=systemd`).
    pub controllers: Vec<String>,
}

/// The cgroup hierarchies of the host.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CgroupLayout {
    /// The v1 hierarchies, in mount order.
    pub v1: Vec<V1Mount>,
    /// The cgroup v2 mount point, if there is one.
    pub v2: Option<PathBuf>,
    /// The controllers of the v2 root (`cgroup.controllers`), by their v1
    /// names; `None` when unreadable.
    pub v2_controllers: Option<Vec<String>>,
    /// `/proc/cgroups`: enabled controllers and their hierarchy (0: in v2,
    /// or in none).
    pub proc_cgroups: BTreeMap<String, u32>,
}

impl CgroupLayout {
    /// The layout under `root`: `proc/self/mountinfo`, `proc/cgroups` and
    /// the v2 mount's `cgroup.controllers`. Unreadable files leave their
    /// part empty.
    pub fn read(root: &Path) -> CgroupLayout {
        let read = |rel: &str| fs::read_to_string(root.join(rel)).unwrap_or_default();
        let mut layout = CgroupLayout::parse(&read("proc/self/mountinfo"), &read("proc/cgroups"));
        if let Some(v2) = &layout.v2 {
            let path = under(root, v2).join("cgroup.controllers");
            layout.v2_controllers = fs::read_to_string(path).ok().map(|t| {
                t.split_whitespace()
                    .map(|c| v1_name(c).to_string())
                    .collect()
            });
        }
        layout
    }

    /// The layout of a `mountinfo` and a `/proc/cgroups` text (without
    /// the v2 controllers, which [`CgroupLayout::read`] adds).
    pub fn parse(mountinfo: &str, proc_cgroups: &str) -> CgroupLayout {
        let mut layout = CgroupLayout::default();
        for line in proc_cgroups.lines().filter(|l| !l.starts_with('#')) {
            let f: Vec<&str> = line.split_whitespace().collect();
            if let [name, hierarchy, _, enabled] = f.as_slice() {
                if *enabled == "1" {
                    if let Ok(h) = hierarchy.parse() {
                        layout.proc_cgroups.insert(name.to_string(), h);
                    }
                }
            }
        }
        for line in mountinfo.lines() {
            // ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL…] - FSTYPE SOURCE SUPER
            let Some((left, right)) = line.split_once(" - ") else {
                continue;
            };
            let Some(mount) = left.split(' ').nth(4) else {
                continue;
            };
            let mut r = right.split(' ');
            let (Some(fstype), _, Some(superopts)) = (r.next(), r.next(), r.next()) else {
                continue;
            };
            let mount = PathBuf::from(unescape(mount));
            match fstype {
                "cgroup2" => layout.v2 = layout.v2.take().or(Some(mount)),
                "cgroup" => {
                    let controllers = superopts
                        .split(',')
                        .filter(|o| {
                            layout.proc_cgroups.contains_key(*o)
                                || (layout.proc_cgroups.is_empty() && is_controller(o))
                        })
                        .map(str::to_string)
                        .collect();
                    layout.v1.push(V1Mount { mount, controllers });
                }
                _ => {}
            }
        }
        layout
    }

    /// Every cgroup mount point, v1 and v2.
    pub fn mounts(&self) -> Vec<&Path> {
        let mut out: Vec<&Path> = self.v1.iter().map(|m| m.mount.as_path()).collect();
        out.extend(self.v2.as_deref());
        out
    }
}

/// A cgroup v1 controller's name (for a mountinfo without `/proc/cgroups`).
fn is_controller(option: &str) -> bool {
    V2_CAPABLE.contains(&option)
        || [
            "cpuacct",
            "devices",
            "freezer",
            "net_cls",
            "net_prio",
            "perf_event",
        ]
        .contains(&option)
}

/// A v2 controller's v1 name (`io` is `blkio`).
fn v1_name(v2: &str) -> &str {
    match v2 {
        "io" => "blkio",
        other => other,
    }
}

/// `path` (absolute, as the machine names it) under `root`.
pub fn under(root: &Path, path: &Path) -> PathBuf {
    root.join(path.strip_prefix("/").unwrap_or(path))
}
