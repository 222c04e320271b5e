//! `jitterlab report --follow` against real runs: a `jitterlab run wakeup`
//! measures in the background while the report follows it from another
//! process, as a user watches a long run from a second terminal.
//!
//! Piped, the report is printed again after each new window, every render
//! after a line `--- <time> ---`, the last one the final report — the same
//! bytes `report` prints once the run is over. Ctrl-C (SIGINT) ends the
//! watch at once with status 0 and leaves the run measuring; `-o FILE`
//! leaves the final report in FILE; a run killed meanwhile ends the watch
//! with a word on stderr. Bad combinations are refused with status 2
//! before anything is read.
//!
//! Without root the probe runs "not real-time", which changes nothing
//! here: these tests are about the report, not the figures. They run one
//! at a time (`serial`), so that two probes do not share a CPU.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use serial_test::serial;

/// The jitterlab binary with the database and journal of `dir`.
fn jl(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("jitterlab").unwrap();
    c.env("JITTERLAB_DB", dir.join("j.db"))
        .env("JITTERLAB_JOURNAL", dir.join("journal.json"));
    c
}

/// The same as a `std` command, for processes the test watches while they
/// run.
fn jl_std(dir: &Path) -> StdCommand {
    let mut c = StdCommand::new(assert_cmd::cargo::cargo_bin("jitterlab"));
    c.env("JITTERLAB_DB", dir.join("j.db"))
        .env("JITTERLAB_JOURNAL", dir.join("journal.json"));
    c
}

