//! The read side of a monitor's series: everything `jitterlab report
//! --monitor` shows, in one [`MonitorView`] read from the database.
//!
//! A series lives for months and the view must come back in well under a
//! second on a year of it, so every figure here is read from the smallest
//! rows that hold it, each by a primary key's range:
//!
//! * **the worst ever** from the hourly rows (kept for ever: 8 760 a year
//!   per CPU), the **worst of the last week and day** from the 5-minute
//!   rows that overlap those spans (2 016 and 288 per CPU), each with the
//!   wall time, CPU, segment (run) and cycle number of its maximum;
//! * **the last hour's percentiles** from the 5-minute histograms whose
//!   span ended within the hour up to the latest data, added bin by bin
//!   (1 µs bins: a percentile is the bin its rank falls in);
//! * **the segments** from `runs`, each with its first and last stored
//!   window (one index seek per thread) and, for a resumption, the gap
//!   since the segment before;
//! * **the plot's series**: the 5-minute maxima per CPU reduced in SQL to
//!   at most [`PLOT_POINTS`] points (the largest of each group of
//!   consecutive rows, as `plots::window_envelope` reduces windows: no
//!   maximum is lost), and the hourly maxima from before the first
//!   5-minute row still held, reduced the same way.
//!
//! **Times.** "The latest data" is the end of the series' last stored
//! window (a window's wall time is its segment's start, to the second, as
//! the runs table has it, plus the window's start: the same reckoning the
//! store's retention uses), else the end of its last 5-minute row; every
//! "last day", "last week" and "last hour" is counted back from it, not
//! from the clock of the machine reading the file, so a copy of the
//! database read a month later shows the same view.
//!
//! **Percentiles beyond the bins.** A 5-minute histogram stores the samples
//! at or beyond its last bin as a count (`hist_over`), not the number of
//! bins; a percentile whose rank falls among them is reported as beyond
//! the bins (`None`), with their count and the largest 5-minute maximum of
//! the rows that hold the histograms, which bounds them.

use anyhow::Result;
use jitterlab_core::limits::MAX_HISTOGRAM_BUCKETS;
use rusqlite::{params, OptionalExtension};
use serde::Serialize;

use super::{cell_threads, floor_to, window_ns, FIVE_MINUTES, HOUR, NS, SEGMENT_T0};
use crate::error::bad;
use crate::store::Store;

/// The most points the plot's series of one CPU and one resolution has.
pub const PLOT_POINTS: i64 = 2_000;

const DAY_S: i64 = 86_400;
const WEEK_S: i64 = 7 * DAY_S;

/// What `report --monitor` shows of one series; see the module doc.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MonitorView {
    /// The series' name (its runs' name).
    pub name: String,
    /// The series' id: its first run's.
    pub series: i64,
    /// The probe of its first segment (`wakeup`, …).
    pub probe: String,
    /// The metric the rows hold: that probe's main latency.
    pub metric: String,
    /// The latest data, wall ns since the Unix epoch (module doc); `None`
    /// when the series stored nothing yet.
    pub up_to_ns: Option<i64>,
    /// Its segments, oldest first.
    pub segments: Vec<SegmentView>,
    /// What happened to its task, oldest first: (wall ns, what), e.g. a
    /// restart it was re-attached after.
    pub marks: Vec<(i64, String)>,
    /// The worst of every CPU.
    pub worst: Worsts,
    /// The worst per CPU, in CPU order.
    pub cpus: Vec<CpuWorsts>,
    /// The last hour's percentiles per CPU, in CPU order.
    pub last_hour: Vec<HourPercentiles>,
    /// What the retention holds now.
    pub held: Held,
    /// The series of the 5-minute-maxima plot.
    pub plot: MaximaPlot,
}

/// One segment: one start of the monitor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SegmentView {
    /// Its run.
    pub run: i64,
    /// The run's uid.
    pub uid: String,
    /// When it started (RFC 3339, as stored).
    pub started_at: String,
    /// The same, wall ns to the second (where its windows are counted
    /// from).
    pub started_ns: i64,
    /// Its status (`running`, `completed`, `interrupted`, …).
    pub status: String,
    /// The terminating signal that stopped it (15: SIGTERM), when its
    /// status is `interrupted` because it was stopped, not because its
    /// process died.
    pub signal: Option<i32>,
    /// Wall ns of the start of its first window still stored.
    pub first_window_ns: Option<i64>,
    /// Wall ns of the end of its last window still stored.
    pub last_window_end_ns: Option<i64>,
    /// Window rows of it still stored (every thread).
    pub windows: u64,
    /// Whether it resumed the series (every segment but the first).
    pub resumed: bool,
    /// For a resumption: ns from the end of the segment before (its last
    /// window, else its finish time) to this one's start; `None` when the
    /// segment before left neither (its windows are gone and it never
    /// finished cleanly).
    pub gap_before_ns: Option<i64>,
}

