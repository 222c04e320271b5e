//! A `--db` is never trusted blindly: a file someone else can change, a
//! planted trigger or view, another program's SQLite file, a crafted file
//! to import — each is refused with exit 2 and the fix, and the commands
//! that only read never change the file they read.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use assert_cmd::Command;

fn jl(dir: &Path, db: &Path) -> Command {
    let mut c = Command::cargo_bin("jitterlab").unwrap();
    c.env("JITTERLAB_JOURNAL", dir.join("journal.json"))
        .env_remove("JITTERLAB_DB")
        .current_dir(dir)
        .arg("--db")
        .arg(db);
    c
}

/// stderr of a command that must be refused as bad input (exit 2, one
/// line, nothing on stdout).
fn refused(dir: &Path, db: &Path, args: &[&str]) -> String {
    let out = jl(dir, db).args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
    assert!(out.stdout.is_empty(), "{args:?}: {out:?}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    err
}

/// stdout of a command that must succeed.
fn ok(dir: &Path, db: &Path, args: &[&str]) -> String {
    let out = jl(dir, db).args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// Every file of `dir` with its bytes, sorted; SQLite's shared memory and
/// empty write-ahead log files left out (a command that reads a WAL
/// database makes them, as every SQLite reader does).
fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_type().unwrap().is_file())
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let empty = e.metadata().is_ok_and(|m| m.len() == 0);
            !(name.ends_with("-shm") || name.ends_with("-wal") && empty)
        })
        .map(|e| (e.path(), std::fs::read(e.path()).unwrap()))
        .collect();
    v.sort();
    v
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/databases")
        .join(name)
}

/// A copy of the fixture `name` at `to`, brought to this jitterlab's schema
/// by a command that writes it (importing a copy of itself adds nothing).
fn migrated(dir: &Path, name: &str, to: &Path) {
    std::fs::copy(fixture(name), to).unwrap();
    let twin = dir.join("twin.db");
    std::fs::copy(fixture(name), &twin).unwrap();
    let out = ok(dir, to, &["import", twin.to_str().unwrap()]);
    assert!(out.ends_with("0 runs imported, 1 already here\n"), "{out}");
    std::fs::remove_file(twin).unwrap();
}

#[test]
fn reading_commands_never_change_another_program_s_database() {
    let dir = tempfile::tempdir().unwrap();
    let app = dir.path().join("app.db");
    let c = rusqlite::Connection::open(&app).unwrap();
    c.execute_batch("CREATE TABLE contacts (name TEXT); INSERT INTO contacts VALUES ('a');")
        .unwrap();
    drop(c);
    let before = files(dir.path());
    let why = format!(
        "jitterlab: error: {} holds table contacts: it is another program's SQLite database, not a jitterlab results database; give another --db\n",
        app.display()
    );
    for args in [&["runs"][..], &["report"], &["report", "--monitor"]] {
        assert_eq!(refused(dir.path(), &app, args), why, "{args:?}");
    }
    // A command that writes refuses it before it measures.
    assert_eq!(
        refused(dir.path(), &app, &["run", "cyclic", "--duration", "1s"]),
        why
    );
    assert_eq!(
        files(dir.path()),
        before,
        "no table added, no WAL, no file beside it"
    );
}

#[test]
fn reading_an_older_database_leaves_it_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("old.db");
    std::fs::copy(fixture("run-cyclic.db"), &db).unwrap();
    let before = std::fs::read(&db).unwrap();
    let runs = ok(dir.path(), &db, &["runs"]);
    assert!(runs.contains("completed"), "{runs}");
    ok(dir.path(), &db, &["report"]);
    // The file as it was (SQLite's -shm and an empty -wal beside it, as
    // every reader of a WAL database makes them).
    assert_eq!(std::fs::read(&db).unwrap(), before);
    assert_eq!(
        std::fs::metadata(dir.path().join("old.db-wal"))
            .unwrap()
            .len(),
        0
    );
}

#[test]
fn a_database_someone_else_can_change_is_refused_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("j.db");
    migrated(dir.path(), "run-cyclic.db", &db);
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o664)).unwrap();
    let want = format!(
        "jitterlab: error: {} is writable by group (mode 0664): they can change what jitterlab stores and reads; chmod go-w {}, or give another --db\n",
        db.display(),
        db.display()
    );
    assert_eq!(refused(dir.path(), &db, &["runs"]), want);
    assert_eq!(
        refused(dir.path(), &db, &["run", "cyclic", "--duration", "1s"]),
        want
    );
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
    if jitterlab_sys::effective_uid() != 0 {
        eprintln!("skipped the owner case: giving a file to another user needs root");
        return;
    }
    std::os::unix::fs::chown(&db, Some(4242), None).unwrap();
    assert_eq!(
        refused(dir.path(), &db, &["runs"]),
        format!(
            "jitterlab: error: {} is owned by user 4242, not by you (user 0) or root: its owner can change what jitterlab stores and reads; if you trust it, chown 0 {}, else give another --db\n",
            db.display(),
            db.display()
        )
    );
}

