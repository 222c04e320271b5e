//! Tests of the presets: each parsed by the one spec parser on machines of
//! one, two, four and eight CPUs, with and without cache allocation (the
//! resctrl capabilities of the seeds' machines).
//!
//! The documents cited here are listed in `docs/design.md`.

use super::*;
use crate::netcycle::NetcycleParams;
use crate::resctrl::{CacheInfo, Capabilities, Resource};
use crate::result::ProbeKind;
use crate::spec::{parse, Policy, ProbeParams, SpecContext};

const BUILTINS: &[&str] = &[
    "idle",
    "cpu",
    "disk",
    "usb",
    "network",
    "scheduling",
    "misc",
    "codesys",
    "redhat",
    "cache",
];

/// Why a machine without cache allocation has no cache-partitioned
/// configuration.
const NO_CACHE: &str = "needs cache allocation (resctrl on CAT hardware), and this machine has none (no rdt_a, cat_l3 or cat_l2 flag in /proc/cpuinfo, no resctrl info directory; a virtual machine usually hides it)";

fn parsed(name: &str, online: &str) -> crate::spec::Spec {
    parsed_with(name, online, None)
}

fn parsed_with(name: &str, online: &str, cache: Option<&Capabilities>) -> crate::spec::Spec {
    let online = CpuList::parse(online).unwrap();
    let machine = PresetMachine {
        online: &online,
        cache,
    };
    let text = preset_text(name, &machine).unwrap();
    let ctx = SpecContext {
        online: &online,
        builtins: BUILTINS,
    };
    parse(&text, &format!("preset {name}"), &ctx)
        .unwrap_or_else(|e| panic!("preset {name} on {online}: {e}"))
}

#[test]
fn each_presets_text_opens_with_the_document_it_reproduces() {
    let online = CpuList::parse("0-1").unwrap();
    let machine = PresetMachine {
        online: &online,
        cache: None,
    };
    let head = |name: &str| -> String {
        let text = preset_text(name, &machine).unwrap();
        let lines: Vec<&str> = text.lines().take(4).collect();
        lines
            .iter()
            .map(|l| l.trim_start_matches('#').trim())
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(
        head("codesys"),
        "Preset codesys: Table 10, Cycle Time and Jitter, of \"Improving Real-Time Performance of CODESYS Control Applications with Intel’s Real-Time Technologies\" (Intel Corporation). A soft-PLC task with a 4 ms period beside a stress-ng noisy neighbour,"
    );
    assert!(head("redhat").starts_with(
        "Preset redhat: screw-to-screw round trip over OPC UA PubSub, after \"Real-time Linux for controls: Industrial control performance testing with Red Hat and Intel\" (Red Hat and Intel)."
    ));
    assert!(head("caterpillar").starts_with(
        "Preset caterpillar: cache-sensitive pointer chase, after a Red Hat blog post (the caterpillar benchmark with Intel Cache Allocation Technology on Red Hat Device Edge; title and author not given in the stored text)."
    ));
    assert!(head("epics").starts_with(
        "Preset epics: Tables 1, 4 and 5 of \"EPICS IOCcore Real Time Performance Measurements on Coldfire Module\" (Shifu Xu, Hairong Shang, Robert Laird and Frank Lenkszus)."
    ));
    assert!(head("powerlink").starts_with(
        "Preset powerlink: Tables 2-3 (stack load) and 4-5 (SoC jitter) of \"POWERLINK and Real-Time Linux: A Perfect Match for Highest Performance in Real Applications\" (Josef Baumgartner and Stefan Schoenegger)."
    ));
    for p in PRESETS {
        assert!(
            !preset_text(p.name, &machine).unwrap().contains("seed 00"),
            "{}",
            p.name
        );
    }
}

#[test]
fn every_listed_preset_has_text_and_unknown_has_none() {
    let online = CpuList::parse("0-1").unwrap();
    let machine = PresetMachine {
        online: &online,
        cache: None,
    };
    let names: Vec<&str> = PRESETS.iter().map(|p| p.name).collect();
    assert_eq!(
        names,
        ["codesys", "redhat", "caterpillar", "epics", "powerlink"]
    );
    for p in PRESETS {
        assert!(preset_text(p.name, &machine).is_some(), "{}", p.name);
    }
    assert_eq!(preset_text("nope", &machine), None);
}

#[test]
fn codesys_reproduces_table_10_on_every_machine_size() {
    for (online, probe, neighbours, warnings) in [
        ("0-1", vec![1], vec![0], 0),
        ("0-7", vec![7], (0..7).collect::<Vec<_>>(), 0),
        ("0", vec![0], vec![0], 2),
    ] {
        let s = parsed("codesys", online);
        assert_eq!(s.name, "codesys");
        assert_eq!(s.duration_ns, 60_000_000_000);
        assert_eq!(s.warmup_ns, 5_000_000_000);
        assert_eq!(s.baseline, "baseline");
        let names: Vec<&str> = s.configurations.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["baseline", "tuned"]);
        let b = &s.configurations[0];
        assert_eq!(
            (b.policy, b.priority, b.nice, b.dma_latency),
            (Policy::Other, None, Some(0), false)
        );
        let t = &s.configurations[1];
        assert_eq!(
            (t.policy, t.priority, t.nice, t.dma_latency),
            (Policy::Fifo, Some(95), None, true)
        );
        for c in &s.configurations {
            assert_eq!(c.probe_cpus, probe, "{online}");
            assert_eq!(c.neighbour_cpus, neighbours, "{online}");
        }
        assert_eq!(s.scenarios.len(), 1);
        assert_eq!(s.scenarios[0].name, "codesys");
        assert_eq!(s.scenarios[0].builtin.as_deref(), Some("codesys"));
        assert_eq!(s.probes.len(), 1);
        let p = &s.probes[0];
        assert_eq!(
            (p.kind(), p.period_ns, p.scan()),
            (ProbeKind::Cyclic, 4_000_000, Some((1 << 20, 500_000)))
        );
        assert_eq!(s.warnings.len(), warnings, "{online}: {:?}", s.warnings);
        assert_eq!(s.cells().len(), 2);
    }
}

