//! `jitterlab monitor`: it never ends by itself, stops cleanly on SIGTERM,
//! resumes its series when started again (marked, never overwritten), and
//! refuses bad retention and series flags before touching anything.

use std::path::Path;
use std::process::{Child, Command as StdCommand, Stdio};
use std::time::Duration;

use assert_cmd::Command;
use serial_test::serial;

#[path = "common/fixtures.rs"]
#[allow(dead_code)] // shared with the other test crates
mod fixtures;

/// The machine root of these monitors: a private copy of a fake tree, so
/// that its lock and journal are this test's own and a jitterlab holding
/// this machine (a bench beside the tests) never refuses them. The probe
/// threads measure for real all the same.
fn sysroot() -> &'static Path {
    static TREE: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    TREE.get_or_init(|| fixtures::copy_fixture("settings-vm"))
        .path()
}

fn jl(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("jitterlab").unwrap();
    c.env("JITTERLAB_DB", dir.join("m.db"))
        .env("JITTERLAB_JOURNAL", dir.join("journal.json"))
        .arg("--sysroot")
        .arg(sysroot())
        .current_dir(dir);
    c
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A real-time probe needs root here; say so and skip otherwise.
fn is_root() -> bool {
    if jitterlab_sys::effective_uid() != 0 {
        eprintln!("skipped: the monitor's probe needs root (SCHED_FIFO, mlockall)");
        return false;
    }
    true
}

/// The monitor on the last online CPU with 100 ms windows, for `secs`,
/// then SIGTERM: its exit status and stderr.
fn monitor_for(dir: &Path, secs: f64, extra: &[&str]) -> (Option<i32>, String) {
    let bin = assert_cmd::cargo::cargo_bin("jitterlab");
    let child: Child = StdCommand::new(bin)
        .arg("--sysroot")
        .arg(sysroot())
        .args(["monitor", "--window", "100ms"])
        .args(extra)
        .env("JITTERLAB_DB", dir.join("m.db"))
        .env("JITTERLAB_JOURNAL", dir.join("journal.json"))
        .env("JITTERLAB_CPUS", last_cpu())
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs_f64(secs));
    assert!(StdCommand::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap()
        .success());
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn last_cpu() -> String {
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let last = online.trim().rsplit([',', '-']).next().unwrap();
    last.to_string()
}

fn query(dir: &Path, sql: &str) -> Vec<Vec<i64>> {
    let c = rusqlite::Connection::open(dir.join("m.db")).unwrap();
    let mut stmt = c.prepare(sql).unwrap();
    let n = stmt.column_count();
    let rows = stmt
        .query_map([], |r| (0..n).map(|i| r.get::<_, i64>(i)).collect())
        .unwrap();
    rows.collect::<rusqlite::Result<_>>().unwrap()
}

#[test]
#[serial]
fn a_monitor_runs_until_stopped_and_a_second_start_resumes_its_series() {
    if !is_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (code, err) = monitor_for(dir.path(), 2.0, &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("jitterlab: monitor: starts series default\n"),
        "{err}"
    );
    // One segment, of kind monitor; its windows' samples are all in the
    // rollups (5-minute and hourly rows hold the same samples).
    let runs = query(
        dir.path(),
        "SELECT id, kind = 'monitor', name = 'default' FROM runs",
    );
    assert_eq!(runs, vec![vec![1, 1, 1]]);
    let windows = query(dir.path(), "SELECT COUNT(*), SUM(cycles) FROM windows")[0].clone();
    assert!(windows[0] >= 10, "2 s of 100 ms windows: {windows:?}");
    let spans = |d: &Path| {
        query(
            d,
            "SELECT span, SUM(count), MAX(series) FROM monitor_rollups GROUP BY span ORDER BY span",
        )
    };
    assert_eq!(
        spans(dir.path()),
        vec![vec![300, windows[1], 1], vec![3600, windows[1], 1]]
    );
    // Started again: the same series, a second segment, nothing replaced.
    let (code, err) = monitor_for(dir.path(), 1.5, &[]);
    assert_eq!(code, Some(0), "{err}");
    // Restarted at once: the gap is said in words when under a second.
    assert!(
        err.contains("jitterlab: monitor: resumes series default after a gap of ")
            || err.contains(
                "jitterlab: monitor: resumes series default under a second after its last stored window ("
            ),
        "{err}"
    );
    // Stopped by SIGTERM, not died: the resumption and the report say so.
    assert!(
        err.contains("; the previous start, run 1, is stopped by SIGTERM\n"),
        "{err}"
    );
    let signals = query(
        dir.path(),
        "SELECT id, json_extract(result_json, '$.signal') FROM runs ORDER BY id",
    );
    assert_eq!(signals, vec![vec![1, 15], vec![2, 15]]);
    let report = jl(dir.path())
        .args(["report", "--monitor"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&report.stdout);
    let statuses: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != "segments")
        .skip(2)
        .map(|l| l[39..].split("  ").next().unwrap())
        .take(2)
        .collect();
    assert_eq!(
        statuses,
        ["stopped by SIGTERM", "stopped by SIGTERM"],
        "{text}"
    );
    let total = query(dir.path(), "SELECT SUM(cycles) FROM windows")[0][0];
    assert!(total > windows[1]);
    assert_eq!(
        spans(dir.path()),
        vec![vec![300, total, 1], vec![3600, total, 1]]
    );
    // The maxima keep their place: each row's max is one of its windows'.
    let place = query(
        dir.path(),
        "SELECT COUNT(*) FROM monitor_rollups r WHERE NOT EXISTS (
             SELECT 1 FROM window_metrics m JOIN cells c ON c.id = m.cell_id
             WHERE c.run_id = r.run_id AND m.metric = 'latency' AND m.max = r.max)",
    );
    assert_eq!(place, vec![vec![0]]);
}