/// Where and when a maximum was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Worst {
    /// The value, ns.
    pub max_ns: i64,
    /// Its wall time, ns since the Unix epoch.
    pub at_ns: i64,
    /// The CPU.
    pub cpu: u32,
    /// The segment (run) that measured it.
    pub run: i64,
    /// That run's uid.
    pub run_uid: String,
    /// Its cycle (sample) number in that run.
    pub cycle: u64,
}

/// The worst ever, of the last week and of the last day.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Worsts {
    /// From the hourly rows.
    pub ever: Option<Worst>,
    /// From the 5-minute rows overlapping the 7 days up to the latest data.
    pub week: Option<Worst>,
    /// From the 5-minute rows overlapping the 24 hours up to it.
    pub day: Option<Worst>,
}

/// One CPU's worsts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CpuWorsts {
    /// The CPU.
    pub cpu: u32,
    /// Its worsts.
    pub worst: Worsts,
}

/// The last hour's distribution on one CPU, at 1 µs resolution: a
/// percentile `v` says the sample of its rank lay in `[v, v+1)` µs;
/// `None`: beyond the histogram's last bin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HourPercentiles {
    /// The CPU.
    pub cpu: u32,
    /// 5-minute histograms added.
    pub histograms: u32,
    /// Wall ns of the start of the first.
    pub from_ns: i64,
    /// Wall ns of the end of the last.
    pub to_ns: i64,
    /// ns their spans cover (less than `to − from` when a gap lies
    /// between them).
    pub covered_ns: i64,
    /// Samples, those beyond the last bin included.
    pub samples: u64,
    /// Samples at or beyond the last bin.
    pub overflows: u64,
    /// Median, µs.
    pub p50_us: Option<u64>,
    /// 90th percentile, µs.
    pub p90_us: Option<u64>,
    /// 99th percentile, µs.
    pub p99_us: Option<u64>,
    /// 99.9th percentile, µs.
    pub p99_9_us: Option<u64>,
    /// 99.99th percentile, µs.
    pub p99_99_us: Option<u64>,
    /// The highest bin with a sample, µs.
    pub max_us: Option<u64>,
    /// The largest maximum of the 5-minute rows that these histograms'
    /// spans overlap, ns (exact; bounds the samples beyond the bins,
    /// which may lie in a row before the one a histogram is stored on).
    pub rows_max_ns: i64,
}

/// What one resolution of the series holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct HeldRows {
    /// Rows held.
    pub rows: u64,
    /// Wall ns of the start of the oldest.
    pub oldest_ns: i64,
}

/// What the retention holds now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Held {
    /// Window rows (every thread of every segment).
    pub windows: Option<HeldRows>,
    /// 5-minute rows.
    pub five_minute: Option<HeldRows>,
    /// 5-minute histograms (the oldest: the start of its span).
    pub histograms: Option<HeldRows>,
    /// Hourly rows.
    pub hourly: Option<HeldRows>,
}

/// One point of the plot: the largest maximum of a group of rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MaxPoint {
    /// Start of the row that holds it, Unix seconds.
    pub start_s: i64,
    /// The maximum, ns.
    pub max_ns: i64,
}

/// One CPU's maxima at one resolution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MaximaSeries {
    /// The CPU.
    pub cpu: u32,
    /// The rows' span, seconds (300 or 3600).
    pub span_s: i64,
    /// Rows read.
    pub rows: u64,
    /// Consecutive row starts per point (1: every row is a point).
    pub rows_per_point: i64,
    /// The points, in time order.
    pub points: Vec<MaxPoint>,
}

