//! [Baumgartner POWERLINK]'s load table (Tables 2–3): the POWERLINK managing node's CPU
//! load per cycle time × network size, N/A where the cycle time was not
//! held, and each cell's ratio to the seed's Table 2.
//!
//! One table per configuration × scenario × deployment × mode (PollResponse
//! Chaining, how the managing node waits) whose `netcycle` cells form a
//! sweep: two cycle times or more, or two network sizes or more (when no
//! table of a run does, every one is shown, so `--table load` on a single
//! cell still answers). Rows are the cycle times, shortest first; columns
//! the network sizes, smallest first, each followed by its `vs seed`
//! column. A cell reads:
//!
//! * `18.3%` — held: the managing node threads' CPU time (their kernel
//!   `schedstat`) over wall time, one decimal (`detail.load`: `stack_ns ÷
//!   wall_ns`); a spread `18.1–18.6%` over repetitions, as in every table;
//! * `N/A (wire)` — the cycle's frames cannot fit on a 100 Mbit/s wire:
//!   nothing was measured (the bench skipped the cell) and a note under
//!   the table gives the figure, computed from the stored spec
//!   ([`NetcycleParams::wire_unfit`]);
//! * `N/A (late cycles: k)`, `N/A (missed: k)`, `N/A (left operational:
//!   k)` — not held (`detail.held`): `k` cycles ended after the next
//!   release, `k` PRes did not come within the response timeout, a CN left
//!   NMT_CS_OPERATIONAL `k` times (`detail.left_operational`), summed over
//!   the repetitions shown;
//! * the cell's status (`failed`, `skipped`, …) when it has no figures, and
//!   `-` where the sweep has no cell.
//!
//! `vs seed` is the load ÷ [Baumgartner POWERLINK] Table 2 figure for the same cell
//! ([`SEED_004_TABLE_2`]), as a factor with two decimals (`×1.35`: a ratio
//! of two percentages reads wrong as a third one); `-` where either side
//! has no figure, or the seed printed `< 1%` or `N/A`.
//!
//! Under the table: how load and "held" are defined, the response
//! timeout(s) the cells used (held depends on it), the allowances a spec
//! gave, each `N/A (wire)` figure, and which probes a cell merges when
//! several measured the same point ([Baumgartner POWERLINK]'s preset measures 500 µs × 3
//! CNs idle twice: in the sweep and as the SoC-jitter probe's idle row).
//!
//! For scripts (CSV, JSON) the same figures are one row per cell, not a
//! grid: a sheet of its own, named `load` too, whose columns the CSV
//! carries only when a run has the table — the CSV of every other run
//! reads byte for byte as before.
//!
//! The documents cited here are listed in `docs/design.md`.

use jitterlab_core::cell::StoredRun;
use jitterlab_core::netcycle::{NetcycleDetail, NetcycleParams, Wait};
use jitterlab_core::preset::{SeedLoad, SEED_004_TABLE_2};
use jitterlab_core::result::{ProbeKind, RunResult};
use serde_json::{json, Value};

use crate::render::number::{pct1_text, round_div, us1};
use crate::render::rows::{
    groups, row_notes, skipped_notes, spread_names, spread_of, Group, Spread, SCHEDULE_FIGS,
};
use crate::render::sheet::{Cell, Col, Sheet};

/// What the table knows of one cell (one group of repetitions).
struct LoadCell<'g, 'a> {
    group: &'g Group<'a>,
    cycle_ns: u64,
    cns: u8,
    chaining: bool,
    wait: Wait,
    response_timeout_ns: u64,
    wire_ns: u64,
    /// Why the frames cannot fit, when they cannot.
    wire_unfit: Option<String>,
    /// `(max_late_cycles, max_missed_pres)` the spec allowed.
    allowed: (u64, u64),
    /// The stored details of the results its figures come from.
    details: Vec<NetcycleDetail>,
}

/// The `netcycle` detail a result stored.
fn detail_of(r: &RunResult) -> Option<NetcycleDetail> {
    serde_json::from_value(r.detail.clone()?).ok()
}

