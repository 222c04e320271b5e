//! `observe`: a real task's cycles, measured from the outside, and what
//! delayed its late ones.
//!
//! The task — a thread given by `--tid`, a process's periodic thread
//! (`--pid`), a thread by name (`--comm`), or a command started with the
//! run (`-- COMMAND ARGS…`) — is neither changed nor restarted: the probe
//! reads the kernel's scheduler, timer, IRQ and softirq events from an
//! [`EventSource`] and turns them into cycles with the core model
//! ([`jitterlab_core::observe::cycles::Observer`]). Each cycle is one
//! sample of the descriptor's table (`jitterlab_core::observe::OBSERVE`:
//! latency, period, jitter, exec, irq_latency, thread_latency, preempted)
//! pushed into the recorder, so the run gets the same windows, store,
//! reports, limits and exit status as `run cyclic`.
//!
//! The measuring thread here is the *observer*: the lifecycle runs it off
//! the configuration's probe CPUs at SCHED_OTHER (its registration's
//! `Placement::Observer`; `run observe`'s `--cpu`, default the first
//! online CPU), and `run observe` holds no `/dev/cpu_dma_latency`
//! request, so observing changes neither the task's CPU nor its wake-up
//! path. The configuration places the task instead: a started command is
//! pinned to the probe CPUs and given a real-time policy the
//! configuration sets, an attached one is left as it is ([`place`]). It reads a batch of events, feeds them
//! to the model in order, and records every cycle the model finishes; with
//! nothing to read it sleeps 5 ms.
//!
//! A cycle whose start the kernel traced nothing of (no
//! switch in, no wake-up: [`StartSource::NoWakeup`]) is recorded with its
//! period and execution time but no latency, and is neither a window's
//! worst nor explained; the `detail` counts it, and the cycles started
//! without a traced switch in.
//!
//! **What is recorded.** Without `--explain`, only the events the cycles
//! of the candidate threads need, filtered in the kernel
//! ([`jitterlab_core::observe::filter`]; narrowed to the chosen thread
//! once it is chosen, and without its wake-ups once its first cycles show
//! it released by its own timer, [`TimerReleased`]): every event
//! recorded is written on the task's CPU, in its wake-up path. With
//! `--explain`, every event of every CPU.
//!
//! **Which thread.** With one candidate thread, that one. With several (a
//! process's threads, a name several threads share), the cycles of all
//! are held for the first second of trace, and the thread whose
//! start-to-start periods are the most regular
//! ([`jitterlab_core::observe::cycles::most_periodic`], 3 periods at
//! least) — among those running at a real-time priority ([`PrioVotes`]), when any
//! is — is chosen and said (the result's `detail`); its held cycles are
//! recorded, the others' dropped. For a `--pid` or a started command, the
//! process's threads are listed again every [`SCAN_NS`] until then: a
//! thread it starts after the attach is a candidate too.
//!
//! **Explanations** (`--explain`): every cycle over `--threshold` and each
//! window's worst get what ran on their CPU between release and start
//! ([`jitterlab_core::explain`]), kept in the result's `detail`
//! ([`ObserveDetail`], at most [`MAX_EXPLANATIONS`], the rest counted) and
//! printed beside the outliers.
//!
//! **A started command** runs as a neighbour does (own process group,
//! journaled, killed if jitterlab dies, output to files in a work
//! directory) and is stopped in the teardown.

pub mod container;
pub mod flags;
pub mod place;
pub(crate) mod report;
pub mod source;
pub mod target;

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use anyhow::{Context, Result};
use jitterlab_core::explain::Explanation;
use jitterlab_core::observe::brief::top_parts;
use jitterlab_core::observe::cycles::{
    most_periodic, near_period, ObservedCycle, Observer, ObserverConfig, ReleaseSource,
    StartSource, HISTORY_NS, INFER_PERIODS,
};
use jitterlab_core::observe::detail::ObserveDetail;
use jitterlab_core::observe::filter::TimerReleased;
use jitterlab_core::trace::event::{Event, EventKind};
use jitterlab_core::observe::{ObserveParams, ObserveTarget};
use jitterlab_core::recorder::{slots, Sample, SampleSink};

