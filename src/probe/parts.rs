//! What the reports ask of a probe kind: the lines and block its summary
//! adds, the limit its plots draw, its own tables and its side of the
//! condition table. Each kind's registration ([`super::Registration`])
//! carries one [`ReportParts`]; the shared report code (`report::text`,
//! `report::html`, `report::tables`) iterates [`super::REGISTRY`] for them
//! and names no kind.
//!
//! The layers, from the top: `report` (the assembly: which tables a run
//! gets, the renderers) asks the registry; the kinds' parts live in their
//! probe folders (`probe/netcycle/report.rs`, `probe/roundtrip/report.rs`,
//! `probe/observe/report.rs`) and are drawn with the toolkit below the
//! probes (`render`: the table model, the rows and figures, the number
//! formatting, HTML escaping), which imports no kind and nothing of the
//! assembly. So a kind's tables use the same pieces as the shared ones and
//! no import runs back up.

use jitterlab_core::cell::StoredRun;
use jitterlab_core::result::{ProbeKind, RunResult};

use crate::render::rows::{Fig, Group};
use crate::render::sheet::{Cell, Sheet};

/// The line under one outlier: given the result, the metric's name, the
/// CPU of the thread it is an outlier of and the outlier's cycle.
pub type OutlierNote = fn(&RunResult, &str, usize, u64) -> Option<String>;

/// What the reports print of one kind beyond its metrics.
#[derive(Clone, Copy)]
pub struct ReportParts {
    /// Lines under the thread lines of a run's summary (`observe`: the
    /// thread observed and its T0).
    pub summary_head: Option<fn(&RunResult) -> Vec<String>>,
    /// The line printed under one outlier of a metric (`observe`, and
    /// `cyclic` and `wakeup` with `explain`: what delayed that cycle),
    /// given the metric's name, its thread's CPU and the outlier's cycle.
    pub outlier_note: Option<OutlierNote>,
    /// The block printed under a run's summary (text and Markdown) and
    /// rebuilt from a stored result.
    pub summary: Option<fn(&RunResult) -> Option<String>>,
    /// The heading the HTML page gives [`Self::summary`]'s block in its
    /// verdict section (`Round-trip budget`); `None`: the page leaves
    /// it out.
    pub verdict_block: Option<&'static str>,
    /// A limit every plot of a cell draws as a line (the round trip's
    /// worst-case budget), and the box chart of a cell against it.
    pub plot_limit: Option<&'static PlotLimit>,
    /// The kind's own comparison tables, in the order the report gives
    /// them after the shared ones.
    pub tables: &'static [KindTable],
    /// The kind's side of the condition table, when its rows differ from
    /// every other probe's.
    pub conditions: Option<&'static ConditionParts>,
}

impl ReportParts {
    /// A kind whose reports are its metrics alone.
    pub const NONE: ReportParts = ReportParts {
        summary_head: None,
        outlier_note: None,
        summary: None,
        verdict_block: None,
        plot_limit: None,
        tables: &[],
        conditions: None,
    };
}

/// A limit the HTML page draws on every plot of a kind's cell, and the
/// box chart it gives each cell against it.
pub struct PlotLimit {
    /// The limit a result was checked against, ns.
    pub of: fn(&RunResult) -> Option<u64>,
    /// The metric whose box chart across a bench's cells draws it too.
    pub metric: &'static str,
    /// The cell's box chart: its title, and per box its label and metric.
    pub boxes: (&'static str, &'static [(&'static str, &'static str)]),
    /// That chart's caption, given the limit as the plot prints it and
    /// what a box shows.
    pub caption: fn(&str, &str) -> String,
}

/// One table of a kind's own.
pub struct KindTable {
    /// Its name: `--table NAME`, the CSV `table` column, JSON's `name`.
    pub name: &'static str,
    /// What it shows, as `report --help` lists it under `--table`.
    pub help: &'static str,
    /// Whether a run gets it without `--table`.
    pub applies: fn(&StoredRun) -> bool,
    /// Its sheets; none when the run has nothing for it.
    pub build: fn(&StoredRun) -> Vec<Sheet>,
    /// Why `--table NAME` has nothing to show for the run.
    pub none: fn(&StoredRun) -> String,
}

/// A kind's rows of the condition table: the figures in place of the
/// period's, the counts after the schedule's, a verdict column, and the
/// notes under the table.
pub struct ConditionParts {
    /// The period figures (in place of min, max and deviation).
    pub figs: &'static [Fig],
    /// How many of the schedule's counts (releases, cycles, skipped,
    /// overruns) the rows show, from the first.
    pub schedule: usize,
    /// Counts after the schedule's.
    pub counts: &'static [Fig],
    /// The verdict column's header and machine names.
    pub verdict_col: (&'static str, &'static [&'static str]),
    /// The verdict cell of a row and the first reason a repetition gave
    /// when it did not pass.
    pub verdict: fn(&Group) -> (Cell, Option<String>),
    /// The word a row's reason is given after (`NO`).
    pub verdict_word: &'static str,
    /// The notes under the table, before the reasons.
    pub notes: &'static [&'static str],
}

/// The report parts of `kind`; [`ReportParts::NONE`] for a kind this
/// build does not register (a stored result of the test-only probe).
pub fn of(kind: ProbeKind) -> &'static ReportParts {
    super::REGISTRY
        .iter()
        .find(|r| r.kind == kind)
        .map_or(&ReportParts::NONE, |r| &r.report)
}

/// Every registered kind's own tables, in the registry's order.
pub fn kind_tables() -> impl Iterator<Item = &'static KindTable> {
    super::REGISTRY.iter().flat_map(|r| r.report.tables)
}
