//! Command-line tests: every bad input with its exact message and exit status
//! 2 (and nothing written), and real short runs whose figures must satisfy the
//! accounting identities and physical bounds.
//!
//! Runs that start real-time threads or touch the machine are `#[serial]`, so
//! they never disturb each other. They need root for SCHED_FIFO, mlockall and
//! /dev/cpu_dma_latency; without it they still run, and assert that the result
//! is honestly marked "not real-time" instead.

use std::path::Path;
use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use serial_test::serial;

#[path = "common/fixtures.rs"]
mod fixtures;
use fixtures::{copy_fixture, fixture};

/// One results database for the whole test process, outside the source tree
/// (the default `./jitterlab.db` would land in the repository).
fn test_db() -> &'static Path {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().unwrap()).path()
}

fn jl() -> Command {
    let mut c = Command::cargo_bin("jitterlab").unwrap();
    c.env("JITTERLAB_DB", test_db().join("tests.db"))
        .env("JITTERLAB_JOURNAL", test_db().join("journal.json"));
    c
}

fn is_root() -> bool {
    jitterlab_sys::effective_uid() == 0
}

/// Runs jitterlab against the 2-CPU fixture tree and expects a bad-input
/// refusal with exactly `message`.
fn refuses(args: &[&str], message: &str) {
    let out = jl()
        .arg("--sysroot")
        .arg(fixture("sysroot-vm"))
        .args(args)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "args {args:?}");
    assert!(out.stdout.is_empty(), "nothing on stdout for {args:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("jitterlab: error: {message}\n"),
        "args {args:?}"
    );
}

#[test]
fn unknown_unit_is_refused() {
    refuses(
        &["run", "cyclic", "--period", "10x"],
        "invalid value '10x' for '--period <TIME>': \"10x\" has unknown unit \"x\"; use one of ns, us, ms, s, m, h, d (see jitterlab --help)",
    );
}

#[test]
fn missing_unit_is_refused() {
    refuses(
        &["run", "wakeup", "--interval", "1000"],
        "invalid value '1000' for '--interval <TIME>': \"1000\" has no unit; add one of ns, us, ms, s, m, h, d (e.g. 1000us) (see jitterlab --help)",
    );
}

#[test]
fn zero_and_negative_periods_are_refused() {
    refuses(
        &["run", "cyclic", "--period", "0ms"],
        "--period must be positive; give e.g. --period 1ms",
    );
    refuses(
        &["run", "cyclic", "--period", "-1ms"],
        "invalid value '-1ms' for '--period <TIME>': \"-1ms\" is negative; give a positive value (see jitterlab --help)",
    );
    refuses(
        &["run", "wakeup", "--interval", "0us"],
        "--interval must be positive; give e.g. --interval 1ms",
    );
}

#[test]
fn scan_not_shorter_than_period_is_refused() {
    refuses(
        &["run", "cyclic", "--period", "1ms", "--scan", "2ms"],
        "--scan 2ms is not shorter than --period 1ms; shorten the scan or lengthen the period",
    );
    refuses(
        &["run", "cyclic", "--period", "250us", "--scan", "250us"],
        "--scan 250us is not shorter than --period 250us; shorten the scan or lengthen the period",
    );
}

#[test]
fn offline_cpus_are_refused() {
    refuses(
        &["run", "cyclic", "--cpu", "7"],
        "CPU 7 is not online (online CPUs: 0-1); choose one of them with --cpu",
    );
    refuses(
        &["run", "wakeup", "--cpus", "1,3"],
        "CPU 3 in --cpus is not online (online CPUs: 0-1); choose CPUs from that list",
    );
    refuses(
        &["run", "wakeup", "--cpus", "1-"],
        "invalid value '1-' for '--cpus <LIST>': \"1-\" is not a CPU list; write CPUs like 1,3 or ranges like 0-3 (as in /sys/devices/system/cpu/online) (see jitterlab --help)",
    );
}

