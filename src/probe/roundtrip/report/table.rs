//! [Red Hat controls]'s round-trip table: per roundtrip cell the screw-to-screw time
//! against its worst-case budget, the controller's share of it, and the
//! controller task's determinism — the seed's Figures 2, 3 and 4 in one
//! table, with the budget in the seed's shape under it.
//!
//! A row per configuration × scenario × deployment × probe (repetitions are
//! one row, as in every table; see the parent module), in the run's order of
//! configurations and scenarios, with the deployments of one configuration ×
//! scenario adjacent (host, then container: the seed's PLC against its
//! vPLC). Its figures:
//!
//! * **T1→T4** (`screw-to-screw`): min, median, p99 and max — the I/O
//!   simulator's input change to the I/O tick that applies the output
//!   computed from it.
//! * **over budget**: the T1→T4 samples beyond the budget and of how many
//!   round trips, from the stored verdict (`detail.budget`), summed over
//!   the repetitions whose figures the row shows: any sample beyond it is a
//!   failure, whichever repetition it came from.
//! * **T2→T3** (`controller`): median and max — the controller's receive
//!   stamp of the change to the publish of the output computed from it.
//! * **max |jitter|**: the controller task's largest periodic jitter, by
//!   magnitude (`max(|min|, |max|)` of `jitter`; Figure 2).
//! * **exec stddev**: the standard deviation of its execution time
//!   (`exec`; Figure 3).
//!
//! A configuration the machine could not run (the cache-partitioned one
//! without cache allocation) gets an `N/A` row for every scenario ×
//! deployment × probe that has round trips, and a footnote with the reason.
//!
//! Under the table, for each distinct budget of the cells shown (one for a
//! preset): the seed's two budget lines as the probe stored them
//! (`detail.budget_terms`, `detail.budget_formula`: `OPC UA + Network + … =
//! Worst-case`, `500 µs + 100 µs + … = 6.7 ms`) and the verdict over every
//! round trip of those cells: `held`, or `FAILED: N samples beyond` with
//! the cells they came from.
//!
//! The documents cited here are listed in `docs/design.md`.

use jitterlab_core::result::{ProbeKind, RunResult};
use jitterlab_core::roundtrip::BudgetVerdict;
use jitterlab_core::stats::MetricSummary;
use serde_json::{json, Value};

use crate::render::number::us1;
use crate::render::rows::{
    configuration_names, distinct, groups, key_cols, metric, reps_col, row_notes, scenario_names,
    skipped_notes, unavailable_rows, Fig, Group, Metrics, SCHEDULE_FIGS, SCHEDULE_NOTE,
};
use crate::render::sheet::{Cell, Col, Sheet};

fn s2s(m: &Metrics) -> Option<&MetricSummary> {
    metric(m, "screw-to-screw")
}
fn min_t1_t4(_: &RunResult, m: &Metrics) -> Option<i64> {
    s2s(m)?.min
}
fn p50_t1_t4(_: &RunResult, m: &Metrics) -> Option<i64> {
    s2s(m)?.p50
}
fn p99_t1_t4(_: &RunResult, m: &Metrics) -> Option<i64> {
    s2s(m)?.p99
}
fn max_t1_t4(_: &RunResult, m: &Metrics) -> Option<i64> {
    s2s(m)?.max
}
fn p50_t2_t3(_: &RunResult, m: &Metrics) -> Option<i64> {
    metric(m, "controller")?.p50
}
fn max_t2_t3(_: &RunResult, m: &Metrics) -> Option<i64> {
    metric(m, "controller")?.max
}
/// `max(|min|, |max|)` of the controller task's periodic jitter.
fn max_abs_jitter(_: &RunResult, m: &Metrics) -> Option<i64> {
    let j = metric(m, "jitter")?;
    Some(j.min?.saturating_abs().max(j.max?.saturating_abs()))
}
fn exec_stddev(_: &RunResult, m: &Metrics) -> Option<i64> {
    metric(m, "exec")?.stddev
}

/// T1→T4 min, median, p99, max.
const T1_T4: [Fig; 4] = [
    Fig::ns("t1_t4_min", "t1_t4_min_ns", "T1→T4 min", min_t1_t4),
    Fig::ns("t1_t4_p50", "t1_t4_p50_ns", "median", p50_t1_t4),
    Fig::ns("t1_t4_p99", "t1_t4_p99_ns", "p99", p99_t1_t4),
    Fig::ns("t1_t4_max", "t1_t4_max_ns", "max", max_t1_t4),
];
/// T2→T3 median and max, the controller task's jitter and execution time.
const CONTROLLER: [Fig; 4] = [
    Fig::ns("t2_t3_p50", "t2_t3_p50_ns", "T2→T3 median", p50_t2_t3),
    Fig::ns("t2_t3_max", "t2_t3_max_ns", "T2→T3 max", max_t2_t3),
    Fig::ns(
        "max_abs_jitter",
        "max_abs_jitter_ns",
        "max |jitter|",
        max_abs_jitter,
    ),
    Fig::ns("exec_stddev", "exec_stddev_ns", "exec stddev", exec_stddev),
];

