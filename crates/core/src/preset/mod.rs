//! Presets: ready-made bench specs that reproduce a published table on the
//! machine at hand (`jitterlab bench --preset NAME`, `jitterlab presets`).
//!
//! A preset is nothing but spec text: [`preset_text`] writes the TOML a user
//! would have written for this machine ([`PresetMachine`]: its online CPUs
//! and what it offers for cache allocation), and the caller runs it through
//! [`crate::spec::parse`] like any user spec. So a preset is checked by the
//! same rules, can be printed, edited and saved as a starting point, and the
//! plan it shows is the plan that runs. One file per preset, named after it;
//! `cache` reserves cache ways for the real-time CPUs of the presets that
//! compare a cache-partitioned configuration.
//!
//! CPU placement: the probe runs on the last online CPU, neighbours on the
//! others; `caterpillar` also gives the IRQs a CPU of their own where there
//! are three or more ([Red Hat caterpillar]'s test, neighbour and IRQ cores), and
//! `redhat` its I/O simulator ([Red Hat controls]'s second real-time loop). On a
//! one-CPU machine everything shares CPU 0 and the plan says so.
//!
//! The source documents measured for hours (48 h, 10 million cycles); the
//! presets keep their probe parameters and conditions but measure each cell
//! for 60 s after a 5 s warm-up (`caterpillar`: [Red Hat caterpillar]'s 200 samples, with
//! 60 s as the cap), so a whole table takes minutes; `bench --duration` or an
//! edited copy of the text (`jitterlab presets --show NAME`) makes it a soak.
//!
//! `powerlink` measures its load cells for 30 s each (its module doc says
//! why), and lets a user choose the load table's rows and columns
//! ([`PresetChoice`], [`chosen_text`]).
//!
//! Some configurations of a table need machine features this machine lacks
//! (the cache-partitioned ones need cache allocation); [`unavailable`] lists
//! them with the reason so reports print that row as N/A instead of
//! silently dropping it.
//!
//! The documents cited here are listed in `docs/design.md`.

mod cache;
mod caterpillar;
mod codesys;
mod epics;
mod powerlink;
mod redhat;
mod source;
#[cfg(test)]
mod tests;

use crate::units::CpuList;

pub use powerlink::{
    PresetChoice, SeedLoad, SeedLoadTable, LOAD_DURATION, SEED_004_TABLE_2, SEED_004_TABLE_3,
    SEED_CNS, SEED_CYCLES_NS,
};
pub use redhat::DEPLOYMENTS as REDHAT_DEPLOYMENTS;
pub use source::{provenance, Provenance};

/// What `jitterlab presets` lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PresetInfo {
    /// The name given to `--preset`.
    pub name: &'static str,
    /// The table it reproduces.
    pub reproduces: &'static str,
    /// One line on what it runs.
    pub summary: &'static str,
    /// Whether it takes a [`PresetChoice`]: the rows and columns of its
    /// load table (`bench --cycles`, `--cns`).
    pub choice: bool,
}

/// Every preset, in the order `jitterlab presets` lists them (by seed).
pub const PRESETS: &[PresetInfo] = &[
    PresetInfo {
        name: "codesys",
        reproduces: "Table 10, Cycle Time and Jitter: a soft-PLC task beside a stress-ng noisy neighbour, per configuration",
        summary: "cyclic probe, 4ms period, 500us scan over 1MiB, beside the codesys stress-ng load; configurations baseline (SCHED_OTHER), tuned (SCHED_FIFO 95, cpu_dma_latency 0) and cache-partitioned (tuned with cache ways reserved for the probe CPU; needs resctrl); 60s per cell",
        choice: false,
    },
    PresetInfo {
        name: "redhat",
        reproduces: "Figures 2-4: the screw-to-screw round trip (T1 to T4) against its 6.7 ms worst case, T2 to T3, the controller's max wake-up jitter and execution-time deviation, idle and beside a noisy neighbour, with and without cache allocation",
        summary: "roundtrip probe over OPC UA PubSub (UADP/UDP on a veth pair): controller 5ms period, 500us scan, I/O simulator every 500us, network budget 100us; SCHED_FIFO 95; configurations baseline and cache-partitioned (needs resctrl), scenarios idle and the redhat stress-ng load; 60s per cell",
        choice: false,
    },
    PresetInfo {
        name: "caterpillar",
        reproduces: "the pointer-chase jitter in CPU cycles of a test core beside a cache-thrashing neighbour, baseline vs half the cache reserved (resctrl)",
        summary: "chase probe at SCHED_FIFO 95 with cpu_dma_latency 0 (200 samples of 100 chases) on the test CPU, IRQs on their own CPU, idle and beside stress-ng --cache; configurations baseline and cache-reserved (needs resctrl)",
        choice: false,
    },
    PresetInfo {
        name: "epics",
        reproduces: "Tables 1, 4 and 5: interrupt, context-switch and total response latency (min, median, max, % over 100us), private vs loaded network",
        summary: "timerlat (needs the kernel's timerlat tracer), ctxswitch and response (UDP from a second namespace) probes, SCHED_FIFO 95, idle and under a network flood; 60s per cell",
        choice: false,
    },
    PresetInfo {
        name: "powerlink",
        reproduces: "Tables 2-3, System Load: the POWERLINK managing node's CPU load per cycle time x number of controlled nodes, N/A where the cycle cannot be held, against the seed's figures; Tables 4-5, SoC Jitter: min cycle, max cycle and deviation of a 500us cycle under seven stress conditions",
        summary: "netcycle probes (a POWERLINK MN polling emulated CNs over a veth pair): 250us-10ms x 3-40 CNs idle only, 30s each, and 500us x 3 CNs under idle, cpu, disk, usb, network, scheduling and misc loads, beside the cyclic timer task (500us, 50us scan over 64KiB) of the earlier preset; tuned; 60s per condition cell",
        choice: true,
    },
];

