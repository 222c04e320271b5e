//! `jitterlab import OTHER.db`: another machine's runs, merged into this
//! database.
//!
//! **The other file is only read.** It is copied to a temporary directory
//! first and everything else — migrating it to this schema, reading it — is
//! done on the copy. A file that no jitterlab has open (no `-shm` beside
//! it) is copied as it lies, with its `-wal` when one was left (a killed
//! run's last commits are there); one that a jitterlab has open, or that a
//! killed one left with both, is read through SQLite's own locking
//! (read-only, `VACUUM INTO` the copy), which gives a consistent snapshot
//! and creates no file beside it.
//!
//! **The other file may be crafted** (see [`check`]). The copy lives in a
//! private directory (0700) removed on every exit: when the import
//! returns or fails, by its guard, and on a terminating signal, by the
//! runner's stop flag, which the import checks while it works. The copy
//! must hold exactly jitterlab's tables (no view, no trigger:
//! [`super::trust`]), and every value of every row is checked before the
//! target is written; the check and the copy stop at [`TIME_LIMIT`].
//!
//! **Never beside a live run.** The copy holds this database's write lock
//! until it commits, and a run storing into the same file would wait for
//! it (and give up after the busy timeout): an import is refused while a
//! run is storing here.
//!
//! **What is copied.** Every run whose uid this database does not hold,
//! with all of its rows, under new integer ids, in one transaction:
//! nothing or everything. A run still `running` in the other file whose
//! process may be alive is left out (it is incomplete, and a later import
//! would not update it) and counted; one whose process is gone — written
//! on this boot by a process that no longer exists, or on another boot
//! (another machine) into a file copied with no `-shm` beside it, which no
//! process had open — is imported as interrupted, as an open of that file
//! would have marked it.
//! Runs already here are counted, not copied, so an import
//! repeated adds nothing. The tables below runs and cells are copied
//! generically, by [`CHILD_TABLES`]: a table's columns are read from the
//! schema, and its parent key is mapped to the new ids — a table a later
//! schema adds is one line there (a test fails until it is).

mod check;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use rusqlite::{params, Connection, OpenFlags, OptionalExtension, Transaction};

use super::open::{guard, newer_schema, no_jitterlab_version};
use super::trust::{beside, private_dir};
use super::{process_gone, RunStatus, Store, SCHEMA_VERSION};
use crate::error::bad;

/// The parent a copied table's rows belong to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parent {
    /// Keyed by `run_id` (a run's new id).
    Run,
    /// Keyed by `cell_id` (a cell's new id).
    Cell,
}

impl Parent {
    /// The key column and the temporary table mapping old ids to new.
    fn key(self) -> (&'static str, &'static str) {
        match self {
            Parent::Run => ("run_id", "temp.import_runs"),
            Parent::Cell => ("cell_id", "temp.import_cells"),
        }
    }
}

/// Every table below `runs` and `cells`, with the parent its rows belong to.
pub const CHILD_TABLES: &[(&str, Parent)] = &[
    ("hosts", Parent::Run),
    ("metrics", Parent::Cell),
    ("outliers", Parent::Cell),
    ("windows", Parent::Cell),
    ("window_metrics", Parent::Cell),
    ("counters", Parent::Cell),
    ("histograms_1us", Parent::Cell),
];

/// The tables an import leaves out, with the reason. A monitor's 5-minute
/// and hourly rows belong to its series, which is named on the machine
/// that measured it (by its first run and its name): merged into another
/// database they would have to be renumbered against that database's
/// series of the same name. Its runs and windows come like any run's;
/// `report --monitor` reads the rows on the monitored machine.
pub const NOT_IMPORTED: &[(&str, &str)] = &[
    (
        "monitor_rollups",
        "a monitor series' 5-minute and hourly rows stay in the monitored machine's database",
    ),
    (
        "monitor_marks",
        "a monitor series' marks stay with its rows in the monitored machine's database",
    ),
];

/// How long an import may check and copy before it gives up.
pub const TIME_LIMIT: Duration = Duration::from_secs(600);

/// The refusal of an import that took longer than [`TIME_LIMIT`].
fn too_long(origin: &Path) -> anyhow::Error {
    bad(format!(
        "importing {} stopped after {} s, the most an import may take; nothing was imported (import a smaller file)",
        origin.display(),
        TIME_LIMIT.as_secs()
    ))
}

/// The end of an import a terminating signal stopped.
fn stopped(origin: &Path) -> anyhow::Error {
    anyhow::anyhow!(
        "importing {} stopped by a signal; nothing was imported",
        origin.display()
    )
}

