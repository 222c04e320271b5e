//! Tests of a monitor series' write side: rollups merged across segments
//! with the place of the maximum, the histogram's row, and the retention's
//! exact deletions.

use jitterlab_core::probe::MAX_METRICS;
use jitterlab_core::result::ProbeKind;
use jitterlab_core::window::{WindowRow, WindowStat};

use super::*;
use crate::store::tests::start;
use crate::store::{RunKind, RunStart};

const S: i64 = 1_000_000_000;
/// 2026-11-24T00:00:00Z: a multiple of an hour.
const DAY0: i64 = 1_795_478_400;

fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(&dir.path().join("m.db")).unwrap();
    (dir, s)
}

/// Starts a segment of series `name` whose run started at `started_at`.
fn segment(s: &mut Store, name: &str, started_at: &str) -> (Segment, Option<Resumed>) {
    let cmd = vec!["jitterlab".to_string(), "monitor".to_string()];
    let params = serde_json::to_string(&jitterlab_core::result::Params::default()).unwrap();
    let run = RunStart {
        started_at,
        probe: "wakeup",
        kind: RunKind::Monitor,
        name,
        params_json: params,
        ..start(&cmd)
    };
    let ids = s.begin_run_in(&run, "host").unwrap();
    s.monitor_begin(name, ids.run, ids.cell, "latency").unwrap()
}

/// A wake-up window `window` of CPU 1: 1000 samples, min 2 µs, mean 5 µs,
/// the maximum `max` at cycle `cycle`, `at` ns after the first release.
fn row(window: u64, max: i64, cycle: u64, at: u64) -> WindowRow {
    let mut stats = [WindowStat::default(); MAX_METRICS];
    stats[0] = WindowStat {
        count: 1000,
        min: 2_000,
        max,
        mean: 5_000,
        max_cycle: cycle,
        max_at_ns: at,
    };
    WindowRow {
        thread: 0,
        cpu: 1,
        window,
        start_ns: window * S as u64,
        cycles: 1000,
        overruns: 0,
        metrics: ProbeKind::Wakeup.metrics(),
        stats,
    }
}

type Rollup = (i64, i64, i64, i64, i64, i64, i64, i64, i64);

/// Every rollup of `series`: span, start, count, min, max, sum, run, max
/// cycle, max at.
fn rollups(s: &Store, series: i64) -> Vec<Rollup> {
    let mut stmt = s
        .conn
        .prepare(
            "SELECT span, start, count, min, max, sum, run_id, max_cycle, max_at
             FROM monitor_rollups WHERE series = ?1 ORDER BY span, start, cpu",
        )
        .unwrap();
    let rows = stmt
        .query_map([series], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
                r.get(7)?,
                r.get(8)?,
            ))
        })
        .unwrap();
    rows.collect::<rusqlite::Result<_>>().unwrap()
}

#[test]
fn two_segments_merge_into_one_series_and_the_larger_max_keeps_its_place() {
    let (_d, mut s) = store();
    let (a, resumed) = segment(&mut s, "rack3", "2026-11-24T00:00:00Z");
    assert_eq!(resumed, None);
    assert_eq!(a.series, a.run, "a series is named by its first run");
    // Segment A: windows 0 and 1 (00:00:00 and 00:00:01).
    let t0 = DAY0 * S;
    s.monitor_windows(
        &a,
        &[
            row(0, 40_000, 17, 500_000),
            row(1, 90_000, 1_234, 1_700_000),
        ],
        t0,
    )
    .unwrap();
    // Segment B, started at 00:02:00: its window 0 falls in the same
    // 5 minutes and the same hour, with a smaller maximum, then a larger
    // one in its window 1.
    let (b, resumed) = segment(&mut s, "rack3", "2026-11-24T00:02:00Z");
    assert_eq!(b.series, a.series);
    assert_eq!(
        resumed,
        Some(Resumed {
            previous_run: a.run,
            previous_status: "running".into(),
            last_ns: Some(t0 + 2 * S),
        })
    );
    let t0b = t0 + 120 * S;
    s.monitor_windows(&b, &[row(0, 60_000, 5, 10)], t0b)
        .unwrap();
    let five = (
        FIVE_MINUTES,
        DAY0,
        3000,
        2_000,
        90_000,
        15_000_000,
        a.run,
        1_234,
        t0 + 1_700_000,
    );
    let hour = (
        HOUR,
        DAY0,
        3000,
        2_000,
        90_000,
        15_000_000,
        a.run,
        1_234,
        t0 + 1_700_000,
    );
    assert_eq!(rollups(&s, a.series), vec![five, hour]);
    s.monitor_windows(&b, &[row(1, 150_000, 2_001, 1_999_999_000)], t0b)
        .unwrap();
    let at = t0b + 1_999_999_000;
    assert_eq!(
        rollups(&s, a.series),
        vec![
            (
                FIVE_MINUTES,
                DAY0,
                4000,
                2_000,
                150_000,
                20_000_000,
                b.run,
                2_001,
                at
            ),
            (HOUR, DAY0, 4000, 2_000, 150_000, 20_000_000, b.run, 2_001, at),
        ]
    );
    // Another series is apart.
    let (c, resumed) = segment(&mut s, "rack4", "2026-11-24T00:03:00Z");
    assert_eq!((c.series, resumed), (c.run, None));
}

