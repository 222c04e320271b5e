//! The checks of a database file: who can change it, what it holds.

use std::os::unix::fs::PermissionsExt;

use super::*;
use crate::error::BadInput;
use crate::store::Store;

fn refusal<T>(r: Result<T>) -> String {
    let Err(e) = r else {
        panic!("a refusal, not Ok")
    };
    assert!(e.is::<BadInput>(), "a refusal: {e:#}");
    format!("{e:#}")
}

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn a_file_someone_else_can_change_is_refused_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("j.db");
    // Not there yet: only its directory counts.
    check_file_as(&db, 1000).unwrap();
    std::fs::write(&db, b"").unwrap();
    chmod(&db, 0o644);
    let owner = std::fs::metadata(&db).unwrap().uid();
    check_file_as(&db, owner).unwrap();
    if owner != 0 {
        // Owned by another user than 1 and not by root.
        assert_eq!(
            refusal(check_file_as(&db, 1)),
            format!(
                "{} is owned by user {owner}, not by you (user 1) or root: its owner can change what jitterlab stores and reads; if you trust it, chown 1 {}, else give another --db",
                db.display(),
                db.display()
            )
        );
    }
    chmod(&db, 0o664);
    assert_eq!(
        refusal(check_file_as(&db, owner)),
        format!(
            "{} is writable by group (mode 0664): they can change what jitterlab stores and reads; chmod go-w {}, or give another --db",
            db.display(),
            db.display()
        )
    );
    chmod(&db, 0o646);
    assert!(refusal(check_file_as(&db, owner)).contains(" is writable by others (mode 0646): "));
    chmod(&db, 0o600);
    // A -wal beside it counts as the file does.
    let wal = beside(&db, "-wal");
    std::fs::write(&wal, b"").unwrap();
    chmod(&wal, 0o666);
    assert!(refusal(check_file_as(&db, owner)).starts_with(&format!(
        "{} is writable by group and others (mode 0666): ",
        wal.display()
    )));
    chmod(&wal, 0o644);
    check_file_as(&db, owner).unwrap();
    // A directory anyone can write without the sticky bit.
    chmod(dir.path(), 0o777);
    assert_eq!(
        refusal(check_file_as(&db, owner)),
        format!(
            "{} holds the results database {} and is writable by everyone without the sticky bit (mode 0777): anyone can replace the database; chmod +t {} (or o-w), or give a --db elsewhere",
            dir.path().display(),
            db.display(),
            dir.path().display()
        )
    );
    chmod(dir.path(), 0o1777);
    check_file_as(&db, owner).unwrap();
    chmod(dir.path(), 0o700);
}

/// Root owns a file: it is trusted by every user, as ssh trusts it.
#[test]
fn a_file_of_root_is_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("j.db");
    std::fs::write(&db, b"").unwrap();
    if std::fs::metadata(&db).unwrap().uid() != 0 {
        eprintln!("skipped: making a file owned by root needs root");
        return;
    }
    check_file_as(&db, 1000).unwrap();
}

#[test]
fn every_object_of_the_schema_is_known_and_none_is_code() {
    let p = Path::new("/x/j.db");
    let current = expected_objects(SCHEMA_VERSION).unwrap();
    assert!(current.contains(&("table".into(), "runs".into())));
    foreign(&current, SCHEMA_VERSION, p).unwrap();
    foreign(&BTreeSet::new(), 0, p).unwrap();

    let mut with = current.clone();
    with.insert(("trigger".into(), "wipe".into()));
    assert_eq!(
        refusal(foreign(&with, SCHEMA_VERSION, p)),
        "/x/j.db holds trigger wipe, which jitterlab did not create (it creates no triggers): a trigger can change what jitterlab stores or reads; give another --db, or drop it once you know who put it there (DROP TRIGGER \"wipe\")"
    );
    let mut with = current.clone();
    with.insert(("view".into(), "v".into()));
    assert!(refusal(foreign(&with, 3, p)).starts_with("/x/j.db holds view v, which jitterlab"));
    let mut with = current.clone();
    with.insert(("table".into(), "extra".into()));
    assert_eq!(
        refusal(foreign(&with, SCHEMA_VERSION, p)),
        "/x/j.db holds table extra: jitterlab did not create it; give another --db"
    );
    let other: BTreeSet<Object> = [("table".to_string(), "contacts".to_string())].into();
    assert_eq!(
        refusal(foreign(&other, 0, p)),
        "/x/j.db holds table contacts: it is another program's SQLite database, not a jitterlab results database; give another --db"
    );
    let mut without = current.clone();
    without.remove(&("table".into(), "cells".into()));
    assert_eq!(
        refusal(foreign(&without, SCHEMA_VERSION, p)),
        format!("/x/j.db lacks table cells of jitterlab's schema {SCHEMA_VERSION}: it is not a whole jitterlab results database; give another --db")
    );
}

