//! An observed task inside a container (`--container NAME --comm TASK`):
//! its threads found from the host.
//!
//! The tracepoints are host-wide, so the task is observed from the host
//! as any other; what the container changes is which thread the name
//! means. The engine (podman, else docker: the first that answers, as
//! `crate::system::container::probe` finds them) says the host pid of the
//! container's init (`ENGINE inspect --format '{{.State.Pid}} …'`); the
//! container's processes are those in the same pid namespace (the same
//! `/proc/PID/ns/pid` link), all visible in the host's `/proc`, and the
//! thread is chosen by name among their threads only — a thread of that
//! name on the host or in another container is never taken.
//!
//! Refused (exit 2) with what to do: no engine, no container of that
//! name, a container not running, no thread of that name in it.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::Result;

use super::target::{threads_of, Candidate};
use crate::error::bad;
use crate::system::container::{output_within, probe, Engine, EngineState};

/// How long `ENGINE inspect` may take.
const INSPECT_WAIT: Duration = Duration::from_secs(15);

/// What `ENGINE inspect` says of a container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State {
    /// The host pid of its init; 0 when it does not run.
    pub pid: u32,
    /// Whether it runs.
    pub running: bool,
    /// The engine's word for its state (`running`, `exited`, `created`).
    pub status: String,
}

/// The `--format` of [`inspect`].
const FORMAT: &str = "{{.State.Pid}} {{.State.Running}} {{.State.Status}}";

/// Parses `ENGINE inspect --format FORMAT`'s one line.
pub fn parse_state(line: &str) -> Option<State> {
    let mut it = line.split_whitespace();
    let pid = it.next()?.parse().ok()?;
    let running = match it.next()? {
        "true" => true,
        "false" => false,
        _ => return None,
    };
    let status = it.next().unwrap_or("unknown").to_string();
    Some(State {
        pid,
        running,
        status,
    })
}

/// The first container engine that answers, or why none does.
fn engine(name: &str) -> Result<Engine> {
    let mut found = Vec::new();
    for engine in Engine::ALL {
        let p = probe(engine);
        if matches!(p.state, EngineState::Working(..)) {
            return Ok(engine);
        }
        found.push(p.describe());
    }
    Err(bad(format!(
        "--container {name}: finding a container needs a container engine, and none works here ({}); apt-get install podman",
        found.join("; ")
    )))
}

/// The host pid of running container `name`'s init, through the engine.
pub fn init_pid(name: &str) -> Result<u32> {
    let engine = engine(name)?;
    let program = engine.name();
    let asked = output_within(
        Command::new(program).args(["inspect", "--type", "container", "--format", FORMAT, name]),
        INSPECT_WAIT,
    )
    .map_err(|e| bad(format!("--container {name}: {e}")))?;
    let state = match asked {
        (true, out, _) => parse_state(out.lines().next().unwrap_or_default()),
        (false, _, err) if err.to_lowercase().contains("no such") => {
            return Err(bad(format!(
                "--container {name}: {program} has no container of that name; `{program} ps -a` lists them"
            )))
        }
        (false, out, err) => {
            let text = if err.trim().is_empty() { out } else { err };
            return Err(bad(format!(
                "--container {name}: `{program} inspect` failed: {}",
                text.trim()
            )));
        }
    };
    match state {
        Some(s) if s.running && s.pid > 0 => Ok(s.pid),
        Some(s) => Err(bad(format!(
            "--container {name}: the container is not running ({program} says {}); start it: {program} start {name}",
            s.status
        ))),
        None => Err(bad(format!(
            "--container {name}: `{program} inspect` said no pid; is it a container?"
        ))),
    }
}

/// The processes under `root`'s `/proc` in the pid namespace of `init`.
pub fn members(root: &Path, init: u32) -> Vec<u32> {
    let ns = |pid: u32| std::fs::read_link(root.join(format!("proc/{pid}/ns/pid"))).ok();
    let Some(own) = ns(init) else {
        return Vec::new();
    };
    let mut v: Vec<u32> = std::fs::read_dir(root.join("proc"))
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    v.sort_unstable();
    v.retain(|&pid| ns(pid).as_ref() == Some(&own));
    v
}

/// The threads named `comm` of the processes in the pid namespace of
/// `init` (container `name`), or what to give instead.
pub fn threads_named(root: &Path, name: &str, init: u32, comm: &str) -> Result<Vec<Candidate>> {
    let all: Vec<Candidate> = members(root, init)
        .into_iter()
        .flat_map(|pid| threads_of(root, pid))
        .collect();
    let found: Vec<Candidate> = all.iter().filter(|c| c.comm == comm).cloned().collect();
    if found.is_empty() {
        let mut names: Vec<&str> = all.iter().map(|c| c.comm.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        return Err(bad(format!(
            "--container {name}: no thread named {comm} runs in it; its threads are named {}",
            if names.is_empty() {
                "nothing readable".to_string()
            } else {
                names.join(", ")
            }
        )));
    }
    Ok(found)
}

/// The threads named `comm` in running container `name`.
pub fn candidates(root: &Path, name: &str, comm: &str) -> Result<Vec<Candidate>> {
    let init = init_pid(name)?;
    threads_named(root, name, init, comm)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_engine_s_state_line_is_read() {
        assert_eq!(
            parse_state("28566 true running\n"),
            Some(State {
                pid: 28566,
                running: true,
                status: "running".into()
            })
        );
        assert_eq!(
            parse_state("0 false exited"),
            Some(State {
                pid: 0,
                running: false,
                status: "exited".into()
            })
        );
        assert_eq!(parse_state("<no value>"), None);
    }

    /// A `/proc` with processes 10 (`box-init`, threads 10 and 11 `plc`)
    /// and 12 (`plc`) in one pid namespace, 20 (`plc`) in the host's.
    fn fake_proc() -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        for (pid, tid, comm, ns) in [
            (10, 10, "box-init", "pid:[4026532252]"),
            (10, 11, "plc", ""),
            (12, 12, "plc", "pid:[4026532252]"),
            (20, 20, "plc", "pid:[4026531836]"),
        ] {
            let task = root.path().join(format!("proc/{pid}/task/{tid}"));
            std::fs::create_dir_all(&task).unwrap();
            std::fs::write(task.join("comm"), format!("{comm}\n")).unwrap();
            if !ns.is_empty() {
                let dir = root.path().join(format!("proc/{pid}/ns"));
                std::fs::create_dir_all(&dir).unwrap();
                std::os::unix::fs::symlink(ns, dir.join("pid")).unwrap();
            }
        }
        root
    }

    #[test]
    fn only_the_threads_of_the_container_s_namespace_are_chosen() {
        let root = fake_proc();
        let r = root.path();
        assert_eq!(members(r, 10), [10, 12]);
        let tids: Vec<u32> = threads_named(r, "box", 10, "plc")
            .unwrap()
            .iter()
            .map(|c| c.tid)
            .collect();
        assert_eq!(tids, [11, 12]);
        let e = threads_named(r, "box", 10, "codesys").unwrap_err();
        assert!(e.downcast_ref::<crate::error::BadInput>().is_some());
        assert_eq!(
            e.to_string(),
            "--container box: no thread named codesys runs in it; its threads are named box-init, plc"
        );
        assert_eq!(members(r, 99), Vec::<u32>::new());
    }
}
