//! The bucket mapping at and around every bound, and what a recorder
//! publishes: exact figures at each window's end, and only whole snapshots
//! while a writer publishes as fast as it can.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::*;
use crate::cycle::CycleSample;
use crate::probe::descriptor::PERIODIC_METRICS;
use crate::probe::RESPONSE;
use crate::recorder::{LiveStats, Recorder, RecorderConfig};
use crate::sample::{slots, CycleSink, Sample, SampleSink};
use crate::window::WindowRow;

/// The bucket by its definition: the first bound at or above `v`.
fn by_definition(v: u64) -> usize {
    BOUNDS.iter().position(|&b| v <= b).unwrap_or(BOUNDS.len())
}

#[test]
fn boundary_values_fall_in_the_bucket_they_bound() {
    assert_eq!(BUCKETS, 17);
    assert_eq!(bucket(0), 0);
    assert_eq!(bucket(1), 0);
    assert_eq!(bucket(1_000), 0);
    assert_eq!(bucket(1_001), 1);
    assert_eq!(bucket(2_000), 1);
    assert_eq!(bucket(2_001), 2);
    assert_eq!(bucket(5_000), 2);
    assert_eq!(bucket(5_001), 3);
    assert_eq!(bucket(99_999), 6);
    assert_eq!(bucket(100_000), 6);
    assert_eq!(bucket(100_001), 7);
    assert_eq!(bucket(1_000_000), 9);
    assert_eq!(bucket(50_000_000), 14);
    assert_eq!(bucket(50_000_001), 15);
    assert_eq!(bucket(100_000_000), 15);
    assert_eq!(bucket(100_000_001), 16);
    assert_eq!(bucket(u64::MAX), 16);
    for (i, &b) in BOUNDS.iter().enumerate() {
        assert_eq!(bucket(b), i, "bound {b}");
        assert_eq!(bucket(b - 1), by_definition(b - 1), "below {b}");
        assert_eq!(bucket(b + 1), i + 1, "above {b}");
    }
}

#[test]
fn every_power_of_two_and_its_neighbours_agree_with_the_definition() {
    for b in 0..64 {
        let p = 1u64 << b;
        for v in [p - 1, p, p + 1, p | (p >> 1), (p << 1).wrapping_sub(1)] {
            assert_eq!(bucket(v), by_definition(v), "value {v}");
        }
    }
    let mut rng = fastrand::Rng::with_seed(15);
    for _ in 0..100_000 {
        let v = rng.u64(..) >> rng.u32(0..64);
        assert_eq!(bucket(v), by_definition(v), "value {v}");
    }
}

#[test]
fn cumulative_counts_add_up_to_the_count() {
    let mut m = MetricSnapshot::default();
    m.buckets[0] = 2;
    m.buckets[3] = 1;
    m.buckets[16] = 4;
    m.count = 7;
    let c = m.cumulative();
    assert_eq!(&c[..5], &[2, 2, 2, 3, 3]);
    assert_eq!(c[15], 3);
    assert_eq!(c[16], 7);
}

/// A recorder of the periodic table with 1 ms windows, publishing.
fn periodic(rows: usize) -> (Recorder, Reader, rtrb::Consumer<WindowRow>) {
    let (tx, rx) = rtrb::RingBuffer::new(rows);
    let cfg = RecorderConfig {
        thread: 0,
        cpu: 1,
        window_ns: 1_000_000,
        threshold_ns: 50_000,
        outliers: 4,
        histogram_us: 1_000,
        main_latency: None,
    };
    let mut r = Recorder::new(PERIODIC_METRICS, &cfg, tx, Arc::new(LiveStats::new()));
    let (p, reader) = channel();
    r.export_metrics(p);
    r.start_at(0);
    (r, reader, rx)
}

