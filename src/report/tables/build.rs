//! From stored cells to the tables of [Intel CODESYS], [Red Hat caterpillar] and [Xu EPICS] (the
//! conditions, round-trip and load tables have modules of their own): grouping repetitions into rows,
//! picking each figure from a cell's summaries, and laying the rows out.
//!
//! A cell's per-metric summaries are in `result.combined` when the probe ran
//! more than one thread, else in `result.threads[0].metrics`. A metric with no
//! sample counts as missing (`-`), never as 0.
//!
//! A row's probe kind ([`Group::kind`]) comes from its stored results, else
//! from its probe name when that names a kind (a spec's probe name defaults
//! to its kind): a cell that failed before it stored anything still lands in
//! the table of its kind. The chase measures CPU cycles, not a latency, so its
//! rows go to the chase table and never to the latency table.
//!
//! The documents cited here are listed in `docs/design.md`.

use std::collections::BTreeMap;

use jitterlab_core::cell::{CellStatus, StoredCell, StoredRun};
use jitterlab_core::probe::MetricUnit;
use jitterlab_core::result::ProbeKind;
use jitterlab_core::result::RunResult;
use jitterlab_core::stats::MetricSummary;
use serde_json::{json, Value};

use super::sheet::{Cell, Col, Sheet};
use super::{
    cycles_text, pct1_text, pct4_text, ratio_spread, round_div, threshold_text, time_text,
};

/// Summaries by metric name.
pub(super) type Metrics = BTreeMap<String, MetricSummary>;

/// The smallest and largest value of a figure over a row's repetitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Spread {
    /// Smallest.
    pub lo: i64,
    /// Largest.
    pub hi: i64,
}

/// The result and summaries of a cell, when it has them.
pub(super) fn figures_of(c: &StoredCell) -> Option<(&RunResult, &Metrics)> {
    let r = c.result.as_ref()?;
    let m = r
        .combined
        .as_ref()
        .or_else(|| r.threads.first().map(|t| &t.metrics))?;
    Some((r, m))
}

pub(super) fn metric<'a>(m: &'a Metrics, name: &str) -> Option<&'a MetricSummary> {
    m.get(name).filter(|s| s.count > 0)
}

/// The unit of a figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Unit {
    /// Nanoseconds.
    Ns,
    /// Ten-thousandths of a percent (share of samples over the threshold).
    Pct4,
    /// CPU (TSC) cycles: the chase.
    Cycles,
    /// A count (releases, cycles, overruns): a plain integer.
    Count,
}

/// One figure of a cell.
#[derive(Clone, Copy)]
pub(super) struct Fig {
    /// Machine name without unit (`max_jitter`).
    pub stem: &'static str,
    /// Machine name (`max_jitter_ns`).
    pub id: &'static str,
    /// Printed header in its table.
    pub head: &'static str,
    /// Printed name where figures of every table meet (comparison).
    pub long: &'static str,
    /// Unit.
    pub unit: Unit,
    /// Reads it from a cell.
    pub get: fn(&RunResult, &Metrics) -> Option<i64>,
}

fn max_jitter(_: &RunResult, m: &Metrics) -> Option<i64> {
    metric(m, "jitter")?.max
}
fn min_jitter(_: &RunResult, m: &Metrics) -> Option<i64> {
    metric(m, "jitter")?.min
}
fn max_exec(_: &RunResult, m: &Metrics) -> Option<i64> {
    metric(m, "exec")?.max
}
fn mean_exec(_: &RunResult, m: &Metrics) -> Option<i64> {
    metric(m, "exec")?.mean
}
fn min_period(_: &RunResult, m: &Metrics) -> Option<i64> {
    metric(m, "period")?.min
}
fn max_period(_: &RunResult, m: &Metrics) -> Option<i64> {
    metric(m, "period")?.max
}
/// `max |T_per − T0|` = `max(max_period − T0, T0 − min_period)`.
fn deviation(r: &RunResult, m: &Metrics) -> Option<i64> {
    let p = metric(m, "period")?;
    let t0 = i64::try_from(r.params.period_ns).ok()?;
    Some((p.max? - t0).max(t0 - p.min?))
}
/// The latency [Xu EPICS]'s table reports for the cell's probe.
fn lat<'a>(r: &RunResult, m: &'a Metrics) -> Option<&'a MetricSummary> {
    metric(m, r.probe.main_latency()?)
}
fn min_latency(r: &RunResult, m: &Metrics) -> Option<i64> {
    lat(r, m)?.min
}
fn p50_latency(r: &RunResult, m: &Metrics) -> Option<i64> {
    lat(r, m)?.p50
}
fn max_latency(r: &RunResult, m: &Metrics) -> Option<i64> {
    lat(r, m)?.max
}
/// The main latency's share over the threshold (see
/// [`over_threshold_share`]).
fn over_threshold(r: &RunResult, m: &Metrics) -> Option<i64> {
    over_threshold_share(lat(r, m)?)
}
/// The latency threshold a cell compared its samples with.
pub(super) fn threshold_of(m: &Metrics) -> Option<u64> {
    ProbeKind::ALL
        .iter()
        .filter_map(|k| k.main_latency())
        .find_map(|n| m.get(n)?.threshold)
}