/// The stack load of one result in tenths of a percent: `stack_ns ÷
/// wall_ns` of `detail.load`, rounded.
fn load_tenths(d: &NetcycleDetail) -> Option<i64> {
    let load = d.load.as_ref()?;
    let (stack, wall) = (load.stack_ns, load.wall_ns);
    (wall > 0).then(|| round_div(i128::from(stack) * 1_000, i128::from(wall)) as i64)
}

impl<'g, 'a> LoadCell<'g, 'a> {
    /// The cell of `g`: its point and mode from the stored spec's probe,
    /// else from what it stored; `None` when it is no `netcycle` cell or
    /// nothing says where it belongs.
    fn of(run: &StoredRun, g: &'g Group<'a>) -> Option<LoadCell<'g, 'a>> {
        let measured = g.measured();
        let details: Vec<NetcycleDetail> = measured
            .iter()
            .filter(|(r, _)| r.probe == ProbeKind::Netcycle)
            .filter_map(|(r, _)| detail_of(r))
            .collect();
        let spec = run
            .probes
            .iter()
            .find(|p| p.name == g.probe)
            .and_then(|p| Some((p.period_ns, p.params.get::<NetcycleParams>()?)));
        let cell = match spec {
            Some((cycle_ns, n)) => LoadCell {
                group: g,
                cycle_ns,
                cns: n.cns,
                chaining: n.chaining,
                wait: n.wait,
                response_timeout_ns: n.response_timeout_ns,
                wire_ns: n.wire_ns(),
                wire_unfit: n.wire_unfit(cycle_ns),
                allowed: (n.max_late_cycles, n.max_missed_pres),
                details,
            },
            None => {
                let (r, _) = measured.first()?;
                let d = details.first()?.clone();
                let n = NetcycleParams {
                    cns: d.cns,
                    chaining: d.chaining,
                    out_bytes: d.out_bytes,
                    in_bytes: d.in_bytes,
                    ..NetcycleParams::default()
                };
                LoadCell {
                    group: g,
                    cycle_ns: r.params.period_ns,
                    cns: d.cns,
                    chaining: d.chaining,
                    wait: d.wait,
                    response_timeout_ns: d.response_timeout_ns,
                    wire_ns: d.wire_ns,
                    wire_unfit: n.wire_unfit(r.params.period_ns),
                    allowed: (0, 0),
                    details,
                }
            }
        };
        Some(cell)
    }

    /// The load's spread over the results shown, tenths of a percent.
    fn load(&self) -> Option<Spread> {
        spread_of(self.details.iter().filter_map(load_tenths))
    }

    /// `(late cycles, missed PRes)` summed over the results shown, when
    /// one of them did not hold.
    fn not_held(&self) -> Option<(u64, u64)> {
        self.details.iter().any(|d| !d.held.held).then(|| {
            self.details
                .iter()
                .fold((0, 0), |(l, m), d| (l + d.late_cycles, m + d.missed_pres))
        })
    }
}

/// What one point of the grid says, over the cells measured there.
enum Verdict {
    /// Its frames cannot fit the wire (the notes say why).
    Wire,
    /// Not held: late cycles and missed PRes, and the load measured all
    /// the same (what the stack cost while it did not hold).
    NotHeld(u64, u64, u64, Option<Spread>),
    /// Held, with the load's spread when it was measured.
    Held(Option<Spread>),
    /// No figures: what stands in their place.
    Nothing(String),
}

fn verdict(cells: &[&LoadCell]) -> Verdict {
    if cells.iter().any(|c| c.wire_unfit.is_some()) {
        return Verdict::Wire;
    }
    let not_held: Vec<(u64, u64)> = cells.iter().filter_map(|c| c.not_held()).collect();
    if !not_held.is_empty() {
        let (late, missed, left) =
            cells
                .iter()
                .flat_map(|c| &c.details)
                .fold((0, 0, 0), |(l, m, o), d| {
                    (
                        l + d.late_cycles,
                        m + d.missed_pres,
                        o + d.left_operational.len() as u64,
                    )
                });
        let all = cells
            .iter()
            .flat_map(|c| c.details.iter().filter_map(load_tenths));
        return Verdict::NotHeld(late, missed, left, spread_of(all));
    }
    if cells.iter().any(|c| !c.details.is_empty()) {
        let all = cells
            .iter()
            .flat_map(|c| c.details.iter().filter_map(load_tenths));
        return Verdict::Held(spread_of(all));
    }
    Verdict::Nothing(cells[0].group.placeholder())
}

