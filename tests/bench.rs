//! `jitterlab bench`, `restore`, `presets` and `report` end to end: spec
//! errors with their exact messages, the plan, real short benches with real
//! neighbours, and what is left on the machine afterwards — after success,
//! after a neighbour failed, after SIGINT, and after `kill -9` followed by
//! `jitterlab restore`.
//!
//! Neighbours are found by a number no other process carries in its command
//! line (`sleep 86401`, `stress-ng … --cpu-ops 98765432`), so a test can
//! prove that no process of theirs is left.
//!
//! The documents cited here are listed in `docs/design.md`.

use std::path::Path;
use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use serial_test::serial;

#[path = "common/harness.rs"]
mod harness;
use harness::{
    assert_exit_follows_verdicts, jl_with, journal, processes_with, spec, wait_gone, wait_started,
};

fn have(tool: &str) -> bool {
    StdCommand::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

const TWO_BY_TWO: &str = r#"
name = "lifecycle"
duration = "1s"
warmup = "300ms"

[[configuration]]
name = "baseline"
policy = "other"
dma_latency = false

[[configuration]]
name = "tuned"

[[scenario]]
name = "idle"
builtin = "idle"

[[scenario]]
name = "sleeper"
[[scenario.neighbour]]
command = ["sleep", "86401"]

[[probe]]
kind = "cyclic"
period = "1ms"
scan = "100us"
working_set = "64KiB"
"#;

#[test]
fn a_spec_error_names_file_line_and_key_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("j.db");
    let p = dir.path().join("bad.toml");
    std::fs::write(
        &p,
        "duration = \"1s\"\n\n[[configuration]]\nname = \"x\"\nprobe_cpus = \"99\"\n\n[[probe]]\nkind = \"cyclic\"\n",
    )
    .unwrap();
    let out = jl_with(&db).arg("bench").arg(&p).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "jitterlab: error: {}:5: configuration[0].probe_cpus: CPU 99 is not online (online CPUs: {})\n",
            p.display(),
            online.trim()
        )
    );
    assert!(!db.exists(), "a refused bench creates no database");
}

#[test]
fn a_missing_spec_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = jl_with(&dir.path().join("j.db"))
        .args(["bench", "/nonexistent/spec.toml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "jitterlab: error: cannot read the spec /nonexistent/spec.toml: No such file or directory (os error 2); give the path of a TOML spec (examples/ has some) or use --preset\n"
    );
}

#[test]
fn an_unknown_preset_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = jl_with(&dir.path().join("j.db"))
        .args(["bench", "--preset", "nope"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "jitterlab: error: there is no preset nope; list them with: jitterlab presets\n"
    );
}

#[test]
fn dry_run_prints_the_plan_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("j.db");
    let p = spec("dry.toml", TWO_BY_TWO);
    let out = jl_with(&db)
        .args(["bench", "--dry-run"])
        .arg(&p)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("4 cells"), "{text}");
    assert!(text.contains("tuned/sleeper/host/cyclic"), "{text}");
    assert!(!db.exists(), "--dry-run creates no database");
    assert!(processes_with("86401").is_empty());
}

