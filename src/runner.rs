//! `jitterlab run …`: from validated flags to a stored, printed result.
//!
//! The order is the contract with the user:
//!
//! 1. **Validate** everything that can be wrong with the input — units,
//!    ranges, CPUs against the machine's online list, the policy/priority
//!    pair, every output path — and refuse with a one-line error naming the
//!    fix (exit 2) before any thread starts or anything is written.
//! 2. **Set up** the process-wide real-time defaults (mlockall, the PM QoS
//!    request), start one probe thread per CPU, let each apply its own
//!    defaults and calibrate, and collect what held. `--strict` aborts here.
//! 3. **Measure**: release every thread at one common first release `t0`.
//!    The controlling thread — SCHED_OTHER, kept off the probe CPUs where
//!    the machine has others — is the low-priority writer of DESIGN rule 2:
//!    it drains window rows from each thread's wait-free queue every 100 ms
//!    into the CSV file, redraws the live view, and turns SIGINT/SIGTERM into
//!    the stop flag.
//! 4. **Store and report**: the run row is in the results database before the
//!    first release, window rows are committed as they are drained, and the
//!    versioned `RunResult` with its histograms is stored at the end; the
//!    exporters (`report::*`) never measure. Exit 1 when a `--max-*` limit
//!    was exceeded, 0 otherwise.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{mpsc, Arc, Barrier};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use jitterlab_core::result::{
    check_limit, Calibration, DefaultStatus, EndReason, Params, ProbeKind, RealtimeReport,
    RunResult, ThreadResult, SCHEMA_VERSION,
};
use jitterlab_core::sink::{LiveStats, RecorderConfig, METRICS};
use jitterlab_core::stats::MetricStats;
use jitterlab_core::units::format_duration_exact;
use jitterlab_core::window::WindowRow;
use jitterlab_sys::{self as sys, Policy};

use crate::cli::{CommonArgs, CyclicArgs, PolicyArg, WakeupArgs};
use crate::error::{bad, BadInput};
use crate::live::{Goal, LiveView};
use crate::probe::periodic::{
    self, BreakRule, SetupReport, Shared, StopRule, ThreadOutcome, ThreadPlan,
};
use crate::report;
use crate::store::{RunIds, RunStart, Store, StoredHistogram};
use crate::system::rt::{self, SchedRequest};
use crate::system::{host, trace};

/// Window rows each probe thread can queue before the writer must drain:
/// 4096 one-second windows is over an hour of slack.
pub const ROW_QUEUE: usize = 4096;

/// Duration when neither `--duration` nor `--cycles` is given.
pub const DEFAULT_DURATION_NS: u64 = 10_000_000_000;

/// A run, validated and ready to start.
#[derive(Debug)]
pub struct RunPlan {
    /// The probe.
    pub kind: ProbeKind,
    /// Period or interval, ns.
    pub period: u64,
    /// Probe CPUs, one thread each.
    pub cpus: Vec<usize>,
    /// `(working set, scan)` for the cyclic probe.
    pub scan: Option<(u64, u64)>,
    /// Scheduling request.
    pub sched: SchedRequest,
    /// Parameters as stored in the result.
    pub params: Params,
}

/// Validates `jitterlab run cyclic`.
pub fn plan_cyclic(root: &Path, db: &Path, a: &CyclicArgs) -> Result<RunPlan> {
    let online = host::online_cpus(root)?;
    let cpu = match a.cpu {
        Some(c) => c,
        None => online
            .iter()
            .last()
            .ok_or_else(|| bad("no CPU is online"))?,
    };
    if !online.contains(cpu) {
        return Err(bad(format!(
            "CPU {cpu} is not online (online CPUs: {online}); choose one of them with --cpu"
        )));
    }
    if a.period == 0 {
        return Err(bad("--period must be positive; give e.g. --period 1ms"));
    }
    if a.scan >= a.period {
        return Err(bad(format!(
            "--scan {} is not shorter than --period {}; shorten the scan or lengthen the period",
            format_duration_exact(a.scan),
            format_duration_exact(a.period)
        )));
    }
    plan_common(
        (!a.common.no_db).then_some(db),
        ProbeKind::Cyclic,
        a.period,
        vec![cpu],
        Some((a.working_set, a.scan)),
        &a.common,
    )
}