/// The 5-minute-maxima plot's series.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct MaximaPlot {
    /// The 5-minute maxima per CPU.
    pub five_minute: Vec<MaximaSeries>,
    /// The start of the first 5-minute row held, Unix seconds (of any CPU;
    /// the first point may be a later row of its group).
    pub five_minute_from_s: Option<i64>,
    /// The hourly maxima from before the first 5-minute row held, per CPU
    /// (empty while the 5-minute rows reach back to the start).
    pub hourly: Vec<MaximaSeries>,
    /// The start of the first of those hourly rows, Unix seconds.
    pub hourly_from_s: Option<i64>,
}

/// A segment as read from `runs`, before its windows are looked at.
struct SegmentRow {
    run: i64,
    uid: String,
    started_at: String,
    status: String,
    signal: Option<i32>,
    finished_ns: Option<i64>,
    cell: Option<i64>,
    t0_ns: i64,
    window_ns: i64,
}

impl Store {
    /// The view of the monitor series `series` (its name), or of the
    /// latest monitor run's series when `None`. A name the database does
    /// not hold, or a database without a series, is bad input naming the
    /// series there are.
    pub fn monitor_view(&self, series: Option<&str>) -> Result<MonitorView> {
        let r = self.monitor_view_inner(series);
        self.named(r)
    }

