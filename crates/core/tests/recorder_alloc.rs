//! Recording allocates nothing (design rule 2): the [`Recorder`]'s push of
//! a periodic cycle and of an event sample — statistics, outliers, window
//! ends, the 1 µs histogram of the main latency with more overflows than it
//! keeps the numbers of — measured with a counting global allocator
//! (`stats_alloc`, so that no `unsafe` is written here).
//!
//! This file is its own test binary, run without libtest's harness, so
//! no other thread allocates while the region is measured.
//!
//! The design rules cited here are in `docs/design.md`.

use std::alloc::System;
use std::sync::Arc;

use jitterlab_core::cycle::Schedule;
use jitterlab_core::recorder::{
    slots, CycleSink, LatencyHistogram, LiveStats, Recorder, RecorderConfig, Sample, SampleSink,
};
use jitterlab_core::result::ProbeKind;
use jitterlab_core::window::WindowRow;
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

mod common;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Samples pushed through each recorder: more overflows than
/// [`LatencyHistogram::KEEP_OVERFLOWS`].
const SAMPLES: u64 = 5_000;

/// A recorder of `kind` with 100 µs of 1 µs buckets and 1 ms windows.
fn recorder(kind: ProbeKind) -> (Recorder, rtrb::Consumer<WindowRow>) {
    let (tx, rx) = rtrb::RingBuffer::new(8192);
    let cfg = RecorderConfig {
        thread: 0,
        cpu: 1,
        window_ns: 1_000_000,
        threshold_ns: 50_000,
        outliers: 20,
        main_latency: kind.main_latency(),
        histogram_us: 100,
    };
    (
        Recorder::new(kind.metrics(), &cfg, tx, Arc::new(LiveStats::new())),
        rx,
    )
}

/// Latency `i` of a run: every other one past the histogram's 100 µs.
fn latency(i: u64) -> u64 {
    if i.is_multiple_of(2) {
        1_000 + (i % 97) * 1_000
    } else {
        150_000 + i
    }
}

fn pushing_cycles_and_samples_allocates_nothing() {
    let (mut periodic, _rows_p) = recorder(ProbeKind::Wakeup);
    let (mut event, _rows_e) = recorder(ProbeKind::Response);
    periodic.start_at(0);
    event.start_at(0);
    let mut sched = Schedule::new(0, 200_000);
    let cycles: Vec<_> = (0..SAMPLES)
        .map(|i| {
            let rel = sched.next_release();
            let start = rel + latency(i);
            sched.complete(start, start + 10_000)
        })
        .collect();
    let samples: Vec<Sample> = (0..SAMPLES)
        .map(|i| Sample {
            index: i,
            at: i * 200_000,
            values: slots([Some(500), Some(latency(i) as i64), None]),
        })
        .collect();

    let region = Region::new(GLOBAL);
    for (c, s) in cycles.iter().zip(&samples) {
        CycleSink::push(&mut periodic, c);
        SampleSink::push(&mut event, s);
    }
    let stats = region.change();
    common::assert_nothing_allocated(stats);
    for r in [&periodic, &event] {
        let h = r.histogram.as_ref().unwrap();
        assert_eq!(h.count(), SAMPLES);
        assert_eq!(h.overflows, SAMPLES / 2);
        assert_eq!(h.overflow_cycles.len(), LatencyHistogram::KEEP_OVERFLOWS);
        assert!(r.windows.pushed() > 0, "window ends were crossed");
    }
}

/// Runs without libtest (`harness = false` in `Cargo.toml`): libtest's own
/// main thread allocates while a test runs, and the counts are
/// process-wide, so under its harness the region could count them.
fn main() {
    pushing_cycles_and_samples_allocates_nothing();
    println!("test pushing_cycles_and_samples_allocates_nothing ... ok");
}