/// Validates `jitterlab run wakeup`.
pub fn plan_wakeup(root: &Path, db: &Path, a: &WakeupArgs) -> Result<RunPlan> {
    let online = host::online_cpus(root)?;
    let cpus: Vec<usize> = match &a.cpus {
        Some(list) => {
            if let Some(off) = list.iter().find(|c| !online.contains(*c)) {
                return Err(bad(format!(
                    "CPU {off} in --cpus is not online (online CPUs: {online}); choose CPUs from that list"
                )));
            }
            list.iter().collect()
        }
        None if online.len() > 1 => online.iter().filter(|&c| c != 0).collect(),
        None => online.iter().collect(),
    };
    if cpus.is_empty() {
        return Err(bad("no CPU is online"));
    }
    if a.interval == 0 {
        return Err(bad("--interval must be positive; give e.g. --interval 1ms"));
    }
    plan_common(
        (!a.common.no_db).then_some(db),
        ProbeKind::Wakeup,
        a.interval,
        cpus,
        None,
        &a.common,
    )
}

fn plan_common(
    db: Option<&Path>,
    kind: ProbeKind,
    period: u64,
    cpus: Vec<usize>,
    scan: Option<(u64, u64)>,
    c: &CommonArgs,
) -> Result<RunPlan> {
    let policy = match c.policy {
        PolicyArg::Fifo => Policy::Fifo,
        PolicyArg::Rr => Policy::RoundRobin,
        PolicyArg::Other => Policy::Other,
    };
    let (priority, nice) = match policy {
        Policy::Other => {
            if let Some(p) = c.priority {
                return Err(bad(format!(
                    "--priority {p} is not allowed with --policy other; use --nice to weight a time-sharing thread, or --policy fifo"
                )));
            }
            if c.strict {
                return Err(bad(
                    "--strict needs a real-time policy, and --policy other is never real-time; use --policy fifo or rr",
                ));
            }
            let n = c.nice.unwrap_or(0);
            if !(-20..=19).contains(&n) {
                return Err(bad(format!(
                    "--nice {n} is outside -20..19; choose a nice value in that range"
                )));
            }
            (None, Some(n))
        }
        p => {
            if let Some(n) = c.nice {
                return Err(bad(format!(
                    "--nice {n} applies only to --policy other; use --priority with --policy {}",
                    c.policy.name()
                )));
            }
            let (lo, hi) = sys::priority_range(p);
            let prio = c.priority.unwrap_or(95);
            if !(lo..=hi).contains(&prio) {
                return Err(bad(format!(
                    "--priority {prio} is outside {lo}-{hi} for --policy {}; choose a priority in that range",
                    c.policy.name()
                )));
            }
            (Some(prio), None)
        }
    };
    if c.duration == Some(0) {
        return Err(bad("--duration must be positive; give e.g. --duration 10s"));
    }
    if c.cycles == Some(0) {
        return Err(bad("--cycles must be at least 1"));
    }
    if c.window == 0 {
        return Err(bad("--window must be positive; give e.g. --window 1s"));
    }
    if c.break_trace == Some(0) {
        return Err(bad(
            "--break-trace must be positive; give e.g. --break-trace 500us",
        ));
    }
    if c.histogram_buckets == 0 {
        return Err(bad("--histogram-buckets must be at least 1"));
    }
    for (flag, path) in [
        ("--json", &c.json),
        ("--csv", &c.csv),
        ("--histogram", &c.histogram),
    ] {
        if let Some(p) = path {
            check_writable(flag, p)?;
        }
    }
    if let Some(db) = db {
        check_writable("--db", db)?;
    }
    let duration = match (c.duration, c.cycles) {
        (Some(d), _) => Some(d),
        (None, Some(_)) => None,
        (None, None) => Some(DEFAULT_DURATION_NS),
    };
    Ok(RunPlan {
        kind,
        period,
        scan,
        sched: SchedRequest {
            policy,
            priority: priority.unwrap_or(0),
            nice: nice.unwrap_or(0),
        },
        params: Params {
            period_ns: period,
            duration_ns: duration,
            cycles: c.cycles,
            cpus: cpus.clone(),
            policy: c.policy.name().into(),
            priority,
            nice,
            scan_ns: scan.map_or(0, |s| s.1),
            working_set_bytes: scan.map_or(0, |s| s.0),
            window_ns: c.window,
            threshold_ns: c.threshold,
            break_trace_ns: c.break_trace,
            strict: c.strict,
        },
        cpus,
    })
}

