//! The command line, declared with clap's derive API.
//!
//! Every time value on the command line goes through the one unit grammar of
//! `jitterlab_core::units` (`ns`, `us`, `ms`, `s`, `m`, `h`, `d`), every size
//! through its size grammar, every CPU list through the kernel's list format.
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
//! starts. Clap reports its own errors with exit status 2, as jitterlab
//! does for every bad input.
//!
//! Clap's types stop here and in `main`: every other command gets a plain
//! request of the module that acts on it ([`BenchRequest`],
//! [`ApplyRequest`], [`ReportRequest`](crate::report::stored::ReportRequest),
//! [`SpecSource`], the network
//! flood's `SinkArgs` and `FloodArgs`, in [`internal`]), and the defaults shown in
//! `--help` are the constants of `jitterlab_core::defaults`.
//!
//! The documents cited here are listed in `docs/design.md`.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::builder::{OsStr, PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand, ValueEnum};
use jitterlab_core::defaults;
use jitterlab_core::limits::{self, Count};
use jitterlab_core::powerlink::MAX_CN_NODE;
use jitterlab_core::preset::PresetChoice;
use jitterlab_core::response::ResponseSource;
use jitterlab_core::spec::{Deployment, Policy};
use jitterlab_core::units::{format_duration_exact, parse_duration, parse_size, CpuList};

use crate::runner::apply::ApplyRequest;
use crate::runner::bench::BenchRequest;
use crate::runner::spec_source::SpecSource;
use crate::system::container::Engine;

pub mod analyze;
#[cfg(test)]
mod command_line_tests;
#[cfg(test)]
mod container_argv_tests;
pub mod docs;
pub mod docs_gen;
pub mod internal;
pub mod metrics;
pub mod monitor;
pub mod netcycle;
pub mod observe;
pub mod one_cell;
mod report;
pub mod roundtrip;
pub mod stored;

pub use netcycle::NetcycleRunArgs;
use one_cell::OneCell;
pub use roundtrip::RoundtripRunArgs;

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
    #[arg(long, value_enum)]
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

/// Tables of `jitterlab report --table`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
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
    /// [Red Hat controls]: screw to screw against the worst-case budget, T2→T3,
    /// jitter and execution time per roundtrip cell.
    Roundtrip,
    /// [Baumgartner POWERLINK] Tables 2–3: the POWERLINK managing node's CPU load per
    /// cycle time × controlled nodes, N/A where not held, vs the seed.
    Load,
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

/// Probes `jitterlab run` can run.
#[derive(Debug, Subcommand)]
pub enum RunCommand {
    /// Control-task emulation: a periodic task with a cache-sensitive scan
    /// (wake-up latency, period, periodic jitter, execution time, overruns).
    Cyclic(CyclicArgs),
    /// Timer wake-up latency on one thread per CPU, as cyclictest measures it.
    Wakeup(WakeupArgs),
    /// Cache sensitivity: a pointer chase over a buffer sized to the cache
    /// the neighbours share, timed in CPU cycles, with caterpillar's
    /// per-sample columns ([Red Hat caterpillar]).
    Chase(ChaseRunArgs),
    /// Context-switch latency: two SCHED_FIFO threads on one CPU handing a
    /// token back and forth (eventfd); one sample per hand-over.
    Ctxswitch(CtxswitchRunArgs),
    /// Response latency: an event made on another CPU (eventfd write or UDP
    /// datagram between two namespaces) wakes the real-time thread, which
    /// answers it ([Xu EPICS]'s interrupt-to-user and total response).
    Response(ResponseRunArgs),
    /// Interrupt and thread latency from the kernel's timerlat tracer,
    /// through `rtla timerlat hist` (Debian package rtla); refused, with the
    /// reason, where the kernel has no timerlat tracer.
    Timerlat(TimerlatRunArgs),
    /// Screw-to-screw round trip over OPC UA PubSub ([Red Hat controls]): an I/O
    /// simulator and a controller, checked against the worst-case budget.
    Roundtrip(Box<RoundtripRunArgs>),
    /// A POWERLINK managing node polling N emulated controlled nodes (
    /// [Baumgartner POWERLINK]): SoC jitter, cycle completion, missed PRes, held or not.
    Netcycle(Box<NetcycleRunArgs>),
    /// A running task's cycles from the kernel's scheduler and timer
    /// tracepoints (latency split into timer IRQ and thread latency,
    /// period, jitter, execution time, overruns), and what delayed its late
    /// cycles; the task is not changed.
    Observe(Box<observe::ObserveRunArgs>),

