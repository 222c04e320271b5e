//! The rows every comparison table is made of: grouping a stored run's
//! repetitions into rows ([`Group`]), picking each figure from a cell's
//! summaries ([`Fig`]), the key, repetition and status columns, and the
//! footnotes every table shares. The tables themselves are elsewhere: the
//! shared ones in `report::tables`, a kind's own in its probe folder.
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
use jitterlab_core::result::ProbeKind;
use jitterlab_core::result::RunResult;
use jitterlab_core::stats::MetricSummary;
use serde_json::{json, Value};

pub(crate) use super::number::Spread;
use super::number::{cycles_text, pct4_text, round_div, time_text};
use super::sheet::{Cell, Col};

/// Summaries by metric name.
pub(crate) type Metrics = BTreeMap<String, MetricSummary>;

/// The result and summaries of a cell, when it has them.
pub(crate) fn figures_of(c: &StoredCell) -> Option<(&RunResult, &Metrics)> {
    let r = c.result.as_ref()?;
    let m = r
        .combined
        .as_ref()
        .or_else(|| r.threads.first().map(|t| &t.metrics))?;
    Some((r, m))
}

pub(crate) fn metric<'a>(m: &'a Metrics, name: &str) -> Option<&'a MetricSummary> {
    m.get(name).filter(|s| s.count > 0)
}

