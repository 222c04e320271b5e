//! What the plots of one stored cell are drawn from, read once per cell.
//!
//! A cell's plots show one metric: its probe's main latency (the one that
//! answers "how late?", [`ProbeKind::main_latency`]) or, for a probe
//! without one (the chase), its first metric. For that metric the page
//! needs its stored summary (threshold, exact min and max), its HDR
//! histograms (the percentile curve), its 1 µs histogram (see
//! [`fine_histograms`]), its window envelope (the timeline), and for a
//! round trip the budget the probe checked every sample against.

use anyhow::Result;
use jitterlab_core::cell::{StoredCell, StoredRun};
use jitterlab_core::plot::fine_histogram;
use jitterlab_core::probe::{MetricDef, MetricUnit};
use jitterlab_core::recorder::LatencyHistogram;
use jitterlab_core::result::{ProbeKind, RunResult};
use jitterlab_core::stats::{Histograms, MetricSummary};

use crate::store::{Envelope, Store};

/// The most 1 µs bins a histogram built from an HDR histogram gets (100 ms);
/// larger values count as overflows.
pub(super) const MAX_FINE_BINS: usize = 100_000;

/// A cell's 1 µs histogram and where it came from.
#[derive(Debug, Clone)]
pub(super) struct Fine {
    /// The counts.
    pub hist: LatencyHistogram,
    /// True when built from the HDR histogram (bins above 16 µs
    /// approximate); false when the probe kept it itself.
    pub approximate: bool,
}

/// Everything the plots of one cell need.
pub(super) struct CellData<'a> {
    /// The stored cell.
    pub cell: &'a StoredCell,
    /// Its id in the database.
    pub id: i64,
    /// The metric plotted, when the cell measured anything.
    pub metric: Option<&'static MetricDef>,
    /// That metric's summary (all threads combined when there are more).
    pub summary: Option<&'a MetricSummary>,
    /// Its HDR histograms.
    pub hdr: Option<Histograms>,
    /// Its 1 µs histogram (ns metrics only).
    pub fine: Option<Fine>,
    /// Its timeline.
    pub envelope: Option<Envelope>,
    /// The threshold its share over was counted against.
    pub threshold: Option<u64>,
    /// The round trip's worst-case budget.
    pub budget: Option<u64>,
    /// The window width, ns.
    pub window_ns: u64,
}

/// The summaries of a result's metrics: combined when there is more than
/// one thread, else the thread's.
pub(super) fn summaries(
    r: &RunResult,
) -> Option<&std::collections::BTreeMap<String, MetricSummary>> {
    r.combined
        .as_ref()
        .or(r.threads.first().map(|t| &t.metrics))
}

/// The metric a cell's plots show.
pub(super) fn plotted(kind: ProbeKind) -> Option<&'static MetricDef> {
    kind.main_latency()
        .and_then(|m| kind.metric(m))
        .or_else(|| kind.metrics().first())
}

/// The limit every plot of the cell draws, when its kind gives one (the
/// worst-case budget a round trip checked its samples against).
pub(super) fn budget(r: &RunResult) -> Option<u64> {
    (crate::probe::parts::of(r.probe).plot_limit?.of)(r)
}

/// Reads what every cell of `run` plots, in the order of `run.cells`.
pub(super) fn load<'a>(
    store: &Store,
    run: &'a StoredRun,
    max_points: u64,
) -> Result<Vec<CellData<'a>>> {
    let ids = store.cell_ids(run.id)?;
    // A cell still measuring has no result yet: its probe and window width
    // come from its stored plan, so its timeline can be drawn so far.
    let live = if run.cells.iter().any(|c| c.result.is_none()) {
        store.live_cells(run.id)?
    } else {
        Vec::new()
    };
    let planned = |i: usize| {
        live.iter()
            .find(|l| l.position == i + 1)
            .and_then(|l| l.plan.as_ref())
    };
    let mut cells = Vec::with_capacity(run.cells.len());
    for (i, (cell, &id)) in run.cells.iter().zip(&ids).enumerate() {
        let result = cell.result.as_ref();
        let plan = planned(i);
        let metric = result
            .map(|r| r.probe)
            .or(plan.map(|(k, _)| *k))
            .and_then(plotted);
        let summary = result
            .zip(metric)
            .and_then(|(r, m)| summaries(r)?.get(m.name));
        let (hdr, envelope) = match metric {
            Some(m) => (
                store.metric_histograms(id, m.name)?,
                Some(store.window_envelope(id, m.name, max_points)?),
            ),
            None => (None, None),
        };
        cells.push(CellData {
            cell,
            id,
            metric,
            summary,
            hdr,
            fine: None,
            envelope,
            threshold: summary.and_then(|s| s.threshold),
            budget: result.and_then(budget),
            window_ns: result
                .map(|r| r.params.window_ns)
                .or(plan.map(|(_, p)| p.window_ns))
                .unwrap_or(0),
        });
    }
    let fine = fine_histograms(store, run.id, &cells)?;
    for (c, f) in cells.iter_mut().zip(fine) {
        c.fine = f;
    }
    Ok(cells)
}

/// The 1 µs histogram of each cell's plotted metric, in the order of
/// `cells` — the one place that decides where it comes from. The probe's own
/// 1 µs histogram, once the store keeps it (`Store::load_histograms_1us`),
/// is exact and comes first; a cell stored without one (an older database)
/// gets one built from its HDR histogram ([`fine_histogram`]: exact up to
/// 16 µs, approximate above), marked so that the page says it.
pub(super) fn fine_histograms(
    store: &Store,
    run: i64,
    cells: &[CellData<'_>],
) -> Result<Vec<Option<Fine>>> {
    let stored = store.load_histograms_1us(run)?;
    Ok(cells
        .iter()
        .zip(stored.into_iter().chain(std::iter::repeat_with(Vec::new)))
        .map(|(c, kept)| {
            let m = c.metric?;
            // Every thread combined; a cell of one thread stores only its own.
            let own = kept
                .iter()
                .filter(|f| f.metric == m.name)
                .min_by_key(|f| f.thread.map_or(0, |t| u64::from(t) + 1));
            if let Some(f) = own.filter(|f| f.thread.is_none() || kept.len() == 1) {
                return Some(Fine {
                    hist: f.hist.clone(),
                    approximate: false,
                });
            }
            let hdr = c.hdr.as_ref().filter(|_| m.unit == MetricUnit::Ns)?;
            Some(Fine {
                hist: fine_histogram(hdr, MAX_FINE_BINS),
                approximate: true,
            })
        })
        .collect())
}
