//! Fake probes for the tests of the runner: they measure without sleeping
//! (or until told to stop) under whatever scheduling the test thread has,
//! so the lifecycle and a bench cell can be tested without root.

use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Result;
use jitterlab_core::cycle::Schedule;
use jitterlab_core::recorder::{slots, CycleSink, Sample, SampleSink};
use jitterlab_sys as sys;

use super::{Prepared, Probe, Recorder, Report, ScheduleCounts, Start};
use crate::error::bad;
use crate::system::journal::Journal;

/// Pushes `n` events of 1, 2, … µs (or, with `n` = `u64::MAX`, events
/// until told to stop), then reports how many; says what it was asked in
/// `seen`.
pub struct Synthetic {
    /// Events to push.
    pub n: u64,
    /// What its preparation gives: an error (bad input) with this text.
    pub prepare: std::result::Result<(), String>,
    /// What it was asked, in order.
    pub seen: Arc<Mutex<Vec<String>>>,
}

impl Synthetic {
    /// A probe of `n` events, and what it will have seen.
    pub fn new(n: u64) -> (Synthetic, Arc<Mutex<Vec<String>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = Synthetic {
            n,
            prepare: Ok(()),
            seen: Arc::clone(&seen),
        };
        (s, seen)
    }
}

impl Probe for Synthetic {
    fn prepare(&mut self) -> Result<Prepared> {
        self.seen.lock().unwrap().push("prepare".into());
        match &self.prepare {
            Ok(()) => Ok(Prepared {
                warnings: vec!["synthetic probe".into()],
                ..Prepared::default()
            }),
            Err(e) => Err(bad(e.clone())),
        }
    }

    fn measure(&mut self, start: &Start<'_>, recorder: &mut Recorder) -> Result<Report> {
        self.seen.lock().unwrap().push("measure".into());
        let sink = recorder;
        let mut i = 0;
        while i < self.n && !start.stop.load(Relaxed) {
            let at = sys::monotonic_ns();
            let value = (i % 1_000 + 1) * 1_000;
            SampleSink::push(
                sink,
                &Sample {
                    index: i,
                    at,
                    values: slots([Some(value as i64)]),
                },
            );
            i += 1;
            if self.n == u64::MAX {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        Ok(Report {
            detail: Some(serde_json::json!({ "pushed": i })),
            warnings: vec!["measured".into()],
            ..Report::default()
        })
    }

    fn teardown(&mut self, _root: &Path, _journal: &mut Journal) -> Vec<String> {
        self.seen.lock().unwrap().push("teardown".into());
        vec!["torn down".into()]
    }
}

/// `n` cycles of a periodic probe with wake-up latencies 1, 2, … µs,
/// without sleeping.
pub struct Cycles {
    /// Cycles to push.
    pub n: u64,
}

impl Probe for Cycles {
    fn measure(&mut self, start: &Start<'_>, recorder: &mut Recorder) -> Result<Report> {
        let rec = recorder;
        let mut schedule = Schedule::new(start.t0, 1_000_000);
        for i in 0..self.n {
            let release = schedule.next_release();
            let woke = release + (i + 1) * 1_000;
            let s = schedule.complete(woke, woke + 10_000);
            CycleSink::push(rec, &s);
        }
        Ok(Report {
            schedule: Some(ScheduleCounts::of(&schedule)),
            ..Report::default()
        })
    }
}
