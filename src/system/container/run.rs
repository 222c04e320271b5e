//! One container: the engine's exact argument vector ([`ContainerRun::args`])
//! and its life — journaled before it starts, removed with `rm -f` on every
//! exit path ([`Started::stop`]).
//!
//! What a container gets, and why:
//!
//! | flag | why |
//! |---|---|
//! | `--rm`, `--name jitterlab-<pid>-<cell>` | gone when it ends; the journaled name `restore` removes after a `kill -9` |
//! | `--pull=never` | no registry is contacted: the image is local ([`super::image`]) |
//! | `--log-driver=none` | the streamed rows reach the attached client only, not a log file as well |
//! | `--network none` or `--network ns:/run/netns/NAME` | no network unless the probe needs a namespace (podman only) |
//! | `--cpuset-cpus LIST` | the probe's CPUs, and only those |
//! | `--cgroup-parent /jitterlab-ctr-…`, `--cpu-rt-period`, `--cpu-rt-runtime` | a real-time budget, where RT group scheduling exists ([`super::rt_parent`]); podman is told to manage cgroups itself (`--cgroup-manager=cgroupfs`) so the parent is a plain path |
//! | `--cap-add SYS_NICE --cap-add IPC_LOCK` | SCHED_FIFO and `mlockall` (podman drops both by default) |
//! | `--ulimit rtprio=99:99 --ulimit memlock=-1:-1` | the same for a process without the capabilities, where the limits can be raised ([`super::quirks`]) |
//! | `--ulimit nofile=1024:1024 --ulimit nproc=1024:1024` | only where this process's hard limits are below podman's defaults ([`super::quirks`]) |
//! | `--device /dev/cpu_dma_latency` | the PM QoS request is held from inside, for as long as the probe runs |
//!
//! The engine's client is started in a process group of its own with its
//! stdout and stderr piped to the caller; SIGINT sent to it is passed on
//! to the container (both engines proxy signals to an attached container),
//! which is how a measurement inside is ended early.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use jitterlab_core::units::CpuList;
use jitterlab_sys as sys;

use super::{output_within, Engine};
use crate::system::journal::undo::container::remove_container;
use crate::system::journal::{Journal, Undo};

/// The container's share of real-time time, under its parent group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RtLimits {
    /// `--cgroup-parent`: the parent group's path in every hierarchy.
    pub parent: String,
    /// `--cpu-rt-period`, µs.
    pub period_us: u64,
    /// `--cpu-rt-runtime`, µs.
    pub runtime_us: u64,
}

/// One container to run (module doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerRun {
    /// The engine.
    pub engine: Engine,
    /// The image ([`super::image::Image::tag`]).
    pub image: String,
    /// `jitterlab-<pid>-<cell>` ([`ContainerRun::name_for`]).
    pub name: String,
    /// `--cpuset-cpus`.
    pub cpus: Vec<usize>,
    /// The real-time budget, where RT group scheduling exists.
    pub rt: Option<RtLimits>,
    /// `--ulimit` values ([`super::quirks::Ulimits::flags`]).
    pub ulimits: Vec<String>,
    /// A device to pass (`/dev/cpu_dma_latency`), if any.
    pub dma_device: Option<String>,
    /// A network namespace (a name under `/run/netns`) to join; none: no
    /// network.
    pub network: Option<String>,
    /// Host directories bind-mounted into the container, `(host, inside)`.
    pub mounts: Vec<(String, String)>,
    /// jitterlab's arguments inside (`run cyclic …`).
    pub argv: Vec<String>,
}

impl ContainerRun {
    /// The name of the container of cell `cell` of the jitterlab with
    /// process id `pid`.
    pub fn name_for(pid: u32, cell: i64) -> String {
        format!("jitterlab-{pid}-{cell}")
    }

