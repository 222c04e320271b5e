//! Deployment `container`: the probe side of a cell runs inside a
//! container built from the running jitterlab, with every real-time default
//! it has on the host — or the cell fails and says why.
//!
//! A soft PLC in a container ([Red Hat controls]'s vPLC, [Red Hat caterpillar]'s podman runs) is
//! only comparable with one on the host when the container gets what the
//! host process gets: SCHED_FIFO at the same priority, the same CPU,
//! locked memory, the PM QoS request. None of that is free in a container,
//! and what is missing is silent: podman drops `CAP_SYS_NICE`, and with
//! cgroup v1 and RT group scheduling a new `cpu` cgroup has
//! `cpu.rt_runtime_us = 0`, so `sched_setscheduler` fails inside — and
//! `--cpu-rt-runtime` alone fails too, because the engine's own parent
//! cgroup has no real-time budget either. This module gathers what it
//! takes:
//!
//! - [`Engine`]: podman (the default) or docker, found by running `ENGINE
//!   version` (a program on `PATH` is not enough: `/usr/local/bin/docker`
//!   may be a client without a daemon); [`choose`] says what it found and,
//!   when nothing works, what to install.
//! - [`image`]: the image, built locally `FROM scratch` from
//!   `/proc/self/exe` and the shared libraries it links (with the dynamic
//!   loader), tagged `localhost/jitterlab:<build id>` and rebuilt only when
//!   the binary's build id changes; no registry is contacted.
//! - [`quirks`]: what on this host keeps a container from running or from
//!   being real-time — a cgroup controller split between v1 and v2 (crun
//!   refuses "hybrid mode"), hard resource limits below the engine's
//!   defaults, RT group scheduling — detected from the sysroot and
//!   explained with the fix; jitterlab never changes them silently.
//! - [`rt_parent`]: the journaled setting that gives a jitterlab parent
//!   cgroup (`--cgroup-parent`) a real-time period and runtime where
//!   `cpu.rt_runtime_us` exists, and removes it afterwards.
//! - [`run`]: the engine's exact argument vector for one container
//!   (`--cpuset-cpus`, `--cap-add SYS_NICE --cap-add IPC_LOCK`, the rlimits,
//!   `--device /dev/cpu_dma_latency`, the cgroup parent and its budget, an
//!   optional network namespace to join, `--pull=never`, `--rm`, a name
//!   `jitterlab-<pid>-<cell>`), started journaled and removed (`rm -f`) on
//!   every exit path.
//! - [`crate::system::journal::undo::container`]: removing a container and
//!   the parent cgroup, for both the normal end and `jitterlab restore`
//!   after a `kill -9` (it sits below the journal, with the engine's name
//!   ([`Engine`]) and its bounded wait ([`output_within`])).
//! - [`prepare`]: all of the above around one container, from its request
//!   (an argument vector for `jitterlab …` inside, its CPUs, an optional
//!   network namespace to join, whether it holds the PM QoS request) to its
//!   removal.
//!
//! The runner is generic: what runs inside is an argument vector for
//! `jitterlab …`, the CPUs of `--cpuset-cpus` and an optional network
//! namespace, so a probe with several roles (the round trip's controller)
//! can run one of them in a container. The host side of a probe cell —
//! building the inner `jitterlab run` and reading what it streams back —
//! is `crate::probe::container`.
//!
//! The documents cited here are listed in `docs/design.md`.

pub mod image;
pub mod prepare;
pub mod quirks;
pub mod rt_parent;
pub mod run;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::Result;

use crate::error::bad;
pub use crate::system::journal::undo::container::{output_within, Engine};

/// What running `ENGINE version` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineState {
    /// No such program on `PATH`.
    Missing,
    /// The program is there (at that path) but `version` failed: its last
    /// line of output.
    Broken(PathBuf, String),
    /// It answers: its path and version.
    Working(PathBuf, String),
}

/// One engine and its state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineProbe {
    /// Which engine.
    pub engine: Engine,
    /// What `ENGINE version` said.
    pub state: EngineState,
}