#[test]
fn bad_retention_and_series_are_refused_with_what_to_give() {
    let dir = tempfile::tempdir().unwrap();
    for (args, want) in [
        (
            vec!["--keep-windows", "10m"],
            "jitterlab: error: invalid value '10m' for '--keep-windows <TIME>': 10m is shorter than an hour; keep at least 1h (see jitterlab --help)\n",
        ),
        (
            vec!["--keep-windows", "7d", "--keep-5min", "1d"],
            "jitterlab: error: --keep-5min 86400s is shorter than --keep-windows 604800s; keep the 5-minute rows at least as long as the windows\n",
        ),
        (
            vec!["--keep-hourly", "2d"],
            "jitterlab: error: --keep-hourly is shorter than --keep-5min; keep the hourly rows at least as long (or forever)\n",
        ),
        (
            vec!["--series", " "],
            "jitterlab: error: --series must be a non-empty name without control characters, e.g. --series rack3\n",
        ),
        (
            vec!["--keep-hourly", "ever"],
            "jitterlab: error: invalid value 'ever' for '--keep-hourly <TIME|forever>': give a time (e.g. 3650d) or forever, not \"ever\" (see jitterlab --help)\n",
        ),
    ] {
        let o = jl(dir.path()).arg("monitor").args(&args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert_eq!(stderr(&o), want, "{args:?}");
    }
    assert!(!dir.path().join("m.db").exists(), "nothing stored");
}

#[test]
fn an_empty_setting_in_the_environment_counts_as_not_given() {
    // /etc/default/jitterlab's `JITTERLAB_CPUS=` means "the default", as
    // a shell's empty variable would; a bad value is still refused.
    let dir = tempfile::tempdir().unwrap();
    let o = jl(dir.path())
        .args(["monitor", "--keep-hourly", "2d"])
        .env("JITTERLAB_CPUS", "")
        .env("JITTERLAB_MAX_LATENCY", "")
        .output()
        .unwrap();
    assert_eq!(
        stderr(&o),
        "jitterlab: error: --keep-hourly is shorter than --keep-5min; keep the hourly rows at least as long (or forever)\n"
    );
    let o = jl(dir.path())
        .args(["monitor"])
        .env("JITTERLAB_CPUS", "banana")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).starts_with("jitterlab: error: invalid value 'banana' for '--cpus <LIST>'"),
        "{}",
        stderr(&o)
    );
}

