//! Live metrics cost the probe no allocation (design rule 2): a recorder
//! that publishes a snapshot at each window's end — bucket counts per
//! sample, the triple buffer's swap per window — and a monitor's 1 µs
//! histogram every few windows (a copy into a preallocated buffer)
//! allocates nothing, measured
//! with a counting global allocator (`stats_alloc`, so that no `unsafe` is
//! written here).
//!
//! This file is its own test binary, run without libtest's harness, so
//! no other thread allocates while the region is measured.
//!
//! The design rules cited here are in `docs/design.md`.

use std::alloc::System;
use std::sync::Arc;

use jitterlab_core::cycle::Schedule;
use jitterlab_core::metrics_snapshot::channel;
use jitterlab_core::probe::{CYCLIC, PERIODIC_METRICS, RESPONSE};
use jitterlab_core::recorder::{
    slots, CycleSink, LiveStats, Recorder, RecorderConfig, Sample, SampleSink,
};
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

mod common;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

fn publishing_snapshots_allocates_nothing() {
    let cfg = RecorderConfig {
        thread: 0,
        cpu: 1,
        window_ns: 1_000_000,
        threshold_ns: 50_000,
        outliers: 20,
        histogram_us: 1_000,
        main_latency: CYCLIC.main_latency,
    };
    let (tx, mut rows) = rtrb::RingBuffer::new(4_096);
    let mut periodic = Recorder::new(PERIODIC_METRICS, &cfg, tx, Arc::new(LiveStats::new()));
    let (p, mut periodic_reader) = channel();
    periodic.export_metrics(p);
    let (p, mut fine_reader) = jitterlab_core::fine_snapshot::fine_channel(1_000, 50);
    periodic.export_fine(p);
    let (tx, mut event_rows) = rtrb::RingBuffer::new(4_096);
    let event_cfg = RecorderConfig {
        main_latency: RESPONSE.main_latency,
        ..cfg.clone()
    };
    let mut event = Recorder::new(RESPONSE.metrics, &event_cfg, tx, Arc::new(LiveStats::new()));
    let (p, mut event_reader) = channel();
    event.export_metrics(p);
    let mut sched = Schedule::new(0, 100_000);
    periodic.start_at(0);
    event.start_at(0);

    let region = Region::new(GLOBAL);
    // 2 000 windows of ten 100 µs cycles, and an event per cycle; the
    // reader looks every window, the writer's queues are drained as the
    // writer thread would.
    for i in 0..20_000u64 {
        let rel = sched.next_release();
        let lat = 1_000 + (i * 7_919) % 60_000;
        CycleSink::push(&mut periodic, &sched.complete(rel + lat, rel + lat + 5_000));
        let values = slots([
            Some(lat as i64),
            Some(2 * lat as i64),
            (i % 3 == 0).then_some(500),
        ]);
        SampleSink::push(
            &mut event,
            &Sample {
                index: i,
                at: rel,
                values,
            },
        );
        if i % 10 == 9 {
            std::hint::black_box(periodic_reader.read());
            std::hint::black_box(fine_reader.read());
            std::hint::black_box(event_reader.read());
            while rows.pop().is_ok() {}
            while event_rows.pop().is_ok() {}
        }
    }
    periodic.finish();
    event.finish();
    let stats = region.change();
    common::assert_nothing_allocated(stats);
    let s = periodic_reader.read();
    assert_eq!((s.samples, s.metrics[0].count), (20_000, 20_000));
    assert!(s.windows >= 1_999, "{}", s.windows);
    assert_eq!(event_reader.read().metrics[2].count, 6_667);
    // The 1 µs histogram was handed over every 50 windows, the last at
    // window 1 950 (or 2 000 if the last window closed).
    let fine = fine_reader.read().expect("handed over");
    assert_eq!(fine.windows % 50, 0, "{}", fine.windows);
    assert!(fine.windows >= 1_950, "{}", fine.windows);
}

/// Runs without libtest (`harness = false` in `Cargo.toml`): libtest's own
/// main thread allocates while a test runs, and the counts are
/// process-wide, so under its harness the region could count them.
fn main() {
    publishing_snapshots_allocates_nothing();
    println!("test publishing_snapshots_allocates_nothing ... ok");
}
