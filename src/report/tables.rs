//! The comparison tables of the source documents, rendered from stored runs.
//!
//! A bench measures a matrix of cells (configuration × scenario × deployment
//! × probe × repetition); the people who read its results expect the tables
//! of the documents in `shared/seeds/`. This module turns one
//! [`StoredRun`] into those tables ([`render`]) and puts two runs side by side
//! ([`compare`]). It never measures and never touches the database: the caller
//! loads the runs, so the same bytes come out on any machine, at any time.
//!
//! # The tables
//!
//! * **Configurations** ([Intel CODESYS] Table 10) — one table per scenario,
//!   deployment and probe; a row per configuration in the run's order: max and
//!   min periodic jitter (`jitter`), max and average cycle time (`exec`, the
//!   execution time: CODESYS calls it cycle time), each followed by "vs
//!   baseline" = value ÷ the baseline configuration's value × 100, one decimal.
//!   Only for probes that measure an execution time (cyclic). Configurations
//!   the machine could not run get an `N/A` row and a footnote with the reason.
//! * **Conditions** ([Baumgartner POWERLINK] Tables 4–5) — one table per configuration,
//!   deployment and probe; a row per scenario: min and max cycle, here the
//!   measured *period* `T_per` ([Baumgartner POWERLINK]'s "cycle"; not the execution time),
//!   and the deviation `max |T_per − T0|` = `max(max_period − T0, T0 −
//!   min_period)` with `T0` the configured period. A kind may give its own
//!   side of it (`probe::parts::ConditionParts`: the POWERLINK managing
//!   node's both ends of the wire). A probe limited to some scenarios has
//!   rows for those only (none: one scenario compares nothing). See
//!   [`conditions`].
//! * **Latency** ([Xu EPICS]) — a row per cell: min, median, max wake-up latency
//!   and the share of samples over the run's threshold (named in the column
//!   header; `-` when the run had none). Chase cells have no row here: they
//!   measure CPU cycles, not a latency.
//! * **Chase** ([Red Hat caterpillar]) — a row per chase cell, in CPU (TSC) cycles: min,
//!   median, p99 and max cycles of one chase (metric `chase`), the median
//!   and max sample jitter (metric `sample-jitter`: max − min of one
//!   sample's chases, [Red Hat caterpillar]'s plotted figure), and "jitter vs baseline" =
//!   the median sample jitter ÷ that of the baseline configuration's row of
//!   the same scenario × 100. Cycles print as plain integers (`18015`, no
//!   grouping, as `jitterlab run chase` prints them). A configuration the
//!   machine could not run ([Red Hat caterpillar]'s cache-allocated one without resctrl)
//!   gets an `N/A` row per scenario with chase cells and a footnote with the
//!   reason.
//! * **A kind's own tables** ([`Table::Kind`]) — each kind's registration
//!   lists its tables (`probe::parts::KindTable`: name, whether a run gets
//!   it by default, its sheets, why it has none), which live in the kind's
//!   probe folder and are drawn with the same toolkit (`crate::render`):
//!   [Red Hat controls]'s round trip against its worst-case budget,
//!   [Baumgartner POWERLINK]'s managing-node load (Tables 2–3). They follow
//!   the tables above, in the registry's order.
//!
//! The configuration and condition tables give each row's releases,
//! cycles measured, releases skipped and overruns, and a note for each
//! repetition whose figures came from fewer cycles than were released; a
//! kind's side of the condition table adds its own counts and verdict (see
//! [`conditions`]).
//!
//! Without an explicit choice ([`TableOptions::tables`] empty) a run gets the
//! configuration tables when it has two configurations or more (the ones it
//! could not run count: their `N/A` row is a finding), the condition tables
//! when it has two scenarios or more, the latency table always, the chase
//! table when a cell ran the chase probe, and each kind's own table when
//! its registration says the run has it (`KindTable::applies`: the round
//! trip's when a cell measured round trips, the load table when cells of
//! one configuration, scenario and deployment swept cycle times or network
//! sizes). A table with nothing to show
//! is left out (a run of chases only gets the chase table alone).
//!
//! # Repetitions, failures, missing figures
//!
//! Repetitions of one cell are one row. Each figure becomes the spread
//! `min–max` over the repetitions (`41.2–57.9 µs`; one value when both ends
//! print the same), and a `reps` column counts them. Only *completed*
//! repetitions contribute figures: a failed, interrupted, running or pending
//! repetition's figures do not describe the scenario. A row where only some
//! repetitions completed says `k/n` in `reps` (and a footnote says what that
//! means); a row where none did shows its status (`failed`, or e.g.
//! `failed+interrupted`) in place of each figure, and the explanations after
//! the tables give the reason. A configuration or scenario of the run that has
//! no cell for a table shows `not run`.
//!
//! The "vs baseline" figure of a row with a spread is itself a spread: the
//! ratio of the two minima and the ratio of the two maxima (best against best,
//! worst against worst), printed lowest first. A ratio whose baseline is 0, or
//! whose baseline has no figure, is `n/a`. [`compare`]'s "B as % of A" is
//! computed the same way.
//!
//! # Formats
//!
//! * `text` — a header (run id, name, start, host, kernel, status), then each
//!   table as a title line and aligned columns, footnotes under it; times in
//!   µs with one decimal (rounded half away from zero), percentages with one
//!   decimal (vs baseline) or four (share over the threshold, so that one
//!   sample in a million still shows, as in `jitterlab run`'s summary).
//! * `md` — the same as GitHub pipe tables under `###` titles.
//! * `csv` — one document: a header row, then every table's rows, told apart
//!   by the first column `table` (`configurations`, `conditions`, `latency`,
//!   `chase`, then each kind table's name). The columns are the same whatever tables a run
//!   has: the key columns, the repetition and status columns, then every
//!   table's figures in integer ns or, for the chase, integer cycles (each
//!   with `_min`/`_max`, equal for one repetition); fields that do not
//!   belong to a row's table are empty. The exceptions: the columns of a
//!   kind's own tables and of a kind's side of the condition table come
//!   last and only when the run has them, so the CSV of every other run
//!   reads byte for byte as it did before they existed (stored runs render
//!   as they did). A kind table laid out as a grid for people (the load
//!   table) is one row per cell there. The explanations
//!   are not part of it.
//! * `json` — `{"schema_version":1,"run":ID,…,"tables":[{"name","title",
//!   "columns","rows","notes"}],"explanations":[…]}`, with the same columns
//!   and values as the CSV (numbers as numbers, times in ns, `null` where a
//!   figure is missing).
//! * `html` — a fragment for a page: the text header as a `<dl>`, each
//!   table as a `<table>` of the cells the Markdown prints (caption = its
//!   title, footnotes after it), the explanations as a list. The whole page
//!   with plots is `report::html`'s.
//!
//! # Explanations
//!
//! After the tables, one short block per stored cell (every repetition, in
//! the order they ran) says what can explain an outlier: hypervisor steal on
//! the probe CPUs, the interrupts and softirqs that hit them (the three
//! largest lines of each), the probe thread's context switches, per
//! neighbour the CPU time it used and how many CPUs that kept busy, its
//! bogo-ops and, when it did not live through the cell, how it ended and the
//! tail of its stderr; and where NET_RX work landed. A zero is said out loud
//! (`no steal`, `no involuntary`) so that the reader can trust its absence.
//!
//! Names, notes, failures and a neighbour's stderr come from the database;
//! text and Markdown print them through [`crate::output::shown`] (control
//! characters escaped, so one stored line stays one printed line), CSV the
//! same, JSON exact.
//!
//! The design rules and documents cited here are in `docs/design.md`.

