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
//! count of its window and the release count the live view shows.
//!
//! The [`Recorder`] fans every sample out to the run statistics
//! ([`MetricStats`] per metric), the outlier keepers, the window aggregator,
//! the live view's atomics ([`LiveStats`]) and the 1 µs histogram of the
//! probe's main latency, in one pass over the table's slots. All of it is
//! preallocated when the thread starts; pushing a sample allocates nothing,
//! takes no lock and makes no system call (design rule 2), whichever trait
//! it comes through. `benches/record.rs` measures its cost.
//!
//! **The 1 µs histogram.** Every recorder of a probe with a main latency
//! ([`ProbeDescriptor::main_latency`](crate::probe::ProbeDescriptor)) keeps
//! that metric in 1 µs bins ([`LatencyHistogram`], cyclictest's `-h`), not
//! only when `--histogram` asks for the file: the store keeps it for every
//! cell, so a report plots the same numbers cyclictest users plot, which
//! the HDR histograms (16 ns buckets above 16 µs, straddling 1 µs bins)
//! cannot give. The chase, in cycles, has none. Its cost is one division by
//! 1000, one bounds check and one increment per sample on a counter array
//! allocated (and every page touched) before the first sample: the
//! increment the periodic `recorder/push` benchmark has always included; an
//! event probe pays it since the histogram became permanent (not measured
//! apart). Overflows past the last bin are counted, and the first
//! [`LatencyHistogram::KEEP_OVERFLOWS`] sample numbers kept in a list
//! allocated to that size up front.
//!
//! The design rules cited here are in `docs/design.md`.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

pub use crate::cycle::CycleSample;
pub use crate::probe::descriptor::{MetricDef, MetricUnit, MAX_METRICS};
pub use crate::sample::{slots, CycleSink, Sample, SampleSink};

use crate::cycle::METRICS;
use crate::fine_snapshot::FinePublisher;
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

/// A latency in 1 µs buckets, as cyclictest's `-h` keeps it, so that
/// existing plotting scripts read our `--histogram` file unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LatencyHistogram {
    /// `buckets[i]` counts latencies in `[i µs, i+1 µs)`.
    pub buckets: Vec<u64>,
    /// Samples at or beyond the last bucket.
    pub overflows: u64,
    /// Cycle (sample) numbers of the first overflows (at most
    /// [`Self::KEEP_OVERFLOWS`]).
    pub overflow_cycles: Vec<u64>,
}

impl LatencyHistogram {
    /// How many overflow cycle numbers are kept.
    pub const KEEP_OVERFLOWS: usize = 1000;

    /// Buckets for 0 ..= `max_us` − 1 µs, every page of them written once
    /// now (a large `vec!` of zeroes is mapped lazily: its first increments
    /// would otherwise fault in the hot loop when `mlockall` did not hold).
    pub fn new(max_us: usize) -> LatencyHistogram {
        let mut buckets = vec![0u64; max_us];
        // A zero the compiler cannot see: storing a known zero into memory
        // it knows is zeroed (a `calloc`) would be removed as dead.
        let zero = std::hint::black_box(0);
        for b in buckets.iter_mut().step_by(512) {
            *b = zero;
        }
        std::hint::black_box(&mut buckets);
        LatencyHistogram {
            buckets,
            overflows: 0,
            overflow_cycles: Vec::with_capacity(Self::KEEP_OVERFLOWS),
        }
    }

    /// Counts one latency of `ns` nanoseconds (negative ones as 0), taken
    /// by cycle or sample number `at`: in its bucket, else as an overflow
    /// (whose number is kept while there is room for it: never allocates).
    #[inline(always)]
    pub fn record(&mut self, ns: i64, at: u64) {
        let us = (ns.max(0) / 1_000) as usize;
        match self.buckets.get_mut(us) {
            Some(b) => *b += 1,
            None => {
                self.overflows += 1;
                if self.overflow_cycles.len() < Self::KEEP_OVERFLOWS {
                    self.overflow_cycles.push(at);
                }
            }
        }
    }

