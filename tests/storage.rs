//! Results are never lost silently: an output path that cannot take a
//! result is refused before the first release, every database error names
//! the file, and a run whose result could not be stored exits 2 after
//! writing it wherever else it was asked to (`--json`).

use std::path::Path;
use std::process::{Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use serial_test::serial;

fn jl(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("jitterlab").unwrap();
    c.env("JITTERLAB_DB", dir.join("tests.db"))
        .env("JITTERLAB_JOURNAL", dir.join("journal.json"))
        .current_dir(dir);
    c
}

fn is_root() -> bool {
    jitterlab_sys::effective_uid() == 0
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A 30 s run whose output cannot be written is refused at once, with the
/// flag and the path, exit 2, and nothing stored.
#[test]
fn unwritable_outputs_are_refused_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    for (flag, path, why) in [
        (
            "--json",
            "/proc/version",
            "--json /proc/version is on procfs, a kernel interface, not a place for results; choose another path",
        ),
        (
            "--csv",
            "/proc/version",
            "--csv /proc/version is on procfs, a kernel interface, not a place for results; choose another path",
        ),
        (
            "--histogram",
            "/dev/full",
            "--histogram /dev/full is a device, not a file; give a file path (or - for standard output, /dev/null to discard)",
        ),
    ] {
        let t = Instant::now();
        let o = jl(dir.path())
            .args(["run", "cyclic", "--duration", "30s", flag, path])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{flag} {path}: {}", stderr(&o));
        assert_eq!(stderr(&o), format!("jitterlab: error: {why}\n"));
        assert!(t.elapsed() < Duration::from_secs(10), "refused up front");
        assert!(!dir.path().join("tests.db").exists(), "nothing stored");
    }
}

#[test]
fn a_bench_json_path_is_checked_before_the_first_cell() {
    let dir = tempfile::tempdir().unwrap();
    let o = jl(dir.path())
        .args([
            "bench",
            "--preset",
            "powerlink",
            "--duration",
            "30s",
            "--json",
            "/proc/version",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        "jitterlab: error: --json /proc/version is on procfs, a kernel interface, not a place for results; choose another path\n"
    );
    assert!(!dir.path().join("journal.json").exists());
}

#[test]
fn dev_null_is_no_database() {
    let dir = tempfile::tempdir().unwrap();
    let o = jl(dir.path())
        .args(["--db", "/dev/null", "run", "cyclic", "--duration", "1s"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        "jitterlab: error: --db /dev/null is not a regular file; the results database needs one (SQLite writes /dev/null-journal and /dev/null-wal beside it); give a file path\n"
    );
    assert!(!Path::new("/dev/null-journal").exists());
}

/// Overwrites every page of the database but the first two with garbage:
/// SQLite still opens it, and fails on the first page it reads.
fn damage(db: &Path) {
    let mut bytes = std::fs::read(db).unwrap();
    assert!(bytes.len() > 3 * 4096, "a database of several pages");
    for b in bytes[2 * 4096..].iter_mut() {
        *b = 0xa5;
    }
    std::fs::write(db, bytes).unwrap();
}

#[test]
#[serial] // its run would find the machine held by the full-disk bench
fn a_damaged_database_is_named_in_every_error() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("tests.db");
    jl(dir.path())
        .args(["run", "cyclic", "--duration", "3s", "--period", "1ms"])
        .assert()
        .success();
    damage(&db);
    let prefix = format!("jitterlab: error: results database {}: ", db.display());
    let o = jl(dir.path()).arg("runs").output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).starts_with(&prefix), "{}", stderr(&o));
    assert!(stderr(&o).contains("malformed"), "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1);

    let json = dir.path().join("r.json");
    let o = jl(dir.path())
        .args(["run", "cyclic", "--duration", "1s", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    // The error line (a noisy VM may put a calibration warning first).
    let error = stderr(&o)
        .lines()
        .find(|l| l.starts_with("jitterlab: error: "))
        .map(str::to_string);
    assert!(
        error.as_deref().is_some_and(|e| e.starts_with(&format!(
            "jitterlab: error: recording the run: results database {}: ",
            db.display()
        ))),
        "{}",
        stderr(&o)
    );
}

/// A tmpfs of its own, unmounted on drop.
struct SmallFs(tempfile::TempDir);

impl SmallFs {
    fn mount(bytes: u64) -> Option<SmallFs> {
        let dir = tempfile::tempdir().unwrap();
        let ok = StdCommand::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(SmallFs(dir))
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = StdCommand::new("umount").arg(self.0.path()).status();
    }
}

/// Runs a 4 s cyclic probe with `--json` on a healthy disk and `on_fs`
/// (a flag and a file name) on a small tmpfs that fills up once the run
/// measures. Returns the output, the paths of the JSON file and the file on
/// the full file system, and that file system (still full; unmounted when
/// dropped).
fn run_while_the_disk_fills(
    flag: &str,
    name: &str,
) -> Option<(
    std::process::Output,
    std::path::PathBuf,
    std::path::PathBuf,
    SmallFs,
)> {
    let fs = SmallFs::mount(4 << 20)?;
    let out = tempfile::tempdir().unwrap();
    let on_fs = fs.0.path().join(name);
    let json = out.path().join("r.json");
    let mut cmd = StdCommand::new(assert_cmd::cargo::cargo_bin("jitterlab"));
    cmd.env("JITTERLAB_JOURNAL", out.path().join("journal.json"))
        .env("JITTERLAB_DB", out.path().join("ok.db"))
        .args(["run", "cyclic", "--duration", "4s", "--window", "100ms"])
        .arg("--json")
        .arg(&json)
        .arg(flag)
        .arg(&on_fs);
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Fill it once the run measures: its run row is in (--db), or its
    // first window row is (--csv, streamed into a temporary file beside
    // the path until the run ends).
    let csv_rows = || {
        std::fs::read_dir(fs.0.path()).is_ok_and(|d| {
            d.flatten().any(|e| {
                e.file_name().to_string_lossy().starts_with(".jitterlab-")
                    && std::fs::read_to_string(e.path()).is_ok_and(|t| t.lines().count() > 1)
            })
        })
    };
    let measuring = || match flag {
        "--db" => StdCommand::new(assert_cmd::cargo::cargo_bin("jitterlab"))
            .arg("--db")
            .arg(&on_fs)
            .arg("runs")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("running")),
        _ => csv_rows(),
    };
    let t = Instant::now();
    while !measuring() && t.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    let filler = fs.0.path().join("filler");
    let _ = StdCommand::new("dd")
        .args(["if=/dev/zero", "bs=64k"])
        .arg(format!("of={}", filler.display()))
        .stderr(Stdio::null())
        .status();
    let o = child.wait_with_output().unwrap();
    let kept = out.keep();
    Some((o, kept.join("r.json"), on_fs, fs))
}

/// The disk fills up while a run measures: window rows and the result can
/// no longer be stored. The run still writes `--json`, prints its summary,
/// then exits 2 naming the database and where the result is.
#[test]
#[serial]
fn a_full_disk_during_a_run_exits_2_and_keeps_the_json() {
    if !is_root() {
        eprintln!("skipped: mounting a small tmpfs needs root");
        return;
    }
    for (flag, name, first) in [
        ("--db", "full.db", "storing window rows: results database"),
        ("--csv", "windows.csv", "writing --csv"),
    ] {
        let Some((o, json, on_fs, _fs)) = run_while_the_disk_fills(flag, name) else {
            eprintln!("skipped: mount -t tmpfs failed here");
            return;
        };
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        let last = err.lines().last().unwrap();
        assert!(
            last.starts_with(&format!("jitterlab: error: {first} {}: ", on_fs.display())),
            "{err}"
        );
        assert!(
            last.contains("No space left on device") || last.contains("full"),
            "{err}"
        );
        assert!(
            last.ends_with(&format!("; the result is in --json {}", json.display())),
            "{err}"
        );
        let result: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert!(result["threads"][0]["cycles"].as_u64().unwrap() > 3000);
        assert!(String::from_utf8_lossy(&o.stdout).contains("latency"));
        if flag == "--db" {
            // The disk is still full: the commands that read the database
            // work (they open it read-only and mark nothing), and show the
            // run as it ended.
            for args in [&["runs"][..], &["report"]] {
                let r = StdCommand::new(assert_cmd::cargo::cargo_bin("jitterlab"))
                    .env("JITTERLAB_JOURNAL", json.with_file_name("journal.json"))
                    .arg("--db")
                    .arg(&on_fs)
                    .args(args)
                    .output()
                    .unwrap();
                assert_eq!(r.status.code(), Some(0), "{args:?}: {r:?}");
                assert!(
                    String::from_utf8_lossy(&r.stdout).contains("interrupted"),
                    "{args:?}: {r:?}"
                );
            }
        }
        let _ = std::fs::remove_dir_all(json.parent().unwrap());
    }
}

/// The disk of the database fills up while a bench measures: the cell that
/// ended is not lost — its result reaches `--json` (on a healthy disk) and
/// the terminal, and the bench exits 2 saying where it is.
#[test]
#[serial]
fn a_full_disk_during_a_bench_keeps_the_cell_s_result() {
    if !is_root() {
        eprintln!("skipped: mounting a small tmpfs needs root");
        return;
    }
    let Some(fs) = SmallFs::mount(1 << 20) else {
        eprintln!("skipped: mount -t tmpfs failed here");
        return;
    };
    let out = tempfile::tempdir().unwrap();
    let spec = out.path().join("full.toml");
    std::fs::write(
        &spec,
        "name = \"full\"\nduration = \"3s\"\nwarmup = \"200ms\"\n\n[[scenario]]\nname = \"idle\"\nbuiltin = \"idle\"\n\n[[probe]]\nkind = \"cyclic\"\nperiod = \"1ms\"\n",
    )
    .unwrap();
    let db = fs.0.path().join("full.db");
    let json = out.path().join("bench.json");
    let mut child = StdCommand::new(assert_cmd::cargo::cargo_bin("jitterlab"))
        .env("JITTERLAB_JOURNAL", out.path().join("journal.json"))
        .arg("--db")
        .arg(&db)
        .arg("bench")
        .arg(&spec)
        .arg("--json")
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Fill the disk once the cell measures (its window rows are stored).
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(60)
        && child.try_wait().unwrap().is_none()
        && !rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .and_then(|c| c.query_row("SELECT COUNT(*) FROM windows", [], |r| r.get::<_, i64>(0)))
            .is_ok_and(|n| n > 0)
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = StdCommand::new("dd")
        .args(["if=/dev/zero", "bs=64k"])
        .arg(format!("of={}", fs.0.path().join("filler").display()))
        .stderr(Stdio::null())
        .status();
    let o = child.wait_with_output().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    let last = err.lines().last().unwrap();
    assert!(
        last.ends_with(&format!(
            "; the result of the 1 cell that ended is in --json {} and the tables above",
            json.display()
        )),
        "{err}"
    );
    let stored: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let cycles = &stored["cells"][0]["result"]["threads"][0]["cycles"];
    assert!(cycles.as_u64().unwrap() > 1000, "{stored}");
    assert!(String::from_utf8_lossy(&o.stdout).contains("idle"), "{o:?}");
}