#[test]
fn powerlink_measures_both_tables_on_every_machine_size() {
    for (online, probe, neighbours, warnings) in [
        ("0-1", vec![1], vec![0], 0),
        ("0-7", vec![7], (0..7).collect::<Vec<_>>(), 0),
        ("0", vec![0], vec![0], 1),
    ] {
        let s = parsed("powerlink", online);
        assert_eq!(s.name, "powerlink");
        assert_eq!(s.duration_ns, 60_000_000_000);
        assert_eq!(s.warmup_ns, 5_000_000_000);
        assert_eq!(s.baseline, "tuned");
        assert_eq!(s.configurations.len(), 1);
        let t = &s.configurations[0];
        assert_eq!(
            (t.policy, t.priority, t.dma_latency),
            (Policy::Fifo, Some(95), true)
        );
        assert_eq!(t.probe_cpus, probe, "{online}");
        assert_eq!(t.neighbour_cpus, neighbours, "{online}");
        let conditions = [
            "idle",
            "cpu",
            "disk",
            "usb",
            "network",
            "scheduling",
            "misc",
        ];
        let names: Vec<&str> = s.scenarios.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, conditions);
        for sc in &s.scenarios {
            assert_eq!(sc.builtin.as_deref(), Some(sc.name.as_str()));
        }
        // Tables 4-5 with frames, under every condition.
        let jitter = &s.probes[0];
        assert_eq!(jitter.name, "soc-jitter");
        assert_eq!(jitter.period_ns, 500_000);
        assert_eq!(
            jitter.params.get::<NetcycleParams>(),
            Some(&NetcycleParams::default())
        );
        assert!(jitter.scope.is_default());
        // The earlier preset's timer task, under the same name.
        let timer = &s.probes[1];
        assert_eq!(
            (
                timer.name.as_str(),
                timer.kind(),
                timer.period_ns,
                timer.scan()
            ),
            (
                "cyclic",
                ProbeKind::Cyclic,
                500_000,
                Some((64 << 10, 50_000))
            )
        );
        assert!(timer.scope.is_default());
        // Tables 2-3: 6 cycle times × 4 network sizes, idle, 30 s each.
        let load = &s.probes[2..];
        assert_eq!(load.len(), 24);
        let mut points = Vec::new();
        for p in load {
            let n = p.params.get::<NetcycleParams>().expect("a netcycle probe");
            assert_eq!(p.scope.scenarios, ["idle"], "{}", p.name);
            assert_eq!(p.scope.duration_ns, Some(30_000_000_000), "{}", p.name);
            assert_eq!(
                (n.out_bytes, n.in_bytes, n.chaining),
                (1, 6, false),
                "{}: the payloads of Table 1 of Baumgartner and Schoenegger",
                p.name
            );
            points.push((p.period_ns, n.cns));
        }
        let want: Vec<(u64, u8)> = SEED_CYCLES_NS
            .iter()
            .flat_map(|&c| SEED_CNS.iter().map(move |&n| (c, n)))
            .collect();
        assert_eq!(points, want);
        assert_eq!(s.probes[2].name, "load-250us-3cn");
        assert_eq!(s.probes[25].name, "load-10ms-40cn");
        assert_eq!(s.warnings.len(), warnings, "{online}: {:?}", s.warnings);
        let cells = s.cells();
        assert_eq!(cells.len(), 7 + 7 + 24);
        // The frames of three cells cannot fit the wire, as in the seed
        // (whose 250 µs × 10 CNs was not held either).
        let na: Vec<String> = cells
            .iter()
            .filter(|c| s.cell_na(c).is_some())
            .map(|c| c.key.probe.clone())
            .collect();
        assert_eq!(
            na,
            ["load-250us-20cn", "load-250us-40cn", "load-500us-40cn"]
        );
    }
}

#[test]
fn powerlink_plans_twenty_eight_minutes() {
    let s = parsed("powerlink", "0-1");
    // 21 load cells × (0.3 s + 5 s + 30 s) + 14 × (0.3 s + 5 s + 60 s) +
    // one 0.2 s calibration; the three N/A (wire) cells take nothing.
    assert_eq!(s.planned_ns(300_000_000, 200_000_000), 1_655_700_000_000);
    let plan = s.plan_text(300_000_000, 200_000_000);
    let lines: Vec<&str> = plan.lines().collect();
    assert_eq!(
        lines[1..6],
        [
            "  38 cells (1 repetition × 1 configuration × 1 deployment × 38 scenario × probe pairs of 7 scenarios × 26 probes)",
            "  each cell: set-up 300ms + warm-up 5s + measured 1m (14 cells), 30s (21 cells)",
            "  once: idle calibration 200ms",
            "  total: 27m 36s",
            "  probes load-250us-3cn … load-10ms-40cn (24) run in scenario idle only",
        ]
    );
    assert_eq!(
        lines[6],
        "  1/38   tuned/idle/host/soc-jitter        rep 1  (warm-up 5s + 1m)"
    );
    assert_eq!(
        lines[10],
        "  5/38   tuned/idle/host/load-250us-20cn   rep 1  (N/A (wire): 20 CNs need at least 282.2 µs of wire time per cycle at 100 Mbit/s, more than the 250 µs cycle; skipped)"
    );
}