    /// The engine's argument vector (after the program's name); an error
    /// for what the engine cannot do (docker joining a named network
    /// namespace).
    pub fn args(&self) -> Result<Vec<String>> {
        let mut v: Vec<String> = Vec::new();
        let s = |x: &str| x.to_string();
        if self.engine == Engine::Podman && self.rt.is_some() {
            v.push(s("--cgroup-manager=cgroupfs"));
        }
        v.extend([
            s("run"),
            s("--rm"),
            s("--pull=never"),
            s("--log-driver=none"),
            s("--name"),
            self.name.clone(),
            s("--network"),
        ]);
        match (&self.network, self.engine) {
            (None, _) => v.push(s("none")),
            (Some(ns), Engine::Podman) => v.push(format!("ns:/run/netns/{ns}")),
            (Some(ns), Engine::Docker) => bail!(
                "docker cannot join the network namespace {ns} by its path; use --engine podman"
            ),
        }
        let cpus: CpuList = self.cpus.iter().copied().collect();
        v.extend([s("--cpuset-cpus"), cpus.to_string()]);
        if let Some(rt) = &self.rt {
            v.extend([
                s("--cgroup-parent"),
                rt.parent.clone(),
                s("--cpu-rt-period"),
                rt.period_us.to_string(),
                s("--cpu-rt-runtime"),
                rt.runtime_us.to_string(),
            ]);
        }
        v.extend([s("--cap-add"), s("SYS_NICE"), s("--cap-add"), s("IPC_LOCK")]);
        for u in &self.ulimits {
            v.extend([s("--ulimit"), u.clone()]);
        }
        if let Some(d) = &self.dma_device {
            v.extend([s("--device"), d.clone()]);
        }
        for (host, inside) in &self.mounts {
            v.extend([s("--volume"), format!("{host}:{inside}")]);
        }
        v.push(self.image.clone());
        v.extend(self.argv.iter().cloned());
        Ok(v)
    }

    /// Journals the container (`Undo::Container`), before it exists: the
    /// entry's id, for [`ContainerRun::spawn`]. Refuses first what the
    /// engine cannot do.
    pub fn journal(&self, journal: &mut Journal) -> Result<u64> {
        self.args()?;
        journal.record(Undo::Container {
            engine: self.engine.name().to_string(),
            name: self.name.clone(),
        })
    }

    /// Starts the container journaled as entry `id` ([`ContainerRun::journal`];
    /// forget it yourself when this fails): the engine's client in a
    /// process group of its own, stdin closed, stdout and stderr piped.
    pub fn spawn(&self, id: u64) -> Result<Started> {
        let args = self.args()?;
        let mut cmd = Command::new(self.engine.name());
        cmd.args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let child = cmd
            .spawn()
            .with_context(|| format!("cannot start {}", self.engine.name()))?;
        Ok(Started {
            child,
            engine: self.engine,
            name: self.name.clone(),
            id,
            removed: false,
        })
    }
}

/// A started container.
#[derive(Debug)]
pub struct Started {
    /// The engine's client: its stdout and stderr are the container's.
    pub child: Child,
    engine: Engine,
    name: String,
    id: u64,
    removed: bool,
}

/// How long to wait for the engine's client after the container is gone.
const CLIENT_WAIT: Duration = Duration::from_secs(10);

impl Started {
    /// Passes SIGINT to the container through the engine's client (which
    /// proxies it): the measurement inside ends early and says what it had.
    pub fn interrupt(&self) {
        let _ = sys::kill_process(self.child.id() as i32, sys::SIGINT);
    }

    /// The container's first process, as the host numbers it (`ENGINE
    /// inspect`), once it runs.
    pub fn host_pid(&self) -> Option<i32> {
        let mut cmd = Command::new(self.engine.name());
        cmd.args(["inspect", "--format", "{{.State.Pid}}", &self.name]);
        match output_within(&mut cmd, Duration::from_secs(30)) {
            Ok((true, out, _)) => out.trim().parse().ok().filter(|p| *p > 0),
            _ => None,
        }
    }

    /// Removes the container (`rm -f`, whether it still runs or not),
    /// waits for the engine's client and forgets the journal entry: the
    /// line saying what happened. A removal that failed stays journaled
    /// for `jitterlab restore`. Stopping twice does nothing.
    pub fn stop(&mut self, journal: &mut Journal) -> Option<String> {
        if self.removed {
            return None;
        }
        let (line, handled) = remove_container(self.engine.name(), &self.name);
        let deadline = std::time::Instant::now() + CLIENT_WAIT;
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) | Err(_) => break,
                Ok(None) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                Ok(None) => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break;
                }
            }
        }
        if handled {
            self.removed = true;
            if let Some(e) = journal.done_all([self.id]).pop() {
                return Some(format!("{line}; {e}"));
            }
        }
        Some(line)
    }
}

/// The device that holds the PM QoS request, when it exists under `root`.
pub fn dma_device(root: &Path) -> Option<String> {
    root.join("dev/cpu_dma_latency")
        .exists()
        .then(|| "/dev/cpu_dma_latency".to_string())
}
