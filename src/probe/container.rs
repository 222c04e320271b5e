//! The host side of a `container` cell, for every probe kind that can run
//! in a container: the kind's own code measures inside a container built
//! from this jitterlab (`crate::system::container`), and this side starts
//! it, stores what it streams back, and turns its result into the cell's.
//!
//! **Build** ([`build`], through the registry for any kind whose cell is
//! `container`): the engine is chosen (`--engine`, else podman, else
//! docker — each found by running `ENGINE version`), the host is checked
//! (root; no cgroup controller split between v1 and v2), the image of this
//! binary is made sure of, the resource limits the container can get are
//! worked out (`quirks`), and — where RT group scheduling exists — the
//! containers' parent cgroup is made and given its real-time budget
//! (journaled). The container is journaled too; it starts when the
//! lifecycle measures.
//!
//! **Measure** ([`ContainerProbe`], an [`ExternalProbe`]): the engine runs
//! `jitterlab __cell JSON` ([`InnerCell`]: the cell's one-cell spec, which
//! the probe inside measures as `jitterlab run KIND … --no-db --stream`
//! would) pinned to the cell's CPUs ([`container_cpus`]). Its stdout is the stream of `probe::container::stream`: when
//! its probe threads are set up it says whether they are real-time, and
//! the cell's start is recorded ([`ExternalRun::ready`]); then every window
//! row it drains arrives and is committed into the cell as a host cell's
//! rows are; last comes its versioned result. Meanwhile the probe threads
//! are looked at from the host through the container's pid
//! ([`host_view`]). A terminating signal is passed on to the container
//! (as SIGINT), whose
//! probe then ends early and reports what it had. Its stderr is echoed
//! (a run) or kept (a bench: its tail explains a failure).
//!
//! **Real time or nothing.** Host and container must never compare FIFO
//! with SCHED_OTHER: a cell whose probe inside did not get every real-time
//! default its configuration asks for ([`missing_defaults`]) fails
//! with the defaults that did not hold and why; when the probe says so at
//! its start, it is stopped at once.
//!
//! **Result.** The probe's result becomes the cell's: its statistics,
//! histograms, limits, real-time report and warnings, with the host's
//! snapshot and parameters; each thread's `tid` is the host's, its
//! counters what its `schedstat` grew by, and the result's `detail` gains
//! a `container` object (engine, image, container name, the engine's
//! arguments, what the host saw of the probe threads, notes on worked
//! around limits). The cell's key says `container`.
//!
//! **Teardown**, on every path: the container is removed (`rm -f`) and
//! the parent cgroup's values written back and the group removed, each
//! journal entry forgotten; after a `kill -9`, `jitterlab restore` does the
//! same from the journal.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use jitterlab_core::result::{Params, ProbeKind, RunResult};
use jitterlab_core::spec::Configuration;

use super::{Cell, ExternalProbe, ExternalRun, Finished, Probes};
use crate::error::bad;
use crate::output::errln;
use crate::probe::container::stream::{decode_histograms, parse_line, Line};
use crate::system::container::image;
use crate::system::container::prepare::{prepare, Prepared, Request};
use crate::system::container::rt_parent::RtParent;
use crate::system::container::run::ContainerRun;
use crate::system::container::{self as ctr, refuse_host};
use crate::system::journal::Journal;

pub mod host_view;
pub mod inner;
pub mod placement;
pub mod realtime;
pub mod stream;

use host_view::HostView;
pub use inner::InnerCell;
pub use placement::{container_cpus, not_applicable};
pub use realtime::missing_defaults;

/// How many lines of the container's stderr a failure quotes.
const STDERR_TAIL: usize = 12;

/// The last lines a container said on stderr, echoed as they come in a run
/// (`live`), quoted when it fails.
#[derive(Debug, Default)]
pub struct StderrTail {
    lines: Vec<String>,
    live: bool,
}

impl StderrTail {
    /// A tail that echoes each line when `live`.
    pub fn new(live: bool) -> StderrTail {
        StderrTail {
            lines: Vec::new(),
            live,
        }
    }

