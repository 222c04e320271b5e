//! The tracer: the kernel's scheduler, timer, IRQ and softirq tracepoints,
//! read on every traced CPU and handed over as one stream of
//! [`Event`]s in time order, for `run observe` and `--explain`.
//!
//! **Two backends.** The kernel offers two stable ways to read tracepoints
//! as binary records; both give the same [`Event`]s through the same
//! [`Tracer`] API, chosen by [`TRACER_ENV`] (`JITTERLAB_TRACER`):
//!
//! - **tracefs raw buffers of a private instance** (the default,
//!   [`instance`]): per-CPU `trace_pipe_raw` pages, as trace-cmd reads
//!   them. On a virtual machine whose idle CPUs halt (Linux 6.18 under
//!   Firecracker, `haltpoll`), only these see the tracepoints hit in an
//!   interrupt taken while the CPU idles — the timer expiry and wake-up
//!   that release a periodic task: `perf record` of a 300-loop
//!   `cyclictest -a1` on CPU 1 recorded 2 `sched_wakeup` and 1
//!   `hrtimer_expire_entry`, tracefs 345 and 425 in the same run. The
//!   instance has its own buffers, clock (`mono`) and enabled events, so
//!   another tracer is not disturbed; its `mkdir` is journaled
//!   (`Undo::TracefsInstance`), so a crash leaves nothing `jitterlab
//!   restore` cannot remove.
//! - **perf events** (`JITTERLAB_TRACER=perf`): `perf_event_open(2)` with
//!   `PERF_TYPE_TRACEPOINT`, the interface `perf sched record` uses.
//!
//! Why perf events remain as the fallback:
//!
//! - *Private.* Perf events belong to the process that opened them and
//!   vanish when it exits, even by `kill -9`; with them the only possible
//!   change to the machine is mounting tracefs to learn the ids and
//!   formats, and that is undone within the start.
//! - *One clock.* `use_clockid` stamps every record with
//!   `CLOCK_MONOTONIC`, the clock the task's `clock_nanosleep` and the
//!   hrtimer expiries use (the instance gets the same with `trace_clock`
//!   `mono`).
//! - *Losses are records.* A full ring yields a `PERF_RECORD_LOST` with
//!   the count, where it happened, which becomes [`EventKind::Lost`]
//!   (`trace_pipe_raw` flags a page that follows lost events, which
//!   becomes one too).
//! - *Reading is memory.* The ring is mapped; a read is a load of
//!   `data_head`, a copy and a store of `data_tail`
//!   ([`jitterlab_sys::perf::PerfRing`]), no system call per record or page.
//!
//! Its cost: one event per tracepoint per CPU (nine descriptors a CPU),
//! which is why the tracepoints of a CPU share one ring
//! (`PERF_EVENT_IOC_SET_OUTPUT`), and perf events must be allowed to the
//! user (root, `CAP_PERFMON`, or `kernel.perf_event_paranoid` ≤ -1 for raw
//! tracepoint data of every task).
//!
//! **Lifecycle** (perf events; the instance's is in [`instance`]).
//! [`Tracer::start`] finds tracefs (mounting it, journaled,
//! where it is not: [`tracefs`]), reads the ids and formats, opens the
//! events disabled, maps one ring of [`RING_PAGES`] pages per CPU, then
//! enables them all. [`Tracer::read`] copies what each ring holds,
//! decodes it ([`jitterlab_core::trace::decode`]) and hands out, merged
//! in time order, what no later read can precede ([`merge`]).
//! [`Tracer::stop`] disables the events, hands out the rest, closes every
//! descriptor and says per CPU how many records were read and lost.
//!
//! **Refusals.** A missing tracefs, tracepoint or tracefs `instances/`,
//! perf events the kernel lacks or refuses to this user: a one-line error naming what is missing
//! and how to get it (bad input, exit 2), with nothing left changed.

pub mod instance;
pub mod merge;
pub mod tracefs;

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use anyhow::{anyhow, Result};
use jitterlab_core::trace::decode::{Decoders, Records};
use jitterlab_core::trace::event::{Event, EventKind};
use jitterlab_core::trace::page::BufferStats;
use jitterlab_core::units::CpuList;
use jitterlab_sys as sys;
use jitterlab_sys::perf::{self, PerfEventAttr, PerfRing};