/// The chase's cycles per chase.
fn chase_metric(m: &Metrics) -> Option<&MetricSummary> {
    metric(m, "chase")
}
fn min_chase(_: &RunResult, m: &Metrics) -> Option<i64> {
    chase_metric(m)?.min
}
fn p50_chase(_: &RunResult, m: &Metrics) -> Option<i64> {
    chase_metric(m)?.p50
}
fn p99_chase(_: &RunResult, m: &Metrics) -> Option<i64> {
    chase_metric(m)?.p99
}
fn max_chase(_: &RunResult, m: &Metrics) -> Option<i64> {
    chase_metric(m)?.max
}
/// Max − min of one sample's chases, one value per sample ([Red Hat caterpillar]'s
/// plotted figure).
fn p50_sample_jitter(_: &RunResult, m: &Metrics) -> Option<i64> {
    metric(m, "sample-jitter")?.p50
}
fn max_sample_jitter(_: &RunResult, m: &Metrics) -> Option<i64> {
    metric(m, "sample-jitter")?.max
}

/// Max periodic jitter.
pub(super) const MAX_JITTER: Fig = Fig {
    stem: "max_jitter",
    id: "max_jitter_ns",
    head: "max jitter",
    long: "max jitter",
    unit: Unit::Ns,
    get: max_jitter,
};
/// Min periodic jitter.
pub(super) const MIN_JITTER: Fig = Fig {
    stem: "min_jitter",
    id: "min_jitter_ns",
    head: "min jitter",
    long: "min jitter",
    unit: Unit::Ns,
    get: min_jitter,
};
/// Max execution (cycle) time.
pub(super) const MAX_EXEC: Fig = Fig {
    stem: "max_exec",
    id: "max_exec_ns",
    head: "max cycle time",
    long: "max cycle time (exec)",
    unit: Unit::Ns,
    get: max_exec,
};
/// Average execution (cycle) time.
pub(super) const MEAN_EXEC: Fig = Fig {
    stem: "mean_exec",
    id: "mean_exec_ns",
    head: "avg cycle time",
    long: "avg cycle time (exec)",
    unit: Unit::Ns,
    get: mean_exec,
};
/// Min period ([Baumgartner POWERLINK]'s "min cycle").
pub(super) const MIN_PERIOD: Fig = Fig {
    stem: "min_period",
    id: "min_period_ns",
    head: "min cycle",
    long: "min cycle (period)",
    unit: Unit::Ns,
    get: min_period,
};
/// Max period ([Baumgartner POWERLINK]'s "max cycle").
pub(super) const MAX_PERIOD: Fig = Fig {
    stem: "max_period",
    id: "max_period_ns",
    head: "max cycle",
    long: "max cycle (period)",
    unit: Unit::Ns,
    get: max_period,
};
/// Deviation from the configured period.
pub(super) const DEVIATION: Fig = Fig {
    stem: "deviation",
    id: "deviation_ns",
    head: "deviation",
    long: "deviation",
    unit: Unit::Ns,
    get: deviation,
};
/// Min latency.
pub(super) const MIN_LATENCY: Fig = Fig {
    stem: "min_latency",
    id: "min_latency_ns",
    head: "min",
    long: "min latency",
    unit: Unit::Ns,
    get: min_latency,
};
/// Median latency.
pub(super) const P50_LATENCY: Fig = Fig {
    stem: "p50_latency",
    id: "p50_latency_ns",
    head: "median",
    long: "median latency",
    unit: Unit::Ns,
    get: p50_latency,
};
/// Max latency.
pub(super) const MAX_LATENCY: Fig = Fig {
    stem: "max_latency",
    id: "max_latency_ns",
    head: "max",
    long: "max latency",
    unit: Unit::Ns,
    get: max_latency,
};
/// Share of latency samples over the threshold.
pub(super) const OVER_THRESHOLD: Fig = Fig {
    stem: "over_threshold",
    id: "over_threshold_pct",
    head: "% over threshold",
    long: "% over threshold",
    unit: Unit::Pct4,
    get: over_threshold,
};

