//! The push model between a probe and everything that consumes its samples.
//!
//! A probe produces one [`CycleSample`] per cycle and pushes it into a
//! [`Sink`] (as ripgrep's searcher pushes matches into its sink). The
//! [`Recorder`] is the sink every probe thread owns: it fans each sample out to
//! the run statistics ([`MetricStats`] per metric), the window aggregator, the
//! outlier keepers, the optional 1 µs latency histogram (cyclictest's format)
//! and the live view's atomics. All of it is preallocated when the thread
//! starts; pushing a sample allocates nothing, takes no lock and makes no
//! system call (DESIGN rule 2). `benches/record.rs` measures its cost.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

pub use crate::cycle::{Metric, Sink, METRICS};

use crate::cycle::CycleSample;
use crate::outlier::OutlierKeeper;
use crate::probe::PERIODIC_METRICS;
use crate::stats::MetricStats;
use crate::window::{WindowAggregator, WindowRow};

/// What the live view reads while a probe runs: plain atomics, written with
/// relaxed stores by the probe (no lock), read by the controlling thread.
#[derive(Debug, Default)]
pub struct LiveStats {
    /// Measured cycles.
    pub cycles: AtomicU64,
    /// Releases due so far (cycles + skipped).
    pub releases: AtomicU64,
    /// Latest wake-up latency, ns.
    pub act: AtomicU64,
    /// Smallest wake-up latency, ns.
    pub min: AtomicU64,
    /// Largest wake-up latency, ns.
    pub max: AtomicU64,
    /// Sum of wake-up latencies, ns (for the average).
    pub sum: AtomicU64,
    /// Overruns.
    pub overruns: AtomicU64,
    /// Largest execution time, ns.
    pub max_exec: AtomicU64,
}

impl LiveStats {
    /// A fresh set with `min` at its neutral value.
    pub fn new() -> LiveStats {
        let s = LiveStats::default();
        s.min.store(u64::MAX, Relaxed);
        s
    }

    /// Average wake-up latency so far, ns.
    pub fn avg(&self) -> Option<u64> {
        let c = self.cycles.load(Relaxed);
        (c > 0).then(|| self.sum.load(Relaxed) / c)
    }
}

impl Sink for &LiveStats {
    #[inline(always)]
    fn push(&mut self, s: &CycleSample) {
        // Single writer: plain load-then-store, no read-modify-write needed.
        let lat = s.latency.max(0) as u64;
        self.cycles.store(s.cycle + 1, Relaxed);
        self.releases
            .store(s.release_index + 1 + s.skipped, Relaxed);
        self.act.store(lat, Relaxed);
        if lat < self.min.load(Relaxed) {
            self.min.store(lat, Relaxed);
        }
        if lat > self.max.load(Relaxed) {
            self.max.store(lat, Relaxed);
        }
        self.sum
            .store(self.sum.load(Relaxed).wrapping_add(lat), Relaxed);
        if s.overrun {
            self.overruns
                .store(self.overruns.load(Relaxed) + 1, Relaxed);
        }
        let e = s.exec.max(0) as u64;
        if e > self.max_exec.load(Relaxed) {
            self.max_exec.store(e, Relaxed);
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

impl Sink for LatencyHistogram {
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
    /// Threshold for the "% over" figure, ns.
    pub threshold_ns: u64,
    /// Outliers kept per metric.
    pub outliers: usize,
    /// Buckets of the 1 µs latency histogram, if one is kept.
    pub histogram_us: Option<usize>,
}

/// The sink a probe thread pushes every cycle into.
pub struct Recorder {
    /// Run statistics per metric, in [`METRICS`] order.
    pub stats: [MetricStats; 4],
    /// Outliers per metric, in [`METRICS`] order.
    pub outliers: [OutlierKeeper; 4],
    /// Window rows.
    pub windows: WindowAggregator,
    /// 1 µs latency histogram, if asked for.
    pub histogram: Option<LatencyHistogram>,
    /// Live view.
    pub live: Arc<LiveStats>,
    t0: u64,
}

impl Recorder {
    /// Preallocates everything a run needs.
    pub fn new(
        cfg: &RecorderConfig,
        rows: rtrb::Producer<WindowRow>,
        live: Arc<LiveStats>,
    ) -> Recorder {
        let stats = METRICS
            .map(|m| MetricStats::new(m.signed(), m.thresholded().then_some(cfg.threshold_ns)));
        let outliers = METRICS.map(|_| OutlierKeeper::new(cfg.outliers));
        Recorder {
            stats,
            outliers,
            windows: WindowAggregator::new(
                cfg.thread,
                cfg.cpu,
                0,
                cfg.window_ns,
                PERIODIC_METRICS,
                rows,
            ),
            histogram: cfg.histogram_us.map(LatencyHistogram::new),
            live,
            t0: 0,
        }
    }

    /// Sets the run's first release (window and outlier times are relative to
    /// it) once it is known: after allocation, so allocating happens before the
    /// start barrier. Until then it is 0.
    pub fn start_at(&mut self, t0: u64) {
        self.t0 = t0;
        self.windows.start_at(t0);
    }

    /// Pushes the last window; call once after the loop.
    pub fn finish(&mut self) {
        self.windows.finish();
    }
}

impl Sink for Recorder {
    #[inline(always)]
    fn push(&mut self, s: &CycleSample) {
        let since = s.start.saturating_sub(self.t0);
        // One pass: run statistics, outliers and the window together.
        let window = self.windows.count(s.start, s.overrun);
        for m in METRICS {
            if let Some(v) = m.value(s) {
                self.stats[m as usize].record(v);
                self.outliers[m as usize].offer(v, s.cycle, since);
                window[m as usize].add(v);
            }
        }
        if let Some(h) = self.histogram.as_mut() {
            h.push(s);
        }
        (&*self.live).push(s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cycle::Schedule;

    fn recorder(cap: usize) -> (Recorder, rtrb::Consumer<WindowRow>) {
        let (tx, rx) = rtrb::RingBuffer::new(cap);
        let cfg = RecorderConfig {
            thread: 0,
            cpu: 1,
            window_ns: 1_000_000,
            threshold_ns: 50_000,
            outliers: 20,
            histogram_us: Some(100),
        };
        (Recorder::new(&cfg, tx, Arc::new(LiveStats::new())), rx)
    }

    #[test]
    fn recorder_fans_out_to_every_sink() {
        let (mut r, mut rx) = recorder(8);
        let mut sched = Schedule::new(0, 100_000);
        let lats = [3_000u64, 7_500, 120_000, 2_000];
        for l in lats {
            let rel = sched.next_release();
            let s = sched.complete(rel + l, rel + l + 10_000);
            r.push(&s);
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
        assert_eq!(r.live.cycles.load(Relaxed), 4);
        assert_eq!(r.live.max.load(Relaxed), 120_000);
        assert_eq!(r.live.min.load(Relaxed), 2_000);
        assert_eq!(r.live.overruns.load(Relaxed), 1);
        assert_eq!(r.live.avg(), Some(33_125));
        assert_eq!(r.outliers[Metric::Latency as usize].sorted()[0].cycle, 2);
        let row = rx.pop().unwrap();
        assert_eq!(row.cycles, 4);
        assert!(rx.pop().is_err());
    }
}