use crate::error::bad;
use crate::neighbour::{self, NeighbourSpec};
use crate::probe::{watch, Cell, Probe, Probes, Recorder, Report, Start};
use crate::system::journal::Journal;
use crate::system::workdir::{self, WorkDir};
pub use source::{live_source, EventSource, ReplaySource};
pub use target::Candidate;

/// The most explanations a result keeps; the others are counted.
pub const MAX_EXPLANATIONS: usize = 1000;

/// How long the cycles of several candidate threads are held before the
/// periodic one is chosen, ns of trace.
const CHOOSE_NS: u64 = 1_000_000_000;

/// Periods a candidate needs to be chosen.
const CHOOSE_PERIODS: usize = 3;

/// The most cycles held while no candidate has shown enough periods.
const MAX_HELD: usize = 100_000;

/// How often a process's threads are listed again while no thread is
/// chosen, ns: a thread it starts later becomes a candidate.
const SCAN_NS: u64 = 10_000_000;

/// How often a monitor checks that its task still runs, ns.
const CHECK_NS: u64 = 1_000_000_000;

/// How long the observer sleeps when there is nothing to read.
const IDLE: Duration = Duration::from_millis(5);

/// The observe probe of a cell: its source (the recording, else the live
/// trace), its candidate threads, and the command it starts.
pub fn build(cell: &Cell<'_>, journal: &mut Journal) -> Result<Probes> {
    let spec = &cell.spec.probes[cell.cell.probe];
    let params = spec
        .params
        .get::<ObserveParams>()
        .context("an observe cell without observe parameters; this is a bug in jitterlab")?
        .clone();
    let mut probe = ObserveProbe {
        source: None,
        candidates: Vec::new(),
        target: params.target.describe(),
        period_ns: (spec.period_ns > 0).then_some(spec.period_ns),
        threshold_ns: spec.threshold(),
        window_ns: spec.window_ns,
        explain: params.explain,
        count: cell.plan.params.cycles,
        replay: params.replay.is_some(),
        command: None,
        workdir: None,
        root: cell.root.to_path_buf(),
        process: match params.target {
            ObserveTarget::Pid(pid) => Some(pid),
            _ => None,
        },
        notes: Vec::new(),
        placement: None,
        context: Vec::new(),
        monitor: cell.stop == crate::probe::plan::Stop::Never,
        asked: params.target.clone(),
        container: params.container.clone(),
        reattached: 0,
    };
    if let Some(file) = &params.replay {
        let path = PathBuf::from(file);
        let src = ReplaySource::open(&path)?;
        probe.candidates = target::in_replay(src.events(), &params.target, &path)?;
        probe.source = Some(Box::new(src));
        return Ok(Probes::threads(vec![Box::new(probe)]));
    }
    probe.candidates = candidates(cell.root, &params.target, params.container.as_deref())?;
    let config = &cell.spec.configurations[cell.cell.configuration];
    let started = matches!(params.target, ObserveTarget::Command(_));
    probe.placement = Some(place::asked(config, started));
    let online: Vec<usize> = crate::system::host::online_cpus(cell.root)?
        .iter()
        .collect();
    // A monitor's trace lasts months: its private instance is not
    // journaled, so it holds no machine lock (see `crate::probe::watch`).
    let mut source = live_source(cell.root, &online, params.explain, probe.monitor, journal)?;
    let tids: Vec<u32> = probe.candidates.iter().map(|c| c.tid).collect();
    probe.notes = source.watch(&tids);
    probe.source = Some(source);
    if let ObserveTarget::Command(argv) = &params.target {
        let (dir, own) = match cell.workdir {
            Some(d) => (d.to_path_buf(), None),
            None => {
                let w = workdir::create_work_dir(cell.root, journal)?;
                (w.path().to_path_buf(), Some(w))
            }
        };
        probe.workdir = own;
        // Pinned to the probe CPUs before it runs, placed once it runs.
        let mut spec = command_spec(argv);
        spec.cpus = config.probe_cpus.clone();
        let running = neighbour::start(&spec, journal, &dir, None)?;
        let pid = running.pgid() as u32;
        probe.command = Some(running);
        probe.process = Some(pid);
        // Its threads, once it has started them.
        std::thread::sleep(Duration::from_millis(100));
        let failed = place::command(cell.root, pid, config);
        if let Some(p) = probe.placement.as_mut() {
            p.failed = failed;
        }
        probe.candidates = target::of_command(cell.root, pid);
        let tids: Vec<u32> = probe.candidates.iter().map(|c| c.tid).collect();
        if let Some(source) = probe.source.as_mut() {
            probe.notes = source.watch(&tids);
        }
    }
    Ok(Probes::threads(vec![Box::new(probe)]))
}

