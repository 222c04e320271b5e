//! [Baumgartner POWERLINK]'s SoC-jitter table (Tables 4–5): one table per configuration,
//! deployment and probe, a row per condition (scenario): min and max cycle
//! — the measured *period* `T_per` ([Baumgartner POWERLINK]'s "cycle", not the execution
//! time) — and the deviation `max |T_per − T0|` = `max(max_period − T0, T0
//! − min_period)` with `T0` the configured period.
//!
//! For a `netcycle` probe (a POWERLINK managing node) both ends of the
//! wire: the SoC period as the managing node sent the SoCs (metric
//! `period`: its transmit stamps where the driver gives them) and as the
//! controlled nodes received them (metric `rx-period`: the CN emulator's
//! kernel receive stamps), side by side and labelled `MN` and `CN`, with a
//! note saying what each is. The receive side's figures are new columns
//! (`rx_…`), which the CSV carries only when a run has them.
//!
//! Every row says what its figures came from: the schedule's releases,
//! the cycles measured, the releases skipped and the overruns
//! ([`super::build::SCHEDULE_FIGS`]). A `netcycle` row adds its late
//! cycles, its cycles over T0, its missed PRes and whether its cycle time
//! held ([Baumgartner POWERLINK]'s question of each condition), with the reason under
//! the table when it did not.
//!
//! A probe limited to some scenarios (a spec's `scenarios`) has rows for
//! those only, and one limited to a single scenario has no table here: it
//! compares no condition ([Baumgartner POWERLINK]'s load sweep, idle only, has the load
//! table instead).
//!
//! The documents cited here are listed in `docs/design.md`.

use jitterlab_core::cell::StoredRun;
use jitterlab_core::result::{ProbeKind, RunResult};
use jitterlab_core::units::format_duration_exact;
use serde_json::{json, Value};

use jitterlab_core::netcycle::{NetcycleDetail, NetcycleParams};

use super::build::{
    applies, distinct, empty_row, groups, key_cols, metric, notes_of, reps_col, scenario_names,
    skipped_notes, Fig, Group, Metrics, Unit, DEVIATION, MAX_PERIOD, MIN_PERIOD, SCHEDULE_FIGS,
    SCHEDULE_NOTE,
};
use super::sheet::{Cell, Col, Sheet};

/// The figures of every probe's row.
const CONDITION_FIGS: [Fig; 3] = [MIN_PERIOD, MAX_PERIOD, DEVIATION];

fn rx_min(_: &RunResult, m: &Metrics) -> Option<i64> {
    metric(m, "rx-period")?.min
}
fn rx_max(_: &RunResult, m: &Metrics) -> Option<i64> {
    metric(m, "rx-period")?.max
}
/// `max |T_per − T0|` of the periods the CNs received.
fn rx_deviation(r: &RunResult, m: &Metrics) -> Option<i64> {
    let p = metric(m, "rx-period")?;
    let t0 = i64::try_from(r.params.period_ns).ok()?;
    Some((p.max? - t0).max(t0 - p.min?))
}

/// A figure of this table with its own header.
const fn fig(
    stem: &'static str,
    id: &'static str,
    head: &'static str,
    get: fn(&RunResult, &Metrics) -> Option<i64>,
) -> Fig {
    Fig {
        stem,
        id,
        head,
        long: head,
        unit: Unit::Ns,
        get,
    }
}

/// The managing node's side of a `netcycle` row: the figures every probe
/// has, labelled as the SoCs it sent.
const MN_FIGS: [Fig; 3] = [
    Fig {
        head: "MN min cycle",
        ..MIN_PERIOD
    },
    Fig {
        head: "MN max cycle",
        ..MAX_PERIOD
    },
    Fig {
        head: "MN deviation",
        ..DEVIATION
    },
];

/// The controlled nodes' side of a `netcycle` row: the SoCs they received.
const CN_FIGS: [Fig; 3] = [
    fig("rx_min_period", "rx_min_period_ns", "CN min cycle", rx_min),
    fig("rx_max_period", "rx_max_period_ns", "CN max cycle", rx_max),
    fig(
        "rx_deviation",
        "rx_deviation_ns",
        "CN deviation",
        rx_deviation,
    ),
];

/// The note under a `netcycle` table that says what its two sides are.
pub(super) const NETCYCLE_NOTE: &str = "MN: the SoC-to-SoC period as the managing node sent the SoCs (its transmit stamps where the driver gives them); CN: as the controlled nodes received them (the CN emulator's kernel receive stamps; on a veth pair the receive stamp is taken in the sender's context, so it validates the pipeline rather than measures a wire); deviation: max |T_per − T0|";

/// The table's figures: the managing node's and the controlled nodes'
/// for a `netcycle` probe, else the period's.
fn figs(netcycle: bool) -> Vec<Fig> {
    if netcycle {
        MN_FIGS.iter().chain(&CN_FIGS).copied().collect()
    } else {
        CONDITION_FIGS.to_vec()
    }
}

