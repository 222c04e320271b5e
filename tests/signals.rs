//! Every signal whose default action would end jitterlab ends `apply`,
//! `bench`, `run` and `monitor` through their cleanup: the fake tree they
//! changed is as it was, no journal or lock is left, neighbours are gone,
//! the run is stored interrupted — and the exit status is 128 + the
//! signal's number, except for SIGINT and SIGTERM, which keep the
//! command's own status (0 here).
//!
//! Every test works on a private copy of a fake tree (`--sysroot`), with
//! its own database and journal, so nothing on this machine changes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serial_test::serial;

#[path = "common/fixtures.rs"]
#[allow(dead_code)] // shared with the other test crates
mod fixtures;
#[path = "common/harness.rs"]
mod harness;
use fixtures::copy_fixture;
use harness::{wait_gone, wait_started};

/// The signals that must end jitterlab through its cleanup, written out
/// here apart from the program's own list: SIGHUP, SIGINT, SIGQUIT,
/// SIGUSR1, SIGUSR2, SIGALRM, SIGTERM, SIGSTKFLT, SIGXCPU, SIGXFSZ,
/// SIGVTALRM, SIGPROF, SIGPOLL, SIGPWR and the real-time signals.
fn terminating() -> Vec<i32> {
    [1, 2, 3, 10, 12, 14, 15, 16, 24, 25, 26, 27, 29, 30]
        .into_iter()
        .chain(libc::SIGRTMIN()..=libc::SIGRTMAX())
        .collect()
}

/// `SIGHUP`: what an SSH disconnect sends.
const SIGHUP: i32 = 1;

/// The exit status after `sig`: the command's own (0) for SIGINT and
/// SIGTERM, 128 + N otherwise.
fn status_after(sig: i32) -> i32 {
    match sig {
        2 | 15 => 0,
        n => 128 + n,
    }
}

/// A configuration that changes every kind of setting a fake tree has:
/// IRQs moved, timer migration off, real-time throttling off.
fn tuned(duration: &str, scenario: &str) -> String {
    format!(
        "duration = \"{duration}\"\nwarmup = \"0\"\n[[configuration]]\nname = \"tuned\"\nirq_cpus = \"0\"\ntimer_migration = false\nrt_runtime_us = -1\ndma_latency = false\n{scenario}[[probe]]\nkind = \"wakeup\"\n"
    )
}

