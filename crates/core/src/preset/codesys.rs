//! Preset `codesys`: [Intel CODESYS] Table 10 — a soft-PLC task's periodic jitter
//! and cycle time beside a stress-ng noisy neighbour, per configuration:
//! no tuning, the real-time set-up, and the real-time set-up with cache
//! ways reserved for the real-time core (Table 9), where the machine has
//! cache allocation.
//!
//! The documents cited here are listed in `docs/design.md`.

use super::cache::{cache_tables, partition};
use super::{neighbour_line, placement, PresetMachine};
use crate::defaults::PRIORITY;
use crate::resctrl::ways_text;

/// The name of the configuration with ways reserved per real-time core
/// (the source's Configuration 3).
pub(super) const CACHE_PARTITIONED: &str = "cache-partitioned";

/// Why this machine cannot run [`CACHE_PARTITIONED`], if it cannot: the
/// probe CPU is the one real-time core.
pub(super) fn unavailable(machine: &PresetMachine) -> Option<String> {
    partition(machine.cache, 1).err()
}

/// [Intel CODESYS]'s experiment on this machine.
pub(super) fn text(machine: &PresetMachine) -> String {
    let (probe, neighbours) = placement(machine.online);
    let nl = neighbour_line(&neighbours);
    let tuned = |name: &str| {
        format!(
            "[[configuration]]\nname = \"{name}\"\nprobe_cpus = \"{probe}\"\n{nl}\npolicy = \"fifo\"\npriority = {PRIORITY}\ndma_latency = true\n"
        )
    };
    let partitioned = match partition(machine.cache, 1) {
        Ok(p) => {
            format!(
                "# Configuration 3 (Table 9): the real-time set-up with ways of the {}\n# reserved for the real-time core: ways {} (mask {:x}) of {} for its\n# resctrl group, ways {} (mask {:x}) for every other CPU.\n{}{}",
                p.resource.name(),
                ways_text(p.reserved[0]),
                p.reserved[0],
                p.ways,
                ways_text(p.rest),
                p.rest,
                tuned(CACHE_PARTITIONED),
                cache_tables(&p, &[("codesys", probe)]),
            )
        }
        Err(_) => format!(
            "# Configuration 3 ({CACHE_PARTITIONED}: cache ways reserved for the real-time\n# core, Table 9) needs cache allocation; see `jitterlab presets`.\n"
        ),
    };
    format!(
        r#"# Preset codesys: Table 10, Cycle Time and Jitter, of "Improving Real-Time
# Performance of CODESYS Control Applications with Intel’s Real-Time
# Technologies" (Intel Corporation).
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
{}
{partitioned}
[[scenario]]
name = "codesys"
builtin = "codesys"

[[probe]]
kind = "cyclic"
period = "4ms"
scan = "500us"
working_set = "1MiB"
"#,
        tuned("tuned")
    )
}
