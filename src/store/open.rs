//! Opening a results database, to write it or only to read it.
//!
//! Either way the file is checked first ([`super::trust`]): who can change
//! it, and that every object of its schema is jitterlab's.
//!
//! **To write** ([`Store::open`]: `run`, `bench`, `monitor`, `import`): WAL
//! mode and its waits, the schema brought up to date step by step (two
//! processes opening one new file at once apply each step once), and the
//! runs whose process is gone marked interrupted (see the module doc of the
//! store: losing nothing).
//!
//! **To read** ([`Store::open_read`]: `runs`, `report`): the file is opened
//! `SQLITE_OPEN_READ_ONLY` and never changed — no schema is created, no
//! journal mode set, nothing migrated, no run marked — so a report works on
//! a full disk and another program's SQLite file is never turned into a
//! jitterlab database. A run whose process is gone is *shown* interrupted.
//! A database of an older schema is read through a migrated copy in a
//! private temporary directory (0700, removed when the store is dropped):
//! the file itself stays as it is until a command that writes it (`run`,
//! `bench`, `import`) brings it up to date. A WAL database left cleanly
//! (no `-wal` content) on a full disk, where SQLite cannot make its shared
//! memory file, is read `immutable`.

use std::path::Path;

use anyhow::{Context, Result};
use rusqlite::{params, Connection, OpenFlags};

use super::schema::{MIGRATIONS, SCHEMA_VERSION};
use super::trust::{self, beside};
use super::{interrupt_cells, process_gone, RunStatus, Store};
use crate::error::bad;

impl Store {
    /// Opens (creating if needed) the database at `path` to write it:
    /// checks it ([`super::trust`]), brings its schema up to date, and
    /// marks runs whose process is gone as interrupted.
    pub fn open(path: &Path) -> Result<Store> {
        trust::check_file(path)?;
        let mut store = Self::open_migrated(path, path)?;
        let orphans = store.mark_orphans();
        store.named(orphans)?;
        Ok(store)
    }

    /// The database's path, as the user named it.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens the existing database at `path` to read it only (see the
    /// module doc).
    pub fn open_read(path: &Path) -> Result<Store> {
        trust::check_file(path)?;
        // A `-wal` with nothing in it: every commit is in the file itself.
        let wal_empty = std::fs::metadata(beside(path, "-wal")).map_or(true, |m| m.len() == 0);
        let (conn, version) = match connect_read(path, false) {
            Err(e) if wal_empty && cannot_share(&e) => connect_read(path, true)?,
            r => r?,
        };
        if version > SCHEMA_VERSION {
            return Err(bad(newer_schema(path, version)));
        }
        if version < 0 {
            return Err(bad(no_jitterlab_version(path, version)));
        }
        if version == 0 {
            return Err(bad(format!(
                "{} holds no jitterlab results (it is an empty database); run a probe first (jitterlab run cyclic) or name the database with --db",
                path.display()
            )));
        }
        let mut store = if version < SCHEMA_VERSION {
            // Read through a migrated copy (see the module doc).
            let dir = trust::private_dir("jitterlab-read-")
                .context("making a temporary directory to read an older database")?;
            let copy = dir.path().join("copy.db");
            conn.execute("VACUUM INTO ?1", [copy.to_string_lossy()])
                .with_context(|| {
                    format!("results database {}: copying it to read", path.display())
                })?;
            drop(conn);
            let mut store = Self::open_migrated(&copy, path)?;
            store.copy = Some(dir);
            store
        } else {
            Store {
                conn,
                path: path.to_path_buf(),
                totals: super::speed::TotalsCache::default(),
                writable: false,
                copy: None,
            }
        };
        store.writable = false;
        Ok(store)
    }

