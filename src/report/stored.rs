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
//! every stored text printed here goes through [`crate::output::shown`].
//!
//! **Runs of many machines.** After `jitterlab import` a database holds the
//! runs of several hosts. The listing shows each run's uid (its first 8
//! characters: enough to name it) and its host's machine id beside the
//! hostname (`-` for runs stored before machine ids were kept), and
//! `--host`, `--since` and `--until` choose the runs ([`RunsRequest`]:
//! times are RFC 3339, a date, or an age — see [`When`]). `report` takes
//! a run's id or its uid ([`resolve_runs`]).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use time::format_description::well_known::Rfc3339;
use time::{Date, OffsetDateTime, PrimitiveDateTime};

use crate::error::{bad, BadInput};
use crate::output::{errln, out, outln};
use crate::store::import::ImportSummary;
use crate::store::{short_id, RunFilter, RunRow, RunStatus, Store, SCHEMA_VERSION};
use jitterlab_core::cell::{CellStatus, StoredRun};
use jitterlab_core::units::parse_duration;

use super::tables;
use crate::output::shown;

fn yes_no(v: Option<bool>) -> &'static str {
    match v {
        Some(true) => "yes",
        Some(false) => "no",
        None => "-",
    }
}

/// The status the listing shows: the stored one, but `skipped` for a run
/// that reached its end with every cell skipped (nothing was measured).
fn listed_status(r: &RunRow) -> &str {
    let completed = RunStatus::parse(&r.status) == Some(RunStatus::Completed);
    if completed && r.cells > 0 && r.cells_skipped == r.cells {
        "skipped"
    } else {
        &r.status
    }
}

/// The listing `jitterlab runs` prints.
pub fn runs_table(rows: &[RunRow]) -> String {
    let mut o = format!(
        "{:>4}  {:<8}  {:<25}  {:<5}  {:<16}  {:<11}  {:>7}  {:<12}  {:<8}  {:<9}  {:>10}  {:>7}  {:>14}\n",
        "run",
        "uid",
        "started",
        "kind",
        "name",
        "status",
        "cells",
        "host",
        "machine",
        "real-time",
        "cycles",
        "windows",
        "max latency"
    );
    for r in rows {
        o.push_str(&format!(
            "{:>4}  {:<8}  {:<25}  {:<5}  {:<16}  {:<11}  {:>7}  {:<12}  {:<8}  {:<9}  {:>10}  {:>7}  {:>14}\n",
            r.id,
            shown(&short_id(Some(&r.uid))),
            shown(&jitterlab_core::units::to_second(&r.started_at)),
            shown(&r.kind),
            shown(&r.name),
            shown(listed_status(r)),
            format!("{}/{}", r.cells_done, r.cells),
            shown(&r.hostname),
            shown(&short_id(r.machine_id.as_deref())),
            yes_no(r.realtime),
            r.cycles,
            r.windows,
            super::text::latency_or_dash(r.latency_max_ns)
        ));
    }
    o
}

/// A point in time on the command line (`--since`, `--until`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// An instant, from RFC 3339 (`2026-11-24T08:00:00Z`, `…+01:00`).
    At(OffsetDateTime),
    /// A whole day, UTC (`2026-11-24`): since its start, until its end.
    Day(Date),
    /// An age, ns before now (`30m`, `6h`, `7d`: the units of every time).
    Ago(u64),
}

impl When {
    /// Parses RFC 3339, a date or an age; the error says which forms there
    /// are.
    pub fn parse(text: &str) -> std::result::Result<When, String> {
        let t = text.trim();
        let is_date = t.len() == 10 && t.as_bytes()[4] == b'-' && t.as_bytes()[7] == b'-';
        let parsed = if is_date {
            OffsetDateTime::parse(&format!("{t}T00:00:00Z"), &Rfc3339)
                .ok()
                .map(|d| When::Day(d.date()))
        } else if t.contains(':') {
            OffsetDateTime::parse(t, &Rfc3339).ok().map(When::At)
        } else {
            parse_duration(t).ok().map(When::Ago)
        };
        parsed.ok_or_else(|| {
            "not a time: give RFC 3339 (2026-11-24T08:00:00Z), a date (2026-11-24, UTC) or an age (30m, 6h, 7d)".into()
        })
    }

