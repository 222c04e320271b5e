//! The tracer's default backend: the tracepoints read from the raw ring
//! buffers of a private tracefs instance
//! (`<tracefs>/instances/jitterlab-<pid>`), one page at a time from each
//! CPU's `per_cpu/cpuN/trace_pipe_raw`.
//!
//! **Why.** On a virtual machine whose idle CPUs halt (Linux 6.18 under
//! Firecracker, `haltpoll`), perf events lose the tracepoints hit in an
//! interrupt taken while the CPU idles: `perf record -e
//! sched:sched_wakeup -e timer:hrtimer_expire_entry -C 1` of a 300-loop
//! `cyclictest -a1` recorded 2 wake-ups and 1 expiry, where tracefs, same
//! run, had 345 and 425. So a periodic task's release — the expiry and
//! wake-up in an idle CPU's timer interrupt — is seen only through
//! tracefs. An instance has its own buffers, clock and enabled events, so
//! another tracer using the top-level buffer (trace-cmd, a second
//! jitterlab) is not disturbed.
//!
//! **Set-up, journaled.** The `mkdir` of the instance is recorded first
//! (`Undo::TracefsInstance`, removed by `jitterlab restore` after a
//! crash); in it `trace_clock` ← `mono` (times in `CLOCK_MONOTONIC` ns,
//! as the model needs), `buffer_size_kb` ← [`BUFFER_KB`], each
//! tracepoint's `enable` ← 1, `tracing_on` ← 1. tracefs stays mounted
//! while tracing (where jitterlab mounted it, it is unmounted after the
//! instance is removed). The stop: `tracing_on` ← 0, what is left read,
//! the instance removed.
//!
//! **Private instances.** `jitterlab monitor` of a real task traces for
//! months: its instance is not journaled
//! ([`super::Tracer::start_private`]), so the monitor holds no machine
//! lock. It is removed on every stop the process sees; one a `kill -9`
//! or a crash left (`jitterlab-<pid>` of a dead pid) is removed by the
//! next tracer start of any jitterlab.
//!
//! **Reading.** Each `read` of `trace_pipe_raw` (`O_NONBLOCK`) returns one
//! page, or `EAGAIN` when the CPU's buffer is empty; the page format is
//! checked against `events/header_page` and `events/header_event` at the
//! start and parsed by [`jitterlab_core::trace::page`]. A page whose
//! `commit` says events were missed before it yields an
//! [`EventKind::Lost`].

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Result};
use jitterlab_core::trace::decode::{Decoders, TracePoint};
use jitterlab_core::trace::event::{Event, EventKind};
use jitterlab_core::trace::page::{self, Item, PageLayout};
use jitterlab_sys::perf;

use crate::error::bad;
use crate::system::journal::undo::tracefs::remove_instance;
use crate::system::journal::{Journal, Undo};

use super::tracefs::Tracefs;

/// Each CPU's buffer in the instance: 4 MiB, some seconds of a busy CPU's
/// scheduler events.
pub const BUFFER_KB: u32 = 4096;

/// One CPU's raw buffer.
#[derive(Debug)]
pub struct RawCpu {
    /// The CPU.
    pub cpu: u32,
    file: File,
    /// Records read.
    pub records: u64,
    /// Records the kernel dropped.
    pub lost: u64,
}

/// A private tracefs instance tracing the tracepoints; see the module doc.
#[derive(Debug)]
pub struct Instance {
    /// The instance's directory.
    pub path: PathBuf,
    /// Its journal entry; `None`: a private instance
    /// ([`super::Tracer::start_private`]).
    journal_id: Option<u64>,
    tracefs: Tracefs,
    layout: PageLayout,
    /// One reader per traced CPU, in CPU order.
    pub cpus: Vec<RawCpu>,
    page: Vec<u8>,
}

/// Writes `value` to the instance's `file`.
fn write(dir: &Path, file: &str, value: &str) -> Result<()> {
    let path = dir.join(file);
    fs::write(&path, value)
        .map_err(|e| anyhow!("cannot write {value:?} to {}: {e}", path.display()))
}

/// Reads tracefs' `events/<name>`. In large reads: the kernel answers a
/// read past the first of these files with nothing, so the small first
/// read `read_to_string` makes would cut it.
fn header(dir: &Path, name: &str) -> Result<String> {
    let path = dir.join("events").join(name);
    let err = |e: std::io::Error| anyhow!("cannot read {}: {e}", path.display());
    let mut file = File::open(&path).map_err(err)?;
    let mut bytes = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => bytes.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(err(e)),
        }
    }
    String::from_utf8(bytes).map_err(|_| anyhow!("{} is not text", path.display()))
}

