//! The documents cited here are listed in `docs/design.md`.

use std::collections::BTreeMap;

use super::*;
use crate::units::CpuList;

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
    // [Red Hat caterpillar]'s write, with its trailing ';'.
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

/// [Intel CODESYS]'s machine: one L3 of 8 ways, 4 CPUs, 4 CLOSIDs, the
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

/// [Intel CODESYS], Configuration 3 (Table 9): ways 7-6 for CPU 0, 5-4 for
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
    let err = |groups: &[CacheGroup], d: Option<&CacheDefault>| plan(groups, d, &m).unwrap_err();

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