// `jitterlab report` is the only caller; until it renders these tables the
// binary itself uses nothing here but the tests do.

mod chase;
mod compare;
mod conditions;
mod configurations;
mod explain;
mod latency;
#[cfg(test)]
pub(crate) mod tests;

use anyhow::Result;
use jitterlab_core::cell::StoredRun;
use serde::Serialize;

use crate::error::bad;
use crate::output::shown;
use crate::probe::parts::{self, KindTable};
use crate::render::number::{pct1_text, ratio_spread, round_div, threshold_text};
use crate::render::rows as build;
use crate::render::sheet::{self, Sheet};
use explain::Explanation;

/// Version of the JSON these tables are written as (design rule 9).
pub const TABLES_SCHEMA_VERSION: u32 = 1;

/// An output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Aligned columns for a terminal.
    Text,
    /// GitHub Markdown pipe tables.
    Md,
    /// One CSV document with a `table` column.
    Csv,
    /// One JSON document.
    Json,
    /// The tables as an HTML fragment (`<table>`s built from the rows the
    /// Markdown prints); `jitterlab report --format html` puts it in a page
    /// with the plots (`report::html`).
    Html,
}

/// One kind of table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Table {
    /// Per configuration, against a baseline ([Intel CODESYS] Table 10).
    Configurations,
    /// Per scenario: min/max period and deviation ([Baumgartner POWERLINK] Tables 4–5).
    Conditions,
    /// Per cell: min/median/max latency, share over the threshold ([Xu EPICS]).
    Latency,
    /// Per chase cell: cycles per chase and sample jitter, against a
    /// baseline ([Red Hat caterpillar]).
    Chase,
    /// A kind's own table, by its name (`probe::parts::KindTable`): the
    /// round trip's ([Red Hat controls]), the POWERLINK load's
    /// ([Baumgartner POWERLINK] Tables 2–3).
    Kind(&'static str),
}

