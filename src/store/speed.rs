//! Reads that stay cheap on long runs: the figures so far of a cell from
//! its window rows, kept up to date incrementally, and the small "where
//! does this run stand" query that `report --follow` polls.
//!
//! A 48-hour cell has 172 800 window rows per thread and four or more
//! `window_metrics` rows for each. Summing all of them takes a quarter of a
//! second (SQLite scans some 700 000 rows and sorts them by metric), which
//! is fine once but not every second while a run is watched. Rows of a
//! thread arrive in window order and are never rewritten (the writer only
//! appends what the probe pushed), so a [`TotalsCache`] keeps, per cell,
//! the totals and the last window seen of each thread, and a later read
//! adds only the windows after it — a range of the primary key `(cell_id,
//! thread, window)`, no scan. A store that reads a cell once (every
//! `jitterlab report`) gets the same figures the whole-cell query gave.
//!
//! The threads of a cell are found with SQLite's "loose index scan"
//! pattern (the next `MIN(thread)` above the last one, by primary key), so
//! a cell of millions of rows costs one probe of the index per thread.
//!
//! [`Store::progress`] is what a watcher polls: the run's status (a run
//! whose process is gone is marked `interrupted` on the spot, as an open
//! of the database would), each cell's status and, for the cells
//! measuring, their newest row. Two polls that return equal values mean
//! nothing a report shows has changed.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};

use anyhow::Result;
use jitterlab_core::cell::CellStatus;
use jitterlab_core::result::{Params, ProbeKind};
use jitterlab_core::stats::MetricSummary;
use rusqlite::{params, OptionalExtension};

use super::{interrupt_cells, RunKind, RunStatus, Store};

/// One metric's figures over the windows read so far.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct Totals {
    /// Samples.
    pub(super) count: i64,
    /// Smallest value.
    pub(super) min: Option<i64>,
    /// Largest value.
    pub(super) max: Option<i64>,
    /// Sum of `mean × count`.
    pub(super) weighted: Option<f64>,
}

impl Totals {
    /// Adds the figures of more windows.
    fn add(&mut self, o: Totals) {
        fn pick(a: Option<i64>, b: Option<i64>, f: fn(i64, i64) -> i64) -> Option<i64> {
            match (a, b) {
                (Some(a), Some(b)) => Some(f(a, b)),
                (a, b) => a.or(b),
            }
        }
        self.count += o.count;
        self.min = pick(self.min, o.min, i64::min);
        self.max = pick(self.max, o.max, i64::max);
        self.weighted = match (self.weighted, o.weighted) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
    }

    /// The summary a report prints: count, min, max and the count-weighted
    /// mean; `None` without samples.
    pub(super) fn summary(&self) -> Option<MetricSummary> {
        let count = u64::try_from(self.count).ok().filter(|&c| c > 0)?;
        Some(MetricSummary {
            count,
            min: self.min,
            max: self.max,
            mean: self.weighted.map(|w| (w / count as f64).round() as i64),
            ..MetricSummary::default()
        })
    }
}

/// What a cell's window rows add up to.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct WindowTotals {
    /// Window rows (one per thread and window).
    pub(super) windows: i64,
    /// Cycles (samples of the probe's main metric) over every row.
    pub(super) cycles: i64,
    /// Per metric name.
    pub(super) metrics: BTreeMap<String, Totals>,
}

/// A cell's totals and where each thread's rows were read up to.
#[derive(Debug, Default)]
struct CellTotals {
    /// Last window read, per thread.
    read_to: BTreeMap<i64, i64>,
    totals: WindowTotals,
}

/// The totals of the cells a store has read, so that reading a growing cell
/// again costs only its new rows (see the module doc).
#[derive(Debug, Default)]
pub(super) struct TotalsCache(RefCell<HashMap<i64, CellTotals>>);

/// Where a run stands, as [`Store::progress`] reads it. Equal values mean
/// that nothing a report shows has changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunProgress {
    /// The run's status.
    pub status: RunStatus,
    /// Per cell, in plan order.
    pub cells: Vec<CellProgress>,
    /// The window width of the cell measuring now (else of the run), ns;
    /// 1 s when nothing stored says.
    pub window_ns: u64,
}

/// Where a cell stands, as [`Store::progress`] reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CellProgress {
    /// `cells.id`.
    pub id: i64,
    /// Its status.
    pub status: CellStatus,
    /// For a cell measuring: its newest window row, `(thread, window)`.
    pub newest: Option<(i64, i64)>,
}

