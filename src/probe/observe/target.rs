//! Which threads an `observe` probe may watch: its target resolved to
//! candidate threads, in the running system (`/proc` under the sysroot)
//! or in a recording.
//!
//! A `--tid` is one thread; a `--pid` (or a started command) every thread
//! of that process; a `--comm` every thread of that name, in every
//! process. With several candidates the probe watches the one that behaves
//! periodically (`observe::cycles::most_periodic`). A target that names
//! nothing is bad input: exit 2 with what to fix, before anything starts.

use std::path::Path;

use anyhow::Result;
use jitterlab_core::observe::event::{Event, EventKind};
use jitterlab_core::spec::ObserveTarget;

use crate::error::bad;

/// A thread the probe may watch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// Its kernel pid (thread id).
    pub tid: u32,
    /// Its name.
    pub comm: String,
}

/// The numeric entries of a `/proc` directory, sorted.
fn ids(dir: &Path) -> Vec<u32> {
    let mut v: Vec<u32> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    v.sort_unstable();
    v
}

fn comm_of(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim_end_matches('\n').to_string())
}

/// The threads of process `pid` under `root`.
fn threads_of(root: &Path, pid: u32) -> Vec<Candidate> {
    let task = root.join(format!("proc/{pid}/task"));
    ids(&task)
        .into_iter()
        .filter_map(|tid| {
            Some(Candidate {
                tid,
                comm: comm_of(&task.join(format!("{tid}/comm")))?,
            })
        })
        .collect()
}

/// `target`'s threads in the running system under `root`.
pub fn in_proc(root: &Path, target: &ObserveTarget) -> Result<Vec<Candidate>> {
    let found = match target {
        ObserveTarget::Pid(pid) => {
            let v = threads_of(root, *pid);
            if v.is_empty() {
                return Err(bad(format!(
                    "--pid {pid}: no such process (no /proc/{pid}); give the pid of a running process (ps -e lists them)"
                )));
            }
            v
        }
        ObserveTarget::Tid(tid) => match comm_of(&root.join(format!("proc/{tid}/comm"))) {
            Some(comm) => vec![Candidate { tid: *tid, comm }],
            None => {
                return Err(bad(format!(
                    "--tid {tid}: no such thread (no /proc/{tid}); give the id of a running thread (ps -eL -o tid,comm lists them)"
                )))
            }
        },
        ObserveTarget::Comm(name) => {
            let proc = root.join("proc");
            let v: Vec<Candidate> = ids(&proc)
                .into_iter()
                .flat_map(|pid| threads_of(root, pid))
                .filter(|c| c.comm == *name)
                .collect();
            if v.is_empty() {
                return Err(bad(format!(
                    "--comm {name}: no running thread has that name; ps -eL -o tid,comm lists the names (15 characters at most)"
                )));
            }
            v
        }
        // A started command's threads are found once it runs
        // ([`of_command`]).
        ObserveTarget::Command(_) => Vec::new(),
    };
    Ok(found)
}

/// The threads of a started command, `pid`, under `root`.
pub fn of_command(root: &Path, pid: u32) -> Vec<Candidate> {
    threads_of(root, pid)
}

/// `target`'s threads in a recording (`--replay FILE`), from the names its
/// switch events give them.
pub fn in_replay(events: &[Event], target: &ObserveTarget, file: &Path) -> Result<Vec<Candidate>> {
    let mut seen: Vec<Candidate> = Vec::new();
    for e in events {
        if let EventKind::Switch {
            prev_pid,
            prev_comm,
            next_pid,
            next_comm,
            ..
        } = &e.kind
        {
            for (tid, comm) in [(*prev_pid, prev_comm), (*next_pid, next_comm)] {
                if tid != 0 && !seen.iter().any(|c| c.tid == tid) {
                    seen.push(Candidate {
                        tid,
                        comm: comm.clone(),
                    });
                }
            }
        }
    }
    seen.sort_by_key(|c| c.tid);
    let found: Vec<Candidate> = match target {
        ObserveTarget::Tid(tid) => seen.into_iter().filter(|c| c.tid == *tid).collect(),
        ObserveTarget::Comm(name) => seen.into_iter().filter(|c| c.comm == *name).collect(),
        ObserveTarget::Pid(_) | ObserveTarget::Command(_) => {
            return Err(bad(
                "--replay takes --tid or --comm: a recorded trace has no process ids",
            ))
        }
    };
    if found.is_empty() {
        return Err(bad(format!(
            "--replay {}: no thread of {} switches in or out in the recording",
            file.display(),
            target.describe()
        )));
    }
    Ok(found)
}
