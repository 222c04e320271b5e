//! Cache allocation through the kernel's resctrl file system, the pure part:
//! the schemata grammar, cache-way masks, the kernel's validation rules, the
//! plan of what to write, and the partition table a user reads.
//!
//! The source documents partition the last-level cache per core ([Intel CODESYS]
//! Tables 5, 7 and 9: "cache ways 7,6 are shared among workloads running on
//! CPU 0 …") and the L2 per core ([Red Hat caterpillar]: `echo "L2:0=3ff" >
//! /sys/fs/resctrl/schemata`, `mkdir p0`, `echo "L2:0=ffc00;" >
//! p0/schemata`). Everything here is what can be decided without touching
//! the machine, so that a bad request is refused with a message naming the
//! fix before anything is written (design rule 8); the binary
//! (`src/system/settings/resctrl.rs`) reads the machine and writes.
//!
//! # The kernel's formats
//!
//! - **Schemata** (`/sys/fs/resctrl/schemata`, `GROUP/schemata`): one line
//!   per resource, `NAME:ID=VALUE;ID=VALUE…`. Cache values are capacity
//!   bit masks (CBM) in hex, one bit per cache way, way 0 the lowest bit;
//!   `MB` (memory bandwidth) values are decimal percent. Reading pads both:
//!   resource names are right-aligned to the longest name (plus four for a
//!   resource that could be split by CDP, so `    L3:` on a CDP-capable
//!   CPU), cache masks are zero-padded and bandwidth values space-padded to
//!   the widest value of any resource: `    L3:0=7fff;1=7fff` and
//!   `    MB:0= 100;1= 100`. [`parse_schemata`] reads both the padded read
//!   format and the compact write format (`L2:0=ffc00;`, a trailing `;`
//!   as [Red Hat caterpillar] writes it, an optional `0x`); [`SchemataLine::to_write`]
//!   gives the compact form with the trailing newline the kernel requires.
//!   A write names only the resources and domains it changes; the others
//!   keep their values ([`Schemata::merge`]).
//! - **CDP** (code and data prioritization, `mount -o cdp`): `L3` becomes
//!   the two resources `L3CODE` and `L3DATA` (and `L2` → `L2CODE`/`L2DATA`
//!   with `cdpl2`), each with its own `info/` directory.
//! - **`info/RESOURCE/`**: `cbm_mask` (every way, hex), `min_cbm_bits`
//!   (the fewest adjacent ways a mask may have; 0 on AMD, where an empty
//!   mask is allowed), `shareable_bits` (ways the hardware shares with I/O
//!   or a GPU), `sparse_masks` (`1`: a mask may have gaps; missing on
//!   kernels before 6.8, which means it may not), `num_closids` (classes
//!   of service: the kernel uses the smallest count of all resources);
//!   `info/MB/` has `min_bandwidth` and `bandwidth_gran` (a request is
//!   rounded up to a multiple of the granularity).
//!
//! # The rules, as the kernel applies them
//!
//! [`CacheInfo::check`] follows the kernel's `cbm_validate`: a mask must
//! stay inside `cbm_mask` and must not be empty unless `min_cbm_bits` is
//! 0; without `sparse_masks` its ways must be adjacent; its first block of
//! adjacent ways must be at least `min_cbm_bits` long. [`plan`] adds what
//! spans groups: every group, the default one included, takes a CLOSID;
//! a CPU belongs to one group (and a CPU of a group jitterlab did not make
//! is not taken from it: it could not be given back); an **exclusive**
//! group (`mode` = `exclusive`) may share no way with any other group —
//! the default group and groups that exist already included — nor with the
//! hardware's `shareable_bits`; no write may give a group a way an
//! exclusive group holds. A new group starts (at `mkdir`) with every way
//! no exclusive group holds ([`initial_schemata`]) and 100 % bandwidth, so
//! the plan creates the exclusive groups first: a group created after them
//! starts without their ways, where one created before would block them.
//!
//! Masks are written by hand (`mask = "0xc0"`) or as way ranges
//! (`ways = "6-7"` → `0xc0`, [`parse_ways`]), in the kernel's list format.
//!
//! # The partition table
//!
//! [`partition_tables`] prints what the documents print ([Intel CODESYS]
//! Table 9): per cache and cache id, one column per way, highest first,
//! with the CPUs that may allocate into it (`C0`, `C[0-3]`, and `HW` when
//! the hardware shares the way with I/O) and the groups whose mask holds
//! it. A CPU allocates with the mask of the group its `cpus_list` puts it
//! in, or the default group's; tasks placed in a group by pid are not
//! shown (a task allocates with its group's mask on any CPU).
//!
//! The design rules and documents cited here are in `docs/design.md`.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The name the partition table and the messages give the root group.
pub const DEFAULT_GROUP: &str = "(default)";

