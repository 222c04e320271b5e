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
//! (design rule 8).
//!
//! # Format
//!
//! ```toml
//! name = "codesys-table10"   # optional; default: the file stem; no control characters
//! duration = "10s"           # measured part of each cell (required), at most 7d
//! warmup = "2s"              # neighbours run alone before the probe starts; default "2s"; "0" ok
//! repetitions = 1            # default 1, 1..=1000
//! deployments = ["host"]     # default ["host"]; "host" and/or "container" (the probe
//!                            # side of the cell in a container; see below)
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
//! outliers = 20              # default 20, 0..=10000
//! max_latency = "200us"      # optional limits: a cell above any → bench exits 1
//!                            # (event probes: on the main metric — handover,
//!                            # response, irq)
//! max_jitter = "100us"       # cyclic and wakeup only
//! max_exec = "1ms"           # cyclic only
//! scenarios = ["idle"]       # optional: only these scenarios (default: every one)
//! duration = "10s"           # optional: this probe's measured time per cell
//!                            # (default: the spec's duration; same limits)
//! ```
//!
//! Times go through [`parse_duration`], sizes through [`parse_size`], CPU
//! lists through [`CpuList::parse`]; every CPU named must be online.
//!
//! A probe limited to some scenarios has cells in those only, and one with
//! its own `duration` measures each of its cells that long (`bench
//! --duration` sets every cell's again); see `scope`.
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
//! A configuration may partition the caches through resctrl ([Intel CODESYS]'s
//! Configuration 3, [Red Hat caterpillar]'s resctrl steps; [`crate::resctrl`] has the
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
//! # Deployments
//!
//! `host` runs the probe as `jitterlab run` does; `container` runs the
//! probe side of the cell inside a container built from the running
//! jitterlab (the binary's `system::container` says how). A probe kind that
//! cannot measure in a container (`timerlat`: its tracer is the host
//! kernel's) says so in its descriptor
//! ([`crate::probe::ProbeDescriptor::container`]); its container cells are
//! skipped with that reason, not refused, so one spec can hold both.
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
//! deployment, probe (innermost), leaving out the scenarios a probe is not
//! limited to: repetitions outermost so slow drift of the
//! machine (temperature, background jobs) spreads over every cell alike
//! instead of biasing the cells measured last.
//!
//! # Layout
//!
//! This file holds the checked model and [`parse`]; the rest is split by
//! responsibility: `probe` is the typed probe model ([`ProbeSpec`] with its
//! per-kind [`ProbeParams`]), `param` the toolkit a kind declares its
//! parameters with, `sched` the scheduling policy and its
//! priority/nice rule, `raw` mirrors the file as written (and names the key
//! of a TOML or serde error), `check` turns it into the model value by
//! value, `scope` a probe's `scenarios` and `duration`, `cache` checks the
//! resctrl tables of a configuration, and `plan`
//! answers what runs, in which order and for how long, and bounds the
//! matrix.
//!
//! The model is not only a spec file's: `jitterlab run X` builds a one-cell
//! [`Spec`] from its flags (one configuration, the `idle` scenario, the
//! `host` deployment, one probe), so the runner has one input whichever
//! front door it came through.
//!
//! [`parse_duration`]: crate::units::parse_duration
//! [`parse_size`]: crate::units::parse_size
//! [`CpuList::parse`]: crate::units::CpuList::parse
//!
//! The design rules and documents cited here are in `docs/design.md`.

mod cache;
mod cell_key;
mod check;
pub mod key_doc;
pub mod param;
mod plan;
mod probe;
mod raw;
mod sched;
mod scope;
#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests_scenarios;

use std::fmt;

use serde::{Deserialize, Serialize};

use self::check::{configurations, deployments, probes, scenarios, Checker};
use self::plan::{check_cells, check_window_rows, Matrix};
use self::raw::{serde_error, RawSpec};
use self::scope::probe_scopes;
use crate::limits;
use crate::resctrl::{CacheDefault, CacheGroup};
use crate::units::CpuList;

pub use self::cell_key::CellKey;
pub use self::check::Check;
pub use self::param::{
    Given, GivenValues, Key, KeyFlag, KindTable, ParamError, ParamTable, Params, PlainParams,
    ValueType,
};
pub use self::plan::short;
pub use self::probe::{scan_fits, ProbeParams, ProbeScope, ProbeSpec};
pub use self::sched::{sched_fields, Policy, SchedError, NICES, PRIORITIES};

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

/// Where the probe side of a cell runs (a spec's `deployments`, stored by
/// its [`name`](Deployment::name) in the cell's key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deployment {
    /// On the host, as `jitterlab run` measures.
    Host,
    /// Inside a container built from the running jitterlab.
    Container,
}

impl Deployment {
    /// Every deployment, in the order messages list them.
    pub const ALL: [Deployment; 2] = [Deployment::Host, Deployment::Container];

    /// The name specs, the command line, the store and reports use.
    pub fn name(self) -> &'static str {
        match self {
            Deployment::Host => "host",
            Deployment::Container => "container",
        }
    }

    /// The deployment named `name`, if there is one.
    pub fn parse(name: &str) -> Option<Deployment> {
        Deployment::ALL.into_iter().find(|d| d.name() == name)
    }

    /// "host or container", for messages.
    pub fn names() -> String {
        let names: Vec<&str> = Deployment::ALL.iter().map(|d| d.name()).collect();
        names.join(" or ")
    }
}

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
    /// Where the probe runs: [`Deployment`] names (`host`, `container`).
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

/// One configuration: how the probe is placed and scheduled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Configuration {
    /// Name, `[A-Za-z0-9_-]+`.
    pub name: String,
    /// CPUs the probe runs on.
    pub probe_cpus: Vec<usize>,
    /// CPUs neighbours run on unless a scenario says otherwise.
    pub neighbour_cpus: Vec<usize>,
    /// Probe scheduling policy (stored by its name).
    #[serde(with = "sched::policy_name")]
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

impl Scenario {
    /// The scenario of a spec without any and of `jitterlab run`: the
    /// built-in `idle`, no neighbour.
    pub fn idle() -> Scenario {
        Scenario {
            name: "idle".into(),
            builtin: Some("idle".into()),
            cpus: None,
            usb_path: None,
            rps_cpus: None,
            neighbours: Vec::new(),
        }
    }
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

impl CellPlan {
    /// True when the probe side of the cell runs in a container
    /// ([`Deployment::Container`]).
    pub fn in_container(&self) -> bool {
        Deployment::parse(&self.key.deployment) == Some(Deployment::Container)
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
    let raw_probes = self::param::raw_probes(&ck, &raw.probe)?;
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
        None => crate::defaults::WARMUP_NS,
    };
    let repetitions = match &raw.repetitions {
        Some(v) => ck.count(v, "repetitions", &limits::REPETITIONS)? as u32,
        None => 1,
    };
    let deployments = deployments(&ck, &raw.deployments)?;

    let configurations = configurations(&mut ck, &raw.configuration)?;
    let scenarios = scenarios(&mut ck, &raw.scenario, &configurations)?;
    let mut probes = probes(&ck, &raw_probes)?;
    probe_scopes(&ck, &raw_probes, &mut probes, &scenarios)?;

    let matrix = Matrix::of(
        u64::from(repetitions),
        configurations.len(),
        &scenarios,
        deployments.len(),
        &probes,
    );
    check_cells(&ck, &raw, &matrix)?;
    check_window_rows(&ck, &raw_probes, &probes, &configurations, duration_ns)?;

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

#[cfg(test)]
mod tests;