#[test]
fn priorities_outside_the_policy_range_are_refused() {
    refuses(
        &["run", "cyclic", "--priority", "100"],
        "--priority 100 is outside 1-99 for --policy fifo; choose a priority in that range",
    );
    refuses(
        &["run", "wakeup", "--policy", "rr", "--priority", "0"],
        "--priority 0 is outside 1-99 for --policy rr; choose a priority in that range",
    );
    refuses(
        &["run", "cyclic", "--policy", "other", "--priority", "5"],
        "--priority 5 is not allowed with --policy other; use --nice to weight a time-sharing thread, or --policy fifo",
    );
    refuses(
        &["run", "cyclic", "--nice", "3"],
        "--nice 3 applies only to --policy other; use --priority with --policy fifo",
    );
    refuses(
        &["run", "cyclic", "--policy", "other", "--nice", "30"],
        "--nice 30 is outside -20..19; choose a nice value in that range",
    );
    refuses(
        &["run", "cyclic", "--policy", "other", "--strict"],
        "--strict needs a real-time policy, and --policy other is never real-time; use --policy fifo or rr",
    );
}

#[test]
fn other_bad_values_are_refused() {
    refuses(
        &["run", "cyclic", "--duration", "0s"],
        "--duration must be positive; give e.g. --duration 10s",
    );
    refuses(
        &["run", "cyclic", "--cycles", "0"],
        "--cycles must be at least 1",
    );
    refuses(
        &["run", "cyclic", "--window", "0s"],
        "--window must be positive; give e.g. --window 1s",
    );
    refuses(
        &["run", "cyclic", "--break-trace", "0us"],
        "--break-trace must be positive; give e.g. --break-trace 500us",
    );
    refuses(
        &["run", "wakeup", "--histogram-buckets", "0"],
        "--histogram-buckets must be at least 1",
    );
    refuses(
        &["run", "cyclic", "--working-set", "3parsecs"],
        "invalid value '3parsecs' for '--working-set <SIZE>': \"3parsecs\" has unknown size suffix \"parsecs\"; use B, K, KiB, M, MiB, G or GiB (see jitterlab --help)",
    );
    refuses(
        &["run", "cyclic", "--duration", "1s", "--cycles", "5"],
        "the argument '--duration <TIME>' cannot be used with '--cycles <N>' (see jitterlab --help)",
    );
    refuses(
        &["run", "cyclic", "--policy", "deadline"],
        "invalid value 'deadline' for '--policy <POLICY>' (see jitterlab --help)",
    );
}

