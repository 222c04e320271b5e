//! Bench spec files: the TOML that `jitterlab bench SPEC` runs, checked and
//! expanded into the matrix of cells before anything on the machine changes.
//!
//! A spec names the axes of an experiment — configurations (how the machine
//! and the probe are set up), scenarios (which neighbours make noise),
//! deployments (where the probe runs) and probes (what is measured) — and
//! the bench runs every combination, `repetitions` times. This module is the
//! pure part: it parses the text the caller read, validates every value
//! against the grammar of [`crate::units`] and the machine's online CPUs, and
//! answers "what will run, in which order, for how long" ([`Spec::cells`],
//! [`Spec::planned_ns`], [`Spec::plan_text`]) so `bench --dry-run` can show
//! the plan and a bad spec is refused before the first setting is written
//! (DESIGN rule 8).
//!
//! # Format
//!
//! ```toml
//! name = "codesys-table10"   # optional; default: the file stem; no control characters
//! duration = "10s"           # measured part of each cell (required), at most 7d
//! warmup = "2s"              # neighbours run alone before the probe starts; default "2s"; "0" ok
//! repetitions = 1            # default 1, 1..=1000
//! deployments = ["host"]     # default ["host"]; only "host" is accepted for now
//! baseline = "baseline"      # optional; must name a configuration; default the first
//!
//! [[configuration]]          # zero or more; none → one configuration "default" with defaults
//! name = "baseline"          # required, [A-Za-z0-9_-]+, unique
//! probe_cpus = "1"           # kernel list format; default: the last online CPU
//! neighbour_cpus = "0"       # default: online CPUs minus probe CPUs (see below)
//! policy = "fifo"            # fifo | rr | other; default fifo
//! priority = 95              # fifo/rr only, 1..=99; default 95
//! nice = 0                   # other only, -20..=19; default 0
//! dma_latency = true         # hold /dev/cpu_dma_latency at 0; default true
//! irq_cpus = "0"             # optional: move every movable IRQ to these CPUs for the cell
//! governor = "performance"   # optional: cpufreq governor of the probe CPUs for the cell
//! timer_migration = false    # optional: kernel.timer_migration for the cell
//! rt_runtime_us = -1         # optional: kernel.sched_rt_runtime_us (-1: no RT throttling)
//! min_freq = "2.4GHz"        # optional: cpufreq minimum of the probe CPUs (kHz, MHz or GHz)
//! max_freq = "2.4GHz"        # optional: cpufreq maximum of the probe CPUs
//! fair_server_runtime = "0ns" # optional: fair deadline server runtime of the probe CPUs
//!
//! [[scenario]]               # zero or more; none → one scenario "idle" (builtin idle)
//! name = "stress"            # required, [A-Za-z0-9_-]+, unique
//! builtin = "codesys"        # optional: one of the built-in loads the caller knows
//! cpus = "0"                 # optional: neighbour CPUs, overriding the configuration's
//! usb_path = "/media/usb"    # optional, only with builtin = "usb"
//! rps_cpus = "1"             # optional, only with builtin = "network"; default: the probe CPUs
//! [[scenario.neighbour]]     # up to 64 extra commands, started without a shell
//! name = "my-load"           # optional; default: argv[0]'s file name; unique in the scenario
//! command = ["stress-ng", "--cpu", "1"]   # non-empty argument vector
//! cpus = "0"                 # optional; default: the scenario's / configuration's neighbour CPUs
//!
//! [[probe]]                  # one or more (required)
//! kind = "cyclic"            # cyclic | wakeup | chase | ctxswitch | response | timerlat
//! name = "cyclic"            # optional, default = kind; unique
//! period = "1ms"             # cyclic: period; wakeup: interval; response: event
//!                            # interval; timerlat: timer period; default 1ms;
//!                            # at least 10us
//! scan = "100us"             # cyclic only; default 100us; must be < period
//! working_set = "256KiB"     # cyclic only; default 256KiB; at most 4GiB
//! buffer = "1MiB"            # chase only; default: half the cache shared with the neighbours;
//!                            # at most 4GiB
//! iterations = 100           # chase only: timed chases per sample; default 100, 1..=1000000
//! samples = 200              # chase only: the cell ends after this many samples
//!                            # (or at duration, if sooner); default: as many as
//!                            # fit in duration; 1..=1048576
//! source = "eventfd"         # response only: eventfd | udp; default eventfd
//! event_cpu = "0"            # response only: where events are made; default: the
//!                            # first neighbour CPU
//! threshold = "100us"        # optional, for % over threshold
//! window = "1s"              # default 1s; at least 1ms
//! outliers = 10              # default 10, 0..=10000
//! max_latency = "200us"      # optional limits: a cell above any → bench exits 1
//!                            # (event probes: on the main metric — handover,
//!                            # response, irq)
//! max_jitter = "100us"       # cyclic and wakeup only
//! max_exec = "1ms"           # cyclic only
//! ```
//!
//! Times go through [`parse_duration`], sizes through [`parse_size`], CPU
//! lists through [`CpuList::parse`]; every CPU named must be online.
//!
//! Every size, count and time is bounded by the same constants of
//! [`crate::limits`] as the command line's flags, with the same words: a
//! time is at most 7d, a working set or buffer at most 4GiB (and, checked
//! by the bench against the machine, half its memory), and the matrix at
//! most 10 000 cells, each probe's cells at most a million window rows
//! (`duration ÷ window × threads`). [`Spec::check_limits`] checks the
//! bounds that involve several keys again after the command line changed
//! the duration or the repetitions.
//!
//! Frequencies (`min_freq`, `max_freq`) are a decimal number and one of the
//! units `kHz`, `MHz`, `GHz` (case does not matter: no one means
//! millihertz), converted exactly into kHz, the unit of cpufreq's
//! `scaling_min_freq` and `scaling_max_freq`: `2.4GHz` is 2 400 000 kHz,
//! `1.5kHz` is an error. A minimum above the maximum is refused; whether
//! the CPU can run at them is checked against the machine before the bench
//! starts. `fair_server_runtime` is a time (`0ns` turns the fair deadline
//! server of kernels since 6.12 off on the probe CPUs, `40ms` shortens it);
//! when given, it replaces the runtime of 0 that `rt_runtime_us = -1` sets
//! on those CPUs otherwise.
//!
//! # CPU roles
//!
//! Only the probe CPUs need to be exclusive, and they are: a cell runs one
//! probe. Neighbours never land on a probe CPU by default — the default
//! neighbour CPUs are the online CPUs minus the probe CPUs — except on a
//! machine where that leaves nothing (one CPU), where they share the probe
//! CPUs and the plan carries a warning. A spec may put neighbours on probe
//! CPUs on purpose (`neighbour_cpus`, a scenario's `cpus` or a neighbour's
//! `cpus` naming a probe CPU: some documented loads deliberately hit the
//! measured core); that is a warning in the plan, not an error.
//!
//! # Cache allocation
//!
//! A configuration may partition the caches through resctrl (seed 000's
//! Configuration 3, seed 002's resctrl steps; [`crate::resctrl`] has the
//! rules):
//!
//! ```toml
//! [[configuration.cache]]        # one resctrl group; zero or more
//! group = "rt"                   # required, [A-Za-z0-9_-]+, unique; never a path
//! cpus = "1"                     # required: the CPUs that allocate with its masks
//! l3 = { ways = "6-7" }          # or { mask = "0xc0" }; optional ids = [0] (default: every id)
//! # l2, l3code, l3data, l2code, l2data: the same shape (CDP halves when mounted with -o cdp)
//! mb = 50                        # optional: memory bandwidth percent, 1..=100
//! exclusive = true               # optional: no other group may use its ways
//!
//! [configuration.cache_default]  # optional: shrink the default group
//! l3 = { ways = "0-5" }          # same keys as a group's, without group, cpus, exclusive
//! ```
//!
//! The parser checks what needs no machine (names, way lists, hex masks,
//! ids, online CPUs, a CPU in one group only, `l3` beside `l3code`); the
//! masks are checked against the machine's `cbm_mask`, `min_cbm_bits`,
//! `sparse_masks` and `num_closids` when the configuration is validated on
//! it, before anything is written.
//!
//! # Errors
//!
//! Every error is one line, `FILE:LINE: KEY: MESSAGE`, where KEY is the
//! dotted TOML path with 0-based array indexes
//! (`bench.toml:7: configuration[1].probe_cpus: CPU 9 is not online (online
//! CPUs: 0-1)`). Lines come from the spans the TOML parser records: the
//! value's own line for a bad value, the table header's for a key missing
//! from a table, line 1 for a key missing from the top level. Syntax errors
//! have no key (`FILE:LINE: MESSAGE`). Only the first error is reported.
//!
//! # Run order
//!
//! [`Spec::cells`] nests repetition (outermost), configuration, scenario,
//! deployment, probe (innermost): repetitions outermost so slow drift of the
//! machine (temperature, background jobs) spreads over every cell alike
//! instead of biasing the cells measured last.

use std::fmt;
use std::ops::Range;

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::cell::CellKey;
use crate::limits::{self, Count};
use crate::resctrl::{
    check_group_name, parse_mask, parse_ways, CacheDefault, CacheGroup, CacheMask, Resource,
};
use crate::result::ProbeKind;
use crate::units::{format_duration_exact, parse_duration, parse_size, CpuList};

/// What a spec is checked against: facts about the machine and the caller.
#[derive(Debug, Clone, Copy)]
pub struct SpecContext<'a> {
    /// The machine's online CPUs; every CPU a spec names must be one.
    pub online: &'a CpuList,
    /// The names of the built-in scenarios the caller can run (`idle`,
    /// `cpu`, `codesys` …); `builtin = NAME` must be one of them.
    pub builtins: &'a [&'a str],
}

/// A refused spec: where and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError {
    /// The file name as the caller gave it.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// Dotted TOML path with 0-based indexes (`configuration[1].probe_cpus`),
    /// empty when the error is not about one key (a syntax error).
    pub key: String,
    /// What is wrong and what would be right.
    pub message: String,
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            write!(f, "{}:{}: {}", self.file, self.line, self.message)
        } else {
            write!(
                f,
                "{}:{}: {}: {}",
                self.file, self.line, self.key, self.message
            )
        }
    }
}

impl std::error::Error for SpecError {}

/// A checked spec with every default filled in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spec {
    /// The spec's name (the file stem unless given).
    pub name: String,
    /// Measured part of each cell, ns.
    pub duration_ns: u64,
    /// Neighbours-only time before the probe starts, ns.
    pub warmup_ns: u64,
    /// How many times the whole matrix runs.
    pub repetitions: u32,
    /// Where the probe runs (`host`).
    pub deployments: Vec<String>,
    /// The configuration relative figures are computed against.
    pub baseline: String,
    /// Configurations in spec order.
    pub configurations: Vec<Configuration>,
    /// Scenarios in spec order.
    pub scenarios: Vec<Scenario>,
    /// Probes in spec order.
    pub probes: Vec<ProbeSpec>,
    /// Things the plan should say out loud (neighbours sharing probe CPUs).
    pub warnings: Vec<String>,
}

/// Scheduling policy of the probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// SCHED_FIFO.
    Fifo,
    /// SCHED_RR.
    Rr,
    /// SCHED_OTHER.
    Other,
}

impl Policy {
    /// The name in spec files: `fifo`, `rr`, `other`.
    pub fn name(self) -> &'static str {
        match self {
            Policy::Fifo => "fifo",
            Policy::Rr => "rr",
            Policy::Other => "other",
        }
    }
}

/// One configuration: how the probe is placed and scheduled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Configuration {
    /// Name, `[A-Za-z0-9_-]+`.
    pub name: String,
    /// CPUs the probe runs on.
    pub probe_cpus: Vec<usize>,
    /// CPUs neighbours run on unless a scenario says otherwise.
    pub neighbour_cpus: Vec<usize>,
    /// Probe scheduling policy.
    pub policy: Policy,
    /// Real-time priority (fifo/rr), `None` for other.
    pub priority: Option<i32>,
    /// Nice value (other), `None` for fifo/rr.
    pub nice: Option<i32>,
    /// Whether `/dev/cpu_dma_latency` is held at 0.
    pub dma_latency: bool,
    /// The machine settings the configuration changes for its cells.
    #[serde(default)]
    pub settings: ConfigSettings,
}

/// The reversible machine settings of a configuration (all optional: what
/// is not named is left as it is). Applied before a cell's neighbours
/// start, verified, and restored after the cell.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ConfigSettings {
    /// resctrl groups to create (`[[configuration.cache]]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cache: Vec<CacheGroup>,
    /// How to shrink the default resctrl group (`[configuration.cache_default]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_default: Option<CacheDefault>,
    /// Move every movable IRQ (and the default affinity) to these CPUs.
    pub irq_cpus: Option<Vec<usize>>,
    /// cpufreq governor of the probe CPUs.
    pub governor: Option<String>,
    /// `kernel.timer_migration`.
    pub timer_migration: Option<bool>,
    /// `kernel.sched_rt_runtime_us` (`-1`: RT throttling off).
    pub rt_runtime_us: Option<i64>,
    /// cpufreq minimum frequency of the probe CPUs, kHz (`min_freq`).
    #[serde(default)]
    pub min_freq_khz: Option<u64>,
    /// cpufreq maximum frequency of the probe CPUs, kHz (`max_freq`).
    #[serde(default)]
    pub max_freq_khz: Option<u64>,
    /// Runtime of the fair deadline server on the probe CPUs, ns
    /// (`fair_server_runtime`).
    #[serde(default)]
    pub fair_server_runtime_ns: Option<u64>,
}

impl ConfigSettings {
    /// True when the configuration changes nothing on the machine.
    pub fn is_empty(&self) -> bool {
        *self == ConfigSettings::default()
    }
}

/// One scenario: the neighbours that run beside the probe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Scenario {
    /// Name, `[A-Za-z0-9_-]+`.
    pub name: String,
    /// A built-in load by name.
    pub builtin: Option<String>,
    /// Neighbour CPUs for this scenario, overriding the configuration's.
    pub cpus: Option<Vec<usize>>,
    /// Where the `usb` builtin writes.
    pub usb_path: Option<String>,
    /// Where the `network` builtin steers receive processing (RPS); `None`
    /// means the probe CPUs.
    pub rps_cpus: Option<Vec<usize>>,
    /// Extra commands.
    pub neighbours: Vec<CommandSpec>,
}

/// A neighbour given as a command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandSpec {
    /// Name within the scenario.
    pub name: String,
    /// Argument vector, started without a shell.
    pub argv: Vec<String>,
    /// CPUs to pin it to; `None` means the scenario's / configuration's.
    pub cpus: Option<Vec<usize>>,
}

