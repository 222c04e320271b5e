//! The `[[configuration.cache]]` groups and `[configuration.cache_default]`
//! of a configuration, checked as far as no machine is needed; the masks
//! are checked against the machine later (see [`crate::resctrl`]). Its own
//! file because the cache tables are a sub-language of their own, with
//! their own grammar of ways, masks and ids.

use toml::Spanned;

use super::check::{Check, Checker};
use super::raw::{RawConfiguration, RawMasks};
use crate::resctrl::{
    check_group_name, parse_mask, parse_ways, CacheDefault, CacheGroup, CacheMask, Resource,
};

/// The `[[configuration.cache]]` groups and `[configuration.cache_default]`
/// of configuration `p` (`configuration[i]`), checked as far as no
/// machine is needed (see "Cache allocation" in the module doc).
pub(super) fn cache_settings(
    ck: &Checker,
    c: &RawConfiguration,
    p: &str,
) -> Check<(Vec<CacheGroup>, Option<CacheDefault>)> {
    let mut groups: Vec<CacheGroup> = Vec::new();
    let mut owner: Vec<(usize, usize)> = Vec::new();
    for (j, t) in c.cache.iter().enumerate() {
        let gp = format!("{p}.cache[{j}]");
        let k = |key: &str| format!("{gp}.{key}");
        let g = t.get_ref();
        let Some(name_v) = &g.group else {
            return Err(ck.err(
                t.span(),
                &k("group"),
                "missing; every cache group needs a name, e.g. group = \"rt\"",
            ));
        };
        let name = name_v.get_ref().clone();
        check_group_name(&name).map_err(|e| ck.err(name_v.span(), &k("group"), e))?;
        let used = groups.iter().map(|o| o.name.as_str());
        ck.unique(
            &name,
            name_v.span(),
            &k("group"),
            used,
            &format!("{p}.cache"),
            "cache group",
        )?;
        let cpus = match &g.cpus {
            Some(v) => {
                let cpus = ck.nonempty_cpus(v, &k("cpus"), "cache group")?;
                for &cpu in &cpus {
                    if let Some(&(_, other)) = owner.iter().find(|(c, _)| *c == cpu) {
                        return Err(ck.err(
                            v.span(),
                            &k("cpus"),
                            format!(
                                "CPU {cpu} is already in cache group {} ({p}.cache[{other}]); a CPU belongs to one resctrl group",
                                groups[other].name
                            ),
                        ));
                    }
                    owner.push((cpu, j));
                }
                cpus
            }
            None => return Err(ck.err(
                t.span(),
                &k("cpus"),
                "missing; give the CPUs that allocate with this group's ways, e.g. cpus = \"1\"",
            )),
        };
        let (masks, mb) = cache_alloc(ck, g.masks(), &g.mb, &gp)?;
        if masks.is_empty() && mb.is_none() {
            return Err(ck.err(
                t.span(),
                &gp,
                format!(
                    "cache group {name} allocates nothing; give l3, l2, l3code, l3data, l2code, l2data or mb"
                ),
            ));
        }
        groups.push(CacheGroup {
            name,
            cpus,
            tasks: Vec::new(),
            masks,
            mb,
            exclusive: g.exclusive.as_ref().is_some_and(|v| *v.get_ref()),
        });
    }
    let default = match &c.cache_default {
        Some(t) => {
            let dp = format!("{p}.cache_default");
            let d = t.get_ref();
            let (masks, mb) = cache_alloc(ck, d.masks(), &d.mb, &dp)?;
            if masks.is_empty() && mb.is_none() {
                return Err(ck.err(
                    t.span(),
                    &dp,
                    "shrinks nothing; give l3, l2, l3code, l3data, l2code, l2data or mb, or leave the table out",
                ));
            }
            Some(CacheDefault { masks, mb })
        }
        None => None,
    };
    Ok((groups, default))
}

/// The masks and bandwidth of one group's table `gp`.
pub(super) fn cache_alloc(
    ck: &Checker,
    given: RawMasks,
    mb: &Option<Spanned<i64>>,
    gp: &str,
) -> Check<(Vec<CacheMask>, Option<u32>)> {
    let has = |r: Resource| given.iter().any(|(g, v)| *g == r && v.is_some());
    let mut masks = Vec::new();
    for (r, v) in given {
        let Some(v) = v else { continue };
        let key = format!("{gp}.{}", r.key());
        let plain = match r {
            Resource::L3Code | Resource::L3Data => has(Resource::L3),
            Resource::L2Code | Resource::L2Data => has(Resource::L2),
            _ => false,
        };
        if plain {
            let p = if r.level() == Some(3) { "l3" } else { "l2" };
            return Err(ck.err(
                v.span(),
                &key,
                format!(
                    "{p} and {p}code/{p}data exclude each other: resctrl offers the code and data halves instead of {} only when mounted with CDP; give one kind",
                    p.to_uppercase()
                ),
            ));
        }
        let w = v.get_ref();
        let mask = match (&w.ways, &w.mask) {
            (Some(_), Some(m)) => {
                return Err(ck.err(
                    m.span(),
                    &format!("{key}.mask"),
                    "give ways or mask, not both",
                ))
            }
            (Some(ways), None) => parse_ways(ways.get_ref())
                .map_err(|e| ck.err(ways.span(), &format!("{key}.ways"), e))?,
            (None, Some(m)) => {
                parse_mask(m.get_ref()).map_err(|e| ck.err(m.span(), &format!("{key}.mask"), e))?
            }
            (None, None) => {
                return Err(ck.err(v.span(), &key, "give ways = \"6-7\" or mask = \"0xc0\""))
            }
        };
        let ids = match &w.ids {
            Some(list) => {
                if list.get_ref().is_empty() {
                    return Err(ck.err(
                        list.span(),
                        &format!("{key}.ids"),
                        "ids is empty; leave it out for every cache id, or list some, e.g. ids = [0]",
                    ));
                }
                let mut ids: Vec<u32> = Vec::new();
                for (n, id) in list.get_ref().iter().enumerate() {
                    let ik = format!("{key}.ids[{n}]");
                    let id_v = ck.int(id, &ik, 0, i64::from(u32::MAX))? as u32;
                    if ids.contains(&id_v) {
                        return Err(ck.err(
                            id.span(),
                            &ik,
                            format!("cache id {id_v} is listed twice"),
                        ));
                    }
                    ids.push(id_v);
                }
                Some(ids)
            }
            None => None,
        };
        masks.push(CacheMask {
            resource: r,
            mask,
            ids,
        });
    }
    let mb = match mb {
        Some(v) => Some(ck.int(v, &format!("{gp}.mb"), 1, 100)? as u32),
        None => None,
    };
    Ok((masks, mb))
}
