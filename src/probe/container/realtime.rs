//! Real time or nothing: which of the real-time defaults a container
//! cell's configuration asks for the probe inside did not get
//! ([`missing_defaults`]), what fails the cell (module doc of
//! `probe::container`), so host and container never compare FIFO with
//! SCHED_OTHER.

use jitterlab_core::result::RealtimeReport;
use jitterlab_core::spec::{Configuration, Policy};

/// The required real-time defaults the probe inside did not get although
/// `config` asks for them, each `name: detail`. A configuration that asks
/// for no real-time policy, or no PM QoS request (an untuned baseline),
/// gets the same on the host, so their absence is no failure.
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
