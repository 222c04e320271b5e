//! What a checked spec runs: its cells in run order, their planned time and
//! the plan text `bench --dry-run` prints, and the bounds on the size of the
//! matrix (cells, window rows) checked when the spec is parsed and again
//! after the command line changed it. Apart from the checker because it
//! reads a finished [`Spec`], the answer `bench --dry-run` shows.

use toml::Spanned;

use super::check::{Check, Checker};
use super::raw::{RawProbe, RawSpec};
use super::{CellPlan, Configuration, ProbeSpec, Spec};
use crate::cell::CellKey;
use crate::limits;
use crate::units::format_duration_exact;

impl Spec {
    /// Every cell in run order.
    pub fn cells(&self) -> Vec<CellPlan> {
        let mut cells = Vec::new();
        for repetition in 0..self.repetitions {
            for (ci, c) in self.configurations.iter().enumerate() {
                for (si, s) in self.scenarios.iter().enumerate() {
                    for d in &self.deployments {
                        for (pi, p) in self.probes.iter().enumerate() {
                            cells.push(CellPlan {
                                key: CellKey {
                                    configuration: c.name.clone(),
                                    scenario: s.name.clone(),
                                    deployment: d.clone(),
                                    probe: p.name.clone(),
                                    repetition,
                                },
                                configuration: ci,
                                scenario: si,
                                probe: pi,
                            });
                        }
                    }
                }
            }
        }
        cells
    }

    /// The neighbour CPUs of a cell: its scenario's, else its
    /// configuration's.
    pub fn neighbour_cpus(&self, cell: &CellPlan) -> Vec<usize> {
        self.scenarios[cell.scenario]
            .cpus
            .clone()
            .unwrap_or_else(|| {
                self.configurations[cell.configuration]
                    .neighbour_cpus
                    .clone()
            })
    }

    /// Number of cells, without building them.
    pub fn cell_count(&self) -> u64 {
        cell_count(
            u64::from(self.repetitions),
            self.configurations.len(),
            self.scenarios.len(),
            self.deployments.len(),
            self.probes.len(),
        )
    }

    /// The bounds that depend on several values — the number of cells
    /// ([`limits::MAX_CELLS`]) and each probe's window rows
    /// ([`limits::MAX_WINDOW_ROWS`]) — checked again after the command
    /// line changed the duration or the repetitions. The message says
    /// what is too large and what to change.
    pub fn check_limits(&self) -> Result<(), String> {
        let cells = self.cell_count();
        if cells > limits::MAX_CELLS {
            return Err(too_many_cells(
                cells,
                u64::from(self.repetitions),
                self.configurations.len(),
                self.scenarios.len(),
                self.deployments.len(),
                self.probes.len(),
            ));
        }
        for (i, p) in self.probes.iter().enumerate() {
            let threads = probe_threads(p, &self.configurations);
            limits::check_window_rows(self.duration_ns, p.window_ns, threads)
                .map_err(|e| format!("probe[{i}] ({}): {e}", p.name))?;
        }
        Ok(())
    }

    /// Planned wall time: for every cell setup_ns + warmup + duration, plus
    /// `once_ns` (the idle calibration before the first cell).
    pub fn planned_ns(&self, setup_ns: u64, once_ns: u64) -> u64 {
        let per_cell = setup_ns
            .saturating_add(self.warmup_ns)
            .saturating_add(self.duration_ns);
        self.cell_count()
            .saturating_mul(per_cell)
            .saturating_add(once_ns)
    }

    /// Human-readable plan: a header (name, cells, total time incl.
    /// warm-ups and set-up, per-cell time), one line per cell
    /// `  3/14  tuned/cpu/host/cyclic  rep 1  (warm-up 2s + 10s)`
    /// (repetitions counted from 1 here), then the warnings.
    pub fn plan_text(&self, setup_ns: u64, once_ns: u64) -> String {
        let cells = self.cells();
        let n = cells.len();
        let per_cell = setup_ns
            .saturating_add(self.warmup_ns)
            .saturating_add(self.duration_ns);
        let mut out = String::new();
        out.push_str(&format!("plan: {}\n", self.name));
        out.push_str(&format!(
            "  {} ({} × {} × {} × {} × {})\n",
            count(n, "cell"),
            count(self.repetitions as usize, "repetition"),
            count(self.configurations.len(), "configuration"),
            count(self.scenarios.len(), "scenario"),
            count(self.deployments.len(), "deployment"),
            count(self.probes.len(), "probe"),
        ));
        out.push_str(&format!(
            "  each cell: set-up {} + warm-up {} + {} measured = {}\n",
            short(setup_ns),
            short(self.warmup_ns),
            short(self.duration_ns),
            wall(per_cell)
        ));
        if once_ns > 0 {
            out.push_str(&format!("  once: idle calibration {}\n", short(once_ns)));
        }
        out.push_str(&format!(
            "  total: {}\n",
            wall(self.planned_ns(setup_ns, once_ns))
        ));
        if self.probes.iter().any(|p| p.samples().is_some()) {
            out.push_str(
                "  (a chase cell with samples ends after them: the times are upper bounds)\n",
            );
        }
        let index_width = format!("{n}/{n}").len();
        let name_width = cells.iter().map(|c| c.key.name().len()).max().unwrap_or(0);
        for (i, c) in cells.iter().enumerate() {
            let measured = match self.probes[c.probe].samples() {
                Some(k) => format!("{k} samples, at most {}", short(self.duration_ns)),
                None => short(self.duration_ns),
            };
            out.push_str(&format!(
                "  {:<iw$}  {:<nw$}  rep {}  (warm-up {} + {})\n",
                format!("{}/{n}", i + 1),
                c.key.name(),
                c.key.repetition + 1,
                short(self.warmup_ns),
                measured,
                iw = index_width,
                nw = name_width,
            ));
        }
        for w in &self.warnings {
            out.push_str(&format!("warning: {w}\n"));
        }
        out
    }
}

