//! Run uids, machine ids, naming runs and importing another machine's
//! database, through real SQLite files in temporary directories.

use std::path::{Path, PathBuf};

use jitterlab_core::outlier::Outlier;
use rusqlite::Connection;

use super::super::tests::{result, row, start};
use super::super::{schema, RunStart, StoredHistogram};
use super::*;
use crate::error::BadInput;

/// A machine id as `system::host::machine_id` stores it.
const MACHINE_B: &str = "bbbb0c8e2b1d4e6f9a7b5c3d2e1f0a9b";

/// Stores one finished run of host `host` (machine `machine`) in `s`, with
/// two windows, a metric with its histogram, an outlier and a counter.
fn finished_run(s: &mut Store, host: &str, machine: Option<&str>) -> i64 {
    let cmd = vec!["jitterlab".to_string()];
    let st = RunStart {
        hostname: host,
        machine_id: machine,
        ..start(&cmd)
    };
    let ids = s.begin_run(&st).unwrap();
    s.insert_windows(ids.cell, &[row(0, 40_000), row(1, 60_000)])
        .unwrap();
    let (mut r, lat) = result();
    r.threads[0].outliers.insert(
        "latency".into(),
        vec![Outlier {
            value: 250_000,
            cycle: 2,
            since_start_ns: 2_000_000,
        }],
    );
    r.threads[0].counters.insert("lost".into(), 3);
    let h = lat.histograms();
    let stored = StoredHistogram {
        thread: Some(0),
        metric: "latency",
        positive: h.positive.clone(),
        negative: None,
        fine: Some({
            let mut f = jitterlab_core::recorder::LatencyHistogram::new(300);
            for (ns, at) in [(11_000, 0), (250_000, 2), (400_000, 3)] {
                f.record(ns, at);
            }
            f
        }),
    };
    s.finish_run(ids, &r, &[stored]).unwrap();
    ids.run
}

/// Rows of every table, as text, with the run's and cell's ids left out:
/// what must arrive unchanged.
fn contents(s: &Store, run: i64) -> Vec<String> {
    let mut all = Vec::new();
    let text = |sql: &str| -> Vec<String> {
        let mut stmt = s.conn.prepare(sql).unwrap();
        let n = stmt.column_count();
        stmt.query_map([run], |r| {
            Ok((0..n)
                .map(|i| format!("{:?}", r.get_ref(i).unwrap()))
                .collect::<Vec<_>>()
                .join("|"))
        })
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
    };
    let run_cols = "started_at, finished_at, probe, status, command_line, tool_version, result_schema, params_json, pid, boot_id, realtime, elapsed_ns, result_json, kind, name, spec_json, uid";
    all.extend(text(&format!("SELECT {run_cols} FROM runs WHERE id = ?1")));
    all.extend(text(
        "SELECT hostname, kernel_release, snapshot_json, machine_id FROM hosts WHERE run_id = ?1",
    ));
    all.extend(text(
        "SELECT name, configuration, scenario, deployment, probe, repetition, status, started_at, finished_at, result_json, context_json, plan_json FROM cells WHERE run_id = ?1 ORDER BY id",
    ));
    for (table, parent) in CHILD_TABLES {
        if *parent == Parent::Cell {
            let cols = columns_of(s, table)
                .into_iter()
                .filter(|c| c != "cell_id")
                .collect::<Vec<_>>()
                .join(", ");
            all.extend(text(&format!(
                "SELECT '{table}', {cols} FROM {table} WHERE cell_id IN (SELECT id FROM cells WHERE run_id = ?1) ORDER BY {cols}"
            )));
        }
    }
    all
}

fn columns_of(s: &Store, table: &str) -> Vec<String> {
    let mut stmt = s
        .conn
        .prepare(&format!("PRAGMA table_info({table})"))
        .unwrap();
    stmt.query_map([], |r| r.get(1))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

/// Rows per table, every table.
fn counts(s: &Store) -> Vec<(String, i64)> {
    let mut tables: Vec<String> = {
        let mut stmt = s
            .conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            .unwrap();
        stmt.query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    };
    tables.retain(|t| !t.starts_with("sqlite_"));
    tables
        .into_iter()
        .map(|t| {
            let n = s
                .conn
                .query_row(&format!("SELECT COUNT(*) FROM {t}"), [], |r| r.get(0))
                .unwrap();
            (t, n)
        })
        .collect()
}

/// Every file in `dir` with its bytes.
fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| (e.path(), std::fs::read(e.path()).unwrap()))
        .collect();
    v.sort();
    v
}