#[test]
fn a_planted_trigger_is_refused_and_deletes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("j.db");
    migrated(dir.path(), "run-cyclic.db", &db);
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch(
            "CREATE TRIGGER wipe AFTER INSERT ON windows BEGIN DELETE FROM windows; END;",
        )
        .unwrap();
    let before = files(dir.path());
    let want = format!(
        "jitterlab: error: {} holds trigger wipe, which jitterlab did not create (it creates no triggers): a trigger can change what jitterlab stores or reads; give another --db, or drop it once you know who put it there (DROP TRIGGER \"wipe\")\n",
        db.display()
    );
    assert_eq!(
        refused(dir.path(), &db, &["run", "cyclic", "--duration", "1s"]),
        want
    );
    assert_eq!(refused(dir.path(), &db, &["runs"]), want);
    assert_eq!(files(dir.path()), before);
}

/// A migrated copy of run-cyclic at `dir/other.db`, changed by `sql`.
fn crafted(dir: &Path, sql: &str) -> PathBuf {
    let other = dir.join("other.db");
    migrated(dir, "run-cyclic.db", &other);
    rusqlite::Connection::open(&other)
        .unwrap()
        .execute_batch(sql)
        .unwrap();
    other
}

#[test]
fn a_crafted_import_is_refused_naming_table_row_and_column() {
    let cases = [
        (
            "UPDATE windows SET cycles = 9223372036854775807 WHERE window = 0;",
            "table windows, row 1 (cell_id 1), column cycles: 9223372036854775807 is out of range (0 to 17592186044416)",
        ),
        (
            "UPDATE windows SET cycles = 'many' WHERE window = 0;",
            "table windows, row 1 (cell_id 1), column cycles: text where the schema has INTEGER",
        ),
        (
            "UPDATE runs SET kind = 'done';",
            "table runs, row 1 (id 1), column kind: \"done\" is not a run kind",
        ),
        (
            "UPDATE cells SET result_json = '{\"probe\": 7}';",
            "table cells, row 1 (id 1), column result_json: not a result jitterlab reads: expected value at line 1 column 11",
        ),
        (
            "UPDATE metrics SET hist_positive = x'1c849301deadbeef' WHERE rowid = 1;",
            "table metrics, row 1 (cell_id 1), column hist_positive: reading the stored histogram of the metric: ",
        ),
    ];
    for (sql, why) in cases {
        let dir = tempfile::tempdir().unwrap();
        let other = crafted(dir.path(), sql);
        let target = dir.path().join("fleet.db");
        // The import's copy goes to a temporary directory of its own here,
        // which it leaves empty.
        let tmp = tempfile::tempdir().unwrap();
        let out = jl(dir.path(), &target)
            .env("TMPDIR", tmp.path())
            .args(["import", other.to_str().unwrap()])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{sql}: {out:?}");
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0, "{sql}");
        let err = String::from_utf8(out.stderr).unwrap();
        let want = format!("jitterlab: error: {}: {why}", other.display());
        assert!(err.starts_with(&want), "{sql}\n{err}\n{want}");
        assert!(err.ends_with("; not imported\n"), "{err}");
        assert!(!target.exists(), "{sql}: no database made");
    }
}

#[test]
fn an_import_with_a_view_in_place_of_a_table_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let other = crafted(
        dir.path(),
        "DROP TABLE counters;
         CREATE VIEW counters AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n)
         SELECT 1 AS cell_id, 0 AS thread, 'x' || i AS name, i AS value FROM n;",
    );
    let target = dir.path().join("fleet.db");
    assert_eq!(
        refused(dir.path(), &target, &["import", other.to_str().unwrap()]),
        format!(
            "jitterlab: error: {} holds view counters, which jitterlab did not create (it creates no views): a view can change what jitterlab stores or reads; give another --db, or drop it once you know who put it there (DROP VIEW \"counters\")\n",
            other.display()
        )
    );
    assert!(!target.exists());
}