pub use jitterlab_core::trace::decode::TracePoint;

use crate::error::bad;
use crate::system::journal::Journal;
use instance::Instance;
use merge::Merger;
use tracefs::Tracefs;

/// The environment variable that chooses the tracer's backend: `tracefs`
/// (the default: [`instance`]) or `perf`.
pub const TRACER_ENV: &str = "JITTERLAB_TRACER";

/// Where the tracepoints are read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The raw buffers of a private tracefs instance ([`instance`]).
    Tracefs,
    /// Perf events, one ring per CPU.
    Perf,
}

impl Backend {
    /// The backend [`TRACER_ENV`] asks for, tracefs where it is unset.
    pub fn from_env() -> Result<Backend> {
        match std::env::var(TRACER_ENV) {
            Err(_) => Ok(Backend::Tracefs),
            Ok(v) if v.is_empty() || v == "tracefs" => Ok(Backend::Tracefs),
            Ok(v) if v == "perf" => Ok(Backend::Perf),
            Ok(v) => Err(bad(format!(
                "{TRACER_ENV} is {v:?}; set it to tracefs (the default) or perf"
            ))),
        }
    }
}

/// Data pages of each CPU's ring: 4 MiB with 4 KiB pages, as the tracefs
/// instance's buffer ([`instance::BUFFER_KB`]), which root may lock
/// (`CAP_IPC_LOCK`): a reader held off for a fraction of a second under
/// load lost some 20 000 events with 512 KiB.
pub const RING_PAGES: usize = 1024;

/// The data pages of each CPU's ring when [`RING_PAGES`] cannot be
/// mapped: 512 KiB, what the default `kernel.perf_event_mlock_kb` (516)
/// lets an unprivileged user map per CPU, some 0.5 s of a busy CPU's
/// scheduler events.
pub const SMALL_RING_PAGES: usize = 128;

/// Where the kernel says whether perf events exist and who may use them.
const PARANOID: &str = "proc/sys/kernel/perf_event_paranoid";
/// The online CPUs.
const ONLINE: &str = "sys/devices/system/cpu/online";

/// What one CPU's ring delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuTraceStats {
    /// The CPU.
    pub cpu: u32,
    /// Sample records read.
    pub records: u64,
    /// Records the kernel dropped (its ring was full).
    pub lost: u64,
    /// Records dropped because they came after their time was handed out
    /// (counted in the stream as lost too).
    pub late: u64,
    /// The kernel's own counters of the CPU's buffer, read at the stop
    /// after the last read (the tracefs backend only): every event it
    /// accepted is read ([`BufferStats::read`]) or counted lost.
    pub kernel: Option<BufferStats>,
}

/// What a tracer delivered, per CPU, and its last events.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TraceStats {
    /// One entry per traced CPU, in CPU order.
    pub cpus: Vec<CpuTraceStats>,
    /// The events read at the stop, after everything [`Tracer::read`]
    /// handed out, in time order.
    pub rest: Vec<Event>,
}

impl TraceStats {
    /// Records read on every CPU.
    pub fn records(&self) -> u64 {
        self.cpus.iter().map(|c| c.records).sum()
    }

    /// Records lost on every CPU (dropped by the kernel or late).
    pub fn lost(&self) -> u64 {
        self.cpus.iter().map(|c| c.lost + c.late).sum()
    }
}

/// One CPU's events and their shared ring.
#[derive(Debug)]
struct CpuRing {
    cpu: u32,
    /// The ring, mapped from `fds[0]`; dropped (unmapped) before them.
    ring: PerfRing,
    /// One event per tracepoint.
    fds: Vec<OwnedFd>,
    records: u64,
    lost: u64,
}

/// The perf events backend's state.
#[derive(Debug)]
struct PerfRings {
    cpus: Vec<CpuRing>,
    tracefs: Tracefs,
    /// The bytes of the last ring read.
    buf: Vec<u8>,
}

/// The state of the backend in use.
#[derive(Debug)]
enum Source {
    Perf(PerfRings),
    Tracefs(Instance),
}