#[test]
fn unwritable_outputs_are_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let ok = dir.path().join("ok.csv");
    let ok_s = ok.to_str().unwrap();
    refuses(
        &["run", "cyclic", "--csv", ok_s, "--json", "/nonexistent/dir/r.json"],
        "--json /nonexistent/dir/r.json: directory /nonexistent/dir does not exist; create it or choose another path",
    );
    let d = dir.path().to_str().unwrap();
    refuses(
        &["run", "wakeup", "--histogram", d],
        &format!("--histogram {d} is a directory; give a file path"),
    );
    // The valid --csv path was not created: nothing changes on bad input.
    assert!(!ok.exists());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn help_lists_every_flag() {
    let out = jl().args(["run", "cyclic", "--help"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--period",
        "--cpu",
        "--scan",
        "--working-set",
        "--duration",
        "--cycles",
        "--policy",
        "--priority",
        "--nice",
        "--strict",
        "--window",
        "--threshold",
        "--outliers",
        "--json",
        "--csv",
        "--histogram",
        "--histogram-buckets",
        "--max-latency",
        "--max-jitter",
        "--max-exec",
        "--break-trace",
        "--progress",
        "--no-dma-latency",
        "--sysroot",
    ] {
        assert!(help.contains(flag), "help lacks {flag}");
    }
}

fn last_online_cpu() -> usize {
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    jitterlab_core::units::CpuList::parse(&online)
        .unwrap()
        .iter()
        .last()
        .unwrap()
}

fn read_json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn u(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a u64: {v}"))
}

fn i(v: &serde_json::Value) -> i64 {
    v.as_i64().unwrap_or_else(|| panic!("not an i64: {v}"))
}

#[test]
#[serial]
fn real_cyclic_run_satisfies_the_accounting_and_physics() {
    if !is_root() {
        eprintln!(
            "note: not root: SCHED_FIFO/mlockall unavailable; checking the not-real-time path"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let csv = dir.path().join("w.csv");
    let hist = dir.path().join("h.txt");
    let cpu = last_online_cpu();
    let out = jl()
        .args(["run", "cyclic", "--duration", "2s", "--period", "1ms"])
        .args([
            "--cpu",
            &cpu.to_string(),
            "--scan",
            "50us",
            "--working-set",
            "64KiB",
        ])
        .arg("--json")
        .arg(&json)
        .arg("--csv")
        .arg(&csv)
        .arg("--histogram")
        .arg(&hist)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = read_json(&json);
    assert_eq!(u(&r["schema_version"]), 1);
    assert_eq!(r["probe"], "cyclic");
    assert_eq!(r["end"], "completed");
    assert_eq!(r["interrupted"], false);
    assert_eq!(r["realtime"]["realtime"], is_root());
    let t = &r["threads"][0];
    assert_eq!(u(&t["cpu"]), cpu as u64);
    // 2 s of 1 ms releases; every release is measured or skipped.
    assert_eq!(u(&t["releases"]), 2000);
    assert_eq!(u(&t["cycles"]) + u(&t["skipped"]), u(&t["releases"]));
    assert!(u(&t["overruns"]) <= u(&t["skipped"]));
    let cal = &t["calibration"];
    assert_eq!(u(&cal["nodes"]), 1024);
    assert_eq!(u(&cal["scan_target_ns"]), 50_000);
    let m = &t["metrics"];
    let lat = &m["latency"];
    assert_eq!(u(&lat["count"]), u(&t["cycles"]));
    // A wake-up is never early, and never later than the whole run.
    assert!(i(&lat["min"]) >= 0);
    assert!(i(&lat["max"]) < 2_000_000_000);
    assert!(i(&lat["min"]) <= i(&lat["p50"]) && i(&lat["p50"]) <= i(&lat["p99"]));
    // The periods add up to the time between the first and the last start:
    // at least (n−1)·T0 minus the first wake-up's latency, at most the 2 s run
    // plus the last wake-up's latency (the mean is rounded to 1 ns).
    let per = &m["period"];
    let n = u(&per["count"]);
    assert_eq!(n, u(&t["cycles"]) - 1);
    let span = i(&per["mean"]) * n as i64;
    assert!(
        span >= n as i64 * 1_000_000 - i(&lat["max"]) - n as i64,
        "span {span}"
    );
    assert!(
        span <= 2_000_000_000 + i(&lat["max"]) + n as i64,
        "span {span}"
    );
    // Jitter is signed: its minimum is at most 0 and its mean close to 0.
    let jit = &m["jitter"];
    assert!(i(&jit["min"]) <= 0 && i(&jit["max"]) >= 0);
    // Execution time is positive and includes the walk.
    let exec = &m["exec"];
    assert!(i(&exec["min"]) > 0);
    assert!(i(&exec["max"]) < 2_000_000_000);
    if is_root() {
        assert_eq!(u(&t["usage"]["major_faults"]), 0);
    }
    // Window rows: one per second (2 or 3 depending on where the run ends),
    // with increasing start times; the CSV holds each with a header.
    let rows = u(&t["window_rows"]);
    assert!((2..=3).contains(&rows), "{rows} rows");
    let text = std::fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("thread,cpu,window,start_ns,cycles,overruns,latency_count"));
    assert_eq!(lines.len() as u64, rows + 1);
    let starts: Vec<u64> = lines[1..]
        .iter()
        .map(|l| l.split(',').nth(3).unwrap().parse().unwrap())
        .collect();
    assert!(starts.windows(2).all(|w| w[0] < w[1]), "{starts:?}");
    let cycles_in_rows: u64 = lines[1..]
        .iter()
        .map(|l| l.split(',').nth(4).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(cycles_in_rows, u(&t["cycles"]));
    // Outliers: at most 20, largest first, inside the run.
    let outl = t["outliers"]["latency"].as_array().unwrap();
    assert!(!outl.is_empty() && outl.len() <= 20);
    assert!(u(&outl[0]["since_start_ns"]) < 2_100_000_000);
    assert_eq!(i(&outl[0]["value"]), i(&lat["max"]));
    // The cyclictest histogram counts every cycle: in its buckets (cyclictest's
    // "# Total:" line) or as an overflow past the last bucket.
    let h = std::fs::read_to_string(&hist).unwrap();
    let field = |prefix: &str| -> u64 {
        h.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("no {prefix} line in {h}"))
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    assert_eq!(
        field("# Total:") + field("# Histogram Overflows:"),
        u(&t["cycles"])
    );
    // The summary table is on stdout.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("latency"), "{stdout}");
}

#[test]
#[serial]
fn wakeup_runs_exact_cycle_count_on_each_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("w.json");
    let cpu = last_online_cpu();
    jl().args(["run", "wakeup", "--cycles", "300", "--interval", "500us"])
        .args(["--cpus", &cpu.to_string()])
        .arg("--json")
        .arg(&json)
        .assert()
        .code(0);
    let r = read_json(&json);
    assert_eq!(r["probe"], "wakeup");
    let t = &r["threads"][0];
    assert_eq!(u(&t["cycles"]), 300);
    assert_eq!(u(&t["cycles"]) + u(&t["skipped"]), u(&t["releases"]));
    assert!(t["calibration"].is_null());
    // No scan: the bare loop's execution time is tiny next to the interval.
    assert!(i(&t["metrics"]["exec"]["p50"]) < 100_000);
    assert!(r["combined"].is_null());
}

#[test]
#[serial]
fn wakeup_on_two_cpus_reports_combined_results() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("w.json");
    jl().args(["run", "wakeup", "--cycles", "200", "--cpus", "0-1"])
        .arg("--json")
        .arg(&json)
        .assert()
        .code(0);
    let r = read_json(&json);
    let threads = r["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 2);
    assert_eq!(u(&threads[0]["cpu"]), 0);
    assert_eq!(u(&threads[1]["cpu"]), 1);
    assert_eq!(u(&r["combined"]["latency"]["count"]), 400);
}

#[test]
#[serial]
fn limits_decide_the_exit_status() {
    let cpu = last_online_cpu().to_string();
    // Every wake-up takes longer than 1 ns: exit 1, with a FAIL line.
    let out = jl()
        .args([
            "run",
            "wakeup",
            "--cycles",
            "50",
            "--cpus",
            &cpu,
            "--max-latency",
            "1ns",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("FAIL latency"));
    // Nothing takes 10 s: exit 0.
    jl().args(["run", "wakeup", "--cycles", "50", "--cpus", &cpu])
        .args([
            "--max-latency",
            "10s",
            "--max-jitter",
            "10s",
            "--max-exec",
            "10s",
        ])
        .assert()
        .code(0);
}

/// A JUnit test case: its suite, its name, and its failure's type and
/// message.
type JunitCase = (String, String, Option<(String, String)>);

/// The test cases of a JUnit file.
fn junit_cases(path: &std::path::Path) -> Vec<JunitCase> {
    let text = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&text).unwrap();
    doc.descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .map(|c| {
            let failure = c.children().find(|n| n.has_tag_name("failure")).map(|f| {
                (
                    f.attribute("type").unwrap().to_string(),
                    f.attribute("message").unwrap().to_string(),
                )
            });
            (
                c.parent().unwrap().attribute("name").unwrap().to_string(),
                c.attribute("name").unwrap().to_string(),
                failure,
            )
        })
        .collect()
}

#[test]
#[serial]
fn junit_of_a_run_and_of_its_stored_report_name_each_verdict_and_its_figure() {
    let cpu = last_online_cpu().to_string();
    let dir = tempfile::tempdir().unwrap();
    let (junit, json) = (dir.path().join("run.xml"), dir.path().join("run.json"));
    let out = jl()
        .args(["run", "wakeup", "--cycles", "50", "--cpus", &cpu])
        .args(["--max-latency", "1ns", "--junit"])
        .arg(&junit)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let max = r["verdict"]["cells"][0]["verdicts"][0]["observed_ns"]
        .as_u64()
        .unwrap();
    let line = r["verdict"]["cells"][0]["verdicts"][0]["decided"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        line,
        format!(
            "max {}.{:03}us of 50 samples > limit 0.001us",
            max / 1000,
            max % 1000
        )
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&format!(
            "\nverdict: 1 of 1 verdicts did not pass, exit status 1\n  FAIL latency: {line}\n"
        )),
        "{out:?}"
    );
    let want = vec![(
        "wakeup".to_string(),
        "latency".to_string(),
        Some(("fail".to_string(), line)),
    )];
    assert_eq!(junit_cases(&junit), want);
    // The stored run gives the same verdicts, recomputed from its figures.
    let stored = dir.path().join("stored.xml");
    let out = jl()
        .args(["report", "--junit"])
        .arg(&stored)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(junit_cases(&stored), want);
    // Two runs are not one JUnit report.
    let out = jl()
        .args(["report", "1", "2", "--junit"])
        .arg(&stored)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "jitterlab: error: --junit writes the verdicts of one run; name one RUN, not 2\n"
    );
}

