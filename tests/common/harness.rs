//! What the tests that run real benches share: one scratch directory per
//! test process (database, journal, specs), the jitterlab command with the
//! test's journal, and the live processes a test started, found by a marker
//! in their command line, waited for until they start or go.

#![allow(dead_code)] // each test file uses its own part

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use assert_cmd::Command;

/// One scratch directory per test process: database, journal, specs.
pub fn scratch() -> &'static Path {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().unwrap()).path()
}

/// The test process's journal.
pub fn journal() -> PathBuf {
    scratch().join("journal.json")
}

/// `jitterlab` with the database `db` and the test's journal.
pub fn jl_with(db: &Path) -> Command {
    let mut c = Command::cargo_bin("jitterlab").unwrap();
    c.env("JITTERLAB_DB", db)
        .env("JITTERLAB_JOURNAL", journal());
    c
}

/// Writes a spec file `name` in the scratch directory.
pub fn spec(name: &str, text: &str) -> PathBuf {
    let p = scratch().join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// Pids of live processes whose command line contains `marker` (zombies
/// have an empty command line, so a match is a live process).
pub fn processes_with(marker: &str) -> Vec<u32> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(marker) && !cmd.contains("cargo") {
                v.push(pid);
            }
        }
    }
    v
}

/// Waits up to `within` for every process carrying `marker` to go; returns
/// those still alive.
pub fn wait_gone(marker: &str, within: Duration) -> Vec<u32> {
    let end = Instant::now() + within;
    loop {
        let left = processes_with(marker);
        if left.is_empty() || Instant::now() > end {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits (up to 20 s) until a process carrying `marker` runs.
pub fn wait_started(marker: &str) {
    let end = Instant::now() + Duration::from_secs(20);
    while processes_with(marker).is_empty() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!processes_with(marker).is_empty(), "{marker} started");
}

/// A bench's exit status follows its verdicts (the record's verdict block
/// in its text report): 0 when every verdict passed, 1 when one did not —
/// a neighbour short of its load on a busy machine is a failed verdict, not
/// a broken bench — and then every verdict that did not pass (`FAIL …`,
/// `NOT MEASURED …`) is named on stderr (`did not pass: CELL: LINE`).
pub fn assert_exit_follows_verdicts(out: &std::process::Output) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let headline = stdout
        .lines()
        .find(|l| l.starts_with("verdict: "))
        .unwrap_or_else(|| panic!("no verdict block: {out:?}"));
    if headline.ends_with(", exit status 0") {
        assert_eq!(out.status.code(), Some(0), "{headline}: {out:?}");
        return;
    }
    assert!(headline.ends_with(", exit status 1"), "{headline}");
    assert_eq!(out.status.code(), Some(1), "{headline}: {out:?}");
    let failing: Vec<&str> = stdout
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("FAIL ") || l.starts_with("NOT MEASURED "))
        .collect();
    assert!(
        !failing.is_empty(),
        "{headline}: no failing verdict named: {stdout}"
    );
    for l in failing {
        assert!(
            stderr.contains(&format!(": {l}\n")),
            "{l} is not named on stderr: {stderr}"
        );
        eprintln!("note: the bench ended 1 on a failed verdict: {l}");
    }
}

/// Child processes killed and reaped when the test ends, passed or not.
pub struct Children(pub Vec<std::process::Child>);

impl Drop for Children {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// True when `tool` runs from `PATH`.
pub fn has(tool: &str) -> bool {
    std::process::Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// True when a run's standard error says it did not run because another
/// jitterlab held the machine lock (the caller waits and retries).
pub fn lock_held(stderr: &str) -> bool {
    stderr.contains("machine lock") || stderr.contains("another jitterlab")
}

/// Whether the live test of `what` can run here: as root (tracing the
/// kernel), with CPU 1 online and every one of `tools` installed; says on
/// stderr why it is skipped when not.
pub fn live_on_cpu1(what: &str, tools: &[&str]) -> bool {
    if jitterlab_sys::effective_uid() != 0 {
        eprintln!("skipping the live {what} test: tracing the kernel needs root");
        return false;
    }
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    if online.trim() == "0" {
        eprintln!("skipping the live {what} test: it needs CPU 1, and only CPU 0 is online");
        return false;
    }
    for tool in tools {
        if !has(tool) {
            eprintln!("skipping the live {what} test: {tool} is not installed");
            return false;
        }
    }
    true
}

/// A copy of bash named `name` in `dir` (a thread's name is its program's
/// file name, so the thread it runs is found by it) and a FIFO beside it
/// to sleep on: (program, FIFO).
pub fn named_shell(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let program = dir.join(name);
    std::fs::copy("/bin/bash", &program).unwrap();
    let fifo = dir.join("sleep.fifo");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    (program, fifo)
}
