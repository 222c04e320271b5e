//! Tests of a monitor's series: rollups merged across segments, the place
//! of the maximum, and the view read back ([`super::view`]), on a series
//! written through the monitor's own calls ([`filled`], which the report's
//! tests share).

use super::view::{HeldRows, MaxPoint, MonitorView, Worst};
use super::*;
use crate::store::{RunKind, RunStart, RunStatus};
use jitterlab_core::probe::MAX_METRICS;
use jitterlab_core::result::{Params, ProbeKind};
use jitterlab_core::window::WindowStat;

/// 2026-11-01T00:00:00Z, Unix seconds: the first segment's start.
pub(crate) const T: i64 = 1_793_491_200;
const DAY: i64 = 86_400;
/// The second segment starts 10 days and 3 minutes after the first.
const T2: i64 = T + 10 * DAY + 180;

/// A window row of thread `thread` (CPU 1 for thread 0, CPU 3 for
/// thread 1), window `w` of its segment, whose latency peaked at `max` ns
/// in sample `at` (0 … 999) of the window.
fn row(thread: u32, w: i64, max: i64, at: u64) -> WindowRow {
    let w = w as u64;
    let mut stats = [WindowStat::default(); MAX_METRICS];
    stats[0] = WindowStat {
        count: 1_000,
        min: 2_000,
        max,
        mean: 4_000,
        max_cycle: w * 1_000 + at,
        max_at_ns: w * 1_000_000_000 + at * 1_000_000,
    };
    WindowRow {
        thread,
        cpu: if thread == 0 { 1 } else { 3 },
        window: w,
        start_ns: w * 1_000_000_000,
        cycles: 1_000,
        overruns: 0,
        metrics: ProbeKind::Wakeup.metrics(),
        stats,
    }
}

/// Segment `seg`'s windows at wall second `at` (from its start `t0`),
/// one per CPU with these maxima (each in its window's first sample unless
/// `sample` says otherwise).
fn windows(s: &mut Store, seg: &Segment, t0: i64, at: i64, max: (i64, i64), sample: u64) {
    let w = at - t0;
    let rows = [row(0, w, max.0, sample), row(1, w, max.1, sample)];
    s.monitor_windows(seg, &rows, t0 * NS).unwrap();
}

/// Starts a segment of series `plc-7` at Unix second `t0`.
fn begin(s: &mut Store, t0: i64) -> (Segment, Option<Resumed>) {
    let started = time::OffsetDateTime::from_unix_timestamp(t0)
        .unwrap()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    let params = Params {
        duration_ns: None,
        cpus: vec![1, 3],
        ..Params::default()
    };
    let ids = s
        .begin_run_in(
            &RunStart {
                started_at: &started,
                probe: "wakeup",
                command_line: &[],
                params_json: serde_json::to_string(&params).unwrap(),
                host_json: "{}".into(),
                hostname: "plc-7",
                kernel_release: "6.12.0-rt5",
                machine_id: None,
                realtime: Some(true),
                kind: RunKind::Monitor,
                name: "plc-7",
                spec_json: None,
            },
            "host",
        )
        .unwrap();
    s.monitor_begin("plc-7", ids.run, ids.cell, "latency")
        .unwrap()
}

/// The 1 µs bins of one 5-minute histogram: `(bin, count)` pairs.
fn bins(pairs: &[(usize, u64)]) -> Vec<u64> {
    let mut b = vec![0u64; 100];
    for &(i, c) in pairs {
        b[i] = c;
    }
    b
}