/// The figures so far of a cell that is measuring now.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveCell {
    /// `configuration/scenario/deployment/probe`.
    pub name: String,
    /// 1-based position of the cell in its run's plan.
    pub position: usize,
    /// Cells in the run.
    pub of: usize,
    /// Its probe and parameters, when stored (a bench cell's plan, a
    /// `jitterlab run`'s parameters).
    pub plan: Option<(ProbeKind, Params)>,
    /// Window rows stored so far.
    pub windows: u64,
    /// Cycles in them.
    pub cycles: u64,
    /// Time measured so far: the windows of one thread × the window width.
    pub measured_ns: u64,
    /// Count, min, max and mean per metric (no percentiles: those need the
    /// histogram, stored at the end).
    pub metrics: BTreeMap<String, MetricSummary>,
}

impl LiveCell {
    /// The largest value of its probe's first metric when that is in
    /// nanoseconds (a wake-up latency, a hand-over, timerlat's IRQ
    /// latency): the `max latency` of `jitterlab runs`.
    pub fn latency_max_ns(&self) -> Option<i64> {
        let (probe, _) = self.plan.as_ref()?;
        let first = probe.metrics().first()?;
        if first.unit != jitterlab_core::probe::MetricUnit::Ns {
            return None;
        }
        self.metrics.get(first.name)?.max
    }
}

/// The window width a run's stored parameters name, if any.
fn window_of(params_json: Option<&str>) -> Option<u64> {
    let v: serde_json::Value = serde_json::from_str(params_json?).ok()?;
    v.get("window_ns")?.as_u64().filter(|&w| w > 0)
}

