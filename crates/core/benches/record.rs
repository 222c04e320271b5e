//! What recording one sample costs in the probe's hot loop (design rule 2:
//! "tens of ns"), through every sink a probe pushes into.
//!
//! * `recorder/push` — the full fan-out a periodic probe thread pays per
//!   cycle: the [`Recorder`]'s push of a [`CycleSample`] (its [`CycleSink`]) into
//!   four [`MetricStats`], four outlier keepers (20 each), the 1 s window
//!   aggregator (feeding an `rtrb` ring of 4096 rows), a 10 000-bucket 1 µs
//!   latency histogram and the live-view atomics. `recorder/push_metrics`
//!   is the same recorder publishing live metrics (`--metrics`): a bucket
//!   increment and a sum per metric per cycle, a snapshot at each window's
//!   end (`metrics_snapshot`).
//! * `event_recorder/*` — the same for any other probe: the same
//!   [`Recorder`]'s push of a [`Sample`] (its [`SampleSink`]) into one
//!   [`MetricStats`] and one outlier keeper per metric, the window
//!   aggregator, the live atomics and the 1 µs histogram of the main
//!   latency (none for the chase), with the metric tables of the real
//!   probes: `push_1_metric` (ctxswitch: one hand-over), `push_3_metrics`
//!   (response: wake-up, response, rx-to-thread), `push_2_metrics_cycles`
//!   (chase: cycles per chase and the sample's jitter); `push_3_metrics_exported`
//!   is the response probe's recorder publishing live metrics.
//! * `window/*` — the window aggregator alone: `push_cycle` takes a
//!   [`CycleSample`] as the periodic recorder hands it on, `push_3_values`
//!   the values of a three-metric event.
//! * `metric_stats/record` — one [`MetricStats::record`] alone, for an
//!   unsigned metric (latency) and a signed one (jitter, two histograms).
//!
//! The samples are produced ahead of time from a fixed pseudo-random
//! sequence (xorshift64, fixed seed): wake-up latencies of 1–50 µs on a 1 ms
//! period accounted by [`Schedule::complete`], event values of the same
//! range (100–400 cycles for the chase), so the timed loop does nothing but
//! push. A stream is 10 000 samples (10 s, 10 windows) long and replayed;
//! replaying moves time backwards once per pass, which just closes one extra
//! window, as a real window boundary would. Window rows are drained from the
//! ring outside the timed sections (`iter_custom`), as the writer thread
//! would do on another CPU, and the bench checks that none was dropped.
//!
//! Throughput is one element per iteration, so criterion reports time per
//! sample. Run: `cargo bench -p jitterlab-core --bench record`; to compare
//! two commits, `-- --save-baseline old` on the first and `-- --baseline old`
//! on the second with the same `CARGO_TARGET_DIR` (BENCHMARKS.md).
//!
//! The design rules cited here are in `docs/design.md`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use jitterlab_core::cycle::{CycleSample, Schedule};
use jitterlab_core::recorder::{
    CycleSink, LiveStats, Recorder, RecorderConfig, Sample, SampleSink,
};
use jitterlab_core::result::ProbeKind;
use jitterlab_core::stats::MetricStats;
use jitterlab_core::window::{WindowAggregator, WindowRow};

/// Samples in the replayed stream (10 s at 1 ms).
const STREAM: usize = 10_000;
/// Period of the emulated task, ns.
const PERIOD_NS: u64 = 1_000_000;
/// First release, ns (a plausible CLOCK_MONOTONIC reading).
const T0_NS: u64 = 1_000_000_000_000;
/// Rows the window ring holds.
const RING_ROWS: usize = 4096;
/// Window width, ns.
const WINDOW_NS: u64 = 1_000_000_000;
/// Samples pushed between two drains of the ring: at one row per 1000
/// samples plus one per replay, ~1100 rows, well under [`RING_ROWS`].
const CHUNK: u64 = 1_000_000;

/// A fixed pseudo-random sequence (xorshift64), so every run sees the same data.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// A value in `lo ..= hi`.
    fn within(&mut self, lo: u64, hi: u64) -> i64 {
        (lo + self.next() % (hi - lo + 1)) as i64
    }
}

/// Wake-up latencies of 1–50 µs and execution times of 5–15 µs, accounted by
/// the real schedule (so period and jitter are what a probe would see).
fn stream() -> Vec<CycleSample> {
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    let mut sched = Schedule::new(T0_NS, PERIOD_NS);
    (0..STREAM)
        .map(|_| {
            let release = sched.next_release();
            let latency = 1_000 + rng.next() % 49_001;
            let exec = 5_000 + rng.next() % 10_001;
            let start = release + latency;
            sched.complete(start, start + exec)
        })
        .collect()
}

