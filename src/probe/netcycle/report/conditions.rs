//! The `netcycle` side of the condition table (see `report::tables`):
//! both ends of the wire — the SoC period as the managing node sent the
//! SoCs (metric `period`: its transmit stamps where the driver gives them)
//! and as the controlled nodes received them (metric `rx-period`: the CN
//! emulator's kernel receive stamps), side by side and labelled `MN` and
//! `CN`, with a note saying what each is. The receive side's figures are
//! new columns (`rx_…`), which the CSV carries only when a run has them.
//! A row's overruns are its late cycles, shown under that name with its
//! cycles over T0, its missed PRes and whether its cycle time held
//! ([Baumgartner POWERLINK]'s question of each condition), with the reason
//! under the table when it did not.
//!
//! The documents cited here are listed in `docs/design.md`.

use jitterlab_core::netcycle::{NetcycleDetail, NodeRole};
use jitterlab_core::result::RunResult;
use serde_json::{json, Value};

use crate::probe::parts::ConditionParts;
use crate::render::rows::{metric, Fig, Group, Metrics, Unit, DEVIATION, MAX_PERIOD, MIN_PERIOD};
use crate::render::sheet::Cell;

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
    Fig::ns("rx_min_period", "rx_min_period_ns", "CN min cycle", rx_min),
    Fig::ns("rx_max_period", "rx_max_period_ns", "CN max cycle", rx_max),
    Fig::ns(
        "rx_deviation",
        "rx_deviation_ns",
        "CN deviation",
        rx_deviation,
    ),
];

/// The note under a `netcycle` table that says what its two sides are.
pub(crate) const NETCYCLE_NOTE: &str = "MN: the SoC-to-SoC period as the managing node sent the SoCs (its transmit stamps where the driver gives them); CN: as the controlled nodes received them (the CN emulator's kernel receive stamps; on a veth pair the receive stamp is taken in the sender's context, so it validates the pipeline rather than measures a wire); deviation: max |T_per − T0|";

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
pub(crate) const HELD_NOTE: &str = "late: cycles whose SoA went out after the next cycle's release (the overruns of the managing node's schedule); over T0: cycles whose last PRes within the response timeout, or SoA if later, came more than T0 after their SoC (jitterlab analyze's test); held: no late cycle and no missed PRes beyond what the spec allows, and no CN left operational — yes, NO, or NO in k of n repetitions";

/// The held cell of `g`: `yes` when every measured repetition held, `NO`
/// when none did, `NO in k of n` between, `-` when none was judged; and
/// the first reason a repetition gave for not holding.
fn held_cell(g: &Group) -> (Cell, Option<String>) {
    let verdicts: Vec<(bool, Vec<String>)> = g
        .measured()
        .into_iter()
        .filter_map(|(r, _)| detail_of(r))
        .filter(|d| d.role != NodeRole::Cn)
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

/// The condition table's `netcycle` rows.
pub(crate) const CONDITIONS: ConditionParts = ConditionParts {
    figs: &[
        MN_FIGS[0], MN_FIGS[1], MN_FIGS[2], CN_FIGS[0], CN_FIGS[1], CN_FIGS[2],
    ],
    schedule: 3,
    counts: &NETCYCLE_COUNTS,
    verdict_col: ("held", &["held", "held_repetitions"]),
    verdict: held_cell,
    verdict_word: "NO",
    notes: &[NETCYCLE_NOTE, HELD_NOTE],
};
