//! The verdicts of a result: every pass/fail a report prints and the exit
//! status follows, decided in one place and only from samples.
//!
//! A [`Verdict`] names what was judged (a limit on a metric, a kind's own
//! verdict ([`KindVerdicts`]), or that the probe's main metric was
//! measured at all), the limit, the figure seen with its
//! sample count, the status — [`Status::Pass`], [`Status::Fail`] or
//! [`Status::NotMeasured`] with the reason — and what decided it, in words
//! (`max 812.000us of 12000 samples > limit 500.000us`).
//!
//! The rules:
//!
//! * A figure with no sample is *not measured*, never 0 and never a pass;
//!   a not-measured verdict fails the run like a failed one.
//! * A probe whose main metric has no sample fails, saying why (as
//!   precisely as its kind can tell).
//! * A metric the result's role cannot measure (its kind says which)
//!   gets no verdict at all, so no report prints it.
//!
//! * A neighbour asked for a load ([`crate::noise`]) that it did not
//!   deliver makes the measurement not the one asked for: each neighbour
//!   with a load request gets a verdict `neighbour NAME load`
//!   ([`neighbour_verdicts`]), a fail when it is short of its load, not
//!   measured when its CPU time could not be judged.
//!
//! [`verdicts`] reads only the stored [`RunResult`] (its summaries, its
//! limits and its probe's `detail`), so a stored run of any version gets its
//! verdicts recomputed when it is reported; [`RunResult::failed`] and every
//! exit status read them.

use serde::{Deserialize, Serialize};

use crate::cell::{CellContext, CellStatus, NeighbourReport, StoredRun};
use crate::noise::{self, LoadCheck};
use crate::result::{LimitCheck, RunResult};
use crate::stats::MetricSummary;

/// What a kind judges beyond its limits and its main metric: the roles
/// that cannot measure some of its metrics, its main metric in a role,
/// why it has no sample, and its own verdict (a budget kept, a cycle
/// time held). A kind's descriptor points at its own
/// ([`crate::probe::ProbeDescriptor::verdicts`]); the rules here ask it.
#[derive(Clone, Copy)]
pub struct KindVerdicts {
    /// Why a result of this role (`detail.role`) cannot measure a metric.
    pub unmeasurable: fn(Option<&str>, &str) -> Option<&'static str>,
    /// The metric that says a result of this role measured anything, when
    /// not the kind's main latency.
    pub main_metric: fn(Option<&str>) -> Option<&'static str>,
    /// Why the result has no sample of a metric, as precisely as it says.
    pub no_sample_reason: fn(&RunResult, &str) -> Option<String>,
    /// The kind's own verdict, printed after the limits.
    pub own: fn(&RunResult) -> Option<Verdict>,
}

impl PartialEq for KindVerdicts {
    /// The same record (a kind's one `const`).
    fn eq(&self, other: &KindVerdicts) -> bool {
        std::ptr::eq(self, other)
    }
}

impl Eq for KindVerdicts {}

impl std::fmt::Debug for KindVerdicts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KindVerdicts")
    }
}

/// How a verdict came out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum Status {
    /// The figure is within its limit.
    Pass,
    /// The figure broke its limit (or the check failed).
    Fail,
    /// Nothing was measured to judge; a failure of the run all the same.
    NotMeasured {
        /// Why there is no figure.
        reason: String,
    },
}

impl Status {
    /// The word a report prints: `PASS`, `FAIL`, `NOT MEASURED`.
    pub fn word(&self) -> &'static str {
        match self {
            Status::Pass => "PASS",
            Status::Fail => "FAIL",
            Status::NotMeasured { .. } => "NOT MEASURED",
        }
    }

    /// True only for [`Status::Pass`].
    pub fn passed(&self) -> bool {
        matches!(self, Status::Pass)
    }
}

/// One judged figure of one result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// What was judged: a metric name for a limit (`jitter`), `round-trip
    /// budget`, `cycle time held`, `<metric> measured`.
    pub name: String,
    /// The limit, ns, where there is one.
    pub limit_ns: Option<u64>,
    /// The figure compared with it, ns; `None` when nothing was measured.
    pub observed_ns: Option<u64>,
    /// The samples behind the figure.
    pub samples: Option<u64>,
    /// Pass, fail or not measured.
    #[serde(flatten)]
    pub status: Status,
    /// What decided it, in words.
    pub decided: String,
}

impl Verdict {
    /// The line the text report prints: `PASS jitter: max |jitter| …`.
    pub fn line(&self) -> String {
        format!("{} {}: {}", self.status.word(), self.name, self.decided)
    }
}