    /// The first instant `--since` keeps.
    fn first(self, now: OffsetDateTime) -> OffsetDateTime {
        match self {
            When::At(t) => t,
            When::Day(d) => PrimitiveDateTime::new(d, time::Time::MIDNIGHT).assume_utc(),
            When::Ago(ns) => {
                let ns = i64::try_from(ns).unwrap_or(i64::MAX);
                now.checked_sub(time::Duration::nanoseconds(ns))
                    .unwrap_or(PrimitiveDateTime::MIN.assume_utc())
            }
        }
    }

    /// The first instant `--until` leaves out: just after the instant, or
    /// the next day's start.
    fn after(self, now: OffsetDateTime) -> OffsetDateTime {
        let end = match self {
            When::Day(d) => d.next_day().map(|n| When::Day(n).first(now)),
            other => other.first(now).checked_add(time::Duration::nanoseconds(1)),
        };
        end.unwrap_or(PrimitiveDateTime::MAX.assume_utc())
    }
}

/// What `jitterlab runs` is asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunsRequest {
    /// Only this host's runs: a hostname, or a machine id's first hex
    /// digits (at least 4).
    pub host: Option<String>,
    /// Only runs started at or after this.
    pub since: Option<When>,
    /// Only runs started at or before this (a date: that whole day).
    pub until: Option<When>,
    /// Schema-versioned JSON instead of the table.
    pub json: bool,
}

/// Version of the JSON `jitterlab runs --json` prints.
pub const RUNS_JSON_SCHEMA: u32 = 1;

impl RunsRequest {
    /// The store's filter, with ages counted back from `now`; `--since`
    /// after `--until` is bad input (nothing could match).
    pub fn filter(&self, now: OffsetDateTime) -> Result<RunFilter> {
        let since = self.since.map(|w| w.first(now));
        let before = self.until.map(|w| w.after(now));
        if let (Some(s), Some(b)) = (since, before) {
            if s >= b {
                return Err(bad(format!(
                    "--since is not before --until (runs from {} and before {}): no run can match; swap them",
                    rfc3339(s),
                    rfc3339(b)
                )));
            }
        }
        Ok(RunFilter {
            host: self.host.clone(),
            since,
            before,
        })
    }
}

fn rfc3339(t: OffsetDateTime) -> String {
    t.format(&Rfc3339).unwrap_or_default()
}

/// What `jitterlab runs --json` prints: its own schema version, the
/// database's, then one object per run (the listing's columns, uid and
/// machine id whole, times as stored).
#[derive(serde::Serialize)]
pub struct RunsJson<'a> {
    /// [`RUNS_JSON_SCHEMA`].
    pub schema_version: u32,
    /// The database's schema version.
    pub database_schema: i64,
    /// The runs listed.
    pub runs: &'a [RunRow],
}

/// The listing as JSON ([`RunsJson`]).
pub fn runs_json(rows: &[RunRow]) -> RunsJson<'_> {
    RunsJson {
        schema_version: RUNS_JSON_SCHEMA,
        database_schema: SCHEMA_VERSION,
        runs: rows,
    }
}