#[test]
fn powerlink_takes_the_load_table_rows_and_columns_a_user_chooses() {
    let online = CpuList::parse("0-1").unwrap();
    let machine = PresetMachine {
        online: &online,
        cache: None,
    };
    let choice = PresetChoice {
        cycles_ns: vec![2_000_000, 1_000_000],
        cns: vec![10],
    };
    let text = chosen_text("powerlink", &machine, &choice)
        .expect("a preset")
        .expect("powerlink takes a choice");
    assert_eq!(
        text,
        r#"# Preset powerlink: Tables 2-3 (stack load) and 4-5 (SoC jitter) of "POWERLINK
# and Real-Time Linux: A Perfect Match for Highest Performance in Real
# Applications" (Josef Baumgartner and Stefan Schoenegger).
# A POWERLINK managing node (MN) polls emulated controlled nodes (CNs) over
# a veth pair: Table 1's payloads (1 output, 6 input bytes per CN).
# The source measured 10 million cycles (83 min) per condition; edit the
# durations for that.
name = "powerlink"
duration = "60s"
warmup = "5s"

[[configuration]]
name = "tuned"
probe_cpus = "1"
neighbour_cpus = "0"
policy = "fifo"
priority = 95
dma_latency = true

[[scenario]]
name = "idle"
builtin = "idle"

[[scenario]]
name = "cpu"
builtin = "cpu"

[[scenario]]
name = "disk"
builtin = "disk"

[[scenario]]
name = "usb"
builtin = "usb"

[[scenario]]
name = "network"
builtin = "network"

[[scenario]]
name = "scheduling"
builtin = "scheduling"

[[scenario]]
name = "misc"
builtin = "misc"

# Tables 4-5, SoC jitter: the MN at 500 us with 3 CNs under the seven
# conditions; min cycle, max cycle and deviation as sent and as received.
[[probe]]
kind = "netcycle"
name = "soc-jitter"
period = "500us"
cns = 3

# The timer task of the earlier preset (no frame sent), under the same
# conditions: the scheduling floor under the network's figures.
[[probe]]
kind = "cyclic"
period = "500us"
scan = "50us"
working_set = "64KiB"

# Tables 2-3, stack load: each cycle time x network size on the idle
# machine, 30s each; the load table compares it with Table 2.
[[probe]]
kind = "netcycle"
name = "load-2ms-10cn"
period = "2ms"
cns = 10
scenarios = ["idle"]
duration = "30s"
[[probe]]
kind = "netcycle"
name = "load-1ms-10cn"
period = "1ms"
cns = 10
scenarios = ["idle"]
duration = "30s"
"#
    );
    let ctx = SpecContext {
        online: &online,
        builtins: BUILTINS,
    };
    let s = parse(&text, "preset powerlink", &ctx).unwrap();
    let names: Vec<&str> = s.probes.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        ["soc-jitter", "cyclic", "load-2ms-10cn", "load-1ms-10cn"]
    );
    assert_eq!(s.cells().len(), 16);
    // Only the columns: the seed's six cycle times.
    let cns_only = PresetChoice {
        cycles_ns: vec![],
        cns: vec![40],
    };
    let s = parse(
        &chosen_text("powerlink", &machine, &cns_only)
            .unwrap()
            .unwrap(),
        "preset powerlink",
        &ctx,
    )
    .unwrap();
    let load: Vec<&str> = s.probes[2..].iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        load,
        [
            "load-250us-40cn",
            "load-500us-40cn",
            "load-1ms-40cn",
            "load-2ms-40cn",
            "load-5ms-40cn",
            "load-10ms-40cn"
        ]
    );
    // Nothing chosen: the preset as listed.
    assert_eq!(
        chosen_text("powerlink", &machine, &PresetChoice::default()),
        preset_text("powerlink", &machine).map(Ok)
    );
}

#[test]
fn a_preset_without_a_load_table_refuses_a_choice_and_says_which_takes_one() {
    let online = CpuList::parse("0-1").unwrap();
    let machine = PresetMachine {
        online: &online,
        cache: None,
    };
    let choice = PresetChoice {
        cycles_ns: vec![1_000_000],
        cns: vec![],
    };
    for name in ["codesys", "redhat", "caterpillar", "epics"] {
        assert_eq!(
            chosen_text(name, &machine, &choice),
            Some(Err(format!(
                "preset {name} has no load table to choose rows and columns of; --cycles and --cns apply to --preset powerlink"
            )))
        );
    }
    assert_eq!(chosen_text("nope", &machine, &choice), None);
    let takers: Vec<&str> = PRESETS
        .iter()
        .filter(|p| p.choice)
        .map(|p| p.name)
        .collect();
    assert_eq!(takers, ["powerlink"]);
}

#[test]
fn seed_004_load_tables_are_the_papers() {
    let t2 = &SEED_004_TABLE_2;
    assert_eq!(t2.get(250_000, 3), Some(SeedLoad::Percent(37)));
    assert_eq!(t2.get(250_000, 10), Some(SeedLoad::NotHeld));
    assert_eq!(t2.get(500_000, 20), Some(SeedLoad::Percent(43)));
    assert_eq!(t2.get(1_000_000, 40), Some(SeedLoad::Percent(39)));
    assert_eq!(t2.get(5_000_000, 3), Some(SeedLoad::BelowOne));
    assert_eq!(t2.get(10_000_000, 40), Some(SeedLoad::Percent(2)));
    assert_eq!(t2.get(3_000_000, 3), None);
    assert_eq!(t2.get(1_000_000, 5), None);
    let t3 = &SEED_004_TABLE_3;
    assert_eq!(t3.get(250_000, 3), Some(SeedLoad::Percent(50)));
    assert_eq!(t3.get(10_000_000, 10), Some(SeedLoad::Percent(1)));
    assert!(t2.source.ends_with("Table 2, High-End PC"));
    assert!(t3.source.ends_with("Table 3, Embedded PC"));
    // Every N/A of Table 2 is a cell the seed could not hold, and 22 of 24
    // cells hold; the row sums are the paper's.
    let sums: Vec<u32> = t2
        .figures
        .iter()
        .map(|r| {
            r.iter()
                .map(|f| match f {
                    SeedLoad::Percent(p) => u32::from(*p),
                    _ => 0,
                })
                .sum()
        })
        .collect();
    assert_eq!(sums, [37, 89, 82, 35, 11, 2]);
    assert_eq!(
        [
            SeedLoad::Percent(18).text(),
            SeedLoad::BelowOne.text(),
            SeedLoad::NotHeld.text()
        ],
        ["18%", "< 1%", "N/A"]
    );
}

