//! `jitterlab monitor --pid/--tid/--comm`: the monitor of the user's own
//! task. Its flags' bad input is refused (exit 2) naming the fix; live
//! (root only, skipped aloud otherwise), a helper thread sleeping to a
//! 1 ms schedule is monitored: the series gets window rows with its cycle
//! counts, a `--comm` monitor follows the helper restarted under a new
//! pid, a `run` proceeds beside it (it holds no machine lock), and a
//! `--tid` monitor ends with exit status 3 when its thread ends.

use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Command as StdCommand, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use serial_test::serial;

/// A helper whose main thread, named by its first argument, sleeps to an
/// absolute 1 ms schedule (`time.sleep`: `clock_nanosleep`) until killed.
const PERIODIC: &str = r#"
import ctypes, sys, time
ctypes.CDLL(None).prctl(15, sys.argv[1].encode(), 0, 0, 0)
t = time.monotonic()
while True:
    t += 0.001
    d = t - time.monotonic()
    if d > 0:
        time.sleep(d)
"#;

fn jl(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("jitterlab").unwrap();
    c.env("JITTERLAB_DB", dir.join("m.db"))
        .env("JITTERLAB_JOURNAL", dir.join("journal.json"))
        .env_remove("JITTERLAB_CPUS")
        .current_dir(dir);
    c
}

/// `monitor ARGS`' exit status and stderr.
fn refused(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut c = jl(dir);
    c.arg("monitor").args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn bad_task_flags_are_refused_with_exit_2_naming_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let err = |msg: &str| (Some(2), format!("jitterlab: error: {msg}\n"));
    assert_eq!(
        refused(d, &["--pid", "1", "--cpus", "1"], &[]),
        err("--pid monitors the task on the CPUs it runs on; remove --cpus (JITTERLAB_CPUS), which places the wake-up probe's threads")
    );
    // The service's settings: the same refusal from the environment.
    assert_eq!(
        refused(d, &[], &[("JITTERLAB_COMM", "plc"), ("JITTERLAB_CPUS", "1")]),
        err("--comm monitors the task on the CPUs it runs on; remove --cpus (JITTERLAB_CPUS), which places the wake-up probe's threads")
    );
    assert_eq!(
        refused(d, &["--pid", "1", "--comm", "plc"], &[]),
        err("monitor watches one task: keep one of --pid and --comm")
    );
    assert_eq!(
        refused(d, &["--tid", "1"], &[("JITTERLAB_PID", "1")]),
        err("monitor watches one task: keep one of --pid and --tid")
    );
    // Above the kernel's largest pid_max: no such process, ever.
    assert_eq!(
        refused(d, &["--pid", "4194305"], &[]),
        err("--pid 4194305: no such process (no /proc/4194305); give the pid of a running process (ps -e lists them)")
    );
    assert_eq!(
        refused(d, &["--comm", "jl-no-such"], &[]),
        err("--comm jl-no-such: no running thread has that name; ps -eL -o tid,comm lists the names (15 characters at most)")
    );
    assert_eq!(
        refused(d, &["--period", "1ms"], &[]),
        err("--period applies to a monitored task: give --pid PID, --tid TID or --comm NAME (the wake-up probe's own period is --interval)")
    );
    assert_eq!(
        refused(d, &["--explain"], &[]),
        err("--explain applies to a monitored task: give --pid PID, --tid TID or --comm NAME (the wake-up probe's own period is --interval)")
    );
    // Nothing was started, so nothing was stored.
    assert!(!d.join("m.db").exists() || rows(d, "SELECT COUNT(*) FROM runs")[0][0] == 0);
}

fn rows(dir: &Path, sql: &str) -> Vec<Vec<i64>> {
    let c = rusqlite::Connection::open(dir.join("m.db")).unwrap();
    let mut stmt = c.prepare(sql).unwrap();
    let n = stmt.column_count();
    let rows = stmt
        .query_map([], |r| (0..n).map(|i| r.get::<_, i64>(i)).collect())
        .unwrap();
    rows.collect::<rusqlite::Result<_>>().unwrap()
}

/// Window rows stored so far (0 before the database has the table).
fn windows(dir: &Path) -> i64 {
    rusqlite::Connection::open(dir.join("m.db"))
        .and_then(|c| c.query_row("SELECT COUNT(*) FROM windows", [], |r| r.get(0)))
        .unwrap_or(0)
}