#[test]
fn presets_are_listed_and_fitted_to_the_machine() {
    let out = Command::cargo_bin("jitterlab")
        .unwrap()
        .arg("presets")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    let names: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with(' ') && !l.is_empty() && !l.starts_with("run one"))
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(
        names,
        ["codesys", "redhat", "caterpillar", "epics", "powerlink"],
        "{text}"
    );
    let out = Command::cargo_bin("jitterlab")
        .unwrap()
        .args(["presets", "--show", "powerlink"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    for cond in [
        "idle",
        "cpu",
        "disk",
        "usb",
        "network",
        "scheduling",
        "misc",
    ] {
        assert!(text.contains(&format!("builtin = \"{cond}\"")), "{text}");
    }
    // [Red Hat caterpillar]'s machine (L2 allocation, 20 ways, CPUs 0-3): the test CPU
    // gets the upper half of the L2, everything else the lower half.
    let out = Command::cargo_bin("jitterlab")
        .unwrap()
        .args(["--sysroot", "tests/fixtures/resctrl-l2-20bit"])
        .args(["presets", "--show", "caterpillar"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "[[configuration]]\nname = \"cache-reserved\"\nprobe_cpus = \"3\"\nneighbour_cpus = \"2\"\nirq_cpus = \"0\"\npolicy = \"fifo\"\npriority = 95\ndma_latency = true\n\n\
             [[configuration.cache]]\ngroup = \"caterpillar\"\ncpus = \"3\"\nl2 = { ways = \"10-19\" }\n\n\
             [configuration.cache_default]\nl2 = { ways = \"0-9\" }\n"
        ),
        "{text}"
    );
}

/// [Intel CODESYS]'s machine (L3 of 8 ways, 4 CLOSIDs, CPUs 0-3): codesys's
/// Configuration 3 reserves the upper half for the probe CPU; redhat gives
/// the controller and the I/O simulator two ways each (Table 9's shape).
#[test]
fn presets_reserve_cache_ways_for_the_real_time_cpus_from_the_machine() {
    let show = |name: &str| {
        let out = Command::cargo_bin("jitterlab")
            .unwrap()
            .args(["--sysroot", "tests/fixtures/resctrl-l3-8ways"])
            .args(["presets", "--show", name])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let text = show("codesys");
    assert!(
        text.contains(
            "[[configuration]]\nname = \"cache-partitioned\"\nprobe_cpus = \"3\"\nneighbour_cpus = \"0-2\"\npolicy = \"fifo\"\npriority = 95\ndma_latency = true\n\n\
             [[configuration.cache]]\ngroup = \"codesys\"\ncpus = \"3\"\nl3 = { ways = \"4-7\" }\n\n\
             [configuration.cache_default]\nl3 = { ways = \"0-3\" }\n"
        ),
        "{text}"
    );
    let text = show("redhat");
    assert!(
        text.contains(
            "[[configuration]]\nname = \"cache-partitioned\"\nprobe_cpus = \"3\"\nneighbour_cpus = \"0-1\"\npolicy = \"fifo\"\npriority = 95\ndma_latency = true\n\n\
             [[configuration.cache]]\ngroup = \"redhat-controller\"\ncpus = \"3\"\nl3 = { ways = \"6-7\" }\n\n\
             [[configuration.cache]]\ngroup = \"redhat-io\"\ncpus = \"2\"\nl3 = { ways = \"4-5\" }\n\n\
             [configuration.cache_default]\nl3 = { ways = \"0-3\" }\n"
        ),
        "{text}"
    );
    assert!(text.contains("\nio_cpu = \"2\"\n"), "{text}");
    // The fixture's cache is listed as available: no N/A line for either.
    let out = Command::cargo_bin("jitterlab")
        .unwrap()
        .args(["--sysroot", "tests/fixtures/resctrl-l3-8ways"])
        .arg("presets")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text.contains("configuration cache-partitioned: N/A"),
        "{text}"
    );
}

#[test]
#[serial]
fn a_bench_stores_every_cell_and_leaves_no_neighbour() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("j.db");
    let json = dir.path().join("run.json");
    let p = spec("lifecycle.toml", TWO_BY_TWO);
    let out = jl_with(&db)
        .arg("bench")
        .arg(&p)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Configurations"), "{stdout}");
    assert!(stdout.contains("Conditions"), "{stdout}");
    assert!(wait_gone("86401", Duration::from_secs(2)).is_empty());
    assert!(
        !journal().exists(),
        "the journal is removed after a clean end"
    );

    let text = std::fs::read_to_string(&json).unwrap();
    let run: serde_json::Value = serde_json::from_str(&text).unwrap();
    // The record first: the header, then the verdict block, as `report
    // RUN --format json` prints them.
    assert!(
        text.starts_with("{\n  \"header\": {\n    \"tool_version\": "),
        "{text}"
    );
    assert_eq!(run["header"]["spec"], "lifecycle", "{text}");
    let verdict_at = text.find("\n  \"verdict\": {").unwrap();
    assert!(
        verdict_at < text.find("\n  \"cells\": [").unwrap(),
        "{text}"
    );
    assert_eq!(run["verdict"]["exit_status"], 0, "{}", run["verdict"]);
    let cells = run["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 4);
    let names: Vec<String> = cells
        .iter()
        .map(|c| {
            format!(
                "{}/{}",
                c["key"]["configuration"].as_str().unwrap(),
                c["key"]["scenario"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            "baseline/idle",
            "baseline/sleeper",
            "tuned/idle",
            "tuned/sleeper"
        ]
    );
    for c in cells {
        assert_eq!(c["status"], "completed", "{c}");
        let threads = c["result"]["threads"].as_array().unwrap();
        let cycles = threads[0]["cycles"].as_u64().unwrap();
        // 1 s at 1 ms: at most 1000 releases, most of them measured.
        assert!((500..=1000).contains(&cycles), "cycles {cycles}");
        assert_eq!(c["context"]["cpus"].as_array().unwrap().len(), 1);
    }
    let sleeper = &cells[1]["context"]["neighbours"][0];
    assert_eq!(sleeper["argv"], serde_json::json!(["sleep", "86401"]));
    assert_eq!(sleeper["healthy"], true);
    assert_eq!(sleeper["end"], "stopped");
    // The scan was calibrated once, before any neighbour, for every cell.
    let cal = |i: usize| cells[i]["result"]["threads"][0]["calibration"]["iterations"].clone();
    assert_eq!(cal(0), cal(3));

    let out = jl_with(&db).arg("runs").output().unwrap();
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(listing.contains("bench  lifecycle"), "{listing}");
    assert!(listing.contains("4/4"), "{listing}");
}

#[test]
#[serial]
fn stress_ng_proves_its_noise_with_cpu_time_and_bogo_ops() {
    if !have("stress-ng") {
        eprintln!("skipping: stress-ng is not installed (apt-get install stress-ng)");
        return;
    }
    let (out, run) = bench_with_json(
        "noise.toml",
        r#"
duration = "2s"
warmup = "500ms"
[[scenario]]
name = "cpu"
[[scenario.neighbour]]
command = ["stress-ng", "--cpu", "1", "--cpu-ops", "98765432", "--metrics-brief"]
[[probe]]
kind = "wakeup"
"#,
    );
    // Its load is a verdict: 0 when it delivered it, 1 naming it when not.
    assert_exit_follows_verdicts(&out);
    let verdicts = &run["verdict"]["cells"][0]["verdicts"];
    assert_eq!(
        verdicts[1]["name"], "neighbour stress-ng load",
        "{verdicts}"
    );
    assert!(wait_gone("98765432", Duration::from_secs(2)).is_empty());
    let n = &run["cells"][0]["context"]["neighbours"][0];
    let cpu = n["cpu_time_ns"].as_u64().unwrap() as f64;
    let wall = n["wall_ns"].as_u64().unwrap() as f64;
    // One worker on one CPU: busy for a large part of the measured 2 s,
    // never more than the one CPU (plus a tick of rounding).
    assert!(wall >= 1.9e9, "wall {wall}");
    assert!(
        cpu > 0.3 * wall && cpu <= wall + 2e7,
        "cpu {cpu} wall {wall}"
    );
    assert!(n["bogo_ops"]["cpu"].as_u64().unwrap() > 0, "{n}");
}

#[test]
#[serial]
fn a_neighbour_that_dies_early_fails_its_cell_with_its_stderr() {
    let (out, run) = bench_with_json(
        "dies.toml",
        r#"
duration = "1s"
warmup = "500ms"
[[scenario]]
name = "broken"
[[scenario.neighbour]]
command = ["ls", "/nonexistent-86402"]
[[probe]]
kind = "wakeup"
"#,
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let cell = &run["cells"][0];
    assert_eq!(cell["status"], "failed");
    let failure = cell["context"]["failure"].as_str().unwrap();
    assert!(
        failure.starts_with("neighbour ls (ls /nonexistent-86402) exited early with status 2"),
        "{failure}"
    );
    assert!(failure.contains("No such file or directory"), "{failure}");
    assert!(!journal().exists());
}

#[test]
#[serial]
fn sigint_ends_the_bench_and_leaves_no_neighbour() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("j.db");
    let p = spec(
        "sigint.toml",
        r#"
duration = "30s"
warmup = "300ms"
[[scenario]]
name = "sleeper"
[[scenario.neighbour]]
command = ["sleep", "86401"]
[[scenario]]
name = "idle"
builtin = "idle"
[[probe]]
kind = "wakeup"
"#,
    );
    let child = spawn_bench(&p, &db, true);
    // Into the first cell, whose neighbour runs.
    wait_started("86401");
    std::thread::sleep(Duration::from_millis(500));
    jitterlab_sys_kill(child.id() as i32, 2);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(wait_gone("86401", Duration::from_secs(2)).is_empty());
    assert!(!journal().exists());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("the bench was interrupted"), "{stderr}");
}

/// A bench whose stderr cannot be written (`2>/dev/full`) measures, stores
/// and puts the machine back as if its diagnostics had been read: a failed
/// write to stderr is ignored, never a panic between two settings.
#[test]
#[serial]
fn a_bench_with_an_unwritable_stderr_ends_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("j.db");
    let p = spec(
        "full-stderr.toml",
        "name = \"full\"\nduration = \"1s\"\nwarmup = \"300ms\"\n[[probe]]\nkind = \"cyclic\"\n",
    );
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = StdCommand::new(assert_cmd::cargo::cargo_bin("jitterlab"))
        .env("JITTERLAB_DB", &db)
        .env("JITTERLAB_JOURNAL", journal())
        .arg("bench")
        .arg(&p)
        .stderr(full)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(
        !journal().exists(),
        "the journal is removed after a clean end"
    );
    let out = jl_with(&db).arg("runs").output().unwrap();
    let listing = String::from_utf8_lossy(&out.stdout);
    let row = listing.lines().find(|l| l.contains("bench  full")).unwrap();
    let words: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(words[5..7], ["completed", "1/1"], "{listing}");
}

#[test]
#[serial]
fn a_verdict_that_fails_makes_exit_1_after_every_cell_has_run() {
    let dir = tempfile::tempdir().unwrap();
    let (json, junit) = (dir.path().join("run.json"), dir.path().join("run.xml"));
    let p = spec(
        "limits.toml",
        r#"
name = "limits"
duration = "500ms"
warmup = "100ms"

[[configuration]]
name = "baseline"
policy = "other"
dma_latency = false

[[scenario]]
name = "idle"
builtin = "idle"

[[scenario]]
name = "again"
builtin = "idle"

[[probe]]
kind = "cyclic"
period = "1ms"
scan = "100us"
working_set = "64KiB"
max_latency = "1ns"
"#,
    );
    let out = jl_with(&dir.path().join("j.db"))
        .arg("bench")
        .arg(&p)
        .arg("--json")
        .arg(&json)
        .arg("--junit")
        .arg(&junit)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    // Both cells ran and were stored: the first failure did not stop the
    // sweep.
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let cells = run["cells"].as_array().unwrap();
    assert_eq!(
        cells
            .iter()
            .map(|c| c["status"].clone())
            .collect::<Vec<_>>(),
        ["completed", "completed"]
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("\nverdict: 2 of 2 verdicts did not pass, exit status 1\n  baseline/idle/host/cyclic rep 0\n    FAIL latency: max "),
        "{stdout}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    for cell in ["idle", "again"] {
        assert!(
            stderr.contains(&format!(
                "jitterlab: did not pass: baseline/{cell}/host/cyclic rep 0: FAIL latency: max "
            )),
            "{stderr}"
        );
    }
    let text = std::fs::read_to_string(&junit).unwrap();
    let doc = roxmltree::Document::parse(&text).unwrap();
    let root = doc.root_element();
    assert_eq!(
        ["name", "tests", "failures", "errors", "skipped"].map(|a| root.attribute(a).unwrap()),
        ["jitterlab bench limits", "2", "2", "0", "0"]
    );
    let cases: Vec<(&str, &str, &str)> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .map(|c| {
            let f = c.children().find(|n| n.has_tag_name("failure")).unwrap();
            let message = f.attribute("message").unwrap();
            assert!(
                message.starts_with("max ") && message.ends_with(" > limit 0.001us"),
                "{message}"
            );
            (
                c.attribute("classname").unwrap(),
                c.attribute("name").unwrap(),
                f.attribute("type").unwrap(),
            )
        })
        .collect();
    assert_eq!(
        cases,
        [
            ("baseline/idle/host/cyclic rep 0", "latency", "fail"),
            ("baseline/again/host/cyclic rep 0", "latency", "fail"),
        ]
    );
}

/// Runs `jitterlab bench` on a spec written from `text`, in a fresh
/// database, and returns its output and the stored run `--json` wrote.
fn bench_with_json(name: &str, text: &str) -> (std::process::Output, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let out = jl_with(&dir.path().join("j.db"))
        .arg("bench")
        .arg(spec(name, text))
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let run = std::fs::read_to_string(&json)
        .map(|t| serde_json::from_str(&t).unwrap())
        .unwrap_or(serde_json::Value::Null);
    (out, run)
}

/// Starts `jitterlab bench SPEC` in the background with the test's journal.
/// `capture`: keep stdout and stderr for `wait_with_output`.
fn spawn_bench(spec: &Path, db: &Path, capture: bool) -> std::process::Child {
    let out = || {
        if capture {
            Stdio::piped()
        } else {
            Stdio::null()
        }
    };
    StdCommand::new(assert_cmd::cargo::cargo_bin("jitterlab"))
        .arg("bench")
        .arg(spec)
        .env("JITTERLAB_DB", db)
        .env("JITTERLAB_JOURNAL", journal())
        .stdout(out())
        .stderr(out())
        .spawn()
        .unwrap()
}

/// `kill(2)` through the `kill` program (tests have no `unsafe`).
fn jitterlab_sys_kill(pid: i32, sig: i32) {
    let ok = StdCommand::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -{sig} {pid}");
}

#[test]
#[serial]
fn after_kill_9_the_run_is_kept_and_restore_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("j.db");
    let p = spec(
        "crash.toml",
        r#"
duration = "60s"
warmup = "200ms"
[[scenario]]
name = "sleeper"
[[scenario.neighbour]]
command = ["sleep", "86403"]
[[probe]]
kind = "cyclic"
period = "1ms"
scan = "50us"
working_set = "16KiB"
"#,
    );
    let mut child = spawn_bench(&p, &db, false);
    wait_started("86403");
    // Let a few windows be committed, then kill -9 mid-cell.
    std::thread::sleep(Duration::from_millis(3_500));
    child.kill().unwrap();
    child.wait().unwrap();

    // The database opens; the run is listed, interrupted, with its windows.
    let out = jl_with(&db).arg("runs").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let listing = String::from_utf8_lossy(&out.stdout);
    let line = listing
        .lines()
        .find(|l| l.contains("bench"))
        .expect("the bench is listed");
    assert!(line.contains("interrupted"), "{listing}");
    let windows: u64 = line
        .split_whitespace()
        .rev()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    assert!(windows >= 2, "every committed window is kept: {listing}");

    // The report shows what the killed cell measured, marked partial.
    let out = jl_with(&db).arg("report").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let report = String::from_utf8_lossy(&out.stdout);
    let row = report
        .lines()
        .find(|l| l.starts_with("default/sleeper/host/cyclic"))
        .unwrap_or_else(|| panic!("a latency row for the killed cell: {report}"));
    assert!(row.contains(" 0/1 "), "{row}");
    assert_eq!(
        row.matches(" µs*").count(),
        2,
        "min and max, partial: {row}"
    );
    assert!(
        report.contains("* partial: no repetition completed;"),
        "{report}"
    );

    // While the journal is unreplayed, run and bench refuse.
    let out = jl_with(&db)
        .args(["run", "wakeup", "--duration", "100ms"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("run `jitterlab restore` first"), "{stderr}");

    // The sleeper may survive kill -9 only through a missed parent-death
    // signal; restore kills whatever is left of its group either way.
    let out = jl_with(&db).arg("restore").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(wait_gone("86403", Duration::from_secs(2)).is_empty());
    assert!(!journal().exists());
    let out = jl_with(&db).arg("restore").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "nothing to restore\n");
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap()
}