    fn monitor_view_inner(&self, series: Option<&str>) -> Result<MonitorView> {
        let name = self.series_name(series)?;
        let (id, probe): (i64, String) = self.conn.query_row(
            "SELECT id, probe FROM runs WHERE kind = 'monitor' AND name = ?1 ORDER BY id LIMIT 1",
            [&name],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        let metric = jitterlab_core::result::ProbeKind::parse(&probe)
            .and_then(|k| k.main_latency())
            .unwrap_or("latency")
            .to_string();
        let segments = self.segment_views(&name)?;
        let up_to_ns = self.latest_data(id, &segments)?;
        let marks = {
            let mut stmt = self
                .conn
                .prepare("SELECT at, text FROM monitor_marks WHERE series = ?1 ORDER BY at")?;
            let rows = stmt.query_map([id], |r| Ok((r.get(0)?, r.get(1)?)))?;
            rows.collect::<rusqlite::Result<Vec<(i64, String)>>>()?
        };
        let mut view = MonitorView {
            name,
            series: id,
            probe,
            metric,
            up_to_ns,
            segments,
            marks,
            worst: Worsts::default(),
            cpus: Vec::new(),
            last_hour: Vec::new(),
            held: self.held(id)?,
            plot: MaximaPlot::default(),
        };
        view.held.windows = held_windows(&view.segments);
        let Some(up_to) = up_to_ns else {
            return Ok(view);
        };
        view.worst = self.worsts(id, up_to, None)?;
        for cpu in self.series_cpus(id)? {
            view.cpus.push(CpuWorsts {
                cpu,
                worst: self.worsts(id, up_to, Some(cpu))?,
            });
        }
        view.last_hour = self.last_hour(id, up_to)?;
        view.plot = self.maxima_plot(id)?;
        Ok(view)
    }

    /// The name of the series asked for (module doc of
    /// [`Store::monitor_view`]'s errors).
    fn series_name(&self, series: Option<&str>) -> Result<String> {
        let names: Vec<String> = {
            let mut stmt = self.conn.prepare(
                "SELECT name FROM runs WHERE kind = 'monitor' GROUP BY name ORDER BY MAX(id) DESC",
            )?;
            let rows = stmt.query_map([], |r| r.get(0))?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        let db = self.path.display();
        match series {
            _ if names.is_empty() => Err(bad(format!(
                "no monitor series in {db}; start one with: jitterlab monitor"
            ))),
            None => Ok(names[0].clone()),
            Some(s) if names.iter().any(|n| n == s) => Ok(s.to_string()),
            Some(s) => {
                let mut sorted = names.clone();
                sorted.sort();
                let listed: Vec<String> = sorted
                    .iter()
                    .map(|n| crate::output::shown(n).into_owned())
                    .collect();
                Err(bad(format!(
                    "no monitor series named {} in {db}; it holds: {} (jitterlab report --monitor NAME)",
                    crate::output::shown(s),
                    listed.join(", ")
                )))
            }
        }
    }

    /// The segments of series `name`, oldest first, with their windows.
    fn segment_views(&self, name: &str) -> Result<Vec<SegmentView>> {
        let rows: Vec<SegmentRow> = {
            let mut stmt = self.conn.prepare(&format!(
                "SELECT r.id, COALESCE(r.uid, ''), r.started_at, r.status,
                        CAST(strftime('%s', r.finished_at) AS INTEGER) * 1000000000,
                        (SELECT MIN(c.id) FROM cells c WHERE c.run_id = r.id),
                        {SEGMENT_T0}, r.params_json, json_extract(r.result_json, '$.signal')
                 FROM runs r WHERE r.kind = 'monitor' AND r.name = ?1 ORDER BY r.id"
            ))?;
            let rows = stmt.query_map([name], |r| {
                let params: String = r.get(7)?;
                Ok(SegmentRow {
                    run: r.get(0)?,
                    uid: r.get(1)?,
                    started_at: r.get(2)?,
                    status: r.get(3)?,
                    signal: r.get(8)?,
                    finished_ns: r.get(4)?,
                    cell: r.get(5)?,
                    t0_ns: r.get::<_, Option<i64>>(6)?.unwrap_or(0),
                    window_ns: window_ns(&params),
                })
            })?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        let mut out: Vec<SegmentView> = Vec::with_capacity(rows.len());
        let mut previous_end: Option<i64> = None;
        for (k, s) in rows.into_iter().enumerate() {
            let (first, last, windows) = match s.cell {
                Some(cell) => self.stored_windows(cell)?,
                None => (None, None, 0),
            };
            let first_window_ns = first.map(|f| s.t0_ns + f);
            let last_window_end_ns = last.map(|l| s.t0_ns + l + s.window_ns);
            let gap_before_ns = if k == 0 {
                None
            } else {
                previous_end.map(|end| (s.t0_ns - end).max(0))
            };
            previous_end = last_window_end_ns.or(s.finished_ns);
            out.push(SegmentView {
                run: s.run,
                uid: s.uid,
                started_at: s.started_at,
                started_ns: s.t0_ns,
                status: s.status,
                signal: s.signal,
                first_window_ns,
                last_window_end_ns,
                windows,
                resumed: k > 0,
                gap_before_ns,
            });
        }
        Ok(out)
    }

    /// Of cell `cell`'s stored windows: the first one's start and the last
    /// one's start (ns since its run's first release, over every thread),
    /// and how many rows there are.
    fn stored_windows(&self, cell: i64) -> Result<(Option<i64>, Option<i64>, u64)> {
        let mut first: Option<i64> = None;
        let mut last: Option<i64> = None;
        let mut rows = 0u64;
        let edge = |order: &str, thread: i64| -> Result<Option<i64>> {
            Ok(self
                .conn
                .prepare_cached(&format!(
                    "SELECT start_ns FROM windows WHERE cell_id = ?1 AND thread = ?2
                     ORDER BY window {order} LIMIT 1"
                ))?
                .query_row(params![cell, thread], |r| r.get(0))
                .optional()?)
        };
        for t in cell_threads(&self.conn, cell)? {
            if let Some(f) = edge("ASC", t)? {
                first = Some(first.map_or(f, |x| x.min(f)));
            }
            if let Some(l) = edge("DESC", t)? {
                last = Some(last.map_or(l, |x| x.max(l)));
            }
            let n: i64 = self
                .conn
                .prepare_cached("SELECT COUNT(*) FROM windows WHERE cell_id = ?1 AND thread = ?2")?
                .query_row(params![cell, t], |r| r.get(0))?;
            rows += n.max(0) as u64;
        }
        Ok((first, last, rows))
    }

    /// The latest data of series `id` (module doc).
    fn latest_data(&self, id: i64, segments: &[SegmentView]) -> Result<Option<i64>> {
        if let Some(end) = segments.iter().filter_map(|s| s.last_window_end_ns).max() {
            return Ok(Some(end));
        }
        for span in [FIVE_MINUTES, HOUR] {
            let start: Option<i64> = self.conn.query_row(
                "SELECT MAX(start) FROM monitor_rollups WHERE series = ?1 AND span = ?2",
                params![id, span],
                |r| r.get(0),
            )?;
            if let Some(s) = start {
                return Ok(Some((s + span) * NS));
            }
        }
        Ok(None)
    }

    /// The CPUs of series `id`, from its hourly rows.
    fn series_cpus(&self, id: i64) -> Result<Vec<u32>> {
        let mut stmt = self.conn.prepare(
            "SELECT DISTINCT cpu FROM monitor_rollups WHERE series = ?1 AND span = ?2 ORDER BY cpu",
        )?;
        let rows = stmt.query_map(params![id, HOUR], |r| r.get(0))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The worst ever, of the week and of the day up to `up_to` ns, of
    /// `cpu` or of every CPU.
    fn worsts(&self, id: i64, up_to: i64, cpu: Option<u32>) -> Result<Worsts> {
        let since = |s: i64| up_to.div_euclid(NS) - s - FIVE_MINUTES;
        Ok(Worsts {
            ever: self.worst(id, HOUR, i64::MIN, cpu)?,
            week: self.worst(id, FIVE_MINUTES, since(WEEK_S), cpu)?,
            day: self.worst(id, FIVE_MINUTES, since(DAY_S), cpu)?,
        })
    }

    /// The largest maximum of the rows of `span` starting after `after`
    /// (Unix s), of `cpu` or of every CPU; the earliest of equal maxima.
    fn worst(&self, id: i64, span: i64, after: i64, cpu: Option<u32>) -> Result<Option<Worst>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT m.max, m.max_at, m.cpu, m.run_id, COALESCE(r.uid, ''), m.max_cycle
             FROM monitor_rollups m LEFT JOIN runs r ON r.id = m.run_id
             WHERE m.series = ?1 AND m.span = ?2 AND m.start > ?3 AND (?4 IS NULL OR m.cpu = ?4)
             ORDER BY m.max DESC, m.max_at, m.cpu LIMIT 1",
        )?;
        Ok(stmt
            .query_row(params![id, span, after, cpu], |r| {
                Ok(Worst {
                    max_ns: r.get(0)?,
                    at_ns: r.get(1)?,
                    cpu: r.get(2)?,
                    run: r.get(3)?,
                    run_uid: r.get(4)?,
                    cycle: r.get::<_, i64>(5)?.max(0) as u64,
                })
            })
            .optional()?)
    }

    /// The last hour's percentiles per CPU: the histograms whose span ended
    /// after `up_to` − 1 h.
    fn last_hour(&self, id: i64, up_to: i64) -> Result<Vec<HourPercentiles>> {
        let cutoff = up_to - HOUR * NS;
        // A histogram is stored on the row its end falls in.
        let first_row = floor_to(cutoff.div_euclid(NS), FIVE_MINUTES);
        let mut stmt = self.conn.prepare(
            "SELECT cpu, hist, hist_from, hist_to, hist_over, max FROM monitor_rollups
             WHERE series = ?1 AND span = ?2 AND start >= ?3 AND hist IS NOT NULL AND hist_to > ?4
             ORDER BY cpu, start",
        )?;
        type Row = (u32, Vec<u8>, i64, i64, i64, i64);
        let rows: Vec<Row> = stmt
            .query_map(params![id, FIVE_MINUTES, first_row, cutoff], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                ))
            })?
            .collect::<rusqlite::Result<_>>()?;
        let mut out: Vec<HourPercentiles> = Vec::new();
        let mut bins: Vec<u64> = Vec::new();
        let mut current: Option<HourPercentiles> = None;
        let mut spans: Vec<(u32, i64, i64)> = Vec::new();
        let close = |p: Option<HourPercentiles>, bins: &mut Vec<u64>, out: &mut Vec<_>| {
            if let Some(p) = p {
                out.push(percentiles(p, bins));
            }
            bins.clear();
        };
        for (cpu, blob, from, to, over, max) in rows {
            if current.as_ref().is_some_and(|c| c.cpu != cpu) {
                close(current.take(), &mut bins, &mut out);
            }
            let decoded = super::super::fine::decode_buckets(&blob, MAX_HISTOGRAM_BUCKETS as usize)
                .map_err(|e| {
                    anyhow::anyhow!(
                        "reading the 5-minute histogram of series {id}, CPU {cpu} ending at {to} ns: {e:#}"
                    )
                })?;
            let used = decoded.iter().rposition(|&c| c > 0).map_or(0, |i| i + 1);
            if bins.len() < used {
                bins.resize(used, 0);
            }
            for (b, c) in bins.iter_mut().zip(&decoded[..used]) {
                *b += c;
            }
            let c = current.get_or_insert(HourPercentiles {
                cpu,
                histograms: 0,
                from_ns: from,
                to_ns: to,
                covered_ns: 0,
                samples: 0,
                overflows: 0,
                p50_us: None,
                p90_us: None,
                p99_us: None,
                p99_9_us: None,
                p99_99_us: None,
                max_us: None,
                rows_max_ns: max,
            });
            c.histograms += 1;
            c.from_ns = c.from_ns.min(from);
            c.to_ns = c.to_ns.max(to);
            c.covered_ns += (to - from).max(0);
            c.overflows += over.max(0) as u64;
            c.rows_max_ns = c.rows_max_ns.max(max);
            spans.push((cpu, from, to));
        }
        close(current.take(), &mut bins, &mut out);
        // A span handed over every 5 minutes of windows is not aligned to
        // the rows: it reaches back into the row (or rows) before the one
        // it is stored on, which may hold no histogram of its own, and may
        // hold the samples beyond the last bin. The bound of those samples
        // is the largest maximum of every row a span overlaps.
        let mut overlapping = self.conn.prepare(
            "SELECT MAX(max) FROM monitor_rollups
             WHERE series = ?1 AND span = ?2 AND cpu = ?3
               AND start * 1000000000 < ?5 AND (start + ?2) * 1000000000 > ?4",
        )?;
        for (cpu, from, to) in spans {
            let max: Option<i64> =
                overlapping.query_row(params![id, FIVE_MINUTES, cpu, from, to], |r| r.get(0))?;
            if let (Some(p), Some(max)) = (out.iter_mut().find(|p| p.cpu == cpu), max) {
                p.rows_max_ns = p.rows_max_ns.max(max);
            }
        }
        Ok(out)
    }

    /// What the rollups of series `id` hold (the windows are counted with
    /// the segments).
    fn held(&self, id: i64) -> Result<Held> {
        let rows = |span: i64, hist: bool| -> Result<Option<HeldRows>> {
            let sql = if hist {
                "SELECT COUNT(*), MIN(hist_from) FROM monitor_rollups
                 WHERE series = ?1 AND span = ?2 AND hist IS NOT NULL"
            } else {
                "SELECT COUNT(*), MIN(start) * 1000000000 FROM monitor_rollups
                 WHERE series = ?1 AND span = ?2"
            };
            let (n, oldest): (i64, Option<i64>) =
                self.conn
                    .query_row(sql, params![id, span], |r| Ok((r.get(0)?, r.get(1)?)))?;
            Ok(oldest.map(|o| HeldRows {
                rows: n.max(0) as u64,
                oldest_ns: o,
            }))
        };
        Ok(Held {
            windows: None,
            five_minute: rows(FIVE_MINUTES, false)?,
            histograms: rows(FIVE_MINUTES, true)?,
            hourly: rows(HOUR, false)?,
        })
    }

    /// The plot's series of series `id` (module doc).
    fn maxima_plot(&self, id: i64) -> Result<MaximaPlot> {
        let (five, first_five) = self.maxima(id, FIVE_MINUTES, i64::MAX)?;
        let (hourly, first_hour) = match first_five {
            // The hours before the first 5-minute row held (the hour it
            // falls in is drawn from the 5-minute rows).
            Some(f) => self.maxima(id, HOUR, floor_to(f, HOUR))?,
            None => self.maxima(id, HOUR, i64::MAX)?,
        };
        Ok(MaximaPlot {
            five_minute: five,
            five_minute_from_s: first_five,
            hourly,
            hourly_from_s: first_hour,
        })
    }

    /// Per CPU, the rows of `span` starting before `before` (Unix s) in at
    /// most [`PLOT_POINTS`] points, each the largest maximum of its group of
    /// `k` consecutive row starts (SQLite takes a bare column of a `MAX()`
    /// query from the row holding the maximum: the point's time is that
    /// row's start); and the first row's start.
    fn maxima(&self, id: i64, span: i64, before: i64) -> Result<(Vec<MaximaSeries>, Option<i64>)> {
        let (first, last): (Option<i64>, Option<i64>) = self.conn.query_row(
            "SELECT MIN(start), MAX(start) FROM monitor_rollups
             WHERE series = ?1 AND span = ?2 AND start < ?3",
            params![id, span, before],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        let (Some(first), Some(last)) = (first, last) else {
            return Ok((Vec::new(), None));
        };
        let starts = (last - first) / span + 1;
        let k = ((starts + PLOT_POINTS - 1) / PLOT_POINTS).max(1);
        let mut stmt = self.conn.prepare(
            "SELECT cpu, (start - ?4) / ?5 AS g, MAX(max), start, COUNT(*) FROM monitor_rollups
             WHERE series = ?1 AND span = ?2 AND start < ?3
             GROUP BY cpu, g ORDER BY cpu, g",
        )?;
        let rows = stmt.query_map(params![id, span, before, first, span * k], |r| {
            Ok((
                r.get::<_, u32>(0)?,
                MaxPoint {
                    max_ns: r.get(2)?,
                    start_s: r.get(3)?,
                },
                r.get::<_, i64>(4)?,
            ))
        })?;
        let mut out: Vec<MaximaSeries> = Vec::new();
        for row in rows {
            let (cpu, point, n) = row?;
            if out.last().is_none_or(|s| s.cpu != cpu) {
                out.push(MaximaSeries {
                    cpu,
                    span_s: span,
                    rows: 0,
                    rows_per_point: k,
                    points: Vec::new(),
                });
            }
            let s = out.last_mut().expect("pushed above");
            s.rows += n.max(0) as u64;
            s.points.push(point);
        }
        Ok((out, Some(first)))
    }
}

