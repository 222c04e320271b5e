//! Recorded event sequences, built by hand with exact times, and the exact
//! cycles and explanations the model makes of them.

use super::cycles::{
    is_preemption, ObservedCycle, Observer, ObserverConfig, PeriodSource, ReleaseSource,
    StartSource,
};
use crate::trace::event::{Event, EventKind};

/// The observed task.
const PLC: u32 = 100;
/// A higher-priority real-time thread.
const HOG: u32 = 50;
/// `ksoftirqd/1`.
const KSOFT: u32 = 21;
/// The timer the task sleeps on.
const TIMER: u64 = 0xffff_8880_0000_1000;
/// T0.
const MS: u64 = 1_000_000;

fn who(pid: u32) -> (&'static str, i32) {
    match pid {
        0 => ("swapper/1", 120),
        PLC => ("plc", 9),
        HOG => ("hog", 4),
        KSOFT => ("ksoftirqd/1", 120),
        _ => ("other", 120),
    }
}

/// A trace being recorded, in time order.
#[derive(Default)]
struct Trace(Vec<Event>);

impl Trace {
    fn at(&mut self, time_ns: u64, cpu: u32, kind: EventKind) -> &mut Self {
        if let Some(last) = self.0.last() {
            assert!(last.time_ns <= time_ns, "out of order at {time_ns}");
        }
        self.0.push(Event { time_ns, cpu, kind });
        self
    }

    fn switch(&mut self, t: u64, cpu: u32, prev: u32, state: u64, next: u32) -> &mut Self {
        let (pc, pp) = who(prev);
        let (nc, np) = who(next);
        self.at(
            t,
            cpu,
            EventKind::Switch {
                prev_pid: prev,
                prev_comm: pc.into(),
                prev_prio: pp,
                prev_state: state,
                next_pid: next,
                next_comm: nc.into(),
                next_prio: np,
            },
        )
    }

    fn arm(&mut self, t: u64, cpu: u32, expires_ns: u64) -> &mut Self {
        self.at(
            t,
            cpu,
            EventKind::HrtimerStart {
                pid: PLC,
                timer: TIMER,
                expires_ns,
                softexpires_ns: expires_ns,
            },
        )
    }

    fn expire(&mut self, t: u64, cpu: u32) -> &mut Self {
        self.at(
            t,
            cpu,
            EventKind::HrtimerExpire {
                timer: TIMER,
                now_ns: t,
            },
        )
    }

    fn wake(&mut self, t: u64, cpu: u32, target_cpu: u32) -> &mut Self {
        self.at(
            t,
            cpu,
            EventKind::Wakeup {
                pid: PLC,
                prio: 9,
                target_cpu,
            },
        )
    }

    /// The task goes to sleep on its timer, due at `release`, at `t`.
    fn sleep(&mut self, t: u64, cpu: u32, release: u64) -> &mut Self {
        self.arm(t - 500, cpu, release).switch(t, cpu, PLC, 1, 0)
    }

    /// A quiet timer cycle on `cpu`: released at `release`, its expiry
    /// handled `irq` later, started `latency` after the release, running
    /// 100 µs, then asleep until `release + T0`.
    fn cycle(&mut self, cpu: u32, release: u64, irq: u64, latency: u64) -> &mut Self {
        let start = release + latency;
        self.expire(release + irq, cpu)
            .wake(release + irq + 100, cpu, cpu)
            .switch(start, cpu, 0, 0, PLC)
            .sleep(start + 100_000, cpu, release + MS)
    }
}

fn observe(events: &[Event], period_ns: Option<u64>) -> (Observer, Vec<ObservedCycle>) {
    let mut o = Observer::new(&ObserverConfig::new(vec![PLC], period_ns));
    let mut out = Vec::new();
    for e in events {
        o.push(e);
        while let Some(c) = o.pop() {
            out.push(c);
        }
    }
    (o, out)
}

/// The task seen going to sleep for the release at 10 ms.
fn attached() -> Trace {
    let mut t = Trace::default();
    t.switch(9_000_000, 1, 0, 0, PLC)
        .sleep(9_100_000, 1, 10 * MS);
    t
}

#[test]
fn a_plain_timer_sleep_gives_exact_cycles_split_as_timerlat_splits_them() {
    let mut t = attached();
    t.cycle(1, 10 * MS, 2_000, 5_000)
        .cycle(1, 11 * MS, 3_000, 8_000)
        .cycle(1, 12 * MS, 2_500, 6_000);
    let (o, cycles) = observe(&t.0, Some(MS));
    assert_eq!(cycles.len(), 3);
    assert_eq!(
        cycles[0],
        ObservedCycle {
            tid: PLC,
            index: 0,
            release_ns: 10_000_000,
            release: ReleaseSource::Timer,
            expiry_handled_ns: Some(10_002_000),
            wake_ns: Some(10_002_100),
            start_ns: 10_005_000,
            start: StartSource::Traced,
            end_ns: 10_105_000,
            cpu: 1,
            migrated: false,
            latency_ns: 5_000,
            period_ns: None,
            jitter_ns: None,
            exec_ns: 100_000,
            irq_latency_ns: Some(2_000),
            thread_latency_ns: Some(3_000),
            preempted_ns: 0,
            overrun: false,
            next_release_ns: 11_000_000,
            t0_ns: MS,
            t0_source: PeriodSource::Given,
        }
    );
    let figures: Vec<_> = cycles
        .iter()
        .map(|c| {
            (
                c.index,
                c.latency_ns,
                c.irq_latency_ns,
                c.thread_latency_ns,
                c.period_ns,
                c.jitter_ns,
            )
        })
        .collect();
    assert_eq!(
        figures,
        [
            (0, 5_000, Some(2_000), Some(3_000), None, None),
            (
                1,
                8_000,
                Some(3_000),
                Some(5_000),
                Some(1_003_000),
                Some(3_000)
            ),
            (
                2,
                6_000,
                Some(2_500),
                Some(3_500),
                Some(998_000),
                Some(-2_000)
            ),
        ]
    );
    // Idle until the start: nothing traced explains the wait.
    let x = o.explain(&cycles[2]);
    assert_eq!(x.line(), "cycle 2 late by 6.000us: unexplained 6.000us");
    assert_eq!(
        (x.tid, x.cpu, x.from_ns, x.to_ns),
        (PLC, 1, 12 * MS, 12_006_000)
    );
    assert_eq!(o.not_measured(), 0);
}

