//! What the reports print of a `cyclic` or `wakeup` run beyond its
//! metrics, when it ran with `explain`: under each of its largest
//! latencies what delayed that cycle, in the words `observe` uses
//! ([`jitterlab_core::explain::Explanation::line`]). What could not be
//! explained is among the run's warnings. A run without it stores no
//! `detail` and gets nothing more.

use jitterlab_core::explain::periodic::ExplainDetail;
use jitterlab_core::result::RunResult;

use crate::probe::parts::ReportParts;

/// What the reports print of a periodic run beyond its metrics.
pub(crate) const PARTS: ReportParts = ReportParts {
    outlier_note: Some(outlier_note),
    ..ReportParts::NONE
};

/// A periodic result's detail, when it explained its cycles.
fn detail(r: &RunResult) -> Option<ExplainDetail> {
    serde_json::from_value(r.detail.clone()?).ok()
}

/// What delayed the cycle of a `latency` outlier on `cpu`, when it was
/// explained.
fn outlier_note(r: &RunResult, metric: &str, cpu: usize, cycle: u64) -> Option<String> {
    if metric != "latency" {
        return None;
    }
    Some(detail(r)?.explanation(cpu as u32, cycle)?.line())
}
