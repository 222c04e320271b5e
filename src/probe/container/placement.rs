//! Where a container cell's probe goes: the CPUs its container gets
//! ([`container_cpus`]), and what keeps a probe out of a container beyond
//! its kind ([`not_applicable`]). The host side's settings (a
//! configuration's IRQ moves, cpufreq, sysctls) stay on the host: the
//! container runs the probe, not the configuration.

use jitterlab_core::response::ResponseParams;
use jitterlab_core::spec::{CellPlan, ProbeSpec, Spec};

use crate::probe::plan::RunPlan;

/// Why `probe` cannot run in a container although its kind can: its
/// parameters say ([`jitterlab_core::spec::Params::not_in_container`]: the response probe's UDP
/// source, a periodic probe's `explain`).
pub fn not_applicable(probe: &ProbeSpec) -> Option<String> {
    probe.params.not_in_container()
}

/// The event CPU of a response probe: as `probe::response` chooses it.
fn event_cpu(spec: &Spec, cell: &CellPlan, plan: &RunPlan) -> Option<usize> {
    let event_cpu = spec.probes[cell.probe]
        .params
        .get::<ResponseParams>()?
        .event_cpu;
    let cpu = plan.cpus[0];
    Some(
        event_cpu
            .or_else(|| spec.neighbour_cpus(cell).into_iter().next())
            .unwrap_or(cpu),
    )
}

/// The CPUs of the container (`--cpuset-cpus`): the cell's probe CPUs,
/// and the response probe's event CPU, whose thread makes the events
/// inside too.
pub fn container_cpus(spec: &Spec, cell: &CellPlan, plan: &RunPlan) -> Vec<usize> {
    let mut cpus = plan.cpus.clone();
    if let Some(e) = event_cpu(spec, cell, plan) {
        cpus.push(e);
    }
    cpus.sort_unstable();
    cpus.dedup();
    cpus
}