impl Instance {
    /// Finds (or mounts) tracefs, reads the tracepoints' formats and the
    /// page format, makes the instance and starts tracing `points` on
    /// `cpus`. Returns the decoders too. The instance's `mkdir` is
    /// journaled when `journaled`; instances of dead jitterlabs that no
    /// journal names are removed first ([`sweep`]).
    pub fn start(
        root: &Path,
        cpus: &[u32],
        points: &[TracePoint],
        journal: &mut Journal,
        journaled: bool,
    ) -> Result<(Instance, Decoders)> {
        let mut tracefs = Tracefs::open(root, journal)?;
        let prepared = prepare(&tracefs, points);
        let (decoders, layout) = match prepared {
            Ok(p) => p,
            Err(e) => {
                tracefs.release(journal)?;
                return Err(e);
            }
        };
        let path = tracefs
            .dir
            .join("instances")
            .join(format!("jitterlab-{}", std::process::id()));
        sweep(root, &tracefs.dir.join("instances"));
        let journal_id = if journaled {
            match journal.record(Undo::TracefsInstance { path: path.clone() }) {
                Ok(id) => Some(id),
                Err(e) => {
                    tracefs.release(journal)?;
                    return Err(e);
                }
            }
        } else {
            None
        };
        let mut instance = Instance {
            path,
            journal_id,
            tracefs,
            layout,
            cpus: Vec::new(),
            page: vec![0; perf::page_size()],
        };
        if let Err(e) = fs::create_dir(&instance.path) {
            if let Some(id) = journal_id {
                journal.done(id)?;
            }
            instance.tracefs.release(journal)?;
            return Err(anyhow!(
                "cannot make the tracefs instance {}: {e}",
                instance.path.display()
            ));
        }
        match instance.set_up(cpus, points) {
            Ok(()) => Ok((instance, decoders)),
            Err(e) => {
                instance.cpus.clear();
                instance.remove(journal)?;
                Err(e)
            }
        }
    }

    /// Sets the instance's clock, buffers and events, opens every CPU's
    /// raw buffer and turns tracing on.
    fn set_up(&mut self, cpus: &[u32], points: &[TracePoint]) -> Result<()> {
        let dir = self.path.clone();
        if !dir.join("tracing_on").exists() {
            return Err(anyhow!(
                "{} is not a tracefs instance (it has no tracing_on)",
                dir.display()
            ));
        }
        write(&dir, "tracing_on", "0")?;
        write(&dir, "trace_clock", "mono")?;
        write(&dir, "buffer_size_kb", &BUFFER_KB.to_string())?;
        for &point in points {
            self.enable(point, true)?;
        }
        for &cpu in cpus {
            let path = dir.join(format!("per_cpu/cpu{cpu}/trace_pipe_raw"));
            let file = OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&path)
                .map_err(|e| anyhow!("cannot open {}: {e}", path.display()))?;
            self.cpus.push(RawCpu {
                cpu,
                file,
                records: 0,
                lost: 0,
            });
        }
        write(&dir, "tracing_on", "1")
    }

    /// Reads every page CPU `i`'s buffer holds; its events, in the order
    /// written.
    pub fn read_cpu(&mut self, i: usize, decoders: &Decoders) -> Result<Vec<Event>> {
        let mut events = Vec::new();
        let c = &mut self.cpus[i];
        loop {
            let n = match c.file.read(&mut self.page) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(anyhow!(
                        "cannot read the trace buffer of CPU {}: {e}",
                        c.cpu
                    ))
                }
            };
            let items = page::parse(&self.layout, &self.page[..n])
                .map_err(|e| anyhow!("the trace buffer of CPU {}: {e}", c.cpu))?;
            for item in items {
                match item {
                    Item::Data { time_ns, data } => {
                        let Some(kind) = decoders.decode(data) else {
                            continue;
                        };
                        c.records += 1;
                        events.push(Event {
                            time_ns,
                            cpu: c.cpu,
                            kind,
                        });
                    }
                    Item::Lost { time_ns, count } => {
                        c.lost += count;
                        events.push(Event {
                            time_ns,
                            cpu: c.cpu,
                            kind: EventKind::Lost { count },
                        });
                    }
                }
            }
        }
        Ok(events)
    }

    /// Sets `point`'s filter in the instance (the kernel's event filter
    /// syntax), or clears it (`None`): only the events it keeps are
    /// recorded from then on. Removed with the instance.
    pub fn filter(&self, point: TracePoint, filter: Option<&str>) -> Result<()> {
        write(&self.event_dir(point), "filter", filter.unwrap_or("0"))
    }

    /// Turns the recording of `point` on or off in the instance (its
    /// `enable`): off, the tracepoint writes nothing into the buffers, not
    /// even a record its filter would drop. Removed with the instance.
    pub fn enable(&self, point: TracePoint, on: bool) -> Result<()> {
        write(&self.event_dir(point), "enable", if on { "1" } else { "0" })
    }

    /// `point`'s directory in the instance (`events/SYSTEM/NAME`).
    fn event_dir(&self, point: TracePoint) -> PathBuf {
        self.path
            .join("events")
            .join(point.system())
            .join(point.name())
    }

    /// The kernel's counters of CPU `i`'s buffer (`per_cpu/cpuN/stats`).
    pub fn kernel_stats(&self, i: usize) -> Result<page::BufferStats> {
        let path = self
            .path
            .join(format!("per_cpu/cpu{}/stats", self.cpus[i].cpu));
        let text = fs::read_to_string(&path)
            .map_err(|e| anyhow!("cannot read {}: {e}", path.display()))?;
        page::BufferStats::parse(&text).map_err(|e| anyhow!("{}: {e}", path.display()))
    }

    /// Turns tracing off (what is traced already stays readable).
    pub fn pause(&self) -> Result<()> {
        write(&self.path, "tracing_on", "0")
    }

    /// Closes the buffers, removes the instance and unmounts tracefs where
    /// jitterlab mounted it.
    pub fn remove(mut self, journal: &mut Journal) -> Result<()> {
        self.cpus.clear();
        let (line, handled) = remove_instance(&self.path);
        if !handled {
            return Err(anyhow!(line));
        }
        if let Some(id) = self.journal_id {
            journal.done(id)?;
        }
        self.tracefs.release(journal)?;
        Ok(())
    }
}

