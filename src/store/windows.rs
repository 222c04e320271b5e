//! Window rows in the database: written as the writer drains them, read
//! back as the partial figures of a cell whose process died.
//!
//! A row's header (thread, CPU, window, start, cycles, overruns) goes to
//! `windows`; each metric of the row's table to `window_metrics` under its
//! name, with count 0 and no min/max/mean when it had no sample in the
//! window. Nothing here knows which metrics a probe has: the rows carry
//! their table ([`WindowRow::named`]) and the reader asks the probe's
//! descriptor.

use std::collections::BTreeMap;

use anyhow::Result;
use jitterlab_core::result::{Params, ProbeKind, RunResult};
use jitterlab_core::window::WindowRow;
use rusqlite::{params, Transaction};
use serde::Deserialize;

use super::{i, Store};

/// What [`Store::record_cell_plan`] stores.
#[derive(Deserialize)]
pub(super) struct CellPlanJson {
    pub(super) probe: ProbeKind,
    pub(super) params: Params,
}

/// Writes window rows (headers and their metrics by name) inside `tx`:
/// the plain insert of a drain, and a monitor's with its rollups.
pub(super) fn write_windows(tx: &Transaction<'_>, cell: i64, rows: &[WindowRow]) -> Result<()> {
    let mut head =
        tx.prepare_cached("INSERT OR REPLACE INTO windows VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")?;
    let mut metric = tx.prepare_cached(
        "INSERT OR REPLACE INTO window_metrics VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    for r in rows {
        head.execute(params![
            cell,
            r.thread,
            r.cpu,
            i(r.window),
            i(r.start_ns),
            i(r.cycles),
            i(r.overruns),
        ])?;
        for (d, st) in r.named() {
            let figures = (st.count > 0).then_some((st.min, st.max, st.mean));
            metric.execute(params![
                cell,
                r.thread,
                i(r.window),
                d.name,
                i(st.count),
                figures.map(|f| f.0),
                figures.map(|f| f.1),
                figures.map(|f| f.2),
            ])?;
        }
    }
    Ok(())
}

impl Store {
    /// The work of [`Store::insert_windows`].
    pub(super) fn insert_windows_inner(&mut self, cell: i64, rows: &[WindowRow]) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let tx = self.conn.transaction()?;
        write_windows(&tx, cell, rows)?;
        tx.commit()?;
        Ok(())
    }

    /// The figures of a cell whose process ended before its result was
    /// stored, from the window rows it committed: per metric of its probe
    /// (found by name) the count, min, max and count-weighted mean over
    /// every thread and window. Percentiles cannot be had from windows and
    /// stay empty. `None` without any window.
    pub(super) fn partial_result(
        &self,
        cell: i64,
        plan: CellPlanJson,
        started_at: String,
    ) -> Result<Option<RunResult>> {
        let totals = self.window_totals(cell)?;
        let windows = totals.windows;
        if windows == 0 {
            return Ok(None);
        }
        let mut metrics = BTreeMap::new();
        for def in plan.probe.metrics() {
            if let Some(s) = totals.metrics.get(def.name).and_then(|t| t.summary()) {
                metrics.insert(def.name.to_string(), s);
            }
        }
        let per_thread = (windows as u64).div_ceil(plan.params.cpus.len().max(1) as u64);
        Ok(Some(RunResult::partial(
            plan.probe,
            plan.params.clone(),
            started_at,
            per_thread.saturating_mul(plan.params.window_ns),
            metrics,
            format!(
                "partial: the process ended before this cell's result was stored; figures from its {windows} committed window rows (count, min, max, mean; no percentiles)"
            ),
        )))
    }
}