#[cfg(test)]
impl Table {
    /// The name used in the CSV `table` column, in JSON and on the command
    /// line.
    pub fn name(self) -> &'static str {
        match self {
            Table::Configurations => "configurations",
            Table::Conditions => "conditions",
            Table::Latency => "latency",
            Table::Chase => "chase",
            Table::Kind(name) => name,
        }
    }
}

/// What to render.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableOptions {
    /// The configuration the others are compared with; default: the run's
    /// first configuration.
    pub baseline: Option<String>,
    /// The tables, in this order; empty: every table that applies.
    pub tables: Vec<Table>,
    /// Per-cell outlier explanations after the tables (text, md, json).
    pub explain: bool,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            baseline: None,
            tables: Vec::new(),
            explain: true,
        }
    }
}

/// The configuration "vs baseline" compares with: `opts.baseline`, which
/// must name a configuration of `run` (a single run's is `default`), else
/// the run's first. Errors (BadInput) as [`render`] says.
pub fn baseline(run: &StoredRun, opts: &TableOptions) -> Result<String> {
    let names = build::configuration_names(run);
    match &opts.baseline {
        Some(b) if names.iter().any(|n| n == b) => Ok(b.clone()),
        Some(b) => Err(bad(format!(
            "--baseline {b} is not a configuration of run {} (configurations: {})",
            run.id,
            names.join(", ")
        ))),
        None => Ok(names.first().cloned().unwrap_or_default()),
    }
}

/// Renders one run's tables. Errors (BadInput, see `src/error.rs`) for a
/// `--baseline` that names no configuration of the run: "--baseline NAME is
/// not a configuration of run ID (configurations: a, b)".
pub fn render(run: &StoredRun, opts: &TableOptions, format: Format) -> Result<String> {
    let (sheets, notes) = build_sheets(run, opts)?;
    let explanations = if opts.explain {
        explain::explain(run)
    } else {
        Vec::new()
    };
    // The verdict block is part of the record above the tables
    // (`super::header::record`), not of the tables.
    Ok(match format {
        Format::Text => text(run, &sheets, &notes, &explanations),
        Format::Md => md(run, &sheets, &notes, &explanations),
        Format::Csv => csv(&sheets),
        Format::Json => json(run, &sheets, notes, explanations)?,
        Format::Html => html(run, &sheets, &notes, &explanations),
    })
}

