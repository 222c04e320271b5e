//! A bench of `kind = "observe"`: a real task across configurations, live
//! (root only, CPUs 0 and 1, cyclictest; skipped aloud otherwise).
//!
//! Two configurations × one scenario × two probes, 2 s each: `baseline`
//! (probe CPU 1, SCHED_OTHER) and `tuned` (probe CPU 1, neighbours on CPU
//! 0, SCHED_FIFO 95); one probe starts `cyclictest` per cell (no `-p`, no
//! `-a`: the configuration places it), the other attaches to a cyclictest
//! the test started at SCHED_FIFO 80 on CPU 1. From the run the bench
//! stored, per cell: the observer measured on CPU 0 (off the probe CPU)
//! at SCHED_OTHER; the started task ran on CPU 1 at the configuration's
//! policy; the attached task kept its own (SCHED_FIFO 80 in both) and the
//! context says the configuration was not applied to it; the 1 ms thread
//! of the started cyclictest was the one measured (about 2000 cycles, not
//! its main thread's 200).

use std::time::Duration;

use serde_json::Value;

#[path = "common/harness.rs"]
mod harness;
use harness::{has, jl_with, spec, wait_gone};

/// The cyclictest the test attaches to, killed when the test ends.
struct Attached(std::process::Child);

impl Drop for Attached {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The spec: `-D 86417` marks the started cyclictest (and ends it after a
/// day if everything else failed).
fn spec_text(pid: u32) -> String {
    format!(
        r#"name = "observe-placement"
duration = "2s"
warmup = "0"

[[configuration]]
name = "baseline"
probe_cpus = "1"
policy = "other"
dma_latency = false

[[configuration]]
name = "tuned"
probe_cpus = "1"
neighbour_cpus = "0"
policy = "fifo"
priority = 95

[[probe]]
kind = "observe"
name = "started"
command = ["cyclictest", "-m", "-i1000", "-t1", "-q", "-D", "86417"]
period = "1ms"

[[probe]]
kind = "observe"
name = "attached"
pid = {pid}
period = "2ms"
"#
    )
}

#[test]
fn live_an_observe_bench_places_the_started_task_and_never_the_observer_or_an_attached_one() {
    if jitterlab_sys::effective_uid() != 0 {
        eprintln!("skipping the live observe bench: tracing the kernel needs root");
        return;
    }
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    if online.trim() != "0-1" && !online.trim().starts_with("0-") {
        eprintln!("skipping the live observe bench: it needs CPUs 0 and 1 online ({online})");
        return;
    }
    if !has("cyclictest") {
        eprintln!("skipping the live observe bench: cyclictest is not installed");
        return;
    }
    let quiet = || std::process::Stdio::null();
    let attached = Attached(
        std::process::Command::new("cyclictest")
            .args(["-m", "-p80", "-i", "2000", "-t1", "-a1", "-q"])
            .stdout(quiet())
            .stderr(quiet())
            .spawn()
            .unwrap(),
    );
    // cyclictest starts its measuring thread.
    std::thread::sleep(Duration::from_millis(500));
    let p = spec("observe-placement.toml", &spec_text(attached.0.id()));
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("j.db");
    let json = dir.path().join("run.json");
    let out = (0..120)
        .find_map(|_| {
            let out = jl_with(&db)
                .arg("bench")
                .arg(&p)
                .arg("--json")
                .arg(&json)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            if stderr.contains("machine lock") || stderr.contains("another jitterlab") {
                std::thread::sleep(Duration::from_secs(1));
                return None;
            }
            Some(out)
        })
        .expect("the machine lock stayed held for two minutes");
    drop(attached);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        wait_gone("86417", Duration::from_secs(2)).is_empty(),
        "the started cyclictest is left running"
    );
    let run: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let cells = run["cells"].as_array().unwrap();
    let names: Vec<String> = cells
        .iter()
        .map(|c| {
            format!(
                "{}/{}",
                c["key"]["configuration"].as_str().unwrap(),
                c["key"]["probe"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            "baseline/started",
            "baseline/attached",
            "tuned/started",
            "tuned/attached"
        ],
        "{stdout}"
    );
    for c in cells {
        let name = format!("{}/{}", c["key"]["configuration"], c["key"]["probe"]);
        assert_eq!(c["status"], "completed", "{name}: {c}");
        let r = &c["result"];
        let d = &r["detail"];
        let place = &d["placement"];
        // The observer: CPU 0, SCHED_OTHER, whatever the configuration;
        // the result's thread is the task's, on its CPU.
        assert_eq!(r["threads"][0]["cpu"], 1, "{name}: {place}");
        assert_eq!(place["observer_cpu"], 0, "{name}: {place}");
        assert_eq!(place["observer_policy"], "SCHED_OTHER", "{name}: {place}");
        assert_eq!(place["observer_shares"], false, "{name}: {place}");
        // The task: on CPU 1.
        assert_eq!(d["comm"], "cyclictest", "{name}: {d}");
        assert_eq!(d["task_cpus"], serde_json::json!([1]), "{name}: {d}");
        let notes: Vec<&str> = c["context"]["notes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_str().unwrap())
            .collect();
        assert!(
            notes.contains(&"observer: CPU 0, off the probe CPUs 1, SCHED_OTHER, no /dev/cpu_dma_latency request of its own"),
            "{name}: {notes:?}"
        );
        let started = c["key"]["probe"] == "started";
        let tuned = c["key"]["configuration"] == "tuned";
        let (policy, line) = match (started, tuned) {
            (true, false) => ("SCHED_OTHER", "task: started, pinned to the probe CPUs 1, its policy its own (the configuration asks for no real-time policy); it ran on CPU 1 at SCHED_OTHER"),
            (true, true) => ("SCHED_FIFO 95", "task: started, pinned to the probe CPUs 1 at SCHED_FIFO 95 by the configuration; it ran on CPU 1 at SCHED_FIFO 95"),
            (false, false) => ("SCHED_FIFO 80", "task: attached, not changed: the configuration's CPUs 1 and SCHED_OTHER were not applied to it; it ran on CPU 1 at SCHED_FIFO 80"),
            (false, true) => ("SCHED_FIFO 80", "task: attached, not changed: the configuration's CPUs 1 and SCHED_FIFO 95 were not applied to it; it ran on CPU 1 at SCHED_FIFO 80"),
        };
        assert_eq!(place["task_policy"], policy, "{name}: {place}");
        assert_eq!(place["started"], started, "{name}: {place}");
        assert!(notes.contains(&line), "{name}: {notes:?}");
        // The task's measuring thread, not cyclictest's main thread (10 ms).
        let period = if started { 1_000_000 } else { 2_000_000 };
        let expected = r["elapsed_ns"].as_u64().unwrap() / period;
        let count = d["cycles"].as_u64().unwrap();
        assert!(
            count.abs_diff(expected) * 5 <= expected,
            "{name}: {count} cycles, {expected} expected"
        );
    }
}