/// The note under the table that says what its columns are.
pub(crate) const ROUNDTRIP_NOTE: &str = "T1→T4: the I/O simulator's input change to the I/O tick that applies the output computed from it (screw to screw); over budget: T1→T4 samples beyond the budget, of all round trips (summed over repetitions); T2→T3: the controller's receive stamp of the change to its publish of the output; max |jitter|: the controller task's largest periodic jitter by magnitude; exec stddev: the standard deviation of its execution time";

/// The stored verdict of a roundtrip result (`detail.budget`).
fn verdict(r: &RunResult) -> Option<BudgetVerdict> {
    serde_json::from_value(r.detail.as_ref()?.get("budget")?.clone()).ok()
}

/// A string the probe stored in its `detail`.
fn detail_text<'a>(r: &'a RunResult, key: &str) -> Option<&'a str> {
    r.detail.as_ref()?.get(key)?.as_str()
}

/// True when some cell of the run ran the roundtrip probe.
pub(crate) fn any_roundtrip(run: &jitterlab_core::cell::StoredRun) -> bool {
    groups(run)
        .iter()
        .any(|g| g.kind() == Some(ProbeKind::Roundtrip))
}

/// The table's columns.
pub(crate) fn columns() -> Vec<Col> {
    let mut cols = vec![
        key_cols("cell"),
        reps_col(),
        Col::hidden(&["status"]),
        Col::hidden(&["note"]),
        Col::hidden(&["budget_ns"]),
    ];
    let push = |cols: &mut Vec<Col>, f: &Fig| {
        let (a, b) = (format!("{}_min", f.id), format!("{}_max", f.id));
        cols.push(Col::right(f.head, &[&a, &b]));
    };
    for f in &T1_T4 {
        push(&mut cols, f);
    }
    cols.push(Col::right("over budget", &["over_budget", "round_trips"]));
    for f in &CONTROLLER {
        push(&mut cols, f);
    }
    for f in &SCHEDULE_FIGS {
        push(&mut cols, f);
    }
    cols
}

/// Samples beyond the budget and round trips of a row, summed over the
/// results its figures come from; `None` when none stored a verdict.
fn over_budget(g: &Group) -> Option<(u64, u64)> {
    g.measured()
        .into_iter()
        .filter_map(|(r, _)| verdict(r))
        .fold(None, |acc, v| {
            let (o, n) = acc.unwrap_or((0, 0));
            Some((o + v.over, n + v.samples))
        })
}

/// A budget as the seed writes its total: `6.7 ms` (whole µs from 1 ms
/// up), else µs with one decimal.
fn budget_text(ns: u64) -> String {
    if ns >= 1_000_000 && ns.is_multiple_of(1_000) {
        let us = ns / 1_000;
        let frac = format!("{:03}", us % 1_000);
        let frac = frac.trim_end_matches('0');
        if frac.is_empty() {
            format!("{} ms", us / 1_000)
        } else {
            format!("{}.{frac} ms", us / 1_000)
        }
    } else {
        format!("{} µs", us1(i64::try_from(ns).unwrap_or(i64::MAX)))
    }
}

/// `1 sample`, `3 samples`.
fn samples(n: u64) -> String {
    if n == 1 {
        "1 sample".into()
    } else {
        format!("{n} samples")
    }
}

/// One budget of the table's cells: the seed's two lines, its total, and
/// the verdict's counts per row.
struct BudgetGroup {
    terms: String,
    formula: String,
    budget_ns: u64,
    /// (row name, samples beyond, round trips).
    rows: Vec<(String, u64, u64)>,
}