/// A series of two segments on CPUs 1 and 3, written through the
/// monitor's calls:
///
/// * segment 1 (run 1, from 2026-11-01, interrupted): windows at its
///   start (maxima 50 / 20 µs), a day later (CPU 1: 20 ms, the worst ever,
///   in sample 500) and 10 days later at 00:01:29 (30 / 19 µs): it ends at
///   2026-11-11T00:01:30Z;
/// * segment 2 (run 2, from 00:03:00 that day, still running): a window at
///   once (35 / 18 µs: the same 5-minute row as segment 1's last, merged),
///   on 2026-11-13 (CPU 1: 11 ms in sample 250), on 2026-11-16 at 12:00
///   (60 / 80 µs) and at 23:59:59 (24 / 14 µs), then one a minute from
///   2026-11-17T00:00:59 to 00:59:59 (CPU 1: 25 µs + the minute's number in
///   ns; CPU 3: 15 µs, and 10.2 ms in the last, in sample 999);
/// * 5-minute histograms: CPU 1, every 5 minutes of that last hour but
///   00:30–00:35 (each 4 000 samples in bin 3, 900 in 5, 99 in 12, 1 in
///   25), and 23:55–24:00 the day before (1 000 in bin 9, outside the last
///   hour); CPU 3, 00:50–00:55 (1 000 in bin 2) and 00:55–01:00 (997 in
///   bin 2, 1 in 40, 2 beyond the last bin).
pub(crate) fn filled(s: &mut Store) {
    let (one, resumed) = begin(s, T);
    assert_eq!(resumed, None);
    windows(s, &one, T, T, (50_000, 20_000), 0);
    windows(s, &one, T, T + DAY, (20_000_000, 21_000), 500);
    windows(s, &one, T, T + 10 * DAY + 89, (30_000, 19_000), 0);
    s.finish_run_row(one.run, RunStatus::Interrupted, Some(true), 0, None)
        .unwrap();

    let (two, resumed) = begin(s, T2);
    assert_eq!(
        resumed,
        Some(Resumed {
            previous_run: one.run,
            previous_status: "interrupted".into(),
            last_ns: Some((T + 10 * DAY + 90) * NS),
        })
    );
    assert_eq!((two.series, two.run), (one.run, 2));
    windows(s, &two, T2, T2, (35_000, 18_000), 0);
    windows(s, &two, T2, T + 12 * DAY, (11_000_000, 22_000), 250);
    windows(s, &two, T2, T + 15 * DAY + 43_200, (60_000, 80_000), 0);
    let day16 = T + 16 * DAY;
    windows(s, &two, T2, day16 - 1, (24_000, 14_000), 0);
    for k in 0..60 {
        let cpu3 = if k == 59 { 10_200_000 } else { 15_000 };
        let sample = if k == 59 { 999 } else { 0 };
        windows(s, &two, T2, day16 + 59 + 60 * k, (25_000 + k, cpu3), sample);
    }
    let span = |from: i64| (from * NS, (from + 300) * NS);
    let cpu1 = bins(&[(3, 4_000), (5, 900), (12, 99), (25, 1)]);
    for j in (0..12).filter(|&j| j != 6) {
        assert!(s
            .monitor_histogram(&two, 1, span(day16 + 300 * j), &cpu1, 0)
            .unwrap());
    }
    assert!(s
        .monitor_histogram(&two, 1, span(day16 - 300), &bins(&[(9, 1_000)]), 0)
        .unwrap());
    assert!(s
        .monitor_histogram(&two, 3, span(day16 + 3_000), &bins(&[(2, 1_000)]), 0)
        .unwrap());
    assert!(s
        .monitor_histogram(&two, 3, span(day16 + 3_300), &bins(&[(2, 997), (40, 1)]), 2)
        .unwrap());
}

fn open() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(&dir.path().join("m.db")).unwrap();
    (dir, s)
}

fn filled_view() -> (tempfile::TempDir, MonitorView) {
    let (dir, mut s) = open();
    filled(&mut s);
    let v = s.monitor_view(None).unwrap();
    (dir, v)
}

fn worst(max_ns: i64, at_ns: i64, cpu: u32, run: i64, cycle: u64) -> Option<Worst> {
    Some(Worst {
        max_ns,
        at_ns,
        cpu,
        run,
        run_uid: String::new(),
        cycle,
    })
}

/// `w` without its run's uid (random per database).
fn no_uid(w: &Option<Worst>) -> Option<Worst> {
    w.clone().map(|w| Worst {
        run_uid: String::new(),
        ..w
    })
}

#[test]
fn the_view_has_the_worst_ever_of_the_week_and_of_the_day_with_their_place() {
    let (_dir, v) = filled_view();
    let day16 = T + 16 * DAY;
    assert_eq!(
        (
            v.name.as_str(),
            v.series,
            v.probe.as_str(),
            v.metric.as_str()
        ),
        ("plc-7", 1, "wakeup", "latency")
    );
    assert_eq!(v.up_to_ns, Some((day16 + 3_600) * NS));
    let ever = worst(20_000_000, (T + DAY) * NS + 500_000_000, 1, 1, 86_400_500);
    let week = worst(
        11_000_000,
        (T + 12 * DAY) * NS + 250_000_000,
        1,
        2,
        172_620_250,
    );
    let last = (day16 + 3_599) * NS + 999_000_000;
    let day = worst(10_200_000, last, 3, 2, 521_819_999);
    assert_eq!(
        (
            no_uid(&v.worst.ever),
            no_uid(&v.worst.week),
            no_uid(&v.worst.day)
        ),
        (ever.clone(), week.clone(), day.clone())
    );
    assert_eq!(v.worst.ever.as_ref().unwrap().run_uid.len(), 36);
    let cpus: Vec<(u32, [Option<Worst>; 3])> = v
        .cpus
        .iter()
        .map(|c| {
            let w = &c.worst;
            (c.cpu, [no_uid(&w.ever), no_uid(&w.week), no_uid(&w.day)])
        })
        .collect();
    let sixty = worst(60_000, (T + 15 * DAY + 43_200) * NS, 1, 2, 475_020_000);
    assert_eq!(
        cpus,
        vec![
            (1, [ever, week, sixty]),
            (3, [day.clone(), day.clone(), day]),
        ]
    );
}