/// Exact microseconds with three decimals and `us`: 812000 → `812.000us`.
pub fn us(ns: u64) -> String {
    format!("{}.{:03}us", ns / 1_000, ns % 1_000)
}

/// `1 sample`, `12000 samples`.
fn n_samples(n: u64) -> String {
    match n {
        1 => "1 sample".into(),
        n => format!("{n} samples"),
    }
}

/// True when any verdict is not a pass.
pub fn any_failed(v: &[Verdict]) -> bool {
    v.iter().any(|v| !v.status.passed())
}

/// The summary of `metric` a result judges: all threads combined, else its
/// only thread's.
pub fn summary<'a>(r: &'a RunResult, metric: &str) -> Option<&'a MetricSummary> {
    match &r.combined {
        Some(c) => c.get(metric),
        None => r.threads.first().and_then(|t| t.metrics.get(metric)),
    }
}

/// Samples of `metric` in `r` (0 when it has no summary).
fn count(r: &RunResult, metric: &str) -> u64 {
    match &r.combined {
        Some(c) => c.get(metric).map_or(0, |s| s.count),
        None => r
            .threads
            .iter()
            .filter_map(|t| t.metrics.get(metric))
            .map(|s| s.count)
            .sum(),
    }
}

/// The role a result's probe ran in (`detail.role`), if it says.
pub fn role(r: &RunResult) -> Option<&str> {
    r.detail.as_ref()?.get("role")?.as_str()
}

/// Why `r`'s role cannot measure `metric`, when it cannot.
pub fn unmeasurable(r: &RunResult, metric: &str) -> Option<&'static str> {
    (r.probe.descriptor().verdicts?.unmeasurable)(role(r), metric)
}

/// The metric whose samples say that `r`'s probe measured anything: its
/// main latency (the controller's T2→T3 for a round trip's controller
/// alone), else its first metric.
pub fn main_metric(r: &RunResult) -> Option<&'static str> {
    if let Some(m) = r
        .probe
        .descriptor()
        .verdicts
        .and_then(|k| (k.main_metric)(role(r)))
    {
        return Some(m);
    }
    r.probe
        .main_latency()
        .or_else(|| r.probe.metrics().first().map(|m| m.name))
}

/// Why `r` has no sample of `metric`, as precisely as the result says.
pub fn no_sample_reason(r: &RunResult, metric: &str) -> String {
    if let Some(why) = r
        .probe
        .descriptor()
        .verdicts
        .and_then(|k| (k.no_sample_reason)(r, metric))
    {
        return why;
    }
    let sample = r.probe.descriptor().words.sample;
    format!("no {sample} recorded a {metric} sample")
}

/// The verdict of one limit of `r`: the largest magnitude of the samples
/// of its metric against it — recomputed from the result's summaries, or,
/// for a result that kept none of that metric (an external tool's), the
/// figure the limit stored.
pub fn limit_verdict(r: &RunResult, l: &LimitCheck) -> Verdict {
    let (metric, limit_ns) = (l.metric.as_str(), l.limit_ns);
    let (samples, observed) = match summary(r, metric) {
        Some(_) => {
            let n = count(r, metric);
            let o = summary(r, metric).and_then(MetricSummary::largest_magnitude);
            (Some(n), o)
        }
        None if l.samples == Some(0) => (Some(0), None),
        None => (l.samples, l.observed_ns),
    };
    let signed = r.probe.metric(metric).is_some_and(|m| m.signed);
    let what = if signed {
        format!("max |{metric}|")
    } else {
        "max".to_string()
    };
    match observed {
        None => {
            let reason = no_sample_reason(r, metric);
            Verdict {
                name: metric.to_string(),
                limit_ns: Some(limit_ns),
                observed_ns: None,
                samples: Some(samples.unwrap_or(0)),
                decided: format!("no sample, limit {}: {reason}", us(limit_ns)),
                status: Status::NotMeasured { reason },
            }
        }
        Some(o) => {
            let (status, op) = if o > limit_ns {
                (Status::Fail, ">")
            } else {
                (Status::Pass, "<=")
            };
            let of = samples.map_or_else(String::new, |n| format!(" of {}", n_samples(n)));
            Verdict {
                name: metric.to_string(),
                limit_ns: Some(limit_ns),
                observed_ns: Some(o),
                samples,
                decided: format!("{what} {}{of} {op} limit {}", us(o), us(limit_ns)),
                status,
            }
        }
    }
}