/// The budget lines and verdicts under the table.
fn budget_notes(shown: &[&Group]) -> Vec<String> {
    let mut budgets: Vec<BudgetGroup> = Vec::new();
    for g in shown {
        for (r, _) in g.measured() {
            let Some(v) = verdict(r) else { continue };
            let terms = detail_text(r, "budget_terms").unwrap_or("").to_string();
            let formula = detail_text(r, "budget_formula").unwrap_or("").to_string();
            let i = match budgets.iter().position(|b| {
                (b.terms.as_str(), b.formula.as_str(), b.budget_ns)
                    == (&terms, &formula, v.budget_ns)
            }) {
                Some(i) => i,
                None => {
                    budgets.push(BudgetGroup {
                        terms,
                        formula,
                        budget_ns: v.budget_ns,
                        rows: Vec::new(),
                    });
                    budgets.len() - 1
                }
            };
            let rows = &mut budgets[i].rows;
            match rows.iter_mut().find(|(n, _, _)| *n == g.name()) {
                Some(row) => {
                    row.1 += v.over;
                    row.2 += v.samples;
                }
                None => rows.push((g.name(), v.over, v.samples)),
            }
        }
    }
    let several = budgets.len() > 1;
    let mut notes = Vec::new();
    for b in budgets {
        let names: Vec<&str> = b.rows.iter().map(|r| r.0.as_str()).collect();
        notes.push(if several {
            format!("worst-case round trip (Red Hat and Intel) of {}:", names.join(", "))
        } else {
            "worst-case round trip (Red Hat and Intel), the budget every T1→T4 sample is checked against:"
                .to_string()
        });
        notes.push(b.terms);
        notes.push(b.formula);
        let over: u64 = b.rows.iter().map(|r| r.1).sum();
        let total: u64 = b.rows.iter().map(|r| r.2).sum();
        let budget = budget_text(b.budget_ns);
        notes.push(if over == 0 {
            format!("verdict: held (none of {total} round trips beyond {budget})")
        } else {
            let which: Vec<String> = b
                .rows
                .iter()
                .filter(|r| r.1 > 0)
                .map(|r| format!("{} {}", r.0, r.1))
                .collect();
            format!(
                "verdict: FAILED: {} beyond {budget} (of {total} round trips; {})",
                samples(over),
                which.join(", ")
            )
        });
    }
    notes
}

/// [Red Hat controls]: one row per roundtrip cell, N/A rows for configurations the
/// machine could not run, the budget and the verdict under it. Empty when
/// no cell ran the roundtrip probe.
pub(crate) fn roundtrip(run: &jitterlab_core::cell::StoredRun) -> Vec<Sheet> {
    let mut rows_of: Vec<Group> = groups(run)
        .into_iter()
        .filter(|g| g.kind() == Some(ProbeKind::Roundtrip))
        .collect();
    if rows_of.is_empty() {
        return Vec::new();
    }
    // Host and container rows of one configuration × scenario × probe
    // adjacent: a stable sort keeps the deployments in the order they ran.
    let configs = configuration_names(run);
    let scenarios = scenario_names(run);
    let probes = distinct(&rows_of, |g| g.probe);
    let pos = |list: &[String], s: &str| list.iter().position(|x| x == s).unwrap_or(usize::MAX);
    rows_of.sort_by_key(|g| {
        (
            pos(&configs, g.configuration),
            pos(&scenarios, g.scenario),
            probes.iter().position(|p| *p == g.probe),
        )
    });
    let cols = columns();
    let keys = distinct(&rows_of, |g| (g.scenario, g.deployment, g.probe));
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    let mut shown: Vec<&Group> = Vec::new();
    for c in &configs {
        let mine: Vec<&Group> = rows_of.iter().filter(|g| g.configuration == c).collect();
        if mine.is_empty() {
            unavailable_rows(run, c, &keys, &cols, &mut rows, &mut notes);
            continue;
        }
        for g in mine {
            shown.push(g);
            let budget = g.measured().into_iter().find_map(|(r, _)| verdict(r));
            let mut row = vec![
                Cell::new(g.name(), g.key_values()),
                g.reps_cell(),
                g.status_cell(),
                Cell::hidden(vec![Value::Null]),
                Cell::hidden(vec![budget.map_or(Value::Null, |v| json!(v.budget_ns))]),
            ];
            for f in &T1_T4 {
                row.push(g.fig_cell(f));
            }
            row.push(match over_budget(g) {
                Some((over, total)) => {
                    let mark = if g.interrupted_figures() { "*" } else { "" };
                    Cell::new(
                        format!("{over} of {total}{mark}"),
                        vec![json!(over), json!(total)],
                    )
                }
                None => Cell::new(g.placeholder(), vec![Value::Null, Value::Null]),
            });
            for f in &CONTROLLER {
                row.push(g.fig_cell(f));
            }
            // The controller's release schedule: what its figures came from.
            for f in &SCHEDULE_FIGS {
                row.push(g.fig_cell(f));
            }
            rows.push(row);
        }
    }
    row_notes(&shown, &mut notes);
    notes.push(ROUNDTRIP_NOTE.into());
    notes.push(format!("the controller's schedule: {SCHEDULE_NOTE}"));
    skipped_notes(&shown, &mut notes);
    notes.extend(budget_notes(&shown));
    vec![Sheet {
        name: "roundtrip",
        title: "Round trip (Red Hat and Intel): screw to screw against the worst-case budget"
            .into(),
        cols,
        rows,
        notes,
    }]
}

#[cfg(test)]
mod tests;
