//! The sample of an event-driven probe, and the sink it is pushed into.
//!
//! The periodic probes (`cyclic`, `wakeup`) push one [`CycleSample`] per
//! cycle, with the four metrics of DESIGN.md's formulas. The other probes
//! measure something else each time an event happens: one pointer chase
//! (`chase`, in CPU cycles), one token hand-over (`ctxswitch`), one event
//! answered (`response`). They push an [`EventSample`]: up to
//! [`MAX_METRICS`] values, slot `i` being metric `i` of the probe's
//! [`MetricDef`] table (its [`ProbeDescriptor`](crate::probe::ProbeDescriptor)),
//! so the same statistics, windows, outliers and store serve every probe. A value is `None` when that metric has nothing to say
//! for this event (a datagram has a kernel receive stamp, an eventfd write
//! has none).
//!
//! Like [`Sink`](crate::cycle::Sink), an [`EventSink`] must not block,
//! allocate or make a system call: probes push from their real-time loop.
//!
//! [`CycleSample`]: crate::cycle::CycleSample

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use crate::outlier::OutlierKeeper;
use crate::stats::MetricStats;
use crate::window::{WindowAggregator, WindowRow};

pub use crate::probe::{MetricDef, MetricUnit, MAX_METRICS};

/// One event measured by a probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventSample {
    /// 0-based number of this event.
    pub index: u64,
    /// When it happened, on CLOCK_MONOTONIC, ns (places it in a window).
    pub at: u64,
    /// One value per metric of the probe's [`MetricDef`] table, in its
    /// order; the slots after the table's last metric are `None`.
    pub values: [Option<i64>; MAX_METRICS],
}

/// The slots of a sample from the values of its first `N` metrics (the
/// others `None`): `slots([Some(handover)])`. `N` is checked against
/// [`MAX_METRICS`] when the program is compiled.
#[inline(always)]
pub const fn slots<const N: usize>(first: [Option<i64>; N]) -> [Option<i64>; MAX_METRICS] {
    const { assert!(N <= MAX_METRICS, "more values than a sample has slots") };
    let mut v = [None; MAX_METRICS];
    let mut i = 0;
    while i < N {
        v[i] = first[i];
        i += 1;
    }
    v
}

/// Consumes event samples pushed by a probe.
pub trait EventSink {
    /// Takes one sample; must not block, allocate or make a system call.
    fn push(&mut self, sample: &EventSample);
}

/// Collects samples in a vector: for tests and for off-line use (it
/// allocates, so never in a real-time loop).
impl EventSink for Vec<EventSample> {
    fn push(&mut self, sample: &EventSample) {
        Vec::push(self, *sample);
    }
}

/// What the progress line reads while an event probe runs: plain atomics
/// with relaxed stores by the probe thread (its only writer).
#[derive(Debug, Default)]
pub struct EventLive {
    /// Samples so far.
    pub samples: AtomicU64,
    /// Latest value of the first metric.
    pub last: AtomicU64,
    /// Largest value of the first metric.
    pub max: AtomicU64,
}

/// The sink an event probe pushes into: per metric its statistics and
/// outliers, the window rows, the live atomics. Everything is allocated in
/// [`EventRecorder::new`]; [`EventSink::push`] allocates nothing, takes no
/// lock and makes no system call.
pub struct EventRecorder {
    /// The probe's metric table.
    pub defs: &'static [MetricDef],
    /// Run statistics per metric, in `defs` order.
    pub stats: Vec<MetricStats>,
    /// Outliers per metric, in `defs` order.
    pub outliers: Vec<OutlierKeeper>,
    /// Window rows.
    pub windows: WindowAggregator,
    /// Progress.
    pub live: Arc<EventLive>,
    /// Samples pushed.
    pub samples: u64,
    t0: u64,
}

