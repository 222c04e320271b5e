//! What the command-line tests of the network probes (`roundtrip`,
//! `netcycle`) share: the jitterlab command with the test's own database
//! and journal, the root check that skips aloud, and one real run read
//! back from its JSON result.

#![allow(dead_code)] // each test file uses its own part

use std::path::Path;

use assert_cmd::Command;
use serde_json::Value;

/// `jitterlab` with the database and journal in `dir`.
pub fn jl(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("jitterlab").unwrap();
    c.env("JITTERLAB_DB", dir.join("tests.db"))
        .env("JITTERLAB_JOURNAL", dir.join("journal.json"));
    c
}

/// True as root; else says that `what` is skipped because `needs` needs
/// root.
pub fn root_or_skip(what: &str, needs: &str) -> bool {
    if jitterlab_sys::effective_uid() == 0 {
        return true;
    }
    eprintln!("skipping {what}: {needs} need root");
    false
}

/// Runs `jitterlab run PROBE ARGS --json F`; the result and the exit
/// status (a panic with the run's stderr when it wrote no result).
pub fn run_probe(dir: &Path, probe: &[&str], args: &[&str]) -> (Value, i32) {
    let json = dir.join("r.json");
    let out = jl(dir)
        .arg("run")
        .args(probe)
        .args(args)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let text = std::fs::read_to_string(&json).unwrap_or_else(|_| {
        panic!(
            "no result; stderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (
        serde_json::from_str(&text).unwrap(),
        out.status.code().unwrap(),
    )
}

/// A JSON number, or a panic naming what it was instead.
pub fn n(v: &Value) -> i64 {
    v.as_i64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// A netcycle managing node that brought its CNs up ends 0 when its cycle
/// time held and 1 when it did not (a late or missed PRes on a loaded or
/// virtual machine is a failed verdict, not a broken run); any other
/// status, or no result, is a failure.
pub fn assert_exit_follows_held(code: i32, r: Option<&Value>, stderr: &str) {
    let r = r.unwrap_or_else(|| panic!("no result: {stderr}"));
    let held = r["detail"]["held"]["held"].as_bool();
    assert_eq!(
        Some(code),
        held.map(|h| if h { 0 } else { 1 }),
        "{}\n{stderr}",
        r["detail"]["held"]
    );
}