    /// A probe compiled only for tests: how late a thread wakes from a
    /// sleep of one period (1 ms), one sample per sleep.
    #[cfg(feature = "test-probe")]
    #[command(hide = true)]
    Sleep(SleepRunArgs),
}

impl RunCommand {
    /// Checks the subcommand's flags against the machine under `root` and
    /// turns them into the one-cell spec the runner measures (`db`: the
    /// results database it will be stored in).
    pub fn one_cell(&self, root: &Path, db: &Path) -> Result<OneCell> {
        match self {
            RunCommand::Cyclic(a) => one_cell::cyclic(root, db, a),
            RunCommand::Wakeup(a) => one_cell::wakeup(root, db, a),
            RunCommand::Chase(a) => one_cell::chase(root, db, a),
            RunCommand::Ctxswitch(a) => one_cell::ctxswitch(root, db, a),
            RunCommand::Response(a) => one_cell::response(root, db, a),
            RunCommand::Timerlat(a) => one_cell::timerlat(root, db, a),
            RunCommand::Roundtrip(a) => roundtrip::roundtrip(root, db, a),
            RunCommand::Netcycle(a) => netcycle::netcycle(root, db, a),
            RunCommand::Observe(a) => observe::observe(root, db, a),
            #[cfg(feature = "test-probe")]
            RunCommand::Sleep(a) => sleep_cell(root, db, a),
        }
    }
}

/// `jitterlab run sleep` (the `test-probe` feature).
#[cfg(feature = "test-probe")]
#[derive(Debug, Args)]
pub struct SleepRunArgs {
    /// CPU to sleep on [default: the last online CPU].
    #[arg(long, value_name = "CPU")]
    pub cpu: Option<usize>,

    /// Options every probe shares (--break-trace, --histogram and the
    /// --max-* limits do not apply).
    #[command(flatten)]
    pub common: CommonArgs,
}

/// `jitterlab run sleep`: one sleep probe on one CPU, every period of the
/// default 1 ms, with the common flags.
#[cfg(feature = "test-probe")]
fn sleep_cell(root: &Path, db: &Path, a: &SleepRunArgs) -> Result<OneCell> {
    use jitterlab_core::result::ProbeKind;
    use jitterlab_core::spec::{PlainParams, ProbeParams};
    one_cell::refuse_periodic_flags(ProbeKind::Sleep, &a.common)?;
    if a.common.max_latency.is_some() {
        return Err(crate::error::bad(
            "--max-latency does not apply to run sleep",
        ));
    }
    let online = crate::system::host::online_cpus(root)?;
    let cpu = one_cell::probe_cpu(&online, a.cpu, "--cpu")?;
    one_cell::check_common(db, &a.common, defaults::PERIOD_NS, 1)?;
    one_cell::common_cell(
        ProbeParams::new(PlainParams(ProbeKind::Sleep)),
        defaults::PERIOD_NS,
        vec![cpu],
        &online,
        &a.common,
    )
}

/// `jitterlab run chase`.
#[derive(Debug, Args)]
pub struct ChaseRunArgs {
    /// CPU to chase on [default: the last online CPU; with --roles, the
    /// test role].
    #[arg(long, value_name = "CPU", conflicts_with = "roles")]
    pub cpu: Option<usize>,

    /// Cores as [Red Hat caterpillar]'s script places them: test=CPU,neighbour=CPU,irq=CPU.
    /// The neighbour CPU chooses the shared cache that sizes the buffer; the
    /// irq CPU receives every movable IRQ for the run (put back after).
    #[arg(long, value_name = "ROLES")]
    pub roles: Option<String>,

    /// Buffer to chase [default: half of the cache level the probe CPU
    /// shares with the neighbours].
    #[arg(long, value_name = "SIZE", value_parser = memory)]
    pub buffer: Option<u64>,

