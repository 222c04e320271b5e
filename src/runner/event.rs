//! One measurement of an event probe (`chase`, `ctxswitch`, `response`):
//! one real-time thread that measures each time an event happens, rather
//! than a release schedule.
//!
//! The order mirrors [`super::measure`](mod@super::measure) so that a result means the same
//! whatever the probe:
//!
//! 1. the probe was prepared by the caller (buffers allocated, namespaces
//!    made, partner threads not yet started); the [`EventRecorder`] is
//!    allocated here, before any thread starts;
//! 2. one thread applies the real-time defaults of DESIGN rule 3 for the
//!    plan's CPU and reports them; `--strict` aborts before anything is
//!    measured;
//! 3. `ready` records the start in the store, the thread is released and
//!    runs [`EventProbe::run`], which pushes every sample into the recorder
//!    (statistics, outliers, windows — nothing allocated, no lock);
//! 4. the calling thread — SCHED_OTHER, off the probe CPU — drains the
//!    window rows every 100 ms into the CSV file and the store (the same
//!    [`RowWriter`] as the periodic probes), prints a progress line on a
//!    terminal, and raises the stop flag on SIGINT/SIGTERM or when the
//!    duration is over;
//! 5. the statistics become a [`RunResult`] whose `detail` holds what the
//!    probe reports beyond its metrics.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{mpsc, Arc, Barrier};
use std::time::Duration;

use anyhow::{anyhow, bail, Result};
use jitterlab_core::event::{EventRecorder, MetricUnit};
use jitterlab_core::result::{
    DefaultStatus, EndReason, HostSnapshot, RunResult, ThreadResult, UsageDelta,
};
use jitterlab_core::units::format_ns;
use jitterlab_sys as sys;

use crate::store::StoredHistogram;
use crate::system::journal::Journal;
use crate::system::rt;

use super::lifecycle::{self, Figures, ResultContext};
use super::measure::{RowWriter, ROW_QUEUE};
use super::RunPlan;

/// What an event probe reports beyond its metrics.
pub struct ProbeReport {
    /// Stored as the result's `detail` (the probe module documents it).
    pub detail: serde_json::Value,
    /// Warnings, stored with the result's own.
    pub warnings: Vec<String>,
}

/// An event probe, made by the caller (with the journal at hand for any
/// change to the machine), then moved to the real-time thread and back.
pub trait EventProbe: Send {
    /// Runs on the real-time thread once it is pinned and scheduled, before
    /// the start is recorded: allocate and touch buffers here (first touch
    /// places memory near the probe CPU). Returns warnings.
    fn prepare(&mut self) -> Result<Vec<String>> {
        Ok(Vec::new())
    }

    /// Runs on the real-time thread until the probe's own count is reached
    /// or `stop` is raised, pushing every sample into `sink`.
    fn run(&mut self, stop: &AtomicBool, sink: &mut EventRecorder) -> Result<ProbeReport>;

    /// Undoes what making the probe changed on the machine (namespaces,
    /// settings), forgetting the journal entries it made; one line per
    /// thing put back. Called by the caller on every path after the run.
    fn teardown(&mut self, _root: &Path, _journal: &mut Journal) -> Vec<String> {
        Vec::new()
    }
}

/// What an event measurement needs besides the plan and the probe.
pub struct EventInput<'a> {
    /// Host snapshot stored with the result.
    pub host: HostSnapshot,
    /// RFC 3339 start time.
    pub started_at: String,
    /// Process-wide defaults already applied (mlockall, PM QoS).
    pub defaults: Vec<DefaultStatus>,
    /// Warnings so far.
    pub warnings: Vec<String>,
    /// Raised by SIGINT/SIGTERM.
    pub signalled: &'a AtomicBool,
    /// Print a progress line (on a terminal).
    pub live: bool,
}

/// What an event measurement produced.
pub struct EventMeasured {
    /// The assembled result.
    pub result: RunResult,
    /// The recorder, with every metric's statistics.
    pub recorder: EventRecorder,
}

/// The probe back from its thread, for [`EventProbe::teardown`] (`None`
/// when the thread panicked: what the probe held was dropped with it).
pub type Returned = Option<Box<dyn EventProbe>>;