/// `target`'s threads in the running system under `root`; with
/// `container`, among that container's processes only (a `--comm`).
fn candidates(
    root: &Path,
    target: &ObserveTarget,
    container: Option<&str>,
) -> Result<Vec<Candidate>> {
    match (container, target) {
        (Some(name), ObserveTarget::Comm(comm)) => container::candidates(root, name, comm),
        _ => target::in_proc(root, target),
    }
}

/// The started command, as a neighbour runs it.
fn command_spec(argv: &[String]) -> NeighbourSpec {
    NeighbourSpec {
        name: "observed".into(),
        argv: argv.to_vec(),
        cpus: Vec::new(),
        nice: None,
        package: None,
    }
}

/// The parameters of `run observe` checked against the machine: a
/// recording must read, a target must name a thread (see [`target`]).
pub fn check(root: &Path, params: &ObserveParams) -> Result<()> {
    match (&params.replay, &params.target) {
        (Some(file), t) => {
            let path = PathBuf::from(file);
            if matches!(t, ObserveTarget::Pid(_) | ObserveTarget::Command(_)) {
                return Err(bad(
                    "--replay takes --tid or --comm: a recorded trace has no process ids",
                ));
            }
            let src = ReplaySource::open(&path)?;
            target::in_replay(src.events(), t, &path)?;
        }
        (None, ObserveTarget::Command(argv)) => neighbour::check_tools(&[command_spec(argv)])?,
        (None, t) => {
            candidates(root, t, params.container.as_deref())?;
        }
    }
    Ok(())
}

/// The observer thread's probe.
pub struct ObserveProbe {
    source: Option<Box<dyn EventSource>>,
    candidates: Vec<Candidate>,
    target: String,
    period_ns: Option<u64>,
    threshold_ns: u64,
    window_ns: u64,
    explain: bool,
    count: Option<u64>,
    replay: bool,
    command: Option<neighbour::Running>,
    workdir: Option<WorkDir>,
    /// Where `/proc` is.
    root: PathBuf,
    /// The process whose threads are the candidates (`--pid`, a started
    /// command): its threads started later are watched too.
    process: Option<u32>,
    /// What the source could not do (filters the kernel refused).
    notes: Vec<String>,
    /// Where the observer and the task run (`None` in a replay).
    placement: Option<jitterlab_core::observe::placement::Placement>,
    /// Its lines, for the teardown's (a bench cell's context).
    context: Vec<String>,
    /// Measured under `jitterlab monitor` (never ends by itself): the
    /// task's end is watched, and each window noted ([`watch`]).
    monitor: bool,
    /// The target as asked, to find its thread again (`--comm`).
    asked: ObserveTarget,
    /// The container its thread is looked for in (`--container`).
    container: Option<String>,
    /// Times a monitor re-attached to a new thread of its `--comm`.
    reattached: u64,
}

/// What the measuring loop keeps besides the recorder.
struct Tally {
    detail: ObserveDetail,
    /// The window of the last recorded cycle, and its worst cycle's
    /// latency and explanation (with whether it was kept already).
    window: Option<u64>,
    worst: Option<(u64, Explanation, bool)>,
    /// Trace time to the recorder's clock: added to a cycle's start.
    shift: i128,
    t0: u64,
    /// Whether the observed thread is released by its own timer, from
    /// its first cycles ([`TimerReleased`]).
    released: TimerReleased,
    /// The cycle that decided it is, until its wake-ups are switched off.
    released_at: Option<u64>,
}

impl Tally {
    fn keep(&mut self, x: Explanation) {
        if self.detail.explanations.len() < MAX_EXPLANATIONS {
            self.detail.explanations.push(x);
        } else {
            self.detail.explanations_dropped += 1;
        }
    }

