//! Preset `redhat`: [Red Hat controls] — the screw-to-screw round trip over OPC UA
//! PubSub (an I/O simulator and a soft-PLC controller, asynchronous loops)
//! checked against its worst-case budget of 6.7 ms, idle and beside the
//! seed's noisy neighbour, without and with cache ways reserved for the
//! real-time CPUs (the seed's CAT).
//!
//! CPU placement ([Red Hat controls] gives the control node's real-time cores their
//! own cache ways and puts the noisy neighbour on its best-effort cores):
//!
//! | online CPUs | controller | I/O simulator | neighbours | ways reserved for |
//! |---|---|---|---|---|
//! | three or more | the last | the one before it | the rest | controller and I/O simulator |
//! | two | the last | the other (shared with the neighbours) | the other | the controller |
//! | one | CPU 0 | CPU 0 | CPU 0 | the controller |
//!
//! On two CPUs the I/O simulator shares the neighbours' CPU: reserving ways
//! for that CPU would hand them to the neighbours too, so only the
//! controller's CPU gets ways of its own there, and the preset says so.
//!
//! The seed compares the controller on the host with the controller in a
//! podman container; [`DEPLOYMENTS`] is the one place that lists where the
//! controller runs.
//!
//! The documents cited here are listed in `docs/design.md`.

use super::cache::{cache_tables, partition};
use super::{neighbour_line, placement, PresetMachine};
use crate::defaults::PRIORITY;
use crate::resctrl::ways_text;
use crate::units::CpuList;

/// Where the preset runs the controller: [Red Hat controls] measures it on the host
/// and in a podman container (the I/O simulator stays on the host).
pub const DEPLOYMENTS: &[&str] = &["host", "container"];

/// The name of the configuration with cache ways reserved for the
/// real-time CPUs.
pub(super) const CACHE_PARTITIONED: &str = "cache-partitioned";

/// [Red Hat controls]'s CPUs on this machine (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Roles {
    /// The controller's CPU (the probe CPU).
    pub controller: usize,
    /// The I/O simulator's CPU.
    pub io: usize,
    /// The neighbours' CPUs; `None` on a one-CPU machine.
    pub neighbours: Option<String>,
    /// The CPUs that get cache ways of their own, with their group names:
    /// the controller's, and the I/O simulator's where it has a CPU of its
    /// own.
    pub realtime: Vec<(&'static str, usize)>,
}

/// [Red Hat controls]'s CPUs on a machine with these online CPUs.
pub(super) fn roles(online: &CpuList) -> Roles {
    let (controller, neighbours) = placement(online);
    let cpus: Vec<usize> = online.iter().collect();
    match cpus.as_slice() {
        [.., io, last] if cpus.len() >= 3 => {
            let rest: CpuList = online.iter().filter(|c| c != io && c != last).collect();
            Roles {
                controller,
                io: *io,
                neighbours: Some(rest.to_string()),
                realtime: vec![("redhat-controller", controller), ("redhat-io", *io)],
            }
        }
        [first, _] => Roles {
            controller,
            io: *first,
            neighbours,
            realtime: vec![("redhat-controller", controller)],
        },
        _ => Roles {
            controller,
            io: controller,
            neighbours,
            realtime: vec![("redhat-controller", controller)],
        },
    }
}

/// Why this machine cannot run [`CACHE_PARTITIONED`], if it cannot.
pub(super) fn unavailable(machine: &PresetMachine) -> Option<String> {
    partition(machine.cache, roles(machine.online).realtime.len()).err()
}

/// The `deployments = [...]` line, with what the container cells are.
fn deployments_line() -> String {
    let list: Vec<String> = DEPLOYMENTS.iter().map(|d| format!("\"{d}\"")).collect();
    format!(
        "# The controller on the host, then in a podman container (the seed's vPLC;\n# the I/O simulator stays on the host); a host that cannot run containers\n# skips those cells and says why.\ndeployments = [{}]",
        list.join(", ")
    )
}