// Here rather than in `result`, which the verdicts read: no circle
// between the two modules.
impl RunResult {
    /// True when any of its verdicts ([`verdicts`]) did not pass: a limit
    /// exceeded or not measured, a kind's own verdict not passed (a
    /// budget broken, a cycle time not held), no sample of the main metric.
    pub fn failed(&self) -> bool {
        any_failed(&verdicts(self))
    }
}

/// The verdict that `r`'s main metric was measured at all; `None` when a
/// limit on it already judges that, or its role cannot measure it.
fn measured_verdict(r: &RunResult) -> Option<Verdict> {
    let metric = main_metric(r)?;
    if unmeasurable(r, metric).is_some() || r.limits.iter().any(|l| l.metric == metric) {
        return None;
    }
    let samples = count(r, metric);
    let name = format!("{metric} measured");
    Some(if samples == 0 {
        let reason = no_sample_reason(r, metric);
        Verdict {
            name,
            limit_ns: None,
            observed_ns: None,
            samples: Some(0),
            decided: format!("0 samples: {reason}"),
            status: Status::NotMeasured { reason },
        }
    } else {
        Verdict {
            name,
            limit_ns: None,
            observed_ns: None,
            samples: Some(samples),
            decided: n_samples(samples),
            status: Status::Pass,
        }
    })
}

/// Every verdict of `r`, in the order a report prints them: its limits
/// (recomputed from its summaries), the round-trip budget, the cycle time
/// held, and that the main metric was measured.
pub fn verdicts(r: &RunResult) -> Vec<Verdict> {
    let mut v: Vec<Verdict> = r
        .limits
        .iter()
        .filter(|l| unmeasurable(r, &l.metric).is_none())
        .map(|l| limit_verdict(r, l))
        .collect();
    v.extend(r.probe.descriptor().verdicts.and_then(|k| (k.own)(r)));
    v.extend(measured_verdict(r));
    v
}

/// A CPU share, thousandths of a CPU, as a whole per cent of one CPU:
/// 34 → `3 %` (halves up).
fn cpu_percent(milli: u64) -> String {
    format!("{} %", (milli + 5) / 10)
}

/// What decided a judged neighbour's load: `achieved 3 % of the 80 %
/// asked (CPU time 390.000ms in 15.058s; tolerance 20 %)`, or for a
/// neighbour that asked no stated CPU time, its bogo-ops.
fn load_decided(n: &NeighbourReport, l: &LoadCheck) -> String {
    let mut parts = Vec::new();
    if l.asked_milli > 0 {
        parts.push(format!(
            "achieved {} of the {} asked (CPU time {} in {}; tolerance {} %)",
            cpu_percent(l.achieved_milli),
            cpu_percent(l.asked_milli),
            crate::units::format_ns(i64::try_from(n.cpu_time_ns).unwrap_or(i64::MAX)),
            crate::units::format_ns(i64::try_from(n.wall_ns).unwrap_or(i64::MAX)),
            l.tolerance_percent
        ));
    }
    if !l.idle_stressors.is_empty() {
        parts.push(format!("no bogo-ops from {}", l.idle_stressors.join(", ")));
    }
    if parts.is_empty() {
        parts.push("every stressor reported bogo-ops".into());
    }
    let head = if l.short {
        "short of its load"
    } else {
        "delivered its load"
    };
    format!("{head}: {}", parts.join("; "))
}

/// One verdict per neighbour with a load request (a stress-ng command
/// [`noise::stress_ng_intent`] reads): `neighbour NAME load`, a pass when
/// it achieved at least `100 − LOAD_TOLERANCE_PERCENT` % of its request
/// and every stressor reported bogo-ops, a fail when it is short of its
/// load, not measured (with the reason) when its CPU time could not be
/// judged. A neighbour with no stated request (a flood, hackbench, a
/// user's command) gets none.
pub fn neighbour_verdicts(neighbours: &[NeighbourReport]) -> Vec<Verdict> {
    // A cell stored before loads were judged is judged now, from what it
    // stored (its neighbours' argument vectors, CPU time and bogo-ops).
    let mut judged = neighbours.to_vec();
    if neighbours.iter().all(|n| n.load.is_none()) {
        crate::cell::judge_loads(&mut judged);
    }
    judged
        .iter()
        .filter(|n| noise::stress_ng_intent(&n.argv, n.cpus.len()).is_some())
        .map(|n| {
            let name = format!("neighbour {} load", n.name);
            let (status, decided) = match &n.load {
                Some(l) => (
                    if l.short { Status::Fail } else { Status::Pass },
                    load_decided(n, l),
                ),
                None => {
                    let reason = if !n.healthy {
                        format!("its CPU time cannot be judged: it {}", n.end)
                    } else if n.wall_ns == 0 {
                        "its CPU time cannot be judged: the cell measured for no wall time"
                            .to_string()
                    } else {
                        "its CPU time cannot be judged".to_string()
                    };
                    (
                        Status::NotMeasured {
                            reason: reason.clone(),
                        },
                        reason,
                    )
                }
            };
            Verdict {
                name,
                limit_ns: None,
                observed_ns: None,
                samples: None,
                status,
                decided,
            }
        })
        .collect()
}

