//! One measurement, whatever the probe: the lifecycle `jitterlab run` and
//! every bench cell go through, so a cell's figures mean exactly what a
//! run's figures mean.
//!
//! The caller has planned the cell ([`super::plan()`]) and built its probes
//! through the registry ([`crate::probe::build`]). [`measure`] then,
//! for probes measured on threads of ours ([`Probes::Threads`]):
//!
//! 1. **real-time set-up** — starts one thread per probe, each pinned to
//!    its CPU of the plan and scheduled as the plan asks (design rule 3),
//!    or, for a kind whose registration places an observer
//!    ([`Placement::Observer`]), off the probe CPUs at SCHED_OTHER;
//!    on it the probe prepares ([`Probe::prepare`]: buffers, the scan's
//!    calibration) and the thread's recorder is allocated (with its live
//!    metrics' snapshot publisher under `--metrics`); each thread
//!    reports what held and waits at the start barrier;
//! 2. **strict check** — what held is merged into the result's real-time
//!    report ([`realtime_report`]); `--strict` aborts here, before
//!    anything was released ([`strict_check`]), as does a probe that could
//!    not prepare;
//! 3. **start barrier** — `ready` is called (the run row or the cell is
//!    marked started in the store), then every thread is released at one
//!    common first release `t0` (a periodic probe's schedule starts there,
//!    far enough ahead for every thread to be asleep in its first sleep;
//!    any other probe starts at once);
//! 4. **drain windows** — the calling thread, SCHED_OTHER and kept off the
//!    probe CPUs by the caller, is the low-priority writer of design rule
//!    2: every 100 ms it drains every thread's window rows into the CSV
//!    file and the store (one [`RowWriter`], one commit per drain), redraws
//!    the live view, and turns every terminating signal
//!    (`crate::termination`) into the stop flag;
//! 5. **stop** — a periodic probe ends by itself after its releases or
//!    cycles; any other is stopped at the plan's duration by the
//!    controller, unless its own count ends it first;
//! 6. **assemble** — the threads are joined and their recorders and
//!    reports become the versioned result ([`super::assemble`]). Storing
//!    the final figures is the caller's (a run finishes its run row, a
//!    bench its cell).
//!
//! A probe that measures elsewhere ([`Probes::External`]: rtla, or the
//! probe side of a container cell) applies its own real-time set-up and
//! measures on its own threads: it calls `ready` through the
//! [`ExternalRun`] it is given before its first release, hands over the
//! window rows it gets while it measures (a container's stream; they are
//! written and committed as a drain's are), and its finished statistics
//! are assembled into the same result model — with the real-time report
//! it brings (a container's), else as real-time (rtla refuses to run
//! without its defaults).
//!
//! The design rules cited here are in `docs/design.md`.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{mpsc, Arc, Barrier};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use jitterlab_core::observer::observer_cpu;
use jitterlab_core::probe::{MetricDef, MetricUnit};
use jitterlab_core::recorder::{LiveStats, RecorderConfig};
use jitterlab_core::result::{
    Calibration, DefaultStatus, EndReason, HostSnapshot, RealtimeReport, UsageDelta,
};
use jitterlab_core::spec::Policy;
use jitterlab_core::units::{format_ns, CpuList};
use jitterlab_core::window::WindowRow;
use jitterlab_sys as sys;

use crate::live::{Goal, LiveView};
use crate::probe::{
    ExternalProbe, ExternalRun, Placement, Prepared, Probe, Probes, Recorder, Report, Start,
    Threads,
};
use crate::report;
use crate::store::Store;
use crate::system::rt::{self, SchedRequest};

pub use super::assemble::Measured;
use super::assemble::{self, Figures, ResultContext, ThreadFigures};
use super::monitor::Watch;
use super::RunPlan;

/// Window rows each probe thread can queue before the writer must drain:
/// 4096 one-second windows is over an hour of slack.
pub const ROW_QUEUE: usize = 4096;