    /// Opens `path` and brings its schema up to date, naming `shown` in
    /// messages (the file a temporary copy was made of), and leaving the
    /// runs' status as it is.
    pub(super) fn open_migrated(path: &Path, shown: &Path) -> Result<Store> {
        let conn = Connection::open(path)
            .with_context(|| format!("opening the results database {}", shown.display()))?;
        let mut store = Store {
            conn,
            path: shown.to_path_buf(),
            totals: super::speed::TotalsCache::default(),
            writable: true,
            copy: None,
        };
        let version = guard(&store.conn)
            .and_then(|()| trust::check_objects(&store.conn, shown))
            .map_err(|e| unusable(e, shown))?;
        if version > SCHEMA_VERSION {
            return Err(bad(newer_schema(shown, version)));
        }
        if version < 0 {
            return Err(bad(no_jitterlab_version(shown, version)));
        }
        store.configure().map_err(|e| unusable(e.into(), shown))?;
        store.migrate(shown)?;
        Ok(store)
    }

    fn configure(&mut self) -> rusqlite::Result<()> {
        // journal_mode returns the mode. Turning a new file to WAL needs it
        // to itself, and SQLite does not wait for that (no busy handler):
        // when another jitterlab opens the same new file at the same
        // moment, try again for as long as the busy timeout would have
        // waited.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            match self
                .conn
                .query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0))
            {
                Err(rusqlite::Error::SqliteFailure(e, _))
                    if e.code == rusqlite::ErrorCode::DatabaseBusy
                        && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                r => {
                    r?;
                    break;
                }
            }
        }
        self.conn
            .execute_batch("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;")?;
        Ok(())
    }

    fn migrate(&mut self, path: &Path) -> Result<()> {
        let version: i64 = self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version > SCHEMA_VERSION {
            return Err(bad(newer_schema(path, version)));
        }
        if version == SCHEMA_VERSION {
            // Up to date: no write lock (a read-only database reads fine).
            return Ok(());
        }
        // Each step takes the write lock first and reads the version again
        // under it: two jitterlab processes opening one new database at the
        // same moment (a run and `jitterlab runs` beside it) would otherwise
        // both apply the step the first one read.
        loop {
            let tx = self
                .conn
                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let from: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
            let Some(step) = MIGRATIONS.get(from as usize) else {
                return Ok(());
            };
            step.apply(&tx)
                .with_context(|| format!("migrating {} from schema {from}", path.display()))?;
            tx.pragma_update(None, "user_version", from + 1)?;
            tx.commit()?;
        }
    }

    /// The schema version of the open database.
    #[cfg(test)]
    pub fn schema_version(&self) -> Result<i64> {
        Ok(self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))?)
    }

    /// The runs left `running` by a process that no longer exists (or by
    /// another boot): killed, or lost power.
    pub(super) fn orphans(&self) -> Result<Vec<i64>> {
        let mut stmt = self
            .conn
            .prepare("SELECT id, pid, boot_id FROM runs WHERE status = ?1")?;
        let running: Vec<(i64, i64, String)> = stmt
            .query_map([RunStatus::Running.name()], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })?
            .collect::<rusqlite::Result<_>>()?;
        Ok(running
            .into_iter()
            .filter(|(_, pid, run_boot)| process_gone(*pid, run_boot))
            .map(|(id, _, _)| id)
            .collect())
    }

    /// Marks the [`orphans`](Store::orphans), and their unfinished cells,
    /// interrupted.
    pub(super) fn mark_orphans(&mut self) -> Result<()> {
        for id in self.orphans()? {
            self.mark_interrupted(id)?;
        }
        Ok(())
    }

    /// Marks run `id`, and its unfinished cells, interrupted in one
    /// transaction.
    pub(super) fn mark_interrupted(&mut self, id: i64) -> Result<()> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "UPDATE runs SET status = ?2 WHERE id = ?1",
            params![id, RunStatus::Interrupted.name()],
        )?;
        interrupt_cells(&tx, id)?;
        tx.commit()?;
        Ok(())
    }
}

