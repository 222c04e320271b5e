//! Command-line tests of the output paths (`--json`, `--csv`, `--histogram`,
//! `run netcycle --pcap`, `report --histogram`, `report -o`) against what
//! another local user could plant in a shared directory: a symbolic link
//! to a root-only file, a named pipe, a socket. Each is refused before
//! anything runs (exit 2, the flag, the path and what to do in one line),
//! the link's target left byte for byte; a regular file is replaced whole,
//! keeping its mode, with no temporary file left beside it after a run
//! that succeeds, is interrupted or fails; `-` is standard output.
//!
//! The runs measure for a fraction of a second and assert no timing.
//! `run netcycle` makes network namespaces and raw sockets: root only (CI
//! runs as root); elsewhere it says so and skips.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use serial_test::serial;

/// A directory of another user's making: a root-only secret and whatever
/// the test plants beside it.
struct Planted {
    dir: tempfile::TempDir,
}

const SECRET: &str = "root only: do not overwrite\n";

impl Planted {
    fn new() -> Planted {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        std::fs::write(&secret, SECRET).unwrap();
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
        Planted { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `name`, a symbolic link to the secret.
    fn link(&self, name: &str) -> PathBuf {
        let p = self.path(name);
        std::os::unix::fs::symlink(self.path("secret"), &p).unwrap();
        p
    }

    /// `name`, a named pipe nobody reads.
    fn fifo(&self, name: &str) -> PathBuf {
        let p = self.path(name);
        assert!(StdCommand::new("mkfifo")
            .arg(&p)
            .status()
            .unwrap()
            .success());
        p
    }

    /// The names in the directory, sorted.
    fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    /// The secret is as it was.
    fn secret_intact(&self) {
        assert_eq!(
            std::fs::read_to_string(self.path("secret")).unwrap(),
            SECRET
        );
    }
}

/// `jitterlab` with its database and journal in `dir`, stopped after 30 s
/// (a check that opened a FIFO would block for ever).
fn jl(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("jitterlab").unwrap();
    c.env("JITTERLAB_DB", dir.join("j.db"))
        .env("JITTERLAB_JOURNAL", dir.join("journal.json"))
        .timeout(Duration::from_secs(30));
    c
}

/// A short `run cyclic` on the last CPU.
const CYCLIC: [&str; 6] = ["run", "cyclic", "--cycles", "200", "--period", "1ms"];

/// `p`'s inode number.
fn inode(p: &Path) -> u64 {
    std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap())
}

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The one-line refusal of `flag PATH`, a symbolic link.
fn link_refusal(flag: &str, p: &Path) -> String {
    format!(
        "jitterlab: error: {flag} {} is a symbolic link, which jitterlab never writes through (it could point at any file); give the file's own path, or - for standard output\n",
        p.display()
    )
}

/// The one-line refusal of `flag PATH`, a `what` that is not a file.
fn not_a_file(flag: &str, p: &Path, what: &str) -> String {
    format!(
        "jitterlab: error: {flag} {} is {what}, not a file; give a file path (or - for standard output, /dev/null to discard)\n",
        p.display()
    )
}

#[test]
fn run_outputs_through_a_symbolic_link_are_refused_and_the_target_kept() {
    for flag in ["--json", "--csv", "--histogram"] {
        let d = Planted::new();
        let link = d.link("out");
        let out = jl(d.dir.path())
            .args(CYCLIC)
            .args(["--no-db", flag])
            .arg(&link)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{flag}: {}", stderr_of(&out));
        assert_eq!(stderr_of(&out), link_refusal(flag, &link));
        assert_eq!(out.stdout, b"");
        d.secret_intact();
        assert_eq!(d.names(), ["out", "secret"], "{flag}");
    }
    // The other commands' --json: bench (its dry run checks too) and
    // timerlat.
    let commands: [&[&str]; 2] = [
        &["bench", "--preset", "codesys", "--dry-run"],
        &["run", "timerlat", "--no-db", "--duration", "1s"],
    ];
    for command in commands {
        let d = Planted::new();
        let link = d.link("out");
        let out = jl(d.dir.path())
            .args(command)
            .arg("--json")
            .arg(&link)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(2),
            "{command:?}: {}",
            stderr_of(&out)
        );
        assert_eq!(
            stderr_of(&out),
            link_refusal("--json", &link),
            "{command:?}"
        );
        d.secret_intact();
    }
}

#[test]
fn run_outputs_on_a_fifo_or_a_socket_are_refused_without_blocking() {
    for flag in ["--json", "--csv", "--histogram"] {
        let d = Planted::new();
        let fifo = d.fifo("pipe");
        let out = jl(d.dir.path())
            .args(CYCLIC)
            .args(["--no-db", flag])
            .arg(&fifo)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{flag}: {}", stderr_of(&out));
        assert_eq!(
            stderr_of(&out),
            not_a_file(flag, &fifo, "a named pipe (FIFO)")
        );

        let sock = d.path("sock");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let out = jl(d.dir.path())
            .args(CYCLIC)
            .args(["--no-db", flag])
            .arg(&sock)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{flag}: {}", stderr_of(&out));
        assert_eq!(stderr_of(&out), not_a_file(flag, &sock, "a socket"));
        assert_eq!(d.names(), ["pipe", "secret", "sock"], "{flag}");
    }
}