/// Removes the instances `jitterlab-<pid>` in `instances` whose jitterlab
/// is dead (no `/proc/<pid>` under `root`): a private instance a crash
/// left. A journaled one a dead jitterlab left is its journal's (a run
/// refuses to start until `jitterlab restore` replays it), so none is
/// here by then. What cannot be removed stays, quietly: it is not this
/// run's.
fn sweep(root: &Path, instances: &Path) {
    let Ok(dir) = fs::read_dir(instances) else {
        return;
    };
    for entry in dir.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("jitterlab-"))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !root.join(format!("proc/{pid}")).exists() {
            let _ = remove_instance(&entry.path());
        }
    }
}

/// The decoders of `points` and the page layout, both checked, and that
/// tracefs has instances.
fn prepare(tracefs: &Tracefs, points: &[TracePoint]) -> Result<(Decoders, PageLayout)> {
    let (decoders, _) = tracefs.decoders(points)?;
    let layout = PageLayout::parse(&header(&tracefs.dir, "header_page")?)
        .map_err(|e| anyhow!("{e} ({})", tracefs.dir.join("events/header_page").display()))?;
    page::check_header_event(&header(&tracefs.dir, "header_event")?).map_err(|e| {
        anyhow!(
            "{e} ({})",
            tracefs.dir.join("events/header_event").display()
        )
    })?;
    let instances = tracefs.dir.join("instances");
    if !instances.is_dir() {
        return Err(bad(format!(
            "tracefs has no instances ({} is missing), which the tracer needs for a private trace buffer; boot a kernel built with CONFIG_TRACING (3.10 or newer), or trace through perf events: JITTERLAB_TRACER=perf",
            instances.display()
        )));
    }
    Ok((decoders, layout))
}

#[cfg(test)]
mod sweep_tests {
    use super::*;

    #[test]
    fn only_the_instances_of_dead_jitterlabs_are_swept() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        std::fs::create_dir_all(r.join("proc/4242")).unwrap();
        let instances = r.join("sys/kernel/tracing/instances");
        for name in [
            "jitterlab-4242",
            "jitterlab-4243",
            "trace-cmd",
            "jitterlab-x",
        ] {
            std::fs::create_dir_all(instances.join(name)).unwrap();
        }
        sweep(r, &instances);
        let mut left: Vec<String> = std::fs::read_dir(&instances)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["jitterlab-4242", "jitterlab-x", "trace-cmd"]);
    }
}