    /// Takes one line of the container's stderr.
    pub fn push(&mut self, line: String) {
        if self.live {
            let shown = line.strip_prefix("jitterlab: ").unwrap_or(&line);
            errln!("jitterlab: container: {}", crate::output::shown(shown));
        }
        self.lines.push(line);
        if self.lines.len() > STDERR_TAIL {
            self.lines.remove(0);
        }
    }

    /// What the container's stderr ended with, for a failure.
    pub fn said(&self) -> String {
        match self.lines.is_empty() {
            true => String::from("it said nothing on stderr"),
            false => format!("its stderr ended with: {}", self.lines.join(" | ")),
        }
    }
}

/// How long past the planned end the container may take before it is
/// removed (the image start, the probe's set-up, its last window).
const GRACE: Duration = Duration::from_secs(120);

/// The probe side of a `container` cell (module doc): its container is
/// journaled, its parent cgroup made; it starts when measured.
pub fn build(cell: &Cell<'_>, journal: &mut Journal) -> Result<Probes> {
    let spec = cell.spec;
    if let Some(why) = super::cell_kind_unavailable(spec, cell.cell, cell.root) {
        return Err(bad(why));
    }
    let config = spec.configurations[cell.cell.configuration].clone();
    let request = Request {
        engine: cell.engine,
        name: ContainerRun::name_for(std::process::id(), cell.number),
        cpus: container_cpus(spec, cell.cell, cell.plan),
        network: None,
        mounts: Vec::new(),
        argv: InnerCell::of(spec, cell.cell, cell.plan, cell.stop, cell.calibrated)?.argv()?,
        pm_qos: config.dma_latency,
    };
    let ctr = prepare(cell.root, &request, journal)?;
    // A run says at once what it found and did; a bench keeps it in the
    // cell's notes (its teardown lines).
    let live = cell.workdir.is_none();
    if live {
        for n in &ctr.notes {
            errln!("jitterlab: container: {n}");
        }
    }
    Ok(Probes::External(Box::new(ContainerProbe {
        root: cell.root.to_path_buf(),
        kind: cell.plan.kind,
        params: cell.plan.params.clone(),
        config,
        duration_ns: cell.plan.params.duration_ns,
        ctr,
        live,
    })))
}

/// What a bench's container cells will do on this host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BenchContainers {
    /// The bench has no container cell that can run.
    None,
    /// They run: the line the bench's plan prints about them (then
    /// [`prepare_image`]).
    Run(String),
    /// This host cannot run any container (no working engine, not root, a
    /// cgroup controller split between v1 and v2): every container cell is
    /// skipped with this reason, as a timerlat cell is on a kernel without
    /// the tracer, and the host cells run.
    Skipped(String),
}

/// Why this host cannot run a container cell at all, if it cannot (the
/// engine `--engine` names, else podman or docker): what [`check_bench`]
/// and [`super::cell_unavailable`] say. Changes nothing.
pub fn host_unavailable(root: &Path, engine: Option<ctr::Engine>) -> Option<String> {
    if let Err(e) = ctr::choose(engine) {
        return Some(format!("{e:#}"));
    }
    refuse_host(root, jitterlab_sys::effective_uid())
        .err()
        .map(|e| format!("{e:#}"))
}

/// What a bench's container cells will do on this host (see
/// [`BenchContainers`]). Changes nothing.
pub fn check_bench(
    root: &Path,
    spec: &jitterlab_core::spec::Spec,
    cells: &[jitterlab_core::spec::CellPlan],
    engine: Option<ctr::Engine>,
) -> Result<BenchContainers> {
    let runs = cells
        .iter()
        .any(|c| c.in_container() && super::cell_kind_unavailable(spec, c, root).is_none());
    if !runs {
        return Ok(BenchContainers::None);
    }
    if let Some(why) = host_unavailable(root, engine) {
        return Ok(BenchContainers::Skipped(format!(
            "  containers: every container cell will be skipped: {why}"
        )));
    }
    let (engine, _) = ctr::choose(engine)?;
    let rt = match RtParent::plan(root) {
        Ok(Some(p)) => format!(
            ", under a journaled parent cgroup given {} µs of real time per {} µs",
            p.budget().runtime_us,
            p.budget().period_us
        ),
        Ok(None) => String::new(),
        Err(e) => format!(" (no real-time budget for them now: {e:#})"),
    };
    Ok(BenchContainers::Run(format!(
        "  containers: each container cell's probe runs in a {} container of this jitterlab (image {}, built before the first cell if missing){rt}; each is removed after its cell",
        engine.name(),
        image::tag(&image::own_build_id()?)
    )))
}