impl EventRecorder {
    /// Preallocates a recorder for `defs` (at most [`MAX_METRICS`]),
    /// on probe thread `thread` pinned to `cpu`: windows of `window_ns`,
    /// "% over" against `threshold` for thresholded metrics, `outliers`
    /// kept per metric.
    pub fn new(
        defs: &'static [MetricDef],
        thread: u32,
        cpu: u32,
        window_ns: u64,
        threshold: u64,
        outliers: usize,
        rows: rtrb::Producer<WindowRow>,
    ) -> EventRecorder {
        assert!(
            defs.len() <= MAX_METRICS,
            "too many metrics for a window row"
        );
        EventRecorder {
            defs,
            stats: defs
                .iter()
                .map(|d| MetricStats::new(d.signed, d.thresholded.then_some(threshold)))
                .collect(),
            outliers: defs.iter().map(|_| OutlierKeeper::new(outliers)).collect(),
            windows: WindowAggregator::new(thread, cpu, 0, window_ns, defs, rows),
            live: Arc::new(EventLive::default()),
            samples: 0,
            t0: 0,
        }
    }

    /// Sets the start of the measurement (windows and outlier times are
    /// relative to it).
    pub fn start_at(&mut self, t0: u64) {
        self.t0 = t0;
        self.windows.start_at(t0);
    }

    /// Pushes the last window; call once after the loop.
    pub fn finish(&mut self) {
        self.windows.finish();
    }
}

impl EventSink for EventRecorder {
    #[inline(always)]
    fn push(&mut self, s: &EventSample) {
        let since = s.at.saturating_sub(self.t0);
        let window = self.windows.count(s.at, false);
        // One pass over the table's slots (`stats` has one per metric):
        // run statistics, outliers and the window together.
        let slots = (s.values.iter().zip(window.iter_mut()))
            .zip(self.stats.iter_mut().zip(self.outliers.iter_mut()));
        for ((v, window), (stats, outliers)) in slots {
            if let Some(v) = *v {
                stats.record(v);
                outliers.offer(v, s.index, since);
                window.add(v);
            }
        }
        self.samples += 1;
        self.live.samples.store(self.samples, Relaxed);
        if let Some(v) = s.values[0] {
            let v = v.max(0) as u64;
            self.live.last.store(v, Relaxed);
            if v > self.live.max.load(Relaxed) {
                self.live.max.store(v, Relaxed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vector_collects_every_sample_in_order() {
        let mut v: Vec<EventSample> = Vec::new();
        for i in 0..3 {
            EventSink::push(
                &mut v,
                &EventSample {
                    index: i,
                    at: 10 * i,
                    values: slots([Some(i as i64)]),
                },
            );
        }
        assert_eq!(
            v.iter().map(|s| (s.index, s.values[0])).collect::<Vec<_>>(),
            vec![(0, Some(0)), (1, Some(1)), (2, Some(2))]
        );
        assert_eq!(
            serde_json::to_string(&MetricUnit::Cycles).unwrap(),
            "\"cycles\""
        );
    }

    #[test]
    fn slots_pad_with_none() {
        assert_eq!(
            slots([Some(1), None, Some(3)]),
            [Some(1), None, Some(3), None, None, None, None, None]
        );
        assert_eq!(slots([]), [None; MAX_METRICS]);
    }

    #[test]
    fn the_recorder_keeps_every_metric_of_its_table_by_slot() {
        let defs = crate::probe::RESPONSE.metrics;
        let (tx, mut rx) = rtrb::RingBuffer::new(4);
        let mut r = EventRecorder::new(defs, 2, 3, 1_000, 150, 5, tx);
        r.start_at(10_000);
        for (i, v) in [[100, 200, 50], [300, 100, 60]].into_iter().enumerate() {
            r.push(&EventSample {
                index: i as u64,
                at: 10_000 + 100 * i as u64,
                values: slots([Some(v[0]), Some(v[1]), (i == 0).then_some(v[2])]),
            });
        }
        r.finish();
        let max: Vec<Option<i64>> = r.stats.iter().map(|s| s.summary().max).collect();
        assert_eq!(max, vec![Some(300), Some(200), Some(50)]);
        assert_eq!(r.stats[1].summary().over_threshold, Some(1));
        assert_eq!(r.outliers[0].sorted()[0].since_start_ns, 100);
        assert_eq!(r.live.max.load(Relaxed), 300);
        let row = rx.pop().unwrap();
        let named: Vec<(&str, u64, i64)> =
            row.named().map(|(d, s)| (d.name, s.count, s.max)).collect();
        assert_eq!(
            named,
            vec![
                ("wakeup", 2, 300),
                ("response", 2, 200),
                ("rx-to-thread", 1, 50)
            ]
        );
        assert_eq!((row.thread, row.cpu, row.cycles), (2, 3, 2));
    }
}
