//! The periodic probes, `cyclic` and `wakeup`: one thread body, a
//! [`Probe`] per probe CPU.
//!
//! The life of a thread, in order (the runner's lifecycle does the steps
//! every probe shares):
//! 1. the lifecycle applies the per-thread real-time defaults (signals
//!    blocked, pinned, scheduled, stack pre-faulted) — `system::rt`;
//! 2. [`Probe::prepare`]: for the cyclic probe, allocate and touch the
//!    working set and calibrate the scan on this CPU while nothing else
//!    runs (or take the calibration a bench made once, idle); the
//!    lifecycle then allocates the thread's recorder (histograms, queues);
//! 3. the lifecycle reports the set-up to the controlling thread and waits
//!    at the start barrier — the controller may abort here (`--strict`);
//! 4. [`Probe::measure`] runs `jitterlab_core::cycle::run` from the common
//!    first release `t0`: the loop reads the clock, sleeps, works and
//!    pushes the sample into the recorder; it stops at the end of the
//!    duration (its releases), after N cycles, on `--break-trace`, or when
//!    the controller raises the stop flag (a terminating signal);
//! 5. the schedule's counts and any break event go back in the [`Report`].
//!
//! Inside the loop the only system calls are the clock reads and the sleep
//! (and, once, the trace-marker write of `--break-trace`).
//!
//! With `--explain` ([`explain`]) the build also starts the tracer on the
//! probe CPUs and its reader off them; the loop hands the cycles to
//! explain to the reader through a wait-free queue, and the last thread to
//! end carries their explanations in its report.

pub mod explain;
pub mod flags;
pub(crate) mod report;

use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;

use anyhow::Result;
use jitterlab_core::cycle::{self, Clock, Flow, Schedule};
use jitterlab_core::recorder::CycleSink;
use jitterlab_core::result::{BreakEvent, Calibration};
use jitterlab_sys as sys;

use super::{Cell, Prepared, Probe, Probes, Recorder, Report, ScheduleCounts, Start, Threads};
use crate::probe::scan::Scan;
use crate::system::journal::Journal;
use crate::system::rt::{self, SchedRequest};
use crate::system::trace::{self, BreakTracer, TracefsStatus};

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

/// One periodic thread: its CPU, its schedule, its work.
pub struct PeriodicProbe {
    /// CPU (for the break event).
    cpu: usize,
    /// Period T0, ns.
    period: u64,
    /// `(working set bytes, scan ns)` for the cyclic probe; `None` for a
    /// bare wake-up loop.
    scan: Option<(u64, u64)>,
    /// When to stop.
    stop: StopRule,
    /// `--break-trace`.
    break_rule: Option<BreakRule>,
    /// A calibration made once before (a bench calibrates idle, before any
    /// neighbour starts, and every cell reuses it); `None`: calibrate here.
    calibrated: Option<Calibration>,
    /// The scan workload, made in [`Probe::prepare`].
    work: Option<Scan>,
    /// `--explain`: this thread's side of it.
    explain: Option<explain::ThreadSide>,
    /// `--explain`: what the teardown stops and removes (the first
    /// thread's probe holds it).
    explain_teardown: Option<explain::Teardown>,
}

/// The periodic probes of a cell: one per probe CPU of its plan, each
/// with its `--break-trace` rule (the trace files opened now) and the
/// bench's calibration for its thread, if any.
pub fn build(cell: &Cell<'_>, journal: &mut Journal) -> Result<Probes> {
    let plan = cell.plan;
    let mut warnings = Vec::new();
    let (mut sides, mut explain_teardown) =
        match explain::asked(&cell.spec.probes[cell.cell.probe].params) {
            true => {
                let online: Vec<usize> = crate::system::host::online_cpus(cell.root)?
                    .iter()
                    .collect();
                let (sides, teardown) = explain::start(
                    cell.root,
                    &plan.cpus,
                    &online,
                    plan.params.window_ns,
                    plan.params.threshold_ns,
                    journal,
                )?;
                (sides.into_iter().map(Some).collect(), Some(teardown))
            }
            false => (Vec::new(), None),
        };
    // --break-trace: find the trace buffer once, open it per thread.
    let tracefs = plan
        .params
        .break_trace_ns
        .map(|_| trace::find_tracefs(cell.root));
    if let Some(status) = &tracefs {
        if !matches!(status, TracefsStatus::Ready(_)) {
            warnings.push(format!(
                "--break-trace: {}; the run still ends at the first wake-up over the limit, without a trace",
                status.explain()
            ));
        }
    }
    let stop = StopRule {
        releases: plan.params.duration_ns.map(|d| d.div_ceil(plan.period)),
        cycles: plan.params.cycles,
    };
    let probes = plan
        .cpus
        .iter()
        .enumerate()
        .map(|(i, &cpu)| {
            Box::new(PeriodicProbe {
                cpu,
                period: plan.period,
                scan: plan.scan,
                stop,
                break_rule: plan
                    .params
                    .break_trace_ns
                    .map(|l| break_rule(l, tracefs.as_ref())),
                calibrated: cell.calibrated.and_then(|cs| cs.get(i).cloned()),
                work: None,
                explain: sides.get_mut(i).and_then(Option::take),
                explain_teardown: explain_teardown.take(),
            }) as Box<dyn Probe>
        })
        .collect();
    Ok(Probes::Threads(Threads { probes, warnings }))
}

