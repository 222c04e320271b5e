//! Results from many machines, through the command line: `jitterlab
//! import` merges another machine's database (hosts kept apart, a second
//! import adds nothing, the other file only read), `jitterlab runs` lists
//! and chooses runs by host and time, `jitterlab report` names runs by uid,
//! and bad input exits 2 with the database unchanged.
//!
//! The two machines are the databases of `tests/fixtures/databases/`
//! (schema 3, written on a VM called `vm`): `bench-epics.db`, renamed to
//! host `plc-b` with a machine id, plays the other machine.

use std::path::{Path, PathBuf};

use assert_cmd::Command;

const MACHINE_B: &str = "bbbb0c8e2b1d4e6f9a7b5c3d2e1f0a9b";

const HEADER: &str = " run  uid       started                    kind   name              status         cells  host          machine   real-time      cycles  windows     max latency\n";
const LINE_A: &str = "   1  dacc06c2  2026-11-23T21:15:29Z       run    cyclic            completed        1/1  vm            -         yes              1980        4     15819.817us\n";
const LINE_B: &str = "   2  7a9c11e3  2026-11-23T21:15:47Z       bench  epics             completed        6/6  plc-b         bbbb0c8e  -                5988        4       296.580us\n";

/// This machine's database (`a.db`: run-cyclic) and another's (`b/b.db`:
/// bench-epics of host plc-b), migrated, in a fresh directory.
struct Machines {
    dir: tempfile::TempDir,
}

impl Machines {
    fn new() -> Machines {
        let m = Machines {
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir(m.dir.path().join("b")).unwrap();
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/databases");
        std::fs::copy(fixtures.join("run-cyclic.db"), m.a()).unwrap();
        std::fs::copy(fixtures.join("bench-epics.db"), m.b()).unwrap();
        // Migrate b (a command that writes it: importing a copy of itself,
        // which adds nothing; listing it only reads), then make it another
        // machine.
        let twin = m.dir.path().join("twin.db");
        std::fs::copy(fixtures.join("bench-epics.db"), &twin).unwrap();
        m.jl(&m.b()).arg("import").arg(&twin).assert().code(0);
        std::fs::remove_file(twin).unwrap();
        rusqlite::Connection::open(m.b())
            .unwrap()
            .execute(
                "UPDATE hosts SET hostname = 'plc-b', machine_id = ?1",
                [MACHINE_B],
            )
            .unwrap();
        m
    }

    fn a(&self) -> PathBuf {
        self.dir.path().join("a.db")
    }

    fn b(&self) -> PathBuf {
        self.dir.path().join("b/b.db")
    }

    fn jl(&self, db: &Path) -> Command {
        let mut c = Command::cargo_bin("jitterlab").unwrap();
        c.env("JITTERLAB_JOURNAL", self.dir.path().join("journal.json"))
            .env_remove("JITTERLAB_DB")
            .arg("--db")
            .arg(db);
        c
    }

    /// stdout of a command that must succeed.
    fn ok(&self, db: &Path, args: &[&str]) -> String {
        let out = self.jl(db).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    }

    /// stderr of a command that must be refused as bad input.
    fn refused(&self, db: &Path, args: &[&str]) -> String {
        let out = self.jl(db).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        assert!(out.stdout.is_empty(), "{args:?}: {out:?}");
        String::from_utf8(out.stderr).unwrap()
    }
}

/// Every file of `dir` (recursively) with its bytes; SQLite's shared
/// memory and empty write-ahead log files left out (a command that reads
/// a WAL database makes them, as every SQLite reader does; its content is
/// the database file's).
fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let empty = e.metadata().is_ok_and(|m| m.len() == 0);
        if name.ends_with("-shm") || (name.ends_with("-wal") && empty) {
            continue;
        }
        if e.file_type().unwrap().is_dir() {
            v.extend(files(&e.path()));
        } else {
            v.push((e.path(), std::fs::read(e.path()).unwrap()));
        }
    }
    v.sort();
    v
}

