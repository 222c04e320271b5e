//! Cache ways reserved for real-time CPUs, fitted to the machine's resctrl
//! capabilities: the cache-partitioned configurations of the presets
//! ([Intel CODESYS] Table 9 for `codesys`, [Red Hat controls]'s CAT for `redhat`,
//! [Red Hat caterpillar]'s reserved half for `caterpillar`).
//!
//! One rule serves them all, so the three presets agree on what
//! "reserved" means: the cache is the L3 when resctrl offers it, else the
//! L2; its lower half (rounded down) stays with every other CPU (the
//! default group), and its upper half is shared out among the real-time
//! CPUs, each in a resctrl group of its own with a block of adjacent ways
//! ([Intel CODESYS]: "cache ways 7,6 … CPU 0, cache ways 5,4 … CPU 1"). The first
//! real-time CPU named gets the highest block and any ways left over by an
//! uneven split. With one real-time CPU this is [Red Hat caterpillar]'s split: the upper
//! half for the test CPU, the lower half for everything else.
//!
//! Where the machine cannot do it, the error is the reason a report prints
//! beside the configuration's N/A row: no cache allocation at all, resctrl
//! not mounted, CDP on, no cache resource, too few CLOSIDs, or a cache too
//! small for its blocks under the kernel's rules (`min_cbm_bits`).
//!
//! The documents cited here are listed in `docs/design.md`.

use crate::resctrl::{CacheInfo, Capabilities, Resource};

/// Ways of one cache reserved for real-time CPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Partition {
    /// The cache (L3 where offered, else L2).
    pub resource: Resource,
    /// Its ways.
    pub ways: u32,
    /// One block per real-time CPU, in the order they were named; together
    /// the upper half of the cache.
    pub reserved: Vec<u64>,
    /// The lower half: the default group, every other CPU.
    pub rest: u64,
}

/// The bits of `mask`, lowest first.
fn bits(mask: u64) -> impl DoubleEndedIterator<Item = u32> {
    (0..64).filter(move |b| mask & (1 << b) != 0)
}

/// Reserves ways of the machine's cache for `realtime` real-time CPUs (at
/// least one): see the module doc. The error says why it cannot.
pub(super) fn partition(
    cache: Option<&Capabilities>,
    realtime: usize,
) -> Result<Partition, String> {
    let realtime = realtime.max(1);
    let Some(caps) = cache else {
        return Err("needs cache allocation (resctrl on CAT hardware), and this machine has none (no rdt_a, cat_l3 or cat_l2 flag in /proc/cpuinfo, no resctrl info directory; a virtual machine usually hides it)".into());
    };
    if !caps.mounted {
        return Err(format!(
            "the CPU offers cache allocation ({}) but resctrl is not mounted, so the cache's ways are unknown; mount it (mount -t resctrl resctrl /sys/fs/resctrl) and ask for the preset again",
            caps.flags.join(", ")
        ));
    }
    let offered = |r: Resource| -> Option<CacheInfo> { caps.resource(r)?.cache };
    let Some((resource, info)) = [Resource::L3, Resource::L2]
        .into_iter()
        .find_map(|r| offered(r).map(|i| (r, i)))
    else {
        return Err(if caps.cdp_on() {
            "resctrl is mounted with CDP (-o cdp), which splits each cache into code and data; remount it without -o cdp for this preset".into()
        } else {
            format!(
                "resctrl offers no cache to allocate ({}); this configuration reserves L3 or L2 ways",
                caps.resource_names()
            )
        });
    };
    if let Some(n) = caps.closids() {
        let needed = realtime as u32 + 1;
        if n < needed {
            return Err(if realtime == 1 {
                format!(
                    "resctrl offers {n} CLOSID, and a reserved half needs a group besides the default one"
                )
            } else {
                format!(
                    "resctrl offers {n} CLOSIDs, and reserving ways for {realtime} real-time CPUs needs {needed}: a group for each besides the default one"
                )
            });
        }
    }
    let ways = info.ways();
    let mut rest = 0;
    for bit in bits(info.cbm_mask).take(ways as usize / 2) {
        rest |= 1 << bit;
    }
    let upper: Vec<u32> = bits(info.cbm_mask & !rest).rev().collect();
    let (each, extra) = (upper.len() / realtime, upper.len() % realtime);
    let split_error = |e: String| {
        if realtime == 1 {
            format!("{resource}'s {ways} ways cannot be split in halves here: {e}")
        } else {
            format!(
                "{resource}'s {ways} ways cannot give {realtime} real-time CPUs ways of their own here: {e}"
            )
        }
    };
    if each == 0 {
        return Err(split_error(format!(
            "its upper half holds {} and each real-time CPU needs one at least",
            match upper.len() {
                1 => "1 way".to_string(),
                n => format!("{n} ways"),
            }
        )));
    }
    // The first CPU gets the highest block and what an uneven split leaves.
    let mut reserved = Vec::with_capacity(realtime);
    let mut next = upper.into_iter();
    for k in 0..realtime {
        let take = if k == 0 { each + extra } else { each };
        reserved.push(next.by_ref().take(take).fold(0u64, |m, b| m | 1 << b));
    }
    for &mask in reserved.iter().chain([&rest]) {
        info.check(resource, mask).map_err(split_error)?;
    }
    Ok(Partition {
        resource,
        ways,
        reserved,
        rest,
    })
}

/// The cache tables of a configuration that reserves `p`'s blocks: one
/// `[[configuration.cache]]` per `(group, cpu)` of `groups` (in the order
/// of `p.reserved`), then the default group's lower half.
pub(super) fn cache_tables(p: &Partition, groups: &[(&str, usize)]) -> String {
    let key = p.resource.key();
    let mut text = String::new();
    for ((group, cpu), mask) in groups.iter().zip(&p.reserved) {
        text.push_str(&format!(
            "\n[[configuration.cache]]\ngroup = \"{group}\"\ncpus = \"{cpu}\"\n{key} = {{ ways = \"{}\" }}\n",
            crate::resctrl::ways_text(*mask)
        ));
    }
    text.push_str(&format!(
        "\n[configuration.cache_default]\n{key} = {{ ways = \"{}\" }}\n",
        crate::resctrl::ways_text(p.rest)
    ));
    text
}
