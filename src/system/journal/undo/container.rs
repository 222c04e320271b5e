//! Undoing what a container cell made: the container itself (`ENGINE rm
//! -f NAME`) and the parent cgroup that gave it a real-time budget,
//! removed from every hierarchy the engine made it in.
//!
//! Both the normal end of a cell ([`crate::system::container::run`],
//! [`crate::system::container::rt_parent`])
//! and `jitterlab restore` after a `kill -9` (the journal's replay) need
//! these steps, so they live below the journal, as [`super::cgroup`] does: this
//! module does not use the journal. The engine ([`Engine`]) and the bounded
//! wait for its answer ([`output_within`]) live here too, so this step does
//! not reach up into the container module that uses them.
//!
//! **Only jitterlab's.** A container is removed only when its name has
//! the shape jitterlab gives ([`is_container_name`]: `jitterlab-<pid>-<cell>`),
//! a parent cgroup only when its name is [`PARENT_PREFIX`] and 16 hex
//! digits and its directory sits directly in a cgroup mount point listed
//! in `<sysroot>/proc/self/mountinfo`; an edited journal cannot make
//! `restore` remove anything else.

use std::fs;
use std::io::ErrorKind;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::cgroup_layout::{under, CgroupLayout};

/// The name prefix of the containers' parent cgroup.
pub const PARENT_PREFIX: &str = "jitterlab-ctr-";

/// The parent cgroup's files jitterlab writes (journaled, on the
/// settings' allow-list).
pub const RT_FILES: [&str; 2] = ["cpu.rt_period_us", "cpu.rt_runtime_us"];

/// A container engine jitterlab can drive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// Podman (Debian package `podman`): the default.
    Podman,
    /// Docker (Debian package `docker.io`), where its daemon runs.
    Docker,
}

impl Engine {
    /// Every engine, in the order they are tried.
    pub const ALL: [Engine; 2] = [Engine::Podman, Engine::Docker];

    /// The engine's program and the name `--engine` takes.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Podman => "podman",
            Engine::Docker => "docker",
        }
    }

    /// The engine named `name`.
    pub fn parse(name: &str) -> Option<Engine> {
        Engine::ALL.into_iter().find(|e| e.name() == name)
    }

    /// The Debian package that installs it.
    pub fn package(self) -> &'static str {
        match self {
            Engine::Podman => "podman",
            Engine::Docker => "docker.io",
        }
    }
}

/// Runs `cmd` (stdin closed, output captured) for at most `wait`: whether
/// it succeeded, its stdout and its stderr; an error (with what to do)
/// when it cannot start or takes longer (it is killed then).
pub fn output_within(
    cmd: &mut Command,
    wait: Duration,
) -> std::result::Result<(bool, String, String), String> {
    let program = cmd.get_program().to_string_lossy().to_string();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    // Both pipes are drained on threads, so a chatty program never blocks
    // on a full pipe while it is waited for.
    let drain = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(mut r) = r {
                let _ = r.read_to_string(&mut text);
            }
            text
        })
    };
    let out = drain(
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let err = drain(
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    );
    let deadline = Instant::now() + wait;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "{program} did not answer within {} s and was killed",
                    wait.as_secs()
                ));
            }
            Err(e) => return Err(format!("cannot wait for {program}: {e}")),
        }
    };
    let out = out.join().unwrap_or_default();
    let err = err.join().unwrap_or_default();
    Ok((status.success(), out, err))
}

/// How long `rm -f` may take.
const RM_WAIT: Duration = Duration::from_secs(60);

/// True for a name jitterlab gives a container: `jitterlab-<pid>-<cell>`,
/// both decimal numbers.
pub fn is_container_name(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("jitterlab-") else {
        return false;
    };
    let Some((pid, cell)) = rest.split_once('-') else {
        return false;
    };
    let number = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    number(pid) && number(cell)
}

/// The argument vector that removes container `name` now, whatever it is
/// doing (podman: no grace period; docker's `rm -f` kills at once).
pub fn rm_args(engine: Engine, name: &str) -> Vec<String> {
    let mut v = vec!["rm".to_string(), "-f".to_string()];
    if engine == Engine::Podman {
        v.extend(["--time".to_string(), "0".to_string()]);
    }
    v.push(name.to_string());
    v
}