/// The windows every segment still holds.
fn held_windows(segments: &[SegmentView]) -> Option<HeldRows> {
    let oldest = segments.iter().filter_map(|s| s.first_window_ns).min()?;
    Some(HeldRows {
        rows: segments.iter().map(|s| s.windows).sum(),
        oldest_ns: oldest,
    })
}

/// `p` with its percentiles from `bins` (1 µs each) and its overflows.
fn percentiles(mut p: HourPercentiles, bins: &[u64]) -> HourPercentiles {
    let counted: u64 = bins.iter().sum();
    let n = counted + p.overflows;
    p.samples = n;
    let at = |num: u64, den: u64| -> Option<u64> {
        if n == 0 {
            return None;
        }
        // Nearest rank, as every percentile jitterlab reports.
        let rank = ((n as u128 * num as u128).div_ceil(den as u128) as u64).clamp(1, n);
        let mut seen = 0u64;
        for (i, &c) in bins.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Some(i as u64);
            }
        }
        None
    };
    p.p50_us = at(1, 2);
    p.p90_us = at(9, 10);
    p.p99_us = at(99, 100);
    p.p99_9_us = at(999, 1000);
    p.p99_99_us = at(9999, 10000);
    p.max_us = if p.overflows > 0 {
        None
    } else {
        bins.iter().rposition(|&c| c > 0).map(|i| i as u64)
    };
    p
}