#[test]
fn one_cpu_machine_warns_that_neighbours_share_the_probe_cpu() {
    assert_eq!(
        parsed("powerlink", "0").warnings,
        ["configuration tuned: no online CPU is left besides probe CPU 0, so neighbours share it; the figures show direct contention, not isolation"]
    );
}

#[test]
fn codesys_lists_the_cache_partitioned_configuration_as_unavailable_with_the_reason() {
    let online = CpuList::parse("0-1").unwrap();
    let m = PresetMachine {
        online: &online,
        cache: None,
    };
    assert_eq!(
        unavailable("codesys", &m),
        [("cache-partitioned".to_string(), NO_CACHE.to_string())]
    );
    assert_eq!(
        unavailable("redhat", &m),
        [("cache-partitioned".to_string(), NO_CACHE.to_string())]
    );
    assert_eq!(unavailable("powerlink", &m), []);
    assert_eq!(unavailable("epics", &m), []);
    assert_eq!(unavailable("nope", &m), []);
}

/// [Red Hat caterpillar]'s machine: L2 allocation only, 20 ways on 4 ids, 8 CLOSIDs.
fn seed_002_cache() -> Capabilities {
    use crate::resctrl::ResourceInfo;
    Capabilities {
        flags: vec!["cat_l2".into(), "cdp_l2".into(), "rdt_a".into()],
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
            ids: vec![0, 1, 2, 3],
        }],
    }
}

#[test]
fn caterpillar_gives_test_neighbour_and_irq_their_cpus() {
    for (online, test, neighbour, irq, warnings) in [
        ("0-3", vec![3], vec![2], Some(vec![0]), 0),
        ("0-1", vec![1], vec![0], Some(vec![0]), 0),
        ("0", vec![0], vec![0], None, 1),
    ] {
        let s = parsed("caterpillar", online);
        assert_eq!(s.name, "caterpillar");
        assert_eq!(s.duration_ns, 60_000_000_000);
        assert_eq!(s.warmup_ns, 5_000_000_000);
        assert_eq!(s.baseline, "baseline");
        let names: Vec<&str> = s.configurations.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["baseline"], "{online}");
        let b = &s.configurations[0];
        // The best real-time set-up: FIFO 95 with PM QoS held.
        assert_eq!(
            (b.policy, b.priority, b.dma_latency),
            (Policy::Fifo, Some(95), true)
        );
        assert_eq!(b.probe_cpus, test, "{online}");
        assert_eq!(b.neighbour_cpus, neighbour, "{online}");
        assert_eq!(b.settings.irq_cpus, irq, "{online}");
        assert_eq!(b.settings.cache, []);
        assert_eq!(b.settings.cache_default, None);
        let sc: Vec<(&str, Option<&str>)> = s
            .scenarios
            .iter()
            .map(|c| (c.name.as_str(), c.builtin.as_deref()))
            .collect();
        assert_eq!(sc, [("idle", Some("idle")), ("neighbour", Some("cache"))]);
        assert_eq!(s.probes.len(), 1);
        let p = &s.probes[0];
        assert_eq!(
            p.params,
            ProbeParams::new(crate::chase::ChaseParams {
                buffer_bytes: None,
                iterations: Some(100),
                samples: Some(200),
                chase_length: 1024,
            })
        );
        assert_eq!(s.warnings.len(), warnings, "{online}: {:?}", s.warnings);
        assert_eq!(s.cells().len(), 2);
    }
    assert_eq!(
        parsed("caterpillar", "0-1").plan_text(0, 0),
        "plan: caterpillar
  2 cells (1 repetition × 1 configuration × 2 scenarios × 1 deployment × 1 probe)
  each cell: set-up 0s + warm-up 5s + 1m measured = 1m 05s
  total: 2m 10s
  (a chase cell with samples ends after them: the times are upper bounds)
  1/2  baseline/idle/host/chase       rep 1  (warm-up 5s + 200 samples, at most 1m)
  2/2  baseline/neighbour/host/chase  rep 1  (warm-up 5s + 200 samples, at most 1m)
"
    );
    assert!(preset_text(
        "caterpillar",
        &PresetMachine {
            online: &CpuList::parse("0-1").unwrap(),
            cache: None
        }
    )
    .unwrap()
    .contains(
        "\n# Configuration cache-reserved (half the cache for the test CPU) needs\n# cache allocation; see `jitterlab presets`.\n"
    ));
}