impl Verdict {
    /// The printed cell.
    fn text(&self, interrupted: bool) -> String {
        match self {
            Verdict::Wire => "N/A (wire)".into(),
            Verdict::NotHeld(late, missed, left, load) => {
                let na = na_text(*late, *missed, *left);
                match load {
                    // `N/A (late cycles: 3; load 12.3 %)`
                    Some(s) if na.ends_with(')') => {
                        format!("{}; load {})", &na[..na.len() - 1], pct1_text(*s))
                    }
                    Some(s) => format!("{na} (load {})", pct1_text(*s)),
                    None => na,
                }
            }
            Verdict::Held(Some(s)) => {
                format!("{}{}", pct1_text(*s), if interrupted { "*" } else { "" })
            }
            Verdict::Held(None) => "held".into(),
            Verdict::Nothing(status) => status.clone(),
        }
    }

    /// The machine column `na`: why not held, or `null`.
    fn na(&self) -> Value {
        match self {
            Verdict::Wire => json!("wire"),
            Verdict::NotHeld(late, missed, left, _) => {
                let why: Vec<&str> = [
                    (*late > 0, "late cycles"),
                    (*missed > 0, "missed"),
                    (*left > 0, "left operational"),
                ]
                .into_iter()
                .filter_map(|(on, w)| on.then_some(w))
                .collect();
                match why.is_empty() {
                    true => json!("late cycles"),
                    false => json!(why.join("+")),
                }
            }
            _ => Value::Null,
        }
    }
}

/// `N/A (late cycles: 3)`, `N/A (missed: 2)`, `N/A (left operational:
/// 1)`, several, or, for a run that was not held for another reason (no
/// cycle measured), `N/A`.
fn na_text(late: u64, missed: u64, left: u64) -> String {
    let why: Vec<String> = [
        (late, "late cycles"),
        (missed, "missed"),
        (left, "left operational"),
    ]
    .into_iter()
    .filter(|&(k, _)| k > 0)
    .map(|(k, w)| format!("{w}: {k}"))
    .collect();
    match why.is_empty() {
        true => "N/A".into(),
        false => format!("N/A ({})", why.join(", ")),
    }
}

/// A cycle time as [Baumgartner POWERLINK] prints it: `250 µs`, `1 ms`, `10 ms`.
fn cycle_text(ns: u64) -> String {
    if ns >= 1_000_000 && ns.is_multiple_of(1_000_000) {
        format!("{} ms", ns / 1_000_000)
    } else if ns.is_multiple_of(1_000) {
        format!("{} µs", ns / 1_000)
    } else {
        format!("{} µs", us1(i64::try_from(ns).unwrap_or(i64::MAX)))
    }
}

/// `1 CN`, `3 CNs`.
fn cns_text(n: u8) -> String {
    if n == 1 {
        "1 CN".into()
    } else {
        format!("{n} CNs")
    }
}

/// The load ÷ the seed's figure, in hundredths, end by end; `None` where
/// the seed has no percentage.
fn vs_seed(load: Spread, seed: Option<SeedLoad>) -> Option<Spread> {
    let Some(SeedLoad::Percent(p)) = seed else {
        return None;
    };
    let p = i128::from(p);
    let ratio = |tenths: i64| round_div(i128::from(tenths) * 10, p) as i64;
    Some(Spread {
        lo: ratio(load.lo),
        hi: ratio(load.hi),
    })
}

/// `×1.35`, `×0.98–1.02`.
fn factor_text(s: Spread) -> String {
    let f = |h: i64| format!("{}.{:02}", h / 100, h % 100);
    if s.lo == s.hi {
        format!("×{}", f(s.lo))
    } else {
        format!("×{}–{}", f(s.lo), f(s.hi))
    }
}