#[test]
#[serial]
fn strict_refuses_a_missing_default() {
    // The fixture tree has no /dev/cpu_dma_latency: a kernel without PM QoS.
    let out = jl()
        .arg("--sysroot")
        .arg(fixture("sysroot-vm"))
        .args(["run", "wakeup", "--cycles", "10", "--cpus", "1", "--strict"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("jitterlab: error: --strict: a real-time default could not be applied (cpu_dma_latency: writing 0 to "),
        "{err}"
    );
    assert!(err.ends_with("; fix it or drop --strict\n"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
#[serial]
fn missing_default_marks_the_result_not_real_time() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let out = jl()
        .args([
            "run",
            "wakeup",
            "--cycles",
            "20",
            "--cpus",
            "1",
            "--no-dma-latency",
        ])
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let r = read_json(&json);
    assert_eq!(r["realtime"]["realtime"], false);
    let dma = r["realtime"]["defaults"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == "cpu_dma_latency")
        .unwrap()
        .clone();
    assert_eq!(dma["applied"], false);
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("jitterlab: warning: not real-time: cpu_dma_latency: not requested"));
}

#[test]
#[serial]
fn sigint_ends_the_run_cleanly_and_marks_it_interrupted() {
    for signal in ["INT", "TERM"] {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("r.json");
        let csv = dir.path().join("w.csv");
        let bin = assert_cmd::cargo::cargo_bin("jitterlab");
        let child = StdCommand::new(bin)
            .env("JITTERLAB_DB", test_db().join("tests.db"))
            .env("JITTERLAB_JOURNAL", test_db().join("journal.json"))
            .args(["run", "wakeup", "--duration", "60s", "--cpus", "1"])
            .arg("--json")
            .arg(&json)
            .arg("--csv")
            .arg(&csv)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(1500));
        let started = Instant::now();
        let k = StdCommand::new("kill")
            .args([&format!("-{signal}"), &child.id().to_string()])
            .status()
            .unwrap();
        assert!(k.success());
        let out = child.wait_with_output().unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "slow to stop on SIG{signal}"
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "SIG{signal}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let r = read_json(&json);
        assert_eq!(r["end"], "interrupted");
        assert_eq!(r["interrupted"], true);
        let t = &r["threads"][0];
        assert!(u(&t["cycles"]) > 500 && u(&t["cycles"]) < 10_000);
        assert_eq!(u(&t["cycles"]) + u(&t["skipped"]), u(&t["releases"]));
        // The signal is recorded: the run was stopped, its process did not die.
        assert_eq!(r["signal"], if signal == "INT" { 2 } else { 15 });
        assert!(String::from_utf8_lossy(&out.stdout).contains(&format!(
            "stopped by SIG{signal} before the requested length"
        )));
        assert!(std::fs::read_to_string(&csv).unwrap().lines().count() >= 2);
    }
}

#[test]
#[serial]
fn break_trace_marks_the_trace_stops_tracing_and_ends_the_run() {
    // A copy of the RT fixture: its tracefs files are plain files we can read.
    let root = copy_fixture("sysroot-rt");
    let json = root.path().join("r.json");
    let out = jl()
        .arg("--sysroot")
        .arg(root.path())
        .args([
            "run",
            "cyclic",
            "--duration",
            "10s",
            "--cpu",
            "1",
            "--break-trace",
            "1ns",
        ])
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = read_json(&json);
    assert_eq!(r["end"], "break-trace");
    let b = &r["break_event"];
    assert_eq!(u(&b["cycle"]), 0);
    assert_eq!(b["tracing_stopped"], true);
    let t = &r["threads"][0];
    assert_eq!(u(&t["cycles"]), 1);
    let on = std::fs::read_to_string(root.path().join("sys/kernel/tracing/tracing_on")).unwrap();
    assert_eq!(on.trim(), "0");
    let marker =
        std::fs::read_to_string(root.path().join("sys/kernel/tracing/trace_marker")).unwrap();
    assert!(
        marker.contains(&format!("{} ns", u(&b["latency_ns"]))),
        "{marker}"
    );
    // The PM QoS request was written to the fake device as 4 zero bytes.
    assert_eq!(
        std::fs::read(root.path().join("dev/cpu_dma_latency")).unwrap(),
        vec![0; 4]
    );
}

#[test]
#[serial]
fn break_trace_without_tracefs_says_so_and_still_ends() {
    let out = jl()
        .arg("--sysroot")
        .arg(fixture("sysroot-vm"))
        .args([
            "run",
            "wakeup",
            "--duration",
            "10s",
            "--cpus",
            "1",
            "--break-trace",
            "1ns",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("jitterlab: warning: --break-trace: "), "{err}");
    assert!(err.contains("without a trace"), "{err}");
}

#[test]
#[serial]
fn time_sharing_run_with_every_reporting_flag() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let csv = dir.path().join("w.csv");
    let hist = dir.path().join("h.txt");
    let out = jl()
        .args([
            "run", "cyclic", "--policy", "other", "--nice", "5", "--cpu", "1",
        ])
        .args(["--period", "2ms", "--scan", "0", "--working-set", "0"])
        .args([
            "--duration",
            "1500ms",
            "--window",
            "250ms",
            "--threshold",
            "1ns",
        ])
        .args(["--outliers", "3", "--progress", "--histogram-buckets", "50"])
        .arg("--json")
        .arg(&json)
        .arg("--csv")
        .arg(&csv)
        .arg("--histogram")
        .arg(&hist)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = read_json(&json);
    // SCHED_OTHER is applied as asked, and honestly not real-time.
    assert_eq!(r["params"]["policy"], "other");
    assert_eq!(r["params"]["nice"], 5);
    assert!(r["params"]["priority"].is_null());
    assert_eq!(r["realtime"]["realtime"], false);
    let sched = r["realtime"]["defaults"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == "scheduler")
        .unwrap()
        .clone();
    assert_eq!(sched["requested"], "SCHED_OTHER nice 5");
    assert_eq!(sched["applied"], false);
    let t = &r["threads"][0];
    assert_eq!(u(&t["releases"]), 750);
    assert_eq!(u(&t["cycles"]) + u(&t["skipped"]), 750);
    // No scan: no calibration work, only the bare task.
    assert_eq!(u(&t["calibration"]["iterations"]), 0);
    assert_eq!(u(&t["calibration"]["nodes"]), 0);
    // Every wake-up is later than 1 ns: 100 % over the threshold; period and
    // exec have no threshold.
    let lat = &t["metrics"]["latency"];
    assert_eq!(u(&lat["threshold"]), 1);
    assert_eq!(u(&lat["over_threshold"]), u(&lat["count"]));
    assert!(t["metrics"]["period"]["over_threshold"].is_null());
    assert!(t["metrics"]["exec"]["threshold"].is_null());
    assert_eq!(t["outliers"]["latency"].as_array().unwrap().len(), 3);
    // 250 ms windows over 1.5 s: six rows, or seven when the last release
    // falls just past a window boundary.
    let rows = u(&t["window_rows"]);
    assert!((6..=7).contains(&rows), "{rows} rows");
    assert_eq!(
        std::fs::read_to_string(&csv).unwrap().lines().count() as u64,
        rows + 1
    );
    // 50 one-microsecond buckets, numbered 000000 to 000049.
    let h = std::fs::read_to_string(&hist).unwrap();
    let buckets: Vec<&str> = h
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .collect();
    assert_eq!(buckets.len(), 50);
    assert!(buckets[49].starts_with("000049 "));
    // --progress prints plain status lines on stderr when stdout is a pipe.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.lines().any(|l| l.starts_with("CPU 1: C:")), "{err}");
}

#[test]
#[serial]
fn round_robin_is_applied_and_verified() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    jl().args([
        "run",
        "wakeup",
        "--policy",
        "rr",
        "--priority",
        "80",
        "--cycles",
        "20",
        "--cpus",
        "1",
    ])
    .arg("--json")
    .arg(&json)
    .assert()
    .code(0);
    let r = read_json(&json);
    let sched = r["realtime"]["defaults"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == "scheduler")
        .unwrap()
        .clone();
    assert_eq!(sched["requested"], "SCHED_RR priority 80");
    if is_root() {
        assert_eq!(sched["applied"], true);
        assert_eq!(
            sched["detail"],
            "SCHED_RR priority 80 verified with sched_getscheduler"
        );
    } else {
        eprintln!("note: not root: SCHED_RR could not be applied; checked that it says so");
        assert_eq!(sched["applied"], false);
    }
}