/// Fewest cycles of one chase.
pub(super) const MIN_CHASE: Fig = Fig {
    stem: "min_chase",
    id: "min_chase_cycles",
    head: "min chase",
    long: "min chase (cycles)",
    unit: Unit::Cycles,
    get: min_chase,
};
/// Median cycles of one chase.
pub(super) const P50_CHASE: Fig = Fig {
    stem: "p50_chase",
    id: "p50_chase_cycles",
    head: "median chase",
    long: "median chase (cycles)",
    unit: Unit::Cycles,
    get: p50_chase,
};
/// 99th percentile of the cycles of one chase.
pub(super) const P99_CHASE: Fig = Fig {
    stem: "p99_chase",
    id: "p99_chase_cycles",
    head: "p99 chase",
    long: "p99 chase (cycles)",
    unit: Unit::Cycles,
    get: p99_chase,
};
/// Most cycles of one chase.
pub(super) const MAX_CHASE: Fig = Fig {
    stem: "max_chase",
    id: "max_chase_cycles",
    head: "max chase",
    long: "max chase (cycles)",
    unit: Unit::Cycles,
    get: max_chase,
};
/// Median sample jitter (max − min of one sample's chases).
pub(super) const P50_SAMPLE_JITTER: Fig = Fig {
    stem: "p50_sample_jitter",
    id: "p50_sample_jitter_cycles",
    head: "median jitter",
    long: "median sample jitter (cycles)",
    unit: Unit::Cycles,
    get: p50_sample_jitter,
};
/// Max sample jitter.
pub(super) const MAX_SAMPLE_JITTER: Fig = Fig {
    stem: "max_sample_jitter",
    id: "max_sample_jitter_cycles",
    head: "max jitter",
    long: "max sample jitter (cycles)",
    unit: Unit::Cycles,
    get: max_sample_jitter,
};

/// A count summed over a result's threads.
fn thread_sum(r: &RunResult, f: fn(&jitterlab_core::result::ThreadResult) -> u64) -> Option<i64> {
    if r.threads.is_empty() {
        return None;
    }
    i64::try_from(r.threads.iter().map(f).sum::<u64>()).ok()
}
fn releases(r: &RunResult, _: &Metrics) -> Option<i64> {
    thread_sum(r, |t| t.releases)
}
fn cycles(r: &RunResult, _: &Metrics) -> Option<i64> {
    thread_sum(r, |t| t.cycles)
}
fn skipped(r: &RunResult, _: &Metrics) -> Option<i64> {
    thread_sum(r, |t| t.skipped)
}
fn overruns(r: &RunResult, _: &Metrics) -> Option<i64> {
    thread_sum(r, |t| t.overruns)
}

/// Releases of the schedule (every thread).
pub(super) const RELEASES: Fig = Fig {
    stem: "releases",
    id: "releases",
    head: "releases",
    long: "releases",
    unit: Unit::Count,
    get: releases,
};
/// Cycles measured: the releases not skipped.
pub(super) const CYCLES: Fig = Fig {
    stem: "cycles",
    id: "cycles",
    head: "cycles",
    long: "cycles measured",
    unit: Unit::Count,
    get: cycles,
};
/// Releases skipped after an overrun.
pub(super) const SKIPPED: Fig = Fig {
    stem: "skipped",
    id: "skipped",
    head: "skipped",
    long: "releases skipped",
    unit: Unit::Count,
    get: skipped,
};
/// Cycles that ended after the next release.
pub(super) const OVERRUNS: Fig = Fig {
    stem: "overruns",
    id: "overruns",
    head: "overruns",
    long: "overruns",
    unit: Unit::Count,
    get: overruns,
};