#[test]
fn a_thread_running_before_the_first_sleep_is_not_taken_half() {
    // Attached while the task runs: no cycle until it has slept once.
    let mut t = Trace::default();
    t.switch(9_000_000, 1, 0, 0, PLC)
        .sleep(9_100_000, 1, 10 * MS)
        .cycle(1, 10 * MS, 1_000, 2_000);
    let (_, cycles) = observe(&t.0[1..], Some(MS));
    assert_eq!(cycles.len(), 1);
    assert_eq!(cycles[0].start_ns, 10_002_000);
}

#[test]
fn a_higher_priority_thread_before_the_start_is_named_with_its_time() {
    let mut t = attached();
    t.cycle(1, 10 * MS, 1_000, 4_000);
    // The hog runs from before the release until it sleeps at 11.040 ms.
    t.switch(10_999_000, 1, 0, 0, HOG)
        .expire(11_001_000, 1)
        .wake(11_001_100, 1, 1)
        .switch(11_040_000, 1, HOG, 1, PLC)
        .sleep(11_140_000, 1, 12 * MS);
    let (o, cycles) = observe(&t.0, Some(MS));
    let c = &cycles[1];
    assert_eq!(
        (c.latency_ns, c.irq_latency_ns, c.thread_latency_ns),
        (40_000, Some(1_000), Some(39_000))
    );
    let x = o.explain(c);
    assert_eq!(x.threads.len(), 1);
    assert_eq!(
        (
            x.threads[0].pid,
            x.threads[0].comm.as_str(),
            x.threads[0].prio
        ),
        (HOG, "hog", 4)
    );
    assert_eq!(
        x.line(),
        "cycle 1 late by 40.000us: hog (pid 50, prio 4) 40.000us"
    );
}

#[test]
fn a_preemption_during_the_cycle_is_counted_and_does_not_end_it() {
    let mut t = attached();
    t.expire(10_001_000, 1)
        .switch(10_002_000, 1, 0, 0, PLC)
        // Preempted (state 0) at 10.020 ms, back at 10.050 ms.
        .switch(10_020_000, 1, PLC, 0, HOG)
        .switch(10_050_000, 1, HOG, 1, PLC)
        // The kernel's preemption mark (TASK_REPORT_MAX) is no sleep either.
        .switch(10_060_000, 1, PLC, 0x100, HOG)
        .switch(10_065_000, 1, HOG, 1, PLC)
        .sleep(10_200_000, 1, 11 * MS);
    let (_, cycles) = observe(&t.0, Some(MS));
    assert_eq!(cycles.len(), 1);
    let c = &cycles[0];
    assert_eq!(
        (c.exec_ns, c.preempted_ns, c.end_ns),
        (198_000, 35_000, 10_200_000)
    );
    assert!(is_preemption(0) && is_preemption(0x100));
    assert!(!is_preemption(1) && !is_preemption(2) && !is_preemption(0x101));
}

#[test]
fn an_irq_and_a_softirq_are_taken_out_of_the_thread_they_interrupted() {
    const R: u64 = 10 * MS;
    let mut t = attached();
    t.expire(R + 40_000, 1)
        .wake(R + 40_500, 1, 1)
        .switch(R + 51_000, 1, 0, 0, KSOFT)
        .at(
            R + 100_000,
            1,
            EventKind::IrqEntry {
                irq: 24,
                name: "virtio0-input".into(),
            },
        )
        .at(R + 131_000, 1, EventKind::IrqExit { irq: 24 })
        .at(R + 200_000, 1, EventKind::SoftirqEntry { vec: 3 })
        .at(R + 290_000, 1, EventKind::SoftirqExit { vec: 3 })
        .switch(R + 812_000, 1, KSOFT, 1, PLC)
        .sleep(R + 900_000, 1, R + MS);
    let (o, cycles) = observe(&t.0, Some(MS));
    let c = &cycles[0];
    assert_eq!(
        (c.latency_ns, c.irq_latency_ns, c.thread_latency_ns),
        (812_000, Some(40_000), Some(772_000))
    );
    let x = o.explain(c);
    assert_eq!(
        x.line(),
        "cycle 0 late by 812.000us: ksoftirqd/1 (pid 21, prio 120) 640.000us, \
         irq 24 virtio0-input 31.000us, softirq NET_RX 90.000us, unexplained 51.000us"
    );
    assert_eq!(x.total_ns(), c.latency_ns);
    // What JSON stores, and reads back.
    let json = serde_json::to_string(&x).unwrap();
    let back: crate::explain::Explanation = serde_json::from_str(&json).unwrap();
    assert_eq!(back, x);
}