/// Tracing the kernel needs root; say so and skip otherwise.
fn live_ok(what: &str) -> bool {
    if jitterlab_sys::effective_uid() != 0 {
        eprintln!("skipping {what}: tracing the kernel needs root");
        return false;
    }
    let python = StdCommand::new("python3")
        .arg("-c")
        .arg("")
        .status()
        .is_ok_and(|s| s.success());
    if !python {
        eprintln!("skipping {what}: python3 is not installed");
    }
    python
}

/// The periodic helper named `name`, killed when dropped.
struct Helper(Child);

impl Helper {
    fn start(name: &str) -> Helper {
        let child = StdCommand::new("python3")
            .args(["-c", PERIODIC, name])
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        // Named once it runs.
        let comm = format!("/proc/{}/comm", child.id());
        let end = Instant::now() + Duration::from_secs(10);
        while std::fs::read_to_string(&comm).unwrap_or_default().trim() != name {
            assert!(Instant::now() < end, "the helper never took its name");
            std::thread::sleep(Duration::from_millis(10));
        }
        Helper(child)
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A monitor in the background, its stderr gathered as it comes.
struct Monitor {
    child: Child,
    stderr: Arc<Mutex<String>>,
}

impl Monitor {
    /// `jitterlab monitor ARGS` on the real machine with 1 s windows, in
    /// `dir`'s database; started again while another jitterlab holds the
    /// machine (a bench beside the tests), for up to two minutes.
    fn start(dir: &Path, args: &[&str]) -> Monitor {
        let end = Instant::now() + Duration::from_secs(120);
        loop {
            let mut child = StdCommand::new(assert_cmd::cargo::cargo_bin("jitterlab"))
                .args(["monitor", "--window", "1s", "--series", "task"])
                .args(args)
                .env("JITTERLAB_DB", dir.join("m.db"))
                .env("JITTERLAB_JOURNAL", dir.join("journal.json"))
                .env_remove("JITTERLAB_CPUS")
                .current_dir(dir)
                .stdout(std::fs::File::create(dir.join("stdout.txt")).unwrap())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let stderr = Arc::new(Mutex::new(String::new()));
            let pipe = child.stderr.take().unwrap();
            let sink = Arc::clone(&stderr);
            std::thread::spawn(move || {
                for line in std::io::BufReader::new(pipe).lines().map_while(Result::ok) {
                    let mut s = sink.lock().unwrap();
                    s.push_str(&line);
                    s.push('\n');
                }
            });
            let m = Monitor { child, stderr };
            // Measuring once it says its series starts; refused at once.
            let said = m.wait_for("jitterlab: monitor: starts series task", 20);
            if said {
                return m;
            }
            let mut m = m;
            let text = m.text();
            let gone = m.child.try_wait().unwrap().is_some();
            let held = text.contains("machine lock") || text.contains("another jitterlab");
            assert!(
                gone && held && Instant::now() < end,
                "the monitor did not start:\n{text}"
            );
            std::thread::sleep(Duration::from_secs(1));
        }
    }

    fn text(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Waits up to `secs` for `what` in its stderr.
    fn wait_for(&self, what: &str, secs: u64) -> bool {
        let end = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < end {
            if self.text().contains(what) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    /// SIGTERM, then its exit status and stderr.
    fn stop(mut self) -> (Option<i32>, String) {
        jitterlab_sys::kill_process(self.child.id() as i32, 15).unwrap();
        let status = self.child.wait().unwrap();
        std::thread::sleep(Duration::from_millis(200));
        (status.code(), self.text())
    }
}

/// Waits up to `secs` until `dir`'s series has `n` window rows.
fn wait_windows(dir: &Path, n: i64, secs: u64, m: &Monitor) {
    let end = Instant::now() + Duration::from_secs(secs);
    while windows(dir) < n {
        assert!(
            Instant::now() < end,
            "{} window rows, {n} awaited\n{}",
            windows(dir),
            m.text()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
#[serial]
fn live_a_monitored_comm_is_measured_per_window_and_followed_when_it_restarts() {
    if !live_ok("the live monitor of a task") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let first = Helper::start("jl-mon-comm");
    // Every window over 1 us alerts, with its worst cycle explained.
    let m = Monitor::start(
        d,
        &["--comm", "jl-mon-comm", "--max-latency", "1us", "--explain"],
    );
    wait_windows(d, 3, 30, &m);
    let monitor_pid = m.child.id();
    // It changed nothing the journal would hold: no journal, no lock.
    assert!(!d.join("journal.json").exists(), "{}", m.text());
    // Where there is no journald, the alerts are on stderr: the task's
    // CPU (a helper that is not pinned runs on any) and the worst cycle.
    if m.text().contains("jitterlab: monitor: alerts go to stderr") {
        let said = m.text();
        let alert = said
            .lines()
            .find(|l| l.starts_with("jitterlab: warning: task latency "))
            .unwrap_or_else(|| panic!("no alert\n{said}"));
        assert!(
            alert.contains(" over --max-latency 1.000us on CPU"),
            "{alert}"
        );
        assert!(alert.contains("; worst cycle "), "{alert}");
    }

    // Beside it, a run proceeds: the monitor holds no machine lock (one
    // another jitterlab holds is waited out).
    let end = Instant::now() + Duration::from_secs(120);
    loop {
        let out = jl(d)
            .args(["run", "wakeup", "--duration", "300ms", "--no-db"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            !err.contains(&format!("pid {monitor_pid}")),
            "the run was refused by the monitor:\n{err}"
        );
        if out.status.code() == Some(0) {
            break;
        }
        assert!(
            (err.contains("machine lock") || err.contains("another jitterlab"))
                && Instant::now() < end,
            "{err}"
        );
        std::thread::sleep(Duration::from_secs(1));
    }

    // Restarted under a new pid: found again by its name.
    let first_tid = first.pid();
    drop(first);
    let second = Helper::start("jl-mon-comm");
    assert!(
        m.wait_for(
            "re-attached to the thread(s) named jl-mon-comm now running: tid ",
            10
        ),
        "{}",
        m.text()
    );
    assert!(
        m.text()
            .contains(&format!("tid {} (re-attach 1)", second.pid())),
        "{}",
        m.text()
    );
    let before = windows(d);
    wait_windows(d, before + 2, 30, &m);
    let (code, err) = m.stop();
    let second_tid = second.pid();
    drop(second);
    assert_eq!(code, Some(0), "{err}");

    // Every window counts the cycles of a 1 ms schedule: at most a second's
    // 1000 and a few caught up late; the full ones (not the first, not the
    // last, not those around the restart) at least half of them.
    let counts: Vec<i64> = rows(d, "SELECT cycles FROM windows ORDER BY window")
        .into_iter()
        .map(|r| r[0])
        .collect();
    assert!(counts.len() >= 5, "{counts:?}");
    assert!(
        counts.iter().all(|&c| (0..=1050).contains(&c)),
        "{counts:?}"
    );
    let full = counts.iter().filter(|&&c| c >= 500).count();
    assert!(full >= 3, "{counts:?}");
    // The restart is said with the result.
    let out = std::fs::read_to_string(d.join("stdout.txt")).unwrap();
    assert!(
        out.contains("\nwarning: the task of comm jl-mon-comm restarted: re-attached 1 time(s) to its new thread; the cycles are those of each thread in turn\n"),
        "{out}"
    );
    // And marked, with its time, in the series `report --monitor` shows.
    let report = jl(d).args(["report", "--monitor"]).output().unwrap();
    let text = String::from_utf8_lossy(&report.stdout);
    assert_eq!(report.status.code(), Some(0), "{text}");
    let marks: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != "marks")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect();
    assert_eq!(marks.len(), 1, "{text}");
    assert!(
        marks[0].ends_with(&format!(
            "Z  task restarted: tid {first_tid} (jl-mon-comm) of comm jl-mon-comm was gone; re-attached to the thread(s) named jl-mon-comm: tid {}",
            second_tid
        )),
        "{text}"
    );
}

#[test]
#[serial]
fn live_a_monitored_tid_that_ends_ends_the_monitor_with_status_3() {
    if !live_ok("the live monitor of a task that ends") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let helper = Helper::start("jl-mon-tid");
    let tid = helper.pid();
    let mut m = Monitor::start(d, &["--tid", &tid.to_string()]);
    wait_windows(d, 2, 30, &m);
    drop(helper);
    // It ends by itself within the second it checks in.
    let end = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = m.child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < end, "the monitor went on\n{}", m.text());
        std::thread::sleep(Duration::from_millis(50));
    };
    std::thread::sleep(Duration::from_millis(200));
    let err = m.text();
    assert_eq!(status.code(), Some(3), "{err}");
    assert!(
        err.ends_with(&format!(
            "jitterlab: monitor: the monitored task ended: tid {tid} (jl-mon-tid) is gone; the monitor stops (exit status 3); monitor --comm NAME follows a task that restarts\n"
        )),
        "{err}"
    );
    // Its windows were kept.
    let counts = rows(d, "SELECT cycles FROM windows");
    assert!(counts.iter().any(|r| r[0] >= 500), "{counts:?}");
}