/// Removes the container `name` of `engine` (its program's name as
/// journaled): the line to print and whether the entry is handled. A
/// container that is already gone is handled; a name or engine jitterlab
/// would not have used is left alone (handled, with the reason).
pub fn remove_container(engine: &str, name: &str) -> (String, bool) {
    let Some(e) = Engine::parse(engine) else {
        return (
            format!("left container {name} alone: {engine:?} is not an engine jitterlab drives"),
            true,
        );
    };
    if !is_container_name(name) {
        return (
            format!("left container {name} alone: it is not a name jitterlab gives its containers"),
            true,
        );
    }
    match output_within(Command::new(engine).args(rm_args(e, name)), RM_WAIT) {
        Ok((true, _, _)) => (format!("removed container {name} ({engine})"), true),
        Ok((false, out, err)) => {
            let text = format!("{out}{err}");
            if text.to_lowercase().contains("no such container") {
                (
                    format!("container {name} ({engine}) was already gone"),
                    true,
                )
            } else {
                (
                    format!(
                        "could not remove container {name}: `{engine} rm -f {name}` said: {}; remove it by hand",
                        text.trim()
                    ),
                    false,
                )
            }
        }
        Err(e) if e.starts_with("cannot run") => (
            format!(
                "container {name} was left to {engine}, which is gone ({e}): nothing to remove"
            ),
            true,
        ),
        Err(e) => (
            format!(
                "could not remove container {name}: {e}; remove it by hand ({engine} rm -f {name})"
            ),
            false,
        ),
    }
}

/// Why `path` is not a parent cgroup jitterlab made under `root`, or the
/// group's name.
fn check_parent(root: &Path, path: &Path, layout: &CgroupLayout) -> Result<String, String> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string();
    if !crate::system::has_shape(&name, PARENT_PREFIX) {
        return Err("it is not a name jitterlab gives its containers' cgroup".into());
    }
    let in_mount = path
        .parent()
        .is_some_and(|p| layout.mounts().iter().any(|m| under(root, m) == p));
    if !in_mount {
        return Err("it is not directly in a cgroup mount point".into());
    }
    Ok(name)
}

/// Removes the containers' parent cgroup `path` (in the `cpu` hierarchy,
/// under `root`) from every cgroup hierarchy: in each, the (empty) groups
/// the engine made in it first, deepest first, then the group; in the
/// `cpu` one, the `files` the fake-tree stand-in created before its
/// directory. The line to print and whether the entry is handled.
pub fn remove_parent(root: &Path, path: &Path, files: &[String]) -> (String, bool) {
    let layout = CgroupLayout::read(root);
    let name = match check_parent(root, path, &layout) {
        Ok(n) => n,
        Err(why) => return (format!("left {} alone: {why}", path.display()), true),
    };
    if files.iter().any(|f| !RT_FILES.contains(&f.as_str())) {
        return (
            format!(
                "left {} alone: its journal entry lists files jitterlab never creates",
                path.display()
            ),
            true,
        );
    }
    for f in files {
        match fs::remove_file(path.join(f)) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => {
                return (
                    format!("could not remove {}: {e}", path.join(f).display()),
                    false,
                )
            }
        }
    }
    let mut removed = 0;
    let mut failed = Vec::new();
    let mut dirs: Vec<PathBuf> = layout
        .mounts()
        .iter()
        .map(|m| under(root, m).join(&name))
        .collect();
    if !dirs.iter().any(|d| d == path) {
        dirs.push(path.to_path_buf());
    }
    for dir in dirs {
        match remove_tree(&dir) {
            Ok(true) => removed += 1,
            Ok(false) => {}
            Err(e) => failed.push(e),
        }
    }
    if !failed.is_empty() {
        return (
            format!(
                "could not remove the containers' cgroup {name}: {}; remove what is left by hand (rmdir, deepest first) once no process is in it",
                failed.join("; ")
            ),
            false,
        );
    }
    match removed {
        0 => (
            format!("the containers' cgroup {name} was already gone"),
            true,
        ),
        n => (
            format!(
                "removed the containers' cgroup {name} ({n} {})",
                if n == 1 { "hierarchy" } else { "hierarchies" }
            ),
            true,
        ),
    }
}

/// Removes the directory `dir` of a cgroup file system and the groups in
/// it, deepest first (`rmdir` only: a cgroup's files go with it, and a
/// group that still holds a process refuses). `Ok(false)` when it did not
/// exist.
fn remove_tree(dir: &Path) -> Result<bool, String> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(format!("cannot read {}: {e}", dir.display())),
    };
    for entry in entries.flatten() {
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if is_dir {
            remove_tree(&entry.path())?;
        }
    }
    match fs::remove_dir(dir) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
        Err(e) => Err(format!("cannot remove {}: {e}", dir.display())),
    }
}
