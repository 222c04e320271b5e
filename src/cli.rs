//! The command line, declared with clap's derive API.
//!
//! Every time value on the command line goes through the one unit grammar of
//! `jitterlab_core::units` (`ns`, `us`, `ms`, `s`, `m`, `h`, `d`), every size
//! through its size grammar, every CPU list through the kernel's list format
//! (the parsers are [`parse`]'s).
//! Parsing here checks the grammar and the bounds of `jitterlab_core::limits`
//! — the same constants, with the same words, as a spec's keys: every time
//! at most 7d, periods and intervals at least 10us, windows at least 1ms,
//! working sets and buffers at most 4GiB, and an upper bound on every count
//! (`--outliers`, `--histogram-buckets`, `--cycles`, `--samples`,
//! `--iterations`, `--chase-length`, `--repetitions`) — so a value too large
//! for the machine is refused before anything is allocated. The lower
//! bounds of counts (at least 1) and what depends on the machine (is the
//! CPU online? can the file be written? does the working set fit in
//! memory?) are checked by [`one_cell`], which turns `jitterlab run X`'s
//! flags into the one-cell spec the runner measures, before any thread
//! starts: `run`'s subcommands, their flags and their checks are each
//! kind's (`src/probe/KIND/flags.rs`, declared as data), found through the
//! registry ([`RunCommand`]) and made clap's arguments in [`flags`]. Clap reports its own errors with exit status 2, as jitterlab
//! does for every bad input.
//!
//! Clap's types stop here (`src/cli*`) and in `main`: a kind's `run` gets
//! the plain values of its flags (`FlagValues`), every other command gets a plain
//! request of the module that acts on it ([`BenchRequest`],
//! [`ApplyRequest`], [`ReportRequest`](crate::report::stored::ReportRequest),
//! [`SpecSource`], the network
//! flood's `SinkArgs` and `FloodArgs`, in [`internal`]), and the defaults shown in
//! `--help` are the constants of `jitterlab_core::defaults`.
//!
//! The documents cited here are listed in `docs/design.md`.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use anyhow::Result;
use clap::builder::PossibleValue;
use clap::{Args, Parser, Subcommand, ValueEnum};
use jitterlab_core::powerlink::MAX_CN_NODE;
use jitterlab_core::preset::PresetChoice;
use jitterlab_core::result::ProbeKind;
use jitterlab_core::units::CpuList;

use crate::probe::flags::{EngineArg, FlagValues, ValueKind, ENGINE};
use crate::probe::REGISTRY;
use crate::runner::apply::ApplyRequest;
use crate::runner::bench::BenchRequest;
use crate::runner::spec_source::SpecSource;
use crate::store::Db;
use crate::system::container::Engine;
use parse::{cpu_list, cycle_time, duration, repetitions};

pub mod analyze;
#[cfg(test)]
mod command_line_tests;
pub mod docs;
pub mod docs_gen;
pub mod flags;
#[cfg(test)]
mod inner_cell_tests;
pub mod internal;
pub mod metrics;
pub mod monitor;
pub mod one_cell;
pub mod parse;
mod report;
pub mod stored;

use one_cell::OneCell;

/// The command line as `main` parses it: clap's definition of [`Cli`] with
/// every argument that takes a value allowed to take a negative number, so
/// that `--cpu -1` is refused naming the flag and why (`invalid value '-1'
/// for '--cpu <CPU>'`), not taken for an unknown flag `-1`.
pub fn command() -> clap::Command {
    fn negative_numbers(cmd: clap::Command) -> clap::Command {
        cmd.mut_args(|a| {
            if a.get_action().takes_values() {
                a.allow_negative_numbers(true)
            } else {
                a
            }
        })
        .mut_subcommands(negative_numbers)
    }
    negative_numbers(<Cli as clap::CommandFactory>::command())
}

/// Parses `args` (the program's name first) with [`command`].
pub fn parse_from<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let mut cmd = command();
    let matches = cmd.try_get_matches_from_mut(args)?;
    <Cli as clap::FromArgMatches>::from_arg_matches(&matches).map_err(|e| e.format(&mut cmd))
}

/// Measure and prove the real-time determinism of a Linux machine.
#[derive(Debug, Parser)]
#[command(name = "jitterlab", version = crate::version::LONG, about, long_about = None)]
pub struct Cli {
    /// Root under which every system path (/sys, /proc, /dev) is read and
    /// written; for testing against fake trees.
    #[arg(long, global = true, value_name = "DIR", default_value = "/")]
    pub sysroot: PathBuf,