#[test]
fn a_run_killed_over_there_is_imported_as_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    // Left `running` by a process of another boot; the file was copied
    // with no -shm beside it: no process has it open.
    let other = crafted(
        dir.path(),
        "UPDATE runs SET status = 'running', boot_id = 'another boot';
         UPDATE cells SET status = 'running';",
    );
    assert!(!dir.path().join("other.db-shm").exists());
    let target = dir.path().join("fleet.db");
    let out = ok(dir.path(), &target, &["import", other.to_str().unwrap()]);
    assert!(out.ends_with("1 run imported, 0 already here\n"), "{out}");
    let runs = ok(dir.path(), &target, &["runs"]);
    assert!(runs.contains("interrupted"), "{runs}");
}

#[test]
fn an_import_of_a_damaged_schema_names_the_imported_file_and_what_is_wrong() {
    for (sql, why) in [
        (
            "ALTER TABLE cells DROP COLUMN plan_json;",
            "lacks column cells.plan_json of jitterlab's schema 7: it is not a whole jitterlab results database; give another --db",
        ),
        (
            "PRAGMA user_version = -1;",
            "has schema version -1, which no jitterlab writes: it is not a jitterlab results database; name one written by jitterlab",
        ),
        (
            "PRAGMA user_version = 2;",
            "has schema version 2 but holds index runs_uid of a later jitterlab schema: its version was changed by something other than jitterlab; give another --db",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let other = crafted(dir.path(), sql);
        let target = dir.path().join("fleet.db");
        assert_eq!(
            refused(dir.path(), &target, &["import", other.to_str().unwrap()]),
            format!("jitterlab: error: {} {why}\n", other.display()),
            "{sql}"
        );
        assert!(!target.exists());
    }
}

/// An import stopped by SIGTERM while it checks a large file removes its
/// private copy (0700 while it lives) and imports nothing.
#[test]
fn an_import_stopped_by_a_signal_leaves_no_copy() {
    let dir = tempfile::tempdir().unwrap();
    let other = crafted(
        dir.path(),
        "WITH RECURSIVE n(i) AS (SELECT 1000 UNION ALL SELECT i + 1 FROM n WHERE i < 1500000)
         INSERT INTO windows SELECT 1, 0, 1, i, i * 1000, 10, 0 FROM n;",
    );
    let target = dir.path().join("fleet.db");
    let tmp = tempfile::tempdir().unwrap();
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("jitterlab"))
        .env("TMPDIR", tmp.path())
        .env("JITTERLAB_JOURNAL", dir.path().join("journal.json"))
        .arg("--db")
        .arg(&target)
        .args(["import", other.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t = std::time::Instant::now();
    let copy = loop {
        if let Some(e) = std::fs::read_dir(tmp.path()).unwrap().flatten().next() {
            break e.path();
        }
        assert!(t.elapsed().as_secs() < 60, "the import made no copy");
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    assert_eq!(
        std::fs::metadata(&copy).unwrap().permissions().mode() & 0o777,
        0o700
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_ne!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
    let runs = rusqlite::Connection::open(&target).ok().and_then(|c| {
        c.query_row("SELECT COUNT(*) FROM runs", [], |r| r.get::<_, i64>(0))
            .ok()
    });
    assert!(matches!(runs, None | Some(0)), "nothing imported: {runs:?}");
}

/// A database of the three single-run fixtures, imported (runs 1, 2, 3).
fn fleet(dir: &Path) -> PathBuf {
    let db = dir.join("fleet.db");
    for name in ["run-cyclic.db", "run-wakeup.db", "run-chase.db"] {
        let copy = dir.join(name);
        std::fs::copy(fixture(name), &copy).unwrap();
        ok(dir, &db, &["import", copy.to_str().unwrap()]);
        std::fs::remove_file(copy).unwrap();
    }
    db
}

#[test]
fn one_run_that_cannot_be_read_is_named_and_the_others_listed_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let db = fleet(dir.path());
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch(
            "UPDATE windows SET cycles = 9223372036854775807
             WHERE cell_id = (SELECT id FROM cells WHERE run_id = 1);
             UPDATE cells SET result_json = 'junk' WHERE run_id = 1;",
        )
        .unwrap();
    let out = jl(dir.path(), &db).arg("runs").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let listed = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        listed.lines().count(),
        3,
        "a header and runs 2 and 3: {listed}"
    );
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        format!(
            "jitterlab: run 1 of {} cannot be read, left out: integer overflow: Error code 1: SQL error or missing database\n",
            db.display()
        )
    );
    let out = jl(dir.path(), &db)
        .args(["report", "1", "2", "3"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        err,
        "jitterlab: run 1 cannot be read, left out: reading the result of run 1, cell default/none/host/cyclic: expected value at line 1 column 1\n"
    );
    assert!(!out.stdout.is_empty());
}
