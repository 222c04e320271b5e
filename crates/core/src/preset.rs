//! Presets: ready-made bench specs that reproduce a published table on the
//! machine at hand (`jitterlab bench --preset NAME`, `jitterlab presets`).
//!
//! A preset is nothing but spec text: [`preset_text`] writes the TOML a user
//! would have written for this machine ([`PresetMachine`]: its online CPUs
//! and what it offers for cache allocation), and the caller runs it through
//! [`crate::spec::parse`] like any user spec. So a preset is checked by the
//! same rules, can be printed, edited and saved as a starting point, and the
//! plan it shows is the plan that runs.
//!
//! CPU placement: the probe runs on the last online CPU, neighbours on the
//! others; `caterpillar` also gives the IRQs a CPU of their own where there
//! are three or more (seed 002's test, neighbour and IRQ cores). On a
//! one-CPU machine everything shares CPU 0 and the plan says so.
//!
//! The source documents measured for hours (48 h, 10 million cycles); the
//! presets keep their probe parameters and conditions but measure each cell
//! for 60 s after a 5 s warm-up (`caterpillar`: seed 002's 200 samples, with
//! 60 s as the cap), so a whole table takes minutes; `bench --duration` or an
//! edited copy of the text (`jitterlab presets --show NAME`) makes it a soak.
//!
//! Some configurations of a table need machine features this machine lacks;
//! [`unavailable`] lists them with the reason so reports print that row as
//! N/A instead of silently dropping it.

use crate::defaults::PRIORITY;
use crate::resctrl::{ways_text, CacheInfo, Capabilities, Resource};
use crate::units::CpuList;

/// What `jitterlab presets` lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PresetInfo {
    /// The name given to `--preset`.
    pub name: &'static str,
    /// The table it reproduces.
    pub reproduces: &'static str,
    /// One line on what it runs.
    pub summary: &'static str,
}

/// Every preset, in the order `jitterlab presets` lists them (by seed).
pub const PRESETS: &[PresetInfo] = &[
    PresetInfo {
        name: "codesys",
        reproduces: "Table 10, Cycle Time and Jitter: a soft-PLC task beside a stress-ng noisy neighbour, per configuration",
        summary: "cyclic probe, 4ms period, 500us scan over 1MiB, beside the codesys stress-ng load; configurations baseline (SCHED_OTHER) and tuned (SCHED_FIFO 95, cpu_dma_latency 0); 60s per cell",
    },
    PresetInfo {
        name: "caterpillar",
        reproduces: "the pointer-chase jitter in CPU cycles of a test core beside a cache-thrashing neighbour, baseline vs half the cache reserved (resctrl)",
        summary: "chase probe at SCHED_FIFO 95 (200 samples of 100 chases) on the test CPU, IRQs on their own CPU, idle and beside stress-ng --cache; configurations baseline and cache-reserved (needs resctrl)",
    },
    PresetInfo {
        name: "epics",
        reproduces: "Tables 1, 4 and 5: interrupt, context-switch and total response latency (min, median, max, % over 100us), private vs loaded network",
        summary: "timerlat (needs the kernel's timerlat tracer), ctxswitch and response (UDP from a second namespace) probes, SCHED_FIFO 95, idle and under a network flood; 60s per cell",
    },
    PresetInfo {
        name: "powerlink",
        reproduces: "Tables 4-5, SoC Jitter: min cycle, max cycle and deviation of a 500us cycle under seven stress conditions",
        summary: "cyclic probe, 500us period, 50us scan over 64KiB, tuned, under idle, cpu, disk, usb, network, scheduling and misc loads; 60s per cell",
    },
];

/// The machine a preset is fitted to.
#[derive(Debug, Clone, Copy)]
pub struct PresetMachine<'a> {
    /// Its online CPUs.
    pub online: &'a CpuList,
    /// What it offers for cache allocation; `None` when it has none.
    pub cache: Option<&'a Capabilities>,
}

/// The probe CPU and the neighbour CPUs for a machine: the last online CPU
/// probes, the others carry neighbours; `None` for the neighbours when the
/// machine has one CPU (the spec's default then shares it, with a warning).
fn placement(online: &CpuList) -> (String, Option<String>) {
    let last = online.iter().last().unwrap_or(0);
    let rest: CpuList = online.iter().filter(|&c| c != last).collect();
    let neighbours = (!rest.is_empty()).then(|| rest.to_string());
    (last.to_string(), neighbours)
}