    /// Timed chases per sample; a sample's jitter is their max - min.
    #[arg(long, value_name = "N", default_value_t = defaults::ITERATIONS, value_parser = iterations, allow_hyphen_values = true)]
    pub iterations: u64,

    /// Samples to take [default: 200, or as many as --duration allows].
    #[arg(long, value_name = "N", conflicts_with = "duration", value_parser = samples, allow_hyphen_values = true)]
    pub samples: Option<u64>,

    /// Dependent loads in one timed chase (continuing around the buffer's
    /// cycle from one chase to the next).
    #[arg(long, value_name = "N", default_value_t = defaults::CHASE_LENGTH, value_parser = chase_length, allow_hyphen_values = true)]
    pub chase_length: u64,

    /// Options every probe shares (--cycles, --break-trace, --histogram and
    /// the --max-* limits do not apply to a chase).
    #[command(flatten)]
    pub common: CommonArgs,
}

/// `jitterlab run ctxswitch`.
#[derive(Debug, Args)]
pub struct CtxswitchRunArgs {
    /// CPU both threads share [default: the last online CPU].
    #[arg(long, value_name = "CPU")]
    pub cpu: Option<usize>,

    /// One round trip (two hand-overs) per interval (at least 10us); 0
    /// hands the token back to back, as `perf bench sched pipe` does (the
    /// CPU is then busy with real-time work for the whole run).
    #[arg(long, value_name = "TIME", default_value = default_time(defaults::PERIOD_NS), value_parser = period, allow_hyphen_values = true)]
    pub interval: u64,

    /// Options every probe shares (--cycles counts hand-overs; --max-latency
    /// limits the hand-over latency).
    #[command(flatten)]
    pub common: CommonArgs,
}

/// `jitterlab run response`.
#[derive(Debug, Args)]
pub struct ResponseRunArgs {
    /// CPU of the real-time thread [default: the last online CPU].
    #[arg(long, value_name = "CPU")]
    pub cpu: Option<usize>,

    /// CPU the events are made on [default: the first other online CPU].
    #[arg(long, value_name = "CPU")]
    pub event_cpu: Option<usize>,

    /// What makes the event.
    #[arg(long, default_value = ResponseSource::Eventfd.name(), value_parser = source_parser())]
    pub source: ResponseSource,

    /// Time between events (at least 10us).
    #[arg(long, value_name = "TIME", default_value = default_time(defaults::PERIOD_NS), value_parser = period, allow_hyphen_values = true)]
    pub interval: u64,

    /// Options every probe shares (--cycles counts events; --max-latency
    /// limits event → response sent).
    #[command(flatten)]
    pub common: CommonArgs,
}

/// `jitterlab run timerlat`.
#[derive(Debug, Args)]
pub struct TimerlatRunArgs {
    /// CPUs to measure, e.g. 1,3 or 2-5 [default: every online CPU but CPU 0
    /// when there is more than one].
    #[arg(long, value_name = "LIST", value_parser = cpu_list)]
    pub cpus: Option<CpuList>,

    /// Period of the tracer's timer (whole microseconds, 100us to 1s).
    #[arg(long, value_name = "TIME", default_value = default_time(defaults::PERIOD_NS), value_parser = period, allow_hyphen_values = true)]
    pub period: u64,

    /// How long to measure (whole seconds: rtla's own unit).
    #[arg(long, value_name = "TIME", default_value = default_time(defaults::DURATION_NS), value_parser = duration, allow_hyphen_values = true)]
    pub duration: u64,

    /// SCHED_FIFO priority of the tracer's measuring threads.
    #[arg(long, value_name = "PRIO", default_value_t = defaults::PRIORITY as u8)]
    pub priority: u8,

    /// Latency above which a sample counts in the "% over" column.
    #[arg(long, value_name = "TIME", default_value = default_time(defaults::THRESHOLD_NS), value_parser = duration, allow_hyphen_values = true)]
    pub threshold: u64,

    /// Measure with user-space threads (rtla -u, since rtla 6.6): adds the
    /// return-to-user latency.
    #[arg(long)]
    pub user_threads: bool,

    /// Also write the whole versioned result as JSON to this file (`-`:
    /// stdout; the summary then goes to stderr).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Do not store the run in the results database.
    #[arg(long)]
    pub no_db: bool,