#[test]
fn an_overrun_is_a_next_release_before_the_end() {
    let mut t = attached();
    // Cycle 0 runs 1.005 ms: it arms its next expiry (11 ms) after it passed.
    t.expire(10_001_000, 1)
        .switch(10_005_000, 1, 0, 0, PLC)
        .sleep(11_010_000, 1, 11 * MS)
        .expire(11_010_600, 1)
        .switch(11_011_000, 1, 0, 0, PLC)
        .sleep(11_100_000, 1, 12 * MS);
    let (_, cycles) = observe(&t.0, Some(MS));
    let got: Vec<_> = cycles
        .iter()
        .map(|c| (c.overrun, c.next_release_ns, c.exec_ns, c.latency_ns))
        .collect();
    assert_eq!(
        got,
        [
            (true, 11_000_000, 1_005_000, 5_000),
            (false, 12_000_000, 89_000, 11_000)
        ]
    );
    assert_eq!(
        (cycles[1].irq_latency_ns, cycles[1].thread_latency_ns),
        (Some(10_600), Some(400))
    );
}

/// Cycle 0 (released at 10 ms, started at 10.005 ms) arms its timer due
/// at `due` at `armed`; the expiry is handled at `handled` with the thread
/// still on its CPU, which goes on with cycle 1 without a switch and
/// sleeps at `handled` + 100 µs for `next`, and a quiet cycle follows.
/// Each cycle's (release, start, end, overrun, latency, IRQ latency,
/// jitter), and the cycles not measured.
#[allow(clippy::type_complexity)]
fn sleep_cut_short(
    armed: u64,
    due: u64,
    handled: u64,
    next: u64,
) -> (Vec<(u64, u64, u64, bool, u64, Option<u64>, Option<i64>)>, u64) {
    let mut t = attached();
    t.expire(10_001_000, 1)
        .switch(10_005_000, 1, 0, 0, PLC)
        .arm(armed, 1, due)
        .expire(handled, 1)
        .sleep(handled + 100_000, 1, next)
        .cycle(1, next, 1_000, 2_000);
    let (o, cycles) = observe(&t.0, Some(MS));
    let got = cycles
        .iter()
        .map(|c| {
            (
                c.release_ns,
                c.start_ns,
                c.end_ns,
                c.overrun,
                c.latency_ns,
                c.irq_latency_ns,
                c.jitter_ns,
            )
        })
        .collect();
    (got, o.not_measured())
}

#[test]
fn an_overrun_whose_timer_expires_before_it_switches_out_ends_at_the_arming() {
    // Cycle 0 arms 11 ms at 11.010 ms, a time already past: the expiry is
    // handled at once, 300 ns later.
    let (got, not_measured) = sleep_cut_short(11_010_000, 11 * MS, 11_010_300, 12 * MS);
    assert_eq!(
        got,
        [
            (10 * MS, 10_005_000, 11_010_000, true, 5_000, Some(1_000), None),
            (11 * MS, 11_010_300, 11_110_300, false, 10_300, Some(10_300), Some(5_300)),
            (12 * MS, 12_002_000, 12_102_000, false, 2_000, Some(1_000), Some(-8_300)),
        ]
    );
    assert_eq!(not_measured, 0);
}

#[test]
fn a_thread_held_past_its_expiry_between_arming_and_sleeping_starts_its_next_cycle_there() {
    // Recorded shape (a VM's CPU stalled by its host): cycle 0 arms its
    // 11 ms timer at 10.105 ms, in time, and is held before it can switch
    // out; the expiry is handled at 15.3 ms. Not one 5.3 ms cycle: the
    // next is late by 4.3 ms, and the one after serves 16 ms, 5 T0 on.
    let (got, not_measured) = sleep_cut_short(10_105_000, 11 * MS, 15_300_000, 16 * MS);
    assert_eq!(
        got,
        [
            (10 * MS, 10_005_000, 10_105_000, false, 5_000, Some(1_000), None),
            (11 * MS, 15_300_000, 15_400_000, false, 4_300_000, Some(4_300_000), Some(4_295_000)),
            (16 * MS, 16_002_000, 16_102_000, false, 2_000, Some(1_000), Some(-4_298_000)),
        ]
    );
    assert_eq!(not_measured, 0);
}

#[test]
fn a_migration_is_flagged_and_explained_on_the_cpu_the_cycle_started_on() {
    let mut t = attached();
    t.cycle(1, 10 * MS, 1_000, 2_000);
    // Cycle 1 starts on CPU 0, where a hog ran.
    t.switch(10_990_000, 0, 0, 0, HOG)
        .expire(11_001_000, 1)
        .wake(11_001_100, 1, 0)
        .switch(11_007_000, 0, HOG, 1, PLC)
        .sleep(11_107_000, 0, 12 * MS)
        .cycle(1, 12 * MS, 1_000, 3_000);
    let (o, cycles) = observe(&t.0, Some(MS));
    let got: Vec<_> = cycles.iter().map(|c| (c.cpu, c.migrated)).collect();
    assert_eq!(got, [(1, false), (0, true), (1, true)]);
    assert_eq!(
        o.explain(&cycles[1]).line(),
        "cycle 1 late by 7.000us: hog (pid 50, prio 4) 7.000us"
    );
}

#[test]
fn lost_events_on_the_task_s_cpu_make_its_open_cycle_not_measured() {
    let mut t = attached();
    t.cycle(1, 10 * MS, 1_000, 2_000);
    // Lost while cycle 1 runs, on CPU 1: not measured.
    t.expire(11_001_000, 1).switch(11_002_000, 1, 0, 0, PLC);
    t.at(11_050_000, 1, EventKind::Lost { count: 7 });
    t.sleep(11_900_000, 1, 12 * MS);
    // Lost on another CPU: nothing of the task's.
    t.at(11_950_000, 0, EventKind::Lost { count: 3 });
    t.cycle(1, 12 * MS, 1_000, 2_000);
    // Lost while asleep: the next cycle is not measured.
    t.at(12_500_000, 1, EventKind::Lost { count: 1 });
    t.cycle(1, 13 * MS, 1_000, 2_000)
        .cycle(1, 14 * MS, 1_000, 2_000);
    let (o, cycles) = observe(&t.0, Some(MS));
    let got: Vec<_> = cycles
        .iter()
        .map(|c| (c.index, c.period_ns, c.exec_ns))
        .collect();
    // Cycle 1's 898 µs execution is never taken for a long cycle, and the
    // cycles after a lost one have no period.
    assert_eq!(
        got,
        [(0, None, 100_000), (2, None, 100_000), (4, None, 100_000)]
    );
    assert_eq!((o.not_measured(), o.lost_events()), (2, 11));
}