impl EngineProbe {
    /// One line: `podman 4.3.1 (/usr/bin/podman) works`, `docker: not
    /// installed`, `docker (/usr/local/bin/docker) does not answer: …`.
    pub fn describe(&self) -> String {
        let name = self.engine.name();
        match &self.state {
            EngineState::Missing => format!("{name}: not installed"),
            EngineState::Broken(path, why) => format!(
                "{name} ({}) does not answer `{name} version`: {why}",
                path.display()
            ),
            EngineState::Working(path, version) => {
                format!("{name} {version} ({}) works", path.display())
            }
        }
    }
}

/// How long `ENGINE version` may take (a docker client waits for an
/// unresponsive daemon).
const VERSION_WAIT: Duration = Duration::from_secs(15);

/// Runs `ENGINE version` and says what it found.
pub fn probe(engine: Engine) -> EngineProbe {
    let name = engine.name();
    let Some(path) = find_program(name) else {
        return EngineProbe {
            engine,
            state: EngineState::Missing,
        };
    };
    let state = match output_within(Command::new(&path).arg("version"), VERSION_WAIT) {
        Ok((true, out, _)) => EngineState::Working(path, version_of(&out)),
        Ok((false, out, err)) => {
            let text = if err.trim().is_empty() { out } else { err };
            let last = text
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("no output")
                .trim()
                .to_string();
            EngineState::Broken(path, last)
        }
        Err(e) => EngineState::Broken(path, e),
    };
    EngineProbe { engine, state }
}

/// The first `Version:` of `ENGINE version`'s output (the client's), or
/// `unknown version`.
pub fn version_of(text: &str) -> String {
    text.lines()
        .find_map(|l| l.trim().strip_prefix("Version:"))
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "unknown version".into())
}

/// The engine to use: `asked` if it works, else (nothing asked) podman,
/// else docker. Bad input (exit 2) naming what was found and what to
/// install when none works. Returns the engine and one line saying what
/// was found.
pub fn choose(asked: Option<Engine>) -> Result<(Engine, String)> {
    if let Some(engine) = asked {
        let p = probe(engine);
        return match &p.state {
            EngineState::Working(..) => Ok((engine, p.describe())),
            EngineState::Missing => Err(bad(format!(
                "--engine {}: {} is not installed; apt-get install {}",
                engine.name(),
                engine.name(),
                engine.package()
            ))),
            EngineState::Broken(..) => Err(bad(format!(
                "--engine {}: {}; start its service, or use another --engine",
                engine.name(),
                p.describe()
            ))),
        };
    }
    let mut found = Vec::new();
    for engine in Engine::ALL {
        let p = probe(engine);
        if matches!(p.state, EngineState::Working(..)) {
            let mut line = p.describe();
            if !found.is_empty() {
                line = format!("{line} (podman: {})", found.join("; "));
            }
            return Ok((engine, line));
        }
        found.push(p.describe());
    }
    Err(bad(format!(
        "deployment container needs a container engine, and none works here ({}); apt-get install podman",
        found.join("; ")
    )))
}

/// The path of `program` on `PATH` (an executable file), if any.
pub fn find_program(program: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into());
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// Refuses (bad input, exit 2) a host on which a container cannot run or
/// cannot be real-time whatever jitterlab does: not root, or a cgroup
/// controller split between v1 and v2 (crun refuses hybrid mode). Says
/// how to fix each. Reads only, under `root`.
pub fn refuse_host(root: &Path, uid: u32) -> Result<()> {
    if uid != 0 {
        return Err(bad(
            "deployment container needs root: jitterlab journals a parent cgroup and starts the container with SYS_NICE and IPC_LOCK, which a rootless engine cannot grant beyond your own limits; run jitterlab as root (sudo)",
        ));
    }
    let layout = quirks::CgroupLayout::read(root);
    if let Some(split) = layout.split() {
        return Err(bad(format!("{}; fix: {}", split.summary(), split.fix())));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
