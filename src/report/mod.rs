//! Reporting: turning a finished measurement into text a person or a script
//! reads.
//!
//! Reporting never measures. Every exporter here takes something that is
//! already finished — a [`RunResult`](jitterlab_core::result::RunResult), a
//! [`WindowRow`](jitterlab_core::window::WindowRow) that the probe has pushed
//! out of its hot loop, a [`LatencyHistogram`](jitterlab_core::recorder::LatencyHistogram)
//! whose thread has stopped — and only formats it. Nothing in this module reads
//! a clock, touches `/sys` or `/proc`, or changes a scheduling setting, so a
//! report can be rendered again at any time from the stored result, on another
//! machine, and gives the same bytes (the design's "Data flow": measuring never
//! formats output, reporting never measures; hyperfine keeps its `export/`
//! apart from `benchmark/` for the same reason).
//!
//! The figures stay integer nanoseconds until the very last step, where each
//! exporter formats them for its reader (design rule 1):
//!
//! * [`text`] — the summary printed on stdout at the end of
//!   `jitterlab run cyclic|wakeup`: the set-up that decides how to read the
//!   figures, one statistics table per thread in microseconds with exactly
//!   nanosecond precision, the worst outliers, and the pass/fail limits.
//! * [`csv`] — a streaming writer of window rows (one line per thread and
//!   window, integer nanoseconds) for the timeline plot and spreadsheets.
//! * [`html`] — `jitterlab report --format html`: one self-contained page
//!   with the verdict, the tables and per cell its histogram, percentile
//!   curve and timeline (inline SVG drawn with `plotters`).
//! * [`histogram`] — cyclictest's `-h`/`-H` histogram text, byte for byte,
//!   so that plotting scripts written for cyclictest read our file unchanged.
//! * The toolkit the reports are drawn with is `crate::render`, below the
//!   probes: the table model and rows, number formatting, and HTML
//!   escaping (`render::safe`; stored text is printed through
//!   `crate::output::shown`, Markdown's own escaping on top is
//!   `render::sheet::md_escape`). What a kind prints beyond its metrics
//!   (its summary's block, its own tables) is in its probe folder and
//!   reaches the renderers here through its registration
//!   (`probe::parts::ReportParts`): nothing here names a kind's own code.
//! * [`single`] — what the report of one `jitterlab run` says: its summary,
//!   its figures so far, or what is left of it.
//! * [`stored`] — `jitterlab runs`, `report` and `import`: reading the
//!   database and choosing the renderer.
//! * [`check`] — the text table and the JSON document of `jitterlab
//!   check`'s findings.
//! * [`follow`] — `jitterlab report --follow`: the report of a run in
//!   progress rendered again at every window, and the live figures a
//!   report shows of a run still measuring.
//! * [`monitor`] — `jitterlab report --monitor`: the view of a monitor
//!   series (worst ever, of the week and day, the last hour's percentiles,
//!   segments, retention) as text, JSON or a page with the 5-minute-maxima
//!   plot.
//! * [`against`] — `jitterlab report RUN --against BASE --max-regression
//!   PCT`: a run against a stored baseline, p99 and max per cell and
//!   metric, exit 1 on a regression (for CI).
//! * [`header`] — the header every report of a run starts with (the
//!   machine, jitterlab, the spec and its hash, the preset's source
//!   document, start and duration), and the slot of the verdict under it.
//!
//! The design rules cited here are in `docs/design.md`.

pub mod against;
pub mod chase;
pub mod check;
pub mod csv;
pub mod follow;
pub mod header;
pub mod histogram;
pub mod html;
pub mod junit;
#[cfg(test)]
mod kinds_tests;
pub mod monitor;
pub mod single;
pub mod stored;
pub mod tables;
pub mod text;
pub mod verdict;