/// One probe and its parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeSpec {
    /// Name, unique in the spec.
    pub name: String,
    /// Which probe.
    pub kind: ProbeKind,
    /// Period (cyclic) or interval (wakeup), ns.
    pub period_ns: u64,
    /// Scan (busy work per cycle), ns; 0 for wakeup.
    pub scan_ns: u64,
    /// Working set the scan touches, bytes; 0 for wakeup.
    pub working_set_bytes: u64,
    /// Threshold for "% over threshold", ns.
    pub threshold_ns: Option<u64>,
    /// Window length, ns.
    pub window_ns: u64,
    /// How many worst samples to keep.
    pub outliers: usize,
    /// Limit on the maximum latency, ns.
    pub max_latency_ns: Option<u64>,
    /// Limit on the maximum absolute jitter, ns.
    pub max_jitter_ns: Option<u64>,
    /// Limit on the maximum execution time, ns (cyclic only).
    pub max_exec_ns: Option<u64>,
    /// Chase buffer, bytes (chase only; `None`: from the cache topology).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffer_bytes: Option<u64>,
    /// Timed chases per sample (chase only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterations: Option<u64>,
    /// Samples after which a chase cell ends (chase only; `None`: as many
    /// as fit in the duration, which stays the cap either way).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<u64>,
    /// Event source, `eventfd` or `udp` (response only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// CPU the events are made on (response only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_cpu: Option<usize>,
}