/// True once run `id` is stored in `dir`'s database (within 20 s).
fn stored(dir: &Path, id: u32) -> bool {
    let end = Instant::now() + Duration::from_secs(20);
    while Instant::now() < end {
        if dir.join("j.db").exists() {
            let out = jl(dir).arg("runs").output().unwrap();
            if String::from_utf8_lossy(&out.stdout)
                .lines()
                .any(|l| l.trim_start().starts_with(&format!("{id} ")))
            {
                return true;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// A `jitterlab run wakeup` of `secs` seconds in the background; returns
/// once run 1 is stored (before its first window).
fn start_run(dir: &Path, secs: u32) -> Child {
    start_run_n(dir, secs, 1)
}

/// [`start_run`] for the database's run `id`.
fn start_run_n(dir: &Path, secs: u32, id: u32) -> Child {
    let mut child = jl_std(dir)
        .args(["run", "wakeup", "--duration", &format!("{secs}s")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    if !stored(dir, id) {
        let _ = child.kill();
        let _ = child.wait();
        panic!("run {id} was not stored within 20 s");
    }
    child
}

/// Waits up to `within` for `child` to end; its exit status, or `None`
/// (and it is killed) when it did not end in time.
fn wait_for(child: &mut Child, within: Duration) -> Option<i32> {
    let end = Instant::now() + within;
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s.code();
        }
        if Instant::now() > end {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Sends `signal` (`INT`, `KILL`) to process `pid` with kill(1).
fn signal(pid: u32, signal: &str) {
    let ok = StdCommand::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -{signal} {pid}");
}

/// The renders of a piped follow, split on their `--- <time> ---` lines.
fn renders(stdout: &str) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for line in stdout.split_inclusive('\n') {
        let l = line.trim_end_matches('\n');
        if l.starts_with("--- ") && l.ends_with(" ---") {
            let t = &l[4..l.len() - 4];
            assert_eq!(t.len(), "2026-11-24T04:50:36Z".len(), "a UTC time: {l}");
            assert!(t.ends_with('Z'), "{l}");
            v.push(String::new());
        } else {
            v.last_mut()
                .expect("stdout starts with a time line")
                .push_str(line);
        }
    }
    v
}

/// A follow spawned with its stdout piped, and a reader that hands each
/// line over as it comes.
fn spawn_follow(dir: &Path, args: &[&str]) -> (Child, std::sync::mpsc::Receiver<String>) {
    let mut child = jl_std(dir)
        .args(["report", "1", "--follow"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

/// Reads lines from `rx` until one contains `what` (panics after 20 s).
fn read_until(rx: &std::sync::mpsc::Receiver<String>, what: &str) -> Vec<String> {
    let end = Instant::now() + Duration::from_secs(20);
    let mut seen = Vec::new();
    loop {
        let left = end.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(l) => {
                let hit = l.contains(what);
                seen.push(l);
                if hit {
                    return seen;
                }
            }
            Err(_) => panic!("no line with {what:?} within 20 s; read {seen:?}"),
        }
    }
}

#[test]
#[serial]
fn a_piped_follow_renders_each_window_and_ends_with_the_final_report() {
    let dir = tempfile::tempdir().unwrap();
    let mut run = start_run(dir.path(), 4);
    let out = jl(dir.path())
        .args(["report", "1", "--follow"])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert_eq!(wait_for(&mut run, Duration::from_secs(30)), Some(0));
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let r = renders(&stdout);
    assert!(r.len() >= 2, "at least two renders: {stdout}");
    // Under the record header.
    assert!(
        r[0].starts_with("Record\n") && r[0].contains("\n\nrun 1 (wakeup, started "),
        "the first render is of the run in progress: {}",
        r[0]
    );
    assert!(r[0].contains(") is running: "), "{}", r[0]);
    // Some render in between shows the figures so far.
    assert!(
        r.iter()
            .any(|t| t.contains(" measured: ") && t.contains("\nlatency ")),
        "{stdout}"
    );
    // No two renders in a row are the same.
    assert!(r.windows(2).all(|w| w[0] != w[1]), "{stdout}");
    let after = jl(dir.path()).args(["report", "1"]).output().unwrap();
    assert_eq!(after.status.code(), Some(0));
    assert_eq!(
        r.last().unwrap().as_bytes(),
        after.stdout.as_slice(),
        "the last render is the report of the finished run"
    );
    assert!(r.last().unwrap().starts_with("Record\njitterlab    "));
    assert!(r.last().unwrap().contains("\n\nprobe        wakeup\n"));
}

#[test]
#[serial]
fn sigint_ends_the_follow_with_status_0_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut run = start_run(dir.path(), 8);
    let (mut follow, rx) = spawn_follow(dir.path(), &[]);
    read_until(&rx, ") is running: ");
    let t0 = Instant::now();
    signal(follow.id(), "INT");
    assert_eq!(
        wait_for(&mut follow, Duration::from_secs(5)),
        Some(0),
        "SIGINT ends the watch with status 0"
    );
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    assert_eq!(run.try_wait().unwrap(), None, "the run is still measuring");
    signal(run.id(), "INT");
    // The run, asked to stop, ends interrupted (status 0: no limit).
    assert_eq!(wait_for(&mut run, Duration::from_secs(30)), Some(0));
    let listed = jl(dir.path()).arg("runs").output().unwrap();
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains(" interrupted "),
        "{listed:?}"
    );
}

#[test]
#[serial]
fn follow_to_a_file_leaves_the_final_report_in_it() {
    let dir = tempfile::tempdir().unwrap();
    let file: PathBuf = dir.path().join("live.txt");
    let mut run = start_run(dir.path(), 3);
    let out = jl(dir.path())
        .args(["report", "1", "--follow", "-o"])
        .arg(&file)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert_eq!(wait_for(&mut run, Duration::from_secs(30)), Some(0));
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(out.stdout, b"", "the report goes to the file only");
    let after = jl(dir.path()).args(["report", "1"]).output().unwrap();
    assert_eq!(std::fs::read(&file).unwrap(), after.stdout);
    // `-o` without --follow writes the same file once.
    let once = dir.path().join("once.txt");
    let out = jl(dir.path())
        .args(["report", "-o"])
        .arg(&once)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(out.stdout, b"");
    assert_eq!(std::fs::read(&once).unwrap(), after.stdout);
    // The HTML page, followed into a file, ends as the finished run's page.
    let page = dir.path().join("live.html");
    let mut run = start_run_n(dir.path(), 3, 2);
    let out = jl(dir.path())
        .args(["report", "2", "--follow", "--format", "html", "-o"])
        .arg(&page)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert_eq!(wait_for(&mut run, Duration::from_secs(30)), Some(0));
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let after = jl(dir.path())
        .args(["report", "2", "--format", "html"])
        .output()
        .unwrap();
    assert!(after.stdout.starts_with(b"<!DOCTYPE html>"));
    assert_eq!(std::fs::read(&page).unwrap(), after.stdout);
}

#[test]
#[serial]
fn a_run_killed_while_followed_ends_the_follow_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let mut run = start_run(dir.path(), 30);
    let (mut follow, rx) = spawn_follow(dir.path(), &[]);
    read_until(&rx, " measured: ");
    signal(run.id(), "KILL");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(run.wait().unwrap().signal(), Some(9));
    assert_eq!(wait_for(&mut follow, Duration::from_secs(10)), Some(0));
    let rest: Vec<String> = rx.try_iter().collect();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut follow.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(
        stderr,
        "jitterlab: run 1 was interrupted before its end (a signal, an error, or its process died); the report shows what it stored\n"
    );
    // The last render is the report of the interrupted run.
    let last = rest.join("\n");
    assert!(
        last.contains("did not finish") && last.contains("status interrupted"),
        "{last}"
    );
}

/// Refusals: exit 2, one line naming what to fix, nothing on stdout.
fn refused(dir: &Path, args: &[&str], line: &str) {
    let out = jl(dir).args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
    assert_eq!(out.stdout, b"", "{args:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("jitterlab: error: {line}\n"),
        "{args:?}"
    );
}

#[test]
fn bad_combinations_are_refused_before_anything_is_read() {
    let dir = tempfile::tempdir().unwrap();
    // No database at all: the flags are refused first.
    refused(
        dir.path(),
        &["report", "1", "2", "--follow"],
        "--follow watches one run; name one RUN (or none for the latest), not 2",
    );
    let missing = dir.path().join("no/such/live.html");
    refused(
        dir.path(),
        &["report", "--follow", "-o", missing.to_str().unwrap()],
        &format!(
            "-o {}: directory {} does not exist; create it or choose another path",
            missing.display(),
            dir.path().join("no/such").display()
        ),
    );
    refused(
        dir.path(),
        &["report", "-o", dir.path().to_str().unwrap()],
        &format!(
            "-o {} is a directory; give a file path",
            dir.path().display()
        ),
    );
    refused(
        dir.path(),
        &["report", "--follow", "--histogram", "h.txt"],
        "--follow renders the report again at every window, --histogram writes the run's histogram once; give one of them",
    );
    assert!(!dir.path().join("j.db").exists(), "no database was made");
    // A database with one finished run: following another is refused, and
    // following the finished one prints its report once.
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/databases/run-wakeup.db"),
        dir.path().join("j.db"),
    )
    .unwrap();
    refused(
        dir.path(),
        &["report", "9", "--follow"],
        "there is no run 9 in the database; list the runs with: jitterlab runs",
    );
    let once = jl(dir.path())
        .args(["report", "--follow"])
        .output()
        .unwrap();
    assert_eq!(once.status.code(), Some(0), "{once:?}");
    let plain = jl(dir.path()).arg("report").output().unwrap();
    let r = renders(&String::from_utf8(once.stdout).unwrap());
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].as_bytes(), plain.stdout.as_slice());
}