#[test]
#[serial]
fn a_run_is_stored_and_its_report_is_the_summary_it_printed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let cpu = last_online_cpu().to_string();
    let out = jl()
        .arg("--db")
        .arg(&db)
        .args(["run", "wakeup", "--cycles", "1500", "--cpus", &cpu])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains(&format!("jitterlab: stored as run 1 in {}", db.display())));
    // The stored result renders to exactly what the run printed.
    let rep = jl().arg("--db").arg(&db).arg("report").output().unwrap();
    assert_eq!(rep.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&rep.stdout),
        String::from_utf8_lossy(&out.stdout)
    );
    let json = jl()
        .arg("--db")
        .arg(&db)
        .args(["report", "1", "--format", "json"])
        .output()
        .unwrap();
    let r: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(u(&r["threads"][0]["cycles"]), 1500);
    let runs = jl().arg("--db").arg(&db).arg("runs").output().unwrap();
    let text = String::from_utf8_lossy(&runs.stdout);
    let line = text.lines().nth(1).unwrap();
    assert!(line.trim_start().starts_with("1  "), "{text}");
    assert!(
        line.contains(" wakeup ") && line.contains(" completed "),
        "{text}"
    );
    assert!(line.contains(" 1500 "), "{text}");
    // A second run gets the next id and becomes the default report.
    jl().arg("--db")
        .arg(&db)
        .args(["run", "cyclic", "--cycles", "50", "--cpu", &cpu])
        .assert()
        .code(0);
    let rep = jl().arg("--db").arg(&db).arg("report").output().unwrap();
    let rep = String::from_utf8_lossy(&rep.stdout);
    assert!(rep.starts_with("Record\njitterlab    "), "{rep}");
    assert!(rep.contains("\n\nprobe        cyclic\n"), "{rep}");
}