/// The note under every load table: what its figures are.
pub(crate) const LOAD_NOTE: &str = "load: the managing node threads' CPU time (their schedstat) ÷ wall time, in % of one CPU — Baumgartner and Schoenegger's \"load of all POWERLINK threads on a single core\"; vs seed: that ÷ Baumgartner and Schoenegger, Table 2 (High-End PC: a kernel-space stack with its own NIC driver), - where the seed has < 1% or N/A; N/A (late cycles: k): k cycles ended after the next cycle's release; N/A (missed: k): k PRes did not come within the response timeout (each N/A cell gives the load it measured all the same); N/A (wire): the cycle's frames cannot fit on a 100 Mbit/s wire, nothing was measured";

/// The note of a table whose managing node spins for its PRes.
pub(crate) const BUSY_POLL_NOTE: &str = "busy-poll: the managing node spins on its socket for each PRes, so its load reads as 100 % of the polling phase; compare it with a blocking run, not with the seed";

/// The columns of the one-row-per-cell sheet scripts read.
fn machine_cols() -> Vec<Col> {
    let mut cols = vec![
        Col::hidden(&["configuration", "scenario", "deployment", "probe"]),
        Col::hidden(&["reps", "completed"]),
        Col::hidden(&["status"]),
    ];
    for n in [
        "cycle_ns",
        "cns",
        "chaining",
        "wait",
        "response_timeout_ns",
        "wire_ns",
        "held",
        "na",
        "late_cycles",
        "missed_pres",
    ] {
        cols.push(Col::hidden(&[n]));
    }
    cols.push(Col::hidden(&["stack_load_pct_min", "stack_load_pct_max"]));
    cols.push(Col::hidden(&["seed_load"]));
    cols.push(Col::hidden(&["vs_seed_min", "vs_seed_max"]));
    // What the figures came from: the managing node's release schedule.
    for f in SCHEDULE_FIGS {
        let [a, b] = spread_names(f.id);
        cols.push(Col::hidden(&[&a, &b]));
    }
    cols
}

/// One cell's row for scripts.
fn machine_row(c: &LoadCell) -> Vec<Cell> {
    let g = c.group;
    let v = verdict(&[c]);
    let load = c.load();
    let seed = SEED_004_TABLE_2.get(c.cycle_ns, c.cns);
    let held = match &v {
        Verdict::Held(_) => json!(true),
        Verdict::NotHeld(..) => json!(false),
        _ => Value::Null,
    };
    let (late, missed) = match (&v, c.details.is_empty()) {
        (_, true) => (Value::Null, Value::Null),
        _ => {
            let (l, m) = c
                .details
                .iter()
                .fold((0, 0), |(l, m), d| (l + d.late_cycles, m + d.missed_pres));
            (json!(l), json!(m))
        }
    };
    let pct = |s: Option<Spread>| match s {
        Some(s) => vec![json!(s.lo as f64 / 10.0), json!(s.hi as f64 / 10.0)],
        None => vec![Value::Null, Value::Null],
    };
    let ratio = match v {
        Verdict::Held(Some(s)) => vs_seed(s, seed),
        _ => None,
    };
    let ratio_values = match ratio {
        Some(r) => vec![json!(r.lo as f64 / 100.0), json!(r.hi as f64 / 100.0)],
        None => vec![Value::Null, Value::Null],
    };
    let mut row = vec![
        Cell::hidden(g.key_values()),
        Cell::hidden(vec![json!(g.cells.len()), json!(g.measured().len())]),
        Cell::hidden(vec![json!(g.status())]),
    ];
    for value in [
        json!(c.cycle_ns),
        json!(c.cns),
        json!(c.chaining),
        json!(c.wait.name()),
        json!(c.response_timeout_ns),
        json!(c.wire_ns),
        held,
        v.na(),
        late,
        missed,
    ] {
        row.push(Cell::hidden(vec![value]));
    }
    row.push(Cell::hidden(pct(load)));
    row.push(Cell::hidden(vec![
        seed.map_or(Value::Null, |s| json!(s.text()))
    ]));
    row.push(Cell::hidden(ratio_values));
    for f in &SCHEDULE_FIGS {
        row.push(Cell::hidden(g.fig_cell(f).values));
    }
    row
}