fn bad_text(e: anyhow::Error) -> String {
    assert!(e.downcast_ref::<BadInput>().is_some(), "bad input: {e:#}");
    e.to_string()
}

/// This machine's database (one run of plc-a) and another's (two runs of
/// plc-b), in their own directories.
struct Two {
    here: tempfile::TempDir,
    there: tempfile::TempDir,
}

impl Two {
    fn new() -> Two {
        let two = Two {
            here: tempfile::tempdir().unwrap(),
            there: tempfile::tempdir().unwrap(),
        };
        let mut a = Store::open(&two.db()).unwrap();
        finished_run(&mut a, "plc-a", None);
        let mut b = Store::open(&two.other()).unwrap();
        finished_run(&mut b, "plc-b", Some(MACHINE_B));
        finished_run(&mut b, "plc-b", Some(MACHINE_B));
        two
    }
    fn db(&self) -> PathBuf {
        self.here.path().join("a.db")
    }
    fn other(&self) -> PathBuf {
        self.there.path().join("b.db")
    }
}

#[test]
fn new_runs_get_a_random_uid_and_their_host_s_machine_id() {
    let two = Two::new();
    let b = Store::open(&two.other()).unwrap();
    let rows = b.list_runs().unwrap();
    assert_eq!(rows.len(), 2);
    assert_ne!(rows[0].uid, rows[1].uid);
    for r in &rows {
        assert_eq!(uuid::Uuid::parse_str(&r.uid).unwrap().get_version_num(), 4);
        assert_eq!(r.machine_id.as_deref(), Some(MACHINE_B));
        assert_eq!(r.hostname, "plc-b");
    }
}

#[test]
fn another_host_s_runs_come_with_every_row_under_new_ids() {
    let two = Two::new();
    let b = Store::open(&two.other()).unwrap();
    let theirs: Vec<Vec<String>> = [1, 2].iter().map(|&r| contents(&b, r)).collect();
    let b_runs = b.list_runs().unwrap();
    drop(b);
    let before = files(two.there.path());
    let source = ImportSource::prepare(&two.other()).unwrap();
    let mut a = Store::open(&two.db()).unwrap();
    let summary = a.import(&source).unwrap();
    assert_eq!(
        summary,
        ImportSummary {
            hosts: vec![HostCount {
                hostname: "plc-b".into(),
                machine_id: Some(MACHINE_B.into()),
                runs: 2,
            }],
            already: 0,
            running: 0,
            series_left: 0,
        }
    );
    assert_eq!(
        crate::report::stored::import_text(&summary, Path::new("/x/b.db")),
        "from /x/b.db:\n  plc-b (machine bbbb0c8e): 2 runs\n2 runs imported, 0 already here\n"
    );
    // Runs 2 and 3 here are runs 1 and 2 there, row for row.
    assert_eq!(contents(&a, 2), theirs[0]);
    assert_eq!(contents(&a, 3), theirs[1]);
    assert!(
        theirs[0].len() > 10,
        "every table has rows: {:?}",
        theirs[0]
    );
    // Hosts are kept apart in the listing; the uids came along.
    let rows = a.list_runs().unwrap();
    let hosts: Vec<(i64, &str, Option<&str>)> = rows
        .iter()
        .map(|r| (r.id, r.hostname.as_str(), r.machine_id.as_deref()))
        .collect();
    assert_eq!(
        hosts,
        [
            (1, "plc-a", None),
            (2, "plc-b", Some(MACHINE_B)),
            (3, "plc-b", Some(MACHINE_B))
        ]
    );
    assert_eq!(rows[1].uid, b_runs[0].uid);
    assert_eq!(rows[2].latency_max_ns, Some(60_000));
    // The imported run reads back as it did there.
    let there = Store::open(&two.other()).unwrap().load_run(1).unwrap();
    let here = a.load_run(2).unwrap();
    assert_eq!(StoredRun_id_free(here), StoredRun_id_free(there));
    // The other file was only read.
    assert_eq!(files(two.there.path()), before);
}

/// A stored run without its database id.
#[allow(non_snake_case)]
fn StoredRun_id_free(mut r: jitterlab_core::cell::StoredRun) -> jitterlab_core::cell::StoredRun {
    r.id = 0;
    r
}

