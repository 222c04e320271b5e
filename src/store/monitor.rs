//! A monitor's series in the database: the 5-minute and hourly rows kept
//! after the windows are gone, the 5-minute histograms of the last days,
//! and the retention that keeps the file bounded.
//!
//! `jitterlab monitor` runs for months. OSADL's latency farm keeps what
//! people look at in three resolutions, and so does a series here:
//!
//! * **windows** (1 s rows of every metric, the existing `windows` and
//!   `window_metrics` tables) for a recent span, default 7 days;
//! * **5-minute rows** of the main latency per CPU — count, min, max, mean
//!   (kept as a sum, so rows of two segments in one 5 minutes merge
//!   exactly), and the run, cycle and wall time of the maximum — for a
//!   year by default;
//! * **hourly rows**, the same columns, for ever by default.
//!
//! **Series and segments.** Each start of the monitor is a run of kind
//! `monitor` (a segment) whose name is the series' name; the series' id is
//! the id of its first run. A monitor started again (a reboot, a crash, a
//! `systemctl restart`) adds a segment and merges into the same rows —
//! never replaces them (`ON CONFLICT … DO UPDATE`) — and the report marks
//! each resumption with the gap before it.
//!
//! The rollups are written in the same transaction as the windows they
//! come from, as each drain commits, so a crash loses no more of them than
//! of the windows (at most one window).
//!
//! **Percentiles** need the distribution: every 5 minutes of windows the
//! probe thread hands its cumulative 1 µs histogram to the writer
//! (`jitterlab_core::fine_snapshot`), which stores the difference from the
//! one before — that span's histogram, sparse as in [`super::fine`] — on the
//! 5-minute row its end falls in, kept as long as the windows.
//!
//! # The table
//!
//! ```text
//! monitor_rollups (
//!     series    the series: the id of its first run (runs.id)
//!     span      seconds: 300 (5-minute row) or 3600 (hourly row)
//!     start     Unix seconds, a multiple of span
//!     cpu       the CPU measured
//!     count     samples of the main latency
//!     min, max  ns
//!     sum       ns: the sum of the windows' mean × count (mean = sum / count)
//!     run_id    the segment (runs.id) of the maximum
//!     max_cycle the cycle (sample) number of the maximum in that run
//!     max_at    wall time of the maximum, ns since the Unix epoch
//!     hist      5-minute rows only, while kept: the 1 µs histogram of a
//!               5-minute span that ended in this row (`super::fine`'s
//!               sparse blob), or NULL
//!     hist_from, hist_to  that span, wall ns
//!     hist_over samples of that span at or beyond the last 1 µs bin
//!     PRIMARY KEY (series, span, start, cpu)
//! ) WITHOUT ROWID
//! ```
//!
//! The columns are declared without types, as SQLite allows (each value
//! keeps its own: integers, one blob), and the table is the schema's only
//! addition: the schema must stay on the file's first page
//! ([`super::schema`]), which had room for one short `CREATE` more.
//!
//! **Reading a series** — what `jitterlab report --monitor` shows — is
//! [`view`]'s; a synthetic series of any length, written through the
//! calls below for the benchmark of a year, [`synth`]'s.
//!
//! Times here are wall-clock ns since the Unix epoch (a window's is its
//! run's first release, as wall time, plus its start), bucket starts whole
//! seconds on multiples of the span: rows read like OSADL's, aligned to the
//! clock, whatever time the monitor started.

use anyhow::Result;
use jitterlab_core::window::WindowRow;
use rusqlite::{params, OptionalExtension, Transaction};

use super::{boot_id, i, RunStatus, Store};

/// The table of schema 6 (step 5 → 6); see the module doc.
pub(super) const TABLES: &str = "CREATE TABLE monitor_rollups(series,span,start,cpu,count,min,max,sum,run_id,max_cycle,max_at,hist,hist_from,hist_to,hist_over,PRIMARY KEY(series,span,start,cpu))WITHOUT ROWID";