/// A task woken without a timer (a futex from CPU 0), on CPU 1, with
/// these wake-ups and starts.
fn untimed(wakes_starts: &[(u64, u64)]) -> Trace {
    let mut t = Trace::default();
    t.switch(9_000_000, 1, 0, 0, PLC)
        .switch(9_100_000, 1, PLC, 1, 0);
    for &(wake, start) in wakes_starts {
        t.wake(wake, 0, 1)
            .switch(start, 1, 0, 0, PLC)
            .switch(start + 100_000, 1, PLC, 1, 0);
    }
    t
}

const UNTIMED: [(u64, u64); 5] = [
    (10_001_000, 10_003_000),
    (11_001_000, 11_010_000),
    (12_001_000, 12_004_000),
    (13_001_000, 13_003_000),
    (14_001_000, 14_005_000),
];

#[test]
fn a_task_without_a_timer_is_released_on_the_given_period() {
    let (_, cycles) = observe(&untimed(&UNTIMED[..3]).0, Some(MS));
    let got: Vec<_> = cycles
        .iter()
        .map(|c| {
            (
                c.release,
                c.release_ns,
                c.latency_ns,
                c.jitter_ns,
                c.irq_latency_ns,
            )
        })
        .collect();
    // Anchored at the first wake-up, then every T0.
    assert_eq!(
        got,
        [
            (ReleaseSource::Period, 10_001_000, 2_000, None, None),
            (ReleaseSource::Period, 11_001_000, 9_000, Some(7_000), None),
            (ReleaseSource::Period, 12_001_000, 3_000, Some(-6_000), None),
        ]
    );
    assert!(cycles.iter().all(|c| c.t0_source == PeriodSource::Given));
}

#[test]
fn without_a_period_t0_is_the_median_of_the_first_periods_and_said_inferred() {
    let mut cfg = ObserverConfig::new(vec![PLC], None);
    cfg.infer_periods = 4;
    let mut o = Observer::new(&cfg);
    let events = untimed(&UNTIMED).0;
    let last_switch = events.len() - 1;
    for e in &events[..last_switch] {
        o.push(e);
    }
    // Four cycles held, three periods known: nothing yielded yet.
    assert_eq!((o.pop(), o.held(PLC), o.t0(PLC)), (None, 4, None));
    o.push(&events[last_switch]);
    // Periods 1.007, 0.994, 0.999, 1.002 ms: the lower median, 0.999 ms.
    assert_eq!(o.t0(PLC), Some((999_000, PeriodSource::Inferred)));
    let cycles: Vec<_> = std::iter::from_fn(|| o.pop()).collect();
    let got: Vec<_> = cycles
        .iter()
        .map(|c| (c.release_ns, c.latency_ns, c.jitter_ns))
        .collect();
    assert_eq!(
        got,
        [
            (10_001_000, 2_000, None),
            (11_000_000, 10_000, Some(8_000)),
            (11_999_000, 5_000, Some(-5_000)),
            (12_998_000, 5_000, Some(0)),
            (13_997_000, 8_000, Some(3_000)),
        ]
    );
    assert!(cycles.iter().all(|c| c.t0_source == PeriodSource::Inferred));
}

#[test]
fn explanations_add_up_to_the_latency_whatever_ran() {
    // A pseudo-random mix of threads, IRQs and softirqs between each
    // release and start; every part sums to the latency exactly.
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let mut t = attached();
    for k in 0..200u64 {
        let release = (10 + k) * MS;
        let mut now = release + next(3_000);
        t.expire(now, 1);
        for _ in 0..next(6) {
            now += 1 + next(20_000);
            match next(3) {
                0 => {
                    let pid = [HOG, KSOFT, 0, 77][next(4) as usize];
                    t.switch(now, 1, 0, 0, pid);
                }
                1 => {
                    t.at(
                        now,
                        1,
                        EventKind::IrqEntry {
                            irq: 24 + next(2) as u32,
                            name: "eth".into(),
                        },
                    );
                    now += 1 + next(5_000);
                    t.at(now, 1, EventKind::IrqExit { irq: 24 });
                }
                _ => {
                    let vec = next(10) as u32;
                    t.at(now, 1, EventKind::SoftirqEntry { vec });
                    now += 1 + next(5_000);
                    t.at(now, 1, EventKind::SoftirqExit { vec });
                }
            }
        }
        now += 1 + next(10_000);
        t.switch(now, 1, 0, 0, PLC);
        t.sleep(now + 50_000, 1, release + MS);
    }
    let (o, cycles) = observe(&t.0, Some(MS));
    assert_eq!(cycles.len(), 200);
    for c in &cycles {
        let x = o.explain(c);
        assert_eq!(x.total_ns(), c.latency_ns, "cycle {}", c.index);
        assert_eq!(x.unknown_ns, 0, "cycle {}", c.index);
        assert_eq!(
            c.irq_latency_ns.unwrap() + c.thread_latency_ns.unwrap(),
            c.latency_ns
        );
    }
}