/// The kernel's tracepoints on a set of CPUs, read as one stream; see the
/// module doc.
#[derive(Debug)]
pub struct Tracer {
    source: Source,
    decoders: Decoders,
    merger: Merger,
    /// The tracepoints traced.
    points: Vec<TracePoint>,
    /// The filters set ([`Tracer::filter`]).
    filters: Vec<(TracePoint, String)>,
    /// The tracepoints recorded no more ([`Tracer::switch_off`]).
    off: Vec<TracePoint>,
}

impl Tracer {
    /// Opens the tracepoints `events` (all of [`TracePoint::ALL`] when
    /// empty) on `cpus` (all online CPUs when empty), tracefs found or
    /// mounted, and starts them, through the backend [`TRACER_ENV`] names.
    pub fn start(
        root: &Path,
        cpus: &[u32],
        events: &[TracePoint],
        journal: &mut Journal,
    ) -> Result<Tracer> {
        Tracer::start_with(Backend::from_env()?, root, cpus, events, journal)
    }

    /// [`Tracer::start`] for a trace that lasts months (`jitterlab monitor`
    /// of a real task): the private instance is not journaled, so tracing
    /// takes no machine lock (mounting tracefs, where it is not mounted,
    /// still does). The instance is removed on every stop the process
    /// sees; one left by a crash is removed by the next tracer start
    /// ([`instance`]).
    pub fn start_private(
        root: &Path,
        cpus: &[u32],
        events: &[TracePoint],
        journal: &mut Journal,
    ) -> Result<Tracer> {
        Tracer::start_mode(Backend::from_env()?, root, cpus, events, journal, false)
    }

    /// [`Tracer::start`] through `backend`.
    pub fn start_with(
        backend: Backend,
        root: &Path,
        cpus: &[u32],
        events: &[TracePoint],
        journal: &mut Journal,
    ) -> Result<Tracer> {
        Tracer::start_mode(backend, root, cpus, events, journal, true)
    }

    /// [`Tracer::start_with`], the instance journaled or not.
    fn start_mode(
        backend: Backend,
        root: &Path,
        cpus: &[u32],
        events: &[TracePoint],
        journal: &mut Journal,
        journaled: bool,
    ) -> Result<Tracer> {
        let points: Vec<TracePoint> = if events.is_empty() {
            TracePoint::ALL.to_vec()
        } else {
            events.to_vec()
        };
        let cpus = traced_cpus(root, cpus)?;
        if backend == Backend::Tracefs {
            let (instance, decoders) = Instance::start(root, &cpus, &points, journal, journaled)?;
            return Ok(Tracer {
                merger: Merger::new(instance.cpus.len()),
                source: Source::Tracefs(instance),
                decoders,
                points,
                filters: Vec::new(),
                off: Vec::new(),
            });
        }
        let paranoid = perf_paranoid(root)?;
        let mut tracefs = Tracefs::open(root, journal)?;
        let loaded = tracefs.decoders(&points);
        // The ids and formats are read: tracefs is needed no more.
        let released = tracefs.release(journal);
        let (decoders, ids) = loaded?;
        released?;
        let rings = match open_all(&cpus, &ids, paranoid) {
            Ok(rings) => rings,
            Err(e) => {
                // A mount that stayed busy: one more try before refusing.
                tracefs.release(journal)?;
                return Err(e);
            }
        };
        Ok(Tracer {
            merger: Merger::new(rings.len()),
            source: Source::Perf(PerfRings {
                cpus: rings,
                tracefs,
                buf: Vec::with_capacity(RING_PAGES * perf::page_size()),
            }),
            decoders,
            points,
            filters: Vec::new(),
            off: Vec::new(),
        })
    }

