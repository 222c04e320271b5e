//! The `sleep` probe's part of the reports: one summary line saying how it
//! waited — its interval, its slack and whether it slept or spun — read
//! from the result's detail, so a stored run prints it too.

use jitterlab_core::result::{ProbeKind, RunResult};
use jitterlab_core::units::format_duration_exact;

use crate::probe::parts::ReportParts;

/// What the reports print of a sleep run beyond its metric.
pub(crate) const PARTS: ReportParts = ReportParts {
    summary: Some(sleep_line),
    ..ReportParts::NONE
};

/// `sleeps: 1ms + 50us of slack each, busy-waited`; none for a result
/// without the slack (stored before the probe had one).
pub fn sleep_line(r: &RunResult) -> Option<String> {
    if r.probe != ProbeKind::Sleep {
        return None;
    }
    let d = r.detail.as_ref()?;
    let interval = d["interval_ns"].as_u64()?;
    let slack = d["slack_ns"].as_u64()?;
    let how = match d["spin"].as_bool()? {
        true => "busy-waited",
        false => "slept",
    };
    Some(format!(
        "sleeps: {} + {} of slack each, {how}\n",
        format_duration_exact(interval),
        format_duration_exact(slack)
    ))
}