#[test]
#[serial]
fn run_replaces_existing_files_whole_keeping_their_mode() {
    let d = Planted::new();
    let (json, csv, hist) = (d.path("r.json"), d.path("w.csv"), d.path("h.txt"));
    for (p, mode) in [(&json, 0o640), (&csv, 0o604), (&hist, 0o600)] {
        std::fs::write(p, "old\n").unwrap();
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    let inodes = [inode(&json), inode(&csv), inode(&hist)];
    let out = jl(d.dir.path())
        .args(CYCLIC)
        .arg("--no-db")
        .arg("--json")
        .arg(&json)
        .arg("--csv")
        .arg(&csv)
        .arg("--histogram")
        .arg(&hist)
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        stderr_of(&out)
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r["threads"][0]["cycles"], 200);
    let rows = std::fs::read_to_string(&csv).unwrap();
    assert!(
        rows.starts_with("thread,cpu,window,start_ns,cycles,overruns,"),
        "{rows}"
    );
    assert!(rows.lines().count() >= 2, "{rows}");
    assert!(std::fs::read_to_string(&hist).unwrap().contains("# Total:"));
    for (p, mode) in [(&json, 0o640), (&csv, 0o604), (&hist, 0o600)] {
        let m = std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
        assert_eq!(m, mode, "{}", p.display());
    }
    // New files renamed over the old ones, not the old ones rewritten.
    for (p, old) in [&json, &csv, &hist].into_iter().zip(inodes) {
        assert_ne!(inode(p), old, "{}", p.display());
    }
    assert_eq!(d.names(), ["h.txt", "r.json", "secret", "w.csv"]);
}

#[test]
#[serial]
fn json_to_standard_output_is_the_json_alone() {
    let d = Planted::new();
    let out = jl(d.dir.path())
        .args(CYCLIC)
        .args(["--no-db", "--json", "-"])
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        stderr_of(&out)
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["threads"][0]["cycles"], 200);
    // The summary went to stderr.
    assert!(
        stderr_of(&out).contains("probe        cyclic\nperiod       1ms\n"),
        "{}",
        stderr_of(&out)
    );
    let out = jl(d.dir.path())
        .args(CYCLIC)
        .args(["--no-db", "--json", "-", "--csv", "-"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr_of(&out),
        "jitterlab: error: --json - and --csv - both ask for standard output; give a file path to all but one of them\n"
    );
}

/// Runs `jitterlab run wakeup --csv CSV` on CPU 1 for at most 60 s and
/// stops it with `signal` after 1.5 s; its exit status.
fn interrupted_run(dir: &Path, csv: &Path, signal: &str) -> i32 {
    let child = StdCommand::new(assert_cmd::cargo::cargo_bin("jitterlab"))
        .env("JITTERLAB_DB", dir.join("j.db"))
        .env("JITTERLAB_JOURNAL", dir.join("journal.json"))
        .args([
            "run",
            "wakeup",
            "--duration",
            "60s",
            "--cpus",
            "1",
            "--no-db",
        ])
        .arg("--csv")
        .arg(csv)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let k = StdCommand::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(k.success());
    let started = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(started.elapsed() < Duration::from_secs(10), "slow to stop");
    out.status
        .code()
        .unwrap_or_else(|| panic!("{}", stderr_of(&out)))
}

#[test]
#[serial]
fn an_interrupted_run_still_replaces_its_csv_and_leaves_no_temporary_file() {
    for signal in ["INT", "TERM"] {
        let d = Planted::new();
        let csv = d.path("w.csv");
        std::fs::write(&csv, "old\n").unwrap();
        let old = inode(&csv);
        assert_eq!(
            interrupted_run(d.dir.path(), &csv, signal),
            0,
            "SIG{signal}"
        );
        let rows = std::fs::read_to_string(&csv).unwrap();
        assert!(
            rows.starts_with("thread,cpu,window,"),
            "SIG{signal}: {rows}"
        );
        assert_ne!(inode(&csv), old, "SIG{signal}: renamed over the old file");
        assert_eq!(d.names(), ["secret", "w.csv"], "SIG{signal}");
    }
}

#[test]
#[serial]
fn a_failed_run_keeps_its_csv_and_leaves_no_temporary_file() {
    // The run writes --json to standard output, whose reader has gone:
    // the run ends on that error after its rows went to --csv.
    let d = Planted::new();
    let csv = d.path("w.csv");
    std::fs::write(&csv, "old\n").unwrap();
    let old = inode(&csv);
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = StdCommand::new(assert_cmd::cargo::cargo_bin("jitterlab"))
        .env("JITTERLAB_DB", d.path("j.db"))
        .env("JITTERLAB_JOURNAL", d.path("journal.json"))
        .args(CYCLIC)
        .args(["--no-db", "--json", "-", "--csv"])
        .arg(&csv)
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    // 141 (128 + SIGPIPE), quietly, as for any closed stdout.
    assert_eq!(out.status.code(), Some(141), "{}", stderr_of(&out));
    assert!(!stderr_of(&out).contains("error"), "{}", stderr_of(&out));
    let rows = std::fs::read_to_string(&csv).unwrap();
    assert!(rows.starts_with("thread,cpu,window,"), "{rows}");
    assert!(rows.lines().count() >= 2, "{rows}");
    assert_ne!(inode(&csv), old, "renamed over the old file");
    assert_eq!(d.names(), ["secret", "w.csv"]);
}

