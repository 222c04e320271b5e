use super::*;

/// The scheduler's debug file of a 2-CPU kernel with RT group scheduling
/// (`/sys/kernel/debug/sched/debug`), cut to the parts around `rt_rq`:
/// CPU 1 throttled, a child group's queue that must be ignored.
const SCHED_DEBUG: &str = "\
Sched Debug Version: v0.11, 6.18.44 #1
ktime                                   : 20455129.818265
sysctl_sched
  .sysctl_sched_base_slice                 : 3.000000

cpu#0
  .nr_running                    : 1
cfs_rq[0]:/
  .exec_clock                    : 0.000000
  .nr_running                    : 1

rt_rq[0]:/jitterlab
  .rt_nr_running                 : 0
  .rt_throttled                  : 1
  .rt_time                       : 7.000000
  .rt_runtime                    : 0.000000

rt_rq[0]:/
  .rt_nr_running                 : 0
  .rt_throttled                  : 0
  .rt_time                       : 0.123456
  .rt_runtime                    : 950.000000

dl_rq[0]:
  .dl_nr_running                 : 0

cpu#1
  .nr_running                    : 2
rt_rq[1]:/
  .rt_nr_running                 : 1
  .rt_throttled                  : 1
  .rt_time                       : 950.004117
  .rt_runtime                    : 950.000000

dl_rq[1]:
  .dl_nr_running                 : 0
";

#[test]
fn the_runtime_limit_is_parsed_and_said_plainly() {
    let l = RtLimit::parse("950000\n", "1000000\n").unwrap();
    assert_eq!(
        l,
        RtLimit {
            runtime_us: 950_000,
            period_us: 1_000_000
        }
    );
    assert_eq!(l.hold_off_ns(), Some(50_000_000));
    assert_eq!(
        l.text(),
        "sched_rt_runtime_us=950000 of sched_rt_period_us=1000000 (real-time tasks held off 50.000ms of every 1.000s)"
    );
    let off = RtLimit::parse("-1\n", "1000000\n").unwrap();
    assert_eq!(off.hold_off_ns(), None);
    assert_eq!(
        off.text(),
        "sched_rt_runtime_us=-1 of sched_rt_period_us=1000000 (no real-time throttling)"
    );
    assert_eq!(
        RtLimit::parse("1000000", "1000000").unwrap().hold_off_ns(),
        None
    );
    assert_eq!(
        RtLimit::parse("lots", "1000000").unwrap_err(),
        "sched_rt_runtime_us must be a number (-1 for no limit), not \"lots\""
    );
    assert_eq!(
        RtLimit::parse("950000", "0").unwrap_err(),
        "sched_rt_period_us must be a positive number, not \"0\""
    );
}

#[test]
fn the_root_rt_queues_are_read_from_the_scheduler_debug_file() {
    assert_eq!(
        parse_sched_debug(SCHED_DEBUG),
        vec![
            RtRq {
                cpu: 0,
                throttled: false,
                rt_time_ns: 123_456,
                rt_runtime_ns: Some(950_000_000),
            },
            RtRq {
                cpu: 1,
                throttled: true,
                rt_time_ns: 950_004_117,
                rt_runtime_ns: Some(950_000_000),
            },
        ]
    );
    // Without RT group scheduling the header has no group path.
    let plain = "rt_rq[3]:\n  .rt_throttled : 0\n  .rt_time : 1.5\n  .rt_runtime : -1.000000\n";
    assert_eq!(
        parse_sched_debug(plain),
        vec![RtRq {
            cpu: 3,
            throttled: false,
            rt_time_ns: 1_500_000,
            rt_runtime_ns: None,
        }]
    );
    assert_eq!(parse_sched_debug("rt_rq[0]:\n  .rt_time : 1.0\n"), vec![]);
}

#[test]
fn the_kernel_log_line_is_found() {
    let log =
        "[  100.1] eth0: link up\n[ 1024.824060] sched: RT throttling activated\n[ 2000.0] other\n";
    assert_eq!(
        throttle_messages(log),
        vec!["[ 1024.824060] sched: RT throttling activated".to_string()]
    );
    assert!(throttle_messages("nothing here\n").is_empty());
}

