//! `--explain` on the periodic probes: the probe CPUs traced through the
//! tracer `run observe` uses ([`crate::trace`]: the journaled tracefs
//! instance, its errors when tracefs or an event is missing), and what
//! delayed each late cycle said with the same model
//! ([`jitterlab_core::explain::periodic`]).
//!
//! **Who does what.** The build starts the tracer on the probe CPUs (every
//! scheduler, timer, IRQ and softirq event) and a *reader* thread that runs off the probe
//! CPUs at SCHED_OTHER, as `observe`'s observer does. Each probe thread
//! picks, in its loop, the cycles to explain
//! ([`jitterlab_core::explain::periodic::Picker`]) and pushes them into a
//! wait-free queue of its own (no lock, no allocation, no system call;
//! when the queue is full the cycle is counted, not waited for). Every
//! [`READ_EVERY`] the reader reads the trace, feeds the explainer and hands
//! it the queued cycles.
//!
//! **The end.** The last probe thread to end its loop tells the reader to
//! finish: it pauses the trace, reads what is left, explains what is still
//! wanted, and hands the detail back to that thread, whose report carries
//! it as the result's `detail`
//! ([`jitterlab_core::explain::periodic::ExplainDetail`]). The teardown
//! removes the tracer's instance with the journal on every path, after
//! stopping the reader if no thread did (a probe that never measured).
//!
//! **Clock.** The probe's release and start are `CLOCK_MONOTONIC`, the
//! clock the tracer stamps events with (the instance's `trace_clock` is
//! `mono`), so they are used as they are.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use jitterlab_core::cyclic::CyclicParams;
use jitterlab_core::explain::periodic::{ExplainDetail, Explainer, Picker, Wanted};
use jitterlab_core::trace::event::Event;
use jitterlab_core::spec::ProbeParams;
use jitterlab_core::wakeup::WakeupParams;
use jitterlab_sys as sys;

use crate::system::journal::Journal;
use crate::trace::{TracePoint, Tracer};

/// How often the reader reads the trace.
pub const READ_EVERY: Duration = Duration::from_millis(10);

/// Cycles to explain each probe thread can queue before the reader takes
/// them: some seconds of cycles over a threshold below the latency.
const QUEUE: usize = 16_384;

/// The tracepoints traced: all the tracer knows ([`TracePoint::ALL`]).
/// Who ran, IRQs and softirqs make the parts; the wake-ups and timer
/// expiries place a switch out of idle a kernel does not trace
/// ([`jitterlab_core::explain`]).
const POINTS: &[TracePoint] = &TracePoint::ALL;

/// True when the periodic probe's parameters ask for `explain`.
pub fn asked(params: &ProbeParams) -> bool {
    params.get::<CyclicParams>().is_some_and(|p| p.explain)
        || params.get::<WakeupParams>().is_some_and(|p| p.explain)
}

/// What the reader hands back: the tracer (for the teardown) and the
/// detail.
type ReaderEnd = (Tracer, Result<ExplainDetail>);

/// What the probe threads and the teardown share.
struct Shared {
    /// Probe threads that have not ended their loop.
    running: AtomicUsize,
    /// Cycles the threads' queues could not take, summed as they end.
    full: AtomicU64,
    /// Tells the reader to finish.
    finish: AtomicBool,
    /// The reader, until it is joined.
    reader: Mutex<Option<JoinHandle<ReaderEnd>>>,
    /// The tracer once the reader handed it back, until the teardown.
    tracer: Mutex<Option<Tracer>>,
}

impl Shared {
    /// Ends the reader (if it still runs) and keeps its tracer; its detail.
    fn join(&self) -> Option<Result<ExplainDetail>> {
        let handle = self.reader.lock().ok()?.take()?;
        self.finish.store(true, Ordering::Release);
        match handle.join() {
            Ok((tracer, detail)) => {
                if let Ok(mut t) = self.tracer.lock() {
                    *t = Some(tracer);
                }
                Some(detail)
            }
            Err(_) => Some(Err(anyhow!(
                "the trace reader panicked; this is a bug in jitterlab"
            ))),
        }
    }
}

/// One probe thread's side: its queue and its picker.
pub struct ThreadSide {
    shared: Arc<Shared>,
    queue: rtrb::Producer<Wanted>,
    thread: u32,
    cpu: u32,
    window_ns: u64,
    threshold_ns: u64,
    /// Made at the start, when the first release is known.
    picker: Option<Picker>,
    tid: u32,
    /// Cycles the queue could not take.
    full: u64,
}

impl ThreadSide {
    /// Called on the probe thread before its loop.
    pub fn start(&mut self, t0: u64) {
        self.picker = Some(Picker::new(t0, self.window_ns, self.threshold_ns));
        self.tid = sys::gettid() as u32;
    }