/// Cells of a matrix, saturating.
pub(super) fn cell_count(
    repetitions: u64,
    configurations: usize,
    scenarios: usize,
    deployments: usize,
    probes: usize,
) -> u64 {
    [configurations, scenarios, deployments, probes]
        .iter()
        .fold(repetitions, |n, &k| n.saturating_mul(k as u64))
}

/// The refusal of a matrix of more than [`limits::MAX_CELLS`] cells.
pub(super) fn too_many_cells(
    cells: u64,
    repetitions: u64,
    configurations: usize,
    scenarios: usize,
    deployments: usize,
    probes: usize,
) -> String {
    format!(
        "the bench has {cells} cells ({} × {} × {} × {} × {}), more than {}, the most one bench runs; use fewer repetitions or split the spec",
        count(repetitions as usize, "repetition"),
        count(configurations, "configuration"),
        count(scenarios, "scenario"),
        count(deployments, "deployment"),
        count(probes, "probe"),
        limits::MAX_CELLS
    )
}

/// Threads a probe measures on in the widest configuration
/// ([`ProbeSpec::cpus`]: one per probe CPU for wakeup, one otherwise).
pub(super) fn probe_threads(probe: &ProbeSpec, configurations: &[Configuration]) -> u64 {
    configurations
        .iter()
        .map(|c| probe.cpus(&c.probe_cpus).len() as u64)
        .max()
        .unwrap_or(1)
}

/// Refuses a matrix of more than [`limits::MAX_CELLS`] cells, at
/// `repetitions` when the spec gives it.
pub(super) fn check_cells(
    ck: &Checker,
    raw: &RawSpec,
    repetitions: u32,
    configurations: usize,
    scenarios: usize,
    deployments: usize,
    probes: usize,
) -> Check<()> {
    let reps = u64::from(repetitions);
    let cells = cell_count(reps, configurations, scenarios, deployments, probes);
    if cells <= limits::MAX_CELLS {
        return Ok(());
    }
    let message = too_many_cells(cells, reps, configurations, scenarios, deployments, probes);
    Err(match &raw.repetitions {
        Some(v) => ck.err(v.span(), "repetitions", message),
        None => ck.err(0..0, "", message),
    })
}

/// Refuses a probe whose cells would make more than
/// [`limits::MAX_WINDOW_ROWS`] window rows, at its `window`.
pub(super) fn check_window_rows(
    ck: &Checker,
    raw: &[Spanned<RawProbe>],
    probes: &[ProbeSpec],
    configurations: &[Configuration],
    duration_ns: u64,
) -> Check<()> {
    for (i, (t, p)) in raw.iter().zip(probes).enumerate() {
        let threads = probe_threads(p, configurations);
        if let Err(e) = limits::check_window_rows(duration_ns, p.window_ns, threads) {
            let span = t.get_ref().window.as_ref().map_or(t.span(), |v| v.span());
            return Err(ck.err(span, &format!("probe[{i}].window"), e));
        }
    }
    Ok(())
}

/// `1 cell`, `3 cells`.
pub(super) fn count(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// A duration as a user would type it, with `0s` for zero.
pub(super) fn short(ns: u64) -> String {
    if ns == 0 {
        "0s".into()
    } else {
        format_duration_exact(ns)
    }
}

/// A wall-clock total, rounded up to the second: `45s`, `3m 07s`,
/// `2h 05m 00s` (sub-second totals as typed: `500ms`).
pub(super) fn wall(ns: u64) -> String {
    if ns < 1_000_000_000 {
        return short(ns);
    }
    let s = ns.div_ceil(1_000_000_000);
    let (h, m, s) = (s / 3600, (s / 60) % 60, s % 60);
    if h > 0 {
        format!("{h}h {m:02}m {s:02}s")
    } else if m > 0 {
        format!("{m}m {s:02}s")
    } else {
        format!("{s}s")
    }
}