impl EventMeasured {
    /// The histograms behind every stored metric summary.
    pub fn histograms(&self) -> Vec<StoredHistogram> {
        self.recorder
            .defs
            .iter()
            .zip(&self.recorder.stats)
            .map(|(d, s)| {
                let h = s.histograms();
                StoredHistogram {
                    thread: Some(0),
                    metric: d.name,
                    positive: h.positive,
                    negative: h.negative,
                }
            })
            .collect()
    }
}

/// What the probe thread hands back.
struct ThreadEnd {
    recorder: EventRecorder,
    tid: i32,
    usage: UsageDelta,
    report: Result<ProbeReport>,
}

/// Runs one event measurement (see the module doc). `ready(writer,
/// realtime)` is called once the thread is set up, before it is released.
/// The probe comes back in `returned` on every path but a panic, for the
/// caller's teardown.
pub fn measure_events(
    plan: &RunPlan,
    mut probe: Box<dyn EventProbe>,
    mut input: EventInput<'_>,
    writer: &mut RowWriter,
    ready: &mut dyn FnMut(&mut RowWriter, bool) -> Result<()>,
    returned: &mut Returned,
) -> Result<EventMeasured> {
    let cpu = plan.cpus[0];
    let defs = plan.kind.metrics();
    let (tx, mut rx) = rtrb::RingBuffer::new(ROW_QUEUE);
    let mut recorder = EventRecorder::new(
        defs,
        0,
        cpu as u32,
        plan.params.window_ns,
        plan.params.threshold_ns,
        plan.outliers,
        tx,
    );
    let live = Arc::clone(&recorder.live);

    let stop = Arc::new(AtomicBool::new(false));
    let abort = Arc::new(AtomicBool::new(false));
    let barrier = Arc::new(Barrier::new(2));
    type Setup = (Vec<DefaultStatus>, Result<Vec<String>>);
    let (setup_tx, setup_rx) = mpsc::channel::<Setup>();
    let sched = plan.sched;
    let handle = {
        let (stop, abort, barrier) = (Arc::clone(&stop), Arc::clone(&abort), Arc::clone(&barrier));
        std::thread::Builder::new()
            .name(format!("{}-cpu{cpu}", plan.kind.name()))
            .stack_size(rt::PREFAULT_STACK + 512 * 1024)
            .spawn(move || -> (Box<dyn EventProbe>, Option<ThreadEnd>) {
                let statuses = rt::setup_probe_thread(cpu, sched);
                let tid = sys::gettid();
                let _ = setup_tx.send((statuses, probe.prepare()));
                barrier.wait();
                if abort.load(Relaxed) {
                    return (probe, None);
                }
                let b = sys::thread_usage().unwrap_or_default();
                recorder.start_at(sys::monotonic_ns());
                let report = probe.run(&stop, &mut recorder);
                recorder.finish();
                let a = sys::thread_usage().unwrap_or_default();
                let usage = UsageDelta {
                    voluntary_switches: a.voluntary_switches.saturating_sub(b.voluntary_switches),
                    involuntary_switches: a
                        .involuntary_switches
                        .saturating_sub(b.involuntary_switches),
                    minor_faults: a.minor_faults.saturating_sub(b.minor_faults),
                    major_faults: a.major_faults.saturating_sub(b.major_faults),
                };
                (
                    probe,
                    Some(ThreadEnd {
                        recorder,
                        tid,
                        usage,
                        report,
                    }),
                )
            })?
    };
    let (statuses, prepared) = setup_rx
        .recv()
        .map_err(|_| anyhow!("the probe thread died during its set-up"))?;
    let release = |abort_now: bool| {
        abort.store(abort_now, Relaxed);
        barrier.wait();
    };
    let mut join =
        |handle: std::thread::JoinHandle<(Box<dyn EventProbe>, Option<ThreadEnd>)>| match handle
            .join()
        {
            Ok((p, end)) => {
                *returned = Some(p);
                Ok(end)
            }
            Err(_) => Err(anyhow!(
                "the probe thread panicked; this is a bug in jitterlab"
            )),
        };
    match prepared {
        Ok(w) => input.warnings.extend(w),
        Err(e) => {
            release(true);
            let _ = join(handle);
            return Err(e);
        }
    }

    let mut defaults = std::mem::take(&mut input.defaults);
    defaults.extend(statuses);
    let report = lifecycle::realtime_report(defaults, &input.host, &mut input.warnings);
    let realtime = report.realtime;
    if let Err(e) = lifecycle::strict_check(plan, &report) {
        release(true);
        let _ = join(handle);
        return Err(e);
    }
    lifecycle::say_warnings(input.live, &input.warnings);
    if let Err(e) = ready(writer, realtime) {
        release(true);
        let _ = join(handle);
        return Err(e);
    }

    let t0 = sys::monotonic_ns();
    release(false);
    let deadline = plan.params.duration_ns.map(|d| t0 + d);
    let progress = input.live && std::io::stderr().is_terminal();
    let unit = defs.first().map_or(MetricUnit::Ns, |d| d.unit);
    let mut interrupted = false;
    let mut ticks = 0u64;
    let consumers = std::slice::from_mut(&mut rx);
    loop {
        std::thread::sleep(Duration::from_millis(100));
        if input.signalled.load(Relaxed) && !interrupted {
            interrupted = true;
            stop.store(true, Relaxed);
        }
        if deadline.is_some_and(|d| sys::monotonic_ns() >= d) {
            stop.store(true, Relaxed);
        }
        writer.drain(consumers);
        ticks += 1;
        if progress && ticks.is_multiple_of(5) {
            let v = |a: &std::sync::atomic::AtomicU64| {
                let x = a.load(Relaxed);
                match unit {
                    MetricUnit::Ns => format_ns(i64::try_from(x).unwrap_or(i64::MAX)),
                    MetricUnit::Cycles => format!("{x} cycles"),
                }
            };
            crate::output::err!(
                "\r{} CPU {cpu}: {} samples, last {}, max {}   ",
                plan.kind.name(),
                live.samples.load(Relaxed),
                v(&live.last),
                v(&live.max)
            );
        }
        if handle.is_finished() {
            break;
        }
    }
    if progress {
        crate::output::errln!();
    }
    let mut end = match join(handle)? {
        Some(end) => end,
        None => bail!("the probe thread ended without measuring"),
    };
    writer.drain(consumers);
    // Kept in the writer too: the caller turns it into exit status 2.
    if let Some(e) = writer.error.clone() {
        input.warnings.push(e);
    }
    let elapsed_ns = sys::monotonic_ns().saturating_sub(t0);
    let probe_report = std::mem::replace(
        &mut end.report,
        Ok(ProbeReport {
            detail: serde_json::Value::Null,
            warnings: Vec::new(),
        }),
    )?;
    input.warnings.extend(probe_report.warnings);
    let result = assemble(
        plan,
        ResultContext {
            host: input.host,
            started_at: input.started_at,
            elapsed_ns,
            end: match interrupted {
                true => EndReason::Interrupted,
                false => EndReason::Completed,
            },
            realtime: report,
            warnings: input.warnings,
        },
        probe_report.detail,
        &end,
    );
    Ok(EventMeasured {
        result,
        recorder: end.recorder,
    })
}