/// Events one period apart with `metrics` values each, 1–50 µs (or, for
/// `cycles`, 100–400 cycles).
fn events(metrics: usize, cycles: bool) -> Vec<Sample> {
    let mut rng = XorShift(0x2545_F491_4F6C_DD1D);
    let (lo, hi) = if cycles { (100, 400) } else { (1_000, 50_000) };
    (0..STREAM as u64)
        .map(|i| {
            let values: Vec<Option<i64>> = (0..metrics).map(|_| Some(rng.within(lo, hi))).collect();
            api::event(i, T0_NS + i * PERIOD_NS, &values)
        })
        .collect()
}

/// Times `iters` pushes of `samples` (replayed from where the last call
/// stopped) in chunks of [`CHUNK`], draining `rows` between chunks outside
/// the timed sections.
fn timed<S>(
    iters: u64,
    at: &mut usize,
    samples: &[S],
    rows: &mut rtrb::Consumer<WindowRow>,
    mut push: impl FnMut(&S),
) -> Duration {
    let mut timed = Duration::ZERO;
    let mut left = iters;
    while left > 0 {
        let mut n = left.min(CHUNK);
        left -= n;
        let t = Instant::now();
        while n > 0 {
            let take = (n as usize).min(samples.len() - *at);
            for s in &samples[*at..*at + take] {
                push(black_box(s));
            }
            *at = (*at + take) % samples.len();
            n -= take as u64;
        }
        timed += t.elapsed();
        // The writer thread's job, outside the timed section.
        while rows.pop().is_ok() {}
    }
    timed
}

/// The recorder of a probe thread with `kind`'s metric table; one with a
/// main latency keeps its 10 000-bucket 1 µs histogram.
fn recorder(kind: ProbeKind) -> (Recorder, rtrb::Consumer<WindowRow>) {
    let (tx, rx) = rtrb::RingBuffer::new(RING_ROWS);
    let cfg = RecorderConfig {
        thread: 0,
        cpu: 1,
        window_ns: WINDOW_NS,
        threshold_ns: 100_000,
        outliers: 20,
        main_latency: kind.main_latency(),
        histogram_us: 10_000,
    };
    let mut rec = Recorder::new(kind.metrics(), &cfg, tx, Arc::new(LiveStats::new()));
    rec.start_at(T0_NS);
    (rec, rx)
}

fn bench_recorder(c: &mut Criterion) {
    let samples = stream();
    let mut g = c.benchmark_group("recorder");
    g.throughput(Throughput::Elements(1));
    for (id, export) in [("push", false), ("push_metrics", true)] {
        let (mut rec, mut rows) = recorder(ProbeKind::Cyclic);
        if export {
            api::export_metrics(&mut rec);
        }
        // One pass first, so the outlier keepers are full and the histograms
        // warm: the steady state of a real run.
        for s in &samples {
            CycleSink::push(&mut rec, s);
        }
        while rows.pop().is_ok() {}
        g.bench_function(id, |b| {
            let mut at = 0usize;
            b.iter_custom(|iters| {
                timed(iters, &mut at, &samples, &mut rows, |s| {
                    CycleSink::push(&mut rec, s)
                })
            });
        });
        assert_eq!(
            rec.windows.dropped(),
            0,
            "the ring overflowed; drain more often"
        );
        black_box(&rec);
    }
    g.finish();
}

fn bench_event_recorder(c: &mut Criterion) {
    let mut g = c.benchmark_group("event_recorder");
    g.throughput(Throughput::Elements(1));
    for (id, kind, cycles, export) in [
        ("push_1_metric", ProbeKind::Ctxswitch, false, false),
        ("push_3_metrics", ProbeKind::Response, false, false),
        ("push_3_metrics_exported", ProbeKind::Response, false, true),
        ("push_2_metrics_cycles", ProbeKind::Chase, true, false),
    ] {
        let samples = events(kind.metrics().len(), cycles);
        let (mut rec, mut rows) = recorder(kind);
        if export {
            api::export_metrics(&mut rec);
        }
        for s in &samples {
            SampleSink::push(&mut rec, s);
        }
        while rows.pop().is_ok() {}
        g.bench_function(id, |b| {
            let mut at = 0usize;
            b.iter_custom(|iters| {
                timed(iters, &mut at, &samples, &mut rows, |s| {
                    SampleSink::push(&mut rec, s)
                })
            });
        });
        assert_eq!(rec.windows.dropped(), 0, "the ring overflowed");
        black_box(&rec);
    }
    g.finish();
}

