//! Cache allocation through the kernel's resctrl file system, the pure part:
//! the schemata grammar, cache-way masks, the kernel's validation rules, the
//! plan of what to write, and the partition table a user reads.
//!
//! The source documents partition the last-level cache per core (seed 000,
//! Tables 5, 7 and 9: "cache ways 7,6 are shared among workloads running on
//! CPU 0 …") and the L2 per core (seed 002: `echo "L2:0=3ff" >
//! /sys/fs/resctrl/schemata`, `mkdir p0`, `echo "L2:0=ffc00;" >
//! p0/schemata`). Everything here is what can be decided without touching
//! the machine, so that a bad request is refused with a message naming the
//! fix before anything is written (DESIGN rule 8); the binary
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
//!   as seed 002 writes it, an optional `0x`); [`SchemataLine::to_write`]
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
//! [`partition_tables`] prints what the documents print (seed 000,
//! Table 9): per cache and cache id, one column per way, highest first,
//! with the CPUs that may allocate into it (`C0`, `C[0-3]`, and `HW` when
//! the hardware shares the way with I/O) and the groups whose mask holds
//! it. A CPU allocates with the mask of the group its `cpus_list` puts it
//! in, or the default group's; tasks placed in a group by pid are not
//! shown (a task allocates with its group's mask on any CPU).

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::units::CpuList;

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

/// True for the schemata resources whose values are decimal bandwidths
/// rather than hex masks (`MB`, and AMD's `SMBA`).
fn is_bandwidth_name(name: &str) -> bool {
    name == "MB" || name == "SMBA"
}

// ---------------------------------------------------------------------------
// Schemata.

/// One schemata line: a resource and its value per domain (cache id).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchemataLine {
    /// The resource's name as the kernel spells it (`L3`, `MB`, `SMBA` …).
    pub resource: String,
    /// `(cache id, value)` in the order given: a mask for caches, a
    /// bandwidth for `MB`.
    pub values: Vec<(u32, u64)>,
}

impl SchemataLine {
    /// The line for `resource` with `value` on each of `ids`.
    pub fn new(resource: Resource, ids: &[u32], value: u64) -> SchemataLine {
        SchemataLine {
            resource: resource.name().to_string(),
            values: ids.iter().map(|&id| (id, value)).collect(),
        }
    }

    /// True when the values are bandwidths (decimal), not masks (hex).
    pub fn is_bandwidth(&self) -> bool {
        is_bandwidth_name(&self.resource)
    }

    /// The value on cache id `id`.
    pub fn get(&self, id: u32) -> Option<u64> {
        self.values.iter().find(|(i, _)| *i == id).map(|(_, v)| *v)
    }

    /// `VALUE` as the kernel writes it unpadded: hex for masks, decimal
    /// for bandwidths.
    fn value_text(&self, value: u64) -> String {
        if self.is_bandwidth() {
            value.to_string()
        } else {
            format!("{value:x}")
        }
    }

    /// The line as jitterlab writes it, one resource per write, with the
    /// trailing newline the kernel requires: `L3:0=c0;1=c0\n`.
    pub fn to_write(&self) -> String {
        let mut s = format!("{}:", self.resource);
        for (i, (id, v)) in self.values.iter().enumerate() {
            if i > 0 {
                s.push(';');
            }
            s.push_str(&format!("{id}={}", self.value_text(*v)));
        }
        s.push('\n');
        s
    }
}

impl fmt::Display for SchemataLine {
    /// The line without its newline: `L3:0=c0;1=c0`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.to_write().trim_end())
    }
}

/// A whole schemata file.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Schemata {
    /// The lines in file order.
    pub lines: Vec<SchemataLine>,
}

/// Parses a schemata file or a write to one: padded or compact, a trailing
/// `;` allowed, masks with or without `0x`. Empty lines are skipped.
pub fn parse_schemata(text: &str) -> Result<Schemata, String> {
    let mut lines = Vec::new();
    for raw in text.lines() {
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        let Some((name, rest)) = line.split_once(':') else {
            return Err(format!(
                "schemata line {line:?} has no \":\"; expected RESOURCE:ID=VALUE;…"
            ));
        };
        let name = name.trim();
        if name.is_empty() {
            return Err(format!("schemata line {line:?} names no resource"));
        }
        let mut values = Vec::new();
        for token in rest.split(';') {
            let token = token.trim();
            if token.is_empty() {
                continue;
            }
            let Some((id, value)) = token.split_once('=') else {
                return Err(format!("schemata line {line:?}: {token:?} is not ID=VALUE"));
            };
            let id: u32 = id.trim().parse().map_err(|_| {
                format!("schemata line {line:?}: {:?} is not a cache id", id.trim())
            })?;
            let value = value.trim();
            let parsed = if is_bandwidth_name(name) {
                value.parse::<u64>().ok()
            } else {
                let hex = value
                    .strip_prefix("0x")
                    .or_else(|| value.strip_prefix("0X"))
                    .unwrap_or(value);
                u64::from_str_radix(hex, 16)
                    .ok()
                    .filter(|_| !hex.is_empty())
            };
            let Some(value) = parsed else {
                return Err(format!(
                    "schemata line {line:?}: {value:?} is not a {}",
                    if is_bandwidth_name(name) {
                        "decimal bandwidth"
                    } else {
                        "hex mask"
                    }
                ));
            };
            values.push((id, value));
        }
        lines.push(SchemataLine {
            resource: name.to_string(),
            values,
        });
    }
    Ok(Schemata { lines })
}

/// The padding of a schemata file as the kernel printed it: the width of
/// the right-aligned resource names and of the values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Layout {
    /// Width of the name column (the `:` follows it).
    pub name_width: usize,
    /// Width of every value (masks zero-padded, bandwidths space-padded).
    pub data_width: usize,
}

impl Layout {
    /// The layout of `text` as read from a schemata file.
    pub fn of(text: &str) -> Layout {
        let mut layout = Layout::default();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let Some((name, rest)) = line.split_once(':') else {
                continue;
            };
            layout.name_width = layout.name_width.max(name.len());
            for token in rest.split(';') {
                if let Some((_, value)) = token.split_once('=') {
                    layout.data_width = layout.data_width.max(value.trim_end().len());
                }
            }
        }
        layout
    }
}

impl Schemata {
    /// The line of `resource` (kernel name).
    pub fn line(&self, resource: &str) -> Option<&SchemataLine> {
        self.lines.iter().find(|l| l.resource == resource)
    }

    /// The value of `resource` on cache id `id`.
    pub fn value(&self, resource: Resource, id: u32) -> Option<u64> {
        self.line(resource.name())?.get(id)
    }

    /// Applies a write as the kernel does: the named domains of the named
    /// resource take the new values, everything else stays. A resource or
    /// id the file does not have is an error (the kernel refuses it).
    pub fn merge(&mut self, write: &SchemataLine) -> Result<(), String> {
        let Some(line) = self.lines.iter_mut().find(|l| l.resource == write.resource) else {
            return Err(format!(
                "unknown or unsupported resource name '{}'",
                write.resource
            ));
        };
        for (id, v) in &write.values {
            match line.values.iter_mut().find(|(i, _)| i == id) {
                Some(slot) => slot.1 = *v,
                None => return Err(format!("Unknown domain ID {id}")),
            }
        }
        Ok(())
    }

    /// The file as the kernel prints it with `layout`: names right-aligned,
    /// masks zero-padded, bandwidths space-padded, one line each.
    pub fn format_padded(&self, layout: Layout) -> String {
        let mut out = String::new();
        for line in &self.lines {
            out.push_str(&format!("{:>w$}:", line.resource, w = layout.name_width));
            for (i, (id, v)) in line.values.iter().enumerate() {
                if i > 0 {
                    out.push(';');
                }
                if line.is_bandwidth() {
                    out.push_str(&format!("{id}={v:>w$}", w = layout.data_width));
                } else {
                    out.push_str(&format!("{id}={v:0w$x}", w = layout.data_width));
                }
            }
            out.push('\n');
        }
        out
    }
}