/// The table of schema 7 (step 6 → 7): a series' marks, each a wall time
/// (ns) and what happened then, kept as long as the series (a few rows:
/// one per restart of the monitored task). Columns without types and no
/// more, as `TABLES`: the schema stays on the file's first page.
pub(super) const MARKS: &str =
    "CREATE TABLE monitor_marks(series,at,text,PRIMARY KEY(series,at))WITHOUT ROWID";

/// The spans of the rollups, seconds.
pub const FIVE_MINUTES: i64 = 300;
/// The hourly rows' span, seconds.
pub const HOUR: i64 = 3600;
const NS: i64 = 1_000_000_000;

/// How long each resolution of a series is kept, seconds (`None`: for
/// ever).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Window rows and 5-minute histograms.
    pub windows_s: u64,
    /// 5-minute rows.
    pub five_min_s: u64,
    /// Hourly rows; `None`: for ever.
    pub hourly_s: Option<u64>,
}

impl Default for Retention {
    /// OSADL's farm: windows for 7 days, 5-minute rows for a year, hourly
    /// maxima for ever.
    fn default() -> Self {
        Retention {
            windows_s: 7 * 86_400,
            five_min_s: 365 * 86_400,
            hourly_s: None,
        }
    }
}

/// A series' segment being written: what the writer needs per drain.
#[derive(Debug, Clone)]
pub struct Segment {
    /// The series: the id of its first run.
    pub series: i64,
    /// The series' name (the runs' name).
    pub name: String,
    /// The run of this segment.
    pub run: i64,
    /// Its one cell, whose windows these are.
    pub cell: i64,
    /// The metric rolled up: the probe's main latency.
    pub metric: &'static str,
}

/// What a new segment follows, when the series had one before.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resumed {
    /// The previous segment's run.
    pub previous_run: i64,
    /// How it ended ([`super::status::end_label`]: `completed`, `stopped
    /// by SIGTERM`, `interrupted` when its process died …).
    pub previous_status: String,
    /// Wall time of the end of its last stored window, ns; `None` when none
    /// is stored (any more).
    pub last_ns: Option<i64>,
}

/// What was deleted by [`Store::monitor_prune`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Window headers.
    pub windows: u64,
    /// 5-minute and hourly rows.
    pub rollups: u64,
    /// 5-minute histograms.
    pub histograms: u64,
}

/// What the retention of one series has done so far, so that each prune
/// walks only what became old since the one before.
#[derive(Debug, Clone, Default)]
pub struct Pruner {
    /// Histograms are gone from rows starting at or before this (Unix s);
    /// `None`: not pruned yet in this process (the first prune walks them
    /// all).
    hist_done: Option<i64>,
}

/// A 5-minute row's histogram as held: its blob, span and overflows (all
/// NULL when it has none).
type HeldHistogram = (Option<Vec<u8>>, Option<i64>, Option<i64>, Option<i64>);

/// A segment's window width, ns, from its run's stored parameters (1 s
/// when they cannot be read).
fn window_ns(params_json: &str) -> i64 {
    serde_json::from_str::<jitterlab_core::result::Params>(params_json)
        .map(|p| i(p.window_ns).max(1))
        .unwrap_or(NS)
}

/// `v` rounded down to a multiple of `span`.
fn floor_to(v: i64, span: i64) -> i64 {
    v.div_euclid(span) * span
}

/// The SQL of a segment's first release as wall ns: its run's start
/// time (`started_at` to the millisecond; the first release follows it by
/// the threads' set-up and a 20 ms lead, tens of milliseconds).
pub(super) const SEGMENT_T0: &str =
    "CAST(unixepoch(r.started_at, 'subsec') * 1000000000 AS INTEGER)";

impl Store {
    /// Holds this connection's page cache to `kib` KiB (SQLite's default
    /// is 2 000 KiB). A monitor writes at the right edge of its tables'
    /// b-trees and reads little, so a small cache costs it nothing, and its
    /// memory is then the same after a minute as after a year
    /// (BENCHMARKS.md, "Memory of a monitor").
    pub fn cap_cache(&mut self, kib: u32) -> Result<()> {
        let r = self
            .conn
            .execute_batch(&format!("PRAGMA cache_size = -{kib}"))
            .map_err(anyhow::Error::from);
        self.named(r)
    }

