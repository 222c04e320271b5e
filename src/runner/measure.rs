//! One measurement: probe threads started, released together, drained, and
//! their figures assembled into a `RunResult`.
//!
//! `jitterlab run` measures once; `jitterlab bench` measures once per cell,
//! with neighbours running beside it. Both go through [`measure`], so a
//! cell's figures mean exactly what a run's figures mean. The order inside:
//!
//! 1. start one probe thread per CPU; each applies its real-time defaults
//!    and (unless the bench calibrated the scan once, idle, before any
//!    neighbour started) calibrates its scan, then reports and waits;
//! 2. merge what held into the result's real-time report; `--strict`
//!    aborts here, before anything was released (both steps, and the
//!    result's assembly in 5, are [`super::lifecycle`]'s, shared with the
//!    event probes);
//! 3. `ready` is called (the run row or the cell is marked started in the
//!    store), then every thread is released at one common first release;
//! 4. the calling thread — SCHED_OTHER, kept off the probe CPUs by the
//!    caller — is the low-priority writer of DESIGN rule 2: every 100 ms it
//!    drains the window rows into the CSV file and the store (one commit per
//!    drain), redraws the live view, and turns SIGINT/SIGTERM into the stop
//!    flag;
//! 5. the outcomes are joined and assembled; storing the final figures is
//!    the caller's (a run finishes its run row, a bench its cell).

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{mpsc, Arc, Barrier};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use jitterlab_core::result::{
    Calibration, DefaultStatus, EndReason, HostSnapshot, RunResult, ThreadResult,
};
use jitterlab_core::sink::{LiveStats, RecorderConfig, METRICS};
use jitterlab_core::stats::MetricStats;
use jitterlab_core::window::WindowRow;
use jitterlab_sys as sys;

use crate::live::{Goal, LiveView};
use crate::probe::periodic::{
    self, BreakRule, SetupReport, Shared, StopRule, ThreadOutcome, ThreadPlan,
};
use crate::report;
use crate::store::{Store, StoredHistogram};
use crate::system::{rt, trace};

use super::lifecycle::{self, Figures, ResultContext};
use super::RunPlan;

/// Window rows each probe thread can queue before the writer must drain:
/// 4096 one-second windows is over an hour of slack.
pub const ROW_QUEUE: usize = 4096;

/// What one measurement needs besides the plan.
pub struct MeasureInput<'a> {
    /// The sysroot.
    pub root: &'a Path,
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
    /// Scan calibrations made once before (bench), by thread index.
    pub calibrated: Option<Vec<Calibration>>,
    /// Raised by SIGINT/SIGTERM.
    pub signalled: &'a AtomicBool,
    /// Draw the per-thread live view (a bench draws its own progress).
    pub live: bool,
    /// Draw it even when stdout is not a terminal (`--progress`).
    pub progress: bool,
}

/// What a measurement produced.
pub struct Measured {
    /// The assembled result.
    pub result: RunResult,
    /// Every thread's recorder.
    pub outcomes: Vec<ThreadOutcome>,
    /// Statistics of all threads merged, per metric.
    pub combined: Vec<MetricStats>,
}

impl Measured {
    /// The histograms behind every stored metric summary.
    pub fn histograms(&self) -> Vec<StoredHistogram> {
        let mut hists = Vec::new();
        for o in &self.outcomes {
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
        if self.outcomes.len() > 1 {
            for m in METRICS {
                let h = self.combined[m as usize].histograms();
                hists.push(StoredHistogram {
                    thread: None,
                    metric: m.name(),
                    positive: h.positive,
                    negative: h.negative,
                });
            }
        }
        hists
    }
}

/// Runs one measurement. `ready(writer, realtime)` is called once every
/// thread is set up, before the first release (the caller records the start
/// in the store and sets `writer.cell`); `tick` after every drain.
pub fn measure(
    mut input: MeasureInput<'_>,
    writer: &mut RowWriter,
    ready: &mut dyn FnMut(&mut RowWriter, bool) -> Result<()>,
    tick: &mut dyn FnMut(),
) -> Result<Measured> {
    let plan = input.plan;
    // --break-trace: find the trace buffer once, open it per thread.
    let tracefs = plan
        .params
        .break_trace_ns
        .map(|_| trace::find_tracefs(input.root));
    if let Some(status) = &tracefs {
        if !matches!(status, trace::TracefsStatus::Ready(_)) {
            input.warnings.push(format!(
                "--break-trace: {}; the run still ends at the first wake-up over the limit, without a trace",
                status.explain()
            ));
        }
    }
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
    } = spawn_probes(
        plan,
        tracefs.as_ref(),
        &shared,
        releases,
        input.calibrated.as_deref(),
    )?;

    let (per_thread, calibrations) = collect_setup(&setup_rx, plan.cpus.len())?;
    let mut defaults = std::mem::take(&mut input.defaults);
    defaults.extend(rt::merge_thread_statuses(&per_thread));
    let report = lifecycle::realtime_report(defaults, &input.host, &mut input.warnings);
    let realtime = report.realtime;
    if input.calibrated.is_none() {
        for cal in calibrations.iter().flatten() {
            if let Some(n) = &cal.note {
                input.warnings.push(format!("scan calibration: {n}"));
            }
        }
    }
    if let Err(e) = lifecycle::strict_check(plan, &report) {
        abort_probes(&shared, handles);
        return Err(e);
    }
    lifecycle::say_warnings(input.live, &input.warnings);
    if let Err(e) = ready(writer, realtime) {
        abort_probes(&shared, handles);
        return Err(e);
    }