/// Refuses an output path that cannot be written, without creating it.
fn check_writable(flag: &str, path: &Path) -> Result<()> {
    let shown = path.display();
    if path.is_dir() {
        return Err(bad(format!(
            "{flag} {shown} is a directory; give a file path"
        )));
    }
    if path.exists() {
        if !sys::can_write(path) {
            return Err(bad(format!(
                "{flag} {shown} is not writable; choose another path or fix its permissions"
            )));
        }
        return Ok(());
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !parent.is_dir() {
        return Err(bad(format!(
            "{flag} {shown}: directory {} does not exist; create it or choose another path",
            parent.display()
        )));
    }
    if !sys::can_write(&parent) {
        return Err(bad(format!(
            "{flag} {shown}: directory {} is not writable; choose another path",
            parent.display()
        )));
    }
    Ok(())
}

/// Runs a validated plan and reports it. Returns the exit code.
pub fn execute(root: &Path, db: &Path, plan: RunPlan, c: &CommonArgs) -> Result<ExitCode> {
    let store = match c.no_db {
        true => None,
        false => Some(Store::open(db)?),
    };
    let host = host::snapshot(root);
    let mut warnings: Vec<String> = Vec::new();
    let started_at = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();

    // Process-wide defaults.
    let mlock = rt::lock_memory();
    let (dma_guard, dma) = rt::hold_dma_latency(root, c.no_dma_latency);

    // --break-trace: find the trace buffer once, open it per thread.
    let tracefs = c.break_trace.map(|_| trace::find_tracefs(root));
    if let Some(status) = &tracefs {
        if !matches!(status, trace::TracefsStatus::Ready(_)) {
            warnings.push(format!(
                "--break-trace: {}; the run still ends at the first wake-up over the limit, without a trace",
                status.explain()
            ));
        }
    }

    // Keep the controller off the probe CPUs where the machine allows it.
    if let Ok(online) = host::online_cpus(root) {
        let others: Vec<usize> = online.iter().filter(|c| !plan.cpus.contains(c)).collect();
        if !others.is_empty() {
            let _ = sys::set_affinity(&others);
        }
    }

    let signalled = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&signalled))
            .context("installing the SIGINT/SIGTERM handler")?;
    }

    let csv = match &c.csv {
        Some(p) => Some(report::csv::WindowCsv::new(BufWriter::new(
            File::create(p).with_context(|| format!("creating --csv {}", p.display()))?,
        ))?),
        None => None,
    };

    let shared = Arc::new(Shared {
        stop: AtomicBool::new(false),
        abort: AtomicBool::new(false),
        t0: AtomicU64::new(0),
        barrier: Barrier::new(plan.cpus.len() + 1),
    });
    let releases = plan.params.duration_ns.map(|d| d.div_ceil(plan.period));
    let Probes {
        handles,
        mut consumers,
        lives,
        setup: setup_rx,
    } = spawn_probes(&plan, c, tracefs.as_ref(), &shared, releases)?;

    let (per_thread, calibrations) = collect_setup(&setup_rx, plan.cpus.len())?;
    let mut defaults: Vec<DefaultStatus> = vec![mlock, dma];
    defaults.extend(rt::merge_thread_statuses(&per_thread));
    defaults.push(rt::clock_status());
    defaults.push(rt::throttling_status(
        host.sched_rt_runtime_us,
        host.sched_rt_period_us,
    ));
    let realtime = defaults.iter().all(|d| d.applied || !d.required);
    for d in defaults.iter().filter(|d| d.required && !d.applied) {
        warnings.push(format!("not real-time: {}: {}", d.name, d.detail));
    }
    for cal in calibrations.iter().flatten() {
        if let Some(n) = &cal.note {
            warnings.push(format!("scan calibration: {n}"));
        }
    }

    if c.strict && !realtime {
        abort_probes(&shared, handles);
        let failed: Vec<String> = defaults
            .iter()
            .filter(|d| d.required && !d.applied)
            .map(|d| format!("{}: {}", d.name, d.detail))
            .collect();
        bail!(BadInput(format!(
            "--strict: a real-time default could not be applied ({}); fix it or drop --strict",
            failed.join("; ")
        )));
    }
    for w in &warnings {
        eprintln!("jitterlab: warning: {w}");
    }
    let command_line: Vec<String> = std::env::args().collect();
    let mut writer = RowWriter {
        csv,
        store,
        ids: None,
        db,
        rows: Vec::new(),
        error: None,
    };
    if let Some(s) = writer.store.as_mut() {
        let started = s.begin_run(&RunStart {
            started_at: &started_at,
            probe: plan.kind.name(),
            command_line: &command_line,
            params_json: serde_json::to_string(&plan.params)?,
            host_json: serde_json::to_string(&host)?,
            hostname: &host.hostname,
            kernel_release: &host.kernel_release,
            realtime,
        });
        match started {
            Ok(ids) => writer.ids = Some(ids),
            Err(e) => {
                abort_probes(&shared, handles);
                return Err(e.context(format!("recording the run in {}", db.display())));
            }
        }
    }

    // Release every thread at one common t0, far enough ahead for all of them
    // to be asleep in their first clock_nanosleep.
    let t0 = sys::monotonic_ns() + 20_000_000u64.max(plan.period);
    shared.t0.store(t0, Relaxed);
    shared.barrier.wait();

    let goal = match (releases, c.cycles) {
        (Some(r), _) => Goal::Releases(r),
        (None, Some(n)) => Goal::Cycles(n),
        (None, None) => Goal::Releases(0),
    };
    let mut view = LiveView::new(lives, goal, c.progress);
    let mut interrupted = false;
    loop {
        std::thread::sleep(Duration::from_millis(100));
        if signalled.load(Relaxed) && !interrupted {
            interrupted = true;
            shared.stop.store(true, Relaxed);
        }
        writer.drain(&mut consumers);
        view.tick();
        if handles.iter().all(|h| h.is_finished()) {
            break;
        }
    }
    view.tick();
    view.finish();

    let mut outcomes: Vec<ThreadOutcome> = Vec::new();
    for h in handles {
        let failure = match h.join() {
            Ok(Some(o)) => {
                outcomes.push(o);
                continue;
            }
            Ok(None) => "a probe thread ended without measuring",
            Err(_) => "a probe thread panicked; this is a bug in jitterlab",
        };
        writer.drain(&mut consumers);
        writer.abandon();
        bail!("{failure}");
    }
    writer.drain(&mut consumers);
    if let Some(e) = writer.error.take() {
        warnings.push(e);
    }
    drop(dma_guard);
    let elapsed_ns = sys::monotonic_ns().saturating_sub(t0);

    let combined_stats = combine(&outcomes);
    let result = assemble(
        &plan,
        c,
        host,
        started_at,
        elapsed_ns,
        interrupted,
        RealtimeReport { realtime, defaults },
        &outcomes,
        &combined_stats,
        warnings,
    );
    writer.finish(&result, &outcomes, &combined_stats);

    write_files(c, &result, &outcomes)?;
    if let Some(w) = writer.csv.as_mut() {
        w.flush()?;
    }
    print!("{}", report::text::summary(&result));
    std::io::stdout().flush()?;
    Ok(if result.failed() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

#[allow(clippy::too_many_arguments)]
fn assemble(
    plan: &RunPlan,
    c: &CommonArgs,
    host: jitterlab_core::result::HostSnapshot,
    started_at: String,
    elapsed_ns: u64,
    interrupted: bool,
    realtime: RealtimeReport,
    outcomes: &[ThreadOutcome],
    combined_stats: &[MetricStats],
    warnings: Vec<String>,
) -> RunResult {
    let break_event = outcomes.iter().find_map(|o| o.break_event.clone());
    let end = if break_event.is_some() {
        EndReason::BreakTrace
    } else if interrupted {
        EndReason::Interrupted
    } else {
        EndReason::Completed
    };
    let threads: Vec<ThreadResult> = outcomes
        .iter()
        .map(|o| ThreadResult {
            thread: o.index,
            cpu: o.cpu,
            tid: o.tid,
            cycles: o.cycles,
            releases: o.releases,
            skipped: o.skipped,
            overruns: o.overruns,
            metrics: METRICS
                .iter()
                .map(|m| {
                    (
                        m.name().to_string(),
                        o.recorder.stats[*m as usize].summary(),
                    )
                })
                .collect(),
            outliers: METRICS
                .iter()
                .map(|m| {
                    (
                        m.name().to_string(),
                        o.recorder.outliers[*m as usize].sorted(),
                    )
                })
                .collect(),
            calibration: o.calibration.clone(),
            usage: o.usage,
            window_rows: o.recorder.windows.pushed(),
            dropped_rows: o.recorder.windows.dropped(),
        })
        .collect();
    let combined = (outcomes.len() > 1).then(|| {
        METRICS
            .iter()
            .map(|m| (m.name().to_string(), combined_stats[*m as usize].summary()))
            .collect()
    });
    let mut limits = Vec::new();
    for (name, idx, limit) in [
        ("latency", 0usize, c.max_latency),
        ("jitter", 2, c.max_jitter),
        ("exec", 3, c.max_exec),
    ] {
        if let Some(l) = limit {
            limits.push(check_limit(name, l, &combined_stats[idx].summary()));
        }
    }
    RunResult {
        schema_version: SCHEMA_VERSION,
        tool: "jitterlab".into(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        probe: plan.kind,
        started_at,
        elapsed_ns,
        end,
        interrupted: interrupted || break_event.is_some(),
        command_line: std::env::args().collect(),
        params: plan.params.clone(),
        realtime,
        host,
        threads,
        combined,
        limits,
        break_event,
        warnings,
    }
}

/// The low-priority writer's state: it drains every probe thread's queue of
/// window rows into memory, the `--csv` file and the results database (one
/// commit per drain, so a crash loses at most the rows not yet drained), and
/// stores the result at the end. A write error never stops the probes: it is
/// remembered and reported as a warning.
struct RowWriter<'a> {
    csv: Option<report::csv::WindowCsv<BufWriter<File>>>,
    store: Option<Store>,
    ids: Option<RunIds>,
    db: &'a Path,
    rows: Vec<WindowRow>,
    error: Option<String>,
}

impl RowWriter<'_> {
    fn drain(&mut self, consumers: &mut [rtrb::Consumer<WindowRow>]) {
        let first_new = self.rows.len();
        for rx in consumers.iter_mut() {
            while let Ok(row) = rx.pop() {
                if let Some(w) = self.csv.as_mut() {
                    if let Err(e) = w.write_row(&row).and_then(|()| w.flush()) {
                        self.error.get_or_insert(format!("writing --csv: {e}"));
                    }
                }
                self.rows.push(row);
            }
        }
        if let (Some(s), Some(ids)) = (self.store.as_mut(), self.ids) {
            if let Err(e) = s.insert_windows(ids.cell, &self.rows[first_new..]) {
                self.error.get_or_insert(format!(
                    "storing window rows in {}: {e:#}",
                    self.db.display()
                ));
            }
        }
    }

    /// Marks the stored run interrupted after an error.
    fn abandon(&mut self) {
        if let (Some(s), Some(ids)) = (self.store.as_mut(), self.ids) {
            let _ = s.abandon_run(ids);
        }
    }

    /// Stores the result with every metric's histograms.
    fn finish(&mut self, result: &RunResult, outcomes: &[ThreadOutcome], combined: &[MetricStats]) {
        let (Some(s), Some(ids)) = (self.store.as_mut(), self.ids) else {
            return;
        };
        let mut hists = Vec::new();
        for o in outcomes {
            for m in METRICS {
                let h = o.recorder.stats[m as usize].histograms();
                hists.push(StoredHistogram {
                    thread: Some(o.index),
                    metric: m.name(),
                    positive: h.positive,
                    negative: h.negative,
                });
            }
        }
        if outcomes.len() > 1 {
            for m in METRICS {
                let h = combined[m as usize].histograms();
                hists.push(StoredHistogram {
                    thread: None,
                    metric: m.name(),
                    positive: h.positive,
                    negative: h.negative,
                });
            }
        }
        match s.finish_run(ids, result, &hists) {
            Ok(()) => eprintln!(
                "jitterlab: stored as run {} in {}",
                ids.run,
                self.db.display()
            ),
            Err(e) => {
                let _ = s.abandon_run(ids);
                eprintln!(
                    "jitterlab: warning: storing the result in {} failed: {e:#}",
                    self.db.display()
                );
            }
        }
    }
}

