//! A roundtrip cell with deployment `container`: the controller — the
//! seed's virtual PLC — runs in a container, the I/O simulator on the host.
//!
//! The namespace pair is made as for both ends here; the I/O simulator's
//! sockets are in `jl<pid>io`, and the container joins `jl<pid>pl`
//! (`--network ns:/run/netns/jl<pid>pl`), pinned to the probe CPU, with
//! every real-time default of a container cell (`system::container`:
//! the image of this binary, the journaled real-time parent cgroup,
//! `SYS_NICE`, `IPC_LOCK`, the PM QoS device). Inside runs the cell
//! handed over as JSON (`jitterlab __cell`, `probe::container::InnerCell`)
//! with its controller's role: `role = controller`, its interface
//! `jl<pid>p`, its cycles to `/jl/samples` — what `jitterlab run roundtrip
//! --role controller … --samples-to /jl/samples --no-db --stream` measures.
//! Its stdout says when its task is set up and, last, its result; every cycle of its task comes to the host through the
//! named pipe in a bind-mounted, journaled work directory
//! ([`super::handoff`]).
//!
//! The host's measuring thread moves to the I/O simulator's CPU and runs
//! its loop once the controller's first cycle has arrived, taking the
//! controller's cycles from the pipe at every tick into the one recorder,
//! so the cell has every metric of a host cell, T1→T2 and T3→T4rx
//! included (one kernel, one clock). A controller that did not get every
//! real-time default its configuration asks for fails the cell, with the
//! reason: host and container must never compare FIFO with SCHED_OTHER.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use jitterlab_core::result::RunResult;
use jitterlab_core::roundtrip::{Role, RoundtripParams};
use jitterlab_core::spec::Configuration;

use super::handoff::{CycleRecord, Receiver};
use crate::probe::container::stream::{parse_line, Line};
use crate::probe::container::{missing_defaults, InnerCell, StderrTail};
use crate::probe::Cell;
use crate::system::container::prepare::{prepare, Prepared, Request};
use crate::system::container::run::ContainerRun;
use crate::system::host;
use crate::system::journal::Journal;
use crate::system::workdir::{create_work_dir, WorkDir};

/// Where the work directory is mounted inside the container.
const INSIDE: &str = "/jl";
/// How long the container may take to set its task up (image start,
/// calibration) before its first cycle.
const SETUP: Duration = Duration::from_secs(120);
/// How long it may take to end and say its result once interrupted.
const ENDING: Duration = Duration::from_secs(60);

/// The controller's container, its work directory and the samples pipe.
pub struct ContainerEnd {
    ctr: Prepared,
    workdir: Option<WorkDir>,
    /// The controller's cycles, from the container.
    pub samples: Receiver,
    config: Configuration,
    live: bool,
    lines: Option<mpsc::Receiver<Msg>>,
    tail: StderrTail,
}

/// What the reader threads hand over.
enum Msg {
    Out(String),
    Err(String),
}

/// Makes the controller's container for `cell` (journaled, not started):
/// joining namespace `netns`, its sockets on `interface`.
pub fn prepare_end(
    cell: &Cell<'_>,
    netns: &str,
    interface: &str,
    journal: &mut Journal,
) -> Result<ContainerEnd> {
    let spec = cell.spec;
    let config = spec.configurations[cell.cell.configuration].clone();
    let argv = controller_cell(
        InnerCell::of(spec, cell.cell, cell.plan, cell.stop, cell.calibrated)?,
        interface,
    )
    .argv()?;
    let workdir = create_work_dir(cell.root, journal)?;
    let samples = match Receiver::create(&workdir.path().join("samples")) {
        Ok(r) => r,
        Err(e) => {
            let _ = workdir.remove(journal);
            return Err(e);
        }
    };
    let request = Request {
        engine: cell.engine,
        name: ContainerRun::name_for(std::process::id(), cell.number),
        cpus: vec![cell.plan.cpus[0]],
        network: Some(netns.to_string()),
        mounts: vec![(workdir.path().display().to_string(), INSIDE.to_string())],
        argv,
        pm_qos: config.dma_latency,
    };
    let ctr = match prepare(cell.root, &request, journal) {
        Ok(c) => c,
        Err(e) => {
            let _ = workdir.remove(journal);
            return Err(e);
        }
    };
    let live = cell.workdir.is_none();
    if live {
        for n in &ctr.notes {
            crate::output::errln!("jitterlab: container: {n}");
        }
    }
    Ok(ContainerEnd {
        ctr,
        workdir: Some(workdir),
        samples,
        config,
        live,
        lines: None,
        tail: StderrTail::new(live),
    })
}

/// The cell the controller's container measures: `inner`, its round trip
/// played by the controller alone, its sockets on `interface`, its cycles
/// to the samples pipe in the work directory.
pub fn controller_cell(mut inner: InnerCell, interface: &str) -> InnerCell {
    if let Some(r) = inner
        .spec
        .probes
        .first_mut()
        .and_then(|p| p.params.get_mut::<RoundtripParams>())
    {
        r.role = Role::Controller;
        r.interface = Some(interface.to_string());
        r.samples_to = Some(format!("{INSIDE}/samples"));
    }
    inner
}

/// Reads `r` line by line into `tx` as `wrap`.
fn reader(r: impl Read + Send + 'static, tx: mpsc::Sender<Msg>, wrap: fn(String) -> Msg) {
    std::thread::spawn(move || {
        for line in BufReader::new(r).lines().map_while(Result::ok) {
            if tx.send(wrap(line)).is_err() {
                return;
            }
        }
    });
}

