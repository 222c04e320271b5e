//! What the store checks of a database file before it reads or writes it.
//!
//! jitterlab runs as root, and an SQLite file is code as much as data: a
//! trigger in it runs on every insert (one planted in a `--db` deleted
//! every window row of a run, which still said "stored"), a view answers
//! in place of a table. So before a statement touches a file the store
//! checks two things, and refuses (bad input, naming the fix) otherwise:
//!
//! - **Who can change it** ([`check_file`]). The database and the files
//!   SQLite keeps beside it (`-wal`, `-shm`, `-journal`) must belong to the
//!   user running jitterlab or to root, and be writable by no one else —
//!   as ssh refuses a key file. The directory that holds them must not let
//!   anyone replace them: a directory writable by everyone needs its sticky
//!   bit (as `/tmp` has); a directory writable by a group is the admin's
//!   choice and is not refused.
//! - **What it holds** ([`check_objects`]). Every table and index of its
//!   schema is one jitterlab creates at the file's schema version, and it
//!   holds no trigger and no view (jitterlab creates none). A file at
//!   schema version 0 holds nothing at all: one that holds tables is
//!   another program's database, which no command turns into jitterlab's.
//!
//! Every connection also runs with `trusted_schema = OFF`, so that nothing
//! a schema names can call a function with side effects.

use std::collections::BTreeSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::Result;
use rusqlite::Connection;

use super::schema::{MIGRATIONS, SCHEMA_VERSION};
use crate::error::bad;

/// The files SQLite keeps beside a database, by suffix.
pub(super) const BESIDE: [&str; 3] = ["-wal", "-shm", "-journal"];

/// `path` with `suffix` appended to its file name (`x.db` → `x.db-wal`).
pub(super) fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// Refuses `path` (the `--db` file) when a user other than the one running
/// jitterlab (or root) owns it or the files beside it, when group or others
/// can write them, or when its directory is writable by everyone without
/// the sticky bit (see the module doc). A file that does not exist yet is
/// only checked for its directory.
pub(super) fn check_file(path: &Path) -> Result<()> {
    check_file_as(path, jitterlab_sys::effective_uid())
}

/// [`check_file`] for the user `me`.
fn check_file_as(path: &Path, me: u32) -> Result<()> {
    let dir = crate::out_files::directory_of(path);
    if let Ok(meta) = std::fs::metadata(dir) {
        let mode = meta.mode();
        if mode & 0o002 != 0 && mode & 0o1000 == 0 {
            return Err(bad(format!(
                "{} holds the results database {} and is writable by everyone without the sticky bit (mode {:04o}): anyone can replace the database; chmod +t {} (or o-w), or give a --db elsewhere",
                dir.display(),
                path.display(),
                mode & 0o7777,
                dir.display()
            )));
        }
    }
    let files = std::iter::once(path.to_path_buf()).chain(BESIDE.iter().map(|s| beside(path, s)));
    for file in files {
        let Ok(meta) = std::fs::metadata(&file) else {
            continue;
        };
        let owner = meta.uid();
        if owner != me && owner != 0 {
            return Err(bad(format!(
                "{} is owned by user {owner}, not by you (user {me}) or root: its owner can change what jitterlab stores and reads; if you trust it, chown {me} {}, else give another --db",
                file.display(),
                file.display()
            )));
        }
        let mode = meta.mode();
        if mode & 0o022 != 0 {
            let who = match (mode & 0o020 != 0, mode & 0o002 != 0) {
                (true, true) => "group and others",
                (true, false) => "group",
                _ => "others",
            };
            return Err(bad(format!(
                "{} is writable by {who} (mode {:04o}): they can change what jitterlab stores and reads; chmod go-w {}, or give another --db",
                file.display(),
                mode & 0o7777,
                file.display()
            )));
        }
    }
    Ok(())
}

/// A new private temporary directory (mode 0700, whatever the umask:
/// another user must not read the copy of a database made there), removed
/// when dropped.
pub(super) fn private_dir(prefix: &str) -> std::io::Result<tempfile::TempDir> {
    use std::os::unix::fs::PermissionsExt;
    tempfile::Builder::new()
        .prefix(prefix)
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
}

