//! The measured real-time workloads, and the one interface the runner
//! measures them through.
//!
//! The probe model, the layers and the rules cited here as "design rule N"
//! are written down in `docs/design.md`.
//!
//! # One probe interface
//!
//! Every probe is built for one cell of the typed spec ([`Cell`]) by the
//! function its kind's [`Registration`] names ([`build`]), and comes back
//! as [`Probes`]:
//!
//! * **Threads** — one [`Probe`] per measuring thread (the wake-up probe
//!   has one per probe CPU, every other probe one). The runner's lifecycle
//!   (`runner::lifecycle`) starts a thread per probe, pins and schedules it
//!   (design rule 3), calls [`Probe::prepare`] on it, allocates the
//!   thread's [`Recorder`] there, waits at the start barrier (where
//!   `--strict` may abort), then calls [`Probe::measure`], which pushes
//!   every sample into the recorder until the probe's own count is reached
//!   or the stop flag is raised. Whatever the probe changed on the machine
//!   goes back in [`Probe::teardown`], with the journal, on every path.
//! * **External** — an [`ExternalProbe`] runs a tool that measures on its
//!   own threads (`timerlat` drives `rtla`) and returns finished statistics
//!   ([`Finished`]) for the same result model.
//!
//! The probes:
//!
//! * **Periodic** — `cyclic` and `wakeup` share one thread body
//!   ([`periodic`]): `cyclic` adds the scan workload ([`scan`]) that emulates
//!   a PLC task; `wakeup` runs the bare loop on one thread per CPU, as
//!   cyclictest does. Each pushes one `CycleSample` per cycle: a sample
//!   with the periodic metric table, which the recorder also counts in the
//!   wake-up latency histogram and the live view.
//! * **Event** — each sample is one event rather than one release:
//!   [`chase`] (a pointer chase over a buffer sized to the cache the
//!   neighbour shares, timed in TSC cycles), [`ctxswitch`] (a token handed
//!   between two real-time threads on one CPU) and [`response`] (an event
//!   made on another CPU, answered by the real-time thread). They push a
//!   `Sample` with the values of their own metric table into the same
//!   recorder, so they get the same statistics, windows and store as the
//!   periodic probes' cycles.
//! * [`netcycle`] — [Baumgartner POWERLINK]'s POWERLINK managing node polling emulated
//!   controlled nodes over a veth pair with real frames: one sample per
//!   cycle (SoC latency, period and jitter, send, completion, exec) and
//!   per SoC the CN side received (rx-period, rx-jitter); a cell whose
//!   frames cannot fit its cycle on the wire is `N/A (wire)`.
//! * [`observe`] measures a task jitterlab did not write: a thread's
//!   cycles from the kernel's scheduler and timer events (an
//!   [`observe::EventSource`]), one sample per observed cycle, and what
//!   ran on its CPU between a late cycle's release and its start.
//! * [`timerlat`] is not ours: it drives the kernel's timerlat tracer
//!   through `rtla`, for the interrupt latency no user-space probe can see.
//! * [`container`] is the host side of any probe of a `container` cell:
//!   the kind's own code runs in a container (`jitterlab __cell`
//!   inside, handed the cell's spec), and this side starts it, stores the window rows it streams
//!   back and turns its result into the cell's ([`build`] dispatches a
//!   container cell there whatever its kind; a kind whose descriptor says
//!   it cannot run in a container is skipped with the reason).
//!
//! `ctxswitch` and `response` run a helper thread beside the calling one
//! and share its set-up, their argument checks and their pacing
//! ([`helper_thread`]) and their eventfd token calls ([`token`]).
//!
//! # How to add a probe
//!
//! A probe is two folders — `src/probe/NAME/` (its run, its flags, its
//! summary and tables, its registration) and `crates/core/src/NAME/` (its
//! descriptor, its parameters and its pure logic) — and one line in each
//! crate's list of kinds; nothing else names its kind: the spec checker,
//! the runner, the store, `restore`, `jitterlab run` and every report read
//! its descriptor or its registration (`tests/kind_folders.rs` holds
//! `netcycle`, `roundtrip`, `observe` and `sleep` to this). The worked example is
//! `sleep`, a probe compiled only for tests (`cargo test --features
//! test-probe`; `make test` does): each sample sleeps one period plus its
//! `slack` (or busy-waits it, `spin`) and measures how late the thread
//! woke. Its files: `src/probe/sleep/{mod,flags,report}.rs` (99, 89 and 34
//! lines), `crates/core/src/sleep/mod.rs` (131 lines, with `tests.rs`),
//! and its two lines below; its end-to-end tests are `tests/sleep_probe.rs`
//! and `tests/sleep_params.rs` (a test of a test-only probe is a
//! `[[test]]` with `required-features` in `Cargo.toml`).
//!
//! 1. **Its core folder**, `crates/core/src/NAME/mod.rs`:
//!    - its `ProbeDescriptor` const (`sleep::SLEEP`) — the name specs, the
//!      command line, JSON and the database use; its metric table (name,
//!      unit, signed, thresholded: the slots of its samples, window rows,
//!      CSV columns and stored metrics); its main latency (what
//!      `max_latency` limits and the latency table shows); whether it is
//!      periodic, calibrated, on every probe CPU, named in messages
//!      (`listed`); the words its summary prints; its parameters
//!      (`params`); whether it can run in a container (`container`: its
//!      own threads can, `InContainer::Supported`, and [`container`] runs
//!      them there, handing the cell's spec over as JSON (`jitterlab
//!      __cell` inside), which needs nothing of the kind; `OwnSide` when
//!      its own build puts a part of it in a container, as the round
//!      trip's controller (`roundtrip::container`); `NotApplicable(why)`
//!      for a probe tied to the host, as timerlat).
//!    - its parameters, declared once (`jitterlab_core::spec::param`): one
//!      `Key` per spec key (name, value type, default, help, and what its
//!      `run` flag needs beyond them, `KeyFlag::DERIVED` for nothing:
//!      `sleep::SLACK`, `sleep::SPIN`), the table `KEYS`, its type implementing
//!      `jitterlab_core::spec::Params` (`SleepParams`: its stored entries
//!      in `wire`, written only when not the default so older stored runs
//!      read back the same; its cross-key rule in `validate`, which the
//!      spec checker and the command line both call), and its
//!      `ParamTable` (`PARAMS`: the keys, the shared keys it takes, its
//!      default period, how a checked `[[probe]]` table and the stored JSON
//!      are read). The spec checker, the unknown-key and "applies only to"
//!      messages, the stored JSON and the key reference `docs/spec-keys.md`
//!      (regenerated by `jitterlab __generate-docs DIR`; a core test holds
//!      the committed copy to the tables) read them from the descriptor. A kind
//!      with no key of its own gives `PlainParams::table(…)` instead.
//! 2. **Its module**, `src/probe/NAME/mod.rs`:
//!    - `pub fn build(cell: &Cell<'_>, journal: &mut Journal) ->
//!      Result<Probes>`: its probe(s) for one cell of the typed spec, from
//!      `cell.plan` (the CPUs, one per measuring thread; the period; the
//!      duration or `--cycles` count in `plan.params`), the probe's own
//!      parameters (`cell.spec.probes[cell.cell.probe].params.get::<T>()`),
//!      how it ends (`cell.stop`). Whatever it changes on the machine it
//!      journals first (`journal.record`). [`Probes::threads`] with one
//!      [`Probe`] per thread for a probe of ours; [`Probes::External`]
//!      with an [`ExternalProbe`] for a tool that measures by itself.
//!      `sleep::build` makes one `SleepProbe` with the plan's period and
//!      count and its `SleepParams`.
//!    - the [`Probe`] impl: [`Probe::prepare`] (optional) allocates and
//!      touches its buffers on the pinned real-time thread;
//!      [`Probe::measure`] loops until its own count is reached or
//!      `start.stop` is raised, pushing one `Sample` per measurement into
//!      the recorder — its values in the slots of its descriptor's metric
//!      table (`slots([Some(oversleep)])`), allocating nothing — and
//!      returns a [`Report`] (what it has to say beyond its metrics, as the
//!      result's `detail`, and its warnings); [`Probe::teardown`]
//!      (optional) undoes what `build` changed, forgetting its journal
//!      entries. `SleepProbe` measures only, and puts its interval, slack
//!      and spin in the detail.
//! 3. **Its subcommand**, `src/probe/NAME/flags.rs` (`pub mod flags;` in
//!    its module), flags as data, no parser (only `src/cli*` imports
//!    clap): `flags()`, its [`flags::KindFlags`] — `about` (one paragraph:
//!    the help `run --help` lists), its flags: the ones that are no
//!    parameter of it ([`flags::Flag::new`]: `--cpu`), its parameters'
//!    derived from its core key table ([`flags::key_flags`]`(&PARAMS)`:
//!    `--slack` and `--spin`, named, typed, helped and defaulted by their
//!    `Key`s; [`flags::flag_of`] for one key), then
//!    [`flags::common_flags`]; its plain args struct read from the values
//!    the command line gave ([`flags::FromFlags`], with
//!    [`flags::CommonArgs::read`]), its parameters read by its key table's
//!    own `check`, as a spec's are ([`flags::key_params`]:
//!    `SleepParams`); and `one_cell()`, which reads it and
//!    checks the flags against the machine to build the one-cell spec,
//!    with the shared checks and builders of the flags' toolkit [`flags`]
//!    (`probe_cpu`, `check_common`, `refuse_periodic_flags`,
//!    `common_cell`), and the parameters' `validate`, refused with
//!    [`flags::param_rule`] (its message after the flag: `--slack must be
//!    shorter than …`).
//! 4. **Its summary and tables**, `src/probe/NAME/report.rs` (`pub mod
//!    report;`): one [`ReportParts`] ([`parts`]) — the block under a run's
//!    summary, rebuilt from a stored result (`sleep`: one line, `sleeps:
//!    1ms + 200us of slack each, busy-waited`, from its detail), its own
//!    tables (each a `KindTable`, whose name and help `report --table`
//!    lists), its side of the condition table, a limit its plots draw.
//! 5. **Its registration**, `pub const REGISTRATION: Registration` in its
//!    module: the [`Registration`] — the kind, its `build`, when the
//!    machine may lack what it needs the check that makes a bench skip its
//!    cells (`timerlat::unavailable`), its subcommand's `flags` and
//!    `one_cell` (`run` lists the registry's subcommands in its order),
//!    its `report` (`report::PARTS`; [`ReportParts::NONE`] for nothing
//!    beyond its metrics), and where its measuring threads run
//!    (`placement`: [`Placement::ProbeCpus`], or an observer's
//!    [`Placement::Observer`]), and `task` (`None`; the kind that measures
//!    a running task gives the one-cell spec `jitterlab monitor --pid/
//!    --tid/--comm` runs, [`TaskCell`]). A pair of network namespaces it makes for
//!    itself is a `jitterlab_core::netns::PairKind` const in its core
//!    folder, named by its descriptor's `netns` (`restore` deletes only
//!    the namespaces the descriptors name).
//! 6. **Its two lines**: here, `NAME,` in the `kinds!` list, which declares
//!    `pub mod NAME;` and puts `NAME::REGISTRATION` in [`REGISTRY`]; in
//!    core, `Variant => NAME::DESCRIPTOR,` with the variant's doc comment
//!    above it in the `for_each_kind!` list of `crates/core/src/lib.rs`,
//!    which declares `pub mod NAME;`, the `ProbeKind` variant
//!    (`crates/core/src/probe/kind.rs`), its place in `ProbeKind::ALL`
//!    and its arm in `ProbeKind::descriptor` (`crates/core/src/probe`).
//!    The list's order is `ProbeKind::ALL`'s, and both lists take the new
//!    kind last. `sleep`'s are `sleep,` and `Sleep => sleep::SLEEP,`,
//!    each under `#[cfg(feature = "test-probe")]`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::AtomicBool;