/// `neighbour_cpus = "…"` line, or a comment saying why there is none.
fn neighbour_line(neighbours: &Option<String>) -> String {
    match neighbours {
        Some(n) => format!("neighbour_cpus = \"{n}\""),
        None => "# one CPU: neighbours share the probe CPU (the plan warns)".to_string(),
    }
}

/// Seed 002's roles: the test CPU (the last online), the neighbour CPU (the
/// one before it) and the IRQ CPU (the first online CPU, where the kernel's
/// housekeeping already lives). Two CPUs: the IRQs share the neighbour's
/// CPU; one CPU: everything shares it (`None` for neighbour and IRQ lines).
fn roles(online: &CpuList) -> (usize, Option<usize>, Option<usize>) {
    let cpus: Vec<usize> = online.iter().collect();
    match cpus.as_slice() {
        [] => (0, None, None),
        [only] => (*only, None, None),
        [first, .., neighbour, test] => (*test, Some(*neighbour), Some(*first)),
        [first, test] => (*test, Some(*first), Some(*first)),
    }
}

/// Half a cache for the test CPU, half for everything else (seed 002's
/// `L2:0=ffc00` for its group and `L2:0=3ff` for the default group).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct CacheHalves {
    /// The cache (L3 where offered, else L2).
    resource: Resource,
    /// Its ways.
    ways: u32,
    /// The upper half: the test CPU's group.
    test: u64,
    /// The lower half: the default group.
    rest: u64,
}

/// The name of `caterpillar`'s configuration with half the cache reserved.
const CACHE_RESERVED: &str = "cache-reserved";

/// Where the machine can reserve half a cache for the test CPU: the L3 when
/// resctrl offers it, else the L2, split into an upper half (the test CPU's
/// group) and a lower half (every other CPU). The error says why not.
fn cache_halves(cache: Option<&Capabilities>) -> Result<CacheHalves, String> {
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
        if n < 2 {
            return Err(format!(
                "resctrl offers {n} CLOSID, and a reserved half needs a group besides the default one"
            ));
        }
    }
    let ways = info.ways();
    let mut rest = 0;
    for bit in (0..64)
        .filter(|b| info.cbm_mask & (1 << b) != 0)
        .take(ways as usize / 2)
    {
        rest |= 1 << bit;
    }
    let test = info.cbm_mask & !rest;
    for mask in [test, rest] {
        info.check(resource, mask)
            .map_err(|e| format!("{resource}'s {ways} ways cannot be split in halves here: {e}"))?;
    }
    Ok(CacheHalves {
        resource,
        ways,
        test,
        rest,
    })
}