/// What one measurement needs besides the plan's probes.
pub struct MeasureInput<'a> {
    /// The validated plan.
    pub plan: &'a RunPlan,
    /// Host snapshot stored with the result.
    pub host: HostSnapshot,
    /// RFC 3339 start time.
    pub started_at: String,
    /// Process-wide defaults already applied (mlockall, PM QoS).
    pub defaults: Vec<DefaultStatus>,
    /// Warnings so far.
    pub warnings: Vec<String>,
    /// Raised by every terminating signal (`crate::termination`).
    pub signalled: &'a AtomicBool,
    /// Show the measurement live (a run; a bench draws its own progress).
    pub live: bool,
    /// Draw the live view even when stdout is not a terminal (`--progress`).
    pub progress: bool,
}

/// `ready(writer, realtime)`: called once every thread is set up, before
/// the first release (the caller records the start in the store and sets
/// `writer.cell`).
pub type Ready<'a> = &'a mut dyn FnMut(&mut RowWriter, bool) -> Result<()>;

/// Runs one measurement of `probes` (see the module doc); `tick` is called
/// after every drain. The probes measured on threads come back into
/// `probes` on every path but a panic, for the caller's teardown.
pub fn measure(
    input: MeasureInput<'_>,
    probes: &mut Probes,
    writer: &mut RowWriter,
    ready: Ready<'_>,
    tick: &mut dyn FnMut(),
) -> Result<Measured> {
    match probes {
        Probes::Threads(threads) => measure_threads(input, threads, writer, ready, tick),
        Probes::External(probe) => measure_external(input, probe.as_mut(), writer, ready, tick),
    }
}

/// The real-time report of a measurement: the process-wide and per-thread
/// `defaults` that were applied, with the clock and the kernel's RT
/// throttling (from `host`) added. Each required default that did not
/// hold becomes a "not real-time" warning.
pub fn realtime_report(
    mut defaults: Vec<DefaultStatus>,
    host: &HostSnapshot,
    warnings: &mut Vec<String>,
) -> RealtimeReport {
    defaults.push(rt::clock_status());
    defaults.push(rt::throttling_status(
        host.sched_rt_runtime_us,
        host.sched_rt_period_us,
    ));
    let realtime = defaults.iter().all(|d| d.applied || !d.required);
    for d in defaults.iter().filter(|d| d.required && !d.applied) {
        warnings.push(format!("not real-time: {}: {}", d.name, d.detail));
    }
    RealtimeReport { realtime, defaults }
}

/// `--strict`: refuses (as bad input, exit 2) a measurement whose
/// real-time defaults did not all hold, naming each; the caller aborts its
/// threads before anything was released.
pub fn strict_check(plan: &RunPlan, report: &RealtimeReport) -> Result<()> {
    if !plan.params.strict || report.realtime {
        return Ok(());
    }
    let failed: Vec<String> = report
        .defaults
        .iter()
        .filter(|d| d.required && !d.applied)
        .map(|d| format!("{}: {}", d.name, d.detail))
        .collect();
    bail!(crate::error::BadInput(format!(
        "--strict: a real-time default could not be applied ({}); fix it or drop --strict",
        failed.join("; ")
    )))
}

/// Prints the warnings so far on stderr when the measurement is shown live
/// (a run; a bench keeps them in its cells).
pub fn say_warnings(live: bool, warnings: &[String]) {
    if live {
        for w in warnings {
            crate::output::errln!("jitterlab: warning: {w}");
        }
    }
}

/// The low-priority writer's state: it drains every probe thread's queue of
/// window rows into memory, the `--csv` file, the results database (one
/// commit per drain, so a crash loses at most the rows not yet drained)
/// and, inside a container, the stream to the host
/// ([`super::stream`]). A write error never stops the probes: it is
/// remembered and reported as a warning.
pub struct RowWriter {
    /// `--csv`.
    pub csv: Option<report::csv::WindowCsv<crate::out_files::Output>>,
    /// `--stream`: each row as a JSON line, for the host side of a
    /// container cell.
    pub stream: Option<Box<dyn std::io::Write>>,
    /// The results database (`None` with `--no-db`).
    pub store: Option<Store>,
    /// The cell the rows belong to, once it is recorded.
    pub cell: Option<i64>,
    /// Samples (a periodic probe: cycles) in the rows drained so far (each
    /// row is written out and dropped: a long run keeps none in memory).
    pub samples: u64,
    /// The rows of one drain, reused from drain to drain.
    batch: Vec<WindowRow>,
    /// The first release on the monotonic clock, once set: window rows
    /// count from it.
    pub t0: Option<u64>,
    /// `jitterlab monitor`: windows per 1 µs histogram handed over by each
    /// probe thread (set before the measurement; the readers wait in
    /// `fine_readers` until `ready` makes the [`Watch`]).
    pub fine_every: Option<u64>,
    /// The probe threads' histogram readers, by CPU, for the [`Watch`].
    pub fine_readers: Vec<(u32, jitterlab_core::fine_snapshot::FineReader)>,
    /// `jitterlab monitor`'s writer side: rollups, histograms, retention,
    /// alerts (see [`super::monitor`]).
    pub monitor: Option<Watch>,
    /// The first write error (CSV or store): recorded as a warning in the
    /// result and, after the outputs are written, an error of the command
    /// (design rule 7: storing never fails silently).
    pub error: Option<String>,
}