use anyhow::Result;
use jitterlab_core::probe::InContainer;
use jitterlab_core::result::{
    BreakEvent, Calibration, LimitCheck, Params, ProbeKind, RealtimeReport, ThreadResult,
};
use jitterlab_core::spec::{CellPlan, ProbeSpec, Spec};
use jitterlab_core::stats::MetricSummary;

/// The one recorder a measuring thread pushes every sample into, allocated
/// on that thread before the start barrier (`jitterlab_core::recorder`).
pub use jitterlab_core::recorder::Recorder;

use crate::store::StoredHistogram;
use crate::system::container::Engine;
use crate::system::journal::Journal;
pub use parts::ReportParts;
pub use plan::{RunPlan, Stop};

pub mod container;
#[cfg(test)]
pub mod fake;
pub mod flags;
pub mod helper_thread;
pub mod parts;
pub mod plan;
pub mod scan;
pub mod token;
pub mod watch;

/// One cell of the typed spec, planned: everything a probe is built from.
pub struct Cell<'a> {
    /// The sysroot.
    pub root: &'a Path,
    /// The checked spec.
    pub spec: &'a Spec,
    /// The cell of `spec` to measure.
    pub cell: &'a CellPlan,
    /// Its plan.
    pub plan: &'a RunPlan,
    /// How the measurement ends.
    pub stop: Stop,
    /// Scan calibrations made once before, idle (a bench), by thread.
    pub calibrated: Option<&'a [Calibration]>,
    /// Where an external tool writes its files: the bench's directory of
    /// the cell; `None`: the probe makes a work directory of its own (a
    /// run).
    pub workdir: Option<&'a Path>,
    /// A `container` cell's engine (`--engine`); `None`: podman, else
    /// docker, whichever works.
    pub engine: Option<Engine>,
    /// The cell's number, which names its container: its id in a bench's
    /// store, 1 for a run.
    pub number: i64,
}