/// Every thread's statistics merged, per metric in `METRICS` order (used for
/// the combined table, the limits and the stored combined histograms).
fn combine(outcomes: &[ThreadOutcome]) -> Vec<MetricStats> {
    METRICS
        .iter()
        .map(|m| {
            let mut acc = outcomes[0].recorder.stats[*m as usize].clone();
            for o in &outcomes[1..] {
                acc.merge(&o.recorder.stats[*m as usize]);
            }
            acc
        })
        .collect()
}

/// The probe threads of a run, started and waiting at the start barrier.
struct Probes {
    handles: Vec<JoinHandle<Option<ThreadOutcome>>>,
    consumers: Vec<rtrb::Consumer<WindowRow>>,
    lives: Vec<(usize, Arc<LiveStats>)>,
    setup: mpsc::Receiver<SetupReport>,
}

/// Starts one probe thread per CPU of the plan, each with its row queue,
/// live statistics and (for `--break-trace`) its own open trace files.
fn spawn_probes(
    plan: &RunPlan,
    c: &CommonArgs,
    tracefs: Option<&trace::TracefsStatus>,
    shared: &Arc<Shared>,
    releases: Option<u64>,
) -> Result<Probes> {
    let (setup_tx, setup) = mpsc::channel();
    let mut probes = Probes {
        handles: Vec::new(),
        consumers: Vec::new(),
        lives: Vec::new(),
        setup,
    };
    for (i, &cpu) in plan.cpus.iter().enumerate() {
        let (tx, rx) = rtrb::RingBuffer::new(ROW_QUEUE);
        probes.consumers.push(rx);
        let live = Arc::new(LiveStats::new());
        probes.lives.push((cpu, Arc::clone(&live)));
        let tplan = ThreadPlan {
            index: i as u32,
            cpu,
            period: plan.period,
            sched: plan.sched,
            scan: plan.scan,
            recorder: RecorderConfig {
                thread: i as u32,
                cpu: cpu as u32,
                window_ns: c.window,
                threshold_ns: c.threshold,
                outliers: c.outliers,
                histogram_us: c.histogram.as_ref().map(|_| c.histogram_buckets),
            },
            rows: tx,
            stop: StopRule {
                releases,
                cycles: c.cycles,
            },
            break_rule: c.break_trace.map(|l| break_rule(l, tracefs)),
        };
        probes.handles.push(
            periodic::spawn(tplan, Arc::clone(shared), live, setup_tx.clone())
                .context("starting a probe thread")?,
        );
    }
    Ok(probes)
}