// ---------------------------------------------------------------------------
// Masks and ways.

/// Parses a hex capacity mask as a spec gives it: `0xc0` or `c0`.
pub fn parse_mask(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let hex = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    if hex.is_empty() || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(format!(
            "mask {t:?} is not a hex mask; write it like \"0xc0\" (ways 6-7), or give ways = \"6-7\""
        ));
    }
    u64::from_str_radix(hex, 16).map_err(|_| format!("mask {t:?} has more than 64 bits"))
}

/// Parses cache ways in the kernel's list format (`6-7`, `0,2-3`, `7`)
/// into a mask (way N is bit N).
pub fn parse_ways(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let bad = || {
        format!(
            "ways {t:?} is not a list of cache ways; write them like \"6-7\" or \"0,2\" (way 0 is the lowest bit of the mask)"
        )
    };
    let list = CpuList::parse(t).map_err(|_| bad())?;
    if list.is_empty() {
        return Err("ways is empty; name at least one cache way, e.g. \"6-7\"".into());
    }
    let mut mask = 0u64;
    for w in list.iter() {
        if w >= 64 {
            return Err(format!(
                "way {w} is beyond the 64 ways a capacity mask can hold"
            ));
        }
        mask |= 1 << w;
    }
    Ok(mask)
}

/// The ways of `mask` in the kernel's list format (`6-7`, `0,2`); `none`
/// for an empty mask.
pub fn ways_text(mask: u64) -> String {
    if mask == 0 {
        return "none".into();
    }
    let list: CpuList = (0..64).filter(|b| mask & (1 << b) != 0).collect();
    list.to_string()
}

/// `ways 6-7 (mask 0xc0)`: a mask as both the user and the kernel write it.
pub fn describe_mask(mask: u64) -> String {
    format!("ways {} (mask {mask:#x})", ways_text(mask))
}

/// `1 way`, `3 ways`.
fn ways_count(n: u32) -> String {
    if n == 1 {
        "1 way".into()
    } else {
        format!("{n} ways")
    }
}

/// True when the set bits of `mask` form one block.
fn contiguous(mask: u64) -> bool {
    if mask == 0 {
        return true;
    }
    let shifted = mask >> mask.trailing_zeros();
    shifted & (shifted + 1) == 0
}

/// The length of the lowest block of adjacent set bits.
fn first_run(mask: u64) -> u32 {
    if mask == 0 {
        return 0;
    }
    (mask >> mask.trailing_zeros()).trailing_ones()
}

// ---------------------------------------------------------------------------
// What the machine offers.

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

// ---------------------------------------------------------------------------
// Requests.

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

// ---------------------------------------------------------------------------
// The plan: the request checked against the machine.

/// A resctrl group that exists on the machine (not created by the plan).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExistingGroup {
    /// Its directory name.
    pub name: String,
    /// Its `cpus_list`.
    pub cpus: CpuList,
    /// Its schemata.
    pub schemata: Schemata,
    /// Whether its `mode` is `exclusive` (or pseudo-locked: no sharing).
    pub exclusive: bool,
}

/// The machine as the plan is checked against it.
#[derive(Debug, Clone, Copy)]
pub struct Machine<'a> {
    /// What resctrl offers.
    pub caps: &'a Capabilities,
    /// The online CPUs.
    pub online: &'a CpuList,
    /// The default group's schemata now.
    pub default_schemata: &'a Schemata,
    /// The groups that exist now.
    pub groups: &'a [ExistingGroup],
}

/// A group to create, with what to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedGroup {
    /// Its directory name.
    pub name: String,
    /// Its `cpus_list`.
    pub cpus: CpuList,
    /// Pids for its `tasks`.
    pub tasks: Vec<u32>,
    /// Its schemata writes, one resource each.
    pub lines: Vec<SchemataLine>,
    /// Whether `mode` becomes `exclusive`.
    pub exclusive: bool,
}

/// What to write, in order: the default group's lines, then each group
/// (created, its lines, CPUs and tasks written), then the exclusive modes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Plan {
    /// Schemata writes to the default group, one resource each.
    pub default: Vec<SchemataLine>,
    /// The groups to create.
    pub groups: Vec<PlannedGroup>,
}

impl PlannedGroup {
    /// The group as the setting's report shows it:
    /// `rt cpus=1 L3:0=c0 MB:0=50 mode=exclusive`.
    pub fn describe(&self) -> String {
        let mut s = format!("{} cpus={}", self.name, self.cpus);
        if !self.tasks.is_empty() {
            let tasks: Vec<String> = self.tasks.iter().map(|t| t.to_string()).collect();
            s.push_str(&format!(" tasks={}", tasks.join(",")));
        }
        for l in &self.lines {
            s.push_str(&format!(" {l}"));
        }
        if self.exclusive {
            s.push_str(" mode=exclusive");
        }
        s
    }
}

/// The default group's writes as the setting's report shows them:
/// `(default) L3:0=3f`.
pub fn describe_default(lines: &[SchemataLine]) -> String {
    let lines: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    format!("{DEFAULT_GROUP} {}", lines.join(" "))
}

impl Plan {
    /// The plan in one part per group, `; `-separated:
    /// `rt cpus=1 L3:0=c0 MB:0=50 mode=exclusive; (default) L3:0=3f`.
    pub fn describe(&self) -> String {
        let mut parts: Vec<String> = self.groups.iter().map(|g| g.describe()).collect();
        if !self.default.is_empty() {
            parts.push(describe_default(&self.default));
        }
        parts.join("; ")
    }
}

/// Who an error is about: `cache group rt` or `cache_default`.
fn who(group: Option<&str>) -> String {
    match group {
        Some(g) => format!("cache group {g}"),
        None => "cache_default".into(),
    }
}

/// Why `r` cannot be allocated here: CDP splits it (or does not), or the
/// machine does not have it.
fn missing_resource(at: &str, r: Resource, caps: &Capabilities) -> String {
    let (split, plain) = match r {
        Resource::L3 => (Some(Resource::L3Code), None),
        Resource::L2 => (Some(Resource::L2Code), None),
        Resource::L3Code | Resource::L3Data => (None, Some((Resource::L3, "cdp"))),
        Resource::L2Code | Resource::L2Data => (None, Some((Resource::L2, "cdpl2"))),
        Resource::Mb => (None, None),
    };
    if split.is_some_and(|c| caps.resource(c).is_some()) {
        let k = r.key();
        return format!(
            "{at}: resctrl is mounted with CDP here, which splits {r} into {r}CODE and {r}DATA; give {k}code and {k}data instead of {k}"
        );
    }
    if let Some((p, option)) = plain.filter(|(p, _)| caps.resource(*p).is_some()) {
        return format!(
            "{at}: resctrl is mounted without CDP here; give {} instead, or remount resctrl with -o {option}",
            p.key()
        );
    }
    format!(
        "{at}: this machine has no {r} allocation (resctrl offers: {}); remove {}",
        caps.resource_names(),
        r.key()
    )
}