    /// Samples counted, in buckets and as overflows.
    pub fn count(&self) -> u64 {
        self.buckets.iter().sum::<u64>() + self.overflows
    }

    /// Adds another thread's counts bucket by bucket (a bucket `other` has
    /// beyond this one's last counts as an overflow). The overflow cycle
    /// numbers stay this thread's: another thread's numbers count other
    /// cycles.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        for (a, b) in self.buckets.iter_mut().zip(&other.buckets) {
            *a += b;
        }
        let beyond: u64 = other.buckets.iter().skip(self.buckets.len()).sum();
        self.overflows += other.overflows + beyond;
    }
}

impl CycleSink for LatencyHistogram {
    #[inline(always)]
    fn push(&mut self, s: &CycleSample) {
        self.record(s.latency, s.cycle);
    }
}

/// One stored 1 µs histogram of a cell, as the store reads it back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FineHistogram {
    /// Probe thread index; `None` for every thread of the cell combined.
    pub thread: Option<u32>,
    /// The metric it counts (the probe's main latency).
    pub metric: String,
    /// The counts.
    pub hist: LatencyHistogram,
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
    /// The metric kept in a 1 µs histogram too: the probe's main latency
    /// ([`ProbeDescriptor::main_latency`](crate::probe::ProbeDescriptor));
    /// `None` (or a name not in the table) keeps none.
    pub main_latency: Option<&'static str>,
    /// Buckets of that histogram (`--histogram-buckets`, else
    /// [`HISTOGRAM_BUCKETS`](crate::defaults::HISTOGRAM_BUCKETS)).
    pub histogram_us: usize,
}

/// The sink a probe thread pushes every sample into: per metric of its
/// table the run statistics and outliers, the window rows, the live
/// atomics and the 1 µs histogram of the probe's main latency.
pub struct Recorder {
    /// The probe's metric table.
    pub defs: &'static [MetricDef],
    /// Run statistics per metric, in `defs` order.
    pub stats: Vec<MetricStats>,
    /// Outliers per metric, in `defs` order.
    pub outliers: Vec<OutlierKeeper>,
    /// Window rows.
    pub windows: WindowAggregator,
    /// 1 µs histogram of the probe's main latency (slot
    /// [`Recorder::histogram_slot`]); `None` for a probe without one.
    pub histogram: Option<LatencyHistogram>,
    /// The slot of `defs` the histogram counts.
    histogram_slot: usize,
    /// Live view.
    pub live: Arc<LiveStats>,
    /// Samples pushed.
    pub samples: u64,
    t0: u64,
    /// Live metrics (`--metrics`), when they are served.
    export: Option<Publisher>,
    /// The 1 µs histogram handed to a monitor's writer every few minutes
    /// ([`crate::fine_snapshot`]), when one is watching.
    fine_export: Option<FinePublisher>,
}

