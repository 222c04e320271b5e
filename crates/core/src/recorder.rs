//! The one recorder every probe thread pushes its samples into, and the
//! sample it takes.
//!
//! A probe measures a [`Sample`] at a time: up to [`MAX_METRICS`] values,
//! slot `i` being metric `i` of the probe's [`MetricDef`] table (its
//! [`ProbeDescriptor`](crate::probe::ProbeDescriptor)); a value is `None`
//! when that metric has nothing to say this time (a datagram has a kernel
//! receive stamp, an eventfd write has none). One pointer chase (`chase`,
//! in CPU cycles), one token hand-over (`ctxswitch`), one event answered
//! (`response`) is a sample. So is one cycle of a periodic probe (`cyclic`,
//! `wakeup`): a [`CycleSample`] is a sample with the periodic metric table
//! ([`PERIODIC_METRICS`](crate::probe::PERIODIC_METRICS): latency, period,
//! jitter, exec), pushed through [`CycleSink`] — the recorder reads its slots
//! from the cycle and adds what only a periodic probe has: the overrun
//! count of its window, the 1 µs wake-up latency histogram cyclictest
//! writes, and the release count the live view shows.
//!
//! The [`Recorder`] fans every sample out to the run statistics
//! ([`MetricStats`] per metric), the outlier keepers, the window aggregator
//! and the live view's atomics ([`LiveStats`]), in one pass over the
//! table's slots. All of it is preallocated when the thread starts; pushing
//! a sample allocates nothing, takes no lock and makes no system call
//! (DESIGN rule 2), whichever trait it comes through. `benches/record.rs`
//! measures its cost.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

pub use crate::cycle::CycleSample;
pub use crate::probe::{MetricDef, MetricUnit, MAX_METRICS};
pub use crate::sample::{slots, CycleSink, Sample, SampleSink};

use crate::cycle::METRICS;
use crate::metrics_snapshot::Publisher;
use crate::outlier::OutlierKeeper;
use crate::stats::MetricStats;
use crate::window::{WindowAggregator, WindowRow};

/// What the live view reads while a probe runs: plain atomics, written with
/// relaxed stores by the probe thread (their only writer, so no
/// read-modify-write is needed), read by the controlling thread.
#[derive(Debug, Default)]
pub struct LiveStats {
    /// Samples (a periodic probe: measured cycles) so far.
    pub samples: AtomicU64,
    /// Latest value of the first metric (a periodic probe: the wake-up
    /// latency), negative values as 0.
    pub last: AtomicU64,
    /// Largest value of the first metric.
    pub max: AtomicU64,
    /// A periodic probe's releases due so far (cycles + skipped).
    pub releases: AtomicU64,
    /// A periodic probe's smallest wake-up latency, ns.
    pub min: AtomicU64,
    /// A periodic probe's sum of wake-up latencies, ns (for the average).
    pub sum: AtomicU64,
    /// A periodic probe's overruns.
    pub overruns: AtomicU64,
}

impl LiveStats {
    /// A fresh set with `min` at its neutral value.
    pub fn new() -> LiveStats {
        let s = LiveStats::default();
        s.min.store(u64::MAX, Relaxed);
        s
    }

    /// Average wake-up latency of a periodic probe so far, ns.
    pub fn avg(&self) -> Option<u64> {
        let c = self.samples.load(Relaxed);
        (c > 0).then(|| self.sum.load(Relaxed) / c)
    }

    /// The first metric's latest value: the sample count, `last` and `max`.
    #[inline(always)]
    fn push_first(&self, samples: u64, first: Option<i64>) {
        self.samples.store(samples, Relaxed);
        if let Some(v) = first {
            let v = v.max(0) as u64;
            self.last.store(v, Relaxed);
            if v > self.max.load(Relaxed) {
                self.max.store(v, Relaxed);
            }
        }
    }
}