impl ContainerEnd {
    /// Starts the container and waits until its task is set up (the stream's
    /// `ready`), failing at once when it is not real-time although its
    /// configuration asks for it.
    pub fn start(&mut self, stop: &AtomicBool) -> Result<()> {
        if self.live {
            let run = &self.ctr.run;
            crate::output::errln!(
                "jitterlab: container: running the controller in {} container {} on CPUs {:?} (image {})",
                run.engine.name(),
                run.name,
                run.cpus,
                run.image
            );
        }
        // This thread is the I/O simulator's, SCHED_FIFO and pinned; what it
        // starts would inherit both, and a real-time task cannot join a cpu
        // cgroup that has no real-time runtime yet (the engine's own
        // processes, conmon and crun, do). So the engine's client is started
        // from a thread of the normal class on every CPU.
        let ctr = &mut self.ctr;
        let started = std::thread::scope(|s| {
            s.spawn(|| -> Result<()> {
                let _ = jitterlab_sys::set_scheduler(jitterlab_sys::Policy::Other, 0);
                let all: Vec<usize> = host::online_cpus(Path::new("/"))
                    .map(|c| c.iter().collect())
                    .unwrap_or_default();
                if !all.is_empty() {
                    let _ = jitterlab_sys::set_affinity(&all);
                }
                ctr.start().map(drop)
            })
            .join()
            .map_err(|_| anyhow!("the thread starting the container panicked"))?
        });
        started?;
        let started = self.ctr.start()?;
        let (tx, rx) = mpsc::channel();
        let out = started
            .child
            .stdout
            .take()
            .context("no stdout of the engine")?;
        let err = started
            .child
            .stderr
            .take()
            .context("no stderr of the engine")?;
        reader(out, tx.clone(), Msg::Out);
        reader(err, tx, Msg::Err);
        self.lines = Some(rx);
        let deadline = Instant::now() + SETUP;
        loop {
            if stop.load(Relaxed) {
                bail!("stopped before the controller's container was ready");
            }
            if Instant::now() > deadline {
                bail!(
                    "the controller's container was not ready within {} s; {}",
                    SETUP.as_secs(),
                    self.said()
                );
            }
            if let Some(realtime) = self.next_ready()? {
                let asks = self.config.policy != jitterlab_core::spec::Policy::Other;
                if !realtime && asks {
                    self.interrupt();
                    bail!(
                        "the controller in container {} is not real-time although its configuration asks for it; see `jitterlab check` (container-*); {}",
                        self.ctr.run.name,
                        self.said()
                    );
                }
                return Ok(());
            }
        }
    }

    /// Waits up to 100 ms for a line; `Some(realtime)` on `ready`.
    fn next_ready(&mut self) -> Result<Option<bool>> {
        let rx = self
            .lines
            .as_ref()
            .context("the container is not started")?;
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(Msg::Out(text)) => match parse_line(&text) {
                Ok(Line::Ready { realtime }) => Ok(Some(realtime)),
                _ => Ok(None),
            },
            Ok(Msg::Err(line)) => {
                self.keep(line);
                Ok(None)
            }
            Err(mpsc::RecvTimeoutError::Timeout) => Ok(None),
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(anyhow!(
                "the controller's container ended before it was ready; {}",
                self.said()
            )),
        }
    }

    /// Keeps a line of the container's stderr (echoed in a run).
    fn keep(&mut self, line: String) {
        self.tail.push(line);
    }

    /// What the container's stderr ended with.
    fn said(&self) -> String {
        self.tail.said()
    }

    /// Asks the controller to end (SIGINT to the engine's client).
    pub fn interrupt(&mut self) {
        if let Ok(s) = self.ctr.start() {
            s.interrupt();
        }
    }

    /// Ends the controller and returns its result, after checking that it
    /// had every real-time default its configuration asks for; `each` takes
    /// the cycles still in the pipe.
    pub fn finish(&mut self, each: &mut dyn FnMut(CycleRecord)) -> Result<RunResult> {
        self.interrupt();
        let deadline = Instant::now() + ENDING;
        let mut result = None;
        while result.is_none() && Instant::now() < deadline {
            self.samples.poll(each);
            let rx = self
                .lines
                .as_ref()
                .context("the container is not started")?;
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(Msg::Out(text)) => {
                    if let Ok(Line::Result { result: r, .. }) = parse_line(&text) {
                        result = Some(r);
                    }
                }
                Ok(Msg::Err(line)) => self.keep(line),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        self.samples.poll(each);
        let result = result.ok_or_else(|| {
            anyhow!(
                "the controller's container {} ended without its result; {}",
                self.ctr.run.name,
                self.said()
            )
        })?;
        let missing = missing_defaults(&result.realtime, &self.config);
        if !missing.is_empty() {
            bail!(
                "the controller in container {} did not get every real-time default ({}): host and container must not compare a real-time controller with one that is not",
                self.ctr.run.name,
                missing.join("; ")
            );
        }
        Ok(*result)
    }

    /// The container's part of the result's detail.
    pub fn detail(&self) -> serde_json::Value {
        self.ctr.detail()
    }

    /// Removes the container, its cgroup and the work directory, forgetting
    /// their journal entries; a line per step that did not go well.
    pub fn teardown(&mut self, root: &Path, journal: &mut Journal) -> Vec<String> {
        let mut lines: Vec<String> = self
            .ctr
            .teardown(root, journal)
            .into_iter()
            .filter(|l| !l.starts_with("removed ") && !l.starts_with("restored "))
            .collect();
        if let Some(w) = self.workdir.take() {
            if let Err(e) = w.remove(journal) {
                lines.push(format!("{e:#}"));
            }
        }
        lines
    }
}