#[test]
fn caterpillar_reserves_half_the_cache_where_resctrl_offers_it() {
    use crate::resctrl::{CacheDefault, CacheGroup, CacheMask};
    let caps = seed_002_cache();
    let s = parsed_with("caterpillar", "0-3", Some(&caps));
    let names: Vec<&str> = s.configurations.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["baseline", "cache-reserved"]);
    let (b, r) = (&s.configurations[0], &s.configurations[1]);
    // The same roles and tuning; only the cache differs.
    assert_eq!(
        (
            &r.probe_cpus,
            &r.neighbour_cpus,
            &r.settings.irq_cpus,
            r.policy,
            r.priority,
            r.dma_latency
        ),
        (
            &b.probe_cpus,
            &b.neighbour_cpus,
            &b.settings.irq_cpus,
            b.policy,
            b.priority,
            b.dma_latency
        )
    );
    // [Red Hat caterpillar]: L2 ffc00 for the real-time group, 3ff for the default one.
    assert_eq!(
        r.settings.cache,
        [CacheGroup {
            name: "caterpillar".into(),
            cpus: vec![3],
            tasks: vec![],
            masks: vec![CacheMask {
                resource: Resource::L2,
                mask: 0xffc00,
                ids: None
            }],
            mb: None,
            exclusive: false,
        }]
    );
    assert_eq!(
        r.settings.cache_default,
        Some(CacheDefault {
            masks: vec![CacheMask {
                resource: Resource::L2,
                mask: 0x3ff,
                ids: None
            }],
            mb: None,
        })
    );
    assert_eq!(s.cells().len(), 4);
    assert_eq!(
        unavailable(
            "caterpillar",
            &PresetMachine {
                online: &CpuList::parse("0-3").unwrap(),
                cache: Some(&caps)
            }
        ),
        []
    );
    let text = preset_text(
        "caterpillar",
        &PresetMachine {
            online: &CpuList::parse("0-3").unwrap(),
            cache: Some(&caps),
        },
    )
    .unwrap();
    assert!(text.contains(
        "\n# Half the L2 reserved for the test CPU: ways 10-19 (mask ffc00) of 20 for\n# its resctrl group, ways 0-9 (mask 3ff) for every other CPU.\n"
    ), "{text}");
}

#[test]
fn caterpillar_prefers_the_l3_and_splits_an_odd_cache_with_the_extra_way_to_the_test_cpu() {
    use crate::resctrl::ResourceInfo;
    let mut caps = seed_002_cache();
    caps.resources.insert(
        0,
        ResourceInfo {
            resource: Resource::L3,
            num_closids: Some(16),
            cache: Some(CacheInfo {
                cbm_mask: 0x7ff,
                min_cbm_bits: 1,
                shareable_bits: 0,
                sparse_masks: false,
            }),
            bandwidth: None,
            ids: vec![0],
        },
    );
    let s = parsed_with("caterpillar", "0-3", Some(&caps));
    let r = &s.configurations[1];
    let masks = |m: &[crate::resctrl::CacheMask]| -> Vec<(Resource, u64)> {
        m.iter().map(|m| (m.resource, m.mask)).collect()
    };
    assert_eq!(masks(&r.settings.cache[0].masks), [(Resource::L3, 0x7e0)]);
    assert_eq!(
        masks(&r.settings.cache_default.as_ref().unwrap().masks),
        [(Resource::L3, 0x1f)]
    );
}

#[test]
fn caterpillar_says_why_the_cache_cannot_be_reserved() {
    use crate::resctrl::ResourceInfo;
    let online = CpuList::parse("0-1").unwrap();
    let why = |cache: Option<&Capabilities>| {
        let m = PresetMachine {
            online: &online,
            cache,
        };
        let u = unavailable("caterpillar", &m);
        assert_eq!(u.len(), 1);
        assert_eq!(u[0].0, "cache-reserved");
        // The text has no such configuration then.
        assert!(!preset_text("caterpillar", &m)
            .unwrap()
            .contains("name = \"cache-reserved\""));
        u[0].1.clone()
    };
    assert_eq!(
        why(None),
        "needs cache allocation (resctrl on CAT hardware), and this machine has none (no rdt_a, cat_l3 or cat_l2 flag in /proc/cpuinfo, no resctrl info directory; a virtual machine usually hides it)"
    );
    let unmounted = Capabilities {
        flags: vec!["cat_l3".into(), "rdt_a".into()],
        mounted: false,
        resources: vec![],
    };
    assert_eq!(
        why(Some(&unmounted)),
        "the CPU offers cache allocation (cat_l3, rdt_a) but resctrl is not mounted, so the cache's ways are unknown; mount it (mount -t resctrl resctrl /sys/fs/resctrl) and ask for the preset again"
    );
    let info = |resource| ResourceInfo {
        resource,
        num_closids: Some(8),
        cache: Some(CacheInfo {
            cbm_mask: 0xff,
            min_cbm_bits: 1,
            shareable_bits: 0,
            sparse_masks: false,
        }),
        bandwidth: None,
        ids: vec![0],
    };
    let cdp = Capabilities {
        flags: vec!["cat_l3".into(), "cdp_l3".into()],
        mounted: true,
        resources: vec![info(Resource::L3Code), info(Resource::L3Data)],
    };
    assert_eq!(
        why(Some(&cdp)),
        "resctrl is mounted with CDP (-o cdp), which splits each cache into code and data; remount it without -o cdp for this preset"
    );
    let mb_only = Capabilities {
        flags: vec!["mba".into()],
        mounted: true,
        resources: vec![ResourceInfo {
            resource: Resource::Mb,
            num_closids: Some(8),
            cache: None,
            bandwidth: None,
            ids: vec![0],
        }],
    };
    assert_eq!(
        why(Some(&mb_only)),
        "resctrl offers no cache to allocate (MB); this configuration reserves L3 or L2 ways"
    );
    let mut one_closid = seed_002_cache();
    one_closid.resources[0].num_closids = Some(1);
    assert_eq!(
        why(Some(&one_closid)),
        "resctrl offers 1 CLOSID, and a reserved half needs a group besides the default one"
    );
    let mut wide = seed_002_cache();
    wide.resources[0].cache = Some(CacheInfo {
        cbm_mask: 0xf,
        min_cbm_bits: 4,
        shareable_bits: 0,
        sparse_masks: false,
    });
    assert_eq!(
        why(Some(&wide)),
        "L2's 4 ways cannot be split in halves here: ways 2-3 (mask 0xc) hold 2 ways in a row; L2 needs at least 4 (info/L2/min_cbm_bits)"
    );
}

