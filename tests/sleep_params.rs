//! The test-only probe's two parameters (`--features test-probe`), end to
//! end: `slack` and `spin`, declared once in core's key table, reach the
//! probe with the same value from `jitterlab run sleep`'s flags and from a
//! spec's `[[probe]]` keys; its summary line is printed, and reprinted
//! from the stored run; a bad value is refused with exit status 2 and its
//! message, from either side.
//!
//! One test, so the runs go one after another.

use assert_cmd::Command;
use serde_json::Value;

#[path = "common/harness.rs"]
mod harness;
use harness::{jl_with, scratch, spec};

/// A bench of one sleep cell with both keys, under SCHED_OTHER.
fn bench(keys: &str) -> String {
    format!(
        "name = \"slack\"\nduration = \"1s\"\nwarmup = \"0s\"\n\n[[configuration]]\nname = \"plain\"\npolicy = \"other\"\ndma_latency = false\n\n[[probe]]\nkind = \"sleep\"\n{keys}"
    )
}

fn ok(c: &mut Command) -> String {
    let out = c.output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Exit status 2 and the one error line, with nothing stored.
fn refused(c: &mut Command) -> String {
    let out = c.output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    String::from_utf8(out.stderr).unwrap()
}

fn json(path: &std::path::Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

const LINE: &str = "\nsleeps: 1ms + 200us of slack each, busy-waited\n";

#[test]
fn slack_and_spin_reach_the_probe_from_the_flags_and_the_spec_alike() {
    let db = scratch().join("params.db");
    let run_json = scratch().join("run.json");
    let bench_json = scratch().join("bench.json");

    // The flags: the probe slept 1 ms + 200 µs and spun, and says so.
    let out = ok(jl_with(&db)
        .args(["run", "sleep", "--cycles", "20", "--policy", "other"])
        .args(["--slack", "200us", "--spin", "--json"])
        .arg(&run_json));
    assert!(out.contains(LINE), "{out}");
    let r = json(&run_json);
    let flags = &r["detail"];
    assert_eq!(
        (&flags["slack_ns"], &flags["spin"], &flags["sleeps"]),
        (&Value::from(200_000), &Value::from(true), &Value::from(20))
    );
    // Every sample waited the slack past the interval: at least 1.2 ms
    // from one deadline to the next, so the run took 20 × 1.2 ms or more.
    assert!(
        r["elapsed_ns"].as_u64().unwrap() >= 20 * 1_200_000,
        "{}",
        r["elapsed_ns"]
    );
    // The stored run prints the same line.
    let stored = ok(jl_with(&db).args(["report", "1"]));
    assert!(stored.contains(LINE), "{stored}");

    // The spec's keys: the same values reach the probe of the bench cell.
    let p = spec("slack.toml", &bench("slack = \"200us\"\nspin = true\n"));
    ok(jl_with(&db)
        .arg("bench")
        .arg(&p)
        .arg("--json")
        .arg(&bench_json));
    let b = json(&bench_json);
    let cell = &b["cells"][0]["result"]["detail"];
    assert_eq!(
        (&cell["slack_ns"], &cell["spin"]),
        (&flags["slack_ns"], &flags["spin"])
    );

    // Without them: no slack, slept.
    let out = ok(jl_with(&db).args(["run", "sleep", "--cycles", "3", "--policy", "other"]));
    assert!(
        out.contains("\nsleeps: 1ms + 0ns of slack each, slept\n"),
        "{out}"
    );

    // A slack of a period or more: refused by the same rule from both.
    assert_eq!(
        refused(jl_with(&db).args(["run", "sleep", "--slack", "1ms"])),
        "jitterlab: error: --slack must be shorter than the sleep's period (1ms), not 1ms\n"
    );
    let p = spec("late.toml", &bench("slack = \"2ms\"\n"));
    assert_eq!(
        refused(jl_with(&db).arg("bench").arg(&p)),
        format!(
            "jitterlab: error: {}:12: probe[0].slack: must be shorter than the sleep's period (1ms), not 2ms\n",
            p.display()
        )
    );
    assert_eq!(
        refused(jl_with(&db).args(["run", "sleep", "--slack", "soon"])),
        "jitterlab: error: invalid value 'soon' for '--slack <TIME>': \"soon\" is not a number with a unit (e.g. 1ms, 1.5ms, 48h) (see jitterlab --help)\n"
    );
    // Nothing refused was stored: the two runs and the bench.
    let runs = ok(jl_with(&db).arg("runs"));
    assert_eq!(runs.lines().count(), 4, "{runs}");
}