/// Cycle `n` of a 100 µs period, released at `n · 100 µs`, with this
/// wake-up latency, period, jitter and execution time (ns).
fn cycle(n: u64, latency: i64, period: Option<i64>, jitter: Option<i64>, exec: i64) -> CycleSample {
    let release = n * 100_000;
    let start = release + latency as u64;
    CycleSample {
        cycle: n,
        release_index: n,
        release,
        start,
        end: start + exec as u64,
        latency,
        period,
        jitter,
        exec,
        overrun: exec > 100_000,
        skipped: 0,
    }
}

#[test]
fn a_snapshot_holds_every_sample_of_the_closed_windows_and_no_other() {
    let (mut r, mut reader, _rx) = periodic(16);
    // Window 0: latencies 1 µs (le 1 µs), 1.5 µs (le 2 µs), 60 µs (le
    // 100 µs); jitter +3 µs and −30 µs (by magnitude: le 5 µs, le 50 µs);
    // the last cycle runs 150 µs, an overrun.
    let w0 = [
        cycle(0, 1_000, None, None, 10_000),
        cycle(1, 1_500, Some(100_500), Some(3_000), 10_000),
        cycle(2, 60_000, Some(70_000), Some(-30_000), 150_000),
    ];
    for s in &w0 {
        CycleSink::push(&mut r, s);
    }
    // Nothing is published while window 0 is open.
    assert_eq!(*reader.read(), Snapshot::default());
    // The first cycle of window 1 closes window 0: the snapshot holds
    // window 0's three cycles, not this one.
    CycleSink::push(&mut r, &cycle(10, 200_000_000, Some(1), Some(1), 1));
    let s = *reader.read();
    assert_eq!((s.windows, s.last_window, s.samples), (1, 0, 3));
    assert_eq!((s.overruns, s.dropped_rows), (1, 0));
    let lat = &s.metrics[0];
    let mut want = [0u64; BUCKETS];
    want[0] = 1;
    want[1] = 1;
    want[6] = 1;
    assert_eq!(lat.buckets, want);
    assert_eq!((lat.count, lat.sum, lat.max), (3, 62_500, Some(60_000)));
    assert_eq!(
        lat.window,
        WindowStat {
            count: 3,
            min: 1_000,
            max: 60_000,
            mean: 20_833,
            max_cycle: 2,
            max_at_ns: 260_000,
        }
    );
    let jitter = &s.metrics[2];
    let mut want = [0u64; BUCKETS];
    want[2] = 1;
    want[5] = 1;
    assert_eq!(jitter.buckets, want);
    // The sum is of magnitudes; the maxima keep their sign.
    assert_eq!(
        (jitter.count, jitter.sum, jitter.max),
        (2, 33_000, Some(3_000))
    );
    assert_eq!((jitter.window.min, jitter.window.max), (-30_000, 3_000));
    assert_eq!(s.metrics[3].buckets[7], 1, "150 µs of execution: le 200 µs");
    assert_eq!(s.metrics[3].max, Some(150_000));
    assert_eq!(s.metrics[4], MetricSnapshot::default());
    // The end of the run publishes the last window (that cycle started at
    // 201 ms): 200 ms is above every bound (+Inf), and the maximum so far
    // moves up.
    r.finish();
    let s = *reader.read();
    assert_eq!(
        (s.windows, s.last_window, s.samples, s.overruns),
        (2, 201, 4, 1)
    );
    assert_eq!(s.metrics[0].buckets[16], 1);
    assert_eq!(s.metrics[0].count, 4);
    assert_eq!(s.metrics[0].sum, 200_062_500);
    assert_eq!(s.metrics[0].max, Some(200_000_000));
    assert_eq!(s.metrics[0].window.count, 1);
    assert_eq!(s.metrics[0].cumulative()[15], 3);
}