impl RowWriter {
    /// A writer into `store` (and no CSV file), for the rows of `cell`.
    pub fn new(store: Option<Store>, cell: Option<i64>) -> RowWriter {
        RowWriter {
            csv: None,
            stream: None,
            store,
            cell,
            samples: 0,
            batch: Vec::new(),
            t0: None,
            fine_every: None,
            fine_readers: Vec::new(),
            monitor: None,
            error: None,
        }
    }

    /// Moves every queued row into the CSV file, the stream and the store.
    pub fn drain(&mut self, consumers: &mut [rtrb::Consumer<WindowRow>]) {
        // A monitor's histograms first: the rows they end with are then
        // in the queues.
        let snapshots = self.monitor.as_mut().map(Watch::take_snapshots);
        let mut batch = std::mem::take(&mut self.batch);
        batch.clear();
        for rx in consumers.iter_mut() {
            while let Ok(row) = rx.pop() {
                batch.push(row);
            }
        }
        self.push_rows_with(&batch, snapshots.unwrap_or_default());
        self.batch = batch;
    }

    /// Writes `rows` — drained here, or measured elsewhere (a container
    /// cell's, streamed to the host) — into the CSV file and the stream,
    /// and stores them in one commit.
    pub fn push_rows(&mut self, rows: &[WindowRow]) {
        self.push_rows_with(rows, Vec::new());
    }

