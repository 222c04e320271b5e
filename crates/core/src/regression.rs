//! A run against a stored baseline run, for CI: did any figure regress
//! beyond an allowed percentage (`jitterlab report RUN --against BASE
//! --max-regression PCT`)?
//!
//! **What is compared.** Cells are matched by their key without the
//! repetition (`configuration/scenario/deployment/probe`, the name the
//! tables and `report A B` use). Per matched cell and per metric of its
//! probe, two figures: the 99th percentile and the maximum (the largest
//! value; for a signed metric such as jitter, its positive end). Of
//! several repetitions the worst completed one counts (the largest
//! figure), as a CI gate must; a failed, interrupted or skipped
//! repetition has no figure. Of several probe threads, the combined
//! figures, else the worst thread's.
//!
//! **The change** is `(run − base) ÷ |base| × 100`. A figure regressed
//! when its change is more than the allowed percentage; a base of 0 with
//! a larger run has no finite change and regressed. A figure with no
//! sample on either side is "not measured": it is neither a regression
//! nor a pass, and a comparison where no figure at all could be compared
//! passes nothing ([`Comparison::passed`] is false).
//!
//! Cells present in one run only are listed, not compared.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::cell::{CellStatus, StoredRun};
use crate::probe::descriptor::MetricUnit;
use crate::result::ProbeKind;
use crate::stats::MetricSummary;

/// Version of the JSON of a comparison.
pub const REGRESSION_SCHEMA_VERSION: u32 = 1;

/// The two figures compared per metric.
pub const FIGURES: [&str; 2] = ["p99", "max"];

/// What became of one figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Within the allowed change (or better).
    Within,
    /// Worse by more than the allowed change.
    Regressed,
    /// No sample on one side or both: not compared.
    NotMeasured,
}

impl Outcome {
    /// The word reports print.
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Within => "within",
            Outcome::Regressed => "REGRESSED",
            Outcome::NotMeasured => "not measured",
        }
    }
}

/// One figure of one metric of one cell, in both runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// The cell's key without repetition.
    pub cell: String,
    /// The metric.
    pub metric: String,
    /// `p99` or `max`.
    pub figure: &'static str,
    /// `ns` or `cycles`.
    pub unit: &'static str,
    /// The baseline run's figure; `None`: no sample.
    pub base: Option<i64>,
    /// The run's figure; `None`: no sample.
    pub run: Option<i64>,
    /// Change in % of the base; `None` when not measured, or the base is 0
    /// and the run is not.
    pub change_pct: Option<f64>,
    /// What became of it.
    pub outcome: Outcome,
    /// Why not measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A run compared with a baseline run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// [`REGRESSION_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The baseline run's id.
    pub base: i64,
    /// The compared run's id.
    pub run: i64,
    /// The allowed change, %.
    pub max_regression_pct: f64,
    /// Every figure, cell by cell in the run's order, metric by metric.
    pub rows: Vec<Row>,
    /// Cells of the base that the run does not have.
    pub only_in_base: Vec<String>,
    /// Cells of the run that the base does not have.
    pub only_in_run: Vec<String>,
    /// True when any figure regressed.
    pub regressed: bool,
}

impl Comparison {
    /// Figures compared (measured on both sides).
    pub fn compared(&self) -> usize {
        self.rows
            .iter()
            .filter(|r| r.outcome != Outcome::NotMeasured)
            .count()
    }

    /// True when at least one figure was compared and none regressed.
    pub fn passed(&self) -> bool {
        !self.regressed && self.compared() > 0
    }
}

/// `--max-regression`'s value: a finite percentage, 0 or more. The error
/// says what to give.
pub fn parse_max_regression(text: &str) -> Result<f64, String> {
    match text.trim().trim_end_matches('%').trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!(
            "--max-regression {text}: give the largest allowed increase as a percentage of the baseline, 0 or more (e.g. 10)"
        )),
    }
}

/// The worst figures of a cell's completed repetitions, per metric:
/// `(p99, max)`, each `None` without a sample.
type Figures = BTreeMap<String, [Option<i64>; 2]>;

fn figures_of(s: &MetricSummary) -> [Option<i64>; 2] {
    if s.count == 0 {
        return [None, None];
    }
    [s.p99, s.max]
}