#[test]
fn time_before_the_history_reaches_is_unknown_not_unexplained() {
    let mut cfg = ObserverConfig::new(vec![PLC], Some(MS));
    cfg.history_cap = 2;
    let mut o = Observer::new(&cfg);
    let mut t = attached();
    t.expire(10_001_000, 1)
        .switch(10_002_000, 1, 0, 0, HOG)
        .switch(10_003_000, 1, HOG, 1, 77)
        .switch(10_004_000, 1, 77, 1, PLC)
        .sleep(10_100_000, 1, 11 * MS);
    let mut cycles = Vec::new();
    for e in &t.0 {
        o.push(e);
        cycles.extend(std::iter::from_fn(|| o.pop()));
    }
    // Two records kept (the start and the sleep), the switch to 77 at
    // 10.003 ms folded into the state before them: known from 10.003 ms,
    // the 3 µs before it not.
    let x = o.explain(&cycles[0]);
    assert_eq!(
        x.line(),
        "cycle 0 late by 4.000us: other (pid 77, prio 120) 1.000us, before the trace history 3.000us"
    );
}

#[test]
fn the_periodic_thread_is_the_one_with_the_most_regular_periods() {
    use super::cycles::most_periodic;
    let regular = (7, vec![1_000_000, 1_001_000, 999_000, 1_000_000]);
    let bursty = (5, vec![10_000, 2_000_000, 30_000, 900_000]);
    let slow_regular = (9, vec![10_000_000, 10_000_000, 10_050_000, 10_000_000]);
    let few = (3, vec![1_000_000, 1_000_000]);
    // 7: deviations 2 µs over 4 × 1 ms; 9: 50 µs over 4 × 10 ms, larger.
    assert_eq!(
        most_periodic(
            &[bursty.clone(), regular.clone(), slow_regular, few.clone()],
            3
        ),
        Some(7)
    );
    assert_eq!(most_periodic(&[bursty, few.clone()], 3), Some(5));
    assert_eq!(most_periodic(&[few], 3), None);
    // A tie goes to the lower tid.
    assert_eq!(
        most_periodic(&[(8, regular.1.clone()), regular.clone()], 3),
        Some(7)
    );
}

#[test]
fn an_irq_open_at_the_release_counts_from_the_release_on() {
    const R: u64 = 10 * MS;
    let mut t = attached();
    t.switch(R - 50_000, 1, 0, 0, HOG)
        .at(
            R - 2_000,
            1,
            EventKind::IrqEntry {
                irq: 30,
                name: "nvme0q1".into(),
            },
        )
        .expire(R + 500, 1)
        .at(R + 3_000, 1, EventKind::IrqExit { irq: 30 })
        .switch(R + 10_000, 1, HOG, 1, PLC)
        .sleep(R + 50_000, 1, R + MS);
    let (o, cycles) = observe(&t.0, Some(MS));
    assert_eq!(
        o.explain(&cycles[0]).line(),
        "cycle 0 late by 10.000us: hog (pid 50, prio 4) 7.000us, irq 30 nvme0q1 3.000us"
    );
}

#[test]
fn a_trace_that_ends_before_enough_periods_infers_t0_from_those_it_has() {
    let mut cfg = ObserverConfig::new(vec![PLC], None);
    cfg.infer_periods = 16;
    let mut o = Observer::new(&cfg);
    for e in &untimed(&UNTIMED[..3]).0 {
        o.push(e);
    }
    assert_eq!((o.pop(), o.held(PLC)), (None, 3));
    o.finish();
    // Periods 1.007 and 0.994 ms: the lower median, 0.994 ms.
    assert_eq!(o.t0(PLC), Some((994_000, PeriodSource::Inferred)));
    assert_eq!(o.periods(PLC), 2);
    let got: Vec<_> = std::iter::from_fn(|| o.pop())
        .map(|c| (c.index, c.jitter_ns))
        .collect();
    assert_eq!(got, [(0, None), (1, Some(13_000)), (2, Some(0))]);
}

#[test]
fn a_timer_on_another_clock_is_no_release_the_period_schedule_is() {
    // A CLOCK_REALTIME sleep: its expiry, in that clock's nanoseconds, lies
    // far past the events' monotonic times.
    const WALL: u64 = 1_790_000_000_000_000_000;
    let mut t = Trace::default();
    t.switch(9_000_000, 1, 0, 0, PLC)
        .arm(9_099_500, 1, WALL)
        .switch(9_100_000, 1, PLC, 1, 0)
        .expire(10_001_000, 1)
        .wake(10_001_100, 1, 1)
        .switch(10_003_000, 1, 0, 0, PLC)
        .sleep(10_100_000, 1, WALL + MS);
    let (_, cycles) = observe(&t.0, Some(MS));
    let c = &cycles[0];
    assert_eq!(
        (c.release, c.release_ns, c.latency_ns, c.irq_latency_ns),
        (ReleaseSource::Period, 10_001_100, 1_900, None)
    );
}

impl Trace {
    /// A timer cycle on an idle `cpu` whose switch in is not traced: the
    /// expiry handled `irq` after the release, the wake-up 300 ns later,
    /// a TIMER softirq then (200 ns), the idle task re-arming its tick, and
    /// the task's own events from `start`: it arms its next timer 100 µs
    /// later and switches out to sleep.
    fn idle_cycle(&mut self, cpu: u32, release: u64, irq: u64, start: u64) -> &mut Self {
        let h = release + irq;
        self.expire(h, cpu)
            .wake(h + 300, cpu, cpu)
            .at(h + 400, cpu, EventKind::SoftirqEntry { vec: 1 })
            .at(h + 600, cpu, EventKind::SoftirqExit { vec: 1 })
            .at(
                h + 700,
                cpu,
                EventKind::HrtimerStart {
                    pid: 0,
                    timer: 0xdead,
                    expires_ns: release + 4 * MS,
                    softexpires_ns: release + 4 * MS,
                },
            )
            .sleep(start + 100_000, cpu, release + MS)
    }
}