/// Another program's SQLite file, in rollback-journal mode.
fn other_program(p: &Path) -> Vec<u8> {
    let c = Connection::open(p).unwrap();
    c.execute_batch("CREATE TABLE contacts (name TEXT); INSERT INTO contacts VALUES ('a');")
        .unwrap();
    drop(c);
    std::fs::read(p).unwrap()
}

/// The files of `dir`, sorted.
fn files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn another_program_s_database_is_neither_read_nor_turned_into_jitterlab_s() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("app.db");
    let before = other_program(&p);
    let want = format!(
        "{} holds table contacts: it is another program's SQLite database, not a jitterlab results database; give another --db",
        p.display()
    );
    assert_eq!(refusal(Store::open_read(&p)), want);
    assert_eq!(refusal(Store::open(&p)), want);
    assert_eq!(std::fs::read(&p).unwrap(), before);
    assert_eq!(files(dir.path()), ["app.db"]);
}

#[test]
fn a_planted_trigger_is_refused_before_it_can_run() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("j.db");
    drop(Store::open(&p).unwrap());
    let c = Connection::open(&p).unwrap();
    c.execute_batch("CREATE TRIGGER wipe AFTER INSERT ON windows BEGIN DELETE FROM windows; END;")
        .unwrap();
    drop(c);
    let want = format!(
        "{} holds trigger wipe, which jitterlab did not create (it creates no triggers): a trigger can change what jitterlab stores or reads; give another --db, or drop it once you know who put it there (DROP TRIGGER \"wipe\")",
        p.display()
    );
    assert_eq!(refusal(Store::open(&p)), want);
    assert_eq!(refusal(Store::open_read(&p)), want);
}

#[test]
fn reading_changes_nothing_of_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("j.db");
    // An older schema: read through a migrated copy, the file left as it is.
    let c = Connection::open(&p).unwrap();
    super::super::schema::create_at(&c, 3);
    c.execute_batch(
        "INSERT INTO runs (id, started_at, probe, status, command_line, tool_version,
                           result_schema, params_json, pid, boot_id)
         VALUES (1, '2026-01-01T00:00:00Z', 'cyclic', 'running', '[]', '0', 1, '{}',
                 2147483647, 'another boot');",
    )
    .unwrap();
    drop(c);
    let before = std::fs::read(&p).unwrap();
    let s = Store::open_read(&p).unwrap();
    let runs = s.list_runs().unwrap();
    // Its process is gone: shown interrupted, not marked so.
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status, "interrupted");
    assert_eq!(s.load_run(1).unwrap().status, "interrupted");
    let copy = s.copy.as_ref().unwrap().path().to_path_buf();
    assert_eq!(
        std::fs::metadata(&copy).unwrap().permissions().mode() & 0o777,
        0o700
    );
    drop(s);
    assert!(!copy.exists(), "the copy's directory is removed");
    assert_eq!(std::fs::read(&p).unwrap(), before);
    assert_eq!(files(dir.path()), ["j.db"]);
    let c = Connection::open(&p).unwrap();
    let v: i64 = c
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(v, 3);
}

#[test]
fn a_negative_or_empty_version_is_said_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("j.db");
    let c = Connection::open(&p).unwrap();
    c.pragma_update(None, "user_version", -1).unwrap();
    drop(c);
    let want = format!(
        "{} has schema version -1, which no jitterlab writes: it is not a jitterlab results database; name one written by jitterlab",
        p.display()
    );
    assert_eq!(refusal(Store::open_read(&p)), want);
    assert_eq!(refusal(Store::open(&p)), want);
    let e = dir.path().join("e.db");
    std::fs::write(&e, b"").unwrap();
    assert_eq!(
        refusal(Store::open_read(&e)),
        format!("{} holds no jitterlab results (it is an empty database); run a probe first (jitterlab run cyclic) or name the database with --db", e.display())
    );
    assert_eq!(std::fs::metadata(&e).unwrap().len(), 0);
}

#[test]
fn a_reset_version_and_a_missing_column_are_said_in_one_line() {
    let p = Path::new("/x/j.db");
    let current = expected_objects(SCHEMA_VERSION).unwrap();
    assert!(current.contains(&("column".into(), "runs.uid".into())));
    assert_eq!(
        refusal(foreign(&current, 0, p)),
        "/x/j.db has schema version 0 but holds index metrics_cell of a later jitterlab schema: its version was changed by something other than jitterlab; give another --db"
    );
    let mut without = current.clone();
    without.remove(&("column".into(), "cells.plan_json".into()));
    assert_eq!(
        refusal(foreign(&without, SCHEMA_VERSION, p)),
        format!("/x/j.db lacks column cells.plan_json of jitterlab's schema {SCHEMA_VERSION}: it is not a whole jitterlab results database; give another --db")
    );
}
