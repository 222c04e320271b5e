//! The partition table: per cache and cache id, which CPUs and groups
//! may allocate into each way.

use std::collections::BTreeMap;

use super::caps::{CacheInfo, Capabilities};
use super::mask::{ways_count, ways_text};
use super::schemata::Schemata;
use super::{Resource, DEFAULT_GROUP};
use crate::units::CpuList;

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