    fn close_window(&mut self) {
        if let Some((_, x, false)) = self.worst.take() {
            self.keep(x);
        }
    }
}

impl ObserveProbe {
    /// Records one cycle of the observed thread (and its explanation).
    fn record(
        &self,
        c: &ObservedCycle,
        observer: &Observer,
        tally: &mut Tally,
        recorder: &mut Recorder,
    ) {
        let at = (i128::from(c.start_ns) + tally.shift).max(0) as u64;
        let ns = |v: u64| Some(i64::try_from(v).unwrap_or(i64::MAX));
        // Neither its switch in nor its wake-up traced: no latency.
        let measured = c.start != StartSource::NoWakeup;
        recorder.push(&Sample {
            index: c.index,
            at,
            values: slots([
                ns(c.latency_ns).filter(|_| measured),
                c.period_ns.and_then(ns),
                c.jitter_ns,
                ns(c.exec_ns),
                c.irq_latency_ns.and_then(ns),
                c.thread_latency_ns.and_then(ns),
                ns(c.preempted_ns),
            ]),
        });
        if tally.released.take(c.release == ReleaseSource::Timer) {
            tally.released_at = Some(c.index);
        }
        let d = &mut tally.detail;
        d.cycles += 1;
        d.timer_released += u64::from(c.release == ReleaseSource::Timer);
        d.untraced_starts += u64::from(c.start == StartSource::Untraced);
        d.no_wakeup_starts += u64::from(!measured);
        d.overruns += u64::from(c.overrun);
        d.migrations += u64::from(c.migrated);
        if !d.task_cpus.contains(&c.cpu) {
            d.task_cpus.push(c.cpu);
        }
        d.t0_ns = Some(c.t0_ns);
        d.t0_source = Some(c.t0_source);
        let window = at.saturating_sub(tally.t0) / self.window_ns.max(1);
        if self.monitor {
            watch::note_cycle(window, c.cpu);
        }
        if !self.explain {
            return;
        }
        if tally.window != Some(window) {
            tally.close_window();
            tally.window = Some(window);
        }
        if !measured {
            return;
        }
        let over = c.latency_ns > self.threshold_ns;
        let worst =
            c.latency_ns > 0 && tally.worst.as_ref().is_none_or(|(l, ..)| c.latency_ns > *l);
        if !over && !worst {
            return;
        }
        let x = observer.explain(c);
        if worst && self.monitor {
            watch::note_worst(window, c.latency_ns, top_parts(&x, 3));
        }
        if worst {
            tally.worst = Some((c.latency_ns, x.clone(), over));
        }
        if over {
            tally.keep(x);
        }
    }
}

