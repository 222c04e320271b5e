//! [Intel CODESYS] Table 10: one table per scenario, deployment and probe; a
//! row per configuration with its max and min periodic jitter and its max
//! and average execution time, each against the baseline configuration's
//! (see the parent module). Built from the table toolkit in
//! [`crate::render`].
//!
//! The documents cited here are listed in `docs/design.md`.

use jitterlab_core::cell::StoredRun;
use serde_json::{json, Value};

use super::build::{
    applies, configuration_names, distinct, empty_row, groups, key_cols, pct1_values, reps_col,
    row_notes, scenario_names, schedule_cols, skipped_notes, spread_names, Fig, Group, MAX_EXEC,
    MAX_JITTER, MEAN_EXEC, MIN_JITTER, SCHEDULE_FIGS, SCHEDULE_NOTE,
};
use super::sheet::{Cell, Col, Sheet};
use super::{pct1_text, ratio_spread};

const CONFIG_FIGS: [Fig; 4] = [MAX_JITTER, MIN_JITTER, MAX_EXEC, MEAN_EXEC];

/// The configuration table's columns; `vs` heads the ratio columns.
pub(super) fn configuration_cols() -> Vec<Col> {
    let mut cols = vec![
        key_cols("configuration"),
        reps_col(),
        Col::hidden(&["status"]),
        Col::hidden(&["note"]),
        Col::hidden(&["baseline"]),
    ];
    for f in CONFIG_FIGS {
        let [a, b] = spread_names(f.id);
        cols.push(Col::right(f.head, &[&a, &b]));
        let [c, d] = spread_names(&format!("{}_vs_baseline_pct", f.stem));
        cols.push(Col::right("vs baseline", &[&c, &d]));
    }
    schedule_cols(&mut cols);
    cols
}

/// [Intel CODESYS] Table 10: one table per (scenario, deployment, probe).
pub(super) fn configurations(run: &StoredRun, baseline: &str) -> Vec<Sheet> {
    let groups = groups(run);
    let configs = configuration_names(run);
    let scenarios = scenario_names(run);
    let mut keys = distinct(&groups, |g| (g.scenario, g.deployment, g.probe));
    let pos = |s: &str| scenarios.iter().position(|x| x == s);
    keys.sort_by_key(|k| pos(k.0));
    let mut sheets = Vec::new();
    for (scenario, deployment, probe) in keys {
        let members: Vec<&Group> = groups
            .iter()
            .filter(|g| (g.scenario, g.deployment, g.probe) == (scenario, deployment, probe))
            .collect();
        if !applies(&members, "exec") {
            continue;
        }
        let base = members.iter().find(|g| g.configuration == baseline);
        let cols = configuration_cols();
        let mut rows = Vec::new();
        let mut notes = Vec::new();
        let mut shown: Vec<&Group> = Vec::new();
        for c in &configs {
            if let Some(g) = members.iter().find(|g| g.configuration == c) {
                shown.push(g);
                let mut row = vec![
                    Cell::new(c.as_str(), g.key_values()),
                    g.reps_cell(),
                    g.status_cell(),
                    Cell::hidden(vec![Value::Null]),
                    Cell::hidden(vec![json!(baseline)]),
                ];
                for f in &CONFIG_FIGS {
                    let s = g.spread(f);
                    row.push(g.fig_cell(f));
                    let b = base.and_then(|b| b.spread(f));
                    let ratio = s.zip(b).and_then(|(s, b)| ratio_spread(s, b));
                    let text = match (s, ratio) {
                        (None, _) => "-".to_string(),
                        (Some(_), None) => "n/a".to_string(),
                        (Some(_), Some(r)) => pct1_text(r),
                    };
                    row.push(Cell::new(text, pct1_values(ratio)));
                }
                for f in &SCHEDULE_FIGS {
                    row.push(g.fig_cell(f));
                }
                rows.push(row);
            } else if let Some((_, reason)) = run.unavailable.iter().find(|(u, _)| u == c) {
                rows.push(empty_row(
                    &cols,
                    [c, scenario, deployment, probe],
                    c,
                    "unavailable",
                    "N/A",
                    Some(reason),
                ));
                notes.push(format!("N/A {c}: {reason}"));
            } else {
                rows.push(empty_row(
                    &cols,
                    [c, scenario, deployment, probe],
                    c,
                    "not run",
                    "not run",
                    None,
                ));
            }
        }
        row_notes(&shown, &mut notes);
        notes.push(SCHEDULE_NOTE.into());
        skipped_notes(&shown, &mut notes);
        sheets.push(Sheet {
            name: "configurations",
            title: format!(
                "Configurations — scenario {scenario}, {deployment}, {probe} (baseline: {baseline})"
            ),
            cols,
            rows,
            notes,
        });
    }
    sheets
}