fn bench_window(c: &mut Criterion) {
    let mut g = c.benchmark_group("window");
    g.throughput(Throughput::Elements(1));

    let cycles = stream();
    let (tx, mut rows) = rtrb::RingBuffer::new(RING_ROWS);
    let mut agg = api::periodic_windows(tx);
    agg.start_at(T0_NS);
    g.bench_function("push_cycle", |b| {
        let mut at = 0usize;
        b.iter_custom(|iters| timed(iters, &mut at, &cycles, &mut rows, |s| agg.push(s)));
    });
    assert_eq!(agg.dropped(), 0, "the ring overflowed");

    let kind = ProbeKind::Response;
    let samples = events(kind.metrics().len(), false);
    let (tx, mut rows) = rtrb::RingBuffer::new(RING_ROWS);
    let mut agg = api::event_windows(kind, tx);
    agg.start_at(T0_NS);
    g.bench_function("push_3_values", |b| {
        let mut at = 0usize;
        b.iter_custom(|iters| {
            timed(iters, &mut at, &samples, &mut rows, |s| {
                api::push_values(&mut agg, s, 3)
            })
        });
    });
    assert_eq!(agg.dropped(), 0, "the ring overflowed");
    g.finish();
}

fn bench_metric_stats(c: &mut Criterion) {
    let samples = stream();
    let latencies: Vec<i64> = samples.iter().map(|s| s.latency).collect();
    let jitters: Vec<i64> = samples.iter().filter_map(|s| s.jitter).collect();

    let mut g = c.benchmark_group("metric_stats");
    g.throughput(Throughput::Elements(1));
    for (name, signed, values) in [
        ("record_latency", false, &latencies),
        ("record_jitter_signed", true, &jitters),
    ] {
        let mut stats = MetricStats::new(signed, Some(100_000));
        for &v in values.iter() {
            stats.record(v);
        }
        g.bench_function(name, |b| {
            let mut at = 0usize;
            b.iter_custom(|iters| {
                let mut n = iters;
                let t = Instant::now();
                while n > 0 {
                    let take = (n as usize).min(values.len() - at);
                    for &v in &values[at..at + take] {
                        stats.record(black_box(v));
                    }
                    at = (at + take) % values.len();
                    n -= take as u64;
                }
                t.elapsed()
            });
        });
        black_box(&stats);
    }
    g.finish();
}

criterion_group!(
    benches,
    bench_recorder,
    bench_event_recorder,
    bench_window,
    bench_metric_stats
);
criterion_main!(benches);

/// The few calls whose signatures differ between commits, so that the same
/// benchmarks run before and after a change of the sinks' API.
mod api {
    use super::*;
    use jitterlab_core::probe::MAX_METRICS;
    use jitterlab_core::probe::PERIODIC_METRICS;

    /// An event sample with `values` in its first slots.
    pub fn event(index: u64, at: u64, values: &[Option<i64>]) -> Sample {
        let mut v = [None; MAX_METRICS];
        v[..values.len()].copy_from_slice(values);
        Sample {
            index,
            at,
            values: v,
        }
    }

    /// A window aggregator for the periodic metrics.
    pub fn periodic_windows(tx: rtrb::Producer<WindowRow>) -> WindowAggregator {
        WindowAggregator::new(0, 1, 0, WINDOW_NS, PERIODIC_METRICS, tx)
    }

    /// A window aggregator for `kind`'s metrics.
    pub fn event_windows(kind: ProbeKind, tx: rtrb::Producer<WindowRow>) -> WindowAggregator {
        WindowAggregator::new(0, 1, 0, WINDOW_NS, kind.metrics(), tx)
    }

    /// Makes `rec` publish live metrics; the snapshots are never read (the
    /// metrics thread reads them on another CPU).
    pub fn export_metrics(rec: &mut Recorder) {
        let (publisher, _reader) = jitterlab_core::metrics_snapshot::channel();
        rec.export_metrics(publisher);
    }

    /// The first `n` values of `s` into `agg`.
    #[inline(always)]
    pub fn push_values(agg: &mut WindowAggregator, s: &Sample, n: usize) {
        agg.push_values(s.at, &s.values[..n], false);
    }
}