/// A count of a periodic probe's schedule; `None` for an event probe,
/// which has no releases (its rows say `samples` instead).
fn periodic_count(
    r: &RunResult,
    f: fn(&jitterlab_core::result::ThreadResult) -> u64,
) -> Option<i64> {
    if !r.probe.descriptor().periodic {
        return None;
    }
    thread_sum(r, f)
}
fn periodic_releases(r: &RunResult, _: &Metrics) -> Option<i64> {
    periodic_count(r, |t| t.releases)
}
fn periodic_cycles(r: &RunResult, _: &Metrics) -> Option<i64> {
    periodic_count(r, |t| t.cycles)
}
fn periodic_skipped(r: &RunResult, _: &Metrics) -> Option<i64> {
    periodic_count(r, |t| t.skipped)
}
fn periodic_overruns(r: &RunResult, _: &Metrics) -> Option<i64> {
    periodic_count(r, |t| t.overruns)
}

/// [`SCHEDULE_FIGS`] of a table whose rows may be periodic probes (with
/// releases) or event probes (without: `-`).
pub(super) const PERIODIC_SCHEDULE_FIGS: [Fig; 4] = [
    Fig {
        get: periodic_releases,
        ..RELEASES
    },
    Fig {
        get: periodic_cycles,
        ..CYCLES
    },
    Fig {
        get: periodic_skipped,
        ..SKIPPED
    },
    Fig {
        get: periodic_overruns,
        ..OVERRUNS
    },
];

/// The samples of a result's main metric (what its `… measured` verdict
/// counts).
fn samples(r: &RunResult, m: &Metrics) -> Option<i64> {
    let name = jitterlab_core::verdict::main_metric(r)?;
    i64::try_from(m.get(name).map_or(0, |s| s.count)).ok()
}

/// The samples an event probe's figures come from (its main metric's).
pub(super) const SAMPLES: Fig = Fig {
    stem: "samples",
    id: "samples",
    head: "samples",
    long: "samples",
    unit: Unit::Count,
    get: samples,
};

/// The note under a table with [`SAMPLES`].
pub(super) const SAMPLES_NOTE: &str =
    "samples: the samples of the row's figures (an event probe has no release schedule)";

/// What each row's figures came from: the schedule's releases, the cycles
/// measured, the releases skipped, the overruns ([Intel CODESYS]'s baseline read
/// as a row of figures, but came from 82 cycles of 2507 releases).
pub(super) const SCHEDULE_FIGS: [Fig; 4] = [RELEASES, CYCLES, SKIPPED, OVERRUNS];

/// The note under a table with [`SCHEDULE_FIGS`].
pub(super) const SCHEDULE_NOTE: &str = "releases: cycles the schedule released; cycles: those measured, the only ones the figures come from; skipped: releases passed over after an overrun (never caught up); overruns: cycles that ended after the next release";

/// A note per measured repetition of `members` that skipped releases:
/// its figures come from fewer cycles than the schedule released.
pub(super) fn skipped_notes(members: &[&Group], notes: &mut Vec<String>) {
    for g in members {
        for c in g.measured_cells() {
            let Some((r, _)) = figures_of(c) else {
                continue;
            };
            let sum = |f: fn(&jitterlab_core::result::ThreadResult) -> u64| -> u64 {
                r.threads.iter().map(f).sum()
            };
            let (releases, cycles, skipped, overruns) = (
                sum(|t| t.releases),
                sum(|t| t.cycles),
                sum(|t| t.skipped),
                sum(|t| t.overruns),
            );
            if skipped > 0 {
                notes.push(format!(
                    "{}, repetition {}: the figures come from {cycles} of {releases} releases ({skipped} skipped after {overruns} overruns)",
                    g.name(),
                    c.key.repetition
                ));
            }
        }
    }
}

const CONFIG_FIGS: [Fig; 4] = [MAX_JITTER, MIN_JITTER, MAX_EXEC, MEAN_EXEC];
const LATENCY_FIGS: [Fig; 3] = [MIN_LATENCY, P50_LATENCY, MAX_LATENCY];
/// A figure's `_min`/`_max` machine names.
pub(super) fn spread_names(id: &str) -> [String; 2] {
    [format!("{id}_min"), format!("{id}_max")]
}

/// A figure's printed text.
pub(super) fn fig_text(unit: Unit, s: Spread) -> String {
    match unit {
        Unit::Ns => time_text(s),
        Unit::Pct4 => pct4_text(s),
        Unit::Cycles | Unit::Count => cycles_text(s),
    }
}

