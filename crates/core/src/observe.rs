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

pub mod cycles;
pub mod decode;
pub mod detail;
pub mod event;
pub mod explain;
pub mod filter;
pub mod format;
pub mod page;

#[cfg(test)]
mod tests;