impl Store {
    /// The totals of cell `cell`'s window rows: the cached ones plus every
    /// row after the last one read, per thread.
    pub(super) fn window_totals(&self, cell: i64) -> Result<WindowTotals> {
        let mut cache = self.totals.0.borrow_mut();
        let entry = cache.entry(cell).or_default();
        let mut head = self.conn.prepare_cached(
            "SELECT COUNT(*), COALESCE(SUM(cycles), 0), MAX(window) FROM windows
             WHERE cell_id = ?1 AND thread = ?2 AND window > ?3",
        )?;
        let mut figures = self.conn.prepare_cached(
            "SELECT metric, SUM(count), MIN(min), MAX(max), SUM(CAST(mean AS REAL) * count)
             FROM window_metrics
             WHERE cell_id = ?1 AND thread = ?2 AND window > ?3 AND window <= ?4
             GROUP BY metric",
        )?;
        for thread in self.threads_of(cell)? {
            let after = entry.read_to.get(&thread).copied().unwrap_or(-1);
            let (windows, cycles, last): (i64, i64, Option<i64>) = head
                .query_row(params![cell, thread, after], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })?;
            let Some(last) = last else {
                continue;
            };
            let rows = figures.query_map(params![cell, thread, after, last], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    Totals {
                        count: r.get(1)?,
                        min: r.get(2)?,
                        max: r.get(3)?,
                        weighted: r.get(4)?,
                    },
                ))
            })?;
            for row in rows {
                let (metric, t) = row?;
                entry.totals.metrics.entry(metric).or_default().add(t);
            }
            entry.totals.windows += windows;
            entry.totals.cycles += cycles;
            entry.read_to.insert(thread, last);
        }
        Ok(entry.totals.clone())
    }

    /// The threads that stored rows for `cell`, by the primary key (see
    /// the module doc).
    fn threads_of(&self, cell: i64) -> Result<Vec<i64>> {
        let mut stmt = self.conn.prepare_cached(
            "WITH RECURSIVE t(thread) AS (
                 SELECT MIN(thread) FROM windows WHERE cell_id = ?1
                 UNION ALL
                 SELECT (SELECT MIN(thread) FROM windows WHERE cell_id = ?1 AND thread > t.thread)
                 FROM t WHERE t.thread IS NOT NULL
             )
             SELECT thread FROM t WHERE thread IS NOT NULL",
        )?;
        let rows = stmt.query_map([cell], |r| r.get(0))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Where run `run` stands (see [`RunProgress`]); `None` when there is
    /// no such run. A run left `running` by a process that is gone is
    /// marked interrupted first, as opening the database would (a store
    /// opened to read only shows it interrupted).
    pub fn progress(&self, run: i64) -> Result<Option<RunProgress>> {
        let r = self.progress_inner(run);
        self.named(r)
    }

    /// The work of [`Store::progress`].
    fn progress_inner(&self, run: i64) -> Result<Option<RunProgress>> {
        let head: Option<(String, i64, String, Option<String>)> = self
            .conn
            .query_row(
                "SELECT status, pid, boot_id, params_json FROM runs WHERE id = ?1",
                [run],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .optional()?;
        let Some((status, pid, boot, params)) = head else {
            return Ok(None);
        };
        let mut status = RunStatus::parse(&status).unwrap_or(RunStatus::Interrupted);
        let gone = status == RunStatus::Running && super::process_gone(pid, &boot);
        if gone && !self.writable {
            // A store opened to read only shows it interrupted.
            status = RunStatus::Interrupted;
        } else if gone {
            let tx = self.conn.unchecked_transaction()?;
            tx.execute(
                "UPDATE runs SET status = ?2 WHERE id = ?1 AND status = ?3",
                params![
                    run,
                    RunStatus::Interrupted.name(),
                    RunStatus::Running.name()
                ],
            )?;
            interrupt_cells(&tx, run)?;
            tx.commit()?;
            status = RunStatus::Interrupted;
        }
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, status, plan_json FROM cells WHERE run_id = ?1 ORDER BY id",
        )?;
        let rows: Vec<(i64, String, Option<String>)> = stmt
            .query_map([run], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<rusqlite::Result<_>>()?;
        let mut newest = self.conn.prepare_cached(
            "SELECT thread, window FROM windows WHERE cell_id = ?1
             ORDER BY thread DESC, window DESC LIMIT 1",
        )?;
        let mut window_ns = window_of(params.as_deref());
        let mut cells = Vec::with_capacity(rows.len());
        for (id, cell_status, plan) in rows {
            let cell_status = match CellStatus::parse(&cell_status) {
                Some(CellStatus::Running) if gone => CellStatus::Interrupted,
                s => s.unwrap_or(CellStatus::Interrupted),
            };
            let last = if cell_status == CellStatus::Running {
                let plan: Option<serde_json::Value> =
                    plan.and_then(|p| serde_json::from_str(&p).ok());
                if let Some(w) = plan.as_ref().and_then(|p| p.get("params")) {
                    window_ns = window_of(Some(&w.to_string())).or(window_ns);
                }
                newest
                    .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
                    .optional()?
            } else {
                None
            };
            cells.push(CellProgress {
                id,
                status: cell_status,
                newest: last,
            });
        }
        Ok(Some(RunProgress {
            status,
            cells,
            window_ns: window_ns.unwrap_or(1_000_000_000),
        }))
    }

    /// The figures so far of every cell of run `run` that is measuring now,
    /// from its window rows (see [`LiveCell`]).
    pub fn live_cells(&self, run: i64) -> Result<Vec<LiveCell>> {
        let r = self.live_cells_inner(run);
        self.named(r)
    }

    /// The work of [`Store::live_cells`].
    fn live_cells_inner(&self, run: i64) -> Result<Vec<LiveCell>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT c.id, c.status, c.configuration, c.scenario, c.deployment, c.probe,
                    c.plan_json, r.kind, r.probe, r.params_json
             FROM cells c JOIN runs r ON r.id = c.run_id
             WHERE c.run_id = ?1 ORDER BY c.id",
        )?;
        type Row = (
            i64,
            String,
            [String; 4],
            Option<String>,
            (String, String, String),
        );
        let rows: Vec<Row> = stmt
            .query_map([run], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    [r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?],
                    r.get(6)?,
                    (r.get(7)?, r.get(8)?, r.get(9)?),
                ))
            })?
            .collect::<rusqlite::Result<_>>()?;
        let of = rows.len();
        let mut live = Vec::new();
        for (k, (id, status, key, plan, (kind, probe, params))) in rows.into_iter().enumerate() {
            if CellStatus::parse(&status) != Some(CellStatus::Running) {
                continue;
            }
            // A bench cell stores its plan; a `jitterlab run` has its
            // probe and parameters on the run row.
            let plan: Option<(ProbeKind, Params)> = match plan {
                Some(p) => serde_json::from_str::<super::CellPlanJson>(&p)
                    .ok()
                    .map(|p| (p.probe, p.params)),
                None if RunKind::parse(&kind) == Some(RunKind::Run) => {
                    ProbeKind::parse(&probe).zip(serde_json::from_str::<Params>(&params).ok())
                }
                None => None,
            };
            let totals = self.window_totals(id)?;
            let defs = plan.as_ref().map(|(p, _)| p.metrics()).unwrap_or_default();
            let metrics = defs
                .iter()
                .filter_map(|d| {
                    let s = totals.metrics.get(d.name)?.summary()?;
                    Some((d.name.to_string(), s))
                })
                .collect();
            let windows = u64::try_from(totals.windows).unwrap_or(0);
            let measured_ns = plan.as_ref().map_or(0, |(_, p)| {
                windows
                    .div_ceil(p.cpus.len().max(1) as u64)
                    .saturating_mul(p.window_ns)
            });
            live.push(LiveCell {
                name: key.join("/"),
                position: k + 1,
                of,
                plan,
                windows,
                cycles: u64::try_from(totals.cycles).unwrap_or(0),
                measured_ns,
                metrics,
            });
        }
        Ok(live)
    }
}

#[cfg(test)]
mod tests;
