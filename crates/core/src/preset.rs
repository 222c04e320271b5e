//! Presets: ready-made bench specs that reproduce a published table on the
//! machine at hand (`jitterlab bench --preset NAME`, `jitterlab presets`).
//!
//! A preset is nothing but spec text: [`preset_text`] writes the TOML a user
//! would have written for this machine (probe on the last online CPU,
//! neighbours on the others; on a one-CPU machine everything shares CPU 0
//! and the plan says so), and the caller runs it through
//! [`crate::spec::parse`] like any user spec. So a preset is checked by the
//! same rules, can be printed, edited and saved as a starting point, and the
//! plan it shows is the plan that runs.
//!
//! The source documents measured for hours (48 h, 10 million cycles); the
//! presets keep their probe parameters and conditions but measure each cell
//! for 60 s after a 5 s warm-up, so a whole table takes minutes; `bench
//! --duration` or an edited copy of the text (`jitterlab presets --show
//! NAME`) makes it a soak.
//!
//! Some configurations of a table need machine features jitterlab cannot set
//! up yet; [`unavailable`] lists them with the reason so reports print that
//! row as N/A instead of silently dropping it.

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

/// Every preset, in the order `jitterlab presets` lists them.
pub const PRESETS: &[PresetInfo] = &[
    PresetInfo {
        name: "codesys",
        reproduces: "Table 10, Cycle Time and Jitter: a soft-PLC task beside a stress-ng noisy neighbour, per configuration",
        summary: "cyclic probe, 4ms period, 500us scan over 1MiB, beside the codesys stress-ng load; configurations baseline (SCHED_OTHER) and tuned (SCHED_FIFO 95, cpu_dma_latency 0); 60s per cell",
    },
    PresetInfo {
        name: "powerlink",
        reproduces: "Tables 4-5, SoC Jitter: min cycle, max cycle and deviation of a 500us cycle under seven stress conditions",
        summary: "cyclic probe, 500us period, 50us scan over 64KiB, tuned, under idle, cpu, disk, usb, network, scheduling and misc loads; 60s per cell",
    },
];

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

/// The preset's spec text for a machine with these online CPUs (probe CPU
/// = the last online CPU, neighbours = the others; on a 1-CPU machine
/// everything shares CPU 0). `None` for an unknown name.
pub fn preset_text(name: &str, online: &CpuList) -> Option<String> {
    let (probe, neighbours) = placement(online);
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
priority = 95
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
priority = 95
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

/// Configurations a preset describes that this machine cannot run, with the
/// reason, so reports print them as N/A (e.g. the codesys table's
/// cache-partitioned configuration needs resctrl).
pub fn unavailable(name: &str) -> Vec<(String, String)> {
    match name {
        "codesys" => vec![(
            "cache-partitioned".to_string(),
            "needs cache allocation (resctrl on CAT hardware); examples/cache.toml is that configuration for a machine that has it"
                .to_string(),
        )],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::ProbeKind;
    use crate::spec::{parse, Policy, SpecContext};

    const BUILTINS: &[&str] = &[
        "idle",
        "cpu",
        "disk",
        "usb",
        "network",
        "scheduling",
        "misc",
        "codesys",
    ];

    fn parsed(name: &str, online: &str) -> crate::spec::Spec {
        let online = CpuList::parse(online).unwrap();
        let text = preset_text(name, &online).unwrap();
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
        let names: Vec<&str> = PRESETS.iter().map(|p| p.name).collect();
        assert_eq!(names, ["codesys", "powerlink"]);
        for p in PRESETS {
            assert!(preset_text(p.name, &online).is_some(), "{}", p.name);
        }
        assert_eq!(preset_text("nope", &online), None);
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
                (p.kind, p.period_ns, p.scan_ns, p.working_set_bytes),
                (ProbeKind::Cyclic, 4_000_000, 500_000, 1 << 20)
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
                (p.kind, p.period_ns, p.scan_ns, p.working_set_bytes),
                (ProbeKind::Cyclic, 500_000, 50_000, 64 << 10)
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
        assert_eq!(
            unavailable("codesys"),
            [(
                "cache-partitioned".to_string(),
                "needs cache allocation (resctrl on CAT hardware); examples/cache.toml is that configuration for a machine that has it"
                    .to_string()
            )]
        );
        assert_eq!(unavailable("powerlink"), []);
        assert_eq!(unavailable("nope"), []);
    }
}
