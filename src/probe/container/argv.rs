//! What runs inside a container cell: the `jitterlab run KIND …` argument
//! vector that measures exactly the cell's probe ([`inner_argv`]), the
//! CPUs the container gets ([`container_cpus`]), what keeps a probe out of
//! a container beyond its kind ([`not_applicable`]), and which real-time
//! defaults the probe inside must have had ([`missing_defaults`]).
//!
//! The argument vector is the inverse of `cli::one_cell`: every value of
//! the cell's probe, configuration and plan becomes the flag the command
//! line turns back into the same one-cell spec (a test checks the round
//! trip for every kind). The host side's settings (a configuration's IRQ
//! moves, cpufreq, sysctls) stay on the host: the container runs the probe,
//! not the configuration. Always added: `--no-db` (the host stores) and
//! `--stream` (the rows and the result come back on stdout,
//! `probe::container::stream`); `--calibration` hands over the scan calibration a
//! bench made once, idle, so a container cell's scan does the same work as
//! the host cells'.

use anyhow::Result;
use jitterlab_core::chase::ChaseParams;
use jitterlab_core::cyclic::CyclicParams;
use jitterlab_core::response::{ResponseParams, ResponseSource};
use jitterlab_core::result::{Calibration, ProbeKind, RealtimeReport};
use jitterlab_core::roundtrip::RoundtripParams;
use jitterlab_core::spec::{CellPlan, Configuration, Policy, ProbeSpec, Spec};
use jitterlab_core::units::{format_duration_exact, CpuList};

use crate::error::bad;
use crate::probe::plan::{RunPlan, Stop};