/// Wake-up latency in 1 µs buckets, as cyclictest's `-h` keeps it, so that
/// existing plotting scripts read our `--histogram` file unchanged.
#[derive(Debug, Clone)]
pub struct LatencyHistogram {
    /// `buckets[i]` counts latencies in `[i µs, i+1 µs)`.
    pub buckets: Vec<u64>,
    /// Samples at or beyond the last bucket.
    pub overflows: u64,
    /// Cycle numbers of the first overflows (at most [`Self::KEEP_OVERFLOWS`]).
    pub overflow_cycles: Vec<u64>,
}

impl LatencyHistogram {
    /// How many overflow cycle numbers are kept.
    pub const KEEP_OVERFLOWS: usize = 1000;

    /// Buckets for 0 ..= `max_us` − 1 µs.
    pub fn new(max_us: usize) -> LatencyHistogram {
        LatencyHistogram {
            buckets: vec![0; max_us],
            overflows: 0,
            overflow_cycles: Vec::with_capacity(Self::KEEP_OVERFLOWS),
        }
    }

    /// Adds another thread's counts bucket by bucket.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        for (a, b) in self.buckets.iter_mut().zip(&other.buckets) {
            *a += b;
        }
        self.overflows += other.overflows;
    }
}

impl CycleSink for LatencyHistogram {
    #[inline(always)]
    fn push(&mut self, s: &CycleSample) {
        let us = (s.latency.max(0) / 1_000) as usize;
        match self.buckets.get_mut(us) {
            Some(b) => *b += 1,
            None => {
                self.overflows += 1;
                if self.overflow_cycles.len() < Self::KEEP_OVERFLOWS {
                    self.overflow_cycles.push(s.cycle);
                }
            }
        }
    }
}

/// How a probe thread's recorder is set up.
#[derive(Debug, Clone)]
pub struct RecorderConfig {
    /// Index of the probe thread.
    pub thread: u32,
    /// CPU it runs on.
    pub cpu: u32,
    /// Window width, ns.
    pub window_ns: u64,
    /// Threshold for the "% over" figure of thresholded metrics, ns.
    pub threshold_ns: u64,
    /// Outliers kept per metric.
    pub outliers: usize,
    /// Buckets of the 1 µs wake-up latency histogram of a periodic probe,
    /// if one is kept.
    pub histogram_us: Option<usize>,
}

/// The sink a probe thread pushes every sample into: per metric of its
/// table the run statistics and outliers, the window rows, the live
/// atomics and, for a periodic probe, the 1 µs latency histogram.
pub struct Recorder {
    /// The probe's metric table.
    pub defs: &'static [MetricDef],
    /// Run statistics per metric, in `defs` order.
    pub stats: Vec<MetricStats>,
    /// Outliers per metric, in `defs` order.
    pub outliers: Vec<OutlierKeeper>,
    /// Window rows.
    pub windows: WindowAggregator,
    /// 1 µs wake-up latency histogram, if asked for (periodic probes).
    pub histogram: Option<LatencyHistogram>,
    /// Live view.
    pub live: Arc<LiveStats>,
    /// Samples pushed.
    pub samples: u64,
    t0: u64,
    /// Live metrics (`--metrics`), when they are served.
    export: Option<Publisher>,
}

impl Recorder {
    /// Preallocates a recorder for the metric table `defs` (at most
    /// [`MAX_METRICS`]): windows of `cfg.window_ns`, "% over" against
    /// `cfg.threshold_ns` for thresholded metrics, `cfg.outliers` kept per
    /// metric, the latency histogram when `cfg` asks for one.
    pub fn new(
        defs: &'static [MetricDef],
        cfg: &RecorderConfig,
        rows: rtrb::Producer<WindowRow>,
        live: Arc<LiveStats>,
    ) -> Recorder {
        assert!(
            defs.len() <= MAX_METRICS,
            "too many metrics for a window row"
        );
        Recorder {
            defs,
            stats: defs
                .iter()
                .map(|d| MetricStats::new(d.signed, d.thresholded.then_some(cfg.threshold_ns)))
                .collect(),
            outliers: defs
                .iter()
                .map(|_| OutlierKeeper::new(cfg.outliers))
                .collect(),
            windows: WindowAggregator::new(cfg.thread, cfg.cpu, 0, cfg.window_ns, defs, rows),
            histogram: cfg.histogram_us.map(LatencyHistogram::new),
            live,
            samples: 0,
            t0: 0,
            export: None,
        }
    }