/// The result of an event measurement: the one thread's figures, the
/// probe's `detail`, and `--max-latency` checked on its main metric.
fn assemble(
    plan: &RunPlan,
    context: ResultContext,
    detail: serde_json::Value,
    end: &ThreadEnd,
) -> RunResult {
    let r = &end.recorder;
    let metrics = r
        .defs
        .iter()
        .zip(&r.stats)
        .map(|(d, s)| (d.name.to_string(), s.summary()))
        .collect();
    let outliers = r
        .defs
        .iter()
        .zip(&r.outliers)
        .map(|(d, o)| (d.name.to_string(), o.sorted()))
        .collect();
    let limits = lifecycle::limits(plan, |name| {
        let i = r.defs.iter().position(|d| d.name == name)?;
        Some(r.stats[i].summary())
    });
    let thread = ThreadResult {
        thread: 0,
        cpu: plan.cpus[0],
        tid: end.tid,
        cycles: r.samples,
        releases: r.samples,
        skipped: 0,
        overruns: 0,
        metrics,
        outliers,
        calibration: None,
        usage: end.usage,
        window_rows: r.windows.pushed(),
        dropped_rows: r.windows.dropped(),
        counters: Default::default(),
    };
    lifecycle::assemble(
        plan.kind,
        plan.params.clone(),
        context,
        Figures {
            threads: vec![thread],
            combined: None,
            limits,
            break_event: None,
            detail: Some(detail),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use jitterlab_core::result::ProbeKind;

    /// Pushes `n` hand-overs of 1, 2, … µs, then reports how many.
    struct Synthetic {
        n: u64,
    }

    impl EventProbe for Synthetic {
        fn run(&mut self, stop: &AtomicBool, sink: &mut EventRecorder) -> Result<ProbeReport> {
            use jitterlab_core::event::{EventSample, EventSink};
            let mut i = 0;
            while i < self.n && !stop.load(Relaxed) {
                sink.push(&EventSample {
                    index: i,
                    at: sys::monotonic_ns(),
                    values: jitterlab_core::event::slots([Some(((i + 1) * 1_000) as i64)]),
                });
                i += 1;
            }
            Ok(ProbeReport {
                detail: serde_json::json!({ "pushed": i }),
                warnings: Vec::new(),
            })
        }

        fn prepare(&mut self) -> Result<Vec<String>> {
            Ok(vec!["synthetic probe".into()])
        }
    }

    /// A ctxswitch cell on `cpu` under SCHED_OTHER, keeping 3 outliers,
    /// limited to 150 µs.
    fn plan_on(cpu: usize) -> super::super::RunPlan {
        let online: jitterlab_core::units::CpuList = [cpu].into_iter().collect();
        let spec = jitterlab_core::spec::parse(
            &format!(
                "duration = \"5s\"\n[[configuration]]\nname = \"c\"\nprobe_cpus = \"{cpu}\"\npolicy = \"other\"\n\
                 [[probe]]\nkind = \"ctxswitch\"\noutliers = 3\nmax_latency = \"150us\"\n"
            ),
            "t.toml",
            &jitterlab_core::spec::SpecContext {
                online: &online,
                builtins: &["idle"],
            },
        )
        .unwrap();
        super::super::plan(&spec, &spec.cells()[0], &Default::default())
    }

    #[test]
    fn every_sample_reaches_the_statistics_windows_limit_and_detail() {
        let cpu = sys::current_cpu().unwrap_or(0);
        let plan = plan_on(cpu);
        assert_eq!(
            (plan.params.threshold_ns, plan.outliers, plan.limits.latency),
            (100_000, 3, Some(150_000))
        );
        let signalled = AtomicBool::new(false);
        let mut writer = RowWriter {
            csv: None,
            store: None,
            cell: None,
            rows: Vec::new(),
            error: None,
        };
        let mut readied = None;
        let mut returned = None;
        let m = measure_events(
            &plan,
            Box::new(Synthetic { n: 200 }),
            EventInput {
                host: HostSnapshot::default(),
                started_at: "now".into(),
                defaults: Vec::new(),
                warnings: Vec::new(),
                signalled: &signalled,
                live: false,
            },
            &mut writer,
            &mut |_, rt| {
                readied = Some(rt);
                Ok(())
            },
            &mut returned,
        )
        .unwrap();
        assert!(returned.is_some());
        // SCHED_OTHER is never real-time, and the result says so.
        assert_eq!(readied, Some(false));
        let r = &m.result;
        assert_eq!(r.probe, ProbeKind::Ctxswitch);
        assert_eq!(r.end, EndReason::Completed);
        let t = &r.threads[0];
        assert_eq!((t.cpu, t.cycles), (cpu, 200));
        let h = &t.metrics["handover"];
        assert_eq!((h.count, h.min, h.max), (200, Some(1_000), Some(200_000)));
        // 101..=200 µs are over the 100 µs threshold.
        assert_eq!(h.over_threshold, Some(100));
        assert_eq!(
            t.outliers["handover"]
                .iter()
                .map(|o| o.value)
                .collect::<Vec<_>>(),
            vec![200_000, 199_000, 198_000]
        );
        assert_eq!(r.limits.len(), 1);
        assert_eq!(
            (
                r.limits[0].metric.as_str(),
                r.limits[0].observed_ns,
                r.limits[0].exceeded
            ),
            ("handover", 200_000, true)
        );
        assert_eq!(r.detail, Some(serde_json::json!({ "pushed": 200 })));
        assert!(r.warnings.iter().any(|w| w == "synthetic probe"));
        // Every sample is in exactly one drained window row.
        let rows: u64 = writer.rows.iter().map(|w| w.cycles).sum();
        assert_eq!(rows, 200);
        assert_eq!(m.histograms().len(), 1);
        assert_eq!(m.histograms()[0].metric, "handover");
    }
}