    /// Where the probe runs; timerlat measures the host kernel's tracer and
    /// is N/A in a container (refused with the reason).
    #[arg(long, value_enum, default_value = "host")]
    pub deployment: DeploymentArg,
}

/// `jitterlab run cyclic`.
#[derive(Debug, Args)]
pub struct CyclicArgs {
    /// Task period T0 (at least 10us).
    #[arg(long, value_name = "TIME", default_value = default_time(defaults::PERIOD_NS), value_parser = period, allow_hyphen_values = true)]
    pub period: u64,

    /// CPU to run the task on [default: the last online CPU].
    #[arg(long, value_name = "CPU")]
    pub cpu: Option<usize>,

    /// Compute time of the scan per cycle, calibrated once on the idle probe
    /// CPU before the run and then fixed (0 for none).
    #[arg(long, value_name = "TIME", default_value = default_time(defaults::SCAN_NS), value_parser = duration, allow_hyphen_values = true)]
    pub scan: u64,

    /// Memory the scan walks per cycle in a random order, one cache line at a
    /// time (0 for none; at most 4GiB and half the machine's memory).
    #[arg(long, value_name = "SIZE", default_value = default_size(defaults::WORKING_SET_BYTES), value_parser = memory)]
    pub working_set: u64,

    /// Options every probe shares.
    #[command(flatten)]
    pub common: CommonArgs,
}

/// `jitterlab run wakeup`.
#[derive(Debug, Args)]
pub struct WakeupArgs {
    /// Wake-up interval of every thread (at least 10us).
    #[arg(long, value_name = "TIME", default_value = default_time(defaults::PERIOD_NS), value_parser = period, allow_hyphen_values = true)]
    pub interval: u64,

    /// CPUs to measure, one thread each, e.g. 1,3 or 2-5 [default: every
    /// online CPU but CPU 0 when there is more than one].
    #[arg(long, value_name = "LIST", value_parser = cpu_list)]
    pub cpus: Option<CpuList>,

    /// Options every probe shares.
    #[command(flatten)]
    pub common: CommonArgs,
}

/// Options shared by `run cyclic` and `run wakeup`.
#[derive(Debug, Args)]
pub struct CommonArgs {
    /// How long to run [default: 10s unless --cycles is given].
    #[arg(long, value_name = "TIME", value_parser = duration, conflicts_with = "cycles", allow_hyphen_values = true)]
    pub duration: Option<u64>,

    /// Number of measured cycles per thread, instead of --duration.
    #[arg(long, value_name = "N", value_parser = cycles, allow_hyphen_values = true)]
    pub cycles: Option<u64>,

    /// Scheduling policy.
    #[arg(long, default_value = Policy::Fifo.name(), value_parser = policy_parser())]
    pub policy: Policy,

    /// Real-time priority for fifo/rr (1-99) [default: 95]; not with other.
    #[arg(long, value_name = "PRIO", allow_negative_numbers = true)]
    pub priority: Option<i32>,

    /// Nice value for --policy other (-20..19) [default: 0]; not with fifo/rr.
    #[arg(long, value_name = "NICE", allow_negative_numbers = true)]
    pub nice: Option<i32>,

    /// Fail (exit 2) when a real-time default (scheduler, pinning, mlockall,
    /// /dev/cpu_dma_latency) cannot be applied, instead of marking the result
    /// "not real-time".
    #[arg(long)]
    pub strict: bool,

    /// Width of the per-window rows (min, max, mean, count); at least 1ms.
    #[arg(long, value_name = "TIME", default_value = default_time(defaults::WINDOW_NS), value_parser = window, allow_hyphen_values = true)]
    pub window: u64,

    /// Threshold for the share of samples over it (EPICS tables use 100us).
    #[arg(long, value_name = "TIME", default_value = default_time(defaults::THRESHOLD_NS), value_parser = duration, allow_hyphen_values = true)]
    pub threshold: u64,

    /// Outliers kept per metric, with cycle number and time since start
    /// (at most 10000).
    #[arg(long, value_name = "N", default_value_t = defaults::OUTLIERS, value_parser = outliers, allow_hyphen_values = true)]
    pub outliers: usize,