/// What a probe reports once it is set up on its thread.
#[derive(Debug, Default)]
pub struct Prepared {
    /// Warnings, said before the real-time report.
    pub warnings: Vec<String>,
    /// The scan calibration the thread measures with.
    pub calibration: Option<Calibration>,
    /// What the calibration made here, on this thread, has to say (said
    /// after the real-time report; a bench's idle calibration said it
    /// already).
    pub calibration_note: Option<String>,
}

/// What every measuring thread of a probe shares once released.
pub struct Start<'a> {
    /// The common first release (CLOCK_MONOTONIC, ns): a periodic probe's
    /// schedule starts there; an event probe starts when it is released.
    pub t0: u64,
    /// Raised to end every thread (a signal, the deadline, a break event);
    /// a probe may raise it to end the others.
    pub stop: &'a AtomicBool,
}

/// The release schedule's counts of a periodic thread.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScheduleCounts {
    /// Measured cycles.
    pub cycles: u64,
    /// Releases due.
    pub releases: u64,
    /// Releases skipped after an overrun.
    pub skipped: u64,
    /// Cycles that overran their period.
    pub overruns: u64,
}

impl ScheduleCounts {
    /// The counts of `schedule` once its thread has stopped.
    pub fn of(schedule: &jitterlab_core::cycle::Schedule) -> ScheduleCounts {
        ScheduleCounts {
            cycles: schedule.cycles(),
            releases: schedule.releases(),
            skipped: schedule.skipped(),
            overruns: schedule.overruns(),
        }
    }
}