#[test]
fn a_second_import_adds_nothing() {
    let two = Two::new();
    let mut a = Store::open(&two.db()).unwrap();
    a.import(&ImportSource::prepare(&two.other()).unwrap())
        .unwrap();
    let after_first = counts(&a);
    let again = a
        .import(&ImportSource::prepare(&two.other()).unwrap())
        .unwrap();
    assert_eq!(
        again,
        ImportSummary {
            hosts: vec![],
            already: 2,
            running: 0,
            series_left: 0,
        }
    );
    assert_eq!(
        crate::report::stored::import_text(&again, &two.other()),
        "0 runs imported, 2 already here\n"
    );
    assert_eq!(counts(&a), after_first);
    // And back the other way: plc-a's run goes there, plc-b's stay once.
    let mut b = Store::open(&two.other()).unwrap();
    let back = b
        .import(&ImportSource::prepare(&two.db()).unwrap())
        .unwrap();
    assert_eq!(
        crate::report::stored::import_text(&back, Path::new("a.db")),
        "from a.db:\n  plc-a (machine -): 1 run\n1 run imported, 2 already here\n"
    );
}

#[test]
fn a_run_still_running_there_is_left_out_and_said() {
    let two = Two::new();
    let mut b = Store::open(&two.other()).unwrap();
    let cmd = vec!["jitterlab".to_string()];
    b.begin_run(&start(&cmd)).unwrap(); // this process: alive, so running
    drop(b);
    let mut a = Store::open(&two.db()).unwrap();
    let s = a
        .import(&ImportSource::prepare(&two.other()).unwrap())
        .unwrap();
    assert_eq!((s.imported(), s.already, s.running), (2, 0, 1));
    assert!(
        crate::report::stored::import_text(&s, Path::new("b.db"))
            .ends_with("2 runs imported, 0 already here\nleft out 1 run still running there; import again once it has ended\n"),
        "{}",
        crate::report::stored::import_text(&s, Path::new("b.db"))
    );
}

#[test]
fn a_database_a_jitterlab_has_open_is_read_through_its_wal_and_left_alone() {
    let two = Two::new();
    // A writer that holds the file open, its last commit only in the WAL.
    let writer = Connection::open(two.other()).unwrap();
    writer
        .execute_batch("PRAGMA wal_autocheckpoint = 0;")
        .unwrap();
    writer
        .execute("UPDATE hosts SET hostname = 'plc-b2' WHERE run_id = 2", [])
        .unwrap();
    assert!(two.there.path().join("b.db-wal").exists());
    assert!(two.there.path().join("b.db-shm").exists());
    let before: Vec<PathBuf> = files(two.there.path()).into_iter().map(|f| f.0).collect();
    let main_bytes = std::fs::read(two.other()).unwrap();
    let mut a = Store::open(&two.db()).unwrap();
    let s = a
        .import(&ImportSource::prepare(&two.other()).unwrap())
        .unwrap();
    let hosts: Vec<(String, usize)> = s
        .hosts
        .iter()
        .map(|h| (h.hostname.clone(), h.runs))
        .collect();
    assert_eq!(hosts, [("plc-b".to_string(), 1), ("plc-b2".to_string(), 1)]);
    let after: Vec<PathBuf> = files(two.there.path()).into_iter().map(|f| f.0).collect();
    assert_eq!(after, before, "no file made beside it");
    assert_eq!(std::fs::read(two.other()).unwrap(), main_bytes);
    drop(writer);
}

#[test]
fn a_killed_writer_s_wal_is_copied_with_the_file() {
    let two = Two::new();
    {
        let writer = Connection::open(two.other()).unwrap();
        writer
            .execute_batch("PRAGMA wal_autocheckpoint = 0;")
            .unwrap();
        writer
            .execute("UPDATE hosts SET hostname = 'plc-b2'", [])
            .unwrap();
        // As after kill -9: the WAL stays, the shared-memory index goes.
        std::mem::forget(writer);
    }
    std::fs::remove_file(two.there.path().join("b.db-shm")).unwrap();
    let before = files(two.there.path());
    let mut a = Store::open(&two.db()).unwrap();
    let s = a
        .import(&ImportSource::prepare(&two.other()).unwrap())
        .unwrap();
    assert_eq!(s.hosts[0].hostname, "plc-b2");
    assert_eq!(s.imported(), 2);
    assert_eq!(files(two.there.path()), before);
}