/// `report --table NAME --format csv`: the one table `opts` names, tidy
/// ([`tidy_csv`]); BadInput saying why when the run has no such table.
pub fn table_csv(run: &StoredRun, opts: &TableOptions) -> Result<String> {
    let (sheets, notes) = build_sheets(run, opts)?;
    match notes.first() {
        Some(why) if sheets.iter().all(|s| !s.for_scripts()) => Err(bad(why.clone())),
        _ => Ok(tidy_csv(&sheets)),
    }
}

/// The sheets of the tables `opts` asks for (or that apply), and the
/// notes on tables asked for that have nothing to show.
fn build_sheets(run: &StoredRun, opts: &TableOptions) -> Result<(Vec<Sheet>, Vec<String>)> {
    let names = build::configuration_names(run);
    let baseline = baseline(run, opts)?;
    let explicit = !opts.tables.is_empty();
    let tables = if explicit {
        let mut t = opts.tables.clone();
        let mut seen = std::collections::HashSet::new();
        t.retain(|x| seen.insert(*x));
        t
    } else {
        let mut t = Vec::new();
        if names.len() >= 2 {
            t.push(Table::Configurations);
        }
        if build::scenario_names(run).len() >= 2 {
            t.push(Table::Conditions);
        }
        t.push(Table::Latency);
        if chase::any_chase(run) {
            t.push(Table::Chase);
        }
        for k in parts::kind_tables() {
            if (k.applies)(run) {
                t.push(Table::Kind(k.name));
            }
        }
        t
    };
    let mut sheets: Vec<Sheet> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    for t in tables {
        let s = match t {
            Table::Configurations => configurations::configurations(run, &baseline),
            Table::Conditions => conditions::conditions(run),
            Table::Latency => latency::latency(run),
            Table::Chase => chase::chase(run, &baseline),
            Table::Kind(name) => kind_table(name).map_or_else(Vec::new, |k| (k.build)(run)),
        };
        if s.is_empty() && explicit {
            notes.push(match t {
                Table::Configurations => format!(
                    "no configuration table: no cell of run {} measured an execution time (cyclic probe)",
                    run.id
                ),
                Table::Conditions => format!(
                    "no condition table: no cell of run {} measured a period",
                    run.id
                ),
                Table::Latency if run.cells.is_empty() => {
                    format!("no latency table: run {} has no cells", run.id)
                }
                Table::Latency => format!(
                    "no latency table: every cell of run {} ran the chase probe (see the chase table)",
                    run.id
                ),
                Table::Chase => format!(
                    "no chase table: no cell of run {} ran the chase probe",
                    run.id
                ),
                Table::Kind(name) => kind_table(name).map_or_else(
                    || format!("no {name} table: this build has no such table"),
                    |k| (k.none)(run),
                ),
            });
        }
        sheets.extend(s);
    }
    // Noise short of its request and stalls caused by RT throttling are
    // said under the tables too, not only in the explanations.
    for c in &run.cells {
        let cell = format!("{} rep {}", c.key.name(), c.key.repetition);
        for n in &c.context.neighbours {
            if let Some(l) = n.load.as_ref().filter(|l| l.short) {
                notes.push(format!("{cell}: neighbour {} {}", n.name, l.text()));
            }
        }
        if let Some(t) = c.context.throttling.as_ref() {
            if let Some(first) = t.lines().into_iter().next() {
                notes.push(format!("{cell}: {first}"));
            }
            let window_ns = c.result.as_ref().map_or(0, |r| r.params.window_ns);
            if let Some(w) = t.windows_line(window_ns) {
                notes.push(format!("{cell}: {w}"));
            }
        }
    }
    Ok((sheets, notes))
}

/// The kind's own table called `name`.
fn kind_table(name: &str) -> Option<&'static KindTable> {
    parts::kind_tables().find(|k| k.name == name)
}

/// Markdown's escaping of stored text (see `sheet::md_escape`), for the
/// other renderers of Markdown.
pub fn md_escape(s: &str) -> String {
    sheet::md_escape(s)
}