/// What a probe reports once it has measured.
#[derive(Debug, Default)]
pub struct Report {
    /// Stored as the result's `detail` (the probe module documents it).
    pub detail: Option<serde_json::Value>,
    /// Warnings, stored with the result's own.
    pub warnings: Vec<String>,
    /// A periodic probe's schedule; `None`: every sample is one release.
    pub schedule: Option<ScheduleCounts>,
    /// What `--break-trace` caught.
    pub break_event: Option<BreakEvent>,
    /// The CPUs the measured task ran on, first the one its first cycle
    /// ran on, where the probe measures a task other than its own thread
    /// (`observe`): the result's `cpus` and the thread's `cpu` name them
    /// instead of the measuring thread's CPU.
    pub task_cpus: Option<Vec<usize>>,
}

/// One measuring thread's probe: built by the registry (with the journal
/// at hand for any change to the machine), moved to its real-time thread
/// and back.
pub trait Probe: Send {
    /// Runs on the real-time thread once it is pinned and scheduled, before
    /// the start is recorded: allocate and touch buffers here (first touch
    /// places memory near the probe CPU), calibrate.
    fn prepare(&mut self) -> Result<Prepared> {
        Ok(Prepared::default())
    }

    /// Runs on the real-time thread from the release until the probe's own
    /// count is reached or `start.stop` is raised, pushing every sample
    /// into `recorder` (allocating nothing, taking no lock).
    fn measure(&mut self, start: &Start<'_>, recorder: &mut Recorder) -> Result<Report>;

    /// Undoes what building the probe changed on the machine (namespaces,
    /// settings), forgetting the journal entries it made; one line per
    /// thing put back. Called on every path after the measurement.
    fn teardown(&mut self, _root: &Path, _journal: &mut Journal) -> Vec<String> {
        Vec::new()
    }
}

/// What an external tool (or a container) measured, finished: its figures
/// in the result model.
#[derive(Debug)]
pub struct Finished {
    /// The real-time report of what measured (a container's probe), or
    /// `None` for a tool that refuses to run without its defaults (rtla):
    /// real-time.
    pub realtime: Option<RealtimeReport>,
    /// The limits checked against its statistics (empty when it checks
    /// none).
    pub limits: Vec<LimitCheck>,
    /// One entry per measured CPU.
    pub threads: Vec<ThreadResult>,
    /// Every CPU merged, when there are several.
    pub combined: Option<BTreeMap<String, MetricSummary>>,
    /// The histograms behind every metric summary.
    pub histograms: Vec<StoredHistogram>,
    /// Warnings, in the order they arose.
    pub warnings: Vec<String>,
    /// What the tool reports beyond its metrics.
    pub detail: serde_json::Value,
    /// From the tool's start to its end, ns.
    pub elapsed_ns: u64,
    /// Stopped early by a terminating signal.
    pub interrupted: bool,
}

/// Where a probe measuring elsewhere hands what it gets: the runner's
/// lifecycle implements it (recording the start in the store, committing
/// window rows as a probe thread's, drawing progress).
pub trait ExternalSink {
    /// Records the start, before the first release; `realtime`: whether
    /// every required real-time default held.
    fn ready(&mut self, realtime: bool) -> Result<()>;
    /// Writes and commits window rows measured elsewhere.
    fn rows(&mut self, rows: &[jitterlab_core::window::WindowRow]);
    /// Lets the caller draw its progress.
    fn tick(&mut self);
}

/// What a probe that measures elsewhere — an external tool, a container —
/// is given while it measures: the signal flag, and the lifecycle's sink
/// for the start, the window rows it streams and the caller's tick.
pub struct ExternalRun<'a> {
    /// Raised by every terminating signal (`crate::termination`).
    pub signalled: &'a AtomicBool,
    sink: &'a mut dyn ExternalSink,
    readied: bool,
}

