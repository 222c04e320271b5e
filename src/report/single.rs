//! What the report of a single `jitterlab run` (one cell) says in text:
//! the summary the run printed when it has ended, its figures so far while
//! it measures, or what is left of it when its process died. The text
//! report, the JSON report and the HTML page all start from it, so it sits
//! below each of them.

use anyhow::Result;
use jitterlab_core::cell::{CellStatus, StoredRun};
use jitterlab_core::result::ProbeKind;

use super::text::latency_or_dash;
use crate::output::shown;
use crate::store::{RunKind, RunRow, RunStatus, Store};

/// What the text report prints for a `jitterlab run` (one cell): exactly
/// what the run printed (its summary), its figures so far while it runs
/// ([`super::follow::running_run`]), or what is left of a run that did not
/// finish; `None` for a bench, whose text report is its tables.
pub fn single_run_text(store: &Store, run: &StoredRun) -> Result<Option<String>> {
    let single = RunKind::parse(&run.kind) == Some(RunKind::Run) && run.cells.len() == 1;
    if !single {
        return Ok(None);
    }
    let running = RunStatus::parse(&run.status) == Some(RunStatus::Running);
    Ok(Some(match (&run.cells[0].result, run.cells[0].status) {
        (Some(r), CellStatus::Completed | CellStatus::Interrupted) if !running => {
            super::text::summary(r)
        }
        _ if running => super::follow::running_run(
            run.id,
            &run.name,
            &run.started_at,
            &store.live_cells(run.id)?,
        ),
        _ => {
            let row = store.run_row(run.id)?.expect("load_run found the run");
            unfinished_text(&row)
        }
    }))
}

/// What `report` says of a run that has no stored result.
pub fn unfinished_text(r: &RunRow) -> String {
    format!(
        "run {} ({}, started {}) did not finish: its process ended before the result was stored (killed, or the machine lost power); status {}.\n\
         stored until then: {} window rows, {} cycles, largest {} {}.\n",
        r.id,
        shown(&r.name),
        shown(&r.started_at),
        shown(&r.status),
        r.windows,
        r.cycles,
        largest_what(&r.name),
        latency_or_dash(r.latency_max_ns)
    )
}

/// What [`RunRow::latency_max_ns`] is the largest of for a run of the probe
/// `name`: its first metric (the wake-up latency of the periodic probes,
/// a round trip's screw-to-screw time, a context switch's hand-over).
fn largest_what(name: &str) -> String {
    let first = ProbeKind::parse(name).and_then(|k| k.descriptor().metrics.first());
    match first.map(|m| m.name) {
        Some("latency") | None => "wake-up latency".into(),
        Some(m) => format!("{m} time"),
    }
}