/// The preset's spec text for this machine. `None` for an unknown name.
pub fn preset_text(name: &str, machine: &PresetMachine) -> Option<String> {
    let (probe, neighbours) = placement(machine.online);
    let nl = neighbour_line(&neighbours);
    match name {
        "codesys" => Some(format!(
            r#"# Preset codesys: Table 10, Cycle Time and Jitter.
# A soft-PLC task with a 4 ms period beside a stress-ng noisy neighbour,
# measured per configuration; reports give max/min periodic jitter and
# max/average cycle (execution) time, each also relative to the baseline.
# The source measured 48 h per configuration; edit duration for a soak.
name = "codesys"
duration = "60s"
warmup = "5s"
baseline = "baseline"

# Configuration 1: no real-time tuning.
[[configuration]]
name = "baseline"
probe_cpus = "{probe}"
{nl}
policy = "other"
nice = 0
dma_latency = false

# Configuration 2: the real-time set-up (the source's firmware real-time mode
# is not something software can switch; this is the Linux side of it).
[[configuration]]
name = "tuned"
probe_cpus = "{probe}"
{nl}
policy = "fifo"
priority = {PRIORITY}
dma_latency = true

# Configuration 3 (per-core cache partitioning) needs resctrl; see
# `jitterlab presets`.

[[scenario]]
name = "codesys"
builtin = "codesys"

[[probe]]
kind = "cyclic"
period = "4ms"
scan = "500us"
working_set = "1MiB"
"#
        )),
        "caterpillar" => Some(caterpillar(machine)),
        "epics" => Some(format!(
            r#"# Preset epics: seed 003, Tables 1, 4 and 5.
# Interrupt, context-switch and total response latency of a real-time
# thread with a quiet network (the source's private network) and under a
# network flood from a second namespace (its loaded public network);
# reports give min, median, max and % over 100 us per latency.
# The source measured one and two hours; edit duration for that.
name = "epics"
duration = "60s"
warmup = "5s"

[[configuration]]
name = "tuned"
probe_cpus = "{probe}"
{nl}
policy = "fifo"
priority = {PRIORITY}
dma_latency = true

[[scenario]]
name = "idle"
builtin = "idle"

[[scenario]]
name = "network"
builtin = "network"

# Table 1, interrupt latency: the kernel's timerlat tracer (rtla) times a
# timer interrupt's handler (irq) and the thread it wakes (thread). Cells
# are skipped, with the reason, where the kernel has no timerlat tracer.
[[probe]]
kind = "timerlat"
period = "1ms"
threshold = "100us"

# Table 4, context-switch latency: two SCHED_FIFO threads on the probe CPU
# hand a token back and forth; every hand-over is a sample.
[[probe]]
kind = "ctxswitch"
threshold = "100us"

# Table 5, total response latency: a UDP datagram sent from another network
# namespace wakes the thread, which answers; also the kernel's receive
# timestamp to the thread running (Tables 2-3, bottom half to user).
[[probe]]
kind = "response"
source = "udp"
period = "1ms"
threshold = "100us"
"#
        )),
        "powerlink" => {
            let mut text = format!(
                r#"# Preset powerlink: Tables 4-5, SoC Jitter.
# A 500 us cycle under seven stress conditions; reports give min cycle,
# max cycle and deviation max |T_per - T0| per condition.
# The source measured 10 million cycles (83 min); edit duration for that.
name = "powerlink"
duration = "60s"
warmup = "5s"

[[configuration]]
name = "tuned"
probe_cpus = "{probe}"
{nl}
policy = "fifo"
priority = {PRIORITY}
dma_latency = true
"#
            );
            for condition in [
                "idle",
                "cpu",
                "disk",
                "usb",
                "network",
                "scheduling",
                "misc",
            ] {
                text.push_str(&format!(
                    "\n[[scenario]]\nname = \"{condition}\"\nbuiltin = \"{condition}\"\n"
                ));
            }
            text.push_str(
                r#"
[[probe]]
kind = "cyclic"
period = "500us"
scan = "50us"
working_set = "64KiB"
"#,
            );
            Some(text)
        }
        _ => None,
    }
}

/// Seed 002's experiment on this machine.
fn caterpillar(machine: &PresetMachine) -> String {
    let (test, neighbour, irq) = roles(machine.online);
    let placement = match (neighbour, irq) {
        (Some(n), Some(i)) => format!("probe_cpus = \"{test}\"\nneighbour_cpus = \"{n}\"\nirq_cpus = \"{i}\""),
        _ => format!(
            "probe_cpus = \"{test}\"\n# one CPU: the neighbour and the IRQs share the probe CPU (the plan warns)"
        ),
    };
    let configuration = |name: &str| {
        format!(
            "[[configuration]]\nname = \"{name}\"\n{placement}\npolicy = \"fifo\"\npriority = {PRIORITY}\ndma_latency = false\n"
        )
    };
    let mut text = format!(
        r#"# Preset caterpillar: seed 002, cache-sensitive pointer chase.
# A pointer chase through one random cycle of cache lines (no prefetcher
# helps), timed in CPU cycles, on the test CPU at SCHED_FIFO 95 as `chrt 95`
# runs it; a stress-ng cache thrasher on the neighbour CPU; every movable
# IRQ on the IRQ CPU. A sample is 100 timed chases; its jitter is max - min
# of them, in cycles; 200 samples per cell. The buffer is half the cache the
# neighbour shares with the test CPU (add buffer = "..." to the probe to
# change it). Reports give chase cycles and sample jitter per cell, each
# configuration against the baseline.
name = "caterpillar"
# A cap: each cell ends after its 200 samples, or at 60 s.
duration = "60s"
warmup = "5s"
baseline = "baseline"

# No tuning beyond the roles: the caches are shared by every CPU.
{}"#,
        configuration("baseline")
    );
    match cache_halves(machine.cache) {
        Ok(h) => {
            let key = h.resource.key();
            let name = h.resource.name();
            text.push_str(&format!(
                r#"
# Half the {name} reserved for the test CPU: ways {} (mask {:x}) of {} for
# its resctrl group, ways {} (mask {:x}) for every other CPU.
{}
[[configuration.cache]]
group = "caterpillar"
cpus = "{test}"
{key} = {{ ways = "{}" }}

[configuration.cache_default]
{key} = {{ ways = "{}" }}
"#,
                ways_text(h.test),
                h.test,
                h.ways,
                ways_text(h.rest),
                h.rest,
                configuration(CACHE_RESERVED),
                ways_text(h.test),
                ways_text(h.rest),
            ));
        }
        Err(_) => text.push_str(&format!(
            "\n# Configuration {CACHE_RESERVED} (half the cache for the test CPU) needs\n# cache allocation; see `jitterlab presets`.\n"
        )),
    }
    text.push_str(
        r#"
# The reference: no neighbour.
[[scenario]]
name = "idle"
builtin = "idle"

# The noisy neighbour: stress-ng thrashing the cache on the neighbour CPU.
[[scenario]]
name = "neighbour"
builtin = "cache"

[[probe]]
kind = "chase"
iterations = 100
samples = 200
"#,
    );
    text
}