/// Every file of `root` with its content, and every directory, so that
/// any change shows.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Option<Vec<u8>>>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_path_buf();
            if e.file_type().unwrap().is_dir() {
                out.insert(rel, None);
                walk(root, &p, out);
            } else {
                out.insert(rel, Some(std::fs::read(&p).unwrap()));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// jitterlab on the fake tree `root`, with its database and journal in
/// `dir`, its output kept.
fn spawn(root: &Path, dir: &Path, args: &[&str]) -> Child {
    Command::new(assert_cmd::cargo::cargo_bin("jitterlab"))
        .env("JITTERLAB_DB", dir.join("j.db"))
        .env("JITTERLAB_JOURNAL", dir.join("journal.json"))
        .env_remove("XDG_RUNTIME_DIR")
        .arg("--sysroot")
        .arg(root)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn send(child: &Child, sig: i32) {
    jitterlab_sys::kill_process(child.id() as i32, sig).unwrap();
}

/// Waits up to 20 s for `done`.
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < end, "waited 20 s for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The status of every run in the database of `dir`.
fn run_statuses(dir: &Path) -> Vec<String> {
    let c = rusqlite::Connection::open(dir.join("j.db")).unwrap();
    let mut stmt = c.prepare("SELECT status FROM runs ORDER BY id").unwrap();
    let rows = stmt.query_map([], |r| r.get(0)).unwrap();
    rows.collect::<rusqlite::Result<_>>().unwrap()
}

/// The first run's row is in the database (the run measures).
fn run_stored(dir: &Path) -> bool {
    dir.join("j.db").exists()
        && rusqlite::Connection::open(dir.join("j.db"))
            .and_then(|c| c.query_row("SELECT COUNT(*) FROM cells", [], |r| r.get::<_, i64>(0)))
            .is_ok_and(|n| n > 0)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// What is left after a command ended: the tree as it was — but for
/// jitterlab's own directory, `run/jitterlab`, which stays and is empty (no
/// lock, no temporary file) — and no journal.
fn assert_put_back(
    before: &BTreeMap<PathBuf, Option<Vec<u8>>>,
    root: &Path,
    dir: &Path,
    out: &Output,
) {
    let own = root.join("run/jitterlab");
    if own.exists() {
        let left: Vec<_> = std::fs::read_dir(&own)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        assert!(left.is_empty(), "left in run/jitterlab: {left:?}\n{out:?}");
    }
    let mut after = snapshot(root);
    for kept in ["run", "run/jitterlab"] {
        if !before.contains_key(Path::new(kept)) {
            after.remove(Path::new(kept));
        }
    }
    let changed: Vec<_> = after
        .iter()
        .filter(|(p, c)| before.get(*p) != Some(c))
        .map(|(p, _)| p)
        .chain(before.keys().filter(|p| !after.contains_key(*p)))
        .collect();
    assert!(changed.is_empty(), "changed: {changed:?}\n{out:?}");
    assert!(!dir.join("journal.json").exists(), "journal left: {out:?}");
}

#[test]
#[serial]
fn apply_puts_everything_back_on_every_terminating_signal() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("tuned.toml");
    std::fs::write(&spec, tuned("1s", "")).unwrap();
    for sig in terminating() {
        let tree = copy_fixture("settings-vm");
        let root = tree.path();
        let before = snapshot(root);
        let migration = root.join("proc/sys/kernel/timer_migration");
        let child = spawn(root, dir.path(), &["apply", spec.to_str().unwrap()]);
        wait_for("apply to hold", || {
            std::fs::read_to_string(&migration).unwrap() == "0\n"
        });
        send(&child, sig);
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(status_after(sig)),
            "signal {sig}: {out:?}"
        );
        assert_eq!(text(&out.stderr), "", "signal {sig}");
        let restored: String = [
            ("proc/sys/kernel/sched_rt_runtime_us", "950000"),
            ("proc/sys/kernel/timer_migration", "1"),
            ("proc/irq/42/smp_affinity_list", "0-1"),
            ("proc/irq/41/smp_affinity_list", "0-1"),
            ("proc/irq/36/smp_affinity_list", "0-1"),
            ("proc/irq/26/smp_affinity_list", "0-1"),
            ("proc/irq/24/smp_affinity_list", "0-1"),
            ("proc/irq/default_smp_affinity", "3"),
        ]
        .iter()
        .map(|(p, v)| format!("restored {} to \"{v}\"\n", root.join(p).display()))
        .collect();
        let stdout = text(&out.stdout);
        assert!(
            stdout.ends_with(&format!("puts everything back\n{restored}")),
            "signal {sig}: {stdout}"
        );
        assert_put_back(&before, root, dir.path(), &out);
    }
}

#[test]
#[serial]
fn sighup_ends_a_bench_through_its_cleanup() {
    let tree = copy_fixture("settings-vm");
    let root = tree.path();
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("bench.toml");
    let scenario =
        "[[scenario]]\nname = \"sleeper\"\n[[scenario.neighbour]]\ncommand = [\"sleep\", \"86411\"]\n";
    std::fs::write(&spec, tuned("60s", scenario)).unwrap();
    let before = snapshot(root);
    let child = spawn(root, dir.path(), &["bench", spec.to_str().unwrap()]);
    wait_started("86411");
    wait_for("the cell to measure", || run_stored(dir.path()));
    std::thread::sleep(Duration::from_millis(500));
    send(&child, SIGHUP);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(129), "{out:?}");
    assert!(wait_gone("86411", Duration::from_secs(2)).is_empty());
    assert_put_back(&before, root, dir.path(), &out);
    assert_eq!(run_statuses(dir.path()), ["interrupted"]);
    assert!(
        text(&out.stderr)
            .contains("jitterlab: the bench was interrupted; the cells that ran are stored\n"),
        "{out:?}"
    );
}

#[test]
#[serial]
fn sighup_ends_a_run_stored_interrupted() {
    let tree = copy_fixture("settings-vm");
    let root = tree.path();
    let dir = tempfile::tempdir().unwrap();
    let before = snapshot(root);
    let child = spawn(
        root,
        dir.path(),
        &["run", "wakeup", "--duration", "60s", "--cpus", "1"],
    );
    wait_for("the run to measure", || run_stored(dir.path()));
    std::thread::sleep(Duration::from_millis(500));
    send(&child, SIGHUP);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(129), "{out:?}");
    assert_put_back(&before, root, dir.path(), &out);
    assert_eq!(run_statuses(dir.path()), ["interrupted"]);
}

#[test]
#[serial]
fn sighup_ends_a_monitor_stored_interrupted() {
    let tree = copy_fixture("settings-vm");
    let root = tree.path();
    let dir = tempfile::tempdir().unwrap();
    let before = snapshot(root);
    let child = spawn(
        root,
        dir.path(),
        &["monitor", "--window", "100ms", "--cpus", "1"],
    );
    wait_for("the monitor to measure", || run_stored(dir.path()));
    std::thread::sleep(Duration::from_millis(500));
    send(&child, SIGHUP);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(129), "{out:?}");
    assert_put_back(&before, root, dir.path(), &out);
    assert_eq!(run_statuses(dir.path()), ["interrupted"]);
}