#[test]
#[serial]
fn a_killed_run_is_kept_and_marked_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("k.db");
    let bin = assert_cmd::cargo::cargo_bin("jitterlab");
    let mut child = StdCommand::new(bin)
        .env("JITTERLAB_JOURNAL", test_db().join("journal.json"))
        .arg("--db")
        .arg(&db)
        .args([
            "run",
            "wakeup",
            "--duration",
            "60s",
            "--cpus",
            "1",
            "--window",
            "500ms",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2_700));
    child.kill().unwrap(); // SIGKILL: nothing can be cleaned up
    child.wait().unwrap();
    let runs = jl().arg("--db").arg(&db).arg("runs").output().unwrap();
    assert_eq!(runs.status.code(), Some(0));
    let text = String::from_utf8_lossy(&runs.stdout);
    let line = text.lines().nth(1).unwrap();
    assert!(line.contains(" interrupted "), "{text}");
    // 2.7 s of 500 ms windows: at least four complete windows were committed.
    let fields: Vec<&str> = line.split_whitespace().collect();
    let windows: u64 = fields[fields.len() - 2].parse().unwrap();
    assert!((4..=6).contains(&windows), "{text}");
    let rep = jl()
        .arg("--db")
        .arg(&db)
        .args(["report", "1"])
        .output()
        .unwrap();
    assert_eq!(rep.status.code(), Some(0));
    let t = String::from_utf8_lossy(&rep.stdout);
    assert!(t.starts_with("Record\njitterlab    "), "{t}");
    assert!(t.contains("\n\nrun 1 (wakeup, started "), "{t}");
    assert!(t.contains("did not finish"), "{t}");
    assert!(
        t.contains(&format!("stored until then: {windows} window rows")),
        "{t}"
    );
}