    /// The results database every run is stored in, and reports read.
    #[arg(
        long,
        global = true,
        value_name = "PATH",
        default_value = "jitterlab.db",
        env = "JITTERLAB_DB"
    )]
    pub db: PathBuf,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Top-level commands.
// Parsed once at start-up: the size of the largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one probe, store it in the database and print its statistics.
    Run(metrics::RunArgs),
    /// Watch a machine for months: wake-up latency on the chosen CPUs that
    /// never ends on its own, stored with OSADL-style retention (1 s windows
    /// for 7 days, 5-minute rows for a year, hourly maxima for ever), resumed
    /// across restarts; alerts over --max-latency go to the journal. Read it
    /// with `report --monitor`; run it as the jitterlab-monitor service.
    Monitor(Box<monitor::MonitorArgs>),
    /// List the runs stored in the database (--host, --since, --until
    /// choose; --json for scripts).
    Runs(stored::RunsArgs),
    /// Print the stored result of runs (default: the latest).
    Report(ReportArgs),
    /// Merge another machine's runs (its results database) into this
    /// one: every run not already here, with its host kept apart.
    Import(stored::ImportArgs),
    /// Run an experiment: every cell (configuration × scenario × deployment ×
    /// probe × repetition) of a TOML spec or a preset, with its noisy
    /// neighbours, stored in the database; prints the seeds' tables (exit 1
    /// when a cell exceeded a probe's limit or failed).
    Bench(BenchArgs),
    /// Apply one configuration of a spec (IRQ affinity, sysctls, governor,
    /// PM QoS) and hold it for your own software until Ctrl-C, which puts
    /// everything back.
    Apply(ApplyArgs),
    /// List the built-in experiments (`bench --preset NAME`) and what each
    /// reproduces.
    Presets(PresetsArgs),
    /// Put the machine back after a jitterlab that was killed: kill the
    /// neighbours it left, delete its network namespaces, write back every
    /// value it changed (from its journal), and say what was done. Only
    /// files a jitterlab setting writes are written back; what is gone
    /// (an IRQ, a namespace, a process) is dropped. Exit 0 when the journal
    /// is done with, 1 when changes stay in it for a person (each line says
    /// what to do), 2 for bad input.
    Restore,
    /// Audit the machine's readiness for real-time measurement: one finding
    /// per setting, with the fix for each (exit 1 only when nothing can be
    /// measured).
    Check(CheckArgs),
    /// Read a POWERLINK capture (pcap or pcapng, from netcycle --pcap or
    /// tcpdump) and print its cycle and SoC jitter figures ([Baumgartner POWERLINK] Table
    /// 4), per-CN polls and response times, late cycles and NMT states.
    Analyze(analyze::AnalyzeArgs),
    /// Internal: write a synthetic POWERLINK capture (bench/analyze.sh).
    #[command(name = "__synth-capture", hide = true)]
    SynthCapture(analyze::SynthCaptureArgs),
    /// Internal: the network flood's receiver, run inside the probe's
    /// namespace by `ip netns exec`.
    #[command(name = "__net-sink", hide = true)]
    NetSink(internal::NetSinkArgs),
    /// Internal: the network flood's sender, run inside the sender
    /// namespace by `ip netns exec`.
    #[command(name = "__net-flood", hide = true)]
    NetFlood(internal::NetFloodArgs),
    /// Internal: steer an interface's receive work (RPS) inside the
    /// namespace it runs in, started by `ip netns exec`.
    #[command(name = "__rps", hide = true)]
    NetRps(internal::NetRpsArgs),
    /// Internal: write a synthetic monitor series into a new database
    /// (bench/monitor-year.sh).
    #[command(name = "__synth-monitor", hide = true)]
    SynthMonitor(internal::SynthMonitorArgs),
    /// Internal: measure the one cell a container cell hands over, as
    /// JSON, inside its container (`probe::container::InnerCell`).
    #[command(name = "__cell", hide = true)]
    Cell(internal::CellArgs),
    /// Internal: write the man pages and shell completions (`make deb`).
    #[command(name = "__generate-docs", hide = true)]
    GenerateDocs(docs::GenerateDocsArgs),
}

/// `jitterlab check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Print the schema-versioned findings and host snapshot as JSON.
    #[arg(long)]
    pub json: bool,

    /// The probe CPUs the audit is about: their SMT siblings, C-states and
    /// IRQs [default: the last online CPU, as `jitterlab run` uses].
    #[arg(long, value_name = "LIST", value_parser = cpu_list)]
    pub cpus: Option<CpuList>,
}