/// Another database, copied and migrated to this schema, ready to import.
pub struct ImportSource {
    /// Holds the copy; removed on drop.
    _dir: tempfile::TempDir,
    /// The migrated copy.
    copy: PathBuf,
    /// The file named on the command line.
    origin: PathBuf,
    /// When the import gives up ([`TIME_LIMIT`]).
    deadline: Instant,
    /// Set by a terminating signal: the import stops, rolls back and
    /// removes its copy.
    stop: Arc<AtomicBool>,
}

/// How many runs of one host came.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostCount {
    /// Its hostname.
    pub hostname: String,
    /// Its machine id (a hash), `None` when unknown.
    pub machine_id: Option<String>,
    /// Runs imported.
    pub runs: usize,
}

/// What an import did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportSummary {
    /// Runs imported, per host, in the order of their first run.
    pub hosts: Vec<HostCount>,
    /// Runs this database already held (same uid).
    pub already: usize,
    /// Runs still running in the other file, left out.
    pub running: usize,
    /// Monitor series whose 5-minute and hourly rows were left out
    /// ([`NOT_IMPORTED`]).
    pub series_left: usize,
}

impl ImportSummary {
    /// Runs imported in all.
    pub fn imported(&self) -> usize {
        self.hosts.iter().map(|h| h.runs).sum()
    }
}

/// `jitterlab import OTHER`: checks `other` (bad input changes nothing:
/// this database is opened, or made, only once the other file is known to
/// be a jitterlab database), then imports its runs into `db`; what came is
/// the caller's to say (`report::stored::import`).
pub fn import(db: &Path, other: &Path) -> Result<ImportSummary> {
    if same_file(db, other) {
        return Err(bad(format!(
            "{} is this database (--db): a database cannot be imported into itself; name another machine's database",
            other.display()
        )));
    }
    let source = ImportSource::prepare(other)?;
    // Runs still `running` are alive (a store opened to read shows the
    // others interrupted); read before the file is opened to write, which
    // may migrate it: a refused import changes nothing.
    let live = match db.is_file() {
        true => Store::open_read(db)?.list_runs()?,
        false => Vec::new(),
    }
    .into_iter()
    .find(|r| r.status == RunStatus::Running.name());
    if let Some(run) = live {
        return Err(bad(format!(
            "run {} is storing into {} now; import once it has ended (an import holds the database's write lock, which would stall the run's writer)",
            run.id,
            db.display()
        )));
    }
    Store::open(db)?.import(&source)
}

/// True when `a` and `b` are one file (the same device and inode: a link
/// or another spelling of the path is the same file).
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

impl ImportSource {
    /// Copies `origin` (see the module doc) and migrates the copy. Bad
    /// input — no such file, not a jitterlab database, a newer schema — is
    /// refused as such.
    pub fn prepare(origin: &Path) -> Result<ImportSource> {
        if !origin.is_file() {
            return Err(bad(format!(
                "no database to import at {}; name another machine's results database (the file its --db named)",
                origin.display()
            )));
        }
        let not_ours = |why: &str| {
            bad(format!(
                "{} is not a jitterlab database ({why}); name a results database written by jitterlab",
                origin.display()
            ))
        };
        let deadline = Instant::now() + TIME_LIMIT;
        let stop = crate::termination::stop_flag()?;
        let dir = private_dir("jitterlab-import-")
            .context("making a private directory for the import")?;
        let copy = dir.path().join("import.db");
        let wal = beside(origin, "-wal");
        // Without a -shm beside it, no process has the file open.
        let maybe_open = beside(origin, "-shm").exists();
        if wal.exists() && maybe_open {
            let conn = Connection::open_with_flags(origin, OpenFlags::SQLITE_OPEN_READ_ONLY)
                .with_context(|| format!("opening {} to read it", origin.display()))?;
            conn.execute("VACUUM INTO ?1", [copy.to_string_lossy()])
                .map_err(|e| not_ours(&e.to_string()))?;
        } else {
            std::fs::copy(origin, &copy)
                .with_context(|| format!("copying {} to read it", origin.display()))?;
            if wal.exists() {
                std::fs::copy(&wal, beside(&copy, "-wal"))
                    .with_context(|| format!("copying {} to read it", wal.display()))?;
            }
        }
        {
            let conn = Connection::open(&copy)?;
            guard(&conn)?;
            let version: i64 = conn
                .query_row("PRAGMA user_version", [], |r| r.get(0))
                .map_err(|e| not_ours(&e.to_string()))?;
            if version > SCHEMA_VERSION {
                return Err(bad(newer_schema(origin, version)));
            }
            if version < 0 {
                return Err(bad(no_jitterlab_version(origin, version)));
            }
            let runs: Option<String> = conn
                .query_row(
                    "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'runs'",
                    [],
                    |r| r.get(0),
                )
                .optional()
                .map_err(|e| not_ours(&e.to_string()))?;
            if version < 1 || runs.is_none() {
                return Err(not_ours("it has no runs table"));
            }
        }
        let mut store = Store::open_migrated(&copy, origin).map_err(|e| {
            if e.is::<crate::error::BadInput>() {
                e
            } else {
                not_ours(&format!("{e:#}"))
            }
        })?;
        store.interrupt_gone(!maybe_open)?;
        check::check_rows(&store.conn, origin, deadline, &stop)?;
        Ok(ImportSource {
            _dir: dir,
            copy,
            origin: origin.to_path_buf(),
            deadline,
            stop,
        })
    }
}