/// Every stored cell's explanation as the lines text prints (depth, line),
/// one list per cell in the order of `run.cells`: for renderers that put
/// each beside its cell (the HTML page).
pub fn explanation_lines(run: &StoredRun) -> Vec<Vec<(usize, String)>> {
    explain::explain(run)
        .iter()
        .map(Explanation::lines)
        .collect()
}

/// Compares run A with run B (`jitterlab report A B`): cells matched by
/// CellKey::name() (the key without repetition); for each figure A, B and B
/// as % of A; cells only in one run listed as such.
pub fn compare(a: &StoredRun, b: &StoredRun, format: Format) -> Result<String> {
    compare::render(a, b, format)
}

// ---------------------------------------------------------------------------
// Formats of a whole run.

/// The label column of the text header.
const LABEL: usize = 13;

fn header_fields(run: &StoredRun) -> Vec<(&'static str, String)> {
    let mut v = vec![
        ("run", format!("{} ({} {})", run.id, run.kind, run.name)),
        ("started", run.started_at.clone()),
        ("host", run.hostname.clone()),
        ("kernel", run.kernel_release.clone()),
        ("status", run.status.clone()),
    ];
    for (c, reason) in &run.unavailable {
        v.push(("unavailable", format!("{c}: {reason}")));
    }
    v
}

fn text(run: &StoredRun, sheets: &[Sheet], notes: &[String], ex: &[Explanation]) -> String {
    let mut o = String::new();
    for (k, v) in header_fields(run) {
        o.push_str(&format!("{k:<LABEL$}{}\n", shown(&v)));
    }
    for n in notes {
        o.push('\n');
        o.push_str(&shown(n));
        o.push('\n');
    }
    for s in sheets.iter().filter(|s| s.printed()) {
        o.push('\n');
        s.write_text(&mut o);
    }
    if !ex.is_empty() {
        o.push_str("\nExplanations\n");
        for e in ex {
            for (depth, l) in e.lines() {
                o.push_str(&"  ".repeat(depth));
                o.push_str(&shown(&l));
                o.push('\n');
            }
        }
    }
    o
}

fn md(run: &StoredRun, sheets: &[Sheet], notes: &[String], ex: &[Explanation]) -> String {
    let mut o = format!(
        "## Run {}: {} ({})\n\n",
        run.id,
        sheet::md_escape(&run.name),
        sheet::md_escape(&run.kind)
    );
    for (k, v) in header_fields(run).into_iter().skip(1) {
        o.push_str(&format!("- {k}: {}\n", sheet::md_escape(&v)));
    }
    for n in notes {
        o.push('\n');
        o.push_str(&sheet::md_escape(n));
        o.push('\n');
    }
    for s in sheets.iter().filter(|s| s.printed()) {
        o.push('\n');
        s.write_md(&mut o);
    }
    if !ex.is_empty() {
        o.push_str("\n### Explanations\n\n");
        for e in ex {
            for (depth, l) in e.lines() {
                o.push_str(&"  ".repeat(depth));
                o.push_str(&format!("- {}\n", sheet::md_escape(&l)));
            }
        }
    }
    o
}

/// The lines of explanations as an HTML list, a line's depth as its class.
fn html_lines(o: &mut String, lines: &[(usize, String)]) {
    for (depth, l) in lines {
        o.push_str(&format!(
            "<li class=\"depth-{depth}\">{}</li>\n",
            crate::render::safe::escape(&shown(l))
        ));
    }
}

/// The explanations of cells as an HTML list (one item per line).
pub fn html_explanations(lines: &[(usize, String)]) -> String {
    let mut o = String::from("<ul class=\"explain\">\n");
    html_lines(&mut o, lines);
    o.push_str("</ul>\n");
    o
}

