//! Where the `observe` probe's events come from: an [`EventSource`] hands
//! over the tracer's events in time order. Two sources:
//!
//! * the live trace ([`live_source`]): the kernel's tracepoints through the
//!   binary's tracer, on every online CPU (the task may migrate);
//! * a recording ([`ReplaySource`], `--replay FILE`): one JSON object per
//!   line, each an `trace::event::Event` as serde writes it — what the
//!   tests drive the whole probe with, and how a trace taken elsewhere is
//!   analysed again. The file is read whole when the probe is built and
//!   checked there (every line an event, in time order), so a bad file is
//!   refused before anything starts.

use std::path::Path;

use anyhow::Result;
use jitterlab_core::trace::event::{Event, EventKind};
use jitterlab_core::observe::filter;

use crate::error::bad;
use crate::system::journal::Journal;
use crate::trace::Tracer;

/// A stream of trace events, in time order.
pub trait EventSource: Send {
    /// Appends the events read since the last call, in time order.
    fn read(&mut self, out: &mut Vec<Event>) -> anyhow::Result<()>;
    /// Events the kernel dropped so far, per CPU.
    fn lost(&self) -> u64;
    /// True once a recording has handed over its last event; a live trace
    /// never ends by itself.
    fn exhausted(&self) -> bool {
        false
    }
    /// The threads observed are `tids` from now on (more of them once a
    /// process starts a thread): a live trace records their events only,
    /// where it can filter, wake-ups included; lines saying what it could
    /// not do.
    fn watch(&mut self, _tids: &[u32]) -> Vec<String> {
        Vec::new()
    }
    /// The one thread watched is released by its own timer
    /// ([`filter::TimerReleased`]): a live trace records its wake-ups no
    /// more ([`filter::Selection::timer_released`]) until the next
    /// [`EventSource::watch`]; lines saying what it could not do.
    fn timer_released(&mut self) -> Vec<String> {
        Vec::new()
    }
    /// Stops the source and undoes what it set up; the lines to print.
    fn close(self: Box<Self>, _journal: &mut Journal) -> Vec<String> {
        Vec::new()
    }
}

/// The live trace of `cpus`, set up through `journal`: the scheduler,
/// timer, IRQ and softirq tracepoints through the binary's tracer
/// (`crate::trace`), every CPU's events merged in time order. With
/// `explain`, every event of those tracepoints; without, only those the
/// cycles of the threads [`EventSource::watch`] names need
/// ([`jitterlab_core::observe::filter`]). Its private tracefs instance is
/// journaled unless `private` ([`Tracer::start_private`]: `jitterlab
/// monitor` of a real task, which then holds no machine lock for the
/// months it runs).
pub fn live_source(
    root: &Path,
    cpus: &[usize],
    explain: bool,
    private: bool,
    journal: &mut Journal,
) -> Result<Box<dyn EventSource>> {
    let cpus: Vec<u32> = cpus.iter().map(|&c| c as u32).collect();
    let points = filter::selection(&[], explain).points;
    let tracer = match private {
        true => Tracer::start_private(root, &cpus, &points, journal)?,
        false => Tracer::start(root, &cpus, &points, journal)?,
    };
    Ok(Box::new(LiveSource {
        tracer,
        explain,
        watched: Vec::new(),
    }))
}

/// The live trace: the tracer, stopped when the probe is torn down.
struct LiveSource {
    tracer: Tracer,
    explain: bool,
    /// The threads watched.
    watched: Vec<u32>,
}

impl LiveSource {
    /// Sets the tracer's filters and switched-off tracepoints to `s`'s:
    /// the filters first, so that a tracepoint switched on again records
    /// only what its new filter keeps.
    fn apply(&mut self, s: filter::Selection) -> Vec<String> {
        let mut notes = self.tracer.filter(&s.filters);
        notes.extend(self.tracer.switch_off(&s.off));
        notes
    }
}

impl EventSource for LiveSource {
    fn read(&mut self, out: &mut Vec<Event>) -> Result<()> {
        self.tracer.read(out)
    }

    fn watch(&mut self, tids: &[u32]) -> Vec<String> {
        self.watched = tids.to_vec();
        self.apply(filter::selection(tids, self.explain))
    }

    fn timer_released(&mut self) -> Vec<String> {
        let tids = self.watched.clone();
        self.apply(filter::selection(&tids, self.explain).timer_released())
    }

    /// The kernel's drops come in the stream as `Lost` events, which the
    /// observer counts; nothing more is known before the stop.
    fn lost(&self) -> u64 {
        0
    }

    fn close(self: Box<Self>, journal: &mut Journal) -> Vec<String> {
        match self.tracer.stop(journal) {
            Ok(stats) => vec![format!(
                "trace: {} events read on {} CPUs, {} lost by the kernel, {} too late to merge",
                stats.records(),
                stats.cpus.len(),
                stats.lost(),
                stats.cpus.iter().map(|c| c.late).sum::<u64>()
            )],
            Err(e) => vec![format!("trace not stopped cleanly: {e:#}")],
        }
    }
}

/// How many events one [`ReplaySource::read`] hands over.
const CHUNK: usize = 4096;

/// A recorded trace, read back.
#[derive(Debug)]
pub struct ReplaySource {
    events: Vec<Event>,
    next: usize,
    lost: u64,
}

impl ReplaySource {
    /// Reads and checks the recording at `path` (`--replay`): refused
    /// (exit 2) when it cannot be read, when a line is not an event, or
    /// when events go back in time, naming the line.
    pub fn open(path: &Path) -> Result<ReplaySource> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| bad(format!("--replay {}: cannot read it: {e}", path.display())))?;
        let mut events = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let e: Event = serde_json::from_str(line).map_err(|e| {
                bad(format!(
                    "--replay {}:{}: not a trace event ({e})",
                    path.display(),
                    i + 1
                ))
            })?;
            if events.last().is_some_and(|p: &Event| p.time_ns > e.time_ns) {
                return Err(bad(format!(
                    "--replay {}:{}: the event goes back in time; a recording is in time order",
                    path.display(),
                    i + 1
                )));
            }
            events.push(e);
        }
        Ok(ReplaySource::new(events))
    }

    /// A recording of `events`.
    pub fn new(events: Vec<Event>) -> ReplaySource {
        ReplaySource {
            events,
            next: 0,
            lost: 0,
        }
    }

    /// Every event of the recording.
    pub fn events(&self) -> &[Event] {
        &self.events
    }
}

impl EventSource for ReplaySource {
    fn read(&mut self, out: &mut Vec<Event>) -> Result<()> {
        let end = (self.next + CHUNK).min(self.events.len());
        for e in &self.events[self.next..end] {
            if let EventKind::Lost { count } = e.kind {
                self.lost += count;
            }
            out.push(e.clone());
        }
        self.next = end;
        Ok(())
    }

    fn lost(&self) -> u64 {
        self.lost
    }

    fn exhausted(&self) -> bool {
        self.next >= self.events.len()
    }
}