/// One thread's `--break-trace` rule, with the trace files opened now.
fn break_rule(latency_ns: u64, tracefs: Option<&trace::TracefsStatus>) -> BreakRule {
    let (tracer, missing) = match tracefs {
        Some(trace::TracefsStatus::Ready(dir)) => match trace::BreakTracer::open(dir, latency_ns) {
            Ok(t) => (Some(t), String::new()),
            Err(e) => (None, e.to_string()),
        },
        Some(other) => (None, other.explain()),
        None => (None, String::new()),
    };
    BreakRule {
        latency_ns,
        tracer,
        missing,
    }
}

/// Per-thread real-time statuses (sorted by CPU) and calibrations (by thread).
type SetupResults = (Vec<(usize, Vec<DefaultStatus>)>, Vec<Option<Calibration>>);

/// Waits for every probe thread's set-up report.
fn collect_setup(rx: &mpsc::Receiver<SetupReport>, threads: usize) -> Result<SetupResults> {
    let mut per_thread = Vec::new();
    let mut calibrations = vec![None; threads];
    for _ in 0..threads {
        let r = rx
            .recv()
            .map_err(|_| anyhow!("a probe thread died during its set-up"))?;
        calibrations[r.index as usize] = r.calibration;
        per_thread.push((r.cpu, r.statuses));
    }
    per_thread.sort_by_key(|(cpu, _)| *cpu);
    Ok((per_thread, calibrations))
}