/// The monitor started in the background on the last online CPU with
/// 100 ms windows, in `dir`'s database.
fn spawn_monitor(dir: &Path, extra: &[&str]) -> Child {
    StdCommand::new(assert_cmd::cargo::cargo_bin("jitterlab"))
        .arg("--sysroot")
        .arg(sysroot())
        .args(["monitor", "--window", "100ms"])
        .args(extra)
        .env("JITTERLAB_DB", dir.join("m.db"))
        .env("JITTERLAB_JOURNAL", dir.join("journal.json"))
        .env("JITTERLAB_CPUS", last_cpu())
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits (up to 20 s) until the monitor's first windows are stored.
fn wait_measuring(dir: &Path) {
    let end = std::time::Instant::now() + Duration::from_secs(20);
    let stored = || {
        rusqlite::Connection::open(dir.join("m.db"))
            .and_then(|c| c.query_row("SELECT COUNT(*) FROM windows", [], |r| r.get::<_, i64>(0)))
            .is_ok_and(|n| n > 0)
    };
    while !stored() {
        assert!(
            std::time::Instant::now() < end,
            "the monitor stored no window"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
#[serial]
fn a_second_monitor_of_the_same_series_is_refused_naming_the_first() {
    if !is_root() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let first = spawn_monitor(dir.path(), &[]);
    let pid = first.id();
    wait_measuring(dir.path());
    // A second start of the same series: refused at once (one that runs
    // is stopped after 10 s, and fails the test).
    let mut second = spawn_monitor(dir.path(), &[]);
    let end = std::time::Instant::now() + Duration::from_secs(10);
    while second.try_wait().unwrap().is_none() && std::time::Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50));
    }
    if second.try_wait().unwrap().is_none() {
        jitterlab_sys::kill_process(second.id() as i32, 15).unwrap();
    }
    let o = second.wait_with_output().unwrap();
    let db = dir.path().join("m.db");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        format!(
            "jitterlab: error: series default is being monitored in {} by jitterlab pid {pid} (run 1); stop that monitor first, or give this one another --series\n",
            db.display()
        )
    );
    // Nothing of the refused one is stored; the first goes on.
    assert_eq!(
        query(dir.path(), "SELECT id, status = 'running' FROM runs"),
        vec![vec![1, 1]]
    );
    // Another series in the same database is no conflict.
    let (code, err) = monitor_for(dir.path(), 1.5, &["--series", "other"]);
    assert_eq!(code, Some(0), "{err}");
    jitterlab_sys::kill_process(pid as i32, 15).unwrap();
    let out = first.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}

#[test]
#[serial]
fn a_monitor_ended_by_a_signal_keeps_the_percentiles_of_its_last_slice() {
    if !is_root() {
        return;
    }
    // Far less than the 5 minutes between the probe's histogram
    // hand-overs: only the hand-over at the end holds these samples.
    for (sig, status) in [(15, 0), (1, 129)] {
        let dir = tempfile::tempdir().unwrap();
        let child = spawn_monitor(dir.path(), &[]);
        wait_measuring(dir.path());
        std::thread::sleep(Duration::from_secs(1));
        jitterlab_sys::kill_process(child.id() as i32, sig).unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(status), "signal {sig}: {out:?}");
        // Every 5-minute row holds a histogram, spanning its samples.
        let rows = query(
            dir.path(),
            "SELECT COUNT(*), SUM(hist IS NOT NULL), SUM(count) FROM monitor_rollups WHERE span = 300",
        );
        let windows = query(dir.path(), "SELECT SUM(cycles) FROM windows")[0][0];
        assert!(rows[0][0] >= 1, "signal {sig}: {rows:?}");
        assert_eq!(rows[0][1], rows[0][0], "signal {sig}: {rows:?}");
        assert_eq!(rows[0][2], windows, "signal {sig}");
    }
}
