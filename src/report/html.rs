//! `jitterlab report --format html`: one self-contained page with plots.
//!
//! Users of cyclictest and jitterdebugger write their own scripts to plot a
//! histogram, a percentile curve and the timeline of maxima; this page is
//! those plots, from the database, in one file that opens offline and can be
//! attached to a ticket: inline SVG, an inline style sheet, no script, no
//! font and no URL of any kind.
//!
//! [`render`] is a pure function of the database: `(store, run ids,
//! options) → the page`. It reads, never writes, reads no clock (the page
//! carries no generation time), so the same database renders the same bytes
//! — and `report --follow` re-renders a run in progress by calling it again.
//!
//! * one run (or several, each its own section): see [`page`]'s doc;
//! * two runs: compared, run A solid and run B dashed on one plot;
//! * a monitor series (`report --monitor`): its 5-minute-maxima plot and
//!   its monitoring view ([`page`]'s `monitor`).
//!
//! The parts: [`data`] reads what each cell plots (and is the one place that
//! decides where a cell's 1 µs histogram comes from), [`plots`] draws with
//! `plotters` (SVG backend only), [`verdict`] says what a reader must know
//! first, [`page`] puts them together.
//!
//! Escaping: every text on the page goes through [`escape`]; stored text
//! (names, notes, a neighbour's stderr) first through
//! [`crate::output::shown`], as in every report. The five XML escapes are all
//! an HTML text or attribute value needs, and the page must stay well-formed
//! XML (see [`page`]), so this is written here rather than taken from a
//! crate whose output uses HTML-only entities.

mod data;
mod page;
mod plots;
#[cfg(test)]
mod tests;
mod verdict;

use anyhow::Result;

use crate::error::bad;
use crate::report::tables::TableOptions;
use crate::store::Store;

/// What to render besides the runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HtmlOptions {
    /// The tables' baseline, choice of tables, and whether each cell gets
    /// its explanations.
    pub tables: TableOptions,
    /// The most points a timeline has ([`jitterlab_core::plot`]).
    pub max_points: u64,
}

impl Default for HtmlOptions {
    fn default() -> Self {
        HtmlOptions {
            tables: TableOptions::default(),
            max_points: 1_000,
        }
    }
}

/// The page of a monitor series (`report --monitor --format html`): its
/// 5-minute-maxima plot, then `text`, its text report.
pub fn monitor(view: &crate::store::monitor::view::MonitorView, text: &str) -> Result<String> {
    page::monitor::page(view, text)
}

/// The page of the given runs: two are compared, one or more than two
/// each get a section. A run that is not in the database is bad input
/// (exit 2) naming it.
pub fn render(store: &Store, runs: &[i64], opts: &HtmlOptions) -> Result<String> {
    if runs.is_empty() {
        return Err(bad(
            "no run to report; name one (jitterlab runs lists them) or run a probe first",
        ));
    }
    let loaded = runs
        .iter()
        .map(|&id| store.load_run(id).map_err(|e| bad(format!("{e:#}"))))
        .collect::<Result<Vec<_>>>()?;
    match loaded.as_slice() {
        [a, b] => page::comparison(store, a, b, opts),
        all => page::runs(store, all, opts),
    }
}