/// Releases the start barrier with the abort flag raised: every probe thread
/// returns without measuring.
fn abort_probes(shared: &Shared, handles: Vec<JoinHandle<Option<ThreadOutcome>>>) {
    shared.abort.store(true, Relaxed);
    shared.barrier.wait();
    for h in handles {
        let _ = h.join();
    }
}

/// Writes `--json` and `--histogram` from the finished result.
fn write_files(c: &CommonArgs, result: &RunResult, outcomes: &[ThreadOutcome]) -> Result<()> {
    if let Some(p) = &c.json {
        let mut f = BufWriter::new(
            File::create(p).with_context(|| format!("creating --json {}", p.display()))?,
        );
        serde_json::to_writer_pretty(&mut f, result)?;
        writeln!(f)?;
        f.flush()?;
    }
    if let Some(p) = &c.histogram {
        let mut f = BufWriter::new(
            File::create(p).with_context(|| format!("creating --histogram {}", p.display()))?,
        );
        let latency: Vec<_> = outcomes
            .iter()
            .map(|o| o.recorder.stats[0].summary())
            .collect();
        let threads: Vec<report::histogram::HistThread> = outcomes
            .iter()
            .zip(&latency)
            .filter_map(|(o, l)| {
                o.recorder
                    .histogram
                    .as_ref()
                    .map(|h| report::histogram::HistThread {
                        hist: h,
                        latency: l,
                    })
            })
            .collect();
        report::histogram::write_cyclictest_histogram(&mut f, &threads)?;
        f.flush()?;
    }
    Ok(())
}