#[test]
fn the_view_has_each_segment_and_the_gap_before_a_resumption() {
    let (_dir, v) = filled_view();
    let seg: Vec<_> = v
        .segments
        .iter()
        .map(|s| {
            (
                s.run,
                s.started_at.as_str(),
                s.started_ns,
                s.status.as_str(),
                s.first_window_ns,
                s.last_window_end_ns,
                s.windows,
                s.resumed,
                s.gap_before_ns,
            )
        })
        .collect();
    assert_eq!(
        seg,
        vec![
            (
                1,
                "2026-11-01T00:00:00Z",
                T * NS,
                "interrupted",
                Some(T * NS),
                Some((T + 10 * DAY + 90) * NS),
                6,
                false,
                None
            ),
            (
                2,
                "2026-11-11T00:03:00Z",
                T2 * NS,
                "running",
                Some(T2 * NS),
                Some((T + 16 * DAY + 3_600) * NS),
                128,
                true,
                Some(90 * NS)
            ),
        ]
    );
}

#[test]
fn the_last_hour_adds_the_histograms_that_ended_in_it() {
    let (_dir, v) = filled_view();
    let day16 = (T + 16 * DAY) * NS;
    let h: Vec<_> = v
        .last_hour
        .iter()
        .map(|h| {
            (
                h.cpu,
                h.histograms,
                (h.from_ns - day16) / NS,
                (h.to_ns - day16) / NS,
                h.covered_ns / NS,
                h.samples,
                h.overflows,
                [
                    h.p50_us,
                    h.p90_us,
                    h.p99_us,
                    h.p99_9_us,
                    h.p99_99_us,
                    h.max_us,
                ],
                h.rows_max_ns,
            )
        })
        .collect();
    assert_eq!(
        h,
        vec![
            // 11 × (4000 in bin 3, 900 in 5, 99 in 12, 1 in 25); the
            // histogram that ended at 00:00 is not in the hour.
            (
                1,
                11,
                0,
                3_600,
                3_300,
                55_000,
                0,
                [Some(3), Some(5), Some(12), Some(12), Some(25), Some(25)],
                25_059
            ),
            // p99.99 (rank 2000) and the maximum are among the overflows.
            (
                3,
                2,
                3_000,
                3_600,
                600,
                2_000,
                2,
                [Some(2), Some(2), Some(2), Some(40), None, None],
                10_200_000
            ),
        ]
    );
}

#[test]
fn the_view_says_what_the_retention_holds_and_reduces_the_plot() {
    let (_dir, v) = filled_view();
    let held = |rows, oldest: i64| {
        Some(HeldRows {
            rows,
            oldest_ns: oldest * NS,
        })
    };
    let day16 = T + 16 * DAY;
    assert_eq!(v.held.windows, held(134, T));
    assert_eq!(v.held.five_minute, held(36, T));
    assert_eq!(v.held.hourly, held(14, T));
    assert_eq!(v.held.histograms, held(14, day16 - 300));
    // 4 620 row starts from the first to the last: 3 to a point.
    let five = &v.plot.five_minute;
    assert_eq!(five.len(), 2);
    assert_eq!(
        (
            five[0].cpu,
            five[0].span_s,
            five[0].rows,
            five[0].rows_per_point
        ),
        (1, 300, 18, 3)
    );
    let p = |at: i64, max_ns| MaxPoint {
        start_s: at,
        max_ns,
    };
    assert_eq!(
        five[0].points,
        vec![
            p(T, 50_000),
            p(T + DAY, 20_000_000),
            p(T + 10 * DAY, 35_000),
            p(T + 12 * DAY, 11_000_000),
            p(T + 15 * DAY + 43_200, 60_000),
            p(day16 - 300, 24_000),
            p(day16 + 600, 25_014),
            p(day16 + 1_500, 25_029),
            p(day16 + 2_400, 25_044),
            p(day16 + 3_300, 25_059),
        ]
    );
    assert_eq!(five[1].cpu, 3);
    assert_eq!(five[1].points.last(), Some(&p(day16 + 3_300, 10_200_000)));
    assert_eq!(v.plot.five_minute_from_s, Some(T));
    assert_eq!(v.plot.hourly_from_s, None);
    assert_eq!(v.plot.hourly, Vec::new(), "the 5-minute rows reach back");
}

