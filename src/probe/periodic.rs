//! One periodic probe thread: set-up, calibration, the measured loop.
//!
//! The life of a thread, in order:
//! 1. apply the per-thread real-time defaults (signals blocked, pinned,
//!    scheduled, stack pre-faulted) — `system::rt`;
//! 2. allocate and touch everything the loop will use (working set,
//!    histograms, queues) and, for the cyclic probe, calibrate the scan on
//!    this CPU while nothing else runs;
//! 3. report the set-up to the controlling thread and wait at the start
//!    barrier — the controller may abort here (`--strict`);
//! 4. run `jitterlab_core::cycle::run` from the common first release `t0`:
//!    the loop reads the clock, sleeps, works and pushes the sample into the
//!    recorder; it stops at the end of the duration, after N cycles, on
//!    `--break-trace`, or when the controller raises the stop flag (SIGINT,
//!    SIGTERM);
//! 5. hand everything it measured back through its join handle.
//!
//! Inside the loop the only system calls are the clock reads and the sleep
//! (and, once, the trace-marker write of `--break-trace`).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{mpsc, Arc, Barrier};
use std::thread::JoinHandle;

use jitterlab_core::cycle::{self, Clock, Flow, Schedule};
use jitterlab_core::result::{BreakEvent, Calibration, DefaultStatus, UsageDelta};
use jitterlab_core::sink::{LiveStats, Recorder, RecorderConfig, Sink};
use jitterlab_core::window::WindowRow;
use jitterlab_sys as sys;

use crate::probe::scan::Scan;
use crate::system::rt::{self, SchedRequest};
use crate::system::trace::BreakTracer;

/// The real clock: vDSO `CLOCK_MONOTONIC` reads and absolute sleeps.
pub struct RealClock;

impl Clock for RealClock {
    #[inline(always)]
    fn now(&mut self) -> u64 {
        sys::monotonic_ns()
    }

    #[inline(always)]
    fn sleep_until(&mut self, t: u64) {
        // Termination signals are blocked in probe threads, so EINTR is rare;
        // when it happens, sleep again to the same absolute time.
        while let Err(e) = sys::sleep_until_ns(t) {
            if e != sys::EINTR {
                break;
            }
        }
    }
}

/// When a thread's loop ends by itself.
#[derive(Debug, Clone, Copy)]
pub struct StopRule {
    /// End once this many releases have come due (duration ÷ period).
    pub releases: Option<u64>,
    /// End after this many measured cycles.
    pub cycles: Option<u64>,
}

/// `--break-trace` for one thread.
pub struct BreakRule {
    /// Wake-up latency that ends the run, ns.
    pub latency_ns: u64,
    /// Open trace files, when tracefs is there.
    pub tracer: Option<BreakTracer>,
    /// What to say when there is no tracer.
    pub missing: String,
}

/// Everything one thread needs to know.
pub struct ThreadPlan {
    /// Thread index.
    pub index: u32,
    /// CPU.
    pub cpu: usize,
    /// Period T0, ns.
    pub period: u64,
    /// Scheduling request.
    pub sched: SchedRequest,
    /// `(working set bytes, scan ns)` for the cyclic probe; `None` for a bare
    /// wake-up loop.
    pub scan: Option<(u64, u64)>,
    /// Recorder set-up (its `t0` is replaced by the common start).
    pub recorder: RecorderConfig,
    /// Rows queue.
    pub rows: rtrb::Producer<WindowRow>,
    /// When to stop.
    pub stop: StopRule,
    /// `--break-trace`.
    pub break_rule: Option<BreakRule>,
    /// A calibration made once before (a bench calibrates idle, before any
    /// neighbour starts, and every cell reuses it); `None`: calibrate here.
    pub calibrated: Option<Calibration>,
}

/// State the controller shares with every probe thread.
pub struct Shared {
    /// Raised to end every loop (signal, break-trace elsewhere).
    pub stop: AtomicBool,
    /// Raised before the barrier to end threads without measuring.
    pub abort: AtomicBool,
    /// The common first release.
    pub t0: AtomicU64,
    /// Start barrier: every probe thread plus the controller.
    pub barrier: Barrier,
}

/// What a thread reports once it is set up.
pub struct SetupReport {
    /// Thread index.
    pub index: u32,
    /// CPU.
    pub cpu: usize,
    /// Per-thread defaults.
    pub statuses: Vec<DefaultStatus>,
    /// Scan calibration.
    pub calibration: Option<Calibration>,
}

/// What a thread measured.
pub struct ThreadOutcome {
    /// Thread index.
    pub index: u32,
    /// CPU.
    pub cpu: usize,
    /// Kernel thread id.
    pub tid: i32,
    /// Everything recorded.
    pub recorder: Recorder,
    /// Measured cycles.
    pub cycles: u64,
    /// Releases due.
    pub releases: u64,
    /// Skipped releases.
    pub skipped: u64,
    /// Overruns.
    pub overruns: u64,
    /// Context switches and faults during the loop.
    pub usage: UsageDelta,
    /// Calibration used.
    pub calibration: Option<Calibration>,
    /// The break-trace event, when this thread saw it.
    pub break_event: Option<BreakEvent>,
}