/// The unit of a figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unit {
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
pub(crate) struct Fig {
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

impl Fig {
    /// A nanosecond figure of a kind's own table, printed under `head`
    /// wherever it stands (its table's figures are not compared).
    pub(crate) const fn ns(
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
pub(crate) fn threshold_of(m: &Metrics) -> Option<u64> {
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
pub(crate) const MAX_JITTER: Fig = Fig {
    stem: "max_jitter",
    id: "max_jitter_ns",
    head: "max jitter",
    long: "max jitter",
    unit: Unit::Ns,
    get: max_jitter,
};
/// Min periodic jitter.
pub(crate) const MIN_JITTER: Fig = Fig {
    stem: "min_jitter",
    id: "min_jitter_ns",
    head: "min jitter",
    long: "min jitter",
    unit: Unit::Ns,
    get: min_jitter,
};
/// Max execution (cycle) time.
pub(crate) const MAX_EXEC: Fig = Fig {
    stem: "max_exec",
    id: "max_exec_ns",
    head: "max cycle time",
    long: "max cycle time (exec)",
    unit: Unit::Ns,
    get: max_exec,
};
/// Average execution (cycle) time.
pub(crate) const MEAN_EXEC: Fig = Fig {
    stem: "mean_exec",
    id: "mean_exec_ns",
    head: "avg cycle time",
    long: "avg cycle time (exec)",
    unit: Unit::Ns,
    get: mean_exec,
};
/// Min period ([Baumgartner POWERLINK]'s "min cycle").
pub(crate) const MIN_PERIOD: Fig = Fig {
    stem: "min_period",
    id: "min_period_ns",
    head: "min cycle",
    long: "min cycle (period)",
    unit: Unit::Ns,
    get: min_period,
};
/// Max period ([Baumgartner POWERLINK]'s "max cycle").
pub(crate) const MAX_PERIOD: Fig = Fig {
    stem: "max_period",
    id: "max_period_ns",
    head: "max cycle",
    long: "max cycle (period)",
    unit: Unit::Ns,
    get: max_period,
};
/// Deviation from the configured period.
pub(crate) const DEVIATION: Fig = Fig {
    stem: "deviation",
    id: "deviation_ns",
    head: "deviation",
    long: "deviation",
    unit: Unit::Ns,
    get: deviation,
};
/// Min latency.
pub(crate) const MIN_LATENCY: Fig = Fig {
    stem: "min_latency",
    id: "min_latency_ns",
    head: "min",
    long: "min latency",
    unit: Unit::Ns,
    get: min_latency,
};
/// Median latency.
pub(crate) const P50_LATENCY: Fig = Fig {
    stem: "p50_latency",
    id: "p50_latency_ns",
    head: "median",
    long: "median latency",
    unit: Unit::Ns,
    get: p50_latency,
};
/// Max latency.
pub(crate) const MAX_LATENCY: Fig = Fig {
    stem: "max_latency",
    id: "max_latency_ns",
    head: "max",
    long: "max latency",
    unit: Unit::Ns,
    get: max_latency,
};
/// Share of latency samples over the threshold.
pub(crate) const OVER_THRESHOLD: Fig = Fig {
    stem: "over_threshold",
    id: "over_threshold_pct",
    head: "% over threshold",
    long: "% over threshold",
    unit: Unit::Pct4,
    get: over_threshold,
};

/// Fewest cycles of one chase.
pub(crate) const MIN_CHASE: Fig = Fig {
    stem: "min_chase",
    id: "min_chase_cycles",
    head: "min chase",
    long: "min chase (cycles)",
    unit: Unit::Cycles,
    get: min_chase,
};
/// Median cycles of one chase.
pub(crate) const P50_CHASE: Fig = Fig {
    stem: "p50_chase",
    id: "p50_chase_cycles",
    head: "median chase",
    long: "median chase (cycles)",
    unit: Unit::Cycles,
    get: p50_chase,
};
/// 99th percentile of the cycles of one chase.
pub(crate) const P99_CHASE: Fig = Fig {
    stem: "p99_chase",
    id: "p99_chase_cycles",
    head: "p99 chase",
    long: "p99 chase (cycles)",
    unit: Unit::Cycles,
    get: p99_chase,
};
/// Most cycles of one chase.
pub(crate) const MAX_CHASE: Fig = Fig {
    stem: "max_chase",
    id: "max_chase_cycles",
    head: "max chase",
    long: "max chase (cycles)",
    unit: Unit::Cycles,
    get: max_chase,
};
/// Median sample jitter (max − min of one sample's chases).
pub(crate) const P50_SAMPLE_JITTER: Fig = Fig {
    stem: "p50_sample_jitter",
    id: "p50_sample_jitter_cycles",
    head: "median jitter",
    long: "median sample jitter (cycles)",
    unit: Unit::Cycles,
    get: p50_sample_jitter,
};
/// Max sample jitter.
pub(crate) const MAX_SAMPLE_JITTER: Fig = Fig {
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
pub(crate) const RELEASES: Fig = Fig {
    stem: "releases",
    id: "releases",
    head: "releases",
    long: "releases",
    unit: Unit::Count,
    get: releases,
};
/// Cycles measured: the releases not skipped.
pub(crate) const CYCLES: Fig = Fig {
    stem: "cycles",
    id: "cycles",
    head: "cycles",
    long: "cycles measured",
    unit: Unit::Count,
    get: cycles,
};
/// Releases skipped after an overrun.
pub(crate) const SKIPPED: Fig = Fig {
    stem: "skipped",
    id: "skipped",
    head: "skipped",
    long: "releases skipped",
    unit: Unit::Count,
    get: skipped,
};
/// Cycles that ended after the next release.
pub(crate) const OVERRUNS: Fig = Fig {
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
pub(crate) const PERIODIC_SCHEDULE_FIGS: [Fig; 4] = [
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
pub(crate) const SAMPLES: Fig = Fig {
    stem: "samples",
    id: "samples",
    head: "samples",
    long: "samples",
    unit: Unit::Count,
    get: samples,
};

/// The note under a table with [`SAMPLES`].
pub(crate) const SAMPLES_NOTE: &str =
    "samples: the samples of the row's figures (an event probe has no release schedule)";

/// What each row's figures came from: the schedule's releases, the cycles
/// measured, the releases skipped, the overruns ([Intel CODESYS]'s baseline read
/// as a row of figures, but came from 82 cycles of 2507 releases).
pub(crate) const SCHEDULE_FIGS: [Fig; 4] = [RELEASES, CYCLES, SKIPPED, OVERRUNS];

/// The note under a table with [`SCHEDULE_FIGS`].
pub(crate) const SCHEDULE_NOTE: &str = "releases: cycles the schedule released; cycles: those measured, the only ones the figures come from; skipped: releases passed over after an overrun (never caught up); overruns: cycles that ended after the next release";

/// A note per measured repetition of `members` that skipped releases:
/// its figures come from fewer cycles than the schedule released.
pub(crate) fn skipped_notes(members: &[&Group], notes: &mut Vec<String>) {
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

/// A figure's `_min`/`_max` machine names.
pub(crate) fn spread_names(id: &str) -> [String; 2] {
    [format!("{id}_min"), format!("{id}_max")]
}

/// A figure's printed text.
pub(crate) fn fig_text(unit: Unit, s: Spread) -> String {
    match unit {
        Unit::Ns => time_text(s),
        Unit::Pct4 => pct4_text(s),
        Unit::Cycles | Unit::Count => cycles_text(s),
    }
}

/// One value of a figure as JSON/CSV carry it.
pub(crate) fn fig_value(unit: Unit, v: i64) -> Value {
    match unit {
        Unit::Ns => json!(v),
        Unit::Pct4 => json!(v as f64 / 10_000.0),
        Unit::Cycles | Unit::Count => json!(v),
    }
}

/// A spread of tenths of a percent as JSON/CSV carry it.
pub(crate) fn pct1_values(s: Option<Spread>) -> Vec<Value> {
    match s {
        Some(s) => vec![json!(s.lo as f64 / 10.0), json!(s.hi as f64 / 10.0)],
        None => vec![Value::Null, Value::Null],
    }
}

/// Configuration names: the run's, then the unavailable ones it does not
/// list, then any a cell names that neither does (first seen first).
pub(crate) fn configuration_names(run: &StoredRun) -> Vec<String> {
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
pub(crate) fn scenario_names(run: &StoredRun) -> Vec<String> {
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
pub(crate) struct Group<'a> {
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

    pub(crate) fn key_values(&self) -> Vec<Value> {
        vec![
            json!(self.configuration),
            json!(self.scenario),
            json!(self.deployment),
            json!(self.probe),
        ]
    }

    pub(crate) fn reps_cell(&self) -> Cell {
        Cell::new(
            self.reps_text(),
            vec![json!(self.cells.len()), json!(self.measured().len())],
        )
    }

    pub(crate) fn status_cell(&self) -> Cell {
        Cell::hidden(vec![json!(self.status())])
    }

    /// A figure's cell: spread, `-` or the status.
    pub(crate) fn fig_cell(&self, f: &Fig) -> Cell {
        self.spread_cell(f.unit, self.spread(f))
    }

    /// A spread's cell in `unit`, or `-` / the status when there is none.
    pub(crate) fn spread_cell(&self, unit: Unit, s: Option<Spread>) -> Cell {
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
pub(crate) fn spread_of(values: impl Iterator<Item = i64>) -> Option<Spread> {
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
pub(crate) fn groups(run: &StoredRun) -> Vec<Group<'_>> {
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
pub(crate) fn applies(members: &[&Group], metric_name: &str) -> bool {
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
pub(crate) fn distinct<'a, K: PartialEq + Copy>(
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
pub(crate) const INTERRUPTED_NOTE: &str = "* partial: no repetition completed; the figures are what an interrupted one measured before it was stopped (for a killed process, from the window rows it committed: min, max and mean only)";

/// The footnotes a table's rows call for.
pub(crate) fn row_notes(members: &[&Group], notes: &mut Vec<String>) {
    if members.iter().any(|g| g.partial()) {
        notes.push(PARTIAL_NOTE.into());
    }
    if members.iter().any(|g| g.interrupted_figures()) {
        notes.push(INTERRUPTED_NOTE.into());
    }
}

/// [`row_notes`] as a new list.
pub(crate) fn notes_of(members: &[&Group]) -> Vec<String> {
    let mut notes = Vec::new();
    row_notes(members, &mut notes);
    notes
}

const PARTIAL_NOTE: &str = "k/n in reps: only k of n repetitions completed; the figures are theirs (see the explanations for the others)";

pub(crate) fn key_cols(head: &str) -> Col {
    Col::left(head, &["configuration", "scenario", "deployment", "probe"])
}

pub(crate) fn reps_col() -> Col {
    Col::right("reps", &["reps", "completed"])
}

/// The [`SCHEDULE_FIGS`] columns.
pub(crate) fn schedule_cols(cols: &mut Vec<Col>) {
    for f in SCHEDULE_FIGS {
        let [a, b] = spread_names(f.id);
        cols.push(Col::right(f.head, &[&a, &b]));
    }
}

/// A row for a configuration or scenario without cells: `N/A` with a reason
/// (unavailable) or `not run`, `text` in every printed figure column.
/// The `N/A` rows of configuration `c` when the machine could not run it:
/// one per (scenario, deployment, probe) of `keys`, and a note with the
/// reason. Nothing when `c` is not one of the run's unavailable
/// configurations (it ran nothing of this table for another reason).
pub(crate) fn unavailable_rows(
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

pub(crate) fn empty_row(
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

/// `over_threshold / count` of one summary in ten-thousandths of a
/// percent, rounded.
pub(crate) fn over_threshold_share(s: &MetricSummary) -> Option<i64> {
    let over = s.over_threshold?;
    Some(round_div(over as i128 * 1_000_000, s.count as i128) as i64)
}
