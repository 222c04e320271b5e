//! What the HTML report's plots read from the database, and nothing else.
//!
//! Reports work from [`StoredRun`](jitterlab_core::cell::StoredRun)s, which
//! carry every figure but not the rows behind them; the plots need those
//! rows: the HDR histograms of a cell (for its percentile curve and, until a
//! cell stores its own, its 1 µs histogram) and its windows (for its
//! timeline). Three reads give them:
//!
//! * [`Store::cell_ids`] — the cells of a run, in the order
//!   [`Store::load_run`] returns them, so the two can be zipped.
//! * [`Store::metric_histograms`] — a metric's HDR histograms: the row of
//!   all threads combined when the cell stored one (a probe with more than
//!   one thread), else its threads' rows added together.
//! * [`Store::window_envelope`] — a metric's per-window min, max and mean
//!   reduced to at most `max_points` points in SQL (`GROUP BY window / k`,
//!   see [`jitterlab_core::plot`]): the maximum of the maxima, the minimum of
//!   the minima and the count-weighted mean of each group of windows, every
//!   thread together. A 48-hour run (172 800 windows) is one indexed scan of
//!   its cell's rows and at most `max_points` rows back, never every window
//!   in memory; the grouping never loses a maximum.
//!
//! These live beside the store's other reads rather than in them so that the
//! store's main file does not grow with every report.

use anyhow::{Context, Result};
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;
use jitterlab_core::plot::{windows_per_point, EnvelopePoint};
use jitterlab_core::stats::Histograms;
use rusqlite::params;

use super::Store;

/// A metric's timeline, reduced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    /// Consecutive windows per point (`k`).
    pub per_point: u64,
    /// Window rows stored for the metric (every thread).
    pub rows: u64,
    /// The points, in window order.
    pub points: Vec<EnvelopePoint>,
}

/// Reads one serialized HDR histogram (V2, as [`super::serialize`] writes).
pub(super) fn deserialize(bytes: &[u8], what: &str) -> Result<Histogram<u64>> {
    Deserializer::new()
        .deserialize(&mut &bytes[..])
        .map_err(|e| anyhow::anyhow!("reading the stored histogram of {what}: {e:?}"))
}

impl Store {
    /// The ids of a run's cells, in [`Store::load_run`]'s order.
    pub fn cell_ids(&self, run: i64) -> Result<Vec<i64>> {
        let r = self.cell_ids_inner(run);
        self.named(r)
    }

    /// The HDR histograms of `metric` in `cell`: the combined row when there
    /// is one, else every thread's added; `None` when the cell stored none
    /// (no result, or a result stored without histograms).
    pub fn metric_histograms(&self, cell: i64, metric: &str) -> Result<Option<Histograms>> {
        let r = self.metric_histograms_inner(cell, metric);
        self.named(r)
    }

    /// The timeline of `metric` in `cell` in at most `max_points` points;
    /// see the module doc.
    pub fn window_envelope(&self, cell: i64, metric: &str, max_points: u64) -> Result<Envelope> {
        let r = self.window_envelope_inner(cell, metric, max_points);
        self.named(r)
    }

    fn cell_ids_inner(&self, run: i64) -> Result<Vec<i64>> {
        let mut stmt = self
            .conn
            .prepare("SELECT id FROM cells WHERE run_id = ?1 ORDER BY id")?;
        let ids = stmt
            .query_map([run], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        Ok(ids)
    }

    fn metric_histograms_inner(&self, cell: i64, metric: &str) -> Result<Option<Histograms>> {
        let mut stmt = self.conn.prepare(
            "SELECT thread, hist_positive, hist_negative FROM metrics
             WHERE cell_id = ?1 AND metric = ?2 ORDER BY thread IS NOT NULL, thread",
        )?;
        type Row = (Option<i64>, Option<Vec<u8>>, Option<Vec<u8>>);
        let rows: Vec<Row> = stmt
            .query_map(params![cell, metric], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })?
            .collect::<rusqlite::Result<_>>()?;
        // The combined row comes first when there is one.
        let rows: Vec<&Row> = match rows.first() {
            Some(first) if first.0.is_none() => vec![first],
            _ => rows.iter().collect(),
        };
        let what = |t: Option<i64>| match t {
            Some(t) => format!("metric {metric} of cell {cell}, thread {t}"),
            None => format!("metric {metric} of cell {cell}"),
        };
        let mut out: Option<Histograms> = None;
        for (thread, pos, neg) in rows {
            let Some(pos) = pos.as_deref().filter(|b| !b.is_empty()) else {
                continue;
            };
            let positive = deserialize(pos, &what(*thread))?;
            let negative = neg
                .as_deref()
                .filter(|b| !b.is_empty())
                .map(|b| deserialize(b, &what(*thread)))
                .transpose()?;
            out = Some(match out {
                None => Histograms { positive, negative },
                Some(mut acc) => {
                    acc.positive
                        .add(&positive)
                        .with_context(|| format!("adding the threads of {}", what(None)))?;
                    match (acc.negative.as_mut(), negative) {
                        (Some(a), Some(b)) => a
                            .add(&b)
                            .with_context(|| format!("adding the threads of {}", what(None)))?,
                        (None, Some(b)) => acc.negative = Some(b),
                        _ => {}
                    }
                    acc
                }
            });
        }
        Ok(out)
    }

