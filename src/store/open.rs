//! Opening a results database: WAL mode and its waits, the schema brought
//! up to date step by step (two processes opening one new file at once
//! apply each step once), and the runs whose process is gone marked
//! interrupted (see the module doc of the store: losing nothing).

use std::path::Path;

use anyhow::{bail, Context, Result};
use rusqlite::{params, Connection};

use super::schema::{MIGRATIONS, SCHEMA_VERSION};
use super::{boot_id, interrupt_cells, RunStatus, Store};

impl Store {
    /// Opens (creating if needed) the database at `path`, brings its schema
    /// up to date, and marks runs whose process is gone as interrupted.
    pub fn open(path: &Path) -> Result<Store> {
        let mut store = Self::open_migrated(path, path)?;
        let orphans = store.mark_orphans();
        store.named(orphans)?;
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
        };
        store.configure().with_context(|| {
            format!(
                "{} is not a usable jitterlab database; give another path with --db",
                shown.display()
            )
        })?;
        store.migrate(shown)?;
        Ok(store)
    }

    fn configure(&mut self) -> rusqlite::Result<()> {
        self.conn.busy_timeout(std::time::Duration::from_secs(5))?;
        // journal_mode returns the mode; reading it also proves the file is
        // SQLite. Turning a new file to WAL needs it to itself, and SQLite
        // does not wait for that (no busy handler): when another jitterlab
        // opens the same new file at the same moment, try again for as long
        // as the busy timeout would have waited.
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
            bail!(newer_schema(path, version));
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

    /// Runs left `running` by a process that no longer exists (or by another
    /// boot) were killed or lost power: mark them, and their unfinished
    /// cells, interrupted.
    pub(super) fn mark_orphans(&mut self) -> Result<()> {
        let boot = boot_id();
        let mut stmt = self
            .conn
            .prepare("SELECT id, pid, boot_id FROM runs WHERE status = ?1")?;
        let running: Vec<(i64, i64, String)> = stmt
            .query_map([RunStatus::Running.name()], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })?
            .collect::<rusqlite::Result<_>>()?;
        drop(stmt);
        for (id, pid, run_boot) in running {
            let alive = run_boot == boot && Path::new(&format!("/proc/{pid}")).exists();
            if !alive {
                let tx = self.conn.transaction()?;
                tx.execute(
                    "UPDATE runs SET status = ?2 WHERE id = ?1",
                    params![id, RunStatus::Interrupted.name()],
                )?;
                interrupt_cells(&tx, id)?;
                tx.commit()?;
            }
        }
        Ok(())
    }
}

/// The refusal of a database written by a newer jitterlab.
pub(super) fn newer_schema(path: &Path, version: i64) -> String {
    format!(
        "{} has schema version {version}, newer than this jitterlab's {SCHEMA_VERSION}; use a newer jitterlab or another --db",
        path.display()
    )
}
