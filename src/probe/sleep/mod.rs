//! `sleep`: a probe compiled only for tests (`--features test-probe`), and
//! the worked example of "How to add a probe" in the module doc of
//! [`crate::probe`].
//!
//! Each sample sleeps one period (the probe's `period_ns`, 1 ms: neither a
//! spec nor `jitterlab run sleep` sets another) until an absolute
//! `CLOCK_MONOTONIC` deadline and measures how late the thread woke past
//! it: the metric `oversleep`, ns, of its descriptor
//! (`jitterlab_core::probe::SLEEP`). One thread on the first probe CPU; it
//! ends after `--cycles` samples, or when the lifecycle raises the stop
//! flag (the duration, a signal). It changes nothing on the machine, so it
//! has nothing to tear down.
//!
//! Its two parameters (`jitterlab_core::sleep::SleepParams`, declared in
//! core's `sleep/` folder): `slack`, added to each interval, and `spin`,
//! busy-waiting the interval instead of sleeping. Its summary says both
//! ([`report`]).

pub mod flags;
pub mod report;

use std::sync::atomic::Ordering::Relaxed;

use anyhow::{bail, Result};
use jitterlab_core::recorder::{slots, Sample, SampleSink};
use jitterlab_core::sleep::SleepParams;
use jitterlab_sys as sys;

use crate::probe::{Cell, Probe, Probes, Recorder, Report, Start};
use crate::system::journal::Journal;

/// The sleep probe of a cell: one thread, sleeping one period (and its
/// slack) per sample.
pub fn build(cell: &Cell<'_>, _journal: &mut Journal) -> Result<Probes> {
    let params = cell.spec.probes[cell.cell.probe]
        .params
        .get::<SleepParams>()
        .cloned()
        .unwrap_or_default();
    Ok(Probes::threads(vec![Box::new(SleepProbe {
        interval_ns: cell.plan.period,
        params,
        count: cell.plan.params.cycles,
    })]))
}

/// Sleeps (or spins) `interval_ns` plus the slack per sample, `count`
/// times or until stopped.
pub struct SleepProbe {
    interval_ns: u64,
    params: SleepParams,
    count: Option<u64>,
}

impl Probe for SleepProbe {
    fn measure(&mut self, start: &Start<'_>, recorder: &mut Recorder) -> Result<Report> {
        let mut index = 0u64;
        while self.count.is_none_or(|n| index < n) && !start.stop.load(Relaxed) {
            let due = sys::monotonic_ns() + self.interval_ns + self.params.slack_ns;
            while self.params.spin && sys::monotonic_ns() < due {
                std::hint::spin_loop();
            }
            // Signals are blocked on probe threads; an EINTR sleeps again.
            while let Err(e) = sys::sleep_until_ns(due) {
                if e != sys::EINTR {
                    bail!("clock_nanosleep failed with errno {e}");
                }
            }
            let woke = sys::monotonic_ns();
            recorder.push(&Sample {
                index,
                at: woke,
                values: slots([Some(woke.saturating_sub(due) as i64)]),
            });
            index += 1;
        }
        Ok(Report {
            detail: Some(serde_json::json!({
                "sleeps": index,
                "interval_ns": self.interval_ns,
                "slack_ns": self.params.slack_ns,
                "spin": self.params.spin,
            })),
            ..Report::default()
        })
    }
}

/// How the runner measures the `sleep` probe: its line in the registry (`super::REGISTRY`).
pub const REGISTRATION: super::Registration = super::Registration {
    kind: jitterlab_core::probe::ProbeKind::Sleep,
    build,
    unavailable: None,
    flags: flags::flags,
    one_cell: flags::one_cell,
    report: report::PARTS,
    placement: super::Placement::ProbeCpus,
    task: None,
};