fn worse(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

/// Per cell name (in run order): its probe and the worst figures of its
/// completed repetitions; `None` figures when none completed.
fn cells(run: &StoredRun) -> Vec<(String, String, Option<Figures>)> {
    let mut out: Vec<(String, String, Option<Figures>)> = Vec::new();
    for c in &run.cells {
        let name = c.key.name();
        let at = match out.iter().position(|(n, _, _)| *n == name) {
            Some(i) => i,
            None => {
                out.push((name, c.key.probe.clone(), None));
                out.len() - 1
            }
        };
        let Some(r) = c
            .result
            .as_ref()
            .filter(|_| c.status == CellStatus::Completed)
        else {
            continue;
        };
        let mut figs: Figures = BTreeMap::new();
        let sources: Vec<&BTreeMap<String, MetricSummary>> = match &r.combined {
            Some(m) => vec![m],
            None => r.threads.iter().map(|t| &t.metrics).collect(),
        };
        for m in sources {
            for (metric, s) in m {
                let f = figures_of(s);
                let e = figs.entry(metric.clone()).or_insert([None, None]);
                *e = [worse(e[0], f[0]), worse(e[1], f[1])];
            }
        }
        let slot = out[at].2.get_or_insert_with(BTreeMap::new);
        for (metric, f) in figs {
            let e = slot.entry(metric).or_insert([None, None]);
            *e = [worse(e[0], f[0]), worse(e[1], f[1])];
        }
    }
    out
}

/// The metrics of `probe` in its descriptor's order with their units, then
/// any other metric either side stored, by name.
fn metrics(probe: &str, a: Option<&Figures>, b: Option<&Figures>) -> Vec<(String, MetricUnit)> {
    let mut v: Vec<(String, MetricUnit)> = Vec::new();
    let stored =
        |m: &str| a.is_some_and(|f| f.contains_key(m)) || b.is_some_and(|f| f.contains_key(m));
    let kind = ProbeKind::parse(probe);
    if let Some(k) = kind {
        for d in k.metrics() {
            if stored(d.name) {
                v.push((d.name.to_string(), d.unit));
            }
        }
    }
    for f in [a, b].into_iter().flatten() {
        for m in f.keys() {
            if !v.iter().any(|(n, _)| n == m) {
                let unit = kind
                    .and_then(|k| k.metric(m))
                    .map(|d| d.unit)
                    .unwrap_or(MetricUnit::Ns);
                v.push((m.clone(), unit));
            }
        }
    }
    v
}

/// Compares `run` with `base`, allowing `max_pct` % of increase.
pub fn compare(base: &StoredRun, run: &StoredRun, max_pct: f64) -> Comparison {
    let b = cells(base);
    let r = cells(run);
    let mut rows = Vec::new();
    for (name, probe, rf) in &r {
        let Some((_, _, bf)) = b.iter().find(|(n, _, _)| n == name) else {
            continue;
        };
        let ms = metrics(probe, bf.as_ref(), rf.as_ref());
        if ms.is_empty() {
            rows.push(Row {
                cell: name.clone(),
                metric: "-".into(),
                figure: "-",
                unit: "-",
                base: None,
                run: None,
                change_pct: None,
                outcome: Outcome::NotMeasured,
                reason: Some(match (bf, rf) {
                    (None, None) => "no completed repetition in either run".into(),
                    (None, _) => "no completed repetition in the base".into(),
                    (_, None) => "no completed repetition in the run".into(),
                    _ => "no metric stored".into(),
                }),
            });
            continue;
        }
        for (metric, unit) in ms {
            let get = |f: &Option<Figures>, i: usize| f.as_ref()?.get(&metric)?[i];
            for (i, figure) in FIGURES.iter().enumerate() {
                let (bv, rv) = (get(bf, i), get(rf, i));
                let (change_pct, outcome, reason) = match (bv, rv) {
                    (Some(x), Some(y)) => {
                        let change = if x == 0 {
                            (y == 0).then_some(0.0)
                        } else {
                            Some((y - x) as f64 / x.unsigned_abs() as f64 * 100.0)
                        };
                        let regressed = match change {
                            Some(c) => c > max_pct,
                            None => true,
                        };
                        let o = if regressed {
                            Outcome::Regressed
                        } else {
                            Outcome::Within
                        };
                        (change, o, None)
                    }
                    (x, y) => {
                        let side = match (x, y) {
                            (None, None) => "either run",
                            (None, _) => "the base",
                            _ => "the run",
                        };
                        let what =
                            match (x.is_none() && bf.is_none()) || (y.is_none() && rf.is_none()) {
                                true => "no completed repetition",
                                false => "no sample",
                            };
                        (
                            None,
                            Outcome::NotMeasured,
                            Some(format!("{what} in {side}")),
                        )
                    }
                };
                rows.push(Row {
                    cell: name.clone(),
                    metric: metric.clone(),
                    figure,
                    unit: unit.name(),
                    base: bv,
                    run: rv,
                    change_pct,
                    outcome,
                    reason,
                });
            }
        }
    }
    let names = |v: &[(String, String, Option<Figures>)]| -> Vec<String> {
        v.iter().map(|(n, _, _)| n.clone()).collect()
    };
    let (bn, rn) = (names(&b), names(&r));
    let regressed = rows.iter().any(|r| r.outcome == Outcome::Regressed);
    Comparison {
        schema_version: REGRESSION_SCHEMA_VERSION,
        base: base.id,
        run: run.id,
        max_regression_pct: max_pct,
        only_in_base: bn.iter().filter(|n| !rn.contains(n)).cloned().collect(),
        only_in_run: rn.iter().filter(|n| !bn.contains(n)).cloned().collect(),
        rows,
        regressed,
    }
}

#[cfg(test)]
mod tests;