    /// Publishes live metrics through `p` from now on: bucket counts per
    /// sample, a snapshot at each window's end (see
    /// [`crate::metrics_snapshot`]). Call before the start barrier.
    pub fn export_metrics(&mut self, p: Publisher) {
        self.windows.keep_last_row();
        self.export = Some(p);
    }

    /// Sets the start of the measurement — a periodic probe's first release
    /// — once it is known (window and outlier times are relative to it):
    /// after allocation, so allocating happens before the start barrier.
    /// Until then it is 0.
    pub fn start_at(&mut self, t0: u64) {
        self.t0 = t0;
        self.windows.start_at(t0);
    }

    /// Pushes the last window; call once after the loop.
    pub fn finish(&mut self) {
        self.windows.finish();
        if let Some(x) = self.export.as_mut() {
            x.finish(&self.windows);
        }
    }

    /// Every metric with its statistics and outliers, in table order.
    pub fn metrics(
        &self,
    ) -> impl Iterator<Item = (&'static MetricDef, &MetricStats, &OutlierKeeper)> {
        self.defs
            .iter()
            .zip(self.stats.iter().zip(&self.outliers))
            .map(|(d, (s, o))| (d, s, o))
    }
}

impl SampleSink for Recorder {
    #[inline(always)]
    fn push(&mut self, s: &Sample) {
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
        if let Some(x) = self.export.as_mut() {
            x.record(&self.windows, &s.values[..self.defs.len()]);
        }
        self.samples += 1;
        self.live.push_first(self.samples, s.values[0]);
    }
}