/// `jitterlab runs`.
pub fn runs(db: &Path, a: &RunsRequest) -> Result<ExitCode> {
    let filter = a.filter(OffsetDateTime::now_utc())?;
    let store = crate::store::open_existing(db)?;
    // A run that cannot be read is named, and the others listed.
    let (all, unreadable) = store.list_readable_runs()?;
    for (id, why) in &unreadable {
        errln!(
            "jitterlab: run {id} of {} cannot be read, left out: {}",
            db.display(),
            shown(why)
        );
    }
    let stored = all.len();
    let rows: Vec<RunRow> = all.into_iter().filter(|r| filter.keeps(r)).collect();
    if a.json {
        outln!("{}", serde_json::to_string_pretty(&runs_json(&rows))?)?;
    } else if stored == 0 {
        outln!("no runs stored in {}", db.display())?;
    } else if rows.is_empty() {
        outln!(
            "none of the {stored} runs stored in {} matches; list them all with: jitterlab runs",
            db.display()
        )?;
    } else {
        out!("{}", runs_table(&rows))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The run ids `texts` name — ids, uids or uid prefixes (see
/// `Store::resolve_run`); an unknown or shared one is bad input.
pub fn resolve_runs(store: &Store, texts: &[String]) -> Result<Vec<i64>> {
    texts
        .iter()
        .map(|t| {
            store
                .resolve_run(t)
                .map_err(|e| anyhow::Error::new(BadInput(format!("{e:#}"))))
        })
        .collect()
}

/// What `jitterlab import` prints of `s`, an import from `origin`.
pub fn import_text(s: &ImportSummary, origin: &Path) -> String {
    let runs = |n: usize| if n == 1 { "run" } else { "runs" };
    let mut o = String::new();
    if !s.hosts.is_empty() {
        o.push_str(&format!("from {}:\n", shown(&origin.display().to_string())));
    }
    for h in &s.hosts {
        o.push_str(&format!(
            "  {} (machine {}): {} {}\n",
            shown(&h.hostname),
            short_id(h.machine_id.as_deref()),
            h.runs,
            runs(h.runs)
        ));
    }
    let n = s.imported();
    o.push_str(&format!(
        "{n} {} imported, {} already here\n",
        runs(n),
        s.already
    ));
    if s.running > 0 {
        o.push_str(&format!(
            "left out {} {} still running there; import again once {} ended\n",
            s.running,
            runs(s.running),
            if s.running == 1 {
                "it has"
            } else {
                "they have"
            }
        ));
    }
    if s.series_left > 0 {
        for (_, why) in crate::store::import::NOT_IMPORTED {
            o.push_str(&format!(
                "left out for {} monitor series: {why} (their runs and windows came)\n",
                s.series_left
            ));
        }
    }
    o
}

/// `jitterlab import OTHER`: imports another machine's runs into `db`
/// ([`crate::store::import`]) and says what came, per host.
pub fn import(db: &Path, other: &Path) -> Result<ExitCode> {
    let summary = crate::store::import::import(db, other)?;
    out!("{}", import_text(&summary, other))?;
    Ok(ExitCode::SUCCESS)
}

/// What `jitterlab report` is asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportRequest {
    /// Runs by id or uid (see [`resolve_runs`]); empty: the latest run.
    /// Two runs are compared.
    pub runs: Vec<String>,
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
    /// Write the report to this file (replaced atomically; `-` is stdout);
    /// `None`: stdout.
    pub output: Option<PathBuf>,
    /// `--junit`: the run's verdicts as JUnit XML.
    pub junit: Option<PathBuf>,
    /// Re-render the run every window while it runs (`--follow`).
    pub follow: bool,
    /// `--monitor [SERIES]`: the view of a monitor series instead of runs
    /// (`Some(None)`: the latest monitor's series).
    pub monitor: Option<Option<String>>,
    /// `--against BASE`: compare the run with this stored baseline run
    /// ([`super::against`]).
    pub against: Option<String>,
    /// `--max-regression PCT` as given (checked here: bad input names it);
    /// `None`: 0.
    pub max_regression: Option<String>,
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
    if let Some(series) = &a.monitor {
        return super::monitor::report(db, series.as_deref(), a.format, a.output.as_ref());
    }
    if let Some(base) = &a.against {
        return against(db, a, base);
    }
    if a.follow && a.runs.len() > 1 {
        return Err(bad(format!(
            "--follow watches one run; name one RUN (or none for the latest), not {}",
            a.runs.len()
        )));
    }
    if a.follow && a.histogram.is_some() {
        return Err(bad(
            "--follow renders the report again at every window, --histogram writes the run's histogram once; give one of them",
        ));
    }
    if let Some(p) = &a.histogram {
        let store = crate::store::open_existing(db)?;
        let ids = resolve_runs(&store, &a.runs)?;
        return super::histogram::stored::write_stored_file(&store, &ids, p);
    }
    if let Some(p) = &a.output {
        crate::out_files::check_output("-o", p)?;
    }
    if let Some(p) = &a.junit {
        check_junit(p, a)?;
    }
    // `-o -` is standard output, where the report goes without -o.
    let output = a
        .output
        .as_deref()
        .filter(|p| !crate::out_files::is_stdout(p));
    if a.follow {
        let store = crate::store::open_existing(db)?;
        let ids = run_ids(&store, a)?;
        // A run that does not exist is bad input before the watch starts.
        if store.progress(ids[0])?.is_none() {
            return Err(bad(format!(
                "there is no run {} in the database; list the runs with: jitterlab runs",
                ids[0]
            )));
        }
        return super::follow::follow(&store, ids[0], output, || render_runs(&store, &ids, a));
    }
    let store = crate::store::open_existing(db)?;
    let ids = run_ids(&store, a)?;
    let text = render_runs(&store, &ids, a)?;
    if let Some(p) = &a.junit {
        write_junit(&store, ids[0], p)?;
    }
    match output {
        Some(p) => crate::out_files::write_replacing(p, &text)?,
        None => out!("{text}")?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Refuses a `--junit` FILE that cannot be written, or that shares
/// standard output with the report, before the database is read.
fn check_junit(p: &Path, a: &ReportRequest) -> Result<()> {
    let report_on_stdout = a.output.as_deref().is_none_or(crate::out_files::is_stdout);
    if crate::out_files::is_stdout(p) && report_on_stdout {
        return Err(bad(
            "--junit - and the report both ask for standard output; give --junit a file path, or the report -o FILE",
        ));
    }
    if a.runs.len() > 1 {
        return Err(bad(format!(
            "--junit writes the verdicts of one run; name one RUN, not {}",
            a.runs.len()
        )));
    }
    crate::out_files::check_output("--junit", p)
}

/// `report RUN --junit FILE`: the stored run's verdicts, recomputed from
/// its figures, as JUnit XML.
fn write_junit(store: &Store, id: i64, p: &Path) -> Result<()> {
    let run = store
        .load_run(id)
        .map_err(|e| anyhow::Error::new(BadInput(format!("{e:#}"))))?;
    super::junit::write(
        p,
        &super::junit::Head {
            title: &format!("jitterlab {} {}", run.kind, run.name),
            single: &run.name,
            started_at: &run.started_at,
            hostname: &run.hostname,
        },
        &super::verdict::of_run(&run),
    )
}

/// `report [RUN] --against BASE [--max-regression PCT]`: the comparison
/// of [`super::against`], to stdout or `-o`, and its exit status. A bad
/// PCT, more than one RUN, or a run not in the database is bad input.
fn against(db: &Path, a: &ReportRequest, base: &str) -> Result<ExitCode> {
    let pct = match &a.max_regression {
        Some(t) => jitterlab_core::regression::parse_max_regression(t).map_err(bad)?,
        None => 0.0,
    };
    if a.runs.len() > 1 {
        return Err(bad(format!(
            "--against compares one RUN with BASE; name one RUN (or none for the latest), not {}",
            a.runs.len()
        )));
    }
    if let Some(p) = &a.output {
        crate::out_files::check_output("-o", p)?;
    }
    let store = crate::store::open_existing(db)?;
    let run = run_ids(&store, a)?[0];
    let base = resolve_runs(&store, &[base.to_string()])?[0];
    let (text, code) = super::against::against(&store, run, base, pct, a.format)?;
    match a
        .output
        .as_deref()
        .filter(|p| !crate::out_files::is_stdout(p))
    {
        Some(p) => crate::out_files::write_replacing(p, &text)?,
        None => out!("{text}")?,
    }
    Ok(code)
}

/// The ids of the runs `a` names; the latest run when it names none.
fn run_ids(store: &Store, a: &ReportRequest) -> Result<Vec<i64>> {
    if !a.runs.is_empty() {
        return resolve_runs(store, &a.runs);
    }
    match store.latest_run()? {
        Some(id) => Ok(vec![id]),
        None => Err(anyhow::Error::new(BadInput(format!(
            "no runs stored in {}; run a probe first (jitterlab run cyclic)",
            store.path().display()
        )))),
    }
}

/// The report of runs `ids` of an open `store` as `a` asks for it: what
/// [`report`] prints, and what `--follow` renders again at every window
/// (one store for the whole watch, so that a growing cell's totals are
/// read incrementally). A bench still measuring has, in text, the cells it
/// measures now under its tables ([`super::follow::measuring_cells`]).
pub fn render_runs(store: &Store, ids: &[i64], a: &ReportRequest) -> Result<String> {
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
        return super::html::render(store, ids, &html);
    }
    let load = |id: i64| {
        store
            .load_run(id)
            .map_err(|e| anyhow::Error::new(BadInput(format!("{e:#}"))))
    };
    // Every run named is checked against --baseline, whatever its report
    // uses it for (a single run's text or a comparison does not).
    let load = |id: i64| {
        let run = load(id)?;
        tables::baseline(&run, &opts)?;
        Ok::<_, anyhow::Error>(run)
    };
    if ids.len() == 2 {
        let (ra, rb) = (load(ids[0])?, load(ids[1])?);
        let body = tables::compare(&ra, &rb, a.format)?;
        let (ha, hb) = (
            super::header::of_run(store, &ra)?,
            super::header::of_run(store, &rb)?,
        );
        return super::header::assemble_pair(a.format, (ra.id, &ha), (rb.id, &hb), &body);
    }
    let mut o = String::new();
    let mut first = true;
    for &id in ids {
        // Of several runs, one that cannot be read is named and the
        // others reported.
        let run = match load(id) {
            Err(e) if ids.len() > 1 => {
                errln!(
                    "jitterlab: run {id} cannot be read, left out: {}",
                    shown(&format!("{e:#}"))
                );
                continue;
            }
            r => r?,
        };
        if !first && a.format == tables::Format::Text {
            o.push('\n');
        }
        first = false;
        // Every run's report starts with its header (CSV: rows only).
        let header = super::header::of_run(store, &run)?;
        // The verdict block is part of the record, under the header; a
        // table asked for by name (--table) comes alone.
        let verdicts = a.tables.is_empty().then(|| super::verdict::of_run(&run));
        let with_header = |body: &str| match &verdicts {
            Some(v) => super::header::record(a.format, &header, v, body),
            None => super::header::assemble(a.format, &header, None, body),
        };
        if matches!(a.format, tables::Format::Text | tables::Format::Json) {
            match (super::single::single_run_text(store, &run)?, a.format) {
                (Some(text), tables::Format::Text) => {
                    o.push_str(&with_header(&text)?);
                    continue;
                }
                (Some(_), _) => {
                    o.push_str(&with_header(&single_run_json(store, &run)?)?);
                    continue;
                }
                (None, _) => {}
            }
        }
        // `--table NAME --format csv`: that table alone, tidy.
        if a.format == tables::Format::Csv && a.tables.len() == 1 {
            o.push_str(&tables::table_csv(&run, &opts)?);
            continue;
        }
        o.push_str(&with_header(&tables::render(&run, &opts, a.format)?)?);
        if a.format == tables::Format::Text
            && RunStatus::parse(&run.status) == Some(RunStatus::Running)
        {
            o.push_str(&super::follow::measuring_cells(&store.live_cells(id)?));
        }
    }
    Ok(o)
}

/// The JSON of a `jitterlab run`: the result `--json` wrote, or what is
/// left of a run that did not finish — for a run measuring now, summed
/// from its windows (cheap to read again while followed), else its listing
/// row.
fn single_run_json(store: &Store, run: &StoredRun) -> Result<String> {
    let running = RunStatus::parse(&run.status) == Some(RunStatus::Running);
    let mut s = match (&run.cells[0].result, run.cells[0].status) {
        (Some(r), CellStatus::Completed | CellStatus::Interrupted) if !running => {
            serde_json::to_string_pretty(r)?
        }
        _ => {
            let live = if running {
                store.live_cells(run.id)?
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
                    let row = store.run_row(run.id)?.expect("load_run found the run");
                    (row.status, row.windows, row.cycles, row.latency_max_ns)
                }
            };
            serde_json::to_string_pretty(&serde_json::json!({
                "run": run.id,
                "name": run.name,
                "started_at": run.started_at,
                "status": status,
                "finished": false,
                "window_rows": windows,
                "cycles": cycles,
                "latency_max_ns": max,
            }))?
        }
    };
    s.push('\n');
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::RunKind;

    fn row(status: &str, max: Option<i64>) -> RunRow {
        RunRow {
            id: 7,
            uid: "a4055349-b802-500d-bb74-fd4047a7d8b6".into(),
            machine_id: Some("93c683ad344a4a78831f02e908650126".into()),
            started_at: "2026-11-21T12:00:00Z".into(),
            kind: "run".into(),
            name: "cyclic".into(),
            status: status.into(),
            hostname: "plc-7".into(),
            realtime: Some(true),
            cells: 1,
            cells_done: 1,
            cells_skipped: 0,
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
                " run  uid       started                    kind   name              status         cells  host          machine   real-time      cycles  windows     max latency\n",
                "   7  a4055349  2026-11-21T12:00:00Z       run    cyclic            completed        1/1  plc-7         93c683ad  yes             12000       12        48.123us\n",
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
            "   7  a4055349  2026-11-21T12:00:00Z       run    x\\u{1b}[31m\\nforged  completed        1/1  plc\\r7        93c683ad  yes             12000       12        48.123us"
        );
        assert!(crate::report::single::unfinished_text(&r)
            .starts_with("run 7 (x\\u{1b}[31m\\nforged, started"));
    }

    #[test]
    fn start_times_are_listed_to_the_second() {
        assert_eq!(
            jitterlab_core::units::to_second("2026-11-22T00:58:27.608288799Z"),
            "2026-11-22T00:58:27Z"
        );
        assert_eq!(
            jitterlab_core::units::to_second("2026-11-22T00:58:27.5+01:00"),
            "2026-11-22T00:58:27+01:00"
        );
        assert_eq!(
            jitterlab_core::units::to_second("2026-11-21T12:00:00Z"),
            "2026-11-21T12:00:00Z"
        );
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
                machine_id: None,
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
                ..WindowStat::default()
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
            histogram: None,
            output: None,
            junit: None,
            follow: false,
            monitor: None,
            against: None,
            max_regression: None,
        };
        // The header first: a running run's from its stored row.
        let header = s.run_header(ids.run).unwrap();
        let text = render_runs(&s, &[ids.run], &req(tables::Format::Text)).unwrap();
        // Then the verdicts so far, right under it.
        let verdict = super::super::verdict::text(&super::super::verdict::of_run(
            &s.load_run(ids.run).unwrap(),
        ));
        assert!(verdict.starts_with("verdict so far: "), "{verdict}");
        let body = text
            .strip_prefix(&format!(
                "{}\n{verdict}\n",
                super::super::header::text(&header)
            ))
            .unwrap();
        assert!(body.starts_with("run 1 (wakeup"), "{text}");
        assert_eq!(
            body,
            concat!(
                "run 1 (wakeup, started 2026-11-21T12:00:00Z) is running: 2.000s of 1m 00s measured: 2 window rows, 2000 cycles.\n",
                "Figures so far, from the stored windows: count, min, max and mean (percentiles, outliers and limits come with the result at the end).\n",
                "\n",
                "CPU 1 (us, threshold 100.000us)\n",
                "metric        count        min        max       mean\n",
                "latency        2000      5.000     93.500      7.000\n",
            )
        );
        let mut json: serde_json::Value =
            serde_json::from_str(&render_runs(&s, &[ids.run], &req(tables::Format::Json)).unwrap())
                .unwrap();
        assert_eq!(
            json.as_object_mut().unwrap().remove("header").unwrap(),
            serde_json::to_value(&header).unwrap()
        );
        // The verdict block under it: nothing judged yet, no exit status.
        assert_eq!(
            json.as_object_mut().unwrap().remove("verdict").unwrap(),
            serde_json::json!({
                "headline": "nothing was judged",
                "exit_status": null,
                "cells": [{"cell": null, "elapsed_ns": 0, "skipped": "running: no result yet", "verdicts": []}],
            })
        );
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
        // A single run is checked against --baseline as a bench is: in
        // every format, one run or two.
        for format in [
            tables::Format::Text,
            tables::Format::Json,
            tables::Format::Csv,
        ] {
            let wrong = ReportRequest {
                baseline: Some("nonexist".into()),
                ..req(format)
            };
            assert_eq!(
                render_runs(&s, &[ids.run], &wrong).unwrap_err().to_string(),
                "--baseline nonexist is not a configuration of run 1 (configurations: default)"
            );
        }
        let two = ReportRequest {
            baseline: Some("nonexist".into()),
            ..req(tables::Format::Text)
        };
        assert_eq!(
            render_runs(&s, &[ids.run, ids.run], &two)
                .unwrap_err()
                .to_string(),
            "--baseline nonexist is not a configuration of run 1 (configurations: default)"
        );
        let right = ReportRequest {
            baseline: Some("default".into()),
            ..req(tables::Format::Text)
        };
        assert!(render_runs(&s, &[ids.run], &right).is_ok());
    }

    #[test]
    fn unfinished_run_says_what_is_left() {
        assert_eq!(
            crate::report::single::unfinished_text(&row("interrupted", None)),
            "run 7 (cyclic, started 2026-11-21T12:00:00Z) did not finish: its process ended before the result was stored (killed, or the machine lost power); status interrupted.\n\
             stored until then: 12 window rows, 12000 cycles, largest wake-up latency -.\n"
        );
    }

    #[test]
    fn an_unfinished_runs_largest_value_is_named_after_its_probe() {
        let round_trip = RunRow {
            name: "roundtrip".into(),
            ..row("interrupted", Some(6_200_000))
        };
        assert_eq!(
            crate::report::single::unfinished_text(&round_trip),
            "run 7 (roundtrip, started 2026-11-21T12:00:00Z) did not finish: its process ended before the result was stored (killed, or the machine lost power); status interrupted.\n\
             stored until then: 12 window rows, 12000 cycles, largest screw-to-screw time 6200.000us.\n"
        );
        let handover = RunRow {
            name: "ctxswitch".into(),
            ..row("interrupted", Some(8_000))
        };
        assert!(crate::report::single::unfinished_text(&handover)
            .ends_with("largest handover time 8.000us.\n"));
    }

    fn at(t: &str) -> OffsetDateTime {
        OffsetDateTime::parse(t, &Rfc3339).unwrap()
    }

    #[test]
    fn times_are_rfc3339_dates_or_ages() {
        assert_eq!(
            When::parse("2026-11-24T08:00:00+01:00"),
            Ok(When::At(at("2026-11-24T07:00:00Z")))
        );
        assert_eq!(
            When::parse("2026-11-24"),
            Ok(When::Day(at("2026-11-24T00:00:00Z").date()))
        );
        assert_eq!(When::parse("30m"), Ok(When::Ago(1_800_000_000_000)));
        assert_eq!(When::parse("7d"), Ok(When::Ago(604_800_000_000_000)));
        let why = "not a time: give RFC 3339 (2026-11-24T08:00:00Z), a date (2026-11-24, UTC) or an age (30m, 6h, 7d)";
        for bad in [
            "yesterday",
            "2026-13-01",
            "2026-11-24 08:00",
            "08:00",
            "7",
            "-1d",
            "",
        ] {
            assert_eq!(When::parse(bad), Err(why.to_string()), "{bad:?}");
        }
    }

    #[test]
    fn since_and_until_become_a_half_open_stretch() {
        let now = at("2026-11-24T12:00:00Z");
        let req = |since: &str, until: &str| RunsRequest {
            since: When::parse(since).ok(),
            until: When::parse(until).ok(),
            ..RunsRequest::default()
        };
        let f = req("2026-11-23", "2026-11-23").filter(now).unwrap();
        assert_eq!(f.since, Some(at("2026-11-23T00:00:00Z")));
        assert_eq!(f.before, Some(at("2026-11-24T00:00:00Z")));
        let f = req("6h", "30m").filter(now).unwrap();
        assert_eq!(f.since, Some(at("2026-11-24T06:00:00Z")));
        assert_eq!(f.before, Some(at("2026-11-24T11:30:00.000000001Z")));
        let e = req("2026-11-24", "2026-11-23").filter(now).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--since is not before --until (runs from 2026-11-24T00:00:00Z and before 2026-11-24T00:00:00Z): no run can match; swap them"
        );
        assert!(e.downcast_ref::<BadInput>().is_some());
        // The longest age a time holds (u64 ns: 584 years) is a date.
        let f = req("100000d", "").filter(now).unwrap();
        assert_eq!(f.since, Some(at("1753-02-08T12:00:00Z")));
        assert_eq!(f.before, None);
    }

    #[test]
    fn the_filter_keeps_a_host_by_name_or_machine_id_and_a_stretch_of_time() {
        let r = row("completed", None); // plc-7, machine 93c683ad…, 2026-11-21T12:00:00Z
        let keeps = |host: Option<&str>, since: Option<&str>, before: Option<&str>| {
            RunFilter {
                host: host.map(String::from),
                since: since.map(at),
                before: before.map(at),
            }
            .keeps(&r)
        };
        assert!(keeps(None, None, None));
        assert!(keeps(Some("plc-7"), None, None));
        assert!(keeps(Some("PLC-7"), None, None));
        assert!(!keeps(Some("plc"), None, None), "a name is whole");
        assert!(keeps(Some("93c6"), None, None));
        assert!(keeps(Some("93C683AD"), None, None));
        assert!(
            !keeps(Some("93c"), None, None),
            "a machine id needs 4 digits"
        );
        assert!(!keeps(Some("93c7"), None, None));
        assert!(
            keeps(None, Some("2026-11-21T12:00:00Z"), None),
            "since is inclusive"
        );
        assert!(!keeps(None, Some("2026-11-21T12:00:00.000000001Z"), None));
        assert!(
            !keeps(None, None, Some("2026-11-21T12:00:00Z")),
            "before is exclusive"
        );
        assert!(keeps(
            Some("plc-7"),
            Some("2026-11-21T12:59:00+01:00"),
            Some("2026-11-21T12:00:01Z")
        ));
        let mut unknown = r.clone();
        unknown.machine_id = None;
        unknown.started_at = "yesterday".into();
        let f = RunFilter {
            host: Some("93c6".into()),
            ..RunFilter::default()
        };
        assert!(
            !f.keeps(&unknown),
            "an unknown machine id matches no prefix"
        );
        let f = RunFilter {
            since: Some(at("2000-01-01T00:00:00Z")),
            ..RunFilter::default()
        };
        assert!(!f.keeps(&unknown), "a start that is not a time is left out");
        assert!(RunFilter::default().keeps(&unknown));
    }

    #[test]
    fn a_report_of_an_empty_database_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("empty.db");
        drop(Store::open(&db).unwrap());
        let e = report(
            &db,
            &ReportRequest {
                runs: vec![],
                format: tables::Format::Text,
                baseline: None,
                tables: vec![],
                explain: false,
                histogram: None,
                output: None,
                junit: None,
                follow: false,
                monitor: None,
                against: None,
                max_regression: None,
            },
        )
        .unwrap_err();
        assert!(e.is::<BadInput>());
        assert_eq!(
            e.to_string(),
            format!(
                "no runs stored in {}; run a probe first (jitterlab run cyclic)",
                db.display()
            )
        );
    }
}