/// One thread's `--break-trace` rule, with the trace files opened now.
fn break_rule(latency_ns: u64, tracefs: Option<&TracefsStatus>) -> BreakRule {
    let (tracer, missing) = match tracefs {
        Some(TracefsStatus::Ready(dir)) => match BreakTracer::open(dir, latency_ns) {
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

impl Probe for PeriodicProbe {
    fn prepare(&mut self) -> Result<Prepared> {
        let mut work = self.scan.map(|(ws, _)| Scan::new(ws));
        let prepared = match (work.as_mut(), self.scan, self.calibrated.take()) {
            (Some(w), Some(_), Some(cal)) => {
                w.use_calibration(&cal);
                Prepared {
                    calibration: Some(cal),
                    ..Prepared::default()
                }
            }
            (Some(w), Some((_, scan_ns)), None) => {
                let cal = w.calibrate(self.cpu, scan_ns);
                Prepared {
                    calibration_note: cal.note.clone(),
                    calibration: Some(cal),
                    ..Prepared::default()
                }
            }
            _ => Prepared::default(),
        };
        self.work = work;
        Ok(prepared)
    }

    fn measure(&mut self, start: &Start<'_>, recorder: &mut Recorder) -> Result<Report> {
        let rec = recorder;
        let (cpu, stop, shared_stop) = (self.cpu, self.stop, start.stop);
        let mut schedule = Schedule::new(start.t0, self.period);
        let mut clock = RealClock;
        let mut break_event = None;
        let break_rule = &mut self.break_rule;
        let explain = &mut self.explain;
        if let Some(x) = explain.as_mut() {
            x.start(start.t0);
        }
        {
            let on_cycle = |s: &cycle::CycleSample| {
                rec.push(s);
                if let Some(x) = explain.as_mut() {
                    x.cycle(s.cycle, s.release, s.start);
                }
                if let Some(b) = break_rule.as_mut() {
                    if s.latency > b.latency_ns as i64 {
                        let stopped = b
                            .tracer
                            .as_mut()
                            .map(|t| t.fire(cpu, s.cycle, s.latency as u64))
                            .unwrap_or(false);
                        break_event = Some((s.cycle, s.latency as u64, stopped));
                        shared_stop.store(true, Relaxed);
                        return Flow::Stop;
                    }
                }
                if shared_stop.load(Relaxed) {
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
            match self.work.as_mut() {
                Some(w) => cycle::run(&mut clock, &mut schedule, || w.run(), on_cycle),
                None => cycle::run(&mut clock, &mut schedule, || {}, on_cycle),
            }
        }
        let break_event = break_event.map(|(cycle, latency_ns, stopped)| {
            let b = self.break_rule.as_ref().expect("break event implies rule");
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
        let mut warnings = Vec::new();
        let detail = match self.explain.as_mut().map(explain::ThreadSide::end) {
            Some(Ok(Some((detail, mut lines)))) => {
                warnings.append(&mut lines);
                Some(detail)
            }
            Some(Ok(None)) => None,
            Some(Err(e)) => {
                warnings.push(format!("--explain: {e:#}; no cycle was explained"));
                None
            }
            None => None,
        };
        Ok(Report {
            schedule: Some(ScheduleCounts::of(&schedule)),
            break_event,
            detail,
            warnings,
            ..Report::default()
        })
    }

    fn teardown(&mut self, _root: &Path, journal: &mut Journal) -> Vec<String> {
        match self.explain_teardown.take() {
            Some(t) => t.close(journal),
            None => Vec::new(),
        }
    }
}

/// How the runner measures the `cyclic` probe (`super::REGISTRY`).
pub const CYCLIC: super::Registration = super::Registration {
    kind: jitterlab_core::probe::ProbeKind::Cyclic,
    build,
    unavailable: None,
    flags: flags::cyclic_flags,
    one_cell: flags::cyclic_one_cell,
    report: report::PARTS,
    placement: super::Placement::ProbeCpus,
    task: None,
};

/// How the runner measures the `wakeup` probe (`super::REGISTRY`).
pub const WAKEUP: super::Registration = super::Registration {
    kind: jitterlab_core::probe::ProbeKind::Wakeup,
    build,
    unavailable: None,
    flags: flags::wakeup_flags,
    one_cell: flags::wakeup_one_cell,
    report: report::PARTS,
    placement: super::Placement::ProbeCpus,
    task: None,
};
