//! Preset `caterpillar`: [Red Hat caterpillar] — a cache-sensitive pointer chase on a
//! test CPU beside a cache-thrashing neighbour, with the IRQs on a CPU of
//! their own, baseline against half the cache reserved for the test CPU.
//!
//! Every configuration runs with the best real-time set-up the spec can
//! ask for: SCHED_FIFO 95 and `/dev/cpu_dma_latency` held at 0 (PM QoS), so
//! that no C-state exit lands in a chase; a machine that cannot hold it
//! says so in the report's real-time line. The chase never sleeps, so the
//! kernel's real-time throttling stops it for the hold-off of every period
//! (50 ms of every second by default); the preset leaves
//! `rt_runtime_us` as the machine has it — turning throttling off is the
//! user's decision — and the report names the stalls it caused.
//!
//! The documents cited here are listed in `docs/design.md`.

use super::cache::{cache_tables, partition};
use super::PresetMachine;
use crate::defaults::PRIORITY;
use crate::resctrl::ways_text;
use crate::units::CpuList;

/// The name of `caterpillar`'s configuration with half the cache reserved.
pub(super) const CACHE_RESERVED: &str = "cache-reserved";

/// [Red Hat caterpillar]'s roles: the test CPU (the last online), the neighbour CPU (the
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

/// Why this machine cannot run [`CACHE_RESERVED`], if it cannot.
pub(super) fn unavailable(machine: &PresetMachine) -> Option<String> {
    partition(machine.cache, 1).err()
}

/// [Red Hat caterpillar]'s experiment on this machine.
pub(super) fn text(machine: &PresetMachine) -> String {
    let (test, neighbour, irq) = roles(machine.online);
    let placement = match (neighbour, irq) {
        (Some(n), Some(i)) => format!("probe_cpus = \"{test}\"\nneighbour_cpus = \"{n}\"\nirq_cpus = \"{i}\""),
        _ => format!(
            "probe_cpus = \"{test}\"\n# one CPU: the neighbour and the IRQs share the probe CPU (the plan warns)"
        ),
    };
    let configuration = |name: &str| {
        format!(
            "[[configuration]]\nname = \"{name}\"\n{placement}\npolicy = \"fifo\"\npriority = {PRIORITY}\ndma_latency = true\n"
        )
    };
    let mut text = format!(
        r#"# Preset caterpillar: cache-sensitive pointer chase, after a Red Hat blog
# post (the caterpillar benchmark with Intel Cache Allocation Technology on
# Red Hat Device Edge; title and author not given in the stored text).
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
    match partition(machine.cache, 1) {
        Ok(h) => {
            let test_ways = h.reserved[0];
            text.push_str(&format!(
                "\n# Half the {} reserved for the test CPU: ways {} (mask {:x}) of {} for\n# its resctrl group, ways {} (mask {:x}) for every other CPU.\n{}{}",
                h.resource.name(),
                ways_text(test_ways),
                test_ways,
                h.ways,
                ways_text(h.rest),
                h.rest,
                configuration(CACHE_RESERVED),
                cache_tables(&h, &[("caterpillar", test)]),
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
