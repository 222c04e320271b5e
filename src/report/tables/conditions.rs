//! [Baumgartner POWERLINK]'s SoC-jitter table (Tables 4–5): one table per configuration,
//! deployment and probe, a row per condition (scenario): min and max cycle
//! — the measured *period* `T_per` ([Baumgartner POWERLINK]'s "cycle", not the execution
//! time) — and the deviation `max |T_per − T0|` = `max(max_period − T0, T0
//! − min_period)` with `T0` the configured period.
//!
//! A kind whose rows say more (both ends of a wire, the counts that decide
//! whether its cycle time held) gives its side in its registration
//! ([`ConditionParts`]): its figures in place of the period's, the counts
//! after the schedule's, a verdict column, and the notes under the table.
//! Its columns the CSV carries only when a run has them.
//!
//! Every row says what its figures came from: the schedule's releases,
//! the cycles measured, the releases skipped and the overruns
//! ([`super::build::SCHEDULE_FIGS`]).
//!
//! A probe limited to some scenarios (a spec's `scenarios`) has rows for
//! those only, and one limited to a single scenario has no table here: it
//! compares no condition ([Baumgartner POWERLINK]'s load sweep, idle only, has the load
//! table instead).
//!
//! The documents cited here are listed in `docs/design.md`.

use jitterlab_core::cell::StoredRun;
use jitterlab_core::units::format_duration_exact;
use serde_json::{json, Value};

use super::build::{
    applies, distinct, empty_row, groups, key_cols, notes_of, reps_col, scenario_names,
    skipped_notes, Fig, Group, DEVIATION, MAX_PERIOD, MIN_PERIOD, SCHEDULE_FIGS, SCHEDULE_NOTE,
};
use super::sheet::{Cell, Col, Sheet};
use crate::probe::parts::ConditionParts;
use crate::probe::REGISTRY;

/// The figures of every probe's row.
const CONDITION_FIGS: [Fig; 3] = [MIN_PERIOD, MAX_PERIOD, DEVIATION];

/// The table's figures: the kind's own (see [`ConditionParts`]), else
/// the period's.
fn figs(part: Option<&ConditionParts>) -> &'static [Fig] {
    part.map_or(&CONDITION_FIGS, |p| p.figs)
}

/// The schedule's counts a row shows: all of them, or the first ones the
/// kind shows (its overruns may be a count of its own under another name).
fn schedule_figs(part: Option<&ConditionParts>) -> &'static [Fig] {
    &SCHEDULE_FIGS[..part.map_or(SCHEDULE_FIGS.len(), |p| p.schedule)]
}

/// The table's columns; with the kind's own for a kind that has them.
pub(super) fn condition_cols(part: Option<&ConditionParts>) -> Vec<Col> {
    let mut cols = vec![
        key_cols("scenario"),
        reps_col(),
        Col::hidden(&["status"]),
        Col::hidden(&["t0_ns"]),
    ];
    let counts = part.map_or(&[][..], |p| p.counts);
    for f in figs(part).iter().chain(schedule_figs(part)).chain(counts) {
        let (a, b) = (format!("{}_min", f.id), format!("{}_max", f.id));
        cols.push(Col::right(f.head, &[&a, &b]));
    }
    if let Some((head, names)) = part.map(|p| p.verdict_col) {
        cols.push(Col::right(head, names));
    }
    cols
}

/// The scenarios the probe called `probe` was limited to, as the run's
/// spec gave them; empty when it ran in every one (or the run kept no
/// spec).
fn scope_of<'a>(run: &'a StoredRun, probe: &str) -> &'a [String] {
    run.probes
        .iter()
        .find(|p| p.name == probe)
        .map_or(&[][..], |p| p.scope.scenarios.as_slice())
}

/// The condition parts of the kind the rows are (from their stored
/// results, else from the spec's probe of that name), if it has them.
fn parts_of(run: &StoredRun, members: &[&Group]) -> Option<&'static ConditionParts> {
    let spec_kind = run
        .probes
        .iter()
        .find(|p| p.name == members[0].probe)
        .map(|p| p.kind());
    REGISTRY.iter().find_map(|reg| {
        let ours =
            members.iter().any(|g| g.kind() == Some(reg.kind)) || spec_kind == Some(reg.kind);
        reg.report.conditions.filter(|_| ours)
    })
}

/// [Baumgartner POWERLINK] Tables 4–5: one table per (configuration, deployment, probe).
pub(super) fn conditions(run: &StoredRun) -> Vec<Sheet> {
    let groups = groups(run);
    let scenarios = scenario_names(run);
    let keys = distinct(&groups, |g| (g.configuration, g.deployment, g.probe));
    let mut sheets = Vec::new();
    for (configuration, deployment, probe) in keys {
        let members: Vec<&Group> = groups
            .iter()
            .filter(|g| {
                (g.configuration, g.deployment, g.probe) == (configuration, deployment, probe)
            })
            .collect();
        let scope = scope_of(run, probe);
        if !applies(&members, "period") || (scope.len() == 1 && scenarios.len() > 1) {
            continue;
        }
        let part = parts_of(run, &members);
        let cols = condition_cols(part);
        let mut rows = Vec::new();
        let mut shown: Vec<&Group> = Vec::new();
        let mut why_not: Vec<String> = Vec::new();
        let mut t0 = None;
        for s in &scenarios {
            if !scope.is_empty() && !scope.contains(s) {
                continue;
            }
            let Some(g) = members.iter().find(|g| g.scenario == s) else {
                rows.push(empty_row(
                    &cols,
                    [configuration, s, deployment, probe],
                    s,
                    "not run",
                    "not run",
                    None,
                ));
                continue;
            };
            shown.push(g);
            let row_t0 = g.measured().first().map(|(r, _)| r.params.period_ns);
            t0 = t0.or(row_t0);
            let mut row = vec![
                Cell::new(s.as_str(), g.key_values()),
                g.reps_cell(),
                g.status_cell(),
                Cell::hidden(vec![row_t0.map_or(Value::Null, |v| json!(v))]),
            ];
            for f in figs(part).iter().chain(schedule_figs(part)) {
                row.push(g.fig_cell(f));
            }
            if let Some(p) = part {
                for f in p.counts {
                    row.push(g.fig_cell(f));
                }
                let (cell, why) = (p.verdict)(g);
                row.push(cell);
                if let Some(why) = why {
                    why_not.push(format!("{} {s}: {why}", p.verdict_word));
                }
            }
            rows.push(row);
        }
        let t0_text = t0.map_or(String::new(), |t| {
            format!(" (T0 = {})", format_duration_exact(t))
        });
        let mut notes = notes_of(&shown);
        notes.push(SCHEDULE_NOTE.into());
        skipped_notes(&shown, &mut notes);
        if let Some(p) = part {
            notes.extend(p.notes.iter().map(|n| n.to_string()));
            notes.extend(why_not);
        }
        sheets.push(Sheet {
            name: "conditions",
            title: format!(
                "Conditions — configuration {configuration}, {deployment}, {probe}{t0_text}"
            ),
            cols,
            rows,
            notes,
        });
    }
    sheets
}
