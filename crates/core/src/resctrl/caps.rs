//! What the machine offers: each resource's `info/` directory read into
//! cache and bandwidth limits, and the capabilities they add up to.

use serde::{Deserialize, Serialize};

use super::mask::{contiguous, describe_mask, first_run, ways_count, ways_text};
use super::Resource;
use crate::units::CpuList;

/// A cache resource's allocation facts (`info/RESOURCE/`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheInfo {
    /// Every way the resource has (`cbm_mask`).
    pub cbm_mask: u64,
    /// The fewest adjacent ways a mask must have (`min_cbm_bits`).
    pub min_cbm_bits: u32,
    /// Ways the hardware shares with I/O or a GPU (`shareable_bits`).
    pub shareable_bits: u64,
    /// Whether a mask may have gaps (`sparse_masks` reads 1).
    pub sparse_masks: bool,
}

impl CacheInfo {
    /// How many ways the cache has.
    pub fn ways(&self) -> u32 {
        self.cbm_mask.count_ones()
    }

    /// Checks `mask` for `resource` as the kernel's `cbm_validate` does;
    /// the error names the rule and the `info/` file behind it.
    pub fn check(&self, resource: Resource, mask: u64) -> Result<(), String> {
        let r = resource.name();
        if mask & !self.cbm_mask != 0 {
            return Err(format!(
                "{} reach beyond the {} of {r} (ways {}, cbm_mask {:x})",
                describe_mask(mask),
                ways_count(self.ways()),
                ways_text(self.cbm_mask),
                self.cbm_mask
            ));
        }
        if mask == 0 && self.min_cbm_bits > 0 {
            return Err(format!(
                "mask 0x0 allocates no way; {r} needs at least {} (info/{r}/min_cbm_bits)",
                ways_count(self.min_cbm_bits)
            ));
        }
        if !self.sparse_masks && !contiguous(mask) {
            return Err(format!(
                "{} are not adjacent; {r} takes one block of adjacent ways here (info/{r}/sparse_masks is not 1)",
                describe_mask(mask)
            ));
        }
        if mask != 0 && first_run(mask) < self.min_cbm_bits {
            return Err(format!(
                "{} hold {} in a row; {r} needs at least {} (info/{r}/min_cbm_bits)",
                describe_mask(mask),
                ways_count(first_run(mask)),
                self.min_cbm_bits
            ));
        }
        Ok(())
    }
}

/// Memory bandwidth allocation facts (`info/MB/`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BandwidthInfo {
    /// The smallest percentage a group may get (`min_bandwidth`).
    pub min_bandwidth: u32,
    /// The step requests are rounded up to (`bandwidth_gran`).
    pub bandwidth_gran: u32,
}

impl BandwidthInfo {
    /// Checks a percentage and returns what the kernel will keep: the
    /// request rounded up to a multiple of the granularity.
    pub fn check(&self, percent: u32) -> Result<u32, String> {
        if percent > 100 {
            return Err(format!("{percent}% is more than 100%"));
        }
        if percent < self.min_bandwidth {
            return Err(format!(
                "{percent}% is below the minimum of {}% (info/MB/min_bandwidth)",
                self.min_bandwidth
            ));
        }
        let gran = self.bandwidth_gran.max(1);
        Ok(percent.div_ceil(gran) * gran)
    }
}

/// One resource the kernel offers for allocation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceInfo {
    /// Which.
    pub resource: Resource,
    /// Its classes of service (`num_closids`), when readable.
    pub num_closids: Option<u32>,
    /// For caches: the mask rules (when `cbm_mask` is readable).
    pub cache: Option<CacheInfo>,
    /// For memory bandwidth: its range.
    pub bandwidth: Option<BandwidthInfo>,
    /// Its domains (cache ids), from the default group's schemata.
    pub ids: Vec<u32>,
}

/// What the machine offers for cache allocation.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Capabilities {
    /// The `/proc/cpuinfo` flags of allocation that are set, of
    /// [`Capabilities::FLAGS`].
    pub flags: Vec<String>,
    /// Whether resctrl is mounted (its `info/` directory is there).
    pub mounted: bool,
    /// The resources under `info/` (empty when not mounted), in
    /// [`Resource::ALL`] order.
    pub resources: Vec<ResourceInfo>,
}

impl Capabilities {
    /// The flags this module looks for in `/proc/cpuinfo`, in the order
    /// [`Capabilities::flags`] lists them.
    pub const FLAGS: [&'static str; 6] = ["cat_l3", "cat_l2", "cdp_l3", "cdp_l2", "mba", "rdt_a"];

    /// The resource `r`, when the machine offers it.
    pub fn resource(&self, r: Resource) -> Option<&ResourceInfo> {
        self.resources.iter().find(|i| i.resource == r)
    }

    /// How many groups (the default one included) can exist: the smallest
    /// `num_closids` of all resources.
    pub fn closids(&self) -> Option<u32> {
        self.resources.iter().filter_map(|r| r.num_closids).min()
    }

    /// Whether resctrl is mounted with CDP (code/data resources exist).
    pub fn cdp_on(&self) -> bool {
        self.resources.iter().any(|r| r.resource.is_cdp())
    }

    /// The names of the offered resources: `L3, MB`.
    pub fn resource_names(&self) -> String {
        let names: Vec<&str> = self.resources.iter().map(|r| r.resource.name()).collect();
        if names.is_empty() {
            "none".into()
        } else {
            names.join(", ")
        }
    }

    /// One line for `jitterlab check`: levels with their ways and ids,
    /// CLOSIDs, CDP and MBA, e.g. `L3 8 ways (cbm_mask ff) on id 0; 4
    /// CLOSIDs; CDP off (cdp_l3: mount with -o cdp for it); no MBA`.
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        for r in &self.resources {
            if let Some(c) = &r.cache {
                let ids = if r.ids.is_empty() {
                    String::new()
                } else {
                    let list: CpuList = r.ids.iter().map(|&i| i as usize).collect();
                    let noun = if r.ids.len() == 1 { "id" } else { "ids" };
                    format!(" on {noun} {list}")
                };
                parts.push(format!(
                    "{} {} (cbm_mask {:x}){ids}",
                    r.resource,
                    ways_count(c.ways()),
                    c.cbm_mask
                ));
            }
        }
        match self.closids() {
            Some(n) => parts.push(format!("{n} CLOSIDs")),
            None => parts.push("CLOSIDs unknown".into()),
        }
        let has = |f: &str| self.flags.iter().any(|g| g == f);
        if self.cdp_on() {
            parts.push("CDP on".into());
        } else if has("cdp_l3") || has("cdp_l2") {
            let which: Vec<&str> = ["cdp_l3", "cdp_l2"]
                .into_iter()
                .filter(|f| has(f))
                .collect();
            parts.push(format!(
                "CDP off ({}: mount with -o cdp for it)",
                which.join(" ")
            ));
        } else {
            parts.push("no CDP".into());
        }
        match self.resource(Resource::Mb) {
            Some(ResourceInfo {
                bandwidth: Some(b), ..
            }) => parts.push(format!(
                "MBA from {}% in steps of {}%",
                b.min_bandwidth, b.bandwidth_gran
            )),
            Some(_) => parts.push("MBA".into()),
            None if has("mba") => parts.push("MBA in the CPU but not offered by resctrl".into()),
            None => parts.push("no MBA".into()),
        }
        parts.join("; ")
    }
}