impl Recorder {
    /// Preallocates a recorder for the metric table `defs` (at most
    /// [`MAX_METRICS`]): windows of `cfg.window_ns`, "% over" against
    /// `cfg.threshold_ns` for thresholded metrics, `cfg.outliers` kept per
    /// metric, `cfg.histogram_us` 1 µs buckets of `cfg.main_latency`.
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
        let slot = cfg
            .main_latency
            .and_then(|name| defs.iter().position(|d| d.name == name));
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
            histogram: slot.map(|_| LatencyHistogram::new(cfg.histogram_us)),
            histogram_slot: slot.unwrap_or(0),
            live,
            samples: 0,
            t0: 0,
            export: None,
            fine_export: None,
        }
    }

    /// Hands the 1 µs histogram's counts to `p` every few windows from now
    /// on (a monitor's last-hour percentiles); nothing when the recorder
    /// keeps no histogram. Call before the start barrier.
    pub fn export_fine(&mut self, p: FinePublisher) {
        if self.histogram.is_some() {
            self.fine_export = Some(p);
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
        if let (Some(f), Some(h)) = (self.fine_export.as_mut(), self.histogram.as_ref()) {
            f.finish(self.windows.closed(), &h.buckets, h.overflows);
        }
    }

    /// The slot of the metric the 1 µs histogram counts, if one is kept.
    pub fn histogram_slot(&self) -> Option<usize> {
        self.histogram.as_ref().map(|_| self.histogram_slot)
    }

    /// The 1 µs histogram with the name of the metric it counts.
    pub fn fine_histogram(&self) -> Option<(&'static str, &LatencyHistogram)> {
        let h = self.histogram.as_ref()?;
        Some((self.defs[self.histogram_slot].name, h))
    }

    /// Publishes the 1 µs histogram when its next window count came: after
    /// the window aggregator counted a sample (and so closed any window it
    /// ended), before the sample goes into the histogram.
    #[inline(always)]
    fn poll_fine(&mut self) {
        if let (Some(f), Some(h)) = (self.fine_export.as_mut(), self.histogram.as_ref()) {
            f.poll(self.windows.closed(), &h.buckets, h.overflows);
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
                window.add(v, s.index, since);
            }
        }
        self.poll_fine();
        if let Some(h) = self.histogram.as_mut() {
            if let Some(v) = s.values[self.histogram_slot] {
                h.record(v, s.index);
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
/// overrun and the periodic live atomics.
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
                window[i].add(v, s.cycle, since);
            }
        }
        self.poll_fine();
        if let Some(h) = self.histogram.as_mut() {
            // The periodic main latency is the wake-up latency, slot 0.
            if let Some(v) = METRICS.get(self.histogram_slot).and_then(|m| m.value(s)) {
                h.record(v, s.cycle);
            }
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
    use crate::probe::descriptor::PERIODIC_METRICS;
    use crate::probe::RESPONSE;

    fn config(main_latency: Option<&'static str>, histogram_us: usize) -> RecorderConfig {
        RecorderConfig {
            thread: 2,
            cpu: 3,
            window_ns: 1_000,
            threshold_ns: 150,
            outliers: 5,
            main_latency,
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
    fn the_fine_hand_over_holds_exactly_the_closed_windows() {
        // Windows of 1000 ns, a hand-over every window: the sample that
        // closes window 0 is not in window 0's snapshot; finishing hands
        // over everything.
        let (tx, _rx) = rtrb::RingBuffer::new(8);
        let cfg = config(RESPONSE.main_latency, 10);
        let mut r = Recorder::new(RESPONSE.metrics, &cfg, tx, Arc::new(LiveStats::new()));
        let (p, mut reader) = crate::fine_snapshot::fine_channel(10, 1);
        r.export_fine(p);
        let slot = r.histogram_slot().unwrap();
        let push = |r: &mut Recorder, i: u64, at: u64, us: i64| {
            let mut values = [None; MAX_METRICS];
            values[slot] = Some(us * 1_000);
            SampleSink::push(
                r,
                &Sample {
                    index: i,
                    at,
                    values,
                },
            );
        };
        push(&mut r, 0, 100, 2);
        push(&mut r, 1, 900, 3);
        assert_eq!(reader.read(), None);
        push(&mut r, 2, 1_100, 7);
        let s = reader.read().unwrap();
        assert_eq!(s.windows, 1);
        assert_eq!(s.buckets, vec![0, 0, 1, 1, 0, 0, 0, 0, 0, 0]);
        r.finish();
        let s = reader.read().unwrap();
        assert_eq!((s.windows, s.buckets[7]), (2, 1));
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
        let cfg = config(RESPONSE.main_latency, 10);
        let mut r = Recorder::new(RESPONSE.metrics, &cfg, tx, Arc::clone(&live));
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
        // The 1 µs histogram counts the main latency (the answer sent,
        // slot 1): 200 ns and 100 ns, both in bucket 0.
        assert_eq!(r.histogram_slot(), Some(1));
        let (metric, h) = r.fine_histogram().unwrap();
        assert_eq!(metric, "response");
        assert_eq!((h.buckets[0], h.count(), h.buckets.len()), (2, 2, 10));
    }

    /// A response recorder whose main latency gets `values` (ns).
    fn response_latencies(values: &[i64], buckets: usize) -> Recorder {
        let (tx, _rx) = rtrb::RingBuffer::new(4);
        let cfg = config(RESPONSE.main_latency, buckets);
        let mut r = Recorder::new(RESPONSE.metrics, &cfg, tx, Arc::new(LiveStats::new()));
        for (i, &v) in values.iter().enumerate() {
            SampleSink::push(
                &mut r,
                &Sample {
                    index: 10 + i as u64,
                    at: i as u64,
                    values: slots([Some(1), Some(v)]),
                },
            );
        }
        r
    }

    #[test]
    fn every_sample_of_an_event_probe_lands_in_its_1us_bucket_or_overflows() {
        let r = response_latencies(&[0, 999, 1_000, 2_999, -5, 3_000, 7_000_000], 3);
        let h = r.histogram.as_ref().unwrap();
        assert_eq!(h.buckets, vec![3, 1, 1]);
        assert_eq!(h.overflows, 2);
        // Sample numbers of the overflows, as the probe numbered them.
        assert_eq!(h.overflow_cycles, vec![15, 16]);
        assert_eq!(h.count(), 7);
    }

    #[test]
    fn a_sample_without_its_main_latency_is_not_counted() {
        let (tx, _rx) = rtrb::RingBuffer::new(4);
        let cfg = config(RESPONSE.main_latency, 4);
        let mut r = Recorder::new(RESPONSE.metrics, &cfg, tx, Arc::new(LiveStats::new()));
        let s = Sample {
            index: 0,
            at: 0,
            values: slots([Some(1_500), None, Some(2_500)]),
        };
        SampleSink::push(&mut r, &s);
        assert_eq!(r.histogram.as_ref().unwrap().count(), 0);
        assert_eq!(r.samples, 1);
    }

    #[test]
    fn a_probe_without_a_main_latency_keeps_no_histogram() {
        let (tx, _rx) = rtrb::RingBuffer::new(4);
        let chase = crate::probe::CHASE;
        let cfg = config(chase.main_latency, 100);
        let r = Recorder::new(chase.metrics, &cfg, tx, Arc::new(LiveStats::new()));
        assert!(r.histogram.is_none());
        assert_eq!((r.histogram_slot(), r.fine_histogram()), (None, None));
        // A name the table does not have keeps none either.
        let (tx, _rx) = rtrb::RingBuffer::new(4);
        let cfg = config(Some("latency"), 100);
        let r = Recorder::new(RESPONSE.metrics, &cfg, tx, Arc::new(LiveStats::new()));
        assert!(r.histogram.is_none());
    }

    #[test]
    fn the_histogram_never_grows_while_it_records() {
        let values: Vec<i64> = (0..3_000).map(|i| i * 7_000).collect();
        let r = response_latencies(&values, 5);
        let h = r.histogram.as_ref().unwrap();
        // Every overflow past the kept numbers is counted, and the list
        // stayed within the capacity it was made with.
        assert_eq!(h.overflows, 3_000 - 1);
        assert_eq!(h.overflow_cycles.len(), LatencyHistogram::KEEP_OVERFLOWS);
        assert_eq!(
            h.overflow_cycles.capacity(),
            LatencyHistogram::KEEP_OVERFLOWS
        );
        assert_eq!(h.buckets.capacity(), 5);
    }

    #[test]
    fn merging_adds_bucket_by_bucket_and_counts_a_longer_tail_as_overflow() {
        let mut a = LatencyHistogram::new(3);
        let mut b = LatencyHistogram::new(4);
        for (ns, at) in [(500, 0), (2_500, 1), (9_000, 2)] {
            a.record(ns, at);
        }
        for (ns, at) in [(600, 0), (3_100, 1), (70_000, 2)] {
            b.record(ns, at);
        }
        a.merge(&b);
        assert_eq!(a.buckets, vec![2, 0, 1]);
        assert_eq!(a.overflows, 3);
        assert_eq!(a.overflow_cycles, vec![2]);
        assert_eq!(a.count(), 6);
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
            main_latency: Some("latency"),
            histogram_us: 100,
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