#[test]
fn bad_sources_are_refused_as_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("none.db");
    assert_eq!(
        bad_text(ImportSource::prepare(&missing).err().unwrap()),
        format!(
            "no database to import at {}; name another machine's results database (the file its --db named)",
            missing.display()
        )
    );
    let text = dir.path().join("notes.db");
    std::fs::write(&text, "not SQLite, but long enough to have a header of 100 bytes ......................................").unwrap();
    assert_eq!(
        bad_text(ImportSource::prepare(&text).err().unwrap()),
        format!(
            "{} is not a jitterlab database (file is not a database); name a results database written by jitterlab",
            text.display()
        )
    );
    let other_app = dir.path().join("other.db");
    Connection::open(&other_app)
        .unwrap()
        .execute_batch("CREATE TABLE t (x); PRAGMA user_version = 3;")
        .unwrap();
    assert_eq!(
        bad_text(ImportSource::prepare(&other_app).err().unwrap()),
        format!(
            "{} is not a jitterlab database (it has no runs table); name a results database written by jitterlab",
            other_app.display()
        )
    );
    let newer = dir.path().join("newer.db");
    Connection::open(&newer)
        .unwrap()
        .execute_batch("CREATE TABLE runs (id INTEGER PRIMARY KEY); PRAGMA user_version = 99;")
        .unwrap();
    assert_eq!(
        bad_text(ImportSource::prepare(&newer).err().unwrap()),
        format!(
            "{} has schema version 99, newer than this jitterlab's {SCHEMA_VERSION}; use a newer jitterlab or another --db",
            newer.display()
        )
    );
}

#[test]
fn every_table_of_the_schema_is_copied_by_an_import() {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(&dir.path().join("j.db")).unwrap();
    let mut tables: Vec<String> = counts(&s).into_iter().map(|(t, _)| t).collect();
    tables.sort();
    let mut copied: Vec<String> = ["runs", "cells"]
        .iter()
        .chain(CHILD_TABLES.iter().map(|(t, _)| t))
        .chain(NOT_IMPORTED.iter().map(|(t, _)| t))
        .map(|t| t.to_string())
        .collect();
    copied.sort();
    assert_eq!(
        tables, copied,
        "a table added to the schema needs its line in CHILD_TABLES (or NOT_IMPORTED, with why)"
    );
}

// ---- schema 5: uids of runs stored before, the schema's first page

/// A schema-4 file with three runs: two of one process start (as no
/// jitterlab wrote, but a hand-edited file may hold) and one other.
fn schema_4_file(path: &Path) {
    let c = Connection::open(path).unwrap();
    schema::create_at(&c, 4);
    for (pid, started) in [
        (4242, "2026-11-21T12:00:00Z"),
        (4242, "2026-11-21T12:00:00Z"),
        (17867, "2026-11-23T21:15:29.332872764Z"),
    ] {
        c.execute(
            "INSERT INTO runs (started_at, probe, status, command_line, tool_version,
                               result_schema, params_json, pid, boot_id)
             VALUES (?1, 'cyclic', 'completed', '[]', '0.1.0', 1, '{}', ?2,
                     '0b6e6b1c-7d8e-4a50-9f57-3a4d2c1e8f00')",
            rusqlite::params![started, pid],
        )
        .unwrap();
        c.execute(
            "INSERT INTO hosts VALUES (last_insert_rowid(), 'vm', '6.18', '{}')",
            [],
        )
        .unwrap();
    }
}

/// The uids Python's `uuid.uuid5` gives in jitterlab's namespace for the
/// rows of [`schema_4_file`].
const SCHEMA_4_UIDS: [&str; 3] = [
    "a4055349-b802-500d-bb74-fd4047a7d8b6",
    "5c46867b-00f2-5ea8-9097-06a19e87ddeb",
    "aedd9a88-7bef-5b00-bfc1-aa0cfabcb4b4",
];

fn uids(path: &Path) -> Vec<(String, Option<String>)> {
    Store::open(path)
        .unwrap()
        .list_runs()
        .unwrap()
        .into_iter()
        .map(|r| (r.uid, r.machine_id))
        .collect()
}

#[test]
fn runs_stored_before_get_the_same_uid_in_every_copy() {
    let dir = tempfile::tempdir().unwrap();
    let (one, two) = (dir.path().join("one.db"), dir.path().join("two.db"));
    schema_4_file(&one);
    std::fs::copy(&one, &two).unwrap();
    let expected: Vec<(String, Option<String>)> = SCHEMA_4_UIDS
        .iter()
        .map(|u| (u.to_string(), None))
        .collect();
    assert_eq!(uids(&one), expected);
    assert_eq!(uids(&two), expected);
    // So importing the other copy adds nothing.
    let mut s = Store::open(&one).unwrap();
    let summary = s.import(&ImportSource::prepare(&two).unwrap()).unwrap();
    assert_eq!((summary.imported(), summary.already), (0, 3));
}