/// One value of a figure as JSON/CSV carry it.
pub(super) fn fig_value(unit: Unit, v: i64) -> Value {
    match unit {
        Unit::Ns => json!(v),
        Unit::Pct4 => json!(v as f64 / 10_000.0),
        Unit::Cycles | Unit::Count => json!(v),
    }
}

/// A spread of tenths of a percent as JSON/CSV carry it.
pub(super) fn pct1_values(s: Option<Spread>) -> Vec<Value> {
    match s {
        Some(s) => vec![json!(s.lo as f64 / 10.0), json!(s.hi as f64 / 10.0)],
        None => vec![Value::Null, Value::Null],
    }
}

/// Configuration names: the run's, then the unavailable ones it does not
/// list, then any a cell names that neither does (first seen first).
pub(super) fn configuration_names(run: &StoredRun) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    let extra = run
        .unavailable
        .iter()
        .map(|(c, _)| c)
        .chain(run.cells.iter().map(|c| &c.key.configuration));
    for name in run.configurations.iter().chain(extra) {
        if !v.contains(name) {
            v.push(name.clone());
        }
    }
    v
}

/// Scenario names: the run's, then any a cell names that it does not.
pub(super) fn scenario_names(run: &StoredRun) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for name in run
        .scenarios
        .iter()
        .chain(run.cells.iter().map(|c| &c.key.scenario))
    {
        if !v.contains(name) {
            v.push(name.clone());
        }
    }
    v
}

/// The repetitions of one cell: one row.
pub(super) struct Group<'a> {
    /// Configuration.
    pub configuration: &'a str,
    /// Scenario.
    pub scenario: &'a str,
    /// Deployment.
    pub deployment: &'a str,
    /// Probe.
    pub probe: &'a str,
    /// Its repetitions, in the order they ran.
    pub cells: Vec<&'a StoredCell>,
}

impl<'a> Group<'a> {
    /// `configuration/scenario/deployment/probe`.
    pub fn name(&self) -> String {
        self.cells[0].key.name()
    }

    /// The probe kind: that of its first stored result (whatever the
    /// repetition's status), else the kind its probe name names, if any.
    pub fn kind(&self) -> Option<ProbeKind> {
        match self.cells.iter().find_map(|c| c.result.as_ref()) {
            Some(r) => Some(r.probe),
            None => ProbeKind::parse(self.probe),
        }
    }

    /// True when its probe is the chase.
    pub fn is_chase(&self) -> bool {
        self.kind() == Some(ProbeKind::Chase)
    }

    /// The figures the row shows: the completed repetitions', or, when no
    /// repetition completed, those of the interrupted ones — what they
    /// measured before they were stopped (a killed process's cell: its
    /// committed windows), which the row marks partial.
    pub fn measured(&self) -> Vec<(&'a RunResult, &'a Metrics)> {
        self.measured_cells()
            .into_iter()
            .filter_map(figures_of)
            .collect()
    }

