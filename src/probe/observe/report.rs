//! What the reports print of an `observe` run beyond its metrics: under
//! the thread lines of its summary, the thread it observed and its T0
//! (the stored `detail`, `jitterlab_core::observe::detail::ObserveDetail`),
//! and under each of its largest latencies what delayed that cycle, when
//! the trace explained it.

use jitterlab_core::observe::detail::ObserveDetail;
use jitterlab_core::result::RunResult;

use crate::probe::parts::ReportParts;

/// What the reports print of an `observe` run beyond its metrics.
pub(crate) const PARTS: ReportParts = ReportParts {
    summary_head: Some(head),
    outlier_note: Some(outlier_note),
    ..ReportParts::NONE
};

/// An `observe` result's detail.
fn detail(r: &RunResult) -> Option<ObserveDetail> {
    serde_json::from_value(r.detail.clone()?).ok()
}

/// The lines under the thread lines: the observed thread, T0.
fn head(r: &RunResult) -> Vec<String> {
    detail(r).map_or_else(Vec::new, |d| d.lines())
}

/// What delayed the cycle of a `latency` outlier, when it was explained.
fn outlier_note(r: &RunResult, metric: &str, _cpu: usize, cycle: u64) -> Option<String> {
    if metric != "latency" {
        return None;
    }
    Some(detail(r)?.explanation(cycle)?.line())
}