    /// Called for every cycle, in the loop.
    #[inline(always)]
    pub fn cycle(&mut self, cycle: u64, release: u64, start: u64) {
        let Some(p) = self.picker.as_mut() else {
            return;
        };
        if let Some((window, over)) = p.pick(release, start) {
            let w = Wanted {
                thread: self.thread,
                tid: self.tid,
                cpu: self.cpu,
                cycle,
                release_ns: release,
                start_ns: start,
                window,
                over,
            };
            if self.queue.push(w).is_err() {
                self.full += 1;
            }
        }
    }

    /// Called after the loop: the detail and what it could not explain,
    /// from the last thread to end.
    pub fn end(&mut self) -> Result<Option<(serde_json::Value, Vec<String>)>> {
        let s = &self.shared;
        s.full.fetch_add(self.full, Ordering::AcqRel);
        if s.running.fetch_sub(1, Ordering::AcqRel) != 1 {
            return Ok(None);
        }
        let Some(detail) = s.join() else {
            return Ok(None);
        };
        let mut detail = detail?;
        detail.not_handed_over = s.full.load(Ordering::Acquire);
        Ok(Some((serde_json::to_value(&detail)?, detail.warnings())))
    }
}

/// The teardown's side: stops what no thread stopped and removes the
/// tracer's instance.
pub struct Teardown {
    shared: Arc<Shared>,
}

impl Teardown {
    /// The lines to print.
    pub fn close(&self, journal: &mut Journal) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some(Err(e)) = self.shared.join() {
            lines.push(format!("--explain: {e:#}"));
        }
        let tracer = self.shared.tracer.lock().ok().and_then(|mut t| t.take());
        if let Some(tracer) = tracer {
            match tracer.stop(journal) {
                Ok(stats) => lines.push(format!(
                    "trace: {} events read on {} CPUs, {} lost by the kernel, {} too late to merge",
                    stats.records(),
                    stats.cpus.len(),
                    stats.lost(),
                    stats.cpus.iter().map(|c| c.late).sum::<u64>()
                )),
                Err(e) => lines.push(format!("trace not stopped cleanly: {e:#}")),
            }
        }
        lines
    }
}

/// Starts the tracer on `cpus` (journaled) and its reader off them; one
/// [`ThreadSide`] per probe thread, in `cpus` order, and the teardown's.
pub fn start(
    root: &Path,
    cpus: &[usize],
    online: &[usize],
    window_ns: u64,
    threshold_ns: u64,
    journal: &mut Journal,
) -> Result<(Vec<ThreadSide>, Teardown)> {
    let traced: Vec<u32> = cpus.iter().map(|&c| c as u32).collect();
    let tracer = Tracer::start(root, &traced, POINTS, journal)?;
    let mut sides = Vec::new();
    let mut queues = Vec::new();
    let shared = Arc::new(Shared {
        running: AtomicUsize::new(cpus.len()),
        full: AtomicU64::new(0),
        finish: AtomicBool::new(false),
        reader: Mutex::new(None),
        tracer: Mutex::new(None),
    });
    for (i, &cpu) in cpus.iter().enumerate() {
        let (tx, rx) = rtrb::RingBuffer::new(QUEUE);
        queues.push(rx);
        sides.push(ThreadSide {
            shared: shared.clone(),
            queue: tx,
            thread: i as u32,
            cpu: cpu as u32,
            window_ns,
            threshold_ns,
            picker: None,
            tid: 0,
            full: 0,
        });
    }
    let off: Vec<usize> = online
        .iter()
        .copied()
        .filter(|c| !cpus.contains(c))
        .collect();
    let finish = shared.clone();
    let handle = std::thread::Builder::new()
        .name("jl-explain".into())
        .spawn(move || read(tracer, traced, queues, &off, &finish.finish))
        .context("cannot start the trace reader thread")?;
    if let Ok(mut r) = shared.reader.lock() {
        *r = Some(handle);
    }
    Ok((sides, Teardown { shared }))
}

/// The reader's loop (module doc).
fn read(
    mut tracer: Tracer,
    cpus: Vec<u32>,
    mut queues: Vec<rtrb::Consumer<Wanted>>,
    off: &[usize],
    finish: &AtomicBool,
) -> ReaderEnd {
    if !off.is_empty() {
        // Off the probe CPUs; on a one-CPU machine it shares the probe's.
        let _ = sys::set_affinity(off);
    }
    let mut x = Explainer::new(&cpus);
    let mut batch: Vec<Event> = Vec::with_capacity(8192);
    let mut take = |x: &mut Explainer, batch: &mut Vec<Event>| {
        for e in batch.drain(..) {
            x.push(&e);
        }
        for q in queues.iter_mut() {
            while let Ok(w) = q.pop() {
                x.want(w);
            }
        }
        x.explain_ready();
    };
    loop {
        let done = finish.load(Ordering::Acquire);
        if done {
            // Everything the probes queued is in; so is every event, once
            // the trace is paused and drained.
            let drained = tracer.drain(&mut batch);
            take(&mut x, &mut batch);
            return (tracer, drained.map(|()| x.finish()));
        }
        if let Err(e) = tracer.read(&mut batch) {
            return (tracer, Err(e));
        }
        take(&mut x, &mut batch);
        std::thread::sleep(READ_EVERY);
    }
}