#[test]
fn another_machine_s_runs_are_imported_once_listed_apart_and_compared() {
    let m = Machines::new();
    let b_before = files(&m.dir.path().join("b"));
    let b = m.b().display().to_string();
    assert_eq!(
        m.ok(&m.a(), &["import", &b]),
        format!("from {b}:\n  plc-b (machine bbbb0c8e): 1 run\n1 run imported, 0 already here\n")
    );
    assert_eq!(files(&m.dir.path().join("b")), b_before, "b was only read");
    assert_eq!(
        m.ok(&m.a(), &["import", &b]),
        "0 runs imported, 1 already here\n"
    );
    assert_eq!(files(&m.dir.path().join("b")), b_before);

    // Both hosts listed, each with its machine id (unknown for vm's run,
    // stored before machine ids were kept).
    let all = format!("{HEADER}{LINE_A}{LINE_B}");
    assert_eq!(m.ok(&m.a(), &["runs"]), all);
    for (args, want) in [
        (&["--host", "plc-b"][..], format!("{HEADER}{LINE_B}")),
        (&["--host", "PLC-B"], format!("{HEADER}{LINE_B}")),
        (&["--host", "bbbb0c8e"], format!("{HEADER}{LINE_B}")),
        (&["--host", "bbbb"], format!("{HEADER}{LINE_B}")),
        (&["--host", "vm"], format!("{HEADER}{LINE_A}")),
        (
            &["--since", "2026-11-23T21:15:30Z"],
            format!("{HEADER}{LINE_B}"),
        ),
        (
            &["--since", "2026-11-23T22:15:47+01:00"],
            format!("{HEADER}{LINE_B}"),
        ),
        (
            &["--until", "2026-11-23T21:15:30Z"],
            format!("{HEADER}{LINE_A}"),
        ),
        (
            &["--since", "2026-11-23", "--until", "2026-11-23"],
            all.clone(),
        ),
        (&["--until", "2026-11-22"], String::new()),
        (&["--since", "100000d", "--until", "0s"], all.clone()),
        (
            &["--host", "vm", "--since", "2026-11-23T21:15:30Z"],
            String::new(),
        ),
    ] {
        let want = if want.is_empty() {
            format!(
                "none of the 2 runs stored in {} matches; list them all with: jitterlab runs\n",
                m.a().display()
            )
        } else {
            want
        };
        let mut full = vec!["runs"];
        full.extend_from_slice(args);
        assert_eq!(m.ok(&m.a(), &full), want, "{args:?}");
    }

    // The JSON listing: its schema, the database's, every run whole.
    let json: serde_json::Value =
        serde_json::from_str(&m.ok(&m.a(), &["runs", "--json", "--host", "plc-b"])).unwrap();
    let version: i64 = rusqlite::Connection::open(m.a())
        .unwrap()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(json["schema_version"], 1);
    assert_eq!(json["database_schema"], version);
    assert_eq!(json["runs"].as_array().unwrap().len(), 1);
    let run = &json["runs"][0];
    assert_eq!(run["id"], 2);
    assert_eq!(run["uid"], "7a9c11e3-5bfa-52ab-abdb-07d3a2940fdd");
    assert_eq!(run["hostname"], "plc-b");
    assert_eq!(run["machine_id"], MACHINE_B);
    assert_eq!(run["started_at"], "2026-11-23T21:15:47.37999542Z");
    assert_eq!(run["cycles"], 5988);

    // report A B compares the runs of two machines, named by id or uid.
    let by_id = m.ok(&m.a(), &["report", "1", "2"]);
    // Both runs' records first, each titled with its run, then the
    // comparison.
    assert!(by_id.starts_with("Record of run A (run 1)\n"), "{by_id}");
    assert!(by_id.contains("\nRecord of run B (run 2)\n"), "{by_id}");
    assert!(
        by_id.contains(
            "\n\nA  run 1 (run cyclic), started 2026-11-23T21:15:29.332872764Z, host vm, kernel 6.18.44-fc-v657, status completed\n\
             B  run 2 (bench epics), started 2026-11-23T21:15:47.37999542Z, host plc-b, kernel 6.18.44-fc-v657, status completed\n"
        ),
        "{by_id}"
    );
    assert_eq!(m.ok(&m.a(), &["report", "dacc06c2", "7a9c"]), by_id);
    assert_eq!(
        m.ok(
            &m.a(),
            &["report", "dacc06c2-de2a-5803-bb29-6cc265024535", "7A9C11E3"]
        ),
        by_id
    );
    // One run by uid prints what its id prints.
    assert_eq!(
        m.ok(&m.a(), &["report", "7a9c11e3", "--format", "csv"]),
        m.ok(&m.a(), &["report", "2", "--format", "csv"])
    );
}

