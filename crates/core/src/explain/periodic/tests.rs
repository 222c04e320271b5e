//! The mapping from a periodic probe's cycles and the recorded trace to
//! explanations, part by part, in ns.

use super::*;

const R: u64 = 10_000_000;
const PROBE: u32 = 50;
const HOG: u32 = 77;

fn ev(time_ns: u64, cpu: u32, kind: EventKind) -> Event {
    Event { time_ns, cpu, kind }
}

fn switch(t: u64, cpu: u32, prev: (u32, &str, i32), next: (u32, &str, i32)) -> Event {
    ev(
        t,
        cpu,
        EventKind::Switch {
            prev_pid: prev.0,
            prev_comm: prev.1.into(),
            prev_prio: prev.2,
            prev_state: 1,
            next_pid: next.0,
            next_comm: next.1.into(),
            next_prio: next.2,
        },
    )
}

const IDLE: (u32, &str, i32) = (0, "swapper/1", 120);
const ME: (u32, &str, i32) = (PROBE, "jitterlab-cpu1", 4);
const JL_HOG: (u32, &str, i32) = (HOG, "jl-hog", 1);

/// CPU 1 idle before the release `R`; the timer IRQ runs 3 us, a softirq
/// 1 us, then `jl-hog` (a higher priority) 400 us, then the probe for
/// 5 us until its clock read at `R + 410 us`.
fn late_cycle() -> Vec<Event> {
    vec![
        switch(R - 500_000, 1, ME, IDLE),
        ev(
            R + 2_000,
            1,
            EventKind::IrqEntry {
                irq: 236,
                name: "timer".into(),
            },
        ),
        ev(R + 5_000, 1, EventKind::IrqExit { irq: 236 }),
        ev(R + 5_000, 1, EventKind::SoftirqEntry { vec: 8 }),
        ev(R + 6_000, 1, EventKind::SoftirqExit { vec: 8 }),
        switch(R + 6_000, 1, IDLE, JL_HOG),
        switch(R + 405_000, 1, JL_HOG, ME),
    ]
}

fn wanted(cycle: u64, release_ns: u64, start_ns: u64, window: u64, over: bool) -> Wanted {
    Wanted {
        thread: 0,
        tid: PROBE,
        cpu: 1,
        cycle,
        release_ns,
        start_ns,
        window,
        over,
    }
}

#[test]
fn a_late_cycle_is_cut_into_what_ran_on_its_cpu_in_ns() {
    let mut x = Explainer::new(&[1]);
    for e in late_cycle() {
        x.push(&e);
    }
    // The trace has passed the start once an event after it is in.
    x.want(wanted(7, R, R + 410_000, 0, true));
    x.explain_ready();
    assert!(x.detail.explanations.is_empty(), "explained too early");
    x.push(&switch(R + 600_000, 1, ME, IDLE));
    x.explain_ready();
    let d = x.finish();
    assert_eq!(d.explanations.len(), 1);
    let e = &d.explanations[0];
    assert_eq!((e.tid, e.cycle, e.cpu), (PROBE, 7, 1));
    assert_eq!((e.from_ns, e.to_ns), (R, R + 410_000));
    assert_eq!(
        e.threads
            .iter()
            .map(|p| (p.pid, p.comm.as_str(), p.prio, p.ns))
            .collect::<Vec<_>>(),
        [
            (HOG, "jl-hog", 1, 399_000),
            (PROBE, "jitterlab-cpu1", 4, 5_000)
        ]
    );
    assert_eq!(
        e.irqs
            .iter()
            .map(|p| (p.irq, p.name.as_str(), p.ns))
            .collect::<Vec<_>>(),
        [(236, "timer", 3_000)]
    );
    assert_eq!(
        e.softirqs
            .iter()
            .map(|p| (p.name.as_str(), p.ns))
            .collect::<Vec<_>>(),
        [("HRTIMER", 1_000)]
    );
    assert_eq!((e.unexplained_ns, e.unknown_ns), (2_000, 0));
    assert_eq!(e.total_ns(), 410_000);
    assert_eq!(
        e.line(),
        "cycle 7 late by 410.000us: jl-hog (pid 77, prio 1) 399.000us, \
         jitterlab-cpu1 (pid 50, prio 4) 5.000us, irq 236 timer 3.000us, \
         softirq HRTIMER 1.000us, unexplained 2.000us"
    );
    assert_eq!(d.events, 8);
    assert_eq!(d.explanation(1, 7), Some(e));
    assert_eq!(d.explanation(2, 7), None);
}