/// A periodic cycle: a sample with the periodic metric table, in
/// [`METRICS`] order (the recorder must have been made with
/// [`PERIODIC_METRICS`](crate::probe::PERIODIC_METRICS)), plus the
/// overrun, the latency histogram and the periodic live atomics.
impl CycleSink for Recorder {
    #[inline(always)]
    fn push(&mut self, s: &CycleSample) {
        debug_assert_eq!(self.defs, crate::probe::PERIODIC_METRICS);
        let since = s.start.saturating_sub(self.t0);
        let window = self.windows.count(s.start, s.overrun);
        // The four slots of the periodic table, checked once.
        let stats: &mut [MetricStats; 4] = (&mut self.stats[..4])
            .try_into()
            .expect("a periodic recorder has four metrics");
        let outliers: &mut [OutlierKeeper; 4] = (&mut self.outliers[..4])
            .try_into()
            .expect("a periodic recorder has four metrics");
        for m in METRICS {
            if let Some(v) = m.value(s) {
                let i = m as usize;
                stats[i].record(v);
                outliers[i].offer(v, s.cycle, since);
                window[i].add(v);
            }
        }
        if let Some(h) = self.histogram.as_mut() {
            h.push(s);
        }
        if let Some(x) = self.export.as_mut() {
            x.record(&self.windows, &METRICS.map(|m| m.value(s)));
        }
        self.samples += 1;
        let live = &*self.live;
        live.push_first(self.samples, Some(s.latency));
        let lat = s.latency.max(0) as u64;
        live.releases
            .store(s.release_index + 1 + s.skipped, Relaxed);
        if lat < live.min.load(Relaxed) {
            live.min.store(lat, Relaxed);
        }
        live.sum
            .store(live.sum.load(Relaxed).wrapping_add(lat), Relaxed);
        if s.overrun {
            live.overruns
                .store(live.overruns.load(Relaxed) + 1, Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cycle::{Metric, Schedule};
    use crate::probe::{PERIODIC_METRICS, RESPONSE};

    fn config(histogram_us: Option<usize>) -> RecorderConfig {
        RecorderConfig {
            thread: 2,
            cpu: 3,
            window_ns: 1_000,
            threshold_ns: 150,
            outliers: 5,
            histogram_us,
        }
    }

    #[test]
    fn a_vector_collects_every_sample_in_order() {
        let mut v: Vec<Sample> = Vec::new();
        for i in 0..3 {
            SampleSink::push(
                &mut v,
                &Sample {
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
        let (tx, mut rx) = rtrb::RingBuffer::new(4);
        let live = Arc::new(LiveStats::new());
        let mut r = Recorder::new(RESPONSE.metrics, &config(None), tx, Arc::clone(&live));
        r.start_at(10_000);
        for (i, v) in [[100, 200, 50], [300, 100, 60]].into_iter().enumerate() {
            SampleSink::push(
                &mut r,
                &Sample {
                    index: i as u64,
                    at: 10_000 + 100 * i as u64,
                    values: slots([Some(v[0]), Some(v[1]), (i == 0).then_some(v[2])]),
                },
            );
        }
        r.finish();
        let max: Vec<Option<i64>> = r.stats.iter().map(|s| s.summary().max).collect();
        assert_eq!(max, vec![Some(300), Some(200), Some(50)]);
        assert_eq!(r.stats[1].summary().over_threshold, Some(1));
        assert_eq!(r.outliers[0].sorted()[0].since_start_ns, 100);
        assert_eq!(
            (
                live.samples.load(Relaxed),
                live.last.load(Relaxed),
                live.max.load(Relaxed)
            ),
            (2, 300, 300)
        );
        let names: Vec<&str> = r.metrics().map(|(d, ..)| d.name).collect();
        assert_eq!(names, ["wakeup", "response", "rx-to-thread"]);
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
        assert_eq!(r.samples, 2);
    }

    #[test]
    fn a_cycle_is_a_sample_with_the_periodic_table_and_its_extras() {
        let (tx, mut rx) = rtrb::RingBuffer::new(8);
        let cfg = RecorderConfig {
            thread: 0,
            cpu: 1,
            window_ns: 1_000_000,
            threshold_ns: 50_000,
            outliers: 20,
            histogram_us: Some(100),
        };
        let mut r = Recorder::new(PERIODIC_METRICS, &cfg, tx, Arc::new(LiveStats::new()));
        let mut sched = Schedule::new(0, 100_000);
        let lats = [3_000u64, 7_500, 120_000, 2_000];
        for l in lats {
            let rel = sched.next_release();
            let s = sched.complete(rel + l, rel + l + 10_000);
            CycleSink::push(&mut r, &s);
        }
        r.finish();
        let lat = r.stats[Metric::Latency as usize].summary();
        assert_eq!(lat.count, 4);
        assert_eq!(lat.max, Some(120_000));
        assert_eq!(lat.over_threshold, Some(1));
        let h = r.histogram.as_ref().unwrap();
        assert_eq!(h.buckets[3], 1);
        assert_eq!(h.buckets[7], 1);
        assert_eq!(h.buckets[2], 1);
        assert_eq!(h.overflows, 1);
        // The 120 µs wake-up overran the 100 µs period.
        assert_eq!(h.overflow_cycles, vec![2]);
        assert_eq!(r.live.samples.load(Relaxed), 4);
        assert_eq!(r.live.max.load(Relaxed), 120_000);
        assert_eq!(r.live.min.load(Relaxed), 2_000);
        assert_eq!(r.live.last.load(Relaxed), 2_000);
        assert_eq!(r.live.overruns.load(Relaxed), 1);
        // The overrun skipped one release.
        assert_eq!(r.live.releases.load(Relaxed), 5);
        assert_eq!(r.live.avg(), Some(33_125));
        assert_eq!(r.outliers[Metric::Latency as usize].sorted()[0].cycle, 2);
        // The first cycle has no period and no jitter.
        assert_eq!(r.stats[Metric::Period as usize].summary().count, 3);
        let row = rx.pop().unwrap();
        assert_eq!((row.cycles, row.overruns), (4, 1));
        assert_eq!(row.stat("exec").unwrap().max, 10_000);
        assert!(rx.pop().is_err());
        assert_eq!(r.samples, 4);
    }
}