/// Makes sure the engine has this binary's image before a bench's first
/// cell (building it, when needed, is said on stderr).
pub fn prepare_image(engine: Option<ctr::Engine>) -> Result<()> {
    let (engine, found) = ctr::choose(engine)?;
    errln!("jitterlab: container: {found}");
    image::ensure(engine).map(drop)
}

/// The probe side of a `container` cell (module doc).
pub struct ContainerProbe {
    root: PathBuf,
    kind: ProbeKind,
    params: Params,
    config: Configuration,
    duration_ns: Option<u64>,
    ctr: Prepared,
    live: bool,
}

/// The names of a `kind` probe's threads on `cpus` (`KIND-cpuN`, as the
/// lifecycle names them).
fn thread_names(kind: ProbeKind, cpus: &[usize]) -> Vec<String> {
    cpus.iter()
        .map(|c| format!("{}-cpu{c}", kind.name()))
        .collect()
}

/// What the reader threads hand the measuring loop.
enum Msg {
    Out(String),
    Err(String),
    OutEnd,
    ErrEnd,
}

/// Reads `r` line by line into `tx` as `wrap`, then `end`.
fn reader(r: impl Read + Send + 'static, tx: mpsc::Sender<Msg>, wrap: fn(String) -> Msg, end: Msg) {
    std::thread::spawn(move || {
        for line in BufReader::new(r).lines() {
            match line {
                Ok(l) => {
                    if tx.send(wrap(l)).is_err() {
                        return;
                    }
                }
                Err(_) => break,
            }
        }
        let _ = tx.send(end);
    });
}

impl ContainerProbe {
    /// The `container` object of the result's detail, with what the host
    /// saw of the probe threads.
    fn detail(&self, view: Option<&HostView>) -> serde_json::Value {
        let mut d = self.ctr.detail();
        d["host_view"] = serde_json::to_value(view).unwrap_or_default();
        d
    }

    /// Turns the probe's result into the cell's (module doc).
    fn finish(
        &self,
        mut result: RunResult,
        histograms: &[crate::probe::container::stream::WireHistogram],
        view: Option<&HostView>,
    ) -> Result<Finished> {
        let missing = missing_defaults(&result.realtime, &self.config);
        if !missing.is_empty() {
            bail!(
                "the probe in container {} did not get every real-time default ({}): host and container must not compare a real-time probe with one that is not; see `jitterlab check` (container-*) for what this host lacks",
                self.ctr.run.name,
                missing.join("; ")
            );
        }
        if result.probe != self.kind {
            bail!(
                "the container measured a {} probe, not {}",
                result.probe.name(),
                self.kind.name()
            );
        }
        for t in result.threads.iter_mut() {
            let name = &format!("{}-cpu{}", self.kind.name(), t.cpu);
            if let Some(v) = view {
                if let Some(tid) = v.host_tid(name) {
                    t.tid = tid;
                }
                t.counters.extend(v.counters(name));
            }
        }
        let mut detail = match result.detail.take() {
            Some(serde_json::Value::Object(m)) => m,
            Some(other) => {
                let mut m = serde_json::Map::new();
                m.insert("probe".into(), other);
                m
            }
            None => serde_json::Map::new(),
        };
        detail.insert("container".into(), self.detail(view));
        Ok(Finished {
            realtime: Some(result.realtime),
            limits: result.limits,
            threads: result.threads,
            combined: result.combined,
            histograms: decode_histograms(self.kind, histograms)?,
            warnings: result.warnings,
            detail: serde_json::Value::Object(detail),
            elapsed_ns: result.elapsed_ns,
            interrupted: result.interrupted,
        })
    }
}

impl ExternalProbe for ContainerProbe {
    fn params(&self) -> Params {
        self.params.clone()
    }

