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
use jitterlab_core::trace::event::{Event, EventKind};
use jitterlab_core::observe::ObserveTarget;

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
pub fn threads_of(root: &Path, pid: u32) -> Vec<Candidate> {
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

/// Whether thread `tid` under `root` still runs: its `/proc` entry is
/// there and it is not a zombie (exited, not yet reaped).
pub fn alive(root: &Path, tid: u32) -> bool {
    let dir = root.join(format!("proc/{tid}"));
    match std::fs::read_to_string(dir.join("stat")) {
        // The state follows the name, which may hold any character.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next())
            .is_some_and(|state| !matches!(state, 'Z' | 'X' | 'x')),
        Err(_) => dir.join("comm").is_file(),
    }
}

/// The threads of a started command, `pid`, under `root`.
pub fn of_command(root: &Path, pid: u32) -> Vec<Candidate> {
    threads_of(root, pid)
}

/// The threads of process `pid` under `root` that are not in `known`:
/// those it started since they were listed.
pub fn started_since(root: &Path, pid: u32, known: &[u32]) -> Vec<Candidate> {
    threads_of(root, pid)
        .into_iter()
        .filter(|c| !known.contains(&c.tid))
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake `/proc` with process 100 (threads 100 `plc-main`, 101
    /// `plc-task`) and process 200 (thread 200 `plc-task`).
    fn fake_proc() -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        for (pid, tid, comm) in [
            (100, 100, "plc-main"),
            (100, 101, "plc-task"),
            (200, 200, "plc-task"),
        ] {
            let task = root.path().join(format!("proc/{pid}/task/{tid}"));
            std::fs::create_dir_all(&task).unwrap();
            std::fs::write(task.join("comm"), format!("{comm}\n")).unwrap();
            if pid == tid {
                std::fs::write(
                    root.path().join(format!("proc/{pid}/comm")),
                    format!("{comm}\n"),
                )
                .unwrap();
            }
        }
        std::fs::create_dir_all(root.path().join("proc/sys")).unwrap();
        root
    }

    fn c(tid: u32, comm: &str) -> Candidate {
        Candidate {
            tid,
            comm: comm.into(),
        }
    }

    #[test]
    fn targets_resolve_to_their_threads_in_proc() {
        let root = fake_proc();
        let r = root.path();
        assert_eq!(
            in_proc(r, &ObserveTarget::Pid(100)).unwrap(),
            [c(100, "plc-main"), c(101, "plc-task")]
        );
        assert_eq!(
            in_proc(r, &ObserveTarget::Tid(200)).unwrap(),
            [c(200, "plc-task")]
        );
        assert_eq!(
            in_proc(r, &ObserveTarget::Comm("plc-task".into())).unwrap(),
            [c(101, "plc-task"), c(200, "plc-task")]
        );
        assert_eq!(of_command(r, 100).len(), 2);
        assert_eq!(started_since(r, 100, &[100]), [c(101, "plc-task")]);
        assert_eq!(started_since(r, 100, &[101, 100]), []);
    }

    #[test]
    fn a_thread_gone_or_a_zombie_is_not_alive() {
        let root = fake_proc();
        let r = root.path();
        assert!(alive(r, 200));
        assert!(!alive(r, 300));
        let stat = |s: &str| std::fs::write(r.join("proc/200/stat"), s).unwrap();
        stat("200 (plc) task) S 1 200 200 0 -1");
        assert!(alive(r, 200));
        stat("200 (plc) task) Z 1 200 200 0 -1");
        assert!(!alive(r, 200));
    }

    #[test]
    fn a_target_naming_nothing_is_bad_input_saying_what_to_fix() {
        let root = fake_proc();
        let r = root.path();
        let msg = |t: ObserveTarget| {
            let e = in_proc(r, &t).unwrap_err();
            assert!(
                e.downcast_ref::<crate::error::BadInput>().is_some(),
                "{e:#}"
            );
            e.to_string()
        };
        assert_eq!(
            msg(ObserveTarget::Pid(300)),
            "--pid 300: no such process (no /proc/300); give the pid of a running process (ps -e lists them)"
        );
        assert_eq!(
            msg(ObserveTarget::Tid(301)),
            "--tid 301: no such thread (no /proc/301); give the id of a running thread (ps -eL -o tid,comm lists them)"
        );
        assert_eq!(
            msg(ObserveTarget::Comm("codesys".into())),
            "--comm codesys: no running thread has that name; ps -eL -o tid,comm lists the names (15 characters at most)"
        );
    }
}