impl Probe for ObserveProbe {
    fn measure(&mut self, start: &Start<'_>, recorder: &mut Recorder) -> Result<Report> {
        let mut source = self
            .source
            .take()
            .context("the observe probe measured twice; this is a bug in jitterlab")?;
        let mut tids: Vec<u32> = self.candidates.iter().map(|c| c.tid).collect();
        let mut config = ObserverConfig::new(tids.clone(), self.period_ns);
        // Long enough for a held second of cycles to be explained.
        config.history_ns = 2 * HISTORY_NS + self.period_ns.unwrap_or(0) * 32;
        let mut observer = Observer::new(&config);
        // A process's only thread may start the periodic one later.
        let mut chosen: Option<u32> = (tids.len() == 1 && self.process.is_none()).then(|| tids[0]);
        let mut next_scan = jitterlab_sys::monotonic_ns() + SCAN_NS;
        let mut held: Vec<ObservedCycle> = Vec::new();
        let mut tally = Tally {
            detail: ObserveDetail {
                target: self.target.clone(),
                candidates: tids.len(),
                infer_periods: INFER_PERIODS,
                ..ObserveDetail::default()
            },
            window: None,
            worst: None,
            shift: 0,
            t0: start.t0,
            released: TimerReleased::default(),
            released_at: None,
        };
        if let Some(p) = self.placement.as_mut() {
            place::observer(p);
        }
        let mut first: Option<u64> = None;
        let mut batch: Vec<Event> = Vec::with_capacity(8192);
        let mut recorded = 0u64;
        // The candidates' priorities as their events show them.
        let mut votes = PrioVotes::default();
        let mut realtime: Vec<u32> = Vec::new();
        let count = self.count;
        let done = |n: u64| count.is_some_and(|c| n >= c);
        let mut next_check = jitterlab_sys::monotonic_ns() + CHECK_NS;
        // A monitor whose `--comm` task is gone, waiting for its new thread.
        let mut waiting = false;
        'outer: while !start.stop.load(Relaxed) && !done(recorded) {
            if self.monitor && !self.replay {
                let now = jitterlab_sys::monotonic_ns();
                if now >= next_check {
                    next_check = now + CHECK_NS;
                    let gone = match chosen {
                        Some(tid) => !target::alive(&self.root, tid),
                        None => !tids.iter().any(|&t| target::alive(&self.root, t)),
                    };
                    if gone || waiting {
                        match self.task_gone(chosen, &mut waiting) {
                            Gone::Ended => break 'outer,
                            Gone::Waiting => {}
                            Gone::Found(found) => {
                                tids = found.iter().map(|c| c.tid).collect();
                                self.candidates = found;
                                // A new model: the old thread's state goes.
                                config.tids = tids.clone();
                                observer = Observer::new(&config);
                                chosen = (tids.len() == 1).then(|| tids[0]);
                                held.clear();
                                first = None;
                                // The new thread's wake-ups are recorded
                                // until its own first cycles say.
                                tally.released = TimerReleased::default();
                                tally.released_at = None;
                                let notes = source.watch(&tids);
                                self.notes.extend(notes);
                            }
                        }
                    }
                }
            }
            if waiting {
                // Nothing to measure: the trace is read and dropped.
                batch.clear();
                source.read(&mut batch)?;
                std::thread::sleep(IDLE);
                continue;
            }
            if let Some(pid) = self.process.filter(|_| chosen.is_none() && !self.replay) {
                let now = jitterlab_sys::monotonic_ns();
                if now >= next_scan {
                    next_scan = now + SCAN_NS;
                    let new = target::started_since(&self.root, pid, &tids);
                    if !new.is_empty() {
                        for c in new {
                            observer.watch(c.tid);
                            tids.push(c.tid);
                            self.candidates.push(c);
                        }
                        let notes = source.watch(&tids);
                        self.notes.extend(notes);
                    }
                }
            }
            batch.clear();
            source.read(&mut batch)?;
            if batch.is_empty() {
                if source.exhausted() {
                    break;
                }
                std::thread::sleep(IDLE);
                continue;
            }
            for e in &batch {
                if chosen.is_none() {
                    votes.take(&e.kind, &tids);
                }
                if let EventKind::Switch {
                    next_pid,
                    next_comm,
                    ..
                } = &e.kind
                {
                    if tids.contains(next_pid) {
                        // The kernel's name for it now: a thread found as
                        // it starts may name itself after (prctl).
                        if let Some(c) = self.candidates.iter_mut().find(|c| c.tid == *next_pid) {
                            if c.comm != *next_comm {
                                c.comm.clone_from(next_comm);
                            }
                        }
                    }
                }
                let f = *first.get_or_insert(e.time_ns);
                if self.replay && tally.shift == 0 {
                    // The recording's first event is the measurement's
                    // start: times since the start are the recording's.
                    let now = jitterlab_sys::monotonic_ns().max(start.t0);
                    recorder.start_at(now);
                    tally.shift = i128::from(now) - i128::from(f);
                    tally.t0 = now;
                }
                observer.push(e);
                while let Some(c) = observer.pop() {
                    match chosen {
                        Some(tid) if c.tid == tid => {
                            self.record(&c, &observer, &mut tally, recorder);
                            recorded += 1;
                            if done(recorded) {
                                break 'outer;
                            }
                        }
                        Some(_) => {}
                        None => held.push(c),
                    }
                }
                if chosen.is_none() && e.time_ns.saturating_sub(f) >= CHOOSE_NS {
                    // Past the most it holds, a thread with a period will do.
                    let least = if held.len() > MAX_HELD {
                        1
                    } else {
                        CHOOSE_PERIODS
                    };
                    realtime = votes.realtime();
                    chosen = choose(&held, least, &realtime, self.period_ns);
                    if let Some(tid) = chosen {
                        // The others' events are needed no more.
                        let notes = source.watch(&[tid]);
                        self.notes.extend(notes);
                        for c in held.drain(..).filter(|c| c.tid == tid) {
                            self.record(&c, &observer, &mut tally, recorder);
                            recorded += 1;
                        }
                    }
                }
            }
            if let Some(cycle) = tally.released_at.take() {
                // Released by its own timer: its wake-ups, the second
                // record in its wake-up path, are not recorded any more.
                if !self.explain && !self.replay {
                    let notes = source.timer_released();
                    self.notes.extend(notes);
                    tally.detail.wakeups_off_after = Some(cycle);
                }
            }
        }
        // What the model holds until T0 is known, when the trace ends first.
        observer.finish();
        while let Some(c) = observer.pop() {
            match chosen {
                Some(tid) if c.tid == tid && !done(recorded) => {
                    self.record(&c, &observer, &mut tally, recorder);
                    recorded += 1;
                }
                Some(_) => {}
                None => held.push(c),
            }
        }
        if chosen.is_none() {
            // The trace ended before a second had passed.
            realtime = votes.realtime();
            chosen = choose(&held, CHOOSE_PERIODS, &realtime, self.period_ns)
                .or_else(|| choose(&held, 1, &realtime, self.period_ns));
            if let Some(tid) = chosen {
                for c in held.drain(..).filter(|c| c.tid == tid) {
                    if done(recorded) {
                        break;
                    }
                    self.record(&c, &observer, &mut tally, recorder);
                    recorded += 1;
                }
            }
        }
        tally.close_window();
        let d = &mut tally.detail;
        d.tid = chosen;
        d.comm = chosen
            .and_then(|t| self.candidates.iter().find(|c| c.tid == t))
            .map(|c| c.comm.clone())
            .unwrap_or_default();
        if let Some(tid) = chosen {
            if let Some((t0, s)) = observer.t0(tid) {
                d.t0_ns = Some(t0);
                d.t0_source = Some(s);
                d.infer_periods = observer.periods(tid);
            }
        }
        if let Some(mut p) = self.placement.clone() {
            if let Some(tid) = chosen {
                place::task(&mut p, tid);
            }
            self.context = p.lines(&d.task_cpus);
            d.placement = Some(p);
        }
        d.realtime_candidates = realtime.len();
        d.candidates = tids.len();
        d.not_measured = observer.not_measured();
        d.lost_events = observer.lost_events().max(source.lost());
        // Back for the teardown, which stops it.
        self.source = Some(source);
        let mut warnings: Vec<String> = self.notes.drain(..).collect();
        if self.reattached > 0 {
            warnings.push(format!(
                "the task of {} restarted: re-attached {} time(s) to its new thread; the cycles are those of each thread in turn",
                self.target, self.reattached
            ));
        }
        if let Some(why) = watch::ended() {
            warnings.push(why);
        }
        if d.not_measured > 0 {
            warnings.push(format!(
                "{} cycles not measured: the kernel dropped {} trace events",
                d.not_measured, d.lost_events
            ));
        }
        if chosen.is_none() {
            warnings.push(format!(
                "no thread of {} finished a cycle: nothing was measured",
                self.target
            ));
        }
        let task_cpus = (!tally.detail.task_cpus.is_empty())
            .then(|| tally.detail.task_cpus.iter().map(|&c| c as usize).collect());
        Ok(Report {
            detail: Some(serde_json::to_value(&tally.detail)?),
            warnings,
            task_cpus,
            ..Report::default()
        })
    }

    fn teardown(&mut self, _root: &Path, journal: &mut Journal) -> Vec<String> {
        let mut lines = std::mem::take(&mut self.context);
        if let Some(source) = self.source.take() {
            lines.extend(source.close(journal));
        }
        if let Some(running) = self.command.take() {
            let report = running.stop(journal);
            lines.push(format!("observed command: {}", report.end));
        }
        if let Some(w) = self.workdir.take() {
            if let Err(e) = w.remove(journal) {
                lines.push(format!("work directory not removed: {e:#}"));
            }
        }
        lines
    }
}

