//! The plan: the request checked against the machine, the groups to
//! create and the schemata to write, in the order the kernel accepts them.

use std::collections::BTreeMap;

use super::caps::Capabilities;
use super::mask::{describe_mask, ways_text};
use super::request::{check_group_name, CacheDefault, CacheGroup, CacheMask};
use super::schemata::{Schemata, SchemataLine};
use super::{Resource, DEFAULT_GROUP};
use crate::units::CpuList;

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