/// `jitterlab presets`.
#[derive(Debug, Args)]
pub struct PresetsArgs {
    /// Print this preset's spec, fitted to this machine's CPUs, as TOML
    /// (a starting point for a spec of your own).
    #[arg(long, value_name = "NAME")]
    pub show: Option<String>,
}

/// Where a spec comes from, and the command line's overrides of it.
#[derive(Debug, Args)]
pub struct SpecSourceArgs {
    /// The experiment's spec (TOML; see examples/); or give --preset.
    #[arg(value_name = "SPEC", conflicts_with = "preset")]
    pub spec: Option<PathBuf>,

    /// A built-in experiment instead of a spec file (see `jitterlab presets`).
    #[arg(long, value_name = "NAME")]
    pub preset: Option<String>,

    /// Override every cell's measured duration.
    #[arg(long, value_name = "TIME", value_parser = duration, allow_hyphen_values = true)]
    pub duration: Option<u64>,

    /// Override the warm-up before each cell's probe starts.
    #[arg(long, value_name = "TIME", value_parser = duration, allow_hyphen_values = true)]
    pub warmup: Option<u64>,

    /// Override the number of repetitions (at most 1000).
    #[arg(long, value_name = "N", value_parser = repetitions, allow_hyphen_values = true)]
    pub repetitions: Option<u32>,

    /// Directory on a USB drive for the `usb` scenario (when the spec gives none).
    #[arg(long, value_name = "DIR")]
    pub usb_path: Option<PathBuf>,

    /// `--metrics`, for `bench` and `apply`.
    #[command(flatten)]
    pub metrics: metrics::MetricsArg,
}

/// `jitterlab apply`.
#[derive(Debug, Args)]
pub struct ApplyArgs {
    /// The spec (or preset) that defines the configuration.
    #[command(flatten)]
    pub source: SpecSourceArgs,

    /// The configuration to hold [default: the spec's only one].
    #[arg(long, value_name = "NAME")]
    pub configuration: Option<String>,
}

/// `jitterlab bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// The spec, a preset, and overrides.
    #[command(flatten)]
    pub source: SpecSourceArgs,

    /// Validate the spec and print the plan only; change nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// Write the stored run (every cell with its figures and context) as JSON
    /// (`-`: stdout; the tables then go to stderr).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Write every cell's verdicts as a JUnit XML report for CI servers:
    /// one test suite per cell, one test case per limit and check
    /// (`-`: stdout).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,

    /// Format of the tables printed at the end.
    #[arg(long, value_enum, default_value = "text")]
    pub format: ReportFormat,

    /// The container engine of the spec's container cells [default:
    /// podman, else docker, whichever answers `ENGINE version`].
    #[arg(long, value_name = "ENGINE", value_parser = engine())]
    pub engine: Option<EngineArg>,

    /// The rows of a preset's load table: POWERLINK cycle times
    /// (`--preset powerlink`) [default: 250us,500us,1ms,2ms,5ms,10ms].
    #[arg(long, value_name = "TIME,…", value_delimiter = ',', value_parser = cycle_time, allow_hyphen_values = true)]
    pub cycles: Vec<u64>,

    /// The columns of a preset's load table: controlled nodes, 1-239
    /// (`--preset powerlink`) [default: 3,10,20,40].
    #[arg(long, value_name = "N,…", value_delimiter = ',', value_parser = clap::value_parser!(u8).range(1..=i64::from(MAX_CN_NODE)))]
    pub cns: Vec<u8>,
}