#[test]
fn a_start_out_of_idle_without_a_switch_in_is_taken_at_the_waking_interrupt_s_last_event() {
    let mut t = attached();
    t.idle_cycle(1, 10 * MS, 2_000, 10_004_000);
    let (o, cycles) = observe(&t.0, Some(MS));
    assert_eq!(cycles.len(), 1);
    let c = &cycles[0];
    // The tick re-armed by the idle task at 10.002700 ms is the last
    // event before the task's own (its arming at 10.103500 ms).
    assert_eq!(
        (
            c.start,
            c.start_ns,
            c.end_ns,
            c.latency_ns,
            c.irq_latency_ns,
            c.thread_latency_ns,
            c.exec_ns,
            c.release,
        ),
        (
            StartSource::Untraced,
            10_002_700,
            10_104_000,
            2_700,
            Some(2_000),
            Some(700),
            101_300,
            ReleaseSource::Timer,
        )
    );
    // The CPU was idle until then, but for the TIMER softirq.
    assert_eq!(
        o.explain(c).line(),
        "cycle 0 late by 2.700us: softirq TIMER 200ns, unexplained 2.500us"
    );
}

#[test]
fn traced_and_untraced_starts_mix_with_exact_periods() {
    let mut t = attached();
    t.cycle(1, 10 * MS, 2_000, 5_000)
        .idle_cycle(1, 11 * MS, 3_000, 11_010_000)
        .cycle(1, 12 * MS, 2_500, 6_000)
        .idle_cycle(1, 13 * MS, 1_000, 13_005_000);
    let (_, cycles) = observe(&t.0, Some(MS));
    let figures: Vec<_> = cycles
        .iter()
        .map(|c| (c.index, c.start, c.start_ns, c.latency_ns, c.period_ns))
        .collect();
    assert_eq!(
        figures,
        [
            (0, StartSource::Traced, 10_005_000, 5_000, None),
            (1, StartSource::Untraced, 11_003_700, 3_700, Some(998_700)),
            (2, StartSource::Traced, 12_006_000, 6_000, Some(1_002_300)),
            (3, StartSource::Untraced, 13_001_700, 1_700, Some(995_700)),
        ]
    );
}

#[test]
fn an_irq_after_the_wake_up_stops_the_start_from_moving_past_it() {
    // A device IRQ enters after the wake-up: it may be inside the run, so
    // the start stays at the wake-up; the task's own timer is its first
    // event (no switch out of idle, none in).
    let mut t = attached();
    t.expire(10_001_000, 1)
        .wake(10_001_200, 1, 1)
        .at(
            10_003_000,
            1,
            EventKind::IrqEntry {
                irq: 24,
                name: "virtio0".into(),
            },
        )
        .at(10_003_500, 1, EventKind::IrqExit { irq: 24 })
        .sleep(10_050_000, 1, 11 * MS);
    let (_, cycles) = observe(&t.0, Some(MS));
    assert_eq!(cycles.len(), 1);
    assert_eq!(
        (cycles[0].start, cycles[0].start_ns, cycles[0].latency_ns),
        (StartSource::Untraced, 10_001_200, 1_200)
    );
}

#[test]
fn a_thread_s_own_event_after_another_thread_s_switch_in_starts_it_no_earlier() {
    // The CPU's last traced switch, after the wake-up, went to `hog`; the
    // switch from it to the task was not traced. The task ran (it went to
    // sleep), after hog was switched in.
    let mut t = attached();
    t.expire(10_001_000, 1)
        .wake(10_001_200, 1, 1)
        .switch(10_002_000, 1, 0, 0, HOG)
        .sleep(10_050_000, 1, 11 * MS);
    let (o, cycles) = observe(&t.0, Some(MS));
    assert_eq!(cycles.len(), 1);
    let c = &cycles[0];
    assert_eq!(
        (c.start, c.start_ns, c.latency_ns, c.thread_latency_ns, c.exec_ns),
        (StartSource::Untraced, 10_002_000, 2_000, Some(1_000), 48_000)
    );
    assert_eq!((o.not_measured(), o.lost_events()), (0, 0));
}

/// A thread of the VM's init process, whose switches out the kernel of
/// the module doc never traces.
const INIT_THREAD: u32 = 74;

#[test]
fn a_start_out_of_a_task_whose_switches_out_are_not_traced_is_a_cycle_not_a_longer_period() {
    // Recorded on 6.18 in a Firecracker VM under load, times rounded: the
    // task sleeps, switched out to a thread of init (traced); its timer's
    // expiry and wake-up are traced, the switch from that thread to it is
    // not. 144 µs after the wake-up a tick expires in the task's own
    // context (another interrupt: it is not taken as the start); the task
    // arms its next timer and switches out.
    let mut t = Trace::default();
    t.switch(9_000_000, 1, 0, 0, PLC)
        .arm(9_099_500, 1, 10 * MS)
        .switch(9_100_000, 1, PLC, 1, INIT_THREAD)
        .expire(10_002_000, 1)
        .wake(10_002_200, 1, 1)
        .at(
            10_146_000,
            1,
            EventKind::HrtimerExpire {
                timer: 0xbeef,
                now_ns: 10_146_000,
            },
        )
        .arm(10_168_000, 1, 11 * MS)
        .switch(10_178_000, 1, PLC, 1, INIT_THREAD)
        .cycle(1, 11 * MS, 2_000, 5_000);
    let (o, cycles) = observe(&t.0, Some(MS));
    let figures: Vec<_> = cycles
        .iter()
        .map(|c| {
            (
                c.start,
                c.start_ns,
                c.latency_ns,
                c.irq_latency_ns,
                c.thread_latency_ns,
                c.exec_ns,
                c.period_ns,
            )
        })
        .collect();
    assert_eq!(
        figures,
        [
            (
                StartSource::Untraced,
                10_002_200,
                2_200,
                Some(2_000),
                Some(200),
                175_800,
                None
            ),
            (
                StartSource::Traced,
                11_005_000,
                5_000,
                Some(2_000),
                Some(3_000),
                100_000,
                Some(1_002_800)
            ),
        ]
    );
    assert_eq!((o.not_measured(), o.lost_events()), (0, 0));
}