    /// Keeps, of each traced tracepoint, only the events its filter in
    /// `filters` keeps (the kernel's event filter syntax), and every event
    /// of the others, from now on; a filter already set is not written
    /// again. Through tracefs only: the filters are the instance's, gone
    /// with it; the perf events backend records everything (the model
    /// needs no filter, it only costs less). A filter the kernel refuses
    /// (one it is too old for) is left unset, every event of that
    /// tracepoint recorded: one line each says so.
    pub fn filter(&mut self, filters: &[(TracePoint, String)]) -> Vec<String> {
        let Source::Tracefs(instance) = &self.source else {
            return Vec::new();
        };
        let mut notes = Vec::new();
        for &point in &self.points {
            let want = filters.iter().find(|(p, _)| *p == point).map(|(_, f)| f);
            let have = self.filters.iter().position(|(p, _)| *p == point);
            if want == have.map(|i| &self.filters[i].1) {
                continue;
            }
            if let Some(i) = have {
                self.filters.swap_remove(i);
            }
            let Some(f) = want else {
                if let Err(e) = instance.filter(point, None) {
                    notes.push(format!("{e:#}"));
                }
                continue;
            };
            match instance.filter(point, Some(f)) {
                Ok(()) => self.filters.push((point, f.clone())),
                Err(e) => {
                    notes.push(format!("{e:#}; every {point} event is recorded"));
                    // What a refused write left: nothing, or the old one.
                    let _ = instance.filter(point, None);
                }
            }
        }
        notes
    }

    /// Records none of `off`'s tracepoints from now on, and again every
    /// other traced one switched off before. Through tracefs only (its
    /// `enable`), as [`Tracer::filter`]; a write the kernel refuses leaves
    /// the tracepoint recorded, and a line says so.
    pub fn switch_off(&mut self, off: &[TracePoint]) -> Vec<String> {
        let Source::Tracefs(instance) = &self.source else {
            return Vec::new();
        };
        let mut notes = Vec::new();
        for &point in &self.points {
            let (want, have) = (off.contains(&point), self.off.contains(&point));
            if want == have {
                continue;
            }
            match instance.enable(point, !want) {
                Ok(()) if want => self.off.push(point),
                Ok(()) => self.off.retain(|p| *p != point),
                Err(e) => notes.push(format!("{e:#}")),
            }
        }
        notes
    }

    /// Appends the events read since the last call, merged across CPUs in
    /// time order up to the oldest CPU's newest record (so a later read
    /// never yields an earlier event).
    pub fn read(&mut self, out: &mut Vec<Event>) -> Result<()> {
        let began = sys::monotonic_ns();
        let n = self.streams();
        let mut newest = Vec::with_capacity(n);
        for i in 0..n {
            let got = self.read_cpu(i)?;
            newest.push(if got { self.merger.newest(i) } else { None });
        }
        let cut = merge::cut(began, newest);
        self.merger.drain_to(cut, out);
        Ok(())
    }

    /// How many CPUs are read.
    fn streams(&self) -> usize {
        match &self.source {
            Source::Perf(p) => p.cpus.len(),
            Source::Tracefs(t) => t.cpus.len(),
        }
    }

    /// Copies CPU `i`'s ring and queues its events; true when it held any.
    fn read_cpu(&mut self, i: usize) -> Result<bool> {
        let p = match &mut self.source {
            Source::Perf(p) => p,
            Source::Tracefs(t) => {
                let events = t.read_cpu(i, &self.decoders)?;
                if events.is_empty() {
                    return Ok(false);
                }
                self.merger.push(i, events);
                return Ok(true);
            }
        };
        p.buf.clear();
        let c = &mut p.cpus[i];
        if c.ring.read_into(&mut p.buf) == 0 {
            return Ok(false);
        }
        let mut events = Vec::new();
        for record in Records::new(&p.buf) {
            let record = record.map_err(|e| anyhow!("the trace ring of CPU {}: {e}", c.cpu))?;
            let Some(event) = self.decoders.event(&record) else {
                continue;
            };
            match event.kind {
                EventKind::Lost { count } => c.lost += count,
                _ => c.records += 1,
            }
            events.push(event);
        }
        self.merger.push(i, events);
        Ok(true)
    }

    /// Pauses tracing and appends every event not handed out yet, in time
    /// order: what a reader that must see the end takes before the
    /// [`Tracer::stop`] (which then finds nothing more).
    pub fn drain(&mut self, out: &mut Vec<Event>) -> Result<()> {
        match &self.source {
            Source::Perf(p) => {
                for r in &p.cpus {
                    for fd in &r.fds {
                        perf::disable(fd.as_fd())
                            .map_err(|e| anyhow!("cannot disable tracing on CPU {}: {e}", r.cpu))?;
                    }
                }
            }
            Source::Tracefs(t) => t.pause()?,
        }
        for i in 0..self.streams() {
            self.read_cpu(i)?;
        }
        self.merger.drain_all(out);
        Ok(())
    }