/// The schemata writes for one group's masks and bandwidth, each checked
/// against what the machine offers.
fn lines_for(
    group: Option<&str>,
    masks: &[CacheMask],
    mb: Option<u32>,
    caps: &Capabilities,
) -> Result<Vec<SchemataLine>, String> {
    let mut lines = Vec::new();
    for m in masks {
        let r = m.resource;
        let at = format!("{}: {}", who(group), r.key());
        let Some(info) = caps.resource(r) else {
            return Err(missing_resource(&at, r, caps));
        };
        let Some(cache) = &info.cache else {
            return Err(format!(
                "{at}: cannot read /sys/fs/resctrl/info/{r}/cbm_mask, so {r} masks cannot be checked"
            ));
        };
        let ids = match &m.ids {
            Some(ids) => {
                for id in ids {
                    if !info.ids.contains(id) {
                        let list: CpuList = info.ids.iter().map(|&i| i as usize).collect();
                        return Err(format!(
                            "{at}: cache id {id} does not exist ({r} ids: {list})"
                        ));
                    }
                }
                ids.clone()
            }
            None => info.ids.clone(),
        };
        cache.check(r, m.mask).map_err(|e| format!("{at}: {e}"))?;
        lines.push(SchemataLine::new(r, &ids, m.mask));
    }
    if let Some(percent) = mb {
        let at = format!("{}: mb", who(group));
        let Some(info) = caps.resource(Resource::Mb) else {
            return Err(format!(
                "{at}: this machine has no memory bandwidth allocation (no /sys/fs/resctrl/info/MB); remove mb"
            ));
        };
        let kept = match &info.bandwidth {
            Some(b) => b.check(percent).map_err(|e| format!("{at}: {e}"))?,
            None if percent > 100 => return Err(format!("{at}: {percent}% is more than 100%")),
            None => percent,
        };
        lines.push(SchemataLine::new(Resource::Mb, &info.ids, u64::from(kept)));
    }
    Ok(lines)
}

/// `CPU 3` or `CPUs 2-3`.
fn cpus_words(list: &CpuList) -> String {
    if list.len() == 1 {
        format!("CPU {list}")
    } else {
        format!("CPUs {list}")
    }
}

/// Checks the request against the machine and returns what to write; the
/// error is one line naming the group, the key and the fix.
pub fn plan(
    groups: &[CacheGroup],
    default: Option<&CacheDefault>,
    m: &Machine,
) -> Result<Plan, String> {
    let mut planned: Vec<PlannedGroup> = Vec::new();
    let mut taken: BTreeMap<usize, String> = BTreeMap::new();
    for g in m.groups {
        for c in g.cpus.iter() {
            taken.insert(c, format!("resctrl group {}", g.name));
        }
    }
    for g in groups {
        let at = who(Some(&g.name));
        check_group_name(&g.name).map_err(|e| format!("{at}: {e}"))?;
        if m.groups.iter().any(|e| e.name == g.name) {
            return Err(format!(
                "{at}: a resctrl group named {0} exists already; choose another name, or remove it (rmdir /sys/fs/resctrl/{0}) if nothing uses it",
                g.name
            ));
        }
        if planned.iter().any(|p| p.name == g.name) {
            return Err(format!(
                "{at}: the name is given twice; give each cache group its own"
            ));
        }
        let cpus: CpuList = g.cpus.iter().copied().collect();
        if cpus.is_empty() {
            return Err(format!(
                "{at}: cpus is empty; name the CPUs that allocate with this group's masks (online CPUs: {})",
                m.online
            ));
        }
        let offline: CpuList = cpus.iter().filter(|c| !m.online.contains(*c)).collect();
        if !offline.is_empty() {
            let verb = if offline.len() == 1 { "is" } else { "are" };
            return Err(format!(
                "{at}: cpus: {} {verb} not online (online CPUs: {})",
                cpus_words(&offline),
                m.online
            ));
        }
        for c in cpus.iter() {
            if let Some(owner) = taken.get(&c) {
                return Err(if owner.starts_with("resctrl group") {
                    format!(
                        "{at}: cpus: CPU {c} belongs to {owner} already; jitterlab would take it away and could not give it back — leave CPU {c} out or remove that group"
                    )
                } else {
                    format!("{at}: cpus: CPU {c} is in {owner} too; a CPU belongs to one group")
                });
            }
            taken.insert(c, format!("cache group {}", g.name));
        }
        if g.masks.is_empty() && g.mb.is_none() {
            return Err(format!(
                "{at}: allocates nothing; give l3, l2, l3code, l3data, l2code, l2data or mb"
            ));
        }
        let lines = lines_for(Some(&g.name), &g.masks, g.mb, m.caps)?;
        planned.push(PlannedGroup {
            name: g.name.clone(),
            cpus,
            tasks: g.tasks.clone(),
            lines,
            exclusive: g.exclusive,
        });
    }
    let default_lines = match default {
        Some(d) => lines_for(None, &d.masks, d.mb, m.caps)?,
        None => Vec::new(),
    };

    // Every group takes a CLOSID, the default one included.
    let need = 1 + m.groups.len() + planned.len();
    if !planned.is_empty() {
        let Some(have) = m.caps.closids() else {
            return Err(
                "cannot read num_closids under /sys/fs/resctrl/info, so the number of groups cannot be checked"
                    .into(),
            );
        };
        if need > have as usize {
            let existing = if m.groups.is_empty() {
                String::new()
            } else {
                format!("{} existing, ", m.groups.len())
            };
            let room = (have as usize).saturating_sub(1 + m.groups.len());
            return Err(format!(
                "{need} resctrl groups (the default group, {existing}{} new) need {need} CLOSIDs, but this machine has {have} (info/*/num_closids); use at most {room} cache {}",
                planned.len(),
                if room == 1 { "group" } else { "groups" }
            ));
        }
    }

    let mut default_final = m.default_schemata.clone();
    for l in &default_lines {
        default_final
            .merge(l)
            .map_err(|e| format!("cache_default: {e}"))?;
    }
    let mut exclusive: Vec<(ExistingGroup, &str)> = m
        .groups
        .iter()
        .filter(|g| g.exclusive)
        .map(|g| (g.clone(), "resctrl group"))
        .collect();
    for l in &default_lines {
        check_write(None, l, &exclusive)?;
    }
    // Exclusive groups first: each is made exclusive before the next group
    // exists, so later groups start without its ways (as the kernel gives
    // them) instead of blocking it.
    planned.sort_by_key(|g| !g.exclusive);
    let mut shareable: Vec<(ExistingGroup, &str)> = vec![(
        ExistingGroup {
            name: DEFAULT_GROUP.into(),
            cpus: CpuList::default(),
            schemata: default_final,
            exclusive: false,
        },
        "",
    )];
    shareable.extend(
        m.groups
            .iter()
            .filter(|g| !g.exclusive)
            .map(|g| (g.clone(), "resctrl group")),
    );
    for p in &planned {
        for l in &p.lines {
            check_write(Some(&p.name), l, &exclusive)?;
        }
        let now: Vec<ExistingGroup> = exclusive.iter().map(|(g, _)| g.clone()).collect();
        let mut s = initial_schemata(m.caps, m.default_schemata, &now);
        for l in &p.lines {
            s.merge(l)
                .map_err(|e| format!("cache group {}: {e}", p.name))?;
        }
        let group = ExistingGroup {
            name: p.name.clone(),
            cpus: p.cpus.clone(),
            schemata: s,
            exclusive: p.exclusive,
        };
        if p.exclusive {
            let others: Vec<&(ExistingGroup, &str)> =
                shareable.iter().chain(exclusive.iter()).collect();
            check_exclusive(&group, &others, m.caps)?;
            exclusive.push((group, "cache group"));
        } else {
            shareable.push((group, "cache group"));
        }
    }
    Ok(Plan {
        default: default_lines,
        groups: planned,
    })
}

/// A new group's schemata at `mkdir`, in the default group's shape, as the
/// kernel's `rdtgroup_init_alloc` makes it: for each cache, every way that
/// no exclusive group of `groups` holds (the lowest block of them, unless
/// the cache takes sparse masks); 100 % bandwidth.
pub fn initial_schemata(
    caps: &Capabilities,
    default: &Schemata,
    groups: &[ExistingGroup],
) -> Schemata {
    let mut s = default.clone();
    for line in &mut s.lines {
        let Some(r) = Resource::from_name(&line.resource) else {
            continue;
        };
        for (id, v) in &mut line.values {
            *v = match caps.resource(r).and_then(|i| i.cache) {
                Some(c) => {
                    let held: u64 = groups
                        .iter()
                        .filter(|g| g.exclusive)
                        .flat_map(|g| {
                            std::iter::once(r)
                                .chain(r.cdp_peer())
                                .filter_map(|pr| g.schemata.value(pr, *id))
                        })
                        .fold(0, |a, b| a | b);
                    let free = c.cbm_mask & !held;
                    if c.sparse_masks || free == 0 {
                        free
                    } else {
                        // The lowest block of adjacent ways.
                        let low = free.trailing_zeros();
                        let run = (free >> low).trailing_ones();
                        (u64::MAX >> (64 - run)) << low
                    }
                }
                None if r == Resource::Mb => 100,
                None => *v,
            };
        }
    }
    s
}