#[test]
fn the_hourly_maxima_before_the_5_minute_rows_are_plotted() {
    let (_dir, mut s) = open();
    filled(&mut s);
    // A year later everything of these rows but the hourly ones is gone.
    let (two, _) = begin(&mut s, T + 400 * DAY);
    windows(
        &mut s,
        &two,
        T + 400 * DAY,
        T + 400 * DAY,
        (9_000, 8_000),
        0,
    );
    let pruned = s
        .monitor_prune(
            &two,
            Retention::default(),
            (T + 400 * DAY + 1) * NS,
            &mut Pruner::default(),
        )
        .unwrap();
    assert_eq!(
        pruned,
        Pruned {
            windows: 134,
            rollups: 36,
            histograms: 14
        }
    );
    let v = s.monitor_view(Some("plc-7")).unwrap();
    assert_eq!(v.held.windows.map(|h| h.rows), Some(2));
    assert_eq!(v.held.five_minute.map(|h| h.rows), Some(2));
    assert_eq!(v.held.hourly.map(|h| h.rows), Some(16));
    assert_eq!(v.held.histograms, None);
    assert_eq!(
        v.plot.five_minute[0].points,
        vec![MaxPoint {
            start_s: T + 400 * DAY,
            max_ns: 9_000
        }]
    );
    assert_eq!(v.plot.five_minute_from_s, Some(T + 400 * DAY));
    assert_eq!(v.plot.hourly_from_s, Some(T));
    let hourly = &v.plot.hourly[0];
    assert_eq!((hourly.cpu, hourly.span_s, hourly.rows), (1, 3_600, 7));
    assert_eq!(
        hourly.points.first(),
        Some(&MaxPoint {
            start_s: T,
            max_ns: 50_000
        })
    );
    assert_eq!(hourly.points.len(), 7);
    // The worst ever outlives the rows it was found in.
    assert_eq!(v.worst.ever.as_ref().map(|w| w.max_ns), Some(20_000_000));
    assert_eq!(v.worst.week.as_ref().map(|w| w.max_ns), Some(9_000));
    assert_eq!(
        v.segments[2].gap_before_ns, None,
        "segment 2 left no window and no finish time"
    );
}

#[test]
fn an_unknown_series_is_bad_input_naming_those_there_are() {
    let (dir, mut s) = open();
    let e = s.monitor_view(None).unwrap_err();
    assert!(e.downcast_ref::<crate::error::BadInput>().is_some());
    assert_eq!(
        e.to_string(),
        format!(
            "no monitor series in {}; start one with: jitterlab monitor",
            dir.path().join("m.db").display()
        )
    );
    filled(&mut s);
    let e = s.monitor_view(Some("plc-8")).unwrap_err();
    assert!(e.downcast_ref::<crate::error::BadInput>().is_some());
    assert_eq!(
        e.to_string(),
        format!(
            "no monitor series named plc-8 in {}; it holds: plc-7 (jitterlab report --monitor NAME)",
            dir.path().join("m.db").display()
        )
    );
}

/// The samples beyond the last bin lie in a row before the one their
/// histogram is stored on (a span handed over at 00:02:30 reaches back
/// into 23:55–24:00, a row with no histogram of its own): their bound is
/// that row's maximum, 43 087 µs, not the 9 658 µs of the row the
/// histogram is stored on.
#[test]
fn the_bound_of_the_samples_beyond_the_bins_is_the_worst_of_every_row_their_span_overlaps() {
    let (_dir, mut s) = open();
    let day16 = T + 16 * DAY;
    let (seg, _) = begin(&mut s, day16 - 150);
    windows(
        &mut s,
        &seg,
        day16 - 150,
        day16 - 100,
        (43_087_000, 15_000),
        7,
    );
    windows(
        &mut s,
        &seg,
        day16 - 150,
        day16 + 100,
        (9_658_000, 15_000),
        0,
    );
    let span = ((day16 - 150) * NS, (day16 + 150) * NS);
    assert!(s
        .monitor_histogram(&seg, 1, span, &bins(&[(3, 1_998)]), 2)
        .unwrap());
    let v = s.monitor_view(None).unwrap();
    let h = &v.last_hour[0];
    assert_eq!(
        (h.cpu, h.samples, h.overflows, h.p99_99_us, h.rows_max_ns),
        (1, 2_000, 2, None, 43_087_000)
    );
    assert_eq!(v.worst.ever.as_ref().map(|w| w.max_ns), Some(43_087_000));
    let text = crate::report::monitor::text(&v);
    assert!(
        text.contains("CPU 1: 2 samples at or beyond the histograms' last bin (\"beyond\"), the worst of them at most 43087.000us: the largest maximum of the 5-minute rows their spans overlap\n"),
        "{text}"
    );
}