#[test]
fn stalls_as_long_as_the_hold_off_are_matched_to_their_windows() {
    let limit = RtLimit::parse("950000", "1000000").unwrap();
    let largest = vec![
        ("chase".to_string(), 52_380_000, 3_950_000_000),
        ("sample-jitter".to_string(), 52_300_000, 3_951_000_000), // the same stall
        ("chase".to_string(), 51_900_000, 1_950_100_000),
        ("chase".to_string(), 24_999_999, 2_950_000_000), // below 50 %
        ("chase".to_string(), 75_000_001, 5_950_000_000), // above 150 %
        ("chase".to_string(), 25_000_000, 950_000_000),
        ("chase".to_string(), 75_000_000, 4_999_000_000),
    ];
    let stalls = match_stalls(&largest, &limit, 1_000_000_000);
    let seen: Vec<(&str, u64, u64)> = stalls
        .iter()
        .map(|s| (s.metric.as_str(), s.ns, s.window))
        .collect();
    assert_eq!(
        seen,
        vec![
            ("chase", 25_000_000, 0),
            ("chase", 51_900_000, 1),
            ("chase", 52_380_000, 3),
            ("chase", 75_000_000, 4)
        ]
    );
    let off = RtLimit::parse("-1", "1000000").unwrap();
    assert!(match_stalls(&largest, &off, 1_000_000_000).is_empty());
}

#[test]
fn a_throttled_fifo_probe_gets_the_cause_its_limit_and_the_fix() {
    let limit = RtLimit::parse("950000", "1000000").unwrap();
    let stalls = match_stalls(
        &[
            ("chase".to_string(), 52_380_000, 1_950_000_000),
            ("chase".to_string(), 52_100_000, 2_950_000_000),
        ],
        &limit,
        1_000_000_000,
    );
    let t = Throttling {
        limit: Some(limit),
        fair_server: true,
        messages: vec!["[ 1024.824060] sched: RT throttling activated".into()],
        rt_rqs: vec![],
        stalls,
        realtime_probe: true,
        windows_hit: vec![],
    };
    assert!(t.explains_stalls());
    assert_eq!(t.windows(), vec![1, 2]);
    assert_eq!(
        t.lines(),
        vec![
            "RT throttling: 2 stalls of up to 52.380ms in windows 1, 2: the kernel held this real-time probe off, as sched_rt_runtime_us=950000 of sched_rt_period_us=1000000 (real-time tasks held off 50.000ms of every 1.000s)".to_string(),
            "RT throttling evidence: kernel log: [ 1024.824060] sched: RT throttling activated; the kernel's fair deadline server (Linux 6.12 and later) also reserves 50 ms of every 1 s by default for normal tasks".to_string(),
            "RT throttling fix (your decision, left unchanged by jitterlab): a probe that never sleeps needs rt_runtime_us = -1 in the configuration (and fair_server_runtime = \"0ns\" on Linux 6.12 and later); both are restored after the cell, and while set a runaway real-time task can hang its CPU".to_string(),
        ]
    );
    // A normal-policy probe, no limit, or no stall of that length: nothing.
    let quiet = |f: &dyn Fn(&mut Throttling)| {
        let mut u = t.clone();
        f(&mut u);
        (u.explains_stalls(), u.lines().len())
    };
    assert_eq!(quiet(&|u| u.realtime_probe = false), (false, 0));
    assert_eq!(
        quiet(&|u| u.limit = Some(RtLimit {
            runtime_us: -1,
            period_us: 1_000_000
        })),
        (false, 0)
    );
    assert_eq!(quiet(&|u| u.stalls.clear()), (false, 0));
}

#[test]
fn each_window_a_stall_fell_in_is_marked_once_with_its_span() {
    let stall = |ns: u64, at_ns: u64| Stall {
        metric: "chase".into(),
        ns,
        at_ns,
        window: at_ns / 500_000_000,
    };
    let stalls = [
        stall(52_000_000, 100_000_000),
        stall(48_000_000, 1_150_000_000),
        stall(53_000_000, 1_400_000_000),
    ];
    assert_eq!(
        throttled_windows(&stalls, 500_000_000),
        vec![
            ThrottledWindow {
                window: 0,
                start_ns: 0,
                end_ns: 500_000_000,
                stalls: 1,
                longest_ns: 52_000_000
            },
            ThrottledWindow {
                window: 2,
                start_ns: 1_000_000_000,
                end_ns: 1_500_000_000,
                stalls: 2,
                longest_ns: 53_000_000
            },
        ]
    );
    let t = Throttling {
        limit: Some(RtLimit {
            runtime_us: 950_000,
            period_us: 1_000_000,
        }),
        stalls: stalls.to_vec(),
        realtime_probe: true,
        ..Throttling::default()
    };
    assert_eq!(
        t.windows_line(500_000_000).unwrap(),
        "RT throttling hit window 0 (0.000s to 0.500s: 1 stall of up to 52.000ms), window 2 (1.000s to 1.500s: 2 stalls of up to 53.000ms)"
    );
    // No limit: nothing is explained, no window is marked.
    let free = Throttling { limit: None, ..t };
    assert!(free.hit_windows(500_000_000).is_empty());
    assert_eq!(free.windows_line(500_000_000), None);
}