/// The key of one table: configuration, scenario, deployment, chaining,
/// wait.
type TableKey<'a> = (&'a str, &'a str, &'a str, bool, Wait);

fn key_of<'a>(c: &LoadCell<'_, 'a>) -> TableKey<'a> {
    let g = c.group;
    (
        g.configuration,
        g.scenario,
        g.deployment,
        c.chaining,
        c.wait,
    )
}

/// True when the cells of one table form a sweep (2+ cycle times or 2+
/// network sizes).
fn is_sweep(cells: &[&LoadCell]) -> bool {
    let mut cycles: Vec<u64> = cells.iter().map(|c| c.cycle_ns).collect();
    let mut cns: Vec<u8> = cells.iter().map(|c| c.cns).collect();
    cycles.sort_unstable();
    cycles.dedup();
    cns.sort_unstable();
    cns.dedup();
    cycles.len() >= 2 || cns.len() >= 2
}

/// Every `netcycle` cell of the run that the table can place.
fn cells_of<'g, 'a>(run: &StoredRun, groups: &'g [Group<'a>]) -> Vec<LoadCell<'g, 'a>> {
    groups.iter().filter_map(|g| LoadCell::of(run, g)).collect()
}

/// The tables' keys in the run's order, each with its cells.
fn tables<'c, 'g, 'a>(
    cells: &'c [LoadCell<'g, 'a>],
) -> Vec<(TableKey<'a>, Vec<&'c LoadCell<'g, 'a>>)> {
    let mut out: Vec<(TableKey, Vec<&LoadCell>)> = Vec::new();
    for c in cells {
        let k = key_of(c);
        match out.iter_mut().find(|(x, _)| *x == k) {
            Some((_, v)) => v.push(c),
            None => out.push((k, vec![c])),
        }
    }
    out
}

/// True when the run has a sweep of `netcycle` cells: the load table is
/// then chosen by default.
pub(crate) fn any_sweep(run: &StoredRun) -> bool {
    let groups = groups(run);
    let cells = cells_of(run, &groups);
    tables(&cells).iter().any(|(_, v)| is_sweep(v))
}

/// The notes under one table.
fn table_notes(cells: &[&LoadCell], points: &[(u64, u8)]) -> Vec<String> {
    let mut notes = Vec::new();
    let shown: Vec<&Group> = cells.iter().map(|c| c.group).collect();
    row_notes(&shown, &mut notes);
    notes.push(LOAD_NOTE.into());
    let mut timeouts: Vec<u64> = cells.iter().map(|c| c.response_timeout_ns).collect();
    timeouts.sort_unstable();
    timeouts.dedup();
    let words: Vec<String> = timeouts.iter().map(|&t| cycle_text(t)).collect();
    let timeout = match words.as_slice() {
        [one] => format!("a response timeout of {one}"),
        _ => format!(
            "response timeouts of {} (each cell's in the CSV and JSON)",
            words.join(", ")
        ),
    };
    notes.push(format!(
        "held: no late cycle and no missed PRes over the whole run, with {timeout}; \"held\" depends on it: a longer timeout misses fewer PRes but lets a slow answer push the cycle late"
    ));
    let mut allowed: Vec<(u64, u64)> = cells
        .iter()
        .map(|c| c.allowed)
        .filter(|&a| a != (0, 0))
        .collect();
    allowed.sort_unstable();
    allowed.dedup();
    for (late, missed) in allowed {
        notes.push(format!(
            "held here allows {late} late cycles and {missed} missed PRes (the spec's max_late_cycles, max_missed_pres)"
        ));
    }
    if cells.iter().any(|c| c.wait == Wait::BusyPoll) {
        notes.push(BUSY_POLL_NOTE.into());
    }
    for &(cycle, n) in points {
        let here: Vec<&&LoadCell> = cells
            .iter()
            .filter(|c| (c.cycle_ns, c.cns) == (cycle, n))
            .collect();
        if let Some(why) = here.iter().find_map(|c| c.wire_unfit.as_ref()) {
            notes.push(format!(
                "N/A (wire) at {} × {}: {why}",
                cycle_text(cycle),
                cns_text(n)
            ));
        }
        if here.len() > 1 {
            let names: Vec<&str> = here.iter().map(|c| c.group.probe).collect();
            notes.push(format!(
                "{} × {}: the figures of probes {}",
                cycle_text(cycle),
                cns_text(n),
                names.join(" and ")
            ));
        }
    }
    notes
}