    /// Reads what is left, disables and closes; records read/lost per CPU.
    /// The events read last, after the last [`Tracer::read`], are in
    /// [`TraceStats::rest`].
    pub fn stop(mut self, journal: &mut Journal) -> Result<TraceStats> {
        let mut first_err = None;
        match &self.source {
            Source::Perf(p) => {
                for r in &p.cpus {
                    for fd in &r.fds {
                        if let Err(e) = perf::disable(fd.as_fd()) {
                            first_err.get_or_insert(anyhow!(
                                "cannot disable tracing on CPU {}: {e}",
                                r.cpu
                            ));
                        }
                    }
                }
            }
            Source::Tracefs(t) => {
                if let Err(e) = t.pause() {
                    first_err.get_or_insert(e);
                }
            }
        }
        for i in 0..self.streams() {
            if let Err(e) = self.read_cpu(i) {
                first_err.get_or_insert(e);
            }
        }
        let mut rest = Vec::new();
        self.merger.drain_all(&mut rest);
        let counts: Vec<(u32, u64, u64, Option<BufferStats>)> = match &self.source {
            Source::Perf(p) => p
                .cpus
                .iter()
                .map(|c| (c.cpu, c.records, c.lost, None))
                .collect(),
            Source::Tracefs(t) => t
                .cpus
                .iter()
                .enumerate()
                .map(|(i, c)| (c.cpu, c.records, c.lost, t.kernel_stats(i).ok()))
                .collect(),
        };
        let stats = TraceStats {
            rest,
            cpus: counts
                .into_iter()
                .enumerate()
                .map(|(i, (cpu, records, lost, kernel))| CpuTraceStats {
                    cpu,
                    records,
                    lost,
                    late: self.merger.late(i),
                    kernel,
                })
                .collect(),
        };
        match self.source {
            Source::Perf(mut p) => {
                p.cpus.clear();
                p.tracefs.release(journal)?;
            }
            Source::Tracefs(t) => t.remove(journal)?,
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(stats),
        }
    }
}

/// The CPUs to trace: `asked`, each online, or every online CPU.
fn traced_cpus(root: &Path, asked: &[u32]) -> Result<Vec<u32>> {
    let path = root.join(ONLINE);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| anyhow!("cannot read the online CPUs ({}): {e}", path.display()))?;
    let online = CpuList::parse(&text)
        .map_err(|e| anyhow!("cannot read the online CPUs ({}): {e}", path.display()))?;
    if asked.is_empty() {
        return Ok(online.iter().map(|c| c as u32).collect());
    }
    let mut cpus = asked.to_vec();
    cpus.sort_unstable();
    cpus.dedup();
    if let Some(cpu) = cpus.iter().find(|&&c| !online.contains(c as usize)) {
        return Err(bad(format!(
            "CPU {cpu} is not online (online: {}); trace CPUs of that list",
            text.trim()
        )));
    }
    Ok(cpus)
}

