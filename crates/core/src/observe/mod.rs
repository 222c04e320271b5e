//! Observing a task jitterlab did not start: the kernel's scheduler, timer,
//! IRQ and softirq events, as the tracer hands them over ([`event`]), are
//! turned into the same per-cycle figures our own periodic probes measure
//! (release, start, end, latency, period, jitter, execution time), and into
//! what ran on the task's CPU between a late cycle's release and its start.
//!
//! The tracer (the binary's `trace` module, over the kernel's perf events)
//! decodes raw tracepoint records into [`event::Event`]s with one clock,
//! `CLOCK_MONOTONIC`, the clock a task's `clock_nanosleep` and the
//! kernel's hrtimer expiries use; everything here is pure arithmetic over
//! that stream, so recorded sequences test it exactly.

pub mod brief;
pub mod cycles;
pub mod detail;
pub mod filter;
pub mod params;
pub mod placement;
pub mod spec;

pub use self::spec::{ObserveParams, ObserveTarget};


use crate::probe::descriptor::{ns, InContainer, ProbeDescriptor, ReportWords, PERIODIC_OUTLIERS};

// ---------------------------------------------------------------------------
// The kind's descriptor.

/// `observe`: a running task's cycles from the kernel's tracepoints
/// (`crate::observe`): the periodic metrics in their order, then the
/// latency split as rtla timerlat splits it (timer IRQ latency, thread
/// latency; a cycle not released by a timer has neither) and the time the
/// task was preempted within its cycle. Its samples are the observed
/// cycles, not releases of a schedule of ours (`periodic` is false: the
/// task keeps its own schedule); T0 is given or inferred, which the
/// result's detail says.
pub const OBSERVE: ProbeDescriptor = ProbeDescriptor {
    name: "observe",
    summary: "a running task's cycles from kernel tracepoints, and what delayed its late ones",
    metrics: &[
        ns("latency", false, true),
        ns("period", false, false),
        ns("jitter", true, true),
        ns("exec", false, false),
        ns("irq_latency", false, false),
        ns("thread_latency", false, false),
        ns("preempted", false, false),
    ],
    main_latency: Some("latency"),
    periodic: false,
    calibrated: false,
    every_probe_cpu: false,
    listed: true,
    words: ReportWords {
        period: None,
        samples: "cycles",
        sample: "sample",
        outliers: PERIODIC_OUTLIERS,
    },
    params: &params::PARAMS,
    container: InContainer::NotApplicable(
        "observe is N/A in a container: it reads the host kernel's tracepoints, which a container neither has nor may have; observe the container's task from the host with --pid, --tid or --comm",
    ),
    verdicts: None,
    netns: None,
};

#[cfg(test)]
mod tests;
