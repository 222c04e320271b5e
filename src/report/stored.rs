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

use std::path::{Path, PathBuf};
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
    /// Re-render the run every window while it runs (`--follow`).
    pub follow: bool,
    /// Write the report to this file (atomically) instead of stdout.
    pub output: Option<PathBuf>,
}

/// `jitterlab report [RUN…]`: the latest run by default; two runs are
/// compared cell by cell. A bench prints the seeds' tables; a single
/// `jitterlab run` prints, in text and JSON, exactly what the run printed
/// (its summary, or the result `--json` wrote), and its latency table in
/// Markdown and CSV. With `--follow` the one run is re-rendered every
/// window while it runs (see [`super::follow`]); with `-o FILE` the report
/// replaces FILE instead of going to stdout.
pub fn report(db: &Path, a: &ReportRequest) -> Result<ExitCode> {
    if a.follow && a.runs.len() > 1 {
        return Err(anyhow::Error::new(BadInput(format!(
            "--follow watches one run; name one RUN (or none for the latest), not {}",
            a.runs.len()
        ))));
    }
    if let Some(p) = &a.output {
        super::follow::check_output(p)?;
    }
    let store = open_existing(db)?;
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
    if a.follow {
        // A run that does not exist is bad input before the watch starts.
        if store.progress(ids[0])?.is_none() {
            return Err(anyhow::Error::new(BadInput(format!(
                "there is no run {} in the database; list the runs with: jitterlab runs",
                ids[0]
            ))));
        }
        return super::follow::follow(&store, ids[0], a.output.as_deref(), || {
            render(&store, &ids, a)
        });
    }
    let text = render(&store, &ids, a)?;
    match &a.output {
        Some(p) => super::follow::FileSink::new(p).write(&text)?,
        None => out!("{text}")?,
    }
    Ok(ExitCode::SUCCESS)
}