#[test]
fn epics_measures_the_three_latencies_idle_and_under_network_load() {
    for (online, probe, neighbours, warnings) in [
        ("0-1", vec![1], vec![0], 0),
        ("0-7", vec![7], (0..7).collect::<Vec<_>>(), 0),
        ("0", vec![0], vec![0], 1),
    ] {
        let s = parsed("epics", online);
        assert_eq!(s.name, "epics");
        assert_eq!(s.duration_ns, 60_000_000_000);
        assert_eq!(s.warmup_ns, 5_000_000_000);
        assert_eq!(s.configurations.len(), 1);
        let t = &s.configurations[0];
        assert_eq!(
            (t.name.as_str(), t.policy, t.priority, t.dma_latency),
            ("tuned", Policy::Fifo, Some(95), true)
        );
        assert_eq!(t.probe_cpus, probe, "{online}");
        assert_eq!(t.neighbour_cpus, neighbours, "{online}");
        let sc: Vec<(&str, Option<&str>)> = s
            .scenarios
            .iter()
            .map(|c| (c.name.as_str(), c.builtin.as_deref()))
            .collect();
        assert_eq!(sc, [("idle", Some("idle")), ("network", Some("network"))]);
        let source = |p: &crate::spec::ProbeSpec| {
            p.params
                .get::<crate::response::ResponseParams>()
                .and_then(|r| r.source)
                .map(|s| s.name())
        };
        let probes: Vec<(&str, ProbeKind, Option<u64>, Option<&str>)> = s
            .probes
            .iter()
            .map(|p| (p.name.as_str(), p.kind(), p.threshold_ns, source(p)))
            .collect();
        assert_eq!(
            probes,
            [
                ("timerlat", ProbeKind::Timerlat, Some(100_000), None),
                ("ctxswitch", ProbeKind::Ctxswitch, Some(100_000), None),
                ("response", ProbeKind::Response, Some(100_000), Some("udp")),
            ]
        );
        assert_eq!(s.probes[0].period_ns, 1_000_000);
        assert_eq!(s.probes[2].period_ns, 1_000_000);
        assert_eq!(s.warnings.len(), warnings, "{online}: {:?}", s.warnings);
        assert_eq!(s.cells().len(), 6);
    }
}

/// [Intel CODESYS]'s machine (Table 9): one L3 of 8 ways, 4 CLOSIDs, shareable
/// ways 0-1 (the `resctrl-l3-8ways` fixture).
fn seed_000_cache() -> Capabilities {
    use crate::resctrl::ResourceInfo;
    Capabilities {
        flags: vec!["cat_l3".into(), "cdp_l3".into(), "rdt_a".into()],
        mounted: true,
        resources: vec![ResourceInfo {
            resource: Resource::L3,
            num_closids: Some(4),
            cache: Some(CacheInfo {
                cbm_mask: 0xff,
                min_cbm_bits: 1,
                shareable_bits: 0x3,
                sparse_masks: false,
            }),
            bandwidth: None,
            ids: vec![0],
        }],
    }
}

/// Each cache group of a configuration as (group, CPUs, resource, mask),
/// and the default group's masks.
type Groups = (
    Vec<(String, Vec<usize>, Resource, u64)>,
    Vec<(Resource, u64)>,
);

fn groups_of(c: &crate::spec::Configuration) -> Groups {
    let groups = c
        .settings
        .cache
        .iter()
        .flat_map(|g| {
            g.masks
                .iter()
                .map(|m| (g.name.clone(), g.cpus.clone(), m.resource, m.mask))
        })
        .collect();
    let default = c
        .settings
        .cache_default
        .iter()
        .flat_map(|d| d.masks.iter().map(|m| (m.resource, m.mask)))
        .collect();
    (groups, default)
}

#[test]
fn codesys_reserves_ways_for_the_real_time_core_where_resctrl_offers_them() {
    let caps = seed_000_cache();
    let s = parsed_with("codesys", "0-3", Some(&caps));
    let names: Vec<&str> = s.configurations.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["baseline", "tuned", "cache-partitioned"]);
    let (t, p) = (&s.configurations[1], &s.configurations[2]);
    // Configuration 3 is Configuration 2 plus the partition.
    assert_eq!(
        (
            &p.probe_cpus,
            &p.neighbour_cpus,
            p.policy,
            p.priority,
            p.dma_latency
        ),
        (
            &t.probe_cpus,
            &t.neighbour_cpus,
            t.policy,
            t.priority,
            t.dma_latency
        )
    );
    assert_eq!(groups_of(t), (vec![], vec![]));
    assert_eq!(
        groups_of(p),
        (
            vec![("codesys".to_string(), vec![3], Resource::L3, 0xf0)],
            vec![(Resource::L3, 0x0f)]
        )
    );
    assert_eq!(s.cells().len(), 3);
    let online = CpuList::parse("0-3").unwrap();
    let m = PresetMachine {
        online: &online,
        cache: Some(&caps),
    };
    assert_eq!(unavailable("codesys", &m), []);
    let text = preset_text("codesys", &m).unwrap();
    assert!(
        text.contains(
            "\n# Configuration 3 (Table 9): the real-time set-up with ways of the L3\n# reserved for the real-time core: ways 4-7 (mask f0) of 8 for its\n# resctrl group, ways 0-3 (mask f) for every other CPU.\n[[configuration]]\nname = \"cache-partitioned\"\nprobe_cpus = \"3\"\nneighbour_cpus = \"0-2\"\npolicy = \"fifo\"\npriority = 95\ndma_latency = true\n\n[[configuration.cache]]\ngroup = \"codesys\"\ncpus = \"3\"\nl3 = { ways = \"4-7\" }\n\n[configuration.cache_default]\nl3 = { ways = \"0-3\" }\n\n[[scenario]]\n"
        ),
        "{text}"
    );
    // [Red Hat caterpillar]'s machine: the L2 (no L3 to allocate), the upper half.
    let s = parsed_with("codesys", "0-1", Some(&seed_002_cache()));
    assert_eq!(
        groups_of(&s.configurations[2]),
        (
            vec![("codesys".to_string(), vec![1], Resource::L2, 0xffc00)],
            vec![(Resource::L2, 0x3ff)]
        )
    );
}