    fn window_envelope_inner(&self, cell: i64, metric: &str, max_points: u64) -> Result<Envelope> {
        let (rows, last): (i64, Option<i64>) = self.conn.query_row(
            "SELECT COUNT(*), MAX(window) FROM window_metrics WHERE cell_id = ?1 AND metric = ?2",
            params![cell, metric],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        let windows = last.map_or(0, |w| w.max(0) as u64 + 1);
        let k = windows_per_point(windows, max_points);
        let mut stmt = self.conn.prepare(
            "SELECT window / ?3, MAX(window), SUM(count), MIN(min), MAX(max),
                    SUM(CAST(mean AS REAL) * count)
             FROM window_metrics WHERE cell_id = ?1 AND metric = ?2
             GROUP BY window / ?3 ORDER BY 1",
        )?;
        let k_sql = i64::try_from(k).unwrap_or(i64::MAX);
        let points = stmt
            .query_map(params![cell, metric, k_sql], |r| {
                let group: i64 = r.get(0)?;
                let count: i64 = r.get(2)?;
                let max: Option<i64> = r.get(4)?;
                let weighted: Option<f64> = r.get(5)?;
                Ok(EnvelopePoint {
                    first_window: group.max(0) as u64 * k,
                    last_window: r.get::<_, i64>(1)?.max(0) as u64,
                    count: count.max(0) as u64,
                    min: r.get(3)?,
                    max,
                    mean: match (weighted, max) {
                        (Some(w), Some(_)) if count > 0 => Some((w / count as f64).round() as i64),
                        _ => None,
                    },
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        Ok(Envelope {
            per_point: k,
            rows: rows.max(0) as u64,
            points,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{RunKind, RunStart};
    use jitterlab_core::plot::{envelope, WindowPoint};
    use jitterlab_core::probe::PERIODIC_METRICS;
    use jitterlab_core::window::{WindowRow, WindowStat};

    fn start() -> RunStart<'static> {
        RunStart {
            started_at: "2026-11-21T12:00:00Z",
            probe: "cyclic",
            command_line: &[],
            params_json: "{}".into(),
            host_json: "{}".into(),
            hostname: "plc-7",
            kernel_release: "6.12",
            realtime: Some(true),
            kind: RunKind::Run,
            name: "cyclic",
            machine_id: None,
            spec_json: None,
        }
    }

    /// A window row of thread `thread` whose latency has the given figures.
    fn row(thread: u32, window: u64, count: u64, min: i64, max: i64, mean: i64) -> WindowRow {
        let mut stats = [WindowStat::default(); jitterlab_core::probe::MAX_METRICS];
        stats[0] = WindowStat {
            count,
            min,
            max,
            mean,
            ..WindowStat::default()
        };
        WindowRow {
            thread,
            cpu: thread,
            window,
            start_ns: window * 1_000_000_000,
            cycles: count,
            overruns: 0,
            metrics: &PERIODIC_METRICS[..1],
            stats,
        }
    }

    #[test]
    fn the_sql_envelope_is_the_reference_envelope() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(&dir.path().join("t.db")).unwrap();
        let ids = s.begin_run(&start()).unwrap();
        let mut rng = fastrand::Rng::with_seed(7);
        let mut rows = Vec::new();
        for w in 0..2_500u64 {
            for t in 0..2 {
                if rng.u8(..10) == 0 {
                    // A window without a sample.
                    rows.push(row(t, w, 0, 0, 0, 0));
                    continue;
                }
                let min = rng.i64(1_000..5_000);
                let max = min + rng.i64(0..100_000);
                rows.push(row(t, w, rng.u64(1..2_000), min, max, (min + max) / 2));
            }
        }
        s.insert_windows(ids.cell, &rows).unwrap();
        let points: Vec<WindowPoint> = rows
            .iter()
            .map(|r| {
                let st = r.stats[0];
                let some = (st.count > 0).then_some(());
                WindowPoint {
                    window: r.window,
                    count: st.count,
                    min: some.map(|_| st.min),
                    max: some.map(|_| st.max),
                    mean: some.map(|_| st.mean),
                }
            })
            .collect();
        for max_points in [1, 7, 1_000, 2_500, 10_000] {
            let e = s.window_envelope(ids.cell, "latency", max_points).unwrap();
            assert_eq!(e.per_point, windows_per_point(2_500, max_points));
            assert_eq!(e.rows, 5_000);
            assert_eq!(e.points, envelope(&points, e.per_point), "{max_points}");
            assert!(e.points.len() as u64 <= max_points);
        }
        let e = s.window_envelope(ids.cell, "jitter", 1_000).unwrap();
        assert_eq!((e.rows, e.points.len()), (0, 0));
        assert_eq!(s.cell_ids(ids.run).unwrap(), vec![ids.cell]);
        assert_eq!(s.cell_ids(ids.run + 1).unwrap(), Vec::<i64>::new());
    }
}
