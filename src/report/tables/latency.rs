//! [Xu EPICS]'s latency table: one row per cell and latency it measured,
//! with its min, median and max and the share of samples over the run's
//! threshold (see the parent module). Built from the table toolkit in
//! [`crate::render`].
//!
//! The documents cited here are listed in `docs/design.md`.

use jitterlab_core::cell::StoredRun;
use jitterlab_core::probe::MetricUnit;
use jitterlab_core::result::ProbeKind;
use jitterlab_core::stats::MetricSummary;
use serde_json::{json, Value};

use super::build::{
    groups, key_cols, metric, notes_of, reps_col, skipped_notes, spread_names, spread_of, Fig,
    Group, Unit, MAX_LATENCY, MIN_LATENCY, OVER_THRESHOLD, P50_LATENCY, PERIODIC_SCHEDULE_FIGS,
    SAMPLES, SAMPLES_NOTE, SCHEDULE_NOTE,
};
use super::sheet::{Cell, Col, Sheet};
use super::threshold_text;
use crate::render::rows::over_threshold_share;

const LATENCY_FIGS: [Fig; 3] = [MIN_LATENCY, P50_LATENCY, MAX_LATENCY];

/// The latency table's columns; the `latency` column (which metric a row
/// is) is printed only when `show_metric`, else it is for scripts only;
/// so are the schedule's counts unless `show_schedule` (some row is a
/// periodic probe) and the samples unless `show_samples` (some row is an
/// event probe).
pub(super) fn latency_cols(
    over_head: &str,
    show_metric: bool,
    show_schedule: bool,
    show_samples: bool,
) -> Vec<Col> {
    let mut cols = vec![
        key_cols("cell"),
        if show_metric {
            Col::left("latency", &["metric"])
        } else {
            Col::hidden(&["metric"])
        },
        reps_col(),
        Col::hidden(&["status"]),
        Col::hidden(&["threshold_ns"]),
    ];
    for f in LATENCY_FIGS {
        let [a, b] = spread_names(f.id);
        cols.push(Col::right(f.head, &[&a, &b]));
    }
    let [a, b] = spread_names(OVER_THRESHOLD.id);
    cols.push(Col::right(over_head, &[&a, &b]));
    let col = |shown: bool, f: &Fig| {
        let [a, b] = spread_names(f.id);
        if shown {
            Col::right(f.head, &[&a, &b])
        } else {
            Col::hidden(&[&a, &b])
        }
    };
    for f in &PERIODIC_SCHEDULE_FIGS {
        cols.push(col(show_schedule, f));
    }
    cols.push(col(show_samples, &SAMPLES));
    cols
}