/// Directory names in the resctrl root that are not groups, so never a
/// group's name.
pub const RESERVED_NAMES: [&str; 3] = ["info", "mon_groups", "mon_data"];

/// A resource resctrl allocates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Resource {
    /// The L3 cache (without CDP).
    #[serde(rename = "L3")]
    L3,
    /// The L3 cache's code part (CDP).
    #[serde(rename = "L3CODE")]
    L3Code,
    /// The L3 cache's data part (CDP).
    #[serde(rename = "L3DATA")]
    L3Data,
    /// The L2 cache (without CDP).
    #[serde(rename = "L2")]
    L2,
    /// The L2 cache's code part (CDP).
    #[serde(rename = "L2CODE")]
    L2Code,
    /// The L2 cache's data part (CDP).
    #[serde(rename = "L2DATA")]
    L2Data,
    /// Memory bandwidth, in percent.
    #[serde(rename = "MB")]
    Mb,
}

impl Resource {
    /// Every resource, in the order plans and tables list them.
    pub const ALL: [Resource; 7] = [
        Resource::L3,
        Resource::L3Code,
        Resource::L3Data,
        Resource::L2,
        Resource::L2Code,
        Resource::L2Data,
        Resource::Mb,
    ];

    /// The kernel's name: in schemata lines and as the `info/` directory.
    pub fn name(self) -> &'static str {
        match self {
            Resource::L3 => "L3",
            Resource::L3Code => "L3CODE",
            Resource::L3Data => "L3DATA",
            Resource::L2 => "L2",
            Resource::L2Code => "L2CODE",
            Resource::L2Data => "L2DATA",
            Resource::Mb => "MB",
        }
    }

    /// The resource with the kernel's name `name`.
    pub fn from_name(name: &str) -> Option<Resource> {
        Resource::ALL.into_iter().find(|r| r.name() == name)
    }

    /// The key in spec files: `l3`, `l3code`, …, `mb`.
    pub fn key(self) -> &'static str {
        match self {
            Resource::L3 => "l3",
            Resource::L3Code => "l3code",
            Resource::L3Data => "l3data",
            Resource::L2 => "l2",
            Resource::L2Code => "l2code",
            Resource::L2Data => "l2data",
            Resource::Mb => "mb",
        }
    }

    /// The cache level (3 or 2); `None` for memory bandwidth.
    pub fn level(self) -> Option<u8> {
        match self {
            Resource::L3 | Resource::L3Code | Resource::L3Data => Some(3),
            Resource::L2 | Resource::L2Code | Resource::L2Data => Some(2),
            Resource::Mb => None,
        }
    }

    /// True for the CDP halves (`L3CODE`, `L3DATA`, `L2CODE`, `L2DATA`).
    pub fn is_cdp(self) -> bool {
        matches!(
            self,
            Resource::L3Code | Resource::L3Data | Resource::L2Code | Resource::L2Data
        )
    }

    /// The other half of a CDP pair (`L3CODE` ↔ `L3DATA`); the kernel
    /// checks exclusive groups against both halves.
    pub fn cdp_peer(self) -> Option<Resource> {
        match self {
            Resource::L3Code => Some(Resource::L3Data),
            Resource::L3Data => Some(Resource::L3Code),
            Resource::L2Code => Some(Resource::L2Data),
            Resource::L2Data => Some(Resource::L2Code),
            _ => None,
        }
    }
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

mod caps;
mod mask;
mod plan;
mod request;
mod schemata;
mod table;

pub use caps::{BandwidthInfo, CacheInfo, Capabilities, ResourceInfo};
pub use mask::{describe_mask, parse_mask, parse_ways, ways_text};
pub use plan::{
    describe_default, initial_schemata, plan, ExistingGroup, Machine, Plan, PlannedGroup,
};
pub use request::{check_group_name, CacheDefault, CacheGroup, CacheMask};
pub use schemata::{parse_schemata, Layout, Schemata, SchemataLine};
pub use table::{partition_tables, TableGroup};

#[cfg(test)]
mod tests;