/// What a monitor does once its task's thread is gone.
enum Gone {
    /// The monitor ends (`--pid`, `--tid`): said in [`watch::end`].
    Ended,
    /// No thread of its `--comm` runs yet: checked again.
    Waiting,
    /// The threads of its `--comm` that run now: re-attached to them.
    Found(Vec<Candidate>),
}

impl ObserveProbe {
    /// The monitored thread `chosen` (else every candidate) is gone, or
    /// the monitor is `waiting` for its `--comm` to run again: ends the
    /// monitor of a `--pid`/`--tid`, or finds the new thread of the name.
    fn task_gone(&mut self, chosen: Option<u32>, waiting: &mut bool) -> Gone {
        let which = match chosen {
            Some(tid) => {
                let comm = self
                    .candidates
                    .iter()
                    .find(|c| c.tid == tid)
                    .map(|c| format!(" ({})", c.comm))
                    .unwrap_or_default();
                format!("tid {tid}{comm}")
            }
            None => "every thread of it".into(),
        };
        // `tid 42 (plc) of pid 40`; a `--tid` is named once.
        let of = match &self.asked {
            ObserveTarget::Tid(_) => String::new(),
            _ => format!(" of {}", self.target),
        };
        let ObserveTarget::Comm(name) = &self.asked else {
            watch::end(format!(
                "the monitored task ended: {which}{of} is gone; the monitor stops (exit status {}); monitor --comm NAME follows a task that restarts",
                watch::TASK_ENDED_STATUS
            ));
            return Gone::Ended;
        };
        let found: Vec<Candidate> = candidates(&self.root, &self.asked, self.container.as_deref())
            .unwrap_or_default()
            .into_iter()
            .filter(|c| Some(c.tid) != chosen)
            .collect();
        if found.is_empty() {
            if !*waiting {
                *waiting = true;
                crate::output::errln!(
                    "jitterlab: monitor: {which}{of} is gone; waiting for a thread named {name} to run again"
                );
            }
            return Gone::Waiting;
        }
        *waiting = false;
        self.reattached += 1;
        let tids: Vec<String> = found.iter().map(|c| c.tid.to_string()).collect();
        watch::note_mark(
            jitterlab_sys::monotonic_ns(),
            format!(
                "task restarted: {which}{of} was gone; re-attached to the thread(s) named {name}: tid {}",
                tids.join(", ")
            ),
        );
        crate::output::errln!(
            "jitterlab: monitor: {which}{of} is gone; re-attached to the thread(s) named {name} now running: tid {} (re-attach {})",
            tids.join(", "),
            self.reattached
        );
        Gone::Found(found)
    }
}