    /// Write the schema-versioned result (statistics, host snapshot, real-time
    /// set-up) as JSON (`-`: stdout; the summary then goes to stderr).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Write the verdicts as a JUnit XML report for CI servers: one test
    /// case per limit and check, a failure with its figure, "not measured"
    /// as a failure with its reason (`-`: stdout).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,

    /// Write the per-window rows as CSV (streamed while running into a file
    /// renamed over FILE when the run ends; `-`: stdout, row by row).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,

    /// Write the wake-up latency histogram in cyclictest's text format
    /// (1 us buckets; `-`: stdout).
    #[arg(long, value_name = "FILE")]
    pub histogram: Option<PathBuf>,

    /// Number of 1 us buckets of the main latency's histogram, stored with
    /// the run and written by --histogram (at most 100000); later
    /// latencies count as overflows.
    #[arg(long, value_name = "N", default_value_t = defaults::HISTOGRAM_BUCKETS, value_parser = histogram_buckets, allow_hyphen_values = true)]
    pub histogram_buckets: usize,

    /// Exit 1 when a wake-up latency exceeds this.
    #[arg(long, value_name = "TIME", value_parser = duration, allow_hyphen_values = true)]
    pub max_latency: Option<u64>,

    /// Exit 1 when a periodic jitter's magnitude exceeds this.
    #[arg(long, value_name = "TIME", value_parser = duration, allow_hyphen_values = true)]
    pub max_jitter: Option<u64>,

    /// Exit 1 when an execution time exceeds this.
    #[arg(long, value_name = "TIME", value_parser = duration, allow_hyphen_values = true)]
    pub max_exec: Option<u64>,

    /// When a wake-up latency exceeds this, mark the kernel trace buffer, stop
    /// tracing, and end the run (cyclictest's -b).
    #[arg(long, value_name = "TIME", value_parser = duration, allow_hyphen_values = true)]
    pub break_trace: Option<u64>,

    /// Show the live status even when stdout is not a terminal (plain lines on
    /// stderr, once a second).
    #[arg(long)]
    pub progress: bool,

    /// Do not hold /dev/cpu_dma_latency at 0 (to measure an untuned baseline).
    #[arg(long)]
    pub no_dma_latency: bool,

    /// Do not store the run in the results database.
    #[arg(long)]
    pub no_db: bool,

    /// Where the probe runs: on the host, or inside a container built from
    /// this jitterlab (FROM scratch, no registry), with every real-time
    /// default or not at all.
    #[arg(long, value_enum, default_value = "host")]
    pub deployment: DeploymentArg,

    /// The container engine of --deployment container [default: podman,
    /// else docker, whichever answers `ENGINE version`].
    #[arg(long, value_enum)]
    pub engine: Option<EngineArg>,

    /// Internal: write the window rows and the result as JSON lines on
    /// stdout (the probe side of a container cell).
    #[arg(long, hide = true)]
    pub stream: bool,

    /// Internal: the scan calibrations to measure with, as JSON (a bench's,
    /// made idle on the host, for its container cell).
    #[arg(long, hide = true, value_name = "JSON")]
    pub calibration: Option<String>,
}

/// `--deployment`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DeploymentArg {
    /// On the host.
    Host,
    /// Inside a container (timerlat: N/A, with the reason).
    Container,
}

impl From<DeploymentArg> for Deployment {
    fn from(d: DeploymentArg) -> Deployment {
        match d {
            DeploymentArg::Host => Deployment::Host,
            DeploymentArg::Container => Deployment::Container,
        }
    }
}

/// `--engine`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EngineArg {
    /// Podman (Debian package podman).
    Podman,
    /// Docker (Debian package docker.io), where its daemon runs.
    Docker,
}

impl From<EngineArg> for Engine {
    fn from(e: EngineArg) -> Engine {
        match e {
            EngineArg::Podman => Engine::Podman,
            EngineArg::Docker => Engine::Docker,
        }
    }
}

// ---------------------------------------------------------------------------
// From the parsed command line to the plain requests of the modules that
// act on it (no module but this one and `main` sees a clap type).

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

// ---------------------------------------------------------------------------
// Value parsers and defaults.