/// The machine a preset is fitted to.
#[derive(Debug, Clone, Copy)]
pub struct PresetMachine<'a> {
    /// Its online CPUs.
    pub online: &'a CpuList,
    /// What it offers for cache allocation; `None` when it has none.
    pub cache: Option<&'a crate::resctrl::Capabilities>,
}

/// The probe CPU and the neighbour CPUs for a machine: the last online CPU
/// probes, the others carry neighbours; `None` for the neighbours when the
/// machine has one CPU (the spec's default then shares it, with a warning).
fn placement(online: &CpuList) -> (usize, Option<String>) {
    let last = online.iter().last().unwrap_or(0);
    let rest: CpuList = online.iter().filter(|&c| c != last).collect();
    let neighbours = (!rest.is_empty()).then(|| rest.to_string());
    (last, neighbours)
}

/// `neighbour_cpus = "…"` line, or a comment saying why there is none.
fn neighbour_line(neighbours: &Option<String>) -> String {
    match neighbours {
        Some(n) => format!("neighbour_cpus = \"{n}\""),
        None => "# one CPU: neighbours share the probe CPU (the plan warns)".to_string(),
    }
}

/// The preset's spec text for this machine. `None` for an unknown name.
pub fn preset_text(name: &str, machine: &PresetMachine) -> Option<String> {
    Some(match name {
        "codesys" => codesys::text(machine),
        "redhat" => redhat::text(machine),
        "caterpillar" => caterpillar::text(machine),
        "epics" => epics::text(machine),
        "powerlink" => powerlink::text(machine, &PresetChoice::default()),
        _ => return None,
    })
}

/// The preset's spec text for this machine with the user's `choice` of its
/// load table's rows and columns. `None` for an unknown name; an error,
/// naming the presets that take one, when `choice` is not empty and the
/// preset takes none ([`PresetInfo::choice`]).
pub fn chosen_text(
    name: &str,
    machine: &PresetMachine,
    choice: &PresetChoice,
) -> Option<Result<String, String>> {
    let info = PRESETS.iter().find(|p| p.name == name)?;
    if choice.is_empty() {
        return preset_text(name, machine).map(Ok);
    }
    if !info.choice {
        let takers: Vec<&str> = PRESETS
            .iter()
            .filter(|p| p.choice)
            .map(|p| p.name)
            .collect();
        return Some(Err(format!(
            "preset {name} has no load table to choose rows and columns of; --cycles and --cns apply to --preset {}",
            takers.join(" or ")
        )));
    }
    Some(Ok(powerlink::text(machine, choice)))
}

/// Configurations a preset describes that this machine cannot run, with the
/// reason, so reports print them as N/A (e.g. the cache-partitioned
/// configurations of `codesys` and `redhat` where there is no cache
/// allocation).
pub fn unavailable(name: &str, machine: &PresetMachine) -> Vec<(String, String)> {
    let missing = match name {
        "codesys" => codesys::unavailable(machine).map(|why| (codesys::CACHE_PARTITIONED, why)),
        "redhat" => redhat::unavailable(machine).map(|why| (redhat::CACHE_PARTITIONED, why)),
        "caterpillar" => {
            caterpillar::unavailable(machine).map(|why| (caterpillar::CACHE_RESERVED, why))
        }
        _ => None,
    };
    missing
        .map(|(c, why)| (c.to_string(), why))
        .into_iter()
        .collect()
}