/// The priorities the candidates' events show, until one is chosen: a
/// candidate is real-time when most of its events that carry its kernel
/// priority (its switches in and out, its wake-ups) show one below 100.
/// Any of them, not the switch in alone: this VM's kernel traces no switch
/// out of idle, so a thread woken on an idle CPU is seldom seen switched
/// in; most of them, not one: a time-sharing thread holding a
/// priority-inheriting lock a real-time one waits on runs boosted for a
/// while.
#[derive(Debug, Default)]
struct PrioVotes {
    /// (tid, events below 100, events).
    seen: Vec<(u32, u32, u32)>,
}

impl PrioVotes {
    /// Takes in one event's priorities of the candidates `tids`.
    fn take(&mut self, kind: &EventKind, tids: &[u32]) {
        match kind {
            EventKind::Switch {
                prev_pid,
                prev_prio,
                next_pid,
                next_prio,
                ..
            } => {
                self.vote(*prev_pid, *prev_prio, tids);
                self.vote(*next_pid, *next_prio, tids);
            }
            EventKind::Wakeup { pid, prio, .. } => self.vote(*pid, *prio, tids),
            _ => {}
        }
    }

    fn vote(&mut self, tid: u32, prio: i32, tids: &[u32]) {
        if !tids.contains(&tid) {
            return;
        }
        let i = match self.seen.iter().position(|s| s.0 == tid) {
            Some(i) => i,
            None => {
                self.seen.push((tid, 0, 0));
                self.seen.len() - 1
            }
        };
        self.seen[i].1 += u32::from(prio < 100);
        self.seen[i].2 += 1;
    }