#[test]
fn codesys_without_cache_allocation_says_so_in_its_text() {
    let online = CpuList::parse("0-1").unwrap();
    let m = PresetMachine {
        online: &online,
        cache: None,
    };
    let text = preset_text("codesys", &m).unwrap();
    assert!(
        text.contains("\n# Configuration 3 (cache-partitioned: cache ways reserved for the real-time\n# core, Table 9) needs cache allocation; see `jitterlab presets`.\n\n[[scenario]]\n"),
        "{text}"
    );
    assert!(!text.contains("name = \"cache-partitioned\""));
    // The same reasons as caterpillar's, for the same machines.
    let mut one_closid = seed_000_cache();
    one_closid.resources[0].num_closids = Some(1);
    let m = PresetMachine {
        online: &online,
        cache: Some(&one_closid),
    };
    assert_eq!(
        unavailable("codesys", &m),
        [(
            "cache-partitioned".to_string(),
            "resctrl offers 1 CLOSID, and a reserved half needs a group besides the default one"
                .to_string()
        )]
    );
}

#[test]
fn redhat_places_controller_io_simulator_and_neighbours_on_every_machine_size() {
    use crate::roundtrip::{RoundtripParams, Transport};
    for (online, controller, io, neighbours, warnings) in [
        ("0-3", vec![3], 2, vec![0, 1], 0),
        ("0-2", vec![2], 1, vec![0], 0),
        ("0-1", vec![1], 0, vec![0], 0),
        ("0-7", vec![7], 6, (0..6).collect::<Vec<_>>(), 0),
        ("0", vec![0], 0, vec![0], 1),
    ] {
        let s = parsed("redhat", online);
        assert_eq!(s.name, "redhat");
        assert_eq!(s.duration_ns, 60_000_000_000);
        assert_eq!(s.warmup_ns, 5_000_000_000);
        assert_eq!(s.baseline, "baseline");
        assert_eq!(s.deployments, REDHAT_DEPLOYMENTS, "{online}");
        let names: Vec<&str> = s.configurations.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["baseline"], "{online}");
        let b = &s.configurations[0];
        assert_eq!(
            (b.policy, b.priority, b.dma_latency),
            (Policy::Fifo, Some(95), true)
        );
        assert_eq!(b.probe_cpus, controller, "{online}");
        assert_eq!(b.neighbour_cpus, neighbours, "{online}");
        assert_eq!(groups_of(b), (vec![], vec![]));
        let sc: Vec<(&str, Option<&str>)> = s
            .scenarios
            .iter()
            .map(|c| (c.name.as_str(), c.builtin.as_deref()))
            .collect();
        assert_eq!(
            sc,
            [("idle", Some("idle")), ("noisy-neighbour", Some("redhat"))]
        );
        assert_eq!(s.probes.len(), 1);
        let p = &s.probes[0];
        assert_eq!((p.kind(), p.period_ns), (ProbeKind::Roundtrip, 5_000_000));
        assert_eq!(
            p.params.get::<RoundtripParams>(),
            Some(&RoundtripParams {
                io_period_ns: 500_000,
                scan_ns: 500_000,
                network_ns: 100_000,
                transport: Transport::Udp,
                io_cpu: Some(io),
                ..RoundtripParams::default()
            }),
            "{online}"
        );
        let budget = p
            .params
            .get::<RoundtripParams>()
            .unwrap()
            .budget(p.period_ns);
        assert_eq!(budget.total_ns(), 6_700_000);
        assert_eq!(
            budget.formula(),
            "500 µs + 100 µs + 5000 µs + 500 µs + 100 µs + 500 µs = 6.7 ms"
        );
        assert_eq!(s.warnings.len(), warnings, "{online}: {:?}", s.warnings);
        assert_eq!(s.cells().len(), 2 * REDHAT_DEPLOYMENTS.len());
    }
}

#[test]
fn redhat_says_where_the_io_simulator_runs_and_where_the_container_goes() {
    let text = |online: &str| {
        let online = CpuList::parse(online).unwrap();
        preset_text(
            "redhat",
            &PresetMachine {
                online: &online,
                cache: None,
            },
        )
        .unwrap()
    };
    let two = text("0-1");
    assert!(two.contains("\n# Two CPUs: the I/O simulator shares CPU 0 with the neighbours (the\n# controller keeps CPU 1 to itself), so the noisy neighbour delays the\n# I/O loop too; a machine with three CPUs or more gives it its own.\n"), "{two}");
    assert!(two.contains("\nio_cpu = \"0\"\n"), "{two}");
    let four = text("0-3");
    assert!(
        four.contains("\n# The I/O simulator has CPU 2 to itself, apart from the neighbours.\n"),
        "{four}"
    );
    assert!(text("0").contains("\n# One CPU: the I/O simulator, the controller and the neighbours share CPU\n# 0; the figures show contention, not isolation.\n"));
    // The controller on the host and in a container.
    assert_eq!(REDHAT_DEPLOYMENTS, ["host", "container"]);
    assert!(
        four.contains("\n# The controller on the host, then in a podman container (the seed's vPLC;\n# the I/O simulator stays on the host); a host that cannot run containers\n# skips those cells and says why.\ndeployments = [\"host\", \"container\"]\n"),
        "{four}"
    );
    assert!(four.contains("\n# Configuration cache-partitioned (the seed's CAT: cache ways reserved for the\n# real-time CPUs) needs cache allocation; see `jitterlab presets`.\n"), "{four}");
}