/// Refuses, before a command that writes `path` starts measuring, a file
/// that [`Store::open`] would refuse — someone else can change it, it is
/// another program's database, it holds a trigger or a view, its schema is
/// newer or none of jitterlab's — without creating or changing anything.
/// Whatever else stands in the way (a damaged file, a full disk) is said
/// when the store opens it.
pub fn check_for_writing(path: &Path) -> Result<()> {
    trust::check_file(path)?;
    if std::fs::metadata(path).map_or(true, |m| !m.is_file() || m.len() == 0) {
        return Ok(());
    }
    match connect_read(path, false) {
        Ok((_, version)) if version > SCHEMA_VERSION => Err(bad(newer_schema(path, version))),
        Ok((_, version)) if version < 0 => Err(bad(no_jitterlab_version(path, version))),
        Err(e) if e.is::<crate::error::BadInput>() => Err(e),
        _ => Ok(()),
    }
}

/// What every connection runs before it reads a schema: nothing a
/// schema names may call a function with side effects (see
/// [`super::trust`]), and waits of up to 5 s for another jitterlab's lock.
pub(super) fn guard(conn: &Connection) -> Result<()> {
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    conn.pragma_update(None, "trusted_schema", false)?;
    Ok(())
}

/// Opens `path` read-only (`immutable`: without the shared memory file,
/// for a cleanly left WAL database on a full disk), guarded, and checks
/// it. Returns the connection and the schema version.
fn connect_read(path: &Path, immutable: bool) -> Result<(Connection, i64)> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let opened = if immutable {
        Connection::open_with_flags(
            format!("file:{}?immutable=1", uri_path(path)),
            flags | OpenFlags::SQLITE_OPEN_URI,
        )
    } else {
        Connection::open_with_flags(path, flags)
    };
    let conn =
        opened.with_context(|| format!("opening the results database {}", path.display()))?;
    let version = guard(&conn)
        .and_then(|()| trust::check_objects(&conn, path))
        .map_err(|e| unusable(e, path))?;
    Ok((conn, version))
}

/// True when `e` is SQLite failing to read or make a file beside the
/// database (its shared memory on a full disk).
fn cannot_share(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        matches!(
            c.downcast_ref::<rusqlite::Error>(),
            Some(rusqlite::Error::SqliteFailure(f, _))
                if matches!(f.code, rusqlite::ErrorCode::SystemIoFailure
                    | rusqlite::ErrorCode::DiskFull
                    | rusqlite::ErrorCode::CannotOpen)
        )
    })
}

/// `path` as the path of an SQLite URI (`%`, `?` and `#` escaped).
fn uri_path(path: &Path) -> String {
    let mut out = String::new();
    for b in path.as_os_str().as_encoded_bytes() {
        match b {
            b'%' | b'?' | b'#' | 0x80.. => out.push_str(&format!("%{b:02X}")),
            b => out.push(char::from(*b)),
        }
    }
    out
}

/// An error of the first statements on `shown`: a refusal passes as it
/// is; anything else (not SQLite at all, damaged) says the file is not a
/// usable database.
fn unusable(e: anyhow::Error, shown: &Path) -> anyhow::Error {
    if e.is::<crate::error::BadInput>() {
        return e;
    }
    e.context(format!(
        "{} is not a usable jitterlab database; give another path with --db",
        shown.display()
    ))
}

/// The refusal of a database written by a newer jitterlab.
pub(super) fn newer_schema(path: &Path, version: i64) -> String {
    format!(
        "{} has schema version {version}, newer than this jitterlab's {SCHEMA_VERSION}; use a newer jitterlab or another --db",
        path.display()
    )
}

/// The refusal of a negative schema version, which no jitterlab writes.
pub(super) fn no_jitterlab_version(path: &Path, version: i64) -> String {
    format!(
        "{} has schema version {version}, which no jitterlab writes: it is not a jitterlab results database; name one written by jitterlab",
        path.display()
    )
}
