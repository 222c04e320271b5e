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
use jitterlab_core::cell::{CellStatus, StoredRun};

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
    /// Write the report to this file (replaced atomically); `None`: stdout.
    pub output: Option<PathBuf>,
}

/// What the text report prints for a `jitterlab run` (one cell): exactly
/// what the run printed (its summary), or what is left of a run that did
/// not finish; `None` for a bench, whose text report is its tables.
pub fn single_run_text(store: &Store, run: &StoredRun) -> Result<Option<String>> {
    let single = RunKind::parse(&run.kind) == Some(RunKind::Run) && run.cells.len() == 1;
    if !single {
        return Ok(None);
    }
    Ok(Some(match (&run.cells[0].result, run.cells[0].status) {
        (Some(r), CellStatus::Completed | CellStatus::Interrupted)
            if RunStatus::parse(&run.status) != Some(RunStatus::Running) =>
        {
            super::text::summary(r)
        }
        _ => {
            let row = store.run_row(run.id)?.expect("load_run found the run");
            unfinished_text(&row)
        }
    }))
}

/// `jitterlab report [RUN…]`: the latest run by default; two runs are
/// compared cell by cell. A bench prints the seeds' tables; a single
/// `jitterlab run` prints, in text and JSON, exactly what the run printed
/// (its summary, or the result `--json` wrote), and its latency table in
/// Markdown and CSV. HTML is one page with plots ([`super::html`]). With
/// `-o FILE` the report replaces FILE atomically (a reader never sees half a
/// report); a FILE that cannot be written is bad input, refused before the
/// database is read.
pub fn report(db: &Path, a: &ReportRequest) -> Result<ExitCode> {
    if let Some(p) = &a.output {
        crate::runner::out_files::check_output("-o", p)?;
    }
    let text = render(db, a)?;
    match &a.output {
        Some(p) => write_replacing(p, &text)?,
        None => out!("{text}")?,
    }
    Ok(ExitCode::SUCCESS)
}

/// The report `a` asks for, as text.
pub fn render(db: &Path, a: &ReportRequest) -> Result<String> {
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
    let opts = tables::TableOptions {
        baseline: a.baseline.clone(),
        tables: a.tables.clone(),
        explain: a.explain,
    };
    if a.format == tables::Format::Html {
        let html = super::html::HtmlOptions {
            tables: opts,
            ..Default::default()
        };
        return super::html::render(&store, &ids, &html);
    }
    let load = |id: i64| {
        store
            .load_run(id)
            .map_err(|e| anyhow::Error::new(BadInput(format!("{e:#}"))))
    };
    if ids.len() == 2 {
        let (ra, rb) = (load(ids[0])?, load(ids[1])?);
        return tables::compare(&ra, &rb, a.format);
    }
    let mut o = String::new();
    let mut first = true;
    for id in ids {
        let run = load(id)?;
        if !first && a.format == tables::Format::Text {
            o.push('\n');
        }
        first = false;
        if matches!(a.format, tables::Format::Text | tables::Format::Json) {
            match (single_run_text(&store, &run)?, a.format) {
                (Some(text), tables::Format::Text) => {
                    o.push_str(&text);
                    continue;
                }
                (Some(_), _) => {
                    o.push_str(&single_run_json(&store, &run)?);
                    continue;
                }
                (None, _) => {}
            }
        }
        o.push_str(&tables::render(&run, &opts, a.format)?);
    }
    Ok(o)
}

/// The JSON of a `jitterlab run`: the result `--json` wrote, or what is
/// left of a run that did not finish.
fn single_run_json(store: &Store, run: &StoredRun) -> Result<String> {
    let mut s = match (&run.cells[0].result, run.cells[0].status) {
        (Some(r), CellStatus::Completed | CellStatus::Interrupted)
            if RunStatus::parse(&run.status) != Some(RunStatus::Running) =>
        {
            serde_json::to_string_pretty(r)?
        }
        _ => {
            let row = store.run_row(run.id)?.expect("load_run found the run");
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
        }
    };
    s.push('\n');
    Ok(s)
}

/// Writes `text` to `path` so that a reader sees the old file or the new
/// one, never half of one: a temporary file beside it, renamed over it. An
/// existing file keeps its permissions; a new one gets the usual
/// `0666 & !umask`. A path that is not a regular file (`/dev/null`, a
/// terminal) is written in place: it cannot be renamed over.
pub fn write_replacing(path: &Path, text: &str) -> Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::PermissionsExt as _;
    let named = |e: std::io::Error| anyhow::anyhow!("writing -o {}: {e}", path.display());
    let existing = std::fs::metadata(path).ok();
    if existing.as_ref().is_some_and(|m| !m.is_file()) {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(named)?;
        return f.write_all(text.as_bytes()).map_err(named);
    }
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".jitterlab-report")
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)
        .map_err(named)?;
    if let Some(m) = existing {
        tmp.as_file()
            .set_permissions(m.permissions())
            .map_err(named)?;
    }
    tmp.write_all(text.as_bytes()).map_err(named)?;
    tmp.as_file().sync_all().map_err(named)?;
    tmp.persist(path).map_err(|e| named(e.error))?;
    Ok(())
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