#[test]
fn redhat_reserves_ways_for_the_controller_and_the_io_simulator() {
    // [Intel CODESYS]'s machine, four CPUs: two ways each, as in its Table 9.
    let caps = seed_000_cache();
    let s = parsed_with("redhat", "0-3", Some(&caps));
    let names: Vec<&str> = s.configurations.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["baseline", "cache-partitioned"]);
    let (b, p) = (&s.configurations[0], &s.configurations[1]);
    assert_eq!(
        (
            &p.probe_cpus,
            &p.neighbour_cpus,
            p.policy,
            p.priority,
            p.dma_latency
        ),
        (
            &b.probe_cpus,
            &b.neighbour_cpus,
            b.policy,
            b.priority,
            b.dma_latency
        )
    );
    assert_eq!(
        groups_of(p),
        (
            vec![
                ("redhat-controller".to_string(), vec![3], Resource::L3, 0xc0),
                ("redhat-io".to_string(), vec![2], Resource::L3, 0x30),
            ],
            vec![(Resource::L3, 0x0f)]
        )
    );
    assert_eq!(s.cells().len(), 4 * REDHAT_DEPLOYMENTS.len());
    let online = CpuList::parse("0-3").unwrap();
    let m = PresetMachine {
        online: &online,
        cache: Some(&caps),
    };
    assert_eq!(unavailable("redhat", &m), []);
    let text = preset_text("redhat", &m).unwrap();
    assert!(text.contains(
        "\n# The seed's CAT: the same set-up with ways of the L3 (8 in all) reserved\n# for the real-time CPUs, each in a resctrl group of its own:\n#   ways 6-7 (mask c0) for the controller's CPU 3\n#   ways 4-5 (mask 30) for the I/O simulator's CPU 2\n#   ways 0-3 (mask f) for every other CPU.\n[[configuration]]\nname = \"cache-partitioned\"\n"
    ), "{text}");

    // Two CPUs: the I/O simulator shares the neighbours' CPU, so only the
    // controller gets ways: the upper half.
    let s = parsed_with("redhat", "0-1", Some(&caps));
    assert_eq!(
        groups_of(&s.configurations[1]),
        (
            vec![("redhat-controller".to_string(), vec![1], Resource::L3, 0xf0)],
            vec![(Resource::L3, 0x0f)]
        )
    );

    // [Red Hat caterpillar]'s L2 (20 ways): five each, the lower ten for the rest.
    let s = parsed_with("redhat", "0-3", Some(&seed_002_cache()));
    assert_eq!(
        groups_of(&s.configurations[1]),
        (
            vec![
                (
                    "redhat-controller".to_string(),
                    vec![3],
                    Resource::L2,
                    0xf8000
                ),
                ("redhat-io".to_string(), vec![2], Resource::L2, 0x07c00),
            ],
            vec![(Resource::L2, 0x3ff)]
        )
    );

    // Nine ways: the upper five split three (the controller) and two.
    let mut nine = seed_000_cache();
    nine.resources[0].cache.as_mut().unwrap().cbm_mask = 0x1ff;
    let s = parsed_with("redhat", "0-3", Some(&nine));
    assert_eq!(
        groups_of(&s.configurations[1]),
        (
            vec![
                (
                    "redhat-controller".to_string(),
                    vec![3],
                    Resource::L3,
                    0x1c0
                ),
                ("redhat-io".to_string(), vec![2], Resource::L3, 0x030),
            ],
            vec![(Resource::L3, 0x00f)]
        )
    );
}

#[test]
fn redhat_says_why_the_ways_cannot_be_reserved() {
    let online = CpuList::parse("0-3").unwrap();
    let why = |cache: &Capabilities| {
        let m = PresetMachine {
            online: &online,
            cache: Some(cache),
        };
        assert!(!preset_text("redhat", &m)
            .unwrap()
            .contains("name = \"cache-partitioned\""));
        let u = unavailable("redhat", &m);
        assert_eq!(u.len(), 1);
        assert_eq!(u[0].0, "cache-partitioned");
        u[0].1.clone()
    };
    let mut two_closids = seed_000_cache();
    two_closids.resources[0].num_closids = Some(2);
    assert_eq!(
        why(&two_closids),
        "resctrl offers 2 CLOSIDs, and reserving ways for 2 real-time CPUs needs 3: a group for each besides the default one"
    );
    let mut two_ways = seed_000_cache();
    two_ways.resources[0].cache.as_mut().unwrap().cbm_mask = 0x3;
    assert_eq!(
        why(&two_ways),
        "L3's 2 ways cannot give 2 real-time CPUs ways of their own here: its upper half holds 1 way and each real-time CPU needs one at least"
    );
    let mut min3 = seed_000_cache();
    min3.resources[0].cache.as_mut().unwrap().min_cbm_bits = 3;
    assert_eq!(
        why(&min3),
        "L3's 8 ways cannot give 2 real-time CPUs ways of their own here: ways 6-7 (mask 0xc0) hold 2 ways in a row; L3 needs at least 3 (info/L3/min_cbm_bits)"
    );
    let unmounted = Capabilities {
        flags: vec!["cat_l3".into(), "rdt_a".into()],
        mounted: false,
        resources: vec![],
    };
    assert_eq!(
        why(&unmounted),
        "the CPU offers cache allocation (cat_l3, rdt_a) but resctrl is not mounted, so the cache's ways are unknown; mount it (mount -t resctrl resctrl /sys/fs/resctrl) and ask for the preset again"
    );
}