    // Release every thread at one common t0, far enough ahead for all of them
    // to be asleep in their first clock_nanosleep.
    let t0 = sys::monotonic_ns() + 20_000_000u64.max(plan.period);
    shared.t0.store(t0, Relaxed);
    shared.barrier.wait();

    let goal = match (releases, plan.params.cycles) {
        (Some(r), _) => Goal::Releases(r),
        (None, Some(n)) => Goal::Cycles(n),
        (None, None) => Goal::Releases(0),
    };
    let mut view = input
        .live
        .then(|| LiveView::new(lives, goal, input.progress));
    let mut interrupted = false;
    loop {
        std::thread::sleep(Duration::from_millis(100));
        if input.signalled.load(Relaxed) && !interrupted {
            interrupted = true;
            shared.stop.store(true, Relaxed);
        }
        writer.drain(&mut consumers);
        if let Some(v) = view.as_mut() {
            v.tick();
        }
        tick();
        if handles.iter().all(|h| h.is_finished()) {
            break;
        }
    }
    if let Some(v) = view.as_mut() {
        v.tick();
        v.finish();
    }

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
        bail!("{failure}");
    }
    writer.drain(&mut consumers);
    // Kept in the writer too: the caller turns it into exit status 2.
    if let Some(e) = writer.error.clone() {
        input.warnings.push(e);
    }
    let elapsed_ns = sys::monotonic_ns().saturating_sub(t0);

    let combined = combine(&outcomes);
    let result = assemble(
        plan,
        ResultContext {
            host: input.host,
            started_at: input.started_at,
            elapsed_ns,
            end: EndReason::Completed,
            realtime: report,
            warnings: input.warnings,
        },
        interrupted,
        &outcomes,
        &combined,
    );
    Ok(Measured {
        result,
        outcomes,
        combined,
    })
}

/// The result of a periodic measurement: every thread's figures, their
/// merged statistics when there are several, and the limits checked on
/// those. A break event ends it as a break, else `interrupted` as
/// interrupted.
fn assemble(
    plan: &RunPlan,
    mut context: ResultContext,
    interrupted: bool,
    outcomes: &[ThreadOutcome],
    combined_stats: &[MetricStats],
) -> RunResult {
    let break_event = outcomes.iter().find_map(|o| o.break_event.clone());
    context.end = if break_event.is_some() {
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
            counters: Default::default(),
        })
        .collect();
    let combined = (outcomes.len() > 1).then(|| {
        METRICS
            .iter()
            .map(|m| (m.name().to_string(), combined_stats[*m as usize].summary()))
            .collect()
    });
    let limits = lifecycle::limits(plan, |name| {
        let m = METRICS.iter().find(|m| m.name() == name)?;
        Some(combined_stats[*m as usize].summary())
    });
    lifecycle::assemble(
        plan.kind,
        plan.params.clone(),
        context,
        Figures {
            threads,
            combined,
            limits,
            break_event,
            detail: None,
        },
    )
}

/// The low-priority writer's state: it drains every probe thread's queue of
/// window rows into memory, the `--csv` file and the results database (one
/// commit per drain, so a crash loses at most the rows not yet drained). A
/// write error never stops the probes: it is remembered and reported as a
/// warning.
pub struct RowWriter {
    /// `--csv`.
    pub csv: Option<report::csv::WindowCsv<super::out_files::Named<BufWriter<File>>>>,
    /// The results database (`None` with `--no-db`).
    pub store: Option<Store>,
    /// The cell the rows belong to, once it is recorded.
    pub cell: Option<i64>,
    /// Rows of the current measurement.
    pub rows: Vec<WindowRow>,
    /// The first write error (CSV or store): recorded as a warning in the
    /// result and, after the outputs are written, an error of the command
    /// (DESIGN rule 7: storing never fails silently).
    pub error: Option<String>,
}

impl RowWriter {
    /// Moves every queued row into memory, the CSV file and the store.
    pub fn drain(&mut self, consumers: &mut [rtrb::Consumer<WindowRow>]) {
        let first_new = self.rows.len();
        for rx in consumers.iter_mut() {
            while let Ok(row) = rx.pop() {
                if let Some(w) = self.csv.as_mut() {
                    if let Err(e) = w.write_row(&row).and_then(|()| w.flush()) {
                        self.error.get_or_insert(e.to_string());
                    }
                }
                self.rows.push(row);
            }
        }
        if let (Some(s), Some(cell)) = (self.store.as_mut(), self.cell) {
            if let Err(e) = s.insert_windows(cell, &self.rows[first_new..]) {
                self.error
                    .get_or_insert(format!("storing window rows: {e:#}"));
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
    tracefs: Option<&trace::TracefsStatus>,
    shared: &Arc<Shared>,
    releases: Option<u64>,
    calibrated: Option<&[Calibration]>,
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
                window_ns: plan.params.window_ns,
                threshold_ns: plan.params.threshold_ns,
                outliers: plan.outliers,
                histogram_us: plan.histogram_buckets,
            },
            rows: tx,
            stop: StopRule {
                releases,
                cycles: plan.params.cycles,
            },
            break_rule: plan.params.break_trace_ns.map(|l| break_rule(l, tracefs)),
            calibrated: calibrated.and_then(|cs| cs.get(i).cloned()),
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
