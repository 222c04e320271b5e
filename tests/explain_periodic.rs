//! `--explain` on our own periodic probes, end to end.
//!
//! Live (root only, skipped aloud otherwise): `run cyclic --explain` on
//! CPU 1 at SCHED_FIFO 50 while a thread named `jl-hog` at SCHED_FIFO 90
//! on the same CPU busy-loops 50 ms every 500 ms: the stored explanation of
//! the run's worst cycle names `jl-hog`, with its priority, for at least
//! half of that cycle's latency, and the text summary prints it under the
//! outlier. Bad input: `--explain` with `--deployment container` is
//! refused (exit 2) before anything starts, saying why.

use serde_json::Value;

#[path = "common/harness.rs"]
mod harness;
use harness::{jl_with, live_on_cpu1, named_shell, scratch, Children};

/// Busy 50 ms by the wall clock, asleep 500 ms (a read timing out on a
/// FIFO: no process forked), until killed. 50 ms is longer than the
/// other stalls of a busy 2-CPU virtual machine (up to 25 ms seen here:
/// the host's, or the fair server running a time-sharing thread ahead of
/// the probe), so the worst cycle is one the hog delayed.
const HOG: &str = r#"exec 9<>"$1"
while :; do
  s=${EPOCHREALTIME/./}
  while (( ${EPOCHREALTIME/./} - s < 50000 )); do :; done
  read -t 0.5 -u 9
done"#;

#[test]
fn live_the_worst_cycle_of_run_cyclic_names_the_thread_that_delayed_it() {
    if !live_on_cpu1("--explain", &["chrt", "taskset", "mkfifo"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // The hog thread's name is its program's file name.
    let (hog, fifo) = named_shell(dir.path(), "jl-hog");
    let quiet = || std::process::Stdio::null();
    let mut children = Children(Vec::new());
    children.0.push(
        std::process::Command::new("chrt")
            .args(["-f", "90", "taskset", "-c", "1"])
            .arg(&hog)
            .args(["-c", HOG, "jl-hog"])
            .arg(&fifo)
            .stdout(quiet())
            .stderr(quiet())
            .spawn()
            .unwrap(),
    );
    let hog_pid = children.0[0].id();
    let out_json = dir.path().join("run.json");
    let args = [
        "run",
        "cyclic",
        "--cpu",
        "1",
        "--priority",
        "50",
        "--explain",
        "--threshold",
        "1ms",
        "--duration",
        "4s",
        "--no-db",
        "--json",
        out_json.to_str().unwrap(),
    ];
    let db = scratch().join("live.db");
    let (code, stdout, stderr) = (0..120)
        .find_map(|_| {
            let out = jl_with(&db).args(args).output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            if stderr.contains("machine lock") || stderr.contains("another jitterlab") {
                std::thread::sleep(std::time::Duration::from_secs(1));
                return None;
            }
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            Some((out.status.code().unwrap_or(-1), stdout, stderr))
        })
        .expect("the machine lock stayed held for two minutes");
    drop(children);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&out_json).unwrap()).unwrap();
    // The worst cycle: the largest latency outlier.
    let worst = r["threads"][0]["outliers"]["latency"]
        .as_array()
        .unwrap()
        .iter()
        .max_by_key(|o| o["value"].as_i64().unwrap())
        .unwrap();
    let (cycle, latency) = (
        worst["cycle"].as_u64().unwrap(),
        worst["value"].as_u64().unwrap(),
    );
    assert!(
        latency > 1_000_000,
        "the worst latency {latency} ns\n{stdout}"
    );
    let x = r["detail"]["explanations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["cycle"] == cycle && x["cpu"] == 1)
        .unwrap_or_else(|| panic!("cycle {cycle} is not explained\n{stdout}"));
    assert_eq!(
        x["to_ns"].as_u64().unwrap() - x["from_ns"].as_u64().unwrap(),
        latency
    );
    // SCHED_FIFO 90 is the kernel's prio 9.
    let t = x["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["comm"] == "jl-hog")
        .unwrap_or_else(|| panic!("jl-hog is not in the explanation of cycle {cycle}: {x}"));
    assert_eq!(t["pid"].as_u64(), Some(u64::from(hog_pid)));
    assert_eq!(t["prio"], 9);
    let ns = t["ns"].as_u64().unwrap();
    assert!(
        2 * ns >= latency && ns <= latency,
        "jl-hog ran {ns} ns of the {latency} ns latency: {x}"
    );
    let line = format!("cycle {cycle} late by ");
    let hog_part = format!("jl-hog (pid {hog_pid}, prio 9) ");
    assert!(
        stdout
            .lines()
            .any(|l| l.contains(&line) && l.contains(&hog_part)),
        "no explanation line of cycle {cycle} names jl-hog\n{stdout}"
    );
}

#[test]
fn explain_in_a_container_is_refused_with_exit_2_saying_why() {
    let db = scratch().join("refused.db");
    let out = jl_with(&db)
        .args([
            "run",
            "cyclic",
            "--explain",
            "--deployment",
            "container",
            "--duration",
            "1s",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "jitterlab: error: --explain traces the host kernel's scheduler, which a container cannot reach; drop --explain, or use --deployment host"
    );
    assert!(!db.exists(), "a refused run stored nothing");
}