/// [Baumgartner POWERLINK] Tables 2–3: per configuration × scenario × deployment × mode
/// with a sweep, the grid people read and the rows scripts read. Empty
/// when the run has no `netcycle` cell.
pub(crate) fn load(run: &StoredRun) -> Vec<Sheet> {
    let groups = groups(run);
    let cells = cells_of(run, &groups);
    let all = tables(&cells);
    let sweeps = all.iter().any(|(_, v)| is_sweep(v));
    let mut sheets = Vec::new();
    for ((configuration, scenario, deployment, chaining, wait), mine) in all {
        if sweeps && !is_sweep(&mine) {
            continue;
        }
        let mut cycles: Vec<u64> = mine.iter().map(|c| c.cycle_ns).collect();
        cycles.sort_unstable();
        cycles.dedup();
        let mut cns: Vec<u8> = mine.iter().map(|c| c.cns).collect();
        cns.sort_unstable();
        cns.dedup();
        let mut cols = vec![Col {
            head: Some("cycle".into()),
            right: false,
            names: Vec::new(),
        }];
        for &n in &cns {
            for head in [cns_text(n), "vs seed".to_string()] {
                cols.push(Col {
                    head: Some(head),
                    right: true,
                    names: Vec::new(),
                });
            }
        }
        let mut rows = Vec::new();
        let mut points = Vec::new();
        for &cycle in &cycles {
            let mut row = vec![Cell::new(cycle_text(cycle), Vec::new())];
            for &n in &cns {
                let here: Vec<&LoadCell> = mine
                    .iter()
                    .copied()
                    .filter(|c| (c.cycle_ns, c.cns) == (cycle, n))
                    .collect();
                if here.is_empty() {
                    row.push(Cell::new("-", Vec::new()));
                    row.push(Cell::new("-", Vec::new()));
                    continue;
                }
                points.push((cycle, n));
                let v = verdict(&here);
                let interrupted = here.iter().any(|c| c.group.interrupted_figures());
                let ratio = match &v {
                    Verdict::Held(Some(s)) => vs_seed(*s, SEED_004_TABLE_2.get(cycle, n)),
                    _ => None,
                };
                row.push(Cell::new(v.text(interrupted), Vec::new()));
                row.push(Cell::new(ratio.map_or("-".into(), factor_text), Vec::new()));
            }
            rows.push(row);
        }
        let mode = match (chaining, wait) {
            (false, Wait::Blocking) => String::new(),
            (true, Wait::Blocking) => ", PollResponse Chaining".into(),
            (false, w) => format!(", {}", w.name()),
            (true, w) => format!(", PollResponse Chaining, {}", w.name()),
        };
        let title = format!(
            "Stack load (Baumgartner and Schoenegger, Tables 2–3) — configuration {configuration}, scenario {scenario}, {deployment}{mode}"
        );
        // A cell whose figures came from fewer cycles than its schedule
        // released says so under the grid (scripts: the schedule columns).
        let mut notes = table_notes(&mine, &points);
        let groups: Vec<&Group> = mine.iter().map(|c| c.group).collect();
        skipped_notes(&groups, &mut notes);
        sheets.push(Sheet {
            name: "load",
            title: title.clone(),
            cols,
            rows,
            notes,
        });
        let mut ordered = mine.clone();
        ordered.sort_by_key(|c| (c.cycle_ns, c.cns));
        sheets.push(Sheet {
            name: "load",
            title,
            cols: machine_cols(),
            rows: ordered.into_iter().map(machine_row).collect(),
            notes: table_notes(&mine, &points),
        });
    }
    sheets
}

#[cfg(test)]
mod tests;