/// Calibrates the scan of `(working set, scan ns)` on `cpu`, in a thread of
/// its own with the probe's scheduling, while nothing else runs: what a
/// bench does once, before the first neighbour starts.
pub fn calibrate_idle(cpu: usize, sched: SchedRequest, scan: (u64, u64)) -> Option<Calibration> {
    std::thread::Builder::new()
        .name(format!("calibrate-cpu{cpu}"))
        .stack_size(rt::PREFAULT_STACK + 512 * 1024)
        .spawn(move || {
            let _ = rt::setup_probe_thread(cpu, sched);
            Scan::new(scan.0).calibrate(cpu, scan.1)
        })
        .ok()?
        .join()
        .ok()
}

/// Starts a probe thread; it reports on `setup` and then waits at the barrier.
pub fn spawn(
    plan: ThreadPlan,
    shared: Arc<Shared>,
    live: Arc<LiveStats>,
    setup: mpsc::Sender<SetupReport>,
) -> std::io::Result<JoinHandle<Option<ThreadOutcome>>> {
    std::thread::Builder::new()
        .name(format!("probe-cpu{}", plan.cpu))
        .stack_size(rt::PREFAULT_STACK + 512 * 1024)
        .spawn(move || body(plan, shared, live, setup))
}

fn body(
    plan: ThreadPlan,
    shared: Arc<Shared>,
    live: Arc<LiveStats>,
    setup: mpsc::Sender<SetupReport>,
) -> Option<ThreadOutcome> {
    let ThreadPlan {
        index,
        cpu,
        period,
        sched,
        scan,
        recorder,
        rows,
        stop,
        mut break_rule,
        calibrated,
    } = plan;
    let statuses = rt::setup_probe_thread(cpu, sched);
    let tid = sys::gettid();

    let mut work = scan.map(|(ws, _)| Scan::new(ws));
    let calibration = match (work.as_mut(), scan, calibrated) {
        (Some(w), Some(_), Some(cal)) => {
            w.use_calibration(&cal);
            Some(cal)
        }
        (Some(w), Some((_, scan_ns)), None) => Some(w.calibrate(cpu, scan_ns)),
        _ => None,
    };
    let mut rec = Recorder::new(&recorder, rows, live);

    let _ = setup.send(SetupReport {
        index,
        cpu,
        statuses,
        calibration: calibration.clone(),
    });
    drop(setup);
    shared.barrier.wait();
    if shared.abort.load(Relaxed) {
        return None;
    }

    let t0 = shared.t0.load(Relaxed);
    rec.start_at(t0);
    let mut schedule = Schedule::new(t0, period);
    let mut clock = RealClock;
    let mut break_event = None;
    let usage_before = sys::thread_usage().unwrap_or_default();

    {
        let on_cycle = |s: &cycle::CycleSample| {
            rec.push(s);
            if let Some(b) = break_rule.as_mut() {
                if s.latency > b.latency_ns as i64 {
                    let stopped = b
                        .tracer
                        .as_mut()
                        .map(|t| t.fire(cpu, s.cycle, s.latency as u64))
                        .unwrap_or(false);
                    break_event = Some((s.cycle, s.latency as u64, stopped));
                    shared.stop.store(true, Relaxed);
                    return Flow::Stop;
                }
            }
            if shared.stop.load(Relaxed) {
                return Flow::Stop;
            }
            if let Some(n) = stop.cycles {
                if s.cycle + 1 >= n {
                    return Flow::Stop;
                }
            }
            if let Some(r) = stop.releases {
                if s.release_index + 1 + s.skipped >= r {
                    return Flow::Stop;
                }
            }
            Flow::Continue
        };
        match work.as_mut() {
            Some(w) => cycle::run(&mut clock, &mut schedule, || w.run(), on_cycle),
            None => cycle::run(&mut clock, &mut schedule, || {}, on_cycle),
        }
    }

    let usage_after = sys::thread_usage().unwrap_or_default();
    rec.finish();
    let break_event = break_event.map(|(cycle, latency_ns, stopped)| {
        let b = break_rule.as_ref().expect("break event implies rule");
        BreakEvent {
            cpu,
            cycle,
            latency_ns,
            tracing_stopped: stopped,
            detail: if stopped {
                "marker written to trace_marker and tracing stopped: read the trace with cat /sys/kernel/tracing/trace".into()
            } else if b.tracer.is_some() {
                "writing to the trace buffer failed; no trace was kept".into()
            } else {
                b.missing.clone()
            },
        }
    });
    Some(ThreadOutcome {
        index,
        cpu,
        tid,
        cycles: schedule.cycles(),
        releases: schedule.releases(),
        skipped: schedule.skipped(),
        overruns: schedule.overruns(),
        recorder: rec,
        usage: UsageDelta {
            voluntary_switches: usage_after.voluntary_switches - usage_before.voluntary_switches,
            involuntary_switches: usage_after.involuntary_switches
                - usage_before.involuntary_switches,
            minor_faults: usage_after.minor_faults - usage_before.minor_faults,
            major_faults: usage_after.major_faults - usage_before.major_faults,
        },
        calibration,
        break_event,
    })
}
