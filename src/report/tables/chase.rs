//! [Red Hat caterpillar]'s chase table: one row per chase cell, in CPU (TSC) cycles —
//! cycles per chase (min, median, p99, max) and the sample jitter (median,
//! max), the median jitter as a percentage of the same scenario's baseline
//! row. It shares its rows ([`Group`]) and figures with the other tables
//! (`crate::render::rows`).
//!
//! The documents cited here are listed in `docs/design.md`.

use jitterlab_core::cell::StoredRun;
use serde_json::{json, Value};

use super::build::{
    configuration_names, distinct, groups, key_cols, pct1_values, reps_col, row_notes,
    spread_names, unavailable_rows, Fig, Group, MAX_CHASE, MAX_SAMPLE_JITTER, MIN_CHASE, P50_CHASE,
    P50_SAMPLE_JITTER, P99_CHASE, SAMPLES,
};
use super::sheet::{Cell, Col, Sheet};
use super::{pct1_text, ratio_spread};

const CHASE_FIGS: [Fig; 6] = [
    MIN_CHASE,
    P50_CHASE,
    P99_CHASE,
    MAX_CHASE,
    P50_SAMPLE_JITTER,
    MAX_SAMPLE_JITTER,
];
/// The chase figure the "jitter vs baseline" column compares.
const CHASE_VS: Fig = P50_SAMPLE_JITTER;

pub(super) fn chase_cols() -> Vec<Col> {
    let mut cols = vec![
        key_cols("cell"),
        reps_col(),
        Col::hidden(&["status"]),
        Col::hidden(&["note"]),
        Col::hidden(&["baseline"]),
    ];
    for f in CHASE_FIGS {
        let [a, b] = spread_names(f.id);
        cols.push(Col::right(f.head, &[&a, &b]));
    }
    let [a, b] = spread_names(&format!("{}_vs_baseline_pct", CHASE_VS.stem));
    cols.push(Col::right("jitter vs baseline", &[&a, &b]));
    let [a, b] = spread_names(SAMPLES.id);
    cols.push(Col::right(SAMPLES.head, &[&a, &b]));
    cols
}

/// The note under the chase table that names its unit.
pub(super) const CHASE_UNIT_NOTE: &str = "figures in CPU cycles (TSC): a chase is one timed walk of dependent loads; jitter = max − min of one sample's chases; jitter vs baseline = median jitter ÷ the baseline configuration's in the same scenario";

/// The note under the chase table that says what its `samples` counts.
pub(super) const CHASE_SAMPLES_NOTE: &str =
    "samples: the timed chases the chase figures come from (an event probe has no release schedule)";

/// [Red Hat caterpillar]: one row per chase cell — cycles per chase (min, median, p99,
/// max) and the sample jitter (median, max), the median jitter as a
/// percentage of the same scenario's baseline row. A configuration the
/// machine could not run gets an `N/A` row per (scenario, deployment,
/// probe) that has chase cells, and a footnote with the reason; one that
/// ran no chase for another reason has no row. Empty when no cell is a
/// chase.
pub(super) fn chase(run: &StoredRun, baseline: &str) -> Vec<Sheet> {
    let groups: Vec<Group> = groups(run).into_iter().filter(Group::is_chase).collect();
    if groups.is_empty() {
        return Vec::new();
    }
    let cols = chase_cols();
    let keys = distinct(&groups, |g| (g.scenario, g.deployment, g.probe));
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    let mut shown: Vec<&Group> = Vec::new();
    for c in &configuration_names(run) {
        let mine: Vec<&Group> = groups.iter().filter(|g| g.configuration == c).collect();
        if mine.is_empty() {
            unavailable_rows(run, c, &keys, &cols, &mut rows, &mut notes);
            continue;
        }
        for g in mine {
            shown.push(g);
            let mut row = vec![
                Cell::new(g.name(), g.key_values()),
                g.reps_cell(),
                g.status_cell(),
                Cell::hidden(vec![Value::Null]),
                Cell::hidden(vec![json!(baseline)]),
            ];
            for f in &CHASE_FIGS {
                row.push(g.fig_cell(f));
            }
            let s = g.spread(&CHASE_VS);
            let base = groups
                .iter()
                .find(|b| {
                    b.configuration == baseline
                        && (b.scenario, b.deployment, b.probe)
                            == (g.scenario, g.deployment, g.probe)
                })
                .and_then(|b| b.spread(&CHASE_VS));
            let ratio = s.zip(base).and_then(|(s, b)| ratio_spread(s, b));
            let text = match (s, ratio) {
                (None, _) => "-".to_string(),
                (Some(_), None) => "n/a".to_string(),
                (Some(_), Some(r)) => pct1_text(r),
            };
            row.push(Cell::new(text, pct1_values(ratio)));
            row.push(g.fig_cell(&SAMPLES));
            rows.push(row);
        }
    }
    row_notes(&shown, &mut notes);
    notes.push(CHASE_UNIT_NOTE.into());
    notes.push(CHASE_SAMPLES_NOTE.into());
    vec![Sheet {
        name: "chase",
        title: format!("Chase (baseline: {baseline})"),
        cols,
        rows,
        notes,
    }]
}

/// True when some cell of the run is a chase (its row belongs to the chase
/// table).
pub(super) fn any_chase(run: &StoredRun) -> bool {
    groups(run).iter().any(Group::is_chase)
}
