//! What the observation model costs per traced event: the [`Observer`]'s
//! push of one event and the pop of any cycle it finished, in the
//! observer thread's loop (the CPU cost per traced event the `observe`
//! probe adds on the observer's CPU, not the task's).
//!
//! The stream: a 1 ms task on CPU 1 sleeping on its hrtimer, each cycle
//! with its timer arm, switch out, expiry, an IRQ, a softirq, the wake-up,
//! the switch in, a preemption, and a switch on CPU 0 — 12 events per
//! cycle, 10 000 cycles, replayed (history and explanations as a run keeps
//! them). `observe/explain` is one explanation of a cycle with an IRQ and
//! a softirq in its latency. Run: `cargo bench -p jitterlab-core --bench
//! observe`.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use jitterlab_core::observe::cycles::{Observer, ObserverConfig};
use jitterlab_core::trace::event::{Event, EventKind};

const PLC: u32 = 100;
const MS: u64 = 1_000_000;
const CYCLES: u64 = 10_000;

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

fn events(pass: u64) -> Vec<Event> {
    let ev = |time_ns, cpu, kind| Event { time_ns, cpu, kind };
    let base = pass * (CYCLES + 10) * MS;
    let mut v = vec![switch(base + MS / 2, 1, 0, 0, PLC)];
    for k in 0..CYCLES {
        let r = base + MS + k * MS;
        let arm = EventKind::HrtimerStart {
            pid: PLC,
            timer: 7,
            expires_ns: r,
            softexpires_ns: r,
        };
        v.push(ev(r - 900_000, 1, arm));
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
        let wake = EventKind::Wakeup {
            pid: PLC,
            prio: 9,
            target_cpu: 1,
        };
        v.push(ev(r + 2_700, 1, wake));
        v.push(switch(r + 5_000 + (k % 3) * 1_000, 1, 0, 0, PLC));
        v.push(switch(r + 20_000, 1, PLC, 0, 0));
        v.push(switch(r + 25_000, 1, 0, 0, PLC));
    }
    v
}

fn observe(c: &mut Criterion) {
    let mut g = c.benchmark_group("observe");
    g.throughput(Throughput::Elements(1));
    let config = ObserverConfig::new(vec![PLC], Some(MS));
    let mut observer = Observer::new(&config);
    // Time only moves forward: one stream per pass, built ahead of time.
    let streams: Vec<Vec<Event>> = (0..4).map(events).collect();
    for e in &streams[0] {
        observer.push(e);
        while observer.pop().is_some() {}
    }
    let all: Vec<&Event> = streams[1..].iter().flatten().collect();
    let mut i = 0;
    g.bench_function("push", |b| {
        b.iter(|| {
            observer.push(all[i % all.len()]);
            i += 1;
            while let Some(c) = observer.pop() {
                std::hint::black_box(c.latency_ns);
            }
        })
    });
    let mut late = Observer::new(&config);
    let mut last = None;
    for e in &streams[0] {
        late.push(e);
        while let Some(c) = late.pop() {
            last = Some(c);
        }
    }
    let cycle = last.expect("a finished cycle");
    g.bench_function("explain", |b| {
        b.iter(|| std::hint::black_box(late.explain(&cycle).total_ns()))
    });
    g.finish();
}

criterion_group!(benches, observe);
criterion_main!(benches);