/// The histogram on the 5-minute row starting at `start` (Unix s): its
/// blob, span and overflows.
fn held_histogram(s: &Store, start: i64) -> (Vec<u8>, i64, i64, i64) {
    s.conn
        .query_row(
            "SELECT hist, hist_from, hist_to, hist_over FROM monitor_rollups
             WHERE span = 300 AND start = ?1",
            [start],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .unwrap()
}

#[test]
fn a_histogram_lands_on_the_row_of_its_last_window() {
    let (_d, mut s) = store();
    let (a, _) = segment(&mut s, "default", "2026-11-24T00:00:00Z");
    let t0 = DAY0 * S;
    // Windows 298 and 299 end the first 5 minutes; the histogram of
    // windows 0..300 ends at 00:05:00 exactly, which is its last window's
    // row (00:00), not the next one (which has no row yet).
    s.monitor_windows(&a, &[row(298, 1, 0, 0), row(299, 1, 0, 0)], t0)
        .unwrap();
    assert!(s
        .monitor_histogram(&a, 1, (t0, t0 + 300 * S), &[0, 2, 0, 7], 1)
        .unwrap());
    let (blob, from, to, over) = held_histogram(&s, DAY0);
    assert_eq!(blob, vec![1, 2, 1, 7]);
    assert_eq!((from, to, over), (t0, t0 + 300 * S, 1));
    // A second start within the same 5 minutes adds to it (bins, span,
    // overflows), even with more bins.
    assert!(s
        .monitor_histogram(&a, 1, (t0 + 200 * S, t0 + 250 * S), &[3, 0, 0, 1, 0, 2], 2)
        .unwrap());
    let (blob, from, to, over) = held_histogram(&s, DAY0);
    assert_eq!(
        crate::store::fine::decode_buckets(&blob, 6).unwrap(),
        vec![3, 2, 0, 8, 0, 2]
    );
    assert_eq!((from, to, over), (t0, t0 + 300 * S, 3));
    // A span whose row is not stored is dropped and said so.
    assert!(!s
        .monitor_histogram(&a, 2, (t0, t0 + 300 * S), &[1], 0)
        .unwrap());
}

#[test]
fn retention_deletes_exactly_what_is_older_than_each_span() {
    let (_d, mut s) = store();
    let (a, _) = segment(&mut s, "default", "2026-11-24T00:00:00Z");
    let t0 = DAY0 * S;
    // Windows at 0 s, 10 s, 3 h; a histogram on the first 5 minutes.
    s.monitor_windows(
        &a,
        &[row(0, 5, 0, 0), row(10, 6, 0, 0), row(10_800, 7, 0, 0)],
        t0,
    )
    .unwrap();
    s.monitor_histogram(&a, 1, (t0, t0 + 300 * S), &[1], 0)
        .unwrap();
    let keep = Retention {
        windows_s: 3_600,
        five_min_s: 7_200,
        hourly_s: Some(10_800),
    };
    let count = |s: &Store, sql: &str| -> i64 { s.conn.query_row(sql, [], |r| r.get(0)).unwrap() };
    let mut pruner = Pruner::default();
    // At 01:00:05 the window 0 (ended 00:00:01) is older than an hour,
    // window 10 (ended 00:00:11) is not; the histogram's row started at
    // 00:00, and histograms go with whole 5-minute rows ending a 5
    // minutes before the cutoff.
    let p = s
        .monitor_prune(&a, keep, t0 + 3_605 * S, &mut pruner)
        .unwrap();
    assert_eq!(
        p,
        Pruned {
            windows: 1,
            rollups: 0,
            histograms: 0
        }
    );
    assert_eq!(count(&s, "SELECT COUNT(*) FROM windows"), 2);
    assert_eq!(
        count(&s, "SELECT COUNT(*) FROM window_metrics WHERE window = 0"),
        0
    );
    // At 01:10:00 the histogram goes; the rows stay.
    let p = s
        .monitor_prune(&a, keep, t0 + 4_200 * S, &mut pruner)
        .unwrap();
    assert_eq!(
        p,
        Pruned {
            windows: 1,
            rollups: 0,
            histograms: 1
        }
    );
    assert_eq!(
        count(
            &s,
            "SELECT COUNT(*) FROM monitor_rollups WHERE hist IS NOT NULL"
        ),
        0
    );
    // At 02:10:00 the 5-minute row of 00:00 is older than 2 h (it ended at
    // 00:05); the hourly rows stay until 3 h after their hour ended.
    let p = s
        .monitor_prune(&a, keep, t0 + 7_800 * S, &mut pruner)
        .unwrap();
    assert_eq!(
        p,
        Pruned {
            windows: 0,
            rollups: 1,
            histograms: 0
        }
    );
    let p = s
        .monitor_prune(&a, keep, t0 + (3 * 3_600 + 3_600 + 1) * S, &mut pruner)
        .unwrap();
    assert_eq!(
        p,
        Pruned {
            windows: 1,
            rollups: 1,
            histograms: 0
        }
    );
    assert_eq!(
        rollups(&s, a.series)
            .iter()
            .map(|r| (r.0, r.1 - DAY0))
            .collect::<Vec<_>>(),
        vec![(FIVE_MINUTES, 10_800), (HOUR, 10_800)]
    );
    // For ever keeps every hourly row.
    let forever = Retention {
        hourly_s: None,
        ..keep
    };
    let p = s
        .monitor_prune(&a, forever, t0 + 400 * 86_400 * S, &mut pruner)
        .unwrap();
    assert_eq!(
        p,
        Pruned {
            windows: 0,
            rollups: 1,
            histograms: 0
        }
    );
    assert_eq!(rollups(&s, a.series).len(), 1);
}
