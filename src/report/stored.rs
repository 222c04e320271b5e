//! `jitterlab runs` and `jitterlab report`: everything here reads the
//! results database and nothing else, so a stored run can be listed and
//! re-rendered at any time, on any machine that has the file.
//!
//! A run that finished has its whole `RunResult` stored, and `report` prints
//! exactly the summary the run printed (or the JSON `--json` wrote). A run
//! that did not finish — its process was killed or the machine lost power —
//! has no result, but every window row committed until then: `report` says
//! so and summarises those rows.
//!
//! The database may come from another machine or be edited by hand, so
//! every stored text printed here goes through [`super::safe::shown`].

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;

use crate::error::BadInput;
use crate::output::{out, outln};
use crate::store::{RunKind, RunRow, RunStatus, Store};
use jitterlab_core::cell::CellStatus;

use super::safe::shown;
use super::tables;

/// Opens an existing database for reading; a missing file is bad input (a
/// report must not create an empty database).
fn open_existing(db: &Path) -> Result<Store> {
    if !db.is_file() {
        return Err(anyhow::Error::new(BadInput(format!(
            "no results database at {}; run a probe first (jitterlab run cyclic) or name the database with --db",
            db.display()
        ))));
    }
    Store::open(db)
}

fn latency(ns: Option<i64>) -> String {
    match ns {
        Some(v) => format!("{}us", super::text::us(v)),
        None => "-".into(),
    }
}

fn yes_no(v: Option<bool>) -> &'static str {
    match v {
        Some(true) => "yes",
        Some(false) => "no",
        None => "-",
    }
}

/// A stored RFC 3339 time to the second (`…T12:00:00.123456789Z` →
/// `…T12:00:00Z`), so the listing's columns line up.
fn to_second(t: &str) -> String {
    match (t.find('.'), t.rfind(['Z', '+', '-'])) {
        (Some(dot), Some(zone)) if zone > dot => format!("{}{}", &t[..dot], &t[zone..]),
        _ => t.to_string(),
    }
}

/// The listing `jitterlab runs` prints.
pub fn runs_table(rows: &[RunRow]) -> String {
    let mut o = format!(
        "{:>4}  {:<25}  {:<5}  {:<16}  {:<11}  {:>7}  {:<12}  {:<9}  {:>10}  {:>7}  {:>14}\n",
        "run",
        "started",
        "kind",
        "name",
        "status",
        "cells",
        "host",
        "real-time",
        "cycles",
        "windows",
        "max latency"
    );
    for r in rows {
        o.push_str(&format!(
            "{:>4}  {:<25}  {:<5}  {:<16}  {:<11}  {:>7}  {:<12}  {:<9}  {:>10}  {:>7}  {:>14}\n",
            r.id,
            shown(&to_second(&r.started_at)),
            shown(&r.kind),
            shown(&r.name),
            shown(&r.status),
            format!("{}/{}", r.cells_done, r.cells),
            shown(&r.hostname),
            yes_no(r.realtime),
            r.cycles,
            r.windows,
            latency(r.latency_max_ns)
        ));
    }
    o
}