/// A segment a SIGTERM stopped reads "stopped by SIGTERM" in the view, in
/// the report and in the resumption after it; one whose process died
/// (no result stored) stays "interrupted".
#[test]
fn a_segment_stopped_by_sigterm_reads_stopped_and_one_that_died_interrupted() {
    let (_dir, mut s) = open();
    let (one, _) = begin(&mut s, T);
    windows(&mut s, &one, T, T, (50_000, 20_000), 0);
    let mut result = jitterlab_core::result::RunResult::partial(
        ProbeKind::Wakeup,
        Params::default(),
        String::new(),
        1_000_000_000,
        Default::default(),
        String::new(),
    );
    result.signal = Some(15);
    s.finish_run_row(
        one.run,
        RunStatus::Interrupted,
        Some(true),
        0,
        Some(&result),
    )
    .unwrap();
    let (two, resumed) = begin(&mut s, T + 60);
    assert_eq!(
        resumed.map(|r| r.previous_status),
        Some("stopped by SIGTERM".to_string())
    );
    windows(&mut s, &two, T + 60, T + 60, (50_000, 20_000), 0);
    s.finish_run_row(two.run, RunStatus::Interrupted, Some(true), 0, None)
        .unwrap();
    let v = s.monitor_view(None).unwrap();
    let seg: Vec<_> = v
        .segments
        .iter()
        .map(|g| (g.status.as_str(), g.signal))
        .collect();
    assert_eq!(seg, [("interrupted", Some(15)), ("interrupted", None)]);
    let text = crate::report::monitor::text(&v);
    // The uids (random per database) left out.
    let lines: Vec<String> = text
        .lines()
        .skip_while(|l| *l != "segments")
        .skip(1)
        .take(3)
        .map(|l| format!("{}{}", &l[..7], &l[17..]))
        .collect();
    assert_eq!(
        lines,
        [
            "  run  started               status              first window          last window end         windows",
            "    1  2026-11-01T00:00:00Z  stopped by SIGTERM  2026-11-01T00:00:00Z  2026-11-01T00:00:01Z          2",
            "    2  2026-11-01T00:01:00Z  interrupted         2026-11-01T00:01:00Z  2026-11-01T00:01:01Z          2  resumed after 59s",
        ]
    );
}

#[test]
fn a_series_keeps_its_marks_in_time_order_and_the_report_lists_them() {
    let (_dir, mut s) = open();
    let (seg, _) = begin(&mut s, T);
    windows(&mut s, &seg, T, T + 5, (10_000, 20_000), 7);
    // Noted out of order; a second mark at one nanosecond replaces it.
    let later = (T + 60) * NS + 250_000_000;
    s.monitor_mark(&seg, later, "task restarted: tid 41 (plc) of --comm plc was gone; re-attached to the thread(s) named plc: tid 57")
        .unwrap();
    s.monitor_mark(&seg, (T + 2) * NS, "first").unwrap();
    s.monitor_mark(&seg, (T + 2) * NS, "task restarted: tid 40 (plc) of --comm plc was gone; re-attached to the thread(s) named plc: tid 41")
        .unwrap();
    let v = s.monitor_view(None).unwrap();
    assert_eq!(
        v.marks,
        [
            ((T + 2) * NS, "task restarted: tid 40 (plc) of --comm plc was gone; re-attached to the thread(s) named plc: tid 41".to_string()),
            (later, "task restarted: tid 41 (plc) of --comm plc was gone; re-attached to the thread(s) named plc: tid 57".to_string()),
        ]
    );
    let text = crate::report::monitor::text(&v);
    assert!(
        text.contains(
            "marks\n  2026-11-01T00:00:02Z  task restarted: tid 40 (plc) of --comm plc was gone; re-attached to the thread(s) named plc: tid 41\n  2026-11-01T00:01:00Z  task restarted: tid 41 (plc) of --comm plc was gone; re-attached to the thread(s) named plc: tid 57\n"
        ),
        "{text}"
    );
    // A series without marks says nothing of them.
    let (_dir, v) = filled_view();
    assert!(v.marks.is_empty());
    assert!(!crate::report::monitor::text(&v).contains("marks"));
}