#[cfg(test)]
mod unit {
    use super::*;

    fn hour(overflows: u64) -> HourPercentiles {
        HourPercentiles {
            cpu: 1,
            histograms: 1,
            from_ns: 0,
            to_ns: 1,
            covered_ns: 1,
            samples: 0,
            overflows,
            p50_us: None,
            p90_us: None,
            p99_us: None,
            p99_9_us: None,
            p99_99_us: None,
            max_us: None,
            rows_max_ns: 0,
        }
    }

    #[test]
    fn percentiles_are_the_bins_of_their_nearest_ranks() {
        // 10 000 samples: 9 000 in bin 3, 900 in 5, 90 in 9, 9 in 20, 1 in 70.
        let mut bins = vec![0u64; 100];
        bins[3] = 9_000;
        bins[5] = 900;
        bins[9] = 90;
        bins[20] = 9;
        bins[70] = 1;
        let p = percentiles(hour(0), &bins);
        assert_eq!(p.samples, 10_000);
        assert_eq!(
            (
                p.p50_us,
                p.p90_us,
                p.p99_us,
                p.p99_9_us,
                p.p99_99_us,
                p.max_us
            ),
            (Some(3), Some(3), Some(5), Some(9), Some(20), Some(70))
        );
        // Rank 9 001 (p90.01) would be bin 5: p90 is rank 9 000, bin 3.
    }

    #[test]
    fn ranks_among_the_overflows_are_beyond_the_bins() {
        let mut bins = vec![0u64; 10];
        bins[4] = 997;
        let p = percentiles(hour(3), &bins);
        assert_eq!(p.samples, 1_000);
        // p99.9 is rank 999: among the 3 overflows.
        assert_eq!(
            (p.p99_us, p.p99_9_us, p.p99_99_us, p.max_us),
            (Some(4), None, None, None)
        );
        let p = percentiles(hour(0), &[]);
        assert_eq!((p.samples, p.p50_us, p.max_us), (0, None, None));
    }
}