/// [Red Hat controls]'s experiment on this machine.
pub(super) fn text(machine: &PresetMachine) -> String {
    let r = roles(machine.online);
    let nl = neighbour_line(&r.neighbours);
    let controller = r.controller;
    let io = r.io;
    let io_comment = match machine.online.len() {
        0 | 1 => format!(
            "# One CPU: the I/O simulator, the controller and the neighbours share CPU\n# {controller}; the figures show contention, not isolation."
        ),
        2 => format!(
            "# Two CPUs: the I/O simulator shares CPU {io} with the neighbours (the\n# controller keeps CPU {controller} to itself), so the noisy neighbour delays the\n# I/O loop too; a machine with three CPUs or more gives it its own."
        ),
        _ => format!(
            "# The I/O simulator has CPU {io} to itself, apart from the neighbours."
        ),
    };
    let configuration = |name: &str| {
        format!(
            "[[configuration]]\nname = \"{name}\"\nprobe_cpus = \"{controller}\"\n{nl}\npolicy = \"fifo\"\npriority = {PRIORITY}\ndma_latency = true\n"
        )
    };
    let partitioned = match partition(machine.cache, r.realtime.len()) {
        Ok(p) => {
            let mut who = Vec::new();
            for ((group, cpu), mask) in r.realtime.iter().zip(&p.reserved) {
                let role = if *group == "redhat-io" {
                    "the I/O simulator's"
                } else {
                    "the controller's"
                };
                who.push(format!(
                    "#   ways {} (mask {mask:x}) for {role} CPU {cpu}\n",
                    ways_text(*mask)
                ));
            }
            format!(
                "# The seed's CAT: the same set-up with ways of the {} ({} in all) reserved\n# for the real-time CPUs, each in a resctrl group of its own:\n{}#   ways {} (mask {:x}) for every other CPU.\n{}{}",
                p.resource.name(),
                p.ways,
                who.concat(),
                ways_text(p.rest),
                p.rest,
                configuration(CACHE_PARTITIONED),
                cache_tables(&p, &r.realtime),
            )
        }
        Err(_) => format!(
            "# Configuration {CACHE_PARTITIONED} (the seed's CAT: cache ways reserved for the\n# real-time CPUs) needs cache allocation; see `jitterlab presets`.\n"
        ),
    };
    format!(
        r#"# Preset redhat: screw-to-screw round trip over OPC UA PubSub, after "Real-time
# Linux for controls: Industrial control performance testing with Red Hat and
# Intel" (Red Hat and Intel).
# An I/O simulator publishes its input image every 500 us (UADP over UDP,
# between two network namespaces joined by a veth pair); the controller, a
# soft-PLC task with a 5 ms period and a 500 us scan, subscribes, runs its
# scan and publishes its output back; the simulator applies it. The input
# changes at random instants, and each change's T1 -> T4 (screw to screw)
# is checked against the worst case of the asynchronous loops:
#   OPC UA + Network + Controller rate + Controller scan time + Network + OPC UA
#   = 500 us + 100 us + 5000 us + 500 us + 100 us + 500 us = 6.7 ms
# Reports give per cell T1 -> T4 min, median, p99, max and the samples over
# the budget, T2 -> T3 (the controller), the task's max wake-up jitter, the
# standard deviation of its execution time, and the budget line.
# The source measured an hour per cell; edit duration for that.
name = "redhat"
duration = "60s"
warmup = "5s"
baseline = "baseline"
{deployments}

# The controller on CPU {controller}, at SCHED_FIFO {PRIORITY} with /dev/cpu_dma_latency held.
{io_comment}
{baseline}
{partitioned}
# The reference: no neighbour.
[[scenario]]
name = "idle"
builtin = "idle"

# The seed's noisy neighbour: stress-ng CPU 80 %, memory, VM, L2 and LLC
# thrash on the neighbour CPUs, and CPU 80 % at normal priority on the
# controller's CPU.
[[scenario]]
name = "noisy-neighbour"
builtin = "redhat"

[[probe]]
kind = "roundtrip"
# The controller's period and scan.
period = "5ms"
scan = "500us"
# The I/O simulator's publish and apply period (the budget's OPC UA term).
io_period = "500us"
# The budget's network term, each way.
network_budget = "100us"
io_cpu = "{io}"
"#,
        deployments = deployments_line(),
        baseline = configuration("baseline"),
    )
}