    /// The candidates most of whose events showed a real-time priority.
    fn realtime(&self) -> Vec<u32> {
        self.seen
            .iter()
            .filter(|&&(_, rt, all)| rt * 2 > all)
            .map(|&(tid, ..)| tid)
            .collect()
    }
}

/// The candidate whose held cycles' periods are the most regular.
///
/// A soft PLC runs its control tasks at a real-time priority beside
/// time-sharing threads that may tick as regularly (cyclictest's main
/// thread sleeps 10 ms at a time beside its 1 ms measuring thread): when
/// any candidate running at a real-time priority (`realtime`, [`PrioVotes`]) has the
/// periods, only those are ranked. With the period `t0` given, only the
/// threads running at it are ranked first
/// ([`jitterlab_core::observe::cycles::near_period`]): a started command
/// placed at a real-time policy has all its threads at it.
fn choose(
    held: &[ObservedCycle],
    min_periods: usize,
    realtime: &[u32],
    t0: Option<u64>,
) -> Option<u32> {
    let near = t0.map(|t0| near_period(&periods_of(held, |_| true), t0));
    if let Some(near) = near.filter(|n| !n.is_empty()) {
        let chosen = choose_among(held, min_periods, |tid| {
            near.contains(&tid) && realtime.contains(&tid)
        })
        .or_else(|| choose_among(held, min_periods, |tid| near.contains(&tid)));
        if chosen.is_some() {
            return chosen;
        }
    }
    choose_among(held, min_periods, |tid| realtime.contains(&tid))
        .or_else(|| choose_among(held, min_periods, |_| true))
}

/// The periods of the threads of `held` that `keep` keeps, by thread.
fn periods_of(held: &[ObservedCycle], keep: impl Fn(u32) -> bool) -> Vec<(u32, Vec<u64>)> {
    let mut periods: Vec<(u32, Vec<u64>)> = Vec::new();
    for c in held.iter().filter(|c| keep(c.tid)) {
        let Some(p) = c.period_ns else { continue };
        match periods.iter_mut().find(|(t, _)| *t == c.tid) {
            Some((_, v)) => v.push(p),
            None => periods.push((c.tid, vec![p])),
        }
    }
    periods
}

/// [`most_periodic`] of the threads of `held` that `keep` keeps.
fn choose_among(
    held: &[ObservedCycle],
    min_periods: usize,
    keep: impl Fn(u32) -> bool,
) -> Option<u32> {
    most_periodic(&periods_of(held, keep), min_periods)
}

/// How the runner measures the `observe` probe: its line in the registry (`super::REGISTRY`).
pub const REGISTRATION: super::Registration = super::Registration {
    kind: jitterlab_core::probe::ProbeKind::Observe,
    build,
    unavailable: None,
    flags: flags::flags,
    one_cell: flags::one_cell,
    report: report::PARTS,
    placement: super::Placement::Observer,
    task: Some(flags::monitor_cell),
};

#[cfg(test)]
mod tests {
    use super::*;

    fn switch(prev: (u32, i32), next: (u32, i32)) -> EventKind {
        EventKind::Switch {
            prev_pid: prev.0,
            prev_comm: String::new(),
            prev_prio: prev.1,
            prev_state: 1,
            next_pid: next.0,
            next_comm: String::new(),
            next_prio: next.1,
        }
    }

    #[test]
    fn a_thread_is_real_time_by_most_of_its_events_not_by_its_switch_in_alone() {
        // cyclictest: its measuring thread 11 at FIFO 95 (kernel prio 4),
        // woken on an idle CPU and never seen switched in; its main thread
        // 10 time-sharing (120), boosted once. A thread not observed (7)
        // counts for nothing.
        let tids = [10, 11];
        let mut v = PrioVotes::default();
        for _ in 0..5 {
            v.take(
                &EventKind::Wakeup {
                    pid: 11,
                    prio: 4,
                    target_cpu: 1,
                },
                &tids,
            );
            v.take(&switch((11, 4), (0, 120)), &tids);
            v.take(&switch((7, 120), (10, 120)), &tids);
            v.take(&switch((10, 120), (7, 120)), &tids);
        }
        v.take(&switch((7, 120), (10, 4)), &tids);
        assert_eq!(v.realtime(), [11]);
        assert_eq!(PrioVotes::default().realtime(), Vec::<u32>::new());
    }
}