/// `jitterlab runs`.
pub fn runs(db: &Path) -> Result<ExitCode> {
    let store = open_existing(db)?;
    let rows = store.list_runs()?;
    if rows.is_empty() {
        outln!("no runs stored in {}", db.display())?;
    } else {
        out!("{}", runs_table(&rows))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// What `report` says of a run that has no stored result.
pub fn unfinished_text(r: &RunRow) -> String {
    format!(
        "run {} ({}, started {}) did not finish: its process ended before the result was stored (killed, or the machine lost power); status {}.\n\
         stored until then: {} window rows, {} cycles, largest wake-up latency {}.\n",
        r.id,
        shown(&r.name),
        shown(&r.started_at),
        shown(&r.status),
        r.windows,
        r.cycles,
        latency(r.latency_max_ns)
    )
}

/// What `jitterlab report` is asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportRequest {
    /// Run ids; empty: the latest run. Two runs are compared.
    pub runs: Vec<i64>,
    /// Output format.
    pub format: tables::Format,
    /// The configuration "vs baseline" compares with; `None`: the spec's.
    pub baseline: Option<String>,
    /// Only these tables; empty: the default choice.
    pub tables: Vec<tables::Table>,
    /// Explain the outliers of each cell.
    pub explain: bool,
    /// `--histogram`: write the stored 1 µs histogram there instead.
    pub histogram: Option<std::path::PathBuf>,
}

/// `jitterlab report [RUN…]`: the latest run by default; two runs are
/// compared cell by cell. A bench prints the seeds' tables; a single
/// `jitterlab run` prints, in text and JSON, exactly what the run printed
/// (its summary, or the result `--json` wrote), and its latency table in
/// Markdown and CSV.
pub fn report(db: &Path, a: &ReportRequest) -> Result<ExitCode> {
    let store = open_existing(db)?;
    if let Some(p) = &a.histogram {
        return super::histogram::stored::write_stored_file(&store, &a.runs, p);
    }
    let ids = if a.runs.is_empty() {
        match store.latest_run()? {
            Some(id) => vec![id],
            None => {
                return Err(anyhow::Error::new(BadInput(format!(
                    "no runs stored in {}; run a probe first (jitterlab run cyclic)",
                    db.display()
                ))))
            }
        }
    } else {
        a.runs.clone()
    };
    let load = |id: i64| {
        store
            .load_run(id)
            .map_err(|e| anyhow::Error::new(BadInput(format!("{e:#}"))))
    };
    if ids.len() == 2 {
        let (ra, rb) = (load(ids[0])?, load(ids[1])?);
        out!("{}", tables::compare(&ra, &rb, a.format)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    let opts = tables::TableOptions {
        baseline: a.baseline.clone(),
        tables: a.tables.clone(),
        explain: a.explain,
    };
    let mut first = true;
    for id in ids {
        let run = load(id)?;
        if !first && a.format == tables::Format::Text {
            outln!()?;
        }
        first = false;
        let single = RunKind::parse(&run.kind) == Some(RunKind::Run) && run.cells.len() == 1;
        if single && matches!(a.format, tables::Format::Text | tables::Format::Json) {
            match (&run.cells[0].result, run.cells[0].status) {
                (Some(r), CellStatus::Completed | CellStatus::Interrupted)
                    if RunStatus::parse(&run.status) != Some(RunStatus::Running) =>
                {
                    match a.format {
                        tables::Format::Text => out!("{}", super::text::summary(r))?,
                        _ => outln!("{}", serde_json::to_string_pretty(r)?)?,
                    }
                }
                _ => {
                    let row = store.run_row(id)?.expect("load_run found the run");
                    match a.format {
                        tables::Format::Text => out!("{}", unfinished_text(&row))?,
                        _ => outln!(
                            "{}",
                            serde_json::to_string_pretty(&serde_json::json!({
                                "run": row.id,
                                "name": row.name,
                                "started_at": row.started_at,
                                "status": row.status,
                                "finished": false,
                                "window_rows": row.windows,
                                "cycles": row.cycles,
                                "latency_max_ns": row.latency_max_ns,
                            }))?
                        )?,
                    }
                }
            }
            continue;
        }
        out!("{}", tables::render(&run, &opts, a.format)?)?;
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(status: &str, max: Option<i64>) -> RunRow {
        RunRow {
            id: 7,
            started_at: "2026-11-21T12:00:00Z".into(),
            kind: "run".into(),
            name: "cyclic".into(),
            status: status.into(),
            hostname: "plc-7".into(),
            realtime: Some(true),
            cells: 1,
            cells_done: 1,
            cycles: 12_000,
            windows: 12,
            latency_max_ns: max,
        }
    }

    #[test]
    fn runs_table_is_aligned() {
        assert_eq!(
            runs_table(&[row("completed", Some(48_123))]),
            concat!(
                " run  started                    kind   name              status         cells  host          real-time      cycles  windows     max latency\n",
                "   7  2026-11-21T12:00:00Z       run    cyclic            completed        1/1  plc-7         yes             12000       12        48.123us\n",
            )
        );
    }

    #[test]
    fn runs_table_escapes_control_characters_of_stored_text() {
        let mut r = row("completed", Some(48_123));
        r.name = "x\u{1b}[31m\nforged".into();
        r.hostname = "plc\r7".into();
        assert_eq!(
            runs_table(&[r.clone()]).lines().nth(1).unwrap(),
            "   7  2026-11-21T12:00:00Z       run    x\\u{1b}[31m\\nforged  completed        1/1  plc\\r7        yes             12000       12        48.123us"
        );
        assert!(unfinished_text(&r).starts_with("run 7 (x\\u{1b}[31m\\nforged, started"));
    }

    #[test]
    fn start_times_are_listed_to_the_second() {
        assert_eq!(
            to_second("2026-11-22T00:58:27.608288799Z"),
            "2026-11-22T00:58:27Z"
        );
        assert_eq!(
            to_second("2026-11-22T00:58:27.5+01:00"),
            "2026-11-22T00:58:27+01:00"
        );
        assert_eq!(to_second("2026-11-21T12:00:00Z"), "2026-11-21T12:00:00Z");
    }

    #[test]
    fn unfinished_run_says_what_is_left() {
        assert_eq!(
            unfinished_text(&row("interrupted", None)),
            "run 7 (cyclic, started 2026-11-21T12:00:00Z) did not finish: its process ended before the result was stored (killed, or the machine lost power); status interrupted.\n\
             stored until then: 12 window rows, 12000 cycles, largest wake-up latency -.\n"
        );
    }
}