#[test]
fn the_picker_hands_over_each_window_s_rising_worst_and_every_cycle_over_the_threshold() {
    // Windows of 1 ms from t0 = 1 s, threshold 50 us.
    let t0 = 1_000_000_000;
    let mut p = Picker::new(t0, 1_000_000, 50_000);
    let mut pick = |release: u64, latency: u64| p.pick(t0 + release, t0 + release + latency);
    assert_eq!(
        pick(0, 10_000),
        Some((0, false)),
        "the first is the worst so far"
    );
    assert_eq!(pick(100_000, 5_000), None);
    assert_eq!(pick(200_000, 20_000), Some((0, false)));
    assert_eq!(pick(300_000, 20_000), None, "equal to the worst");
    assert_eq!(pick(400_000, 60_000), Some((0, true)));
    assert_eq!(
        pick(500_000, 55_000),
        Some((0, true)),
        "over, not the worst"
    );
    assert_eq!(pick(1_000_000, 1_000), Some((1, false)), "a new window");
    assert_eq!(pick(1_100_000, 900), None);
    assert_eq!(pick(2_500_000, 0), None, "no latency is no worst");
}

#[test]
fn each_window_keeps_its_worst_and_every_cycle_over_the_threshold() {
    let mut x = Explainer::new(&[1]);
    x.push(&switch(R - 1_000, 1, IDLE, ME));
    // Window 0: cycles 0 (10 us), 1 (30 us, its worst), 2 (80 us, over);
    // window 1: cycle 3 (20 us, its worst); window 2: 4 (90 us, over and
    // worst).
    for (cycle, release, latency, window, over) in [
        (0, R, 10_000, 0, false),
        (1, R + 1_000_000, 30_000, 0, false),
        (2, R + 2_000_000, 80_000, 0, true),
        (3, R + 3_000_000, 20_000, 1, false),
        (4, R + 4_000_000, 90_000, 2, true),
    ] {
        x.want(wanted(cycle, release, release + latency, window, over));
    }
    x.push(&switch(R + 10_000_000, 1, ME, IDLE));
    x.explain_ready();
    let d = x.finish();
    let kept: Vec<(u64, u64)> = d
        .explanations
        .iter()
        .map(|e| (e.cycle, e.total_ns()))
        .collect();
    // Window 0's worst is cycle 2, kept as over; cycle 1 is not kept.
    assert_eq!(kept, [(2, 80_000), (3, 20_000), (4, 90_000)]);
    assert_eq!(d.explanations[0].threads[0].comm, "jitterlab-cpu1");
}

#[test]
fn a_cycle_whose_cpu_lost_events_is_not_explained_and_counted() {
    let mut x = Explainer::new(&[1]);
    for e in late_cycle() {
        x.push(&e);
    }
    x.push(&ev(R + 100_000, 1, EventKind::Lost { count: 12 }));
    x.want(wanted(7, R, R + 410_000, 0, true));
    x.want(wanted(8, R + 1_000_000, R + 1_001_000, 1, false));
    x.push(&switch(R + 2_000_000, 1, ME, IDLE));
    x.explain_ready();
    let d = x.finish();
    assert_eq!(d.explanations.len(), 1);
    assert_eq!(d.explanations[0].cycle, 8);
    assert_eq!((d.not_explained, d.lost_events), (1, 12));
    assert_eq!(d.events, 8);
    assert_eq!(
        d.warnings(),
        ["--explain: 1 cycles not explained (12 trace events lost)"]
    );
    // A stored detail without the newer fields reads as empty.
    let old: ExplainDetail = serde_json::from_str("{}").unwrap();
    assert_eq!(old, ExplainDetail::default());
}

#[test]
fn what_is_still_wanted_at_the_end_is_explained_with_the_trace_there_is() {
    let mut x = Explainer::new(&[1]);
    for e in late_cycle() {
        x.push(&e);
    }
    x.want(wanted(7, R, R + 410_000, 0, false));
    x.explain_ready();
    let d = x.finish();
    assert_eq!(d.explanations.len(), 1, "the window's worst, at the end");
    assert_eq!(d.explanations[0].threads[0].ns, 399_000);
    assert_eq!(d.warnings(), Vec::<String>::new());
}

#[test]
fn past_the_most_kept_the_longest_latencies_keep_their_explanation() {
    let mut x = Explainer::new(&[1]).keep_at_most(2);
    x.push(&switch(R - 1_000, 1, IDLE, ME));
    for (cycle, latency) in [(0, 300_000), (1, 100_000), (2, 200_000), (3, 50_000)] {
        let release = R + cycle * 1_000_000;
        x.want(wanted(cycle, release, release + latency, cycle, true));
    }
    x.push(&switch(R + 10_000_000, 1, ME, IDLE));
    x.explain_ready();
    let d = x.finish();
    let kept: Vec<u64> = d.explanations.iter().map(|e| e.cycle).collect();
    assert_eq!(kept, [0, 2]);
    assert_eq!(d.explanations_dropped, 2);
    assert_eq!(
        d.warnings(),
        ["--explain: 2 explanations not kept: a result keeps the 2 longest"]
    );
}