/// `jitterlab report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Runs by id or uid (or its first 4+ characters), as `jitterlab runs`
    /// lists them [default: the latest run]. Two runs are compared cell by
    /// cell (A, B, and B as % of A), from one machine or two.
    #[arg(value_name = "RUN", allow_negative_numbers = true, value_parser = stored::run_ref)]
    pub runs: Vec<String>,

    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: ReportFormat,

    /// Configuration the "vs baseline" columns compare with [default: the
    /// spec's baseline, else its first configuration].
    #[arg(long, value_name = "NAME")]
    pub baseline: Option<String>,

    /// Print only these tables (repeat the flag for several) [default: the
    /// configuration table with 2+ configurations, the condition table with
    /// 2+ scenarios, the latency table always, the chase table when a cell
    /// ran the chase probe, the round-trip table when one ran roundtrip,
    /// the load table when netcycle cells swept cycle times or nodes].
    #[arg(long = "table", value_enum, value_name = "TABLE")]
    pub tables: Vec<TableArg>,

    /// Leave out the per-cell explanations of outliers (steal, interrupts,
    /// softirqs, context switches, neighbours' CPU time).
    #[arg(long)]
    pub no_explain: bool,

    /// Watch a run in progress: render its report again at every window
    /// until it ends (on a terminal in place; piped, each render after a
    /// line `--- <time> ---`; with -o, FILE replaced each time). Ctrl-C
    /// stops watching (the run goes on).
    #[arg(long)]
    pub follow: bool,

    /// Instead of the report, write the run's stored 1 us latency histogram
    /// in cyclictest's text format, as `run --histogram` wrote it (a run of
    /// one cell; `-`: stdout).
    #[arg(long, value_name = "FILE")]
    pub histogram: Option<PathBuf>,

    /// Write the report to FILE (an existing file is replaced atomically;
    /// never a symbolic link, FIFO or device) instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Also write the run's verdicts, recomputed from its stored figures,
    /// as a JUnit XML report for CI servers (one RUN).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["follow", "histogram"])]
    pub junit: Option<PathBuf>,

    /// Instead of runs, the monitoring view of a `jitterlab monitor`
    /// series [default: the latest monitor's]: worst ever with its time,
    /// worst of the last week and day, the last hour's percentiles, the
    /// segments with each resumption, what the retention holds; with
    /// --format html, the plot of the 5-minute maxima. Text, json or html.
    #[arg(
        long,
        value_name = "SERIES",
        num_args = 0..=1,
        conflicts_with_all = ["runs", "baseline", "tables", "no_explain", "follow", "histogram", "junit"]
    )]
    pub monitor: Option<Option<String>>,

    /// Compare RUN [default: the latest] with the stored baseline run BASE
    /// for CI: per cell (matched by configuration, scenario, deployment and
    /// probe) and metric, p99 and max of base and run, the change in %, and
    /// which regressed beyond --max-regression. Exit 1 on a regression, or
    /// when no figure was measured in both runs; 0 otherwise. Text, csv or
    /// json.
    #[arg(
        long,
        value_name = "BASE",
        value_parser = stored::run_ref,
        conflicts_with_all = ["monitor", "follow", "histogram", "tables", "baseline"]
    )]
    pub against: Option<String>,

    /// With --against: the largest increase of a p99 or max, in % of the
    /// base, that is not a regression [default: 0].
    #[arg(
        long,
        value_name = "PCT",
        requires = "against",
        allow_hyphen_values = true
    )]
    pub max_regression: Option<String>,
}

/// Tables of `jitterlab report --table`: the shared ones, then every
/// registered kind's own ([`crate::probe::parts::kind_tables`]), so a kind
/// adds its tables to the flag from its folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableArg {
    /// [Intel CODESYS] Table 10: per configuration, vs the baseline.
    Configurations,
    /// [Baumgartner POWERLINK] Tables 4–5: per scenario, min/max cycle and deviation.
    Conditions,
    /// [Xu EPICS]: min, median, max latency and % over threshold per cell.
    Latency,
    /// [Red Hat caterpillar]: chase cycles and sample jitter per chase cell, vs the
    /// baseline.
    Chase,
    /// A kind's own table, by its name (`KindTable::name`).
    Kind(&'static str),
}

impl ValueEnum for TableArg {
    fn value_variants<'a>() -> &'a [Self] {
        static ALL: LazyLock<Vec<TableArg>> = LazyLock::new(|| {
            [
                TableArg::Configurations,
                TableArg::Conditions,
                TableArg::Latency,
                TableArg::Chase,
            ]
            .into_iter()
            .chain(crate::probe::parts::kind_tables().map(|t| TableArg::Kind(t.name)))
            .collect()
        });
        &ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        let (name, help) = match self {
            TableArg::Configurations => (
                "configurations",
                "[Intel CODESYS] Table 10: per configuration, vs the baseline",
            ),
            TableArg::Conditions => (
                "conditions",
                "[Baumgartner POWERLINK] Tables 4–5: per scenario, min/max cycle and deviation",
            ),
            TableArg::Latency => (
                "latency",
                "[Xu EPICS]: min, median, max latency and % over threshold per cell",
            ),
            TableArg::Chase => (
                "chase",
                "[Red Hat caterpillar]: chase cycles and sample jitter per chase cell, vs the baseline",
            ),
            TableArg::Kind(name) => {
                let t = crate::probe::parts::kind_tables().find(|t| t.name == *name)?;
                (t.name, t.help)
            }
        };
        Some(PossibleValue::new(name).help(help))
    }
}