/// [Xu EPICS]: one row per cell.
pub(super) fn latency(run: &StoredRun) -> Vec<Sheet> {
    // A chase measures CPU cycles, not a latency: it has no row here (see
    // `chase`), and a run of chases only has no latency table at all.
    let groups: Vec<Group> = groups(run).into_iter().filter(|g| !g.is_chase()).collect();
    if groups.is_empty() {
        return Vec::new();
    }
    // One row per latency a cell measured ([Xu EPICS] has a table per
    // latency: interrupt, context switch, response, …).
    let rows_of: Vec<(&Group, Option<&'static str>)> = groups
        .iter()
        .flat_map(|g| latency_metrics(g).into_iter().map(move |m| (g, m)))
        .collect();
    let row_threshold = |g: &Group, name: Option<&str>| {
        g.measured()
            .first()
            .and_then(|(_, m)| m.get(name?)?.threshold)
    };
    // The periodic probes' one latency needs no name; every other does.
    let periodic = ProbeKind::Cyclic.main_latency();
    let show_metric = rows_of.iter().any(|(_, m)| *m != periodic);
    let mut known: Vec<u64> = Vec::new();
    for &(g, name) in &rows_of {
        if let Some(t) = row_threshold(g, name) {
            if !known.contains(&t) {
                known.push(t);
            }
        }
    }
    let common = match known.as_slice() {
        [one] => Some(*one),
        _ => None,
    };
    let head = match common {
        Some(t) => format!("% > {}", threshold_text(t)),
        None => "% over threshold".to_string(),
    };
    // Periodic probes' rows say what their figures came from (releases,
    // cycles, skipped, overruns), event probes' their samples.
    let periodic = |g: &Group| g.kind().is_some_and(|k| k.descriptor().periodic);
    let show_schedule = rows_of.iter().any(|(g, _)| periodic(g));
    let show_samples = rows_of.iter().any(|(g, _)| !periodic(g));
    let mut rows = Vec::new();
    let mut shown: Vec<&Group> = Vec::new();
    for &(g, name) in &rows_of {
        shown.push(g);
        let thr = row_threshold(g, name);
        let mut row = vec![
            Cell::new(g.name(), g.key_values()),
            if show_metric {
                Cell::new(name.unwrap_or("-"), vec![json!(name)])
            } else {
                Cell::hidden(vec![json!(name)])
            },
            g.reps_cell(),
            g.status_cell(),
            Cell::hidden(vec![thr.map_or(Value::Null, |v| json!(v))]),
        ];
        let pick = |f: fn(&MetricSummary) -> Option<i64>| {
            spread_of(
                g.measured()
                    .into_iter()
                    .filter_map(|(_, m)| metric(m, name?).and_then(f)),
            )
        };
        row.push(g.spread_cell(Unit::Ns, pick(|s| s.min)));
        row.push(g.spread_cell(Unit::Ns, pick(|s| s.p50)));
        row.push(g.spread_cell(Unit::Ns, pick(|s| s.max)));
        let over_spread = pick(over_threshold_share);
        let mut over = g.spread_cell(Unit::Pct4, over_spread);
        if over_spread.is_some() && common.is_none() {
            if let Some(t) = thr {
                over.text = format!("{} (> {})", over.text, threshold_text(t));
            }
        }
        row.push(over);
        let shown_if = |shown: bool, c: Cell| if shown { c } else { Cell::hidden(c.values) };
        for f in &PERIODIC_SCHEDULE_FIGS {
            row.push(shown_if(show_schedule, g.fig_cell(f)));
        }
        // The samples of this row's latency (a probe measures several).
        let samples = g.spread_cell(Unit::Count, pick(|s| i64::try_from(s.count).ok()));
        row.push(shown_if(show_samples, samples));
        rows.push(row);
    }
    let mut notes = notes_of(&shown);
    if show_schedule {
        notes.push(SCHEDULE_NOTE.into());
        skipped_notes(&shown, &mut notes);
    }
    if show_samples {
        notes.push(SAMPLES_NOTE.into());
    }
    vec![Sheet {
        name: "latency",
        title: "Latency".into(),
        cols: latency_cols(&head, show_metric, show_schedule, show_samples),
        rows,
        notes,
    }]
}

/// The latencies a group has rows for in the latency table: every
/// unsigned, thresholded nanosecond metric of its probe kind that some
/// repetition measured (`irq` and `thread` of timerlat; `wakeup`,
/// `response` and `rx-to-thread` of a UDP response probe), in the kind's
/// order; else its main latency alone, so a skipped or failed cell still
/// has its row; `None` when not even the kind is known.
fn latency_metrics(g: &Group) -> Vec<Option<&'static str>> {
    let Some(kind) = g.kind() else {
        return vec![None];
    };
    let measured = g.measured();
    let names: Vec<Option<&'static str>> = kind
        .metrics()
        .iter()
        .filter(|d| d.unit == MetricUnit::Ns && d.thresholded && !d.signed)
        .filter(|d| measured.iter().any(|(_, m)| metric(m, d.name).is_some()))
        .map(|d| Some(d.name))
        .collect();
    if names.is_empty() {
        vec![kind.main_latency()]
    } else {
        names
    }
}