/// `kernel.perf_event_paranoid`; its absence means a kernel without perf
/// events.
fn perf_paranoid(root: &Path) -> Result<i32> {
    let path = root.join(PARANOID);
    match std::fs::read_to_string(&path) {
        Ok(text) => text.trim().parse().map_err(|_| {
            anyhow!(
                "{} holds {:?}, not a number",
                path.display(),
                text.trim()
            )
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(bad(format!(
            "this kernel has no perf events ({} is missing); boot a kernel built with CONFIG_PERF_EVENTS=y",
            path.display()
        ))),
        Err(e) => Err(anyhow!("cannot read {}: {e}", path.display())),
    }
}

/// The attribute of tracepoint `id`'s event (module doc).
fn attr(id: u32, ring_bytes: usize) -> PerfEventAttr {
    PerfEventAttr {
        kind: perf::TYPE_TRACEPOINT,
        size: perf::ATTR_SIZE,
        config: u64::from(id),
        sample_period: 1,
        sample_type: perf::SAMPLE_TID | perf::SAMPLE_TIME | perf::SAMPLE_CPU | perf::SAMPLE_RAW,
        flags: perf::ATTR_DISABLED
            | perf::ATTR_SAMPLE_ID_ALL
            | perf::ATTR_USE_CLOCKID
            | perf::ATTR_WATERMARK,
        // Nobody polls the ring: wake no one before the large ring is
        // half full (the small one never is that full).
        wakeup_watermark: (ring_bytes / 2) as u32,
        clockid: perf::CLOCK_MONOTONIC,
        ..PerfEventAttr::default()
    }
}

/// Opens every tracepoint of `ids` on every CPU of `cpus` and enables
/// them; what was opened is closed again on an error.
fn open_all(cpus: &[u32], ids: &[(TracePoint, u32)], paranoid: i32) -> Result<Vec<CpuRing>> {
    let mut rings = Vec::with_capacity(cpus.len());
    for &cpu in cpus {
        rings.push(open_cpu(cpu, ids, paranoid)?);
    }
    for r in &rings {
        for fd in &r.fds {
            perf::enable(fd.as_fd())
                .map_err(|e| anyhow!("cannot enable tracing on CPU {}: {e}", r.cpu))?;
        }
    }
    Ok(rings)
}

/// Opens every tracepoint of `ids` on `cpu`, the first with the ring, the
/// others writing into it.
fn open_cpu(cpu: u32, ids: &[(TracePoint, u32)], paranoid: i32) -> Result<CpuRing> {
    let ring_bytes = RING_PAGES * perf::page_size();
    let mut fds = Vec::with_capacity(ids.len());
    let mut ring = None;
    for &(point, id) in ids {
        let fd = perf::perf_event_open(&attr(id, ring_bytes), -1, cpu as i32)
            .map_err(|e| open_error(point, cpu, paranoid, &e))?;
        match &ring {
            None => {
                // The large ring where it may be locked, else the small.
                let mapped = PerfRing::map(fd.as_fd(), RING_PAGES)
                    .or_else(|_| PerfRing::map(fd.as_fd(), SMALL_RING_PAGES));
                ring = Some(mapped.map_err(|e| {
                    anyhow!(
                        "cannot map the trace ring of CPU {cpu} ({} KiB): {e}; run jitterlab as root or raise kernel.perf_event_mlock_kb",
                        SMALL_RING_PAGES * perf::page_size() / 1024
                    )
                })?);
            }
            Some(_) => {
                let first: &OwnedFd = &fds[0];
                perf::set_output(fd.as_fd(), first.as_fd()).map_err(|e| {
                    anyhow!("cannot share the trace ring of CPU {cpu} with {point}: {e}")
                })?;
            }
        }
        fds.push(fd);
    }
    let ring = ring.ok_or_else(|| anyhow!("no tracepoint to open on CPU {cpu}"))?;
    Ok(CpuRing {
        cpu,
        ring,
        fds,
        records: 0,
        lost: 0,
    })
}

/// The refusal of a `perf_event_open` that failed with `e`.
fn open_error(point: TracePoint, cpu: u32, paranoid: i32, e: &io::Error) -> anyhow::Error {
    match e.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) => bad(format!(
            "the kernel refused to trace {point} on CPU {cpu}: {e} (kernel.perf_event_paranoid is {paranoid}); run jitterlab as root or with CAP_PERFMON, or allow it: sysctl kernel.perf_event_paranoid=-1"
        )),
        Some(libc::ENOENT) | Some(libc::ENODEV) | Some(libc::ENOSYS) | Some(libc::EOPNOTSUPP) => {
            bad(format!(
                "this kernel cannot trace {point} through perf events ({e}); boot one built with CONFIG_PERF_EVENTS=y and CONFIG_EVENT_TRACING=y"
            ))
        }
        Some(libc::EINVAL) => anyhow!(
            "the kernel refused the perf event of {point} on CPU {cpu}: {e} (a CLOCK_MONOTONIC perf clock needs Linux 4.1 or newer)"
        ),
        _ => anyhow!("cannot open the perf event of {point} on CPU {cpu}: {e}"),
    }
}

#[cfg(test)]
mod tests;