/// One cell of the matrix, in run order: repetition (outermost),
/// configuration, scenario, deployment, probe (innermost) — repetitions
/// outermost so slow drift of the machine spreads over every cell alike.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CellPlan {
    /// The cell's names and repetition.
    pub key: CellKey,
    /// Index into [`Spec::configurations`].
    pub configuration: usize,
    /// Index into [`Spec::scenarios`].
    pub scenario: usize,
    /// Index into [`Spec::probes`].
    pub probe: usize,
}

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
            let threads = probe_threads(p.kind, &self.configurations);
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
        if self.probes.iter().any(|p| p.samples.is_some()) {
            out.push_str(
                "  (a chase cell with samples ends after them: the times are upper bounds)\n",
            );
        }
        let index_width = format!("{n}/{n}").len();
        let name_width = cells.iter().map(|c| c.key.name().len()).max().unwrap_or(0);
        for (i, c) in cells.iter().enumerate() {
            let measured = match self.probes[c.probe].samples {
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
fn cell_count(
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
fn too_many_cells(
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

/// Threads a probe of `kind` measures on in the widest configuration: one
/// per probe CPU for wakeup, one otherwise (see the bench's cell plan).
fn probe_threads(kind: ProbeKind, configurations: &[Configuration]) -> u64 {
    match kind {
        ProbeKind::Wakeup => configurations
            .iter()
            .map(|c| c.probe_cpus.len() as u64)
            .max()
            .unwrap_or(1),
        _ => 1,
    }
}

/// Refuses a matrix of more than [`limits::MAX_CELLS`] cells, at
/// `repetitions` when the spec gives it.
fn check_cells(
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
fn check_window_rows(
    ck: &Checker,
    raw: &[Spanned<RawProbe>],
    probes: &[ProbeSpec],
    configurations: &[Configuration],
    duration_ns: u64,
) -> Check<()> {
    for (i, (t, p)) in raw.iter().zip(probes).enumerate() {
        let threads = probe_threads(p.kind, configurations);
        if let Err(e) = limits::check_window_rows(duration_ns, p.window_ns, threads) {
            let span = t.get_ref().window.as_ref().map_or(t.span(), |v| v.span());
            return Err(ck.err(span, &format!("probe[{i}].window"), e));
        }
    }
    Ok(())
}

/// `1 cell`, `3 cells`.
fn count(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// A duration as a user would type it, with `0s` for zero.
fn short(ns: u64) -> String {
    if ns == 0 {
        "0s".into()
    } else {
        format_duration_exact(ns)
    }
}

/// A wall-clock total, rounded up to the second: `45s`, `3m 07s`,
/// `2h 05m 00s` (sub-second totals as typed: `500ms`).
fn wall(ns: u64) -> String {
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

// ---------------------------------------------------------------------------
// The file as written: every value keeps its span for error lines.

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    name: Option<Spanned<String>>,
    duration: Option<Spanned<String>>,
    warmup: Option<Spanned<String>>,
    repetitions: Option<Spanned<i64>>,
    deployments: Option<Spanned<Vec<Spanned<String>>>>,
    baseline: Option<Spanned<String>>,
    #[serde(default)]
    configuration: Vec<Spanned<RawConfiguration>>,
    #[serde(default)]
    scenario: Vec<Spanned<RawScenario>>,
    #[serde(default)]
    probe: Vec<Spanned<RawProbe>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfiguration {
    name: Option<Spanned<String>>,
    probe_cpus: Option<Spanned<String>>,
    neighbour_cpus: Option<Spanned<String>>,
    policy: Option<Spanned<String>>,
    priority: Option<Spanned<i64>>,
    nice: Option<Spanned<i64>>,
    dma_latency: Option<Spanned<bool>>,
    #[serde(default)]
    cache: Vec<Spanned<RawCacheGroup>>,
    cache_default: Option<Spanned<RawCacheDefault>>,
    irq_cpus: Option<Spanned<String>>,
    governor: Option<Spanned<String>>,
    timer_migration: Option<Spanned<bool>>,
    rt_runtime_us: Option<Spanned<i64>>,
    min_freq: Option<Spanned<String>>,
    max_freq: Option<Spanned<String>>,
    fair_server_runtime: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCacheGroup {
    group: Option<Spanned<String>>,
    cpus: Option<Spanned<String>>,
    l3: Option<Spanned<RawWays>>,
    l3code: Option<Spanned<RawWays>>,
    l3data: Option<Spanned<RawWays>>,
    l2: Option<Spanned<RawWays>>,
    l2code: Option<Spanned<RawWays>>,
    l2data: Option<Spanned<RawWays>>,
    mb: Option<Spanned<i64>>,
    exclusive: Option<Spanned<bool>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCacheDefault {
    l3: Option<Spanned<RawWays>>,
    l3code: Option<Spanned<RawWays>>,
    l3data: Option<Spanned<RawWays>>,
    l2: Option<Spanned<RawWays>>,
    l2code: Option<Spanned<RawWays>>,
    l2data: Option<Spanned<RawWays>>,
    mb: Option<Spanned<i64>>,
}

/// The cache keys of a group's table, by resource.
type RawMasks<'a> = [(Resource, &'a Option<Spanned<RawWays>>); 6];

impl RawCacheGroup {
    fn masks(&self) -> RawMasks<'_> {
        [
            (Resource::L3, &self.l3),
            (Resource::L3Code, &self.l3code),
            (Resource::L3Data, &self.l3data),
            (Resource::L2, &self.l2),
            (Resource::L2Code, &self.l2code),
            (Resource::L2Data, &self.l2data),
        ]
    }
}

impl RawCacheDefault {
    fn masks(&self) -> RawMasks<'_> {
        [
            (Resource::L3, &self.l3),
            (Resource::L3Code, &self.l3code),
            (Resource::L3Data, &self.l3data),
            (Resource::L2, &self.l2),
            (Resource::L2Code, &self.l2code),
            (Resource::L2Data, &self.l2data),
        ]
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWays {
    ways: Option<Spanned<String>>,
    mask: Option<Spanned<String>>,
    ids: Option<Spanned<Vec<Spanned<i64>>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    name: Option<Spanned<String>>,
    builtin: Option<Spanned<String>>,
    cpus: Option<Spanned<String>>,
    usb_path: Option<Spanned<String>>,
    rps_cpus: Option<Spanned<String>>,
    #[serde(default)]
    neighbour: Vec<Spanned<RawNeighbour>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNeighbour {
    name: Option<Spanned<String>>,
    command: Option<Spanned<Vec<Spanned<String>>>>,
    cpus: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProbe {
    kind: Option<Spanned<String>>,
    name: Option<Spanned<String>>,
    period: Option<Spanned<String>>,
    scan: Option<Spanned<String>>,
    working_set: Option<Spanned<String>>,
    threshold: Option<Spanned<String>>,
    window: Option<Spanned<String>>,
    outliers: Option<Spanned<i64>>,
    max_latency: Option<Spanned<String>>,
    max_jitter: Option<Spanned<String>>,
    max_exec: Option<Spanned<String>>,
    buffer: Option<Spanned<String>>,
    iterations: Option<Spanned<i64>>,
    samples: Option<Spanned<i64>>,
    source: Option<Spanned<String>>,
    event_cpu: Option<Spanned<String>>,
}

// ---------------------------------------------------------------------------
// Checking.

/// Where errors point: the file name and the text the spans index.
struct Checker<'a> {
    file: &'a str,
    text: &'a str,
    ctx: &'a SpecContext<'a>,
    warnings: Vec<String>,
}

type Check<T> = Result<T, SpecError>;

impl<'a> Checker<'a> {
    fn line(&self, offset: usize) -> usize {
        let end = offset.min(self.text.len());
        self.text.as_bytes()[..end]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1
    }

    fn err(&self, span: Range<usize>, key: &str, message: impl Into<String>) -> SpecError {
        SpecError {
            file: self.file.to_string(),
            line: self.line(span.start),
            key: key.to_string(),
            message: message.into(),
        }
    }

    /// A time, at most [`limits::MAX_TIME_NS`].
    fn duration(&self, v: &Spanned<String>, key: &str) -> Check<u64> {
        let ns = parse_duration(v.get_ref()).map_err(|e| self.err(v.span(), key, e.to_string()))?;
        limits::check_time(ns).map_err(|e| self.err(v.span(), key, e))
    }

    /// A count within `bound` (see [`crate::limits`]).
    fn count(&self, v: &Spanned<i64>, key: &str, bound: &Count) -> Check<u64> {
        bound
            .check_signed(*v.get_ref())
            .map_err(|e| self.err(v.span(), key, e))
    }

    /// A working set or buffer: the size grammar, at most
    /// [`limits::MAX_MEMORY_BYTES`].
    fn memory(&self, v: &Spanned<String>, key: &str) -> Check<u64> {
        let b = parse_size(v.get_ref()).map_err(|e| self.err(v.span(), key, e.to_string()))?;
        limits::check_memory(b).map_err(|e| self.err(v.span(), key, e))
    }

    fn positive_duration(&self, v: &Spanned<String>, key: &str, what: &str) -> Check<u64> {
        let ns = self.duration(v, key)?;
        if ns == 0 {
            return Err(self.err(v.span(), key, format!("{what} must be longer than 0")));
        }
        Ok(ns)
    }

    fn opt_duration(&self, v: &Option<Spanned<String>>, key: &str) -> Check<Option<u64>> {
        v.as_ref().map(|v| self.duration(v, key)).transpose()
    }

    /// A CPU list whose CPUs are all online; `None` when it is empty.
    fn cpus(&self, v: &Spanned<String>, key: &str) -> Check<Option<Vec<usize>>> {
        let list =
            CpuList::parse(v.get_ref()).map_err(|e| self.err(v.span(), key, e.to_string()))?;
        let offline: CpuList = list
            .iter()
            .filter(|&c| !self.ctx.online.contains(c))
            .collect();
        if !offline.is_empty() {
            let msg = if offline.len() == 1 {
                format!("CPU {offline} is not online")
            } else {
                format!("CPUs {offline} are not online")
            };
            return Err(self.err(
                v.span(),
                key,
                format!("{msg} (online CPUs: {})", self.ctx.online),
            ));
        }
        Ok((!list.is_empty()).then(|| list.iter().collect()))
    }

    /// A CPU list that must name at least one CPU.
    fn nonempty_cpus(&self, v: &Spanned<String>, key: &str, what: &str) -> Check<Vec<usize>> {
        self.cpus(v, key)?.ok_or_else(|| {
            self.err(
                v.span(),
                key,
                format!(
                    "{what} CPU list is empty; name at least one online CPU (online CPUs: {})",
                    self.ctx.online
                ),
            )
        })
    }

    fn name(&self, v: &Spanned<String>, key: &str) -> Check<String> {
        let s = v.get_ref();
        if s.is_empty() {
            return Err(self.err(
                v.span(),
                key,
                "name is empty; use ASCII letters, digits, _ and -",
            ));
        }
        if !s
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(self.err(
                v.span(),
                key,
                format!(
                    "name {s:?} may use only ASCII letters, digits, _ and - (it becomes part of cell names like tuned/cpu/host/cyclic)"
                ),
            ));
        }
        Ok(s.clone())
    }

    /// Refuses `name` when an earlier entry of the same array (`array`,
    /// e.g. `configuration`, whose names are `used`) already has it.
    fn unique<'n>(
        &self,
        name: &str,
        span: Range<usize>,
        key: &str,
        mut used: impl Iterator<Item = &'n str>,
        array: &str,
        what: &str,
    ) -> Check<()> {
        match used.position(|u| u == name) {
            Some(j) => Err(self.err(
                span,
                key,
                format!(
                    "name {name:?} is already used by {array}[{j}]; give each {what} its own name"
                ),
            )),
            None => Ok(()),
        }
    }

    /// The `name` of a table that must have one (`example` shows one).
    fn required_name(
        &self,
        v: &Option<Spanned<String>>,
        table: Range<usize>,
        key: &str,
        what: &str,
        example: &str,
    ) -> Check<String> {
        match v {
            Some(v) => self.name(v, key),
            None => Err(self.err(
                table,
                key,
                format!("missing; every {what} needs a name, e.g. name = \"{example}\""),
            )),
        }
    }

    /// A frequency in kHz (see the module doc), above 0.
    fn khz(&self, v: &Spanned<String>, key: &str) -> Check<u64> {
        parse_khz(v.get_ref()).map_err(|m| self.err(v.span(), key, m))
    }

    fn int(&self, v: &Spanned<i64>, key: &str, lo: i64, hi: i64) -> Check<i64> {
        let n = *v.get_ref();
        if n < lo || n > hi {
            return Err(self.err(v.span(), key, format!("{n} is out of range {lo}..={hi}")));
        }
        Ok(n)
    }

    /// Warns when `cpus`, given explicitly as `who: key = "…"`, put
    /// neighbours on probe CPUs of any configuration.
    fn warn_overlap(&mut self, who: &str, cpus: &[usize], configurations: &[Configuration]) {
        let given: CpuList = cpus.iter().copied().collect();
        for c in configurations {
            let shared: CpuList = c
                .probe_cpus
                .iter()
                .copied()
                .filter(|&p| given.contains(p))
                .collect();
            if !shared.is_empty() {
                self.warnings.push(format!(
                    "{who} = \"{given}\" puts neighbours on probe {} of configuration {}; they compete with the probe directly",
                    cpu_words(&shared),
                    c.name
                ));
            }
        }
    }
}

/// Parses a frequency (`800MHz`, `2.4GHz`, `3600000kHz`) exactly into kHz;
/// the error message names what to write instead.
fn parse_khz(text: &str) -> Result<u64, String> {
    let t = text.trim();
    if t.is_empty() {
        return Err("empty frequency; give a number with a unit, e.g. 2.4GHz".into());
    }
    if t.starts_with('-') {
        return Err(format!("{t:?} is negative; give a frequency above 0"));
    }
    let end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(end);
    if num.is_empty() || num == "." || num.matches('.').count() > 1 {
        return Err(format!("{t:?} is not a frequency (e.g. 800MHz, 2.4GHz)"));
    }
    let scale: u128 = match unit.trim().to_ascii_lowercase().as_str() {
        "khz" => 1,
        "mhz" => 1_000,
        "ghz" => 1_000_000,
        "" => {
            return Err(format!(
                "{t:?} has no unit; add kHz, MHz or GHz (e.g. {t}MHz)"
            ))
        }
        _ => {
            return Err(format!(
                "{t:?} has unknown unit {:?}; use kHz, MHz or GHz",
                unit.trim()
            ))
        }
    };
    let too_large = || format!("{t:?} is too large");
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    let int: u128 = if int.is_empty() {
        0
    } else {
        int.parse().map_err(|_| too_large())?
    };
    let mut khz = int.checked_mul(scale).ok_or_else(too_large)?;
    if !frac.is_empty() {
        let too_fine = || format!("{t:?} is finer than 1 kHz, the resolution of cpufreq");
        // Up to 30 digits: 10^30 times the largest scale still fits in u128.
        if frac.len() > 30 {
            return Err(too_fine());
        }
        let denom = 10u128.pow(frac.len() as u32);
        let scaled = frac.parse::<u128>().map_err(|_| too_fine())? * scale;
        if !scaled.is_multiple_of(denom) {
            return Err(too_fine());
        }
        khz += scaled / denom;
    }
    match u64::try_from(khz) {
        Ok(0) => Err(format!("{t:?} is zero; give a frequency above 0")),
        Ok(khz) => Ok(khz),
        Err(_) => Err(too_large()),
    }
}

/// `CPU 1` or `CPUs 0-1`.
fn cpu_words(list: &CpuList) -> String {
    if list.len() == 1 {
        format!("CPU {list}")
    } else {
        format!("CPUs {list}")
    }
}

/// Parses and checks a spec. `file` names the file in errors (and gives the
/// default name, its stem); the caller reads the text.
pub fn parse(text: &str, file: &str, ctx: &SpecContext) -> Result<Spec, SpecError> {
    let mut ck = Checker {
        file,
        text,
        ctx,
        warnings: Vec::new(),
    };
    let raw: RawSpec = toml::from_str(text).map_err(|e| serde_error(&ck, &e))?;
    let top = 0..0;

    let name = match &raw.name {
        Some(v) if v.get_ref().trim().is_empty() => {
            return Err(ck.err(
                v.span(),
                "name",
                "name is empty; leave the key out to use the file name",
            ))
        }
        Some(v) if v.get_ref().chars().any(char::is_control) => {
            return Err(ck.err(
                v.span(),
                "name",
                format!(
                    "name {:?} holds control characters; use printable text (it is printed by runs and report)",
                    v.get_ref()
                ),
            ))
        }
        Some(v) => v.get_ref().clone(),
        None => file_stem(file),
    };
    let duration_ns = match &raw.duration {
        Some(v) => ck.positive_duration(v, "duration", "duration")?,
        None => {
            return Err(ck.err(
                top,
                "duration",
                "missing; give the measured time of each cell, e.g. duration = \"10s\"",
            ))
        }
    };
    let warmup_ns = match &raw.warmup {
        Some(v) => ck.duration(v, "warmup")?,
        None => 2_000_000_000,
    };
    let repetitions = match &raw.repetitions {
        Some(v) => ck.count(v, "repetitions", &limits::REPETITIONS)? as u32,
        None => 1,
    };
    let deployments = deployments(&ck, &raw.deployments)?;

    let configurations = configurations(&mut ck, &raw.configuration)?;
    let scenarios = scenarios(&mut ck, &raw.scenario, &configurations)?;
    let probes = probes(&ck, &raw.probe)?;

    check_cells(
        &ck,
        &raw,
        repetitions,
        configurations.len(),
        scenarios.len(),
        deployments.len(),
        probes.len(),
    )?;
    check_window_rows(&ck, &raw.probe, &probes, &configurations, duration_ns)?;

    let baseline = match &raw.baseline {
        Some(v) => {
            if !configurations.iter().any(|c| &c.name == v.get_ref()) {
                let names: Vec<&str> = configurations.iter().map(|c| c.name.as_str()).collect();
                return Err(ck.err(
                    v.span(),
                    "baseline",
                    format!(
                        "{:?} names no configuration (configurations: {})",
                        v.get_ref(),
                        names.join(", ")
                    ),
                ));
            }
            v.get_ref().clone()
        }
        None => configurations[0].name.clone(),
    };

    Ok(Spec {
        name,
        duration_ns,
        warmup_ns,
        repetitions,
        deployments,
        baseline,
        configurations,
        scenarios,
        probes,
        warnings: ck.warnings,
    })
}

/// The file name without directory and extension (`bench` for
/// `specs/bench.toml`).
fn file_stem(file: &str) -> String {
    std::path::Path::new(file)
        .file_stem()
        .and_then(|s| s.to_str())
        .filter(|s| !s.is_empty())
        .unwrap_or("bench")
        .to_string()
}

fn deployments(ck: &Checker, raw: &Option<Spanned<Vec<Spanned<String>>>>) -> Check<Vec<String>> {
    let Some(list) = raw else {
        return Ok(vec!["host".to_string()]);
    };
    if list.get_ref().is_empty() {
        return Err(ck.err(
            list.span(),
            "deployments",
            "no deployment listed; give deployments = [\"host\"] or leave the key out",
        ));
    }
    let mut out: Vec<String> = Vec::new();
    for (i, d) in list.get_ref().iter().enumerate() {
        let key = format!("deployments[{i}]");
        match d.get_ref().as_str() {
            "host" => {}
            "container" => {
                return Err(ck.err(
                    d.span(),
                    &key,
                    "deployment container is not supported yet; use host",
                ))
            }
            other => {
                return Err(ck.err(
                    d.span(),
                    &key,
                    format!("unknown deployment {other:?}; use host"),
                ))
            }
        }
        if out.contains(d.get_ref()) {
            return Err(ck.err(
                d.span(),
                &key,
                format!("deployment {} is listed twice", d.get_ref()),
            ));
        }
        out.push(d.get_ref().clone());
    }
    Ok(out)
}

fn configurations(
    ck: &mut Checker,
    raw: &[Spanned<RawConfiguration>],
) -> Check<Vec<Configuration>> {
    let online: Vec<usize> = ck.ctx.online.iter().collect();
    let Some(&last) = online.last() else {
        return Err(ck.err(0..0, "", "no online CPU is known; cannot place the probe"));
    };
    if raw.is_empty() {
        let probe_cpus = vec![last];
        let mut neighbour_cpus: Vec<usize> =
            online.iter().copied().filter(|&c| c != last).collect();
        if neighbour_cpus.is_empty() {
            neighbour_cpus = probe_cpus.clone();
            ck.warnings.push(alone_warning("default", &probe_cpus));
        }
        return Ok(vec![Configuration {
            name: "default".into(),
            probe_cpus,
            neighbour_cpus,
            policy: Policy::Fifo,
            priority: Some(95),
            nice: None,
            dma_latency: true,
            settings: ConfigSettings::default(),
        }]);
    }
    let mut out: Vec<Configuration> = Vec::new();
    for (i, t) in raw.iter().enumerate() {
        let p = format!("configuration[{i}]");
        let k = |key: &str| format!("{p}.{key}");
        let c = t.get_ref();
        let name = ck.required_name(&c.name, t.span(), &k("name"), "configuration", "tuned")?;
        let span = c.name.as_ref().expect("checked above").span();
        let used = out.iter().map(|o| o.name.as_str());
        ck.unique(
            &name,
            span,
            &k("name"),
            used,
            "configuration",
            "configuration",
        )?;
        let probe_cpus = match &c.probe_cpus {
            Some(v) => ck.nonempty_cpus(v, &k("probe_cpus"), "probe")?,
            None => vec![last],
        };
        let neighbour_cpus = match &c.neighbour_cpus {
            Some(v) => {
                let cpus = ck.nonempty_cpus(v, &k("neighbour_cpus"), "neighbour")?;
                let given: CpuList = cpus.iter().copied().collect();
                let shared: CpuList = probe_cpus
                    .iter()
                    .copied()
                    .filter(|&p| given.contains(p))
                    .collect();
                if !shared.is_empty() {
                    ck.warnings.push(format!(
                        "configuration {name}: neighbour_cpus = \"{given}\" puts neighbours on probe {}; they compete with the probe directly",
                        cpu_words(&shared)
                    ));
                }
                cpus
            }
            None => {
                let rest: Vec<usize> = online
                    .iter()
                    .copied()
                    .filter(|c| !probe_cpus.contains(c))
                    .collect();
                if rest.is_empty() {
                    ck.warnings.push(alone_warning(&name, &probe_cpus));
                    probe_cpus.clone()
                } else {
                    rest
                }
            }
        };
        let policy = match &c.policy {
            None => Policy::Fifo,
            Some(v) => match v.get_ref().as_str() {
                "fifo" => Policy::Fifo,
                "rr" => Policy::Rr,
                "other" => Policy::Other,
                other => {
                    return Err(ck.err(
                        v.span(),
                        &k("policy"),
                        format!("unknown policy {other:?}; use fifo, rr or other"),
                    ))
                }
            },
        };
        let (priority, nice) = if policy == Policy::Other {
            if let Some(v) = &c.priority {
                return Err(ck.err(
                    v.span(),
                    &k("priority"),
                    "priority applies only to policy fifo or rr; give nice for policy other",
                ));
            }
            let nice = match &c.nice {
                Some(v) => ck.int(v, &k("nice"), -20, 19)? as i32,
                None => 0,
            };
            (None, Some(nice))
        } else {
            if let Some(v) = &c.nice {
                return Err(ck.err(
                    v.span(),
                    &k("nice"),
                    format!(
                        "nice applies only to policy other; give priority for policy {}",
                        policy.name()
                    ),
                ));
            }
            let priority = match &c.priority {
                Some(v) => ck.int(v, &k("priority"), 1, 99)? as i32,
                None => 95,
            };
            (Some(priority), None)
        };
        let dma_latency = c.dma_latency.as_ref().is_none_or(|v| *v.get_ref());
        let (cache, cache_default) = cache_settings(ck, c, &p)?;
        let irq_cpus = match &c.irq_cpus {
            Some(v) => {
                let cpus = ck.nonempty_cpus(v, &k("irq_cpus"), "IRQ")?;
                let shared: CpuList = probe_cpus
                    .iter()
                    .copied()
                    .filter(|p| cpus.contains(p))
                    .collect();
                if !shared.is_empty() {
                    ck.warnings.push(format!(
                        "configuration {name}: irq_cpus includes probe {}; interrupts will still reach the probe",
                        cpu_words(&shared)
                    ));
                }
                Some(cpus)
            }
            None => None,
        };
        let governor = match &c.governor {
            Some(v) => {
                let g = v.get_ref();
                if g.is_empty() || !g.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    return Err(ck.err(
                        v.span(),
                        &k("governor"),
                        format!("governor {g:?} is not a cpufreq governor name (e.g. performance, schedutil)"),
                    ));
                }
                Some(g.clone())
            }
            None => None,
        };
        let rt_runtime_us = match &c.rt_runtime_us {
            Some(v) => Some(ck.int(v, &k("rt_runtime_us"), -1, i64::from(i32::MAX))?),
            None => None,
        };
        let min_freq_khz = match &c.min_freq {
            Some(v) => Some(ck.khz(v, &k("min_freq"))?),
            None => None,
        };
        let max_freq_khz = match &c.max_freq {
            Some(v) => Some(ck.khz(v, &k("max_freq"))?),
            None => None,
        };
        if let (Some(min), Some(max), Some(v)) = (min_freq_khz, max_freq_khz, &c.min_freq) {
            if min > max {
                return Err(ck.err(
                    v.span(),
                    &k("min_freq"),
                    format!(
                        "min_freq ({min} kHz) is above max_freq ({max} kHz); lower min_freq or raise max_freq"
                    ),
                ));
            }
        }
        let fair_server_runtime_ns =
            ck.opt_duration(&c.fair_server_runtime, &k("fair_server_runtime"))?;
        out.push(Configuration {
            name,
            probe_cpus,
            neighbour_cpus,
            policy,
            priority,
            nice,
            dma_latency,
            settings: ConfigSettings {
                cache,
                cache_default,
                irq_cpus,
                governor,
                timer_migration: c.timer_migration.as_ref().map(|v| *v.get_ref()),
                rt_runtime_us,
                min_freq_khz,
                max_freq_khz,
                fair_server_runtime_ns,
            },
        });
    }
    Ok(out)
}

/// The `[[configuration.cache]]` groups and `[configuration.cache_default]`
/// of configuration `p` (`configuration[i]`), checked as far as no
/// machine is needed (see "Cache allocation" in the module doc).
fn cache_settings(
    ck: &Checker,
    c: &RawConfiguration,
    p: &str,
) -> Check<(Vec<CacheGroup>, Option<CacheDefault>)> {
    let mut groups: Vec<CacheGroup> = Vec::new();
    let mut owner: Vec<(usize, usize)> = Vec::new();
    for (j, t) in c.cache.iter().enumerate() {
        let gp = format!("{p}.cache[{j}]");
        let k = |key: &str| format!("{gp}.{key}");
        let g = t.get_ref();
        let Some(name_v) = &g.group else {
            return Err(ck.err(
                t.span(),
                &k("group"),
                "missing; every cache group needs a name, e.g. group = \"rt\"",
            ));
        };
        let name = name_v.get_ref().clone();
        check_group_name(&name).map_err(|e| ck.err(name_v.span(), &k("group"), e))?;
        let used = groups.iter().map(|o| o.name.as_str());
        ck.unique(
            &name,
            name_v.span(),
            &k("group"),
            used,
            &format!("{p}.cache"),
            "cache group",
        )?;
        let cpus = match &g.cpus {
            Some(v) => {
                let cpus = ck.nonempty_cpus(v, &k("cpus"), "cache group")?;
                for &cpu in &cpus {
                    if let Some(&(_, other)) = owner.iter().find(|(c, _)| *c == cpu) {
                        return Err(ck.err(
                            v.span(),
                            &k("cpus"),
                            format!(
                                "CPU {cpu} is already in cache group {} ({p}.cache[{other}]); a CPU belongs to one resctrl group",
                                groups[other].name
                            ),
                        ));
                    }
                    owner.push((cpu, j));
                }
                cpus
            }
            None => return Err(ck.err(
                t.span(),
                &k("cpus"),
                "missing; give the CPUs that allocate with this group's ways, e.g. cpus = \"1\"",
            )),
        };
        let (masks, mb) = cache_alloc(ck, g.masks(), &g.mb, &gp)?;
        if masks.is_empty() && mb.is_none() {
            return Err(ck.err(
                t.span(),
                &gp,
                format!(
                    "cache group {name} allocates nothing; give l3, l2, l3code, l3data, l2code, l2data or mb"
                ),
            ));
        }
        groups.push(CacheGroup {
            name,
            cpus,
            tasks: Vec::new(),
            masks,
            mb,
            exclusive: g.exclusive.as_ref().is_some_and(|v| *v.get_ref()),
        });
    }
    let default = match &c.cache_default {
        Some(t) => {
            let dp = format!("{p}.cache_default");
            let d = t.get_ref();
            let (masks, mb) = cache_alloc(ck, d.masks(), &d.mb, &dp)?;
            if masks.is_empty() && mb.is_none() {
                return Err(ck.err(
                    t.span(),
                    &dp,
                    "shrinks nothing; give l3, l2, l3code, l3data, l2code, l2data or mb, or leave the table out",
                ));
            }
            Some(CacheDefault { masks, mb })
        }
        None => None,
    };
    Ok((groups, default))
}

/// The masks and bandwidth of one group's table `gp`.
fn cache_alloc(
    ck: &Checker,
    given: RawMasks,
    mb: &Option<Spanned<i64>>,
    gp: &str,
) -> Check<(Vec<CacheMask>, Option<u32>)> {
    let has = |r: Resource| given.iter().any(|(g, v)| *g == r && v.is_some());
    let mut masks = Vec::new();
    for (r, v) in given {
        let Some(v) = v else { continue };
        let key = format!("{gp}.{}", r.key());
        let plain = match r {
            Resource::L3Code | Resource::L3Data => has(Resource::L3),
            Resource::L2Code | Resource::L2Data => has(Resource::L2),
            _ => false,
        };
        if plain {
            let p = if r.level() == Some(3) { "l3" } else { "l2" };
            return Err(ck.err(
                v.span(),
                &key,
                format!(
                    "{p} and {p}code/{p}data exclude each other: resctrl offers the code and data halves instead of {} only when mounted with CDP; give one kind",
                    p.to_uppercase()
                ),
            ));
        }
        let w = v.get_ref();
        let mask = match (&w.ways, &w.mask) {
            (Some(_), Some(m)) => {
                return Err(ck.err(
                    m.span(),
                    &format!("{key}.mask"),
                    "give ways or mask, not both",
                ))
            }
            (Some(ways), None) => parse_ways(ways.get_ref())
                .map_err(|e| ck.err(ways.span(), &format!("{key}.ways"), e))?,
            (None, Some(m)) => {
                parse_mask(m.get_ref()).map_err(|e| ck.err(m.span(), &format!("{key}.mask"), e))?
            }
            (None, None) => {
                return Err(ck.err(v.span(), &key, "give ways = \"6-7\" or mask = \"0xc0\""))
            }
        };
        let ids = match &w.ids {
            Some(list) => {
                if list.get_ref().is_empty() {
                    return Err(ck.err(
                        list.span(),
                        &format!("{key}.ids"),
                        "ids is empty; leave it out for every cache id, or list some, e.g. ids = [0]",
                    ));
                }
                let mut ids: Vec<u32> = Vec::new();
                for (n, id) in list.get_ref().iter().enumerate() {
                    let ik = format!("{key}.ids[{n}]");
                    let id_v = ck.int(id, &ik, 0, i64::from(u32::MAX))? as u32;
                    if ids.contains(&id_v) {
                        return Err(ck.err(
                            id.span(),
                            &ik,
                            format!("cache id {id_v} is listed twice"),
                        ));
                    }
                    ids.push(id_v);
                }
                Some(ids)
            }
            None => None,
        };
        masks.push(CacheMask {
            resource: r,
            mask,
            ids,
        });
    }
    let mb = match mb {
        Some(v) => Some(ck.int(v, &format!("{gp}.mb"), 1, 100)? as u32),
        None => None,
    };
    Ok((masks, mb))
}

/// The warning for a configuration whose probe CPUs leave no CPU for
/// neighbours.
fn alone_warning(name: &str, probe_cpus: &[usize]) -> String {
    let list: CpuList = probe_cpus.iter().copied().collect();
    format!(
        "configuration {name}: no online CPU is left besides probe {}, so neighbours share it; the figures show direct contention, not isolation",
        cpu_words(&list)
    )
}

fn scenarios(
    ck: &mut Checker,
    raw: &[Spanned<RawScenario>],
    configurations: &[Configuration],
) -> Check<Vec<Scenario>> {
    if raw.is_empty() {
        return Ok(vec![Scenario {
            name: "idle".into(),
            builtin: Some("idle".into()),
            cpus: None,
            usb_path: None,
            rps_cpus: None,
            neighbours: Vec::new(),
        }]);
    }
    let mut out: Vec<Scenario> = Vec::new();
    for (i, t) in raw.iter().enumerate() {
        let p = format!("scenario[{i}]");
        let k = |key: &str| format!("{p}.{key}");
        let s = t.get_ref();
        let name = ck.required_name(&s.name, t.span(), &k("name"), "scenario", "cpu")?;
        let span = s.name.as_ref().expect("checked above").span();
        let used = out.iter().map(|o| o.name.as_str());
        ck.unique(&name, span, &k("name"), used, "scenario", "scenario")?;
        let builtin = match &s.builtin {
            Some(v) => {
                if !ck.ctx.builtins.contains(&v.get_ref().as_str()) {
                    return Err(ck.err(
                        v.span(),
                        &k("builtin"),
                        format!(
                            "unknown builtin {:?}; use one of {}",
                            v.get_ref(),
                            ck.ctx.builtins.join(", ")
                        ),
                    ));
                }
                Some(v.get_ref().clone())
            }
            None => None,
        };
        let cpus = match &s.cpus {
            Some(v) => {
                let cpus = ck.nonempty_cpus(v, &k("cpus"), "neighbour")?;
                ck.warn_overlap(&format!("scenario {name}: cpus"), &cpus, configurations);
                Some(cpus)
            }
            None => None,
        };
        let usb_path = match &s.usb_path {
            Some(v) => {
                if builtin.as_deref() != Some("usb") {
                    return Err(ck.err(
                        v.span(),
                        &k("usb_path"),
                        "usb_path applies only to builtin = \"usb\"; remove it or set builtin = \"usb\"",
                    ));
                }
                if v.get_ref().is_empty() {
                    return Err(ck.err(
                        v.span(),
                        &k("usb_path"),
                        "usb_path is empty; give a directory on the USB drive, e.g. \"/media/usb\"",
                    ));
                }
                Some(v.get_ref().clone())
            }
            None => None,
        };
        let rps_cpus = match &s.rps_cpus {
            Some(v) => {
                if builtin.as_deref() != Some("network") {
                    return Err(ck.err(
                        v.span(),
                        &k("rps_cpus"),
                        "rps_cpus applies only to builtin = \"network\"; remove it or set builtin = \"network\"",
                    ));
                }
                Some(ck.nonempty_cpus(v, &k("rps_cpus"), "RPS")?)
            }
            None => None,
        };
        if let Some(extra) = s.neighbour.get(limits::MAX_NEIGHBOURS) {
            return Err(ck.err(
                extra.span(),
                &format!("{p}.neighbour[{}]", limits::MAX_NEIGHBOURS),
                format!(
                    "scenario {name} has {} neighbours, more than {}, the most one scenario starts; split the load over scenarios",
                    s.neighbour.len(),
                    limits::MAX_NEIGHBOURS
                ),
            ));
        }
        let mut neighbours: Vec<CommandSpec> = Vec::new();
        for (j, nt) in s.neighbour.iter().enumerate() {
            let np = format!("{p}.neighbour[{j}]");
            let nk = |key: &str| format!("{np}.{key}");
            let n = nt.get_ref();
            let argv: Vec<String> = match &n.command {
                Some(v) if v.get_ref().is_empty() => {
                    return Err(ck.err(
                        v.span(),
                        &nk("command"),
                        "command is empty; give the program and its arguments, e.g. [\"stress-ng\", \"--cpu\", \"1\"]",
                    ))
                }
                Some(v) => {
                    let first = &v.get_ref()[0];
                    if first.get_ref().is_empty() {
                        return Err(ck.err(
                            first.span(),
                            &format!("{np}.command[0]"),
                            "the program name is empty; give the program to start, e.g. \"stress-ng\"",
                        ));
                    }
                    v.get_ref().iter().map(|a| a.get_ref().clone()).collect()
                }
                None => {
                    return Err(ck.err(
                        nt.span(),
                        &nk("command"),
                        "missing; give the argument vector, e.g. command = [\"stress-ng\", \"--cpu\", \"1\"]",
                    ))
                }
            };
            let (nname, nspan) = match &n.name {
                Some(v) => (ck.name(v, &nk("name"))?, v.span()),
                None => (
                    argv[0].rsplit('/').next().unwrap_or(&argv[0]).to_string(),
                    nt.span(),
                ),
            };
            let used = neighbours.iter().map(|o| o.name.as_str());
            ck.unique(
                &nname,
                nspan,
                &nk("name"),
                used,
                &format!("{p}.neighbour"),
                "neighbour",
            )?;
            let ncpus = match &n.cpus {
                Some(v) => {
                    let cpus = ck.nonempty_cpus(v, &nk("cpus"), "neighbour")?;
                    ck.warn_overlap(
                        &format!("scenario {name}, neighbour {nname}: cpus"),
                        &cpus,
                        configurations,
                    );
                    Some(cpus)
                }
                None => None,
            };
            neighbours.push(CommandSpec {
                name: nname,
                argv,
                cpus: ncpus,
            });
        }
        if builtin.is_none() && neighbours.is_empty() {
            return Err(ck.err(
                t.span(),
                &p,
                format!("scenario {name} has no load: give builtin = \"idle\" for none, or a [[scenario.neighbour]]"),
            ));
        }
        out.push(Scenario {
            name,
            builtin,
            cpus,
            usb_path,
            rps_cpus,
            neighbours,
        });
    }
    Ok(out)
}

fn probes(ck: &Checker, raw: &[Spanned<RawProbe>]) -> Check<Vec<ProbeSpec>> {
    if raw.is_empty() {
        return Err(ck.err(
            0..0,
            "probe",
            "no probe; add a [[probe]] table, e.g. kind = \"cyclic\"",
        ));
    }
    let mut out: Vec<ProbeSpec> = Vec::new();
    for (i, t) in raw.iter().enumerate() {
        let p = format!("probe[{i}]");
        let k = |key: &str| format!("{p}.{key}");
        let r = t.get_ref();
        let kind = match &r.kind {
            None => {
                return Err(ck.err(
                    t.span(),
                    &k("kind"),
                    "missing; give kind = \"cyclic\" or kind = \"wakeup\"",
                ))
            }
            Some(v) => match ProbeKind::ALL
                .into_iter()
                .find(|p| p.name() == v.get_ref().as_str())
            {
                Some(kind) => kind,
                None => {
                    return Err(ck.err(
                        v.span(),
                        &k("kind"),
                        format!(
                            "unknown probe kind {:?}; use cyclic, wakeup, chase, ctxswitch, response or timerlat",
                            v.get_ref()
                        ),
                    ))
                }
            },
        };
        let name = match &r.name {
            Some(v) => ck.name(v, &k("name"))?,
            None => kind.name().to_string(),
        };
        let span = r.name.as_ref().map_or(t.span(), |v| v.span());
        let used = out.iter().map(|o| o.name.as_str());
        ck.unique(&name, span, &k("name"), used, "probe", "probe")?;
        let period_ns = match &r.period {
            Some(v) => {
                let ns = ck.positive_duration(v, &k("period"), "period")?;
                limits::check_period(ns).map_err(|e| ck.err(v.span(), &k("period"), e))?
            }
            None => 1_000_000,
        };
        let cyclic = kind == ProbeKind::Cyclic;
        // A key that only some kinds take: refused, with the kinds, elsewhere.
        let only = |span: Option<Range<usize>>, key: &str, kinds: &[ProbeKind]| -> Check<()> {
            match span {
                Some(span) if !kinds.contains(&kind) => {
                    let names: Vec<String> = kinds
                        .iter()
                        .map(|k| format!("kind = \"{}\"", k.name()))
                        .collect();
                    Err(ck.err(
                        span,
                        &k(key),
                        format!(
                            "{key} applies only to {}; remove it from this {} probe",
                            names.join(" or "),
                            kind.name()
                        ),
                    ))
                }
                _ => Ok(()),
            }
        };
        let sp = |v: &Option<Spanned<String>>| v.as_ref().map(|v| v.span());
        use ProbeKind as P;
        only(sp(&r.scan), "scan", &[P::Cyclic])?;
        only(sp(&r.working_set), "working_set", &[P::Cyclic])?;
        only(sp(&r.max_exec), "max_exec", &[P::Cyclic])?;
        only(sp(&r.max_jitter), "max_jitter", &[P::Cyclic, P::Wakeup])?;
        only(
            sp(&r.period),
            "period",
            &[P::Cyclic, P::Wakeup, P::Response, P::Timerlat],
        )?;
        only(sp(&r.buffer), "buffer", &[P::Chase])?;
        only(
            r.iterations.as_ref().map(|v| v.span()),
            "iterations",
            &[P::Chase],
        )?;
        only(r.samples.as_ref().map(|v| v.span()), "samples", &[P::Chase])?;
        only(sp(&r.source), "source", &[P::Response])?;
        only(sp(&r.event_cpu), "event_cpu", &[P::Response])?;
        if let (P::Chase, Some(v)) = (kind, &r.max_latency) {
            return Err(ck.err(
                v.span(),
                &k("max_latency"),
                "a chase measures CPU cycles, not a latency; remove max_latency from this chase probe",
            ));
        }
        let buffer_bytes = match &r.buffer {
            Some(v) => {
                let b = ck.memory(v, &k("buffer"))?;
                if b < 128 {
                    return Err(ck.err(
                        v.span(),
                        &k("buffer"),
                        "a chase needs at least two cache lines; give e.g. buffer = \"1MiB\"",
                    ));
                }
                Some(b)
            }
            None => None,
        };
        let iterations = match &r.iterations {
            Some(v) => Some(ck.count(v, &k("iterations"), &limits::ITERATIONS)?),
            None => None,
        };
        let samples = match &r.samples {
            Some(v) => Some(ck.count(v, &k("samples"), &limits::SAMPLES)?),
            None => None,
        };
        let source = match &r.source {
            Some(v) => match v.get_ref().as_str() {
                "eventfd" | "udp" => Some(v.get_ref().clone()),
                other => {
                    return Err(ck.err(
                        v.span(),
                        &k("source"),
                        format!("unknown event source {other:?}; use eventfd or udp"),
                    ))
                }
            },
            None => None,
        };
        let event_cpu = match &r.event_cpu {
            Some(v) => match ck.cpus(v, &k("event_cpu"))? {
                Some(list) if list.len() == 1 => Some(list[0]),
                _ => {
                    return Err(ck.err(
                        v.span(),
                        &k("event_cpu"),
                        "give exactly one CPU, e.g. event_cpu = \"0\"",
                    ))
                }
            },
            None => None,
        };
        let (scan_ns, working_set_bytes) = if cyclic {
            let scan_ns = match &r.scan {
                Some(v) => ck.duration(v, &k("scan"))?,
                None => 100_000,
            };
            if scan_ns >= period_ns {
                let span = r
                    .scan
                    .as_ref()
                    .or(r.period.as_ref())
                    .map_or(t.span(), |v| v.span());
                return Err(ck.err(
                    span,
                    &k("scan"),
                    format!(
                        "scan {} must be shorter than the period {}",
                        short(scan_ns),
                        short(period_ns)
                    ),
                ));
            }
            let ws = match &r.working_set {
                Some(v) => ck.memory(v, &k("working_set"))?,
                None => 256 << 10,
            };
            (scan_ns, ws)
        } else {
            (0, 0)
        };
        let threshold_ns = match &r.threshold {
            Some(v) => Some(ck.positive_duration(v, &k("threshold"), "threshold")?),
            None => None,
        };
        let window_ns = match &r.window {
            Some(v) => {
                let ns = ck.positive_duration(v, &k("window"), "window")?;
                limits::check_window(ns).map_err(|e| ck.err(v.span(), &k("window"), e))?
            }
            None => 1_000_000_000,
        };
        let outliers = match &r.outliers {
            Some(v) => ck.count(v, &k("outliers"), &limits::OUTLIERS)? as usize,
            None => 10,
        };
        out.push(ProbeSpec {
            name,
            kind,
            period_ns,
            scan_ns,
            working_set_bytes,
            threshold_ns,
            window_ns,
            outliers,
            max_latency_ns: ck.opt_duration(&r.max_latency, &k("max_latency"))?,
            max_jitter_ns: ck.opt_duration(&r.max_jitter, &k("max_jitter"))?,
            max_exec_ns: ck.opt_duration(&r.max_exec, &k("max_exec"))?,
            buffer_bytes,
            iterations,
            samples,
            source,
            event_cpu,
        });
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// Errors from the TOML parser and serde: find the key from the span.

/// Turns a parser or serde error into `FILE:LINE: KEY: MESSAGE`, finding
/// the key whose name or value the error's span points at.
fn serde_error(ck: &Checker, e: &toml::de::Error) -> SpecError {
    let span = e.span().unwrap_or(0..0);
    let key = match toml::de::DeTable::parse(ck.text) {
        Ok(doc) => {
            let mut index = Vec::new();
            index_table(doc.get_ref(), "", &mut index);
            key_at(&index, &span)
        }
        Err(_) => String::new(),
    };
    let mut message = polish(e.message());
    if message == "invalid type: table, expected an array" {
        // `[configuration]` where `[[configuration]]` was meant.
        let table: String = key
            .split('.')
            .map(|part| part.split('[').next().unwrap_or(part))
            .collect::<Vec<_>>()
            .join(".");
        message.push_str(&format!("; write [[{table}]] with double brackets"));
    }
    ck.err(span, &key, message)
}

/// Every key and value span in the document, with its dotted path.
fn index_table(table: &toml::de::DeTable, prefix: &str, out: &mut Vec<(Range<usize>, String)>) {
    for (k, v) in table.iter() {
        let path = if prefix.is_empty() {
            k.get_ref().to_string()
        } else {
            format!("{prefix}.{}", k.get_ref())
        };
        out.push((k.span(), path.clone()));
        index_value(v, path, out);
    }
}

fn index_value(
    v: &Spanned<toml::de::DeValue>,
    path: String,
    out: &mut Vec<(Range<usize>, String)>,
) {
    out.push((v.span(), path.clone()));
    match v.get_ref() {
        toml::de::DeValue::Table(t) => index_table(t, &path, out),
        toml::de::DeValue::Array(a) => {
            for (i, e) in a.iter().enumerate() {
                index_value(e, format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// The deepest path whose span equals `span`, else the one whose span most
/// tightly contains it, else none.
fn key_at(index: &[(Range<usize>, String)], span: &Range<usize>) -> String {
    let exact = index
        .iter()
        .filter(|(s, _)| s == span)
        .max_by_key(|(_, p)| p.len());
    if let Some((_, p)) = exact {
        return p.clone();
    }
    index
        .iter()
        .filter(|(s, _)| s.start <= span.start && span.end <= s.end && s.start < s.end)
        .min_by_key(|(s, p)| (s.end - s.start, usize::MAX - p.len()))
        .map(|(_, p)| p.clone())
        .unwrap_or_default()
}

/// serde's words for TOML's: `field` → `key`, `i64` → `an integer`, `map`
/// → `table`, `sequence` → `array`.
fn polish(message: &str) -> String {
    message
        .replace("unknown field", "unknown key")
        .replace("expected i64", "expected an integer")
        .replace("expected a sequence", "expected an array")
        .replace("invalid type: map", "invalid type: table")
        .replace("invalid type: sequence", "invalid type: array")
}

#[cfg(test)]
mod tests {
    use super::*;

    const BUILTINS: &[&str] = &[
        "idle",
        "cpu",
        "disk",
        "usb",
        "network",
        "scheduling",
        "misc",
        "codesys",
    ];

    fn parse_on(text: &str, online: &str) -> Result<Spec, SpecError> {
        let online = CpuList::parse(online).unwrap();
        let ctx = SpecContext {
            online: &online,
            builtins: BUILTINS,
        };
        parse(text, "bench.toml", &ctx)
    }

    fn ok(text: &str) -> Spec {
        parse_on(text, "0-1").unwrap_or_else(|e| panic!("{e}"))
    }

    fn err(text: &str) -> String {
        match parse_on(text, "0-1") {
            Ok(s) => panic!("accepted: {s:?}"),
            Err(e) => e.to_string(),
        }
    }

    const PROBE: &str = "[[probe]]\nkind = \"cyclic\"\n";

    /// `duration = "10s"`, then `body`, then a cyclic probe.
    fn with(body: &str) -> String {
        format!("duration = \"10s\"\n{body}{PROBE}")
    }

    #[test]
    fn configuration_settings_parse_and_are_checked() {
        let s = ok(&with(
            "[[configuration]]\nname = \"p\"\nirq_cpus = \"0\"\ngovernor = \"performance\"\ntimer_migration = false\nrt_runtime_us = -1\n",
        ));
        assert_eq!(
            s.configurations[0].settings,
            ConfigSettings {
                cache: vec![],
                cache_default: None,
                irq_cpus: Some(vec![0]),
                governor: Some("performance".into()),
                timer_migration: Some(false),
                rt_runtime_us: Some(-1),
                ..ConfigSettings::default()
            }
        );
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
        assert_eq!(
            err(&with("[[configuration]]\nname = \"p\"\nirq_cpus = \"7\"\n")),
            "bench.toml:4: configuration[0].irq_cpus: CPU 7 is not online (online CPUs: 0-1)"
        );
        assert_eq!(
            err(&with("[[configuration]]\nname = \"p\"\ngovernor = \"../x\"\n")),
            "bench.toml:4: configuration[0].governor: governor \"../x\" is not a cpufreq governor name (e.g. performance, schedutil)"
        );
        assert_eq!(
            err(&with(
                "[[configuration]]\nname = \"p\"\nrt_runtime_us = -2\n"
            )),
            "bench.toml:4: configuration[0].rt_runtime_us: -2 is out of range -1..=2147483647"
        );
        // IRQs on the probe CPU: allowed on small machines, with a warning.
        let s = ok(&with("[[configuration]]\nname = \"p\"\nirq_cpus = \"1\"\n"));
        assert_eq!(
            s.warnings,
            vec!["configuration p: irq_cpus includes probe CPU 1; interrupts will still reach the probe"]
        );
    }

    #[test]
    fn frequencies_and_fair_server_runtime_parse_exactly() {
        let s = ok(&with(
            "[[configuration]]\nname = \"p\"\nmin_freq = \"2.4GHz\"\nmax_freq = \"3600 MHz\"\nfair_server_runtime = \"40ms\"\n",
        ));
        assert_eq!(
            s.configurations[0].settings,
            ConfigSettings {
                min_freq_khz: Some(2_400_000),
                max_freq_khz: Some(3_600_000),
                fair_server_runtime_ns: Some(40_000_000),
                ..ConfigSettings::default()
            }
        );
        let s = ok(&with(
            "[[configuration]]\nname = \"p\"\nmax_freq = \"800000kHz\"\nfair_server_runtime = \"0ns\"\n",
        ));
        assert_eq!(
            s.configurations[0].settings,
            ConfigSettings {
                max_freq_khz: Some(800_000),
                fair_server_runtime_ns: Some(0),
                ..ConfigSettings::default()
            }
        );
        assert_eq!(parse_khz("1.5ghz"), Ok(1_500_000));
        assert_eq!(parse_khz("0.8 GHz"), Ok(800_000));
        assert_eq!(parse_khz(".5MHz"), Ok(500));
        let freq = |v: &str| {
            err(&with(&format!(
                "[[configuration]]\nname = \"p\"\nmin_freq = \"{v}\"\n"
            )))
        };
        for (value, message) in [
            (
                "2.4",
                "\"2.4\" has no unit; add kHz, MHz or GHz (e.g. 2.4MHz)",
            ),
            (
                "2.4Hz",
                "\"2.4Hz\" has unknown unit \"Hz\"; use kHz, MHz or GHz",
            ),
            ("fast", "\"fast\" is not a frequency (e.g. 800MHz, 2.4GHz)"),
            (
                "1.2.3GHz",
                "\"1.2.3GHz\" is not a frequency (e.g. 800MHz, 2.4GHz)",
            ),
            ("-1GHz", "\"-1GHz\" is negative; give a frequency above 0"),
            (
                "1.5kHz",
                "\"1.5kHz\" is finer than 1 kHz, the resolution of cpufreq",
            ),
            ("0GHz", "\"0GHz\" is zero; give a frequency above 0"),
            (
                "",
                "empty frequency; give a number with a unit, e.g. 2.4GHz",
            ),
            (
                "99999999999999999999GHz",
                "\"99999999999999999999GHz\" is too large",
            ),
        ] {
            assert_eq!(
                freq(value),
                format!("bench.toml:4: configuration[0].min_freq: {message}"),
                "{value}"
            );
        }
        assert_eq!(
            err(&with(
                "[[configuration]]\nname = \"p\"\nmin_freq = \"3GHz\"\nmax_freq = \"2GHz\"\n"
            )),
            "bench.toml:4: configuration[0].min_freq: min_freq (3000000 kHz) is above max_freq (2000000 kHz); lower min_freq or raise max_freq"
        );
        assert_eq!(
            err(&with(
                "[[configuration]]\nname = \"p\"\nmax_freq = 2400\n"
            )),
            "bench.toml:4: configuration[0].max_freq: invalid type: integer `2400`, expected a string"
        );
        assert_eq!(
            err(&with(
                "[[configuration]]\nname = \"p\"\nfair_server_runtime = \"50\"\n"
            )),
            "bench.toml:4: configuration[0].fair_server_runtime: \"50\" has no unit; add one of ns, us, ms, s, m, h, d (e.g. 50us)"
        );
    }

    #[test]
    fn minimal_spec_gets_every_default() {
        let s = ok(&with(""));
        assert_eq!(
            s,
            Spec {
                name: "bench".into(),
                duration_ns: 10_000_000_000,
                warmup_ns: 2_000_000_000,
                repetitions: 1,
                deployments: vec!["host".into()],
                baseline: "default".into(),
                configurations: vec![Configuration {
                    name: "default".into(),
                    probe_cpus: vec![1],
                    neighbour_cpus: vec![0],
                    policy: Policy::Fifo,
                    priority: Some(95),
                    nice: None,
                    dma_latency: true,
                    settings: ConfigSettings::default(),
                }],
                scenarios: vec![Scenario {
                    name: "idle".into(),
                    builtin: Some("idle".into()),
                    cpus: None,
                    usb_path: None,
                    rps_cpus: None,
                    neighbours: vec![],
                }],
                probes: vec![ProbeSpec {
                    name: "cyclic".into(),
                    kind: ProbeKind::Cyclic,
                    period_ns: 1_000_000,
                    scan_ns: 100_000,
                    working_set_bytes: 256 << 10,
                    threshold_ns: None,
                    window_ns: 1_000_000_000,
                    outliers: 10,
                    max_latency_ns: None,
                    max_jitter_ns: None,
                    max_exec_ns: None,
                    buffer_bytes: None,
                    iterations: None,
                    samples: None,
                    source: None,
                    event_cpu: None,
                }],
                warnings: vec![],
            }
        );
    }

    #[test]
    fn full_spec_keeps_every_value() {
        let s = ok(r#"
name = "full"
duration = "1m"
warmup = "0"
repetitions = 3
deployments = ["host"]
baseline = "rt"

[[configuration]]
name = "plain"
probe_cpus = "1"
neighbour_cpus = "0"
policy = "other"
nice = -5
dma_latency = false

[[configuration]]
name = "rt"
probe_cpus = "1"
policy = "rr"
priority = 80

[[scenario]]
name = "net"
builtin = "network"
rps_cpus = "0"

[[scenario]]
name = "usb-and-more"
builtin = "usb"
usb_path = "/media/usb"
cpus = "0"
[[scenario.neighbour]]
command = ["/usr/bin/stress-ng", "--cpu", "1"]
[[scenario.neighbour]]
name = "hog"
command = ["hackbench"]
cpus = "0"

[[probe]]
kind = "wakeup"
name = "timer"
period = "250us"
threshold = "100us"
window = "500ms"
outliers = 0
max_latency = "200us"
max_jitter = "150us"

[[probe]]
kind = "cyclic"
period = "4ms"
scan = "500us"
working_set = "1MiB"
max_exec = "1ms"
"#);
        assert_eq!(
            (s.name.as_str(), s.duration_ns, s.warmup_ns, s.repetitions),
            ("full", 60_000_000_000, 0, 3)
        );
        assert_eq!(s.baseline, "rt");
        assert_eq!(
            s.configurations,
            [
                Configuration {
                    name: "plain".into(),
                    probe_cpus: vec![1],
                    neighbour_cpus: vec![0],
                    policy: Policy::Other,
                    priority: None,
                    nice: Some(-5),
                    dma_latency: false,
                    settings: ConfigSettings::default(),
                },
                Configuration {
                    name: "rt".into(),
                    probe_cpus: vec![1],
                    neighbour_cpus: vec![0],
                    policy: Policy::Rr,
                    priority: Some(80),
                    nice: None,
                    dma_latency: true,
                    settings: ConfigSettings::default(),
                },
            ]
        );
        assert_eq!(
            s.scenarios,
            [
                Scenario {
                    name: "net".into(),
                    builtin: Some("network".into()),
                    cpus: None,
                    usb_path: None,
                    rps_cpus: Some(vec![0]),
                    neighbours: vec![],
                },
                Scenario {
                    name: "usb-and-more".into(),
                    builtin: Some("usb".into()),
                    cpus: Some(vec![0]),
                    usb_path: Some("/media/usb".into()),
                    rps_cpus: None,
                    neighbours: vec![
                        CommandSpec {
                            name: "stress-ng".into(),
                            argv: vec!["/usr/bin/stress-ng".into(), "--cpu".into(), "1".into()],
                            cpus: None,
                        },
                        CommandSpec {
                            name: "hog".into(),
                            argv: vec!["hackbench".into()],
                            cpus: Some(vec![0]),
                        },
                    ],
                },
            ]
        );
        assert_eq!(
            s.probes,
            [
                ProbeSpec {
                    name: "timer".into(),
                    kind: ProbeKind::Wakeup,
                    period_ns: 250_000,
                    scan_ns: 0,
                    working_set_bytes: 0,
                    threshold_ns: Some(100_000),
                    window_ns: 500_000_000,
                    outliers: 0,
                    max_latency_ns: Some(200_000),
                    max_jitter_ns: Some(150_000),
                    max_exec_ns: None,
                    buffer_bytes: None,
                    iterations: None,
                    samples: None,
                    source: None,
                    event_cpu: None,
                },
                ProbeSpec {
                    name: "cyclic".into(),
                    kind: ProbeKind::Cyclic,
                    period_ns: 4_000_000,
                    scan_ns: 500_000,
                    working_set_bytes: 1 << 20,
                    threshold_ns: None,
                    window_ns: 1_000_000_000,
                    outliers: 10,
                    max_latency_ns: None,
                    max_jitter_ns: None,
                    max_exec_ns: Some(1_000_000),
                    buffer_bytes: None,
                    iterations: None,
                    samples: None,
                    source: None,
                    event_cpu: None,
                },
            ]
        );
        assert_eq!(s.warnings, Vec::<String>::new());
        assert_eq!(s.cells().len(), 3 * 2 * 2 * 2);
    }

    #[test]
    fn spec_serializes_for_the_store() {
        let s =
            ok("name = \"j\"\nduration = \"1s\"\nwarmup = \"0\"\n[[probe]]\nkind = \"wakeup\"\n");
        assert_eq!(
            serde_json::to_string(&s).unwrap(),
            concat!(
                r#"{"name":"j","duration_ns":1000000000,"warmup_ns":0,"repetitions":1,"#,
                r#""deployments":["host"],"baseline":"default","#,
                r#""configurations":[{"name":"default","probe_cpus":[1],"neighbour_cpus":[0],"#,
                r#""policy":"fifo","priority":95,"nice":null,"dma_latency":true,"#,
                r#""settings":{"irq_cpus":null,"governor":null,"timer_migration":null,"rt_runtime_us":null,"#,
                r#""min_freq_khz":null,"max_freq_khz":null,"fair_server_runtime_ns":null}}],"#,
                r#""scenarios":[{"name":"idle","builtin":"idle","cpus":null,"usb_path":null,"#,
                r#""rps_cpus":null,"neighbours":[]}],"#,
                r#""probes":[{"name":"wakeup","kind":"wakeup","period_ns":1000000,"scan_ns":0,"#,
                r#""working_set_bytes":0,"threshold_ns":null,"window_ns":1000000000,"outliers":10,"#,
                r#""max_latency_ns":null,"max_jitter_ns":null,"max_exec_ns":null}],"warnings":[]}"#
            )
        );
        let back: Spec = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(back, s);
        // Settings stored before the frequency and fair-server keys existed.
        let old: ConfigSettings = serde_json::from_str(
            r#"{"irq_cpus":[0],"governor":null,"timer_migration":null,"rt_runtime_us":null}"#,
        )
        .unwrap();
        assert_eq!(
            old,
            ConfigSettings {
                irq_cpus: Some(vec![0]),
                ..ConfigSettings::default()
            }
        );
    }

    #[test]
    fn name_defaults_to_the_file_stem() {
        let online = CpuList::parse("0-1").unwrap();
        let ctx = SpecContext {
            online: &online,
            builtins: BUILTINS,
        };
        let s = parse(&with(""), "specs/table10.toml", &ctx).unwrap();
        assert_eq!(s.name, "table10");
    }

    #[test]
    fn syntax_error_names_the_line() {
        assert_eq!(
            err("duration = \"10s\"\nwarmup = \"2s\n[[probe]]\nkind = \"cyclic\"\n"),
            "bench.toml:2: invalid basic string, expected `\"`"
        );
        assert_eq!(
            err("duration = \"10s\"\nduration = \"20s\"\n"),
            "bench.toml:2: duplicate key"
        );
    }

    #[test]
    fn unknown_key_names_its_path() {
        assert_eq!(
            err(&with("[[configuration]]\nname = \"a\"\npriorty = 3\n")),
            "bench.toml:4: configuration[0].priorty: unknown key `priorty`, expected one of `name`, `probe_cpus`, `neighbour_cpus`, `policy`, `priority`, `nice`, `dma_latency`, `cache`, `cache_default`, `irq_cpus`, `governor`, `timer_migration`, `rt_runtime_us`, `min_freq`, `max_freq`, `fair_server_runtime`"
        );
        assert_eq!(
            err(&with("colour = \"red\"\n")),
            "bench.toml:2: colour: unknown key `colour`, expected one of `name`, `duration`, `warmup`, `repetitions`, `deployments`, `baseline`, `configuration`, `scenario`, `probe`"
        );
        assert_eq!(
            err("duration = \"10s\"\n[[probe]]\nkind = \"cyclic\"\n[[probe]]\nkind = \"wakeup\"\nscam = \"1us\"\n"),
            "bench.toml:6: probe[1].scam: unknown key `scam`, expected one of `kind`, `name`, `period`, `scan`, `working_set`, `threshold`, `window`, `outliers`, `max_latency`, `max_jitter`, `max_exec`, `buffer`, `iterations`, `samples`, `source`, `event_cpu`"
        );
    }

    #[test]
    fn type_errors_name_their_path() {
        assert_eq!(
            err(&with("repetitions = \"one\"\n")),
            "bench.toml:2: repetitions: invalid type: string \"one\", expected an integer"
        );
        assert_eq!(
            err(&with("[[scenario]]\nname = \"s\"\nbuiltin = \"cpu\"\n[[scenario.neighbour]]\ncommand = [\"a\", 3]\n")),
            "bench.toml:6: scenario[0].neighbour[0].command[1]: invalid type: integer `3`, expected a string"
        );
        assert_eq!(
            err(&with("[configuration]\nname = \"a\"\n")),
            "bench.toml:2: configuration: invalid type: table, expected an array; write [[configuration]] with double brackets"
        );
        assert_eq!(
            err(&with("[[scenario]]\nname = \"s\"\n[scenario.neighbour]\ncommand = [\"a\"]\n")),
            "bench.toml:4: scenario[0].neighbour: invalid type: table, expected an array; write [[scenario.neighbour]] with double brackets"
        );
        assert_eq!(
            err(&with("[[configuration]]\nname = \"a\"\ndma_latency = \"yes\"\n")),
            "bench.toml:4: configuration[0].dma_latency: invalid type: string \"yes\", expected a boolean"
        );
    }

    #[test]
    fn bad_times_and_sizes_name_the_key() {
        assert_eq!(
            err("duration = \"10x\"\n"),
            "bench.toml:1: duration: \"10x\" has unknown unit \"x\"; use one of ns, us, ms, s, m, h, d"
        );
        assert_eq!(
            err("warmup = \"2s\"\n"),
            "bench.toml:1: duration: missing; give the measured time of each cell, e.g. duration = \"10s\""
        );
        assert_eq!(
            err("duration = \"0\"\n"),
            "bench.toml:1: duration: duration must be longer than 0"
        );
        assert_eq!(
            err(&with("warmup = \"2000\"\n")),
            "bench.toml:2: warmup: \"2000\" has no unit; add one of ns, us, ms, s, m, h, d (e.g. 2000us)"
        );
        assert_eq!(
            err("duration = \"10s\"\n[[probe]]\nkind = \"cyclic\"\nworking_set = \"1 parsec\"\n"),
            "bench.toml:4: probe[0].working_set: \"1 parsec\" has unknown size suffix \"parsec\"; use B, K, KiB, M, MiB, G or GiB"
        );
        assert_eq!(
            err("duration = \"10s\"\n[[probe]]\nkind = \"wakeup\"\nwindow = \"0ms\"\n"),
            "bench.toml:4: probe[0].window: window must be longer than 0"
        );
    }

    #[test]
    fn numbers_out_of_range() {
        assert_eq!(
            err(&with("repetitions = 0\n")),
            "bench.toml:2: repetitions: 0 is less than 1"
        );
        assert_eq!(
            err(&with("[[configuration]]\nname = \"a\"\npriority = 100\n")),
            "bench.toml:4: configuration[0].priority: 100 is out of range 1..=99"
        );
        assert_eq!(
            err(&with(
                "[[configuration]]\nname = \"a\"\npolicy = \"other\"\nnice = 20\n"
            )),
            "bench.toml:5: configuration[0].nice: 20 is out of range -20..=19"
        );
        assert_eq!(
            err("duration = \"10s\"\n[[probe]]\nkind = \"cyclic\"\noutliers = -1\n"),
            "bench.toml:4: probe[0].outliers: -1 is negative; give 0 to 10000"
        );
    }

    #[test]
    fn sizes_counts_and_times_are_bounded_as_on_the_command_line() {
        let probe = |kind: &str, body: &str| {
            err(&format!(
                "duration = \"10s\"\n[[probe]]\nkind = \"{kind}\"\n{body}"
            ))
        };
        assert_eq!(
            probe("cyclic", "outliers = 100000000\n"),
            "bench.toml:4: probe[0].outliers: 100000000 is more than 10000, the most outliers kept per metric"
        );
        assert_eq!(
            probe("cyclic", "working_set = \"1000GiB\"\n"),
            "bench.toml:4: probe[0].working_set: 1000GiB is more than 4GiB, the largest buffer jitterlab allocates"
        );
        assert_eq!(
            probe("chase", "buffer = \"5G\"\n"),
            "bench.toml:4: probe[0].buffer: 5GiB is more than 4GiB, the largest buffer jitterlab allocates"
        );
        assert_eq!(
            probe("chase", "iterations = 1000001\n"),
            "bench.toml:4: probe[0].iterations: 1000001 is more than 1000000, the most timed chases per sample"
        );
        assert_eq!(
            probe("chase", "samples = 1048577\n"),
            "bench.toml:4: probe[0].samples: 1048577 is more than 1048576, the most samples a chase keeps"
        );
        assert_eq!(
            probe("wakeup", "period = \"1ns\"\n"),
            "bench.toml:4: probe[0].period: 1ns is shorter than 10us, the shortest period jitterlab measures (below it the probe measures its own overhead)"
        );
        assert_eq!(ok(&with("")).probes[0].period_ns, 1_000_000);
        assert_eq!(
            ok("duration = \"1s\"\n[[probe]]\nkind = \"wakeup\"\nperiod = \"10us\"\n").probes[0]
                .period_ns,
            10_000
        );
        assert_eq!(
            probe("wakeup", "window = \"100us\"\n"),
            "bench.toml:4: probe[0].window: 100us is shorter than 1ms, the shortest window"
        );
        assert_eq!(
            probe("cyclic", "max_latency = \"8d\"\n"),
            "bench.toml:4: probe[0].max_latency: 8d is more than 7d, the longest time jitterlab takes"
        );
        assert_eq!(
            err("duration = \"30d\"\n[[probe]]\nkind = \"cyclic\"\n"),
            "bench.toml:1: duration: 30d is more than 7d, the longest time jitterlab takes"
        );
        assert_eq!(
            err(&with("warmup = \"8d\"\n")),
            "bench.toml:2: warmup: 8d is more than 7d, the longest time jitterlab takes"
        );
        assert_eq!(
            err(&with("repetitions = 1000000\n")),
            "bench.toml:2: repetitions: 1000000 is more than 1000, the most repetitions of a bench"
        );
    }

    #[test]
    fn the_matrix_and_its_window_rows_are_bounded() {
        // 1000 repetitions × 11 probes = 11000 cells.
        let mut text = String::from("duration = \"1s\"\nrepetitions = 1000\n");
        for i in 0..11 {
            text.push_str(&format!("[[probe]]\nkind = \"wakeup\"\nname = \"p{i}\"\n"));
        }
        assert_eq!(
            err(&text),
            "bench.toml:2: repetitions: the bench has 11000 cells (1000 repetitions × 1 configuration × 1 scenario × 1 deployment × 11 probes), more than 10000, the most one bench runs; use fewer repetitions or split the spec"
        );
        let spec = ok(&text.replace("repetitions = 1000\n", "repetitions = 900\n"));
        assert_eq!(spec.cell_count(), 9900);
        assert_eq!(spec.check_limits(), Ok(()));
        let mut more = spec.clone();
        more.repetitions = 1000;
        assert_eq!(
            more.check_limits(),
            Err("the bench has 11000 cells (1000 repetitions × 1 configuration × 1 scenario × 1 deployment × 11 probes), more than 10000, the most one bench runs; use fewer repetitions or split the spec".into())
        );
        // A wake-up probe on both CPUs for 7 days in 1 s windows.
        let wide = "duration = \"7d\"\n[[configuration]]\nname = \"w\"\nprobe_cpus = \"0-1\"\n[[probe]]\nkind = \"wakeup\"\nwindow = \"1s\"\n";
        assert_eq!(
            err(wide),
            "bench.toml:7: probe[0].window: 7d in windows of 1s makes 1209600 window rows over 2 threads, more than 1000000, the most one run keeps; use windows of at least 1210ms or a shorter duration"
        );
        let mut long = ok(&wide.replace("\"7d\"", "\"1d\""));
        assert_eq!(long.check_limits(), Ok(()));
        long.duration_ns = 7 * 86_400_000_000_000;
        assert_eq!(
            long.check_limits(),
            Err("probe[0] (wakeup): 7d in windows of 1s makes 1209600 window rows over 2 threads, more than 1000000, the most one run keeps; use windows of at least 1210ms or a shorter duration".into())
        );
    }

    #[test]
    fn a_scenario_starts_at_most_64_neighbours() {
        let mut text = String::from("duration = \"1s\"\n[[scenario]]\nname = \"many\"\n");
        for i in 0..65 {
            text.push_str(&format!(
                "[[scenario.neighbour]]\nname = \"n{i}\"\ncommand = [\"sleep\", \"1\"]\n"
            ));
        }
        text.push_str("[[probe]]\nkind = \"cyclic\"\n");
        assert_eq!(
            err(&text),
            "bench.toml:196: scenario[0].neighbour[64]: scenario many has 65 neighbours, more than 64, the most one scenario starts; split the load over scenarios"
        );
        let fewer = text.replacen(
            "[[scenario.neighbour]]\nname = \"n64\"\ncommand = [\"sleep\", \"1\"]\n",
            "",
            1,
        );
        assert_eq!(ok(&fewer).scenarios[0].neighbours.len(), 64);
    }

    #[test]
    fn a_name_with_control_characters_is_refused() {
        assert_eq!(
            err(&with("name = \"x\\u001b[31m\\ny\"\n")),
            "bench.toml:2: name: name \"x\\u{1b}[31m\\ny\" holds control characters; use printable text (it is printed by runs and report)"
        );
    }

    #[test]
    fn offline_cpu_is_refused_with_the_online_list() {
        let text = "duration = \"10s\"\n[[configuration]]\nname = \"a\"\n[[configuration]]\nname = \"b\"\npolicy = \"fifo\"\nprobe_cpus = \"9\"\n[[probe]]\nkind = \"cyclic\"\n";
        assert_eq!(
            err(text),
            "bench.toml:7: configuration[1].probe_cpus: CPU 9 is not online (online CPUs: 0-1)"
        );
        assert_eq!(
            err(&with("[[configuration]]\nname = \"a\"\nneighbour_cpus = \"0-5\"\n")),
            "bench.toml:4: configuration[0].neighbour_cpus: CPUs 2-5 are not online (online CPUs: 0-1)"
        );
        assert_eq!(
            err(&with(
                "[[scenario]]\nname = \"s\"\nbuiltin = \"network\"\nrps_cpus = \"3\"\n"
            )),
            "bench.toml:5: scenario[0].rps_cpus: CPU 3 is not online (online CPUs: 0-1)"
        );
        assert_eq!(
            err(&with("[[scenario]]\nname = \"s\"\n[[scenario.neighbour]]\ncommand = [\"x\"]\ncpus = \"4\"\n")),
            "bench.toml:6: scenario[0].neighbour[0].cpus: CPU 4 is not online (online CPUs: 0-1)"
        );
        assert_eq!(
            err(&with("[[configuration]]\nname = \"a\"\nprobe_cpus = \"one\"\n")),
            "bench.toml:4: configuration[0].probe_cpus: \"one\" is not a CPU list; write CPUs like 1,3 or ranges like 0-3 (as in /sys/devices/system/cpu/online)"
        );
    }

    #[test]
    fn empty_probe_cpu_list_is_refused() {
        assert_eq!(
            err(&with("[[configuration]]\nname = \"a\"\nprobe_cpus = \"\"\n")),
            "bench.toml:4: configuration[0].probe_cpus: probe CPU list is empty; name at least one online CPU (online CPUs: 0-1)"
        );
        assert_eq!(
            err(&with("[[scenario]]\nname = \"s\"\nbuiltin = \"cpu\"\ncpus = \" \"\n")),
            "bench.toml:5: scenario[0].cpus: neighbour CPU list is empty; name at least one online CPU (online CPUs: 0-1)"
        );
    }

    #[test]
    fn duplicate_names_are_refused() {
        assert_eq!(
            err(&with("[[configuration]]\nname = \"a\"\n[[configuration]]\nname = \"a\"\n")),
            "bench.toml:5: configuration[1].name: name \"a\" is already used by configuration[0]; give each configuration its own name"
        );
        assert_eq!(
            err(&with("[[scenario]]\nname = \"s\"\nbuiltin = \"cpu\"\n[[scenario]]\nname = \"s\"\nbuiltin = \"idle\"\n")),
            "bench.toml:6: scenario[1].name: name \"s\" is already used by scenario[0]; give each scenario its own name"
        );
        assert_eq!(
            err("duration = \"10s\"\n[[probe]]\nkind = \"cyclic\"\n[[probe]]\nkind = \"cyclic\"\n"),
            "bench.toml:4: probe[1].name: name \"cyclic\" is already used by probe[0]; give each probe its own name"
        );
        assert_eq!(
            err(&with("[[scenario]]\nname = \"s\"\n[[scenario.neighbour]]\ncommand = [\"/bin/yes\"]\n[[scenario.neighbour]]\ncommand = [\"yes\", \"y\"]\n")),
            "bench.toml:6: scenario[0].neighbour[1].name: name \"yes\" is already used by scenario[0].neighbour[0]; give each neighbour its own name"
        );
    }

    #[test]
    fn bad_name_characters_are_refused() {
        assert_eq!(
            err(&with("[[configuration]]\nname = \"my config\"\n")),
            "bench.toml:3: configuration[0].name: name \"my config\" may use only ASCII letters, digits, _ and - (it becomes part of cell names like tuned/cpu/host/cyclic)"
        );
        assert_eq!(
            err(&with("[[scenario]]\nname = \"a/b\"\nbuiltin = \"cpu\"\n")),
            "bench.toml:3: scenario[0].name: name \"a/b\" may use only ASCII letters, digits, _ and - (it becomes part of cell names like tuned/cpu/host/cyclic)"
        );
        assert_eq!(
            err("duration = \"10s\"\n[[probe]]\nkind = \"cyclic\"\nname = \"\"\n"),
            "bench.toml:4: probe[0].name: name is empty; use ASCII letters, digits, _ and -"
        );
        assert_eq!(
            err(&with("[[configuration]]\npolicy = \"fifo\"\n")),
            "bench.toml:2: configuration[0].name: missing; every configuration needs a name, e.g. name = \"tuned\""
        );
    }

    #[test]
    fn policy_and_its_parameters_must_match() {
        assert_eq!(
            err(&with("[[configuration]]\nname = \"a\"\npolicy = \"other\"\npriority = 50\n")),
            "bench.toml:5: configuration[0].priority: priority applies only to policy fifo or rr; give nice for policy other"
        );
        assert_eq!(
            err(&with("[[configuration]]\nname = \"a\"\nnice = -5\n")),
            "bench.toml:4: configuration[0].nice: nice applies only to policy other; give priority for policy fifo"
        );
        assert_eq!(
            err(&with("[[configuration]]\nname = \"a\"\npolicy = \"rr\"\nnice = 1\n")),
            "bench.toml:5: configuration[0].nice: nice applies only to policy other; give priority for policy rr"
        );
        assert_eq!(
            err(&with("[[configuration]]\nname = \"a\"\npolicy = \"deadline\"\n")),
            "bench.toml:4: configuration[0].policy: unknown policy \"deadline\"; use fifo, rr or other"
        );
    }

    #[test]
    fn scan_must_be_shorter_than_the_period() {
        assert_eq!(
            err("duration = \"10s\"\n[[probe]]\nkind = \"cyclic\"\nperiod = \"1ms\"\nscan = \"1ms\"\n"),
            "bench.toml:5: probe[0].scan: scan 1ms must be shorter than the period 1ms"
        );
        // The default scan (100us) against a shorter period points at the period.
        assert_eq!(
            err("duration = \"10s\"\n[[probe]]\nkind = \"cyclic\"\nperiod = \"50us\"\n"),
            "bench.toml:4: probe[0].scan: scan 100us must be shorter than the period 50us"
        );
        assert_eq!(
            err("duration = \"10s\"\n[[probe]]\nkind = \"wakeup\"\nscan = \"10us\"\n"),
            "bench.toml:4: probe[0].scan: scan applies only to kind = \"cyclic\"; remove it from this wakeup probe"
        );
        assert_eq!(
            err("duration = \"10s\"\n[[probe]]\nkind = \"chaser\"\n"),
            "bench.toml:3: probe[0].kind: unknown probe kind \"chaser\"; use cyclic, wakeup, chase, ctxswitch, response or timerlat"
        );
        assert_eq!(
            err("duration = \"10s\"\n[[probe]]\nperiod = \"1ms\"\n"),
            "bench.toml:2: probe[0].kind: missing; give kind = \"cyclic\" or kind = \"wakeup\""
        );
    }

    #[test]
    fn scenario_keys_must_fit_the_builtin() {
        assert_eq!(
            err(&with("[[scenario]]\nname = \"s\"\nbuiltin = \"stress\"\n")),
            "bench.toml:4: scenario[0].builtin: unknown builtin \"stress\"; use one of idle, cpu, disk, usb, network, scheduling, misc, codesys"
        );
        assert_eq!(
            err(&with("[[scenario]]\nname = \"s\"\nbuiltin = \"disk\"\nusb_path = \"/media/usb\"\n")),
            "bench.toml:5: scenario[0].usb_path: usb_path applies only to builtin = \"usb\"; remove it or set builtin = \"usb\""
        );
        assert_eq!(
            err(&with("[[scenario]]\nname = \"s\"\nbuiltin = \"cpu\"\nrps_cpus = \"1\"\n")),
            "bench.toml:5: scenario[0].rps_cpus: rps_cpus applies only to builtin = \"network\"; remove it or set builtin = \"network\""
        );
        assert_eq!(
            err(&with("[[scenario]]\nname = \"quiet\"\ncpus = \"0\"\n")),
            "bench.toml:2: scenario[0]: scenario quiet has no load: give builtin = \"idle\" for none, or a [[scenario.neighbour]]"
        );
        assert_eq!(
            err(&with("[[scenario]]\nname = \"s\"\n[[scenario.neighbour]]\ncommand = []\n")),
            "bench.toml:5: scenario[0].neighbour[0].command: command is empty; give the program and its arguments, e.g. [\"stress-ng\", \"--cpu\", \"1\"]"
        );
        assert_eq!(
            err(&with("[[scenario]]\nname = \"s\"\n[[scenario.neighbour]]\nname = \"x\"\n")),
            "bench.toml:4: scenario[0].neighbour[0].command: missing; give the argument vector, e.g. command = [\"stress-ng\", \"--cpu\", \"1\"]"
        );
    }

    #[test]
    fn baseline_must_name_a_configuration() {
        assert_eq!(
            err(&with("baseline = \"tuned\"\n[[configuration]]\nname = \"a\"\n[[configuration]]\nname = \"b\"\n")),
            "bench.toml:2: baseline: \"tuned\" names no configuration (configurations: a, b)"
        );
        let s = ok(&with(
            "[[configuration]]\nname = \"a\"\n[[configuration]]\nname = \"b\"\n",
        ));
        assert_eq!(s.baseline, "a");
    }

    #[test]
    fn a_probe_is_required() {
        assert_eq!(
            err("duration = \"10s\"\n"),
            "bench.toml:1: probe: no probe; add a [[probe]] table, e.g. kind = \"cyclic\""
        );
    }

    #[test]
    fn only_host_deployment_is_accepted() {
        assert_eq!(
            err(&with("deployments = [\"host\", \"container\"]\n")),
            "bench.toml:2: deployments[1]: deployment container is not supported yet; use host"
        );
        assert_eq!(
            err(&with("deployments = [\"vm\"]\n")),
            "bench.toml:2: deployments[0]: unknown deployment \"vm\"; use host"
        );
        assert_eq!(
            err(&with("deployments = [\"host\", \"host\"]\n")),
            "bench.toml:2: deployments[1]: deployment host is listed twice"
        );
        assert_eq!(
            err(&with("deployments = []\n")),
            "bench.toml:2: deployments: no deployment listed; give deployments = [\"host\"] or leave the key out"
        );
    }

    #[test]
    fn neighbours_on_probe_cpus_are_warnings_not_errors() {
        let s = ok(&with(
            "[[configuration]]\nname = \"a\"\nneighbour_cpus = \"0-1\"\n[[scenario]]\nname = \"redhat\"\nbuiltin = \"cpu\"\ncpus = \"1\"\n[[scenario.neighbour]]\nname = \"spin\"\ncommand = [\"spin\"]\ncpus = \"0\"\n",
        ));
        assert_eq!(s.configurations[0].neighbour_cpus, [0, 1]);
        assert_eq!(s.scenarios[0].cpus, Some(vec![1]));
        assert_eq!(
            s.warnings,
            [
                "configuration a: neighbour_cpus = \"0-1\" puts neighbours on probe CPU 1; they compete with the probe directly",
                "scenario redhat: cpus = \"1\" puts neighbours on probe CPU 1 of configuration a; they compete with the probe directly",
            ]
        );
    }

    #[test]
    fn one_cpu_machine_shares_the_probe_cpu_with_a_warning() {
        let s = parse_on(&with("[[configuration]]\nname = \"solo\"\n"), "0").unwrap();
        assert_eq!(s.configurations[0].probe_cpus, [0]);
        assert_eq!(s.configurations[0].neighbour_cpus, [0]);
        assert_eq!(
            s.warnings,
            ["configuration solo: no online CPU is left besides probe CPU 0, so neighbours share it; the figures show direct contention, not isolation"]
        );
        // Probe CPUs that take every online CPU do the same on a bigger machine.
        let s = parse_on(
            &with("[[configuration]]\nname = \"all\"\nprobe_cpus = \"0-3\"\n"),
            "0-3",
        )
        .unwrap();
        assert_eq!(s.configurations[0].neighbour_cpus, [0, 1, 2, 3]);
        assert_eq!(
            s.warnings,
            ["configuration all: no online CPU is left besides probe CPUs 0-3, so neighbours share it; the figures show direct contention, not isolation"]
        );
    }

    /// 2 repetitions × 3 configurations × 1 scenario × 1 deployment × 2 probes.
    const MATRIX: &str = r#"
name = "matrix"
duration = "10s"
repetitions = 2
[[configuration]]
name = "c0"
[[configuration]]
name = "c1"
[[configuration]]
name = "c2"
[[scenario]]
name = "cpu"
builtin = "cpu"
[[probe]]
kind = "cyclic"
[[probe]]
kind = "wakeup"
"#;

    #[test]
    fn cells_run_repetition_outermost_probe_innermost() {
        let s = ok(MATRIX);
        let cells: Vec<(u32, String, usize, usize, usize)> = s
            .cells()
            .into_iter()
            .map(|c| {
                (
                    c.key.repetition,
                    c.key.name(),
                    c.configuration,
                    c.scenario,
                    c.probe,
                )
            })
            .collect();
        let expect: Vec<(u32, String, usize, usize, usize)> = [
            (0, "c0/cpu/host/cyclic", 0, 0, 0),
            (0, "c0/cpu/host/wakeup", 0, 0, 1),
            (0, "c1/cpu/host/cyclic", 1, 0, 0),
            (0, "c1/cpu/host/wakeup", 1, 0, 1),
            (0, "c2/cpu/host/cyclic", 2, 0, 0),
            (0, "c2/cpu/host/wakeup", 2, 0, 1),
            (1, "c0/cpu/host/cyclic", 0, 0, 0),
            (1, "c0/cpu/host/wakeup", 0, 0, 1),
            (1, "c1/cpu/host/cyclic", 1, 0, 0),
            (1, "c1/cpu/host/wakeup", 1, 0, 1),
            (1, "c2/cpu/host/cyclic", 2, 0, 0),
            (1, "c2/cpu/host/wakeup", 2, 0, 1),
        ]
        .into_iter()
        .map(|(r, n, c, s, p)| (r, n.to_string(), c, s, p))
        .collect();
        assert_eq!(cells, expect);
        assert_eq!(
            s.cells()[7].key,
            CellKey {
                configuration: "c0".into(),
                scenario: "cpu".into(),
                deployment: "host".into(),
                probe: "wakeup".into(),
                repetition: 1,
            }
        );
    }

    #[test]
    fn planned_time_adds_setup_warmup_and_duration_per_cell_plus_once() {
        let s = ok(MATRIX);
        // 12 cells × (1s set-up + 2s warm-up + 10s) + 5s calibration = 161s.
        assert_eq!(s.planned_ns(1_000_000_000, 5_000_000_000), 161_000_000_000);
        assert_eq!(s.planned_ns(0, 0), 12 * 12_000_000_000);
        assert_eq!(s.planned_ns(u64::MAX, 0), u64::MAX);
    }

    #[test]
    fn plan_text_lists_every_cell_and_the_warnings() {
        let text = "name = \"demo\"\nduration = \"10s\"\n\
            [[configuration]]\nname = \"baseline\"\npolicy = \"other\"\n\
            [[configuration]]\nname = \"tuned\"\n\
            [[scenario]]\nname = \"idle\"\nbuiltin = \"idle\"\n\
            [[scenario]]\nname = \"cpu\"\nbuiltin = \"cpu\"\ncpus = \"0-1\"\n\
            [[probe]]\nkind = \"cyclic\"\n";
        let s = ok(text);
        assert_eq!(
            s.plan_text(1_000_000_000, 5_000_000_000),
            r#"plan: demo
  4 cells (1 repetition × 2 configurations × 2 scenarios × 1 deployment × 1 probe)
  each cell: set-up 1s + warm-up 2s + 10s measured = 13s
  once: idle calibration 5s
  total: 57s
  1/4  baseline/idle/host/cyclic  rep 1  (warm-up 2s + 10s)
  2/4  baseline/cpu/host/cyclic   rep 1  (warm-up 2s + 10s)
  3/4  tuned/idle/host/cyclic     rep 1  (warm-up 2s + 10s)
  4/4  tuned/cpu/host/cyclic      rep 1  (warm-up 2s + 10s)
warning: scenario cpu: cpus = "0-1" puts neighbours on probe CPU 1 of configuration baseline; they compete with the probe directly
warning: scenario cpu: cpus = "0-1" puts neighbours on probe CPU 1 of configuration tuned; they compete with the probe directly
"#
        );
    }

    #[test]
    fn plan_text_aligns_long_plans_and_formats_hours() {
        let s = ok(&MATRIX.replace("duration = \"10s\"", "duration = \"20m\"\nwarmup = \"0\""));
        let plan = s.plan_text(0, 0);
        let lines: Vec<&str> = plan.lines().collect();
        assert_eq!(
            lines[2],
            "  each cell: set-up 0s + warm-up 0s + 20m measured = 20m 00s"
        );
        assert_eq!(lines[3], "  total: 4h 00m 00s");
        assert_eq!(
            lines[4],
            "  1/12   c0/cpu/host/cyclic  rep 1  (warm-up 0s + 20m)"
        );
        assert_eq!(
            lines[15],
            "  12/12  c2/cpu/host/wakeup  rep 2  (warm-up 0s + 20m)"
        );
        assert_eq!(lines.len(), 16);
    }

    /// `duration`, a configuration `p` on CPUs 0-3 with `body`, a probe.
    fn cache_spec(body: &str) -> String {
        format!("duration = \"10s\"\n[[configuration]]\nname = \"p\"\n{body}{PROBE}")
    }

    fn cache_err(body: &str) -> String {
        match parse_on(&cache_spec(body), "0-3") {
            Ok(s) => panic!("accepted: {s:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn cache_groups_parse() {
        let s = parse_on(
            &cache_spec(
                "[[configuration.cache]]\ngroup = \"rt\"\ncpus = \"1\"\nl3 = { ways = \"6-7\" }\nmb = 50\nexclusive = true\n\
                 [[configuration.cache]]\ngroup = \"nn\"\ncpus = \"2-3\"\nl2 = { mask = \"0xffc00\", ids = [2, 3] }\n\
                 [configuration.cache_default]\nl3 = { mask = \"3f\" }\n",
            ),
            "0-3",
        )
        .unwrap();
        let settings = &s.configurations[0].settings;
        assert_eq!(
            settings.cache,
            vec![
                CacheGroup {
                    name: "rt".into(),
                    cpus: vec![1],
                    tasks: vec![],
                    masks: vec![CacheMask {
                        resource: Resource::L3,
                        mask: 0xc0,
                        ids: None
                    }],
                    mb: Some(50),
                    exclusive: true,
                },
                CacheGroup {
                    name: "nn".into(),
                    cpus: vec![2, 3],
                    tasks: vec![],
                    masks: vec![CacheMask {
                        resource: Resource::L2,
                        mask: 0xffc00,
                        ids: Some(vec![2, 3])
                    }],
                    mb: None,
                    exclusive: false,
                },
            ]
        );
        assert_eq!(
            settings.cache_default,
            Some(CacheDefault {
                masks: vec![CacheMask {
                    resource: Resource::L3,
                    mask: 0x3f,
                    ids: None
                }],
                mb: None
            })
        );
        assert!(!settings.is_empty());
        // CDP halves.
        let s = parse_on(
            &cache_spec("[[configuration.cache]]\ngroup = \"rt\"\ncpus = \"1\"\nl3code = { ways = \"8-11\" }\nl3data = { ways = \"8-11\", ids = [0] }\n"),
            "0-3",
        )
        .unwrap();
        let masks: Vec<(Resource, u64)> = s.configurations[0].settings.cache[0]
            .masks
            .iter()
            .map(|m| (m.resource, m.mask))
            .collect();
        assert_eq!(
            masks,
            [(Resource::L3Code, 0xf00), (Resource::L3Data, 0xf00)]
        );
    }

    #[test]
    fn cache_groups_bad_input_names_file_line_and_key() {
        let g = "[[configuration.cache]]\n";
        assert_eq!(
            cache_err(&format!("{g}cpus = \"1\"\nl3 = {{ ways = \"6-7\" }}\n")),
            "bench.toml:4: configuration[0].cache[0].group: missing; every cache group needs a name, e.g. group = \"rt\""
        );
        assert_eq!(
            cache_err(&format!("{g}group = \"../../etc\"\ncpus = \"1\"\n")),
            "bench.toml:5: configuration[0].cache[0].group: group \"../../etc\" may use only ASCII letters, digits, _ and - (it names a directory under /sys/fs/resctrl)"
        );
        assert_eq!(
            cache_err(&format!("{g}group = \"info\"\ncpus = \"1\"\n")),
            "bench.toml:5: configuration[0].cache[0].group: group \"info\" is a directory of resctrl itself; choose another name"
        );
        assert_eq!(
            cache_err(&format!("{g}group = \"rt\"\nl3 = {{ ways = \"6-7\" }}\n")),
            "bench.toml:4: configuration[0].cache[0].cpus: missing; give the CPUs that allocate with this group's ways, e.g. cpus = \"1\""
        );
        assert_eq!(
            cache_err(&format!(
                "{g}group = \"rt\"\ncpus = \"1,9\"\nl3 = {{ ways = \"6-7\" }}\n"
            )),
            "bench.toml:6: configuration[0].cache[0].cpus: CPU 9 is not online (online CPUs: 0-3)"
        );
        assert_eq!(
            cache_err(&format!(
                "{g}group = \"a\"\ncpus = \"1\"\nl3 = {{ ways = \"6-7\" }}\n{g}group = \"b\"\ncpus = \"0-1\"\nl3 = {{ ways = \"4-5\" }}\n"
            )),
            "bench.toml:10: configuration[0].cache[1].cpus: CPU 1 is already in cache group a (configuration[0].cache[0]); a CPU belongs to one resctrl group"
        );
        assert_eq!(
            cache_err(&format!(
                "{g}group = \"a\"\ncpus = \"1\"\nl3 = {{ ways = \"6-7\" }}\n{g}group = \"a\"\ncpus = \"2\"\nl3 = {{ ways = \"4-5\" }}\n"
            )),
            "bench.toml:9: configuration[0].cache[1].group: name \"a\" is already used by configuration[0].cache[0]; give each cache group its own name"
        );
        assert_eq!(
            cache_err(&format!("{g}group = \"rt\"\ncpus = \"1\"\n")),
            "bench.toml:4: configuration[0].cache[0]: cache group rt allocates nothing; give l3, l2, l3code, l3data, l2code, l2data or mb"
        );
        assert_eq!(
            cache_err(&format!("{g}group = \"rt\"\ncpus = \"1\"\nl3 = {{ ways = \"6-\" }}\n")),
            "bench.toml:7: configuration[0].cache[0].l3.ways: ways \"6-\" is not a list of cache ways; write them like \"6-7\" or \"0,2\" (way 0 is the lowest bit of the mask)"
        );
        assert_eq!(
            cache_err(&format!("{g}group = \"rt\"\ncpus = \"1\"\nl3 = {{ mask = \"0xzz\" }}\n")),
            "bench.toml:7: configuration[0].cache[0].l3.mask: mask \"0xzz\" is not a hex mask; write it like \"0xc0\" (ways 6-7), or give ways = \"6-7\""
        );
        assert_eq!(
            cache_err(&format!(
                "{g}group = \"rt\"\ncpus = \"1\"\nl3 = {{ ways = \"6-7\", mask = \"0xc0\" }}\n"
            )),
            "bench.toml:7: configuration[0].cache[0].l3.mask: give ways or mask, not both"
        );
        assert_eq!(
            cache_err(&format!(
                "{g}group = \"rt\"\ncpus = \"1\"\nl3 = {{ ids = [0] }}\n"
            )),
            "bench.toml:7: configuration[0].cache[0].l3: give ways = \"6-7\" or mask = \"0xc0\""
        );
        assert_eq!(
            cache_err(&format!("{g}group = \"rt\"\ncpus = \"1\"\nl3 = {{ ways = \"7\", ids = [] }}\n")),
            "bench.toml:7: configuration[0].cache[0].l3.ids: ids is empty; leave it out for every cache id, or list some, e.g. ids = [0]"
        );
        assert_eq!(
            cache_err(&format!(
                "{g}group = \"rt\"\ncpus = \"1\"\nl3 = {{ ways = \"7\", ids = [0, 0] }}\n"
            )),
            "bench.toml:7: configuration[0].cache[0].l3.ids[1]: cache id 0 is listed twice"
        );
        assert_eq!(
            cache_err(&format!(
                "{g}group = \"rt\"\ncpus = \"1\"\nl3 = {{ ways = \"7\", ids = [-1] }}\n"
            )),
            "bench.toml:7: configuration[0].cache[0].l3.ids[0]: -1 is out of range 0..=4294967295"
        );
        assert_eq!(
            cache_err(&format!("{g}group = \"rt\"\ncpus = \"1\"\nl3 = {{ ways = \"7\" }}\nl3code = {{ ways = \"7\" }}\n")),
            "bench.toml:8: configuration[0].cache[0].l3code: l3 and l3code/l3data exclude each other: resctrl offers the code and data halves instead of L3 only when mounted with CDP; give one kind"
        );
        assert_eq!(
            cache_err(&format!("{g}group = \"rt\"\ncpus = \"1\"\nmb = 0\n")),
            "bench.toml:7: configuration[0].cache[0].mb: 0 is out of range 1..=100"
        );
        assert_eq!(
            cache_err(&format!("{g}group = \"rt\"\ncpus = \"1\"\nl4 = {{ ways = \"7\" }}\n")),
            "bench.toml:7: configuration[0].cache[0].l4: unknown key `l4`, expected one of `group`, `cpus`, `l3`, `l3code`, `l3data`, `l2`, `l2code`, `l2data`, `mb`, `exclusive`"
        );
        assert_eq!(
            cache_err("[configuration.cache_default]\n"),
            "bench.toml:4: configuration[0].cache_default: shrinks nothing; give l3, l2, l3code, l3data, l2code, l2data or mb, or leave the table out"
        );
        assert_eq!(
            cache_err("[configuration.cache_default]\ngroup = \"x\"\n"),
            "bench.toml:5: configuration[0].cache_default.group: unknown key `group`, expected one of `l3`, `l3code`, `l3data`, `l2`, `l2code`, `l2data`, `mb`"
        );
    }

    #[test]
    fn cache_example_parses() {
        let s = parse_on(include_str!("../../../examples/cache.toml"), "0-3")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.warnings, Vec::<String>::new());
        let names: Vec<&str> = s.configurations.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["shared", "partitioned"]);
        let cache = &s.configurations[1].settings;
        let groups: Vec<(&str, &[usize], u64)> = cache
            .cache
            .iter()
            .map(|g| (g.name.as_str(), g.cpus.as_slice(), g.masks[0].mask))
            .collect();
        assert_eq!(
            groups,
            [
                ("c0", &[0][..], 0xc0),
                ("c1", &[1][..], 0x30),
                ("c2", &[2][..], 0xc)
            ]
        );
        assert_eq!(cache.cache_default.as_ref().unwrap().masks[0].mask, 0x3);
    }

    #[test]
    fn example_specs_parse() {
        let codesys = ok(include_str!("../../../examples/codesys.toml"));
        assert_eq!(codesys.name, "codesys-table10");
        assert_eq!(codesys.cells().len(), 2);
        assert_eq!(codesys.warnings, Vec::<String>::new());
        // The settings the example shows commented out are valid too.
        let mut text = include_str!("../../../examples/codesys.toml").to_string();
        for key in [
            "rt_runtime_us",
            "governor",
            "min_freq",
            "max_freq",
            "fair_server_runtime",
        ] {
            let commented = format!("# {key} = ");
            assert!(text.contains(&commented), "{key}");
            text = text.replace(&commented, &format!("{key} = "));
        }
        let tuned = ok(&text).configurations[1].settings.clone();
        assert_eq!(
            tuned,
            ConfigSettings {
                cache: Vec::new(),
                cache_default: None,
                irq_cpus: Some(vec![0]),
                governor: Some("performance".into()),
                timer_migration: Some(false),
                rt_runtime_us: Some(-1),
                min_freq_khz: Some(2_400_000),
                max_freq_khz: Some(2_400_000),
                fair_server_runtime_ns: Some(0),
            }
        );
        let conditions = ok(include_str!("../../../examples/conditions.toml"));
        assert_eq!(conditions.name, "conditions");
        let names: Vec<&str> = conditions
            .scenarios
            .iter()
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(
            names,
            [
                "idle",
                "cpu",
                "disk",
                "usb",
                "network",
                "scheduling",
                "misc",
                "hog"
            ]
        );
        assert_eq!(conditions.warnings, Vec::<String>::new());
    }

    #[test]
    fn event_probe_keys_are_parsed_and_refused_elsewhere() {
        let spec = ok(
            "duration = \"1s\"\n[[probe]]\nkind = \"chase\"\nbuffer = \"1MiB\"\niterations = 50\nsamples = 200\n\
             [[probe]]\nkind = \"response\"\nsource = \"udp\"\nevent_cpu = \"0\"\nperiod = \"2ms\"\n\
             [[probe]]\nkind = \"ctxswitch\"\nmax_latency = \"50us\"\n",
        );
        let p = &spec.probes;
        assert_eq!(
            (p[0].kind, p[0].buffer_bytes, p[0].iterations, p[0].samples),
            (ProbeKind::Chase, Some(1 << 20), Some(50), Some(200))
        );
        assert_eq!(p[1].samples, None);
        assert_eq!(
            (
                p[1].kind,
                p[1].source.as_deref(),
                p[1].event_cpu,
                p[1].period_ns
            ),
            (ProbeKind::Response, Some("udp"), Some(0), 2_000_000)
        );
        assert_eq!(
            (p[2].kind, p[2].max_latency_ns),
            (ProbeKind::Ctxswitch, Some(50_000))
        );
        assert_eq!(
            err("duration = \"1s\"\n[[probe]]\nkind = \"wakeup\"\nbuffer = \"1MiB\"\n"),
            "bench.toml:4: probe[0].buffer: buffer applies only to kind = \"chase\"; remove it from this wakeup probe"
        );
        assert_eq!(
            err("duration = \"1s\"\n[[probe]]\nkind = \"ctxswitch\"\nmax_jitter = \"1us\"\n"),
            "bench.toml:4: probe[0].max_jitter: max_jitter applies only to kind = \"cyclic\" or kind = \"wakeup\"; remove it from this ctxswitch probe"
        );
        assert_eq!(
            err("duration = \"1s\"\n[[probe]]\nkind = \"chase\"\nmax_latency = \"1us\"\n"),
            "bench.toml:4: probe[0].max_latency: a chase measures CPU cycles, not a latency; remove max_latency from this chase probe"
        );
        assert_eq!(
            err("duration = \"1s\"\n[[probe]]\nkind = \"response\"\nsource = \"pipe\"\n"),
            "bench.toml:4: probe[0].source: unknown event source \"pipe\"; use eventfd or udp"
        );
        assert_eq!(
            err("duration = \"1s\"\n[[probe]]\nkind = \"response\"\nevent_cpu = \"0-1\"\n"),
            "bench.toml:4: probe[0].event_cpu: give exactly one CPU, e.g. event_cpu = \"0\""
        );
        assert_eq!(
            err("duration = \"1s\"\n[[probe]]\nkind = \"chase\"\nbuffer = \"64\"\n"),
            "bench.toml:4: probe[0].buffer: a chase needs at least two cache lines; give e.g. buffer = \"1MiB\""
        );
        assert_eq!(
            err("duration = \"1s\"\n[[probe]]\nkind = \"cyclic\"\nsamples = 200\n"),
            "bench.toml:4: probe[0].samples: samples applies only to kind = \"chase\"; remove it from this cyclic probe"
        );
        assert_eq!(
            err("duration = \"1s\"\n[[probe]]\nkind = \"chase\"\nsamples = 0\n"),
            "bench.toml:4: probe[0].samples: 0 is less than 1"
        );
    }
}
