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
//! * [`safe`](crate::render::safe) — the one escaping of control characters every renderer of
//!   text and Markdown applies to stored, user-provided text (names,
//!   command lines, a neighbour's stderr, notes), so that a report cannot
//!   rewrite the reader's terminal or forge a line; and HTML's escaping.
//!   Markdown adds its own on top (`tables::sheet::md_escape`): no inline
//!   HTML, link, code span or table cell comes from stored text.
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
//! * [`analyze`] — `jitterlab analyze FILE`: reads a POWERLINK capture
//!   through the core analysis and prints its figures (text or JSON).
//!
//! The design rules cited here are in `docs/design.md`.

pub mod against;
pub mod analyze;
pub mod chase;
pub mod check;
pub mod csv;
pub mod follow;
pub mod header;
pub mod histogram;
pub mod html;
pub mod junit;
pub mod monitor;
pub mod single;
pub mod stored;
pub mod tables;
pub mod text;
pub mod verdict;