/// Every verdict of a bench cell: its result's ([`verdicts`]), then its
/// neighbours' loads ([`neighbour_verdicts`]).
pub fn cell_verdicts(r: &RunResult, context: &CellContext) -> Vec<Verdict> {
    let mut v = verdicts(r);
    v.extend(neighbour_verdicts(&context.neighbours));
    v
}

/// What [`run_verdicts`] says of a cell still pending or running, after
/// its status.
pub const NO_RESULT_YET: &str = "no result yet";

/// The verdicts of one cell of a stored run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CellVerdicts {
    /// The cell's name and repetition (`idle rep 1`); `None` for the only
    /// cell of a `jitterlab run`.
    pub cell: Option<String>,
    /// Wall time of its measurement, ns (0 without a result).
    pub elapsed_ns: u64,
    /// Set when the cell was skipped (its reason), or has not ended yet
    /// (`running: no result yet`): it has no verdict.
    pub skipped: Option<String>,
    /// Its verdicts; a failed cell has one, `cell ran`, failed with why.
    pub verdicts: Vec<Verdict>,
}

/// The verdicts of every cell of `run`. `single` names no cell (the one
/// cell of a `jitterlab run`).
pub fn run_verdicts(run: &StoredRun, single: bool) -> Vec<CellVerdicts> {
    run.cells
        .iter()
        .map(|c| {
            let cell = (!single).then(|| format!("{} rep {}", c.key.name(), c.key.repetition));
            let elapsed_ns = c.result.as_ref().map_or(0, |r| r.elapsed_ns);
            let mut out = CellVerdicts {
                cell,
                elapsed_ns,
                skipped: None,
                verdicts: Vec::new(),
            };
            match (c.status, &c.result) {
                (CellStatus::Skipped, _) => {
                    out.skipped = Some(c.context.notes.join("; "));
                }
                (CellStatus::Failed, _) => {
                    let why = c
                        .context
                        .failure
                        .clone()
                        .unwrap_or_else(|| "no reason was stored".into());
                    out.verdicts.push(Verdict {
                        name: "cell ran".into(),
                        limit_ns: None,
                        observed_ns: None,
                        samples: None,
                        decided: format!("failed: {why}"),
                        status: Status::Fail,
                    });
                }
                (_, Some(r)) => out.verdicts = cell_verdicts(r, &c.context),
                (CellStatus::Pending | CellStatus::Running, None) => {
                    out.skipped = Some(format!("{}: {NO_RESULT_YET}", c.status.name()));
                }
                (_, None) => {
                    let reason = "the cell stored no result".to_string();
                    out.verdicts.push(Verdict {
                        name: "cell ran".into(),
                        limit_ns: None,
                        observed_ns: None,
                        samples: None,
                        decided: reason.clone(),
                        status: Status::NotMeasured { reason },
                    });
                }
            }
            out
        })
        .collect()
}

/// The failed verdicts of `cells`, as `cell: line` (`line` alone for a
/// cell without a name).
pub fn failures(cells: &[CellVerdicts]) -> Vec<String> {
    cells
        .iter()
        .flat_map(|c| {
            c.verdicts
                .iter()
                .filter(|v| !v.status.passed())
                .map(move |v| match &c.cell {
                    Some(n) => format!("{n}: {}", v.line()),
                    None => v.line(),
                })
        })
        .collect()
}

/// The headline of a set of cells' verdicts: what the exit status says.
pub fn headline(cells: &[CellVerdicts]) -> String {
    let judged: usize = cells.iter().map(|c| c.verdicts.len()).sum();
    let failed = failures(cells).len();
    match (judged, failed) {
        (0, _) => "nothing was judged".into(),
        (n, 0) => format!("every verdict passed ({n} of {n})"),
        (n, f) => format!("{f} of {n} verdicts did not pass"),
    }
}

#[cfg(test)]
mod tests;