/// The text of a default time (`1ms` for [`defaults::PERIOD_NS`]), as help
/// shows it and the parser reads it back: the constants stay the one place
/// a default is written. An owned string clap keeps with the argument.
fn default_time(ns: u64) -> OsStr {
    format_duration_exact(ns).into()
}

/// The text of a default size (`256KiB`), as [`default_time`] for times.
fn default_size(bytes: u64) -> OsStr {
    limits::format_size(bytes).into()
}

/// `--policy`: the one [`Policy`] type, each name with its help.
fn policy_parser() -> impl TypedValueParser<Value = Policy> {
    let help = |p: Policy| match p {
        Policy::Fifo => "SCHED_FIFO (real-time)",
        Policy::RoundRobin => "SCHED_RR (real-time, round robin among equal priorities)",
        Policy::Other => "SCHED_OTHER (time-sharing; not real-time)",
    };
    PossibleValuesParser::new(Policy::ALL.map(|p| PossibleValue::new(p.name()).help(help(p))))
        .map(|name| Policy::parse(&name).expect("one of the possible values"))
}

/// `--source`: the one [`ResponseSource`] type, each name with its help.
fn source_parser() -> impl TypedValueParser<Value = ResponseSource> {
    let help = |s: ResponseSource| match s {
        ResponseSource::Eventfd => "An eventfd write from the event thread",
        ResponseSource::Udp => "A UDP datagram through a veth pair between two namespaces",
    };
    PossibleValuesParser::new(
        ResponseSource::ALL.map(|s| PossibleValue::new(s.name()).help(help(s))),
    )
    .map(|name| ResponseSource::parse(&name).expect("one of the possible values"))
}

/// A time: the unit grammar, at most 7d.
fn duration(s: &str) -> Result<u64, String> {
    limits::check_time(parse_duration(s).map_err(|e| e.to_string())?)
}

/// A period or interval: a time of at least 10us (0 is left to the
/// runner, which says what it means for the probe).
fn period(s: &str) -> Result<u64, String> {
    limits::check_period(duration(s)?)
}

/// A POWERLINK cycle time of a load table: a period, not 0.
fn cycle_time(s: &str) -> Result<u64, String> {
    match period(s)? {
        0 => Err("a cycle time must be longer than 0".into()),
        ns => Ok(ns),
    }
}

/// A window: a time of at least 1ms (0 is left to the runner).
fn window(s: &str) -> Result<u64, String> {
    limits::check_window(duration(s)?)
}

/// A working set or buffer: the size grammar, at most 4GiB.
fn memory(s: &str) -> Result<u64, String> {
    limits::check_memory(parse_size(s).map_err(|e| e.to_string())?)
}

/// A count up to `bound`'s maximum; one below its minimum is left to the
/// runner, whose message names the flag (`--cycles must be at least 1`).
fn at_most(s: &str, bound: &Count) -> Result<u64, String> {
    match bound.parse(s) {
        Ok(n) => Ok(n),
        Err(e) => match s.trim().parse::<u64>() {
            Ok(n) if n < bound.min => Ok(n),
            _ => Err(e),
        },
    }
}

fn outliers(s: &str) -> Result<usize, String> {
    at_most(s, &limits::OUTLIERS).map(|n| n as usize)
}

fn histogram_buckets(s: &str) -> Result<usize, String> {
    at_most(s, &limits::HISTOGRAM_BUCKETS).map(|n| n as usize)
}

fn cycles(s: &str) -> Result<u64, String> {
    at_most(s, &limits::CYCLES)
}

fn samples(s: &str) -> Result<u64, String> {
    at_most(s, &limits::SAMPLES)
}

fn iterations(s: &str) -> Result<u64, String> {
    at_most(s, &limits::ITERATIONS)
}

fn chase_length(s: &str) -> Result<u64, String> {
    at_most(s, &limits::CHASE_LENGTH)
}

fn repetitions(s: &str) -> Result<u32, String> {
    at_most(s, &limits::REPETITIONS).map(|n| n as u32)
}

fn cpu_list(s: &str) -> Result<CpuList, String> {
    let l = CpuList::parse(s).map_err(|e| e.to_string())?;
    if l.is_empty() {
        return Err("the CPU list is empty; name at least one CPU, e.g. 1".into());
    }
    Ok(l)
}

#[cfg(test)]
mod tests;