#[test]
fn schema_3_fixtures_get_their_pinned_uids() {
    for (name, uid) in [
        ("run-cyclic.db", "dacc06c2-de2a-5803-bb29-6cc265024535"),
        ("bench-epics.db", "7a9c11e3-5bfa-52ab-abdb-07d3a2940fdd"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let copy = dir.path().join(name);
        std::fs::copy(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/databases")
                .join(name),
            &copy,
        )
        .unwrap();
        assert_eq!(uids(&copy), [(uid.to_string(), None)], "{name}");
    }
}

/// Page 1 of the file is a leaf of the schema table (type 13 at byte 100:
/// the schema did not split onto later pages), and the file is sound.
fn schema_on_first_page(path: &Path) {
    let s = Store::open(path).unwrap();
    s.conn
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    let ok: String = s
        .conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ok, "ok");
    drop(s);
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(bytes[100], 13, "{}: schema on page 1 only", path.display());
}

#[test]
fn the_schema_stays_on_the_first_page_after_the_migration() {
    let dir = tempfile::tempdir().unwrap();
    let fresh = dir.path().join("fresh.db");
    finished_run(&mut Store::open(&fresh).unwrap(), "plc-a", None);
    schema_on_first_page(&fresh);
    let old = dir.path().join("old.db");
    schema_4_file(&old);
    schema_on_first_page(&old);
    // No text of the schema keeps a comment or a run of blanks.
    let s = Store::open(&old).unwrap();
    let texts: Vec<String> = {
        let mut stmt = s
            .conn
            .prepare("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL")
            .unwrap();
        stmt.query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    };
    for t in texts {
        assert!(
            !t.contains("--") && !t.contains("  ") && !t.contains('\n'),
            "{t}"
        );
    }
}

#[test]
fn compacting_sql_keeps_quoted_text_and_drops_comments() {
    assert_eq!(
        schema::compact_sql(
            "CREATE TABLE t (\n    a   TEXT DEFAULT 'x  --  y', -- a comment\n    \"b  c\" INTEGER -- last\n)"
        ),
        "CREATE TABLE t ( a TEXT DEFAULT 'x  --  y', \"b  c\" INTEGER )"
    );
    assert_eq!(schema::compact_sql("'it''s  so'"), "'it''s  so'");
}

// ---- naming runs

#[test]
fn runs_are_named_by_id_uid_or_unique_uid_prefix() {
    let two = Two::new();
    let b = Store::open(&two.other()).unwrap();
    b.conn
        .execute_batch(
            "UPDATE runs SET uid = '1a2b3c4d-0000-4000-8000-000000000001' WHERE id = 1;
             UPDATE runs SET uid = '1a2b9999-0000-4000-8000-000000000002' WHERE id = 2;",
        )
        .unwrap();
    assert_eq!(b.resolve_run("2").unwrap(), 2);
    assert_eq!(b.resolve_run("1a2b3").unwrap(), 1);
    assert_eq!(b.resolve_run("1A2B99").unwrap(), 2);
    assert_eq!(
        b.resolve_run("1a2b3c4d-0000-4000-8000-000000000001")
            .unwrap(),
        1
    );
    assert_eq!(
        b.resolve_run("1a2b").unwrap_err().to_string(),
        "uid 1a2b is ambiguous: run 1 (1a2b3c4d-0000-4000-8000-000000000001), run 2 (1a2b9999-0000-4000-8000-000000000002); give more of the uid"
    );
    assert_eq!(
        b.resolve_run("ffff").unwrap_err().to_string(),
        "there is no run ffff in the database (no id, and no uid that starts so); list the runs with: jitterlab runs"
    );
    // A short number is an id, found or not (load_run says it is missing).
    assert_eq!(b.resolve_run("7").unwrap(), 7);
    assert_eq!(b.resolve_run("-1").unwrap(), -1);
    // A longer one is an id when there is one, else a uid prefix.
    b.conn
        .execute(
            "UPDATE runs SET uid = '12345678-0000-4000-8000-000000000003' WHERE id = 2",
            [],
        )
        .unwrap();
    assert_eq!(b.resolve_run("1234").unwrap(), 2);
    assert_eq!(
        b.resolve_run("1a2x").unwrap_err().to_string(),
        "1a2x is not a run id or uid: give a run's id or at least 4 characters of its uid, as jitterlab runs lists them"
    );
}