    /// Makes run `run` (kind `monitor`, named `name`, whose one cell is
    /// `cell`) the next segment of the series `name`: the series' id (its
    /// first run's) and what this segment follows, if the series had a
    /// segment before.
    /// The live monitor of `series` in this database, other than this
    /// process: `(run, pid)` of the earliest segment still `running` whose
    /// process lives in this boot, among those before run `before` when
    /// given. Two monitors of one series would interleave their segments,
    /// so a second start is refused with it.
    pub fn live_monitor(&self, series: &str, before: Option<i64>) -> Result<Option<(i64, i64)>> {
        let mut stmt = self.conn.prepare(
            "SELECT id, pid, boot_id FROM runs
             WHERE kind = 'monitor' AND name = ?1 AND status = ?2 AND (?3 IS NULL OR id < ?3)
             ORDER BY id",
        )?;
        let running: Vec<(i64, i64, String)> = stmt
            .query_map(params![series, RunStatus::Running.name(), before], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })?
            .collect::<rusqlite::Result<_>>()?;
        let (me, boot) = (i64::from(std::process::id()), boot_id());
        Ok(running
            .into_iter()
            .find(|(_, pid, b)| {
                *pid != me && *b == boot && std::path::Path::new(&format!("/proc/{pid}")).exists()
            })
            .map(|(run, pid, _)| (run, pid)))
    }

    pub fn monitor_begin(
        &mut self,
        name: &str,
        run: i64,
        cell: i64,
        metric: &'static str,
    ) -> Result<(Segment, Option<Resumed>)> {
        let r = self.monitor_begin_inner(name, run, cell, metric);
        self.named(r)
    }

    fn monitor_begin_inner(
        &mut self,
        name: &str,
        run: i64,
        cell: i64,
        metric: &'static str,
    ) -> Result<(Segment, Option<Resumed>)> {
        // Two starts at once both passed the check before their run rows:
        // the earlier segment goes on, this one is refused.
        if let Some((other, pid)) = self.live_monitor(name, Some(run))? {
            return Err(crate::error::bad(two_monitors(
                name, &self.path, other, pid,
            )));
        }
        let series: i64 = self
            .conn
            .query_row(
                "SELECT MIN(id) FROM runs WHERE kind = 'monitor' AND name = ?1",
                [name],
                |r| r.get::<_, Option<i64>>(0),
            )?
            .unwrap_or(run);
        let previous = self
            .conn
            .query_row(
                "SELECT r.id, r.status, c.id, r.params_json, json_extract(r.result_json, '$.signal')
                 FROM runs r JOIN cells c ON c.run_id = r.id
                 WHERE r.kind = 'monitor' AND r.name = ?1 AND r.id < ?2 ORDER BY r.id DESC LIMIT 1",
                params![name, run],
                |r| {
                    let status: String = r.get(1)?;
                    let label = super::status::end_label(&status, r.get(4)?);
                    Ok((r.get::<_, i64>(0)?, label, r.get::<_, i64>(2)?, r.get::<_, String>(3)?))
                },
            )
            .optional()?;
        let resumed = match previous {
            None => None,
            Some((prev, status, prev_cell, params)) => {
                let last_ns = self.segment_end(prev, prev_cell, &params)?;
                Some(Resumed {
                    previous_run: prev,
                    previous_status: status,
                    last_ns,
                })
            }
        };
        Ok((
            Segment {
                series,
                name: name.to_string(),
                run,
                cell,
                metric,
            },
            resumed,
        ))
    }

    /// Wall time of the end of the last window segment `run` stored, ns.
    fn segment_end(&self, run: i64, cell: i64, params_json: &str) -> Result<Option<i64>> {
        let width = window_ns(params_json);
        let end: Option<i64> = self.conn.query_row(
            &format!(
                "SELECT {SEGMENT_T0} + (SELECT MAX(w.start_ns) FROM windows w WHERE w.cell_id = ?2)
                 FROM runs r WHERE r.id = ?1"
            ),
            params![run, cell],
            |r| r.get(0),
        )?;
        Ok(end.map(|e| e + width))
    }

    /// Stores a drain's window rows of `seg` and their 5-minute and hourly
    /// rollups in one transaction; `wall_t0_ns` is the run's first release
    /// as wall time, by the clocks' offset at this drain.
    pub fn monitor_windows(
        &mut self,
        seg: &Segment,
        rows: &[WindowRow],
        wall_t0_ns: i64,
    ) -> Result<()> {
        let r = self.monitor_windows_inner(seg, rows, wall_t0_ns);
        self.named(r)
    }

    fn monitor_windows_inner(
        &mut self,
        seg: &Segment,
        rows: &[WindowRow],
        wall_t0_ns: i64,
    ) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let tx = self.conn.transaction()?;
        super::windows::write_windows(&tx, seg.cell, rows)?;
        for row in rows {
            let Some(st) = row.stat(seg.metric).filter(|s| s.count > 0) else {
                continue;
            };
            let start = wall_t0_ns.saturating_add(i(row.start_ns));
            let at = wall_t0_ns.saturating_add(i(st.max_at_ns));
            for span in [FIVE_MINUTES, HOUR] {
                merge_rollup(
                    &tx,
                    seg,
                    span,
                    floor_to(start.div_euclid(NS), span),
                    row.cpu,
                    st,
                    at,
                )?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Marks `seg`'s series at wall time `at_ns` (ns since the Unix epoch)
    /// with `text`: what happened to its task then (`report --monitor`
    /// lists the marks). A second mark at the same nanosecond replaces the
    /// first.
    pub fn monitor_mark(&mut self, seg: &Segment, at_ns: i64, text: &str) -> Result<()> {
        let r = self
            .conn
            .execute(
                "INSERT OR REPLACE INTO monitor_marks(series, at, text) VALUES (?1, ?2, ?3)",
                params![seg.series, at_ns, text],
            )
            .map(drop)
            .map_err(anyhow::Error::from);
        self.named(r)
    }

    /// Stores the 1 µs histogram of `cpu` over the wall span `from_ns ..
    /// to_ns` on the 5-minute row its last window fell in (stored by an
    /// earlier [`Store::monitor_windows`]; a span without that row is
    /// dropped, and `false` returned). A row that holds a histogram already
    /// (two starts of the monitor within one 5 minutes) gets the sum of
    /// both, over the span from the earlier start to the later end.
    pub fn monitor_histogram(
        &mut self,
        seg: &Segment,
        cpu: u32,
        span: (i64, i64),
        buckets: &[u64],
        overflows: u64,
    ) -> Result<bool> {
        let r = self.monitor_histogram_inner(seg, cpu, span, buckets, overflows);
        self.named(r)
    }

    fn monitor_histogram_inner(
        &mut self,
        seg: &Segment,
        cpu: u32,
        (from_ns, to_ns): (i64, i64),
        buckets: &[u64],
        overflows: u64,
    ) -> Result<bool> {
        let start = floor_to((to_ns - 1).div_euclid(NS), FIVE_MINUTES);
        let tx = self.conn.transaction()?;
        let key = params![seg.series, FIVE_MINUTES, start, cpu];
        let held: Option<HeldHistogram> = tx
            .query_row(
                "SELECT hist, hist_from, hist_to, hist_over FROM monitor_rollups
                 WHERE series = ?1 AND span = ?2 AND start = ?3 AND cpu = ?4",
                key,
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .optional()?;
        let Some((blob, from_held, to_held, over_held)) = held else {
            return Ok(false);
        };
        let mut sum = buckets.to_vec();
        let (mut from, mut to, mut over) = (from_ns, to_ns, i(overflows));
        if let Some(blob) = blob {
            // A start with more bins than this one (--histogram-buckets
            // changed) widens the sum.
            let before = super::fine::decode_buckets(&blob, buckets.len()).or_else(|_| {
                let most = jitterlab_core::limits::HISTOGRAM_BUCKETS.max as usize;
                super::fine::decode_buckets(&blob, most)
            })?;
            if before.len() > sum.len() {
                sum.resize(before.len(), 0);
            }
            for (a, b) in sum.iter_mut().zip(before) {
                *a += b;
            }
            while sum.len() > buckets.len() && sum.last() == Some(&0) {
                sum.pop();
            }
            from = from.min(from_held.unwrap_or(from));
            to = to.max(to_held.unwrap_or(to));
            over += over_held.unwrap_or(0);
        }
        tx.execute(
            "UPDATE monitor_rollups SET hist = ?5, hist_from = ?6, hist_to = ?7, hist_over = ?8
             WHERE series = ?1 AND span = ?2 AND start = ?3 AND cpu = ?4",
            params![
                seg.series,
                FIVE_MINUTES,
                start,
                cpu,
                super::fine::encode_buckets(&sum),
                from,
                to,
                over
            ],
        )?;
        tx.commit()?;
        Ok(true)
    }

    /// Deletes what `retention` no longer keeps of `seg`'s series as of wall
    /// time `now_ns`: windows and histograms older than `windows_s`,
    /// 5-minute rows older than `five_min_s`, hourly rows older than
    /// `hourly_s` (if any). One transaction; each delete walks a primary
    /// key's range, so running it every few minutes costs little.
    pub fn monitor_prune(
        &mut self,
        seg: &Segment,
        retention: Retention,
        now_ns: i64,
        pruner: &mut Pruner,
    ) -> Result<Pruned> {
        let r = self.monitor_prune_inner(seg, retention, now_ns, pruner);
        self.named(r)
    }

    fn monitor_prune_inner(
        &mut self,
        seg: &Segment,
        retention: Retention,
        now_ns: i64,
        pruner: &mut Pruner,
    ) -> Result<Pruned> {
        let tx = self.conn.transaction()?;
        let mut pruned = Pruned::default();
        let cutoff = now_ns.saturating_sub(i(retention.windows_s).saturating_mul(NS));
        let segments: Vec<(i64, i64, String)> = {
            let mut stmt = tx.prepare_cached(&format!(
                "SELECT c.id, {SEGMENT_T0}, r.params_json FROM runs r JOIN cells c ON c.run_id = r.id
                 WHERE r.kind = 'monitor' AND r.name = ?1 AND r.id >= ?2 AND {SEGMENT_T0} < ?3"
            ))?;
            let rows = stmt.query_map(params![seg.name, seg.series, cutoff], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        for (cell, t0, params) in segments {
            let width = window_ns(&params);
            // Windows that ended by the cutoff: index < (cutoff − t0) / width.
            let first_kept = (cutoff - t0).div_euclid(width);
            pruned.windows += prune_windows(&tx, cell, first_kept)?;
        }
        let hist_before = floor_to(cutoff.div_euclid(NS), FIVE_MINUTES) - FIVE_MINUTES;
        pruned.histograms += tx.execute(
            "UPDATE monitor_rollups SET hist = NULL, hist_from = NULL, hist_to = NULL, hist_over = NULL
             WHERE series = ?1 AND span = ?2 AND start > ?3 AND start <= ?4 AND hist IS NOT NULL",
            params![seg.series, FIVE_MINUTES, pruner.hist_done.unwrap_or(i64::MIN), hist_before],
        )? as u64;
        pruner.hist_done = Some(hist_before);
        let spans = [
            (FIVE_MINUTES, Some(retention.five_min_s)),
            (HOUR, retention.hourly_s),
        ];
        for (span, keep) in spans {
            let Some(keep) = keep else { continue };
            let before = now_ns
                .div_euclid(NS)
                .saturating_sub(i(keep))
                .saturating_sub(span);
            pruned.rollups += tx.execute(
                "DELETE FROM monitor_rollups WHERE series = ?1 AND span = ?2 AND start <= ?3",
                params![seg.series, span, before],
            )? as u64;
        }
        tx.commit()?;
        Ok(pruned)
    }
}
impl Store {
    /// Caps the file at its current size (SQLite's `max_page_count`), or
    /// lifts the cap: what a full disk does to a write, for tests.
    #[cfg(test)]
    pub(crate) fn cap_pages(&self, capped: bool) -> Result<()> {
        let pages: i64 = match capped {
            true => self.conn.query_row("PRAGMA page_count", [], |r| r.get(0))?,
            false => 1 << 30,
        };
        self.conn
            .query_row(&format!("PRAGMA max_page_count = {pages}"), [], |_| Ok(()))?;
        Ok(())
    }

    /// The window headers stored for `cell`, for tests.
    #[cfg(test)]
    pub(crate) fn window_count_for_tests(&self, cell: i64) -> i64 {
        self.conn
            .query_row(
                "SELECT COUNT(*) FROM windows WHERE cell_id = ?1",
                [cell],
                |r| r.get(0),
            )
            .unwrap()
    }
}

/// Merges one window's figures (`st`, its max at wall `at` ns) into the
/// rollup of `span` seconds starting at `start` (s) for `cpu`.
fn merge_rollup(
    tx: &Transaction<'_>,
    seg: &Segment,
    span: i64,
    start: i64,
    cpu: u32,
    st: &jitterlab_core::window::WindowStat,
    at: i64,
) -> Result<()> {
    let mut stmt = tx.prepare_cached(
        "INSERT INTO monitor_rollups (series, span, start, cpu, count, min, max, sum, run_id, max_cycle, max_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
         ON CONFLICT (series, span, start, cpu) DO UPDATE SET
             count = count + excluded.count,
             min = MIN(min, excluded.min),
             sum = sum + excluded.sum,
             run_id = CASE WHEN excluded.max > max THEN excluded.run_id ELSE run_id END,
             max_cycle = CASE WHEN excluded.max > max THEN excluded.max_cycle ELSE max_cycle END,
             max_at = CASE WHEN excluded.max > max THEN excluded.max_at ELSE max_at END,
             max = MAX(max, excluded.max)",
    )?;
    let sum = (st.mean as i128 * st.count as i128).clamp(i64::MIN as i128, i64::MAX as i128);
    stmt.execute(params![
        seg.series,
        span,
        start,
        cpu,
        i(st.count),
        st.min,
        st.max,
        sum as i64,
        seg.run,
        i(st.max_cycle),
        at
    ])?;
    Ok(())
}

/// Deletes cell `cell`'s windows numbered below `first_kept`, every thread,
/// with their metrics; returns the headers deleted.
fn prune_windows(tx: &Transaction<'_>, cell: i64, first_kept: i64) -> Result<u64> {
    if first_kept <= 0 {
        return Ok(0);
    }
    let mut deleted = 0;
    for t in cell_threads(tx, cell)? {
        tx.execute(
            "DELETE FROM window_metrics WHERE cell_id = ?1 AND thread = ?2 AND window < ?3",
            params![cell, t, first_kept],
        )?;
        deleted += tx.execute(
            "DELETE FROM windows WHERE cell_id = ?1 AND thread = ?2 AND window < ?3",
            params![cell, t, first_kept],
        )? as u64;
    }
    Ok(deleted)
}

/// The threads cell `cell` stored windows of, one index seek each (a
/// `DISTINCT` would read every window of the cell).
fn cell_threads(conn: &rusqlite::Connection, cell: i64) -> Result<Vec<i64>> {
    let mut threads = Vec::new();
    let mut stmt =
        conn.prepare_cached("SELECT MIN(thread) FROM windows WHERE cell_id = ?1 AND thread > ?2")?;
    while let Some(t) = stmt.query_row(
        params![cell, threads.last().copied().unwrap_or(-1i64)],
        |r| r.get::<_, Option<i64>>(0),
    )? {
        threads.push(t);
    }
    Ok(threads)
}

#[cfg(test)]
mod retention_tests;
pub mod synth;
#[cfg(test)]
pub(crate) mod tests;
pub mod view;

/// The refusal of a second monitor of `series` in the database `db`, whose
/// run `run` process `pid` measures.
pub fn two_monitors(series: &str, db: &std::path::Path, run: i64, pid: i64) -> String {
    format!(
        "series {series} is being monitored in {} by jitterlab pid {pid} (run {run}); stop that monitor first, or give this one another --series",
        db.display()
    )
}