#[test]
fn an_event_probe_publishes_its_own_metrics_and_the_dropped_rows() {
    // A queue of one row that nobody drains: the second row is dropped.
    let (tx, _rx) = rtrb::RingBuffer::new(1);
    let cfg = RecorderConfig {
        thread: 1,
        cpu: 0,
        window_ns: 1_000,
        threshold_ns: 100,
        outliers: 1,
        histogram_us: 1_000,
        main_latency: None,
    };
    let mut r = Recorder::new(RESPONSE.metrics, &cfg, tx, Arc::new(LiveStats::new()));
    let (p, mut reader) = channel();
    r.export_metrics(p);
    r.start_at(0);
    for (i, at) in [0u64, 500, 1_500, 2_500].into_iter().enumerate() {
        let values = slots([Some(4_000), Some(9_000), (i % 2 == 0).then_some(700)]);
        SampleSink::push(
            &mut r,
            &Sample {
                index: i as u64,
                at,
                values,
            },
        );
    }
    r.finish();
    let s = *reader.read();
    assert_eq!((s.windows, s.samples, s.dropped_rows), (3, 4, 2));
    let counts: Vec<u64> = s.metrics.iter().map(|m| m.count).collect();
    assert_eq!(counts, [4, 4, 2, 0, 0, 0, 0, 0]);
    assert_eq!(s.metrics[1].buckets[3], 4, "9 µs: le 10 µs");
    assert_eq!(s.metrics[2].buckets[0], 2, "700 ns: le 1 µs");
}

#[test]
fn without_metrics_the_aggregator_keeps_no_row() {
    let (tx, _rx) = rtrb::RingBuffer::new(4);
    let cfg = RecorderConfig {
        thread: 0,
        cpu: 0,
        window_ns: 1_000,
        threshold_ns: 100,
        outliers: 1,
        histogram_us: 1_000,
        main_latency: None,
    };
    let mut r = Recorder::new(PERIODIC_METRICS, &cfg, tx, Arc::new(LiveStats::new()));
    CycleSink::push(&mut r, &cycle(0, 1_000, None, None, 10));
    r.finish();
    assert_eq!(r.windows.closed(), 1);
    assert!(r.windows.last_row().is_none());
}

#[test]
fn a_reader_sees_only_whole_snapshots_while_the_writer_publishes() {
    // The writer closes a window every second sample, as fast as it can;
    // every value is 3 µs, so in any whole snapshot the count is the
    // samples, the sum is 3 µs per sample, and bucket 2 holds them all.
    let (mut r, mut reader, mut rx) = periodic(1 << 16);
    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            for n in 0..200_000u64 {
                // Two cycles per 1 ms window (releases 5 apart: 500 µs).
                let mut c = cycle(n * 5, 3_000, Some(3_000), Some(3_000), 3_000);
                c.overrun = n % 3 == 0;
                CycleSink::push(&mut r, &c);
                if n % 1_000 == 0 {
                    while rx.pop().is_ok() {}
                }
            }
            r.finish();
            done.store(true, Ordering::Release);
        })
    };
    let (mut reads, mut last) = (0u64, Snapshot::default());
    loop {
        let finished = done.load(Ordering::Acquire);
        let s = *reader.read();
        for m in &s.metrics[..4] {
            assert_eq!(m.count, s.samples, "{s:?}");
            assert_eq!(m.buckets[2], m.count);
            assert_eq!(m.buckets.iter().sum::<u64>(), m.count);
            assert_eq!(m.sum, 3_000 * m.count);
        }
        assert!(s.windows >= last.windows && s.samples >= last.samples);
        assert!(s.samples <= 2 * s.windows);
        last = s;
        reads += 1;
        if finished {
            break;
        }
    }
    writer.join().unwrap();
    assert_eq!((last.samples, last.windows), (200_000, 100_000));
    assert_eq!(last.overruns, 66_667);
    assert!(reads > 1);
}

#[test]
fn a_snapshot_is_1768_bytes() {
    // What a window's end copies into the triple buffer: 216 bytes per
    // metric slot (17 buckets, count, sum, maximum, the window's figures
    // with the place of its maximum) and five counters.
    assert_eq!(std::mem::size_of::<MetricSnapshot>(), 216);
    assert_eq!(std::mem::size_of::<Snapshot>(), 1_768);
}