#[test]
fn with_no_wake_up_traced_either_the_start_is_bounded_and_its_latency_not_measured() {
    // Asleep on its timer for 10 ms; nothing traced on CPU 1 until the
    // task arms its next timer at 10.0495 ms: its start is taken at the
    // timer's expiry, the earliest it could have run.
    let mut t = attached();
    t.sleep(10_050_000, 1, 11 * MS)
        .cycle(1, 11 * MS, 2_000, 5_000);
    let (_, cycles) = observe(&t.0, Some(MS));
    let figures: Vec<_> = cycles
        .iter()
        .map(|c| {
            (
                c.start,
                c.start_ns,
                c.latency_ns,
                c.irq_latency_ns,
                c.exec_ns,
                c.period_ns,
            )
        })
        .collect();
    assert_eq!(
        figures,
        [
            (StartSource::NoWakeup, 10_000_000, 0, None, 50_000, None),
            (
                StartSource::Traced,
                11_005_000,
                5_000,
                Some(2_000),
                100_000,
                Some(1_005_000)
            ),
        ]
    );
}

#[test]
fn a_thread_switched_in_out_of_idle_untraced_is_named_from_the_first_event_after_idle() {
    // The task sleeps (its switch to idle traced); `hog` then runs out of
    // idle, untraced, until its switch to the task at 13 ms. The first
    // interrupt traced after idle ends with the task's wake-up, 1.5 µs
    // after its release: hog ran from then on, at least.
    let mut t = attached();
    t.expire(10_001_000, 1)
        .wake(10_001_500, 1, 1)
        .switch(13 * MS, 1, HOG, 1, PLC)
        .sleep(13_100_000, 1, 11 * MS);
    let (o, cycles) = observe(&t.0, Some(MS));
    assert_eq!(cycles.len(), 1);
    assert_eq!(
        (cycles[0].start, cycles[0].latency_ns),
        (StartSource::Traced, 3_000_000)
    );
    assert_eq!(
        o.explain(&cycles[0]).line(),
        "cycle 0 late by 3.000ms: hog (pid 50, prio 4) 2.998ms, unexplained 1.500us"
    );
}

#[test]
fn a_thread_watched_later_is_measured_from_its_first_sleep_after_on() {
    let mut t = attached();
    t.cycle(1, 10 * MS, 2_000, 5_000);
    let later = t.0.len();
    t.cycle(1, 11 * MS, 3_000, 8_000)
        .cycle(1, 12 * MS, 2_500, 6_000)
        .cycle(1, 13 * MS, 2_000, 4_000);
    // Watching another thread of the process first (its main thread).
    let mut o = Observer::new(&ObserverConfig::new(vec![7], Some(MS)));
    for e in &t.0[..later] {
        o.push(e);
    }
    assert!(o.pop().is_none());
    o.watch(PLC);
    o.watch(PLC);
    o.watch(0);
    let mut cycles = Vec::new();
    for e in &t.0[later..] {
        o.push(e);
        while let Some(c) = o.pop() {
            cycles.push(c);
        }
    }
    // The 11 ms cycle was running when it was first seen: not taken half.
    let figures: Vec<_> = cycles
        .iter()
        .map(|c| (c.tid, c.index, c.release_ns, c.latency_ns, c.period_ns))
        .collect();
    assert_eq!(
        figures,
        [
            (PLC, 0, 12 * MS, 6_000, None),
            (PLC, 1, 13 * MS, 4_000, Some(998_000)),
        ]
    );
    assert_eq!(o.t0(PLC), Some((MS, PeriodSource::Given)));
    assert_eq!(o.t0(0), None);
}

#[test]
fn without_a_period_a_task_on_its_timer_gets_t0_from_the_expiries_not_the_late_starts() {
    // Timers due every 1 ms exactly; starts 2 to 90 µs late, so the
    // start-to-start periods are 0.912 to 1.088 ms (their lower median
    // 0.997 ms).
    let mut cfg = ObserverConfig::new(vec![PLC], None);
    cfg.infer_periods = 4;
    let mut t = attached();
    for (k, late) in [5_000, 2_000, 90_000, 3_000, 8_000].into_iter().enumerate() {
        t.cycle(1, (10 + k as u64) * MS, 1_000, late);
    }
    let mut o = Observer::new(&cfg);
    for e in &t.0 {
        o.push(e);
    }
    assert_eq!(o.t0(PLC), Some((MS, PeriodSource::Timer)));
    assert_eq!(o.periods(PLC), 4);
    let jitter: Vec<_> = std::iter::from_fn(|| o.pop())
        .map(|c| (c.t0_source, c.jitter_ns))
        .collect();
    assert_eq!(
        jitter,
        [
            (PeriodSource::Timer, None),
            (PeriodSource::Timer, Some(-3_000)),
            (PeriodSource::Timer, Some(88_000)),
            (PeriodSource::Timer, Some(-87_000)),
            (PeriodSource::Timer, Some(5_000)),
        ]
    );
}