    fn measure(&mut self, ext: &mut ExternalRun<'_>) -> Result<Finished> {
        let run = self.ctr.run.clone();
        if self.live {
            errln!(
                "jitterlab: container: running {} in {} container {} on CPUs {:?} (image {})",
                self.kind.name(),
                run.engine.name(),
                run.name,
                run.cpus,
                run.image
            );
        }
        let cpus = match self.kind.descriptor().every_probe_cpu {
            true => self.params.cpus.clone(),
            false => self.params.cpus.iter().take(1).copied().collect(),
        };
        let names = thread_names(self.kind, &cpus);
        let started = self.ctr.start()?;
        let (tx, rx) = mpsc::channel();
        let stdout = started
            .child
            .stdout
            .take()
            .context("no stdout of the engine")?;
        let stderr = started
            .child
            .stderr
            .take()
            .context("no stderr of the engine")?;
        reader(stdout, tx.clone(), Msg::Out, Msg::OutEnd);
        reader(stderr, tx, Msg::Err, Msg::ErrEnd);

        let deadline = self
            .duration_ns
            .map(|d| Instant::now() + Duration::from_nanos(d) + GRACE);
        let mut tail = StderrTail::new(self.live);
        let (mut out_open, mut err_open) = (true, true);
        let mut ready = false;
        let mut stopping = false;
        let mut view: Option<HostView> = None;
        let mut outcome: Option<(
            Box<RunResult>,
            Vec<crate::probe::container::stream::WireHistogram>,
        )> = None;
        let mut bad_line: Option<String> = None;
        while out_open || err_open {
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(Msg::Out(text)) => match parse_line(&text) {
                    Ok(Line::Ready { realtime }) => {
                        ready = true;
                        ext.ready(realtime)?;
                        if let Some(pid) = started.host_pid() {
                            view = Some(HostView::read(pid, &names, &self.root));
                        }
                        let asks = self.config.policy != jitterlab_core::spec::Policy::Other
                            && self.config.dma_latency;
                        if !realtime && asks && !stopping {
                            // It fails at the end; no need to measure first.
                            started.interrupt();
                            stopping = true;
                        }
                    }
                    Ok(Line::Row(w)) => {
                        ext.rows(&[w.row(self.kind)?]);
                        if let Some(v) = view.as_mut() {
                            v.sample();
                        }
                    }
                    Ok(Line::Result { result, histograms }) => outcome = Some((result, histograms)),
                    Err(_) => {
                        bad_line.get_or_insert(text);
                    }
                },
                Ok(Msg::Err(line)) => tail.push(line),
                Ok(Msg::OutEnd) => out_open = false,
                Ok(Msg::ErrEnd) => err_open = false,
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
            if ext.signalled.load(std::sync::atomic::Ordering::Relaxed) && !stopping {
                started.interrupt();
                stopping = true;
            }
            if deadline.is_some_and(|d| Instant::now() > d) {
                bail!(
                    "container {} was still running {} s after its planned end; it is removed",
                    run.name,
                    GRACE.as_secs()
                );
            }
            ext.tick();
        }
        let said = tail.said();
        let Some((result, histograms)) = outcome else {
            let when = match ready {
                true => "without its result",
                false => "before its probe was ready",
            };
            let garbled = bad_line
                .map(|l| format!("; it wrote {l:?} on stdout"))
                .unwrap_or_default();
            return Err(anyhow!(
                "container {} ended {when}{garbled}; {said}",
                run.name
            ));
        };
        self.finish(*result, &histograms, view.as_ref())
    }

    fn teardown(&mut self, root: &Path, journal: &mut Journal) -> Vec<String> {
        // A bench keeps what was found and done in the cell's notes (a run
        // said it at once); both get every step that did not go as it
        // should, each of which stays journaled for `jitterlab restore`.
        let mut lines = match self.live {
            true => Vec::new(),
            false => std::mem::take(&mut self.ctr.notes),
        };
        let steps = self.ctr.teardown(root, journal);
        lines.extend(steps.into_iter().filter(|l| !went_well(l)));
        lines
    }
}

/// True for a teardown line that says a step went as it should.
fn went_well(line: &str) -> bool {
    line.starts_with("removed container ")
        || (line.starts_with("container ") && line.ends_with("was already gone"))
        || line.starts_with("restored ")
        || line.starts_with("removed the containers' cgroup ")
        || line.starts_with("the containers' cgroup ")
}

#[cfg(test)]
mod tests;
