//! What a checked spec runs: its cells in run order, their planned time and
//! the plan text `bench --dry-run` prints, and the bounds on the size of the
//! matrix (cells, window rows) checked when the spec is parsed and again
//! after the command line changed it. Apart from the checker because it
//! reads a finished [`Spec`], the answer `bench --dry-run` shows.

use toml::Spanned;

use super::check::{Check, Checker};
use super::raw::{RawProbe, RawSpec};
use super::{CellKey, CellPlan, Configuration, ProbeSpec, Spec};
use crate::limits;
use crate::units::format_duration_exact;

impl Spec {
    /// Every cell in run order; a probe limited to some scenarios
    /// ([`super::ProbeScope`]) has cells in those only.
    pub fn cells(&self) -> Vec<CellPlan> {
        let mut cells = Vec::new();
        for repetition in 0..self.repetitions {
            for (ci, c) in self.configurations.iter().enumerate() {
                for (si, s) in self.scenarios.iter().enumerate() {
                    for d in &self.deployments {
                        for (pi, p) in self.probes.iter().enumerate() {
                            if !p.scope.runs_in(&s.name) {
                                continue;
                            }
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
        self.matrix().cells()
    }

    /// The measured time of a probe's cells, ns: its own `duration`, else
    /// the spec's.
    pub fn probe_duration_ns(&self, probe: &ProbeSpec) -> u64 {
        probe.scope.duration_ns.unwrap_or(self.duration_ns)
    }

    /// The measured time of `cell`, ns ([`Spec::probe_duration_ns`] of its
    /// probe).
    pub fn cell_duration_ns(&self, cell: &CellPlan) -> u64 {
        self.probe_duration_ns(&self.probes[cell.probe])
    }

    /// Sets every cell's measured time (`bench --duration`): the spec's
    /// duration, and no probe keeps one of its own.
    pub fn set_duration(&mut self, ns: u64) {
        self.duration_ns = ns;
        for p in &mut self.probes {
            p.scope.duration_ns = None;
        }
    }

    /// Why `cell` is N/A whatever the machine, so a bench skips it and its
    /// table says why: a probe whose frames cannot fit on its wire in its
    /// period ([`ProbeSpec::wire_na`], `N/A (wire): …`).
    /// It stays a cell of the spec, so the table has its row.
    pub fn cell_na(&self, cell: &CellPlan) -> Option<String> {
        self.probes[cell.probe].wire_na()
    }

    /// The shape of the matrix, for counts and messages.
    fn matrix(&self) -> Matrix {
        Matrix::of(
            u64::from(self.repetitions),
            self.configurations.len(),
            &self.scenarios,
            self.deployments.len(),
            &self.probes,
        )
    }

    /// The bounds that depend on several values — the number of cells
    /// ([`limits::MAX_CELLS`]) and each probe's window rows
    /// ([`limits::MAX_WINDOW_ROWS`]) — checked again after the command
    /// line changed the duration or the repetitions. The message says
    /// what is too large and what to change.
    pub fn check_limits(&self) -> Result<(), String> {
        let matrix = self.matrix();
        if matrix.cells() > limits::MAX_CELLS {
            return Err(matrix.too_many());
        }
        for (i, p) in self.probes.iter().enumerate() {
            let threads = probe_threads(p, &self.configurations);
            limits::check_window_rows(self.probe_duration_ns(p), p.window_ns, threads)
                .map_err(|e| format!("probe[{i}] ({}): {e}", p.name))?;
        }
        Ok(())
    }

    /// Planned wall time: for every cell setup_ns + warmup + its measured
    /// time, plus `once_ns` (the idle calibration before the first cell).
    /// A cell that is N/A whatever the machine ([`Spec::cell_na`]) takes
    /// no time.
    pub fn planned_ns(&self, setup_ns: u64, once_ns: u64) -> u64 {
        self.cells()
            .iter()
            .filter(|c| self.cell_na(c).is_none())
            .map(|c| {
                setup_ns
                    .saturating_add(self.warmup_ns)
                    .saturating_add(self.cell_duration_ns(c))
            })
            .fold(once_ns, u64::saturating_add)
    }

    /// Human-readable plan: a header (name, cells, total time incl.
    /// warm-ups and set-up, per-cell time), the probes limited to some
    /// scenarios, one line per cell
    /// `  3/14  tuned/cpu/host/cyclic  rep 1  (warm-up 2s + 10s)`
    /// (repetitions counted from 1 here; an N/A cell says why instead of
    /// its times), then the warnings.
    pub fn plan_text(&self, setup_ns: u64, once_ns: u64) -> String {
        let cells = self.cells();
        let n = cells.len();
        let mut out = String::new();
        out.push_str(&format!("plan: {}\n", self.name));
        out.push_str(&format!(
            "  {} ({})\n",
            count(n, "cell"),
            self.matrix().words()
        ));
        let mut durations: Vec<(u64, usize)> = Vec::new();
        for c in cells.iter().filter(|c| self.cell_na(c).is_none()) {
            let d = self.cell_duration_ns(c);
            match durations.iter_mut().find(|(x, _)| *x == d) {
                Some((_, k)) => *k += 1,
                None => durations.push((d, 1)),
            }
        }
        let prefix = format!(
            "  each cell: set-up {} + warm-up {} + ",
            short(setup_ns),
            short(self.warmup_ns)
        );
        match durations.as_slice() {
            [] | [_] => {
                let d = durations.first().map_or(self.duration_ns, |d| d.0);
                let per_cell = setup_ns.saturating_add(self.warmup_ns).saturating_add(d);
                out.push_str(&format!(
                    "{prefix}{} measured = {}\n",
                    short(d),
                    wall(per_cell)
                ));
            }
            several => {
                let each: Vec<String> = several
                    .iter()
                    .map(|&(d, k)| format!("{} ({})", short(d), count(k, "cell")))
                    .collect();
                out.push_str(&format!("{prefix}measured {}\n", each.join(", ")));
            }
        }
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
        for line in self.scope_lines() {
            out.push_str(&format!("  {line}\n"));
        }
        let index_width = format!("{n}/{n}").len();
        let name_width = cells.iter().map(|c| c.key.name().len()).max().unwrap_or(0);
        for (i, c) in cells.iter().enumerate() {
            let what = match self.cell_na(c) {
                Some(why) => format!("{why}; skipped"),
                None => {
                    let d = self.cell_duration_ns(c);
                    let measured = match self.probes[c.probe].samples() {
                        Some(k) => format!("{k} samples, at most {}", short(d)),
                        None => short(d),
                    };
                    format!("warm-up {} + {measured}", short(self.warmup_ns))
                }
            };
            out.push_str(&format!(
                "  {:<iw$}  {:<nw$}  rep {}  ({what})\n",
                format!("{}/{n}", i + 1),
                c.key.name(),
                c.key.repetition + 1,
                iw = index_width,
                nw = name_width,
            ));
        }
        for w in &self.warnings {
            out.push_str(&format!("warning: {w}\n"));
        }
        out
    }

    /// One line per run of adjacent probes limited to the same scenarios:
    /// `probes a, b run in scenario idle only`, `probes load-250us-3cn …
    /// load-10ms-40cn (24) run in scenarios idle, cpu only`.
    fn scope_lines(&self) -> Vec<String> {
        let mut runs: Vec<(&[String], Vec<&str>)> = Vec::new();
        for p in &self.probes {
            let s = p.scope.scenarios.as_slice();
            match runs.last_mut() {
                Some((last, names)) if *last == s => names.push(&p.name),
                _ => runs.push((s, vec![&p.name])),
            }
        }
        runs.into_iter()
            .filter(|(s, _)| !s.is_empty())
            .map(|(s, names)| {
                let probes = match names.as_slice() {
                    [one] => format!("probe {one} runs"),
                    [a, b] => format!("probes {a}, {b} run"),
                    [a, b, c] => format!("probes {a}, {b}, {c} run"),
                    [first, .., last] => {
                        format!("probes {first} … {last} ({}) run", names.len())
                    }
                    [] => unreachable!("a run has a probe"),
                };
                let word = if s.len() == 1 {
                    "scenario"
                } else {
                    "scenarios"
                };
                format!("{probes} in {word} {} only", s.join(", "))
            })
            .collect()
    }
}

/// The shape of a matrix: its axes, and the scenario × probe pairs when
/// some probe is limited to some scenarios (then the product of the axes
/// is not the number of cells).
pub(super) struct Matrix {
    repetitions: u64,
    configurations: usize,
    scenarios: usize,
    deployments: usize,
    probes: usize,
    /// Scenario × probe pairs that have cells, when some probe is limited.
    pairs: Option<u64>,
}

impl Matrix {
    /// The matrix of a spec's axes.
    pub(super) fn of(
        repetitions: u64,
        configurations: usize,
        scenarios: &[super::Scenario],
        deployments: usize,
        probes: &[ProbeSpec],
    ) -> Matrix {
        let limited = probes.iter().any(|p| !p.scope.scenarios.is_empty());
        let pairs = limited.then(|| {
            probes
                .iter()
                .map(|p| {
                    scenarios
                        .iter()
                        .filter(|s| p.scope.runs_in(&s.name))
                        .count() as u64
                })
                .sum()
        });
        Matrix {
            repetitions,
            configurations,
            scenarios: scenarios.len(),
            deployments,
            probes: probes.len(),
            pairs,
        }
    }

    /// Its cells, saturating.
    pub(super) fn cells(&self) -> u64 {
        let pairs = self
            .pairs
            .unwrap_or_else(|| (self.scenarios as u64).saturating_mul(self.probes as u64));
        [self.configurations as u64, self.deployments as u64, pairs]
            .iter()
            .fold(self.repetitions, |n, &k| n.saturating_mul(k))
    }

    /// `1 repetition × 2 configurations × 7 scenarios × 1 deployment × 2
    /// probes`, or with limited probes `1 repetition × 1 configuration × 1
    /// deployment × 38 scenario × probe pairs of 7 scenarios × 26 probes`.
    pub(super) fn words(&self) -> String {
        let head = format!(
            "{} × {}",
            count(self.repetitions as usize, "repetition"),
            count(self.configurations, "configuration")
        );
        match self.pairs {
            None => format!(
                "{head} × {} × {} × {}",
                count(self.scenarios, "scenario"),
                count(self.deployments, "deployment"),
                count(self.probes, "probe"),
            ),
            Some(pairs) => format!(
                "{head} × {} × {} of {} × {}",
                count(self.deployments, "deployment"),
                if pairs == 1 {
                    "1 scenario × probe pair".to_string()
                } else {
                    format!("{pairs} scenario × probe pairs")
                },
                count(self.scenarios, "scenario"),
                count(self.probes, "probe"),
            ),
        }
    }

    /// The refusal of a matrix of more than [`limits::MAX_CELLS`] cells.
    pub(super) fn too_many(&self) -> String {
        format!(
            "the bench has {} cells ({}), more than {}, the most one bench runs; use fewer repetitions or split the spec",
            self.cells(),
            self.words(),
            limits::MAX_CELLS
        )
    }
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
pub(super) fn check_cells(ck: &Checker, raw: &RawSpec, matrix: &Matrix) -> Check<()> {
    if matrix.cells() <= limits::MAX_CELLS {
        return Ok(());
    }
    let message = matrix.too_many();
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
        let duration_ns = p.scope.duration_ns.unwrap_or(duration_ns);
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
pub fn short(ns: u64) -> String {
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