#[test]
fn reports_need_an_existing_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("none.db");
    for cmd in ["runs", "report"] {
        let out = jl().arg("--db").arg(&db).arg(cmd).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!(
                "jitterlab: error: no results database at {}; run a probe first (jitterlab run cyclic) or name the database with --db\n",
                db.display()
            )
        );
    }
    assert!(!db.exists(), "a report must not create a database");
}

#[test]
fn bad_db_paths_are_refused_and_no_db_writes_none() {
    refuses(
        &["--db", "/nonexistent/dir/j.db", "run", "cyclic"],
        "--db /nonexistent/dir/j.db: directory /nonexistent/dir does not exist; create it or choose another path",
    );
}

#[test]
#[serial]
fn no_db_stores_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("j.db");
    jl().arg("--db")
        .arg(&db)
        .args(["run", "wakeup", "--cycles", "20", "--cpus", "1", "--no-db"])
        .assert()
        .code(0);
    assert!(!db.exists());
}

#[test]
fn check_audits_the_vm_fixture() {
    let out = jl()
        .args(["--sysroot"])
        .arg(fixture("sysroot-vm"))
        .arg("check")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.lines()
            .any(|l| l.starts_with("warn") && l.contains("realtime-kernel")),
        "{text}"
    );
    let last = text.lines().last().unwrap();
    let rest = last.split(", ").map(|part| part.split_once(' ').unwrap().1);
    assert_eq!(
        rest.collect::<Vec<_>>(),
        ["ok", "info", "warn", "fail"],
        "{text}"
    );
    assert!(last.ends_with(" 0 fail"), "{text}");

    let out = jl()
        .args(["--sysroot"])
        .arg(fixture("sysroot-vm"))
        .args(["check", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["host"]["hostname"], "vm");
    let findings = v["findings"].as_array().unwrap();
    assert_eq!(findings[0]["id"], "realtime-kernel");
    assert_eq!(findings[0]["severity"], "warn");
}

#[test]
fn check_audits_the_probe_cpus_given() {
    refuses(
        &["check", "--cpus", "1-3"],
        "--cpus 1-3: CPUs 2-3 are not online (online CPUs: 0-1); name the probe CPUs among them",
    );
    let out = jl()
        .args(["--sysroot"])
        .arg(fixture("sysroot-vm"))
        .args(["check", "--json", "--cpus", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let irqs = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "irqs-on-probe-cpus")
        .unwrap();
    assert_eq!(
        irqs["summary"],
        "11 IRQs are routed to probe CPU 0 (interrupts taken there since boot): 41 virtio3-rx (5483), 42 virtio3-tx (3726), 39 virtio2-output.0 (2203), 32 virtio0-reporting_vq (998), 31 virtio0-stats (267), 34 virtio4-input (178), 24 ACPI:Ged (1), 43 virtio3-event (1), 28 virtio0-config (0), 30 virtio0-deflate (0), and 1 more"
    );
    assert_eq!(
        irqs["fix"],
        "set irq_cpus = \"1\" in a configuration of your spec: jitterlab bench and jitterlab apply move them there for the cell (pausing irqbalance meanwhile)"
    );
}