/// The table's columns; with the CN side for a `netcycle` probe.
pub(super) fn condition_cols(netcycle: bool) -> Vec<Col> {
    let mut cols = vec![
        key_cols("scenario"),
        reps_col(),
        Col::hidden(&["status"]),
        Col::hidden(&["t0_ns"]),
    ];
    for f in figs(netcycle) {
        let (a, b) = (format!("{}_min", f.id), format!("{}_max", f.id));
        cols.push(Col::right(f.head, &[&a, &b]));
    }
    for f in schedule_figs(netcycle) {
        let (a, b) = (format!("{}_min", f.id), format!("{}_max", f.id));
        cols.push(Col::right(f.head, &[&a, &b]));
    }
    if netcycle {
        for f in NETCYCLE_COUNTS {
            let (a, b) = (format!("{}_min", f.id), format!("{}_max", f.id));
            cols.push(Col::right(f.head, &[&a, &b]));
        }
        cols.push(Col::right("held", &["held", "held_repetitions"]));
    }
    cols
}

/// The schedule's counts a row shows: a `netcycle` row's overruns are
/// its late cycles, shown under that name with the other counts of its
/// verdict.
fn schedule_figs(netcycle: bool) -> &'static [Fig] {
    match netcycle {
        true => &SCHEDULE_FIGS[..3],
        false => &SCHEDULE_FIGS,
    }
}

/// The `netcycle` detail a result stored.
fn detail_of(r: &RunResult) -> Option<NetcycleDetail> {
    serde_json::from_value(r.detail.clone()?).ok()
}
fn late_cycles(r: &RunResult, _: &Metrics) -> Option<i64> {
    i64::try_from(detail_of(r)?.late_cycles).ok()
}
fn over_t0_cycles(r: &RunResult, _: &Metrics) -> Option<i64> {
    i64::try_from(detail_of(r)?.over_t0_cycles?).ok()
}
fn missed_pres(r: &RunResult, _: &Metrics) -> Option<i64> {
    i64::try_from(detail_of(r)?.missed_pres).ok()
}

/// A count of a `netcycle` row.
const fn count(
    stem: &'static str,
    head: &'static str,
    get: fn(&RunResult, &Metrics) -> Option<i64>,
) -> Fig {
    Fig {
        stem,
        id: stem,
        head,
        long: head,
        unit: Unit::Count,
        get,
    }
}

/// What decides whether a `netcycle` row's cycle time held.
const NETCYCLE_COUNTS: [Fig; 3] = [
    count("late_cycles", "late", late_cycles),
    count("over_t0_cycles", "over T0", over_t0_cycles),
    count("missed_pres", "missed PRes", missed_pres),
];

/// The note under a `netcycle` table on its counts and its verdict.
pub(super) const HELD_NOTE: &str = "late: cycles whose SoA went out after the next cycle's release (the overruns of the managing node's schedule); over T0: cycles whose last PRes within the response timeout, or SoA if later, came more than T0 after their SoC (jitterlab analyze's test); held: no late cycle and no missed PRes beyond what the spec allows, and no CN left operational — yes, NO, or NO in k of n repetitions";

/// The held cell of `g`: `yes` when every measured repetition held, `NO`
/// when none did, `NO in k of n` between, `-` when none was judged; and
/// the first reason a repetition gave for not holding.
fn held_cell(g: &Group) -> (Cell, Option<String>) {
    let verdicts: Vec<(bool, Vec<String>)> = g
        .measured()
        .into_iter()
        .filter_map(|(r, _)| detail_of(r))
        .filter(|d| d.role != jitterlab_core::netcycle::NodeRole::Cn)
        .map(|d| (d.held.held, d.held.reasons))
        .collect();
    let n = verdicts.len();
    let not = verdicts.iter().filter(|(h, _)| !h).count();
    let text = match (n, not) {
        (0, _) => g.placeholder(),
        (_, 0) => "yes".into(),
        (n, k) if k == n => "NO".into(),
        (n, k) => format!("NO in {k} of {n}"),
    };
    let why = verdicts
        .into_iter()
        .find(|(h, _)| !h)
        .map(|(_, reasons)| reasons.join("; "));
    let value = match (n, not) {
        (0, _) => Value::Null,
        (_, k) => json!(k == 0),
    };
    (Cell::new(text, vec![value, json!(n)]), why)
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

/// True when the rows are a `netcycle` probe's.
fn is_netcycle(run: &StoredRun, members: &[&Group]) -> bool {
    members
        .iter()
        .any(|g| g.kind() == Some(ProbeKind::Netcycle))
        || run
            .probes
            .iter()
            .any(|p| p.name == members[0].probe && p.params.get::<NetcycleParams>().is_some())
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
        let netcycle = is_netcycle(run, &members);
        let cols = condition_cols(netcycle);
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
            for f in &figs(netcycle) {
                row.push(g.fig_cell(f));
            }
            for f in schedule_figs(netcycle) {
                row.push(g.fig_cell(f));
            }
            if netcycle {
                for f in &NETCYCLE_COUNTS {
                    row.push(g.fig_cell(f));
                }
                let (cell, why) = held_cell(g);
                row.push(cell);
                if let Some(why) = why {
                    why_not.push(format!("NO {s}: {why}"));
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
        if netcycle {
            notes.push(NETCYCLE_NOTE.into());
            notes.push(HELD_NOTE.into());
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
