//! The test-only probe `sleep` (`--features test-probe`), end to end: the
//! proof that a probe added in its two folders (`src/probe/sleep/`,
//! `crates/core/src/sleep/`) and its registration lines runs through
//! `jitterlab run`, a bench cell, the store and every report format like
//! any other.
//!
//! One test, so the database holds the run as run 1 and the bench as run 2.

use assert_cmd::Command;
use serde_json::Value;

#[path = "common/harness.rs"]
mod harness;
use harness::{jl_with, scratch, spec};

/// The bench: one sleep cell of 1 s under SCHED_OTHER (no root needed).
const SLEEPY: &str = r#"
name = "sleepy"
duration = "1s"
warmup = "0s"

[[configuration]]
name = "plain"
policy = "other"
dma_latency = false

[[probe]]
kind = "sleep"
"#;

fn stdout(c: &mut Command) -> String {
    let out = c.output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

#[test]
fn the_sleep_probe_runs_benches_stores_and_reports_like_any_other() {
    let db = scratch().join("sleep.db");
    let run_json = scratch().join("run.json");
    let bench_json = scratch().join("bench.json");

    // `jitterlab run sleep`: 200 sleeps, their oversleep in the summary,
    // the JSON and the store.
    let out = jl_with(&db)
        .args(["run", "sleep", "--cycles", "200", "--policy", "other"])
        .arg("--json")
        .arg(&run_json)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(summary.starts_with("Record\njitterlab    "), "{summary}");
    assert!(summary.contains("\n\nprobe        sleep\n"), "{summary}");
    assert!(summary.contains("interval     1ms\n"), "{summary}");
    assert!(summary.contains(": 200 sleeps\n"), "{summary}");
    assert!(summary.contains("\noversleep "), "{summary}");
    assert!(summary.contains("largest oversleep, CPU "), "{summary}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("jitterlab: stored as run 1 in {}", db.display())),
        "{stderr}"
    );
    let r = json(&std::fs::read_to_string(&run_json).unwrap());
    assert_eq!(r["probe"], "sleep");
    // The version that measured: `--version`'s version and commit, without
    // the build day (`0.1.0 (commit 28a18f1)`).
    let version = stdout(jl_with(&db).arg("--version"));
    let (version, _day) = version.split_once(", built ").unwrap();
    let version = format!("{})", version.strip_prefix("jitterlab ").unwrap());
    assert_eq!(r["tool_version"], version.as_str());
    assert_eq!(r["end"], "completed");
    assert_eq!(r["params"]["period_ns"], 1_000_000);
    assert_eq!(r["params"]["cycles"], 200);
    let t = &r["threads"][0];
    assert_eq!(
        (t["cycles"].as_u64(), t["releases"].as_u64()),
        (Some(200), Some(200))
    );
    let oversleep = &t["metrics"]["oversleep"];
    assert_eq!(oversleep["count"], 200);
    assert!(oversleep["min"].as_i64().unwrap() >= 0, "{oversleep}");
    assert_eq!(r["detail"]["sleeps"], 200);
    assert_eq!(r["detail"]["interval_ns"], 1_000_000);

    // A bench with a sleep cell from a spec file: the cell is measured and
    // stored like any other.
    let p = spec("sleepy.toml", SLEEPY);
    let tables = stdout(
        jl_with(&db)
            .arg("bench")
            .arg(&p)
            .arg("--json")
            .arg(&bench_json),
    );
    assert!(
        tables.contains("plain/idle/host/sleep  oversleep "),
        "{tables}"
    );
    let b = json(&std::fs::read_to_string(&bench_json).unwrap());
    assert_eq!(
        (b["id"].as_i64(), b["kind"].as_str()),
        (Some(2), Some("bench"))
    );
    let cell = &b["cells"][0];
    assert_eq!(cell["key"]["probe"], "sleep");
    assert_eq!(cell["status"], "completed");
    assert_eq!(cell["result"]["probe"], "sleep");
    let count = cell["result"]["threads"][0]["metrics"]["oversleep"]["count"]
        .as_u64()
        .unwrap();
    assert!(count > 100, "a 1 s cell of 1 ms sleeps made {count}");

    // Both are listed, with the sleep's oversleep as their latency.
    let runs = stdout(jl_with(&db).arg("runs"));
    let lines: Vec<&str> = runs.lines().skip(1).collect();
    assert_eq!(lines.len(), 2, "{runs}");
    assert!(
        lines[0].contains(" run ") && lines[0].contains(" sleep "),
        "{runs}"
    );
    assert!(
        lines[1].contains(" bench ") && lines[1].contains(" sleepy "),
        "{runs}"
    );
    assert!(lines.iter().all(|l| l.trim_end().ends_with("us")), "{runs}");

    // Every report format of both runs names the probe and its metric.
    for format in ["text", "md", "csv", "json"] {
        for run in ["1", "2"] {
            let text = stdout(jl_with(&db).args(["report", run, "--format", format]));
            assert!(text.contains("sleep"), "run {run} as {format}: {text}");
            assert!(text.contains("oversleep"), "run {run} as {format}: {text}");
        }
    }
    let report = json(&stdout(
        jl_with(&db).args(["report", "1", "--format", "json"]),
    ));
    assert_eq!(report["probe"], "sleep");
    assert_eq!(report["threads"][0]["metrics"]["oversleep"]["count"], 200);
    let md = stdout(jl_with(&db).args(["report", "2", "--format", "md"]));
    assert!(
        md.contains("| plain/idle/host/sleep | oversleep | 1 |"),
        "{md}"
    );
    let csv = stdout(jl_with(&db).args(["report", "2", "--format", "csv"]));
    assert!(
        csv.lines().any(
            |l| l.starts_with("latency,plain,idle,host,sleep,1,1,completed,")
                && l.contains(",oversleep,100000,")
        ),
        "{csv}"
    );
}