impl<'a> ExternalRun<'a> {
    /// A run handing what it gets to `sink`.
    pub fn new(signalled: &'a AtomicBool, sink: &'a mut dyn ExternalSink) -> ExternalRun<'a> {
        ExternalRun {
            signalled,
            sink,
            readied: false,
        }
    }

    /// Records the start (the run row, the cell), once, before the first
    /// release; `realtime`: whether every required real-time default held.
    pub fn ready(&mut self, realtime: bool) -> Result<()> {
        if !self.readied {
            self.readied = true;
            self.sink.ready(realtime)?;
        }
        Ok(())
    }

    /// True once [`ExternalRun::ready`] was called.
    pub fn readied(&self) -> bool {
        self.readied
    }

    /// Writes and commits window rows measured elsewhere, as the writer
    /// drains a probe thread's (the CSV file, the store).
    pub fn rows(&mut self, rows: &[jitterlab_core::window::WindowRow]) {
        self.sink.rows(rows);
    }

    /// Lets the caller draw its progress.
    pub fn tick(&mut self) {
        self.sink.tick();
    }
}

/// A probe that measures elsewhere — an external tool, or the probe side
/// of a container cell — which applies its own real-time set-up and
/// measures on its own threads.
pub trait ExternalProbe: Send {
    /// The parameters stored with its result.
    fn params(&self) -> Params;