/// A stored run of one cell, with its 1 µs histogram, in `dir`'s database.
fn stored_run(dir: &Path) {
    let out = jl(dir)
        .args([
            "run",
            "wakeup",
            "--cycles",
            "300",
            "--interval",
            "200us",
            "--cpus",
            "1",
        ])
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        stderr_of(&out)
    );
}

#[test]
#[serial]
fn report_outputs_refuse_links_and_fifos_and_replace_files() {
    let d = Planted::new();
    stored_run(d.dir.path());
    for flag in ["--histogram", "-o"] {
        let link = d.link("out");
        let out = jl(d.dir.path())
            .args(["report", flag])
            .arg(&link)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{flag}: {}", stderr_of(&out));
        assert_eq!(stderr_of(&out), link_refusal(flag, &link));
        d.secret_intact();
        std::fs::remove_file(&link).unwrap();

        let fifo = d.fifo("pipe");
        let out = jl(d.dir.path())
            .args(["report", flag])
            .arg(&fifo)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{flag}: {}", stderr_of(&out));
        assert_eq!(
            stderr_of(&out),
            not_a_file(flag, &fifo, "a named pipe (FIFO)")
        );
        std::fs::remove_file(&fifo).unwrap();

        let file = d.path("out");
        std::fs::write(&file, "old\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
        let out = jl(d.dir.path())
            .args(["report", flag])
            .arg(&file)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{flag}: {}", stderr_of(&out));
        assert_eq!(out.stdout, b"");
        let text = std::fs::read_to_string(&file).unwrap();
        assert_ne!(text, "old\n");
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o640, "{flag}");
        // `-` is standard output: the same text.
        let out = jl(d.dir.path())
            .args(["report", flag, "-"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{flag}: {}", stderr_of(&out));
        assert_eq!(String::from_utf8_lossy(&out.stdout), text, "{flag} -");
        std::fs::remove_file(&file).unwrap();
    }
    let mut names = d.names();
    names.retain(|n| !n.starts_with("j.db") && n != "journal.json");
    assert_eq!(names, ["secret"]);
}

/// True as root; else says why the netcycle run is skipped.
fn root_or_skip(what: &str) -> bool {
    if jitterlab_sys::effective_uid() == 0 {
        return true;
    }
    eprintln!("skipping {what}: the netcycle namespaces and raw sockets need root");
    false
}

#[test]
#[serial]
fn the_capture_refuses_a_link_a_fifo_and_stdout_and_replaces_a_file() {
    let d = Planted::new();
    let netcycle = [
        "run",
        "netcycle",
        "--no-db",
        "--duration",
        "1s",
        "--cycle",
        "10ms",
    ];
    let link = d.link("c.pcap");
    let out = jl(d.dir.path())
        .args(netcycle)
        .arg("--pcap")
        .arg(&link)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    assert_eq!(stderr_of(&out), link_refusal("--pcap", &link));
    d.secret_intact();
    std::fs::remove_file(&link).unwrap();
    let fifo = d.fifo("c.pcap");
    let out = jl(d.dir.path())
        .args(netcycle)
        .arg("--pcap")
        .arg(&fifo)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    assert_eq!(
        stderr_of(&out),
        not_a_file("--pcap", &fifo, "a named pipe (FIFO)")
    );
    std::fs::remove_file(&fifo).unwrap();
    let out = jl(d.dir.path())
        .args(netcycle)
        .args(["--pcap", "-"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr_of(&out));
    assert_eq!(
        stderr_of(&out),
        "jitterlab: error: --pcap -: a capture is binary and is not written to standard output; give a file path\n"
    );

    if !root_or_skip("the capture's run") {
        return;
    }
    let pcap = d.path("c.pcap");
    std::fs::write(&pcap, "old\n").unwrap();
    std::fs::set_permissions(&pcap, std::fs::Permissions::from_mode(0o640)).unwrap();
    let json = d.path("r.json");
    let out = jl(d.dir.path())
        .args(netcycle)
        .arg("--pcap")
        .arg(&pcap)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        stderr_of(&out)
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let frames = r["detail"]["pcap"]["frames"].as_u64().unwrap();
    assert!(frames > 0, "{r}");
    let bytes = std::fs::read(&pcap).unwrap();
    assert_eq!(&bytes[..4], &0xa1b2_3c4du32.to_ne_bytes());
    let mode = std::fs::metadata(&pcap).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o640);
    assert_eq!(d.names(), ["c.pcap", "r.json", "secret"]);
}