/// Every IRQ's affinity and the default mask, as the kernel shows them.
fn irq_affinities() -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = std::fs::read_dir("/proc/irq")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let p = e.path().join("smp_affinity_list");
            Some((
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read_to_string(p).ok()?,
            ))
        })
        .collect();
    v.push(("default".into(), read("/proc/irq/default_smp_affinity")));
    v.sort();
    v
}

#[test]
#[serial]
fn a_configurations_settings_are_applied_verified_and_restored() {
    if jitterlab_sys::effective_uid() != 0 {
        eprintln!("skipping: changing sysctls and IRQ affinity needs root");
        return;
    }
    let before = (
        read("/proc/sys/kernel/timer_migration"),
        read("/proc/sys/kernel/sched_rt_runtime_us"),
        irq_affinities(),
    );
    let (out, run) = bench_with_json(
        "settings.toml",
        r#"
duration = "1s"
warmup = "0"
[[configuration]]
name = "tuned"
irq_cpus = "0"
timer_migration = false
rt_runtime_us = -1
[[probe]]
kind = "wakeup"
"#,
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let after = (
        read("/proc/sys/kernel/timer_migration"),
        read("/proc/sys/kernel/sched_rt_runtime_us"),
        irq_affinities(),
    );
    assert_eq!(after, before, "every value is back");
    assert!(!journal().exists());
    let settings = run["cells"][0]["context"]["settings"].as_array().unwrap();
    let by_name = |n: &str| {
        settings
            .iter()
            .find(|s| s["name"] == n)
            .unwrap_or_else(|| panic!("{n} in {settings:?}"))
    };
    let tm = by_name("kernel.timer_migration");
    assert_eq!(tm["verified"], "0");
    assert_eq!(tm["ok"], true);
    assert_eq!(tm["before"], before.0.trim());
    let rt = by_name("kernel.sched_rt_runtime_us");
    assert_eq!(rt["verified"], "-1");
    let irq = by_name("irq_affinity");
    assert!(
        irq["verified"].as_str().unwrap().starts_with("default 0;"),
        "{irq}"
    );
}

#[test]
fn a_setting_this_machine_cannot_make_is_refused_before_anything_starts() {
    if std::path::Path::new("/sys/devices/system/cpu/cpufreq/policy0").exists() {
        eprintln!("skipping: this machine has cpufreq; the refusal is for machines without it");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("j.db");
    let p = spec(
        "governor.toml",
        "duration = \"1s\"\n[[configuration]]\nname = \"perf\"\ngovernor = \"performance\"\n[[probe]]\nkind = \"wakeup\"\n",
    );
    let out = jl_with(&db).arg("bench").arg(&p).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("jitterlab: error: configuration perf: cpufreq is not available here"),
        "{stderr}"
    );
    assert!(!db.exists());
}

#[test]
#[serial]
fn apply_holds_a_configuration_until_sigterm_and_puts_it_back() {
    if jitterlab_sys::effective_uid() != 0 {
        eprintln!("skipping: changing sysctls needs root");
        return;
    }
    let p = spec(
        "apply.toml",
        "duration = \"1s\"\n[[configuration]]\nname = \"quiet\"\ntimer_migration = false\n[[probe]]\nkind = \"wakeup\"\n",
    );
    let before = read("/proc/sys/kernel/timer_migration");
    let child = StdCommand::new(assert_cmd::cargo::cargo_bin("jitterlab"))
        .arg("apply")
        .arg(&p)
        .env("JITTERLAB_JOURNAL", journal())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Whatever fails below, the held configuration is let go (SIGTERM puts
    // it back), so a failed assertion never leaves the machine changed.
    struct LetGo(i32);
    impl Drop for LetGo {
        fn drop(&mut self) {
            jitterlab_sys_kill(self.0, 15);
        }
    }
    let guard = LetGo(child.id() as i32);
    let end = Instant::now() + Duration::from_secs(10);
    while read("/proc/sys/kernel/timer_migration") != "0\n" && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(read("/proc/sys/kernel/timer_migration"), "0\n", "applied");
    assert!(journal().exists(), "journaled while held");
    drop(guard);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(read("/proc/sys/kernel/timer_migration"), before);
    assert!(!journal().exists());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("restored /proc/sys/kernel/timer_migration to \"1\"") || before != "1\n",
        "{stdout}"
    );
}

/// `jitterlab bench --preset NAME ARGS --json FILE` in a fresh database:
/// the output and the stored run.
fn preset_with_json(name: &str, args: &[&str]) -> (std::process::Output, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let out = jl_with(&dir.path().join("j.db"))
        .args(["bench", "--preset", name])
        .args(args)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let run = std::fs::read_to_string(&json)
        .map(|t| serde_json::from_str(&t).unwrap())
        .unwrap_or(serde_json::Value::Null);
    (out, run)
}

#[test]
#[serial]
fn the_caterpillar_preset_ends_each_cell_after_its_200_samples() {
    if jitterlab_sys::effective_uid() != 0 || !have("stress-ng") {
        eprintln!("skipping: the caterpillar preset moves IRQs (root) and starts stress-ng");
        return;
    }
    let (out, run) = preset_with_json("caterpillar", &["--warmup", "0"]);
    assert_exit_follows_verdicts(&out);
    let cells = run["cells"].as_array().unwrap();
    let resctrl = Path::new("/sys/fs/resctrl/info").is_dir();
    assert_eq!(cells.len(), if resctrl { 4 } else { 2 }, "{run}");
    for c in cells {
        assert_eq!(c["status"], "completed", "{c}");
        let m = &c["result"]["threads"][0]["metrics"];
        // 200 samples of 100 timed chases, then the cell ends (well before
        // its 60 s cap).
        assert_eq!(m["sample-jitter"]["count"], 200, "{c}");
        assert_eq!(m["chase"]["count"], 20_000, "{c}");
        // A chase of 1024 dependent loads takes at least a cycle per load.
        assert!(m["chase"]["min"].as_u64().unwrap() >= 1024, "{c}");
    }
    assert_eq!(cells[0]["key"]["scenario"], "idle");
    let n = &cells[1]["context"]["neighbours"][0];
    assert_eq!(
        n["argv"],
        serde_json::json!(["stress-ng", "--cache", "1", "--metrics-brief"])
    );
    assert_eq!(n["healthy"], true, "{n}");
    // Its load is judged against the one CPU it asked for.
    assert_eq!(n["load"]["asked_milli"], 1000, "{n}");
    assert_eq!(n["load"]["basis"], "--cache 1 = 1.00 CPU", "{n}");
    for c in cells {
        // The best real-time set-up: PM QoS held, so the result is real-time.
        let dma = c["result"]["realtime"]["defaults"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["name"] == "cpu_dma_latency")
            .cloned()
            .unwrap();
        assert_eq!(dma["applied"], true, "{dma}");
        assert_eq!(c["result"]["realtime"]["realtime"], true, "{c}");
        // Throttling was read: the runtime limit as the machine has it.
        let runtime: i64 = std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us")
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_eq!(
            c["context"]["throttling"]["limit"]["runtime_us"], runtime,
            "{c}"
        );
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Chase (baseline: baseline)"), "{stdout}");
    if !resctrl {
        assert!(
            stdout.contains("cache-reserved/neighbour/host/chase     -        N/A"),
            "{stdout}"
        );
    }
}

/// A FIFO chase that never sleeps, on a CPU where a normal task is always
/// runnable, with `kernel.sched_rt_runtime_us` at its default (950000 of
/// 1000000): the kernel holds it off for up to 50 ms of every second, and
/// the cell marks each window that happened in — stored with the cell
/// (`throttling.windows_hit`), one per stall's window, and named in the
/// text report. The machine's settings are read, never changed: with
/// another limit the test says so and skips.
#[test]
#[serial]
fn rt_throttling_marks_the_windows_it_hit() {
    if jitterlab_sys::effective_uid() != 0 {
        eprintln!("skipping: a SCHED_FIFO probe needs root");
        return;
    }
    let read = |f: &str| {
        std::fs::read_to_string(format!("/proc/sys/kernel/{f}"))
            .unwrap()
            .trim()
            .to_string()
    };
    let (runtime, period) = (read("sched_rt_runtime_us"), read("sched_rt_period_us"));
    if (runtime.as_str(), period.as_str()) != ("950000", "1000000") {
        eprintln!("skipping: sched_rt_runtime_us {runtime} of {period}, not the default 950000 of 1000000");
        return;
    }
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let cpu = online.trim().rsplit(['-', ',']).next().unwrap().to_string();
    let (out, run) = bench_with_json(
        "throttled.toml",
        &format!(
            r#"
duration = "4s"
warmup = "0s"
[[configuration]]
name = "fifo"
probe_cpus = "{cpu}"
policy = "fifo"
priority = 95
[[scenario]]
name = "busy"
[[scenario.neighbour]]
command = ["sh", "-c", "while :; do :; done # 86431"]
cpus = "{cpu}"
[[probe]]
kind = "chase"
iterations = 100
samples = 1000000
"#
        ),
    );
    assert_exit_follows_verdicts(&out);
    assert!(wait_gone("86431", Duration::from_secs(2)).is_empty());
    let t = &run["cells"][0]["context"]["throttling"];
    assert_eq!(t["realtime_probe"], true, "{t}");
    let hit = t["windows_hit"].as_array().unwrap();
    assert!(!hit.is_empty(), "no window marked: {t}");
    // One mark per window a stall fell in, each its window's span.
    let mut stalled: Vec<u64> = t["stalls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["window"].as_u64().unwrap())
        .collect();
    stalled.dedup();
    let marked: Vec<u64> = hit.iter().map(|w| w["window"].as_u64().unwrap()).collect();
    assert_eq!(marked, stalled, "{t}");
    for w in hit {
        let n = w["window"].as_u64().unwrap();
        assert_eq!(w["start_ns"].as_u64(), Some(n * 1_000_000_000), "{w}");
        assert_eq!(w["end_ns"].as_u64(), Some((n + 1) * 1_000_000_000), "{w}");
        // A hold-off of 50 ms, cut short or run a few ticks over.
        let longest = w["longest_ns"].as_u64().unwrap();
        assert!((25_000_000..=75_000_000).contains(&longest), "{w}");
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let first = &hit[0];
    assert!(
        stdout.contains(&format!(
            "fifo/busy/host/chase rep 0: RT throttling hit window {} ({}.000s to {}.000s: ",
            marked[0],
            marked[0],
            marked[0] + 1
        )),
        "{first}: {stdout}"
    );
}

/// Preset redhat for real, briefly: both loops over a veth pair, idle and
/// beside the seed's noisy neighbour; the round-trip table and the verdict
/// in the bench's report and in `report --format csv`. Whether the samples
/// stay within the budget on a noisy machine is not asserted: the exit
/// status and the verdict line must agree.
#[test]
#[serial]
fn the_redhat_preset_reports_the_round_trip_against_its_budget() {
    if jitterlab_sys::effective_uid() != 0 || !have("stress-ng") || !have("ip") {
        eprintln!(
            "skipping: the redhat preset makes network namespaces (root, ip) and starts stress-ng"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("j.db");
    let json = dir.path().join("run.json");
    let out = jl_with(&db)
        .args([
            "bench",
            "--preset",
            "redhat",
            "--duration",
            "2s",
            "--warmup",
            "0s",
        ])
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let code = out.status.code();
    assert!(matches!(code, Some(0) | Some(1)), "{out:?}");
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let cells = run["cells"].as_array().unwrap();
    let resctrl = Path::new("/sys/fs/resctrl/info").is_dir();
    // Configurations × idle and noisy × host and container.
    assert_eq!(cells.len(), if resctrl { 8 } else { 4 }, "{run}");
    let mut over = 0;
    for c in cells {
        assert_eq!(c["key"]["probe"], "roundtrip");
        if c["key"]["deployment"] == "container" && c["status"] == "skipped" {
            // A host that cannot run containers says why and runs the rest.
            eprintln!("container cell skipped: {}", c["context"]["notes"]);
            continue;
        }
        assert_eq!(c["status"], "completed", "{c}");
        let budget = &c["result"]["detail"]["budget"];
        assert_eq!(budget["budget_ns"], 6_700_000, "{c}");
        assert!(budget["samples"].as_u64().unwrap() > 0, "{c}");
        over += budget["over"].as_u64().unwrap();
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(
            "\nRound trip (Red Hat and Intel): screw to screw against the worst-case budget\n"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "\nOPC UA + Network + Controller rate + Controller scan time + Network + OPC UA = Worst-case\n500 µs + 100 µs + 5000 µs + 500 µs + 100 µs + 500 µs = 6.7 ms\nverdict: "
        ),
        "{stdout}"
    );
    // The exit status follows every verdict (the budget's and each
    // neighbour's load).
    assert_exit_follows_verdicts(&out);
    if over == 0 {
        assert!(stdout.contains("\nverdict: held (none of "), "{stdout}");
    } else {
        assert_eq!(code, Some(1), "{out:?}");
        let s = if over == 1 { "" } else { "s" };
        assert!(
            stdout.contains(&format!(
                "\nverdict: FAILED: {over} sample{s} beyond 6.7 ms (of "
            )),
            "{stdout}"
        );
    }
    if !resctrl {
        assert!(
            stdout.contains("\ncache-partitioned/noisy-neighbour/host/roundtrip  "),
            "{stdout}"
        );
    }
    let out = jl_with(&db)
        .args(["report", "--table", "roundtrip", "--format", "csv"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let csv = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = csv.lines().collect();
    // The round-trip table alone, tidy: its own columns, no `table` column.
    assert!(
        lines[0].starts_with("configuration,scenario,deployment,probe,reps,completed,status,"),
        "{csv}"
    );
    assert!(lines[0].ends_with(",over_budget,round_trips,t2_t3_p50_ns_min,t2_t3_p50_ns_max,t2_t3_max_ns_min,t2_t3_max_ns_max,max_abs_jitter_ns_min,max_abs_jitter_ns_max,exec_stddev_ns_min,exec_stddev_ns_max,releases_min,releases_max,cycles_min,cycles_max,skipped_min,skipped_max,overruns_min,overruns_max"), "{csv}");
    // Two configurations × two scenarios × host and container, each host
    // row beside its container row.
    assert_eq!(lines.len(), 1 + 8, "{csv}");
    // Each measured row says what its figures came from: the controller's
    // releases, of which the cycles measured and the skipped add up.
    let header: Vec<&str> = lines[0].split(',').collect();
    let at = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let first: Vec<&str> = lines[1].split(',').collect();
    let n = |name: &str| first[at(name)].parse::<u64>().unwrap();
    assert!(n("releases_min") > 0, "{csv}");
    assert_eq!(
        n("cycles_min") + n("skipped_min"),
        n("releases_min"),
        "{csv}"
    );
    assert!(
        lines[1].starts_with("baseline,idle,host,roundtrip,1,1,completed,"),
        "{csv}"
    );
    assert!(
        lines[2].starts_with("baseline,idle,container,roundtrip,1,"),
        "{csv}"
    );
    assert!(
        lines[3].starts_with("baseline,noisy-neighbour,host,roundtrip,1,1,completed,"),
        "{csv}"
    );
}

#[test]
#[serial]
fn the_epics_preset_measures_each_latency_or_says_why_not() {
    if jitterlab_sys::effective_uid() != 0 {
        eprintln!("skipping: the epics preset makes network namespaces (root)");
        return;
    }
    let (out, run) = preset_with_json("epics", &["--duration", "1s", "--warmup", "0"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let cells = run["cells"].as_array().unwrap();
    let names: Vec<String> = cells
        .iter()
        .map(|c| {
            format!(
                "{}/{}",
                c["key"]["scenario"].as_str().unwrap(),
                c["key"]["probe"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            "idle/timerlat",
            "idle/ctxswitch",
            "idle/response",
            "network/timerlat",
            "network/ctxswitch",
            "network/response"
        ]
    );
    for c in cells {
        let m = &c["result"]["threads"][0]["metrics"];
        match c["key"]["probe"].as_str().unwrap() {
            "timerlat" if c["status"] == "skipped" => {
                let notes = c["context"]["notes"].to_string();
                assert!(notes.contains("no interrupt latency here: "), "{notes}");
            }
            "timerlat" => assert_eq!(c["status"], "completed", "{c}"),
            "ctxswitch" => {
                assert_eq!(c["status"], "completed", "{c}");
                // One round trip (two hand-overs) per 1 ms for 1 s.
                let n = m["handover"]["count"].as_u64().unwrap();
                assert!((1000..=2000).contains(&n), "{n} hand-overs");
            }
            _ => {
                assert_eq!(c["status"], "completed", "{c}");
                // One datagram per 1 ms for 1 s, each answered; every one
                // also has its kernel receive timestamp.
                let n = m["response"]["count"].as_u64().unwrap();
                assert!((500..=1000).contains(&n), "{n} responses");
                assert_eq!(m["rx-to-thread"]["count"].as_u64(), Some(n));
                assert_eq!(m["response"]["threshold"], 100_000);
            }
        }
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("\ncell                          latency       reps"),
        "{stdout}"
    );
}