fn html(run: &StoredRun, sheets: &[Sheet], notes: &[String], ex: &[Explanation]) -> String {
    let esc = |s: &str| crate::render::safe::escape(&shown(s));
    let mut o = String::from("<dl class=\"run-head\">\n");
    for (k, v) in header_fields(run) {
        o.push_str(&format!("<dt>{k}</dt><dd>{}</dd>\n", esc(&v)));
    }
    o.push_str("</dl>\n");
    for n in notes {
        o.push_str(&format!("<p class=\"note\">{}</p>\n", esc(n)));
    }
    for s in sheets.iter().filter(|s| s.printed()) {
        s.write_html(&mut o);
    }
    if !ex.is_empty() {
        let lines: Vec<(usize, String)> = ex.iter().flat_map(Explanation::lines).collect();
        o.push_str("<h3>Explanations</h3>\n");
        o.push_str(&html_explanations(&lines));
    }
    o
}

fn csv(sheets: &[Sheet]) -> String {
    let mut columns = csv_columns();
    // The columns of a kind's own tables and of its side of the condition
    // table only when the run has them, in the order its tables bring
    // them, so the CSV of every other run reads as it did before they
    // existed.
    let scripts: Vec<&Sheet> = sheets.iter().filter(|s| s.for_scripts()).collect();
    for s in &scripts {
        for n in s.machine_columns() {
            if !columns.contains(&n) {
                columns.push(n);
            }
        }
    }
    sheet::csv(&columns, &scripts)
}

/// One table's CSV for a spreadsheet or a CI job (`report --table NAME
/// --format csv`): one header row of that table's own columns (every
/// figure's unit in its name: `_ns`, `_pct`, `_cycles`), then one row per
/// observation — a cell, or a repetition spread of one — and nothing else:
/// no `table` column, no comment, no blank line. The sheets of one table
/// (one per scenario, deployment and probe) share its columns.
fn tidy_csv(sheets: &[Sheet]) -> String {
    let scripts: Vec<&Sheet> = sheets.iter().filter(|s| s.for_scripts()).collect();
    let mut columns: Vec<String> = Vec::new();
    for s in &scripts {
        for n in s.machine_columns() {
            if !columns.contains(&n) {
                columns.push(n);
            }
        }
    }
    let mut o = columns.join(",");
    o.push('\n');
    for s in &scripts {
        let names = s.machine_columns();
        for row in &s.rows {
            let values = s.machine_row(row);
            let fields: Vec<String> = columns
                .iter()
                .map(|c| match names.iter().position(|n| n == c) {
                    Some(k) => sheet::csv_field(&values[k]),
                    None => String::new(),
                })
                .collect();
            o.push_str(&fields.join(","));
            o.push('\n');
        }
    }
    o
}

#[derive(Serialize)]
struct JsonUnavailable<'a> {
    configuration: &'a str,
    reason: &'a str,
}

#[derive(Serialize)]
struct JsonRun<'a> {
    schema_version: u32,
    #[serde(flatten)]
    head: compare::JsonSide<'a>,
    unavailable: Vec<JsonUnavailable<'a>>,
    notes: Vec<String>,
    tables: Vec<sheet::JsonTable>,
    explanations: Vec<Explanation>,
}

fn json(
    run: &StoredRun,
    sheets: &[Sheet],
    notes: Vec<String>,
    explanations: Vec<Explanation>,
) -> Result<String> {
    let doc = JsonRun {
        schema_version: TABLES_SCHEMA_VERSION,
        head: compare::json_side(run),
        unavailable: run
            .unavailable
            .iter()
            .map(|(c, r)| JsonUnavailable {
                configuration: c,
                reason: r,
            })
            .collect(),
        notes,
        tables: sheets
            .iter()
            .filter(|s| s.for_scripts())
            .map(Sheet::json)
            .collect(),
        explanations,
    };
    let mut s = serde_json::to_string_pretty(&doc)?;
    s.push('\n');
    Ok(s)
}

/// The CSV header after `table`: every table's machine columns, key and
/// status columns first, each name once.
pub(crate) fn csv_columns() -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for cols in [
        configurations::configuration_cols(),
        conditions::condition_cols(None),
        latency::latency_cols("", true, true, true),
        chase::chase_cols(),
    ] {
        for n in cols.into_iter().flat_map(|c| c.names) {
            if !v.contains(&n) {
                v.push(n);
            }
        }
    }
    v
}