    /// [`Self::push_rows`], with a monitor's histogram snapshots taken
    /// before the rows were drained.
    fn push_rows_with(
        &mut self,
        rows: &[WindowRow],
        snapshots: Vec<(usize, jitterlab_core::fine_snapshot::FineSnapshot)>,
    ) {
        for row in rows {
            if let Some(w) = self.csv.as_mut() {
                if let Err(e) = w.write_row(row).and_then(|()| w.flush()) {
                    self.error.get_or_insert(e.to_string());
                }
            }
            if let Some(out) = self.stream.as_mut() {
                let line = crate::probe::container::stream::Line::Row(
                    crate::probe::container::stream::WireRow::of(row),
                );
                if let Err(e) = crate::probe::container::stream::write_line(out.as_mut(), &line) {
                    self.error
                        .get_or_insert(format!("streaming window rows: {e}"));
                }
            }
            self.samples += row.cycles;
        }
        if rows.is_empty() && snapshots.is_empty() {
            return;
        }
        if let (Some(s), Some(w), Some(t0)) = (self.store.as_mut(), self.monitor.as_mut(), self.t0)
        {
            // A monitor goes on after a failed write (a full disk): the
            // error is said once per kind on stderr (the journal under
            // systemd), and the next drain tries again.
            if let Err(e) = w.store(s, t0, rows, snapshots) {
                w.write_failed(&format!("{e:#}"));
            }
            return;
        }
        if let (Some(s), Some(cell)) = (self.store.as_mut(), self.cell) {
            if let Err(e) = s.insert_windows(cell, rows) {
                self.error
                    .get_or_insert(format!("storing window rows: {e:#}"));
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Probes on threads of ours.

/// State the controller shares with every measuring thread.
struct Shared {
    /// Raised to end every thread (signal, deadline, a break event).
    stop: AtomicBool,
    /// Raised before the barrier to end threads without measuring.
    abort: AtomicBool,
    /// The common first release.
    t0: AtomicU64,
    /// Start barrier: every measuring thread plus the controller.
    barrier: Barrier,
}

/// What a thread needs besides its probe.
struct ThreadStart {
    index: u32,
    cpu: usize,
    sched: SchedRequest,
    recorder: RecorderConfig,
    metrics: &'static [MetricDef],
    rows: rtrb::Producer<WindowRow>,
    live: Arc<LiveStats>,
    /// Live metrics' snapshot publisher (`--metrics`).
    export: Option<jitterlab_core::metrics_snapshot::Publisher>,
    /// A monitor's 1 µs histogram hand-over.
    fine: Option<jitterlab_core::fine_snapshot::FinePublisher>,
    shared: Arc<Shared>,
    setup: mpsc::Sender<Setup>,
}

/// What a thread reports once it is set up.
struct Setup {
    index: u32,
    cpu: usize,
    statuses: Vec<DefaultStatus>,
    prepared: Result<Prepared>,
}

/// What a thread measured.
struct ThreadMeasured {
    index: u32,
    cpu: usize,
    tid: i32,
    recorder: Recorder,
    usage: UsageDelta,
    calibration: Option<Calibration>,
    report: Result<Report>,
}

/// What a thread hands back through its join handle: its probe always
/// (for the teardown), its measurement when it measured.
struct ThreadEnd {
    probe: Box<dyn Probe>,
    measured: Option<ThreadMeasured>,
}

/// Measures probes on threads of ours (see the module doc): one function
/// per step.
fn measure_threads(
    mut input: MeasureInput<'_>,
    threads: &mut Threads,
    writer: &mut RowWriter,
    ready: Ready<'_>,
    tick: &mut dyn FnMut(),
) -> Result<Measured> {
    let plan = input.plan;
    let n = threads.probes.len();
    if n == 0 || n > plan.cpus.len() {
        bail!(
            "{n} probes for {} CPUs; this is a bug in jitterlab",
            plan.cpus.len()
        );
    }
    input.warnings.append(&mut threads.warnings);
    let shared = Arc::new(Shared {
        stop: AtomicBool::new(false),
        abort: AtomicBool::new(false),
        t0: AtomicU64::new(0),
        barrier: Barrier::new(n + 1),
    });
    let mut started = start_threads(plan, &input.host, threads, writer, &shared)?;
    let setups = collect_setup(&started.setup, n)?;
    let report = strict(&mut input, setups).and_then(|report| {
        ready(writer, report.realtime)?;
        Ok(report)
    });
    let report = match report {
        Ok(report) => report,
        Err(e) => {
            abort(&shared, started.handles, &mut threads.probes);
            return Err(e);
        }
    };
    let t0 = release(plan, &shared, writer);
    let interrupted = drain(&input, &shared, t0, &mut started, writer, tick);
    let measured = join(started.handles, threads, n);
    writer.drain(&mut started.consumers);
    let measured = measured?;
    // Kept in the writer too: the caller turns it into exit status 2.
    if let Some(e) = writer.error.clone() {
        input.warnings.push(e);
    }
    let elapsed_ns = sys::monotonic_ns().saturating_sub(t0);
    assemble_threads(input, report, measured, elapsed_ns, interrupted)
}

/// The probe threads of step 1, started and setting up.
struct Started {
    handles: Vec<JoinHandle<ThreadEnd>>,
    /// Each thread's window rows, in thread order.
    consumers: Vec<rtrb::Consumer<WindowRow>>,
    /// Each thread's live statistics, with its CPU.
    lives: Vec<(usize, Arc<LiveStats>)>,
    /// What each thread reports once it is set up.
    setup: mpsc::Receiver<Setup>,
}

/// Step 1, the real-time set-up: starts one thread per probe on its CPU of
/// the plan, with its recorder's configuration, its rows' queue and its
/// live statistics.
fn start_threads(
    plan: &RunPlan,
    host: &HostSnapshot,
    threads: &mut Threads,
    writer: &mut RowWriter,
    shared: &Arc<Shared>,
) -> Result<Started> {
    let n = threads.probes.len();
    let (setup_tx, setup_rx) = mpsc::channel();
    let mut handles = Vec::new();
    let mut consumers = Vec::new();
    let mut lives = Vec::new();
    let mut exports = crate::metrics::probe_threads(plan.kind, &plan.cpus[..n]).into_iter();
    // Where each thread runs, as the kind's registration says: on its
    // probe CPU as the plan asks, or (an observer) off the probe CPUs.
    let observer = match crate::probe::registration(plan.kind).placement {
        Placement::ProbeCpus => None,
        Placement::Observer => Some(observer_place(plan, host)?),
    };
    for (i, probe) in threads.probes.drain(..).enumerate() {
        let (cpu, sched) = observer.unwrap_or((plan.cpus[i], plan.sched));
        let (tx, rx) = rtrb::RingBuffer::new(ROW_QUEUE);
        consumers.push(rx);
        let live = Arc::new(LiveStats::new());
        lives.push((cpu, Arc::clone(&live)));
        let fine = writer.fine_every.map(|every| {
            let (p, r) = jitterlab_core::fine_snapshot::fine_channel(plan.histogram_buckets, every);
            writer.fine_readers.push((cpu as u32, r));
            p
        });
        let start = ThreadStart {
            index: i as u32,
            cpu,
            sched,
            recorder: RecorderConfig {
                thread: i as u32,
                cpu: cpu as u32,
                window_ns: plan.params.window_ns,
                threshold_ns: plan.params.threshold_ns,
                outliers: plan.outliers,
                main_latency: plan.kind.main_latency(),
                histogram_us: plan.histogram_buckets,
            },
            metrics: plan.kind.metrics(),
            rows: tx,
            live,
            export: exports.next().flatten(),
            fine,
            shared: Arc::clone(shared),
            setup: setup_tx.clone(),
        };
        let handle = std::thread::Builder::new()
            .name(format!("{}-cpu{cpu}", plan.kind.name()))
            .stack_size(rt::PREFAULT_STACK + 512 * 1024)
            .spawn(move || thread_body(probe, start))
            .context("starting a probe thread")?;
        handles.push(handle);
    }
    Ok(Started {
        handles,
        consumers,
        lives,
        setup: setup_rx,
    })
}

/// Step 2, the strict check: merges what held on every thread into the
/// real-time report, and refuses a probe that could not prepare or, under
/// `--strict`, a default that did not hold; says the warnings so far.
fn strict(input: &mut MeasureInput<'_>, setups: Vec<Setup>) -> Result<RealtimeReport> {
    let mut per_thread: Vec<(usize, Vec<DefaultStatus>)> = Vec::new();
    let mut prepared = Vec::new();
    let mut failed = None;
    for s in setups {
        per_thread.push((s.cpu, s.statuses));
        match s.prepared {
            Ok(p) => prepared.push(p),
            Err(e) => {
                failed.get_or_insert(e);
            }
        }
    }
    if let Some(e) = failed {
        return Err(e);
    }
    for p in &mut prepared {
        input.warnings.append(&mut p.warnings);
    }
    per_thread.sort_by_key(|(cpu, _)| *cpu);
    let mut defaults = std::mem::take(&mut input.defaults);
    defaults.extend(rt::merge_thread_statuses(&per_thread));
    let report = realtime_report(defaults, &input.host, &mut input.warnings);
    for note in prepared.iter().filter_map(|p| p.calibration_note.as_ref()) {
        input.warnings.push(format!("scan calibration: {note}"));
    }
    strict_check(input.plan, &report)?;
    say_warnings(input.live, &input.warnings);
    Ok(report)
}

/// Step 3, the start barrier: sets the common first release `t0` and
/// releases every thread; returns `t0`.
fn release(plan: &RunPlan, shared: &Shared, writer: &mut RowWriter) -> u64 {
    // A periodic probe's threads start at one common t0, far enough ahead
    // for all of them to be asleep in their first clock_nanosleep; any
    // other probe starts when it is released.
    let lead = match plan.kind.periodic() {
        true => 20_000_000u64.max(plan.period),
        false => 0,
    };
    let t0 = sys::monotonic_ns() + lead;
    shared.t0.store(t0, Relaxed);
    writer.t0 = Some(t0);
    shared.barrier.wait();
    t0
}

/// Steps 4 and 5, drain windows and stop: every 100 ms drains the rows,
/// redraws the live view and stops the threads on a signal or at the
/// deadline, until every thread has ended; returns whether a signal ended
/// the measurement.
fn drain(
    input: &MeasureInput<'_>,
    shared: &Shared,
    t0: u64,
    started: &mut Started,
    writer: &mut RowWriter,
    tick: &mut dyn FnMut(),
) -> bool {
    let plan = input.plan;
    // A periodic probe counts its own releases; any other is stopped at
    // the duration.
    let deadline = match plan.kind.periodic() {
        true => None,
        false => plan.params.duration_ns.map(|d| t0 + d),
    };
    let mut display = Display::new(input, std::mem::take(&mut started.lives));
    let mut interrupted = false;
    loop {
        std::thread::sleep(Duration::from_millis(100));
        if input.signalled.load(Relaxed) && !interrupted {
            interrupted = true;
            shared.stop.store(true, Relaxed);
        }
        if deadline.is_some_and(|d| sys::monotonic_ns() >= d) {
            shared.stop.store(true, Relaxed);
        }
        writer.drain(&mut started.consumers);
        display.tick();
        tick();
        if started.handles.iter().all(|h| h.is_finished()) {
            break;
        }
    }
    display.finish();
    interrupted
}

/// Step 6, assemble (its first half): joins the threads, handing every
/// probe back for the teardown; refuses a thread that panicked or ended
/// without measuring.
fn join(
    handles: Vec<JoinHandle<ThreadEnd>>,
    threads: &mut Threads,
    n: usize,
) -> Result<Vec<ThreadMeasured>> {
    let mut measured = Vec::new();
    let mut failure = None;
    for h in handles {
        match h.join() {
            Ok(end) => {
                threads.probes.push(end.probe);
                match end.measured {
                    Some(m) => measured.push(m),
                    None => {
                        failure.get_or_insert(thread_failure(n, "ended without measuring"));
                    }
                }
            }
            Err(_) => {
                failure.get_or_insert(thread_failure(n, "panicked; this is a bug in jitterlab"));
            }
        }
    }
    match failure {
        Some(f) => Err(anyhow!("{f}")),
        None => Ok(measured),
    }
}

/// Step 6, assemble (its second half): the threads' recorders and reports
/// become the versioned result.
fn assemble_threads(
    mut input: MeasureInput<'_>,
    report: RealtimeReport,
    measured: Vec<ThreadMeasured>,
    elapsed_ns: u64,
    interrupted: bool,
) -> Result<Measured> {
    let mut reports = Vec::new();
    let mut figures = Vec::new();
    for m in measured {
        let report = m.report?;
        figures.push(ThreadFigures {
            index: m.index,
            cpu: m.cpu,
            tid: m.tid,
            recorder: m.recorder,
            usage: m.usage,
            calibration: m.calibration,
        });
        reports.push(report);
    }
    for r in &mut reports {
        input.warnings.append(&mut r.warnings);
    }
    let context = ResultContext {
        host: input.host,
        started_at: input.started_at,
        elapsed_ns,
        end: match interrupted {
            true => EndReason::Interrupted,
            false => EndReason::Completed,
        },
        realtime: report,
        warnings: input.warnings,
    };
    Ok(assemble::threads(input.plan, context, figures, reports))
}

/// The CPU and scheduling of an observer thread
/// ([`Placement::Observer`]): off every probe CPU of the configuration
/// ([`observer_cpu`]), SCHED_OTHER at nice 0.
fn observer_place(plan: &RunPlan, host: &HostSnapshot) -> Result<(usize, SchedRequest)> {
    let online: Vec<usize> = CpuList::parse(&host.cpus_online)
        .map(|l| l.iter().collect())
        .unwrap_or_default();
    let (cpu, _) = observer_cpu(&online, &plan.config_cpus, &plan.neighbour_cpus)
        .context("no CPU is online for the observer thread")?;
    let sched = SchedRequest {
        policy: Policy::Other,
        priority: 0,
        nice: 0,
    };
    Ok((cpu, sched))
}

/// "the probe thread …" of a one-thread measurement, "a probe thread …" of
/// one with several.
fn thread_failure(threads: usize, what: &str) -> String {
    match threads {
        1 => format!("the probe thread {what}"),
        _ => format!("a probe thread {what}"),
    }
}

/// One measuring thread: real-time set-up, the probe's preparation and
/// the recorder on this thread, the start barrier, the measurement.
fn thread_body(mut probe: Box<dyn Probe>, start: ThreadStart) -> ThreadEnd {
    let ThreadStart {
        index,
        cpu,
        sched,
        recorder,
        metrics,
        rows,
        live,
        export,
        fine,
        shared,
        setup,
    } = start;
    let statuses = rt::setup_probe_thread(cpu, sched);
    let tid = sys::gettid();
    let prepared = probe.prepare();
    let calibration = prepared.as_ref().ok().and_then(|p| p.calibration.clone());
    // Allocated here, after the probe's own buffers: first touch places it
    // near this CPU.
    let mut recorder = prepared
        .is_ok()
        .then(|| Recorder::new(metrics, &recorder, rows, live));
    if let (Some(r), Some(p)) = (recorder.as_mut(), export) {
        r.export_metrics(p);
    }
    if let (Some(r), Some(p)) = (recorder.as_mut(), fine) {
        r.export_fine(p);
    }
    let _ = setup.send(Setup {
        index,
        cpu,
        statuses,
        prepared,
    });
    drop(setup);
    shared.barrier.wait();
    let Some(mut recorder) = recorder.take() else {
        return ThreadEnd {
            probe,
            measured: None,
        };
    };
    if shared.abort.load(Relaxed) {
        return ThreadEnd {
            probe,
            measured: None,
        };
    }
    let t0 = shared.t0.load(Relaxed);
    // The windows start at the common first release, or when this thread
    // was released if that is later (a probe that starts at once).
    recorder.start_at(t0.max(sys::monotonic_ns()));
    let before = sys::thread_usage().unwrap_or_default();
    let report = probe.measure(
        &Start {
            t0,
            stop: &shared.stop,
        },
        &mut recorder,
    );
    let after = sys::thread_usage().unwrap_or_default();
    recorder.finish();
    ThreadEnd {
        probe,
        measured: Some(ThreadMeasured {
            index,
            cpu,
            tid,
            recorder,
            usage: UsageDelta {
                voluntary_switches: after
                    .voluntary_switches
                    .saturating_sub(before.voluntary_switches),
                involuntary_switches: after
                    .involuntary_switches
                    .saturating_sub(before.involuntary_switches),
                minor_faults: after.minor_faults.saturating_sub(before.minor_faults),
                major_faults: after.major_faults.saturating_sub(before.major_faults),
            },
            calibration,
            report,
        }),
    }
}

/// Waits for every thread's set-up report; in thread order.
fn collect_setup(rx: &mpsc::Receiver<Setup>, threads: usize) -> Result<Vec<Setup>> {
    let mut setups = Vec::new();
    for _ in 0..threads {
        let s = rx
            .recv()
            .map_err(|_| anyhow!("{}", thread_failure(threads, "died during its set-up")))?;
        setups.push(s);
    }
    setups.sort_by_key(|s| s.index);
    Ok(setups)
}

/// Releases the start barrier with the abort flag raised: every thread
/// returns its probe without measuring.
fn abort(shared: &Shared, handles: Vec<JoinHandle<ThreadEnd>>, probes: &mut Vec<Box<dyn Probe>>) {
    shared.abort.store(true, Relaxed);
    shared.barrier.wait();
    for h in handles {
        if let Ok(end) = h.join() {
            probes.push(end.probe);
        }
    }
}

/// What the controller shows while the threads measure: a periodic
/// probe's live view (one line per thread, on stdout or with
/// `--progress`), else one progress line on a terminal's stderr.
enum Display {
    View(LiveView),
    Line {
        name: &'static str,
        cpu: usize,
        unit: MetricUnit,
        live: Arc<LiveStats>,
        ticks: u64,
    },
    Off,
}

impl Display {
    fn new(input: &MeasureInput<'_>, lives: Vec<(usize, Arc<LiveStats>)>) -> Display {
        if !input.live {
            return Display::Off;
        }
        let plan = input.plan;
        if plan.kind.periodic() {
            let goal = match (plan.params.duration_ns, plan.params.cycles) {
                (Some(d), _) => Goal::Releases(d.div_ceil(plan.period)),
                (None, Some(n)) => Goal::Cycles(n),
                (None, None) => Goal::Releases(0),
            };
            return Display::View(LiveView::new(lives, goal, input.progress));
        }
        match lives.into_iter().next() {
            Some((cpu, live)) if std::io::stderr().is_terminal() => Display::Line {
                name: plan.kind.name(),
                cpu,
                unit: plan
                    .kind
                    .metrics()
                    .first()
                    .map_or(MetricUnit::Ns, |d| d.unit),
                live,
                ticks: 0,
            },
            _ => Display::Off,
        }
    }

    fn tick(&mut self) {
        match self {
            Display::View(v) => v.tick(),
            Display::Line {
                name,
                cpu,
                unit,
                live,
                ticks,
            } => {
                *ticks += 1;
                if ticks.is_multiple_of(5) {
                    let v = |a: &AtomicU64| {
                        let x = a.load(Relaxed);
                        match unit {
                            MetricUnit::Ns => format_ns(i64::try_from(x).unwrap_or(i64::MAX)),
                            MetricUnit::Cycles => format!("{x} cycles"),
                        }
                    };
                    crate::output::err!(
                        "\r{name} CPU {cpu}: {} samples, last {}, max {}   ",
                        live.samples.load(Relaxed),
                        v(&live.last),
                        v(&live.max)
                    );
                }
            }
            Display::Off => {}
        }
    }

    fn finish(&mut self) {
        match self {
            Display::View(v) => {
                v.tick();
                v.finish();
            }
            Display::Line { .. } => crate::output::errln!(),
            Display::Off => {}
        }
    }
}

// ---------------------------------------------------------------------------
// A probe that runs an external tool.

/// What a probe measuring elsewhere hands the lifecycle (see
/// [`ExternalRun`]): the start to record, the window rows to store, the
/// caller's tick.
struct ExternalSink<'a> {
    writer: &'a mut RowWriter,
    ready: Ready<'a>,
    tick: &'a mut dyn FnMut(),
}

impl crate::probe::ExternalSink for ExternalSink<'_> {
    fn ready(&mut self, realtime: bool) -> Result<()> {
        (self.ready)(self.writer, realtime)
    }

    fn rows(&mut self, rows: &[WindowRow]) {
        self.writer.push_rows(rows);
    }

    fn tick(&mut self) {
        (self.tick)();
    }
}

/// Measures with a probe that measures elsewhere: an external tool that
/// applies its own real-time set-up (rtla's SCHED_FIFO threads and PM QoS
/// request; what it could not have, it reports as an error) and calls
/// `ready` before it starts, or a container cell, whose rows arrive as
/// the probe inside drains them and whose result carries its own
/// real-time report.
fn measure_external(
    input: MeasureInput<'_>,
    probe: &mut dyn ExternalProbe,
    writer: &mut RowWriter,
    ready: Ready<'_>,
    tick: &mut dyn FnMut(),
) -> Result<Measured> {
    let finished = {
        let mut sink = ExternalSink {
            writer: &mut *writer,
            ready,
            tick,
        };
        let mut run = ExternalRun::new(input.signalled, &mut sink);
        let finished = probe.measure(&mut run)?;
        if !run.readied() {
            bail!("the probe measured without recording its start; this is a bug in jitterlab");
        }
        finished
    };
    let mut warnings = input.warnings;
    warnings.extend(finished.warnings);
    // Kept in the writer too: the caller turns it into exit status 2.
    if let Some(e) = writer.error.clone() {
        warnings.push(e);
    }
    let context = ResultContext {
        host: input.host,
        started_at: input.started_at,
        elapsed_ns: finished.elapsed_ns,
        end: match finished.interrupted {
            true => EndReason::Interrupted,
            false => EndReason::Completed,
        },
        realtime: finished.realtime.unwrap_or(RealtimeReport {
            realtime: true,
            defaults: Vec::new(),
        }),
        warnings,
    };
    let figures = Figures {
        threads: finished.threads,
        combined: finished.combined,
        limits: finished.limits,
        break_event: None,
        detail: Some(finished.detail),
    };
    let result = assemble::assemble(input.plan.kind, probe.params(), context, figures);
    Ok(Measured {
        result,
        histograms: finished.histograms,
        recorders: Vec::new(),
    })
}

#[cfg(test)]
mod tests;
