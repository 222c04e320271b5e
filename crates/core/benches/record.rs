//! What recording one sample costs in the probe's hot loop (DESIGN rule 2:
//! "tens of ns").
//!
//! * `recorder/push` — the full fan-out a probe thread pays per cycle:
//!   [`Recorder::push`] into four [`MetricStats`], four outlier keepers (20
//!   each), the 1 s window aggregator (feeding an `rtrb` ring of 4096 rows),
//!   a 10 000-bucket 1 µs latency histogram and the live-view atomics.
//! * `metric_stats/record` — one [`MetricStats::record`] alone, for an
//!   unsigned metric (latency) and a signed one (jitter, two histograms).
//!
//! The samples are produced ahead of time with [`Schedule::complete`] from a
//! fixed pseudo-random sequence (xorshift64, fixed seed) of wake-up latencies
//! of 1–50 µs on a 1 ms period, so the timed loop does nothing but push. The
//! stream is 10 000 samples (10 s, 10 windows) long and replayed; replaying
//! moves time backwards once per pass, which just closes one extra window, as
//! a real window boundary would. Window rows are drained from the ring outside
//! the timed sections (`iter_custom`), as the writer thread would do on
//! another CPU, and the bench checks that none was dropped.
//!
//! Throughput is one element per iteration, so criterion reports time per
//! sample. Run: `cargo bench -p jitterlab-core --bench record`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use jitterlab_core::cycle::{CycleSample, Schedule};
use jitterlab_core::sink::{LiveStats, Recorder, RecorderConfig, Sink};
use jitterlab_core::stats::MetricStats;
use jitterlab_core::window::WindowRow;

/// Samples in the replayed stream (10 s at 1 ms).
const STREAM: usize = 10_000;
/// Period of the emulated task, ns.
const PERIOD_NS: u64 = 1_000_000;
/// First release, ns (a plausible CLOCK_MONOTONIC reading).
const T0_NS: u64 = 1_000_000_000_000;
/// Rows the window ring holds.
const RING_ROWS: usize = 4096;
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

fn recorder() -> (Recorder, rtrb::Consumer<WindowRow>) {
    let (tx, rx) = rtrb::RingBuffer::new(RING_ROWS);
    let cfg = RecorderConfig {
        thread: 0,
        cpu: 1,
        window_ns: 1_000_000_000,
        threshold_ns: 100_000,
        outliers: 20,
        histogram_us: Some(10_000),
    };
    let mut rec = Recorder::new(&cfg, tx, Arc::new(LiveStats::new()));
    rec.start_at(T0_NS);
    (rec, rx)
}

fn bench_recorder(c: &mut Criterion) {
    let samples = stream();
    let (mut rec, mut rows) = recorder();
    // One pass first, so the outlier keepers are full and the histograms warm:
    // the steady state of a real run.
    for s in &samples {
        rec.push(s);
    }
    while rows.pop().is_ok() {}

    let mut g = c.benchmark_group("recorder");
    g.throughput(Throughput::Elements(1));
    g.bench_function("push", |b| {
        let mut at = 0usize;
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                let mut n = left.min(CHUNK);
                left -= n;
                let t = Instant::now();
                while n > 0 {
                    let take = (n as usize).min(STREAM - at);
                    for s in &samples[at..at + take] {
                        rec.push(black_box(s));
                    }
                    at = (at + take) % STREAM;
                    n -= take as u64;
                }
                timed += t.elapsed();
                // The writer thread's job, outside the timed section.
                while rows.pop().is_ok() {}
            }
            timed
        });
    });
    g.finish();
    assert_eq!(
        rec.windows.dropped(),
        0,
        "the ring overflowed; drain more often"
    );
    black_box(&rec);
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

criterion_group!(benches, bench_recorder, bench_metric_stats);
criterion_main!(benches);