    /// The repetitions whose figures the row shows ([`Self::measured`]).
    pub fn measured_cells(&self) -> Vec<&'a StoredCell> {
        let of = |status: CellStatus| -> Vec<&'a StoredCell> {
            self.cells
                .iter()
                .copied()
                .filter(|c| c.status == status && figures_of(c).is_some())
                .collect()
        };
        let completed = of(CellStatus::Completed);
        if completed.is_empty() {
            of(CellStatus::Interrupted)
        } else {
            completed
        }
    }

    /// True when the figures shown are an interrupted repetition's.
    pub fn interrupted_figures(&self) -> bool {
        !self.measured().is_empty()
            && !self
                .cells
                .iter()
                .any(|c| c.status == CellStatus::Completed && figures_of(c).is_some())
    }

    /// The distinct statuses of its repetitions, first seen first, joined
    /// with `+` (`completed`, `failed`, `completed+failed`).
    pub fn status(&self) -> String {
        let mut v: Vec<&str> = Vec::new();
        for c in &self.cells {
            let s = c.status.name();
            if !v.contains(&s) {
                v.push(s);
            }
        }
        v.join("+")
    }

    /// `n`, or `k/n` when only `k` repetitions have figures (`0/n` when
    /// the figures are an interrupted repetition's).
    pub fn reps_text(&self) -> String {
        let (k, n) = (self.measured().len(), self.cells.len());
        if self.interrupted_figures() {
            format!("0/{n}")
        } else if k == n {
            n.to_string()
        } else {
            format!("{k}/{n}")
        }
    }

    /// The spread of a figure over the completed repetitions.
    pub fn spread(&self, f: &Fig) -> Option<Spread> {
        spread_of(
            self.measured()
                .into_iter()
                .filter_map(|(r, m)| (f.get)(r, m)),
        )
    }

    /// What stands in place of a missing figure: the status when no
    /// repetition has figures (`no data` for a completed cell without a
    /// result), else `-`.
    pub fn placeholder(&self) -> String {
        if !self.measured().is_empty() {
            "-".into()
        } else {
            match self.status().as_str() {
                "completed" => "no data".into(),
                s => s.to_string(),
            }
        }
    }

    pub(super) fn key_values(&self) -> Vec<Value> {
        vec![
            json!(self.configuration),
            json!(self.scenario),
            json!(self.deployment),
            json!(self.probe),
        ]
    }

    pub(super) fn reps_cell(&self) -> Cell {
        Cell::new(
            self.reps_text(),
            vec![json!(self.cells.len()), json!(self.measured().len())],
        )
    }

    pub(super) fn status_cell(&self) -> Cell {
        Cell::hidden(vec![json!(self.status())])
    }

    /// A figure's cell: spread, `-` or the status.
    pub(super) fn fig_cell(&self, f: &Fig) -> Cell {
        self.spread_cell(f.unit, self.spread(f))
    }

    /// A spread's cell in `unit`, or `-` / the status when there is none.
    pub(super) fn spread_cell(&self, unit: Unit, s: Option<Spread>) -> Cell {
        let mark = if self.interrupted_figures() { "*" } else { "" };
        match s {
            Some(s) => Cell::new(
                format!("{}{mark}", fig_text(unit, s)),
                vec![fig_value(unit, s.lo), fig_value(unit, s.hi)],
            ),
            None => Cell::new(self.placeholder(), vec![Value::Null, Value::Null]),
        }
    }

    /// Some repetitions are left out of the figures (k/n in reps).
    fn partial(&self) -> bool {
        let k = self.measured().len();
        k > 0 && k < self.cells.len() && !self.interrupted_figures()
    }
}

/// The spread of some values; `None` when there are none.
pub(super) fn spread_of(values: impl Iterator<Item = i64>) -> Option<Spread> {
    values.fold(None, |acc, v| match acc {
        None => Some(Spread { lo: v, hi: v }),
        Some(s) => Some(Spread {
            lo: s.lo.min(v),
            hi: s.hi.max(v),
        }),
    })
}

/// Every cell grouped by its name, ordered by configuration, then scenario
/// (the run's order), then first run.
pub(super) fn groups(run: &StoredRun) -> Vec<Group<'_>> {
    let mut v: Vec<Group> = Vec::new();
    for c in &run.cells {
        let k = &c.key;
        match v.iter_mut().find(|g| {
            g.configuration == k.configuration
                && g.scenario == k.scenario
                && g.deployment == k.deployment
                && g.probe == k.probe
        }) {
            Some(g) => g.cells.push(c),
            None => v.push(Group {
                configuration: &k.configuration,
                scenario: &k.scenario,
                deployment: &k.deployment,
                probe: &k.probe,
                cells: vec![c],
            }),
        }
    }
    let configs = configuration_names(run);
    let scenarios = scenario_names(run);
    // Probes in the order they first ran: the deployments of one probe
    // (host, container) become adjacent rows, in the order they ran.
    let mut probes: Vec<String> = Vec::new();
    for c in &run.cells {
        if !probes.contains(&c.key.probe) {
            probes.push(c.key.probe.clone());
        }
    }
    let pos = |list: &[String], s: &str| list.iter().position(|x| x == s).unwrap_or(usize::MAX);
    v.sort_by_key(|g| {
        (
            pos(&configs, g.configuration),
            pos(&scenarios, g.scenario),
            pos(&probes, g.probe),
        )
    });
    v
}

/// True when a table built from `members` has something to say: some cell
/// measured `metric`, or no cell has figures yet and the probe name names a
/// kind whose descriptor has the metric (so the rows show why there are
/// none).
pub(super) fn applies(members: &[&Group], metric_name: &str) -> bool {
    let mut any = false;
    for g in members {
        for c in &g.cells {
            if let Some((_, m)) = figures_of(c) {
                any = true;
                if metric(m, metric_name).is_some() {
                    return true;
                }
            }
        }
    }
    !any && members
        .iter()
        .any(|g| ProbeKind::parse(g.probe).is_some_and(|k| k.metric(metric_name).is_some()))
}