    /// Measures until it ends by itself or `run.signalled` is raised:
    /// calls [`ExternalRun::ready`] before its first release, hands over
    /// the window rows it gets while it measures ([`ExternalRun::rows`]).
    fn measure(&mut self, run: &mut ExternalRun<'_>) -> Result<Finished>;

    /// Removes what building the probe made (a work directory), with the
    /// journal; one line per thing that did not go as it should.
    fn teardown(&mut self, _root: &Path, _journal: &mut Journal) -> Vec<String> {
        Vec::new()
    }
}

/// The measuring threads' probes of a cell.
pub struct Threads {
    /// One probe per thread; thread `i` runs on the plan's CPU `i`.
    pub probes: Vec<Box<dyn Probe>>,
    /// Warnings from building them, said first.
    pub warnings: Vec<String>,
}

/// What the registry builds for a cell.
pub enum Probes {
    /// Probes measured on threads of ours.
    Threads(Threads),
    /// A probe that runs an external tool.
    External(Box<dyn ExternalProbe>),
}

impl Probes {
    /// The cell's probes on their threads, without warnings.
    pub fn threads(probes: Vec<Box<dyn Probe>>) -> Probes {
        Probes::Threads(Threads {
            probes,
            warnings: Vec::new(),
        })
    }

    /// The parameters stored with the result: the plan's, or the ones the
    /// external tool measures with.
    pub fn params(&self, plan: &RunPlan) -> Params {
        match self {
            Probes::Threads(_) => plan.params.clone(),
            Probes::External(p) => p.params(),
        }
    }

