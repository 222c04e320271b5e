//! Requests: the cache masks, groups and default-group settings a spec
//! asks for, and the rule for group names.

use serde::{Deserialize, Serialize};

use super::{Resource, RESERVED_NAMES};

/// A mask for one cache resource, on some or all of its ids.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheMask {
    /// Which cache resource (never [`Resource::Mb`]).
    pub resource: Resource,
    /// The capacity mask (way N = bit N).
    pub mask: u64,
    /// The cache ids it applies to; `None`: every id.
    pub ids: Option<Vec<u32>>,
}

/// One resctrl group a configuration creates.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheGroup {
    /// The group's directory name, `[A-Za-z0-9_-]+`.
    pub name: String,
    /// The CPUs it owns (`cpus_list`): they allocate with its masks.
    pub cpus: Vec<usize>,
    /// Tasks (pids) to move into it (`tasks`); not settable from a spec.
    #[serde(default)]
    pub tasks: Vec<u32>,
    /// Its cache masks.
    pub masks: Vec<CacheMask>,
    /// Its memory bandwidth, percent, on every id.
    pub mb: Option<u32>,
    /// Whether its ways are its own (`mode` = `exclusive`).
    pub exclusive: bool,
}

/// How the default (root) group is shrunk.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CacheDefault {
    /// Its new cache masks.
    pub masks: Vec<CacheMask>,
    /// Its new memory bandwidth, percent, on every id.
    pub mb: Option<u32>,
}

/// Checks a group name: `[A-Za-z0-9_-]+` and not one of resctrl's own
/// directories. A spec names a group, never a path.
pub fn check_group_name(name: &str) -> Result<(), String> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(format!(
            "group {name:?} may use only ASCII letters, digits, _ and - (it names a directory under /sys/fs/resctrl)"
        ));
    }
    if RESERVED_NAMES.contains(&name) {
        return Err(format!(
            "group {name:?} is a directory of resctrl itself; choose another name"
        ));
    }
    Ok(())
}