#[test]
fn bad_imports_exit_2_and_change_nothing() {
    let m = Machines::new();
    let a = m.a();
    let before = files(m.dir.path());
    let missing = m.dir.path().join("none.db");
    let text = m.dir.path().join("b/notes.db");
    std::fs::write(
        &text,
        "plant notes, not a database; long enough for SQLite to read a header of 100 bytes .....",
    )
    .unwrap();
    let newer = m.dir.path().join("b/newer.db");
    rusqlite::Connection::open(&newer)
        .unwrap()
        .execute_batch("CREATE TABLE runs (id INTEGER PRIMARY KEY); PRAGMA user_version = 99;")
        .unwrap();
    let before_with_bad = files(m.dir.path());
    let a_again = m.dir.path().join("b/../a.db");
    let link = m.dir.path().join("b/link.db");
    std::fs::hard_link(&a, &link).unwrap();
    for (other, why) in [
        (
            missing.clone(),
            format!(
                "no database to import at {}; name another machine's results database (the file its --db named)",
                missing.display()
            ),
        ),
        (
            text.clone(),
            format!(
                "{} is not a jitterlab database (file is not a database); name a results database written by jitterlab",
                text.display()
            ),
        ),
        (
            newer.clone(),
            format!(
                "{} has schema version 99, newer than this jitterlab's {}; use a newer jitterlab or another --db",
                newer.display(),
                // b was opened, so migrated: this jitterlab's version.
                rusqlite::Connection::open(m.b())
                    .unwrap()
                    .query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0))
                    .unwrap()
            ),
        ),
        (
            a.clone(),
            format!(
                "{} is this database (--db): a database cannot be imported into itself; name another machine's database",
                a.display()
            ),
        ),
        (
            a_again.clone(),
            format!(
                "{} is this database (--db): a database cannot be imported into itself; name another machine's database",
                a_again.display()
            ),
        ),
        (
            link.clone(),
            format!(
                "{} is this database (--db): a database cannot be imported into itself; name another machine's database",
                link.display()
            ),
        ),
    ] {
        let other = other.display().to_string();
        assert_eq!(
            m.refused(&a, &["import", &other]),
            format!("jitterlab: error: {why}\n"),
            "{other}"
        );
    }
    std::fs::remove_file(&link).unwrap();
    assert_eq!(files(m.dir.path()), before_with_bad, "nothing changed");
    // A database that does not exist yet is not made for a refused import.
    let fresh = m.dir.path().join("fresh.db");
    m.refused(&fresh, &["import", &text.display().to_string()]);
    assert!(!fresh.exists());
    // No file name at all is clap's refusal.
    let out = m.jl(&a).arg("import").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "jitterlab: error: the following required arguments were not provided: <OTHER.db> (see jitterlab --help)\n"
    );
    std::fs::remove_file(&text).unwrap();
    std::fs::remove_file(&newer).unwrap();
    assert_eq!(files(m.dir.path()), before);
}

#[test]
fn no_import_beside_a_run_storing_into_the_database() {
    let m = Machines::new();
    let a = m.a();
    // A live process (this one's child) as the run's writer, this boot.
    let mut child = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    rusqlite::Connection::open(&a)
        .unwrap()
        .execute(
            "UPDATE runs SET status = 'running', pid = ?1, boot_id = ?2",
            rusqlite::params![child.id(), boot.trim()],
        )
        .unwrap();
    let before = files(m.dir.path());
    assert_eq!(
        m.refused(&a, &["import", &m.b().display().to_string()]),
        format!(
            "jitterlab: error: run 1 is storing into {} now; import once it has ended (an import holds the database's write lock, which would stall the run's writer)\n",
            a.display()
        )
    );
    assert_eq!(files(m.dir.path()), before);
    child.kill().unwrap();
    child.wait().unwrap();
    // Once it is gone, the run is marked interrupted and the import goes.
    assert!(m
        .ok(&a, &["import", &m.b().display().to_string()])
        .ends_with("1 run imported, 0 already here\n"));
}