impl Store {
    /// Imports the runs of `source` this database does not hold (see the
    /// module doc), in one transaction.
    pub fn import(&mut self, source: &ImportSource) -> Result<ImportSummary> {
        let r = self.import_inner(source);
        self.named(r)
    }

    fn import_inner(&mut self, source: &ImportSource) -> Result<ImportSummary> {
        self.conn
            .execute(
                "ATTACH DATABASE ?1 AS other",
                [source.copy.to_string_lossy()],
            )
            .with_context(|| format!("reading {}", source.origin.display()))?;
        // The copy stops at the deadline, or on a terminating signal: a
        // watcher interrupts the statement running, and the transaction is
        // rolled back.
        let deadline = source.deadline;
        let done = AtomicBool::new(false);
        let interrupt = self.conn.get_interrupt_handle();
        let copied = std::thread::scope(|s| {
            s.spawn(|| {
                while !done.load(Ordering::Relaxed) {
                    if Instant::now() > deadline || source.stop.load(Ordering::Relaxed) {
                        interrupt.interrupt();
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            });
            let copied = copy_runs(&mut self.conn);
            done.store(true, Ordering::Relaxed);
            copied
        });
        let detached = self.conn.execute("DETACH DATABASE other", []);
        let summary = match copied {
            Err(_) if source.stop.load(Ordering::Relaxed) => return Err(stopped(&source.origin)),
            Err(_) if Instant::now() > deadline => return Err(too_long(&source.origin)),
            r => r?,
        };
        detached?;
        Ok(summary)
    }

    /// Marks interrupted, in an import's copy, the runs left `running`
    /// whose process is gone: on this boot, a process that no longer
    /// exists; on another, any when `closed` (no process had the file
    /// open).
    fn interrupt_gone(&mut self, closed: bool) -> Result<()> {
        let ours = super::boot_id();
        let running: Vec<(i64, i64, String)> = {
            let mut stmt = self
                .conn
                .prepare("SELECT id, pid, boot_id FROM runs WHERE status = ?1")?;
            let rows = stmt.query_map([RunStatus::Running.name()], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        for (id, pid, boot) in running {
            // This boot's process is looked up; another machine's (or
            // boot's) is gone when no process had the file open.
            let gone = match boot == ours {
                true => process_gone(pid, &boot),
                false => closed,
            };
            if gone {
                self.mark_interrupted(id)?;
            }
        }
        Ok(())
    }
}

/// The columns of `table` an import writes: all but a rowid alias, which
/// the new row gets afresh — unless it is the parent key `keep`, whose
/// value is mapped.
fn columns(tx: &Transaction<'_>, table: &str, keep: Option<&str>) -> Result<Vec<String>> {
    let without_rowid: bool = tx.query_row(
        "SELECT instr(upper(sql), 'WITHOUT ROWID') > 0 FROM main.sqlite_master
         WHERE type = 'table' AND name = ?1",
        [table],
        |r| r.get(0),
    )?;
    let mut stmt = tx.prepare(&format!("PRAGMA main.table_info(\"{table}\")"))?;
    let cols: Vec<(String, String, i64)> = stmt
        .query_map([], |r| Ok((r.get(1)?, r.get(2)?, r.get(5)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let keys = cols.iter().filter(|c| c.2 > 0).count();
    Ok(cols
        .into_iter()
        .filter(|(name, kind, pk)| {
            let rowid_alias =
                !without_rowid && keys == 1 && *pk == 1 && kind.eq_ignore_ascii_case("INTEGER");
            !rowid_alias || Some(name.as_str()) == keep
        })
        .map(|(name, _, _)| name)
        .collect())
}

/// `INSERT INTO main.T (cols) SELECT … FROM other.T t`; `mapped` is a
/// column taken from an SQL expression instead of the row (a parent key
/// and its new id).
fn insert_select(table: &str, cols: &[String], mapped: Option<(&str, &str)>) -> String {
    let names: Vec<String> = cols.iter().map(|c| format!("\"{c}\"")).collect();
    let values: Vec<String> = cols
        .iter()
        .map(|c| match mapped {
            Some((key, value)) if key == c => value.to_string(),
            _ => format!("t.\"{c}\""),
        })
        .collect();
    format!(
        "INSERT INTO main.\"{table}\" ({}) SELECT {} FROM other.\"{table}\" t",
        names.join(", "),
        values.join(", ")
    )
}

/// The copy itself, in one transaction on the connection that has the
/// other database attached as `other`.
fn copy_runs(conn: &mut Connection) -> Result<ImportSummary> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    tx.execute_batch(
        "CREATE TEMP TABLE import_runs (old INTEGER PRIMARY KEY, new INTEGER NOT NULL);
         CREATE TEMP TABLE import_cells (old INTEGER PRIMARY KEY, new INTEGER NOT NULL);",
    )?;
    let runs: Vec<(i64, Option<String>, String)> = {
        let mut stmt = tx.prepare("SELECT id, uid, status FROM other.runs ORDER BY id")?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    let run_cols = columns(&tx, "runs", None)?;
    let cell_cols = columns(&tx, "cells", Some("run_id"))?;
    let insert_run = format!("{} WHERE t.id = ?1", insert_select("runs", &run_cols, None));
    let insert_cell = format!(
        "{} WHERE t.id = ?2",
        insert_select("cells", &cell_cols, Some(("run_id", "?1")))
    );
    let (mut already, mut running) = (0, 0);
    for (old, uid, status) in runs {
        if status == RunStatus::Running.name() {
            running += 1;
            continue;
        }
        let Some(uid) = uid else {
            // Every run has one since schema 5; the copy was migrated.
            anyhow::bail!("run {old} of the imported database has no uid");
        };
        let here: bool = tx.query_row(
            "SELECT EXISTS (SELECT 1 FROM main.runs WHERE uid = ?1)",
            params![uid],
            |r| r.get(0),
        )?;
        if here {
            already += 1;
            continue;
        }
        tx.execute(&insert_run, [old])?;
        let new = tx.last_insert_rowid();
        tx.execute("INSERT INTO temp.import_runs VALUES (?1, ?2)", [old, new])?;
        let cells: Vec<i64> = {
            let mut stmt =
                tx.prepare("SELECT id FROM other.cells WHERE run_id = ?1 ORDER BY id")?;
            let rows = stmt.query_map([old], |r| r.get(0))?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        for cell in cells {
            tx.execute(&insert_cell, params![new, cell])?;
            let new_cell = tx.last_insert_rowid();
            tx.execute(
                "INSERT INTO temp.import_cells VALUES (?1, ?2)",
                [cell, new_cell],
            )?;
        }
    }
    for (table, parent) in CHILD_TABLES {
        let (key, map) = parent.key();
        let cols = columns(&tx, table, Some(key))?;
        tx.execute(
            &format!(
                "{} JOIN {map} m ON m.old = t.\"{key}\"",
                insert_select(table, &cols, Some((key, "m.new")))
            ),
            [],
        )?;
    }
    let mut hosts: Vec<HostCount> = Vec::new();
    {
        let mut stmt = tx.prepare(
            "SELECT COALESCE(h.hostname, ''), h.machine_id FROM temp.import_runs m
             LEFT JOIN main.hosts h ON h.run_id = m.new ORDER BY m.new",
        )?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        let mut index: BTreeMap<(String, Option<String>), usize> = BTreeMap::new();
        for row in rows {
            let key: (String, Option<String>) = row?;
            match index.get(&key) {
                Some(&i) => hosts[i].runs += 1,
                None => {
                    index.insert(key.clone(), hosts.len());
                    hosts.push(HostCount {
                        hostname: key.0,
                        machine_id: key.1,
                        runs: 1,
                    });
                }
            }
        }
    }
    let series_left: i64 = tx.query_row(
        "SELECT COUNT(DISTINCT series) FROM other.monitor_rollups",
        [],
        |r| r.get(0),
    )?;
    tx.execute_batch("DROP TABLE temp.import_runs; DROP TABLE temp.import_cells;")?;
    tx.commit()?;
    Ok(ImportSummary {
        hosts,
        already,
        running,
        series_left: series_left as usize,
    })
}

#[cfg(test)]
mod tests;