/// Distinct values of `key` over `groups`, in the groups' order.
pub(super) fn distinct<'a, K: PartialEq + Copy>(
    groups: &[Group<'a>],
    key: impl Fn(&Group<'a>) -> K,
) -> Vec<K> {
    let mut v = Vec::new();
    for g in groups {
        let k = key(g);
        if !v.contains(&k) {
            v.push(k);
        }
    }
    v
}

/// The footnote of a row whose figures are an interrupted repetition's.
pub(super) const INTERRUPTED_NOTE: &str = "* partial: no repetition completed; the figures are what an interrupted one measured before it was stopped (for a killed process, from the window rows it committed: min, max and mean only)";

/// The footnotes a table's rows call for.
pub(super) fn row_notes(members: &[&Group], notes: &mut Vec<String>) {
    if members.iter().any(|g| g.partial()) {
        notes.push(PARTIAL_NOTE.into());
    }
    if members.iter().any(|g| g.interrupted_figures()) {
        notes.push(INTERRUPTED_NOTE.into());
    }
}

/// [`row_notes`] as a new list.
pub(super) fn notes_of(members: &[&Group]) -> Vec<String> {
    let mut notes = Vec::new();
    row_notes(members, &mut notes);
    notes
}

const PARTIAL_NOTE: &str = "k/n in reps: only k of n repetitions completed; the figures are theirs (see the explanations for the others)";

pub(super) fn key_cols(head: &str) -> Col {
    Col::left(head, &["configuration", "scenario", "deployment", "probe"])
}

pub(super) fn reps_col() -> Col {
    Col::right("reps", &["reps", "completed"])
}

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

/// The [`SCHEDULE_FIGS`] columns.
pub(super) fn schedule_cols(cols: &mut Vec<Col>) {
    for f in SCHEDULE_FIGS {
        let [a, b] = spread_names(f.id);
        cols.push(Col::right(f.head, &[&a, &b]));
    }
}

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

/// A row for a configuration or scenario without cells: `N/A` with a reason
/// (unavailable) or `not run`, `text` in every printed figure column.
/// The `N/A` rows of configuration `c` when the machine could not run it:
/// one per (scenario, deployment, probe) of `keys`, and a note with the
/// reason. Nothing when `c` is not one of the run's unavailable
/// configurations (it ran nothing of this table for another reason).
pub(super) fn unavailable_rows(
    run: &StoredRun,
    c: &str,
    keys: &[(&str, &str, &str)],
    cols: &[Col],
    rows: &mut Vec<Vec<Cell>>,
    notes: &mut Vec<String>,
) {
    let Some((_, reason)) = run.unavailable.iter().find(|(u, _)| u == c) else {
        return;
    };
    for &(scenario, deployment, probe) in keys {
        rows.push(empty_row(
            cols,
            [c, scenario, deployment, probe],
            &format!("{c}/{scenario}/{deployment}/{probe}"),
            "unavailable",
            "N/A",
            Some(reason),
        ));
    }
    notes.push(format!("N/A {c}: {reason}"));
}

pub(super) fn empty_row(
    cols: &[Col],
    key: [&str; 4],
    label: &str,
    status: &str,
    text: &str,
    note: Option<&str>,
) -> Vec<Cell> {
    let mut row = vec![
        Cell::new(label, key.iter().map(|k| json!(k)).collect()),
        Cell::new("-", vec![json!(0), json!(0)]),
    ];
    for col in &cols[2..] {
        let values = |n: &str| match n {
            "status" => json!(status),
            "note" => note.map_or(Value::Null, |s| json!(s)),
            _ => Value::Null,
        };
        let v: Vec<Value> = col.names.iter().map(|n| values(n)).collect();
        if col.head.is_some() {
            row.push(Cell::new(text, v));
        } else {
            row.push(Cell::hidden(v));
        }
    }
    row
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

/// `over_threshold / count` of one summary in ten-thousandths of a
/// percent, rounded.
fn over_threshold_share(s: &MetricSummary) -> Option<i64> {
    let over = s.over_threshold?;
    Some(round_div(over as i128 * 1_000_000, s.count as i128) as i64)
}

/// True when some cell of the run is a chase (its row belongs to the chase
/// table).
pub(super) fn any_chase(run: &StoredRun) -> bool {
    groups(run).iter().any(Group::is_chase)
}