/// Configurations a preset describes that this machine cannot run, with the
/// reason, so reports print them as N/A (e.g. the codesys table's
/// cache-partitioned configuration needs resctrl).
pub fn unavailable(name: &str, machine: &PresetMachine) -> Vec<(String, String)> {
    match name {
        "codesys" => vec![(
            "cache-partitioned".to_string(),
            "needs cache allocation (resctrl on CAT hardware); examples/cache.toml is that configuration for a machine that has it"
                .to_string(),
        )],
        "caterpillar" => match cache_halves(machine.cache) {
            Ok(_) => Vec::new(),
            Err(why) => vec![(CACHE_RESERVED.to_string(), why)],
        },
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
    fn every_listed_preset_has_text_and_unknown_has_none() {
        let online = CpuList::parse("0-1").unwrap();
        let machine = PresetMachine {
            online: &online,
            cache: None,
        };
        let names: Vec<&str> = PRESETS.iter().map(|p| p.name).collect();
        assert_eq!(names, ["codesys", "caterpillar", "epics", "powerlink"]);
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
    fn powerlink_reproduces_tables_4_and_5_on_every_machine_size() {
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
            let p = &s.probes[0];
            assert_eq!(
                (p.kind(), p.period_ns, p.scan()),
                (ProbeKind::Cyclic, 500_000, Some((64 << 10, 50_000)))
            );
            assert_eq!(s.warnings.len(), warnings, "{online}: {:?}", s.warnings);
            assert_eq!(s.cells().len(), 7);
        }
    }

    #[test]
    fn one_cpu_machine_warns_that_neighbours_share_the_probe_cpu() {
        assert_eq!(
            parsed("powerlink", "0").warnings,
            ["configuration tuned: no online CPU is left besides probe CPU 0, so neighbours share it; the figures show direct contention, not isolation"]
        );
    }

    #[test]
    fn codesys_lists_the_cache_partitioned_configuration_as_unavailable() {
        let online = CpuList::parse("0-1").unwrap();
        let m = PresetMachine {
            online: &online,
            cache: None,
        };
        assert_eq!(
            unavailable("codesys", &m),
            [(
                "cache-partitioned".to_string(),
                "needs cache allocation (resctrl on CAT hardware); examples/cache.toml is that configuration for a machine that has it"
                    .to_string()
            )]
        );
        assert_eq!(unavailable("powerlink", &m), []);
        assert_eq!(unavailable("epics", &m), []);
        assert_eq!(unavailable("nope", &m), []);
    }

    /// Seed 002's machine: L2 allocation only, 20 ways on 4 ids, 8 CLOSIDs.
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
            assert_eq!(
                (b.policy, b.priority, b.dma_latency),
                (Policy::Fifo, Some(95), false)
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
                ProbeParams::Chase {
                    buffer_bytes: None,
                    iterations: Some(100),
                    samples: Some(200),
                    chase_length: 1024,
                }
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
        // Seed 002: L2 ffc00 for the real-time group, 3ff for the default one.
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
            let source = |p: &crate::spec::ProbeSpec| match p.params {
                ProbeParams::Response { source, .. } => source.map(|s| s.name()),
                _ => None,
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
}