/// Why `probe` cannot run in a container although its kind can: the
/// response probe's UDP source makes network namespaces of its own, which
/// a container may not.
pub fn not_applicable(probe: &ProbeSpec) -> Option<String> {
    match probe.params.get::<ResponseParams>() {
        Some(ResponseParams {
            source: Some(ResponseSource::Udp),
            ..
        }) => Some(
            "response with source udp is N/A in a container: it makes two network namespaces and a veth pair, which a container may not; use source eventfd, or measure it on the host".into(),
        ),
        _ => None,
    }
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

/// The arguments of `jitterlab` inside the container (module doc):
/// `run KIND`, the probe's own flags, the common ones, `--no-db
/// --stream`. `online`: the machine's online CPUs (a chase whose
/// neighbours are not the other online CPUs names its neighbour).
pub fn inner_argv(
    spec: &Spec,
    cell: &CellPlan,
    plan: &RunPlan,
    stop: Stop,
    calibrated: Option<&[Calibration]>,
    online: &CpuList,
) -> Result<Vec<String>> {
    let probe = &spec.probes[cell.probe];
    let config = &spec.configurations[cell.configuration];
    let kind = probe.kind();
    let t = |ns: u64| format_duration_exact(ns);
    let mut v: Vec<String> = vec!["run".into(), kind.name().into()];
    let mut flag = |name: &str, value: String| {
        v.push(format!("--{name}"));
        v.push(value);
    };
    let cpu = plan.cpus[0];
    let mut samples_stop = false;
    match kind {
        ProbeKind::Cyclic => {
            let CyclicParams {
                scan_ns,
                working_set_bytes,
            } = probe.params.get().expect("cyclic parameters");
            flag("period", t(probe.period_ns));
            flag("cpu", cpu.to_string());
            flag("scan", t(*scan_ns));
            flag(
                "working-set",
                jitterlab_core::limits::format_size(*working_set_bytes),
            );
        }
        ProbeKind::Chase => {
            let ChaseParams {
                buffer_bytes,
                iterations,
                samples,
                chase_length,
            } = probe.params.get().expect("chase parameters");
            let neighbours = spec.neighbour_cpus(cell);
            let others: Vec<usize> = online.iter().filter(|&c| c != cpu).collect();
            match (buffer_bytes, neighbours.first()) {
                (None, Some(&n)) if neighbours != others => {
                    flag("roles", format!("test={cpu},neighbour={n}"))
                }
                _ => flag("cpu", cpu.to_string()),
            }
            if let Some(b) = buffer_bytes {
                flag("buffer", jitterlab_core::limits::format_size(*b));
            }
            flag(
                "iterations",
                iterations
                    .unwrap_or(jitterlab_core::defaults::ITERATIONS)
                    .to_string(),
            );
            flag("chase-length", chase_length.to_string());
            match samples {
                Some(n) => {
                    flag("samples", n.to_string());
                    samples_stop = true;
                }
                None if stop == Stop::Samples => samples_stop = true,
                None => {}
            }
        }
        ProbeKind::Response => {
            if not_applicable(probe).is_some() {
                return Err(bad(not_applicable(probe).unwrap_or_default()));
            }
            flag("cpu", cpu.to_string());
            let e = event_cpu(spec, cell, plan).unwrap_or(cpu);
            flag("event-cpu", e.to_string());
            flag("source", ResponseSource::Eventfd.name().into());
            flag("interval", t(probe.period_ns));
        }
        ProbeKind::Roundtrip => {
            let r: &RoundtripParams = probe.params.get().expect("round-trip parameters");
            // The controller's side; the host adds where it runs (`--role
            // controller --interface …`) and the samples pipe
            // (`probe::roundtrip::container`).
            flag("cpu", cpu.to_string());
            flag("controller-period", t(probe.period_ns));
            flag("scan", t(r.scan_ns));
            flag(
                "working-set",
                jitterlab_core::limits::format_size(r.working_set_bytes),
            );
            flag("io-period", t(r.io_period_ns));
            flag("network-budget", t(r.network_ns));
            if let Some(o) = r.opcua_ns {
                flag("opcua", t(o));
            }
            if let Some(b) = r.budget_ns {
                flag("budget", t(b));
            }
            flag("transport", r.transport.name().into());
            for (side, d) in [("input", &r.input), ("output", &r.output)] {
                if let Some(u) = &d.url {
                    flag(&format!("{side}-url"), u.clone());
                }
                flag(&format!("{side}-publisher-id"), d.publisher_id.clone());
                flag(
                    &format!("{side}-writer-group"),
                    d.writer_group_id.to_string(),
                );
                flag(&format!("{side}-writer"), d.dataset_writer_id.to_string());
                flag(&format!("{side}-fields"), d.fields.join(","));
                flag(&format!("{side}-encoding"), d.encoding.clone());
                let header = if d.header.is_empty() {
                    "none".to_string()
                } else {
                    d.header.join(",")
                };
                flag(&format!("{side}-header"), header);
            }
            flag(
                "map",
                format!("{}={}", r.input.marker_field, r.output.marker_field),
            );
        }
        ProbeKind::Timerlat | ProbeKind::Netcycle | ProbeKind::Observe => {
            return Err(bad(match kind.descriptor().container {
                jitterlab_core::probe::InContainer::NotApplicable(why) => why.to_string(),
                _ => kind.name().to_string(),
            }));
        }
        ProbeKind::Wakeup => {
            flag("interval", t(probe.period_ns));
            let cpus: CpuList = plan.cpus.iter().copied().collect();
            flag("cpus", cpus.to_string());
        }
        ProbeKind::Ctxswitch => {
            flag("cpu", cpu.to_string());
            flag("interval", t(probe.period_ns));
        }
        #[cfg(feature = "test-probe")]
        ProbeKind::Sleep => flag("cpu", cpu.to_string()),
    }
    // How it ends.
    if !samples_stop {
        match stop {
            Stop::Cycles(n) => flag("cycles", n.to_string()),
            // A monitor (Stop::Never) runs only on the host.
            Stop::Duration | Stop::Samples | Stop::Never => {
                flag("duration", t(spec.cell_duration_ns(cell)))
            }
        }
    }
    // Scheduling, as the configuration asks.
    flag("policy", config.policy.name().into());
    match config.policy {
        Policy::Other => flag("nice", config.nice.unwrap_or(0).to_string()),
        _ => flag(
            "priority",
            config
                .priority
                .unwrap_or(jitterlab_core::defaults::PRIORITY)
                .to_string(),
        ),
    }
    if kind != ProbeKind::Timerlat {
        flag("window", t(probe.window_ns));
        flag("threshold", t(probe.threshold()));
        flag("outliers", probe.outliers.to_string());
    }
    // A round trip's latency limit is its budget (`--budget` above).
    let max_latency = match kind {
        ProbeKind::Roundtrip => None,
        _ => probe.max_latency_ns,
    };
    for (name, limit) in [
        ("max-latency", max_latency),
        ("max-jitter", probe.max_jitter_ns),
        ("max-exec", probe.max_exec_ns),
    ] {
        if let Some(l) = limit {
            flag(name, t(l));
        }
    }
    if let Some(cals) = calibrated.filter(|_| plan.scan.is_some()) {
        flag("calibration", serde_json::to_string(cals)?);
    }
    if plan.params.strict {
        v.push("--strict".into());
    }
    if !config.dma_latency {
        v.push("--no-dma-latency".into());
    }
    v.push("--no-db".into());
    v.push("--stream".into());
    Ok(v)
}

/// The required real-time defaults the probe inside did not get although
/// `config` asks for them, each `name: detail`: what fails a container
/// cell (module doc of `probe::container`). A configuration that asks for
/// no real-time policy, or no PM QoS request (an untuned baseline), gets
/// the same on the host, so their absence is no failure.
pub fn missing_defaults(report: &RealtimeReport, config: &Configuration) -> Vec<String> {
    report
        .defaults
        .iter()
        .filter(|d| d.required && !d.applied)
        .filter(|d| match d.name.as_str() {
            "scheduler" => config.policy != Policy::Other,
            "cpu_dma_latency" => config.dma_latency,
            _ => true,
        })
        .map(|d| format!("{}: {}", d.name, d.detail))
        .collect()
}