    /// Tears every probe down (see [`Probe::teardown`]); the lines of all.
    pub fn teardown(&mut self, root: &Path, journal: &mut Journal) -> Vec<String> {
        match self {
            Probes::Threads(t) => t
                .probes
                .iter_mut()
                .flat_map(|p| p.teardown(root, journal))
                .collect(),
            Probes::External(p) => p.teardown(root, journal),
        }
    }
}

// ---------------------------------------------------------------------------
// The registry: the one place a probe kind is tied to the code that
// measures it.

/// Builds a kind's probe(s) for a cell, journaling first whatever it
/// changes on the machine.
pub type Build = fn(&Cell<'_>, &mut Journal) -> Result<Probes>;

/// Where a kind's measuring threads run and how they are scheduled; the
/// lifecycle reads it from the kind's [`Registration`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// On the configuration's probe CPUs, one thread each, scheduled as
    /// the configuration asks (design rule 3): the threads are the task.
    ProbeCpus,
    /// One observer thread off the probe CPUs (a housekeeping CPU, else a
    /// neighbour CPU; it shares a probe CPU only where no other is
    /// online), at SCHED_OTHER: the configuration places the task it
    /// watches, never the observer
    /// (`jitterlab_core::observer`).
    Observer,
}

/// How the runner measures one probe kind.
pub struct Registration {
    /// The kind.
    pub kind: ProbeKind,
    /// Builds its probe(s) for a cell.
    pub build: Build,
    /// Where the probe cannot measure on the machine under the sysroot,
    /// or cannot measure the cell's probe as given (a `netcycle` cell whose
    /// frames do not fit its cycle: `N/A (wire)`), the note a bench's
    /// skipped cell gets (the command line refuses a run itself, naming
    /// the flag or the fix); `None` when it always can.
    pub unavailable: Option<fn(&Path, &ProbeSpec) -> Option<String>>,
    /// `jitterlab run KIND`'s flags, as data (`src/probe/KIND/flags.rs`):
    /// its help and its flags, its own parameters' derived from its core
    /// key table; the command line makes the subcommand `kind.name()` of
    /// them, and `run` lists the registry's, in its order.
    pub flags: fn() -> flags::KindFlags,
    /// Checks the values the command line gave [`Registration::flags`]
    /// against the machine under the sysroot and makes the run's one-cell
    /// spec (the `Db`: where it will be stored, checked unless nothing is).
    pub one_cell: fn(&flags::FlagValues, &Path, &crate::store::Db) -> Result<flags::OneCell>,
    /// What the reports print of it beyond its metrics: its summary's
    /// lines and block, its tables, its side of the condition table
    /// ([`parts`]); [`ReportParts::NONE`] for none.
    pub report: ReportParts,
    /// Where its measuring threads run ([`Placement`]).
    pub placement: Placement,
    /// The one-cell spec of `jitterlab monitor` watching the user's own
    /// task, when this kind measures a running task (one kind does: the
    /// monitor finds it here, [`task_cell`]); `None` for the others.
    pub task: Option<TaskCell>,
}

/// How a kind that measures a running task makes `jitterlab monitor`'s
/// one-cell spec of it ([`Registration::task`]).
pub type TaskCell = fn(&flags::TaskArgs, &Path, &crate::store::Db) -> Result<flags::OneCell>;

/// The one-cell spec builder of the kind that measures a running task
/// ([`Registration::task`]), for `jitterlab monitor --pid/--tid/--comm`.
pub fn task_cell() -> Option<TaskCell> {
    REGISTRY.iter().find_map(|r| r.task)
}

/// Declares every kind's module and lists its [`Registration`] (the
/// const `REGISTRATION` in its folder; a module holding two kinds, as
/// [`periodic`], is listed with their consts) in [`REGISTRY`], one line per
/// kind, in `ProbeKind::ALL` order. A `#[cfg(...)]` on a line applies to
/// both.
macro_rules! kinds {
    (
        $shared:ident { $($reg:ident),* $(,)? }
        $( $(#[cfg($cfg:meta)])? $m:ident, )*
    ) => {
        pub mod $shared;
        $( $(#[cfg($cfg)])? pub mod $m; )*

        /// Every kind's registration: the one place the runner — `jitterlab
        /// run` and every bench cell — finds a kind's code, through
        /// [`build`] and [`unavailable`]; nothing else in it switches on the
        /// kind.
        pub const REGISTRY: &[Registration] = &[
            $( $shared::$reg, )*
            $( $(#[cfg($cfg)])? $m::REGISTRATION, )*
        ];
    };
}

kinds! {
    periodic { CYCLIC, WAKEUP }
    chase,
    ctxswitch,
    response,
    timerlat,
    roundtrip,
    netcycle,
    observe,
    #[cfg(feature = "test-probe")]
    sleep,
}

/// The registration of `kind`.
pub fn registration(kind: ProbeKind) -> &'static Registration {
    REGISTRY
        .iter()
        .find(|r| r.kind == kind)
        .unwrap_or_else(|| panic!("probe kind {} is not registered", kind.name()))
}

/// Builds the probe(s) of `cell` (see [`Registration::build`]); the
/// probe side of a `container` cell is [`container::build`]'s, whatever
/// the kind (its kind's own code runs inside the container).
pub fn build(cell: &Cell<'_>, journal: &mut Journal) -> Result<Probes> {
    let own_side = cell.plan.kind.descriptor().container == InContainer::OwnSide;
    if cell.cell.in_container() && !own_side {
        return container::build(cell, journal);
    }
    (registration(cell.plan.kind).build)(cell, journal)
}

/// Why `probe` cannot measure on the machine under `root` (see
/// [`Registration::unavailable`]).
pub fn unavailable(probe: &ProbeSpec, root: &Path) -> Option<String> {
    registration(probe.kind())
        .unavailable
        .and_then(|f| f(root, probe))
}

/// Why `cell` of `spec` cannot be measured on the machine under `root`:
/// its kind's [`unavailable`], and for a `container` cell what keeps the
/// kind out of a container (its descriptor's
/// [`InContainer::NotApplicable`], [`container::not_applicable`]) and why
/// this host runs no container with `engine` (what a bench skips a cell
/// for; a run refuses it itself, naming the engine).
pub fn cell_unavailable(
    spec: &Spec,
    cell: &CellPlan,
    root: &Path,
    engine: Option<crate::system::container::Engine>,
) -> Option<String> {
    cell_kind_unavailable(spec, cell, root).or_else(|| {
        cell.in_container()
            .then(|| container::host_unavailable(root, engine))
            .flatten()
    })
}

/// Why a cell's probe cannot measure, whatever the host's container engine
/// (its kind or its parameters in a container, or the machine).
pub fn cell_kind_unavailable(spec: &Spec, cell: &CellPlan, root: &Path) -> Option<String> {
    let probe = &spec.probes[cell.probe];
    if cell.in_container() {
        if let InContainer::NotApplicable(why) = probe.kind().descriptor().container {
            return Some(why.to_string());
        }
        if let Some(why) = container::not_applicable(probe) {
            return Some(why);
        }
    }
    unavailable(probe, root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_registered_once() {
        for &k in ProbeKind::ALL {
            let n = REGISTRY.iter().filter(|r| r.kind == k).count();
            assert_eq!(n, 1, "{} has {n} registrations", k.name());
            assert_eq!(registration(k).kind, k);
        }
        assert_eq!(REGISTRY.len(), ProbeKind::ALL.len());
    }

    #[test]
    fn every_kind_has_its_run_help_and_only_sleep_is_hidden() {
        for r in REGISTRY {
            let f = (r.flags)();
            assert_eq!(f.hidden, r.kind.name() == "sleep", "{}", r.kind.name());
            assert!(!f.about.is_empty(), "{} has no help", r.kind.name());
        }
    }

    #[test]
    fn every_key_of_a_kind_is_a_flag_of_its_run_named_and_helped_by_the_key() {
        for r in REGISTRY {
            let flags = (r.flags)().flags;
            for key in r.kind.descriptor().params.keys {
                let derived = flags::decl::key_flag(key).expect("no key is spec-only today");
                let flag = flags
                    .iter()
                    .find(|f| f.id == key.name)
                    .unwrap_or_else(|| panic!("run {} has no flag of {}", r.kind.name(), key.name));
                assert_eq!(
                    (&flag.long, &flag.help, &flag.default),
                    (&derived.long, &derived.help, &derived.default),
                    "run {} --{}",
                    r.kind.name(),
                    flag.long
                );
            }
            let mut ids: Vec<&str> = flags.iter().map(|f| f.id).collect();
            ids.sort_unstable();
            ids.dedup();
            assert_eq!(
                ids.len(),
                flags.len(),
                "run {} repeats a flag",
                r.kind.name()
            );
        }
    }

    #[test]
    fn only_timerlat_can_be_missing_and_it_says_why() {
        let root = tempfile::tempdir().unwrap();
        for &k in ProbeKind::ALL {
            let probe = probe_of(k, 500_000);
            let why = unavailable(&probe, root.path());
            match k {
                ProbeKind::Timerlat => {
                    let why = why.expect("no tracefs under an empty sysroot");
                    assert!(why.starts_with("no interrupt latency here: "), "{why}");
                }
                _ => assert_eq!(why, None, "{}", k.name()),
            }
        }
    }

    /// A probe of `kind` with its defaults, every `period_ns`.
    fn probe_of(kind: ProbeKind, period_ns: u64) -> ProbeSpec {
        let params = jitterlab_core::spec::ProbeParams::defaults(kind);
        ProbeSpec {
            name: kind.name().into(),
            period_ns,
            threshold_ns: None,
            window_ns: 1_000_000_000,
            outliers: 0,
            max_latency_ns: None,
            max_jitter_ns: None,
            max_exec_ns: None,
            params,
            scope: Default::default(),
        }
    }

    #[test]
    fn a_netcycle_cell_whose_frames_cannot_fit_is_n_a_wire_with_the_figure() {
        let root = tempfile::tempdir().unwrap();
        let mut probe = probe_of(ProbeKind::Netcycle, 250_000);
        let Some(p) = probe
            .params
            .get_mut::<jitterlab_core::netcycle::NetcycleParams>()
        else {
            panic!("not a netcycle probe")
        };
        p.cns = 40;
        p.chaining = true;
        assert_eq!(
            unavailable(&probe, root.path()).as_deref(),
            Some("N/A (wire): 40 CNs need at least 289.3 µs of wire time per cycle at 100 Mbit/s (chained), more than the 250 µs cycle")
        );
        probe.period_ns = 500_000;
        assert_eq!(unavailable(&probe, root.path()), None);
    }
}