#[test]
fn runs_named_wrongly_are_refused_with_what_to_do() {
    let m = Machines::new();
    let a = m.a();
    m.ok(&a, &["import", &m.b().display().to_string()]);
    rusqlite::Connection::open(&a)
        .unwrap()
        .execute_batch("UPDATE runs SET uid = '7a9c0000-0000-4000-8000-000000000001' WHERE id = 1;")
        .unwrap();
    let before = files(m.dir.path());
    for (args, why) in [
        (
            &["report", "ffff"][..],
            "there is no run ffff in the database (no id, and no uid that starts so); list the runs with: jitterlab runs".to_string(),
        ),
        (
            &["report", "7a9c"],
            "uid 7a9c is ambiguous: run 1 (7a9c0000-0000-4000-8000-000000000001), run 2 (7a9c11e3-5bfa-52ab-abdb-07d3a2940fdd); give more of the uid".to_string(),
        ),
        (
            &["report", "1", "9"],
            "there is no run 9 in the database; list the runs with: jitterlab runs".to_string(),
        ),
        (
            &["report", "1a2"],
            "invalid value '1a2' for '[RUN]...': not a run id or uid: give a run's id or at least 4 characters of its uid, as jitterlab runs lists them (see jitterlab --help)".to_string(),
        ),
        (
            &["runs", "--since", "yesterday"],
            "invalid value 'yesterday' for '--since <WHEN>': not a time: give RFC 3339 (2026-11-24T08:00:00Z), a date (2026-11-24, UTC) or an age (30m, 6h, 7d) (see jitterlab --help)".to_string(),
        ),
        (
            &["runs", "--since", "2026-11-24", "--until", "2026-11-23"],
            "--since is not before --until (runs from 2026-11-24T00:00:00Z and before 2026-11-24T00:00:00Z): no run can match; swap them".to_string(),
        ),
    ] {
        assert_eq!(
            m.refused(&a, args),
            format!("jitterlab: error: {why}\n"),
            "{args:?}"
        );
    }
    assert_eq!(
        m.ok(&a, &["report", "7a9c1", "--format", "csv"]),
        m.ok(&a, &["report", "2", "--format", "csv"])
    );
    assert_eq!(files(m.dir.path()), before);
}

/// A run stores its host's machine id, hashed (the fake root's
/// /etc/machine-id gives the value systemd-id128 gives for it).
#[cfg(feature = "test-probe")]
#[test]
fn a_run_stores_its_host_s_hashed_machine_id() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let copy = |from: &Path, to: &Path| {
        assert!(std::process::Command::new("cp")
            .arg("-r")
            .arg(from)
            .arg(to)
            .status()
            .unwrap()
            .success());
    };
    copy(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysroot-vm"),
        &root,
    );
    std::fs::create_dir_all(root.join("etc")).unwrap();
    std::fs::write(
        root.join("etc/machine-id"),
        "4a3f0c8e2b1d4e6f9a7b5c3d2e1f0a9b\n",
    )
    .unwrap();
    let db = dir.path().join("j.db");
    let jl = || {
        let mut c = Command::cargo_bin("jitterlab").unwrap();
        c.env("JITTERLAB_JOURNAL", dir.path().join("journal.json"))
            .arg("--sysroot")
            .arg(&root)
            .arg("--db")
            .arg(&db);
        c
    };
    let out = jl()
        .args([
            "run",
            "sleep",
            "--cycles",
            "20",
            "--policy",
            "other",
            "--no-dma-latency",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let out = jl().args(["runs", "--json"]).output().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let run = &json["runs"][0];
    assert_eq!(run["machine_id"], "93c683ad344a4a78831f02e908650126");
    assert_eq!(run["hostname"], "vm");
    let uid = run["uid"].as_str().unwrap();
    assert_eq!(uid.len(), 36);
    assert_eq!(&uid[14..15], "4", "a random (version 4) uid: {uid}");
    // The result's host snapshot carries it too; the raw id is nowhere.
    let report = jl().args(["report", "--format", "json"]).output().unwrap();
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(
        text.contains("\"machine_id\": \"93c683ad344a4a78831f02e908650126\""),
        "{text}"
    );
    let bytes = std::fs::read(&db).unwrap();
    assert!(!bytes
        .windows(32)
        .any(|w| w == b"4a3f0c8e2b1d4e6f9a7b5c3d2e1f0a9b"));
}
