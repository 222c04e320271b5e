//! Observing allocates nothing once warm: the [`Observer`] fed a task's
//! scheduler, timer, IRQ and softirq events — its per-CPU histories full,
//! its period inferred — and asked for its finished cycles, measured with
//! a counting global allocator (`stats_alloc`).
//!
//! This file is its own test binary, run without libtest's harness, so
//! no other thread allocates while the region is measured.

use std::alloc::System;

use jitterlab_core::observe::cycles::{Observer, ObserverConfig};
use jitterlab_core::trace::event::{Event, EventKind};
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

mod common;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const PLC: u32 = 100;
const MS: u64 = 1_000_000;
const CYCLES: u64 = 3_000;

fn switch(t: u64, cpu: u32, prev: u32, state: u64, next: u32) -> Event {
    let comm = |p: u32| if p == PLC { "plc" } else { "swapper/1" };
    Event {
        time_ns: t,
        cpu,
        kind: EventKind::Switch {
            prev_pid: prev,
            prev_comm: comm(prev).into(),
            prev_prio: 9,
            prev_state: state,
            next_pid: next,
            next_comm: comm(next).into(),
            next_prio: 9,
        },
    }
}

/// `CYCLES` cycles of a 1 ms task on CPU 1, each with an IRQ, a softirq, a
/// preemption and a switch on CPU 0.
fn events() -> Vec<Event> {
    let ev = |time_ns, cpu, kind| Event { time_ns, cpu, kind };
    let mut v = vec![switch(MS / 2, 1, 0, 0, PLC)];
    for k in 0..CYCLES {
        let r = MS + k * MS;
        v.push(ev(
            r - 900_000,
            1,
            EventKind::HrtimerStart {
                pid: PLC,
                timer: 7,
                expires_ns: r,
                softexpires_ns: r,
            },
        ));
        v.push(switch(r - 899_000, 1, PLC, 1, 0));
        v.push(switch(r - 500_000, 0, 0, 0, 300));
        v.push(ev(
            r + 1_000,
            1,
            EventKind::HrtimerExpire {
                timer: 7,
                now_ns: r,
            },
        ));
        let irq = EventKind::IrqEntry {
            irq: 24,
            name: "virtio0-input".into(),
        };
        v.push(ev(r + 1_500, 1, irq));
        v.push(ev(r + 2_000, 1, EventKind::IrqExit { irq: 24 }));
        v.push(ev(r + 2_100, 1, EventKind::SoftirqEntry { vec: 3 }));
        v.push(ev(r + 2_600, 1, EventKind::SoftirqExit { vec: 3 }));
        v.push(ev(
            r + 2_700,
            1,
            EventKind::Wakeup {
                pid: PLC,
                prio: 9,
                target_cpu: 1,
            },
        ));
        v.push(switch(r + 5_000 + (k % 3) * 1_000, 1, 0, 0, PLC));
        v.push(switch(r + 20_000, 1, PLC, 0, 0));
        v.push(switch(r + 25_000, 1, 0, 0, PLC));
    }
    v
}

fn observing_allocates_nothing_once_warm() {
    let events = events();
    let mut config = ObserverConfig::new(vec![PLC], None);
    config.history_ns = 20 * MS;
    let mut observer = Observer::new(&config);
    let (warm, measured) = events.split_at(events.len() / 3);
    let mut cycles = 0u64;
    let mut latency_sum = 0u64;
    for e in warm {
        observer.push(e);
        while let Some(c) = observer.pop() {
            cycles += 1;
            latency_sum += c.latency_ns;
        }
    }
    let region = Region::new(GLOBAL);
    for e in measured {
        observer.push(e);
        while let Some(c) = observer.pop() {
            cycles += 1;
            latency_sum += c.latency_ns;
        }
    }
    let stats = region.change();
    common::assert_nothing_allocated(stats);
    // Every cycle but the last (still running) was yielded.
    assert_eq!(cycles, CYCLES - 1);
    assert!(latency_sum > 0);
}

/// Runs without libtest (`harness = false` in `Cargo.toml`): libtest's own
/// main thread allocates while a test runs, and the counts are
/// process-wide, so under its harness the region could count them.
fn main() {
    observing_allocates_nothing_once_warm();
    println!("test observing_allocates_nothing_once_warm ... ok");
}
