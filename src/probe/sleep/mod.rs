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

pub mod flags;

use std::sync::atomic::Ordering::Relaxed;

use anyhow::{bail, Result};
use jitterlab_core::recorder::{slots, Sample, SampleSink};
use jitterlab_sys as sys;

use crate::probe::{Cell, Probe, Probes, Recorder, Report, Start};
use crate::system::journal::Journal;

/// The sleep probe of a cell: one thread, sleeping one period per sample.
pub fn build(cell: &Cell<'_>, _journal: &mut Journal) -> Result<Probes> {
    Ok(Probes::threads(vec![Box::new(SleepProbe {
        interval_ns: cell.plan.period,
        count: cell.plan.params.cycles,
    })]))
}

/// Sleeps `interval_ns` per sample, `count` times or until stopped.
pub struct SleepProbe {
    interval_ns: u64,
    count: Option<u64>,
}

impl Probe for SleepProbe {
    fn measure(&mut self, start: &Start<'_>, recorder: &mut Recorder) -> Result<Report> {
        let mut index = 0u64;
        while self.count.is_none_or(|n| index < n) && !start.stop.load(Relaxed) {
            let due = sys::monotonic_ns() + self.interval_ns;
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
            })),
            ..Report::default()
        })
    }
}