/// One object of a schema: its type (`table`, `index`, `view`, `trigger`)
/// and its name.
pub(super) type Object = (String, String);

/// The objects of the schema of `conn`'s database `schema`, and the
/// columns of its tables as objects of type `column` named `table.column`
/// (internal `sqlite_` tables but the automatic indexes left out:
/// `sqlite_stat1` and its kin are SQLite's own, made by `ANALYZE`).
pub(super) fn objects(conn: &Connection, schema: &str) -> rusqlite::Result<BTreeSet<Object>> {
    let mut stmt = conn.prepare(&format!(
        "SELECT type, name FROM \"{schema}\".sqlite_master
         WHERE name NOT LIKE 'sqlite\\_stat%' ESCAPE '\\'
         UNION ALL
         SELECT 'column', m.name || '.' || p.name
         FROM \"{schema}\".sqlite_master m, pragma_table_info(m.name, '{schema}') p
         WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
    ))?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    rows.collect()
}

/// The objects jitterlab's schema has at `version` (1 ..= current), made in
/// a database in memory by the same steps a file takes.
pub(super) fn expected_objects(version: i64) -> Result<BTreeSet<Object>> {
    let conn = Connection::open_in_memory()?;
    let steps = usize::try_from(version).unwrap_or(0).min(MIGRATIONS.len());
    for step in &MIGRATIONS[..steps] {
        let tx = conn.unchecked_transaction()?;
        step.apply(&tx)?;
        tx.commit()?;
    }
    Ok(objects(&conn, "main")?)
}

/// Reads the schema version of `conn`'s main database and checks its
/// objects (see the module doc), in one read transaction: a jitterlab
/// migrating the file at the same moment is seen before or after a step,
/// never within. `shown` is the file named in a refusal. Returns the
/// version; one newer than this jitterlab's is the caller's to refuse
/// (its objects are not known here).
pub(super) fn check_objects(conn: &Connection, shown: &Path) -> Result<i64> {
    let tx = conn.unchecked_transaction()?;
    let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let found = objects(&tx, "main")?;
    tx.commit()?;
    foreign(&found, version, shown)?;
    Ok(version)
}

/// Refuses `found`, the objects of `shown` at schema `version`, when one is
/// not jitterlab's (see the module doc).
pub(super) fn foreign(found: &BTreeSet<Object>, version: i64, shown: &Path) -> Result<()> {
    if let Some((kind, name)) = found
        .iter()
        .find(|(kind, _)| kind == "trigger" || kind == "view")
    {
        return Err(bad(format!(
            "{} holds {kind} {name}, which jitterlab did not create (it creates no {kind}s): a {kind} can change what jitterlab stores or reads; give another --db, or drop it once you know who put it there (DROP {} \"{name}\")",
            shown.display(),
            kind.to_uppercase()
        )));
    }
    if version > SCHEMA_VERSION {
        return Ok(());
    }
    let expected = if version >= 1 {
        expected_objects(version)?
    } else {
        BTreeSet::new()
    };
    // A whole table is said before its columns.
    let mut extra: Vec<&Object> = found.difference(&expected).collect();
    extra.sort_by_key(|(kind, _)| kind == "column");
    if let Some(&(kind, name)) = extra.first() {
        let latest = expected_objects(SCHEMA_VERSION)?;
        if version < SCHEMA_VERSION && extra.iter().all(|o| latest.contains(o)) {
            return Err(bad(format!(
                "{} has schema version {version} but holds {kind} {name} of a later jitterlab schema: its version was changed by something other than jitterlab; give another --db",
                shown.display()
            )));
        }
        let why = if version <= 0 {
            "it is another program's SQLite database, not a jitterlab results database"
        } else {
            "jitterlab did not create it"
        };
        return Err(bad(format!(
            "{} holds {kind} {name}: {why}; give another --db",
            shown.display()
        )));
    }
    let mut missing: Vec<&Object> = expected.difference(found).collect();
    missing.sort_by_key(|(kind, _)| kind == "column");
    if let Some((kind, name)) = missing.first() {
        return Err(bad(format!(
            "{} lacks {kind} {name} of jitterlab's schema {version}: it is not a whole jitterlab results database; give another --db",
            shown.display()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