/// The report of runs `ids` of `store` as `a` asks for it (its format,
/// tables, baseline), from the database alone: what [`report`] prints, and
/// what `--follow` renders again at every window.
pub fn render(store: &Store, ids: &[i64], a: &ReportRequest) -> Result<String> {
    let load = |id: i64| {
        store
            .load_run(id)
            .map_err(|e| anyhow::Error::new(BadInput(format!("{e:#}"))))
    };
    if ids.len() == 2 {
        let (ra, rb) = (load(ids[0])?, load(ids[1])?);
        return tables::compare(&ra, &rb, a.format);
    }
    let opts = tables::TableOptions {
        baseline: a.baseline.clone(),
        tables: a.tables.clone(),
        explain: a.explain,
    };
    let mut o = String::new();
    for (k, &id) in ids.iter().enumerate() {
        let run = load(id)?;
        if k > 0 && a.format == tables::Format::Text {
            o.push('\n');
        }
        let running = RunStatus::parse(&run.status) == Some(RunStatus::Running);
        let single = RunKind::parse(&run.kind) == Some(RunKind::Run) && run.cells.len() == 1;
        if single && matches!(a.format, tables::Format::Text | tables::Format::Json) {
            match (&run.cells[0].result, run.cells[0].status) {
                (Some(r), CellStatus::Completed | CellStatus::Interrupted) if !running => {
                    match a.format {
                        tables::Format::Text => o.push_str(&super::text::summary(r)),
                        _ => o.push_str(&format!("{}\n", serde_json::to_string_pretty(r)?)),
                    }
                }
                _ if running && a.format == tables::Format::Text => {
                    let live = store.live_cells(id)?;
                    o.push_str(&super::follow::running_run(
                        id,
                        &run.name,
                        &run.started_at,
                        &live,
                    ));
                }
                _ if a.format == tables::Format::Text => {
                    let row = store.run_row(id)?.expect("load_run found the run");
                    o.push_str(&unfinished_text(&row));
                }
                _ => {
                    // A run measuring has its figures so far summed from
                    // its windows (cheap to read again while followed);
                    // any other its listing row.
                    let live = if running {
                        store.live_cells(id)?
                    } else {
                        Vec::new()
                    };
                    let (status, windows, cycles, max) = match live.as_slice() {
                        [c] => (
                            run.status.clone(),
                            i64::try_from(c.windows).unwrap_or(i64::MAX),
                            i64::try_from(c.cycles).unwrap_or(i64::MAX),
                            c.latency_max_ns(),
                        ),
                        _ => {
                            let row = store.run_row(id)?.expect("load_run found the run");
                            (row.status, row.windows, row.cycles, row.latency_max_ns)
                        }
                    };
                    o.push_str(&format!(
                        "{}\n",
                        serde_json::to_string_pretty(&serde_json::json!({
                            "run": id,
                            "name": run.name,
                            "started_at": run.started_at,
                            "status": status,
                            "finished": false,
                            "window_rows": windows,
                            "cycles": cycles,
                            "latency_max_ns": max,
                        }))?
                    ));
                }
            }
            continue;
        }
        o.push_str(&tables::render(&run, &opts, a.format)?);
        if running && a.format == tables::Format::Text {
            o.push_str(&super::follow::measuring_cells(&store.live_cells(id)?));
        }
    }
    Ok(o)
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

    /// A `jitterlab run` measuring now: text shows its figures so far,
    /// JSON the listing's figures, read from the windows.
    #[test]
    fn a_running_run_reports_its_figures_so_far() {
        use jitterlab_core::probe::MAX_METRICS;
        use jitterlab_core::result::ProbeKind;
        use jitterlab_core::window::{WindowRow, WindowStat};
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(&dir.path().join("j.db")).unwrap();
        let cmd = vec!["jitterlab".to_string()];
        let params = r#"{"period_ns":1000000,"duration_ns":60000000000,"cycles":null,"cpus":[1],"policy":"fifo","priority":95,"nice":null,"scan_ns":0,"working_set_bytes":0,"window_ns":1000000000,"threshold_ns":100000,"break_trace_ns":null,"strict":false}"#;
        let ids = s
            .begin_run(&crate::store::RunStart {
                started_at: "2026-11-21T12:00:00Z",
                probe: "wakeup",
                command_line: &cmd,
                params_json: params.into(),
                host_json: "{}".into(),
                hostname: "plc-7",
                kernel_release: "6.18.0-rt",
                realtime: Some(true),
                kind: RunKind::Run,
                name: "wakeup",
                spec_json: None,
            })
            .unwrap();
        let window = |w: u64, max: i64| {
            let mut stats = [WindowStat::default(); MAX_METRICS];
            stats[0] = WindowStat {
                count: 1000,
                min: 5_000,
                max,
                mean: 7_000,
            };
            WindowRow {
                thread: 0,
                cpu: 1,
                window: w,
                start_ns: w * 1_000_000_000,
                cycles: 1000,
                overruns: 0,
                metrics: ProbeKind::Wakeup.metrics(),
                stats,
            }
        };
        s.insert_windows(ids.cell, &[window(0, 41_000), window(1, 93_500)])
            .unwrap();
        let req = |format| ReportRequest {
            runs: vec![],
            format,
            baseline: None,
            tables: vec![],
            explain: true,
            follow: false,
            output: None,
        };
        assert_eq!(
            render(&s, &[ids.run], &req(tables::Format::Text)).unwrap(),
            concat!(
                "run 1 (wakeup, started 2026-11-21T12:00:00Z) is running: 2.000s of 1m 00s measured: 2 window rows, 2000 cycles.\n",
                "Figures so far, from the stored windows: count, min, max and mean (percentiles, outliers and limits come with the result at the end).\n",
                "\n",
                "CPU 1 (us, threshold 100.000us)\n",
                "metric        count        min        max       mean\n",
                "latency        2000      5.000     93.500      7.000\n",
            )
        );
        let json: serde_json::Value =
            serde_json::from_str(&render(&s, &[ids.run], &req(tables::Format::Json)).unwrap())
                .unwrap();
        let row = s.run_row(ids.run).unwrap().unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "run": 1, "name": "wakeup", "started_at": "2026-11-21T12:00:00Z",
                "status": "running", "finished": false,
                "window_rows": row.windows, "cycles": row.cycles,
                "latency_max_ns": row.latency_max_ns,
            })
        );
        assert_eq!(
            (row.windows, row.cycles, row.latency_max_ns),
            (2, 2000, Some(93_500))
        );
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
