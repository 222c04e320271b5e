//! Runs stored by an earlier jitterlab render exactly as they did when they
//! were stored: every database under `tests/fixtures/databases/` (written by
//! jitterlab at schema 3, see its README) is reported in every format and
//! compared with the output recorded beside it. A change of the store, the
//! migrations or the reports that alters what a user already stored fails
//! here.

use std::path::Path;

use assert_cmd::Command;

const FORMATS: [&str; 4] = ["text", "md", "csv", "json"];

fn fixtures() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/databases")
}

#[test]
fn stored_runs_render_as_they_did_in_every_format() {
    let mut dbs: Vec<_> = std::fs::read_dir(fixtures())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "db"))
        .collect();
    dbs.sort();
    assert!(dbs.len() >= 7, "the fixture databases are there: {dbs:?}");
    for db in dbs {
        let name = db.file_stem().unwrap().to_string_lossy().into_owned();
        for format in FORMATS {
            // Opening a database migrates it and marks orphaned runs: work
            // on a copy, never on the fixture.
            let dir = tempfile::tempdir().unwrap();
            let copy = dir.path().join("copy.db");
            std::fs::copy(&db, &copy).unwrap();
            let out = Command::cargo_bin("jitterlab")
                .unwrap()
                .env("JITTERLAB_JOURNAL", dir.path().join("journal.json"))
                .arg("--db")
                .arg(&copy)
                .args(["report", "--format", format])
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(0), "{name} {format}: {out:?}");
            let want =
                std::fs::read_to_string(fixtures().join("golden").join(format!("{name}.{format}")))
                    .unwrap();
            assert_eq!(
                String::from_utf8_lossy(&out.stdout),
                want,
                "{name} reported as {format}"
            );
        }
    }
}