/// `what NAME`: `resctrl group batch`, `cache group rt`, `the default group`.
fn whose(g: &ExistingGroup, what: &str) -> String {
    if g.name == DEFAULT_GROUP {
        "the default group".into()
    } else {
        format!("{what} {}", g.name)
    }
}

/// Refuses a write that would give a group ways an exclusive group holds
/// (the kernel: "Overlaps with exclusive group").
fn check_write(
    group: Option<&str>,
    line: &SchemataLine,
    exclusive: &[(ExistingGroup, &str)],
) -> Result<(), String> {
    let Some(r) = Resource::from_name(&line.resource).filter(|r| *r != Resource::Mb) else {
        return Ok(());
    };
    for (e, what) in exclusive {
        for &(id, mask) in &line.values {
            for er in std::iter::once(r).chain(r.cdp_peer()) {
                if let Some(theirs) = e.schemata.value(er, id).filter(|t| t & mask != 0) {
                    return Err(format!(
                        "{}: {r} {} on id {id} overlap exclusive {what} {} ({er} {}); choose other ways",
                        who(group),
                        describe_mask(mask),
                        e.name,
                        describe_mask(theirs)
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Refuses to make `g` exclusive when one of its cache ways is shared with
/// the hardware or with any other group (the kernel: "Schemata overlaps").
fn check_exclusive(
    g: &ExistingGroup,
    others: &[&(ExistingGroup, &str)],
    caps: &Capabilities,
) -> Result<(), String> {
    for line in &g.schemata.lines {
        let Some(r) = Resource::from_name(&line.resource).filter(|r| *r != Resource::Mb) else {
            continue;
        };
        let shareable = caps
            .resource(r)
            .and_then(|i| i.cache)
            .map_or(0, |c| c.shareable_bits);
        for &(id, mask) in &line.values {
            if mask & shareable != 0 {
                return Err(format!(
                    "cache group {} is exclusive, but its {r} {} on id {id} include ways {}, which the hardware shares with I/O (info/{r}/shareable_bits); exclusive groups must leave them out",
                    g.name,
                    describe_mask(mask),
                    ways_text(mask & shareable)
                ));
            }
            for (other, what) in others.iter().copied() {
                for or in std::iter::once(r).chain(r.cdp_peer()) {
                    let Some(theirs) = other.schemata.value(or, id).filter(|t| t & mask != 0)
                    else {
                        continue;
                    };
                    let fix = if other.name == DEFAULT_GROUP {
                        "shrink the default group in [configuration.cache_default]"
                    } else if *what == "cache group" {
                        "give the two groups ways that do not overlap"
                    } else {
                        "choose ways that group does not use"
                    };
                    let peer = if or == r {
                        String::new()
                    } else {
                        format!(" ({or})")
                    };
                    return Err(format!(
                        "cache group {} is exclusive, but its {r} {} on id {id} overlap ways {} of {}{peer}; {fix}",
                        g.name,
                        describe_mask(mask),
                        ways_text(theirs & mask),
                        whose(other, what)
                    ));
                }
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// The partition table.

/// A group as the partition table shows it.
#[derive(Debug, Clone, Copy)]
pub struct TableGroup<'a> {
    /// Its name.
    pub name: &'a str,
    /// Its `cpus_list`.
    pub cpus: &'a CpuList,
    /// Its schemata as read back.
    pub schemata: &'a Schemata,
}

/// `C0`, `C[0-3]`; `-` for none.
fn cpu_label(cpus: &CpuList) -> String {
    match cpus.len() {
        0 => "-".into(),
        1 => format!("C{cpus}"),
        _ => format!("C[{cpus}]"),
    }
}

/// The partition tables, one per cache resource and cache id, as lines:
///
/// ```text
/// L3 id 0: 8 ways; HW: the hardware shares ways 0-1 with I/O
///   way     7    6    5    4    3    2    1          0
///   CPUs    C0   C0   C1   C1   C2   C2   C3,HW      C3,HW
///   groups  rt0  rt0  rt1  rt1  rt2  rt2  (default)  (default)
/// ```
///
/// then one line per bandwidth id (`MB id 0: (default) 100%, rt 50%`).
/// `default` is the default group's schemata, `groups` every other group;
/// `domains` maps (cache level, id) to the CPUs that share that cache
/// (from `/sys/devices/system/cpu/cpuN/cache/`); a domain not in it is
/// taken to hold every online CPU.
pub fn partition_tables(
    caps: &Capabilities,
    default: &Schemata,
    groups: &[TableGroup],
    online: &CpuList,
    domains: &BTreeMap<(u8, u32), CpuList>,
) -> Vec<String> {
    let owned: CpuList = groups.iter().flat_map(|g| g.cpus.iter()).collect();
    let default_cpus: CpuList = online.iter().filter(|c| !owned.contains(*c)).collect();
    let mut all: Vec<TableGroup> = vec![TableGroup {
        name: DEFAULT_GROUP,
        cpus: &default_cpus,
        schemata: default,
    }];
    all.extend(groups.iter().copied());
    let mut out = Vec::new();
    for info in &caps.resources {
        let r = info.resource;
        if let (Some(c), Some(level)) = (&info.cache, r.level()) {
            for &id in &info.ids {
                let domain: CpuList = match domains.get(&(level, id)) {
                    Some(d) => d.iter().filter(|c| online.contains(*c)).collect(),
                    None => online.clone(),
                };
                out.extend(way_table(r, id, c, &all, &domain));
            }
        } else if r == Resource::Mb {
            for &id in &info.ids {
                let shares: Vec<String> = all
                    .iter()
                    .filter_map(|g| Some(format!("{} {}%", g.name, g.schemata.value(r, id)?)))
                    .collect();
                out.push(format!("MB id {id}: {}", shares.join(", ")));
            }
        }
    }
    out
}

/// One cache id's table (see [`partition_tables`]).
fn way_table(
    r: Resource,
    id: u32,
    c: &CacheInfo,
    groups: &[TableGroup],
    domain: &CpuList,
) -> Vec<String> {
    let ways: Vec<u32> = (0..64)
        .rev()
        .filter(|w| c.cbm_mask & (1 << w) != 0)
        .collect();
    let mut head = vec!["way".to_string()];
    let mut cpus_row = vec!["CPUs".to_string()];
    let mut groups_row = vec!["groups".to_string()];
    for &w in &ways {
        let bit = 1u64 << w;
        let members: Vec<&TableGroup> = groups
            .iter()
            .filter(|g| g.schemata.value(r, id).is_some_and(|m| m & bit != 0))
            .collect();
        let cpus: CpuList = members
            .iter()
            .flat_map(|g| g.cpus.iter())
            .filter(|c| domain.contains(*c))
            .collect();
        let mut label = cpu_label(&cpus);
        if c.shareable_bits & bit != 0 {
            label = if cpus.is_empty() {
                "HW".into()
            } else {
                format!("{label},HW")
            };
        }
        let names: Vec<&str> = members.iter().map(|g| g.name).collect();
        head.push(w.to_string());
        cpus_row.push(label);
        groups_row.push(if names.is_empty() {
            "-".into()
        } else {
            names.join(",")
        });
    }
    let widths: Vec<usize> = (0..head.len())
        .map(|i| {
            [&head, &cpus_row, &groups_row]
                .iter()
                .map(|row| row[i].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let row = |cells: &[String]| {
        let mut s = String::from(" ");
        for (cell, w) in cells.iter().zip(&widths) {
            s.push_str(&format!(" {cell:<w$} "));
        }
        s.trim_end().to_string()
    };
    let mut title = format!("{r} id {id}: {}", ways_count(c.ways()));
    if c.shareable_bits != 0 {
        title.push_str(&format!(
            "; HW: the hardware shares ways {} with I/O",
            ways_text(c.shareable_bits)
        ));
    }
    vec![title, row(&head), row(&cpus_row), row(&groups_row)]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpus(t: &str) -> CpuList {
        CpuList::parse(t).unwrap()
    }

    fn sch(t: &str) -> Schemata {
        parse_schemata(t).unwrap()
    }

    #[test]
    fn schemata_parse_padded_compact_and_cdp() {
        assert_eq!(
            sch("    L3:0=7ff;1=7ff\n    MB:0= 100;1=  50\n"),
            Schemata {
                lines: vec![
                    SchemataLine {
                        resource: "L3".into(),
                        values: vec![(0, 0x7ff), (1, 0x7ff)]
                    },
                    SchemataLine {
                        resource: "MB".into(),
                        values: vec![(0, 100), (1, 50)]
                    },
                ]
            }
        );
        // Seed 002's write, with its trailing ';'.
        assert_eq!(
            sch("L2:0=ffc00;\n").lines,
            vec![SchemataLine {
                resource: "L2".into(),
                values: vec![(0, 0xffc00)]
            }]
        );
        assert_eq!(
            sch("L3CODE:0=fff;1=0x00f\nL3DATA:0=ff0;1=fff\n").value(Resource::L3Code, 1),
            Some(0xf)
        );
        assert_eq!(sch("").lines, vec![]);
        assert_eq!(
            parse_schemata("L3 0=ff\n").unwrap_err(),
            "schemata line \"L3 0=ff\" has no \":\"; expected RESOURCE:ID=VALUE;…"
        );
        assert_eq!(
            parse_schemata("L3:0=fg\n").unwrap_err(),
            "schemata line \"L3:0=fg\": \"fg\" is not a hex mask"
        );
        assert_eq!(
            parse_schemata("MB:0=ff\n").unwrap_err(),
            "schemata line \"MB:0=ff\": \"ff\" is not a decimal bandwidth"
        );
        assert_eq!(
            parse_schemata("L3:x=ff\n").unwrap_err(),
            "schemata line \"L3:x=ff\": \"x\" is not a cache id"
        );
        assert_eq!(
            parse_schemata("L3:0\n").unwrap_err(),
            "schemata line \"L3:0\": \"0\" is not ID=VALUE"
        );
        assert_eq!(
            parse_schemata(":0=1\n").unwrap_err(),
            "schemata line \":0=1\" names no resource"
        );
    }

    #[test]
    fn schemata_lines_are_written_compact_with_the_newline() {
        assert_eq!(
            SchemataLine::new(Resource::L3, &[0, 1], 0xc0).to_write(),
            "L3:0=c0;1=c0\n"
        );
        assert_eq!(
            SchemataLine::new(Resource::Mb, &[0], 50).to_write(),
            "MB:0=50\n"
        );
        assert_eq!(
            SchemataLine::new(Resource::L2Data, &[3], 0xffc00).to_string(),
            "L2DATA:3=ffc00"
        );
    }

    #[test]
    fn padded_format_round_trips_with_its_layout() {
        for text in [
            "    L3:0=ff\n",
            "L3CODE:0=fff;1=fff\nL3DATA:0=fff;1=fff\n    MB:0=100;1=100\n",
            "    L3:0=7fff;1=7fff\n    MB:0= 100;1= 100\n",
            "    L2:0=fffff;1=fffff;2=fffff;3=fffff\n",
        ] {
            let layout = Layout::of(text);
            assert_eq!(sch(text).format_padded(layout), text);
        }
        assert_eq!(
            Layout::of("    L3:0=7fff;1=7fff\n    MB:0= 100;1= 100\n"),
            Layout {
                name_width: 6,
                data_width: 4
            }
        );
    }

    #[test]
    fn merge_changes_only_the_named_domains() {
        let mut s =
            sch("L3DATA:0=fffff;1=fffff;2=fffff;3=fffff\nL3CODE:0=fffff;1=fffff;2=fffff;3=fffff\n");
        s.merge(&sch("L3DATA:2=3c0;\n").lines[0]).unwrap();
        assert_eq!(
            s.format_padded(Layout {
                name_width: 6,
                data_width: 5
            }),
            "L3DATA:0=fffff;1=fffff;2=003c0;3=fffff\nL3CODE:0=fffff;1=fffff;2=fffff;3=fffff\n"
        );
        assert_eq!(
            s.merge(&sch("L2:0=3\n").lines[0]).unwrap_err(),
            "unknown or unsupported resource name 'L2'"
        );
        assert_eq!(
            s.merge(&sch("L3DATA:7=3\n").lines[0]).unwrap_err(),
            "Unknown domain ID 7"
        );
    }

    #[test]
    fn masks_and_ways() {
        assert_eq!(parse_ways("6-7"), Ok(0xc0));
        assert_eq!(parse_ways("0-5"), Ok(0x3f));
        assert_eq!(parse_ways("0,2"), Ok(0x5));
        assert_eq!(parse_ways("10-19"), Ok(0xffc00));
        assert_eq!(parse_mask("0xc0"), Ok(0xc0));
        assert_eq!(parse_mask("FFC00"), Ok(0xffc00));
        assert_eq!(
            parse_ways("6-").unwrap_err(),
            "ways \"6-\" is not a list of cache ways; write them like \"6-7\" or \"0,2\" (way 0 is the lowest bit of the mask)"
        );
        assert_eq!(
            parse_ways("").unwrap_err(),
            "ways is empty; name at least one cache way, e.g. \"6-7\""
        );
        assert_eq!(
            parse_ways("60-64").unwrap_err(),
            "way 64 is beyond the 64 ways a capacity mask can hold"
        );
        assert_eq!(
            parse_mask("0xg").unwrap_err(),
            "mask \"0xg\" is not a hex mask; write it like \"0xc0\" (ways 6-7), or give ways = \"6-7\""
        );
        assert_eq!(
            parse_mask("0x1ffffffffffffffff").unwrap_err(),
            "mask \"0x1ffffffffffffffff\" has more than 64 bits"
        );
        assert_eq!(ways_text(0xc0), "6-7");
        assert_eq!(ways_text(0x5), "0,2");
        assert_eq!(ways_text(0), "none");
        assert_eq!(describe_mask(0xffc00), "ways 10-19 (mask 0xffc00)");
    }

    const L3_8: CacheInfo = CacheInfo {
        cbm_mask: 0xff,
        min_cbm_bits: 1,
        shareable_bits: 0,
        sparse_masks: false,
    };

    #[test]
    fn masks_are_checked_as_the_kernel_does() {
        assert_eq!(L3_8.check(Resource::L3, 0xc0), Ok(()));
        assert_eq!(L3_8.check(Resource::L3, 0x80), Ok(()));
        assert_eq!(
            L3_8.check(Resource::L3, 0x1c0).unwrap_err(),
            "ways 6-8 (mask 0x1c0) reach beyond the 8 ways of L3 (ways 0-7, cbm_mask ff)"
        );
        assert_eq!(
            L3_8.check(Resource::L3, 0).unwrap_err(),
            "mask 0x0 allocates no way; L3 needs at least 1 way (info/L3/min_cbm_bits)"
        );
        assert_eq!(
            L3_8.check(Resource::L3, 0x5).unwrap_err(),
            "ways 0,2 (mask 0x5) are not adjacent; L3 takes one block of adjacent ways here (info/L3/sparse_masks is not 1)"
        );
        let two = CacheInfo {
            min_cbm_bits: 2,
            ..L3_8
        };
        assert_eq!(
            two.check(Resource::L2, 0x80).unwrap_err(),
            "ways 7 (mask 0x80) hold 1 way in a row; L2 needs at least 2 (info/L2/min_cbm_bits)"
        );
        let sparse = CacheInfo {
            sparse_masks: true,
            min_cbm_bits: 2,
            ..L3_8
        };
        assert_eq!(sparse.check(Resource::L3, 0x33), Ok(()));
        assert_eq!(
            sparse.check(Resource::L3, 0x31).unwrap_err(),
            "ways 0,4-5 (mask 0x31) hold 1 way in a row; L3 needs at least 2 (info/L3/min_cbm_bits)"
        );
        // AMD: an empty mask is allowed.
        let amd = CacheInfo {
            min_cbm_bits: 0,
            ..L3_8
        };
        assert_eq!(amd.check(Resource::L3, 0), Ok(()));
    }

    #[test]
    fn bandwidth_is_rounded_up_to_the_granularity() {
        let b = BandwidthInfo {
            min_bandwidth: 10,
            bandwidth_gran: 10,
        };
        assert_eq!(b.check(50), Ok(50));
        assert_eq!(b.check(45), Ok(50));
        assert_eq!(b.check(100), Ok(100));
        assert_eq!(
            b.check(5).unwrap_err(),
            "5% is below the minimum of 10% (info/MB/min_bandwidth)"
        );
        assert_eq!(b.check(101).unwrap_err(), "101% is more than 100%");
    }

    #[test]
    fn group_names() {
        assert_eq!(check_group_name("rt_0-a"), Ok(()));
        assert_eq!(
            check_group_name("../x").unwrap_err(),
            "group \"../x\" may use only ASCII letters, digits, _ and - (it names a directory under /sys/fs/resctrl)"
        );
        assert_eq!(
            check_group_name("").unwrap_err(),
            "group \"\" may use only ASCII letters, digits, _ and - (it names a directory under /sys/fs/resctrl)"
        );
        assert_eq!(
            check_group_name("info").unwrap_err(),
            "group \"info\" is a directory of resctrl itself; choose another name"
        );
    }

    /// Seed 000's machine: one L3 of 8 ways, 4 CPUs, 4 CLOSIDs, the
    /// hardware sharing ways 0-1.
    fn seed000() -> Capabilities {
        Capabilities {
            flags: vec!["rdt_a".into(), "cat_l3".into(), "cdp_l3".into()],
            mounted: true,
            resources: vec![ResourceInfo {
                resource: Resource::L3,
                num_closids: Some(4),
                cache: Some(CacheInfo {
                    shareable_bits: 0x3,
                    ..L3_8
                }),
                bandwidth: None,
                ids: vec![0],
            }],
        }
    }

    fn group(name: &str, cpu_list: &str, ways: &str) -> CacheGroup {
        CacheGroup {
            name: name.into(),
            cpus: cpus(cpu_list).iter().collect(),
            tasks: vec![],
            masks: vec![CacheMask {
                resource: Resource::L3,
                mask: parse_ways(ways).unwrap(),
                ids: None,
            }],
            mb: None,
            exclusive: false,
        }
    }

    fn l3_default(ways: &str) -> CacheDefault {
        CacheDefault {
            masks: vec![CacheMask {
                resource: Resource::L3,
                mask: parse_ways(ways).unwrap(),
                ids: None,
            }],
            mb: None,
        }
    }

    /// Seed 000, Configuration 3 (Table 9): ways 7-6 for CPU 0, 5-4 for
    /// CPU 1, 3-2 for CPU 2, 1-0 for CPU 3 (the default group's).
    fn configuration3() -> (Vec<CacheGroup>, CacheDefault) {
        (
            vec![
                group("c0", "0", "6-7"),
                group("c1", "1", "4-5"),
                group("c2", "2", "2-3"),
            ],
            l3_default("0-1"),
        )
    }

    #[test]
    fn seed000_configuration3_plans_and_prints_table9() {
        let caps = seed000();
        let online = cpus("0-3");
        let default = sch("    L3:0=ff\n");
        let m = Machine {
            caps: &caps,
            online: &online,
            default_schemata: &default,
            groups: &[],
        };
        let (groups, d) = configuration3();
        let p = plan(&groups, Some(&d), &m).unwrap();
        assert_eq!(
            p.describe(),
            "c0 cpus=0 L3:0=c0; c1 cpus=1 L3:0=30; c2 cpus=2 L3:0=c; (default) L3:0=3"
        );
        assert_eq!(p.default[0].to_write(), "L3:0=3\n");

        let after: Vec<(String, CpuList, Schemata)> = p
            .groups
            .iter()
            .map(|g| {
                let mut s = sch("    L3:0=ff\n");
                for l in &g.lines {
                    s.merge(l).unwrap();
                }
                (g.name.clone(), g.cpus.clone(), s)
            })
            .collect();
        let tg: Vec<TableGroup> = after
            .iter()
            .map(|(n, c, s)| TableGroup {
                name: n,
                cpus: c,
                schemata: s,
            })
            .collect();
        let table = partition_tables(&caps, &sch("    L3:0=03\n"), &tg, &online, &BTreeMap::new());
        assert_eq!(
            table,
            [
                "L3 id 0: 8 ways; HW: the hardware shares ways 0-1 with I/O",
                "  way     7   6   5   4   3   2   1          0",
                "  CPUs    C0  C0  C1  C1  C2  C2  C3,HW      C3,HW",
                "  groups  c0  c0  c1  c1  c2  c2  (default)  (default)",
            ]
        );
    }

    #[test]
    fn seed000_table7_shared_default() {
        let caps = seed000();
        let table = partition_tables(
            &caps,
            &sch("    L3:0=ff\n"),
            &[],
            &cpus("0-3"),
            &BTreeMap::new(),
        );
        assert_eq!(
            table,
            [
                "L3 id 0: 8 ways; HW: the hardware shares ways 0-1 with I/O",
                "  way     7          6          5          4          3          2          1          0",
                "  CPUs    C[0-3]     C[0-3]     C[0-3]     C[0-3]     C[0-3]     C[0-3]     C[0-3],HW  C[0-3],HW",
                "  groups  (default)  (default)  (default)  (default)  (default)  (default)  (default)  (default)",
            ]
        );
    }

    #[test]
    fn seed002_l2_tables_follow_the_cache_domains() {
        let caps = Capabilities {
            flags: vec!["cat_l2".into()],
            mounted: true,
            resources: vec![ResourceInfo {
                resource: Resource::L2,
                num_closids: Some(8),
                cache: Some(CacheInfo {
                    cbm_mask: 0xfffff,
                    min_cbm_bits: 1,
                    shareable_bits: 0,
                    sparse_masks: false,
                }),
                bandwidth: None,
                ids: vec![0, 1],
            }],
        };
        let domains: BTreeMap<(u8, u32), CpuList> = [((2, 0), cpus("0")), ((2, 1), cpus("1"))]
            .into_iter()
            .collect();
        let p0 = sch("L2:0=ffc00;1=fffff\n");
        let p0_cpus = cpus("0-1");
        let table = partition_tables(
            &caps,
            &sch("    L2:0=003ff;1=fffff\n"),
            &[TableGroup {
                name: "p0",
                cpus: &p0_cpus,
                schemata: &p0,
            }],
            &cpus("0-3"),
            &domains,
        );
        assert_eq!(table.len(), 8);
        assert_eq!(table[0], "L2 id 0: 20 ways");
        assert_eq!(
            table[2],
            "  CPUs    C0  C0  C0  C0  C0  C0  C0  C0  C0  C0  -          -          -          -          -          -          -          -          -          -"
        );
        assert_eq!(
            table[3],
            "  groups  p0  p0  p0  p0  p0  p0  p0  p0  p0  p0  (default)  (default)  (default)  (default)  (default)  (default)  (default)  (default)  (default)  (default)"
        );
        assert_eq!(table[4], "L2 id 1: 20 ways");
        let col = format!("  {:<12}", "C1").repeat(20);
        assert_eq!(table[6], format!("  CPUs  {}", col.trim_end()));
        let col = format!("  {:<12}", "(default),p0").repeat(20);
        assert_eq!(table[7], format!("  groups{}", col.trim_end()));
    }

    #[test]
    fn bandwidth_lines_follow_the_tables() {
        let caps = Capabilities {
            flags: vec![],
            mounted: true,
            resources: vec![ResourceInfo {
                resource: Resource::Mb,
                num_closids: Some(8),
                cache: None,
                bandwidth: Some(BandwidthInfo {
                    min_bandwidth: 10,
                    bandwidth_gran: 10,
                }),
                ids: vec![0, 1],
            }],
        };
        let rt = sch("MB:0=50;1=100\n");
        let rt_cpus = cpus("1");
        assert_eq!(
            partition_tables(
                &caps,
                &sch("    MB:0=100;1=100\n"),
                &[TableGroup {
                    name: "rt",
                    cpus: &rt_cpus,
                    schemata: &rt
                }],
                &cpus("0-3"),
                &BTreeMap::new()
            ),
            [
                "MB id 0: (default) 100%, rt 50%",
                "MB id 1: (default) 100%, rt 100%"
            ]
        );
    }

    #[test]
    fn plan_refuses_what_the_kernel_would() {
        let caps = seed000();
        let online = cpus("0-3");
        let default = sch("    L3:0=ff\n");
        let m = Machine {
            caps: &caps,
            online: &online,
            default_schemata: &default,
            groups: &[],
        };
        let err =
            |groups: &[CacheGroup], d: Option<&CacheDefault>| plan(groups, d, &m).unwrap_err();

        // More groups than CLOSIDs.
        let (mut groups, d) = configuration3();
        groups.push(group("c3", "3", "0"));
        assert_eq!(
            err(&groups, Some(&d)),
            "5 resctrl groups (the default group, 4 new) need 5 CLOSIDs, but this machine has 4 (info/*/num_closids); use at most 3 cache groups"
        );
        // Unknown CPU, empty CPUs, a CPU in two groups.
        assert_eq!(
            err(&[group("rt", "1,7", "6-7")], None),
            "cache group rt: cpus: CPU 7 is not online (online CPUs: 0-3)"
        );
        assert_eq!(
            err(&[group("rt", "", "6-7")], None),
            "cache group rt: cpus is empty; name the CPUs that allocate with this group's masks (online CPUs: 0-3)"
        );
        assert_eq!(
            err(&[group("a", "1", "6-7"), group("b", "1-2", "4-5")], None),
            "cache group b: cpus: CPU 1 is in cache group a too; a CPU belongs to one group"
        );
        assert_eq!(
            err(&[group("a", "1", "6-7"), group("a", "2", "4-5")], None),
            "cache group a: the name is given twice; give each cache group its own"
        );
        assert_eq!(
            err(&[group("../etc", "1", "6-7")], None),
            "cache group ../etc: group \"../etc\" may use only ASCII letters, digits, _ and - (it names a directory under /sys/fs/resctrl)"
        );
        // Masks.
        assert_eq!(
            err(&[group("rt", "1", "0,2")], None),
            "cache group rt: l3: ways 0,2 (mask 0x5) are not adjacent; L3 takes one block of adjacent ways here (info/L3/sparse_masks is not 1)"
        );
        assert_eq!(
            err(&[group("rt", "1", "7-8")], None),
            "cache group rt: l3: ways 7-8 (mask 0x180) reach beyond the 8 ways of L3 (ways 0-7, cbm_mask ff)"
        );
        assert_eq!(
            err(&[], Some(&l3_default("8"))),
            "cache_default: l3: ways 8 (mask 0x100) reach beyond the 8 ways of L3 (ways 0-7, cbm_mask ff)"
        );
        let mut g = group("rt", "1", "6-7");
        g.masks[0].ids = Some(vec![1]);
        assert_eq!(
            err(&[g], None),
            "cache group rt: l3: cache id 1 does not exist (L3 ids: 0)"
        );
        let mut g = group("rt", "1", "6-7");
        g.masks[0].resource = Resource::L2;
        assert_eq!(
            err(&[g], None),
            "cache group rt: l2: this machine has no L2 allocation (resctrl offers: L3); remove l2"
        );
        let mut g = group("rt", "1", "6-7");
        g.masks[0].resource = Resource::L3Code;
        assert_eq!(
            err(&[g], None),
            "cache group rt: l3code: resctrl is mounted without CDP here; give l3 instead, or remount resctrl with -o cdp"
        );
        let mut g = group("rt", "1", "6-7");
        g.mb = Some(50);
        assert_eq!(
            err(&[g], None),
            "cache group rt: mb: this machine has no memory bandwidth allocation (no /sys/fs/resctrl/info/MB); remove mb"
        );
        let mut g = group("rt", "1", "6-7");
        g.masks.clear();
        assert_eq!(
            err(&[g], None),
            "cache group rt: allocates nothing; give l3, l2, l3code, l3data, l2code, l2data or mb"
        );
    }

    #[test]
    fn exclusive_groups_share_no_way() {
        let caps = seed000();
        let online = cpus("0-3");
        let default = sch("    L3:0=ff\n");
        let batch = ExistingGroup {
            name: "batch".into(),
            cpus: cpus("3"),
            schemata: sch("    L3:0=04\n"),
            exclusive: true,
        };
        let existing = [batch];
        let m = Machine {
            caps: &caps,
            online: &online,
            default_schemata: &default,
            groups: &[],
        };
        let excl = |name: &str, cpu: &str, ways: &str| CacheGroup {
            exclusive: true,
            ..group(name, cpu, ways)
        };
        // The default group still holds every way.
        assert_eq!(
            plan(&[excl("rt", "1", "6-7")], None, &m).unwrap_err(),
            "cache group rt is exclusive, but its L3 ways 6-7 (mask 0xc0) on id 0 overlap ways 6-7 of the default group; shrink the default group in [configuration.cache_default]"
        );
        // Shrunk: fine.
        assert!(plan(&[excl("rt", "1", "6-7")], Some(&l3_default("0-5")), &m).is_ok());
        // A group without an L3 mask starts with every way no exclusive
        // group holds: created after rt, it leaves rt's ways alone.
        let other = CacheGroup {
            masks: vec![],
            mb: Some(50),
            ..group("other", "2", "0")
        };
        let caps_mb = Capabilities {
            resources: vec![
                caps.resources[0].clone(),
                ResourceInfo {
                    resource: Resource::Mb,
                    num_closids: Some(4),
                    cache: None,
                    bandwidth: None,
                    ids: vec![0],
                },
            ],
            ..caps.clone()
        };
        let default_mb = sch("    L3:0=ff\n    MB:0=100\n");
        let m_mb = Machine {
            caps: &caps_mb,
            default_schemata: &default_mb,
            ..m
        };
        let p = plan(
            &[other.clone(), excl("rt", "1", "6-7")],
            Some(&l3_default("0-5")),
            &m_mb,
        )
        .unwrap();
        assert_eq!(
            p.describe(),
            "rt cpus=1 L3:0=c0 mode=exclusive; other cpus=2 MB:0=50; (default) L3:0=3f"
        );
        let rt_made = ExistingGroup {
            name: "rt".into(),
            cpus: cpus("1"),
            schemata: sch("    L3:0=c0\n    MB:0=100\n"),
            exclusive: true,
        };
        assert_eq!(
            initial_schemata(&caps_mb, &default_mb, std::slice::from_ref(&rt_made)),
            sch("L3:0=3f\nMB:0=100\n")
        );
        // Exclusive ways in the middle: the lowest block is kept.
        let mid = ExistingGroup {
            schemata: sch("L3:0=18\n"),
            ..rt_made.clone()
        };
        assert_eq!(initial_schemata(&caps, &default, &[mid]), sch("L3:0=07\n"));
        // An exclusive group that names no L3 mask keeps every way, and so
        // the ways the hardware shares.
        let m_only = CacheGroup {
            exclusive: true,
            ..other
        };
        assert_eq!(
            plan(&[m_only], Some(&l3_default("0-5")), &m_mb).unwrap_err(),
            "cache group other is exclusive, but its L3 ways 0-7 (mask 0xff) on id 0 include ways 0-1, which the hardware shares with I/O (info/L3/shareable_bits); exclusive groups must leave them out"
        );
        // The hardware's shareable ways.
        assert_eq!(
            plan(&[excl("rt", "1", "0-1")], Some(&l3_default("2-7")), &m).unwrap_err(),
            "cache group rt is exclusive, but its L3 ways 0-1 (mask 0x3) on id 0 include ways 0-1, which the hardware shares with I/O (info/L3/shareable_bits); exclusive groups must leave them out"
        );
        // Two new exclusive groups that overlap.
        assert_eq!(
            plan(
                &[excl("a", "1", "5-7"), excl("b", "2", "4-5")],
                Some(&l3_default("2-3")),
                &m
            )
            .unwrap_err(),
            "cache group b: L3 ways 4-5 (mask 0x30) on id 0 overlap exclusive cache group a (L3 ways 5-7 (mask 0xe0)); choose other ways"
        );
        // An exclusive group and a new shareable group that overlap.
        assert_eq!(
            plan(
                &[group("b", "2", "4-5"), excl("a", "1", "5-7")],
                Some(&l3_default("2-3")),
                &m
            )
            .unwrap_err(),
            "cache group b: L3 ways 4-5 (mask 0x30) on id 0 overlap exclusive cache group a (L3 ways 5-7 (mask 0xe0)); choose other ways"
        );
        // Exclusive beside an existing shareable group.
        let lent = [ExistingGroup {
            name: "lent".into(),
            cpus: cpus("3"),
            schemata: sch("    L3:0=80\n"),
            exclusive: false,
        }];
        assert_eq!(
            plan(
                &[excl("a", "1", "6-7")],
                Some(&l3_default("2-5")),
                &Machine { groups: &lent, ..m }
            )
            .unwrap_err(),
            "cache group a is exclusive, but its L3 ways 6-7 (mask 0xc0) on id 0 overlap ways 7 of resctrl group lent; choose ways that group does not use"
        );
        // An exclusive group that exists already: no write may take its ways.
        let m2 = Machine {
            groups: &existing,
            ..m
        };
        assert_eq!(
            plan(&[group("rt", "1", "2-3")], None, &m2).unwrap_err(),
            "cache group rt: L3 ways 2-3 (mask 0xc) on id 0 overlap exclusive resctrl group batch (L3 ways 2 (mask 0x4)); choose other ways"
        );
        assert_eq!(
            plan(&[group("rt", "3", "6-7")], None, &m2).unwrap_err(),
            "cache group rt: cpus: CPU 3 belongs to resctrl group batch already; jitterlab would take it away and could not give it back — leave CPU 3 out or remove that group"
        );
        assert_eq!(
            plan(&[group("batch", "1", "6-7")], None, &m2).unwrap_err(),
            "cache group batch: a resctrl group named batch exists already; choose another name, or remove it (rmdir /sys/fs/resctrl/batch) if nothing uses it"
        );
        // With the existing group, only 2 more fit.
        let (groups, d) = configuration3();
        let d = CacheDefault {
            masks: vec![CacheMask {
                resource: Resource::L3,
                mask: 0x3,
                ids: None,
            }],
            ..d
        };
        let groups: Vec<CacheGroup> = groups
            .into_iter()
            .map(|g| CacheGroup {
                cpus: vec![g.cpus[0]],
                ..g
            })
            .collect();
        assert_eq!(
            plan(&groups, Some(&d), &m2).unwrap_err(),
            "5 resctrl groups (the default group, 1 existing, 3 new) need 5 CLOSIDs, but this machine has 4 (info/*/num_closids); use at most 2 cache groups"
        );
    }

    #[test]
    fn cdp_overlaps_count_the_peer_half() {
        let info = CacheInfo {
            cbm_mask: 0xfff,
            min_cbm_bits: 1,
            shareable_bits: 0,
            sparse_masks: false,
        };
        let caps = Capabilities {
            flags: vec!["cat_l3".into(), "cdp_l3".into()],
            mounted: true,
            resources: [Resource::L3Code, Resource::L3Data]
                .into_iter()
                .map(|r| ResourceInfo {
                    resource: r,
                    num_closids: Some(8),
                    cache: Some(info),
                    bandwidth: None,
                    ids: vec![0, 1],
                })
                .collect(),
        };
        let online = cpus("0-7");
        let default = sch("L3CODE:0=fff;1=fff\nL3DATA:0=fff;1=fff\n");
        let m = Machine {
            caps: &caps,
            online: &online,
            default_schemata: &default,
            groups: &[],
        };
        let mk = |r: Resource, ways: &str| CacheMask {
            resource: r,
            mask: parse_ways(ways).unwrap(),
            ids: None,
        };
        let rt = CacheGroup {
            name: "rt".into(),
            cpus: vec![1],
            tasks: vec![],
            masks: vec![mk(Resource::L3Code, "8-11"), mk(Resource::L3Data, "8-11")],
            mb: None,
            exclusive: true,
        };
        // The default's data half still reaches the code ways.
        let d = CacheDefault {
            masks: vec![mk(Resource::L3Code, "0-7")],
            mb: None,
        };
        assert_eq!(
            plan(std::slice::from_ref(&rt), Some(&d), &m).unwrap_err(),
            "cache group rt is exclusive, but its L3CODE ways 8-11 (mask 0xf00) on id 0 overlap ways 8-11 of the default group (L3DATA); shrink the default group in [configuration.cache_default]"
        );
        let d = CacheDefault {
            masks: vec![mk(Resource::L3Code, "0-7"), mk(Resource::L3Data, "0-7")],
            mb: None,
        };
        let p = plan(std::slice::from_ref(&rt), Some(&d), &m).unwrap();
        assert_eq!(
            p.describe(),
            "rt cpus=1 L3CODE:0=f00;1=f00 L3DATA:0=f00;1=f00 mode=exclusive; (default) L3CODE:0=ff;1=ff L3DATA:0=ff;1=ff"
        );
        let mut l3 = rt.clone();
        l3.masks = vec![mk(Resource::L3, "8-11")];
        assert_eq!(
            plan(&[l3], None, &m).unwrap_err(),
            "cache group rt: l3: resctrl is mounted with CDP here, which splits L3 into L3CODE and L3DATA; give l3code and l3data instead of l3"
        );
    }

    #[test]
    fn capability_summary() {
        assert_eq!(
            seed000().summary(),
            "L3 8 ways (cbm_mask ff) on id 0; 4 CLOSIDs; CDP off (cdp_l3: mount with -o cdp for it); no MBA"
        );
        let caps = Capabilities {
            flags: vec!["cat_l3".into(), "cdp_l3".into(), "mba".into()],
            mounted: true,
            resources: vec![
                ResourceInfo {
                    resource: Resource::L3Code,
                    num_closids: Some(8),
                    cache: Some(CacheInfo {
                        cbm_mask: 0xfff,
                        ..L3_8
                    }),
                    bandwidth: None,
                    ids: vec![0, 1],
                },
                ResourceInfo {
                    resource: Resource::Mb,
                    num_closids: Some(8),
                    cache: None,
                    bandwidth: Some(BandwidthInfo {
                        min_bandwidth: 10,
                        bandwidth_gran: 10,
                    }),
                    ids: vec![0, 1],
                },
            ],
        };
        assert_eq!(
            caps.summary(),
            "L3CODE 12 ways (cbm_mask fff) on ids 0-1; 8 CLOSIDs; CDP on; MBA from 10% in steps of 10%"
        );
        assert_eq!(
            Capabilities {
                flags: vec!["cat_l3".into(), "mba".into()],
                mounted: true,
                resources: vec![],
            }
            .summary(),
            "CLOSIDs unknown; no CDP; MBA in the CPU but not offered by resctrl"
        );
    }
}