#[test]
fn after_skipped_releases_the_jitter_is_against_the_release_gap_as_run_cyclic_s() {
    // The 10 ms cycle starts 5.3 ms late and the task, as `run cyclic`
    // does, skips to the first release after its end (16 ms): the next
    // period, 0.705 ms, serves a release 6 T0 after the last, so its
    // jitter is 0.705 − 6 ms; the one after is on time again.
    let mut t = attached();
    t.expire(10_001_000, 1)
        .wake(10_001_100, 1, 1)
        .switch(15_300_000, 1, 0, 0, PLC)
        .sleep(15_400_000, 1, 16 * MS)
        .cycle(1, 16 * MS, 2_000, 5_000)
        .cycle(1, 17 * MS, 2_000, 4_000);
    let (_, cycles) = observe(&t.0, Some(MS));
    let figures: Vec<_> = cycles
        .iter()
        .map(|c| (c.release_ns, c.latency_ns, c.period_ns, c.jitter_ns))
        .collect();
    assert_eq!(
        figures,
        [
            (10 * MS, 5_300_000, None, None),
            (16 * MS, 5_000, Some(705_000), Some(-5_295_000)),
            (17 * MS, 4_000, Some(999_000), Some(-1_000)),
        ]
    );
}

#[test]
fn a_thread_switched_in_untraced_out_of_another_is_named_from_the_interrupt_that_woke_it() {
    // The task sleeps, switched out to a thread of init (traced). 30 µs
    // before the release an interrupt wakes `hog` here, and hog preempts
    // that thread on its return: the switch is not traced. The task's
    // expiry and wake-up come in hog's run, in another interrupt (32 µs
    // later); hog switches to the task at 50 µs (traced).
    const R: u64 = 10 * MS;
    let mut t = Trace::default();
    t.switch(9_000_000, 1, 0, 0, PLC)
        .arm(9_099_500, 1, R)
        .switch(9_100_000, 1, PLC, 1, INIT_THREAD)
        .at(
            R - 31_000,
            1,
            EventKind::HrtimerExpire {
                timer: 0xbeef,
                now_ns: R - 31_000,
            },
        )
        .at(
            R - 30_000,
            1,
            EventKind::Wakeup {
                pid: HOG,
                prio: 4,
                target_cpu: 1,
            },
        )
        .expire(R + 2_000, 1)
        .wake(R + 2_100, 1, 1)
        .switch(R + 50_000, 1, HOG, 1, PLC)
        .sleep(R + 150_000, 1, R + MS);
    let (o, cycles) = observe(&t.0, Some(MS));
    assert_eq!(cycles.len(), 1);
    assert_eq!(
        (cycles[0].start, cycles[0].latency_ns),
        (StartSource::Traced, 50_000)
    );
    assert_eq!(
        o.explain(&cycles[0]).line(),
        "cycle 0 late by 50.000us: hog (pid 50, prio 4) 50.000us"
    );
}

#[test]
fn a_period_whose_start_hid_its_timer_leaves_the_t0_to_the_gaps_there_are() {
    // Four cycles on 1 ms timers, late 2 to 90 µs, then one whose expiry
    // and wake-up the kernel did not trace (a quiet idle CPU): four
    // periods, three of them between two timer releases. T0 is still the
    // timers' 1 ms, the median of those three gaps.
    let mut cfg = ObserverConfig::new(vec![PLC], None);
    cfg.infer_periods = 4;
    let mut t = attached();
    for (k, late) in [5_000, 2_000, 90_000, 3_000].into_iter().enumerate() {
        t.cycle(1, (10 + k as u64) * MS, 1_000, late);
    }
    t.sleep(14_050_000, 1, 15 * MS);
    let mut o = Observer::new(&cfg);
    for e in &t.0 {
        o.push(e);
    }
    assert_eq!(o.t0(PLC), Some((MS, PeriodSource::Timer)));
    assert_eq!(o.periods(PLC), 3);
}

/// As `run observe` records a thread released by its own timer once its
/// first cycles said so (`filter::TimerReleased`): no wake-up, the rest
/// filtered to its own events. A traced start gives the same figures as
/// with the wake-up; an untraced one is taken at the expiry, the one
/// event of its waking interrupt left.
#[test]
fn without_wake_ups_a_timer_released_thread_s_cycles_are_the_same_but_for_wake_ns() {
    let mut t = attached();
    // Traced: expiry 2 µs late, switched in 5 µs after the release.
    t.expire(10 * MS + 2_000, 1)
        .switch(10 * MS + 5_000, 1, 0, 0, PLC)
        .sleep(10 * MS + 105_000, 1, 11 * MS);
    // Untraced (out of idle): only the expiry, then its own arming.
    t.expire(11 * MS + 3_000, 1)
        .sleep(11 * MS + 110_000, 1, 12 * MS);
    let (_, cycles) = observe(&t.0, Some(MS));
    let figures: Vec<_> = cycles
        .iter()
        .map(|c| {
            (
                c.start,
                c.release,
                c.start_ns,
                c.latency_ns,
                c.irq_latency_ns,
                c.thread_latency_ns,
                c.wake_ns,
                c.period_ns,
            )
        })
        .collect();
    assert_eq!(
        figures,
        [
            (
                StartSource::Traced,
                ReleaseSource::Timer,
                10 * MS + 5_000,
                5_000,
                Some(2_000),
                Some(3_000),
                None,
                None
            ),
            (
                StartSource::Untraced,
                ReleaseSource::Timer,
                11 * MS + 3_000,
                3_000,
                Some(3_000),
                Some(0),
                None,
                Some(998_000)
            ),
        ]
    );
}