/// Formats of `jitterlab report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// Aligned tables for a terminal.
    Text,
    /// Markdown (GitHub pipe tables).
    Md,
    /// One CSV document with a header row.
    Csv,
    /// Schema-versioned JSON.
    Json,
    /// One self-contained HTML page: the verdict, the tables and per cell
    /// its latency histogram, percentile curve and timeline.
    Html,
}

/// The probe `jitterlab run` runs: its subcommand's name and what clap
/// matched for its flags. The subcommands are the registry's
/// ([`crate::probe::REGISTRY`], each kind's `command`, in its order), so
/// the command line names no kind; [`RunCommand::one_cell`] hands the
/// matches to the kind's own check.
#[derive(Debug, Clone)]
pub struct RunCommand {
    kind: ProbeKind,
    values: FlagValues,
}

impl RunCommand {
    /// The kind of the probe.
    #[cfg(test)]
    pub fn kind(&self) -> ProbeKind {
        self.kind
    }

    /// The values the command line gave the probe's flags.
    #[cfg(test)]
    pub fn values(&self) -> &FlagValues {
        &self.values
    }

    /// Where the run is stored: the database at `path` (`--db`), or none
    /// with `--no-db` (a flag of every kind's).
    pub fn db(&self, path: &Path) -> Db {
        Db::new(path, self.values.switch("no_db"))
    }

    /// Checks the subcommand's flags against the machine under `root` and
    /// turns them into the one-cell spec the runner measures (`db`: the
    /// results database it will be stored in).
    pub fn one_cell(&self, root: &Path, db: &Db) -> Result<OneCell> {
        (crate::probe::registration(self.kind).one_cell)(&self.values, root, db)
    }
}

impl clap::FromArgMatches for RunCommand {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        use clap::error::ErrorKind;
        let Some((name, sub)) = matches.subcommand() else {
            return Err(clap::Error::raw(
                ErrorKind::MissingSubcommand,
                "A subcommand is required but one was not provided.",
            ));
        };
        let r = REGISTRY
            .iter()
            .find(|r| r.kind.name() == name)
            .ok_or_else(|| {
                clap::Error::raw(
                    ErrorKind::InvalidSubcommand,
                    format!("The subcommand '{name}' wasn't recognized"),
                )
            })?;
        Ok(RunCommand {
            kind: r.kind,
            values: flags::values(&(r.flags)().flags, sub),
        })
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

impl Subcommand for RunCommand {
    fn augment_subcommands(cmd: clap::Command) -> clap::Command {
        REGISTRY.iter().fold(cmd, |cmd, r| {
            cmd.subcommand(flags::command(r.kind, &(r.flags)()))
        })
    }

    fn augment_subcommands_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_subcommands(cmd)
    }

    fn has_subcommand(name: &str) -> bool {
        REGISTRY.iter().any(|r| r.kind.name() == name)
    }
}

/// `bench --engine`: the names and help of `run --engine`.
fn engine() -> impl clap::builder::TypedValueParser<Value = EngineArg> {
    use clap::builder::TypedValueParser;
    let ValueKind::Choice { names, helps } = ENGINE else {
        unreachable!("--engine is a choice")
    };
    flags::choice(names, helps).map(|name| EngineArg::parse(&name).expect("one of the names"))
}

// ---------------------------------------------------------------------------
// From the parsed command line to the plain requests of the modules that
// act on it (no module but this one, `main` and the kinds' flags sees a
// clap type).

impl SpecSourceArgs {
    /// The spec source `bench` and `apply` load.
    pub fn source(&self) -> SpecSource {
        SpecSource {
            spec: self.spec.clone(),
            preset: self.preset.clone(),
            duration: self.duration,
            warmup: self.warmup,
            repetitions: self.repetitions,
            usb_path: self.usb_path.clone(),
            choice: PresetChoice::default(),
        }
    }
}

impl BenchArgs {
    /// What the bench is asked for.
    pub fn request(&self) -> BenchRequest {
        BenchRequest {
            source: SpecSource {
                choice: PresetChoice {
                    cycles_ns: self.cycles.clone(),
                    cns: self.cns.clone(),
                },
                ..self.source.source()
            },
            dry_run: self.dry_run,
            json: self.json.clone(),
            junit: self.junit.clone(),
            format: self.format.into(),
            engine: self.engine.map(Engine::from),
        }
    }
}

impl ApplyArgs {
    /// What `apply` is asked for.
    pub fn request(&self) -> ApplyRequest {
        ApplyRequest {
            source: self.source.source(),
            configuration: self.configuration.clone(),
        }
    }
}

#[cfg(test)]
mod tests;
