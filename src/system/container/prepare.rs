//! One container, from request to removal: what every user of the runner
//! does around it, in one place. A probe cell's host side
//! (`crate::probe::container`) uses it for the whole probe; a probe with
//! several roles can use it for one of them (the round trip's controller:
//! its `jitterlab run …` arguments, its CPUs, the network namespace it
//! joins).
//!
//! [`prepare`] chooses the engine (what it found is said), refuses a host
//! that cannot run a container ([`super::refuse_host`]), makes sure of the
//! image, works out the resource limits ([`super::quirks`]), refuses what
//! the engine cannot do — all before anything changes — then makes the
//! real-time parent cgroup where RT group scheduling exists
//! ([`super::rt_parent`]) and journals the container. [`Prepared::start`]
//! starts it; [`Prepared::teardown`] removes it and the parent cgroup on
//! every path, forgetting their journal entries.

use std::path::Path;

use anyhow::{Context, Result};

use super::image::{self, Image};
use super::quirks::read_ulimits;
use super::rt_parent::RtParent;
use super::run::{dma_device, ContainerRun, RtLimits, Started};
use super::{choose, refuse_host, Engine};
use crate::system::journal::Journal;

/// What to run in a container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// `--engine`; `None`: podman, else docker, whichever works.
    pub engine: Option<Engine>,
    /// The container's name ([`ContainerRun::name_for`]).
    pub name: String,
    /// `--cpuset-cpus`.
    pub cpus: Vec<usize>,
    /// A network namespace (a name under `/run/netns`) to join; `None`:
    /// no network.
    pub network: Option<String>,
    /// Host directories bind-mounted into the container, `(host, inside)`.
    pub mounts: Vec<(String, String)>,
    /// jitterlab's arguments inside (`run cyclic …`).
    pub argv: Vec<String>,
    /// Whether the probe inside holds the PM QoS request
    /// (`--device /dev/cpu_dma_latency`).
    pub pm_qos: bool,
}

/// A container, prepared (module doc).
#[derive(Debug)]
pub struct Prepared {
    /// Its engine invocation.
    pub run: ContainerRun,
    /// Its image.
    pub image: Image,
    /// Its real-time parent cgroup, where RT group scheduling exists.
    pub rt: Option<RtParent>,
    /// What was found and done, one line each (the engine, limits worked
    /// around, the parent cgroup's budget).
    pub notes: Vec<String>,
    /// The container's journal entry, until it is removed.
    entry: Option<u64>,
    started: Option<Started>,
}

/// Prepares the container of `req` on the machine under `root` (module
/// doc): bad input (exit 2, nothing changed) for what cannot run here.
pub fn prepare(root: &Path, req: &Request, journal: &mut Journal) -> Result<Prepared> {
    let (engine, found) = choose(req.engine)?;
    refuse_host(root, jitterlab_sys::effective_uid())?;
    let image = image::ensure(engine)?;
    let ulimits = read_ulimits(root, engine);
    let mut notes = vec![format!("container engine: {found}")];
    notes.extend(ulimits.notes.iter().cloned());
    let mut rt = RtParent::plan(root)?;
    let run = ContainerRun {
        engine,
        image: image.tag.clone(),
        name: req.name.clone(),
        cpus: req.cpus.clone(),
        rt: rt.as_ref().map(|p| RtLimits {
            parent: p.cgroup_parent(),
            period_us: p.budget().period_us,
            runtime_us: p.budget().runtime_us,
        }),
        ulimits: ulimits.flags,
        dma_device: req.pm_qos.then(|| dma_device(root)).flatten(),
        network: req.network.clone(),
        mounts: req.mounts.clone(),
        argv: req.argv.clone(),
    };
    if req.pm_qos && run.dma_device.is_none() {
        notes.push(
            "no /dev/cpu_dma_latency on this host: the container cannot hold a PM QoS request"
                .into(),
        );
    }
    // What the engine cannot do is refused before anything changes.
    run.args()?;
    if let Some(p) = rt.as_mut() {
        notes.push(p.apply(root, journal)?);
    }
    let entry = match run.journal(journal) {
        Ok(id) => id,
        Err(e) => {
            if let Some(p) = rt.as_mut() {
                p.restore(root, journal);
            }
            return Err(e);
        }
    };
    Ok(Prepared {
        run,
        image,
        rt,
        notes,
        entry: Some(entry),
        started: None,
    })
}

impl Prepared {
    /// A container prepared without an engine: nothing journaled, nothing
    /// made (tests of what uses one).
    #[cfg(test)]
    pub fn for_tests(run: ContainerRun, image: Image, notes: Vec<String>) -> Prepared {
        Prepared {
            run,
            image,
            rt: None,
            notes,
            entry: None,
            started: None,
        }
    }

    /// Starts the container (once): the engine's client, whose stdout and
    /// stderr are the container's.
    pub fn start(&mut self) -> Result<&mut Started> {
        if self.started.is_none() {
            let entry = self.entry.context("the container is not journaled")?;
            self.started = Some(self.run.spawn(entry)?);
        }
        Ok(self.started.as_mut().expect("started above"))
    }

    /// Removes the container (when it was started) and the parent cgroup,
    /// forgetting their journal entries: one line per step (`removed …`,
    /// `restored …`, or what failed, which stays journaled for `jitterlab
    /// restore`). Tearing down twice does nothing.
    pub fn teardown(&mut self, root: &Path, journal: &mut Journal) -> Vec<String> {
        let mut lines = Vec::new();
        match self.started.as_mut() {
            Some(s) => lines.extend(s.stop(journal)),
            // Journaled, never started: nothing to remove.
            None => {
                lines.extend(journal.done_all(self.entry));
            }
        }
        self.entry = None;
        if let Some(p) = self.rt.as_mut() {
            lines.extend(p.restore(root, journal));
        }
        lines
    }

    /// The `container` object of a result's detail: engine, image,
    /// container, CPUs, the parent cgroup and its budget, the engine's
    /// arguments, the notes.
    pub fn detail(&self) -> serde_json::Value {
        serde_json::json!({
            "engine": self.run.engine.name(),
            "image": self.image.tag,
            "build_id": self.image.build_id,
            "name": self.run.name,
            "cpus": self.run.cpus,
            "cgroup_parent": self.rt.as_ref().map(|p| p.cgroup_parent()),
            "rt_runtime_us": self.rt.as_ref().map(|p| p.budget().runtime_us),
            "rt_period_us": self.rt.as_ref().map(|p| p.budget().period_us),
            "args": self.run.args().unwrap_or_default(),
            "notes": self.notes,
        })
    }
}
